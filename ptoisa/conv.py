"""ConvTile: a convolution tile, ``pto::ConvTile<Loc, T, BufferBytes, Layout, ConvTileShape>``.

Its storage is ``BufferBytes`` of a buffer, holding a 4- to 6-D array in a convolution layout
(NCHW, NC1HWC0, GNCHW, GNC1HWC0, FRACTAL_Z ...). It is a :class:`~ptoisa.tile.Tile` whose
static type is the flat ``1 x (BufferBytes / sizeof(T))`` row of its bytes, so TASSIGN, auto
storage and aliasing work as for any tile; instructions that understand convolution layouts
(TTRANS, TEXTRACT) look at :attr:`layout` and :attr:`conv_shape`.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

import numpy as np

from .errors import PtoError
from .tile import Tile, TileSpec, tile_spec


@dataclass(frozen=True, eq=True)
class ConvSpec(TileSpec):
    """Static type of a ConvTile: its flat 1 x N tile spec plus the convolution layout and
    shape (static rules tell ConvTile operands from plain tiles by this type)."""

    conv_layout: str = ""
    conv_shape: tuple[int, ...] = ()

#: layouts and their number of dimensions
CONV_LAYOUTS = {"NCHW": 4, "NHWC": 4, "NC1HWC0": 5, "GNCHW": 5, "GNC1HWC0": 6, "FRACTAL_Z": 4,
                "NCDHW": 5, "NDC1HWC0": 6, "FRACTAL_Z_3D": 4}


class ConvTile(Tile):
    """``ConvTile(TileType.Vec, np.float32, 76800, "NC1HWC0", (2, 25, 4, 3, 8))``."""

    __slots__ = ("layout", "conv_shape", "img2col")

    def __init__(self, loc: Any, dtype: Any, buffer_bytes: int, layout: str,
                 shape: tuple[int, ...], *, name: str | None = None) -> None:
        key = str(layout).split("::")[-1].upper()
        if key not in CONV_LAYOUTS:
            raise PtoError(f"ConvTile layout {layout!r} is not one of "
                           f"{', '.join(CONV_LAYOUTS)}")
        shape = tuple(int(s) for s in shape)
        if len(shape) != CONV_LAYOUTS[key] or any(s <= 0 for s in shape):
            raise PtoError(f"ConvTile {key} needs {CONV_LAYOUTS[key]} positive dims, got {shape}")
        probe = tile_spec(loc, dtype, 1, 32)
        esz = probe.dtype.itemsize
        if buffer_bytes <= 0 or buffer_bytes % 32:
            raise PtoError(f"ConvTile buffer of {buffer_bytes} bytes is not a positive multiple "
                           "of 32")
        numel = int(np.prod(shape))
        if numel * esz > buffer_bytes:
            raise PtoError(f"ConvTile {key}{list(shape)} needs {numel * esz} bytes, the buffer "
                           f"has {buffer_bytes}")
        flat = tile_spec(loc, dtype, 1, buffer_bytes // esz)
        spec = ConvSpec(**{f.name: getattr(flat, f.name) for f in fields(TileSpec)},
                        conv_layout=key, conv_shape=shape)
        self._init(spec, 1, spec.cols, name)
        self.layout = key
        self.conv_shape = shape
        #: the Img2colTileConfig fields of a feature-map tile (TIMG2COL / SETFMATRIX ...);
        #: None = derived from the shape (see ptoisa.isa.img2col.Img2colConfig)
        self.img2col: Any = None

    def array(self) -> np.ndarray:
        """Writable N-D view of the storage in the tile's convolution layout."""
        n = int(np.prod(self.conv_shape))
        return self.storage[:n].reshape(self.conv_shape)

    # ---- FRACTAL_Z as a (K, N) matrix: K = C1*H*W*C0, N = N1*N0 -------------------------------
    def matrix_shape(self) -> tuple[int, int]:
        if self.layout != "FRACTAL_Z":
            raise PtoError(f"a {self.layout} ConvTile is not a matrix (FRACTAL_Z is)")
        c1hw, n1, n0, c0 = self.conv_shape
        return c1hw * c0, n1 * n0

    def matrix_read(self, rows: int, cols: int, r0: int, c0: int) -> np.ndarray:
        """Logical block of the FRACTAL_Z matrix: element (k, n) is stored at
        ``[k // C0, n // N0, n % N0, k % C0]``."""
        self.matrix_shape()
        _, _, n0, cz = self.conv_shape
        k = np.arange(r0, r0 + rows)[:, None]
        n = np.arange(c0, c0 + cols)[None, :]
        return self.array()[k // cz, n // n0, n % n0, k % cz]

    def __repr__(self) -> str:
        return f"<ConvTile {self.name or ''} {self.loc.name} {self.dtype.name} {self.layout}" \
               f"{list(self.conv_shape)}>"


def transform(dst: ConvTile, src: ConvTile) -> None:
    """TTRANS between convolution layouts (the manual's ConvTile transposes): NCHW <-> NC1HWC0,
    GNCHW <-> GNC1HWC0, (G)NC1HWC0 -> FRACTAL_Z ``[(G)*C1*H*W, N1, N0, C0]``; channel and batch
    padding (C up to C1*C0, N up to N1*N0) is written as zeros."""
    a = src.array()
    pair = (src.layout, dst.layout)
    grouped = src.layout.startswith("G")
    if not grouped:
        a = a[None]
    g = a.shape[0]
    if pair in (("NCHW", "NC1HWC0"), ("GNCHW", "GNC1HWC0")):
        n, c, h, w = a.shape[1:]
        c1, c0 = dst.conv_shape[-4], dst.conv_shape[-1]
        _need(dst, (g, n, c1, h, w, c0), grouped, c <= c1 * c0)
        p = np.zeros((g, n, c1 * c0, h, w), a.dtype)
        p[:, :, :c] = a
        out = p.reshape(g, n, c1, c0, h, w).transpose(0, 1, 2, 4, 5, 3)
    elif pair in (("NC1HWC0", "NCHW"), ("GNC1HWC0", "GNCHW")):
        n, c1, h, w, c0 = a.shape[1:]
        c = dst.conv_shape[-3]
        _need(dst, (g, n, c, h, w), grouped, c <= c1 * c0)
        out = a.transpose(0, 1, 2, 5, 3, 4).reshape(g, n, c1 * c0, h, w)[:, :, :c]
    elif pair in (("NC1HWC0", "FRACTAL_Z"), ("GNC1HWC0", "FRACTAL_Z")):
        n, c1, h, w, c0 = a.shape[1:]
        _, n1, n0, dc0 = dst.conv_shape
        if dst.conv_shape != (g * c1 * h * w, n1, n0, c0) or n > n1 * n0 or dc0 != c0:
            raise PtoError(f"FRACTAL_Z dst {list(dst.conv_shape)} does not fit "
                           f"{src.layout}{list(src.conv_shape)} (want [{g * c1 * h * w}, N1, N0, "
                           f"{c0}] with N1*N0 >= {n})")
        p = np.zeros((g, n1 * n0, c1, h, w, c0), a.dtype)
        p[:, :n] = a
        out = p.reshape(g, n1, n0, c1 * h * w, c0).transpose(0, 3, 1, 2, 4)
        dst.array()[...] = out.reshape(dst.conv_shape).view(dst.dtype.np)
        return
    else:
        raise PtoError(f"no ConvTile transform {src.layout} -> {dst.layout} (supported: NCHW <-> "
                       "NC1HWC0, GNCHW <-> GNC1HWC0, (G)NC1HWC0 -> FRACTAL_Z)")
    out = out if grouped else out[0]
    dst.array()[...] = np.ascontiguousarray(out).view(dst.dtype.np)


def _need(dst: ConvTile, shape: tuple[int, ...], grouped: bool, ok: bool) -> None:
    want = shape if grouped else shape[1:]
    if dst.conv_shape != want or not ok:
        raise PtoError(f"{dst.layout} dst {list(dst.conv_shape)} does not match the source "
                       f"(want {list(want)})")


# ---- TLOAD / TSTORE of ConvTiles (GM layouts NC1HWC0, NDC1HWC0, FRACTAL_Z, ...) ----------------

def gm_indices(gm: Any, tile: ConvTile) -> np.ndarray:
    """Flat GM element indices of the ConvTile's elements, in the tile's storage order.

    The GM view's elements are taken in row-major order of its 5-D shape (the convolution
    layout is the order of its dimensions: a FRACTAL_Z view ``[., ., C1HW, N0, C0]`` is the
    ``[C1HW, N1, N0, C0]`` tile). An NDC1HWC0 view is 5-D ``[N, D, C1, H, W]`` with an implicit
    innermost C0 (contiguous, the tile's last dimension), as the C++ GlobalTensor has no
    sixth dimension."""
    shape = [int(s) for s in gm.spec.shape]
    stride = [int(s) for s in gm.spec.stride]
    numel = int(np.prod(shape))
    tnum = int(np.prod(tile.conv_shape))
    layout = gm.spec.layout.name
    if layout == "NDC1HWC0" and numel * tile.conv_shape[-1] == tnum:
        if list(tile.conv_shape[:-1]) != shape[-len(tile.conv_shape) + 1:]:
            raise PtoError(f"NDC1HWC0 view {shape} does not match the ConvTile "
                           f"{list(tile.conv_shape)} (want [N, D, C1, H, W] + C0)")
        shape, stride = shape + [tile.conv_shape[-1]], stride + [1]
    elif numel != tnum:
        raise PtoError(f"GM view {gm.spec.describe()} holds {numel} elements, the "
                       f"{tile.layout} ConvTile {list(tile.conv_shape)} {tnum}")
    idx = np.zeros((), np.int64)
    for s, t in zip(shape, stride, strict=True):
        idx = idx[..., None] + np.arange(s, dtype=np.int64) * t
    idx = idx.reshape(-1) + int(gm.offset)
    if idx.size and (idx.min() < 0 or idx.max() >= gm.flat.size):
        raise PtoError(f"GM view {gm.spec.describe()} at offset {gm.offset} reaches elements "
                       f"[{idx.min()}, {idx.max()}] but the array has {gm.flat.size}")
    return idx


def load(dst: ConvTile, src: Any) -> None:
    """TLOAD into a ConvTile: the GM view's elements, in order, into the tile's storage."""
    n = int(np.prod(dst.conv_shape))
    dst.storage[:n] = src.flat[gm_indices(src, dst)].view(dst.storage.dtype)


def store(dst: Any, src: ConvTile) -> None:
    """TSTORE of a ConvTile: its storage, in order, to the GM view's elements."""
    n = int(np.prod(src.conv_shape))
    dst.flat[gm_indices(dst, src)] = src.storage[:n].view(dst.flat.dtype)

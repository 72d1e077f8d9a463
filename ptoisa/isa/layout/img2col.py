"""TIMG2COL and its configuration instructions SETFMATRIX, SET_IMG2COL_RPT and
SET_IMG2COL_PADDING.

A feature-map ConvTile (NC1HWC0, or NDC1HWC0 with D folded into the batch) carries the
``Img2colTileConfig`` fields of the C++ API (:class:`Img2colConfig`, ``tile.img2col``;
without one they are derived from the tile's shape: the whole map, no padding, a 1x1 filter,
stride and dilation 1). The configuration instructions copy fields into the FMATRIX state of
the Machine (``m.fmatrix``, one slot per operand side A/B selected by ``FmatrixMode``):

* SETFMATRIX: feature-map height/width and the padding list;
* SET_IMG2COL_PADDING: the padding value;
* SET_IMG2COL_RPT: the repeat fields (repeat count, stride, mode).

TIMG2COL in a MANUAL mode reads the feature-map geometry from that slot (so it must have been
set) and the per-instruction fields (filter, stride, dilation, channel size) from the
ConvTile; an AUTO mode configures the slot from the ConvTile itself first.

The im2col matrix (load3d v2 ordering): row ``m`` = output position ``(n, oh, ow)``, column
``k`` = ``(c1, kh, kw, c0)`` with ``C0`` innermost. Element ``(m, k)`` is
``src[n, c1, ih, iw, c0]`` at ``ih = oh*strideH - padTop + kh*dilationH``,
``iw = ow*strideW - padLeft + kw*dilationW``, or the padding value where ``(ih, iw)`` falls
outside the map or the channel ``c1*C0 + c0`` is not below ``channelSize``.
``TIMG2COL(dst, src, posM, posK)`` writes ``dst[r, c] = A[posM + r, posK + c]`` over dst's
valid region (the repeat fields are recorded: the extent is dst's valid region, as on the CPU
simulator).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from ...conv import ConvTile
from ...enums import Pipe, TileType
from ...errors import PtoError, RuntimeCheckError
from ...memory import Machine
from ...tile import Tile, TileSpec
from ..registry import Instr, Opnd, Param, Sig, instr, locs


class SetFmatrixMode(enum.Enum):
    """C++ ``SetFmatrixMode``: which FMATRIX slot (A or B side) and whether TIMG2COL configures
    it itself (AUTO) or uses what SETFMATRIX / SET_IMG2COL_* set (MANUAL)."""

    FMATRIX_A_AUTO = 0
    FMATRIX_B_AUTO = 1
    FMATRIX_A_MANUAL = 2
    FMATRIX_B_MANUAL = 3


@dataclass(frozen=True)
class Img2colConfig:
    """The ``Img2colTileConfig`` fields of a feature-map ConvTile. ``padList`` is
    (left, right, top, bottom), the order of the FMATRIX register."""

    fmapH: int  # noqa: N815 - C++ names
    fmapW: int  # noqa: N815
    padList: tuple[int, int, int, int] = (0, 0, 0, 0)  # noqa: N815
    strideH: int = 1  # noqa: N815
    strideW: int = 1  # noqa: N815
    dilationH: int = 1  # noqa: N815
    dilationW: int = 1  # noqa: N815
    filterH: int = 1  # noqa: N815
    filterW: int = 1  # noqa: N815
    channelSize: int | None = None  # noqa: N815 - None = C1 * C0
    padValue: float = 0.0  # noqa: N815
    repeatTime: int = 1  # noqa: N815
    repeatStride: int = 0  # noqa: N815
    repeatMode: int = 0  # noqa: N815

    def __post_init__(self) -> None:
        for f in ("fmapH", "fmapW", "strideH", "strideW", "dilationH", "dilationW", "filterH",
                  "filterW"):
            if int(getattr(self, f)) < 1:
                raise PtoError(f"Img2colConfig.{f} must be positive, got {getattr(self, f)}")
        if len(self.padList) != 4 or any(int(p) < 0 for p in self.padList):
            raise PtoError(f"Img2colConfig.padList must be 4 non-negative values (left, right, "
                           f"top, bottom), got {self.padList}")

    def out_hw(self) -> tuple[int, int]:
        """Output height and width of the convolution window sweep."""
        pl, pr, pt, pb = self.padList
        ho = (self.fmapH + pt + pb - self.dilationH * (self.filterH - 1) - 1) // self.strideH + 1
        wo = (self.fmapW + pl + pr - self.dilationW * (self.filterW - 1) - 1) // self.strideW + 1
        return max(ho, 0), max(wo, 0)


def _fmap(src: ConvTile) -> tuple[np.ndarray, int, int, int, int, int]:
    """(array [N, C1, H, W, C0], N, C1, H, W, C0) of a feature-map ConvTile."""
    a = src.array()
    if src.layout == "NDC1HWC0":
        n, d, c1, h, w, c0 = a.shape
        a = a.reshape(n * d, c1, h, w, c0)
    elif src.layout != "NC1HWC0":
        raise PtoError(f"a feature-map ConvTile is NC1HWC0 or NDC1HWC0, got {src.layout}")
    return (a, *a.shape)  # type: ignore[return-value]


def config_of(src: ConvTile) -> Img2colConfig:
    """The tile's Img2colConfig, or the one derived from its shape."""
    if src.img2col is not None:
        return src.img2col  # type: ignore[no-any-return]
    _, _, _, h, w, _ = _fmap(src)
    return Img2colConfig(h, w)


def im2col(src: ConvTile, cfg: Img2colConfig, rows: int, cols: int, pos_m: int,
           pos_k: int) -> np.ndarray:
    """The block ``A[pos_m : pos_m + rows, pos_k : pos_k + cols]`` of the im2col matrix."""
    a, n, c1, h, w, c0 = _fmap(src)
    ho, wo = cfg.out_hw()
    kh_n, kw_n = cfg.filterH, cfg.filterW
    chans = c1 * c0 if cfg.channelSize is None else int(cfg.channelSize)
    m = np.arange(pos_m, pos_m + rows)[:, None]
    k = np.arange(pos_k, pos_k + cols)[None, :]
    per_img = max(ho * wo, 1)
    img, pix = m // per_img, m % per_img
    oh, ow = pix // max(wo, 1), pix % max(wo, 1)
    kc1, r = k // (kh_n * kw_n * c0), k % (kh_n * kw_n * c0)
    kpos, kc0 = r // c0, r % c0
    kh, kw = kpos // kw_n, kpos % kw_n
    pl, _, pt, _ = cfg.padList
    ih = oh * cfg.strideH - pt + kh * cfg.dilationH
    iw = ow * cfg.strideW - pl + kw * cfg.dilationW
    ok = (img < n) & (kc1 < c1) & (ih >= 0) & (ih < min(h, cfg.fmapH)) & (iw >= 0) \
        & (iw < min(w, cfg.fmapW)) & (kc1 * c0 + kc0 < chans)
    ok, img, kc1, ih, iw, kc0 = np.broadcast_arrays(ok, img, kc1, ih, iw, kc0)
    out = np.empty((rows, cols), a.dtype)
    with np.errstate(all="ignore"):
        out[...] = np.asarray(cfg.padValue).astype(a.dtype)
    out[ok] = a[img[ok], kc1[ok], ih[ok], iw[ok], kc0[ok]]
    return out


# ---- FMATRIX state on the Machine ----------------------------------------------------------

def _slot(mode: SetFmatrixMode) -> str:
    return "A" if mode.name.startswith("FMATRIX_A") else "B"


def fmatrix(m: Machine) -> dict[str, dict[str, Any]]:
    """The Machine's FMATRIX state: ``{"A": {...}, "B": {...}}`` of the set fields."""
    st: dict[str, dict[str, Any]] | None = m.fmatrix
    if st is None:
        st = {"A": {}, "B": {}}
        m.fmatrix = st
    return st


def _mat_src(sig: Sig) -> None:
    s = sig["src"]
    if isinstance(s, TileSpec) and s.loc is not TileType.Mat:
        raise sig.fail(f"src must be a Mat (L1) ConvTile, got {s.loc.name}")


_GEOMETRY = ("fmapH", "fmapW", "padList")
_PADDING = ("padValue",)
_REPEAT = ("repeatTime", "repeatStride", "repeatMode")


def _set(m: Machine, src: ConvTile, mode: SetFmatrixMode, fields: tuple[str, ...]) -> None:
    cfg = config_of(src)
    fmatrix(m)[_slot(mode)].update({f: getattr(cfg, f) for f in fields})


def _feature_map(ins: Instr, *vals: Any, **params: Any) -> None:
    src = vals[[o.name for o in ins.operands].index("src")]
    if not isinstance(src, ConvTile) or src.layout not in ("NC1HWC0", "NDC1HWC0"):
        what = src.layout + " ConvTile" if isinstance(src, ConvTile) else "a plain tile"
        raise RuntimeCheckError(f"src must be an NC1HWC0 or NDC1HWC0 ConvTile, got {what}",
                                op=ins.mnemonic)


_MODE = Param("FmatrixMode", SetFmatrixMode.FMATRIX_A_MANUAL, SetFmatrixMode)


def _timg2col_static(sig: Sig) -> None:
    d, s = sig["dst"], sig["src"]
    if isinstance(d, TileSpec) and isinstance(s, TileSpec) and d.dtype is not s.dtype:
        raise sig.fail(f"dst element type {d.dtype} != src element type {s.dtype}")
    # the target's Left layout (TileLeft): upstream's a2a3 TImg2col asserts BLayout RowMajor
    # (ZZ), its a5 one BLayout ColMajor (NZ); SLayout RowMajor on both
    traits = sig.target.traits
    if isinstance(d, TileSpec) and traits.npu_static_checks:
        want, words = ("ZZ", "RowMajor") if traits.left_blayout == "row_major" else \
            ("NZ", "ColMajor")
        if d.layout_name != want:
            raise sig.fail(f"dst must be a {want} Left tile on {sig.target} (BLayout {words}, "
                           f"SLayout RowMajor), got {d.layout_name}")


@instr("TIMG2COL", family="layout", pipe=Pipe.MTE1, batched=False,
       operands=(Opnd("dst", "tile", "out"), Opnd("src", "tile"),
                 Opnd("posM", "scalar", optional=True), Opnd("posK", "scalar", optional=True)),
       params=(_MODE,), dtype_key=("dst",),
       static=(locs(["dst"], TileType.Left), _mat_src, _timg2col_static),
       runtime=(_feature_map,))
def TIMG2COL(m: Machine, dst: Tile, src: ConvTile, posM: int | None = 0,  # noqa: N802,N803
             posK: int | None = 0, *, FmatrixMode: SetFmatrixMode) -> None:  # noqa: N803
    """dst[r, c] = im2col(src)[posM + r, posK + c] over dst's valid region (module doc).
    MANUAL modes take the map geometry, padding value and repeat fields from the FMATRIX slot
    set by SETFMATRIX / SET_IMG2COL_PADDING / SET_IMG2COL_RPT; AUTO modes set the slot from
    src first."""
    slot = _slot(FmatrixMode)
    if FmatrixMode.name.endswith("AUTO"):
        _set(m, src, FmatrixMode, _GEOMETRY + _PADDING + _REPEAT)
    state = fmatrix(m)[slot]
    missing = [f for f in _GEOMETRY if f not in state]
    if missing:
        raise RuntimeCheckError(f"FMATRIX {slot} is not configured ({', '.join(missing)} unset): "
                                f"call SETFMATRIX<{FmatrixMode.name}> first, or use an AUTO mode",
                                op="timg2col")
    cfg = replace(config_of(src), **state)
    vr, vc = dst.valid_shape
    if not (vr and vc):
        return
    dst.write(im2col(src, cfg, vr, vc, int(posM or 0), int(posK or 0)))

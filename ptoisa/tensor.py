"""GlobalTensor: a 5-D strided view of global memory (a numpy array), as in the C++ API.

``GlobalTensor(array, shape=(1,1,1,16,16), stride=(256,256,256,16,1), layout=Layout.ND)``.
Strides are in elements. Shorter shape/stride tuples are left-padded to 5-D. The array is the
memory: stores write into it. A tile (r, c) maps to a GM element by the layout's rule
(spec/notes/model.md section 4, ``MapTileIndicesToGlobalOffset``).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import numpy as np

from . import dtypes as dt_mod
from . import symbolic as _sym
from .dtypes import _BY_NP, DType
from .enums import Layout, coerce_enum
from .errors import PtoError, PtoMemoryError
from .foreign import for_global_tensor
from .tables import gm_html


@dataclass(frozen=True)
class GMSpec:
    """Static type of a GlobalTensor view: element type, 5-D shape and stride, layout."""

    dtype: DType
    shape: tuple[int, int, int, int, int]
    stride: tuple[int, int, int, int, int]
    layout: Layout

    def __hash__(self) -> int:
        h = self.__dict__.get("_hash")  # computed once (see TileSpec.__hash__)
        if h is None:
            h = hash((self.dtype, self.shape, self.stride, self.layout))
            object.__setattr__(self, "_hash", h)
        return h

    @functools.cached_property
    def extent(self) -> tuple[int, int]:
        """Lowest and highest element offset of the view relative to its start."""
        ext = [(s - 1) * t for s, t in zip(self.shape, self.stride, strict=True)]
        return sum(min(0, e) for e in ext), sum(max(0, e) for e in ext)

    @functools.cached_property
    def reach(self) -> tuple[int, int] | None:
        """:attr:`extent`, or None for an empty view (it reaches no element)."""
        return None if self.numel == 0 else self.extent

    @property
    def numel(self) -> int:
        n = 1
        for s in self.shape:
            n *= s
        return n

    @property
    def rows_cols(self) -> tuple[int, int]:
        """The 2-D (rows, cols) extent this view covers as a tile, by layout."""
        s0, s1, s2, s3, s4 = self.shape
        if self.layout is Layout.DN:
            return s3, s0 * s1 * s2 * s4
        if self.layout is Layout.NZ:
            return s2 * s3, s0 * s1 * s4
        if self.layout is Layout.NC1HWC0:
            return s0 * s2 * s3, s1 * s4
        if self.layout is Layout.MX_A_ZZ:
            return s1 * s3, s2 * s4
        if self.layout is Layout.MX_B_NN:
            return s2 * s4, s1 * s3
        if self.layout in (Layout.MX_B_ND, Layout.MX_A_DN):
            rc = (s2 * s4, s1 * s3)
            return rc if self.layout is Layout.MX_B_ND else (rc[1], rc[0])
        if self.layout in (Layout.MX_A_ND, Layout.MX_B_DN):
            rc = (s1 * s2, s3 * s4)
            return rc if self.layout is Layout.MX_A_ND else (rc[1], rc[0])
        return s0 * s1 * s2 * s3, s4

    def describe(self) -> str:
        shp = "x".join(map(str, self.shape))
        return f"{self.layout.name} {self.dtype.name} {shp} stride {list(self.stride)}"

    @functools.lru_cache(maxsize=256)  # noqa: B019 - specs are interned and few
    def offsets(self, rows: int, cols: int) -> np.ndarray:
        """Element offsets (rows, cols) of tile positions (r, c) relative to the view start."""
        off = self.offsets_at(np.arange(rows, dtype=np.int64)[:, None],
                              np.arange(cols, dtype=np.int64)[None, :])
        off = np.ascontiguousarray(np.broadcast_to(off, (rows, cols)))
        off.setflags(write=False)
        return off

    def offsets_at(self, r: np.ndarray, c: np.ndarray) -> np.ndarray:
        """Element offsets of tile positions ``(r, c)`` (int64 arrays that broadcast: a
        column of rows and a row of columns) relative to the view start."""
        s0, s1, s2, s3, s4 = self.shape
        t = self.stride
        lay = self.layout
        if lay is Layout.DN:
            i3 = r
            i4 = c % s4
            i2 = (c // s4) % s2
            i1 = (c // (s4 * s2)) % s1
            i0 = c // (s1 * s2 * s4)
        elif lay is Layout.NZ:
            oc = c // s4
            i0, i1 = oc // s1, oc % s1
            i2, i3, i4 = r // s3, r % s3, c % s4
        elif lay is Layout.MX_A_ZZ:  # scale boxes of 16 rows x 2 columns, row of boxes
            i0 = r * 0
            i1, i2, i3, i4 = r // 16, c // 2, r % 16, c % 2
        elif lay is Layout.MX_B_NN:  # the transposed pattern for B's scales
            i0 = r * 0
            i1, i2, i3, i4 = c // 16, r // 2, c % 16, r % 2
        elif lay is Layout.MX_B_ND:  # pairs of K along the innermost axis, N rows
            i0 = r * 0
            i1, i2, i3, i4 = c // s3, r // 2, c % s3, r % 2
        elif lay is Layout.MX_A_DN:
            i0 = r * 0
            i1, i2, i3, i4 = r // s3, c // 2, r % s3, c % 2
        elif lay is Layout.MX_A_ND:  # M rows, pairs of K along the innermost axis
            i0 = r * 0
            i1, i2, i3, i4 = r // s2, r % s2, c // 2, c % 2
        elif lay is Layout.MX_B_DN:  # N columns, pairs of K along the innermost axis
            i0 = r * 0
            i1, i2, i3, i4 = c // s2, c % s2, r // 2, r % 2
        elif lay is Layout.NC1HWC0:
            i3 = r % s3
            i2 = (r // s3) % s2
            i0 = r // (s2 * s3)
            i4 = c % s4
            i1 = c // s4
        else:
            i4 = c
            i3 = r % s3
            i2 = (r // s3) % s2
            i1 = (r // (s3 * s2)) % s1
            i0 = r // (s1 * s2 * s3)
        return i0 * t[0] + i1 * t[1] + i2 * t[2] + i3 * t[3] + i4 * t[4]  # type: ignore


@functools.lru_cache(maxsize=4096)
def gm_spec(dtype: DType, shape: tuple[int, ...], stride: tuple[int, ...], layout: Layout
            ) -> GMSpec:
    return GMSpec(dtype, shape, stride, layout)  # type: ignore[arg-type]


#: (element type, shape, stride, layout) as given to GlobalTensor -> its spec
_VIEW_SPECS: dict[tuple[Any, ...], GMSpec] = {}
#: (id of a spec, rows, cols) -> (GlobalTensor._strides2d in bytes, the spec): a kernel's
#: loop asks again for the same
_STRIDES2D: dict[tuple[int, int, int], tuple[Any, GMSpec]] = {}


def _integral(x: Any, what: str) -> int:
    """``x`` as an int when it is one (a Python or numpy integer, or a float with no fraction);
    a fraction is an error, never truncated."""
    if isinstance(x, (float, np.floating)):
        if not float(x).is_integer():
            raise PtoError(f"GlobalTensor {what} must be whole numbers, got {x!r}")
    return int(x)


def _pad5(t: Any, fill: int, what: str) -> tuple[int, int, int, int, int]:
    """A GlobalTensor's shape or stride as 5 ints (``fill`` in front); a shape's dims must not
    be negative. (GlobalTensor remembers the spec of the tuples it was given: _VIEW_SPECS.)"""
    try:
        vals = [_integral(x, what) for x in t]
    except (TypeError, ValueError):
        raise PtoError(f"GlobalTensor {what} must be a sequence of integers, got {t!r}") from None
    if not 1 <= len(vals) <= 5:
        raise PtoError(f"GlobalTensor {what} has {len(vals)} dims; 1 to 5 are allowed")
    out = tuple([fill] * (5 - len(vals)) + vals)
    if what == "shape" and any(v < 0 for v in out):
        raise PtoError(f"GlobalTensor shape {out} has a negative dimension")
    return out  # type: ignore[return-value]


def _contiguous_stride(shape: tuple[int, ...]) -> tuple[int, int, int, int, int]:
    st = [1] * 5
    for k in range(3, -1, -1):
        st[k] = st[k + 1] * shape[k + 1]
    return tuple(st)  # type: ignore[return-value]


_SPANS: dict[bytes, tuple[int, int, int | None]] = {}


def lane_span(off: np.ndarray) -> tuple[int, int, int | None]:
    """(lowest, highest, even spacing or None) of a lockstep launch's per-block offsets (1-D,
    int64); remembered by value (a kernel computes the same offsets for every view it makes)."""
    key = off.tobytes()
    span = _SPANS.get(key)
    if span is None:
        lo, hi = int(off.min()), int(off.max())
        d = int(off[1] - off[0]) if off.size > 1 else 0
        even = off.size < 3 or bool((off[1:] - off[:-1] == d).all())
        span = (lo, hi, d if even else None)
        if len(_SPANS) > 64:
            _SPANS.clear()
        _SPANS[key] = span
    return span


def lane_grid(off: np.ndarray) -> tuple[int, int, int, int, int] | None:
    """(base, ni, nj, si, sj) when a lockstep launch's per-block offsets (1-D, int64) form a
    grid, ``off[i * nj + j] == base + i * si + j * sj`` with nj > 1 and ni > 1 (the blocks of
    a GEMM's C, say); else None. Remembered by value, as :func:`lane_span`."""
    key = off.tobytes()
    hit = _GRIDS.get(key, False)
    if hit is not False:
        return hit
    grid = None
    n = off.size
    if n >= 4:
        sj = int(off[1] - off[0])
        d = np.diff(off)
        bad = np.flatnonzero(d != sj)
        nj = int(bad[0]) + 1 if bad.size else n
        if 1 < nj < n and n % nj == 0:
            ni = n // nj
            si = int(off[nj] - off[0])
            want = off[0] + np.arange(ni)[:, None] * si + np.arange(nj)[None, :] * sj
            if np.array_equal(off.reshape(ni, nj), want):
                grid = (int(off[0]), ni, nj, si, sj)
    if len(_GRIDS) > 64:
        _GRIDS.clear()
    _GRIDS[key] = grid
    return grid


_GRIDS: dict[bytes, tuple[int, int, int, int, int] | None] = {}


def _unique_addresses(strides: tuple[int, ...], extents: tuple[int, ...]) -> bool:
    """Do the index tuples of an array of these (element) strides and extents all reach
    different elements? Sufficient test: ordered by stride, each stride passes the farthest
    reach of the smaller ones (a mixed-radix numbering)."""
    reach = 0
    for st, ext in sorted(zip(strides, extents, strict=True)):
        if ext == 1:
            continue
        if st <= reach:
            return False
        reach += (ext - 1) * st
    return True


class GlobalTensor:
    """A view over global memory: ``GlobalTensor(array, shape, stride, layout, offset=0)``.

    ``array`` is any contiguous numpy array, or another library's (``__dlpack__`` /
    ``__array__``: torch CPU tensors, jax arrays; see :mod:`ptoisa.foreign`); it is treated as
    flat memory of its dtype (or of ``dtype`` if given, reinterpreting the bytes). ``offset``
    is in elements.
    """

    __slots__ = ("spec", "flat", "offset", "name", "_array", "_span", "origin")

    def __init__(
        self,
        array: Any,
        shape: Any = None,
        stride: Any = None,
        layout: Any = Layout.ND,
        *,
        dtype: Any = None,
        offset: int = 0,
        name: str | None = None,
    ) -> None:
        if _sym.TRACER is not None:  # pto.export: symbolic shape and offset
            shape, stride, offset = _sym.TRACER.note_gm(self, shape, stride, offset)
        #: another library's array this views (None for numpy): "a torch.Tensor (shared ...)"
        self.origin: str | None = None
        if not isinstance(array, np.ndarray):  # torch / jax / ... (ptoisa/arrays.py)
            array, self.origin = for_global_tensor(array)
        if not array.flags.c_contiguous:
            raise PtoError("GlobalTensor needs a C-contiguous array (global memory is flat); "
                           "pass np.ascontiguousarray(a) and read results from that copy")
        flat = array if array.ndim == 1 else array.reshape(-1)
        if dtype is not None:
            dt = dt_mod.dtype(dtype)
            if dt.np != flat.dtype:
                if flat.nbytes % dt.itemsize:
                    raise PtoError(f"GlobalTensor: {flat.nbytes} bytes are not a whole number "
                                   f"of {dt.name} elements")
                flat = flat.view(dt.np)
        else:
            dt = _BY_NP.get(flat.dtype) or dt_mod.dtype(flat.dtype)
        if shape is None:
            shape = array.shape if array.ndim else (1,)
            if dtype is not None and dt.np != array.dtype:
                shape = (flat.size,)
        lay = layout if type(layout) is Layout else coerce_enum(Layout, layout,
                                                                 "GlobalTensor layout")
        key: Any = (dt, shape, stride, lay)
        try:  # the spec of a view made before with these arguments (a kernel's loop)
            spec = _VIEW_SPECS.get(key)
        except TypeError:  # a list, say: converted below
            spec = key = None
        if spec is None:
            shp = _pad5(shape, 1, "shape")
            std = _contiguous_stride(shp) if stride is None else _pad5(stride, 0, "stride")
            spec = gm_spec(dt, shp, std, lay)
            if key is not None:
                if len(_VIEW_SPECS) >= 4096:
                    _VIEW_SPECS.clear()
                _VIEW_SPECS[key] = spec
        self.spec = spec
        self.flat = flat
        self._array = array
        # an int, or one offset per block in a lockstep launch (an int array)
        self.offset: Any = offset
        self._span: tuple[int, int, int | None] | None = None
        self.name = name
        if isinstance(offset, np.ndarray):
            off = self.offset = np.asarray(offset, np.int64).view(np.ndarray)
            if off.ndim == 1 and off.size:
                self._span = lane_span(off)
        else:
            o = self.offset = offset if type(offset) is int else _integral(offset, "offset")
            r = spec.reach
            if r is None or (o + r[0] >= 0 and o + r[1] < flat.size):
                return  # (in bounds, as _check_bounds finds: a packed view's size is larger)
        self._check_bounds()

    def _check_bounds(self) -> None:
        spec = self.spec
        ext = spec.reach
        if ext is None:  # an empty view
            return
        size = self.flat.size * (2 if spec.dtype.packed else 1)
        ext_lo, ext_hi = ext
        off, span = self.offset, self._span
        if span is None and type(off) is int and off + ext_lo >= 0 and off + ext_hi < size:
            return  # (the common case of the checks below)
        if span is not None:
            lo, hi = span[0], span[1]
        elif isinstance(off, int):
            lo = hi = off
        else:
            lo, hi = int(off.min()), int(off.max())
        lo += ext_lo
        hi += ext_hi
        if lo < 0 or hi >= size:
            if isinstance(off, int):
                at = f"offset {off}"
            else:  # one offset per block of a lockstep launch: a short list, on one line
                o = np.asarray(off).reshape(-1)
                at = "offsets [" + ", ".join(map(str, o[:4].tolist())) \
                    + (", ...]" if o.size > 4 else "]") + " (per block)"
            raise PtoMemoryError(
                f"GlobalTensor {self.spec.describe()} at {at} reaches elements "
                f"[{lo}, {hi}] but the array has {size}"
            )

    @property
    def dtype(self) -> DType:
        return self.spec.dtype

    @property
    def shape(self) -> tuple[int, ...]:
        return self.spec.shape

    @property
    def stride(self) -> tuple[int, ...]:
        return self.spec.stride

    @property
    def layout(self) -> Layout:
        return self.spec.layout

    def GetShape(self, dim: int) -> int:  # noqa: N802 - C++ name
        return self.spec.shape[dim]

    def GetStride(self, dim: int) -> int:  # noqa: N802
        return self.spec.stride[dim]

    def data(self) -> np.ndarray:
        if _sym.WATCH is not None:  # an eager plan records: GM data into the kernel's Python
            _sym.WATCH("GlobalTensor.data()")
        return self._array

    def rebind(self, array: np.ndarray) -> None:
        """TASSIGN(gt, ptr): point the view at another array of the same element type."""
        if not isinstance(array, np.ndarray) or not array.flags.c_contiguous:
            raise PtoError("TASSIGN of a GlobalTensor needs a C-contiguous numpy array")
        if dt_mod.dtype(array.dtype) is not self.dtype:
            raise PtoError(f"TASSIGN: GlobalTensor of {self.dtype.name} cannot point at an "
                           f"array of {array.dtype}")
        self.flat = array.reshape(-1)
        self._array = array
        self._check_bounds()

    def point_at(self, flat: np.ndarray, offset: Any) -> None:
        """Point the view at element ``offset`` of ``flat`` (a 1-D array of the view's element
        type; ``offset`` an int, or one per block in a lockstep launch): what TALLOC / TPOP do
        to the GlobalTensor they are given (the C++ ``TASSIGN`` of a FIFO slot's address)."""
        if flat.ndim != 1 or dt_mod.dtype(flat.dtype) is not self.dtype:
            raise PtoError(f"GlobalTensor of {self.dtype.name} cannot point at a "
                           f"{flat.ndim}-D array of {flat.dtype}")
        self.flat = self._array = flat
        self._span = None
        if isinstance(offset, np.ndarray):
            self.offset = np.asarray(offset, np.int64).view(np.ndarray)
            if self.offset.ndim == 1 and self.offset.size:
                self._span = lane_span(self.offset)
        else:
            self.offset = int(offset)
        self._check_bounds()

    def indices(self, rows: int, cols: int) -> np.ndarray:
        """Absolute flat indices of tile positions (r, c) for r < rows, c < cols."""
        off = self.offset
        if isinstance(off, np.ndarray):
            return self.spec.offsets(rows, cols) + off[:, None, None]
        return self.spec.offsets(rows, cols) + off

    def _strides2d(self, rows: int, cols: int) -> tuple[int, int] | None:
        """(row stride, col stride) in elements when the view's index map for a rows x cols
        block is a plain 2-D stride pattern, else None."""
        if rows <= 0 or cols <= 0 or self.spec.dtype.packed:
            return None
        s0, s1, s2, s3, s4 = self.spec.shape
        t0, t1, t2, t3, t4 = self.spec.stride
        lay = self.spec.layout
        if lay is Layout.ND:
            if cols > s4:
                return None
            if rows > s3 and not (t2 == s3 * t3 and t1 == s2 * t2 and t0 == s1 * t1):
                return None
            return t3, t4
        if lay is Layout.DN:
            if rows > s3:
                return None
            if cols > s4 and not (t2 == s4 * t4 and t1 == s2 * t2 and t0 == s1 * t1):
                return None
            return t3, t4
        return None

    def _strided(self, base: int, shape: tuple[int, ...], strides: tuple[int, ...]
                 ) -> np.ndarray:
        """The view of GM from element ``base`` with ``shape`` and ``strides`` (elements)."""
        return self._view(base, shape, tuple(map(self.flat.itemsize.__mul__, strides)))

    def _view(self, base: int, shape: tuple[int, ...], st: tuple[int, ...]) -> np.ndarray:
        """:meth:`_strided` with the strides ``st`` in bytes."""
        flat = self.flat
        it = flat.itemsize
        if min(st) >= 0 and flat.flags.writeable:
            try:  # a direct view (numpy checks it stays inside the buffer)
                return np.ndarray(shape, flat.dtype, flat, base * it, st)
            except (ValueError, TypeError):
                pass
        if flat.dtype.isbuiltin == 1:
            return np.lib.stride_tricks.as_strided(flat[base:], shape, st)
        raw = flat.view(f"u{it}")  # as_strided cannot build ml_dtypes arrays directly
        return np.lib.stride_tricks.as_strided(raw[base:], shape, st).view(flat.dtype)

    def window(self, rows: int, cols: int) -> np.ndarray | None:
        """A writable strided view ``(..., rows, cols)`` of GM at tile positions (r, c), or
        None when the layout's index map is not a plain 2-D stride pattern (then use
        :meth:`indices`). In a lockstep launch the per-block offsets must be evenly spaced
        (otherwise see :meth:`lane_blocks`)."""
        hit = _STRIDES2D.get((id(self.spec), rows, cols))
        if hit is None:
            rc = self._strides2d(rows, cols)
            if len(_STRIDES2D) >= 4096:
                _STRIDES2D.clear()
            # (the spec kept with its id keeps the id its own)
            hit = _STRIDES2D[(id(self.spec), rows, cols)] = (
                None if rc is None else tuple(map(self.flat.itemsize.__mul__, rc)), self.spec)
        bst = hit[0]
        if bst is None:
            return None
        off = self.offset
        if type(off) is int:
            return self._view(off, (rows, cols), bst)
        span = self._span
        if span is None or span[2] is None:
            return None
        return self._view(int(off[0]), (off.size, rows, cols),
                          (span[2] * self.flat.itemsize, *bst))

    def grid_window(self, rows: int, cols: int) -> np.ndarray | None:
        """For per-block offsets on a grid (see :func:`lane_grid`) whose windows do not
        overlap: a writable (ni, nj, rows, cols) view, block i * nj + j at [i, j]; else None."""
        off = self.offset
        if self._span is None or not isinstance(off, np.ndarray):
            return None
        rc = self._strides2d(rows, cols)
        g = lane_grid(off) if rc is not None else None
        if g is None:
            return None
        base, ni, nj, si, sj = g
        if min(si, sj, *rc) < 0 or not _unique_addresses((si, sj, *rc), (ni, nj, rows, cols)):
            return None
        return self._strided(base, (ni, nj, rows, cols), (si, sj, *rc))

    def lane_blocks(self, rows: int, cols: int) -> tuple[np.ndarray, np.ndarray] | None:
        """For per-block offsets that are not evenly spaced: ``(sliding, idx)`` such that
        ``sliding[idx]`` is the (blocks, rows, cols) data (a strided block copy, no element
        index arrays) and ``sliding[idx] = values`` stores it."""
        span = self._span
        if span is None:
            return None
        rc = self._strides2d(rows, cols)
        if rc is None:
            return None
        lo, hi = span[0], span[1]
        return self._strided(lo, (hi - lo + 1, rows, cols), (1, *rc)), self.offset - lo

    def block(self, b: int) -> GlobalTensor:
        """The view of block ``b`` of a lockstep launch (offsets per block)."""
        if not isinstance(self.offset, np.ndarray):
            return self
        return self.at(int(self.offset[b]))

    def at(self, offset: int) -> GlobalTensor:
        """This view's shape and strides over the same memory from element ``offset`` (an
        int), bounds checked: an interpreter's loop making the same view at a new offset."""
        g = GlobalTensor.__new__(GlobalTensor)
        g.spec, g.flat, g._array, g.name = self.spec, self.flat, self._array, self.name
        g.origin = self.origin
        g.offset = offset
        g._span = None
        r = self.spec.reach
        if r is not None and not (offset + r[0] >= 0 and offset + r[1] < self.flat.size):
            g._check_bounds()  # (as __init__: a packed view's size is larger)
        return g

    def numpy(self) -> np.ndarray:
        """The logical 5-D contents of the view (a copy)."""
        if _sym.WATCH is not None:  # an eager plan records: GM data into the kernel's Python
            _sym.WATCH("GlobalTensor.numpy()")
        idx = self.offset + sum(
            np.arange(s, dtype=np.int64).reshape([-1 if k == d else 1 for k in range(5)]) * t
            for d, (s, t) in enumerate(zip(self.spec.shape, self.spec.stride, strict=True))
        )
        return self.flat[idx]

    def __repr__(self) -> str:
        return f"<GlobalTensor {self.name or ''} {self.spec.describe()} offset={self.offset}>"

    def _repr_html_(self) -> str:
        """Jupyter: the 2-D view's values as a table (:func:`ptoisa.tables.gm_html`)."""
        return gm_html(self)

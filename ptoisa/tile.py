"""Tiles: typed 2-D windows onto on-chip storage.

A :class:`TileSpec` is the static type of a tile (the C++ template arguments) and is interned.
A :class:`Tile` is a spec plus storage plus the run-time valid region. Storage is the tile's
elements in their *physical* order (ND, DN or fractal boxes, as in spec/notes/model.md 2.4),
viewed from the bytes of the on-chip buffer the tile was TASSIGNed to, so tiles placed at
overlapping addresses share bytes exactly as on hardware. The logical ``rows x cols`` view is
derived from storage.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import numpy as np

from . import dtypes as dt_mod
from . import lazy
from . import symbolic as _sym
from .dtypes import DType
from .enums import (
    DYNAMIC,
    BLayout,
    CompactMode,
    PadValue,
    SLayout,
    TileType,
    coerce_enum,
    pad_value,
)
from .errors import PtoError, RuntimeCheckError, needs_values
from .memory import ALIGN, Machine, current

FRACTAL_AB = 512
FRACTAL_C = 1024
_ACC_BOX = 16  # rows of an L0C box
FRACTAL_MX = 32


@dataclass(frozen=True)
class Dyn:
    """A dynamic valid extent with its initial run-time value: ``valid=(Dyn(8), 16)``."""

    value: int


@dataclass(frozen=True, eq=True)
class TileSpec:
    """Static type of a tile: ``Tile<Loc, T, Rows, Cols, BLayout, VR, VC, SLayout, Fractal, Pad>``.

    ``valid_row``/``valid_col`` are ints for static valid extents, ``None`` for dynamic ones.
    Build with :func:`tile_spec` (validated and interned), not directly.
    """

    loc: TileType
    dtype: DType
    rows: int
    cols: int
    blayout: BLayout = BLayout.RowMajor
    valid_row: int | None = None
    valid_col: int | None = None
    slayout: SLayout = SLayout.NoneBox
    fractal: int = FRACTAL_AB
    pad: PadValue = PadValue.Null
    compact: CompactMode = CompactMode.Null

    def __hash__(self) -> int:
        # computed once: specs key every instruction's cached static check
        h = self.__dict__.get("_hash")
        if h is None:
            h = hash((self.loc, self.dtype, self.rows, self.cols, self.blayout, self.valid_row,
                      self.valid_col, self.slayout, self.fractal, self.pad, self.compact))
            object.__setattr__(self, "_hash", h)
        return h

    # ---- derived -------------------------------------------------------------------------
    @functools.cached_property  # a spec is immutable; read per instruction
    def storage_rows(self) -> int:
        """Rows of storage: a boxed Acc tile's rows rounded up to whole 16-row L0C boxes (the
        cube writes whole boxes: a 1-row GEMV result is row 0 of each, FIXPIPE reads it with a
        16-row source stride); ``rows`` otherwise."""
        if self.loc is TileType.Acc and self.is_boxed and self.rows % _ACC_BOX:
            return -(-self.rows // _ACC_BOX) * _ACC_BOX
        return self.rows

    @functools.cached_property  # a spec is immutable; read per instruction
    def numel(self) -> int:
        """Elements of storage (``rows * cols`` but for a boxed Acc tile of a partial box)."""
        return self.storage_rows * self.cols

    @functools.cached_property  # a spec is immutable; read per instruction
    def nbytes(self) -> int:
        return self.dtype.storage_bytes(self.numel)

    @functools.cached_property  # a spec is immutable; read per instruction
    def is_row_major(self) -> bool:
        return self.blayout is BLayout.RowMajor

    @functools.cached_property  # a spec is immutable; read per instruction
    def is_boxed(self) -> bool:
        return self.slayout is not SLayout.NoneBox

    @functools.cached_property
    def inner(self) -> tuple[int, int]:
        """(InnerRows, InnerCols) of the fractal box; (1, 1) when not boxed. A boxed Acc tile
        (L0C) has the accumulator's 16 x 16 boxes whatever its ``fractal`` says: the cube
        writes L0C in those (a ``.pto`` acc tile_buf that leaves out ``fractal=1024`` gets the
        type's default 512, which would give 32-byte boxes no MAD writes)."""
        fractal = FRACTAL_C if self.loc is TileType.Acc else self.fractal
        return _inner_box(self.slayout, fractal, self.dtype.itemsize)

    @property
    def layout_name(self) -> str:
        """ND, DN, NZ, ZN, ZZ or NN (the names used in the manual and in TPRINT headers)."""
        if not self.is_boxed:
            return "ND" if self.is_row_major else "DN"
        outer = "Z" if self.is_row_major else "N"
        inner = "Z" if self.slayout is SLayout.RowMajor else "N"
        return outer + inner

    @property
    def is_nd(self) -> bool:
        return self.is_row_major and not self.is_boxed

    @property
    def is_dn(self) -> bool:
        return not self.is_row_major and not self.is_boxed

    def describe(self) -> str:
        vr = "?" if self.valid_row is None else self.valid_row
        vc = "?" if self.valid_col is None else self.valid_col
        extra = "" if (vr, vc) == (self.rows, self.cols) else f" valid {vr}x{vc}"
        shape = f"{self.rows}x{self.cols}"
        return f"{self.loc.name} {self.dtype.name} {shape} {self.layout_name}{extra}"

    @functools.cached_property
    def offsets(self) -> np.ndarray:
        """offsets[r, c] = physical element index of logical element (r, c) (read-only)."""
        r = np.arange(self.rows, dtype=np.int64)[:, None]
        c = np.arange(self.cols, dtype=np.int64)[None, :]
        ir, ic = self.inner
        # A tile smaller than one box (a 1xN MX scale tile with 16x2 boxes) holds a partial box:
        # the box is clipped to the tile so every element stays inside its Rows*Cols storage.
        # The CPU simulator's formula puts such elements past the storage (offset 32 of a 4-byte
        # tile); it reads them back with the same formula, so logical contents agree. An Acc
        # tile's boxes are whole (storage_rows): L0C is written in 16-row boxes.
        prows = self.storage_rows
        ir, ic = min(ir, prows), min(ic, self.cols)
        name = self.layout_name
        if name == "ND":
            off = r * self.cols + c
        elif name == "DN":
            off = c * self.rows + r
        else:
            n = ir * ic
            sr, rr, sc, cc = r // ir, r % ir, c // ic, c % ic
            if name == "NZ":
                off = sc * prows * ic + sr * n + rr * ic + cc
            elif name == "ZN":
                off = sr * self.cols * ir + sc * n + cc * ir + rr
            elif name == "ZZ":
                off = sr * self.cols * ir + sc * n + rr * ic + cc
            else:  # NN
                off = sc * self.rows * ic + sr * n + cc * ir + rr
        off = np.ascontiguousarray(np.broadcast_to(off, (self.rows, self.cols)))
        off.setflags(write=False)
        return off


def _inner_box(slayout: SLayout, fractal: int, itemsize: int) -> tuple[int, int]:
    if slayout is SLayout.NoneBox:
        return (1, 1)
    if fractal == FRACTAL_C:
        return (16, 16)
    if fractal == FRACTAL_MX:
        return (16, 2) if slayout is SLayout.RowMajor else (2, 16)
    per32 = max(ALIGN // itemsize, 1)
    return (16, per32) if slayout is SLayout.RowMajor else (per32, 16)


@functools.lru_cache(maxsize=4096)
def _interned(*args: Any) -> TileSpec:
    spec = TileSpec(*args)
    _validate(spec, alignment=False)
    return spec


def tile_spec(
    loc: Any,
    dtype: Any,
    rows: int,
    cols: int,
    blayout: Any = BLayout.RowMajor,
    valid_row: int | None = None,
    valid_col: int | None = None,
    slayout: Any = SLayout.NoneBox,
    fractal: int = FRACTAL_AB,
    pad: Any = PadValue.Null,
    compact: Any = CompactMode.Null,
    *,
    check_alignment: bool = True,
) -> TileSpec:
    """Build (validate, intern) a tile type. ``valid_*=None`` means dynamic.

    ``check_alignment=False`` skips the C++ ``pto::Tile`` 32-byte alignment static_asserts,
    which the PTOAS verifier does not apply to ``.pto`` programs."""
    raw = (loc, dtype, rows, cols, blayout, valid_row, valid_col, slayout, fractal, pad,
           compact, check_alignment)
    try:  # the same arguments (of the same types) give the same spec: eager kernels ask often
        key: Any = (raw, tuple(map(type, raw)))
        hit = _SPEC_MEMO.get(key)
    except TypeError:  # an unhashable argument
        key = hit = None
    if hit is not None:
        return hit
    spec = _interned(
        coerce_enum(TileType, loc, "tile role"),
        dt_mod.dtype(dtype),
        _as_int(rows, "rows"),
        _as_int(cols, "cols"),
        coerce_enum(BLayout, blayout, "blayout"),
        None if valid_row is None else _as_int(valid_row, "valid rows"),
        None if valid_col is None else _as_int(valid_col, "valid cols"),
        coerce_enum(SLayout, slayout, "slayout"),
        _as_int(fractal, "fractal size"),
        pad_value(pad),
        coerce_enum(CompactMode, compact, "compact mode"),
    )
    if check_alignment:
        _check_alignment(spec)
    if key is not None:
        if len(_SPEC_MEMO) > 4096:
            _SPEC_MEMO.clear()
        _SPEC_MEMO[key] = spec
    return spec


_SPEC_MEMO: dict[Any, TileSpec] = {}


def _as_int(x: Any, what: str) -> int:
    if isinstance(x, bool) or not isinstance(x, (int, np.integer)):
        raise PtoError(f"tile {what} must be an integer, got {x!r}")
    return int(x)


def _validate(s: TileSpec, alignment: bool = True) -> None:
    """The static_asserts of pto::Tile (model.md 2.2)."""
    what = f"Tile<{s.loc.name}, {s.dtype.name}, {s.rows}, {s.cols}>"
    if s.rows <= 0 or s.cols <= 0:
        raise PtoError(f"{what}: Rows and Cols must be positive")
    # (past the shape: PTOAS's words, tilebuf_invalid_valid_exceeds_shape.pto and
    # tilebuf_invalid_fractal_size.pto)
    for v, cap, n in ((s.valid_row, s.rows, "row"), (s.valid_col, s.cols, "col")):
        if v is not None and v > cap:
            raise PtoError(f"{what}: tile_buf valid_{n} ({v}) exceeds {n} ({cap})")
        if v is not None and v < 0:
            raise PtoError(f"{what}: valid {n}s {v} outside [0, {cap}]")
    if s.fractal not in (FRACTAL_AB, FRACTAL_C, FRACTAL_MX):
        raise PtoError(f"{what}: unsupported s_fractal_size: {s.fractal}, must be one of "
                       "{32, 512, 1024}")
    if alignment:
        _check_alignment(s)


def _check_alignment(s: TileSpec) -> None:
    """32-byte row/column alignment and box divisibility (pto::Tile static_asserts)."""
    what = f"Tile<{s.loc.name}, {s.dtype.name}, {s.rows}, {s.cols}>"
    ir, ic = s.inner
    esz = s.dtype.itemsize
    if not s.is_boxed:
        if s.is_row_major and (s.cols * esz) % ALIGN:
            raise PtoError(
                f"{what}: a row-major tile row must be a multiple of 32 bytes "
                f"(Cols*sizeof(T) = {s.cols * esz})"
            )
        if not s.is_row_major and (s.rows * esz) % ALIGN:
            raise PtoError(
                f"{what}: a col-major tile column must be a multiple of 32 bytes "
                f"(Rows*sizeof(T) = {s.rows * esz})"
            )
        return
    row_exempt = s.loc is TileType.Vec or s.fractal == FRACTAL_MX or s.rows == 1
    if s.rows % ir and not row_exempt:
        raise PtoError(f"{what}: Rows must be a multiple of the box height {ir} ({s.layout_name})")
    if s.cols % ic:
        raise PtoError(f"{what}: Cols must be a multiple of the box width {ic} ({s.layout_name})")


def _split_valid(valid: Any, rows: int, cols: int) -> tuple[int | None, int | None, int, int]:
    """-> (static vr or None, static vc or None, initial vr, initial vc)."""
    if valid is None:
        return rows, cols, rows, cols
    if not isinstance(valid, (tuple, list)) or len(valid) != 2:
        raise PtoError(f"valid must be a (rows, cols) pair, got {valid!r}")
    out: list[Any] = []
    for v, full in zip(valid, (rows, cols), strict=True):
        if isinstance(v, Dyn):
            out.append((None, v.value))
        elif v is None or (isinstance(v, (int, np.integer)) and int(v) == DYNAMIC):
            out.append((None, full))
        else:
            out.append((v, v))
    (svr, ivr), (svc, ivc) = out
    return svr, svc, ivr, ivc


class LaneBlocks:
    """The (lanes, rows, cols) contents of a lockstep tile loaded from blocks at uneven GM
    offsets, kept without a copy: lane ``l`` holds ``base[idx[l]]``, ``base`` being a strided
    view of GM. Lanes that load the same block (the A panel shared by a row of GEMM blocks)
    share one entry, so consumers such as TMATMUL convert each distinct block once."""

    __slots__ = ("base", "idx", "_dense", "_unique")

    def __init__(self, base: np.ndarray, idx: np.ndarray,
                 unique: tuple[np.ndarray, np.ndarray] | None = None) -> None:
        self.base = base
        self.idx = idx
        self._dense: np.ndarray | None = None
        #: (``unique``: what :meth:`unique` returns, from :meth:`unique_view` of blocks on the
        #: same base and idx)
        self._unique: tuple[np.ndarray, np.ndarray] | None = unique

    @property
    def shape(self) -> tuple[int, ...]:
        return (len(self.idx), *self.base.shape[1:])

    def dense(self) -> np.ndarray:
        """The lanes' contents as one (lanes, rows, cols) array (one strided gather, cached)."""
        d = self._dense
        if d is None:
            d = self._dense = self.base[self.idx]
        return d

    def unique(self) -> tuple[np.ndarray, np.ndarray]:
        """``(blocks, inv)``: the distinct blocks (n, rows, cols), a view of GM where they are
        evenly spaced, and each lane's index into them."""
        u = self._unique
        if u is None:
            uniq, step, inv = _distinct(self.idx)
            if step is not None:
                blocks = self.base[int(uniq[0])::step][:len(uniq)]
            else:
                blocks = self.base[uniq]
            u = self._unique = (blocks, inv)
        return u

    def unique_view(self) -> tuple[np.ndarray, np.ndarray] | None:
        """:meth:`unique` where its blocks are a view of ``base`` (evenly spaced), which
        another LaneBlocks of the same base and idx may take as its own (they read what
        ``base`` holds when they are read); None where they are a copy."""
        u = self.unique()
        return u if _distinct(self.idx)[1] is not None else None


@functools.lru_cache(maxsize=256)
def _distinct_cached(key: bytes) -> tuple[np.ndarray, int | None, np.ndarray]:
    idx = np.frombuffer(key, np.int64)
    uniq, inv = np.unique(idx, return_inverse=True)
    inv = inv.reshape(-1)
    inv.flags.writeable = False
    d = int(uniq[1] - uniq[0]) if len(uniq) > 1 else 1
    even = len(uniq) < 3 or bool((uniq[1:] - uniq[:-1] == d).all())
    return uniq, (d if even else None), inv


def _distinct(idx: np.ndarray) -> tuple[np.ndarray, int | None, np.ndarray]:
    """(distinct values, their even step or None, inverse) of ``idx``; a kernel
    loop loads with the same lane pattern every step, so the answer is cached by value."""
    return _distinct_cached(np.ascontiguousarray(idx, np.int64).tobytes())


class Tile:
    """A tile: ``Tile(TileType.Vec, np.float32, 16, 16, valid=(16, 10))``.

    Arguments mirror ``pto::Tile<Loc, T, Rows, Cols, BLayout, RowValid, ColValid, SLayout,
    SFractalSize, PadVal, Compact>``. ``valid`` entries are ints (static), ``DYNAMIC``
    (dynamic, initially full) or ``Dyn(n)`` (dynamic, initially n).
    """

    __slots__ = ("spec", "_vr", "_vc", "_whole", "_buf", "_machine", "addr", "name", "_lazy",
                 "_off_chip", "_pending", "_v2d", "_settled", "_placed", "__weakref__")

    def __init__(
        self,
        loc: Any,
        dtype: Any,
        rows: int,
        cols: int,
        blayout: Any = BLayout.RowMajor,
        valid: Any = None,
        slayout: Any = SLayout.NoneBox,
        fractal: int = FRACTAL_AB,
        pad: Any = PadValue.Null,
        compact: Any = CompactMode.Null,
        *,
        name: str | None = None,
    ) -> None:
        if _sym.TRACER is not None:  # pto.export: symbolic valid extents
            valid = _sym.TRACER.note_tile(self, valid)
        svr, svc, ivr, ivc = _split_valid(valid, rows, cols)
        spec = tile_spec(loc, dtype, rows, cols, blayout, svr, svc, slayout, fractal, pad, compact)
        self._init(spec, ivr, ivc, name)

    def _init(self, spec: TileSpec, vr: int, vc: int, name: str | None) -> None:
        self.spec = spec
        self._vr = 0
        self._vc = 0
        #: the valid region is the whole tile (kept with _vr/_vc: Instr.try_plain reads it)
        self._whole = False
        self._buf: np.ndarray | None = None
        #: (storage, its 2-D view or None when boxed, the whole box view or None): see
        #: view2d and _box_block; re-derived when the storage changes (TASSIGN)
        self._v2d: tuple[np.ndarray, np.ndarray | None, np.ndarray | None] | None = None
        #: GM window this tile reads in place (see TLOAD); LaneBlocks for uneven lane offsets
        self._lazy: np.ndarray | LaneBlocks | None = None
        #: what _lazy holds is not on-chip storage (a GM window, a result or copy of its
        #: own): no tile's storage barrier needs to look at it (see Machine.storage_barrier)
        self._off_chip = False
        #: a deferred elementwise result (ufunc, inputs): computed into storage when needed,
        #: or by TSTORE straight into GM (load -> compute -> store without the extra copy)
        self._pending: tuple[Any, tuple[np.ndarray, ...]] | None = None
        self._machine: Machine | None = None
        self.addr: int | None = None
        #: the launch of its machine in which TASSIGN placed it (Machine._launch), or None
        self._placed: object | None = None
        self.name = name
        #: (machine, its lazy generation, storage) when no lazy tile of that machine read
        #: this storage: see Machine.storage_barrier
        self._settled: tuple[Machine, int, np.ndarray] | None = None
        self._set_valid(vr, vc)

    @classmethod
    def of(cls, spec: TileSpec, valid: tuple[int, int] | None = None, name: str | None = None
           ) -> Tile:
        """A tile of an existing spec (used by the interpreter and the conformance runner)."""
        t = cls.__new__(cls)
        vr = spec.valid_row if spec.valid_row is not None else spec.rows
        vc = spec.valid_col if spec.valid_col is not None else spec.cols
        if valid is not None:
            vr, vc = valid
        t._init(spec, vr, vc, name)
        return t

    # ---- static info -----------------------------------------------------------------------
    @property
    def loc(self) -> TileType:
        return self.spec.loc

    @property
    def dtype(self) -> DType:
        return self.spec.dtype

    @property
    def rows(self) -> int:
        return self.spec.rows

    @property
    def cols(self) -> int:
        return self.spec.cols

    @property
    def shape(self) -> tuple[int, int]:
        return (self.spec.rows, self.spec.cols)

    # ---- valid region ----------------------------------------------------------------------
    @property
    def valid_row(self) -> int:
        return self._vr

    @property
    def valid_col(self) -> int:
        return self._vc

    @property
    def valid_shape(self) -> tuple[int, int]:
        return (self._vr, self._vc)

    def GetValidRow(self) -> int:  # noqa: N802 - C++ name
        return self._vr

    def GetValidCol(self) -> int:  # noqa: N802
        return self._vc

    def _set_valid(self, vr: int, vc: int) -> None:
        s = self.spec
        if type(vr) is int and type(vc) is int and 0 <= vr <= s.rows and 0 <= vc <= s.cols:
            self._vr, self._vc = vr, vc  # (the common case: the checks below pass)
            self._whole = vr == s.rows and vc == s.cols
            return
        if isinstance(vr, np.ndarray) or isinstance(vc, np.ndarray):
            self._set_valid_lanes(vr, vc)
            return
        for v, cap, n in ((vr, self.spec.rows, "rows"), (vc, self.spec.cols, "cols")):
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
                raise RuntimeCheckError(f"{self._label()}: valid {n} must be an integer, got {v!r}")
            if not 0 <= int(v) <= cap:
                raise RuntimeCheckError(f"{self._label()}: valid {n} {v} outside [0, {cap}]")
        self._vr, self._vc = int(vr), int(vc)
        self._whole = self._vr == self.spec.rows and self._vc == self.spec.cols

    def _set_valid_lanes(self, vr: Any, vc: Any) -> None:
        """Per-block valid extents of a lockstep launch (kept as ints when all agree)."""
        out = []
        for v, cap, n in ((vr, self.spec.rows, "rows"), (vc, self.spec.cols, "cols")):
            a = np.asarray(v)
            if a.dtype.kind not in "iu" or (a < 0).any() or (a > cap).any():
                raise RuntimeCheckError(
                    f"{self._label()}: valid {n} {a.tolist()} outside [0, {cap}]")
            flat = a.reshape(-1)
            out.append(int(flat[0]) if a.ndim == 0 or (flat == flat[0]).all()
                       else np.asarray(a, np.int64))
        self._vr, self._vc = out
        self._whole = isinstance(out[0], int) and isinstance(out[1], int) \
            and out[0] == self.spec.rows and out[1] == self.spec.cols

    def set_valid(self, rows: int | None = None, cols: int | None = None) -> None:
        """Change the dynamic valid extents (SetValidRow/SetValidCol/SetValidShape)."""
        if _sym.TRACER is not None:  # pto.export: becomes pto.set_validshape
            rows, cols = _sym.TRACER.note_set_valid(self, rows, cols)
        if rows is not None and self.spec.valid_row is not None and \
                np.any(np.asarray(rows) != self.spec.valid_row):
            raise RuntimeCheckError(
                f"{self._label()}: valid rows are static ({self.spec.valid_row})")
        if cols is not None and self.spec.valid_col is not None and \
                np.any(np.asarray(cols) != self.spec.valid_col):
            raise RuntimeCheckError(
                f"{self._label()}: valid cols are static ({self.spec.valid_col})")
        self._set_valid(self._vr if rows is None else rows, self._vc if cols is None else cols)

    def SetValidRow(self, rows: int) -> None:  # noqa: N802
        self.set_valid(rows=rows)

    def SetValidCol(self, cols: int) -> None:  # noqa: N802
        self.set_valid(cols=cols)

    def SetValidShape(self, rows: int, cols: int) -> None:  # noqa: N802
        self.set_valid(rows, cols)

    def block(self, b: int) -> Tile:
        """Block ``b``'s part of a tile of a lockstep launch (a view sharing its storage)."""
        buf = self.storage
        if buf.ndim == 1:
            return self
        t = Tile.__new__(Tile)
        t._lazy = None
        t._off_chip = False
        t._pending = None
        t._placed = None
        t._v2d = None
        t._settled = None
        t.spec, t.name, t.addr, t._machine = self.spec, self.name, self.addr, self._machine
        t._buf = buf[b]
        vr, vc = self._vr, self._vc
        t._vr = int(vr[b]) if isinstance(vr, np.ndarray) else vr
        t._vc = int(vc[b]) if isinstance(vc, np.ndarray) else vc
        t._whole = t._vr == t.spec.rows and t._vc == t.spec.cols
        return t

    # ---- storage ---------------------------------------------------------------------------
    def unbind(self) -> None:
        """Forget this tile's storage and placement: a new run (maybe on another machine, or
        with another number of lockstep blocks) places it afresh (the interpreter reuses the
        tiles of a compiled function across runs)."""
        self._buf = None
        self._machine = None
        self.addr = None
        self._placed = None
        self._lazy = None
        self._pending = None
        self._v2d = None

    @property
    def assigned(self) -> bool:
        return self._buf is not None

    @property
    def storage(self) -> np.ndarray:
        """Elements in physical order (1-D view of the bytes the tile occupies)."""
        buf = self._buf
        if buf is None:
            # a lazily loaded or deferred tile is written in full just below: no poison
            buf = current().auto_storage(self, self._lazy is None and self._pending is None)
        m = self._machine
        if m is not None and m._lazy:
            # tiles that read these bytes lazily, or alias them, settle first; then this one
            lazy.storage_barrier(m, self)
            if self._lazy is not None or self._pending is not None:
                lazy.materialize(self, m)
        return buf

    # ---- copy-on-write and deferred values (ptoisa.lazy) -----------------------------------
    def _materialize(self) -> None:
        """Give a lazily loaded or deferred tile its contents in its own storage."""
        lazy.materialize(self, self._machine or current())

    def detach(self) -> None:
        """What this lazily loaded or deferred tile reads is about to be overwritten: take
        the values now (see :func:`ptoisa.lazy.detach`)."""
        lazy.detach(self, self._machine or current())

    def _leave_bytes(self) -> None:
        """About to view other bytes: what the tile owes its storage is written there first."""
        lazy.leave_bytes(self, self._machine or current())

    def _overwrite(self) -> None:
        """Every element is written next (from values the caller already holds): what the
        tile held lazily or deferred is dropped instead of computed."""
        if self._lazy is not None or self._pending is not None:
            lazy.overwrite(self, current())

    def set_pending(self, fn: Any, args: tuple[np.ndarray, ...], machine: Machine) -> None:
        """Defer ``fn(*args, out=<whole tile>)`` (see :func:`ptoisa.lazy.set_pending`)."""
        lazy.set_pending(self, fn, args, machine)

    def take_pending(self) -> tuple[Any, tuple[np.ndarray, ...]] | None:
        return lazy.take_pending(self)

    def set_lazy(self, window: np.ndarray | LaneBlocks, machine: Machine,
                 off_chip: bool = False) -> None:
        """TLOAD without a copy: until this tile or that GM is written, reads see ``window``
        (see :func:`ptoisa.lazy.set_lazy`)."""
        lazy.set_lazy(self, window, machine, off_chip)

    def shared_lanes(self) -> LaneBlocks | None:
        """The tile's contents as :class:`LaneBlocks` while it still reads GM that way."""
        lz = self._lazy
        return lz if isinstance(lz, LaneBlocks) else None

    def _label(self) -> str:
        n = f"'{self.name}' " if self.name else ""
        return f"tile {n}({self.spec.describe()})"

    def view2d(self) -> np.ndarray | None:
        """Writable logical (rows, cols) view of storage for ND/DN tiles; None if boxed.

        In a lockstep launch (see :mod:`ptoisa.grid`) storage has a leading block dimension
        and the view is (blocks, rows, cols); every accessor below indexes the trailing two
        dimensions, so instruction semantics written with ``[..., r, c]`` serve both."""
        c = self._v2d
        buf = self._buf
        if c is not None and c[0] is buf:  # cached for this storage (re-derived on TASSIGN)
            m = self._machine
            if m is None or not m._lazy:  # nothing to settle first (see storage)
                return c[1]
        buf = self.storage
        if c is not None and c[0] is buf:
            return c[1]
        s = self.spec
        v: np.ndarray | None
        if s.is_boxed or s.dtype.packed:
            v = None
        elif buf.ndim == 1:
            v = buf.reshape(s.rows, s.cols) if s.is_row_major else buf.reshape(s.cols, s.rows).T
        elif s.is_row_major:
            v = buf.reshape(buf.shape[0], s.rows, s.cols)
        else:
            v = buf.reshape(buf.shape[0], s.cols, s.rows).transpose(0, 2, 1)
        self._v2d = (buf, v, None)
        return v

    def read(self, rows: int | None = None, cols: int | None = None, r0: int = 0, c0: int = 0
             ) -> np.ndarray:
        """Logical block [r0:r0+rows, c0:c0+cols] (default: the valid region). May be a view."""
        if _sym.WATCH is not None:  # an eager plan records: data into the kernel's Python?
            _sym.WATCH("tile.read()")
        rows = self._vr if rows is None else rows
        cols = self._vc if cols is None else cols
        c = self._v2d
        if c is not None and c[0] is self._buf and r0 == 0 and c0 == 0 and self._lazy is None \
                and self._pending is None:  # the common case, as below without the detours
            m = self._machine
            v = c[1]
            if v is not None and (m is None or not m._lazy):
                s = self.spec
                return v if rows == s.rows and cols == s.cols else v[..., :rows, :cols]
        lz = self._lazy
        if lz is not None:
            if isinstance(lz, LaneBlocks):
                lz = lz.dense()
            elif r0 == 0 and c0 == 0 and lz.shape[-2:] == (rows, cols):
                return lz
            return lz[..., r0:r0 + rows, c0:c0 + cols]
        if self._pending is not None:
            self._materialize()
        v = self.view2d()
        if v is not None:
            if r0 == 0 and c0 == 0 and rows == self.spec.rows and cols == self.spec.cols:
                return v
            return v[..., r0:r0 + rows, c0:c0 + cols]
        b = self._box_block(rows, cols, r0, c0)
        if b is not None:
            return b.reshape(*b.shape[:-4], rows, cols)
        offs = self.spec.offsets[r0:r0 + rows, c0:c0 + cols]
        if self.spec.dtype.packed:
            return _unpack4(self.storage, offs)
        return self.storage[..., offs]

    def write(self, values: Any, r0: int = 0, c0: int = 0) -> None:
        """Write a logical block at (r0, c0); ``values`` is broadcast to its 2-D shape."""
        if _sym.WATCH is not None:  # an eager plan records: Python values into a tile?
            _sym.WATCH("tile.write()")
        values = np.asarray(values)
        if values.ndim < 2:
            values = np.broadcast_to(values, (1, 1) if values.ndim == 0 else (1, values.size))
        h, w = values.shape[-2:]
        whole = r0 == 0 and c0 == 0 and h == self.spec.rows and w == self.spec.cols
        if (self._lazy is not None or self._pending is not None) and whole:
            self._overwrite()
        if self._buf is None and whole and not self.spec.is_boxed and not self.spec.dtype.packed:
            # storage for a tile written in full below (a TLOAD, say): no poison to fill first
            current().auto_storage(self, False)
        v = self.view2d()
        if v is not None:
            v[..., r0:r0 + h, c0:c0 + w] = values
            return
        b = self._box_block(h, w, r0, c0)
        if b is not None:
            ir, ic = self.spec.inner
            b[...] = values.reshape(*values.shape[:-2], h // ir, ir, w // ic, ic)
        elif self.spec.dtype.packed:
            _pack4(self.storage, self.spec.offsets[r0:r0 + h, c0:c0 + w], values)
        else:
            self.storage[..., self.spec.offsets[r0:r0 + h, c0:c0 + w]] = values

    def fill(self, value: Any, rows: int, cols: int, r0: int = 0, c0: int = 0) -> None:
        if _sym.WATCH is not None:  # an eager plan records: Python values into a tile?
            _sym.WATCH("tile.fill()")
        v = self.view2d()
        if v is not None:
            v[..., r0:r0 + rows, c0:c0 + cols] = value
            return
        b = self._box_block(rows, cols, r0, c0)
        if b is not None:
            b[...] = value
        elif self.spec.dtype.packed:
            offs = self.spec.offsets[r0:r0 + rows, c0:c0 + cols]
            _pack4(self.storage, offs, np.broadcast_to(np.asarray(value), offs.shape))
        else:
            self.storage[..., self.spec.offsets[r0:r0 + rows, c0:c0 + cols]] = value

    _BOX_PERM = {"NZ": (1, 2, 0, 3), "ZN": (0, 3, 1, 2), "ZZ": (0, 2, 1, 3), "NN": (1, 3, 0, 2)}

    def _box_block(self, rows: int, cols: int, r0: int, c0: int) -> np.ndarray | None:
        """A writable view (..., rows/IR, IR, cols/IC, IC) of a box-aligned block of a boxed
        tile, or None (unaligned block, partial boxes, packed types: use index arrays).

        Every boxed layout is a permutation of (box row, row in box, box col, col in box):
        NZ stores [box col][box row][row][col], ZN [box row][box col][col][row], and so on."""
        s = self.spec
        if not s.is_boxed or s.dtype.packed or rows <= 0 or cols <= 0:
            return None
        ir, ic = s.inner
        if s.rows % ir or s.cols % ic or r0 % ir or c0 % ic or rows % ir or cols % ic:
            return None
        buf = self.storage
        c = self._v2d
        if c is not None and c[0] is buf and c[2] is not None:
            v = c[2]
        else:
            nr, nc = s.rows // ir, s.cols // ic
            name = s.layout_name
            dims = {"NZ": (nc, nr, ir, ic), "ZN": (nr, nc, ic, ir), "ZZ": (nr, nc, ir, ic),
                    "NN": (nc, nr, ic, ir)}[name]
            lead = buf.shape[:-1]
            k = len(lead)
            v = buf.reshape(*lead, *dims).transpose(*range(k),
                                                     *(k + p for p in self._BOX_PERM[name]))
            self._v2d = (buf, None, v)  # a boxed tile has no 2-D view
        if r0 == 0 and c0 == 0 and rows == s.rows and cols == s.cols:
            return v
        return v[..., r0 // ir:(r0 + rows) // ir, :, c0 // ic:(c0 + cols) // ic, :]

    # ---- numpy interop (testing / debugging) -----------------------------------------------
    def numpy(self, valid_only: bool = False) -> np.ndarray:
        """A copy of the logical contents: the whole ``rows x cols`` tile, or its valid region."""
        if _sym.WATCH is not None:  # an eager plan records: data into the kernel's Python
            _sym.WATCH("tile.numpy()")
        if _sym.TRACER is not None:  # pto.export: tile data cannot flow into Python
            _sym.TRACER.note_tile_access(self, "reads tile values into Python (tile.numpy())")
        if not (self._machine or current()).values:  # a timing-only run computed none
            raise needs_values("tile.numpy()")
        if valid_only:
            return np.array(self.read(), copy=True)
        return np.array(self.read(self.rows, self.cols), copy=True)

    def load_numpy(self, array: Any) -> Tile:
        """Fill the tile from a logical array of shape ``rows x cols`` or the valid shape."""
        if _sym.WATCH is not None:  # an eager plan records: Python values into a tile
            _sym.WATCH("tile.load_numpy()")
        if _sym.TRACER is not None:  # pto.export: Python data into a tile
            _sym.TRACER.note_tile_access(self, "writes Python values into a tile "
                                               "(tile.load_numpy())")
        a = np.asarray(array)
        if a.shape not in (self.shape, self.valid_shape):
            raise PtoError(
                f"{self._label()}: array of shape {a.shape} fits neither the tile "
                f"{self.shape} nor its valid region {self.valid_shape}"
            )
        # strings, complex, dates, records are not tile data (ml_dtypes' floats are kind V too)
        if a.dtype.kind in "USMmc" or a.dtype.type is np.void:
            what = {"U": "strings", "S": "bytes", "c": "complex numbers (the imaginary part "
                    "would be dropped)", "M": "dates", "m": "time deltas"}.get(
                        a.dtype.kind, "records")
            raise PtoError(f"{self._label()}: cannot load an array of {what} ({a.dtype}): give "
                           "numbers (bool, integer or float)")
        try:
            conv = a.astype(self.dtype.np, casting="same_kind" if a.dtype.kind == "f"
                            and self.dtype.is_float else "unsafe")
        except (TypeError, ValueError, OverflowError) as e:
            raise PtoError(f"{self._label()}: cannot convert {a.dtype} data: {e}") from None
        self.write(conv)
        return self

    def __repr__(self) -> str:
        where = f" @{self.addr:#x}" if self.addr is not None else ""
        vr, vc = self.valid_shape
        return f"<Tile {self.name or ''}{' ' if self.name else ''}{self.spec.describe()}" \
               f" valid={vr}x{vc}{where}>"

    def _repr_html_(self) -> str:
        """Jupyter: the values as a table, valid region outlined, pads greyed
        (ptoisa.display, which imports this module, so the import is made here)."""
        from .tables import tile_html

        return tile_html(self)


def _unpack4(storage: np.ndarray, offs: np.ndarray) -> np.ndarray:
    """4-bit codes at element offsets ``offs`` of packed storage (even element = low nibble)."""
    b = storage.view(np.uint8)[offs >> 1]
    return np.where(offs & 1, b >> 4, b & 0xF).astype(np.uint8)


def _pack4(storage: np.ndarray, offs: np.ndarray, codes: Any) -> None:
    """Write 4-bit codes into packed storage at element offsets ``offs`` (other nibbles kept)."""
    raw = storage.view(np.uint8)
    o = offs.reshape(-1)
    c = np.broadcast_to(np.asarray(codes), offs.shape).reshape(-1).astype(np.uint8) & 0xF
    lo, hi = (o & 1) == 0, (o & 1) == 1
    raw[o[lo] >> 1] = (raw[o[lo] >> 1] & 0xF0) | c[lo]
    raw[o[hi] >> 1] = (raw[o[hi] >> 1] & 0x0F) | (c[hi] << 4)


def TileAcc(dtype: Any, rows: int, cols: int, valid: Any = None, **kw: Any) -> Tile:  # noqa: N802
    """``pto::TileAcc``: an Acc tile in NZ layout with 16x16 boxes (fractal 1024)."""
    return Tile(TileType.Acc, dtype, rows, cols, BLayout.ColMajor, valid, SLayout.RowMajor,
                FRACTAL_C, **kw)


def TileRight(dtype: Any, rows: int, cols: int, valid: Any = None, **kw: Any) -> Tile:  # noqa: N802
    """``pto::TileRight``: a Right (L0B) tile in ZN layout."""
    return Tile(TileType.Right, dtype, rows, cols, BLayout.RowMajor, valid, SLayout.ColMajor,
                FRACTAL_AB, **kw)


def TileLeft(dtype: Any, rows: int, cols: int, valid: Any = None, **kw: Any) -> Tile:  # noqa: N802
    """``pto::TileLeft``: ZZ on a2a3, NZ on a5 and cpu (the C++ alias differs per target: the
    target's ``left_blayout`` trait)."""
    bl = BLayout(current().target.traits.left_blayout)
    return Tile(TileType.Left, dtype, rows, cols, bl, valid, SLayout.RowMajor, FRACTAL_AB, **kw)

"""Reductions (row/column, value and arg), broadcasts (row/column expand and the fused
expand-and-operate instructions), pair reduction, interleave/deinterleave and the partial
arg-reductions.

TROWSUM and the shared row-reduction rules live in :mod:`ptoisa.isa.reduce.rowsum`. Every
semantics function here is one vectorised numpy expression over the iteration domain (no
Python loop over rows or columns): row softmax (TROWMAX, TROWEXPANDSUB, TEXP, TROWSUM,
TROWEXPANDDIV) runs on these.

Iteration domains: row/column reductions iterate over *src*'s valid region; expand and
expand-op instructions over *dst*'s. Run-time checks a page lists among its general
constraints hold on every target (``sim_unchecked``: a permissive machine skips them, as the
upstream CPU simulator does); checks listed for one NPU only are made on that target.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from ... import lazy, rowfuse
from ...dtypes import dtype as to_dtype
from ...enums import Pipe, TileType
from ...errors import PtoError, RuntimeCheckError
from ...memory import Machine
from ...tile import Tile, TileSpec
from .. import planned
from ..elementwise.common import idiv
from ..irregular.partial import check_partial_pattern
from ..registry import (
    Event,
    Instr,
    Opnd,
    Param,
    Sig,
    StaticRule,
    elem_type,
    instr,
    locs,
    nd,
    same_dtype,
    sim_unchecked,
)
from ..rules import npu_max, npu_min, reduction_valid, row_major, same_static_rows, tree_reduce
from ..spelling import Attr, Ptoas
from .rowsum import defer_row_reduce, row_reduce_dst, row_reduce_plan, row_reduce_runtime

Ufunc = Callable[[np.ndarray, np.ndarray], np.ndarray]


# ---- shared helpers ----------------------------------------------------------------------------

def _fit(t: Tile, rows: int, cols: int, what: str) -> None:
    """The result block rows x cols must fit in tile ``t`` (its static capacity)."""
    if rows > t.rows or cols > t.cols:
        raise RuntimeCheckError(f"{what} needs {rows}x{cols} elements but the tile holds "
                                f"{t.rows}x{t.cols}")


def _need(t: Tile, rows: int, cols: int, what: str, purpose: str) -> None:
    """Tile ``t``'s valid region must cover rows x cols."""
    if t.valid_row < rows or t.valid_col < cols:
        raise RuntimeCheckError(f"{what} valid region {t.valid_row}x{t.valid_col} does not "
                                f"cover {rows}x{cols} ({purpose})")


def _cmp_view(x: np.ndarray) -> np.ndarray:
    """Values for comparisons: f16/bf16 widened to f32 (exact), everything else as is."""
    return x.astype(np.float32) if x.dtype.kind == "V" or x.dtype == np.float16 else x




def _seq_fold(fn: Any, x: np.ndarray, axis: int, acc: Any) -> np.ndarray:
    """The CPU simulator's sequential fold (``acc = acc op x``) along ``axis``, every partial
    result rounded to ``acc``: TCOLSUM/TCOLPROD/TROWPROD declare their accumulator as
    ``TileDst::DType``, so an f16 destination accumulates in f16 (unlike TROWSUM, whose
    ``TypeSum`` widens f16/bf16 to f32)."""
    return fn.accumulate(x.astype(acc), axis=axis, dtype=acc).take(-1, axis=axis)


def _first_extreme(x: np.ndarray, axis: int, is_max: bool) -> np.ndarray:
    """Index along ``axis`` chosen by the CPU simulator's max/min folds: the accumulator
    starts at the first element and is replaced only by a strictly greater (smaller) later
    element (``std::max(acc, x)``, ``if (x > acc)``). So equal values keep the earliest, and a
    NaN wins only as the first element (a later NaN never compares greater)."""
    c = _cmp_view(x)
    if c.dtype.kind != "f":
        return np.argmax(c, axis=axis) if is_max else np.argmin(c, axis=axis)
    nan = np.isnan(c)
    c = np.where(nan, -np.inf if is_max else np.inf, c)
    idx = np.argmax(c, axis=axis) if is_max else np.argmin(c, axis=axis)
    return np.where(nan.take(0, axis=axis), 0, idx)


def _extreme(m: Machine, x: np.ndarray, axis: int, is_max: bool) -> np.ndarray:
    """max/min along ``axis``. cpu: the simulator's fold (:func:`_first_extreme`); a2a3/a5:
    NaN anywhere gives NaN (the vector max/min of the ISA, vmax/vmin, propagate NaN; the
    TROW*/TCOL* pages leave NaN open). The target's ``reduce_nan`` trait chooses."""
    uf = np.maximum if is_max else np.minimum
    if m.target.traits.reduce_nan == "fold":
        if x.dtype.kind == "f" and x.size:
            # the fold's value is numpy's max/min wherever the two cannot differ: no NaN (the
            # fold keeps a NaN only as the first element, numpy spreads any) and no zero (the
            # fold keeps the first of -0.0 / +0.0); else the fold below
            r = _by_rows(uf, x, axis)
            if r is None:
                r = uf.reduce(x, axis=axis)
            if _neither_nan_nor_zero(r):
                return r
        idx = _first_extreme(x, axis, is_max)
        return np.take_along_axis(x, np.expand_dims(idx, axis), axis=axis).squeeze(axis)
    r = _by_rows(uf, x, axis)
    # (by rows: the same values where no row's is a NaN or a zero, whose bits, which NaN or
    # which zero, may depend on the order numpy's loop meets the elements in: those as
    # numpy's reduction gives them)
    if r is not None and _neither_nan_nor_zero(r):
        return r
    # (np.max / np.min are these reductions, behind a Python wrapper)
    return uf.reduce(x, axis=axis)


def _neither_nan_nor_zero(r: np.ndarray) -> bool:
    """Is no element of float array ``r`` a NaN or a zero? (All of one sign, the common
    case, is an argmin or argmax and one element: they give a NaN's index where there is
    one (numpy's argmin / argmax spread NaN, as its min / max), which fails the comparison;
    ~0.3 us for 128 elements against ~1 us for a ufunc reduction.)"""
    f = r if r.ndim == 1 else r.reshape(-1)
    if not f.size:
        return True
    if f[f.argmin()] > 0 or f[f.argmax()] < 0:
        return True
    return bool(np.minimum.reduce(np.abs(f)) > 0)


#: (rows, cols) -> the start of each row of a flat array (see _by_rows)
_ROW_STARTS: dict[tuple[int, int], np.ndarray] = {}


def _by_rows(uf: np.ufunc, x: np.ndarray, axis: int) -> np.ndarray | None:
    """max / min along the last axis of a C-contiguous f32 / f64 array, row by row over the
    flat array (``reduceat``: each row one contiguous reduction; numpy's reduction along the
    last axis of a 2-D array runs ~2x slower, 1024 rows of 16 ~2.2x): the maximum (minimum)
    of each row, its bits those of numpy's reduction where it is neither a NaN nor a zero
    (the caller checks). None: not such an array."""
    if axis not in (-1, x.ndim - 1) or x.ndim < 2 or x.dtype.type not in (np.float32,
                                                                         np.float64) \
            or not x.flags.c_contiguous or x.shape[-1] < 2:
        return None
    cols = x.shape[-1]
    rows = x.size // cols
    if rows == 0:
        return None
    return uf.reduceat(x.reshape(-1), _row_starts(rows, cols)).reshape(x.shape[:-1])


def _row_starts(rows: int, cols: int) -> np.ndarray:
    """The start of each row of a flat array of ``rows`` rows of ``cols`` (kept)."""
    starts = _ROW_STARTS.get((rows, cols))
    if starts is None:
        if len(_ROW_STARTS) >= 256:
            _ROW_STARTS.clear()
        starts = _ROW_STARTS[(rows, cols)] = np.arange(0, rows * cols, cols)
    return starts


def rows_extreme_into(m: Machine, is_max: bool, dt: np.dtype, cols: int
                      ) -> Callable[[np.ndarray, np.ndarray], bool] | None:
    """(A planned TROWMAX / TROWMIN) :func:`_extreme` along the last axis of arrays of ``dt``
    with ``cols`` columns, written into ``out`` (their ``(..., rows, 1)`` view) where it is
    :func:`_by_rows`'s value on either target (no row's a NaN or a zero: then the fold's and
    numpy's reductions give it too); False where it is not (not C-contiguous, a NaN or a
    zero: the entry's general form), having written nothing but, where ``out`` is one
    contiguous run of the rows' results, ``out`` (reduced there: the caller, whose ``x``
    shares no bytes with it, writes it again). None: not f32 / f64 rows of at least 2
    columns (the by-rows path never taken)."""
    if dt.type not in (np.float32, np.float64) or cols < 2:
        return None
    uf = np.maximum if is_max else np.minimum
    # (the last x and out, x's flat view (None: not one this takes), its rows' starts and
    # out's flat view (None: not one run): views the tiles keep while their storage stands,
    # so each replay finds them again, checked once)
    prep: list[Any] = [None, None, None, None, None]

    def into(x: np.ndarray, out: np.ndarray) -> bool:
        if prep[0] is not x or prep[1] is not out:
            n = x.size
            ok = x.flags.c_contiguous and x.dtype == dt and x.shape[-1] == cols and n > 0
            prep[:] = (x, out, x.reshape(-1) if ok else None,
                       _row_starts(n // cols, cols) if ok else None,
                       out.reshape(-1) if ok and out.flags.c_contiguous and out.dtype == dt
                       and out.size == n // cols else None)
        xf, o = prep[2], prep[4]
        if xf is None:
            return False
        if m.quiet:  # (a launch's machine: numpy's warnings are off)
            r = uf.reduceat(xf, prep[3], out=o)
        else:
            with np.errstate(all="ignore"):
                r = uf.reduceat(xf, prep[3], out=o)
        if not _neither_nan_nor_zero(r):
            return False
        if o is None:
            out[...] = r.reshape(out.shape)
        return True
    return into


def _div(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if a.dtype.kind in "iu":  # C division toward zero, x / 0 gives 0 (as the TDIV family)
        return idiv(a, b, to_dtype(a.dtype))
    return np.divide(a, b)


def _expdif(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """exp(a - b): the subtraction rounded to the element type (the NPU runs T*EXPANDSUB
    followed by TEXP), then exp correctly rounded from f64 (numpy's own f32 exp is off by an
    ulp in places; the CPU simulator's results are matched bit for bit)."""
    d = np.subtract(a, b)
    if d.dtype == np.float32 and d.size > 1 << 16:  # same values, in cache-sized chunks
        flat = np.ascontiguousarray(d).reshape(-1)
        out = np.empty_like(flat)
        for i in range(0, flat.size, 1 << 16):
            out[i:i + (1 << 16)] = np.exp(flat[i:i + (1 << 16)].astype(np.float64))
        return out.reshape(d.shape)
    return np.exp(d.astype(np.float64)).astype(d.dtype)


def _max(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return npu_max(a, b)


def _min(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return npu_min(a, b)


BINOPS: dict[str, tuple[Ufunc, str]] = {
    "ADD": (np.add, "+"),
    "SUB": (np.subtract, "-"),
    "MUL": (np.multiply, "*"),
    "DIV": (_div, "/"),
    "MAX": (_max, "max"),
    "MIN": (_min, "min"),
    "EXPDIF": (_expdif, "expdif"),
}


class PrecisionType:
    """Values of the ``PrecisionType`` template argument (``DivAlgorithm::DEFAULT`` or
    ``DivAlgorithm::HIGH_PRECISION``); both give the correctly rounded quotient here."""

    NAMES = ("DEFAULT", "HIGH_PRECISION")

    @classmethod
    def check(cls, ins: Instr, *vals: Any, PrecisionType: Any = "DEFAULT",  # noqa: N803
              **kw: Any) -> None:
        name = getattr(PrecisionType, "name", str(PrecisionType)).split("::")[-1].upper()
        if name not in cls.NAMES:
            raise PtoError(f"PrecisionType {PrecisionType!r} is not a DivAlgorithm (allowed: "
                           f"{', '.join(cls.NAMES)})", op=ins.mnemonic)


def _none_box(*names: str) -> StaticRule:
    def rule(sig: Sig) -> None:
        for n in names:
            t = sig[n]
            if isinstance(t, TileSpec) and t.is_boxed:
                raise sig.fail(f"{n} must be ND or DN (no fractal boxes), got {t.layout_name}")
    return rule




# ---- row reductions: TROWPROD TROWMAX TROWMIN ---------------------------------------------

def _declare_row_reduce(name: str, what: str) -> Instr:
    def reducer(m: Machine, dst: Tile) -> Callable[[np.ndarray], np.ndarray]:
        """The maths: a source's values -> dst's (..., rows, 1) values."""
        out = dst.dtype.np

        def reduced(x: np.ndarray) -> np.ndarray:
            with m.errstate():
                if name in ("TROWMAX", "TROWMIN"):
                    r = _extreme(m, x, -1, name == "TROWMAX")
                elif m.target.traits.reduce_order == "sequential":
                    r = _seq_fold(np.multiply, x, -1, out)
                else:
                    r = tree_reduce(x, np.multiply, 1)
            return np.asarray(r).astype(out)[..., None]
        return reduced

    def impl(m: Machine, dst: Tile, src: Tile, tmp: Tile) -> None:
        vr, vc = src.valid_shape
        if vr == 0 or vc == 0:
            return
        _fit(dst, vr, 1, "dst")
        reduced = reducer(m, dst)
        if not defer_row_reduce(m, dst, src, reduced):
            dst.write(reduced(np.asarray(src.read())))

    impl.__doc__ = (
        f"dst[i, 0] = {what}_j src[i, j] over src's valid region (only column 0 of dst is "
        "written; tmp is not modified)."
        + ("\n\ncpu: sequential product in the element type, rounded at every step (the "
           "simulator's ``TileDst::DType prod``; f16 [3, 683, 3] gives 6144); a2a3/a5: a "
           "pairwise tree in the element type (the same row gives 6148). Integers wrap."
           if name == "TROWPROD" else
           "\n\nNaN: on cpu the simulator's fold ``acc = std::"
           + what + "(acc, x)`` from the first element, so a NaN counts only as a row's "
           "first element (rows [1, nan, 3] and [nan, 1, 3] give 3 and nan); on a2a3/a5 a "
           "NaN anywhere gives NaN (vmax/vmin propagate NaN)."))
    return instr(name, family="reduce", pipe=Pipe.V, batched=True,
                 ptoas=Ptoas(materialised={"tmp": "src"}, rules={
                     f"pto.{name.lower()}": (reduction_valid(1, empty_marker=True),)}),
                 operands=(Opnd("dst", "tile", "out"), Opnd("src", "tile"),
                           Opnd("tmp", "tile", "scratch")),
                 dtype_key=("src",),
                 static=(locs(["dst", "src"], TileType.Vec), nd("src"), row_reduce_dst,
                         same_dtype("dst", "src")),
                 static_for={"cpu": (same_static_rows,)},
                 runtime=(row_reduce_runtime,),
                 plan=lambda ins, m, vals, params: row_reduce_plan(
                     m, vals, reducer(m, vals[0]),
                     None if name == "TROWPROD" else rows_extreme_into(
                         m, name == "TROWMAX", vals[1].dtype.np, vals[1].spec.cols)))(impl)


TROWPROD = _declare_row_reduce("TROWPROD", "prod")
TROWMAX = _declare_row_reduce("TROWMAX", "max")
TROWMIN = _declare_row_reduce("TROWMIN", "min")


# ---- column reductions: TCOLSUM TCOLPROD TCOLMAX TCOLMIN --------------------------------------

@sim_unchecked
def _col_reduce_runtime(ins: Instr, dst: Tile, src: Tile, *rest: Any, **kw: Any) -> None:
    if src.valid_row == 0 or src.valid_col == 0:
        return  # returns early on an empty source (documented); the CPU simulator checks nothing
    if src.valid_col != dst.valid_col:
        raise RuntimeCheckError(
            f"src valid cols {src.valid_col} != dst valid cols {dst.valid_col}", op=ins.mnemonic)


def _col_sum(m: Machine, x: np.ndarray, binary: bool, acc: Any) -> np.ndarray:
    if m.target.traits.reduce_order == "sequential":
        return _seq_fold(np.add, x, 0, acc)
    if not binary:
        return np.add.accumulate(x, axis=0)[-1]
    # binary tree: adjacent row pairs summed, halving until one row is left (an odd last row
    # is carried to the next level)
    while x.shape[0] > 1:
        n = x.shape[0]
        s = x[0:n - 1:2] + x[1:n:2]
        x = np.concatenate([s, x[n - 1:]], axis=0) if n % 2 else s
    return x[0]


def _declare_col_reduce(name: str, what: str, with_tmp: bool) -> Instr:
    def impl(m: Machine, dst: Tile, src: Tile, tmp: Tile | None = None,
             isBinary: Any = False) -> None:  # noqa: N803
        vr, vc = src.valid_shape
        if vr == 0 or vc == 0:
            return
        _fit(dst, 1, vc, "dst")
        x = np.asarray(src.read())
        with np.errstate(all="ignore"):
            if name in ("TCOLMAX", "TCOLMIN"):
                r = _extreme(m, x, 0, name == "TCOLMAX")
            elif name == "TCOLSUM":
                r = _col_sum(m, x, bool(isBinary) and tmp is not None, dst.dtype.np)
            else:
                r = _seq_fold(np.multiply, x, 0,
                              dst.dtype.np if m.target.traits.reduce_order == "sequential"
                              else x.dtype)
            dst.write(np.asarray(r).astype(dst.dtype.np)[None, :])

    impl.__doc__ = (f"dst[0, j] = {what}_i src[i, j] over src's valid region (only row 0 of "
                    "dst is written).")
    if name == "TCOLSUM":
        impl.__doc__ += (
            "\n\nTCOLSUM(dst, src) and TCOLSUM(dst, src, tmp, isBinary). cpu: sequential in "
            "dst's element type, rounded at every row (the simulator's ``TileDst::DType sum``: "
            "an f16 -> f16 column [2048, 1, 1] gives 2048; f16 -> f32 accumulates in f32). "
            "a2a3/a5: row by row in the element type, or with isBinary a tree over adjacent "
            "row pairs (tmp, the NPU's scratch, is not modelled). Integers wrap.")
    elif name == "TCOLPROD":
        impl.__doc__ += ("\n\nRow by row in dst's element type, rounded at every row (cpu: the "
                         "simulator's ``TileDst::DType prod``); integers wrap.")
    else:
        impl.__doc__ += (
            "\n\nNaN: on cpu the simulator's fold (``if (x " + (">" if name == "TCOLMAX"
                                                               else "<")
            + " acc) acc = x`` from row 0), so a NaN counts only in row 0; on a2a3/a5 a NaN "
            "anywhere in the column gives NaN.")
    ops: tuple[Opnd, ...] = (Opnd("dst", "tile", "out"), Opnd("src", "tile"))
    if with_tmp:
        ops += (Opnd("tmp", "tile", "scratch", optional=True),
                Opnd("isBinary", "scalar", optional=True))
    return instr(name, family="reduce", pipe=Pipe.V, operands=ops,
                 dtype_key=("src", "dst"),
                 static=(locs(["dst", "src"], TileType.Vec), nd("dst", "src")),
                 runtime=(_col_reduce_runtime,),
                 ptoas=Ptoas(attrs={"isBinary": Attr("isBinary")}) if with_tmp else None)(impl)


TCOLSUM = _declare_col_reduce("TCOLSUM", "sum", True)
TCOLPROD = _declare_col_reduce("TCOLPROD", "prod", False)
TCOLMAX = _declare_col_reduce("TCOLMAX", "max", False)
TCOLMIN = _declare_col_reduce("TCOLMIN", "min", False)


# ---- arg reductions: TROWARGMAX TROWARGMIN TCOLARGMAX TCOLARGMIN -----------------------------

class ValIdxInstr(Instr):
    """An instruction with the two C++ overloads ``OP(dst, src, tmp)`` (index only) and
    ``OP(dstVal, dstIdx, src, tmp)`` (value and index). Operands are declared as
    ``(dst, src, tmp, dstVal?)``; a four-operand call is rebound to that order."""

    def bind(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[list[Any], dict]:
        a = list(args)
        waits: list[Any] = []
        while a and isinstance(a[-1], Event):
            waits.insert(0, a.pop())
        if len(a) == 4:
            a = [a[1], a[2], a[3], a[0]]
        return super().bind(tuple(a + waits), kwargs)


def _argreduce_runtime(axis: int) -> Callable[..., None]:
    @sim_unchecked
    def rule(ins: Instr, dst: Tile, src: Tile, tmp: Tile, dstVal: Tile | None = None,  # noqa: N803
             **kw: Any) -> None:
        name = ins.mnemonic
        if src.valid_row == 0 or src.valid_col == 0:
            raise RuntimeCheckError(
                f"src valid region {src.valid_row}x{src.valid_col} is empty", op=name)
        for label, t in (("dst", dst), ("dstVal", dstVal)):
            if t is None:
                continue
            if axis == 1:
                if t.valid_row != src.valid_row:
                    raise RuntimeCheckError(f"src valid rows {src.valid_row} != {label} valid "
                                            f"rows {t.valid_row}", op=name)
                if t.spec.is_nd and t.valid_col != 1:
                    raise RuntimeCheckError(f"{label} is ND, its valid cols must be 1 (got "
                                            f"{t.valid_col})", op=name)
            else:
                if t.valid_row != 1:
                    raise RuntimeCheckError(f"{label} valid rows must be 1 (got "
                                            f"{t.valid_row})", op=name)
                if t.valid_col != src.valid_col:
                    raise RuntimeCheckError(f"src valid cols {src.valid_col} != {label} valid "
                                            f"cols {t.valid_col}", op=name)
    return rule


def _row_arg_dst(sig: Sig) -> None:
    for n in ("dst", "dstVal"):
        d = sig[n]
        if isinstance(d, TileSpec) and not (d.is_nd or (d.is_dn and d.cols == 1)):
            raise sig.fail(f"{n} must be ND (valid cols 1) or DN with Cols == 1, got "
                           f"{d.layout_name} {d.rows}x{d.cols}")


def _npu_idx_width(sig: Sig) -> None:
    """a2a3/a5 value+index column form: 2-byte sources take 16-bit indices, 4-byte sources
    32-bit ones; the index-only form always takes 32-bit indices."""
    if not sig.target.traits.npu_static_checks:
        return
    s, i = elem_type(sig["src"]), elem_type(sig["dst"])
    if s is None or i is None:
        return
    want = (s.itemsize if s.itemsize in (2, 4) else 4) if sig["dstVal"] is not None else 4
    if i.itemsize != want:
        form = "value+index" if sig["dstVal"] is not None else "index-only"
        raise sig.fail(f"{form} form with src {s} needs a {8 * want}-bit index type on "
                       f"{sig.target}, got dst {i}")


def _npu_no_8bit_validx(sig: Sig) -> None:
    s = elem_type(sig["src"])
    if sig["dstVal"] is not None and s is not None and s.itemsize == 1:
        raise sig.fail(f"the value+index form does not take 8-bit sources (src {s})")


def _arg_tmp_a2a3(axis: int) -> Any:
    """A2/A3's arg reductions keep per-repeat partial results in tmp: either the legacy tmp of
    src's valid shape, or a workspace of ``stride`` valid columns, stride = (ceil(2r / B) +
    ceil(r / B)) * B for r = ceil(src valid cols / elements per 256-byte repeat) and B the
    elements per 32-byte block (PTOAS's verifier; a row reduction of one repeat or less has
    other small forms and is not checked here)."""
    def rule(sig: Sig) -> None:
        t, s = sig["tmp"], sig["src"]
        if not isinstance(t, TileSpec) or not isinstance(s, TileSpec):
            return
        vr, vc = s.valid_row, s.valid_col
        if vc is None or t.valid_col is None or (t.valid_row, t.valid_col) == (vr, vc):
            return
        per_repeat, per_block = 256 // s.dtype.itemsize, 32 // s.dtype.itemsize
        if axis == 1 and vc <= per_repeat:
            return
        r = -(-vc // per_repeat)
        stride = (-(-2 * r // per_block) + -(-r // per_block)) * per_block
        if t.valid_col < stride:
            raise sig.fail(f"expects A2/A3 tmp valid_shape[1] to be at least {stride} for src "
                           f"valid_shape[1] = {vc}, got {t.valid_col}")
    rule.__name__ = f"_arg_tmp_a2a3_axis{axis}"
    return rule


def _declare_arg(name: str, axis: int) -> Instr:
    is_max = name.endswith("MAX")
    word = "argmax" if is_max else "argmin"
    over = "j" if axis == 1 else "i"

    def impl(m: Machine, dst: Tile, src: Tile, tmp: Tile, dstVal: Tile | None = None  # noqa: N803
             ) -> None:
        vr, vc = src.valid_shape
        if vr == 0 or vc == 0:
            return
        shape = (vr, 1) if axis == 1 else (1, vc)
        _fit(dst, *shape, "dst")
        if dstVal is not None:
            _fit(dstVal, *shape, "dstVal")
        x = np.asarray(src.read())
        if m.target.traits.reduce_nan == "fold":
            idx = _first_extreme(x, axis, is_max)
        else:
            c = _cmp_view(x)
            idx = np.argmax(c, axis=axis) if is_max else np.argmin(c, axis=axis)
        val = np.take_along_axis(x, np.expand_dims(idx, axis), axis=axis)
        dst.write(idx.astype(dst.dtype.np).reshape(shape))
        if dstVal is not None:
            dstVal.write(val.astype(dstVal.dtype.np).reshape(shape))

    if axis == 1:
        doc = (f"dst[i, 0] = {word}_j src[i, j] (column index) over src's valid region; with "
               f"dstVal also dstVal[i, 0] = {'max' if is_max else 'min'}_j src[i, j].")
    else:
        doc = (f"dst[0, j] = {word}_i src[i, j] (row index) over src's valid region; with "
               f"dstVal also dstVal[0, j] = {'max' if is_max else 'min'}_i src[i, j].")
    impl.__doc__ = doc + (
        f"\n\nThe first {over} among equal extreme values is returned. NaN: on cpu the "
        "simulator's strict-comparison fold from the first element, so a NaN is chosen only "
        f"when it is the first element (index 0); on a2a3/a5 the first NaN counts as the "
        f"extreme value. C++ overloads "
        f"{name}(dst, src, tmp) and {name}(dstVal, dstIdx, src, tmp); tmp (scratch of a2a3) "
        "is not modified.")
    static: list[StaticRule] = [locs(["dst", "src", "dstVal"], TileType.Vec),
                                same_dtype("dstVal", "src")]
    if axis == 1:
        static += [nd("src"), _row_arg_dst]
    else:
        static += [_none_box("src"), nd("dst", "dstVal"), _npu_idx_width, _npu_no_8bit_validx]
    ins = instr(name, family="reduce", pipe=Pipe.V,
                ptoas=Ptoas(materialised={"tmp": "src"}, rules={
                    f"pto.{name.lower()}": (reduction_valid(axis, empty_marker=False),)}),
                operands=(Opnd("dst", "tile", "out"), Opnd("src", "tile"),
                          Opnd("tmp", "tile", "scratch"),
                          Opnd("dstVal", "tile", "out", optional=True)),
                dtype_key=("src", "dst"), static=static,
                static_for={"a2a3": (_arg_tmp_a2a3(axis),)},
                runtime=(_argreduce_runtime(axis),))(impl)
    ins.__class__ = ValIdxInstr  # the two C++ overloads (see ValIdxInstr)
    return ins


TROWARGMAX = _declare_arg("TROWARGMAX", 1)
TROWARGMIN = _declare_arg("TROWARGMIN", 1)
TCOLARGMAX = _declare_arg("TCOLARGMAX", 0)
TCOLARGMIN = _declare_arg("TCOLARGMIN", 0)


# ---- plain broadcasts: TROWEXPAND TCOLEXPAND ------------------------------------------------

@sim_unchecked  # an A5 implementation check (runtime_for a5); the CPU simulator makes none
def _rowexpand_runtime(ins: Instr, dst: Tile, src: Tile, **kw: Any) -> None:
    if src.valid_row == 0 or src.valid_col == 0:
        raise RuntimeCheckError(
            f"src valid region {src.valid_row}x{src.valid_col} is empty", op=ins.mnemonic)
    if src.valid_row != dst.valid_row:
        raise RuntimeCheckError(f"src valid rows {src.valid_row} != dst valid rows "
                                f"{dst.valid_row}", op=ins.mnemonic)


def _trowexpand_a2a3(m: Machine, dst: Tile, src: Tile) -> Any:
    """a2a3 does nothing when any valid extent of src is 0 (else the common semantics)."""
    if 0 in src.valid_shape:
        return None
    return NotImplemented


def _column_src(sig: Sig) -> None:
    """src is ND, or a DN column vector (Cols == 1: one value per row, contiguous), which
    PTOAS lowers to TROWEXPAND as well (rowexpand_tile_native.pto, the DeepseekV4 samples)."""
    s = sig["src"]
    if isinstance(s, TileSpec) and not (s.is_nd or (s.is_dn and s.cols == 1)):
        raise sig.fail(f"src must be ND, or DN with Cols == 1, got {s.layout_name} "
                       f"{s.rows}x{s.cols}")


def _dst_not_half_empty(sig: Sig) -> None:
    """PTOAS's rule: a dst valid region with one extent 0 (and not the other) is an error;
    0x0 is PyPTO's no-op marker (the eager call with an empty extent does nothing on a2a3)."""
    d = sig["dst"]
    if not isinstance(d, TileSpec) or sig.permissive:
        return
    v = (d.valid_row, d.valid_col)
    if v != (0, 0):
        for k in (0, 1):
            if v[k] == 0:
                raise sig.fail(f"expects dst valid_shape[{k}] to be non-zero")


@instr("TROWEXPAND", family="reduce", pipe=Pipe.V,
       ptoas=Ptoas(rules={"pto.trowexpand": (_dst_not_half_empty,)}),
       operands=(Opnd("dst", "tile", "out"), Opnd("src", "tile")),
       dtype_key=("dst",),
       static=(locs(["dst", "src"], TileType.Vec), nd("dst"), _column_src,
               same_dtype("dst", "src")),
       runtime_for={"a5": (_rowexpand_runtime,)}, impl_for={"a2a3": _trowexpand_a2a3})
def TROWEXPAND(m: Machine, dst: Tile, src: Tile) -> None:  # noqa: N802
    """dst[i, j] = src[i, 0] over dst's valid region (src ND, or a DN column vector).

    a2a3 does nothing when any valid extent of dst or src is 0; a5 requires equal valid rows
    and a non-empty src."""
    vr, vc = dst.valid_shape
    if vr == 0 or vc == 0:
        return
    _need(src, vr, 1, "src", "one value per dst row")
    dst.write(np.broadcast_to(np.asarray(src.read(vr, 1)), (vr, vc)))


@instr("TCOLEXPAND", family="reduce", pipe=Pipe.V,
       operands=(Opnd("dst", "tile", "out"), Opnd("src", "tile")),
       dtype_key=("dst",),
       static=(locs(["dst", "src"], TileType.Vec), nd("dst", "src"), same_dtype("dst", "src")))
def TCOLEXPAND(m: Machine, dst: Tile, src: Tile) -> None:  # noqa: N802
    """dst[i, j] = src[0, j] over dst's valid region."""
    vr, vc = dst.valid_shape
    if vr == 0 or vc == 0:
        return
    _need(src, 1, vc, "src", "one value per dst column")
    dst.write(np.broadcast_to(np.asarray(src.read(1, vc)), (vr, vc)))


# ---- expand-and-operate: TROWEXPAND{ADD,...} TCOLEXPAND{ADD,...} ------------------------------

def _row_operands(dst: Tile, src0: Tile, src1: Tile) -> tuple[Tile, Tile, bool]:
    """(full operand, expanded operand, expanded-is-src0). The full operand has dst's valid
    shape (when both do: the row-major one, src0 if both are)."""
    d = dst.valid_shape
    if src0.valid_shape == d and (src0.spec.is_row_major or src1.valid_shape != d):
        return src0, src1, False
    if src1.valid_shape == d:
        return src1, src0, True
    raise RuntimeCheckError(
        f"one of src0 (valid {src0.valid_row}x{src0.valid_col}) and src1 (valid "
        f"{src1.valid_row}x{src1.valid_col}) must have dst's valid shape {d[0]}x{d[1]}")


def _expanded_cols(exp: Tile, label: str, vr: int) -> int:
    """The expanded operand's valid columns after its checks: 1 (mode 1, ColMajor: a scalar
    per row) or 32/sizeof(T) (mode 2, RowMajor: a 32-byte block per row)."""
    block = 32 // exp.dtype.itemsize
    if exp.valid_row != vr:
        raise RuntimeCheckError(f"expanded operand {label} has valid rows {exp.valid_row}, "
                                f"dst has {vr}")
    if not exp.spec.is_row_major:
        if exp.valid_col != 1:
            raise RuntimeCheckError(f"expanded operand {label} is ColMajor (mode 1): its valid "
                                    f"cols must be 1, got {exp.valid_col}")
        return 1
    if exp.valid_col != block:
        raise RuntimeCheckError(
            f"expanded operand {label} is RowMajor (mode 2): its valid cols must be "
            f"32/sizeof({exp.dtype}) = {block}, got {exp.valid_col} (a per-row scalar needs "
            "a ColMajor tile with one column)")
    return block


def _row_expanded(exp: Tile, label: str, vr: int, vc: int) -> np.ndarray:
    """The expanded operand's values for a vr x vc domain: Mode 1 (ColMajor, valid cols 1) a
    scalar per row; Mode 2 (RowMajor, valid cols 32/sizeof(T)) a 32-byte block per row,
    repeated across the row."""
    block = _expanded_cols(exp, label, vr)
    if block == 1:
        return np.asarray(exp.read(vr, 1))
    b = np.asarray(exp.read(vr, block))
    reps = -(-vc // block)
    return np.tile(b, (1, reps))[..., :vc]


def _src1col_expanded(src1: Tile, cols: int, vr: int, vc: int) -> np.ndarray:
    """The expanded src1 of TileLang's form for a vr x vc domain: ``src1Col`` = 1 gives
    s = src1[i, 0] per row; 32/sizeof(T) is mode 2 (a RowMajor src1's 32-byte block per row,
    repeated). Other counts are refused: their semantics are not settled upstream."""
    block = 32 // src1.dtype.itemsize
    if src1.valid_row < vr:
        raise RuntimeCheckError(f"src1 has valid rows {src1.valid_row}, dst has {vr}")
    if cols == 1:
        if src1.valid_col < 1:
            raise RuntimeCheckError("src1Col = 1 but src1 has no valid column")
        return np.asarray(src1.read(vr, 1))
    if cols == block and src1.spec.is_row_major:
        if src1.valid_col < block:
            raise RuntimeCheckError(f"src1Col = {cols} but src1 has {src1.valid_col} valid "
                                    "columns")
        b = np.asarray(src1.read(vr, block))
        return np.tile(b, (1, -(-vc // block)))[..., :vc]
    raise RuntimeCheckError(
        f"src1Col = {cols} is not supported: 1 (a scalar per row) or, for a RowMajor src1, "
        f"32/sizeof({src1.dtype}) = {block} (mode 2); other counts have no settled semantics")


def _src1col_written(values: Mapping[str, Any]) -> int | None:
    """The src1Col that computes what the call without one does (the exporter): the
    expanded src1's mode, 1 (ColMajor, one valid column) or 32/sizeof(T) (RowMajor, mode 2);
    None when src1 is not the expanded operand or fits neither mode."""
    dst, src0, src1 = values.get("dst"), values.get("src0"), values.get("src1")
    if not (isinstance(dst, Tile) and isinstance(src0, Tile) and isinstance(src1, Tile)):
        return None
    if src0.valid_shape != dst.valid_shape or src1.valid_row != dst.valid_row:
        return None
    if not src1.spec.is_row_major:
        return 1 if src1.valid_col == 1 else None
    block = 32 // src1.dtype.itemsize
    return block if src1.valid_col == block else None


#: float forms of the expand ops that are plain numpy ufuncs (and so can be deferred)
_FLOAT_UFUNCS = {"ADD": np.add, "SUB": np.subtract, "MUL": np.multiply, "DIV": np.divide,
                 "MAX": np.maximum, "MIN": np.minimum}
#: of those, the ones whose ufunc is their BINOPS function on floats (MAX / MIN are the
#: vector unit's, npu_max / npu_min, which differ from numpy's on signed zeros)
_ARITH = frozenset({"ADD", "SUB", "MUL", "DIV"})


def _declare_row_op(suffix: str) -> Instr:
    fn, sym = BINOPS[suffix]
    name = f"TROWEXPAND{suffix}"

    def direct_into(dst: Tile) -> bool:
        """Does the src1Col form compute straight into dst (float arithmetic, ND, not packed,
        operands of dst's type)?"""
        return suffix in _ARITH and dst.dtype.is_float and dst.spec.is_nd \
            and not dst.dtype.packed

    def impl(m: Machine, dst: Tile, src0: Tile, src1: Tile, tmp: Tile | None = None,
             src1Col: int | None = None, **params: Any) -> None:  # noqa: N803
        vr, vc = dst.valid_shape
        if vr == 0 or vc == 0:
            return
        direct = direct_into(dst)
        if src1Col is not None:  # TileLang's form: src1 is the expanded operand, its columns
            full, exp, swapped = src0, src1, False  # given here, not by its valid shape
            if src0.valid_shape != (vr, vc):
                raise RuntimeCheckError(f"src1Col given: src0 (valid {src0.valid_row}x"
                                        f"{src0.valid_col}) must have dst's valid shape "
                                        f"{vr}x{vc}")
        else:
            full, exp, swapped = _row_operands(dst, src0, src1)
        if not full.spec.is_row_major:
            raise RuntimeCheckError(f"the full-sized operand {'src1' if swapped else 'src0'} "
                                    f"must be row-major, got {full.spec.layout_name}")
        if tmp is not None and exp.spec.is_row_major and src1Col != 1:
            raise RuntimeCheckError("the overload with tmp supports only mode 1 (a ColMajor "
                                    "expanded operand)")
        label = "src0" if swapped else "src1"
        uf = _FLOAT_UFUNCS.get(suffix)
        if src1Col is not None:
            b = _src1col_expanded(src1, int(src1Col), vr, vc)
            a = np.asarray(full.read(vr, vc))
            if direct and a.dtype == b.dtype == dst.dtype.np and (vr, vc) == dst.shape:
                # straight into dst (as write() would put it there, without the temporary:
                # numpy computes a ufunc whose operands overlap its output as if they did not)
                dst._overwrite()
                if dst._buf is None:
                    m.auto_storage(dst, False)  # (written in full below)
                with m.errstate():
                    _FLOAT_UFUNCS[suffix](a, b, out=dst.view2d())
                return
            with m.errstate():
                r = fn(a, b)
            dst.write(np.asarray(r).astype(dst.dtype.np, copy=False))
            return
        if uf is not None and dst.dtype.is_float and full.dtype is dst.dtype \
                and (exp._pending is not None or full._pending is not None) \
                and lazy.worth(m, dst) and (vr, vc) == dst.shape == full.shape \
                and dst.spec.is_nd \
                and _expanded_cols(exp, label, vr) == 1 and exp.shape == (vr, 1):
            # an operand's value is itself deferred (the row max of a softmax, its exponent):
            # the chain stays deferred, to be computed in one pass (see ptoisa.rowfuse). The
            # operands read from storage are read first: a read can compute another deferred
            # tile into its storage, which an expression taken before it would then misread
            vf = None if lazy.node_of(full) else rowfuse.leaf(np.asarray(full.read(vr, vc)))
            ve = None if lazy.node_of(exp) else rowfuse.leaf(np.asarray(exp.read(vr, 1)))
            kf, ke = vf or lazy.node_of(full), ve or lazy.node_of(exp)
            if kf is not None and ke is not None and lazy.defer(m, dst, rowfuse.node(
                    rowfuse.ufunc(uf, dst.dtype.np), (ke, kf) if swapped else (kf, ke),
                    kf.shape)):
                return
        b = _row_expanded(exp, label, vr, vc)
        a = np.asarray(full.read(vr, vc))
        if uf is not None and dst.dtype.is_float and a.dtype == dst.dtype.np \
                and lazy.ok(m, dst) and (vr, vc) == dst.shape and dst.spec.is_nd:
            # deferred: computed when dst is read, or by TSTORE straight into GM
            dst.set_pending(uf, (b, a) if swapped else (a, b), m)
            return
        with np.errstate(all="ignore"):
            r = fn(b, a) if swapped else fn(a, b)
        dst.write(np.asarray(r).astype(dst.dtype.np, copy=False))

    what = {"MAX": "max(src0, s)", "MIN": "min(src0, s)",
            "EXPDIF": "exp(src0 - s)"}.get(suffix, f"src0 {sym} s")
    impl.__doc__ = (
        f"dst[i, j] = {what} over dst's valid region, s the expanded operand's value for row i "
        "(mode 1: a ColMajor tile with one valid column, s = src1[i, 0]; mode 2: a RowMajor "
        "tile with 32/sizeof(T) valid columns, s = src1[i, j mod 32/sizeof(T)]). The expanded "
        "operand is whichever of src0/src1 does not have dst's valid shape (operand order is "
        "kept: with src0 expanded, dst = s op src1).")
    if suffix == "DIV":
        impl.__doc__ += " Integers: C division (toward zero), x / 0 gives 0."
    impl.__doc__ += (
        "\n\nsrc1Col (TileLang's template argument, PTOAS attribute ``src1Col``) names src1 "
        "the expanded operand and gives its columns instead of its valid shape: 1 (s = "
        "src1[i, 0] whatever src1's layout, as the tilelang_st goldens) or 32/sizeof(T) (mode "
        "2, a RowMajor src1); src0 must have dst's valid shape. A `.pto` op without the "
        "attribute is src1Col = 1: PTOAS lowers it through its TileLib template, which "
        "broadcasts src1[i, 0] (the eager call, pto-isa's C++ overload, keeps the modes above).")
    params = (Param("PrecisionType", "DivAlgorithm::DEFAULT"),) if suffix == "DIV" else ()
    params += (Param("src1Col", None),)
    runtime = (PrecisionType.check,) if suffix == "DIV" else ()

    def plan(ins: Instr, m: Machine, vals: list[Any], params: dict[str, Any]
             ) -> Callable[[], bool] | None:
        """The planned form (Instr.plan, ptoisa/isa/planned.py) of the src1Col = 1 form
        computed straight into dst: with every tile whole (src0 of dst's shape, src1 of at
        least its rows) the run-time checks of that form pass; the parameters' own rule is
        checked once, here."""
        dst, src0, src1 = vals[0], vals[1], vals[2]
        if params.get("src1Col") != 1 or (len(vals) > 3 and vals[3] is not None) \
                or not all(planned.plain(t) for t in (dst, src0, src1)) \
                or not direct_into(dst) or not src0.spec.is_row_major \
                or src0.dtype is not dst.dtype or src1.dtype is not dst.dtype \
                or (src0.spec.rows, src0.spec.cols) != (dst.spec.rows, dst.spec.cols) \
                or src1.spec.rows < dst.spec.rows:
            return None
        for rule in runtime:  # (the parameters': they are the plan's)
            try:
                rule(ins, *vals, **params)
            except PtoError:
                return None
        rows, uf = dst.spec.rows, _FLOAT_UFUNCS[suffix]
        cut: list[Any] = [None, None]  # (the last src1 values, their first column's rows)
        store: list[Any] = []  # (fused with the TSTORE of dst after it: see fuse_store)

        def call() -> bool:
            if m._lazy and not planned.settled(m):
                return False
            if store and _into_store(*store):
                return True
            a, b, out = planned.values(src0, m), planned.values(src1, m), planned.target(dst, m)
            if a is None or b is None or out is None:
                return False
            planned.written(dst, m)  # (a, read: its lazily loaded window, say)
            apply(a, b, out)
            return True

        def apply(a: np.ndarray, b: np.ndarray, out: np.ndarray) -> None:
            if cut[0] is not b:  # (a view the tile keeps while its storage stands)
                cut[0], cut[1] = b, b[..., :rows, :1]
            if m.quiet:  # (a launch's machine: numpy's warnings are off)
                uf(a, cut[1], out=out)
            else:
                with np.errstate(all="ignore"):
                    uf(a, cut[1], out=out)

        def _into_store(window: Callable[[], np.ndarray | None], gm: Any, done: list[bool]
                        ) -> bool:
            w = window()
            out = planned.target(dst, m)
            if w is None or out is None or w.shape != out.shape or w.dtype != out.dtype:
                return False
            lazy.gm_barrier(m, gm.flat)  # (as the store: a tile reading it in place copies)
            a, b = planned.values(src0, m), planned.values(src1, m)
            if a is None or b is None:
                return False
            planned.written(dst, m)
            apply(a, b, w)
            done[0] = True
            return True

        def fuse_store(window: Callable[[], np.ndarray | None], gm: Any, done: list[bool]
                       ) -> None:
            """(ptoisa/plan_loops.py, a batch) dst is stored whole to ``gm`` by the very next
            instruction, a TSTORE whose planned form writes window ``window()``, and nothing
            reads dst's storage after that before writing all of it: the values go straight
            into the window (an IEEE operation's results whatever their destination) and
            ``done[0]`` is set, the TSTORE then only counting the write; dst's storage keeps
            what it held (no one reads it). Where the window is not at hand, the call
            computes into dst as before and the TSTORE stores it."""
            store[:] = [window, gm, done]
        if suffix in _ARITH:
            call.fuse_store = fuse_store  # type: ignore[attr-defined]
        return call
    # (PTOAS lowers the op through its TileLib template, lib/TileOps/trowexpand*.py, which
    # broadcasts src1[i, 0]: vlds + vdup of the lowest lane, lit/vpto/*_tile_op_expand.pto;
    # an op without src1Col is src1Col = 1, as the tilelang_st goldens of trowexpandadd show)
    attrs = {"src1Col": Attr("src1Col", default=1, written=_src1col_written),
             "src0eqdst": Attr(only=None, why=(
                 "TileLang's flag for whether src0 has dst's shape: the instruction takes the "
                 "full-sized operand from the valid shapes (with src1Col: src0, checked)")),
             "highPrecision": Attr("PrecisionType", values={
                 True: "DivAlgorithm::HIGH_PRECISION", False: "DivAlgorithm::DEFAULT"})
             if suffix == "DIV" else Attr(only=(False,), why=(
                 "only pto.trowexpanddiv has a high-precision form"))}
    return instr(name, family="reduce", pipe=Pipe.V, batched=True,
                 ptoas=Ptoas(attrs=attrs),
                 operands=(Opnd("dst", "tile", "out"), Opnd("src0", "tile"),
                           Opnd("src1", "tile"),
                           Opnd("tmp", "tile", "scratch", optional=True)),
                 params=params, dtype_key=("dst",),
                 static=(locs(["dst", "src0", "src1"], TileType.Vec),
                         row_major("dst"), _none_box("dst", "src0", "src1"),
                         same_dtype("dst", "src0", "src1")),
                 runtime=runtime, plan=plan)(impl)


def _col_op_runtime(ins: Instr, dst: Tile, src0: Tile, src1: Tile, **kw: Any) -> None:
    vr, vc = dst.valid_shape
    if vr == 0 or vc == 0:
        return
    if src0.valid_row < vr or src0.valid_col < vc:
        raise RuntimeCheckError(f"src0 valid region {src0.valid_row}x{src0.valid_col} does not "
                                f"cover dst valid region {vr}x{vc}", op=ins.mnemonic)
    if src1.valid_row < 1 or src1.valid_col < vc:
        raise RuntimeCheckError(f"src1 valid region {src1.valid_row}x{src1.valid_col} does not "
                                f"provide one value per dst column ({vc})", op=ins.mnemonic)


def _declare_col_op(suffix: str) -> Instr:
    fn, sym = BINOPS[suffix]
    name = f"TCOLEXPAND{suffix}"

    def impl(m: Machine, dst: Tile, src0: Tile, src1: Tile, **params: Any) -> None:
        vr, vc = dst.valid_shape
        if vr == 0 or vc == 0:
            return
        a = np.asarray(src0.read(vr, vc))
        b = np.asarray(src1.read(1, vc))
        with np.errstate(all="ignore"):
            r = fn(a, b)
        dst.write(np.asarray(r).astype(dst.dtype.np, copy=False))

    what = {"MAX": "max(src0[i, j], src1[0, j])", "MIN": "min(src0[i, j], src1[0, j])",
            "EXPDIF": "exp(src0[i, j] - src1[0, j])"}.get(suffix, f"src0[i, j] {sym} src1[0, j]")
    impl.__doc__ = f"dst[i, j] = {what} over dst's valid region."
    if suffix == "DIV":
        impl.__doc__ += " Integers: C division (toward zero), x / 0 gives 0."
    params = (Param("PrecisionType", "DivAlgorithm::DEFAULT"),) if suffix == "DIV" else ()
    runtime: tuple[Any, ...] = (_col_op_runtime,)
    if suffix == "DIV":
        runtime += (PrecisionType.check,)
    return instr(name, family="reduce", pipe=Pipe.V,
                 operands=(Opnd("dst", "tile", "out"), Opnd("src0", "tile"),
                           Opnd("src1", "tile")),
                 params=params, dtype_key=("dst",),
                 static=(locs(["dst", "src0", "src1"], TileType.Vec),
                         nd("dst", "src0", "src1"), same_dtype("dst", "src0", "src1")),
                 runtime=runtime)(impl)


TROWEXPANDADD = _declare_row_op("ADD")
TROWEXPANDSUB = _declare_row_op("SUB")
TROWEXPANDMUL = _declare_row_op("MUL")
TROWEXPANDDIV = _declare_row_op("DIV")
TROWEXPANDMAX = _declare_row_op("MAX")
TROWEXPANDMIN = _declare_row_op("MIN")
TROWEXPANDEXPDIF = _declare_row_op("EXPDIF")
TCOLEXPANDADD = _declare_col_op("ADD")
TCOLEXPANDSUB = _declare_col_op("SUB")
TCOLEXPANDMUL = _declare_col_op("MUL")
TCOLEXPANDDIV = _declare_col_op("DIV")
TCOLEXPANDMAX = _declare_col_op("MAX")
TCOLEXPANDMIN = _declare_col_op("MIN")
TCOLEXPANDEXPDIF = _declare_col_op("EXPDIF")


# ---- pair reduction, interleave, deinterleave -----------------------------------------------

def _same_valid(*names: str) -> Callable[..., None]:
    def rule(ins: Instr, *vals: Any, **kw: Any) -> None:
        by = {o.name: v for o, v in zip(ins.operands, vals, strict=False) if v is not None}
        shapes = [(n, by[n].valid_shape) for n in names if n in by]
        if len({s for _, s in shapes}) > 1:
            desc = ", ".join(f"{n} {r}x{c}" for n, (r, c) in shapes)
            raise RuntimeCheckError(f"operands must have the same valid shape ({desc})",
                                    op=ins.mnemonic)
    return rule


def _tpairreducesum_cpu(m: Machine, dst: Tile, src0: Tile) -> Any:
    """The CPU simulator fills the whole Rows x Cols dst with 0 first (then the common
    semantics)."""
    dst.fill(0, dst.rows, dst.cols)
    return NotImplemented


@instr("TPAIRREDUCESUM", family="reduce", pipe=Pipe.V,
       operands=(Opnd("dst", "tile", "out"), Opnd("src0", "tile")),
       dtype_key=("dst",),
       static=(locs(["dst", "src0"], TileType.Vec), nd("dst", "src0"),
               same_dtype("dst", "src0")),
       runtime=(_same_valid("dst", "src0"),), impl_for={"cpu": _tpairreducesum_cpu})
def TPAIRREDUCESUM(m: Machine, dst: Tile, src0: Tile) -> None:  # noqa: N802
    """dst[i, k] = src0[i, 2k] + src0[i, 2k+1] for k < ceil(C/2) (a missing odd partner is 0),
    dst[i, k] = 0 for ceil(C/2) <= k < C; C = dst's valid cols, over dst's valid rows. Sums
    round once to the element type. On cpu the rest of dst is zeroed too (the simulator fills
    the whole Rows x Cols tile with 0 first); a2a3/a5 leave it as it was."""
    vr, vc = dst.valid_shape
    if vr == 0 or vc == 0:
        return
    x = np.asarray(src0.read(vr, vc))
    h = -(-vc // 2)
    if vc % 2:
        x = np.concatenate([x, np.zeros((vr, 1), x.dtype)], axis=1)
    out = np.zeros((vr, vc), dst.dtype.np)
    with np.errstate(all="ignore"):
        out[:, :h] = x[:, 0::2] + x[:, 1::2]
    dst.write(out)


def _even_cols(ins: Instr, dst1: Tile, dst0: Tile, src1: Tile, src0: Tile | None = None,
               **kw: Any) -> None:
    c = (src1 if src0 is None else dst0).valid_col
    if c % 2:
        what = "src" if src0 is None else "dst0"
        raise RuntimeCheckError(f"{what} valid cols must be even, got {c}", op=ins.mnemonic)
    if src0 is None and (dst0.valid_row != src1.valid_row or dst1.valid_shape
                         != dst0.valid_shape or dst0.valid_col * 2 != src1.valid_col):
        raise RuntimeCheckError(
            f"single-source form: dst0/dst1 valid shapes ({dst0.valid_row}x{dst0.valid_col}, "
            f"{dst1.valid_row}x{dst1.valid_col}) must be {src1.valid_row}x{src1.valid_col // 2}"
            f" (half of src's valid cols)", op=ins.mnemonic)


_SAME4 = _same_valid("dst1", "dst0", "src1", "src0")


def _two_source_same_valid(ins: Instr, dst1: Tile, dst0: Tile, src1: Tile,
                           src0: Tile | None = None, **kw: Any) -> None:
    if src0 is not None:
        _SAME4(ins, dst1, dst0, src1, src0)


_INTERLEAVE_OPS = (Opnd("dst1", "tile", "out"), Opnd("dst0", "tile", "out"),
                   Opnd("src1", "tile"), Opnd("src0", "tile"))
_INTERLEAVE_STATIC = (locs(["dst1", "dst0", "src1", "src0"], TileType.Vec),
                      nd("dst1", "dst0", "src1", "src0"),
                      same_dtype("dst1", "dst0", "src1", "src0"))


@instr("TINTERLEAVE", family="reduce", pipe=Pipe.V, operands=_INTERLEAVE_OPS,
       dtype_key=("dst0",), static=_INTERLEAVE_STATIC,
       runtime=(_SAME4, _even_cols))
def TINTERLEAVE(m: Machine, dst1: Tile, dst0: Tile, src1: Tile, src0: Tile) -> None:  # noqa: N802
    """Per row, the stream s[2k] = src0[i, k], s[2k+1] = src1[i, k] (k < C); dst0[i, :C] =
    s[:C], dst1[i, :C] = s[C:]. C = dst0's valid cols (even). Note the C++ operand order."""
    vr, vc = dst0.valid_shape
    if vr == 0 or vc == 0:
        return
    s = np.empty((vr, 2 * vc), dst0.dtype.np)
    s[:, 0::2] = src0.read(vr, vc)
    s[:, 1::2] = src1.read(vr, vc)
    dst0.write(s[:, :vc])
    dst1.write(s[:, vc:])


@instr("TDEINTERLEAVE", family="reduce", pipe=Pipe.V,
       operands=_INTERLEAVE_OPS[:3] + (Opnd("src0", "tile", optional=True),),
       dtype_key=("dst0",), static=_INTERLEAVE_STATIC,
       runtime=(_two_source_same_valid, _even_cols))
def TDEINTERLEAVE(m: Machine, dst1: Tile, dst0: Tile, src1: Tile,  # noqa: N802
                  src0: Tile | None = None) -> None:
    """Two-source form (dst1, dst0, src1, src0): per row the stream s = src0[i, :C] ++
    src1[i, :C]; dst0[i, k] = s[2k], dst1[i, k] = s[2k+1] (k < C, C = dst0's valid cols).
    Single-source form (dst1, dst0, src): dst0[i, k] = src[i, 2k], dst1[i, k] = src[i, 2k+1]
    for k < src's valid cols / 2 (src takes the third operand slot)."""
    if src0 is None:
        vr, vc = src1.valid_row, src1.valid_col // 2
        s = np.asarray(src1.read(vr, 2 * vc))
    else:
        vr, vc = dst0.valid_shape
        s = np.concatenate([src0.read(vr, vc), src1.read(vr, vc)], axis=1)
    if vr == 0 or vc == 0:
        return
    even, odd = s[:, 0::2].copy(), s[:, 1::2].copy()
    dst0.write(even)
    dst1.write(odd)


# ---- partial arg-reductions: TPARTARGMAX TPARTARGMIN ----------------------------------------

def _part_arg_runtime(ins: Instr, dstVal: Tile, src0Val: Tile, src1Val: Tile,  # noqa: N803
                      dstIdx: Tile, src0Idx: Tile, src1Idx: Tile, **kw: Any) -> None:
    for v, i, nv, ni in ((dstVal, dstIdx, "dstVal", "dstIdx"),
                         (src0Val, src0Idx, "src0Val", "src0Idx"),
                         (src1Val, src1Idx, "src1Val", "src1Idx")):
        if v.valid_shape != i.valid_shape:
            raise RuntimeCheckError(
                f"{nv} valid {v.valid_row}x{v.valid_col} != {ni} valid "
                f"{i.valid_row}x{i.valid_col}", op=ins.mnemonic)


@sim_unchecked
def _part_arg_pattern(ins: Instr, dstVal: Tile, src0Val: Tile, src1Val: Tile,  # noqa: N803
                      *rest: Any, **kw: Any) -> None:
    check_partial_pattern(ins.mnemonic, dstVal.valid_shape, src0Val.valid_shape,
                          src1Val.valid_shape)


def _declare_part_arg(name: str) -> Instr:
    is_max = name.endswith("MAX")

    def impl(m: Machine, dstVal: Tile, src0Val: Tile, src1Val: Tile,  # noqa: N803
             dstIdx: Tile, src0Idx: Tile, src1Idx: Tile) -> None:  # noqa: N803
        vr, vc = dstVal.valid_shape
        if vr == 0 or vc == 0:
            return
        _fit(dstIdx, vr, vc, "dstIdx")
        a_r, a_c = min(src0Val.valid_row, vr), min(src0Val.valid_col, vc)
        b_r, b_c = min(src1Val.valid_row, vr), min(src1Val.valid_col, vc)
        val = np.zeros((vr, vc), dstVal.dtype.np)
        idx = np.zeros((vr, vc), dstIdx.dtype.np)
        if a_r and a_c:
            val[:a_r, :a_c] = src0Val.read(a_r, a_c)
            idx[:a_r, :a_c] = src0Idx.read(a_r, a_c)
        if b_r and b_c:
            val[:b_r, :b_c] = src1Val.read(b_r, b_c)
            idx[:b_r, :b_c] = src1Idx.read(b_r, b_c)
        o_r, o_c = min(a_r, b_r), min(a_c, b_c)
        if o_r and o_c:
            av, bv = np.asarray(src0Val.read(o_r, o_c)), np.asarray(src1Val.read(o_r, o_c))
            ca, cb = _cmp_view(av), _cmp_view(bv)
            take0 = ca > cb if is_max else ca < cb
            val[:o_r, :o_c] = np.where(take0, av, bv)
            idx[:o_r, :o_c] = np.where(take0, src0Idx.read(o_r, o_c), src1Idx.read(o_r, o_c))
        dstVal.write(val)
        dstIdx.write(idx)

    op, tie = (">", "src1 on ties") if is_max else ("<", "src1 on ties")
    impl.__doc__ = (
        f"(dstVal, dstIdx) = (src0Val, src0Idx) where both sources are valid and src0Val {op} "
        f"src1Val, else (src1Val, src1Idx) ({tie}); a copy of the valid source's pair where "
        "only one is valid; over dst's valid region. Only patterns where one source's valid "
        "region equals dst's and the other's does not exceed it are supported; a permissive "
        "machine accepts any and writes 0 where neither source is valid (the CPU simulator, "
        "as the TPART* instructions).")
    return instr(name, family="reduce", pipe=Pipe.V,
                 operands=(Opnd("dstVal", "tile", "out"), Opnd("src0Val", "tile"),
                           Opnd("src1Val", "tile"), Opnd("dstIdx", "tile", "out"),
                           Opnd("src0Idx", "tile"), Opnd("src1Idx", "tile")),
                 dtype_key=("dstVal", "dstIdx"),
                 static=(locs(["dstVal", "src0Val", "src1Val", "dstIdx", "src0Idx", "src1Idx"],
                              TileType.Vec),
                         same_dtype("dstVal", "src0Val", "src1Val"),
                         same_dtype("dstIdx", "src0Idx", "src1Idx")),
                 runtime=(_part_arg_runtime, _part_arg_pattern))(impl)


TPARTARGMAX = _declare_part_arg("TPARTARGMAX")
TPARTARGMIN = _declare_part_arg("TPARTARGMIN")

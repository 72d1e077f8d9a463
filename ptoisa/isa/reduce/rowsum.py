"""Row/column reductions."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ... import lazy, parallel, rowfuse
from ...enums import Pipe, TileType
from ...errors import RuntimeCheckError
from ...memory import Machine
from ...tile import Tile, TileSpec
from .. import planned
from ..registry import (
    Instr,
    Opnd,
    Sig,
    instr,
    locs,
    nd,
    same_dtype,
    sim_unchecked,
    sim_unchecked_type,
)
from ..rules import (
    reduction_valid,
    same_static_rows,
    tree_into,
    tree_into_plan,
    tree_reduce,
)
from ..spelling import Ptoas


def defer_row_reduce(m: Machine, dst: Tile, src: Tile,
                     values: Callable[[np.ndarray], np.ndarray]) -> bool:
    """dst = values(src's values), deferred (see ptoisa.rowfuse) when src's values are
    themselves deferred or read in place and dst is a whole column (a row reduction's
    result: rows x 1). False: nothing done (compute it now)."""
    s, d = src.spec, dst.spec
    if (src._vr, src._vc) != (s.rows, s.cols) or d.cols != 1 or d.rows != s.rows \
            or d.is_boxed or d.dtype.packed or not lazy.worth(m, src):
        return False
    kid = lazy.node_of(src)
    if kid is None:
        return False
    return lazy.defer(m, dst, rowfuse.node(rowfuse.reduction(values), (kid,),
                                              (*kid.shape[:-1], 1)))


def row_reduce_dst(sig: Sig) -> None:
    """dst is ND, or DN with exactly one column."""
    d = sig["dst"]
    if isinstance(d, TileSpec) and not (d.is_nd or (d.is_dn and d.cols == 1)):
        raise sig.fail(f"dst must be ND or DN with Cols == 1, got {d.layout_name} "
                       f"{d.rows}x{d.cols}")




@sim_unchecked
def row_reduce_runtime(ins: Instr, dst: Tile, src: Tile, *rest: Any, **kw: Any) -> None:
    """The page's run-time valid-region checks, on every target (the CPU simulator makes none:
    it writes src's valid rows of dst and leaves the rest)."""
    if src.valid_row == 0 or src.valid_col == 0:
        raise RuntimeCheckError(f"src valid region {src.valid_row}x{src.valid_col} is empty",
                                op=ins.mnemonic)
    if src.valid_row != dst.valid_row:
        raise RuntimeCheckError(
            f"src valid rows {src.valid_row} != dst valid rows {dst.valid_row}", op=ins.mnemonic)


def sequential_sum(x: np.ndarray, acc: type) -> np.ndarray:
    """Row sums added strictly left to right in ``acc`` (the CPU simulator's loop); rows are
    independent, so large inputs are split over the cores."""
    out = np.empty(x.shape[:-1], acc)
    lead, res = (x, out) if x.ndim > 2 else (x[None], out[None])  # split a leading axis

    cols = x.shape[-1]
    # short rows, many of them: one vectorised add per column (the same additions in the same
    # order as cumsum's, which runs one row at a time)
    by_column = 1 < cols <= 256 and x.size >= 256 * cols

    def part(lo: int, hi: int) -> None:
        with np.errstate(all="ignore"):
            if by_column:
                r = res[lo:hi]
                blk = lead[lo:hi]
                r[...] = blk[..., 0]
                for j in range(1, cols):
                    np.add(r, blk[..., j], out=r, dtype=acc)
            else:
                res[lo:hi] = np.cumsum(lead[lo:hi], axis=-1, dtype=acc)[..., -1]

    parallel.over_rows(part, lead.shape[0], x.size)
    return out




@instr("TROWSUM", family="reduce", pipe=Pipe.V, batched=True,
       ptoas=Ptoas(materialised={"tmp": "src"},
                   rules={"pto.trowsum": (reduction_valid(1, empty_marker=True),)}),
       operands=(Opnd("dst", "tile", "out"), Opnd("src", "tile"), Opnd("tmp", "tile", "scratch")),
       dtype_key=("src", "dst"),
       static=(locs(["dst", "src"], TileType.Vec), nd("src"), row_reduce_dst,
               sim_unchecked_type(same_dtype("dst", "src"))),
       static_for={"cpu": (same_static_rows,)},
       runtime=(row_reduce_runtime,),
       plan=lambda ins, m, vals, params: row_reduce_plan(m, vals, _row_sums(m, vals[0]),
                                                         _row_sums_into(m)))
def TROWSUM(m: Machine, dst: Tile, src: Tile, tmp: Tile) -> None:  # noqa: N802
    """dst[i, 0] = sum_j src[i, j] over src's valid region (only column 0 of dst is written).

    cpu: sequential sum, accumulating in f32 for f16/bf16 destinations and in the destination
    type otherwise (integers wrap). a2a3/a5: a pairwise tree in the element type, as the NPU's
    reduction instructions; integers wrap."""
    vr, vc = src.valid_shape
    if vr == 0 or vc == 0:
        return
    sums = _row_sums(m, dst)
    if not defer_row_reduce(m, dst, src, sums):
        dst.write(sums(np.asarray(src.read())))


def _row_sums(m: Machine, dst: Tile) -> Callable[[np.ndarray], np.ndarray]:
    """TROWSUM's maths: a source's values -> the row sums as dst's (..., rows, 1) values."""
    sequential = m.target.traits.reduce_order == "sequential"
    acc = np.float32 if dst.dtype.name in ("f16", "bf16") else dst.dtype.np
    out = dst.dtype.np

    def sums(x: np.ndarray) -> np.ndarray:
        if sequential:
            s = sequential_sum(x, acc)
        else:
            with m.errstate():
                s = tree_reduce(x, np.add, 0)
        return s.astype(out)[..., None]
    return sums


def _row_sums_into(m: Machine) -> Callable[[np.ndarray, np.ndarray], bool] | None:
    """(A planned TROWSUM) :func:`_row_sums`'s tree written into dst's ``(..., rows, 1)``
    view where :func:`rules.tree_into` takes the source (f32 / f64 rows of a power of two,
    short, no root a NaN; dst of src's type, as its sums are); None on a target that sums
    rows in order."""
    if m.target.traits.reduce_order == "sequential":
        return None
    # (the last source and out, their flat view, and the tree prepared for them once met
    # again: views the tiles keep while their storage stands, so each replay finds them; a
    # pair met once sums through rules.tree_into, no buffers of its own made)
    prep: list[Any] = [None, None, None, None]

    def into(x: np.ndarray, out: np.ndarray) -> bool:
        if prep[0] is not x or prep[1] is not out:
            prep[:] = x, out, out.reshape(-1) if out.flags.c_contiguous else out, None
            go = None
        else:
            go = prep[3]
            if go is None:
                go = prep[3] = tree_into_plan(x, np.add, prep[2]) or False
            if go is False:
                return False
        if m.quiet:  # (a launch's machine: numpy's warnings are off)
            return go() if go is not None else tree_into(x, np.add, prep[2])
        with np.errstate(all="ignore"):
            return go() if go is not None else tree_into(x, np.add, prep[2])
    return into


def row_reduce_plan(m: Machine, vals: list[Any], reduced: Callable[[np.ndarray], np.ndarray],
                    into: Callable[[np.ndarray, np.ndarray], bool] | None = None
                    ) -> Callable[[], bool] | None:
    """The planned form (Instr.plan, ptoisa/isa/planned.py) of a row reduction
    ``dst = reduced(src)`` whose dst is a whole column of src's rows (rows x 1): with both
    tiles whole, the run-time rules (src's valid region not empty, dst's valid rows src's)
    pass, and the entry computes ``reduced`` of src's values into dst (no deferred chain:
    src below rowfuse's size). ``into(src values, dst view)``: the same values written into
    dst's view where it can (True), else False (then ``reduced``, written whole: ``into``
    may have written dst's view, which shares no bytes with src's values)."""
    dst, src = vals[0], vals[1]
    if not (planned.plain(dst) and planned.plain(src)) or dst.spec.cols != 1 \
            or dst.spec.rows != src.spec.rows or lazy.worth(m, src):
        return None

    def call() -> bool:
        if m._lazy and not planned.settled(m):
            return False
        x = planned.values(src, m)
        out = planned.target(dst, m)
        if x is None or out is None:
            return False
        if into is not None and (m.apart or not lazy.may_share(x, out)) and into(x, out):
            planned.written(dst, m)
            return True
        r = reduced(x)
        planned.written(dst, m)
        out[...] = r
        return True
    return call

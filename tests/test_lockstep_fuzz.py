"""Random chains of vector instructions over a grid of blocks whose tiles' valid regions differ
by block (so a lockstep launch runs some instructions per block, on each block's part of its
tiles): lockstep and block-by-block launches must leave the bytes of plain machines run block
by block (no laziness, no batching)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ptoisa as pto
from ptoisa import BLayout, GlobalTensor, Tile, TileType

R, C = 8, 32
BLOCKS = 3
N = R * C

# op name -> how many full tiles it reads (from the 3 data tiles) and what it does
Op = Callable[[list[Tile], Tile, Tile, Tile, list[int]], None]
OPS: dict[str, Op] = {
    "add": lambda t, col, row, tmp, k: pto.TADD(t[k[0]], t[k[1]], t[k[2]]),
    "sub": lambda t, col, row, tmp, k: pto.TSUB(t[k[0]], t[k[1]], t[k[2]]),
    "mul": lambda t, col, row, tmp, k: pto.TMUL(t[k[0]], t[k[1]], t[k[2]]),
    "max": lambda t, col, row, tmp, k: pto.TMAX(t[k[0]], t[k[1]], t[k[2]]),
    "div": lambda t, col, row, tmp, k: pto.TDIV(t[k[0]], t[k[1]], t[k[2]]),
    "adds": lambda t, col, row, tmp, k: pto.TADDS(t[k[0]], t[k[1]], 0.25),
    "muls": lambda t, col, row, tmp, k: pto.TMULS(t[k[0]], t[k[1]], -1.5),
    "maxs": lambda t, col, row, tmp, k: pto.TMAXS(t[k[0]], t[k[1]], 0.0),
    "exp": lambda t, col, row, tmp, k: pto.TEXP(t[k[0]], t[k[1]]),
    "abs": lambda t, col, row, tmp, k: pto.TABS(t[k[0]], t[k[1]]),
    "neg": lambda t, col, row, tmp, k: pto.TNEG(t[k[0]], t[k[1]]),
    "relu": lambda t, col, row, tmp, k: pto.TRELU(t[k[0]], t[k[1]]),
    "mov": lambda t, col, row, tmp, k: pto.TMOV(t[k[0]], t[k[1]]),
    "rowsum": lambda t, col, row, tmp, k: pto.TROWSUM(col, t[k[0]], tmp),
    "rowmax": lambda t, col, row, tmp, k: pto.TROWMAX(col, t[k[0]], tmp),
    "colsum": lambda t, col, row, tmp, k: pto.TCOLSUM(row, t[k[0]]),
    "colmax": lambda t, col, row, tmp, k: pto.TCOLMAX(row, t[k[0]]),
    "rowexpandsub": lambda t, col, row, tmp, k: pto.TROWEXPANDSUB(t[k[0]], t[k[1]], col),
    "rowexpandmul": lambda t, col, row, tmp, k: pto.TROWEXPANDMUL(t[k[0]], t[k[1]], col),
    "colexpandadd": lambda t, col, row, tmp, k: pto.TCOLEXPANDADD(t[k[0]], t[k[1]], row),
    "expands": lambda t, col, row, tmp, k: pto.TEXPANDS(t[k[0]], 2.0),
}


def _ops() -> st.SearchStrategy[list[tuple[str, list[int]]]]:
    op = st.tuples(st.sampled_from(sorted(OPS)), st.lists(st.integers(0, 2), min_size=3,
                                                         max_size=3))
    return st.lists(op, min_size=1, max_size=12)


def _by_block(vals: list[int], b: Any) -> Any:
    """``vals[b % 3]`` as arithmetic on the block index (an int, per-block Lanes in lockstep,
    a symbolic index under pto.export): the quadratic through (0, v0), (1, v1), (2, v2)."""
    k = b % 3
    return vals[0] + k * (vals[1] - vals[0]) + (k * (k - 1) // 2) * (vals[2] - 2 * vals[1]
                                                                     + vals[0])


def _kernel(ops: list[tuple[str, list[int]]], rows: list[int], cols: list[int]) -> Any:
    """Three data tiles and the reduction tiles, all with valid rows / cols that depend on
    the block (``rows[b % 3]`` x ``cols[b % 3]``); each loads its block's rows of x, runs
    the ops, stores every tile."""
    def kernel(x: np.ndarray, out: np.ndarray) -> None:
        b = pto.get_block_idx()
        vr, vc = pto.Dyn(_by_block(rows, b)), pto.Dyn(_by_block(cols, b))
        ts = [Tile(TileType.Vec, np.float32, R, C, valid=(vr, vc)) for _ in range(3)]
        tmp = Tile(TileType.Vec, np.float32, R, C, valid=(vr, vc))
        col = Tile(TileType.Vec, np.float32, R, 1, BLayout.ColMajor, valid=(vr, 1))
        row = Tile(TileType.Vec, np.float32, 1, C, valid=(1, vc))

        def gv(arr: np.ndarray, k: int) -> GlobalTensor:
            return GlobalTensor(arr, (1, 1, 1, R, C), (arr.size,) * 3 + (C, 1),
                                offset=(b * 3 + k) * N)

        for k, t in enumerate(ts):
            pto.TLOAD(t, gv(x, k))
        pto.TROWMAX(col, ts[0], tmp)
        pto.TCOLMAX(row, ts[1])
        for name, k in ops:
            OPS[name](ts, col, row, tmp, k)
        for k, t in enumerate(ts):
            pto.TSTORE(gv(out, k), t)
    return kernel


def _extent(full: int) -> st.SearchStrategy[int]:
    """A valid extent: often the whole tile (then the per-block runs of an instruction take
    the whole-tile paths: loads read in place, deferred results), else any."""
    return st.one_of(st.just(full), st.integers(1, full))


def _inputs() -> tuple[np.ndarray, np.ndarray]:
    x = (np.random.default_rng(5).standard_normal(BLOCKS * 3 * N) * 2).astype(np.float32)
    x[::7] = np.abs(x[::7]) + 1  # (divisors away from 0 in places)
    return x, np.zeros_like(x)


@pytest.mark.parametrize("target", ["cpu", "a2a3"])
@settings(max_examples=300, deadline=None)
@given(ops=_ops(), rows=st.lists(_extent(R), min_size=3, max_size=3),
       cols=st.lists(_extent(C), min_size=3, max_size=3))
def test_valid_regions_by_block(target: str, ops: list[tuple[str, list[int]]], rows: list[int],
                                cols: list[int]) -> None:
    kernel = _kernel(ops, rows, cols)
    plain = _inputs()
    for blk in range(BLOCKS):
        # (eager calls outside a launch leave numpy's error state as it is: a chain over
        # poison (inf - inf) would warn, as the launches below would without their errstate)
        with pto.target(target) as m, np.errstate(all="ignore"):
            m.block_idx, m.block_num = blk, BLOCKS
            kernel(*plain)
    old = pto.Machine.LAZY_MIN_ELEMENTS
    pto.Machine.LAZY_MIN_ELEMENTS = 0
    try:
        for lockstep in (True, False):
            got = _inputs()
            with np.errstate(all="ignore"):
                pto.launch(kernel, *got, blocks=BLOCKS, target=target, lockstep=lockstep)
            assert got[1].tobytes() == plain[1].tobytes(), f"lockstep={lockstep}"
    finally:
        pto.Machine.LAZY_MIN_ELEMENTS = old


@settings(max_examples=40, deadline=None)
@given(ops=_ops(), rows=st.lists(_extent(R), min_size=3, max_size=3),
       cols=st.lists(_extent(C), min_size=3, max_size=3))
def test_valid_regions_by_block_exported(ops: list[tuple[str, list[int]]], rows: list[int],
                                         cols: list[int]) -> None:
    """The same chains through pto.export (valid extents as index arithmetic on the block
    index; its check compares the .pto run with the eager launch) and the program's run
    against plain machines."""
    kernel = _kernel(ops, rows, cols)
    plain = _inputs()
    for blk in range(BLOCKS):
        with pto.target("a2a3") as m, np.errstate(all="ignore"):
            m.block_idx, m.block_num = blk, BLOCKS
            kernel(*plain)
    with np.errstate(all="ignore"):
        text = pto.export(kernel, *_inputs(), blocks=BLOCKS, target="a2a3")
        got = _inputs()
        pto.load(text, target="a2a3").kernel(*got, blocks=BLOCKS)
    assert got[1].tobytes() == plain[1].tobytes()

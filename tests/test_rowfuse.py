"""Deferred chains of row-local instructions (ptoisa.rowfuse): computed in one pass of row
chunks, they must leave exactly the bytes the instructions leave one at a time, whatever reads
them first, on every target, in lockstep and block by block."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import ptoisa as pto
from ptoisa import BLayout, GlobalTensor, Tile, TileType, rowfuse

R, C = 8, 256


def _view(arr: np.ndarray, b: Any, rows: int = R, cols: int = C) -> GlobalTensor:
    n = rows * cols
    return GlobalTensor(arr, (1, 1, 1, rows, cols), (n, n, n, cols, 1), offset=b * n)


def _col() -> Tile:
    return Tile(TileType.Vec, np.float32, R, 1, BLayout.ColMajor)


def _vec() -> Tile:
    return Tile(TileType.Vec, np.float32, R, C)


def softmax(x: np.ndarray, out: np.ndarray, mx_out: np.ndarray, sm_out: np.ndarray,
            sums_first: bool = False) -> None:
    b = pto.get_block_idx()
    t, tmp, mx, sm = _vec(), _vec(), _col(), _col()
    pto.TLOAD(t, _view(x, b))
    pto.TROWMAX(mx, t, tmp)
    pto.TROWEXPANDSUB(t, t, mx)
    pto.TEXP(t, t)
    pto.TROWSUM(sm, t, tmp)
    if sums_first:  # the row sums are read before the tile that shares their exponent
        pto.TSTORE(_view(sm_out, b, R, 1), sm)
    pto.TROWEXPANDDIV(t, t, sm)
    pto.TSTORE(_view(out, b), t)
    pto.TSTORE(_view(mx_out, b, R, 1), mx)
    if not sums_first:
        pto.TSTORE(_view(sm_out, b, R, 1), sm)


def _tree_sum(x: np.ndarray) -> np.ndarray:
    """The NPU's pairwise halving sum of each row, in f32 (independent of ptoisa)."""
    while x.shape[-1] > 1:
        h = x.shape[-1] // 2
        x = (x[..., :h] + x[..., h:]).astype(np.float32)
    return x[..., 0]


def _reference(x: np.ndarray, target: str) -> tuple[np.ndarray, ...]:
    rows = x.reshape(-1, C)
    mx = rows.max(axis=1, keepdims=True)
    e = np.exp((rows - mx).astype(np.float32).astype(np.float64)).astype(np.float32)
    if target == "cpu":  # the simulator adds left to right
        sm = np.cumsum(e, axis=1, dtype=np.float32)[:, -1:]
    else:
        sm = _tree_sum(e)[:, None]
    return (e / sm).astype(np.float32), mx, sm


def _run(kernel: Callable[..., None], blocks: int, target: str, lockstep: bool, chains: bool,
         **kw: Any) -> tuple[np.ndarray, ...]:
    rng = np.random.default_rng(blocks)
    x = (rng.standard_normal(blocks * R * C) * 3).astype(np.float32)
    x[:4] = [0.0, -0.0, 50.0, -50.0]
    out = np.zeros_like(x)
    mx, sm = (np.zeros(blocks * R, np.float32) for _ in range(2))
    old = rowfuse.MIN_ELEMENTS
    rowfuse.MIN_ELEMENTS = 0 if chains else 1 << 62
    try:
        pto.launch(kernel, x, out, mx, sm, blocks=blocks, target=target, lockstep=lockstep,
                   **kw)
    finally:
        rowfuse.MIN_ELEMENTS = old
    return x, out, mx, sm


@pytest.mark.parametrize("sums_first", [False, True])
@pytest.mark.parametrize("lockstep", [True, False])
@pytest.mark.parametrize("target", ["cpu", "a2a3", "a5"])
def test_a_softmax_chain_in_one_pass_is_the_instructions_one_by_one(target, lockstep,
                                                                     sums_first, monkeypatch):
    """The chain is computed once (one pass, every value sharing a step alongside, whichever
    is read first), and leaves the bytes of the instructions one by one, which equal numpy's
    softmax with the NPU's (or the simulator's) summation order."""
    passes = []
    real = rowfuse._run

    def spy(roots, *args):
        passes.append(len(roots))
        return real(roots, *args)
    monkeypatch.setattr(rowfuse, "_run", spy)
    monkeypatch.setattr(pto.Machine, "LAZY_MIN_ELEMENTS", 0)
    blocks = 3

    def kernel(x, out, mx, sm):
        softmax(x, out, mx, sm, sums_first)
    fused = _run(kernel, blocks, target, lockstep, chains=True)
    per_block = 1 if lockstep else blocks
    assert passes == [3] * per_block  # the stored tile, its row max and row sum together
    passes.clear()
    plain = _run(kernel, blocks, target, lockstep, chains=False)
    assert not passes
    for a, b in zip(fused, plain, strict=True):
        assert a.tobytes() == b.tobytes()
    x, out, mx, sm = fused
    want_out, want_mx, want_sm = _reference(x, target)
    assert out.tobytes() == want_out.reshape(-1).tobytes()
    assert mx.tobytes() == want_mx.reshape(-1).tobytes()
    assert sm.tobytes() == want_sm.reshape(-1).tobytes()


def test_a_chain_stops_growing_and_stays_exact(monkeypatch):
    """A loop that keeps subtracting and exponentiating in place would chain without end: past
    rowfuse.MAX_NODES the operands are computed first, with the same values."""
    monkeypatch.setattr(pto.Machine, "LAZY_MIN_ELEMENTS", 0)

    def kernel(x, out, mx_out, sm_out):
        b = pto.get_block_idx()
        t, tmp, mx = _vec(), _vec(), _col()
        pto.TLOAD(t, _view(x, b))
        for _ in range(3 * rowfuse.MAX_NODES):
            pto.TROWMAX(mx, t, tmp)
            pto.TROWEXPANDSUB(t, t, mx)
            pto.TEXP(t, t)
        pto.TSTORE(_view(out, b), t)
        pto.TSTORE(_view(mx_out, b, R, 1), mx)
    for lockstep in (True, False):
        fused = _run(kernel, 2, "a2a3", lockstep, chains=True)
        plain = _run(kernel, 2, "a2a3", lockstep, chains=False)
        for a, b in zip(fused, plain, strict=True):
            assert a.tobytes() == b.tobytes()


@pytest.mark.parametrize("target", ["cpu", "a2a3"])
def test_a_chain_stored_over_its_own_input(target, monkeypatch):
    """In-place softmax: the result goes back where the rows were loaded from."""
    monkeypatch.setattr(pto.Machine, "LAZY_MIN_ELEMENTS", 0)

    def kernel(x, out, mx, sm):
        softmax(x, x, mx, sm)
    fused = _run(kernel, 2, target, True, chains=True)
    plain = _run(kernel, 2, target, True, chains=False)
    for a, b in zip(fused, plain, strict=True):
        assert a.tobytes() == b.tobytes()


def test_a_partial_valid_region_is_not_chained(monkeypatch):
    """Only whole tiles join a chain; a partial valid region takes the instructions' own
    paths (and the same values either way)."""
    monkeypatch.setattr(pto.Machine, "LAZY_MIN_ELEMENTS", 0)
    made = []
    real = rowfuse.Rows.__init__

    def spy(self, root):
        made.append(root)
        real(self, root)
    monkeypatch.setattr(rowfuse.Rows, "__init__", spy)

    def kernel(x, out, mx_out, sm_out):
        b = pto.get_block_idx()
        t = Tile(TileType.Vec, np.float32, R, C, valid=(R, C - 16))
        tmp = Tile(TileType.Vec, np.float32, R, C, valid=(R, C - 16))
        mx = _col()
        pto.TLOAD(t, _view(x, b, R, C - 16))
        pto.TROWMAX(mx, t, tmp)
        pto.TSTORE(_view(mx_out, b, R, 1), mx)
    fused = _run(kernel, 2, "a2a3", True, chains=True)
    assert not made
    plain = _run(kernel, 2, "a2a3", True, chains=False)
    assert fused[2].tobytes() == plain[2].tobytes()
    rows = fused[0][:2 * R * (C - 16)].reshape(-1, C - 16)  # (the views' row stride)
    assert fused[2].tobytes() == rows.max(axis=1).tobytes()

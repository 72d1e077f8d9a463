"""Work split over cores (ptoisa.parallel) gives exactly what one numpy call gives.

Large inputs only are split (MIN_ELEMENTS); these tests force the split on small ones."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ptoisa as pto
from ptoisa import TileType, dtypes, parallel
from ptoisa.isa.elementwise.common import wide_apply
from ptoisa.isa.reduce.rowsum import sequential_sum


@pytest.fixture(autouse=True)
def split_everything(monkeypatch):  # type: ignore[no-untyped-def]
    monkeypatch.setattr(parallel, "MIN_ELEMENTS", 0)
    monkeypatch.setattr(parallel, "workers", lambda: 2)


def _left_to_right(x: np.ndarray) -> np.ndarray:
    """Row sums by a plain loop in f32: s = ((x0 + x1) + x2) + ..."""
    s = x[..., 0].astype(np.float32)
    for j in range(1, x.shape[-1]):
        s = (s + x[..., j]).astype(np.float32)
    return s


@settings(max_examples=30, deadline=None)
@given(lead=st.integers(1, 9), rows=st.integers(1, 5), cols=st.integers(1, 40),
       seed=st.integers(0, 2**16))
def test_sequential_sum_is_left_to_right_when_split(lead, rows, cols, seed):
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal((lead, rows, cols)) * 10.0 ** rng.integers(-3, 4, (lead, rows, cols))
         ).astype(np.float32)
    np.testing.assert_array_equal(sequential_sum(x, np.float32), _left_to_right(x))
    np.testing.assert_array_equal(sequential_sum(x[0], np.float32), _left_to_right(x[0]))


def test_wide_exp_split_equals_exp_in_f64_rounded_once(monkeypatch):
    from ptoisa.isa.elementwise import common as elementwise_common

    monkeypatch.setattr(elementwise_common, "_CHUNK", 64)  # several chunks per part
    x = np.random.default_rng(1).standard_normal((7, 9, 33)).astype(np.float32) * 20
    out = np.empty_like(x)
    wide_apply(np.exp, x, dtypes.f32, out)
    np.testing.assert_array_equal(out, np.exp(x.astype(np.float64)).astype(np.float32))
    wide_apply(np.exp, x, dtypes.f32, x)  # in place: same rows in and out
    np.testing.assert_array_equal(x, out)


def test_into_splits_rows_and_broadcasts_the_rest():
    rng = np.random.default_rng(2)
    a = rng.standard_normal((6, 4, 16)).astype(np.float32)
    b = rng.standard_normal((6, 4, 1)).astype(np.float32)
    c = rng.standard_normal((16,)).astype(np.float32)
    out = np.empty_like(a)
    parallel.into(np.subtract, (a, b), out)
    np.testing.assert_array_equal(out, a - b)
    parallel.into(np.multiply, (a, c), out)
    np.testing.assert_array_equal(out, a * c)


def test_into_with_a_shifted_alias_matches_one_numpy_call():
    base = np.arange(8 * 16, dtype=np.float32).reshape(8, 16)
    want = base.copy()
    np.add(want[:-1], want[1:], out=want[1:])  # numpy buffers the overlap
    parallel.into(np.add, (base[:-1], base[1:]), base[1:])
    np.testing.assert_array_equal(base, want)


def _softmax(x, out):
    b = pto.get_block_idx()
    shape, stride = (1, 1, 1, 8, 64), (512, 512, 512, 64, 1)
    t = pto.Tile(TileType.Vec, np.float32, 8, 64)
    tmp = pto.Tile(TileType.Vec, np.float32, 8, 64)
    col = pto.Tile(TileType.Vec, np.float32, 8, 1, pto.BLayout.ColMajor)
    pto.TLOAD(t, pto.GlobalTensor(x, shape, stride, offset=b * 512))
    pto.TROWMAX(col, t, tmp)
    pto.TROWEXPANDSUB(t, t, col)
    pto.TEXP(t, t)
    pto.TROWSUM(col, t, tmp)
    pto.TROWEXPANDDIV(t, t, col)
    pto.TSTORE(pto.GlobalTensor(out, shape, stride, offset=b * 512), t)


@pytest.mark.parametrize("target", ["cpu", "a5"])
def test_split_lockstep_softmax_equals_block_by_block(target, monkeypatch):
    monkeypatch.setattr(pto.Machine, "LAZY_MIN_ELEMENTS", 0)
    x = np.random.default_rng(3).standard_normal((16 * 8, 64)).astype(np.float32)
    outs = []
    for lockstep in (True, False):
        out = np.zeros_like(x)
        pto.launch(_softmax, x, out, blocks=16, target=target, lockstep=lockstep)
        outs.append(out)
    np.testing.assert_array_equal(outs[0], outs[1])
    e = np.exp(x.astype(np.float64) - x.max(-1, keepdims=True))
    np.testing.assert_allclose(outs[0], e / e.sum(-1, keepdims=True), rtol=1e-5)


def _child_sum(q) -> None:  # type: ignore[no-untyped-def]
    x = np.arange(40, dtype=np.float32).reshape(4, 10)
    q.put(sequential_sum(x, np.float32).tolist())


def test_a_forked_child_gets_its_own_pool():
    import multiprocessing as mp

    x = np.ones((4, 10), np.float32)
    sequential_sum(x, np.float32)  # the parent's pool exists now
    ctx = mp.get_context("fork")
    q = ctx.Queue()
    p = ctx.Process(target=_child_sum, args=(q,))
    p.start()
    p.join(timeout=30)
    alive = p.is_alive()
    if alive:
        p.kill()
    assert not alive, "the forked child hung on the parent's thread pool"
    assert q.get(timeout=5) == [45.0, 145.0, 245.0, 345.0]

"""TMATMUL's two accumulation modes, and the lockstep path that shares operand blocks between
blocks of a launch (the GEMM pattern): results must not depend on how the blocks were run.

* "f32" (default): the k-sum is accumulated in f32 (the ISA: "accumulation uses the accumulator
  tile's native datatype"); checked against the f64 sum of the same exact products with the
  standard error bound of an f32 dot product, and bit-exact where f32 sums are exact.
* "exact": the f64 sum rounded once (bit-exact references are in test_matrix.py).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ptoisa as pto
from ptoisa import BLayout, GlobalTensor, SLayout, Tile, TileType
from ptoisa.isa import REGISTRY as R

U32 = 2.0 ** -24  # unit roundoff of f32


@pytest.fixture(autouse=True)
def _default_mode():  # type: ignore[no-untyped-def]
    prev = pto.set_matmul_accumulation("f32")
    yield
    pto.set_matmul_accumulation(prev)


def _mm(ab: str, av: np.ndarray, bv: np.ndarray, cin: np.ndarray | None = None) -> np.ndarray:
    m, k = av.shape
    n = bv.shape[1]
    a = pto.TileLeft(ab, 32, 64, valid=(m, k))
    b = pto.TileRight(ab, 64, 32, valid=(k, n))
    c = pto.TileAcc("f32", 32, 32, valid=(m, n))
    a.write(av)
    b.write(bv)
    if cin is None:
        R["TMATMUL"](c, a, b)
    else:
        c.write(cin)
        R["TMATMUL_ACC"](c, c, a, b)
    return c.numpy(True)


@settings(max_examples=40, deadline=None)
@given(m=st.integers(1, 32), k=st.integers(1, 64), n=st.integers(1, 32),
       ab=st.sampled_from(["f16", "bf16", "f32"]), tgt=st.sampled_from(["cpu", "a2a3", "a5"]),
       seed=st.integers(0, 2**16))
def test_f32_accumulation_is_within_the_f32_dot_product_bound(m, k, n, ab, tgt, seed):
    rng = np.random.default_rng(seed)
    npdt = pto.dtype(ab).np
    av = rng.standard_normal((m, k)).astype(np.float32).astype(npdt)
    bv = rng.standard_normal((k, n)).astype(np.float32).astype(npdt)
    with pto.target(tgt):
        got = _mm(ab, av, bv).astype(np.float64)
    a64, b64 = av.astype(np.float64), bv.astype(np.float64)
    exact = a64 @ b64
    # |fl(sum) - sum| <= k u sum|a||b| (+ one final rounding), products being exact
    bound = (k + 1) * U32 * (np.abs(a64) @ np.abs(b64)) + 1e-30
    assert (np.abs(got - exact) <= bound).all()


@pytest.mark.parametrize("ab", ["f16", "bf16", "f32"])
def test_f32_accumulation_is_the_host_f32_matmul(ab):
    rng = np.random.default_rng(1)
    npdt = pto.dtype(ab).np
    av = rng.standard_normal((20, 64)).astype(np.float32).astype(npdt)
    bv = rng.standard_normal((64, 24)).astype(np.float32).astype(npdt)
    cin = rng.standard_normal((20, 24)).astype(np.float32)
    with pto.target("cpu"):
        got = _mm(ab, av, bv)
        got_acc = _mm(ab, av, bv, cin)
    p32 = av.astype(np.float32) @ bv.astype(np.float32)
    np.testing.assert_array_equal(got, p32)
    np.testing.assert_array_equal(got_acc, p32 + cin)  # the k-sum, then C_in added in f32


@pytest.mark.parametrize("mode", ["f32", "exact"])
def test_sums_that_f32_holds_exactly_agree_bit_for_bit(mode):
    rng = np.random.default_rng(2)
    av = rng.integers(-8, 9, (32, 64)).astype(np.float16)
    bv = rng.integers(-8, 9, (64, 32)).astype(np.float16)
    pto.set_matmul_accumulation(mode)
    with pto.target("a5"):
        got = _mm("f16", av, bv)
    np.testing.assert_array_equal(got, av.astype(np.int64) @ bv.astype(np.int64))


def test_exact_mode_rounds_once_where_f32_sums_cannot():
    av = np.array([[2.0 ** 24, 1.0, -2.0 ** 24]], np.float32)
    bv = np.ones((3, 1), np.float32)
    pto.set_matmul_accumulation("exact")
    with pto.target("cpu"):
        assert _mm("f32", av, bv)[0, 0] == 1.0
    pto.set_matmul_accumulation("f32")
    with pto.target("cpu"):
        assert _mm("f32", av, bv)[0, 0] in (0.0, 1.0)  # the order of the f32 sum decides


def test_unknown_mode_is_rejected_and_the_mode_is_kept():
    with pytest.raises(ValueError, match="one of f32, exact"):
        pto.set_matmul_accumulation("f64")
    assert pto.set_matmul_accumulation("f32") == "f32"


# ---- lockstep GEMM: blocks sharing A / B panels ------------------------------------------------

T = 32


def _gemm_kernel(order: str, grid: int, ksteps: int):  # type: ignore[no-untyped-def]
    """Block b computes C[bi, bj] over ``ksteps`` K-steps; ``order`` maps b to (bi, bj):
    row-major, column-major, or a permutation that is not a grid."""
    n = grid * T
    kk = ksteps * T
    shape = (1, 1, 1, T, T)

    def kernel(a, b, c):
        blk = pto.get_block_idx()
        if order == "row":
            bi, bj = blk // grid, blk % grid
        elif order == "col":
            bi, bj = blk % grid, blk // grid
        else:  # a scrambled assignment: lanes still share panels, but not as a grid
            p = (blk * 5 + 3) % (grid * grid)
            bi, bj = p // grid, p % grid
        ta = Tile(TileType.Mat, np.float16, T, T, BLayout.ColMajor, None, SLayout.RowMajor)
        tb = Tile(TileType.Mat, np.float16, T, T, BLayout.ColMajor, None, SLayout.RowMajor)
        left = pto.TileLeft(np.float16, T, T)
        right = pto.TileRight(np.float16, T, T)
        acc = pto.TileAcc(np.float32, T, T)
        for k in range(ksteps):
            pto.TLOAD(ta, GlobalTensor(a, shape, (0, 0, 0, kk, 1), offset=bi * T * kk + k * T))
            pto.TLOAD(tb, GlobalTensor(b, shape, (0, 0, 0, n, 1), offset=k * T * n + bj * T))
            pto.TMOV(left, ta)
            pto.TMOV(right, tb)
            if k == 0:
                pto.TMATMUL(acc, left, right)
            else:
                pto.TMATMUL_ACC(acc, acc, left, right)
        pto.TSTORE(GlobalTensor(c, shape, (0, 0, 0, n, 1), offset=bi * T * n + bj * T), acc)
    return kernel


@pytest.fixture
def lazy_everywhere(monkeypatch):  # type: ignore[no-untyped-def]
    monkeypatch.setattr(pto.Machine, "LAZY_MIN_ELEMENTS", 0)


@pytest.mark.parametrize("order", ["row", "col", "scrambled"])
@pytest.mark.parametrize("mode", ["f32", "exact", "sequential"])
@pytest.mark.parametrize("target", ["cpu", "a5"])
def test_lockstep_gemm_equals_block_by_block(order, mode, target, lazy_everywhere):
    grid, ksteps = 3, 4
    rng = np.random.default_rng(3)
    a = rng.standard_normal((grid * T, ksteps * T)).astype(np.float16)
    b = rng.standard_normal((ksteps * T, grid * T)).astype(np.float16)
    pto.set_matmul_accumulation(mode)
    outs = []
    for lockstep in (True, False):
        c = np.zeros((grid * T, grid * T), np.float32)
        pto.launch(_gemm_kernel(order, grid, ksteps), a, b, c, blocks=grid * grid,
                   target=target, lockstep=lockstep)
        outs.append(c)
    np.testing.assert_array_equal(outs[0], outs[1])
    exact = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(outs[0], exact, rtol=1e-5, atol=1e-4)


def test_shared_panels_keep_load_time_values_when_gm_is_overwritten(lazy_everywhere):
    """Blocks at uneven offsets read GM in place; a later store over that GM must not change
    what they loaded (the load happened first)."""
    grid = 2
    rng = np.random.default_rng(4)
    a = rng.standard_normal((grid * T, T)).astype(np.float16)
    out = np.zeros((4, T, T), np.float16)
    shape = (1, 1, 1, T, T)

    def kernel(a, out):
        blk = pto.get_block_idx()
        src = GlobalTensor(a, shape, (0, 0, 0, T, 1), offset=(blk // 2) * T * T)
        t = Tile(TileType.Mat, np.float16, T, T, BLayout.ColMajor, None, SLayout.RowMajor)
        z = Tile(TileType.Mat, np.float16, T, T, BLayout.ColMajor, None, SLayout.RowMajor)
        pto.TLOAD(t, src)                       # blocks 0,1 share panel 0; 2,3 share panel 1
        pto.TLOAD(z, GlobalTensor(out, shape, (0, 0, 0, T, 1), offset=blk * T * T))
        pto.TSTORE(src, z)                      # overwrite the panels they read (with zeros)
        pto.TSTORE(GlobalTensor(out, shape, (0, 0, 0, T, 1), offset=blk * T * T), t)
    orig = a.copy()
    pto.launch(kernel, a, out, blocks=4)
    for blk in range(4):
        np.testing.assert_array_equal(out[blk], orig[(blk // 2) * T:(blk // 2 + 1) * T])
    assert not a.any()


# ---- the mode is a setting of the machine (and of a launch), not of the process -------------

def _differing_inputs() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """f32 inputs whose host f32 product (the "f32" mode, see above) and f64 sum rounded
    once (the "exact" mode) differ."""
    rng = np.random.default_rng(5)
    av = rng.standard_normal((16, 64)).astype(np.float32)
    bv = rng.standard_normal((64, 16)).astype(np.float32)
    f32 = av @ bv
    exact = (av.astype(np.float64) @ bv.astype(np.float64)).astype(np.float32)
    assert (f32 != exact).any()  # (the premise)
    return av, bv, f32, exact


def test_a_machine_and_a_launch_take_the_mode_as_a_setting():
    av, bv, f32, exact = _differing_inputs()
    with pto.target("cpu", matmul_accumulation="exact") as m:
        assert m.matmul_accumulation == "exact"
        np.testing.assert_array_equal(_mm("f32", av, bv)[:16, :16], exact)
        with pto.target("a5") as inner:  # a machine made while it is current starts from it
            assert inner.matmul_accumulation == "exact"
    with pto.target("cpu") as m:  # (the mode of the machine current around the test: f32)
        assert m.matmul_accumulation == "f32"
        np.testing.assert_array_equal(_mm("f32", av, bv)[:16, :16], f32)

    def kernel(a: np.ndarray, b: np.ndarray, out: np.ndarray) -> None:
        ta, tb = pto.TileLeft("f32", 16, 64), pto.TileRight("f32", 64, 16)
        tc = pto.TileAcc("f32", 16, 16)
        ma = Tile(TileType.Mat, np.float32, 16, 64, BLayout.ColMajor, None, SLayout.RowMajor)
        mb = Tile(TileType.Mat, np.float32, 64, 16, BLayout.ColMajor, None, SLayout.RowMajor)
        pto.TLOAD(ma, GlobalTensor(a, (1, 1, 1, 16, 64)))
        pto.TLOAD(mb, GlobalTensor(b, (1, 1, 1, 64, 16)))
        pto.TMOV(ta, ma)
        pto.TMOV(tb, mb)
        pto.TMATMUL(tc, ta, tb)
        pto.TSTORE(GlobalTensor(out, (1, 1, 1, 16, 16)), tc)

    for mode, want in (("exact", exact), ("f32", f32), (None, f32)):
        out = np.zeros((16, 16), np.float32)
        extra = {} if mode is None else {"matmul_accumulation": mode}
        pto.launch(kernel, av, bv, out, target="cpu", **extra)
        np.testing.assert_array_equal(out, want, err_msg=str(mode))
    prog = pto.load(pto.export(kernel, av, bv, np.zeros((16, 16), np.float32), target="cpu"),
                    target="cpu")
    for mode, want in (("exact", exact), (None, f32)):
        out = np.zeros((16, 16), np.float32)
        prog.run("kernel", av, bv, out, matmul_accumulation=mode)
        np.testing.assert_array_equal(out, want, err_msg=f".pto {mode}")
    prev = pto.set_matmul_accumulation("exact")  # the current machine's: launches inherit it
    try:
        for run in (lambda o: pto.launch(kernel, av, bv, o, target="cpu"),
                    lambda o: prog.run("kernel", av, bv, o)):
            out = np.zeros((16, 16), np.float32)
            run(out)
            np.testing.assert_array_equal(out, exact)
    finally:
        pto.set_matmul_accumulation(prev)


def test_setting_the_mode_inside_a_machine_scope_stays_there():
    outer = pto.memory.current()
    with pto.target("cpu"):
        assert pto.set_matmul_accumulation("exact") == "f32"
    assert outer.matmul_accumulation == "f32"


def test_an_unknown_mode_setting_is_rejected():
    with pytest.raises(pto.PtoError, match="matmul_accumulation must be one of f32, exact"):
        pto.target("cpu", matmul_accumulation="f64")

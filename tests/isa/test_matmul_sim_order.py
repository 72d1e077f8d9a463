"""The CPU simulator's accumulation order of the cube (issue #27), against references computed
independently of ptoisa:

* the f32 forms: ``include/pto/cpu/TMatmul.hpp`` sums ``std::fma(a, b, sum)`` over k from 0,
  then adds C_in (the _ACC forms) or the bias row in f32. The reference calls the C library's
  ``fmaf`` (correctly rounded by the C standard) element by element;
* the MX forms: the sum is f32 and each step adds the f64 product ``a * b * 2^sa * 2^sb`` in
  f64 before rounding to f32 (``float += double``): a numpy f64 loop written out per element.

On ``cpu`` TMATMUL_BIAS, the TGEMV forms and the MX forms take that order by default;
``matmul_accumulation="sequential"`` gives it to every form on every target.
"""

from __future__ import annotations

import ctypes
import ctypes.util

import ml_dtypes
import numpy as np
import pytest

import ptoisa as pto
from ptoisa import Tile, TileAcc, TileLeft, TileRight
from ptoisa.isa import REGISTRY as R

_LIBM = ctypes.util.find_library("m")
_FMAF = None
if _LIBM:
    _FMAF = ctypes.CDLL(_LIBM).fmaf
    _FMAF.restype = ctypes.c_float
    _FMAF.argtypes = [ctypes.c_float] * 3

needs_fmaf = pytest.mark.skipif(_FMAF is None, reason="no C library fmaf to compare with")


@pytest.fixture(autouse=True)
def _default_mode():  # type: ignore[no-untyped-def]
    prev = pto.set_matmul_accumulation("f32")
    yield
    pto.set_matmul_accumulation(prev)


def _fma_loop(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """sum = 0; for k: sum = fmaf(a[i, k], b[k, j], sum), one element at a time."""
    assert _FMAF is not None
    m, k = a.shape
    out = np.zeros((m, b.shape[1]), np.float32)
    for i in range(m):
        for j in range(b.shape[1]):
            s = 0.0
            for t in range(k):
                s = _FMAF(float(a[i, t]), float(b[t, j]), s)
            out[i, j] = s
    return out


def _tiles(m: int, k: int, n: int, av: np.ndarray, bv: np.ndarray
           ) -> tuple[Tile, Tile, Tile]:
    a = TileLeft("f32", 16, 64, valid=(m, k))
    b = TileRight("f32", 64, 32, valid=(k, n))
    c = TileAcc("f32", 16, 32, valid=(m, n))
    a.write(av)
    b.write(bv)
    return c, a, b


def _wide(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    """f32 values over many binades, so that the f32 sums round often."""
    return (rng.standard_normal(shape) * 2.0 ** rng.integers(-12, 12, shape)).astype(np.float32)


@needs_fmaf
@pytest.mark.parametrize("seed", range(3))
def test_cpu_bias_and_gemv_forms_sum_as_the_simulator(seed: int) -> None:
    rng = np.random.default_rng(seed)
    m, k, n = 5, 57, 19
    av, bv = _wide(rng, (m, k)), _wide(rng, (k, n))
    bias = _wide(rng, (1, n))
    cin = _wide(rng, (1, n))
    ref = _fma_loop(av, bv)
    with pto.target("cpu"):
        c, a, b = _tiles(m, k, n, av, bv)
        bt = Tile("Bias", "f32", 1, 32, valid=(1, n))
        bt.write(bias)
        R["TMATMUL_BIAS"](c, a, b, bt)
        np.testing.assert_array_equal(c.numpy(True), ref + bias)   # the sum, then + bias in f32
        c1, a1, b1 = _tiles(1, k, n, av[:1], bv)
        R["TGEMV"](c1, a1, b1)
        np.testing.assert_array_equal(c1.numpy(True), ref[:1])
        R["TGEMV_BIAS"](c1, a1, b1, bt)
        np.testing.assert_array_equal(c1.numpy(True), ref[:1] + bias)
        ci = TileAcc("f32", 16, 32, valid=(1, n))
        ci.write(cin)
        R["TGEMV_ACC"](c1, ci, a1, b1)
        np.testing.assert_array_equal(c1.numpy(True), cin + ref[:1])  # C_in + sum, in f32
        # the plain forms keep the host's f32 BLAS on cpu (speed), unless asked
        R["TMATMUL"](c, a, b)
        np.testing.assert_array_equal(c.numpy(True), av @ bv)
    with pto.target("cpu", matmul_accumulation="sequential"):
        c, a, b = _tiles(m, k, n, av, bv)
        R["TMATMUL"](c, a, b)
        np.testing.assert_array_equal(c.numpy(True), ref)


@needs_fmaf
@pytest.mark.parametrize("tgt", ["a2a3", "a5"])
def test_sequential_mode_on_the_npu_targets(tgt: str) -> None:
    rng = np.random.default_rng(11)
    av, bv = _wide(rng, (4, 33)), _wide(rng, (33, 7))
    with pto.target(tgt, matmul_accumulation="sequential"):
        c, a, b = _tiles(4, 33, 7, av, bv)
        cin = TileAcc("f32", 16, 32, valid=(4, 7))
        cin.write(np.full((4, 7), 0.1, np.float32))
        R["TMATMUL_ACC"](c, cin, a, b)
        np.testing.assert_array_equal(c.numpy(True), np.float32(0.1) + _fma_loop(av, bv))


def test_double_rounding_is_avoided() -> None:
    """1 + a*b with a*b = 2^-24 + 2^-60: the f64 sum rounds to 1 + 2^-24, an f32 tie that
    would round to 1.0; the fused result rounds up (hand-computed; the f32 product alone is
    2^-24, so the BLAS order gives 1.0)."""
    a1 = np.float32(1 + 2.0 ** -12)
    b1 = np.float32(2.0 ** -24 * (1 - 2.0 ** -12 + 2.0 ** -24))
    assert float(a1) * float(b1) == 2.0 ** -24 + 2.0 ** -60  # exact in f64
    av = np.array([[1.0, a1]], np.float32)
    bv = np.array([[1.0], [b1]], np.float32)
    with pto.target("cpu"):
        c, a, b = _tiles(1, 2, 1, av, bv)
        R["TGEMV"](c, a, b)
        assert c.numpy(True)[0, 0] == np.float32(1 + 2.0 ** -23)
    with pto.target("a5"):
        c, a, b = _tiles(1, 2, 1, av, bv)
        R["TGEMV"](c, a, b)
        assert c.numpy(True)[0, 0] == np.float32(1.0)


@needs_fmaf
def test_sums_in_the_f32_subnormal_range() -> None:
    """Products and sums below 2^-126, where f32 ties are not at a fixed bit of the f64 sum."""
    rng = np.random.default_rng(21)
    av = (rng.standard_normal((1, 64)) * 2.0 ** rng.integers(-80, -60, (1, 64)))
    bv = (rng.standard_normal((64, 16)) * 2.0 ** rng.integers(-80, -60, (64, 16)))
    av, bv = av.astype(np.float32), bv.astype(np.float32)
    with pto.target("cpu"):
        c, a, b = _tiles(1, 64, 16, av, bv)
        R["TGEMV"](c, a, b)
        np.testing.assert_array_equal(c.numpy(True).view(np.uint32),
                                      _fma_loop(av, bv).view(np.uint32))


def test_the_forms_follow_the_trait_not_the_target_name() -> None:
    """An a5 variant that lists TMATMUL in ``mad_sequential`` runs the simulator's loop for it
    (the double-rounding example above); TGEMV, not listed, keeps the BLAS order."""
    from ptoisa.targets import get_target

    variant = get_target("a5").derive("a5s", traits={"mad_sequential": frozenset({"TMATMUL"})})
    a1 = np.float32(1 + 2.0 ** -12)
    b1 = np.float32(2.0 ** -24 * (1 - 2.0 ** -12 + 2.0 ** -24))
    av = np.array([[1.0, a1]], np.float32)
    bv = np.array([[1.0], [b1]], np.float32)
    with pto.target(variant):
        c, a, b = _tiles(1, 2, 1, av, bv)
        R["TMATMUL"](c, a, b)
        assert c.numpy(True)[0, 0] == np.float32(1 + 2.0 ** -23)
        R["TGEMV"](c, a, b)
        assert c.numpy(True)[0, 0] == np.float32(1.0)


def test_overflow_keeps_the_sign_of_the_first_infinity() -> None:
    """-3e38 * 1 twice reaches -inf; a later +3e38 cannot bring it back: -inf, where an order
    that sums the positive and the negative halves apart gives inf - inf = NaN."""
    big = np.float32(3e38)
    av = np.array([[-big, -big, big, big]], np.float32)
    bv = np.ones((4, 1), np.float32)
    with pto.target("cpu"):
        c, a, b = _tiles(1, 4, 1, av, bv)
        R["TGEMV"](c, a, b)
        assert c.numpy(True)[0, 0] == -np.inf


@needs_fmaf
def test_fma_emulation_on_ties_and_subnormals() -> None:
    """ptoisa's vectorised f32 fma against the C library's on values made to hit f32 ties
    after the f64 addition, and results in the f32 subnormal range."""
    from ptoisa.isa.matrix.matmul import _fma_f32

    rng = np.random.default_rng(5)
    n = 4000
    acc = (rng.integers(1, 1 << 24, n) * 2.0 ** rng.integers(-30, 10, n)).astype(np.float32)
    # products a*b = (ulp(acc)/2) * (1 +- 2^-j): the f64 sum sits on or next to an f32 tie
    e = np.floor(np.log2(np.abs(acc.astype(np.float64)))) - 24
    j = rng.integers(12, 24, n)
    sign = rng.choice([-1.0, 1.0], n)
    a = (1 + sign * 2.0 ** -j).astype(np.float32)
    b = (2.0 ** e * (1 - sign * 2.0 ** -j)).astype(np.float32)
    tiny_a = (rng.standard_normal(n) * 2.0 ** -70).astype(np.float32)
    tiny_b = (rng.standard_normal(n) * 2.0 ** -70).astype(np.float32)
    tiny_c = (rng.standard_normal(n) * 2.0 ** -140).astype(np.float32)
    # FLT_MAX + (2^103 - 2^73): the f64 sum is the tie between FLT_MAX and 2^128 (which rounds
    # to inf); the exact sum is below it, so the fma is FLT_MAX
    fmax = np.finfo(np.float32).max
    edge = (np.array([1 + 2.0 ** -15], np.float32), np.array([2.0 ** 103 * (1 - 2.0 ** -15)],
                                                             np.float32), np.array([fmax]))
    assert _fma_f32(edge[0].astype(np.float64) * edge[1], edge[2])[0] == fmax
    for x, y, z in ((a, b, acc), (a, -b, -acc), (tiny_a, tiny_b, tiny_c), edge):
        got = _fma_f32(x.astype(np.float64) * y.astype(np.float64), z)
        ref = np.array([_FMAF(float(p), float(q), float(r)) for p, q, r in zip(x, y, z,
                                                                               strict=True)],
                       np.float32)
        np.testing.assert_array_equal(got.view(np.uint32), ref.view(np.uint32))
    # the naive f64 sum does differ on such inputs (the test can see the difference)
    naive = (a.astype(np.float64) * b.astype(np.float64) + acc).astype(np.float32)
    assert (naive != _fma_f32(a.astype(np.float64) * b.astype(np.float64), acc)).any()


# ---- MX ----------------------------------------------------------------------------------------

def _mx_case(rng: np.random.Generator, m: int, k: int, n: int
             ) -> tuple[Tile, Tile, Tile, Tile, Tile, np.ndarray]:
    g = -(-k // 32)
    a = TileLeft("f8E4M3", 16, 64, valid=(m, k))
    b = TileRight("f8E5M2", 64, 32, valid=(k, n))
    sa = Tile("ScaleLeft", "f8E8M0", 16, 2, "RowMajor", (m, g), "RowMajor", 32)
    sb = Tile("ScaleRight", "f8E8M0", 2, 32, "ColMajor", (g, n), "ColMajor", 32)
    c = TileAcc("f32", 16, 32, valid=(m, n))
    # finite codes only (0x7F / 0xFF of E4M3 and the exponent-31 codes of E5M2 are NaN/inf)
    ac = rng.integers(0, 0x7F, (m, k)).astype(np.uint8) | \
        (rng.integers(0, 2, (m, k)) << 7).astype(np.uint8)
    bc = rng.integers(0, 0x7C, (k, n)).astype(np.uint8) | \
        (rng.integers(0, 2, (k, n)) << 7).astype(np.uint8)
    ea = rng.integers(100, 150, (m, g)).astype(np.uint8)
    eb = rng.integers(100, 150, (g, n)).astype(np.uint8)
    a.write(ac.view(ml_dtypes.float8_e4m3fn))
    b.write(bc.view(ml_dtypes.float8_e5m2))
    sa.write(ea.view(ml_dtypes.float8_e8m0fnu))
    sb.write(eb.view(ml_dtypes.float8_e8m0fnu))
    av = ac.view(ml_dtypes.float8_e4m3fn).astype(np.float64)
    bv = bc.view(ml_dtypes.float8_e5m2).astype(np.float64)
    ref = np.zeros((m, n), np.float32)
    for i in range(m):
        for j in range(n):
            s = np.float32(0)
            for t in range(k):
                scale = 2.0 ** (int(ea[i, t // 32]) - 127) * 2.0 ** (int(eb[t // 32, j]) - 127)
                s = np.float32(np.float64(s) + av[i, t] * bv[t, j] * scale)
            ref[i, j] = s
    return c, a, sa, b, sb, ref


@pytest.mark.parametrize("seed", range(2))
def test_cpu_mx_adds_each_scaled_product_to_an_f32_sum(seed: int) -> None:
    rng = np.random.default_rng(100 + seed)
    with pto.target("cpu"):
        c, a, sa, b, sb, ref = _mx_case(rng, 6, 64, 9)
        R["TMATMUL_MX"](c, a, sa, b, sb)
        np.testing.assert_array_equal(c.numpy(True), ref)
        bias = Tile("Bias", "f32", 1, 32, valid=(1, 9))
        bias.write(np.full((1, 9), 0.3, np.float32))
        R["TMATMUL_MX"](c, a, sa, b, sb, bias)
        np.testing.assert_array_equal(c.numpy(True), ref + np.float32(0.3))
        cin = TileAcc("f32", 16, 32, valid=(6, 9))
        cin.write(np.full((6, 9), 7, np.float32))
        R["TMATMUL_MX"](c, cin, a, sa, b, sb)
        np.testing.assert_array_equal(c.numpy(True), np.float32(7) + ref)
        c1, a1, sa1, b1, sb1, ref1 = _mx_case(rng, 1, 64, 9)
        R["TGEMV_MX"](c1, a1, sa1, b1, sb1)
        np.testing.assert_array_equal(c1.numpy(True), ref1)


def test_a5_mx_rounds_the_exact_sum_once() -> None:
    rng = np.random.default_rng(7)
    with pto.target("a5"):
        c, a, sa, b, sb, seq = _mx_case(rng, 6, 64, 9)
        R["TMATMUL_MX"](c, a, sa, b, sb)
        got = c.numpy(True)
    av = np.asarray(a.read(6, 64)).astype(np.float64)
    bv = np.asarray(b.read(64, 9)).astype(np.float64)
    ea = np.asarray(sa.read(6, 2)).view(np.uint8).astype(np.float64)
    eb = np.asarray(sb.read(2, 9)).view(np.uint8).astype(np.float64)
    grp = np.arange(64) // 32
    exact = (av * 2.0 ** (ea[:, grp] - 127)) @ (bv * 2.0 ** (eb[grp, :] - 127))
    np.testing.assert_array_equal(got, exact.astype(np.float32))
    assert (got != seq).any()  # the inputs tell the two orders apart

"""Arithmetic where cpu follows the upstream CPU simulator and the NPU targets keep ptoisa's
rule (docs/cpu_sim_differences.md): f16 ternary adds rounded once, TFUSEDMULADD f32 rounded
twice, the sign of zero remainders, NaN in TMAX/TMIN. References are Python scalar
arithmetic written here from the simulator source (include/pto/cpu/ElementOp.h) and the ISA
pages, never the code under test."""

from __future__ import annotations

import math

import numpy as np
import pytest

import ptoisa as pto
import ptoisa.isa.elementwise.unary_binary as E
import ptoisa.isa.tile_scalar.scalar as S
from ptoisa.memory import pop
from ptoisa.targets import get_target
from ptoisa.tile import Tile

TARGETS = ("cpu", "a2a3", "a5")


@pytest.fixture(params=TARGETS)
def tgt(request: pytest.FixtureRequest):  # type: ignore[no-untyped-def]
    m = pto.target(request.param)
    yield request.param
    pop(m)


def legal(op: str, dt: str, target: str) -> bool:
    r = get_target(target).legality.get(op)
    return r is not None and any(getattr(d, "name", None) == dt for d in r.dtypes)


def vec(dt: str, data: list[float] | np.ndarray, cols: int = 32) -> Tile:
    a = np.resize(np.asarray(data, dtype=np.float64), (2, cols))
    np_t = {"f16": np.float16, "f32": np.float32}[dt]
    return Tile("Vec", dt, 2, cols).load_numpy(a.astype(np_t))


def f32(x: float) -> float:
    return float(np.float32(x))


def f16(x: float) -> float:
    return float(np.float16(x))


# 1 + 2^-11 is a tie in f16 (to even: 1); 1 + 2^-11 + 2^-11 = 1 + 2^-10 is exact
TIE = 2.0 ** -11
A = [1.0, 1.0, -1.0, 2048.0, 0.5, 3.0]
B = [TIE, -TIE, -TIE, 1.0, 2.0 ** -12, 0.25]
C = [TIE, -TIE, -TIE, 1.0, 2.0 ** -12, -0.125]


@pytest.mark.parametrize("op", ["TADDC", "TSUBC", "TADDSC", "TSUBSC"])
def test_f16_ternary_adds_round_once_on_cpu(tgt, op):  # type: ignore[no-untyped-def]
    if not legal(op, "f16", tgt):  # the ternary adds are the simulator's (cpu only today)
        return
    sub = op.startswith("TSUB")
    scalar = op.endswith("SC")
    bs = [-b for b in B] if sub else B  # src0 - (-b) + c: the same sums as the adds
    rows = []
    for a, b, c in zip(A, B, C, strict=True):
        b2 = b
        if tgt == "cpu":  # C++ on half: each operation in float, f16 once at the end
            rows.append(f16(f32(f32(a + b2) + c)))
        else:  # every operation rounded to f16
            rows.append(f16(f16(a + b2) + c))
    dst = Tile("Vec", "f16", 2, 32)
    if scalar:
        for i, (a, b, c) in enumerate(zip(A, B, C, strict=True)):
            getattr(S, op)(dst, vec("f16", [a]), bs[i], vec("f16", [c]))
            assert float(dst.numpy()[0, 0]) == rows[i], (op, a, b, c)
    else:
        getattr(E, op)(dst, vec("f16", A), vec("f16", bs), vec("f16", C))
        got = [float(v) for v in dst.numpy()[0, :6]]
        assert got == rows
    if tgt == "cpu":
        assert rows[0] == 1.0 + 2.0 ** -10  # the difference the two rules make
    else:
        assert rows[0] == 1.0


def test_f32_fusedmuladd_rounds_twice_on_cpu(tgt):  # type: ignore[no-untyped-def]
    # a = d = 1 + 2^-12: a*d = 1 + 2^-11 + 2^-24, a tie in f32 that rounds to 1 + 2^-11, so
    # a*d - 1 is 2^-11 on cpu; fused, 2^-11 + 2^-24 (exact in f32)
    a = d = 1.0 + 2.0 ** -12
    b = -1.0
    exact = a * d  # exact in f64 (48 significant bits)
    want = f32(f32(exact) + b) if tgt == "cpu" else f32(exact + b)
    dst = vec("f32", [d])
    E.TFUSEDMULADD(dst, vec("f32", [a]), vec("f32", [b]))
    assert float(dst.numpy()[0, 0]) == want
    assert (want == 2.0 ** -11) == (tgt == "cpu")


def _sim_rem(x: float, s: float) -> float:
    """include/pto/cpu/ElementOp.h OP_REM / OP_REMS: fmod, plus s when signs differ and != 0."""
    r = math.fmod(x, s)
    if (x >= 0) != (s >= 0) and r != 0:
        r += s
    return r


@pytest.mark.parametrize("dt", ["f32", "f16"])
def test_zero_remainder_sign(tgt, dt):  # type: ignore[no-untyped-def]
    if not legal("TREMS", dt, tgt):
        return
    xs = [4.0, -4.0, 0.0, -0.0, 3.0, -3.0, 5.5, -5.5]
    for s in (-2.0, 2.0, -1.5):
        dst = Tile("Vec", dt, 2, 32)
        S.TREMS(dst, vec(dt, xs), s, Tile("Vec", dt, 2, 32))
        got = dst.numpy()[0, :8].astype(np.float64)
        dst2 = Tile("Vec", dt, 2, 32)
        E.TREM(dst2, vec(dt, xs), vec(dt, [s]), Tile("Vec", dt, 2, 32))
        got2 = dst2.numpy()[0, :8].astype(np.float64)
        for x, g, g2 in zip(xs, got, got2, strict=True):
            # cpu: the simulator's rule; NPUs: floor remainder, a zero takes the divisor's sign
            want = _sim_rem(x, s) if tgt == "cpu" else math.copysign(0.0, s) \
                if math.fmod(x, s) == 0 else x - math.floor(x / s) * s
            for v in (g, g2):
                assert v == want and math.copysign(1, v) == math.copysign(1, want), (x, s, v)


@pytest.mark.parametrize("dt", ["f32", "f16"])
def test_max_min_nan_operand_order(tgt, dt):  # type: ignore[no-untyped-def]
    a = [np.nan, 1.0, np.nan, -0.0, 0.0]
    b = [1.0, np.nan, np.nan, 0.0, -0.0]
    for op in ("TMAX", "TMIN"):
        dst = Tile("Vec", dt, 2, 32)
        getattr(E, op)(dst, vec(dt, a), vec(dt, b))
        got = dst.numpy()[0, :5].astype(np.float64)
        if tgt == "cpu":  # std::max(a, b) = a < b ? b : a; std::min(a, b) = b < a ? b : a
            want = [(y if x < y else x) if op == "TMAX" else (y if y < x else x)
                    for x, y in zip(a, b, strict=True)]
        else:  # NaN wins
            want = [math.nan if math.isnan(x) or math.isnan(y) else
                    (max if op == "TMAX" else min)(x, y) for x, y in zip(a, b, strict=True)]
        for g, w in zip(got[:3], want[:3], strict=True):
            assert (math.isnan(g) and math.isnan(w)) or g == w, (op, got, want)
        if tgt == "cpu":  # equal zeros: src0 is kept
            assert [math.copysign(1, g) for g in got[3:]] == [-1.0, 1.0]


@pytest.mark.parametrize("target", ["cpu", "a2a3", "a5"])
@pytest.mark.parametrize("op", ["TEXTRACT", "TINSERT"])
def test_fixpipe_relu_of_nan(target, op):
    """ReLU in an Acc -> Mat move: the CPU simulator's x > 0 ? x : 0 gives 0 for NaN; the
    NPU targets keep max(x, 0) with NaN propagating (the pages are silent on NaN)."""
    from ptoisa import BLayout, SLayout, Tile, TileType

    if (op, target) == ("TINSERT", "a2a3"):
        pytest.skip("a2a3's TINSERT writes f32 accumulators as f16/bf16 only")
    x = np.arange(256, dtype=np.float32).reshape(16, 16) - 100
    x[0, 0], x[1, 1], x[2, 2] = np.nan, -np.inf, np.inf
    with pto.target(target):
        acc = Tile(TileType.Acc, np.float32, 16, 16, BLayout.ColMajor, None, SLayout.RowMajor,
                   fractal=1024)
        acc.load_numpy(x)
        mat = Tile(TileType.Mat, np.float32, 16, 16, BLayout.ColMajor, None, SLayout.RowMajor)
        if op == "TEXTRACT":
            pto.TEXTRACT(mat, acc, 0, 0, reluMode=pto.ReluPreMode.NormalRelu)
        else:
            mat.load_numpy(np.zeros((16, 16), np.float32))
            pto.TINSERT(mat, acc, 0, 0, reluMode=pto.ReluPreMode.NormalRelu)
        got = mat.numpy()
    want = np.where(x > 0, x, 0).astype(np.float32)  # x > 0 ? x : 0
    if target != "cpu":
        want[0, 0] = np.nan  # max(NaN, 0) keeps the NaN
    np.testing.assert_array_equal(got, want)

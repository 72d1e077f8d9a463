"""TCVT (rounding and saturation modes, fp4) and the predicate-mask instructions TCMP/TCMPS/
TSEL/TSELS, against references written from the manual pages and model.md sections 7-8."""

from __future__ import annotations

import math
from fractions import Fraction

import ml_dtypes
import numpy as np
import pytest

from ptoisa.enums import CmpMode, RoundMode, SaturationMode
from ptoisa.errors import IllegalInstruction, PtoError, RuntimeCheckError, UnsupportedType
from ptoisa.isa.elementwise.compare import TCMP, TSEL
from ptoisa.isa.elementwise.cvt import TCVT
from ptoisa.isa.tile_scalar.compare import TCMPS, TSELS
from ptoisa.memory import is_poison, pop
from ptoisa.memory import target as make_target
from ptoisa.tile import Dyn, Tile

TARGETS = ["cpu", "a2a3", "a5"]
RNG = np.random.default_rng(5)


@pytest.fixture(params=TARGETS)
def tgt(request: pytest.FixtureRequest):  # type: ignore[no-untyped-def]
    m = make_target(request.param)
    yield request.param
    pop(m)


def vec(dt: str, rows: int, cols: int, data=None, valid=None) -> Tile:  # type: ignore[no-untyped-def]
    t = Tile("Vec", dt, rows, cols, valid=valid)
    if data is not None:
        t.load_numpy(np.asarray(data))
    return t


# ---- reference rounding: exact rationals against the sorted table of all values ------------

_F16 = np.arange(1 << 16, dtype=np.uint16).view(np.float16)
_F16 = np.unique(_F16[np.isfinite(_F16)].astype(np.float64))


def ref_round_f16(x: float, mode: RoundMode) -> float:
    i = int(np.searchsorted(_F16, x))
    if i < len(_F16) and _F16[i] == x:
        return x
    lo, hi = float(_F16[i - 1]), float(_F16[i])
    fx = Fraction(x)
    dl, dh = fx - Fraction(lo), Fraction(hi) - fx
    even_lo = int(np.float16(lo).view(np.uint16)) % 2 == 0
    if mode is RoundMode.CAST_FLOOR:
        return lo
    if mode is RoundMode.CAST_CEIL:
        return hi
    if mode is RoundMode.CAST_TRUNC:
        return lo if x > 0 else hi
    if mode is RoundMode.CAST_ODD:
        return hi if even_lo else lo
    if dl != dh:
        return lo if dl < dh else hi
    if mode is RoundMode.CAST_ROUND:
        return hi if x > 0 else lo
    return lo if even_lo else hi


def ref_round_int(x: float, mode: RoundMode) -> int:
    fx = Fraction(x)
    fl = math.floor(fx)
    frac = fx - fl
    if mode is RoundMode.CAST_FLOOR:
        return fl
    if mode is RoundMode.CAST_CEIL:
        return math.ceil(fx)
    if mode in (RoundMode.CAST_TRUNC, RoundMode.CAST_NONE):
        return math.trunc(fx)
    if frac != Fraction(1, 2):
        return fl if frac < Fraction(1, 2) else fl + 1
    if mode is RoundMode.CAST_ROUND:
        return fl + 1 if x > 0 else fl
    if mode is RoundMode.CAST_ODD:
        return fl if fl % 2 else fl + 1
    return fl if fl % 2 == 0 else fl + 1


MODES = [RoundMode.CAST_RINT, RoundMode.CAST_ROUND, RoundMode.CAST_FLOOR, RoundMode.CAST_CEIL,
         RoundMode.CAST_TRUNC, RoundMode.CAST_ODD]


def _f32_samples() -> np.ndarray:
    ties = (np.arange(-20, 20) + 0.5) * 2.0 ** -10  # exact f16 midpoints
    rnd = RNG.uniform(-100, 100, 216)
    return np.concatenate([ties, rnd]).astype(np.float32).reshape(8, 32)


@pytest.mark.parametrize("mode", MODES)
def test_tcvt_f32_to_f16_modes(tgt, mode):  # type: ignore[no-untyped-def]
    x = _f32_samples()
    dst = vec("f16", 8, 32)
    TCVT(dst, vec("f32", 8, 32, x), mode)
    ref = np.array([ref_round_f16(float(v), mode) for v in x.reshape(-1)]).reshape(8, 32)
    np.testing.assert_array_equal(dst.numpy().astype(np.float64), ref)


@pytest.mark.parametrize("mode", MODES + [RoundMode.CAST_NONE])
def test_tcvt_f32_to_i32_modes(tgt, mode):  # type: ignore[no-untyped-def]
    x = np.concatenate([np.arange(-16, 16) * 0.5, RNG.uniform(-1e4, 1e4, 224)])
    x = x.astype(np.float32).reshape(8, 32)
    dst = vec("i32", 8, 32)
    TCVT(dst, vec("f32", 8, 32, x), mode, SaturationMode.ON)
    ref = np.array([ref_round_int(float(v), mode) for v in x.reshape(-1)]).reshape(8, 32)
    np.testing.assert_array_equal(dst.numpy(), ref)


def test_tcvt_saturation(tgt):  # type: ignore[no-untyped-def]
    x = np.tile(np.array([300.0, -300.0, 70000.0, -1e10, 1e10, 5.5, -5.5, 127.0], np.float32),
                (8, 4))
    dst = vec("i16", 8, 32)
    TCVT(dst, vec("f32", 8, 32, x), RoundMode.CAST_TRUNC, SaturationMode.ON)
    np.testing.assert_array_equal(dst.numpy()[0, :8], [300, -300, 32767, -32768, 32767, 5, -5,
                                                       127])
    TCVT(dst, vec("f32", 8, 32, x), RoundMode.CAST_TRUNC, SaturationMode.OFF)
    row = dst.numpy()[0, :8]
    if tgt == "cpu":  # x86 cvttsd2si: out of int32 range -> INT_MIN, then truncated
        np.testing.assert_array_equal(row, [300, -300, 70000 - 65536, 0, 0, 5, -5, 127])
    else:  # saturate to int32, then keep the low 16 bits
        np.testing.assert_array_equal(row, [300, -300, 70000 - 65536, 0, -1, 5, -5, 127])
    big = np.full((8, 32), 1e6, np.float32)
    h = vec("f16", 8, 32)
    TCVT(h, vec("f32", 8, 32, big), RoundMode.CAST_RINT, SaturationMode.ON)
    assert (h.numpy() == np.float16(65504)).all()
    TCVT(h, vec("f32", 8, 32, big), RoundMode.CAST_RINT, SaturationMode.OFF)
    assert np.isinf(h.numpy()).all()
    # integer narrowing: ON clamps, OFF wraps
    if tgt != "a2a3":
        s = np.full((8, 32), 300, np.int32)
        d8 = vec("ui8", 8, 32)
        TCVT(d8, vec("i32", 8, 32, s), RoundMode.CAST_RINT, SaturationMode.ON)
        assert (d8.numpy() == 255).all()
        if tgt == "cpu":
            TCVT(d8, vec("i32", 8, 32, s), RoundMode.CAST_RINT, SaturationMode.OFF)
            assert (d8.numpy() == 300 - 256).all()


def test_tcvt_partial_and_widening(tgt):  # type: ignore[no-untyped-def]
    x = RNG.uniform(-8, 8, (16, 16)).astype(np.float16)
    dst = vec("f32", 16, 16, valid=(Dyn(3), Dyn(10)))
    TCVT(dst, vec("f16", 16, 16, x))
    out = dst.numpy()
    np.testing.assert_array_equal(out[:3, :10], x[:3, :10].astype(np.float32))
    assert is_poison(out[3:]).all() and is_poison(out[:, 10:]).all()  # untouched


def test_tcvt_fp8_and_fp4() -> None:
    m = make_target("a5")
    try:
        x = RNG.uniform(-500, 500, (8, 32)).astype(np.float32)
        d = vec("f8E4M3", 8, 32)
        TCVT(d, vec("f32", 8, 32, x), RoundMode.CAST_RINT, SaturationMode.ON)
        ref = np.clip(x, -448, 448).astype(ml_dtypes.float8_e4m3fn)
        np.testing.assert_array_equal(d.numpy().astype(np.float32), ref.astype(np.float32))
        b = vec("bf16", 8, 64, np.tile(np.array([0.2, 0.25, 0.3, 1.25, 2.5, 5.0, 7.0, -0.7],
                                                 ml_dtypes.bfloat16), (8, 8)))
        q = vec("f4E2M1x2", 8, 64)
        TCVT(q, b, RoundMode.CAST_RINT, SaturationMode.ON)
        # e2m1 codes: 0 0.5 1 1.5 2 3 4 6 -> 0..7; ties to the even code
        np.testing.assert_array_equal(q.read(1, 8)[0], [0, 0, 1, 2, 4, 6, 7, 8 | 1])
        TCVT(q, b, RoundMode.CAST_CEIL, SaturationMode.ON)
        np.testing.assert_array_equal(q.read(1, 8)[0], [1, 1, 1, 3, 5, 7, 7, 8 | 1])
    finally:
        pop(m)


@pytest.mark.parametrize("sat", [SaturationMode.ON, SaturationMode.OFF])
def test_tcvt_f32_to_e5m2(sat) -> None:  # type: ignore[no-untyped-def]
    # the largest finite E5M2 value is 1.75 * 2^15 = 57344; saturation clamps to it and makes
    # NaN 0 (upstream's vcvt-low-precision-special golden: "In V300 instruction-controlled
    # saturation, infinities/overflow clamp to max finite and NaN is saturated to zero")
    m = make_target("a5")
    try:
        x = np.tile(np.array([1e6, -1e6, 60000, 57344, 61440, 1.5, np.inf, np.nan],
                             np.float32), (2, 4))
        d = vec("f8E5M2", 2, 32)
        TCVT(d, vec("f32", 2, 32, x), RoundMode.CAST_RINT, sat)
        y = np.nan_to_num(np.clip(x, -57344, 57344), nan=0.0) if sat == SaturationMode.ON \
            else x
        ref = y.astype(ml_dtypes.float8_e5m2).astype(np.float32)  # round to nearest even
        np.testing.assert_array_equal(d.numpy().astype(np.float32), ref)
    finally:
        pop(m)


def test_tcvt_rejects(tgt):  # type: ignore[no-untyped-def]
    if tgt == "a2a3":
        with pytest.raises(UnsupportedType, match="type combination src f32 -> dst f8E4M3"):
            TCVT(vec("f8E4M3", 8, 32), vec("f32", 8, 32), RoundMode.CAST_RINT)
    # static valid regions must agree (the manual's "compatible shapes", the PTOAS verifier);
    # dynamic ones are checked at run time
    with pytest.raises(PtoError, match="same valid_shape"):
        TCVT(vec("f32", 8, 32), vec("f16", 8, 32, valid=(2, 32)), RoundMode.CAST_RINT)
    with pytest.raises(PtoError, match="compatible shapes"):
        TCVT(vec("f32", 8, 32), vec("f16", 8, 64), RoundMode.CAST_RINT)
    with pytest.raises(RuntimeCheckError, match="src valid region 2x32 does not cover"):
        TCVT(vec("f32", 8, 32), vec("f16", 8, 32, valid=(Dyn(2), Dyn(32))), RoundMode.CAST_RINT)
    with pytest.raises(PtoError, match="not a RoundMode"):
        TCVT(vec("f32", 8, 32), vec("f16", 8, 32), "CAST_SIDEWAYS")


# ---- predicate masks -----------------------------------------------------------------------------

def _pred(tgt: str) -> str:
    return "ui8" if tgt == "a2a3" else "ui32"


@pytest.mark.parametrize("mode", list(CmpMode))
def test_tcmp_packs_rows(tgt, mode):  # type: ignore[no-untyped-def]
    a = RNG.integers(-3, 3, (8, 64)).astype(np.float32)
    b = RNG.integers(-3, 3, (8, 64)).astype(np.float32)
    pt = _pred(tgt)
    per = 8 if pt == "ui8" else 32
    mask = vec(pt, 8, 32, valid=(Dyn(8), Dyn(64 // per)))
    TCMP(mask, vec("f32", 8, 64, a), vec("f32", 8, 64, b), mode)
    op = {"EQ": np.equal, "NE": np.not_equal, "LT": np.less, "LE": np.less_equal,
          "GT": np.greater, "GE": np.greater_equal}[mode.name]
    bits = op(a, b)
    for r in range(8):
        for w in range(64 // per):
            word = sum(int(bits[r, w * per + k]) << k for k in range(per))
            assert int(mask.numpy()[r, w]) == word


def test_tcmp_then_tsel_per_row(tgt):  # type: ignore[no-untyped-def]
    if tgt == "cpu":
        pytest.skip("the cpu TSEL reads masks as a stream (test_cpu_tsel_stream)")
    a = RNG.uniform(-1, 1, (8, 64)).astype(np.float32)
    b = RNG.uniform(-1, 1, (8, 64)).astype(np.float32)
    pt = _pred(tgt)
    per = 8 if pt == "ui8" else 32
    mask = vec(pt, 8, 32, valid=(Dyn(8), Dyn(64 // per)))
    s0, s1 = vec("f32", 8, 64, a), vec("f32", 8, 64, b)
    TCMP(mask, s0, s1, CmpMode.GT)
    dst = vec("f32", 8, 64, valid=(Dyn(6), Dyn(40)))
    TSEL(dst, mask, s0, s1, vec("ui32", 1, 16))
    np.testing.assert_array_equal(dst.numpy()[:6, :40], np.maximum(a, b)[:6, :40])
    TCMPS(mask, s0, 0.0, CmpMode.GE)
    out = vec("f32", 8, 64)
    TSELS(out, mask, s0, vec("ui32", 1, 16), -9.0)
    np.testing.assert_array_equal(out.numpy(), np.where(a >= 0, a, np.float32(-9)))


def test_cpu_tsel_stream() -> None:
    m = make_target("cpu")
    try:
        a = RNG.uniform(-1, 1, (2, 128)).astype(np.float32)
        b = RNG.uniform(-1, 1, (2, 128)).astype(np.float32)
        raw = RNG.integers(0, 256, (2, 32)).astype(np.uint8)
        dst = vec("f32", 2, 128)
        TSEL(dst, vec("ui8", 2, 32, raw), vec("f32", 2, 128, a), vec("f32", 2, 128, b),
             vec("ui8", 1, 32))
        stream = np.unpackbits(raw.reshape(-1), bitorder="little")[:256].reshape(2, 128)
        np.testing.assert_array_equal(dst.numpy(), np.where(stream == 1, a, b))
        # TCMPS on cpu writes the matching stream, so the pair round-trips
        mask = vec("ui8", 2, 32)
        TCMPS(mask, vec("f32", 2, 128, a), 0.0, "LT")
        TSEL(dst, mask, vec("f32", 2, 128, a), vec("f32", 2, 128, b), vec("ui8", 1, 32))
        np.testing.assert_array_equal(dst.numpy(), np.where(a < 0, a, b))
    finally:
        pop(m)


def test_a2a3_int32_compare_is_eq() -> None:
    m = make_target("a2a3")
    try:
        a = np.arange(64, dtype=np.int32).reshape(2, 32)
        mask = vec("ui8", 2, 32, valid=(Dyn(2), Dyn(4)))
        TCMP(mask, vec("i32", 2, 32, a), vec("i32", 2, 32, np.full((2, 32), 3, np.int32)), "LT")
        assert int(mask.numpy()[0, 0]) == 1 << 3  # equality, whatever cmpMode says
    finally:
        pop(m)


def test_mask_rejects(tgt):  # type: ignore[no-untyped-def]
    with pytest.raises(UnsupportedType, match=r"tcmp: type combination src0 f32 -> dst i16"):
        TCMP(vec("i16", 8, 32), vec("f32", 8, 32), vec("f32", 8, 32), CmpMode.EQ)
    pt = _pred(tgt)
    with pytest.raises(RuntimeCheckError, match="cannot hold 64 predicate bits"):
        TCMP(vec(pt, 8, 32, valid=(8, 1) if pt == "ui32" else (8, 4)),
             vec("f32", 8, 64), vec("f32", 8, 64), CmpMode.EQ)
    with pytest.raises(RuntimeCheckError, match="mask valid region"):
        TSELS(vec("f32", 8, 64), vec(pt, 8, 32, valid=(2, 1)), vec("f32", 8, 64),
              vec("ui32", 1, 16), 0.0)
    with pytest.raises(IllegalInstruction, match="same element type"):
        TSEL(vec("f32", 8, 32), vec("ui8", 8, 32), vec("f16", 8, 32), vec("f32", 8, 32),
             vec("ui32", 1, 16))

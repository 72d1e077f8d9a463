"""Elementwise tile-tile / tile-scalar / fused instructions: independent numpy references
written from the manual pages (computed in int64 / float64, then wrapped or rounded once),
over every element type each target allows x partial valid regions, plus rejected uses."""

from __future__ import annotations

import math

import numpy as np
import pytest

import ptoisa.isa.elementwise.relu_conv as RC
import ptoisa.isa.elementwise.unary_binary as E
import ptoisa.isa.tile_scalar.scalar as S
from ptoisa.dtypes import dtype
from ptoisa.errors import IllegalInstruction, PtoError, RuntimeCheckError, UnsupportedType
from ptoisa.isa.registry import REGISTRY
from ptoisa.memory import is_poison, pop
from ptoisa.memory import target as make_target
from ptoisa.targets import get_target
from ptoisa.tile import Dyn, Tile

TARGETS = ["cpu", "a2a3", "a5"]
RNG = np.random.default_rng(11)
VR, VC = 5, 13  # the partial valid region of dst


@pytest.fixture(params=TARGETS)
def tgt(request: pytest.FixtureRequest):  # type: ignore[no-untyped-def]
    m = make_target(request.param)
    yield request.param
    pop(m)


def legal(name: str, target: str) -> list[str]:
    r = get_target(target).legality.get(name)
    if r is None:
        return []
    return sorted({d.name for d in r.dtypes if not isinstance(d, tuple)})


def tile(dt: str, data=None, valid=None) -> Tile:  # type: ignore[no-untyped-def]
    t = Tile("Vec", dt, 8, 32, valid=valid)
    if data is not None:
        t.load_numpy(np.asarray(data))
    return t


def rand(dt: str, lo: float = -50, hi: float = 50) -> np.ndarray:
    d = dtype(dt)
    if d.is_float:
        return RNG.uniform(lo, hi, (8, 32)).astype(d.np)
    ii = np.iinfo(d.np)
    return RNG.integers(max(ii.min, int(lo)), min(ii.max, int(hi)) + 1, (8, 32)).astype(d.np)


def wrap(x: np.ndarray, dt: str) -> np.ndarray:
    d = dtype(dt)
    if d.is_float:
        return np.asarray(x, np.float64).astype(d.np)
    bits = d.itemsize * 8
    v = [int(a) % (1 << bits) for a in np.asarray(x, object).reshape(-1)]
    return np.array(v, dtype=f"u{d.itemsize}").view(d.np).reshape(np.shape(x))


def check_region(dst: Tile, ref: np.ndarray, rtol: float = 0.0) -> None:
    out = dst.numpy()
    got = out[:VR, :VC]
    if dtype(dst.dtype.name).is_float and rtol:
        np.testing.assert_allclose(got.astype(np.float64), ref.astype(np.float64), rtol=rtol,
                                   atol=1e-6)
    else:
        np.testing.assert_array_equal(got, ref)
    # outside the valid region nothing is written
    assert (out[VR:] == 0).all() and (out[:, VC:] == 0).all()


def c_div(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


# ---- tile-tile binary --------------------------------------------------------------------------

def _ref_binary(name: str, a: np.ndarray, b: np.ndarray, dt: str) -> np.ndarray:
    d = dtype(dt)
    if d.is_float:
        x, y = a.astype(np.float64), b.astype(np.float64)
        f = {"TSUB": x - y, "TMUL": x * y, "TDIV": x / y, "TMAX": np.maximum(x, y),
             "TMIN": np.minimum(x, y), "TFMOD": np.fmod(x, y),
             "TREM": x - np.floor(x / y) * y, "TPRELU": np.where(x > 0, x, x * y),
             "TSUBRELU": np.maximum(x - y, 0), "TPOW": np.abs(x) ** y}[name]
        return f
    xs = a.astype(object)
    ys = b.astype(object)
    fn = {
        "TSUB": lambda p, q: p - q, "TMUL": lambda p, q: p * q, "TDIV": c_div,
        "TMAX": max, "TMIN": min, "TAND": lambda p, q: p & q, "TOR": lambda p, q: p | q,
        "TXOR": lambda p, q: p ^ q, "TSHL": lambda p, q: p << q, "TSHR": lambda p, q: p >> q,
        "TFMOD": lambda p, q: p - c_div(p, q) * q, "TREM": lambda p, q: p % q,
        "TPOW": lambda p, q: p ** q,
    }[name]
    out = np.array([fn(p, q) for p, q in zip(xs.reshape(-1), ys.reshape(-1), strict=True)],
                   object).reshape(a.shape)
    return wrap(out, dt)


BINARY = ["TSUB", "TMUL", "TDIV", "TMAX", "TMIN", "TAND", "TOR", "TXOR", "TSHL", "TSHR",
          "TFMOD", "TREM", "TPOW", "TPRELU", "TSUBRELU"]


@pytest.mark.parametrize("name", BINARY)
def test_binary(tgt, name):  # type: ignore[no-untyped-def]
    types = legal(name, tgt)
    assert types or name in ()
    for dt in types:
        d = dtype(dt)
        a = rand(dt)
        b = rand(dt)
        if name in ("TDIV", "TFMOD", "TREM"):
            b = np.where(b == 0, 3, b).astype(d.np)
        if name in ("TSHL", "TSHR"):
            b = RNG.integers(0, d.itemsize * 8 - 1, (8, 32)).astype(d.np)
        if name == "TPOW":
            a = np.abs(a).astype(d.np) if d.is_float else rand(dt, 0, 5)
            b = rand(dt, 0, 3) if d.is_int else RNG.uniform(0, 3, (8, 32)).astype(d.np)
        dst = tile(dt, valid=(Dyn(VR), Dyn(VC)))
        dst.load_numpy(np.zeros((8, 32), d.np))
        dst.set_valid(VR, VC)
        # sources share dst's valid region (a documented run-time check of most of them)
        s0, s1 = tile(dt, a, valid=(VR, VC)), tile(dt, b, valid=(VR, VC))
        args = [dst, s0, s1]
        if name in ("TXOR", "TREM", "TPOW", "TPRELU"):
            args.append(tile(dt))
        getattr(E, name)(*args)
        ref = _ref_binary(name, a[:VR, :VC], b[:VR, :VC], dt)
        rtol = {"f32": 1e-6, "f16": 1e-3, "bf16": 1e-2}.get(dt, 0.0)
        if name == "TREM" and d.is_float:
            rtol = max(rtol, 1e-2)
        if d.is_float:
            ref = ref.astype(d.np)
        check_region(dst, ref, rtol * (10 if name == "TPOW" else 1))


# ---- unary -------------------------------------------------------------------------------------

UNARY = {
    "TABS": lambda x: np.abs(x), "TNEG": lambda x: -x, "TNOT": lambda x: ~x,
    "TRELU": lambda x: np.maximum(x, 0), "TEXP": np.exp, "TLOG": np.log, "TSQRT": np.sqrt,
    "TRSQRT": lambda x: 1 / np.sqrt(x), "TRECIP": lambda x: 1 / x,
}


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary(tgt, name):  # type: ignore[no-untyped-def]
    for dt in legal(name, tgt):
        d = dtype(dt)
        positive = name in ("TLOG", "TSQRT", "TRSQRT")
        a = rand(dt, 1 if positive else -9, 9 if name == "TEXP" else 60)
        if name == "TRECIP":
            a = np.where(a == 0, 7, a).astype(d.np)
        dst = tile(dt, valid=(Dyn(VR), Dyn(VC)))
        dst.load_numpy(np.zeros((8, 32), d.np))
        dst.set_valid(VR, VC)
        getattr(E, name)(dst, tile(dt, a, valid=(VR, VC)))
        x = a[:VR, :VC]
        if d.is_float:
            ref = UNARY[name](x.astype(np.float64)).astype(d.np)
            check_region(dst, ref, {"f32": 1e-6, "f16": 1e-3, "bf16": 1e-2}[dt])
        else:
            if name in ("TEXP", "TLOG"):
                ref = wrap(np.trunc(UNARY[name](x.astype(np.float64))).astype(np.int64), dt)
            elif name == "TRECIP":
                ref = wrap(np.array([c_div(1, int(v)) for v in x.reshape(-1)]).reshape(x.shape),
                           dt)
            else:
                ref = wrap(UNARY[name](x.astype(object)), dt)
            check_region(dst, ref)


def test_integer_wraps_and_division_corners(tgt):  # type: ignore[no-untyped-def]
    if tgt == "a2a3":
        pytest.skip("i32 division is not an a2a3 instruction")
    a = tile("i32", np.full((8, 32), -2**31, np.int32))
    b = tile("i32", np.full((8, 32), -1, np.int32))
    d = tile("i32")
    E.TDIV(d, a, b)  # INT_MIN / -1 wraps
    assert (d.numpy() == -2**31).all()
    E.TABS(d, a)
    assert (d.numpy() == -2**31).all()


# ---- ternary and fused -------------------------------------------------------------------------

@pytest.mark.parametrize("target", ["cpu", "a2a3", "a5"])
def test_ternary(target: str) -> None:
    """TADDC / TSUBC: the CPU simulator's intrinsics; PTOAS lowers pto.taddc / pto.tsubc to two
    vector adds on A2/A3 and A5 (lit add_carry_tile_native.pto), so they run there too."""
    m = make_target(target)
    try:
        a, b, c = rand("i16"), rand("i16"), rand("i16")
        for name, ref in (("TADDC", a.astype(int) + b + c), ("TSUBC", a.astype(int) - b + c)):
            dst = tile("i16", valid=(VR, VC))
            getattr(E, name)(dst, tile("i16", a), tile("i16", b), tile("i16", c))
            np.testing.assert_array_equal(dst.numpy(valid_only=True), wrap(ref[:VR, :VC], "i16"))
    finally:
        pop(m)


def test_ternary_types_are_those_of_its_two_halves() -> None:
    m = make_target("a2a3")
    try:
        with pytest.raises(IllegalInstruction,
                           match="taddc: element type i8 is not supported on a2a3"):
            E.TADDC(tile("i8"), tile("i8"), tile("i8"), tile("i8"))
    finally:
        pop(m)


@pytest.mark.parametrize("dt", ["f16", "f32"])
def test_fused(tgt, dt):  # type: ignore[no-untyped-def]
    d = dtype(dt).np
    a, b, c = rand(dt, -3, 3), rand(dt, -3, 3), rand(dt, -3, 3)
    f64 = [x[:VR, :VC].astype(np.float64) for x in (a, b, c)]
    prod_ad = (f64[0] * f64[2]).astype(d).astype(np.float64)
    prod_ab = (f64[0] * f64[1]).astype(d).astype(np.float64)
    cases = {
        "TMULADDDST": (prod_ab + f64[2]).astype(d),
        # one rounding; on cpu the simulator's C++ float arithmetic: product, then sum in f32
        "TFUSEDMULADD": (f64[0] * f64[2] + f64[1]).astype(d) if tgt != "cpu" else
        (f64[0].astype(np.float32) * f64[2].astype(np.float32) + f64[1].astype(np.float32))
        .astype(d),
        "TFUSEDMULADDRELU": np.maximum(prod_ad + f64[1], 0).astype(d),
    }
    for name, ref in cases.items():
        dst = tile(dt, c)
        getattr(E, name)(dst, tile(dt, a), tile(dt, b))
        np.testing.assert_array_equal(dst.numpy()[:VR, :VC], ref)


# ---- tile-scalar -------------------------------------------------------------------------------

SCALAR = {
    "TADDS": lambda x, s: x + s, "TSUBS": lambda x, s: x - s, "TMULS": lambda x, s: x * s,
    "TMAXS": max, "TMINS": min, "TANDS": lambda x, s: x & s, "TORS": lambda x, s: x | s,
    "TXORS": lambda x, s: x ^ s, "TSHLS": lambda x, s: x << s, "TSHRS": lambda x, s: x >> s,
    "TFMODS": lambda x, s: x - c_div(x, s) * s, "TREMS": lambda x, s: x % s,
    "TPOWS": lambda x, s: x ** s, "TLRELU": None,
}


@pytest.mark.parametrize("name", sorted(SCALAR))
def test_scalar(tgt, name):  # type: ignore[no-untyped-def]
    for dt in legal(name, tgt):
        d = dtype(dt)
        a = rand(dt, 0 if name == "TPOWS" else -50, 5 if name == "TPOWS" else 50)
        s = 3 if d.is_int else 2.5
        if name == "TPOWS" and d.is_float:
            s = 2.0
        dst = tile(dt, valid=(Dyn(VR), Dyn(VC)))
        dst.load_numpy(np.zeros((8, 32), d.np))
        dst.set_valid(VR, VC)
        args = [dst, tile(dt, a, valid=(VR, VC)), s]
        if name in ("TXORS", "TREMS", "TPOWS"):
            args.append(tile(dt))
        getattr(S, name)(*args)
        x = a[:VR, :VC]
        if d.is_float:
            xf = x.astype(np.float64)
            with np.errstate(all="ignore"):
                ref = {"TADDS": xf + s, "TSUBS": xf - s, "TMULS": xf * s,
                       "TMAXS": np.maximum(xf, s), "TMINS": np.minimum(xf, s),
                       "TFMODS": np.fmod(xf, s), "TREMS": xf - np.floor(xf / s) * s,
                       "TPOWS": xf ** s, "TLRELU": np.where(xf > 0, xf, xf * s)}[name]
            check_region(dst, ref.astype(d.np), {"f32": 1e-6, "f16": 1e-3, "bf16": 1e-2}[dt])
        else:
            fn = SCALAR[name]
            ref = np.array([fn(int(v), s) for v in x.reshape(-1)], object).reshape(x.shape)
            check_region(dst, wrap(ref, dt))


def test_scalar_converted_like_cpp(tgt):  # type: ignore[no-untyped-def]
    # an int tile takes a float scalar truncated toward zero; an out-of-range int wraps
    dst = tile("i16")
    S.TADDS(dst, tile("i16", np.zeros((8, 32), np.int16)), -2.9)
    assert (dst.numpy() == -2).all()
    S.TADDS(dst, tile("i16", np.zeros((8, 32), np.int16)), 70000)
    assert (dst.numpy() == 70000 - 65536).all()
    h = tile("f16")
    S.TADDS(h, tile("f16", np.zeros((8, 32), np.float16)), 1 / 3)
    assert (h.numpy() == np.float16(1 / 3)).all()


def test_tdivs_both_orders(tgt):  # type: ignore[no-untyped-def]
    a = RNG.uniform(1, 9, (8, 32)).astype(np.float32)
    dst = tile("f32")
    S.TDIVS(dst, tile("f32", a), 4.0)
    np.testing.assert_array_equal(dst.numpy(), (a.astype(np.float64) / 4).astype(np.float32))
    S.TDIVS(dst, 4.0, tile("f32", a))
    np.testing.assert_array_equal(dst.numpy(), (4 / a.astype(np.float64)).astype(np.float32))
    with pytest.raises(RuntimeCheckError, match="one tile and one scalar"):
        S.TDIVS(dst, tile("f32", a), tile("f32", a))


def test_texpands_taxpy_sc(tgt):  # type: ignore[no-untyped-def]
    t = Tile("Vec", "i32", 8, 32, valid=(VR, VC))
    S.TEXPANDS(t, -7)
    out = t.numpy()
    # outside the valid region the fresh tile keeps its poison bytes (untouched)
    assert (out[:VR, :VC] == -7).all() and is_poison(out[VR:]).all()
    y = rand("f32", -3, 3)
    x = rand("f16", -3, 3)
    dst = tile("f32", y)
    S.TAXPY(dst, tile("f16", x), 1.5)
    ref = (x.astype(np.float64) * 1.5).astype(np.float32).astype(np.float64) + y
    np.testing.assert_array_equal(dst.numpy(), ref.astype(np.float32))
    if tgt == "cpu":
        a, b = rand("i32"), rand("i32")
        dst = tile("i32")
        S.TADDSC(dst, tile("i32", a), 5, tile("i32", b))
        np.testing.assert_array_equal(dst.numpy(), a + 5 + b)
        S.TSUBSC(dst, tile("i32", a), 5, tile("i32", b))
        np.testing.assert_array_equal(dst.numpy(), a - 5 + b)


def test_tadddeqrelu_and_reluconv(tgt):  # type: ignore[no-untyped-def]
    a = RNG.integers(-2**20, 2**20, (8, 32)).astype(np.int32)
    b = RNG.integers(-2**20, 2**20, (8, 32)).astype(np.int32)
    dst = tile("f16")
    RC.TADDDEQRELU(dst, tile("i32", a), tile("i32", b), 0.01, tile("i32"))
    x = (a.astype(np.float64) + b).astype(np.float32)
    f = ((x * np.float32(2 ** -17)) * np.float32(0.01)) * np.float32(2 ** 17)
    np.testing.assert_array_equal(dst.numpy(), np.minimum(np.maximum(f, 0), 65504)
                                  .astype(np.float16))
    if tgt == "cpu":
        with pytest.raises(IllegalInstruction, match="not supported on target cpu"):
            RC.TADDRELUCONV(tile("i8"), Tile("Vec", "i16", 8, 32), Tile("Vec", "i16", 8, 32))
        return
    p = RNG.integers(-200, 200, (8, 32)).astype(np.int16)
    q = RNG.integers(-200, 200, (8, 32)).astype(np.int16)
    d8 = tile("i8")
    RC.TADDRELUCONV(d8, Tile("Vec", "i16", 8, 32).load_numpy(p),
                   Tile("Vec", "i16", 8, 32).load_numpy(q))
    np.testing.assert_array_equal(d8.numpy(), np.clip(p.astype(int) + q, 0, 127))
    RC.TSUBRELUCONV(d8, Tile("Vec", "i16", 8, 32).load_numpy(p),
                   Tile("Vec", "i16", 8, 32).load_numpy(q))
    np.testing.assert_array_equal(d8.numpy(), np.clip(p.astype(int) - q, 0, 127))


# ---- rejected uses -----------------------------------------------------------------------------

MINE = sorted(n for n, i in REGISTRY.items() if i.impl.__module__.split(".")[-1] in
              ("elementwise2", "elementwise_scalar", "elementwise_mask", "elementwise_cvt"))


def _args(name: str, dt: str) -> list:  # type: ignore[type-arg]
    out: list = []  # type: ignore[type-arg]
    for o in REGISTRY[name].operands:
        if o.optional:
            continue
        if o.kind in ("tile", "any", "tile|gm"):
            out.append(Tile("Vec", dt, 8, 32))
        elif o.kind == "scalar":
            out.append(1)
        elif o.kind == "enum" and o.enum is not None:
            out.append(next(iter(o.enum)))
    if name in ("TDIVS", "TCMPS"):
        out[2] = 1
    return out


@pytest.mark.parametrize("name", MINE)
def test_rejects_unsupported_type_on_a2a3(name):  # type: ignore[no-untyped-def]
    m = make_target("a2a3")
    try:
        with pytest.raises(IllegalInstruction, match=rf"{name.lower()}: .*not supported"):
            REGISTRY[name](*_args(name, "i64"))
    finally:
        pop(m)


def test_rejected_uses_messages(tgt):  # type: ignore[no-untyped-def]
    with pytest.raises(UnsupportedType, match="tand: element type f32 is not supported"):
        E.TAND(tile("f32"), tile("f32"), tile("f32"))
    with pytest.raises(IllegalInstruction, match="same element type"):
        E.TMUL(tile("f32"), tile("f16"), tile("f32"))
    with pytest.raises(RuntimeCheckError, match="src1 valid region 2x32 does not cover"):
        E.TSUB(tile("f32"), tile("f32"), tile("f32", valid=(2, 32)))
    with pytest.raises(IllegalInstruction, match="must be a Vec tile"):
        E.TEXP(Tile("Mat", "f32", 16, 32), Tile("Mat", "f32", 16, 32))
    with pytest.raises(RuntimeCheckError, match="shift count must be >= 0"):
        S.TSHLS(tile("i32"), tile("i32"), -1)
    with pytest.raises(PtoError, match="operand 'scalar' must be a number"):
        S.TADDS(tile("f32"), tile("f32"), tile("f32"))


def _c_pow(x: float, e: float) -> float:
    """C's pow (math.pow), with its domain errors as the IEEE results: NaN, or +-inf for 0."""
    if x == 0 and e < 0:  # pole error: +-inf, the sign of x for an odd integer exponent
        return math.copysign(math.inf, x) if e == int(e) and int(e) % 2 else math.inf
    try:
        return math.pow(x, e)
    except ValueError:
        return math.nan


@pytest.mark.parametrize("e", [0.5, 2.0, 3.0, 1.5, -0.5])
def test_tpows_special_values_follow_c_pow(tgt, e):  # type: ignore[no-untyped-def]
    # numpy computes x ** 0.5 as sqrt: (-inf) ** 0.5 is NaN and (-0) ** 0.5 is -0 there,
    # C's pow gives +inf and +0
    for dt in legal("TPOWS", tgt):
        if not dtype(dt).is_float:
            continue
        vals = [-np.inf, -0.0, 0.0, np.inf, 4.0, -4.0, np.nan, 2.25]
        x = np.resize(np.array(vals, dtype(dt).np), (8, 32))
        d = tile(dt)
        S.TPOWS(d, tile(dt, x), e, tile(dt))
        ref = np.array([_c_pow(float(v), e) for v in x.reshape(-1)]).reshape(8, 32)
        got = d.numpy().astype(np.float64)
        np.testing.assert_array_equal(got, ref.astype(dtype(dt).np).astype(np.float64))
        assert (np.signbit(got) == np.signbit(ref))[~np.isnan(ref)].all()

"""Cube instructions (TMATMUL/TGEMV families, MX, HF32/TF32 modes) against numpy references."""

from __future__ import annotations

import json
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ptoisa as pto
from ptoisa.errors import IllegalInstruction, PtoError, RuntimeCheckError
from ptoisa.isa import REGISTRY
from ptoisa.memory import pop
from ptoisa.tile import Tile, TileAcc, TileLeft, TileRight

R = REGISTRY
TARGETS = ("cpu", "a2a3", "a5")
RNG = np.random.default_rng(7)

#: (A/B dtype, C dtype) per target: the manual's tables
PAIRS = {"cpu": [("f16", "f32"), ("bf16", "f32"), ("f32", "f32"), ("i8", "i32")],
         "a2a3": [("f16", "f32"), ("bf16", "f32"), ("f32", "f32"), ("i8", "i32")],
         "a5": [("f16", "f32"), ("bf16", "f32"), ("f32", "f32"), ("i8", "i32"),
                ("f8E4M3", "f32"), ("f8E5M2", "f32")]}
CASES = [(t, ab, c) for t in TARGETS for ab, c in PAIRS[t]]


@pytest.fixture(autouse=True)
def _exact_accumulation():  # type: ignore[no-untyped-def]
    """The bit-exact references below are the "exact" accumulation (f64 sum of exact products,
    one rounding); the default f32 accumulation is tested in test_matmul_accumulation.py."""
    prev = pto.set_matmul_accumulation("exact")
    yield
    pto.set_matmul_accumulation(prev)


@pytest.fixture
def machine(request: pytest.FixtureRequest):  # type: ignore[no-untyped-def]
    m = pto.target(request.param)
    yield m
    pop(m)


def _values(dt: str, shape: tuple[int, int]) -> np.ndarray:
    """Random values exactly representable in ``dt`` (as the dt numpy array)."""
    npdt = pto.dtype(dt).np
    if dt == "i8":
        return RNG.integers(-128, 128, shape).astype(np.int8)
    if dt.startswith("f8"):
        return (RNG.integers(-16, 17, shape) / 4).astype(npdt)
    return RNG.standard_normal(shape).astype(np.float32).astype(npdt)


def _ref(a: np.ndarray, b: np.ndarray, c_dt: str) -> np.ndarray:
    """Exact products, one rounding: what an f32 (i32) accumulator of exact products gives."""
    r = a.astype(np.float64) @ b.astype(np.float64)
    return r.astype(np.int64).astype(np.int32) if c_dt == "i32" else r.astype(np.float32)


def _mm_tiles(ab: str, c: str, m: int, k: int, n: int, mr: int = 32, kr: int = 64,
              nr: int = 32) -> tuple[Tile, Tile, Tile, np.ndarray, np.ndarray]:
    a = TileLeft(ab, mr, kr, valid=(m, k))
    b = TileRight(ab, kr, nr, valid=(k, n))
    acc = TileAcc(c, mr, nr, valid=(m, n))
    av, bv = _values(ab, (m, k)), _values(ab, (k, n))
    a.write(av)
    b.write(bv)
    return acc, a, b, av, bv


@pytest.mark.parametrize("tgt,ab,c", CASES)
@pytest.mark.parametrize("mkn", [(32, 64, 32), (5, 17, 9), (1, 64, 3)])
def test_tmatmul(tgt: str, ab: str, c: str, mkn: tuple[int, int, int]) -> None:
    with pto.target(tgt):
        acc, a, b, av, bv = _mm_tiles(ab, c, *mkn)
        acc.fill(7, acc.rows, acc.cols)
        R["TMATMUL"](acc, a, b)
        m, _, n = mkn
        out = acc.numpy()
        np.testing.assert_array_equal(out[:m, :n], _ref(av, bv, c))
        assert (out[m:, :] == 7).all() and (out[:, n:] == 7).all()  # outside m x n untouched


@pytest.mark.parametrize("tgt,ab,c", CASES)
def test_tmatmul_acc_and_bias(tgt: str, ab: str, c: str) -> None:
    m, k, n = 6, 40, 20
    with pto.target(tgt):
        acc, a, b, av, bv = _mm_tiles(ab, c, m, k, n)
        cin = TileAcc(c, 32, 32, valid=(m, n))
        civ = (RNG.integers(-50, 50, (m, n))).astype(pto.dtype(c).np)
        cin.write(civ)
        R["TMATMUL_ACC"](acc, cin, a, b)
        want = (av.astype(np.float64) @ bv.astype(np.float64) + civ).astype(pto.dtype(c).np)
        np.testing.assert_array_equal(acc.numpy(True), want)
        R["TMATMUL_ACC"](acc, a, b)  # in-place overload: acc += a @ b
        want2 = (want.astype(np.float64) + av.astype(np.float64) @ bv.astype(np.float64))
        np.testing.assert_array_equal(acc.numpy(True), want2.astype(pto.dtype(c).np))
        bias = Tile("Bias", c, 1, 32, valid=(1, n))
        bvals = RNG.integers(-9, 9, (1, n)).astype(pto.dtype(c).np)
        bias.write(bvals)
        R["TMATMUL_BIAS"](acc, a, b, bias)
        want3 = av.astype(np.float64) @ bv.astype(np.float64) + bvals
        np.testing.assert_array_equal(acc.numpy(True), want3.astype(pto.dtype(c).np))


@pytest.mark.parametrize("tgt,ab,c", CASES)
def test_tgemv_family(tgt: str, ab: str, c: str) -> None:
    with pto.target(tgt):
        acc, a, b, av, bv = _mm_tiles(ab, c, 1, 50, 30, mr=16, nr=32)
        R["TGEMV"](acc, a, b)
        np.testing.assert_array_equal(acc.numpy(True), _ref(av, bv, c))
        cin = TileAcc(c, 16, 32, valid=(1, 30))
        cin.write(np.ones((1, 30), pto.dtype(c).np))
        R["TGEMV_ACC"](acc, cin, a, b)
        exact = av.astype(np.float64) @ bv.astype(np.float64)
        np.testing.assert_array_equal(acc.numpy(True), (exact + 1).astype(pto.dtype(c).np))
        bias = Tile("Bias", c, 1, 32, valid=(1, 30))
        bias.write(np.full((1, 30), 2, pto.dtype(c).np))
        R["TGEMV_BIAS"](acc, a, b, bias)
        np.testing.assert_array_equal(acc.numpy(True), (exact + 2).astype(pto.dtype(c).np))


@settings(max_examples=25, deadline=None)
@given(m=st.integers(1, 32), k=st.integers(1, 64), n=st.integers(1, 32),
       tgt=st.sampled_from(TARGETS))
def test_tmatmul_valid_regions(m: int, k: int, n: int, tgt: str) -> None:
    with pto.target(tgt):
        acc, a, b, av, bv = _mm_tiles("f16", "f32", m, k, n)
        R["TMATMUL"](acc, a, b)
        np.testing.assert_array_equal(acc.numpy(True), _ref(av, bv, "f32"))


@pytest.mark.parametrize("tgt", TARGETS)
@pytest.mark.parametrize("form", ["TMATMUL", "TMATMUL_ACC"])
def test_c_valid_region_larger_than_m_x_n(tgt: str, form: str) -> None:
    """PTOAS's decode samples give an 8-row A a 16-row Acc tile. The page defines C on
    m x n only (M, N from A's and B's valid regions): that block is the product, the rest of
    C's valid region is undefined on the NPU and reads as the poison pattern."""
    with pto.target(tgt):
        a = TileLeft("f16", 16, 32, valid=(8, 32))
        b = TileRight("f16", 32, 16, valid=(32, 12))
        c = TileAcc("f32", 16, 16, valid=(16, 16))
        av = RNG.integers(-4, 5, (8, 32)).astype(np.float16)
        bv = RNG.integers(-4, 5, (32, 12)).astype(np.float16)
        a.write(av)
        b.write(bv)
        c.write(np.ones((16, 16), np.float32))
        if form == "TMATMUL":
            R["TMATMUL"](c, a, b)
            want = av.astype(np.float64) @ bv.astype(np.float64)
        else:
            R["TMATMUL_ACC"](c, c, a, b)
            want = av.astype(np.float64) @ bv.astype(np.float64) + 1
        got = c.numpy(True)
        np.testing.assert_array_equal(got[:8, :12], want.astype(np.float32))
        assert (got[8:].view(np.uint32) == 0xFFFFFFFF).all()
        assert (got[:8, 12:].view(np.uint32) == 0xFFFFFFFF).all()
        small = TileAcc("f32", 16, 16, valid=(4, 16))
        with pytest.raises(PtoError, match="must cover m x n = 8x12"):
            R["TMATMUL"](small, a, b)


def test_f32_accumulation_is_exact_products() -> None:
    # (1 + 2^-11)^2 needs 23 mantissa bits: exact in f32; summing it with -1 keeps the low bits
    with pto.target("cpu"):
        a = TileLeft("f16", 16, 32, valid=(1, 2))
        b = TileRight("f16", 32, 16, valid=(2, 1))
        c = TileAcc("f32", 16, 16, valid=(1, 1))
        a.write(np.array([[1 + 2**-10, 1]], np.float16))
        b.write(np.array([[1 + 2**-10], [-1]], np.float16))
        R["TMATMUL"](c, a, b)
        assert c.numpy(True)[0, 0] == np.float32(2**-9 + 2**-20)


def _round_bits(x: float, bits: int) -> np.float32:
    """Round to ``bits`` mantissa bits, ties to even (reference via float arithmetic)."""
    m, e = np.frexp(np.float64(x))
    scale = 2.0 ** (bits + 1)
    return np.float32(np.ldexp(np.rint(m * scale) / scale, e))


@pytest.mark.parametrize("tgt,which,bits", [("a5", "SETTF32MODE", 10), ("a2a3", "SETHF32MODE", 11),
                                            ("a5", "SETHF32MODE", 11), ("cpu", "SETTF32MODE", 23),
                                            ("cpu", "SETHF32MODE", 23),
                                            ("a2a3", "SETTF32MODE", 23)])
def test_tf32_hf32_modes(tgt: str, which: str, bits: int) -> None:
    x = 1 + 2**-11 + 2**-13 + 2**-20
    with pto.target(tgt):
        a = TileLeft("f32", 16, 8, valid=(1, 1))
        b = TileRight("f32", 8, 16, valid=(1, 1))
        c = TileAcc("f32", 16, 16, valid=(1, 1))
        a.write(np.array([[x]], np.float32))
        b.write(np.array([[1.0]], np.float32))
        key = "tf32TransMode" if which == "SETTF32MODE" else "hf32TransMode"
        R[which](isEnable=True, **{key: pto.RoundMode.CAST_RINT})
        R["TMATMUL"](c, a, b)
        want = np.float32(x) if bits == 23 else _round_bits(x, bits)
        assert c.numpy(True)[0, 0] == want
        R[which](isEnable=False)
        R["TMATMUL"](c, a, b)
        assert c.numpy(True)[0, 0] == np.float32(x)


# ---- MX --------------------------------------------------------------------------------------

E1M2 = np.array([0, .25, .5, .75, 1, 1.25, 1.5, 1.75], np.float64)


def _fp4_ref(codes: np.ndarray, dt: str) -> np.ndarray:
    if dt == "f4E2M1x2":
        return codes.astype(np.uint8).view(ml_dtypes.float4_e2m1fn).astype(np.float64)
    mag = E1M2[codes & 7]
    return np.where(codes & 8, -mag, mag)


def _mx_tiles(at: str, bt: str, m: int, k: int, n: int):  # type: ignore[no-untyped-def]
    g = -(-k // 32)
    a = TileLeft(at, 32, 64, valid=(m, k))
    b = TileRight(bt, 64, 32, valid=(k, n))
    sa = Tile("ScaleLeft", "f8E8M0", 32, 2, "RowMajor", (m, g), "RowMajor", 32)
    sb = Tile("ScaleRight", "f8E8M0", 2, 32, "ColMajor", (g, n), "ColMajor", 32)
    c = TileAcc("f32", 32, 32, valid=(m, n))
    if at.startswith("f4"):
        ac = RNG.integers(0, 16, (m, k)).astype(np.uint8)
        a.write(ac)
        av = _fp4_ref(ac, at)
    else:
        av = _values(at, (m, k))
        a.write(av)
        av = av.astype(np.float64)
    if bt.startswith("f4"):
        bc = RNG.integers(0, 16, (k, n)).astype(np.uint8)
        b.write(bc)
        bv = _fp4_ref(bc, bt)
    else:
        bv = _values(bt, (k, n))
        b.write(bv)
        bv = bv.astype(np.float64)
    ea = RNG.integers(120, 134, (m, g)).astype(np.uint8)
    eb = RNG.integers(120, 134, (g, n)).astype(np.uint8)
    sa.write(ea.view(ml_dtypes.float8_e8m0fnu))
    sb.write(eb.view(ml_dtypes.float8_e8m0fnu))
    grp = np.arange(k) // 32
    ref = (av * 2.0 ** (ea[:, grp] - 127.0)) @ (bv * 2.0 ** (eb[grp, :] - 127.0))
    return c, a, sa, b, sb, ref


MX_TYPES = [("f8E4M3", "f8E5M2"), ("f8E5M2", "f8E5M2"), ("f4E2M1x2", "f4E1M2x2"),
            ("f4E1M2x2", "f4E1M2x2"), ("f4E2M1x2", "f4E2M1x2")]


@pytest.mark.parametrize("tgt", ["cpu", "a5"])
@pytest.mark.parametrize("at,bt", MX_TYPES)
@pytest.mark.parametrize("mkn", [(32, 64, 32), (7, 30, 5)])
def test_tmatmul_mx(tgt: str, at: str, bt: str, mkn: tuple[int, int, int]) -> None:
    with pto.target(tgt):
        c, a, sa, b, sb, ref = _mx_tiles(at, bt, *mkn)
        R["TMATMUL_MX"](c, a, sa, b, sb)
        np.testing.assert_array_equal(c.numpy(True), ref.astype(np.float32))
        bias = Tile("Bias", "f32", 1, 32, valid=(1, mkn[2]))
        bias.write(np.full((1, mkn[2]), 0.5, np.float32))
        R["TMATMUL_MX"](c, a, sa, b, sb, bias)
        np.testing.assert_array_equal(c.numpy(True), (ref + 0.5).astype(np.float32))
        cin = TileAcc("f32", 32, 32, valid=mkn[::2])
        cin.write(np.full(mkn[::2], 3, np.float32))
        R["TMATMUL_MX"](c, cin, a, sa, b, sb)
        np.testing.assert_array_equal(c.numpy(True), (ref + 3).astype(np.float32))


def test_tgemv_mx() -> None:
    with pto.target("a5"):
        c, a, sa, b, sb, ref = _mx_tiles("f8E4M3", "f8E4M3", 1, 64, 32)
        R["TGEMV_MX"](c, a, sa, b, sb)
        np.testing.assert_array_equal(c.numpy(True), ref.astype(np.float32))


PACK = Path(__file__).resolve().parents[3] / "shared" / "conformance"


def _snapshot_cases() -> list[Path]:
    return sorted(PACK.glob("tmatmul_mx/*_case1*/"))[:6] if PACK.is_dir() else []


@pytest.mark.parametrize("case", _snapshot_cases(), ids=lambda p: p.name)
def test_mx_snapshots_bit_exact(case: Path) -> None:
    """Unit-level parity with the CPU simulator: one TMATMUL_MX call from its recorded operands
    (fp4 tiles as raw packed storage)."""
    from ptoisa.conformance import _NP_TYPES, _PTO_TYPES
    from ptoisa.tile import tile_spec

    c = json.loads((case / "case.json").read_text())
    for snap in c["snapshots"]:
        step = c["program"][snap["step"]]
        with pto.target("cpu"):
            args = []
            for o in step["operands"]:
                t = c["tiles"][o["tile"]]
                elem = _PTO_TYPES.get(t["dtype"]) or np.dtype(_NP_TYPES[t["dtype"]])
                spec = tile_spec(t["loc"], elem, t["rows"], t["cols"], t["blayout"],
                                 t["valid_row"]["static"], t["valid_col"]["static"],
                                 t["slayout"], t["fractal_size"])
                tile = Tile.of(spec, tuple(o["valid"]))
                s = snap["operands"][o["param"]]
                before = s["before"]
                arr = np.zeros(before["shape"], np.uint8) if "fill" in before else \
                    np.load(case / before["file"])
                if s["layout_of_npy"].startswith("raw"):
                    tile.storage.view(np.uint8)[: arr.size] = arr.view(np.uint8).reshape(-1)
                else:
                    tile.write(arr.view(tile.dtype.np) if arr.dtype.itemsize == tile.dtype.itemsize
                               else arr.astype(tile.dtype.np))
                args.append(tile)
            if any(t.spec.rows % t.spec.inner[0] for t in args if t.loc.name.startswith("Scale")):
                continue
            R[snap["op"]](*args)
            after = np.load(case / snap["operands"][step["operands"][0]["param"]]["after"]["file"])
            np.testing.assert_array_equal(args[0].numpy(), after)


# ---- illegal uses ----------------------------------------------------------------------------

def test_illegal_matmul_uses() -> None:
    with pto.target("a2a3"):
        a = TileLeft("f16", 16, 16)
        b = TileRight("bf16", 16, 16)
        c = TileAcc("f32", 16, 16)
        with pytest.raises(IllegalInstruction,
                           match=r"\(f32, f16, bf16\) is not supported on a2a3"):
            R["TMATMUL"](c, a, b)
        b2 = TileRight("f16", 16, 16)
        with pytest.raises(IllegalInstruction, match="aMatrix must be a Left tile, got Right"):
            R["TMATMUL"](c, b2, b2)
        with pytest.raises(RuntimeCheckError, match="valid rows must be 1, got 16"):
            R["TGEMV"](c, a, b2)
        cin = TileAcc("i32", 16, 16)
        with pytest.raises(IllegalInstruction, match="cInMatrix element type i32"):
            R["TMATMUL_ACC"](c, cin, a, b2)
        bias = Tile("Bias", "f16", 1, 16)
        with pytest.raises(IllegalInstruction, match="biasData element type must be f32"):
            R["TMATMUL_BIAS"](c, a, b2, bias)
        with pytest.raises(IllegalInstruction, match="biasData element type must be f32"):
            R["TGEMV_BIAS"](c, a, b2, bias)
        cin32 = TileAcc("i32", 16, 16)
        with pytest.raises(IllegalInstruction, match="cInMatrix element type"):
            R["TGEMV_ACC"](c, cin32, a, b2)
        with pytest.raises(IllegalInstruction, match="not supported on target a2a3"):
            R["TMATMUL_MX"](c, a, a, b2, b2)
        with pytest.raises(IllegalInstruction, match="static shapes must chain on a2a3"):
            R["TMATMUL"](TileAcc("f32", 32, 16), a, b2)
    with pto.target("a5"):
        a = TileLeft("i8", 16, 64)
        b = TileRight("i8", 64, 16)
        c = TileAcc("f32", 16, 16)
        sa = Tile("ScaleLeft", "f8E8M0", 16, 2, "RowMajor", None, "RowMajor", 32)
        sb = Tile("ScaleRight", "f8E8M0", 2, 16, "ColMajor", None, "ColMajor", 32)
        with pytest.raises(IllegalInstruction, match=r"\(f32, i8, i8\) is not supported on a5"):
            R["TGEMV_MX"](c, a, sa, b, sb)
        zz = Tile("Left", "f16", 16, 16, "RowMajor", None, "RowMajor")
        with pytest.raises(IllegalInstruction, match="TileLeft on a5"):
            R["TMATMUL"](c, zz, TileRight("f16", 16, 16))
        a16 = TileLeft("f16", 16, 16, valid=(16, 10))
        with pytest.raises(RuntimeCheckError, match="k mismatch"):
            R["TMATMUL"](c, a16, TileRight("f16", 16, 16))
    with pto.target("cpu"):
        with pytest.raises(PtoError, match="not a RoundMode"):
            R["SETTF32MODE"](isEnable=True, tf32TransMode="sideways")
        with pytest.raises(PtoError, match="not a RoundMode"):
            R["SETHF32MODE"](isEnable=True, hf32TransMode="sideways")


def test_fp8_matmul_is_a5_only() -> None:
    with pto.target("cpu"):
        a = TileLeft("f8E4M3", 16, 32)
        b = TileRight("f8E4M3", 32, 16)
        with pytest.raises(IllegalInstruction, match=r"\(f32, f8E4M3, f8E4M3\) is not supported"):
            R["TMATMUL"](TileAcc("f32", 16, 16), a, b)


def _hif8_codes(shape: tuple[int, int]) -> tuple[np.ndarray, np.ndarray]:
    """HiF8 codes with their values written from the format (sign, dot, exponent, mantissa):
    dot 0001 is 1.mmm (codes 0x08-0x0F), dot 001 with exponent bit e is 1.mmm * 2^(+1 | -1)
    (0x10-0x17: x2, 0x18-0x1F: x0.5), bit 7 the sign."""
    code = RNG.integers(0x08, 0x20, shape)
    frac = 1 + (code & 7) / 8
    val = np.where(code < 0x10, frac, np.where(code < 0x18, frac * 2, frac / 2))
    neg = RNG.integers(0, 2, shape).astype(bool)
    return np.where(neg, code | 0x80, code).astype(np.uint8), np.where(neg, -val, val)


@pytest.mark.parametrize("mkn", [(16, 32, 16), (5, 40, 9)])
def test_hif8_matmul_on_a5(mkn: tuple[int, int, int]) -> None:
    """(f32, hif8, hif8): upstream's a5 CheckMadValid and the TMATMUL / TGEMV pages; the
    products of the decoded values summed in f32."""
    m, k, n = mkn
    with pto.target("a5"):
        a = TileLeft("hif8", 16, 64, valid=(m, k))
        b = TileRight("hif8", 64, 16, valid=(k, n))
        acc = TileAcc("f32", 16, 16, valid=(m, n))
        (ac, av), (bc, bv) = _hif8_codes((m, k)), _hif8_codes((k, n))
        a.write(ac)
        b.write(bc)
        R["TMATMUL"](acc, a, b)
        np.testing.assert_array_equal(acc.numpy()[:m, :n], (av @ bv).astype(np.float32))
    with pto.target("a2a3"):
        with pytest.raises(IllegalInstruction, match=r"\(f32, hif8, hif8\) is not supported"):
            R["TMATMUL"](TileAcc("f32", 16, 16), TileLeft("hif8", 16, 32),
                         TileRight("hif8", 32, 16))

"""Micro-ops of the conversion (09), DSA / SFU (13) and load / store (03) chapters against
references written from the chapter text: Python ints and floats, ``fractions`` for the fused
ops, numpy's IEEE casts for float narrowing, never ptoisa's conversion code."""

from __future__ import annotations

import math
from fractions import Fraction

import ml_dtypes
import numpy as np
import pytest

import ptoisa as pto
from ptoisa import dtypes as D
from ptoisa.errors import ExecutionError, NotExecutedYet, PtoError
from ptoisa.vector.regs import Mask, Ptr, VReg, vreg_spec

RNG = np.random.default_rng(11)


@pytest.fixture
def a5():
    m = pto.target("a5")
    yield m
    from ptoisa import memory

    memory.pop(m)


def _mask(on: np.ndarray, gran: str) -> Mask:
    step = {"b8": 1, "b16": 2, "b32": 4}[gran]
    bits = np.zeros(256, np.bool_)
    bits[::step * (256 // step // on.size)] = on
    return Mask(bits, gran)


def _t(text: str):
    return vreg_spec(f"!pto.vreg<{text}>")


# ---- pto.vcvt ---------------------------------------------------------------------------------

def test_vcvt_f32_to_f16_parts_interleave_and_zero_the_rest(a5):
    a = RNG.uniform(-70000, 70000, 64).astype(np.float32)
    a[:4] = [np.nan, np.inf, -np.inf, 1e-9]
    on = RNG.random(64) < 0.8
    m = _mask(on, "b32")
    ev = pto.v.vcvt(VReg(a), m, result_type=_t("128xf16"), rnd="R", sat="SAT", part="EVEN").data
    od = pto.v.vcvt(VReg(a), m, result_type=_t("128xf16"), rnd="R", sat="SAT", part="ODD").data
    # page: SAT clamps to the finite range, NaN to 0; R is IEEE nearest-even
    want = np.where(np.isnan(a), 0, np.clip(a.astype(np.float64), -65504, 65504))
    want = np.where(on, want.astype(np.float16), np.float16(0))
    np.testing.assert_array_equal(ev[0::2].view(np.uint16), want.view(np.uint16))
    np.testing.assert_array_equal(od[1::2].view(np.uint16), want.view(np.uint16))
    assert not ev[1::2].any() and not od[0::2].any()
    # without sat a float result overflows to infinity
    nos = pto.v.vcvt(VReg(a), _mask(np.ones(64, bool), "b32"), result_type=_t("128xf16"),
                     part="EVEN").data[0::2]
    assert np.isinf(nos[1]) and np.isnan(nos[0])


@pytest.mark.parametrize("rnd,fn", [("R", None), ("A", "away"), ("F", math.floor),
                                    ("C", math.ceil), ("Z", math.trunc)])
def test_vcvt_f32_to_i32_rounding_and_saturation(a5, rnd, fn):
    a = np.concatenate([np.array([0.5, 1.5, 2.5, -0.5, -2.5, 3e9, -3e9, np.nan], np.float32),
                        RNG.uniform(-1000, 1000, 56).astype(np.float32)])
    got = pto.v.vcvt(VReg(a), _mask(np.ones(64, bool), "b32"), result_type=_t("64xi32"),
                     rnd=rnd, sat="SAT").data

    def ref(x: float) -> int:
        if math.isnan(x):
            return 0
        if fn is None:
            r = round(x)  # Python rounds ties to even
        elif fn == "away":
            r = int(math.floor(abs(x) + 0.5)) * (1 if x >= 0 else -1)
        else:
            r = fn(x)
        return max(-2**31, min(2**31 - 1, int(r)))

    np.testing.assert_array_equal(got, np.array([ref(float(x)) for x in a], np.int32))


def test_vcvt_i32_to_i16_sat_and_nosat(a5):
    a = RNG.integers(-2**31, 2**31, 64, dtype=np.int64).astype(np.int32)
    on = np.ones(64, bool)
    s = pto.v.vcvt(VReg(a), _mask(on, "b32"), result_type=_t("128xi16"), sat="SAT",
                   part="ODD").data[1::2]
    np.testing.assert_array_equal(s, [max(-32768, min(32767, int(x))) for x in a])
    w = pto.v.vcvt(VReg(a), _mask(on, "b32"), result_type=_t("128xi16"), sat="NOSAT",
                   part="EVEN").data[0::2]
    np.testing.assert_array_equal(w, [(int(x) + 2**15) % 2**16 - 2**15 for x in a])


def test_vcvt_widening_reads_the_parts_lanes(a5):
    h = RNG.uniform(-10, 10, 128).astype(np.float16)
    h[:3] = [np.inf, -np.inf, np.nan]
    on = RNG.random(128) < 0.7
    for part, off in (("EVEN", 0), ("ODD", 1)):
        got = pto.v.vcvt(VReg(h), _mask(on, "b16"), result_type=_t("64xf32"), part=part).data
        src = h[off::2].astype(np.float64)  # widening is exact
        want = np.where(on[off::2], src, 0.0).astype(np.float32)
        np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))
    b = RNG.integers(-128, 128, 256).astype(np.int8)
    got = pto.v.vcvt(VReg(b), _mask(np.ones(256, bool), "b8"), result_type=_t("64xi32"),
                     part="P2").data
    np.testing.assert_array_equal(got, b[2::4].astype(np.int64))


def test_vcvt_f32_to_fp8_p_parts(a5):
    a = RNG.uniform(-600, 600, 64).astype(np.float32)
    got = pto.v.vcvt(VReg(a), _mask(np.ones(64, bool), "b32"), result_type=_t("256xf8E4M3FN"),
                     rnd="R", sat="SAT", part="P3").data
    want = np.clip(a.astype(np.float64), -448, 448).astype(ml_dtypes.float8_e4m3fn)
    np.testing.assert_array_equal(got[3::4].view(np.uint8), want.view(np.uint8))
    assert not got.view(np.uint8)[0::4].any()


def test_vcvt_bad_uses_are_named(a5):
    a = VReg(np.zeros(64, np.float32))
    m = _mask(np.ones(64, bool), "b32")
    with pytest.raises(PtoError, match="part"):
        pto.v.vcvt(a, m, result_type=_t("128xf16"))
    with pytest.raises(PtoError, match="not supported on a5"):
        pto.v.vcvt(a, m, result_type=_t("256xui8"), part="P0")
    bf = VReg(np.zeros(128, ml_dtypes.bfloat16))
    with pytest.raises(PtoError, match="P0, P1, P2, or P3 for packed"):
        pto.v.vcvt(bf, _mask(np.ones(128, bool), "b16"), result_type=_t("256xf4E2M1x2"),
                   part="EVEN")
    with pytest.raises(PtoError, match="sat attr is not valid for this vcvt type pair"):
        pto.v.vcvt(bf, _mask(np.ones(128, bool), "b16"), result_type=_t("256xf4E2M1x2"),
                   part="P0", sat="SAT")


_F4_KERNEL = """
module attributes {pto.target_arch = "a5"} {
  func.func @k(%in: !pto.ptr<ui8, gm>, %out: !pto.ptr<bf16, gm>) attributes {pto.kernel} {
    %c0 = arith.constant 0 : index
    %c0_i64 = arith.constant 0 : i64
    %c1_i64 = arith.constant 1 : i64
    %c256_i64 = arith.constant 256 : i64
    %c1024_i64 = arith.constant 1024 : i64
    %ub_u8 = pto.castptr %c0_i64 : i64 -> !pto.ptr<ui8, ub>
    %ub_in = pto.castptr %c0_i64 : i64 -> !pto.ptr<!pto.F4, ub>
    %ub_out = pto.castptr %c1024_i64 : i64 -> !pto.ptr<bf16, ub>
    pto.mte_gm_ub %in, %ub_u8, %c0_i64, %c256_i64 nburst(%c1_i64, %c256_i64, %c256_i64)
      : !pto.ptr<ui8, gm>, !pto.ptr<ui8, ub>, i64, i64, i64, i64, i64
    pto.set_flag["PIPE_MTE2", "PIPE_V", "EVENT_ID0"]
    pto.wait_flag["PIPE_MTE2", "PIPE_V", "EVENT_ID0"]
    pto.vecscope {
      %m8 = pto.pset_b8 "PAT_ALL" : !pto.mask<b8>
      %m16 = pto.pset_b16 "PAT_ALL" : !pto.mask<b16>
      %v = pto.vlds %ub_in[%c0] : !pto.ptr<!pto.F4, ub> -> !pto.vreg<256x!pto.F4>
      %w = pto.vcvt %v, %m8 {part = "PART"} : !pto.vreg<256x!pto.F4>, !pto.mask<b8>
        -> !pto.vreg<128xbf16>
      pto.vsts %w, %ub_out[%c0], %m16 : !pto.vreg<128xbf16>, !pto.ptr<bf16, ub>, !pto.mask<b16>
    }
    pto.set_flag["PIPE_V", "PIPE_MTE3", "EVENT_ID0"]
    pto.wait_flag["PIPE_V", "PIPE_MTE3", "EVENT_ID0"]
    %ub_o8 = pto.castptr %c1024_i64 : i64 -> !pto.ptr<ui8, ub>
    %gm_o8 = pto.castptr %out : !pto.ptr<bf16, gm> -> !pto.ptr<ui8, gm>
    pto.mte_ub_gm %ub_o8, %gm_o8, %c256_i64 nburst(%c1_i64, %c256_i64, %c256_i64)
      : !pto.ptr<ui8, ub>, !pto.ptr<ui8, gm>, i64, i64, i64, i64
    pto.barrier #pto.pipe<PIPE_ALL>
    return
  }
}
"""


def _fp4_ref_values(e_bits: int, m_bits: int) -> list[float]:
    """The 8 magnitudes of a 1/e/m 4-bit float with bias 1 and no inf/NaN (OCP MX fp4 e2m1;
    e1m2 the same rule), code order."""
    out = []
    for c in range(8):
        e, m = c >> m_bits, c & ((1 << m_bits) - 1)
        out.append(m / 2 ** m_bits if e == 0 else (1 + m / 2 ** m_bits) * 2.0 ** (e - 1))
    return out


def _fp4_ref_code(x: float, mags: list[float]) -> int:
    """Round to nearest, ties to the even code; beyond the largest: the largest (saturate)."""
    a = min(abs(x), mags[-1])
    best = min(range(8), key=lambda c: (abs(mags[c] - a), c % 2))
    return best | (8 if math.copysign(1.0, x) < 0 else 0)


@pytest.mark.parametrize(("name", "e", "m"), [("f4E2M1x2", 2, 1), ("f4E1M2x2", 1, 2)])
@pytest.mark.parametrize("part", ["P0", "P1", "P2", "P3"])
def test_vcvt_bf16_to_packed_fp4_and_back(a5, name, e, m, part):
    """A pair of bf16 lanes (one 32-bit slot) fills byte ``part`` of its slot, the first value
    in the low nibble (PTOAS's vcvt-low-precision-special layout); back, byte ``part`` of each
    slot gives two bf16 lanes."""
    mags = _fp4_ref_values(e, m)
    p = int(part[1])
    vals = [v * s for v in mags for s in (1.0, -1.0)]
    vals += [(mags[i] + mags[i + 1]) / 2 * s for i in range(7) for s in (1.0, -1.0)]  # ties
    vals += [100.0, -100.0, mags[-1] * 1.01, 0.3 * mags[1]]
    x = np.resize(np.array(vals, np.float32), 128).astype(ml_dtypes.bfloat16)
    on = np.ones(128, bool)
    on[5] = on[64] = False
    got = pto.v.vcvt(VReg(x), _mask(on, "b16"), result_type=_t(f"256x{name}"), rnd="R",
                     part=part).data.view(np.uint8)
    codes = [_fp4_ref_code(float(v), mags) if on[i] else 0 for i, v in enumerate(x)]
    want = np.zeros(256, np.uint8)
    for i in range(64):
        want[4 * i + p] = codes[2 * i] | (codes[2 * i + 1] << 4)
    np.testing.assert_array_equal(got, want)
    # back to bf16 (in a kernel: an eager register of bytes does not say it holds fp4):
    # byte ``part`` of each slot gives two bf16 lanes, the low nibble's first
    src = np.zeros(256, np.uint8)
    src[p::4] = np.arange(64, dtype=np.uint8) * 4 + 1  # (varied nibbles)
    out = np.zeros(128, ml_dtypes.bfloat16)
    pto.load(_F4_KERNEL.replace("F4", name).replace("PART", part), filename="k.pto",
             target="a5").run("k", src, out, target="a5")
    ref = []
    for i in range(64):
        b = int(src[4 * i + p])
        for nib in (b & 0xF, b >> 4):
            ref.append(-mags[nib & 7] if nib & 8 else mags[nib & 7])
    back = out
    np.testing.assert_array_equal(back.astype(np.float32), np.array(ref, np.float32))


# ---- DSA / SFU --------------------------------------------------------------------------------

def test_vprelu_vaxpy_vmula(a5):
    x, al, y = (RNG.uniform(-4, 4, 64).astype(np.float32) for _ in range(3))
    on = RNG.random(64) < 0.75
    m = _mask(on, "b32")
    got = pto.v.vprelu(VReg(x), VReg(al), m).data
    np.testing.assert_array_equal(got, np.where(on, np.where(x >= 0, x, al * x), 0))

    def fused(vals):  # exact in rationals, rounded once (f64 holds the exact f32 value)
        return np.float32(float(vals))

    got = pto.v.vaxpy(VReg(x), VReg(y), 1.75, m).data
    want = [fused(Fraction(7, 4) * Fraction(float(a)) + Fraction(float(b))) if o else 0
            for a, b, o in zip(x, y, on, strict=True)]
    np.testing.assert_array_equal(got, np.array(want, np.float32))
    got = pto.v.vmula(VReg(y), VReg(x), VReg(al), m).data
    want = [fused(Fraction(float(c)) + Fraction(float(a)) * Fraction(float(b))) if o else 0
            for c, a, b, o in zip(y, x, al, on, strict=True)]
    np.testing.assert_array_equal(got, np.array(want, np.float32))
    i = [RNG.integers(-2**31, 2**31, 64, dtype=np.int64).astype(np.int32) for _ in range(3)]
    got = pto.v.vmula(VReg(i[0]), VReg(i[1]), VReg(i[2]), m).data
    want = [((int(c) + int(a) * int(b) + 2**31) % 2**32 - 2**31) if o else 0
            for c, a, b, o in zip(*i, on, strict=True)]
    np.testing.assert_array_equal(got, want)


def test_vmadd_multiplies_the_accumulator(a5):
    """07-binary-vector-ops.md: dst[i] = src0[i] * acc[i] + src1[i], fused (one rounding)."""
    acc, lhs, rhs = (RNG.uniform(-4, 4, 64).astype(np.float32) for _ in range(3))
    on = RNG.random(64) < 0.75
    got = pto.v.vmadd(VReg(acc), VReg(lhs), VReg(rhs), _mask(on, "b32")).data
    want = [np.float32(float(Fraction(float(a)) * Fraction(float(c)) + Fraction(float(b))))
            if o else 0 for c, a, b, o in zip(acc, lhs, rhs, on, strict=True)]
    np.testing.assert_array_equal(got, np.array(want, np.float32))
    with pytest.raises(PtoError, match="not supported on a5"):
        i = VReg(np.zeros(64, np.int32))
        pto.v.vmadd(i, i, i, _mask(on, "b32"))


@pytest.mark.parametrize("dt", ["i32", "ui32"])
def test_vmull_low_and_high_words(a5, dt):
    npt = D.dtype(dt).np
    info = np.iinfo(npt)
    a, b = (RNG.integers(info.min, info.max, 64, endpoint=True, dtype=np.int64).astype(npt)
            for _ in range(2))
    on = RNG.random(64) < 0.8
    lo, hi = pto.v.vmull(VReg(a), VReg(b), _mask(on, "b32"))
    prod = [int(x) * int(y) % 2**64 for x, y in zip(a, b, strict=True)]
    want_lo = np.array([p & 0xFFFFFFFF if o else 0 for p, o in zip(prod, on, strict=True)],
                       np.uint32).view(npt)
    want_hi = np.array([p >> 32 if o else 0 for p, o in zip(prod, on, strict=True)],
                       np.uint32).view(npt)
    np.testing.assert_array_equal(lo.data, want_lo)
    np.testing.assert_array_equal(hi.data, want_hi)


def test_vexpdif_f32_and_f16_parts(a5):
    x, mx = RNG.uniform(-8, 8, 64).astype(np.float32), RNG.uniform(-8, 8, 64).astype(np.float32)
    on = RNG.random(64) < 0.8
    got = pto.v.vexpdif(VReg(x), VReg(mx), _mask(on, "b32"), part="ODD").data
    want = [np.float32(math.exp(float(np.float32(a - b)))) if o else 0
            for a, b, o in zip(x, mx, on, strict=True)]
    np.testing.assert_array_equal(got, np.array(want, np.float32))
    h, hm = RNG.uniform(-4, 4, 128).astype(np.float16), RNG.uniform(-4, 4, 128).astype(np.float16)
    got = pto.v.vexpdif(VReg(h), VReg(hm), _mask(np.ones(128, bool), "b16"), part="ODD").data
    want = [np.float32(math.exp(float(np.float32(a) - np.float32(b))))
            for a, b in zip(h[1::2], hm[1::2], strict=True)]
    np.testing.assert_array_equal(got, np.array(want, np.float32))


def test_vci_orders_and_wrap(a5):
    np.testing.assert_array_equal(pto.v.vci(5, result_type=_t("64xi32")).data,
                                  np.arange(5, 69))
    got = pto.v.vci(100, result_type=_t("256xi8"), order="ASC").data
    np.testing.assert_array_equal(got, [(100 + i + 128) % 256 - 128 for i in range(256)])
    got = pto.v.vci(2.5, result_type=_t("128xf16"), order="DESC").data
    np.testing.assert_array_equal(got, np.array([2.5 - i for i in range(128)], np.float16))


def test_vbitsort_records(a5):
    sc = RNG.integers(-5, 5, 64).astype(np.float32)  # many ties
    ix = RNG.integers(0, 2**32, 64, dtype=np.uint64).astype(np.uint32)
    pto.v.vsts(VReg(sc), Ptr("ub", 0, D.f32), 0, _mask(np.ones(64, bool), "b32"))
    pto.v.vsts(VReg(ix), Ptr("ub", 256, D.dtype("ui32")), 0, _mask(np.ones(64, bool), "b32"))
    pto.v.vbitsort(Ptr("ub", 1024, D.dtype("ui32")), Ptr("ub", 0, D.f32),
                   Ptr("ub", 256, D.dtype("ui32")), 2)
    for r in range(2):
        got = pto.v.vlds(Ptr("ub", 1024 + 256 * r, D.dtype("ui32")), 0)[0].data
        rows = sorted(range(32), key=lambda k: -float(sc[32 * r + k]))  # stable: ties in order
        want = []
        for k in rows:
            want += [int(sc[32 * r + k:32 * r + k + 1].view(np.uint32)[0]), int(ix[32 * r + k])]
        np.testing.assert_array_equal(got, np.array(want, np.uint32))


# ---- load / store forms -----------------------------------------------------------------------

def test_vlds_unpk_and_vsts_packing(a5):
    src = np.arange(256, dtype=np.int16) * 3
    base = Ptr("ub", 2048, D.i16)
    pto.v.vsts(VReg(src[:128].copy()), base, 0, _mask(np.ones(128, bool), "b16"))
    got = pto.v.vlds(base, 4, dist="UNPK_B16")[0].data
    want = np.zeros(128, np.int16)
    want[0::2] = src[4:68]  # page: expand packed 16-bit data into 32-bit slots
    np.testing.assert_array_equal(got, want)
    v = np.arange(64, dtype=np.uint32) * 0x01010101 + 0x00020003
    out = Ptr("ub", 4096, D.dtype("ui32"))
    pto.v.vsts(VReg(np.full(64, 0xFFFFFFFF, np.uint32)), out, 0,
               _mask(np.ones(64, bool), "b32"))
    on = np.arange(64) % 3 != 0
    pto.v.vsts(VReg(v), out, 0, _mask(on, "b32"), dist="PK_B32")
    got16 = pto.v.vlds(Ptr("ub", 4096, D.dtype("ui16")), 0)[0].data[:64]
    np.testing.assert_array_equal(got16, np.where(on, v & 0xFFFF, 0xFFFF))
    pto.v.vsts(VReg(v), out, 0, _mask(np.ones(64, bool), "b32"), dist="PK4_B32")
    got8 = pto.v.vlds(Ptr("ub", 4096, D.dtype("ui8")), 0)[0].data[:64]
    np.testing.assert_array_equal(got8, v & 0xFF)
    with pytest.raises(ExecutionError, match="cannot be executed.*MRG4CHN_B8"):
        pto.v.vsts(VReg(v.view(np.uint8)), out, 0, _mask(np.ones(256, bool), "b8"),
                   dist="MRG4CHN_B8")


# ---- dual / block-strided loads and stores, SPR AR, DMA registers, atomic --------------------

def test_vldsx2_vstsx2_deinterleave_and_back(a5):
    src = np.arange(256, dtype=np.int32) * 7 - 900
    base = Ptr("ub", 8192, D.i32)
    for k in range(4):
        pto.v.vsts(VReg(src[64 * k:64 * (k + 1)].copy()), base, 64 * k,
                   _mask(np.ones(64, bool), "b32"))
    lo, hi, nxt = pto.v.vldsx2(base, 64, dist="DINTLV_B32")
    np.testing.assert_array_equal(lo.data, src[64:192:2])  # page: low = even elements
    np.testing.assert_array_equal(hi.data, src[65:192:2])
    assert nxt.addr == 8192 + 256
    out = Ptr("ub", 12288, D.i32)
    pto.v.vstsx2(hi, lo, out, 0, _mask(np.zeros(64, bool), "b32"), dist="INTLV_B32")
    back = np.concatenate([pto.v.vlds(out, 0)[0].data, pto.v.vlds(out, 64)[0].data])
    want = np.empty(128, np.int32)
    want[0::2], want[1::2] = src[65:192:2], src[64:192:2]  # predicate ignored
    np.testing.assert_array_equal(back, want)
    with pytest.raises(ExecutionError, match="cannot be executed.*BDINTLV"):
        pto.v.vldsx2(base, 0, dist="BDINTLV")


def test_vsldb_vsstb_blocks(a5):
    src = np.arange(512, dtype=np.float32)
    base = Ptr("ub", 16384, D.f32)
    for k in range(8):
        pto.v.vsts(VReg(src[64 * k:64 * (k + 1)].copy()), base, 64 * k,
                   _mask(np.ones(64, bool), "b32"))
    on = np.array([1, 1, 0, 1, 1, 1, 1, 0], bool)  # lanes 0..7 of the b32 mask: the blocks
    m = _mask(np.concatenate([on, np.ones(56, bool)]), "b32")
    got = pto.v.vsldb(base, 2, 3, m)[0].data
    want = np.zeros(64, np.float32)
    for blk in range(8):  # page: block blk from base + repeat_stride + blk * block_stride
        if on[blk]:
            at = 8 * (3 + 2 * blk)
            want[8 * blk:8 * blk + 8] = src[at:at + 8]
    np.testing.assert_array_equal(got, want)
    val = np.arange(64, dtype=np.float32) + 1000
    out = Ptr("ub", 32768, D.f32)
    for k in range(4):
        pto.v.vsts(VReg(np.zeros(64, np.float32)), out, 64 * k, _mask(np.ones(64, bool), "b32"))
    nxt = pto.v.vsstb(VReg(val), out, 3, 1, m)
    img = np.concatenate([pto.v.vlds(out, 64 * k)[0].data for k in range(4)])
    want = np.zeros(256, np.float32)
    for blk in range(8):
        if on[blk]:
            at = 8 * (1 + 3 * blk)
            want[at:at + 8] = val[8 * blk:8 * blk + 8]
    np.testing.assert_array_equal(img, want)
    assert nxt.addr == 32768 + 32


def test_spr_ar_stores(a5):
    p = Ptr("ub", 40960, D.dtype("ui32"))
    pto.v.vsts(VReg(np.full(64, 0xDEADBEEF, np.uint32)), p, 0, _mask(np.ones(64, bool), "b32"))
    # (the spec gives AR no reset value: a store before sprclr is refused by name)
    with pytest.raises(NotExecutedYet, match="sprclr.*no reset value"):
        pto.v.sprsts(p, 0, spr="AR")
    pto.v.sprclr(spr="AR")
    pto.v.sprsti(p, 3, spr="AR")  # words
    pto.v.sprsts(p, 20, spr="AR")  # bytes
    got = pto.v.vlds(p, 0)[0].data[:8]
    want = np.full(8, 0xDEADBEEF, np.uint32)
    want[3] = want[5] = 0
    np.testing.assert_array_equal(got, want)


def test_dma_loop_registers_and_atomic_add(a5):
    gm = np.arange(1024, dtype=np.uint8)
    u8 = D.dtype("ui8")
    pto.v.set_loop_size_outtoub(2, 3)
    pto.v.set_loop1_stride_outtoub(100, 64)
    pto.v.set_loop2_stride_outtoub(300, 128)
    pto.v.copy_gm_to_ubuf(gm, Ptr("ub", 0, u8), 0, 2, 8, 0, 0, False, 0, 20, 32)
    ub = np.concatenate([pto.v.vlds(Ptr("ub", 0, u8), k)[0].data for k in (0, 256)])
    for l2 in range(3):  # legacy page: loop2 outer, loop1, then the burst rows
        for l1 in range(2):
            for r in range(2):
                s, d = 300 * l2 + 100 * l1 + 20 * r, 128 * l2 + 64 * l1 + 32 * r
                np.testing.assert_array_equal(ub[d:d + 8], gm[s:s + 8])
    pto.v.set_loop_size_outtoub(2, 1)
    pto.v.set_loop1_stride_outtoub(0, 0)
    with pytest.raises(ExecutionError, match="padding"):
        pto.v.copy_gm_to_ubuf(gm, Ptr("ub", 0, u8), 0, 1, 8, 1, 0, False, 0, 8, 32)
    out = np.full(16, 10, np.int32)
    src = Ptr("ub", 2048, D.i32)
    pto.v.vsts(VReg(np.arange(64, dtype=np.int32) - 5), src, 0, _mask(np.ones(64, bool), "b32"))
    pto.v.set_atomic_s32()
    pto.v.set_atomic_add()
    pto.v.mte_ub_gm(src, out, 64, (1, 64, 64), None, None)
    pto.v.set_atomic_none()
    np.testing.assert_array_equal(out, 10 + np.arange(16) - 5)
    pto.v.mte_ub_gm(src, out, 64, (1, 64, 64), None, None)
    np.testing.assert_array_equal(out, np.arange(16) - 5)


def test_micro_registers_start_unset_in_every_launch(a5):
    """DMA loop registers, AR and the atomic mode set in one launch are not there in the next
    (a machine is reused across launches: state left over would make a result depend on what
    ran before)."""
    gm = np.arange(64, dtype=np.uint8)
    u8 = D.dtype("ui8")

    def sets() -> None:
        pto.v.set_loop_size_outtoub(1, 1)
        pto.v.set_loop1_stride_outtoub(0, 0)
        pto.v.set_loop2_stride_outtoub(0, 0)
        pto.v.sprclr(spr="AR")
        pto.v.set_atomic_s32()
        pto.v.set_atomic_add()

    def reads() -> None:
        pto.v.copy_gm_to_ubuf(gm, Ptr("ub", 0, u8), 0, 1, 8, 0, 0, False, 0, 8, 32)

    pto.launch(sets, target="a5")
    with pytest.raises(NotExecutedYet, match="loop sizes were never set .* no reset value"):
        pto.launch(reads, target="a5")
    m = pto.target("a5")
    sets()
    assert set(m.micro_regs) == {"dma_loop", "AR", "atomic"}
    m.reset_for_launch()
    assert m.micro_regs == {}


def test_an_op_without_operands_ends_at_the_line():
    from ptoisa.text import parse

    mod = parse('module {\n  func.func @k() {\n    pto.set_atomic_s32\n    pto.set_atomic_add\n'
                '    pto.barrier #pto.pipe<PIPE_ALL>\n    return\n  }\n}\n')
    names = []

    def walk(ops):
        for o in ops:
            names.append((o.name, len(o.syntax or ())))
            for r in getattr(o, "regions", ()):
                for b in r.blocks:
                    walk(b.ops)

    walk(mod.ops if hasattr(mod, "ops") else mod.body.ops)
    assert ("pto.set_atomic_s32", 0) in names and ("pto.set_atomic_add", 0) in names


def test_unaligned_load_and_store_streams(a5):
    src = np.arange(512, dtype=np.float32) + 0.5
    base = Ptr("ub", 49152, D.f32)
    for k in range(8):
        pto.v.vsts(VReg(src[64 * k:64 * (k + 1)].copy()), base, 64 * k,
                   _mask(np.ones(64, bool), "b32"))
    p = base.plus(3)  # not 32-byte aligned
    al = pto.v.vldas(p)
    v, al, nxt = pto.v.vldus(p, al, 64)
    np.testing.assert_array_equal(v.data, src[3:67])  # page: the vector at the address
    v2, _, _ = pto.v.vldus(nxt, al, 64)
    np.testing.assert_array_equal(v2.data, src[67:131])
    with pytest.raises(ExecutionError, match="vldas"):
        pto.v.vldus(p, pto.v.init_align(), 64)
    out = Ptr("ub", 57344, D.f32)
    for k in range(2):
        pto.v.vsts(VReg(np.full(64, -1, np.float32)), out, 64 * k,
                   _mask(np.ones(64, bool), "b32"))
    val = VReg(np.arange(64, dtype=np.float32) * 10)
    st = pto.v.init_align()
    cur = out.plus(1)
    for _ in range(4):  # 4 x 3 elements: the stream is elements [1, 13) of out
        st, cur = pto.v.vstus(st, 3, val, cur)
    assert cur.addr == out.addr + 13 * 4
    mid = pto.v.vlds(out, 0)[0].data
    # whole 32-byte blocks committed (elements [1, 8)), the tail [8, 13) still pending
    np.testing.assert_array_equal(mid[:13], [-1] + [0, 10, 20] * 2 + [0] + [-1] * 5)
    with pytest.raises(ExecutionError, match="stream's end"):
        pto.v.vstar(st, out.plus(12))
    pto.v.vstas(st, out.plus(10), 3)
    got = pto.v.vlds(out, 0)[0].data
    np.testing.assert_array_equal(got[:14], [-1] + [0, 10, 20] * 4 + [-1])


_TABLE_MAIN = """
void LaunchK(uint8_t *a, uint8_t *b, uint8_t *c, void *stream);
int main() {
  constexpr size_t kBufferCount = 3;
  constexpr size_t kBytes = 1024;
  const char *files[kBufferCount] = {"in_a.bin", "in_b.bin", "out_c.bin"};
  constexpr size_t kOutputIndices[1] = {2};
  uint8_t *host[kBufferCount] = {};
  uint8_t *device[kBufferCount] = {};
  for (size_t i = 0; i < kBufferCount; ++i) {
    aclrtMallocHost((void **)(&host[i]), kBytes);
    aclrtMalloc((void **)&device[i], kBytes, ACL_MEM_MALLOC_HUGE_FIRST);
    size_t fileSize = kBytes;
    ReadFile(files[i], fileSize, host[i], kBytes);
    aclrtMemcpy(device[i], kBytes, host[i], kBytes, ACL_MEMCPY_HOST_TO_DEVICE);
  }
  LaunchK(device[0], device[1], device[2], stream);
  for (size_t outputIndex : kOutputIndices) {
    size_t i = outputIndex;
    aclrtMemcpy(host[i], kBytes, device[i], kBytes, ACL_MEMCPY_DEVICE_TO_HOST);
    WriteFile(files[i], host[i], kBytes);
  }
}
"""


def test_host_tables_of_file_names_and_output_indices(tmp_path):
    """main.cpp's buffers made in a loop with one size, their files a table of names, the
    write-back a loop over a table of buffer numbers (PTOAS's vcvt-low-precision-special)."""
    from ptoisa.suite import goldens

    (tmp_path / "main.cpp").write_text(_TABLE_MAIN)
    (tmp_path / "launch.cpp").write_text(
        "void LaunchK(uint8_t *a, uint8_t *b, uint8_t *c, void *stream) {\n"
        "  k<<<1, nullptr, stream>>>(a, b, c);\n}\n")
    host = goldens.vpto_host(tmp_path)
    assert [b[:3] for b in host.buffers[:3]] == [(1024, "in_a.bin", None),
                                                 (1024, "in_b.bin", None),
                                                 (1024, "out_c.bin", "out_c.bin")]

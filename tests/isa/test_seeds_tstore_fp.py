"""TSTORE_FP: Acc -> GM through the fix-pipe with per-column quant words (seed page and
seeds_check.md section 3). Quant words are built here by an encoder written from the notes."""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np
import pytest

import ptoisa as pto
from ptoisa import AtomicType, Dyn, GlobalTensor, Layout, ReluPreMode, Tile, TileType
from ptoisa.errors import NotExecutedYet

NP = {"f32": np.float32, "f16": np.float16, "bf16": ml_dtypes.bfloat16, "i8": np.int8,
      "ui8": np.uint8, "i16": np.int16, "i32": np.int32, "f8E4M3": ml_dtypes.float8_e4m3fn}

# (src, dst) pairs from the docs' tables (tstore.md / seeds_check.md 3), not from the code:
# a2a3 adds i32 -> i16 (VSHIFTS322S16, implemented by the NPU code although not in the table).
PAIRS = {
    # (the last four: plain conversions, fp unread; PTOAS emits the fp form for them)
    "a2a3": [("f32", "i8"), ("f32", "ui8"), ("i32", "i8"), ("i32", "ui8"), ("i32", "f16"),
             ("i32", "i16"), ("f32", "f16"), ("f32", "bf16"), ("f32", "f32"), ("i32", "i32")],
    "a5": [("f32", "i8"), ("f32", "ui8"), ("f32", "f16"), ("f32", "bf16"), ("f32", "f8E4M3"),
           ("f32", "f32"), ("i32", "i8"), ("i32", "ui8"), ("i32", "f16"), ("i32", "bf16")],
}
ALL_PAIRS = sorted(set(PAIRS["a2a3"]) | set(PAIRS["a5"]) | {("f32", "i32"), ("i32", "f32"),
                                                             ("i32", "i32")})


def qword(scale: float = 1.0, offset: int = 0, signed: bool = True, shift: int = 0) -> int:
    """A fix-pipe quant word: 19-bit scale (sign, 8-bit exponent bias 127, 10-bit mantissa)
    in bits [13..31], shift (i32 -> i16, minus one) in [32..35], offset in [37..45], sign
    in bit 46."""
    word = 0
    if scale != 0:
        mant, exp = math.frexp(abs(scale))  # abs(scale) = mant * 2**exp, mant in [0.5, 1)
        frac = mant * 2 - 1  # 1.frac * 2**(exp - 1)
        m10 = round(frac * 1024)
        assert m10 / 1024 == frac, f"scale {scale} needs more than 10 mantissa bits"
        e8 = exp - 1 + 127
        assert 0 < e8 < 255
        word |= ((1 if scale < 0 else 0) << 31) | (e8 << 23) | (m10 << 13)
    assert 0 <= offset < 512 and 0 <= shift < 16
    return word | (shift << 32) | (offset << 37) | (int(signed) << 46)


def test_encoder_sanity():
    assert qword(1.0, signed=False) == 0x3F800000
    assert qword(-1.5, signed=False) == 0xBFC00000
    assert qword(0.0, 5, True) == (5 << 37) | (1 << 46)


def _fp_tile(words):
    fp = Tile(TileType.Scaling, "ui64", 1, 16, valid=(1, Dyn(len(words))))
    row = np.zeros((1, 16), np.uint64)
    row[0, :len(words)] = words
    fp.load_numpy(row)
    return fp


def _store(src_dtype, dst_dtype, x, words, *, valid=None, atomic=False, relu=False,
           init=None, rows=16, cols=16):
    acc = pto.TileAcc(src_dtype, rows, cols, valid=valid)
    acc.load_numpy(np.asarray(x).astype(NP[src_dtype]))
    vr, vc = acc.valid_shape
    mem = np.zeros((vr, vc), NP[dst_dtype]) if init is None else init.copy()
    gm = GlobalTensor(mem)
    kw = {}
    if atomic:
        kw["atomicType"] = AtomicType.AtomicAdd
    if relu:
        kw["reluPreMode"] = ReluPreMode.NormalRelu
    ev = pto.TSTORE_FP(gm, acc, _fp_tile(words), **kw)
    assert ev.pipe is pto.Pipe.FIX
    return mem


def _b8_ref(x, scales, offsets, signed):
    """clamp(rint(x * scale + offset)) with ties to even, per output column."""
    y = np.rint(x.astype(np.float64) * scales + offsets)
    lo, hi = (-128, 127) if signed else (0, 255)
    return np.clip(y, lo, hi)


# ---- every dtype pair of the tables -------------------------------------------------------

@pytest.mark.parametrize("pair", ALL_PAIRS, ids="->".join)
@pytest.mark.parametrize("tgt", ["a2a3", "a5"])
def test_pair_legality_on_npu(tgt, pair):
    pto.target(tgt)
    s, d = pair
    x = np.arange(256).reshape(16, 16) % 9 - 4
    words = [qword(1.0, 0, d == "i8")] * 16
    if pair in PAIRS[tgt]:
        out = _store(s, d, x, words)
        ref = np.clip(x, 0, None) if d == "ui8" else x >> 1 if d == "i16" else x
        np.testing.assert_array_equal(out.astype(np.float64), ref)
        return
    with pytest.raises(pto.UnsupportedType,
                       match=rf"tstore_fp: type combination src {s} -> dst {d} is not supported "
                             rf"on {tgt} \(supported: .*f32->i8.*\)"):
        _store(s, d, x, words)


@pytest.mark.parametrize("tgt", ["cpu", "a2a3", "a5"])
@pytest.mark.parametrize("signed", [True, False])
@pytest.mark.parametrize("src", ["f32", "i32"])
def test_b8_per_column_scale_offset_rounding_and_clamp(tgt, signed, src):
    pto.target(tgt)
    dst = "i8" if signed else "ui8"
    scales = np.array([0.5, 1.0, 2.0, 0.25, 1.5, -1.0, 0.125, 3.0] * 2)
    offsets = np.array([0, 3, 0, 100, 7, 0, 255, 1] * 2)
    words = [qword(float(s), int(o), signed) for s, o in zip(scales, offsets, strict=True)]
    rng = np.random.default_rng(1)
    x = rng.integers(-300, 300, (16, 16))
    if src == "f32":
        x = x / 4.0  # quarter steps: many exact ties after scaling
    x[0, :] = [1, 5, 0.5 if src == "f32" else 1, 2, 3, -3, 1, 1] * 2  # explicit ties/edges
    out = _store(src, dst, x, words)
    ref = _b8_ref(np.asarray(x, NP[src]), scales, offsets, signed)
    np.testing.assert_array_equal(out.astype(np.int64), ref.astype(np.int64))


@pytest.mark.parametrize("tgt", ["cpu", "a2a3", "a5"])
def test_b8_ties_to_even(tgt):
    pto.target(tgt)
    x = np.zeros((16, 16), np.float32)
    x[0, :8] = [0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 126.5, 127.5]
    out = _store("f32", "i8", x, [qword(1.0, 0, True)] * 16)
    np.testing.assert_array_equal(out[0, :8], [0, 2, 2, 0, -2, -2, 126, 127])
    # with an offset of 10: 12.5 -> 12, 13.5 -> 14
    x[1, :2] = [2.5, 3.5]
    out = _store("f32", "ui8", x, [qword(1.0, 10, False)] * 16)
    np.testing.assert_array_equal(out[1, :2], [12, 14])
    assert out[0, 3] == 10  # -0.5 + 10 = 9.5 -> 10 (even)


@pytest.mark.parametrize("tgt", ["cpu", "a2a3", "a5"])
def test_quantisation_is_per_output_column_not_per_row(tgt):
    pto.target(tgt)
    x = np.full((16, 16), 8, np.int32)
    words = [qword(2.0 ** -(c % 4), 0, True) for c in range(16)]
    out = _store("i32", "i8", x, words)
    np.testing.assert_array_equal(out, np.tile([8, 4, 2, 1], (16, 4)))


@pytest.mark.parametrize("tgt", ["cpu", "a2a3", "a5"])
def test_i32_to_f16_dequant_clamps(tgt):
    pto.target(tgt)
    x = np.zeros((16, 16), np.int64)
    x[0, :6] = [3, -3, 100000, -100000, 65504, 2**31 - 1]
    x[1, :] = np.arange(16) * 1000
    words = [qword(0.5)] + [qword(1.0)] * 15
    out = _store("i32", "f16", x, words)
    scales = np.array([0.5] + [1.0] * 15)
    ref = np.clip(x * scales, -65504, 65504).astype(np.float16)
    np.testing.assert_array_equal(out, ref)
    assert out[0, 2] == 65504 and out[0, 3] == -65504 and out[0, 0] == 1.5


@pytest.mark.parametrize("tgt", ["cpu", "a2a3"])
def test_i32_to_i16_shift_saturates(tgt):
    """Arithmetic shift by (bits[32..35] + 1), then saturation to int16 (the hardware; the
    upstream CPU simulator truncates to int16 first and wraps, a documented difference)."""
    pto.target(tgt)
    x = np.zeros((16, 16), np.int64)
    x[0, :8] = [2**20, -2**20, 65534, 65536, -3, 7, 2**31 - 1, -2**31]
    shifts = [0, 0, 0, 0, 0, 0, 3, 3] + list(range(8))
    out = _store("i32", "i16", x, [qword(1.0, shift=s) for s in shifts])
    ref = np.clip(x >> (np.array(shifts) + 1), -32768, 32767)
    np.testing.assert_array_equal(out, ref)
    np.testing.assert_array_equal(out[0, :8], [32767, -32768, 32767, 32767, -2, 3, 32767,
                                               -32768])


def test_a5_float_outputs_are_scaled():
    pto.target("a5")
    x = np.arange(256, dtype=np.float32).reshape(16, 16) - 100.0
    scales = np.array([0.5, 2.0, 1.0, 0.25] * 4)
    words = [qword(float(s)) for s in scales]
    for d in ("f16", "bf16"):
        out = _store("f32", d, x, words)
        np.testing.assert_array_equal(out, (x * scales).astype(NP[d]))
    big = np.full((16, 16), 1000.0, np.float32)
    out = _store("f32", "f8E4M3", big, [qword(1.0)] * 16)
    assert (out.astype(np.float32) == 448.0).all()  # saturates (no infinity in e4m3)
    xi = (np.arange(256).reshape(16, 16) * 3).astype(np.int32)
    out = _store("i32", "bf16", xi, words)
    np.testing.assert_array_equal(out, (xi * scales).astype(ml_dtypes.bfloat16))
    out = _store("f32", "f32", x, [qword(4.0)] * 16)  # no quant mode: plain copy
    np.testing.assert_array_equal(out, x)


def test_cpu_pairs_without_quant_mode_are_plain_casts():
    pto.target("cpu")
    x = np.arange(256, dtype=np.float32).reshape(16, 16) / 3
    words = [qword(8.0)] * 16
    np.testing.assert_array_equal(_store("f32", "f16", x, words), x.astype(np.float16))
    np.testing.assert_array_equal(_store("f32", "f32", x, words), x)
    xi = np.arange(256).reshape(16, 16) - 128
    np.testing.assert_array_equal(_store("i32", "i32", xi, words), xi)


@pytest.mark.parametrize("tgt", ["cpu", "a2a3", "a5"])
def test_relu_after_quantisation(tgt):
    pto.target(tgt)
    x = np.zeros((16, 16), np.float32)
    x[0, :4] = [-10, -3, 4, -1]
    # offset 5, signed: -10 + 5 = -5 -> relu 0; -3 + 5 = 2 stays; ReLU before quant would give 5
    out = _store("f32", "i8", x, [qword(1.0, 5, True)] * 16, relu=True)
    np.testing.assert_array_equal(out[0, :4], [0, 2, 9, 4])
    xi = np.zeros((16, 16), np.int32)
    xi[0, :2] = [-7, 7]
    out = _store("i32", "f16", xi, [qword(1.0)] * 16, relu=True)
    np.testing.assert_array_equal(out[0, :2], [0, 7])


@pytest.mark.parametrize("tgt", ["cpu", "a2a3", "a5"])
def test_atomic_add(tgt):
    pto.target(tgt)
    x = np.arange(256).reshape(16, 16) % 7
    init = np.full((16, 16), 10, np.int8)
    out = _store("f32", "i8", x, [qword(1.0)] * 16, atomic=True, init=init)
    np.testing.assert_array_equal(out, 10 + x)
    initf = np.full((16, 16), 0.5, np.float16)
    out = _store("i32", "f16", x, [qword(0.5)] * 16, atomic=True, init=initf)
    np.testing.assert_array_equal(out, (0.5 + x * 0.5).astype(np.float16))


@pytest.mark.parametrize("tgt", ["cpu", "a2a3", "a5"])
@pytest.mark.parametrize("valid", [(16, 16), (5, 16), (16, 3), (1, 1), (Dyn(7), Dyn(9))])
def test_partial_valid_region_into_a_larger_array(tgt, valid):
    pto.target(tgt)
    acc = pto.TileAcc("i32", 16, 32, valid=valid)
    x = np.arange(512).reshape(16, 32) - 256
    acc.load_numpy(x.astype(np.int32))
    vr, vc = acc.valid_shape
    mem = np.full((20, 40), -1, np.int8)
    gm = GlobalTensor(mem, (vr, vc), (40, 1), offset=41)  # starts at (1, 1)
    words = [qword(0.25, 0, True)] * 32
    fp = Tile(TileType.Scaling, "ui64", 1, 32)
    fp.load_numpy(np.array([words], np.uint64))
    pto.TSTORE_FP(gm, acc, fp)
    ref = np.full((20, 40), -1, np.int64)
    ref[1:1 + vr, 1:1 + vc] = _b8_ref(x[:vr, :vc], 0.25, 0, True)
    np.testing.assert_array_equal(mem, ref)


@pytest.mark.parametrize("tgt", ["cpu", "a2a3", "a5"])
def test_nz_destination(tgt):
    pto.target(tgt)
    acc = pto.TileAcc("f32", 32, 32)
    x = (np.arange(1024).reshape(32, 32) % 50 - 25).astype(np.float32)
    acc.load_numpy(x)
    r, c, c0 = 32, 32, 32  # i8: C0 = 32 elements per 32-byte row
    mem = np.zeros(r * c, np.int8)
    gm = GlobalTensor(mem, (1, c // c0, r // 16, 16, c0), (r * c, r * c0, 16 * c0, c0, 1),
                      Layout.NZ)
    fp = Tile(TileType.Scaling, "ui64", 1, 32)
    fp.load_numpy(np.full((1, 32), qword(2.0), np.uint64))
    pto.TSTORE_FP(gm, acc, fp)
    rr, cc = np.meshgrid(np.arange(r), np.arange(c), indexing="ij")
    idx = (cc // c0) * r * c0 + (rr // 16) * 16 * c0 + (rr % 16) * c0 + cc % c0
    np.testing.assert_array_equal(mem[idx], np.clip(x * 2, -128, 127))


@pytest.mark.parametrize("tgt", ["cpu", "a2a3", "a5"])
def test_empty_valid_region_writes_nothing_on_cpu(tgt):
    pto.target(tgt)
    acc = pto.TileAcc("f32", 16, 16, valid=(Dyn(0), Dyn(16)))
    mem = np.zeros((0, 16), np.int8)
    pto.TSTORE_FP(GlobalTensor(mem, (0, 16), (16, 1)), acc, _fp_tile([qword()] * 16))


# ---- documented constraints ---------------------------------------------------------------

@pytest.mark.parametrize("tgt", ["a2a3", "a5"])
def test_src_must_be_acc_on_npu(tgt):
    pto.target(tgt)
    v = Tile(TileType.Vec, "f32", 16, 16)
    gm = GlobalTensor(np.zeros((16, 16), np.int8))
    with pytest.raises(pto.IllegalInstruction,
                       match=rf"tstore_fp: src must be a Acc tile on {tgt}, got Vec"):
        pto.TSTORE_FP(gm, v, _fp_tile([qword()] * 16))


def test_cpu_accepts_any_source_role():
    pto.target("cpu")
    v = Tile(TileType.Vec, "f32", 16, 16)
    v.load_numpy(np.full((16, 16), 3.0))
    mem = np.zeros((16, 16), np.int8)
    pto.TSTORE_FP(GlobalTensor(mem), v, _fp_tile([qword(2.0)] * 16))
    assert (mem == 6).all()


@pytest.mark.parametrize("tgt", ["a2a3", "a5"])
def test_static_shape_limits_on_npu(tgt):
    pto.target(tgt)
    fp = _fp_tile([qword()] * 16)
    wide = pto.TileAcc("f32", 16, 4096)
    with pytest.raises(pto.IllegalInstruction,
                       match=r"tstore_fp: Acc src Cols must be in \[1, 4095\], got 4096"):
        pto.TSTORE_FP(GlobalTensor(np.zeros((16, 4096), np.int8)), wide, fp)
    tall = pto.TileAcc("f32", 8208, 16)
    with pytest.raises(pto.IllegalInstruction,
                       match=r"Acc src Rows must be in \[1, 8192\] for an ND store, got 8208"):
        pto.TSTORE_FP(GlobalTensor(np.zeros((8208, 16), np.int8)), tall, fp)
    taller = pto.TileAcc("f32", 65552, 16)
    mem = np.zeros(65552 * 16, np.int8)
    nz = GlobalTensor(mem, (1, 1, 65552 // 16, 16, 16), (0, 0, 256, 16, 1), Layout.NZ)
    with pytest.raises(pto.IllegalInstruction,
                       match=r"NZ store needs Rows in \[1, 65535\] and Cols % 16 == 0"):
        pto.TSTORE_FP(nz, taller, fp)


def test_cpu_has_no_shape_limits():
    pto.target("cpu")
    acc = pto.TileAcc("f32", 16, 4096)
    fp = Tile(TileType.Scaling, "ui64", 1, 4096)
    fp.load_numpy(np.full((1, 4096), qword(1.0), np.uint64))
    mem = np.zeros((16, 4096), np.int8)
    # the shape rules pass on cpu; the 256 KiB accumulator is then too big for cpu's 128 KiB
    # L0C (auto placement checks capacity, issue 9 item 5)
    with pytest.raises(pto.PtoMemoryError, match="tstore_fp: L0C overflow on cpu"):
        pto.TSTORE_FP(GlobalTensor(mem), acc, fp)


@pytest.mark.parametrize("tgt", ["a2a3", "a5"])
def test_runtime_valid_cols_at_least_one_on_npu(tgt):
    pto.target(tgt)
    acc = pto.TileAcc("f32", 16, 16, valid=(Dyn(16), Dyn(0)))
    gm = GlobalTensor(np.zeros((16, 0), np.int8), (16, 0), (16, 1))
    with pytest.raises(pto.RuntimeCheckError,
                       match=r"tstore_fp: src valid cols must be in \[1, 4095\], got 0"):
        pto.TSTORE_FP(gm, acc, _fp_tile([qword()] * 16))


@pytest.mark.parametrize("tgt", ["a2a3", "a5"])
@pytest.mark.parametrize("layout", [Layout.DN, Layout.NC1HWC0])
def test_npu_destination_layout_nd_or_nz(tgt, layout):
    pto.target(tgt)
    acc = pto.TileAcc("f32", 16, 16)
    gm = GlobalTensor(np.zeros(256, np.int8), (1, 1, 1, 16, 16), (256, 256, 256, 1, 16), layout)
    with pytest.raises(pto.IllegalInstruction,
                       match=rf"tstore_fp: dst layout {layout.name} is not supported "
                             r"\(supported: ND, NZ\)"):
        pto.TSTORE_FP(gm, acc, _fp_tile([qword()] * 16))


def test_cpu_stores_to_dn():
    pto.target("cpu")
    acc = pto.TileAcc("f32", 16, 16)
    x = np.arange(256, dtype=np.float32).reshape(16, 16) % 100
    acc.load_numpy(x)
    mem = np.zeros(256, np.int8)
    gm = GlobalTensor(mem, (1, 1, 1, 16, 16), (256, 256, 256, 1, 16), Layout.DN)
    pto.TSTORE_FP(gm, acc, _fp_tile([qword(1.0)] * 16))
    np.testing.assert_array_equal(mem.reshape(16, 16).T, x)


def test_fp_of_another_type_is_read_by_numeric_cast_on_cpu():
    """PTOAS programs write f32 / f16 scaling tiles (lit cube_tile_ops_positive.pto): the CPU
    simulator casts their values to 64-bit words (trait fp_tile_words "cast")."""
    pto.target("cpu")
    acc = pto.TileAcc("f32", 16, 16)
    x = (np.arange(256, dtype=np.float32).reshape(16, 16) % 7) - 3
    acc.load_numpy(x)
    fp = Tile(TileType.Scaling, "f32", 1, 16)
    fp.load_numpy(np.full((1, 16), float(qword(2.0)), np.float32))  # f32 holds this word exactly
    assert float(np.float32(qword(2.0))) == qword(2.0)
    out = np.zeros((16, 16), np.int8)
    pto.TSTORE_FP(GlobalTensor(out), acc, fp)
    np.testing.assert_array_equal(out, (x * 2).astype(np.int8))


@pytest.mark.parametrize("tgt", ["a2a3", "a5"])
def test_fp_of_another_type_is_read_as_raw_words_on_the_npu(tgt):
    """The NPU fix-pipe reads the Scaling buffer's bytes as 64-bit words (FPC holds the fp
    tile's address: pto-isa's SetFPC): an f32 tile of 32 elements holds 16 words, its bytes
    those of the words (tilelang_st textract_fp: f32 1.0 in a word's low half is scale 1.0).
    A tile too small for one word a column is refused by name (the rest would come from
    Scaling-buffer bytes nothing wrote), never a guess."""
    pto.target(tgt)
    acc = pto.TileAcc("f32", 16, 16)
    x = (np.arange(256, dtype=np.float32).reshape(16, 16) % 7) - 3
    acc.load_numpy(x)
    words = np.array([qword(2.0, offset=j % 3) for j in range(16)], np.uint64)
    fp = Tile(TileType.Scaling, "f32", 1, 32)
    fp.load_numpy(words.view(np.float32).reshape(1, 32))
    out = np.zeros((16, 16), np.int8)
    pto.TSTORE_FP(GlobalTensor(out), acc, fp)
    np.testing.assert_array_equal(out, (x * 2 + np.arange(16) % 3).astype(np.int8))
    with pytest.raises(NotExecutedYet, match="holds 8 64-bit quant words, 16 columns need "
                       "one each: .* bytes past the tile, which nothing wrote"):
        pto.TSTORE_FP(GlobalTensor(out), acc, Tile(TileType.Scaling, "f32", 1, 16))


@pytest.mark.parametrize("tgt", ["a2a3", "cpu"])
def test_plain_conversion_leaves_fp_unread(tgt):
    """f32 -> f16 has no quant mode on A2/A3: the fp form is a plain conversion (PTOAS emits
    it: lit tstore_fp_insert_sync_effects.pto)."""
    pto.target(tgt)
    acc = pto.TileAcc("f32", 16, 16)
    x = np.linspace(-3, 3, 256, dtype=np.float32).reshape(16, 16)
    acc.load_numpy(x)
    out = np.zeros((16, 16), np.float16)
    pto.TSTORE_FP(GlobalTensor(out), acc, Tile(TileType.Scaling, "f16", 1, 16))
    np.testing.assert_array_equal(out, x.astype(np.float16))


@pytest.mark.parametrize("tgt", ["cpu", "a2a3", "a5"])
def test_fp_needs_one_word_per_column(tgt):
    pto.target(tgt)
    acc = pto.TileAcc("f32", 16, 16)
    with pytest.raises(pto.RuntimeCheckError,
                       match=r"tstore_fp: fp holds 8 quant words .* src has 16 valid columns"):
        pto.TSTORE_FP(GlobalTensor(np.zeros((16, 16), np.int8)), acc, _fp_tile([qword()] * 8))


@pytest.mark.parametrize("tgt", ["cpu", "a2a3", "a5"])
def test_gm_view_must_cover_the_valid_region(tgt):
    """The view must hold the valid region; a larger view receives just the valid region
    (every target: dynamic-shape kernels store a partial region into a full-size view)."""
    pto.target(tgt)
    acc = pto.TileAcc("f32", 16, 16, valid=(8, 16))
    acc.load_numpy(np.ones((16, 16)))
    fp = _fp_tile([qword()] * 16)
    small = GlobalTensor(np.zeros((4, 16), np.int8))
    with pytest.raises(pto.RuntimeCheckError,
                       match=r"tstore_fp: GlobalTensor .* covers 4x16 elements as a tile, src "
                             r"valid region is 8x16"):
        pto.TSTORE_FP(small, acc, fp)
    mem = np.zeros((16, 16), np.int8)
    pto.TSTORE_FP(GlobalTensor(mem), acc, fp)
    assert mem[:8].sum() == 128 and mem[8:].sum() == 0



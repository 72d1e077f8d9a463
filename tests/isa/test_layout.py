"""Layout and rearrangement: TEXTRACT/TINSERT (+_FP), TCONCAT, TTRANS, TPACK and the views
TRESHAPE, TSUBVIEW, TGET_SCALE_ADDR, TALIAS. References are numpy one-liners from the manual
pages (spec/pto-isa/isa/tile/ops/layout-and-rearrangement/)."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ptoisa as pto
from ptoisa import BLayout, Dyn, Tile, TileType
from ptoisa.enums import SLayout
from ptoisa.errors import PtoError
from ptoisa.memory import is_poison
from ptoisa.targets import get_target

NP = {"i8": np.int8, "ui8": np.uint8, "i16": np.int16, "ui16": np.uint16, "i32": np.int32,
      "ui32": np.uint32, "f16": np.float16, "bf16": ml_dtypes.bfloat16, "f32": np.float32}
# element types from ops.tsv (not from the legality tables)
VEC_TYPES = {"cpu": ["i8", "ui8", "i16", "ui16", "i32", "ui32", "f16", "bf16", "f32"],
             "a2a3": ["i8", "ui8", "i16", "ui16", "i32", "ui32", "f16", "bf16", "f32"],
             "a5": ["i8", "ui8", "i32", "f16", "bf16", "f32"]}


def _rand(rng, dt, shape):
    npdt = np.dtype(NP[dt])
    if npdt.kind in "iu":
        info = np.iinfo(npdt)
        return rng.integers(info.min, info.max, size=shape, endpoint=True).astype(npdt)
    return rng.uniform(-100, 100, size=shape).astype(npdt)


def _cols(dt, n=64):
    return n // np.dtype(NP[dt]).itemsize


# ---- TEXTRACT / TINSERT (Vec -> Vec, every target) -------------------------------------------

CASES = [(t, d) for t in ("cpu", "a2a3", "a5") for d in VEC_TYPES[t]]


@pytest.mark.parametrize("tgt,dt", CASES)
@pytest.mark.parametrize("valid", [(8, None), (3, 5), (1, 1)])
def test_textract_window(tgt, dt, valid):
    pto.target(tgt)
    rng = np.random.default_rng(1)
    cols = _cols(dt)
    vr, vc = valid
    vc = cols // 2 if vc is None else vc
    src = Tile(TileType.Vec, dt, 16, cols)
    a = _rand(rng, dt, (16, cols))
    src.load_numpy(a)
    # the NPUs bound the window by dst's static shape, cpu by its valid region
    dst = Tile(TileType.Vec, dt, 8, cols // 2, valid=(Dyn(vr), Dyn(vc)))
    before = dst.numpy()
    pto.TEXTRACT(dst, src, 4, cols // 4)
    want = before.copy()
    want[:vr, :vc] = a[4:4 + vr, cols // 4: cols // 4 + vc]
    np.testing.assert_array_equal(dst.numpy().view(np.uint8), want.view(np.uint8))


@pytest.mark.parametrize("tgt,dt", CASES)
@pytest.mark.parametrize("valid", [(8, None), (2, 3)])
def test_tinsert_window(tgt, dt, valid):
    pto.target(tgt)
    if tgt == "a2a3":
        pytest.skip("a2a3 inserts only Acc -> Mat")
    rng = np.random.default_rng(2)
    cols = _cols(dt)
    vr, vc = valid
    vc = cols // 2 if vc is None else vc
    src = Tile(TileType.Vec, dt, 8, cols // 2, valid=(Dyn(vr), Dyn(vc)))
    b = _rand(rng, dt, (8, cols // 2))
    src.load_numpy(b)
    dst = Tile(TileType.Vec, dt, 16, cols)
    d0 = _rand(rng, dt, (16, cols))
    dst.load_numpy(d0)
    pto.TINSERT(dst, src, 5, cols // 2)
    want = d0.copy()
    want[5:5 + vr, cols // 2: cols // 2 + vc] = b[:vr, :vc]
    np.testing.assert_array_equal(dst.numpy().view(np.uint8), want.view(np.uint8))


@pytest.mark.parametrize("tgt", ["cpu", "a5"])
def test_tinsert_bound_is_src_valid_region(tgt):
    """TINSERT page: indexRow + src.ValidRow <= dst.Rows (and columns); a5 checks exactly
    that. A 128x96 src with 8x16 valid rows/cols fits at (120, 80) of a 128x96 dst (the
    conformance case tinsert__..._DST_8_16_L_0_4), one row or column further does not."""
    pto.target(tgt)
    src = Tile(TileType.Vec, "f32", 128, 96, valid=(Dyn(8), Dyn(16)))
    b = np.arange(128 * 96, dtype=np.float32).reshape(128, 96)
    src.load_numpy(b)
    dst = Tile(TileType.Vec, "f32", 128, 96)
    dst.load_numpy(np.zeros((128, 96), np.float32))
    pto.TINSERT(dst, src, 120, 80)
    want = np.zeros((128, 96), np.float32)
    want[120:, 80:] = b[:8, :16]
    np.testing.assert_array_equal(dst.numpy(), want)
    with pytest.raises(PtoError, match=r"window of 8x16 \(src valid region\) at \(121, 80\)"):
        pto.TINSERT(dst, src, 121, 80)
    with pytest.raises(PtoError, match=r"at \(120, 81\) exceeds dst 128x96"):
        pto.TINSERT(dst, src, 120, 81)


@pytest.mark.parametrize("layout", ["NZ", "ZN", "ND", "DN"])
def test_textract_between_layouts_cpu(layout):
    """The window is logical: the same (r, c) elements whatever the physical layouts."""
    pto.target("cpu")
    bl = BLayout.ColMajor if layout in ("NZ", "DN") else BLayout.RowMajor
    sl = {"NZ": SLayout.RowMajor, "ZN": SLayout.ColMajor}.get(layout, SLayout.NoneBox)
    a = np.arange(32 * 32, dtype=np.float32).reshape(32, 32)
    src = Tile(TileType.Mat, "f32", 32, 32, bl, None, sl).load_numpy(a)
    dst = Tile(TileType.Mat, "f32", 16, 16, BLayout.ColMajor, None, SLayout.RowMajor)
    pto.TEXTRACT(dst, src, 16, 8)
    np.testing.assert_array_equal(dst.numpy(), a[16:32, 8:24])


def test_textract_converts_on_cpu():
    """The CPU simulator converts element types on a plain extract (int32 -> float)."""
    pto.target("cpu")
    src = Tile(TileType.Mat, "i32", 16, 16).load_numpy(np.arange(256).reshape(16, 16) - 100)
    dst = Tile(TileType.Mat, "f32", 8, 16)
    pto.TEXTRACT(dst, src, 8, 0)
    np.testing.assert_array_equal(dst.numpy(), (np.arange(128, 256) - 100).reshape(8, 16))


def _acc_words(scale, n, offset=0, signed=True):
    """Vector quant words: 19-bit scale at bits 13..31 (exactly representable scales)."""
    f = np.float32(scale).view(np.uint32)
    word = (int(f) >> 13) << 13 | (offset << 37) | (int(signed) << 46)
    return np.full((1, n), word, np.uint64)


@pytest.mark.parametrize("tgt", ["cpu", "a2a3", "a5"])
@pytest.mark.parametrize("relu", [False, True])
def test_textract_fp_quantises_per_column(tgt, relu):
    pto.target(tgt)
    rng = np.random.default_rng(3)
    acc = pto.TileAcc("f32", 32, 32)
    x = rng.uniform(-300, 300, (32, 32)).astype(np.float32)
    acc.load_numpy(x)
    fp = Tile(TileType.Scaling, "ui64", 1, 32)
    scales = np.array([0.5, 0.25, 1.0, 2.0] * 8, np.float32)
    words = np.concatenate([_acc_words(s, 1) for s in scales], axis=1)
    fp.load_numpy(words)
    dst = Tile(TileType.Mat, "i8", 16, 32, BLayout.ColMajor, None, SLayout.RowMajor)
    mode = pto.ReluPreMode.NormalRelu if relu else pto.ReluPreMode.NoRelu
    pto.TEXTRACT_FP(dst, acc, fp, 16, 0, reluMode=mode)
    want = np.clip(np.rint(x[16:32, :] * scales[None, :]), -128, 127)
    if relu:
        want = np.maximum(want, 0)
    np.testing.assert_array_equal(dst.numpy(), want.astype(np.int8))


@pytest.mark.parametrize("tgt", ["cpu", "a2a3", "a5"])
def test_tinsert_fp_acc_to_mat(tgt):
    pto.target(tgt)
    acc = pto.TileAcc("i32", 16, 16)
    x = (np.arange(256).reshape(16, 16) * 3 - 300).astype(np.int32)
    acc.load_numpy(x)
    fp = Tile(TileType.Scaling, "ui64", 1, 16)
    fp.load_numpy(_acc_words(0.5, 16, offset=0, signed=False))
    dst = Tile(TileType.Mat, "ui8", 32, 32, BLayout.ColMajor, None, SLayout.RowMajor)
    pto.TINSERT_FP(dst, acc, fp, 16, 0)
    want = np.clip(np.rint(x * 0.5), 0, 255).astype(np.uint8)
    np.testing.assert_array_equal(dst.numpy()[16:32, :16], want)
    assert is_poison(dst.numpy()[:16]).all()  # rows outside the insert: untouched


def test_tinsert_fp_acc_f32_to_hif8_mat_on_a5():
    """ops.tsv (A5 TINSERT quant f32 -> hif8): each column scaled by its fp word and written
    as HiF8; powers of two (and 0) are exact HiF8 values, so the decoded codes are x * 0.5."""
    pto.target("a5")
    acc = pto.TileAcc("f32", 16, 32)
    x = (2.0 ** (np.arange(512).reshape(16, 32) % 9 - 4)).astype(np.float32)
    x[::3] *= -1
    x[5, 5] = 0
    acc.load_numpy(x)
    fp = Tile(TileType.Scaling, "ui64", 1, 32)
    fp.load_numpy(_acc_words(0.5, 32))
    dst = Tile(TileType.Mat, "hif8", 16, 32, BLayout.ColMajor, None, SLayout.RowMajor)
    pto.TINSERT_FP(dst, acc, fp, 0, 0)
    got = pto.dtypes.hif8_decode(dst.numpy())
    np.testing.assert_array_equal(got, x.astype(np.float64) * 0.5)
    pto.target("a2a3")  # (hif8 is an A5 type)
    with pytest.raises(PtoError, match="hif8"):
        pto.TINSERT_FP(Tile(TileType.Mat, "hif8", 16, 32, BLayout.ColMajor, None,
                            SLayout.RowMajor), pto.TileAcc("f32", 16, 32), fp, 0, 0)


@pytest.mark.parametrize("tgt", ["cpu", "a2a3", "a5"])
def test_tinsert_acc_f32_to_f16_saturates(tgt):
    pto.target(tgt)
    acc = pto.TileAcc("f32", 16, 16)
    x = np.full((16, 16), 1e6, np.float32)
    x[0, 0] = -1e6
    acc.load_numpy(x)
    dst = Tile(TileType.Mat, "f16", 32, 16, BLayout.ColMajor, None, SLayout.RowMajor)
    scalar = int(np.float32(1.0).view(np.uint32))
    pto.TINSERT(dst, acc, scalar, 0, 0)
    got = dst.numpy()[:16]
    assert got[0, 0] == -65504 and np.all(got.reshape(-1)[1:] == 65504)


@pytest.mark.parametrize("tgt", ["a2a3", "a5"])
def test_textract_gemv_left_from_a_one_row_nd_mat(tgt):
    # TEXTRACT page, A2A3/A5 checks: for GEMV a Left tile may come from a one-row row-major
    # Mat source; a Right tile (or more rows) still needs NZ/ZN
    pto.target(tgt)
    x = np.arange(64, dtype=np.float16).reshape(1, 64)
    mat = Tile(TileType.Mat, "f16", 1, 64)
    mat.load_numpy(x)
    left = pto.TileLeft("f16", 1, 32)
    pto.TEXTRACT(left, mat, 0, 16)
    np.testing.assert_array_equal(left.numpy(), x[:, 16:48])
    with pytest.raises(PtoError, match=f"must be NZ or ZN on {tgt}"):
        pto.TEXTRACT(pto.TileLeft("f16", 16, 16), Tile(TileType.Mat, "f16", 16, 64), 0, 0)


def test_textract_illegal_uses():
    pto.target("a2a3")
    src = Tile(TileType.Vec, "f32", 16, 16)
    with pytest.raises(PtoError, match="Vec -> Left is not a data path on a2a3"):
        pto.TEXTRACT(pto.TileLeft("f32", 16, 16), src, 0, 0)
    mat = Tile(TileType.Mat, "f32", 16, 16)
    with pytest.raises(PtoError, match="must be NZ or ZN on a2a3"):
        pto.TEXTRACT(pto.TileLeft("f32", 16, 16), mat, 0, 0)
    with pytest.raises(PtoError, match="Vec source is not converted on a2a3"):
        pto.TEXTRACT(Tile(TileType.Vec, "f16", 16, 16), src, 0, 0)
    with pytest.raises(PtoError, match=r"window of 16x16 .* at \(8, 0\) exceeds src 16x16"):
        pto.TEXTRACT(Tile(TileType.Vec, "f32", 16, 16), src, 8, 0)
    pto.target("cpu")
    with pytest.raises(PtoError, match="indexRow -1 outside the uint16 range"):
        pto.TEXTRACT(Tile(TileType.Vec, "f32", 8, 8), Tile(TileType.Vec, "f32", 16, 16), -1, 0)


def test_tinsert_vec_to_vec_on_a2a3():
    """PTOAS emits TINSERT Vec -> Vec for A3 (lit extract_insert_tile_native.pto): a UB copy
    into the window."""
    pto.target("a2a3")
    dst = Tile(TileType.Vec, "f32", 16, 16).load_numpy(np.zeros((16, 16), np.float32))
    x = np.arange(64, dtype=np.float32).reshape(8, 8)
    pto.TINSERT(dst, Tile(TileType.Vec, "f32", 8, 8).load_numpy(x), 4, 8)
    ref = np.zeros((16, 16), np.float32)
    ref[4:12, 8:16] = x
    np.testing.assert_array_equal(dst.numpy(), ref)


def test_tinsert_illegal_uses():
    pto.target("a2a3")
    with pytest.raises(PtoError, match="Vec -> Mat is not a data path on a2a3"):
        pto.TINSERT(Tile(TileType.Mat, "f32", 16, 16), Tile(TileType.Vec, "f32", 8, 8), 0, 0)
    pto.target("a5")
    acc = pto.TileAcc("f32", 16, 16)
    fp = Tile(TileType.Vec, "ui64", 1, 16)
    dst = Tile(TileType.Mat, "i8", 32, 32, BLayout.ColMajor, None, SLayout.RowMajor)
    with pytest.raises(PtoError, match="fp must be a Scaling tile on a5"):
        pto.TINSERT_FP(dst, acc, fp, 0, 0)
    fp = Tile(TileType.Scaling, "ui64", 1, 8)
    with pytest.raises(PtoError, match="fp holds 8 quant words"):
        pto.TINSERT_FP(dst, acc, fp, 0, 0)
    with pytest.raises(PtoError, match=r"at \(20, 0\) exceeds dst 16x16"):
        pto.TINSERT(Tile(TileType.Vec, "f32", 16, 16), Tile(TileType.Vec, "f32", 8, 8), 20, 0)


# ---- TCONCAT -----------------------------------------------------------------------------------

@pytest.mark.parametrize("tgt,dt", CASES)
def test_tconcat_basic(tgt, dt):
    pto.target(tgt)
    if dt not in ("i8", "ui8", "i16", "ui16", "i32", "ui32", "f16", "bf16", "f32"):
        pytest.skip("not a TCONCAT type")
    rng = np.random.default_rng(4)
    c = _cols(dt, 32)
    a, b = _rand(rng, dt, (4, c)), _rand(rng, dt, (4, c))
    s0 = Tile(TileType.Vec, dt, 4, c, valid=(4, Dyn(c - 1))).load_numpy(a)
    s1 = Tile(TileType.Vec, dt, 4, c, valid=(4, Dyn(c // 2))).load_numpy(b)
    dst = Tile(TileType.Vec, dt, 4, 2 * c, valid=(4, Dyn(c - 1 + c // 2)))
    pto.TCONCAT(dst, s0, s1)
    want = np.concatenate([a[:, :c - 1], b[:, :c // 2]], axis=1)
    np.testing.assert_array_equal(dst.numpy(True).view(np.uint8), want.view(np.uint8))


@pytest.mark.parametrize("with_dst_idx", [False, True])
def test_tconcat_indexed(with_dst_idx):
    pto.target("cpu")
    a = np.arange(64, dtype=np.float32).reshape(4, 16)
    b = -np.arange(64, dtype=np.float32).reshape(4, 16) - 1
    s0 = Tile(TileType.Vec, "f32", 4, 16).load_numpy(a)
    s1 = Tile(TileType.Vec, "f32", 4, 16).load_numpy(b)
    dst = Tile(TileType.Vec, "f32", 4, 32)
    lens0 = np.array([0, 4, 40, 64], np.int32)  # bytes, in units of the int32 index element
    lens1 = np.array([8, 0, 12, 100], np.int32)
    i0 = Tile(TileType.Vec, "i32", 4, 8).load_numpy(np.repeat(lens0[:, None], 8, 1))
    i1 = Tile(TileType.Vec, "i32", 4, 8).load_numpy(np.repeat(lens1[:, None], 8, 1))
    if with_dst_idx:
        di = Tile(TileType.Vec, "i32", 4, 8)
        pto.TCONCAT(dst, s0, s1, di, i0, i1)
        np.testing.assert_array_equal(di.numpy()[:, 0], lens0 + lens1)
    else:
        pto.TCONCAT(dst, s0, s1, i0, i1)
    got = dst.numpy()
    for r in range(4):
        n0, n1 = min(lens0[r] // 4, 16), min(lens1[r] // 4, 16)
        row = np.concatenate([a[r, :n0], b[r, :n1]])
        np.testing.assert_array_equal(got[r, :row.size], row)
        assert is_poison(got[r, row.size:]).all()  # the rest of the row is untouched


def test_tconcat_illegal_uses():
    pto.target("a5")
    s = Tile(TileType.Vec, "f32", 4, 8)
    with pytest.raises(PtoError, match=r"8 \+ src1 valid cols 8 = 16 must be dst valid cols 8"):
        pto.TCONCAT(Tile(TileType.Vec, "f32", 4, 8), s, s)
    with pytest.raises(PtoError, match="to have the same element type"):
        pto.TCONCAT(Tile(TileType.Vec, "f16", 4, 32), s, s)
    with pytest.raises(PtoError, match="element type i64 is not supported on a5"):
        pto.TCONCAT(Tile(TileType.Vec, "i64", 4, 16), Tile(TileType.Vec, "i64", 4, 8),
                    Tile(TileType.Vec, "i64", 4, 8))


# ---- TTRANS ------------------------------------------------------------------------------------

@pytest.mark.parametrize("tgt", ["cpu", "a2a3", "a5"])
@pytest.mark.parametrize("dt", ["i8", "ui16", "f16", "bf16", "f32", "i32"])
def test_ttrans(tgt, dt):
    pto.target(tgt)
    rng = np.random.default_rng(5)
    n = 32
    a = _rand(rng, dt, (n, n))
    valid = (n, n) if tgt == "a5" else (20, 12)
    src = Tile(TileType.Vec, dt, n, n, valid=(Dyn(valid[0]), Dyn(valid[1]))).load_numpy(a)
    dst = Tile(TileType.Vec, dt, n, n, valid=(Dyn(valid[1]), Dyn(valid[0])))
    tmp = Tile(TileType.Vec, dt, n, n)
    pto.TTRANS(dst, src, tmp)
    want = np.ascontiguousarray(a[:valid[0], :valid[1]].T)
    np.testing.assert_array_equal(dst.numpy(True).view(np.uint8), want.view(np.uint8))


@settings(max_examples=30, deadline=None)
@given(vr=st.integers(1, 16), vc=st.integers(1, 16))
def test_ttrans_valid_regions_cpu(vr, vc):
    pto.target("cpu")
    a = np.arange(256, dtype=np.float32).reshape(16, 16)
    src = Tile(TileType.Vec, "f32", 16, 16, valid=(Dyn(vr), Dyn(vc))).load_numpy(a)
    dst = Tile(TileType.Vec, "f32", 16, 16, valid=(Dyn(vc), Dyn(vr)))
    pto.TTRANS(dst, src, Tile(TileType.Vec, "f32", 16, 16))
    np.testing.assert_array_equal(dst.numpy(True), a[:vr, :vc].T)
    assert is_poison(dst.numpy()[vc:]).all()


def test_ttrans_illegal_uses():
    pto.target("cpu")
    src = Tile(TileType.Vec, "f32", 16, 16, valid=(Dyn(4), Dyn(8)))
    with pytest.raises(PtoError, match="must be the transpose of src's 4x8"):
        pto.TTRANS(Tile(TileType.Vec, "f32", 16, 16), src, Tile(TileType.Vec, "f32", 16, 16))
    with pytest.raises(PtoError, match="element sizes differ"):
        pto.TTRANS(Tile(TileType.Vec, "f16", 16, 16), src, Tile(TileType.Vec, "f32", 16, 16))


# ---- TPACK -------------------------------------------------------------------------------------

@pytest.mark.parametrize("pair", [("i32", "i16"), ("ui32", "ui8"), ("i16", "i8"), ("f32", "ui16")])
def test_tpack_keeps_low_bytes(pair):
    pto.target("a5")
    s, d = pair
    rng = np.random.default_rng(6)
    a = _rand(rng, s, (8, _cols(s)))
    src = Tile(TileType.Vec, s, 8, _cols(s)).load_numpy(a)
    dst = Tile(TileType.Vec, d, 8, _cols(d), valid=(8, _cols(s)))
    pto.TPACK(dst, src)
    want = a.view(f"u{a.itemsize}").astype(f"u{np.dtype(NP[d]).itemsize}").view(NP[d])
    np.testing.assert_array_equal(dst.numpy(True), want)


def test_tpack_illegal_uses():
    pto.target("a2a3")
    with pytest.raises(PtoError, match="not supported on target a2a3"):
        pto.TPACK(Tile(TileType.Vec, "i16", 8, 16), Tile(TileType.Vec, "i32", 8, 8))
    pto.target("a5")
    with pytest.raises(PtoError, match="packs 4->2, 4->1 or 2->1"):
        pto.TPACK(Tile(TileType.Vec, "i32", 8, 8), Tile(TileType.Vec, "i16", 8, 16))


# ---- views -------------------------------------------------------------------------------------

@pytest.mark.parametrize("tgt", ["cpu", "a2a3", "a5"])
@pytest.mark.parametrize("mode", ["auto", "manual"])
def test_treshape_aliases_bytes(tgt, mode):
    pto.target(tgt, mode=mode)
    src = Tile(TileType.Vec, "f32", 2, 16)
    dst = Tile(TileType.Vec, "f32", 1, 32)
    if mode == "manual":
        pto.TASSIGN(src, 0)
        pto.TASSIGN(dst, 256)
    a = np.arange(32, dtype=np.float32).reshape(2, 16)
    src.load_numpy(a)
    pto.TRESHAPE(dst, src)
    np.testing.assert_array_equal(dst.numpy(), a.reshape(1, 32))
    dst.write(np.array([[-1.0]], np.float32), 0, 17)  # a write through the view ...
    assert src.numpy()[1, 1] == -1.0  # ... is seen by the source


def test_treshape_int_view_of_bits_a5():
    pto.target("a5")
    src = Tile(TileType.Vec, "f32", 1, 8).load_numpy(np.ones((1, 8), np.float32))
    dst = Tile(TileType.Vec, "i16", 1, 16)
    pto.TRESHAPE(dst, src)
    np.testing.assert_array_equal(dst.numpy(), np.ones((1, 8), np.float32).view(np.int16))


def test_treshape_illegal_uses():
    pto.target("cpu")
    src = Tile(TileType.Vec, "f32", 2, 16)
    with pytest.raises(PtoError, match="same byte size"):
        pto.TRESHAPE(Tile(TileType.Vec, "f32", 1, 16), src)
    with pytest.raises(PtoError, match="same tile role"):
        pto.TRESHAPE(Tile(TileType.Mat, "f32", 1, 32), src)
    with pytest.raises(PtoError, match="must both be floating point or both integer on cpu"):
        pto.TRESHAPE(Tile(TileType.Vec, "i32", 1, 32), src)
    with pytest.raises(PtoError, match="between boxed and non-boxed"):
        pto.TRESHAPE(Tile(TileType.Vec, "f32", 16, 16, BLayout.ColMajor, None,
                          SLayout.RowMajor), Tile(TileType.Vec, "f32", 16, 16))


@settings(max_examples=30, deadline=None)
@given(r0=st.integers(0, 7), c0=st.integers(0, 8), vr=st.integers(0, 8), vc=st.integers(0, 8))
def test_tsubview_is_a_window_view(r0, c0, vr, vc):
    pto.target("cpu")
    a = np.arange(16 * 16, dtype=np.int32).reshape(16, 16)
    src = Tile(TileType.Vec, "i32", 16, 16).load_numpy(a)
    dst = Tile(TileType.Vec, "i32", 8, 16, valid=(Dyn(vr), Dyn(vc)))
    pto.TSUBVIEW(dst, src, r0, c0)
    np.testing.assert_array_equal(dst.numpy(True), a[r0:r0 + vr, c0:c0 + vc])
    if vr and vc:
        dst.write(np.array([[-7]], np.int32), vr - 1, vc - 1)
        assert src.numpy()[r0 + vr - 1, c0 + vc - 1] == -7


def test_tsubview_manual_runs_past_src():
    """As on the CPU simulator: the view's last row continues into the following bytes."""
    pto.target("cpu", mode="manual")
    src = Tile(TileType.Vec, "f32", 4, 8)
    dst = Tile(TileType.Vec, "f32", 3, 8, valid=(3, 6))
    pto.TASSIGN(src, 0)
    pto.TASSIGN(dst, 128)
    src.load_numpy(np.arange(1, 33, dtype=np.float32).reshape(4, 8))
    pto.TSUBVIEW(dst, src, 1, 2)
    np.testing.assert_array_equal(dst.numpy()[:, :6], [[11, 12, 13, 14, 15, 16],
                                                       [19, 20, 21, 22, 23, 24],
                                                       [27, 28, 29, 30, 31, 32]])


@pytest.mark.parametrize("target", ["cpu", "a2a3", "a5"])
@pytest.mark.parametrize(("shape", "valid", "at"), [((4, 8), (2, 6), (1, 8)),
                                                    ((2, 32), (2, 32), (0, 0)),
                                                    ((8, 16), (3, 16), (2, 0))])
def test_tsubview_with_other_cols_uses_dst_pitch(target, shape, valid, at):
    """The page asks for the same location and box layout only; every implementation points
    dst at src[rowIdx, colIdx] and reads on with dst's own row pitch (dst.Cols)."""
    pto.target(target)
    a = np.arange(16 * 32, dtype=np.float32).reshape(16, 32)
    src = Tile(TileType.Vec, "f32", 16, 32).load_numpy(a)
    dst = Tile(TileType.Vec, "f32", *shape, valid=(Dyn(valid[0]), Dyn(valid[1])))
    pto.TSUBVIEW(dst, src, *at)
    start = at[0] * 32 + at[1]
    flat = a.reshape(-1)
    ref = np.array([[flat[start + i * shape[1] + j] for j in range(valid[1])]
                    for i in range(valid[0])])
    np.testing.assert_array_equal(dst.numpy(True), ref)
    dst.write(np.array([[-1.0]], np.float32), valid[0] - 1, 0)  # the same bytes as src's
    assert src.numpy().reshape(-1)[start + (valid[0] - 1) * shape[1]] == -1.0


def test_tsubview_illegal_uses():
    pto.target("cpu")
    src = Tile(TileType.Vec, "f32", 16, 16)
    with pytest.raises(PtoError, match="exceeds src 16x16"):
        pto.TSUBVIEW(Tile(TileType.Vec, "f32", 8, 16), src, 12, 0)
    with pytest.raises(PtoError, match="element type"):
        pto.TSUBVIEW(Tile(TileType.Vec, "i32", 8, 16), src, 0, 0)


def test_tget_scale_addr():
    pto.target("cpu")
    src = Tile(TileType.Vec, "f32", 2, 8).load_numpy(np.arange(16, dtype=np.float32)
                                                         .reshape(2, 8))
    dst = Tile(TileType.Vec, "f32", 2, 8)
    pto.TGET_SCALE_ADDR(dst, src)
    np.testing.assert_array_equal(dst.numpy(), src.numpy())
    pto.target("a5", mode="manual")
    left = pto.TileLeft("f8E4M3", 16, 64)
    pto.TASSIGN(left, 4096)
    scale = Tile(TileType.ScaleLeft, "f8E8M0", 16, 2, BLayout.RowMajor, None, SLayout.RowMajor,
                 32)
    pto.TGET_SCALE_ADDR(scale, left)
    assert scale.addr == 256  # 4096 >> 4 (A5 utils.hpp SHIFT_MX_ADDR)
    pto.target("a2a3")
    with pytest.raises(PtoError, match="not supported on target a2a3"):
        pto.TGET_SCALE_ADDR(Tile(TileType.Vec, "f32", 2, 8), Tile(TileType.Vec, "f32", 2, 8))


def test_a5_scale_buffers_hold_the_mx_kernels_pong_tiles():
    """a5/matmul_mxfp4_performance (pto-isa kernels/manual) puts its L0A / L0B pong tiles at
    32 KiB and their 256 x 8 scale tiles at GetScaleAddr of them: 0x8000 >> 4 = 0x800 (A5
    utils.hpp, SHIFT_MX_ADDR 4), ending at the 4 KiB of L0A_MX (buffer_limits.hpp, A5)."""
    pto.target("a5", mode="manual")
    left = pto.TileLeft("f4E2M1x2", 256, 256)
    pto.TASSIGN(left, 0x8000)
    scale = Tile(TileType.ScaleLeft, "f8E8M0", 256, 8, BLayout.RowMajor, None,
                 SLayout.RowMajor, 32)
    pto.TGET_SCALE_ADDR(scale, left)
    assert scale.addr == 0x800
    assert scale.addr + scale.spec.nbytes == 4096 == get_target("a5").buffer_size("L0A_MX")
    over = Tile(TileType.ScaleLeft, "f8E8M0", 256, 8, BLayout.RowMajor, None,
                SLayout.RowMajor, 32)
    with pytest.raises(PtoError, match="exceeds the L0A_MX buffer of a5"):
        pto.TASSIGN(over, 0x900)


def test_talias():
    pto.target("a5")
    src = Tile(TileType.Vec, "f32", 4, 8).load_numpy(np.ones((4, 8), np.float32))
    dst = Tile(TileType.Vec, "f32", 2, 8)
    pto.TALIAS(dst, src)
    np.testing.assert_array_equal(dst.numpy(), 1.0)
    with pytest.raises(PtoError, match="does not fit in src"):
        pto.TALIAS(Tile(TileType.Vec, "f32", 8, 8), src)

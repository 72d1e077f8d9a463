"""TFILLPAD_INPLACE against the seed page and seeds_check.md section 4 (extents per target)."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ptoisa as pto
from ptoisa import Dyn, PadValue, Tile, TileType

NP = {"f32": np.float32, "f16": np.float16, "bf16": ml_dtypes.bfloat16, "i8": np.int8,
      "ui8": np.uint8, "i16": np.int16, "ui16": np.uint16, "i32": np.int32, "ui32": np.uint32,
      "f8E4M3": ml_dtypes.float8_e4m3fn, "f8E5M2": ml_dtypes.float8_e5m2}
# the TFILLPAD family: element sizes 1, 2 or 4 bytes, the same on every target
DTYPES = list(NP)
# pad element per dtype (model.md 5): (Zero, Min, Max)
INF = float("inf")
PADS = {
    "f32": (0, -INF, INF), "f16": (0, -INF, INF), "bf16": (0, -INF, INF),
    "i8": (0, -128, 127), "ui8": (0, 0, 255), "i16": (0, -32768, 32767), "ui16": (0, 0, 65535),
    "i32": (0, -2**31, 2**31 - 1), "ui32": (0, 0, 2**32 - 1),
    "f8E4M3": (0, 0, 0), "f8E5M2": (0, 0, 0),
}
KIND = {PadValue.Zero: 0, PadValue.Min: 1, PadValue.Max: 2}


def _reference(target, dst_before, src, svr, svc, dvr, dvc, pad, *, pads_differ, itemsize):
    """seeds_check.md section 4 'Extent of padding'."""
    out = dst_before.copy()
    rows, cols = out.shape
    if dvr == 0 or dvc == 0:
        return out
    if target == "cpu":  # copies src, pads every row of the tile
        out[:svr, :svc] = src[:svr, :svc]
        out[:svr, svc:] = pad
        out[svr:, :] = pad
        return out
    col_start = svc
    if target == "a2a3" and not pads_differ:
        per_block = 32 // itemsize
        col_start = min(-(-svc // per_block) * per_block, cols)
    out[:svr, col_start:] = pad
    out[svr:dvr, :] = pad
    return out


def _bits_equal(a, b):
    assert a.dtype == b.dtype
    u = {1: np.uint8, 2: np.uint16, 4: np.uint32}[a.dtype.itemsize]
    np.testing.assert_array_equal(a.view(u), b.view(u))


def _run(target, dtype, rows, cols, sv, dv, pad, *, src_pad=PadValue.Null, alias=False,
         dyn=False, seed=0):
    rng = np.random.default_rng(seed)
    valid = (lambda v: (Dyn(v[0]), Dyn(v[1]))) if dyn else (lambda v: v)
    dst = Tile(TileType.Vec, dtype, rows, cols, valid=valid(dv), pad=pad)
    src = Tile(TileType.Vec, dtype, rows, cols, valid=valid(sv), pad=src_pad)
    if alias:
        pto.TASSIGN(dst, 0x100)
        pto.TASSIGN(src, 0x100)
    data = rng.integers(1, 100, (rows, cols)).astype(NP[dtype])
    src.load_numpy(data)
    if not alias:
        dst.load_numpy(np.full((rows, cols), 5, NP[dtype]))
    before = dst.numpy()
    pto.TFILLPAD_INPLACE(dst, src)
    pad_elem = np.asarray(PADS[dtype][KIND[pad]] if pad in KIND else pad.value).astype(NP[dtype])
    ref = _reference(target, before, data, sv[0], sv[1], dv[0], dv[1], pad_elem,
                     pads_differ=pad != src_pad, itemsize=np.dtype(NP[dtype]).itemsize)
    _bits_equal(dst.numpy(), ref)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("pad", [PadValue.Zero, PadValue.Min, PadValue.Max], ids=str)
def test_every_dtype_and_pad(machine, dtype, pad):
    cols = 64 // np.dtype(NP[dtype]).itemsize
    _run(machine.target.name, dtype, 8, cols, (5, 3), (8, cols), pad)


@pytest.mark.parametrize("pad, dtype", [(PadValue.custom(-1.5), "f32"),
                                        (PadValue.custom(-7), "i16"),
                                        (PadValue.custom(3), "ui8")], ids=str)
def test_custom_pad(machine, pad, dtype):
    cols = 64 // np.dtype(NP[dtype]).itemsize
    _run(machine.target.name, dtype, 4, cols, (2, 2), (4, cols), pad)


@pytest.mark.parametrize("sv, dv", [
    ((16, 16), (16, 16)),  # fully valid: nothing to pad
    ((10, 16), (16, 16)),  # bottom pad only
    ((16, 5), (16, 16)),   # right pad only
    ((3, 9), (16, 16)),
    ((3, 9), (12, 16)),    # rows >= dst valid rows: padded on cpu only
    ((0, 0), (16, 16)),    # empty source: all padding
    ((0, 5), (16, 16)),
    ((8, 8), (0, 16)),     # empty dst: nothing happens (early exit)
    ((8, 8), (8, 0)),
])
@pytest.mark.parametrize("dyn", [False, True], ids=["static", "dynamic"])
@pytest.mark.parametrize("pad_pair", [(PadValue.Max, PadValue.Null), (PadValue.Max, PadValue.Max)],
                         ids=["pads_differ", "same_pad"])
def test_valid_regions(machine, sv, dv, dyn, pad_pair):
    dst_pad, src_pad = pad_pair
    for dtype in ("f32", "f16", "i8"):
        _run(machine.target.name, dtype, 16, 32, sv, dv, dst_pad, src_pad=src_pad, dyn=dyn)


def test_a2a3_same_pad_leaves_the_partial_32_byte_block(machine):
    """a2a3 with equal pad values pads from the next 32-byte block: (f32, 3 valid cols) ->
    columns 3..7 keep their data, 8.. are padded. cpu and a5 pad from column 3."""
    dst = Tile(TileType.Vec, "f32", 2, 16, valid=(2, 3), pad=PadValue.Max)
    pto.TASSIGN(dst, 0)
    dst.load_numpy(np.ones((2, 16)))
    pto.TFILLPAD_INPLACE(dst, dst)
    row = dst.numpy()[0]
    assert (row[:3] == 1).all() and (row[8:] == np.inf).all()
    assert (row[3:8] == (1 if machine.target.name == "a2a3" else np.inf)).all()


def test_aliased_in_place_use(machine):
    """The usual use: dst and src are the same buffer (different pad types)."""
    for sv in ((4, 5), (16, 32), (1, 1)):
        _run(machine.target.name, "f32", 16, 32, sv, (16, 32), PadValue.Min, alias=True)


def test_npu_does_not_copy_distinct_tiles_cpu_does(machine):
    dst = Tile(TileType.Vec, "f32", 4, 8, pad=PadValue.Zero)
    src = Tile(TileType.Vec, "f32", 4, 8, valid=(2, 2))
    dst.load_numpy(np.full((4, 8), 9.0))
    src.load_numpy(np.full((4, 8), 1.0))
    pto.TFILLPAD_INPLACE(dst, src)
    assert dst.numpy()[0, 0] == (1.0 if machine.target.name == "cpu" else 9.0)
    assert dst.numpy()[0, 2] == 0.0 and dst.numpy()[3, 0] == 0.0


@settings(max_examples=30, deadline=None)
@given(target=st.sampled_from(["cpu", "a2a3", "a5"]), dtype=st.sampled_from(["f32", "f16", "i8",
                                                                                "ui16"]),
       rows=st.integers(1, 20), blocks=st.integers(1, 3), data=st.data())
def test_random_regions(target, dtype, rows, blocks, data):
    m = pto.target(target)
    try:
        cols = blocks * 32 // np.dtype(NP[dtype]).itemsize
        sv = (data.draw(st.integers(0, rows)), data.draw(st.integers(0, cols)))
        # NPU: dst valid rows at least src valid rows (a5 underflows otherwise)
        dv = (data.draw(st.integers(sv[0], rows)), data.draw(st.integers(0, cols)))
        pad = data.draw(st.sampled_from([PadValue.Zero, PadValue.Min, PadValue.Max]))
        src_pad = data.draw(st.sampled_from([PadValue.Null, pad]))
        _run(target, dtype, rows, cols, sv, dv, pad, src_pad=src_pad, dyn=True,
             alias=data.draw(st.booleans()), seed=data.draw(st.integers(0, 999)))
    finally:
        pto.memory.pop(m)


# ---- documented constraints ---------------------------------------------------------------

def test_null_pad_is_rejected(machine):
    t = Tile(TileType.Vec, "f32", 8, 8)
    with pytest.raises(pto.IllegalInstruction,
                       match=r"tfillpad_inplace: dst PadVal must not be Null"):
        pto.TFILLPAD_INPLACE(t, t)


def test_shapes_must_match(machine):
    d = Tile(TileType.Vec, "f32", 8, 16, pad=PadValue.Zero)
    s = Tile(TileType.Vec, "f32", 8, 8)
    with pytest.raises(pto.IllegalInstruction,
                       match=r"operands must have the same static shape \(dst 8x16, src 8x8\)"):
        pto.TFILLPAD_INPLACE(d, s)


def test_vec_only(machine):
    d = Tile(TileType.Mat, "f32", 8, 8, pad=PadValue.Zero)
    with pytest.raises(pto.IllegalInstruction, match="dst must be a Vec tile, got Mat"):
        pto.TFILLPAD_INPLACE(d, d)


def test_element_sizes_must_match(machine):
    d = Tile(TileType.Vec, "f32", 8, 16, pad=PadValue.Zero)
    s = Tile(TileType.Vec, "f16", 8, 16)
    with pytest.raises(pto.IllegalInstruction, match=r"element sizes differ \(f32 vs f16\)"):
        pto.TFILLPAD_INPLACE(d, s)
    d8 = Tile(TileType.Vec, "i32", 8, 16, pad=PadValue.Zero)
    s8 = Tile(TileType.Vec, "f32", 8, 16)
    pto.TFILLPAD_INPLACE(d8, s8)  # same size, different types: allowed (bits copied)


def test_eight_byte_types_are_rejected(machine):
    d = Tile(TileType.Vec, "i64", 8, 8, pad=PadValue.Zero)
    with pytest.raises(pto.UnsupportedType,
                       match=r"tfillpad_inplace: element type i64 is not supported on "
                             rf"{machine.target.name} \(supported: f32, f16, bf16, "):
        pto.TFILLPAD_INPLACE(d, d)


FILLPAD_PTO = """
module {
  func.func @k(%s: !pto.ptr<f32>, %d: !pto.ptr<f32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c5 = arith.constant 5 : index
    %c7 = arith.constant 7 : index
    %cR = arith.constant DR : index
    %cC = arith.constant DC : index
    %sv = pto.make_tensor_view %s, shape = [%c5, %c7], strides = [%c7, %c1]
      : !pto.tensor_view<5x7xf32>
    %sp = pto.partition_view %sv, offsets = [%c0, %c0], sizes = [%c5, %c7]
      : !pto.tensor_view<5x7xf32> -> !pto.partition_tensor_view<5x7xf32>
    %dv = pto.make_tensor_view %d, shape = [%cR, %cC], strides = [%cC, %c1]
      : !pto.tensor_view<DRxDCxf32>
    %dp = pto.partition_view %dv, offsets = [%c0, %c0], sizes = [%cR, %cC]
      : !pto.tensor_view<DRxDCxf32> -> !pto.partition_tensor_view<DRxDCxf32>
    %src = pto.alloc_tile : !pto.tile_buf<vec, 8x8xf32, valid=5x7, pad=1>
    %dst = pto.alloc_tile : !pto.tile_buf<vec, DRxDCxf32, pad=2>
    pto.tload ins(%sp : !pto.partition_tensor_view<5x7xf32>)
              outs(%src : !pto.tile_buf<vec, 8x8xf32, valid=5x7, pad=1>)
    pto.tfillpad ins(%src : !pto.tile_buf<vec, 8x8xf32, valid=5x7, pad=1>)
                 outs(%dst : !pto.tile_buf<vec, DRxDCxf32, pad=2>)
    pto.tstore ins(%dst : !pto.tile_buf<vec, DRxDCxf32, pad=2>)
               outs(%dp : !pto.partition_tensor_view<DRxDCxf32>)
    return
  }
}
"""


@pytest.mark.parametrize("shape", [(8, 8), (16, 16)])
def test_pto_tfillpad_into_a_larger_dst_is_the_expand_form(shape):
    """pto.tfillpad with a dst larger than src is TFILLPAD_EXPAND (PTO IR manual: PTOAS
    infers the expand lowering from the physical shapes): src's valid 5x7 copied, the rest of
    dst its pad value (Max: +inf for f32), on every target."""
    r, c = shape
    text = FILLPAD_PTO.replace("DR", str(r)).replace("DC", str(c))
    x = np.arange(35, dtype=np.float32).reshape(5, 7)
    want = np.full(shape, np.inf, np.float32)
    want[:5, :7] = x
    for tgt in ("cpu", "a2a3", "a5"):
        out = np.zeros(shape, np.float32)
        pto.load(text, target=tgt).run("k", x, out, target=tgt)
        np.testing.assert_array_equal(out, want)

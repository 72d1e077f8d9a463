"""TASSIGN, TLOAD, TSTORE: GM <-> tile round trips over ND/DN/NZ, pads, legality (model.md 4)."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ptoisa as pto
from ptoisa import (
    AtomicType,
    BLayout,
    Dyn,
    GlobalTensor,
    Layout,
    PadValue,
    ReluPreMode,
    SLayout,
    Tile,
    TileType,
)

NP = {"f32": np.float32, "f16": np.float16, "bf16": ml_dtypes.bfloat16, "i8": np.int8,
      "ui8": np.uint8, "i16": np.int16, "ui16": np.uint16, "i32": np.int32, "ui32": np.uint32,
      "i64": np.int64, "ui64": np.uint64, "f8E4M3": ml_dtypes.float8_e4m3fn,
      "f8E5M2": ml_dtypes.float8_e5m2}
BASIC = ["i8", "ui8", "i16", "ui16", "i32", "ui32", "i64", "ui64", "f16", "bf16", "f32"]
# TLOAD/TSTORE element types from the docs: a2a3 the basic list, a5 adds fp8, cpu takes any
DTYPES = {"a2a3": BASIC, "a5": BASIC + ["f8E4M3", "f8E5M2"], "cpu": BASIC + ["f8E4M3",
                                                                              "f8E5M2"]}


def _data(dtype, n, seed=0):
    rng = np.random.default_rng(seed)
    return rng.integers(0, 100, n).astype(NP[dtype])


def _gm(mem, layout, vr, vc, ld):
    """A 2-D view of vr x vc elements by the helpers of model.md 4 (``ld``: leading dim)."""
    c0 = 32 // mem.dtype.itemsize
    if layout is Layout.ND:
        return GlobalTensor(mem, (1, 1, 1, vr, vc), (0, 0, 0, ld, 1), Layout.ND)
    if layout is Layout.DN:
        return GlobalTensor(mem, (1, 1, 1, vr, vc), (0, 0, 0, 1, ld), Layout.DN)
    return GlobalTensor(mem, (1, vc // c0, vr // 16, 16, c0), (vr * vc, vr * c0, 16 * c0, c0, 1),
                        Layout.NZ)


def _ref_index(layout, r, c, vr, vc, ld, itemsize):
    c0 = 32 // itemsize
    if layout is Layout.ND:
        return r * ld + c
    if layout is Layout.DN:
        return r + c * ld
    return (c // c0) * vr * c0 + (r // 16) * 16 * c0 + (r % 16) * c0 + c % c0


TILE_KINDS = {
    "vec_nd": (TileType.Vec, BLayout.RowMajor, SLayout.NoneBox),
    "vec_dn": (TileType.Vec, BLayout.ColMajor, SLayout.NoneBox),
    "mat_nz": (TileType.Mat, BLayout.ColMajor, SLayout.RowMajor),
    "mat_nd": (TileType.Mat, BLayout.RowMajor, SLayout.NoneBox),
}


def _round_trip(target, dtype, kind, gm_layout, rows, cols, vr, vc, seed=0):
    loc, bl, sl = TILE_KINDS[kind]
    itemsize = np.dtype(NP[dtype]).itemsize
    tile = Tile(loc, dtype, rows, cols, bl, (Dyn(vr), Dyn(vc)), sl)
    ld = (vc + 3) if gm_layout is Layout.ND else (vr + 5)  # padded leading dimension
    size = vr * vc if gm_layout is Layout.NZ else (vr * ld if gm_layout is Layout.ND
                                                   else vc * ld)
    mem = _data(dtype, size, seed)
    src = _gm(mem, gm_layout, vr, vc, ld)
    ev = pto.TLOAD(tile, src)
    assert ev.pipe is pto.Pipe.MTE2
    r, c = np.meshgrid(np.arange(vr), np.arange(vc), indexing="ij")
    expect = mem[_ref_index(gm_layout, r, c, vr, vc, ld, itemsize)]
    np.testing.assert_array_equal(tile.numpy()[:vr, :vc], expect)
    # physical placement in the tile (model.md 2.4)
    if kind == "vec_dn":
        np.testing.assert_array_equal(tile.storage[c * rows + r], expect)
    elif kind == "mat_nz":
        ic = 32 // itemsize
        off = (c // ic) * rows * ic + (r // 16) * 16 * ic + (r % 16) * ic + c % ic
        np.testing.assert_array_equal(tile.storage[off], expect)
    if loc is TileType.Mat and target == "a5":
        return  # a5 stores Vec (and Acc) tiles only
    out = np.zeros_like(mem)
    sentinel = np.array(77, NP[dtype])
    out[...] = sentinel
    ev = pto.TSTORE(_gm(out, gm_layout, vr, vc, ld), tile)
    assert ev.pipe is pto.Pipe.MTE3
    touched = np.zeros(mem.shape, bool)
    touched[_ref_index(gm_layout, r, c, vr, vc, ld, itemsize)] = True
    np.testing.assert_array_equal(out[touched], mem[touched])
    assert (out[~touched] == sentinel).all()


@pytest.mark.parametrize("kind", sorted(TILE_KINDS))
@pytest.mark.parametrize("gm_layout", [Layout.ND, Layout.DN, Layout.NZ], ids=str)
def test_round_trip_every_layout_pair(machine, kind, gm_layout):
    for dtype in ("f32", "f16", "i8"):
        _round_trip(machine.target.name, dtype, kind, gm_layout, 32, 64, 32, 64)
        if gm_layout is not Layout.NZ:
            _round_trip(machine.target.name, dtype, kind, gm_layout, 32, 64, 17, 33)


@pytest.mark.parametrize("dtype", sorted(NP))
def test_dtype_legality(machine, dtype):
    tgt = machine.target.name
    cols = 32 // np.dtype(NP[dtype]).itemsize
    if dtype in DTYPES[tgt]:
        _round_trip(tgt, dtype, "vec_nd", Layout.ND, 4, cols, 3, cols)
        return
    with pytest.raises(pto.UnsupportedType,
                       match=rf"tload: element type {dtype} is not supported on {tgt} "
                             r"\(supported: f32, f16, bf16, i8, ui8, i16, ui16, i32, ui32, i64, "
                             r"ui64\)"):
        _round_trip(tgt, dtype, "vec_nd", Layout.ND, 4, cols, 4, cols)


@settings(max_examples=30, deadline=None)
@given(target=st.sampled_from(["cpu", "a2a3", "a5"]), kind=st.sampled_from(sorted(TILE_KINDS)),
       gm_layout=st.sampled_from([Layout.ND, Layout.DN, Layout.NZ]),
       dtype=st.sampled_from(["f32", "f16", "i8", "i32", "ui16"]), data=st.data())
def test_random_round_trips(target, kind, gm_layout, dtype, data):
    m = pto.target(target)
    try:
        c0 = 32 // np.dtype(NP[dtype]).itemsize
        rows = 32 * data.draw(st.integers(1, 2))  # DN i8 needs 32-byte columns
        cols = c0 * data.draw(st.integers(1, 3))
        if gm_layout is Layout.NZ:
            vr = 16 * data.draw(st.integers(1, rows // 16))
            vc = c0 * data.draw(st.integers(1, cols // c0))
        else:
            vr, vc = data.draw(st.integers(1, rows)), data.draw(st.integers(1, cols))
        _round_trip(target, dtype, kind, gm_layout, rows, cols, vr, vc,
                    seed=data.draw(st.integers(0, 999)))
    finally:
        pto.memory.pop(m)


def test_multi_dim_nd_view_rows_flatten(machine):
    """A (2, 3, 4, 8) ND view loads as a 24 x 8 tile (rows flatten the leading dims)."""
    a = np.arange(2 * 3 * 4 * 8, dtype=np.float32).reshape(2, 3, 4, 8)
    t = Tile(TileType.Vec, "f32", 24, 8)
    pto.TLOAD(t, GlobalTensor(a))
    np.testing.assert_array_equal(t.numpy(), a.reshape(24, 8))


# ---- pads --------------------------------------------------------------------------------

@pytest.mark.parametrize("pad, value", [(PadValue.Null, None), (PadValue.Zero, 0.0),
                                        (PadValue.Max, np.inf), (PadValue.Min, -np.inf)],
                         ids=str)
def test_tload_pads_outside_the_valid_region(machine, pad, value):
    t = Tile(TileType.Vec, "f32", 4, 8, valid=(2, 3), pad=pad)
    t.load_numpy(np.full((4, 8), 9.0))
    pto.TLOAD(t, GlobalTensor(np.ones((2, 3), np.float32)))
    got = t.numpy()
    assert (got[:2, :3] == 1).all()
    outside = np.ones((4, 8), bool)
    outside[:2, :3] = False
    if value is None:  # Null: cpu fills 0 (the simulator pads the whole tile), NPU leaves it
        value = 0.0 if machine.target.name == "cpu" else 9.0
    assert (got[outside] == value).all()


def test_tload_integer_pads(machine):
    t = Tile(TileType.Vec, "i16", 2, 16, valid=(1, 16), pad=PadValue.Min)
    pto.TLOAD(t, GlobalTensor(np.zeros((1, 16), np.int16)))
    assert (t.numpy()[1] == -32768).all()
    u = Tile(TileType.Vec, "ui8", 2, 32, valid=(2, 5), pad=PadValue.Max)
    pto.TLOAD(u, GlobalTensor(np.zeros((2, 5), np.uint8)))
    assert (u.numpy()[:, 5:] == 255).all()


# ---- constraints -----------------------------------------------------------------------------

def test_tload_element_types_must_match(machine):
    t = Tile(TileType.Vec, "f32", 4, 8)
    with pytest.raises(pto.IllegalInstruction,
                       match="tload: dst element type f32 != src element type f16"):
        pto.TLOAD(t, GlobalTensor(np.zeros((4, 8), np.float16)))


def test_tload_view_must_match_the_valid_region(machine):
    t = Tile(TileType.Vec, "f32", 4, 8, valid=(3, 8))
    with pytest.raises(pto.RuntimeCheckError,
                       match=r"tload: GlobalTensor ND f32 1x1x1x2x8 .* covers 2x8 elements as a "
                             r"tile, dst valid region is 3x8"):
        pto.TLOAD(t, GlobalTensor(np.zeros((2, 8), np.float32)))
    # a larger view is fine: the valid region is transferred (dynamic-shape kernels such as
    # the corpus's ffn_act_dynamic load a 20x24 valid region from a 32x32 partition view)
    big = GlobalTensor(np.arange(32, dtype=np.float32).reshape(4, 8))
    pto.TLOAD(t, big)
    np.testing.assert_array_equal(t.numpy()[:3], np.arange(24).reshape(3, 8))


def test_tload_gm_layouts(machine):
    t = Tile(TileType.Vec, "f32", 8, 8)
    g = GlobalTensor(np.zeros(64, np.float32), (1, 1, 1, 8, 8), layout=Layout.NC1HWC0)
    with pytest.raises(pto.IllegalInstruction,
                       match=r"tload: src layout NC1HWC0 is not supported \(supported: ND, DN, "
                             r"NZ, MX_A_ZZ, MX_A_ND, MX_A_DN, MX_B_NN, MX_B_ND, MX_B_DN\)"):
        pto.TLOAD(t, g)


def test_tload_into_acc_only_on_cpu(machine):
    acc = pto.TileAcc("f32", 16, 16)
    g = GlobalTensor(np.ones((16, 16), np.float32))
    if machine.target.name == "cpu":
        pto.TLOAD(acc, g)
        assert (acc.numpy() == 1).all()
        return
    with pytest.raises(pto.IllegalInstruction, match="tload: dst must be a Vec, Mat, .*got Acc"):
        pto.TLOAD(acc, g)


def test_tstore_roles(machine):
    left = pto.TileLeft("f16", 16, 16)
    # (a5's own rule, Vec or Acc, comes first there: see the next test)
    want = r"tstore: expects A5 tstore src to use loc=vec or loc=acc \(src must be a Acc, Vec " \
        r"tile on a5, got Left\)" if machine.target.name == "a5" else \
        "tstore: src must be a Vec or Mat or Acc tile, got Left"
    with pytest.raises(pto.IllegalInstruction, match=want):
        pto.TSTORE(GlobalTensor(np.zeros((16, 16), np.float16)), left)


A5_MAT_STORE = "expects A5 tstore src to use loc=vec or loc=acc"  # (PTOAS's words)


def test_tstore_mat_src_refused_on_a5_only(machine):
    """TSTORE.md, implementation checks (A5): the source is a Vec or Acc tile, no Mat store on
    A5; A2/A3 (and the CPU simulator) store Mat tiles (checked against the numpy source)."""
    target = machine.target.name
    x = np.arange(16 * 32, dtype=np.float16).reshape(16, 32)
    kinds = [(TileType.Mat, BLayout.ColMajor, SLayout.RowMajor),  # NZ
             (TileType.Mat, BLayout.RowMajor, SLayout.NoneBox),  # ND
             (TileType.Vec, BLayout.RowMajor, SLayout.NoneBox)]
    for loc, bl, sl in kinds:
        tile = Tile(loc, "f16", 16, 32, bl, None, sl)
        pto.TLOAD(tile, GlobalTensor(x))
        out = np.zeros_like(x)
        if loc is TileType.Mat and target == "a5":
            with pytest.raises(pto.IllegalInstruction,
                               match=rf"tstore: {A5_MAT_STORE} \(src must be a Acc, Vec "
                                     r"tile on a5, got Mat\)"):
                pto.TSTORE(GlobalTensor(out), tile)
            assert (out == 0).all()
            continue
        pto.TSTORE(GlobalTensor(out), tile)
        np.testing.assert_array_equal(out, x)
    # an Acc source stores on every target (f32 through the fix pipe)
    acc = pto.TileAcc("f32", 16, 16)
    y = np.arange(256, dtype=np.float32).reshape(16, 16)
    acc.load_numpy(y)
    out32 = np.zeros((16, 16), np.float32)
    pto.TSTORE(GlobalTensor(out32), acc)
    np.testing.assert_array_equal(out32, y)


_MAT_STORE_PTO = """module attributes {pto.target_arch = "%ARCH%"} {
  func.func @k(%dst: !pto.ptr<f16>) attributes {pto.kernel_kind = #pto.kernel_kind<cube>} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c16 = arith.constant 16 : index
    %c32 = arith.constant 32 : index
    %tv = pto.make_tensor_view %dst, shape = [%c16, %c32], strides = [%c32, %c1] \
: !pto.tensor_view<?x?xf16>
    %sv = pto.partition_view %tv, offsets = [%c0, %c0], sizes = [%c16, %c32] \
: !pto.tensor_view<?x?xf16> -> !pto.partition_tensor_view<16x32xf16>
    %t = pto.alloc_tile : !pto.tile_buf<%LOC%, 16x32xf16, blayout=%BL%, slayout=%SL%>
    pto.tstore ins(%t : !pto.tile_buf<%LOC%, 16x32xf16, blayout=%BL%, slayout=%SL%>) \
outs(%sv : !pto.partition_tensor_view<16x32xf16>)
    return
  }
}
""".replace("\\\n", "")


@pytest.mark.parametrize("arch, loc, refused", [
    ("a5", "mat", True), ("a5", "vec", False), ("a2a3", "mat", False), ("a2a3", "vec", False)])
def test_tstore_mat_src_refused_on_a5_in_pto(arch, loc, refused):
    from ptoisa.interp.verify import diagnose
    from ptoisa.text import parse

    bl, sl = ("col_major", "row_major") if loc == "mat" else ("row_major", "none_box")
    text = _MAT_STORE_PTO.replace("%ARCH%", arch).replace("%LOC%", loc) \
        .replace("%BL%", bl).replace("%SL%", sl)
    msgs = [e.message for e in diagnose(parse(text, "t.pto"), arch)]
    if refused:
        assert len(msgs) == 1 and A5_MAT_STORE in msgs[0], msgs
    else:
        assert msgs == []


def test_operand_kinds(machine):
    t = Tile(TileType.Vec, "f32", 4, 8)
    with pytest.raises(pto.PtoError, match="tload: operand 'src' must be a GlobalTensor, got "
                                           "ndarray"):
        pto.TLOAD(t, np.zeros((4, 8), np.float32))
    with pytest.raises(pto.PtoError, match=r"tstore: unexpected argument\(s\) relu \(template "
                                           r"parameters: atomicType, reluPreMode, Phase\)"):
        pto.TSTORE(GlobalTensor(np.zeros((4, 8), np.float32)), t, relu=True)


# ---- Acc stores ------------------------------------------------------------------------------

def test_tstore_acc_converts(machine):
    acc = pto.TileAcc("f32", 16, 16)
    x = (np.arange(256).reshape(16, 16) - 128) / 3
    acc.load_numpy(x.astype(np.float32))
    for d in ("f32", "f16", "bf16"):
        mem = np.zeros((16, 16), NP[d])
        pto.TSTORE(GlobalTensor(mem), acc)
        np.testing.assert_array_equal(mem, x.astype(np.float32).astype(NP[d]))
    mem = np.zeros((16, 16), np.float16)
    pto.TSTORE(GlobalTensor(mem), acc, reluPreMode=ReluPreMode.NormalRelu)
    np.testing.assert_array_equal(mem, np.maximum(x, 0).astype(np.float32).astype(np.float16))


def test_tstore_acc_scalar_quant_word(machine):
    """preQuantScalar: the scale is the low 32 bits as an IEEE f32 (scalar mode)."""
    acc = pto.TileAcc("f32", 16, 16)
    x = np.arange(256).reshape(16, 16) % 21 - 10
    acc.load_numpy(x.astype(np.float32))
    word = int(np.array([0.5], np.float32).view(np.uint32)[0]) | (1 << 46)
    mem = np.zeros((16, 16), np.int8)
    pto.TSTORE(GlobalTensor(mem), acc, word)
    np.testing.assert_array_equal(mem, np.rint(x * 0.5))


def test_tstore_acc_atomic_add(machine):
    acc = pto.TileAcc("i32", 16, 16)
    acc.load_numpy(np.full((16, 16), 5, np.int32))
    mem = np.full((16, 16), 3, np.int32)
    pto.TSTORE(GlobalTensor(mem), acc, atomicType=AtomicType.AtomicAdd)
    pto.TSTORE(GlobalTensor(mem), acc, atomicType="AtomicAdd")
    assert (mem == 13).all()


def test_tstore_acc_limits_on_npu(machine):
    acc = pto.TileAcc("f32", 16, 4096)
    g = GlobalTensor(np.zeros((16, 4096), np.float32))
    if machine.target.name == "cpu":
        # no Cols limit on cpu: the store gets past the rules, but the 256 KiB tile does not
        # fit in cpu's 128 KiB L0C (auto placement checks capacity, issue 9 item 5)
        with pytest.raises(pto.PtoMemoryError, match="tstore: L0C overflow on cpu"):
            pto.TSTORE(g, acc)
        return
    with pytest.raises(pto.IllegalInstruction,
                       match=r"tstore: Acc src Cols must be in \[1, 4095\], got 4096"):
        pto.TSTORE(g, acc)


# ---- TASSIGN and events ------------------------------------------------------------------------

def test_tassign_instruction_returns_nothing_and_places(machine):
    t = Tile(TileType.Vec, "f32", 8, 8)
    assert pto.TASSIGN(t, 0x1000) is None
    assert t.addr == 0x1000


def test_events_can_be_passed_as_trailing_waits(machine):
    t = Tile(TileType.Vec, "f32", 4, 8)
    mem = np.arange(32, dtype=np.float32).reshape(4, 8)
    e1 = pto.TLOAD(t, GlobalTensor(mem))
    out = np.zeros_like(mem)
    e2 = pto.TSTORE(GlobalTensor(out), t, e1)
    assert isinstance(e2, pto.Event) and "TSTORE" in repr(e2)
    np.testing.assert_array_equal(out, mem)

"""Broadcasts (TROWEXPAND/TCOLEXPAND and the fused expand-ops), TPAIRREDUCESUM, TINTERLEAVE,
TDEINTERLEAVE, TPARTARGMAX/TPARTARGMIN against references written from the manual pages."""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ptoisa as pto
from ptoisa import BLayout, Tile, TileType

NP = {"f16": np.float16, "bf16": ml_dtypes.bfloat16, "f32": np.float32, "i8": np.int8,
      "ui8": np.uint8, "i16": np.int16, "ui16": np.uint16, "i32": np.int32, "ui32": np.uint32,
      "i64": np.int64, "ui64": np.uint64}
TARGETS = ("cpu", "a2a3", "a5")
R = C = 32
OPS = ("ADD", "SUB", "MUL", "DIV", "MAX", "MIN", "EXPDIF")

# From the manual pages / ops.tsv (not from the legality tables).
EXPAND_OP_TYPES = {
    "a2a3": "f16 f32 i16 i32", "a5": "f16 f32 i16 i32 ui16 ui32 bf16 i8 ui8",
    "cpu": "f16 bf16 f32 i8 ui8 i16 ui16 i32 ui32",
}
DIV_A2A3 = "f16 f32"
EXPDIF_TYPES = "f16 f32"
ROWEXPAND_TYPES = {"a2a3": "i8 ui8 i16 ui16 i32 ui32 f16 bf16 f32",
                   "a5": "i8 ui8 i16 ui16 i32 ui32 i64 ui64 f16 bf16 f32",
                   "cpu": "i8 ui8 i16 ui16 i32 ui32 i64 f16 bf16 f32"}
ILV_TYPES = "i32 ui32 f32 i16 ui16 f16 bf16 ui8 i8"


def _types(op, target):
    if op == "EXPDIF":
        return EXPDIF_TYPES.split()
    if op == "DIV" and target == "a2a3":
        return DIV_A2A3.split()
    return EXPAND_OP_TYPES[target].split()


def _is_int(dt):
    return dt.startswith(("i", "ui"))


def _values(rng, dt, shape, *, nonzero=False):
    npdt = NP[dt]
    if not _is_int(dt):
        x = rng.standard_normal(shape) * 3
        return x.astype(npdt)
    info = np.iinfo(npdt)
    x = rng.integers(max(info.min, -3000), min(info.max, 3000), size=shape, endpoint=True)
    if nonzero:
        x[x == 0] = 3
    return x.astype(npdt)


def _wrap(v, dt):
    bits = np.dtype(NP[dt]).itemsize * 8
    v = int(v) % (1 << bits)
    if dt.startswith("i") and v >= 1 << (bits - 1):
        v -= 1 << bits
    return v


def _ref_elem(op, a, b, dt):
    """dst element of `a op b` (a, b values of type dt) from the manual pages."""
    if _is_int(dt):
        a, b = int(a), int(b)
        if op == "ADD":
            r = a + b
        elif op == "SUB":
            r = a - b
        elif op == "MUL":
            r = a * b
        elif op == "DIV":  # C division, toward zero; x / 0 -> 0 (ptoisa's choice)
            r = 0 if b == 0 else abs(a) // abs(b) * (1 if (a < 0) == (b < 0) else -1)
        elif op == "MAX":
            r = max(a, b)
        else:
            r = min(a, b)
        return NP[dt](_wrap(r, dt)) if not dt.startswith("ui") else \
            np.array(_wrap(r, dt)).astype(NP[dt])
    a, b = float(a), float(b)
    with np.errstate(all="ignore"):
        if op == "EXPDIF":  # T*EXPANDSUB then TEXP: the difference is rounded to T first
            return NP[dt](math.exp(float(NP[dt](a - b))))
        r = {"ADD": lambda: a + b, "SUB": lambda: a - b, "MUL": lambda: a * b,
             "DIV": lambda: np.float64(a) / np.float64(b), "MAX": lambda: max(a, b),
             "MIN": lambda: min(a, b)}[op]()
    return NP[dt](r)


@pytest.fixture
def on():
    made = []

    def push(target):
        made.append(pto.target(target))
        return made[-1]

    yield push
    for m in reversed(made):
        pto.memory.pop(m)


# ---- TROWEXPAND{op} --------------------------------------------------------------------------

def _run_row_op(op, dt, vr, vc, mode, swapped, *, with_tmp=False, seed=0):
    rng = np.random.default_rng(seed)
    full = Tile(TileType.Vec, dt, R, C, valid=(vr, vc))
    blk = 32 // np.dtype(NP[dt]).itemsize
    if mode == 1:
        exp = Tile(TileType.Vec, dt, R, 1, BLayout.ColMajor, valid=(vr, 1))
    else:
        exp = Tile(TileType.Vec, dt, R, blk, valid=(vr, blk))
    dst = Tile(TileType.Vec, dt, R, C, valid=(vr, vc))
    fx = _values(rng, dt, (R, C), nonzero=op == "DIV" and swapped)
    ex = _values(rng, dt, exp.shape, nonzero=op == "DIV" and not swapped)
    full.load_numpy(fx)
    exp.load_numpy(ex)
    before = np.full(dst.shape, 1, NP[dt])
    dst.load_numpy(before)
    fn = getattr(pto, f"TROWEXPAND{op}")
    src0, src1 = (exp, full) if swapped else (full, exp)
    if with_tmp:
        fn(dst, src0, src1, Tile(TileType.Vec, dt, 8, 256 // np.dtype(NP[dt]).itemsize))
    else:
        fn(dst, src0, src1)
    ref = before.copy()
    for i in range(vr):
        for j in range(vc):
            s = ex[i, 0] if mode == 1 else ex[i, j % blk]
            a, b = (s, fx[i, j]) if swapped else (fx[i, j], s)
            ref[i, j] = _ref_elem(op, a, b, dt)
    np.testing.assert_array_equal(dst.numpy(), ref)


ROW_CASES = [(op, t, d) for op in OPS for t in TARGETS for d in _types(op, t)]


@pytest.mark.parametrize("op, target, dt", ROW_CASES)
@pytest.mark.parametrize("mode, swapped", [(1, False), (2, False), (1, True)])
def test_row_expand_op(on, op, target, dt, mode, swapped):
    on(target)
    _run_row_op(op, dt, 5, 19, mode, swapped, seed=mode)
    if not swapped and mode == 1:
        _run_row_op(op, dt, R, C, mode, swapped, with_tmp=True, seed=7)


@settings(max_examples=30, deadline=None)
@given(target=st.sampled_from(TARGETS), op=st.sampled_from(OPS), data=st.data())
def test_row_expand_op_random_regions(target, op, data):
    m = pto.target(target)
    try:
        dt = data.draw(st.sampled_from(_types(op, target)))
        _run_row_op(op, dt, data.draw(st.integers(1, R)), data.draw(st.integers(1, C)),
                    data.draw(st.sampled_from([1, 2])), data.draw(st.booleans()),
                    seed=data.draw(st.integers(0, 999)))
    finally:
        pto.memory.pop(m)


SRC1COL_CASES = [(op, t, d) for op in OPS for t in ("a2a3", "a5") for d in _types(op, t)]


@pytest.mark.parametrize("op, target, dt", SRC1COL_CASES)
@pytest.mark.parametrize("cols", [1, "block"])
def test_row_expand_src1col(on, op, target, dt, cols):
    """TileLang's form (PTOAS ``src1Col``): src1 is the expanded operand whatever its valid
    shape; src1Col = 1 takes s = src1[i, 0] (the tilelang_st goldens: a RowMajor 32-byte wide
    src1, column 0 broadcast), src1Col = 32/sizeof(T) the RowMajor block (mode 2)."""
    on(target)
    rng = np.random.default_rng(11)
    blk = 32 // np.dtype(NP[dt]).itemsize
    n = blk if cols == "block" else 1
    vr, vc = 6, 21
    src0 = Tile(TileType.Vec, dt, R, C, valid=(vr, vc))
    src1 = Tile(TileType.Vec, dt, R, blk)  # full valid shape: src1Col decides
    dst = Tile(TileType.Vec, dt, R, C, valid=(vr, vc))
    a = _values(rng, dt, (R, C))
    b = _values(rng, dt, (R, blk), nonzero=op == "DIV")
    src0.load_numpy(a)
    src1.load_numpy(b)
    before = np.full(dst.shape, 1, NP[dt])
    dst.load_numpy(before)
    getattr(pto, f"TROWEXPAND{op}")(dst, src0, src1, src1Col=n)
    ref = before.copy()
    for i in range(vr):
        for j in range(vc):
            ref[i, j] = _ref_elem(op, a[i, j], b[i, 0] if n == 1 else b[i, j % blk], dt)
    np.testing.assert_array_equal(dst.numpy(), ref)


def test_row_expand_src1col_refusals(on):
    on("a5")
    src0 = Tile(TileType.Vec, "f32", 8, 16)
    src1 = Tile(TileType.Vec, "f32", 8, 8)
    with pytest.raises(pto.PtoError, match="src1Col = 3 is not supported"):
        pto.TROWEXPANDADD(Tile(TileType.Vec, "f32", 8, 16), src0, src1, src1Col=3)
    with pytest.raises(pto.PtoError, match="src0 .* must have dst's valid shape"):
        pto.TROWEXPANDADD(Tile(TileType.Vec, "f32", 8, 16), src1, src0, src1Col=1)


SRC1COL_PTO = """module {
  func.func @k(%a: !pto.ptr<f32>, %b: !pto.ptr<f32>, %o: !pto.ptr<f32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c8 = arith.constant 8 : index
    %c16 = arith.constant 16 : index
    %av = pto.make_tensor_view %a, shape = [%c8, %c16], strides = [%c16, %c1]
        : !pto.tensor_view<?x?xf32>
    %bv = pto.make_tensor_view %b, shape = [%c8, %c8], strides = [%c8, %c1]
        : !pto.tensor_view<?x?xf32>
    %ov = pto.make_tensor_view %o, shape = [%c8, %c16], strides = [%c16, %c1]
        : !pto.tensor_view<?x?xf32>
    %ap = pto.partition_view %av, offsets = [%c0, %c0], sizes = [%c8, %c16]
        : !pto.tensor_view<?x?xf32> -> !pto.partition_tensor_view<8x16xf32>
    %bp = pto.partition_view %bv, offsets = [%c0, %c0], sizes = [%c8, %c8]
        : !pto.tensor_view<?x?xf32> -> !pto.partition_tensor_view<8x8xf32>
    %op = pto.partition_view %ov, offsets = [%c0, %c0], sizes = [%c8, %c16]
        : !pto.tensor_view<?x?xf32> -> !pto.partition_tensor_view<8x16xf32>
    %s0 = pto.alloc_tile : !pto.tile_buf<vec, 8x16xf32>
    %s1 = pto.alloc_tile : !pto.tile_buf<vec, 8x8xf32>
    %d = pto.alloc_tile : !pto.tile_buf<vec, 8x16xf32>
    pto.tload ins(%ap : !pto.partition_tensor_view<8x16xf32>)
        outs(%s0 : !pto.tile_buf<vec, 8x16xf32>)
    pto.tload ins(%bp : !pto.partition_tensor_view<8x8xf32>)
        outs(%s1 : !pto.tile_buf<vec, 8x8xf32>)
    pto.OP ins(%s0, %s1 : !pto.tile_buf<vec, 8x16xf32>, !pto.tile_buf<vec, 8x8xf32>)
        outs(%d : !pto.tile_buf<vec, 8x16xf32>) ATTRS
    pto.tstore ins(%d : !pto.tile_buf<vec, 8x16xf32>)
        outs(%op : !pto.partition_tensor_view<8x16xf32>)
    return
  }
}
"""


@pytest.mark.parametrize("op,attrs,ref", [
    ("trowexpandsub", "src1Col = 1 : i64, src0eqdst = true, highPrecision = false",
     lambda a, b: a - b[:, :1]),
    ("trowexpanddiv", "src1Col = 1 : i64, src0eqdst = true, highPrecision = true",
     lambda a, b: a / b[:, :1]),
    ("trowexpandmax", "src1Col = 1 : i64, src0eqdst = false", lambda a, b: np.maximum(a, b[:, :1])),
    ("trowexpandmul", "src1Col = 8 : i64", lambda a, b: a * np.tile(b, (1, 2))),
    # no src1Col: PTOAS's TileLib template broadcasts src1[i, 0] (tilelang_st trowexpandadd's
    # goldens: a RowMajor src1 of 32 bytes per row, no attribute, column 0 added)
    ("trowexpandadd", "", lambda a, b: a + b[:, :1]),
    ("trowexpandsub", "src0eqdst = true", lambda a, b: a - b[:, :1]),
])
def test_row_expand_src1col_pto(op, attrs, ref):
    a = np.random.default_rng(1).standard_normal((8, 16)).astype(np.float32)
    b = (np.random.default_rng(2).standard_normal((8, 8)) + 5).astype(np.float32)
    o = np.zeros((8, 16), np.float32)
    pto.load(SRC1COL_PTO.replace("OP", op).replace("ATTRS", f"{{{attrs}}}" if attrs else ""),
             target="a5").k(a, b, o)
    np.testing.assert_allclose(o, ref(a.astype(np.float64), b.astype(np.float64)), rtol=1e-6)


def test_row_expand_without_src1col_eager_is_the_isa_mode_2():
    """The eager call (pto-isa's C++ overload, no src1Col) keeps the ISA page's mode 2 for a
    RowMajor src1 of 32/sizeof(T) columns: the 32-byte block repeats across the row."""
    a = np.random.default_rng(1).standard_normal((8, 16)).astype(np.float32)
    b = np.random.default_rng(2).standard_normal((8, 8)).astype(np.float32)
    src0 = Tile(TileType.Vec, "f32", 8, 16).load_numpy(a)
    src1 = Tile(TileType.Vec, "f32", 8, 8).load_numpy(b)
    dst = Tile(TileType.Vec, "f32", 8, 16)
    pto.TROWEXPANDADD(dst, src0, src1)
    np.testing.assert_allclose(dst.numpy(), a.astype(np.float64) + np.tile(b, (1, 2)),
                               rtol=1e-6)


def test_row_expand_high_precision_only_on_div():
    text = SRC1COL_PTO.replace("OP", "trowexpandadd").replace("ATTRS", "{highPrecision = true}")
    with pytest.raises(pto.PtoError, match="only pto.trowexpanddiv has a high-precision form"):
        pto.load(text, target="a5").k(*(np.zeros(s, np.float32) for s in ((8, 16), (8, 8),
                                                                           (8, 16))))


def test_row_expand_softmax(on):
    """Row softmax as a kernel writes it: TROWMAX, TROWEXPANDSUB, TEXP-free EXPDIF, TROWSUM,
    TROWEXPANDDIV; compared with a float64 numpy softmax."""
    on("cpu")
    x = np.random.default_rng(3).standard_normal((16, 64)).astype(np.float32) * 4
    src = Tile(TileType.Vec, "f32", 16, 64).load_numpy(x)
    mx = Tile(TileType.Vec, "f32", 16, 1, BLayout.ColMajor)
    e = Tile(TileType.Vec, "f32", 16, 64)
    s = Tile(TileType.Vec, "f32", 16, 1, BLayout.ColMajor)
    pto.TROWMAX(mx, src, e)
    pto.TROWEXPANDEXPDIF(e, src, mx)
    pto.TROWSUM(s, e, src)
    pto.TROWEXPANDDIV(e, e, s)
    x64 = x.astype(np.float64)
    want = np.exp(x64 - x64.max(1, keepdims=True))
    want /= want.sum(1, keepdims=True)
    np.testing.assert_allclose(e.numpy(), want, rtol=2e-6, atol=1e-7)


def test_integer_division_truncates_and_by_zero_gives_zero(on):
    on("a5")
    a = Tile(TileType.Vec, "i32", 8, 8).load_numpy(np.array([[-7, 7, -7, 7, 5, -5, 0, 9]] * 8,
                                                             np.int32))
    b = Tile(TileType.Vec, "i32", 8, 1, BLayout.ColMajor)
    b.load_numpy(np.array([[2], [-2], [0], [1], [3], [-3], [7], [-1]], np.int32))
    d = Tile(TileType.Vec, "i32", 8, 8)
    pto.TROWEXPANDDIV(d, a, b)
    assert d.numpy()[0].tolist() == [-3, 3, -3, 3, 2, -2, 0, 4]
    assert d.numpy()[1].tolist() == [3, -3, 3, -3, -2, 2, 0, -4]
    assert d.numpy()[2].tolist() == [0] * 8


# ---- TCOLEXPAND{op} --------------------------------------------------------------------------

def _run_col_op(op, dt, vr, vc, *, seed=0):
    rng = np.random.default_rng(seed)
    src0 = Tile(TileType.Vec, dt, R, C, valid=(vr, vc))
    src1 = Tile(TileType.Vec, dt, 2, C, valid=(1, vc))
    dst = Tile(TileType.Vec, dt, R, C, valid=(vr, vc))
    a = _values(rng, dt, (R, C))
    b = _values(rng, dt, (2, C), nonzero=op == "DIV")
    src0.load_numpy(a)
    src1.load_numpy(b)
    before = np.full(dst.shape, 1, NP[dt])
    dst.load_numpy(before)
    getattr(pto, f"TCOLEXPAND{op}")(dst, src0, src1)
    ref = before.copy()
    for i in range(vr):
        for j in range(vc):
            ref[i, j] = _ref_elem(op, a[i, j], b[0, j], dt)
    np.testing.assert_array_equal(dst.numpy(), ref)


@pytest.mark.parametrize("op, target, dt", ROW_CASES)
@pytest.mark.parametrize("vr, vc", [(R, C), (7, 3), (1, 32)])
def test_col_expand_op(on, op, target, dt, vr, vc):
    on(target)
    _run_col_op(op, dt, vr, vc, seed=vr)


# ---- TROWEXPAND / TCOLEXPAND ---------------------------------------------------------------

@pytest.mark.parametrize("target, dt", [(t, d) for t in TARGETS
                                        for d in ROWEXPAND_TYPES[t].split()])
@pytest.mark.parametrize("vr, vc", [(R, C), (5, 9)])
def test_row_and_col_expand(on, target, dt, vr, vc):
    on(target)
    rng = np.random.default_rng(vr)
    src = Tile(TileType.Vec, dt, R, C, valid=(vr, vc))
    x = _values(rng, dt, (R, C))
    src.load_numpy(x)
    for op, ref_of in (("TROWEXPAND", lambda i, j: x[i, 0]), ("TCOLEXPAND", lambda i, j: x[0, j])):
        dst = Tile(TileType.Vec, dt, R, C, valid=(vr, vc))
        before = np.full(dst.shape, 2, NP[dt])
        dst.load_numpy(before)
        getattr(pto, op)(dst, src)
        ref = before.copy()
        for i in range(vr):
            for j in range(vc):
                ref[i, j] = ref_of(i, j)
        np.testing.assert_array_equal(dst.numpy(), ref)


def test_row_expand_a2a3_returns_early_on_empty_src(on):
    on("a2a3")
    src = Tile(TileType.Vec, "f32", 8, 8, valid=(0, 0))
    dst = Tile(TileType.Vec, "f32", 8, 8).load_numpy(np.ones((8, 8), np.float32))
    pto.TROWEXPAND(dst, src)
    assert (dst.numpy() == 1).all()


# ---- TPAIRREDUCESUM ------------------------------------------------------------------------

@pytest.mark.parametrize("target, dt", [("a2a3", "f16"), ("a2a3", "f32"), ("a5", "f16"),
                                        ("a5", "f32"), ("cpu", "f16"), ("cpu", "bf16"),
                                        ("cpu", "f32"), ("cpu", "i16"), ("cpu", "i32")])
@pytest.mark.parametrize("vr, vc", [(R, C), (3, 7), (2, 1)])
def test_pair_reduce_sum(on, target, dt, vr, vc):
    on(target)
    x = _values(np.random.default_rng(vc), dt, (R, C))
    src = Tile(TileType.Vec, dt, R, C, valid=(vr, vc)).load_numpy(x)
    dst = Tile(TileType.Vec, dt, R, C, valid=(vr, vc))
    before = np.full(dst.shape, 4, NP[dt])
    dst.load_numpy(before)
    pto.TPAIRREDUCESUM(dst, src)
    # the CPU simulator zeroes the whole dst tile first; the NPUs write the valid region only
    ref = np.zeros_like(before) if target == "cpu" else before.copy()
    for i in range(vr):
        for k in range(vc):
            if k < (vc + 1) // 2:
                b = x[i, 2 * k + 1] if 2 * k + 1 < vc else 0
                ref[i, k] = (NP[dt](_wrap(int(x[i, 2 * k]) + int(b), dt)) if _is_int(dt)
                             else NP[dt](float(x[i, 2 * k]) + float(b)))
            else:
                ref[i, k] = 0
    np.testing.assert_array_equal(dst.numpy(), ref)


# ---- TINTERLEAVE / TDEINTERLEAVE -----------------------------------------------------------

@pytest.mark.parametrize("target, dt", [(t, d) for t in ("cpu", "a5") for d in ILV_TYPES.split()])
@pytest.mark.parametrize("vr, vc", [(R, C), (3, 6)])
def test_interleave_roundtrip(on, target, dt, vr, vc):
    on(target)
    rng = np.random.default_rng(vc)
    a, b = _values(rng, dt, (R, C)), _values(rng, dt, (R, C))
    s0 = Tile(TileType.Vec, dt, R, C, valid=(vr, vc)).load_numpy(a)
    s1 = Tile(TileType.Vec, dt, R, C, valid=(vr, vc)).load_numpy(b)
    d0, d1, e0, e1 = (Tile(TileType.Vec, dt, R, C, valid=(vr, vc)) for _ in range(4))
    pto.TINTERLEAVE(d1, d0, s1, s0)
    for i in range(vr):
        stream = [v for k in range(vc) for v in (a[i, k], b[i, k])]
        np.testing.assert_array_equal(d0.numpy()[i, :vc], np.array(stream[:vc], NP[dt]))
        np.testing.assert_array_equal(d1.numpy()[i, :vc], np.array(stream[vc:], NP[dt]))
    pto.TDEINTERLEAVE(e1, e0, d1, d0)  # two-source form inverts TINTERLEAVE
    np.testing.assert_array_equal(e0.numpy()[:vr, :vc], a[:vr, :vc])
    np.testing.assert_array_equal(e1.numpy()[:vr, :vc], b[:vr, :vc])
    # single-source form: even / odd positions of one row
    src = Tile(TileType.Vec, dt, R, C, valid=(vr, vc)).load_numpy(a)
    h0, h1 = (Tile(TileType.Vec, dt, R, C, valid=(vr, vc // 2)) for _ in range(2))
    pto.TDEINTERLEAVE(h1, h0, src)
    for i in range(vr):
        for k in range(vc // 2):
            assert h0.numpy()[i, k] == a[i, 2 * k] and h1.numpy()[i, k] == a[i, 2 * k + 1]


# ---- TPARTARGMAX / TPARTARGMIN ---------------------------------------------------------------

PART_PAIRS = [("f16", "i16"), ("f16", "ui16"), ("f16", "i32"), ("f16", "ui32"), ("f32", "i32"),
              ("f32", "ui32")]


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("vt, it", PART_PAIRS)
@pytest.mark.parametrize("op", ["TPARTARGMAX", "TPARTARGMIN"])
@pytest.mark.parametrize("v0, v1", [((16, 16), (16, 16)), ((16, 16), (5, 9)),
                                    ((3, 16), (16, 16)), ((5, 9), (9, 5))])
def test_part_arg(on, target, vt, it, op, v0, v1):
    m = on(target)
    dv = (max(v0[0], v1[0]), max(v0[1], v1[1]))
    if dv not in (v0, v1):
        # every target rejects validity patterns where neither source covers dst (a
        # documented constraint); a permissive machine computes them as the CPU simulator
        with pytest.raises(pto.PtoError, match="unsupported partial-validity pattern"):
            _run_part(op, vt, it, v0, v1, dv)
        m.permissive = True
    _run_part(op, vt, it, v0, v1, dv)


def _run_part(op, vt, it, v0, v1, dv):
    rng = np.random.default_rng(v0[0] + v1[1])
    n = 16
    # few distinct values, so ties happen
    a = rng.integers(-3, 4, size=(n, n)).astype(NP[vt])
    b = rng.integers(-3, 4, size=(n, n)).astype(NP[vt])
    ia = rng.integers(0, 100, size=(n, n)).astype(NP[it])
    ib = rng.integers(100, 200, size=(n, n)).astype(NP[it])
    sv0 = Tile(TileType.Vec, vt, n, n, valid=v0).load_numpy(a)
    sv1 = Tile(TileType.Vec, vt, n, n, valid=v1).load_numpy(b)
    si0 = Tile(TileType.Vec, it, n, n, valid=v0).load_numpy(ia)
    si1 = Tile(TileType.Vec, it, n, n, valid=v1).load_numpy(ib)
    dv_t = Tile(TileType.Vec, vt, n, n, valid=dv)
    di_t = Tile(TileType.Vec, it, n, n, valid=dv)
    getattr(pto, op)(dv_t, sv0, sv1, di_t, si0, si1)
    for i in range(dv[0]):
        for j in range(dv[1]):
            in0 = i < v0[0] and j < v0[1]
            in1 = i < v1[0] and j < v1[1]
            if in0 and in1:
                first = a[i, j] > b[i, j] if op == "TPARTARGMAX" else a[i, j] < b[i, j]
                want = (a[i, j], ia[i, j]) if first else (b[i, j], ib[i, j])
            elif in0:
                want = (a[i, j], ia[i, j])
            elif in1:
                want = (b[i, j], ib[i, j])
            else:
                want = (0, 0)  # permissive (the CPU simulator): neither source valid
            assert (dv_t.numpy()[i, j], di_t.numpy()[i, j]) == want, (i, j)


# ---- illegal uses (one or more per instruction) -------------------------------------------

def _t(dt, r, c, layout=BLayout.RowMajor, valid=None, loc=TileType.Vec):
    return Tile(loc, dt, r, c, layout, valid=valid)


ILLEGAL = [
    ("a2a3", lambda: pto.TROWEXPANDDIV(_t("i32", 8, 8), _t("i32", 8, 8),
                                       _t("i32", 8, 1, BLayout.ColMajor)),
     r"trowexpanddiv: element type i32 is not supported on a2a3 \(supported: f32, f16\)"),
    ("a5", lambda: pto.TROWEXPANDADD(_t("f32", 8, 8), _t("f32", 8, 8),
                                     _t("f32", 8, 8, valid=(8, 4))),
     r"trowexpandadd: expanded operand src1 is RowMajor \(mode 2\): its valid cols must be "
     r"32/sizeof\(f32\) = 8, got 4"),
    ("cpu", lambda: pto.TROWEXPANDSUB(_t("f32", 8, 8), _t("f32", 8, 8, valid=(4, 8)),
                                      _t("f32", 8, 1, BLayout.ColMajor, valid=(4, 1))),
     r"trowexpandsub: one of src0 .* and src1 .* must have dst's valid shape 8x8"),
    ("cpu", lambda: pto.TROWEXPANDMUL(_t("f32", 8, 8), _t("f32", 8, 8),
                                      _t("f32", 8, 1, BLayout.ColMajor, valid=(6, 1))),
     r"trowexpandmul: expanded operand src1 has valid rows 6, dst has 8"),
    ("cpu", lambda: pto.TROWEXPANDMAX(_t("f32", 8, 8, BLayout.ColMajor), _t("f32", 8, 8),
                                      _t("f32", 8, 1, BLayout.ColMajor)),
     r"trowexpandmax: dst must be row-major"),
    ("a5", lambda: pto.TROWEXPANDMIN(_t("f16", 16, 16), _t("f16", 16, 16),
                                     _t("f16", 16, 16), _t("f16", 16, 16)),
     r"trowexpandmin: the overload with tmp supports only mode 1"),
    ("a5", lambda: pto.TROWEXPANDEXPDIF(_t("i32", 8, 8), _t("i32", 8, 8),
                                        _t("i32", 8, 1, BLayout.ColMajor)),
     r"trowexpandexpdif: element type i32 is not supported on a5 \(supported: f32, f16\)"),
    ("cpu", lambda: pto.TROWEXPANDDIV(_t("f32", 8, 8), _t("f32", 8, 8),
                                      _t("f32", 8, 1, BLayout.ColMajor),
                                      PrecisionType="DivAlgorithm::FAST"),
     r"trowexpanddiv: PrecisionType 'DivAlgorithm::FAST' is not a DivAlgorithm"),
    ("a5", lambda: pto.TROWEXPAND(_t("f32", 8, 8), _t("f32", 8, 8, valid=(4, 8))),
     r"trowexpand: src valid rows 4 != dst valid rows 8"),
    ("cpu", lambda: pto.TROWEXPAND(_t("f32", 8, 8), _t("f16", 16, 16)),
     r"trowexpand: expects .* to have the same element type"),
    ("cpu", lambda: pto.TCOLEXPAND(_t("f32", 8, 8), _t("f32", 8, 8, valid=(8, 4))),
     r"tcolexpand: src valid region 8x4 does not cover 1x8 \(one value per dst column\)"),
    ("a2a3", lambda: pto.TCOLEXPAND(_t("i64", 8, 8), _t("i64", 8, 8)),
     r"tcolexpand: element type i64 is not supported on a2a3"),
    ("a2a3", lambda: pto.TCOLEXPANDADD(_t("ui16", 16, 16), _t("ui16", 16, 16),
                                       _t("ui16", 1, 16)),
     r"tcolexpandadd: element type ui16 is not supported on a2a3"),
    ("cpu", lambda: pto.TCOLEXPANDSUB(_t("f32", 8, 8), _t("f32", 8, 8), _t("f32", 1, 8,
                                                                           valid=(1, 4))),
     r"tcolexpandsub: src1 valid region 1x4 does not provide one value per dst column \(8\)"),
    ("cpu", lambda: pto.TCOLEXPANDMUL(_t("f32", 8, 8), _t("f32", 8, 8, valid=(8, 4)),
                                      _t("f32", 1, 8)),
     r"tcolexpandmul: src0 valid region 8x4 does not cover dst valid region 8x8"),
    ("a2a3", lambda: pto.TCOLEXPANDDIV(_t("i16", 16, 16), _t("i16", 16, 16), _t("i16", 1, 16)),
     r"tcolexpanddiv: element type i16 is not supported on a2a3 \(supported: f32, f16\)"),
    ("cpu", lambda: pto.TCOLEXPANDMAX(_t("f32", 8, 8), _t("f32", 8, 8), _t("f16", 1, 16)),
     r"tcolexpandmax: expects .* to have the same element type"),
    ("cpu", lambda: pto.TCOLEXPANDMIN(_t("f32", 8, 8), _t("f32", 8, 8),
                                      _t("f32", 8, 1, BLayout.ColMajor)),
     r"tcolexpandmin: src1 must be ND"),
    ("cpu", lambda: pto.TCOLEXPANDEXPDIF(_t("i16", 16, 16), _t("i16", 16, 16),
                                         _t("i16", 1, 16)),
     r"tcolexpandexpdif: element type i16 is not supported on cpu"),
    ("a5", lambda: pto.TPAIRREDUCESUM(_t("f32", 8, 8), _t("f32", 8, 8, valid=(8, 6))),
     r"tpairreducesum: operands must have the same valid shape \(dst 8x8, src0 8x6\)"),
    ("a2a3", lambda: pto.TINTERLEAVE(*(_t("f32", 8, 8) for _ in range(4))),
     r"tinterleave: not supported on target a2a3"),
    ("a5", lambda: pto.TINTERLEAVE(*(_t("f32", 8, 8, valid=(8, 5)) for _ in range(4))),
     r"tinterleave: dst0 valid cols must be even, got 5"),
    ("a2a3", lambda: pto.TDEINTERLEAVE(*(_t("f32", 8, 8) for _ in range(4))),
     r"tdeinterleave: not supported on target a2a3"),
    ("cpu", lambda: pto.TDEINTERLEAVE(_t("f32", 8, 8), _t("f32", 8, 8), _t("f32", 8, 8)),
     r"tdeinterleave: single-source form: dst0/dst1 valid shapes \(8x8, 8x8\) must be 8x4"),
    ("a5", lambda: pto.TPARTARGMAX(_t("f32", 8, 8), _t("f32", 8, 8), _t("f32", 8, 8),
                                   _t("i16", 16, 16), _t("i16", 16, 16), _t("i16", 16, 16)),
     r"tpartargmax: type combination dstVal f32 -> dstIdx i16 is not supported on a5"),
    ("cpu", lambda: pto.TPARTARGMIN(_t("f32", 8, 8), _t("f32", 8, 8), _t("f32", 8, 8),
                                    _t("i32", 8, 8, valid=(8, 4)), _t("i32", 8, 8),
                                    _t("i32", 8, 8)),
     r"tpartargmin: dstVal valid 8x8 != dstIdx valid 8x4"),
]


@pytest.mark.parametrize("target, call, msg", ILLEGAL, ids=[m.split(":")[0] + f"-{k}"
                                                            for k, (_, _, m) in
                                                            enumerate(ILLEGAL)])
def test_illegal(on, target, call, msg):
    on(target)
    with pytest.raises(pto.PtoError, match=msg):
        call()

"""Row/column reductions and arg-reductions of the reduce-and-expand family, against numpy /
Python references written from the manual pages (trowmax.md, tcolsum.md, trowargmax.md, ...)."""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ptoisa as pto
from ptoisa import BLayout, Dyn, Tile, TileType

NP = {"f16": np.float16, "bf16": ml_dtypes.bfloat16, "f32": np.float32, "i8": np.int8,
      "ui8": np.uint8, "i16": np.int16, "ui16": np.uint16, "i32": np.int32, "ui32": np.uint32,
      "i64": np.int64, "ui64": np.uint64}

# Element types per target, from the manual pages / ops.tsv (not from the legality tables).
ROW_RED = {
    "TROWPROD": {"a2a3": "f16 f32 i32 i16", "a5": "f16 f32 i32 i16",
                 "cpu": "f16 bf16 f32 i8 ui8 i16 i32"},
    "TROWMAX": {"a2a3": "f16 f32 i32 i16", "a5": "f16 f32 i32 i64 ui64 i16 i8 ui8",
                "cpu": "f16 bf16 f32 i8 ui8 i16 i32"},
    "TROWMIN": {"a2a3": "f16 f32 i32 i16", "a5": "f16 f32 i32 i64 ui64 i16 i8 ui8",
                "cpu": "f16 bf16 f32 i8 ui8 i16 i32"},
}
COL_RED = {
    "TCOLSUM": {"a2a3": "f16 f32 i16 i32", "a5": "f16 f32 i8 ui8 i16 ui16 i32 ui32 i64 bf16",
                "cpu": "f16 bf16 f32"},
    "TCOLPROD": {"a2a3": "f16 f32 i16 i32", "a5": "f32 f16 bf16 i16 ui16 i32 ui32",
                 "cpu": "f16 f32 i16 i32 ui32"},
    "TCOLMAX": {"a2a3": "f16 f32 i16 i32", "a5": "f16 f32 i8 ui8 i16 ui16 i32 ui32 bf16",
                "cpu": "f16 bf16 f32 i8 ui8"},
    "TCOLMIN": {"a2a3": "f16 f32 i16 i32", "a5": "f16 f32 i8 ui8 i16 ui16 i32 ui32 bf16",
                "cpu": "f16 bf16 f32 i8 ui8 i32"},
}
ARG_SRC = {"a2a3": "f16 f32", "a5": "f16 bf16 i16 ui16 f32 i32 ui32",
           "cpu": "f16 bf16 f32 i16 i32 ui32"}
COL_ARG_SRC = {"a2a3": "f16 f32 ui16 ui32", "a5": "i8 ui8 i16 ui16 i32 ui32 f16 f32",
               "cpu": "f16 bf16 f32 i16 i32 ui32"}
TARGETS = ("cpu", "a2a3", "a5")
R = C = 32  # 32 rows/cols: every dtype fits an ND row and a DN column


def _cases(table):
    return [(op, t, d) for op, per in table.items() for t in TARGETS for d in per[t].split()]


def _values(rng, dt, shape, kind="any"):
    """Test data. 'prod': factors whose partial products are exact in every type and order."""
    npdt = NP[dt]
    unsigned = dt.startswith("ui")
    if kind == "prod":
        pool = [1, 2, 1, 1] if unsigned else [1, -1, 2, -1]
        if dt in ("f16", "bf16", "f32"):
            pool = [1, -1, 2, 0.5, -1]
        return rng.choice(pool, size=shape).astype(npdt)
    if kind == "sum":
        return rng.integers(0 if unsigned else -4, 5, size=shape).astype(npdt)
    if dt in ("f16", "bf16", "f32"):
        return (rng.standard_normal(shape) * 50).astype(npdt)
    info = np.iinfo(npdt)
    return rng.integers(max(info.min, -10**6), min(info.max, 10**6), size=shape,
                        endpoint=True).astype(npdt)


def _wrap(v, dt):
    """A Python number into dt (integers modulo 2^bits, as the ISA wraps)."""
    if dt.startswith(("i", "ui")):
        bits = np.dtype(NP[dt]).itemsize * 8
        v = int(v) % (1 << bits)
        if dt.startswith("i") and v >= 1 << (bits - 1):
            v -= 1 << bits
        return NP[dt](v)
    return NP[dt](v)


def _reduce_py(op, seq, dt):
    """Reference reduction of one row/column (Python numbers, exact for the test data)."""
    vals = [int(v) if dt.startswith(("i", "ui")) else float(v) for v in seq]
    if op.endswith("MAX"):
        return _wrap(max(vals), dt)
    if op.endswith("MIN"):
        return _wrap(min(vals), dt)
    if op.endswith("PROD"):
        return _wrap(math.prod(vals), dt)
    return _wrap(sum(vals), dt)


@pytest.fixture
def on():
    made = []

    def push(target):
        made.append(pto.target(target))
        return made[-1]

    yield push
    for m in reversed(made):
        pto.memory.pop(m)


# ---- row reductions -------------------------------------------------------------------------

def _run_row(op, dt, vr, vc, *, dn, dyn=False, seed=0):
    rng = np.random.default_rng(seed)
    src = Tile(TileType.Vec, dt, R, C, valid=(Dyn(vr), Dyn(vc)) if dyn else (vr, vc))
    if dn:
        dst = Tile(TileType.Vec, dt, R, 1, BLayout.ColMajor, valid=(vr, 1))
    else:
        dst = Tile(TileType.Vec, dt, R, 32 // np.dtype(NP[dt]).itemsize, valid=(vr, 1))
    x = _values(rng, dt, (R, C), "prod" if op == "TROWPROD" else "any")
    src.load_numpy(x)
    before = np.full(dst.shape, 7, NP[dt])
    dst.load_numpy(before)
    ev = getattr(pto, op)(dst, src, Tile(TileType.Vec, dt, R, C))
    assert ev.pipe is pto.Pipe.V
    ref = before.copy()
    for i in range(vr):
        ref[i, 0] = _reduce_py(op, x[i, :vc], dt)
    np.testing.assert_array_equal(dst.numpy(), ref)


@pytest.mark.parametrize("op, target, dt", _cases(ROW_RED))
@pytest.mark.parametrize("vr, vc, dn", [(32, 32, False), (5, 7, True), (17, 1, False),
                                        (1, 32, True)])
def test_row_reduce(on, op, target, dt, vr, vc, dn):
    on(target)
    _run_row(op, dt, vr, vc, dn=dn, seed=vr * 100 + vc)


@settings(max_examples=30, deadline=None)
@given(target=st.sampled_from(TARGETS), op=st.sampled_from(["TROWMAX", "TROWMIN"]),
       data=st.data())
def test_row_max_min_random_regions(target, op, data):
    m = pto.target(target)
    try:
        dt = data.draw(st.sampled_from(ROW_RED[op][target].split()))
        _run_row(op, dt, data.draw(st.integers(1, R)), data.draw(st.integers(1, C)),
                 dn=data.draw(st.booleans()), dyn=data.draw(st.booleans()),
                 seed=data.draw(st.integers(0, 999)))
    finally:
        pto.memory.pop(m)


def test_row_prod_wraps_integers(on):
    on("a5")
    src = Tile(TileType.Vec, "i16", 16, 16, valid=(1, 16))
    src.load_numpy(np.full((16, 16), 3, np.int16))
    dst = Tile(TileType.Vec, "i16", 16, 1, BLayout.ColMajor, valid=(1, 1))
    pto.TROWPROD(dst, src, src)
    assert dst.numpy()[0, 0] == _wrap(3 ** 16, "i16")


def test_row_prod_f16_order_cpu_sequential_npu_tree(on):
    # 2^15 * 2 overflows f16: the CPU simulator's f16 accumulator (TileDst::DType) does so at
    # the second element; the NPU's tree pairs 2.0 with 0.5 first
    row = np.array([[2.0**15, 2.0, 0.5, 1.0] + [1.0] * 12], np.float16)
    for target, want in (("cpu", np.inf), ("a5", 2.0**15)):
        on(target)
        src = Tile(TileType.Vec, "f16", 1, 16)
        src.load_numpy(row)
        dst = Tile(TileType.Vec, "f16", 1, 16, valid=(1, 1))
        pto.TROWPROD(dst, src, src)
        assert float(dst.numpy()[0, 0]) == want


def test_row_reduce_illegal(on):
    on("a2a3")
    src = Tile(TileType.Vec, "i64", 16, 16)
    dst = Tile(TileType.Vec, "i64", 16, 1, BLayout.ColMajor)
    with pytest.raises(pto.UnsupportedType, match=r"trowmax: element type i64 is not supported "
                       r"on a2a3 \(supported: f32, f16, i16, i32\)"):
        pto.TROWMAX(dst, src, src)
    f = Tile(TileType.Vec, "f32", 16, 16)
    with pytest.raises(pto.PtoError, match=r"trowprod: dst must be ND or DN with Cols == 1"):
        pto.TROWPROD(Tile(TileType.Vec, "f32", 16, 16, BLayout.ColMajor), f, f)
    with pytest.raises(pto.PtoError, match=r"trowmin: expects src and dst to have the same "
                                             r"element type"):
        pto.TROWMIN(Tile(TileType.Vec, "f16", 16, 1, BLayout.ColMajor), f, f)
    with pytest.raises(pto.PtoError, match=r"trowmax: src valid rows 16 != dst valid rows 4"):
        pto.TROWMAX(Tile(TileType.Vec, "f32", 16, 1, BLayout.ColMajor, valid=(4, 1)), f, f)


# ---- column reductions ----------------------------------------------------------------------

def _run_col(op, dt, vr, vc, *, dst_dt=None, binary=None, dyn=False, seed=0):
    rng = np.random.default_rng(seed)
    dst_dt = dst_dt or dt
    src = Tile(TileType.Vec, dt, R, C, valid=(Dyn(vr), Dyn(vc)) if dyn else (vr, vc))
    dst = Tile(TileType.Vec, dst_dt, 2, C, valid=(1, vc))
    kind = {"TCOLPROD": "prod", "TCOLSUM": "sum"}.get(op, "any")
    x = _values(rng, dt, (R, C), kind)
    src.load_numpy(x)
    before = np.full(dst.shape, 9, NP[dst_dt])
    dst.load_numpy(before)
    fn = getattr(pto, op)
    if binary is None:
        fn(dst, src)
    else:
        fn(dst, src, Tile(TileType.Vec, dt, R, C), binary)
    ref = before.copy()
    for j in range(vc):
        ref[0, j] = _reduce_py(op, x[:vr, j], dst_dt)
    np.testing.assert_array_equal(dst.numpy(), ref)


@pytest.mark.parametrize("op, target, dt", _cases(COL_RED))
@pytest.mark.parametrize("vr, vc", [(32, 32), (5, 7), (1, 32), (32, 1)])
def test_col_reduce(on, op, target, dt, vr, vc):
    on(target)
    _run_col(op, dt, vr, vc, seed=vr + vc)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("binary", [False, True])
@pytest.mark.parametrize("vr", [1, 2, 7, 32])
def test_col_sum_with_tmp(on, target, binary, vr):
    on(target)
    _run_col("TCOLSUM", "f32", vr, 13, binary=binary, dyn=True)


@pytest.mark.parametrize("src_dt", ["f16", "bf16"])
def test_col_sum_max_cpu_widening_pairs(on, src_dt):
    on("cpu")
    _run_col("TCOLSUM", src_dt, 9, 16, dst_dt="f32")
    _run_col("TCOLMAX", src_dt, 9, 16, dst_dt="f32")


def test_col_sum_f16_cpu_accumulates_in_f16(on):
    on("cpu")
    src = Tile(TileType.Vec, "f16", 5, 16)
    src.load_numpy(np.array([[2048]] + [[1]] * 4, np.float16).repeat(16, 1))
    dst = Tile(TileType.Vec, "f16", 1, 16)
    pto.TCOLSUM(dst, src)
    # the simulator's TileDst::DType (f16) accumulator: 2048 + 1 rounds back to 2048 each time
    # (an f32 accumulator would give 2052)
    assert float(dst.numpy()[0, 0]) == 2048
    on("a5")
    pto.TCOLSUM(dst, src)
    assert float(dst.numpy()[0, 0]) == 2048


def test_col_reduce_illegal(on):
    on("a2a3")
    s8 = Tile(TileType.Vec, "i8", 32, 32)
    with pytest.raises(pto.UnsupportedType, match=r"tcolmax: element type i8 is not supported "
                       r"on a2a3 \(supported: f32, f16, i16, i32\)"):
        pto.TCOLMAX(Tile(TileType.Vec, "i8", 1, 32), s8)
    f = Tile(TileType.Vec, "f32", 16, 16)
    with pytest.raises(pto.PtoError, match=r"tcolsum: src valid cols 16 != dst valid cols 8"):
        pto.TCOLSUM(Tile(TileType.Vec, "f32", 1, 16, valid=(1, 8)), f)
    with pytest.raises(pto.PtoError, match=r"tcolprod: dst must be ND"):
        pto.TCOLPROD(Tile(TileType.Vec, "f32", 16, 16, BLayout.ColMajor), f)
    with pytest.raises(pto.PtoError, match=r"tcolmin: .*f16.*not supported|tcolmin: type comb"):
        pto.TCOLMIN(Tile(TileType.Vec, "f16", 1, 16), f)
    on("cpu")
    with pytest.raises(pto.PtoError, match=r"tcolsum: src valid cols 16 != dst valid cols 8"):
        pto.TCOLSUM(Tile(TileType.Vec, "f32", 1, 8), f)
    on("cpu").permissive = True  # the CPU simulator's missing check: the capacity still holds
    with pytest.raises(pto.PtoError, match=r"tcolsum: dst needs 1x16 elements but the tile "
                       r"holds 1x8"):
        pto.TCOLSUM(Tile(TileType.Vec, "f32", 1, 8), f)


# ---- arg reductions -------------------------------------------------------------------------

def _run_arg(op, dt, idx_dt, vr, vc, *, with_val, seed=0, x=None):
    rng = np.random.default_rng(seed)
    row = op.startswith("TROW")
    src = Tile(TileType.Vec, dt, R, C, valid=(vr, vc))
    if x is None:
        x = _values(rng, dt, (R, C))
    src.load_numpy(x)
    if row:
        idx = Tile(TileType.Vec, idx_dt, R, 1, BLayout.ColMajor, valid=(vr, 1))
        val = Tile(TileType.Vec, dt, R, 32 // np.dtype(NP[dt]).itemsize, valid=(vr, 1))
    else:
        idx = Tile(TileType.Vec, idx_dt, 1, C, valid=(1, vc))
        val = Tile(TileType.Vec, dt, 1, C, valid=(1, vc))
    idx.load_numpy(np.full(idx.shape, 5, NP[idx_dt]))
    val.load_numpy(np.full(val.shape, 3, NP[dt]))
    val_before = val.numpy()
    tmp = Tile(TileType.Vec, dt, R, C)
    fn = getattr(pto, op)
    if with_val:
        fn(val, idx, src, tmp)
    else:
        fn(idx, src, tmp)
    want_max = op.endswith("MAX")
    ref_i, ref_v = idx.numpy().copy(), val_before.copy()
    lines = [x[i, :vc] for i in range(vr)] if row else [x[:vr, j] for j in range(vc)]
    for k, line in enumerate(lines):
        vals = [float(v) for v in line]
        best = max(vals) if want_max else min(vals)
        first = vals.index(best)  # the first matching index
        pos = (k, 0) if row else (0, k)
        ref_i[pos] = first
        ref_v[pos] = line[first]
    np.testing.assert_array_equal(idx.numpy(), ref_i)
    if with_val:
        np.testing.assert_array_equal(val.numpy(), ref_v)
    else:
        np.testing.assert_array_equal(val.numpy(), val_before)


ARG_CASES = ([(op, t, d) for op in ("TROWARGMAX", "TROWARGMIN") for t in TARGETS
              for d in ARG_SRC[t].split()]
             + [(op, t, d) for op in ("TCOLARGMAX", "TCOLARGMIN") for t in TARGETS
                for d in COL_ARG_SRC[t].split()])


@pytest.mark.parametrize("op, target, dt", ARG_CASES)
@pytest.mark.parametrize("vr, vc", [(32, 32), (3, 9)])
def test_arg_reduce(on, op, target, dt, vr, vc):
    on(target)
    for idx_dt in ("i32", "ui32"):
        _run_arg(op, dt, idx_dt, vr, vc, with_val=False, seed=vr)
    with_val_idx = "i32"
    if op.startswith("TCOL") and target != "cpu":
        # value+index form on the NPUs: 16-bit indices for 2-byte sources; no 8-bit sources
        if np.dtype(NP[dt]).itemsize == 1:
            return
        with_val_idx = "i16" if np.dtype(NP[dt]).itemsize == 2 else "i32"
    _run_arg(op, dt, with_val_idx, vr, vc, with_val=True, seed=vr + 1)


@pytest.mark.parametrize("op", ["TROWARGMAX", "TROWARGMIN", "TCOLARGMAX", "TCOLARGMIN"])
def test_arg_reduce_ties_return_the_first_index(on, op):
    on("cpu")
    x = np.zeros((R, C), np.float32)
    x[:, :] = 1.0
    x[2, 3] = x[4, 3] = x[2, 6] = 5.0 if op.endswith("MAX") else -5.0
    _run_arg(op, "f32", "i32", 8, 8, with_val=True, x=x)


def test_arg_reduce_illegal(on):
    on("a2a3")
    src = Tile(TileType.Vec, "i32", 16, 16)
    idx = Tile(TileType.Vec, "i32", 16, 1, BLayout.ColMajor)
    with pytest.raises(pto.UnsupportedType, match=r"trowargmax: type combination src i32 -> "
                       r"dst i32 is not supported on a2a3"):
        pto.TROWARGMAX(idx, src, src)
    on("a5")
    h = Tile(TileType.Vec, "f16", 16, 16)
    with pytest.raises(pto.PtoError, match=r"tcolargmax: value\+index form with src f16 needs "
                       r"a 16-bit index type on a5, got dst i32"):
        pto.TCOLARGMAX(Tile(TileType.Vec, "f16", 1, 16), Tile(TileType.Vec, "i32", 1, 16), h, h)
    with pytest.raises(pto.PtoError, match=r"tcolargmin: dst valid rows must be 1 \(got 2\)"):
        pto.TCOLARGMIN(Tile(TileType.Vec, "i32", 2, 16, valid=(2, 16)), h, h)
    with pytest.raises(pto.PtoError, match=r"trowargmin: dst is ND, its valid cols must be 1"):
        pto.TROWARGMIN(Tile(TileType.Vec, "i32", 16, 8), h, h)
    with pytest.raises(pto.PtoError, match=r"trowargmax: expects dstVal and src to have the same "
                       r"element type \(dstVal f32, src f16\)"):
        pto.TROWARGMAX(Tile(TileType.Vec, "f32", 16, 1, BLayout.ColMajor), idx, h, h)

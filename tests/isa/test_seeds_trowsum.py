"""TROWSUM against the seed page and seeds_check.md section 2 (independent numpy references)."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ptoisa as pto
from ptoisa import BLayout, Dyn, Tile, TileType
from ptoisa.memory import is_poison

# (src, dst) element types, written from the docs (not read from the legality tables):
# A2A3 f16/f32/i32/i16 (same type); A5 adds i64/u64; the CPU simulator's own same-type pairs.
# The simulator also widens (CPU_WIDENING): the seed page's "dst and src must use the same
# element type" rejects those on every target; a permissive cpu machine takes them.
CPU_WIDENING = [("f16", "f32"), ("bf16", "f32"), ("i16", "i32")]
PAIRS = {
    "a2a3": [("f16", "f16"), ("f32", "f32"), ("i32", "i32"), ("i16", "i16")],
    "a5": [("f16", "f16"), ("f32", "f32"), ("i32", "i32"), ("i16", "i16"), ("i64", "i64"),
           ("ui64", "ui64")],
    "cpu": [("f16", "f16"), ("bf16", "bf16"), ("f32", "f32"), ("i16", "i16"), ("i32", "i32")],
}
ALL_PAIRS = sorted({p for v in PAIRS.values() for p in v} | {("i64", "i64"), ("i8", "i8"),
                                                             ("f32", "f16"), ("ui32", "ui32")})
NP = {"f16": np.float16, "bf16": ml_dtypes.bfloat16, "f32": np.float32, "i16": np.int16,
      "i32": np.int32, "i64": np.int64, "ui64": np.uint64, "i8": np.int8, "ui32": np.uint32}


def _src_values(rng, dtype, shape):
    # small integers: exact in every float type and in any summation order
    lo = 0 if dtype.startswith("ui") else -4
    return rng.integers(lo, 5, size=shape).astype(NP[dtype])


def _expected(dst_before, src, vr, vc, dst_dtype):
    """seed page: dst[i, 0] = sum_{j < C} src[i, j] for i < R (R, C = src valid region)."""
    ref = dst_before.copy()
    if vr and vc:
        sums = src[:vr, :vc].astype(np.float64 if dst_dtype.startswith(("f", "bf")) else np.int64)
        ref[:vr, 0] = sums.sum(axis=1).astype(NP[dst_dtype])
    return ref


def _run(rows, cols, vr, vc, s, d, *, dn=False, dyn=False, seed=0):
    rng = np.random.default_rng(seed)
    valid = (Dyn(vr), Dyn(vc)) if dyn else (vr, vc)
    src = Tile(TileType.Vec, s, rows, cols, valid=valid)
    if dn:
        dst = Tile(TileType.Vec, d, rows, 1, BLayout.ColMajor, valid=(Dyn(vr), 1) if dyn else
                   (vr, 1))
    else:
        dcols = 32 // np.dtype(NP[d]).itemsize
        dst = Tile(TileType.Vec, d, rows, dcols, valid=(Dyn(vr), Dyn(1)) if dyn else (vr, 1))
    tmp = Tile(TileType.Vec, s, rows, cols)
    sv = _src_values(rng, s, (rows, cols))
    src.load_numpy(sv)
    before = (np.arange(dst.rows * dst.cols) % 7 + 100).reshape(dst.shape).astype(NP[d])
    dst.load_numpy(before)
    ev = pto.TROWSUM(dst, src, tmp)
    assert isinstance(ev, pto.Event) and ev.pipe is pto.Pipe.V
    np.testing.assert_array_equal(dst.numpy(), _expected(before, sv, vr, vc, d))
    np.testing.assert_array_equal(src.numpy(), sv)  # the source is not modified


@pytest.mark.parametrize("pair", ALL_PAIRS, ids="->".join)
def test_dtype_legality_per_target(machine, pair):
    s, d = pair
    ok = pair in PAIRS[machine.target.name]
    if ok:
        _run(16, 64 // np.dtype(NP[s]).itemsize, 16, 5, s, d)
        return
    tgt = machine.target.name
    if tgt == "cpu" and pair in CPU_WIDENING:
        with pytest.raises(pto.ConstraintError,
                           match=rf"trowsum: expects src and dst to have the same element "
                                 rf"type \(dst "
                                 rf"{d}, src {s}\) \(the CPU simulator does not check this"):
            _run(16, 64 // np.dtype(NP[s]).itemsize, 16, 5, s, d)
        machine.permissive = True
        _run(16, 64 // np.dtype(NP[s]).itemsize, 16, 5, s, d)
        return
    if tgt != "cpu" and s == d:
        listed = {"a2a3": "f32, f16, i16, i32", "a5": "f32, f16, i16, i32, i64, ui64"}[tgt]
        msg = rf"trowsum: element type {s} is not supported on {tgt} \(supported: {listed}\)"
    else:
        msg = rf"trowsum: type combination src {s} -> dst {d} is not supported on {tgt} " \
              r"\(supported: .*f32->f32.*\)"
    with pytest.raises(pto.UnsupportedType, match=msg):
        _run(16, 64 // np.dtype(NP[s]).itemsize, 16, 5, s, d)


@pytest.mark.parametrize("dn", [False, True], ids=["nd_dst", "dn_dst"])
@pytest.mark.parametrize("dyn", [False, True], ids=["static", "dynamic"])
@pytest.mark.parametrize("vr, vc", [(16, 32), (7, 32), (16, 1), (3, 19)])
def test_valid_regions(machine, dn, dyn, vr, vc):
    for s, d in PAIRS[machine.target.name]:
        _run(16, 32, vr, vc, s, d, dn=dn, dyn=dyn)


def test_seed_example_16x16_to_16x1_dn(machine):
    src = Tile(TileType.Vec, "f32", 16, 16)
    dst = Tile(TileType.Vec, "f32", 16, 1, BLayout.ColMajor)
    tmp = Tile(TileType.Vec, "f32", 16, 16)
    x = np.arange(256, dtype=np.float32).reshape(16, 16) / 4
    src.load_numpy(x)
    pto.TROWSUM(dst, src, tmp)
    np.testing.assert_array_equal(dst.numpy()[:, 0], x.sum(1))


@settings(max_examples=30, deadline=None)
@given(target=st.sampled_from(["cpu", "a2a3", "a5"]), rows=st.integers(1, 24),
       col_blocks=st.integers(1, 12), data=st.data())
def test_random_shapes(target, rows, col_blocks, data):
    m = pto.target(target)
    try:
        s, d = data.draw(st.sampled_from(PAIRS[target]))
        cols = col_blocks * 32 // np.dtype(NP[s]).itemsize
        vr = data.draw(st.integers(1, rows))
        vc = data.draw(st.integers(1, cols))
        dn_ok = rows * np.dtype(NP[d]).itemsize % 32 == 0
        _run(rows, cols, vr, vc, s, d, dn=dn_ok and data.draw(st.booleans()),
             dyn=data.draw(st.booleans()),
             seed=data.draw(st.integers(0, 2**16)))
    finally:
        pto.memory.pop(m)


# ---- arithmetic corner cases ---------------------------------------------------------------

def test_integer_overflow_wraps_in_the_destination_width(machine):
    src = Tile(TileType.Vec, "i16", 2, 16)
    dst = Tile(TileType.Vec, "i16", 2, 16, valid=(2, 1))
    src.load_numpy(np.full((2, 16), 20000, np.int16))
    pto.TROWSUM(dst, src, Tile(TileType.Vec, "i16", 2, 16))
    assert dst.numpy()[0, 0] == np.int16(np.int64(320000) - 5 * 65536)


def test_cpu_widening_pairs_accumulate_in_the_wide_type():
    pto.target("cpu", permissive=True)  # widening pairs: the simulator's, not the seed page's
    src = Tile(TileType.Vec, "i16", 2, 16)
    dst = Tile(TileType.Vec, "i32", 2, 8, valid=(2, 1))
    src.load_numpy(np.full((2, 16), 20000, np.int16))
    pto.TROWSUM(dst, src, Tile(TileType.Vec, "i16", 2, 16))
    assert dst.numpy()[0, 0] == 320000
    # f16 -> f16 accumulates in f32 on the CPU: 4096 + 1 + 1 ... stays exact before rounding
    h = Tile(TileType.Vec, "f16", 1, 16)
    hd = Tile(TileType.Vec, "f16", 1, 16, valid=(1, 1))
    h.load_numpy(np.array([[2048] + [1] * 15], np.float16))
    pto.TROWSUM(hd, h, h)
    assert hd.numpy()[0, 0] == np.float16(2063)  # an f16 running sum would stick at 2048
    hf = Tile(TileType.Vec, "f32", 1, 8, valid=(1, 1))
    pto.TROWSUM(hf, h, h)
    assert hf.numpy()[0, 0] == 2063.0


def test_nan_and_inf_propagate(machine):
    src = Tile(TileType.Vec, "f32", 3, 8)
    dst = Tile(TileType.Vec, "f32", 3, 8, valid=(3, 1))
    src.load_numpy(np.array([[1, np.nan, 0, 0, 0, 0, 0, 0], [np.inf, 1, 0, 0, 0, 0, 0, 0],
                             [np.inf, -np.inf, 0, 0, 0, 0, 0, 0]], np.float32))
    pto.TROWSUM(dst, src, src)
    r = dst.numpy()[:, 0]
    assert np.isnan(r[0]) and r[1] == np.inf and np.isnan(r[2])


# ---- documented constraints ---------------------------------------------------------------

def _tiles(**kw):
    src = Tile(kw.get("src_loc", TileType.Vec), "f32", 16, 16, kw.get("src_bl", BLayout.RowMajor),
               kw.get("src_valid"))
    dst = kw.get("dst") or Tile(TileType.Vec, "f32", 16, 8, valid=kw.get("dst_valid", (16, 1)))
    return dst, src, Tile(TileType.Vec, "f32", 16, 16)


def test_roles_must_be_vec(machine):
    dst, src, tmp = _tiles(src_loc=TileType.Mat)
    with pytest.raises(pto.IllegalInstruction, match="trowsum: src must be a Vec tile, got Mat"):
        pto.TROWSUM(dst, src, tmp)
    acc = pto.TileAcc("f32", 16, 16)
    with pytest.raises(pto.IllegalInstruction, match="dst must be a Vec tile, got Acc"):
        pto.TROWSUM(acc, src, tmp)


def test_src_must_be_nd(machine):
    dst, src, tmp = _tiles(src_bl=BLayout.ColMajor)
    with pytest.raises(pto.IllegalInstruction, match=r"src must be ND .*got DN"):
        pto.TROWSUM(dst, src, tmp)


def test_dst_must_be_nd_or_single_column_dn(machine):
    _, src, tmp = _tiles()
    dn2 = Tile(TileType.Vec, "f32", 16, 2, BLayout.ColMajor)
    with pytest.raises(pto.IllegalInstruction,
                       match=r"dst must be ND or DN with Cols == 1, got DN 16x2"):
        pto.TROWSUM(dn2, src, tmp)
    nz = Tile(TileType.Vec, "f32", 16, 8, BLayout.ColMajor, None, pto.SLayout.RowMajor)
    with pytest.raises(pto.IllegalInstruction, match="got NZ"):
        pto.TROWSUM(nz, src, tmp)


def test_same_element_type_on_npu():
    for t in ("a2a3", "a5"):
        pto.target(t)
        src = Tile(TileType.Vec, "f16", 16, 16)
        dst = Tile(TileType.Vec, "f32", 16, 8)
        with pytest.raises(pto.UnsupportedType, match="src f16 -> dst f32 is not supported"):
            pto.TROWSUM(dst, src, src)


@pytest.mark.parametrize("src_valid", [(0, 16), (16, 0), (0, 0)])
def test_empty_src_is_an_error_on_every_target(machine, src_valid):
    """A documented run-time check: every target makes it (cpu included); a permissive
    machine skips it as the CPU simulator does (which then writes nothing)."""
    src = Tile(TileType.Vec, "f32", 16, 16, valid=(Dyn(src_valid[0]), Dyn(src_valid[1])))
    dst = Tile(TileType.Vec, "f32", 16, 8, valid=(Dyn(src_valid[0]), 1))
    before = np.full((16, 8), 3.0, np.float32)
    dst.load_numpy(before)
    with pytest.raises(pto.RuntimeCheckError,
                       match=rf"trowsum: src valid region {src_valid[0]}x{src_valid[1]} is empty"):
        pto.TROWSUM(dst, src, src)
    machine.permissive = True
    pto.TROWSUM(dst, src, src)
    np.testing.assert_array_equal(dst.numpy(), before)


def test_valid_row_mismatch_is_an_error_on_every_target(machine):
    src = Tile(TileType.Vec, "f32", 16, 16, valid=(12, 16))
    dst = Tile(TileType.Vec, "f32", 16, 8, valid=(16, 1))
    x = np.ones((16, 16), np.float32)
    src.load_numpy(x)
    with pytest.raises(pto.RuntimeCheckError,
                       match="trowsum: src valid rows 12 != dst valid rows 16"):
        pto.TROWSUM(dst, src, src)
    machine.permissive = True
    pto.TROWSUM(dst, src, src)  # writes src valid rows (12), ignores dst's valid region
    np.testing.assert_array_equal(dst.numpy()[:12, 0], [16.0] * 12)
    assert is_poison(dst.numpy()[12:, 0]).all()  # rows 12-15 untouched


def test_cpu_requires_equal_static_rows_npu_does_not(machine):
    src = Tile(TileType.Vec, "f32", 16, 16)
    dst = Tile(TileType.Vec, "f32", 32, 8, valid=(16, 1))
    src.load_numpy(np.ones((16, 16)))
    if machine.target.name == "cpu":
        with pytest.raises(pto.IllegalInstruction,
                           match=r"src Rows 16 != dst Rows 32 \(the cpu target requires"):
            pto.TROWSUM(dst, src, src)
        return
    pto.TROWSUM(dst, src, src)
    assert (dst.numpy()[:16, 0] == 16).all()


def test_tmp_is_mandatory(machine):
    dst, src, _ = _tiles()
    with pytest.raises(pto.PtoError, match=r"trowsum: takes operands \(dst, src, tmp\); got 2"):
        pto.TROWSUM(dst, src)

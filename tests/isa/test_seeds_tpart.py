"""TPARTMAX (seed page) and its siblings TPARTADD/TPARTMUL/TPARTMIN (seeds_check.md 5)."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ptoisa as pto
from ptoisa import BLayout, Dyn, Tile, TileType

# element types from the docs / ops.tsv (not from the legality tables)
A5_FULL = ["i8", "ui8", "i16", "ui16", "i32", "ui32", "i64", "ui64", "f16", "bf16", "f32"]
DTYPES = {
    "a2a3": {op: ["i32", "i16", "f16", "f32"] for op in ("TPARTADD", "TPARTMUL", "TPARTMAX",
                                                        "TPARTMIN")},
    "a5": {"TPARTADD": A5_FULL, "TPARTMAX": A5_FULL, "TPARTMIN": A5_FULL,
           "TPARTMUL": ["ui8", "i8", "ui16", "i16", "ui32", "i32", "f16", "f32", "bf16"]},
    "cpu": {op: ["i32", "i16", "f16", "bf16", "f32", "i8", "ui8"]
            for op in ("TPARTADD", "TPARTMUL", "TPARTMAX", "TPARTMIN")},
}
ALL_DTYPES = A5_FULL
NP = {"i8": np.int8, "ui8": np.uint8, "i16": np.int16, "ui16": np.uint16, "i32": np.int32,
      "ui32": np.uint32, "i64": np.int64, "ui64": np.uint64, "f16": np.float16,
      "bf16": ml_dtypes.bfloat16, "f32": np.float32}
FN = {"TPARTADD": np.add, "TPARTMUL": np.multiply, "TPARTMAX": np.maximum,
      "TPARTMIN": np.minimum}
OPS = sorted(FN)


def _cols(dtype):
    return 64 // np.dtype(NP[dtype]).itemsize


def _reference(op, d_before, a, b, dv, av, bv, cpu_zero=True, neither=0.0):
    """Seed page: both valid -> op; one valid -> copy it; neither -> 0 (CPU simulator), or
    ``neither`` (a5's TPARTMAX / TPARTMIN pad)."""
    out = d_before.copy()
    vr, vc = dv
    for i in range(vr):
        for j in range(vc):
            in0 = i < av[0] and j < av[1]
            in1 = i < bv[0] and j < bv[1]
            if in0 and in1:
                with np.errstate(over="ignore"):
                    out[i, j] = FN[op](a[i, j], b[i, j])
            elif in0:
                out[i, j] = a[i, j]
            elif in1:
                out[i, j] = b[i, j]
            elif cpu_zero:
                out[i, j] = neither
    return out


def _run(op, dtype, rows, cols, dv, av, bv, *, dyn=False, seed=0, neither=0.0):
    rng = np.random.default_rng(seed)

    def mk(v):
        return Tile(TileType.Vec, dtype, rows, cols, valid=(Dyn(v[0]), Dyn(v[1])) if dyn else v)

    dst, s0, s1 = mk(dv), mk(av), mk(bv)
    lo = 0 if dtype.startswith("ui") else -9
    a = rng.integers(lo, 10, (rows, cols)).astype(NP[dtype])
    b = rng.integers(lo, 10, (rows, cols)).astype(NP[dtype])
    before = np.full((rows, cols), 77, NP[dtype])
    s0.load_numpy(a)
    s1.load_numpy(b)
    dst.load_numpy(before)
    getattr(pto, op)(dst, s0, s1)
    np.testing.assert_array_equal(dst.numpy(), _reference(op, before, a, b, dv, av, bv,
                                                          neither=neither))


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_dtype_legality(machine, op, dtype):
    allowed = DTYPES[machine.target.name][op]
    if dtype in allowed:
        _run(op, dtype, 8, _cols(dtype), (8, _cols(dtype)), (8, _cols(dtype)), (5, 3))
        return
    order = ["f32", "f16", "bf16", "i8", "ui8", "i16", "ui16", "i32", "ui32", "i64", "ui64"]
    listed = ", ".join(sorted(allowed, key=order.index))
    with pytest.raises(pto.UnsupportedType,
                       match=rf"{op.lower()}: element type {dtype} is not supported on "
                             rf"{machine.target.name} \(supported: {listed}\)"):
        _run(op, dtype, 8, _cols(dtype), (8, 8), (8, 8), (8, 8))


# supported patterns: one source equals dst, the other does not exceed it
PATTERNS = [
    ((8, 16), (8, 16), (8, 16)),   # all equal
    ((8, 16), (8, 16), (3, 16)),   # src1 short in rows
    ((8, 16), (8, 5), (8, 16)),    # src0 short in cols
    ((8, 16), (2, 7), (8, 16)),    # src0 short in both
    ((8, 16), (8, 16), (0, 0)),    # src1 empty: copy src0
    ((5, 9), (5, 9), (5, 2)),      # partial dst valid region
    ((0, 16), (8, 16), (8, 16)),   # empty dst: nothing happens
    ((8, 0), (3, 3), (8, 0)),
]


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("dv, av, bv", PATTERNS)
@pytest.mark.parametrize("dyn", [False, True], ids=["static", "dynamic"])
def test_supported_patterns(machine, op, dv, av, bv, dyn):
    for dtype in ("f32", "i16"):
        _run(op, dtype, 8, 16, dv, av, bv, dyn=dyn)


A5_PAD = {"TPARTMAX": -np.inf, "TPARTMIN": np.inf}


def _a5_pad(op, dtype):
    """pto-isa's a5 Padding Min / Max: -inf / +inf for floats, the integer type's extremes
    (0 / all ones unsigned); 64-bit integers pad 0 (PadValueMap)."""
    npdt = np.dtype(NP[dtype])
    if npdt.kind == "f" or dtype == "bf16":
        return A5_PAD[op]
    if npdt.itemsize == 8:
        return 0
    info = np.iinfo(npdt)
    return info.min if op == "TPARTMAX" else info.max

UNSUPPORTED = [
    ((8, 16), (4, 16), (8, 5)),    # both sources smaller than dst
    ((8, 16), (2, 2), (3, 3)),
    ((4, 8), (8, 16), (4, 8)),     # a source exceeding dst
]


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("dv, av, bv", UNSUPPORTED)
def test_unsupported_patterns_error_permissive_writes_zero(machine, op, dv, av, bv):
    """A documented constraint: every target rejects these patterns (cpu included); a
    permissive machine is total as the CPU simulator (0 where neither source is valid).
    A5's TPARTMAX / TPARTMIN take sources that both lie within dst (pto-isa's a5 code),
    their pad (-inf / +inf) where neither is valid."""
    within = all(s[0] <= dv[0] and s[1] <= dv[1] for s in (av, bv))
    if machine.target.name == "a5" and op in A5_PAD and within:
        _run(op, "f32", 8, 16, dv, av, bv, neither=A5_PAD[op])
        return
    with pytest.raises(pto.RuntimeCheckError,
                       match=rf"{op.lower()}: unsupported partial-validity pattern: dst valid "
                             rf"{dv[0]}x{dv[1]}, src0 {av[0]}x{av[1]}, src1 {bv[0]}x{bv[1]}"):
        _run(op, "f32", 8, 16, dv, av, bv)
    machine.permissive = True
    _run(op, "f32", 8, 16, dv, av, bv)


@settings(max_examples=30, deadline=None)
@given(target=st.sampled_from(["cpu", "a2a3", "a5"]), op=st.sampled_from(OPS),
       rows=st.integers(1, 12), data=st.data())
def test_random_valid_regions(target, op, rows, data):
    permissive = data.draw(st.booleans())
    m = pto.target(target, permissive=permissive)
    try:
        dtype = data.draw(st.sampled_from(DTYPES[target][op]))
        cols = _cols(dtype) * data.draw(st.integers(1, 2))
        dv = (data.draw(st.integers(0, rows)), data.draw(st.integers(0, cols)))
        other = (data.draw(st.integers(0, dv[0])), data.draw(st.integers(0, dv[1])))
        if permissive:  # any pattern at all (the CPU simulator)
            av = (data.draw(st.integers(0, rows)), data.draw(st.integers(0, cols)))
            bv = (data.draw(st.integers(0, rows)), data.draw(st.integers(0, cols)))
        else:
            av, bv = (dv, other) if data.draw(st.booleans()) else (other, dv)
        pad = _a5_pad(op, dtype) if target == "a5" and op in A5_PAD else 0
        _run(op, dtype, rows, cols, dv, av, bv, dyn=True, seed=data.draw(st.integers(0, 999)),
             neither=pad)
    finally:
        pto.memory.pop(m)


def test_integer_overflow_wraps(machine):
    a = Tile(TileType.Vec, "i16", 1, 16)
    d = Tile(TileType.Vec, "i16", 1, 16)
    a.load_numpy(np.full((1, 16), 30000, np.int16))
    pto.TPARTADD(d, a, a)
    assert (d.numpy() == np.int16(60000 - 65536)).all()


def test_cpu_nan_handling_follows_std_max_and_min():
    """std::max(a, b) = a < b ? b : a: NaN in src0 is kept, NaN in src1 dropped."""
    pto.target("cpu")
    nan = np.float32(np.nan)
    a = Tile(TileType.Vec, "f32", 1, 8)
    b = Tile(TileType.Vec, "f32", 1, 8)
    d = Tile(TileType.Vec, "f32", 1, 8)
    a.load_numpy(np.array([[nan, 1, 0, 0, 0, 0, 0, 0]], np.float32))
    b.load_numpy(np.array([[1, nan, 0, 0, 0, 0, 0, 0]], np.float32))
    pto.TPARTMAX(d, a, b)
    r = d.numpy()[0]
    assert np.isnan(r[0]) and r[1] == 1
    pto.TPARTMIN(d, a, b)
    r = d.numpy()[0]
    assert np.isnan(r[0]) and r[1] == 1


def test_outside_dst_valid_region_untouched(machine):
    _run("TPARTMAX", "f32", 8, 16, (4, 6), (4, 6), (4, 6))


def test_same_element_type_required(machine):
    d = Tile(TileType.Vec, "f32", 8, 16)
    s = Tile(TileType.Vec, "f16", 8, 16)
    with pytest.raises(pto.IllegalInstruction,
                       match=r"tpartmax: expects .* to have the same element type \(dst f32, "
                             r"src0 f16, src1 f32\)"):
        pto.TPARTMAX(d, s, d)


def test_roles_must_be_vec(machine):
    d = Tile(TileType.Vec, "f32", 16, 16)
    m = Tile(TileType.Mat, "f32", 16, 16)
    with pytest.raises(pto.IllegalInstruction, match="tpartmax: src1 must be a Vec tile, got Mat"):
        pto.TPARTMAX(d, d, m)


def test_a2a3_requires_row_major(machine):
    d = Tile(TileType.Vec, "f32", 16, 16, BLayout.ColMajor)
    if machine.target.name == "a2a3":
        with pytest.raises(pto.IllegalInstruction,
                           match="tpartmax: dst must be row-major on a2a3 \\(got DN\\)"):
            pto.TPARTMAX(d, d, d)
        return
    x = np.arange(256, dtype=np.float32).reshape(16, 16)
    s = Tile(TileType.Vec, "f32", 16, 16, BLayout.ColMajor, valid=(16, 4))
    d.load_numpy(np.zeros((16, 16)))
    s.load_numpy(x)
    pto.TPARTMAX(d, d, s)
    np.testing.assert_array_equal(d.numpy()[:, :4], x[:, :4])

"""TQUANT, TDEQUANT parameter forms and the communication additions (peers, Signal2D,
TBROADCAST/TREDUCE over a ParallelGroup): independent numpy references, rejected uses."""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np
import pytest

import ptoisa as pto
import ptoisa.isa.comm as C
from ptoisa.dtypes import fp4_decode
from ptoisa.errors import ExecutionError, IllegalInstruction, PtoError, UnsupportedType
from ptoisa.memory import pop
from ptoisa.memory import target as make_target
from ptoisa.tensor import GlobalTensor
from ptoisa.tile import Tile

RNG = np.random.default_rng(11)


@pytest.fixture(params=["cpu", "a2a3", "a5"])
def tgt(request: pytest.FixtureRequest):  # type: ignore[no-untyped-def]
    m = make_target(request.param)
    yield request.param
    pop(m)


@pytest.fixture(params=["cpu", "a5"])
def mx_tgt(request: pytest.FixtureRequest):  # type: ignore[no-untyped-def]
    m = make_target(request.param)
    yield request.param
    pop(m)


def vec(dtype, rows, cols, data=None, valid=None) -> Tile:  # type: ignore[no-untyped-def]
    t = Tile("Vec", dtype, rows, cols, valid=valid)
    if data is not None:
        t.load_numpy(np.asarray(data))
    return t


def col(dtype, data) -> Tile:  # type: ignore[no-untyped-def]
    """A per-row parameter column (Rows x 1, column-major as the C++ examples declare it)."""
    a = np.asarray(data).reshape(-1, 1)
    t = Tile("Vec", dtype, 16, 1, blayout="ColMajor", valid=(a.shape[0], 1))
    t.write(a.astype(t.dtype.np))
    return t


# ---- TQUANT INT8 ---------------------------------------------------------------------------------

@pytest.mark.parametrize("asym", [False, True])
def test_tquant_int8(tgt, asym):  # type: ignore[no-untyped-def]
    x = (RNG.standard_normal((4, 32)) * 40).astype(np.float32)
    sc = np.array([[0.5], [1.25], [2.0], [3.0]], np.float32)
    off = np.array([[120], [3], [128], [250]], np.float32)
    dst = vec("ui8" if asym else "i8", 4, 32)
    if asym:
        pto.TQUANT(dst, vec("f32", 4, 32, x), col("f32", sc), col("f32", off),
                 quant_type="QuantType::INT8_ASYM")
    else:
        pto.TQUANT(dst, vec("f32", 4, 32, x), col("f32", sc), quant_type="INT8_SYM")
    ref = [[x[r, c] * sc[r, 0] + (off[r, 0] if asym else 0) for c in range(32)]
           for r in range(4)]
    lo, hi = (0, 255) if asym else (-128, 127)
    want = np.array([[min(max(round(float(np.float32(v))), lo), hi) for v in row]
                     for row in ref])
    np.testing.assert_array_equal(dst.numpy().astype(np.int64), want)


def test_tquant_int8_rejects_f16_src(tgt):  # type: ignore[no-untyped-def]
    with pytest.raises((IllegalInstruction, UnsupportedType), match="f16|not supported"):
        pto.TQUANT(vec("i8", 4, 32), vec("f16", 4, 32), col("f16", np.ones(4)),
                 quant_type="INT8_SYM")


# ---- TQUANT MX -----------------------------------------------------------------------------------

def _ocp_exp(maxabs: float, emax: int) -> int:
    if maxabs == 0 or not math.isfinite(maxabs):
        return 0 if maxabs == 0 else 254
    e = math.frexp(maxabs)[1] - 1  # floor(log2)
    return max(0, min(254, e + 127 - emax)) if e >= -126 else 0


@pytest.mark.parametrize("src_dtype", ["f32", "f16"])
def test_tquant_mxfp8_ocp_nd(mx_tgt, src_dtype):  # type: ignore[no-untyped-def]
    x = (RNG.standard_normal((2, 64)) * np.array([1e-3, 50.0])[:, None]).astype(np.float32)
    x = x.astype(np.float16).astype(np.float32)
    dst, e8 = vec("i8", 2, 64), vec("ui8", 2, 32)
    mx, scl = vec("f32", 1, 8), vec("f32", 1, 8)
    pto.TQUANT(dst, vec(src_dtype, 2, 64, x), e8, mx, scl, quant_type="MXFP8")
    for r in range(2):
        for g in range(2):
            blk = x[r, 32 * g: 32 * g + 32]
            m = float(np.abs(blk).max())
            e = _ocp_exp(m, 8)
            assert e8.numpy()[r, g] == e
            assert mx.numpy().reshape(-1)[2 * r + g] == np.float32(m)
            s = 2.0 ** (127 - e)
            assert scl.numpy().reshape(-1)[2 * r + g] == np.float32(s)
            want = np.clip(blk * s, -448, 448).astype(ml_dtypes.float8_e4m3fn)
            got = dst.numpy()[r, 32 * g: 32 * g + 32].view(ml_dtypes.float8_e4m3fn)
            np.testing.assert_array_equal(got.astype(np.float32), want.astype(np.float32))


def test_tquant_mxfp4_dn(mx_tgt):  # type: ignore[no-untyped-def]
    x = (RNG.standard_normal((64, 32)) * 3).astype(np.float16)
    dst, e8 = vec("f4E2M1x2", 64, 32), vec("ui8", 2, 32)
    pto.TQUANT(dst, vec("f16", 64, 32, x), e8, vec("f32", 1, 64), vec("f32", 1, 64),
             grp_axis=0, mx_alg="MxQuantAlg::OcpMxFp4E2M1")
    grid = np.array([0, 0.5, 1, 1.5, 2, 3, 4, 6])
    for gr in range(2):
        for c in range(32):
            col = x[32 * gr: 32 * gr + 32, c].astype(np.float64)
            e = _ocp_exp(float(np.abs(col).max()), 2)
            assert e8.numpy()[gr, c] == e
            y = np.clip(col * 2.0 ** (127 - e), -6, 6)
            mags = np.array([grid[np.argmin(np.abs(grid - abs(v)))] for v in y])
            got = np.abs(fp4_decode(dst.numpy()[32 * gr: 32 * gr + 32, c], dst.dtype))
            # ties are rare in random data; where they occur both neighbours are at equal distance
            np.testing.assert_allclose(np.abs(got - np.abs(y)), np.abs(mags - np.abs(y)))


def test_tquant_mxfp4_rejects_f32_src(mx_tgt):  # type: ignore[no-untyped-def]
    with pytest.raises((IllegalInstruction, UnsupportedType), match="f16 or bf16|not supported"):
        pto.TQUANT(vec("f4E2M1x2", 2, 64), vec("f32", 2, 64), vec("ui8", 2, 32),
                 vec("f32", 1, 8), vec("f32", 1, 8), quant_type="MXFP4_E2M1")


def test_tquant_mx_needs_whole_groups(mx_tgt):  # type: ignore[no-untyped-def]
    with pytest.raises(PtoError, match="32 columns"):
        pto.TQUANT(vec("i8", 2, 64, valid=(2, 48)), vec("f32", 2, 64, valid=(2, 48)),
                 vec("ui8", 2, 32), vec("f32", 1, 8), vec("f32", 1, 8), quant_type="MXFP8")


# ---- TDEQUANT parameter tiles --------------------------------------------------------------------

@pytest.mark.parametrize("name", ["cpu", "a5"])
def test_tdequant_full_width_params(name):  # type: ignore[no-untyped-def]
    m = make_target(name)
    try:
        src = RNG.integers(-100, 100, (2, 16)).astype(np.int16)
        sc = RNG.random((2, 16)).astype(np.float32)
        off = RNG.integers(-5, 5, (2, 16)).astype(np.float32)
        dst = vec("f32", 2, 16)
        pto.TDEQUANT(dst, vec("i16", 2, 16, src), vec("f32", 2, 16, sc), vec("f32", 2, 16, off))
        if name == "cpu":  # the simulator reads full-width parameter tiles element-wise
            want = (src.astype(np.float32) - off) * sc
        else:
            want = (src.astype(np.float32) - off[:, :1]) * sc[:, :1]
        np.testing.assert_array_equal(dst.numpy(), want.astype(np.float32))
    finally:
        pop(m)


# ---- TWAIT with peers, Signal2D ------------------------------------------------------------------

def test_twait_runs_peers_until_condition(tgt):  # type: ignore[no-untyped-def]
    m = make_target(tgt)
    try:
        sig = np.zeros(1, np.int32)
        steps = iter([5, 7, 9])

        def notifier() -> bool:
            v = next(steps, None)
            if v is None:
                return False
            C.TNOTIFY(GlobalTensor(sig), v, "Set")
            return True

        C.add_peer(m, notifier)
        C.TWAIT(GlobalTensor(sig), 7, "GE")
        assert sig[0] == 7  # the wait returned as soon as the condition held
        with pytest.raises(ExecutionError, match="deadlock"):
            C.TWAIT(GlobalTensor(sig), 100, "EQ")
    finally:
        pop(m)


def test_signal2d(tgt):  # type: ignore[no-untyped-def]
    words = np.zeros(4 * 16, np.int32)
    s = C.Signal2D(words, 4, 8, row_stride=16)
    C.TNOTIFY(s, 1, "Set")
    want = np.zeros((4, 16), np.int32)
    want[:, :8] = 1
    np.testing.assert_array_equal(words.reshape(4, 16), want)
    assert C.TTEST(s, 1, "EQ") is True
    C.TWAIT(s, 1, "EQ")
    with pytest.raises(PtoError, match="outside"):
        C.Signal2D(np.zeros(10, np.int32), 4, 8)
    with pytest.raises(PtoError, match="GlobalTensor or Signal2D"):
        C.TWAIT(np.zeros(4, np.int32), 1, "EQ")


# ---- TBROADCAST / TREDUCE ------------------------------------------------------------------------

def test_tbroadcast(tgt):  # type: ignore[no-untyped-def]
    src = RNG.standard_normal((16, 32)).astype(np.float16)
    ranks = [np.zeros((16, 32), np.float16) for _ in range(3)]
    group = C.ParallelGroup([GlobalTensor(r) for r in ranks], root_idx=1)
    C.TBROADCAST(group, GlobalTensor(src), vec("f16", 16, 32))
    for r in ranks:
        np.testing.assert_array_equal(r, src)


@pytest.mark.parametrize("op", ["Sum", "Max", "Min"])
def test_treduce(tgt, op):  # type: ignore[no-untyped-def]
    ins = [RNG.integers(-2**31, 2**31 - 1, (8, 16)).astype(np.int32) for _ in range(3)]
    dst = np.zeros((8, 16), np.int32)
    group = C.ParallelGroup([GlobalTensor(a) for a in ins])
    C.TREDUCE(group, GlobalTensor(dst), vec("i32", 8, 16), vec("i32", 8, 16), op)
    wide = np.stack(ins).astype(np.int64)
    want = {"Sum": wide.sum(0), "Max": wide.max(0), "Min": wide.min(0)}[op]
    want = ((want + 2**31) % 2**32 - 2**31).astype(np.int32)  # Sum wraps
    np.testing.assert_array_equal(dst, want)


def test_collectives_reject_bad_groups(tgt):  # type: ignore[no-untyped-def]
    group = C.ParallelGroup([GlobalTensor(np.zeros((4, 8), np.float32))])
    with pytest.raises(PtoError, match="float32"):
        C.TBROADCAST(group, GlobalTensor(np.zeros((4, 8), np.int32)), vec("i32", 4, 8))
    with pytest.raises(PtoError, match="ParallelGroup"):
        C.TREDUCE([np.zeros(4)], GlobalTensor(np.zeros((4, 8), np.float32)),
                  vec("f32", 4, 8), vec("f32", 4, 8), "Sum")
    with pytest.raises(PtoError, match="root index"):
        C.ParallelGroup([GlobalTensor(np.zeros(4, np.int32))], root_idx=2)

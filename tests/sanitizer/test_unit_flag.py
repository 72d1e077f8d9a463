"""The L0C unit flag (ptoisa.concurrent.unitflag): ``TMATMUL(..., Phase="Final")`` then
``TSTORE(..., Phase="Final")`` of the same Acc tile are ordered without an M -> FIX flag, and
the next unit-flag matmul into that tile after the store without a FIX -> M flag (pto-isa's
flash-attention kernel with UF_ENABLE: ``pto_macro_matmul(..., AccMode::InitFinalSum)`` and
``TSTORE<STPhase::Final>``). The expectations are the hazards the sanitizer reports with and
without the phases, and the cycle model's step order, written from that rule."""

from __future__ import annotations

import numpy as np
import pytest

import ptoisa as pto
from ptoisa import GlobalTensor, Tile
from ptoisa.sanitizer import Sanitizer

P = pto.Pipe
N = 16


def _kernel(unit_flag: bool, iters: int = 2):
    mad_phase = "Final" if unit_flag else "Unspecified"
    st_phase = "Final" if unit_flag else "Unspecified"

    def kernel(a, b, out):
        n = out.size
        am, bm = Tile("Mat", "f16", N, N, "ColMajor", None, "RowMajor"), \
            Tile("Mat", "f16", N, N, "ColMajor", None, "RowMajor")
        left, right = pto.TileLeft("f16", N, N), pto.TileRight("f16", N, N)
        acc = pto.TileAcc("f32", N, N)
        pto.TLOAD(am, GlobalTensor(a))
        pto.TLOAD(bm, GlobalTensor(b))
        pto.SET_FLAG(P.MTE2, P.MTE1, 0)
        pto.WAIT_FLAG(P.MTE2, P.MTE1, 0)
        pto.TMOV(left, am)
        pto.TMOV(right, bm)
        pto.SET_FLAG(P.MTE1, P.M, 0)
        pto.WAIT_FLAG(P.MTE1, P.M, 0)
        for i in range(iters):
            pto.TMATMUL(acc, left, right, Phase=mad_phase)
            pto.TSTORE(GlobalTensor(out, (1, 1, 1, N, N), (n, n, n, N, 1), offset=i * N * N),
                       acc, Phase=st_phase)
    return kernel


def _inputs():
    rng = np.random.default_rng(5)
    a = rng.standard_normal((N, N)).astype(np.float16)
    b = rng.standard_normal((N, N)).astype(np.float16)
    return a, b, np.zeros((2, N, N), np.float32)


@pytest.mark.parametrize("target", ["a2a3", "a5"])
def test_unit_flag_orders_matmul_and_store(target):
    a, b, out = _inputs()
    san = Sanitizer(sync="manual")
    pto.launch(_kernel(True), a, b, out, sanitize=san, target=target)
    assert [f for f in san.report.findings if f.kind == "race"] == []
    want = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(out[0], want, rtol=1e-3, atol=1e-3)
    np.testing.assert_allclose(out[1], want, rtol=1e-3, atol=1e-3)


def test_without_unit_flag_the_same_kernel_races():
    # no phases and no M <-> FIX flags: the store reads the Acc tile the matmul writes (RAW),
    # and the second matmul overwrites it while the first store may still read it (WAR)
    a, b, out = _inputs()
    san = Sanitizer(sync="manual")
    pto.launch(_kernel(False), a, b, out, sanitize=san, target="a2a3")
    hazards = {f.hazard for f in san.report.findings if f.kind == "race"}
    assert {"RAW", "WAR"} <= hazards


def test_cycle_model_waits_on_the_unit_flag():
    a, b, out = _inputs()
    rep = pto.launch(_kernel(True), a, b, out, cycles=True, target="a2a3")
    mads = [s for s in rep.steps if s.op == "TMATMUL"]
    stores = [s for s in rep.steps if s.op == "TSTORE"]
    assert len(mads) == len(stores) == 2
    for mad, st in zip(mads, stores, strict=True):
        assert st.start >= mad.end  # the store waits for the matmul's set
    assert mads[1].start >= stores[0].end  # the next matmul for the store's release


def test_accumulating_matmul_sets_the_unit_flag_too():
    # flash_atten's PV: TMATMUL Partial (first K panel), TMATMUL_ACC Final (last), then the
    # Final store: the accumulate's set orders the store (TMATMUL_ACC names its Acc operand
    # cOutMatrix, not cMatrix)
    a, b, out = _inputs()

    def kernel(a, b, out):
        n = out.size
        am, bm = Tile("Mat", "f16", N, N, "ColMajor", None, "RowMajor"), \
            Tile("Mat", "f16", N, N, "ColMajor", None, "RowMajor")
        left, right = pto.TileLeft("f16", N, N), pto.TileRight("f16", N, N)
        acc = pto.TileAcc("f32", N, N)
        pto.TLOAD(am, GlobalTensor(a))
        pto.TLOAD(bm, GlobalTensor(b))
        pto.SET_FLAG(P.MTE2, P.MTE1, 0)
        pto.WAIT_FLAG(P.MTE2, P.MTE1, 0)
        pto.TMOV(left, am)
        pto.TMOV(right, bm)
        pto.SET_FLAG(P.MTE1, P.M, 0)
        pto.WAIT_FLAG(P.MTE1, P.M, 0)
        pto.TMATMUL(acc, left, right, Phase="Partial")
        pto.TMATMUL_ACC(acc, acc, left, right, Phase="Final")
        pto.TSTORE(GlobalTensor(out, (1, 1, 1, N, N), (n, n, n, N, 1)), acc, Phase="Final")

    san = Sanitizer(sync="manual")
    pto.launch(kernel, a, b, out, sanitize=san, target="a2a3")
    assert [f for f in san.report.findings if f.kind == "race"] == []
    want = 2 * (a.astype(np.float64) @ b.astype(np.float64))
    np.testing.assert_allclose(out[0], want, rtol=1e-3, atol=1e-3)
    rep = pto.launch(kernel, a, b, out, cycles=True, target="a2a3")
    acc_mad = next(s for s in rep.steps if s.op == "TMATMUL_ACC")
    store = next(s for s in rep.steps if s.op == "TSTORE")
    assert store.start >= acc_mad.end

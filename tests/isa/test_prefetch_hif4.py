"""TPREFETCH_ASYNC (a cache hint: no data effect, a completed event) and TMATMUL_MX_HIF4
(declared, rejected with the reason it is not modelled)."""

from __future__ import annotations

import numpy as np
import pytest

import ptoisa as pto
from ptoisa import GlobalTensor, Tile, TileType


def test_tprefetch_async_changes_nothing_and_completes(machine):
    a = np.arange(64, dtype=np.float16)
    evt = pto.TPREFETCH_ASYNC(GlobalTensor(a, (1, 1, 1, 1, 64)), None)
    assert evt.Wait(None) and evt.Test(None)
    np.testing.assert_array_equal(a, np.arange(64, dtype=np.float16))


def test_tprefetch_async_needs_a_flat_view_on_the_npus():
    m = pto.target("a2a3")
    try:
        with pytest.raises(pto.IllegalInstruction, match=r"flat contiguous 1-D GlobalTensor"):
            pto.TPREFETCH_ASYNC(GlobalTensor(np.zeros((8, 8), np.float32)), None)
    finally:
        pto.memory.pop(m)


def test_tmatmul_mx_hif4_is_declared_not_modelled(machine):
    t = [Tile(TileType.Vec, "f32", 16, 16) for _ in range(5)]
    with pytest.raises(pto.IllegalInstruction,
                       match=r"tmatmul_mx_hif4: not supported on target"):
        pto.TMATMUL_MX_HIF4(*t)

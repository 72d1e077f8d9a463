"""examples/ring_allreduce.py and examples/notify_wait.py in-process, against numpy references
written here (under mpiexec they are cases of cases.py, compared bit for bit with these runs)."""

from __future__ import annotations

import importlib.util
import sys

import numpy as np
import pytest
from mpirun import ROOT

import ptoisa as pto


def _example(name: str):
    spec = importlib.util.spec_from_file_location(f"example_{name}", ROOT / "examples" /
                                                  f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


ring = _example("ring_allreduce")
pc = _example("notify_wait")


@pytest.mark.parametrize("n", [1, 2, 3, 4])
def test_ring_allreduce_in_process(n):
    args = [ring.inputs(n, r) for r in range(n)]
    pto.launch(ring.ring_allreduce, *([args[r][k] for r in range(n)] for k in range(3)),
               ranks=n)
    want = np.sum([ring.inputs(n, r)[0].astype(np.float64) for r in range(n)], axis=0)
    for r in range(n):
        np.testing.assert_allclose(args[r][0], want, rtol=0, atol=2e-6 * n)
        assert np.array_equal(args[r][0], args[0][0])  # every rank holds the same bits


@pytest.mark.parametrize("n", [2, 3])
def test_producer_consumer_in_process(n):
    args = [pc.inputs(r) for r in range(n)]
    pto.launch(pc.producer_consumer, *([args[r][k] for r in range(n)] for k in range(4)),
               ranks=n)
    x = pc.inputs(0)[0]
    np.testing.assert_array_equal(args[1][2], x * np.float32(2) + np.float32(1))
    assert list(args[1][3]) == [pc.K, 0] and list(args[0][3]) == [0, pc.K]

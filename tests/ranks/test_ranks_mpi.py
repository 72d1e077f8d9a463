"""Multi-rank kernels as real concurrent processes (``mpiexec -n 2`` and ``-n 4``, oversubscribed
on a small machine): every case of cases.py bit for bit against the in-process backend and the
expectation, and the faults ending every rank with a message naming the rank and instruction.
Skipped (with the reason) only where mpi4py / mpiexec are not installed."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from mpirun import finish, run, start

HERE = Path(__file__).resolve().parent


@pytest.mark.parametrize("n", [2, 4])
def test_every_comm_case_under_mpi_matches_in_process(n, tmp_path):
    out = tmp_path / "results.json"
    p = run(n, str(HERE / "mpi_main.py"), str(out), env={"PTOISA_RANK_TIMEOUT": "20"})
    assert p.returncode == 0, p.stderr
    results = json.loads(out.read_text())
    from cases import CASES

    assert set(results) == {c.name for c in CASES}
    assert {k: v for k, v in results.items() if v != "ok"} == {}


# (a bad peer rank fails in remote() before any MPI call, as in-process: test_ranks_local.py)
FAULTS = {
    "raise": r"ptoisa: rank 1 failed at .*mpi_fault.py:\d+, after tput \(.*mpi_fault.py:\d+\): "
             r"ValueError: boom",
    "exit": r"ptoisa: rank 1 exited \(code 3\) at .*mpi_fault.py:\d+, after tnotify",
    "deadlock": r"deadlock: rank 0 waits at twait \(.*mpi_fault.py:\d+\) and every other rank "
                r"has finished: signal words of window 'flag' on rank 0 are \[0\], waiting for "
                r"EQ 1",
    "timeout": r"rank 0 waited 1 s at twait \(.*mpi_fault.py:\d+\): signal words of window "
               r"'flag' on rank 0 are \[0\], waiting for EQ 1",
    "bad_window": r"rank 0's view of window 'x' reaches bytes \[0, 32\), beyond rank 1's copy "
                  r"\(16 bytes\)",
}


@pytest.fixture(scope="module")
def fault_runs():
    """Every faulty job, started together (each ends in about a second)."""
    jobs = {m: start(2, str(HERE / "mpi_fault.py"), m, env={"PTOISA_RANK_TIMEOUT": "1"})
            for m in FAULTS}
    return {m: finish(p, 40) for m, p in jobs.items()}


@pytest.mark.parametrize("mode", sorted(FAULTS))
def test_a_fault_ends_every_rank_with_a_message(mode, fault_runs):
    p = fault_runs[mode]
    assert p.returncode != 0
    assert re.search(FAULTS[mode], p.stderr), p.stderr
    assert "done" not in p.stdout  # no rank went on past the launch

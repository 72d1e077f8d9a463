"""The communication cases of the conformance pack across two ranks: rank 0 runs the recorded
program, the operands the ISA pages place on another NPU live on rank 1. Same verdicts as the
single-process runner, in-process and under mpiexec -n 2."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from mpirun import run

from ptoisa import conformance
from ptoisa.concurrent import conformance_ranks


def _pack(shared_dir: Path) -> Path:
    root = shared_dir / "conformance"
    if not root.is_dir():
        pytest.skip(f"conformance pack not found at {root} (set PTOISA_SHARED)")
    return root


def _single_process(root: Path) -> dict[str, str]:
    s = conformance.run_pack(root, only=conformance_ranks.FOLDERS, out=io.StringIO())
    return {v.case_id: v.status for v in s.verdicts}


def _verdicts(text: str) -> dict[str, str]:
    return {w[1].rstrip(":"): w[0] for w in (ln.split() for ln in text.splitlines())
            if len(w) > 1 and w[0] in ("PASS", "QUIRK", "SKIP", "FAIL", "DIFF")}


def test_comm_cases_across_two_in_process_ranks(shared_dir, capsys):
    root = _pack(shared_dir)
    assert conformance_ranks.main([str(root), "--ranks", "2"]) == 0
    got = _verdicts(capsys.readouterr().out)
    assert got == _single_process(root)
    assert "FAIL" not in got.values() and list(got.values()).count("PASS") >= 15


def test_comm_cases_under_mpi(shared_dir):
    root = _pack(shared_dir)
    p = run(2, "-m", "ptoisa.concurrent.conformance_ranks", str(root), timeout=90)
    assert p.returncode == 0, p.stderr
    assert _verdicts(p.stdout) == _single_process(root)

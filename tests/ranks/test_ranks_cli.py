"""``ptoisa run FILE.pto --ranks``: per-rank arguments ({rank}, {next}, peer:R:ARG), in-process
without MPI and as an MPI job started by ``--ranks N``."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import numpy as np
from mpirun import ROOT, mpiexec_or_skip

from ptoisa import cli, ranks_cli

PTO = str(ROOT / "examples" / "ring_put.pto")


def _inputs(tmp_path, n):
    for r in range(n):
        np.save(tmp_path / f"x{r}.npy", np.arange(64, dtype=np.float32) + 100 * r)


def _args(tmp_path, n, peer="{next}"):
    return ["run", PTO, "--target", "cpu", "--ranks", str(n),
            "--arg", f"x={tmp_path}/x{{rank}}.npy", "--arg", "y=zeros:64:f32",
            "--arg", f"dst=peer:{peer}:y", "--out", f"{tmp_path}/out{{rank}}"]


def _check(tmp_path, n, shift):
    for r in range(n):
        y = np.load(tmp_path / f"out{r}" / "y.npy")
        src = (r - shift) % n  # rank src put its x into rank r's y
        np.testing.assert_array_equal(y, np.arange(64, dtype=np.float32) + 100 * src)


def test_ranks_in_process_without_mpi(tmp_path, monkeypatch):
    monkeypatch.setattr(ranks_cli, "_have_mpi", lambda: False)
    monkeypatch.delenv("PMI_SIZE", raising=False)
    _inputs(tmp_path, 3)
    assert cli.main(_args(tmp_path, 3, "{prev}")) == 0
    _check(tmp_path, 3, -1)


def test_bad_peer_argument(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(ranks_cli, "_have_mpi", lambda: False)
    _inputs(tmp_path, 2)
    args = _args(tmp_path, 2)
    args[args.index("dst=peer:{next}:y")] = "dst=peer:{next}:nope"
    assert cli.main(args) == 1
    assert "peer:RANK:ARG names a rank and another argument" in capsys.readouterr().err


def test_ranks_n_starts_an_mpi_job(tmp_path):
    mpiexec_or_skip()
    _inputs(tmp_path, 2)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    env.pop("PMI_SIZE", None)
    p = subprocess.Popen([sys.executable, "-m", "ptoisa", *_args(tmp_path, 2)], env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         start_new_session=True)
    try:
        out, err = p.communicate(timeout=60)
    finally:
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    assert p.returncode == 0, err
    _check(tmp_path, 2, 1)

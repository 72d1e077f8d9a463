"""Run a script under ``mpiexec`` from a test: bounded in time, and every process of the job
ended afterwards (the job runs in its own session; a timeout kills the whole group)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def mpiexec_or_skip() -> str:
    pytest.importorskip("mpi4py", reason="mpi4py is not installed: pip install -e '.[mpi]'")
    from ptoisa.concurrent.ranks_mpi import mpiexec

    exe = mpiexec()
    if exe is None:
        pytest.skip("no mpiexec (the mpich wheel of ptoisa[mpi] provides one)")
    return exe


def start(n: int, *argv: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    """Start ``mpiexec -n N`` on a script (``.py``: with this interpreter) in its own session."""
    exe = mpiexec_or_skip()
    e = dict(os.environ)
    e["PYTHONPATH"] = os.pathsep.join([str(ROOT), e.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    e.update(env or {})
    cmd = [exe, "-n", str(n), *argv]
    if argv and (argv[0].endswith(".py") or argv[0] == "-m"):
        cmd = [exe, "-n", str(n), sys.executable, *argv]
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=e, cwd=ROOT, start_new_session=True)


def finish(p: subprocess.Popen[str], timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """Wait for a job started by :func:`start`; then end whatever is left of its session."""
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, err = p.communicate()
        pytest.fail(f"{' '.join(p.args)} did not end within {timeout} s:\n{out}\n{err}")
    finally:
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    return subprocess.CompletedProcess(p.args, p.returncode, out, err)


def run(n: int, *argv: str, timeout: float = 60, env: dict[str, str] | None = None
        ) -> subprocess.CompletedProcess[str]:
    return finish(start(n, *argv, env=env), timeout)

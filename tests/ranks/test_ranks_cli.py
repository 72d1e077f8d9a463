"""``ptoisa run FILE.pto --ranks``: per-rank arguments ({rank}, {next}, peer:R:ARG), in-process
without MPI and as an MPI job started by ``--ranks N``."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import numpy as np
import pytest
from mpirun import ROOT, mpiexec_or_skip

from ptoisa import cli
from ptoisa.cli import ranks as ranks_cli

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
    """``--ranks 2`` outside a launcher starts ``mpiexec -n 2`` of ``ptoisa run ... --ranks``."""
    mpiexec_or_skip()
    _inputs(tmp_path, 2)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    env.pop("PMI_SIZE", None)
    p = subprocess.Popen([sys.executable, "-m", "ptoisa", *_nw_args(tmp_path, 2)], env=env,
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
    for r in range(2):  # examples/notify_put.pto: z = the left neighbour's x + 1
        z = np.load(tmp_path / f"out{r}" / "z.npy")
        np.testing.assert_array_equal(z, np.arange(64, dtype=np.float32) + 100 * (1 - r) + 1)


def _nw_args(tmp_path, n):
    return ["run", str(ROOT / "examples" / "notify_put.pto"), "--target", "cpu", "--ranks",
            str(n), "--arg", f"x={tmp_path}/x{{rank}}.npy", "--arg", "y=zeros:64:f32",
            "--arg", "z=zeros:64:f32", "--arg", "flag=zeros:1:i32",
            "--arg", "dst=peer:{next}:y", "--arg", "peer_flag=peer:{next}:flag",
            "--out", f"{tmp_path}/out{{rank}}"]


@pytest.mark.parametrize("n", [2, 3])
def test_pto_notify_wait_in_process(tmp_path, monkeypatch, n):
    """TPUT, TNOTIFY and TWAIT of a .pto program: each rank's z is its left neighbour's x + 1,
    so the wait ordered the put before the load."""
    monkeypatch.setattr(ranks_cli, "_have_mpi", lambda: False)
    _inputs(tmp_path, n)
    assert cli.main(_nw_args(tmp_path, n)) == 0
    for r in range(n):
        z = np.load(tmp_path / f"out{r}" / "z.npy")
        np.testing.assert_array_equal(z, np.arange(64, dtype=np.float32) + 100 * ((r - 1) % n)
                                      + 1)
        assert np.load(tmp_path / f"out{r}" / "flag.npy")[0] == 1


def test_pto_waiting_for_a_flag_no_rank_sets_is_a_deadlock(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(ranks_cli, "_have_mpi", lambda: False)
    _inputs(tmp_path, 2)
    args = _nw_args(tmp_path, 2)
    args[args.index("peer_flag=peer:{next}:flag")] = "peer_flag=zeros:1:i32"  # not the peer's
    assert cli.main(args) == 1
    err = capsys.readouterr().err
    assert "deadlock" in err and "at twait (" in err and "notify_put.pto:" in err


@pytest.mark.parametrize(("n", "msg"), [("-2", "at least 1 rank"), ("0", "at least 1 rank"),
                                        ("1000", "more than 64"), ("x", "not a number")])
def test_a_rank_count_out_of_range_is_refused(n, msg, capsys):
    # -2 exited 0 having run nothing, 0 ran one rank, 1000 started 1000 processes
    with pytest.raises(SystemExit) as e:
        cli.main(["run", PTO, "--ranks", n])
    assert e.value.code == 2
    assert msg in capsys.readouterr().err


def test_the_rank_cap_can_be_raised(monkeypatch):
    monkeypatch.setenv("PTOISA_MAX_RANKS", "2000")
    assert cli._rank_count("1000") == 1000


LONG = """\
module {
  func.func @spin(%x: memref<64xf32, #pto.address_space<gm>>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %big = arith.constant 10000000000 : index
    scf.for %i = %c0 to %big step %c1 {
    }
    return
  }
}
"""


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_sigterm_to_ptoisa_stops_the_real_mpiexec_and_its_ranks(tmp_path):
    """The real mpiexec (the mpich wheel's): ``ptoisa run --ranks 2`` of a kernel that spins,
    SIGTERM to ptoisa once both ranks run: mpiexec, its proxy and every rank are gone."""
    import time

    mpiexec_or_skip()
    f = tmp_path / "spin.pto"
    f.write_text(LONG)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    env.pop("PMI_SIZE", None)
    p = subprocess.Popen([sys.executable, "-m", "ptoisa", "run", str(f), "--target", "cpu",
                          "--ranks", "2", "--arg", "x=zeros:64:f32"], env=env,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    below: set[int] = set()
    try:
        t0 = time.monotonic()
        while time.monotonic() - t0 < 120:  # both ranks started (python processes below it)
            below = ranks_cli.descendants(p.pid)
            ranks = [q for q in below if "ptoisa" in _cmdline(q) and q != p.pid
                     and "mpiexec" not in _cmdline(q) and "hydra" not in _cmdline(q)]
            if len(ranks) >= 2:
                break
            time.sleep(0.2)
        else:
            pytest.fail(f"the ranks did not start: {[_cmdline(q) for q in below]}")
        time.sleep(1.0)  # (inside the spin)
        below = ranks_cli.descendants(p.pid)
        p.send_signal(signal.SIGTERM)
        assert p.wait(60) == 128 + signal.SIGTERM
        t0 = time.monotonic()
        while time.monotonic() - t0 < 30 and any(_alive(q) for q in below):
            time.sleep(0.1)
        assert not [q for q in below if _alive(q)], \
            [_cmdline(q) for q in below if _alive(q)]
    finally:
        for q in [p.pid, *below]:
            try:
                os.kill(q, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass


def _cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""

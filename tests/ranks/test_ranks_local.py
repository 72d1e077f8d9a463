"""Multi-rank kernels on the in-process backend (ranks as threads): every communication
instruction against its independent expectation, and the faults."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np
import pytest

import ptoisa as pto
from ptoisa.concurrent import comm
from ptoisa.tensor import GlobalTensor
from ptoisa.tile import Tile

sys.path.insert(0, str(Path(__file__).resolve().parent))

from cases import CASES, mismatch, run_local  # noqa: E402


@pytest.mark.parametrize("n", [1, 2, 4])
@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_case_in_process(case, n):
    got = run_local(case, n)
    assert mismatch(got, case.expect(n, case.inputs(n))) is None


def _flag_kernel(mode: str, x: np.ndarray, flag: np.ndarray) -> None:
    r, n = comm.get_rank(), comm.get_rank_num()
    g = GlobalTensor(x, (1, 1, 1, 1, x.size))
    st = Tile("Vec", np.float32, 1, 8)
    if mode == "raise" and r == 1:
        comm.TPUT(comm.remote(g, 0), g, st)
        raise ValueError("boom")
    if mode == "exit" and r == 1:
        sys.exit(3)
    if mode in ("raise", "exit") and r == 0:
        comm.TWAIT(GlobalTensor(flag), 1, "EQ")  # would wait for ever: rank 1 failed
    if mode == "deadlock":
        comm.TWAIT(GlobalTensor(flag), 1, "EQ")
    if mode == "bad_peer" and r == 0:
        comm.TPUT(comm.remote(g, n), g, st)
    if mode == "bad_window" and r == 0:
        comm.TPUT(comm.remote(g, 1), g, st)


def _launch(mode: str, n: int = 2, sizes: tuple[int, ...] | None = None, **kw) -> None:
    sizes = sizes or (8,) * n
    pto.launch(_flag_kernel, mode, [np.zeros(s, np.float32) for s in sizes],
               [np.zeros(1, np.int32) for _ in range(n)], ranks=n, **kw)


def test_a_raising_rank_ends_every_rank_naming_rank_and_instruction():
    t = time.monotonic()
    with pytest.raises(comm.RankError, match=r"rank 1 failed at .*test_ranks_local.py:\d+, "
                                             r"after tput \(.*test_ranks_local.py:\d+\): "
                                             r"ValueError: boom"):
        _launch("raise", 3)
    assert time.monotonic() - t < 5  # rank 0's endless wait was ended, not timed out


def test_an_exiting_rank_is_reported():
    with pytest.raises(comm.RankError, match="rank 1 exited \\(code 3\\) at .*test_ranks_loc"):
        _launch("exit")


def test_every_rank_waiting_is_a_deadlock_naming_each_wait():
    with pytest.raises(comm.RankDeadlock, match=r"rank 0 at twait .*window 'flag' on rank 0 "
                                                r"are \[0\], waiting for EQ 1.*rank 1 at twait"):
        _launch("deadlock")


def test_a_wait_times_out():
    def k(flag, other):
        if comm.get_rank() == 0:
            comm.TWAIT(GlobalTensor(flag), 1, "EQ")
        else:  # still running, so not a deadlock: the timeout ends the wait
            while comm.TTEST(GlobalTensor(other), 1, "EQ") is False:
                time.sleep(0.01)
                if comm.active().world.failure is not None:
                    return
    with pytest.raises(comm.RankTimeout, match="rank 0 waited 0.3 s at twait"):
        pto.launch(k, [np.zeros(1, np.int32)] * 1 + [np.zeros(1, np.int32)],
                   [np.zeros(1, np.int32), np.zeros(1, np.int32)], ranks=2, timeout=0.3)


def test_bad_peer_rank_names_both_ranks():
    with pytest.raises(comm.RankError, match="rank 0 failed .*rank 0 addresses rank 2, outside "
                                             "the 2 ranks"):
        _launch("bad_peer")


def test_window_out_of_range_names_both_ranks():
    with pytest.raises(comm.RankError, match=r"rank 0's view of window 'x' reaches bytes "
                                             r"\[0, 32\), beyond rank 1's copy \(16 bytes\)"):
        _launch("bad_window", sizes=(8, 4))


def test_remote_view_offsets_past_the_peer_window_name_both_ranks():
    def k(x):
        g = GlobalTensor(x, (1, 1, 1, 1, 4), offset=4)
        if comm.get_rank() == 0:
            comm.TPUT(comm.remote(g, 1), GlobalTensor(x, (1, 1, 1, 1, 4)),
                      Tile("Vec", np.float32, 1, 8))
    with pytest.raises(comm.RankError, match=r"reaches bytes \[16, 32\), beyond rank 1's "
                                             r"copy \(24 bytes\)"):
        pto.launch(k, [np.zeros(8, np.float32), np.zeros(6, np.float32)], ranks=2)


def test_launch_argument_errors():
    with pytest.raises(pto.PtoError, match="list of 2 arrays"):
        pto.launch(lambda x: None, np.zeros(4), ranks=2)
    ro = np.zeros(4)
    ro.flags.writeable = False
    with pytest.raises(pto.PtoError, match="rank 1's window 'x' is a read-only array"):
        pto.launch(lambda x: None, [np.zeros(4), ro], ranks=2)
    a = np.zeros(4)
    with pytest.raises(pto.PtoError, match="ranks 0 and 1 pass the same memory as window 'x'"):
        pto.launch(lambda x: None, [a, a], ranks=2)
    with pytest.raises(pto.PtoError, match="ranks must be positive"):
        pto.launch(lambda x: None, [np.zeros(4)], ranks=0)
    with pytest.raises(pto.PtoError, match="not inside a multi-rank launch"):
        comm.remote(GlobalTensor(np.zeros(4, np.float32)), 0)
    assert (comm.get_rank(), comm.get_rank_num()) == (0, 1)


def test_remote_accesses_are_observable():
    """Every access through the backend is a RemoteAccess record on the rank that makes it
    (what a sanitizer extended to ranks subscribes to)."""
    seen = []

    def k(x, flag):
        comm.active().observers.append(seen.append)
        if comm.get_rank() == 0:
            comm.TPUT(comm.remote(GlobalTensor(x, (1, 1, 1, 1, 8)), 1),
                      GlobalTensor(x, (1, 1, 1, 1, 8)), Tile("Vec", np.float32, 1, 8))
            comm.TNOTIFY(comm.remote(GlobalTensor(flag), 1), 1, "Set")
        else:
            comm.TWAIT(GlobalTensor(flag), 1, "EQ")

    pto.launch(k, [np.ones(8, np.float32), np.zeros(8, np.float32)],
               [np.zeros(1, np.int32)] * 1 + [np.zeros(1, np.int32)], ranks=2)
    kinds = [(a.kind, a.origin, a.target, a.window.name, a.op) for a in seen]
    assert ("get", 0, 0, "x", "tput") in kinds          # the local source, read
    assert ("put", 0, 1, "x", "tput") in kinds          # the remote destination, written
    assert ("notify", 0, 1, "flag", "tnotify") in kinds
    assert ("read", 1, 1, "flag", "twait") in kinds
    put = next(a for a in seen if a.kind == "put")
    assert put.ranges == [(0, 32)] and put.loc[0].endswith("test_ranks_local.py")


def test_single_process_semantics_unchanged_outside_a_launch():
    x = np.arange(8, dtype=np.float32)
    y = np.zeros(8, np.float32)
    comm.TPUT(GlobalTensor(y), GlobalTensor(x), Tile("Vec", np.float32, 1, 8))
    assert np.array_equal(y, x)
    assert comm.TPUT_ASYNC(GlobalTensor(y), GlobalTensor(x), "session").Wait()


def test_gm_location_is_the_same_bytes_on_every_rank():
    """A rank's local view and another rank's remote view of the same bytes have the same
    location (rank, window, byte range): what a sanitizer extended to ranks compares."""
    from ptoisa.concurrent.ranks import gm_location

    got = {}

    def k(a, b):
        r = comm.get_rank()
        g = GlobalTensor(b, (1, 1, 1, 2, 4), (8, 8, 8, 8, 1), offset=2)  # rows 2 apart
        got[r] = (gm_location(g), gm_location(comm.remote(g, 1 - r)),
                  gm_location(comm.Signal2D(b, 1, 2, offset=3)))

    pto.launch(k, [np.zeros(4, np.int32)] * 1 + [np.zeros(4, np.int32)],
               [np.zeros(16, np.int32), np.zeros(16, np.int32)], ranks=2)
    assert got[0][0] == got[1][1] == (0, 1, 8, 56)   # elements 2 .. 13 of rank 0's window b
    assert got[1][0] == got[0][1] == (1, 1, 8, 56)
    assert got[0][2] == (0, 1, 12, 20)
    assert gm_location(GlobalTensor(np.zeros(4, np.float32))) is None


def test_access_spans_of_remote_views_are_keyed_by_rank_and_window():
    """The shared access model (ptoisa.concurrent.access) sees a TPUT's remote destination as bytes
    of
    the target rank's window copy, the same key the target's own views have."""
    from ptoisa.concurrent.access import accesses

    spans = {}

    def k(x, y):
        r = comm.get_rank()
        m = pto.current()
        m.observers.append(lambda rec: spans.setdefault((r, rec.ins.name), accesses(rec)))
        g, h = GlobalTensor(x, (1, 1, 1, 1, 8)), GlobalTensor(y, (1, 1, 1, 1, 8))
        if r == 0:
            comm.TPUT(comm.remote(h, 1), g, Tile("Vec", np.float32, 1, 8))
        else:
            pto.TLOAD(Tile("Vec", np.float32, 1, 8), h)

    pto.launch(k, [np.ones(8, np.float32), np.ones(8, np.float32)],
               [np.zeros(8, np.float32), np.zeros(8, np.float32)], ranks=2)
    reads, writes = spans[(0, "TPUT")]
    put_dst = next(s for s in writes if s.space == "GM")
    load_src = next(s for s in spans[(1, "TLOAD")][0] if s.space == "GM")
    assert put_dst.key == load_src.key == ("rank", 1, 1) and put_dst.overlaps(load_src)
    assert any(s.key == ("rank", 0, 0) for s in reads)  # the local source, window x of rank 0


def _stuck_kernel(mode: str, x: np.ndarray) -> None:
    """Rank 1 blocks in plain Python (an Event nobody sets); rank 0 finishes, or waits for a
    signal rank 1 never sends."""
    import threading

    if comm.get_rank() == 1:
        threading.Event().wait(30)  # (bounded: the abandoned thread ends by itself)
    elif mode == "waits":
        comm.TWAIT(GlobalTensor(x, (1, 1, 1, 1, 1)), 1, comm.WaitCmp.EQ)


@pytest.mark.parametrize("mode, msg", [
    ("finishes", r"rank 1 is stuck in its Python code at .*test_ranks_local.py:\d+: no "
                 r"instruction for 0.5 s \(none run yet\) and every other rank has finished"),
    ("waits", r"rank 0 waited 0.5 s at twait .*; rank 1 is stuck in its Python code at "
              r".*test_ranks_local.py:\d+: .* and rank 0 failed"),
])
def test_rank_stuck_in_python_ends_the_launch_at_the_timeout(mode, msg):
    t0 = time.monotonic()
    with pytest.raises(comm.RankTimeout, match=msg):
        pto.launch(lambda x: _stuck_kernel(mode, x), [np.zeros(1, np.int32) for _ in range(2)],
                   ranks=2, timeout=0.5)
    assert time.monotonic() - t0 < 10  # the timeout, not the rank's 30 s

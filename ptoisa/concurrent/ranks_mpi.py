"""The MPI backend of multi-rank launches (mpi4py; install ``ptoisa[mpi]``).

Every rank is a process of an MPI job. Each array argument of the launch becomes an MPI RMA
window over the rank's own array (``MPI.Win.Create``; all windows are opened with
``Lock_all`` for passive-target access for the whole launch):

* TGET / TPUT move bytes with ``Get`` / ``Put`` (one per contiguous run of the view) and
  ``Flush``; TPUT's AtomicAdd is ``Accumulate(SUM)`` in the element type (for element types
  MPI has no type for, f16/bf16/fp8, a get-add-put under a per-rank lock word);
* TNOTIFY is ``Accumulate`` on the i32 signal words (``REPLACE`` for Set, ``SUM`` for
  AtomicAdd), TWAIT / TTEST read them with ``Get_accumulate(NO_OP)`` (atomic reads), TWAIT
  polling until the condition holds or the launch's timeout passes;
* the async forms issue the transfer and complete at the next flush (the event's
  Wait/Test, or the end of the launch);
* the collectives (TBROADCAST, TREDUCE, comm TGATHER/TSCATTER) are the root's gets and puts,
  as on the NPU: only the root calls them, so MPI's own collectives (which every rank calls)
  do not match their semantics.

A rank that fails prints ``ptoisa: rank R failed at INSTR (FILE:LINE): ...`` on stderr and
calls ``MPI_Abort``, which ends every rank of the job.
"""

from __future__ import annotations

import os
import shutil
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import PtoError
from ..targets import TargetLike
from .ranks import (
    Binder,
    RankDeadlock,
    Ranks,
    RankTimeout,
    Window,
    _runs,
    check_symmetric,
    check_window_array,
    failure_error,
    register_mpi_launcher,
    run_rank,
)


def _mpi() -> Any:
    try:
        from mpi4py import MPI
    except ImportError as e:  # pragma: no cover - depends on the installation
        raise PtoError("multi-rank launches over MPI need mpi4py: pip install 'ptoisa[mpi]' "
                       f"({e})") from None
    return MPI


def _comm(ranks: Any) -> Any:
    MPI = _mpi()
    if isinstance(ranks, str) and ranks == "mpi":
        return MPI.COMM_WORLD
    if isinstance(ranks, MPI.Comm):
        return ranks
    raise PtoError(f"ranks must be a number of ranks, 'mpi' or an mpi4py communicator, got "
                   f"{ranks!r}")


class MpiRanks(Ranks):
    """This process as one rank of an MPI job."""

    def __init__(self, comm: Any, timeout: float | None = None) -> None:
        super().__init__(comm.Get_rank(), comm.Get_size(), timeout)
        self.MPI = _mpi()
        self.comm = comm
        self.wins: list[Any] = []
        self.dirty: set[tuple[int, int]] = set()  # (window, rank) with unflushed puts
        self.in_flight: list[np.ndarray] = []
        # one lock word per rank, for read-modify-write adds MPI has no operation for
        self._lockbuf = np.zeros(1, np.int32)
        self.lockwin = self.MPI.Win.Create(self._lockbuf, disp_unit=4, comm=comm)
        self.lockwin.Lock_all()
        # how many other ranks have finished their kernel (each adds 1 here when it does)
        self._donebuf = np.zeros(1, np.int32)
        self.donewin = self.MPI.Win.Create(self._donebuf, disp_unit=4, comm=comm)
        self.donewin.Lock_all()

    def open(self, arrays: list[np.ndarray], names: list[str]) -> None:
        MPI = self.MPI
        counts = self.comm.allgather(len(arrays))
        check_symmetric(counts, names)
        sizes = self.comm.allgather([a.nbytes for a in arrays])
        for k, a in enumerate(arrays):
            check_window_array(a, names[k], self.rank)
            win = MPI.Win.Create(a.reshape(-1).view(np.uint8) if a.nbytes else None,
                                 disp_unit=1, comm=self.comm)
            win.Lock_all()
            self.wins.append(win)
            self.windows.append(Window(k, names[k], a, tuple(s[k] for s in sizes)))

    def close(self) -> None:
        for w in self.wins:
            w.Unlock_all()
            w.Free()
        for w in (self.lockwin, self.donewin):
            w.Unlock_all()
            w.Free()
        self.wins = []

    def mark_done(self) -> None:
        """Tell every other rank that this one has finished its kernel."""
        MPI, one = self.MPI, np.ones(1, np.int32)
        for r in range(self.size):
            if r != self.rank:
                self.donewin.Accumulate([one, MPI.INT32_T], r, target=(0, 1, MPI.INT32_T),
                                        op=MPI.SUM)
        self.donewin.Flush_all()

    def others_done(self) -> bool:
        MPI, got = self.MPI, np.zeros(1, np.int32)
        self.donewin.Get_accumulate([np.zeros(1, np.int32), MPI.INT32_T], [got, MPI.INT32_T],
                                    self.rank, target=(0, 1, MPI.INT32_T), op=MPI.NO_OP)
        self.donewin.Flush(self.rank)
        return int(got[0]) == self.size - 1

    def proxy(self, win: Window, rank: int, base: int, dtype: np.dtype) -> np.ndarray:
        if rank == self.rank:
            raw = win.array.reshape(-1).view(np.uint8)
            n = (raw.size - base) // dtype.itemsize
            return raw[base: base + n * dtype.itemsize].view(dtype)
        # zeros (untouched pages): only the communication instructions reach the bytes
        return np.zeros((win.sizes[rank] - base) // dtype.itemsize, dtype)

    # ---- memory operations -------------------------------------------------------------
    def _get(self, win: Window, rank: int, base: int, idx: np.ndarray,
             dtype: np.dtype) -> np.ndarray:
        w = self.wins[win.index]
        out = np.empty(idx.size, dtype)
        self._move(w.Get, rank, base, idx, out.view(np.uint8), dtype.itemsize)
        w.Flush(rank)
        return out

    #: above this many contiguous runs a view moves as one transfer of an indexed datatype
    MANY_RUNS = 8

    def _move(self, op: Any, rank: int, base: int, idx: np.ndarray, raw: np.ndarray,
              isz: int) -> None:
        """Put or Get (``op``) the bytes ``raw`` (the elements in order) at element indices
        ``idx`` of the target copy from byte ``base``: one call per contiguous run, or one
        call with an hindexed target datatype when the view has many runs (strided rows)."""
        MPI = self.MPI
        runs = _runs(idx)
        if len(runs) <= self.MANY_RUNS:
            for first, n, pos in runs:
                op([raw[pos * isz:(pos + n) * isz], MPI.BYTE], rank,
                   target=(base + first * isz, n * isz, MPI.BYTE))
            return
        dt = MPI.BYTE.Create_hindexed([n * isz for _, n, _ in runs],
                                      [base + first * isz for first, _, _ in runs]).Commit()
        try:
            op([raw, MPI.BYTE], rank, target=(0, 1, dt))
        finally:
            dt.Free()  # the transfer in flight keeps what it needs

    def _put(self, win: Window, rank: int, base: int, idx: np.ndarray, vals: np.ndarray,
             add: bool, sync: bool) -> None:
        MPI, w = self.MPI, self.wins[win.index]
        vals = np.ascontiguousarray(vals)
        isz = vals.dtype.itemsize
        if add:
            mt = _mpi_type(MPI, vals.dtype)
            if mt is None:
                self._locked_add(win, rank, base, idx, vals)
                return
            for first, n, pos in _runs(idx):
                w.Accumulate([vals[pos:pos + n], mt], rank,
                             target=(base + first * isz, n, mt), op=MPI.SUM)
        else:
            self._move(w.Put, rank, base, idx, vals.view(np.uint8), isz)
        if sync:
            w.Flush(rank)
        else:
            self.dirty.add((win.index, rank))
            self.in_flight.append(vals)  # the origin buffer lives until the flush

    def _locked_add(self, win: Window, rank: int, base: int, idx: np.ndarray,
                    vals: np.ndarray) -> None:
        MPI = self.MPI
        one, zero, got = np.ones(1, np.int32), np.zeros(1, np.int32), np.zeros(1, np.int32)
        since = time.monotonic()
        while True:
            self.lockwin.Compare_and_swap(one, zero, got, rank, 0)
            self.lockwin.Flush(rank)
            if got[0] == 0:
                break
            self.timed_out(lambda: f"the add lock of rank {rank}", since)
            time.sleep(0.0005)
        try:
            cur = self._get(win, rank, base, idx, vals.dtype)
            with np.errstate(all="ignore"):
                new = (cur + vals).astype(vals.dtype)
            self._put(win, rank, base, idx, new, False, True)
        finally:
            self.lockwin.Accumulate([zero, MPI.INT32_T], rank, target=(0, 1, MPI.INT32_T),
                                    op=MPI.REPLACE)
            self.lockwin.Flush(rank)

    def _notify(self, win: Window, rank: int, base: int, idx: np.ndarray, value: int,
                set_: bool) -> None:
        MPI, w = self.MPI, self.wins[win.index]
        word = np.array([int(value) & 0xFFFFFFFF], np.uint32).view(np.int32)[0]
        v = np.full(idx.size, word, np.int32)
        for first, n, pos in _runs(idx):
            w.Accumulate([v[pos:pos + n], MPI.INT32_T], rank,
                         target=(base + first * 4, n, MPI.INT32_T),
                         op=MPI.REPLACE if set_ else MPI.SUM)
        w.Flush(rank)

    def _read_signal(self, win: Window, rank: int, base: int, idx: np.ndarray) -> np.ndarray:
        MPI, w = self.MPI, self.wins[win.index]
        out = np.empty(idx.size, np.int32)
        dummy = np.zeros(max(idx.size, 1), np.int32)
        for first, n, pos in _runs(idx):
            w.Get_accumulate([dummy[:n], MPI.INT32_T], [out[pos:pos + n], MPI.INT32_T], rank,
                             target=(base + first * 4, n, MPI.INT32_T), op=MPI.NO_OP)
        w.Flush(rank)
        return out

    def flush(self) -> None:
        for k, r in sorted(self.dirty):
            self.wins[k].Flush(r)
        self.dirty.clear()
        self.in_flight.clear()

    def wait_until(self, ready: Any, why: Any) -> None:
        """Poll until ``ready()``; a wait that is still not satisfied once every other rank has
        finished its kernel can never be (a deadlock, reported at once); else the timeout."""
        since = time.monotonic()
        while not ready():
            if self.size > 1 and self.others_done() and not ready():
                raise RankDeadlock(f"deadlock: rank {self.rank} waits {self.where()} and every "
                                   f"other rank has finished: {why()}")
            self._idle(why, since)

    def _idle(self, why: Any, since: float) -> None:
        self.timed_out(why, since)
        # a short sleep, then the next poll (an MPI call: it also progresses the RMA that
        # other ranks aim at this one)
        time.sleep(min(0.001, max(0.0, time.monotonic() - since) / 10))

    def barrier(self, why: str) -> None:
        """Every rank reaches this point; polled, so RMA aimed at this rank progresses and a
        timeout holds: twice the wait timeout (and 5 s more), so that a rank stuck in a wait
        reports first, naming what it waits on."""
        req = self.comm.Ibarrier()
        since = time.monotonic()
        limit = 2 * self.timeout + 5
        while not req.Test():
            if time.monotonic() - since > limit:
                raise RankTimeout(f"rank {self.rank} waited {limit:g} s for the other "
                                  f"ranks {why}")
            time.sleep(0.0005)


def mpiexec() -> str | None:
    """The ``mpiexec`` of this Python's environment (the mpich wheel installs one beside the
    interpreter), else the one on PATH, else None."""
    here = Path(sys.executable).parent / "mpiexec"
    if here.exists():
        return str(here)
    return shutil.which("mpiexec")


def _mpi_type(MPI: Any, dt: np.dtype) -> Any:
    return {np.dtype(np.int8): MPI.INT8_T, np.dtype(np.int16): MPI.INT16_T,
            np.dtype(np.int32): MPI.INT32_T, np.dtype(np.int64): MPI.INT64_T,
            np.dtype(np.uint8): MPI.UINT8_T, np.dtype(np.uint16): MPI.UINT16_T,
            np.dtype(np.uint32): MPI.UINT32_T, np.dtype(np.uint64): MPI.UINT64_T,
            np.dtype(np.float32): MPI.FLOAT, np.dtype(np.float64): MPI.DOUBLE}.get(dt)


def run_mpi(bind: Binder, ranks: Any, target: TargetLike, timeout: float | None,
            settings: dict[str, Any]) -> None:
    """One rank's part of a multi-rank launch over MPI (every rank of ``ranks`` calls it)."""
    comm = _comm(ranks)
    b = MpiRanks(comm, timeout)
    try:
        body, arrays, names = bind(b.rank, b.size)
        b.open(arrays, names)
        b.barrier("to open the windows")
        run_rank(b, body, target, settings)
        b.mark_done()
        b.barrier("to finish the kernel")
        after = getattr(body, "after", None)  # e.g. writing the outputs
        if after is not None:
            after()
        b.close()
    except BaseException as e:  # noqa: BLE001 - every failure ends the whole job
        abort(b, e)


register_mpi_launcher(run_mpi)  # ranks.run_on_ranks(ranks=comm) calls it


def abort(b: MpiRanks, e: BaseException, stream: Any = None) -> None:
    """Report rank ``b.rank``'s failure and end every rank of the job."""
    err = failure_error(b.rank, b, e)
    out = stream or sys.stderr
    print(f"ptoisa: {err}", file=out, flush=True)
    time.sleep(0.3)  # MPI_Abort kills the job's output forwarding too: let the message pass
    try:
        b.comm.Abort(1)
    finally:  # MPI_Abort may return before the launcher ends the job: this rank ends here
        os._exit(1)


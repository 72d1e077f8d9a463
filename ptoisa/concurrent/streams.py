"""Cores as instruction streams: a mixed (cube + vector) launch runs, per cluster, one AIC stream
and two AIV streams (sub-blocks 0 and 1), each with its own machine (its own L1/L0 or UB).

Each stream runs in its own Python thread, but only one runs at a time: the streams pass a
baton. A stream runs until it finishes or must wait for another core: a TPOP of an empty pipe,
a TPUSH into a full one, a cross-core flag not yet set, a SYNCALL the other cores have not
reached. It then hands the baton to the next stream (in the fixed order AIC, AIV0, AIV1, round
robin) that can make progress. When none can, the launch ends with a :class:`DeadlockError`
naming each unfinished stream's blocked instruction and its location. An error in one stream
ends the launch with that stream named; no thread is left running afterwards.

So a mixed run is deterministic: the order in which the streams interleave depends only on the
program (where each stream blocks), never on thread timing. Everything a stream prints (TPRINT)
goes to the machine's output as it runs: the output of the three cores interleaves at the points
where one of them blocks (the NPU prints per core, in no defined order between cores).

Blocks still run in lockstep: each stream's machine covers all blocks of the launch
(``machine.lanes``), so a launch of N blocks is three streams, not 3N. ``machine.core`` names
the core: ``("AIC", block)`` or ``("AIV", block, sub)``, where ``block`` is the block index (an
int) in a block-by-block run and the tuple of all block indices in a lockstep run.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable
from typing import Any

import numpy as np

from .. import memory, observe
from ..errors import BlockDivergence, ExecutionError, PtoError
from ..lockstep import Lanes, check_launch, lockstep_or_each
from ..memory import Machine
from ..targets import TargetLike

__all__ = ["Cluster", "DeadlockError", "Stream", "current_stream"]


class DeadlockError(ExecutionError):
    """No stream of a mixed launch can make progress (each waits for another)."""


class _Abort(BaseException):
    """Unwinds a stream's thread when the launch ends early (an error or a deadlock elsewhere)."""


def _where(loc: Any) -> str:
    if loc is None:
        return "<unknown location>"
    if isinstance(loc, tuple) and len(loc) == 2:
        return f"{loc[0]}:{loc[1]}"
    return f"{getattr(loc, 'file', '?')}:{getattr(loc, 'line', '?')}"


class Stream:
    """One core of a cluster: a body run on its own machine, in its own thread."""

    def __init__(self, cluster: Cluster, name: str, machine: Machine,
                 body: Callable[[], Any]) -> None:
        self.cluster = cluster
        self.name = name
        self.machine = machine
        self.body = body
        self.done = False
        self.waiting: Callable[[], bool] | None = None  # set while blocked: can it go on?
        self.why = ""  # what it waits for
        #: (instruction, location) of what it runs: Instr.run keeps it on the machine's stream
        #: (an attribute write, not an observer: a watched machine loses the fast paths)
        self.at: tuple[Any, Any] = (None, None)
        self.loc: Any = None  # where it blocked (the user's line for an eager kernel)
        self.thread = threading.Thread(target=self._main, name=f"ptoisa-{name}", daemon=True)
        machine.stream = self

    # ---- the thread ----------------------------------------------------------------------
    def _main(self) -> None:
        c = self.cluster
        try:
            with c.cv:
                while c.running is not self and c.failure is None:
                    c.cv.wait()
                if c.failure is not None:
                    return
            memory.push(self.machine)
            try:
                # (numpy's error state is per thread: the launching thread's does not reach
                # this one, and its machine is quiet, Machine.errstate)
                with np.errstate(all="ignore"):
                    self.body()
            finally:
                memory.pop(self.machine)
        except _Abort:
            return
        except BaseException as e:  # noqa: BLE001 - handed to the launching thread
            with c.cv:
                if c.failure is None:
                    c.failure = (self, e)
                c.running = None
                c.cv.notify_all()
            return
        with c.cv:
            self.done = True
            c._hand_off(self)

    def wait_until(self, ready: Callable[[], bool], why: str) -> None:
        """Block this stream until ``ready()`` holds (another stream makes it so); other
        streams run meanwhile. Raises a deadlock report (via the launch) when none can."""
        if ready():
            return
        self.loc = self.at[1] or _user_line()
        c = self.cluster
        with c.cv:
            self.waiting, self.why = ready, why
            c._hand_off(self)
            while c.running is not self and c.failure is None:
                c.cv.wait()
            self.waiting, self.why = None, ""
            if c.failure is not None:
                raise _Abort()

    def describe(self) -> str:
        ins = self.at[0]
        state = f"blocked in {ins.mnemonic if ins else '?'} at {_where(self.loc)}: {self.why}" \
            if self.waiting \
            else "running"
        return f"{self.name} {state}"


def _user_line() -> tuple[str, int] | None:
    """(file, line) of the innermost frame outside the ptoisa package: where an eager kernel
    called the instruction that blocks."""
    pkg = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # the ptoisa package
    f: Any = sys._getframe(1)
    while f is not None and os.path.abspath(f.f_code.co_filename).startswith(pkg):
        f = f.f_back
    return (f.f_code.co_filename, f.f_lineno) if f is not None else None


def current_stream(m: Machine) -> Stream | None:
    """The stream machine ``m`` belongs to (None outside a mixed launch)."""
    return m.stream


class Cluster:
    """The streams of one mixed launch and what they share: pipe FIFOs, cross-core flags."""

    def __init__(self) -> None:
        self.cv = threading.Condition()
        self.streams: list[Stream] = []
        self.running: Stream | None = None
        self.failure: tuple[Stream | None, BaseException] | None = None
        self.fifos: dict[Any, Any] = {}
        self.flags: dict[Any, int] = {}
        #: per flag counter, the tokens (ptoisa.concurrent.edges) of the sets behind its counts
        self.flag_tokens: dict[Any, Any] = {}
        self.barriers: dict[Any, Any] = {}

    def add(self, name: str, machine: Machine, body: Callable[[], Any]) -> Stream:
        machine.fifos = self.fifos
        machine.cluster = self
        s = Stream(self, name, machine, body)
        self.streams.append(s)
        return s

    def _hand_off(self, me: Stream) -> None:
        """(cv held) Pass the baton from ``me`` to the next stream that can run."""
        n = len(self.streams)
        i = self.streams.index(me)
        for k in range(1, n + 1):
            s = self.streams[(i + k) % n]
            if s.done:
                continue
            if s.waiting is None or s.waiting():
                self.running = s
                self.cv.notify_all()
                return
        self.running = None
        if any(not s.done for s in self.streams) and self.failure is None:
            lines = "\n  ".join(s.describe() if not s.done else f"{s.name} finished"
                                 for s in self.streams)
            self.failure = (None, DeadlockError(
                f"deadlock: no core can make progress\n  {lines}"))
        self.cv.notify_all()

    def run(self) -> None:
        """Run every stream to completion (the calling thread waits); re-raise the first
        failure, naming its stream."""
        if not self.streams:
            return
        for s in self.streams:
            s.thread.start()
        try:
            with self.cv:
                self.running = self.streams[0]
                self.cv.notify_all()
                while self.failure is None and not all(s.done for s in self.streams):
                    self.cv.wait()
                self.cv.notify_all()
        except BaseException as e:  # e.g. KeyboardInterrupt: end every stream, then re-raise
            with self.cv:
                if self.failure is None:
                    self.failure = (None, e)
                self.cv.notify_all()
            for s in self.streams:
                s.thread.join()
            raise
        for s in self.streams:
            s.thread.join()
        for s in self.streams:
            s.machine.stream = None
        if self.failure is not None:
            who, e = self.failure
            raise _named(who, e) from None


def _named(who: Stream | None, e: BaseException) -> BaseException:
    """The error ``e`` of stream ``who``, saying which core it happened on."""
    if who is None or isinstance(e, BlockDivergence):
        return e
    if isinstance(e, PtoError):
        err = type(e).__new__(type(e))
        op = f"{e.op} on {who.name}" if e.op else None
        msg = e.message if e.op else f"on {who.name}: {e.message}"
        PtoError.__init__(err, msg, op=op, loc=e.loc)
        return err
    e.add_note(f"(in the {who.name} stream of a mixed launch)")
    return e


#: the cores of one cluster: (kind, sub-block)
CORES: tuple[tuple[str, int | None], ...] = (("AIC", None), ("AIV", 0), ("AIV", 1))


def core_name(kind: str, sub: int | None) -> str:
    return kind if sub is None else f"{kind}{sub}"


def run_cluster(body: Callable[[Machine], Any], *, target: TargetLike, blocks: int = 1,
                lockstep: bool | str = "auto", settings: dict[str, Any] | None = None,
                cores: tuple[tuple[str, int | None], ...] = CORES) -> None:
    """Run ``body(machine)`` once per core of a cluster (AIC, AIV0, AIV1), interleaved, for
    ``blocks`` blocks: in lockstep (each machine covers all blocks) unless control flow depends
    on the block index, then (lockstep="auto", nothing written to GM yet) block by block.
    ``machine.core`` says which core a body runs on, ``machine.sub_block_id`` its sub-block.
    The observers of open ``observing`` blocks are attached to each core's machine before it
    runs (:func:`ptoisa.observe.attach`; a per-block rerun makes new machines)."""
    check_launch(blocks, lockstep)

    def machines(lanes: int, block: Any, blk: Any) -> list[Machine]:
        out = []
        for kind, sub in cores:
            m = Machine(target, lanes=lanes, **(settings or {}))
            m.block_idx, m.block_num = block, blocks
            m.sub_block_id = sub or 0
            m.core = (kind, blk) if sub is None else (kind, blk, sub)
            m.lazy_loads = True
            m.quiet = True
            observe.attach(m)
            out.append(m)
        return out

    def once(ms: list[Machine]) -> None:
        cl = Cluster()
        for (kind, sub), m in zip(cores, ms, strict=True):
            cl.add(core_name(kind, sub), m, lambda m=m: body(m))
        cl.run()

    made: list[list[Machine]] = []
    marked: list[tuple[Any, Any]] = []  # the observers' marks before the lockstep attempt

    def together() -> None:
        made.append(machines(blocks, Lanes(np.arange(blocks)), tuple(range(blocks))))
        marked[:] = observe.marks(made[-1])
        once(made[-1])

    with np.errstate(all="ignore"):
        lockstep_or_each(blocks, lockstep, together, lambda b: once(machines(1, b, b)),
                         lambda: any(m.gm_writes for m in made[-1]) if made else False,
                         abandon=lambda: observe.rewind(marked))

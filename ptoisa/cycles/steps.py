"""What the cycle model's schedule is made of and what it reports: a recorded instruction
(:class:`Step`, its times filled in by :func:`ptoisa.cycles.schedule.schedule`), a flag edge
of the trace (:class:`Flow`) and a deadlock. Both the schedule and the report read them; they
sit below both (the schedule builds the report). Also :func:`gc_paused`, which the schedule
and the launch model build their Steps under."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from ..enums import Pipe


@dataclass(slots=True)
class Step:
    """One recorded instruction (schedule fields filled by :func:`schedule`)."""

    index: int
    op: str
    pipe: Pipe
    cycles: int
    core: str
    block: int
    loc: Any
    #: (the entry's sync kind, src, dst, id) / ("barrier", pipe)
    sync: tuple[Any, ...] | None = None
    reads: tuple[Any, ...] = ()
    writes: tuple[Any, ...] = ()
    start: int = 0
    end: int = 0
    #: the pipe's name (queue keys: str hashing is cheaper than Enum's)
    pn: str = ""
    #: cross-core edges (ptoisa.concurrent.edges): a release fires when ``rel`` drained ("own": this
    #: step's end; a Pipe: that pipe of the core too; Pipe.ALL: every pipe), at ``fire``;
    #: an acquire waits for the steps ``after`` fired and holds ``hold`` (None: this step;
    #: a Pipe: that pipe's queue; Pipe.ALL: the whole core) until then
    rel: Any = None
    fire: int | None = None
    after: list[Any] | None = None
    hold: Any = None
    #: bytes this step moves to or from GM (one block's; the launch model shares them)
    gm: int = 0
    #: the operand features its cost rule read (None: not kept), for ``explain``
    feat: Any = None


@dataclass(slots=True)
class Flow:
    """A flag from its set (pipe ``src`` at ``t_set``) to its wait (pipe ``dst``, released at
    ``t_wait``), for the trace. A cross-core edge names the waiting core too (``core2``,
    ``block2``) and what it is (``label``: "TPUSH->TPOP", ...)."""

    core: str
    block: int
    src: Pipe
    dst: Pipe
    event: int
    t_set: int
    t_wait: int
    core2: str | None = None
    block2: int = 0
    label: str = ""


@dataclass
class Deadlock:
    step: Step
    message: str


@contextmanager
def gc_paused() -> Iterator[None]:
    """No cyclic garbage collection inside the block (as it was before, after it): for code
    that makes a long-lived object per recorded instruction and no garbage cycles (a report's
    Steps and Flows, a launch's rescheduled copies). Each collection the allocations trigger
    walks every live object, the recording's too: on a run of a million instructions those
    walks cost more than building the report."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()

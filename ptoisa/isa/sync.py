"""Synchronisation: TSYNC and SYNCALL.

Execution is sequential program order, so these are ordering no-ops; they are accepted and
*recorded* on the machine (``machine.sync_log``) so a later synchronisation checker can see
which waits and barriers a program issued.
"""

from __future__ import annotations

from typing import Any

from ..enums import Pipe
from ..memory import Machine
from .registry import Event, Opnd, Param, instr


def _record(m: Machine, entry: tuple[Any, ...]) -> None:
    log = getattr(m, "sync_log", None)
    if log is None:
        log = []
        m.sync_log = log  # type: ignore[attr-defined]
    log.append(entry)


@instr("TSYNC", family="sync", pipe=Pipe.S,
       operands=(Opnd("events", "any", optional=True),),
       params=(Param("OpCode", None),))
def TSYNC(m: Machine, events: Any = None, *, OpCode: Any) -> None:  # noqa: N802,N803
    """``TSYNC<Op>()`` (a barrier for one instruction's pipe) or ``TSYNC(events...)`` (wait for
    events). A no-op under sequential execution; recorded in ``machine.sync_log``. Trailing
    Event arguments are the waits (the registry strips them from the operands)."""
    waited = events if isinstance(events, (list, tuple)) else \
        ([events] if isinstance(events, Event) else [])
    _record(m, ("TSYNC", OpCode, tuple(waited)))


@instr("SYNCALL", family="sync", pipe=Pipe.ALL,
       operands=(Opnd("gmWorkspace", "any", optional=True),
                 Opnd("usedCores", "scalar", optional=True)),
       params=(Param("CoreType", "AIVOnly"), Param("Mode", None)))
def SYNCALL(m: Machine, gmWorkspace: Any = None, usedCores: Any = None, *,  # noqa: N802,N803
            CoreType: Any, Mode: Any) -> None:  # noqa: N803
    """Barrier across all cores of the launch. One core runs at a time here, so it is a
    recorded no-op."""
    _record(m, ("SYNCALL", CoreType, usedCores))

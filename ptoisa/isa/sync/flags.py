"""Synchronisation: flags between pipes (SET_FLAG / WAIT_FLAG), PIPE_BARRIER, TSYNC, SYNCALL.

A core runs its instructions in program order here, so the results need none of these; they
are executed as instructions all the same (each passes the dispatch point, where the
sanitizer and the cycle model see them) and recorded on the machine (``machine.sync_log``).
``SET_FLAG(src, dst, id)`` is issued on the ``src`` pipe and fires when that pipe's earlier
work is done; ``WAIT_FLAG(src, dst, id)`` holds the ``dst`` pipe until the matching flag
fired; ``PIPE_BARRIER(pipe)`` orders a pipe's work before its later work (PIPE_ALL: every
pipe).
"""

from __future__ import annotations

from typing import Any

from ...concurrent import edges
from ...enums import Pipe
from ...errors import ExecutionError, PtoError
from ...memory import Machine
from ..registry import Event, Instr, Opnd, Param, instr
from ..spelling import Form, Ptoas


def _record(m: Machine, entry: tuple[Any, ...]) -> None:
    log = m.sync_log
    if log is None:
        log = []
        m.sync_log = log
    log.append(entry)


_EVENT_IDS = 8  # EVENT_ID0..EVENT_ID7 per (src, dst) pipe pair


def _event_id(ins: Instr, m: Machine, eventId: Any) -> int:  # noqa: N803
    if isinstance(eventId, str) and eventId.upper().startswith("EVENT_ID"):
        eventId = eventId[8:]
    try:
        eid = int(eventId)
    except (TypeError, ValueError):
        raise PtoError(f"eventId must be an integer or EVENT_IDn, got {eventId!r}",
                       op=ins.mnemonic) from None
    if not 0 <= eid < _EVENT_IDS:
        raise PtoError(f"eventId {eid} out of range (EVENT_ID0..EVENT_ID{_EVENT_IDS - 1})",
                       op=ins.mnemonic)
    return eid


def _flag(kind: str) -> Any:
    #: the log entry of each (src, dst, event id) seen: one shared tuple, not one per flag (a
    #: long run logs hundreds of thousands)
    entries: dict[tuple[Pipe, Pipe, Any], tuple[Any, ...]] = {}

    def impl(m: Machine, srcPipe: Pipe, dstPipe: Pipe, eventId: Any) -> None:  # noqa: N803
        key = (srcPipe, dstPipe, eventId) if type(srcPipe) is Pipe and \
            type(dstPipe) is Pipe and type(eventId) in (int, str) else None
        entry = entries.get(key) if key is not None else None
        if entry is None:
            entry = (kind, srcPipe, dstPipe, _event_id(_FLAGS[kind], m, eventId))
            if key is not None and len(entries) < 1024:
                entries[key] = entry
        log = m.sync_log
        if log is None:
            _record(m, entry)
        else:
            log.append(entry)
    impl.__name__ = kind
    impl.__doc__ = {
        "SET_FLAG": "``set_flag(src, dst, EVENT_IDn)``: issued on pipe ``src``; fires when "
                    "src's earlier instructions are done.",
        "WAIT_FLAG": "``wait_flag(src, dst, EVENT_IDn)``: pipe ``dst`` waits until the "
                     "matching set_flag fired (each set is consumed by one wait).",
    }[kind]
    return impl


def _flag_plan(ins: Instr, m: Machine, vals: list[Any], params: dict[str, Any]) -> Any:
    """A planned launch's flag (Instr.plan): the record is the same every time, its event id
    checked once (the plan keeps the operands)."""
    entry = (ins.name, vals[0], vals[1], _event_id(ins, m, vals[2]))

    def call() -> bool:
        _record(m, entry)
        return True
    call.log_entry = entry  # type: ignore[attr-defined]  # (its whole effect: plan_loops.py)
    return call


_FLAG_OPERANDS = (Opnd("srcPipe", "enum", enum=Pipe), Opnd("dstPipe", "enum", enum=Pipe),
                  Opnd("eventId", "any"))
#: the sync kind and ops of each: ``pto.set_flag[src, dst, id]``, ``_dyn`` with an SSA event id, and
#: record/wait_event naming the two endpoints by op kind (lowered to their pipes)
_FLAG_OPS = {
    "SET_FLAG": ("flag_set", {"pto.set_flag": 0, "pto.set_flag_dyn": 0, "pto.record_event": 2}),
    "WAIT_FLAG": ("flag_wait", {"pto.wait_flag": 0, "pto.wait_flag_dyn": 0, "pto.wait_event": 2}),
}
_FLAGS: dict[str, Instr] = {
    k: instr(k, family="sync", pipe=Pipe.S, operands=_FLAG_OPERANDS, returns_event=False,
             sync=kind, ptoas=Ptoas(bracketed=ops), plan=_flag_plan)(_flag(k))
    for k, (kind, ops) in _FLAG_OPS.items()
}
SET_FLAG = _FLAGS["SET_FLAG"]
WAIT_FLAG = _FLAGS["WAIT_FLAG"]


def _buf_args(ins: Instr, bufId: Any, mode: Any) -> tuple[int, int]:  # noqa: N803
    try:
        bid, md = int(bufId), int(0 if mode is None else mode)
    except (TypeError, ValueError):
        raise PtoError(f"bufId and mode must be integers, got {bufId!r}, {mode!r}",
                       op=ins.mnemonic) from None
    if bid < 0:
        raise PtoError(f"bufId must not be negative, got {bid}", op=ins.mnemonic)
    if md not in (0, 1):
        raise PtoError(f"mode must be 0 (blocking acquire, immediate release) or 1 "
                       f"(non-blocking acquire, deferred release), got {md}", op=ins.mnemonic)
    return bid, md


def _buf(kind: str) -> Any:
    def impl(m: Machine, pipe: Pipe, bufId: Any, mode: Any = None) -> None:  # noqa: N803
        _record(m, (kind, pipe, *_buf_args(_BUFS[kind], bufId, mode)))
    impl.__name__ = kind
    impl.__doc__ = {
        "GET_BUF": "``get_buf(pipe, buf_id, mode)`` (A5): mode 0 holds ``pipe`` until every "
                   "earlier rls_buf of ``buf_id`` (any pipe, program order) is done; mode 1 "
                   "does not wait.",
        "RLS_BUF": "``rls_buf(pipe, buf_id, mode)`` (A5): mode 0 signals when ``pipe``'s "
                   "earlier instructions are done; mode 1 when every pipe's earlier "
                   "instructions are.",
    }[kind]
    return impl


_BUF_OPERANDS = (Opnd("pipe", "enum", enum=Pipe), Opnd("bufId", "any"),
                 Opnd("mode", "any", optional=True))
#: the A5 buffer-id tokens (micro-isa/01): ``pto.get_buf "PIPE_X", id, mode``, ``_dyn`` with an
#: SSA id, and the bracketed form naming the pipe by an op kind (``[#pto.pipe_event_type<TLOAD>,
#: id]``)
_BUF_OPS = {
    "GET_BUF": ("buf_get", {"pto.get_buf": 1, "pto.get_buf_dyn": 1}),
    "RLS_BUF": ("buf_rls", {"pto.rls_buf": 1, "pto.rls_buf_dyn": 1}),
}
_BUFS: dict[str, Instr] = {
    k: instr(k, family="sync", pipe=Pipe.S, operands=_BUF_OPERANDS, returns_event=False,
             sync=kind, ptoas=Ptoas(bracketed=ops))(_buf(k))
    for k, (kind, ops) in _BUF_OPS.items()
}
GET_BUF = _BUFS["GET_BUF"]
RLS_BUF = _BUFS["RLS_BUF"]


@instr("PIPE_BARRIER", family="sync", pipe=Pipe.S, sync="barrier",
       ptoas=Ptoas(op="pto.barrier", bracketed={"pto.barrier": 0, "pto.barrier_sync": 1}),
       operands=(Opnd("pipe", "enum", enum=Pipe),), returns_event=False)
def PIPE_BARRIER(m: Machine, pipe: Pipe) -> None:  # noqa: N802
    """``pipe_barrier(PIPE_X)``: the pipe's later instructions start after its earlier ones
    are done (PIPE_ALL: every pipe of the core)."""
    _record(m, ("PIPE_BARRIER", pipe))


@instr("TSYNC", family="sync", pipe=Pipe.S, sync="events",
       ptoas=Ptoas(forms={"pto.tsync": (Form(inputs=("events*",), outs=()),)}),
       operands=(Opnd("events", "any", optional=True),),
       params=(Param("OpCode", None),))
def TSYNC(m: Machine, events: Any = None, *, OpCode: Any) -> None:  # noqa: N802,N803
    """``TSYNC<Op>()`` (a barrier for one instruction's pipe) or ``TSYNC(events...)`` (wait for
    events). A no-op under sequential execution; recorded in ``machine.sync_log``. Trailing
    Event arguments are the waits (the registry strips them from the operands)."""
    waited = events if isinstance(events, (list, tuple)) else \
        ([events] if isinstance(events, Event) else [])
    _record(m, ("TSYNC", OpCode, tuple(waited)))


_SYNCALL_SETS = {"AIVOnly": ("AIV",), "AICOnly": ("AIC",), "Mix": ("AIC", "AIV"),
                 "Mixed": ("AIC", "AIV")}


def syncall_barrier(m: Machine, core_type: Any) -> None:
    """SYNCALL in a mixed launch: wait until every core of the participant set (AIVOnly,
    AICOnly, Mix) has reached its same-numbered SYNCALL."""
    cl = m.cluster
    if cl is None:
        return
    kinds = _SYNCALL_SETS.get(str(core_type).rsplit("::", 1)[-1])
    if kinds is None:
        raise PtoError(f"CoreType must be AIVOnly, AICOnly or Mix, got {core_type}",
                       op="syncall")
    if m.lanes == 1 and m.block_num > 1:
        raise ExecutionError("SYNCALL synchronises every block of the launch: the blocks must "
                             "run in lockstep (this launch runs them one by one)", op="syncall")
    me = m.stream
    if me.machine.core[0] not in kinds:
        return
    arrived = cl.barriers.setdefault(kinds, {})
    n = arrived[me.name] = arrived.get(me.name, 0) + 1
    # the arrival of generation n (every pipe of this core drained) for every participant
    toks = cl.barriers.setdefault(("tokens", kinds), {})
    toks[(me.name, n)] = edges.release(m, Pipe.ALL)
    parts = [s for s in cl.streams if s.machine.core[0] in kinds]
    me.wait_until(lambda: all(arrived.get(s.name, 0) >= n for s in parts),
                  f"SYNCALL<{'/'.join(kinds)}> #{n}: waiting for "
                  + ", ".join(s.name for s in parts if arrived.get(s.name, 0) < n))
    edges.acquire(m, *(toks.get((s.name, n)) for s in parts), pipe=Pipe.ALL)


@instr("SYNCALL", family="sync", pipe=Pipe.ALL, sync="all_cores",
       operands=(Opnd("gmWorkspace", "any", optional=True),
                 Opnd("usedCores", "scalar", optional=True)),
       params=(Param("CoreType", "AIVOnly"), Param("Mode", None)))
def SYNCALL(m: Machine, gmWorkspace: Any = None, usedCores: Any = None, *,  # noqa: N802,N803
            CoreType: Any, Mode: Any) -> None:  # noqa: N803
    """Barrier across all cores of the launch (CoreType: AIVOnly, AICOnly, Mix): in a mixed
    launch a core waits here until every core of the set has arrived; on a single core it is
    a recorded no-op."""
    _record(m, ("SYNCALL", CoreType, usedCores))
    if m.cluster is not None:
        syncall_barrier(m, CoreType)

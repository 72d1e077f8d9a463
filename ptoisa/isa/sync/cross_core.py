"""Cross-core flags between the cube core (AIC) and the vector cores (AIV0, AIV1) of a cluster:
SYNC_SET / SYNC_WAIT (``pto.sync.set`` / ``pto.sync.wait``), and the barrier of SYNCALL.

Each core has one counter per flag id. ``SYNC_WAIT(pipe, id)`` (A2/A3 ``wait_flag_dev(id)``,
A5 ``wait_intra_block(pipe, id)``) waits until this core's counter ``id`` is positive and takes
one from it. ``SYNC_SET(pipe, id)`` (A2/A3 ``ffts_cross_core_sync(pipe, getFFTSMsg(mode, id))``,
A5 ``set_intra_block(pipe, id)``) adds to other cores' counters:

* A2/A3 FFTS mode 2 (the default, cube <-> vector of one cluster): a set on the AIC signals both
  AIVs; the AIC is signalled once *both* AIVs have set the id.
* A2/A3 mode 1 (the vector cores of a cluster) and mode 0 (all cores of one kind in the launch):
  both AIVs are signalled once both have set the id; an AIC's mode-0 set signals itself (all
  cubes of a lockstep launch are one stream). Mode 0 across blocks needs a lockstep launch.
* A5 (intra-block flags, one per AIV): an AIC set of id < 16 signals AIV0's id, of id >= 16
  AIV1's id - 16; AIV ``k``'s set of id signals the AIC's id + 16 k. An AIV has 16 physical
  ids: its wait on id >= 16 is a wait on id - 16 (AIV1 may name its ids as the AIC does, as
  upstream's cv-mixed micro-op cases do: ``wait_intra_block <PIPE_MTE3>, 17``).

Outside a mixed launch (one core) they are recorded no-ops, as SET_FLAG / WAIT_FLAG are.

Every count a set adds carries a token (:mod:`ptoisa.concurrent.edges`) of the set(s) behind it
(both
AIVs' for a both-AIVs flag); the wait that takes the count picks it up, and so does each core
leaving a SYNCALL for every participant's arrival of that generation: the sanitizer and the
cycle model see the cross-core edges as this code matches them.
"""

from __future__ import annotations

from collections import deque
from typing import Any

from ...concurrent import edges
from ...enums import Pipe
from ...errors import ExecutionError, PtoError
from ...memory import Machine
from ..registry import Opnd, Param, instr
from .flags import _record
from .flags import syncall_barrier as syncall_barrier  # re-exported: it was defined here

_FLAG_IDS = 32


def _eid(eventId: Any, op: str) -> int:  # noqa: N803
    if isinstance(eventId, str) and eventId.upper().startswith("EVENT_ID"):
        eventId = eventId[8:]
    try:
        eid = int(eventId)
    except (TypeError, ValueError):
        raise PtoError(f"eventId must be an integer, got {eventId!r}", op=op) from None
    if not 0 <= eid < _FLAG_IDS:
        raise PtoError(f"flag id {eid} out of range (0..{_FLAG_IDS - 1})", op=op)
    return eid


def _me(m: Machine) -> str:
    core = m.core
    return "AIC" if core[0] == "AIC" else f"AIV{core[2]}"


def _bump(cl: Any, key: Any, tok: edges.Token | None) -> None:
    """Add one to counter ``key``, with the token of the set(s) behind it."""
    cl.flags[key] = cl.flags.get(key, 0) + 1
    cl.flag_tokens.setdefault(key, deque()).append(tok)


def _take(cl: Any, key: Any) -> edges.Token | None:
    """Take one from counter ``key`` (it is positive): the token of the set(s) behind it."""
    cl.flags[key] -= 1
    q = cl.flag_tokens.get(key)
    return q.popleft() if q else None


def _both(cl: Any, key: Any, sub: int, signal: list[str], eid: int,
          tok: edges.Token | None) -> None:
    """One AIV's arrival at a both-AIVs flag: when both have arrived, signal ``signal``."""
    pend = cl.flags
    _bump(cl, (key, sub), tok)
    if pend.get((key, 0), 0) > 0 and pend.get((key, 1), 0) > 0:
        both = edges.merged(_take(cl, (key, 0)), _take(cl, (key, 1)))
        for c in signal:
            _bump(cl, (c, eid), both)


@instr("SYNC_SET", family="sync", pipe=Pipe.S, sync="cross_core",
       operands=(Opnd("pipe", "enum", enum=Pipe), Opnd("eventId", "any")),
       params=(Param("FftsMode", 2),), returns_event=False)
def SYNC_SET(m: Machine, pipe: Pipe, eventId: Any, *, FftsMode: Any) -> None:  # noqa: N802,N803
    """Set cross-core flag ``eventId`` for the other cores of the cluster (``pto.sync.set``;
    FFTS ``FftsMode`` 0/1/2 on A2/A3, per-AIV intra-block flags on A5)."""
    eid = _eid(eventId, "sync_set")
    mode = int(FftsMode)
    _record(m, ("SYNC_SET", pipe, eid, mode))
    cl = m.cluster
    if cl is None:
        return
    me = _me(m)
    # the flag fires when ``pipe``'s earlier work is done (ffts_cross_core_sync(pipe, ...))
    tok = edges.release(m, pipe)
    if m.target.traits.cross_core_flags_per_subblock:
        if me == "AIC":
            _bump(cl, ("AIV1" if eid >= 16 else "AIV0", eid % 16), tok)
        else:
            _bump(cl, ("AIC", eid + 16 * int(me[3])), tok)
        return
    if mode not in (0, 1, 2):
        raise PtoError(f"FFTS mode must be 0, 1 or 2, got {mode}", op="sync_set")
    if mode == 0 and m.lanes == 1 and m.block_num > 1:
        raise ExecutionError("FFTS mode 0 synchronises every core of the launch: the blocks "
                             "must run in lockstep (this launch runs them one by one)",
                             op="sync_set")
    if me == "AIC":
        for c in (("AIC",) if mode == 0 else ("AIV0", "AIV1")):
            _bump(cl, (c, eid), tok)
    elif mode == 2:
        _both(cl, ("to-AIC", eid), int(me[3]), ["AIC"], eid, tok)
    else:
        _both(cl, ("AIVs", eid), int(me[3]), ["AIV0", "AIV1"], eid, tok)


@instr("SYNC_WAIT", family="sync", pipe=Pipe.S, sync="cross_core",
       operands=(Opnd("pipe", "enum", enum=Pipe), Opnd("eventId", "any")), returns_event=False)
def SYNC_WAIT(m: Machine, pipe: Pipe, eventId: Any) -> None:  # noqa: N802,N803
    """Wait until cross-core flag ``eventId`` of this core was set, and consume it
    (``pto.sync.wait``; blocks this core of a mixed launch while other cores run)."""
    eid = _eid(eventId, "sync_wait")
    _record(m, ("SYNC_WAIT", pipe, eid))
    cl = m.cluster
    if cl is None:
        return
    me = _me(m)
    if me != "AIC" and m.target.traits.cross_core_flags_per_subblock:
        eid %= 16
    key = (me, eid)
    m.stream.wait_until(lambda: cl.flags.get(key, 0) > 0,
                        f"cross-core flag {eid} of {key[0]} is not set")
    edges.acquire(m, _take(cl, key), pipe=edges.wait_scope(m, pipe))

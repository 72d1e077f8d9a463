"""Happens-before edges between the cores of a cluster (a mixed cube + vector launch).

The streams code decides which instruction on one core satisfies which on another: the FIFO
of a pipe matches the k-th TPOP to the slot a TPUSH filled and a TPUSH to the slot a TFREE
recycled (:mod:`ptoisa.isa.pipes`), the flag counters match a SYNC_WAIT to the SYNC_SET(s)
that signalled it, FFTS mode by mode, and the SYNCALL barrier matches the arrivals of one
generation (:mod:`ptoisa.isa.sync.cross_core`). Observers that model order or time (the
sanitizer, the cycle model) must not re-derive that matching. So the releasing instruction's
semantics call :func:`release`, which returns a :class:`Token`, and keep the token with what
they match (the slot, the flag count, the barrier generation); the consuming instruction's
semantics hand the tokens they matched to :func:`acquire`.

An observer takes part by having two methods:

* ``edge_release(rec, pipe) -> payload``: ``rec`` is the releasing instruction's record
  (``machine.last_record``: its observers have already seen it); ``pipe`` is the pipe whose
  earlier work must be complete when the release fires (None: the instruction's own pipe;
  ``Pipe.ALL``: every pipe of the core). The payload is the observer's own (a vector clock
  snapshot, a schedule step); the token keeps one list of payloads per observer.
* ``edge_acquire(rec, payloads, pipe)``: ``rec`` is the consuming instruction's record,
  ``payloads`` every payload of the matched tokens this observer made, ``pipe`` what is
  ordered after them (None: the instruction's pipe; ``Pipe.ALL``: the whole core, see
  :func:`wait_scope`).

With no observer on the machine both calls cost a list test; a token is then None.
"""

from __future__ import annotations

from typing import Any

from ..enums import Pipe

__all__ = ["Token", "acquire", "merged", "release", "wait_scope"]


class Token:
    """What a releasing instruction leaves for its consumer: per observer (by ``id``), the
    payloads it made (several when tokens are merged: both AIVs' halves of one slot)."""

    __slots__ = ("parts",)

    def __init__(self, parts: dict[int, list[Any]]) -> None:
        self.parts = parts

    def __repr__(self) -> str:
        return f"Token({sum(len(v) for v in self.parts.values())} payload(s))"


def merged(*tokens: Token | None) -> Token | None:
    """One token standing for all of ``tokens`` (None entries skipped): what a consumer
    released by several producers at once picks up (both AIVs' sets of a mode-2 flag, both
    consumers' frees of a split slot)."""
    parts: dict[int, list[Any]] = {}
    for t in tokens:
        if t is not None:
            for k, v in t.parts.items():
                parts.setdefault(k, []).extend(v)
    return Token(parts) if parts else None


def release(m: Any, pipe: Pipe | None = None) -> Token | None:
    """Called by the semantics of a releasing instruction running on machine ``m`` (TPUSH,
    TFREE, SYNC_SET, arriving at SYNCALL): a token for its consumer, or None when no
    observer of ``m`` takes part."""
    obs = m.observers
    if not obs:
        return None
    rec = m.last_record
    parts: dict[int, list[Any]] = {}
    for o in obs:
        f = getattr(o, "edge_release", None)
        if f is not None:
            p = f(rec, pipe)
            if p is not None:
                parts[id(o)] = [p]
    return Token(parts) if parts else None


def acquire(m: Any, *tokens: Token | None, pipe: Pipe | None = None) -> None:
    """Called by the semantics of a consuming instruction on machine ``m`` (TPOP, a TPUSH
    that reuses a freed slot, SYNC_WAIT, leaving SYNCALL) with the tokens it matched."""
    obs = m.observers
    if not obs or not any(t is not None for t in tokens):
        return
    rec = m.last_record
    for o in obs:
        f = getattr(o, "edge_acquire", None)
        if f is None:
            continue
        key = id(o)
        pay = [p for t in tokens if t is not None for p in t.parts.get(key, ())]
        if pay:
            f(rec, pay, pipe)


def wait_scope(m: Any, pipe: Pipe | None = None) -> Pipe | None:
    """What a cross-core wait holds on the target of ``m`` (its ``cross_core_wait_holds_pipe``
    trait): on A2/A3 the wait (``wait_flag_dev``) stalls the core's scalar issue, so every
    later instruction of every pipe is ordered after it (``Pipe.ALL``); A5's
    ``wait_intra_block(pipe, id)`` holds one pipe (``pipe``, None: the waiting instruction's
    own)."""
    if m.target.traits.cross_core_wait_holds_pipe:
        return pipe
    return Pipe.ALL

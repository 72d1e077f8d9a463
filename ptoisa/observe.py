"""One way to observe a run: the :class:`Observer` protocol and ``with observing(obs):``.

An observer (the sanitizer, the cycle model, a trace, a test's recorder) is a callable that
:meth:`Instr.run <ptoisa.isa.registry.Instr.run>` calls with an
:class:`~ptoisa.isa.registry.InstrRecord` before each instruction runs. It may also have

* ``after(rec)``: called when that instruction has run (not when it raised);
* ``edge_release(rec, pipe)`` / ``edge_acquire(rec, payloads, pipe)``: a producer on one core
  released what a consumer on another acquires (TPUSH/TPOP, cross-core flags, SYNCALL: see
  :mod:`ptoisa.concurrent.edges`);
* ``not_modelled(machine, op, loc, why)``: the run passed an op that compiles to nothing
  (``interp.compiler.NO_EFFECT``: buffer tokens, FFTS setup ...), so a checker can say what it
  did not check;
* ``machine_made(machine, ranks)``: a launcher made (or reused) ``machine`` for a launch: a
  block grid, one core of a mixed cluster (``machine.core``), one rank of a multi-rank launch
  (``ranks`` is its backend, else None); also the current machine when the block opens.
  Without it the observer itself is attached to every such machine; with it, the observer
  attaches what it wants (per-rank checkers, say);
* ``values = False``: it needs no values (a timing-only cycle model): a machine it watches
  computes none (``Machine.values``; every other observer of the machine must agree);
* ``mark()`` / ``rewind(mark)``: a lockstep attempt starts (``mark()`` returns what the
  observer needs to come back to this point) / was abandoned, the launch running again block
  by block: forget everything observed since ``mark`` (:func:`marks`, :func:`rewind`), so
  that the observer sees what a ``lockstep=False`` launch shows it. Without them the observer
  sees the abandoned attempt too.

``with observing(obs, ...):`` makes every launcher (``pto.launch``, ``Program.run``, the mixed
and multi-rank launchers) attach the observers to each machine it runs, and attaches them to
the current machine for eager code run outside a launch. Launchers call :func:`attach` /
:func:`detach`; nothing else keeps a list of hooks.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Protocol

from .memory import Machine, current

__all__ = ["Observer", "attach", "detach", "marks", "observing", "rewind", "watching"]


class Observer(Protocol):
    """Called with each instruction's record before it runs; the methods named in the module
    docstring are optional."""

    def __call__(self, rec: Any) -> None: ...


_lock = threading.Lock()
#: the observers of the open ``observing`` blocks, outermost first (shared by every thread: a
#: mixed launch runs its cores in threads of their own)
_watching: list[Any] = []


def watching() -> tuple[Any, ...]:
    """The observers every launch attaches now."""
    return tuple(_watching)


def active() -> bool:
    """Does an open ``observing`` block watch launches now? (:func:`watching` not empty)"""
    return bool(_watching)


@contextmanager
def observing(*observers: Any) -> Iterator[None]:
    """Attach ``observers`` to every machine a launch runs inside the block, and to the
    current machine."""
    m = current()
    with _lock:
        _watching.extend(observers)
    before = list(m.observers)
    for o in observers:
        _attach_one(o, m, None)
    added = [o for o in m.observers if o not in before]
    _set_values(m)
    try:
        yield
    finally:
        with _lock:
            for o in observers:
                _watching.remove(o)
        for o in added:
            if o in m.observers:
                m.observers.remove(o)
        _set_values(m)


def _set_values(m: Machine) -> None:
    """``m`` computes values unless an observer of it says it needs none."""
    m.values = all(getattr(o, "values", True) is not False for o in m.observers)


def _attach_one(o: Any, m: Machine, ranks: Any) -> None:
    hook = getattr(o, "machine_made", None)
    if hook is not None:
        hook(m, ranks)
    elif o not in m.observers:
        m.observers.append(o)


def attach(m: Machine, ranks: Any = None) -> None:
    """(launchers) ``m`` is about to run a launch: attach what the open ``observing`` blocks
    watch with (``ranks``: the rank backend ``m`` runs for)."""
    if not _watching:
        return
    before = list(m.observers)
    for o in watching():
        _attach_one(o, m, ranks)
    m.attached = [o for o in m.observers if o not in before]
    _set_values(m)


def detach(m: Machine) -> None:
    """(launchers) The launch on ``m`` ended: remove what :func:`attach` attached."""
    added = m.attached
    if added:
        for o in added:
            if o in m.observers:
                m.observers.remove(o)
        m.attached = []
        _set_values(m)


def marks(machines: list[Machine]) -> list[tuple[Any, Any]]:
    """(launchers) A lockstep attempt is about to run on ``machines`` (attached): the mark of
    each of their observers that has a ``mark()`` hook (each observer once)."""
    out: list[tuple[Any, Any]] = []
    seen: set[int] = set()
    for m in machines:
        for o in m.observers:
            hook = getattr(o, "mark", None)
            if hook is not None and id(o) not in seen:
                seen.add(id(o))
                out.append((o, hook()))
    return out


def rewind(taken: list[tuple[Any, Any]]) -> None:
    """(launchers) The lockstep attempt ``taken`` (:func:`marks`) was abandoned: the launch
    runs again block by block; each observer forgets what it saw of the attempt."""
    for o, mark in taken:
        o.rewind(mark)

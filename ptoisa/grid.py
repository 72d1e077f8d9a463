"""Launching a kernel over a grid of blocks, with the blocks run in lockstep.

``pto.launch(kernel, *args, blocks=N)`` runs ``kernel(*args)`` for N blocks the way the NPU
does, each block with its own ``pto.get_block_idx()`` and its own on-chip buffers. Rather
than N Python passes, the kernel runs **once** with every block in lockstep: the machine gets
``lanes = N``, every buffer and tile a leading block dimension, ``get_block_idx()`` returns the
vector of block indices (a :class:`Lanes` array), GlobalTensor offsets computed from it become
per-block offset vectors, and each intrinsic call processes all blocks in one numpy call.

Instructions whose semantics index tiles as ``[..., r, c]`` are declared ``batched`` and run
once for all blocks; any other instruction, and any call whose operands differ between blocks
in shape (e.g. different valid regions), runs once per block on per-block views, with the
same results. Python control flow that depends on the block index cannot run in lockstep:
``bool(block_idx == 3)`` raises :class:`BlockDivergence` (unless all blocks agree), and
``launch(..., lockstep="auto")`` (the default) then reruns the kernel block by block, which
is always correct as long as nothing was written to GM yet.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

import numpy as np

from . import eager_plans, observe
from .errors import PtoError
from .hostmem import check_lockstep
from .lanes import BlockDivergence, Lanes, block_of
from .lockstep import check_launch, lockstep_or_each
from .memory import Machine, current, pop
from .memory import push as _push
from .progress import Progress
from .targets import DEFAULT_TARGET, TargetLike, get_target

__all__ = ["BlockDivergence", "Lanes", "block_of", "get_block_idx", "get_block_num", "launch"]


def get_block_idx() -> Any:
    """This block's index (in a lockstep launch: the vector of all blocks' indices)."""
    return current().block_idx


def get_block_num() -> int:
    """How many blocks the kernel was launched on."""
    return current().block_num


# ---- launching ------------------------------------------------------------------------------

def launch(kernel: Callable[..., Any], *args: Any, blocks: int = 1,
           target: TargetLike = DEFAULT_TARGET,
           lockstep: bool | str = "auto", mixed: bool = False, cycles: bool | str = False,
           sanitize: Any = False, ranks: Any = None, plans: bool | None = None,
           **settings: Any) -> Any:
    """Run ``kernel(*args)`` on ``blocks`` blocks of ``target`` (results land in the numpy
    arrays passed in). ``lockstep``: True (fail on block-dependent control flow), False (one
    Python pass per block), "auto" (lockstep, falling back per block when the kernel branches
    on the block index before writing GM). ``settings`` go to the machine (mode, stdout...).
    ``mixed=True``: a cube + vector kernel, run on the AIC and both AIVs of every cluster
    (``pto.core_type()``, ``pto.get_subblock_idx()``; see :mod:`ptoisa.concurrent.mixed`).
    ``ranks=N`` / ``ranks=comm``: a multi-rank launch (see
    :func:`ptoisa.concurrent.ranks.launch_ranks`).
    ``cycles=True`` times the run with the cycle model and returns its
    :class:`~ptoisa.cycles.CycleReport` (else None); ``cycles="timing"`` times it without
    computing values (the arrays are left untouched; an op whose effect is a value, such as
    TPRINT or ``tile.numpy()``, stops the run naming it).
    ``sanitize``: True (or a check list) runs the sanitizer and raises SanitizerError with
    the report when it found anything; a :class:`ptoisa.sanitizer.Sanitizer` collects its
    findings without raising. Returns the report when sanitizing.
    ``matmul_accumulation`` ("f32" | "exact" | "sequential", a setting): by default the
    current machine's (:func:`ptoisa.set_matmul_accumulation`), resolved here, in the caller's
    thread.
    ``plans=True``: an execution plan (:mod:`ptoisa.eager_plans`): the first two launches with
    a signature (kernel, block count, target, settings, the arrays' dtypes, shapes and strides,
    the scalar arguments' values) run interpreted and are recorded; when both records agree,
    the third runs interpreted and replayed from the same bytes, and when those agree too,
    later launches with that signature replay the instructions without calling the kernel.
    Off by default, because it trusts what ptoisa cannot see: **the kernel's Python must not
    depend on anything but that signature and what ptoisa returns to it** (not on the
    contents of its arrays read directly, globals, mutable closures, randomness or time) and
    must touch memory only through the intrinsics. What ptoisa does see refuses the plan
    (tile or GM data read into Python, an instruction returning a value, block-dependent
    control flow): those launches run interpreted; ``ptoisa.eager_plans.stats(kernel)`` says
    why. Observed launches (``cycles``, ``sanitize``, ``observing``), mixed and multi-rank
    launches are never planned."""
    eager_plans.nested("pto.launch")
    settings.setdefault("matmul_accumulation", current().matmul_accumulation)
    sanitizing = sanitize is not False and sanitize is not None
    if not (cycles or sanitizing or mixed or ranks is not None):  # (the common launch)
        if eager_plans.enabled(plans):
            if _replayed(kernel, args, blocks, target, lockstep, settings):
                return None  # (the kernel's last replay again: its short path)
            body = eager_plans.body(kernel, args, blocks, settings)
        else:
            body = lambda m: kernel(*args)  # noqa: E731
        run_blocks(body, blocks=blocks, target=target, lockstep=lockstep, settings=settings)
        return None
    eager_plans.enabled(plans)  # (checked: an observed launch runs interpreted)
    from .cycles import cycles_mode

    cycles, with_values = cycles_mode(cycles)
    if not with_values and sanitize is not False and sanitize is not None:
        raise PtoError("cycles='timing' computes no values: the sanitizer needs them "
                       "(sanitize with cycles=True or without cycles)")
    if ranks is not None:
        from .concurrent.ranks import launch_ranks

        if mixed:
            raise PtoError("a mixed (cube + vector) launch across ranks is not supported yet")
        if sanitize is not False and sanitize is not None:  # every rank, and between ranks
            from .sanitizer.ranks import check_report, sanitized_ranks

            return check_report(*sanitized_ranks(sanitize, lambda: launch_ranks(
                kernel, *args, ranks=ranks, blocks=blocks, target=target, **settings), ranks))
        launch_ranks(kernel, *args, ranks=ranks, blocks=blocks, target=target, **settings)
        return None
    with contextlib.ExitStack() as stack:
        if sanitizing:
            from .sanitizer import sanitizing as _sanitizing

            session = stack.enter_context(_sanitizing(sanitize, "eager"))
        if cycles:
            from .cycles import observe as _timing

            model = stack.enter_context(_timing(target, values=with_values))
        if mixed:
            from .concurrent.streams import run_cluster

            run_cluster(lambda m: kernel(*args), target=target, blocks=blocks,
                        lockstep=lockstep, settings=settings)
        else:
            run_blocks(lambda m: kernel(*args), blocks=blocks, target=target,
                       lockstep=lockstep, settings=settings)
    if sanitizing:
        from .sanitizer import SanitizerError

        if session.report and session.strict:
            raise SanitizerError(session.report)
        return session.report
    return model.report() if cycles else None


def _replayed(kernel: Callable[..., Any], args: tuple[Any, ...], blocks: Any, target: Any,
              lockstep: Any, settings: dict[str, Any]) -> bool:
    """``launch``'s short path: a launch that the general path (:func:`run_blocks` with
    :func:`eager_plans.body`) would hand, on the machine of the kernel's last replay, to
    ``eager_plans._run``, which would replay it as that one (:func:`eager_plans.repeated`'s
    guards, and the machine still the launch's cached one), replayed with only what the
    replay needs: the launch machine set up, the plan run, the machine left, as
    :func:`run_blocks` does for it. False, having done nothing observable: anything else, for
    the general path."""
    last = eager_plans.repeated(kernel, args, blocks, lockstep, settings)
    if last is None:
        return False
    m = last.m
    key = last.machine_key  # (the launch machine's, as last.same's settings and blocks make it)
    try:
        if key is None or _MACHINES.get(key) is not m or get_target(target) is not m.target:
            key = machine_key(target, blocks, settings)
            if _MACHINES.get(key) is not m:
                return False
            last.machine_key = key
    except PtoError:  # (an unknown target: the general path says so)
        return False
    if blocks == 1:
        run_one(lambda _m: eager_plans.replay_last(last), m)
    else:
        check_lockstep(blocks)  # (run_blocks' lockstep run checks it: blocks run together)
        run_together(lambda _m: eager_plans.replay_last(last), m, last.block_idx)
    return True


def run_blocks(body: Callable[[Machine], Any], *, blocks: int, target: TargetLike,
               lockstep: bool | str = "auto", settings: dict[str, Any] | None = None,
               machine: Machine | None = None, fresh: Callable[[], None] | None = None,
               planned: bool = False) -> Any:
    """Run ``body(machine)`` for ``blocks`` blocks of ``target``: the one launcher behind
    ``pto.launch`` and ``Program.run``. In lockstep ``body`` runs once on a machine whose
    lanes are the blocks; block by block it runs once per block on a one-lane machine (or on
    ``machine``, when given: its own settings hold), each block starting from poisoned
    buffers and an empty print buffer. ``planned``: tile capacity was already checked over
    the whole program (the ``.pto`` memory plan), not per live tile."""
    check_launch(blocks, lockstep)
    eager_plans.nested("a launch")
    settings = settings or {}
    last: list[Machine] = []
    marked: list[tuple[Any, Any]] = []  # the observers' marks before the lockstep attempt

    def together() -> Any:
        check_lockstep(blocks)
        m = _launch_machine(target, blocks, settings)
        last.append(m)
        marked[:] = observe.marks([m])
        try:
            m.planned = planned
            m.block_idx, m.block_num = Lanes(np.arange(blocks)), blocks
            return body(m)
        finally:
            m.planned = False
            _done(m)

    def each(b: int) -> Any:
        if machine is None:
            return _block(_launch_machine(target, 1, settings), body, b, blocks, planned, _done)
        m = _push(machine)
        observe.attach(m)
        m.quiet = True
        m.repoison()  # a new run: placed buffers start poisoned (auto tiles always do)
        return _block(m, body, b, blocks, planned, _given_done)

    bar: list[Progress] = []  # (made when blocks run one by one: lockstep draws nothing)

    def each_shown(b: int) -> Any:  # block by block: a progress line on a terminal
        if not bar:
            bar.append(Progress(blocks, f"{target}: blocks").__enter__())
        try:
            return each(b)
        finally:
            bar[0].update()

    quiet = warnings_off()
    try:
        if blocks == 1:  # (lockstep_or_each's one block, without its set-up; no line to
            return each(0)  # draw, whose set-up, a terminal check, costs ~10 us)
        return lockstep_or_each(blocks, lockstep if machine is None else False, together,
                                each_shown, lambda: bool(last and last[-1].gm_writes),
                                fresh, lambda: observe.rewind(marked))
    finally:
        warnings_back(quiet)
        if bar:
            bar[0].__exit__(None, None, None)


try:  # numpy's error state, a context variable (numpy >= 2)
    from numpy._core.umath import _extobj_contextvar as _NP_STATE  # type: ignore[attr-defined]
    from numpy._core.umath import _make_extobj  # type: ignore[attr-defined]
except ImportError:  # pragma: no cover
    _NP_STATE = None
#: (numpy's error state last seen, that state with every warning ignored): one tuple, replaced
#: whole (threads launching under states of their own)
_IGNORING: tuple[Any, Any] = (None, None)


def warnings_off() -> Any:
    """What ``np.errstate(all="ignore").__enter__()`` does, ~0.2 us where numpy 2's takes
    ~1-1.6 (its state made anew each time): the state with every floating-point warning
    ignored and the current one's other settings (buffer size, callback) is kept for as long
    as the current one stands. Returns what :func:`warnings_back` restores."""
    if _NP_STATE is None:  # pragma: no cover
        e = np.errstate(all="ignore")
        e.__enter__()
        return e
    global _IGNORING
    cur, off = _NP_STATE.get(), _IGNORING
    if off[0] is not cur:
        # (made while cur is numpy's state: its other settings)
        off = _IGNORING = (cur, _make_extobj(all="ignore"))
    return _NP_STATE.set(off[1])


def warnings_back(token: Any) -> None:
    """numpy's error state as it was before :func:`warnings_off` returned ``token``."""
    if _NP_STATE is None:  # pragma: no cover
        token.__exit__(None, None, None)
        return
    _NP_STATE.reset(token)


def run_one(body: Callable[[Machine], Any], m: Machine, fresh: bool = True) -> Any:
    """``run_blocks(body, blocks=1, target=target, settings=settings, planned=True)`` for a
    launcher that has made its checks (a valid lockstep policy, :func:`eager_plans.nested`)
    and holds the launch machine of those settings (:func:`machine_by_key`'s ``m``): ``body``
    on it, numpy's warnings off (an eager plan's replay; a ``.pto`` plan's,
    ptoisa/interp/__init__.py's 1-block short path). ``fresh`` False: the replay uses none
    of ``m``'s tile storage (``Plan.resets``), so the arena and placements are left as they
    are (:func:`_set_up`)."""
    quiet = warnings_off()
    try:
        return _block(_set_up(m, fresh), body, 0, 1, True, _done)
    finally:
        warnings_back(quiet)


def run_together(body: Callable[[Machine], Any], m: Machine, block_idx: Lanes) -> Any:
    """``run_blocks(body, blocks=m.lanes, target=target, settings=settings)``'s lockstep run
    for a launcher that has made its checks (a lockstep policy that runs the blocks together,
    :func:`eager_plans.nested`, :func:`check_lockstep`), holds the launch machine of those
    settings (:func:`machine_by_key`'s ``m``) and knows ``body`` cannot diverge by block (an
    eager plan's replay): ``body`` on it with ``block_idx`` (``Lanes(range(m.lanes))``),
    numpy's warnings off."""
    quiet = warnings_off()
    try:
        _set_up(m)
        try:
            m.block_idx, m.block_num = block_idx, m.lanes
            return body(m)
        finally:
            _done(m)
    finally:
        warnings_back(quiet)


def _block(m: Machine, body: Callable[[Machine], Any], b: int, blocks: int, planned: bool,
           leave: Callable[[Machine], None]) -> Any:
    """``body(m)`` as block ``b`` of ``blocks`` on a one-lane machine set up for it (an empty
    print buffer; ``planned`` or the machine's own), then ``leave(m)``."""
    saved = m.planned
    m.planned = planned or saved
    try:
        m.block_idx, m.block_num = b, blocks
        m.reset_print_buffer()
        return body(m)
    finally:
        m.planned = saved
        leave(m)


_MACHINES: dict[Any, Machine] = {}


def machine_by_key(key: Any) -> Machine | None:
    """The machine a launch whose settings make :func:`machine_key` ``key`` would run on, as
    the last one left it (None: the launch would make one). A launcher keeping the key holds
    the settings' values: their identities are the key's."""
    return _MACHINES.get(key)


def machine_key(target: TargetLike, lanes: int, settings: dict[str, Any]) -> Any:
    """What the launch machine of a launch with these settings is cached by (the settings'
    values by identity; raises PtoError for an unknown target)."""
    items = [(k, id(v)) for k, v in settings.items()]
    return (get_target(target), lanes, tuple(sorted(items) if len(items) > 1 else items))


def _launch_machine(target: TargetLike, lanes: int, settings: dict[str, Any]) -> Machine:
    """A machine for a launch, reused across launches with the same target and lane count so
    its buffers and arena are not allocated (and page-faulted in) again every time."""
    target = get_target(target)
    key = machine_key(target, lanes, settings)
    m = _MACHINES.get(key)
    if m is None:
        if len(_MACHINES) > 8:
            _MACHINES.clear()
        m = _MACHINES[key] = Machine(target, lanes=lanes, **settings)
    return _set_up(m)


def _set_up(m: Machine, fresh: bool = True) -> Machine:
    """``m`` set up for a launch and made current. ``fresh`` False (a plan's replay that
    uses none of its tile storage): only what a launch starts without is reset
    (``Machine.reset_registers``), not the arena and placements: no call of the replay reads
    them, and every other launch on ``m`` resets them first."""
    if fresh:
        m.reset_for_launch()
    else:
        m.reset_registers()
    m.lazy_loads = True
    m.quiet = True
    observe.attach(m)
    _push(m)
    return m


def _given_done(m: Machine) -> None:
    """The end of a block on a machine the caller passed (its own settings hold)."""
    observe.detach(m)
    m.quiet = False
    pop(m)


def _done(m: Machine) -> None:
    observe.detach(m)
    m._lazy.clear()
    m._gm_settled = None  # (holds a view of a caller's array)
    m.quiet = False
    pop(m)


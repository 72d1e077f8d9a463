"""Execution plans: a compiled ``.pto`` function's launch recorded once per signature, then
replayed as bound instruction calls.

Real kernels loop over many small tiles, so per instruction Python dominates: the
interpreter's scalar steps, loop control, GM views made again every iteration, and in
``Instr.run`` the decisions (observers, lockstep once-or-per-block, static rules, which rules
apply on the target) that a kernel's **signature** already decides. A plan records, on a
launch with a signature, the tile instructions a launch executes, in order, with their
operands resolved (tiles, GM views, scalars, parameters), and keeps for each a call bound
to what the signature decided; later launches with that signature check the guards and run
the calls. (The first launch of a signature runs interpreted, unwatched, and the second
records: recording takes the general path of every instruction, about twice an interpreted
launch, which a signature launched once should not pay.)

The signature: the function (of one compiled module, so one target and one setting of
``permissive``), the block count, every GM argument's element type, size and writability,
the value of every scalar argument, which GM arguments overlap (plans are made only when
none does), and the launch machine. A miss records a plan for the new signature (a few are
kept per function).

Sound by construction, not by a second semantics: every planned step runs the instruction's
own entry (its plain form, fast form or semantics, as ``Instr.run`` would pick them for an
unobserved machine, with the copy-on-write barriers where ``Instr.run`` runs them), on the
same operand objects in the same order, so a replay leaves the same bits as the interpreter.
What a plan cannot prove it does not plan (:func:`plannable`): a function with an op whose
effect is not a tile instruction or a value fixed by the signature (``pto.load_scalar`` makes
control flow data-dependent; ``pto.store_scalar``, pointer-to-integer casts, event-id arrays,
sections, frontend pipes ...), a launch that diverges by block, a tile or value an instruction
receives that the plan does not know how to rebind. Such launches run interpreted.

A recorded ``scf.for`` whose iterations are independent runs as one batch over a lanes
machine (:mod:`ptoisa.plan_loops`); the plan stats say which loops did not, and why.

Observers see every instruction through ``Instr.run``; a launch whose machine has any
(sanitizer, cycle model, ``ptoisa.observe.observing``) runs interpreted and is not recorded.
``PTOISA_PLANS=0`` in the environment, or ``plans=False`` on a launch, turns plans off.
"""

from __future__ import annotations

import enum
import operator
import os
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from . import plan_loops
from .errors import PtoError
from .isa.planned import settled
from .isa.registry import Instr, InstrRecord, _all_uniform, _settle_written, lookup
from .lanes import BlockDivergence, Lanes
from .lazy import may_share
from .memory import Machine
from .tensor import GlobalTensor
from .tile import Tile

__all__ = ["PlanStats", "enabled", "plannable"]

#: how many signatures a function keeps plans for (the most recently recorded)
KEEP = 8
#: launches executing more instructions than this are not planned (a plan keeps a call per
#: executed instruction: memory, and a long record is rarely launched again)
MAX_STEPS = 100_000
#: run the independent iterations of a recorded loop as one batch (ptoisa/plan_loops.py)
BATCH_LOOPS = True


def enabled(setting: bool | None) -> bool:
    """Plans on for this launch: ``plans=`` when given, else the environment's
    ``PTOISA_PLANS`` (``0``, ``off``, ``false``, ``no``: off), else on."""
    if setting is not None:
        if not isinstance(setting, bool):
            raise PtoError(f"plans must be True or False, got {setting!r}")
        return setting
    return os.environ.get("PTOISA_PLANS", "1").strip().lower() not in ("0", "off", "false",
                                                                        "no")


class PlanStats:
    """What the plans of one compiled function did: plans recorded, launches replayed,
    launches run interpreted (and why, the last reason); loops whose iterations the plans run
    as one batch, and why the last loop that is not was not (ptoisa/plan_loops.py)."""

    __slots__ = ("built", "hits", "interpreted", "why", "batched", "why_loop")

    def __init__(self) -> None:
        self.built = 0
        self.hits = 0
        self.interpreted = 0
        self.why = ""
        self.batched = 0
        self.why_loop = ""

    def __repr__(self) -> str:
        why = f", last interpreted: {self.why}" if self.why else ""
        loops = f", {self.batched} loops batched" if self.batched else ""
        why_loop = f", last loop not batched: {self.why_loop}" if self.why_loop else ""
        return (f"<plans: {self.built} built, {self.hits} replayed, "
                f"{self.interpreted} interpreted{why}{loops}{why_loop}>")


# ---- which functions can be planned ---------------------------------------------------------

#: ops whose results the signature decides (scalars, views, tiles of the function) or that run
#: as tile instructions through Instr.run, where the recorder sees them
_FIXED_OPS = frozenset({
    "scf.for", "scf.if", "scf.while", "scf.yield", "scf.condition", "cf.br", "cf.cond_br",
    "func.call", "call", "func.return", "return",
    "pto.get_block_idx", "pto.get_block_num", "pto.get_subblock_idx", "pto.get_subblock_num",
    "pto.make_tensor_view", "pto.partition_view", "pto.subview", "pto.alloc_tile",
    "pto.set_validshape", "pto.tassign", "pto.get_tensor_view_dim", "pto.get_tensor_view_stride",
    "pto.addptr", "pto.castptr", "memref.alloc",
})


def plannable(module: Any, name: str, handlers: dict[str, Any], no_effect: Any) -> str | None:
    """None when every op of function ``name`` and of the functions it calls is one a plan
    can replay (a tile instruction, or an op whose values the signature decides); else the
    first op that is not, as the reason. ``handlers``: the interpreter's op handlers (an op
    without one binds to a registry entry), ``no_effect``: the ops that compile to nothing."""
    seen, todo = {name}, [name]
    while todo:
        f = module.lookup(todo.pop())
        if f is None:
            continue
        for op in f.walk():
            n = op.name
            if n in ("func.call", "call") and op.callee and op.callee not in seen:
                seen.add(op.callee)
                todo.append(op.callee)
            if n in _FIXED_OPS or n in no_effect or n.startswith("arith.") or n == "func.func":
                continue
            h = handlers.get(n)
            if h is None:
                entry = lookup(n)
                if entry is not None and (entry.results or entry.dialect != "tile"):
                    # a micro-op's registers are values the run computes: a replay of the
                    # recorded operands would reuse the first launch's
                    return f"'{n}' (a micro-op) at {op.loc}" if op.loc is not None else n
                if entry is not None and op.results and not entry.returns_event:
                    # its SSA result is what it returns (TTEST's bool): a value of the run
                    return f"'{n}' (returns a value) at {op.loc}" if op.loc is not None else n
                continue  # a tile instruction (bridge-bound), or refused when it runs
            if getattr(h, "instr_name", None) is not None:
                continue  # set_flag / wait_flag / barrier: registry instructions
            return f"'{n}' at {op.loc}" if op.loc is not None else f"'{n}'"
    return None


# ---- signatures -----------------------------------------------------------------------------

def _arg_key(v: Any) -> Any:
    if isinstance(v, np.ndarray):
        # (the dtype itself: equal where the element types are, as its ``str`` is not for
        # types of one size it cannot spell, and ~4x quicker to read)
        return (v.dtype, v.size, v.flags.writeable)
    if isinstance(v, np.generic):
        return (v.dtype.str, v.tobytes())
    if isinstance(v, float):
        return ("float", v.hex())
    return (type(v).__name__, v)


def _span(a: np.ndarray) -> tuple[int, int]:
    p = a.__array_interface__["data"][0]
    return p, p + a.nbytes


def _overlap(roots: list[np.ndarray]) -> bool:
    """May two of the launch's GM arrays share bytes? (Their bounds: arrays that interleave
    without sharing count as overlapping, and the launch runs interpreted.)"""
    if len(roots) == 2:  # (the common launch, without the generator)
        return bool(may_share(roots[0], roots[1]))
    return any(may_share(roots[i], roots[j]) for i in range(1, len(roots)) for j in range(i))


# ---- recording ------------------------------------------------------------------------------

class _NotPlannable(Exception):
    pass


class _Recorder:
    """An observer of the recording launch: each instruction's record (operands, parameters,
    location), the valid regions of its tiles before and after it, and whether it runs once
    for all blocks (decided by shapes and valid regions, as ``Instr._dispatch`` decides)."""

    def __init__(self) -> None:
        self.steps: list[tuple[InstrRecord, list[Any], bool, list[Any]]] = []
        self.after_valid: list[list[Any]] = []
        self.overflow = False
        #: each scf.for run: [op, the step index each iteration starts at, (its end)]
        self.loops: list[list[Any]] = []

    def iterate(self, op: Any, seq: Any) -> Any:
        """``seq`` (a loop's induction values), marking where each iteration starts."""
        mark: list[Any] = [op, []]
        self.loops.append(mark)
        starts = mark[1]
        for j in seq:
            starts.append(len(self.steps))
            yield j
        mark.append(len(self.steps))

    def __call__(self, rec: InstrRecord) -> None:
        if len(self.steps) >= MAX_STEPS:
            if not self.overflow:
                self.overflow = True
                self.steps.clear()
                self.after_valid.clear()
            return
        ins = rec.ins
        m = rec.machine
        vals = list(rec.values)
        once = m.lanes == 1 or (ins.batched and _all_uniform(vals, ins.any_valid))
        pre = [(t, t._vr, t._vc, t._whole) for t in _tiles(vals)]
        self.steps.append((rec, vals, once, pre))

    def after(self, rec: InstrRecord) -> None:
        if self.overflow:
            return
        self.after_valid.append([(t, t._vr, t._vc, t._whole) for t in _tiles(rec.values)])


def _tiles(vals: Any) -> list[Tile]:
    out = []
    for v in vals:
        if isinstance(v, Tile):
            out.append(v)
        elif isinstance(v, tuple):
            out.extend(_tiles(v))
    return out


def _same_valid(a: tuple[Any, ...], b: tuple[Any, ...]) -> bool:
    for x, y in zip(a, b, strict=True):
        if x is y:
            continue
        if isinstance(x, np.ndarray) or isinstance(y, np.ndarray):
            if not (isinstance(x, np.ndarray) and isinstance(y, np.ndarray)
                    and np.array_equal(x, y)):
                return False
        elif x != y:
            return False
    return True


class Plan:
    """One signature's launch: the GM roots to rebind, the views over them, and the calls."""

    def __init__(self, machine: Machine, roots: int, views: list[tuple[GlobalTensor, Any, Any]],
                 calls: list[Callable[[], None]], resets: bool = True) -> None:
        self.machine = machine
        #: does a replay read or write the compiled function's tiles (a call of an
        #: instruction on them, a valid region set, a batch copying one in or back)? Where
        #: none does, a replay needs them in no state: the 1-block short path leaves them as
        #: they are instead of unbinding them (each launch on the general path unbinds them
        #: first, ptoisa/interp/__init__.py)
        self.resets = resets
        self.n_roots = roots
        #: plan-owned GM views and where their flat / array are in the launch's roots
        self.views = views
        self.calls = calls
        #: the roots list the views were last bound to (only the plan rebinds its views)
        self._bound: list[np.ndarray] | None = None

    def run(self, roots: list[np.ndarray]) -> None:
        b = self._bound
        if roots is not b and not (b is not None and len(b) == len(roots)
                                   and all(map(operator.is_, roots, b))):
            # (the same arrays as last time: the views stand, and the planned forms' windows
            # on them, ptoisa/isa/memory/load_store.py)
            self._bound = None
            cache: dict[Any, np.ndarray] = {}
            for g, fd, ad in self.views:
                g.flat = _place(fd, roots, cache)
                g._array = g.flat if ad is fd else _place(ad, roots, cache)
            self._bound = roots
        for c in self.calls:
            c()


def _place(d: Any, roots: list[np.ndarray], cache: dict[Any, np.ndarray]) -> np.ndarray:
    """The array descriptor ``d`` names in this launch's roots: (root, byte offset, dtype,
    size), or a persistent array (the function's own memref.alloc)."""
    if isinstance(d, np.ndarray):
        return d
    a = cache.get(d)
    if a is None:
        i, off, dt, n = d
        r = roots[i]
        if off == 0 and r.dtype == dt and r.size == n:
            a = r
        else:
            a = r.view(np.uint8)[off:off + n * dt.itemsize].view(dt)
        cache[d] = a
    return a


def build(m: Machine, rec: _Recorder, roots: list[np.ndarray], tiles: set[int],
          consts: set[int], stats: PlanStats | None = None) -> Plan:
    """The plan of a recorded launch (raises _NotPlannable for what it cannot rebind); loops
    whose iterations are independent run as a batch (counted in ``stats``)."""
    spans = [_span(r) for r in roots]
    descs: dict[int, Any] = {}

    def desc(a: np.ndarray) -> Any:
        d = descs.get(id(a))
        if d is None:
            p, q = _span(a)
            for i, (lo, hi) in enumerate(spans):
                if lo <= p and q <= hi and a.flags.c_contiguous:
                    d = (i, p - lo, a.dtype, a.size)
                    break
            else:
                if any(lo < q and p < hi for lo, hi in spans):
                    raise _NotPlannable("a GM array partly outside the arguments")
                d = a  # not GM of this launch: the function's own array (memref.alloc)
            descs[id(a)] = d
        return d

    views: dict[int, tuple[GlobalTensor, tuple[Any, ...]]] = {}
    owned: list[tuple[GlobalTensor, Any, Any]] = []

    def value(v: Any) -> Any:
        if v is None or isinstance(v, (int, float, str, np.generic)) or type(v) is Lanes:
            return v
        t = type(v)
        if t is Tile or isinstance(v, Tile):
            if id(v) not in tiles:
                raise _NotPlannable("a tile that is not one of the function's")
            return v
        if isinstance(v, GlobalTensor):
            state = (id(v.spec), id(v.flat), id(v._array),
                     v.offset if type(v.offset) is int else id(v.offset))
            got = views.get(id(v))
            if got is not None:
                if got[1] != state:
                    raise _NotPlannable("a GM view changed during the launch")
                return got[0]
            g = GlobalTensor.__new__(GlobalTensor)
            g.spec, g.flat, g._array, g.name = v.spec, v.flat, v._array, v.name
            g.origin, g.offset, g._span = v.origin, v.offset, v._span
            fd = desc(v.flat)
            ad = fd if v._array is v.flat else desc(v._array)
            views[id(v)] = (g, state)
            owned.append((g, fd, ad))
            return g
        if isinstance(v, tuple):
            return tuple(value(x) for x in v)
        if isinstance(v, np.ndarray):
            if isinstance(v, Lanes) or id(v) in consts:
                return v  # (block indices; a dense arith.constant, made when compiled)
            raise _NotPlannable("an array operand")
        if isinstance(v, enum.Enum):
            return v
        raise _NotPlannable(f"an operand of type {type(v).__name__}")

    if rec.overflow:
        raise _NotPlannable(f"more than {MAX_STEPS} instructions")
    calls: list[Callable[[], None]] = []
    last: dict[int, tuple[Any, ...]] = {}  # tile id -> its valid region after its last use
    if len(rec.after_valid) != len(rec.steps):
        raise _NotPlannable("an instruction did not complete")
    used: set[int] = set()  # the plan-owned views a call uses

    def rebind(g: GlobalTensor, v: GlobalTensor) -> None:
        """Lanes view ``g`` (plan_loops.py) over the arrays of recorded view ``v``."""
        fd = desc(v.flat)
        owned.append((g, fd, fd if v._array is v.flat else desc(v._array)))
        used.add(id(g))

    batches = _batches(m, rec, value, rebind, stats) if BATCH_LOOPS else {}
    skip = 0
    resets = False  # (a call that reads or writes one of the function's tiles: Plan.resets)
    for i, ((r, vals, once, pre), after) in enumerate(zip(rec.steps, rec.after_valid,
                                                          strict=True)):
        if i < skip:
            for t, vr, vc, wh in after:
                last[id(t)] = (vr, vc, wh)
            continue
        b = batches.get(i)
        if b is not None:
            skip, call = b
            calls.append(call)
            resets = resets or getattr(call, "launch_tiles", True)
            for t, vr, vc, wh in after:
                last[id(t)] = (vr, vc, wh)
            continue
        ins = r.ins
        if ins.access == "place" and any(isinstance(v, GlobalTensor) for v in vals):
            raise _NotPlannable("a GM view placed (TASSIGN) during the launch")
        bound = [value(v) for v in vals]
        _note_views(bound, used)
        resets = resets or bool(_tiles(bound))
        # valid regions set between instructions (alloc_tile valid_row / set_validshape):
        # each tile gets the region it had before this instruction, where that is not what
        # its last instruction left
        for t, vr, vc, wh in pre:
            prev = last.get(id(t))
            if prev is None or not _same_valid(prev, (vr, vc, wh)):
                calls.append(_set_valid(t, vr, vc, wh))
                resets = True
        for t, vr, vc, wh in after:
            last[id(t)] = (vr, vc, wh)
        calls.append(bind(ins, m, bound, r.params, once, r.loc))
    # (the views of the iterations a batch runs are not rebound: the batch has its own)
    return Plan(m, len(roots), [o for o in owned if id(o[0]) in used], calls, resets)


def _note_views(vals: Any, used: set[int]) -> None:
    for v in vals:
        if isinstance(v, GlobalTensor):
            used.add(id(v))
        elif isinstance(v, tuple):
            _note_views(v, used)


def _batches(m: Machine, rec: _Recorder, value: Callable[[Any], Any],
             rebind: Callable[[GlobalTensor, GlobalTensor], None], stats: PlanStats | None
             ) -> dict[int, tuple[int, Callable[[], None]]]:
    """The recorded loops that run as one batch (outermost first): first step -> (the step
    after the loop, its call)."""
    out: dict[int, tuple[int, Callable[[], None]]] = {}
    machines: dict[int, Machine] = {}  # (the plan's lanes machines, by lane count)
    done = -1
    for mark in sorted((mk for mk in rec.loops if len(mk) == 3 and len(mk[1]) > 1
                        and mk[1][0] < mk[2]), key=lambda mk: (mk[1][0], -mk[2])):
        op, starts, end = mark
        if starts[0] < done:
            continue  # (inside a loop that runs as a batch)
        for i in range(starts[0], end):  # (operands the plan cannot rebind: not planned)
            for v in rec.steps[i][1]:
                value(v)
        try:
            out[starts[0]] = (end, plan_loops.batch(m, rec.steps, rec.after_valid, starts,
                                                    end, bind, rebind, machines))
            done = end
            if stats is not None:
                stats.batched += 1
        except plan_loops.NotBatched as e:
            if stats is not None:
                at = f" at {op.loc}" if getattr(op, "loc", None) is not None else ""
                stats.why_loop = f"{getattr(op, 'name', 'scf.for')}{at}: {e}"
    return out


def _set_valid(t: Tile, vr: Any, vc: Any, whole: bool) -> Callable[[], None]:
    def call() -> None:
        t._vr, t._vc, t._whole = vr, vc, whole
    return call


# ---- bound calls ----------------------------------------------------------------------------

def bind(ins: Instr, m: Machine, vals: list[Any], params: dict[str, Any], once: bool,
         loc: Any) -> Callable[[], None]:
    """One instruction's call with what the signature decided done: no observers (a planned
    launch has none), the static rules (they passed for these operand types), the target's
    resolved semantics and rules, the lockstep decision (``once``), the run-time rules that
    read only valid regions (they passed for these regions). What depends on the run's state
    (lazily loaded tiles: the copy-on-write barriers, whether the plain or fast form takes
    the use) is checked as ``Instr.run`` checks it. An entry's planned form (``Instr.plan``)
    is its own call for the use, where it declares one. Where no two tiles of ``m`` share
    bytes (``Machine.apart``: a batch's lanes machine while its body runs) and nothing on
    ``m`` owes bytes on chip (``planned.settled``), the tiles a planned form writes have
    nothing to settle first (no tile reads them in place or owes values to their bytes)."""
    on = ins._on.get(m.target) or ins.on(m.target)
    opname = ins.mnemonic
    runtime = tuple(x for x in on.runtime if not getattr(x, "valid_regions_only", False))
    impl = on.impl
    fast = on.fast if once else None
    plain = ins.plain is not None and not params and m.lanes == 1 and on.plain is not None
    dispatch = ins._dispatch

    def fail(e: PtoError) -> PtoError:
        if e.op is None:
            e.op = opname
            e.args = (e.render(),)
        return e.with_loc(loc) if loc is not None else e

    planned = on.plan(ins, m, vals, params) if on.plan is not None and once else None
    if planned is not None:
        written = ins._written
        # (tiles only: a GM operand written settles the tiles that read it in place)
        tiles_only = all(vals[i] is None or isinstance(vals[i], Tile)
                         for i in written if i < len(vals))

        def own() -> None:
            try:
                # (as for fast forms: what it writes settles first)
                if m._lazy and written and not (tiles_only and m.apart and settled(m)):
                    _settle_written(m, written, vals)
                if planned():
                    return
            except PtoError as e:
                raise fail(e) from None
            general()
        general = _general(ins, m, vals, params, plain, fast, runtime, impl, fail)
        own.planned = planned  # type: ignore[attr-defined]  (plan_loops' store fusion)
        return own

    if not once:
        def per_block() -> None:
            try:
                dispatch(m, vals, params, True)
            except PtoError as e:
                raise fail(e) from None
        return per_block

    return _general(ins, m, vals, params, plain, fast, runtime, impl, fail)


def _general(ins: Instr, m: Machine, vals: list[Any], params: dict[str, Any], plain: bool,
             fast: Any, runtime: tuple[Any, ...], impl: Callable[..., Any],
             fail: Callable[[PtoError], PtoError]) -> Callable[[], None]:
    """Instr.run's unobserved path for one use that runs once (one block, or all blocks
    together), its decisions made."""
    written = ins._written

    def call() -> None:
        try:
            if m._lazy and written:
                _settle_written(m, written, vals)
            if fast is not None and fast(ins, m, vals, params):
                return
            for rule in runtime:
                rule(ins, *vals, **params)
            impl(m, *vals, **params)
        except PtoError as e:
            raise fail(e) from None
    # (the plain form first where it may take the use: one call, the general one behind it)
    return (ins.plain_bound(m, vals, call) if plain else None) or call


# ---- launching ------------------------------------------------------------------------------

class Plans:
    """The plans of one compiled function, by signature."""

    def __init__(self) -> None:
        self.by_key: dict[Any, Plan | None] = {}
        #: why a signature has no plan (by_key holds None for it)
        self.refused: dict[Any, str] = {}
        #: signatures launched once, interpreted: the next launch records
        self.seen: set[Any] = set()
        self.stats = PlanStats()
        self.why_not: str | None | bool = False  # False: not asked yet
        #: the plan last replayed (then already the most recently used: by_key's last)
        self.last: Plan | None = None


def replay(fn: Any, m: Machine, bound: Sequence[np.ndarray], key: Any
           ) -> tuple[Callable[[Machine], None], bool] | None:
    """:func:`run`'s replay of a 1-block launch of compiled function ``fn`` on launch machine
    ``m`` with arguments ``bound``, where :func:`run` would replay (the function plannable,
    no GM arguments overlapping, a plan recorded on ``m`` for the signature; the caller sees
    that nothing observes the launch): the call that replays it, once ``m`` is set up for
    the launch (a launch body: it takes ``m``), and whether the function's tiles must be
    unbound first (:attr:`Plan.resets`); None: :func:`run` decides the launch. Every
    argument is an array; ``key`` is their signature, made by the caller as :func:`run`
    makes it (``(1, (_arg_key(v) for each))``)."""
    ps: Plans | None = fn.__dict__.get("_plans")
    if ps is None or ps.why_not is not None or m.lanes != 1:
        return None
    roots = list(bound)
    if _overlap(roots):
        return None
    try:
        plan = ps.by_key.get(key)
    except TypeError:
        return None
    if plan is None or plan.machine is not m:
        return None
    return (lambda _m: _replayed(ps, key, plan, roots)), plan.resets


def _replayed(ps: Plans, key: Any, plan: Plan, roots: list[np.ndarray]) -> None:
    if ps.last is not plan:  # (most recently used last)
        ps.by_key[key] = ps.by_key.pop(key)
        ps.last = plan
    ps.stats.hits += 1
    plan.run(roots)


def run(fn: Any, ctx: Any, bound: list[Any], invoke: Callable[[], Any],
        why_not: Callable[[], str | None]) -> Any:
    """Launch compiled function ``fn`` on ``ctx.machine`` with arguments ``bound``: replay
    its plan for this signature, record one, or run ``invoke()`` (the interpreter).
    ``why_not()``: why the function cannot be planned (see :func:`plannable`), or None."""
    m: Machine = ctx.machine
    ps: Plans | None = fn.__dict__.get("_plans")
    if ps is None:
        ps = fn._plans = Plans()
    st = ps.stats
    if ps.why_not is False:
        ps.why_not = why_not()
    if ps.why_not is not None:
        return _interpret(st, str(ps.why_not), invoke)
    if m.observers:
        return _interpret(st, "the launch is observed", invoke)
    if m.lanes != ctx.block_num and ctx.block_num != 1:
        return _interpret(st, "blocks run one by one", invoke)
    roots = [v for (_k, t, _n), v in zip(fn.args, bound, strict=True)
             if isinstance(v, np.ndarray)]
    if _overlap(roots):
        return _interpret(st, "GM arguments overlap", invoke)
    key = (m.lanes, tuple(_arg_key(v) for v in bound))
    try:
        plan = ps.by_key.get(key)
    except TypeError:  # an argument value that is not hashable: no signature to key on
        return _interpret(st, "an argument without a signature", invoke)
    if plan is not None and plan.machine is m:
        _replayed(ps, key, plan, roots)
        return ()
    if key in ps.by_key and plan is None:
        return _interpret(st, ps.refused.get(key, "not planned"), invoke)
    if key not in ps.seen:
        # a first launch runs as it always did: recording watches the instructions, which
        # takes the general path (about twice an interpreted launch), worth it only for a
        # signature launched again
        if len(ps.seen) >= 4 * KEEP:
            ps.seen.clear()
        ps.seen.add(key)
        return _interpret(st, "first launch of this signature", invoke)
    # record: the interpreter runs the launch, watched by the recorder
    ps.last = None  # (a new signature goes last)
    rec = _Recorder()
    m.observers.append(rec)
    ctx.loops = rec
    try:
        out = invoke()
    except BlockDivergence:
        ps.by_key[key] = None  # (the launch runs its blocks one by one)
        ps.refused[key] = "control flow differs by block"
        raise
    finally:
        m.observers.remove(rec)
        ctx.loops = None
    if out:
        ps.by_key[key] = None
        st.why = ps.refused[key] = "the function returns values"
        st.interpreted += 1
        return out
    funcs = fn.c.funcs.values()
    tiles = {id(t) for f in funcs for t in f.tiles}
    consts = {id(v) for f in funcs for v in f.consts.values() if isinstance(v, np.ndarray)}
    try:
        ps.by_key[key] = build(m, rec, roots, tiles, consts, st)
        st.built += 1
    except _NotPlannable as e:
        ps.by_key[key] = None
        st.why = ps.refused[key] = str(e)
    while len(ps.by_key) > KEEP:
        ps.refused.pop(old := next(iter(ps.by_key)), None)
        del ps.by_key[old]
    st.interpreted += 1
    return out


def _interpret(st: PlanStats, why: str, invoke: Callable[[], Any]) -> Any:
    st.interpreted += 1
    st.why = why
    return invoke()

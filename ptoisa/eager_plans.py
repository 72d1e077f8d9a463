"""Execution plans of eager kernels: a ``pto.launch(kernel, ..., plans=True)`` recorded per
signature and replayed, on the machinery of ``.pto`` plans (:mod:`ptoisa.plans`).

An eager kernel is a Python function calling the intrinsics. Its control flow is Python, which
no guard can see: a plan is a bet that the kernel's Python issues the same instructions on
the same operands whenever the **signature** is the same: the kernel (the function object),
the block count, the target and settings, every array argument's dtype, shape, strides and
writability, and the value of every scalar argument (ints, floats, strings, dtypes, enums,
tuples of them; any other argument, and arguments sharing bytes, and the launch runs
interpreted). A replay runs the recorded instructions on the recorded tiles, the GM views
rebound to this launch's arrays, through the same bound calls as a ``.pto`` plan
(:func:`ptoisa.plans.bind`: each entry's plain, fast or planned form, or its semantics): the
maths is the entries' own, and the bits are the interpreter's.

What ptoisa sees while it records makes the kernel **not plannable** for that signature (the
reason is in :func:`stats`): data passing between the kernel's Python and ptoisa outside an
instruction (``tile.numpy()``, ``tile.read()``, ``tile.write()``, ``tile.fill()``,
``tile.load_numpy()``, ``GlobalTensor.numpy()`` / ``.data()``), a launch inside the kernel,
an instruction that returns a value to the kernel (micro-op registers, ``TTEST`` ...), an
operand the plan cannot rebind (a GM array that is not an argument of the launch, a pointer,
a register), control flow on the block index (the launch runs its blocks one by one), an
instruction that raised.

What ptoisa cannot see is the user's promise when they pass ``plans=True``: the kernel's
Python does not depend on anything outside the signature and what ptoisa returns to it - not
on the *contents* of its argument arrays read directly (``if x[0] > 0``), not on globals or a
closure's mutable state, randomness or time - and does nothing to memory but through the
intrinsics (no ``z[:] = 0`` on an argument). Hence off by default. Two nets under the promise
(besides the refusals above):
a signature is recorded twice (its first two launches, both interpreted) and planned only when
both records are the same instruction sequence on the same operands (tiles matched by order
of first use, GM views by argument, offset and shape, scalars by value, valid regions): a
kernel that draws random numbers, reads the clock or counts its launches usually differs
between the two and is refused (``"the instructions differ between two launches ..."``); and
the plan's first launch (the third) runs interpreted, then replays from the same argument
bytes and compares: a replay that leaves other bytes (a kernel writing an argument from
Python, or branching on contents that changed) refuses the plan, the interpreter's bytes
stand. Replays start from the fourth launch.

A launch's record (of one block or of blocks in lockstep) is searched for runs of steps that
repeat (a Python loop, which the record does not mark): each is handed to
:func:`ptoisa.plan_loops.batch`, which proves from the record alone that the iterations are
independent, or refuses, exactly as for a ``.pto`` ``scf.for``; the proof does not rely on
the run being a loop of the kernel's.

Observed launches (sanitizer, cycle model, ``ptoisa.observe.observing``), mixed and
multi-rank launches run interpreted and are never recorded.
"""

from __future__ import annotations

import enum
import os
import weakref
from collections.abc import Callable
from typing import Any

import numpy as np

from . import observe as _observe
from . import plans as _plans
from . import symbolic as _sym
from .errors import PtoError
from .isa.registry import InstrRecord
from .lanes import BlockDivergence, Lanes
from .memory import Machine
from .plans import Plan, PlanStats, _NotPlannable, _Recorder, _tiles
from .tensor import GlobalTensor
from .tile import Tile

__all__ = ["enabled", "stats"]

#: how many signatures a kernel keeps plans for (the most recently recorded)
KEEP = 8
#: repeated runs of steps shorter than this many steps are not looked for (see _periods)
MAX_PERIOD = 256


def enabled(setting: bool | None) -> bool:
    """Eager plans for this launch: ``plans=`` when given, else the environment's
    ``PTOISA_EAGER_PLANS`` (``1``, ``on``, ``true``, ``yes``: on for every launch, the same
    promise for every kernel), else off (see the module docstring)."""
    if setting is None:
        return os.environ.get("PTOISA_EAGER_PLANS", "").strip().lower() in ("1", "on", "true",
                                                                            "yes")
    if not isinstance(setting, bool):
        raise PtoError(f"plans must be True or False, got {setting!r}")
    return setting


class _KernelPlans:
    """The plans of one kernel function, by signature."""

    __slots__ = ("by_key", "refused", "first", "unchecked", "tiles", "stats", "last")

    def __init__(self) -> None:
        self.by_key: dict[Any, Plan | None] = {}
        #: why a signature has no plan (by_key holds None for it)
        self.refused: dict[Any, str] = {}
        #: the first record's canonical trace of a signature, waiting for the second
        self.first: dict[Any, Any] = {}
        #: signatures whose plan has not been checked against the interpreter yet (_check)
        self.unchecked: set[Any] = set()
        #: the tiles each plan runs on (unplaced before every replay)
        self.tiles: dict[Any, list[Tile]] = {}
        self.stats = PlanStats()
        #: the last replay (see _Last); None after any change to the plans (a record, a
        #: refusal, an eviction)
        self.last: _Last | None = None


class _Last:
    """A kernel's last replayed launch. A launch on the same machine, block count and
    settings objects with the same argument objects, the arrays' dtype, shape, strides and
    writability unchanged, has its signature (every other argument a signature admits is
    immutable: the same object, the same value) and passes its checks of contiguity and
    overlap (they follow from those and the arrays' memory, which an array object keeps):
    it replays the same plan, most recently used already, without building the key."""

    __slots__ = ("args", "arrays", "settings", "blocks", "m", "plan", "tiles", "roots",
                 "stats", "block_idx", "machine_key")

    def __init__(self, args: tuple[Any, ...], settings: dict[str, Any], blocks: int,
                 m: Machine, plan: Plan, tiles: list[Tile], roots: list[np.ndarray],
                 stats: PlanStats) -> None:
        self.args = args
        self.arrays = [(a, a.dtype, a.shape, a.strides, a.flags.writeable) for a in args
                       if isinstance(a, np.ndarray)]
        self.settings = list(settings.items())
        self.blocks, self.m, self.plan, self.tiles, self.roots = blocks, m, plan, tiles, roots
        self.stats = stats  # (the kernel's)
        #: the block indices a lockstep replay on the short path (grid._replayed) sets on m
        self.block_idx = Lanes(np.arange(blocks))
        self.block_idx.flags.writeable = False
        #: the key m is the cached launch machine under (grid.machine_key), once the short
        #: path found it
        self.machine_key: Any = None

    def same(self, args: tuple[Any, ...], settings: dict[str, Any], blocks: int,
             m: Machine) -> bool:
        if m is not self.m or blocks != self.blocks or len(args) != len(self.args) \
                or len(settings) != len(self.settings):
            return False
        for a, b in zip(args, self.args, strict=True):
            if a is not b:
                return False
        for k, v in self.settings:
            if settings.get(k, _ABSENT) is not v:
                return False
        for a, dt, sh, st, w in self.arrays:
            if a.dtype is not dt or a.shape != sh or a.strides != st \
                    or a.flags.writeable != w:
                return False
        return True


_ABSENT = object()

_KERNELS: weakref.WeakKeyDictionary[Any, _KernelPlans] = weakref.WeakKeyDictionary()


def stats(kernel: Callable[..., Any]) -> PlanStats | None:
    """What the eager plans of ``kernel`` did (None: never launched with ``plans=True``)."""
    try:
        kp = _KERNELS.get(kernel)
    except TypeError:
        return None
    return kp.stats if kp is not None else None


#: the kernel last launched with plans (a weak reference) and its plans: the lookup in
#: _KERNELS makes a weak reference every time
_LAST: tuple[Callable[[], Any], _KernelPlans] | None = None


def _plans_of(kernel: Any) -> _KernelPlans | None:
    global _LAST
    last = _LAST
    if last is not None and last[0]() is kernel:
        return last[1]
    try:
        kp = _KERNELS.get(kernel)
        if kp is None:
            kp = _KERNELS[kernel] = _KernelPlans()
        _LAST = (weakref.ref(kernel), kp)
        return kp
    except TypeError:  # not weakly referable or not hashable: no identity to key plans on
        return None


# ---- signatures -----------------------------------------------------------------------------

def _arg_key(v: Any) -> Any:
    """What the kernel's Python may read of an argument (raises _NotPlannable)."""
    if isinstance(v, np.ndarray):
        if type(v) is not np.ndarray:
            raise _NotPlannable(f"an argument of type {type(v).__name__}")
        return ("array", v.dtype, v.shape, v.strides, v.flags.writeable)
    return _value_key(v, "an argument")


def _value_key(v: Any, what: str) -> Any:
    if v is None or isinstance(v, (bool, int, str, enum.Enum)):
        return (type(v), v)
    if isinstance(v, float):
        return (type(v), v.hex())
    if isinstance(v, np.generic):
        return (type(v), v.tobytes())
    if isinstance(v, np.dtype):
        return ("dtype", v.str)
    if isinstance(v, type):
        return ("type", v)
    if isinstance(v, tuple):
        return ("tuple", tuple(_value_key(x, what) for x in v))
    raise _NotPlannable(f"{what} of type {type(v).__name__}")


# ---- recording ------------------------------------------------------------------------------

class _EagerRecorder(_Recorder):
    """The ``.pto`` recorder, plus what only an eager kernel can do: data into or out of its
    Python between instructions (told through ``symbolic.WATCH``), an instruction whose
    result returns to the kernel, an instruction run inside another."""

    def __init__(self) -> None:
        super().__init__()
        self.depth = 0  # instructions running now (entered, not yet after)
        self.why: str | None = None

    def __call__(self, rec: InstrRecord) -> None:
        ins = rec.ins
        if self.why is None:
            if self.depth:
                self.why = f"{ins.name} ran inside another instruction"
            elif ins.results or (not ins.returns_event and ins.sync is None
                                 and ins.access != "place"):
                self.why = (f"{ins.name} returns its result to the kernel's Python (a plan "
                            "cannot see what the kernel does with it)")
        self.depth += 1
        super().__call__(rec)

    def after(self, rec: InstrRecord) -> None:
        self.depth -= 1
        super().after(rec)

    def watch(self, what: str) -> None:
        """(symbolic.WATCH) Tile or GM data passed to or from Python, or a launch started:
        outside an instruction, it is the kernel's Python."""
        if not self.depth and self.why is None:
            self.why = f"the kernel's Python works outside the instructions ({what})"


def _canon_trace(rec: _Recorder, roots: list[np.ndarray]) -> list[Any]:
    """The record as plain values two launches can compare: tiles by order of first use and
    spec, GM views by argument, byte offset, spec and element offset, scalars by value
    (raises _NotPlannable for an operand it cannot state, a GM array outside the arguments)."""
    spans = [_plans._span(r) for r in roots]
    tiles: dict[int, int] = {}

    def gm_array(a: np.ndarray) -> Any:
        p, q = _plans._span(a)
        for i, (lo, hi) in enumerate(spans):
            if lo <= p and q <= hi and a.flags.c_contiguous:
                return (i, p - lo, a.dtype.str, a.size)
        raise _NotPlannable("a GM array that is not an argument of the launch (the kernel's "
                            "own array, or a global)")

    def val(v: Any) -> Any:
        if isinstance(v, Tile):
            k = tiles.setdefault(id(v), len(tiles))
            return ("tile", k, v.spec)
        if isinstance(v, GlobalTensor):
            off = v.offset
            return ("gm", gm_array(v.flat), gm_array(v._array), v.spec,
                    tuple(off.tolist()) if isinstance(off, np.ndarray) else off)
        if isinstance(v, np.ndarray):  # (Lanes: per-block values)
            return ("lanes", v.dtype.str, tuple(v.tolist()))
        if isinstance(v, tuple):
            return tuple(val(x) for x in v)
        return _value_key(v, "an operand")

    def valid(state: list[Any]) -> Any:
        return tuple((val(t), val(vr), val(vc), wh) for t, vr, vc, wh in state)

    out = []
    for (r, vals, once, pre), after in zip(rec.steps, rec.after_valid, strict=True):
        params = tuple(sorted((k, val(x)) for k, x in r.params.items()))
        out.append((r.ins.name, params, tuple(val(v) for v in vals), once, valid(pre),
                    valid(after)))
    return out


def _first_difference(a: list[Any], b: list[Any]) -> str:
    for i, (x, y) in enumerate(zip(a, b, strict=False)):
        if x != y:
            what = x[0] if x[0] == y[0] else f"{x[0]} then {y[0]}"
            return f"step {i + 1}: {what}"
    return f"{len(a)} then {len(b)} instructions"


def _shared_arrays(rec: _Recorder) -> None:
    """Give the recorded GM views over the same memory the same array objects (a view of a
    multi-dimensional argument flattens it anew each time), so a batch sees one array."""
    seen: dict[Any, np.ndarray] = {}

    def one(a: np.ndarray) -> np.ndarray:
        key = (a.__array_interface__["data"][0], a.dtype.str, a.shape)
        return seen.setdefault(key, a)

    for _r, vals, _once, _pre in rec.steps:
        for v in vals:
            if isinstance(v, GlobalTensor):
                same = v._array is v.flat
                v.flat = one(v.flat)
                v._array = v.flat if same else one(v._array)


class _Repeated:
    """What a loop mark of an eager record stands for (its ``name``, in the plan stats)."""

    name = "a repeated run of instructions"
    loc = None


_REPEATED = _Repeated()


def _periods(rec: _Recorder) -> None:
    """Mark runs of steps that repeat (the same instructions on the same tiles, at least
    twice) as loops in ``rec.loops`` (``[_REPEATED, starts, end]``), for plan_loops.batch to prove
    or refuse."""
    steps = rec.steps
    ids: dict[Any, int] = {}
    sig = [ids.setdefault((id(r.ins), tuple(id(v) if isinstance(v, Tile) else type(v)
                                            for v in vals)), len(ids))
           for r, vals, _once, _pre in steps]
    n = len(sig)
    nxt: dict[int, int] = {}
    following = [n] * n
    for i in range(n - 1, -1, -1):
        following[i] = nxt.get(sig[i], n)
        nxt[sig[i]] = i

    def runs(lo: int, hi: int) -> list[tuple[int, int, int]]:
        """The runs (first step, period, end) in steps [lo, hi), and those inside one
        period of each, repeated in every period (a K-loop in each output tile's run: the
        outer run may be refused, its iterations carrying tiles, where the inner ones are
        batched)."""
        out: list[tuple[int, int, int]] = []
        i = lo
        while i < hi:
            j = following[i]
            p = j - i
            if j + p <= hi and p <= MAX_PERIOD and sig[i:j] == sig[j:j + p]:
                k = j + p
                while k + p <= hi and sig[k:k + p] == sig[i:j]:
                    k += p
                out.append((i, p, k))
                inner = runs(i, j)
                out.extend((a + t, q, e + t) for t in range(0, k - i, p) for a, q, e in inner)
                i = k
            else:
                i += 1
        return out
    for i, p, k in runs(0, n):
        rec.loops.append([_REPEATED, list(range(i, k, p)), k])


# ---- launching ------------------------------------------------------------------------------

def nested(what: str) -> None:
    """(launchers) A launch starts: inside a kernel that records, its effects would be
    invisible to the record (it runs on machines of its own), so that kernel is refused."""
    if _sym.WATCH is not None:
        _sym.WATCH(f"{what} inside the kernel: the record does not see its instructions")


def body(kernel: Callable[..., Any], args: tuple[Any, ...], blocks: int,
         settings: dict[str, Any]) -> Callable[[Machine], Any]:
    """The ``run_blocks`` body of ``pto.launch(kernel, *args, plans=True)``: replay the
    signature's plan, record the launch, or run it interpreted."""
    kp = _plans_of(kernel)

    def run(m: Machine) -> Any:
        if kp is None:
            return kernel(*args)
        return _run(kp, kernel, args, blocks, settings, m)
    return run


def _run(kp: _KernelPlans, kernel: Callable[..., Any], args: tuple[Any, ...], blocks: int,
         settings: dict[str, Any], m: Machine) -> Any:
    st = kp.stats
    if m.observers:
        return _interpret(st, "the launch is observed", kernel, args)
    if m.lanes != blocks and blocks != 1:
        return _interpret(st, "blocks run one by one", kernel, args)
    if _sym.WATCH is not None or _sym.TRACER is not None:
        return _interpret(st, "another launch records or exports", kernel, args)
    last = kp.last
    if last is not None and last.same(args, settings, blocks, m):
        st.hits += 1
        _replay(last.plan, last.tiles, last.roots, m)
        return None
    kp.last = None
    try:
        key = (m.lanes, blocks, m.target, tuple(sorted(settings.items())),
               tuple([_arg_key(a) for a in args]))
        hash(key)
    except (_NotPlannable, TypeError) as e:
        why = str(e) if isinstance(e, _NotPlannable) else "a setting without a value to key on"
        return _interpret(st, why, kernel, args)
    arrays = [a for a in args if isinstance(a, np.ndarray)]
    # (GM is flat: a plan rebinds its views' flat arrays to these 1-D views of the arguments,
    # the same memory; an argument that is not C-contiguous can be no GlobalTensor's)
    if not all(a.flags.c_contiguous for a in arrays):
        return _interpret(st, "an array argument that is not C-contiguous", kernel, args)
    roots = [a.reshape(-1) for a in arrays]
    if _plans._overlap(roots):
        return _interpret(st, "array arguments overlap", kernel, args)
    plan = kp.by_key.get(key)
    if plan is not None and plan.machine is m:
        kp.by_key[key] = kp.by_key.pop(key)  # (most recently used last)
        tiles = kp.tiles[key]
        if key in kp.unchecked:
            _check(kp, key, plan, tiles, kernel, args, roots, m)
            return None
        st.hits += 1
        _replay(plan, tiles, roots, m)
        kp.last = _Last(args, settings, blocks, m, plan, tiles, roots, st)
        return None
    if key in kp.by_key and plan is None:
        return _interpret(st, kp.refused.get(key, "not planned"), kernel, args)
    _record(kp, key, kernel, args, roots, m)
    return None


def repeated(kernel: Callable[..., Any], args: tuple[Any, ...], blocks: Any, lockstep: Any,
             settings: dict[str, Any]) -> _Last | None:
    """``pto.launch``'s short path (``grid._replayed``), its guards: the last replay of
    ``kernel`` when this launch is that one again - the kernel last launched with plans, the
    same argument and settings objects (``_Last.same``), nothing observing it (no observers
    on the machine or open ``observing`` block, no recorder or exporter), ``blocks`` an int
    and a lockstep policy that runs the blocks together - so that the general path, handed
    the same launch machine (the caller checks it is still the cached one), would replay it
    in :func:`_run`; else None, having done nothing."""
    got = _LAST
    if got is None or got[0]() is not kernel:
        return None
    last = got[1].last
    if last is None or type(blocks) is not int:  # (check_launch's: bool and numpy ints too)
        return None
    m = last.m
    if m.observers or _observe.active() or _sym.WATCH is not None \
            or _sym.TRACER is not None:
        return None
    if blocks != 1 and not (lockstep is True or (type(lockstep) is str and lockstep == "auto")):
        return None  # (False: one by one; anything else: check_launch's error)
    if blocks == 1 and not (lockstep is True or lockstep is False
                            or (type(lockstep) is str and lockstep == "auto")):
        return None
    return last if last.same(args, settings, blocks, m) else None


def replay_last(last: _Last) -> None:
    """(The short path, on ``last.m`` set up for the launch) the replay :func:`repeated`
    found, counted as :func:`_run` counts it."""
    last.stats.hits += 1
    _replay(last.plan, last.tiles, last.roots, last.m)


def _replay(plan: Plan, tiles: list[Tile], roots: list[np.ndarray], m: Machine) -> None:
    """Run ``plan`` on this launch's arrays. Its tiles start unplaced, as the kernel's new
    tiles start an interpreted launch: each gets fresh storage where an instruction first
    needs it (the machine's arena starts over every launch: storage kept from an earlier one
    would be handed out again under it), poisoned unless written whole."""
    for t in tiles:
        t.unbind()
    # (the recorded launch counted these tiles against the buffers, in this order: the
    # replay's storage is the same tiles', so it skips the accounting, as a .pto memory plan)
    saved, m.planned = m.planned, True
    try:
        plan.run(roots)
    finally:
        m.planned = saved


def _check(kp: _KernelPlans, key: Any, plan: Plan, tiles: list[Tile],
           kernel: Callable[..., Any], args: tuple[Any, ...], roots: list[np.ndarray],
           m: Machine) -> None:
    """A new plan's first launch: run it interpreted, then replay it from the same argument
    bytes; the plan stands when the replay leaves every argument's bytes as the interpreter
    did (this catches a kernel whose Python writes an argument itself, or reads one whose
    contents changed since the records). The interpreter's bytes are the launch's result."""
    st = kp.stats
    st.interpreted += 1
    writable = [r for r in roots if r.flags.writeable]
    before = [r.copy() for r in writable]
    kernel(*args)  # (an error here is the launch's, and the plan stays unchecked)
    kp.unchecked.discard(key)
    want = [r.copy() for r in writable]
    for r, b in zip(writable, before, strict=True):
        np.copyto(r, b)
    m.reset_for_launch()  # (the replay starts as a launch does: nothing owed, no registers)
    why = "its replay left other bytes than the interpreter (the kernel's Python writes an " \
          "argument, or reads one)"
    try:
        _replay(plan, tiles, roots, m)
        same = all(np.array_equal(r.view(np.uint8), w.view(np.uint8))
                   for r, w in zip(writable, want, strict=True))
    except PtoError as e:  # (where the interpreter ran through: the plan is wrong)
        same, why = False, f"its replay raised where the interpreter did not: {e}"
    if not same:
        for r, w in zip(writable, want, strict=True):
            np.copyto(r, w)
        m.reset_for_launch()  # (what the replay left owed reads the bytes put back)
        _refuse(kp, key, why)
    else:
        st.why = ""


def _record(kp: _KernelPlans, key: Any, kernel: Callable[..., Any], args: tuple[Any, ...],
            roots: list[np.ndarray], m: Machine) -> None:
    """Run the launch interpreted, watched; the second record of a signature that matches the
    first becomes its plan."""
    st = kp.stats
    st.interpreted += 1
    rec = _EagerRecorder()
    m.observers.append(rec)
    _sym.WATCH = rec.watch
    try:
        kernel(*args)
    except BlockDivergence:
        _refuse(kp, key, "control flow differs by block")
        raise
    finally:
        _sym.WATCH = None
        m.observers.remove(rec)
    try:
        if rec.why is not None:
            raise _NotPlannable(rec.why)
        if rec.overflow:
            raise _NotPlannable(f"more than {_plans.MAX_STEPS} instructions")
        if len(rec.after_valid) != len(rec.steps):
            raise _NotPlannable("an instruction did not complete")
        trace = _canon_trace(rec, roots)
        first = kp.first.pop(key, None)
        if first is None:
            if len(kp.first) >= 4 * KEEP:
                kp.first.clear()
            kp.first[key] = trace
            st.why = "first record of this signature (a second one must match it)"
            return
        if first != trace:
            raise _NotPlannable("the instructions differ between two launches with this "
                                f"signature ({_first_difference(first, trace)})")
        _shared_arrays(rec)
        if _plans.BATCH_LOOPS:
            _periods(rec)
        tiles = {id(t): t for r, vals, _o, _p in rec.steps for t in _tiles(vals)}
        kp.by_key[key] = _plans.build(m, rec, roots, set(tiles), set(), st)
        kp.tiles[key] = list(tiles.values())
        kp.unchecked.add(key)
        kp.refused.pop(key, None)
        st.built += 1
        st.why = ""
    except _NotPlannable as e:
        _refuse(kp, key, str(e))
    while len(kp.by_key) > KEEP:
        kp.refused.pop(old := next(iter(kp.by_key)), None)
        kp.unchecked.discard(old)
        kp.tiles.pop(old, None)
        del kp.by_key[old]


def _refuse(kp: _KernelPlans, key: Any, why: str) -> None:
    kp.by_key[key] = None
    kp.refused[key] = kp.stats.why = why


def _interpret(st: PlanStats, why: str, kernel: Callable[..., Any], args: tuple[Any, ...]
               ) -> Any:
    st.interpreted += 1
    st.why = why
    return kernel(*args)

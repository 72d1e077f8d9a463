"""Independent iterations of an ``scf.for`` in a ``pto.vecscope``, run as one numpy call per
op over a leading axis of one row per iteration.

A register-level loop (``vlds`` / ``vadd`` / ``vsts`` over 256-byte registers) runs
thousands of micro-ops per tile, and one Python dispatch each is most of its time. When
every op of the loop's body has one of the forms below and the byte ranges the iterations
access prove them independent, each op of the body runs once for all iterations, on
registers of shape (trips, lanes): the entry's own semantics on the same lanes with the
same numpy functions, so the same bits.

- micro-ops whose entries say ``rows=True`` (``isa/registry.py``): their semantics take
  registers and masks of rows, each lane computed alone (binary, unary and vector-scalar
  ops, predicate patterns, compares, ``vdup`` / ``vbr``, ``vbitcast``, ``vcvt``; ``vlds`` /
  ``vsts`` in the forms their ``rows_access`` accepts: dist NORM / NORM_B*, one offset per
  row). Their scalar operands are values defined
  outside the loop, or, for an entry with ``rows_access``, the induction variable;
- an entry with a ``chain`` (``pto.plt_b*``) on a loop-carried count that the loop yields
  back as the op's count result and uses nowhere else (the tail mask PTOAS emits): every
  iteration's count comes from the chain in closed form;
- ``arith.constant`` (the same value every iteration), and the integer ops of
  ``arith.NUMPY_EXACT`` (``addi``, ``subi``, ``muli``, bitwise) on the induction variable:
  their own steps on int64 rows, as on lockstep's per-block values (offsets such as
  ``%i + %base``), computed before anything else runs.

Independent: no byte one iteration may store (all the lanes of its ``vsts``, masked or
not) is loaded or stored by another. Running op after op over all iterations then reads
and writes what running iteration after iteration does: an iteration sees only its own
stores, in its own order. The check is conservative: it may refuse a loop whose masks
made it independent, never accept one that is not.

What the bounds, the values from outside the loop, the pointers and the counts' first
values fix is kept per such key (a chunk loop re-enters the same loop on the same UB
buffers): the accesses' verdict, the rows of the induction variable, of its integer ops and
of the counts, and the results of the chain ops that read nothing but their counts.

The loop runs one iteration at a time (its usual step) when any of this fails, for fewer
than two iterations, and whenever the run observes or differs from a plain one: an observed
machine (sanitizer, cycle model, trace: they see each micro-op, with its own byte ranges,
as it runs), a lockstep machine of several blocks, a timing-only run, tiles owing bytes
lazily, a core of a mixed launch, or a plan recording the launch.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import numpy as np

from ..errors import PtoError, VerifyError
from ..ir.core import Op
from ..vector.regs import VREG_BYTES, Ptr
from . import arith, bridge
from .compiler import CompiledFunc, Env, Step, handler
from .micro import micro_parts, value_spec

#: run independent vecscope loops as batches (``PTOISA_VBATCH=0`` at import: never; tests
#: compare both ways)
ENABLED = os.environ.get("PTOISA_VBATCH", "1") != "0"
#: loops run as one batch / loops that could have been but ran one iteration at a time at
#: run time (observed, dependent, out of bounds ...), since import
stats = {"batched": 0, "per_iteration": 0}


class _Refused(Exception):
    """The loop's body has an op the batch does not run (it runs as it is)."""


def _ints(*xs: Any) -> bool:
    return all(isinstance(x, (int, np.integer)) and not isinstance(x, bool) for x in xs)


def bind_results(u: Any, per: dict[int, Any], out: Any) -> None:
    """A batched micro-op's result rows ``out`` bound to its result slots in ``per`` (one
    result: the value itself; several: one each)."""
    if len(u.ins.results) == 1:
        if u.res:
            per[u.res[0]] = out
    else:
        for slot, v in zip(u.res, out, strict=False):
            per[slot] = v


def scalar_op(cf: CompiledFunc, o: Op, inside: set[int], rows: set[int], once: list[Step],
              int_ops: list[tuple[Step, list[int], int]],
              outside: list[int] | None = None) -> bool:
    """Whether loop-body op ``o`` is one the batch runs as integers: a constant or integer
    arith of values from outside the loop (its step appended to ``once``: the same value every
    iteration), or integer arith reading the rows in ``rows`` (appended to ``int_ops`` as
    (step, operand slots, result slot); its result joins ``rows`` and ``inside``; the slots of
    its operands from outside the loop to ``outside``). Integer arith on another value made
    inside the loop is refused (_Refused)."""
    if o.name == "arith.constant":  # (the same value every iteration: not 'inside')
        once.append(cf.compile_op(o))
        return True
    if not (o.name in arith.NUMPY_EXACT and len(o.operands) == 2 and len(o.results) == 1):
        return False
    # (its step takes int64 rows as lockstep's per-block values: exact modulo 2^64, wrapped to
    # the width, each row what the scalar op gives)
    if any(id(v) in inside and id(v) not in rows for v in o.operands):
        raise _Refused
    if any(id(v) in rows for v in o.operands):
        rows.add(id(o.results[0]))
        inside.add(id(o.results[0]))
        if outside is not None:
            outside.extend(cf.slot(v) for v in o.operands if id(v) not in inside)
        int_ops.append((cf.compile_op(o), [cf.slot(v) for v in o.operands],
                        cf.slot(o.results[0])))
    else:
        once.append(cf.compile_op(o))
    return True


def plain_machine(ctx: Any, target: Any) -> bool:
    """Whether a batched loop may run on ``ctx``'s machine: nothing observing it, no stream,
    one lane, values on, no lazy loads, no enclosing lockstep loops, the target compiled for."""
    m = ctx.machine
    return not (m.observers or m.stream is not None or m.lanes != 1 or not m.values
                or m._lazy or ctx.loops is not None or m.target is not target)


def kept(cache: dict[Any, Any], key: Any, make: Callable[[], Any]) -> Any:
    """What ``make()`` gives for ``key``, kept in ``cache`` (at most 65 keys: cleared when
    full); ``make()`` again when ``key`` is None (not keyable); None, kept nowhere, when
    ``make()`` gives None."""
    got = cache.get(key) if key is not None else None
    if got is None:
        got = make()
        if got is None:
            return None
        if key is not None:
            if len(cache) > 64:
                cache.clear()
            cache[key] = got
    return got


def bind_finals(env: Env, finals: list[tuple[int, int, int]]) -> None:
    """The loop's last iter_args values (``(arg slot, result slot or -1, value)``) bound to
    their slots after a batch."""
    for arg, result, last in finals:
        env[arg] = last
        if result >= 0:
            env[result] = last


def loop_range(env: Env, bounds: tuple[int, int, int], once: list[Step],
               least: int) -> tuple[int, int, int, int] | None:
    """(start, end, step, trips) of an ``scf.for`` whose bound slots ``bounds`` hold integers
    with a positive step and at least ``least`` trips, after its loop-invariant steps ``once``
    ran; None when not (a once-step's PtoError too: the iteration that fails says so, run one
    by one)."""
    i, end, st = (env[s] for s in bounds)
    if not _ints(i, end, st) or st <= 0:
        return None
    i, end, st = int(i), int(end), int(st)
    trips = len(range(i, end, st))
    if trips < least:
        return None
    try:
        for s in once:  # (pure, from values outside the loop; the checks read them)
            s(env)
    except PtoError:
        return None
    return i, end, st, trips


def batched_loop(cf: CompiledFunc, op: Op) -> Callable[[Env], bool] | None:
    """A runner of ``scf.for`` op ``op`` (in a vecscope) that runs its iterations as one
    batch and returns True, or returns False, having changed nothing, when this run cannot
    (the caller then runs the loop's own step); None when the body's ops never can."""
    try:
        return _compile(cf, op)
    except _Refused:
        return None


class _Use:
    """One micro-op of the body: its entry's checked call, operand slots, static specs of
    the operands made in the body (what ``rows_access`` reads before they exist), params,
    results' slots."""

    __slots__ = ("ins", "call", "fixed", "specs", "params", "res", "op")

    def __init__(self, ins: Any, call: Any, fixed: tuple[Any, ...], specs: list[Any],
                 params: dict[str, Any], res: tuple[int, ...], op: Op) -> None:
        self.ins, self.call, self.fixed, self.specs = ins, call, fixed, specs
        self.params, self.res, self.op = params, res, op


def _compile(cf: CompiledFunc, op: Op) -> Callable[[Env], bool]:
    if len(op.regions) != 1 or len(op.regions[0].blocks) != 1:
        raise _Refused
    blk = op.regions[0].block
    ops = list(blk.ops)
    yields: list[Any] = []
    if ops and ops[-1].name == "scf.yield":
        yields = list(ops.pop().operands)
    iv, carried = blk.args[0], list(blk.args[1:])
    if len(op.operands) != 3 + len(carried) or len(yields) != len(carried) \
            or len(op.results) not in (0, len(carried)):
        raise _Refused
    lb, ub, stp = (cf.slot(v) for v in op.operands[:3])
    iv_slot = cf.slot(iv)
    inside: set[int] = {id(iv)} | {id(a) for a in carried}  # (grows op by op)
    uses: dict[int, int] = {}
    for o in ops:
        for v in o.operands:
            uses[id(v)] = uses.get(id(v), 0) + 1
    target = cf.c.target
    items: list[_Use] = []  # the micro-ops, in the body's order
    # ops whose value is the same every iteration (constants, integer ops of values from
    # outside the loop): run first, before anything reads them
    once: list[Step] = []
    # integer arith on the induction variable (offsets): (step, operand slots, result slot)
    int_ops: list[tuple[Step, list[int], int]] = []
    int_rows: set[int] = {id(iv)}  # values that are integer rows
    outside: list[int] = []  # slots of values from outside the loop the int ops read
    counts: list[tuple[int, int, Any, int]] = []  # (arg slot, init slot, chain, result slot)
    for o in ops:
        if o.regions:
            raise _Refused
        if scalar_op(cf, o, inside, int_rows, once, int_ops, outside):
            continue
        ins = bridge.instr_of(o.name)
        if ins is None or ins.dialect != "vpto" or not ins.rows:
            raise _Refused
        fixed, params, res = micro_parts(cf, o, ins)
        plain = [v for v in o.operands]  # (micro-ops of rows take no groups: in order)
        if any(s is not None and not isinstance(s, int) for s in fixed):
            raise _Refused
        specs: list[Any] = []
        k = 0
        for s, opnd in zip(fixed, ins.operands, strict=True):
            if s is None:
                specs.append(None)
                continue
            v = plain[k]
            k += 1
            made = v is not iv and id(v) in inside
            if opnd.kind == "scalar":
                if ins.chain is not None:
                    # the count: a carried value, yielded back as this op's last result and
                    # used by nothing else (every iteration's count is known beforehand)
                    if v not in carried or uses.get(id(v)) != 1 or len(o.results) < 2 \
                            or uses.get(id(o.results[-1]), 0) != 0 \
                            or yields[carried.index(v)] is not o.results[-1]:
                        raise _Refused
                    c = carried.index(v)
                    counts.append((s, cf.slot(op.operands[3 + c]), ins.chain,
                                   cf.slot(op.results[c]) if op.results else -1))
                elif id(v) in int_rows and ins.rows_access is None or \
                        made and id(v) not in int_rows:
                    raise _Refused  # (a scalar of rows: offsets of memory ops only)
            specs.append(value_spec(v.type) if made and id(v) not in int_rows else None)
        inside.update(id(r) for r in o.results)
        items.append(_Use(ins, ins.checked_call(target), fixed, specs, params, res, o))
    if len(counts) != len(carried):
        raise _Refused
    cap = target.buffer_size("UB")
    mem = [u for u in items if u.ins.rows_access is not None]
    row_slots = {iv_slot} | {k for _s, _a, k in int_ops}
    # the chain ops reading nothing but their counts (their results the same for the same
    # first count and trips: kept with the key)
    count_args = {a for a, _i, _c, _r in counts}
    of_counts = {n for n, u in enumerate(items) if u.ins.chain is not None
                 and all(s is None or s in count_args for s in u.fixed)}

    def _key(env: Env, i: int, end: int, st: int) -> tuple[Any, ...] | None:
        """What the memory ops' accesses depend on besides the rows: the bounds and the
        values from outside the loop (pointers, offsets); None when one is not a pointer or
        an integer (then nothing is kept)."""
        parts: list[Any] = [i, end, st]
        for _arg, init, _chain, _result in counts:  # (the counts' first values)
            if not _ints(env[init]):
                return None
            parts.append(int(env[init]))
        for s in outside:  # (what offsets computed from the induction variable add)
            if not _ints(env[s]):
                return None
            parts.append(int(env[s]))
        for u in mem:
            for s, sp in zip(u.fixed, u.specs, strict=True):
                if s is None or sp is not None or s in row_slots:
                    continue
                v = env[s]
                if isinstance(v, Ptr):
                    parts.append((v.space, v.addr, v.dtype.name))
                elif _ints(v):
                    parts.append(int(v))
                else:
                    return None
        return tuple(parts)

    def _accesses_ok(env: Env, per: dict[int, Any], trips: int) -> bool:
        """Every row of every memory op in UB, and the rows independent."""
        writes: list[np.ndarray] = []
        reads: list[np.ndarray] = []
        for u in mem:
            vals = [None if s is None else per[s] if s in per else
                    sp if sp is not None else env[s] for s, sp in zip(u.fixed, u.specs,
                                                                       strict=True)]
            vals = [np.full(trips, int(v), np.int64) if o.kind == "scalar" and _ints(v)
                    else v for v, o in zip(vals, u.ins.operands, strict=True)]
            acc = u.ins.rows_access(vals, u.params)
            if acc is None:
                return False
            for role, starts, n in acc:
                if n != VREG_BYTES or int(starts.min()) < 0 or int(starts.max()) + n > cap:
                    return False  # (the iteration that leaves UB says so, run one by one)
                (reads if role == "in" else writes).append(starts)
        return not writes or _independent(writes, reads, trips)

    def _prepare(env: Env, i: int, end: int, st: int, trips: int
                 ) -> tuple[bool, dict[int, Any], list[tuple[int, int, int]],
                            dict[int, Any]] | None:
        """(the accesses' verdict, the rows of the induction variable, of the integer ops
        and of the counts, the loop's final counts, the chained ops' results so far: none);
        None when this run cannot batch."""
        ivs = np.arange(i, end, st, dtype=np.int64)
        per: dict[int, Any] = {iv_slot: ivs}
        for step, args, k in int_ops:  # (pure: before anything, for the checks too)
            for a in args:
                if a in per:
                    env[a] = per[a]
            try:
                step(env)
            except PtoError:
                return None  # (the iteration that fails says so, run one by one)
            if not isinstance(env[k], np.ndarray) or env[k].shape != ivs.shape:
                return None
            per[k] = env[k]
        finals: list[tuple[int, int, int]] = []
        for arg, init, chain, result in counts:
            c0 = env[init]
            if not _ints(c0):
                return None
            cs = chain(int(c0), trips)
            per[arg] = cs[:-1]
            finals.append((arg, result, int(cs[-1])))
        # every access's bytes, before anything runs
        return _accesses_ok(env, per, trips), per, finals, {}

    cache: dict[tuple[Any, ...], tuple[bool, dict[int, Any], list[tuple[int, int, int]],
                                       dict[int, Any]]] = {}

    def run(env: Env) -> bool:
        ctx = env[0]
        if not plain_machine(ctx, target):
            return False
        m = ctx.machine
        rng = loop_range(env, (lb, ub, stp), once, 2)
        if rng is None:
            return False
        i, end, st, trips = rng
        # what the bounds and the values from outside fix (the verdict on the accesses, the
        # rows of the induction variable, of the integer ops on it and of the counts), kept
        # per key: a chunk loop runs the same vecscope loop on the same UB buffers
        got = kept(cache, _key(env, i, end, st), lambda: _prepare(env, i, end, st, trips))
        if got is None:
            return False
        ok, base, finals, chained = got
        if not ok:
            return False
        per = dict(base)
        ctx.spend(trips, op)
        for n, u in enumerate(items):
            if n in chained:  # (a chain's op on the same counts: the same results)
                out = chained[n]
            else:
                out = _call(u, m, per, env, trips)
                if n in of_counts:
                    chained[n] = out
            bind_results(u, per, out)
        env[iv_slot] = i + (trips - 1) * st
        bind_finals(env, finals)
        return True
    run.parts = _Parts(op, items, once, int_ops, counts, of_counts, iv_slot,  # type: ignore
                       (lb, ub, stp), _prepare, cache, _key)
    return run


class _Parts:
    """What a batched vecscope loop's runner is made of, for a loop around it that runs its
    iterations as one batch too (``interp/vchunk.py``): the loop op, its micro-ops, the
    steps run once, the integer ops on the induction variable, the counts, the chain ops of
    counts alone, the induction variable's slot, the bounds' slots, the preparation (rows,
    counts, the accesses' verdict) and its cache and key."""

    __slots__ = ("op", "items", "once", "int_ops", "counts", "of_counts", "iv_slot",
                 "bounds", "prepare", "cache", "key")

    def __init__(self, op: Op, items: list[_Use], once: list[Step],
                 int_ops: list[tuple[Step, list[int], int]],
                 counts: list[tuple[int, int, Any, int]], of_counts: set[int], iv_slot: int,
                 bounds: tuple[int, int, int], prepare: Callable[..., Any],
                 cache: dict[tuple[Any, ...], Any], key: Callable[..., Any]) -> None:
        self.op, self.items, self.once, self.int_ops = op, items, once, int_ops
        self.counts, self.of_counts, self.iv_slot, self.bounds = counts, of_counts, iv_slot, \
            bounds
        self.prepare, self.cache, self.key = prepare, cache, key


def _call(u: _Use, m: Any, per: dict[int, Any], env: Env, trips: int) -> Any:
    """Micro-op ``u`` once over all the rows."""
    vals = [None if s is None else per[s] if s in per else env[s] for s in u.fixed]
    if u.ins.rows_access is not None:  # (offsets as rows, as the check saw them)
        vals = [np.full(trips, int(v), np.int64) if o.kind == "scalar" and _ints(v)
                else v for v, o in zip(vals, u.ins.operands, strict=True)]
    try:
        return u.call(m, vals, u.params)
    except PtoError as e:
        raise e.at_op(u.op.name, u.op.loc) from None


def _independent(writes: list[np.ndarray], reads: list[np.ndarray], trips: int) -> bool:
    """No register-sized range of ``writes`` (one start per iteration, per store) overlaps
    another range of writes, nor a range of ``reads`` of another iteration."""
    it = np.arange(trips, dtype=np.int64)
    wl = np.concatenate(writes) if len(writes) > 1 else writes[0]
    wit = np.tile(it, len(writes)) if len(writes) > 1 else it
    if not (wl[1:] >= wl[:-1] + VREG_BYTES).all():  # (already in order: the common case)
        order = np.argsort(wl, kind="stable")
        wl, wit = wl[order], wit[order]
        if (wl[1:] < wl[:-1] + VREG_BYTES).any():
            return False  # two stores share bytes (even in one iteration: refused, simply)
    if not reads:
        return True
    rl = np.concatenate(reads) if len(reads) > 1 else reads[0]
    rit = np.tile(it, len(reads)) if len(reads) > 1 else it
    # the stores overlapping a read [rl, rl + 256) are those from index a (the first ending
    # after rl) to b (the last starting before its end): at most two, the stores being
    # disjoint ranges of the same size
    a = np.searchsorted(wl + VREG_BYTES, rl, side="right")
    b = np.searchsorted(wl, rl + VREG_BYTES, side="left")
    n = b - a
    last = len(wl) - 1
    first_ok = (n == 0) | (wit[np.minimum(a, last)] == rit)
    second_ok = (n <= 1) | (wit[np.minimum(a + 1, last)] == rit)
    return bool((first_ok & second_ok & (n <= 2)).all())


def wrap_loops(cf: CompiledFunc, steps: list[Step]) -> list[Step]:
    """``steps`` (a vecscope's body) with each ``scf.for`` that :func:`batched_loop` can run
    as a batch taking that way when it can."""
    out: list[Step] = []
    for s in steps:
        o = cf.op_of.get(id(s))
        run = batched_loop(cf, o) if o is not None and o.name == "scf.for" else None
        if run is None:
            out.append(s)
            continue

        def step(env: Env, run: Callable[[Env], bool] = run, s: Step = s) -> None:
            if ENABLED and run(env):
                stats["batched"] += 1
            else:
                stats["per_iteration"] += 1
                s(env)
        cf.op_of[id(step)] = o  # type: ignore[assignment]
        out.append(step)
    return out


@handler("pto.vecscope")
def _vecscope(cf: CompiledFunc, op: Op) -> Step:
    if len(op.regions) != 1 or op.operands or op.results:
        raise VerifyError(f"'{op.name}' takes no operands, has no results and one region",
                          op=op.name, loc=op.loc)
    body = wrap_loops(cf, cf.block(op.regions[0]))

    def step(env: Env) -> None:
        env[0].machine.vf_seq += 1  # a new vector function (the cycle model tells them apart)
        for s in body:
            s(env)
    return step


@handler("pto.strict_vecscope")
def _strict_vecscope(cf: CompiledFunc, op: Op) -> Step:
    """``pto.strict_vecscope(%a, ...) { ^bb0(%x, ...): ... }``: a vecscope whose body sees only
    its block arguments, bound to the operands (vpto-spec.md "Execution Scopes": it rejects
    implicit capture)."""
    if len(op.regions) != 1 or op.results or len(op.regions[0].blocks) != 1:
        raise VerifyError(f"'{op.name}' has no results and one region of one block",
                          op=op.name, loc=op.loc)
    block = op.regions[0].block
    if len(block.args) != len(op.operands):
        raise VerifyError(f"'{op.name}' passes {len(op.operands)} operand(s) to a body of "
                          f"{len(block.args)} block argument(s)", op=op.name, loc=op.loc)
    inside = {id(a) for a in block.args}
    for inner in op.regions[0].blocks[0].ops:
        for o in inner.walk():
            inside.update(id(r) for r in o.results)
            for r in o.regions:
                for b in r.blocks:
                    inside.update(id(a) for a in b.args)
    for inner in block.ops:
        for o in inner.walk():
            for v in o.operands:
                if id(v) not in inside:
                    raise VerifyError(f"'{op.name}' body uses %{v.name}, defined outside it: "
                                      "a strict vecscope takes every outer value as an operand "
                                      "(implicit capture is rejected)", op=o.name, loc=o.loc)
    outer = [cf.slot(v) for v in op.operands]
    args = [cf.slot(a) for a in block.args]
    body = wrap_loops(cf, cf.block(op.regions[0]))

    def step(env: Env) -> None:
        env[0].machine.vf_seq += 1  # a new vector function (the cycle model tells them apart)
        for d, s in zip(args, outer, strict=True):
            env[d] = env[s]
        for s in body:
            s(env)
    return step


__all__ = ["batched_loop", "wrap_loops"]

"""Static capacity check of a ``.pto`` function: the tiles that are live at one point of the
program must fit in their on-chip buffer together (what PTOAS's memory planning, PlanMemory,
needs to succeed on the NPU).

The sizes are those PTOAS plans with (``Target.plan``: the hardware buffers, except that it
plans Bias and Scaling tiles in far larger spaces, and A5's UB as 248 KiB), each tile rounded
up to the buffer's alignment. Tiles placed automatically are counted: results of
``pto.alloc_tile`` / ``pto.alloc_multi_tile`` (``count`` slots) without ``addr`` and
on-chip ``memref.alloc`` (a tile given an address, by
``addr`` or ``pto.tassign``, is the program's own placement and is checked against its buffer
when placed). As in PlanMemory, a tile is live from its first use (an ``alloc_tile`` alone
takes no space) to its last use (a tile larger than its whole buffer is refused even
unused, at its allocation); a use inside a loop (``scf.for`` / ``scf.while``) that the
allocation is outside of keeps the tile live over the whole loop (every iteration uses it);
a tile first used by the op that uses another, at least as large, for the last time may take
its place (PlanMemory's in-place reuse; ptoisa allows it for every op). Values derived from a tile
(``pto.treshape``, ``pto.subset``, ``scf.if`` results, ...) are uses of it. Each function is
checked on its own (a callee's tiles are not added to the caller's at the call).

The eager API checks the same rule at run time (:meth:`ptoisa.memory.Machine._track`).
"""

from __future__ import annotations

from ..errors import PtoError, VerifyError
from ..ir import types as T
from ..ir.core import Op, Value
from ..targets import LOC_SPACE, Target
from ..tile import TileSpec
from . import bridge

_LOOPS = frozenset({"scf.for", "scf.while", "affine.for"})
_ALLOCS = frozenset({"pto.alloc_tile", "memref.alloc", "pto.alloc_multi_tile"})


def _spec(t: T.Type, target: Target) -> TileSpec | None:
    """A tile type's spec; a multi tile's is its slot's (it takes ``count`` slots)."""
    try:
        multi = bridge.multi_tile_type(t)
        return bridge.tile_spec_of(t if multi is None else multi[0], target)
    except PtoError:
        return None  # an unknown location: the op's own check reports it


def _space(spec: TileSpec, target: Target) -> str:
    """The buffer a tile of ``spec`` is placed in (Machine.space_of, statically)."""
    space = LOC_SPACE[spec.loc]
    if target.plan_size(space)[0] <= 0 and space in ("BIAS", "FB"):
        return "UB"  # no separate Bias/Scaling buffer on this target (as the CPU simulator)
    return space


def check_function(func: Op, target: Target) -> None:
    """Raise VerifyError, located at the allocation that overflows, when the automatically
    placed tiles live at one point of ``func`` exceed a buffer of ``target``."""
    pos: dict[int, int] = {}       # id(op) -> pre-order position
    end: dict[int, int] = {}       # id(op) -> last position nested in it
    parent: dict[int, Op] = {}     # id(op) -> enclosing op
    defs: dict[int, Op] = {}       # id(value) -> defining op
    order: list[Op] = []

    def walk(op: Op, up: Op | None) -> None:
        pos[id(op)] = len(order)
        order.append(op)
        if up is not None:
            parent[id(op)] = up
        for r in op.results:
            defs[id(r)] = op
        for region in op.regions:
            for block in region.blocks:
                for inner in block.ops:
                    walk(inner, op)
        end[id(op)] = len(order) - 1

    walk(func, None)
    specs: dict[int, TileSpec | None] = {}

    def spec_of(t: T.Type) -> TileSpec | None:
        k = id(t)
        if k not in specs:
            specs[k] = _spec(t, target)
        return specs[k]

    # the automatically placed tiles: id(value) -> (value, spec, buffer, bytes)
    fresh: dict[int, tuple[Value, TileSpec, str, int]] = {}
    placed: set[int] = set()
    for op in order:
        if op.name == "pto.tassign" and op.operands:
            placed.add(id(op.operands[0]))
        if op.name not in _ALLOCS or not op.results:
            continue
        if op.name in ("pto.alloc_tile", "pto.alloc_multi_tile") and \
                "addr" in op.keyword_operands:
            continue
        v = op.results[0]
        spec = spec_of(v.type)
        if spec is None:
            continue
        space = _space(spec, target)
        cap, align = target.plan_size(space)
        if cap <= 0:
            continue  # no such buffer: the instruction checks say so
        try:
            multi = bridge.multi_tile_type(v.type)
        except PtoError:
            multi = None
        count = 1 if multi is None else multi[1]  # (PlanMemory: each slot aligned on its own)
        fresh[id(v)] = (v, spec, space, count * (-(-spec.nbytes // align) * align))
    for k in placed:
        fresh.pop(k, None)
    if not fresh:
        return

    # which fresh tiles each value stands for (derived values are uses of their sources)
    roots: dict[int, frozenset[int]] = {}

    def roots_of(v: Value) -> frozenset[int]:
        k = id(v)
        got = roots.get(k)
        if got is not None:
            return got
        roots[k] = frozenset()  # cycles through loop-carried values end here
        if k in fresh:
            out = frozenset((k,))
        else:
            op = defs.get(k)
            out = frozenset()
            if op is not None and op.name not in _ALLOCS:
                srcs = [x for x in op.operands if spec_of(x.type) is not None]
                for region in op.regions:  # scf.if / scf.for results: what the regions yield
                    for block in region.blocks:
                        if block.ops and block.ops[-1].name == "scf.yield":
                            srcs += [x for x in block.ops[-1].operands
                                     if spec_of(x.type) is not None]
                for x in srcs:
                    out |= roots_of(x)
        roots[k] = out
        return out

    # a tile occupies its buffer from its first use (PlanMemory's "gen": an alloc_tile alone
    # takes no space) to its last; a use inside a loop the tile was allocated outside of
    # stretches over the whole loop (every iteration uses it)
    first: dict[int, int] = {}
    last: dict[int, int] = {}
    for op in order:
        untouched = _unplanned(op, target)
        for x in op.operands:
            if spec_of(x.type) is None or id(x) in untouched:
                continue
            for k in roots_of(x):
                d = pos[id(defs[k])]
                lo = hi = pos[id(op)]
                a = parent.get(id(op))
                while a is not None and not pos[id(a)] <= d <= end[id(a)]:
                    if a.name in _LOOPS:
                        lo, hi = min(lo, pos[id(a)]), max(hi, end[id(a)])
                    a = parent.get(id(a))
                first[k] = min(first.get(k, lo), lo)
                last[k] = max(last.get(k, hi), hi)

    for k, (v, spec, space, nbytes) in fresh.items():
        # a tile larger than its whole buffer has no place even unused (PTOAS's PlanMemory
        # words, in bits); a used one is reported where it becomes live, below
        cap = target.plan_size(space)[0]
        if k not in first and nbytes > cap:
            d = defs[k]
            raise VerifyError(f"{space.lower()} overflow, requires {nbytes * 8} bits while "
                              f"{cap * 8} bits available ({space} overflow on {target.name}: "
                              f"%{v.name} ({spec.describe()}) needs {nbytes} bytes, more than "
                              f"the whole {space}, {cap} bytes)", op=d.name, loc=d.loc)

    # the totals only grow where a tile becomes live, so that is where an overflow shows
    for p in sorted(set(first.values())):
        for space in {fresh[k][2] for k in first if first[k] == p}:
            live = [k for k in first if fresh[k][2] == space and first[k] <= p <= last[k]]
            total = sum(fresh[k][3] for k in live) - _reused(
                [fresh[k][3] for k in live if first[k] == p],
                [fresh[k][3] for k in live if last[k] == p and first[k] < p])
            cap = target.plan_size(space)[0]
            if total > cap:
                new = [fresh[k][0] for k in live if first[k] == p]
                raise VerifyError(_message(space, target, total, cap, [fresh[k] for k in live],
                                           new), op=order[p].name, loc=order[p].loc)


def _unplanned(op: Op, target: Target) -> set[int]:
    """The operands (ids) of ``op`` that PTOAS's memory effects of it leave out on
    ``target`` (``Ptoas.unplanned``): not uses for its planning."""
    ins = bridge.instr_for(op) if op.name.startswith("pto.") else None
    names = set()
    if ins is not None and ins.ptoas is not None:
        for t in target.lineage:
            names.update(ins.ptoas.unplanned.get(t, ()))
    if not names:
        return set()
    try:
        b = bridge.bind(op, ins)
    except PtoError:
        return set()  # (the op's own check reports a malformed use)
    return {id(v) for o, v in zip(ins.operands, b.values, strict=False) if o.name in names}


def _reused(gens: list[int], kills: list[int]) -> int:
    """Bytes that tiles becoming live at an op take over from tiles used there for the last
    time (PlanMemory's in-place reuse: a new tile may take the place of one dying at the same
    op that is at least as large; each dying tile serves one)."""
    free = sorted(kills)
    saved = 0
    for g in sorted(gens, reverse=True):
        for i, k in enumerate(free):
            if k >= g:
                saved += g
                del free[i]
                break
    return saved


def _message(space: str, target: Target, total: int, cap: int,
             live: list[tuple[Value, TileSpec, str, int]], new: list[Value]) -> str:
    live = sorted(live, key=lambda e: (e[0] not in new, -e[3]))
    names = [f"%{v.name} ({spec.describe()}) {nb} B" for v, spec, _s, nb in live[:8]]
    if len(live) > 8:
        names.append(f"... {len(live) - 8} more")
    return (f"{space} overflow on {target.name}: the tiles live here need {total} bytes of "
            f"{space}, "
            f"which holds {cap} bytes ({cap // 1024} KiB) [{'; '.join(names)}] (a tile is "
            "live from its first use to its last; a loop that uses it counts as a whole)")

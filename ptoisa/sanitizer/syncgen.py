"""``ptoisa sync``: insert the set_flag / wait_flag / barrier a correct schedule needs (what
PTOAS's InsertSync does), by the sanitizer's model applied to the program text.

The analysis walks each function in program order with one vector clock per pipe, exactly as
the sanitizer does at run time, over a static access model: a tile is its ``alloc_tile`` (by
byte range when it has a constant ``addr``, else by identity; views are their base), a GM
operand is its whole pointer argument; TPUSH reads its tile on its pipe (FIX) and TPOP
writes its tile on MTE2, the frontend forms (``tpush_to_aiv``, ``tpop_from_aic``...)
included. Before an instruction on pipe Q that depends on unordered earlier accesses it
inserts:

* the fewest ``pto.set_flag[<P>, <Q>, <EVENT_IDn>]`` / ``pto.wait_flag[...]`` pairs that
  order them all, greedily: a pair from P carries what P has done and knows at its set, so
  one pair can order dependences from several pipes (ties: the pair that orders most of what
  Q does not know yet, then the producer's own pipe). A pair sits in the innermost block
  holding producer and consumer: the set right after the producer (or the ``scf.if`` / loop
  holding it) when only straight-line code lies between, else right before the wait (then it
  carries all of P's earlier work: a loop-carried dependence); the wait right before the
  consumer (or the op holding it). ``n`` is the lowest id no other pair of the same pipes
  holds over that stretch; a pair already waited for at the same place is reused;
* ``pto.barrier <Q>`` for an earlier access on Q itself that no pair ordered, when the
  target's toolchain takes a barrier on Q (trait ``same_pipe_barriers``: PIPE_V on A2/A3,
  none on A5); other pipes issue in order.

Loops are walked twice (the second pass sees the back-edge dependences: the pair inserted
before the consumer orders the previous iteration's producer) and joined with the state before
the loop (zero trips); both branches of an ``scf.if`` are walked from the same state and
joined. Pairs the clocks already imply (through earlier flags, existing or inserted) are not
inserted: redundant pairs are pruned. A ``pto.barrier <PIPE_ALL>`` ends each function that
needed any synchronisation. Flags already in the program are edges like inserted ones, so a
partly synchronised program gets only what is missing.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..enums import Pipe
from ..errors import PtoError
from ..interp import bridge
from ..interp.compiler import _bracket_args, _literal
from ..interp.sync_ops import SYNC_OP_PIPES
from ..isa.registry import FRONTEND_OPS, REGISTRY
from ..targets import DEFAULT_TARGET, TargetLike, get_target
from ..tile import Tile

_PIPES = (Pipe.S, Pipe.V, Pipe.M, Pipe.MTE1, Pipe.MTE2, Pipe.MTE3, Pipe.FIX)
_BY_VALUE = {p.value: p for p in Pipe}
#: ops (interpreter handlers, not instructions) whose tile result views their tile operand
_TILE_VIEWS = ("pto.subview", "pto.subset")
_EVENT_IDS = 8  # EVENT_ID0..7 per (src, dst) pipe pair


@dataclass
class _Acc:
    op: Any
    pipe: Pipe
    epoch: int
    write: bool
    key: Any
    lo: int
    hi: int
    clk: dict[Pipe, int]  # the pipe's clock right after the access was issued


@dataclass
class _State:
    vc: dict[Pipe, dict[Pipe, int]] = field(default_factory=lambda: {p: {} for p in _PIPES})
    count: dict[Pipe, int] = field(default_factory=lambda: dict.fromkeys(_PIPES, 0))
    accs: list[_Acc] = field(default_factory=list)
    pending: dict[tuple[Pipe, Pipe, int], list[dict[Pipe, int]]] = field(default_factory=dict)

    def copy(self) -> _State:
        return _State({p: dict(v) for p, v in self.vc.items()}, dict(self.count),
                      list(self.accs), {k: list(v) for k, v in self.pending.items()})

    def merge(self, other: _State) -> None:
        """Join at a control-flow merge: ordered only where both paths order it."""
        for p in _PIPES:
            a, b = self.vc[p], other.vc[p]
            self.vc[p] = {q: min(a.get(q, 0), b.get(q, 0)) for q in set(a) | set(b)}
            self.count[p] = max(self.count[p], other.count[p])
        seen = {id(a) for a in self.accs}
        self.accs += [a for a in other.accs if id(a) not in seen]

    def snapshot(self, p: Pipe) -> dict[Pipe, int]:
        s = dict(self.vc[p])
        s[p] = self.count[p]
        return s

    def join(self, p: Pipe, clk: dict[Pipe, int]) -> None:
        v = self.vc[p]
        for q, e in clk.items():
            if e > v.get(q, 0):
                v[q] = e

    def barrier_all(self) -> None:
        j: dict[Pipe, int] = {}
        for p in _PIPES:
            for q, e in self.snapshot(p).items():
                j[q] = max(j.get(q, 0), e)
        self.vc = {p: dict(j) for p in _PIPES}


class SyncGen:
    """Synchronise the functions of one module for one target."""

    def __init__(self, module: Any, target: TargetLike = DEFAULT_TARGET) -> None:
        self.module = module
        self.target = target
        #: a GM reload needs a full drain, not a flag (the target's trait; PTOAS #730)
        self.drain = get_target(target).traits.gm_reload_needs_drain
        self.before: dict[int, list[str]] = {}  # id(op) -> lines to insert before it
        self.ops: dict[int, Any] = {}
        #: id(op) -> (id of its block, index in it); id(block) -> its ops
        self.where: dict[int, tuple[int, int]] = {}
        self.blocks: dict[int, Any] = {}
        #: event ids in use per (block, src, dst): (from index, to index, id)
        self.ids: dict[tuple[int, Pipe, Pipe], list[tuple[int, int, int]]] = {}
        #: id(consumer op) -> the pairs inserted for it: (source pipe, id of the op its
        #: set_flag sits before), replayed when the walk meets it again (loops)
        self.decided: dict[int, list[tuple[Pipe, int]]] = {}
        #: (block, set index, wait index, src, dst) -> the event id of a pair placed there
        self.placed: dict[tuple[int, int, int, Pipe, Pipe], int] = {}
        #: id(block) -> the op whose region holds it; id(op) -> the clocks before it
        self.parent: dict[int, Any] = {}
        self.seen: dict[int, dict[Pipe, dict[Pipe, int]]] = {}
        #: the pipes whose own dependences get a pto.barrier on this target
        self.barriers = get_target(target).traits.same_pipe_barriers
        self.defs: dict[int, Any] = {}
        self.keys: dict[int, tuple[Any, int, int]] = {}
        self.tiles: dict[int, Tile] = {}
        self.alias_of: dict[int, list[Any]] = {}

    # ---- driver ----------------------------------------------------------------------------
    def run(self) -> None:
        for f in self.module.functions():
            if not (f.regions and f.regions[0].blocks):
                continue
            for op in f.walk():
                for r in op.results:
                    self.defs[id(r)] = op
                if op.name in ("scf.if", "scf.for"):
                    self._flow(op)
            st = _State()
            body = f.regions[0].block.ops
            n = sum(len(v) for v in self.before.values())
            self.block(body, st)
            if sum(len(v) for v in self.before.values()) > n:
                ret = next((op for op in reversed(body) if op.name in ("func.return", "return")),
                           None)
                if ret is not None:
                    self._insert(ret, "pto.barrier <PIPE_ALL>")

    def block(self, ops: Any, st: _State, parent: Any = None) -> None:
        self.blocks[id(ops)] = ops
        if parent is not None:
            self.parent[id(ops)] = parent
        for i, op in enumerate(ops):
            self.where[id(op)] = (id(ops), i)
            # the clocks here: what a set_flag placed before this op carries
            self.seen[id(op)] = {q: st.snapshot(q) for q in _PIPES}
            name = op.name
            if name in ("scf.for", "scf.while"):
                entry = st.copy()
                for _ in range(2):
                    for r in op.regions:
                        for blk in r.blocks:
                            self.block(blk.ops, st, op)
                st.merge(entry)
            elif name == "scf.if":
                other = st.copy()
                regions = list(op.regions)
                for blk in regions[0].blocks if regions else ():
                    self.block(blk.ops, st, op)
                for r in regions[1:]:
                    for blk in r.blocks:
                        self.block(blk.ops, other, op)
                st.merge(other)
            elif name in _SYNC_HANDLERS:
                _SYNC_HANDLERS[name](self, op, st)
            elif op.regions:
                for r in op.regions:
                    for blk in r.blocks:
                        self.block(blk.ops, st, op)
            elif name == "pto.alloc_tile" or name == "pto.tassign":
                self._place(op)
            elif name == "pto.multi_tile_get":
                self._multi_slot(op)
            elif name in FRONTEND_OPS:
                self.frontend(op, st)
            else:
                try:
                    b = bridge.check_op(op, self.target)
                except PtoError:
                    b = None
                if b is not None:
                    self.instruction(op, b, st)

    # ---- memory of operands ------------------------------------------------------------------
    def _const(self, v: Any) -> int | None:
        d = self.defs.get(id(v))
        if d is not None and d.name == "arith.constant":
            a = _literal(d)
            try:
                return int(bridge.attr_value(a) if not isinstance(a, (int, float)) else a)
            except (TypeError, ValueError):
                return None
        return None

    def _multi_slot(self, op: Any) -> None:
        """A slot of a multi tile: a constant slot k is part k of the multi tile's bytes, any
        other slot may be every part (so two selections of one slot are one buffer)."""
        if len(op.operands) < 2 or not op.results:
            return
        try:
            got = bridge.multi_tile_type(op.operands[0].type)
        except PtoError:
            got = None
        count = got[1] if got is not None else 1 << 30
        k = self._const(op.operands[1])
        lo, hi = (k, k + 1) if k is not None else (0, count)
        self.keys[id(op.results[0])] = (("multi", id(op.operands[0])), lo, hi)

    def _place(self, op: Any) -> None:
        if op.name == "pto.alloc_tile":
            res = op.results[0]
            addr = op.keyword_operands.get("addr")
        else:
            res, addr = op.operands[0], op.operands[1] if len(op.operands) > 1 else None
        a = self._const(addr) if addr is not None else None
        spec = bridge.tile_spec_of(res.type, self.target)
        if a is None or spec is None:
            self.keys.pop(id(res), None)
            return
        from ..targets import LOC_SPACE

        space = LOC_SPACE.get(spec.loc, spec.loc.name)
        self.keys[id(res)] = (("placed", space), a, a + spec.nbytes)

    def _gm_root(self, v: Any) -> Any:
        seen = 0
        while seen < 64:
            d = self.defs.get(id(v))
            if d is None or not d.operands:
                return v
            v = d.operands[0]
            seen += 1
        return v

    def _flow(self, op: Any) -> None:
        """Tiles flowing through scf.if / scf.for results and loop-carried arguments: each is
        any of the values that may reach it."""
        def yields(r: Any) -> tuple[Any, ...]:
            if not r.blocks or not r.blocks[0].ops:
                return ()
            last = r.blocks[0].ops[-1]
            return tuple(last.operands) if last.name == "scf.yield" else ()
        if op.name == "scf.if":
            for r in op.regions:
                for res, y in zip(op.results, yields(r), strict=False):
                    self.alias_of.setdefault(id(res), []).append(y)
        elif op.name == "scf.for" and op.regions:
            inits = op.operands[3:]
            body = op.regions[0]
            ys = yields(body)
            args = body.blocks[0].args[1:] if body.blocks else ()
            for k, init in enumerate(inits):
                srcs = [init] + ([ys[k]] if k < len(ys) else [])
                if k < len(op.results):
                    self.alias_of.setdefault(id(op.results[k]), []).extend(srcs)
                if k < len(args):
                    self.alias_of.setdefault(id(args[k]), []).extend(srcs)

    def _keys(self, v: Any, seen: set[int] | None = None) -> list[tuple[Any, int, int]]:
        d = self.defs.get(id(v))
        if d is not None and d.name in _TILE_VIEWS and d.operands and id(v) not in self.keys \
                and bridge.tile_spec_of(getattr(d.operands[0], "type", None),
                                        self.target) is not None:
            return self._keys(d.operands[0], seen)  # a window of a tile: the tile's bytes
        src = self.alias_of.get(id(v))
        if not src:
            return [self._key(v)]
        seen = seen if seen is not None else set()
        if id(v) in seen:
            return []
        seen.add(id(v))
        out: list[tuple[Any, int, int]] = []
        for x in src:
            out += self._keys(x, seen)
        return out or [self._key(v)]

    def _key(self, v: Any) -> tuple[Any, int, int]:
        k = self.keys.get(id(v))
        if k is not None:
            return k
        t = getattr(v, "type", None)
        if bridge.tile_spec_of(t, self.target) is None:  # GM (views of a pointer argument)
            return (("gm", id(self._gm_root(v))), 0, 1 << 62)
        return (("tile", id(v)), 0, 1 << 62)

    def _tile(self, v: Any) -> Any:
        t = self.tiles.get(id(v))
        if t is None:
            spec = bridge.tile_spec_of(getattr(v, "type", None), self.target)
            if spec is None:
                return None
            t = self.tiles[id(v)] = Tile.of(spec, name=getattr(v, "name", None))
        return t

    # ---- one instruction ---------------------------------------------------------------------
    def instruction(self, op: Any, b: Any, st: _State) -> None:
        ins = b.ins
        vals = b.values
        if ins.access == "view" and len(vals) >= 2 and vals[0] is not None:
            self.keys[id(vals[0])] = self._key(vals[1])
            return
        if ins.access == "place":
            return
        dummies = [self._tile(v) if v is not None and not isinstance(v, (tuple, bridge.Const))
                   else None for v in vals]
        p = ins.pipe_on(dummies) if ins.pipe_of is not None else ins.pipe
        if p is Pipe.ALL:
            st.barrier_all()
            p = Pipe.S
        accs: list[tuple[bool, tuple[Any, int, int]]] = []
        for o, v in zip(ins.operands, vals, strict=False):
            if v is None or isinstance(v, bridge.Const) or o.kind in ("scalar", "simt", "enum"):
                continue
            items = v if isinstance(v, tuple) else (v,)
            for x in items:
                if isinstance(x, bridge.Const) or (o.kind == "any" and bridge.tile_spec_of(
                        getattr(x, "type", None), self.target) is None):
                    continue  # (an "any" operand is an access when it is a tile: TGATHER's
                    # index tile, not its mask pattern)
                for k in self._keys(x):
                    if o.role in ("in", "inout"):
                        accs.append((False, k))
                    if o.role != "in":
                        accs.append((True, k))
        self.access(op, p, accs, st)

    def frontend(self, op: Any, st: _State) -> None:
        """``pto.tpush_to_aiv`` / ``tpop_from_aic`` / ``tfree_from_*``: a push reads its tile
        on the instruction's pipe, a pop writes its result tile (MTE2), a free touches no
        tile (the slots live outside the tile buffers, as in the interpreter)."""
        ins = REGISTRY[FRONTEND_OPS[op.name]]
        accs: list[tuple[bool, tuple[Any, int, int]]] = []
        if ins.name == "TPUSH" and op.operands:
            accs = [(False, k) for k in self._keys(op.operands[0])]
        elif ins.name == "TPOP" and op.results:
            accs = [(True, k) for k in self._keys(op.results[0])]
        self.access(op, ins.pipe, accs, st)

    def access(self, op: Any, p: Pipe, accs: list[tuple[bool, tuple[Any, int, int]]],
               st: _State) -> None:
        """Order instruction ``op`` on pipe ``p`` after the earlier accesses its ``accs``
        depend on, inserting what is missing; then record its accesses."""
        need: dict[Pipe, _Acc] = {}  # source pipe -> its latest unordered access
        vc = st.vc[p]
        same = p.value in self.barriers  # this pipe's own dependences need a barrier
        reload = False  # GM another pipe stored, read again: a flag is not enough (#730)
        for write, (key, lo, hi) in accs:
            for a in st.accs:
                if a.key != key or a.lo >= hi or lo >= a.hi or not (write or a.write):
                    continue
                if (a.pipe is p and not same) or vc.get(a.pipe, 0) >= a.epoch:
                    continue
                reload = reload or (a.write and not write and a.pipe is not p
                                    and key[0] == "gm" and self.drain)
                if a.pipe not in need or need[a.pipe].epoch < a.epoch:
                    need[a.pipe] = a
        if reload:  # drain every pipe: the store has reached GM before the load issues
            self._insert(op, "pto.barrier <PIPE_ALL>")
            st.barrier_all()
            need.clear()
        for r, at in self.decided.get(id(op), ()):  # inserted in an earlier pass: replay
            st.join(p, self.seen[at][r])
        remaining = {q: a for q, a in need.items() if q is not p and vc.get(q, 0) < a.epoch}
        while remaining:
            self._cover(op, p, remaining, st)
        if p in need and vc.get(p, 0) < need[p].epoch:  # not ordered through another pipe
            self._insert(op, f"pto.barrier <{p.value}>")
            vc[p] = st.count[p]
        st.count[p] += 1
        e = st.count[p]
        clk = st.snapshot(p)
        for write, (key, lo, hi) in accs:
            st.accs.append(_Acc(op, p, e, write, key, lo, hi, clk))

    def _chain(self, op: Any) -> list[tuple[int, int]]:
        """(block, index) of ``op`` and of each op around it, innermost first."""
        out: list[tuple[int, int]] = []
        x = op
        while (w := self.where.get(id(x))) is not None:
            out.append(w)
            x = self.parent.get(w[0])
            if x is None:
                break
        return out

    def _placement(self, prod: Any, op: Any, after: bool) -> tuple[int, int, int]:
        """Where a pair ordering ``op`` after ``prod`` goes: (block, index of the op its
        set_flag sits before, index of the op its wait_flag sits before), in the innermost
        block holding both (a producer in a branch or loop and a consumer after it: after the
        scf.if / loop, before the op holding the consumer). The set follows the producer when
        ``after`` and nothing but straight-line code lies between (a flag held across a region
        would share its event ids with the region's own pairs), else it sits right before the
        wait (it then carries all of the source pipe's earlier work: a loop-carried
        dependence, or one the source pipe's clock covers)."""
        cons = self._chain(op)
        prods = {b: i for b, i in self._chain(prod)}
        blk, j = cons[0]
        i = -1
        for b, k in cons:
            if b in prods:
                blk, i, j = b, prods[b], k
                break
        ops = self.blocks[blk]
        if after and 0 <= i < j and not any(o.regions for o in ops[i + 1:j]):
            return blk, i + 1, j
        return blk, j, j

    def _cover(self, op: Any, p: Pipe, remaining: dict[Pipe, _Acc], st: _State) -> None:
        """One set_flag / wait_flag pair into pipe ``p`` that orders the most of
        ``remaining`` (dropped from it): the source pipe whose clock at the set covers most
        of them, then most of the other accesses ``p`` does not know yet (a pair from the
        cube that has waited for MTE1 also orders MTE1's reads: one pair, not two), then the
        producer's own pipe (its set can follow it)."""
        first = min(remaining, key=_PIPES.index)
        best: tuple[tuple[int, ...], Pipe, tuple[int, int, int], dict[Pipe, int]] | None = None
        vc = st.vc[p]
        for r in _PIPES:
            if r is p or not st.count[r]:
                continue
            prod = remaining[r].op if r in remaining else remaining[first].op
            new = self._placement(prod, op, r in remaining)
            # a pair of these pipes already waited for at the same place serves as well
            there = [(b, s, j) for b, s, j, q, d in self.placed
                     if (b, j, q, d) == (new[0], new[2], r, p)]
            for plc in [new, *there]:
                carried = self.seen[id(self.blocks[plc[0]][plc[1]])][r]
                cov = sum(carried.get(q, 0) >= a.epoch for q, a in remaining.items())
                if not cov:
                    continue
                more = sum(vc.get(a.pipe, 0) < a.epoch <= carried.get(a.pipe, 0)
                           for a in st.accs if a.pipe is not p)
                score = (cov, plc in there, more, r in remaining, plc[1] < plc[2])
                if best is None or score > best[0]:
                    best = (score, r, plc, carried)
        if best is None:  # (cannot happen: a producer's own clock covers it) pair at it
            r = first
            plc = self._placement(remaining[r].op, op, False)
            carried = st.snapshot(r)
        else:
            _, r, plc, carried = best
        self._pair(op, r, p, plc)
        st.join(p, carried)
        self.decided.setdefault(id(op), []).append((r, id(self.blocks[plc[0]][plc[1]])))
        for q in [q for q, a in remaining.items() if carried.get(q, 0) >= a.epoch]:
            del remaining[q]

    def _pair(self, op: Any, q: Pipe, p: Pipe, plc: tuple[int, int, int]) -> None:
        """set_flag before op ``start``, wait_flag before op ``j`` of block ``blk``, with the
        lowest event id free over that stretch (the same pair when it is already there)."""
        blk, start, j = plc
        ops = self.blocks[blk]
        eid = self.placed.get((blk, start, j, q, p))
        if eid is None:
            held = self.ids.get((blk, q, p), ())
            used = {e for s, t, e in held if s <= j and start <= t}
            eid = next((k for k in range(_EVENT_IDS) if k not in used), None)
            if eid is None:  # every id held over the stretch: pair right before the op
                start = j
                used = {e for s, t, e in held if s <= j <= t}
                eid = next((k for k in range(_EVENT_IDS) if k not in used), 0)
            self.ids.setdefault((blk, q, p), []).append((start, j, eid))
            self.placed[(blk, start, j, q, p)] = eid
        self._insert(ops[start], f"pto.set_flag[<{q.value}>, <{p.value}>, <EVENT_ID{eid}>]")
        self._insert(ops[j], f"pto.wait_flag[<{q.value}>, <{p.value}>, <EVENT_ID{eid}>]")

    def _insert(self, op: Any, line: str) -> None:
        lines = self.before.setdefault(id(op), [])
        self.ops[id(op)] = op
        if line not in lines:
            lines.append(line)

    # ---- output ------------------------------------------------------------------------------
    def render(self, text: str) -> str:
        """``text`` with the inserted lines, each before its op's line, at its indentation."""
        src = text.splitlines()
        at: dict[int, list[str]] = {}
        for k, lines in self.before.items():
            op = self.ops[k]
            if op.loc is None:
                raise PtoError(f"{op.name}: no source location to insert synchronisation at")
            ln = op.loc.line - 1
            indent = src[ln][:len(src[ln]) - len(src[ln].lstrip())]
            at.setdefault(ln, [])
            for line in lines:
                if indent + line not in at[ln]:
                    at[ln].append(indent + line)
        out: list[str] = []
        for i, line in enumerate(src):
            out += at.get(i, [])
            out.append(line)
        return "\n".join(out) + ("\n" if text.endswith("\n") else "")


def _pipes_of(gen: SyncGen, op: Any, n_end: int) -> list[Any]:
    items = _bracket_args(op)
    out: list[Any] = []
    for i, x in enumerate(items):
        if isinstance(x, str):
            if i < n_end:
                key = x.rsplit("<", 1)[-1].rstrip(">").strip()
                x = SYNC_OP_PIPES.get(key, x)
            pipe = _BY_VALUE.get(x)
            if pipe is not None:
                out.append(pipe)
                continue
            if x.upper().startswith("EVENT_ID"):
                out.append(int(x[8:]))
                continue
        out.append(gen._const(x) if not isinstance(x, str) else x)
    return out


def _set(gen: SyncGen, op: Any, st: _State, ends: int = 0) -> None:
    src, dst, eid = _pipes_of(gen, op, ends)[:3]
    if isinstance(src, Pipe) and isinstance(dst, Pipe):
        st.pending.setdefault((src, dst, eid), []).append(st.snapshot(src))


def _wait(gen: SyncGen, op: Any, st: _State, ends: int = 0) -> None:
    src, dst, eid = _pipes_of(gen, op, ends)[:3]
    q = st.pending.get((src, dst, eid))
    if q and isinstance(dst, Pipe):
        st.join(dst, q.pop(0))


def _barrier(gen: SyncGen, op: Any, st: _State, ends: int = 0) -> None:
    (p,) = _pipes_of(gen, op, ends)[:1]
    if p is Pipe.ALL:
        st.barrier_all()
    elif isinstance(p, Pipe):
        st.vc[p][p] = st.count[p]


_SYNC_HANDLERS: dict[str, Any] = {
    "pto.set_flag": _set, "pto.set_flag_dyn": _set,
    "pto.wait_flag": _wait, "pto.wait_flag_dyn": _wait,
    "pto.record_event": lambda g, o, s: _set(g, o, s, 2),
    "pto.wait_event": lambda g, o, s: _wait(g, o, s, 2),
    "pto.barrier": _barrier, "pto.barrier_sync": lambda g, o, s: _barrier(g, o, s, 1),
}


def insert_sync(text: str, filename: str = "<stdin>", target: TargetLike = DEFAULT_TARGET) -> str:
    """The program ``text`` with the synchronisation it needs inserted."""
    from ..text import parse

    module = parse(text, filename)
    gen = SyncGen(module, target)
    gen.run()
    return gen.render(text)

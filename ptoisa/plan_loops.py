"""Independent loop iterations of an execution plan, run as one batch over lanes.

A kernel that loops over small tiles spends its time in Python per instruction, once per
iteration. When a recorded ``scf.for`` (:mod:`ptoisa.plans`) proves its iterations
independent, the plan runs its body once on a **lanes machine** of trip-count lanes, as a
lockstep launch runs blocks (:mod:`ptoisa.grid`): each tile of the body becomes a tile with
a leading axis of one row per iteration, each GM view a view with one offset per iteration,
and every instruction runs once for all iterations (its entry's own semantics, batched as
for blocks: the same bits per lane). What the loop leaves for the rest of the launch (the
last iteration's tiles, the flags it logged) is put back on the launch's machine after it.

Independent means, from the record of the launch (every iteration's instructions and
operands), all of:

- every iteration runs the same instructions on the same tiles with the same scalars and
  parameters; only GM views' offsets differ (no data-dependent control flow, no scalar
  computed from the induction variable reaches an instruction);
- no tile carries a value between iterations: each tile the body writes is written (as an
  ``out`` operand, its whole valid region the whole tile) before the iteration reads it; a
  tile the body only reads keeps its value from before the loop;
- no iteration writes GM bytes another iteration reads or writes;
- every instruction is a batched data instruction of a family whose semantics write the
  whole valid region of their destination (elementwise, tile-scalar, row reductions and
  expansions, matrix, TLOAD / TSTORE), or a flag whose only effect is its entry in the
  machine's sync log (``log_entry`` on its planned call);
- no placement or view instruction runs from the loop on and no tile of the body shares
  bytes with another tile of the function (each lane has storage of its own).

A loop that fails one of these runs as recorded, one call per instruction and iteration, and
the reason is kept in the function's plan stats (``why_loop``).
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from typing import Any

import numpy as np

from . import lazy
from .isa.registry import Instr, InstrRecord, _all_uniform
from .memory import Machine, pop, push
from .tensor import GlobalTensor, lane_span
from .tile import Tile

#: families whose batched entries write the whole valid region of each ``out`` operand
_WHOLE_WRITERS = frozenset({"elementwise", "tile-scalar", "reduce", "matrix", "memory"})
#: memory entries that may be batched (TASSIGN places: never)
_MEMORY = frozenset({"TLOAD", "TSTORE"})
#: the most iterations one batch runs (a lane each: memory)
MAX_LANES = 4096

Step = tuple[InstrRecord, list[Any], bool, list[Any]]
Bind = Callable[[Instr, Machine, list[Any], dict[str, Any], bool, Any], Callable[[], None]]


class NotBatched(Exception):
    """Why a loop's iterations do not run as a batch."""


def _role(ins: Instr, p: int, vals: list[Any]) -> str:
    if p >= len(ins.operands):
        return "in"
    o = ins.operands[p]
    r = ins.access_roles.get(o.name, o.role)
    return r(vals) if callable(r) else r


def _name(t: Tile) -> str:
    return f"tile %{t.name}" if t.name else "a tile"


def _scalar(v: Any) -> bool:
    return v is None or isinstance(v, (int, float, str, np.generic, enum.Enum))


def _same_params(a: dict[str, Any], b: dict[str, Any]) -> bool:
    if a.keys() != b.keys():
        return False
    for k, x in a.items():
        y = b[k]
        if x is y:
            continue
        if not _scalar(x) or not _scalar(y) or type(x) is not type(y) or x != y:
            return False
    return True


def batch(m: Machine, steps: list[Step], after: list[list[Any]], starts: list[int], end: int,
          bind: Bind, rebind: Callable[[GlobalTensor, GlobalTensor], None]
          ) -> Callable[[], None]:
    """The call that runs iterations ``steps[starts[0]:end]`` (iteration k from
    ``starts[k]``) as one batch on a lanes machine; NotBatched says why not. ``bind``:
    plans.bind; ``rebind(lanes_view, recorded_view)``: the plan rebinds the lanes view's
    arrays to each launch's arguments as it rebinds the recorded view's."""
    t_n = len(starts)
    if m.lanes != 1:
        raise NotBatched("the launch runs blocks in lockstep")
    if m.mode != "auto":
        raise NotBatched("tiles are placed by hand")
    if t_n > MAX_LANES:
        raise NotBatched(f"more than {MAX_LANES} iterations")
    bounds = [*starts, end]
    n = bounds[1] - bounds[0]
    if any(bounds[k + 1] - bounds[k] != n for k in range(t_n)):
        raise NotBatched("iterations run different numbers of instructions")
    s0 = starts[0]
    for i in range(s0, len(steps)):
        if steps[i][0].ins.access != "data" and steps[i][0].ins.sync is None:
            raise NotBatched(f"{steps[i][0].ins.name} places or views a tile from the loop on")

    # ---- the same instructions in every iteration; GM offsets per iteration
    offsets: dict[tuple[int, int], list[int]] = {}
    for j in range(n):
        r0, v0 = steps[s0 + j][0], steps[s0 + j][1]
        ins = r0.ins
        if ins.sync is None and (ins.access != "data" or ins.results or not ins.batched
                                 or ins.family not in _WHOLE_WRITERS
                                 or (ins.family == "memory" and ins.name not in _MEMORY)):
            raise NotBatched(f"{ins.name} is not an instruction a batch runs")
        for p, a in enumerate(v0):
            if isinstance(a, GlobalTensor):
                if type(a.offset) is not int or a.spec.dtype.packed:
                    raise NotBatched(f"{ins.name}: a GM view a batch cannot offset per lane")
                offsets[j, p] = [a.offset]
            elif isinstance(a, Tile):
                if type(a) is not Tile:
                    raise NotBatched(f"{ins.name}: a tile of another kind")
            elif not _scalar(a):
                raise NotBatched(f"{ins.name}: an operand of type {type(a).__name__}")
        for k in range(1, t_n):
            rk, vk = steps[starts[k] + j][0], steps[starts[k] + j][1]
            if rk.ins is not ins or not _same_params(rk.params, r0.params) \
                    or len(vk) != len(v0):
                raise NotBatched("iterations run different instructions")
            for p, (a, b) in enumerate(zip(v0, vk, strict=True)):
                if isinstance(a, GlobalTensor):
                    if not (isinstance(b, GlobalTensor) and b.spec is a.spec and b.flat is a.flat
                            and b._array is a._array and type(b.offset) is int):
                        raise NotBatched(f"{ins.name}: iterations use different GM views")
                    offsets[j, p].append(b.offset)
                elif a is not b and (type(a) is not type(b) or isinstance(a, Tile) or a != b):
                    raise NotBatched(f"{ins.name}: an operand that changes between iterations "
                                     "(a value computed from the induction variable)")

    # ---- tiles: no value carried; whole valid regions
    body = steps[s0:s0 + n]
    written: set[int] = set()
    tiles: dict[int, Tile] = {}
    for r, vals, _once, _pre in body:
        for p, v in enumerate(vals):
            if isinstance(v, Tile):
                tiles[id(v)] = v
                if _role(r.ins, p, vals) in ("out", "inout", "scratch"):
                    written.add(id(v))
    for i in range(s0, end):
        for state in (steps[i][3], after[i]):
            for t, _vr, _vc, whole in state:
                if not whole:
                    raise NotBatched(f"{_name(t)} has a partial valid region")
    defined: set[int] = set()
    scratch: set[int] = set()
    invariant: dict[int, Tile] = {}
    for r, vals, _once, _pre in body:
        ins = r.ins
        roles = [_role(ins, p, vals) for p in range(len(vals))]
        for v, role in zip(vals, roles, strict=True):
            if isinstance(v, Tile) and role not in ("out", "scratch") and id(v) not in defined:
                if id(v) in written:
                    raise NotBatched(f"{_name(v)} carries a value between iterations "
                                     f"({ins.name} reads it before the iteration writes it)")
                invariant[id(v)] = v
        for v, role in zip(vals, roles, strict=True):
            if isinstance(v, Tile):
                if role in ("out", "inout"):
                    defined.add(id(v))
                    scratch.discard(id(v))
                elif role == "scratch" and id(v) not in defined:
                    scratch.add(id(v))
    before = {id(v) for st in steps[:s0] for v in st[1] if isinstance(v, Tile)}
    for t in invariant.values():
        if id(t) not in before:
            raise NotBatched(f"{_name(t)} is read in the loop before anything writes it")
    later = {id(v) for st in steps[end:] for v in st[1] if isinstance(v, Tile)}
    for i in scratch & later:
        raise NotBatched(f"{_name(tiles[i])} is used after the loop, which left it only "
                         "as a scratch")
    # each lane has storage of its own: no tile of the body may share bytes with another
    seen = {id(v): v for st in steps for v in st[1] if isinstance(v, Tile)}
    for t in tiles.values():
        for u in seen.values():
            if u is not t and t._buf is not None and u._buf is not None \
                    and lazy.may_share(t._buf, u._buf):
                raise NotBatched(f"{_name(t)} shares bytes with {_name(u)}")

    # ---- GM: no iteration writes what another reads or writes
    spans: list[tuple[int, int, int, bool]] = []
    for (j, p), offs in offsets.items():
        r, vals = body[j][0], body[j][1]
        g = vals[p]
        reach = g.spec.reach
        if reach is None:
            continue
        isz = g.flat.itemsize
        base = g.flat.__array_interface__["data"][0]
        w = _role(r.ins, p, vals) in ("out", "inout", "scratch")
        for k, o in enumerate(offs):
            spans.append((base + (o + reach[0]) * isz, base + (o + reach[1] + 1) * isz, k, w))
    spans.sort()
    active: list[tuple[int, int, int, bool]] = []
    for s in spans:
        active = [a for a in active if a[1] > s[0]]
        for a in active:
            if a[2] != s[2] and (a[3] or s[3]):
                raise NotBatched("iterations write GM bytes another iteration reads or writes")
        active.append(s)

    # ---- the lanes machine, its tiles and views, the calls
    lm = Machine(m.target, lanes=t_n, permissive=m.permissive,
                 matmul_accumulation=m.matmul_accumulation)
    lm.lazy_loads = True
    lm.quiet = True
    shadow: dict[int, Tile] = {}
    for i, t in tiles.items():
        sh = Tile.of(t.spec, name=t.name)
        shadow[i] = sh
    state = {id(t): (vr, vc, wh) for r in body for t, vr, vc, wh in r[3]}
    for i, sh in shadow.items():
        sh._vr, sh._vc, sh._whole = state[i]
    views: dict[tuple[int, int], GlobalTensor] = {}
    gm_written: list[GlobalTensor] = []
    for (j, p), offs in offsets.items():
        g0 = body[j][1][p]
        g = GlobalTensor.__new__(GlobalTensor)
        g.spec, g.flat, g._array, g.name, g.origin = g0.spec, g0.flat, g0._array, g0.name, \
            g0.origin
        off = np.asarray(offs, np.int64)
        g.offset, g._span = off, lane_span(off)
        rebind(g, g0)
        views[j, p] = g
        if _role(body[j][0].ins, p, body[j][1]) in ("out", "inout", "scratch"):
            gm_written.append(g)
    calls: list[Callable[[], None]] = []
    log: list[Any] = []
    for j, (r, vals, _once, _pre) in enumerate(body):
        ins = r.ins
        if ins.sync is not None:
            on = ins._on.get(m.target) or ins.on(m.target)
            pc = on.plan(ins, m, vals, r.params) if on.plan is not None else None
            entry = getattr(pc, "log_entry", None)
            if entry is None:
                raise NotBatched(f"{ins.name}: a sync instruction whose effect is not only "
                                 "its log entry")
            log.append(entry)
            continue
        lv = [shadow[id(v)] if isinstance(v, Tile) else views.get((j, p), v)
              for p, v in enumerate(vals)]
        once = ins.batched and _all_uniform(lv, ins.any_valid)
        calls.append(bind(ins, lm, lv, r.params, once, r.loc))
    log_all = log * t_n
    pairs_in = [(t, shadow[i]) for i, t in invariant.items()]
    back = [(tiles[i], shadow[i], state[i]) for i in written if i in later]
    shadows = list(shadow.values())
    last = t_n - 1

    def run() -> None:
        if m._lazy:  # tiles of the launch still reading GM in place take it before it changes
            for g in gm_written:
                lazy.gm_barrier(m, g.flat)
        lm.reset_for_launch()
        for sh in shadows:
            sh.unbind()
        for t, sh in pairs_in:
            src = t.storage  # (what it owes, settled on the launch's machine)
            lm.auto_storage(sh, False)[...] = src
        push(lm)
        try:
            for c in calls:
                c()
            for t, sh, st in back:
                v = sh.storage  # (its lanes settled)
                if t._buf is None:
                    m.auto_storage(t, False)
                else:
                    if m._lazy:
                        lazy.storage_barrier(m, t)
                    lazy.overwrite(t, m)
                t._buf[...] = v[last]
                t._vr, t._vc, t._whole = st
        finally:
            pop(lm)
            lm._lazy.clear()
            lm._gm_settled = None
        if log_all:
            sl = m.sync_log
            if sl is None:
                m.sync_log = list(log_all)
            else:
                sl.extend(log_all)
    return run

"""The pipeline schedule: an observer of the machine that times every executed instruction.

Each core has one in-order queue per pipe (AIC: MTE2, MTE1, M, FIX; AIV: MTE2, V, MTE3; and
the scalar pipe S). An instruction starts when its pipe's queue is free and its dependences
are met, and takes the cycles of the cost table (:mod:`ptoisa.cycles.costs`):

* **manual mode** (the program has sync instructions): the dependences are the program's
  flags. ``SET_FLAG(src, dst, id)`` fires when pipe ``src``'s earlier work is done;
  ``WAIT_FLAG(src, dst, id)`` holds pipe ``dst`` until the matching set fired (one set feeds
  one wait); ``PIPE_BARRIER(p)`` waits for pipe ``p`` (PIPE_ALL: every pipe). A wait that no
  earlier set can satisfy is a deadlock, reported with the instruction.
* **auto-sync mode** (no sync instruction at all): the dependences are the data dependences
  (read-after-write, write-after-read, write-after-write between pipes) of the shared access
  model :func:`ptoisa.concurrent.access.accesses`, as the compiler inserts them.

Between the cores of a mixed launch's cluster, the streams code's matching (a TPUSH's slot
popped by a TPOP, a TFREE's slot reused by a TPUSH, SYNC_SET -> SYNC_WAIT, the arrivals at a
SYNCALL) reaches the model through :mod:`ptoisa.concurrent.edges`: the consumer starts no earlier
than
its producer fired (a TPUSH when it completes, a SYNC_SET or TFREE once the pipe it names has
drained, a SYNCALL arrival once its core drained). On A2/A3 the wait (``wait_flag_dev``)
stalls the waiting core's issue, so nothing after it in program order starts earlier; A5's
``wait_intra_block`` holds one pipe. The cores are then scheduled as a dataflow: each core in
program order, a consumer waiting for its producer's step on another core.

The observer only records (a cheap step per instruction); the schedule is computed when the
report is asked for, once the mode is known.
"""

from __future__ import annotations

import copy
import dataclasses
import enum
import math
from collections import deque
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..concurrent.access import accesses, role_in_use
from ..concurrent.unitflag import UnitFlags
from ..enums import Pipe
from ..isa.registry import PIPE_SYNC
from ..lanes import block_of
from ..targets import LOC_SPACE, TargetLike
from ..tensor import GlobalTensor
from ..tile import Tile
from . import costs
from .report import CycleReport
from .steps import Deadlock, Flow, Step, gc_paused

#: pipes of the two core kinds (for reports)
AIC_PIPES = (Pipe.MTE2, Pipe.MTE1, Pipe.M, Pipe.FIX, Pipe.S)
AIV_PIPES = (Pipe.MTE2, Pipe.V, Pipe.MTE3, Pipe.S)


class CycleModel:
    """Observer: ``machine.observers.append(model)``; ``model.report()`` after the run."""

    def __init__(self, target: TargetLike | None = None, *,
                 table: dict[str, Any] | None = None, values: bool = True) -> None:
        #: the target's name (the report's data; None: the first machine's)
        self.target = getattr(target, "name", target)
        #: False: timing only: the machines it watches compute no values (Machine.values;
        #: ptoisa.observe), the report says so
        self.values = values
        self._own_table = table is None
        self._bind(table if table is not None else costs.default_table(target))
        #: what was recorded, in order, in three lists: each instruction's _Rec (the same
        #: _Rec launch after launch, so a repeated run is recognised and its schedule reused),
        #: its (core, block) (one tuple per machine and block, shared) and its source
        #: location. No object is made per instruction: a run of a million instructions
        #: would give every garbage collection a million more objects to walk.
        self._recs: list[_Rec] = []
        self._where: list[tuple[str, int]] = []
        self._locs: list[Any] = []
        #: the recorded instructions made Steps (a cross-core edge was attached to them:
        #: :meth:`_step_of`), by index
        self._edged: dict[int, Step] = {}
        self._m: Any = None  # the last machine seen, its block index, (core, block)
        self._m_bidx: Any = None
        self._m_core: tuple[str, int] = ("core0", 0)
        self._spans: dict[Any, Any] = {}  # operand object -> its span (access.accesses memo)
        #: id(span) -> (span, its canonical copy): see _canonical
        self._canon: dict[int, tuple[Any, Any]] = {}
        #: auto-placed tiles numbered in order of first use: an eager kernel makes new tiles
        #: every launch, and the same numbers let its records hit the memo launch after launch
        self._tiles: dict[int, tuple[int, Any]] = {}
        self.has_sync = False
        #: instructions the cost table could not price (they count 1 cycle)
        self.errors: list[str] = []
        #: blocks of the launch, and whether they ran in lockstep (one timeline for all)
        self.blocks = 1
        self.lockstep = False
        #: the vector function (micro-ops) each core and block is in, if any
        self._vf: dict[tuple[str, int], VecFunction] = {}
        #: the L0C unit-flag hand-offs (matmul <-> fix-pipe store): edges between steps
        self.unit_flags = UnitFlags()
        #: sync entries by (entry, src pipe, dst pipe, event id): see _record
        self._sync_recs: dict[Any, _Rec] = {}

    def _bind(self, table: dict[str, Any]) -> None:
        self.table = table
        # memos shared by the models that use the same table (launch after launch)
        self._cost_cache, self._rec_cache = _MEMOS.setdefault(id(table), ({}, {}))
        _TABLES[id(table)] = table  # keeps the id taken

    # ---- recording (the observer) ----------------------------------------------------------------
    def mark(self) -> Any:
        """A lockstep attempt starts (ptoisa.observe): what :meth:`rewind` comes back to."""
        return (len(self._recs), self.lockstep, self.has_sync, len(self.errors),
                len(self._tiles), copy.deepcopy(self._vf), self.unit_flags.mark())

    def rewind(self, mark: Any) -> None:
        """The lockstep attempt since ``mark`` was abandoned (the launch runs again block by
        block): its records go, so the report is the one a ``lockstep=False`` launch gives
        (its steps, the lockstep flag the whole-launch pricing reads)."""
        n, self.lockstep, self.has_sync, errors, tiles, vf, uf = mark
        del self._recs[n:], self._where[n:], self._locs[n:], self.errors[errors:]
        for i in [i for i in self._edged if i >= n]:
            del self._edged[i]
        for k in [k for k, (no, _) in self._tiles.items() if no >= tiles]:
            del self._tiles[k]
        self._vf = vf
        self.unit_flags.rewind(uf)
        self._m = self._m_bidx = None  # (the next record looks at its machine afresh)

    #: no ``after(rec)`` hook (:meth:`Instr.run` looks for one after every instruction)
    after = None

    def _unit_flagged(self, rec: Any) -> None:
        """Record an instruction with a Phase: the unit flag may order it (UnitFlags)."""
        uf = self.unit_flags
        waits = uf.before(rec)
        self._record(rec, False)
        if waits:  # a unit-flag wait: this step starts after the matmul / store it waits for
            self.edge_acquire(rec, waits, None)
        uf.after(lambda: self.edge_release(rec, None))

    def _record(self, rec: Any, plain: bool = True) -> None:
        """Record one instruction (the observer's call: ``__call__``). ``plain``: not yet
        looked at for a unit-flag use (no Phase: UnitFlags.before would find none)."""
        if plain and "Phase" in rec.params:
            self._unit_flagged(rec)
            return
        ins = rec.ins
        m = rec.machine
        if m is not self._m or m.block_idx is not self._m_bidx:
            self._machine(m)
        cb = self._m_core
        core, blk = cb
        name = ins.name
        kind = ins.sync
        if kind in PIPE_SYNC:
            self.has_sync = True
            v = rec.values
            # (a flag's entry by its entry and operands; Pipe members hash by identity)
            skey: Any = (ins, v[0], v[1], v[2]) if len(v) == 3 and \
                type(v[0]) is Pipe and type(v[1]) is Pipe and type(v[2]) in (int, str) \
                else None
            r = self._sync_recs.get(skey) if skey is not None else None
            if r is None:
                r = self._sync_rec(ins, kind, v, m)
                if skey is not None:
                    self._sync_recs[skey] = r
            if self._vf:
                self._vf.pop((core, blk), None)
            self._recs.append(r)
            self._where.append(cb)
            self._locs.append(rec.loc)
            return
        if ins.pipe is Pipe.ALL:  # SYNCALL, TPRINT: the whole core drains first
            if self._vf:
                self._vf.pop((core, blk), None)
            self._recs.append(_rec_of(name, Pipe.S, 0, ("barrier", Pipe.ALL)))
            self._where.append(cb)
            self._locs.append(rec.loc)
            return
        if self.has_sync:  # manual mode: the flags order the pipes, byte spans are not needed
            r = self._cost(rec)
            if r.vf is not None:
                r = self._in_vf(r, core, blk, m)
            elif self._vf:
                self._vf.pop((core, blk), None)
            self._recs.append(r)
            self._where.append(cb)
            self._locs.append(rec.loc)
            return
        self._record_auto(rec, core, blk, m)

    __call__ = _record  # (one call per instruction, not two)

    def _sync_rec(self, ins: Any, kind: str, v: Any, m: Any) -> _Rec:
        """The shared entry of a sync instruction with operands ``v``."""
        if kind == "barrier":
            sync: tuple[Any, ...] = ("barrier", v[0])
            pipe = v[0] if v[0] is not Pipe.ALL else Pipe.S
        elif kind in ("buf_get", "buf_rls"):
            from ..isa.sync.flags import _buf_args

            sync = (kind, v[0], *_buf_args(ins, v[1], v[2]))
            pipe = v[0]
        else:
            from ..isa.sync.flags import _event_id

            eid = _event_id(ins, m, v[2])
            sync = (kind, v[0], v[1], eid)
            pipe = v[0] if kind == "flag_set" else v[1]
        return _rec_of(ins.name, pipe, 0, sync)

    def _record_auto(self, rec: Any, core: str, blk: int, m: Any) -> None:
        """An auto-sync mode record: its cost and its byte spans (memoised by operands)."""
        ins = rec.ins
        name = ins.name
        vals = rec.values
        parts: list[Any] = [ins]
        add = parts.append
        for v in vals:  # self._ident of each, the common types first
            t = type(v)
            if t is Tile and v.addr is None:
                no = self._tiles.get(id(v))
                add(("tile", no[0] if no is not None and no[1] is v else self._tile_no(v),
                     v.spec, v._vr, v._vc))
            elif t is int or v is None:
                add(v)
            else:
                add(self._ident(v))
        if rec.params:
            parts += rec.params.values()
        try:
            key: Any = tuple(parts)
            entry = self._rec_cache.get(key)
        except TypeError:  # an unhashable operand or parameter: no memo
            key, entry = None, None
        if entry is not None:
            hit = entry[0]
        else:
            c = self._cost(rec)
            if len(self._spans) > 4096:  # (GM views made anew per call would pile up)
                self._spans.clear()
            reads, writes = accesses(rec, memo=self._spans)
            hit = _Rec(name, c.pipe, c.cycles, None, tuple(self._canonical(reads)),
                       tuple(self._canonical(writes)), c.gm, c.vf, c.feat)
            if key is not None:
                if len(self._rec_cache) > 2048:
                    self._rec_cache.clear()
                # (the values kept with the memo entry, so that the ids in its key stay
                # theirs; not with the _Rec, which the recording keeps)
                self._rec_cache[key] = (hit, list(vals))
        self._recs.append(self._in_vf(hit, core, blk, m))
        self._where.append(self._m_core)
        self._locs.append(rec.loc)

    def _in_vf(self, r: _Rec, core: str, blk: int, m: Any) -> _Rec:
        """``r`` priced in its vector function: a vector micro-op costs what it adds to the
        function's cycles (:class:`VecFunction`); any other instruction ends the function
        of its core and block (so does entering a ``pto.vecscope``: ``Machine.vf_seq``)."""
        if r.vf is None:
            if self._vf:
                self._vf.pop((core, blk), None)
            return r
        seq = getattr(m, "vf_seq", 0)
        vf = self._vf.get((core, blk))
        if vf is None or vf.seq != seq:
            vf = self._vf[(core, blk)] = VecFunction(seq)
        return _priced(r, vf.add(*r.vf))

    def _machine(self, m: Any) -> tuple[str, int]:
        """The queue name and block of machine ``m``'s records (remembered for the next)."""
        if self.target is None:
            self.target = m.target.name
            if self._own_table:
                self._bind(costs.default_table(m.target))
        blk = m.block_idx
        if not isinstance(blk, int):
            blk = 0
            self.lockstep = True
        core = m.core or "core0"
        if not isinstance(core, str):
            core, blk = _core_name(core, blk)
        if m.block_num > self.blocks:
            self.blocks = int(m.block_num)
        # (a machine's block index changes between the blocks of a per-block launch)
        self._m, self._m_bidx, self._m_core = m, m.block_idx, (core, blk)
        return core, blk

    def _tile_no(self, t: Any) -> int:
        hit = self._tiles.get(id(t))
        if hit is None or hit[1] is not t:
            hit = self._tiles[id(t)] = (len(self._tiles), t)
        return hit[0]

    def _ident(self, v: Any) -> Any:
        """:func:`_ident`, with auto-placed tiles named by their number in this run and placed
        ones by their address (a compiled program makes new tile objects every run)."""
        if isinstance(v, Tile):
            if v.addr is None:
                return ("tile", self._tile_no(v), v.spec, v._vr, v._vc)
            return ("at", v.addr, v.spec, v._vr, v._vc)
        return _ident(v)

    def _canonical(self, spans: list[Any]) -> list[Any]:
        """Spans of auto-placed tiles keyed by the tile's number in this run, not its id, and
        of placed ones by their buffer alone, not the id of this run's machine (the schedule
        compares the accesses of one core and block: one machine)."""
        out = []
        canon = self._canon
        for sp in spans:
            k = sp.key
            if k[0] == "tile" or (k[0] in _SPACES and len(k) == 2):
                # (a tile's span is the same object use after use: its canonical copy too,
                # one per span, not one per recorded miss)
                hit = canon.get(id(sp))
                if hit is not None and hit[0] is sp:
                    out.append(hit[1])
                    continue
                if k[0] != "tile":
                    c = dataclasses.replace(sp, key=(k[0], "buffer"))
                else:
                    no = self._tiles.get(k[1])
                    if no is None:  # (a tile not numbered: left as it is, not remembered)
                        out.append(sp)
                        continue
                    c = dataclasses.replace(sp, key=("tile#", no[0]))
                if len(canon) > 4096:
                    canon.clear()
                canon[id(sp)] = (sp, c)
                sp = c
            out.append(sp)
        return out

    def _cost(self, rec: Any) -> _Rec:
        vals = rec.values
        parts: list[Any] = [rec.ins.name, len(vals) > 1 and vals[0] is vals[1]]
        add = parts.append
        for v in vals:  # _sig of each, the common types first (a step per instruction)
            t = type(v)
            if t is Tile:
                add((v.spec, v._vr, v._vc, v.addr))
            elif t is int or v is None:
                add(v)
            elif t is GlobalTensor:
                add(v.spec)
            else:
                add(_sig(v))
        if rec.params:  # (an enum member is its own _sig: no enum has a spec)
            parts += [(k, v if isinstance(v, enum.Enum) else _sig(v))
                      for k, v in rec.params.items()]
        key = tuple(parts)
        if rec.ins.dialect == "vpto" and rec.ins.pipe is not Pipe.V:
            # (a register-driven DMA copy's rows come from the machine's loop registers)
            key += (tuple(sorted(rec.machine.micro_regs.get("dma_loop", {}).items())),)
        try:
            hit = self._cost_cache.get(key)
        except TypeError:  # per-block valid extents (arrays) or unhashable parameters
            hit, key = None, None
        if hit is None:
            pipe = rec.ins.pipe_on(vals)
            f: Any = None
            try:
                if rec.machine.lanes > 1 and any(_varies(v) for v in vals):
                    # a lockstep step stands for every block: it costs what the slowest takes
                    cyc = max(self._predict(rec, [block_of(v, b) for v in vals], pipe)
                              for b in range(rec.machine.lanes))
                else:
                    f = costs.features(rec.ins, vals, rec.params, rec.machine)
                    cyc = costs.predict(self.table, f, pipe)
            except Exception as e:  # noqa: BLE001 - the model must never break a run
                self.errors.append(f"{rec.ins.name}: no cost ({type(e).__name__}: {e})")
                cyc, f = 1, None
            hit = _Rec(rec.ins.name, pipe, cyc, gm=_gm_bytes(rec.ins, vals), feat=f)
            if f is not None and rec.ins.dialect == "vpto":
                self._micro(hit, f, pipe)
            if key is not None:
                if len(self._cost_cache) > 8192:
                    self._cost_cache.clear()
                self._cost_cache[key] = hit
        return hit

    def _predict(self, rec: Any, vals: list[Any], pipe: Pipe) -> int:
        return costs.predict(self.table, costs.features(rec.ins, vals, rec.params,
                                                        rec.machine), pipe)

    def _micro(self, hit: _Rec, f: Any, pipe: Pipe) -> None:
        """A micro-op's port use (vector ops) or GM bytes (DMA copies) on its entry."""
        _, v = costs.variant_of(self.table, f, pipe)
        mc = v.micro
        if mc is not None:
            b = int(f.get("b", 4))
            hit.vf = (mc.port, mc.occupancy(b), mc.latency(b))
        elif f.get("n_dma"):
            hit.gm = int(f["bytes"])


    # ---- cross-core edges (ptoisa.concurrent.edges: called by the streams code's semantics) ------
    def _step_of(self, rec: Any) -> Step | None:
        """The step recorded for ``rec`` (the latest of its core: a core records nothing
        else between an instruction's observation and its semantics), made a Step in place."""
        core, blk = self._machine(rec.machine)
        name = rec.ins.name
        recs, where, edged = self._recs, self._where, self._edged
        for i in range(len(recs) - 1, -1, -1):
            s = edged.get(i)
            if s is not None:
                if s.core == core and s.block == blk:
                    return s if s.op == name else None
            elif where[i] == (core, blk):
                r = recs[i]
                if r.op != name:
                    return None
                s = edged[i] = Step(i, r.op, r.pipe, r.cycles, core, blk, self._locs[i],
                                    r.sync, r.reads, r.writes, 0, 0, r.pn, None, None, None,
                                    None, r.gm, r.feat)
                return s
        return None

    def edge_release(self, rec: Any, pipe: Any) -> Step | None:
        """A release (TPUSH, TFREE, SYNC_SET, arriving at SYNCALL): its step fires when
        ``pipe`` (None: the step itself) has drained."""
        s = self._step_of(rec) if rec is not None else None
        if s is not None:
            s.rel = "own" if pipe is None else pipe
        return s

    def edge_acquire(self, rec: Any, steps: list[Step], pipe: Any) -> None:
        """The matching acquire (TPOP, a TPUSH reusing a slot, SYNC_WAIT, leaving SYNCALL):
        its step waits for ``steps`` to fire; ``pipe`` is what the wait holds."""
        s = self._step_of(rec) if rec is not None else None
        if s is None:
            return
        s.after = [*(s.after or ()), *steps]
        if pipe is Pipe.ALL or s.hold is None:
            s.hold = pipe

    # ---- the schedule ----------------------------------------------------------------------------
    def report(self) -> Any:
        """The schedule of what was recorded. A run that recorded the very entries of an
        earlier one (the same instructions on the same operands, e.g. a kernel launched
        again) has the same schedule: its report is copied, not recomputed."""
        with gc_paused():  # (a Step per recorded instruction: see gc_paused)
            return self._report()

    def _report(self) -> Any:
        mode = "manual" if self.has_sync else "auto"
        target = self.target or "?"
        key: Any = None
        done = None
        if len(self._recs) <= _SCHEDULE_MEMO_STEPS and not self._edged:
            # (not with cross-core edges: schedule it)
            try:
                key = (mode, target, self.blocks, self.lockstep, tuple(self._recs),
                       tuple(self._where), tuple(self._locs))
                done = _SCHEDULES.get(key)
            except TypeError:  # an unhashable location
                key = None
        if done is None:
            steps = _steps_of(self._recs, self._where, self._locs, self._edged)
            flows, deadlocks = schedule(steps, manual=self.has_sync)
            done = CycleReport(steps, flows, deadlocks, target=target, mode=mode)
            done.table = self.table
            done.blocks, done.lockstep = self.blocks, self.lockstep
            done._reschedule = schedule
            if key is not None:
                held = sum(len(k[4]) for k in _SCHEDULES)
                if len(_SCHEDULES) >= 64 or held + len(steps) > _SCHEDULE_MEMO_TOTAL:
                    _SCHEDULES.clear()
                _SCHEDULES[key] = done
        rep = CycleReport.__new__(CycleReport)  # a copy: its own errors and outputs
        rep.__dict__.update(done.__dict__)
        rep.errors = list(self.errors)
        rep.values = self.values
        return rep


@dataclass(slots=True, eq=False)
class _Rec:
    """What one recorded instruction costs and touches (shared by every record of the same
    instruction on the same operands; compared by identity)."""

    op: str
    pipe: Pipe
    cycles: int
    sync: tuple[Any, ...] | None = None
    reads: tuple[Any, ...] = ()
    writes: tuple[Any, ...] = ()
    #: bytes moved to or from GM (a GM view operand's bytes)
    gm: int = 0
    #: a vector micro-op: (port class, occupancy, latency) in its vector function
    vf: tuple[str, float, int] | None = None
    #: the features that priced it (``CycleReport.explain``; None: not kept)
    feat: Any = None
    #: the pipe's name (a Step's ``pn``: read once here, not per recorded step)
    pn: str = dataclasses.field(init=False, default="")

    def __post_init__(self) -> None:
        self.pn = self.pipe.name


class VecFunction:
    """A vector function being recorded (the micro-ops of one ``pto.vecscope``, or a run of
    them with nothing else between): the port classes' occupancy, the ops issued, the
    latencies of its load -> compute -> store chain, and the cycles its steps were given.
    Its cycles (see :mod:`ptoisa.cycles.costs`, "the vector micro-ops"): start-up + drain +
    the chain's latency + the busiest port class; each op is given what it adds."""

    __slots__ = ("chain", "given", "occ", "ops", "seq")

    def __init__(self, seq: int) -> None:
        self.seq = seq
        self.occ = dict.fromkeys(costs.VF_PORTS, 0.0)
        self.ops = 0
        self.chain = {"ld": 0, "st": 0, "exu": 0}
        self.given = 0

    def add(self, port: str, occ: float, lat: int) -> int:
        """Record one op; the cycles it adds to the function."""
        o = self.occ
        o[port] += occ
        self.ops += 1
        c = self.chain
        k = port if port in ("ld", "st") else "exu"
        if lat > c[k]:
            c[k] = lat
        busy = max(o["ld"] / 2, o["st"], (o["exu"] + o["exu0"]) / 2, o["exu0"],
                   self.ops / costs.VF_ISSUE_WIDTH)
        total = costs.VF_STARTUP + costs.VF_DRAIN + c["ld"] + c["exu"] + c["st"] + busy
        cyc = int(math.floor(total + 0.5)) - self.given
        self.given += cyc
        return cyc


#: a vector micro-op's entry with the cycles its vector function gave it (shared: the same
#: entry for the same op and cycles, so a repeated run records the very same entries)
_PRICED: dict[tuple[_Rec, int], _Rec] = {}


def _priced(r: _Rec, cycles: int) -> _Rec:
    hit = _PRICED.get((r, cycles))
    if hit is None:
        if len(_PRICED) > 8192:
            _PRICED.clear()
        hit = _PRICED[(r, cycles)] = dataclasses.replace(r, cycles=cycles)
    return hit


def _steps_of(recs: list[_Rec], where: list[tuple[str, int]], locs: list[Any],
              edged: dict[int, Step]) -> list[Step]:
    """The recorded instructions as Steps to schedule (those with cross-core edges already
    are: ``edged``)."""
    out: list[Step] = []
    add = out.append
    new = Step
    for i, (r, (core, blk), loc) in enumerate(zip(recs, where, locs, strict=True)):
        if edged:
            s = edged.get(i)
            if s is not None:
                add(s)
                continue
        # (every field by position: a launch records up to millions of steps)
        add(new(i, r.op, r.pipe, r.cycles, core, blk, loc, r.sync, r.reads, r.writes, 0, 0,
                r.pn, None, None, None, None, r.gm, r.feat))
    return out


def _gm_bytes(ins: Any, vals: list[Any]) -> int:
    """The bytes an instruction moves to or from GM: its first accessed GM view's (0: none;
    a FIFO slot view that TPUSH / TPOP / TFREE only name, a view TALLOC or TASSIGN points,
    move nothing)."""
    if ins.access != "data":
        return 0
    for o, v in zip(ins.operands, vals, strict=False):
        if isinstance(v, GlobalTensor):
            if ins.access_roles and role_in_use(ins, o, vals) == "none":
                continue
            n = int(v.spec.numel)
            return (n + 1) // 2 if v.dtype.packed else n * int(v.dtype.itemsize)
    return 0


_SYNC_RECS: dict[Any, _Rec] = {}


def _rec_of(op: str, pipe: Pipe, cycles: int, sync: tuple[Any, ...]) -> _Rec:
    """The shared entry of a sync instruction (or a drain of the whole core)."""
    key = (op, pipe, sync)
    r = _SYNC_RECS.get(key)
    if r is None:
        if len(_SYNC_RECS) > 4096:
            _SYNC_RECS.clear()
        r = _SYNC_RECS[key] = _Rec(op, pipe, cycles, sync)
    return r


#: the on-chip buffers a placed tile's span names (``(space, id(machine))``)
_SPACES = frozenset(LOC_SPACE.values())

#: schedules of earlier runs by what they recorded (runs of at most this many steps)
_SCHEDULES: dict[Any, Any] = {}
_SCHEDULE_MEMO_STEPS = 1 << 16
#: steps all kept schedules hold together (at most 64 of them): a bounded amount of memory
_SCHEDULE_MEMO_TOTAL = 1 << 18

#: per table: costs by operand types; (cost, pipe, spans) by operand objects with the fields
#: cost and spans depend on (the entry keeps the objects, so their ids stay theirs)
_MEMOS: dict[int, tuple[dict[Any, _Rec], dict[Any, tuple[_Rec, list[Any]]]]] = {}
_TABLES: dict[int, Any] = {}


def _core_name(core: Any, blk: int) -> tuple[str, int]:
    """A mixed launch's core identity, ``("AIC", block)`` or ``("AIV", block, sub)`` (block:
    an int, or the tuple of all blocks in lockstep), as a queue name and block: AIC / AIV0 /
    AIV1."""
    if isinstance(core, tuple) and core and isinstance(core[0], str):
        name = core[0] + (str(core[2]) if len(core) > 2 else "")
        b = core[1] if len(core) > 1 and isinstance(core[1], int) else blk
        return name, b
    return str(core), blk


def _varies(v: Any) -> bool:
    """Does this operand differ between the blocks of a lockstep launch (valid extents)?"""
    return isinstance(v, Tile) and (isinstance(v._vr, np.ndarray) or
                                    isinstance(v._vc, np.ndarray))


def _ident(v: Any) -> Any:
    """An operand object with the fields its cost and byte spans depend on (hashable)."""
    if isinstance(v, Tile):
        return (id(v), v.addr, v._vr, v._vc)
    if isinstance(v, GlobalTensor):
        # a view is its memory start, type and offset(s): views rebuilt launch after launch on
        # the same arrays hit (the memo entry keeps the memory alive, so the address is its)
        off = v.offset
        if not isinstance(off, int):
            sp = v._span
            off = (off.size, *sp) if sp is not None and sp[2] is not None else off.tobytes()
        # the caller's array (kept alive by the memo entry, so its id stays its) and the flat
        # view's size; a view made anew each run (a .pto argument) is its memory's owner and
        # where it starts in it (reading the data address costs more: only then)
        a = v._array
        mem: Any = id(a) if a.base is None else (id(a.base), a.__array_interface__["data"][0])
        return ("gm", mem, v.flat.size, v.flat.dtype, v.spec, off)
    return v


def _sig(v: Any) -> Any:
    """What a cost depends on, hashable: a tile's type and valid shape, a GM view's type."""
    if isinstance(v, Tile):
        return (v.spec, v.valid_row, v.valid_col, v.addr)
    spec = getattr(v, "spec", None)
    if spec is not None:
        return spec
    if isinstance(v, (list, tuple)):
        return tuple(_sig(x) for x in v)
    return v


def schedule(steps: list[Step], *, manual: bool) -> tuple[list[Flow], list[Deadlock]]:
    """Fill ``start``/``end`` of every step; returns the flag flows and the deadlocks."""
    sch = _Schedule(manual)
    if not any(s.after for s in steps):
        if manual:
            sch.run_manual(steps)
        else:
            for s in steps:
                sch.run(s)
        return sch.flows, sch.dead
    # cross-core edges: a dataflow over the cores, each in program order (a consumer can be
    # recorded before its producer: it is observed before it blocks)
    queues: dict[tuple[str, int], deque[Step]] = {}
    for s in steps:
        s.fire = None
        queues.setdefault((s.core, s.block), deque()).append(s)
    live = [q for q in queues.values() if q]
    while live:
        progress = False
        for q in live:
            while q:
                s = q[0]
                if s.rel is Pipe.ALL and s.fire is None and s.sync is not None:
                    s.fire = sch.drained(s)  # a barrier arrival: before the others arrive
                if s.after and any(p.fire is None and p is not s for p in s.after):
                    break
                sch.run(s)
                q.popleft()
                progress = True
        live = [q for q in live if q]
        if live and not progress:  # (cannot happen for a run that completed) go on
            q = live[0]
            s = q[0]
            s.after = [p for p in s.after or () if p.fire is not None]
    return sch.flows, sch.dead


class _Schedule:
    """The state of one schedule: pipe queues, flags, barriers and (auto mode) the recent
    accesses of every core; :meth:`run` times one step after its core's earlier ones."""

    def __init__(self, manual: bool) -> None:
        self.manual = manual
        self.free: dict[tuple[str, int, str], int] = {}
        self.pending: dict[tuple[str, int, Pipe, Pipe, int], deque[int]] = {}
        #: (core, block, buffer id) -> when its latest release fired (GET_BUF / RLS_BUF)
        self.buf_free: dict[tuple[str, int, int], int] = {}
        self.flows: list[Flow] = []
        self.dead: list[Deadlock] = []
        # auto mode: the last accesses of each memory, (span, end, pipe)
        self.last_w: _Recent = {}
        self.last_r: _Recent = {}
        self.floor: dict[tuple[str, int], int] = {}  # PIPE_ALL barriers: nothing starts earlier

    def drained(self, s: Step) -> int:
        """When every pipe of ``s``'s core is done with what was issued before it."""
        keys = [k for k in self.free if k[0] == s.core and k[1] == s.block]
        t_all = max((self.free[k] for k in keys), default=0)
        return max(t_all, self.floor.get((s.core, s.block), 0))

    def _acquire(self, s: Step) -> int:
        """A cross-core wait: when its producers fired; it holds what it holds until then."""
        dep = max((p.fire for p in s.after or () if p.fire is not None and p is not s),
                  default=0)
        if s.hold is Pipe.ALL:
            cb = (s.core, s.block)
            self.floor[cb] = max(self.floor.get(cb, 0), dep)
        elif isinstance(s.hold, Pipe):
            q = (s.core, s.block, s.hold.name)
            self.free[q] = max(self.free.get(q, 0), dep)
        return dep

    def _fire(self, s: Step) -> None:
        """A release: when it fires (after the pipe it names drained)."""
        if s.fire is not None:
            return
        r = s.rel
        if r is Pipe.ALL:
            s.fire = max(s.end, self.drained(s))
        elif isinstance(r, Pipe):
            s.fire = max(s.end, self.free.get((s.core, s.block, r.name), 0))
        else:
            s.fire = s.end

    def run(self, s: Step) -> None:
        free, floor = self.free, self.floor
        q = (s.core, s.block, s.pn)
        cb = (s.core, s.block)
        if s.rel is Pipe.ALL and s.sync is not None and s.fire is None:
            s.fire = self.drained(s)  # a barrier arrival: before waiting for the others
        dep = self._acquire(s) if s.after else 0
        t = max(free.get(q, 0), floor.get(cb, 0), dep)
        if s.sync is not None:
            self._sync(s, q, t)
        else:
            if not self.manual:
                # each block runs on its own core: the compiler orders its own accesses only
                last_w, last_r = self.last_w, self.last_r
                for sp in s.reads:
                    t = _after(t, last_w.get((cb, sp.key)), sp, s.pn)
                for sp in s.writes:
                    t = _after(t, last_w.get((cb, sp.key)), sp, s.pn)
                    t = _after(t, last_r.get((cb, sp.key)), sp, s.pn)
            s.start = t
            s.end = t + s.cycles
            free[q] = s.end
            if not self.manual:
                for sp in s.reads:
                    _remember(self.last_r, cb, sp, s.end, s.pn)
                for sp in s.writes:
                    _remember(self.last_w, cb, sp, s.end, s.pn)
        if s.after:
            for p in s.after:
                if p.fire is not None and p is not s:
                    self.flows.append(Flow(p.core, p.block, p.pipe, s.pipe, -1, p.fire,
                                           s.start, s.core, s.block, f"{p.op}->{s.op}"))
        if s.rel is not None:
            self._fire(s)

    def run_manual(self, steps: list[Step]) -> None:
        """:meth:`run` of every step in order, manual mode, no step with cross-core waits
        (``after``): the same times, the common steps (work, flags) without the calls."""
        free, floor, pending, flows = self.free, self.floor, self.pending, self.flows
        run = self.run
        for s in steps:
            if s.rel is not None:
                run(s)
                continue
            sync = s.sync
            core, blk = s.core, s.block
            q = (core, blk, s.pn)
            t = free.get(q, 0)
            if floor:
                f = floor.get((core, blk), 0)
                if f > t:
                    t = f
            if sync is None:
                s.start = t
                s.end = free[q] = t + s.cycles
                continue
            kind = sync[0]
            if kind == "flag_set":
                key = (core, blk, sync[1], sync[2], sync[3])
                fired = pending.get(key)
                if fired is None:
                    fired = pending[key] = deque()
                fired.append(t)
                s.start = s.end = t
            elif kind == "flag_wait":
                fired = pending.get((core, blk, sync[1], sync[2], sync[3]))
                if not fired:
                    run(s)  # (a deadlock: said there)
                    continue
                t_set = fired.popleft()
                if t_set > t:
                    t = t_set
                s.start = s.end = free[q] = t
                flows.append(Flow(core, blk, sync[1], sync[2], sync[3], t_set, t))
            else:
                run(s)

    def _sync(self, s: Step, q: tuple[str, int, str], t: int) -> None:
        free, floor = self.free, self.floor
        kind = s.sync[0]  # type: ignore[index]
        if kind == "flag_set":
            _, src, dst, eid = s.sync  # type: ignore[misc]
            self.pending.setdefault((s.core, s.block, src, dst, eid), deque()).append(t)
            s.start = s.end = t
        elif kind == "flag_wait":
            _, src, dst, eid = s.sync  # type: ignore[misc]
            fired = self.pending.get((s.core, s.block, src, dst, eid))
            if not fired:
                self.dead.append(Deadlock(s, f"wait_flag({src.name}, {dst.name}, "
                                             f"EVENT_ID{eid}) has no earlier set_flag to "
                                             f"match: pipe {dst.name} would wait forever"))
                s.start = s.end = t
                return
            t_set = fired.popleft()
            s.start = s.end = max(t, t_set)
            free[q] = s.end
            self.flows.append(Flow(s.core, s.block, src, dst, eid, t_set, s.end))
        elif kind == "buf_rls":  # mode 0: when this pipe's earlier work is done (mode 1:
            key = (s.core, s.block, s.sync[2])  # type: ignore[index]  # every pipe's)
            if s.sync[3] != 0:  # type: ignore[index]
                t = max(t, self.drained(s))
            self.buf_free[key] = max(self.buf_free.get(key, 0), t)
            s.start = s.end = t
        elif kind == "buf_get":  # mode 0: after every earlier release of the id
            t_rel = self.buf_free.get((s.core, s.block, s.sync[2]), 0)  # type: ignore[index]
            if s.sync[3] != 0:  # type: ignore[index]
                t_rel = 0  # mode 1: does not wait (its release waits for every pipe)
            s.start = s.end = max(t, t_rel)
            free[q] = s.end
        else:  # PIPE_BARRIER
            p = s.sync[1]  # type: ignore[index]
            if p is Pipe.ALL:
                # (a SYNCALL leaves when every participant has arrived: ``t`` holds that)
                t_all = max(self.drained(s), t)
                floor[(s.core, s.block)] = t_all
                s.start = s.end = t_all
            else:
                s.start = s.end = t


_KEEP = 32  # access ranges remembered per memory (older ones are long done in any real kernel)

_Recent = dict[Any, dict[tuple[int, int, str], tuple[Any, int]]]


def _after(t: int, prior: dict[tuple[int, int, str], tuple[Any, int]] | None, sp: Any,
           pipe: str) -> int:
    if prior:
        for (_, _, p), (other, end) in prior.items():
            if end > t and p != pipe and sp.overlaps(other):
                t = end
    return t


def _remember(d: _Recent, cb: Any, sp: Any, end: int, pipe: str) -> None:
    """The latest access of each byte range and pipe (a later one of the same range and
    pipe implies the earlier)."""
    lst = d.get((cb, sp.key))
    if lst is None:
        lst = d[(cb, sp.key)] = {}
    k = (sp.lo, sp.hi, pipe)
    lst.pop(k, None)
    lst[k] = (sp, end)
    if len(lst) > _KEEP:
        del lst[next(iter(lst))]

"""One core's happens-before state: a vector clock per pipe, pending flags, and per-span
last-writer / readers (shadow) state.

A *thread* is one pipe of one core, ``(core, pipe)``; its epoch counts the instructions issued
to it. ``vc[p]`` is what pipe ``p`` knows has completed: ``vc[p][t] >= e`` means the ``e``-th
instruction of thread ``t`` is ordered before ``p``'s next instruction. Edges:

* ``set_flag(src, dst, id)`` snapshots src's clock with src's own epoch (the flag fires when
  src's earlier work is done); ``wait_flag(src, dst, id)`` joins the oldest pending snapshot
  of that (src, dst, id) into dst's clock;
* ``pipe_barrier(p)``: p's own earlier work is complete for p's later work (only matters in
  strict mode, where program order alone does not order a pipe's own accesses);
  ``pipe_barrier(PIPE_ALL)``, SYNCALL and TSYNC on events join every pipe into every pipe;
* an Event passed to an intrinsic joins its producer's clock into the consumer's pipe.

The shadow state is keyed by span (memory key, byte range); a write replaces the cells it
covers, reads keep the last read per thread, and cells every pipe already knows about are
pruned, so the state does not grow with a loop's trip count.

The cores of one block (the AIC and AIVs of a mixed launch's cluster) share their GM shadow
state (:class:`Group`): thread ids are unique across cores, so an AIV's access is checked
against the AIC's as against its own pipes'. The cross-core edges come from the streams code
through :mod:`ptoisa.concurrent.edges`: a release (TPUSH, TFREE, SYNC_SET, arriving at SYNCALL)
snapshots
the clock of the pipe that must have drained (:meth:`Core.release`), the matching acquire
(TPOP, SYNC_WAIT, leaving SYNCALL) joins it into the waiting pipe(s) (:meth:`Core.acquire`).
Programs left to the compiler's intra-core sync (``auto``) are still checked across cores:
their own pipes count as ordered, a release carries the whole core, an acquire holds it.
"""

from __future__ import annotations

import re
from collections import deque
from typing import TYPE_CHECKING, Any

import numpy as np

from ..concurrent.access import (
    Span,
    gm_span,
    rects_meet,
    role_of,
    tile_span,
    touched_accesses,
    view_alias,
)
from ..enums import Pipe
from ..errors import SourceLoc
from ..interp import structure
from ..isa.registry import PIPE_SYNC
from ..tensor import GlobalTensor
from ..tile import Tile
from . import bounds
from .report import Finding, Site, where

if TYPE_CHECKING:
    from . import Sanitizer

#: the sync kinds (an entry's ``sync=``) that order this core's pipes or every block: the
#: flags and barriers, Events (TSYNC) and SYNCALL
_SYNC = PIPE_SYNC | {"events", "all_cores"}
_PIPES = (Pipe.S, Pipe.V, Pipe.M, Pipe.MTE1, Pipe.MTE2, Pipe.MTE3, Pipe.FIX)
_PIDX = {p: i for i, p in enumerate(_PIPES)}
_SSA = re.compile(r"(?!tile |gm\[|through |bytes )[A-Za-z0-9_]+(\[|$| )")
_PRUNE_AT = 48  # cells per memory before dominated ones are dropped


class Acc:
    """One access: thread, epoch, and the instruction that made it."""

    __slots__ = ("thread", "epoch", "rec", "_site")

    def __init__(self, thread: Any, epoch: int, rec: Any, site: Site | None = None) -> None:
        self.thread = thread
        self.epoch = epoch
        self.rec = rec
        self._site = site

    @property
    def site(self) -> Site:
        if self._site is None:
            self._site = site_of(self.rec)
        return self._site


class Cell:
    """Last writer and last reader per thread of one byte range (and its exact footprint,
    ``rect``, when it is a 2-D strided GM view: see :class:`ptoisa.concurrent.access.Span`)."""

    __slots__ = ("writer", "readers", "rect")

    def __init__(self, writer: Acc | None = None, rect: Any = None) -> None:
        self.writer = writer
        self.readers: dict[Any, Acc] = {}
        self.rect = rect


def site_of(rec: Any) -> Site:
    pto = isinstance(rec.loc, SourceLoc)
    name = ("pto." + rec.ins.mnemonic) if pto else rec.ins.name
    try:
        pipe = rec.pipe.value
    except Exception:  # noqa: BLE001 - a pipe_of that cannot decide: report the entry's
        pipe = rec.ins.pipe.value
    return Site(name, pipe, rec.loc)


def _join(a: dict[Any, int], b: dict[Any, int]) -> None:
    for k, v in b.items():
        if v > a.get(k, 0):
            a[k] = v


def _flag_text(pto: bool, kind: str, src: Pipe, dst: Pipe, eid: int) -> str:
    if pto:
        return f"pto.{kind.lower()}[<{src.value}>, <{dst.value}>, <EVENT_ID{eid}>]"
    return f"pto.{kind}(pto.Pipe.{src.name}, pto.Pipe.{dst.name}, {eid})"


def _barrier_text(pto: bool, p: Pipe) -> str:
    return f"pto.barrier <{p.value}>" if pto else f"pto.PIPE_BARRIER(pto.Pipe.{p.name})"


def _after(a: Any, b: Any) -> bool:
    """Whether location ``a`` is at or after ``b`` in the same file (a loop back-edge)."""
    if isinstance(a, SourceLoc) and isinstance(b, SourceLoc):
        return a.file == b.file and (a.line, a.col) >= (b.line, b.col)
    if isinstance(a, tuple) and isinstance(b, tuple) and len(a) == 2 and len(b) == 2:
        return bool(a[0] == b[0] and a[1] >= b[1])
    return False


class _Checks:
    """Placement and NaN-origin checks (mixed into Core)."""

    # ---- placement: a placed tile read after another tile overwrote its bytes --------------------
    def check_placement(self: Any, acc: Acc, accs: list[tuple[str, Any, Span]]) -> None:
        for role, v, s in accs:
            if role not in ("in", "inout") or not isinstance(v, Tile) or v.addr is None:
                continue
            own = self.owners.get(s.key)
            if not own:
                continue
            me = self.roots.get(id(v), id(v))
            for (lo, hi), (tid, wrec, wtile, wlo, whi) in own.items():
                # the same tile, a view of it, or a tile placed on exactly the same bytes (a
                # reinterpretation of one buffer, as address-reusing code does) is no clobber
                if lo >= s.hi or s.lo >= hi or tid == me or (wlo, whi) == (s.lo, s.hi):
                    continue
                site, other = acc.site, site_of(wrec)
                key = ("placement", site.loc, site.op, other.loc, other.op)
                if key in self.san._seen:
                    continue
                a, b = max(lo, s.lo), min(hi, s.hi)
                mine = _tile_name(v, site)
                theirs = _tile_name(wtile, other)
                self.san.add(Finding(
                    "placement",
                    f"overlapping placement: {site.op} reads {mine} ({s.space} [{s.lo:#x}, "
                    f"{s.hi:#x})), but {other.op} at {where(other.loc)} wrote {theirs} over "
                    f"[{a:#x}, {b:#x}) while {mine} was live",
                    site, other, space=s.space, lo=a, hi=b,
                    fix=f"place {theirs} at an address outside [{s.lo:#x}, {s.hi:#x}), or "
                        f"finish using {mine} before writing {theirs}"), key)
        for role, v, s in accs:
            if role == "in" or not isinstance(v, Tile) or v.addr is None:
                continue
            own = self.owners.setdefault(s.key, {})
            for k in [k for k in own if k[0] < s.hi and s.lo < k[1]]:
                old = own.pop(k)
                if k[0] < s.lo:
                    own[(k[0], s.lo)] = old  # the parts of an older write left standing
                if s.hi < k[1]:
                    own[(s.hi, k[1])] = old
            if len(own) > 256:  # bounded: forget the oldest writers
                for k in list(own)[:128]:
                    del own[k]
            own[(s.lo, s.hi)] = (self.roots.get(id(v), id(v)), acc.rec, v, s.lo, s.hi)

    # ---- NaN origin: finite inputs, non-finite outputs -------------------------------------------
    def nan_before(self: Any, rec: Any, accs: list[tuple[str, Any, Span]]) -> None:
        outs = []
        for role, v, _ in accs:
            if role in ("in", "inout"):
                if not isinstance(v, Tile):
                    return  # data from GM: a load copies, it does not create NaN
                if not _finite(v):
                    return
            if role in ("out", "inout") and isinstance(v, Tile) and \
                    v.dtype.np.kind in "fV":
                outs.append(v)
        for x in rec.values:
            if isinstance(x, (float, np.floating)) and not np.isfinite(x):
                return
        if outs:
            self.pending_nan = (rec, outs)

    def nan_after(self: Any, rec: Any, outs: list[Tile]) -> None:
        for t in outs:
            try:
                a = np.asarray(t.read(), dtype=np.float64)
            except (TypeError, ValueError):
                continue
            bad = np.argwhere(~np.isfinite(a))
            if bad.size:
                site = site_of(rec)
                key = ("nan", site.loc, site.op)
                if key in self.san._seen:
                    return
                pos = tuple(int(i) for i in bad[0])
                val = a[pos]
                self.san.add(Finding(
                    "nan",
                    f"{site.op} turned finite inputs into {val} at element {pos} of "
                    f"{_tile_name(t, site)} ({len(bad)} non-finite element(s))", site,
                    extra={"element": pos, "value": float(val), "count": len(bad)}), key)
                return


def _finite(t: Tile) -> bool:
    try:
        a = np.asarray(t.read())
    except Exception:  # noqa: BLE001 - unreadable (unplaced) tiles: nothing to say
        return True
    if a.dtype.kind not in "fc":
        try:
            a = a.astype(np.float64)
        except (TypeError, ValueError):
            return True
        if a.dtype.kind != "f":
            return True
    return bool(np.isfinite(a).all())


def _tile_name(t: Any, site: Site) -> str:
    n = getattr(t, "name", None)
    at = f" @{t.addr:#x}" if getattr(t, "addr", None) is not None else ""
    if n:
        return ("%" if isinstance(site.loc, SourceLoc) else "") + n + at
    return f"tile {t.spec.describe()}{at}"


class Group:
    """The cores of one block (one cluster of a mixed launch: AIC, AIV0, AIV1; else the one
    core): their shared GM shadow state. A cell is dropped only when every pipe of every core
    knows it, so nothing is pruned while a core of the cluster that has not started yet may
    still run (a stream that finished without an instruction never will)."""

    __slots__ = ("cores", "mem", "anchor", "machines")

    def __init__(self, anchor: Any = None) -> None:
        self.cores: list[Core] = []
        self.mem: dict[Any, dict[tuple[int, int], Cell]] = {}
        self.anchor = anchor  # the cluster (or machine) it stands for: keeps its id taken
        self.machines: set[int] = set()  # ids of the machines of its cores

    @property
    def shared(self) -> bool:
        """Whether cores of a mixed launch's cluster share this state."""
        return len(getattr(self.anchor, "streams", ())) > 1

    def known(self, a: Acc) -> bool:
        for st in getattr(self.anchor, "streams", ()):
            if id(st.machine) not in self.machines and not st.done:
                return False  # a core yet to start
        return all(c._known(a) for c in self.cores)


def core_label(cid: Any) -> str:
    """AIC / AIV0 / AIV1 for a mixed launch's ``machine.core``, else ``core``."""
    if isinstance(cid, tuple) and cid and isinstance(cid[0], str):
        return cid[0] + (str(cid[2]) if len(cid) > 2 else "")
    return "core"


class Core(_Checks):
    """Happens-before and shadow state of one core (one block, or one AIC/AIV of it)."""

    def __init__(self, san: Sanitizer, key: Any, mode: str, group: Group | None = None,
                 ) -> None:
        self.san = san
        self.cid = key[2] if key[2] is not None else 0
        self.strict = mode == "strict"
        #: strict mode: the thread ids of the pipes whose own dependences need a barrier on
        #: this core's target (traits.same_pipe_barriers); set at the first instruction
        self.strict_th: frozenset[int] | None = None if self.strict else frozenset()
        self.races = "races" in san.checks and mode != "auto"
        #: races with the other cores of the block (a mixed launch), also in auto mode
        self.xcore = "races" in san.checks and group is not None and group.shared
        self.group = group if group is not None else Group()
        self.group.cores.append(self)
        self.group.machines.add(key[0])
        self.gmem = self.group.mem
        self.xblock = "races" in san.checks
        self.uninit = "uninit" in san.checks
        self.oob = "oob" in san.checks
        self.nan = "nan" in san.checks
        self.placement = "placement" in san.checks
        self.pending_nan: tuple[Any, list[Tile]] | None = None
        #: view -> the tile whose bytes it views (placement: a view is not another tile)
        self.roots: dict[int, int] = {}
        #: placed bytes -> the tile that last wrote them, and the instruction
        self.owners: dict[Any, dict[tuple[int, int], tuple[int, Any, Any, int, int]]] = {}
        base = 8 * san.core_index(self.cid)
        #: thread ids (ints: cheap to hash) of this core's pipes, by pipe index
        self.th = [base + i for i in range(len(_PIPES))]
        self.vc: list[dict[int, int]] = [{} for _ in _PIPES]
        self.count = [0] * len(_PIPES)
        self.active: set[int] = set()
        #: per thread, the epoch a full drain (PIPE_ALL) completed: GM writes up to it are
        #: visible to a later load of this core (PTOAS #730)
        self.drained: dict[int, int] = {}
        self.pending: dict[tuple[Pipe, Pipe, int], deque[tuple[dict[int, int], Any]]] = {}
        self.used_ids: dict[tuple[Pipe, Pipe], set[int]] = {}
        self.mem: dict[Any, dict[tuple[int, int], Cell]] = {}
        self.written: dict[Any, list[list[int]]] = {}
        self.full: set[Span] = set()
        self.aliases: dict[int, tuple[Any, int]] = {}
        self.limit: dict[Any, int] = {}
        self.pipe_cache: dict[str, int] = {}
        #: SYNCALLs passed: accesses of different blocks are ordered iff their phases differ
        self.phase = 0
        self.span_cache: dict[int, tuple[Any, Any, Span, Tile]] = {}
        #: buffer id -> the clock every release of it so far carries (GET_BUF / RLS_BUF)
        self.buf_tokens: dict[int, dict[int, int]] = {}
        #: the micro-op running (its record, its pipe's index): its bytes are checked when it
        #: is done (micro_done)
        self.micro: tuple[Any, int] | None = None

    # ---- one instruction -------------------------------------------------------------------------
    def observe(self, rec: Any) -> None:
        name = rec.ins.name
        kind = rec.ins.sync
        if kind in _SYNC:
            self.sync(kind, rec)
            return
        if kind == "cross_core" and not rec.machine.core:
            # a launch on one core: the flag's other side never runs, nothing it orders
            # between cores is checked (a mixed launch matches it: edges.py)
            self.san.report.not_checked(
                site_of(rec).op, rec.loc, "a cross-core flag in a launch on one core: the "
                "cores it orders do not run here (launch the kernel as its cores: mixed=True, "
                "a cube and a vector function, or pto.section.cube / .vector)")
        va = view_alias(rec)
        if va is not None:
            view, base, off = va
            if base.addr is None:
                self.aliases[id(view)] = (base, off)
            else:
                self.aliases.pop(id(view), None)
            self.roots[id(view)] = self.roots.get(id(base), id(base))
            return
        if rec.ins.access != "data":
            if rec.values and isinstance(rec.values[0], Tile):
                self.roots.pop(id(rec.values[0]), None)  # placed anew: its own bytes
            return
        if self.pending_nan is not None:
            self.nan_after(*self.pending_nan)
            self.pending_nan = None
        if self.oob:  # (MGATHER / MSCATTER: see bounds.check)
            hit = bounds.check(rec, site_of)
            if hit is not None:
                self.san.add(*hit)
        ins = rec.ins
        pi = self.pipe_cache.get(name)
        if pi is None:
            if ins.pipe is Pipe.ALL:
                self.barrier_all()
                pi = _PIDX[Pipe.S]
            elif ins.pipe_of is not None:
                pi = _PIDX[rec.pipe]
            else:
                pi = self.pipe_cache[name] = _PIDX[ins.pipe]
        n = self.count[pi] + 1
        self.count[pi] = n
        self.active.add(pi)
        t = self.th[pi]
        vc = self.vc[pi]
        if self.strict_th is None:
            bar = rec.machine.target.traits.same_pipe_barriers
            self.strict_th = frozenset(th for p, th in zip(_PIPES, self.th, strict=True)
                                       if p.value in bar)
        if t not in self.strict_th:
            vc[t] = n
        if rec.waits:
            for ev in rec.waits:
                tok = getattr(getattr(ev, "src", None), "tag", None)
                if isinstance(tok, tuple) and tok[0] is self:
                    _join(vc, tok[1])
        if ins.dialect != "tile":
            # a micro-op's bytes are its pointers' and registers' (no tile operands): it
            # tells them as it runs (Machine.touched); they are checked when it is done
            rec.machine.touched = []
            self.micro = (rec, pi)
        else:
            accs = self.operand_spans(rec)
            if accs:
                self.check_accesses(rec, pi, accs)
        if not isinstance(rec.loc, SourceLoc):  # eager: the Event it returns may be waited on
            rec.tag = (self, self._snapshot(pi))

    def micro_done(self, rec: Any) -> None:
        """The micro-op ``rec`` finished: check the bytes it told (see observe)."""
        pend, self.micro = self.micro, None
        m = rec.machine
        entries, m.touched = m.touched, None
        if pend is None or pend[0] is not rec or not entries:
            return
        self.check_accesses(rec, pend[1], touched_accesses(m, entries), micro=True)

    def check_accesses(self, rec: Any, pi: int, accs: list[tuple[str, Any, Span]],
                       micro: bool = False) -> None:
        """Every check of one instruction's accesses, made at its pipe's current clock. A
        micro-op's reads are not checked for unwritten bytes (a register load reads a whole
        vector whatever lanes its consumers keep); its writes count as writes."""
        t, n, vc = self.th[pi], self.count[pi], self.vc[pi]
        acc = Acc(t, n, rec)
        if self.races or self.xcore:
            self.check_races(acc, _per_block(accs, rec.machine.lanes)
                             if self.xcore and rec.machine.lanes > 1 else accs, vc)
        if self.xblock:  # (auto-sync programs too: InsertSync orders one core only)
            xb = self.san.blocks
            for role, v, s in accs:
                if s.space == "GM" and isinstance(v, GlobalTensor):
                    xb.access(self.san, rec, role, v, s, self.phase, site_of)
        if self.uninit:
            self.check_uninit(acc, accs, reads=not micro)
        if self.placement:
            self.check_placement(acc, accs)
        if self.nan:
            self.nan_before(rec, accs)

    def operand_spans(self, rec: Any) -> list[tuple[str, Any, Span]]:
        """:func:`ptoisa.concurrent.access.operand_accesses`, with each tile's span cached while its
        placement stays the same."""
        out: list[tuple[str, Any, Span]] = []
        cache = self.span_cache
        aliases = self.aliases
        m = rec.machine
        special = rec.ins.access_roles
        for o, v in zip(rec.ins.operands, rec.values, strict=False):
            if special and o.name in special:
                role = role_of(rec, o)
                if role == "none":  # named, not accessed (a FIFO slot view)
                    continue
            else:
                role = o.role
            if isinstance(v, Tile):
                items: Any = (v,)
            elif isinstance(v, (tuple, list)):
                items = v
            elif isinstance(v, GlobalTensor):
                out.append((role, v, gm_span(v)))
                continue
            else:
                continue
            for x in items:
                if isinstance(x, Tile):
                    c = cache.get(id(x))
                    al = aliases.get(id(x)) if aliases else None
                    if c is not None and c[0] == x.addr and c[1] is al and c[3] is x:
                        out.append((role, x, c[2]))
                        continue
                    sp = tile_span(x, m, aliases)
                    cache[id(x)] = (x.addr, al, sp, x)
                    out.append((role, x, sp))
                elif isinstance(x, GlobalTensor):
                    out.append((role, x, gm_span(x)))
        return out

    def _snapshot(self, pi: int) -> dict[int, int]:
        s = dict(self.vc[pi])
        s[self.th[pi]] = self.count[pi]
        return s


    # ---- cross-core edges (ptoisa.concurrent.edges) ----------------------------------------------
    def release(self, rec: Any, pipe: Pipe | None) -> dict[int, int]:
        """The clock a release carries: what ``pipe`` (None: the instruction's own pipe; ALL:
        every pipe) has done and knows, now that the releasing instruction was issued. In
        auto mode the compiler drains the core before a cross-core signal: every pipe."""
        if rec is not None and rec.ins.name == "SYNC_SET":
            self.san.xids.add(_eid(rec.values[1]))
        if pipe is None and rec is not None:
            try:
                pipe = rec.pipe
            except Exception:  # noqa: BLE001 - a pipe_of that cannot decide: every pipe
                pipe = Pipe.ALL
        if not self.races or pipe not in _PIDX:
            j: dict[int, int] = {}
            for i, vq in enumerate(self.vc):
                _join(j, vq)
                if self.count[i]:
                    j[self.th[i]] = self.count[i]
            return j
        return self._snapshot(_PIDX[pipe])

    def acquire(self, rec: Any, clocks: list[dict[int, int]], pipe: Pipe | None) -> None:
        """Join released clocks into the pipe(s) that waited: ``pipe`` (None: the waiting
        instruction's own; ALL, and any pipe in auto mode: every pipe of the core)."""
        if pipe is None and rec is not None:
            try:
                pipe = rec.pipe
            except Exception:  # noqa: BLE001
                pipe = Pipe.ALL
        if not self.races or pipe not in _PIDX:
            targets = self.vc
        else:
            targets = [self.vc[_PIDX[pipe]]]
        for c in clocks:
            for vq in targets:
                _join(vq, c)

    # ---- synchronisation -------------------------------------------------------------------------
    def sync(self, kind: str, rec: Any) -> None:
        """One synchronisation of ``kind`` (the entry's ``sync``, one of :data:`_SYNC`)."""
        v = rec.values
        if kind == "flag_set":
            src, dst, eid = v[0], v[1], _eid(v[2])
            self.used_ids.setdefault((src, dst), set()).add(eid)
            q = self.pending.setdefault((src, dst, eid), deque())
            if q and self.races:
                self.double_set(rec, q[-1][1], src, dst, eid)
            q.append((self._snapshot(_PIDX[src]), rec))
        elif kind == "flag_wait":
            src, dst, eid = v[0], v[1], _eid(v[2])
            q = self.pending.get((src, dst, eid))
            if q:
                _join(self.vc[_PIDX[dst]], q.popleft()[0])
            else:
                s = site_of(rec)
                self.san.add(Finding(
                    "unmatched-wait",
                    f"{s.op} waits for event {eid} from {src.value} to {dst.value}, but no "
                    f"earlier set_flag sets it: on the NPU this waits forever",
                    s, fix=f"insert {_flag_text(isinstance(rec.loc, SourceLoc), 'SET_FLAG', src, dst, eid)} "  # noqa: E501
                           f"on the producer side before it, or remove the wait"),
                    ("unmatched-wait", rec.loc, src, dst, eid))
        elif kind in ("buf_get", "buf_rls"):
            self.buffer_id(kind, rec)
        elif kind == "barrier":
            p = v[0]
            if p is Pipe.ALL:
                self.barrier_all()
            else:
                i = _PIDX[p]
                self.vc[i][self.th[i]] = self.count[i]
        elif kind == "events":
            op = rec.params.get("OpCode")
            waited = [e for e in rec.waits]
            if isinstance(v[0], (list, tuple)):
                waited += list(v[0])
            elif v[0] is not None:
                waited.append(v[0])
            if waited:
                for ev in waited:
                    tok = getattr(getattr(ev, "src", None), "tag", None)
                    if isinstance(tok, tuple) and tok[0] is self:
                        for vq in self.vc:
                            _join(vq, tok[1])
            elif op is not None:
                from ..isa.registry import lookup

                ins = lookup(str(getattr(op, "name", op)))
                if ins is not None and ins.pipe in _PIDX:
                    i = _PIDX[ins.pipe]
                    self.vc[i][self.th[i]] = self.count[i]
                else:
                    self.barrier_all()
        else:  # SYNCALL: every pipe of every block
            self.barrier_all()
            self.phase += 1

    def buffer_id(self, kind: str, rec: Any) -> None:
        """GET_BUF / RLS_BUF in mode 0: a release joins its pipe's clock into the id's token;
        an acquire joins the token (every earlier release of the id) into its pipe's clock.
        Mode 1 (the acquire does not wait; the release waits for every pipe) is not modelled:
        the report says so and the run is not "clean"."""
        from ..isa.sync.flags import _buf_args

        p, (bid, mode) = rec.values[0], _buf_args(rec.ins, rec.values[1], rec.values[2])
        if mode != 0:
            s = site_of(rec)
            self.san.report.not_checked(s.op, rec.loc, "mode 1 (the set_flag/wait_flag "
                                        "emulation) of buffer ids is not modelled")
            return
        i = _PIDX[p]
        if kind == "buf_rls":
            _join(self.buf_tokens.setdefault(bid, {}), self._snapshot(i))
        else:
            tok = self.buf_tokens.get(bid)
            if tok:
                _join(self.vc[i], tok)

    def double_set(self, rec: Any, prev: Any, src: Pipe, dst: Pipe, eid: int) -> None:
        """A set_flag of an event that an earlier set still holds (no wait between): the
        hardware flag is one bit, so the second set is lost and a wait pairs with the wrong
        one (the upstream simulator asserts "Event ID still occupied")."""
        s, o = site_of(rec), site_of(prev)
        pto = isinstance(rec.loc, SourceLoc)
        wait = _flag_text(pto, "WAIT_FLAG", src, dst, eid)
        self.san.add(Finding(
            "double-set",
            f"{s.op} sets event {eid} from {src.value} to {dst.value}, which {o.op} at "
            f"{where(o.loc)} set and nothing has waited for since: the event id is still "
            f"occupied (the flag is one bit: one of the two sets is lost)", s, o,
            fix=f"insert {wait} between the two sets, or use another event id for the "
                f"second"), ("double-set", rec.loc, prev.loc, src, dst, eid))

    def barrier_all(self) -> None:
        j: dict[int, int] = {}
        for i, vq in enumerate(self.vc):
            _join(j, vq)
            j[self.th[i]] = self.count[i]
            self.drained[self.th[i]] = self.count[i]
        self.vc = [dict(j) for _ in _PIPES]

    def finish(self) -> None:
        if self.pending_nan is not None:
            self.nan_after(*self.pending_nan)
            self.pending_nan = None
        for (src, dst, eid), q in self.pending.items():
            for _, rec in q:
                s = site_of(rec)
                self.san.add(Finding(
                    "leaked-event",
                    f"{s.op} sets event {eid} from {src.value} to {dst.value}, but nothing "
                    f"waits for it before the kernel ends: the flag stays set into the next "
                    f"kernel", s,
                    fix=f"insert {_flag_text(isinstance(rec.loc, SourceLoc), 'WAIT_FLAG', src, dst, eid)} "  # noqa: E501
                        f"before the end of the kernel (after the last use), or remove the set"),
                    ("leaked-event", rec.loc, src, dst, eid))
        self.pending.clear()

    # ---- races -----------------------------------------------------------------------------------
    def check_races(self, acc: Acc, accs: list[tuple[str, Any, Span]],
                    vc: dict[Any, int]) -> None:
        mem, gmem = self.mem, self.gmem
        found: dict[int, tuple[int, str, Acc, Span, int, int]] | None = None
        me, rec = acc.thread, acc.rec
        strict = me in (self.strict_th or ())
        # a reload of GM this core wrote needs a full drain, not only a flag (PTOAS #730)
        drain = self.races and rec.machine.target.traits.gm_reload_needs_drain
        # auto mode (xcore only): the compiler orders this core's own pipes; other cores'
        # GM accesses are still checked
        own = None if self.races else me >> 3
        if own is not None:
            accs = [a for a in accs if a[2].space == "GM"]
        for role, _, s in accs:
            cells = (gmem if s.space == "GM" else mem).get(s.key)
            if not cells:
                continue
            reads = role == "in" or role == "inout"
            writes = role != "in"
            slo, shi, srect = s.lo, s.hi, s.rect
            for (lo, hi), cell in cells.items():
                if lo >= shi or slo >= hi:
                    continue
                if srect is not None and cell.rect is not None and \
                        not rects_meet(srect, cell.rect):
                    continue  # column blocks of one array: no byte in common
                w = cell.writer
                if w is not None and w.rec is not rec:
                    # ordered: the same pipe in program order (unless strict), or known done
                    t = w.thread
                    if not ((t == me and not strict) or vc.get(t, 0) >= w.epoch
                            or t >> 3 == own):
                        rank = 0 if reads else 2
                        found = found if found is not None else {}
                        k = id(w.rec)
                        if k not in found or found[k][0] > rank:
                            found[k] = (rank, "RAW" if reads else "WAW", w, s, lo, hi)
                    elif reads and drain and t != me and t >> 3 == me >> 3 and \
                            s.space == "GM" and self.drained.get(t, 0) < w.epoch:
                        self.gm_visibility(w, acc, s, lo, hi)
                if writes and cell.readers:
                    for r in cell.readers.values():
                        t = r.thread
                        if r.rec is rec or (t == me and not strict) or \
                                vc.get(t, 0) >= r.epoch or t >> 3 == own:
                            continue
                        found = found if found is not None else {}
                        k = id(r.rec)
                        if k not in found or found[k][0] > 1:
                            found[k] = (1, "WAR", r, s, lo, hi)
        if found:  # one finding per pair of instructions: RAW before WAR before WAW
            for _, hz, a, s, lo, hi in found.values():
                self.race(hz, a, acc, s, lo, hi)
        for role, _, s in accs:
            if role in ("in", "inout"):
                gm = s.space == "GM"
                where_ = gmem if gm else mem
                cells = where_.get(s.key)
                if cells is None:
                    cells = where_[s.key] = {}
                k = (s.lo, s.hi)
                cell = cells.get(k)
                if cell is None:
                    if len(cells) >= self.limit.get(s.key, _PRUNE_AT):
                        self._prune(cells, gm)
                        self.limit[s.key] = max(_PRUNE_AT, 2 * len(cells))
                    cell = cells[k] = Cell(rect=s.rect)
                elif cell.rect != s.rect:
                    cell.rect = None  # two footprints under one range: the range stands
                cell.readers[acc.thread] = acc
        for role, _, s in accs:
            if role != "in":
                gm = s.space == "GM"
                where_ = gmem if gm else mem
                cells = where_.get(s.key)
                if cells is None:
                    cells = where_[s.key] = {}
                else:
                    for k in [k for k, c in cells.items() if s.lo <= k[0] and k[1] <= s.hi
                              and (s.rect is None or (c.rect is not None and _inside(
                                  c.rect, s.rect)))]:
                        del cells[k]
                old = cells.get((s.lo, s.hi))
                new = cells[(s.lo, s.hi)] = Cell(acc, s.rect)
                if old is not None:  # same range, other footprint: keep what it knew
                    new.readers.update(old.readers)
                    new.rect = None
                if len(cells) > self.limit.get(s.key, _PRUNE_AT):
                    self._prune(cells, gm)
                    self.limit[s.key] = max(_PRUNE_AT, 2 * len(cells))

    def _known(self, a: Acc) -> bool:
        """Whether every active pipe already has ``a`` ordered before its next instruction."""
        for q in self.active:
            if self.th[q] == a.thread and a.thread not in (self.strict_th or ()):
                continue
            if self.vc[q].get(a.thread, 0) < a.epoch:
                return False
        return True

    def _prune(self, cells: dict[tuple[int, int], Cell], gm: bool = False) -> None:
        """Drop the cells every pipe already knows about (GM: every pipe of every core of the
        block); merge neighbouring cells last touched by the same instructions on the same
        pipes (one instruction walking a tensor in a loop), keeping the latest epoch per
        thread."""
        known = self.group.known if gm else self._known
        for k in list(cells):
            c = cells[k]
            if (c.writer is None or known(c.writer)) and \
                    all(known(r) for r in c.readers.values()):
                del cells[k]
        if len(cells) <= _PRUNE_AT:
            return
        items = sorted(cells.items())
        cells.clear()
        (lo, hi), cur = items[0]
        for (a, b), c in items[1:]:
            if a <= hi and _same_sites(cur, c):
                hi = max(hi, b)
                cur = _merge(cur, c)
            else:
                cells[(lo, hi)] = cur
                (lo, hi), cur = (a, b), c
        cells[(lo, hi)] = cur

    def race(self, hz: str, prev: Acc, cur: Acc, s: Span, lo: int, hi: int) -> None:
        pr, cr = prev.rec, cur.rec
        key = ("race", pr.loc, pr.ins.name, cr.loc, cr.ins.name)
        if key in self.san._seen:
            return
        a, b = prev.site, cur.site
        lo, hi = max(lo, s.lo), min(hi, s.hi)
        verb = {"RAW": ("reads", "wrote"), "WAR": ("writes", "read"),
                "WAW": ("writes", "wrote")}[hz]
        same = prev.thread == cur.thread
        by = "no pipe_barrier" if same else "no set_flag/wait_flag"
        label = s.label
        if isinstance(b.loc, SourceLoc) and _SSA.match(label):
            label = "%" + label  # an SSA value's name
        pto = isinstance(b.loc, SourceLoc)
        p, q = _PIPES[prev.thread % 8], _PIPES[cur.thread % 8]
        if prev.thread >> 3 != cur.thread >> 3:  # another core of this block (mixed launch)
            self.cross_race(hz, verb, prev, cur, s, lo, hi, label, key)
            return
        msg = (f"race ({hz}) on {s.space} [{lo:#x}, {hi:#x}) ({label}): {b} {verb[0]} what "
               f"{a} at {where(a.loc)} {verb[1]}; {by} orders them")
        # where the flags go: in a .pto function, the ops holding the two in the innermost
        # block holding both (a producer in a branch or loop: after the scf.if / loop)
        got = structure.placement((a.loc, a.op), (b.loc, b.op)) if pto else None
        after, before, loop = (a, b, None) if got is None else got
        after_at = f"{after.name} at {where(after.loc)}" if got else f"{a.op} at {where(a.loc)}"
        before_at = f"{before.name} at {where(before.loc)}" if got \
            else f"{b.op} at {where(b.loc)}"
        if got and after.loc != a.loc:
            after_at += f" (holding {a.op} at {where(a.loc)})"
        if got and before.loc != b.loc:
            before_at += f" (holding {b.op} at {where(b.loc)})"
        if same:
            fix = f"insert {_barrier_text(pto, p)} after {after_at} (before {before_at})"
        elif hz == "RAW" and s.space == "GM" and \
                cur.rec.machine.target.traits.gm_reload_needs_drain:
            # a flag would order the pipes, not the store reaching GM (PTOAS #730)
            fix = (f"insert {_barrier_text(pto, Pipe.ALL)} after {after_at} and before "
                   f"{before_at} (a set_flag/wait_flag pair orders the pipes but not the store "
                   f"reaching GM)")
        else:
            # each pair of places its own id (notes naming the same places: the same pair)
            mine = self.san.proposed.setdefault((p, q), {})
            places = (where(after.loc), where(before.loc), loop is None)
            eid = mine.get(places)
            if eid is None:
                used = self.used_ids.get((p, q), set()) | set(mine.values())
                eid = mine[places] = next(
                    (i for i in range(8) if i not in used), 0)
            setf, waitf = (_flag_text(pto, "SET_FLAG", p, q, eid),
                           _flag_text(pto, "WAIT_FLAG", p, q, eid))
            fix = f"insert {setf} after {after_at} and {waitf} before {before_at}"
            if loop is not None:
                fix += (f"; they meet across iterations of the {loop.name} at "
                        f"{where(loop.loc)}: also insert one {setf} before that {loop.name} "
                        f"and one {waitf} after it")
        if loop is None and _after(a.loc, b.loc) and not (got and not same):
            fix += ("; the two meet across loop iterations: set the flag at the end of the "
                    "body and wait at the top, with one set before the loop and one wait "
                    "after it" if not same else "; the two meet across loop iterations")
        self.san.add(Finding("race", msg, b, a, hz, s.space, lo, hi, fix,
                             {"label": s.label, "scope": "core"}), key)

    def gm_visibility(self, prev: Acc, cur: Acc, s: Span, lo: int, hi: int) -> None:
        """A load of GM bytes this core stored, ordered after the store by flags only."""
        pr, cr = prev.rec, cur.rec
        key = ("gm-visibility", pr.loc, pr.ins.name, cr.loc, cr.ins.name)
        if key in self.san._seen:
            return
        a, b = prev.site, cur.site
        lo, hi = max(lo, s.lo), min(hi, s.hi)
        label = s.label
        pto = isinstance(b.loc, SourceLoc)
        if pto and _SSA.match(label):
            label = "%" + label
        bar = _barrier_text(pto, Pipe.ALL)
        msg = (f"GM visibility (RAW) on GM [{lo:#x}, {hi:#x}) ({label}): {b} reads what {a} at "
               f"{where(a.loc)} stored; a set_flag/wait_flag orders the two pipes but not the "
               f"store reaching GM, so the load may read stale data or hang the MTE "
               f"(PTOAS #730)")
        fix = (f"insert {bar} after {a.op} at {where(a.loc)} and before {b.op} at "
               f"{where(b.loc)} (a full drain: the store has reached GM before the load "
               f"issues), or keep the data on chip instead of the GM round trip")
        self.san.add(Finding("gm-visibility", msg, b, a, "RAW", s.space, lo, hi, fix,
                             {"label": s.label}), key)

    def cross_race(self, hz: str, verb: tuple[str, str], prev: Acc, cur: Acc, s: Span,
                   lo: int, hi: int, label: str, key: Any) -> None:
        """A race between two cores of one cluster: the fix is a cross-core flag."""
        a, b = prev.site, cur.site
        pa, pb = self.san.core_name(prev.thread), self.san.core_name(cur.thread)
        p, q = _PIPES[prev.thread % 8], _PIPES[cur.thread % 8]
        pto = isinstance(b.loc, SourceLoc)
        eid = next((i for i in range(16) if i not in self.san.xids), 0)
        msg = (f"race ({hz}) between cores on {s.space} [{lo:#x}, {hi:#x}) ({label}): {b} on "
               f"{pb} {verb[0]} what {a} on {pa} at {where(a.loc)} {verb[1]}; no cross-core "
               f"flag (sync.set/sync.wait) or TPUSH/TPOP orders them")
        if pto:
            mode = " {ffts_mode = 1}" if pa.startswith("AIV") and pb.startswith("AIV") else ""
            st = f"pto.sync.set #pto.pipe<{p.value}>, {eid}{mode}"
            wt = f"pto.sync.wait #pto.pipe<{q.value}>, {eid}"
        else:
            mode = ", FftsMode=1" if pa.startswith("AIV") and pb.startswith("AIV") else ""
            st = f"pto.SYNC_SET(pto.Pipe.{p.name}, {eid}{mode})"
            wt = f"pto.SYNC_WAIT(pto.Pipe.{q.name}, {eid})"
        fix = (f"insert {st} after {a.op} at {where(a.loc)} on {pa} and {wt} before {b.op} at "
               f"{where(b.loc)} on {pb}")
        if pa.startswith("AIV") and pb.startswith("AIV"):
            fix = ("give each vector core its own part of the array (offsets from "
                   f"get_subblock_idx), or {fix}")
        elif pa.startswith("AIV") and pb == "AIC":
            fix += " (in the default FFTS mode 2 the AIC's wait needs the set on both AIVs)"
        self.san.add(Finding("race", msg, b, a, hz, s.space, lo, hi, fix,
                             {"label": s.label, "cores": (pa, pb)}), key)

    # ---- uninitialised reads ---------------------------------------------------------------------
    def check_uninit(self, acc: Acc, accs: list[tuple[str, Any, Span]],
                     reads: bool = True) -> None:
        written, full = self.written, self.full
        for role, v, s in accs:
            if not reads or role not in ("in", "inout") or s.space == "GM" or s in full:
                continue
            ivs = written.get(s.key)
            gap = _first_gap(ivs, s.lo, s.hi)
            if gap is not None:
                site = acc.site
                key = ("uninit", site.loc, site.op, s.label)
                if key in self.san._seen:
                    continue
                name = getattr(v, "name", None)
                name = (("%" if isinstance(site.loc, SourceLoc) else "") + name) if name \
                    else s.label
                what = name if name.startswith("tile ") else f"tile {name}"
                self.san.add(Finding(
                    "uninit",
                    f"{site.op} reads {what} ({s.space} [{s.lo:#x}, {s.hi:#x})) but bytes "
                    f"[{gap[0]:#x}, {gap[1]:#x}) were not written in this launch",
                    site, space=s.space, lo=gap[0], hi=gap[1],
                    fix=f"write {what} (a tload, texpands...) before {site.op} reads it",
                    extra={"tile": name}), key)
        for role, _, s in accs:
            if role != "in" and s.space != "GM" and s not in full:
                ivs = written.get(s.key)
                if ivs is None:
                    written[s.key] = [[s.lo, s.hi]]
                elif _first_gap(ivs, s.lo, s.hi) is not None:
                    _add_interval(ivs, s.lo, s.hi)
                full.add(s)  # written in full: later reads of exactly these bytes are fine


def _per_block(accs: list[tuple[str, Any, Span]], lanes: int
               ) -> list[tuple[str, Any, Span]]:
    """A lockstep core of a mixed launch: each GM access as one span per block, keyed by the
    block (the cores of one block race with each other; blocks are :mod:`.blocks`' concern).
    The hull of every block's view would make AIV0's rows of one block meet AIV1's of the
    next."""
    out: list[tuple[str, Any, Span]] = []
    for role, v, s in accs:
        if s.space != "GM" or not isinstance(v, GlobalTensor):
            out.append((role, v, s))
            continue
        uniform = not isinstance(v.offset, np.ndarray)
        for b in range(lanes):
            sb = s if uniform else gm_span(v.block(b))
            out.append((role, v, Span(sb.space, (sb.key, b), sb.lo, sb.hi, sb.label, sb.rect)))
    return out


def _ident(a: Acc | None) -> Any:
    return None if a is None else (a.thread, a.rec.ins.name, a.rec.loc)


def _same_sites(c: Cell, d: Cell) -> bool:
    if _ident(c.writer) != _ident(d.writer) or c.readers.keys() != d.readers.keys():
        return False
    return all(_ident(r) == _ident(d.readers[t]) for t, r in c.readers.items())


def _later(a: Acc | None, b: Acc | None) -> Acc | None:
    if a is None or b is None:
        return a or b
    return a if a.epoch >= b.epoch else b


def _inside(a: Any, b: Any) -> bool:
    """Whether footprint ``a`` lies within footprint ``b``."""
    return a[0] == b[0] and b[1] <= a[1] and a[2] <= b[2] and b[3] <= a[3] and a[4] <= b[4]


def _merge(c: Cell, d: Cell) -> Cell:
    m = Cell(_later(c.writer, d.writer))
    for t, r in c.readers.items():
        m.readers[t] = _later(r, d.readers[t])  # type: ignore[assignment]
    return m


def _eid(v: Any) -> int:
    if isinstance(v, str) and v.upper().startswith("EVENT_ID"):
        v = v[8:]
    return int(v)


def _first_gap(ivs: list[list[int]] | None, lo: int, hi: int) -> tuple[int, int] | None:
    """The first sub-range of [lo, hi) not covered by the sorted disjoint intervals."""
    if not ivs:
        return (lo, hi)
    cur = lo
    for a, b in ivs:
        if b <= cur:
            continue
        if a > cur:
            return (cur, min(a, hi))
        cur = b
        if cur >= hi:
            return None
    return (cur, hi) if cur < hi else None


def _add_interval(ivs: list[list[int]], lo: int, hi: int) -> None:
    out: list[list[int]] = []
    placed = False
    for a, b in ivs:
        if b < lo:
            out.append([a, b])
        elif a > hi:
            if not placed:
                out.append([lo, hi])
                placed = True
            out.append([a, b])
        else:
            lo, hi = min(lo, a), max(hi, b)
    if not placed:
        out.append([lo, hi])
    ivs[:] = out

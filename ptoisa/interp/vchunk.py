"""A chunk loop around a vecscope loop, run as one batch: the ``scf.for`` that moves a
vector through UB chunk by chunk (DMA GM -> UB, a ``pto.vecscope`` loop of register ops
over the chunk, DMA UB -> GM, flags between), each op of its body run once over all the
chunks, with a leading axis of one row per chunk.

Its iterations all use the same UB bytes, so they are not independent as they stand; they
are once each iteration's UB is its own ("privatised"): a *window* of UB bytes, one row per
iteration, that the iteration writes whole before it reads any of it. The batch proves, from
the bytes every op accesses (before anything runs):

- UB: every UB byte an op of the body reads (a DMA's source, a ``vlds`` row) lies in a
  window written earlier in the same iteration: by a DMA GM -> UB (all its bytes), or by the
  ``vsts`` rows of the vecscope loop when they lie end to end under masks that are full in
  every row (all their bytes: what the ``plt`` chain says before anything runs); a later
  write into a window (a masked ``vsts``) lands in that window's rows. A read outside the
  windows (UB as the loop found it, or as an earlier iteration left it) and two windows
  sharing bytes refuse the loop. Nothing from one iteration reaches the next, so the
  iterations are independent; after the loop, UB holds what the last one wrote.
- GM: no byte a DMA UB -> GM writes is written by another write of the body or iteration,
  nor read by another iteration (an iteration may read what it writes itself: op after op
  over all iterations keeps its order).

Then each op runs once: the integer ops and ``pto.addptr`` on the induction variable as rows
(GM pointers as one byte offset per chunk), a DMA as one copy of (chunks, bytes) rows, the
vecscope loop as the vecscope batch (``interp/vbatch.py``) on registers of (chunks x
iterations, lanes) rows through the entries' own semantics, the flags' records appended
once per iteration in the body's order. Copies that change no bit are not made: a window a
DMA GM -> UB fills is a view of GM (copied before a DMA of the batch writes those GM
bytes); a ``vlds`` of a window's rows end to end is a view of it (dist NORM: the 256 bytes
as they are); a window the ``vsts`` rows fill whole, every lane written, is the register's
bytes; a window is copied before it is written while anything else holds a view of it (a
register is never written after the op that made it). The iterations being independent,
they run in groups of about :data:`GROUP_ROWS` register rows, one after another (each op's
arrays stay in cache).

It runs only where the vecscope batch does (a plain machine: nothing observes, one block,
values, nothing lazy, no plan recording: the sanitizer and the cycle model always see the
per-op stream), with no atomic mode on, and one iteration at a time whenever any of this
fails. Bodies of other ops (SSA values carried, a DMA of several rows, pointers made in the
loop used inside the vecscope ...) are not batched.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import numpy as np

from .. import dtypes as D
from ..errors import PtoError
from ..ir.core import Op
from ..isa.micro.load_store import rows_span
from ..isa.registry import REGISTRY
from ..vector.regs import VREG_BYTES, Mask, Ptr, VReg, VRegSpec, buffer_bytes
from . import bridge, vbatch
from .compiler import _HANDLERS, CompiledFunc, Env, Step
from .micro import micro_parts

#: loops run as one chunk batch / that ran one iteration at a time at run time, since import
stats = {"batched": 0, "per_iteration": 0}

#: register rows (of 256 bytes) a group of chunks runs on at once: the chunk loop runs in
#: groups of chunks this many rows together (the whole loop at once when they fit)
GROUP_ROWS = int(os.environ.get("PTOISA_VCHUNK_ROWS", "4096"))



_Refused = vbatch._Refused  # (one refusal: vbatch.scalar_op raises it for both batches)


class _Window:
    """UB bytes [at, at + n) privatised: ``rows`` (chunks, n) uint8; ``lent`` while its rows
    are shared with something else (a register, GM) and must be copied before they are
    written; ``gm``: the absolute byte range of GM its rows are a view of (None: not one),
    copied before a DMA writes those bytes."""

    __slots__ = ("at", "n", "rows", "lent", "gm")

    def __init__(self, at: int, n: int, rows: np.ndarray, lent: bool,
                 gm: tuple[int, int] | None = None) -> None:
        self.at, self.n, self.rows, self.lent, self.gm = at, n, rows, lent, gm

    def writable(self) -> np.ndarray:
        if self.lent:
            self.rows = self.rows.copy()
            self.lent = False
            self.gm = None
        return self.rows


def wrap(cf: CompiledFunc, op: Op, step: Step) -> Step:
    """``step`` (scf.for ``op``'s own) or, when its body has the form above, a step that
    runs it as one batch when it can and as ``step`` otherwise."""
    body = op.regions[0].block.ops if op.regions and op.regions[0].blocks else []
    if not any(o.name == "pto.vecscope" for o in body):
        return step
    try:
        run = _compile(cf, op)
    except _Refused:
        return step

    def chunked(env: Env) -> None:
        if vbatch.ENABLED and run(env):
            stats["batched"] += 1
        else:
            stats["per_iteration"] += 1
            step(env)
    return chunked


def _compile(cf: CompiledFunc, op: Op) -> Callable[[Env], bool]:
    blk = op.regions[0].block
    ops = list(blk.ops)
    if ops and ops[-1].name == "scf.yield":
        if ops.pop().operands:
            raise _Refused
    if len(blk.args) != 1 or op.results or len(op.operands) != 3:
        raise _Refused
    iv = blk.args[0]
    lb, ub, stp = (cf.slot(v) for v in op.operands)
    iv_slot = cf.slot(iv)
    inside: set[int] = {id(iv)}
    once: list[Step] = []
    int_ops: list[tuple[Step, list[int], int]] = []
    rows: set[int] = {id(iv)}  # integer rows (one per chunk)
    gm_rows: dict[int, tuple[int, int, int, Any]] = {}  # addptr result -> (base, off, slot, dt)
    plan: list[tuple[str, Any]] = []
    for o in ops:
        if o.regions and o.name != "pto.vecscope":
            raise _Refused
        if vbatch.scalar_op(cf, o, inside, rows, once, int_ops):
            continue
        if o.name == "pto.addptr":
            base, off = o.operands
            pt = base.type
            if id(base) in inside or getattr(pt, "space", None) not in (None, "gm") \
                    or (id(off) in inside and id(off) not in rows):
                raise _Refused
            dt = bridge.elem_dtype(pt.dtype)  # type: ignore[attr-defined]
            gm_rows[id(o.results[0])] = (cf.slot(base), cf.slot(off), cf.slot(o.results[0]),
                                         dt)
            inside.add(id(o.results[0]))
            plan.append(("addptr", id(o.results[0])))
            continue
        ins = bridge.instr_of(o.name)
        if ins is not None and ins.chunk_dma:
            way = ins.chunk_dma
            fixed, params, res = micro_parts(cf, o, ins)
            if params or res:
                raise _Refused
            plain = list(o.operands)
            names = [x.name for x in ins.operands]
            gm_i, ub_i = (names.index("gm_src"), names.index("ub_dst")) if way == "in" \
                else (names.index("gm_dst"), names.index("ub_src"))
            len_i, nb_i = names.index("len_burst"), names.index("nburst")
            others = [k for k, s in enumerate(fixed) if s is not None
                      and k not in (gm_i, ub_i, len_i, nb_i)]
            # (optional groups: a second l2_cache_ctl form is harmless; loop / pad refuse)
            if any(ins.operands[k].name in ("loop", "pad") for k in others) \
                    or not isinstance(fixed[nb_i], tuple) or fixed[nb_i][0] != "group":
                raise _Refused
            gm_v = next(v for v in plain if cf.slot(v) == fixed[gm_i])
            if id(gm_v) in inside and id(gm_v) not in gm_rows:
                raise _Refused
            for v in plain:
                if v is not gm_v and id(v) in inside:
                    raise _Refused  # (UB pointers, lengths, strides from outside the loop)
            plan.append(("dma_" + way, (fixed[gm_i], fixed[ub_i], fixed[len_i],
                                                fixed[nb_i][1], id(gm_v)
                                                if id(gm_v) in gm_rows else None, o)))
            continue
        flag = getattr(_HANDLERS.get(o.name), "instr_name", None)
        if flag is not None and REGISTRY[flag].sync in ("flag_set", "flag_wait") \
                and not o.operands:  # (static: its record is its whole effect)
            plan.append(("flag", cf.compile_op(o)))
            continue
        if o.name == "pto.vecscope":
            inner = o.regions[0].block.ops if len(o.regions) == 1 and o.regions[0].blocks \
                else []
            if len(inner) != 1 or inner[0].name != "scf.for":
                raise _Refused
            runner = vbatch.batched_loop(cf, inner[0])
            parts = getattr(runner, "parts", None)
            if parts is None or any(u.ins.rows_access is not None and u.ins.rows_window is None
                                    for u in parts.items):
                raise _Refused  # (the memory ops the windows take: their rows_window)
            for x in inner[0].walk():  # (every value it reads from the chunk loop: constants)
                for v in x.operands:
                    if id(v) in inside:
                        raise _Refused
            plan.append(("vecscope", parts))
            continue
        raise _Refused
    if not any(k == "vecscope" for k, _ in plan):
        raise _Refused
    target = cf.c.target
    cap = target.pointer_window("UB")
    key_slots: list[int] = []
    rows_slots = {iv_slot} | {k for _s, _a, k in int_ops}
    for _step, args, _k in int_ops:
        key_slots.extend(a for a in args if a not in rows_slots)
    for kind, what in plan:
        if kind == "addptr":
            bslot, oslot, _r, _dt = gm_rows[what]
            key_slots.extend(x for x in (bslot, oslot) if x not in rows_slots)
        elif kind in ("dma_in", "dma_out"):
            gslot, uslot, lslot, nb, gid, _o = what
            key_slots.extend((uslot, lslot, *nb))
            if gid is None:
                key_slots.append(gslot)

    def run(env: Env) -> bool:
        ctx = env[0]
        if not vbatch.plain_machine(ctx, target):
            return False
        m = ctx.machine
        atomic = m.micro_regs.get("atomic")
        if atomic is not None and atomic.get("op") is not None:
            return False
        rng = vbatch.loop_range(env, (lb, ub, stp), once, 2)
        if rng is None:
            return False
        i, end, st, chunks = rng
        per: dict[int, Any] = {iv_slot: np.arange(i, end, st, dtype=np.int64)}
        for step, args, k in int_ops:
            for a in args:
                if a in per:
                    env[a] = per[a]
            try:
                step(env)
            except PtoError:
                return False
            if not isinstance(env[k], np.ndarray) or env[k].shape != (chunks,):
                return False
            per[k] = env[k]
        # the verdict and what it found, kept per key (what the accesses depend on)
        got = vbatch.kept(cache, _key(env, i, end, st), lambda: _check(env, per, chunks, cap))
        if got is None:
            return False
        gm, dmas, inner = got
        ctx.spend(chunks, op)  # (as the loop's own step: before its first chunk)
        # (the flags first: their records are their whole effect on a plain machine)
        log = m.sync_log
        before = 0 if log is None else len(log)
        flags = [s for k, s in plan if k == "flag"]
        try:
            for s in flags:
                s(env)
        except PtoError:
            if m.sync_log is not None:
                del m.sync_log[before:]
            return False
        log = m.sync_log
        if flags and (log is None or len(log) != before + len(flags)):
            if log is not None:
                del log[before:]
            return False
        seq = list(log[before:]) if log is not None else []
        for kind, _what in plan:
            if kind == "vecscope":
                m.vf_seq += chunks
        for _parts, kept in inner:
            ctx.spend(chunks * kept[4], _parts.op)
        # chunks in groups of about GROUP_ROWS register rows (each op's arrays stay in cache;
        # the chunks being independent, any grouping in order gives the same bytes)
        rows = max([kept[4] for _p, kept in inner] + [1])
        size = max(1, min(chunks, GROUP_ROWS // rows))
        windows: list[_Window] = []
        addrs = {b: env[b].__array_interface__["data"][0] for b, *_r in dmas}
        for g0 in range(0, chunks, size):
            windows = _group(env, m, dmas, inner, g0, min(chunks, g0 + size), addrs)
        for w in windows:
            buffer_bytes(m, "ub", w.at, w.n, "the stored", role=None)[...] = w.rows[-1]
        env[iv_slot] = i + (chunks - 1) * st
        for _step, _args, k in int_ops:
            env[k] = int(per[k][-1])
        for slot, (bslot, offs) in gm.items():
            base = env[bslot]
            env[slot] = base.reshape(-1).view(np.uint8)[int(offs[-1]):].view(base.dtype)
        if log is not None and flags:
            log.extend(seq * (chunks - 1))
        return True

    def _group(env: Env, m: Any, dmas: list[Any], inner: list[Any], c0: int, c1: int,
               addrs: dict[int, int]) -> list[_Window]:
        """The body's ops over chunks c0 to c1 (one row each); the windows they leave."""
        n_ch = c1 - c0
        windows: list[_Window] = []
        d = v = 0
        for kind, _what in plan:
            if kind == "dma_in":  # (a view of GM: copied before a DMA writes those bytes)
                bslot, offs, ub_at, n, step = dmas[d]
                d += 1
                src = _gm_rows(env[bslot], offs[c0:c1], n, step=step)
                at = addrs[bslot]
                hull = (at + int(offs[c0]), at + int(offs[c1 - 1]) + n) \
                    if step is not None else None  # (uneven rows: a copy)
                windows.append(_Window(ub_at, n, src, hull is not None, hull))
            elif kind == "dma_out":
                bslot, offs, ub_at, n, step = dmas[d]
                base = env[bslot]
                d += 1
                at = addrs[bslot]
                lo, hi = at + int(offs[c0]), at + int(offs[c1 - 1]) + n
                for w in windows:
                    if w.gm is not None and w.gm[0] < hi and lo < w.gm[1]:
                        w.writable()  # (reads of the old bytes keep them)
                w = _find(windows, ub_at, n)
                frm = w.rows[:, ub_at - w.at:ub_at - w.at + n]
                m.gm_barrier(base)
                to = _gm_rows(base, offs[c0:c1], n, write=True, step=step)
                to[...] = frm
            elif kind == "vecscope":
                parts, kept = inner[v]
                v += 1
                _inner(parts, kept, m, env, windows, n_ch)
        return windows

    cache: dict[tuple[Any, ...], Any] = {}

    def _key(env: Env, i: int, end: int, st: int) -> tuple[Any, ...] | None:
        """What the verdict depends on besides the bounds: the values from outside the loop
        the integer ops, pointers and DMAs read (arrays by address, size and type), the
        vecscope loops' keys; None when one is of another kind (nothing is kept)."""
        parts: list[Any] = [i, end, st]
        for s in key_slots:
            v = env[s]
            if isinstance(v, np.ndarray):
                parts.append((v.__array_interface__["data"][0], v.nbytes, v.dtype.str,
                              v.shape, v.strides))
            elif isinstance(v, Ptr):
                parts.append((v.space, v.addr, v.dtype.name))
            elif vbatch._ints(v):
                parts.append(int(v))
            else:
                return None
        for kind, what in plan:
            if kind == "vecscope":
                a, b, c = (env[x] for x in what.bounds)
                try:
                    for s in what.once:
                        s(env)
                except PtoError:
                    return None
                a, b, c = (env[x] for x in what.bounds)
                if not vbatch._ints(a, b, c):
                    return None
                k = what.key(env, int(a), int(b), int(c))
                if k is None:
                    return None
                parts.append(k)
        return tuple(parts)

    def _check(env: Env, per: dict[int, Any], chunks: int, cap: int) -> Any:
        """(the GM pointers made in the loop by result slot: (base's slot, byte offset per
        chunk), the DMAs' (base's slot, byte offset per chunk, UB address, bytes, the
        offsets' even step or None), the vecscope loops' (parts, prepared)), or None when
        the accesses do not prove the chunks independent (see the module's docstring). What
        it keeps holds no array of the launch: a cached verdict serves the next launch."""
        gm: dict[int, tuple[int, np.ndarray]] = {}
        gm_by_id: dict[int, tuple[int, np.ndarray, np.ndarray]] = {}
        for kind, what in plan:
            if kind != "addptr":
                continue
            bslot, oslot, rslot, dt = gm_rows[what]
            base = env[bslot]
            offs = per[oslot] if oslot in per else env[oslot]
            if not isinstance(base, np.ndarray) or base.dtype != dt.np or base.ndim != 1 \
                    or not base.flags.c_contiguous or not vbatch._ints(*np.atleast_1d(offs)[:1]):
                return None
            offs = np.broadcast_to(np.asarray(offs, np.int64), (chunks,))
            if int(offs.min()) < 0 or int(offs.max()) > base.size:
                return None
            gm[rslot] = (bslot, offs * dt.itemsize)
            gm_by_id[what] = (bslot, base, offs * dt.itemsize)
        dmas: list[tuple[int, np.ndarray, int, int]] = []
        inner: list[tuple[Any, Any]] = []
        # UB: the windows written so far in an iteration, [(at, end)]; a read outside them (the
        # UB as the loop found it, or what an earlier iteration left) refuses the loop, simply
        made: list[tuple[int, int]] = []
        gm_w: list[tuple[np.ndarray, int]] = []  # (absolute starts, bytes)
        gm_r: list[tuple[np.ndarray, int]] = []
        for kind, what in plan:
            if kind in ("dma_in", "dma_out"):
                gslot, uslot, lslot, nb, gid, _o = what
                n, nb_v, ptr = env[lslot], [env[s] for s in nb], env[uslot]
                if not vbatch._ints(n, *nb_v) or len(nb_v) != 3 or int(nb_v[0]) != 1 \
                        or int(n) <= 0 or not isinstance(ptr, Ptr) or ptr.space != "ub":
                    return None
                n = int(n)
                if gid is not None:
                    bslot, base, offs = gm_by_id[gid]
                else:
                    p = env[gslot]
                    if not isinstance(p, np.ndarray) or p.ndim != 1 \
                            or not p.flags.c_contiguous:
                        return None
                    bslot, base, offs = gslot, p, np.zeros(chunks, np.int64)
                if int(offs.max()) + n > base.nbytes or ptr.addr < 0 or ptr.addr + n > cap:
                    return None
                starts = base.__array_interface__["data"][0] + offs
                if kind == "dma_in":
                    if not _disjoint_from(made, ptr.addr, ptr.addr + n):
                        return None
                    made.append((ptr.addr, ptr.addr + n))
                    gm_r.append((starts, n))
                else:
                    if not _inside(made, ptr.addr, ptr.addr + n):
                        return None
                    gm_w.append((starts, n))
                dmas.append((bslot, offs, ptr.addr, n))
            elif kind == "vecscope":
                kept = _prepare_inner(what, env)
                if kept is None:
                    return None
                for role, lo, hi, whole in kept[5]:
                    if role == "in":
                        if not _inside(made, lo, hi):
                            return None  # (UB as the loop found it, or carried: not run)
                    elif not _inside(made, lo, hi):
                        if not whole or not _disjoint_from(made, lo, hi):
                            return None
                        made.append((lo, hi))
                inner.append((what, kept))
        if not _gm_independent(gm_w, gm_r, chunks):
            return None
        dmas = [(b, o, a, n, _even(o)) for b, o, a, n in dmas]
        return gm, dmas, inner

    return run


def _prepare_inner(parts: Any, env: Env) -> Any:
    """The vecscope loop's (verdict ok, rows, finals, chained, trips, UB accesses as (role,
    lo, hi, whole)) for this run, or None when it cannot batch (see vbatch)."""
    rng = vbatch.loop_range(env, parts.bounds, parts.once, 1)
    if rng is None:
        return None
    i, end, st, trips = rng
    kept = vbatch.kept(parts.cache, parts.key(env, i, end, st),
                       lambda: parts.prepare(env, i, end, st, trips))
    if kept is None:
        return None
    ok, base, finals, chained = kept
    if not ok:
        return None
    per = dict(base)
    # the chain ops of counts alone, run now: a store's mask must be known full beforehand
    for n in sorted(parts.of_counts):
        u = parts.items[n]
        if n not in chained:
            chained[n] = vbatch._call(u, env[0].machine, per, env, trips)
        out = chained[n]
        vbatch.bind_results(u, per, out)
    acc: list[tuple[str, int, int, bool]] = []
    for u in parts.items:
        ra = u.ins.rows_access
        if ra is None:
            continue
        vals = [None if s is None else per[s] if s in per else sp if sp is not None
                else env[s] for s, sp in zip(u.fixed, u.specs, strict=True)]
        vals = [np.full(trips, int(v), np.int64) if o.kind == "scalar" and vbatch._ints(v)
                else v for v, o in zip(vals, u.ins.operands, strict=True)]
        got = ra(vals, u.params)
        if got is None:
            return None
        masked = [v for v, o in zip(vals, u.ins.operands, strict=True) if o.kind == "mask"
                  and v is not None]
        spec = next((v for v in vals if isinstance(v, VRegSpec)), None)
        for role, starts, nb in got:
            lo, hi = int(starts.min()), int(starts.max()) + nb
            packed = hi - lo == starts.size * nb and \
                (starts.size == 1 or bool((np.diff(starts) == nb).all()))
            # (a store writes every byte of its rows: no mask, or one full at the lanes' width)
            # (a mask known only by its type, computed in the loop, is not known full)
            full = all(isinstance(mk, Mask) and mk.full is True and spec is not None
                       and spec.lanes * mk.step == VREG_BYTES for mk in masked)
            acc.append((role, lo, hi, packed and full))
    # (what the groups of chunks reuse: tiled values, each load's and store's rows)
    memo: dict[Any, Any] = {}
    return ok, per, finals, chained, trips, acc, memo


def _inner(parts: Any, kept: Any, m: Any, env: Env, windows: list[_Window],
           chunks: int) -> None:
    """The vecscope loop over every chunk: its micro-ops on (chunks x trips, lanes) rows;
    loads and stores on the windows."""
    _ok, base, finals, chained, trips, _acc, memo = kept
    per: dict[int, Any] = {}  # (values of every chunk's rows: tiled when an op reads them)
    for n, u in enumerate(parts.items):
        if n in chained:
            out = memo.get((n, chunks))
            if out is None:
                out = memo[n, chunks] = _tile(chained[n], chunks)
        elif u.ins.rows_access is not None:
            vals = [None if s is None else base[s] if s in base else per[s] if s in per
                    else env[s] for s in u.fixed]
            if ("rows", n) not in memo:  # (the rows' offsets, once: as the check saw them)
                vals = [np.full(trips, int(v), np.int64) if o.kind == "scalar"
                        and vbatch._ints(v) else v for v, o in zip(vals, u.ins.operands,
                                                                   strict=True)]
            try:
                out = _memory(u, n, vals, windows, chunks, trips, memo)
            except PtoError as e:
                raise e.at_op(u.op.name, u.op.loc) from None
        else:
            for x in u.fixed:
                if x is not None and x not in per and x in base:
                    t = memo.get(("slot", x, chunks))
                    if t is None:
                        t = memo["slot", x, chunks] = _tile(base[x], chunks)
                    per[x] = t
            out = vbatch._call(u, m, per, env, chunks * trips)
        vbatch.bind_results(u, per, out)
    lb, _ub, stp = parts.bounds
    env[parts.iv_slot] = int(env[lb]) + (trips - 1) * int(env[stp])
    vbatch.bind_finals(env, finals)


def _memory(u: Any, k: int, vals: list[Any], windows: list[_Window], chunks: int, trips: int,
            memo: dict[Any, Any]) -> Any:
    """A load or store (item ``k``) of the vecscope loop over every chunk's window, through
    its entry's ``rows_window``."""
    got = memo.get(("rows", k))
    if got is None:  # (registers by their types, as the check gave them)
        typed = [VRegSpec(v.data.shape[-1], D.dtype(v.data.dtype))
                 if o.kind == "vreg" and isinstance(v, VReg) else v
                 for v, o in zip(vals, u.ins.operands, strict=True)]
        acc = u.ins.rows_access(typed, u.params)
        if acc is None or len(acc) != 1:
            raise PtoError(f"{u.op.name}: not one access per row in the chunk batch")
        ((role, at, nb),) = acc
        kinds = [o.kind for o in u.ins.operands]
        vreg = next((j for j, x in enumerate(kinds) if x == "vreg"), None)
        masks = [j for j, x in enumerate(kinds) if x == "mask"]
        got = memo["rows", k] = (role, at, int(at.min()), int(at.max()) + nb, rows_span(at),
                                 vreg, masks)
    role, at, lo, hi, span, vreg, masks = got
    window = u.ins.rows_window
    if role == "in":
        w = _find(windows, lo, hi)
        out, view = window(w.rows, chunks, at - w.at, vals, u.params, _shift(span, w.at))
        w.lent = w.lent or view
        return out
    w = next((x for x in windows if x.at <= lo and hi <= x.at + x.n), None)
    value = None if vreg is None else vals[vreg]
    lanes = value.data.shape[-1] if isinstance(value, VReg) else 0
    whole = span[2] is None and all(
        v is None or isinstance(v, Mask) and v.full is True and lanes * v.step == VREG_BYTES
        for v in (vals[j] for j in masks))
    if w is None or whole and (lo, hi) == (w.at, w.at + w.n):
        # (the rows fill the window whole, end to end, every lane written: its bytes are the
        # register's; a new window only so, proved)
        out, rows = window(None, chunks, at - lo, vals, u.params, _shift(span, lo))
        if w is None:
            windows.append(_Window(lo, hi - lo, rows, True))
        else:
            w.rows, w.lent, w.gm = rows, True, None
        return out
    out, _ = window(w.writable(), chunks, at - w.at, vals, u.params, _shift(span, w.at))
    return out


def _shift(span: tuple[int, int, Any, bool], by: int) -> tuple[int, int, Any, bool]:
    """A :data:`rows_span` of addresses as one of the offsets from ``by``."""
    return span[0] - by, span[1] - by, span[2], span[3]


def _tile(v: Any, chunks: int) -> Any:
    """A value of the vecscope loop's rows (trips) over every chunk: (chunks x trips) rows,
    chunk after chunk (rows the same in every row: a view)."""
    if isinstance(v, tuple):
        return tuple(_tile(x, chunks) for x in v)
    if isinstance(v, Mask):
        b = v.bits
        if b.ndim == 1 or bool((b == b[0]).all()):
            row = b if b.ndim == 1 else b[0]
            return Mask(row if b.ndim == 1 else np.lib.stride_tricks.as_strided(
                row, (chunks * b.shape[0], b.shape[-1]), (0, row.strides[0]),
                writeable=False), v.gran, v.full)
        return Mask(np.tile(b, (chunks, 1)), v.gran, v.full)
    if isinstance(v, VReg):
        d = v.data
        return VReg(d if d.ndim == 1 else np.tile(d, (chunks, 1)))
    if isinstance(v, np.ndarray) and v.ndim == 1:
        return np.tile(v, chunks)
    return v


def _find(windows: list[_Window], lo: int, hi: int) -> _Window:
    for w in reversed(windows):
        if w.at <= lo and hi <= w.at + w.n:
            return w
    raise PtoError(f"UB bytes [{lo:#x}, {hi:#x}) are in no window of the chunk batch")


def _even(offs: np.ndarray) -> int | None:
    """The step of evenly spaced, non-decreasing offsets, else None."""
    step = int(offs[1] - offs[0]) if offs.size > 1 else 0
    return step if step >= 0 and (offs.size < 3 or bool((np.diff(offs) == step).all())) \
        else None


def _gm_rows(base: np.ndarray, offs: np.ndarray, n: int, write: bool = False,
             step: int | None = None) -> np.ndarray:
    """Bytes [offs[k], offs[k] + n) of ``base`` as (chunks, n) rows: a view when the offsets
    step evenly (``step``, from :func:`_even`), else a copy (a source only: a destination's
    offsets step evenly, proved)."""
    raw = base.reshape(-1).view(np.uint8)
    k = offs.size
    s0 = int(offs[0])
    if k == 1:
        step = n
    if step is not None and (not write or step >= n):
        if step == n:
            return raw[s0:s0 + k * n].reshape(k, n)
        return np.lib.stride_tricks.as_strided(raw[s0:], (k, n), (step, 1), writeable=write)
    if write:
        raise PtoError("the chunk batch's GM rows do not step evenly")  # (refused before)
    return raw[offs[:, None] + np.arange(n)]


def _inside(made: list[tuple[int, int]], lo: int, hi: int) -> bool:
    return any(a <= lo and hi <= b for a, b in made)


def _disjoint_from(made: list[tuple[int, int]], lo: int, hi: int) -> bool:
    return all(hi <= a or b <= lo for a, b in made)


def _gm_independent(writes: list[tuple[np.ndarray, int]],
                    reads: list[tuple[np.ndarray, int]], chunks: int) -> bool:
    """No GM byte a write of one chunk (or op) touches is written by another write, nor read
    by another chunk; the writes' rows step evenly (one view each)."""
    it = np.arange(chunks, dtype=np.int64)
    ws, we, wit = [], [], []
    for starts, n in writes:
        if _even(starts) is None:
            return False  # (one view of rows in order per write)
        ws.append(starts)
        we.append(starts + n)
        wit.append(it)
    if not ws:
        return True
    s, e, w_it = np.concatenate(ws), np.concatenate(we), np.concatenate(wit)
    order = np.argsort(s, kind="stable")
    s, e, w_it = s[order], e[order], w_it[order]
    if (s[1:] < e[:-1]).any():
        return False
    for starts, n in reads:
        a = np.searchsorted(e, starts, side="right")  # first write ending after the start
        b = np.searchsorted(s, starts + n, side="left")  # writes starting before the end
        cnt = b - a
        last = len(s) - 1
        if (cnt > 1).any():
            return False
        hit = cnt == 1
        if hit.any() and not (w_it[np.minimum(a, last)][hit] == it[hit]).all():
            return False
    return True


__all__ = ["stats", "wrap"]

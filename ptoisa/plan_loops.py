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

An iteration whose data instructions repeat the same instructions on other tiles (an
unrolled body, ping-pong tiles) is cut into that many lanes, when each tile keeps one part
in the repeated body (lane ``k * q + s``: segment ``s`` of iteration ``k``); else the
iteration is one lane.

In a lockstep launch of B blocks (lanes of lanes) the lanes machine has B lanes per
iteration (lane ``b * groups + g``: a block's iterations side by side); a GM view may have
one offset per block, and the proofs above run over every lane: no two lanes (iterations of
one block or of two) write bytes another reads or writes; a tile from before the loop is
broadcast to each block's lanes, a tile left for later takes each block's last lane.

A loop that fails one of these runs as recorded, one call per instruction and iteration, and
the reason is kept in the function's plan stats (``why_loop``).
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from typing import Any

import numpy as np

from . import lazy, memory
from .errors import PtoError
from .isa.matrix import matmul
from .isa.registry import Instr, InstrRecord, _all_uniform, _settle_written
from .memory import Machine, pop, push
from .tensor import GlobalTensor, lane_span
from .tile import Tile

#: families whose batched data entries (``access="data"``: TASSIGN places, the views do not
#: count) write the whole valid region of each ``out`` operand; of memory: TLOAD and TSTORE
_WHOLE_WRITERS = frozenset({"elementwise", "tile-scalar", "reduce", "matrix", "memory"})
#: the most lanes one batch runs, and the most bytes its tiles take over all lanes (a plan
#: keeps its lanes machine)
MAX_LANES = 4096
MAX_LANE_BYTES = 64 << 20
#: batch loops over placed tiles (:func:`_batch_placed`). On since a batch copies back only
#: the bytes read after the loop and lane tiles no longer settle their neighbours
#: (:func:`ptoisa.lazy.may_share`): Qwen3 incore_1's outer loop 5.3 -> 3.9 ms (it had run
#: 5-15% slower batched than one instruction at a time)
BATCH_PLACED = True
#: run loops whose one carried value is an accumulator (``C = C + A @ B`` in place:
#: TMATMUL_ACC / TGEMV_ACC) as a batch: the k-sums of all iterations at once, C_in added in
#: iteration order (:func:`ptoisa.isa.matrix.matmul.run_acc_chain`). A loop over placed tiles
#: with an accumulator is batched whatever ``BATCH_PLACED`` says
BATCH_CHAINS = True
#: the most multiply-adds one step of a chained accumulation may take over the launch's
#: blocks (blocks * m * k * n: a lockstep step runs every block's product): larger steps (a
#: GEMM's 128^3 tiles; scale.py's 64^3 tiles on a grid of 16-256 blocks) run step by step,
#: where each step's operands stay in cache and a grid's shared panels multiply without a
#: copy per lane; chained, their lanes' panels spill it and the loop ran 1.5-2.5x slower (the
#: 512^3 GEMM on 64 blocks: 3.9 -> 8.7-15.6 ms). Below it (decode projections on one block:
#: 16 x 256 x 128), the per-step Python is what a batch saves
CHAIN_MAX_MACS = 1 << 20
#: a batch of auto tiles keeps its lane tiles' storage across replays (the lanes machine is
#: not reset, its tiles not unbound and given storage again) while the last run on its lanes
#: machine was its own and gave no tile new storage (see _batch): the eager decode chain's
#: replay 0.17 -> 0.15 ms (its lane tiles' storage is not handed out and poisoned again).
#: A batch of placed tiles keeps its lanes' buffers placed and poisoned the same way while
#: the last run on its lanes machine was its own and no tile has partial boxes (see
#: _batch_placed): Qwen3 incore_15's 99 lanes of L1/L0 buffers (15 MB) were poisoned anew
#: every replay, ~0.9 ms of its ~6.5
KEEP_LANES = True

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
          bind: Bind, rebind: Callable[[GlobalTensor, GlobalTensor], None],
          machines: dict[int, Machine]) -> Callable[[], None]:
    """The call that runs iterations ``steps[starts[0]:end]`` (iteration k from
    ``starts[k]``) as one batch on a lanes machine; NotBatched says why not. ``bind``:
    plans.bind; ``rebind(lanes_view, recorded_view)``: the plan rebinds the lanes view's
    arrays to each launch's arguments as it rebinds the recorded view's; ``machines``: the
    plan's lanes machines by lane count (batches run one at a time, each starting its machine
    afresh, so they share one: an inner loop batched in every iteration of an outer one
    does not hold a machine and its arena per iteration)."""
    t_n = len(starts)
    if t_n > MAX_LANES:
        raise NotBatched(f"more than {MAX_LANES} iterations")
    bounds = [*starts, end]
    n = bounds[1] - bounds[0]
    if any(bounds[k + 1] - bounds[k] != n for k in range(t_n)):
        raise NotBatched("iterations run different numbers of instructions")
    s0 = starts[0]
    # (placements after the loop: only a batch of placed tiles allows them, see _batch)
    for i in range(s0, len(steps)):
        r = steps[i][0]
        if r.ins.access != "data" and r.ins.sync is None and not _placement(r.ins, steps[i][1]):
            raise NotBatched(f"{r.ins.name} places or views a tile from the loop on")

    # ---- the same instructions in every iteration
    for j in range(n):
        r0, v0 = steps[s0 + j][0], steps[s0 + j][1]
        ins = r0.ins
        if ins.sync is None and not _placement(ins, v0) and (
                ins.access != "data" or ins.results or not ins.batched
                or ins.family not in _WHOLE_WRITERS):
            raise NotBatched(f"{ins.name} is not an instruction a batch runs")
        for a in v0:
            if isinstance(a, GlobalTensor):
                if not _block_offsets(a.offset, m.lanes) or a.spec.dtype.packed:
                    raise NotBatched(f"{ins.name}: a GM view a batch cannot offset per lane")
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
            for a, b in zip(v0, vk, strict=True):
                if isinstance(a, GlobalTensor):
                    if not (isinstance(b, GlobalTensor) and b.spec is a.spec and b.flat is a.flat
                            and b._array is a._array and _block_offsets(b.offset, m.lanes)):
                        raise NotBatched(f"{ins.name}: iterations use different GM views")
                elif a is not b and (type(a) is not type(b) or isinstance(a, Tile) or a != b):
                    raise NotBatched(f"{ins.name}: an operand that changes between iterations "
                                     "(a value computed from the induction variable)")

    # ---- lanes: an iteration's data instructions, or each of its q segments that repeat the
    # same instructions on other tiles (an unrolled body: ping-pong tiles), is a lane
    data = [j for j in range(n) if steps[s0 + j][0].ins.sync is None]
    for q in _segments(steps, s0, data):
        try:
            return _batch(m, steps, after, starts, end, bind, rebind, machines, data, q)
        except NotBatched:
            if q == 1:
                raise
    raise AssertionError("unreachable: _segments ends with 1")


def _batch(m: Machine, steps: list[Step], after: list[list[Any]], starts: list[int], end: int,
           bind: Bind, rebind: Callable[[GlobalTensor, GlobalTensor], None],
           machines: dict[int, Machine], data: list[int], q: int) -> Callable[[], None]:
    """:func:`batch` with each iteration cut into ``q`` lanes (see :func:`_segments`)."""
    t_n, s0 = len(starts), starts[0]
    lanes, real, offsets = _lanes(steps, starts, data, q, m.lanes)
    # (lane groups: each of the launch's blocks, lane b * n_lanes + g: a block's iterations
    # side by side, as a kernel whose blocks each take a contiguous share lays out its GM)
    n_lanes = len(lanes)
    blocks = m.lanes
    body = [steps[i] for i in lanes[0]]
    chains = _chains(body, blocks)
    if chains and q != 1:
        raise NotBatched("an accumulator in a repeated body")
    if any(_placement(r.ins, vals) or any(isinstance(v, Tile) and v.addr is not None
                                          for v in vals) for r, vals, _o, _p in body):
        if not BATCH_PLACED and not chains:
            raise NotBatched("its tiles are placed (plan_loops.BATCH_PLACED is off)")
        if q != 1:
            raise NotBatched("placed tiles in a repeated body")
        return _batch_placed(m, steps, after, starts, end, bind, rebind, machines, lanes,
                             offsets, chains)
    for st in steps[end:]:
        if _placement(st[0].ins, st[1]):
            raise NotBatched(f"{st[0].ins.name} places or views a tile from the loop on")

    # ---- tiles: no value carried; whole valid regions
    written: set[int] = set()
    tiles: dict[int, Tile] = {}
    for r, vals, _once, _pre in body:
        for p, v in enumerate(vals):
            if isinstance(v, Tile):
                tiles[id(v)] = v
                if _role(r.ins, p, vals) in ("out", "inout", "scratch"):
                    written.add(id(v))
    nbytes = n_lanes * blocks * sum(t.spec.numel * t.dtype.np.itemsize for t in tiles.values())
    if nbytes > MAX_LANE_BYTES:
        raise NotBatched(f"its lanes would take {nbytes >> 20} MiB of tiles (more than "
                         f"{MAX_LANE_BYTES >> 20})")
    for i in range(s0, end):
        for state in (steps[i][3], after[i]):
            for t, _vr, _vc, whole in state:
                if not whole:
                    raise NotBatched(f"{_name(t)} has a partial valid region")
    defined: set[int] = set()
    scratch: set[int] = set()
    invariant: set[int] = set()
    for j, (r, vals, _once, _pre) in enumerate(body):
        ins = r.ins
        roles = [_role(ins, p, vals) for p in range(len(vals))]
        for v, role in zip(vals, roles, strict=True):
            if isinstance(v, Tile) and role not in ("out", "scratch") and id(v) not in defined:
                if id(v) in written and chains.get(j) is not v:
                    raise NotBatched(f"{_name(v)} carries a value between iterations "
                                     f"({ins.name} reads it before the iteration writes it)")
                invariant.add(id(v))
        for v, role in zip(vals, roles, strict=True):
            if isinstance(v, Tile):
                if role in ("out", "inout"):
                    defined.add(id(v))
                    scratch.discard(id(v))
                elif role == "scratch" and id(v) not in defined:
                    scratch.add(id(v))
    before = {id(v) for st in steps[:s0] for v in st[1] if isinstance(v, Tile)}
    for key in invariant:
        for rl in real[:q]:
            if id(rl[key]) not in before:
                raise NotBatched(f"{_name(rl[key])} is read in the loop before anything "
                                 "writes it")
    later = {id(v) for st in steps[end:] for v in st[1] if isinstance(v, Tile)}
    # each lane has storage of its own: no tile of the body may share bytes with another
    seen = {id(v): v for st in steps for v in st[1] if isinstance(v, Tile)}
    for key in tiles:
        for t in {id(rl[key]): rl[key] for rl in real[:q]}.values():
            if id(t) in later and key in scratch:
                raise NotBatched(f"{_name(t)} is used after the loop, which left it only "
                                 "as a scratch")
            for u in seen.values():
                if u is not t and t._buf is not None and u._buf is not None \
                        and lazy.may_share(t._buf, u._buf):
                    raise NotBatched(f"{_name(t)} shares bytes with {_name(u)}")

    # lane tiles whose storage no one reads after the loop or before an iteration writes them:
    # one stored whole right after the instruction that writes it may skip its storage
    # (_fuse_stores)
    fusable = {key for key in tiles if key not in invariant and key not in scratch
               and not any(id(rl[key]) in later for rl in real)}
    log_all, lm, state, shadow, gm_written, calls = _bound_body(
        m, steps, starts, end, body, offsets, machines, blocks, n_lanes, tiles, chains, bind,
        rebind, fusable)
    # an invariant lane tile: each segment's tile, in its lanes (s, s + q, ...)
    pairs_in = [(tuple(real[s][key] for s in range(q)), shadow[key]) for key in invariant]
    # a tile the rest of the launch uses: what the last lane it is in left
    back = []
    for key in written:
        for s in range(q):
            t = real[(t_n - 1) * q + s][key]
            if id(t) in later and all(real[(t_n - 1) * q + u][key] is not t
                                      for u in range(s + 1, q)):
                back.append((t, shadow[key], state[key], (t_n - 1) * q + s))
    shadows = list(shadow.values())
    # the lane tiles' storage may be kept from one replay to the next (see KEEP_LANES) when
    # every element of it is one the body writes (a boxed Acc tile of a partial box has rows
    # of storage no instruction writes: those start poisoned every replay); the scratch
    # tiles' bytes are poisoned again all the same (what an instruction leaves there unread
    # is no one's, but a scratch is the one operand the proof lets be read unwritten)
    keep = KEEP_LANES and all(sh.spec.numel == sh.spec.rows * sh.spec.cols for sh in shadows)
    repoison = list({id(v): shadow[id(v)] for r, vals, _o, _p in body
                     for p, v in enumerate(vals)
                     if isinstance(v, Tile) and _role(r.ins, p, vals) == "scratch"}.values())
    token = object()  # (this batch, as the last user of the lanes machine: lm.kept)

    def run() -> None:
        if m._lazy:  # tiles of the launch still reading GM in place take it before it changes
            for g in gm_written:
                lazy.gm_barrier(m, g.flat)
        arena = (lm._arena_next, lm._arena_pos)
        kept = lm.kept is token and lm.kept_arena == arena
        if kept:
            # the previous run on the lanes machine was this batch's, and gave no tile new
            # storage: the lane tiles keep theirs (what they held lazily is dropped, as
            # unbind drops it; every element is written by the body before it is read)
            _keep_lanes(lm, shadows)
            for sh in repoison:
                if sh._buf is not None:
                    sh._buf.view(np.uint8).fill(memory.POISON_BYTE)
        else:
            lm.reset_for_launch()
            for sh in shadows:
                sh.unbind()
            arena = (lm._arena_next, lm._arena_pos)
        lm.kept = None
        for ts, sh in pairs_in:
            b = sh._buf
            buf = (lm.auto_storage(sh, False) if b is None else b).reshape(blocks, n_lanes, -1)
            for s, t in enumerate(ts):
                # (what it owes, settled on the launch's machine; (blocks, n) or (n,))
                buf[:, s::q] = t.storage.reshape(-1, 1, buf.shape[2])
        push(lm)
        # (no two lane tiles share bytes: each has auto storage of its own, as the recorded
        # tiles were proved to; while the body runs the lanes machine has no others)
        lm.apart = True
        try:
            for c in calls:
                c()
            lm.apart = False
            for t, sh, st, lane in back:
                v = sh.storage  # (its lanes settled)
                if t._buf is not None and m._lazy:
                    lazy.storage_barrier(m, t)
                # (what it held lazily or deferred is dropped, storage or none: a tile without
                # storage may hold a value too, a matmul's before the loop, which a read after
                # it would take instead of the bytes written here)
                lazy.overwrite(t, m)
                if t._buf is None:
                    m.auto_storage(t, False)
                t._buf[...] = v.reshape(blocks, n_lanes, -1)[:, lane].reshape(t._buf.shape)
                t._vr, t._vc, t._whole = st
            now = (lm._arena_next, lm._arena_pos)
            if keep and (not kept or now == arena):  # (a kept run gave no tile new storage)
                lm.kept, lm.kept_arena = token, now
        finally:
            lm.apart = False
            _leave(lm)
        _log_flags(m, log_all)
    # (a run reads or writes tiles of the launch itself, the compiled function's, only to copy
    # an invariant in or a tile the rest of the launch uses back: ptoisa.plans, Plan.resets)
    run.launch_tiles = bool(pairs_in or back)  # type: ignore[attr-defined]
    return run



#: an instruction writing a lane tile that is stored next writes the store's GM window itself
#: (_fuse_stores): flash_softmax's TROWEXPANDDIV + TSTORE, ~2 us of a 70 us replay
FUSE_STORES = True


def _chains(body: list[Step], blocks: int = 1) -> dict[int, Tile]:
    """The accumulating instructions of a loop's body that a batch runs as chains: position ->
    the accumulator. An instruction of :data:`matmul.CHAINED` accumulating in place (C_out is
    C_in), its accumulator used by no other instruction of the body (but its own placement):
    then the one value it carries between iterations is the accumulator, which
    :func:`matmul.run_acc_chain` carries through every lane in iteration order. (Bytes the
    accumulator shares with another tile: :func:`_batch_placed`; an auto tile shares none,
    which :func:`_batch` proves of every tile.) ``blocks``: the launch's, each a chain."""
    out: dict[int, Tile] = {}
    if not BATCH_CHAINS:
        return out
    for j, (r, vals, _o, _p) in enumerate(body):
        if r.ins.name in matmul.CHAINED:
            c = matmul.chain_acc(vals)
            if c is not None:
                out[j] = c
    for j, c in list(out.items()):
        for i, (r, vals, _o, _p) in enumerate(body):
            if i != j and not (_placement(r.ins, vals) and vals[0] is c) \
                    and any(v is c for v in vals):
                del out[j]  # (another read or write of the accumulator in the loop)
                break
    for j in out:
        r, vals = body[j][0], body[j][1]
        rl = matmul.roles("acc", vals)
        macs = blocks * rl["a"].spec.rows * rl["a"].spec.cols * rl["b"].spec.cols
        if macs > CHAIN_MAX_MACS:
            raise NotBatched(f"{r.ins.name} accumulates {macs} multiply-adds a step over "
                             f"{blocks} block(s) (more than plan_loops.CHAIN_MAX_MACS: step "
                             "by step, each step's operands stay in cache)")
    return out


def _chain(ins: Instr, lm: Machine, vals: list[Any], steps: int, loc: Any
           ) -> Callable[[], None]:
    """The call of a chained accumulating instruction on the lanes machine (see
    :func:`_chains`): its lanes ``steps`` iterations per block."""
    written = ins._written

    def call() -> None:
        try:
            if lm._lazy and written:
                _settle_written(lm, written, vals)
            matmul.run_acc_chain(lm, ins, vals, steps)
        except PtoError as e:
            if e.op is None:
                e.op = ins.mnemonic
                e.args = (e.render(),)
            raise (e.with_loc(loc) if loc is not None else e) from None
    return call


def _placement(ins: Instr, vals: list[Any]) -> bool:
    """A TASSIGN of a tile to a constant address (a loop's ``alloc_tile addr``)."""
    return ins.access == "place" and ins.name == "TASSIGN" and len(vals) == 2 \
        and type(vals[0]) is Tile and isinstance(vals[1], (int, np.integer)) \
        and not isinstance(vals[1], bool)


def _batch_placed(m: Machine, steps: list[Step], after: list[list[Any]], starts: list[int],
                  end: int, bind: Bind, rebind: Callable[[GlobalTensor, GlobalTensor], None],
                  machines: dict[int, Machine], lanes: list[list[int]],
                  offsets: dict[tuple[int, int], list[int]], chains: dict[int, Tile]
                  ) -> Callable[[], None]:
    """:func:`batch` of a body whose tiles are placed (TASSIGN, ``alloc_tile addr``): each
    lane has its own copy of the buffers (the lanes machine's), the body's tiles placed at
    their addresses there, so tiles that share bytes share them in every lane. Proved from
    the record, in bytes: every byte an iteration reads it wrote before (whole tiles), or
    the loop never writes it (then it is the launch's, copied to every lane); after the
    loop, the bytes the loop writes are the last lane's, put back in the launch's buffers
    (in lockstep: each block's last lane). An accumulator ``chains`` names (:func:`_chains`)
    may carry its bytes, when no other tile of the body reaches them."""
    t_n, blocks = len(starts), m.lanes
    n_lanes = len(lanes)
    body = [steps[i] for i in lanes[0]]
    for i in range(starts[0], end):
        for state in (steps[i][3], after[i]):
            for t, _vr, _vc, whole in state:
                if not whole:
                    raise NotBatched(f"{_name(t)} has a partial valid region")
    # every tile of the body placed, at one address in the whole launch
    where: dict[int, tuple[str, int]] = {}
    for r, vals, _o, _p in steps:
        if _placement(r.ins, vals):
            t, a = vals[0], int(vals[1])
            if where.setdefault(id(t), (m.space_of(t), a)) != (m.space_of(t), a):
                raise NotBatched(f"{_name(t)} is placed at more than one address")
    tiles: dict[int, Tile] = {}
    for _r, vals, _o, _p in body:
        for v in vals:
            if isinstance(v, Tile):
                if id(v) not in where or v.addr != where[id(v)][1]:
                    raise NotBatched(f"{_name(v)}: placed and unplaced tiles in one body")
                tiles[id(v)] = v

    def span(t: Tile) -> tuple[str, int, int]:
        sp, a = where[id(t)]
        return sp, a, a + t.spec.nbytes

    def covered(iv: list[tuple[int, int]], lo: int, hi: int) -> bool:
        for a, b in sorted(iv):
            if a <= lo < b:
                lo = b
            if lo >= hi:
                return True
        return lo >= hi

    # ---- bytes: none carried between iterations
    wrote: dict[str, list[tuple[int, int]]] = {}
    reads: list[tuple[str, int, int, Tile]] = []  # read before the iteration wrote them
    placed_in_loop: set[int] = set()
    for c in chains.values():  # an accumulator's bytes are its own in the body
        sc, lc, hc = span(c)
        for u in tiles.values():
            sp, lo, hi = span(u)
            if u is not c and sp == sc and lo < hc and lc < hi:
                raise NotBatched(f"the accumulator {_name(c)} shares bytes with {_name(u)}")
    carried = {id(c) for c in chains.values()}
    for r, vals, _o, _p in body:
        ins = r.ins
        if _placement(ins, vals):
            placed_in_loop.add(id(vals[0]))
            continue
        roles = [_role(ins, p, vals) for p in range(len(vals))]
        for v, role in zip(vals, roles, strict=True):
            if isinstance(v, Tile) and role != "out":
                sp, lo, hi = span(v)
                if not covered(wrote.get(sp, []), lo, hi):
                    reads.append((sp, lo, hi, v))
        for v, role in zip(vals, roles, strict=True):
            if isinstance(v, Tile) and role in ("out", "inout", "scratch"):
                sp, lo, hi = span(v)
                wrote.setdefault(sp, []).append((lo, hi))
    for sp, lo, hi, v in reads:
        if id(v) in carried:
            continue  # (its chain starts from the bytes before the loop, copied in)
        if any(a < hi and lo < b for a, b in wrote.get(sp, [])):
            raise NotBatched(f"{_name(v)} carries bytes between iterations (read before the "
                             "iteration writes them)")
    later = {id(v) for st in steps[end:] for v in st[1] if isinstance(v, Tile)}
    for key in placed_in_loop:
        if key in later and not any(_placement(st[0].ins, st[1]) and id(st[1][0]) == key
                                    for st in steps[:starts[0]]) \
                and not _placed_again(steps, end, tiles[key]):
            raise NotBatched(f"{_name(tiles[key])} is placed in the loop and used after it")
    spaces = {sp for sp, _a in (where[k] for k in tiles)}
    top = {sp: max(where[k][1] + t.spec.nbytes for k, t in tiles.items() if where[k][0] == sp)
           for sp in spaces}
    nbytes = n_lanes * blocks * sum(top.values())
    if nbytes > MAX_LANE_BYTES:
        raise NotBatched(f"its lanes would take {nbytes >> 20} MiB of buffers (more than "
                         f"{MAX_LANE_BYTES >> 20})")

    log_all, lm, state, shadow, gm_written, calls = _bound_body(
        m, steps, starts, end, body, offsets, machines, blocks, n_lanes, tiles, chains, bind,
        rebind)
    places = [(shadow[k], where[k][1]) for k in tiles]
    # bytes read from before the loop, and written by it (merged), by space
    copy_in = [(sp, lo, hi) for sp, lo, hi, _v in reads]
    copy_out = [(sp, lo, hi) for sp, iv in wrote.items() for lo, hi in _merged(iv)]
    # (of those, the bytes an instruction after the loop may read before it writes them: no
    # later instruction reads the others, and the next launch poisons the buffers again)
    live = _live_after(steps, end, where)
    if live is not None:
        copy_out = [(sp, max(lo, a), min(hi, b)) for sp, lo, hi in copy_out
                    for sq, a, b in live if sq == sp and a < hi and lo < b]
        copy_out = [(sp, lo, hi) for sp in {c[0] for c in copy_out}
                    for lo, hi in _merged([(a, b) for sq, a, b in copy_out if sq == sp])]
    # the launch's placed tiles over those bytes (what they owe is settled first)
    touched = [t for t in {id(v): v for st in steps for v in st[1]
                           if isinstance(v, Tile) and id(v) in where}.values()
               if any(where[id(t)][0] == sp and where[id(t)][1] < hi
                      and lo < where[id(t)][1] + t.spec.nbytes
                      for sp, lo, hi in copy_in + copy_out)]
    last = t_n - 1
    shadows = list(shadow.values())
    # (the lane tiles over bytes copied out: what they owe is written there first)
    owing = [shadow[k] for k in tiles
             if any(where[k][0] == sp and where[k][1] < hi
                    and lo < where[k][1] + tiles[k].spec.nbytes for sp, lo, hi in copy_out)]
    back = [(t, state[id(t)]) for k, t in tiles.items() if k in later]
    # the lanes' buffers are kept from one replay to the next (see KEEP_LANES): every byte
    # the body reads is one each replay sets afresh before the read. By the proof above, the
    # first write of a byte in an iteration is by an ``out`` operand (an inout or scratch
    # operand is read first, and a read of bytes not yet written is refused if the loop
    # writes them: copied in from the launch every replay otherwise), and an out operand is
    # written whole (every tile's valid region is whole, above; the body's entries write the
    # whole valid region of an out operand, _WHOLE_WRITERS), which is every byte of its span
    # without partial boxes. So no read sees what an earlier replay left, and the bytes no
    # replay writes keep the first one's poison
    keep = KEEP_LANES and all(t.spec.numel == t.spec.rows * t.spec.cols
                              for t in tiles.values())
    token = object()  # (this batch, as the last user of the lanes machine: lm.kept)

    def run() -> None:
        if m._lazy:  # tiles of the launch still reading GM in place take it before it changes
            for g in gm_written:
                lazy.gm_barrier(m, g.flat)
            for t in touched:
                if t._buf is not None and t._placed is m._launch:
                    t.storage  # noqa: B018 (settles what it owes its bytes)
        if lm.kept is token:
            # the previous run on the lanes machine was this batch's: its lane tiles stay
            # placed on the lanes' buffers, not poisoned again (what they held lazily is
            # dropped, as unbind drops it)
            _keep_lanes(lm, shadows)
        else:
            lm.reset_for_launch()
            for sh in shadows:
                sh.unbind()
            for sh, a in places:
                lm.assign(sh, a)
        lm.kept = None
        for sp, lo, hi in copy_in:
            src = m._poison_to(sp, hi)[..., lo:hi]
            lm._poison_to(sp, hi).reshape(blocks, n_lanes, -1)[:, :, lo:hi] = \
                src.reshape(-1, 1, hi - lo)
        push(lm)
        try:
            for c in calls:
                c()
            for sh in owing:
                sh.storage  # noqa: B018 (what the lane tiles owe, in the lanes' buffers)
            for sp, lo, hi in copy_out:
                dst = m._poison_to(sp, hi)[..., lo:hi]
                src = lm.region(sp).reshape(blocks, n_lanes, -1)[:, last, lo:hi]
                dst[...] = src.reshape(dst.shape)
            for t, st in back:
                t._vr, t._vc, t._whole = st
            if keep:
                lm.kept = token
        finally:
            _leave(lm)
        _log_flags(m, log_all)
    return run



def _leave(lm: Any) -> None:
    """A batch's lanes machine is left: popped, its lazy tiles and GM settlements dropped."""
    pop(lm)
    lm._lazy.clear()
    lm._gm_settled = None


def _log_flags(m: Machine, log_all: list[Any]) -> None:
    """The flags a batch's lanes set and waited, added to the launch machine's sync log."""
    if log_all:
        if m.sync_log is None:
            m.sync_log = list(log_all)
        else:
            m.sync_log.extend(log_all)

def _live_after(steps: list[Step], end: int, where: dict[int, tuple[str, int]]
                ) -> list[tuple[str, int, int]] | None:
    """The byte spans (space, from, to) of the placed tiles that the steps from ``end`` on
    read before writing them whole (a read of a tile not wholly written since ``end``: its
    whole span), or None where that cannot be told (a tile that is not placed at one address
    (``where``), an instruction that views a tile)."""
    wrote: dict[str, list[tuple[int, int]]] = {}
    live: list[tuple[str, int, int]] = []
    for r, vals, _o, pre in steps[end:]:
        ins = r.ins
        if _placement(ins, vals):
            continue
        ts = [(p, v) for p, v in enumerate(vals) if isinstance(v, Tile)]
        if not ts:
            continue
        if ins.access != "data":
            return None
        whole = {id(t): wh for t, _vr, _vc, wh in pre}
        outs = []
        for p, v in ts:
            if id(v) not in where:
                return None
            sp, a = where[id(v)]
            b = a + v.spec.nbytes
            if _role(ins, p, vals) == "out" and ins.family in _WHOLE_WRITERS \
                    and whole.get(id(v), False):
                # (its whole valid region is every element of its span: rows x cols)
                outs.append((sp, a, b))
            elif not any(lo <= a and b <= hi for lo, hi in _merged(wrote.get(sp, []))):
                live.append((sp, a, b))
        for sp, a, b in outs:
            wrote.setdefault(sp, []).append((a, b))
    return live


def _placed_again(steps: list[Step], end: int, t: Tile) -> bool:
    """Is tile ``t``'s first use after step ``end`` its placement (a later loop's
    ``alloc_tile addr`` of it)?"""
    for st in steps[end:]:
        if any(v is t for v in st[1]):
            return _placement(st[0].ins, st[1]) and st[1][0] is t
    return True


def _merged(iv: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for a, b in sorted(iv):
        if out and a <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], b))
        else:
            out.append((a, b))
    return out


def _keep_lanes(lm: Machine, shadows: list[Tile]) -> None:
    """The lanes machine kept for a batch's next run (its previous run was this batch's): its
    registers reset and settled caches void, the lane tiles keep their storage, what they held
    lazily is dropped (as unbind drops it)."""
    lm.reset_registers()
    lm._lazy_gen += 1  # (caches of what was settled before are void)
    for sh in shadows:
        sh._lazy = sh._pending = None


def _bound_body(m: Machine, steps: list[Step], starts: list[int], end: int, body: list[Step],
                offsets: dict[tuple[int, int], list[int]], machines: dict[int, Machine],
                blocks: int, n_lanes: int, tiles: dict[int, Tile], chains: dict[int, Tile],
                bind: Bind, rebind: Callable[[GlobalTensor, GlobalTensor], None],
                fusable: set[int] | None = None
                ) -> tuple[list[Any], Machine, dict[int, Any], dict[int, Tile],
                                      list[GlobalTensor], list[Callable[[], None]]]:
    """What both kinds of batch bind: the checks and lanes machine (:func:`_checks`), a lane
    tile (shadow) per recorded tile with its valid state, the lanes GM views, and the body's
    calls on them (an accumulator chain as one call; a placement, which the placed batch
    does itself, none). Returns (log_all, lanes machine, state, shadow, GM written, calls)."""
    log_all, lm = _checks(m, steps, starts, end, body, offsets, machines, n_lanes * blocks)
    state = {id(t): (vr, vc, wh) for r in body for t, vr, vc, wh in r[3]}
    shadow: dict[int, Tile] = {}
    for key, t in tiles.items():
        sh = shadow[key] = Tile.of(t.spec, name=t.name)
        sh._vr, sh._vc, sh._whole = state[key]
    views, gm_written = _views(body, offsets, rebind)
    calls: list[Callable[[], None]] = []
    at: dict[int, int] = {}  # body step -> its call
    for j, (r, vals, _once, _pre) in enumerate(body):
        ins = r.ins
        if _placement(ins, vals):
            continue
        lv = [shadow[id(v)] if isinstance(v, Tile) else views.get((j, p), v)
              for p, v in enumerate(vals)]
        if j in chains:
            calls.append(_chain(ins, lm, lv, n_lanes, r.loc))
            continue
        once = ins.batched and _all_uniform(lv, ins.any_valid)
        at[j] = len(calls)
        calls.append(bind(ins, lm, lv, r.params, once, r.loc))
    if fusable and FUSE_STORES:
        _fuse_stores(body, at, calls, fusable, lm)
    return log_all, lm, state, shadow, gm_written, calls


def _fuse_stores(body: list[Step], at: dict[int, int], calls: list[Callable[[], None]],
                 fusable: set[int], lm: Machine) -> None:
    """An instruction whose planned form can put its result straight into GM (``fuse_store``:
    the row-expand arithmetic) followed by the TSTORE of its whole dst, a lane tile of
    ``fusable`` that no later instruction of the body uses: the instruction writes the
    store's window itself and the store only counts the write (one copy of the tile fewer);
    where either planned form does not take its use, each runs as before."""
    for j in range(len(body) - 1):
        r, vals = body[j][0], body[j][1]
        r2, vals2 = body[j + 1][0], body[j + 1][1]
        if j not in at or j + 1 not in at or r2.ins.name != "TSTORE" or len(vals2) < 2 \
                or not vals or not isinstance(vals[0], Tile) or vals2[1] is not vals[0] \
                or id(vals[0]) not in fusable or _role(r.ins, 0, vals) != "out" \
                or any(v is vals[0] for st in body[j + 2:] for v in st[1]):
            continue
        x_call, s_call = calls[at[j]], calls[at[j + 1]]
        fuse = getattr(getattr(x_call, "planned", None), "fuse_store", None)
        sw = getattr(getattr(s_call, "planned", None), "store_window", None)
        if fuse is None or sw is None:
            continue
        done = [False]
        fuse(sw[0], sw[1], done)
        calls[at[j + 1]] = _counted_store(s_call, done, lm)


def _counted_store(store: Callable[[], None], done: list[bool], lm: Machine
                   ) -> Callable[[], None]:
    """The TSTORE of a fused pair (see _fuse_stores): counts the write its instruction made
    (``done``), or stores as it would."""
    def call() -> None:
        if done[0]:
            done[0] = False
            lm.gm_writes += 1
            return
        store()
    return call


def _checks(m: Machine, steps: list[Step], starts: list[int], end: int, body: list[Step],
            offsets: dict[tuple[int, int], list[int]], machines: dict[int, Machine],
            count: int) -> tuple[list[Any], Machine]:
    """What the two kinds of batch share: no lane writes GM another reads or writes; the
    loop's log entries (every iteration's, in order); the lanes machine of ``count`` lanes."""
    # ---- GM: no lane writes what another reads or writes
    # (first by the byte spans from each view's first to last element; where two spans meet,
    # views of one array by their elements)
    spans: list[tuple[int, int, int, bool, tuple[int, int]]] = []
    for (j, p), offs in offsets.items():
        r, vals = body[j][0], body[j][1]
        g = vals[p]
        reach = g.spec.reach
        if reach is None:
            continue
        isz = g.flat.itemsize
        base = g.flat.__array_interface__["data"][0]
        w = _role(r.ins, p, vals) in ("out", "inout", "scratch")
        for k, o in enumerate(offs):  # (k: the lane, of an iteration and a block)
            spans.append((base + (o + reach[0]) * isz, base + (o + reach[1] + 1) * isz, k, w,
                          (base, isz)))
    spans.sort()
    active: list[tuple[int, int, int, bool, tuple[int, int]]] = []
    exact: set[tuple[int, int]] = set()
    for sp in spans:
        active = [a for a in active if a[1] > sp[0]]
        for a in active:
            if a[2] != sp[2] and (a[3] or sp[3]):
                if a[4] != sp[4]:
                    raise NotBatched("iterations write GM bytes another iteration reads or "
                                     "writes")
                exact.add(a[4])
        active.append(sp)
    for key in exact:
        _elements_apart(body, offsets, key)

    # ---- sync: the loop's log entries, in order
    t_n, s0 = len(starts), starts[0]
    log: list[Any] = []
    for j in range((starts[1] if t_n > 1 else end) - s0):
        r, vals = steps[s0 + j][0], steps[s0 + j][1]
        ins = r.ins
        if ins.sync is not None:
            on = ins._on.get(m.target) or ins.on(m.target)
            pc = on.plan(ins, m, vals, r.params) if on.plan is not None else None
            entry = getattr(pc, "log_entry", None)
            if entry is None:
                raise NotBatched(f"{ins.name}: a sync instruction whose effect is not only "
                                 "its log entry")
            log.append(entry)
    log_all = log * t_n

    # ---- the lanes machine
    lm = machines.get(count)
    if lm is None:
        lm = machines[count] = Machine(m.target, lanes=count, permissive=m.permissive,
                                       matmul_accumulation=m.matmul_accumulation)
        lm.lazy_loads = True
        lm.quiet = True
        # (no capacity accounting: the lane tiles are tiles of the recorded launch, whose
        # machine counted them live together, and each lane has the target's buffers)
        lm.planned = True
    return log_all, lm


def _elements_apart(body: list[Step], offsets: dict[tuple[int, int], list[int]],
                    key: tuple[int, int]) -> None:
    """No lane writes an element of the array at ``key`` (its address, its item size) that
    another lane reads or writes, by the elements each view reaches (its strided footprint,
    not the span from its first to its last); NotBatched otherwise."""
    elems: list[np.ndarray] = []
    lanes: list[np.ndarray] = []
    writes: list[np.ndarray] = []
    total = 0
    for (j, p), offs in offsets.items():
        r, vals = body[j][0], body[j][1]
        g = vals[p]
        if (g.flat.__array_interface__["data"][0], g.flat.itemsize) != key \
                or g.spec.reach is None:
            continue
        rel = np.zeros(1, np.int64)
        for n, st in zip(g.spec.shape, g.spec.stride, strict=True):
            rel = (rel[:, None] + np.arange(n, dtype=np.int64) * st).reshape(-1)
        rel = np.unique(rel)
        total += rel.size * len(offs)
        if total > 1 << 24:
            raise NotBatched("iterations' GM views reach too many elements to prove apart")
        off = np.asarray(offs, np.int64)
        e = (off[:, None] + rel[None, :]).reshape(-1)
        elems.append(e)
        lanes.append(np.repeat(np.arange(len(offs), dtype=np.int64), rel.size))
        if _role(r.ins, p, vals) in ("out", "inout", "scratch"):
            writes.append(e)
    if not writes:
        return
    pairs = np.unique(np.stack([np.concatenate(elems), np.concatenate(lanes)]), axis=1)
    el, counts = np.unique(pairs[0], return_counts=True)
    shared = el[counts > 1]  # (elements more than one lane reaches)
    if np.intersect1d(shared, np.concatenate(writes), assume_unique=False).size:
        raise NotBatched("iterations write GM bytes another iteration reads or writes")


def _views(body: list[Step], offsets: dict[tuple[int, int], list[int]],
           rebind: Callable[[GlobalTensor, GlobalTensor], None]
           ) -> tuple[dict[tuple[int, int], GlobalTensor], list[GlobalTensor]]:
    """The lanes views (one offset per lane) by operand position, and those written."""
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
    return views, gm_written

def _segments(steps: list[Step], s0: int, data: list[int]) -> list[int]:
    """Into how many segments that repeat the same instructions and parameters the data
    instructions ``data`` (positions from ``s0``) of an iteration split: the counts to try,
    most first, 1 (the iteration is one segment) last."""
    n = len(data)
    out = []
    for q in range(n // 2, 1, -1):
        if n % q:
            continue
        m = n // q
        if all(steps[s0 + data[s * m + j]][0].ins is steps[s0 + data[j]][0].ins
               and _same_params(steps[s0 + data[s * m + j]][0].params,
                                steps[s0 + data[j]][0].params)
               for s in range(1, q) for j in range(m)):
            out.append(q)
    return [*out, 1]


def _block_offsets(offset: Any, blocks: int) -> bool:
    """A GM view's offset a batch can give each lane: an int, or (a lockstep launch of
    ``blocks`` blocks) one integer per block."""
    if type(offset) is int:
        return True
    return blocks > 1 and isinstance(offset, np.ndarray) and offset.shape == (blocks,) \
        and offset.dtype.kind in "iu"


def _lanes(steps: list[Step], starts: list[int], data: list[int], q: int, blocks: int
           ) -> tuple[list[list[int]], list[dict[int, Tile]], dict[tuple[int, int], list[int]]]:
    """The lanes of iterations ``starts`` cut into ``q`` segments each: per lane group its
    steps; per lane group, for each tile of lane 0 (by id) the tile in its place there; per
    operand position of a GM view its offset in each lane (``blocks`` lanes per group, a
    lockstep launch's blocks: lane ``b * len(groups) + g``). NotBatched when a tile plays more
    than one part (then the segments are not independent copies of one body)."""
    seg = len(data) // q
    lanes = [[k + data[s * seg + j] for j in range(seg)] for k in starts for s in range(q)]
    if len(lanes) * blocks > MAX_LANES:
        raise NotBatched(f"more than {MAX_LANES} lanes")
    body = [steps[i] for i in lanes[0]]
    # the tile of lane 0 at each operand position stands for the tiles of the other lanes
    # there (one lane tile each): a tile has one such part only
    role_of: dict[int, int] = {}  # id(a lane's tile) -> id(lane 0's tile in its place)
    real: list[dict[int, Tile]] = [{} for _ in lanes]  # per lane: key -> its tile
    per_block: dict[tuple[int, int], list[list[int]]] = {}  # per group: each block's offset
    for v, idx in enumerate(lanes):
        for j, i in enumerate(idx):
            for p, (a, b) in enumerate(zip(body[j][1], steps[i][1], strict=True)):
                if isinstance(a, Tile):
                    key = id(a)
                    if role_of.setdefault(id(b), key) != key \
                            or real[v].setdefault(key, b) is not b:
                        raise NotBatched(f"{_name(b)} plays more than one part in the "
                                         "repeated body")
                elif isinstance(a, GlobalTensor):
                    if not (isinstance(b, GlobalTensor) and b.spec is a.spec and b.flat is a.flat
                            and b._array is a._array):
                        raise NotBatched("segments of the body use different GM views")
                    o = b.offset
                    per_block.setdefault((j, p), []).append(
                        [o] * blocks if type(o) is int else [int(x) for x in o])
    offsets = {jp: [g[b] for b in range(blocks) for g in groups]
               for jp, groups in per_block.items()}
    return lanes, real, offsets

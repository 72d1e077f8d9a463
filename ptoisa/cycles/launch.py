"""The whole launch (issue #30): the blocks of one launch share the memory behind GM, and a
launch costs more than its cores' timelines.

The schedule (:mod:`.schedule`) gives each core its own timeline, as if it had GM to itself.
:func:`whole_launch` prices the launch on top of it:

* **shared bandwidth**: every step that moves bytes to or from GM draws ``bytes / cycles`` of a
  budget the whole launch shares (:data:`BUDGETS`, bytes per cycle). Where the steps running at
  the same time (over all blocks: a lockstep timeline stands for ``blocks`` cores) ask for more
  than the budget, each is stretched by the oversubscription over its interval (processor
  sharing) and the cores are scheduled again, three rounds at most. The launch cannot finish
  before all its GM bytes went through the budget: ``blocks * B / bandwidth`` is a floor.
* **one budget per DMA path**: in a mixed (cube + vector) launch the vector cores' GM reads
  (MTE2, GM -> UB) and writes (MTE3, UB -> GM) draw on budgets of their own, each upstream's
  per-core rate for that path times the target's vector cores; the cube's traffic (and every
  step of a launch that is not mixed) draws on the main budget as before.
* **launch, ramp-up and tail**: a fixed launch overhead, the first loads' extra latency (a cold
  miss) and the last stores' drain, once per launch (:data:`BUDGETS`).
* **waves** (blocks queued behind the cores): a launch with more blocks than the target has
  cores for them (its ``cube_cores`` trait for a cube or mixed block, ``vector_cores`` for a
  vector-only block) starts the first ``cores`` blocks together; every later block, in block-id
  order, starts on the first core that frees up. The shared budgets apply to the blocks running
  at each moment. A launch with blocks <= cores is priced exactly as without queueing.
"""

from __future__ import annotations

import bisect
import dataclasses
import heapq
import math
import operator
from dataclasses import dataclass
from typing import Any

from .steps import Step, gc_paused


@dataclass(frozen=True)
class Budget:
    """A target's launch-wide constants (cycles, bytes per cycle) and where they come from."""

    #: bytes per cycle through GM (L2 included) shared by all the cores of a launch
    bandwidth: float
    #: cycles from the launch to the first instruction of the cores
    launch: int
    #: extra latency of the launch's first GM loads (cold: they miss L2)
    ramp: int
    #: the last GM stores' drain after the last instruction
    drain: int
    source: str
    #: bytes per cycle of the vector cores' own paths in a mixed launch: GM -> UB (their MTE2)
    #: and UB -> GM (their MTE3); None: they share ``bandwidth`` with the cube
    vector_read: float | None = None
    vector_write: float | None = None

    def paths(self) -> dict[str, float]:
        """Each budget's bytes per cycle, by path name (``GM`` the main one)."""
        out = {MAIN_PATH: self.bandwidth}
        if self.vector_read is not None:
            out[VEC_READ] = self.vector_read
        if self.vector_write is not None:
            out[VEC_WRITE] = self.vector_write
        return out


#: the budgets' names: the main one (the cube's GM traffic, or any launch that is not mixed),
#: the vector cores' reads and writes in a mixed launch
MAIN_PATH, VEC_READ, VEC_WRITE = "GM", "GM->UB", "UB->GM"


def path_of(step: Step, paths: dict[str, float]) -> str:
    """The budget a GM step draws on: a vector core's (AIV*, a mixed launch) MTE2 / MTE3 its
    own path when the target has one, anything else the main budget."""
    if step.core.startswith("AIV"):
        p = VEC_READ if step.pn == "MTE2" else VEC_WRITE if step.pn == "MTE3" else MAIN_PATH
        if p in paths:
            return p
    return MAIN_PATH


_A2A3 = Budget(
    # upstream's arch config (include/pto/costmodel/arch_config.hpp, kA2A3ArchConfig): GM_TO_L1
    # 135 GiB/s per core; times the 24 cube cores of an A3 (the platform of its kernels/manual
    # READMEs) at kMainFrequencyHz 1.85 GHz: 24 * 135 * 2^30 / 1.85e9 = 1880.5 bytes a cycle
    bandwidth=24 * 135 * 2**30 / 1.85e9,
    # fitted (no upstream figure): the residual of the 1536^3 gemm_performance port (board
    # 38.8 us = 71,780 cycles) over its cores sharing the budget, ramp and drain (53,451):
    # 9.9 us; in sample for that one case, out of sample for the other sizes
    # (benchmarks/README.md)
    launch=18330,
    # upstream's perf-sim config (include/pto/costmodel/perf_sim/config.hpp): an L2 miss costs
    # l2_miss_extra_latency = 150 cycles over a hit (l2_hit_latency 50, already in TLOAD's head)
    ramp=150,
    # the same: the last store's write lands after an L2 hit latency (50) plus the miss (150)
    drain=200,
    source="a2a3: bandwidth from upstream's arch config (24 cores x GM_TO_L1 135 GiB/s; "
           "in a mixed launch the 48 vector cores x GM_TO_UB 100.9 / UB_TO_GM 188.46 GiB/s), "
           "ramp/drain from its perf-sim L2 latencies, launch overhead fitted on "
           "gemm_performance 1536^3",
    # the same arch config's per-core GM_TO_UB (100.9 GiB/s) and UB_TO_GM (188.46 GiB/s), times
    # the A3's 48 vector cores (two per cube core): 2,811 and 5,250 bytes a cycle. The per-path
    # split is ours (upstream gives per-core rates only); checked against flash_atten's 910B2
    # rows, which move up to 1.9x what the one budget allowed: 6.6 TB/s at 256 blocks
    vector_read=48 * 100.9 * 2**30 / 1.85e9,
    vector_write=48 * 188.46 * 2**30 / 1.85e9,
)

#: per target; a5 and cpu assume the a2a3 figures (upstream has no A5 configuration)
BUDGETS: dict[str, Budget] = {"a2a3": _A2A3}


def budget(target: Any) -> Budget:
    return BUDGETS.get(str(target), _A2A3)


#: pipes only a cube core (AIC) has: a launch (not mixed) that uses one runs on cube cores
_CUBE_PIPES = frozenset({"M", "MTE1", "FIX"})


def block_kind(steps: list[Step]) -> str:
    """What a launch's blocks run on: "mixed" (a cube core and its cluster's vector cores:
    the mixed launcher's AIC / AIV timelines), "cube" (a cube pipe in use) or "vector"."""
    cube = False
    for s in steps:
        if s.core.startswith(("AIC", "AIV")):
            return "mixed"
        cube = cube or s.pn in _CUBE_PIPES
    return "cube" if cube else "vector"


def cores_for(target: Any, kind: str) -> int | None:
    """The cores a block of ``kind`` can run on (the target's ``cube_cores`` for cube and
    mixed blocks, ``vector_cores`` for vector ones); None: the target does not say."""
    try:
        from ..targets import get_target

        traits = get_target(str(target)).traits
    except Exception:  # an unknown target name: no core count, no queueing
        return None
    n = traits.vector_cores if kind == "vector" else traits.cube_cores
    return int(n) if n else None


@dataclass(frozen=True)
class Wave:
    """The ``k``-th round of blocks on the cores (blocks ``first`` .. ``first + count - 1``),
    in cycles from the cores' start: when its first block started, its last ended."""

    first: int
    count: int
    start: int
    end: int


@dataclass
class LaunchTime:
    """What a launch costs: per core and for the whole launch (cycles at the target clock)."""

    blocks: int
    #: a core's timeline with GM to itself (the report's ``total``)
    core_cycles: int
    #: a core's timeline with its GM steps stretched to their share of the budget
    shared_cycles: int
    #: GM bytes of one core / of the whole launch
    core_gm_bytes: int
    gm_bytes: int
    bandwidth: float
    #: ``gm_bytes / bandwidth``: no launch finishes earlier
    bandwidth_cycles: int
    launch: int
    ramp: int
    drain: int
    clock_hz: float
    source: str
    #: busy cycles per pipe of one core's timeline in the shared schedule (GM steps stretched)
    busy: dict[str, int]
    #: per budget (path name): the launch's bytes through it and its bytes per cycle
    paths: dict[str, tuple[int, float]] = dataclasses.field(default_factory=dict)
    #: what the blocks run on ("cube", "vector", "mixed") and how many such cores the target
    #: has (None: not declared: every block starts at once)
    kind: str = "cube"
    cores: int | None = None
    #: blocks > cores: the rounds of blocks on the cores (empty: one wave, all start at once)
    waves: list[Wave] = dataclasses.field(default_factory=list)
    #: blocks > cores: the cores' part of the launch with the blocks queued, GM shared by the
    #: blocks running at each moment, each wave no shorter than its bytes through the budgets
    #: (None: ``max(shared_cycles, bandwidth_cycles)``)
    queued_cycles: int | None = None
    #: why blocks beyond the cores were not queued (None: they were, or there were none)
    not_queued: str | None = None
    #: blocks > cores: the cores' part with the blocks queued but each with GM to itself
    queued_alone: int | None = None

    def busy_ratio(self) -> dict[str, float]:
        """Each pipe's busy share of the whole launch (as profilers report a pipe's ratio)."""
        return {p: b / self.cycles for p, b in self.busy.items()} if self.cycles else {}

    @property
    def cycles(self) -> int:
        """The whole launch: overhead, first loads, the cores under the shared budget, drain."""
        part = (self.queued_cycles if self.queued_cycles is not None
                else max(self.shared_cycles, self.bandwidth_cycles))
        return self.launch + self.ramp + part + self.drain

    @property
    def us(self) -> float:
        return self.cycles / (self.clock_hz / 1e6)

    @property
    def bound(self) -> str:
        """What sets the cores' part: "bandwidth" (the floor), "shared" (the cores, GM steps
        stretched) or "cores" (no stretch)."""
        if self.bandwidth_cycles >= self.shared_cycles:
            return "bandwidth"
        alone = self.queued_alone if self.queued_alone is not None else self.core_cycles
        return "shared" if self.shared_cycles > alone else "cores"

    def summary(self) -> str:
        us = 1e6 / self.clock_hz
        if len(self.paths) > 1:
            budgets = "; ".join(f"{p} {n} bytes at {bw:.0f} B/cycle"
                                for p, (n, bw) in self.paths.items())
            gm = (f"GM {self.gm_bytes} bytes ({self.core_gm_bytes} per core; {budgets}): "
                  f"{self.bandwidth_cycles} cycles")
        else:
            gm = (f"GM {self.gm_bytes} bytes ({self.core_gm_bytes} per core) at "
                  f"{self.bandwidth:.0f} B/cycle: {self.bandwidth_cycles} cycles")
        if self.waves:
            per = ", ".join(f"{w.count} from {w.start} to {w.end}" for w in self.waves)
            share = (f"per block {self.core_cycles} cycles alone; {len(self.waves)} waves on "
                     f"{self.cores} {self.kind} cores: {per}; "
                     f"{self.queued_cycles} cycles with GM shared")
        else:
            share = (f"per core {self.core_cycles} cycles alone, {self.shared_cycles} sharing "
                     f"GM")
            if self.not_queued:
                share += f"; {self.not_queued}"
        return (f"whole launch: {self.cycles} cycles = {self.us:.3f} us ({self.blocks} blocks; "
                f"{share}; {gm}; launch "
                f"{self.launch} + ramp {self.ramp} + drain {self.drain}; "
                f"{self.bound}-bound; {us:.4f} us a cycle)")


def whole_launch(steps: list[Step], *, blocks: int, lockstep: bool, target: Any,
                 clock_hz: float, manual: bool, reschedule: Any, rounds: int = 3,
                 constants: Budget | None = None) -> LaunchTime:
    """Price a scheduled launch (``steps`` have their times; they are not changed).
    ``reschedule(steps, manual=...)``: :func:`ptoisa.cycles.schedule.schedule` (None: the
    cores are not scheduled again, the bandwidth floor alone shares the budget).
    ``constants``: price with these instead of the target's :data:`BUDGETS` entry (what
    ``benchmarks/launch_fit.py`` does to refit them, leaving a kernel out)."""
    with gc_paused():  # (copies of every step, scheduled again: see gc_paused)
        return _whole_launch(steps, blocks, lockstep, target, clock_hz, manual, reschedule,
                             rounds, constants)


def _whole_launch(steps: list[Step], blocks: int, lockstep: bool, target: Any,
                  clock_hz: float, manual: bool, reschedule: Any, rounds: int,
                  constants: Budget | None) -> LaunchTime:
    b = constants if constants is not None else budget(target)
    mult = blocks if lockstep else 1  # a lockstep step stands for this many cores
    core_total = max((s.end for s in steps), default=0)
    gm_steps = [s for s in steps if s.gm and s.cycles > 0]
    per_tl: dict[tuple[str, int], int] = {}
    for s in gm_steps:
        per_tl[(s.core, s.block)] = per_tl.get((s.core, s.block), 0) + s.gm
    core_bytes = max(per_tl.values(), default=0)
    gm_bytes = sum(s.gm for s in gm_steps) * mult
    bws = b.paths()
    through: dict[str, int] = {}
    for s in gm_steps:
        p = path_of(s, bws)
        through[p] = through.get(p, 0) + s.gm * mult
    floor = max((math.ceil(n / bws[p]) for p, n in through.items()), default=0)
    paths = {p: (n, bws[p]) for p, n in through.items()}
    kind = block_kind(steps)
    cores = cores_for(target, kind)
    not_queued = None
    barrier = _launch_barrier(steps) if cores is not None and blocks > cores else None
    if barrier is not None:
        # the blocks of the first wave would wait there for blocks that cannot start
        not_queued = (f"not queued behind the {cores} {kind} cores: {barrier} waits for every "
                      f"block of the launch, which cannot all run at once on the chip; all "
                      f"start together here")
    elif cores is not None and blocks > cores:
        if lockstep:
            return _lockstep_waves(steps, blocks, cores, kind, gm_steps, len(per_tl), bws,
                                   rounds, reschedule, manual, core_total, core_bytes,
                                   gm_bytes, floor, b, clock_hz, paths)
        cross = any(getattr(p, "block", s.block) != s.block for s in steps for p in s.after or ())
        if not cross:
            alone, _, _, _, _ = _queued(steps, blocks, cores, bws, rounds, None, manual)
            end, timed, start, slot, dur = _queued(steps, blocks, cores, bws, rounds,
                                                   reschedule if gm_steps else None, manual)
            waves = []
            for k in range(0, blocks, cores):
                ids = range(k, min(k + cores, blocks))
                waves.append(Wave(k, len(ids), min(start[i] for i in ids),
                                  max(start[i] + dur[i] for i in ids)))
            return LaunchTime(blocks, core_total, end, core_bytes, gm_bytes, b.bandwidth,
                              floor, b.launch, b.ramp, b.drain, clock_hz, b.source,
                              _busy(timed, slot), paths, kind, cores, waves, max(end, floor),
                              queued_alone=alone)
        not_queued = (f"not queued behind the {cores} {kind} cores: the blocks wait for each "
                      f"other (cross-block edges), all start together")
    shared, timed = core_total, steps
    if gm_steps and (mult > 1 or len(per_tl) > 1) and reschedule is not None:
        shared, timed = _shared(steps, mult, bws, rounds, reschedule, manual)
    return LaunchTime(blocks, core_total, max(shared, core_total), core_bytes, gm_bytes,
                      b.bandwidth, floor, b.launch, b.ramp, b.drain, clock_hz, b.source,
                      _busy(timed), paths, kind, cores, not_queued=not_queued)


def _launch_barrier(steps: list[Step]) -> str | None:
    """The name of an instruction among ``steps`` that waits for every core of the launch
    (its entry's sync kind ``all_cores``: SYNCALL), if any."""
    from ..isa.registry import REGISTRY

    for op in {s.op for s in steps if s.sync is not None}:
        ins = REGISTRY.get(op)
        if ins is not None and ins.sync == "all_cores":
            return op
    return None


def _lockstep_waves(steps: list[Step], blocks: int, cores: int, kind: str,
                    gm_steps: list[Step], timelines: int, bws: dict[str, float], rounds: int,
                    reschedule: Any, manual: bool, core_total: int, core_bytes: int,
                    gm_bytes: int, floor: int, b: Budget, clock_hz: float,
                    paths: dict[str, tuple[int, float]]) -> LaunchTime:
    """A lockstep launch of more blocks than cores: its blocks are alike (one timeline stands
    for all), so they run in waves of ``cores`` blocks, each wave starting when the one before
    it ended; each wave is priced as a launch of its blocks (GM shared by them, no shorter
    than its bytes through the budgets)."""
    full, rem = divmod(blocks, cores)
    sizes = [cores] * full + ([rem] if rem else [])
    one: dict[str, int] = {}  # one block's bytes per path
    for s in gm_steps:
        p = path_of(s, bws)
        one[p] = one.get(p, 0) + s.gm
    priced: dict[int, tuple[int, int, dict[str, int]]] = {}
    for m in set(sizes):
        shared, timed = core_total, steps
        if gm_steps and (m > 1 or timelines > 1) and reschedule is not None:
            shared, timed = _shared(steps, m, bws, rounds, reschedule, manual)
        fl = max((math.ceil(n * m / bws[p]) for p, n in one.items()), default=0)
        priced[m] = (max(shared, core_total), fl, _busy(timed))
    waves, t, shared_sum = [], 0, 0
    busy: dict[str, int] = {}
    for k, m in enumerate(sizes):
        shared, fl, bz = priced[m]
        waves.append(Wave(k * cores, m, t, t + max(shared, fl)))
        t += max(shared, fl)
        shared_sum += shared
        for p, v in bz.items():  # a core runs one block of every wave
            busy[p] = busy.get(p, 0) + v
    return LaunchTime(blocks, core_total, shared_sum, core_bytes, gm_bytes, b.bandwidth, floor,
                      b.launch, b.ramp, b.drain, clock_hz, b.source, busy, paths, kind, cores,
                      waves, t, queued_alone=core_total * len(sizes))


def _restretch(timed: list[Step], work: list[Step], base: list[int], path: list[str],
               bws: dict[str, float], mult: int, off: list[int] | None, schedule: Any,
               manual: bool) -> bool:
    """One round of the shared-bandwidth fixpoint: the GM steps of ``work`` stretched by the
    oversubscription of their path's budget over the intervals of ``timed`` (``off``: each
    step's block start, when blocks have their own), then ``work`` scheduled again; False when
    nothing stretched (the fixpoint)."""
    changed = False
    for p, bw in bws.items():
        idx = [i for i, s in enumerate(timed) if s.gm and base[i] > 0 and path[i] == p]
        changed |= _stretch(timed, work, idx, base, mult, bw, off)
    if not changed:
        return False
    for w in work:
        w.fire = None
    schedule(work, manual=manual)
    return True


#: a Step's fields in order (each an __init__ argument): a copy is Step(*_STEP_FIELDS(s))
_STEP_FIELDS = operator.attrgetter(*(f.name for f in dataclasses.fields(Step)))


def _copies(steps: list[Step]) -> list[Step]:
    """Copies of ``steps`` to schedule again, their ``after`` links pointing at the copies."""
    ids = {id(s): i for i, s in enumerate(steps)}
    # (copy.copy of a slotted dataclass goes through __reduce_ex__: many times slower)
    work = [Step(*_STEP_FIELDS(s)) for s in steps]
    for w in work:
        if w.after:
            w.after = [work[ids[id(p)]] if id(p) in ids else p for p in w.after]
    return work


def _queued(steps: list[Step], blocks: int, cores: int, bws: dict[str, float], rounds: int,
            schedule: Any, manual: bool
            ) -> tuple[int, list[Step], dict[int, int], dict[int, int], dict[int, int]]:
    """Blocks (each on its own timeline) queued behind ``cores`` cores in block-id order, each
    on the first core that frees up; the GM steps stretched by the oversubscription of their
    budget among the blocks running at the same time, the blocks scheduled again and
    dispatched again (``rounds`` at most). Returns the makespan, the timed steps (times from
    each block's own start) and per block its start, core and duration."""
    work = _copies(steps)
    base = [s.cycles for s in steps]
    path = [path_of(s, bws) for s in steps]

    def dispatch(ts: list[Step]) -> tuple[dict[int, int], dict[int, int], dict[int, int]]:
        dur = dict.fromkeys(range(blocks), 0)
        for s in ts:
            dur[s.block] = max(dur.get(s.block, 0), s.end)
        free = [(0, c) for c in range(cores)]  # (when the core frees up, core): a heap
        start: dict[int, int] = {}
        slot: dict[int, int] = {}
        for blk in sorted(dur):
            t, c = heapq.heappop(free)
            start[blk], slot[blk] = t, c
            heapq.heappush(free, (t + dur[blk], c))
        return start, slot, dur

    timed = steps
    start, slot, dur = dispatch(steps)
    for _ in range(rounds if schedule is not None else 0):
        off = [start[s.block] for s in timed]
        if not _restretch(timed, work, base, path, bws, 1, off, schedule, manual):
            break
        timed = work
        start, slot, dur = dispatch(work)
    end = max((start[k] + dur[k] for k in dur), default=0)
    return end, timed, start, slot, dur


def _busy(steps: list[Step], slot: dict[int, int] | None = None) -> dict[str, int]:
    """Busy cycles per pipe of the busiest timeline (core, block) of each pipe; with
    ``slot`` (block -> the core it was queued on) the busiest core, over its blocks."""
    per: dict[tuple[str, str, int], int] = {}
    for s in steps:
        if s.sync is None and s.cycles:
            k = (s.pn, s.core, slot[s.block] if slot is not None else s.block)
            per[k] = per.get(k, 0) + s.cycles
    out: dict[str, int] = {}
    for (p, _, _), v in per.items():
        out[p] = max(out.get(p, 0), v)
    return out


def _shared(steps: list[Step], mult: int, bws: dict[str, float], rounds: int, schedule: Any,
            manual: bool) -> tuple[int, list[Step]]:
    """The cores' makespan with the GM steps stretched by the oversubscription of their
    budget (path) over their intervals (copies of ``steps`` scheduled again)."""
    work = _copies(steps)
    base = [s.cycles for s in steps]
    timed = steps  # the schedule whose overlaps set the stretch
    end = max((s.end for s in steps), default=0)
    path = [path_of(s, bws) for s in steps]
    for _ in range(rounds):
        if not _restretch(timed, work, base, path, bws, mult, None, schedule, manual):
            break
        end = max((w.end for w in work), default=0)
        timed = work
    return end, timed


def _stretch(timed: list[Step], work: list[Step], idx: list[int], base: list[int], mult: int,
             bw: float, off: list[int] | None = None) -> bool:
    """Set ``work[i].cycles`` for the steps ``idx`` of one budget: each stretched by the demand
    over its interval (bytes a cycle at the uncontended rates, from ``timed``, each step
    ``off[i]`` cycles later when given: its block's start) over ``bw``. True if any changed."""
    if off is None:
        iv = {i: (timed[i].start, timed[i].end) for i in idx}
    else:
        iv = {i: (timed[i].start + off[i], timed[i].end + off[i]) for i in idx}
    cuts = sorted({t for i in idx for t in iv[i]})
    if len(cuts) < 2:
        return False
    delta = [0.0] * len(cuts)
    for i in idx:
        r = timed[i].gm * mult / base[i]
        delta[bisect.bisect_left(cuts, iv[i][0])] += r
        delta[bisect.bisect_left(cuts, iv[i][1])] -= r
    # area[k]: the demand integrated from cuts[0] to cuts[k]
    area = [0.0] * len(cuts)
    rate = 0.0
    for k in range(1, len(cuts)):
        rate += delta[k - 1]
        area[k] = area[k - 1] + rate * (cuts[k] - cuts[k - 1])
    changed = False
    for i in idx:
        t0, t1 = iv[i]
        lo, hi = bisect.bisect_left(cuts, t0), bisect.bisect_left(cuts, t1)
        span = t1 - t0
        if span <= 0:
            continue
        stretch = max(1.0, (area[hi] - area[lo]) / span / bw)
        c = math.ceil(base[i] * stretch)
        if c != work[i].cycles:
            work[i].cycles = c
            changed = True
    return changed

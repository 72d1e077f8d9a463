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
"""

from __future__ import annotations

import bisect
import copy
import dataclasses
import math
from dataclasses import dataclass
from typing import Any

from .steps import Step


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

    def busy_ratio(self) -> dict[str, float]:
        """Each pipe's busy share of the whole launch (as profilers report a pipe's ratio)."""
        return {p: b / self.cycles for p, b in self.busy.items()} if self.cycles else {}

    @property
    def cycles(self) -> int:
        """The whole launch: overhead, first loads, the cores under the shared budget, drain."""
        return (self.launch + self.ramp + max(self.shared_cycles, self.bandwidth_cycles)
                + self.drain)

    @property
    def us(self) -> float:
        return self.cycles / (self.clock_hz / 1e6)

    @property
    def bound(self) -> str:
        """What sets the cores' part: "bandwidth" (the floor), "shared" (the cores, GM steps
        stretched) or "cores" (no stretch)."""
        if self.bandwidth_cycles >= self.shared_cycles:
            return "bandwidth"
        return "shared" if self.shared_cycles > self.core_cycles else "cores"

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
        return (f"whole launch: {self.cycles} cycles = {self.us:.3f} us ({self.blocks} blocks; "
                f"per core {self.core_cycles} cycles alone, {self.shared_cycles} sharing "
                f"GM; {gm}; launch "
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
    shared, timed = core_total, steps
    if gm_steps and (mult > 1 or len(per_tl) > 1) and reschedule is not None:
        shared, timed = _shared(steps, mult, bws, rounds, reschedule, manual)
    return LaunchTime(blocks, core_total, max(shared, core_total), core_bytes, gm_bytes,
                      b.bandwidth, floor, b.launch, b.ramp, b.drain, clock_hz, b.source,
                      _busy(timed), {p: (n, bws[p]) for p, n in through.items()})


def _busy(steps: list[Step]) -> dict[str, int]:
    """Busy cycles per pipe of the busiest timeline (core, block) of each pipe."""
    per: dict[tuple[str, str, int], int] = {}
    for s in steps:
        if s.sync is None and s.cycles:
            k = (s.pn, s.core, s.block)
            per[k] = per.get(k, 0) + s.cycles
    out: dict[str, int] = {}
    for (p, _, _), v in per.items():
        out[p] = max(out.get(p, 0), v)
    return out


def _shared(steps: list[Step], mult: int, bws: dict[str, float], rounds: int, schedule: Any,
            manual: bool) -> tuple[int, list[Step]]:
    """The cores' makespan with the GM steps stretched by the oversubscription of their
    budget (path) over their intervals (copies of ``steps`` scheduled again)."""
    ids = {id(s): i for i, s in enumerate(steps)}
    work = [copy.copy(s) for s in steps]
    for w in work:
        if w.after:
            w.after = [work[ids[id(p)]] if id(p) in ids else p for p in w.after]
    base = [s.cycles for s in steps]
    timed = steps  # the schedule whose overlaps set the stretch
    end = max((s.end for s in steps), default=0)
    path = [path_of(s, bws) for s in steps]
    for _ in range(rounds):
        changed = False
        for p, bw in bws.items():
            idx = [i for i, s in enumerate(timed) if s.gm and base[i] > 0 and path[i] == p]
            changed |= _stretch(timed, work, idx, base, mult, bw)
        if not changed:
            break
        for w in work:
            w.fire = None
        schedule(work, manual=manual)
        end = max((w.end for w in work), default=0)
        timed = work
    return end, timed


def _stretch(timed: list[Step], work: list[Step], idx: list[int], base: list[int], mult: int,
             bw: float) -> bool:
    """Set ``work[i].cycles`` for the steps ``idx`` of one budget: each stretched by the demand
    over its interval (bytes a cycle at the uncontended rates, from ``timed``) over ``bw``.
    True if any changed."""
    cuts = sorted({t for i in idx for t in (timed[i].start, timed[i].end)})
    if len(cuts) < 2:
        return False
    delta = [0.0] * len(cuts)
    for i in idx:
        r = timed[i].gm * mult / base[i]
        delta[bisect.bisect_left(cuts, timed[i].start)] += r
        delta[bisect.bisect_left(cuts, timed[i].end)] -= r
    # area[k]: the demand integrated from cuts[0] to cuts[k]
    area = [0.0] * len(cuts)
    rate = 0.0
    for k in range(1, len(cuts)):
        rate += delta[k - 1]
        area[k] = area[k - 1] + rate * (cuts[k] - cuts[k - 1])
    changed = False
    for i in idx:
        s = timed[i]
        lo, hi = bisect.bisect_left(cuts, s.start), bisect.bisect_left(cuts, s.end)
        span = s.end - s.start
        if span <= 0:
            continue
        stretch = max(1.0, (area[hi] - area[lo]) / span / bw)
        c = math.ceil(base[i] * stretch)
        if c != work[i].cycles:
            work[i].cycles = c
            changed = True
    return changed

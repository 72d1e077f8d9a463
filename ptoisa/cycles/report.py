"""The cycle report: totals, per-pipe busy time, the instructions that cost most, a Chrome
Trace Event file (Perfetto / chrome://tracing) and a matplotlib timeline."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..enums import Pipe
from ..errors import PtoError
from ..targets import DEFAULT_TARGET, get_target
from .steps import Deadlock, Flow, Step

_PIPE_ORDER = [Pipe.MTE2, Pipe.MTE1, Pipe.M, Pipe.FIX, Pipe.V, Pipe.MTE3, Pipe.S, Pipe.ALL]


def _where(loc: Any) -> str:
    if loc is None:
        return "?"
    if isinstance(loc, tuple):
        return ":".join(str(x) for x in loc)
    f, line = getattr(loc, "file", None), getattr(loc, "line", None)
    if line is not None:
        return f"{f}:{line}" if f else f"line {line}"
    return str(loc)


def _cost_note(target: Any) -> str:
    """What the report says of its costs on ``target`` (a name), from the target's traits
    (``costs_measured``, ``cost_table``): nothing where they were measured (a2a3), else which
    estimates they are."""
    try:
        traits = get_target(str(target)).traits
    except PtoError:  # a target no longer (or never) known: the fitted table
        return " (estimates: the a2a3 costs)"
    if traits.cost_table == "a5_vf":
        if traits.costs_measured:
            return (" (fitted to A5 measurements for the instructions the A5 pack measures; "
                    "the rest are estimates: the a2a3 costs)")
        return " (estimates: the A5 fit, else the a2a3 costs)"
    if traits.costs_measured:
        return ""
    return " (estimates: the a2a3 costs)"


def clock_hz(target: Any) -> float:
    """The target's clock (its ``clock_hz`` trait; an unknown target: the default's)."""
    try:
        return float(get_target(str(target)).traits.clock_hz)
    except PtoError:
        return float(get_target(DEFAULT_TARGET).traits.clock_hz)


@dataclass
class Row:
    """One instruction (op at a source location): how often it ran and its cycles."""

    op: str
    where: str
    pipe: str
    count: int
    cycles: int


class CycleReport:
    """The timed run: ``total`` cycles, ``busy`` per pipe, ``rows`` per instruction, every
    scheduled ``steps``, the flag ``flows`` and any ``deadlocks``."""

    def __init__(self, steps: list[Step], flows: list[Flow], deadlocks: list[Deadlock], *,
                 target: str, mode: str) -> None:
        self.steps = steps
        self.flows = flows
        self.deadlocks = deadlocks
        self.target = target
        self.mode = mode
        self.outputs: Any = None
        self.blocks = 1
        self.lockstep = False
        #: the run computed values (False: timing only, ``cycles="timing"``: ``outputs`` and
        #: the arrays it wrote hold no results)
        self.values = True
        #: instructions the cost table could not price (counted as 1 cycle)
        self.errors: list[str] = []
        work = [s for s in steps if s.sync is None]
        self.total = max((s.end for s in steps), default=0)
        #: the target's clock: cycles / (clock_hz / 1e6) is microseconds
        self.clock_hz = clock_hz(target)
        busy: dict[str, int] = {}
        for s in work:
            busy[s.pn] = busy.get(s.pn, 0) + s.cycles
        lanes: dict[str, int] = {}
        for pn, _, _ in {(s.pn, s.core, s.block) for s in work}:
            lanes[pn] = lanes.get(pn, 0) + 1
        #: timelines (core, block) each pipe appears on: utilisation is per timeline
        self.timelines = {p: lanes[p] for p in busy}
        order = {p.name: i for i, p in enumerate(_PIPE_ORDER)}
        self.busy = dict(sorted(busy.items(), key=lambda kv: order.get(kv[0], 99)))
        self._work = work
        self._rows: list[Row] | None = None
        self._launch: Any = None
        #: the schedule function (set by the model that built this report; the launch model
        #: schedules the cores again with their GM steps stretched)
        self._reschedule: Any = None
        #: the cost table that priced the steps (None: the target's)
        self.table: Any = None

    @property
    def launch(self) -> Any:
        """The whole launch (:class:`ptoisa.cycles.launch.LaunchTime`): the cores sharing the
        target's GM bandwidth, plus launch overhead, first loads and last stores' drain.
        ``total`` stays one core's timeline with GM to itself."""
        if self._launch is None:
            from .launch import whole_launch

            self._launch = whole_launch(self.steps, blocks=self.blocks,
                                        lockstep=self.lockstep, target=self.target,
                                        clock_hz=self.clock_hz, manual=self.mode == "manual",
                                        reschedule=self._reschedule)
        return self._launch

    def launch_with(self, constants: Any) -> Any:
        """The whole launch priced with other launch constants (a
        :class:`ptoisa.cycles.launch.Budget`) than the target's; not remembered."""
        from .launch import whole_launch

        return whole_launch(self.steps, blocks=self.blocks, lockstep=self.lockstep,
                            target=self.target, clock_hz=self.clock_hz,
                            manual=self.mode == "manual", reschedule=self._reschedule,
                            constants=constants)

    @property
    def rows(self) -> list[Row]:
        """Per instruction (op at a source location, pipe): runs and cycles, costliest first."""
        if self._rows is None:
            agg: dict[tuple[str, Any, str], list[int]] = {}
            for s in self._work:
                a = agg.setdefault((s.op, s.loc, s.pn), [0, 0])
                a[0] += 1
                a[1] += s.cycles
            self._rows = sorted((Row(k[0], _where(k[1]), k[2], v[0], v[1])
                                 for k, v in agg.items()), key=lambda r: -r.cycles)
        return self._rows

    # ---- figures --------------------------------------------------------------------------
    def utilisation(self) -> dict[str, float]:
        """Busy share of each pipe over the run (averaged over the blocks' timelines)."""
        return {p: (b / (self.total * self.timelines[p]) if self.total else 0.0)
                for p, b in self.busy.items()}

    @property
    def critical_pipe(self) -> str | None:
        """The busiest pipe: the one that bounds the kernel when everything else overlaps."""
        return max(self.busy, key=lambda p: self.busy[p]) if self.busy else None

    def us(self, cycles: float | None = None) -> float:
        """``cycles`` (default: the total) in microseconds at the target's clock."""
        return (self.total if cycles is None else cycles) * 1e6 / self.clock_hz

    def cycles_of(self, index: int) -> int:
        """Cycles of the ``index``-th recorded non-sync instruction."""
        work = [s for s in self.steps if s.sync is None]
        return work[index].cycles

    def overlap(self, a: str, b: str) -> int:
        """Cycles during which pipes ``a`` and ``b`` both work (same core and block)."""
        def spans(p: str) -> dict[tuple[str, int], list[tuple[int, int]]]:
            d: dict[tuple[str, int], list[tuple[int, int]]] = {}
            for s in self.steps:
                if s.sync is None and s.pn == p and s.end > s.start:
                    d.setdefault((s.core, s.block), []).append((s.start, s.end))
            return d
        sa, sb = spans(a), spans(b)
        total = 0
        for k, xs in sa.items():
            for s0, e0 in xs:
                for s1, e1 in sb.get(k, ()):
                    total += max(0, min(e0, e1) - max(s0, s1))
        return total

    def summary(self, top: int = 10) -> str:
        if self.blocks > 1:
            how = ("in lockstep: one timeline stands for every block" if self.lockstep else
                   "each on its own core: the slowest block's timeline")
            where = f"; {self.blocks} blocks {how}"
        else:
            where = ""
        est = _cost_note(self.target)
        lines = [f"cycles: {self.total} = {self.us():.3f} us at {self.clock_hz / 1e9:g} GHz "
                 f"(target {self.target}{est}, {self.mode}-sync schedule{where})"]
        if not self.values:
            lines.append("timing only (no values computed): outputs hold no results")
        from . import costs

        if any(s.op in costs.A5_MICRO for s in self._work):
            lines.append("micro-ops: estimates (upstream's A5 vector-function table, TLOAD's "
                         "DMA rule; docs/cycles.md 1b)")
        util = self.utilisation()
        for p, b in self.busy.items():
            n = self.timelines[p]
            per = f" (over {n} core/block timelines)" if n > 1 else ""
            lines.append(f"  {p:<5} busy {b:>10}  {100 * util[p]:5.1f}%{per}")
        if self.critical_pipe:
            lines.append(f"critical pipe: {self.critical_pipe}")
        if self.rows:
            lines.append("top instructions by time:")
            for r in self.rows[:top]:
                lines.append(f"  {r.cycles:>10}  {r.op:<14} x{r.count:<5} {r.pipe:<5} {r.where}")
        if any(s.gm for s in self._work):
            lines.append(self.launch.summary())
        for d in self.deadlocks:
            lines.append(f"deadlock: {_where(d.step.loc)}: {d.message}")
        for e in self.errors[:5]:
            lines.append(f"cost model: {e}")
        return "\n".join(lines)

    def explain(self) -> str:
        """Per instruction (op at a source location, as :attr:`rows`) the cost rule that
        priced it, marked ``[estimate: why]`` where no measurement on the target is behind
        it (:func:`ptoisa.cycles.costs.explain`); ``ptoisa run --cycles --explain``."""
        from . import costs

        table = self.table if self.table is not None else costs.default_table(self.target)
        rules: dict[tuple[str, str, str], str] = {}
        micro = False
        for s in self._work:
            k = (s.op, _where(s.loc), s.pn)
            if k in rules or s.feat is None:
                continue
            rule = costs.explain(table, s.feat, s.pipe, self.target)[1]
            micro = micro or "vector function" in rule
            rules[k] = rule
        lines = ["cost rules:"]
        for r in self.rows:
            rule = rules.get((r.op, r.where, r.pipe), "(not kept: a per-block cost in lockstep)")
            lines.append(f"  {r.op} at {r.where}: {rule}")
        if micro:
            lines.append(
                "  (a vector micro-op's cycles are what it adds to its vector function: "
                f"{costs.VF_STARTUP} start-up + {costs.VF_DRAIN} drain + the latency of one "
                "load -> compute -> store chain + the busiest port class (2 load ports, 1 "
                "store port, 2 EXUs; 5 ops issued a cycle); 'alone' is a function of that op "
                "alone)")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.summary()

    def __repr__(self) -> str:
        only = ", timing only" if not self.values else ""
        return f"<CycleReport {self.total} cycles, critical {self.critical_pipe}{only}>"

    # ---- Chrome trace ---------------------------------------------------------------------
    def trace_events(self) -> dict[str, Any]:
        """Chrome Trace Event JSON: one process per (core, block), one thread per pipe,
        complete ("X") events per instruction, set/wait flags as zero-length slices joined by
        flow ("s"/"f") events. ``ts`` and ``dur`` are microseconds (the format's unit) at the
        target's clock; each slice's ``args`` keep its cycles."""
        us = 1e6 / self.clock_hz
        procs: dict[tuple[str, int], int] = {}
        tids: dict[str, int] = {p.name: i + 1 for i, p in enumerate(_PIPE_ORDER)}
        ev: list[dict[str, Any]] = []
        used: set[tuple[int, int]] = set()
        for s in self.steps:
            pid = procs.setdefault((s.core, s.block), len(procs) + 1)
            tid = tids[s.pn]
            used.add((pid, tid))
            if s.sync is None:
                ev.append({"name": s.op, "cat": s.pn, "ph": "X", "ts": s.start * us,
                           "dur": s.cycles * us, "pid": pid, "tid": tid,
                           "args": {"at": _where(s.loc), "index": s.index,
                                    "cycles": s.cycles, "start_cycle": s.start}})
            elif s.sync[0] in ("flag_set", "flag_wait"):
                # a zero-length slice on the pipe it holds: the flow arrows bind to these
                _, src, dst, eid = s.sync
                ev.append({"name": f"{s.op.lower()} {src.name}->{dst.name} #{eid}",
                           "cat": "flag", "ph": "X", "ts": s.start * us, "dur": 0, "pid": pid,
                           "tid": tid, "args": {"at": _where(s.loc), "index": s.index}})
        for i, f in enumerate(self.flows):
            pid = procs.setdefault((f.core, f.block), len(procs) + 1)
            # a cross-core edge (TPUSH->TPOP, SYNC_SET->SYNC_WAIT...) ends on the other core
            pid2 = pid if f.core2 is None else procs.setdefault((f.core2, f.block2),
                                                                 len(procs) + 1)
            src, dst = tids[f.src.name], tids[f.dst.name]
            used.update({(pid, src), (pid2, dst)})
            name = f"flag {f.src.name}->{f.dst.name} #{f.event}" if f.core2 is None \
                else f"{f.label} {f.core}->{f.core2}"
            cat = "flag" if f.core2 is None else "cross-core"
            ev.append({"name": name, "cat": cat, "ph": "s", "id": i + 1, "ts": f.t_set * us,
                       "pid": pid, "tid": src})
            ev.append({"name": name, "cat": cat, "ph": "f", "bp": "e", "id": i + 1,
                       "ts": f.t_wait * us, "pid": pid2, "tid": dst})
        meta: list[dict[str, Any]] = []
        for (core, blk), pid in procs.items():
            label = (f"{core} blocks 0-{self.blocks - 1} (lockstep: one timeline for all)"
                     if self.lockstep and self.blocks > 1 else f"{core} block {blk}")
            meta.append({"name": "process_name", "ph": "M", "pid": pid, "tid": 0,
                         "args": {"name": label}})
        for pid, tid in sorted(used):
            pname = next(p for p, t in tids.items() if t == tid)
            meta.append({"name": "thread_name", "ph": "M", "pid": pid, "tid": tid,
                         "args": {"name": pname}})
            meta.append({"name": "thread_sort_index", "ph": "M", "pid": pid, "tid": tid,
                         "args": {"sort_index": tid}})
        # timestamps are microseconds (the Trace Event format's unit); the viewers show them
        # in ns resolution (displayTimeUnit: "ms" or "ns")
        return {"traceEvents": meta + ev, "displayTimeUnit": "ns",
                "otherData": {"ts_unit": "us", "clock_hz": self.clock_hz,
                              "target": self.target, "mode": self.mode,
                              "total_cycles": self.total, "total_us": self.us()}}

    def write_trace(self, path: str | Path) -> None:
        try:
            Path(path).write_text(json.dumps(self.trace_events()))
        except OSError as e:
            raise PtoError(f"cannot write {path}: {e.strerror}") from None

    # ---- picture --------------------------------------------------------------------------
    def plot(self, ax: Any = None, *, title: str | None = None) -> Any:
        """Draw the pipe timeline (one row per pipe per core/block) with matplotlib (the
        optional extra ``ptoisa[plot]``); returns the Axes."""
        try:
            import matplotlib.pyplot as plt
        except ImportError:
            raise PtoError("plot needs matplotlib: pip install 'ptoisa[plot]'") from None
        if ax is None:
            _, ax = plt.subplots(figsize=(10, 3))
        lanes: dict[tuple[str, int, str], list[tuple[int, int]]] = {}
        names: dict[tuple[str, int, str], str] = {}
        order = {p.name: i for i, p in enumerate(_PIPE_ORDER)}
        for s in self.steps:
            if s.sync is None and s.cycles:
                k = (s.core, s.block, s.pn)
                lanes.setdefault(k, []).append((s.start, s.cycles))
        keys = sorted(lanes, key=lambda k: (k[0], k[1], order.get(k[2], 99)))
        multi = len({(k[0], k[1]) for k in keys}) > 1
        colors = {"MTE2": "tab:blue", "MTE1": "tab:cyan", "M": "tab:red", "FIX": "tab:brown",
                  "V": "tab:green", "MTE3": "tab:orange", "S": "tab:gray"}
        for i, k in enumerate(keys):
            names[k] = f"{k[0]}/{k[1]} {k[2]}" if multi else k[2]
            ax.broken_barh(lanes[k], (i - 0.4, 0.8), facecolors=colors.get(k[2], "tab:purple"),
                           edgecolor="black", linewidth=0.3)
        ax.set_yticks(range(len(keys)))
        ax.set_yticklabels([names[k] for k in keys])
        ax.invert_yaxis()
        ax.set_xlabel("cycles")
        ax.set_xlim(0, max(1, self.total))
        ax.set_title(title or f"{self.total} cycles ({self.target})")
        return ax

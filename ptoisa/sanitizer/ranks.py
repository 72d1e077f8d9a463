"""The sanitizer across the ranks of a multi-rank launch (``pto.launch(..., ranks=N,
sanitize=True)``).

Every rank gets its own :class:`~ptoisa.sanitizer.Sanitizer` (its pipes, blocks, flags: the
checks of one NPU), attached to the rank's machine when the launcher makes it (an observer
whose ``machine_made`` sees the rank: :mod:`ptoisa.observe`). In the in-process backend the
ranks' GM windows are also checked against each other (:class:`RankRaces`):

* each rank has a vector clock over the ranks; its accesses to window bytes are stamped with
  (rank, epoch). Within a rank, program order orders its accesses at this level (the pipes
  are the per-rank sanitizer's concern);
* TNOTIFY releases: the signal words it updates accumulate the notifier's clock (the
  notifier's epoch then advances); a TWAIT / TTEST that finds the words satisfying its
  condition acquires what they accumulated (:meth:`ptoisa.concurrent.ranks.Ranks.observed`,
  called after the read that satisfied it); the end of the launch orders everything (the
  state is per launch);
* window bytes are keyed by ``("rank", r, window)`` on every rank
  (:func:`ptoisa.concurrent.access.gm_span` for a rank's own instructions, the backend's
  :class:`~ptoisa.concurrent.ranks.RemoteAccess` ranges for
  the communication instructions): two accesses of different ranks to the same bytes, one a
  write, the earlier not known to the later's rank, are a race between ranks. Atomic adds
  (TPUT with AtomicAdd) do not race with each other; signal words (TNOTIFY / TWAIT / TTEST)
  are synchronisation, not data.

Under MPI (``ranks=comm``) each process checks its own rank only: the clocks would have to
travel with the signals.
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np

from ..concurrent.access import accesses
from ..errors import SourceLoc
from ..observe import observing
from .report import Finding, Report, SanitizerError, Site, where

__all__ = ["RankRaces", "sanitized_ranks"]


class _Acc:
    __slots__ = ("rank", "epoch", "site", "atomic")

    def __init__(self, rank: int, epoch: int, site: Site, atomic: bool) -> None:
        self.rank, self.epoch, self.site, self.atomic = rank, epoch, site, atomic


class _Cell:
    __slots__ = ("writers", "readers")

    def __init__(self) -> None:
        self.writers: dict[int, _Acc] = {}
        self.readers: dict[int, _Acc] = {}


def _site(op: str, rec: Any, loc: Any) -> Site:
    if rec is not None:
        from .clocks import site_of

        return site_of(rec)
    return Site(op.upper(), "PIPE_S", loc)


_HISTORY = 256  # notifies kept per signal word
_PRUNE_AT = 64  # cells per window copy before the ones every rank knows are dropped


def _i32(v: int) -> int:
    v &= 0xFFFFFFFF
    return v - (1 << 32) if v >= 1 << 31 else v


def _join(a: dict[int, int], b: dict[int, int]) -> None:
    for k, v in b.items():
        if v > a.get(k, 0):
            a[k] = v


class RankRaces:
    """Happens-before between the ranks of one in-process launch, and the shared GM state of
    their windows. Thread-safe: every rank's thread reports into it."""

    def __init__(self, size: int) -> None:
        self.lock = threading.Lock()
        self.vc: list[dict[int, int]] = [{r: 1} for r in range(size)]
        #: per signal word (rank, window, byte): its value before the first notify seen and
        #: the notifies since, as (value after it, the notifier's clock)
        self.signals: dict[tuple[int, int, int], tuple[int, list[tuple[int, dict[int, int]]]]]
        self.signals = {}
        #: (rank, window) -> (lo, hi) -> last writer / reader per rank
        self.mem: dict[tuple[int, int], dict[tuple[int, int], _Cell]] = {}
        self.findings: list[tuple[Finding, Any]] = []
        self.names: dict[tuple[int, int], str] = {}
        self.limit: dict[tuple[int, int], int] = {}

    # ---- observers ---------------------------------------------------------------------------
    def machine_observer(self, rank: int) -> Any:
        """Observes a rank's instructions: its own GM accesses to windows (the communication
        instructions are seen through the backend instead)."""
        def obs(rec: Any) -> None:
            if rec.ins.family == "comm":
                return
            reads, writes = accesses(rec)
            spans = [(s, False) for s in reads] + [(s, True) for s in writes]
            spans = [(s, w) for s, w in spans if s.space == "GM" and isinstance(s.key, tuple)
                     and s.key[:1] == ("rank",)]
            if not spans:
                return
            site = _site(rec.ins.name, rec, rec.loc)
            with self.lock:
                for s, w in spans:
                    self.access(rank, s.key[1], s.key[2], s.lo, s.hi, w, False, site)
        return obs

    def backend_observer(self, backend: Any) -> Any:
        """Observes the accesses through a rank's backend (RemoteAccess)."""
        me = backend.rank

        def obs(ra: Any) -> None:
            kind = ra.kind
            win = ra.window.index
            self.names.setdefault((ra.target, win), ra.window.name)
            if kind == "read":
                return
            with self.lock:
                if kind == "notify":
                    clock = dict(self.vc[me])
                    value, set_ = ra.value if ra.value is not None else (0, False)
                    for start, n in ra.ranges:
                        for b in range(start, start + n, 4):
                            base, hist = self._word(backend, ra, b)
                            cur = hist[-1][0] if hist else base
                            new = value if set_ else cur + value
                            hist.append((_i32(new), clock))
                            if len(hist) > _HISTORY:  # bounded: the oldest two as one
                                (_, c0), (v1, c1) = hist[0], hist[1]
                                j = dict(c0)
                                _join(j, c1)
                                hist[:2] = [(v1, j)]
                    self.vc[me][me] += 1
                    return
                if kind == "acquire":
                    self.acquire(backend, ra)
                    return
                site = _site(ra.op or "?", backend.last, ra.loc)
                for start, n in ra.ranges:
                    self.access(me, ra.target, win, start, start + n, kind != "get",
                                kind == "add", site)
        return obs

    def _word(self, backend: Any, ra: Any, b: int
              ) -> tuple[int, list[tuple[int, dict[int, int]]]]:
        """A signal word's history; the first time it is seen, its value now is its value
        before any notify (a notify is seen, under the lock, before it writes)."""
        k = (ra.target, ra.window.index, b)
        h = self.signals.get(k)
        if h is None:
            raw = backend.world.arrays[ra.window.index][ra.target]
            h = self.signals[k] = (int(raw[b: b + 4].view(np.int32)[0]), [])
        return h

    def acquire(self, backend: Any, ra: Any) -> None:
        """A wait found the words satisfying its condition: it is ordered after the notifies
        up to the first that made each word satisfy it (on the NPU the wait may have seen the
        word right then: later notifies order nothing), all of them when the history does not
        explain the value (a word written otherwise)."""
        vc = self.vc[backend.rank]
        for start, n in ra.ranges:
            for b in range(start, start + n, 4):
                base, hist = self._word(backend, ra, b)
                if ra.cond is not None and bool(np.all(ra.cond(np.array([base])))):
                    continue  # held before any notify
                k = len(hist)
                if ra.cond is not None:
                    k = next((i + 1 for i, (v, _) in enumerate(hist)
                              if bool(np.all(ra.cond(np.array([v]))))), len(hist))
                for _, c in hist[:k]:
                    _join(vc, c)

    # ---- the check ---------------------------------------------------------------------------
    def access(self, rank: int, target: int, win: int, lo: int, hi: int, write: bool,
               atomic: bool, site: Site) -> None:
        vc = self.vc[rank]
        cells = self.mem.setdefault((target, win), {})
        for (clo, chi), cell in cells.items():
            if clo >= hi or lo >= chi:
                continue
            a, b = max(lo, clo), min(hi, chi)
            for s, w in cell.writers.items():
                if s != rank and vc.get(s, 0) < w.epoch and not (atomic and w.atomic):
                    self.race("RAW" if not write else "WAW", w, rank, site, target, win, a, b)
            if write:
                for s, r in cell.readers.items():
                    if s != rank and vc.get(s, 0) < r.epoch:
                        self.race("WAR", r, rank, site, target, win, a, b)
        cell = cells.get((lo, hi))
        if cell is None:
            if len(cells) >= self.limit.get((target, win), _PRUNE_AT):
                self._prune(cells)
                self.limit[(target, win)] = max(_PRUNE_AT, 2 * len(cells))
            cell = cells[(lo, hi)] = _Cell()
        acc = _Acc(rank, vc[rank], site, atomic)
        (cell.writers if write else cell.readers)[rank] = acc

    def _prune(self, cells: dict[tuple[int, int], _Cell]) -> None:
        """Drop the cells every rank already knows about (nothing later can race with them):
        the state follows what is unordered, not the size of the windows."""
        vcs = self.vc
        for k in list(cells):
            c = cells[k]
            if all(all(vc.get(a.rank, 0) >= a.epoch for vc in vcs)
                   for a in (*c.writers.values(), *c.readers.values())):
                del cells[k]

    def race(self, hz: str, prev: _Acc, rank: int, site: Site, target: int, win: int,
             lo: int, hi: int) -> None:
        """Two unordered accesses: on the NPU either may come first, so the finding does not
        depend on which thread got there first here: it is located at the reader (or the
        later writer), names the writer, and the fix orders the writer first."""
        cur = (rank, site)
        old = (prev.rank, prev.site)
        if hz == "WAR":  # the earlier access read: report it as the reader of the write
            hz, cur, old = "RAW", old, cur
        (rb, b), (ra, a) = cur, old
        key = ("rank-race", hz, a.loc, a.op, b.loc, b.op)
        if hz == "WAW":
            key = ("rank-race", hz) + tuple(sorted([(str(a.loc), a.op), (str(b.loc), b.op)]))
        name = self.names.get((target, win), f"window {win}")
        verb = "reads" if hz == "RAW" else "writes"
        msg = (f"race ({hz}) between ranks on GM [{lo:#x}, {hi:#x}) of rank {target}'s "
               f"window {name!r}: {b} on rank {rb} {verb} what {a} on rank {ra} at "
               f"{where(a.loc)} writes; no TNOTIFY/TWAIT orders them (on the NPU either may "
               f"come first)")
        pto = isinstance(b.loc, SourceLoc) or isinstance(a.loc, SourceLoc)
        nt = "pto.tnotify" if pto else "comm.TNOTIFY"
        wt = "pto.twait" if pto else "comm.TWAIT"
        fix = (f"insert {nt} (on a signal word of rank {rb}) after {a.op} at {where(a.loc)} "
               f"on rank {ra} and {wt} on that word before {b.op} at {where(b.loc)} on rank "
               f"{rb}")
        self.findings.append((Finding("race", msg, b, a, hz, "GM", lo, hi, fix,
                                      {"ranks": (ra, rb), "window": name,
                                       "target": target}), key))


# ---- the launch ----------------------------------------------------------------------------

def sanitized_ranks(sanitize: Any, run: Any, ranks: Any, default_sync: str = "manual"
                    ) -> tuple[Report, bool]:
    """Run ``run()`` (a multi-rank launch) with a sanitizer on every rank, and the checks
    between ranks when the ranks are threads of this process (``ranks`` an int).
    ``default_sync``: the ranks' sync mode when the sanitizer has none (``auto`` for a .pto
    function without synchronisation ops). Returns (report, whether the caller should raise
    on findings)."""
    from ..concurrent import ranks as _ranks
    from . import Sanitizer, make

    san = make(sanitize)
    assert san is not None
    san.begin(default_sync)
    in_process = isinstance(ranks, int) and not isinstance(ranks, bool)
    between = RankRaces(ranks) if in_process and "races" in san.checks else None
    per_rank: dict[int, Sanitizer] = {}
    lock = threading.Lock()

    class PerRank:
        """Observer (ptoisa.observe): a sanitizer of its own on every rank's machine."""

        def __call__(self, rec: Any) -> None:  # (never attached itself)
            pass

        def machine_made(self, m: Any, b: Any) -> None:
            if b is None:
                return  # not a rank's machine
            mine = Sanitizer(san.checks, sync=san.sync, fail_fast=san.fail_fast)
            mine.begin(default_sync)
            with lock:
                per_rank[b.rank] = mine
            m.observers.append(mine)
            if between is not None:
                m.observers.append(between.machine_observer(b.rank))
                b.observers.append(between.backend_observer(b))

    try:
        with observing(PerRank()):
            run()
    except _ranks.RankError as e:  # fail_fast: a rank's sanitizer stopped it
        if isinstance(e.__cause__, SanitizerError):
            raise e.__cause__ from None
        raise
    finally:
        for r in sorted(per_rank):
            rep = per_rank[r].finish()
            san.report.absorb(rep)
            for f in rep.findings:
                f = Finding(f.kind, f"on rank {r}: {f.message}", f.site, f.other,
                            f.hazard, f.space, f.lo, f.hi, f.fix, {**f.extra, "rank": r})
                san.add(f, ("rank", r, f.kind, f.message))
        if between is not None:
            for f, key in between.findings:
                san.add(f, key)
    report = san.finish()
    return report, not isinstance(sanitize, Sanitizer)


def check_report(report: Report, strict: bool) -> Report:
    if report and strict:
        raise SanitizerError(report)
    return report

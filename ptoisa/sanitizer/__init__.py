"""The sanitizer: finds the kernel bugs that only show on the NPU.

It is an observer of the machine (see :meth:`ptoisa.isa.registry.Instr.run`): it sees every
executed instruction, eager or ``.pto``, before it runs, and never changes a result. What it
checks (``checks``):

* ``races``: happens-before between pipes. Each core keeps one vector clock per pipe; the edges
  are set_flag -> wait_flag (matched by source pipe, destination pipe and event id, in issue
  order), pipe_barrier, Events passed to a later intrinsic, TSYNC and SYNCALL. Two accesses to
  the same bytes (:mod:`ptoisa.concurrent.access`), at least one a write, whose clocks are
  unordered are a
  race (RAW / WAR / WAW). Same-pipe accesses are ordered by program order unless ``sync`` is
  ``strict`` (then a same-pipe dependence needs a ``pipe_barrier``, as PTOAS's InsertSync
  requires). A wait no earlier set can satisfy, and a set nothing waits for (a leaked event),
  are reported too; and GM accesses of different blocks with no SYNCALL between them
  (:mod:`.blocks`). The cores of a mixed launch's block (AIC, AIV0, AIV1) share their GM
  state; the edges between them (TPUSH -> TPOP, TFREE -> the push reusing the slot,
  SYNC_SET -> SYNC_WAIT, SYNCALL) come from the launcher through :mod:`ptoisa.concurrent.edges`.
* ``uninit``: a read of tile bytes nothing wrote in this launch.
* ``oob``: gathers/scatters whose indices leave the table; a GM view reaching outside its
  array (which stops the run) joins the report.
* ``placement``: a placed tile read after a tile on partly the same bytes wrote over it; a
  placement the target refuses (alignment, capacity) joins the report.
* ``nan`` (opt-in): the first instruction that turns finite inputs into NaN/Inf.

Use it through ``pto.launch(..., sanitize=True)``, ``prog.fn(..., sanitize=True)`` or
``ptoisa run FILE.pto --sanitize``; see docs/sanitizer.md for the model.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

from ..concurrent.unitflag import UnitFlags
from ..errors import ExecutionError, PtoError, PtoMemoryError
from ..isa import REGISTRY
from ..isa.registry import PIPE_SYNC
from ..observe import observing
from ..progress import Progress
from .blocks import BlockRaces
from .clocks import Core, Group
from .report import Finding, Report, SanitizerError, Site, where

__all__ = ["CHECKS", "Finding", "Report", "Sanitizer", "SanitizerError", "Session", "Site",
           "make", "sanitized", "sanitizing", "sync_mode_of", "where"]

CHECKS = ("races", "oob", "uninit", "placement", "nan")
DEFAULT_CHECKS = ("races", "oob", "uninit", "placement")
SYNC_MODES = ("auto", "manual", "strict")


class Sanitizer:
    """Observe runs and collect findings (``report``).

    ``checks``: a subset of :data:`CHECKS` (default: all but ``nan``). ``sync``: ``manual``
    (report races; same-pipe accesses in program order), ``strict`` (same-pipe dependences
    need a barrier too), ``auto`` (the program is synchronised by the compiler: no race
    reports) or None (``.pto`` functions without any synchronisation op are ``auto``, the rest
    ``manual``; an eager launch without a single synchronisation is ``auto``, and its report
    says so). ``fail_fast``: raise :class:`SanitizerError` at the first finding."""

    def __init__(self, checks: Iterable[str] | str | None = None, *, sync: str | None = None,
                 fail_fast: bool = False) -> None:
        if checks is None:
            cs = set(DEFAULT_CHECKS)
        else:
            if isinstance(checks, str):
                checks = [c for c in checks.split(",") if c.strip()]
            cs = {c.strip() for c in checks}
            bad = sorted(cs - set(CHECKS))
            if bad:
                raise PtoError(f"unknown sanitizer check(s) {', '.join(bad)} "
                               f"(choose from {', '.join(CHECKS)})")
        if sync is not None and sync not in SYNC_MODES:
            raise PtoError(f"sync must be one of {', '.join(SYNC_MODES)}, got {sync!r}")
        self.checks = frozenset(cs)
        self.sync = sync
        self.fail_fast = fail_fast
        self.report = Report()
        #: the L0C unit-flag hand-offs (matmul <-> fix-pipe store) seen so far
        self.unit_flags = UnitFlags()
        self._seen: set[Any] = set()
        #: the event id a fix note proposed, per pipe pair and pair of places (one id per
        #: place pair over the report, so that its notes can all be applied)
        self.proposed: dict[Any, dict[tuple[str, str, bool], int]] = {}
        self._cores: dict[Any, Core] = {}
        self._cur_key: Any = None
        self._cur: Core | None = None
        self._cur_m: Any = None
        self._cur_b: Any = None
        self._default_sync = "manual"
        self._core_ids: dict[Any, int] = {}
        #: the cores of each block (shared GM state across a mixed launch's cluster)
        self._groups: dict[Any, Group] = {}
        #: cross-core flag ids the program sets (a fix picks a free one)
        self.xids: set[int] = set()
        self.blocks = BlockRaces()
        #: the latest instruction observed (locates an error its run raises)
        self.last: Any = None
        #: the terminal's progress line while a sanitized run goes on (ptoisa/progress.py)
        self.progress: Any = None
        #: whether the run synchronised a core's pipes itself (a flag, a barrier, an Event
        #: waited): an eager launch that never does is checked as auto-synchronised
        self.saw_sync = False

    # ---- launcher hooks --------------------------------------------------------------------------
    def begin(self, default_sync: str = "manual") -> None:
        """A launch starts: its sync mode when none was chosen (``auto`` for a .pto function
        without synchronisation ops; ``eager``: ``manual``, unless the run synchronises
        nothing, when :meth:`finish` checks it as ``auto``)."""
        self._default_sync = default_sync
        self.restart()

    def restart(self) -> None:
        """Forget the per-core state of a run: a launch starts, or a lockstep attempt was
        abandoned (:meth:`rewind`, which also drops what the attempt found)."""
        self._cores.clear()
        self._groups.clear()
        self._cur = self._cur_key = self._cur_m = self._cur_b = None
        self.blocks = BlockRaces()

    def mark(self) -> Any:
        """A lockstep attempt starts (ptoisa.observe): what :meth:`rewind` comes back to."""
        r = self.report
        return (len(r.findings), r.executed, {k: (u, u.count) for k, u in r.unchecked.items()},
                len(r.notes), set(self._seen), self.saw_sync,
                {k: dict(v) for k, v in self.proposed.items()}, set(self.xids),
                dict(self._core_ids), self.unit_flags.mark())

    def rewind(self, mark: Any) -> None:
        """The lockstep attempt since ``mark`` was abandoned (the launch runs again block by
        block): what it found, executed and left unchecked goes, with its per-core state, so
        the report is the one a ``lockstep=False`` launch gives."""
        r = self.report
        (n, r.executed, unchecked, notes, self._seen, self.saw_sync, self.proposed, self.xids,
         self._core_ids, uf) = mark
        del r.findings[n:], r.notes[notes:]
        r.unchecked = {}
        for k, (u, count) in unchecked.items():
            u.count = count
            r.unchecked[k] = u
        self.unit_flags.rewind(uf)
        self.restart()

    def finish(self) -> Report:
        """The launch is over: report what is still pending (events never waited) and return
        the report."""
        for c in list(self._cores.values()):
            self._finish_core(c)
        self._cores.clear()
        self._groups.clear()
        self._cur = self._cur_key = self._cur_m = self._cur_b = None
        if self.sync is None and self._default_sync == "eager" and not self.saw_sync \
                and self.report.executed:
            self._as_auto()
        return self.report

    def _as_auto(self) -> None:
        """An eager run without a single flag, barrier or Event wait is a kernel left to the
        compiler's synchronisation (PTOAS InsertSync, as a .pto function without sync ops):
        the races between the pipes of one core are its to fix, not the user's."""
        r = self.report
        dropped = [f for f in r.findings if f.kind == "race" and f.extra.get("scope") == "core"]
        r.findings = [f for f in r.findings if f not in dropped]
        note = ("checked as auto-synchronised: the kernel has no set_flag/wait_flag, barrier "
                "or Event wait, so the compiler is to order the pipes of each core (races "
                "between blocks, cores and ranks, out-of-bounds, uninitialised reads and "
                "placement are still checked)")
        if dropped:
            note += (f"; {len(dropped)} race(s) between the pipes of a core not reported: "
                     "Sanitizer(sync='manual') reports them")
        if note not in r.notes:
            r.notes.append(note)

    @property
    def mode(self) -> str:
        d = self._default_sync
        return self.sync or ("manual" if d == "eager" else d)

    # ---- the observer ----------------------------------------------------------------------------
    def __call__(self, rec: Any) -> None:
        self.last = rec
        self.report.executed += 1
        if not self.saw_sync and (rec.waits or rec.ins.sync in _USER_SYNC):
            self.saw_sync = True
        if self.progress is not None:
            self.progress.update()
        m = rec.machine
        b = m.block_idx
        if m is not self._cur_m or b is not self._cur_b:
            self._switch(m, b)
        core = self._cur
        assert core is not None
        uf = self.unit_flags
        waits = uf.before(rec)
        if waits:
            core.acquire(rec, waits, None)
        core.observe(rec)
        uf.after(lambda: core.release(rec, None))

    def after(self, rec: Any) -> None:
        """After an instruction ran: a micro-op's bytes are checked now (Core.micro_done)."""
        c = self._cur
        if c is not None and c.micro is not None:
            c.micro_done(rec)

    def _switch(self, m: Any, b: Any) -> None:
        bk = b if isinstance(b, int) else "lanes"
        key = (id(m), bk, m.core)
        core = self._cores.get(key)
        if core is None:
            if bk != "lanes":
                # a lockstep run fell back to one block at a time: it is run again (a
                # launcher's rewind has dropped its cores already; this covers one that
                # does not mark its attempts)
                stale = [k for k in self._cores if k[1] == "lanes"]
                for k in stale:
                    del self._cores[k]
                if stale:
                    self.blocks = BlockRaces()
                    for k in [k for k in self._groups if k[1] == "lanes"]:
                        del self._groups[k]
            # a new block on this machine: the previous block of the same core is over
            for k in [k for k in self._cores if k[0] == key[0] and k[2] == key[2]]:
                self._finish_core(self._cores.pop(k))
            # the cores of one block of one cluster share their GM state (a core outside a
            # mixed launch is a group of one)
            cl = m.cluster
            gk = (id(cl if cl is not None else m), bk)
            group = self._groups.get(gk)
            if group is None:
                group = self._groups[gk] = Group(cl if cl is not None else m)
            core = self._cores[key] = Core(self, key, self.mode, group)
        self._cur, self._cur_key, self._cur_m, self._cur_b = core, key, m, b

    def core_index(self, cid: Any) -> int:
        """A small integer per core identity (``machine.core``): thread ids are
        ``8 * core_index + pipe``, unique across the cores of a launch."""
        return self._core_ids.setdefault(cid, len(self._core_ids))

    def _finish_core(self, c: Core) -> None:
        c.finish()
        g = c.group
        if c in g.cores:
            g.cores.remove(c)
            if not g.cores:
                for k in [k for k, v in self._groups.items() if v is g]:
                    del self._groups[k]

    def not_modelled(self, machine: Any, op: str, loc: Any, why: str) -> None:
        """The run passed an op that computes nothing here (``interp.compiler.NO_EFFECT``):
        whatever it orders or reserves on the NPU is not checked; the report says so."""
        self.report.not_checked(op, loc, why)


    # ---- cross-core edges (ptoisa.concurrent.edges: called by the streams code's semantics) ------
    def _core_of(self, m: Any) -> Core:
        b = m.block_idx
        if m is not self._cur_m or b is not self._cur_b:
            self._switch(m, b)
        assert self._cur is not None
        return self._cur

    def edge_release(self, rec: Any, pipe: Any) -> Any:
        """A release (TPUSH, TFREE, SYNC_SET, arriving at SYNCALL): the releasing pipe's clock."""
        if rec is None:
            return None
        return self._core_of(rec.machine).release(rec, pipe)

    def edge_acquire(self, rec: Any, clocks: list[Any], pipe: Any) -> None:
        """The matching acquire (TPOP, a TPUSH reusing a slot, SYNC_WAIT, leaving SYNCALL):
        join the released clocks into the waiting pipe(s)."""
        if rec is not None:
            self._core_of(rec.machine).acquire(rec, clocks, pipe)

    def core_name(self, thread: int) -> str:
        """AIC / AIV0 / AIV1 (or ``core``) of a thread id (``8 * core_index + pipe``)."""
        from .clocks import core_label

        idx = thread >> 3
        cid = next((c for c, i in self._core_ids.items() if i == idx), None)
        return core_label(cid)

    # ---- findings --------------------------------------------------------------------------------
    def add(self, f: Finding, dedup: Any) -> None:
        if dedup in self._seen:
            return
        self._seen.add(dedup)
        self.report.findings.append(f)
        if self.fail_fast:
            raise SanitizerError(Report([f]))


def make(sanitize: Any) -> Sanitizer | None:
    """The sanitizer of a launch's ``sanitize=`` argument: False/None (off), True (default
    checks), a comma-separated check list, or a :class:`Sanitizer`."""
    if sanitize is None or sanitize is False:
        return None
    if isinstance(sanitize, Sanitizer):
        return sanitize
    if sanitize is True:
        return Sanitizer()
    if isinstance(sanitize, (str, list, tuple, set, frozenset)):
        return Sanitizer(sanitize)
    raise PtoError(f"sanitize must be True/False, a check list or a Sanitizer, got {sanitize!r}")





#: the sync kinds with which a program orders one core's pipes itself (flags, barriers, TSYNC)
_USER_SYNC = PIPE_SYNC | {"events"}

#: ops that make a .pto function manually synchronised: the ops of the entries that order the
#: pipes of one core (set_flag, wait_event, barrier ...: ``ptoas=Ptoas(bracketed=...)``)
SYNC_OPS = frozenset(op for ins in REGISTRY.values() if ins.sync in PIPE_SYNC
                     and ins.ptoas is not None for op in ins.ptoas.bracketed)


def sync_mode_of(module: Any, function: str | None = None) -> str:
    """``manual`` when the function (and what it calls), or the whole module when no function
    is named, has an intra-core synchronisation op; else ``auto`` (PTOAS inserts the flags of
    such a program)."""
    if function is None:
        roots = list(module.ops)
    else:
        f = module.lookup(function)
        roots = [f] if f is not None else list(module.ops)
    seen: set[str] = set()
    while roots:
        top = roots.pop()
        for op in top.walk():
            if op.name in SYNC_OPS:
                return "manual"
            callee = op.callee if op.name in ("func.call", "call") else None
            if callee and callee not in seen:
                seen.add(callee)
                f = module.lookup(callee)
                if f is not None:
                    roots.append(f)
    return "auto"


def _stop_kind(e: PtoError) -> str | None:
    """``placement`` / ``oob`` for the errors that stop a sanitized run and belong in its
    report; None for the rest (they stay errors)."""
    m = e.message
    if isinstance(e, PtoMemoryError) and (e.op == "tassign" or "aligned" in m
                                          or "exceeds the" in m):
        return "placement"
    if "reaches elements" in m or "outside the view's extent" in m:
        return "oob"
    return None


def _user_loc(tb: Any) -> tuple[str, int] | None:
    """(file, line) of the innermost frame of a traceback outside the ptoisa package."""
    pkg = __file__.rsplit("/sanitizer/", 1)[0]
    loc = None
    while tb is not None:
        f = tb.tb_frame.f_code.co_filename
        if not f.startswith(pkg):
            loc = (f, tb.tb_lineno)
        tb = tb.tb_next
    return loc


class Session:
    """What a :func:`sanitizing` block leaves: the sanitizer, its report once the block ended,
    and whether the caller should raise on findings (``sanitize=True`` or a check list; not a
    Sanitizer object the caller reads itself)."""

    def __init__(self, san: Sanitizer, strict: bool) -> None:
        self.sanitizer = san
        self.strict = strict
        self.report: Report | None = None


@contextmanager
def sanitizing(sanitize: Any, default_sync: str) -> Iterator[Session]:
    """Run the block with the sanitizer of ``sanitize`` observing every launch machine (and
    the current one); the session's ``report`` holds the findings afterwards. A run the
    machine refuses to go on with (a placement the target cannot hold, a GM view reaching
    outside its array) ends the block with a SanitizerError carrying it as the last finding."""
    san = make(sanitize)
    assert san is not None
    san.begin(default_sync)
    session = Session(san, not isinstance(sanitize, Sanitizer))
    bar = Progress(None, "sanitize: instructions").__enter__()
    san.progress = bar if bar.enabled else None
    try:
        with observing(san):
            yield session
    except (PtoMemoryError, ExecutionError) as e:
        kind = _stop_kind(e)
        if kind is None or kind not in san.checks:
            raise
        san.fail_fast = False
        loc = e.loc or _user_loc(e.__traceback__)
        if loc is None and san.last is not None:
            loc = san.last.loc
        msg = e.message if e.op is None else f"{e.op}: {e.message}"
        other = None
        readers = getattr(e, "readers", None)
        if kind == "oob" and readers:
            # the access the refused view was made for never ran: name it too
            name, rloc = readers[0]
            ins = REGISTRY.get(name.removeprefix("pto.").upper())
            other = Site(name, ins.pipe.value if ins is not None else "?", rloc)
            msg += (f"; {name} at {where(rloc)} would read it (not executed: the run stops "
                    f"where the view is made)")
        elif kind == "oob":
            msg += "; the run stops where the view is made, before the access that reads it"
        san.add(Finding(kind, msg, Site(e.op or "?", "PIPE_S", loc), other,
                        extra={"readers": list(readers or ())}), (kind, str(e)))
        raise SanitizerError(san.finish()) from None
    finally:
        bar.close()
        san.progress = None
    session.report = san.finish()


def sanitized(sanitize: Any, default_sync: str, run: Any) -> tuple[Any, Report, bool]:
    """``run()`` inside :func:`sanitizing`: (its result, the report, whether to raise)."""
    with sanitizing(sanitize, default_sync) as s:
        result = run()
    assert s.report is not None
    return result, s.report, s.strict

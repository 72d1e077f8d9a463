"""Findings of the sanitizer as data, and how they print (``FILE:LINE:COL: error: ...``)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from ..errors import PtoError, SourceLoc


def where(loc: Any) -> str:
    """A location as text: ``file.pto:LINE:COL`` for ``.pto`` ops, ``file.py:LINE`` for eager
    calls, ``?`` when unknown."""
    if isinstance(loc, SourceLoc):
        return str(loc)
    if isinstance(loc, tuple) and len(loc) == 2:
        return f"{loc[0]}:{loc[1]}"
    return "?" if loc is None else str(loc)


@dataclass(frozen=True)
class Site:
    """One executed instruction a finding names: what it is, where it runs, where it is."""

    op: str  # ``pto.tadd`` for .pto ops, ``TADD`` for eager calls
    pipe: str  # ``PIPE_V``
    loc: Any

    def __str__(self) -> str:
        return f"{self.op} ({self.pipe})"


@dataclass(frozen=True)
class Finding:
    """One problem found in a run.

    ``kind``: ``race``, ``unmatched-wait``, ``leaked-event``, ``oob``, ``uninit``,
    ``placement`` or ``nan``. ``hazard`` is RAW / WAR / WAW for races. ``site`` is the
    instruction the finding is located at (the later one of a race), ``other`` the earlier one.
    ``fix`` says what to insert, where."""

    kind: str
    message: str
    site: Site | None
    other: Site | None = None
    hazard: str | None = None
    space: str | None = None
    lo: int | None = None
    hi: int | None = None
    fix: str | None = None
    extra: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)

    @property
    def loc(self) -> Any:
        return self.site.loc if self.site is not None else None

    def render(self) -> str:
        head = f"{where(self.loc)}: error: {self.message}"
        if self.fix:
            head += f"\n{where(self.loc)}: note: fix: {self.fix}"
        return head

    def __str__(self) -> str:
        return self.render()


@dataclass
class Unchecked:
    """An op a run passed that the sanitizer does not model (it computes nothing in ptoisa:
    ``interp.compiler.NO_EFFECT``): how often, where first, and what it does on the NPU."""

    op: str
    loc: Any
    why: str
    count: int = 1

    def render(self) -> str:
        n = f" ({self.count} times)" if self.count > 1 else ""
        return f"{where(self.loc)}: note: not checked: {self.op}{n}: {self.why}"


@dataclass
class Report:
    """What a sanitized run found. Truthy when anything was found; ``str()`` is the diagnostics,
    one per finding (each found once: deduplicated across loop iterations and blocks), then what
    the run did that was not checked.

    ``executed`` counts the instructions the sanitizer saw; ``unchecked`` the ops it passed
    without modelling them; ``notes`` how it checked (the sync mode it chose, say). A run is
    :attr:`clean` only when it found nothing, executed something and left nothing unchecked."""

    findings: list[Finding] = field(default_factory=list)
    executed: int = 0
    unchecked: dict[str, Unchecked] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.findings)

    def __len__(self) -> int:
        return len(self.findings)

    def __iter__(self) -> Iterator[Finding]:
        return iter(self.findings)

    @property
    def clean(self) -> bool:
        """No findings, something executed, and every op the run passed was checked."""
        return not self.findings and self.executed > 0 and not self.unchecked

    def of(self, kind: str) -> list[Finding]:
        return [f for f in self.findings if f.kind == kind]

    def not_checked(self, op: str, loc: Any, why: str) -> None:
        u = self.unchecked.get(op)
        if u is None:
            self.unchecked[op] = Unchecked(op, loc, why)
        else:
            u.count += 1

    def absorb(self, other: Report) -> None:
        """Take another report's coverage (a rank's, into the launch's): what it executed and
        left unchecked; its findings are added one by one by the caller."""
        self.executed += other.executed
        for u in other.unchecked.values():
            mine = self.unchecked.get(u.op)
            if mine is None:
                self.unchecked[u.op] = Unchecked(u.op, u.loc, u.why, u.count)
            else:
                mine.count += u.count
        self.notes += [n for n in other.notes if n not in self.notes]

    def render(self) -> str:
        return "\n".join(f.render() for f in self.findings)

    def __str__(self) -> str:
        lines = [f.render() for f in self.findings]
        lines += [f"sanitizer: note: {n}" for n in self.notes]
        lines += [u.render() for u in self.unchecked.values()]
        n = len(self.findings)
        if n:
            tail = f"sanitizer: {n} finding{'s' if n != 1 else ''}"
        elif self.executed == 0:
            tail = "sanitizer: nothing was executed, so nothing was checked"
        else:
            tail = "sanitizer: no findings"
        if self.unchecked:
            ops = ", ".join(self.unchecked)
            tail += f" (not checked: {ops})"
        return "\n".join([*lines, tail])


class SanitizerError(PtoError):
    """Raised by a sanitized run that found something (``report`` holds the findings); with
    ``fail_fast`` raised at the first finding, located at its instruction."""

    def __init__(self, report: Report) -> None:
        self.report = report
        super().__init__(str(report))

    def render(self) -> str:
        return str(self.report)

    def with_loc(self, loc: SourceLoc) -> PtoError:
        return self  # already located: each finding carries its own location

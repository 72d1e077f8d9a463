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
class Report:
    """What a sanitized run found. Truthy when anything was found; ``str()`` is the diagnostics,
    one per finding (each found once: deduplicated across loop iterations and blocks)."""

    findings: list[Finding] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.findings)

    def __len__(self) -> int:
        return len(self.findings)

    def __iter__(self) -> Iterator[Finding]:
        return iter(self.findings)

    def of(self, kind: str) -> list[Finding]:
        return [f for f in self.findings if f.kind == kind]

    def render(self) -> str:
        return "\n".join(f.render() for f in self.findings)

    def __str__(self) -> str:
        if not self.findings:
            return "sanitizer: no findings"
        n = len(self.findings)
        return self.render() + f"\nsanitizer: {n} finding{'s' if n != 1 else ''}"


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

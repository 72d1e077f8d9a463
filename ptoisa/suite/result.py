"""Verdicts of ``ptoisa suite``: one per file, from the verdicts of its modules and runs."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

#: what went right, weakest first: PTOAS rejects it and so do we; it checks; a run completed;
#: the run matched upstream's golden
GOOD = ("rejected-as-ptoas", "accepted", "ran", "matched")
#: what went wrong, worst first (``traceback``: any exception that is not a PtoError, a bug)
FAILED = ("traceback", "wrongly-accepted", "wrongly-rejected", "mismatch", "run-failed",
          "timeout")
#: an op ptoisa refuses by name (not a failure: counted apart, with the op's name)
UNSUPPORTED = "unsupported"
#: no module to check (a RUN line of another tool only, a layout the suite cannot follow)
NOT_CHECKED = "not-checked"
VERDICTS = (*GOOD, UNSUPPORTED, *FAILED, NOT_CHECKED)


@dataclass
class Outcome:
    """The verdict of one module (a file, a ``// -----`` chunk, a ``//--- NAME`` part) or of
    one run, with the first reason."""

    verdict: str
    reason: str = ""
    where: str = ""
    op: str | None = None  # the op refused by name (verdict unsupported)
    text_matched: bool | None = None  # a rejection: does our message carry PTOAS's text?
    detail: str = ""  # a traceback's text


@dataclass
class FileResult:
    path: str  # relative to the suite's root
    kind: str  # lit, sample, tilelang, vpto
    target: str = ""
    outcomes: list[Outcome] = field(default_factory=list)
    #: checks and runs not made, each with why ("not run: needs en-dtypes")
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def verdict(self) -> Outcome:
        """The file's one verdict: its first failure (worst kind first), else the first op
        refused by name, else (all its modules rejected as PTOAS rejects them)
        rejected-as-ptoas, else the weakest of what its accepted modules reached."""
        if not self.outcomes:
            return Outcome(NOT_CHECKED, self.notes[0] if self.notes else "nothing to check")
        for v in (*FAILED, UNSUPPORTED):
            for o in self.outcomes:
                if o.verdict == v:
                    return o
        rest = [o for o in self.outcomes if o.verdict != "rejected-as-ptoas"]
        if not rest:
            return self.outcomes[0]
        return min(rest, key=lambda o: GOOD.index(o.verdict))

    def to_json(self) -> dict[str, Any]:
        v = self.verdict()
        return {"path": self.path, "kind": self.kind, "target": self.target,
                "verdict": v.verdict, "reason": v.reason, "where": v.where, "op": v.op,
                "text_matched": v.text_matched, "notes": self.notes,
                "seconds": round(self.seconds, 3),
                "outcomes": [{k: x for k, x in o.__dict__.items() if x not in ("", None)}
                             for o in self.outcomes]}

"""The PTOAS corpus as verifier cases: per file, the targets of its ``// RUN:`` lines, whether
PTOAS rejects it and the diagnostics its ``CHECK`` lines expect.

PTOAS rejects a program for a RUN line when the line says ``not ptoas`` or when the line's
FileCheck prefix checks an ``error:`` (some files pipe the failing compiler into FileCheck
without ``not``: ``tquant_verify_invalid.pto`` states four errors, one per function).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from ptoisa.suite.lit import _checked_errors, _prefixes  # (upstream's RUN / CHECK conventions)

SHARED = Path(
    os.environ.get("PTOISA_SHARED", Path(__file__).resolve().parents[2].parent / "shared")
)
CORPUS = SHARED / "corpus" / "ptoas"
FILES = sorted(CORPUS.rglob("*.pto")) if CORPUS.is_dir() else []
SKIP_REASON = f"PTOAS corpus not found at {CORPUS} (set PTOISA_SHARED to the shared dir)"
ARCH = {"a3": "a2a3", "a5": "a5"}


@dataclass(frozen=True)
class Case:
    path: Path
    target: str
    expect_fail: bool
    diagnostics: tuple[str, ...]  # the expected error texts (after ``error:``), in file order
    level: str | None = None  # ``--pto-level=levelN`` of the RUN line

    @property
    def diagnostic(self) -> str | None:
        return self.diagnostics[0] if self.diagnostics else None

    @property
    def id(self) -> str:
        return f"{self.path.relative_to(CORPUS)}[{self.target}]"


def cases(path: Path) -> list[Case]:
    lines = path.read_text().splitlines()
    runs = [line for line in lines if "RUN:" in line]
    out: dict[str, Case] = {}
    for r in runs or ["ptoas"]:
        m = re.search(r"--pto-arch[= ](\w+)", r)
        tgt = ARCH.get(m.group(1), "a2a3") if m else "a2a3"
        diags = _checked_errors(lines, _prefixes(r))
        fail = "not ptoas" in r or bool(diags)
        if fail and not diags:
            checks = [m.group(1).strip() for line in lines
                      if (m := re.search(r"//\s*CHECK[\w-]*:\s*(.*)$", line))]
            diags = checks[:1]
        lv = re.search(r"--pto-level[= ](\w+)", r)
        out.setdefault(tgt, Case(path, tgt, fail, tuple(diags), lv.group(1) if lv else None))
    return list(out.values())


CASES = [c for f in FILES for c in cases(f)]

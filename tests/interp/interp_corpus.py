"""The PTOAS corpus as verifier cases: per file, the targets of its ``// RUN:`` lines, whether
PTOAS rejects it (``not ptoas``) and the diagnostic its ``CHECK`` lines expect."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

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
    diagnostic: str | None  # the expected error text (after ``error:``), if the file states one

    @property
    def id(self) -> str:
        return f"{self.path.relative_to(CORPUS)}[{self.target}]"


def cases(path: Path) -> list[Case]:
    text = path.read_text()
    runs = [line for line in text.splitlines() if "RUN:" in line]
    diag = None
    for line in text.splitlines():
        m = re.search(r"//\s*[\w-]*:.*?error:\s*(.*)$", line)
        if m:
            diag = m.group(1).strip()
            break
        m = re.search(r"//\s*CHECK[\w-]*:\s*(.*)$", line)
        if m and diag is None and any("not ptoas" in r for r in runs):
            diag = m.group(1).strip()
    out: dict[str, Case] = {}
    for r in runs or ["ptoas"]:
        m = re.search(r"--pto-arch[= ](\w+)", r)
        tgt = ARCH.get(m.group(1), "a2a3") if m else "a2a3"
        out.setdefault(tgt, Case(path, tgt, "not ptoas" in r, diag))
    return list(out.values())


CASES = [c for f in FILES for c in cases(f)]

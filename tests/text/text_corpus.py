"""Location of the shared PTOAS corpus (env PTOISA_SHARED overrides the shared dir)."""

from __future__ import annotations

import os
import re
from collections import Counter
from pathlib import Path

SHARED = Path(
    os.environ.get("PTOISA_SHARED", Path(__file__).resolve().parents[2].parent / "shared")
)
CORPUS = SHARED / "corpus" / "ptoas"
FILES = sorted(CORPUS.rglob("*.pto")) if CORPUS.is_dir() else []
SKIP_REASON = f"PTOAS corpus not found at {CORPUS} (set PTOISA_SHARED to the shared dir)"


def ids(files: list[Path]) -> list[str]:
    return [str(f.relative_to(CORPUS)) for f in files]


def comment_lines(text: str) -> Counter[str]:
    """The ``//`` comments of a text (what ``fmt`` must keep, in any form)."""
    return Counter(m.group().rstrip() for m in re.finditer(r"//[^\n]*", text))

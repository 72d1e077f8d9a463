"""Registry rules marked as PTOAS's own (``Sig.fail(..., ptoas=True)``): the suite takes a
file they refuse, that no RUN line speaks for (a frontend's, a sample), as one today's PTOAS
refuses too. The mark must be earned: each marked message is found in PTOAS's lit tests."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

import ptoisa

ROOT = Path(ptoisa.__file__).parent


def marked_messages() -> list[tuple[str, str]]:
    """(file:line, the message's literal text up to its first placeholder) of every
    ``fail(<text>, ptoas=True)`` in ptoisa/."""
    out = []
    for p in sorted(ROOT.rglob("*.py")):
        for node in ast.walk(ast.parse(p.read_text())):
            if not (isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "fail"):
                continue
            if not any(k.arg == "ptoas" and isinstance(k.value, ast.Constant) and k.value.value
                       for k in node.keywords):
                continue
            msg = node.args[0]
            if isinstance(msg, ast.JoinedStr):  # an f-string: its literal head
                head = msg.values[0]
                text = head.value if isinstance(head, ast.Constant) else ""
            else:
                text = msg.value if isinstance(msg, ast.Constant) else ""
            out.append((f"{p.relative_to(ROOT)}:{node.lineno}", str(text)))
    return out


def test_there_are_marked_rules():
    assert marked_messages()


def test_each_marked_message_is_ptoas_text(shared_dir):
    lit = shared_dir / "corpus" / "ptoas-main" / "test" / "lit"
    if not lit.is_dir():
        pytest.skip("the PTOAS corpus is not there")
    said = "\n".join(p.read_text(errors="replace") for p in lit.rglob("*.pto")
                     if "error" in p.read_text(errors="replace"))
    for where, text in marked_messages():
        # PTOAS's words without what we add after them (" on a2a3", a detail in brackets)
        words = re.sub(r"\s+on \S+$", "", text.split(" (")[0]).strip()
        assert len(words) >= 20 and words in said, (where, words)

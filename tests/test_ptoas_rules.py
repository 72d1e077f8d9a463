"""Registry rules marked as PTOAS's own: the suite takes a file they refuse, that no RUN line
speaks for (a frontend's, a sample, a tilelang_st kernel), as one today's PTOAS refuses too.
The mark must be earned: a message marked ``Sig.fail(..., ptoas=True)`` is found in PTOAS's
lit tests; a ``Sig.fail(..., ptoas=SourceRule(...))`` cites PTOAS's source, whose words are
found in the cited function at the corpus's commit when a copy of PTOAS is at hand."""

from __future__ import annotations

import ast
import os
import re
import subprocess
from pathlib import Path

import pytest

import ptoisa
from ptoisa.ptoas_source import (
    DEFAULT_MIRROR,
    MIRROR_ENV,
    PTOAS_COMMIT,
    SOURCE_RULES,
    function_body,
    mirror,
)

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


# ---- rules cited from PTOAS's source (ptoisa/isa/ptoas_source.py) --------------------------

def test_each_source_rule_is_a_well_formed_citation():
    """Always (no copy of PTOAS needed): path:function, PTOAS's words long enough to prove
    something, PTOAS's targets; and every ``ptoas=`` mark in ptoisa/ is True (checked against
    the lit tests above) or a SourceRule (checked here)."""
    assert SOURCE_RULES
    for r in SOURCE_RULES:
        assert re.fullmatch(r"[\w./-]+\.(cpp|h|td):[A-Za-z_]\w*(::[A-Za-z_]\w*)*", r.cite), r
        assert len("".join(r.pieces())) >= 20, r
        assert r.targets and r.targets <= {"a2a3", "a5"}, r
    for p in sorted(ROOT.rglob("*.py")):
        for node in ast.walk(ast.parse(p.read_text())):
            if isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "fail":
                for k in node.keywords:
                    if k.arg == "ptoas" and not isinstance(k.value, ast.Constant):
                        assert isinstance(k.value, ast.Name), (p, node.lineno)


def _ptoas_file(path: str) -> str:
    repo = mirror()
    if repo is None:
        where = os.environ.get(MIRROR_ENV) or DEFAULT_MIRROR
        pytest.skip(f"no copy of PTOAS's repository at {where} (set ${MIRROR_ENV} to one): "
                    "the citations' words are not checked against PTOAS's source")
    try:
        return subprocess.run(["git", "-C", str(repo), "show", f"{PTOAS_COMMIT}:{path}"],
                              capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError) as e:
        pytest.skip(f"{repo} has no {path} at PTOAS commit {PTOAS_COMMIT}: {e}")


def test_each_source_rule_is_in_ptoas_source_at_the_corpus_commit():
    """With PTOAS's repository at hand: the cited function is defined in the cited file at the
    corpus's commit and its body spells PTOAS's words."""
    for r in SOURCE_RULES:
        body = function_body(_ptoas_file(r.path), r.function)
        assert body is not None, f"{r.cite}: no such function at {PTOAS_COMMIT}"
        for words in r.pieces():
            assert f'"{words}' in body or f'{words}"' in body, (r.cite, words)


def test_function_body_finds_a_definition_not_a_declaration():
    src = ("static int f(int a);\nstatic int g() {\n  return 1;\n}\n"
           "static int f(int a) {\n  emit(\"f says\");\n}\n")
    assert function_body(src, "f") == 'static int f(int a) {\n  emit("f says");'
    assert function_body(src, "h") is None


def test_a_source_rule_marks_and_quotes_only_on_its_targets():
    from ptoisa.errors import VerifyError
    from ptoisa.interp.verify import diagnose
    from ptoisa.text import parse

    text = """module {
  func.func @mm() {
    %a = pto.alloc_tile : !pto.tile_buf<vec, 16x16xf16>
    %b = pto.alloc_tile : !pto.tile_buf<right, 16x16xf16, blayout=row_major, slayout=col_major>
    %c = pto.alloc_tile : !pto.tile_buf<acc, 16x16xf32, blayout=col_major, slayout=row_major>
    pto.tmatmul ins(%a, %b : !pto.tile_buf<vec, 16x16xf16>,
                    !pto.tile_buf<right, 16x16xf16, blayout=row_major, slayout=col_major>)
                outs(%c : !pto.tile_buf<acc, 16x16xf32, blayout=col_major, slayout=row_major>)
    return
  }
}
"""
    for target, marked in (("a2a3", True), ("a5", True), ("cpu", False)):
        [e] = diagnose(parse(text), target)
        assert isinstance(e, VerifyError) and e.ptoas_rule is marked, (target, e)
        said = "(PTOAS: expects lhs, rhs, and dst to use the left, right, and acc address spaces)"
        assert e.message.startswith("aMatrix must be a Left tile, got Vec"), e.message
        assert (said in e.message) is marked, (target, e.message)
        assert e.ptoas_source == ("lib/PTO/IR/PTO.cpp:verifyMatTileOperandsA2A3"
                                  if marked else "")

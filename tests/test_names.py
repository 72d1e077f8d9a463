"""One word for an instruction entry and one for a target, everywhere in ptoisa/
(docs/developing.md, "Names").

* An :class:`~ptoisa.isa.registry.Instr` entry held in a variable, parameter or attribute is
  ``ins``; ``instr`` names only the decorator that declares one (``@instr(...)``). ``ins`` is
  never a list of input values (those are ``inputs``).
* A target inside ptoisa is a :class:`~ptoisa.targets.Target` object named ``target``; a
  parameter typed to take a target takes a ``Target`` or a ``TargetLike`` (a Target or its
  name, resolved once by ``get_target``), never a bare ``str``. ``tgt`` and ``target_name``
  are gone.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1] / "ptoisa"
FILES = sorted(ROOT.rglob("*.py"))
#: records whose ``target`` is a name as data (a report's or a RUN line's), not a parameter
NAME_FIELDS = {"suite/result.py", "suite/lit.py", "cycles/report.py"}


def _names(tree: ast.AST) -> Iterator[tuple[int, str, str]]:
    """(line, kind, identifier) of every name a program binds or reads, except the callee of
    a call (so ``instr(...)``, the decorator, is not one)."""
    callees = {id(n.func) for n in ast.walk(tree) if isinstance(n, ast.Call)}
    for n in ast.walk(tree):
        if isinstance(n, ast.Name) and id(n) not in callees:
            yield n.lineno, "name", n.id
        elif isinstance(n, ast.arg):
            yield n.lineno, "parameter", n.arg
        elif isinstance(n, ast.Attribute):
            yield n.lineno, "attribute", n.attr
        elif isinstance(n, ast.keyword) and n.arg is not None:
            yield n.lineno, "keyword", n.arg


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_one_word_for_an_entry_and_a_target(path: Path) -> None:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    bad = [f"{path.name}:{line}: {kind} {word!r}" for line, kind, word in _names(tree)
           if word in ("instr", "tgt", "target_name")]
    assert not bad, "use `ins` for an Instr entry and `target` for a Target:\n" + "\n".join(bad)


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_ins_is_an_entry_and_targets_are_not_strings(path: Path) -> None:
    src = path.read_text(encoding="utf-8")
    rel = str(path.relative_to(ROOT))
    bad = []
    for n in ast.walk(ast.parse(src)):
        if isinstance(n, ast.arg | ast.AnnAssign) and n.annotation is not None:
            word = n.arg if isinstance(n, ast.arg) else getattr(n.target, "id", None)
            ann = ast.get_source_segment(src, n.annotation) or ""
            if word == "ins" and ann not in ("Instr", "Any", '"Instr"'):
                bad.append(f"{rel}:{n.lineno}: ins: {ann} (an Instr entry is `ins`; inputs "
                           "are `inputs`)")
            if word == "target" and "str" in ann.split(" | ") and rel not in NAME_FIELDS:
                bad.append(f"{rel}:{n.lineno}: target: {ann} (take a Target or a TargetLike)")
    assert not bad, "\n".join(bad)


def test_get_target_takes_a_target_or_its_name() -> None:
    from ptoisa.targets import get_target

    a5 = get_target("a5")
    assert get_target(a5) is a5 and get_target("A5") is a5

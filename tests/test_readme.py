"""The README's Python snippets run as written: each ```python block is executed on its own
(its own namespace, from the checkout's root), except a block right after a
``<!-- not runnable: REASON -->`` comment, which is reported as skipped with that reason."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"

_BLOCK = re.compile(r"(?:<!--\s*not runnable:\s*(?P<why>.*?)-->\s*\n)?```python\n(?P<code>.*?)```",
                    re.S)


def _blocks() -> list[tuple[int, str, str | None]]:
    """(first line of the code, code, why it is not runnable or None) of each block."""
    text = README.read_text()
    out = []
    for m in _BLOCK.finditer(text):
        line = text.count("\n", 0, m.start("code")) + 1
        why = " ".join(m.group("why").split()) if m.group("why") else None
        out.append((line, m.group("code"), why))
    return out


BLOCKS = _blocks()


def test_the_readme_has_python_blocks():
    assert len(BLOCKS) >= 6
    assert sum(why is None for _, _, why in BLOCKS) >= 5  # most of them run


@pytest.mark.parametrize("line, code, why", BLOCKS, ids=[f"README.md:{b[0]}" for b in BLOCKS])
def test_readme_block_runs(line, code, why, monkeypatch, capsys):
    if why is not None:
        pytest.skip(f"README.md:{line}: not runnable: {why}")
    elided = [ln for ln in code.splitlines() if "..." in ln.split("#")[0]]
    assert not elided, f"code elided with ... does not run as written: {elided}"
    monkeypatch.chdir(ROOT)  # (paths such as examples/vec_add.pto are the checkout's)
    # line numbers in tracebacks and diagnostics are the README's
    exec(compile("\n" * (line - 1) + code, str(README), "exec"), {"__name__": "__main__"})

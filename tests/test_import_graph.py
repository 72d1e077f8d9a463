"""The package's module-level imports form no cycle (each layer imports only the ones below
it); the few imports made inside functions are listed in docs/architecture.md with the
reason."""

from __future__ import annotations

import ast
from pathlib import Path

import ptoisa

ROOT = Path(ptoisa.__file__).parent


def _modules() -> dict[str, Path]:
    mods = {}
    for f in ROOT.rglob("*.py"):
        parts = f.relative_to(ROOT.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        mods[name] = f
    return mods


def _graph() -> dict[str, set[str]]:
    mods = _modules()
    graph: dict[str, set[str]] = {}
    for name, f in mods.items():
        pkg = name.split(".") if f.name == "__init__.py" else name.split(".")[:-1]
        deps: set[str] = set()
        for node in ast.parse(f.read_text()).body:  # module level: what import runs
            if not isinstance(node, ast.ImportFrom) or not node.level:
                continue
            base = pkg[:len(pkg) - (node.level - 1)]
            mod = ".".join(base + ([node.module] if node.module else []))
            subs = {f"{mod}.{a.name}" for a in node.names if f"{mod}.{a.name}" in mods}
            deps |= subs
            if mod in mods and len(subs) < len(node.names):
                deps.add(mod)
        graph[name] = deps
    return graph


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    path: list[str] = []

    def visit(v: str) -> list[str] | None:
        state[v] = 1
        path.append(v)
        for w in sorted(graph.get(v, ())):
            if state.get(w) == 1:
                return path[path.index(w):] + [w]
            if w not in state:
                found = visit(w)
                if found:
                    return found
        state[v] = 2
        path.pop()
        return None

    for v in sorted(graph):
        if v not in state:
            found = visit(v)
            if found:
                return found
    return None


def test_module_level_imports_have_no_cycle() -> None:
    assert _cycle(_graph()) is None


def test_the_layers_named_by_the_architecture_issue() -> None:
    g = _graph()
    assert "ptoisa.grid" not in g["ptoisa.isa.registry"]
    assert "ptoisa.isa.registry" not in g["ptoisa.grid"]
    assert "ptoisa.tile" not in g["ptoisa.memory"]  # tile imports memory, not the reverse


def test_the_checker_sees_a_cycle() -> None:
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]

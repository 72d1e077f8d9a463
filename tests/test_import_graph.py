"""The package's imports form no cycle: every import statement of every module counts, at
module level, inside a function (run later, but still a dependency), relative or absolute,
``from . import x`` included, and ``importlib.import_module`` of the package's own modules;
each layer imports only the ones below it.

The one exception is an import under ``if TYPE_CHECKING:`` that names a class for the type
checker only (it never runs): such an import may close a cycle only when it is listed in
``TYPE_CHECKING_ONLY`` with its reason. docs/architecture.md ("Imports made inside
functions") says which imports run inside functions and why.
"""

from __future__ import annotations

import ast
from pathlib import Path

import ptoisa

ROOT = Path(ptoisa.__file__).parent

#: (importer, imported): the only imports that may close a cycle, each under TYPE_CHECKING
TYPE_CHECKING_ONLY = {
    ("ptoisa.memory", "ptoisa.tile"):
        "the machine's annotations name Tile; tiles import the machine, not the reverse",
    ("ptoisa.isa.registry", "ptoisa.isa.valid_region"):
        "Instr.same_valid is annotated with SameValid, a rule declared over registry entries",
    ("ptoisa.sanitizer.clocks", "ptoisa.sanitizer"):
        "the clocks' annotations name the Sanitizer that owns them",
    ("ptoisa.tables", "ptoisa.tile"):
        "the HTML tables read the tile they are given; Tile._repr_html_ imports them",
    ("ptoisa.tables", "ptoisa.tensor"):
        "the HTML tables read the view they are given; GlobalTensor imports them",
}


def _modules() -> dict[str, Path]:
    mods = {}
    for f in ROOT.rglob("*.py"):
        parts = f.relative_to(ROOT.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        mods[name] = f
    return mods


def _type_checking_only(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> bool:
    p = parents.get(node)
    while p is not None:
        if isinstance(p, ast.If) and ast.unparse(p.test) in ("TYPE_CHECKING",
                                                            "typing.TYPE_CHECKING"):
            return True
        p = parents.get(p)
    return False


def _targets(node: ast.Import | ast.ImportFrom, pkg: list[str], mods: dict[str, Path]
             ) -> set[str]:
    """The package's modules one import statement imports (submodules named by
    ``from M import x`` count as ``M.x``; a package's implicit import of its parents does not,
    as for every import)."""
    out: set[str] = set()
    if isinstance(node, ast.Import):
        for a in node.names:
            m = a.name
            while m and m not in mods:
                m = m.rpartition(".")[0]
            if m:
                out.add(m)
        return out
    if node.level:
        base = pkg[:len(pkg) - (node.level - 1)]
        mod = ".".join(base + ([node.module] if node.module else []))
    else:
        mod = node.module or ""
    subs = {f"{mod}.{a.name}" for a in node.names if f"{mod}.{a.name}" in mods}
    out |= subs
    if mod in mods and len(subs) < len(node.names):
        out.add(mod)
    return out


def _dynamic(node: ast.Call, name: str, mods: dict[str, Path]) -> set[str]:
    """``importlib.import_module("ptoisa.x")``: that module; ``import_module(f"{__name__}.{m}")``
    (a package importing its own modules by walking them: ``isa/__init__.py`` declares every
    instruction family so): every direct submodule of the package."""
    f = node.func
    if not (isinstance(f, ast.Attribute) and f.attr == "import_module" and node.args):
        return set()
    arg = node.args[0]
    if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
        return {arg.value} & set(mods)
    if isinstance(arg, ast.JoinedStr) and arg.values and ast.unparse(arg.values[0]) in (
            "{__name__}", "{__package__}"):
        return {m for m in mods if m.rpartition(".")[0] == name}
    return set()


def _imports() -> dict[tuple[str, str], list[tuple[int, bool]]]:
    """(importer, imported) -> [(line, under TYPE_CHECKING)] for every import statement (and
    every ``importlib.import_module`` of the package's own modules)."""
    mods = _modules()
    found: dict[tuple[str, str], list[tuple[int, bool]]] = {}
    for name, f in mods.items():
        pkg = name.split(".") if f.name == "__init__.py" else name.split(".")[:-1]
        tree = ast.parse(f.read_text())
        parents = {c: n for n in ast.walk(tree) for c in ast.iter_child_nodes(n)}
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                targets = _dynamic(node, name, mods)
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                targets = _targets(node, pkg, mods)
            else:
                continue
            for t in targets - {name}:
                found.setdefault((name, t), []).append(
                    (node.lineno, _type_checking_only(node, parents)))
    return found


def _graph(allowed: set[tuple[str, str]] | None = None) -> dict[str, set[str]]:
    """Importer -> imported modules; an import listed in ``allowed`` (by default
    ``TYPE_CHECKING_ONLY``) is left out when all its statements are under TYPE_CHECKING."""
    allowed = set(TYPE_CHECKING_ONLY) if allowed is None else allowed
    graph: dict[str, set[str]] = {m: set() for m in _modules()}
    for (a, b), where in _imports().items():
        if (a, b) in allowed and all(tc for _, tc in where):
            continue
        graph[a].add(b)
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (each one holds a cycle),
    sorted; Tarjan's algorithm, iterative."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.get(root, ()))))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(graph.get(w, ())))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    x = stack.pop()
                    on.discard(x)
                    comp.append(x)
                    if x == v:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return sorted(out)


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle, as a path that returns to its start (None: there is none)."""
    comps = _cycles(graph)
    if not comps:
        return None
    comp = set(comps[0])
    path = [comps[0][0]]
    while True:
        nxt = min(w for w in graph[path[-1]] if w in comp)
        if nxt in path:
            return path[path.index(nxt):] + [nxt]
        path.append(nxt)


def _describe(graph: dict[str, set[str]], comps: list[list[str]]) -> str:
    imports = _imports()
    lines = []
    for comp in comps:
        lines.append("cycle among " + ", ".join(comp) + ":")
        for a in comp:
            for b in sorted(graph[a] & set(comp)):
                where = ", ".join(f"line {n}{' (TYPE_CHECKING)' if tc else ''}"
                                  for n, tc in imports[(a, b)])
                lines.append(f"  {a} -> {b}  ({where})")
    return "\n".join(lines)


def test_the_imports_have_no_cycle() -> None:
    g = _graph()
    comps = _cycles(g)
    assert not comps, "import cycles:\n" + _describe(g, comps)


def test_the_type_checking_exceptions_are_type_checking_imports() -> None:
    imports = _imports()
    for (a, b), reason in TYPE_CHECKING_ONLY.items():
        assert reason
        assert (a, b) in imports, f"{a} no longer imports {b}: drop the exception"
        assert all(tc for _, tc in imports[(a, b)]), \
            f"{a} imports {b} outside TYPE_CHECKING: that import runs"


def test_the_checker_sees_every_kind_of_import() -> None:
    imports = _imports()
    assert ("ptoisa.cli", "ptoisa.display") in imports  # `from .display import ...` in a def
    assert ("ptoisa.stubgen", "ptoisa") in imports  # `import ptoisa` inside a function
    assert ("ptoisa.sanitizer.ranks", "ptoisa.sanitizer") in imports  # `from . import X` in a def
    assert ("ptoisa.ir.core", "ptoisa.ir.attrs") in imports  # absolute `from ptoisa.ir.attrs`
    assert ("ptoisa.isa.registry", "ptoisa.isa.signature") in imports  # relative, module level
    assert ("ptoisa.isa", "ptoisa.isa.sync") in imports  # isa/__init__ walks its families
    assert [tc for _, tc in imports[("ptoisa.memory", "ptoisa.tile")]] == [True]


def test_the_layers_named_by_the_architecture_issue() -> None:
    g = _graph(allowed=set())
    assert "ptoisa.grid" not in g["ptoisa.isa.registry"]
    assert "ptoisa.isa.registry" not in g["ptoisa.grid"]
    # tile imports memory, not the reverse (memory names Tile for the type checker only)
    assert all(tc for _, tc in _imports()[("ptoisa.memory", "ptoisa.tile")])
    assert "ptoisa.display" not in g["ptoisa.tile"]  # tile's HTML comes from below it
    assert "ptoisa.ranks_mpi" not in g["ptoisa.ranks"]  # the MPI backend registers itself


def test_the_checker_sees_a_cycle() -> None:
    g = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _cycles(g) == [["a", "b", "c"]]
    assert _cycle(g) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None

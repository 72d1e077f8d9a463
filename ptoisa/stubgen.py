"""Typed signatures of the intrinsics, generated from the registry.

The intrinsics are :class:`~ptoisa.isa.registry.Instr` objects, so an IDE or a type checker
sees nothing of their operands. This module turns each registry entry into a Python signature
(operands positional in C++ order, optional ones defaulting to ``None``, then ``*events``,
then the template parameters as keywords) and writes ``ptoisa/__init__.pyi``: the package's
re-exports, plus one ``def`` per instruction with its docstring.

``python -m ptoisa.stubgen`` rewrites the stub; ``--check`` exits 1 when the checked-in stub
differs from what the registry gives (the test suite runs that check).
"""

from __future__ import annotations

import argparse
import ast
import enum
import inspect
import sys
from pathlib import Path
from typing import Any

STUB = Path(__file__).with_name("__init__.pyi")

#: operand kind -> annotation (names resolvable in the stub's namespace)
_KIND = {
    "tile": "Tile",
    "gm": "GlobalTensor",
    "tile|gm": "Tile | GlobalTensor",
    "scalar": "int | float | np.generic",
    "any": "Any",
}


def _operand_annotation(o: Any) -> str:
    if o.kind == "enum" and o.enum is not None:
        return o.enum.__name__
    return _KIND.get(o.kind, "Any")


def _param_annotation(p: Any) -> str:
    t = p.type
    if t is None and isinstance(p.default, enum.Enum):
        t = type(p.default)
    if t is not None and isinstance(t, type):
        return t.__name__
    d = p.default
    if isinstance(d, bool):
        return "bool"
    if isinstance(d, int):
        return "int"
    if isinstance(d, str):
        return "str"
    return "Any"


def _default_text(v: Any) -> str:
    if isinstance(v, enum.Enum):
        return f"{type(v).__name__}.{v.name}"
    if v is None or isinstance(v, (bool, int, float, str)):
        return repr(v)
    return "..."


def _enum_types() -> dict[str, str]:
    """Enum classes used by operands/params that live outside the public API:
    name -> defining module (relative to the package)."""
    from .isa.registry import REGISTRY

    found: dict[str, str] = {}
    for ins in REGISTRY.values():
        classes = [o.enum for o in ins.operands if o.kind == "enum" and o.enum is not None]
        for p in ins.params:
            t = p.type if p.type is not None else (
                type(p.default) if isinstance(p.default, enum.Enum) else None)
            if isinstance(t, type) and issubclass(t, enum.Enum):
                classes.append(t)
        for c in classes:
            found[c.__name__] = c.__module__
    return found


def _varargs(ins: Any) -> str:
    """Trailing Event arguments are ``*events`` (``*waits`` where an operand has that name)."""
    return "waits" if any(o.name == "events" for o in ins.operands) else "events"


def signature(ins: Any) -> inspect.Signature:
    """The Python signature of one intrinsic (also attached to the Instr at run time)."""
    P = inspect.Parameter
    params = []
    for o in ins.operands:
        params.append(P(o.name, P.POSITIONAL_OR_KEYWORD,
                        default=None if o.optional else P.empty,
                        annotation=_operand_annotation(o) + (" | None" if o.optional else "")))
    params.append(P(_varargs(ins), P.VAR_POSITIONAL, annotation="Event"))
    for p in ins.params:
        params.append(P(p.name, P.KEYWORD_ONLY, default=p.default,
                        annotation=_param_annotation(p)))
    ret = "Event" if ins.returns_event else "Any"
    return inspect.Signature(params, return_annotation=ret)


def _def(name: str, ins: Any) -> str:
    parts = []
    for o in ins.operands:
        ann = _operand_annotation(o)
        parts.append(f"{o.name}: {ann} | None = None" if o.optional else f"{o.name}: {ann}")
    parts.append(f"*{_varargs(ins)}: Event")
    for p in ins.params:
        parts.append(f"{p.name}: {_param_annotation(p)} = {_default_text(p.default)}")
    ret = "Event" if ins.returns_event else "Any"
    head = f"def {name}({', '.join(parts)}) -> {ret}:"
    if len(head) > 100:
        inner = ",\n    ".join(parts)
        head = f"def {name}(\n    {inner},\n) -> {ret}:"
    doc = inspect.cleandoc(ins.doc or f"The {name} instruction.")
    doc = doc.replace("\\", "\\\\").replace('"""', "'''")
    body = "\n".join(("    " + line).rstrip() for line in doc.splitlines())
    quote = '"""'
    return f"{head}\n    {quote}\n{body}\n    {quote}\n    ...\n"


def _reexports() -> list[str]:
    """The package's own imports (from ``__init__.py``), spelled as explicit re-exports."""
    tree = ast.parse(Path(__file__).with_name("__init__.py").read_text())
    out = []
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.level > 0:
            src = "." * node.level + (node.module or "")
            names = [f"{a.name} as {a.asname or a.name}" for a in node.names]
            line = f"from {src} import {', '.join(names)}"
            if len(line) > 100:
                line = f"from {src} import (\n" + "".join(f"    {n},\n" for n in names) + ")"
            out.append(line)
    return out


def render() -> str:
    from .isa.registry import REGISTRY

    public = set(_public_names())
    lines = [
        '"""Generated by ``python -m ptoisa.stubgen`` from the instruction registry: do not '
        'edit."""',
        "",
        "from typing import Any",
        "",
        "import numpy as np",
        "",
    ]
    for imp in _reexports():
        lines.append(imp)
    extra = {n: m for n, m in _enum_types().items() if n not in public}
    for n in sorted(extra):
        rel = "." + extra[n].split(".", 1)[1] if "." in extra[n] else "."
        lines.append(f"from {rel} import {n}")
    lines += ["", "__version__: str", ""]
    for name in sorted(REGISTRY):
        lines.append("")
        lines.append(_def(name, REGISTRY[name]))
    text = "\n".join(lines)
    return "\n".join(line.rstrip() for line in text.splitlines()) + "\n"


def _public_names() -> list[str]:
    import ptoisa

    return [n for n in ptoisa.__all__ if n not in ptoisa.REGISTRY]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m ptoisa.stubgen", description=__doc__)
    ap.add_argument("--check", action="store_true",
                    help="exit 1 when ptoisa/__init__.pyi is stale instead of writing it")
    ns = ap.parse_args(argv)
    text = render()
    if ns.check:
        current = STUB.read_text() if STUB.exists() else ""
        if current != text:
            print(f"{STUB} is stale: run python -m ptoisa.stubgen", file=sys.stderr)
            return 1
        return 0
    STUB.write_text(text)
    print(f"wrote {STUB}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

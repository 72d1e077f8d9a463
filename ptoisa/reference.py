"""The instruction reference (``ptoisa ops --markdown DIR``), generated from the registry.

One Markdown page per instruction (``DIR/<NAME>.md``: the semantics docstring, the C++ form,
the Python signature, the PTOAS spelling, operands with their roles, template parameters,
element types per target, the pipe) and an index by family (``DIR/README.md``). The pages are
deterministic (sorted, no dates) so the checked-in copy in ``docs/reference/`` can be compared
with what the registry gives: ``python -m ptoisa.reference --check`` (and the test suite) fail
when it is stale; ``python -m ptoisa.reference`` rewrites it.
"""

from __future__ import annotations

import argparse
import enum
import inspect
import sys
from pathlib import Path
from typing import Any

from .cli.ops_table import support_matrix
from .interp.compiler import _HANDLERS
from .isa.registry import REGISTRY, Instr, PipeForms, ptoas_op
from .isa.spelling import RESULT, Attr, Form
from .stubgen import _def, _param_annotation
from .targets import TARGET_NAMES

#: the checked-in reference
DOCS = Path(__file__).resolve().parent.parent / "docs" / "reference"
INDEX = "README.md"

_ROLE = {"in": "read", "out": "written", "inout": "read and written",
         "scratch": "scratch (contents undefined after)"}
_KIND = {"tile": "tile", "gm": "GlobalTensor", "tile|gm": "tile or GlobalTensor",
         "scalar": "scalar", "simt": "scalar (one per workitem)", "any": "any",
         "enum": "enum"}


# ---- pieces of a page ------------------------------------------------------------------------

def _camel(name: str) -> str:
    return "".join(p[:1].upper() + p[1:] for p in name.replace("-", "_").split("_") if p)


def _default(v: Any) -> str:
    if isinstance(v, enum.Enum):
        return f"{type(v).__name__}::{v.name}"
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def cpp_form(ins: Instr) -> str:
    """A C++ declaration derived from the entry: operands in C++ order, template parameters
    before the trailing wait events. Type names are placeholders (``TileDst`` for a tile
    operand ``dst``); an optional operand is marked (the C++ API has an overload without it)."""
    tparams: list[str] = []
    args: list[str] = []
    for o in ins.operands:
        c = _camel(o.name)
        if o.kind == "enum" and o.enum is not None:
            arg = f"{o.enum.__name__} {o.name}"
        else:
            ty = {"tile": "Tile", "gm": "Global", "tile|gm": "Data", "scalar": "Scalar",
                  "any": "Arg"}.get(o.kind, "Arg") + c
            tparams.append(f"typename {ty}")
            arg = f"{ty} {o.name}" if o.kind == "scalar" else f"{ty} &{o.name}"
        args.append(arg + (" /* optional */" if o.optional else ""))
    for p in ins.params:
        t = p.type if p.type is not None else (
            type(p.default) if isinstance(p.default, enum.Enum) else None)
        if isinstance(t, type) and issubclass(t, enum.Enum):
            tparams.append(f"{t.__name__} {p.name} = {_default(p.default)}")
        elif isinstance(p.default, bool):
            tparams.append(f"bool {p.name} = {_default(p.default)}")
        elif isinstance(p.default, int):
            tparams.append(f"int {p.name} = {p.default}")
        elif p.default is None:
            tparams.append(f"typename {p.name}")
        else:
            tparams.append(f"auto {p.name} = {p.default}")
    tparams.append("typename... WaitEvents")
    args.append("WaitEvents &... events")
    ret = "RecordEvent" if ins.returns_event else "auto"
    head = "template <" + ", ".join(tparams) + ">"
    call = f"PTO_INST {ret} {ins.name}(" + ", ".join(args) + ");"
    return "\n".join((_wrap_decl(head), _wrap_decl(call)))


def _wrap_decl(line: str, width: int = 96) -> str:
    """Break a long declaration after commas, continuation lines indented."""
    if len(line) <= width:
        return line
    out, cur = [], ""
    for part in line.split(", "):
        piece = part if not cur else cur + ", " + part
        if len(piece) > width and cur:
            out.append(cur + ",")
            cur = "    " + part
        else:
            cur = piece
    out.append(cur)
    return "\n".join(out)


def python_form(ins: Instr) -> str:
    """The eager intrinsic's signature, as the typed stub (``ptoisa/__init__.pyi``) has it."""
    head = _def(ins.name, ins).split('\n    """', 1)[0]
    return "pto." + head.removeprefix("def ").removesuffix(":")


def _ptoas_default(ins: Instr) -> list[str]:
    out_ops = [o for o in ins.operands if o.role in ("out", "inout")]
    in_ops = [o for o in ins.operands if o not in out_ops]

    def names(ops: list[Any]) -> str:
        return ", ".join(f"%{o.name}" + ("?" if o.optional else "") for o in ops)

    op = f"pto.{ins.mnemonic}"
    outs = f" outs({names(out_ops)} : ...)" if out_ops else ""
    lines = [f"{op} ins({names(in_ops)} : ...){outs}"]
    res = [o for o in ins.operands if o.role == "out"]
    if res and all(o.kind == "tile" for o in res) and not any(
            o.role == "inout" and not o.optional for o in ins.operands):
        lhs = names(res) + " = "
        args = names([o for o in ins.operands if o.role != "out"])
        lines.append(f"{lhs}{op} {args} : ...")
    return lines


def _form_text(op: str, f: Form) -> str:
    if f.segments:
        text = f'"{op}"(...) with operand groups ({", ".join(f.segments)})'
    elif f.bundles or op.startswith("pto.comm."):  # (the comm ops' call spelling)
        parts = ["%" + n for n in f.inputs] + [
            f"{kw}({', '.join('%' + n for n in names)})" for kw, names in f.bundles.items()]
        res = "%result = " if RESULT in f.outs else ""
        text = f"{res}{op}({', '.join(parts)} : ...)"
    else:
        ins = ", ".join("%" + n for n in f.inputs) + (f" {f.keyword}" if f.keyword else "")
        outs = ", ".join("%" + n for n in f.outs)
        text = f"{op} ins({ins}) outs({outs})"
    extra = []
    if f.attr_operands:
        extra.append("attributes " + ", ".join(f"{k} -> {v}" for k, v in f.attr_operands.items()))
    if f.retype:
        extra.append("as " + ", ".join(
            f"{k}: {v.name if isinstance(v, enum.Enum) else v}" for k, v in f.retype.items()))
    return f"`{text}`" + (f" ({'; '.join(extra)})" if extra else "")


def _attr_text(a: Attr) -> str:
    if a.to is not None:
        s = f"sets `{a.to}`"
        if a.values:
            s += " (" + ", ".join(f"{k} = {_default(v)}" for k, v in a.values.items()) + ")"
        if a.default is not None:
            s += f"; PTOAS default {_default(a.default)}"
        return s
    if a.only is None:
        return f"accepted, no effect: {a.why}" if a.why else "accepted, no effect"
    vals = ", ".join(_default(v) for v in a.only) or "none"
    return f"only {vals} accepted" + (f": {a.why}" if a.why else "")


def _handled_ops(ins: Instr) -> list[str]:
    """The ops the compiler binds to this instruction with a handler of its own (the sync
    ops: ``pto.set_flag[...]``, ``pto.barrier``...)."""
    return sorted(op for op, h in _HANDLERS.items()
                  if getattr(h, "instr_name", None) == ins.name)


def ptoas_section(ins: Instr) -> list[str]:
    sp = ins.ptoas
    handled = _handled_ops(ins)
    if handled:
        args = ", ".join(f"<{o.name}>" for o in ins.operands)
        return ["Operands in brackets, in C++ order:", "", "```",
                *(f"{op}[{args}]" for op in handled), "```", ""]
    lines = []
    if sp is None or ptoas_op(ins) not in sp.forms:  # the default spelling holds too
        lines += ["```", *_ptoas_default(ins), "```", ""]
    if sp is not None:
        if sp.forms:
            for op, forms in sp.forms.items():
                lines.append(f"`{op}`, written as:")
                lines.append("")
                lines += [f"* {_form_text(op, f)}" for f in forms]
                lines.append("")
        if sp.names:
            lines += ["Also spelled " + ", ".join(f"`{n}`" for n in sp.names) + ".", ""]
        if sp.frontend:
            lines += ["Frontend pipe ops of mixed kernels: "
                      + ", ".join(f"`{n}`" for n in sp.frontend) + ".", ""]
        if sp.attrs:
            lines += ["| attribute | what it becomes |", "|---|---|"]
            lines += [f"| `{k}` | {_md_cell(_attr_text(a))} |" for k, a in sp.attrs.items()]
            lines.append("")
    return lines


def _md_cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def pipe_text(ins: Instr) -> str:
    if ins.pipe_of is None:
        return f"`{ins.pipe.value}`"
    if isinstance(ins.pipe_of, PipeForms):
        return f"depends on the operands (`{ins.pipe.value}` otherwise): {ins.pipe_of.text()}"
    doc = inspect.getdoc(ins.pipe_of)
    if doc is None:  # a closure made by a factory: the factory's docstring says the rule
        outer = ins.pipe_of.__qualname__.split(".<locals>")[0]
        doc = inspect.getdoc(getattr(sys.modules[ins.pipe_of.__module__], outer, None))
    rule = " ".join((doc or "").split())
    return (f"depends on the operands (`{ins.pipe.value}` by default): {rule}" if rule
            else f"depends on the operands (`{ins.pipe.value}` by default)")


# ---- pages -----------------------------------------------------------------------------------

def page(ins: Instr, row: dict[str, Any]) -> str:
    doc = inspect.cleandoc(ins.doc) if ins.doc else f"The {ins.name} instruction."
    lines = [f"# {ins.name}", "",
             f"Family: [{ins.family}]({INDEX}#{ins.family}) · pipe: {pipe_text(ins)}", "",
             doc, "", "## C++", "", "```cpp", cpp_form(ins), "```", "",
             "(Derived from the registry: operand order and template parameters; type names "
             "are placeholders.)", "",
             "## Python", "", "```python", python_form(ins), "```", "",
             "## PTOAS", ""]
    lines += ptoas_section(ins)
    lines += ["## Operands", "", "| # | operand | kind | role | optional |",
              "|---|---|---|---|---|"]
    for k, o in enumerate(ins.operands):
        kind = _KIND.get(o.kind, o.kind)
        if o.kind == "enum" and o.enum is not None:
            kind = f"enum {o.enum.__name__}"
        lines.append(f"| {k} | `{o.name}` | {kind} | {_ROLE.get(o.role, o.role)} | "
                     f"{'yes' if o.optional else ''} |")
    lines.append("")
    if ins.params:
        lines += ["## Template parameters", "", "| parameter | type | default |", "|---|---|---|"]
        for p in ins.params:
            lines.append(f"| `{p.name}` | {_param_annotation(p)} | `{_default(p.default)}` |")
        lines.append("")
    key = ", ".join(f"`{k}`" for k in ins.dtype_key)
    lines += ["## Element types per target", ""]
    if key:
        lines += [f"Checked on the element type of {key}.", ""]
    lines += ["| target | element types |", "|---|---|"]
    for t in TARGET_NAMES:
        v = row.get(t)
        lines.append(f"| {t} | {'not available' if v is None else _md_cell(v)} |")
    lines.append("")
    return "\n".join(lines)


def _summary(ins: Instr) -> str:
    first = (inspect.cleandoc(ins.doc).split("\n\n")[0] if ins.doc else "")
    return _md_cell(" ".join(first.split()))


def index(rows: list[dict[str, Any]]) -> str:
    fams: dict[str, list[Instr]] = {}
    for name in sorted(REGISTRY):
        fams.setdefault(REGISTRY[name].family, []).append(REGISTRY[name])
    counts = ", ".join(f"{t} {sum(1 for r in rows if r[t] is not None)}" for t in TARGET_NAMES)
    lines = ["# Instruction reference", "",
             "Generated from the instruction registry by `ptoisa ops --markdown docs/reference` "
             "(do not edit: a test fails when this copy is stale). One page per instruction: "
             "semantics, C++ form, Python signature, PTOAS spelling, operands and roles, "
             "element types per target, pipe.", "",
             f"{len(REGISTRY)} instructions; available per target: {counts}.", "",
             "Families: " + ", ".join(f"[{f}](#{f})" for f in sorted(fams)) + ".", ""]
    for fam in sorted(fams):
        lines += [f"## {fam}", "", "| instruction | pipe | summary |", "|---|---|---|"]
        for ins in fams[fam]:
            pipe = ins.pipe.value + (" (by operands)" if ins.pipe_of is not None else "")
            lines.append(f"| [{ins.name}]({ins.name}.md) | {pipe} | {_summary(ins)} |")
        lines.append("")
    return "\n".join(lines)


def render() -> dict[str, str]:
    """File name -> Markdown text of the whole reference."""
    rows = {r["name"]: r for r in support_matrix()}
    pages = {f"{name}.md": page(REGISTRY[name], rows[name]) for name in sorted(REGISTRY)}
    pages[INDEX] = index(list(rows.values()))
    return {k: "\n".join(x.rstrip() for x in v.splitlines()).rstrip() + "\n"
            for k, v in sorted(pages.items())}


def write(directory: str | Path) -> list[Path]:
    """Write the reference into ``directory`` (created; stale pages of removed instructions
    are deleted). Returns the files written."""
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    pages = render()
    for old in d.glob("*.md"):
        if old.name not in pages:
            old.unlink()
    out = []
    for name, text in pages.items():
        p = d / name
        p.write_text(text)
        out.append(p)
    return out


def stale(directory: str | Path = DOCS) -> list[str]:
    """Pages of ``directory`` that differ from the registry (missing, changed or extra)."""
    d = Path(directory)
    pages = render()
    have = {p.name for p in d.glob("*.md")} if d.is_dir() else set()
    bad = sorted(n for n in pages if n not in have or (d / n).read_text() != pages[n])
    return bad + sorted(have - set(pages))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m ptoisa.reference", description=__doc__)
    ap.add_argument("--check", action="store_true",
                    help="exit 1 when docs/reference is stale instead of writing it")
    ns = ap.parse_args(argv)
    if ns.check:
        bad = stale()
        if bad:
            print(f"{DOCS} is stale ({', '.join(bad[:5])}{' ...' if len(bad) > 5 else ''}): "
                  "run python -m ptoisa.reference", file=sys.stderr)
            return 1
        return 0
    if not (DOCS.parent.parent / "pyproject.toml").exists():
        print("python -m ptoisa.reference works in a source checkout (it rewrites "
              "docs/reference/); elsewhere use: ptoisa ops --markdown DIR", file=sys.stderr)
        return 2
    files = write(DOCS)
    print(f"wrote {len(files)} pages to {DOCS}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""SIMT launches in a ``.pto`` program (micro-isa/17-simt.md): ``pto.simt_launch
@body<<<%x, %y, %z>>>(args) : (types) -> ()``, and a ``func.call`` of a function marked
``pto.simt_entry`` after ``pto.store_vfsimt_info %z, %y, %x``.

The body runs once for all workitems, each per-workitem value an array over them
(``ptoisa/isa/micro/simt.py`` says how and in what order). Control flow that differs
between workitems cannot run so: it stops the run with an error naming the op (the run is
never continued on a guess).
"""

from __future__ import annotations

from typing import Any

from ..errors import BlockDivergence, ExecutionError, VerifyError
from ..ir import attrs as A
from ..ir.core import Op
from ..isa.micro.simt import simt_run
from .compiler import CompiledFunc, Env, Step, defined_function, handler

LAUNCH = "pto.simt_launch"


def is_entry(fn: Op | None) -> bool:
    """Is ``fn`` a SIMT body (a function marked ``pto.simt_entry``)?"""
    return fn is not None and fn.attributes.get("pto.simt_entry") is not None


def run_body(ctx: Any, callee: CompiledFunc, args: list[Any], dims: tuple[int, int, int],
             where: Op) -> None:
    """Run SIMT function ``callee`` once for the workitems of ``dims`` (x, y, z)."""
    try:
        simt_run(ctx.machine, dims, lambda: callee.invoke(ctx, args))
    except BlockDivergence as e:
        raise ExecutionError(
            f"the workitems of the SIMT launch @{callee.name} take different paths "
            f"({e.message}): ptoisa runs a SIMT body with all workitems in step and does not "
            "execute control flow that differs between them yet", op=where.name,
            loc=e.loc or where.loc) from None


def run_steps(env: Env, body: list[Step], dims: tuple[int, int, int], where: Op) -> None:
    """Run the steps of a ``pto.section.simt`` body in place for the workitems of ``dims``."""
    def go() -> None:
        for s in body:
            s(env)
    try:
        simt_run(env[0].machine, dims, go)
    except BlockDivergence as e:
        raise ExecutionError(
            f"the workitems of the SIMT section take different paths ({e.message}): ptoisa "
            "runs a SIMT body with all workitems in step and does not execute control flow "
            "that differs between them yet", op=where.name, loc=e.loc or where.loc) from None


def launch_dims(cf: CompiledFunc, op: Op) -> Any:
    """``env -> (x, y, z)``: the ``<<<x, y, z>>>`` of a SIMT launch or section (literal
    integers or SSA values defined before it); None when the op writes none."""
    text = None
    for p in op.syntax:
        body = getattr(p.value, "body", None) if p.kind == "a" else None
        if isinstance(body, str) and body.startswith("<<"):
            text = body
    if text is None:
        return None
    names = _names(text)
    if len(names) != 3:
        raise VerifyError(f"'{op.name}' takes three dimensions <<<x, y, z>>>, got "
                          f"{len(names)}", op=op.name, loc=op.loc)
    fixed = [(int(n), True) if n.lstrip("-").isdigit() else
             (cf.slot(_value_named(cf, n, op)), False) for n in names]

    def dims(env: Env) -> tuple[int, int, int]:
        x, y, z = (d if lit else int(env[d]) for d, lit in fixed)
        return x, y, z
    return dims


def _names(body: str) -> list[str]:
    return [d.strip() for d in body.strip("<>").split(",")]


def _value_named(cf: CompiledFunc, name: str, op: Op) -> Any:
    """The SSA value ``%name`` of the function (the launch's dimensions are written inside
    ``<<<...>>>``, which the parser keeps as text)."""
    fn = cf.op
    found = None
    for a in fn.regions[0].block.args:
        if "%" + (a.name or "").lstrip("%") == name:
            found = a
    for o in fn.walk():
        if o is op:
            break
        for r in o.results:
            if "%" + (r.name or "").lstrip("%") == name:
                found = r
    if found is None:
        raise VerifyError(f"launch dimension {name} is not a value defined before the launch",
                          op=op.name, loc=op.loc)
    return found


@handler(LAUNCH)
def _launch(cf: CompiledFunc, op: Op) -> Step:
    callee_name = None
    for p in op.syntax:
        if p.kind == "a" and isinstance(p.value, A.SymbolRefAttr) and callee_name is None:
            callee_name = p.value.name
    if callee_name is None:
        raise VerifyError(f"'{LAUNCH}' takes @body<<<x, y, z>>>(args)", op=op.name, loc=op.loc)
    if is_entry(cf.op):
        raise VerifyError(f"'{LAUNCH}' must not appear inside a function marked with "
                          "'pto.simt_entry'", op=op.name, loc=op.loc)
    target = defined_function(cf.c.module, callee_name)
    if target is None:
        raise VerifyError(f"'{LAUNCH}' calls @{callee_name}, which the module does not define",
                          op=op.name, loc=op.loc)
    if not is_entry(target):
        raise VerifyError(f"'{LAUNCH}' calls @{callee_name}, which is not marked "
                          "'pto.simt_entry'", op=op.name, loc=op.loc)
    dims = launch_dims(cf, op)
    if dims is None:
        raise VerifyError(f"'{LAUNCH}' takes @body<<<x, y, z>>>(args)", op=op.name, loc=op.loc)
    args = [cf.slot(v) for v in op.operands]
    compiler = cf.c

    def step(env: Env) -> None:
        callee = compiler.function(callee_name)
        run_body(env[0], callee, [env[a] for a in args], dims(env), op)
    return step


__all__ = ["LAUNCH", "is_entry", "launch_dims", "run_body", "run_steps"]

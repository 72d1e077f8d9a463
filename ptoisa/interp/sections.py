"""``pto.section.cube { ... }`` / ``pto.section.vector { ... }``: code for one kind of core.

PTOAS lowers a section to a preprocessor guard (``#if defined(__DAV_CUBE__)`` /
``__DAV_VEC__``, PTO_IR_manual.md "Core-Specific Section"): the body is compiled only for
cores of that kind, and the code around it for every core. So here

* a section's body is compiled (and so verified) like any other region;
* in a mixed launch (a function with sections of both kinds, or one that calls cube and vector
  functions) the body runs on the cores of its kind and is skipped on the others;
* in a launch on one core (a function whose sections are all of one kind: a cube-only or a
  vector-only kernel, each block one core of that kind) it runs.

``pto.section.simt<<<x, y, z>>> { ... }`` (designs/ptoas_persistent_simt_fragment_plan.md: a
SIMT body written inline, which PTOAS outlines into a ``pto.simt_entry`` function and a
``pto.simt_launch``) runs its body as that launch would: once for the ``x * y * z``
workitems together (``interp/simt.py``), the values of the code around it uniform.

PTOAS rejects a section nested in another (designs/module-backend-attr-and-mixed-fatobj.md,
"Validation"); so does ``check`` here.
"""

from __future__ import annotations

from ..errors import ExecutionError, VerifyError
from ..ir.core import Op
from .compiler import CompiledFunc, Env, Step, handler

#: section op -> the kind of core its body runs on
KINDS = {"pto.section.cube": "cube", "pto.section.vector": "vector"}
SIMT = "pto.section.simt"
SECTIONS = (*KINDS, SIMT)


def section_kinds(fn: Op) -> set[str]:
    """The kinds of core the sections of function ``fn`` name ("cube", "vector")."""
    return {KINDS[op.name] for op in fn.walk() if op.name in KINDS}


def _nested_check(op: Op) -> None:
    for o in op.walk():
        if o is not op and o.name in SECTIONS:
            raise VerifyError(f"'{o.name}' nested in '{op.name}': PTOAS rejects nested sections",
                              op=o.name, loc=o.loc)


@handler(*KINDS)
def _section(cf: CompiledFunc, op: Op) -> Step:
    # (an empty body, ``pto.section.vector { }``, reads as an empty attribute dictionary and
    # no region: PTOAS takes it, and it runs nothing)
    empty = not op.regions and tuple((p.kind, p.value) for p in op.syntax) == (("d", ()),)
    if not empty and (len(op.regions) != 1 or len(op.regions[0].blocks) > 1) \
            or op.operands or op.results:
        raise VerifyError(f"'{op.name}' takes no operands, has no results and one region "
                          "with one block", op=op.name, loc=op.loc)
    _nested_check(op)
    kind = KINDS[op.name]
    body = [] if empty or not op.regions[0].blocks else cf.block(op.regions[0])

    def step(env: Env) -> None:
        core = env[0].core
        if core is not None and core.kind != kind:
            return  # compiled out on this kind of core (#if __DAV_CUBE__ / __DAV_VEC__)
        for s in body:
            s(env)
    return step


def _simt_errors(cf: CompiledFunc, op: Op) -> None:
    """PTOAS's rules of a SIMT section: its launch dimensions ``<<<x, y, z>>>`` are
    non-negative i32 values, and it is not inside a function marked ``pto.simt_entry``."""
    if cf.op is not None and cf.op.attributes.get("pto.simt_entry") is not None:
        raise VerifyError(f"'{SIMT}' must not appear inside a function marked with "
                          "'pto.simt_entry'", op=op.name, loc=op.loc)
    for p in op.syntax:
        body = getattr(p.value, "body", None) if p.kind == "a" else None
        if isinstance(body, str) and body.startswith("<<"):
            dims = [d.strip() for d in body.strip("<>").split(",")]
            # (literal dimensions: an SSA value is checked when it runs, which it does not yet)
            if any(d.lstrip("-").isdigit() and not 0 <= int(d) < 2 ** 31 for d in dims):
                raise VerifyError(f"'{SIMT}' requires non-negative i32 launch dimensions, got "
                                  f"<<<{', '.join(dims)}>>>", op=op.name, loc=op.loc)
            if len(dims) == 3 and all(d.isdigit() for d in dims):
                _launch_count(tuple(int(d) for d in dims), op)


#: the most workitems a SIMT launch runs (micro-isa/17-simt.md, pto.store_vfsimt_info: "the
#: launch count is bounded by 2048")
MAX_WORKITEMS = 2048


def _launch_count(dims: tuple[int, ...], op: Op) -> None:
    n = dims[0] * dims[1] * dims[2]
    if not 0 < n <= MAX_WORKITEMS:
        raise VerifyError(f"SIMT launch dimensions must have a positive product no greater "
                          f"than {MAX_WORKITEMS}, got ({', '.join(map(str, dims))})",
                          op=op.name, loc=op.loc)


@handler(SIMT)
def _simt(cf: CompiledFunc, op: Op) -> Step:
    from .simt import launch_dims, run_steps

    _nested_check(op)
    _simt_errors(cf, op)
    empty = not op.regions and tuple((p.kind, p.value) for p in op.syntax) == (("d", ()),)
    if not empty and (len(op.regions) != 1 or len(op.regions[0].blocks) > 1) \
            or op.operands or op.results:
        raise VerifyError(f"'{op.name}' takes no operands, has no results and one region "
                          "with one block", op=op.name, loc=op.loc)
    dims = launch_dims(cf, op)
    body = [] if empty or not op.regions or not op.regions[0].blocks else \
        cf.block(op.regions[0])

    loc = op.loc

    def step(env: Env) -> None:
        if dims is None:  # (PTOAS takes a section without dimensions; ptoisa cannot run it)
            raise ExecutionError(f"operation '{SIMT}' cannot be executed by ptoisa yet without "
                                 "launch dimensions <<<x, y, z>>>; nothing in its body was "
                                 "executed", loc=loc)
        xyz = dims(env)
        _launch_count(xyz, op)
        run_steps(env, body, xyz, op)
    return step

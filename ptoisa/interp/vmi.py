"""VMI ops (``pto.vmi.*``, entries with ``dialect="vmi"``: ``ptoisa/isa/vmi/``) in a ``.pto``
program. An op binds to its entry here, once, at compile time:

* the SSA operands, in the order written (``%src[%off]`` is two), fill the entry's operands
  in order; an optional operand whose kind the next value's type does not fit is left out
  (``vstore %v, %dst[%off], %mask`` and ``vstore %v, %dst[%off], %stride {group = 8}`` bind
  the mask and the stride by their types: ``!pto.vmi.mask`` and ``index``);
* the attribute dictionary fills the parameters by name (a unit attribute, ``reassoc``, is
  True), quoted literals (``pto.vmi.pset "PAT_ALL"``) the others in order; a parameter
  ``result_type`` gets the type of the op's first result, ``signless`` whether the first
  vector operand's element type is a signless integer (``i32``, not ``si32``);
* the op's results are the entry's, which its semantics return; an operand of kind
  ``group`` takes every remaining value as one tuple (``pack``), an entry with a
  ``result_types`` parameter gives as many results as the op binds (``unpack``: one per
  physical part), ``source_type`` is the first operand's type (its layout).

The static rules and the legality table run here with the operands' types (``VmiSpec``,
``VmiMaskSpec``, ``PtrSpec``, scalars' element types); at run time the step calls
``Instr.run`` like any instruction, so observers see every VMI op.
"""

from __future__ import annotations

from typing import Any

from ..errors import PtoError, VerifyError
from ..ir import types as T
from ..ir.core import Op
from ..isa.registry import Instr, Opnd
from ..vector.logical import VmiMaskSpec, VmiSpec, vmi_spec
from . import bridge
from .compiler import CompiledFunc, Env, Step, dialect_binder
from .micro import _split
from .micro import value_spec as micro_value_spec


def value_spec(t: T.Type) -> Any:
    """What static rules see for a value of IR type ``t``."""
    if isinstance(t, T.OpaqueType):
        s = vmi_spec(t.text)
        if s is not None:
            return s
    return micro_value_spec(t)


def _fits(o: Opnd, t: T.Type, spec: Any) -> bool:
    k = o.kind
    if k == "lvec":
        return isinstance(spec, VmiSpec)
    if k == "lmask":
        return isinstance(spec, VmiMaskSpec)
    if k == "ptr":
        return isinstance(t, T.PtrType)
    if k == "index":
        return isinstance(t, T.IndexType)
    if k == "scalar":
        return isinstance(t, (T.IntegerType, T.FloatType, T.IndexType))
    return True  # any


def bind_vmi(cf: CompiledFunc, op: Op, ins: Instr) -> Step:
    """The step of VMI op ``op`` bound to entry ``ins`` (see the module's docstring)."""
    where = {"op": op.name, "loc": op.loc}
    try:
        # (the generic spelling "pto.vmi.x"(%a) {...} writes its operands in order)
        vals, _, literals, words = (list(op.operands), {}, [], []) if op.form == "generic" \
            else _split(op)
        if words:  # (a bare keyword no VMI op takes: never dropped without a word)
            raise VerifyError(f"unexpected keyword(s) {', '.join(words)}", **where)
        specs = [value_spec(v.type) for v in vals]
        res_specs = [value_spec(v.type) for v in op.results]
    except VerifyError:
        raise
    except PtoError as e:
        raise VerifyError(e.message, **where) from None
    slots: list[Any] = []
    types: dict[str, Any] = {}
    k = 0
    by_name = {o.name: o for o in ins.operands}
    formed = False
    for f in (ins.ptoas.forms.get(op.name, ()) if ins.ptoas is not None else ()):
        # (a written variant whose values are other operands, in its order: the first
        # whose every value fits its operand's kind)
        if len(f.inputs) == len(vals) and all(
                _fits(by_name[n], v.type, sp) for n, v, sp in zip(f.inputs, vals, specs,
                                                                   strict=True)):
            written = dict(zip(f.inputs, range(len(vals)), strict=True))
            for o in ins.operands:
                j = written.get(o.name)
                slots.append(None if j is None else cf.slot(vals[j]))
                if j is not None:
                    types[o.name] = specs[j]
            k, formed = len(vals), True
            break
    for o in () if formed else ins.operands:
        if o.kind == "group":  # (pack: every remaining value, one tuple)
            slots.append(("all", tuple(cf.slot(v) for v in vals[k:])))
            types[o.name] = tuple(specs[k:])
            k = len(vals)
            continue
        if k < len(vals) and _fits(o, vals[k].type, specs[k]):
            slots.append(cf.slot(vals[k]))
            types[o.name] = specs[k]
            k += 1
        elif o.optional:
            slots.append(None)
        else:
            got = f"{vals[k].type}" if k < len(vals) else "nothing"
            raise VerifyError(f"operand '{o.name}' ({o.kind}) expected after {k} operand(s), "
                              f"got {got}", **where)
    if k < len(vals):
        raise VerifyError(f"unexpected operand {k + 1} of type {vals[k].type} (operands: "
                          f"{', '.join(o.name for o in ins.operands)})", **where)
    variadic = any(p.name == "result_types" for p in ins.params)  # (unpack: one per part)
    least = sum(1 for r in ins.results if not r.optional)
    if not least <= len(op.results) <= len(ins.results) and not variadic:
        raise VerifyError(f"has {len(op.results)} result(s), {ins.mnemonic} gives "
                          f"{least if least == len(ins.results) else f'{least} to '}"
                          f"{len(ins.results)}", **where)
    for r, s in zip(ins.results, res_specs, strict=False):
        types[r.name] = s
    params = _params(op, ins, specs, res_specs, literals)
    extra = tuple(ins.ptoas.rules.get(op.name, ())) if ins.ptoas is not None else ()
    bridge.check_types_at(op, ins, cf.c.target, types, params, cf.c.permissive, extra)
    res = tuple(cf.slot(v) for v in op.results)
    fixed = tuple(slots)
    run = ins.run
    loc = op.loc
    name = op.name

    def step(env: Env) -> None:
        vs = [None if s is None else env[s] if isinstance(s, int)
              else tuple(env[x] for x in s[1]) for s in fixed]
        try:
            out = run(env[0].machine, vs, params, checked=True, loc=loc)
        except PtoError as e:
            raise e.at_op(name, loc) from None
        if isinstance(out, tuple):  # (several results: as many as the op binds)
            for slot, v in zip(res, out, strict=True):
                env[slot] = v
        elif res:
            env[res[0]] = out
    return step


def _params(op: Op, ins: Instr, specs: list[Any], res_specs: list[Any],
            literals: list[Any]) -> dict[str, Any]:
    names = {p.name for p in ins.params}
    # (filled here, never written)
    bound = {"result_type", "result_types", "source_type", "signless", "spelling"}
    renamed = ins.ptoas.attrs if ins.ptoas is not None else {}
    params: dict[str, Any] = {}
    for key, a in op.attributes.items:
        v = bridge.attr_value(a)
        to = key
        if key in renamed:  # (an older name's attribute: num_groups is group)
            spec = renamed[key]
            if spec.to is None:
                continue
            to, v = spec.to, spec.values.get(v, v)
        if to not in names or to in bound:
            known = sorted((names - bound) | set(renamed))
            raise VerifyError(f"unknown attribute '{key}' (known: {', '.join(known)})",
                              op=op.name, loc=op.loc)
        params[to] = True if v is None else v
    if "spelling" in names:
        params["spelling"] = op.name
    if "result_type" in names and res_specs:
        params["result_type"] = res_specs[0]
    if "result_types" in names:
        params["result_types"] = tuple(res_specs)
    if "source_type" in names and specs:
        params["source_type"] = specs[0]
    if "signless" in names:
        first = next((s for s in specs if isinstance(s, VmiSpec)), None)
        params["signless"] = bool(first is not None and first.signless)
    free = [p.name for p in ins.params if p.name not in params]
    if len(literals) > len(free):
        raise VerifyError(f"{len(literals)} literal(s) for {len(free)} parameter(s)",
                          op=op.name, loc=op.loc)
    params.update(zip(free, literals, strict=False))  # ("PAT_ALL" of pset)
    return params


dialect_binder("vmi", bind_vmi)

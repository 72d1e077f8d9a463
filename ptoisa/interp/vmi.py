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
from ..isa.vmi.lowering import CONSTANTS
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
    checked = params
    if ins.ptoas is not None and cf.c.passes:
        passed = tuple(r for p, rs in ins.ptoas.passes.items() if p in cf.c.passes for r in rs)
        if passed:
            extra += passed
            # (a pass's limits may read the integer an arith.constant operand holds: the
            # check sees them as the parameter CONSTANTS, the run does not)
            checked = {**params, CONSTANTS: {o.name: cf.consts[s] for o, s in
                                             zip(ins.operands, slots, strict=False)
                                             if isinstance(s, int) and s in cf.consts}}
    bridge.check_types_at(op, ins, cf.c.target, types, checked, cf.c.permissive, extra)
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


# ---- the module rules of PTOAS's VMI passes ----------------------------------------------
# (designs/vmi-implementation-manual.md: the producer boundary ``pto-validate-vmi-ir`` takes
# surface VMI only, layout assignment needs every VMI-typed call to reach a body, and
# ``vmi-to-vpto`` leaves no VMI type behind; PTOAS's prefixes name the rule's kind)

BOUNDARY = "pto-validate-vmi-ir"
ASSIGN = "vmi-layout-assignment"
TO_VPTO = "vmi-to-vpto"
INVARIANT = "VMI-PASS-INVARIANT: "
CONTRACT = "VMI-LAYOUT-CONTRACT: "
RESIDUAL = "VMI-RESIDUAL-OP: "
#: the op families a VMI value may flow through besides pto.vmi.* (PTOAS's structural ops)
_STRUCTURAL = ("builtin.module", "func.", "scf.", "cf.")
#: the VMI ops that place lanes (layout helpers), which PTOAS's passes create themselves
_HELPERS = frozenset({"pto.vmi.ensure_layout", "pto.vmi.ensure_mask_layout",
                      "pto.vmi.ensure_mask_granularity", "pto.vmi.pack", "pto.vmi.unpack"})


def _vmi_text(text: str) -> bool:
    return "!pto.vmi." in text


def _op_types(op: Op) -> list[T.Type]:
    out = [v.type for v in op.operands] + [v.type for v in op.results]
    out += [a.type for r in op.regions for b in r.blocks for a in b.args]
    if op.name == "func.func":
        ft = op.attr("function_type")
        t = getattr(ft, "type", getattr(ft, "value", None))
        if isinstance(t, T.FunctionType):
            out += list(t.inputs) + list(t.results)
    return out


def _leaf_types(t: T.Type) -> list[str]:
    if isinstance(t, T.FunctionType):
        return [x for s in (*t.inputs, *t.results) for x in _leaf_types(s)]
    return [str(t)]


def _hidden_attr(op: Op | None, attrs: Any) -> str | None:
    """The name of an attribute (not a function's signature) whose value holds a VMI type."""
    for key, a in attrs.items:
        if op is not None and op.name == "func.func" and key == "function_type":
            continue
        if _vmi_text(str(a)):
            return key
    return None


def pass_errors(module: Any, passes: tuple[str, ...]) -> list[PtoError]:
    """The errors of the module-level rules PTOAS's VMI passes make (``passes``: a lit RUN
    line's ``pto-test-opt`` passes; the rules of single ops are on their entries,
    ``Ptoas.passes``)."""
    out: list[PtoError] = []
    run = set(passes)
    hidden = _hidden_attr(None, module.attributes)
    if hidden is not None:
        if run & {BOUNDARY, ASSIGN}:
            out.append(VerifyError(f"{INVARIANT}a VMI type appears in a non-signature attribute "
                                   f"('{hidden}' of the module)", op="builtin.module",
                                   loc=module.loc))
        elif TO_VPTO in run:
            out.append(VerifyError(f"{RESIDUAL}failed to convert all VMI ops/types to VPTO (the "
                                   f"module's attribute '{hidden}' holds a VMI type)",
                                   op="builtin.module", loc=module.loc))
    for op in module.walk():
        where = {"op": op.name, "loc": op.loc}
        hidden = _hidden_attr(op, op.attributes)
        if hidden is not None and run & {BOUNDARY, ASSIGN}:
            out.append(VerifyError(f"{INVARIANT}a VMI type appears in a non-signature attribute "
                                   f"('{hidden}')", **where))
            continue
        if hidden is not None and TO_VPTO in run:
            out.append(VerifyError(f"{RESIDUAL}failed to convert all VMI ops/types to VPTO "
                                   f"(attribute '{hidden}' holds a VMI type)", **where))
            continue
        leaves = [x for t in _op_types(op) for x in _leaf_types(t)]
        vmi = any(_vmi_text(x) for x in leaves)
        if BOUNDARY in run:
            err = _boundary(op, leaves)
            if err:
                out.append(VerifyError(err, **where))
                continue
        if ASSIGN in run and vmi:
            if op.name == "func.func" and not (op.regions and op.regions[0].blocks):
                out.append(VerifyError(f"{CONTRACT}VMI typed function declaration requires an "
                                       "explicit external ABI materialization plan (a "
                                       "declaration without a body has VMI types)", **where))
                continue
            if op.name == "func.call_indirect":
                out.append(VerifyError(f"{CONTRACT}VMI typed call requires a direct internal "
                                       "callee with a body", **where))
                continue
        if TO_VPTO in run and vmi and op.name in ("builtin.unrealized_conversion_cast",
                                                  "unrealized_conversion_cast"):
            out.append(VerifyError(f"{RESIDUAL}unrealized_conversion_cast cannot carry VMI "
                                   "types", **where))
    return out


def _boundary(op: Op, leaves: list[str]) -> str:
    """The producer boundary's refusal of ``op`` ("" if none): surface VMI types only, no
    layout helper, and VMI values used by VMI or structural ops only."""
    for x in leaves:  # (physical VPTO types pass through: vmi_producer_boundary_physical_*)
        spec = vmi_spec(x) if _vmi_text(x) else None
        if spec is not None and (spec.layout is not None or
                                 (isinstance(spec, VmiMaskSpec) and spec.gran != "pred")):
            return (f"{INVARIANT}VMI producer boundary requires surface !pto.vmi.vreg or "
                    f"!pto.vmi.mask<Nxpred> type, got {x}")
    if not any(_vmi_text(x) for x in leaves):
        return ""
    if op.name in _HELPERS:
        return f"{INVARIANT}VMI helper op appears before layout assignment or VMI-to-VPTO"
    if op.name.startswith("pto.vmi.") or op.name.startswith(_STRUCTURAL):
        return ""
    return f"{INVARIANT}VMI typed value is used by a non-VMI semantic op"

"""Micro-ops of the vector micro-ISA (VPTO) in a ``.pto`` program.

A ``pto.vadd`` / ``pto.vlds`` / ``pto.mte_gm_ub`` ... op is a registry entry with
``dialect="vpto"`` (``ptoisa/isa/micro/``). It binds here, once, at compile time, by the one
spelling the micro-ISA chapters use for every op:

* the SSA operands outside keyword groups, in the order written (``%ub[%offset]`` is two),
  fill the entry's operands that are not groups, in order (trailing optional ones may be
  absent);
* a keyword group ``nburst(%a, %b, %c)`` fills the operand of that name (kind ``group``) with
  the tuple of its values; a group written several times (``loop(...) loop(...)``) with the
  tuple of those tuples;
* a bare keyword outside groups (``nz2nd``, ``disable_gemv``) sets the entry's parameter of
  that name to True; one the entry has no parameter for is an error (never ignored); a keyword
  inside a group (``tf32_mode(round_even)``) is the group's value as a string, and a group
  named after a parameter holding one keyword (``sat(preserve_nan)``) sets it to that keyword;
* an entry whose spelling declares named fields (``Ptoas.named``: ``m(%a), k(%b), ...`` in any
  order) takes a complete group of them as its trailing operands;
* quoted literals (``"PAT_ALL"``, ``"LOWER"``) fill the entry's parameters in order, an
  attribute dictionary (``{dist = "NORM"}``) by name; a parameter named ``result_type``
  gets the type of the op's first result (``pto.vbitcast``: what it reinterprets as), one
  named ``post_update`` whether the op binds its optional updated-pointer result;
* the op's results are the entry's ``results``, which its semantics return.

The static rules run here with the operands' types (``VRegSpec``, ``MaskSpec``, ``PtrSpec``,
scalars' element types) and the legality table of the target; at run time the step calls
``Instr.run`` like a tile instruction and binds what it returns to the op's results.

``pto.vecscope { ... }`` is a region (``interp/vbatch.py``): its body runs in place (the vector
function scope of the micro-ISA; it changes no value ptoisa computes).
"""

from __future__ import annotations

from typing import Any

from ..dtypes import DType
from ..errors import PtoError, VerifyError
from ..ir import types as T
from ..ir.core import Op
from ..isa.micro import simt as simt_module
from ..isa.micro.simt import SCOPED as SIMT_SCOPED
from ..isa.registry import Instr, Opnd
from ..isa.spelling import STRUCTURAL_ATTRS
from ..vector.regs import AlignSpec, GroupSpec, PtrSpec, mask_spec, vreg_spec
from . import bridge
from .compiler import CompiledFunc, Env, Step, dialect_binder


def value_spec(t: T.Type) -> Any:
    """What static rules see for a value of IR type ``t`` (None: no type they read)."""
    if isinstance(t, T.PtrType):
        return PtrSpec(t.space or "gm", bridge.elem_dtype(t.dtype))
    if isinstance(t, T.OpaqueType):
        spec = vreg_spec(t.text) or mask_spec(t.text) or (
            AlignSpec() if t.text == "!pto.align" else None)
        if spec is None and t.text.startswith(("vector<2x", "!pto.hif8x2")):
            try:
                spec = bridge.elem_dtype(t)  # a SIMT packed value (17-simt.md)
            except PtoError:
                return None
        return spec
    if isinstance(t, (T.IntegerType, T.FloatType, T.IndexType)):
        return bridge.elem_dtype(t)
    return None


def _spec_of(op: Op, t: T.Type) -> Any:
    """:func:`value_spec` of an operand of ``op``; a vector or packed type ptoisa has no
    element type for (``vector<2xtf32>``, a pointer to one) refuses the op by name."""
    try:
        return value_spec(t)
    except PtoError:
        inner = t.dtype if isinstance(t, T.PtrType) else t
        if str(inner).startswith(("vector<", "!pto.hif8x")):
            raise VerifyError(f"operation '{op.name}' cannot be executed by ptoisa yet with "
                              f"the packed type {inner}", op=op.name, loc=op.loc) from None
        raise


def _split(op: Op) -> tuple[list[Any], dict[str, list[tuple[Any, ...]]], list[Any], list[str]]:
    """(operands outside groups, group name -> the tuples written (operands, and keywords as
    strings), quoted literals, bare keywords)."""
    if not op.syntax:  # (the SSA form ``%r = pto.x %a : T -> U`` keeps no pieces)
        return list(op.operands), {}, [], []
    words: list[str] = []
    plain: list[Any] = []
    groups: dict[str, list[tuple[Any, ...]]] = {}
    literals: list[Any] = []
    ps = op.syntax
    j = 0
    while j < len(ps):
        p = ps[j]
        if p.kind == "k" and j + 1 < len(ps) and ps[j + 1].kind == "p" and ps[j + 1].value == "(":
            vals = []
            j += 2
            while j < len(ps) and not (ps[j].kind == "p" and ps[j].value == ")"):
                if ps[j].kind == "v":
                    vals.append(op.operands[int(ps[j].value)])  # type: ignore[call-overload]
                elif ps[j].kind == "k":
                    vals.append(str(ps[j].value))
                j += 1
            groups.setdefault(str(p.value), []).append(tuple(vals))
        elif p.kind == "v":
            plain.append(op.operands[int(p.value)])  # type: ignore[call-overload]
        elif p.kind == "a":
            literals.append(bridge.attr_value(p.value))  # type: ignore[arg-type]
        elif p.kind == "k":
            words.append(str(p.value))
        elif p.kind == "p" and p.value == ":":
            break  # the types
        j += 1
    return plain, groups, literals, words


def _named_fields(op: Op, named: Any, groups: dict[str, list[tuple[Any, ...]]]) -> list[Any]:
    """The values of the named-field spelling (``Ptoas.named``), taken out of ``groups``, in
    operand order; a partial group or fields of two groups is PTOAS's error."""
    given = {g: w for g, w in groups.items() if any(g in names for names in named.values())
             and len(w) == 1 and len(w[0]) == 1 and not isinstance(w[0][0], str)}
    if not given:
        return []
    forms = [f for f, names in named.items() if any(g in names for g in given)]
    if len(forms) > 1:
        raise VerifyError(f"cannot mix {forms[0]} operands with {forms[1]} operands (the "
                          "named fields give one complete group)", op=op.name, loc=op.loc)
    names = named[forms[0]]
    missing = [n for n in names if n not in given]
    if missing:
        raise VerifyError(f"{forms[0]} form requires {missing[0]} (named fields: "
                          f"{', '.join(names)})", op=op.name, loc=op.loc)
    for n in names:
        del groups[n]
    return [given[n][0][0] for n in names]


def micro_parts(cf: CompiledFunc, op: Op, ins: Instr
                ) -> tuple[tuple[Any, ...], dict[str, Any], tuple[int, ...]]:
    """(the operands' slots in the entry's order: a slot, None for an absent one, or a
    group's; the parameters; the results' slots) of micro-op ``op`` bound to entry ``ins``,
    its static rules checked (see the module's docstring)."""
    plain, groups, literals, words = _split(op)
    # a bare keyword that names an optional group is that clause without its optional
    # operand (PTOAS's ``nz2dn`` beside ``nz2dn(%stride)``): the group written empty
    optional = {o.name for o in ins.operands if o.kind == "group" and o.optional}
    for w in [w for w in words if w in optional and w not in groups
              and not any(p.name == w for p in ins.params)]:
        words.remove(w)
        groups[w] = [()]
    if ins.ptoas is not None and ins.ptoas.named:
        plain = plain + _named_fields(op, ins.ptoas.named, groups)
    slots: list[Any] = []  # slot | None | ("group", slots) | ("groups", [slots])
    types: dict[str, Any] = {}
    k = 0
    for o in ins.operands:
        if o.kind == "group":
            written = groups.pop(o.name, None)
            if written is None:
                if not o.optional:
                    raise VerifyError(f"missing the '{o.name}(...)' group", op=op.name,
                                      loc=op.loc)
                slots.append(None)
            elif _repeats(o):
                slots.append(("groups", [_group_slots(cf, g) for g in written]))
            else:
                if len(written) > 1:
                    raise VerifyError(f"'{o.name}(...)' written {len(written)} times",
                                      op=op.name, loc=op.loc)
                slots.append(("group", _group_slots(cf, written[0])))
                types[o.name] = GroupSpec(tuple(
                    w if isinstance(w, str) else _spec_of(op, w.type) for w in written[0]))
            continue
        if k < len(plain):
            v = plain[k]
            k += 1
            slots.append(cf.slot(v))
            types[o.name] = _spec_of(op, v.type)
        elif o.optional:
            slots.append(None)
        else:
            raise VerifyError(f"expects operand '{o.name}' ({o.kind}) after {k} operand(s)",
                              op=op.name, loc=op.loc)
    # a parameter flag written with one keyword (``sat(preserve_nan)``): that keyword
    flagged = {g: w[0][0] for g, w in list(groups.items())
               if any(p.name == g for p in ins.params) and len(w) == 1 and len(w[0]) == 1
               and isinstance(w[0][0], str)}
    for g in flagged:
        del groups[g]
    if k < len(plain) or groups:
        extra = f"{len(plain) - k} operand(s)" if k < len(plain) else \
            ", ".join(f"'{g}(...)'" for g in groups)
        # (a clause the op's syntax does not have: its parser wanted the types there, MLIR's
        # "expected ':'")
        said = f"unexpected {extra}" if k < len(plain) else \
            f"expected ':', not {extra} (a clause the op does not have)"
        raise VerifyError(f"{said} (operands: {', '.join(o.name for o in ins.operands)})",
                          op=op.name, loc=op.loc)
    params = _params(op, ins, literals)
    for w in words:
        if not any(p.name == w for p in ins.params):
            raise VerifyError(f"unknown keyword '{w}' (known: "
                              f"{', '.join(p.name for p in ins.params) or 'none'})",
                              op=op.name, loc=op.loc)
        params[w] = True
    params.update(flagged)
    least = sum(1 for r in ins.results if not r.optional)
    if not least <= len(op.results) <= len(ins.results):
        raise VerifyError(f"has {len(op.results)} result(s), {ins.mnemonic} gives "
                          f"{least if least == len(ins.results) else f'{least} to '}"
                          f"{len(ins.results)} ({', '.join(r.name for r in ins.results)})",
                          op=op.name, loc=op.loc)
    for r, v in zip(ins.results, op.results, strict=False):
        types[r.name] = _spec_of(op, v.type)
    if ins.impl.__module__ != simt_module.__name__:  # (only the SIMT ops take packed values)
        for spec in types.values():
            dt = spec.dtype if isinstance(spec, PtrSpec) else spec
            if isinstance(dt, DType) and dt.lanes > 1:  # (a vreg spec has lanes too)
                raise VerifyError(f"operation '{op.name}' cannot be executed by ptoisa yet with "
                                  f"the packed type {dt.name}", op=op.name, loc=op.loc)
    extra = tuple(ins.ptoas.rules.get(op.name, ())) if ins.ptoas is not None else ()
    bridge.check_types_at(op, ins, cf.c.target, types, params, cf.c.permissive, extra)
    if ins.name in SIMT_SCOPED and not _in_simt(cf, op):
        raise VerifyError(f"'{op.name}' op must be inside a pto.simt_entry function or "
                          "pto.section.simt", op=op.name, loc=op.loc)
    ptr = types.get("ptr")
    if ins.name.startswith("ATOMIC_") and isinstance(ptr, PtrSpec) and ptr.dtype.lanes > 1:
        _packed_atomic_rules(cf, op)
    return tuple(slots), params, tuple(cf.slot(v) for v in op.results)


def _packed_atomic_rules(cf: CompiledFunc, op: Op) -> None:
    """17-simt.md of a packed (vector<2xf16> / vector<2xbf16>) atomic on beta.1: inside a SIMT
    body, its old value left unused (PTOAS's verifier says so in these words)."""
    if not _in_simt(cf, op):
        raise VerifyError(f"'{op.name}' op requires packed atomics to be inside a "
                          "pto.simt_entry function or pto.section.simt on beta.1",
                          op=op.name, loc=op.loc)
    old = op.results[0] if op.results else None
    if old is not None and cf.op is not None and any(
            any(v is old for v in o.operands) for o in cf.op.walk()):
        raise VerifyError(f"'{op.name}' op does not support using the old value result for "
                          "packed atomics on beta.1", op=op.name, loc=op.loc)


def bind_micro(cf: CompiledFunc, op: Op, ins: Instr) -> Step:
    """The step of micro-op ``op`` bound to entry ``ins`` (see the module's docstring)."""
    fixed, params, res = micro_parts(cf, op, ins)
    run = ins.run
    loc = op.loc
    name = ins.mnemonic

    def get(env: Env, s: Any) -> Any:
        if s is None:
            return None
        if isinstance(s, int):
            return env[s]
        if s[0] == "group":
            return tuple(x if isinstance(x, str) else env[x] for x in s[1])
        return tuple(tuple(x if isinstance(x, str) else env[x] for x in g) for g in s[1])

    # (an entry of several results returns a tuple, of which the op may bind the first few)
    one = res[0] if len(ins.results) == 1 and res else None

    target = cf.c.target
    call = ins.checked_call(target)
    # operands read by slot alone (no group, none absent): one list comprehension less
    flat = all(isinstance(s, int) for s in fixed)

    def step(env: Env) -> None:
        m = env[0].machine
        vals = [env[s] for s in fixed] if flat else [get(env, s) for s in fixed]
        try:
            if m.observers or m.stream is not None or m.lanes != 1 or not m.values \
                    or m._lazy or m.target is not target:
                out = run(m, vals, params, checked=True, loc=loc)
            else:  # (what run does for this use, bound once: Instr.checked_call)
                out = call(m, vals, params)
        except PtoError as e:
            raise e.at_op(name, loc) from None
        if one is not None:
            env[one] = out
        elif res:
            for slot, v in zip(res, out, strict=False):
                env[slot] = v
    return step


def _in_simt(cf: CompiledFunc, op: Op) -> bool:
    """Is ``op`` in a SIMT body: a function marked pto.simt_entry, or a pto.section.simt?"""
    if cf.op is not None and cf.op.attributes.get("pto.simt_entry") is not None:
        return True
    return cf.op is not None and any(
        s.name == "pto.section.simt" and any(o is op for o in s.walk()) for s in cf.op.walk())


def _group_slots(cf: CompiledFunc, written: tuple[Any, ...]) -> tuple[Any, ...]:
    """The slots of a group's operands; its keywords stay strings (their own value)."""
    return tuple(v if isinstance(v, str) else cf.slot(v) for v in written)


def _repeats(o: Opnd) -> bool:
    """A group that may be written several times (``loop(...)``): its value is a tuple of
    tuples."""
    return o.name in ("loop",)


def _params(op: Op, ins: Instr, literals: list[Any]) -> dict[str, Any]:
    params: dict[str, Any] = {}
    for key, a in op.attributes.items:
        if key in STRUCTURAL_ATTRS:
            # (MLIR's generic record of how many operands each group holds: it says nothing
            # the written groups do not, so it must only agree with them)
            sizes = bridge.segment_sizes(op) or []
            if sum(sizes) != len(op.operands):
                raise VerifyError(f"{key} counts {sum(sizes)} operands, the op has "
                                  f"{len(op.operands)}", op=op.name, loc=op.loc)
            continue
        if not any(p.name == key for p in ins.params):
            raise VerifyError(f"unknown attribute '{key}' (known: "
                              f"{', '.join(p.name for p in ins.params) or 'none'})",
                              op=op.name, loc=op.loc)
        params[key] = bridge.attr_value(a)
    if any(p.name == "result_type" for p in ins.params) and op.results:
        # (an op whose result's type is not a function of its operands: vbitcast, plds)
        params["result_type"] = value_spec(op.results[0].type)
    if any(p.name == "source_type" for p in ins.params) and op.operands:
        # (an op whose source holds another type than its lanes' numpy one: a packed 4-bit
        # or coded 8-bit vreg is bytes, a packed hif8x2 SIMT value codes; its declared type
        # says what they are)
        params["source_type"] = value_spec(op.operands[0].type)
    if any(p.name == "post_update" for p in ins.params):
        # (the post-update form: the op binds its optional updated pointer, and so accesses
        # the base itself, micro-isa/04 and 03)
        params["post_update"] = len(op.results) > sum(1 for r in ins.results
                                                      if not r.optional)
    free = [p for p in ins.params if p.name not in params]
    if len(literals) > len(free):
        raise VerifyError(f"{len(literals)} literal(s) for {len(free)} parameter(s)",
                          op=op.name, loc=op.loc)
    for p, v in zip(free, literals, strict=False):
        params[p.name] = v
    return params


dialect_binder("vpto", bind_micro)

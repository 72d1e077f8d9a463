"""PTOAS's rules for persistent SIMT fragments (its VPTO pipeline's fragment analysis, run
before it materialises them into per-workitem keep / resume registers).

A fragment is an ``llvm.alloca N x T {pto.persistent}`` in a kernel entry, outside any
``pto.section.simt``: a small per-workitem array that lives across the SIMT sections of the
kernel. What PTOAS needs to keep it in registers, and refuses otherwise:

* the kernel is a PTO entry; ``T`` is an integer of up to 64 bits or f16 / bf16 / f32, ``N`` a
  positive constant;
* the fragment's pointer is used only as the base of ``llvm.getelementptr`` (one index, a
  compile-time constant once the loops around it are fully unrolled, as PTOAS unrolls every
  loop that touches a fragment) and as the address of ``llvm.load`` / ``llvm.store``;
* every access is in a ``pto.section.simt``, directly in its body (or in loops that unroll
  there), reads or writes ``T`` or a 2- / 4-lane vector of ``T`` (not volatile or atomic), at a
  non-negative byte offset aligned to ``T`` and inside the allocation;
* one accessing section (the init section) comes before every other accessing one on every
  path; its stores decide the resident elements (an element's first access there is a store),
  and no access reaches another element; every section after it launches the same
  ``<<<x, y, z>>>``;
* the resident elements of all fragments of a function take 123 keep slots at most (one for
  32-bit values, two aligned ones for 64-bit integers).

:func:`fragment_errors` gives the first error of each function, as PTOAS stops at it. These
are limits of PTOAS's VPTO pipeline, applied only when it is the command line's backend
(:func:`ptoisa.interp.verify.backend_errors`; the suite passes a RUN line's).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from ..errors import VerifyError
from ..ir.core import Op
from . import bridge
from .compiler import _literal

SLOT_LIMIT = 123
SECTION = "pto.section.simt"
_SCALARS = {"f16": 2, "bf16": 2, "f32": 4}
_VECTOR = re.compile(r"^vector<(\d+)x(\w+)>$")


class _Stop(Exception):
    def __init__(self, err: VerifyError) -> None:
        self.err = err


def _fail(op: Op, msg: str) -> _Stop:
    return _Stop(VerifyError(msg, op=op.name, loc=op.loc))


def _scalar_bytes(t: str) -> int | None:
    """Bytes of a fragment element type, None when PTOAS keeps no fragment of it."""
    if t in _SCALARS:
        return _SCALARS[t]
    m = re.fullmatch(r"[su]?i(\d+)", t)
    if m and 0 < int(m.group(1)) <= 64:
        return max(1, -(-int(m.group(1)) // 8))
    return None


def _type_bytes(t: str) -> int | None:
    """Bytes of a GEP element type (scalars, or vectors of them)."""
    m = _VECTOR.match(t)
    if m:
        b = _scalar_bytes(m.group(2))
        return None if b is None else b * int(m.group(1))
    return _scalar_bytes(t)


def _keyword_types(op: Op) -> list[str]:
    return [str(p.value) for p in op.syntax if p.kind == "k"]


@dataclass
class _Func:
    """A function's ops with their parents: where each op sits, for dominance and nesting."""

    parent: dict[int, tuple[Op | None, int, int]]  # op -> (parent op, block id, index)
    defs: dict[int, Op]
    sections: list[Op]

    @classmethod
    def of(cls, f: Op) -> _Func:
        parent: dict[int, tuple[Op | None, int, int]] = {}
        defs: dict[int, Op] = {}
        sections: list[Op] = []

        def visit(op: Op, up: Op | None, block: int, i: int) -> None:
            parent[id(op)] = (up, block, i)
            for r in op.results:
                defs[id(r)] = op
            if op.name == SECTION:
                sections.append(op)
            for region in op.regions:
                for b in region.blocks:
                    for k, inner in enumerate(b.ops):
                        visit(inner, op, id(b), k)

        for region in f.regions:
            for b in region.blocks:
                for k, op in enumerate(b.ops):
                    visit(op, None, id(b), k)
        return cls(parent, defs, sections)

    def chain(self, op: Op) -> list[tuple[int, int]]:
        """(block, index) of ``op`` and of each op enclosing it, innermost first."""
        out = []
        cur: Op | None = op
        while cur is not None:
            up, block, i = self.parent[id(cur)]
            out.append((block, i))
            cur = up
        return out

    def dominates(self, a: Op, b: Op) -> bool:
        """Structured dominance: ``a`` comes before ``b`` (or an op enclosing ``b``) in one
        block."""
        _, ablock, ai = self.parent[id(a)]
        return any(block == ablock and i > ai for block, i in self.chain(b))

    def section_of(self, op: Op) -> tuple[Op | None, list[Op]]:
        """The section around ``op`` and the ops between them (outermost first)."""
        between: list[Op] = []
        up = self.parent[id(op)][0]
        while up is not None and up.name != SECTION:
            between.insert(0, up)
            up = self.parent[id(up)][0]
        return up, between


@dataclass
class _Access:
    op: Op
    section: Op
    element: int
    store: bool


def _const(fn: _Func, v: Any, env: dict[int, int]) -> int | None:
    """The integer ``v`` holds under the loop counters ``env`` (constants and the integer
    arithmetic of index computations), None when it is not known at compile time."""
    if id(v) in env:
        return env[id(v)]
    d = fn.defs.get(id(v))
    if d is None:
        return None
    if d.name == "arith.constant":
        lit = _literal(d)
        val = None if lit is None else bridge.attr_value(lit)
        return val if isinstance(val, int) and not isinstance(val, bool) else None
    if d.name in ("arith.index_cast", "arith.index_castui", "arith.extsi", "arith.extui",
                  "arith.trunci"):
        return _const(fn, d.operands[0], env)
    ops = {"arith.addi": lambda a, b: a + b, "arith.subi": lambda a, b: a - b,
           "arith.muli": lambda a, b: a * b}
    if d.name in ops and len(d.operands) == 2:
        a, b = (_const(fn, x, env) for x in d.operands)
        return None if a is None or b is None else ops[d.name](a, b)
    return None


def _unrolled(fn: _Func, op: Op, between: list[Op]) -> list[dict[int, int]] | None:
    """The loop-counter values of each unrolled copy of ``op`` (one empty env when it is
    directly in its section), None when something between it and its section does not
    unroll away (an ``scf.if``, a loop without constant bounds)."""
    envs: list[dict[int, int]] = [{}]
    for loop in between:
        if loop.name != "scf.for" or len(loop.operands) < 3:
            return None
        iv = loop.regions[0].blocks[0].args[0]
        out = []
        for env in envs:
            lo, hi, step = (_const(fn, x, env) for x in loop.operands[:3])
            if lo is None or hi is None or step is None or step <= 0:
                return None
            out.extend({**env, id(iv): i} for i in range(lo, hi, step))
        envs = out
    return envs


def _offset(fn: _Func, ptr: Any, root: Any, env: dict[int, int]) -> int:
    """Byte offset of pointer ``ptr`` from the fragment ``root`` (through its GEPs)."""
    if ptr is root:
        return 0
    gep = fn.defs[id(ptr)]
    types = _keyword_types(gep)
    size = _type_bytes(types[-1]) if types else None
    if size is None:
        raise _fail(gep, f"persistent fragment GEP element type must have a non-zero fixed "
                         f"byte size, got {types[-1] if types else '?'}")
    idx = _const(fn, gep.operands[1], env) if len(gep.operands) == 2 else None
    if len(gep.operands) != 2:
        raise _fail(gep, "persistent SIMT fragment currently requires llvm.getelementptr to "
                         "have exactly one index")
    if idx is None:
        raise _fail(gep, "persistent fragment GEP index must be a compile-time integer "
                         "constant (after the loops around it are unrolled)")
    return _offset(fn, gep.operands[0], root, env) + idx * size


def _accesses(fn: _Func, f: Op, alloca: Op, elem: str, size: int, total: int
              ) -> list[_Access]:
    """Every access of the fragment, in section order and program order within a section
    (loops unrolled)."""
    derived = {id(alloca.results[0])}
    users: list[Op] = []
    for op in f.walk():  # (program order: a GEP's result is used after it)
        uses = [i for i, v in enumerate(op.operands) if id(v) in derived]
        if not uses:
            continue
        if op.name == "llvm.getelementptr" and uses == [0]:
            derived.add(id(op.results[0]))
        elif op.name == "llvm.getelementptr":
            raise _fail(op, "persistent SIMT fragment pointer must be the base of "
                            "llvm.getelementptr")
        elif op.name == "llvm.load" and uses == [0]:
            users.append(op)
        elif op.name == "llvm.store" and uses == [1]:
            users.append(op)
        elif op.name == "llvm.store":
            raise _fail(op, "persistent SIMT fragment pointer must not be stored as a value")
        else:
            raise _fail(op, f"unsupported use of persistent SIMT fragment pointer by "
                            f"'{op.name}'")
    out: list[_Access] = []
    for op in users:
        section, between = fn.section_of(op)
        if section is None:
            raise _fail(op, "persistent SIMT fragment access must be inside pto.section.simt")
        envs = _unrolled(fn, op, between)
        if envs is None:
            raise _fail(op, "persistent SIMT fragment access must be directly inside the "
                            "single top-level block of the pto.section.simt body (a loop "
                            "with constant bounds is unrolled there; other control flow is "
                            "not)")
        store = op.name == "llvm.store"
        t = str(op.operands[0].type) if store else str(op.results[0].type)
        lanes, scalar = 1, t
        m = _VECTOR.match(t)
        if m:
            lanes, scalar = int(m.group(1)), m.group(2)
            if lanes not in (2, 4):
                raise _fail(op, f"persistent SIMT fragment currently supports only 2- or "
                                f"4-lane vector accesses, got {lanes} lanes")
            if any(p.kind == "k" and p.value in ("volatile", "atomic") for p in op.syntax) \
                    or op.attributes.get("volatile_") is not None \
                    or op.attributes.get("ordering") is not None:
                raise _fail(op, "persistent SIMT fragment vector access cannot be volatile "
                                "or atomic")
        if _scalar_bytes(scalar) is None:
            raise _fail(op, f"persistent SIMT fragment access requires an integer scalar "
                            f"element type up to 64 bits or f16/bf16/f32, got {scalar}")
        if scalar != elem:
            raise _fail(op, f"persistent SIMT fragment access element type {scalar} must "
                            f"match alloca element type {elem}")
        for env in envs:
            at = _offset(fn, op.operands[0 if not store else 1], alloca.results[0], env)
            if at < 0 or at % size:
                raise _fail(op, f"persistent SIMT fragment byte offset {at} must be "
                                f"non-negative and aligned to element byte size {size}")
            if at + lanes * size > total:
                raise _fail(op, f"persistent SIMT fragment access at byte offset {at} "
                                + ("" if lanes == 1 else f"with {lanes} scalar lane(s) ")
                                + f"exceeds allocation size {total}")
            out.extend(_Access(op, section, at // size + k, store) for k in range(lanes))
    return out


def _dims(section: Op) -> str:
    for p in section.syntax:
        body = getattr(p.value, "body", None) if p.kind == "a" else None
        if isinstance(body, str) and body.startswith("<<"):
            return ", ".join(d.strip() for d in body.strip("<>").split(","))
    return "?"


def _residents(fn: _Func, alloca: Op, accesses: list[_Access]) -> tuple[Op, list[int]]:
    """(the init section, the fragment's resident element offsets, sorted)."""
    order = {id(s): k for k, s in enumerate(fn.sections)}
    used = sorted({id(a.section): a.section for a in accesses}.values(),
                  key=lambda s: order[id(s)])
    inits = [s for s in used if all(s is t or fn.dominates(s, t) for t in used)]
    if len(inits) > 1:
        raise _fail(alloca, "persistent SIMT fragment has multiple init section candidates "
                            "that dominate every access section")
    if not inits:
        raise _fail(alloca, "persistent SIMT fragment requires a unique init section that "
                            "dominates every access section (one section that comes before "
                            "every other accessing one on every path)")
    init = inits[0]
    resident: list[int] = []
    for a in accesses:
        if a.section is init and a.element not in resident:
            if not a.store:
                raise _fail(a.op, f"persistent SIMT fragment element offset {a.element} must "
                                  "be initialized by a store before its first load in the "
                                  "init section")
            resident.append(a.element)
    if not resident:
        raise _fail(init, "persistent SIMT fragment init section must initialize at least "
                          "one element")
    for a in accesses:
        if a.element not in resident:
            raise _fail(a.op, f"persistent SIMT fragment element offset {a.element} is not "
                              "initialized by the init section and is not part of "
                              "residentElements")
    for s in fn.sections:
        if s is not init and fn.dominates(init, s) and _dims(s) != _dims(init):
            raise _fail(s, f"persistent SIMT fragment carry section launch dimensions "
                           f"({_dims(s)}) must match init section dimensions ({_dims(init)})")
    return init, sorted(resident)


def _function_error(f: Op) -> VerifyError | None:
    allocas = [op for op in f.walk() if op.name == "llvm.alloca"
               and op.attributes.get("pto.persistent") is not None]
    if not allocas:
        return None
    try:
        if f.attributes.get("pto.entry") is None and f.attributes.get("pto.kernel") is None:
            raise _fail(allocas[0], "persistent SIMT fragment must be defined in a PTO kernel "
                                    "entry (a function marked pto.entry or pto.kernel)")
        fn = _Func.of(f)
        plans: list[tuple[Op, str, list[int]]] = []
        for alloca in allocas:
            if fn.section_of(alloca)[0] is not None:
                raise _fail(alloca, "persistent SIMT fragment must be defined outside "
                                    "pto.section.simt")
            types = _keyword_types(alloca)
            elem = types[-1] if types else "?"
            size = _scalar_bytes(elem)
            if size is None:
                raise _fail(alloca, f"persistent SIMT fragment requires an integer scalar "
                                    f"element type up to 64 bits or f16/bf16/f32, got {elem}")
            count = _const(fn, alloca.operands[0], {}) if alloca.operands else None
            if count is None:
                raise _fail(alloca, "persistent fragment element count must be a "
                                    "compile-time integer constant")
            if count <= 0:
                raise _fail(alloca, "persistent SIMT fragment element count must be positive")
            accesses = _accesses(fn, f, alloca, elem, size, count * size)
            if not accesses:
                raise _fail(alloca, "persistent SIMT fragment requires at least one llvm.load "
                                    "or llvm.store inside pto.section.simt")
            plans.append((alloca, elem, _residents(fn, alloca, accesses)[1]))
        slot = 0
        for alloca, elem, resident in plans:
            width = 2 if _scalar_bytes(elem) == 8 else 1
            for element in resident:
                at = slot + (slot % 2 if width == 2 else 0)
                if at > SLOT_LIMIT - width:
                    raise _fail(alloca, f"persistent SIMT fragment slot allocation in "
                                        f"function '{f.sym_name}' exceeds the {SLOT_LIMIT}-"
                                        f"slot limit: element offset {element} of type "
                                        f"'{elem}' needs {width} slot(s), next candidate "
                                        f"slot is {at}")
                slot = at + width
    except _Stop as stop:
        return stop.err
    return None


def fragment_errors(functions: list[Op]) -> Iterator[VerifyError]:
    """The first persistent-fragment error of each function (PTOAS stops at it)."""
    for f in functions:
        err = _function_error(f)
        if err is not None:
            yield err

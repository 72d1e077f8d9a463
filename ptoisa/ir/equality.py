"""Structural equality of IR: same ops, operands wired the same way, same types and attributes.

Source locations and SSA value names are ignored (values are compared by where they are
defined), so ``parse(print(m))`` equals ``m`` even though every location differs.
"""

from __future__ import annotations

from ptoisa.ir.core import Block, Module, Op, Region, Value


class _Keyer:
    def __init__(self) -> None:
        self.ids: dict[int, int] = {}

    def define(self, v: Value) -> tuple[object, ...]:
        self.ids[id(v)] = len(self.ids)
        return (v.type,)

    def use(self, v: Value) -> object:
        n = self.ids.get(id(v))
        return ("free", v.name) if n is None else n

    def op(self, op: Op) -> tuple[object, ...]:
        operands = tuple(self.use(v) for v in op.operands)
        results = tuple(self.define(v) for v in op.results)
        regions = tuple(self.region(r) for r in op.regions)
        syntax = tuple(
            (p.kind, frozenset(p.value) if p.kind in "dP" else p.value)  # type: ignore[arg-type]
            for p in op.syntax
        )
        written = tuple(op.operand_types) + (None,) * (len(op.operands) - len(op.operand_types))
        return (
            op.name,
            op.form,
            op.n_ins,
            op.n_outs,
            op.attr_place if op.attributes.items else "",
            operands,
            written,
            results,
            op.attributes,
            syntax,
            regions,
        )

    def block(self, b: Block) -> tuple[object, ...]:
        args = tuple(self.define(a) for a in b.args)
        return (args, tuple(self.op(o) for o in b.ops))

    def region(self, r: Region) -> tuple[object, ...]:
        return tuple(self.block(b) for b in r.blocks)


def module_key(mod: Module) -> tuple[object, ...]:
    k = _Keyer()
    return (mod.name, mod.attributes, mod.implicit, tuple(k.op(o) for o in mod.ops))


def structurally_equal(a: Module, b: Module) -> bool:
    """True when ``a`` and ``b`` are the same program up to locations and value names."""
    return module_key(a) == module_key(b)


def first_difference(a: Module, b: Module) -> str | None:
    """A short description of where two modules first differ (for test failure messages)."""
    ka, kb = module_key(a), module_key(b)
    if ka == kb:
        return None
    ops_a, ops_b = list(a.walk()), list(b.walk())
    for x, y in zip(ops_a, ops_b, strict=False):
        if x.name != y.name or x.form != y.form or x.attributes != y.attributes:
            return f"{x.loc}: {x.name}/{x.form} vs {y.loc}: {y.name}/{y.form}"
        if [v.type for v in x.results] != [v.type for v in y.results]:
            return f"{x.loc}: result types of {x.name} differ"
        if x.syntax != y.syntax and (len(x.syntax) != len(y.syntax)):
            return f"{x.loc}: spelling of {x.name} differs"
    if len(ops_a) != len(ops_b):
        return f"{len(ops_a)} ops vs {len(ops_b)} ops"
    return "operand wiring or attributes differ"

"""SSA well-formedness checks that need no instruction knowledge.

* every operand is defined, and its definition is visible at the use (defined earlier in the
  same block or in an enclosing block; a value defined inside a region is not visible after
  it; ``func.func`` bodies see nothing from outside);
* no name is defined twice where both definitions are visible;
* the type written at a use (``ins(%a : T)``, ``(T) -> ...``) equals the value's type.

Errors are :class:`~ptoisa.errors.VerifyError` located at the op (or the redefinition).
"""

from __future__ import annotations

from ptoisa.errors import VerifyError
from ptoisa.ir.core import Block, Module, Op, Region, Value
from ptoisa.ir.types import UnknownType


class _Checker:
    def __init__(self) -> None:
        self.visible: list[dict[str, Value]] = [{}]
        self.visible_ids: list[set[int]] = [set()]
        self.defined: dict[int, Value] = {}

    def define(self, v: Value) -> None:
        for scope in self.visible:
            prev = scope.get(v.name)
            if prev is not None:
                raise VerifyError(
                    f"redefinition of value '%{v.name}' (first defined at {prev.loc})",
                    loc=v.loc,
                )
        self.visible[-1][v.name] = v
        self.visible_ids[-1].add(id(v))
        self.defined[id(v)] = v

    def is_visible(self, v: Value) -> bool:
        return any(id(v) in ids for ids in self.visible_ids)

    def op(self, op: Op) -> None:
        for k, v in enumerate(op.operands):
            if not self.is_visible(v):
                if v.owner == "free":
                    msg = f"use of undefined value '%{v.name}'"
                elif id(v) in self.defined:
                    msg = (
                        f"value '%{v.name}' is not visible here (defined at {v.loc} inside a "
                        "region that does not enclose this use)"
                    )
                else:
                    msg = f"value '%{v.name}' is used before its definition at {v.loc}"
                raise VerifyError(msg, op=op.name, loc=op.loc)
            written = op.operand_types[k] if k < len(op.operand_types) else None
            if isinstance(v.type, UnknownType) and written is not None \
                    and not isinstance(written, UnknownType):
                # a result whose type the op's syntax leaves to inference (``pto.subset``'s
                # short form): its first use's written type is the type, as in MLIR, where
                # every use must agree with the definition
                v.type = written
            elif (
                written is not None
                and written != v.type
                and not isinstance(v.type, UnknownType)
                and not isinstance(written, UnknownType)
            ):
                raise VerifyError(
                    f"type mismatch for operand #{k} '%{v.name}': defined as {v.type}, "
                    f"used as {written}",
                    op=op.name,
                    loc=op.loc,
                )
        if op.name == "func.func":
            saved = (self.visible, self.visible_ids)
            self.visible, self.visible_ids = [{}], [set()]
            try:
                for r in op.regions:
                    self.region(r)
            finally:
                self.visible, self.visible_ids = saved
        else:
            for r in op.regions:
                self.region(r)
        for v in op.results:
            self.define(v)

    def region(self, region: Region) -> None:
        blocks = region.blocks
        doms = dominators(region) if len(blocks) > 1 else [[]]
        for block, dom in zip(blocks, doms, strict=True):
            # the values of the blocks that dominate this one are visible in it (a region's
            # entry block dominates every block; a block of one region, only itself)
            for d in dom:
                self.visible.append({v.name: v for v in _top_values(blocks[d])})
                self.visible_ids.append({id(v) for v in _top_values(blocks[d])})
            self.visible.append({})
            self.visible_ids.append(set())
            for a in block.args:
                self.define(a)
            for op in block.ops:
                self.op(op)
            for _ in range(len(dom) + 1):
                self.visible.pop()
                self.visible_ids.pop()


def _top_values(block: Block) -> list[Value]:
    return list(block.args) + [r for op in block.ops for r in op.results]


def successors(block: Block) -> list[str]:
    """The labels the block's last op branches to (``cf.br ^bb1``, ``cf.cond_br``)."""
    if not block.ops:
        return []
    return [str(p.value) for p in block.ops[-1].syntax if p.kind == "s"]


def dominators(region: Region) -> list[list[int]]:
    """Per block, the indices of the other blocks that dominate it (every path from the entry
    block to it passes through them). VerifyError for a branch to a label the region does not
    have, or to the entry block (which has no predecessors)."""
    blocks = region.blocks
    index = {b.label: k for k, b in enumerate(blocks) if b.label is not None}
    preds: list[set[int]] = [set() for _ in blocks]
    for k, b in enumerate(blocks):
        for label in successors(b):
            j = index.get(label)
            if j is None or j == 0:
                last = b.ops[-1]
                why = "no block" if j is None else "the entry block, which"
                raise VerifyError(f"branch to ^{label}: {why} "
                                  f"{'has that label' if j is None else 'cannot be a target'}",
                                  op=last.name, loc=last.loc)
            preds[j].add(k)
    everything = set(range(len(blocks)))
    dom = [{0}] + [set(everything) for _ in blocks[1:]]
    changed = True
    while changed:
        changed = False
        for k in range(1, len(blocks)):
            new = {k} | (set.intersection(*(dom[p] for p in preds[k])) if preds[k] else set())
            if new != dom[k]:
                dom[k], changed = new, True
    return [sorted(d - {k}) for k, d in enumerate(dom)]


def verify_ssa(module: Module) -> None:
    """Raise VerifyError on the first SSA violation in ``module`` (see module docstring)."""
    checker = _Checker()
    for op in module.ops:
        checker.op(op)

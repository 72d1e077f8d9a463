"""Where a ``.pto`` op sits in its function: the ``scf.if`` / ``scf.for`` around it, so that a
fix note names a place where a flag is correct (after the loop that holds the producer, not
the producer inside it).

Every :class:`~ptoisa.interp.Program` registers its module here; a location is looked up in
the latest module registered for its file name, and only when the op found there is the op
the finding names (else the note falls back to naming the two instructions)."""

from __future__ import annotations

from typing import Any

from ..errors import SourceLoc

#: file name -> the latest module registered for it (the latest _KEEP file names)
_MODULES: dict[str, Any] = {}
_KEEP = 64
#: id(module) -> (line, col) -> the op's place: [(block's ops, index)], outermost first
_INDEX: dict[int, dict[tuple[int, int], list[tuple[Any, int]]]] = {}

LOOPS = ("scf.for", "scf.while")


def _held(module: Any) -> bool:
    return any(m is module for m in _MODULES.values())


def register(module: Any) -> None:
    files = {op.loc.file for op in module.ops if getattr(op, "loc", None) is not None}
    for f in files:
        old = _MODULES.pop(f, None)
        if old is not None and old is not module and not _held(old):
            _INDEX.pop(id(old), None)
        _MODULES[f] = module
    while len(_MODULES) > _KEEP:
        f = next(iter(_MODULES))
        old = _MODULES.pop(f)
        if not _held(old):
            _INDEX.pop(id(old), None)


def _index(module: Any) -> dict[tuple[int, int], list[tuple[Any, int]]]:
    idx = _INDEX.get(id(module))
    if idx is None:
        idx = _INDEX[id(module)] = {}

        def walk(ops: Any, outer: list[tuple[Any, int]]) -> None:
            for i, op in enumerate(ops):
                here = [*outer, (ops, i)]
                if op.loc is not None:
                    idx.setdefault((op.loc.line, op.loc.col), here)
                for r in op.regions:
                    for b in r.blocks:
                        walk(b.ops, here)
        walk(module.ops, [])
    return idx


def place(loc: Any, name: str) -> list[tuple[Any, int]] | None:
    """The blocks around the op ``name`` at ``loc`` (outermost first; the last is its own
    block and index), or None when no registered module has that op there."""
    if not isinstance(loc, SourceLoc):
        return None
    module = _MODULES.get(loc.file)
    if module is None:
        return None
    got = _index(module).get((loc.line, loc.col))
    if got is None:
        return None
    ops, i = got[-1]
    # (a finding may name the instruction's mnemonic: pto.tmatmul_acc for pto.tmatmul.acc)
    return got if ops[i].name.replace(".", "_") == name.replace(".", "_") else None


def placement(prod: tuple[Any, str], cons: tuple[Any, str]) -> tuple[Any, Any, Any] | None:
    """For a producer and a consumer (each (loc, op name)) of one function: the op holding the
    producer and the op holding the consumer in the innermost block holding both (either may
    be the instruction itself), and the innermost loop around that block when the producer's
    op is not before the consumer's there (they meet across its iterations; None if there is
    no such loop). None when either op is not found."""
    pa, pb = place(*prod), place(*cons)
    if pa is None or pb is None:
        return None
    depth, n = 0, min(len(pa), len(pb))
    while depth + 1 < n and pa[depth][0] is pb[depth][0] and pa[depth][1] == pb[depth][1]:
        depth += 1  # the same op holds both: look inside it
    if depth == 0 or pa[depth][0] is not pb[depth][0]:
        return None  # (two functions: a call between them, no one block to name)
    ops = pa[depth][0]
    p, c = ops[pa[depth][1]], ops[pb[depth][1]]
    loop = None
    if pa[depth][1] >= pb[depth][1]:
        loop = next((blk[i] for blk, i in reversed(pa[:depth]) if blk[i].name in LOOPS), None)
    return p, c, loop

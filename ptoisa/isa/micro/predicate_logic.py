"""Predicate logic (micro-isa/05-materialization-predicate.md): ``pto.pnot`` and
``pto.psel``, lane by lane at the operands' granularity."""

from __future__ import annotations

from typing import Any

from ...enums import Pipe
from ...vector.regs import Mask
from ..registry import Opnd, instr


@instr("PNOT", pipe=Pipe.V, dialect="vpto",
       operands=(Opnd("input", "mask"), Opnd("mask", "mask")),
       results=(Opnd("result", "mask"),))
def PNOT(m: Any, input: Mask, mask: Mask) -> Mask:  # noqa: A002
    """result[i] = mask[i] ? !input[i] : 0, over mask's lanes."""
    return Mask.of_lanes(mask.lanes() & ~input.lanes(len(mask.lanes())), mask.gran)


@instr("PSEL", pipe=Pipe.V, dialect="vpto",
       operands=(Opnd("src0", "mask"), Opnd("src1", "mask"), Opnd("sel", "mask")),
       results=(Opnd("result", "mask"),))
def PSEL(m: Any, src0: Mask, src1: Mask, sel: Mask) -> Mask:
    """result[i] = sel[i] ? src0[i] : src1[i], over sel's lanes."""
    n = len(sel.lanes())
    s = sel.lanes()
    return Mask.of_lanes((s & src0.lanes(n)) | (~s & src1.lanes(n)), sel.gran)

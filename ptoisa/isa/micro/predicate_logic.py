"""Predicate logic (micro-isa/05-materialization-predicate.md): ``pto.pnot`` and
``pto.psel``, lane by lane at the operands' granularity; ``pto.pintlv_b*`` /
``pto.pdintlv_b*`` (lanes interleaved / de-interleaved as ``vintlv`` / ``vdintlv`` do with
register lanes) and ``pto.pbitcast`` (09-conversion-ops.md: the same predicate bits, another
granularity)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...enums import Pipe
from ...errors import ExecutionError
from ...vector.regs import Mask
from ..registry import Opnd, Param, instr


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


# ---- interleave / de-interleave, reinterpretation (05 and 09-conversion-ops.md) -----------------

def _intlv(gran: str, de: bool) -> Any:
    name = f"P{'D' if de else ''}INTLV_{gran.upper()}"

    def impl(m: Any, src0: Mask, src1: Mask) -> tuple[Mask, Mask]:
        a, b = src0.lanes(), src1.lanes()
        n = a.size
        if de:  # the 2n lanes src0 ++ src1: low = the even ones, high = the odd ones
            both = np.concatenate([a, b])
            return Mask.of_lanes(both[0::2], gran), Mask.of_lanes(both[1::2], gran)
        both = np.empty(2 * n, np.bool_)  # src0[0], src1[0], src0[1], ...: low, then high
        both[0::2], both[1::2] = a, b
        return Mask.of_lanes(both[:n], gran), Mask.of_lanes(both[n:], gran)

    impl.__name__ = impl.__qualname__ = name
    impl.__doc__ = ("low / high = the even / odd lanes of src0 followed by src1 (the inverse "
                    "of pintlv)." if de else
                    "src0[0], src1[0], src0[1], src1[1], ...: its first half is low, its "
                    "second half high (as vintlv on registers).")
    impl.__module__ = __name__
    return instr(name, pipe=Pipe.V, dialect="vpto",
                 operands=(Opnd("src0", "mask"), Opnd("src1", "mask")),
                 results=(Opnd("low", "mask"), Opnd("high", "mask")))(impl)


PINTLV_B8, PINTLV_B16, PINTLV_B32 = (_intlv(g, False) for g in ("b8", "b16", "b32"))
PDINTLV_B8, PDINTLV_B16, PDINTLV_B32 = (_intlv(g, True) for g in ("b8", "b16", "b32"))


@instr("PBITCAST", pipe=Pipe.V, dialect="vpto", operands=(Opnd("input", "mask"),),
       params=(Param("result_type", None),), results=(Opnd("result", "mask"),))
def PBITCAST(m: Any, input: Mask, *, result_type: Any = None) -> Mask:  # noqa: A002
    """The same 256 predicate bits read at the result's granularity (09-conversion-ops.md:
    "does not materialize or normalize predicate contents"): a b32 lane j is bit 4j."""
    gran = getattr(result_type, "gran", None)
    if gran is None:
        raise ExecutionError(f"pto.pbitcast: the result must be a !pto.mask<...>, got "
                             f"{result_type}")
    return Mask(input.bits.copy(), gran)


__all__ = ["PBITCAST", "PDINTLV_B8", "PDINTLV_B16", "PDINTLV_B32", "PINTLV_B8", "PINTLV_B16",
           "PINTLV_B32", "PNOT", "PSEL"]

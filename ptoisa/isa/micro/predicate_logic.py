"""Predicate logic (micro-isa/05-materialization-predicate.md): ``pto.pnot`` and
``pto.psel``, lane by lane at the operands' granularity; ``pto.pintlv_b*`` /
``pto.pdintlv_b*`` (lanes interleaved / de-interleaved as ``vintlv`` / ``vdintlv`` do with
register lanes), ``pto.ppack`` / ``pto.punpack`` (the register's bits halved / doubled, one
granularity step) and ``pto.pbitcast`` (09-conversion-ops.md: the same predicate bits, another
granularity)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...enums import Pipe
from ...errors import ExecutionError
from ...ptoas_source import SourceRule, source_rule
from ...vector.regs import VREG_BYTES, Mask, MaskSpec
from ..registry import Opnd, Param, Sig, instr


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


# ---- pack / unpack (05: "Predicate Pack/Unpack") --------------------------------------------

#: the granularity one step narrower / wider (PTOAS's verifier: the result's granularity is
#: the input's or one step away, narrower for ppack, wider for punpack)
_NARROWER = {"b32": "b16", "b16": "b8"}
_WIDER = {"b8": "b16", "b16": "b32"}
#: PpackOp::verify / PunpackOp::verify: the part token
_PTOAS_PPACK_PART = source_rule("lib/PTO/IR/VPTO.cpp:PpackOp::verify",
                                "requires part to be LOWER or HIGHER", ("a5",))
_PTOAS_PUNPACK_PART = source_rule("lib/PTO/IR/VPTO.cpp:PunpackOp::verify",
                                  "requires part to be LOWER or HIGHER", ("a5",))


def _pack_static(op: str, steps: dict[str, str], part_rule: SourceRule) -> Any:
    def rule(sig: Sig) -> None:
        part = sig.params.get("part")
        if part is not None and str(part) not in ("LOWER", "HIGHER"):
            raise sig.fail(f"part = \"{part}\": it is LOWER or HIGHER", ptoas=part_rule)
        src, t = sig["input"], sig.params.get("result_type")
        if t is not None and not isinstance(t, MaskSpec):
            raise sig.fail(f"the result must be a !pto.mask<...>, got {t}")
        if isinstance(src, MaskSpec) and isinstance(t, MaskSpec) and t.gran != src.gran \
                and steps.get(src.gran) != t.gran:
            raise sig.fail(f"input mask type {src} does not match result mask type {t} for "
                           f"pto.{op}")
    return rule


def _result_gran(input: Mask, result_type: Any) -> str:  # noqa: A002
    return input.gran if result_type is None else str(result_type.gran)


@instr("PPACK", pipe=Pipe.V, dialect="vpto", operands=(Opnd("input", "mask"),),
       params=(Param("part", "LOWER"), Param("result_type", None)),
       results=(Opnd("result", "mask"),),
       static=(_pack_static("ppack", _NARROWER, _PTOAS_PPACK_PART),))
def PPACK(m: Any, input: Mask, *, part: str = "LOWER",  # noqa: A002
          result_type: Any = None) -> Mask:
    """The 256 predicate bits' even ones (one of each adjacent pair) packed into the LOWER or
    HIGHER half of the result, the other half zero: at one granularity ``result[i] =
    input[2i]`` for the first (LOWER) or last (HIGHER) half of the lanes; one step narrower
    (b32 -> b16, b16 -> b8), each input lane becomes the result lane of the same index."""
    half = VREG_BYTES // 2
    bits = np.zeros(VREG_BYTES, np.bool_)
    lo = 0 if str(part) == "LOWER" else half
    bits[lo:lo + half] = input.bits[0::2]
    return Mask(bits, _result_gran(input, result_type))


@instr("PUNPACK", pipe=Pipe.V, dialect="vpto", operands=(Opnd("input", "mask"),),
       params=(Param("part", "LOWER"), Param("result_type", None)),
       results=(Opnd("result", "mask"),),
       static=(_pack_static("punpack", _WIDER, _PTOAS_PUNPACK_PART),))
def PUNPACK(m: Any, input: Mask, *, part: str = "LOWER",  # noqa: A002
            result_type: Any = None) -> Mask:
    """The LOWER or HIGHER half of the 256 predicate bits spread to the even bits of the
    result, the odd ones zero: at one granularity ``result[2i] = input[i]`` (LOWER) or
    ``input[VL/2 + i]`` (HIGHER), ``result[2i+1] = 0``; one step wider (b8 -> b16,
    b16 -> b32), each result lane is the input lane of the same index (of that half)."""
    half = VREG_BYTES // 2
    bits = np.zeros(VREG_BYTES, np.bool_)
    lo = 0 if str(part) == "LOWER" else half
    bits[0::2] = input.bits[lo:lo + half]
    return Mask(bits, _result_gran(input, result_type))


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
           "PINTLV_B32", "PNOT", "PPACK", "PSEL", "PUNPACK"]

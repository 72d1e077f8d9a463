"""Data rearrangement (micro-isa/12-data-rearrangement.md): register contents moved between
lanes, no memory access.

* ``vintlv`` / ``vdintlv`` - interleave two registers (low = lhs[0], rhs[0], lhs[1], ...;
  high the same from lane N/2) and its inverse (lhs then rhs as one stream: low its even
  elements, high its odd ones).
* ``vsqz`` - the active lanes packed to the front in lane order, the rest 0.
* ``vusqz`` - result[i] = the number of active lanes before lane i.
* ``vpack`` - each lane truncated to half its width (i32 / ui32 -> ui16, i16 / ui16 -> ui8)
  into the ``LOWER`` or ``HIGHER`` half of the result, the other half 0.
* ``vsunpack`` / ``vzunpack`` - half ``part`` (0 the low lanes, 1 the high ones) of a narrow
  register sign- / zero-extended to lanes of twice the width.

``vintlvv2`` / ``vdintlvv2`` (the page records only their operand shape) are not declared:
refused by name."""

from __future__ import annotations

from typing import Any

import numpy as np

from ... import dtypes as D
from ...enums import Pipe
from ...errors import ExecutionError
from ...vector.regs import Mask, VReg, VRegSpec, vreg_spec
from ..registry import Instr, Opnd, Param, Sig, instr
from .common import active, mask_fits, same_vreg

_PAIR = (Opnd("low", "vreg"), Opnd("high", "vreg"))


@instr("VINTLV", pipe=Pipe.V, dialect="vpto",
       operands=(Opnd("lhs", "vreg"), Opnd("rhs", "vreg")), results=_PAIR,
       dtype_key=("lhs",), static=(same_vreg("lhs", "rhs", "low", "high"),))
def VINTLV(m: Any, lhs: VReg, rhs: VReg) -> tuple[VReg, VReg]:
    """low = {lhs[0], rhs[0], lhs[1], rhs[1], ...} over lanes 0..N/2-1, high the same over
    lanes N/2..N-1."""
    both = np.stack([lhs.data, rhs.data], axis=1).reshape(-1)
    n = lhs.data.size
    return VReg(both[:n].copy()), VReg(both[n:].copy())


@instr("VDINTLV", pipe=Pipe.V, dialect="vpto",
       operands=(Opnd("lhs", "vreg"), Opnd("rhs", "vreg")), results=_PAIR,
       dtype_key=("lhs",), static=(same_vreg("lhs", "rhs", "low", "high"),))
def VDINTLV(m: Any, lhs: VReg, rhs: VReg) -> tuple[VReg, VReg]:
    """With s = lhs followed by rhs: low = s[0], s[2], s[4], ... and high = s[1], s[3], ...
    (the inverse of vintlv)."""
    s = np.concatenate([lhs.data, rhs.data])
    return VReg(s[0::2].copy()), VReg(s[1::2].copy())


@instr("VSQZ", pipe=Pipe.V, dialect="vpto",
       operands=(Opnd("src", "vreg"), Opnd("mask", "mask")), results=(Opnd("result", "vreg"),),
       dtype_key=("src",), static=(same_vreg("src", "result"), mask_fits("src")))
def VSQZ(m: Any, src: VReg, mask: Mask) -> VReg:
    """The active lanes of src in lane order at the front of the result, the rest 0; SPR
    SQZN = the bytes of those lanes."""
    kept = src.data[active(mask, src.data.size)]
    out = np.zeros_like(src.data)
    out[:kept.size] = kept
    # SPR SQZN: the bytes the squeeze kept, which a later pto.vstur stores (03-vector-load-
    # store.md: "a preceding squeeze producer such as pto.vsqz ... MUST establish the byte
    # count before the store")
    m.micro_regs["SQZN"] = kept.size * src.data.dtype.itemsize
    return VReg(out)


def _signed_int(sig: Sig) -> None:
    s = sig["src"]
    if isinstance(s, VRegSpec) and s.dtype.name not in ("i8", "i16", "i32"):
        raise sig.fail(f"src is {s}: vusqz takes si8, si16 or si32 lanes")


@instr("VUSQZ", pipe=Pipe.V, dialect="vpto",
       operands=(Opnd("src", "vreg"), Opnd("mask", "mask")), results=(Opnd("result", "vreg"),),
       dtype_key=("src",), static=(same_vreg("src", "result"), mask_fits("src"), _signed_int))
def VUSQZ(m: Any, src: VReg, mask: Mask) -> VReg:
    """result[0] = 0, result[i] = the number of active lanes among 0..i-1 (src gives only
    the type)."""
    on = active(mask, src.data.size).astype(np.int64)
    out = np.concatenate([[0], np.cumsum(on)[:-1]])
    return VReg(out.astype(src.data.dtype))


#: vpack's narrowing: source element type -> result element type
PACK = {"i32": "ui16", "ui32": "ui16", "i16": "ui8", "ui16": "ui8"}


def _result_spec(result_type: Any, fallback: VRegSpec) -> VRegSpec:
    if isinstance(result_type, VRegSpec):
        return result_type
    if isinstance(result_type, str):
        spec = vreg_spec(result_type)
        if spec is not None:
            return spec
    return fallback


def _pack_types(sig: Sig) -> None:
    s, r = sig["src"], sig["result"]
    if isinstance(s, VRegSpec):
        want = PACK.get(s.dtype.name)
        if want is None:
            raise sig.fail(f"src is {s}: vpack narrows i32 / ui32 to ui16 and i16 / ui16 to "
                           "ui8")
        if isinstance(r, VRegSpec) and r.dtype.itemsize != D.dtype(want).itemsize:
            raise sig.fail(f"result is {r}: {s} packs into {want} lanes")


@instr("VPACK", pipe=Pipe.V, dialect="vpto", operands=(Opnd("src", "vreg"),),
       params=(Param("part", "LOWER"), Param("result_type", None)),
       results=(Opnd("result", "vreg"),), dtype_key=("src",), static=(_pack_types,))
def VPACK(m: Any, src: VReg, *, part: str = "LOWER", result_type: Any = None) -> VReg:
    """result lanes [0, N) (``LOWER``) or [N, 2N) (``HIGHER``) = src's lanes truncated to
    their low half (two's complement bits), the other half 0."""
    want = PACK.get(src.dtype.name)
    if want is None:
        raise ExecutionError(f"pto.vpack narrows i32 / ui32 / i16 / ui16 lanes, not "
                             f"{src.dtype.name}")
    to = _result_spec(result_type, VRegSpec(2 * src.data.size, D.dtype(want)))
    if str(part) not in ("LOWER", "HIGHER"):
        raise ExecutionError(f"pto.vpack: part {part!r} is not LOWER or HIGHER")
    n = src.data.size
    narrow = src.data.view(np.dtype(f"u{src.data.dtype.itemsize}")).astype(
        np.dtype(f"u{src.data.dtype.itemsize // 2}"))
    out = np.zeros(2 * n, narrow.dtype)
    out[(0 if str(part) == "LOWER" else n):][:n] = narrow
    return VReg(out.view(to.dtype.np))


def _unpack(name: str, signed: bool) -> Instr:
    def impl(m: Any, src: VReg, part: Any, *, result_type: Any = None) -> VReg:
        x = src.data
        w = x.dtype.itemsize
        if w not in (1, 2):
            raise ExecutionError(f"pto.{name.lower()} widens 8- or 16-bit lanes, not "
                                 f"{src.dtype.name}")
        p = int(part)
        if p not in (0, 1):
            raise ExecutionError(f"pto.{name.lower()}: part {p} is not 0 or 1")
        half = x.size // 2
        piece = x[p * half:(p + 1) * half].view(np.dtype(f"{'i' if signed else 'u'}{w}"))
        wide = piece.astype(np.dtype(f"{'i' if signed else 'u'}{2 * w}"))
        fallback = VRegSpec(half, D.dtype(wide.dtype))
        to = _result_spec(result_type, fallback)
        if to.dtype.itemsize != 2 * w:
            raise ExecutionError(f"pto.{name.lower()}: result {to} is not {2 * w}-byte lanes")
        return VReg(wide.view(to.dtype.np))

    impl.__doc__ = (f"result[i] = src[part * N/2 + i] {'sign' if signed else 'zero'}-extended "
                    "to twice its width (part 0: the low half, 1: the high half).")
    impl.__module__ = __name__
    return instr(name, pipe=Pipe.V, dialect="vpto",
                 operands=(Opnd("src", "vreg"), Opnd("part", "scalar")),
                 params=(Param("result_type", None),), results=(Opnd("result", "vreg"),),
                 dtype_key=("src",))(impl)


VSUNPACK = _unpack("VSUNPACK", signed=True)
VZUNPACK = _unpack("VZUNPACK", signed=False)

__all__ = ["PACK", "VDINTLV", "VINTLV", "VPACK", "VSQZ", "VSUNPACK", "VUSQZ", "VZUNPACK"]

"""Conversion ops (micro-isa/09-conversion-ops.md): ``pto.vbitcast`` so far; ``pto.vcvt``
and the others are refused by name until they are declared here."""

from __future__ import annotations

from typing import Any

from ...enums import Pipe
from ...errors import ExecutionError
from ...vector.regs import VREG_BYTES, VReg, VRegSpec, vreg_spec
from ..registry import Opnd, Param, Sig, instr


def _to(result_type: Any) -> VRegSpec:
    if isinstance(result_type, VRegSpec):
        return result_type
    spec = vreg_spec(str(result_type)) if isinstance(result_type, str) else None
    if spec is None:
        raise ExecutionError(f"result_type must be a !pto.vreg type, got "
                             f"{result_type!r}")
    return spec


def _same_bits(sig: Sig) -> None:
    t = sig.params.get("result_type")
    if t is not None and not isinstance(t, VRegSpec):
        raise sig.fail(f"the result must be a !pto.vreg, got {t}")


@instr("VBITCAST", pipe=Pipe.V, dialect="vpto", operands=(Opnd("input", "vreg"),),
       params=(Param("result_type", None),), results=(Opnd("result", "vreg"),),
       static=(_same_bits,))
def VBITCAST(m: Any, input: VReg, *, result_type: Any = None) -> VReg:  # noqa: A002
    """result = input's 256 bytes read as result_type's lanes (the bits unchanged)."""
    to = _to(result_type)
    if input.data.nbytes != VREG_BYTES:
        raise ExecutionError(f"the input holds {input.data.nbytes} bytes")
    return VReg(input.data.view(to.dtype.np))

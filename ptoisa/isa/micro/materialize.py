"""Scalar materialization (micro-isa/05-materialization-predicate.md): ``pto.vbr`` (a scalar
to every lane) and ``pto.vdup`` (a scalar, or a register's lowest / highest lane, to the
active lanes; inactive lanes zero)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...enums import Pipe
from ...errors import ExecutionError
from ...vector.regs import Mask, VReg, VRegSpec, vreg_spec
from ..registry import Opnd, Param, instr
from .common import scalar_as, zeroing


def _spec(result_type: Any, op: str) -> VRegSpec:
    if isinstance(result_type, VRegSpec):
        return result_type
    spec = vreg_spec(result_type) if isinstance(result_type, str) else None
    if spec is None:
        raise ExecutionError(f"result_type must be a !pto.vreg type, got {result_type!r}")
    return spec


@instr("VBR", pipe=Pipe.V, dialect="vpto", operands=(Opnd("value", "scalar"),),
       params=(Param("result_type", None),), results=(Opnd("result", "vreg"),), rows=True)
def VBR(m: Any, value: Any, *, result_type: Any = None) -> VReg:
    """result[i] = value for every lane, as the result's element type (8-bit lanes take the
    value's low 8 bits)."""
    to = _spec(result_type, "vbr")
    return VReg(np.full(to.lanes, scalar_as(value, to.dtype, "value"), to.dtype.np))


@instr("VDUP", pipe=Pipe.V, dialect="vpto",
       operands=(Opnd("input", "any"), Opnd("mask", "mask")),
       params=(Param("position", "LOWEST"), Param("result_type", None)),
       results=(Opnd("result", "vreg"),), rows=True)
def VDUP(m: Any, input: Any, mask: Mask, *, position: str = "LOWEST",  # noqa: A002
         result_type: Any = None) -> VReg:
    """result[i] = the scalar input, or the input register's lowest (``LOWEST``) or highest
    (``HIGHEST``) lane, on active lanes; 0 elsewhere."""
    if isinstance(input, VReg):
        if str(position) not in ("LOWEST", "HIGHEST"):
            raise ExecutionError(f"position {position!r} (LOWEST or HIGHEST)")
        # (rows of registers, one per iteration of a batched loop: each row's own lane)
        x = input.data
        v = x[..., :1] if str(position) == "LOWEST" else x[..., -1:]
        return zeroing(np.broadcast_to(v, x.shape).copy(), mask)
    to = _spec(result_type, "vdup")
    return zeroing(np.full(to.lanes, scalar_as(input, to.dtype, "input"), to.dtype.np), mask)

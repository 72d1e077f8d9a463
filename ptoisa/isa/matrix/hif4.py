"""TMATMUL_MX_HIF4: declared so programs can name it; not modelled (see _HIF4_WHY)."""

from __future__ import annotations

from typing import Any

from ...enums import AccPhase, Pipe
from ...errors import PtoError
from ...memory import Machine
from ..registry import Opnd, Param, Sig, instr
from ..spelling import Attr, Ptoas

_HIF4_WHY = (
    "TMATMUL_MX_HIF4 (TMATMUL_MX with hifloat4x2_t operands) is not modelled: it is an A6 "
    "(dav-920r1) instruction, outside the cpu/a2a3/a5 targets, and the manual "
    "(TMATMUL_MX_HIF4.md) defines neither the HiF4 element encoding nor how the three scale "
    "levels (Ea e6m2 per 64 elements, Eb one bit per 8, Ec two bits per 4) combine with the "
    "elements ('applied internally'); only the scale byte layout is given")


def _not_modelled(sig: Sig) -> None:
    raise sig.fail(_HIF4_WHY)


@instr("TMATMUL_MX_HIF4", family="matrix", pipe=Pipe.M,
       ptoas=Ptoas(op="pto.tmatmul.mx.hif4", attrs={"accPhase": Attr("Phase")}),
       operands=(Opnd("cMatrix", "tile", "out"), Opnd("aMatrix", "tile"),
                 Opnd("aScaleMatrix", "tile"), Opnd("bMatrix", "tile"),
                 Opnd("bScaleMatrix", "tile"), Opnd("biasData", "tile", optional=True)),
       params=(Param("Phase", AccPhase.Unspecified, AccPhase),),
       dtype_key=(), static=(_not_modelled,))
def TMATMUL_MX_HIF4(m: Machine, *vals: Any, Phase: AccPhase) -> None:  # noqa: N802,N803
    """HiF4 microscaled GEMM (declared so programs name it; every use is rejected with the
    reason it is not modelled)."""
    raise PtoError(_HIF4_WHY)

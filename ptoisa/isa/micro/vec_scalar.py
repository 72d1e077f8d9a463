"""Vector-scalar ops (micro-isa/08-vec-scalar-ops.md): ``%r = pto.vadds %input, %scalar,
%mask``: the scalar, as one element of the register's type, against every lane.

Active lanes get the op's value, inactive lanes zero (the native predication). The shift
ops take an ``i16`` amount."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ...enums import Pipe
from ...vector.regs import Mask, VReg
from ..registry import Instr, Opnd, instr
from ..rules import npu_max, npu_min
from .binary import _shl, _shr
from .common import elementwise, mask_fits, same_vreg, scalar_as, zeroing


def _vec_scalar(name: str, fn: Callable[[Any, Any], Any], doc: str, shift: bool = False
                ) -> Instr:
    def impl(m: Any, input: VReg, scalar: Any, mask: Mask) -> VReg:  # noqa: A002
        dt = input.dtype
        if shift:
            amount = np.full(input.data.shape, int(scalar), np.int64)
            return zeroing(elementwise(fn, dt, input.data, amount), mask)
        s = np.full(input.data.shape, scalar_as(scalar, dt, "scalar"), dt.np)
        return zeroing(elementwise(fn, dt, input.data, s), mask)

    impl.__doc__ = doc
    impl.__module__ = __name__
    return instr(name, pipe=Pipe.V, dialect="vpto",
                 operands=(Opnd("input", "vreg"), Opnd("scalar", "scalar"),
                           Opnd("mask", "mask")),
                 results=(Opnd("result", "vreg"),), dtype_key=("input",),
                 static=(same_vreg("input", "result"), mask_fits("input")), rows=True)(impl)


def _lrelu(a: np.ndarray, s: np.ndarray) -> np.ndarray:
    return np.where(a >= 0, a, s * a)


VADDS = _vec_scalar("VADDS", np.add, "result[i] = input[i] + scalar on active lanes, 0 "
                    "elsewhere.")
VMULS = _vec_scalar("VMULS", np.multiply, "result[i] = input[i] * scalar on active lanes, 0 "
                    "elsewhere.")
VMAXS = _vec_scalar("VMAXS", npu_max, "result[i] = max(input[i], scalar) on active lanes "
                    "(as vmax: NaN wins, of +0 and -0 the scalar), 0 elsewhere.")
VMINS = _vec_scalar("VMINS", npu_min, "result[i] = min(input[i], scalar) on active lanes "
                    "(as vmin: NaN wins, of +0 and -0 the scalar), 0 elsewhere.")
VLRELU = _vec_scalar("VLRELU", _lrelu, "result[i] = input[i] >= 0 ? input[i] : scalar * "
                     "input[i] on active lanes, 0 elsewhere.")
VSHLS = _vec_scalar("VSHLS", _shl, "result[i] = input[i] << scalar (an i16 amount) on active "
                    "lanes, 0 elsewhere; an amount outside [0, width) gives 0.", shift=True)
VSHRS = _vec_scalar("VSHRS", _shr, "result[i] = input[i] >> scalar (an i16 amount; arithmetic "
                    "for signed lanes, logical for unsigned ones) on active lanes, 0 "
                    "elsewhere.", shift=True)

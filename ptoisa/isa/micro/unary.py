"""Unary vector ops (micro-isa/06-unary-vector-ops.md): ``%r = pto.vabs %input, %mask``.

Active lanes get the op's value, inactive lanes zero (the native predication; the page's
merging forms are not PTO ops). 16-bit floats compute in f32 and round once (f32 lanes of
vexp / vln in f64, as TEXP / TLOG); NaN, infinities and integer wrap-around are results,
never warnings."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ...enums import Pipe
from ...vector.regs import Mask, VReg
from ..registry import Instr, Opnd, instr
from .common import elementwise, mask_fits, on_bits, same_vreg, zeroing


def _unary(name: str, fn: Callable[[Any], Any], doc: str, bitwise: bool = False,
           rounded: bool = False) -> Instr:
    def impl(m: Any, input: VReg, mask: Mask) -> VReg:  # noqa: A002 - the page's name
        if bitwise:
            return zeroing(on_bits(fn, input.data), mask)
        if rounded and input.data.dtype == np.float32:
            # f32 lanes of a transcendental: computed in f64 and rounded once (numpy's own
            # f32 exp / log differ by an ulp between its SIMD paths), the values TEXP / TLOG
            # give (isa/elementwise: ``wide``)
            with np.errstate(all="ignore"):
                out = fn(input.data.astype(np.float64)).astype(np.float32)
            return zeroing(out, mask)
        return zeroing(elementwise(fn, input.dtype, input.data), mask)

    impl.__doc__ = doc
    impl.__module__ = __name__
    return instr(name, pipe=Pipe.V, dialect="vpto",
                 operands=(Opnd("input", "vreg"), Opnd("mask", "mask")),
                 results=(Opnd("result", "vreg"),), dtype_key=("input",),
                 static=(same_vreg("input", "result"), mask_fits("input")), rows=True)(impl)


def _relu(a: np.ndarray) -> np.ndarray:
    return np.where(a > 0, a, a.dtype.type(0))


VABS = _unary("VABS", np.abs, "result[i] = |input[i]| on active lanes, 0 elsewhere (the most "
              "negative integer stays itself).")
VNEG = _unary("VNEG", np.negative, "result[i] = -input[i] on active lanes, 0 elsewhere.")
VEXP = _unary("VEXP", np.exp, "result[i] = e^input[i] on active lanes, 0 elsewhere.",
              rounded=True)
VLN = _unary("VLN", np.log, "result[i] = ln(input[i]) on active lanes (NaN below 0, -inf at "
             "0), 0 elsewhere.", rounded=True)
VSQRT = _unary("VSQRT", np.sqrt, "result[i] = sqrt(input[i]) on active lanes (NaN below 0), "
               "0 elsewhere.")
VRELU = _unary("VRELU", _relu, "result[i] = max(input[i], 0) on active lanes, 0 elsewhere.")
VNOT = _unary("VNOT", np.invert, "result[i] = ~input[i] on the lanes' bits on active lanes, 0 "
              "elsewhere.", bitwise=True)

"""Binary vector ops (micro-isa/07-binary-vector-ops.md): ``%r = pto.vadd %lhs, %rhs, %mask``.

Every op computes its active lanes and zeroes the others (the native predication). Floats
of 16 bits compute in f32 and round once; integers wrap (two's complement)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ...enums import Pipe
from ...errors import ExecutionError
from ...vector.regs import Mask, VReg
from ..registry import Instr, Opnd, instr
from ..rules import npu_max, npu_min
from .common import active, elementwise, mask_fits, on_bits, same_vreg, same_width, zeroing

_OPS = (Opnd("lhs", "vreg"), Opnd("rhs", "vreg"), Opnd("mask", "mask"))
_RES = (Opnd("result", "vreg"),)


def _binary(name: str, fn: Callable[[Any, Any], Any], doc: str, shift: bool = False,
            bitwise: bool = False) -> Instr:
    static = (same_vreg("lhs", "result"), mask_fits("lhs"),
              same_width("lhs", "rhs") if shift else same_vreg("lhs", "rhs"))

    def impl(m: Any, lhs: VReg, rhs: VReg, mask: Mask) -> VReg:
        if bitwise:  # on the lanes' bits, whatever their type
            return zeroing(on_bits(fn, lhs.data, rhs.data), mask)
        return zeroing(elementwise(fn, lhs.dtype, lhs.data, rhs.data), mask)

    impl.__doc__ = doc
    impl.__module__ = __name__
    return instr(name, pipe=Pipe.V, dialect="vpto", operands=_OPS, results=_RES,
                 dtype_key=("lhs",), static=static, rows=True)(impl)


def _shl(a: np.ndarray, s: np.ndarray) -> np.ndarray:
    bits = 8 * a.dtype.itemsize
    s = s.astype(np.int64)
    out = np.left_shift(a, np.clip(s, 0, bits - 1).astype(a.dtype))
    return np.where((s < 0) | (s >= bits), a.dtype.type(0), out)


def _shr(a: np.ndarray, s: np.ndarray) -> np.ndarray:
    bits = 8 * a.dtype.itemsize
    s = s.astype(np.int64)
    out = np.right_shift(a, np.clip(s, 0, bits - 1).astype(a.dtype))
    fill = np.where(a < 0, a.dtype.type(-1), a.dtype.type(0)) if a.dtype.kind == "i" \
        else a.dtype.type(0)
    return np.where((s < 0) | (s >= bits), fill, out)


VADD = _binary("VADD", np.add, "result[i] = lhs[i] + rhs[i] on active lanes, 0 elsewhere.")
VSUB = _binary("VSUB", np.subtract, "result[i] = lhs[i] - rhs[i] on active lanes, 0 elsewhere.")
VMUL = _binary("VMUL", np.multiply,
               "result[i] = lhs[i] * rhs[i] on active lanes, 0 elsewhere.")


def _vdiv(m: Any, lhs: VReg, rhs: VReg, mask: Mask) -> VReg:
    """result[i] = lhs[i] / rhs[i] on active lanes, 0 elsewhere: floats as IEEE division
    (16-bit floats in f32, rounded once; a zero denominator gives inf / NaN); i16 / i32
    rounded toward zero, INT_MIN / -1 wrapping to INT_MIN. An integer zero denominator on
    an active lane is an error (the page: "Division by zero is undefined")."""
    if lhs.dtype.is_float:
        return zeroing(elementwise(np.divide, lhs.dtype, lhs.data, rhs.data), mask)
    on = active(mask, lhs.data.size)
    a, b = lhs.data.astype(np.int64), rhs.data.astype(np.int64)
    if (on & (b == 0)).any():
        raise ExecutionError(f"pto.vdiv: integer division by zero on active lane "
                             f"{int(np.argmax(on & (b == 0)))} (undefined on the page)")
    b = np.where(b == 0, 1, b)
    q = np.abs(a) // np.abs(b) * np.sign(a) * np.sign(b)  # toward zero, exact in int64
    bits = 8 * lhs.data.dtype.itemsize
    q = (q + (1 << (bits - 1))) % (1 << bits) - (1 << (bits - 1))  # INT_MIN / -1 wraps
    return zeroing(q.astype(lhs.data.dtype), mask)


VDIV = instr("VDIV", pipe=Pipe.V, dialect="vpto", operands=_OPS, results=_RES,
             dtype_key=("lhs",),
             static=(same_vreg("lhs", "result"), mask_fits("lhs"), same_vreg("lhs", "rhs")))(
    _vdiv)
VMAX = _binary("VMAX", npu_max,
               "result[i] = (lhs[i] > rhs[i]) ? lhs[i] : rhs[i] on active lanes (NaN "
               "propagates; +0 and -0 give rhs), 0 elsewhere.")
VMIN = _binary("VMIN", npu_min,
               "result[i] = (lhs[i] < rhs[i]) ? lhs[i] : rhs[i] on active lanes (NaN "
               "propagates; +0 and -0 give rhs), 0 elsewhere.")
VAND = _binary("VAND", np.bitwise_and, "result[i] = lhs[i] & rhs[i] on the lanes' bits (float "
               "lanes too, as PTOAS accepts them) on active lanes, 0 elsewhere.", bitwise=True)
VOR = _binary("VOR", np.bitwise_or, "result[i] = lhs[i] | rhs[i] on the lanes' bits (float "
              "lanes too) on active lanes, 0 elsewhere.", bitwise=True)
VXOR = _binary("VXOR", np.bitwise_xor, "result[i] = lhs[i] ^ rhs[i] on the lanes' bits (float "
               "lanes too) on active lanes, 0 elsewhere.", bitwise=True)
VSHL = _binary("VSHL", _shl, "result[i] = lhs[i] << rhs[i] on active lanes, 0 elsewhere; "
               "rhs holds signed amounts of lhs's width, and an amount outside [0, width) "
               "gives 0.", shift=True)
VSHR = _binary("VSHR", _shr, "result[i] = lhs[i] >> rhs[i] on active lanes, 0 elsewhere: "
               "arithmetic for signed lanes, logical for unsigned ones (the page leaves it "
               "open; the element type decides); an amount outside [0, width) gives the sign "
               "fill.", shift=True)


def _carry(name: str, doc: str, sub: bool) -> Instr:
    def impl(m: Any, lhs: VReg, rhs: VReg, mask: Mask) -> tuple[VReg, Mask]:
        bits = 8 * lhs.data.dtype.itemsize
        u = np.dtype(f"u{lhs.data.dtype.itemsize}")
        a = lhs.data.view(u).astype(np.uint64)
        b = rhs.data.view(u).astype(np.uint64)
        on = active(mask, lhs.data.size)
        if sub:
            wide = a - b
            carry = a >= b
        else:
            wide = a + b
            carry = (wide >> np.uint64(bits)) != 0
        out = (wide & np.uint64((1 << bits) - 1)).astype(u).view(lhs.data.dtype)
        return zeroing(out, mask), Mask.of_lanes(carry & on, mask.gran)

    impl.__doc__ = doc
    impl.__module__ = __name__
    return instr(name, pipe=Pipe.V, dialect="vpto", operands=_OPS,
                 results=(Opnd("result", "vreg"), Opnd("carry", "mask")), dtype_key=("lhs",),
                 static=(same_vreg("lhs", "rhs", "result"), mask_fits("lhs")))(impl)


VADDC = _carry("VADDC", "result[i] = lhs[i] + rhs[i] modulo 2^width, carry[i] = the carry "
               "out, on active lanes (0 and inactive elsewhere).", sub=False)
VSUBC = _carry("VSUBC", "result[i] = lhs[i] - rhs[i] modulo 2^width, carry[i] = 1 when no "
               "borrow (lhs[i] >= rhs[i] unsigned), on active lanes (0 and inactive "
               "elsewhere).", sub=True)

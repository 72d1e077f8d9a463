"""Reductions (micro-isa/10-reduction-ops.md): ``%r = pto.vcadd %input, %mask`` and the
others. Inactive lanes do not take part; results sit in the low lanes, the rest zero.

* ``vcadd`` - the sum of the active lanes in lane 0 (i8 / u8 and i16 / u16 inputs give a
  result of the doubled width with half as many lanes; sums wrap in the result's width).
* ``vcmax`` / ``vcmin`` - the extremum in lane 0 and the index of its first occurrence in
  lane 1. The index is written as an unsigned integer of the lane's width into the lane's
  bits (for float lanes: those bits, viewed as the float type).
* ``vcbmax`` / ``vcbmin`` - the extremum in lane 0 and a predicate of the active lanes equal
  to it (+0 and -0 both match a zero extremum).
* ``vcgadd`` / ``vcgmax`` / ``vcgmin`` - one result per 32-byte VLane in lanes 0..7.
* ``vcpadd`` - the inclusive prefix sum of the active lanes (inactive ones add 0).

Inactive or all-inactive lanes take the neutral value: 0 for sums, -INF / the type's minimum
for max, +INF / the type's maximum for min. ``vcadd`` adds float lanes as a pairwise tree in
their type (the order TROWSUM takes); ``vcgadd`` / ``vcpadd`` sum f16 in f32, rounded once.
``chistv2`` / ``dhistv2`` (the page leaves the bin operand's meaning to the hardware) are not
declared: refused by name."""

from __future__ import annotations

from typing import Any

import numpy as np

from ... import dtypes as D
from ...enums import Pipe
from ...vector.regs import Mask, VReg, VRegSpec
from ..registry import Instr, Opnd, Sig, instr
from ..rules import tree_reduce
from .common import active, mask_fits, same_vreg, widened

_OPS = (Opnd("input", "vreg"), Opnd("mask", "mask"))
#: 32-byte VLanes of a register
VLANES = 8


def _neutral(dt: np.dtype, kind: str) -> Any:
    if dt.kind == "f":
        return dt.type(-np.inf if kind == "max" else np.inf)
    info = np.iinfo(dt)
    return dt.type(info.min if kind == "max" else info.max)


def _low(values: np.ndarray, n: int, dt: np.dtype) -> np.ndarray:
    out = np.zeros(n, dt)
    out[:values.size] = values
    return out


def _sum(x: np.ndarray, dt: np.dtype) -> Any:
    """The sum of ``x`` in ``dt``: 16-bit floats in f32 rounded once, integers wrapping to
    dt's width."""
    if dt.kind == "f":
        w = widened(D.dtype(dt))
        with np.errstate(all="ignore"):
            return dt.type(np.sum(x.astype(w), dtype=w))
    total = int(np.sum(x.astype(np.int64))) & ((1 << 8 * dt.itemsize) - 1)
    return np.array(total, np.dtype(f"u{dt.itemsize}")).view(dt)[()]


#: vcadd's widened results
_WIDE = {"i8": "i16", "ui8": "ui16", "i16": "i32", "ui16": "ui32"}


def _vcadd_result(sig: Sig) -> None:
    i, r = sig["input"], sig["result"]
    if isinstance(i, VRegSpec) and isinstance(r, VRegSpec):
        want = _WIDE.get(i.dtype.name, i.dtype.name)
        if r.dtype.name != want:
            raise sig.fail(f"result is {r}: {i} sums into {want} lanes")


@instr("VCADD", pipe=Pipe.V, dialect="vpto", operands=_OPS,
       results=(Opnd("result", "vreg"),), dtype_key=("input",),
       static=(mask_fits("input"), _vcadd_result))
def VCADD(m: Any, input: VReg, mask: Mask) -> VReg:  # noqa: A002
    """result[0] = the sum of the active lanes of input, the other lanes 0; i8 / u8 (i16 /
    u16) inputs sum into an i16 / u16 (i32 / u32) result of half as many lanes. Float lanes
    add as a pairwise tree in their own type (lane i meets lane i + N/2, then i + N/4 ...;
    inactive lanes are +0), the page's "tree-reduction strategy"."""
    x = input.data
    to = np.dtype(D.dtype(_WIDE.get(input.dtype.name, input.dtype.name)).np)
    on = active(mask, x.size)
    if x.dtype.kind == "f":
        # the pairwise tree over the register's lanes (inactive ones +0) in the element type:
        # the order the tile row reductions take as the NPU's (isa/rules.tree_reduce)
        with m.errstate():
            total = tree_reduce(np.where(on, x, x.dtype.type(0)), np.add, 0)
        return VReg(_low(np.array([total], to), 256 // to.itemsize, to))
    return VReg(_low(np.array([_sum(x[on].astype(to), to)], to), 256 // to.itemsize, to))


def _extremum(name: str, kind: str) -> Instr:
    pick = np.argmax if kind == "max" else np.argmin

    def impl(m: Any, input: VReg, mask: Mask) -> VReg:  # noqa: A002
        x = input.data
        on = active(mask, x.size)
        vals = np.where(on, x, _neutral(x.dtype, kind))
        i = int(pick(vals)) if on.any() else 0
        out = np.zeros(x.size, x.dtype)
        out[0] = vals[i]
        u = np.dtype(f"u{x.dtype.itemsize}")
        out.view(u)[1] = i
        return VReg(out)

    impl.__doc__ = (f"result[0] = the {kind}imum of the active lanes (the neutral value when "
                    "none is), result[1] = the index of its first occurrence as an unsigned "
                    "integer in the lane's bits, the other lanes 0.")
    impl.__module__ = __name__
    return instr(name, pipe=Pipe.V, dialect="vpto", operands=_OPS,
                 results=(Opnd("result", "vreg"),), dtype_key=("input",),
                 static=(same_vreg("input", "result"), mask_fits("input")))(impl)


def _with_mask(name: str, kind: str) -> Instr:
    def impl(m: Any, input: VReg, mask: Mask) -> tuple[VReg, Mask]:  # noqa: A002
        x = input.data
        on = active(mask, x.size)
        vals = np.where(on, x, _neutral(x.dtype, kind))
        v = (np.max if kind == "max" else np.min)(vals)
        hit = on & (x == v)  # (+0 == -0: both zero signs match)
        return VReg(_low(np.array([v], x.dtype), x.size, x.dtype)), \
            Mask.of_lanes(hit, mask.gran)

    impl.__doc__ = (f"value[0] = the {kind}imum of the active lanes (the neutral value when "
                    f"none is), other lanes 0; predicate = the active lanes equal to it.")
    impl.__module__ = __name__
    return instr(name, pipe=Pipe.V, dialect="vpto", operands=_OPS,
                 results=(Opnd("value", "vreg"), Opnd("predicate", "mask")),
                 dtype_key=("input",),
                 static=(same_vreg("input", "value"), mask_fits("input")))(impl)


def _group(name: str, kind: str) -> Instr:
    def impl(m: Any, input: VReg, mask: Mask) -> VReg:  # noqa: A002
        x = input.data
        on = active(mask, x.size).reshape(VLANES, -1)
        g = x.reshape(VLANES, -1)
        if kind == "add":
            res = np.array([_sum(g[k][on[k]], x.dtype) for k in range(VLANES)], x.dtype)
        else:
            vals = np.where(on, g, _neutral(x.dtype, kind))
            res = (np.max if kind == "max" else np.min)(vals, axis=1)
            if x.dtype.kind == "f":  # max(+0, -0) = +0, min(-0, +0) = -0
                z = res == 0
                signs = np.signbit(np.where(on & (g == 0), g, 1.0 if kind == "max" else -1.0))
                neg = signs.all(axis=1) if kind == "max" else signs.any(axis=1)
                res = np.where(z, np.where(neg, x.dtype.type(-0.0), x.dtype.type(0.0)), res)
        return VReg(_low(res.astype(x.dtype), x.size, x.dtype))

    what = {"add": "sum (0 when none is active)", "max": "maximum (-INF / the type's minimum "
            "when none is active)", "min": "minimum (+INF / the type's maximum when none "
            "is active)"}[kind]
    impl.__doc__ = (f"result[g] = the {what} of the active lanes of 32-byte VLane g, for g "
                    "in 0..7; the other lanes 0.")
    impl.__module__ = __name__
    return instr(name, pipe=Pipe.V, dialect="vpto", operands=_OPS,
                 results=(Opnd("result", "vreg"),), dtype_key=("input",),
                 static=(same_vreg("input", "result"), mask_fits("input")))(impl)


VCMAX = _extremum("VCMAX", "max")
VCMIN = _extremum("VCMIN", "min")
VCBMAX = _with_mask("VCBMAX", "max")
VCBMIN = _with_mask("VCBMIN", "min")
VCGADD = _group("VCGADD", "add")
VCGMAX = _group("VCGMAX", "max")
VCGMIN = _group("VCGMIN", "min")


@instr("VCPADD", pipe=Pipe.V, dialect="vpto", operands=_OPS,
       results=(Opnd("result", "vreg"),), dtype_key=("input",),
       static=(same_vreg("input", "result"), mask_fits("input")))
def VCPADD(m: Any, input: VReg, mask: Mask) -> VReg:  # noqa: A002
    """result[i] = input[0] + ... + input[i] over the active lanes (inactive ones add 0),
    accumulated in order in f32 and rounded to the lane type at each lane."""
    x = input.data
    on = active(mask, x.size)
    w = widened(input.dtype)
    with np.errstate(all="ignore"):
        acc = np.cumsum(np.where(on, x, 0).astype(w), dtype=w)
    return VReg(acc.astype(x.dtype))


__all__ = ["VCADD", "VCBMAX", "VCBMIN", "VCGADD", "VCGMAX", "VCGMIN", "VCMAX", "VCMIN",
           "VCPADD"]

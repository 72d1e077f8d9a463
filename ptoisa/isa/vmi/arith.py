"""VMI elementwise compute (vmi-isa/03-eltwise-compute.md) and index generation (02).

Every op runs lane by lane over the logical vector; a mask (optional where the page writes
it variadic) zeroes the inactive lanes (``pmode = "zero"``; ``"merge"`` keeps a prior
destination value an SSA op does not have: refused by name, vsel's aside). The element
arithmetic is the micro-ops' (``isa/micro/common.py``): 16-bit floats compute in f32 and
round once, integers wrap, shifts by an amount outside [0, width) give 0 (vshl) or the fill
(vshr); vshr is logical ("unsigned right shift", vmi-isa/03 3.4) for every element type.
The bitwise ops take masks too (vmi-isa/08 "Mask Boolean Ops"). Comparisons of signless
integers (``iN``, not ``siN``) are unsigned (vmi-isa/03 3.6)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ... import dtypes as D
from ...enums import Pipe
from ...errors import ExecutionError
from ...vector.logical import LMask, LVec, VmiMaskSpec, VmiSpec
from ..micro.binary import _shl
from ..micro.common import elementwise, on_bits
from ..registry import Instr, Opnd, Param, Sig, instr
from . import lowering
from .common import (
    SPELLING,
    active,
    names,
    no_merge,
    result_spec,
    same_lanes,
    same_lvec,
    scalar_as,
    spelled,
    zeroing,
)

_MASK = Opnd("mask", "lmask", optional=True)
_RES = (Opnd("result", "lvec"),)


def _lshr(a: np.ndarray, s: np.ndarray) -> np.ndarray:
    u = np.dtype(f"u{a.dtype.itemsize}")
    return _shl_like(a.view(u), s, right=True).view(a.dtype)


def _shl_like(a: np.ndarray, s: np.ndarray, right: bool) -> np.ndarray:
    bits = 8 * a.dtype.itemsize
    s64 = s.astype(np.int64)
    amt = np.clip(s64, 0, bits - 1).astype(a.dtype)
    out = np.right_shift(a, amt) if right else np.left_shift(a, amt)
    return np.where((s64 < 0) | (s64 >= bits), a.dtype.type(0), out)


def _integer_like(operand: str) -> Any:
    """PTOAS's rule for the bitwise ops on vectors: integer element types only (masks are
    their own form)."""
    def rule(sig: Sig) -> None:
        t = sig[operand]
        if isinstance(t, VmiSpec) and not t.dtype.is_int:
            raise sig.fail(f"requires integer-like VMI element type, got {t}")
    return rule


def _mask_logic(*names: str) -> Any:
    """PTOAS's rules for and / or / xor / not of masks: one granularity among the masks that
    have one (``pred`` is not yet assigned), and no predication mask or ``pmode`` (the op
    combines whole masks)."""
    def rule(sig: Sig) -> None:
        ms = [(n, sig[n]) for n in names if isinstance(sig[n], VmiMaskSpec)]
        if not ms or not isinstance(sig[names[0]], VmiMaskSpec):
            return
        grans = [(n, t.gran) for n, t in ms if t.gran != "pred"]
        for n, g in grans[1:]:
            if g != grans[0][1]:
                raise sig.fail(f"requires all VMI mask values to have the same granularity "
                               f"({n} is {g}, {grans[0][0]} {grans[0][1]})")
        if sig["mask"] is not None:
            raise sig.fail("mask logic op does not support predication mask")
        if sig.params.get("pmode") is not None:
            raise sig.fail("mask logic op does not support pmode")
    return rule


def _binary(name: str, fn: Callable[[Any, Any], Any], doc: str, *, bits: bool = False,
            shift: bool = False, masks: bool = False, aka: dict[str, str] | None = None
            ) -> Instr:
    """``aka``: the older names (designs/vmi-implementation-manual.md 3.1) -> the element kind
    they take ("float", "int", "" any)."""
    kind = "any" if masks else "lvec"

    def impl(m: Any, lhs: Any, rhs: Any, mask: LMask | None = None, *,
             pmode: str | None = None, spelling: str | None = None) -> Any:
        no_merge(name.lower(), pmode)
        if isinstance(lhs, LMask) or isinstance(rhs, LMask):
            if not (isinstance(lhs, LMask) and isinstance(rhs, LMask)) or mask is not None:
                raise ExecutionError(f"{name.lower()}: a mask operation takes two masks")
            return LMask(np.asarray(fn(lhs.bits, rhs.bits), np.bool_))
        if lhs.data.size != rhs.data.size:
            raise ExecutionError(f"{name.lower()}: {lhs.data.size} and {rhs.data.size} lanes")
        if bits:
            out = on_bits(fn, lhs.data, rhs.data)
        elif shift:
            out = fn(lhs.data, rhs.data.astype(np.int64))
        else:
            out = elementwise(fn, lhs.dtype, lhs.data, rhs.data)
        return zeroing(out, mask)

    impl.__doc__ = doc
    impl.__module__ = __name__
    static = (same_lvec("lhs", "rhs", "result") if not shift else same_lvec("lhs", "result"),
              same_lanes("lhs", "rhs", "mask", "result"), spelled(aka or {}, "lhs"),
              *((_integer_like("lhs"),) if bits else ()),
              *((_mask_logic("lhs", "rhs", "result"),) if masks else ()))
    return instr(f"VMI_{name}", pipe=Pipe.V, dialect="vmi",
                 operands=(Opnd("lhs", kind), Opnd("rhs", kind), _MASK),
                 params=(Param("pmode", None), SPELLING),
                 results=(Opnd("result", kind),), dtype_key=("lhs",) if not masks else (),
                 static=static, ptoas=names(*(aka or {})))(impl)


VADD = _binary("VADD", np.add, "result[i] = lhs[i] + rhs[i] on active lanes, 0 elsewhere.",
               aka={"addf": "float", "addi": "int"})
VSUB = _binary("VSUB", np.subtract, "result[i] = lhs[i] - rhs[i] on active lanes, 0 "
               "elsewhere.", aka={"subf": "float", "subi": "int"})
VMUL = _binary("VMUL", np.multiply, "result[i] = lhs[i] * rhs[i] on active lanes, 0 "
               "elsewhere.", aka={"mulf": "float", "muli": "int"})
VDIV = _binary("VDIV", np.divide, "result[i] = lhs[i] / rhs[i] (IEEE: x / 0 is inf or NaN) "
               "on active lanes, 0 elsewhere.", aka={"divf": "float"})
VMAX = _binary("VMAX", np.maximum, "result[i] = max(lhs[i], rhs[i]) (NaN propagates) on "
               "active lanes, 0 elsewhere.", aka={"maxf": "float"})
VMIN = _binary("VMIN", np.minimum, "result[i] = min(lhs[i], rhs[i]) (NaN propagates) on "
               "active lanes, 0 elsewhere.", aka={"minf": "float"})
VAND = _binary("VAND", np.bitwise_and, "result[i] = lhs[i] & rhs[i] on the lanes' bits on "
               "active lanes, 0 elsewhere; of two masks, their lane-wise and.", bits=True,
               masks=True, aka={"andi": "int", "mask_and": ""})
VOR = _binary("VOR", np.bitwise_or, "result[i] = lhs[i] | rhs[i] on the lanes' bits on "
              "active lanes, 0 elsewhere; of two masks, their lane-wise or.", bits=True,
              masks=True, aka={"ori": "int", "mask_or": ""})
VXOR = _binary("VXOR", np.bitwise_xor, "result[i] = lhs[i] ^ rhs[i] on the lanes' bits on "
               "active lanes, 0 elsewhere; of two masks, their lane-wise xor.", bits=True,
               masks=True, aka={"xori": "int", "mask_xor": ""})
VSHL = _binary("VSHL", _shl, "result[i] = lhs[i] << rhs[i] on active lanes, 0 elsewhere (an "
               "amount outside [0, width) gives 0).", shift=True, aka={"shli": "int"})
VSHR = _binary("VSHR", _lshr, "result[i] = lhs[i] >> rhs[i], logical (vmi-isa/03: unsigned "
               "right shift), on active lanes, 0 elsewhere (an amount outside [0, width) "
               "gives 0).", shift=True, aka={"shrui": "int"})


def _unary(name: str, fn: Callable[[Any], Any], doc: str, *, bits: bool = False,
           masks: bool = False, aka: dict[str, str] | None = None,
           static: tuple[Any, ...] = ()) -> Instr:
    kind = "any" if masks else "lvec"

    def impl(m: Any, src: Any, mask: LMask | None = None, *, pmode: str | None = None,
             spelling: str | None = None) -> Any:
        no_merge(name.lower(), pmode)
        if isinstance(src, LMask):
            if mask is not None:
                raise ExecutionError(f"{name.lower()}: a mask operation takes one mask")
            return LMask(~src.bits)
        out = on_bits(fn, src.data) if bits else elementwise(fn, src.dtype, src.data)
        return zeroing(out, mask)

    impl.__doc__ = doc
    impl.__module__ = __name__
    return instr(f"VMI_{name}", pipe=Pipe.V, dialect="vmi",
                 operands=(Opnd("src", kind), _MASK), params=(Param("pmode", None), SPELLING),
                 results=(Opnd("result", kind),), dtype_key=("src",) if not masks else (),
                 static=(same_lvec("src", "result"), same_lanes("src", "mask", "result"),
                         spelled(aka or {}, "src"), *((_integer_like("src"),) if bits else ()),
                         *((_mask_logic("src", "result"),) if masks else ()), *static),
                 ptoas=names(*(aka or {})))(impl)


def _relu(a: np.ndarray) -> np.ndarray:
    return np.where(a > 0, a, a.dtype.type(0))


VABS = _unary("VABS", np.abs, "result[i] = |src[i]| on active lanes, 0 elsewhere.",
              aka={"absf": "float", "absi": "int"})
VNEG = _unary("VNEG", np.negative, "result[i] = -src[i] on active lanes, 0 elsewhere.",
              aka={"negf": "float"})
def _signed_relu(sig: Sig) -> None:
    """PTOAS: vrelu's integer lanes are si32 (the table gives i32; this says signed)."""
    t = sig["src"]
    if isinstance(t, VmiSpec) and t.dtype.is_int and t.signless:
        raise sig.fail(f"requires si32, f16, or f32 VMI element type, got {t}")


VRELU = _unary("VRELU", _relu, "result[i] = max(src[i], 0) on active lanes, 0 elsewhere.",
               aka={"relu": ""}, static=(_signed_relu,))
VEXP = _unary("VEXP", np.exp, "result[i] = e^src[i] on active lanes, 0 elsewhere.",
              aka={"exp": ""})
VLN = _unary("VLN", np.log, "result[i] = ln(src[i]) on active lanes, 0 elsewhere.",
             aka={"ln": ""})
VSQRT = _unary("VSQRT", np.sqrt, "result[i] = sqrt(src[i]) on active lanes, 0 elsewhere.",
               aka={"sqrt": ""})
VNOT = _unary("VNOT", np.invert, "result[i] = ~src[i] on the lanes' bits on active lanes, 0 "
              "elsewhere; of a mask, its complement.", bits=True, masks=True,
              aka={"not": "int", "mask_not": ""})


def _vec_scalar(name: str, fn: Callable[[Any, Any], Any], doc: str,
                shift: bool = False) -> Instr:
    def impl(m: Any, src: LVec, scalar: Any, mask: LMask | None = None, *,
             pmode: str | None = None) -> LVec:
        no_merge(name.lower(), pmode)
        x = src.data
        if shift:
            out = fn(x, np.full(x.size, int(scalar), np.int64))
        else:
            s = np.full(x.size, scalar_as(scalar, src.dtype), x.dtype)
            out = elementwise(fn, src.dtype, x, s)
        return zeroing(out, mask)

    impl.__doc__ = doc
    impl.__module__ = __name__
    return instr(f"VMI_{name}", pipe=Pipe.V, dialect="vmi",
                 operands=(Opnd("src", "lvec"), Opnd("scalar", "scalar"), _MASK),
                 params=(Param("pmode", None),), results=_RES, dtype_key=("src",),
                 static=(same_lvec("src", "result"), same_lanes("src", "mask")),
                 ptoas=names(passes=lowering.merge_pmode(name.lower())))(impl)


VADDS = _vec_scalar("VADDS", np.add, "result[i] = src[i] + scalar on active lanes, 0 "
                    "elsewhere (the scalar in src's element type).")
VMULS = _vec_scalar("VMULS", np.multiply, "result[i] = src[i] * scalar on active lanes, 0 "
                    "elsewhere.")
VMAXS = _vec_scalar("VMAXS", np.maximum, "result[i] = max(src[i], scalar) on active lanes, "
                    "0 elsewhere.")
VMINS = _vec_scalar("VMINS", np.minimum, "result[i] = min(src[i], scalar) on active lanes, "
                    "0 elsewhere.")
VSHLS = _vec_scalar("VSHLS", _shl, "result[i] = src[i] << scalar on active lanes, 0 "
                    "elsewhere.", shift=True)
VSHRS = _vec_scalar("VSHRS", _lshr, "result[i] = src[i] >> scalar (logical) on active lanes, "
                    "0 elsewhere.", shift=True)


# ---- compare and select ---------------------------------------------------------------------

_CMP: dict[str, Callable[[Any, Any], Any]] = {
    "eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal,
    "gt": np.greater, "ge": np.greater_equal}
#: MLIR's arith predicates, which PTOAS's VMI compares also take (``"olt"``, ``"ult"``):
#: name -> (the comparison, NaN gives true (unordered), signedness: "s" / "u" / "")
_PREDICATES = {
    **{f"o{k}": (k, False, "") for k in ("eq", "ne", "lt", "le", "gt", "ge")},
    **{f"u{k}": (k, True, "u") for k in ("eq", "ne", "lt", "le", "gt", "ge")},
    **{f"s{k}": (k, False, "s") for k in ("lt", "le", "gt", "ge")},
    **{k: (k, k == "ne", "") for k in _CMP}}


def _cmp_attr(sig: Sig) -> None:
    c = sig.params.get("cmp")
    if c not in _PREDICATES:
        raise sig.fail(f"unsupported compare predicate {c!r} (it is one of "
                       f"{', '.join(_CMP)}, or MLIR's o* / u* / s* predicates)")


def _ordered(x: np.ndarray, signless: bool) -> np.ndarray:
    """Lanes as the comparison orders them: signless integers unsigned."""
    if signless and x.dtype.kind == "i":
        return x.view(np.dtype(f"u{x.dtype.itemsize}"))
    return x


def _compare(x: np.ndarray, y: np.ndarray, cmp: str, seed: LMask | None,
             signless: bool) -> LMask:
    """``cmp`` of x and y on the seed's lanes: the page's six (floats: false with a NaN but
    ne; signless integers unsigned), or an MLIR predicate (its order, NaN rule and
    signedness)."""
    op, unordered, sign = _PREDICATES[cmp]
    if x.dtype.kind in "iu":
        if sign == "u" or (sign == "" and signless):
            x, y = _ordered(x, True), _ordered(y, True)
        elif sign == "s" and x.dtype.kind == "u":
            x = x.view(np.dtype(f"i{x.dtype.itemsize}"))
            y = y.view(np.dtype(f"i{y.dtype.itemsize}"))
    with np.errstate(invalid="ignore"):
        r = np.asarray(_CMP[op](x, y), np.bool_)
        if x.dtype.kind == "f" and (unordered or cmp.startswith("o")):
            nan = np.isnan(x) | np.isnan(y)
            r = r | nan if unordered else r & ~nan
    return LMask(r & active(seed, x.size))


def _seeded(sig: Sig) -> None:
    if sig["seed"] is None and sig.params.get("spelling") == "pto.vmi.vcmp":
        raise sig.fail("requires the seed mask (vmi-isa/03 3.6)")


@instr("VMI_VCMP", pipe=Pipe.V, dialect="vmi",
       operands=(Opnd("lhs", "lvec"), Opnd("rhs", "lvec"),
                 Opnd("seed", "lmask", optional=True)),
       params=(Param("cmp", None), Param("pmode", None), Param("signless", False), SPELLING),
       results=(Opnd("result", "lmask"),), dtype_key=("lhs",),
       static=(same_lvec("lhs", "rhs"), same_lanes("lhs", "seed", "result"), _cmp_attr,
               _seeded, spelled({"cmpf": "float", "cmpi": "int"}, "lhs")),
       ptoas=names("cmpf", "cmpi", passes=lowering.COMPARE))
def VMI_VCMP(m: Any, lhs: LVec, rhs: LVec, seed: LMask | None = None, *,
             cmp: str | None = None, pmode: str | None = None, signless: bool = False,
             spelling: str | None = None) -> LMask:
    """result[i] = seed[i] && (lhs[i] cmp rhs[i]) (floats unordered: NaN compares false but
    for ne; signless integers, ``iN``, compare unsigned); ``cmp`` may be one of MLIR's
    predicates too (``olt``, ``ult``, ``slt`` ...: their NaN rule and signedness), as the older
    names ``cmpf "olt", %a, %b`` / ``cmpi`` write it (no seed: every lane)."""
    no_merge("vcmp", pmode)
    return _compare(lhs.data, rhs.data, str(cmp), seed, signless)


@instr("VMI_VCMPS", pipe=Pipe.V, dialect="vmi",
       operands=(Opnd("src", "lvec"), Opnd("scalar", "scalar"), Opnd("seed", "lmask")),
       params=(Param("cmp", None), Param("pmode", None), Param("signless", False)),
       results=(Opnd("result", "lmask"),), dtype_key=("src",),
       static=(same_lanes("src", "seed", "result"), _cmp_attr))
def VMI_VCMPS(m: Any, src: LVec, scalar: Any, seed: LMask, *, cmp: str | None = None,
              pmode: str | None = None, signless: bool = False) -> LMask:
    """result[i] = seed[i] && (src[i] cmp scalar) (the scalar in src's element type)."""
    no_merge("vcmps", pmode)
    x = src.data
    s = np.full(x.size, scalar_as(scalar, src.dtype), x.dtype)
    return _compare(x, s, str(cmp), seed, signless)


@instr("VMI_VSEL", pipe=Pipe.V, dialect="vmi",
       operands=(Opnd("mask", "lmask"), Opnd("true_val", "lvec"), Opnd("false_val", "lvec")),
       params=(Param("pmode", None),), results=_RES, dtype_key=("true_val",),
       static=(same_lvec("true_val", "false_val", "result"),
               same_lanes("mask", "true_val")), ptoas=names("select"))
def VMI_VSEL(m: Any, mask: LMask, true_val: LVec, false_val: LVec, *,
             pmode: str | None = None) -> LVec:
    """result[i] = mask[i] ? true_val[i] : false_val[i] (``pmode = "merge"`` says the same:
    the lanes not selected keep false_val)."""
    on = active(mask, true_val.data.size)
    return LVec(np.where(on, true_val.data, false_val.data))


# ---- index generation (vmi-isa/02) ----------------------------------------------------------

def _vci_static(sig: Sig) -> None:
    o, g = sig.params.get("order"), sig.params.get("group")
    if o not in (None, "ASC", "DESC"):
        raise sig.fail(f"requires order to be ASC or DESC (got {o!r})")
    r = sig["result"]
    if g is not None and (not isinstance(g, int) or g <= 0
                          or (isinstance(r, VmiSpec) and r.lanes % g)):
        raise sig.fail(f"group = {g!r} must be a positive divisor of the lane count")


@instr("VMI_VCI", pipe=Pipe.V, dialect="vmi", operands=(Opnd("base", "scalar"),),
       params=(Param("order", None), Param("group", None), Param("result_type", None)),
       results=_RES, static=(_vci_static,), ptoas=names("iota"))
def VMI_VCI(m: Any, base: Any, *, order: str | None = None, group: int | None = None,
            result_type: Any = None) -> LVec:
    """result[i] = base + j (``ASC``) or base - j (``DESC``), j = i, or i % (L / group) with
    ``group``; integers wrap to the element type."""
    to = result_spec(result_type, "vci")
    n = to.lanes
    j = np.arange(n) % (n // int(group)) if group else np.arange(n)
    step = -j if order == "DESC" else j
    dt: D.DType = to.dtype
    if dt.is_float:
        with np.errstate(all="ignore"):
            return LVec((np.float64(float(base)) + step).astype(dt.np))
    bits = 8 * dt.itemsize
    vals = (int(base) + step.astype(np.int64)) & ((1 << bits) - 1)
    return LVec(vals.astype(np.dtype(f"u{dt.itemsize}")).view(dt.np))

"""VMI fused, widening and histogram ops (vmi-isa/07-sfu.md 7.1, 7.2) and the data
rearrangement of vmi-isa/09.

* ``vexpdif``: ``exp(x - max)`` in f32 (the difference in f32, the exponential rounded once);
* ``vaxpy`` / ``vmula``: ``alpha * x + acc`` / ``acc + lhs * rhs``, fused (one rounding; the
  micro-ops' helper), integers wrapping;
* ``vlrelu``: ``x > 0 ? x : slope * x``; ``vprelu``: ``max(x, 0) + alpha * min(x, 0)``;
* ``vmull``: the 64-bit product of 32-bit lanes as (low, high) 32-bit halves (signed for
  ``i32`` / ``si32``, unsigned for ``ui32``);
* ``vdhist`` / ``vchist``: ``hist[b] = acc[b] + #{i active: src[i] == b}`` (and its running
  sum over the bins for the cumulative one), 8-bit sources read unsigned, counts wrapping in
  16 bits; a source lane beyond the result's bins (a 128-bin result) is an error;
* ``vintlv``: ``low = a0 b0 a1 b1 ...`` (the first halves), ``high`` the second halves;
  ``vdintlv`` its inverse (vmi-isa/09 "notes": ``vdintlv(vintlv(a, b)) = (a, b)``: even and odd
  lanes of the stream ``lhs ++ rhs``; the page's C sketch, which reads only ``lhs`` for the
  first result, contradicts it).

Masks zero the inactive result lanes (``pmode = "merge"`` refused by name, as elsewhere)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...enums import Pipe
from ...errors import ExecutionError
from ...vector.logical import LMask, LVec, VmiSpec
from ..micro.common import elementwise
from ..micro.sfu import _fused
from ..registry import Opnd, Param, Sig, instr
from ..spelling import Ptoas
from . import lowering
from .common import active, names, no_merge, same_lanes, same_lvec, scalar_as, zeroing

_MASK = Opnd("mask", "lmask", optional=True)
_PMODE = (Param("pmode", None),)


def _same_x_max(sig: Sig) -> None:
    x, mx = sig["x"], sig["max"]
    if isinstance(x, VmiSpec) and isinstance(mx, VmiSpec):
        if x.dtype != mx.dtype:
            raise sig.fail(f"requires x and max to have the same element type (x is {x}, max "
                           f"is {mx})")
        same_lvec("x", "max")(sig)


@instr("VMI_VEXPDIF", pipe=Pipe.V, dialect="vmi",
       operands=(Opnd("x", "lvec"), Opnd("max", "lvec"), _MASK), params=_PMODE,
       results=(Opnd("result", "lvec"),), dtype_key=("x",),
       static=(_same_x_max, same_lanes("x", "mask", "result")))
def VMI_VEXPDIF(m: Any, x: LVec, max: LVec, mask: LMask | None = None, *,  # noqa: A002
                pmode: str | None = None) -> LVec:
    """result[i] = exp(x[i] - max[i]) as f32 on active lanes, 0 elsewhere."""
    no_merge("vexpdif", pmode)
    with np.errstate(all="ignore"):
        d = x.data.astype(np.float32) - max.data.astype(np.float32)
        out = np.exp(d.astype(np.float64)).astype(np.float32)
    return zeroing(out, mask)


@instr("VMI_VAXPY", pipe=Pipe.V, dialect="vmi",
       operands=(Opnd("x", "lvec"), Opnd("acc", "lvec"), Opnd("alpha", "scalar"), _MASK),
       params=_PMODE, results=(Opnd("result", "lvec"),), dtype_key=("x",),
       static=(same_lvec("x", "acc", "result"), same_lanes("x", "mask")))
def VMI_VAXPY(m: Any, x: LVec, acc: LVec, alpha: Any, mask: LMask | None = None, *,
              pmode: str | None = None) -> LVec:
    """result[i] = alpha * x[i] + acc[i] (one rounding) on active lanes, 0 elsewhere."""
    no_merge("vaxpy", pmode)
    dt = x.dtype
    a = np.full(x.data.size, scalar_as(alpha, dt), dt.np)
    return zeroing(_fused(dt, lambda s, u, v: s * u + v, a, x.data, acc.data), mask)


@instr("VMI_VMULA", pipe=Pipe.V, dialect="vmi",
       operands=(Opnd("acc", "lvec"), Opnd("lhs", "lvec"), Opnd("rhs", "lvec"), _MASK),
       params=_PMODE, results=(Opnd("result", "lvec"),), dtype_key=("acc",),
       static=(same_lvec("acc", "lhs", "rhs", "result"), same_lanes("acc", "mask")),
       ptoas=names(passes=lowering.FMA))
def VMI_VMULA(m: Any, acc: LVec, lhs: LVec, rhs: LVec, mask: LMask | None = None, *,
              pmode: str | None = None) -> LVec:
    """result[i] = acc[i] + lhs[i] * rhs[i] (one rounding; integers wrap) on active lanes,
    0 elsewhere."""
    no_merge("vmula", pmode)
    return zeroing(_fused(acc.dtype, lambda c, u, v: c + u * v, acc.data, lhs.data,
                          rhs.data), mask)


@instr("VMI_VLRELU", pipe=Pipe.V, dialect="vmi",
       operands=(Opnd("x", "lvec"), Opnd("slope", "scalar"), _MASK), params=_PMODE,
       results=(Opnd("result", "lvec"),), dtype_key=("x",),
       static=(same_lvec("x", "result"), same_lanes("x", "mask")))
def VMI_VLRELU(m: Any, x: LVec, slope: Any, mask: LMask | None = None, *,
               pmode: str | None = None) -> LVec:
    """result[i] = x[i] > 0 ? x[i] : slope * x[i] on active lanes, 0 elsewhere."""
    no_merge("vlrelu", pmode)
    s = np.full(x.data.size, scalar_as(slope, x.dtype), x.data.dtype)
    return zeroing(elementwise(lambda u, k: np.where(u > 0, u, k * u), x.dtype, x.data, s),
                   mask)


@instr("VMI_VPRELU", pipe=Pipe.V, dialect="vmi",
       operands=(Opnd("x", "lvec"), Opnd("alpha", "lvec"), _MASK), params=_PMODE,
       results=(Opnd("result", "lvec"),), dtype_key=("x",),
       static=(same_lvec("x", "alpha", "result"), same_lanes("x", "mask")))
def VMI_VPRELU(m: Any, x: LVec, alpha: LVec, mask: LMask | None = None, *,
               pmode: str | None = None) -> LVec:
    """result[i] = max(x[i], 0) + alpha[i] * min(x[i], 0) on active lanes, 0 elsewhere."""
    no_merge("vprelu", pmode)
    return zeroing(elementwise(lambda u, a: np.maximum(u, 0) + a * np.minimum(u, 0), x.dtype,
                               x.data, alpha.data), mask)


def _i32_pair(sig: Sig) -> None:
    """PTOAS's vmull contract (its words): 64, 128 or 256 lanes of i32 / ui32, the same type
    for a, b, low and high."""
    for n in ("lhs", "rhs", "low", "high"):
        t = sig[n]
        if isinstance(t, VmiSpec) and t.lanes not in (64, 128, 256):
            raise sig.fail(f"requires logical lane count to be 64, 128, or 256 ({n} is {t})")
        if isinstance(t, VmiSpec) and (not t.dtype.is_int or t.dtype.itemsize != 4):
            raise sig.fail(f"requires a, b, low, and high element types to be exactly i32 or "
                           f"ui32 ({n} is {t})")
    if sig.params.get("pmode") not in (None, "zero"):
        raise sig.fail(f"pmode must be 'zero' when specified, got {sig.params['pmode']!r}")
    ts = [(n, sig[n]) for n in ("lhs", "rhs", "low", "high") if isinstance(sig[n], VmiSpec)]
    for n, t in ts[1:]:
        if t != ts[0][1]:
            raise sig.fail(f"requires a, b, low, and high to have identical VMI vreg types "
                           f"({n} is {t}, {ts[0][0]} is {ts[0][1]})")


def _exact_i32(sig: Sig) -> None:
    """PTOAS writes the lanes i32 (signless) or ui32: si32 is refused there (an eager LVec of
    int32 is signed, and takes the signed product)."""
    for n in ("lhs", "rhs", "low", "high"):
        t = sig[n]
        if isinstance(t, VmiSpec) and t.dtype.is_int and t.dtype.is_signed and not t.signless:
            raise sig.fail(f"requires a, b, low, and high element types to be exactly i32 or "
                           f"ui32 ({n} is {t})")


@instr("VMI_VMULL", pipe=Pipe.V, dialect="vmi",
       ptoas=Ptoas(rules={"pto.vmi.vmull": (_exact_i32,)}, passes=lowering.VMULL),
       operands=(Opnd("lhs", "lvec"), Opnd("rhs", "lvec"), _MASK), params=_PMODE,
       results=(Opnd("low", "lvec"), Opnd("high", "lvec")), dtype_key=("lhs",),
       static=(_i32_pair, same_lanes("lhs", "mask")))
def VMI_VMULL(m: Any, lhs: LVec, rhs: LVec, mask: LMask | None = None, *,
              pmode: str | None = None) -> tuple[LVec, LVec]:
    """(low, high)[i] = the low and high 32 bits of lhs[i] * rhs[i] as 64-bit integers
    (signed lanes: the high half shifted arithmetically), 0 on inactive lanes."""
    no_merge("vmull", pmode)
    dt = lhs.data.dtype
    w = np.int64 if dt.kind == "i" else np.uint64
    with np.errstate(over="ignore"):
        p = lhs.data.astype(w) * rhs.data.astype(w)  # (exact: 32 x 32 bits fit 64)
    low = (p.view(np.uint64) & np.uint64(0xFFFFFFFF)).astype(np.uint32).view(dt)
    high = (p >> w(32)).astype(np.int64).astype(np.uint64).astype(np.uint32).view(dt)
    return zeroing(low, mask), zeroing(high, mask)


def _hist_static(sig: Sig) -> None:
    a, s, r = sig["acc"], sig["src"], sig["result"]
    if isinstance(s, VmiSpec) and (s.dtype.itemsize != 1 or not s.dtype.is_int or (
            s.dtype.is_signed and not s.signless)):
        raise sig.fail(f"the source is {s}: its lanes are ui8 or signless i8")
    for n, t in (("acc", a), ("result", r)):
        if isinstance(t, VmiSpec) and (t.dtype.itemsize != 2 or not t.dtype.is_int or (
                t.dtype.is_signed and not t.signless)):
            raise sig.fail(f"{n} is {t}: the bins are ui16 or signless i16")
        if isinstance(t, VmiSpec) and t.lanes not in (128, 256):
            raise sig.fail(f"{n} is {t}: a histogram has 256 bins (or 128)")


def _hist(name: str, cumulative: bool, doc: str) -> Any:
    def impl(m: Any, acc: LVec, src: LVec, mask: LMask | None = None) -> LVec:
        bins = acc.data.size
        s = src.data.view(np.uint8).astype(np.int64)
        on = active(mask, s.size)
        counted = s[on]
        if counted.size and int(counted.max()) >= bins:
            raise ExecutionError(f"{name}: source lane value {int(counted.max())} has no bin "
                                 f"among the result's {bins}")
        hist = np.bincount(counted, minlength=bins)[:bins]
        if cumulative:
            hist = np.cumsum(hist)
        out = (acc.data.view(np.uint16).astype(np.int64) + hist) & 0xFFFF
        return LVec(out.astype(np.uint16).view(acc.data.dtype))

    impl.__doc__ = doc
    impl.__module__ = __name__
    return instr(f"VMI_{name.upper()}", pipe=Pipe.V, dialect="vmi",
                 operands=(Opnd("acc", "lvec"), Opnd("src", "lvec"), _MASK),
                 results=(Opnd("result", "lvec"),), dtype_key=("acc",),
                 # (acc and result: ui16 or signless i16 each, the same bits: the
                 # signless-to-unsigned normalization makes them one type)
                 static=(_hist_static, same_lanes("acc", "result", gran=False),
                         same_lanes("src", "mask", gran=False)))(impl)


VDHIST = _hist("vdhist", False, "result[b] = acc[b] + the number of active src lanes equal to "
               "b (src read unsigned; counts wrap in 16 bits).")
VCHIST = _hist("vchist", True, "result[b] = acc[b] + the number of active src lanes <= b "
               "(the cumulative histogram; src read unsigned; counts wrap in 16 bits).")


def _pair(name: str, doc: str, inverse: bool) -> Any:
    def impl(m: Any, lhs: LVec, rhs: LVec, mask: LMask | None = None, *,
             pmode: str | None = None) -> tuple[LVec, LVec]:
        no_merge(name, pmode)
        a, b = lhs.data, rhs.data
        n = a.size
        if n % 2 or b.size != n:
            raise ExecutionError(f"{name}: two vectors of one even lane count, got {n} and "
                                 f"{b.size}")
        if inverse:
            stream = np.concatenate([a, b])
            first, second = stream[0::2], stream[1::2]
        else:
            inter = np.empty(2 * n, a.dtype)
            inter[0::2], inter[1::2] = a, b
            first, second = inter[:n], inter[n:]
        return zeroing(first.copy(), mask), zeroing(second.copy(), mask)

    impl.__doc__ = doc
    impl.__module__ = __name__
    return instr(f"VMI_{name.upper()}", pipe=Pipe.V, dialect="vmi",
                 operands=(Opnd("lhs", "lvec"), Opnd("rhs", "lvec"), _MASK), params=_PMODE,
                 results=(Opnd("low", "lvec"), Opnd("high", "lvec")), dtype_key=("lhs",),
                 static=(same_lvec("lhs", "rhs", "low", "high"),
                         same_lanes("lhs", "mask")))(impl)


VINTLV = _pair("vintlv", "low = lhs[0], rhs[0], lhs[1], rhs[1], ... (the first halves), high "
               "the same of the second halves; inactive lanes 0.", inverse=False)
VDINTLV = _pair("vdintlv", "low = the even lanes, high the odd lanes of the stream lhs ++ "
                "rhs (vintlv's inverse); inactive lanes 0.", inverse=True)


def _vselr_static(sig: Sig) -> None:
    """PTOAS's vselr verifier: integer indices as wide as the source's elements, and a result
    of the source's element type with one lane per index (the source may have more lanes: a
    lowering that handles only one physical chunk is a limit of PTOAS's VMI-to-VPTO pass,
    not of the op, vmi_to_vpto_vselr_invalid.pto)."""
    s, i, r = sig["source"], sig["index"], sig["result"]
    if isinstance(i, VmiSpec) and not i.dtype.is_int:
        raise sig.fail(f"index is {i}: integer lanes")
    if isinstance(i, VmiSpec) and isinstance(s, VmiSpec) and \
            i.dtype.itemsize != s.dtype.itemsize:
        raise sig.fail("requires index element storage width to match source element storage "
                       f"width (index {i}, source {s})")
    if isinstance(s, VmiSpec) and isinstance(r, VmiSpec) and s.dtype != r.dtype:
        raise sig.fail(f"requires all VMI data values to have the same element type (result "
                       f"is {r}, source is {s})")


@instr("VMI_VSELR", pipe=Pipe.V, dialect="vmi",
       operands=(Opnd("source", "lvec"), Opnd("index", "lvec")),
       results=(Opnd("result", "lvec"),), dtype_key=("source",),
       static=(same_lanes("index", "result"), _vselr_static),
       ptoas=names(passes=lowering.VSELR))
def VMI_VSELR(m: Any, source: LVec, index: LVec) -> LVec:
    """result[i] = source[index[i]], one lane per index (an index outside the source's lanes
    is an error)."""
    idx = index.data.astype(np.int64)
    if idx.size and (int(idx.min()) < 0 or int(idx.max()) >= source.data.size):
        raise ExecutionError(f"vselr: lane index {int(idx.max())} outside the "
                             f"{source.data.size} lanes")
    return LVec(source.data[idx].copy())

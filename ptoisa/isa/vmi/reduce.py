"""VMI reductions (vmi-isa/05-reduce.md) and broadcast (04).

* ``%r = pto.vmi.vcadd %src, %mask {group = C}``: ``L`` lanes in ``C`` groups of ``L / C``,
  ``r[g]`` the sum of group g's active lanes (``C`` = 1 without ``group``); inactive lanes add
  0. Integer sums wrap in the element type; float sums accumulate in f32 (f16 lanes: one
  rounding at the end), in lane order (``reassoc`` allows any order: the result may differ
  from the NPU's tree in the last bits of a float sum).
* ``vcmax`` / ``vcmin``: the extremum of the active lanes (-inf / +inf or the type's
  minimum / maximum for a group without any), NaN propagating.
* ``%r = pto.vmi.vbrc %x``: a scalar or a 1-lane vector in every lane; ``{group = C}``:
  ``r[g * L / C + j] = x[g]``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ... import dtypes as D
from ...enums import Pipe
from ...errors import ExecutionError
from ...vector.logical import LMask, LVec, VmiSpec
from ..registry import Instr, Opnd, Param, Sig, instr
from . import lowering
from .common import (
    NUM_GROUPS,
    SPELLING,
    active,
    names,
    no_merge,
    result_spec,
    same_lanes,
    scalar_as,
    spelled,
)


def _groups(sig: Sig, src: str = "src") -> None:
    g = sig.params.get("group")
    s, r = sig[src], sig["result"]
    c = 1 if g is None else g
    if not isinstance(c, int) or isinstance(c, bool) or c <= 0:
        raise sig.fail(f"group = {g!r}: it is a positive integer")
    if isinstance(s, VmiSpec) and s.lanes % c:
        raise sig.fail(f"group = {c} does not divide the source's {s.lanes} lanes")
    if isinstance(r, VmiSpec):
        if r.lanes != c:
            raise sig.fail(f"the result has {r.lanes} lanes: {c} group(s) give {c}")
        if isinstance(s, VmiSpec) and r.dtype != s.dtype:
            raise sig.fail(f"the result is {r}, the source {s}: one element type")


def _fp_reassoc(sig: Sig) -> None:
    s = sig["src"]
    if isinstance(s, VmiSpec) and s.dtype.is_float and not sig.params.get("reassoc"):
        raise sig.fail("floating add-reduction requires reassoc attr (a floating-point sum "
                       "in any order)")


def _neutral(dt: np.dtype, kind: str) -> Any:
    if dt.kind == "f":
        return -np.inf if kind == "max" else np.inf
    info = np.iinfo(dt)
    return info.min if kind == "max" else info.max


def _reduce(name: str, kind: str, doc: str) -> Instr:
    short = {"add": "add", "max": "max", "min": "min"}[kind]
    aka = {f"{g}reduce_{short}{k[0]}": k for g in ("", "group_") for k in ("float", "int")}

    def impl(m: Any, src: LVec, mask: LMask, *, group: int | None = None,
             reassoc: Any = None, pmode: str | None = None, signless: bool = False,
             spelling: str | None = None) -> LVec:
        no_merge(name.lower(), pmode)
        x = src.data
        if signless and kind != "add" and x.dtype.kind == "i":
            # (signless integers order unsigned: the reduction of their bits, viewed back)
            u = np.dtype(f"u{x.dtype.itemsize}")
            r = impl(m, LVec(x.view(u)), mask, group=group, pmode=pmode)
            return LVec(r.data.view(x.dtype))
        c = int(group or 1)
        if x.size % c:
            raise ExecutionError(f"{name.lower()}: group = {c} does not divide {x.size} lanes")
        on = active(mask, x.size).reshape(c, -1)
        rows = x.reshape(c, -1)
        dt = x.dtype
        if kind == "add":
            if dt.kind == "f":
                w = np.float32 if dt.itemsize <= 4 else dt
                with np.errstate(all="ignore"):
                    acc = np.zeros(c, w)
                    for j in range(rows.shape[1]):  # (lane order: one rounding per add)
                        acc = acc + np.where(on[:, j], rows[:, j].astype(w), w(0))
                    return LVec(acc.astype(dt))
            tot = np.where(on, rows.astype(np.int64), 0).sum(axis=1)
            bits = 8 * dt.itemsize
            return LVec((tot & ((1 << bits) - 1)).astype(np.dtype(f"u{dt.itemsize}"))
                        .view(dt) if bits < 64 else tot.astype(dt))
        neutral = _neutral(dt, kind)
        vals = np.where(on, rows, np.asarray(neutral).astype(dt))
        pick = np.max if kind == "max" else np.min
        return LVec(pick(vals, axis=1).astype(dt))

    impl.__doc__ = doc
    impl.__module__ = __name__
    static: tuple[Any, ...] = (_groups, same_lanes("src", "mask"), spelled(aka, "src"))
    params = [Param("group", None), Param("pmode", None), Param("signless", False), SPELLING]
    if kind == "add":
        static += (_fp_reassoc,)
        params.insert(1, Param("reassoc", None))
    return instr(f"VMI_{name}", pipe=Pipe.V, dialect="vmi",
                 operands=(Opnd("src", "lvec"), Opnd("mask", "lmask")), params=tuple(params),
                 results=(Opnd("result", "lvec"),), dtype_key=("src",),
                 static=static, ptoas=names(*aka, attrs=NUM_GROUPS,
                                            passes=lowering.reduce_limits(kind)))(impl)


VCADD = _reduce("VCADD", "add", "result[g] = the sum of the active lanes of group g (L / C "
                "lanes each, C = group or 1); integers wrap, floats accumulate in f32 in "
                "lane order.")
VCMAX = _reduce("VCMAX", "max", "result[g] = the maximum of the active lanes of group g "
                "(-inf / the type's minimum when none is active; signless integers, iN, "
                "compare unsigned).")
VCMIN = _reduce("VCMIN", "min", "result[g] = the minimum of the active lanes of group g "
                "(+inf / the type's maximum when none is active; signless integers, iN, "
                "compare unsigned).")


def _vbrc_static(sig: Sig) -> None:
    g, s, r = sig.params.get("group"), sig["value"], sig["result"]
    sdt = s.dtype if isinstance(s, VmiSpec) else s if isinstance(s, D.DType) else None
    if sdt is not None and isinstance(r, VmiSpec) and sdt != r.dtype:
        raise sig.fail("requires scalar or VMI vector input element type to match result "
                       f"element type ({sdt.name}, {r})")
    if g is None:
        if isinstance(s, VmiSpec) and s.lanes != 1:
            raise sig.fail(f"an ungrouped broadcast takes a scalar or a 1-lane vector, not "
                           f"{s}")
        return
    if not isinstance(g, int) or isinstance(g, bool) or g <= 0:
        raise sig.fail(f"group = {g!r}: it is a positive integer")
    if isinstance(s, VmiSpec) and s.lanes != g:
        raise sig.fail(f"group = {g} must equal the source's lane count ({s.lanes})")
    if isinstance(r, VmiSpec) and r.lanes % g:
        raise sig.fail(f"group = {g} does not divide the result's {r.lanes} lanes")


@instr("VMI_VBRC", pipe=Pipe.V, dialect="vmi", operands=(Opnd("value", "any"),),
       params=(Param("group", None), Param("result_type", None)),
       results=(Opnd("result", "lvec"),), static=(_vbrc_static,),
       ptoas=names("broadcast", "group_broadcast", attrs=NUM_GROUPS,
                   passes=lowering.BROADCAST))
def VMI_VBRC(m: Any, value: Any, *, group: int | None = None, result_type: Any = None) -> LVec:
    """Every lane = the scalar (or the 1-lane vector's lane); ``group = C``: lane
    g * L / C + j = value[g]."""
    to = result_spec(result_type, "vbrc")
    if isinstance(value, LVec):
        x = value.data.astype(to.dtype.np, copy=False)
        c = int(group or 1)
        if x.size != c or to.lanes % c:
            raise ExecutionError(f"vbrc: {x.size} source lanes for group = {group} and "
                                 f"{to.lanes} result lanes")
        return LVec(np.repeat(x, to.lanes // c))
    if group is not None:
        raise ExecutionError("vbrc: a grouped broadcast takes a vector of the group slots")
    return LVec(np.full(to.lanes, scalar_as(value, to.dtype), to.dtype.np))

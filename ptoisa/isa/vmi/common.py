"""What the VMI entries share: masks over logical lanes, the ``pmode`` rule, operand rules over
logical types, UB addressing in elements."""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from ... import dtypes as D
from ...errors import ExecutionError, PtoError
from ...vector.logical import LMask, LVec, VmiMaskSpec, VmiSpec, vmi_spec
from ...vector.regs import SPACES, Ptr, buffer_bytes, touch
from ..micro.common import scalar_as
from ..registry import Param, Sig, StaticRule
from ..spelling import Attr, Ptoas


def active(mask: LMask | None, n: int) -> np.ndarray:
    """One bool per lane of an ``n``-lane value: the mask's, all lanes without one."""
    if mask is None:
        return np.ones(n, np.bool_)
    if mask.bits.size != n:
        raise ExecutionError(f"the mask has {mask.bits.size} lanes, the vector {n}")
    return mask.bits


def zeroing(values: np.ndarray, mask: LMask | None) -> LVec:
    """A result under ``pmode = "zero"`` (vmi-isa/00 "Mask & Predication"): inactive lanes 0."""
    if mask is None or mask.bits.all():
        return LVec(values)
    return LVec(np.where(active(mask, values.size), values, values.dtype.type(0)))


def no_merge(name: str, pmode: Any) -> None:
    """``pmode = "merge"`` keeps "the destination's prior value": an SSA op has none, so a use
    of it is refused by name (vsel's merge is its false value: it does not call this)."""
    if pmode not in (None, "zero"):
        raise ExecutionError(f"operation 'pto.vmi.{name}' with pmode = \"{pmode}\" cannot be "
                             "executed by ptoisa yet (an SSA result has no prior value to "
                             "merge with)")


def result_spec(result_type: Any, what: str, mask: bool = False) -> Any:
    """The result's type: a spec, or the text of one (an eager call's ``result_type``)."""
    t = vmi_spec(result_type) if isinstance(result_type, str) else result_type
    want = VmiMaskSpec if mask else VmiSpec
    if not isinstance(t, want):
        kind = "!pto.vmi.mask" if mask else "!pto.vmi.vreg"
        raise ExecutionError(f"{what}: result_type must be a {kind} type, got {result_type!r}")
    return t


def ub_elems(m: Any, ptr: Ptr, idx: np.ndarray, dt: D.DType, what: str, *, role: str
             ) -> tuple[np.ndarray, np.ndarray]:
    """(a view of the UB elements of type ``dt`` spanning element offsets ``idx`` from
    ``ptr``, the offsets into that view): reads index it, writes assign through it. A
    pointer argument of the launched function is the array the launch bound to it (a
    ``!pto.ptr<T, ub>`` parameter: the memory it points at). ``role`` (``in`` / ``out``):
    how the caller uses the elements, told to an observer that asks (vector.regs.touch)."""
    size = dt.itemsize
    at_bytes = np.asarray(idx, np.int64) * size
    lo, hi = (int(idx.min()), int(idx.max())) if idx.size else (0, -1)
    if isinstance(ptr, np.ndarray):
        flat = ptr.reshape(-1)
        if flat.dtype.itemsize != size or not flat.flags.c_contiguous:
            raise ExecutionError(f"{what}: the pointer argument holds {flat.dtype} elements, "
                                 f"the access {dt.name}")
        if lo < 0 or hi >= flat.size:
            raise ExecutionError(f"{what}: elements [{lo}, {hi}] leave the pointer argument's "
                                 f"{flat.size} elements")
        touch(m, role, "GM", flat.view(np.uint8), at_bytes, size)
        return flat.view(dt.np), idx
    if not isinstance(ptr, Ptr):
        raise ExecutionError(f"{what}: the pointer must be an on-chip (ub) pointer")
    first = ptr.addr + lo * size
    if first < 0:
        raise ExecutionError(f"{what}: element offset {lo} is before the UB buffer")
    raw = buffer_bytes(m, ptr.space, first, (hi - lo + 1) * size, what, role=None)
    touch(m, role, SPACES[ptr.space], None, ptr.addr + at_bytes, size)
    return raw.view(dt.np), idx - lo


_DENSE = re.compile(r"dense<(.*)>\s*:\s*tensor<\s*(\d+)\s*x\s*([\w.!]+)\s*>", re.DOTALL)


def dense(value: Any, what: str) -> tuple[list[str], int, str]:
    """(the written elements, the tensor's count, its element type) of a ``dense<...> :
    tensor<NxT>`` attribute (an eager call may give a sequence: its items, its length, "");
    PtoError when it is none."""
    if isinstance(value, (list, tuple, np.ndarray)):
        items = [str(v) for v in np.asarray(value).reshape(-1).tolist()]
        return items, len(items), ""
    mt = _DENSE.fullmatch(str(value).strip()) if value is not None else None
    if mt is None:
        raise PtoError(f"{what}: requires dense elements constant attribute, got {value!r}")
    body = mt.group(1).strip().strip("[]")
    items = [x.strip() for x in body.split(",") if x.strip()]
    return items, int(mt.group(2)), mt.group(3).removeprefix("!pto.")


def index_list(value: Any) -> list[int]:
    """The lane indices of a shuffle's ``indices`` (``array<i64: ...>``, or a sequence)."""
    if isinstance(value, (list, tuple, np.ndarray)):
        return [int(v) for v in value]
    mt = re.fullmatch(r"array<\s*i\d+\s*:?(.*)>", str(value).strip(), re.DOTALL)
    if mt is None:
        raise PtoError(f"shuffle: indices must be an array<i64: ...>, got {value!r}")
    return [int(x) for x in mt.group(1).replace("\n", " ").split(",") if x.strip()]


# ---- static rules over logical types ----------------------------------------------------------

def same_lvec(*names: str) -> StaticRule:
    """The named vectors (operands or results) have one lane count and element type."""
    def rule(sig: Sig) -> None:
        ts = [(n, sig[n]) for n in names if isinstance(sig[n], VmiSpec)]
        for n, t in ts[1:]:
            if (t.lanes, t.dtype) != (ts[0][1].lanes, ts[0][1].dtype):
                what = "logical lane count" if t.lanes != ts[0][1].lanes else "element type"
                raise sig.fail(f"requires all VMI data values to have the same {what} ({n} is "
                               f"{t}, {ts[0][0]} is {ts[0][1]})")
    return rule


def same_lanes(*names: str, gran: bool = True) -> StaticRule:
    """The named vectors and masks have one logical lane count (vmi-isa/00: a mask has the
    lane count of every value it governs) and a mask of a concrete granularity (``b16``, set
    by layout assignment) has the width of the first named vector's elements (``gran``)."""
    def rule(sig: Sig) -> None:
        ts = [(n, sig[n]) for n in names if isinstance(sig[n], (VmiSpec, VmiMaskSpec))]
        for n, t in ts[1:]:
            if t.lanes != ts[0][1].lanes:
                if isinstance(t, VmiMaskSpec) and isinstance(ts[0][1], VmiSpec):
                    raise sig.fail(f"requires mask logical lane count to match data ({n} has "
                                   f"{t.lanes}, {ts[0][0]} {ts[0][1].lanes})")
                kind = "mask" if all(isinstance(x, VmiMaskSpec) for _, x in ts) else "data"
                raise sig.fail(f"requires all VMI {kind} values to have the same logical lane "
                               f"count ({n} has {t.lanes}, {ts[0][0]} {ts[0][1].lanes})")
        data = next((t for _, t in ts if isinstance(t, VmiSpec)), None)
        if not gran or data is None:
            return
        for n, t in ts:
            if isinstance(t, VmiMaskSpec) and t.gran in _GRAN_BYTES and \
                    _GRAN_BYTES[t.gran] != data.dtype.itemsize:
                raise sig.fail(f"requires mask granularity to match data element width ({n} "
                               f"is {t}, the data {data})")
    return rule


_GRAN_BYTES = {"b8": 1, "b16": 2, "b32": 4}


#: the attribute of the older op names (``group_reduce_addf``, ``group_store`` ...) that is
#: ``group`` of the ISA's names
NUM_GROUPS = {"num_groups": Attr("group")}


def names(*ops: str, attrs: dict[str, Attr] | None = None,
          passes: dict[str, tuple[Any, ...]] | None = None) -> Ptoas:
    """The other PTOAS names of a VMI entry (the op set of designs/vmi-implementation-manual.md
    3.1, which PTOAS's passes still write: ``pto.vmi.addf`` is ``vadd`` on floats); ``passes``:
    the limits of PTOAS's passes on it (``lowering.py``)."""
    return Ptoas(names=tuple(f"pto.vmi.{o}" for o in ops), attrs=attrs or {},
                 passes=passes or {})


#: the parameter the binder fills with the op's name (an entry of several names)
SPELLING = Param("spelling", None)


def spelled(kinds: dict[str, str], operand: str) -> StaticRule:
    """A name that says its element kind (``addf``: floats, ``addi``: integers) takes only
    that kind."""
    def rule(sig: Sig) -> None:
        name = sig.params.get("spelling")
        want = kinds.get(str(name).removeprefix("pto.vmi.")) if name else None
        t = sig[operand]
        if want and isinstance(t, VmiSpec) and \
                (t.dtype.is_float if want == "float" else t.dtype.is_int) is False:
            raise sig.fail(f"'{name}' takes {want} elements, got {t}")
    return rule


__all__ = ["NUM_GROUPS", "SPELLING", "active", "dense", "index_list", "names", "no_merge",
           "result_spec", "spelled", "same_lanes", "same_lvec", "scalar_as", "ub_elems",
           "zeroing"]

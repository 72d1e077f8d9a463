"""VMI loads and stores (vmi-isa/01-load-store.md, 07 "Gather / Scatter"): logical vectors
to and from UB, addressed in elements of the pointer's type.

* ``%v = pto.vmi.vload %src[%off]``: ``v[i] = ub[off + i]``; ``{dist_mode = "brc"}``:
  ``v[i] = ub[off]``; ``%src[%off], %stride {group = C}``: C rows of L/C elements, row g at
  ``off + g * stride`` (L == C: one element per group, the slot load);
* ``pto.vmi.vstore %v, %dst[%off], %mask``: the active lanes written, the others' elements
  kept; ``%v, %dst[%off], %stride {group = C}``: the rows of the group load, unmasked;
* ``%g = pto.vmi.vgather %src, %offsets, %mask``: ``g[i] = ub[offsets[i]]`` on active lanes,
  0 elsewhere.

Not executed yet (refused by name): ``dist_mode = "unpack"`` (the page gives the physical
UNPK distribution, not the logical lanes it makes) and the block-strided forms (a ``%block_stride``
operand)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...enums import Pipe
from ...errors import ExecutionError
from ...vector.logical import LMask, LVec, VmiSpec
from ...vector.regs import Ptr, PtrSpec
from ..registry import Opnd, Param, Sig, instr
from ..spelling import Form, Ptoas
from . import lowering
from .common import (
    NUM_GROUPS,
    SPELLING,
    active,
    names,
    no_merge,
    result_spec,
    same_lanes,
    ub_elems,
    zeroing,
)


def _to(result_type: Any, what: str) -> VmiSpec:
    return result_spec(result_type, what)  # type: ignore[no-any-return]


def _modes(sig: Sig, value: str) -> None:
    """vmi-isa/01 "attention": group, block stride and dist_mode exclude each other (but for
    the grouped broadcast load, ``dist_mode = "brc"`` with ``group``: designs/vmi-e2b-scale-
    broadcast-optimization.md 8); the stride operand comes with group only; the pointer's
    element type is the vector's."""
    p = sig.params
    group, dist = p.get("group"), p.get("dist_mode")
    stride, block = sig["stride"], sig["block_stride"]
    if group is not None and dist not in (None, "brc"):
        raise sig.fail("'group' and 'dist_mode' are mutually exclusive (but for dist_mode = "
                       "\"brc\", the grouped broadcast load)")
    if group is not None and stride is None:
        raise sig.fail("'group' requires a stride operand")
    if group is None and stride is not None:
        raise sig.fail("a stride operand requires 'group'")
    if block is not None and (group is not None or dist is not None):
        raise sig.fail("the block-stride form takes neither 'group' nor 'dist_mode'")
    if group is not None:
        v = sig[value]
        if not isinstance(group, int) or group <= 0:
            raise sig.fail(f"group = {group}: it is a positive integer")
        if isinstance(v, VmiSpec) and v.lanes % group:
            raise sig.fail(f"group = {group} does not divide the {v.lanes} lanes")
    ptr, v = sig["source" if "source" in sig.types else "dest"], sig[value]
    ub_only(sig, ptr)
    if isinstance(ptr, PtrSpec) and isinstance(v, VmiSpec) and dist != "unpack" \
            and ptr.dtype.itemsize != v.dtype.itemsize and not _narrowing(sig, ptr, v):
        role = "destination" if "dest" in sig.types else "source"
        raise sig.fail(f"requires memory {role} element type to match VMI data element type "
                       f"(the pointer is {ptr}, the vector {v})")


def ub_only(sig: Sig, ptr: Any) -> None:
    """VMI memory ops address UB (vmi-isa/01: ``!pto.ptr<T, ub>``)."""
    if isinstance(ptr, PtrSpec) and ptr.space != "ub":
        role = "destination" if "dest" in sig.types else "source"
        raise sig.fail(f"requires memory {role} to be UB-backed, got {ptr}")


def _narrowing(sig: Sig, ptr: PtrSpec, v: VmiSpec) -> bool:
    """An integer store to a narrower integer pointer (the group-slot stores of e8m0 scales,
    ``vreg<8xi32>`` to ``ptr<ui8>``): each lane's low bits, as the packing stores (PK_B32,
    PK4_B32: designs/vmi-lane-stride-generalization-design.md) write the low part of a
    lane."""
    return "dest" in sig.types and v.dtype.is_int and ptr.dtype.is_int \
        and ptr.dtype.itemsize < v.dtype.itemsize


def _rows(lanes: int, offset: int, group: int | None, stride: int | None) -> np.ndarray:
    if group is None:
        return offset + np.arange(lanes)
    per = lanes // group
    return (offset + np.arange(group)[:, None] * int(stride or 0)
            + np.arange(per)[None, :]).reshape(-1)


@instr("VMI_VLOAD", pipe=Pipe.V, dialect="vmi",
       operands=(Opnd("source", "ptr"), Opnd("offset", "index"),
                 Opnd("stride", "index", optional=True),
                 Opnd("block_stride", "scalar", optional=True)),
       params=(Param("dist_mode", None), Param("group", None), Param("pmode", None),
               Param("result_type", None), SPELLING),
       results=(Opnd("result", "lvec"), Opnd("high", "lvec", optional=True)),
       dtype_key=("source",),
       static=(lambda sig: _modes(sig, "result"), lambda sig: _pairs(sig, "high")),
       ptoas=names("load", "group_load", "group_slot_load", "group_broadcast_load",
                   attrs=NUM_GROUPS,
                   passes=lowering.LOAD))
def VMI_VLOAD(m: Any, source: Ptr, offset: int, stride: int | None = None,
              block_stride: int | None = None, *, dist_mode: str | None = None,
              group: int | None = None, pmode: str | None = None,
              result_type: Any = None, spelling: str | None = None
              ) -> LVec | tuple[LVec, LVec]:
    """result[i] = ub[offset + i] (continuous); ``dist_mode = "brc"``: every lane ub[offset];
    ``group = C`` with ``stride``: lane g * L/C + j = ub[offset + g * stride + j];
    ``dist_mode = "brc"`` with ``group = C`` (``pto.vmi.group_broadcast_load``: one value per
    group, broadcast to its lanes): lane g * L/C + j = ub[offset + g * stride];
    ``dist_mode = "dintlv"`` (two results): the 2L elements from offset, the even ones in the
    first result, the odd ones in ``high``."""
    to = _to(result_type, "vload")
    if dist_mode == "dintlv" and block_stride is None:
        idx = int(offset) + np.arange(2 * to.lanes)
        view, at = ub_elems(m, source, idx, to.dtype, "the loaded", role="in")
        both = view[at]
        return LVec(both[0::2].copy()), LVec(both[1::2].copy())
    if block_stride is not None or dist_mode not in (None, "continuous", "brc"):
        form = "the block-stride form" if block_stride is not None else \
            f"dist_mode = \"{dist_mode}\""
        raise ExecutionError(f"operation 'pto.vmi.vload' cannot be executed by ptoisa yet "
                             f"(with {form})")
    if spelling == "pto.vmi.group_broadcast_load":
        dist_mode = "brc"
    if dist_mode == "brc" and group is not None:
        idx = int(offset) + np.arange(to.lanes) // (to.lanes // int(group)) * int(stride or 0)
    elif dist_mode == "brc":
        idx = np.full(to.lanes, int(offset))
    else:
        idx = _rows(to.lanes, int(offset), group, stride)
    view, at = ub_elems(m, source, idx, to.dtype, "the loaded", role="in")
    return LVec(view[at].copy())


@instr("VMI_VSTORE", pipe=Pipe.V, dialect="vmi",
       operands=(Opnd("value", "lvec"), Opnd("dest", "ptr", "out"), Opnd("offset", "index"),
                 Opnd("stride", "index", optional=True),
                 Opnd("block_stride", "scalar", optional=True),
                 Opnd("repeat_stride", "scalar", optional=True),
                 Opnd("mask", "lmask", optional=True), Opnd("high", "lvec", optional=True)),
       params=(Param("dist_mode", None), Param("group", None), Param("pmode", None)),
       dtype_key=("value",),
       static=(lambda sig: _modes(sig, "value"), same_lanes("value", "high", "mask"),
               lambda sig: _group_unmasked(sig), lambda sig: _pairs(sig, "high")),
       ptoas=Ptoas(names=tuple(f"pto.vmi.{n}" for n in ("store", "masked_store",
                                                         "group_store")),
                   attrs=NUM_GROUPS, passes=lowering.STORE,
                   # (the interleaving form writes its second vector after the first)
                   forms={"pto.vmi.vstore": (Form(inputs=("value", "high", "dest", "offset")),)}))
def VMI_VSTORE(m: Any, value: LVec, dest: Ptr, offset: int, stride: int | None = None,
               block_stride: int | None = None, repeat_stride: int | None = None,
               mask: LMask | None = None,
               high: LVec | None = None, *, dist_mode: str | None = None,
               group: int | None = None, pmode: str | None = None) -> None:
    """ub[offset + i] = value[i] on the active lanes (the other elements keep their bytes);
    ``group = C`` with ``stride``: lane g * L/C + j to ub[offset + g * stride + j]. Integer
    lanes stored through a narrower integer pointer keep their low bits. Two values with
    ``dist_mode = "dintlv"`` (or ``"intlv"``): interleaved, value[i] at offset + 2i and
    high[i] at offset + 2i + 1 (the inverse of the deinterleaving load). The block-stride
    form (``block_stride``, and the ``repeat_stride`` of pto.vsstb, both i16) is refused by
    name."""
    if high is not None and block_stride is None and mask is None:
        both = np.empty(2 * value.data.size, value.data.dtype)
        both[0::2], both[1::2] = value.data, high.data
        value = LVec(both)
    elif block_stride is not None or dist_mode not in (None, "continuous"):
        form = "the block-stride form" if block_stride is not None else \
            f"dist_mode = \"{dist_mode}\""
        raise ExecutionError(f"operation 'pto.vmi.vstore' cannot be executed by ptoisa yet "
                             f"(with {form})")
    x = value.data
    dt = value.dtype
    if isinstance(dest, Ptr) and dest.dtype.itemsize < dt.itemsize and dt.is_int \
            and dest.dtype.is_int:
        dt = dest.dtype
        x = x.view(np.dtype(f"u{x.dtype.itemsize}")).astype(np.dtype(f"u{dt.itemsize}")) \
            .view(dt.np)
    idx = _rows(x.size, int(offset), group, stride)
    on = active(mask, x.size)
    view, at = ub_elems(m, dest, idx[on], dt, "the stored", role="out")
    view[at] = x[on]


def _offsets(sig: Sig) -> None:
    o = sig["offsets"]
    if isinstance(o, VmiSpec) and not (o.dtype.is_int and o.dtype.itemsize in (2, 4) and (
            o.signless or not o.dtype.is_signed)):
        raise sig.fail(f"requires signless or unsigned 16-bit or 32-bit integer offsets, got {o}")


def _pairs(sig: Sig, high: str) -> None:
    """The interleaving forms (two results of a load, two values of a store) come with
    ``dist_mode = "dintlv"`` (``"intlv"`` for a store), and that mode with them."""
    dist = sig.params.get("dist_mode")
    pair = sig[high] is not None
    load = "result" in sig.types
    modes = ("dintlv",) if load else ("dintlv", "intlv")
    # (an eager load states no result types: its two results are dist_mode's)
    stated = not load or sig["result"] is not None
    if pair != (dist in modes) and (stated or pair):
        raise sig.fail(f"dist_mode = {dist!r} "
                       f"{'does not take' if pair else 'takes'} two vectors "
                       f"(the interleaving form is dist_mode = \"dintlv\")")
    if pair and (sig.params.get("group") is not None or sig["mask"] is not None):
        raise sig.fail("the interleaving form takes neither 'group' nor a mask")


def _group_unmasked(sig: Sig) -> None:
    if sig.params.get("group") is not None and sig["mask"] is not None:
        raise sig.fail("a group store takes no mask (group stores are unpredicated)")


@instr("VMI_VGATHER", pipe=Pipe.V, dialect="vmi",
       operands=(Opnd("source", "ptr"), Opnd("offsets", "lvec"),
                 Opnd("mask", "lmask", optional=True)),
       params=(Param("pmode", None), Param("result_type", None)),
       results=(Opnd("result", "lvec"),), dtype_key=("source",),
       # (the mask's granularity is the gathered elements' width, not the offsets')
       static=(same_lanes("result", "offsets", "mask"), lambda sig: ub_only(sig, sig["source"]),
               lambda sig: _offsets(sig)), ptoas=names(passes=lowering.GATHER))
def VMI_VGATHER(m: Any, source: Ptr, offsets: LVec, mask: LMask | None = None, *,
                pmode: str | None = None, result_type: Any = None) -> LVec:
    """result[i] = ub[source + offsets[i]] (element offsets) on active lanes, 0 elsewhere."""
    no_merge("vgather", pmode)
    to = _to(result_type, "vgather")
    on = active(mask, offsets.data.size)
    idx = offsets.data.astype(np.int64)
    out = np.zeros(to.lanes, to.dtype.np)
    if on.any():
        view, at = ub_elems(m, source, idx[on], to.dtype, "the gathered", role="in")
        out[on] = view[at]
    return zeroing(out, mask)


# ---- masked, expanding, compressing and scattering memory ops (the manual's memory set) ----

@instr("VMI_MASKED_LOAD", pipe=Pipe.V, dialect="vmi",
       operands=(Opnd("source", "ptr"), Opnd("offset", "index"), Opnd("mask", "lmask"),
                 Opnd("passthru", "lvec", optional=True)),
       params=(Param("result_type", None),), results=(Opnd("result", "lvec"),),
       dtype_key=("source",),
       static=(same_lanes("result", "mask", "passthru"),
               lambda sig: ub_only(sig, sig["source"])))
def VMI_MASKED_LOAD(m: Any, source: Ptr, offset: int, mask: LMask,
                    passthru: LVec | None = None, *, result_type: Any = None) -> LVec:
    """result[i] = mask[i] ? ub[offset + i] : passthru[i] (0 without passthru); inactive
    lanes read no memory."""
    to = _to(result_type, "masked_load")
    on = active(mask, to.lanes)
    out = passthru.data.copy() if passthru is not None else np.zeros(to.lanes, to.dtype.np)
    if on.any():
        idx = int(offset) + np.nonzero(on)[0]
        view, at = ub_elems(m, source, idx, to.dtype, "the loaded", role="in")
        out[on] = view[at]
    return LVec(out)


@instr("VMI_EXPAND_LOAD", pipe=Pipe.V, dialect="vmi",
       operands=(Opnd("source", "ptr"), Opnd("offset", "index"), Opnd("mask", "lmask"),
                 Opnd("passthru", "lvec", optional=True)),
       params=(Param("result_type", None),), results=(Opnd("result", "lvec"),),
       dtype_key=("source",),
       static=(same_lanes("result", "mask", "passthru"),
               lambda sig: ub_only(sig, sig["source"])),
       ptoas=names(passes=lowering.EXPAND_LOAD))
def VMI_EXPAND_LOAD(m: Any, source: Ptr, offset: int, mask: LMask,
                    passthru: LVec | None = None, *, result_type: Any = None) -> LVec:
    """The k-th active lane gets ub[offset + k] (the manual's "vmi.expand_load"); the others
    passthru (0 without it)."""
    to = _to(result_type, "expand_load")
    on = active(mask, to.lanes)
    out = passthru.data.copy() if passthru is not None else np.zeros(to.lanes, to.dtype.np)
    k = int(on.sum())
    if k:
        view, at = ub_elems(m, source, int(offset) + np.arange(k), to.dtype, "the loaded",
                            role="in")
        out[on] = view[at]
    return LVec(out)


@instr("VMI_COMPRESS_STORE", pipe=Pipe.V, dialect="vmi",
       operands=(Opnd("value", "lvec"), Opnd("dest", "ptr", "out"), Opnd("offset", "index"),
                 Opnd("mask", "lmask")),
       dtype_key=("value",),
       static=(same_lanes("value", "mask"), lambda sig: ub_only(sig, sig["dest"])),
       ptoas=names(passes=lowering.COMPRESS_STORE))
def VMI_COMPRESS_STORE(m: Any, value: LVec, dest: Ptr, offset: int, mask: LMask) -> None:
    """The active lanes, in lane order, to ub[offset], ub[offset + 1], ... (the manual's
    "pto.vmi.compress_store")."""
    on = active(mask, value.data.size)
    k = int(on.sum())
    if k:
        view, at = ub_elems(m, dest, int(offset) + np.arange(k), value.dtype, "the stored",
                            role="out")
        view[at] = value.data[on]


@instr("VMI_VSCATTER", pipe=Pipe.V, dialect="vmi",
       operands=(Opnd("value", "lvec"), Opnd("dest", "ptr", "out"), Opnd("offsets", "lvec"),
                 Opnd("mask", "lmask", optional=True)),
       dtype_key=("value",),
       static=(same_lanes("value", "offsets", "mask"), lambda sig: ub_only(sig, sig["dest"]),
               lambda sig: _offsets(sig)), ptoas=names("scatter", passes=lowering.SCATTER))
def VMI_VSCATTER(m: Any, value: LVec, dest: Ptr, offsets: LVec,
                 mask: LMask | None = None) -> None:
    """ub[dest + offsets[i]] = value[i] on active lanes. Two active lanes with one offset
    are an error: which one lands is an open question of the design (vmi-implementation-
    manual.md: "duplicate-index ordering")."""
    on = active(mask, value.data.size)
    idx = offsets.data.astype(np.int64)[on]
    if np.unique(idx).size != idx.size:
        raise ExecutionError("operation 'pto.vmi.vscatter' with two active lanes on one offset "
                             "cannot be executed by ptoisa yet (the order of duplicate indices "
                             "is not defined)")
    if idx.size:
        view, at = ub_elems(m, dest, idx, value.dtype, "the scattered", role="out")
        view[at] = value.data[on]

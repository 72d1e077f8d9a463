"""VMI constants and permutations (designs/vmi-implementation-manual.md 3.1 / 3.2:
"Construction", "Permutation"), with the verifier rules of 3.2 in PTOAS's words.

* ``"pto.vmi.constant"() {value = dense<...> : tensor<NxT>}``: the lanes of the dense value (a
  splat fills every lane);
* ``"pto.vmi.constant_mask"() {value = dense<...> : tensor<Nxi1>}``: the mask of those bools;
* ``"pto.vmi.shuffle"(%src) {indices = array<i64: ...>}``: ``result[i] = src[indices[i]]``;
* ``"pto.vmi.channel_split"(%src)``: C results of M lanes, ``out[c][i] = src[i * C + c]``;
* ``"pto.vmi.channel_merge"(%in0, ...)``: ``result[i * C + c] = in[c][i]``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ... import dtypes as D
from ...enums import Pipe
from ...errors import ExecutionError
from ...vector.logical import LMask, LVec, VmiMaskSpec, VmiSpec
from ..registry import Opnd, Param, Sig, instr
from . import lowering
from .common import active, dense, index_list, names, result_spec, same_lanes


def _elem_name(dt: D.DType, signless: bool) -> set[str]:
    names = {dt.name}
    if dt.is_int and dt.is_signed:
        names |= {"s" + dt.name} if not signless else set()
    return names


def _number(text: str, dt: D.DType) -> Any:
    t = text.lower()
    if t in ("true", "false"):
        return t == "true"
    return float(t) if dt.is_float else int(t, 0)


def _constant_static(sig: Sig) -> None:
    r = sig["result"] if sig["result"] is not None else sig.params.get("result_type")
    items, n, elem = dense(sig.params.get("value"), "constant")
    if not isinstance(r, VmiSpec):
        return
    if elem and elem not in _elem_name(r.dtype, r.signless) and D.dtype(elem) != r.dtype:
        raise sig.fail(f"requires dense constant element type to match result element type "
                       f"({elem}, {r})")
    if n != r.lanes or len(items) not in (1, n):
        raise sig.fail(f"requires dense constant element count to match result logical lane "
                       f"count ({n}, {r})")


@instr("VMI_CONSTANT", pipe=Pipe.V, dialect="vmi", operands=(),
       params=(Param("value", None), Param("result_type", None)),
       results=(Opnd("result", "lvec"),), static=(_constant_static,),
       ptoas=names(passes=lowering.CONSTANT))
def VMI_CONSTANT(m: Any, *, value: Any = None, result_type: Any = None) -> LVec:
    """result = the dense value's elements (a splat in every lane)."""
    to = result_spec(result_type, "constant")
    items, _, _ = dense(value, "constant")
    vals = [_number(x, to.dtype) for x in items]
    with np.errstate(all="ignore"):
        arr = np.array(vals, np.float64 if to.dtype.is_float else np.int64)
        out = arr.astype(to.dtype.np) if to.dtype.is_float else \
            (arr & ((1 << 8 * to.dtype.itemsize) - 1)).astype(
                np.dtype(f"u{to.dtype.itemsize}")).view(to.dtype.np)
    return LVec(np.resize(out, to.lanes) if out.size == 1 else out)


def _mask_static(sig: Sig) -> None:
    r = sig["result"] if sig["result"] is not None else sig.params.get("result_type")
    items, n, elem = dense(sig.params.get("value"), "constant_mask")
    if elem and elem != "i1":
        raise sig.fail(f"requires dense mask constant element type to be i1, got {elem}")
    if isinstance(r, VmiMaskSpec) and (n != r.lanes or len(items) not in (1, n)):
        raise sig.fail("requires dense mask constant element count to match result logical "
                       f"lane count ({n}, {r})")


@instr("VMI_CONSTANT_MASK", pipe=Pipe.V, dialect="vmi", operands=(),
       params=(Param("value", None), Param("result_type", None)),
       results=(Opnd("result", "lmask"),), static=(_mask_static,))
def VMI_CONSTANT_MASK(m: Any, *, value: Any = None, result_type: Any = None) -> LMask:
    """result = the dense i1 value's bools (a splat in every lane)."""
    to = result_spec(result_type, "constant_mask", mask=True)
    items, _, _ = dense(value, "constant_mask")
    bits = np.array([x.lower() in ("true", "1") for x in items], np.bool_)
    return LMask(np.resize(bits, to.lanes) if bits.size == 1 else bits)


def _shuffle_static(sig: Sig) -> None:
    s, r = sig["src"], sig["result"] if sig["result"] is not None else \
        sig.params.get("result_type")
    idx = index_list(sig.params.get("indices"))
    if isinstance(r, VmiSpec):
        if len(idx) != r.lanes:
            raise sig.fail(f"requires the static mask length ({len(idx)}) to equal the result "
                           f"lane count ({r.lanes})")
        if isinstance(s, VmiSpec) and r.dtype != s.dtype:
            raise sig.fail(f"requires the result element type to match the source ({s}, {r})")
    if isinstance(s, VmiSpec) and any(i < 0 or i >= s.lanes for i in idx):
        bad = next(i for i in idx if i < 0 or i >= s.lanes)
        raise sig.fail(f"each mask index selects an existing source logical lane ({bad} of "
                       f"{s.lanes})")


@instr("VMI_SHUFFLE", pipe=Pipe.V, dialect="vmi", operands=(Opnd("src", "lvec"),),
       params=(Param("indices", None), Param("result_type", None)),
       results=(Opnd("result", "lvec"),), static=(_shuffle_static,),
       ptoas=names(passes=lowering.SHUFFLE))
def VMI_SHUFFLE(m: Any, src: LVec, *, indices: Any = None, result_type: Any = None) -> LVec:
    """result[i] = src[indices[i]]."""
    idx = np.array(index_list(indices), np.int64)
    if idx.size and (int(idx.min()) < 0 or int(idx.max()) >= src.data.size):
        raise ExecutionError(f"shuffle: an index leaves the {src.data.size} source lanes")
    return LVec(src.data[idx].copy())


def _split_static(sig: Sig) -> None:
    s, outs = sig["src"], sig.params.get("result_types")
    if outs is None:
        return
    if len(outs) < 2:
        raise sig.fail("requires at least two channel results")
    first = outs[0]
    if isinstance(s, VmiSpec) and all(isinstance(t, VmiSpec) for t in outs):
        if any((t.lanes, t.dtype) != (first.lanes, first.dtype) for t in outs) or \
                s.lanes != len(outs) * first.lanes or first.dtype != s.dtype:
            raise sig.fail("requires source lane count to equal result count times per-channel "
                           f"lane count ({s}, {len(outs)} x {first})")


@instr("VMI_CHANNEL_SPLIT", pipe=Pipe.V, dialect="vmi", operands=(Opnd("src", "lvec"),),
       params=(Param("result_types", None),), results=(Opnd("channels", "any"),),
       static=(_split_static, lowering.split_layout),
       ptoas=names(passes=lowering.CHANNEL_SPLIT))
def VMI_CHANNEL_SPLIT(m: Any, src: LVec, *, result_types: Any = None) -> tuple[LVec, ...]:
    """C channels (C = the results bound), out[c][i] = src[i * C + c]."""
    c = len(result_types) if result_types is not None else 2
    if c < 2 or src.data.size % c:
        raise ExecutionError(f"channel_split: {src.data.size} lanes into {c} channels")
    return tuple(LVec(src.data[k::c].copy()) for k in range(c))


def _merge_static(sig: Sig) -> None:
    ins, r = sig["inputs"], sig["result"] if sig["result"] is not None else \
        sig.params.get("result_type")
    if ins is None:
        return
    if len(ins) < 2:
        raise sig.fail("requires at least two channel operands")
    first = ins[0]
    if isinstance(r, VmiSpec) and all(isinstance(t, VmiSpec) for t in ins) and (
            any((t.lanes, t.dtype) != (first.lanes, first.dtype) for t in ins)
            or r.lanes != len(ins) * first.lanes or r.dtype != first.dtype):
        raise sig.fail("requires result lane count and element type to match merged channels "
                       f"({len(ins)} x {first}, {r})")


@instr("VMI_CHANNEL_MERGE", pipe=Pipe.V, dialect="vmi", operands=(Opnd("inputs", "group"),),
       params=(Param("result_type", None),), results=(Opnd("result", "lvec"),),
       static=(_merge_static,), ptoas=names(passes=lowering.CHANNEL_MERGE))
def VMI_CHANNEL_MERGE(m: Any, inputs: tuple[LVec, ...], *, result_type: Any = None) -> LVec:
    """result[i * C + c] = inputs[c][i] (C operands of one lane count)."""
    c = len(inputs)
    if c < 2 or len({x.data.size for x in inputs}) != 1:
        raise ExecutionError("channel_merge: two or more channels of one lane count")
    out = np.empty(c * inputs[0].data.size, inputs[0].data.dtype)
    for k, x in enumerate(inputs):
        out[k::c] = x.data
    return LVec(out)


@instr("VMI_COMPRESS", pipe=Pipe.V, dialect="vmi",
       operands=(Opnd("src", "lvec"), Opnd("mask", "lmask")),
       results=(Opnd("result", "lvec"),), dtype_key=("src",),
       static=(same_lanes("src", "mask", "result"),), ptoas=names(passes=lowering.COMPRESS))
def VMI_COMPRESS(m: Any, src: LVec, mask: LMask) -> LVec:
    """The active lanes of src in lane order at the front, 0 after them (the manual: the tail
    is "zero/undef" at the VMI level; ptoisa gives 0, the micro-op vsqz's zeroing)."""
    on = active(mask, src.data.size)
    out = np.zeros_like(src.data)
    kept = src.data[on]
    out[:kept.size] = kept
    return LVec(out)


def _prefix_static(sig: Sig) -> None:
    r = sig["result"]
    if isinstance(r, VmiSpec) and not (r.dtype.is_int and r.signless):
        raise sig.fail(f"requires signless integer result element type (a signless i8 / i16 / "
                       f"i32, got {r})")


@instr("VMI_ACTIVE_PREFIX_INDEX", pipe=Pipe.V, dialect="vmi", operands=(Opnd("mask", "lmask"),),
       params=(Param("result_type", None),), results=(Opnd("result", "lvec"),),
       static=(same_lanes("mask", "result"), _prefix_static),
       ptoas=names(passes=lowering.ACTIVE_PREFIX))
def VMI_ACTIVE_PREFIX_INDEX(m: Any, mask: LMask, *, result_type: Any = None) -> LVec:
    """result[i] = the number of active lanes before lane i (popcount(mask[0 .. i)))."""
    to = result_spec(result_type, "active_prefix_index")
    bits = mask.bits.astype(np.int64)
    prefix = np.concatenate([[0], np.cumsum(bits)[:-1]])
    return LVec((prefix & ((1 << 8 * to.dtype.itemsize) - 1)).astype(to.dtype.np))

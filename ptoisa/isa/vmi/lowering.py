"""The limits of PTOAS's VMI passes on single ops (``Ptoas.passes`` of the entries): what
``vmi-to-vpto`` cannot lower (designs/vmi-implementation-manual.md "OneToN Conversion
Details": each op becomes one physical op per register, so most lowerings need whole
registers, a contiguous layout, or registers that line up) and what the layout gate
``pto-validate-vmi-layout-ir`` finds no layout table row for.

A rule here judges the types the program writes: where a value carries no layout yet (the
layout pass of the same RUN line assigns it), it cannot tell and makes no claim. PTOAS's
diagnostics start with a prefix naming their kind (``VMI-UNSUPPORTED:``: no lowering for
this shape; ``VMI-LAYOUT-CONTRACT:``: no layout table row; ``VMI-RESIDUAL-OP:`` a VMI op
left unconverted), which the messages carry."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ...vector.logical import VmiMaskSpec, VmiSpec, lane_map, parse_layout
from ...vector.regs import GRANULARITY
from ..registry import Sig, StaticRule
from .common import dense, index_list

TO_VPTO = "vmi-to-vpto"
ASSIGN = "vmi-layout-assignment"
#: the parameter a pass's rules find the integer operands' constants in (operand -> value;
#: an operand no arith.constant defines is not there)
CONSTANTS = "constants"
LAYOUT_GATE = "pto-validate-vmi-layout-ir"
UNSUPPORTED = "VMI-UNSUPPORTED: "
CONTRACT = "VMI-LAYOUT-CONTRACT: "
RESIDUAL = "VMI-RESIDUAL-OP: "


# ---- the physical registers of a layout-assigned type ------------------------------------

def _elem_bytes(spec: Any) -> int:
    if isinstance(spec, VmiSpec):
        return spec.dtype.itemsize
    return GRANULARITY.get(spec.gran, 0)


def placed(spec: Any) -> bool:
    """A layout-assigned type whose registers are known (a mask: of a concrete granularity)."""
    if isinstance(spec, VmiSpec):
        return spec.layout is not None
    return isinstance(spec, VmiMaskSpec) and spec.layout is not None and \
        spec.gran in GRANULARITY


def chunks(spec: Any) -> list[np.ndarray]:
    """The lane maps of its registers (``ptoisa.vector.logical.lane_map``): -1 is padding."""
    return lane_map(spec.lanes, _elem_bytes(spec), parse_layout(spec.layout))


def full(spec: Any) -> bool:
    """Every lane of every register holds a logical lane (no padding, no tail)."""
    return all(bool((m >= 0).all()) for m in chunks(spec))


def kind(spec: Any) -> str:
    return parse_layout(spec.layout).kind


def dense_layout(spec: Any) -> bool:
    """``#pto.vmi.layout<contiguous>`` with lane stride 1."""
    lay = parse_layout(spec.layout)
    return lay.kind == "contiguous" and lay.stride == 1


def footprint(spec: Any) -> list[frozenset[int]]:
    """The bytes of each register its logical lanes occupy."""
    size = _elem_bytes(spec)
    return [frozenset(int(p) * size + b for p in np.flatnonzero(m >= 0) for b in range(size))
            for m in chunks(spec)]


def part_chunks(spec: Any) -> list[int]:
    """A deinterleaved type's registers per part (its parts hold ceil / floor of L / F)."""
    lay = parse_layout(spec.layout)
    f, per = lay.factor, 256 // _elem_bytes(spec)
    return [-(-((spec.lanes - p + f - 1) // f) * lay.stride // per) for p in range(f)]


def _rule(names: tuple[str, ...], test: Callable[[Sig, list[Any]], str]) -> StaticRule:
    """A rule over the named types, made only when each is layout-assigned: ``test`` gives
    the refusal ("" when it lowers)."""
    def rule(sig: Sig) -> None:
        ts = [sig[n] if sig.types.get(n) is not None else sig.params.get(n) for n in names]
        if all(placed(t) for t in ts):
            why = test(sig, ts)
            if why:
                raise sig.fail(why)
    return rule


# ---- vmi-to-vpto ---------------------------------------------------------------------------

def _prefix(sig: Sig, ts: list[Any]) -> str:
    (m,) = ts
    if dense_layout(m) and len(chunks(m)) == 1 and full(m):
        return ""
    return (f"{UNSUPPORTED}pto.vmi.active_prefix_index lowers through pto.vusqz only for one "
            f"contiguous physical chunk ({m}: padding mask lanes cannot affect the observable "
            "prefix)")


ACTIVE_PREFIX = {TO_VPTO: (_rule(("mask",), _prefix),)}


def _squeeze(op: str, via: str) -> Callable[[Sig, list[Any]], str]:
    def test(sig: Sig, ts: list[Any]) -> str:
        (v,) = ts
        if dense_layout(v) and len(chunks(v)) == 1 and full(v):
            return ""
        why = (f"multi-chunk {op} needs cross-chunk compaction" if len(chunks(v)) > 1 else
               "padding mask lanes cannot be squeezed into the result")
        return (f"{UNSUPPORTED}pto.vmi.{op} lowers through {via} only for one contiguous full "
                f"physical chunk ({v}: {why})")
    return test


COMPRESS = {TO_VPTO: (_rule(("src",), _squeeze("compress", "pto.vsqz")),)}
COMPRESS_STORE = {TO_VPTO: (_rule(("value",), _squeeze("compress_store",
                                                       "pto.vsqz + pto.vstur")),)}


def _channels(op: str, count: Callable[[Sig], int]) -> StaticRule:
    def rule(sig: Sig) -> None:
        n = count(sig)
        if n and n not in (2, 4):
            raise sig.fail(f"{UNSUPPORTED}pto.vmi.{op} supports only 2 or 4 channels (got {n})")
    return rule


def _split_arity(sig: Sig) -> None:
    s, outs = sig["src"], sig.params.get("result_types") or ()
    if not (placed(s) and outs and all(placed(t) for t in outs)):
        return
    if len(chunks(s)) != sum(len(chunks(t)) for t in outs) or not full(s):
        raise sig.fail(f"{UNSUPPORTED}pto.vmi.channel_split requires source layout to be "
                       "contiguous or matching deinterleaved channel layout, complete physical "
                       "channel groups (requires source and result to have the same physical "
                       f"arity: {s} into {len(outs)} x {outs[0]})")


def split_layout(sig: Sig) -> None:
    """channel_split's op verifier: a layout-assigned source is contiguous, or deinterleaved
    by the result count (each part is one channel)."""
    s, outs = sig["src"], sig.params.get("result_types") or ()
    if isinstance(s, VmiSpec) and s.layout is not None and outs:
        lay = parse_layout(s.layout)
        if lay.kind != "contiguous" and not (lay.kind == "deinterleaved" and
                                             lay.factor == len(outs)):
            raise sig.fail("requires layout-assigned channel_split source to be contiguous or "
                           f"deinterleaved by result count ({s}, {len(outs)} results)")


CHANNEL_SPLIT = {TO_VPTO: (_channels("channel_split",
                                     lambda sig: len(sig.params.get("result_types") or ())),
                           _split_arity)}
CHANNEL_MERGE = {TO_VPTO: (_channels("channel_merge", lambda sig: len(sig["inputs"] or ())),)}


def _bitcast_row(ts: list[Any]) -> str:
    """The layout gate's bitcast table: one layout on both sides; a bitcast that changes the
    element width keeps its lanes in place only in the contiguous layout."""
    s, r = ts
    why = ""
    if s.layout != r.layout:
        why = "requires matching source and result layouts"
    elif s.dtype.bits != r.dtype.bits and not dense_layout(s):
        why = "width-changing bitcast layout does not match a bitcast layout table row"
    return (f"{CONTRACT}pto.vmi.bitcast has no registered layout support: {why} ({s} -> {r})"
            if why else "")


def _same_bytes(sig: Sig, ts: list[Any]) -> bool:
    s, r = ts
    return footprint(s) == footprint(r)


BITCAST = {
    TO_VPTO: (_rule(("src", "result"), lambda sig, ts: "" if _same_bytes(sig, ts) else (
        f"{UNSUPPORTED}pto.vmi.bitcast requires matching source/result layouts (the registers "
        f"of {ts[0]} and {ts[1]} hold different bytes)")),),
    LAYOUT_GATE: (_rule(("src", "result"), lambda sig, ts: _bitcast_row(ts)),),
}

#: the predicates the compare lowering maps onto pto.vcmp's modes
_LOWERED_PREDICATES = ("eq", "ne", "lt", "le", "gt", "ge", "oeq", "one", "olt", "ole", "ogt",
                       "oge")


def _predicate(sig: Sig) -> None:
    cmp = sig.params.get("cmp")
    if isinstance(cmp, str) and cmp not in _LOWERED_PREDICATES:
        raise sig.fail(f"unsupported compare predicate '{cmp}'; expected eq/ne/lt/le/gt/ge, or "
                       "oeq/one/olt/ole/ogt/oge")


COMPARE = {TO_VPTO: (_predicate,)}


def _splat(sig: Sig) -> None:
    value = sig.params.get("value")
    if value is None:
        return
    items, _, _ = dense(value, "constant")
    if len(set(items)) > 1:
        raise sig.fail(f"{UNSUPPORTED}non-splat pto.vmi.constant requires a vreg immediate or "
                       "scratch materialization plan")


CONSTANT = {TO_VPTO: (_splat,)}

_PLAIN = ("contiguous", "deinterleaved", "block_deinterleaved")


def _ensure(what: str, helper: str) -> Callable[[Sig, list[Any]], str]:
    def test(sig: Sig, ts: list[Any]) -> str:
        s, r = ts
        if s.layout == r.layout or kind(s) not in _PLAIN or kind(r) not in _PLAIN or \
                (full(s) and full(r)):
            return ""
        mask = " mask" if what == "predicate" else ""
        return (f"{UNSUPPORTED}pto.vmi.{helper} cannot materialize the requested "
                f"{'mask' if mask else 'data'} layout conversion (source/result{mask} layouts "
                f"do not match a supported {helper} table row: {s} -> {r}); partial/tail "
                f"{what} layout materialization requires an explicit packing plan")
    return test


def _store(sig: Sig) -> None:
    v = sig["value"]
    if not placed(v) or kind(v) not in ("deinterleaved", "block_deinterleaved") or \
            sig.params.get("group") is not None or sig["stride"] is not None:
        return
    if len(set(part_chunks(v))) == 1:
        return
    why = f"requires every deinterleaved part to have the same physical chunk count ({v})"
    if sig["mask"] is not None:
        raise sig.fail(f"{UNSUPPORTED}pto.vmi.masked_store requires either full physical "
                       "chunks or contiguous tail-store value/mask layout, with UB-backed "
                       f"destination ({why})")
    raise sig.fail(f"{UNSUPPORTED}pto.vmi.store requires an 8/16/32-bit predicate-maskable "
                   "element type and either full physical chunks or contiguous tail-store "
                   f"layout, with UB-backed destination ({why})")


def reduce_limits(kind_: str) -> dict[str, tuple[StaticRule, ...]]:
    """The layout gate's group_reduce table (``reduce_gate``); a float max / min reduction
    lowers through pto.vcmax / pto.vcmin over whole registers: a padded source register
    would join its padding to the result."""
    def test(sig: Sig, ts: list[Any]) -> str:
        (s,) = ts
        if sig.params.get("group") is not None or not s.dtype.is_float or full(s):
            return ""
        return (f"{UNSUPPORTED}pto.vmi.reduce_{kind_}f lowers through pto.vc{kind_} only over "
                f"whole registers (requires full source physical chunks: {s})")
    gate = {LAYOUT_GATE: (lambda sig: reduce_gate(kind_)(sig),)}
    return gate if kind_ == "add" else {TO_VPTO: (_rule(("src",), test),), **gate}


def _truncf(sig: Sig, ts: list[Any]) -> str:
    s, r = ts
    if not (s.dtype.is_float and r.dtype.is_float and r.dtype.itemsize < s.dtype.itemsize):
        return ""
    ks, kr = parse_layout(s.layout), parse_layout(r.layout)
    if "group_slots" in (ks.kind, kr.kind) or s.dtype.itemsize != 4:
        return ""  # (the group-slot and 16-bit source rows: not judged here)
    ratio = s.dtype.itemsize // r.dtype.itemsize
    if kr.kind != "contiguous" or ks.kind != "deinterleaved" or ks.factor == ratio:
        return ""
    return (f"{UNSUPPORTED}pto.vmi.truncf supports f32/f16/bf16 source narrowing (dense "
            "EvenOdd or Packed4: an f32 source narrowed by a factor of "
            f"{ratio} is deinterleaved = {ratio}, got {s} -> {r})")


def _narrow_signless(sig: Sig) -> None:
    """An integer narrowing lowers to one pto.vcvt, whose narrow side states its signedness
    (i32 -> ui8 and si32 -> si8 convert; i32 -> i8 has no pto.vcvt pair)."""
    s, r = sig["src"], sig["result"]
    if isinstance(s, VmiSpec) and isinstance(r, VmiSpec) and s.dtype.is_int and \
            r.dtype.is_int and r.dtype.itemsize < s.dtype.itemsize and r.signless:
        raise sig.fail(f"unsupported vcvt source/result element type pair ({s} -> {r}: the "
                       "narrowed result is signless; pto.vcvt narrows to si or ui)")


def _shuffle(sig: Sig) -> None:
    """A shuffle lowers as registers forwarded (each result register a source register, or
    its first lanes for a tail),
    a splat of one lane, or one pto.vselr over a one-register source (its indices made by
    pto.vci)."""
    s, r, value = sig["src"], sig["result"], sig.params.get("indices")
    if not (placed(s) and placed(r) and dense_layout(s) and dense_layout(r)) or value is None:
        return
    idx = index_list(value)
    per = 256 // s.dtype.itemsize
    # (each result register, its tail too, the lanes of one source register from its start)
    forwarded = all(idx[k] % per == 0 and idx[k:k + per] == list(
        range(idx[k], idx[k] + len(idx[k:k + per]))) for k in range(0, len(idx), per))
    if forwarded or len(set(idx)) <= 1 or len(chunks(s)) == 1:
        return
    raise sig.fail(f"{UNSUPPORTED}pto.vmi.shuffle requires physical chunk forwarding or lane0 "
                   "splat or vci-materializable vselr indices (forwarding: the result's "
                   "registers are not whole source registers; lane0 splat: the indices differ; "
                   f"vselr: the source {s} spans {len(chunks(s))} registers)")


SHUFFLE = {TO_VPTO: (_shuffle,)}


def _merge_pmode(op: str) -> StaticRule:
    def rule(sig: Sig) -> None:
        if sig.params.get("pmode") == "merge":
            raise sig.fail(f"pto.vmi.{op} with pmode=merge requires an explicit passthru "
                           "lowering")
    return rule


def merge_pmode(op: str) -> dict[str, tuple[StaticRule, ...]]:
    return {TO_VPTO: (_merge_pmode(op),)}


#: vselr (pto.vselr, one register): its lane counts by element width
_VSELR_LANES = {1: (64, 128, 256), 2: (64, 128), 4: (64,)}


def _vselr(sig: Sig) -> None:
    """One pto.vselr: each of source, index and result is one contiguous register of N lanes
    (N by the element width; the lane count is the logical one, whatever layout is chosen)."""
    ts = [t for t in (sig["source"], sig["index"], sig["result"]) if isinstance(t, VmiSpec)]
    ok = all(t.lanes in _VSELR_LANES.get(t.dtype.itemsize, ()) for t in ts) and \
        all(dense_layout(t) for t in ts if t.layout is not None)
    if not ok:
        raise sig.fail(f"{UNSUPPORTED}pto.vmi.vselr supports only contiguous lane_stride=1 "
                       "layouts with N=64, 128, or 256 for 8-bit, N=64 or 128 for 16-bit, or "
                       "N=64 for 32-bit (vselr requires contiguous layouts and supports N=64, "
                       "128, or 256 for 8-bit, N=64 or 128 for 16-bit, and N=64 for 32-bit "
                       f"elements; got {', '.join(map(str, ts))})")


VSELR = {TO_VPTO: (_vselr,)}


def _vmull(sig: Sig) -> None:
    t = sig["lhs"]
    if isinstance(t, VmiSpec) and t.layout is not None:
        lay = parse_layout(t.layout)
        if lay.stride != 1 or lay.kind not in ("contiguous", "deinterleaved"):
            raise sig.fail(f"{UNSUPPORTED}pto.vmi.vmull requires contiguous or deinterleaved "
                           f"factor 2/4 layout with lane_stride=1 (got {t})")


VMULL = {TO_VPTO: (_vmull,)}


def constant(sig: Sig, operand: str) -> int | None:
    """The integer an arith.constant gives ``operand`` (None: not known statically)."""
    v = (sig.params.get(CONSTANTS) or {}).get(operand)
    return int(v) if isinstance(v, (int, np.integer)) else None


def _broadcast_load(sig: Sig) -> bool:
    """A grouped broadcast load (its own table rows: not judged here)."""
    return sig.params.get("dist_mode") == "brc" or \
        str(sig.params.get("spelling")) == "pto.vmi.group_broadcast_load"


def _vload(sig: Sig, pass_: str) -> None:
    """Group loads: a group of 16 or 32 f32 lanes is read a row of 8 at a time (the block8
    stride plan: its rows 32-byte aligned); a group-slot load (pto.vmi.group_slot_load) reads
    one lane per group with pto.vsldb, whose rows are 32-byte blocks too."""
    r, group = sig["result"], sig.params.get("group")
    if not isinstance(r, VmiSpec) or group is None or sig["stride"] is None:
        return
    stride = constant(sig, "stride")
    if _broadcast_load(sig):
        # (the E2B packet and vsldb forms read the groups' rows at a stride known statically;
        # a group of whole registers broadcasts each by itself)
        if pass_ == TO_VPTO and stride is None and \
                group_class(r.lanes, int(group), r.dtype.itemsize) != "full":
            raise sig.fail(f"{UNSUPPORTED}pto.vmi.group_broadcast_load requires either the BRC "
                           "full-group chunk form, the E2B packet form, or a constant "
                           "source_group_stride (group_broadcast_load requires a table row for "
                           f"result layout {r}; its stride is dynamic)")
        return
    if str(sig.params.get("spelling")) == "pto.vmi.group_slot_load":
        if pass_ != TO_VPTO:
            return
        lay = parse_layout(r.layout) if r.layout is not None else None
        if lay is not None and lay.kind == "group_slots" and lay.slots != 1:
            if stride != 1:
                raise sig.fail(f"{UNSUPPORTED}pto.vmi.group_slot_load requires explicit "
                               f"group_slots result layout; slots={lay.slots} group_slot_load "
                               "requires constant unit source_group_stride (got "
                               f"{'a dynamic stride' if stride is None else stride})")
            return
        per_block = 32 // r.dtype.itemsize
        if stride != 1 and (stride is None or stride <= 0 or stride % per_block):
            raise sig.fail(f"{UNSUPPORTED}pto.vmi.group_slot_load: slots=1 group_slot_load "
                           "currently lowers as one lane-0 vsldb per group, which requires "
                           f"constant positive source_group_stride divisible by {per_block} "
                           "elements; packed or unaligned scalar load lowering is not "
                           f"implemented (got {'a dynamic stride' if stride is None else stride})")
        return
    size = r.lanes // int(group) if int(group) else 0
    if r.dtype.itemsize != 4 or not r.dtype.is_float or size not in (16, 32) or stride is None:
        return
    if pass_ == ASSIGN and (stride <= 0 or stride % 8):
        raise sig.fail(f"{CONTRACT}pto.vmi.group_load group_size {size} requires constant "
                       "positive row_stride divisible by 8 f32 elements for the block8 stride "
                       f"plan; stable gather fallback is not implemented (row_stride = "
                       f"{stride})")
    if pass_ == TO_VPTO and stride > size and not stride % 8:
        raise sig.fail(f"{RESIDUAL}failed to convert all VMI ops/types to VPTO (pto.vmi."
                       f"group_load of group_size {size} with row_stride {stride}: the block8 "
                       "stride plan has no lowering)")


def _vstore(sig: Sig) -> None:
    """A one-block group store (pto.vsstb) writes its row stride in 32-byte blocks into a
    16-bit control field."""
    v = sig["value"]
    stride = constant(sig, "stride")
    if not isinstance(v, VmiSpec) or sig.params.get("group") is None or stride is None:
        return
    blocks = stride * v.dtype.itemsize // 32
    if blocks > 0xFFFF:
        raise sig.fail(f"{UNSUPPORTED}pto.vmi.group_store: block_stride exceeds the 16-bit "
                       f"vsstb control field (row stride {stride} elements is {blocks} "
                       "32-byte blocks)")


def _store_merge(sig: Sig) -> None:
    if sig.params.get("pmode") == "merge":
        raise sig.fail('pmode "merge" is not supported for stores (a store writes its active '
                       "lanes and leaves the others: there is no destination value to merge)")


def _gather(sig: Sig) -> None:
    """pto.vgather2(_bc) + pto.vsel: one register each of result, indices and mask, in the
    contiguous layout; a 32-bit result fills its registers (16-bit gathers take a tail)."""
    ts = [t for t in (sig["result"], sig["offsets"], sig["mask"]) if t is not None]
    if not all(placed(t) for t in ts):
        return
    r = sig["result"]
    why = ""
    if not all(dense_layout(t) for t in ts):
        why = "contiguous result, indices, passthru, and mask layouts"
    elif isinstance(r, VmiSpec) and r.dtype.itemsize == 4 and not full(r):
        why = "result requires full physical chunks: found padding lane in physical chunk"
    elif isinstance(r, VmiSpec) and isinstance(sig["offsets"], VmiSpec) and \
            sig["offsets"].dtype.itemsize != r.dtype.itemsize:
        why = (f"{sig['offsets'].dtype.name} indices gather {8 * sig['offsets'].dtype.itemsize}"
               f"-bit result elements")
    if why:
        raise sig.fail(f"{UNSUPPORTED}pto.vmi.gather lowers through pto.vgather2_bc + pto.vsel "
                       "only for UB pointer sources, contiguous full physical chunks, "
                       "ui16/i16/f16/bf16 results with ui16 indices and b16 masks, or 32-bit "
                       f"results with i32 indices and b32 masks ({why}; {r})")


GATHER = {TO_VPTO: (_gather,)}


def _scatter(sig: Sig) -> None:
    """pto.vscatter: value, indices and mask each whole contiguous registers."""
    ts = [t for t in (sig["value"], sig["offsets"], sig["mask"]) if t is not None]
    if not all(placed(t) for t in ts):
        return
    v = sig["value"]
    why = ""
    if not all(dense_layout(t) for t in ts):
        why = "contiguous value, indices, and mask layouts"
    elif not full(v):
        why = "value requires full physical chunks: found padding lane in physical chunk"
    if why:
        raise sig.fail(f"{UNSUPPORTED}pto.vmi.scatter lowers through pto.vscatter only with a "
                       "UB pointer destination, contiguous full physical chunks, 32-bit value "
                       f"elements, i32 indices, and b32 masks ({why}; {v})")


SCATTER = {TO_VPTO: (_scatter,)}


def _expand_offset(sig: Sig) -> None:
    off = constant(sig, "offset")
    if off is not None and off < 0:
        raise sig.fail(f"{UNSUPPORTED}pto.vmi.expand_load direct lowering is currently "
                       "supported for either a static all-active mask lowered as pto.vlds, or "
                       "a one-full-chunk 32-bit UB runtime mask lowered through pto.vusqz + "
                       f"pto.vgather2_bc + pto.vsel (a negative offset {off} reads before the "
                       "source)")


EXPAND_LOAD = {TO_VPTO: (_expand_offset,)}


def _fma_float(sig: Sig) -> None:
    t = sig["acc"]
    if isinstance(t, VmiSpec) and not t.dtype.is_float:
        raise sig.fail(f"{RESIDUAL}failed to convert all VMI ops/types to VPTO (pto.vmi.fma "
                       f"lowers through pto.vmula only for f16/bf16/f32 element types, got {t})")


FMA = {TO_VPTO: (_fma_float,)}


# ---- the layout gate (pto-validate-vmi-layout-ir): PTOAS's layout tables -----------------
# A layout-assigned op must match a row of its op's layout table. The rows name layouts by
# pattern: c (contiguous), lsK (contiguous, lane stride K), dK / bdK (deinterleaved / block
# deinterleaved by K), gs1 / gs8 (group slots of 1 or 8 slots per register; gs8/K with lane
# stride K); a group's class is its size in 32-byte blocks (q: a quarter block, h: half, 1, 2,
# 4) or "full" (whole registers).

def pattern(spec: Any) -> str:
    lay = parse_layout(spec.layout)
    stride = "" if lay.stride == 1 else str(lay.stride)
    if lay.kind == "contiguous":
        return f"ls{stride}" if stride else "c"
    if lay.kind == "group_slots":
        return f"gs{lay.slots}" + (f"/{stride}" if stride else "")
    head = "d" if lay.kind == "deinterleaved" else "bd"
    return f"{head}{lay.factor}" + (f"/{stride}" if stride else "")


def group_class(lanes: int, groups: int, elem_bytes: int) -> str:
    """The block class of a group of ``lanes / groups`` elements ("" when it has none)."""
    if groups <= 0 or lanes % groups:
        return ""
    size = lanes // groups * elem_bytes
    if size % 256 == 0:
        return "full"
    return {8: "q", 16: "h", 32: "1", 64: "2", 128: "4"}.get(size, "")


#: group-slot layouts any table has a row for (PTOAS's group-slot memory rows)
_SLOT_ROWS = ("gs1", "gs8", "gs8/2", "gs8/4")


def _slots_row(spec: Any) -> bool:
    return not placed(spec) or kind(spec) != "group_slots" or pattern(spec) in _SLOT_ROWS


def _gate(op: str, what: str, why: str, spec: Any) -> str:
    return f"{CONTRACT}pto.vmi.{op} has no registered {what}support: {why} ({spec})"


#: group load: block class -> result layouts of its rows
_GROUP_LOAD_ROWS = {"q": ("c",), "h": ("c",), "1": ("c",), "2": ("c", "bd2"), "4": ("c", "bd4"),
                    "full": ("c",)}


def _vload_gate(sig: Sig) -> None:
    r, group = sig["result"], sig.params.get("group")
    if not placed(r) or group is None or _broadcast_load(sig):
        return
    if str(sig.params.get("spelling")) == "pto.vmi.group_slot_load" or r.lanes == int(group):
        if not _slots_row(r):
            raise sig.fail(_gate("group_slot_load", "layout ", "result layout does not match "
                                 "a supported group_slot_load table row", r))
        return
    cls = group_class(r.lanes, int(group), r.dtype.itemsize)
    if pattern(r) not in _GROUP_LOAD_ROWS.get(cls, ()):
        raise sig.fail(_gate("group_load", "layout ", "result layout, group size, and "
                             "row_stride do not match a supported group_load table row", r))


#: dense store: value layouts by element width
_DENSE_STORE_ROWS = {1: ("c", "ls2", "ls4", "d2", "d4"), 2: ("c", "ls2", "d2", "d4"),
                     4: ("c", "ls2", "d2", "d4")}


def _vstore_gate(sig: Sig) -> None:
    v, group = sig["value"], sig.params.get("group")
    if not placed(v):
        return
    if group is not None:
        if kind(v) == "group_slots" and (not _slots_row(v) or
                                         parse_layout(v.layout).groups != int(group)):
            raise sig.fail(_gate("group_store", "group_slots layout ", "value layout does not "
                                 "match a supported group_store table row", v))
        return
    if sig["stride"] is None and sig["mask"] is None and sig["high"] is None and \
            pattern(v) not in _DENSE_STORE_ROWS.get(v.dtype.itemsize, ()):
        raise sig.fail(_gate("store", "contiguous-memory layout ", "value layout does not "
                             "match a supported dense store table row", v))


def reduce_gate(kind_: str) -> StaticRule:
    """A group reduction's group must be a block class of the group_reduce table, its
    group-slot result one of the slot rows."""
    def rule(sig: Sig) -> None:
        s, r, group = sig["src"], sig["result"], sig.params.get("group")
        if group is None or not placed(s) or not s.dtype.is_float and not s.dtype.is_int:
            return
        name = f"group_reduce_{kind_}{'f' if s.dtype.is_float else 'i'}"
        if not group_class(s.lanes, int(group), s.dtype.itemsize):
            raise sig.fail(_gate(name, "group_slots layout ", "group_reduce layout table has "
                                 "no row for this group size", s))
        if placed(r) and not _slots_row(r):
            raise sig.fail(_gate(name, "group_slots layout ", "group_reduce source/mask/result "
                                 "layouts do not match a legal layout table row for the group "
                                 "size", r))
    return rule


def _broadcast_gate(sig: Sig) -> None:
    s = sig["value"]
    if isinstance(s, VmiSpec) and placed(s) and not _slots_row(s):
        raise sig.fail(_gate("group_broadcast", "layout ", "source/result layouts do not match "
                             "a supported group_broadcast table row", s))


BROADCAST = {LAYOUT_GATE: (_broadcast_gate,)}

#: width-changing casts: (source bits, result bits) -> (source, result) layout rows
_CAST_ROWS = {
    (8, 16): {("c", "d2"), ("ls2", "c"), ("d2", "d4"), ("gs1", "gs1"), ("gs8/2", "gs8")},
    (16, 32): {("c", "d2"), ("ls2", "c"), ("d2", "d4"), ("gs1", "gs1"), ("gs8/2", "gs8")},
    (16, 8): {("d2", "c"), ("c", "ls2"), ("d4", "d2"), ("gs1", "gs1"), ("gs8", "gs8/2")},
    (32, 16): {("d2", "c"), ("c", "ls2"), ("d4", "d2"), ("gs1", "gs1"), ("gs8", "gs8/2")},
    (8, 32): {("c", "d4"), ("ls2", "d2"), ("ls4", "c"), ("gs1", "gs1"), ("gs8/4", "gs8")},
    (32, 8): {("d4", "c"), ("c", "ls4"), ("d2", "ls2"), ("gs1", "gs1"), ("gs8", "gs8/4")},
}


def _cast_gate(sig: Sig, ts: list[Any]) -> str:
    s, r = ts
    rows = _CAST_ROWS.get((8 * s.dtype.itemsize, 8 * r.dtype.itemsize))
    if rows is None or s.dtype.packed or r.dtype.packed or (pattern(s), pattern(r)) in rows:
        return ""
    name = str(sig.params.get("spelling") or "pto.vmi.vcvt").removeprefix("pto.vmi.")
    if name == "vcvt":
        name = "extf" if s.dtype.is_float and r.dtype.is_float and \
            r.dtype.itemsize > s.dtype.itemsize else name
    return _gate(name, "layout ", "source/result layouts do not match a legal cast table row",
                 f"{s} -> {r}")


def _slot_cast(sig: Sig, ts: list[Any]) -> str:
    """A group-slot cast lowers by the legal cast table's group-slot rows."""
    s, r = ts
    if "group_slots" not in (kind(s), kind(r)):
        return ""
    rows = _CAST_ROWS.get((8 * s.dtype.itemsize, 8 * r.dtype.itemsize))
    if rows is None or s.dtype.packed or r.dtype.packed or (pattern(s), pattern(r)) in rows:
        return ""
    name = str(sig.params.get("spelling") or "pto.vmi.vcvt").removeprefix("pto.vmi.")
    return (f"{UNSUPPORTED}pto.vmi.{name} requires a legal cast relation for the source layout "
            f"({s} -> {r})")


def _helper_gate(helper: str, what: str) -> Callable[[Sig, list[Any]], str]:
    partial = _ensure(what, helper)

    def test(sig: Sig, ts: list[Any]) -> str:
        if not partial(sig, ts):
            return ""
        mask = " mask" if what == "predicate" else ""
        return (f"{CONTRACT}pto.vmi.{helper} has no registered materialization support: "
                f"source/result{mask} layouts do not match a supported {helper} table row "
                f"({ts[0]} -> {ts[1]})")
    return test


# ---- what each entry declares (Ptoas.passes): pass -> its rules ---------------------------

LOAD = {ASSIGN: (lambda sig: _vload(sig, ASSIGN),), TO_VPTO: (lambda sig: _vload(sig, TO_VPTO),),
        LAYOUT_GATE: (_vload_gate,)}
STORE = {TO_VPTO: (_store, _vstore, _store_merge), LAYOUT_GATE: (_vstore_gate,)}
CAST = {TO_VPTO: (_rule(("src", "result"), _truncf), _rule(("src", "result"), _slot_cast),
                  _narrow_signless),
        LAYOUT_GATE: (_rule(("src", "result"), _cast_gate),)}
ENSURE_LAYOUT = {
    TO_VPTO: (_rule(("source", "result"), _ensure("data", "ensure_layout")),),
    LAYOUT_GATE: (_rule(("source", "result"), _helper_gate("ensure_layout", "data")),)}
ENSURE_MASK_LAYOUT = {
    TO_VPTO: (_rule(("source", "result"), _ensure("predicate", "ensure_mask_layout")),),
    LAYOUT_GATE: (_rule(("source", "result"), _helper_gate("ensure_mask_layout",
                                                            "predicate")),)}

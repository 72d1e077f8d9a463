"""Gathers and scatters between UB and registers (micro-isa/03-vector-load-store.md, "Gather
(Indexed) Loads" and "Scatter (Indexed) Stores").

* ``vgather2 %source, %offsets, %mask`` - result[i] = the element at source + offsets[i]
  elements (offsets unsigned), inactive lanes 0; i8 / ui8 sources are zero-extended into
  16-bit lanes (128 requests, b16 mask).
* ``vgather2_bc`` - the same gather with 32-bit offsets: the chapter names it "gather with
  broadcast" without its addressing; it is executed as the element gather its uses in
  designs/vmi-implementation-manual.md make of it (masked loads: offsets counted by vusqz,
  32-bit elements, inactive lanes 0).
* ``vgatherb`` - eight 32-byte blocks: block k = the 32 bytes at source + offsets_u32[k]
  (a byte offset, 32-byte aligned) when b32 lane k of the mask is active, zeros otherwise.
* ``vscatter %value, %dest, %offsets, %mask`` - dest[offsets[i]] = value[i] (value[2i] for
  8-bit lanes) for the active requests; equal active indices: the highest request wins
  here (the chapter leaves the winner to the implementation).

Addresses must be aligned to the element (the block for vgatherb): an error otherwise, as
an address outside UB is."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...enums import Pipe
from ...errors import ExecutionError
from ...vector.regs import (
    VREG_BYTES,
    Mask,
    MaskSpec,
    Ptr,
    PtrSpec,
    VReg,
    VRegSpec,
    buffer_bytes,
    touch,
)
from ..registry import Instr, Opnd, Sig, instr
from .common import active
from .load_store import _ub


def _offsets(offsets: VReg) -> np.ndarray:
    """The offset register's lanes read unsigned (signless offsets alias the unsigned
    payload)."""
    return offsets.data.view(np.dtype(f"u{offsets.data.dtype.itemsize}")).astype(np.int64)


def _elements(m: Any, p: Ptr, idx: np.ndarray, on: np.ndarray, op: str) -> np.ndarray:
    """The source elements at p + idx (elements) for the active requests, 0 elsewhere."""
    isz = p.dtype.itemsize
    out = np.zeros(idx.size, p.dtype.np)
    if p.addr % isz:
        raise ExecutionError(f"pto.{op}: the source address {p.addr:#x} is not aligned to "
                             f"its {isz}-byte elements")
    hits = np.flatnonzero(on)
    if hits.size:
        lo, hi = int(idx[hits].min()), int(idx[hits].max())
        span = buffer_bytes(m, "ub", p.addr + lo * isz, (hi - lo + 1) * isz,
                            f"pto.{op}'s gathered", role=None).view(p.dtype.np)
        touch(m, "in", "UB", None, p.addr + idx[hits].astype(np.int64) * isz, isz)
        out[hits] = span[idx[hits] - lo]
    return out


def _gather_types(sig: Sig) -> None:
    """PTOAS's vgather2 contract: an 8-bit source gathers into 16-bit lanes of its signedness
    (i8 -> i16, ui8 -> ui16); the mask is of the result lanes' width (b16 for 16-bit ones)."""
    p, r, mk = sig["source"], sig["result"], sig["mask"]
    if isinstance(p, PtrSpec) and isinstance(r, VRegSpec) and p.dtype.itemsize == 1 and \
            r.dtype.name != {"i8": "i16", "ui8": "ui16"}.get(p.dtype.name):
        raise sig.fail(f"8-bit gather requires i8/ui8 source and matching i16/ui16 result, "
                       f"got {p} -> {r}")
    if isinstance(r, VRegSpec) and isinstance(mk, MaskSpec) and r.dtype.itemsize in (2, 4):
        want = f"b{8 * r.dtype.itemsize}"
        if mk.gran != want:
            raise sig.fail(f"mask type must be !pto.mask<{want}> (the {r} lanes), got {mk}")


def _scatter_offsets(sig: Sig) -> None:
    """PTOAS's vscatter contract: 8-bit values take 16-bit offsets (128 requests)."""
    v, o = sig["value"], sig["offsets"]
    if isinstance(v, VRegSpec) and isinstance(o, VRegSpec) and v.dtype.itemsize == 1 and \
            o.dtype.itemsize != 2:
        raise sig.fail(f"requires 16-bit offset vector elements for 8-bit values, got {o}")


def _gather(name: str, doc: str, static: tuple[Any, ...] = ()) -> Instr:
    def impl(m: Any, source: Ptr, offsets: VReg, mask: Mask) -> VReg:
        p = _ub(source, name.lower())
        idx = _offsets(offsets)
        on = active(mask, idx.size)
        vals = _elements(m, p, idx, on, name.lower())
        if p.dtype.itemsize == 1:  # 8-bit payloads zero-extended into 16-bit lanes
            wide = np.dtype("i2") if p.dtype.np == np.int8 else np.dtype("u2")
            return VReg(vals.view(np.uint8).astype(np.uint16).view(wide))
        if vals.size != VREG_BYTES // p.dtype.itemsize:
            raise ExecutionError(f"pto.{name.lower()}: {vals.size} offsets for "
                                 f"{p.dtype.name} elements (one per result lane)")
        return VReg(vals)

    impl.__doc__ = doc
    impl.__module__ = __name__
    return instr(name, pipe=Pipe.V, dialect="vpto",
                 operands=(Opnd("source", "ptr"), Opnd("offsets", "vreg"), Opnd("mask", "mask")),
                 results=(Opnd("result", "vreg"),), dtype_key=("source",),
                 static=static)(impl)


VGATHER2 = _gather("VGATHER2", "result[i] = UB[source + offsets[i] * sizeof(T)] on active "
                   "lanes, 0 elsewhere (offsets unsigned; i8 / ui8 zero-extended to 16-bit "
                   "lanes).", static=(_gather_types,))
VGATHER2_BC = _gather("VGATHER2_BC", "result[i] = UB[source + offsets[i] * sizeof(T)] on "
                      "active lanes, 0 elsewhere (32-bit offsets; the element gather the VMI "
                      "manual lowers masked loads to).")


@instr("VGATHERB", pipe=Pipe.V, dialect="vpto",
       operands=(Opnd("source", "ptr"), Opnd("offsets", "vreg"), Opnd("mask", "mask")),
       results=(Opnd("result", "vreg"),), dtype_key=("source",))
def VGATHERB(m: Any, source: Ptr, offsets: VReg, mask: Mask) -> VReg:
    """Block k (32 bytes, k = 0..7) of the result = the 32 bytes at source + offsets_u32[k]
    (a byte offset) when b32 lane k of the mask is active, zeros otherwise."""
    p = _ub(source, "vgatherb")
    if p.addr % 32:
        raise ExecutionError(f"pto.vgatherb: the source address {p.addr:#x} is not 32-byte "
                             "aligned")
    offs = offsets.data.view(np.uint8)[:32].view(np.uint32).astype(np.int64)
    on = mask.bits[::4][:8]
    out = np.zeros(VREG_BYTES, np.uint8)
    for k in range(8):
        if not on[k]:
            continue
        if offs[k] % 32:
            raise ExecutionError(f"pto.vgatherb: offsets[{k}] = {offs[k]} is not a multiple "
                                 "of 32 bytes")
        out[32 * k:32 * (k + 1)] = buffer_bytes(m, "ub", p.addr + int(offs[k]), 32,
                                                "pto.vgatherb's gathered", role="in")
    return VReg(out.view(p.dtype.np))


@instr("VSCATTER", pipe=Pipe.V, dialect="vpto",
       operands=(Opnd("value", "vreg"), Opnd("dest", "ptr"), Opnd("offsets", "vreg"),
                 Opnd("mask", "mask")),
       dtype_key=("value",), static=(_scatter_offsets,))
def VSCATTER(m: Any, value: VReg, dest: Ptr, offsets: VReg, mask: Mask) -> None:
    """UB[dest + offsets[i] * sizeof(T)] = value[i] (value[2i] for 8-bit lanes: 128
    requests) for the active requests; equal active offsets: the highest request's value."""
    p = _ub(dest, "vscatter")
    data = value.data
    isz = data.dtype.itemsize
    if p.dtype.itemsize != isz:
        raise ExecutionError(f"pto.vscatter: dest holds {p.dtype.name}, value {data.dtype}")
    if p.addr % isz:
        raise ExecutionError(f"pto.vscatter: the destination address {p.addr:#x} is not "
                             f"aligned to its {isz}-byte elements")
    idx = _offsets(offsets)
    src = data[::2] if isz == 1 else data
    if src.size != idx.size:
        raise ExecutionError(f"pto.vscatter: {idx.size} offsets for {src.size} requests")
    hits = np.flatnonzero(active(mask, idx.size))
    if hits.size:
        lo, hi = int(idx[hits].min()), int(idx[hits].max())
        span = buffer_bytes(m, "ub", p.addr + lo * isz, (hi - lo + 1) * isz,
                            "pto.vscatter's stored", role=None).view(data.dtype)
        touch(m, "out", "UB", None, p.addr + idx[hits].astype(np.int64) * isz, isz)
        span[idx[hits] - lo] = src[hits]  # (numpy: the last of equal indices wins)

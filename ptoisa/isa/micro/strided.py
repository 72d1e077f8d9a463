"""Dual (de)interleaving and block-strided loads / stores (micro-isa/03-vector-load-store.md):
``pto.vldsx2`` (``DINTLV_B8/B16/B32``), ``pto.vstsx2`` (``INTLV_B8/B16/B32``), ``pto.vsldb``
and ``pto.vsstb``.

Offsets of ``vldsx2`` / ``vstsx2`` count elements of the pointer's type; the strides of
``vsldb`` / ``vsstb`` count 32-byte blocks (8 lanes of 32 bits). A post-update form accesses
its base itself and returns the base advanced (as ``pto.vlds``'s post-update form does).
``BDINTLV`` is refused by name."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...enums import Pipe
from ...errors import ExecutionError
from ...vector.regs import VREG_BYTES, Mask, Ptr, VReg, buffer_bytes
from ..registry import Opnd, Param, instr

BLOCK = 32
_WIDTH = {"B8": 1, "B16": 2, "B32": 4}


def _ub(p: Any, what: str) -> Ptr:
    if not isinstance(p, Ptr) or p.space != "ub":
        raise ExecutionError(f"{what} must be a UB pointer (!pto.ptr<T, ub>), got {p!r}")
    return p


def _family(op: str, dist: str, fam: str, itemsize: int) -> None:
    head, _, w = dist.rpartition("_")
    if head != fam or w not in _WIDTH:
        raise ExecutionError(f"operation 'pto.{op}' cannot be executed by ptoisa yet with "
                             f"dist = \"{dist}\"")
    if _WIDTH[w] != itemsize:
        raise ExecutionError(f"dist {dist} is for {8 * _WIDTH[w]}-bit elements, the "
                             f"register holds {8 * itemsize}-bit ones")


@instr("VLDSX2", pipe=Pipe.V, dialect="vpto",
       operands=(Opnd("source", "ptr"), Opnd("offset", "scalar", optional=True)),
       params=(Param("dist", "DINTLV_B32"), Param("post_update", False)),
       results=(Opnd("low", "vreg"), Opnd("high", "vreg"),
                Opnd("updated_base", "ptr", optional=True)),
       dtype_key=("source",))
def VLDSX2(m: Any, source: Ptr, offset: Any = None, *, dist: str = "DINTLV_B32",
           post_update: bool = False) -> tuple[VReg, VReg, Ptr]:
    """512 bytes at source + offset elements, deinterleaved: low[i] = element 2i, high[i] =
    element 2i + 1 (``DINTLV_B*``). The post-update form loads at source and returns
    updated_base = source + offset."""
    p = _ub(source, "source")
    dt = p.dtype
    _family("vldsx2", str(dist), "DINTLV", dt.itemsize)
    off = 0 if offset is None else int(offset)
    at = p.addr + (0 if post_update else off * dt.itemsize)
    both = buffer_bytes(m, "ub", at, 2 * VREG_BYTES, "the loaded", role="in").view(dt.np)
    return VReg(both[0::2].copy()), VReg(both[1::2].copy()), p.plus(off)


@instr("VSTSX2", pipe=Pipe.V, dialect="vpto",
       operands=(Opnd("low", "vreg"), Opnd("high", "vreg"), Opnd("dest", "ptr"),
                 Opnd("offset", "scalar", optional=True), Opnd("mask", "mask", optional=True)),
       params=(Param("dist", "INTLV_B32"),), dtype_key=("low",))
def VSTSX2(m: Any, low: VReg, high: VReg, dest: Ptr, offset: Any = None,
           mask: Mask | None = None, *, dist: str = "INTLV_B32") -> None:
    """UB[dest + offset + 2i] = low[i], UB[dest + offset + 2i + 1] = high[i] (elements;
    ``INTLV_B*``: the predicate is ignored, as the page says)."""
    p = _ub(dest, "dest")
    isz = low.data.dtype.itemsize
    _family("vstsx2", str(dist), "INTLV", isz)
    off = 0 if offset is None else int(offset)
    out = buffer_bytes(m, "ub", p.addr + off * p.dtype.itemsize, 2 * VREG_BYTES,
                       "the stored", role="out").view(low.data.dtype)
    out[0::2] = low.data
    out[1::2] = high.data


def _block_on(mask: Mask, nblocks: int) -> np.ndarray:
    """The page's ``pg_b32[blk]``: block blk takes part when lane blk of the mask (32-bit
    lanes: bit 4 * blk) is set."""
    return mask.bits[0:4 * nblocks:4]


@instr("VSLDB", pipe=Pipe.V, dialect="vpto",
       operands=(Opnd("source", "ptr"), Opnd("block_stride", "scalar"),
                 Opnd("repeat_stride", "scalar"), Opnd("mask", "mask")),
       params=(Param("post_update", False),),
       results=(Opnd("result", "vreg"), Opnd("updated_base", "ptr", optional=True)),
       dtype_key=("source",))
def VSLDB(m: Any, source: Ptr, block_stride: Any, repeat_stride: Any, mask: Mask, *,
          post_update: bool = False) -> tuple[VReg, Ptr]:
    """Block blk (0..7, 32 bytes) of the result = the 32 bytes at source + (repeat_stride +
    blk * block_stride) blocks when the block takes part (lane blk of the mask), zero
    otherwise (no access). The post-update form reads at source + blk * block_stride blocks
    and returns updated_base = source + repeat_stride blocks."""
    p = _ub(source, "source")
    bs, rs = int(block_stride), int(repeat_stride)
    base = p.addr + (0 if post_update else rs * BLOCK)
    nb = VREG_BYTES // BLOCK
    out = np.zeros(VREG_BYTES, np.uint8)
    for blk, on in enumerate(_block_on(mask, nb)):
        if on:
            out[blk * BLOCK:(blk + 1) * BLOCK] = buffer_bytes(
                m, "ub", base + blk * bs * BLOCK, BLOCK, "the loaded block", role="in")
    return VReg(out.view(p.dtype.np)), Ptr("ub", p.addr + rs * BLOCK, p.dtype)


@instr("VSSTB", pipe=Pipe.V, dialect="vpto",
       operands=(Opnd("value", "vreg"), Opnd("dest", "ptr"), Opnd("block_stride", "scalar"),
                 Opnd("repeat_stride", "scalar"), Opnd("mask", "mask")),
       params=(Param("post_update", False),),
       results=(Opnd("updated_dest", "ptr", optional=True),), dtype_key=("value",))
def VSSTB(m: Any, value: VReg, dest: Ptr, block_stride: Any, repeat_stride: Any, mask: Mask,
          *, post_update: bool = False) -> Ptr:
    """Block blk (0..7, 32 bytes) of value written to dest + (repeat_stride + blk *
    block_stride) blocks when it takes part (lane blk of the mask); the others write
    nothing. The post-update form writes at dest + blk * block_stride blocks and returns
    updated_dest = dest + repeat_stride blocks."""
    p = _ub(dest, "dest")
    bs, rs = int(block_stride), int(repeat_stride)
    base = p.addr + (0 if post_update else rs * BLOCK)
    src = value.data.view(np.uint8)
    for blk, on in enumerate(_block_on(mask, VREG_BYTES // BLOCK)):
        if on:
            buffer_bytes(m, "ub", base + blk * bs * BLOCK, BLOCK, "the stored block",
                         role="out")[:] = src[blk * BLOCK:(blk + 1) * BLOCK]
    return Ptr("ub", p.addr + rs * BLOCK, p.dtype)


__all__ = ["VLDSX2", "VSLDB", "VSSTB", "VSTSX2"]

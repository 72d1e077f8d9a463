"""Unaligned load and store streams (micro-isa/03-vector-load-store.md): ``pto.vldas`` /
``pto.vldus`` on the load side, ``pto.init_align`` / ``pto.vstus`` / ``pto.vstar`` on the
store side, the ``!pto.align`` carrier threading each stream.

Model. A load stream's carrier records that it was primed (``vldas``); ``vldus`` then yields
the 256 bytes at its source, as the hardware assembles them from the primed block and the
next aligned load. A store stream's carrier holds the bytes not yet committed and the UB
address they belong at: ``vstus`` appends the first ``offset`` elements of its value at the
stream position ``base`` (which must continue the pending bytes), commits every whole
32-byte-aligned block and keeps the rest; ``vstar`` writes the rest at its recorded address,
its ``dest`` naming the end of the stream. A carrier used out of its stream (a store carrier
in ``vldus``, a ``vstus`` whose base does not continue the pending bytes, a flush elsewhere)
is an error naming it. ``vstas`` flushes at
``dest + offset``. ``vstur`` stores the SQZN bytes of its value (the count the last
``vsqz`` kept) at ``base + AR`` and, in ``POST_UPDATE`` mode, advances AR by them; the
stream it makes is flushed by ``vstar`` at ``dest + AR`` (the register-update form).
``pstu`` (04-predicate-load-store.md) adds a mask, one bit per lane, to a store stream.
``vsta`` stays refused."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...enums import Pipe
from ...errors import ExecutionError, NotExecutedYet
from ...vector.regs import VREG_BYTES, Align, Mask, Ptr, VReg, buffer_bytes
from ..registry import Opnd, Param, instr

BLOCK = 32


class LoadAlign(Align):
    """A primed load-stream carrier."""

    __slots__ = ()


class StoreAlign(Align):
    """A store-stream carrier: ``pending`` bytes that belong at UB address ``addr``."""

    __slots__ = ("addr",)

    def __init__(self, pending: bytes = b"", addr: int | None = None) -> None:
        super().__init__(pending)
        self.addr = addr


class ArStoreAlign(StoreAlign):
    """The carrier of an AR-driven store stream (``vstur``): flushed at ``dest + AR``."""

    __slots__ = ()


def _ub(p: Any, what: str) -> Ptr:
    if not isinstance(p, Ptr) or p.space != "ub":
        raise ExecutionError(f"{what} must be a UB pointer (!pto.ptr<T, ub>), got {p!r}")
    return p


@instr("VLDAS", pipe=Pipe.V, dialect="vpto", operands=(Opnd("source", "ptr"),),
       results=(Opnd("result", "align"),), dtype_key=("source",))
def VLDAS(m: Any, source: Ptr) -> Align:
    """The load carrier primed with the aligned 32-byte block holding source."""
    p = _ub(source, "source")
    blk = p.addr - p.addr % BLOCK
    return LoadAlign(bytes(buffer_bytes(m, "ub", blk, BLOCK, "the priming block", role="in")))


@instr("VLDUS", pipe=Pipe.V, dialect="vpto",
       operands=(Opnd("source", "ptr"), Opnd("align", "align"),
                 Opnd("increment", "scalar", optional=True)),
       results=(Opnd("result", "vreg"), Opnd("align_out", "align"),
                Opnd("base_out", "ptr", optional=True)),
       dtype_key=("source",))
def VLDUS(m: Any, source: Ptr, align: Align, increment: Any = None) -> tuple[VReg, Align, Ptr]:
    """result = the 256 bytes at source (any alignment); align_out continues the stream; the
    post-update form returns base_out = source + increment elements."""
    p = _ub(source, "source")
    if not isinstance(align, LoadAlign):
        raise ExecutionError("pto.vldus: the align carrier was not primed by pto.vldas (or "
                             "a prior pto.vldus)")
    data = buffer_bytes(m, "ub", p.addr, VREG_BYTES, "the loaded",
                        role="in").view(p.dtype.np).copy()
    end = p.addr + VREG_BYTES
    nxt = LoadAlign(bytes(buffer_bytes(m, "ub", end - end % BLOCK, BLOCK, "the next block",
                                       role="in"))
                    if end % BLOCK else b"")
    return VReg(data), nxt, p.plus(0 if increment is None else int(increment))


@instr("INIT_ALIGN", pipe=Pipe.V, dialect="vpto", operands=(),
       results=(Opnd("result", "align"),))
def INIT_ALIGN(m: Any) -> Align:
    """A fresh store carrier with nothing pending."""
    return StoreAlign()


@instr("VSTUS", pipe=Pipe.V, dialect="vpto",
       operands=(Opnd("align_in", "align"), Opnd("offset", "scalar"), Opnd("value", "vreg"),
                 Opnd("base", "ptr")),
       params=(Param("post_update", False),),
       results=(Opnd("align_out", "align"), Opnd("base_out", "ptr", optional=True)),
       dtype_key=("value",))
def VSTUS(m: Any, align_in: Align, offset: Any, value: VReg, base: Ptr, *,
          post_update: bool = False) -> tuple[Align, Ptr]:
    """value[0:offset] joins the stream at base; every whole aligned 32-byte block of the
    pending bytes is written, the rest carried in align_out; base_out = base + offset
    elements."""
    p = _ub(base, "base")
    if not isinstance(align_in, StoreAlign):
        raise ExecutionError("pto.vstus: the align carrier must come from pto.init_align "
                             "or a prior pto.vstus")
    n = int(offset)
    isz = value.data.dtype.itemsize
    if not 0 <= n <= value.data.size:
        raise ExecutionError(f"pto.vstus: offset {n} is outside [0, {value.data.size}]")
    pend, start = align_in.pending, align_in.addr
    if pend and start is not None and start + len(pend) != p.addr:
        raise ExecutionError(f"pto.vstus: base (UB {p.addr}) does not continue the stream "
                             f"(pending bytes end at UB {start + len(pend)})")
    buf, start = _append(m, pend, start, p.addr, value.data[:n].tobytes())
    return StoreAlign(buf, start), p.plus(n * isz // p.dtype.itemsize)


def _append(m: Any, pend: bytes, start: int | None, at: int, data: bytes) -> tuple[bytes, int]:
    """``data`` joins a stream's pending bytes (``at``: where it goes); every whole aligned
    32-byte block is written; (the bytes still pending, their address)."""
    if not pend:
        start = at
    assert start is not None
    buf = pend + data
    cut = (start + len(buf)) - (start + len(buf)) % BLOCK - start  # bytes up to a boundary
    if cut > 0:
        buffer_bytes(m, "ub", start, cut, "the stored", role="out")[:] = memoryview(buf[:cut])
        start, buf = start + cut, buf[cut:]
    return buf, start


@instr("VSTUR", pipe=Pipe.V, dialect="vpto",
       operands=(Opnd("align_in", "align"), Opnd("value", "vreg"), Opnd("base", "ptr")),
       params=(Param("mode", "POST_UPDATE"),),
       results=(Opnd("align_out", "align"),), dtype_key=("value",))
def VSTUR(m: Any, align_in: Align, value: VReg, base: Ptr, *, mode: str = "POST_UPDATE"
          ) -> Align:
    """The first SQZN bytes of value join the stream at base + AR (whole aligned 32-byte
    blocks written, the rest carried in align_out); POST_UPDATE: AR += SQZN."""
    p = _ub(base, "base")
    if str(mode) not in ("POST_UPDATE", "NO_POST_UPDATE"):
        raise ExecutionError(f"pto.vstur: MODE must be POST_UPDATE or NO_POST_UPDATE, got "
                             f"{mode!r}")
    if not isinstance(align_in, StoreAlign):
        raise ExecutionError("pto.vstur: the align carrier must come from pto.init_align or "
                             "a prior store of the stream")
    if "AR" not in m.micro_regs:
        raise NotExecutedYet("pto.vstur: AR holds no value ptoisa knows (no pto.sprclr \"AR\" "
                             "before it on this core, and the spec gives AR no reset value)")
    if "SQZN" not in m.micro_regs:
        raise ExecutionError("pto.vstur: SQZN holds no byte count (no pto.vsqz before it)")
    ar, n = int(m.micro_regs["AR"]), int(m.micro_regs["SQZN"])
    at = p.addr + ar
    pend, start = align_in.pending, align_in.addr
    if pend and start is not None and start + len(pend) != at:
        raise ExecutionError(f"pto.vstur: base + AR (UB {at}) does not continue the stream "
                             f"(pending bytes end at UB {start + len(pend)})")
    buf, start = _append(m, pend, start, at, value.data.view(np.uint8)[:n].tobytes())
    if str(mode) == "POST_UPDATE":
        m.micro_regs["AR"] = ar + n
    return ArStoreAlign(buf, start)


@instr("PSTU", pipe=Pipe.V, dialect="vpto",
       operands=(Opnd("align_in", "align"), Opnd("value", "mask"), Opnd("base", "ptr")),
       results=(Opnd("align_out", "align"), Opnd("base_out", "ptr")), dtype_key=("base",))
def PSTU(m: Any, align_in: Align, value: Mask, base: Ptr) -> tuple[Align, Ptr]:
    """The mask packed one bit per lane (lane i: bit i % 8 of byte i // 8; a b32 mask is 8
    bytes, a b16 one 16) joins the store stream at base; base_out = base + those bytes
    (04-predicate-load-store.md; the packing is the one upstream's pstu golden writes)."""
    p = _ub(base, "base")
    if value.gran not in ("b16", "b32"):
        raise ExecutionError(f"pto.pstu takes a b16 or b32 mask, got {value.gran}")
    want = {"b16": "ui16", "b32": "ui32"}[value.gran]
    if p.dtype.name != want:
        raise ExecutionError(f"pto.pstu: a {value.gran} mask goes with a !pto.ptr<{want}, ub> "
                             f"base, got {p.dtype.name}")
    if not isinstance(align_in, StoreAlign):
        raise ExecutionError("pto.pstu: the align carrier must come from pto.init_align or a "
                             "prior store of the stream")
    data = np.packbits(value.lanes(), bitorder="little").tobytes()
    pend, start = align_in.pending, align_in.addr
    if pend and start is not None and start + len(pend) != p.addr:
        raise ExecutionError(f"pto.pstu: base (UB {p.addr}) does not continue the stream "
                             f"(pending bytes end at UB {start + len(pend)})")
    buf, start = _append(m, pend, start, p.addr, data)
    return StoreAlign(buf, start), p.plus(len(data) // p.dtype.itemsize)


@instr("VSTAR", pipe=Pipe.V, dialect="vpto",
       operands=(Opnd("value", "align"), Opnd("dest", "ptr")), dtype_key=("dest",))
def VSTAR(m: Any, value: Align, dest: Ptr) -> None:
    """The carrier's pending bytes written at their address; dest is the stream's end
    (dest + AR for a vstur stream)."""
    p = _ub(dest, "dest")
    ar = int(m.micro_regs.get("AR", 0)) if isinstance(value, ArStoreAlign) else 0
    _flush(m, "vstar", value, p.addr + ar)


def _flush(m: Any, op: str, value: Any, end: int) -> None:
    if not isinstance(value, StoreAlign):
        raise ExecutionError(f"pto.{op}: the align carrier must come from a store stream")
    if not value.pending:
        return
    assert value.addr is not None
    if value.addr + len(value.pending) != end:
        raise ExecutionError(f"pto.{op}: the flush point (UB {end}) is not the stream's end "
                             f"(UB {value.addr + len(value.pending)})")
    buffer_bytes(m, "ub", value.addr, len(value.pending), "the flushed", role="out")[:] = \
        memoryview(value.pending)


@instr("VSTAS", pipe=Pipe.V, dialect="vpto",
       operands=(Opnd("value", "align"), Opnd("dest", "ptr"), Opnd("offset", "scalar")),
       params=(Param("post_update", False),),
       results=(Opnd("next", "ptr", optional=True),), dtype_key=("dest",))
def VSTAS(m: Any, value: Align, dest: Ptr, offset: Any, *, post_update: bool = False) -> Ptr:
    """The carrier's pending bytes written at their address; dest + offset elements is the
    stream's end (the flush point); next = dest + offset elements."""
    p = _ub(dest, "dest")
    n = int(offset)
    _flush(m, "vstas", value, p.addr + n * p.dtype.itemsize)
    return p.plus(n)


__all__ = ["INIT_ALIGN", "PSTU", "VLDAS", "VLDUS", "VSTAR", "VSTAS", "VSTUR", "VSTUS"]

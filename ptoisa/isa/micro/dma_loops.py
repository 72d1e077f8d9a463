"""The DMA loop registers (release/vpto-spec-v0.1.md "Loop Stride Configuration"):
``pto.set_loop1_stride_outtoub %src_stride, %dst_stride``, ``set_loop2_stride_*`` and
``set_loop_size_*`` (``outtoub`` for MTE2's GM -> UB engine, ``ubtoout`` for MTE3's UB -> GM).

They write the engine's loop registers, kept on the machine as ``m.dma_loop_regs``
(``{"outtoub": {"loop1_stride": (src, dst), ...}}``), checked against the fields' widths
(strides in bytes: GM 40 bits, UB 21 bits; counts 21 bits). No op ptoisa executes reads
them: ``pto.mte_gm_ub`` / ``pto.mte_ub_gm`` carry their repetition in ``loop(...)`` groups,
and without one only the ``nburst(...)`` rows move (micro-isa/02-dma-copy.md "Multi-Level
Loop Semantics"). ``copy_gm_to_ubuf`` / ``copy_ubuf_to_gm``, which would read them, are not
declared: refused by name."""

from __future__ import annotations

from typing import Any

from ...enums import Pipe
from ...errors import ExecutionError
from ..registry import Instr, Opnd, instr

#: bits of each field: (first operand, second operand) by direction and register
_BITS = {("outtoub", "stride"): (40, 21), ("ubtoout", "stride"): (21, 40)}


def _store(m: Any, name: str, direction: str, key: str,
           fields: tuple[tuple[str, Any, int], ...]) -> None:
    vals = []
    for what, v, bits in fields:
        v = int(v)
        if not 0 <= v < 1 << bits:
            raise ExecutionError(f"pto.{name.lower()}: {what} = {v} does not fit its "
                                 f"{bits}-bit field")
        vals.append(v)
    regs = getattr(m, "dma_loop_regs", None)
    if regs is None:
        regs = {}
        m.dma_loop_regs = regs
    regs.setdefault(direction, {})[key] = tuple(vals)


def _stride(direction: str, loop: str) -> Instr:
    name = f"SET_{loop.upper()}_STRIDE_{direction.upper()}"
    sb, db = _BITS[(direction, "stride")]

    def impl(m: Any, src_stride: Any, dst_stride: Any) -> None:
        _store(m, name, direction, f"{loop}_stride",
               (("src_stride", src_stride, sb), ("dst_stride", dst_stride, db)))

    impl.__doc__ = (f"Sets the {direction} DMA engine's {loop} source / destination advance "
                    "in bytes: machine state only, no op ptoisa executes reads it.")
    impl.__module__ = __name__
    return instr(name, pipe=Pipe.S, dialect="vpto",
                 operands=(Opnd("src_stride", "scalar"), Opnd("dst_stride", "scalar")))(impl)


def _size(direction: str) -> Instr:
    name = f"SET_LOOP_SIZE_{direction.upper()}"

    def impl(m: Any, loop1_count: Any, loop2_count: Any) -> None:
        _store(m, name, direction, "size",
               (("loop1_count", loop1_count, 21), ("loop2_count", loop2_count, 21)))

    impl.__doc__ = (f"Sets the {direction} DMA engine's loop iteration counts (loop1, loop2): "
                    "machine state only, no op ptoisa executes reads it.")
    impl.__module__ = __name__
    return instr(name, pipe=Pipe.S, dialect="vpto",
                 operands=(Opnd("loop1_count", "scalar"), Opnd("loop2_count", "scalar")))(impl)


SET_LOOP1_STRIDE_OUTTOUB = _stride("outtoub", "loop1")
SET_LOOP2_STRIDE_OUTTOUB = _stride("outtoub", "loop2")
SET_LOOP_SIZE_OUTTOUB = _size("outtoub")
SET_LOOP1_STRIDE_UBTOOUT = _stride("ubtoout", "loop1")
SET_LOOP2_STRIDE_UBTOOUT = _stride("ubtoout", "loop2")
SET_LOOP_SIZE_UBTOOUT = _size("ubtoout")

"""The DMA loop registers and the register-driven copies (spec isa-legacy/02-dma-copy.md):
``pto.set_loop_size_{outtoub,ubtoout}``, ``pto.set_loop{1,2}_stride_{outtoub,ubtoout}``,
``pto.copy_gm_to_ubuf`` (MTE2) and ``pto.copy_ubuf_to_gm`` (MTE3).

A copy is ``n_burst`` rows of ``len_burst`` bytes (start-to-start strides in bytes), repeated
by the direction's hardware loops: loop1 (inner) and loop2 (outer), each a count and a
(source, destination) pointer advance per iteration, the values last set on this core. The
rows are the same as ``pto.mte_gm_ub`` / ``pto.mte_ub_gm`` with ``loop`` groups, and the
copies run through those entries' code (``dma.py``). A loop count above 1 whose stride was
never set, a copy before its loop sizes were set, and the padding forms (left / right counts,
``data_select_bit``) are refused by name."""

from __future__ import annotations

from typing import Any

from ...enums import Pipe
from ...errors import ExecutionError, NotExecutedYet
from ..registry import Opnd, instr
from .dma import MTE_GM_UB, MTE_UB_GM


def _set(m: Any, way: str, reg: str, a: Any, b: Any) -> None:
    # m.micro_regs["dma_loop"]: {(direction, register): (a, b)}
    m.micro_regs.setdefault("dma_loop", {})[(way, reg)] = (int(a), int(b))


def _loops(m: Any, way: str, op: str) -> tuple[tuple[int, int, int], ...]:
    regs = m.micro_regs.get("dma_loop", {})
    if (way, "size") not in regs:
        raise NotExecutedYet(f"pto.{op}: the loop sizes were never set on this core "
                             f"(pto.set_loop_size_{way} comes first; the spec gives the loop "
                             "registers no reset value)")
    out = []
    for k, count in zip(("loop1", "loop2"), regs[(way, "size")], strict=True):
        stride = regs.get((way, k))
        if stride is None:
            if count > 1:
                raise ExecutionError(f"pto.{op}: {k} runs {count} times but "
                                     f"pto.set_{k}_stride_{way} was never set")
            stride = (0, 0)
        out.append((count, *stride))
    return tuple(out)


def _reg_op(name: str, way: str, reg: str, doc: str) -> Any:
    def impl(m: Any, a: Any, b: Any) -> None:
        _set(m, way, reg, a, b)

    impl.__doc__ = doc
    impl.__module__ = __name__
    pipe = Pipe.MTE2 if way == "outtoub" else Pipe.MTE3
    return instr(name, pipe=pipe, dialect="vpto",
                 operands=(Opnd("first", "scalar"), Opnd("second", "scalar")))(impl)


SET_LOOP_SIZE_OUTTOUB = _reg_op("SET_LOOP_SIZE_OUTTOUB", "outtoub", "size",
                                "GM -> UB loop1 / loop2 iteration counts (first, second).")
SET_LOOP1_STRIDE_OUTTOUB = _reg_op("SET_LOOP1_STRIDE_OUTTOUB", "outtoub", "loop1",
                                   "GM -> UB loop1 advance per iteration: GM source bytes "
                                   "(first), UB destination bytes (second).")
SET_LOOP2_STRIDE_OUTTOUB = _reg_op("SET_LOOP2_STRIDE_OUTTOUB", "outtoub", "loop2",
                                   "GM -> UB loop2 advance per iteration: GM source bytes "
                                   "(first), UB destination bytes (second).")
SET_LOOP_SIZE_UBTOOUT = _reg_op("SET_LOOP_SIZE_UBTOOUT", "ubtoout", "size",
                                "UB -> GM loop1 / loop2 iteration counts (first, second).")
SET_LOOP1_STRIDE_UBTOOUT = _reg_op("SET_LOOP1_STRIDE_UBTOOUT", "ubtoout", "loop1",
                                   "UB -> GM loop1 advance per iteration: UB source bytes "
                                   "(first), GM destination bytes (second).")
SET_LOOP2_STRIDE_UBTOOUT = _reg_op("SET_LOOP2_STRIDE_UBTOOUT", "ubtoout", "loop2",
                                   "UB -> GM loop2 advance per iteration: UB source bytes "
                                   "(first), GM destination bytes (second).")


@instr("COPY_GM_TO_UBUF", pipe=Pipe.MTE2, dialect="vpto",
       operands=(Opnd("gm_src", "ptr"), Opnd("ub_dst", "ptr"), Opnd("sid", "scalar"),
                 Opnd("n_burst", "scalar"), Opnd("len_burst", "scalar"),
                 Opnd("left_padding", "scalar"), Opnd("right_padding", "scalar"),
                 Opnd("data_select_bit", "scalar"), Opnd("l2_cache_ctl", "scalar"),
                 Opnd("src_stride", "scalar"), Opnd("dst_stride", "scalar")),
       dtype_key=("ub_dst",))
def COPY_GM_TO_UBUF(m: Any, gm_src: Any, ub_dst: Any, sid: Any, n_burst: Any, len_burst: Any,
                    left_padding: Any, right_padding: Any, data_select_bit: Any,
                    l2_cache_ctl: Any, src_stride: Any, dst_stride: Any) -> None:
    """For every row of n_burst x loop1 x loop2: len_burst bytes from GM to UB (row starts
    advance by src_stride / dst_stride, then by the loop registers' strides)."""
    if int(left_padding) or int(right_padding) or bool(data_select_bit):
        raise ExecutionError("operation 'pto.copy_gm_to_ubuf' cannot be executed by ptoisa "
                             "yet with padding (left / right counts or data_select_bit)")
    loops = _loops(m, "outtoub", "copy_gm_to_ubuf")
    MTE_GM_UB.impl(m, gm_src, ub_dst, l2_cache_ctl, len_burst,
                   (n_burst, src_stride, dst_stride), loops, None)


@instr("COPY_UBUF_TO_GM", pipe=Pipe.MTE3, dialect="vpto",
       operands=(Opnd("ub_src", "ptr"), Opnd("gm_dst", "ptr", "out"), Opnd("sid", "scalar"),
                 Opnd("n_burst", "scalar"), Opnd("len_burst", "scalar"),
                 Opnd("reserved", "scalar"), Opnd("dst_stride", "scalar"),
                 Opnd("src_stride", "scalar")),
       dtype_key=("ub_src",))
def COPY_UBUF_TO_GM(m: Any, ub_src: Any, gm_dst: Any, sid: Any, n_burst: Any, len_burst: Any,
                    reserved: Any, dst_stride: Any, src_stride: Any) -> None:
    """For every row of n_burst x loop1 x loop2: len_burst bytes from UB to GM (row starts
    advance by src_stride (UB) / dst_stride (GM), then by the loop registers' strides)."""
    loops = _loops(m, "ubtoout", "copy_ubuf_to_gm")
    MTE_UB_GM.impl(m, ub_src, gm_dst, len_burst, (n_burst, src_stride, dst_stride), None,
                   loops)


__all__ = ["COPY_GM_TO_UBUF", "COPY_UBUF_TO_GM", "SET_LOOP1_STRIDE_OUTTOUB",
           "SET_LOOP1_STRIDE_UBTOOUT", "SET_LOOP2_STRIDE_OUTTOUB", "SET_LOOP2_STRIDE_UBTOOUT",
           "SET_LOOP_SIZE_OUTTOUB", "SET_LOOP_SIZE_UBTOOUT"]

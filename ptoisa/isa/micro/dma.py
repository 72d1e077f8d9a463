"""DMA between GM and UB (micro-isa/02-dma-copy.md): ``pto.mte_gm_ub`` (MTE2) and
``pto.mte_ub_gm`` (MTE3).

A transfer is ``nburst(n, src_stride, dst_stride)`` rows of ``len_burst`` contiguous bytes,
each ``loop(count, src_stride, dst_stride)`` group repeating everything inside it (the first
the innermost), strides in bytes from one row's start to the next. GM pointers are the
launch's arrays (``interp/scalar_ops.py``), UB pointers the machine's UB bytes; a row outside
either is an error naming the transfer, never a read or write of memory it was not given.
``pad(value)`` on a load fills each UB row from ``len_burst`` to ``dst_stride`` with the value;
the left / right padding counts are refused by name unless 0 (the page does not say where
they put the data). ``l2_cache_ctl`` changes no value."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...enums import Pipe
from ...errors import ExecutionError, OutsideArgument
from ...vector.regs import Ptr, buffer_bytes, touch
from ..registry import Opnd, instr
from .atomic import combine
from .common import scalar_as


def _rows(len_burst: int, nburst: tuple[Any, ...], loops: tuple[tuple[Any, ...], ...] | None,
          op: str) -> tuple[np.ndarray, np.ndarray]:
    """(source row starts, destination row starts), in bytes from the pointers, innermost
    row last."""
    if not loops and len(nburst) == 3 and int(nburst[0]) == 1 and len_burst >= 0:
        return _ONE_ROW, _ONE_ROW  # (one row at both pointers: the common chunk transfer)
    groups = [tuple(int(x) for x in nburst)]
    groups += [tuple(int(x) for x in g) for g in (loops or ())]
    src = np.zeros(1, np.int64)
    dst = np.zeros(1, np.int64)
    for g in groups:
        if len(g) != 3:
            raise ExecutionError(f"a group takes (count, src_stride, dst_stride), got "
                                 f"{len(g)} value(s)")
        count, ss, ds = g
        if count < 0:
            raise ExecutionError(f"negative count {count}")
        steps = np.arange(count, dtype=np.int64)
        # the new group is outer: its step varies slowest
        src = (steps[:, None] * ss + src[None, :]).reshape(-1)
        dst = (steps[:, None] * ds + dst[None, :]).reshape(-1)
    if len_burst < 0:
        raise ExecutionError(f"negative len_burst {len_burst}")
    return src, dst


_ONE_ROW = np.zeros(1, np.int64)
_ONE_ROW.flags.writeable = False


def _gm_bytes(p: Any, op: str, what: str) -> np.ndarray:
    if not isinstance(p, np.ndarray):
        raise ExecutionError(f"the {what} must be a GM pointer, got {p!r}")
    return p.reshape(-1).view(np.uint8)


def _span(starts: np.ndarray, n: int) -> tuple[int, int]:
    if starts.size == 0 or n == 0:
        return 0, 0
    if starts.size == 1:
        return int(starts[0]), int(starts[0]) + n
    return int(starts.min()), int(starts.max()) + n


def _rows_view(buf: np.ndarray, starts: np.ndarray, n: int, write: bool) -> np.ndarray | None:
    """The rows [s, s + n) of byte array ``buf`` for s in ``starts`` as one (rows, n) view,
    when the starts step evenly (and, for a destination, its rows do not overlap: each byte
    written once, as the indexed assignment writes it); None otherwise. (The same bytes as
    indexing with ``starts[:, None] + arange(n)``, without building the index.)"""
    k = starts.size
    if k == 0 or n <= 0:
        return None
    s0 = int(starts[0])
    step = int(starts[1] - starts[0]) if k > 1 else n
    if step < 0 or (write and k > 1 and step < n) or s0 < 0 \
            or s0 + (k - 1) * step + n > buf.size:
        return None
    if k > 2 and not (np.diff(starts) == step).all():
        return None
    if step == n:  # rows end to end: a plain slice
        return buf[s0:s0 + k * n].reshape(k, n)
    b = buf.strides[0]
    return np.lib.stride_tricks.as_strided(buf[s0:], shape=(k, n), strides=(step * b, b),
                                           writeable=write)


def _check_gm(gm: np.ndarray, starts: np.ndarray, n: int, op: str, what: str) -> None:
    lo, hi = _span(starts, n)
    if lo < 0 or hi > gm.size:
        raise OutsideArgument(f"{what} bytes [{lo}, {hi}) from the GM pointer leave its "
                             f"argument ({gm.size} bytes from the pointer on)")


def _ub_ptr(p: Any, op: str, what: str) -> Ptr:
    if not isinstance(p, Ptr) or p.space != "ub":
        raise ExecutionError(f"the {what} must be a UB pointer, got {p!r}")
    return p


@instr("MTE_GM_UB", pipe=Pipe.MTE2, dialect="vpto",
       operands=(Opnd("gm_src", "ptr"), Opnd("ub_dst", "ptr"), Opnd("l2_cache_ctl", "scalar"),
                 Opnd("len_burst", "scalar"), Opnd("nburst", "group"),
                 Opnd("loop", "group", optional=True), Opnd("pad", "group", optional=True)),
       dtype_key=("ub_dst",), chunk_dma="in")
def MTE_GM_UB(m: Any, gm_src: np.ndarray, ub_dst: Ptr, l2_cache_ctl: Any, len_burst: Any,
              nburst: tuple[Any, ...], loop: Any = None, pad: Any = None) -> None:
    """For every row r of the nburst / loop groups: UB[ub_dst + dst_row(r) ..][:len_burst] =
    GM[gm_src + src_row(r) ..][:len_burst]; with pad(value), the rest of each UB row up to
    dst_stride holds value."""
    op = "mte_gm_ub"
    ub = _ub_ptr(ub_dst, op, "destination")
    gm = _gm_bytes(gm_src, op, "source")
    n = int(len_burst)
    src, dst = _rows(n, nburst, loop, op)
    _check_gm(gm, src, n, op, "source")
    if src is _ONE_ROW and pad is None and n:  # (one row: a slice each side)
        out = buffer_bytes(m, "ub", ub.addr, n, "the accessed", role=None)
        touch(m, "in", "GM", gm, 0, n)
        touch(m, "out", "UB", None, ub.addr, n)
        out[...] = gm[:n]
        return
    fill = 0
    if pad is not None:
        if len(pad) not in (1, 3) or (len(pad) == 3 and (int(pad[1]) or int(pad[2]))):
            raise ExecutionError(f"operation 'pto.{op}' cannot be executed by ptoisa yet with "
                                 "left / right padding counts")
        fill = max(int(nburst[2]) - n, 0)
    lo, hi = _span(dst, n + fill)
    if hi == lo:
        return
    out = buffer_bytes(m, "ub", ub.addr + lo, hi - lo, "the accessed", role=None)
    touch(m, "in", "GM", gm, src, n)  # (the rows themselves, not the span between them)
    touch(m, "out", "UB", None, ub.addr + dst, n + fill)
    to, frm = _rows_view(out, dst - lo, n, True), _rows_view(gm, src, n, False)
    if to is not None and frm is not None:  # (evenly spaced rows: views, no index arrays)
        to[...] = frm
    else:
        cols = np.arange(n, dtype=np.int64)
        out[(dst - lo)[:, None] + cols[None, :]] = gm[src[:, None] + cols[None, :]]
    if fill:
        dt = ub.dtype
        one = np.array([scalar_as(pad[0], dt, "pad")], dt.np).view(np.uint8)
        k = np.arange(n, n + fill, dtype=np.int64)
        # (rows start at elements: byte k of a row is byte k % itemsize of an element)
        out[(dst - lo)[:, None] + k[None, :]] = one[k % dt.itemsize][None, :]


@instr("MTE_UB_GM", pipe=Pipe.MTE3, dialect="vpto",
       operands=(Opnd("ub_src", "ptr"), Opnd("gm_dst", "ptr", "out"),
                 Opnd("len_burst", "scalar"), Opnd("nburst", "group"),
                 Opnd("l2_cache_ctl", "group", optional=True),
                 Opnd("loop", "group", optional=True)),
       dtype_key=("ub_src",), chunk_dma="out")
def MTE_UB_GM(m: Any, ub_src: Ptr, gm_dst: np.ndarray, len_burst: Any,
              nburst: tuple[Any, ...], l2_cache_ctl: Any = None, loop: Any = None) -> None:
    """For every row r of the nburst / loop groups: GM[gm_dst + dst_row(r) ..][:len_burst] =
    UB[ub_src + src_row(r) ..][:len_burst] (the bytes between rows are left as they are); under
    an atomic mode (``atomic.py``) each element of a row is combined with GM's."""
    op = "mte_ub_gm"
    ub = _ub_ptr(ub_src, op, "source")
    gm = _gm_bytes(gm_dst, op, "destination")
    n = int(len_burst)
    src, dst = _rows(n, nburst, loop, op)
    _check_gm(gm, dst, n, op, "destination")
    if src is _ONE_ROW and n:  # (one row: a slice each side)
        data = buffer_bytes(m, "ub", ub.addr, n, "the accessed", role=None)
        touch(m, "in", "UB", None, ub.addr, n)
        touch(m, "out", "GM", gm, 0, n)
        m.gm_barrier(gm_dst)
        gm[:n] = combine(m, gm[:n], data, op)
        return
    lo, hi = _span(src, n)
    if hi == lo:
        return
    data = buffer_bytes(m, "ub", ub.addr + lo, hi - lo, "the accessed", role=None)
    touch(m, "in", "UB", None, ub.addr + src, n)
    touch(m, "out", "GM", gm, dst, n)
    m.gm_barrier(gm_dst)  # tiles still reading these GM bytes lazily take their copy first
    to, frm = _rows_view(gm, dst, n, True), _rows_view(data, src - lo, n, False)
    if to is not None and frm is not None:  # (evenly spaced rows: views, no index arrays)
        to[...] = combine(m, to, frm, op)
        return
    cols = np.arange(n, dtype=np.int64)
    at = dst[:, None] + cols[None, :]
    gm[at] = combine(m, gm[at], data[(src - lo)[:, None] + cols[None, :]], op)


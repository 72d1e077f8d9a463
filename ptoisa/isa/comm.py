"""Communication instructions with single-process semantics (spec/notes/comm_ops.tsv).

In one process every "remote" GM tensor is simply another GlobalTensor: TGET/TPUT copy the
source view into the destination view (through the staging tile, whose final contents are the
last chunk moved), the async forms complete immediately, TNOTIFY updates a signal word, TWAIT
checks that the signals already satisfy the condition (waiting for a condition nothing in this
process can make true is reported as a deadlock), TTEST returns the condition.
"""

from __future__ import annotations

import enum
from typing import Any

import numpy as np

from ..enums import AtomicType, Pipe, TileType
from ..errors import ExecutionError, RuntimeCheckError
from ..memory import Machine
from ..tensor import GlobalTensor, GMSpec
from ..tile import Tile
from .registry import Opnd, Param, Sig, instr, locs


class NotifyOp(enum.Enum):
    AtomicAdd = 0
    Set = 1


class WaitCmp(enum.Enum):
    EQ = 0
    NE = 1
    GT = 2
    GE = 3
    LT = 4
    LE = 5


class DmaEngine(enum.Enum):
    SDMA = 0
    URMA = 1


_CMP = {WaitCmp.EQ: np.equal, WaitCmp.NE: np.not_equal, WaitCmp.GT: np.greater,
        WaitCmp.GE: np.greater_equal, WaitCmp.LT: np.less, WaitCmp.LE: np.less_equal}


def flat_index(g: GlobalTensor) -> np.ndarray:
    """Absolute flat indices of every element of the 5-D view (shape = the view's shape)."""
    idx = np.full((1, 1, 1, 1, 1), g.offset, np.int64)
    for d, (s, t) in enumerate(zip(g.spec.shape, g.spec.stride, strict=True)):
        shape = [-1 if k == d else 1 for k in range(5)]
        idx = idx + np.arange(s, dtype=np.int64).reshape(shape) * t
    return idx


def _same_view(sig: Sig) -> None:
    d, s = sig["dst"], sig["src"]
    if isinstance(d, GMSpec) and isinstance(s, GMSpec):
        if d.dtype is not s.dtype:
            raise sig.fail(f"dst ({d.dtype}) and src ({s.dtype}) must have the same element type")
        if d.numel != s.numel:
            raise sig.fail(f"dst holds {d.numel} elements, src {s.numel}")


def _copy(dst: GlobalTensor, src: GlobalTensor, staging: Tile | None, add: bool) -> None:
    di, si = flat_index(dst).reshape(-1), flat_index(src).reshape(-1)
    if si.size and (si.max() >= src.flat.size or di.max() >= dst.flat.size):
        raise RuntimeCheckError("GM view reaches outside its array")
    vals = src.flat[si]
    if add:
        with np.errstate(over="ignore"):
            dst.flat[di] = (dst.flat[di] + vals).astype(dst.flat.dtype)
    else:
        dst.flat[di] = vals
    if staging is not None and vals.size:
        # the staging tile holds the last chunk that passed through it
        n = staging.valid_row * staging.valid_col
        if n:
            last = vals[-n:] if vals.size >= n else vals
            if last.size == n and staging.dtype.np == vals.dtype:
                staging.write(last.reshape(staging.valid_row, staging.valid_col))


@instr("TGET", family="comm", pipe=Pipe.MTE2,
       operands=(Opnd("dst", "gm", "out"), Opnd("src", "gm"),
                 Opnd("staging", "tile", "scratch"),
                 Opnd("pong", "tile", "scratch", optional=True)),
       dtype_key=("dst",), static=(_same_view, locs(["staging", "pong"], TileType.Vec)))
def TGET(m: Machine, dst: GlobalTensor, src: GlobalTensor, staging: Tile,  # noqa: N802
         pong: Tile | None = None) -> None:
    """Remote read: copy the (remote) src view into the local dst view through the UB staging
    tile (ping/pong tiles alternate on hardware; the result is the same)."""
    _copy(dst, src, None, False)


@instr("TPUT", family="comm", pipe=Pipe.MTE3,
       operands=(Opnd("dst", "gm", "out"), Opnd("src", "gm"),
                 Opnd("staging", "tile", "scratch"), Opnd("pong", "any", optional=True)),
       params=(Param("atomicType", AtomicType.AtomicNone, AtomicType),),
       dtype_key=("dst",), static=(_same_view, locs(["staging"], TileType.Vec)))
def TPUT(m: Machine, dst: GlobalTensor, src: GlobalTensor, staging: Tile,  # noqa: N802
         pong: Any = None, *, atomicType: AtomicType) -> None:  # noqa: N803
    """Remote write: copy the local src view into the (remote) dst view through the staging
    tile; atomicType=AtomicAdd adds into dst (integers wrap)."""
    if isinstance(pong, AtomicType):
        atomicType = pong
    _copy(dst, src, None, atomicType is AtomicType.AtomicAdd)


class AsyncEvent:
    """What TGET_ASYNC / TPUT_ASYNC return: already complete in a single process."""

    def Wait(self, session: Any = None) -> bool:  # noqa: N802 - C++ name
        return True

    def Test(self, session: Any = None) -> bool:  # noqa: N802
        return True


@instr("TGET_ASYNC", family="comm", pipe=Pipe.MTE2, returns_event=False,
       operands=(Opnd("dst", "gm", "out"), Opnd("src", "gm"), Opnd("session", "any"),
                 Opnd("peer", "scalar", optional=True)),
       params=(Param("engine", DmaEngine.SDMA, DmaEngine),),
       dtype_key=("dst",), static=(_same_view,))
def TGET_ASYNC(m: Machine, dst: GlobalTensor, src: GlobalTensor, session: Any,  # noqa: N802
               peer: Any = None, *, engine: DmaEngine) -> AsyncEvent:
    """Asynchronous remote read through a DMA engine; completes at once, returns an
    :class:`AsyncEvent`."""
    _copy(dst, src, None, False)
    return AsyncEvent()


@instr("TPUT_ASYNC", family="comm", pipe=Pipe.MTE3, returns_event=False,
       operands=(Opnd("dst", "gm", "out"), Opnd("src", "gm"), Opnd("session", "any"),
                 Opnd("peer", "scalar", optional=True)),
       params=(Param("engine", DmaEngine.SDMA, DmaEngine),),
       dtype_key=("dst",), static=(_same_view,))
def TPUT_ASYNC(m: Machine, dst: GlobalTensor, src: GlobalTensor, session: Any,  # noqa: N802
               peer: Any = None, *, engine: DmaEngine) -> AsyncEvent:
    """Asynchronous remote write through a DMA engine; completes at once."""
    _copy(dst, src, None, False)
    return AsyncEvent()


def _signal_rule(sig: Sig) -> None:
    s = sig["signal"]
    if isinstance(s, GMSpec) and s.dtype.name != "i32":
        raise sig.fail(f"signal words are i32, got {s.dtype}")


@instr("TNOTIFY", family="comm", pipe=Pipe.S,
       operands=(Opnd("signal", "gm", "out"), Opnd("value", "scalar"),
                 Opnd("op", "enum", enum=NotifyOp, optional=True)),
       static=(_signal_rule,))
def TNOTIFY(m: Machine, signal: GlobalTensor, value: Any,  # noqa: N802
            op: NotifyOp | None = None) -> None:
    """signal += value (NotifyOp.AtomicAdd, the default; wraps) or signal = value (Set), on
    every word of the signal view."""
    idx = flat_index(signal).reshape(-1)
    v = np.int64(int(value))
    if op is NotifyOp.Set:
        signal.flat[idx] = np.array(v).astype(np.int64).astype(np.uint32).view(np.int32)
    else:
        cur = signal.flat[idx].astype(np.int64) + v
        signal.flat[idx] = (cur & 0xFFFFFFFF).astype(np.uint32).view(np.int32)


def _holds(signal: GlobalTensor, value: Any, cmp: WaitCmp | None) -> bool:
    vals = signal.flat[flat_index(signal).reshape(-1)].astype(np.int64)
    return bool(np.all(_CMP[cmp or WaitCmp.EQ](vals, np.int64(int(value)))))


@instr("TWAIT", family="comm", pipe=Pipe.S,
       operands=(Opnd("signal", "gm"), Opnd("cmpValue", "scalar"),
                 Opnd("cmp", "enum", enum=WaitCmp, optional=True)),
       static=(_signal_rule,))
def TWAIT(m: Machine, signal: GlobalTensor, cmpValue: Any,  # noqa: N802,N803
          cmp: WaitCmp | None = None) -> None:
    """Block until every signal word satisfies ``word <cmp> cmpValue``. In a single process
    nothing else can change the signals, so an unsatisfied wait is a deadlock (an error)."""
    if not _holds(signal, cmpValue, cmp):
        cur = signal.flat[flat_index(signal).reshape(-1)][:8].tolist()
        raise ExecutionError(f"deadlock: signal {cur} never satisfies {(cmp or WaitCmp.EQ).name} "
                             f"{int(cmpValue)} (no other rank runs in this process)",
                             op="twait")


@instr("TTEST", family="comm", pipe=Pipe.S, returns_event=False,
       operands=(Opnd("signal", "gm"), Opnd("cmpValue", "scalar"),
                 Opnd("cmp", "enum", enum=WaitCmp, optional=True)),
       static=(_signal_rule,))
def TTEST(m: Machine, signal: GlobalTensor, cmpValue: Any,  # noqa: N802,N803
          cmp: WaitCmp | None = None) -> bool:
    """True when every signal word satisfies ``word <cmp> cmpValue`` (non-blocking)."""
    return _holds(signal, cmpValue, cmp)

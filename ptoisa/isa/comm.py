"""Communication instructions with single-process semantics (spec/notes/comm_ops.tsv).

In one process every "remote" GM tensor is simply another GlobalTensor: TGET/TPUT copy the
source view into the destination view (through the staging tile, whose final contents are the
last chunk moved), the async forms complete immediately, TNOTIFY updates a signal word, TWAIT
lets the other actors of the process run until the signals satisfy the condition (a wait no
actor can satisfy is reported as a deadlock), TTEST returns the condition.

Other actors (the peer rank or thread that notifies) are modelled as *peers*: callables
registered on the machine with :func:`add_peer` that perform their next action and return
whether they changed anything. TWAIT runs them, in order, while its condition does not hold.
Signals are i32 GM views or :class:`Signal2D` blocks (``comm::Signal2D<Rows, Cols>``).
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from typing import Any

import numpy as np

from ..enums import AtomicType, Pipe, TileType
from ..errors import ExecutionError, RuntimeCheckError
from ..memory import Machine
from ..tensor import GlobalTensor, GMSpec
from ..tile import Tile
from .registry import Opnd, Param, Sig, instr, locs, sim_unchecked_type
from .spelling import Form, Ptoas


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


@sim_unchecked_type
def _flat_1d(sig: Sig) -> None:
    """The async DMA engines move flat contiguous logical 1-D tensors only (TPUT_ASYNC /
    TGET_ASYNC pages' constraints: shape (1, 1, 1, 1, N), unit innermost stride), on every
    target; the CPU simulator copies any view (its recorded cases use 64x64 tensors), which a
    permissive machine reproduces."""
    for n in ("dst", "src"):
        t = sig[n]
        if isinstance(t, GMSpec) and (t.shape[:4] != (1, 1, 1, 1) or t.stride[4] != 1):
            raise sig.fail(f"expects {n} to be a static flat contiguous logical 1D GM memref, "
                           f"got shape {'x'.join(map(str, t.shape))}")


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
       ptoas=Ptoas(forms={"pto.tget_async": (
           Form(ins=("dst", "src", "session"), outs=("-",)),
           Form(ins=("dst", "src", "session", "peer"), outs=("-",)))}),
       operands=(Opnd("dst", "gm", "out"), Opnd("src", "gm"), Opnd("session", "any"),
                 Opnd("peer", "scalar", optional=True)),
       params=(Param("engine", DmaEngine.SDMA, DmaEngine),),
       dtype_key=("dst",), static=(_flat_1d, _same_view))
def TGET_ASYNC(m: Machine, dst: GlobalTensor, src: GlobalTensor, session: Any,  # noqa: N802
               peer: Any = None, *, engine: DmaEngine) -> AsyncEvent:
    """Asynchronous remote read through a DMA engine; completes at once, returns an
    :class:`AsyncEvent`."""
    _copy(dst, src, None, False)
    return AsyncEvent()


@instr("TPUT_ASYNC", family="comm", pipe=Pipe.MTE3, returns_event=False,
       ptoas=Ptoas(forms={"pto.tput_async": (
           # %ev = pto.tput_async(%dst, %src, %session) -> !pto.async_event: dst written
           Form(ins=("dst", "src", "session"), outs=("-",)),
           Form(ins=("dst", "src", "session", "peer"), outs=("-",)))}),
       operands=(Opnd("dst", "gm", "out"), Opnd("src", "gm"), Opnd("session", "any"),
                 Opnd("peer", "scalar", optional=True)),
       params=(Param("engine", DmaEngine.SDMA, DmaEngine),),
       dtype_key=("dst",), static=(_flat_1d, _same_view))
def TPUT_ASYNC(m: Machine, dst: GlobalTensor, src: GlobalTensor, session: Any,  # noqa: N802
               peer: Any = None, *, engine: DmaEngine) -> AsyncEvent:
    """Asynchronous remote write through a DMA engine; completes at once."""
    _copy(dst, src, None, False)
    return AsyncEvent()


class Signal2D:
    """``comm::Signal2D<Rows, Cols>``: a Rows x Cols block of i32 signal words in a flat GM
    array, rows ``row_stride`` words apart from ``offset``."""

    def __init__(self, flat: np.ndarray, rows: int, cols: int, row_stride: int | None = None,
                 offset: int = 0) -> None:
        if flat.dtype != np.int32:
            raise RuntimeCheckError(f"Signal2D words are i32, got {flat.dtype}", op="signal2d")
        self.flat = flat.reshape(-1)
        self.rows, self.cols = rows, cols
        self.row_stride = cols if row_stride is None else row_stride
        self.offset = offset
        if rows * cols and self.index().max() >= self.flat.size:
            raise RuntimeCheckError(f"Signal2D<{rows}, {cols}> (row stride {self.row_stride}) "
                                    f"reaches outside its array of {self.flat.size} words",
                                    op="signal2d")

    def index(self) -> np.ndarray:
        r = np.arange(self.rows, dtype=np.int64)[:, None] * self.row_stride
        return (self.offset + r + np.arange(self.cols, dtype=np.int64)[None, :]).reshape(-1)

    def __repr__(self) -> str:
        return f"<Signal2D {self.rows}x{self.cols}>"


Signal = GlobalTensor | Signal2D
Peer = Callable[[], bool]


def add_peer(m: Machine, peer: Peer) -> None:
    """Register another actor of the process (a notifying rank or thread). ``peer()`` performs
    its next action and returns True if it changed anything; TWAIT calls the peers while its
    condition does not hold."""
    peers = getattr(m, "comm_peers", None)
    if peers is None:
        peers = []
        m.comm_peers = peers  # type: ignore[attr-defined]
    peers.append(peer)


def _words(signal: Signal) -> tuple[np.ndarray, np.ndarray]:
    """(flat array, indices of the signal words)."""
    if isinstance(signal, Signal2D):
        return signal.flat, signal.index()
    return signal.flat, flat_index(signal).reshape(-1)


def _signal_kind(ins: Any, signal: Any, *args: Any, **kw: Any) -> None:
    if not isinstance(signal, (GlobalTensor, Signal2D)):
        raise RuntimeCheckError(f"operand 'signal' must be a GlobalTensor or Signal2D, got "
                                f"{type(signal).__name__}", op=ins.mnemonic)


def _signal_rule(sig: Sig) -> None:
    s = sig["signal"]
    if isinstance(s, GMSpec) and s.dtype.name != "i32":
        raise sig.fail(f"signal words are i32, got {s.dtype}")


@instr("TNOTIFY", family="comm", pipe=Pipe.S,
       operands=(Opnd("signal", "any", "out"), Opnd("value", "scalar"),
                 Opnd("op", "enum", enum=NotifyOp, optional=True)),
       params=(Param("GlobalSignalData", None),),
       static=(_signal_rule,), runtime=(_signal_kind,))
def TNOTIFY(m: Machine, signal: Signal, value: Any,  # noqa: N802
            op: NotifyOp | None = None, *, GlobalSignalData: Any = None) -> None:  # noqa: N803
    """signal += value (NotifyOp.AtomicAdd, the default; wraps) or signal = value (Set), on
    every word of the signal view."""
    flat, idx = _words(signal)
    v = np.int64(int(value))
    if op is NotifyOp.Set:
        flat[idx] = np.array(v).astype(np.int64).astype(np.uint32).view(np.int32)
    else:
        cur = flat[idx].astype(np.int64) + v
        flat[idx] = (cur & 0xFFFFFFFF).astype(np.uint32).view(np.int32)


def _holds(signal: Signal, value: Any, cmp: WaitCmp | None) -> bool:
    flat, idx = _words(signal)
    vals = flat[idx].astype(np.int64)
    return bool(np.all(_CMP[cmp or WaitCmp.EQ](vals, np.int64(int(value)))))


@instr("TWAIT", family="comm", pipe=Pipe.S,
       operands=(Opnd("signal", "any"), Opnd("cmpValue", "scalar"),
                 Opnd("cmp", "enum", enum=WaitCmp, optional=True)),
       params=(Param("GlobalSignalData", None),),
       static=(_signal_rule,), runtime=(_signal_kind,))
def TWAIT(m: Machine, signal: Signal, cmpValue: Any,  # noqa: N802,N803
          cmp: WaitCmp | None = None, *, GlobalSignalData: Any = None) -> None:  # noqa: N803
    """Block until every signal word satisfies ``word <cmp> cmpValue``: while it does not, the
    peers registered with :func:`add_peer` run; when none of them changes anything any more the
    wait can never return, which is reported as a deadlock (an error)."""
    peers: list[Peer] = getattr(m, "comm_peers", None) or []
    while not _holds(signal, cmpValue, cmp):
        if any([p() for p in peers]):
            continue
        flat, idx = _words(signal)
        cur = flat[idx][:8].tolist()
        raise ExecutionError(f"deadlock: signal {cur} never satisfies {(cmp or WaitCmp.EQ).name} "
                             f"{int(cmpValue)} (no other actor of this process changes it)",
                             op="twait")


@instr("TTEST", family="comm", pipe=Pipe.S, returns_event=False,
       operands=(Opnd("signal", "any"), Opnd("cmpValue", "scalar"),
                 Opnd("cmp", "enum", enum=WaitCmp, optional=True)),
       params=(Param("GlobalSignalData", None),),
       static=(_signal_rule,), runtime=(_signal_kind,))
def TTEST(m: Machine, signal: Signal, cmpValue: Any,  # noqa: N802,N803
          cmp: WaitCmp | None = None, *, GlobalSignalData: Any = None) -> bool:  # noqa: N803
    """True when every signal word satisfies ``word <cmp> cmpValue`` (non-blocking)."""
    return _holds(signal, cmpValue, cmp)


# ==== collectives over a ParallelGroup (single process: the group's GM tensors are local) =====

class ReduceOp(enum.Enum):
    Sum = 0
    Max = 1
    Min = 2


class CollEngine(enum.Enum):
    AIV = 0
    CCU = 1


class ParallelGroup:
    """``comm::ParallelGroup``: rank k's GM tensor ``tensors[k]`` (all of one shape) and the index
    of the calling (root) rank."""

    def __init__(self, tensors: list[GlobalTensor], root_idx: int = 0) -> None:
        if not tensors:
            raise RuntimeCheckError("a ParallelGroup needs at least one rank", op="parallelgroup")
        if not 0 <= root_idx < len(tensors):
            raise RuntimeCheckError(f"root index {root_idx} outside the group of "
                                    f"{len(tensors)} ranks", op="parallelgroup")
        shapes = {t.spec.shape for t in tensors}
        if len(shapes) > 1:
            raise RuntimeCheckError(f"the ranks' tensors differ in shape ({sorted(shapes)})",
                                    op="parallelgroup")
        self.tensors = list(tensors)
        self.root_idx = root_idx

    @property
    def size(self) -> int:
        return len(self.tensors)

    def __repr__(self) -> str:
        return f"<ParallelGroup of {self.size} ranks, root {self.root_idx}>"


def _group_of(ins: Any, group: Any, view: GlobalTensor) -> ParallelGroup:
    if not isinstance(group, ParallelGroup):
        raise RuntimeCheckError(f"operand 'parallelGroup' must be a ParallelGroup, got "
                                f"{type(group).__name__}", op=ins.mnemonic)
    g0 = group.tensors[0]
    if g0.flat.dtype != view.flat.dtype:
        raise RuntimeCheckError(f"the group's tensors hold {g0.flat.dtype}, the GM view "
                                f"{view.flat.dtype}", op=ins.mnemonic)
    if int(np.prod(g0.spec.shape)) != int(np.prod(view.spec.shape)):
        raise RuntimeCheckError(f"the group's tensors hold {int(np.prod(g0.spec.shape))} "
                                f"elements, the GM view {int(np.prod(view.spec.shape))}",
                                op=ins.mnemonic)
    return group


def _staging_dtype(sig: Sig) -> None:
    view = sig["srcGlobalData"] or sig["dstGlobalData"]
    for n in ("stagingTileData", "accTileData", "recvTileData", "pongTile"):
        t = sig[n]
        if t is not None and isinstance(view, GMSpec) and getattr(t, "dtype", None) is not None \
                and t.dtype is not view.dtype:
            raise sig.fail(f"{n} ({t.dtype}) must have the GM view's element type "
                           f"({view.dtype})")


def _last_chunk(tile: Tile | None, vals: np.ndarray) -> None:
    """A staging tile ends holding the last chunk that passed through it (row-major)."""
    if tile is None or not vals.size:
        return
    vr, vc = tile.valid_shape
    n = vr * vc
    if n and vals.size >= n:
        tile.write(vals.reshape(-1)[-n:].reshape(vr, vc).astype(tile.dtype.np, copy=False))


@instr("TBROADCAST", family="comm", pipe=Pipe.MTE3,
       operands=(Opnd("parallelGroup", "any"), Opnd("srcGlobalData", "gm"),
                 Opnd("stagingTileData", "tile", "scratch"),
                 Opnd("pongTile", "tile", "scratch", optional=True)),
       params=(Param("engine", CollEngine.AIV, CollEngine), Param("Args", None)),
       dtype_key=("srcGlobalData",),
       static=(locs(["stagingTileData", "pongTile"], TileType.Vec), _staging_dtype))
def TBROADCAST(m: Machine, parallelGroup: Any, srcGlobalData: GlobalTensor,  # noqa: N802,N803
               stagingTileData: Tile, pongTile: Tile | None = None, *,  # noqa: N803
               engine: CollEngine, Args: Any) -> None:  # noqa: N803
    """The root copies its src view into every rank's tensor of the group (its own included),
    chunk by chunk through the UB staging tile(s)."""
    group = _group_of(TBROADCAST, parallelGroup, srcGlobalData)
    vals = srcGlobalData.flat[flat_index(srcGlobalData).reshape(-1)]
    for t in group.tensors:
        t.flat[flat_index(t).reshape(-1)] = vals
    _last_chunk(pongTile if pongTile is not None else stagingTileData, vals)


_REDUCE = {ReduceOp.Sum: np.add, ReduceOp.Max: np.maximum, ReduceOp.Min: np.minimum}


@instr("TREDUCE", family="comm", pipe=Pipe.V,
       operands=(Opnd("parallelGroup", "any"), Opnd("dstGlobalData", "gm", "out"),
                 Opnd("accTileData", "tile", "scratch"), Opnd("recvTileData", "tile", "scratch"),
                 Opnd("op", "enum", enum=ReduceOp)),
       params=(Param("engine", CollEngine.AIV, CollEngine), Param("Args", None)),
       dtype_key=("dstGlobalData",),
       static=(locs(["accTileData", "recvTileData"], TileType.Vec), _staging_dtype))
def TREDUCE(m: Machine, parallelGroup: Any, dstGlobalData: GlobalTensor,  # noqa: N802,N803
            accTileData: Tile, recvTileData: Tile, op: ReduceOp, *,  # noqa: N803
            engine: CollEngine, Args: Any) -> None:  # noqa: N803
    """dst = op(tensors[0], tensors[1], ...) element-wise over the group's ranks, in rank order
    and in the element type (each step rounded; integers wrap), chunk by chunk through the
    accumulator and receive tiles (which end holding the last chunk's result and the last
    rank's last chunk). ``op`` is ReduceOp Sum, Max or Min."""
    group = _group_of(TREDUCE, parallelGroup, dstGlobalData)
    parts = [t.flat[flat_index(t).reshape(-1)] for t in group.tensors]
    acc = parts[0].copy()
    with np.errstate(all="ignore"):
        for p in parts[1:]:
            acc = _REDUCE[op](acc, p).astype(acc.dtype, copy=False)
    dstGlobalData.flat[flat_index(dstGlobalData).reshape(-1)] = acc
    _last_chunk(accTileData, acc)
    _last_chunk(recvTileData, parts[-1])

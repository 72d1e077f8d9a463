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

In a multi-rank launch (:mod:`ptoisa.concurrent.ranks`: ``pto.launch(..., ranks=...)``) every
access to a
window -- the rank's own or another rank's (``ptoisa.concurrent.comm.remote``) -- goes through the
launch's backend (threads in-process, or MPI RMA): the semantics below are the same, the
bytes move through the backend, TWAIT polls until another rank satisfies it (or the launch's
timeout / a deadlock ends the launch) and the async forms complete at the next flush.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from typing import Any

import numpy as np

from ..concurrent import ranks as _ranks
from ..concurrent.ranks import Signal2D as Signal2D  # re-exported: it was defined here
from ..enums import AtomicType, Pipe, TileType
from ..errors import ExecutionError, RuntimeCheckError
from ..memory import Machine
from ..tensor import GlobalTensor, GMSpec
from ..tile import Tile
from .registry import Opnd, Param, Sig, instr, locs, sim_unchecked_type
from .spelling import RESULT, Attr, Form, Ptoas


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


# ---- PTOAS's pto.comm.* spelling (PTO_IR_manual 4.21) ---------------------------------------
#: ``pto.comm.tput(%dst, %src, buf(%ping[, %pong]) : ...)``: the staging tiles in a bundle
_P2P = (Form(inputs=("dst", "src"), outs=(), bundles={"buf": ("staging", "pong?")}),)
_WAIT_CMP = Attr("cmp", values={m.name.lower(): m for m in WaitCmp})


#: ``%ev = pto.comm.tput_async(%dst, %src, %session : ...) -> !pto.async_event``: the
#: instruction's AsyncEvent is the op's result (pto.comm.wait_async_event / test_async_event)
_ASYNC = (Form(inputs=("dst", "src", "session"), outs=(RESULT,)),)


def _collective(*inputs: str, recv: tuple[str, ...]) -> tuple[Form, ...]:
    """``pto.comm.<op>(%view[, %acc], recv(%ping[, %pong]), group(%g0, %g1, ...) : ...)``:
    the group's members become the ParallelGroup's tensors, in order."""
    return (Form(inputs=inputs, outs=(), bundles={"recv": recv, "group": ("parallelGroup*",)}),)


#: the root's index in the group names the rank that issues the op; ptoisa's semantics are
#: the root's view of the collective, so it changes nothing (the group is the written list);
#: the verifier checks that it indexes the group (interp/verify.py)
_ROOT = {"root": Attr(only=None, why="the root is the calling rank's own member of the "
                      "group (checked to index it), which the root-side semantics do not "
                      "read")}


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
            shape = "x".join(map(str, t.shape))
            what = f"expects {n} to be a static flat contiguous logical 1D GM"
            raise sig.fail(f"{what} memref, got shape {shape} (a 1x1x1x1xN view; PTOAS's "
                           f"newer words: {what} view)")


def _read(view: Any, idx: np.ndarray, op: str) -> np.ndarray:
    """The elements ``idx`` of ``view.flat``: local memory, or through the rank backend when
    the view lies in a window of a multi-rank launch."""
    ref = _ranks.ref_of(view)
    if ref is None:
        return view.flat[idx]
    return ref.backend.get(ref, idx, view.flat.dtype, op)


def _write(view: Any, idx: np.ndarray, vals: np.ndarray, op: str, add: bool = False,
           sync: bool = True) -> None:
    """``view.flat[idx] = vals`` (``+= vals`` in the element type with ``add``; integers
    wrap), locally or through the rank backend."""
    vals = np.asarray(vals).astype(view.flat.dtype, copy=False)
    ref = _ranks.ref_of(view)
    if ref is not None:
        ref.backend.put(ref, idx, vals, op, add, sync)
    elif add:
        with np.errstate(all="ignore"):
            view.flat[idx] = (view.flat[idx] + vals).astype(view.flat.dtype)
    else:
        view.flat[idx] = vals


def _copy(dst: GlobalTensor, src: GlobalTensor, op: str, add: bool,
          sync: bool = True) -> None:
    di, si = flat_index(dst).reshape(-1), flat_index(src).reshape(-1)
    if si.size and (si.max() >= src.flat.size or di.max() >= dst.flat.size):
        raise RuntimeCheckError("GM view reaches outside its array")
    _write(dst, di, _read(src, si, op), op, add, sync)


@instr("TGET", family="comm", pipe=Pipe.MTE2, ptoas=Ptoas(forms={"pto.comm.tget": _P2P}),
       operands=(Opnd("dst", "gm", "out"), Opnd("src", "gm"),
                 Opnd("staging", "tile", "scratch"),
                 Opnd("pong", "tile", "scratch", optional=True)),
       dtype_key=("dst",), static=(_same_view, locs(["staging", "pong"], TileType.Vec)))
def TGET(m: Machine, dst: GlobalTensor, src: GlobalTensor, staging: Tile,  # noqa: N802
         pong: Tile | None = None) -> None:
    """Remote read: copy the (remote) src view into the local dst view through the UB staging
    tile (ping/pong tiles alternate on hardware; the result is the same)."""
    _copy(dst, src, "tget", False)


@instr("TPUT", family="comm", pipe=Pipe.MTE3,
       ptoas=Ptoas(forms={"pto.comm.tput": _P2P}, attrs={"atomicType": Attr(
           "atomicType", values={"atomic_none": AtomicType.AtomicNone,
                                 "atomic_add": AtomicType.AtomicAdd})}),
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
    _copy(dst, src, "tput", atomicType is AtomicType.AtomicAdd)


class AsyncEvent:
    """What TGET_ASYNC / TPUT_ASYNC return: already complete in a single process; in a
    multi-rank launch the transfer completes at the next flush of the rank's backend, which
    ``Wait`` and ``Test`` make (so both return True)."""

    def __init__(self, backend: Any = None) -> None:
        self.backend = backend

    def Wait(self, session: Any = None) -> bool:  # noqa: N802 - C++ name
        if self.backend is not None:
            self.backend.flush()
        return True

    def Test(self, session: Any = None) -> bool:  # noqa: N802
        return self.Wait(session)


@instr("TGET_ASYNC", family="comm", pipe=Pipe.MTE2, returns_event=False, timing="run",
       ptoas=Ptoas(forms={"pto.tget_async": (
           Form(inputs=("dst", "src", "session"), outs=("-",)),
           Form(inputs=("dst", "src", "session", "peer"), outs=("-",))),
           "pto.comm.tget_async": _ASYNC}),
       operands=(Opnd("dst", "gm", "out"), Opnd("src", "gm"), Opnd("session", "any"),
                 Opnd("peer", "scalar", optional=True)),
       params=(Param("engine", DmaEngine.SDMA, DmaEngine),),
       dtype_key=("dst",), static=(_flat_1d, _same_view))
def TGET_ASYNC(m: Machine, dst: GlobalTensor, src: GlobalTensor, session: Any,  # noqa: N802
               peer: Any = None, *, engine: DmaEngine) -> AsyncEvent:
    """Asynchronous remote read through a DMA engine; completes at once, returns an
    :class:`AsyncEvent`."""
    _copy(dst, src, "tget_async", False)
    return AsyncEvent(_ranks.active())


@instr("TPUT_ASYNC", family="comm", pipe=Pipe.MTE3, returns_event=False, timing="run",
       ptoas=Ptoas(forms={"pto.tput_async": (
           # %ev = pto.tput_async(%dst, %src, %session) -> !pto.async_event: dst written
           Form(inputs=("dst", "src", "session"), outs=("-",)),
           Form(inputs=("dst", "src", "session", "peer"), outs=("-",))),
           "pto.comm.tput_async": _ASYNC}),
       operands=(Opnd("dst", "gm", "out"), Opnd("src", "gm"), Opnd("session", "any"),
                 Opnd("peer", "scalar", optional=True)),
       params=(Param("engine", DmaEngine.SDMA, DmaEngine),),
       dtype_key=("dst",), static=(_flat_1d, _same_view))
def TPUT_ASYNC(m: Machine, dst: GlobalTensor, src: GlobalTensor, session: Any,  # noqa: N802
               peer: Any = None, *, engine: DmaEngine) -> AsyncEvent:
    """Asynchronous remote write through a DMA engine; completes at once in one process, at
    the event's Wait/Test (or the end of the launch) in a multi-rank launch."""
    _copy(dst, src, "tput_async", False, sync=False)
    return AsyncEvent(_ranks.active())


class AsyncSession:
    """What ``pto.comm.build_async_session`` makes: the DMA session's configuration (scratch
    tile, GM workspace, its attributes). The transfers it carries complete as
    :class:`AsyncEvent` says, so nothing here changes what a program computes."""

    def __init__(self, scratch: Any, workspace: Any, config: dict[str, Any]) -> None:
        self.scratch = scratch
        self.workspace = workspace
        self.config = config


Signal = GlobalTensor | Signal2D
Peer = Callable[[], bool]


def add_peer(m: Machine, peer: Peer) -> None:
    """Register another actor of the process (a notifying rank or thread). ``peer()`` performs
    its next action and returns True if it changed anything; TWAIT calls the peers while its
    condition does not hold."""
    peers = m.comm_peers
    if peers is None:
        peers = []
        m.comm_peers = peers
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


@instr("TNOTIFY", family="comm", sync="signal", pipe=Pipe.S,
       ptoas=Ptoas(forms={"pto.comm.tnotify": (Form(inputs=("signal", "value"), outs=()),)},
                   attrs={"notifyOp": Attr("op", values={"atomic_add": NotifyOp.AtomicAdd,
                                                         "set": NotifyOp.Set})}),
       operands=(Opnd("signal", "any", "out"), Opnd("value", "scalar"),
                 Opnd("op", "enum", enum=NotifyOp, optional=True)),
       params=(Param("GlobalSignalData", None),),
       static=(_signal_rule,), runtime=(_signal_kind,))
def TNOTIFY(m: Machine, signal: Signal, value: Any,  # noqa: N802
            op: NotifyOp | None = None, *, GlobalSignalData: Any = None) -> None:  # noqa: N803
    """signal += value (NotifyOp.AtomicAdd, the default; wraps) or signal = value (Set), on
    every word of the signal view."""
    flat, idx = _words(signal)
    ref = _ranks.ref_of(signal)
    if ref is not None:
        ref.backend.notify(ref, idx, int(value), op is NotifyOp.Set, "tnotify")
        return
    v = np.int64(int(value))
    if op is NotifyOp.Set:
        flat[idx] = np.array(v).astype(np.int64).astype(np.uint32).view(np.int32)
    else:
        cur = flat[idx].astype(np.int64) + v
        flat[idx] = (cur & 0xFFFFFFFF).astype(np.uint32).view(np.int32)


def _signal_values(signal: Signal, op: str) -> np.ndarray:
    """The signal words now (atomic reads through the rank backend in a multi-rank launch)."""
    flat, idx = _words(signal)
    ref = _ranks.ref_of(signal)
    if ref is None:
        return flat[idx]
    return ref.backend.read_signal(ref, idx, op)


def _holds(signal: Signal, value: Any, cmp: WaitCmp | None, op: str = "twait") -> bool:
    vals = _signal_values(signal, op).astype(np.int64)
    ok = bool(np.all(_CMP[cmp or WaitCmp.EQ](vals, np.int64(int(value)))))
    if ok:
        ref = _ranks.ref_of(signal)
        if ref is not None and ref.backend.observers:  # the sanitizer's acquire edge
            ref.backend.observed(ref, _words(signal)[1], op, lambda v: _CMP[
                cmp or WaitCmp.EQ](np.asarray(v, np.int64), np.int64(int(value))))
    return ok


def _awaited(signal: Signal, value: Any, cmp: WaitCmp | None) -> str:
    ref = _ranks.ref_of(signal)
    where = "" if ref is None else f" of window {ref.window.name!r} on rank {ref.rank}"
    cur = _signal_values(signal, "twait")[:8].tolist()
    return (f"signal words{where} are {cur}, waiting for {(cmp or WaitCmp.EQ).name} "
            f"{int(value)}")


@instr("TWAIT", family="comm", sync="signal", pipe=Pipe.S,
       ptoas=Ptoas(forms={"pto.comm.twait": (Form(inputs=("signal", "cmpValue"), outs=()),)},
                   attrs={"cmp": _WAIT_CMP}),
       operands=(Opnd("signal", "any"), Opnd("cmpValue", "scalar"),
                 Opnd("cmp", "enum", enum=WaitCmp, optional=True)),
       params=(Param("GlobalSignalData", None),),
       static=(_signal_rule,), runtime=(_signal_kind,))
def TWAIT(m: Machine, signal: Signal, cmpValue: Any,  # noqa: N802,N803
          cmp: WaitCmp | None = None, *, GlobalSignalData: Any = None) -> None:  # noqa: N803
    """Block until every signal word satisfies ``word <cmp> cmpValue``: while it does not, the
    peers registered with :func:`add_peer` run; when none of them changes anything any more the
    wait can never return, which is reported as a deadlock (an error)."""
    peers: list[Peer] = m.comm_peers or []
    backend = _ranks.active()
    if backend is not None:  # other ranks (and this process's peers) may satisfy it
        backend.wait_until(lambda: _holds(signal, cmpValue, cmp) or (
                               any([p() for p in peers]) and _holds(signal, cmpValue, cmp)),
                           lambda: _awaited(signal, cmpValue, cmp))
        return
    while not _holds(signal, cmpValue, cmp):
        if any([p() for p in peers]):
            continue
        flat, idx = _words(signal)
        cur = flat[idx][:8].tolist()
        raise SignalNeverSet(f"deadlock: signal {cur} never satisfies "
                             f"{(cmp or WaitCmp.EQ).name} {int(cmpValue)} (no other actor of "
                             "this process changes it)", flat, idx,
                             satisfying(cmp or WaitCmp.EQ, int(cmpValue)))


class SignalNeverSet(ExecutionError):
    """A TWAIT of a single-process run whose signal nothing in the process ever sets: only
    another rank or process could. ``flat`` / ``idx``: the signal words (the array and the
    indices in it); ``wanted``: a word value that satisfies the wait (what the suite presets
    to run such a kernel alone, as if the other side had notified)."""

    def __init__(self, message: str, flat: np.ndarray, idx: np.ndarray, wanted: int) -> None:
        super().__init__(message, op="twait")
        self.flat, self.idx, self.wanted = flat, np.asarray(idx).reshape(-1), wanted


def satisfying(cmp: WaitCmp, value: int) -> int:
    """An i32 word value for which ``word <cmp> value`` holds."""
    return {WaitCmp.EQ: value, WaitCmp.GE: value, WaitCmp.LE: value, WaitCmp.GT: value + 1,
            WaitCmp.LT: value - 1, WaitCmp.NE: value + 1}[cmp]


@instr("TTEST", family="comm", sync="signal", pipe=Pipe.S, returns_event=False,
       ptoas=Ptoas(forms={"pto.comm.ttest": (Form(inputs=("signal", "cmpValue"), outs=(RESULT,)),)},
                   attrs={"cmp": _WAIT_CMP}),
       operands=(Opnd("signal", "any"), Opnd("cmpValue", "scalar"),
                 Opnd("cmp", "enum", enum=WaitCmp, optional=True)),
       params=(Param("GlobalSignalData", None),),
       static=(_signal_rule,), runtime=(_signal_kind,))
def TTEST(m: Machine, signal: Signal, cmpValue: Any,  # noqa: N802,N803
          cmp: WaitCmp | None = None, *, GlobalSignalData: Any = None) -> bool:  # noqa: N803
    """True when every signal word satisfies ``word <cmp> cmpValue`` (non-blocking)."""
    return _holds(signal, cmpValue, cmp, "ttest")


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


def _same_type_group(ins: Any, group: Any, view: GlobalTensor) -> ParallelGroup:
    """The ``parallelGroup`` operand, checked to be a group whose tensors hold ``view``'s
    element type."""
    if isinstance(group, tuple) and group and all(isinstance(t, GlobalTensor) for t in group):
        group = ParallelGroup(list(group))  # group(%g0, %g1, ...) of a .pto op
    if not isinstance(group, ParallelGroup):
        raise RuntimeCheckError(f"operand 'parallelGroup' must be a ParallelGroup, got "
                                f"{type(group).__name__}", op=ins.mnemonic)
    g0 = group.tensors[0]
    if g0.flat.dtype != view.flat.dtype:
        raise RuntimeCheckError(f"the group's tensors hold {g0.flat.dtype}, the GM view "
                                f"{view.flat.dtype}", op=ins.mnemonic)
    return group


def _group_of(ins: Any, group: Any, view: GlobalTensor) -> ParallelGroup:
    group = _same_type_group(ins, group, view)
    g0 = group.tensors[0]
    if int(np.prod(g0.spec.shape)) != int(np.prod(view.spec.shape)):
        raise RuntimeCheckError(f"the group's tensors hold {int(np.prod(g0.spec.shape))} "
                                f"elements, the GM view {int(np.prod(view.spec.shape))}",
                                op=ins.mnemonic)
    return group


def _staging_dtype(sig: Sig) -> None:
    view = sig["srcGlobalData"] or sig["dstGlobalData"]
    for n in ("stagingTileData", "accTileData", "recvTileData", "pongTile", "pongTileData"):
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
       ptoas=Ptoas(forms={"pto.comm.tbroadcast": _collective(
           "srcGlobalData", recv=("stagingTileData", "pongTile?"))}, attrs=_ROOT),
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
    vals = _read(srcGlobalData, flat_index(srcGlobalData).reshape(-1), "tbroadcast")
    for t in group.tensors:
        _write(t, flat_index(t).reshape(-1), vals, "tbroadcast")
    _last_chunk(pongTile if pongTile is not None else stagingTileData, vals)


_REDUCE = {ReduceOp.Sum: np.add, ReduceOp.Max: np.maximum, ReduceOp.Min: np.minimum}


@instr("TREDUCE", family="comm", pipe=Pipe.V,
       ptoas=Ptoas(forms={"pto.comm.treduce": _collective(
           "dstGlobalData", "accTileData", recv=("recvTileData", "pongTileData?"))},
                   attrs={**_ROOT, "reduceOp": Attr("op", values={
                       m.name.lower(): m for m in ReduceOp})}),
       operands=(Opnd("parallelGroup", "any"), Opnd("dstGlobalData", "gm", "out"),
                 Opnd("accTileData", "tile", "scratch"), Opnd("recvTileData", "tile", "scratch"),
                 Opnd("op", "enum", enum=ReduceOp),
                 Opnd("pongTileData", "tile", "scratch", optional=True)),
       params=(Param("engine", CollEngine.AIV, CollEngine), Param("Args", None)),
       dtype_key=("dstGlobalData",),
       static=(locs(["accTileData", "recvTileData", "pongTileData"], TileType.Vec),
               _staging_dtype))
def TREDUCE(m: Machine, parallelGroup: Any, dstGlobalData: GlobalTensor,  # noqa: N802,N803
            accTileData: Tile, recvTileData: Tile, op: ReduceOp,  # noqa: N803
            pongTileData: Tile | None = None, *,  # noqa: N803
            engine: CollEngine, Args: Any) -> None:  # noqa: N803
    """dst = op(tensors[0], tensors[1], ...) element-wise over the group's ranks, in rank order
    and in the element type (each step rounded; integers wrap), chunk by chunk through the
    accumulator and receive tiles (which end holding the last chunk's result and the last
    rank's last chunk). ``op`` is ReduceOp Sum, Max or Min. The ping-pong form (C++
    ``TREDUCE(group, dst, acc, ping, pong, op)``, ``recv(%ping, %pong)`` in PTOAS) receives
    into ``recvTileData`` and ``pongTileData`` by turns; here the pong tile comes last, after
    ``op`` (or by keyword), and ends holding the last chunk received."""
    group = _group_of(TREDUCE, parallelGroup, dstGlobalData)
    parts = [_read(t, flat_index(t).reshape(-1), "treduce") for t in group.tensors]
    acc = parts[0].copy()
    with np.errstate(all="ignore"):
        for p in parts[1:]:
            acc = _REDUCE[op](acc, p).astype(acc.dtype, copy=False)
    _write(dstGlobalData, flat_index(dstGlobalData).reshape(-1), acc, "treduce")
    _last_chunk(accTileData, acc)
    _last_chunk(pongTileData if pongTileData is not None else recvTileData, parts[-1])


def _row_group(ins: Any, group: Any, big: GlobalTensor) -> tuple[ParallelGroup, int]:
    """The group of a gather/scatter and the rows H of each rank's tensor: the ranks' tensors
    match ``big`` in element type, outer dimensions and width, and ``big`` has at least
    N x H rows (DIM_3)."""
    group = _same_type_group(ins, group, big)
    g0 = group.tensors[0]
    s, b = g0.spec.shape, big.spec.shape
    if s[:3] != b[:3] or s[4] != b[4]:
        raise RuntimeCheckError(f"the group's tensors have shape {'x'.join(map(str, s))}, the "
                                f"GM view {'x'.join(map(str, b))}: they must agree except in "
                                "DIM_3", op=ins.mnemonic)
    if b[3] < group.size * s[3]:
        raise RuntimeCheckError(f"the GM view has {b[3]} rows (DIM_3), the {group.size} ranks "
                                f"need {group.size} x {s[3]}", op=ins.mnemonic)
    return group, s[3]


_COLL_OPERANDS = (Opnd("stagingTileData", "tile", "scratch"),
                  Opnd("pongTile", "tile", "scratch", optional=True))
_COLL_PARAMS = (Param("engine", CollEngine.AIV, CollEngine), Param("Args", None))


@instr("COMM_TGATHER", family="comm", pipe=Pipe.MTE2,
       ptoas=Ptoas(forms={"pto.comm.tgather": _collective(
           "dstGlobalData", recv=("stagingTileData", "pongTile?"))}, attrs=_ROOT),
       operands=(Opnd("parallelGroup", "any"), Opnd("dstGlobalData", "gm", "out"),
                 *_COLL_OPERANDS),
       params=_COLL_PARAMS, dtype_key=("dstGlobalData",),
       static=(locs(["stagingTileData", "pongTile"], TileType.Vec), _staging_dtype))
def COMM_TGATHER(m: Machine, parallelGroup: Any, dstGlobalData: GlobalTensor,  # noqa: N802,N803
                 stagingTileData: Tile, pongTile: Tile | None = None, *,  # noqa: N803
                 engine: CollEngine, Args: Any) -> None:  # noqa: N803
    """``comm::TGATHER``: the root concatenates the ranks' tensors along DIM_3 into its dst
    view, ``dst[..., r*H + i, j] = tensors[r][..., i, j]``; rows past N x H are left as they
    are. (Python name ``ptoisa.concurrent.comm.TGATHER``; ``pto.TGATHER`` is the tile gather.)"""
    group, h = _row_group(COMM_TGATHER, parallelGroup, dstGlobalData)
    idx = flat_index(dstGlobalData)
    vals = np.zeros(0, dstGlobalData.flat.dtype)
    for r, t in enumerate(group.tensors):
        vals = _read(t, flat_index(t).reshape(-1), "comm_tgather")
        _write(dstGlobalData, idx[:, :, :, r * h:(r + 1) * h, :].reshape(-1), vals,
               "comm_tgather")
    _last_chunk(pongTile if pongTile is not None else stagingTileData, vals)


@instr("COMM_TSCATTER", family="comm", pipe=Pipe.MTE3,
       ptoas=Ptoas(forms={"pto.comm.tscatter": _collective(
           "srcGlobalData", recv=("stagingTileData", "pongTile?"))}, attrs=_ROOT),
       operands=(Opnd("parallelGroup", "any"), Opnd("srcGlobalData", "gm"), *_COLL_OPERANDS),
       params=_COLL_PARAMS, dtype_key=("srcGlobalData",),
       static=(locs(["stagingTileData", "pongTile"], TileType.Vec), _staging_dtype))
def COMM_TSCATTER(m: Machine, parallelGroup: Any, srcGlobalData: GlobalTensor,  # noqa: N802,N803
                  stagingTileData: Tile, pongTile: Tile | None = None, *,  # noqa: N803
                  engine: CollEngine, Args: Any) -> None:  # noqa: N803
    """``comm::TSCATTER``: the root splits its src view along DIM_3 over the ranks,
    ``tensors[r][..., i, j] = src[..., r*H + i, j]``; rows past N x H are not read. (Python
    name ``ptoisa.concurrent.comm.TSCATTER``; ``pto.TSCATTER`` is the tile scatter.)"""
    group, h = _row_group(COMM_TSCATTER, parallelGroup, srcGlobalData)
    idx = flat_index(srcGlobalData)
    vals = np.zeros(0, srcGlobalData.flat.dtype)
    for r, t in enumerate(group.tensors):
        vals = _read(srcGlobalData, idx[:, :, :, r * h:(r + 1) * h, :].reshape(-1),
                     "comm_tscatter")
        _write(t, flat_index(t).reshape(-1), vals, "comm_tscatter")
    _last_chunk(pongTile if pongTile is not None else stagingTileData, vals)

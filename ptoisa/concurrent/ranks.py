"""Multi-rank launches: the communication instructions between concurrent ranks.

A rank is one NPU of a parallel job: its own machine and its own global memory. A multi-rank
launch runs the same kernel on every rank at once; each rank binds its own arguments, and the
array arguments are its *windows*: symmetric GM (argument k of every rank is window k) that the
communication instructions (TPUT/TGET (+_ASYNC), TNOTIFY, TWAIT, TTEST, TBROADCAST, TREDUCE,
comm TGATHER/TSCATTER) reach on other ranks. ``remote(view, r)`` is the same view on rank
``r``'s copy of the window (what the C++ kernel gets as a remote ``__gm__`` address).

Two backends implement the same operations (:class:`Ranks`), chosen at launch:

* :class:`LocalRanks` -- every rank a thread of this process (``ranks=N``): for tests and for
  users without MPI. A wait that no rank can satisfy any more is a deadlock error.
* ``ranks_mpi.MpiRanks`` -- every rank a process of an MPI job (``ranks=comm``, mpi4py): the
  windows are MPI RMA windows; see :mod:`ptoisa.concurrent.ranks_mpi`.

Both give bit-identical results: every element moves as its bytes, TREDUCE reduces in rank
order on the root, atomic adds are done in the element type.

Faults: a rank whose kernel raises (or exits) ends the launch on every rank with a message
naming the rank and its last instruction; waits time out (``timeout=`` seconds, default
``PTOISA_RANK_TIMEOUT`` or 60) with a message naming the waiting rank and what it waited on.
In process, a rank stuck in its own Python code (no instruction and no wait for that long, once
every other rank is done or one failed) ends the launch too, named with its line.
"""

from __future__ import annotations

import inspect
import os
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .. import observe
from ..errors import ExecutionError, PtoError, RuntimeCheckError
from ..memory import Machine, pop, push
from ..targets import DEFAULT_TARGET, TargetLike
from ..tensor import GlobalTensor

DEFAULT_TIMEOUT = 60.0


class RankError(ExecutionError):
    """A rank of a multi-rank launch failed (raised, exited, timed out or deadlocked)."""


class RankTimeout(RankError):
    """A rank waited longer than the launch's timeout."""


class RankDeadlock(RankError):
    """Every live rank waits for a condition no rank can make true (in-process backend)."""


class _Aborted(BaseException):
    """Unwinds a rank's thread when another rank failed (in-process backend)."""


def default_timeout() -> float:
    try:
        return float(os.environ.get("PTOISA_RANK_TIMEOUT", DEFAULT_TIMEOUT))
    except ValueError:
        return DEFAULT_TIMEOUT


# ---- windows and remote views -------------------------------------------------------------

def _addr(a: np.ndarray) -> int:
    return int(a.__array_interface__["data"][0])


@dataclass(eq=False)
class Window:
    """Symmetric global memory: argument ``index`` of every rank. ``array`` is this rank's copy
    (its bytes are the window); ``sizes[r]`` is the byte size of rank r's copy."""

    index: int
    name: str
    array: np.ndarray
    sizes: tuple[int, ...]

    def __repr__(self) -> str:
        return f"<window {self.name!r}>"


@dataclass
class RemoteAccess:
    """What the observers of a rank backend (``Ranks.observers``) see of one access to a
    window through the backend, on the rank that makes it: ``kind`` get | put | add | notify |
    read (a signal poll) | acquire (a TWAIT / TTEST found the words satisfying it);
    ``origin`` and ``target`` ranks; the window; byte ranges
    ``(start, nbytes)`` in the target's copy; the instruction (mnemonic) and its location."""

    kind: str
    origin: int
    target: int
    window: Window
    ranges: list[tuple[int, int]]
    op: str | None = None
    loc: Any = None
    #: acquire: the wait's condition on the words (``cond(values) -> bool array``)
    cond: Any = None
    #: notify: (value, whether it sets the words rather than adds to them)
    value: tuple[int, bool] | None = None


@dataclass(frozen=True)
class RemoteRef:
    """Where a remote view lives: the backend, the window, the rank, the byte offset of the
    view's ``flat[0]`` in that rank's copy."""

    backend: Ranks
    window: Window
    rank: int
    base: int


class Signal2D:
    """``comm::Signal2D<Rows, Cols>``: a Rows x Cols block of i32 signal words in a flat GM
    array, rows ``row_stride`` words apart from ``offset`` (the communication instructions
    take it, :mod:`ptoisa.isa.comm`; it is defined here, where :func:`remote` makes one on
    another rank)."""

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


def _runs(idx: np.ndarray) -> list[tuple[int, int, int]]:
    """Element indices (in order) -> contiguous runs (first index, count, position)."""
    idx = np.asarray(idx, np.int64).reshape(-1)
    if not idx.size:
        return []
    brk = np.flatnonzero(np.diff(idx) != 1) + 1
    starts = np.concatenate(([0], brk))
    ends = np.concatenate((brk, [idx.size]))
    return [(int(idx[s]), int(e - s), int(s)) for s, e in zip(starts, ends, strict=True)]


class Ranks:
    """The backend interface of a multi-rank launch, as one rank sees it.

    Subclasses implement the memory operations on element indices of a window copy
    (``_get``, ``_put``, ``_notify``, ``_read_signal``), ``flush`` (complete this rank's
    outstanding writes) and ``_idle`` (one unsuccessful poll of a wait). The base class checks
    ranges (errors name both ranks), emits :class:`RemoteAccess` records and runs waits."""

    rank: int
    size: int

    def __init__(self, rank: int, size: int, timeout: float | None = None) -> None:
        self.rank, self.size = rank, size
        self.timeout = default_timeout() if timeout is None else float(timeout)
        self.windows: list[Window] = []
        self.observers: list[Callable[[RemoteAccess], None]] = []
        #: the instruction this rank runs now (kept by an observer of its machine)
        self.last: Any = None
        #: time.monotonic() of this rank's last sign of progress (an instruction, a poll of
        #: a wait): the in-process launch gives up on a rank stuck in Python past the timeout
        self.active_at = time.monotonic()

    # ---- to implement ------------------------------------------------------------------
    def _get(self, win: Window, rank: int, base: int, idx: np.ndarray,
             dtype: np.dtype) -> np.ndarray:
        raise NotImplementedError

    def _put(self, win: Window, rank: int, base: int, idx: np.ndarray, vals: np.ndarray,
             add: bool, sync: bool) -> None:
        raise NotImplementedError

    def _notify(self, win: Window, rank: int, base: int, idx: np.ndarray, value: int,
                set_: bool) -> None:
        raise NotImplementedError

    def _read_signal(self, win: Window, rank: int, base: int, idx: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def flush(self) -> None:
        """Complete every write this rank issued (the async transfers)."""

    def _idle(self, why: Callable[[], str], since: float) -> None:
        raise NotImplementedError

    def proxy(self, win: Window, rank: int, base: int, dtype: np.dtype) -> np.ndarray:
        """A flat array standing for rank ``rank``'s copy of ``win`` from byte ``base`` on."""
        raise NotImplementedError

    # ---- shared ------------------------------------------------------------------------
    def where(self) -> str:
        """The current instruction and its location, for messages."""
        rec = self.last
        if rec is None:
            return "before its first instruction"
        loc = rec.loc
        if isinstance(loc, tuple) and len(loc) == 2:
            loc = f"{loc[0]}:{loc[1]}"
        return f"at {rec.ins.mnemonic}" + (f" ({loc})" if loc else "")

    def locate(self, flat: np.ndarray) -> tuple[Window, int] | None:
        """(window, byte offset of ``flat[0]`` in it) when ``flat`` lies in one of this rank's
        windows."""
        a = _addr(flat)
        for w in self.windows:
            lo = _addr(w.array)
            if lo <= a < lo + w.array.nbytes or (a == lo and not w.array.nbytes):
                return w, a - lo
        return None

    def _check(self, op: str, win: Window, rank: int, base: int, idx: np.ndarray,
               itemsize: int) -> list[tuple[int, int]]:
        if not 0 <= rank < self.size:
            raise RuntimeCheckError(f"rank {self.rank} addresses rank {rank}, outside the "
                                    f"{self.size} ranks of the launch", op=op)
        if not idx.size:
            return []
        lo, hi = int(idx.min()), int(idx.max())
        size = win.sizes[rank]
        if base + lo * itemsize < 0 or base + (hi + 1) * itemsize > size:
            raise RuntimeCheckError(
                f"rank {self.rank} reaches bytes [{base + lo * itemsize}, "
                f"{base + (hi + 1) * itemsize}) of rank {rank}'s window {win.name!r}, which "
                f"holds {size} bytes", op=op)
        return [(base + s * itemsize, n * itemsize) for s, n, _ in _runs(idx)]

    def _record(self, kind: str, win: Window, rank: int, ranges: list[tuple[int, int]],
                op: str, value: tuple[int, bool] | None = None) -> None:
        if self.observers:
            rec = RemoteAccess(kind, self.rank, rank, win, ranges, op,
                               getattr(self.last, "loc", None), value=value)
            for o in self.observers:
                o(rec)

    def get(self, ref: RemoteRef, idx: np.ndarray, dtype: np.dtype, op: str) -> np.ndarray:
        ranges = self._check(op, ref.window, ref.rank, ref.base, idx, dtype.itemsize)
        self._record("get", ref.window, ref.rank, ranges, op)
        return self._get(ref.window, ref.rank, ref.base, idx, dtype)

    def put(self, ref: RemoteRef, idx: np.ndarray, vals: np.ndarray, op: str, add: bool = False,
            sync: bool = True) -> None:
        ranges = self._check(op, ref.window, ref.rank, ref.base, idx, vals.dtype.itemsize)
        self._record("add" if add else "put", ref.window, ref.rank, ranges, op)
        self._put(ref.window, ref.rank, ref.base, idx, vals, add, sync)

    def notify(self, ref: RemoteRef, idx: np.ndarray, value: int, set_: bool, op: str) -> None:
        ranges = self._check(op, ref.window, ref.rank, ref.base, idx, 4)
        self._record("notify", ref.window, ref.rank, ranges, op, (int(value), set_))
        self._notify(ref.window, ref.rank, ref.base, idx, value, set_)

    def observed(self, ref: RemoteRef, idx: np.ndarray, op: str,
                 cond: Callable[[np.ndarray], np.ndarray] | None = None) -> None:
        """A TWAIT / TTEST found the signal words ``idx`` satisfying its condition ``cond``
        (values -> which hold): observers see an ``acquire`` access (after the read that
        satisfied it)."""
        if self.observers:
            rec = RemoteAccess("acquire", self.rank, ref.rank, ref.window,
                               self._check(op, ref.window, ref.rank, ref.base, idx, 4), op,
                               getattr(self.last, "loc", None), cond)
            for o in self.observers:
                o(rec)

    def read_signal(self, ref: RemoteRef, idx: np.ndarray, op: str) -> np.ndarray:
        ranges = self._check(op, ref.window, ref.rank, ref.base, idx, 4)
        self._record("read", ref.window, ref.rank, ranges, op)
        return self._read_signal(ref.window, ref.rank, ref.base, idx)

    def wait_until(self, ready: Callable[[], bool], why: Callable[[], str]) -> None:
        """Poll ``ready()`` until it holds; ``why()`` says what is awaited (for the timeout
        and deadlock messages)."""
        since = time.monotonic()
        while not ready():
            self._idle(why, since)

    def timed_out(self, why: Callable[[], str], since: float) -> None:
        """Raise RankTimeout when the wait that began at ``since`` has lasted too long."""
        if time.monotonic() - since > self.timeout:
            raise RankTimeout(f"rank {self.rank} waited {self.timeout:g} s {self.where()}: "
                              f"{why()}")


# ---- the in-process backend: one thread per rank --------------------------------------------

class _World:
    """What the threads of an in-process launch share."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.cond = threading.Condition(threading.RLock())
        self.version = 0
        self.arrays: list[list[np.ndarray]] = []  # [window][rank] -> that rank's bytes
        self.waiting: dict[int, tuple[int, str]] = {}
        self.done: set[int] = set()
        self.failure: tuple[int, BaseException] | None = None


class LocalRanks(Ranks):
    """Ranks as threads of this process; a window copy is the rank's own numpy array."""

    def __init__(self, world: _World, rank: int, timeout: float | None = None) -> None:
        super().__init__(rank, world.size, timeout)
        self.world = world

    def _view(self, win: Window, rank: int, base: int, dtype: np.dtype) -> np.ndarray:
        raw = self.world.arrays[win.index][rank]
        n = (raw.size - base) // dtype.itemsize
        return raw[base: base + n * dtype.itemsize].view(dtype)

    def proxy(self, win: Window, rank: int, base: int, dtype: np.dtype) -> np.ndarray:
        return self._view(win, rank, base, dtype)

    def _get(self, win: Window, rank: int, base: int, idx: np.ndarray,
             dtype: np.dtype) -> np.ndarray:
        with self.world.cond:
            return self._view(win, rank, base, dtype)[idx]

    def _put(self, win: Window, rank: int, base: int, idx: np.ndarray, vals: np.ndarray,
             add: bool, sync: bool) -> None:
        with self.world.cond:
            v = self._view(win, rank, base, vals.dtype)
            if add:
                with np.errstate(all="ignore"):
                    v[idx] = (v[idx] + vals).astype(v.dtype)
            else:
                v[idx] = vals
            self._changed()

    def _notify(self, win: Window, rank: int, base: int, idx: np.ndarray, value: int,
                set_: bool) -> None:
        with self.world.cond:
            v = self._view(win, rank, base, np.dtype(np.int32))
            if set_:
                v[idx] = np.int64(value).astype(np.uint32).view(np.int32)
            else:
                cur = v[idx].astype(np.int64) + np.int64(value)
                v[idx] = (cur & 0xFFFFFFFF).astype(np.uint32).view(np.int32)
            self._changed()

    def _read_signal(self, win: Window, rank: int, base: int, idx: np.ndarray) -> np.ndarray:
        with self.world.cond:
            return self._view(win, rank, base, np.dtype(np.int32))[idx].copy()

    def _changed(self) -> None:
        self.world.version += 1
        self.world.cond.notify_all()

    def wait_until(self, ready: Callable[[], bool], why: Callable[[], str]) -> None:
        w = self.world
        since = time.monotonic()
        try:
            while True:
                with w.cond:
                    if w.failure is not None:
                        raise _Aborted()
                    if ready():
                        return
                    w.waiting[self.rank] = (w.version, f"rank {self.rank} {self.where()}: "
                                            f"{why()}")
                    live = [r for r in range(w.size) if r not in w.done]
                    if all(r in w.waiting and w.waiting[r][0] == w.version for r in live):
                        raise RankDeadlock("deadlock: every rank still running waits for a "
                                           "condition no rank can make true any more: " +
                                           "; ".join(w.waiting[r][1] for r in live))
                    w.cond.wait(0.05)
                self.active_at = time.monotonic()  # (waiting has its own timeout)
                self.timed_out(why, since)
        finally:
            with w.cond:
                w.waiting.pop(self.rank, None)

    def _idle(self, why: Callable[[], str], since: float) -> None:  # pragma: no cover
        raise AssertionError("LocalRanks.wait_until does not idle")


# ---- the launch -------------------------------------------------------------------------------

class _Context(threading.local):
    def __init__(self) -> None:
        self.ranks: Ranks | None = None


_ctx = _Context()


def active() -> Ranks | None:
    """The backend of the multi-rank launch this thread runs in, else None."""
    return _ctx.ranks


def get_rank() -> int:
    """This rank's index in the launch (0 outside a multi-rank launch)."""
    r = _ctx.ranks
    return 0 if r is None else r.rank


def get_rank_num() -> int:
    """The number of ranks of the launch (1 outside a multi-rank launch)."""
    r = _ctx.ranks
    return 1 if r is None else r.size


def remote(view: Any, rank: int) -> Any:
    """The same GM view (a GlobalTensor or Signal2D over a window array of this rank) on rank
    ``rank``'s copy of the window: the operand the communication instructions reach another
    rank through."""
    b = _ctx.ranks
    if b is None:
        raise PtoError("remote(): not inside a multi-rank launch (pto.launch(..., ranks=...))")
    if isinstance(rank, bool) or not isinstance(rank, (int, np.integer)):
        raise PtoError(f"remote(): the rank must be an integer, got {rank!r}")
    rank = int(rank)
    if not 0 <= rank < b.size:
        raise RuntimeCheckError(f"rank {b.rank} addresses rank {rank}, outside the {b.size} "
                                "ranks of the launch", op="remote")
    if not isinstance(view, (GlobalTensor, Signal2D)):
        raise PtoError(f"remote(): expects a GlobalTensor or Signal2D, got "
                       f"{type(view).__name__}")
    ref = getattr(view, "remote_ref", None)
    if ref is not None:
        win, base = ref.window, ref.base
    else:
        found = b.locate(view.flat)
        if found is None:
            raise PtoError(f"remote(): rank {b.rank}'s view is not in a window (the array "
                           "arguments of the launch are the windows)")
        win, base = found
    dt = view.flat.dtype
    if isinstance(view, Signal2D):
        idx = view.index()
        lo, hi = (int(idx.min()), int(idx.max())) if idx.size else (0, -1)
    else:
        ext_lo, ext_hi = view.spec.extent
        off = view.offset if isinstance(view.offset, int) else int(np.max(view.offset))
        lo, hi = off + ext_lo, off + ext_hi
    if hi >= lo and base + (hi + 1) * dt.itemsize > win.sizes[rank]:
        raise RuntimeCheckError(
            f"rank {b.rank}'s view of window {win.name!r} reaches bytes "
            f"[{base + lo * dt.itemsize}, {base + (hi + 1) * dt.itemsize}), beyond rank "
            f"{rank}'s copy ({win.sizes[rank]} bytes)", op="remote")
    new = RemoteRef(b, win, rank, base)
    flat = b.proxy(win, rank, base, dt)[: view.flat.size]
    if isinstance(view, Signal2D):
        sig = Signal2D(flat, view.rows, view.cols, view.row_stride, view.offset)
        sig.remote_ref = new  # type: ignore[attr-defined]
        return sig
    return RemoteTensor(new, flat, view)


class RemoteTensor(GlobalTensor):
    """A GlobalTensor on another rank's copy of a window (made by :func:`remote`); its
    ``flat`` stands for that memory (the peer's array in-process, zeros under MPI): only the
    communication instructions reach the bytes, through ``remote_ref``."""

    __slots__ = ("remote_ref",)

    def __init__(self, ref: RemoteRef, flat: np.ndarray, like: GlobalTensor) -> None:
        s = like.spec
        super().__init__(flat, s.shape, s.stride, s.layout, offset=like.offset, name=like.name)
        self.remote_ref = ref

    @property
    def rank(self) -> int:
        return self.remote_ref.rank

    def __repr__(self) -> str:
        return f"<GlobalTensor on rank {self.rank} of {self.remote_ref.window!r}>"


class RemoteArray(np.ndarray):
    """Another rank's copy of a window as an *array* (made by :func:`remote_array`): what a
    ``.pto`` program's pointer argument binds to (``ptoisa run --arg NAME=peer:R:ARG``). Views
    and GlobalTensors over it reach rank R's memory."""

    remote_ref: RemoteRef | None
    origin: int

    def __array_finalize__(self, obj: Any) -> None:
        self.remote_ref = getattr(obj, "remote_ref", None)
        self.origin = getattr(obj, "origin", 0)


def remote_array(array: np.ndarray, rank: int) -> RemoteArray:
    """Rank ``rank``'s copy of the window ``array`` (an array argument of this rank), as an
    array of the same shape and type."""
    b = _ctx.ranks
    if b is None:
        raise PtoError("remote_array(): not inside a multi-rank launch")
    if not 0 <= rank < b.size:
        raise RuntimeCheckError(f"rank {b.rank} addresses rank {rank}, outside the {b.size} "
                                "ranks of the launch", op="remote")
    found = b.locate(array.reshape(-1))
    if found is None:
        raise PtoError(f"remote_array(): rank {b.rank}'s array is not a window")
    win, base = found
    if base + array.nbytes > win.sizes[rank]:
        raise RuntimeCheckError(
            f"rank {b.rank}'s array of {array.nbytes} bytes at byte {base} of window "
            f"{win.name!r} reaches beyond rank {rank}'s copy ({win.sizes[rank]} bytes)",
            op="remote")
    flat = b.proxy(win, rank, base, array.dtype)[: array.size]
    ra = flat.reshape(array.shape).view(RemoteArray)
    ra.remote_ref = RemoteRef(b, win, rank, base)
    ra.origin = _addr(ra)
    return ra


def ref_of(view: Any) -> RemoteRef | None:
    """Where a view lives when a multi-rank launch runs: its RemoteRef (remote views, and
    local views over a window), or None (memory of this rank outside every window, or no
    multi-rank launch)."""
    ref = getattr(view, "remote_ref", None)
    if ref is not None:
        return ref
    flat = view.flat
    if isinstance(flat, RemoteArray) and flat.remote_ref is not None:
        r = flat.remote_ref
        return RemoteRef(r.backend, r.window, r.rank, r.base + _addr(flat) - flat.origin)
    b = _ctx.ranks
    if b is None:
        return None
    found = b.locate(view.flat)
    if found is None:
        return None
    return RemoteRef(b, found[0], b.rank, found[1])


def gm_location(view: Any) -> tuple[int, int, int, int] | None:
    """Where a GM view's bytes are in the whole job: (rank, window index, first byte, end
    byte) of the window copy it reaches, or None outside the windows of a multi-rank launch.
    The same bytes have the same location on every rank, whichever rank reaches them (what a
    sanitizer extended to ranks compares)."""
    ref = ref_of(view)
    if ref is None:
        return None
    if hasattr(view, "index") and not isinstance(view, GlobalTensor):  # Signal2D
        idx = view.index()
    else:
        ext_lo, ext_hi = view.spec.extent
        off = view.offset if isinstance(view.offset, int) else int(np.min(view.offset))
        idx = np.array([off + ext_lo, off + ext_hi], np.int64)
    isz = view.flat.dtype.itemsize
    if not idx.size:
        return (ref.rank, ref.window.index, ref.base, ref.base)
    return (ref.rank, ref.window.index, ref.base + int(idx.min()) * isz,
            ref.base + (int(idx.max()) + 1) * isz)


def _window_names(kernel: Any, n: int) -> list[str]:
    try:
        names = list(inspect.signature(kernel).parameters)
    except (TypeError, ValueError):
        names = []
    return names + [f"arg{k}" for k in range(len(names), n)]


def _tracker(b: Ranks) -> Callable[[Any], None]:
    def obs(rec: Any) -> None:
        b.last = rec
        b.active_at = time.monotonic()
    return obs


def run_rank(b: Ranks, body: Callable[[Machine], None], target: TargetLike,
             settings: dict[str, Any]) -> None:
    """Run ``body(machine)`` as rank ``b.rank`` on a fresh machine (lazy GM loads off: another
    rank may write this rank's GM at any time)."""
    m = Machine(target, **settings)
    m.observers.append(_tracker(b))
    observe.attach(m, b)  # (a sanitizer attaches its per-rank checkers: sanitizer/ranks.py)
    push(m)
    _ctx.ranks = b
    try:
        with np.errstate(all="ignore"):
            body(m)
        b.flush()
    finally:
        _ctx.ranks = None
        pop(m)


def blocks_body(kernel: Callable[..., Any], args: Sequence[Any],
                blocks: int) -> Callable[[Machine], None]:
    def body(m: Machine) -> None:
        for blk in range(blocks):
            m.reset_for_launch()
            m.block_idx, m.block_num = blk, blocks
            kernel(*args)
    return body


def launch_ranks(kernel: Callable[..., Any], *args: Any, ranks: Any, blocks: int = 1,
                 target: TargetLike = DEFAULT_TARGET, timeout: float | None = None,
                 **settings: Any) -> None:
    """Run ``kernel`` on every rank of ``ranks`` (``pto.launch(kernel, ..., ranks=...)``).

    ``ranks=N`` (an int): N ranks as threads of this process; an array argument is a list of
    N arrays (rank r binds the r-th), other arguments are passed to every rank as they are.
    ``ranks=comm`` (an mpi4py communicator, or ``"mpi"`` for COMM_WORLD): this process is one
    rank of an MPI job and ``args`` are its own arguments (run every rank with the same call,
    e.g. under ``mpiexec -n 4``). Blocks run one after another on each rank."""
    if isinstance(blocks, bool) or not isinstance(blocks, int) or blocks < 1:
        raise PtoError(f"blocks must be a positive integer, got {blocks!r}")

    def bind(r: int, n: int) -> tuple[Callable[[Machine], None], list[np.ndarray], list[str]]:
        mine = []
        in_process = isinstance(ranks, int)
        for k, a in enumerate(args):
            if in_process and isinstance(a, (list, tuple)) and len(a) == n:
                a = a[r]
            elif in_process and isinstance(a, np.ndarray) and n > 1:
                raise PtoError(f"argument {k} of an in-process launch of {n} ranks is one "
                               f"array; pass a list of {n} arrays, one per rank")
            mine.append(a)
        arrays = [a for a in mine if isinstance(a, np.ndarray)]
        names = _window_names(kernel, len(mine))
        wnames = [nm for nm, a in zip(names, mine, strict=False) if isinstance(a, np.ndarray)]
        return blocks_body(kernel, mine, blocks), arrays, wnames

    run_on_ranks(bind, ranks=ranks, target=target, timeout=timeout, settings=settings)


Binder = Callable[[int, int], tuple[Callable[[Machine], None], list[np.ndarray], list[str]]]


def run_on_ranks(bind: Binder, *, ranks: Any, target: TargetLike = DEFAULT_TARGET,
                 timeout: float | None = None, settings: dict[str, Any] | None = None) -> None:
    """The launcher both front ends share: ``bind(rank, size)`` -> (body, window arrays, window
    names) of that rank; the body runs on the rank's machine, then ``body.after()`` (when the
    body has one) once every rank is done."""
    settings = dict(settings or {})
    if isinstance(ranks, bool):
        raise PtoError(f"ranks must be a number of ranks or an MPI communicator, got {ranks!r}")
    if isinstance(ranks, int):
        if ranks < 1:
            raise PtoError(f"ranks must be positive, got {ranks}")
        _run_threads(bind, ranks, target, timeout, settings)
        return
    if not _MPI_LAUNCHER:  # (only while the package itself is being imported)
        raise PtoError("ranks=comm needs the MPI launcher: import ptoisa.concurrent.ranks_mpi")
    _MPI_LAUNCHER[0](bind, ranks, target, timeout, settings)


#: the launcher of ``ranks=comm`` / ``ranks="mpi"``:
#: :func:`ptoisa.concurrent.ranks_mpi.run_mpi`, which registers itself here when imported
#: (``ptoisa.concurrent.comm`` imports it, so it is there once the package is): ranks_mpi
#: builds on this module, which therefore does not import it
_MPI_LAUNCHER: list[Callable[[Binder, Any, str, float | None, dict[str, Any]], None]] = []


def register_mpi_launcher(run: Callable[[Binder, Any, str, float | None, dict[str, Any]], None]
                          ) -> None:
    """Set the launcher :func:`run_on_ranks` calls for an MPI communicator."""
    _MPI_LAUNCHER[:] = [run]


def check_window_array(a: np.ndarray, name: str, rank: int) -> None:
    """A window is flat memory other ranks may write: C-contiguous and writable."""
    if not a.flags.c_contiguous:
        raise PtoError(f"rank {rank}'s window {name!r} must be a C-contiguous array "
                       "(np.ascontiguousarray(a) copies one)")
    if not a.flags.writeable:
        raise PtoError(f"rank {rank}'s window {name!r} is a read-only array: pass a writable "
                       "one (np.array(a) copies one)")


def _windows_for(arrays: list[np.ndarray], names: list[str], sizes: list[tuple[int, ...]],
                 rank: int) -> list[Window]:
    out = []
    for k, a in enumerate(arrays):
        check_window_array(a, names[k], rank)
        out.append(Window(k, names[k], a, sizes[k]))
    return out


def check_symmetric(counts: list[int], names: list[str]) -> None:
    """Every rank must pass the same number of arrays (window k is argument k everywhere)."""
    if len(set(counts)) > 1:
        r = next(i for i, c in enumerate(counts) if c != counts[0])
        raise PtoError(f"rank {r} passes {counts[r]} array arguments, rank 0 passes "
                       f"{counts[0]}: the windows of a multi-rank launch are symmetric "
                       f"({', '.join(names)})")


@dataclass
class _Outcome:
    errors: dict[int, BaseException] = field(default_factory=dict)


def _run_threads(bind: Binder, n: int, target: TargetLike, timeout: float | None,
                 settings: dict[str, Any]) -> None:
    world = _World(n)
    bound = [bind(r, n) for r in range(n)]
    check_symmetric([len(b[1]) for b in bound], bound[0][2])
    nw = len(bound[0][1])
    for k in range(nw):
        for r in range(1, n):
            for q in range(r):
                if np.may_share_memory(bound[r][1][k], bound[q][1][k]):
                    raise PtoError(f"ranks {q} and {r} pass the same memory as window "
                                   f"{bound[0][2][k]!r}: every rank needs its own array")
    sizes = [tuple(bound[r][1][k].nbytes for r in range(n)) for k in range(nw)]
    world.arrays = [[bound[r][1][k].reshape(-1).view(np.uint8) for r in range(n)]
                    for k in range(nw)]
    backends = []
    for r in range(n):
        b = LocalRanks(world, r, timeout)
        b.windows = _windows_for(bound[r][1], bound[r][2], sizes, r)
        backends.append(b)
    out = _Outcome()

    def main(r: int) -> None:
        b = backends[r]
        try:
            run_rank(b, bound[r][0], target, settings)
        except _Aborted:
            pass
        except BaseException as e:  # noqa: BLE001 - reported for the rank, then re-raised
            out.errors[r] = e
            with world.cond:
                if world.failure is None:
                    world.failure = (r, e)
                world.cond.notify_all()
        finally:
            with world.cond:
                world.done.add(r)
                world.cond.notify_all()

    threads = [threading.Thread(target=main, args=(r,), name=f"rank{r}", daemon=True)
               for r in range(n)]
    for t in threads:
        t.start()
    _join(threads, backends, world)
    if world.failure is not None:
        r, e = world.failure
        raise failure_error(r, backends[r], e) from e
    for body, _, _ in bound:  # every rank is done: e.g. write the outputs
        after = getattr(body, "after", None)
        if after is not None:
            after()


def _join(threads: list[threading.Thread], backends: list[LocalRanks], world: _World) -> None:
    """Wait for the rank threads. A rank that shows no progress (no instruction, no poll of a
    wait) for the launch's timeout while every other rank is done, or after one failed, is
    stuck in its own Python code (a sleep, a loop, a lock): the launch ends with a RankTimeout
    naming it and its line instead of waiting for ever (a thread cannot be stopped: it is
    left running, as a daemon)."""
    while True:
        alive = [r for r, t in enumerate(threads) if t.is_alive()]
        if not alive:
            return
        threads[alive[0]].join(0.1)
        now = time.monotonic()
        with world.cond:
            holding = world.failure is not None or len(alive) == 1
            stuck = [r for r in alive if threads[r].is_alive() and r not in world.waiting
                     and now - backends[r].active_at > backends[r].timeout]
        if holding and stuck:
            r = stuck[0]
            b = backends[r]
            line = _thread_line(threads[r])
            after = (f"and rank {world.failure[0]} failed" if world.failure is not None
                     else "and every other rank has finished")
            last = (f"last instruction {b.where().removeprefix('at ')}" if b.last is not None
                    else "none run yet")
            msg = (f"rank {r} is stuck in its Python code{' at ' + line if line else ''}: no "
                   f"instruction for {b.timeout:g} s ({last}) {after}; the launch gives up on "
                   "it (PTOISA_RANK_TIMEOUT or timeout= sets how long)")
            if world.failure is not None:
                fr, fe = world.failure
                first = failure_error(fr, backends[fr], fe)
                raise type(first)(f"{first.message}; {msg}") from fe
            raise RankTimeout(msg)


def _thread_line(t: threading.Thread) -> str | None:
    """file:line where thread ``t`` runs now in the user's own code (innermost such frame)."""
    import sys

    frame = sys._current_frames().get(t.ident or -1)
    libs = _library_dirs()
    while frame is not None:
        f = frame.f_code.co_filename
        if os.path.isfile(f) and not os.path.abspath(f).startswith(libs):
            return f"{f}:{frame.f_lineno}"
        frame = frame.f_back
    return None


_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # the ptoisa package


def _library_dirs() -> tuple[str, ...]:
    import sysconfig

    paths = sysconfig.get_paths()
    return tuple(os.path.abspath(paths[k]) for k in ("stdlib", "purelib", "platlib")
                 if k in paths) + (_PACKAGE_DIR,)


def _user_line(e: BaseException) -> str | None:
    """file:line of the innermost frame of ``e``'s traceback in the user's own code (not
    ptoisa, the standard library or installed packages)."""
    tb, found, libs = e.__traceback__, None, _library_dirs()
    while tb is not None:
        f = tb.tb_frame.f_code.co_filename
        if os.path.isfile(f) and not os.path.abspath(f).startswith(libs):
            found = f"{f}:{tb.tb_lineno}"
        tb = tb.tb_next
    return found


def failure_error(r: int, b: Ranks, e: BaseException) -> RankError:
    """The error that ends a launch when rank ``r`` failed with ``e``: it names the rank, the
    instruction it ran last (with its location) and, when the failure came from the rank's
    own Python code after that, the line."""
    if isinstance(e, RankError):
        return e
    where = b.where()
    by_instr = isinstance(e, PtoError) and b.last is not None and \
        e.op == b.last.ins.mnemonic  # located by the instruction already
    line = None if by_instr else _user_line(e)
    last_loc = getattr(b.last, "loc", None)
    if isinstance(last_loc, tuple) and len(last_loc) == 2:
        last_loc = f"{last_loc[0]}:{last_loc[1]}"
    if line is not None and line != str(last_loc):
        where = f"at {line}" + (f", after {where.removeprefix('at ')}" if b.last else
                                ", before its first instruction")
    if isinstance(e, SystemExit):
        return RankError(f"rank {r} exited (code {e.code}) {where}")
    what = str(e) if isinstance(e, PtoError) else f"{type(e).__name__}: {e}"
    return RankError(f"rank {r} failed {where}: {what}")

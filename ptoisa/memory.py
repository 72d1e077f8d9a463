"""The machine: one target's on-chip buffers, placement (TASSIGN / auto), and run settings.

``pto.target("a5")`` makes a :class:`Machine` current (as a plain call, or scoped in a
``with`` block). Tiles placed with TASSIGN view the bytes of the buffer of their role, so
overlapping placements share bytes. In ``auto`` mode (the default) an unplaced tile gets
private storage on first use; in ``manual`` mode that is an error naming the tile.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TextIO

import numpy as np

from .errors import PtoError, PtoMemoryError
from .targets import LOC_SPACE, Target, get_target
from .tile import ALIGN

if TYPE_CHECKING:
    from .tile import Tile

DEFAULT_PRINT_BUFFER = 16 * 1024


class Machine:
    """One core of a target: buffers + settings. Use :func:`target` to make one current."""

    def __init__(
        self,
        target: str | Target = "cpu",
        *,
        mode: str = "auto",
        stdout: TextIO | None = None,
        print_buffer: int = DEFAULT_PRINT_BUFFER,
        block_idx: int = 0,
        block_num: int = 1,
        lanes: int = 1,
    ) -> None:
        self.target = target if isinstance(target, Target) else get_target(target)
        if mode not in ("auto", "manual"):
            raise PtoError(f"mode must be 'auto' or 'manual', got {mode!r}")
        self.mode = mode
        self.stdout = stdout
        if print_buffer <= 0:
            raise PtoError(f"print_buffer must be positive, got {print_buffer}")
        self.print_buffer = print_buffer
        self.print_used = 0
        self.block_idx: Any = block_idx
        self.block_num = block_num
        #: blocks run in lockstep: every buffer and tile gets a leading dimension of this size
        self.lanes = lanes
        #: GM stores so far (a lockstep launch may only fall back per block before the first)
        self.gm_writes = 0
        #: TLOAD may let tiles read GM in place (copy-on-write); on for launches and .pto runs
        self.lazy_loads = False
        #: numpy floating-point warnings are already off (inside a launch or a .pto run):
        #: instructions may skip their own np.errstate
        self.quiet = False
        #: called with an InstrRecord before every instruction runs (sanitizer, cycle model,
        #: trace): see ptoisa.isa.registry.Instr.run
        self.observers: list[Callable[[Any], None]] = []
        #: the InstrRecord of the latest observed instruction (its Event points to it)
        self.last_record: Any = None
        self._lazy: list[Tile] = []
        self._arena: list[np.ndarray] = []
        self._arena_cur: np.ndarray | None = None
        self._arena_pos = 0
        self._arena_next = 0
        self._regions: dict[str, np.ndarray] = {}
        self._prev: list[Machine] = []

    # ---- buffers ---------------------------------------------------------------------------
    def region(self, space: str) -> np.ndarray:
        reg = self._regions.get(space)
        if reg is None:
            size = self.target.buffer_size(space)
            if size <= 0:
                raise PtoMemoryError(f"target {self.target.name} has no {space} buffer")
            shape = (self.lanes, size) if self.lanes > 1 else (size,)
            reg = self._regions[space] = np.zeros(shape, np.uint8)
        return reg

    def space_of(self, tile: Tile) -> str:
        space = LOC_SPACE[tile.loc]
        # The CPU simulator keeps Bias/Scaling tiles in UB (NPUMemoryModel::GetPointer).
        if self.target.buffer_size(space) <= 0 and space in ("BIAS", "FB"):
            return "UB"
        return space

    def assign(self, tile: Tile, addr: int) -> None:
        """TASSIGN: place ``tile`` at byte address ``addr`` of its role's buffer."""
        if isinstance(addr, bool) or not isinstance(addr, (int, np.integer)):
            raise PtoMemoryError(f"address must be an integer, got {addr!r}", op="tassign")
        addr = int(addr)
        space = self.space_of(tile)
        cap = self.target.buffer_size(space)
        what = tile._label()
        if cap <= 0:
            raise PtoMemoryError(
                f"{what}: target {self.target.name} has no {space} buffer for "
                f"{tile.loc.name} tiles", op="tassign")
        if addr < 0 or addr % ALIGN:
            raise PtoMemoryError(
                f"{what}: address {addr:#x} is not {ALIGN}-byte aligned", op="tassign")
        end = addr + tile.spec.nbytes
        if end > cap:
            raise PtoMemoryError(
                f"{what}: [{addr:#x}, {end:#x}) exceeds the {space} buffer of "
                f"{self.target.name} ({cap} bytes = {cap // 1024} KiB)", op="tassign")
        if tile._lazy is not None:
            tile._materialize()  # the loaded data stays at the old address
        raw = self.region(space)[..., addr:end]
        tile._buf = raw.view(tile.dtype.np)
        tile._machine = self
        tile.addr = addr

    def auto_storage(self, tile: Tile) -> np.ndarray:
        if self.mode == "manual":
            space = self.space_of(tile)
            raise PtoMemoryError(
                f"{tile._label()} has no storage: TASSIGN it to an address in "
                f"{space} (0..{self.target.buffer_size(space)} bytes) first, or use auto mode"
            )
        buf = self._arena_alloc(tile.spec.numel, tile.dtype.np)
        tile._buf = buf
        tile._machine = self
        return buf

    # ---- auto-mode storage: a bump arena, reused by every launch of a cached machine --------
    _ARENA_CHUNK = 1 << 19  # bytes per lane

    def _arena_alloc(self, n: int, npdt: np.dtype) -> np.ndarray:
        """``n`` elements per lane, contiguous for all lanes together ((lanes, n) C-order)."""
        lanes = self.lanes
        shape = (lanes, n) if lanes > 1 else (n,)
        nbytes = lanes * (-(-n * npdt.itemsize // 32) * 32)
        chunk = self._ARENA_CHUNK * lanes
        if nbytes > chunk // 4:
            return np.zeros(shape, npdt)
        if self._arena_cur is None or self._arena_pos + nbytes > chunk:
            if self._arena_next < len(self._arena):
                self._arena_cur = self._arena[self._arena_next]
            else:
                self._arena_cur = np.zeros(chunk, np.uint8)
                self._arena.append(self._arena_cur)
            self._arena_next += 1
            self._arena_pos = 0
        raw = self._arena_cur[self._arena_pos:self._arena_pos + nbytes]
        self._arena_pos += nbytes
        return raw.view(npdt)[: lanes * n].reshape(shape) if lanes > 1 \
            else raw.view(npdt)[:n]

    def reset_for_launch(self) -> None:
        """Start a new kernel launch on this (cached) machine: auto storage is handed out
        again from the start of the arena, and leftover lazy loads are dropped."""
        self._arena_next = 0
        self._arena_pos = 0
        self._arena_cur = None
        self._lazy.clear()
        self.gm_writes = 0
        self.print_used = 0

    # ---- lazy loads: a tile that reads GM in place until either side is written ------------
    #: below this many elements (all blocks together) a copy is cheaper than the bookkeeping
    LAZY_MIN_ELEMENTS = 1 << 14

    def lazy_ok(self, tile: Tile) -> bool:
        """May ``tile`` be loaded copy-on-write / get a deferred result here?"""
        return self.lazy_loads and tile.spec.numel * self.lanes >= self.LAZY_MIN_ELEMENTS

    def add_lazy(self, tile: Tile) -> None:
        if tile not in self._lazy:
            self._lazy.append(tile)

    def gm_barrier(self, flat: np.ndarray) -> None:
        """Before GM bytes of ``flat`` are written: tiles still reading them in place take
        their copy now (the load happened before the store)."""
        if not self._lazy:
            return
        for t in list(self._lazy):
            if _depends(t, flat):
                t._materialize()
        self._lazy = [t for t in self._lazy if t._lazy is not None or t._pending is not None]

    def storage_barrier(self, tile: Tile) -> None:
        """Before ``tile``'s bytes are read or written: lazily loaded tiles that share those
        bytes (TASSIGN aliasing) take their copy first."""
        buf = tile._buf
        if buf is None:
            return
        for t in list(self._lazy):
            if t is tile:
                continue
            if (t._lazy is not None and t._buf is not None
                    and np.may_share_memory(t._buf, buf)) or _depends(t, buf):
                t._materialize()
        self._lazy = [t for t in self._lazy if t._lazy is not None or t._pending is not None]

    def alias(self, tile: Tile, base: Tile, byte_offset: int = 0, op: str | None = None) -> None:
        """Make ``tile`` view the bytes of ``base`` from ``byte_offset`` on (TRESHAPE, TSUBVIEW,
        TGET_SCALE_ADDR): a placed base lends bytes of its buffer (a view may run past the base
        tile, as on hardware); an auto-mode base lends its private storage, which must hold the
        whole view."""
        nbytes = tile.spec.nbytes
        if base.addr is not None and base._machine is not None:
            space = base._machine.space_of(base)
            region = base._machine.region(space)
            start = base.addr + byte_offset
            if start < 0 or start + nbytes > region.size:
                raise PtoMemoryError(
                    f"{tile._label()}: a view of {nbytes} bytes at {start:#x} exceeds the {space} "
                    f"buffer ({region.size} bytes)", op=op)
            raw = region[start:start + nbytes]
            tile.addr = start
            tile._machine = base._machine
        else:
            src = base.storage.view(np.uint8)
            if byte_offset < 0 or byte_offset + nbytes > src.size:
                raise PtoMemoryError(
                    f"{tile._label()}: a view of {nbytes} bytes at byte {byte_offset} does not fit "
                    f"in {base._label()} ({src.size} bytes)", op=op)
            raw = src[byte_offset:byte_offset + nbytes]
            tile.addr = None
            tile._machine = self
        tile._buf = raw.view(tile.dtype.np)

    # ---- printing --------------------------------------------------------------------------
    @property
    def out(self) -> TextIO:
        return self.stdout if self.stdout is not None else sys.stdout

    def reset_print_buffer(self) -> None:
        self.print_used = 0

    # ---- context ---------------------------------------------------------------------------
    def __enter__(self) -> Machine:
        return self

    def __exit__(self, *exc: Any) -> None:
        pop(self)

    def __repr__(self) -> str:
        return f"<Machine target={self.target.name} mode={self.mode}>"


_stack: list[Machine] = []


def current() -> Machine:
    """The machine instructions run on (a cpu machine in auto mode unless set)."""
    if not _stack:
        _stack.append(Machine("cpu"))
    return _stack[-1]


def target(name: str | Target = "cpu", **settings: Any) -> Machine:
    """Make a fresh machine of target ``name`` current and return it.

    As a plain call it switches the current target; as ``with pto.target("a5"):`` the previous
    machine comes back at the end of the block. ``settings``: mode ("auto"|"manual"), stdout,
    print_buffer (bytes, the NPU's -DCCEBlockMaxSize, default 16 KiB).
    """
    m = Machine(name, **settings)
    _stack.append(m)
    return m


def _depends(t: Tile, mem: np.ndarray) -> bool:
    """Does lazily loaded or deferred tile ``t`` read bytes of ``mem``?"""
    lz = t._lazy
    if lz is not None:
        return bool(np.may_share_memory(lz if isinstance(lz, np.ndarray) else lz.base, mem))
    if t._pending is not None:
        return any(np.may_share_memory(a, mem) for a in t._pending[1]
                   if isinstance(a, np.ndarray))
    return False


def push(m: Machine) -> Machine:
    """Make an existing machine current (see :func:`target`)."""
    _stack.append(m)
    return m


def pop(m: Machine) -> None:
    if m in _stack:
        # drop m and anything pushed after it inside its scope
        del _stack[_stack.index(m):]

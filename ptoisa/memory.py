"""The machine: one target's on-chip buffers, placement (TASSIGN / auto), and run settings.

``pto.target("a5")`` makes a :class:`Machine` current (as a plain call, or scoped in a
``with`` block). Tiles placed with TASSIGN view the bytes of the buffer of their role, so
overlapping placements share bytes. In ``auto`` mode (the default) an unplaced tile gets
private storage on first use; in ``manual`` mode that is an error naming the tile.

Capacity: in auto mode the tiles that are live at one time (placed and still referenced from
Python) must fit in their buffer together, as the NPU compiler's memory planning requires; the
placement that would overflow raises :class:`PtoMemoryError` naming the buffer, its size, the
total and the live tiles. ``.pto`` programs get the same check statically, over the program
(:mod:`ptoisa.interp.capacity`).

Defined start state: fresh tile storage (auto mode) and the bytes of a buffer that a launch
places its first tile on (TASSIGN) hold the poison pattern :data:`POISON_BYTE` (every byte
0xFF: floats read as NaN, signed integers as -1, unsigned ones as their maximum), never what an
earlier launch left there; a kernel that reads a tile it never wrote gets these bytes.
"""

from __future__ import annotations

import contextlib
import sys
import threading
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TextIO

import numpy as np

from . import lazy, progress
from .errors import PtoError, PtoMemoryError
from .hostmem import ARENA_CHUNK, check_host_memory
from .targets import DEFAULT_TARGET, LOC_SPACE, Target, TargetLike, get_target

if TYPE_CHECKING:
    from .tile import Tile

#: byte alignment of tile addresses and rows (the NPU's 32-byte blocks)
ALIGN = 32

DEFAULT_PRINT_BUFFER = 16 * 1024

#: Every byte of on-chip storage a launch has not written yet (see the module doc): 0xFF makes
#: every float type NaN (f32 0xFFFFFFFF, f16 0xFFFF, bf16, the f8 types), every signed integer -1
#: and every unsigned integer its maximum (as ``torch.use_deterministic_algorithms`` fills
#: uninitialised memory: NaN for floats, the maximum for integers).
POISON_BYTE = 0xFF

#: how TMATMUL / TGEMV form a float accumulation, a machine's ``matmul_accumulation`` (see
#: :func:`ptoisa.set_matmul_accumulation`)
MATMUL_ACCUMULATIONS = ("f32", "exact", "sequential")


def is_poison(values: np.ndarray) -> np.ndarray:
    """Which elements of ``values`` (a tile's contents, e.g. ``tile.numpy()``) still hold the
    poison pattern, i.e. were never written in this launch (not for the packed 4-bit types,
    whose ``numpy()`` gives codes)."""
    a = np.ascontiguousarray(values)
    raw = a.view(np.uint8).reshape(*a.shape, a.dtype.itemsize)
    return np.asarray((raw == POISON_BYTE).all(axis=-1))


def tile_space(loc: Any, target: Target) -> str:
    """The buffer of ``target`` that tiles of location ``loc`` are placed in."""
    space = LOC_SPACE[loc]
    # The CPU simulator keeps Bias/Scaling tiles in UB (NPUMemoryModel::GetPointer).
    if target.buffer_size(space) <= 0 and space in ("BIAS", "FB"):
        return "UB"
    return space


def address_fault(what: str, addr: int, nbytes: int, space: str, target: Target,
                  loc_name: str) -> str | None:
    """Why a tile of ``nbytes`` cannot be placed at byte ``addr`` of ``target``'s ``space``
    buffer (TASSIGN's checks), or None. Shared by the placement at run time and by the static
    check of a constant ``alloc_tile addr`` (``ptoisa check``)."""
    cap = target.buffer_size(space)
    if cap <= 0:
        return f"{what}: target {target.name} has no {space} buffer for {loc_name} tiles"
    # the most basic fault first: a negative or out-of-buffer address is not an alignment
    # problem, whatever its low bits are
    if addr < 0:
        return (f"{what}: address {addr} is negative (a byte offset into the {space} buffer, "
                f"0..{cap - 1})")
    if addr >= cap:
        return (f"{what}: address {addr:#x} is beyond the {space} buffer of {target.name} "
                f"({cap} bytes = {cap // 1024} KiB)")
    if addr % ALIGN:
        return f"{what}: address {addr:#x} is not {ALIGN}-byte aligned"
    end = addr + nbytes
    if end > cap:
        return (f"{what}: [{addr:#x}, {end:#x}) exceeds the {space} buffer of {target.name} "
                f"({cap} bytes = {cap // 1024} KiB)")
    return None


#: (entered by a launch already: see Machine.errstate)
_WARNINGS_OFF = contextlib.nullcontext()


class Machine:
    """One core of a target: buffers + settings. Use :func:`target` to make one current."""

    def __init__(
        self,
        target: TargetLike = DEFAULT_TARGET,
        *,
        mode: str = "auto",
        stdout: TextIO | None = None,
        print_buffer: int = DEFAULT_PRINT_BUFFER,
        block_idx: int = 0,
        block_num: int = 1,
        lanes: int = 1,
        permissive: bool = False,
        matmul_accumulation: str | None = None,
    ) -> None:
        self.target = target if isinstance(target, Target) else get_target(target)
        if not isinstance(permissive, bool):
            raise PtoError(f"permissive must be True or False, got {permissive!r}")
        #: skip the documented run-time checks the upstream CPU simulator does not make
        #: (``registry.sim_unchecked`` rules; docs/cpu_sim_differences.md lists them)
        self.permissive = permissive
        if matmul_accumulation is None:  # as the machine current in this thread (if any)
            st = _tls.items
            matmul_accumulation = st[-1].matmul_accumulation if st else "f32"
        elif matmul_accumulation not in MATMUL_ACCUMULATIONS:
            raise PtoError(f"matmul_accumulation must be one of "
                           f"{', '.join(MATMUL_ACCUMULATIONS)}, got {matmul_accumulation!r}")
        #: how TMATMUL / TGEMV form a float accumulation: "f32" (the cube's, as f32 BLAS),
        #: "exact" (f64, one rounding per instruction) or "sequential" (the CPU simulator's
        #: k-loop); see ptoisa.set_matmul_accumulation
        self.matmul_accumulation: str = matmul_accumulation
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
        #: compute the instructions' values (False: a timing-only cycle run, set while an
        #: observer with ``values = False`` watches: the rules are checked and observers see
        #: every instruction, but data-only semantics do not run; see Instr.timing)
        self.values = True
        #: the InstrRecord of the latest observed instruction (its Event points to it)
        self.last_record: Any = None
        #: what ptoisa.observe.attach attached for the launch running now (detach removes it)
        self.attached: list[Any] = []
        # ---- the core's context (set by the launchers and instructions that use it) -------
        #: the stream (ptoisa.concurrent.streams.Stream) of a core of a mixed launch, else None
        self.stream: Any = None
        #: which core of a mixed launch: ("AIC", block) or ("AIV", block, sub-block); None on
        #: a machine that runs every instruction (one core)
        self.core: tuple[Any, ...] | None = None
        #: the vector core's sub-block in its cluster (0 or 1)
        self.sub_block_id = 0
        #: what the cores of one mixed launch share (ptoisa.concurrent.streams.Cluster), else None
        self.cluster: Any = None
        #: the cluster's pipe FIFOs by (pipe, direction) (TPUSH / TPOP)
        self.fifos: dict[Any, Any] | None = None
        #: peers of a multi-rank launch this rank's comm instructions reach
        self.comm_peers: list[Any] | None = None
        #: img2col FMATRIX registers (SETFMATRIX), per operand side
        self.fmatrix: dict[str, dict[str, Any]] | None = None
        #: FIXPIPE quantisation set by SET_QUANT_* ("scalar" / "vector", words)
        self.fixpipe_quant: tuple[str, Any] | None = None
        #: the flag operations run, in order (set_flag / wait_flag / barriers)
        self.sync_log: list[Any] | None = None
        #: registers micro-ops set and later ones read (DMA loop registers, SPR AR, the MTE3
        #: atomic mode), by name; a launch starts with none set
        self.micro_regs: dict[str, Any] = {}
        #: the bytes the running micro-op touches, while an observer asks for them (the
        #: sanitizer sets a list before a micro-op runs): ``(role, space, base, lo, hi)`` per
        #: range, ``base`` None for the machine's own buffer (``space`` names it), else the
        #: GM argument's bytes (see ptoisa.vector.regs.touch)
        self.touched: list[tuple[str, str, Any, int, int]] | None = None
        #: ``pto.vecscope`` regions entered: the cycle model's vector functions start there
        self.vf_seq = 0
        self._lazy: list[Tile] = []
        #: bumped whenever a tile starts reading lazily or gets storage: a storage barrier
        #: that found nothing to settle need not look again until it changes
        self._lazy_gen = 0
        #: (GM flat view, generation) of the last gm_barrier that settled it
        self._gm_settled: tuple[np.ndarray, int] | None = None
        self._arena: list[np.ndarray] = []
        self._arena_cur: np.ndarray | None = None
        self._arena_pos = 0
        self._arena_next = 0
        self._regions: dict[str, np.ndarray] = {}
        self._prev: list[Machine] = []
        self._init_state()

    def _init_state(self) -> None:
        """Launch-state bookkeeping (capacity and poison; kept apart from the settings)."""
        #: per buffer: bytes [0, n) were poisoned (or written) since the launch began
        self._clean: dict[str, int] = {}
        #: a new object whenever the buffers start over (a launch, a new run on this machine):
        #: what TASSIGN placed since is this launch's (Tile._placed; see assign)
        self._launch = object()
        #: auto-placed tiles still referenced: id -> (weakref, buffer, bytes); bytes per buffer
        self._live: dict[int, tuple[weakref.ref[Tile], str, int]] = {}
        self._live_bytes: dict[str, int] = {}
        #: a ``.pto`` run: its tiles' capacity was checked statically over the program (they
        #: stay referenced by the compiled function, so counting them here would be wrong)
        self.planned = False
        #: no two tiles of this machine share bytes (a batch's lanes machine while its body
        #: runs, ptoisa/plan_loops.py): a tile's storage is owed by no other tile
        self.apart = False
        #: a lanes machine's batch that keeps its tiles' storage across replays, and where
        #: its arena stood after its last run (ptoisa/plan_loops.py; a reset voids it)
        self.kept: object | None = None
        self.kept_arena = (0, 0)
        #: bytes of tile storage poisoned so far (to see what defined start state costs)
        self.poisoned = 0

    # ---- buffers ---------------------------------------------------------------------------
    def region(self, space: str) -> np.ndarray:
        reg = self._regions.get(space)
        if reg is None:
            size = self.target.buffer_size(space)
            if size <= 0:
                raise PtoMemoryError(f"target {self.target.name} has no {space} buffer")
            # (micro-op pointers may address more than tiles hold: Target.pointer_window)
            size = max(size, self.target.pointer_window(space))
            shape = (self.lanes, size) if self.lanes > 1 else (size,)
            # poisoned lazily, up to the highest byte placed so far (_poison_to): a full fill
            # of every block's buffers would cost more than most kernels
            reg = self._regions[space] = np.empty(shape, np.uint8)
            self._clean[space] = 0
        return reg

    def _poison_to(self, space: str, end: int) -> np.ndarray:
        """Make bytes [0, end) of ``space`` defined for this launch: what was not poisoned or
        placed since the launch began gets :data:`POISON_BYTE` (earlier placements of this
        launch keep their bytes: overlapping tiles share them)."""
        reg = self.region(space)
        lo = self._clean.get(space, 0)
        if end > lo:
            reg[..., lo:end].fill(POISON_BYTE)
            self._clean[space] = end
        return reg

    def space_of(self, tile: Tile) -> str:
        return tile_space(tile.loc, self.target)

    def assign(self, tile: Tile, addr: int) -> None:
        """TASSIGN: place ``tile`` at byte address ``addr`` of its role's buffer."""
        if isinstance(addr, bool) or not isinstance(addr, (int, np.integer)):
            raise PtoMemoryError(f"{tile._label()}: address must be an integer byte offset, "
                                 f"got {addr!r} ({type(addr).__name__})", op="tassign")
        addr = int(addr)
        if tile._placed is self._launch and addr == tile.addr and tile._buf is not None:
            # placed there already in this launch (a loop's alloc_tile or TASSIGN runs again):
            # the same bytes, checked when it was placed; what the tile holds lazily stays
            # owed to them (storage_barrier writes it there before anything else reads or
            # writes them)
            return
        space = self.space_of(tile)
        fault = address_fault(tile._label(), addr, tile.spec.nbytes, space, self.target,
                              tile.loc.name)
        if fault is not None:
            raise PtoMemoryError(fault, op="tassign")
        end = addr + tile.spec.nbytes
        lazy.leave_bytes(tile, self)  # (what it holds lazily stays at the old address)
        if self._live:
            self._untrack(tile)  # it leaves auto placement
        raw = self._poison_to(space, end)[..., addr:end]
        tile._buf = raw.view(tile.dtype.np)
        tile._machine = self
        tile.addr = addr
        tile._placed = self._launch
        self._lazy_gen += 1

    def auto_storage(self, tile: Tile, poison: bool = True, slack: int = 0) -> np.ndarray:
        """Private storage for an unplaced ``tile`` (auto mode), filled with the poison
        pattern unless the caller writes all of it at once (``poison=False``). ``slack``
        elements more follow it in the same array, for views of it with its pitch that
        run past its last element (``pto.subview`` of a column window: see :meth:`alias`);
        the tile's storage is its own elements only."""
        if self.mode == "manual":
            space = self.space_of(tile)
            raise PtoMemoryError(
                f"{tile._label()} has no storage: TASSIGN it to an address in "
                f"{space} (0..{self.target.buffer_size(space)} bytes) first, or use auto mode"
            )
        if not self.planned and id(tile) not in self._live:
            self._track(tile)
        slack = slack if self.lanes == 1 else 0  # (a lockstep tile: one row per block)
        buf = self._arena_alloc(tile.spec.numel + slack, tile.dtype.np)
        if slack:
            buf = buf[:tile.spec.numel]
        if poison:  # fresh storage: never an earlier tile's bytes
            buf.view(np.uint8).fill(POISON_BYTE)
            self.poisoned += buf.nbytes
        tile._buf = buf
        tile._machine = self
        self._lazy_gen += 1
        return buf

    # ---- auto-mode capacity: the live tiles of a buffer fit in it together ----------------
    def _track(self, tile: Tile) -> None:
        """Count ``tile`` (being placed automatically) against its buffer until it is freed;
        raise if the live tiles of that buffer no longer fit."""
        space = self.space_of(tile)
        nb = tile.spec.nbytes
        total = self._live_bytes.get(space, 0) + nb
        cap = self.target.buffer_size(space)
        if total > cap:
            raise PtoMemoryError(self._overflow(tile, space, total, cap))
        key = id(tile)
        live = self._live
        sizes = self._live_bytes

        def dead(ref: weakref.ref[Tile], key: int = key) -> None:
            ent = live.get(key)
            if ent is not None and ent[0] is ref:
                del live[key]
                sizes[ent[1]] -= ent[2]

        live[key] = (weakref.ref(tile, dead), space, nb)
        sizes[space] = total

    def _untrack(self, tile: Tile) -> None:
        ent = self._live.pop(id(tile), None)
        if ent is not None:
            self._live_bytes[ent[1]] -= ent[2]

    def _overflow(self, tile: Tile, space: str, total: int, cap: int) -> str:
        others = [(t, nb) for ref, sp, nb in self._live.values()
                  if sp == space and (t := ref()) is not None]
        others.sort(key=lambda x: -x[1])
        names = [f"{tile._label()} {tile.spec.nbytes} B (this one)"]
        names += [f"{t._label()} {nb} B" for t, nb in others[:7]]
        if len(others) > 7:
            names.append(f"... {len(others) - 7} more")
        return (f"{space} overflow on {self.target.name}: the tiles live at this point need "
                f"{total} bytes of {space}, which holds {cap} bytes ({cap // 1024} KiB) "
                f"[{'; '.join(names)}]. Auto placement keeps a tile's storage while Python "
                "references it: drop tiles you no longer need (del), reuse one, or use "
                "smaller tiles")

    def live_bytes(self, space: str) -> int:
        """Bytes of ``space`` held by the automatically placed tiles that are live now."""
        return self._live_bytes.get(space, 0)

    # ---- auto-mode storage: a bump arena, reused by every launch of a cached machine --------
    def _arena_alloc(self, n: int, npdt: np.dtype) -> np.ndarray:
        """``n`` elements per lane, contiguous for all lanes together ((lanes, n) C-order)."""
        lanes = self.lanes
        shape = (lanes, n) if lanes > 1 else (n,)
        nbytes = lanes * (-(-n * npdt.itemsize // 32) * 32)
        chunk = ARENA_CHUNK * lanes  # (bytes per lane)
        if nbytes > chunk // 4:
            check_host_memory(nbytes, f"auto storage of a {n}-element {npdt} tile")
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

    def errstate(self) -> contextlib.AbstractContextManager[Any]:
        """numpy's error state for an instruction's maths, warnings off: nothing to enter
        where they are off already (``quiet``: a launch entered it), else
        ``np.errstate(all="ignore")``."""
        return _WARNINGS_OFF if self.quiet else np.errstate(all="ignore")

    def reset_for_launch(self) -> None:
        """Start a new kernel launch on this (cached) machine: auto storage is handed out
        again from the start of the arena, and leftover lazy loads are dropped."""
        self._arena_next = 0
        self._arena_pos = 0
        self._arena_cur = None
        self.kept = None
        self.reset_registers()
        self.reset_placement()

    def reset_registers(self) -> None:
        """What a launch starts without, but for its storage: no lazy loads owed, no GM
        settled, no writes or prints counted, no registers set. (A batch that keeps its lanes
        machine's tile storage across replays resets only this: ptoisa/plan_loops.py.)"""
        self._lazy.clear()
        self._gm_settled = None
        self.gm_writes = 0
        self.print_used = 0
        # (registers a kernel sets before it uses them start unset: a launch never sees an
        # earlier one's FMATRIX, quantisation words, micro-op registers or flag log)
        self.micro_regs.clear()
        self.fmatrix = None
        self.fixpipe_quant = None
        self.sync_log = None
        self.touched = None

    def reset_placement(self) -> None:
        """A new launch: tiles of earlier launches no longer count against the buffers, and
        the buffers' bytes are poisoned again as tiles are placed on them."""
        self.repoison()
        self._live.clear()
        self._live_bytes.clear()

    def repoison(self) -> None:
        """The buffers' bytes are poisoned again as tiles are placed on them (a new run on a
        machine that keeps its tiles)."""
        self._clean = dict.fromkeys(self._clean, 0)
        self._launch = object()

    # ---- copy-on-write and deferred values: ptoisa.lazy, over this machine's list -----------
    #: below this many elements (all blocks together) a copy is cheaper than the bookkeeping
    LAZY_MIN_ELEMENTS = 1 << 14

    def lazy_ok(self, tile: Tile) -> bool:
        """May ``tile`` be loaded copy-on-write / get a deferred result here?"""
        return lazy.ok(self, tile)

    def gm_barrier(self, flat: np.ndarray) -> None:
        """Before GM bytes of ``flat`` are written (see :func:`ptoisa.lazy.gm_barrier`)."""
        lazy.gm_barrier(self, flat)

    def storage_barrier(self, tile: Tile) -> None:
        """Before ``tile``'s bytes are read or written (see
        :func:`ptoisa.lazy.storage_barrier`)."""
        lazy.storage_barrier(self, tile)

    def alias(self, tile: Tile, base: Tile, byte_offset: int = 0, op: str | None = None,
              reach: int | None = None) -> None:
        """Make ``tile`` view the bytes of ``base`` from ``byte_offset`` on (TRESHAPE, TSUBVIEW,
        TGET_SCALE_ADDR): a placed base lends bytes of its buffer (a view may run past the base
        tile, as on hardware); an auto-mode base lends its private storage, which must hold the
        whole view, or, given ``reach`` (the bytes from ``byte_offset`` on the view's valid
        region spans), at least that much: the rest of the view then lies in the array the
        base's storage is part of (its ``slack``, see :meth:`auto_storage`), bytes the view's
        instructions, which keep to its valid region, never touch."""
        nbytes = tile.spec.nbytes
        lazy.leave_bytes(tile, self)  # (what it holds lazily stays where it was)
        if self.lanes > 1 and any(t._buf is not None and t._buf.ndim == 1 for t in (tile, base)):
            # one block's part of a lockstep tile (the instruction runs block by block: its
            # offset differs between blocks): a view of it would not be the tile's
            from .errors import BlockDivergence

            raise BlockDivergence(f"{op or 'a view'}: the view's offset differs between blocks")
        if base.addr is not None and base._machine is not None:
            space = base._machine.space_of(base)
            region = base._machine.region(space)
            start = base.addr + byte_offset
            if start < 0 or start + nbytes > region.shape[-1]:
                raise PtoMemoryError(
                    f"{tile._label()}: a view of {nbytes} bytes at {start:#x} exceeds the {space} "
                    f"buffer ({region.shape[-1]} bytes)", op=op)
            raw = base._machine._poison_to(space, start + nbytes)[..., start:start + nbytes]
            tile.addr = start
            tile._machine = base._machine
        else:
            src = base.storage.view(np.uint8)  # (lanes, bytes) in a lockstep launch
            if reach is not None and src.ndim == 1 and 0 <= byte_offset \
                    and byte_offset + nbytes > src.shape[0] >= byte_offset + reach:
                src = _continued(src, byte_offset + nbytes)
            if byte_offset < 0 or byte_offset + nbytes > src.shape[-1]:
                raise PtoMemoryError(
                    f"{tile._label()}: a view of {nbytes} bytes at byte {byte_offset} does not fit "
                    f"in {base._label()} ({src.shape[-1]} bytes)", op=op)
            raw = src[..., byte_offset:byte_offset + nbytes]
            tile.addr = None
            tile._machine = self
        tile._buf = raw.view(tile.dtype.np)
        tile._placed = None  # (a view of another tile's bytes: a TASSIGN places it anew)
        self._lazy_gen += 1
        if base._machine is not None and base._machine is not self:
            base._machine._lazy_gen += 1

    # ---- printing --------------------------------------------------------------------------
    @property
    def out(self) -> TextIO:
        out = self.stdout if self.stdout is not None else sys.stdout
        if progress._active:  # a progress line on the terminal: erased before TPRINT writes
            progress.before_output(out)
        return out

    def reset_print_buffer(self) -> None:
        self.print_used = 0

    # ---- context ---------------------------------------------------------------------------
    def __enter__(self) -> Machine:
        return self

    def __exit__(self, *exc: Any) -> None:
        pop(self)

    def __repr__(self) -> str:
        extra = " permissive" if self.permissive else ""
        return f"<Machine target={self.target.name} mode={self.mode}{extra}>"


class _Stack(threading.local):
    """The current-machine stack, one per thread: each core (stream) of a mixed launch runs in
    its own thread with its own machine (see :mod:`ptoisa.concurrent.streams`)."""

    def __init__(self) -> None:
        self.items: list[Machine] = []


_tls = _Stack()


def current() -> Machine:
    """The machine instructions run on (a machine of the default target, ``DEFAULT_TARGET``,
    in auto mode unless set)."""
    st = _tls.items
    if not st:
        st.append(Machine(DEFAULT_TARGET))
    return st[-1]


def target(name: str | Target = DEFAULT_TARGET, *, backend: str | None = None,
           **settings: Any) -> Machine:
    """Make a fresh machine of target ``name`` current and return it.

    As a plain call it switches the current target; as ``with pto.target("a5"):`` the previous
    machine comes back at the end of the block. ``settings``: mode ("auto"|"manual"), stdout,
    print_buffer (bytes, the NPU's -DCCEBlockMaxSize, default 16 KiB), permissive (True: skip
    the documented run-time checks the upstream CPU simulator does not make, to reproduce its
    results; every target checks them by default), matmul_accumulation ("f32" | "exact" |
    "sequential", see :func:`ptoisa.set_matmul_accumulation`; by default the current
    machine's). ``backend``: behave as a program PTOAS builds with ``--pto-backend=backend``
    does (``"vpto"`` on a5: PTOAS's TileLib where it differs from pto-isa; see
    :meth:`ptoisa.targets.Target.with_backend`).

    The fresh machine's buffers hold the poison pattern (:data:`POISON_BYTE`) wherever a tile
    is placed before it is written, and auto-placed tiles that are live together must fit in
    their buffer (see the module doc).
    """
    m = Machine(name if backend is None else get_target(name, backend), **settings)
    _tls.items.append(m)
    return m


def push(m: Machine) -> Machine:
    """Make an existing machine current (see :func:`target`)."""
    _tls.items.append(m)
    return m


def pop(m: Machine) -> None:
    st = _tls.items
    if m in st:
        # drop m and anything pushed after it inside its scope
        del st[st.index(m):]


def __getattr__(name: str) -> Any:
    if name == "_stack":  # the calling thread's machine stack (older code names it so)
        return _tls.items
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _continued(src: np.ndarray, nbytes: int) -> np.ndarray:
    """``src`` (1-D bytes) extended to ``nbytes`` over the array it is a view of, when that
    array continues it that far; else ``src`` itself."""
    root = src.base
    while isinstance(root, np.ndarray) and root.base is not None:
        root = root.base
    if not isinstance(root, np.ndarray) or root.ndim != 1 or not root.flags.c_contiguous:
        return src
    raw = root.view(np.uint8)
    start = src.__array_interface__["data"][0] - raw.__array_interface__["data"][0]
    if start < 0 or start + nbytes > raw.shape[0]:
        return src
    return raw[start:start + nbytes]

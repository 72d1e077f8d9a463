"""Copy-on-write tiles and deferred values: what a tile owes its bytes, and the barriers that
settle it before anything else reads or writes them.

In a launch (``Machine.lazy_loads``) an instruction may leave its result where it already is
instead of copying it into the destination's storage: TLOAD lets the tile read the GM window
in place, TMOV the source's bytes, TMATMUL keeps the product array; an elementwise result
(TADD, a row-local chain of :mod:`ptoisa.rowfuse`) is kept as the computation itself. Such a
tile *owes* its storage these values. Three fields of :class:`~ptoisa.tile.Tile` hold that
state (``_lazy``: the window, a :class:`~ptoisa.tile.LaneBlocks` or an array of its own;
``_off_chip``: the window is no tile's storage; ``_pending``: ``(fn, args)``, computed by
``fn(*args, out=...)``), and the machine keeps the tiles that owe something
(``Machine._lazy``, with a generation ``_lazy_gen`` bumped whenever a tile starts to owe or
gets storage). Everything that reads or changes that state is here; the Machine, the Tile and
the instructions call into it.

The rules, each a function below: before a tile's bytes are read or written,
:func:`storage_barrier` writes there what other tiles owe bytes overlapping them and gives
tiles reading them in place their own copy; before GM is written, :func:`gm_barrier` gives
the tiles reading it in place theirs. A tile that moves to other bytes writes what it owes
first (:func:`leave_bytes`); a window on the tile's own bytes is copied at once
(:func:`set_lazy`), so a view an instruction has read from a lazy source never changes under
it. docs/architecture.md describes the shortcuts that keep this cheap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from . import parallel, rowfuse

if TYPE_CHECKING:
    from .memory import Machine
    from .tile import LaneBlocks, Tile

#: np.may_share_memory without its dispatch to __array_function__ overrides (operands here
#: are plain ndarrays: tile storage, GM windows)
may_share = getattr(np.may_share_memory, "_implementation", np.may_share_memory)


def may_share_rows(a: np.ndarray, b: np.ndarray) -> bool:
    """:data:`may_share` (their bounds meet), told apart further where both are rows of one
    stride (a lanes machine's placed tiles: each a column range of the buffer's rows, one
    row per lane), whose bounds meet but whose column ranges do not (every row of ``b``
    falls between two rows of ``a``'s bytes)."""
    if not may_share(a, b):
        return False
    if a.ndim == 2 and b.ndim == 2:
        s = a.strides[0]
        if s > 0 and s == b.strides[0] and a.strides[1] == a.itemsize \
                and b.strides[1] == b.itemsize:
            e = (b.__array_interface__["data"][0] - a.__array_interface__["data"][0]) % s
            if a.shape[1] * a.itemsize <= e <= s - b.shape[1] * b.itemsize:
                return False
    return True


# ---- which tiles may owe their values --------------------------------------------------------
def ok(m: Machine, tile: Tile) -> bool:
    """May ``tile`` be loaded copy-on-write / get a deferred result on ``m``? (boxed tiles at
    any size, the others from ``Machine.LAZY_MIN_ELEMENTS`` elements, all blocks together)"""
    return m.lazy_loads and (tile.spec.is_boxed
                             or tile.spec.numel * m.lanes >= m.LAZY_MIN_ELEMENTS)


def worth(m: Machine, tile: Tile) -> bool:
    """Is ``tile`` large enough for its value to join a deferred chain on machine ``m``?"""
    return m.lazy_loads and tile.spec.numel * m.lanes >= rowfuse.MIN_ELEMENTS


def add(m: Machine, tile: Tile) -> None:
    """``tile`` owes its values from now on."""
    m._lazy_gen += 1
    if tile._buf is None and not m.planned and id(tile) not in m._live:
        m._track(tile)  # loaded (or computed) without storage yet: it is on chip all the same
    if tile not in m._lazy:
        m._lazy.append(tile)


# ---- a tile starts owing ---------------------------------------------------------------------
def set_lazy(tile: Tile, window: np.ndarray | LaneBlocks, m: Machine,
             off_chip: bool = False) -> None:
    """TLOAD / TMOV / a product without a copy: until ``tile`` or what ``window`` views is
    written, reads see ``window`` (the whole tile: an earlier deferred result is superseded).
    ``off_chip``: the window is no tile's storage (GM, or an array of its own).

    A window on the tile's own bytes (TMOV between placements that overlap) is copied at
    once: its values would land on the window when written there, and a view of it that an
    instruction already holds (a source read lazily) would change under it."""
    tile._pending = None
    buf = tile._buf
    if not off_chip and buf is not None and isinstance(window, np.ndarray) \
            and may_share(window, buf):
        tile._lazy = window
        materialize(tile, m)
        return
    tile._lazy = window
    tile._off_chip = off_chip
    add(m, tile)


def set_pending(tile: Tile, fn: Any, args: tuple[np.ndarray, ...], m: Machine) -> None:
    """Defer ``fn(*args, out=<whole tile>)``; the inputs are views, so any write to them (or to
    this tile) computes it first (see the barriers)."""
    tile._lazy = None
    tile._pending = (fn, args)
    add(m, tile)


def take_pending(tile: Tile) -> tuple[Any, tuple[np.ndarray, ...]] | None:
    """The tile's deferred result, taken off it (the caller computes it somewhere)."""
    p = tile._pending
    tile._pending = None
    return p


# ---- row-local chains (ptoisa.rowfuse) over tiles --------------------------------------------
def node_of(tile: Tile) -> rowfuse.Node | None:
    """The node for a whole tile's current value where it need not be computed to be used:
    its deferred expression, its deferred elementwise op, or the GM window it reads in place.
    None: read the tile (its storage holds the values)."""
    p = tile._pending
    if p is not None:
        fn, args = p
        if isinstance(fn, rowfuse.Rows):
            return fn.root
        if not all(isinstance(a, np.ndarray) for a in args):
            return None
        dt = tile.dtype.np
        shape = tuple(np.broadcast_shapes(*(a.shape for a in args)))
        return rowfuse.Node(rowfuse.ufunc(fn, dt), tuple(rowfuse.leaf(a) for a in args), shape)
    lz = tile._lazy
    if isinstance(lz, np.ndarray):
        return rowfuse.leaf(lz)
    return None


def defer(m: Machine, tile: Tile, n: rowfuse.Node | None) -> bool:
    """Make ``n`` (from :func:`rowfuse.node`) ``tile``'s deferred value on machine ``m``;
    False when there is none (the expression would be too large): nothing done, compute it
    now."""
    if n is None:
        return False
    rows = rowfuse.Rows(n)
    set_pending(tile, rows, rows.leaves, m)
    return True


def compute(m: Machine | None, tile: Tile, pending: tuple[Any, tuple[Any, ...]],
            out: np.ndarray) -> None:
    """``tile``'s deferred result ``pending`` (taken off it) into ``out``: a single op over
    the cores (``parallel.into``), or a chain, in one pass with the chains of ``m``'s other
    tiles that share a step with it (a row sum of the same exponent, the row max it
    subtracted): those take theirs into arrays of their own that they then read in place, so
    no step is computed twice."""
    fn, args = pending
    if not isinstance(fn, rowfuse.Rows):
        parallel.into(fn, args, out)
        return
    co: list[tuple[Tile, rowfuse.Rows]] = []
    for t in (m._lazy if m is not None else ()):
        p = t._pending
        if t is not tile and p is not None and isinstance(p[0], rowfuse.Rows) \
                and not fn.ids.isdisjoint(p[0].ids):
            co.append((t, p[0]))
    own = rowfuse.evaluate(fn, out, [(r, t.dtype.np) for t, r in co])
    for (t, _), a in zip(co, own, strict=True):
        t._pending = None
        t._lazy = a
        t._off_chip = True  # (an array of its own)


# ---- a tile pays what it owes ----------------------------------------------------------------
def materialize(tile: Tile, m: Machine) -> None:
    """Give a lazily loaded or deferred tile its contents in its own storage (storage from
    ``m`` if it has none yet)."""
    w, p = tile._lazy, tile._pending
    if tile._buf is None and (w is not None or p is not None):
        m.auto_storage(tile, False)  # written in full below: no poison needed
    tile._lazy = tile._pending = None
    if w is not None and not isinstance(w, np.ndarray):
        w = w.dense()  # (LaneBlocks)
    v = tile.view2d()  # (settles what other tiles owe or read of these bytes first)
    if v is None:
        if w is not None:  # boxed layouts: through the box views
            tile.write(w)
        return
    if w is not None:
        v[...] = w
    elif p is not None:
        with np.errstate(all="ignore"):
            compute(tile._machine or m, tile, p, v)


def detach(tile: Tile, m: Machine) -> None:
    """What this lazily loaded or deferred tile reads is about to be overwritten: take the
    values now. A boxed tile keeps reading lazily, from a private copy in logical order (a
    plain copy; its own storage is a relayout, done only if it is read in its layout or
    written: a tile reloaded first never pays it)."""
    lz = tile._lazy
    if lz is not None and tile.spec.is_boxed:
        if isinstance(lz, np.ndarray):
            tile._lazy = np.array(lz)
        else:  # LaneBlocks
            blocks, inv = lz.unique()
            tile._lazy = type(lz)(np.array(blocks), inv)
        tile._off_chip = True  # (a copy of its own)
        return
    materialize(tile, m)


def overwrite(tile: Tile, m: Machine) -> None:
    """Every element is written next (from values the caller already holds): what the tile
    held lazily or deferred is dropped instead of computed."""
    if tile._lazy is not None or tile._pending is not None:
        tile._lazy = tile._pending = None
        if tile._buf is None:
            m.auto_storage(tile, False)


def leave_bytes(tile: Tile, m: Machine) -> None:
    """``tile`` is about to view other bytes (TASSIGN elsewhere, a view instruction): a loaded
    or deferred value it still owes its storage is written there first, as the instruction
    that produced it did (another tile placed there reads it); a tile without storage yet owes
    nothing anyone can see."""
    if tile._lazy is not None or tile._pending is not None:
        if tile._buf is not None:
            materialize(tile, m)
        else:
            tile._lazy = tile._pending = None


# ---- the barriers ----------------------------------------------------------------------------
def gm_barrier(m: Machine, flat: np.ndarray) -> None:
    """Before GM bytes of ``flat`` are written: tiles still reading them in place take their
    copy now (the load happened before the store)."""
    if not m._lazy:
        return
    done = m._gm_settled
    if done is not None and done[0] is flat and done[1] == m._lazy_gen:
        return  # (as storage_barrier: nothing new reads lazily since this flat was settled)
    for t in list(m._lazy):
        if depends(t, flat):
            detach(t, m)
    m._lazy = [t for t in m._lazy if t._lazy is not None or t._pending is not None]
    m._gm_settled = (flat, m._lazy_gen)


def storage_barrier(m: Machine, tile: Tile) -> None:
    """Before ``tile``'s bytes are read or written: lazily loaded or deferred tiles whose own
    bytes overlap them (TASSIGN aliasing) write their values there first, and tiles that read
    them in place take their copy."""
    buf = tile._buf
    if buf is None:
        return
    st = tile._settled
    if st is not None and st[0] is m and st[1] == m._lazy_gen and st[2] is buf:
        # nothing started reading lazily, and no tile got storage, since this found nothing
        # reading these bytes (lazy tiles only ever stop depending on memory)
        return
    spec = tile.spec
    # (placed tiles of other buffers cannot share bytes: one region array per buffer)
    region = buf.base if tile.addr is not None else None
    stands = True  # (every tile on the list still reads lazily: the list stands)
    for t in list(m._lazy):
        lazy = t._lazy is not None or t._pending is not None
        if t is tile or not lazy:
            stands = stands and lazy
            continue
        tb = t._buf
        owes = tb is not None and (region is None or t.addr is None or tb.base is region)
        if owes and t.spec is spec and tile._lazy is None and tile._pending is None \
                and same_place(t, tile):
            # a tile of the same type on the same bytes (placed at the same address: a loop's
            # alloc_tile of a new value there): what t owes them is this tile's contents too,
            # and this tile takes it over; an instruction writing it whole next drops it
            # unwritten, anything else writes it there first (Tile.storage)
            tile._lazy, tile._pending = t._lazy, t._pending
            tile._off_chip = t._off_chip
            t._lazy = t._pending = None
            add(m, tile)
            stands = False
            continue
        # t's own bytes are these (placed at an overlapping address, a view): its loaded or
        # deferred values land there first, as they were due before this access
        if (owes and may_share_rows(tb, buf)) or (
                not (t._off_chip and t._pending is None) and depends(t, buf)):
            materialize(t, m)
            stands = False
    if not stands:
        m._lazy = [t for t in m._lazy if t._lazy is not None or t._pending is not None]
    tile._settled = (m, m._lazy_gen, buf)


def same_place(t: Tile, u: Tile) -> bool:
    """Do placed tiles ``t`` and ``u`` view the same bytes in the same shape (the same address
    of the same machine; in a lockstep launch, the same block's row)?"""
    a, b = t._buf, u._buf
    return t.addr is not None and t.addr == u.addr and t._machine is u._machine \
        and a.shape == b.shape and a.strides == b.strides and bool(may_share(a, b))


def depends(t: Tile, mem: np.ndarray) -> bool:
    """Does lazily loaded or deferred tile ``t`` read bytes of ``mem``?"""
    lz = t._lazy
    if lz is not None:
        return bool(may_share(lz if isinstance(lz, np.ndarray) else lz.base, mem))
    if t._pending is not None:
        return any(may_share(a, mem) for a in t._pending[1]
                   if isinstance(a, np.ndarray))
    return False

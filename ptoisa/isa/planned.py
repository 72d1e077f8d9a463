"""What the entries' planned forms (``Instr.plan``, :mod:`ptoisa.plans`) check of the run's
state before a replayed call computes its use.

A planned form is asked once, when a launch is planned, for one use (its operands' identities,
types and parameters fixed); it decides there what those fix (the static shapes, the layout,
which branch of the semantics runs) and returns a call. The call checks what a replay can
change, each a few attribute reads: every tile operand still holds its whole valid region
(the run-time rules of these uses read valid regions only, and pass for whole tiles of the
shapes checked when planned), it has the storage and (rows, cols) view it had, and nothing on
the machine owes bytes on chip (:func:`settled`); then it computes with the entry's own
helpers. Anything else returns False, having done nothing: the plan runs the entry as
``Instr.run`` would. The results are the semantics' own, bit for bit.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import lazy
from ..memory import Machine
from ..tile import Tile


def plain(t: Any) -> bool:
    """(When planned) a tile a planned form may read and write through its logical view: a
    :class:`Tile` (not a kind of its own), neither boxed nor packed."""
    return type(t) is Tile and not t.spec.is_boxed and not t.spec.dtype.packed


def settled(m: Machine) -> bool:
    """Does no tile of ``m`` owe bytes on chip? (Every tile still on its list reads an array
    off chip in place, a TLOAD's GM window, or owes nothing any more.) Then tile storage
    holds what it holds: no barrier has anything to write before a read or a write of it."""
    for t in m._lazy:
        if t._pending is not None or (t._lazy is not None and not t._off_chip):
            return False
    return True


def values(t: Tile, m: Machine) -> np.ndarray | None:
    """A whole tile's values now, ``(..., rows, cols)`` (the machine :func:`settled`): the GM
    window it reads in place, or the view of its storage once the tiles that owe its bytes
    (lazily loaded tiles sharing them) have settled, as a read settles them; None where
    neither is at hand (deferred, storage not yet viewed, a partial region)."""
    if t._pending is not None or not t._whole:
        return None
    lz = t._lazy
    if lz is not None:
        if type(lz) is not np.ndarray:
            return None
        sh, sp = lz.shape, t.spec
        return lz if len(sh) > 1 and sh[-2] == sp.rows and sh[-1] == sp.cols else None
    c = t._v2d
    if c is None or c[0] is not t._buf or t._machine is not m:
        return None
    if m._lazy and not m.apart:
        # a lazily loaded tile placed on (or viewing) these bytes owes them its values: they
        # land there first, as a read of the tile has them land (lazy.storage_barrier)
        lazy.storage_barrier(m, t)
        if t._lazy is not None or t._pending is not None or t._v2d is not c:
            return None
    return c[1]  # type: ignore[no-any-return]


def target(t: Tile, m: Machine) -> np.ndarray | None:
    """The view a use writes a whole tile through (its storage bound on ``m``, the view
    made), or None; what the tile held lazily is the caller's to drop (:func:`written`),
    after it has read its sources."""
    if not t._whole:
        return None
    c = t._v2d
    if c is None or c[0] is not t._buf or c[0] is None or t._machine is not m:
        return None
    return c[1]  # type: ignore[no-any-return]


def written(t: Tile, m: Machine) -> None:
    """``t`` is written in full from values already read: what it held lazily is dropped
    (its storage is bound: :func:`target`), and it leaves ``m``'s list of tiles that owe
    (the barriers skip a machine whose list is empty)."""
    if t._lazy is not None or t._pending is not None:
        t._lazy = t._pending = None
        if t in m._lazy:
            m._lazy.remove(t)

"""The part of an operand that belongs to a block of a lockstep launch.

In a lockstep launch (see :mod:`ptoisa.grid`) every block runs the same instruction in one
numpy call: ``get_block_idx()`` is a :class:`Lanes` vector, tiles carry a leading block
dimension, GM offsets become per-block vectors. This module holds :func:`block_of`, which the
dispatch point (:meth:`ptoisa.isa.registry.Instr.run`) uses to run an instruction once per
block where it cannot run for all blocks at once, and :func:`uniform`. The per-block values
themselves (:class:`Lanes`) live below tiles and the machine, in :mod:`ptoisa.lockstep`, and
:class:`BlockDivergence` in :mod:`ptoisa.errors`; both are importable from here too.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .errors import BlockDivergence
from .lockstep import Lanes
from .tensor import GlobalTensor
from .tile import Tile

__all__ = ["BlockDivergence", "Lanes", "block_of", "uniform"]


def uniform(v: Any) -> bool:
    """Whether an operand is the same shape in every block (no per-block valid extents)."""
    if isinstance(v, Tile):
        return not isinstance(v._vr, np.ndarray) and not isinstance(v._vc, np.ndarray)
    return not isinstance(v, np.ndarray) or not isinstance(v, Lanes)


def block_of(v: Any, b: int) -> Any:
    """The part of an operand that belongs to block ``b``."""
    if isinstance(v, Tile):
        return v.block(b)
    if isinstance(v, GlobalTensor):
        return v.block(b)
    if isinstance(v, Lanes):
        return v[b].item() if v.ndim == 1 else np.asarray(v)[b]
    return v

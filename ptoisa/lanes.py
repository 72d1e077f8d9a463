"""Per-block values of a lockstep launch, and the part of an operand that belongs to a block.

In a lockstep launch (see :mod:`ptoisa.grid`) every block runs the same instruction in one
numpy call: ``get_block_idx()`` is a :class:`Lanes` vector, tiles carry a leading block
dimension, GM offsets become per-block vectors. This module holds those per-block values and
:func:`block_of`, which the dispatch point (:meth:`ptoisa.isa.registry.Instr.run`) uses to run
an instruction once per block where it cannot run for all blocks at once.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .errors import PtoError
from .tensor import GlobalTensor
from .tile import Tile


class BlockDivergence(PtoError):
    """Python control flow depends on a value that differs between blocks of a lockstep run."""


class Lanes(np.ndarray):
    """Per-block integer values of a lockstep launch (``get_block_idx()`` and what is computed
    from it). Arithmetic works elementwise; turning it into one Python value works only when
    every block has the same value."""

    def __new__(cls, values: Any) -> Lanes:
        return np.asarray(values, dtype=np.int64).view(cls)

    def _uniform(self, what: str) -> Any:
        flat = np.asarray(self).reshape(-1)
        if flat.size and (flat == flat[0]).all():
            return flat[0].item()
        raise BlockDivergence(
            f"{what} of a value that differs between blocks ({_short(flat)}): Python control "
            "flow on the block index cannot run the blocks in lockstep; launch with "
            "lockstep=False, or compute with numpy (np.minimum, np.where) instead of if/min")

    def __bool__(self) -> bool:
        return bool(self._uniform("truth value"))

    def __int__(self) -> int:
        return int(self._uniform("int()"))

    def __index__(self) -> int:
        return int(self._uniform("index"))

    def __float__(self) -> float:
        return float(self._uniform("float()"))

    def __array_wrap__(self, arr: Any, context: Any = None, return_scalar: bool = False) -> Any:
        out = np.asarray(arr)
        if out.ndim == 0:
            return out[()]
        return out.view(Lanes) if out.dtype.kind in "iub" else out


def _short(flat: np.ndarray) -> str:
    vals = ", ".join(str(x) for x in flat[:4].tolist())
    return f"[{vals}{', ...' if flat.size > 4 else ''}]"


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

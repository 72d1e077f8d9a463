"""Per-block values of a lockstep launch, and the launch policy that falls back to running the
blocks one by one.

In a lockstep launch (see :mod:`ptoisa.grid`) every block runs the same instruction in one
numpy call: ``get_block_idx()`` is a :class:`Lanes` vector of the block indices, and what is
computed from it stays per-block. Python control flow on such a value raises
:class:`~ptoisa.errors.BlockDivergence` (unless every block agrees), and
:func:`lockstep_or_each` then reruns the kernel block by block. This module sits below tiles,
the machine and the symbolic values (they make and check :class:`Lanes`); every launcher
(:mod:`ptoisa.grid`, :mod:`ptoisa.concurrent.streams`) shares its policy.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .errors import BlockDivergence, PtoError


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


def check_launch(blocks: Any, lockstep: Any) -> None:
    """The arguments every launcher takes: a positive block count and a lockstep policy."""
    if isinstance(blocks, bool) or not isinstance(blocks, int) or blocks < 1:
        raise PtoError(f"blocks must be a positive integer, got {blocks!r}")
    if lockstep not in (True, False, "auto"):
        raise PtoError(f"lockstep must be True, False or 'auto', got {lockstep!r}")


def lockstep_or_each(blocks: int, lockstep: bool | str, together: Callable[[], Any],
                     each: Callable[[int], Any], wrote_gm: Callable[[], bool],
                     fresh: Callable[[], None] | None = None,
                     abandon: Callable[[], None] | None = None) -> Any:
    """THE launch policy, shared by every launcher (:func:`ptoisa.grid.run_blocks`, the
    mixed-kernel clusters): run all blocks at once (``together``) unless the kernel's control
    flow depends on the block index (:class:`BlockDivergence`); then, with lockstep="auto"
    and nothing written to GM yet (``wrote_gm``), run ``each(b)`` block by block. ``fresh``
    forgets state one run leaves for the next (a compiled program's tiles); ``abandon`` is
    called when the lockstep attempt is given up for block by block (the observers forget
    what they saw of it: :func:`ptoisa.observe.rewind`). Returns the last run's result."""
    if lockstep and blocks > 1:
        try:
            return together()
        except BlockDivergence:
            if lockstep is True or wrote_gm():
                raise
            if abandon is not None:
                abandon()
            if fresh is not None:
                fresh()
    out = None
    for b in range(blocks):
        if b and fresh is not None:
            fresh()  # each block has its own buffers: nothing of the previous block's tiles
        out = each(b)
    return out

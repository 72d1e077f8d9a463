"""Launching a kernel over a grid of blocks, with the blocks run in lockstep.

``pto.launch(kernel, *args, blocks=N)`` runs ``kernel(*args)`` for N blocks the way the NPU
does, each block with its own ``pto.get_block_idx()`` and its own on-chip buffers. Rather
than N Python passes, the kernel runs **once** with every block in lockstep: the machine gets
``lanes = N``, every buffer and tile a leading block dimension, ``get_block_idx()`` returns the
vector of block indices (a :class:`Lanes` array), GlobalTensor offsets computed from it become
per-block offset vectors, and each intrinsic call processes all blocks in one numpy call.

Instructions whose semantics index tiles as ``[..., r, c]`` are declared ``batched`` and run
once for all blocks; any other instruction, and any call whose operands differ between blocks
in shape (e.g. different valid regions), runs once per block on per-block views, with the
same results. Python control flow that depends on the block index cannot run in lockstep:
``bool(block_idx == 3)`` raises :class:`BlockDivergence` (unless all blocks agree), and
``launch(..., lockstep="auto")`` (the default) then reruns the kernel block by block, which
is always correct as long as nothing was written to GM yet.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .errors import PtoError
from .lanes import BlockDivergence, Lanes, block_of
from .memory import Machine, current, pop
from .memory import push as _push

__all__ = ["BlockDivergence", "Lanes", "block_of", "get_block_idx", "get_block_num", "launch"]


def get_block_idx() -> Any:
    """This block's index (in a lockstep launch: the vector of all blocks' indices)."""
    return current().block_idx


def get_block_num() -> int:
    """How many blocks the kernel was launched on."""
    return current().block_num


# ---- launching ------------------------------------------------------------------------------

def launch(kernel: Callable[..., Any], *args: Any, blocks: int = 1, target: str = "cpu",
           lockstep: bool | str = "auto", mixed: bool = False, ranks: Any = None,
           **settings: Any) -> None:
    """Run ``kernel(*args)`` on ``blocks`` blocks of ``target`` (results land in the numpy
    arrays passed in). ``lockstep``: True (fail on block-dependent control flow), False (one
    Python pass per block), "auto" (lockstep, falling back per block when the kernel branches
    on the block index before writing GM). ``settings`` go to the machine (mode, stdout...).
    ``mixed=True``: a cube + vector kernel, run on the AIC and both AIVs of every cluster
    (``pto.core_type()``, ``pto.get_subblock_idx()``; see :mod:`ptoisa.mixed`).
    ``ranks=N`` / ``ranks=comm``: a multi-rank launch (see :func:`ptoisa.ranks.launch_ranks`)."""
    if ranks is not None:
        from .ranks import launch_ranks

        if mixed:
            raise PtoError("a mixed (cube + vector) launch across ranks is not supported yet")
        launch_ranks(kernel, *args, ranks=ranks, blocks=blocks, target=target, **settings)
        return
    if mixed:
        from .streams import run_cluster

        run_cluster(lambda m: kernel(*args), target=target, blocks=blocks, lockstep=lockstep,
                    settings=settings)
        return
    if isinstance(blocks, bool) or not isinstance(blocks, int) or blocks < 1:
        raise PtoError(f"blocks must be a positive integer, got {blocks!r}")
    if lockstep not in (True, False, "auto"):
        raise PtoError(f"lockstep must be True, False or 'auto', got {lockstep!r}")
    with np.errstate(all="ignore"):  # ISA semantics define inf/NaN/wrap; no numpy warnings
        if lockstep and blocks > 1:
            m = _launch_machine(target, blocks, settings)
            m.block_idx, m.block_num = Lanes(np.arange(blocks)), blocks
            try:
                kernel(*args)
                return
            except BlockDivergence:
                if lockstep is True or m.gm_writes:
                    raise
            finally:
                _done(m)
        m = _launch_machine(target, 1, settings)
        try:
            for b in range(blocks):
                m.reset_for_launch()
                m.block_idx, m.block_num = b, blocks
                kernel(*args)
        finally:
            _done(m)


_MACHINES: dict[Any, Machine] = {}


def _launch_machine(target: str, lanes: int, settings: dict[str, Any]) -> Machine:
    """A machine for a launch, reused across launches with the same target and lane count so
    its buffers and arena are not allocated (and page-faulted in) again every time."""
    key = (target, lanes, tuple(sorted((k, id(v)) for k, v in settings.items())))
    m = _MACHINES.get(key)
    if m is None:
        if len(_MACHINES) > 8:
            _MACHINES.clear()
        m = _MACHINES[key] = Machine(target, lanes=lanes, **settings)
    m.reset_for_launch()
    m.lazy_loads = True
    m.quiet = True
    _push(m)
    return m


def _done(m: Machine) -> None:
    m._lazy.clear()
    m.quiet = False
    pop(m)

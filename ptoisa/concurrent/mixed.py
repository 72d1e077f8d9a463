"""Mixed cube + vector kernels in Python, as they are written in C++.

A C++ mixed kernel is one ``__global__`` function compiled twice, for the cube core (AIC,
``__DAV_CUBE__``) and for the vector cores (AIV, ``__DAV_VEC__``); each cluster runs it on one
AIC and two AIVs (sub-blocks 0 and 1), which exchange tiles through TPUSH / TPOP pipes::

    def kernel(a, out):
        pipe = pto.TPipe(0, pto.Direction.DIR_C2V, 16 * 16 * 4, 8)
        if pto.core_type() == "AIC":
            ...; pto.TPUSH(pipe, acc, Split="TILE_UP_DOWN")
        else:
            pto.TPOP(pipe, half, Split="TILE_UP_DOWN"); pto.TFREE(pipe, Split="TILE_UP_DOWN")
            ...  # pto.get_subblock_idx() picks this sub-block's rows

    pto.launch(kernel, a, out, blocks=4, target="a2a3", mixed=True)
    pto.launch_mixed(cube_fn, vector_fn, a, out, blocks=4, target="a2a3")  # two functions

Each core has its own machine (its own L1/L0 or UB); the cores interleave at pipe operations
(see :mod:`ptoisa.concurrent.streams`); a pop that nothing will ever fill is a
:class:`DeadlockError`
naming each core's blocked instruction.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..isa.pipes import Direction, TileSplitAxis, TPipe
from ..memory import current
from ..targets import DEFAULT_TARGET, TargetLike
from .streams import DeadlockError

__all__ = ["DeadlockError", "Direction", "TPipe", "TileSplitAxis", "core_type",
           "get_subblock_idx", "get_subblock_num", "launch_mixed"]


def core_type() -> str:
    """The kind of core running this code in a mixed launch: "AIC" (cube) or "AIV" (vector);
    "ANY" outside one (a single core that runs every instruction)."""
    core = current().core
    return core[0] if core else "ANY"


def get_subblock_idx() -> int:
    """This vector core's sub-block index in its cluster (0 or 1; 0 on the cube core)."""
    return int(current().sub_block_id)


def get_subblock_num() -> int:
    """Vector cores per cluster: 2 in a mixed launch, else 1."""
    return 2 if current().core else 1


def launch_mixed(cube: Callable[..., Any], vector: Callable[..., Any], *args: Any,
                 blocks: int = 1, target: TargetLike = DEFAULT_TARGET,
                 lockstep: bool | str = "auto",
                 cycles: bool = False, sanitize: Any = False, **settings: Any) -> Any:
    """Run ``cube(*args)`` on the AIC and ``vector(*args)`` on both AIVs of each of ``blocks``
    clusters (blocks in lockstep where possible); results land in the numpy arrays passed in.
    ``settings`` go to every core's machine (stdout, mode...); observers of an open
    ``with ptoisa.observe.observing(obs):`` block are attached to each core's machine.
    ``cycles`` and ``sanitize`` (and what it returns) as for :func:`ptoisa.launch`, which runs
    it as one kernel with ``mixed=True``."""
    from ..grid import launch

    def kernel(*a: Any) -> None:
        (cube if core_type() == "AIC" else vector)(*a)

    return launch(kernel, *args, blocks=blocks, target=target, lockstep=lockstep, mixed=True,
                  cycles=cycles, sanitize=sanitize, **settings)

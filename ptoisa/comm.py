"""The communication API, as C++ ``pto::comm``: ``from ptoisa import comm``.

The instructions are the registry's (``comm.TPUT`` is ``pto.TPUT``; ``comm.TGATHER`` and
``comm.TSCATTER`` are the collectives, entries COMM_TGATHER / COMM_TSCATTER, since
``pto.TGATHER`` / ``pto.TSCATTER`` are the tile instructions of those names), with the types
they take (Signal2D, ParallelGroup, the enums) and what a multi-rank kernel needs:

* ``pto.launch(kernel, *args, ranks=N)`` runs N ranks as threads of this process (an array
  argument is a list of N arrays, one per rank); ``ranks=comm`` (an mpi4py communicator, or
  ``"mpi"``) runs this process as one rank of an MPI job (``mpiexec -n 4 python k.py``);
* ``comm.get_rank()`` / ``comm.get_rank_num()``: this rank and the number of ranks;
* ``comm.remote(view, r)``: the same GM view on rank r's copy of the window (the array
  arguments of the launch are the windows: symmetric memory, argument k on every rank);
* ``comm.group(view)``: the ParallelGroup of every rank's copy of ``view``, this rank the root.

See :mod:`ptoisa.ranks` (backends, faults, timeouts) and :mod:`ptoisa.ranks_mpi`.
"""

from __future__ import annotations

from typing import Any

from . import ranks_mpi as _ranks_mpi  # noqa: F401 - registers the MPI launcher with ranks
from .isa.comm import (
    COMM_TGATHER as TGATHER,
)
from .isa.comm import (
    COMM_TSCATTER as TSCATTER,
)
from .isa.comm import (
    TBROADCAST,
    TGET,
    TGET_ASYNC,
    TNOTIFY,
    TPUT,
    TPUT_ASYNC,
    TREDUCE,
    TTEST,
    TWAIT,
    AsyncEvent,
    CollEngine,
    DmaEngine,
    NotifyOp,
    ParallelGroup,
    ReduceOp,
    Signal2D,
    WaitCmp,
    add_peer,
)
from .ranks import (
    RankDeadlock,
    RankError,
    RankTimeout,
    RemoteAccess,
    RemoteTensor,
    Window,
    active,
    get_rank,
    get_rank_num,
    launch_ranks,
    remote,
)


def group(view: Any, root: int | None = None) -> ParallelGroup:
    """``ParallelGroup`` over every rank's copy of ``view`` (tensors[k] on rank k), with
    ``root`` (default: this rank) as the root index."""
    n = get_rank_num()
    me = get_rank()
    tensors = [view if k == me else remote(view, k) for k in range(n)]
    return ParallelGroup(tensors, me if root is None else root)


__all__ = [
    "TBROADCAST", "TGATHER", "TGET", "TGET_ASYNC", "TNOTIFY", "TPUT", "TPUT_ASYNC", "TREDUCE",
    "TSCATTER", "TTEST", "TWAIT", "AsyncEvent", "CollEngine", "DmaEngine", "NotifyOp",
    "ParallelGroup", "RankDeadlock", "RankError", "RankTimeout", "ReduceOp", "RemoteAccess",
    "RemoteTensor", "Signal2D", "WaitCmp", "Window", "active", "add_peer", "get_rank",
    "get_rank_num", "group", "launch_ranks", "remote",
]

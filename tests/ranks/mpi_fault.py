"""Faulty multi-rank kernels, one per mode (``mpiexec -n N python mpi_fault.py MODE``): the job
must end on every rank with a message naming the failing rank and its instruction."""

from __future__ import annotations

import sys
import time

import numpy as np
from mpi4py import MPI

import ptoisa as pto
from ptoisa.concurrent import comm
from ptoisa.tensor import GlobalTensor
from ptoisa.tile import Tile


def kernel(mode: str, x: np.ndarray, flag: np.ndarray) -> None:
    r, n = comm.get_rank(), comm.get_rank_num()
    g = GlobalTensor(x, (1, 1, 1, 1, x.size))
    st = Tile("Vec", np.float32, 1, 8)
    if mode == "raise" and r == 1:
        comm.TPUT(comm.remote(g, 0), g, st)
        raise ValueError("boom")
    if mode == "exit" and r == 1:
        comm.TNOTIFY(comm.remote(GlobalTensor(flag), 0), 1, "Set")
        sys.exit(3)
    if mode in ("deadlock", "timeout") and r == 0:
        comm.TWAIT(GlobalTensor(flag), 1, "EQ")
    if mode == "timeout" and r == 1:
        time.sleep(4)  # still running: rank 0's wait ends by its timeout
    if mode == "bad_peer" and r == 0:
        comm.TPUT(comm.remote(g, n), g, st)
    if mode == "bad_window" and r == 0:
        comm.TPUT(comm.remote(g, 1), g, st)


def main() -> None:
    mode = sys.argv[1]
    r = MPI.COMM_WORLD.Get_rank()
    # bad_window: rank 1's copy of window 'x' is smaller than rank 0's
    size = 4 if mode == "bad_window" and r == 1 else 8
    pto.launch(kernel, mode, np.zeros(size, np.float32), np.zeros(1, np.int32),
               ranks=MPI.COMM_WORLD)
    print(f"rank {r} done", flush=True)


if __name__ == "__main__":
    main()

"""Ring all-reduce across ranks with TPUT, TNOTIFY and TWAIT.

Every rank holds a vector of N chunks (N ranks). Reduce-scatter: in N-1 steps each rank puts
one chunk into its right neighbour's receive slot and bumps the neighbour's step counter; the
neighbour waits for the counter, adds the slot into its own chunk. After that rank r holds the
full sum of chunk (r+1) mod N and tells its left neighbour so (the neighbour may now write into
its vector). All-gather: N-1 more steps pass the finished chunks around the ring, straight into
the right neighbour's vector. Every rank ends with the sum of all vectors, the same on all.

Run it on 4 ranks in this process (threads), or as 4 MPI processes (pip install 'ptoisa[mpi]'):

    python examples/ring_allreduce.py [--target cpu|a2a3|a5] [--ranks 4]
    mpiexec -n 4 python examples/ring_allreduce.py --mpi

There is no ``--pto``: the multi-rank ``.pto`` programs are ``examples/notify_put.pto`` and
``examples/ring_put.pto`` (run with ``ptoisa run ... --ranks N``, see their headers).
"""

from __future__ import annotations

import argparse

import numpy as np

import ptoisa as pto
from ptoisa.concurrent import comm

C = 64  # elements per chunk: one 1 x 64 f32 tile


def chunk(a: np.ndarray, k: int) -> pto.GlobalTensor:
    return pto.GlobalTensor(a, (1, 1, 1, 1, C), offset=k * C)


def ring_allreduce(x: np.ndarray, recv: np.ndarray, steps: np.ndarray) -> None:
    """x: this rank's N*C vector (reduced in place); recv: N-1 receive slots of C; steps: three
    i32 counters (reduce-scatter steps received, all-gather steps received, right neighbour done
    with its reduce-scatter)."""
    r, n = comm.get_rank(), comm.get_rank_num()
    right, left = (r + 1) % n, (r - 1) % n
    rs = pto.GlobalTensor(steps, (1, 1, 1, 1, 1))
    ag = pto.GlobalTensor(steps, (1, 1, 1, 1, 1), offset=1)
    ready = pto.GlobalTensor(steps, (1, 1, 1, 1, 1), offset=2)
    mine = pto.Tile(pto.TileType.Vec, np.float32, 1, C)
    got = pto.Tile(pto.TileType.Vec, np.float32, 1, C)
    for s in range(n - 1):                       # reduce-scatter
        comm.TPUT(comm.remote(chunk(recv, s), right), chunk(x, (r - s) % n), mine)
        comm.TNOTIFY(comm.remote(rs, right), 1, comm.NotifyOp.AtomicAdd)
        comm.TWAIT(rs, s + 1, comm.WaitCmp.GE)
        k = (r - s - 1) % n
        pto.TLOAD(mine, chunk(x, k))
        pto.TLOAD(got, chunk(recv, s))
        pto.TADD(mine, mine, got)
        pto.TSTORE(chunk(x, k), mine)
    comm.TNOTIFY(comm.remote(ready, left), 1, comm.NotifyOp.Set)
    comm.TWAIT(ready, 1, comm.WaitCmp.EQ)        # the right neighbour's adds are done
    for s in range(n - 1):                       # all-gather
        if s:
            comm.TWAIT(ag, s, comm.WaitCmp.GE)
        k = (r + 1 - s) % n
        comm.TPUT(comm.remote(chunk(x, k), right), chunk(x, k), mine)
        comm.TNOTIFY(comm.remote(ag, right), 1, comm.NotifyOp.AtomicAdd)
    comm.TWAIT(ag, n - 1, comm.WaitCmp.GE)


def inputs(n: int, r: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    x = np.random.default_rng(r).standard_normal(n * C).astype(np.float32)
    return x, np.zeros((max(n - 1, 1)) * C, np.float32), np.zeros(3, np.int32)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ranks", type=int, default=4, help="in-process ranks (default 4)")
    ap.add_argument("--mpi", action="store_true", help="this process is one rank of an MPI job")
    ap.add_argument("--target", default=pto.DEFAULT_TARGET, choices=["cpu", "a2a3", "a5"])
    a = ap.parse_args(argv)
    if a.mpi:
        from mpi4py import MPI

        world = MPI.COMM_WORLD
        n, r = world.Get_size(), world.Get_rank()
        x, recv, steps = inputs(n, r)
        pto.launch(ring_allreduce, x, recv, steps, ranks=world, target=a.target)
        results = world.gather(x, root=0)
        if r:
            return 0
    else:
        n = a.ranks
        args = [inputs(n, r) for r in range(n)]
        pto.launch(ring_allreduce, *([args[r][k] for r in range(n)] for k in range(3)),
                   ranks=n, target=a.target)
        results = [args[r][0] for r in range(n)]
    want = sum(inputs(n, r)[0].astype(np.float64) for r in range(n))
    err = max(float(np.abs(x - want).max()) for x in results)
    same = all(np.array_equal(results[0], x) for x in results)
    print(f"ring all-reduce on {n} ranks ({'MPI' if a.mpi else 'in-process'}) on {a.target}: "
          f"{n * C} f32 per rank, max |error| vs f64 sum {err:.2e}, every rank identical: {same}")
    return 0 if same and err < 1e-3 else 1


if __name__ == "__main__":
    raise SystemExit(main())

"""Producer-consumer between ranks with TNOTIFY / TWAIT (and TTEST), double-buffered.

Ranks pair up: each even rank produces K tiles (x * 2 on its vector unit) and puts them into
one of two slots of the next rank's buffer, then bumps that rank's ``ready`` counter. The
consumer waits for the counter, computes y = tile + 1 into its result and bumps the producer's
``free`` counter, so the producer never overwrites a slot that is still being read.

    python examples/notify_wait.py [--target cpu|a2a3|a5] [--ranks 2]
    mpiexec -n 2 python examples/notify_wait.py --mpi

There is no ``--pto``: the multi-rank ``.pto`` programs are ``examples/notify_put.pto`` and
``examples/ring_put.pto`` (run with ``ptoisa run ... --ranks N``, see their headers).
"""

from __future__ import annotations

import argparse

import numpy as np

import ptoisa as pto
from ptoisa.concurrent import comm

R, C, K = 8, 16, 6  # tile rows, cols; tiles per producer


def item(a: np.ndarray, i: int) -> pto.GlobalTensor:
    return pto.GlobalTensor(a, (1, 1, 1, R, C), offset=i * R * C)


def counter(a: np.ndarray, k: int) -> pto.GlobalTensor:
    return pto.GlobalTensor(a, (1, 1, 1, 1, 1), offset=k)


def producer_consumer(x: np.ndarray, slots: np.ndarray, y: np.ndarray,
                      flags: np.ndarray) -> None:
    """x: K input tiles (producer); slots: 2 receive slots (consumer); y: K results (consumer);
    flags: [ready, free] counters."""
    r, n = comm.get_rank(), comm.get_rank_num()
    ready, free = counter(flags, 0), counter(flags, 1)
    t = pto.Tile(pto.TileType.Vec, np.float32, R, C)
    if r % 2 == 0 and r + 1 < n:                   # producer
        for i in range(K):
            if i >= 2:                             # slot i % 2 was read by the consumer
                comm.TWAIT(free, i - 1, comm.WaitCmp.GE)
            pto.TLOAD(t, item(x, i))
            pto.TMULS(t, t, 2.0)
            pto.TSTORE(item(x, i), t)              # GM -> GM puts: stage the tile in x
            comm.TPUT(comm.remote(item(slots, i % 2), r + 1), item(x, i), t)
            comm.TNOTIFY(comm.remote(ready, r + 1), 1, comm.NotifyOp.AtomicAdd)
    elif r % 2 == 1:                               # consumer
        polls = 0
        while not comm.TTEST(ready, 1, comm.WaitCmp.GE):   # the first tile: poll, then ...
            polls += 1
        for i in range(K):
            comm.TWAIT(ready, i + 1, comm.WaitCmp.GE)     # ... block for the others
            pto.TLOAD(t, item(slots, i % 2))
            pto.TADDS(t, t, 1.0)
            pto.TSTORE(item(y, i), t)
            comm.TNOTIFY(comm.remote(free, r - 1), 1, comm.NotifyOp.AtomicAdd)


def inputs(r: int) -> list[np.ndarray]:
    x = np.random.default_rng(r).standard_normal(K * R * C).astype(np.float32)
    return [x, np.zeros(2 * R * C, np.float32), np.zeros(K * R * C, np.float32),
            np.zeros(2, np.int32)]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ranks", type=int, default=2, help="in-process ranks (default 2)")
    ap.add_argument("--mpi", action="store_true", help="this process is one rank of an MPI job")
    ap.add_argument("--target", default=pto.DEFAULT_TARGET, choices=["cpu", "a2a3", "a5"])
    a = ap.parse_args(argv)
    if a.mpi:
        from mpi4py import MPI

        world = MPI.COMM_WORLD
        n, r = world.Get_size(), world.Get_rank()
        mine = inputs(r)
        pto.launch(producer_consumer, *mine, ranks=world, target=a.target)
        ys = world.gather(mine[2], root=0)
        if r:
            return 0
    else:
        n = a.ranks
        args = [inputs(r) for r in range(n)]
        pto.launch(producer_consumer, *([args[r][k] for r in range(n)] for k in range(4)),
                   ranks=n, target=a.target)
        ys = [args[r][2] for r in range(n)]
    ok = all(np.array_equal(ys[c], inputs(c - 1)[0] * np.float32(2) + np.float32(1))
             for c in range(1, n - n % 2, 2))
    print(f"producer-consumer on {n} ranks ({'MPI' if a.mpi else 'in-process'}) on {a.target}: "
          f"{n // 2} pair(s), {K} tiles of {R}x{C} f32 each, results equal x * 2 + 1: {ok}")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())

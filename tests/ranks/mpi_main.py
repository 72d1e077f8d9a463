"""Run every case of cases.py under MPI (``mpiexec -n N python mpi_main.py OUT.json``): each rank
binds its own arguments; rank 0 collects every rank's arrays and compares them bit for bit with
the in-process backend's run of the same case and with the case's expectation, then writes
{case: "ok" | what differs} to OUT.json."""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from cases import CASES, mismatch, run_local  # noqa: E402
from mpi4py import MPI  # noqa: E402

import ptoisa as pto  # noqa: E402


def main() -> None:
    world = MPI.COMM_WORLD
    rank, n = world.Get_rank(), world.Get_size()
    only = set(sys.argv[2:])
    results = {}
    for case in CASES:
        if only and case.name not in only:
            continue
        ins = case.inputs(n)
        mine = [a.copy() for a in ins[rank]]
        pto.launch(case.kernel, *mine, ranks=world)
        everyone = world.gather(mine, root=0)
        if rank == 0:
            local = run_local(case, n)
            results[case.name] = (mismatch(everyone, local) or
                                  mismatch(everyone, case.expect(n, ins)) or "ok")
    if rank == 0:
        Path(sys.argv[1]).write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()

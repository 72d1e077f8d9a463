"""The communication cases of the conformance pack, run across two ranks (MPI or in-process).

``mpiexec -n 2 python -m ptoisa.concurrent.conformance_ranks PACK [--only tput ...]`` (or ``--ranks
2``
in one process). Every rank sets the case up the same way (same GM buffers, same contents);
the GM buffers are the launch's windows. Rank 0 runs the recorded program, and the operands
the ISA pages place on another NPU live on rank 1: TPUT / TPUT_ASYNC's destination, TGET /
TGET_ASYNC's source, TNOTIFY's signal, and the group tensors of TBROADCAST other than the
root's. TWAIT / TTEST read their local signal through the backend. After the launch rank 0
takes rank 1's copies of what was written remotely and checks the recorded expectations, with
the verdicts of the single-process runner (PASS / QUIRK / SKIP / FAIL).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

from .. import conformance as C
from ..errors import ConstraintError, PtoError
from ..memory import Machine, pop, push
from ..memory import target as make_target
from ..targets import CONFORMANCE_TARGET, TargetLike
from ..tensor import GlobalTensor

#: instruction -> the operand (C++ parameter name) that lives on the other NPU
REMOTE = {"TPUT": "dstGlobalData", "TPUT_ASYNC": "dstGlobalData", "TGET": "srcGlobalData",
          "TGET_ASYNC": "srcGlobalData", "TNOTIFY": "dstSignalData"}
#: the pack's folders of communication cases
FOLDERS = ("tput", "tget", "tput_async", "tget_async", "tnotify", "twait", "ttest",
           "tbroadcast", "treduce")


class RankCaseRun(C.CaseRun):
    """A case whose remote operands are on rank 1."""

    def __init__(self, case_dir: Path, case: dict[str, Any], machine: Machine) -> None:
        super().__init__(case_dir, case, machine)
        self.remote_ids: set[int] = set()
        self.written: set[str] = set()  # GM buffers written on rank 1
        for st in case["program"]:
            for o in st["operands"]:
                if REMOTE.get(st["op"]) == o.get("param") and "gm" in o:
                    self.remote_ids.add(id(o))
                    if st["op"] != "TGET" and st["op"] != "TGET_ASYNC":
                        self.written.add(o["gm"])
        self.group_bufs: list[list[np.ndarray]] = []
        self._next_group = 0

    def setup(self) -> None:
        super().setup()
        for st in self.case["program"]:
            if st["op"] != "TBROADCAST":
                continue
            g = next((o for o in st["operands"] if "struct" in o), None)
            src = next((o for o in st["operands"] if "gm" in o), None)
            if g is None or src is None:
                continue
            grp = C._parallel_group(bytes.fromhex(g.get("bytes_before") or ""))
            n = int(np.prod(src["shape"]))
            self.group_bufs.append([np.zeros(n, C.np_type(src["dtype"]))
                                    for _ in range(grp.size)])

    def windows(self) -> tuple[list[np.ndarray], list[str]]:
        names = sorted(self.gm)
        arrays = [self.gm[g] for g in names]
        for i, bufs in enumerate(self.group_bufs):
            arrays += bufs
            names += [f"group{i}.{k}" for k in range(len(bufs))]
        return arrays, names

    def operand(self, o: dict[str, Any]) -> Any:
        from .ranks import active, remote

        v = super().operand(o)
        if id(o) in self.remote_ids and isinstance(v, GlobalTensor) and active() is not None:
            return remote(v, 1)
        if isinstance(v, C._UnboundGroup) and self._next_group < len(self.group_bufs):
            bufs = self.group_bufs[self._next_group]
            self._next_group += 1

            def bind(like: GlobalTensor, v: Any = v, bufs: list[np.ndarray] = bufs) -> Any:
                from ..isa.comm import ParallelGroup

                v.buffers = bufs
                ts = [GlobalTensor(b, like.spec.shape, dtype=b.dtype) for b in bufs]
                return ParallelGroup([t if k == v.root else remote(t, 1)
                                      for k, t in enumerate(ts)], v.root)
            v.bind = bind
        return v


def run_case(case_dir: Path, ranks: Any, target: TargetLike = CONFORMANCE_TARGET
             ) -> C.Verdict | None:
    """One case across two ranks; the verdict on rank 0, None on the others. Every rank of
    ``ranks`` calls it with the same case."""
    try:
        return _run(case_dir, ranks, target, False)
    except ConstraintError as e:
        v = _run(case_dir, ranks, target, True)
        if v is not None and v.status == "PASS":
            return C.Verdict(v.case_id, "QUIRK", f"needs permissive mode: {e}")
        return v


def _size_rank(ranks: Any) -> tuple[int, int]:
    if isinstance(ranks, int):
        return ranks, -1
    from .ranks_mpi import _comm

    c = _comm(ranks)
    return c.Get_size(), c.Get_rank()


def _run(case_dir: Path, ranks: Any, target: TargetLike, permissive: bool) -> C.Verdict | None:
    from .ranks import run_on_ranks

    case = json.loads((case_dir / "case.json").read_text())
    cid = case["case_id"]
    missing = sorted({C.op_name(s) for s in case["program"]} - set(C.REGISTRY))
    if missing:
        return C.Verdict(cid, "SKIP", "missing " + ", ".join(missing))
    runs: dict[int, RankCaseRun] = {}
    result: dict[str, Any] = {}

    def bind(r: int, n: int) -> Any:
        m = make_target(target, permissive=permissive)
        pop(m)
        run = runs[r] = RankCaseRun(case_dir, case, m)
        push(m)
        try:
            run.setup()
        except C.Skip as e:
            result["skip"] = str(e)
        finally:
            pop(m)
        arrays, names = run.windows()

        def body(rank_machine: Machine) -> None:
            if r != 0 or "skip" in result:
                return
            m.observers.extend(rank_machine.observers)
            push(m)
            try:
                result["outputs"] = run.run()
            except C.Skip as e:
                result["skip"] = str(e)
            except ConstraintError as e:
                result["constraint"] = e
            except PtoError as e:
                result["problems"] = [f"error: {e}"]
            finally:
                pop(m)
        return body, arrays, names

    n, me = _size_rank(ranks)
    run_on_ranks(bind, ranks=ranks, target=target)
    # rank 1's copies of what rank 0 wrote there
    if me == -1:  # in-process: both ranks' runs are here
        copies = runs[1].windows()[0] if n > 1 else None
    else:
        from .ranks_mpi import _comm

        comm = _comm(ranks)
        copies = None
        if me == 1:
            comm.send(runs[me].windows()[0], dest=0)
        elif me == 0:
            copies = comm.recv(source=1)
        flag = comm.bcast("constraint" in result if me == 0 else None, root=0)
        if flag and me != 0:
            raise ConstraintError("retried on a permissive machine")
        if me != 0:
            return None
    if "constraint" in result:
        raise result["constraint"]
    if "skip" in result:
        return C.Verdict(cid, "SKIP", result["skip"])
    run = runs[0]
    if copies is not None:
        names = run.windows()[1]
        for a, name, theirs in zip(run.windows()[0], names, copies, strict=True):
            if name in run.written or (name.startswith("group") and not
                                       _is_root_buf(run, name)):
                a[...] = theirs
    problems = result.get("problems") or C.check_case(run, result.get("outputs", {}))
    return C.verdict_of(case, case_dir, target, problems)


def _is_root_buf(run: RankCaseRun, name: str) -> bool:
    gi, k = (int(x) for x in name.removeprefix("group").split("."))
    for g in run.groups:
        if g.buffers is run.group_bufs[gi]:
            return k == g.root
    return False


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("pack", help="the conformance pack folder")
    ap.add_argument("--only", action="append", help="case folders (default: the comm ones)")
    ap.add_argument("--ranks", type=int, help="in-process ranks (default: the MPI job)")
    ns = ap.parse_args(argv)
    ranks: Any = ns.ranks if ns.ranks else "mpi"
    wanted = set(ns.only or FOLDERS)
    n, me = _size_rank(ranks)
    if n < 2:
        print("ptoisa: the comm cases need two ranks (mpiexec -n 2 ... or --ranks 2)",
              file=sys.stderr)
        return 2
    counts: dict[str, int] = {}
    for d in C.case_dirs(Path(ns.pack)):
        if d.parent.name.lower() not in wanted and d.name not in wanted:
            continue
        v = run_case(d, ranks)
        if v is None:
            continue
        counts[v.status] = counts.get(v.status, 0) + 1
        print(f"{v.status} {v.case_id}" + (f": {v.detail}" if v.detail else ""), flush=True)
    if me <= 0:
        print(", ".join(f"{counts.get(s, 0)} {s.lower()}" for s in
                        ("PASS", "QUIRK", "SKIP", "FAIL")) + f" (across {n} ranks)")
    return 1 if counts.get("FAIL") else 0


if __name__ == "__main__":
    sys.exit(main())

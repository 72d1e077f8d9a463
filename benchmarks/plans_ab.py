"""The goal kernels of benchmarks/plans_speed.py (issue #29), planned, against another
revision's ptoisa in the same process (benchmarks/ab.py's ``other_revision``), rounds
alternating new, old and numpy's version, in process CPU time (run it with
``OPENBLAS_NUM_THREADS=1``):

    OPENBLAS_NUM_THREADS=1 python benchmarks/plans_ab.py REV [--rounds N] [--only TEXT]
        [--scale K]

Each side runs ``K`` times plans_speed.py's launches a round (a round's first launch comes
after the other side's: its caches cold). Prints per kernel the median per launch of each
side, its ratio to numpy's version in the same rounds, and the median of the per-round
ratios new/old (the bits: ``ab.py REV --bits``).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path
from types import ModuleType
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "examples"))

import ab  # noqa: E402


def _cases(pkg: ModuleType, tag: str) -> list[Any]:
    k, s, _io = ab.modules(pkg, tag)
    sys.modules["scale"] = s
    ps = ab.rebound(HERE / "plans_speed.py", f"plans_speed_{tag}", pkg)
    return ps.cases()  # type: ignore[no-any-return]


def _cpu(fn: Any, k: int) -> float:
    c0 = time.process_time()
    for _ in range(k):
        fn()
    return (time.process_time() - c0) / k


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("rev")
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--only", default="")
    ap.add_argument("--scale", type=int, default=10)
    ns = ap.parse_args()
    from scale import cpu_name

    with tempfile.TemporaryDirectory() as tmp:
        old_pkg = ab.other_revision(ns.rev, Path(tmp))
        new_cases = _cases(ab.NEW, "new")
        old_cases = _cases(old_pkg, "old")
        print(f"CPU: {cpu_name()}; planned launches, medians of {ns.rounds} alternating "
              f"rounds (process CPU time per launch; x: against numpy's version)")
        for (name, np_fn, new_fn, k, _), (_n, _np, old_fn, _k, _s) in zip(
                new_cases, old_cases, strict=True):
            if ns.only not in name:
                continue
            for f in (new_fn, old_fn):
                for _ in range(3):  # (first launch, record, a replay)
                    f(True)
            k *= ns.scale
            rows: dict[str, list[float]] = {"np": [], "new": [], "old": []}
            for _ in range(ns.rounds):
                rows["new"].append(_cpu(lambda f=new_fn: f(True), k))
                rows["old"].append(_cpu(lambda f=old_fn: f(True), k))
                rows["np"].append(_cpu(np_fn, k))
            med = {w: statistics.median(v) for w, v in rows.items()}
            x = {w: statistics.median(a / b for a, b in zip(rows[w], rows["np"], strict=True))
                 for w in ("new", "old")}
            r = statistics.median(a / b for a, b in zip(rows["new"], rows["old"], strict=True))
            print(f"{name:44s} old {med['old'] * 1e3:7.3f} ms ({x['old']:5.2f}x)  new "
                  f"{med['new'] * 1e3:7.3f} ms ({x['new']:5.2f}x)  numpy "
                  f"{med['np'] * 1e3:7.3f} ms  new/old {r:5.3f}", flush=True)


if __name__ == "__main__":
    main()

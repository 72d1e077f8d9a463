"""Execution plans (ptoisa/plans.py) on the goal kernels of issue #29: each ``.pto`` kernel
interpreted (``plans=False``) and replayed from its plan, rounds alternating, against the
plain-numpy version of the same maths, in process CPU time (run it with
``OPENBLAS_NUM_THREADS=1``) and wall time.

    OPENBLAS_NUM_THREADS=1 python benchmarks/plans_speed.py [--rounds N] [--only TEXT]
        [--no-batches] [--no-chains]

Prints per kernel the median per launch of each way, its ratio to numpy, the time the plan
took to record (its second launch, see ptoisa/plans.py), its hit rate and the loops its plans
run as one batch (ptoisa/plan_loops.py; ``--no-batches``: plans without batches;
``--no-chains``: accumulating loops not batched). The eager kernels
(``pto.launch(..., plans=True)``) are measured by benchmarks/eager_plans_speed.py.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "examples"))

import ptoisa as pto  # noqa: E402

Case = tuple[str, Callable[[], Any], Callable[[bool], Any], int, Callable[[], Any]]


def cases() -> list[Case]:
    import flash_softmax as fs  # examples/
    import kernels as k
    import scale as s

    out: list[Case] = []
    prog = pto.load(fs.PTO_FILE)
    x = np.random.default_rng(0).standard_normal(8 * fs.ROWS * fs.BC, dtype=np.float32)
    p = np.zeros_like(x)

    def np_softmax() -> Any:
        z = x.reshape(-1, fs.BC)
        e = np.exp(z - z.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)
    for fn in ("flash_softmax_single", "flash_softmax_double"):
        out.append((f".pto {fn} (8 x 16x128 f32)", np_softmax,
                    lambda on, fn=fn: prog.run(fn, x, p, plans=on), 20,
                    lambda fn=fn: _stats(prog, fn)))
    n = 1 << 20
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal(n, dtype=np.float32), rng.standard_normal(n, dtype=np.float32)
    c = np.zeros(n, np.float32)
    va = pto.load(k.vec_add_pto(n // k.VA_C))
    out.append((".pto vec-add 1M f32 (256 blocks of 64x64)", lambda: a + b,
                lambda on: va.vec_add(a, b, c, blocks=256, plans=on), 20,
                lambda: _stats(va, "vec_add")))
    for name, _size, np_fn, k_fn, _check in s.corpus_decode_cases("a2a3"):
        prog_q = next(v.cell_contents for v in k_fn.__closure__ or ()
                      if isinstance(v.cell_contents, pto.Program))
        fn_q = prog_q.entry
        out.append((name, np_fn, _with_plans(prog_q, k_fn), 3,
                    lambda prog_q=prog_q, fn_q=fn_q: _stats(prog_q, fn_q)))
    return out


def _with_plans(prog: pto.Program, fn: Callable[[], Any]) -> Callable[[bool], Any]:
    """``fn`` (which calls ``prog.run``) with ``plans=on`` passed through."""
    run = prog.run

    def call(on: bool) -> Any:
        prog.run = lambda *a, **kw: run(*a, plans=on, **kw)  # type: ignore[method-assign]
        try:
            return fn()
        finally:
            del prog.run
    return call


def _timed(fn: Callable[[], Any], k: int) -> tuple[float, float]:
    c0, w0 = time.process_time(), time.perf_counter()
    for _ in range(k):
        fn()
    return (time.process_time() - c0) / k, (time.perf_counter() - w0) / k


def add_switches(ap: argparse.ArgumentParser) -> None:
    """The plan switches an A/B run turns off (this script and eager_plans_speed.py)."""
    ap.add_argument("--no-batches", action="store_true",
                    help="plans run loops as recorded (ptoisa.plans.BATCH_LOOPS off)")
    ap.add_argument("--no-chains", action="store_true",
                    help="accumulating loops run as recorded (ptoisa.plan_loops.BATCH_CHAINS "
                    "off)")


def apply_switches(ns: argparse.Namespace) -> None:
    if ns.no_batches:
        from ptoisa import plans
        plans.BATCH_LOOPS = False
    if ns.no_chains:
        from ptoisa import plan_loops
        plan_loops.BATCH_CHAINS = False


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--only", default="")
    add_switches(ap)
    ns = ap.parse_args()
    apply_switches(ns)
    from scale import cpu_name

    print(f"CPU: {cpu_name()}; per launch, medians of {ns.rounds} alternating rounds")
    print(f"{'kernel':44s} {'interpreted':>22s} {'plan':>22s} {'record':>8s}  hits  batched")
    print(f"{'':44s} {'cpu ms (x np) wall ms':>22s} {'cpu ms (x np) wall ms':>22s}")
    for name, np_fn, k_fn, k, stats_of in cases():
        if ns.only not in name:
            continue
        k_fn(False)
        k_fn(True)  # (a signature's first launch runs interpreted)
        t0 = time.process_time()
        k_fn(True)  # the second records
        rec = time.process_time() - t0
        rows: dict[str, list[tuple[float, float]]] = {"np": [], "off": [], "on": []}
        for _ in range(ns.rounds):
            rows["np"].append(_timed(np_fn, k))
            rows["off"].append(_timed(lambda f=k_fn: f(False), k))
            rows["on"].append(_timed(lambda f=k_fn: f(True), k))
        med = {w: (statistics.median(c for c, _ in r), statistics.median(x for _, x in r))
               for w, r in rows.items()}
        ratio = {w: statistics.median(c / n for (c, _), (n, _) in
                                      zip(rows[w], rows["np"], strict=True))
                 for w in ("off", "on")}
        st = stats_of()
        stats = f"{st.hits}/{st.hits + st.interpreted}"
        print(f"{name:44s} {med['off'][0] * 1e3:7.3f} ({ratio['off']:5.2f}x) "
              f"{med['off'][1] * 1e3:7.3f} {med['on'][0] * 1e3:7.3f} ({ratio['on']:5.2f}x) "
              f"{med['on'][1] * 1e3:7.3f} {rec * 1e3:7.1f}ms  {stats}  {st.batched}", flush=True)
    print("numpy per launch is the 'x np' denominator (same rounds, same process)")


def _stats(prog: pto.Program, fn: str) -> Any:
    return prog.compiler(prog.target).function(fn)._plans.stats  # type: ignore[attr-defined]


if __name__ == "__main__":
    main()

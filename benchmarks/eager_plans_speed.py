"""Execution plans of eager kernels (ptoisa/eager_plans.py) on the goal kernels of issue #29:
each ``pto.launch`` kernel interpreted and replayed from its plan (``plans=True``), rounds
alternating, against the plain-numpy version of the same maths, in process CPU time (run it
with ``OPENBLAS_NUM_THREADS=1``) and wall time.

    OPENBLAS_NUM_THREADS=1 python benchmarks/eager_plans_speed.py [--rounds N] [--only TEXT]
        [--no-batches] [--no-chains] [--warm N] [--swap]

Prints per kernel the median per launch of each way, its ratio to numpy (the median of the
rounds' ratios), the time the two recording launches and the plan's check took together (see
ptoisa/eager_plans.py), the case's replays and the repeated runs of instructions its plan
runs as one batch (ptoisa/plan_loops.py; ``--no-batches``: plans without batches;
``--no-chains``: accumulating loops not batched; ``--warm N``: each way launched N times
untimed before its timing in every round, as a user's loop runs it: after the interpreted
way's round the first launches of the next are slower, numpy's adds into a 4 MiB output
among them, for several launches; ``--swap``: every other round runs its ways in the
opposite order, so numpy's way and the planned one each come right after the interpreted
one in half the rounds). Every planned result is checked bit for bit against the
interpreted one first.
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

import ptoisa as pto  # noqa: E402
from ptoisa import eager_plans  # noqa: E402

#: (name, numpy's version, the launch given plans on/off, launches per timing, the kernel,
#: the output arrays)
Case = tuple[str, Callable[[], Any], Callable[[bool], Any], int, Callable[..., Any],
             list[np.ndarray]]


def cases() -> list[Case]:
    import cycles_timing as ct
    import kernels as k
    import scale as s

    out: list[Case] = []
    rng = np.random.default_rng(1)
    for blocks, tiles in ((1, 256), (24, 24 * 11)):
        n = tiles * k.VR_C
        x, y = rng.standard_normal(n, dtype=np.float32), rng.standard_normal(n, dtype=np.float32)
        z = np.zeros(n, np.float32)
        out.append((f"vec-add {n} f32, {blocks} block(s), 1x4096 tiles",
                    lambda x=x, y=y: x + y,
                    lambda on, x=x, y=y, z=z, b=blocks: pto.launch(
                        k.vec_add_rows, x, y, z, blocks=b, plans=on), 10, k.vec_add_rows, [z]))
    h = 8
    a = rng.standard_normal((h, 16, 512)).astype(s.BF16)
    b = rng.standard_normal((h, 512, 64)).astype(s.BF16)
    c = np.zeros((h, 16, 64), np.float32)
    out.append(("bf16 decode chain 8 x 16x512 @ 512x64, 1 block",
                lambda: [a[i].astype(np.float32) @ b[i].astype(np.float32) for i in range(h)],
                lambda on: pto.launch(s.chain, a, b, c, blocks=1, plans=on), 10, s.chain, [c]))
    kk = 25600
    px = rng.standard_normal((16, kk)).astype(s.BF16)
    pw = (rng.standard_normal((kk, 128)) * 0.05).astype(s.BF16)
    py = np.zeros((16, 128), np.float32)
    out.append(("bf16 decode projection 16x25600 @ 25600x128",
                lambda: px.astype(np.float32) @ pw.astype(np.float32),
                lambda on: pto.launch(s.gemm, px, pw, py, 16, kk, 128, 16, 256, 128, blocks=1,
                                      plans=on), 3, s.gemm, [py]))
    n = 512
    ga = rng.standard_normal((n, n)).astype(np.float16)
    gb = rng.standard_normal((n, n)).astype(np.float16)
    gc = np.zeros((n, n), np.float32)
    gemm = ct.make_gemm(n, 4)
    out.append(("GEMM 512^3 f16->f32, 4 blocks, 128^3 tiles",
                lambda: ga.astype(np.float32) @ gb.astype(np.float32),
                lambda on: pto.launch(gemm, ga, gb, gc, blocks=4, plans=on), 3, gemm, [gc]))
    xs, ys = rng.standard_normal(1 << 20, dtype=np.float32), rng.standard_normal(
        1 << 20, dtype=np.float32)
    zs = np.zeros(1 << 20, np.float32)
    out.append(("vec-add 1M f32, 256 blocks of 64x64", lambda: xs + ys,
                lambda on: pto.launch(k.vec_add, xs, ys, zs, blocks=256, plans=on), 10,
                k.vec_add, [zs]))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--only", default="")
    from plans_speed import _timed, add_switches, apply_switches

    add_switches(ap)
    ap.add_argument("--warm", type=int, default=0,
                    help="untimed launches of each way before its timing in every round")
    ap.add_argument("--swap", action="store_true",
                    help="every other round in the opposite order (planned, interpreted, "
                    "numpy): numpy's way follows the interpreted one as often as the plan")
    ns = ap.parse_args()
    apply_switches(ns)
    from scale import cpu_name

    print(f"CPU: {cpu_name()}; per launch, medians of {ns.rounds} alternating rounds"
          + (" (every other one in the opposite order)" if ns.swap else ""))
    print(f"{'kernel':48s} {'interpreted':>22s} {'plan':>22s} {'record':>8s}  hits  batched")
    print(f"{'':48s} {'cpu ms (x np) wall ms':>22s} {'cpu ms (x np) wall ms':>22s}")
    for name, np_fn, k_fn, k, kernel, outs in cases():
        if ns.only not in name:
            continue
        k_fn(False)
        want = [o.copy() for o in outs]
        st0 = eager_plans.stats(kernel)
        hits0, batched0 = (st0.hits, st0.batched) if st0 is not None else (0, 0)
        t0 = time.process_time()
        k_fn(True)  # (a signature's first two launches record, the third checks the plan)
        k_fn(True)
        k_fn(True)
        rec = time.process_time() - t0
        for o in outs:
            o[...] = 0
        k_fn(True)
        for o, w in zip(outs, want, strict=True):
            if o.tobytes() != w.tobytes():
                raise SystemExit(f"{name}: the plan's bits differ from the interpreter's")
        rows: dict[str, list[tuple[float, float]]] = {"np": [], "off": [], "on": []}
        for r in range(ns.rounds):
            ways = [("np", np_fn), ("off", lambda f=k_fn: f(False)),
                    ("on", lambda f=k_fn: f(True))]
            for way, fn in (ways[::-1] if ns.swap and r % 2 else ways):
                for _ in range(ns.warm):
                    fn()
                rows[way].append(_timed(fn, k))
        med = {w: (statistics.median(c for c, _ in r), statistics.median(x for _, x in r))
               for w, r in rows.items()}
        ratio = {w: statistics.median(c / n for (c, _), (n, _) in
                                      zip(rows[w], rows["np"], strict=True))
                 for w in ("off", "on")}
        st = eager_plans.stats(kernel)
        assert st is not None
        print(f"{name:48s} {med['off'][0] * 1e3:7.3f} ({ratio['off']:5.2f}x) "
              f"{med['off'][1] * 1e3:7.3f} {med['on'][0] * 1e3:7.3f} ({ratio['on']:5.2f}x) "
              f"{med['on'][1] * 1e3:7.3f} {rec * 1e3:7.1f}ms  {st.hits - hits0}  "
              f"{st.batched - batched0}"
              + (f"  ({st.why})" if st.why else ""), flush=True)
        print(f"{'':48s} numpy {med['np'][0] * 1e3:.3f} ms cpu, {med['np'][1] * 1e3:.3f} ms wall")


if __name__ == "__main__":
    main()

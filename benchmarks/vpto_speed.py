"""Register-level (VPTO) kernels against numpy (issue #28 item 6): ``benchmarks/vpto/*.pto``,
each a vecscope loop of 256-byte micro-ops over 1M f32 moved through UB in 64 KiB chunks by
the MTE DMA micro-ops, run batched (the chunk loop as one pass over all chunks,
``ptoisa/interp/vchunk.py``, its vecscope loop as rows, ``ptoisa/interp/vbatch.py``) and,
for the "before" figure, one micro-op at a time (``vbatch.ENABLED = False``), against the
same maths in numpy.

    python benchmarks/vpto_speed.py [--rounds N] [--per-op-rounds N]

One BLAS / OpenMP thread is forced before numpy loads. Headline: process CPU time
(``time.process_time``), median per launch, numpy and the batched kernel alternating round
by round, the ratio the median of the rounds' ratios; wall time beside it. Each launch is checked:
the vector add bit for bit against numpy's add, the softmax update against numpy within
1e-6 relative (VEXP computes f32 lanes in f64 and rounds once, numpy's f32 exp may differ
by an ulp); the batched and per-op runs bit for bit against each other.
"""

from __future__ import annotations

import os

for _v in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_v, "1")

import argparse  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import numpy as np  # noqa: E402

from ptoisa.interp import load, vbatch, vchunk  # noqa: E402

HERE = Path(__file__).resolve().parent
N = 1 << 20


def cpu_name() -> str:
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, check=True).stdout
        for line in out.splitlines():
            if line.startswith("Model name:"):
                return line.split(":", 1)[1].strip()
    except (OSError, subprocess.CalledProcessError):
        pass
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return "unknown"


def timed(fn: Callable[[], Any], rounds: int) -> tuple[float, float]:
    """(median CPU seconds, median wall seconds) of ``rounds`` calls."""
    cpu, wall = [], []
    for _ in range(rounds):
        c, w = time.process_time(), time.perf_counter()
        fn()
        cpu.append(time.process_time() - c)
        wall.append(time.perf_counter() - w)
    return statistics.median(cpu), statistics.median(wall)


def vadd_case() -> tuple[str, Any, str, list[np.ndarray], Callable[[list[np.ndarray]], Any],
                         Callable[[list[np.ndarray], list[np.ndarray]], None]]:
    rng = np.random.default_rng(0)
    x = rng.standard_normal(N).astype(np.float32)
    y = rng.standard_normal(N).astype(np.float32)
    z = np.zeros(N, np.float32)

    def ref(a: list[np.ndarray]) -> Any:
        return np.add(a[0], a[1])

    def check(before: list[np.ndarray], after: list[np.ndarray]) -> None:
        assert after[2].tobytes() == np.add(before[0], before[1]).tobytes(), "vadd differs"
    prog = load((HERE / "vpto/vadd_1m.pto").read_text(), target="a5")
    return "VPTO vadd, 1M f32", prog, "vadd_1m", [x, y, z], ref, check


def softmax_case() -> tuple[str, Any, str, list[np.ndarray], Callable[[list[np.ndarray]], Any],
                            Callable[[list[np.ndarray], list[np.ndarray]], None]]:
    rng = np.random.default_rng(1)
    m = rng.standard_normal(N).astype(np.float32)
    l = rng.uniform(1, 100, N).astype(np.float32)  # noqa: E741 - the running sum's name
    s = (rng.standard_normal(N) * 2).astype(np.float32)

    def ref(a: list[np.ndarray]) -> Any:
        mn = np.maximum(a[0], a[2])
        return mn, a[1] * np.exp(a[0] - mn) + np.exp(a[2] - mn)

    def check(before: list[np.ndarray], after: list[np.ndarray]) -> None:
        mn, ln = ref(before)
        assert after[0].tobytes() == mn.tobytes(), "running max differs"
        np.testing.assert_allclose(after[1], ln, rtol=1e-6)
    prog = load((HERE / "vpto/online_softmax_1m.pto").read_text(), target="a5")
    return "VPTO online-softmax update, 1M f32", prog, "online_softmax_1m", [m, l, s], ref, check


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--per-op-rounds", type=int, default=3)
    a = ap.parse_args()
    print(f"CPU: {cpu_name()} ({os.cpu_count()} logical CPUs); load average "
          f"{os.getloadavg()[0]:.2f}; numpy {np.__version__}; one BLAS thread")
    print()
    print("| case | numpy CPU (wall) | batched CPU (wall) | ratio | per-op CPU (wall) | ratio |")
    print("|---|---|---|---|---|---|")
    for make in (vadd_case, softmax_case):
        print(row(make, a.rounds, a.per_op_rounds))


def row(make: Callable[[], Any], rounds: int, per_op_rounds: int) -> str:
    """One case: checked both ways, then timed: numpy, batched, per op."""
    title, prog, fn, inputs, ref, check = make()
    outs = {}
    for on in (True, False):
        vbatch.ENABLED = on
        args = [x.copy() for x in inputs]
        before = vchunk.stats["batched"]
        prog.run(fn, *args)  # (compiles)
        check(inputs, args)
        outs[on] = args
        assert vchunk.stats["batched"] - before == int(on), f"{title}: chunk loop not batched"
    for x, y in zip(outs[True], outs[False], strict=True):
        assert x.tobytes() == y.tobytes(), f"{title}: batched and per-op bits differ"
    args = [x.copy() for x in inputs]
    vbatch.ENABLED = True
    # numpy and the batched run alternate, round by round: the ratio is the median of the
    # rounds' ratios (a shared machine's load moves both alike within a round)
    np_c, np_w, b_c, b_w = [], [], [], []
    for _ in range(rounds):
        c, w = timed(lambda: ref(inputs), 1)
        np_c.append(c)
        np_w.append(w)
        c, w = timed(lambda: prog.run(fn, *args), 1)
        b_c.append(c)
        b_w.append(w)
    ratio = statistics.median(b / n for b, n in zip(b_c, np_c, strict=True))
    c_np, w_np = statistics.median(np_c), statistics.median(np_w)
    c_b, w_b = statistics.median(b_c), statistics.median(b_w)
    vbatch.ENABLED = False
    c_p, w_p = timed(lambda: prog.run(fn, *args), per_op_rounds)
    vbatch.ENABLED = True
    return (f"| {title} | {1e3 * c_np:.2f} ms ({1e3 * w_np:.2f}) | {1e3 * c_b:.2f} ms "
            f"({1e3 * w_b:.2f}) | {ratio:.1f}x | {1e3 * c_p:.0f} ms ({1e3 * w_p:.0f}) | "
            f"{c_p / c_np:.0f}x |")


if __name__ == "__main__":
    main()

"""The performance benchmarks: each kernel eager and as .pto, over a grid of blocks, against
plain numpy in the same process. Prints one table; exits 1 if any result is wrong.

    python benchmarks/run.py [--target cpu|a2a3|a5] [--repeat N] [--rss]

Ratios are medians of ``--repeat`` runs (these machines are noisy: compare ratios, not
times). ``--rss`` also measures the peak resident memory of the GEMM, ptoisa against numpy,
each in a fresh process.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import kernels as K  # noqa: E402

import ptoisa as pto  # noqa: E402
from ptoisa.sanitizer import Sanitizer  # noqa: E402


def median_ms(fn: Callable[[], Any], repeat: int) -> float:
    fn()  # warm up (compile, caches)
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e3


def paired_ratio(base: Callable[[], Any], timed: Callable[[], Any], repeat: int) -> float:
    """Median over alternating runs of time(timed) / time(base): the extra cost of the cycle
    model, measured so that the machine's load drifts affect both sides alike."""
    base()
    timed()
    ratios = []
    for _ in range(max(repeat, 15)):
        t0 = time.perf_counter()
        base()
        t1 = time.perf_counter()
        timed()
        t2 = time.perf_counter()
        ratios.append((t2 - t1) / (t1 - t0))
    return statistics.median(ratios)


def check(name: str, got: np.ndarray, want: np.ndarray, rtol: float, atol: float) -> None:
    if not np.allclose(got, want, rtol=rtol, atol=atol):
        err = np.abs(got.astype(np.float64) - want).max()
        raise SystemExit(f"{name}: WRONG RESULT (max abs error {err:.3g})")


def bench_vec_add(target: str, repeat: int) -> list[tuple[str, float, float, float, float]]:
    n = 1 << 20
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal(n, dtype=np.float32), rng.standard_normal(n, dtype=np.float32)
    z = np.zeros(n, np.float32)
    blocks = n // (K.VA_R * K.VA_C)
    t_np = median_ms(lambda: x + y, repeat)
    t_eager = median_ms(lambda: pto.launch(K.vec_add, x, y, z, blocks=blocks, target=target),
                        repeat)
    check("vec-add eager", z, x + y, 0, 0)
    prog = pto.load(K.vec_add_pto(n // K.VA_C), target=target)
    z[:] = 0
    t_pto = median_ms(lambda: prog.vec_add(x, y, z, blocks=blocks), repeat)
    check("vec-add .pto", z, x + y, 0, 0)
    c_eager, c_pto, s_eager, s_pto = observer_ratios(
        lambda **kw: pto.launch(K.vec_add, x, y, z, blocks=blocks, target=target, **kw),
        lambda **kw: prog.vec_add(x, y, z, blocks=blocks, **kw), repeat)
    return [("vec-add 1M f32, 256 blocks", t_np, t_eager, c_eager, s_eager),
            ("", t_np, t_pto, c_pto, s_pto)]


def observer_ratios(eager: Any, pto_run: Any, repeat: int
                    ) -> tuple[float, float, float, float]:
    """Extra run time of the cycle model and of the sanitizer, eager and .pto: paired ratios of
    ``run(cycles=True)`` / ``run(sanitize=...)`` to ``run()``."""
    def timed(run: Any) -> Any:
        return lambda: run(cycles=True).total

    return (paired_ratio(eager, timed(eager), repeat),
            paired_ratio(pto_run, timed(pto_run), repeat),
            paired_ratio(eager, lambda: eager(sanitize=Sanitizer()), repeat),
            paired_ratio(pto_run, lambda: pto_run(sanitize=Sanitizer()), repeat))


def _softmax_ref(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def bench_softmax(target: str, repeat: int) -> list[tuple[str, float, float, float, float]]:
    rows, cols = 4096, 1024
    x = np.random.default_rng(1).standard_normal((rows, cols), dtype=np.float32)
    out = np.zeros_like(x)
    blocks = rows // K.SM_R
    t_np = median_ms(lambda: _softmax_ref(x), repeat)
    ref = _softmax_ref(x)
    t_eager = median_ms(lambda: pto.launch(K.softmax, x, out, blocks=blocks, target=target),
                        repeat)
    check("softmax eager", out, ref, 1e-5, 1e-7)
    prog = pto.load(K.softmax_pto(rows), target=target)
    out[:] = 0
    t_pto = median_ms(lambda: prog.softmax(x, out, blocks=blocks), repeat)
    check("softmax .pto", out, ref, 1e-5, 1e-7)
    c_eager, c_pto, s_eager, s_pto = observer_ratios(
        lambda **kw: pto.launch(K.softmax, x, out, blocks=blocks, target=target, **kw),
        lambda **kw: prog.softmax(x, out, blocks=blocks, **kw), repeat)
    return [("row softmax 4096x1024 f32, 512 blocks", t_np, t_eager, c_eager, s_eager),
            ("", t_np, t_pto, c_pto, s_pto)]


def bench_gemm(target: str, repeat: int) -> list[tuple[str, float, float, float, float]]:
    n = K.GM_N
    rng = np.random.default_rng(2)
    a = rng.standard_normal((n, n)).astype(np.float16)
    b = rng.standard_normal((n, n)).astype(np.float16)
    c = np.zeros((n, n), np.float32)
    blocks = K.GM_GRID * K.GM_GRID
    t_np = median_ms(lambda: a.astype(np.float32) @ b.astype(np.float32), repeat)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    t_eager = median_ms(lambda: pto.launch(K.gemm, a, b, c, blocks=blocks, target=target),
                        repeat)
    check("gemm eager", c, ref, 1e-4, 1e-3)
    prog = pto.load(K.gemm_pto(), target=target)
    c[:] = 0
    t_pto = median_ms(lambda: prog.gemm(a, b, c, blocks=blocks), repeat)
    check("gemm .pto", c, ref, 1e-4, 1e-3)
    c_eager, c_pto, s_eager, s_pto = observer_ratios(
        lambda **kw: pto.launch(K.gemm, a, b, c, blocks=blocks, target=target, **kw),
        lambda **kw: prog.gemm(a, b, c, blocks=blocks, **kw), repeat)
    return [("GEMM 512^3 f16->f32, 64 blocks x 8 K-steps", t_np, t_eager, c_eager, s_eager),
            ("", t_np, t_pto, c_pto, s_pto)]


def bench_overhead(target: str, cycles: bool = False,
                   sanitize: bool = False) -> tuple[float, float]:
    import interp_overhead as io

    prog = pto.load(io.program(), target=target)
    a = np.random.default_rng(3).standard_normal((16, 16)).astype(np.float32)
    c = np.zeros_like(a)
    n = 10_000
    prog.loop(a, c, 1)

    def run(count: int) -> Callable[[], None]:
        def f() -> None:
            c[...] = 0
            prog.loop(a, c, count, cycles=cycles,
                      sanitize=Sanitizer(sync="manual") if sanitize else False)
        return f

    t_loop = min(median_ms(run(n), 3), median_ms(run(n), 3))
    t_empty = median_ms(run(0), 3)
    ref = np.zeros_like(a)

    def plain() -> None:
        ref[...] = 0
        for _ in range(n):
            np.add(ref, a, out=ref)
    t_np = median_ms(plain, 3)
    return (t_loop - t_empty) / n * 1e3, t_np / n * 1e3


def rss_child(which: str) -> None:
    """Run one GEMM in this process and print its peak RSS (KiB)."""
    n = K.GM_N
    rng = np.random.default_rng(2)
    a = rng.standard_normal((n, n)).astype(np.float16)
    b = rng.standard_normal((n, n)).astype(np.float16)
    if which == "numpy":
        c = a.astype(np.float32) @ b.astype(np.float32)
    else:
        c = np.zeros((n, n), np.float32)
        pto.launch(K.gemm, a, b, c, blocks=K.GM_GRID * K.GM_GRID)
    assert c.shape == (n, n)
    print(_peak_rss_kib())


def _peak_rss_kib() -> int:
    """VmHWM of this process (getrusage's ru_maxrss would include the parent's RSS at fork,
    which survives exec on Linux)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise SystemExit("no VmHWM in /proc/self/status: cannot measure peak RSS here")


# the numpy baseline process imports nothing but numpy
_NUMPY_ONLY = """
import numpy as np
rng = np.random.default_rng(2)
a = rng.standard_normal((512, 512)).astype(np.float16)
b = rng.standard_normal((512, 512)).astype(np.float16)
c = a.astype(np.float32) @ b.astype(np.float32)
hwm = [l for l in open("/proc/self/status") if l.startswith("VmHWM:")][0]
print(int(hwm.split()[1]))
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--target", default="all", choices=["all", "cpu", "a2a3", "a5"],
                    help="target profile (default: cpu and a5)")
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--rss", action="store_true")
    ap.add_argument("--rss-child", choices=["numpy", "ptoisa"], help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.rss_child:
        rss_child(args.rss_child)
        return
    targets = ["cpu", "a5"] if args.target == "all" else [args.target]
    print(f"median of {args.repeat} runs; ratio = ptoisa / numpy (goals: vec-add and softmax "
          "<= 2, GEMM <= 3)\ncycles=True: extra time of the cycle model, median of paired runs "
          "(goal <= 20%)\nsanitize: time with sanitize=Sanitizer() / plain time, median of "
          "paired runs (goal <= 5)")
    print(f"{'kernel':44s} {'target':6s} {'path':6s} {'numpy ms':>9s} {'ptoisa ms':>10s} "
          f"{'ratio':>6s} {'cycles=True':>11s} {'sanitize':>8s}")
    for tgt in targets:
        rows: list[tuple[str, float, float, float, float]] = []
        rows += bench_vec_add(tgt, args.repeat)
        rows += bench_softmax(tgt, args.repeat)
        rows += bench_gemm(tgt, args.repeat)
        for (name, t_np, t, t_c, t_s), path in zip(rows, ["eager", ".pto"] * 3, strict=True):
            print(f"{name:44s} {tgt:6s} {path:6s} {t_np:9.2f} {t:10.2f} {t / t_np:6.2f} "
                  f"{100 * (t_c - 1):+10.0f}% {t_s:7.2f}x")
    for tgt in targets:
        per, per_np = bench_overhead(tgt)
        print(f"interpreter ({tgt}): 10,000 x 16x16 f32 tadd in a .pto loop: {per:.2f} "
              f"us/instr, numpy call {per_np:.2f} us, overhead {per - per_np:.2f} us/instr "
              "(goal <= 3)")
        per_c, _ = bench_overhead(tgt, cycles=True)
        print(f"  with cycles=True: {per_c:.2f} us/instr (+{per_c - per:.2f} us/instr for the "
              "cycle model)")
        per_s, _ = bench_overhead(tgt, sanitize=True)
        print(f"  with the sanitizer (races checked): {per_s:.2f} us/instr "
              f"({per_s / per:.2f}x)")
    if args.rss:
        kib = {}
        for which in ("numpy", "ptoisa"):
            code = _NUMPY_ONLY if which == "numpy" else None
            cmd = [sys.executable, "-c", code] if code else \
                [sys.executable, __file__, "--rss-child", which]
            out = subprocess.run(cmd, capture_output=True, text=True, check=True)
            kib[which] = int(out.stdout.strip().splitlines()[-1])
        print(f"GEMM peak RSS: numpy {kib['numpy'] / 1024:.0f} MiB, ptoisa "
              f"{kib['ptoisa'] / 1024:.0f} MiB (ratio {kib['ptoisa'] / kib['numpy']:.2f})")


if __name__ == "__main__":
    main()

"""The cycle model with and without values (issue #29 item 4): a GEMM over 24 blocks timed by
the cycle model with the values computed (``cycles=True``) and timing only
(``cycles="timing"``: shapes, addresses and costs, no tile values). The GEMM is an eager tiled
one (f16 in, f32 accumulated, 128x128 output tiles, each block takes every 24th tile, K in
steps of 128; auto sync) or, with ``--upstream``, pto-dsl's ``matmul_swizzle`` ``.pto`` from
the frontends corpus beside the checkout (f16 C = A @ B^T, 128x256 tiles, K in steps of 512,
double-buffered with set_flag / wait_flag: sizes must be multiples of 512).

    OPENBLAS_NUM_THREADS=1 python benchmarks/cycles_timing.py [--sizes 1536,3072,6144]
        [--with-values-up-to 1536] [--blocks 24] [--per-block] [--upstream]

Prints per size the process CPU time and wall time of each way, and checks that both ways
report the same cycles (total and per-pipe busy) wherever both ran. The timing-only run gets
``np.empty`` arrays (never touched: no pages are faulted in).
"""

from __future__ import annotations

import argparse
import os
import platform
import time
from pathlib import Path
from typing import Any

import kernels  # benchmarks/kernels.py: the tiled GEMM
import numpy as np

import ptoisa as pto

T = 128  # the output tile's side and the K step
UPSTREAM = (Path(__file__).resolve().parent.parent.parent / "shared" / "corpus" / "frontends"
            / "pto-dsl" / "examples" / "aot" / "matmul_swizzle" / "matmul.pto")


def make_gemm(n: int, blocks: int) -> Any:
    """An eager GEMM of n x n x n (n a multiple of 128, the tile count a multiple of blocks)."""
    grid = n // T
    tiles = grid * grid
    if n % T or tiles % blocks:
        raise SystemExit(f"size {n}: {tiles} tiles of {T}x{T} do not split over {blocks} blocks")
    per_block = tiles // blocks

    def gemm(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> None:
        blk = pto.get_block_idx()
        own = kernels.gemm_tiles(T)  # (one set per block, reused by its output tiles)
        for i in range(per_block):
            t = blk + i * blocks
            kernels.gemm_output_tile(a, b, c, n, T, t // grid, t % grid, own)

    return gemm


def run(n: int, blocks: int, values: bool, lockstep: bool | str = "auto",
        upstream: bool = False) -> tuple[Any, float, float, np.ndarray | None]:
    if values:
        rng = np.random.default_rng(0)
        a = (rng.random((n, n), np.float32) - 0.5).astype(np.float16)
        b = (rng.random((n, n), np.float32) - 0.5).astype(np.float16)
        c = np.zeros((n, n), np.float16 if upstream else np.float32)
    else:  # never read nor written: no page is touched
        a = np.empty((n, n), np.float16)
        b = np.empty((n, n), np.float16)
        c = np.empty((n, n), np.float16 if upstream else np.float32)
    cycles: bool | str = True if values else "timing"
    if upstream:
        prog = pto.load(UPSTREAM, target="a2a3")
        c0, w0 = time.process_time(), time.perf_counter()
        rep = prog.run("matmul_kernel_ABt", a.ravel(), b.ravel(), c.ravel(), n, n, n,
                       blocks=blocks, lockstep=lockstep, cycles=cycles)
        b = b.T  # (the program reads B as N x K)
    else:
        kernel = make_gemm(n, blocks)
        c0, w0 = time.process_time(), time.perf_counter()
        rep = pto.launch(kernel, a, b, c, blocks=blocks, target="a2a3", lockstep=lockstep,
                         cycles=cycles)
    cpu, wall = time.process_time() - c0, time.perf_counter() - w0
    if values:
        want = a.astype(np.float32) @ b.astype(np.float32)
        if not np.allclose(c.astype(np.float32), want, rtol=1e-2, atol=5e-2):
            raise SystemExit(f"size {n}: the GEMM's result is wrong")
    return rep, cpu, wall, None


def cpu_name() -> str:
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip() + f", {os.cpu_count()} CPUs"
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1536,3072,6144")
    ap.add_argument("--with-values-up-to", type=int, default=1536)
    ap.add_argument("--blocks", type=int, default=24)
    ap.add_argument("--per-block", action="store_true",
                    help="run the blocks one by one (each its own timeline), not in lockstep")
    ap.add_argument("--upstream", action="store_true",
                    help="pto-dsl's matmul_swizzle .pto (the frontends corpus), not the eager GEMM")
    ns = ap.parse_args()
    how: bool | str = False if ns.per_block else "auto"
    print(f"CPU: {cpu_name()}; OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS')}")
    print(f"{'GEMM':<18} {'instrs':>8} {'cycles':>12} {'with values':>22} "
          f"{'timing only':>22}")
    ran: set[bool] = set()  # the reports' lockstep flags (a diverging kernel falls back)
    for n in map(int, ns.sizes.split(",")):
        timing, tc, tw, _ = run(n, ns.blocks, False, how, ns.upstream)
        ran.add(bool(timing.lockstep))
        full = "-"
        if n <= ns.with_values_up_to:
            rep, fc, fw, _ = run(n, ns.blocks, True, how, ns.upstream)
            if (rep.total, rep.busy) != (timing.total, timing.busy):
                raise SystemExit(f"size {n}: timing only {timing.total} {timing.busy} != with "
                                 f"values {rep.total} {rep.busy}")
            full = f"{fc:8.2f} s ({fw:6.2f} s)"
        name = f"{n}^3, {ns.blocks} blocks"
        print(f"{name:<18} {len(timing.steps):>8} {timing.total:>12} {full:>22} "
              f"{f'{tc:8.2f} s ({tw:6.2f} s)':>22}", flush=True)
    modes = {True: "lockstep: one timeline for all blocks",
             False: "blocks one by one, a timeline each"}
    mode = "; ".join(modes[x] for x in sorted(ran, reverse=True))
    if not ns.per_block and ran == {False}:
        mode += " (the lockstep attempt diverged)"
    print(f"(CPU time, wall time in parentheses; instrs: recorded steps; {mode})")


if __name__ == "__main__":
    main()

"""Whole-kernel validation of the cycle model (issue #30 item 5): upstream kernels with board
times published in pto-isa's ``kernels/manual`` READMEs, written again with the eager
intrinsics instruction for instruction and flag for flag, launched with ``cycles=True`` and
compared with the published times.

    python benchmarks/kernel_ports.py [--sizes 1536,3072] [--no-check]

Ported: ``a2a3/gemm_performance`` (A3, 24 cores, fp16 in, f32 out). Our own code, written from
reading ``gemm_performance_kernel.cpp`` (pto-isa, read-only); the README's table is the board.
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

import ptoisa as pto
from ptoisa import BLayout, GlobalTensor, Layout, Pipe, SLayout, Tile, TileType

# ---- a2a3/gemm_performance ----------------------------------------------------------------------

BUFFER_NUM = 2
L0_PINGPONG_BYTES = 32 * 1024
BLOCK_DIM = 24
M_ITER = 4  # the README's 4 x 6 grouping of C over the 24 cores (6144: 1536 x 1024 per core)
BASE_M, BASE_K, BASE_N = 128, 64, 256
STEP_KA = STEP_KB = 4

#: the README's measurements (A3, 24 cores): m=k=n -> (cube, TEXTRACT, TLOAD, TSTORE ratios,
#: execution time in us)
GEMM_BOARD: dict[int, tuple[float, float, float, float, float]] = {
    1536: (0.545, 0.422, 0.722, 0.077, 38.8),
    3072: (0.790, 0.620, 0.909, 0.058, 206.7),
    6144: (0.867, 0.681, 0.952, 0.031, 1506.0),
    7680: (0.806, 0.630, 0.984, 0.024, 3168.0),
}


def gemm_performance(out: np.ndarray, src0: np.ndarray, src1: np.ndarray, size: int) -> None:
    """``RunGemmE2E`` for m = k = n = ``size``: A (m x k, ND), B stored n x k (a k x n DN view),
    C (m x n, f32). Each core owns a [singleCoreM, singleCoreN] tile of C."""
    m = k = n = size
    single_m, single_k, single_n = m // M_ITER, k, n // (BLOCK_DIM // M_ITER)
    bid = pto.get_block_idx()
    m_idx, n_idx = bid % M_ITER, bid // M_ITER
    off_a = m_idx * single_m * k
    off_b = n_idx * k * single_n
    off_c = m_idx * single_m * n + n_idx * single_n

    h = np.float16
    a_mat = [Tile(TileType.Mat, h, BASE_M, BASE_K * STEP_KA, BLayout.ColMajor, None,
                  SLayout.RowMajor) for _ in range(BUFFER_NUM)]
    b_mat = [Tile(TileType.Mat, h, BASE_K * STEP_KB, BASE_N, BLayout.RowMajor, None,
                  SLayout.ColMajor) for _ in range(BUFFER_NUM)]
    a_l0 = [pto.TileLeft(h, BASE_M, BASE_K) for _ in range(BUFFER_NUM)]
    b_l0 = [pto.TileRight(h, BASE_K, BASE_N) for _ in range(BUFFER_NUM)]
    c_tile = pto.TileAcc(np.float32, BASE_M, BASE_N)

    a_bytes, b_bytes = BASE_M * BASE_K * STEP_KA * 2, BASE_K * BASE_N * STEP_KB * 2
    pto.TASSIGN(a_mat[0], 0x0)
    pto.TASSIGN(a_mat[1], a_bytes)
    pto.TASSIGN(b_mat[0], a_bytes * BUFFER_NUM)
    pto.TASSIGN(b_mat[1], a_bytes * BUFFER_NUM + b_bytes)
    pto.TASSIGN(a_l0[0], 0x0)
    pto.TASSIGN(a_l0[1], L0_PINGPONG_BYTES)
    pto.TASSIGN(b_l0[0], 0x0)
    pto.TASSIGN(b_l0[1], L0_PINGPONG_BYTES)
    pto.TASSIGN(c_tile, 0x0)

    m_loop, n_loop, k_loop = single_m // BASE_M, single_n // BASE_N, single_k // BASE_K
    mte2, mte1 = 0, 0
    # first sync flags for the reverse dependences
    pto.SET_FLAG(Pipe.MTE1, Pipe.MTE2, 0)
    pto.SET_FLAG(Pipe.MTE1, Pipe.MTE2, 1)
    pto.SET_FLAG(Pipe.M, Pipe.MTE1, 0)
    pto.SET_FLAG(Pipe.M, Pipe.MTE1, 1)
    na, nb = a_mat[0].rows * a_mat[0].cols, b_mat[0].rows * b_mat[0].cols
    for i in range(m_loop):
        for j in range(n_loop):
            for kk in range(k_loop):
                kmod = kk % STEP_KA
                if kmod == 0:
                    gm_a = GlobalTensor(src0, (1, 1, 1, BASE_M, BASE_K * STEP_KA),
                                        (na, na, na, k, 1), Layout.ND,
                                        offset=off_a + i * single_k * BASE_M + kk * BASE_K)
                    gm_b = GlobalTensor(src1, (1, 1, 1, BASE_K * STEP_KB, BASE_N),
                                        (nb, nb, nb, 1, k), Layout.DN,
                                        offset=off_b + j * single_k * BASE_N + kk * BASE_K)
                    pto.WAIT_FLAG(Pipe.MTE1, Pipe.MTE2, mte2)
                    pto.TLOAD(a_mat[mte2], gm_a)
                    pto.SET_FLAG(Pipe.MTE2, Pipe.MTE1, 0)
                    pto.TLOAD(b_mat[mte2], gm_b)
                    pto.SET_FLAG(Pipe.MTE2, Pipe.MTE1, 1)
                    mte2 = 1 - mte2
                cur = 1 - mte2
                pto.WAIT_FLAG(Pipe.M, Pipe.MTE1, mte1)
                if kmod == 0:
                    pto.WAIT_FLAG(Pipe.MTE2, Pipe.MTE1, 0)
                pto.TEXTRACT(a_l0[mte1], a_mat[cur], 0, kmod * BASE_K)
                if kmod == 0:
                    pto.WAIT_FLAG(Pipe.MTE2, Pipe.MTE1, 1)
                pto.TEXTRACT(b_l0[mte1], b_mat[cur], (kk % STEP_KB) * BASE_K, 0)
                if (kk + 1) % STEP_KA == 0:
                    pto.SET_FLAG(Pipe.MTE1, Pipe.MTE2, cur)
                pto.SET_FLAG(Pipe.MTE1, Pipe.M, mte1)
                pto.WAIT_FLAG(Pipe.MTE1, Pipe.M, mte1)
                if kk == 0:
                    pto.TMATMUL(c_tile, a_l0[mte1], b_l0[mte1])
                else:
                    pto.TMATMUL_ACC(c_tile, c_tile, a_l0[mte1], b_l0[mte1])
                pto.SET_FLAG(Pipe.M, Pipe.MTE1, mte1)
                mte1 = 1 - mte1
            # StoreResult
            pto.SET_FLAG(Pipe.M, Pipe.FIX, 0)
            pto.WAIT_FLAG(Pipe.M, Pipe.FIX, 0)
            nc = BASE_M * BASE_N
            gm_c = GlobalTensor(out, (1, 1, 1, BASE_M, BASE_N), (nc, nc, nc, n, 1), Layout.ND,
                                offset=off_c + i * BASE_M * n + j * BASE_N)
            pto.TSTORE(gm_c, c_tile)
            pto.SET_FLAG(Pipe.FIX, Pipe.M, 0)
            pto.WAIT_FLAG(Pipe.FIX, Pipe.M, 0)
    pto.WAIT_FLAG(Pipe.M, Pipe.MTE1, 0)
    pto.WAIT_FLAG(Pipe.M, Pipe.MTE1, 1)
    pto.WAIT_FLAG(Pipe.MTE1, Pipe.MTE2, 0)
    pto.WAIT_FLAG(Pipe.MTE1, Pipe.MTE2, 1)


@dataclass
class Result:
    kernel: str
    shape: str
    predicted_us: float
    board_us: float
    busy: dict[str, float]
    board_busy: dict[str, float]
    #: the launch run with cycles=True (numerics included) / the whole-launch pricing alone
    wall_s: float
    launch_s: float
    report: Any

    @property
    def precision(self) -> float:
        return max(0.0, 1 - abs(self.predicted_us - self.board_us) / self.board_us)


def run_gemm(size: int, *, check: bool = True, timing: bool = False) -> Result:
    """One launch of the port; ``timing``: ``cycles="timing"`` (no tile values: the same
    cycles, nothing to check)."""
    if timing:
        a = np.empty((size, size), np.float16)
        b = np.empty((size, size), np.float16)
        c = np.empty((size, size), np.float32)
        check = False
    else:
        rng = np.random.default_rng(size)
        a = rng.uniform(-1, 1, (size, size)).astype(np.float16)
        b = rng.uniform(-1, 1, (size, size)).astype(np.float16)  # n x k (B transposed)
        c = np.zeros((size, size), np.float32)
    t0 = time.perf_counter()
    rep = pto.launch(gemm_performance, c, a, b, size, blocks=BLOCK_DIM, target="a2a3",
                     cycles="timing" if timing else True)
    wall = time.perf_counter() - t0
    if check:
        ref = a.astype(np.float32) @ b.astype(np.float32).T
        if not np.allclose(c, ref, rtol=1e-3, atol=1e-2):
            raise SystemExit(f"gemm_performance {size}^3: result differs from numpy")
    cube, ext, load, store, board = GEMM_BOARD[size]
    t1 = time.perf_counter()
    launch = rep.launch
    launch_s = time.perf_counter() - t1
    ratio = launch.busy_ratio()
    busy = {p: ratio.get(p, 0.0) for p in ("M", "MTE1", "MTE2", "FIX")}
    return Result("a2a3/gemm_performance", f"{size}^3 fp16, 24 cores", launch.us, board,
                  busy, {"M": cube, "MTE1": ext, "MTE2": load, "FIX": store}, wall, launch_s,
                  rep)


def table(results: list[Result]) -> str:
    lines = ["| kernel | shape | predicted us | board us | precision | per-pipe busy: "
             "predicted / board (ratio) | run + cycles / launch pricing |",
             "|---|---|---|---|---|---|---|"]
    for r in results:
        pipes = ", ".join(
            f"{p} {r.busy[p]:.2f}/{r.board_busy[p]:.2f} ({r.busy[p] / r.board_busy[p]:.2f})"
            for p in r.busy)
        lines.append(f"| {r.kernel} | {r.shape} | {r.predicted_us:.1f} | {r.board_us:.1f} | "
                     f"{r.precision:.3f} | {pipes} | {r.wall_s:.1f} s / {r.launch_s:.2f} s |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--sizes", default="1536,3072")
    ap.add_argument("--no-check", action="store_true")
    ap.add_argument("--timing", action="store_true",
                    help='cycles="timing": no tile values (fast; nothing checked)')
    ap.add_argument("--explain", action="store_true", help="print each launch's summary")
    ns = ap.parse_args(argv)
    results = []
    for s in (int(x) for x in ns.sizes.split(",")):
        r = run_gemm(s, check=not ns.no_check, timing=ns.timing)
        results.append(r)
        if ns.explain:
            print(r.report.summary(), file=sys.stderr)
        print(f"{r.shape}: {r.predicted_us:.1f} us (board {r.board_us}), "
              f"{r.wall_s:.1f} s", file=sys.stderr)
        print(table([r]), file=sys.stderr)
    print(table(results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

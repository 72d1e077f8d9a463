"""Whole-kernel validation of the cycle model (issue #30 item 5): upstream kernels with board
times published in pto-isa's ``kernels/manual`` READMEs, written again with the eager
intrinsics instruction for instruction and flag for flag, launched with ``cycles=True`` and
compared with the published times.

    python benchmarks/kernel_ports.py [--kernels gemm,fa,conv,gemm_ar,mx] [--sizes 1536,3072]
        [--fa-cores 1,2,4,8] [--fa-s1 1024,2048,4096,8192] [--fa-kernel origin|later]
        [--conv all] [--timing] [--no-check]

Ported: ``a2a3/gemm_performance`` (A3, 24 cores, fp16 in, f32 out), ``common/flash_atten``
(A2/A3 mixed cube + vector kernel, non-causal; one block per 128 rows of Q; twice: as
committed with the README's cores table, upstream 6cc68238, and the later kernel) and
``a2a3/conv2d_forward`` (A3, 24 cores, implicit GEMM through TIMG2COL) and the compute kernel
of ``a2a3/gemm_ar`` (910B, 24 cores; the README's compute-only time) and
``a5/matmul_mxfp4_performance`` (A5, 32 cores, TMATMUL_MX with fp4 e2m1 operands). Our own
code, written from reading ``gemm_performance_kernel.cpp``, ``fa_performance_kernel.cpp`` with
its ``pto_macro_*.hpp``, ``conv2d_forward_kernel.cpp``, ``gemm_compute_kernel.cpp`` and
``mxmatmul_performance_kernel.cpp`` (pto-isa, read-only); the READMEs' tables are the board.
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import ml_dtypes
import numpy as np

import ptoisa as pto
from ptoisa import (
    BLayout,
    CompactMode,
    Direction,
    GlobalTensor,
    Layout,
    Pipe,
    SLayout,
    Tile,
    TileType,
    TPipe,
)
from ptoisa.conv import ConvTile
from ptoisa.enums import AccPhase, RoundMode, STPhase
from ptoisa.isa.layout.img2col import Img2colConfig

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


def store_result(gm: GlobalTensor, acc: Tile) -> None:
    """upstream's StoreResult: the cube's tile to GM on the fix pipe, between M -> FIX and
    FIX -> M flags (gemm_performance, conv2d_forward, matmul_mxfp4_performance)."""
    pto.SET_FLAG(Pipe.M, Pipe.FIX, 0)
    pto.WAIT_FLAG(Pipe.M, Pipe.FIX, 0)
    pto.TSTORE(gm, acc)
    pto.SET_FLAG(Pipe.FIX, Pipe.M, 0)
    pto.WAIT_FLAG(Pipe.FIX, Pipe.M, 0)


def wait_sync_flags() -> None:
    """upstream's WaitSyncFlags: the ping-pong flags set ahead of the loops, waited at the end."""
    pto.WAIT_FLAG(Pipe.M, Pipe.MTE1, 0)
    pto.WAIT_FLAG(Pipe.M, Pipe.MTE1, 1)
    pto.WAIT_FLAG(Pipe.MTE1, Pipe.MTE2, 0)
    pto.WAIT_FLAG(Pipe.MTE1, Pipe.MTE2, 1)


def gemm_k_step(kk: int, mte2: int, mte1: int, src0: np.ndarray, src1: np.ndarray, k: int,
                base_a: int, base_b: int, a_mat: list[Tile], b_mat: list[Tile],
                a_l0: list[Tile], b_l0: list[Tile], c_tile: Tile) -> tuple[int, int]:
    """``ProcessKIteration`` of the A3 GEMM kernels (gemm_performance, gemm_ar's compute):
    every STEP_KA steps TLOAD the next A and B panels (ping-pong in L1), TEXTRACT this step's
    L0 halves, TMATMUL(_ACC) into ``c_tile``; returns the new (mte2, mte1) ping-pong ids."""
    kmod = kk % STEP_KA
    na, nb = a_mat[0].rows * a_mat[0].cols, b_mat[0].rows * b_mat[0].cols
    if kmod == 0:
        gm_a = GlobalTensor(src0, (1, 1, 1, BASE_M, BASE_K * STEP_KA), (na, na, na, k, 1),
                            Layout.ND, offset=base_a + kk * BASE_K)
        gm_b = GlobalTensor(src1, (1, 1, 1, BASE_K * STEP_KB, BASE_N), (nb, nb, nb, 1, k),
                            Layout.DN, offset=base_b + kk * BASE_K)
        pto.WAIT_FLAG(Pipe.MTE1, Pipe.MTE2, mte2)
        pto.TLOAD(a_mat[mte2], gm_a)
        pto.SET_FLAG(Pipe.MTE2, Pipe.MTE1, 0)
        pto.TLOAD(b_mat[mte2], gm_b)
        pto.SET_FLAG(Pipe.MTE2, Pipe.MTE1, 1)
        mte2 = 1 - mte2
    cur = 1 - mte2
    mte1 = macro_matmul(kk, kmod == 0, (kk + 1) % STEP_KA == 0, cur, mte1,
                        lambda d: pto.TEXTRACT(d, a_mat[cur], 0, kmod * BASE_K),
                        lambda d: pto.TEXTRACT(d, b_mat[cur], (kk % STEP_KB) * BASE_K, 0),
                        c_tile, a_l0, b_l0)
    return mte2, mte1


def macro_matmul(k_step: int, first: bool, last: bool, cur: int, mte1: int,
                 put_a: Callable[[Tile], Any], put_b: Callable[[Tile], Any], acc: Tile,
                 a_l0: list[Tile], b_l0: list[Tile]) -> int:
    """``MacroMatmul`` of the A3 cube kernels (gemm_performance, gemm_ar, conv2d_forward):
    ``put_a`` / ``put_b`` move K step ``k_step`` from L1 half ``cur`` into L0 half ``mte1``
    (TEXTRACT, or TIMG2COL for conv), waiting on the panel's loads when it is the ``first``
    step of its panel and giving L1 back to MTE2 after the ``last``; then TMATMUL (step 0) or
    TMATMUL_ACC into ``acc``. Returns the next L0 half."""
    pto.WAIT_FLAG(Pipe.M, Pipe.MTE1, mte1)
    if first:
        pto.WAIT_FLAG(Pipe.MTE2, Pipe.MTE1, 0)
    put_a(a_l0[mte1])
    if first:
        pto.WAIT_FLAG(Pipe.MTE2, Pipe.MTE1, 1)
    put_b(b_l0[mte1])
    if last:
        pto.SET_FLAG(Pipe.MTE1, Pipe.MTE2, cur)
    pto.SET_FLAG(Pipe.MTE1, Pipe.M, mte1)
    pto.WAIT_FLAG(Pipe.MTE1, Pipe.M, mte1)
    if k_step == 0:
        pto.TMATMUL(acc, a_l0[mte1], b_l0[mte1])
    else:
        pto.TMATMUL_ACC(acc, acc, a_l0[mte1], b_l0[mte1])
    pto.SET_FLAG(Pipe.M, Pipe.MTE1, mte1)
    return 1 - mte1


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
    for i in range(m_loop):
        for j in range(n_loop):
            for kk in range(k_loop):
                mte2, mte1 = gemm_k_step(kk, mte2, mte1, src0, src1, k,
                                         off_a + i * single_k * BASE_M,
                                         off_b + j * single_k * BASE_N,
                                         a_mat, b_mat, a_l0, b_l0, c_tile)
            nc = BASE_M * BASE_N
            store_result(GlobalTensor(out, (1, 1, 1, BASE_M, BASE_N), (nc, nc, nc, n, 1),
                                      Layout.ND, offset=off_c + i * BASE_M * n + j * BASE_N),
                         c_tile)
    wait_sync_flags()


# ---- common/flash_atten -------------------------------------------------------------------------

#: the README's "Total task time (us)" (A2/A3): cores -> {S1: us}; S0 = 128 x cores, HEAD 128,
#: CUBE_S0 = CUBE_S1 = 128; the table does not say TILE_S1: generate_cases.py's default, 256
FA_BOARD: dict[int, dict[int, float]] = {
    1: {1024: 42.08, 2048: 51.44, 4096: 43.80, 8192: 74.54},
    2: {1024: 33.201, 2048: 44.101, 4096: 43.521, 8192: 75.162},
    4: {1024: 41.721, 2048: 55.441, 4096: 46.621, 8192: 86.322},
    8: {1024: 63.72, 2048: 85.882, 4096: 64.461, 8192: 107.342},
}
#: the README's "910B2 Multi-Core Comparison" (A2, added with upstream commit a977dd1, April
#: 2026, a later kernel than the table above, which dates from the initial commit): S0 = S1 =
#: sequence length, HEAD 128 -> "PTO time (us)". The rows do not say the tiling; we assume the
#: defaults as above (CUBE_S0 128: S0 / 128 blocks). Sequence 1024 is the very shape of the
#: 8-core S1 1024 case above (536.87 MOps both), measured 20.96 us here against 63.72 there.
FA_SEQ_BOARD: dict[int, float] = {1024: 20.960, 2048: 32.461, 4096: 88.902, 8192: 292.626,
                                  16384: 909.058, 32768: 3262.645}
#: the rows run. From 4096 on the launch has 32-256 blocks for the 24 cube cores: the launch
#: model starts them together instead of queueing them behind the first 24 (not modelled), so
#: those rows are bound by the GM budgets' floor, which the queue would not change much
FA_SEQ_RUN = (1024, 2048, 4096, 8192, 16384, 32768)
#: FftsBufferFlag of the kernel: the three GM FIFOs' flag ids
FA_QK_READY, FA_SM_READY, FA_UPDATE_READY = 0, 2, 4
FA_L0_PINGPONG = 0x8000  # L0A / L0B ping-pong (32 KiB each)
FA_ACC_PINGPONG = 0x10000  # assign_running_acc_tile's two L0C addresses


@dataclass(frozen=True)
class FaConfig:
    """runTFA's template arguments (non-causal, no intermediate check, UF_ENABLE 1)."""

    s0: int
    s1: int
    head: int = 128
    cube_s0: int = 128
    cube_s1: int = 128
    tile_s1: int = 256
    preload: int = 4
    fifo: int = 8  # kFaCvFifoSize; the consumers' sync period is fifo / 2
    #: the kernel of upstream 6cc68238 (2025-12-27, the commit that added the cores table)
    #: instead of the later one: see _fa_cube_origin
    origin: bool = False

    @property
    def k_factor(self) -> int:
        return self.tile_s1 // self.cube_s1

    @property
    def blocks(self) -> int:
        return self.s0 // self.cube_s0

    @property
    def vec_s0(self) -> int:
        return self.cube_s0 // 2 // self.k_factor

    @property
    def period(self) -> int:
        return self.fifo // 2

    def pipes(self, qk_fifo: np.ndarray, p_fifo: np.ndarray, pv_fifo: np.ndarray,
              blk: Any) -> tuple[TPipe, TPipe, TPipe]:
        """The kernel's three TMPipes over this block's part of the GM FIFO buffers (one
        entry = one TILE_S1 tile: k_factor sub-tiles of CUBE_S0 x CUBE_S1, one after the
        other; PV's entry is one CUBE_S0 x HEAD tile)."""
        qk_slot = self.k_factor * self.cube_s0 * self.cube_s1 * 4
        p_slot = self.k_factor * self.cube_s0 * self.cube_s1 * 2
        pv_slot = self.cube_s0 * self.head * 4

        def region(arr: np.ndarray, slot: int) -> GlobalTensor:
            n = self.fifo * slot // arr.itemsize
            return GlobalTensor(arr, (1, 1, 1, 1, n), (n, n, n, n, 1), offset=blk * n)
        return (TPipe(FA_QK_READY, Direction.DIR_C2V, qk_slot, self.fifo,
                      buffer=region(qk_fifo, qk_slot)),
                TPipe(FA_SM_READY, Direction.DIR_V2C, p_slot, self.fifo,
                      buffer=region(p_fifo, p_slot)),
                TPipe(FA_UPDATE_READY, Direction.DIR_C2V, pv_slot, self.fifo,
                      buffer=region(pv_fifo, pv_slot)))


def _gm(arr: np.ndarray, rows: int, cols: int, row_stride: int, offset: Any,
        layout: Layout = Layout.ND) -> GlobalTensor:
    n = arr.size
    if layout is Layout.DN:  # a column-major rows x cols view, columns row_stride apart
        return GlobalTensor(arr, (1, 1, 1, rows, cols), (n, n, n, 1, row_stride), layout,
                            offset=offset)
    return GlobalTensor(arr, (1, 1, 1, rows, cols), (n, n, n, row_stride, 1), offset=offset)


def _fifo_view(arr: np.ndarray, pipe: TPipe, blk: Any, rows: int, cols: int, row_stride: int,
               slot: int, elem: int) -> GlobalTensor:
    """rows x cols of block ``blk``'s GM ring in ``arr`` (the pipe's buffer), slot ``slot``,
    element ``elem`` into it (what TMPipe's push / pop address: fifoBase + entryBase +
    entryOffset)."""
    per_slot = pipe.slot_size // arr.itemsize
    return _gm(arr, rows, cols, row_stride, blk * pipe.slot_num * per_slot + slot * per_slot
               + elem)


class _CubeState:
    """The cube's statics: pto_macro_matmul's getPingPong and assign_running_acc_tile's index
    (one per Acc tile type: QK and PV share it when HEAD == CUBE_S1, as in the C++)."""

    def __init__(self) -> None:
        self.pingpong = 0
        self.acc_idx: dict[tuple[int, int], int] = {}

    def assign_acc(self, acc: Tile, initial: int = -1) -> int:
        key = (acc.rows, acc.cols)
        if initial in (0, 1):
            self.acc_idx[key] = initial
        i = self.acc_idx.get(key, 0)
        pto.TASSIGN(acc, 0x0 if i == 0 else FA_ACC_PINGPONG)
        self.acc_idx[key] = i ^ 1
        return i


def _fitting_cube_k(m: int, n: int) -> int:
    """calculateFittingCubeK: the largest K panel (256/128/64/32) whose f16 L0A (m x K) and
    L0B (K x n) halves fit one 32 KiB ping-pong buffer."""
    for k in (256, 128, 64):
        if m * k * 2 <= FA_L0_PINGPONG and k * n * 2 <= FA_L0_PINGPONG:
            return k
    return 32


def _fa_matmul(st: _CubeState, a_mat: Tile, b_mat: Tile, acc: Tile, m: int, k: int, n: int,
               first: bool, final: bool, unit_flag: bool = True) -> None:
    """pto_macro_matmul<m, k, n>: K in panels through the L0A / L0B ping-pong (M -> MTE1 flags on
    the ping-pong id), TMATMUL / TMATMUL_ACC with the unit-flag phase of the AccMode: ``first``
    (Init*: the first panel initializes), ``final`` (*FinalSum, else *PartialSum)."""
    cube_k = min(_fitting_cube_k(m, n), k)
    segs = k // cube_k
    for s in range(segs):
        a_l0 = pto.TileLeft(np.float16, m, cube_k)
        b_l0 = pto.TileRight(np.float16, cube_k, n)
        pp = st.pingpong
        pto.TASSIGN(a_l0, pp * FA_L0_PINGPONG)
        pto.TASSIGN(b_l0, pp * FA_L0_PINGPONG)
        pto.WAIT_FLAG(Pipe.M, Pipe.MTE1, pp)
        # (the C++ moves an NT operand's base by the panel; we extract at the panel's offset:
        # the same bytes. Every shape the kernel uses has one panel.)
        pto.TEXTRACT(a_l0, a_mat, 0, s * cube_k)
        pto.TEXTRACT(b_l0, b_mat, s * cube_k, 0)
        pto.SET_FLAG(Pipe.MTE1, Pipe.M, pp)
        pto.WAIT_FLAG(Pipe.MTE1, Pipe.M, pp)
        phase = AccPhase.Final if final else AccPhase.Partial
        if not unit_flag:  # (the origin kernel's macro: no unit flag, M -> FIX flags instead)
            if first and s == 0:
                pto.TMATMUL(acc, a_l0, b_l0)
            else:
                pto.TMATMUL_ACC(acc, acc, a_l0, b_l0)
        elif first and s == 0:
            pto.TMATMUL(acc, a_l0, b_l0, Phase=phase)
        else:
            pto.TMATMUL_ACC(acc, acc, a_l0, b_l0, Phase=phase)
        pto.SET_FLAG(Pipe.M, Pipe.MTE1, pp)
        st.pingpong = 1 - pp


def _fa_cube_start(cfg: FaConfig, st: _CubeState
                   ) -> tuple[Tile, list[Tile], list[Tile], list[Tile], Tile, Tile]:
    """The cube side's start, alike in both kernels: the first M -> MTE1 flags, L1's Q x1, K x2,
    P x2, V x2 one after the other (allocate_cube_tile_buffers), the two accumulators on
    the shared L0C toggle, and the MTE1 -> MTE2 / FIX -> M flags set ahead."""
    h, f = np.float16, np.float32
    cs0, cs1, hd = cfg.cube_s0, cfg.cube_s1, cfg.head
    pto.SET_FLAG(Pipe.M, Pipe.MTE1, 0)
    pto.SET_FLAG(Pipe.M, Pipe.MTE1, 1)
    q_mat = Tile(TileType.Mat, h, cs0, hd, BLayout.ColMajor, None, SLayout.RowMajor)
    k_mat = [Tile(TileType.Mat, h, hd, cs1, BLayout.RowMajor, None, SLayout.ColMajor)
             for _ in range(2)]
    p_mat = [Tile(TileType.Mat, h, cs0, cs1, BLayout.ColMajor, None, SLayout.RowMajor)
             for _ in range(2)]
    v_mat = [Tile(TileType.Mat, h, cs1, hd, BLayout.ColMajor, None, SLayout.RowMajor)
             for _ in range(2)]
    addr = 0
    for t in [q_mat, *k_mat, *p_mat, *v_mat]:
        pto.TASSIGN(t, addr)
        addr += t.rows * t.cols * 2
    qk_acc = pto.TileAcc(f, cs0, cs1)
    pv_acc = pto.TileAcc(f, cs0, hd)
    st.assign_acc(qk_acc, 0)
    st.assign_acc(pv_acc, 1)
    for ev in range(4):
        pto.SET_FLAG(Pipe.MTE1, Pipe.MTE2, ev)
    pto.SET_FLAG(Pipe.FIX, Pipe.M, 0)
    pto.SET_FLAG(Pipe.FIX, Pipe.M, 1)
    return q_mat, k_mat, p_mat, v_mat, qk_acc, pv_acc


def _fa_vector_loop(cfg: FaConfig, compute_p: Callable[[int, int], None],
                    compute_gu: Callable[[int], None]) -> None:
    """The vector side's tile loop, alike in both kernels: P preloaded ``preload`` tiles ahead
    of the GU update, then the flags set ahead waited out."""
    n_tiles = cfg.s1 // cfg.tile_s1
    for tile in range(min(cfg.preload, n_tiles)):
        for rs in range(cfg.k_factor):
            compute_p(tile, rs)
    for tile in range(n_tiles):
        nxt = tile + cfg.preload if tile + cfg.preload < n_tiles else -1
        if nxt != -1:
            for rs in range(cfg.k_factor):
                compute_p(nxt, rs)
        compute_gu(tile)
    pto.WAIT_FLAG(Pipe.V, Pipe.MTE2, 0)
    pto.WAIT_FLAG(Pipe.V, Pipe.MTE2, 1)
    pto.WAIT_FLAG(Pipe.MTE3, Pipe.V, 0)
    pto.WAIT_FLAG(Pipe.MTE3, Pipe.V, 1)


def _fa_cube(cfg: FaConfig, q: np.ndarray, k: np.ndarray, v: np.ndarray,
             fifos: tuple[np.ndarray, ...], pipes: tuple[TPipe, TPipe, TPipe], blk: Any) -> None:
    """runTFA's DAV_CUBE side: compute_qk (QK^T -> qk FIFO) and compute_pv (P from the p FIFO
    times V -> pv FIFO), QK preloaded ``preload`` tiles ahead."""
    qk_pipe, p_pipe, pv_pipe = pipes
    qk_fifo, p_fifo, pv_fifo = fifos
    h, f = np.float16, np.float32
    cs0, cs1, hd, kf = cfg.cube_s0, cfg.cube_s1, cfg.head, cfg.k_factor
    n_tiles = cfg.s1 // cfg.tile_s1
    st = _CubeState()
    q_mat, k_mat, p_mat, v_mat, qk_acc, pv_acc = _fa_cube_start(cfg, st)
    qk_slot = _gm(np.zeros(1, f), 1, 1, 1, 0)  # the GlobalData slot views (re-pointed)
    p_slot = _gm(np.zeros(1, h), 1, 1, 1, 0)
    pv_slot = _gm(np.zeros(1, f), 1, 1, 1, 0)
    k_pp = pv_pp = 0

    def compute_qk(tile_id: int, sub: int) -> None:
        nonlocal k_pp
        ev = k_pp % 2
        s1_index = tile_id * cfg.tile_s1 + sub * cs1
        pto.WAIT_FLAG(Pipe.MTE1, Pipe.MTE2, ev)
        if tile_id == 0 and sub == 0:
            pto.TLOAD(q_mat, _gm(q, cs0, hd, hd, blk * cs0 * hd))
        pto.TLOAD(k_mat[ev], _gm(k, hd, cs1, hd, s1_index * hd, Layout.DN))
        pto.SET_FLAG(Pipe.MTE2, Pipe.MTE1, 0)
        pto.WAIT_FLAG(Pipe.MTE2, Pipe.MTE1, 0)
        _fa_matmul(st, q_mat, k_mat[ev], qk_acc, cs0, hd, cs1, first=True, final=True)
        pto.SET_FLAG(Pipe.MTE1, Pipe.MTE2, ev)
        # TPUSH(qkAcc, qkPipe): allocate at sub-tile 0 (TALLOC waits where
        # should_wait_consumption says), store at the sub-tile's entry offset with the unit
        # flag, record after the last sub-tile
        if sub == 0:
            pto.TALLOC(qk_pipe, qk_slot)
        slot = tile_id % cfg.fifo
        pto.TSTORE(_fifo_view(qk_fifo, qk_pipe, blk, cs0, cs1, cs1, slot, sub * cs0 * cs1),
                   qk_acc, Phase=STPhase.Final)
        if sub == kf - 1:
            pto.TPUSH(qk_pipe, qk_slot)
        k_pp += 1

    def compute_pv(tile_id: int, sub: int) -> None:
        nonlocal pv_pp
        b = pv_pp % 2
        ev = b + 2  # PV_EVENT_ID0 + ping-pong
        s1_index = tile_id * cfg.tile_s1 + sub * cs1
        pto.WAIT_FLAG(Pipe.MTE1, Pipe.MTE2, ev)
        pto.TLOAD(v_mat[b], _gm(v, cs1, hd, hd, s1_index * hd))
        # TPOP(pMat, pPipe): wait at sub-tile 0, load the sub-tile, free after the last one
        # (TFREE notifies where should_notify_consumption says)
        if sub == 0:
            pto.TPOP(p_pipe, p_slot)
        pto.TLOAD(p_mat[b], _fifo_view(p_fifo, p_pipe, blk, cs0, cs1, cs1, tile_id % cfg.fifo,
                                       sub * cs0 * cs1))
        if sub == kf - 1:
            pto.TFREE(p_pipe, p_slot)
        pto.SET_FLAG(Pipe.MTE2, Pipe.MTE1, 0)
        pto.WAIT_FLAG(Pipe.MTE2, Pipe.MTE1, 0)
        last = sub == kf - 1
        _fa_matmul(st, p_mat[b], v_mat[b], pv_acc, cs0, cs1, hd, first=sub == 0, final=last)
        pto.SET_FLAG(Pipe.MTE1, Pipe.MTE2, ev)
        if last:
            pto.TALLOC(pv_pipe, pv_slot)
            pto.TSTORE(_fifo_view(pv_fifo, pv_pipe, blk, cs0, hd, hd, tile_id % cfg.fifo, 0),
                       pv_acc, Phase=STPhase.Final)
            pto.TPUSH(pv_pipe, pv_slot)
        pv_pp += 1

    for tile in range(min(cfg.preload, n_tiles)):
        for sub in range(kf):
            st.assign_acc(qk_acc)
            compute_qk(tile, sub)
    for tile in range(n_tiles):
        nxt = tile + cfg.preload if tile + cfg.preload < n_tiles else -1
        if nxt != -1:
            st.assign_acc(qk_acc)
        st.assign_acc(pv_acc)
        for sub in range(kf):
            if nxt != -1:
                compute_qk(nxt, sub)
            compute_pv(tile, sub)
    pto.WAIT_FLAG(Pipe.M, Pipe.MTE1, 0)
    pto.WAIT_FLAG(Pipe.M, Pipe.MTE1, 1)
    for ev in range(4):
        pto.WAIT_FLAG(Pipe.MTE1, Pipe.MTE2, ev)
    pto.WAIT_FLAG(Pipe.FIX, Pipe.M, 0)
    pto.WAIT_FLAG(Pipe.FIX, Pipe.M, 1)


def _fa_vector(cfg: FaConfig, o: np.ndarray, fifos: tuple[np.ndarray, ...],
               pipes: tuple[TPipe, TPipe, TPipe], blk: Any) -> None:
    """runTFA's DAV_VEC side on one sub-block: compute_p (the streaming softmax of its
    CUBE_S0 / 2 rows of each QK tile, k_factor row slices of vec_s0 rows) and compute_gu (the
    running O update from the pv FIFO, normalized and stored after the last tile)."""
    qk_pipe, p_pipe, pv_pipe = pipes
    qk_fifo, p_fifo, pv_fifo = fifos
    h, f = np.float16, np.float32
    cs0, cs1, hd, kf, vs0 = cfg.cube_s0, cfg.cube_s1, cfg.head, cfg.k_factor, cfg.vec_s0
    rows_sb = cs0 // 2
    n_tiles = cfg.s1 // cfg.tile_s1
    sb = pto.get_subblock_idx()
    scale = np.float32(1.0 / np.sqrt(np.float32(cfg.head)))

    def vec(dtype: Any, rows: int, cols: int, at: int, layout: BLayout = BLayout.RowMajor,
            valid: Any = None) -> Tile:
        t = Tile(TileType.Vec, dtype, rows, cols, layout, valid)
        pto.TASSIGN(t, at)
        return t

    # UB (allocate_vec_tile_buffers): runningO, the qk / pv union x2, m1, m2, the reduce tmp
    # (1/8 of a float tile), triu, l1, l2, exp_max x fifo, x_exp x2
    f_bytes, o_bytes, r_bytes = vs0 * cfg.tile_s1 * 4, rows_sb * hd * 4, rows_sb * 4
    at = 0
    running_o = vec(f, rows_sb, hd, at)
    at += o_bytes
    stride = max(f_bytes, o_bytes)
    qk_addr = [at + i * stride for i in range(2)]
    pv_vec = [vec(f, rows_sb, hd, a) for a in qk_addr]
    at += 2 * stride
    m1_at, m2_at = at, at + r_bytes
    at += 2 * r_bytes
    tmp = vec(f, vs0, cfg.tile_s1, at)
    at += f_bytes // 8 + f_bytes  # (the tmp's eighth, then triu: unused without the mask)
    l1_at, l2_at = at, at + r_bytes
    at += 2 * r_bytes
    em_at = [at + i * r_bytes for i in range(cfg.fifo)]
    exp_max = [vec(f, rows_sb, 1, a, BLayout.ColMajor) for a in em_at]
    at += cfg.fifo * r_bytes
    x_addr = [at + i * vs0 * cfg.tile_s1 * 2 for i in range(2)]
    l2_global_sum = vec(f, rows_sb, 1, l2_at, BLayout.ColMajor)

    pto.SET_FLAG(Pipe.V, Pipe.MTE2, 0)
    pto.SET_FLAG(Pipe.V, Pipe.MTE2, 1)
    pto.SET_FLAG(Pipe.MTE3, Pipe.V, 0)
    pto.SET_FLAG(Pipe.MTE3, Pipe.V, 1)
    qk_slot = _gm(np.zeros(1, f), 1, 1, 1, 0)
    p_slot = _gm(np.zeros(1, h), 1, 1, 1, 0)
    pv_slot = _gm(np.zeros(1, f), 1, 1, 1, 0)
    pp = 0  # p_gu_src_pingpong_id: qk / x_exp / pv buffers and the V <-> MTE event ids

    def softmax(init: bool, qk: Tile, x_exp: Tile, rs: int, em_base: int) -> None:
        """pto_macro_fa_softmax on one row slice (the reduce tiles' vs0-row slices)."""
        off = rs * vs0 * 4
        m1 = vec(f, vs0, 1, m1_at + off, BLayout.ColMajor)
        m2 = vec(f, vs0, 1, m2_at + off, BLayout.ColMajor)
        l1 = vec(f, vs0, 1, l1_at + off, BLayout.ColMajor)
        l2 = vec(f, vs0, 1, l2_at + off, BLayout.ColMajor)
        em = vec(f, vs0, 1, em_base + off, BLayout.ColMajor)
        n = vs0 * cfg.tile_s1
        p_1d, x_1d = Tile(TileType.Vec, f, 1, n), Tile(TileType.Vec, h, 1, n)
        if init:
            pto.TROWMAX(m2, qk, tmp)
            pto.PIPE_BARRIER(Pipe.V)
            pto.TROWEXPANDSUB(qk, qk, m2)
            pto.TMULS(qk, qk, scale)
            pto.TEXP(qk, qk)
            pto.PIPE_BARRIER(Pipe.V)
            pto.TROWSUM(l2, qk, tmp)
            pto.TRESHAPE(p_1d, qk)
            pto.TRESHAPE(x_1d, x_exp)
            pto.TCVT(x_1d, p_1d, None, RoundMode.CAST_ROUND)
            return
        row = [Tile(TileType.Vec, f, 1, vs0) for _ in range(5)]
        lm, gm_, em_r, gs, ls = row
        pto.TROWMAX(m1, qk, tmp)
        pto.PIPE_BARRIER(Pipe.V)
        pto.TRESHAPE(lm, m1)
        pto.TRESHAPE(gm_, m2)
        pto.TMAX(lm, lm, gm_)  # the new global max
        pto.PIPE_BARRIER(Pipe.V)
        pto.TRESHAPE(em_r, em)
        pto.TSUB(em_r, gm_, lm)
        pto.PIPE_BARRIER(Pipe.V)
        pto.TMULS(gm_, lm, np.float32(1.0))  # (a copy)
        pto.PIPE_BARRIER(Pipe.V)
        pto.TROWEXPANDSUB(qk, qk, m1)
        pto.TMULS(em_r, em_r, scale)
        pto.TMULS(qk, qk, scale)
        pto.TEXP(em_r, em_r)
        pto.TEXP(qk, qk)
        pto.TRESHAPE(p_1d, qk)
        pto.TRESHAPE(x_1d, x_exp)
        pto.TCVT(x_1d, p_1d, None, RoundMode.CAST_ROUND)
        pto.PIPE_BARRIER(Pipe.V)
        pto.TRESHAPE(gs, l2)
        pto.TMUL(gs, em_r, gs)
        pto.TROWSUM(l1, qk, tmp)
        pto.TRESHAPE(ls, l1)
        pto.PIPE_BARRIER(Pipe.V)
        pto.TADD(gs, gs, ls)

    def compute_p(tile_id: int, rs: int) -> None:
        nonlocal pp
        ev = pp % 2
        row_offset = rows_sb * sb + rs * vs0
        pto.WAIT_FLAG(Pipe.V, Pipe.MTE2, ev)
        # TPOP(qkVecTile, qkPipe): wait at row slice 0, load the slice's rows of each
        # sub-tile into its column band, free after the last slice
        if rs == 0:
            pto.TPOP(qk_pipe, qk_slot)
        qk = vec(f, vs0, cfg.tile_s1, qk_addr[ev])
        for sub in range(kf):
            band = vec(f, vs0, cfg.tile_s1, qk_addr[ev] + sub * cs1 * 4, valid=(vs0, cs1))
            pto.TLOAD(band, _fifo_view(qk_fifo, qk_pipe, blk, vs0, cs1, cs1, tile_id % cfg.fifo,
                                       sub * cs0 * cs1 + row_offset * cs1))
        if rs == kf - 1:
            pto.TFREE(qk_pipe, qk_slot)
        pto.SET_FLAG(Pipe.MTE2, Pipe.V, 0)
        pto.WAIT_FLAG(Pipe.MTE2, Pipe.V, 0)
        pto.WAIT_FLAG(Pipe.MTE3, Pipe.V, ev)
        x_exp = vec(h, vs0, cfg.tile_s1, x_addr[ev])
        softmax(tile_id == 0, qk, x_exp, rs, em_at[tile_id % cfg.fifo])
        pto.SET_FLAG(Pipe.V, Pipe.MTE2, ev)
        pto.SET_FLAG(Pipe.V, Pipe.MTE3, 0)
        pto.WAIT_FLAG(Pipe.V, Pipe.MTE3, 0)
        # TPUSH(x_expT, pPipe): allocate at slice 0, store each column band to its sub-tile,
        # record after the last slice
        if rs == 0:
            pto.TALLOC(p_pipe, p_slot)
        for sub in range(kf):
            band = vec(h, vs0, cfg.tile_s1, x_addr[ev] + sub * cs1 * 2, valid=(vs0, cs1))
            pto.TSTORE(_fifo_view(p_fifo, p_pipe, blk, vs0, cs1, cs1, tile_id % cfg.fifo,
                                  sub * cs0 * cs1 + row_offset * cs1), band)
        if rs == kf - 1:
            pto.TPUSH(p_pipe, p_slot)
        pto.SET_FLAG(Pipe.MTE3, Pipe.V, ev)
        pp += 1

    def compute_gu(tile_id: int) -> None:
        nonlocal pp
        ev = pp % 2
        pto.WAIT_FLAG(Pipe.V, Pipe.MTE2, ev)
        pto.TPOP(pv_pipe, pv_slot)
        dst = running_o if tile_id == 0 else pv_vec[ev]
        pto.TLOAD(dst, _fifo_view(pv_fifo, pv_pipe, blk, rows_sb, hd, hd, tile_id % cfg.fifo,
                                  sb * rows_sb * hd))
        pto.TFREE(pv_pipe, pv_slot)
        pto.SET_FLAG(Pipe.MTE2, Pipe.V, 0)
        pto.WAIT_FLAG(Pipe.MTE2, Pipe.V, 0)
        if tile_id > 0:  # pto_macro_fa_gu / _last
            pto.TROWEXPANDMUL(running_o, running_o, exp_max[tile_id % cfg.fifo])
            pto.TADD(running_o, running_o, pv_vec[ev])
            if tile_id == n_tiles - 1:
                pto.TROWEXPANDDIV(running_o, running_o, l2_global_sum)
        pto.SET_FLAG(Pipe.V, Pipe.MTE2, ev)
        if tile_id == n_tiles - 1:
            pto.SET_FLAG(Pipe.V, Pipe.MTE3, 0)
            pto.WAIT_FLAG(Pipe.V, Pipe.MTE3, 0)
            pto.TSTORE(_gm(o, rows_sb, hd, hd, (blk * cs0 + sb * rows_sb) * hd), running_o)
        pp += 1

    _fa_vector_loop(cfg, compute_p, compute_gu)


def flash_atten(cfg: FaConfig, q: np.ndarray, k: np.ndarray, v: np.ndarray, o: np.ndarray,
                qk_fifo: np.ndarray, p_fifo: np.ndarray, pv_fifo: np.ndarray) -> None:
    """``runTFA`` (common/flash_atten, non-causal, UF_ENABLE): one block per CUBE_S0 rows of Q,
    every block reading all of K and V (S1 x HEAD each, f16); O is f32. The GM FIFOs are the
    kernel's qk_tile_fifo / p_tile_fifo / pv_tile_fifo (``fifo`` entries per block; the comm
    slot is the block index: TSYNC_CVID is only called from 25 block rows on)."""
    blk = pto.get_block_idx()
    if cfg.origin:
        if pto.core_type() == "AIC":
            _fa_cube_origin(cfg, q, k, v, (qk_fifo, p_fifo, pv_fifo), blk)
        else:
            _fa_vector_origin(cfg, o, (qk_fifo, p_fifo, pv_fifo), blk)
        return
    pipes = cfg.pipes(qk_fifo, p_fifo, pv_fifo, blk)
    if pto.core_type() == "AIC":
        _fa_cube(cfg, q, k, v, (qk_fifo, p_fifo, pv_fifo), pipes, blk)
    else:
        _fa_vector(cfg, o, (qk_fifo, p_fifo, pv_fifo), pipes, blk)


# ---- common/flash_atten as the cores table measured it (upstream 6cc68238) -----------------------

#: the origin kernel's CV FIFO depth (DEFAULT_CV_FIFO_SIZE; sync period 6)
FA_ORIGIN_FIFO = 12
#: its FftsBufferFlag: the cross-core flags (FFTS mode 2) it signals directly
(FA0_QK_READY, FA0_SM_CONSUMED, FA0_SM_READY, FA0_SV_CONSUMED, FA0_UPDATE_READY,
 FA0_UPDATE_CONSUMED) = range(6)


def _fa_should_wait(cfg: FaConfig, it: int) -> bool:
    """should_wait_consumption<FIFO, period>: the producer waits from the FIFO's depth on, once a
    sync period."""
    return it >= cfg.fifo and it % cfg.period == 0


def _fa_should_notify(cfg: FaConfig, it: int) -> bool:
    """should_notify_consumption<FIFO, period>: the consumer notifies one tile before the wait."""
    return it >= cfg.fifo - (cfg.period - 1) and (it + 1) % cfg.period == 0


def _fa_cube_origin(cfg: FaConfig, q: np.ndarray, k: np.ndarray, v: np.ndarray,
                    fifos: tuple[np.ndarray, ...], blk: Any) -> None:
    """runTFA's DAV_CUBE side at upstream 6cc68238: the same compute_qk / compute_pv schedule
    as the later kernel, but no unit flag (each matmul waits FIX -> M on its Acc buffer, each
    store waits M -> FIX), the QK sub-tiles stored side by side in one CUBE_S0 x TILE_S1
    row-major entry, and the FIFOs' handshake as bare FFTS flags (ffts_cross_core_sync /
    wait_flag_dev) over a 12-entry FIFO."""
    qk_fifo, p_fifo, pv_fifo = fifos
    cs0, cs1, hd, kf, ts1 = cfg.cube_s0, cfg.cube_s1, cfg.head, cfg.k_factor, cfg.tile_s1
    n_tiles = cfg.s1 // ts1
    st = _CubeState()
    q_mat, k_mat, p_mat, v_mat, qk_acc, pv_acc = _fa_cube_start(cfg, st)
    qk_base = blk * cfg.fifo * cs0 * ts1  # the block's part of each FIFO (elements)
    pv_base = blk * cfg.fifo * cs0 * hd
    k_pp = pv_pp = 0

    def compute_qk(tile_id: int, sub: int, acc_ev: int) -> None:
        nonlocal k_pp
        ev = k_pp % 2
        s1_index = tile_id * ts1 + sub * cs1
        pto.WAIT_FLAG(Pipe.MTE1, Pipe.MTE2, ev)
        if tile_id == 0 and sub == 0:
            pto.TLOAD(q_mat, _gm(q, cs0, hd, hd, blk * cs0 * hd))
        pto.TLOAD(k_mat[ev], _gm(k, hd, cs1, hd, s1_index * hd, Layout.DN))
        pto.SET_FLAG(Pipe.MTE2, Pipe.MTE1, 0)
        pto.WAIT_FLAG(Pipe.MTE2, Pipe.MTE1, 0)
        pto.WAIT_FLAG(Pipe.FIX, Pipe.M, acc_ev)
        _fa_matmul(st, q_mat, k_mat[ev], qk_acc, cs0, hd, cs1, first=True, final=True,
                   unit_flag=False)
        pto.SET_FLAG(Pipe.MTE1, Pipe.MTE2, ev)
        pto.SET_FLAG(Pipe.M, Pipe.FIX, 0)
        pto.WAIT_FLAG(Pipe.M, Pipe.FIX, 0)
        if sub == 0 and _fa_should_wait(cfg, tile_id):
            pto.SYNC_WAIT(Pipe.S, FA0_SM_CONSUMED)
        at = qk_base + (tile_id % cfg.fifo) * cs0 * ts1 + sub * cs1
        pto.TSTORE(_gm(qk_fifo, cs0, cs1, ts1, at), qk_acc)
        pto.SET_FLAG(Pipe.FIX, Pipe.M, acc_ev)
        if sub == kf - 1:
            pto.SYNC_SET(Pipe.FIX, FA0_QK_READY)
        k_pp += 1

    def compute_pv(tile_id: int, sub: int, acc_ev: int) -> None:
        nonlocal pv_pp
        b = pv_pp % 2
        ev = b + 2  # PV_EVENT_ID0 + ping-pong
        s1_index = tile_id * ts1 + sub * cs1
        pto.WAIT_FLAG(Pipe.MTE1, Pipe.MTE2, ev)
        pto.TLOAD(v_mat[b], _gm(v, cs1, hd, hd, s1_index * hd))
        if sub == 0:
            pto.SYNC_WAIT(Pipe.S, FA0_SM_READY)
        at = qk_base + (tile_id % cfg.fifo) * cs0 * ts1 + sub * cs0 * cs1
        pto.TLOAD(p_mat[b], _gm(p_fifo, cs0, cs1, cs1, at))
        if sub == kf - 1 and _fa_should_notify(cfg, tile_id):
            pto.SYNC_SET(Pipe.MTE2, FA0_SV_CONSUMED)
        pto.SET_FLAG(Pipe.MTE2, Pipe.MTE1, 0)
        pto.WAIT_FLAG(Pipe.MTE2, Pipe.MTE1, 0)
        if sub == 0:
            pto.WAIT_FLAG(Pipe.FIX, Pipe.M, acc_ev)
        _fa_matmul(st, p_mat[b], v_mat[b], pv_acc, cs0, cs1, hd, first=sub == 0, final=True,
                   unit_flag=False)
        pto.SET_FLAG(Pipe.MTE1, Pipe.MTE2, ev)
        if sub == kf - 1:
            pto.SET_FLAG(Pipe.M, Pipe.FIX, 0)
            pto.WAIT_FLAG(Pipe.M, Pipe.FIX, 0)
            if _fa_should_wait(cfg, tile_id):
                pto.SYNC_WAIT(Pipe.S, FA0_UPDATE_CONSUMED)
            at = pv_base + (tile_id % cfg.fifo) * cs0 * hd
            pto.TSTORE(_gm(pv_fifo, cs0, hd, hd, at), pv_acc)
            pto.SET_FLAG(Pipe.FIX, Pipe.M, acc_ev)
            pto.SYNC_SET(Pipe.FIX, FA0_UPDATE_READY)
        pv_pp += 1

    for tile in range(min(cfg.preload, n_tiles)):
        for sub in range(kf):
            compute_qk(tile, sub, st.assign_acc(qk_acc))
    for tile in range(n_tiles):
        nxt = tile + cfg.preload if tile + cfg.preload < n_tiles else -1
        qk_ev = st.assign_acc(qk_acc) if nxt != -1 else -1
        pv_ev = st.assign_acc(pv_acc)
        for sub in range(kf):
            if nxt != -1:
                compute_qk(nxt, sub, qk_ev)
            compute_pv(tile, sub, pv_ev)
    pto.WAIT_FLAG(Pipe.M, Pipe.MTE1, 0)
    pto.WAIT_FLAG(Pipe.M, Pipe.MTE1, 1)
    for ev in range(4):
        pto.WAIT_FLAG(Pipe.MTE1, Pipe.MTE2, ev)
    pto.WAIT_FLAG(Pipe.FIX, Pipe.M, 0)
    pto.WAIT_FLAG(Pipe.FIX, Pipe.M, 1)
    pto.PIPE_BARRIER(Pipe.ALL)


def _fa_vector_origin(cfg: FaConfig, o: np.ndarray, fifos: tuple[np.ndarray, ...],
                      blk: Any) -> None:
    """runTFA's DAV_VEC side at upstream 6cc68238: compute_p loads its vs0 rows of the whole
    TILE_S1 entry in one TLOAD, the softmax works through a full-size temporary, and the
    handshake is the FFTS flags of _fa_cube_origin."""
    qk_fifo, p_fifo, pv_fifo = fifos
    h, f = np.float16, np.float32
    cs0, cs1, hd, kf, vs0, ts1 = (cfg.cube_s0, cfg.cube_s1, cfg.head, cfg.k_factor,
                                  cfg.vec_s0, cfg.tile_s1)
    rows_sb = cs0 // 2
    n_tiles = cfg.s1 // ts1
    sb = pto.get_subblock_idx()
    scale = np.float32(1.0 / np.sqrt(np.float32(cfg.head)))

    def vec(dtype: Any, rows: int, cols: int, at: int, layout: BLayout = BLayout.RowMajor,
            valid: Any = None) -> Tile:
        t = Tile(TileType.Vec, dtype, rows, cols, layout, valid)
        pto.TASSIGN(t, at)
        return t

    # UB (the origin's allocate_vec_tile_buffers): the qk / pv union x2, m1, m2, a full float
    # temporary, l1, l2, exp_max x fifo, x_exp x2, runningO last
    f_bytes, o_bytes, r_bytes = vs0 * ts1 * 4, rows_sb * hd * 4, rows_sb * 4
    stride = max(f_bytes, o_bytes)
    qk_vec = [vec(f, vs0, ts1, i * stride) for i in range(2)]
    pv_vec = [vec(f, rows_sb, hd, i * stride) for i in range(2)]
    at = 2 * stride
    m1_at, m2_at = at, at + r_bytes
    at += 2 * r_bytes
    tmp = vec(f, vs0, ts1, at)
    at += f_bytes
    l1_at, l2_at = at, at + r_bytes
    at += 2 * r_bytes
    em_at = [at + i * r_bytes for i in range(cfg.fifo)]
    exp_max = [vec(f, rows_sb, 1, a, BLayout.ColMajor) for a in em_at]
    at += cfg.fifo * r_bytes
    x_exp = [vec(h, vs0, ts1, at + i * vs0 * ts1 * 2) for i in range(2)]
    at += 2 * vs0 * ts1 * 2
    running_o = vec(f, rows_sb, hd, at)
    l2_global_sum = vec(f, rows_sb, 1, l2_at, BLayout.ColMajor)
    qk_base = blk * cfg.fifo * cs0 * ts1
    pv_base = blk * cfg.fifo * cs0 * hd

    pto.SET_FLAG(Pipe.V, Pipe.MTE2, 0)
    pto.SET_FLAG(Pipe.V, Pipe.MTE2, 1)
    pto.SET_FLAG(Pipe.MTE3, Pipe.V, 0)
    pto.SET_FLAG(Pipe.MTE3, Pipe.V, 1)
    pp = 0

    def softmax(init: bool, xe: Tile, qk: Tile, rs: int, em_base: int) -> None:
        """the origin's pto_macro_fa_softmax on one row slice."""
        off = rs * vs0 * 4
        m1 = vec(f, vs0, 1, m1_at + off, BLayout.ColMajor)
        m2 = vec(f, vs0, 1, m2_at + off, BLayout.ColMajor)
        l1 = vec(f, vs0, 1, l1_at + off, BLayout.ColMajor)
        l2 = vec(f, vs0, 1, l2_at + off, BLayout.ColMajor)
        em = vec(f, vs0, 1, em_base + off, BLayout.ColMajor)
        n = vs0 * ts1
        p_1d, x_1d = Tile(TileType.Vec, f, 1, n), Tile(TileType.Vec, h, 1, n)
        if init:
            pto.TROWMAX(m2, qk, tmp)
            pto.PIPE_BARRIER(Pipe.V)
            pto.TROWEXPANDSUB(tmp, qk, m2)
            pto.TMULS(tmp, tmp, scale)
            pto.TEXP(qk, tmp)
            pto.PIPE_BARRIER(Pipe.V)
            pto.TROWSUM(l2, qk, tmp)
            pto.TRESHAPE(p_1d, qk)
            pto.TRESHAPE(x_1d, xe)
            pto.TCVT(x_1d, p_1d, None, RoundMode.CAST_ROUND)
            return
        lm, gm_, em_r, gs, ls = (Tile(TileType.Vec, f, 1, vs0) for _ in range(5))
        pto.TROWMAX(m1, qk, tmp)
        pto.PIPE_BARRIER(Pipe.V)
        pto.TRESHAPE(lm, m1)
        pto.TRESHAPE(gm_, m2)
        pto.TMAX(lm, lm, gm_)
        pto.PIPE_BARRIER(Pipe.V)
        pto.TRESHAPE(em_r, em)
        pto.TSUB(em_r, gm_, lm)
        pto.PIPE_BARRIER(Pipe.V)
        pto.TMULS(m2, m1, np.float32(1.0))  # (a copy, on the column tiles)
        pto.PIPE_BARRIER(Pipe.V)
        pto.TROWEXPANDSUB(tmp, qk, m1)
        pto.TMULS(em_r, em_r, scale)
        pto.TMULS(tmp, tmp, scale)
        pto.TEXP(em_r, em_r)
        pto.TEXP(qk, tmp)
        pto.TRESHAPE(p_1d, qk)
        pto.TRESHAPE(x_1d, xe)
        pto.TCVT(x_1d, p_1d, None, RoundMode.CAST_ROUND)
        pto.PIPE_BARRIER(Pipe.V)
        pto.TRESHAPE(gs, l2)
        pto.TMUL(gs, em_r, gs)
        pto.TROWSUM(l1, qk, tmp)
        pto.TRESHAPE(ls, l1)
        pto.PIPE_BARRIER(Pipe.V)
        pto.TADD(gs, gs, ls)

    def compute_p(tile_id: int, rs: int) -> None:
        nonlocal pp
        ev = pp % 2
        row_offset = rows_sb * sb + rs * vs0
        entry = qk_base + (tile_id % cfg.fifo) * cs0 * ts1
        pto.WAIT_FLAG(Pipe.V, Pipe.MTE2, ev)
        if rs == 0:
            pto.SYNC_WAIT(Pipe.S, FA0_QK_READY)
        pto.TLOAD(qk_vec[ev], _gm(qk_fifo, vs0, ts1, ts1, entry + row_offset * ts1))
        if rs == kf - 1 and _fa_should_notify(cfg, tile_id):
            pto.SYNC_SET(Pipe.MTE2, FA0_SM_CONSUMED)
        pto.SET_FLAG(Pipe.MTE2, Pipe.V, 0)
        pto.WAIT_FLAG(Pipe.MTE2, Pipe.V, 0)
        pto.WAIT_FLAG(Pipe.MTE3, Pipe.V, ev)
        softmax(tile_id == 0, x_exp[ev], qk_vec[ev], rs, em_at[tile_id % cfg.fifo])
        pto.SET_FLAG(Pipe.V, Pipe.MTE2, ev)
        pto.SET_FLAG(Pipe.V, Pipe.MTE3, 0)
        pto.WAIT_FLAG(Pipe.V, Pipe.MTE3, 0)
        if rs == 0 and _fa_should_wait(cfg, tile_id):
            pto.SYNC_WAIT(Pipe.S, FA0_SV_CONSUMED)
        for sub in range(kf):  # each CUBE_S1 column band to its CUBE_S0 x CUBE_S1 sub-tile
            band = vec(h, vs0, ts1, x_exp[ev].addr + sub * cs1 * 2, valid=(vs0, cs1))
            pto.TSTORE(_gm(p_fifo, vs0, cs1, cs1, entry + row_offset * cs1 + sub * cs1 * cs0),
                       band)
        if rs == kf - 1:
            pto.SYNC_SET(Pipe.MTE3, FA0_SM_READY)
        pto.SET_FLAG(Pipe.MTE3, Pipe.V, ev)
        pp += 1

    def compute_gu(tile_id: int) -> None:
        nonlocal pp
        ev = pp % 2
        pto.SYNC_WAIT(Pipe.S, FA0_UPDATE_READY)
        pto.WAIT_FLAG(Pipe.V, Pipe.MTE2, ev)
        dst = running_o if tile_id == 0 else pv_vec[ev]
        at = pv_base + (tile_id % cfg.fifo) * cs0 * hd + sb * rows_sb * hd
        pto.TLOAD(dst, _gm(pv_fifo, rows_sb, hd, hd, at))
        pto.SET_FLAG(Pipe.MTE2, Pipe.V, 0)
        pto.WAIT_FLAG(Pipe.MTE2, Pipe.V, 0)
        if tile_id > 0:  # pto_macro_fa_gu / _last
            pto.TROWEXPANDMUL(running_o, running_o, exp_max[tile_id % cfg.fifo])
            pto.TADD(running_o, running_o, pv_vec[ev])
            if tile_id == n_tiles - 1:
                pto.TROWEXPANDDIV(running_o, running_o, l2_global_sum)
        pto.SET_FLAG(Pipe.V, Pipe.MTE2, ev)
        if _fa_should_notify(cfg, tile_id):
            pto.SYNC_SET(Pipe.MTE2, FA0_UPDATE_CONSUMED)
        if tile_id == n_tiles - 1:
            pto.SET_FLAG(Pipe.V, Pipe.MTE3, 0)
            pto.WAIT_FLAG(Pipe.V, Pipe.MTE3, 0)
            pto.TSTORE(_gm(o, rows_sb, hd, hd, (blk * cs0 + sb * rows_sb) * hd), running_o)
        pp += 1

    _fa_vector_loop(cfg, compute_p, compute_gu)
    pto.PIPE_BARRIER(Pipe.ALL)


def fa_reference(cfg: FaConfig, q: np.ndarray, k: np.ndarray, v: np.ndarray) -> np.ndarray:
    """numpy, written from the README's recurrence (gen_data.py's golden): per TILE_S1 tile
    the running max, exp(scale (x - max)) rounded to f16 for the PV product, the rescaled
    running sum and O; O divided by the sum at the end (float64 otherwise)."""
    s = q.astype(np.float64) @ k.astype(np.float64).T
    scale = 1.0 / np.sqrt(cfg.head)
    o = np.zeros((cfg.s0, cfg.head))
    gmax = gsum = None
    for t in range(cfg.s1 // cfg.tile_s1):
        x = s[:, t * cfg.tile_s1:(t + 1) * cfg.tile_s1]
        m = x.max(axis=1, keepdims=True)
        if gmax is not None:
            m = np.maximum(m, gmax)
        e = np.exp((x - m) * scale)
        pv = e.astype(np.float16).astype(np.float64) @ \
            v[t * cfg.tile_s1:(t + 1) * cfg.tile_s1].astype(np.float64)
        if gmax is None:
            o, gsum = pv, e.sum(axis=1, keepdims=True)
        else:
            em = np.exp((gmax - m) * scale)
            o, gsum = o * em + pv, gsum * em + e.sum(axis=1, keepdims=True)
        gmax = m
    return o / gsum


def fa_buffers(cfg: FaConfig, timing: bool = False, seed: int = 7
               ) -> tuple[np.ndarray, ...]:
    """q, k, v (f16; gen_data.py's scales), o, and the three GM FIFOs."""
    alloc = np.empty if timing else np.zeros
    if timing:
        q = np.empty((cfg.s0, cfg.head), np.float16)
        k = np.empty((cfg.s1, cfg.head), np.float16)
        v = np.empty((cfg.s1, cfg.head), np.float16)
    else:
        rng = np.random.default_rng(seed)
        q = (rng.standard_normal((cfg.s0, cfg.head)) * 1.5).astype(np.float16)
        k = (rng.standard_normal((cfg.s1, cfg.head)) * 1.5).astype(np.float16)
        v = (rng.standard_normal((cfg.s1, cfg.head)) * 1.2).astype(np.float16)
    o = alloc((cfg.s0, cfg.head), np.float32)
    per = cfg.fifo * cfg.cube_s0
    qk = alloc(cfg.blocks * per * cfg.tile_s1, np.float32)
    p = alloc(cfg.blocks * per * cfg.tile_s1, np.float16)
    pv = alloc(cfg.blocks * per * cfg.head, np.float32)
    return q, k, v, o, qk, p, pv


def run_fa(cores: int, s1: int, *, check: bool = True, timing: bool = False,
           cfg: FaConfig | None = None, origin: bool = True) -> Result:
    """One launch of the flash_atten port on ``cores`` blocks (S0 = 128 x cores): by default the
    kernel the cores table measured (upstream 6cc68238), ``origin=False`` the later one."""
    cfg = cfg or FaConfig(s0=128 * cores, s1=s1, origin=origin,
                          fifo=FA_ORIGIN_FIFO if origin else 8)
    bufs = fa_buffers(cfg, timing)
    q, k, v, o = bufs[:4]
    t0 = time.perf_counter()
    rep = pto.launch(lambda *a: flash_atten(cfg, *a), *bufs, blocks=cfg.blocks,
                     target="a2a3", mixed=True, cycles="timing" if timing else True)
    wall = time.perf_counter() - t0
    if check and not timing:
        ref = fa_reference(cfg, q, k, v)
        if not np.allclose(o, ref, rtol=2e-2, atol=2e-3):
            err = float(np.abs(o - ref).max())
            raise SystemExit(f"flash_atten {cfg}: result differs from numpy (max {err:.3g})")
    t1 = time.perf_counter()
    launch = rep.launch
    launch_s = time.perf_counter() - t1
    ratio = launch.busy_ratio()
    busy = {p: ratio.get(p, 0.0) for p in ("M", "MTE1", "MTE2", "FIX", "V", "MTE3")}
    board = FA_BOARD.get(cores, {}).get(s1, float("nan"))
    name = "common/flash_atten" + (" (6cc6823)" if cfg.origin else "")
    return Result(name, f"S0 {cfg.s0}, S1 {s1}, H {cfg.head}, {cores} cores",
                  launch.us, board, busy, {}, wall, launch_s, rep, scored=False)


def run_fa_seq(seq: int, *, check: bool = True, timing: bool = False) -> Result:
    """The 910B2 by-sequence-length row ``seq`` (S0 = S1 = seq, seq / 128 blocks)."""
    cfg = FaConfig(s0=seq, s1=seq)
    r = run_fa(cfg.blocks, seq, check=check, timing=timing, cfg=cfg)
    return dataclasses.replace(r, kernel="common/flash_atten (910B2, by sequence)",
                               shape=f"S0 = S1 = {seq}, H {cfg.head}, {cfg.blocks} blocks",
                               board_us=FA_SEQ_BOARD[seq], scored=True)

# ---- a2a3/conv2d_forward -----------------------------------------------------------------------

#: the README's measurements (A3, 24 cores; fp16 in and out): (batch, cin / 16, hin, win,
#: cout) -> (cube, TLOAD, TEXTRACT, TSTORE ratios, execution time in us). TEXTRACT's column
#: counts TIMG2COL and TEXTRACT (both MTE1).
CONV_BOARD: dict[tuple[int, int, int, int, int], tuple[float, float, float, float, float]] = {
    (4, 8, 8, 48, 1536): (0.529, 0.439, 0.594, 0.056, 32.2),
    (4, 16, 12, 64, 3072): (0.861, 0.751, 0.573, 0.040, 147.3),
    (4, 24, 12, 96, 4608): (0.893, 0.788, 0.616, 0.028, 470.9),
    (4, 32, 16, 96, 6144): (0.908, 0.804, 0.611, 0.021, 1097.9),
    (4, 40, 15, 128, 7680): (0.913, 0.807, 0.624, 0.017, 2131.2),
}


@dataclass(frozen=True)
class ConvConfig:
    """``Conv2dForward``'s template arguments: 3 x 3 kernel, stride 1, dilation 1, padding 1,
    fp16; one block per (image, group of ``n_groups``) (the README's 4 x 6 over 24 cores)."""

    batch: int
    c1: int  # cin / 16
    hin: int
    win: int
    cout: int
    n_groups: int = 6
    base_m: int = 128
    base_k: int = 48
    base_n: int = 256
    step_ka: int = 3
    step_kb: int = 3

    c0 = 16
    hk = wk = 3
    pad = 1

    @property
    def hout(self) -> int:
        return self.hin + 2 * self.pad - self.hk + 1

    @property
    def wout(self) -> int:
        return self.win + 2 * self.pad - self.wk + 1

    @property
    def blocks(self) -> int:
        return self.batch * self.n_groups

    @property
    def k(self) -> int:
        return self.c1 * self.c0 * self.hk * self.wk

    @property
    def single_n(self) -> int:
        return self.cout // self.n_groups

    @property
    def channel_size(self) -> int:
        return -(-self.step_ka * self.base_k // (self.hk * self.wk))


def conv2d_forward(cfg: ConvConfig, out: np.ndarray, x: np.ndarray, w: np.ndarray) -> None:
    """``RunConv2dForward``: x [batch, c1, hin, win, 16] (NC1HWC0), w FRACTAL_Z [c1 * 9,
    cout / 16, 16, 16], out [batch, cout / 16, hout, wout, 16] (f16 from the f32 Acc). Each block
    owns one image's [hout * wout, single_n] part of the implicit GEMM: TIMG2COL of the L1 feature
    map window into L0A, TEXTRACT of the FRACTAL_Z weights into L0B."""
    h = np.float16
    c0, hk, wk, hin, win = cfg.c0, cfg.hk, cfg.wk, cfg.hin, cfg.win
    hout, wout, n = cfg.hout, cfg.wout, cfg.cout
    bm, bk, bn, ska, skb = cfg.base_m, cfg.base_k, cfg.base_n, cfg.step_ka, cfg.step_kb
    ch = cfg.channel_size
    blk = pto.get_block_idx()
    m_core, n_core = blk // cfg.n_groups, blk % cfg.n_groups
    off_a = m_core * cfg.c1 * hin * win * c0
    off_b = n_core * c0 * cfg.single_n
    off_c = m_core * n * hout * wout + n_core * cfg.single_n * hout * wout
    single_m = hout * wout
    # (the C++ declares the feature-map ConvTile's buffer as ceil(baseM / wout) + 2 rows;
    # a window can need one row more when baseM is not a multiple of wout: the tile here
    # is declared with what its shape needs, at the same L1 addresses)
    rows_a = -(-bm // wout) + (hk - 1)
    w_bytes = skb * bk * bn * 2
    w_mat = [ConvTile(TileType.Mat, h, w_bytes, "FRACTAL_Z", (skb * bk // c0, bn // 16, 16, c0))
             for _ in range(2)]
    pto.TASSIGN(w_mat[0], 0x20000)
    pto.TASSIGN(w_mat[1], 0x20000 + w_bytes)
    b_l0 = [pto.TileRight(h, bk, bn) for _ in range(2)]
    pto.TASSIGN(b_l0[0], 0x0)
    pto.TASSIGN(b_l0[1], L0_PINGPONG_BYTES)
    # InitSyncFlags
    pto.SET_FLAG(Pipe.MTE1, Pipe.MTE2, 0)
    pto.SET_FLAG(Pipe.MTE1, Pipe.MTE2, 1)
    pto.SET_FLAG(Pipe.M, Pipe.MTE1, 0)
    pto.SET_FLAG(Pipe.M, Pipe.MTE1, 1)
    m_loop, n_loop, k_loop = -(-single_m // bm), -(-cfg.single_n // bn), -(-cfg.k // bk)
    tail_m = single_m % bm
    mte2 = mte1 = 0
    xs = (cfg.c1 * hin * win * c0, hin * win * c0, win * c0, c0, 1)
    ws = (cfg.c1 * hk * wk * n * c0, n * c0, 16 * c0, c0, 1)
    ys = (n * hout * wout, hout * wout * 16, wout * 16, 16, 1)
    for mi in range(m_loop):
        m_start = mi * bm
        m_count = min(bm, single_m - m_start)
        hout_start, wout_start = m_start // wout, m_start % wout
        hout_end = (m_start + m_count - 1) // wout
        hin_start = max(0, hout_start - cfg.pad)
        hin_end = min(hout_end - cfg.pad + hk - 1, hin - 1)
        hin_count = hin_end - hin_start + 1
        cur_m = tail_m if (mi == m_loop - 1 and tail_m) else bm
        a_l0 = [pto.TileLeft(h, bm, bk, valid=(cur_m, bk)) for _ in range(2)]
        pto.TASSIGN(a_l0[0], 0x0)
        pto.TASSIGN(a_l0[1], L0_PINGPONG_BYTES)
        shape = (1, ch // c0, hin_count, win, c0)
        a_bytes = 2 * ch * win * max(rows_a, hin_count)
        f_mat = [ConvTile(TileType.Mat, h, a_bytes, "NC1HWC0", shape) for _ in range(2)]
        for t in f_mat:
            t.img2col = Img2colConfig(
                hin_count, win, padList=(1, 1, max(0, cfg.pad - hout_start),
                                         max(0, hout_end + hk - hin - cfg.pad)),
                filterH=3, filterW=3, channelSize=ch)
        acc = pto.TileAcc(np.float32, bm, bn, valid=(cur_m, bn))
        pto.TASSIGN(acc, 0x0)
        pto.SETFMATRIX(f_mat[0])
        pto.TASSIGN(f_mat[0], 0x0)
        pto.TASSIGN(f_mat[1], ch * win * (hin_count + hk - 1) * 2)
        for ni in range(n_loop):
            for ki in range(k_loop):
                kmod = ki % ska
                if kmod == 0:  # ProcessKIteration's loads
                    fmap = GlobalTensor(x, shape, xs, Layout.NC1HWC0, offset=(
                        off_a + (ki * bk) // (hk * wk * c0) * xs[1] + hin_start * xs[2]))
                    wgt = GlobalTensor(w, (1, skb * bk // c0, bn // 16, 16, c0), ws,
                                       Layout.FRACTAL_Z, offset=(
                                           off_b + (ki * bk // c0) * ws[1]
                                           + (ni * bn // 16) * ws[2]))
                    pto.WAIT_FLAG(Pipe.MTE1, Pipe.MTE2, mte2)
                    pto.TLOAD(f_mat[mte2], fmap)
                    pto.SET_FLAG(Pipe.MTE2, Pipe.MTE1, 0)
                    pto.TLOAD(w_mat[mte2], wgt)
                    pto.SET_FLAG(Pipe.MTE2, Pipe.MTE1, 1)
                    mte2 = 1 - mte2
                cur = 1 - mte2
                mte1 = macro_matmul(
                    ki, kmod == 0, (ki + 1) % ska == 0, cur, mte1,
                    lambda d, f=f_mat[cur], w0=wout_start, k=kmod: pto.TIMG2COL(d, f, w0, k * bk),
                    lambda d, w=w_mat[cur], k=ki: pto.TEXTRACT(d, w, (k % skb) * bk, 0),
                    acc, a_l0, b_l0)
            store_result(GlobalTensor(out, (1, bn // 16, -(-bm // wout), wout, 16), ys,
                                      Layout.NC1HWC0,
                                      offset=off_c + mi * bm * ys[3] + ni * bn // 16 * ys[1]),
                         acc)
    wait_sync_flags()


def conv_buffers(cfg: ConvConfig, timing: bool = False, seed: int = 3
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """out (with one window of slack at the end: the last store's GM view reaches past the
    image, the fix-pipe writes only the Acc tile's valid rows), x, w."""
    y_n = cfg.batch * cfg.cout * cfg.hout * cfg.wout + 16 * cfg.base_n * cfg.wout * 2
    if timing:
        x = np.empty((cfg.batch, cfg.c1, cfg.hin, cfg.win, cfg.c0), np.float16)
        w = np.empty((cfg.c1 * 9, cfg.cout // 16, 16, cfg.c0), np.float16)
        return np.empty(y_n, np.float16), x, w
    rng = np.random.default_rng(seed)
    x = rng.uniform(-1, 1, (cfg.batch, cfg.c1, cfg.hin, cfg.win, cfg.c0)).astype(np.float16)
    w = rng.uniform(-1, 1, (cfg.c1 * 9, cfg.cout // 16, 16, cfg.c0)).astype(np.float16)
    return np.zeros(y_n, np.float16), x, w


def conv_reference(cfg: ConvConfig, x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """numpy: NCHW convolution (3 x 3, pad 1) in float64 from the NC1HWC0 input and the
    FRACTAL_Z weights ([c1, kh, kw] rows, [cout / 16, 16] columns, c0 inner), back to
    [batch, cout / 16, hout, wout, 16]."""
    b, c1, hin, win, c0 = x.shape
    xn = x.astype(np.float64).transpose(0, 1, 4, 2, 3).reshape(b, c1 * c0, hin, win)
    wk = w.astype(np.float64).reshape(c1, 3, 3, cfg.cout // 16, 16, c0)
    wk = wk.transpose(3, 4, 0, 5, 1, 2).reshape(cfg.cout, c1 * c0, 3, 3)
    xp = np.pad(xn, ((0, 0), (0, 0), (1, 1), (1, 1)))
    y = np.zeros((b, cfg.cout, cfg.hout, cfg.wout))
    for i in range(3):
        for j in range(3):
            y += np.einsum("bchw,oc->bohw", xp[:, :, i:i + cfg.hout, j:j + cfg.wout],
                           wk[:, :, i, j])
    return y.reshape(b, cfg.cout // 16, 16, cfg.hout, cfg.wout).transpose(0, 1, 3, 4, 2)


def run_conv(key: tuple[int, int, int, int, int], *, check: bool = True,
             timing: bool = False, cfg: ConvConfig | None = None) -> Result:
    cfg = cfg or ConvConfig(*key)
    y, x, w = conv_buffers(cfg, timing)
    t0 = time.perf_counter()
    # blocks one by one (each its own timeline): a ConvTile's GM transfers take one block's
    # offsets, not a lockstep launch's per-block ones
    rep = pto.launch(lambda *a: conv2d_forward(cfg, *a), y, x, w, blocks=cfg.blocks,
                     target="a2a3", lockstep=False, cycles="timing" if timing else True)
    wall = time.perf_counter() - t0
    if check and not timing:
        ref = conv_reference(cfg, x, w)
        got = y[:ref.size].reshape(ref.shape).astype(np.float64)
        if not np.allclose(got, ref, rtol=1e-2, atol=5e-2):
            err = float(np.abs(got - ref).max())
            raise SystemExit(f"conv2d_forward {cfg}: result differs from numpy (max {err:.3g})")
    t1 = time.perf_counter()
    launch = rep.launch
    launch_s = time.perf_counter() - t1
    ratio = launch.busy_ratio()
    busy = {p: ratio.get(p, 0.0) for p in ("M", "MTE2", "MTE1", "FIX")}
    board = CONV_BOARD.get(key, (float("nan"),) * 5)
    b, c1, hh, ww, co = key
    return Result("a2a3/conv2d_forward", f"X [{b},{c1},{hh},{ww},16], cout {co}, 24 cores",
                  launch.us, board[4], busy,
                  {"M": board[0], "MTE2": board[1], "MTE1": board[2], "FIX": board[3]},
                  wall, launch_s, rep)


# ---- a2a3/gemm_ar (the compute kernel) ---------------------------------------------------------

#: the README's "Compute-only" (8 x Ascend 910B, every rank computing its own C_i at once;
#: main.cpp times it on the host around the launch and a stream synchronize, 5 iterations):
#: M 5416 -> 5504, K 6144, N 1408 -> 1536, 24 compute blocks. No per-pipe ratios are given.
GEMM_AR_BOARD_US = 368.1


@dataclass(frozen=True)
class GemmArConfig:
    """gemm_ar_config.h: padded M, N (multiples of 128 / 256), K a multiple of 256."""

    m: int = 5504
    k: int = 6144
    n: int = 1536
    blocks: int = 24

    @property
    def m_tiles(self) -> int:
        return self.m // BASE_M

    @property
    def n_tiles(self) -> int:
        return self.n // BASE_N

    def block_tiles(self, blk: int) -> range:
        """GEMM_AR_BLOCK_START_TILE / _TILE_COUNT: the remainder spread over the first
        blocks (floor or ceil of tiles / blocks each)."""
        total = self.m_tiles * self.n_tiles
        base, rem = divmod(total, self.blocks)
        count = base + 1 if blk < rem else base
        start = blk * (base + 1) if blk < rem else rem * (base + 1) + (blk - rem) * base
        return range(start, min(start + count, total))

    def swizzle(self, linear: int) -> tuple[int, int]:
        """SwizzleTileIndex: rows of n_tiles tiles, odd rows walked backwards."""
        group, local = divmod(linear, self.n_tiles)
        if group >= self.m_tiles:
            return divmod(linear, self.n_tiles)
        return group, (self.n_tiles - 1 - local) if group & 1 else local


def gemm_ar_compute(cfg: GemmArConfig, out: np.ndarray, src0: np.ndarray, src1: np.ndarray,
                    queue: np.ndarray) -> None:
    """``GemmComputeKernel``: C = A @ B for the block's tiles of 128 x 256 (A m x k ND, B
    stored n x k: a k x n DN view), f32 in L0C stored as f16; after each tile's store a
    PIPE_ALL barrier and the ready-queue enqueue (``queue[blk]`` is the block's queue:
    [count, tile ids ...])."""
    h = np.float16
    k = cfg.k
    blk = int(pto.get_block_idx())
    a_mat = [Tile(TileType.Mat, h, BASE_M, BASE_K * STEP_KA, BLayout.ColMajor, None,
                  SLayout.RowMajor) for _ in range(2)]
    b_mat = [Tile(TileType.Mat, h, BASE_K * STEP_KB, BASE_N, BLayout.RowMajor, None,
                  SLayout.ColMajor) for _ in range(2)]
    a_bytes, b_bytes = BASE_M * BASE_K * STEP_KA * 2, BASE_K * STEP_KB * BASE_N * 2
    pto.TASSIGN(a_mat[0], 0x0)
    pto.TASSIGN(a_mat[1], a_bytes)
    pto.TASSIGN(b_mat[0], 2 * a_bytes)
    pto.TASSIGN(b_mat[1], 2 * a_bytes + b_bytes)
    a_l0 = [pto.TileLeft(h, BASE_M, BASE_K) for _ in range(2)]
    b_l0 = [pto.TileRight(h, BASE_K, BASE_N) for _ in range(2)]
    c_tile = pto.TileAcc(np.float32, BASE_M, BASE_N)
    # (this kernel packs the L0 ping-pong halves: the second at one tile's size)
    pto.TASSIGN(a_l0[0], 0x0)
    pto.TASSIGN(a_l0[1], BASE_M * BASE_K * 2)
    pto.TASSIGN(b_l0[0], 0x0)
    pto.TASSIGN(b_l0[1], BASE_K * BASE_N * 2)
    pto.TASSIGN(c_tile, 0x0)
    nc = BASE_M * BASE_N
    for slot, linear in enumerate(cfg.block_tiles(blk)):
        mi, ni = cfg.swizzle(linear)
        # ComputeAndStoreTile
        base_a, base_b = mi * BASE_M * k, ni * BASE_N * k
        mte2 = mte1 = 0
        pto.SET_FLAG(Pipe.MTE1, Pipe.MTE2, 0)
        pto.SET_FLAG(Pipe.MTE1, Pipe.MTE2, 1)
        pto.SET_FLAG(Pipe.M, Pipe.MTE1, 0)
        pto.SET_FLAG(Pipe.M, Pipe.MTE1, 1)
        for kk in range(k // BASE_K):
            mte2, mte1 = gemm_k_step(kk, mte2, mte1, src0, src1, k, base_a, base_b,
                                     a_mat, b_mat, a_l0, b_l0, c_tile)
        pto.WAIT_FLAG(Pipe.MTE1, Pipe.MTE2, 0)
        pto.WAIT_FLAG(Pipe.MTE1, Pipe.MTE2, 1)
        pto.WAIT_FLAG(Pipe.M, Pipe.MTE1, 0)
        pto.WAIT_FLAG(Pipe.M, Pipe.MTE1, 1)
        gm_c = GlobalTensor(out, (1, 1, 1, BASE_M, BASE_N), (nc, nc, nc, cfg.n, 1), Layout.ND,
                            offset=mi * BASE_M * cfg.n + ni * BASE_N)
        pto.SET_FLAG(Pipe.M, Pipe.FIX, 0)
        pto.WAIT_FLAG(Pipe.M, Pipe.FIX, 0)
        pto.TSTORE(gm_c, c_tile)
        pto.PIPE_BARRIER(Pipe.ALL)
        # MultiBlockEnqueueFast: the tile id into the block's next slot, then the count (scalar
        # GM stores and dcci: not priced by the cycle model)
        queue[blk, 1 + slot] = mi * cfg.n_tiles + ni
        queue[blk, 0] = slot + 1


def gemm_ar_buffers(cfg: GemmArConfig, timing: bool = False, seed: int = 5
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """out (m x n f16), A (m x k f16), B stored n x k, the ready queues (one row per block)."""
    per_block = -(-cfg.m_tiles * cfg.n_tiles // cfg.blocks)
    queue = np.zeros((cfg.blocks, 1 + per_block), np.int32)
    if timing:
        return (np.empty((cfg.m, cfg.n), np.float16), np.empty((cfg.m, cfg.k), np.float16),
                np.empty((cfg.n, cfg.k), np.float16), queue)
    rng = np.random.default_rng(seed)
    a = rng.uniform(-1, 1, (cfg.m, cfg.k)).astype(np.float16)
    b = rng.uniform(-1, 1, (cfg.n, cfg.k)).astype(np.float16)
    return np.zeros((cfg.m, cfg.n), np.float16), a, b, queue


def run_gemm_ar(*, check: bool = True, timing: bool = False,
                cfg: GemmArConfig | None = None) -> Result:
    cfg = cfg or GemmArConfig()
    c, a, b, queue = gemm_ar_buffers(cfg, timing)
    t0 = time.perf_counter()
    rep = pto.launch(lambda *x: gemm_ar_compute(cfg, *x), c, a, b, queue, blocks=cfg.blocks,
                     target="a2a3", lockstep=False, cycles="timing" if timing else True)
    wall = time.perf_counter() - t0
    if check and not timing:
        ref = a.astype(np.float64) @ b.astype(np.float64).T
        if not np.allclose(c.astype(np.float64), ref, rtol=1e-2, atol=5e-2):
            raise SystemExit(f"gemm_ar compute {cfg}: result differs from numpy")
    t1 = time.perf_counter()
    launch = rep.launch
    launch_s = time.perf_counter() - t1
    ratio = launch.busy_ratio()
    busy = {p: ratio.get(p, 0.0) for p in ("M", "MTE1", "MTE2", "FIX")}
    return Result("a2a3/gemm_ar (compute)", f"{cfg.m}x{cfg.k}x{cfg.n} fp16, {cfg.blocks} cores",
                  launch.us, GEMM_AR_BOARD_US, busy, {}, wall, launch_s, rep)


# ---- a5/matmul_mxfp4_performance ---------------------------------------------------------------

MX_GROUP = 32  # SCALE_FACTOR: one E8M0 scale per 32 values along K
MX_SCALE_PARA = 4  # mxScalePara: a scale panel in L1 covers 4 data panels
F4 = "f4E2M1x2"
E8M0 = "f8E8M0"

#: the README's table (A5; the Chinese README: fp4 in, bf16 out): (m, k, n) -> (cube, TEXTRACT,
#: TLOAD, TSTORE ratios, execution time in us). main.cpp shows the tiling of (2040, 8192, 8100)
#: only: 32 cores of 512 x 1024 (4 x 8); (2048, 8192, 8192) splits the same way, the other sizes
#: need a tiling the README does not give (not run)
#: the rows run (main.cpp's tiling)
MX_RUN = ((2040, 8192, 8100), (2048, 8192, 8192))
MX_BOARD: dict[tuple[int, int, int], tuple[float, float, float, float, float]] = {
    (2048, 2048, 2048): (0.447, 0.466, 0.221, 0.256, 42.5),
    (2048, 4096, 4096): (0.774, 0.767, 0.385, 0.077, 100.3),
    (4096, 1024, 8192): (0.649, 0.584, 0.293, 0.257, 122.6),
    (1024, 12288, 4096): (0.849, 0.874, 0.434, 0.028, 137.7),
    (2048, 8192, 8192): (0.907, 0.881, 0.458, 0.046, 348.9),
    (2040, 8192, 8100): (0.830, 0.830, 0.421, 0.123, 377.3),
}


@dataclass(frozen=True)
class MxConfig:
    """LaunchMxMatmul's template arguments (stepM = stepN = 1)."""

    m: int = 2040
    k: int = 8192
    n: int = 8100
    single_m: int = 512
    single_n: int = 1024
    base_m: int = 256
    base_k: int = 256
    base_n: int = 256
    step_ka: int = 2
    step_kb: int = 2
    blocks: int = 32

    @property
    def m_iter(self) -> int:
        return -(-self.m // self.single_m)

    @property
    def n_iter(self) -> int:
        return -(-self.n // self.single_n)


def mxfp4_matmul(cfg: MxConfig, out: np.ndarray, src0: np.ndarray, src1: np.ndarray,
                 src2: np.ndarray, src3: np.ndarray) -> None:
    """``MxMatmulPerformance``: C (m x n, bf16) = (scaleA (x) A) @ (scaleB (x) B), A m x k packed
    fp4 e2m1 (ND), B stored n x k (a k x n DN view), scaleA m x k/32 (MX_A_ND), scaleB stored
    n x k/32 (MX_B_DN). Each core owns a [single_m, single_n] part of C, base blocks of
    base_m x base_n with the K loop through L1 (stepK 2 data panels, 8 scale panels) and the
    L0A / L0B / L0 scale ping-pong."""
    m, k, n = cfg.m, cfg.k, cfg.n
    bm, bk, bn, ska, skb = cfg.base_m, cfg.base_k, cfg.base_n, cfg.step_ka, cfg.step_kb
    bsk = bk // MX_GROUP
    sksa, sksb = ska * MX_SCALE_PARA, skb * MX_SCALE_PARA
    # RunMxMatmulDispatch: the cores past the grid return; the last row / column of cores
    # takes the remainder
    core = int(pto.get_block_idx())
    if core >= cfg.m_iter * cfg.n_iter:
        return
    mi_core, ni_core = core % cfg.m_iter, core // cfg.m_iter
    cur_single_m = m % cfg.single_m if mi_core == cfg.m_iter - 1 and m % cfg.single_m \
        else cfg.single_m
    cur_single_n = n % cfg.single_n if ni_core == cfg.n_iter - 1 and n % cfg.single_n \
        else cfg.single_n
    # InitGMOffsets (element offsets: fp4 values for A and B, scales for the scale matrices)
    row_start = min(mi_core * cfg.single_m, m)
    off_a = row_start * k
    off_b = ni_core * k * cfg.single_n
    off_sa = row_start * k // MX_GROUP
    off_sb = ni_core * k * cfg.single_n // MX_GROUP
    off_c = row_start * n + ni_core * cfg.single_n
    dyn = (pto.DYNAMIC, pto.DYNAMIC)
    a_mat = [Tile(TileType.Mat, F4, bm, bk * ska, BLayout.ColMajor, dyn, SLayout.RowMajor)
             for _ in range(2)]
    b_mat = [Tile(TileType.Mat, F4, bk * skb, bn, BLayout.RowMajor, dyn, SLayout.ColMajor)
             for _ in range(2)]
    sa_mat = [Tile(TileType.Mat, E8M0, bm, bsk * sksa, BLayout.RowMajor, dyn, SLayout.RowMajor,
                   32) for _ in range(2)]
    sb_mat = [Tile(TileType.Mat, E8M0, bsk * sksb, bn, BLayout.ColMajor, dyn, SLayout.ColMajor,
                   32) for _ in range(2)]
    a_l0 = [pto.TileLeft(F4, bm, bk, dyn, compact=CompactMode.Normal) for _ in range(2)]
    b_l0 = [pto.TileRight(F4, bk, bn, dyn, compact=CompactMode.Normal) for _ in range(2)]
    sa_l0 = [Tile(TileType.ScaleLeft, E8M0, bm, bsk, BLayout.RowMajor, dyn, SLayout.RowMajor, 32,
                  compact=CompactMode.Normal) for _ in range(2)]
    sb_l0 = [Tile(TileType.ScaleRight, E8M0, bsk, bn, BLayout.ColMajor, dyn, SLayout.ColMajor,
                  32, compact=CompactMode.Normal) for _ in range(2)]
    c_tile = pto.TileAcc(np.float32, bm, bn, dyn, compact=CompactMode.Normal)
    # InitBuffers: L1 A x2, B x2 (fp4: half a byte a value), then the scale panels
    a_bytes, b_bytes = bm * bk * ska // 2, bk * bn * skb // 2
    pto.TASSIGN(a_mat[0], 0x0)
    pto.TASSIGN(a_mat[1], a_bytes)
    pto.TASSIGN(b_mat[0], 2 * a_bytes)
    pto.TASSIGN(b_mat[1], 2 * a_bytes + b_bytes)
    s_base = 2 * a_bytes + 2 * b_bytes
    sa_bytes, sb_bytes = bm * bsk * sksa, bsk * bn * sksb
    pto.TASSIGN(sa_mat[0], s_base)
    pto.TASSIGN(sa_mat[1], s_base + sa_bytes)
    pto.TASSIGN(sb_mat[0], s_base + 2 * sa_bytes)
    pto.TASSIGN(sb_mat[1], s_base + 2 * sa_bytes + sb_bytes)
    for t in (a_l0, b_l0):
        pto.TASSIGN(t[0], 0x0)
        pto.TASSIGN(t[1], L0_PINGPONG_BYTES)
    pto.TASSIGN(c_tile, 0x0)
    # the scale tiles at GetScaleAddr of their data tiles: the address >> SHIFT_MX_ADDR, 4 in
    # A5's utils.hpp (the pong scale tiles at 32 KiB >> 4 = 0x800, inside the 4 KiB buffers)
    for s, d in ((sa_l0, a_l0), (sb_l0, b_l0)):
        for b in range(2):
            pto.TASSIGN(s[b], d[b].addr >> 4)
    # InitSyncFlags
    pto.SET_FLAG(Pipe.MTE1, Pipe.MTE2, 0)
    pto.SET_FLAG(Pipe.MTE1, Pipe.MTE2, 1)
    pto.SET_FLAG(Pipe.M, Pipe.MTE1, 0)
    pto.SET_FLAG(Pipe.M, Pipe.MTE1, 1)
    loops_m, loops_n = -(-cfg.single_m // bm), -(-cfg.single_n // bn)
    loops_k = -(-k // bk)
    rem_m, rem_n = cur_single_m % bm, cur_single_n % bn
    mte2 = mte2mx = mte1 = 0
    big = 1 << 40  # (the 5-D views' outer strides: never stepped)
    for i in range(loops_m):
        for j in range(loops_n):
            cur_m = rem_m if i == loops_m - 1 and rem_m else bm
            cur_n = rem_n if j == loops_n - 1 and rem_n else bn
            for b in range(2):  # the C++ re-makes the tiles with these valid shapes
                a_mat[b].set_valid(cur_m, bk * ska)
                b_mat[b].set_valid(bk * skb, cur_n)
                sa_mat[b].set_valid(cur_m, bsk * sksa)
                sb_mat[b].set_valid(bsk * sksb, cur_n)
                a_l0[b].set_valid(cur_m, bk)
                b_l0[b].set_valid(bk, cur_n)
                sa_l0[b].set_valid(cur_m, bsk)
                sb_l0[b].set_valid(bsk, cur_n)
            c_tile.set_valid(cur_m, cur_n)
            for kk in range(loops_k):
                # ProcessKIteration
                kmod = kk % ska
                if kmod == 0:
                    gm_a = GlobalTensor(src0, (1, 1, 1, cur_m, bk * ska), (big, big, big, k, 1),
                                        Layout.ND, dtype=F4,
                                        offset=off_a + i * k * bm + kk * bk)
                    gm_b = GlobalTensor(src1, (1, 1, 1, bk * skb, cur_n), (big, big, big, 1, k),
                                        Layout.DN, dtype=F4,
                                        offset=off_b + j * k * bn + kk * bk)
                    if kk % sksa == 0:
                        # the scale views as TileShape2D gives them for MX_A_ND / MX_B_DN
                        # ([1, 1, rows, cols / 2, 2] / [1, 1, cols, rows / 2, 2]); the C++
                        # passes a [1, 1, 1, rows, cols] shape, which A5's TLOAD does not read
                        # (it loads the tile's valid region with the views' row stride)
                        ks = k // MX_GROUP
                        gm_sa = GlobalTensor(src2, (1, 1, cur_m, bsk * sksa // 2, 2),
                                             (big, big, ks, 2, 1), Layout.MX_A_ND,
                                             offset=off_sa + i * k * bm // MX_GROUP + kk * bsk)
                        gm_sb = GlobalTensor(src3, (1, 1, cur_n, bsk * sksb // 2, 2),
                                             (big, big, ks, 2, 1), Layout.MX_B_DN,
                                             offset=off_sb + j * k * bn // MX_GROUP + kk * bsk)
                        pto.WAIT_FLAG(Pipe.MTE1, Pipe.MTE2, mte2)
                        pto.TLOAD(a_mat[mte2], gm_a)
                        pto.TLOAD(sa_mat[mte2mx], gm_sa)
                        pto.SET_FLAG(Pipe.MTE2, Pipe.MTE1, 0)
                        pto.TLOAD(b_mat[mte2], gm_b)
                        pto.TLOAD(sb_mat[mte2mx], gm_sb)
                        mte2mx = 1 - mte2mx
                    else:
                        pto.WAIT_FLAG(Pipe.MTE1, Pipe.MTE2, mte2)
                        pto.TLOAD(a_mat[mte2], gm_a)
                        pto.SET_FLAG(Pipe.MTE2, Pipe.MTE1, 0)
                        pto.TLOAD(b_mat[mte2], gm_b)
                    pto.SET_FLAG(Pipe.MTE2, Pipe.MTE1, 1)
                    mte2 = 1 - mte2
                cur, cur_mx = 1 - mte2, 1 - mte2mx
                # MacroMatmul
                pto.WAIT_FLAG(Pipe.M, Pipe.MTE1, mte1)
                if kmod == 0:
                    pto.WAIT_FLAG(Pipe.MTE2, Pipe.MTE1, 0)
                pto.TEXTRACT(a_l0[mte1], a_mat[cur], 0, kmod * bk)
                pto.TEXTRACT(sa_l0[mte1], sa_mat[cur_mx], 0, (kk % sksa) * bsk)
                if kmod == 0:
                    pto.WAIT_FLAG(Pipe.MTE2, Pipe.MTE1, 1)
                pto.TEXTRACT(b_l0[mte1], b_mat[cur], (kk % skb) * bk, 0)
                pto.TEXTRACT(sb_l0[mte1], sb_mat[cur_mx], (kk % sksb) * bsk, 0)
                if (kk + 1) % ska == 0:
                    pto.SET_FLAG(Pipe.MTE1, Pipe.MTE2, cur)
                pto.SET_FLAG(Pipe.MTE1, Pipe.M, mte1)
                pto.WAIT_FLAG(Pipe.MTE1, Pipe.M, mte1)
                if kk == 0:
                    pto.TMATMUL_MX(c_tile, a_l0[mte1], sa_l0[mte1], b_l0[mte1], sb_l0[mte1])
                else:
                    pto.TMATMUL_MX(c_tile, c_tile, a_l0[mte1], sa_l0[mte1], b_l0[mte1],
                                   sb_l0[mte1])
                pto.SET_FLAG(Pipe.M, Pipe.MTE1, mte1)
                mte1 = 1 - mte1
            store_result(GlobalTensor(out, (1, 1, 1, cur_m, cur_n), (big, big, big, n, 1),
                                      Layout.ND, offset=off_c + i * bm * n + j * bn), c_tile)
    wait_sync_flags()


def mx_buffers(cfg: MxConfig, timing: bool = False, seed: int = 7
               ) -> tuple[np.ndarray, ...]:
    """out (m x n bf16), A (m x k fp4 codes, two a byte: even k in the low nibble), B stored
    n x k likewise, scaleA (m x k / 32 E8M0 bytes), scaleB stored n x k / 32."""
    m, k, n = cfg.m, cfg.k, cfg.n
    ks = k // MX_GROUP
    out = np.zeros((m, n), ml_dtypes.bfloat16)
    if timing:
        return (out, np.empty(m * k // 2, np.uint8), np.empty(n * k // 2, np.uint8),
                np.empty((m, ks), ml_dtypes.float8_e8m0fnu),
                np.empty((n, ks), ml_dtypes.float8_e8m0fnu))
    rng = np.random.default_rng(seed)

    def codes(rows: int) -> np.ndarray:
        c = rng.integers(0, 16, (rows, k)).astype(np.uint8)
        return (c[:, 0::2] | (c[:, 1::2] << 4)).reshape(-1)

    def scales(rows: int) -> np.ndarray:
        return rng.integers(122, 132, (rows, ks)).astype(np.uint8).view(
            ml_dtypes.float8_e8m0fnu)
    return out, codes(m), codes(n), scales(m), scales(n)


def mx_reference(cfg: MxConfig, a: np.ndarray, b: np.ndarray, sa: np.ndarray,
                 sb: np.ndarray) -> np.ndarray:
    """numpy in float64: the e2m1 codes decoded by ml_dtypes, each scaled by 2^(e - 127) of its
    group of 32 along K."""
    m, k, n = cfg.m, cfg.k, cfg.n

    def decode(packed: np.ndarray, rows: int) -> np.ndarray:
        p = packed.reshape(rows, k // 2)
        c = np.empty((rows, k), np.uint8)
        c[:, 0::2], c[:, 1::2] = p & 0xF, p >> 4
        return c.view(ml_dtypes.float4_e2m1fn).astype(np.float64)
    grp = np.arange(k) // MX_GROUP
    av = decode(a, m) * 2.0 ** (sa.view(np.uint8)[:, grp].astype(np.float64) - 127)
    bv = decode(b, n) * 2.0 ** (sb.view(np.uint8)[:, grp].astype(np.float64) - 127)
    return av @ bv.T


def run_mx(key: tuple[int, int, int] = (2040, 8192, 8100), *, check: bool = True,
           timing: bool = False, cfg: MxConfig | None = None) -> Result:
    cfg = cfg or MxConfig(*key)
    bufs = mx_buffers(cfg, timing)
    t0 = time.perf_counter()
    rep = pto.launch(lambda *x: mxfp4_matmul(cfg, *x), *bufs, blocks=cfg.blocks,
                     target="a5",
                     lockstep=False, cycles="timing" if timing else True)
    wall = time.perf_counter() - t0
    if check and not timing:
        ref = mx_reference(cfg, *bufs[1:])
        got = bufs[0].astype(np.float64)
        if not np.allclose(got, ref, rtol=1e-2, atol=1e-2 * float(np.abs(ref).max())):
            raise SystemExit(f"matmul_mxfp4 {cfg}: result differs from numpy")
    t1 = time.perf_counter()
    launch = rep.launch
    launch_s = time.perf_counter() - t1
    ratio = launch.busy_ratio()
    busy = {p: ratio.get(p, 0.0) for p in ("M", "MTE1", "MTE2", "FIX")}
    board = MX_BOARD.get((cfg.m, cfg.k, cfg.n), (float("nan"),) * 5)
    return Result("a5/matmul_mxfp4_performance", f"{cfg.m}x{cfg.k}x{cfg.n} fp4, "
                  f"{cfg.m_iter * cfg.n_iter} cores", launch.us, board[4], busy,
                  {"M": board[0], "MTE1": board[1], "MTE2": board[2], "FIX": board[3]},
                  wall, launch_s, rep)


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
    #: counted in issue #30's whole-kernel figures; the cores table of common/flash_atten is
    #: reported only (a cold single launch: benchmarks/README.md, "Which kernel and which
    #: launch the cores table measured")
    scored: bool = True

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
            if p in r.board_busy else f"{p} {r.busy[p]:.2f}/-" for p in r.busy)
        lines.append(f"| {r.kernel} | {r.shape} | {r.predicted_us:.1f} | {r.board_us:.1f} | "
                     f"{r.precision:.3f} | {pipes} | {r.wall_s:.1f} s / {r.launch_s:.2f} s |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--kernels", default="gemm,fa_seq,conv",
                    help="gemm (a2a3/gemm_performance), fa (common/flash_atten), conv "
                    "(a2a3/conv2d_forward), gemm_ar (a2a3/gemm_ar's compute kernel), mx "
                    "(a5/matmul_mxfp4_performance), fa_seq (common/flash_atten's 910B2 "
                    "by-sequence rows)")
    ap.add_argument("--sizes", default="1536,3072", help="gemm: m = k = n")
    ap.add_argument("--fa-cores", default="1,2,4,8", help="fa: blocks (S0 = 128 x cores)")
    ap.add_argument("--fa-s1", default="1024,2048,4096,8192", help="fa: S1")
    ap.add_argument("--fa-kernel", default="origin", choices=("origin", "later"),
                    help="fa: the kernel committed with the cores table (upstream 6cc68238, "
                    "12-entry FIFO, FFTS flags) or the later one (TMPipe, unit flag)")
    ap.add_argument("--conv", default="all", help="conv: 'all' (the README's five shapes) or "
                    "batch,c1,hin,win,cout[;...]")
    ap.add_argument("--mx", default="2040,8192,8100;2048,8192,8192",
                    help="mx: m,k,n[;...] (main.cpp's tiling: 32 cores of 512 x 1024)")
    ap.add_argument("--no-check", action="store_true")
    ap.add_argument("--timing", action="store_true",
                    help='cycles="timing": no tile values (fast; nothing checked)')
    ap.add_argument("--explain", action="store_true", help="print each launch's summary")
    ns = ap.parse_args(argv)
    kernels = ns.kernels.split(",")
    runs: list[Any] = []
    if "gemm" in kernels:
        runs += [lambda s=s: run_gemm(s, check=not ns.no_check, timing=ns.timing)
                 for s in map(int, ns.sizes.split(","))]
    if "fa" in kernels:
        runs += [lambda c=c, s1=s1: run_fa(c, s1, check=not ns.no_check, timing=ns.timing,
                                           origin=ns.fa_kernel == "origin")
                 for c in map(int, ns.fa_cores.split(",")) for s1 in map(int, ns.fa_s1.split(","))]
    if "fa_seq" in kernels:
        runs += [lambda s=s: run_fa_seq(s, check=not ns.no_check, timing=ns.timing)
                 for s in FA_SEQ_RUN]
    if "conv" in kernels:
        keys = list(CONV_BOARD) if ns.conv == "all" else [
            tuple(int(v) for v in c.split(",")) for c in ns.conv.split(";")]
        runs += [lambda key=key: run_conv(key, check=not ns.no_check, timing=ns.timing)
                 for key in keys]
    if "gemm_ar" in kernels:
        runs.append(lambda: run_gemm_ar(check=not ns.no_check, timing=ns.timing))
    if "mx" in kernels:
        runs += [lambda key=key: run_mx(key, check=not ns.no_check, timing=ns.timing)
                 for key in [tuple(int(v) for v in c.split(",")) for c in ns.mx.split(";")]]
    results = []
    for run in runs:
        r = run()
        results.append(r)
        if ns.explain:
            print(r.report.summary(), file=sys.stderr)
            print(r.report.launch.summary(), file=sys.stderr)
        print(f"{r.kernel} {r.shape}: {r.predicted_us:.1f} us (board {r.board_us}), "
              f"{r.wall_s:.1f} s", file=sys.stderr)
    print(table(results))
    for name in dict.fromkeys(r.kernel for r in results):
        ps = [r.precision for r in results if r.kernel == name]
        print(f"{name}: median precision {statistics.median(ps):.3f}, min {min(ps):.3f} "
              f"over {len(ps)}")
    scored = [r.precision for r in results if r.scored]
    if scored:
        print(f"scored (issue #30): median precision {statistics.median(scored):.3f}, "
              f"min {min(scored):.3f} over {len(scored)}")
    if any(not r.scored for r in results):
        print(f"not scored: {sum(not r.scored for r in results)} cases of common/flash_atten's "
              "cores table (one cold launch each, no warm-up: see benchmarks/README.md)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

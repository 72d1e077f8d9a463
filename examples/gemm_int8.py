"""Tiled GEMM, f16 in, f32 accumulate, int8 out through the fix-pipe (TSTORE_FP).

C[M, N] (int8) = quant(A[M, K] @ B[K, N]) where quant is per output column j:
clamp(rint(acc * scale[j] + offset[j]), -128, 127). Each block computes one T x T tile of C:
for every K step it TLOADs a T x T tile of A and of B into L1 (Mat, NZ), TMOVs them to L0A
(Left) and L0B (Right) and accumulates with TMATMUL / TMATMUL_ACC into an f32 Acc tile (L0C).
The per-column quant words (64-bit: 19-bit scale, 9-bit offset, sign; see ptoisa/isa/quant.py)
go GM -> L1 (TLOAD) -> fix-pipe buffer (TMOV to a Scaling tile), and TSTORE_FP converts the
Acc tile to int8 while storing it. The same kernel as a .pto program is
``examples/gemm_int8.pto``. Run it:

    python examples/gemm_int8.py [--target cpu|a2a3|a5] [--pto]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

import ptoisa as pto
from ptoisa import BLayout, GlobalTensor, SLayout, Tile, TileType

T = 32                       # tile edge: A, B and C tiles are T x T
M, K, N = 64, 96, 64         # problem size (multiples of T): 2 x 2 blocks, 3 K steps
PTO_FILE = Path(__file__).with_suffix(".pto")


def quant_word(scale: float, offset: int = 0, signed: bool = True) -> int:
    """A fix-pipe vector quant word: the f32 scale's top 19 bits in bits 13..31 (1 sign,
    8 exponent, 10 mantissa bits), the unsigned offset in bits 37..45, the sign flag (int8
    rather than uint8 output) in bit 46."""
    f32 = int(np.array([scale], np.float32).view(np.uint32)[0])
    return (f32 & 0xFFFFE000) | ((offset & 0x1FF) << 37) | (int(signed) << 46)


def gemm_int8_kernel(a: np.ndarray, b: np.ndarray, words: np.ndarray, c: np.ndarray) -> None:
    """One block: the T x T tile (bi, bj) of C, with bi, bj from the block index."""
    blk = pto.get_block_idx()
    bi, bj = blk // (N // T), blk % (N // T)

    def view(arr: np.ndarray, cols: int, r0: object, c0: object, rows: int = T) -> GlobalTensor:
        """rows x T window at (r0, c0) of a row-major matrix with ``cols`` columns."""
        size = arr.size
        return GlobalTensor(arr, (1, 1, 1, rows, T), (size, size, size, cols, 1),
                            offset=r0 * cols + c0)

    mat_a = Tile(TileType.Mat, np.float16, T, T, BLayout.ColMajor, None, SLayout.RowMajor)
    mat_b = Tile(TileType.Mat, np.float16, T, T, BLayout.ColMajor, None, SLayout.RowMajor)
    left = pto.TileLeft(np.float16, T, T)
    right = pto.TileRight(np.float16, T, T)
    acc = pto.TileAcc(np.float32, T, T)
    for k in range(K // T):
        e1 = pto.TLOAD(mat_a, view(a, K, bi * T, k * T))
        e2 = pto.TLOAD(mat_b, view(b, N, k * T, bj * T))
        e1 = pto.TMOV(left, mat_a, e1)
        e2 = pto.TMOV(right, mat_b, e2)
        if k == 0:
            e = pto.TMATMUL(acc, left, right, e1, e2)
        else:
            e = pto.TMATMUL_ACC(acc, acc, left, right, e1, e2)

    # the quant words of this block's T output columns: GM -> L1 -> fix-pipe buffer
    wmat = Tile(TileType.Mat, np.uint64, 1, T)
    scaling = Tile(TileType.Scaling, np.uint64, 1, T)
    ew = pto.TLOAD(wmat, view(words, N, 0, bj * T, rows=1))
    ew = pto.TMOV(scaling, wmat, ew)
    pto.TSTORE_FP(view(c, N, bi * T, bj * T), acc, scaling, e, ew)


def make_inputs(seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray,
                                        np.ndarray]:
    """A, B with values k/8 in [-2, 2] (every f32 partial sum is exact, so any summation
    order gives the same accumulator), per-column scales with at most 10 mantissa bits (what
    a quant word holds), small offsets; scales up to 8 make some outputs saturate."""
    rng = np.random.default_rng(seed)
    a = (rng.integers(-16, 17, (M, K)) / 8).astype(np.float16)
    b = (rng.integers(-16, 17, (K, N)) / 8).astype(np.float16)
    scale = np.resize(np.array([0.5, 1.0, 1.5, 2.0, 0.25, 3.0, 8.0, 0.375]), N)
    offset = np.arange(N) % 5
    words = np.array([[quant_word(s, int(o)) for s, o in zip(scale, offset, strict=True)]],
                     np.uint64)
    return a, b, words, scale, offset


def reference(a: np.ndarray, b: np.ndarray, scale: np.ndarray, offset: np.ndarray) -> np.ndarray:
    acc = a.astype(np.float64) @ b.astype(np.float64)
    return np.clip(np.rint(acc * scale + offset), -128, 127).astype(np.int8)


def run_eager(a: np.ndarray, b: np.ndarray, words: np.ndarray,
              target: str = pto.DEFAULT_TARGET) -> np.ndarray:
    c = np.zeros((M, N), np.int8)
    pto.launch(gemm_int8_kernel, a, b, words, c, blocks=(M // T) * (N // T), target=target)
    return c


def run_pto(a: np.ndarray, b: np.ndarray, words: np.ndarray, target: str = pto.DEFAULT_TARGET,
            path: Path = PTO_FILE) -> np.ndarray:
    """Run examples/gemm_int8.pto: @gemm_int8(%a, %b, %words, %c) over 4 blocks."""
    c = np.zeros((M, N), np.int8)
    pto.load(path, target=target).gemm_int8(a, b, words, c, blocks=(M // T) * (N // T))
    return c


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--target", default=pto.DEFAULT_TARGET, choices=["cpu", "a2a3", "a5"],
                    help=f"target profile (default {pto.DEFAULT_TARGET})")
    ap.add_argument("--pto", action="store_true", help=f"run {PTO_FILE.name} instead")
    args = ap.parse_args(argv)
    if args.pto and not PTO_FILE.is_file():  # (a copy of this script without the program beside it)
        ap.error(f"--pto runs {PTO_FILE.name}, which is not beside this script in "
                 f"{PTO_FILE.parent} (it comes with the script in ptoisa's examples/)")

    a, b, words, scale, offset = make_inputs()
    c = run_pto(a, b, words, args.target) if args.pto else run_eager(a, b, words, args.target)
    want = reference(a, b, scale, offset)
    kind = PTO_FILE.name if args.pto else "eager"
    sat = int(np.sum((c == 127) | (c == -128)))
    print(f"gemm_int8 ({kind}) on {args.target}: {M}x{K} @ {K}x{N} f16 -> int8, "
          f"{(M // T) * (N // T)} blocks of {T}x{T}, {K // T} K steps; {sat} outputs saturated")
    print("C[0, :8] =", c[0, :8].tolist())
    if not np.array_equal(c, want):
        bad = np.argwhere(c != want)
        r, col = bad[0]
        print(f"gemm_int8: MISMATCH with numpy at {len(bad)} positions, first C[{r}, {col}] = "
              f"{c[r, col]}, expected {want[r, col]}")
        return 1
    print("gemm_int8: matches numpy")
    return 0


if __name__ == "__main__":
    sys.exit(main())

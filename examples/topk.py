"""Top-k of every row with the sort instructions: TSORT32, then TMRGSORT (both forms).

Each block takes one row of 256 f32 values and returns its K largest values and their column
indices, largest first. The row is loaded as two halves of 128. For each half:

* TCI writes the column indices (0..127, or 128..255) into a ui32 tile;
* TSORT32 sorts each 32-element block into 8-byte (value, index) records, descending;
* TMRGSORT(dst, src, blockLen=64) merges the 4 sorted runs of 32 records (64 f32 slots each)
  into one sorted run of 128 records.

The top K of the row are among the top K of each half, so the valid region of each sorted half
is cut to its first K records (2K f32 slots, a dynamic valid region) and the two-list
TMRGSORT(dst, executed, tmp, src0, src1) merges just those. TGATHER with mask P0101 / P1010
then splits the first K records into values (even slots) and indices (odd slots, u32 bits).

Ties: TSORT32 keeps equal values in index order and TMRGSORT takes the lower-numbered list
first, so equal values come out in increasing column order, which is numpy's
``np.argsort(-x, kind="stable")``. The same kernel as a .pto program is ``examples/topk.pto``.
Run it:

    python examples/topk.py [--target cpu|a2a3|a5] [--rows B] [--pto]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

import ptoisa as pto
from ptoisa import GlobalTensor, Tile, TileType
from ptoisa.isa.irregular import MaskPattern, MrgSortExecutedNumList

L = 256                       # values per row
H = L // 2                    # values per half (4 TSORT32 blocks of 32)
K = 16                        # top K
PTO_FILE = Path(__file__).with_suffix(".pto")


def vec(dtype: type, cols: int, dynamic: bool = False) -> Tile:
    """A 1-row Vec tile (TSORT32/TMRGSORT/TGATHER want row-major Vec tiles); ``dynamic``:
    a dynamic valid shape (``Tile<..., DYNAMIC, DYNAMIC>``, changed with SetValidShape)."""
    valid = (pto.Dyn(1), pto.Dyn(cols)) if dynamic else None
    return Tile(TileType.Vec, dtype, 1, cols, valid=valid)


def sorted_half(x: np.ndarray, row: object, half: int) -> Tile:
    """Sort values [half*H, half*H + H) of a row: a tile of H (value, index) records, i.e.
    2*H f32 slots, descending, with a dynamic valid column count."""
    g = GlobalTensor(x, (1, 1, 1, 1, H), (x.size,) * 4 + (1,), offset=row * L + half * H)
    vals = vec(np.float32, H)
    idx = vec(np.uint32, H)
    runs = vec(np.float32, 2 * H)                        # 4 sorted runs of 32 records
    merged = vec(np.float32, 2 * H, dynamic=True)        # one sorted run of H records
    e1 = pto.TLOAD(vals, g)
    e2 = pto.TCI(idx, half * H)                          # idx[0, c] = half*H + c
    e = pto.TSORT32(runs, vals, idx, e1, e2)
    pto.TMRGSORT(merged, runs, 64, e)                    # blockLen = 64 slots = 32 records
    return merged


def topk_kernel(x: np.ndarray, top_vals: np.ndarray, top_idx: np.ndarray) -> None:
    """One block: row b of x (B x L) -> top_vals[b] (K f32), top_idx[b] (K u32)."""
    b = pto.get_block_idx()
    s0 = sorted_half(x, b, 0)
    s1 = sorted_half(x, b, 1)
    s0.SetValidShape(1, 2 * K)       # keep the first K records (2K slots) of each half
    s1.SetValidShape(1, 2 * K)

    # dst and tmp: one row as wide as both sources' Cols (tmp.Cols >= src0.Cols + src1.Cols;
    # PTOAS wants dst like tmp); the merge writes 2K records
    best = vec(np.float32, 4 * H, dynamic=True)
    tmp = vec(np.float32, 4 * H)
    executed = MrgSortExecutedNumList()
    e = pto.TMRGSORT(best, executed, tmp, s0, s1, exhausted=False)
    best.SetValidShape(1, 2 * K)     # the top K records

    tv = vec(np.float32, K)
    ti = vec(np.uint32, K)
    ev = pto.TGATHER(tv, best, e, maskPattern=MaskPattern.P0101)  # values: even slots
    ei = pto.TGATHER(ti, best, e, maskPattern=MaskPattern.P1010)  # indices: odd slots
    out = (1, 1, 1, 1, K), (top_vals.size,) * 4 + (1,)
    pto.TSTORE(GlobalTensor(top_vals, *out, offset=b * K), tv, ev)
    pto.TSTORE(GlobalTensor(top_idx, *out, offset=b * K), ti, ei)


def reference(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """numpy: descending by value, equal values by increasing column (stable sort of -x)."""
    order = np.argsort(-x, axis=1, kind="stable")[:, :K]
    return np.take_along_axis(x, order, axis=1), order.astype(np.uint32)


def make_input(rows: int, seed: int = 0) -> np.ndarray:
    """Values on a coarse grid (multiples of 1/4 in [-8, 8]) so that rows have many ties."""
    rng = np.random.default_rng(seed)
    return (rng.integers(-32, 33, (rows, L)) / 4).astype(np.float32)


def run_eager(x: np.ndarray, target: str = pto.DEFAULT_TARGET) -> tuple[np.ndarray, np.ndarray]:
    vals = np.zeros((x.shape[0], K), np.float32)
    idx = np.zeros((x.shape[0], K), np.uint32)
    pto.launch(topk_kernel, x, vals, idx, blocks=x.shape[0], target=target)
    return vals, idx


def run_pto(x: np.ndarray, target: str = pto.DEFAULT_TARGET, path: Path = PTO_FILE
            ) -> tuple[np.ndarray, np.ndarray]:
    """Run examples/topk.pto: @topk(%x, %top_vals, %top_idx), one block per row."""
    vals = np.zeros((x.shape[0], K), np.float32)
    idx = np.zeros((x.shape[0], K), np.uint32)
    pto.load(path, target=target).topk(x, vals, idx, blocks=x.shape[0])
    return vals, idx


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--target", default=pto.DEFAULT_TARGET, choices=["cpu", "a2a3", "a5"],
                    help=f"target profile (default {pto.DEFAULT_TARGET})")
    ap.add_argument("--rows", type=int, default=4, help="rows B (one block each)")
    ap.add_argument("--pto", action="store_true", help=f"run {PTO_FILE.name} instead")
    args = ap.parse_args(argv)
    if args.pto and not PTO_FILE.is_file():  # (a copy of this script without the program beside it)
        ap.error(f"--pto runs {PTO_FILE.name}, which is not beside this script in "
                 f"{PTO_FILE.parent} (it comes with the script in ptoisa's examples/)")

    x = make_input(args.rows)
    vals, idx = run_pto(x, args.target) if args.pto else run_eager(x, args.target)
    want_v, want_i = reference(x)
    kind = PTO_FILE.name if args.pto else "eager"
    print(f"topk ({kind}) on {args.target}: top {K} of {args.rows} rows x {L} f32, "
          f"one block per row")
    print("row 0 values :", vals[0, :8].tolist(), "...")
    print("row 0 indices:", idx[0, :8].tolist(), "...")
    if not (np.array_equal(vals, want_v) and np.array_equal(idx, want_i)):
        r = int(np.argwhere((vals != want_v) | (idx != want_i))[0, 0])
        print(f"topk: MISMATCH with numpy in row {r}: got values {vals[r].tolist()} indices "
              f"{idx[r].tolist()}, expected {want_v[r].tolist()} {want_i[r].tolist()}")
        return 1
    print("topk: matches numpy")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Row softmax over a grid of blocks, with a ragged last block (dynamic valid regions).

Each block takes ROWS rows of an N x COLS f32 matrix: TLOAD, TROWMAX, TROWEXPANDSUB (x - max),
TEXP, TROWSUM, TROWEXPANDDIV (e / sum), TSTORE. N need not be a multiple of ROWS: the last
block's tiles and GM views have a dynamic valid row count, min(ROWS, N - row0), and every
instruction works over the valid region only. The same kernel as a .pto program is
``examples/softmax.pto``. Run it:

    python examples/softmax.py [--target cpu|a2a3|a5] [--rows N] [--pto]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

import ptoisa as pto
from ptoisa import BLayout, GlobalTensor, Tile, TileType

ROWS, COLS = 8, 64          # one tile: ROWS x COLS f32 (2 KiB of the Unified Buffer)
PTO_FILE = Path(__file__).with_suffix(".pto")


def softmax_kernel(x: np.ndarray, out: np.ndarray, n_rows: int) -> None:
    """One block: rows [b*ROWS, b*ROWS + valid) of x -> out, valid = min(ROWS, n_rows - b*ROWS)."""
    b = pto.get_block_idx()
    row0 = b * ROWS
    valid = pto.min(ROWS, n_rows - row0)  # per block; pto.min keeps it exportable (arith.minsi)
    shape, stride = (1, 1, 1, valid, COLS), (n_rows * COLS,) * 3 + (COLS, 1)
    gx = GlobalTensor(x, shape, stride, offset=row0 * COLS)
    go = GlobalTensor(out, shape, stride, offset=row0 * COLS)

    vr = pto.Dyn(valid)                # dynamic valid rows: Tile<..., DYNAMIC, COLS>
    t = Tile(TileType.Vec, np.float32, ROWS, COLS, valid=(vr, COLS))
    tmp = Tile(TileType.Vec, np.float32, ROWS, COLS, valid=(vr, COLS))
    mx = Tile(TileType.Vec, np.float32, ROWS, 1, BLayout.ColMajor, valid=(vr, 1))
    sm = Tile(TileType.Vec, np.float32, ROWS, 1, BLayout.ColMajor, valid=(vr, 1))

    e = pto.TLOAD(t, gx)
    e = pto.TROWMAX(mx, t, tmp, e)          # mx[r] = max_c t[r, c]
    e = pto.TROWEXPANDSUB(t, t, mx, e)      # t[r, c] -= mx[r]   (exp cannot overflow)
    e = pto.TEXP(t, t, e)
    e = pto.TROWSUM(sm, t, tmp, e)          # sm[r] = sum_c t[r, c]
    e = pto.TROWEXPANDDIV(t, t, sm, e)      # t[r, c] /= sm[r]
    pto.TSTORE(go, t, e)


def reference(x: np.ndarray) -> np.ndarray:
    """numpy softmax over each row (float64, then rounded to f32)."""
    z = x.astype(np.float64)
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return (e / e.sum(axis=1, keepdims=True)).astype(np.float32)


def blocks_for(n_rows: int) -> int:
    return -(-n_rows // ROWS)


def run_eager(x: np.ndarray, target: str = pto.DEFAULT_TARGET) -> np.ndarray:
    out = np.zeros_like(x)
    pto.launch(softmax_kernel, x, out, x.shape[0], blocks=blocks_for(x.shape[0]), target=target)
    return out


def run_pto(x: np.ndarray, target: str = pto.DEFAULT_TARGET, path: Path = PTO_FILE) -> np.ndarray:
    """Run examples/softmax.pto: @softmax(%x, %out, %n_rows : i32) over ceil(N/ROWS) blocks."""
    out = np.zeros_like(x)
    prog = pto.load(path, target=target)
    prog.softmax(x, out, x.shape[0], blocks=blocks_for(x.shape[0]))
    return out


def check(out: np.ndarray, x: np.ndarray) -> bool:
    """f32 exp/sum/div against a float64 reference: a few ulp."""
    return bool(np.allclose(out, reference(x), rtol=2e-6, atol=1e-7))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--target", default=pto.DEFAULT_TARGET, choices=["cpu", "a2a3", "a5"],
                    help=f"target profile (default {pto.DEFAULT_TARGET})")
    ap.add_argument("--rows", type=int, default=45, help="matrix rows N (any N >= 1)")
    ap.add_argument("--pto", action="store_true", help=f"run {PTO_FILE.name} instead")
    args = ap.parse_args(argv)
    if args.pto and not PTO_FILE.is_file():  # (a copy of this script without the program beside it)
        ap.error(f"--pto runs {PTO_FILE.name}, which is not beside this script in "
                 f"{PTO_FILE.parent} (it comes with the script in ptoisa's examples/)")

    rng = np.random.default_rng(0)
    x = (rng.standard_normal((args.rows, COLS)) * 4).astype(np.float32)
    out = run_pto(x, args.target) if args.pto else run_eager(x, args.target)
    kind = PTO_FILE.name if args.pto else "eager"
    nb, last = blocks_for(args.rows), args.rows - (blocks_for(args.rows) - 1) * ROWS
    print(f"softmax ({kind}) on {args.target}: {args.rows}x{COLS} f32, {nb} blocks of "
          f"{ROWS} rows (last block {last} valid rows); row 0 sums to {out[0].sum():.6f}")
    if not check(out, x):
        err = np.abs(out - reference(x)).max()
        print(f"softmax: MISMATCH with numpy (max abs error {err:.3g})")
        return 1
    print("softmax: matches numpy")
    return 0


if __name__ == "__main__":
    sys.exit(main())

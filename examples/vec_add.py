"""Vector addition over a grid of blocks, written with the PTO intrinsics.

Each block loads one 64x64 tile of x and y from global memory, adds them on the vector unit
and stores the result: the kernel every tile ISA tutorial starts with. The same kernel as a
.pto program is ``examples/vec_add.pto``. Run it:

    python examples/vec_add.py [--target cpu|a2a3|a5] [--blocks N] [--pto]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

import ptoisa as pto

ROWS, COLS = 64, 64
PTO_FILE = Path(__file__).with_suffix(".pto")


def vec_add_kernel(x: np.ndarray, y: np.ndarray, z: np.ndarray) -> None:
    """One block: z[b] = x[b] + y[b], the b-th 64x64 f32 tile of the flat arrays."""
    n = ROWS * COLS
    b = pto.get_block_idx()
    shape, stride = (1, 1, 1, ROWS, COLS), (n, n, n, COLS, 1)
    gx = pto.GlobalTensor(x, shape, stride, offset=b * n)
    gy = pto.GlobalTensor(y, shape, stride, offset=b * n)
    gz = pto.GlobalTensor(z, shape, stride, offset=b * n)

    tx = pto.Tile(pto.TileType.Vec, np.float32, ROWS, COLS)
    ty = pto.Tile(pto.TileType.Vec, np.float32, ROWS, COLS)
    tz = pto.Tile(pto.TileType.Vec, np.float32, ROWS, COLS)
    pto.TASSIGN(tx, 0x0000)          # byte addresses in the Unified Buffer, as on the NPU
    pto.TASSIGN(ty, 0x4000)
    pto.TASSIGN(tz, 0x8000)

    e1 = pto.TLOAD(tx, gx)
    e2 = pto.TLOAD(ty, gy)
    e3 = pto.TADD(tz, tx, ty, e1, e2)   # waits on both loads, like the C++ event API
    pto.TSTORE(gz, tz, e3)


def make_inputs(blocks: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    n = blocks * ROWS * COLS
    return rng.standard_normal(n, dtype=np.float32), rng.standard_normal(n, dtype=np.float32)


def run_eager(x: np.ndarray, y: np.ndarray, target: str = pto.DEFAULT_TARGET) -> np.ndarray:
    z = np.zeros_like(x)
    pto.launch(vec_add_kernel, x, y, z, blocks=x.size // (ROWS * COLS), target=target,
               mode="manual")
    return z


def run_pto(x: np.ndarray, y: np.ndarray, target: str = pto.DEFAULT_TARGET,
            path: Path = PTO_FILE) -> np.ndarray:
    """Run examples/vec_add.pto: @vec_add(%x, %y, %z), one 64x64 tile per block."""
    z = np.zeros_like(x)
    pto.load(path, target=target).vec_add(x, y, z, blocks=x.size // (ROWS * COLS))
    return z


def show_corner(z: np.ndarray, target: str) -> None:
    """TPRINT a corner of the result: a 4x8 tile with a 3x6 valid region."""
    n = z.size
    with pto.target(target, mode="manual"):
        corner = pto.Tile(pto.TileType.Vec, np.float32, 4, 8, valid=(3, 6))
        pto.TASSIGN(corner, 0xC000)
        pto.TLOAD(corner, pto.GlobalTensor(z, (1, 1, 1, 3, 6), (n, n, n, COLS, 1)))
        pto.TPRINT(corner)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--target", default=pto.DEFAULT_TARGET, choices=["cpu", "a2a3", "a5"],
                    help=f"target profile (default {pto.DEFAULT_TARGET})")
    ap.add_argument("--blocks", type=int, default=16)
    ap.add_argument("--pto", action="store_true", help=f"run {PTO_FILE.name} instead")
    args = ap.parse_args(argv)
    if args.pto and not PTO_FILE.is_file():  # (a copy of this script without the program beside it)
        ap.error(f"--pto runs {PTO_FILE.name}, which is not beside this script in "
                 f"{PTO_FILE.parent} (it comes with the script in ptoisa's examples/)")

    x, y = make_inputs(args.blocks)
    z = run_pto(x, y, args.target) if args.pto else run_eager(x, y, args.target)
    show_corner(z, args.target)
    kind = PTO_FILE.name if args.pto else "eager"
    if not np.array_equal(z, x + y):
        print(f"vec_add: MISMATCH with numpy in {int((z != x + y).sum())} elements")
        return 1
    print(f"vec_add ({kind}) on {args.target}: {args.blocks} blocks of {ROWS}x{COLS} f32, "
          f"{z.size} elements; matches numpy x + y")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Vector addition over a grid of blocks, written with the PTO intrinsics.

Each block loads one 64x64 tile of x and y from global memory, adds them on the vector unit
and stores the result: the kernel every tile ISA tutorial starts with. Run it:

    python examples/vec_add.py [--target cpu|a2a3|a5]
"""

from __future__ import annotations

import argparse

import numpy as np

import ptoisa as pto

ROWS, COLS = 64, 64


def vec_add_block(x: np.ndarray, y: np.ndarray, out: np.ndarray, block: int) -> None:
    """One block of the kernel: out[block] = x[block] + y[block] (64x64 f32 tiles)."""
    n = ROWS * COLS
    shape, stride = (1, 1, 1, ROWS, COLS), (n, n, n, COLS, 1)
    gx = pto.GlobalTensor(x, shape, stride, offset=block * n)
    gy = pto.GlobalTensor(y, shape, stride, offset=block * n)
    gz = pto.GlobalTensor(out, shape, stride, offset=block * n)

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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--target", default="cpu", choices=["cpu", "a2a3", "a5"])
    ap.add_argument("--blocks", type=int, default=16)
    args = ap.parse_args()

    rng = np.random.default_rng(0)
    n = args.blocks * ROWS * COLS
    x = rng.standard_normal(n, dtype=np.float32)
    y = rng.standard_normal(n, dtype=np.float32)
    out = np.zeros(n, np.float32)

    with pto.target(args.target, mode="manual"):
        for block in range(args.blocks):
            vec_add_block(x, y, out, block)

        # Look at a corner of the result: a 4x8 tile with a 3x6 valid region.
        corner = pto.Tile(pto.TileType.Vec, np.float32, 4, 8, valid=(3, 6))
        pto.TASSIGN(corner, 0xC000)
        pto.TLOAD(corner, pto.GlobalTensor(out, (1, 1, 1, 3, 6), (n, n, n, COLS, 1)))
        pto.TPRINT(corner)

    np.testing.assert_array_equal(out, x + y)
    print(f"vec_add on {args.target}: {args.blocks} blocks of {ROWS}x{COLS} f32, "
          f"{n} elements, result equals numpy x + y")


if __name__ == "__main__":
    main()

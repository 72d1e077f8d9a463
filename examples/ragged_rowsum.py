"""Row sums of a matrix whose last column block is ragged, with dynamic valid regions.

The matrix has 40 columns; it is processed as 16-column tiles, so the last tile holds only 8
valid columns. TFILLPAD_INPLACE pads the invalid columns with zeros, TROWSUM reduces every
tile into a column, TPARTADD accumulates the partial sums, and TMULS + TCVT scale the sums
and round them to int32 (half to even). The same kernel as a .pto program is
``examples/ragged_rowsum.pto``. Run it:

    python examples/ragged_rowsum.py [--target cpu|a2a3|a5] [--pto]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

import ptoisa as pto

R, C, TC = 16, 40, 16
SCALE = 10.0
PTO_FILE = Path(__file__).with_suffix(".pto")


def ragged_rowsum_kernel(a: np.ndarray, out: np.ndarray) -> None:
    """out[r] = rint(sum(a[r, :]) * SCALE) as int32, a being R x C f32."""
    total = pto.Tile(pto.TileType.Vec, np.float32, R, 8, valid=(R, 1))
    part = pto.Tile(pto.TileType.Vec, np.float32, R, 8, valid=(R, 1))
    tmp = pto.Tile(pto.TileType.Vec, np.float32, R, TC)
    for k, c0 in enumerate(range(0, C, TC)):
        width = min(TC, C - c0)
        tile = pto.Tile(pto.TileType.Vec, np.float32, R, TC, valid=(R, pto.Dyn(width)),
                        pad=pto.PadValue.Zero)
        pto.TLOAD(tile, pto.GlobalTensor(a, (1, 1, 1, R, width), (R * C, R * C, R * C, C, 1),
                                         offset=c0))
        pto.TFILLPAD_INPLACE(tile, tile)            # zeros beyond the valid columns
        pto.TROWSUM(part if k else total, tile, tmp)
        if k:
            pto.TPARTADD(total, total, part)
    pto.TPRINT(total)

    pto.TMULS(total, total, SCALE)
    q = pto.Tile(pto.TileType.Vec, np.int32, R, 8, valid=(R, 1))
    pto.TCVT(q, total, mode=pto.RoundMode.CAST_RINT)    # round half to even
    pto.TSTORE(pto.GlobalTensor(out, (1, 1, 1, R, 1), (R, R, R, 1, 1)), q)


def make_input(seed: int = 1) -> np.ndarray:
    return np.random.default_rng(seed).uniform(-1, 1, (R, C)).astype(np.float32)


def reference(a: np.ndarray) -> np.ndarray:
    return np.rint(a.sum(axis=1, keepdims=True) * SCALE).astype(np.int32)


def run_eager(a: np.ndarray, target: str = pto.DEFAULT_TARGET) -> np.ndarray:
    out = np.zeros((R, 1), np.int32)
    pto.launch(ragged_rowsum_kernel, a, out, target=target)
    return out


def run_pto(a: np.ndarray, target: str = pto.DEFAULT_TARGET, path: Path = PTO_FILE
            ) -> np.ndarray:
    """Run examples/ragged_rowsum.pto: @ragged_rowsum(%a, %out), one block."""
    out = np.zeros((R, 1), np.int32)
    pto.load(path, target=target).ragged_rowsum(a, out)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--target", default=pto.DEFAULT_TARGET, choices=["cpu", "a2a3", "a5"],
                    help=f"target profile (default {pto.DEFAULT_TARGET})")
    ap.add_argument("--pto", action="store_true", help=f"run {PTO_FILE.name} instead")
    args = ap.parse_args(argv)
    if args.pto and not PTO_FILE.is_file():  # (a copy of this script without the program beside it)
        ap.error(f"--pto runs {PTO_FILE.name}, which is not beside this script in "
                 f"{PTO_FILE.parent} (it comes with the script in ptoisa's examples/)")

    a = make_input()
    out = run_pto(a, args.target) if args.pto else run_eager(a, args.target)
    kind = PTO_FILE.name if args.pto else "eager"
    print(f"ragged_rowsum ({kind}) on {args.target}: row sums x {SCALE:g}, rounded:",
          out.ravel().tolist())
    if not np.array_equal(out, reference(a)):
        print(f"ragged_rowsum: MISMATCH with numpy: expected {reference(a).ravel().tolist()}")
        return 1
    print("ragged_rowsum: matches numpy")
    return 0


if __name__ == "__main__":
    sys.exit(main())

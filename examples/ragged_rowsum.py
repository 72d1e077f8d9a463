"""Row sums of a matrix whose last column block is ragged, with dynamic valid regions.

The matrix has 40 columns; it is processed as 16-column tiles, so the last tile holds only 8
valid columns. TFILLPAD_INPLACE pads the invalid columns with zeros, TROWSUM reduces every
tile into a column, TPARTADD accumulates the partial sums, and the result is quantised to int8
with TSTORE_FP (one 64-bit quant word per output column: scale, offset and sign, as the
NPU's fix-pipe takes them). Run it:

    python examples/ragged_rowsum.py
"""

from __future__ import annotations

import numpy as np

import ptoisa as pto

R, C, TC = 16, 40, 16


def quant_word(scale: float, offset: int = 0, signed: bool = True) -> int:
    """A fix-pipe vector quant word: 19-bit scale in bits 13..31, offset 37..45, sign bit 46."""
    f32 = int(np.array([scale], np.float32).view(np.uint32)[0])
    return (f32 & 0xFFFFE000) | (offset << 37) | (int(signed) << 46)


def main() -> None:
    rng = np.random.default_rng(1)
    a = rng.uniform(-1, 1, (R, C)).astype(np.float32)
    out = np.zeros((R, 1), np.int8)

    with pto.target("cpu"):
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

        scales = pto.Tile(pto.TileType.Scaling, np.uint64, 1, 4, valid=(1, 1))
        scales.load_numpy(np.array([[quant_word(10.0), 0, 0, 0]], np.uint64))
        pto.TSTORE_FP(pto.GlobalTensor(out, (1, 1, 1, R, 1), (R, R, R, 1, 1)), total, scales)

    expected = np.clip(np.rint(a.sum(axis=1, keepdims=True) * 10.0), -128, 127).astype(np.int8)
    np.testing.assert_array_equal(out, expected)
    print("row sums x 10 as int8:", out.ravel().tolist())
    print("ragged_rowsum: matches numpy")


if __name__ == "__main__":
    main()

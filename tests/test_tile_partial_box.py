"""Boxed tiles smaller than one box (1xN MX scale tiles): the box is clipped to the tile, so
every element has an offset inside the tile's Rows*Cols storage and round trips exactly."""

from __future__ import annotations

import numpy as np

from ptoisa import Tile


def test_row_scale_tile_offsets_stay_in_storage():
    t = Tile("Mat", "f8E8M0", 1, 32, "RowMajor", (1, 32), "RowMajor", 32)  # 16x2 boxes
    offs = t.spec.offsets
    # clipped 1x2 boxes side by side: element (0, c) at c
    np.testing.assert_array_equal(offs, np.arange(32).reshape(1, 32))
    vals = np.exp2(np.arange(32) % 8 - 4).reshape(1, 32).astype(t.dtype.np)
    t.write(vals)
    np.testing.assert_array_equal(t.numpy().astype(np.float32), vals.astype(np.float32))


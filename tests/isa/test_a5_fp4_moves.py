"""Packed fp4 (f4E2M1x2 / f4E1M2x2) through a5's TLOAD and TEXTRACT (issue #26).

Upstream's A5 TLoad.hpp moves fp4 as bytes (two elements a byte: the Vec and Mat ND / DN loops
halve their element strides, ND -> NZ rounds an odd count up; tload_common.hpp's
TLoadCubeCheck refuses DN -> NZ for fp4), and A5's TExtract.hpp has fp4 forms of its
Mat -> Left / Right moves only (TExtractToLeft / TExtractToRight's isFp4Type). The reference
here unpacks the GM bytes with numpy: element 2i is byte i's low nibble, 2i + 1 its high one.
"""

from __future__ import annotations

import numpy as np
import pytest

import ptoisa as pto
from ptoisa.enums import BLayout, Layout, SLayout, TileType
from ptoisa.errors import PtoError
from ptoisa.tensor import GlobalTensor
from ptoisa.tile import Tile

FP4 = ("f4E2M1x2", "f4E1M2x2")
RNG = np.random.default_rng(26)
BIG = 1 << 20


def _pack(codes: np.ndarray) -> np.ndarray:
    """Row-major 4-bit codes -> GM bytes (even element in the low nibble)."""
    flat = codes.reshape(-1)
    return (flat[0::2] | (flat[1::2] << 4)).astype(np.uint8)


@pytest.mark.parametrize("dt", FP4)
def test_a5_tload_mat_then_textract_left(dt: str) -> None:
    m, k = 16, 128
    codes = RNG.integers(0, 16, (m, k)).astype(np.uint8)
    with pto.target("a5"):
        gm = GlobalTensor(_pack(codes), (1, 1, 1, m, k), (BIG, BIG, BIG, k, 1), Layout.ND,
                          dtype=dt)
        mat = Tile(TileType.Mat, dt, m, k, BLayout.ColMajor, (m, k), SLayout.RowMajor)
        pto.TLOAD(mat, gm)
        np.testing.assert_array_equal(mat.numpy(True), codes)
        left = pto.TileLeft(dt, m, 64)
        pto.TEXTRACT(left, mat, 0, 64)
        np.testing.assert_array_equal(left.numpy(True), codes[:, 64:])


@pytest.mark.parametrize("dt", FP4)
def test_a5_tload_dn_zn_then_textract_right(dt: str) -> None:
    """B as the MX kernels load it: a DN view (k contiguous) into a ZN Mat tile."""
    k, n = 128, 32
    codes = RNG.integers(0, 16, (k, n)).astype(np.uint8)
    with pto.target("a5"):
        gm = GlobalTensor(_pack(np.ascontiguousarray(codes.T)), (1, 1, 1, k, n),
                          (BIG, BIG, BIG, 1, k), Layout.DN, dtype=dt)
        mat = Tile(TileType.Mat, dt, k, n, BLayout.RowMajor, (k, n), SLayout.ColMajor)
        pto.TLOAD(mat, gm)
        right = pto.TileRight(dt, 64, n)
        pto.TEXTRACT(right, mat, 64, 0)
        np.testing.assert_array_equal(right.numpy(True), codes[64:, :])


@pytest.mark.parametrize("dt", FP4)
def test_a5_tload_vec_nd(dt: str) -> None:
    rows, cols = 4, 64
    codes = RNG.integers(0, 16, (rows, cols)).astype(np.uint8)
    with pto.target("a5"):
        gm = GlobalTensor(_pack(codes), (1, 1, 1, rows, cols), (BIG, BIG, BIG, cols, 1),
                          Layout.ND, dtype=dt)
        vec = Tile(TileType.Vec, dt, rows, cols)
        pto.TLOAD(vec, gm)
        np.testing.assert_array_equal(vec.numpy(True), codes)


def test_a5_fp4_dn_into_nz_refused() -> None:
    with pto.target("a5"):
        gm = GlobalTensor(np.zeros(16 * 64 // 2, np.uint8), (1, 1, 1, 16, 64),
                          (BIG, BIG, BIG, 1, 16), Layout.DN, dtype="f4E2M1x2")
        mat = Tile(TileType.Mat, "f4E2M1x2", 16, 64, BLayout.ColMajor, (16, 64),
                   SLayout.RowMajor)
        with pytest.raises(PtoError, match="DN GM view does not load into an NZ tile"):
            pto.TLOAD(mat, gm)


def test_a5_fp4_textract_off_the_cube_paths_refused() -> None:
    with pto.target("a5"):
        src = Tile(TileType.Vec, "f4E2M1x2", 16, 64)
        dst = Tile(TileType.Mat, "f4E2M1x2", 16, 64, BLayout.ColMajor, (16, 64),
                   SLayout.RowMajor)
        with pytest.raises(PtoError, match="moves on a5 only along Mat->Left, Mat->Right"):
            pto.TEXTRACT(dst, src, 0, 0)


def test_a2a3_still_refuses_fp4_tload() -> None:
    with pto.target("a2a3"):
        gm = GlobalTensor(np.zeros(32, np.uint8), (1, 1, 1, 1, 64), (BIG, BIG, BIG, 64, 1),
                          Layout.ND, dtype="f4E2M1x2")
        with pytest.raises(PtoError, match="f4E2M1x2 is not supported on a2a3"):
            pto.TLOAD(Tile(TileType.Vec, "f4E2M1x2", 1, 64), gm)

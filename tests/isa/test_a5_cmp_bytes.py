"""TCMP / TCMPS on a5 with a 1-byte predicate tile (issue #26, item 3).

A5's TCmp.hpp / TCmps.hpp (pto-isa, August 2026) store row r's compare bits with ``psts`` at
``dst + r * RowStride * sizeof(dst element)``: one row of bits per dst row, bit c of the row in
byte c // 8, bit c % 8 (LSB first), whatever dst's element type. The reference below is the
golden of upstream's own A5 test (tests/npu/a5/src/st/testcase/tcmps/gen_data.py:
``np.packbits(bits, axis=1, bitorder='little')``, read back row by row from a ui8 dst of
``roundup(Cols / 8, 32)`` columns), written here with numpy.
"""

from __future__ import annotations

import numpy as np
import pytest

import ptoisa as pto
from ptoisa.enums import CmpMode
from ptoisa.tile import Tile

RNG = np.random.default_rng(30)
OPS = {CmpMode.EQ: np.equal, CmpMode.NE: np.not_equal, CmpMode.LT: np.less,
       CmpMode.LE: np.less_equal, CmpMode.GT: np.greater, CmpMode.GE: np.greater_equal}


def _vec(dt: str, rows: int, cols: int, valid: tuple[int, int] | None = None) -> Tile:
    return Tile("Vec", dt, rows, cols, valid=valid or (rows, cols))


def _golden(bits: np.ndarray) -> np.ndarray:
    return np.packbits(bits.astype(np.uint8), axis=1, bitorder="little")


# (src type, rows, cols, valid rows, valid cols): upstream's A5 tcmps cases' shapes
SHAPES = [("f32", 8, 64, 8, 64), ("i32", 16, 32, 16, 32), ("i32", 64, 64, 32, 32),
          ("f16", 32, 32, 32, 32), ("i16", 32, 128, 32, 128), ("i32", 77, 80, 32, 32),
          ("f32", 128, 128, 64, 64), ("ui8", 32, 64, 32, 64), ("f32", 4, 64, 4, 40)]


@pytest.mark.parametrize("dst_dt", ["ui8", "i8"])
@pytest.mark.parametrize("src_dt,rows,cols,vr,vc", SHAPES)
def test_a5_tcmps_one_bit_row_per_dst_row(dst_dt: str, src_dt: str, rows: int, cols: int,
                                         vr: int, vc: int) -> None:
    npdt = pto.dtype(src_dt).np
    a = RNG.integers(0, 10, (rows, cols)).astype(npdt)
    dcols = -(-(cols // 8) // 32) * 32
    with pto.target("a5"):
        src = _vec(src_dt, rows, cols, (vr, vc))
        src.write(a)
        dst = _vec(dst_dt, rows, dcols, (vr, -(-vc // 8)))
        pto.TCMPS(dst, src, npdt.type(5), CmpMode.LT)
        got = dst.numpy(True).view(np.uint8)
    np.testing.assert_array_equal(got, _golden(a[:vr, :vc] < 5))


@pytest.mark.parametrize("mode", list(CmpMode))
def test_a5_tcmp_i8_dst(mode: CmpMode) -> None:
    """PTOAS's A5 tcmp wants an 8-bit dst (the lit case's i8, 4 x 128 f32)."""
    a = RNG.integers(-3, 3, (4, 128)).astype(np.float32)
    b = RNG.integers(-3, 3, (4, 128)).astype(np.float32)
    with pto.target("a5"):
        s0, s1 = _vec("f32", 4, 128), _vec("f32", 4, 128)
        s0.write(a)
        s1.write(b)
        dst = _vec("i8", 4, 128, (4, 16))
        pto.TCMP(dst, s0, s1, mode)
        got = dst.numpy(True).view(np.uint8)
    np.testing.assert_array_equal(got, _golden(OPS[mode](a, b)))


def test_a5_byte_mask_feeds_tsel() -> None:
    a = RNG.uniform(-1, 1, (8, 64)).astype(np.float32)
    b = RNG.uniform(-1, 1, (8, 64)).astype(np.float32)
    with pto.target("a5"):
        s0, s1 = _vec("f32", 8, 64), _vec("f32", 8, 64)
        s0.write(a)
        s1.write(b)
        mask = _vec("ui8", 8, 32, (8, 8))
        pto.TCMP(mask, s0, s1, CmpMode.GT)
        out = _vec("f32", 8, 64)
        pto.TSEL(out, mask, s0, s1)
        np.testing.assert_array_equal(out.numpy(), np.maximum(a, b))


@pytest.mark.parametrize("src_dt,store", [("f32", 16), ("f16", 16), ("i8", 32)])
def test_a5_whole_predicate_stores(src_dt: str, store: int) -> None:
    """A row's bits go out in whole psts stores (16 bytes per 128 elements of a 2- / 4-byte
    source, 32 per 256 of a 1-byte one): the rest of the store is 0, bytes past it are kept."""
    npdt = pto.dtype(src_dt).np
    a = RNG.integers(0, 10, (4, 32)).astype(npdt)
    with pto.target("a5"):
        src = _vec(src_dt, 4, 32)
        src.write(a)
        dst = _vec("ui8", 4, 64, (4, 4))
        dst.write(np.full((4, 64), 0xAA, np.uint8))
        pto.TCMPS(dst, src, npdt.type(5), CmpMode.GE)
        got = dst.numpy()
    np.testing.assert_array_equal(got[:, :4], _golden(a >= 5))
    assert (got[:, 4:store] == 0).all() and (got[:, store:] == 0xAA).all()

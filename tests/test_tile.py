"""Tiles: static asserts, physical element order, valid regions, numpy interop (model.md 2)."""

from __future__ import annotations

import numpy as np
import pytest

import ptoisa as pto
from ptoisa import DYNAMIC, BLayout, Dyn, PadValue, SLayout, Tile, TileType, tile_spec

RM, CM = BLayout.RowMajor, BLayout.ColMajor
NB, SR, SC = SLayout.NoneBox, SLayout.RowMajor, SLayout.ColMajor


# ---- static asserts (model.md 2.2) ---------------------------------------------------------------

def test_row_major_rows_must_be_32_byte_multiples():
    Tile(TileType.Vec, "f32", 16, 8)  # 32 B rows
    with pytest.raises(pto.PtoError, match=r"row must be a multiple of 32 bytes .*= 16\)"):
        Tile(TileType.Vec, "f32", 16, 4)
    with pytest.raises(pto.PtoError, match="multiple of 32 bytes"):
        Tile(TileType.Vec, "f16", 4, 8)


def test_col_major_columns_must_be_32_byte_multiples():
    Tile(TileType.Vec, "f32", 16, 1, CM)  # the TROWSUM DN dst: 16*4 = 64 B
    with pytest.raises(pto.PtoError, match=r"col-major tile column .*= 16\)"):
        Tile(TileType.Vec, "f32", 4, 1, CM)


def test_positive_shape_and_valid_within_capacity():
    with pytest.raises(pto.PtoError, match="Rows and Cols must be positive"):
        Tile(TileType.Vec, "f32", 0, 8)
    with pytest.raises(pto.PtoError, match=r"valid_row \(17\) exceeds row \(16\)"):
        Tile(TileType.Vec, "f32", 16, 8, valid=(17, 8))
    with pytest.raises(pto.PtoError, match=r"valid_col \(9\) exceeds col \(8\)"):
        Tile(TileType.Vec, "f32", 16, 8, valid=(16, 9))


def test_fractal_size_must_be_512_1024_or_32():
    with pytest.raises(pto.PtoError, match="unsupported s_fractal_size: 256"):
        Tile(TileType.Mat, "f16", 16, 16, CM, None, SR, 256)


def test_boxed_divisibility():
    # NZ f16 boxes are 16x16: Cols must divide always, Rows unless Vec / Rows == 1
    with pytest.raises(pto.PtoError, match="Cols must be a multiple of the box width 16"):
        Tile(TileType.Mat, "f16", 16, 24, CM, None, SR)
    with pytest.raises(pto.PtoError, match="Rows must be a multiple of the box height 16"):
        Tile(TileType.Mat, "f16", 24, 16, CM, None, SR)
    Tile(TileType.Vec, "f16", 24, 16, CM, None, SR)  # Vec is exempt from the row rule
    Tile(TileType.Mat, "f16", 1, 16, CM, None, SR)  # Rows == 1 is exempt


def test_non_integer_and_bad_enum_arguments():
    with pytest.raises(pto.PtoError, match="tile rows must be an integer"):
        Tile(TileType.Vec, "f32", 16.0, 8)
    with pytest.raises(pto.PtoError, match=r"tile role: 'gpu' is not a TileType \(allowed: Vec"):
        Tile("gpu", "f32", 16, 8)
    with pytest.raises(pto.PtoError, match="valid must be a"):
        Tile(TileType.Vec, "f32", 16, 8, valid=16)


def test_specs_are_interned_and_enums_accept_names():
    a = tile_spec(TileType.Vec, "f32", 16, 16)
    b = tile_spec("vec", np.float32, 16, 16, "RowMajor", None, None, "none_box")
    c = tile_spec("Vec", "float", 16, 16, RM, None, None)
    assert a is b is c
    assert tile_spec("vec", "f32", 16, 16, RM, 16, 16) is not a  # static vs dynamic valid
    assert Tile(TileType.Vec, "f32", 16, 16).spec is tile_spec("vec", "f32", 16, 16, RM, 16, 16)


# ---- inner boxes and physical order (model.md 2.1, 2.4 worked examples) -------------------------

@pytest.mark.parametrize("dtype, slayout, fractal, inner", [
    ("f32", NB, 512, (1, 1)),
    ("f32", SR, 512, (16, 8)), ("f16", SR, 512, (16, 16)), ("i8", SR, 512, (16, 32)),
    ("f32", SC, 512, (8, 16)), ("f16", SC, 512, (16, 16)), ("i8", SC, 512, (32, 16)),
    ("f32", SR, 1024, (16, 16)), ("f16", SR, 1024, (16, 16)),
    ("f8E8M0", SR, 32, (16, 2)), ("f8E8M0", SC, 32, (2, 16)),
])
def test_inner_box_shape(dtype, slayout, fractal, inner):
    assert tile_spec(TileType.Mat, dtype, 32, 32, CM, None, None, slayout, fractal).inner == inner


@pytest.mark.parametrize("loc, dtype, bl, sl, fractal, rc, off, name", [
    (TileType.Mat, "f16", CM, SR, 512, (17, 5), 277, "NZ"),
    (TileType.Mat, "f16", CM, SR, 512, (3, 20), 564, "NZ"),
    (TileType.Mat, "f32", CM, SR, 512, (3, 20), 540, "NZ"),
    (TileType.Right, "f16", RM, SC, 512, (17, 5), 593, "ZN"),
    (TileType.Right, "f32", RM, SC, 512, (10, 20), 418, "ZN"),
    (TileType.Acc, "f32", CM, SR, 1024, (17, 5), 277, "NZ"),
    (TileType.Vec, "f32", RM, NB, 512, (3, 5), 101, "ND"),
    (TileType.Vec, "f32", CM, NB, 512, (3, 5), 163, "DN"),
])
def test_worked_offset_examples(loc, dtype, bl, sl, fractal, rc, off, name):
    s = tile_spec(loc, dtype, 32, 32, bl, None, None, sl, fractal)
    assert s.layout_name == name
    assert s.offsets[rc] == off


def test_nd_and_dn_16x16_examples():
    assert tile_spec("vec", "f32", 16, 16).offsets[3, 5] == 53
    assert tile_spec("vec", "f32", 16, 16, CM).offsets[3, 5] == 83


def _ref_offset(name, rows, cols, ir, ic, r, c):
    """model.md 2.4 table, element by element."""
    n = ir * ic
    sr, rr, sc, cc = r // ir, r % ir, c // ic, c % ic
    return {
        "ND": r * cols + c, "DN": c * rows + r,
        "NZ": sc * rows * ic + sr * n + rr * ic + cc,
        "ZN": sr * cols * ir + sc * n + cc * ir + rr,
        "ZZ": sr * cols * ir + sc * n + rr * ic + cc,
        "NN": sc * rows * ic + sr * n + cc * ir + rr,
    }[name]


@pytest.mark.parametrize("bl, sl, name", [(RM, NB, "ND"), (CM, NB, "DN"), (CM, SR, "NZ"),
                                          (RM, SC, "ZN"), (RM, SR, "ZZ"), (CM, SC, "NN")])
@pytest.mark.parametrize("dtype", ["f32", "f16", "i8"])
def test_offsets_are_a_permutation_matching_the_formula(bl, sl, name, dtype):
    s = tile_spec(TileType.Mat, dtype, 64, 64, bl, None, None, sl)
    ir, ic = s.inner
    ref = np.array([[_ref_offset(name, 64, 64, ir, ic, r, c) for c in range(64)]
                    for r in range(64)])
    assert s.layout_name == name
    np.testing.assert_array_equal(s.offsets, ref)
    assert sorted(s.offsets.ravel().tolist()) == list(range(64 * 64))
    assert not s.offsets.flags.writeable


def test_storage_holds_elements_in_physical_order(machine):
    t = Tile(TileType.Mat, "f16", 32, 32, CM, None, SR)  # NZ
    logical = np.arange(32 * 32, dtype=np.float16).reshape(32, 32)
    t.load_numpy(logical)
    assert t.storage[277] == logical[17, 5]
    assert t.storage[564] == logical[3, 20]
    np.testing.assert_array_equal(t.numpy(), logical)
    np.testing.assert_array_equal(t.read(2, 3, 17, 5), logical[17:19, 5:8])


def test_tile_aliases(machine):
    acc = pto.TileAcc("f32", 32, 32)
    assert (acc.loc, acc.spec.layout_name, acc.spec.inner) == (TileType.Acc, "NZ", (16, 16))
    right = pto.TileRight("f16", 32, 32)
    assert (right.loc, right.spec.layout_name) == (TileType.Right, "ZN")
    left = pto.TileLeft("f16", 32, 32)
    # TileLeft is ZZ on a2a3, NZ on a5 and cpu (model.md 2.4, canonical aliases)
    assert left.spec.layout_name == ("ZZ" if machine.target.name == "a2a3" else "NZ")


# ---- valid region (model.md 2.3) ---------------------------------------------------------------

def test_static_valid_region():
    t = Tile(TileType.Vec, "f32", 16, 16, valid=(8, 10))
    assert t.valid_shape == (8, 10) == (t.GetValidRow(), t.GetValidCol())
    assert (t.spec.valid_row, t.spec.valid_col) == (8, 10)
    t.set_valid(8, 10)  # same value is fine
    with pytest.raises(pto.RuntimeCheckError, match=r"valid rows are static \(8\)"):
        t.set_valid(rows=4)
    with pytest.raises(pto.RuntimeCheckError, match=r"valid cols are static \(10\)"):
        t.SetValidCol(4)


def test_dynamic_valid_region():
    t = Tile(TileType.Vec, "f32", 16, 16, valid=(Dyn(8), DYNAMIC))
    assert t.valid_shape == (8, 16)
    assert (t.spec.valid_row, t.spec.valid_col) == (None, None)
    t.SetValidShape(3, 5)
    assert t.valid_shape == (3, 5)
    t.SetValidRow(0)
    assert t.valid_shape == (0, 5)
    t.set_valid(cols=16)
    assert t.valid_shape == (0, 16)
    with pytest.raises(pto.RuntimeCheckError, match=r"valid rows 17 outside \[0, 16\]"):
        t.set_valid(17, 4)
    with pytest.raises(pto.RuntimeCheckError, match="valid cols must be an integer"):
        t.set_valid(cols=2.5)
    # mixed: static rows, dynamic cols
    u = Tile(TileType.Vec, "f32", 16, 16, valid=(16, Dyn(4)))
    u.SetValidCol(9)
    assert u.valid_shape == (16, 9)
    with pytest.raises(pto.RuntimeCheckError, match="static"):
        u.SetValidRow(4)


def test_dynamic_and_static_tiles_of_same_shape_have_different_specs():
    a = Tile(TileType.Vec, "f32", 16, 16, valid=(Dyn(16), Dyn(16)))
    b = Tile(TileType.Vec, "f32", 16, 16)
    assert a.spec != b.spec
    assert "valid ?x?" in a.spec.describe()


def test_read_write_default_to_the_valid_region(machine):
    t = Tile(TileType.Vec, "i32", 4, 8, valid=(2, 3))
    t.load_numpy(np.arange(32, dtype=np.int32).reshape(4, 8))
    np.testing.assert_array_equal(t.read(), np.arange(32).reshape(4, 8)[:2, :3])
    np.testing.assert_array_equal(t.numpy(valid_only=True), [[0, 1, 2], [8, 9, 10]])
    t.write(np.full((2, 2), -1), r0=1, c0=6)
    assert t.numpy()[1, 6] == -1 and t.numpy()[2, 7] == -1
    t.fill(7, 1, 8, 3, 0)
    assert (t.numpy()[3] == 7).all()


def test_load_numpy_shapes_and_conversion(machine):
    t = Tile(TileType.Vec, "f16", 4, 16, valid=(2, 5))
    t.load_numpy(np.ones((2, 5)))  # valid-shape array
    assert t.numpy()[:2, :5].sum() == 10
    with pytest.raises(pto.PtoError, match=r"array of shape \(3, 3\) fits neither the tile"):
        t.load_numpy(np.ones((3, 3)))


def test_pad_value_is_part_of_the_type():
    a = Tile(TileType.Vec, "f32", 8, 8, pad=PadValue.Max)
    b = Tile(TileType.Vec, "f32", 8, 8, pad="zero")
    assert a.spec.pad is PadValue.Max and b.spec.pad is PadValue.Zero
    assert a.spec != b.spec


def test_repr_and_describe():
    t = Tile(TileType.Vec, "f32", 16, 16, valid=(8, 16), name="x")
    assert "x" in repr(t) and "Vec f32 16x16 ND valid 8x16" in repr(t)


@pytest.mark.parametrize(("dtype", "fractal"), [("f32", 512), ("i32", 512), ("f32", 1024)])
def test_acc_tile_has_l0c_16x16_boxes_whatever_its_fractal(dtype, fractal):
    """L0C holds 16 x 16 boxes (what MAD writes and FIXPIPE's nz2nd reads with a 16-element
    C0): a .pto acc tile_buf that leaves out fractal=1024 (type default 512) keeps them."""
    spec = tile_spec(TileType.Acc, dtype, 32, 48, BLayout.ColMajor, slayout=SLayout.RowMajor,
                     fractal=fractal, check_alignment=False)
    r = np.arange(32)[:, None]
    c = np.arange(48)[None, :]
    want = (c // 16) * 32 * 16 + r * 16 + c % 16  # box column, then row, then C0 = 16
    np.testing.assert_array_equal(spec.offsets, want)


def test_one_row_acc_tile_stores_whole_l0c_boxes():
    """A 1 x 64 Acc tile (a .pto GEMV result) takes 16-row boxes: its row is row 0 of each
    16 x 16 box, where FIXPIPE reads it with a 16-row source stride (tilelang_st tgemv)."""
    spec = tile_spec(TileType.Acc, "f32", 1, 64, BLayout.ColMajor, slayout=SLayout.RowMajor,
                     fractal=1024, check_alignment=False)
    assert spec.numel == 16 * 64 and spec.nbytes == 16 * 64 * 4
    c = np.arange(64)
    np.testing.assert_array_equal(spec.offsets[0], (c // 16) * 256 + c % 16)
    rng = np.random.default_rng(3)
    av = rng.integers(-4, 4, (1, 32)).astype(np.float32)
    bv = rng.integers(-4, 4, (32, 64)).astype(np.float32)
    with pto.target("a5"):
        a = pto.TileLeft("f32", 1, 32)
        b = pto.TileRight("f32", 32, 64)
        acc = Tile(TileType.Acc, "f32", 1, 64, BLayout.ColMajor, slayout=SLayout.RowMajor,
                   fractal=1024)
        a.write(av)
        b.write(bv)
        pto.TGEMV(acc, a, b)
        np.testing.assert_array_equal(acc.numpy(), av @ bv)
        raw = acc.storage.reshape(4, 16, 16)  # box column, box row, C0
        np.testing.assert_array_equal(raw[:, 0, :].reshape(1, 64), av @ bv)

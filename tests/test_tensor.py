"""GlobalTensor: 5-D shape/stride, layouts' tile-position mapping, bounds (model.md 4)."""

from __future__ import annotations

import numpy as np
import pytest

import ptoisa as pto
from ptoisa import GlobalTensor, Layout


def test_shape_and_stride_are_padded_to_5d():
    a = np.zeros((16, 32), np.float32)
    g = GlobalTensor(a)
    assert g.shape == (1, 1, 1, 16, 32)
    assert g.stride == (512, 512, 512, 32, 1)
    assert g.GetShape(3) == 16 and g.GetStride(3) == 32
    assert g.layout is Layout.ND and g.dtype is pto.dtype("f32")
    assert g.data() is a
    h = GlobalTensor(a, shape=(8, 32), stride=(64, 1))
    assert h.shape == (1, 1, 1, 8, 32) and h.stride == (0, 0, 0, 64, 1)


def test_2d_helper_strides():
    """TileShape2D / BaseShape2D of model.md 4."""
    r, c = 16, 32
    a = np.zeros(r * c, np.float16)
    nd = GlobalTensor(a, (1, 1, 1, r, c), (r * c, r * c, r * c, c, 1), Layout.ND)
    dn = GlobalTensor(a, (1, 1, 1, r, c), (r * c, r * c, r * c, 1, r), Layout.DN)
    c0 = 32 // 2
    nz = GlobalTensor(a, (1, c // c0, r // 16, 16, c0), (r * c, r * c0, 16 * c0, c0, 1), "nz")
    rr, cc = np.meshgrid(np.arange(r), np.arange(c), indexing="ij")
    np.testing.assert_array_equal(nd.indices(r, c), rr * c + cc)
    np.testing.assert_array_equal(dn.indices(r, c), rr + cc * r)
    ref_nz = (cc // c0) * r * c0 + (rr // 16) * 16 * c0 + (rr % 16) * c0 + cc % c0
    np.testing.assert_array_equal(nz.indices(r, c), ref_nz)
    assert nz.spec.rows_cols == (16, 32) and nd.spec.rows_cols == (16, 32)
    assert dn.spec.rows_cols == (16, 32)


def test_nz_worked_example():
    """f16 32x32 NZ view: (17, 5) -> 277 (same as the tile NZ formula)."""
    a = np.zeros(1024, np.float16)
    g = GlobalTensor(a, (1, 2, 2, 16, 16), (1024, 512, 256, 16, 1), Layout.NZ)
    assert g.indices(32, 32)[17, 5] == 277


def test_nd_rows_flatten_the_leading_four_dims():
    """ND: i4 = c, i3 = r % s3, i2 = (r / s3) % s2, ... with arbitrary strides."""
    shape, stride = (2, 3, 2, 4, 8), (1000, 300, 100, 10, 1)
    a = np.zeros(2000, np.int32)
    g = GlobalTensor(a, shape, stride)
    s0, s1, s2, s3, s4 = shape
    rows = s0 * s1 * s2 * s3
    got = g.indices(rows, s4)
    for r in range(rows):
        i3, i2, i1, i0 = r % s3, (r // s3) % s2, (r // (s3 * s2)) % s1, r // (s1 * s2 * s3)
        for c in range(s4):
            assert got[r, c] == i0 * 1000 + i1 * 300 + i2 * 100 + i3 * 10 + c


def test_dn_columns_flatten_dims_0_1_2_and_4():
    shape, stride = (2, 1, 3, 4, 2), (500, 500, 100, 1, 10)
    g = GlobalTensor(np.zeros(1000, np.int32), shape, stride, Layout.DN)
    s0, s1, s2, s3, s4 = shape
    cols = s0 * s1 * s2 * s4
    got = g.indices(s3, cols)
    for r in range(s3):
        for c in range(cols):
            i4, i2, i1, i0 = c % s4, (c // s4) % s2, (c // (s4 * s2)) % s1, c // (s1 * s2 * s4)
            assert got[r, c] == i0 * 500 + i1 * 500 + i2 * 100 + r * 1 + i4 * 10


def test_offset_shifts_every_index():
    a = np.arange(64, dtype=np.float32)
    g = GlobalTensor(a, (4, 8), (8, 1), offset=16)
    np.testing.assert_array_equal(g.indices(4, 8), np.arange(16, 48).reshape(4, 8))
    np.testing.assert_array_equal(g.numpy().reshape(4, 8), a[16:48].reshape(4, 8))


def test_numpy_is_the_logical_5d_content():
    a = np.arange(2 * 3 * 4, dtype=np.int16).reshape(2, 3, 4)
    g = GlobalTensor(a)
    np.testing.assert_array_equal(g.numpy(), a.reshape(1, 1, 2, 3, 4))
    # a strided (every other column) view
    h = GlobalTensor(a, (2, 3, 2), (12, 4, 2))
    np.testing.assert_array_equal(h.numpy().reshape(2, 3, 2), a[:, :, ::2])


def test_dtype_reinterprets_bytes():
    a = np.zeros(8, np.uint8)
    g = GlobalTensor(a, dtype="i32")
    assert g.shape == (1, 1, 1, 1, 2) and g.dtype is pto.dtype("i32")
    g.flat[1] = -1
    assert (a[4:] == 255).all()
    with pytest.raises(pto.PtoError, match="not a whole number of f32 elements"):
        GlobalTensor(np.zeros(6, np.uint8), dtype="f32")


def test_out_of_bounds_views_are_rejected():
    a = np.zeros(100, np.float32)
    with pytest.raises(pto.PtoMemoryError, match=r"reaches elements \[0, 255\] but the array "
                                                 r"has 100"):
        GlobalTensor(a, (1, 1, 1, 16, 16))
    with pytest.raises(pto.PtoMemoryError, match="reaches elements"):
        GlobalTensor(a, (4, 8), (8, 1), offset=80)
    with pytest.raises(pto.PtoMemoryError, match="reaches elements"):
        GlobalTensor(a, (4, 8), (8, 1), offset=-1)
    GlobalTensor(a, (4, 8), (8, 1), offset=68)  # last element 99: fine
    GlobalTensor(a, (0, 8), (8, 1), offset=500)  # empty views touch nothing


def test_bad_construction():
    a = np.zeros((4, 8), np.float32)
    with pytest.raises(pto.PtoError, match="must be an array: numpy, or anything with"):
        GlobalTensor([1.0, 2.0])
    with pytest.raises(pto.PtoError, match="C-contiguous"):
        GlobalTensor(a[:, ::2])
    with pytest.raises(pto.PtoError, match="6 dims; 1 to 5 are allowed"):
        GlobalTensor(a, (1, 1, 1, 1, 4, 8))
    with pytest.raises(pto.PtoError, match="negative dimension"):
        GlobalTensor(a, (-1, 8))
    with pytest.raises(pto.PtoError, match="GlobalTensor layout: 'zz' is not a Layout"):
        GlobalTensor(a, layout="zz")


def test_rebind_is_tassign_of_a_global_tensor():
    g = GlobalTensor(np.zeros((4, 8), np.float32))
    b = np.ones((4, 8), np.float32)
    pto.TASSIGN(g, b)
    assert g.data() is b and g.numpy().sum() == 32
    with pytest.raises(pto.PtoError, match="GlobalTensor of f32 cannot point at an array of int32"):
        pto.TASSIGN(g, np.ones((4, 8), np.int32))
    with pytest.raises(pto.PtoMemoryError, match="reaches elements"):
        pto.TASSIGN(g, np.ones(8, np.float32))
    with pytest.raises(pto.PtoError, match="is assigned a numpy array"):
        pto.TASSIGN(g, 0x100)


def test_shapes_and_strides_seen_before_convert_as_the_first_time():
    """GlobalTensor remembers the shape / stride tuples it converted: a tuple equal to one
    seen before (other number types) gives the same ints, and the checks still refuse."""
    from ptoisa import GlobalTensor
    from ptoisa.errors import PtoError

    x = np.zeros(4096, np.float32)
    for _ in range(2):
        a = GlobalTensor(x, (1, 1, 1, 64, 64), (4096, 4096, 4096, 64, 1))
        b = GlobalTensor(x, (1.0, 1, 1, np.int64(64), 64), (4096, 4096, 4096, 64.0, True))
        c = GlobalTensor(x, (64, 64))
        assert a.spec is b.spec is c.spec
        assert a.spec.shape == (1, 1, 1, 64, 64) and a.spec.stride == (4096, 4096, 4096, 64, 1)
        assert all(type(v) is int for v in b.spec.shape + b.spec.stride)
        with pytest.raises(PtoError, match="negative dimension"):
            GlobalTensor(x, (1, 1, 1, -64, 64))
        with pytest.raises(PtoError, match="sequence of integers"):
            GlobalTensor(x, (1, 1, 1, [64], 64))
        with pytest.raises(PtoError, match="1 to 5 are allowed"):
            GlobalTensor(x, (1, 1, 1, 1, 64, 64))

"""TIMG2COL with its FMATRIX configuration, and TLOAD/TSTORE of ConvTiles, against numpy
references written from the definitions (im2col by explicit window slicing of a padded map)."""

from __future__ import annotations

import numpy as np
import pytest

import ptoisa as pto
from ptoisa import BLayout, GlobalTensor, Layout, SLayout, Tile, TileType, memory
from ptoisa.conv import ConvTile
from ptoisa.isa.layout.img2col import Img2colConfig


def _fmap(n, c1, h, w, c0, dtype=np.float32):
    t = ConvTile(TileType.Mat, dtype, 32 * ((n * c1 * h * w * c0 * 4 + 31) // 32), "NC1HWC0",
                 (n, c1, h, w, c0))
    t.array()[...] = np.arange(n * c1 * h * w * c0).reshape(n, c1, h, w, c0).astype(dtype)
    return t


def _im2col_ref(x, kh, kw, pads, stride, dil, pad_value):
    """x [N, C1, H, W, C0] -> rows (n, oh, ow), cols (c1, kh, kw, c0), by window slicing."""
    left, right, top, bottom = pads
    n, c1, h, w, c0 = x.shape
    xp = np.full((n, c1, h + top + bottom, w + left + right, c0), pad_value, x.dtype)
    xp[:, :, top:top + h, left:left + w] = x
    ho = (h + top + bottom - dil[0] * (kh - 1) - 1) // stride[0] + 1
    wo = (w + left + right - dil[1] * (kw - 1) - 1) // stride[1] + 1
    rows = []
    for b in range(n):
        for oh in range(ho):
            for ow in range(wo):
                win = xp[b, :, oh * stride[0]: oh * stride[0] + dil[0] * (kh - 1) + 1: dil[0],
                         ow * stride[1]: ow * stride[1] + dil[1] * (kw - 1) + 1: dil[1]]
                rows.append(win.reshape(-1))  # (c1, kh, kw, c0) order
    return np.array(rows)


def _left(rows, cols, vr, vc, dtype="f32"):
    """The target's Left tile (TileLeft: ZZ on a2a3, NZ on a5 and cpu), which upstream's
    TImg2col asserts per target."""
    return pto.TileLeft(dtype, rows, cols, valid=(vr, vc))


@pytest.mark.parametrize("pads,stride,dil,k", [((0, 0, 0, 0), (1, 1), (1, 1), (1, 1)),
                                               ((1, 1, 1, 1), (1, 1), (1, 1), (3, 3)),
                                               ((1, 0, 2, 1), (2, 1), (1, 2), (2, 2))])
@pytest.mark.parametrize("pos", [(0, 0), (3, 8)])
def test_timg2col_matches_window_slicing(machine, pads, stride, dil, k, pos):
    src = _fmap(1, 2, 5, 6, 8)
    src.img2col = Img2colConfig(5, 6, padList=pads, strideH=stride[0], strideW=stride[1],
                                dilationH=dil[0], dilationW=dil[1], filterH=k[0],
                                filterW=k[1], padValue=-7.0)
    ref = _im2col_ref(src.array(), k[0], k[1], pads, stride, dil, -7.0)
    vr, vc = min(16, ref.shape[0] - pos[0]), min(16, ref.shape[1] - pos[1])
    dst = _left(16, 16, vr, vc)
    pto.SETFMATRIX(src)
    pto.SET_IMG2COL_PADDING(src)
    pto.SET_IMG2COL_RPT(src)
    pto.TIMG2COL(dst, src, pos[0], pos[1])
    np.testing.assert_array_equal(dst.numpy()[:vr, :vc],
                                  ref[pos[0]: pos[0] + vr, pos[1]: pos[1] + vc])


def test_timg2col_manual_reads_the_fmatrix_slot_auto_sets_it(machine):
    src = _fmap(1, 1, 4, 4, 8)
    src.img2col = Img2colConfig(4, 4, padList=(1, 1, 1, 1), filterH=3, filterW=3)
    dst = _left(16, 16, 16, 16)
    with pytest.raises(pto.RuntimeCheckError, match=r"FMATRIX B is not configured"):
        pto.TIMG2COL(dst, src, FmatrixMode="FMATRIX_B_MANUAL")
    pto.TIMG2COL(dst, src, FmatrixMode="FMATRIX_B_AUTO")  # configures slot B itself
    ref = _im2col_ref(src.array(), 3, 3, (1, 1, 1, 1), (1, 1), (1, 1), 0.0)
    np.testing.assert_array_equal(dst.numpy(), ref[:16, :16])
    # slot B keeps the geometry: a MANUAL B use now works, slot A is still unset
    pto.TIMG2COL(dst, src, FmatrixMode="FMATRIX_B_MANUAL")
    with pytest.raises(pto.RuntimeCheckError, match=r"FMATRIX A is not configured"):
        pto.TIMG2COL(dst, src)


def test_timg2col_rejects_plain_src_and_mixed_types(machine):
    dst = _left(16, 16, 16, 16)
    with pytest.raises(pto.RuntimeCheckError, match=r"src must be an NC1HWC0 or NDC1HWC0"):
        pto.TIMG2COL(dst, Tile(TileType.Mat, "f32", 16, 16))
    with pytest.raises(pto.IllegalInstruction, match=r"dst element type f16 != src"):
        pto.TIMG2COL(_left(16, 16, 16, 16, "f16"), _fmap(1, 1, 2, 2, 8))


@pytest.mark.parametrize("layout,shape,gshape", [
    ("NC1HWC0", (2, 3, 4, 5, 8), (2, 3, 4, 5, 8)),
    ("FRACTAL_Z", (12, 2, 16, 16), (1, 12, 2, 16, 16)),
    ("NDC1HWC0", (2, 3, 2, 1, 5, 8), (2, 3, 2, 1, 5))])
def test_conv_tload_tstore_round_trip(machine, layout, shape, gshape):
    n = int(np.prod(shape))
    data = np.random.default_rng(0).standard_normal(n).astype(np.float32)
    t = ConvTile(TileType.Mat, np.float32, n * 4, layout, shape)
    # contiguous strides; NDC1HWC0's 5-D view leaves out its innermost (implicit) C0
    full = gshape + (shape[-1],) if layout == "NDC1HWC0" else gshape
    stride = [int(np.prod(full[i + 1:])) for i in range(5)]
    g = GlobalTensor(data, gshape, stride, layout)
    pto.TLOAD(t, g)
    np.testing.assert_array_equal(t.array().reshape(-1), data)  # GM order = storage order
    out = np.zeros_like(data)
    if machine.target.name == "a5":
        # no Mat store on A5 (TSTORE.md, implementation checks (A5)); a ConvTile is no exception
        with pytest.raises(pto.IllegalInstruction,
                           match="expects A5 tstore src to use loc=vec or loc=acc"):
            pto.TSTORE(GlobalTensor(out, gshape, stride, layout), t)
        assert not out.any()
        return
    pto.TSTORE(GlobalTensor(out, gshape, stride, layout), t)
    np.testing.assert_array_equal(out, data)


def test_conv_layouts_need_a_conv_tile(machine):
    g = GlobalTensor(np.zeros(4096, np.float32), (1, 4, 4, 16, 16), layout=Layout.FRACTAL_Z)
    with pytest.raises(pto.IllegalInstruction, match=r"dst layout FRACTAL_Z is not supported"):
        pto.TSTORE(g, Tile(TileType.Vec, "f32", 16, 16))
    if machine.target.name != "a5":  # (a Mat source: a5 refuses its location first)
        with pytest.raises(pto.IllegalInstruction, match=r"dst layout FRACTAL_Z is not supported"):
            pto.TSTORE(g, Tile(TileType.Mat, "f32", 16, 16))
    t = ConvTile(TileType.Mat, np.float32, 4096 * 4, "FRACTAL_Z", (16, 1, 16, 16))
    with pytest.raises(pto.IllegalInstruction, match=r"layout ND is not a convolution layout"):
        pto.TLOAD(t, GlobalTensor(np.zeros(4096, np.float32)))
    with pytest.raises(pto.RuntimeCheckError, match=r"holds 1024 elements"):
        pto.TLOAD(t, GlobalTensor(np.zeros(4096, np.float32), (1, 1, 4, 16, 16),
                                  layout=Layout.FRACTAL_Z))


def test_timg2col_dst_is_the_targets_left_layout():
    # upstream's TImg2col: BLayout RowMajor (ZZ) on a2a3, ColMajor (NZ) on a5
    for target, wrong in (("a2a3", BLayout.ColMajor), ("a5", BLayout.RowMajor)):
        m = pto.target(target)
        try:
            dst = Tile(TileType.Left, "f32", 16, 16, blayout=wrong, slayout=SLayout.RowMajor)
            with pytest.raises(pto.IllegalInstruction, match=r"dst must be a (ZZ|NZ) Left"):
                pto.TIMG2COL(dst, _fmap(1, 1, 4, 4, 8))
        finally:
            memory.pop(m)

"""Tile-level ``pto.subview`` (a window of a tile) against numpy references written from
PTO_IR_manual.md ("pto.subview - Tile SubView": ``result = source[offsets]`` with static
sizes, valid = the explicit valid or sizes, clipped by sizes), and the corpus files that use
it."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from ptoisa import load
from ptoisa.errors import PtoError

SHARED = Path(os.environ.get("PTOISA_SHARED", Path(__file__).resolve().parents[2].parent
                             / "shared"))
MAIN = SHARED / "corpus" / "ptoas-main" / "test"
needs_corpus = pytest.mark.skipif(not MAIN.is_dir(), reason=f"corpus not found at {MAIN}")


def tb(rows: int, cols: int, vr: int | str | None = None, vc: int | str | None = None,
       dtype: str = "f32", blayout: str = "row_major") -> str:
    vr = rows if vr is None else vr
    vc = cols if vc is None else vc
    return (f"!pto.tile_buf<loc=vec, dtype={dtype}, rows={rows}, cols={cols}, v_row={vr}, "
            f"v_col={vc}, blayout={blayout}, slayout=none_box, fractal=512, pad=0>")


def pv(rows: int, cols: int, dtype: str = "f32") -> str:
    return f"!pto.partition_tensor_view<{rows}x{cols}x{dtype}>"


def window_kernel(R: int, C: int, sr: int, sc: int, valid: bool) -> str:  # noqa: N803
    """Load an RxC tile, take the window [r, c] sizes [sr, sc] (valid [vr, vc] when
    ``valid``), add 1 to it in place, store the window and the whole tile."""
    rt = tb(sr, sc, "?", "?") if valid else tb(sr, sc)
    vtxt = " valid [%vr, %vc]" if valid else ""
    return f"""module {{
  func.func @k(%src: !pto.ptr<f32>, %whole: !pto.ptr<f32>, %win: !pto.ptr<f32>,
               %r: index, %c: index, %vr: index, %vc: index) {{
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %cR = arith.constant {R} : index
    %cC = arith.constant {C} : index
    %csr = arith.constant {sr} : index
    %csc = arith.constant {sc} : index
    %one = arith.constant 1.0 : f32
    %sv = pto.make_tensor_view %src, shape = [%cR, %cC], strides = [%cC, %c1]
        : !pto.tensor_view<?x?xf32>
    %wv = pto.make_tensor_view %whole, shape = [%cR, %cC], strides = [%cC, %c1]
        : !pto.tensor_view<?x?xf32>
    %ov = pto.make_tensor_view %win, shape = [%csr, %csc], strides = [%csc, %c1]
        : !pto.tensor_view<?x?xf32>
    %sp = pto.partition_view %sv, offsets = [%c0, %c0], sizes = [%cR, %cC]
        : !pto.tensor_view<?x?xf32> -> {pv(R, C)}
    %wp = pto.partition_view %wv, offsets = [%c0, %c0], sizes = [%cR, %cC]
        : !pto.tensor_view<?x?xf32> -> {pv(R, C)}
    %op = pto.partition_view %ov, offsets = [%c0, %c0], sizes = [%vr, %vc]
        : !pto.tensor_view<?x?xf32> -> !pto.partition_tensor_view<?x?xf32>
    %t = pto.alloc_tile : {tb(R, C)}
    %s = pto.subview %t[%r, %c] sizes [{sr}, {sc}]{vtxt} : {tb(R, C)} -> {rt}
    pto.tload ins(%sp : {pv(R, C)}) outs(%t : {tb(R, C)})
    pto.tadds ins(%s, %one : {rt}, f32) outs(%s : {rt})
    pto.tstore ins(%s : {rt}) outs(%op : !pto.partition_tensor_view<?x?xf32>)
    pto.tstore ins(%t : {tb(R, C)}) outs(%wp : {pv(R, C)})
    return
  }}
}}
"""


@pytest.mark.parametrize("R,C,sr,sc,r,c,vr,vc", [
    (32, 64, 32, 32, 0, 32, 32, 32),   # the ping-pong halves: a column window of every row
    (32, 64, 32, 32, 0, 0, 32, 32),
    (8, 16, 4, 8, 2, 8, 3, 5),         # explicit valid smaller than sizes
    (8, 16, 4, 8, 4, 8, 4, 8),         # the last rows, a column offset
    (8, 16, 1, 16, 7, 0, 1, 16),       # one row (pypto's per-row windows)
])
@pytest.mark.parametrize("valid", [False, True])
def test_window_is_the_sources_elements(R, C, sr, sc, r, c, vr, vc, valid):  # noqa: N803
    """Writing through the window writes source[r:r+vr, c:c+vc] and nothing else; reading it
    reads those elements (the window keeps the source's pitch)."""
    if not valid:
        vr, vc = sr, sc
    prog = load(window_kernel(R, C, sr, sc, valid))
    src = np.arange(R * C, dtype=np.float32).reshape(R, C)
    whole = np.zeros((R, C), np.float32)
    win = np.full((sr, sc), -1, np.float32)
    prog.k(src, whole, win, r, c, vr, vc)
    want = src.copy()
    want[r:r + vr, c:c + vc] += 1
    np.testing.assert_array_equal(whole, want)
    np.testing.assert_array_equal(win[:vr, :vc], src[r:r + vr, c:c + vc] + 1)


def test_valid_is_clipped_by_sizes():
    """valid [vr, vc] larger than sizes is clipped to sizes (the manual's clip)."""
    prog = load(window_kernel(8, 16, 2, 4, True))
    src = np.arange(128, dtype=np.float32).reshape(8, 16)
    whole = np.zeros((8, 16), np.float32)
    win = np.zeros((8, 16), np.float32)
    prog.k(src, whole, win, 1, 2, 2, 4)
    want = src.copy()
    want[1:3, 2:6] += 1
    np.testing.assert_array_equal(whole, want)


def test_window_outside_the_source_is_an_error():
    prog = load(window_kernel(8, 16, 4, 8, True))
    args = (np.zeros((8, 16), np.float32), np.zeros((8, 16), np.float32),
            np.zeros((4, 8), np.float32))
    with pytest.raises(PtoError, match="subview.*exceeds src 8x16"):
        prog.k(*args, 6, 8, 4, 8)
    with pytest.raises(PtoError, match="subview: offset \\(8, 0\\) is outside"):
        prog.k(*args, 8, 0, 0, 0)


def test_col_major_window_keeps_the_rows_pitch():
    """A DN (col-major) tile's window keeps the source's rows as its pitch."""
    R, C = 16, 8  # noqa: N806
    dn = tb(R, C, blayout="col_major")
    win = tb(8, 4, blayout="col_major")
    text = f"""module {{
  func.func @k(%src: !pto.ptr<f32>, %out: !pto.ptr<f32>) {{
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %c8 = arith.constant 8 : index
    %c16 = arith.constant 16 : index
    %sv = pto.make_tensor_view %src, shape = [%c16, %c8], strides = [%c1, %c16]
        : !pto.tensor_view<?x?xf32>
    %ov = pto.make_tensor_view %out, shape = [%c8, %c4], strides = [%c1, %c8]
        : !pto.tensor_view<?x?xf32>
    %sp = pto.partition_view %sv, offsets = [%c0, %c0], sizes = [%c16, %c8]
        : !pto.tensor_view<?x?xf32> -> {pv(R, C)}
    %op = pto.partition_view %ov, offsets = [%c0, %c0], sizes = [%c8, %c4]
        : !pto.tensor_view<?x?xf32> -> {pv(8, 4)}
    %t = pto.alloc_tile : {dn}
    pto.tload ins(%sp : {pv(R, C)}) outs(%t : {dn})
    %s = pto.subview %t[%c8, %c4] sizes [8, 4] : {dn} -> {win}
    pto.tstore ins(%s : {win}) outs(%op : {pv(8, 4)})
    return
  }}
}}
"""
    src = np.arange(R * C, dtype=np.float32).reshape(C, R)  # column-major RxC: src.T
    out = np.zeros((4, 8), np.float32)
    load(text).k(src, out)
    np.testing.assert_array_equal(out.T, src.T[8:16, 4:8])


@needs_corpus
@pytest.mark.parametrize("rel", [
    "samples/SubView/SubView.pto",
    "lit/pto/subview_tmatmul_acc_slices_a5.pto",
    "lit/pto/subview_boxed_row_major_column_slice_preserve_parent_shape_a5.pto",
])
def test_corpus_subviews_run(rel):
    path = MAIN / rel
    target = "a5" if "a5" in rel else "a2a3"
    prog = load(path, target=target)
    fn = prog.module.functions()[0] if hasattr(prog.module.functions(), "__getitem__") \
        else next(iter(prog.module.functions()))
    args = []
    for a in fn.regions[0].block.args:
        shape = getattr(a.type, "shape", None)
        args.append(np.zeros(shape, np.float32))
    getattr(prog, fn.sym_name)(*args)


NZ_VIEW_KERNEL = """
module {
  func.func @k(%src: !pto.ptr<f32>, %dst: !pto.ptr<f32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %c8 = arith.constant 8 : index
    %c16 = arith.constant 16 : index
    %c32 = arith.constant 32 : index
    %c128 = arith.constant 128 : index
    %sv = pto.make_tensor_view %src, shape = [%c4, %c1, %c16, %c1, %c8],
      strides = [%c128, %c128, %c8, %c8, %c1] : !pto.tensor_view<4x1x16x1x8xf32>
    %dv = pto.make_tensor_view %dst, shape = [%c16, %c32], strides = [%c32, %c1]
      : !pto.tensor_view<16x32xf32>
    %sp = pto.partition_view %sv, offsets = [%c0, %c0, %c0, %c0, %c0],
      sizes = [%c4, %c1, %c16, %c1, %c8]
      : !pto.tensor_view<4x1x16x1x8xf32> -> !pto.partition_tensor_view<4x1x16x1x8xf32>
    %dp = pto.partition_view %dv, offsets = [%c0, %c0], sizes = [%c16, %c32]
      : !pto.tensor_view<16x32xf32> -> !pto.partition_tensor_view<16x32xf32>
    %t = pto.alloc_tile : !pto.tile_buf<vec, 16x32xf32, blayout=col_major, slayout=row_major>
    %u = pto.alloc_tile : !pto.tile_buf<vec, 16x32xf32>
    pto.tload ins(%sp : !pto.partition_tensor_view<4x1x16x1x8xf32>)
              outs(%t : !pto.tile_buf<vec, 16x32xf32, blayout=col_major, slayout=row_major>)
    pto.tmov ins(%t : !pto.tile_buf<vec, 16x32xf32, blayout=col_major, slayout=row_major>)
             outs(%u : !pto.tile_buf<vec, 16x32xf32>)
    pto.tstore ins(%u : !pto.tile_buf<vec, 16x32xf32>)
               outs(%dp : !pto.partition_tensor_view<16x32xf32>)
    return
  }
}
"""


def test_a5_vec_nz_tile_moves_a_5d_view_as_nz():
    """PTOAS's A5 TileLib moves a 5-D view without a layout attribute that Vec NZ tiles load
    as NZ (tilelang_st tload nz_f32_128x128): shape [C1, 1, rows, 1, C0], so element (r, c)
    of the 16 x 32 matrix is at (c // 8) * 128 + r * 8 + c % 8. a2a3 reads the view by its
    strides alone (ND: 64 x 8 rows by the tile's major order) and rejects the pair."""
    src = np.arange(512, dtype=np.float32)
    out = np.zeros(512, np.float32)
    load(NZ_VIEW_KERNEL, target="a5").k(src, out)
    r, c = np.arange(16)[:, None], np.arange(32)[None, :]
    np.testing.assert_array_equal(out.reshape(16, 32), src[(c // 8) * 128 + r * 8 + c % 8])
    with pytest.raises(PtoError, match="covers 1x512 elements as a tile"):
        load(NZ_VIEW_KERNEL, target="a2a3").k(src, out)


def test_tile_valid_rows_and_cols_through_an_identity_cast():
    """The tile_buf intrinsics (ptoas-tileop-expand-design.md): a tile's valid row / column
    counts; an unrealized_conversion_cast of a type to itself is the value."""
    tb = "!pto.tile_buf<loc=vec, dtype=f32, rows=16, cols=32, v_row=?, v_col=?>"
    text = f"""module {{
  func.func @f(%o: !pto.ptr<i64>) {{
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c5 = arith.constant 5 : index
    %c24 = arith.constant 24 : index
    %t = pto.alloc_tile valid_row = %c5 valid_col = %c24 : {tb}
    %b = builtin.unrealized_conversion_cast %t : {tb} to {tb}
    %r = pto.tile_valid_rows %b : {tb} -> index
    %c = pto.tile_valid_cols %b : {tb} -> index
    %ri = arith.index_cast %r : index to i64
    %ci = arith.index_cast %c : index to i64
    pto.store_scalar %ri, %o[%c0] : !pto.ptr<i64>, i64
    pto.store_scalar %ci, %o[%c1] : !pto.ptr<i64>, i64
    return
  }}
}}
"""
    out = np.zeros(2, np.int64)
    load(text).run("f", out)
    assert out.tolist() == [5, 24]

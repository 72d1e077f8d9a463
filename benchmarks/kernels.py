"""The benchmark kernels, each written once with the eager intrinsics and once as .pto text,
launched over a grid of blocks as on hardware. Shared by benchmarks/run.py and the tests."""

from __future__ import annotations

import numpy as np

import ptoisa as pto
from ptoisa import BLayout, GlobalTensor, SLayout, Tile, TileType

# ---- vec-add: 1,048,576 f32, 64x64 tiles, one tile per block (256 blocks) ---------------------

VA_R, VA_C = 64, 64


def vec_add(x: np.ndarray, y: np.ndarray, z: np.ndarray) -> None:
    b = pto.get_block_idx()
    n = VA_R * VA_C
    shape, stride = (1, 1, 1, VA_R, VA_C), (n, n, n, VA_C, 1)
    tx = Tile(TileType.Vec, np.float32, VA_R, VA_C)
    ty = Tile(TileType.Vec, np.float32, VA_R, VA_C)
    tz = Tile(TileType.Vec, np.float32, VA_R, VA_C)
    pto.TLOAD(tx, GlobalTensor(x, shape, stride, offset=b * n))
    pto.TLOAD(ty, GlobalTensor(y, shape, stride, offset=b * n))
    pto.TADD(tz, tx, ty)
    pto.TSTORE(GlobalTensor(z, shape, stride, offset=b * n), tz)


def _tb(loc: str, dtype: str, r: int, c: int, bl: str = "row_major", sl: str = "none_box",
        fractal: int = 512, vr: int | None = None, vc: int | None = None) -> str:
    return (f"!pto.tile_buf<loc={loc}, dtype={dtype}, rows={r}, cols={c}, "
            f"v_row={r if vr is None else vr}, v_col={c if vc is None else vc}, blayout={bl}, "
            f"slayout={sl}, fractal={fractal}, pad=0>")


def vec_add_pto(total_rows: int) -> str:
    t = _tb("vec", "f32", VA_R, VA_C)
    pv = f"!pto.partition_tensor_view<{VA_R}x{VA_C}xf32>"
    tv = "!pto.tensor_view<?x?xf32>"
    lines = [
        "module {",
        "  func.func @vec_add(%x: !pto.ptr<f32>, %y: !pto.ptr<f32>, %z: !pto.ptr<f32>) {",
        "    %c0 = arith.constant 0 : index",
        "    %c1 = arith.constant 1 : index",
        f"    %cR = arith.constant {VA_R} : index",
        f"    %cC = arith.constant {VA_C} : index",
        f"    %cN = arith.constant {total_rows} : index",
        "    %bid = pto.get_block_idx",
        "    %b = arith.index_cast %bid : i64 to index",
        "    %row = arith.muli %b, %cR : index",
    ]
    for v in ("x", "y", "z"):
        lines += [
            f"    %v{v} = pto.make_tensor_view %{v}, shape = [%cN, %cC], strides = [%cC, %c1] "
            f": {tv}",
            f"    %p{v} = pto.partition_view %v{v}, offsets = [%row, %c0], sizes = [%cR, %cC] "
            f": {tv} -> {pv}",
            f"    %t{v} = pto.alloc_tile : {t}",
        ]
    lines += [
        f"    pto.tload ins(%px : {pv}) outs(%tx : {t})",
        f"    pto.tload ins(%py : {pv}) outs(%ty : {t})",
        f"    pto.tadd ins(%tx, %ty : {t}, {t}) outs(%tz : {t})",
        f"    pto.tstore ins(%tz : {t}) outs(%pz : {pv})",
        "    return",
        "  }",
        "}",
    ]
    return "\n".join(lines) + "\n"


# ---- row softmax: 4096x1024 f32, 8x1024 tiles (512 blocks) ---------------------------------

SM_R, SM_C = 8, 1024


def softmax(x: np.ndarray, out: np.ndarray) -> None:
    b = pto.get_block_idx()
    n = SM_R * SM_C
    shape, stride = (1, 1, 1, SM_R, SM_C), (n, n, n, SM_C, 1)
    t = Tile(TileType.Vec, np.float32, SM_R, SM_C)
    tmp = Tile(TileType.Vec, np.float32, SM_R, SM_C)
    mx = Tile(TileType.Vec, np.float32, SM_R, 1, BLayout.ColMajor)
    sm = Tile(TileType.Vec, np.float32, SM_R, 1, BLayout.ColMajor)
    pto.TLOAD(t, GlobalTensor(x, shape, stride, offset=b * n))
    pto.TROWMAX(mx, t, tmp)
    pto.TROWEXPANDSUB(t, t, mx)
    pto.TEXP(t, t)
    pto.TROWSUM(sm, t, tmp)
    pto.TROWEXPANDDIV(t, t, sm)
    pto.TSTORE(GlobalTensor(out, shape, stride, offset=b * n), t)


def softmax_pto(total_rows: int) -> str:
    t = _tb("vec", "f32", SM_R, SM_C)
    col = _tb("vec", "f32", SM_R, 1, bl="col_major")
    pv = f"!pto.partition_tensor_view<{SM_R}x{SM_C}xf32>"
    tv = "!pto.tensor_view<?x?xf32>"
    return "\n".join([
        "module {",
        "  func.func @softmax(%x: !pto.ptr<f32>, %out: !pto.ptr<f32>) {",
        "    %c0 = arith.constant 0 : index",
        "    %c1 = arith.constant 1 : index",
        f"    %cR = arith.constant {SM_R} : index",
        f"    %cC = arith.constant {SM_C} : index",
        f"    %cN = arith.constant {total_rows} : index",
        "    %bid = pto.get_block_idx",
        "    %b = arith.index_cast %bid : i64 to index",
        "    %row = arith.muli %b, %cR : index",
        f"    %vx = pto.make_tensor_view %x, shape = [%cN, %cC], strides = [%cC, %c1] : {tv}",
        f"    %vo = pto.make_tensor_view %out, shape = [%cN, %cC], strides = [%cC, %c1] : {tv}",
        f"    %px = pto.partition_view %vx, offsets = [%row, %c0], sizes = [%cR, %cC] : {tv} "
        f"-> {pv}",
        f"    %po = pto.partition_view %vo, offsets = [%row, %c0], sizes = [%cR, %cC] : {tv} "
        f"-> {pv}",
        f"    %t = pto.alloc_tile : {t}",
        f"    %tmp = pto.alloc_tile : {t}",
        f"    %mx = pto.alloc_tile : {col}",
        f"    %sm = pto.alloc_tile : {col}",
        f"    pto.tload ins(%px : {pv}) outs(%t : {t})",
        f"    pto.trowmax ins(%t, %tmp : {t}, {t}) outs(%mx : {col})",
        f"    pto.trowexpandsub ins(%t, %mx : {t}, {col}) outs(%t : {t})",
        f"    pto.texp ins(%t : {t}) outs(%t : {t})",
        f"    pto.trowsum ins(%t, %tmp : {t}, {t}) outs(%sm : {col})",
        f"    pto.trowexpanddiv ins(%t, %sm : {t}, {col}) outs(%t : {t})",
        f"    pto.tstore ins(%t : {t}) outs(%po : {pv})",
        "    return",
        "  }",
        "}",
    ]) + "\n"


# ---- GEMM 512^3: f16 in, f32 accumulate, 64x64x64 tiles, 64 blocks x 8 K-steps --------------

GM_T, GM_N = 64, 512
GM_K_STEPS = GM_N // GM_T
GM_GRID = GM_N // GM_T  # blocks per row of C


def gemm(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> None:
    blk = pto.get_block_idx()
    bi, bj = blk // GM_GRID, blk % GM_GRID
    shape, stride = (1, 1, 1, GM_T, GM_T), (GM_N * GM_N, GM_N * GM_N, GM_N * GM_N, GM_N, 1)
    ta = Tile(TileType.Mat, np.float16, GM_T, GM_T, BLayout.ColMajor, None, SLayout.RowMajor)
    tb = Tile(TileType.Mat, np.float16, GM_T, GM_T, BLayout.ColMajor, None, SLayout.RowMajor)
    left = pto.TileLeft(np.float16, GM_T, GM_T)
    right = pto.TileRight(np.float16, GM_T, GM_T)
    acc = pto.TileAcc(np.float32, GM_T, GM_T)
    for k in range(GM_K_STEPS):
        pto.TLOAD(ta, GlobalTensor(a, shape, stride, offset=bi * GM_T * GM_N + k * GM_T))
        pto.TLOAD(tb, GlobalTensor(b, shape, stride, offset=k * GM_T * GM_N + bj * GM_T))
        pto.TMOV(left, ta)
        pto.TMOV(right, tb)
        if k == 0:
            pto.TMATMUL(acc, left, right)
        else:
            pto.TMATMUL_ACC(acc, acc, left, right)
    pto.TSTORE(GlobalTensor(c, shape, stride, offset=bi * GM_T * GM_N + bj * GM_T), acc)


def gemm_pto() -> str:
    T = GM_T
    mat = _tb("mat", "f16", T, T, bl="col_major", sl="row_major")
    left = _tb("left", "f16", T, T, bl="col_major", sl="row_major")
    right = _tb("right", "f16", T, T, bl="row_major", sl="col_major")
    acc = _tb("acc", "f32", T, T, bl="col_major", sl="row_major", fractal=1024)
    pvh = f"!pto.partition_tensor_view<{T}x{T}xf16>"
    pvf = f"!pto.partition_tensor_view<{T}x{T}xf32>"
    tvh, tvf = "!pto.tensor_view<?x?xf16>", "!pto.tensor_view<?x?xf32>"
    return "\n".join([
        "module {",
        "  func.func @gemm(%a: !pto.ptr<f16>, %b: !pto.ptr<f16>, %c: !pto.ptr<f32>) {",
        "    %c0 = arith.constant 0 : index",
        "    %c1 = arith.constant 1 : index",
        f"    %cT = arith.constant {T} : index",
        f"    %cN = arith.constant {GM_N} : index",
        f"    %cG = arith.constant {GM_GRID} : index",
        f"    %cK = arith.constant {GM_K_STEPS} : index",
        "    %bid = pto.get_block_idx",
        "    %blk = arith.index_cast %bid : i64 to index",
        "    %bi = arith.divui %blk, %cG : index",
        "    %bj = arith.remui %blk, %cG : index",
        "    %row = arith.muli %bi, %cT : index",
        "    %col = arith.muli %bj, %cT : index",
        f"    %va = pto.make_tensor_view %a, shape = [%cN, %cN], strides = [%cN, %c1] : {tvh}",
        f"    %vb = pto.make_tensor_view %b, shape = [%cN, %cN], strides = [%cN, %c1] : {tvh}",
        f"    %vc = pto.make_tensor_view %c, shape = [%cN, %cN], strides = [%cN, %c1] : {tvf}",
        f"    %ta = pto.alloc_tile : {mat}",
        f"    %tb = pto.alloc_tile : {mat}",
        f"    %l = pto.alloc_tile : {left}",
        f"    %r = pto.alloc_tile : {right}",
        f"    %acc = pto.alloc_tile : {acc}",
        "    scf.for %k = %c0 to %cK step %c1 {",
        "      %kk = arith.muli %k, %cT : index",
        f"      %pa = pto.partition_view %va, offsets = [%row, %kk], sizes = [%cT, %cT] : {tvh} "
        f"-> {pvh}",
        f"      %pb = pto.partition_view %vb, offsets = [%kk, %col], sizes = [%cT, %cT] : {tvh} "
        f"-> {pvh}",
        f"      pto.tload ins(%pa : {pvh}) outs(%ta : {mat})",
        f"      pto.tload ins(%pb : {pvh}) outs(%tb : {mat})",
        f"      pto.tmov ins(%ta : {mat}) outs(%l : {left})",
        f"      pto.tmov ins(%tb : {mat}) outs(%r : {right})",
        "      %first = arith.cmpi eq, %k, %c0 : index",
        "      scf.if %first {",
        f"        pto.tmatmul ins(%l, %r : {left}, {right}) outs(%acc : {acc})",
        "      } else {",
        f"        pto.tmatmul.acc ins(%acc, %l, %r : {acc}, {left}, {right}) outs(%acc : {acc})",
        "      }",
        "    }",
        f"    %pc = pto.partition_view %vc, offsets = [%row, %col], sizes = [%cT, %cT] : {tvf} "
        f"-> {pvf}",
        f"    pto.tstore ins(%acc : {acc}) outs(%pc : {pvf})",
        "    return",
        "  }",
        "}",
    ]) + "\n"

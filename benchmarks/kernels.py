"""The benchmark kernels, each written once with the eager intrinsics and once as .pto text,
launched over a grid of blocks as on hardware. Shared by benchmarks/run.py and the tests."""

from __future__ import annotations

import numpy as np

import ptoisa as pto
from ptoisa import BLayout, GlobalTensor, Layout, SLayout, Tile, TileType

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


# ---- vec-add looping over 1 x 4096 tiles: each block walks its share of the vector ------------

VR_C = 4096


def vec_add_rows(x: np.ndarray, y: np.ndarray, z: np.ndarray) -> None:
    """z = x + y (f32) in 1 x 4096 tiles, block b taking the b-th contiguous share of them, one
    tile per iteration (the tile count a multiple of the block count), as NPU kernels on a few
    cores loop over many tiles."""
    b = pto.get_block_idx()
    per = x.size // VR_C // pto.get_block_num()
    shape, stride = (1, 1, 1, 1, VR_C), (x.size, x.size, x.size, VR_C, 1)
    tx = Tile(TileType.Vec, np.float32, 1, VR_C)
    ty = Tile(TileType.Vec, np.float32, 1, VR_C)
    tz = Tile(TileType.Vec, np.float32, 1, VR_C)
    for i in range(per):
        off = (b * per + i) * VR_C
        pto.TLOAD(tx, GlobalTensor(x, shape, stride, offset=off))
        pto.TLOAD(ty, GlobalTensor(y, shape, stride, offset=off))
        pto.TADD(tz, tx, ty)
        pto.TSTORE(GlobalTensor(z, shape, stride, offset=off), tz)


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


def gemm_tiles(t: int) -> tuple[Tile, ...]:
    """The tiles of one block of the tiled f16 GEMM (A and B panels in L1, Left, Right, Acc)."""
    ta = Tile(TileType.Mat, np.float16, t, t, BLayout.ColMajor, None, SLayout.RowMajor)
    tb = Tile(TileType.Mat, np.float16, t, t, BLayout.ColMajor, None, SLayout.RowMajor)
    return (ta, tb, pto.TileLeft(np.float16, t, t), pto.TileRight(np.float16, t, t),
            pto.TileAcc(np.float32, t, t))


def gemm_output_tile(a: np.ndarray, b: np.ndarray, c: np.ndarray, n: int, t: int, bi: int,
                     bj: int, tiles: tuple[Tile, ...]) -> None:
    """C's t x t tile (bi, bj) of the n x n x n f16 GEMM C = A @ B, accumulated in f32 over K
    in steps of t, with a block's ``tiles`` (:func:`gemm_tiles`)."""
    ta, tb, left, right, acc = tiles
    shape, stride = (1, 1, 1, t, t), (n * n, n * n, n * n, n, 1)
    for k in range(n // t):
        pto.TLOAD(ta, GlobalTensor(a, shape, stride, offset=bi * t * n + k * t))
        pto.TLOAD(tb, GlobalTensor(b, shape, stride, offset=k * t * n + bj * t))
        pto.TMOV(left, ta)
        pto.TMOV(right, tb)
        if k == 0:
            pto.TMATMUL(acc, left, right)
        else:
            pto.TMATMUL_ACC(acc, acc, left, right)
    pto.TSTORE(GlobalTensor(c, shape, stride, offset=bi * t * n + bj * t), acc)


def gemm(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> None:
    blk = pto.get_block_idx()
    gemm_output_tile(a, b, c, GM_N, GM_T, blk // GM_GRID, blk % GM_GRID, gemm_tiles(GM_T))


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


# ---- flash attention forward: seq 2048, head 128, 64-row blocks, f32 ---------------------------
# One block per 64 query rows; each walks the 64-row K/V blocks with the online softmax
# (running row max m, row sum l, rescaled output O). S = Q K^T and P V run on the cube (Acc
# tiles), the softmax on the vector core; S, P and P V pass through GM scratch (one region per
# block), as a single-stream kernel without TPUSH/TPOP does.

FA_B, FA_D = 64, 128


def flash_attention(q: np.ndarray, k: np.ndarray, v: np.ndarray, out: np.ndarray,
                    s_gm: np.ndarray, p_gm: np.ndarray, pv_gm: np.ndarray) -> None:
    b = pto.get_block_idx()
    B, D = FA_B, FA_D
    n_kv = k.shape[0] // B
    scale = np.float32(1.0 / np.sqrt(D))

    def view(arr: np.ndarray, rows: int, cols: int, offset: object) -> GlobalTensor:
        n = arr.size
        return GlobalTensor(arr, (1, 1, 1, rows, cols), (n, n, n, cols, 1), offset=offset)

    def nz(rows: int, cols: int) -> Tile:
        return Tile(TileType.Mat, np.float32, rows, cols, BLayout.ColMajor, None,
                    SLayout.RowMajor)

    def vec(rows: int, cols: int) -> Tile:
        return Tile(TileType.Vec, np.float32, rows, cols)

    def col() -> Tile:
        return Tile(TileType.Vec, np.float32, B, 1, BLayout.ColMajor)

    q_mat, q_left = nz(B, D), pto.TileLeft(np.float32, B, D)
    kt_mat = Tile(TileType.Mat, np.float32, D, B, BLayout.RowMajor, None, SLayout.ColMajor)
    k_right = pto.TileRight(np.float32, D, B)
    p_mat, p_left = nz(B, B), pto.TileLeft(np.float32, B, B)
    v_mat, v_right = nz(B, D), pto.TileRight(np.float32, B, D)
    s_acc, pv_acc = pto.TileAcc(np.float32, B, B), pto.TileAcc(np.float32, B, D)
    s, tmp, o, pv = vec(B, B), vec(B, B), vec(B, D), vec(B, D)
    m_old, m_new, m_j, alpha, l_sum, l_j = col(), col(), col(), col(), col(), col()

    pto.TLOAD(q_mat, view(q, B, D, b * B * D))
    pto.TMOV(q_left, q_mat)
    for j in range(n_kv):
        kt = GlobalTensor(k, (1, 1, 1, D, B), (k.size,) * 3 + (1, D), Layout.DN,
                          offset=j * B * D)
        pto.TLOAD(kt_mat, kt)
        pto.TMOV(k_right, kt_mat)
        pto.TMATMUL(s_acc, q_left, k_right)                 # S = Q K_j^T
        pto.TSTORE(view(s_gm, B, B, b * B * B), s_acc)
        pto.TLOAD(s, view(s_gm, B, B, b * B * B))
        pto.TMULS(s, s, scale)
        if j == 0:
            pto.TROWMAX(m_new, s, tmp)
        else:
            pto.TROWMAX(m_j, s, tmp)
            pto.TMAX(m_new, m_old, m_j)
        pto.TROWEXPANDSUB(s, s, m_new)
        pto.TEXP(s, s)                                      # P = exp(S - m_new)
        if j == 0:
            pto.TROWSUM(l_sum, s, tmp)
        else:
            pto.TSUB(alpha, m_old, m_new)
            pto.TEXP(alpha, alpha)                          # alpha = exp(m_old - m_new)
            pto.TROWSUM(l_j, s, tmp)
            pto.TMUL(l_sum, l_sum, alpha)
            pto.TADD(l_sum, l_sum, l_j)
        pto.TSTORE(view(p_gm, B, B, b * B * B), s)
        pto.TLOAD(p_mat, view(p_gm, B, B, b * B * B))
        pto.TMOV(p_left, p_mat)
        pto.TLOAD(v_mat, view(v, B, D, j * B * D))
        pto.TMOV(v_right, v_mat)
        pto.TMATMUL(pv_acc, p_left, v_right)                # P V_j
        pto.TSTORE(view(pv_gm, B, D, b * B * D), pv_acc)
        if j == 0:
            pto.TLOAD(o, view(pv_gm, B, D, b * B * D))
        else:
            pto.TLOAD(pv, view(pv_gm, B, D, b * B * D))
            pto.TROWEXPANDMUL(o, o, alpha)
            pto.TADD(o, o, pv)
        m_old, m_new = m_new, m_old
    pto.TROWEXPANDDIV(o, o, l_sum)
    pto.TSTORE(view(out, B, D, b * B * D), o)


def flash_attention_numpy(q: np.ndarray, k: np.ndarray, v: np.ndarray) -> np.ndarray:
    """The same blocked algorithm in numpy, all query blocks at once (a loop over K/V
    blocks only), in f32 like the kernel."""
    B, D = FA_B, FA_D
    scale = np.float32(1.0 / np.sqrt(D))
    qb = q.reshape(-1, B, D)
    o = m = l_sum = None
    for j in range(k.shape[0] // B):
        kj, vj = k[j * B:(j + 1) * B], v[j * B:(j + 1) * B]
        s = (qb @ kj.T) * scale
        mj = s.max(axis=-1)
        m_new = mj if m is None else np.maximum(m, mj)
        p = np.exp(s - m_new[..., None])
        if m is None:
            l_sum, o = p.sum(axis=-1), p @ vj
        else:
            alpha = np.exp(m - m_new)
            l_sum = l_sum * alpha + p.sum(axis=-1)
            o = o * alpha[..., None] + p @ vj
        m = m_new
    return (o / l_sum[..., None]).reshape(q.shape)

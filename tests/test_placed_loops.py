"""Tiles placed again, in a loop, where they already are: the shape of the Qwen3 decode
kernels of the PTOAS corpus (``pto.alloc_tile addr = ...`` inside an ``scf.for`` K-loop, every
step's tiles at the same addresses as the last step's). A tile placed again at its own address
keeps what it holds lazily (Machine.assign); these check the products bit for bit against the
K-step loop in numpy (f32 products of the converted panels, summed step by step in f32, as
TMATMUL / TMATMUL_ACC accumulate) and against an eager run on a machine that copies at once."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import ptoisa as pto
from ptoisa import BLayout, GlobalTensor, SLayout, Tile, TileType

M, KS, N = 16, 64, 32      # rows, K per step, output columns
STEPS = 4
W_COLS = 3 * N             # the weight is wider than one output block (a column offset)

_DT = {"bf16": ml_dtypes.bfloat16, "f16": np.float16}


def _program(dt: str) -> str:
    nz = "blayout=col_major, slayout=row_major"
    a_t = f"!pto.tile_buf<loc=mat, dtype={dt}, rows={M}, cols={KS}, v_row={M}, v_col={KS}, " \
          f"{nz}, fractal=512, pad=0>"
    b_t = f"!pto.tile_buf<loc=mat, dtype={dt}, rows={KS}, cols={N}, v_row={KS}, v_col={N}, " \
          f"{nz}, fractal=512, pad=0>"
    l_t = f"!pto.tile_buf<loc=left, dtype={dt}, rows={M}, cols={KS}, v_row={M}, v_col={KS}, " \
          f"{nz}, fractal=512, pad=0>"
    r_t = f"!pto.tile_buf<loc=right, dtype={dt}, rows={KS}, cols={N}, v_row={KS}, v_col={N}, " \
          "blayout=row_major, slayout=col_major, fractal=512, pad=0>"
    c_t = f"!pto.tile_buf<loc=acc, dtype=f32, rows={M}, cols={N}, v_row={M}, v_col={N}, " \
          f"{nz}, fractal=1024, pad=0>"
    tv = f"!pto.tensor_view<?x?x{dt}>"
    pa = f"!pto.partition_tensor_view<{M}x{KS}x{dt}>"
    pb = f"!pto.partition_tensor_view<{KS}x{N}x{dt}>"
    b_addr = M * KS * 2

    def step(k: str, acc: str) -> list[str]:
        mm = (f"pto.tmatmul ins(%l{k}, %r{k} : {l_t}, {r_t}) outs(%acc : {c_t})" if acc == ""
              else f"pto.tmatmul.acc ins(%t{k}, %l{k}, %r{k} : {c_t}, {l_t}, {r_t}) "
                   f"outs(%t{k} : {c_t})")
        head = [] if acc == "" else [f"%t{k} = pto.alloc_tile addr = %a0 : {c_t}"]
        return [
            f"%k{k} = arith.muli %s{k}, %cKS : index",
            f"%ta{k} = pto.alloc_tile addr = %a0 : {a_t}",
            f"%pa{k} = pto.partition_view %vx, offsets = [%c0, %k{k}], sizes = [%cM, %cKS] "
            f": {tv} -> {pa}",
            f"pto.tload ins(%pa{k} : {pa}) outs(%ta{k} : {a_t})",
            f"%tb{k} = pto.alloc_tile addr = %aB : {b_t}",
            f"%pb{k} = pto.partition_view %vw, offsets = [%k{k}, %col], sizes = [%cKS, %cN] "
            f": {tv} -> {pb}",
            f"pto.tload ins(%pb{k} : {pb}) outs(%tb{k} : {b_t})",
            f"%l{k} = pto.alloc_tile addr = %a0 : {l_t}",
            f"pto.tmov ins(%ta{k} : {a_t}) outs(%l{k} : {l_t})",
            f"%r{k} = pto.alloc_tile addr = %a0 : {r_t}",
            f"pto.tmov ins(%tb{k} : {b_t}) outs(%r{k} : {r_t})",
            *head, mm]

    lines = [
        "module {",
        f"  func.func @kloop(%x: !pto.ptr<{dt}>, %w: !pto.ptr<{dt}>, %out: !pto.ptr<f32>, "
        "%col: index) {",
        "%c0 = arith.constant 0 : index", "%c1 = arith.constant 1 : index",
        f"%cM = arith.constant {M} : index", f"%cKS = arith.constant {KS} : index",
        f"%cN = arith.constant {N} : index", f"%cK = arith.constant {KS * STEPS} : index",
        f"%cW = arith.constant {W_COLS} : index", f"%cS = arith.constant {STEPS} : index",
        "%a0 = arith.constant 0 : i64", f"%aB = arith.constant {b_addr} : i64",
        f"%vx = pto.make_tensor_view %x, shape = [%cM, %cK], strides = [%cK, %c1] : {tv}",
        f"%vw = pto.make_tensor_view %w, shape = [%cK, %cW], strides = [%cW, %c1] : {tv}",
        "%vo = pto.make_tensor_view %out, shape = [%cM, %cN], strides = [%cN, %c1] "
        ": !pto.tensor_view<?x?xf32>",
        f"%acc = pto.alloc_tile addr = %a0 : {c_t}",
        "%s0 = arith.constant 0 : index",
        *step("0", ""),
        "scf.for %s1 = %c1 to %cS step %c1 {",
        *step("1", "acc"),
        "}",
        f"%po = pto.partition_view %vo, offsets = [%c0, %c0], sizes = [%cM, %cN] "
        f": !pto.tensor_view<?x?xf32> -> !pto.partition_tensor_view<{M}x{N}xf32>",
        f"pto.tstore ins(%acc : {c_t}) outs(%po : !pto.partition_tensor_view<{M}x{N}xf32>)",
        "return", "}", "}"]
    return "\n".join(lines) + "\n"


def _inputs(dt: str) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(7)
    x = rng.standard_normal((M, KS * STEPS)).astype(_DT[dt])
    w = rng.standard_normal((KS * STEPS, W_COLS)).astype(_DT[dt])
    return x, w


def _reference(x: np.ndarray, w: np.ndarray, col: int) -> np.ndarray:
    """The K-step loop: each step's f32 product, added to the f32 sum of the steps before."""
    acc = None
    for s in range(STEPS):
        a = x[:, s * KS:(s + 1) * KS].astype(np.float32)
        b = np.ascontiguousarray(w[s * KS:(s + 1) * KS, col:col + N]).astype(np.float32)
        p = a @ b
        acc = p if acc is None else acc + p
    assert acc is not None
    return acc


@pytest.mark.parametrize("target", ["cpu", "a2a3", "a5"])
@pytest.mark.parametrize("dt", ["bf16", "f16"])
def test_k_loop_of_tiles_placed_again_matches_numpy(dt: str, target: str) -> None:
    prog = pto.load(_program(dt), target=target)
    x, w = _inputs(dt)
    for col in (0, N, 2 * N):
        out = np.zeros((M, N), np.float32)
        prog.kloop(x, w, out, col)
        prog.kloop(x, w, out, col)  # (a second run meets the tiles the first one left)
        assert out.tobytes() == _reference(x, w, col).tobytes(), col


def _eager(x: np.ndarray, w: np.ndarray, out: np.ndarray, col: int) -> None:
    """The same K-loop as eager intrinsics, every tile TASSIGNed again each step."""
    dt = x.dtype
    ta = Tile(TileType.Mat, dt, M, KS, BLayout.ColMajor, None, SLayout.RowMajor)
    tb = Tile(TileType.Mat, dt, KS, N, BLayout.ColMajor, None, SLayout.RowMajor)
    left, right = pto.TileLeft(dt, M, KS), pto.TileRight(dt, KS, N)
    acc = pto.TileAcc(np.float32, M, N)
    for s in range(STEPS):
        for t, addr in ((ta, 0), (tb, M * KS * 2), (left, 0), (right, 0), (acc, 0)):
            pto.TASSIGN(t, addr)
        pto.TLOAD(ta, GlobalTensor(x, (1, 1, 1, M, KS), (x.size,) * 3 + (KS * STEPS, 1),
                                   offset=s * KS))
        pto.TLOAD(tb, GlobalTensor(w, (1, 1, 1, KS, N), (w.size,) * 3 + (W_COLS, 1),
                                   offset=s * KS * W_COLS + col))
        pto.TMOV(left, ta)
        pto.TMOV(right, tb)
        if s == 0:
            pto.TMATMUL(acc, left, right)
        else:
            pto.TMATMUL_ACC(acc, acc, left, right)
    pto.TSTORE(GlobalTensor(out, (1, 1, 1, M, N), (out.size,) * 3 + (N, 1)), acc)


@pytest.mark.parametrize("dt", ["bf16", "f16"])
def test_eager_tassign_again_equals_a_machine_that_copies(dt: str) -> None:
    """A launch (lazy loads and moves, the tiles placed again each step) against a machine
    that copies at every instruction, and both against numpy."""
    x, w = _inputs(dt)
    got = np.zeros((M, N), np.float32)
    pto.launch(_eager, x, w, got, N, mode="manual")
    plain = np.zeros((M, N), np.float32)
    with pto.target("a2a3", mode="manual") as m:
        assert not m.lazy_loads
        _eager(x, w, plain, N)
    assert got.tobytes() == plain.tobytes() == _reference(x, w, N).tobytes()


def test_a_new_run_places_its_tiles_afresh() -> None:
    """The compiled program's tiles outlive a run (on the launch machine, which is reused):
    placed again in the next run, a tile starts from poisoned bytes, not from what it held
    (here: lazily, a view of the first run's input) at the same address before."""
    t = "!pto.tile_buf<loc=vec, dtype=f32, rows=128, cols=128, v_row=128, v_col=128, " \
        "blayout=row_major, slayout=none_box, fractal=512, pad=0>"
    pv = "!pto.partition_tensor_view<128x128xf32>"
    tv = "!pto.tensor_view<?x?xf32>"
    text = "\n".join([
        "module {",
        "  func.func @k(%x: !pto.ptr<f32>, %y: !pto.ptr<f32>, %load: index) {",
        "%c0 = arith.constant 0 : index", "%c1 = arith.constant 1 : index",
        "%c128 = arith.constant 128 : index", "%a0 = arith.constant 0 : i64",
        f"%vx = pto.make_tensor_view %x, shape = [%c128, %c128], strides = [%c128, %c1] : {tv}",
        f"%vy = pto.make_tensor_view %y, shape = [%c128, %c128], strides = [%c128, %c1] : {tv}",
        f"%px = pto.partition_view %vx, offsets = [%c0, %c0], sizes = [%c128, %c128] : {tv} "
        f"-> {pv}",
        f"%py = pto.partition_view %vy, offsets = [%c0, %c0], sizes = [%c128, %c128] : {tv} "
        f"-> {pv}",
        f"%t = pto.alloc_tile addr = %a0 : {t}",
        "%yes = arith.cmpi ne, %load, %c0 : index",
        "scf.if %yes {",
        f"pto.tload ins(%px : {pv}) outs(%t : {t})",
        "}",
        f"pto.tstore ins(%t : {t}) outs(%py : {pv})",
        "return", "}", "}"]) + "\n"
    prog = pto.load(text)
    x = np.arange(128 * 128, dtype=np.float32).reshape(128, 128)
    y = np.zeros_like(x)
    prog.k(x, y, 1)
    assert np.array_equal(y, x)
    y2 = np.zeros_like(x)
    prog.k(x, y2, 0)  # the tile is stored without being loaded: the poison pattern
    assert (y2.view(np.uint8) == 0xFF).all()


def test_a_tile_kept_across_launches_is_placed_afresh() -> None:
    """An eager tile that outlives a launch (made outside the kernel) and is TASSIGNed again
    in the next launch, on the same (reused) launch machine, starts from poisoned bytes."""
    t = Tile(TileType.Vec, np.float32, 128, 128)

    def kernel(x: np.ndarray, y: np.ndarray, load: bool) -> None:
        pto.TASSIGN(t, 0)
        g = (1, 1, 1, 128, 128), (x.size,) * 3 + (128, 1)
        if load:
            pto.TLOAD(t, GlobalTensor(x, *g))
        pto.TSTORE(GlobalTensor(y, *g), t)

    x = np.arange(128 * 128, dtype=np.float32).reshape(128, 128)
    y = np.zeros_like(x)
    pto.launch(kernel, x, y, True, mode="manual")
    assert np.array_equal(y, x)
    y2 = np.zeros_like(x)
    pto.launch(kernel, x, y2, False, mode="manual")
    assert (y2.view(np.uint8) == 0xFF).all()

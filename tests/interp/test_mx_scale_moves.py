"""``pto.tmov`` of E8M0 scales from Mat into ``loc=scaling``: PTOAS writes the C++
TileLeftScale / TileRightScale (A5's MX scale tiles) as scaling tiles, so such a move is
pto-isa's Mat -> ScaleLeft / ScaleRight (CommonCheckMX), not the fix-pipe's quant-word row.
Checked end to end on upstream's Gemvmx sample against a numpy reference of the MX GEMV."""

from __future__ import annotations

from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

import ptoisa as pto


def test_gemvmx_sample_moves_scales_through_tmov(shared_dir: Path) -> None:
    src = shared_dir / "corpus" / "ptoas-main" / "test" / "samples" / "Gemvmx" / "gemvmx-pto.pto"
    if not src.is_file():
        pytest.skip("the PTOAS corpus is not there")
    rng = np.random.default_rng(7)
    a = rng.uniform(-2, 2, (1, 128)).astype(ml_dtypes.float8_e4m3fn)
    b = rng.uniform(-2, 2, (128, 16)).astype(ml_dtypes.float8_e5m2)
    ea = rng.integers(120, 134, (1, 4)).astype(np.uint8)
    eb = rng.integers(120, 134, (4, 16)).astype(np.uint8)
    out = np.zeros((1, 16), np.float32)
    k = pto.load(src.read_text(), target="a5")
    k.gemvmx_kernel(a, b, ea.view(ml_dtypes.float8_e8m0fnu), eb.view(ml_dtypes.float8_e8m0fnu),
                    out)
    # (one E8M0 scale per 32 values of K: 2^(e - 127) on each side)
    grp = np.arange(128) // 32
    av = a.astype(np.float64) * 2.0 ** (ea[:, grp] - 127.0)
    bv = b.astype(np.float64) * 2.0 ** (eb[grp, :] - 127.0)
    np.testing.assert_allclose(out, (av @ bv).astype(np.float32), rtol=1e-6)


def test_only_an_e8m0_scaling_tile_is_an_mx_scale() -> None:
    """A Scaling tile of another type is the fix-pipe's row of quant words: its rules hold."""
    for dt, err in (("!pto.f8E8M0", None), ("f16", "Scaling row must be a multiple of 128")):
        mat = (f"!pto.tile_buf<loc=mat, dtype={dt}, rows=1, cols=4, v_row=1, v_col=4, "
               "blayout=row_major, slayout=row_major, fractal=32, pad=0>")
        sc = mat.replace("loc=mat", "loc=scaling")
        text = (f"module {{\n  func.func @k() {{\n    %s = pto.alloc_tile : {mat}\n"
                f"    %d = pto.alloc_tile : {sc}\n"
                f"    pto.tmov ins(%s : {mat}) outs(%d : {sc})\n    return\n  }}\n}}\n")
        if err is None:
            pto.load(text, target="a5")
        else:
            with pytest.raises(pto.PtoError, match=err):
                pto.load(text, target="a5")


def test_a_scale_move_runs_on_mte1() -> None:
    """PTOAS's tmov_mx_scale_pipe_selection_a5.pto: the MX scale move waits for MTE2 on MTE1
    (an L1 -> L0 load), where the fix-pipe's quant-word row moves on FIX."""
    from ptoisa.isa.registry import REGISTRY
    from ptoisa.tile import Tile

    ins = REGISTRY["TMOV"]
    with pto.target("a5"):
        mat = Tile("Mat", "f8E8M0", 4, 32, "ColMajor", (4, 16), "ColMajor", 32)
        for bl, sl in (("RowMajor", "RowMajor"), ("ColMajor", "ColMajor")):
            sc = Tile("Scaling", "f8E8M0", 4, 32, bl, (4, 16), sl, 32)
            assert ins.pipe_of({"src": mat, "dst": sc}) is pto.Pipe.MTE1
        words = Tile("Scaling", "ui64", 1, 16)
        assert ins.pipe_of({"src": Tile("Mat", "ui64", 1, 16), "dst": words}) is pto.Pipe.FIX


def _repack(src: str, tmp: str, dst: str, axis: int) -> str:
    """A vector kernel: load src's codes from %e, pto.tmov them with a tmp into dst (the MX
    exponent repack, grpAxis ``axis``), store dst's storage to %z."""
    def tt(shape: str) -> str:
        return f"!pto.tile_buf<vec, {shape}xui8{', slayout=row_major' if shape == dst else ''}>"

    (sr, sc), (dr, dc) = (map(int, x.split("x")) for x in (src, dst))
    def view(arg: str, r: int, c: int, k: int) -> str:
        return (f"    %v{k} = pto.make_tensor_view %{arg}, shape = [%c{r}, %c{c}], strides = "
                f"[%c{c}, %c1] : !pto.tensor_view<?x?xui8>\n"
                f"    %p{k} = pto.partition_view %v{k}, offsets = [%c0, %c0], sizes = [%c{r}, "
                f"%c{c}] : !pto.tensor_view<?x?xui8> -> !pto.partition_tensor_view<{r}x{c}xui8>\n")
    consts = "".join(f"    %c{n} = arith.constant {n} : index\n"
                     for n in sorted({0, 1, sr, sc, dr, dc}))
    return (
        "module {\n  func.func @k(%e: !pto.ptr<ui8>, %z: !pto.ptr<ui8>) attributes "
        "{pto.kernel_kind = #pto.kernel_kind<vector>} {\n" + consts + view("e", sr, sc, 0)
        + view("z", dr, dc, 1) +
        f"    %s = pto.alloc_tile : {tt(src)}\n    %t = pto.alloc_tile : {tt(tmp)}\n"
        f"    %d = pto.alloc_tile : {tt(dst)}\n"
        f"    pto.tload ins(%p0 : !pto.partition_tensor_view<{sr}x{sc}xui8>) outs(%s : "
        f"{tt(src)})\n"
        f"    pto.tmov ins(%s : {tt(src)}, %t : {tt(tmp)}) outs(%d : {tt(dst)}) "
        f"{{grpAxis = #pto<mx_group_axis axis{axis}>}}\n"
        f"    pto.tstore ins(%d : {tt(dst)}) outs(%p1 : "
        f"!pto.partition_tensor_view<{dr}x{dc}xui8>)\n    return\n  }}\n}}\n")


def test_dn_exponents_repack_into_a_flat_tile() -> None:
    """TQUANT_DN's M^ x N exponents -> the ZZ stream (pto-isa's TMovDnTo2Zz, the manual's
    E_ZZ[cb, p, q, d] = E_DN[2p + d][16 cb + q]) from the start of a 1 x 128 tile."""
    rng = np.random.default_rng(3)
    e = rng.integers(0, 255, (2, 64)).astype(np.uint8)
    z = np.zeros((1, 128), np.uint8)
    pto.load(_repack("2x64", "1x32", "1x128", 0), target="a5").k(e, z)
    want = [e[2 * p + d, 16 * cb + q] for cb in range(4) for p in range(1) for q in range(16)
            for d in range(2)]
    np.testing.assert_array_equal(z.reshape(-1), want)


def test_nd_exponents_repack_from_a_flat_tile() -> None:
    """M x (N/32) exponents held flat (1 x 80 for 20 x 4) -> the ZZ stream of dst's valid 20 x
    4 (pto-isa's TMovNdTo2Zz: src read densely, rows padded to 32 with zeros):
    E_ZZ[rb, p, i, q] = E[16 rb + i][2p + q]."""
    rng = np.random.default_rng(4)
    e = rng.integers(1, 255, (1, 128)).astype(np.uint8)
    # (dst's valid 20 x 4 is stored: the first 80 bytes of its storage, of the stream)
    text = _repack("1x128", "1x96", "32x4", 1).replace(
        "!pto.tile_buf<vec, 32x4xui8, slayout=row_major>",
        "!pto.tile_buf<vec, 32x4xui8, valid=20x4, slayout=row_major>").replace(
        "sizes = [%c32, %c4]", "sizes = [%c20, %c4]").replace(
        "partition_tensor_view<32x4xui8>", "partition_tensor_view<20x4xui8>").replace(
        "    %c32 = arith.constant 32 : index\n",
        "    %c32 = arith.constant 32 : index\n    %c20 = arith.constant 20 : index\n")
    z = np.zeros((32, 4), np.uint8)
    pto.load(text, target="a5").k(e, z)
    m = np.zeros((32, 4), np.uint8)
    m[:20] = e[0, :80].reshape(20, 4)
    want = [m[16 * rb + i, 2 * p + q] for rb in range(2) for p in range(2) for i in range(16)
            for q in range(2)]
    np.testing.assert_array_equal(z.reshape(-1)[:80], want[:80])

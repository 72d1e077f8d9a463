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

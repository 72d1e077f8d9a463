"""The example kernels (examples/softmax, gemm_int8, topk), eager and as .pto programs, on
every target where they are legal, against numpy references written here from the spec."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

import ptoisa
from ptoisa import cli

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
TARGETS = ("cpu", "a2a3", "a5")


def _example(name: str) -> ModuleType:
    mod = sys.modules.get(f"example_{name}")
    if mod is None:
        spec = importlib.util.spec_from_file_location(f"example_{name}", EXAMPLES / f"{name}.py")
        assert spec is not None and spec.loader is not None
        mod = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = mod
        spec.loader.exec_module(mod)
    return mod


softmax = _example("softmax")
gemm = _example("gemm_int8")
topk = _example("topk")


# ---- softmax: ragged last block ---------------------------------------------------------------

def softmax_ref(x: np.ndarray) -> np.ndarray:
    e = np.exp(x.astype(np.float64) - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("n_rows", [3, 16, 21])   # < one tile, whole tiles, ragged last block
@pytest.mark.parametrize("run", ["eager", "pto"])
def test_softmax(run: str, n_rows: int, target: str) -> None:
    x = (np.random.default_rng(n_rows).standard_normal((n_rows, softmax.COLS)) * 4
         ).astype(np.float32)
    out = softmax.run_eager(x, target) if run == "eager" else softmax.run_pto(x, target)
    np.testing.assert_allclose(out, softmax_ref(x), rtol=2e-6, atol=1e-7)


@pytest.mark.parametrize("target", ["cpu", "a5"])
def test_softmax_pto_ragged_block_stays_inside_its_rows(target: str) -> None:
    """The last block (5 valid rows) writes rows 16..20 only: rows past n_rows keep their
    sentinel, though the out array is larger than the tensor view."""
    n, cols = 21, softmax.COLS
    x = np.random.default_rng(1).standard_normal((n + 3, cols)).astype(np.float32)
    out = np.full((n + 3, cols), -7.0, np.float32)
    ptoisa.load(softmax.PTO_FILE).softmax(x, out, n, blocks=3, target=target)
    np.testing.assert_allclose(out[:n], softmax_ref(x[:n]), rtol=2e-6, atol=1e-7)
    assert (out[n:] == -7.0).all()


# ---- GEMM with int8 output through TSTORE_FP -------------------------------------------------

def gemm_ref(a: np.ndarray, b: np.ndarray, scale: np.ndarray, offset: np.ndarray) -> np.ndarray:
    """clamp(rint(acc * scale[j] + offset[j]), -128, 127), rint ties to even."""
    acc = a.astype(np.float64) @ b.astype(np.float64)
    return np.clip(np.rint(acc * scale[None, :] + offset[None, :]), -128, 127).astype(np.int8)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("run", ["eager", "pto"])
def test_gemm_int8(run: str, target: str) -> None:
    a, b, words, scale, offset = gemm.make_inputs(seed=3)
    c = gemm.run_eager(a, b, words, target) if run == "eager" else \
        gemm.run_pto(a, b, words, target)
    want = gemm_ref(a, b, scale, offset)
    np.testing.assert_array_equal(c, want)
    assert (want == 127).any() and (want == -128).any()     # saturation is exercised


def test_gemm_quant_word_layout() -> None:
    """The example's quant word: scale's f32 bits 13..31, offset bits 37..45, sign bit 46."""
    w = gemm.quant_word(1.5, 3)
    assert w >> 46 & 1 == 1 and w >> 37 & 0x1FF == 3
    assert np.array([w & 0xFFFFFFFF], np.uint64).astype(np.uint32).view(np.float32)[0] == 1.5
    assert gemm.quant_word(2.0, 0, signed=False) >> 46 == 0


# ---- top-k -------------------------------------------------------------------------------------

def topk_ref(x: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Largest first; equal values in increasing column order."""
    cols = np.arange(x.shape[1])
    vals, idx = [], []
    for row in x:
        order = sorted(cols, key=lambda c, row=row: (-row[c], c))[:k]
        vals.append(row[order])
        idx.append(order)
    return np.array(vals, np.float32), np.array(idx, np.uint32)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("run", ["eager", "pto"])
def test_topk(run: str, target: str) -> None:
    x = topk.make_input(3, seed=5)
    x[1, [7, 130, 200]] = 100.0              # a tie at the top, across both halves
    vals, idx = topk.run_eager(x, target) if run == "eager" else topk.run_pto(x, target)
    want_v, want_i = topk_ref(x, topk.K)
    np.testing.assert_array_equal(vals, want_v)
    np.testing.assert_array_equal(idx, want_i)
    assert idx[1, :3].tolist() == [7, 130, 200]


# ---- the scripts and the command line ----------------------------------------------------------

@pytest.mark.parametrize("mod", [softmax, gemm, topk], ids=["softmax", "gemm_int8", "topk"])
@pytest.mark.parametrize("pto", [False, True])
def test_script_main(mod: ModuleType, pto: bool, capsys: pytest.CaptureFixture[str]) -> None:
    assert mod.main(["--target", "a5"] + (["--pto"] if pto else [])) == 0
    assert "matches numpy" in capsys.readouterr().out


def test_cli_run_topk(tmp_path: Path) -> None:
    x = topk.make_input(2, seed=9)
    np.save(tmp_path / "x.npy", x)
    rc = cli.main(["run", str(EXAMPLES / "topk.pto"), "--target", "a2a3", "--blocks", "2",
                   "--arg", f"x={tmp_path / 'x.npy'}", "--arg", "top_vals=zeros:2x16:f32",
                   "--arg", "top_idx=zeros:2x16:ui32", "--out", str(tmp_path / "out")])
    assert rc == 0
    want_v, want_i = topk_ref(x, topk.K)
    np.testing.assert_array_equal(np.load(tmp_path / "out" / "top_vals.npy"), want_v)
    np.testing.assert_array_equal(np.load(tmp_path / "out" / "top_idx.npy"), want_i)

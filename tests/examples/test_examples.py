"""The example kernels (examples/softmax, gemm_int8, topk), eager and as .pto programs, on
every target where they are legal, against numpy references written here from the spec."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
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

ALL_EXAMPLES = sorted(p.stem for p in EXAMPLES.glob("*.py"))


def _usage(name: str) -> str:
    """The ``python examples/NAME.py [...]`` line(s) of the example's docstring."""
    doc = _example(name).__doc__ or ""
    m = re.search(rf"python examples/{name}\.py(.*?)(\n\n|$)", doc, re.S)
    assert m, f"examples/{name}.py: its docstring has no 'python examples/{name}.py' line"
    return " ".join(m.group(1).split())


def _documented_runs() -> list[tuple[str, list[str]]]:
    """Every (example, flags) combination its usage line documents: each target of
    ``[--target cpu|a2a3|a5]``, with and without ``[--pto]``; small sizes where it takes them."""
    runs = []
    for name in ALL_EXAMPLES:
        usage = _usage(name)
        targets = re.search(r"--target ([\w|]+)", usage)
        small = {"--heads": ["--heads", "1"], "--blocks-kv": ["--blocks-kv", "2"],
                 "--blocks": ["--blocks", "2"]}
        extra = [a for flag, a in small.items() if re.search(rf"{flag}\b", usage)][:1]
        for t in (targets.group(1).split("|") if targets else [None]):
            for pto in ([False, True] if "--pto" in usage else [False]):
                runs.append((name, (["--target", t] if t else []) + (["--pto"] if pto else [])
                             + (extra[0] if extra else [])))
    return runs


@pytest.mark.parametrize("name", ALL_EXAMPLES)
def test_example_documents_every_target_and_its_pto(name: str) -> None:
    """What the README promises: ``--target cpu|a2a3|a5`` everywhere, ``--pto`` where a .pto
    program sits beside the script (flash_softmax says why it has none)."""
    usage = _usage(name)
    assert "--target cpu|a2a3|a5" in usage
    if (EXAMPLES / f"{name}.pto").exists():
        assert "--pto" in usage
    else:
        assert "no ``--pto``" in (_example(name).__doc__ or "")


@pytest.mark.parametrize(("name", "flags"), _documented_runs(),
                         ids=lambda v: " ".join(v) if isinstance(v, list) else v)
def test_example_runs_with_documented_flags(name: str, flags: list[str],
                                            capsys: pytest.CaptureFixture[str]) -> None:
    assert _example(name).main(flags) == 0
    out = capsys.readouterr().out
    target = flags[flags.index("--target") + 1] if "--target" in flags else ptoisa.DEFAULT_TARGET
    assert f"on {target}" in out                     # the target it ran on is reported
    assert "MISMATCH" not in out and "WRONG" not in out


def test_example_default_target_is_the_default() -> None:
    for name in ALL_EXAMPLES:
        ap_default = re.search(r'"--target", default=([\w."]+)', (EXAMPLES / f"{name}.py")
                               .read_text())
        assert ap_default and ap_default.group(1) == "pto.DEFAULT_TARGET", name


def test_vec_add_script_as_the_readme_runs_it() -> None:
    """``python examples/vec_add.py --pto`` as a process (the README's first command)."""
    env = {**os.environ, "PYTHONPATH": str(EXAMPLES.parent)}
    r = subprocess.run([sys.executable, str(EXAMPLES / "vec_add.py"), "--pto", "--blocks", "2"],
                       capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    assert f"vec_add (vec_add.pto) on {ptoisa.DEFAULT_TARGET}" in r.stdout
    assert "Valid Shape: [3, 6]" in r.stdout                       # the TPRINT of a corner


@pytest.mark.parametrize("pto_file", sorted(p.name for p in EXAMPLES.glob("*.pto")))
def test_pto_header_command_runs(pto_file: str, tmp_path: Path,
                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """Each .pto file's header has its command line, and it runs from the checkout's root
    (FILE.npy inputs made here from the example's make_inputs; --out into a scratch dir)."""
    text = (EXAMPLES / pto_file).read_text()
    m = re.search(r"//\s+(ptoisa run (?:.*\\\n//)*.*)", text)
    assert m, f"{pto_file}: no 'ptoisa run' line in its header"
    argv = m.group(1).replace("\\\n//", " ").split()[1:]
    if "--ranks" in argv:
        pytest.skip("a multi-rank program: tests/ranks/test_ranks_cli.py runs its header command")
    a, b, words, _, _ = gemm.make_inputs()
    npy = {"a.npy": a, "b.npy": b, "words.npy": words}
    for i, arg in enumerate(argv):
        if arg == "--out":
            argv[i + 1] = str(tmp_path / "out")
        elif arg.endswith(".npy"):
            name, _, file = arg.partition("=")
            np.save(tmp_path / file, npy[file])
            argv[i] = f"{name}={tmp_path / file}"
    monkeypatch.chdir(EXAMPLES.parent)
    assert cli.main(argv) == 0
    if "--out" in argv:
        assert list((tmp_path / "out").glob("*.npy"))


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


def test_flash_softmax_pto_is_what_export_writes_today() -> None:
    """examples/flash_softmax.pto is pto.export's output for the eager kernel (checked in, so
    it reads like any .pto example): regenerate it with ``pto_text()`` when the kernel or the
    exporter changes."""
    fs = _example("flash_softmax")
    assert (EXAMPLES / "flash_softmax.pto").read_text() == fs.pto_text()

"""examples/mixed_attention (eager and .pto, lockstep and block by block, the script and the
command line) against a numpy attention written here."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

from ptoisa import cli

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _load():
    name = "example_mixed_attention"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, EXAMPLES / "mixed_attention.py")
        assert spec is not None and spec.loader is not None
        mod = importlib.util.module_from_spec(spec)
        sys.modules[name] = mod
        spec.loader.exec_module(mod)
    return sys.modules[name]


ma = _load()


def attention(q: np.ndarray, k: np.ndarray, v: np.ndarray) -> np.ndarray:
    """softmax(q k^T / sqrt(d)) v per head, float64."""
    out = []
    for qh, kh, vh in zip(q.astype(np.float64), k.astype(np.float64), v.astype(np.float64),
                          strict=True):
        s = qh @ kh.T / np.sqrt(qh.shape[1])
        p = np.exp(s - s.max(axis=1, keepdims=True))
        out.append((p / p.sum(axis=1, keepdims=True)) @ vh)
    return np.array(out)


@pytest.mark.parametrize("target", ["a2a3", "a5"])
@pytest.mark.parametrize("run", ["eager", "pto"])
def test_mixed_attention(run: str, target: str) -> None:
    q, k, v = ma.make_inputs(3, seed=4)
    out = ma.run_eager(q, k, v, target) if run == "eager" else ma.run_pto(q, k, v, target)
    np.testing.assert_allclose(out, attention(q, k, v), rtol=1e-4, atol=1e-5)


def test_lockstep_equals_block_by_block() -> None:
    q, k, v = ma.make_inputs(4, seed=8)
    np.testing.assert_array_equal(ma.run_eager(q, k, v, lockstep=True),
                                  ma.run_eager(q, k, v, lockstep=False))


@pytest.mark.parametrize("pto", [False, True])
def test_script_main(pto: bool, capsys: pytest.CaptureFixture[str]) -> None:
    assert ma.main(["--heads", "2"] + (["--pto"] if pto else [])) == 0
    assert "matches numpy" in capsys.readouterr().out


def test_cli_run(tmp_path: Path) -> None:
    q, k, v = ma.make_inputs(2, seed=1)
    for name, arr in (("q", q), ("k", k), ("v", v)):
        np.save(tmp_path / f"{name}.npy", arr.reshape(-1, ma.D))
    rc = cli.main(["run", str(EXAMPLES / "mixed_attention.pto"), "--target", "a2a3",
                   "--blocks", "2", *(x for n in "qkv" for x in
                                      ("--arg", f"{n}={tmp_path / (n + '.npy')}")),
                   "--arg", "out=zeros:32x32:f32", "--out", str(tmp_path / "out")])
    assert rc == 0
    got = np.load(tmp_path / "out" / "out.npy").reshape(2, ma.M, ma.D)
    np.testing.assert_allclose(got, attention(q, k, v), rtol=1e-4, atol=1e-5)

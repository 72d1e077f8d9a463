"""``ptoisa check | fmt | run`` through ``ptoisa.cli.main`` (and one real subprocess)."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ptoisa.cli import main
from ptoisa.isa.matrix import set_matmul_accumulation

SHARED = Path(os.environ.get("PTOISA_SHARED") or Path(__file__).resolve().parents[3] / "shared")
VADD = SHARED / "corpus" / "ptoas" / "test" / "samples" / "VectorAddition" / "vadd.pto"
pytestmark = pytest.mark.skipif(not VADD.exists(), reason="PTOAS corpus not found")


def test_check_ok_and_error_with_caret(tmp_path, capsys):
    assert main(["check", str(VADD)]) == 0
    assert "ok (1 function, target a2a3)" in capsys.readouterr().out
    bad = tmp_path / "bad.pto"
    bad.write_text(VADD.read_text().replace("pto.tadd ins(%5, %6", "pto.tadd ins(%5"))
    assert main(["check", str(bad), "--target", "a5"]) == 1
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith(f"{bad}:") and ": error: pto.tadd: expects ins" in err[0]
    assert err[2].strip() == "^"


def test_check_stdin(monkeypatch, capsys):
    monkeypatch.setattr(sys, "stdin", io.StringIO("module {\n  func.func @f( {\n}\n"))
    assert main(["check", "-"]) == 1
    assert capsys.readouterr().err.startswith("<stdin>:2:")


def test_fmt_forms_and_output(tmp_path, capsys):
    assert main(["fmt", str(VADD), "--form", "asm"]) == 0
    assert "= tadd %5, %6" in capsys.readouterr().out
    out = tmp_path / "v.pto"
    assert main(["fmt", str(VADD), "--form", "ssa", "-o", str(out)]) == 0
    assert "pto.tadd %5, %6" in out.read_text()
    assert main(["check", str(out)]) == 0


def test_run_writes_outputs(tmp_path, capsys):
    a = np.arange(1024, dtype=np.float32).reshape(32, 32)
    np.save(tmp_path / "a.npy", a)
    rc = main(["run", str(VADD), "--arg", f"arg0={tmp_path / 'a.npy'}", "--arg",
               f"1={tmp_path / 'a.npy'}", "--arg", "arg2=zeros:32x32:f32", "--out",
               str(tmp_path / "o")])
    assert rc == 0, capsys.readouterr().err
    np.testing.assert_array_equal(np.load(tmp_path / "o" / "arg2.npy"), 2 * a)
    np.testing.assert_array_equal(np.load(tmp_path / "o" / "arg0.npy"), a)


@pytest.mark.parametrize(("args", "msg"), [
    (["--arg", "arg0=zeros:32x32:f32", "--arg", "arg1=zeros:32x32:f32"], "missing argument %arg2"),
    (["--arg", "arg0=zeros:32x32:f99"], "unknown element type 'f99'"),
    (["--arg", "arg0=nope.npy"], "cannot read nope.npy"),
    (["--arg", "arg0=3"], "is a pointer"),
    (["--arg", "zz=3"], "has no argument 'zz'"),
    (["--arg", "arg0=zeros:32x32:f16", "--arg", "arg1=zeros:32x32:f32", "--arg",
      "arg2=zeros:32x32:f32"], "must have dtype f32"),
    (["--entry", "nope"], "no function 'nope'"),
])
def test_run_errors_are_diagnostics(args, msg, capsys):
    assert main(["run", str(VADD), *args]) == 1
    err = capsys.readouterr().err
    assert msg in err and "Traceback" not in err


def test_python_m_ptoisa_check():
    r = subprocess.run([sys.executable, "-m", "ptoisa", "check", str(VADD)], capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0 and "ok" in r.stdout


CORPUS_TEXTS = [p.read_text() for p in sorted((SHARED / "corpus" / "ptoas").rglob("*.pto"))[::9]]


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.sampled_from(CORPUS_TEXTS or ["module {}"]), st.data())
def test_fuzz_check_never_raises(tmp_path, capsys, text, data):
    pos = data.draw(st.integers(0, max(len(text) - 1, 0)))
    n = data.draw(st.integers(0, 12))
    ins = data.draw(st.text(alphabet="%@:<>()[]{}=,0123456789xif? \n", max_size=6))
    mutated = text[:pos] + ins + text[pos + n:]
    p = tmp_path / "m.pto"
    p.write_text(mutated)
    rc = main(["check", str(p), "--target", data.draw(st.sampled_from(["cpu", "a2a3", "a5"]))])
    out = capsys.readouterr()
    assert rc in (0, 1)
    if rc == 1:
        assert "error:" in out.err
        assert "internal error" not in out.err, out.err


@pytest.mark.parametrize("mode", ["exact", "f32"])
def test_run_matmul_accumulation_flag(mode, tmp_path, capsys):
    """A dot product whose f32 sum can lose a small term between two large ones: exact mode
    keeps it; f32 accumulation gives it or 0 depending on the summation order."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(  # the benchmark's 512^3 GEMM as .pto
        "bench_kernels", Path(__file__).parents[2] / "benchmarks" / "kernels.py")
    assert spec is not None and spec.loader is not None
    kernels = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(kernels)

    src = tmp_path / "gemm.pto"
    src.write_text(kernels.gemm_pto())
    a = np.zeros((512, 512), np.float16)
    b = np.zeros((512, 512), np.float16)
    a[0, :3] = [2048, 1, -2048]
    b[:3, 0] = [2048, 2.0 ** -4, 2048]
    np.save(tmp_path / "a.npy", a)
    np.save(tmp_path / "b.npy", b)
    rc = main(["run", str(src), "--target", "cpu", "--blocks", "64", "--arg",
               f"a={tmp_path / 'a.npy'}", "--arg", f"b={tmp_path / 'b.npy'}", "--arg",
               "c=zeros:512x512:f32", "--out", str(tmp_path / "o"),
               "--matmul-accumulation", mode])
    assert rc == 0, capsys.readouterr().err
    c = np.load(tmp_path / "o" / "c.npy")
    assert c[0, 0] == 2.0 ** -4 if mode == "exact" else c[0, 0] in (0.0, 2.0 ** -4)
    assert not c.ravel()[1:].any()
    assert set_matmul_accumulation("f32") == "f32"  # the run restored the default

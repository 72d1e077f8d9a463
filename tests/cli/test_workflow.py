"""The command line agrees with the README: one default target everywhere (and printed),
``ptoisa run`` reports its results, ``--version``, an example in every ``--help``."""

from __future__ import annotations

import argparse
import inspect
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

import ptoisa as pto
from ptoisa import cli
from ptoisa.cli import runreport

VEC_ADD = Path(__file__).resolve().parents[2] / "examples" / "vec_add.pto"


def _subparsers() -> dict[str, argparse.ArgumentParser]:
    p = cli.build_parser()
    action = next(a for a in p._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as e:
        cli.main(["--version"])
    assert e.value.code == 0
    assert capsys.readouterr().out.strip() == f"ptoisa {pto.__version__}"


@pytest.mark.parametrize("name", sorted(_subparsers()))
def test_every_help_has_an_example(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    sp = _subparsers()[name]
    assert sp.epilog and sp.epilog.startswith("example"), f"ptoisa {name} --help: no example"
    assert f"ptoisa {name} " in sp.epilog
    with pytest.raises(SystemExit):
        cli.main([name, "--help"])
    out = capsys.readouterr().out
    assert "example" in out and f"ptoisa {name} " in out


def test_top_level_help_names_the_default_target(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        cli.main(["--help"])
    out = capsys.readouterr().out
    assert f"Default target: {pto.DEFAULT_TARGET}" in out and "example" in out


def test_one_default_target_everywhere() -> None:
    assert pto.DEFAULT_TARGET == "a2a3"
    for fn in (pto.launch, pto.load, pto.export, pto.target, pto.launch_mixed, pto.Machine,
               pto.Program):
        assert inspect.signature(fn).parameters[
            "name" if fn is pto.target else "target"].default == pto.DEFAULT_TARGET, fn
    subs = _subparsers()
    for name in ("check", "run", "sync", "export"):
        assert subs[name].get_default("target") == pto.DEFAULT_TARGET, name
    # the conformance pack is the cpu simulator's answer key: it keeps the cpu target
    assert subs["conformance"].get_default("target") == "cpu"


def test_check_prints_the_default_target(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["check", str(VEC_ADD)]) == 0
    assert f"target {pto.DEFAULT_TARGET}" in capsys.readouterr().out


def _vec_add_args(tmp_path: Path) -> tuple[np.ndarray, np.ndarray, list[str]]:
    x = np.arange(4096, dtype=np.float32) / 8
    y = np.full(4096, 2.0, np.float32)
    x[5] = np.nan
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "y.npy", y)
    return x, y, ["run", str(VEC_ADD), "--arg", f"x={tmp_path / 'x.npy'}",
                  "--arg", f"y={tmp_path / 'y.npy'}", "--arg", "z=zeros:4096:f32"]


def test_run_without_out_summarises_every_array(tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    x, y, argv = _vec_add_args(tmp_path)
    assert cli.main(argv) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == f"@vec_add on {pto.DEFAULT_TARGET}, 1 block:"
    got = {ln.split()[0]: ln for ln in lines[1:]}
    z = x + y                                          # numpy's, NaN at 5
    ok = z[~np.isnan(z)]
    assert got["%z"].split() == ["%z", "4096", "f32", "min", f"{ok.min():.6g}", "max",
                                 f"{ok.max():.6g}", "mean", f"{ok.mean():.6g}", "NaN", "1"]
    assert got["%y"].split()[:5] == ["%y", "4096", "f32", "min", "2"]
    assert got["%x"].endswith("(unchanged)") and got["%y"].endswith("(unchanged)")
    assert not got["%z"].endswith("(unchanged)")


def test_run_quiet_and_out(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _, _, argv = _vec_add_args(tmp_path)
    assert cli.main([*argv, "--quiet"]) == 0
    assert capsys.readouterr().out == ""
    assert cli.main([*argv, "--out", str(tmp_path / "o"), "--target", "a5"]) == 0
    assert capsys.readouterr().out.strip() == (
        f"@vec_add on a5, 1 block: wrote x.npy, y.npy, z.npy to {tmp_path / 'o'}")


def test_run_rand_arguments_differ_per_name(tmp_path: Path) -> None:
    assert cli.main(["run", str(VEC_ADD), "--blocks", "2", "--arg", "x=rand:8192:f32",
                     "--arg", "y=rand:8192:f32", "--arg", "z=zeros:8192:f32",
                     "--out", str(tmp_path)]) == 0
    x, y, z = (np.load(tmp_path / f"{n}.npy") for n in "xyz")
    assert not np.array_equal(x, y) and (np.abs(x) <= 4).all()
    np.testing.assert_array_equal(z, x + y)


@pytest.mark.parametrize(("entry", "title"), [
    (None, "@attention"), ("attention_cube+attention_vector",
                           "@attention_cube + @attention_vector")])
def test_run_mixed_kernel_summarises_every_array(entry: str | None, title: str,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    pto_file = VEC_ADD.with_name("mixed_attention.pto")
    assert cli.main(["run", str(pto_file), "--blocks", "1", "--arg", "q=rand:16x32:f32",
                     "--arg", "k=rand:64x32:f32", "--arg", "v=rand:64x32:f32",
                     "--arg", "out=zeros:16x32:f32"] + (["--entry", entry] if entry else [])
                    ) == 0
    lines = capsys.readouterr().out.splitlines()
    head = lines.index(f"{title} on {pto.DEFAULT_TARGET}, 1 block:")  # cube + vector
    got = [ln.split()[0] for ln in lines[head + 1:]]
    assert got == ["%q", "%k", "%v", "%out"]
    assert lines[-1].startswith("  %out  16x32 f32  min ") and "(unchanged)" not in lines[-1]


def test_summarize_types() -> None:
    assert runreport.summarize(np.array([[1, -3], [5, 7]], np.int8)) == \
        "2x2 i8  min -3  max 7  mean 2.5"
    assert runreport.summarize(np.array([0.5, 1.5], ml_dtypes.bfloat16)) == \
        "2 bf16  min 0.5  max 1.5  mean 1"
    assert runreport.summarize(np.full(3, np.nan, np.float32)) == "3 f32  NaN 3"
    assert runreport.summarize(np.zeros((0, 4), np.float16)) == "0x4 f16  (empty)"

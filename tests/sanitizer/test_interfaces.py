"""``ptoisa run --sanitize`` (exit status, diagnostics on stderr, --sync, --sanitize-checks),
uninitialised reads, views of auto tiles, and the report as data."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import ptoisa as pto
from ptoisa import GlobalTensor, Tile, TileType
from ptoisa.cli import main
from ptoisa.sanitizer import Sanitizer, SanitizerError

HERE = Path(__file__).resolve().parent
LOOP = HERE / "loop_clean.pto"
P = pto.Pipe
ARGS = ["--arg", "x=zeros:64x16:f32", "--arg", "z=zeros:64x16:f32"]


def test_cli_clean_and_racy(tmp_path, capsys):
    assert main(["run", str(LOOP), "--sanitize", *ARGS]) == 0
    assert capsys.readouterr().err == ""
    racy = tmp_path / "racy.pto"
    racy.write_text("\n".join(ln for ln in LOOP.read_text().splitlines()
                              if "<PIPE_MTE2>, <PIPE_V>, <EVENT_ID2>" not in ln))
    assert main(["run", str(racy), "--sanitize", *ARGS]) == 1
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith(f"{racy}:") and ": error: race (RAW) on UB [0x0, 0x400) (%tx): " \
        "pto.tadd (PIPE_V) reads what pto.tload (PIPE_MTE2) at " in err[0]
    assert ": note: fix: insert pto.set_flag[<PIPE_MTE2>, <PIPE_V>, <EVENT_ID" in err[1]
    assert err[-1] == "sanitizer: 1 finding"
    # only the checks asked for; --sync auto: no race reports
    assert main(["run", str(racy), "--sanitize-checks", "uninit", *ARGS]) == 0
    assert main(["run", str(racy), "--sync", "auto", *ARGS]) == 0
    assert main(["run", str(racy), "--sanitize-checks", "bogus", *ARGS]) == 1
    assert "unknown sanitizer check(s) bogus" in capsys.readouterr().err


def test_cli_auto_sync_program_reports_races_only_with_sync_manual(tmp_path, capsys):
    auto = tmp_path / "auto.pto"
    auto.write_text("\n".join(ln for ln in LOOP.read_text().splitlines()
                              if "_flag[" not in ln))
    assert main(["run", str(auto), "--sanitize", *ARGS]) == 0
    assert main(["run", str(auto), "--sanitize", "--sync", "manual", *ARGS]) == 1
    assert "race (RAW)" in capsys.readouterr().err


def _g(a):
    return GlobalTensor(a, (1, 1, 1, 16, 16), (256, 256, 256, 16, 1))


def test_uninitialised_read_names_tile_and_instruction():
    def k(x, z):
        a = Tile(TileType.Vec, np.float32, 16, 16)
        b = Tile(TileType.Vec, np.float32, 16, 16)
        c = Tile(TileType.Vec, np.float32, 16, 16)
        pto.TLOAD(a, _g(x))
        pto.SET_FLAG(P.MTE2, P.V, 0)
        pto.WAIT_FLAG(P.MTE2, P.V, 0)
        pto.TADD(c, a, b)  # b: nothing wrote it
        pto.SET_FLAG(P.V, P.MTE3, 0)
        pto.WAIT_FLAG(P.V, P.MTE3, 0)
        pto.TSTORE(_g(z), c)

    x, z = np.ones(256, np.float32), np.zeros(256, np.float32)
    with pytest.raises(SanitizerError) as e:
        pto.launch(k, x, z, sanitize=True)
    (f,) = e.value.report
    assert f.kind == "uninit" and f.site.op == "TADD" and f.loc[1] > 0
    assert "reads tile Vec f32 16x16 ND (UB [0x0, 0x400)) but bytes [0x0, 0x400) were " \
        "not written in this launch" in f.message
    assert (f.lo, f.hi) == (0, 1024)
    # the race checks alone do not look at it
    assert not pto.launch(k, x, z, sanitize=Sanitizer("races"))


def test_views_of_auto_tiles_share_the_bytes_of_their_base():
    def k(x, z, flag):
        a = Tile(TileType.Vec, np.float32, 16, 16)
        v = Tile(TileType.Vec, np.float32, 8, 16)
        c = Tile(TileType.Vec, np.float32, 8, 16)
        pto.TLOAD(a, _g(x))
        pto.TSUBVIEW(v, a, 8, 0)  # rows 8..15 of a
        if flag:
            pto.SET_FLAG(P.MTE2, P.V, 0)
            pto.WAIT_FLAG(P.MTE2, P.V, 0)
        pto.TADD(c, v, v)  # reads a's bytes through the view: initialised, and a race without
        pto.SET_FLAG(P.V, P.MTE3, 0)
        pto.WAIT_FLAG(P.V, P.MTE3, 0)
        pto.TSTORE(GlobalTensor(z, (1, 1, 1, 8, 16), (128, 128, 128, 16, 1)), c)

    x, z = np.arange(256, dtype=np.float32), np.zeros(128, np.float32)
    assert not pto.launch(k, x, z, True, sanitize=Sanitizer())
    np.testing.assert_array_equal(z, 2 * x[128:])
    r = pto.launch(k, x, z, False, sanitize=Sanitizer())
    (f,) = r
    assert (f.hazard, f.site.op, f.other.op) == ("RAW", "TADD", "TLOAD")
    assert (f.lo, f.hi) == (512, 1024)  # the view's half of a's bytes


def test_sanitizer_off_leaves_no_observer():
    x = np.ones(256, np.float32)
    pto.launch(lambda x: pto.TLOAD(Tile(TileType.Vec, np.float32, 16, 16), _g(x)), x,
               sanitize=Sanitizer())
    m = pto.grid._launch_machine("cpu", 1, {})
    try:
        assert m.observers == []
    finally:
        pto.grid._done(m)


def test_pto_sanitize_true_raises_and_fail_fast_is_located(tmp_path):
    racy = "\n".join(ln for ln in LOOP.read_text().splitlines()
                     if "<PIPE_MTE2>, <PIPE_V>, <EVENT_ID2>" not in ln)
    prog = pto.load(racy, target="a2a3", filename="racy.pto")
    x = np.ones((64, 16), np.float32)
    z = np.zeros_like(x)
    with pytest.raises(SanitizerError) as e:
        prog.loop(x, z, sanitize=True)
    assert [f.hazard for f in e.value.report] == ["RAW"]
    np.testing.assert_array_equal(z, 2 * x)  # completed
    z[:] = 0
    with pytest.raises(SanitizerError) as e:
        prog.loop(x, z, sanitize=Sanitizer(fail_fast=True))
    assert str(e.value).startswith("racy.pto:") and "race (RAW)" in str(e.value)
    assert not z.any()
    # a clean run returns the function's results as usual
    assert pto.load(LOOP.read_text(), target="a2a3").loop(x, z, sanitize=True) == ()


def test_cli_sanitizes_a_mixed_pair(tmp_path, capsys):
    """A cube + vector module (each core its own sanitizer core): auto-synchronised, clean;
    with --sync manual the flags it leaves to the compiler are reported per core."""
    rng = np.random.default_rng(0)
    for n, shape in (("q", (64, 32)), ("k", (256, 32)), ("v", (256, 32))):
        np.save(tmp_path / f"{n}.npy", rng.random(shape).astype(np.float32))
    src = Path(__file__).resolve().parents[2] / "examples" / "mixed_attention.pto"
    args = ["run", str(src), "--target", "a2a3", "--blocks", "2",
            *(a for n in "qkv" for a in ("--arg", f"{n}={tmp_path / n}.npy")),
            "--arg", "out=zeros:64x32:f32"]
    assert main([*args, "--sanitize"]) == 0
    capsys.readouterr()
    assert main([*args, "--sync", "manual"]) == 1
    err = capsys.readouterr().err
    assert "pto.tmatmul (PIPE_M) reads what pto.tmov (PIPE_MTE1)" in err  # the cube core
    assert "pto.tmuls (PIPE_V) reads what pto.tpop (PIPE_MTE2)" in err  # a vector core

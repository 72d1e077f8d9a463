"""What a new user trips over: ``check`` refuses (located) what ``run`` would refuse
statically, and user mistakes are diagnostics (exit 1), never "a bug in ptoisa" (exit 3)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import ptoisa as pto
from ptoisa.cli import main
from ptoisa.errors import PtoError

ROOT = Path(__file__).resolve().parents[2]

_PTR_ARG = "%x: !pto.ptr<f32>"
_VEC_ADD = (ROOT / "examples" / "vec_add.pto").read_text()

# (name, program, run arguments, what both check and run must say, located at line:col)
STATIC = [
    ("duplicate_function",
     f"module {{\n  func.func @k({_PTR_ARG}) {{\n    return\n  }}\n"
     f"  func.func @k({_PTR_ARG}) {{\n    return\n  }}\n}}\n",
     ["--arg", "x=zeros:4:f32"], "redefinition of symbol named 'k'", "5:3"),
    ("unknown_element_type",
     "module {\n  func.func @k(%x: !pto.ptr<f99>) {\n    return\n  }\n}\n",
     ["--arg", "x=zeros:4:f32"], "unknown element type 'f99'", "2:3"),
    ("undefined_callee",
     f"module {{\n  func.func @k({_PTR_ARG}) {{\n"
     "    func.call @nothere(%x) : (!pto.ptr<f32>) -> ()\n    return\n  }\n}\n",
     ["--arg", "x=zeros:4:f32"], "'nothere' does not reference a valid function", "3:5"),
    ("tile_address_beyond_buffer",
     _VEC_ADD.replace("%c32768 = arith.constant 32768", "%c32768 = arith.constant 4000000"),
     ["--arg", "x=zeros:4096:f32", "--arg", "y=zeros:4096:f32", "--arg", "z=zeros:4096:f32"],
     "address 0x3d0900 is beyond the UB buffer", "35:11"),
    ("tile_end_beyond_buffer",  # starts inside the 192 KiB UB, ends past it
     _VEC_ADD.replace("%c32768 = arith.constant 32768", "%c32768 = arith.constant 190464"),
     ["--arg", "x=zeros:4096:f32", "--arg", "y=zeros:4096:f32", "--arg", "z=zeros:4096:f32"],
     "exceeds the UB buffer", "35:11"),
]


@pytest.mark.parametrize("name, text, args, msg, where", STATIC, ids=[s[0] for s in STATIC])
def test_check_refuses_what_run_refuses(tmp_path, capsys, name, text, args, msg, where):
    f = tmp_path / f"{name}.pto"
    f.write_text(text)
    assert main(["check", str(f)]) == 1
    err = capsys.readouterr().err
    assert f"{f}:{where}: error:" in err and msg in err, err
    assert main(["run", str(f), *args, "-q"]) == 1
    err = capsys.readouterr().err
    assert f"{f}:{where}: error:" in err and msg in err, err


def test_constant_address_inside_the_buffer_still_runs(tmp_path, capsys):
    f = tmp_path / "k.pto"
    f.write_text(_VEC_ADD.replace("%c32768 = arith.constant 32768",
                                  "%c32768 = arith.constant 180224"))  # 176 KiB + 16 KiB = end
    assert main(["check", str(f)]) == 0
    assert main(["run", str(f), "-q", "--arg", "x=zeros:4096:f32", "--arg", "y=zeros:4096:f32",
                 "--arg", "z=zeros:4096:f32"]) == 0


# ---- user mistakes are diagnostics (exit 1), not internal errors (exit 3) ----------------------

@pytest.mark.parametrize("source, where, msg", [
    ("def f(x:\n    pass\n", ":1:6: error:", "SyntaxError: '(' was never closed"),
    ("import numpy as np\n\ndef f(x):\n    y = np.zeros(3)\n    y + np.zeros(4)\n", ":5:5: error:",
     "kernel f raised ValueError: operands could not be broadcast"),
    ("x = 1\nraise RuntimeError('no')\n\ndef f(x):\n    pass\n", ":2:1: error:",
     "raised RuntimeError: no"),
], ids=["syntax_error", "kernel_raises", "module_raises"])
def test_export_names_the_users_file_and_line(tmp_path, capsys, monkeypatch, source, where,
                                              msg):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "bad.py").write_text(source)
    assert main(["export", "bad.py:f", "--arg", "x=zeros:4:f32"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("bad.py" + where) and msg in err and "a bug in ptoisa" not in err, err


def test_export_keeps_internal_errors_for_ptoisa_itself(tmp_path, capsys, monkeypatch):
    # an exception raised inside ptoisa is still reported as ours (exit 3): here calling
    # None, in the exporter's own frame
    import ptoisa.exporter as exporter

    monkeypatch.setattr(exporter.Tracer, "module", None)
    (tmp_path / "ok.py").write_text("def f(x):\n    pass\n")
    assert main(["export", f"{tmp_path / 'ok.py'}:f", "--arg", "x=zeros:4:f32"]) == 3
    assert "a bug in ptoisa" in capsys.readouterr().err


@pytest.mark.parametrize("as_dir", [False, True])
def test_cycles_on_a_binary_file(tmp_path, capsys, as_dir):
    f = tmp_path / ("cycles.json" if as_dir else "pack.bin")
    f.write_bytes(bytes(range(128, 256)) * 4)
    assert main(["cycles", str(tmp_path if as_dir else f)]) == 1
    err = capsys.readouterr().err
    assert f"{f}: not JSON: not UTF-8 text" in err, err


@pytest.mark.parametrize("array, what", [
    (np.full((4, 8), "1.5"), "strings"),
    (np.full((4, 8), b"x"), "bytes"),
    (np.full((4, 8), 1 + 2j), "complex numbers"),
    (np.zeros((4, 8), [("a", np.float32)]), "records"),
])
def test_load_numpy_refuses_what_is_not_numbers(array, what):
    t = pto.Tile(pto.TileType.Vec, np.float32, 4, 8)
    with pytest.raises(PtoError, match=f"cannot load an array of {what}"):
        t.load_numpy(array)


def test_load_numpy_takes_ml_dtypes_floats():
    import ml_dtypes

    a = (np.arange(32, dtype=np.float32).reshape(4, 8) / 4).astype(ml_dtypes.bfloat16)
    t = pto.Tile(pto.TileType.Vec, np.float32, 4, 8).load_numpy(a)
    np.testing.assert_array_equal(t.numpy(), a.astype(np.float32))  # exact in both types


def test_load_numpy_object_array_of_text_is_a_ptoisa_error():
    t = pto.Tile(pto.TileType.Vec, np.float32, 4, 8)
    with pytest.raises(PtoError, match="cannot convert object data"):
        t.load_numpy(np.full((4, 8), "abc", dtype=object))


def _c2v_pair():
    from ptoisa import Direction, GlobalTensor, Tile, TPipe

    pipe = TPipe(0, Direction.DIR_C2V, 16 * 32 * 4, 8)

    def gm(a, rows, cols):
        return GlobalTensor(a, (1, 1, 1, rows, cols), (a.size, a.size, a.size, cols, 1))

    def cube(x, got):
        t = Tile("Mat", "f32", 16, 32)
        pto.TLOAD(t, gm(x, 16, 32))
        pto.TPUSH(pipe, t, Split="TILE_UP_DOWN")

    def vector(x, got):
        mine = got[pto.get_subblock_idx()]
        h = Tile("Vec", "f32", 8, 32)
        pto.TPOP(pipe, h, Split="TILE_UP_DOWN")
        pto.TFREE(pipe, Split="TILE_UP_DOWN")
        pto.TSTORE(gm(mine, 8, 32), h)

    return cube, vector


def test_launch_mixed_sanitize_and_cycles():
    cube, vector = _c2v_pair()
    x = np.arange(16 * 32, dtype=np.float32).reshape(16, 32)
    got = [np.zeros((8, 32), np.float32) for _ in range(2)]
    rep = pto.launch_mixed(cube, vector, x, got, target="a2a3", sanitize=True)
    assert not rep and rep.executed > 0  # a clean report of what it checked
    np.testing.assert_array_equal(np.concatenate(got), x)  # rows split up/down, as pushed
    got = [np.zeros((8, 32), np.float32) for _ in range(2)]
    timed = pto.launch_mixed(cube, vector, x, got, target="a2a3", cycles=True)
    assert timed.total > 0
    np.testing.assert_array_equal(np.concatenate(got), x)


def test_launch_mixed_sanitizer_finds_an_uninitialised_read():
    from ptoisa.sanitizer import SanitizerError

    pipe = pto.TPipe(0, pto.Direction.DIR_C2V, 16 * 32 * 4, 8)

    def cube(out):
        t = pto.Tile("Mat", "f32", 16, 32)  # never loaded
        pto.TPUSH(pipe, t, Split="TILE_UP_DOWN")

    def vector(out):
        h = pto.Tile("Vec", "f32", 8, 32)
        pto.TPOP(pipe, h, Split="TILE_UP_DOWN")
        pto.TFREE(pipe, Split="TILE_UP_DOWN")

    with pytest.raises(SanitizerError, match="uninit"):
        pto.launch_mixed(cube, vector, np.zeros(4, np.float32), target="a2a3", sanitize=True)


def test_example_pto_without_its_program_beside_it(tmp_path):
    import shutil
    import subprocess
    import sys

    shutil.copy(ROOT / "examples" / "vec_add.py", tmp_path)
    r = subprocess.run([sys.executable, str(tmp_path / "vec_add.py"), "--pto", "--blocks", "1"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2, r.stderr
    assert "--pto runs vec_add.pto, which is not beside this script" in r.stderr
    assert "Traceback" not in r.stderr


def test_trace_into_a_missing_folder_is_refused_before_the_run(tmp_path, capsys):
    out = tmp_path / "results"
    args = ["run", str(ROOT / "examples" / "vec_add.pto"), "-q", "--out", str(out),
            "--arg", "x=rand:4096:f32", "--arg", "y=rand:4096:f32", "--arg", "z=zeros:4096:f32"]
    assert main([*args, "--trace", str(tmp_path / "nodir" / "t.json")]) == 1
    assert "no folder" in capsys.readouterr().err and not out.exists()
    assert main([*args, "--trace", str(tmp_path / "t.json")]) == 0
    x, y, z = (np.load(out / f"{n}.npy") for n in "xyz")
    np.testing.assert_array_equal(z, x + y)
    assert (tmp_path / "t.json").is_file()


# ---- no rank outlives `ptoisa run --ranks N` (mpiexec runs in a process group of its own) ---

_FAKE_MPIEXEC = ("import subprocess, sys; p = subprocess.Popen(['sleep', '300']); "
                 "open(sys.argv[1], 'w').write(str(p.pid)); {end}")


def _gone(pid: int, within: float = 5.0) -> bool:
    import os
    import time

    t0 = time.monotonic()
    while time.monotonic() - t0 < within:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        try:  # (a zombie of ours still answers kill 0: reap it if it is a child)
            if os.waitpid(pid, os.WNOHANG)[0] == pid:
                return True
        except ChildProcessError:
            pass
        time.sleep(0.05)
    return False


def test_killing_ptoisa_stops_the_ranks(tmp_path):
    """SIGTERM to the process that started mpiexec (here a stand-in that starts one 'rank')
    stops the whole group: the rank does not keep running as an orphan."""
    import signal
    import subprocess
    import sys
    import time

    pid_file = tmp_path / "rank.pid"
    script = ("import sys\nfrom ptoisa.cli.ranks import run_group\n"
              f"sys.exit(run_group([sys.executable, '-c', {_FAKE_MPIEXEC.format(end='p.wait()')!r}"
              f", {str(pid_file)!r}], grace=1))\n")
    launcher = subprocess.Popen([sys.executable, "-c", script])
    t0 = time.monotonic()
    while not (pid_file.exists() and pid_file.read_text()) and time.monotonic() - t0 < 60:
        time.sleep(0.05)
    rank = int(pid_file.read_text())
    launcher.send_signal(signal.SIGTERM)
    assert launcher.wait(30) == 128 + signal.SIGTERM
    assert _gone(rank), f"rank {rank} still runs"


def test_ranks_left_behind_by_mpiexec_are_stopped(tmp_path):
    import sys

    from ptoisa.cli.ranks import run_group

    pid_file = tmp_path / "rank.pid"
    assert run_group([sys.executable, "-c", _FAKE_MPIEXEC.format(end="sys.exit(3)"),
                      str(pid_file)], grace=1) == 3
    assert _gone(int(pid_file.read_text()))


def test_export_of_a_module_path(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    (tmp_path / "pk").mkdir()
    (tmp_path / "pk" / "badmod.py").write_text("def f(x:\n")
    assert main(["export", "pk.badmod:f"]) == 1
    assert capsys.readouterr().err.startswith("pk/badmod.py:1:6: error: SyntaxError:")
    assert main(["export", "nosuch_pkg.mod:f"]) == 1
    assert "cannot import nosuch_pkg.mod: no module named 'nosuch_pkg'" in capsys.readouterr().err

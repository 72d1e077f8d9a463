"""What a new user trips over: ``check`` refuses (located) what ``run`` would refuse
statically, and user mistakes are diagnostics (exit 1), never "a bug in ptoisa" (exit 3)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ptoisa.cli import main

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

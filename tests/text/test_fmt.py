"""``ptoisa fmt``: comments survive (issue 9 item 16); ``--form ssa|asm`` says which ops it
left in DPS form (items 9, 11)."""

from __future__ import annotations

from pathlib import Path

import pytest
from text_corpus import FILES, comment_lines

from ptoisa.cli import main
from ptoisa.interp.op_names import has_ssa_form
from ptoisa.text import parse, print_module

EXAMPLES = sorted((Path(__file__).resolve().parents[2] / "examples").glob("*.pto"))


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.name for p in EXAMPLES])
def test_fmt_in_place_keeps_every_comment_of_the_examples(path, tmp_path, capsys):
    f = tmp_path / path.name
    f.write_text(path.read_text())
    assert main(["fmt", str(f), "-o", str(f)]) == 0
    out = f.read_text()
    assert comment_lines(out) == comment_lines(path.read_text())
    # the command-line header stays the file's header
    head = [ln for ln in path.read_text().splitlines() if ln.startswith("//")][:3]
    assert out.splitlines()[: len(head)] == head
    assert main(["fmt", str(f), "-o", str(f)]) == 0
    assert f.read_text() == out  # a fixed point


T = "!pto.tile_buf<vec, 16x16xf32>"
TK = ("!pto.tile_buf<loc=vec, dtype=f32, rows=16, cols=16, v_row=16, v_col=16, "
      "blayout=row_major, slayout=none_box, fractal=512, pad=0>")

SOURCE = f"""// RUN: ptoisa check %s
// header, second line

module {{
  // the kernel
  func.func @f() {{
    %c0 = arith.constant 0 : index  // end of line
    // before the tile

    // a second paragraph
    %0 = pto.alloc_tile : {T}
    pto.tabs ins(%0 : {T})
      // between continuation lines
      outs(%0 : {T})
    return
    // end of the body
  }}
}}
// CHECK: tail
"""

EXPECTED = f"""// RUN: ptoisa check %s
// header, second line

module {{
  // the kernel
  func.func @f() {{
    %c0 = arith.constant 0 : index  // end of line
    // before the tile

    // a second paragraph
    %0 = pto.alloc_tile : {TK}
    // between continuation lines
    pto.tabs ins(%0 : {TK}) outs(%0 : {TK})
    func.return
    // end of the body
  }}
}}
// CHECK: tail
"""


def test_comments_stay_where_they_were():
    assert print_module(parse(SOURCE), "dps") == EXPECTED
    assert print_module(parse(EXPECTED), "dps") == EXPECTED


def test_comments_of_a_folded_alloc_go_with_its_writer():
    src = (f"module {{\n  func.func @f() {{\n    // the source\n    %0 = pto.alloc_tile : {T}\n"
           f"    // the result\n    %1 = pto.alloc_tile : {T}  // fresh\n"
           f"    pto.tabs ins(%0 : {T}) outs(%1 : {T})\n    return\n  }}\n}}\n")
    out = print_module(parse(src), "ssa", has_ssa_form)
    lines = [ln.strip() for ln in out.splitlines()]
    k = next(i for i, ln in enumerate(lines) if ln.startswith("%1 = pto.tabs %0"))
    assert "pto.alloc_tile" in lines[k - 3] and "%1 = pto.alloc_tile" not in out
    assert lines[k - 2: k] == ["// the result", "// fresh"]
    assert lines[k - 4] == "// the source"


def test_fmt_notes_ops_left_in_dps_form(capsys):
    path = next((f for f in FILES if f.name == "vadd.pto"), None)
    if path is None:
        pytest.skip("the PTOAS corpus is not beside the checkout (set PTOISA_SHARED)")
    assert main(["fmt", str(path), "--form", "asm"]) == 0
    captured = capsys.readouterr()
    assert "= tadd %5, %6 :" in captured.out
    notes = captured.err.splitlines()
    assert notes == [f"{path}:18:5: note: pto.tstore printed in DPS form: it has no ASM form"]
    assert main(["fmt", str(path)]) == 0  # dps: nothing to say
    assert capsys.readouterr().err == ""


def test_fmt_dps_notes_ssa_ops_it_cannot_convert(tmp_path, capsys):
    t = "!pto.tile<16x16xf32>"
    f = tmp_path / "s.pto"
    f.write_text(f"func.func @f(%a: {t}) {{\n  %b = pto.texp %a : {t} -> {t}\n  return\n}}\n")
    assert main(["fmt", str(f)]) == 0
    captured = capsys.readouterr()
    assert "%b = pto.texp %a : (" in captured.out
    assert captured.err.splitlines() == [
        f"{f}:2:8: note: pto.texp printed in SSA form: it returns {t}, not a "
        "!pto.tile_buf (DPS writes into a buffer)"]

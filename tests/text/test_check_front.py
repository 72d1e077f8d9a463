"""``ptoisa check`` rejects what is not a program (issue 9 item 8) and diagnostics show an
excerpt of a long line, not the line (item 12)."""

from __future__ import annotations

import time

import pytest

from ptoisa.cli import main
from ptoisa.errors import EXCERPT_WIDTH, ParseError, SourceLoc, VerifyError, excerpt
from ptoisa.interp import Program
from ptoisa.text import parse

T = "!pto.tile_buf<vec, 16x16xf32>"


def program(body: str) -> str:
    return ("module {\n  func.func @f() {\n    %0 = pto.alloc_tile : " + T + "\n"
            + body + "    return\n  }\n}\n")


def check(tmp_path, capsys, text: str) -> tuple[int, list[str]]:
    f = tmp_path / "p.pto"
    f.write_text(text)
    rc = main(["check", str(f)])
    return rc, capsys.readouterr().err.splitlines()


@pytest.mark.parametrize("text, where, message", [
    ("hello world\n", (1, 1), "expected a module at the top level, found 'hello'"),
    ("", (1, 1), "no module"),
    ("module {\n  %c = arith.constant 1 : index\n}\n", (2, 8),
     "expected 'func.func' at the top level, found 'arith.constant'"),
    (program(f"    pto.trsqrtt ins(%0 : {T}) outs(%0 : {T})\n"), (4, 5),
     "unknown operation 'pto.trsqrtt' (did you mean 'pto.trsqrt'?)"),
    (program("    %1 = arith.mulii %0, %0 : index\n"), (4, 10),
     "unknown operation 'arith.mulii' (did you mean 'arith.muli'?)"),
    (program("    scf.yeild\n"), (4, 5), "unknown operation 'scf.yeild'"),
    (program("    memref.allocc\n"), (4, 5), "unknown operation 'memref.allocc'"),
    (program("    func.retrun\n"), (4, 5), "unknown operation 'func.retrun'"),
    # a PTO-AS mnemonic is named as written
    (program(f"    %1 = tadds_typo %0 : {T}\n"), (4, 10), "unknown operation 'tadds_typo'"),
    # a stray token after outs(...)
    (program(f"    pto.tabs ins(%0 : {T}) outs(%0 : {T}) garbage\n"), (4, 95),
     "unexpected 'garbage' in 'pto.tabs'"),
    (program(f"    pto.tabs junk ins(%0 : {T}) outs(%0 : {T})\n"), (4, 14),
     "unexpected 'junk' in 'pto.tabs'"),
    (program("    %c = arith.constant 1 : index junk\n"), (4, 35),
     "unexpected 'junk' in 'arith.constant'"),
    (program("    %c = arith.constant 1 : index\n    %d = arith.addi %c, %c junk : index\n"),
     (5, 28), "unexpected 'junk' in 'arith.addi'"),
    (program("    return junk\n"), (4, 12), "unexpected 'junk' in 'func.return'"),
])
def test_check_rejects_what_is_not_a_program(tmp_path, capsys, text, where, message):
    rc, err = check(tmp_path, capsys, text)
    assert rc == 1
    assert err[0].startswith(f"{tmp_path / 'p.pto'}:{where[0]}:{where[1]}: error: "), err
    assert message in err[0]
    if text:
        assert err[2] == " " * (where[1] - 1) + "^"


def test_known_ops_still_check(tmp_path, capsys):
    # a real op of a checked dialect that ptoisa does not run is fine at check ...
    text = program("    %a = pto.declare_eventid_array -> !pto.eventid_array<4>\n")
    rc, err = check(tmp_path, capsys, text)
    assert rc == 0, err
    # ... and one of another dialect is not checked by name (run says it cannot execute it)
    math = "    %y = arith.constant 1.0 : f32\n    %x = math.absf %y : f32\n"
    rc, err = check(tmp_path, capsys, program(math))
    assert rc == 0, err
    # a module without 'module {' around its functions is a program (MLIR's implicit module)
    rc, err = check(tmp_path, capsys, "func.func @g() {\n  return\n}\n")
    assert rc == 0, err


def test_eager_load_rejects_unknown_op():
    mod = parse(program(f"    pto.taddd ins(%0, %0 : {T}, {T}) outs(%0 : {T})\n"), "k.pto")
    with pytest.raises(VerifyError, match=r"unknown operation 'pto.taddd' \(did you mean "
                                          r"'pto.tadd'\?\)") as e:
        Program(mod, "cpu").check()
    assert (e.value.loc.line, e.value.loc.col) == (4, 5)


# ---- item 12: a diagnostic shows at most ~EXCERPT_WIDTH characters of the line -------------

def test_excerpt_of_a_long_line():
    line = "".join(chr(ord("a") + k % 26) for k in range(1000))
    text, caret = excerpt(line, 500)
    assert text.startswith("...") and text.endswith("...")
    assert len(text) == EXCERPT_WIDTH + 6
    assert text[caret] == line[500]
    assert excerpt("short", 2) == ("short", 2)
    head, caret = excerpt(line, 3)
    assert head[caret] == line[3] and not head.startswith("...") and head.endswith("...")
    tail, caret = excerpt(line, 998)
    assert tail[caret] == line[998] and tail.startswith("...") and not tail.endswith("...")
    # a location built by hand with the whole line renders the excerpt as well
    e = ParseError("bad", loc=SourceLoc("k.pto", 1, 501, line))
    shown, marker = str(e).splitlines()[1:]
    assert len(shown) <= EXCERPT_WIDTH + 6 and shown[marker.index("^")] == line[500]


def test_long_one_line_file(tmp_path, capsys):
    """An 800 kB one-line program: the error shows an excerpt, quickly (every op records its
    location, which used to copy the whole line each time)."""
    n = 20_000
    body = " ".join(f"%c{k} = arith.constant {k} : index" for k in range(n))
    text = "module { func.func @f() { " + body + " pto.bogus %c0 } }"
    f = tmp_path / "long.pto"
    f.write_text(text)
    # process CPU time: a shared, loaded machine stretches wall time 2-3x (the quadratic copy
    # this guards against took minutes)
    t0 = time.process_time()
    with pytest.raises(VerifyError) as e:
        Program(parse(text, str(f)), "cpu").check()
    assert time.process_time() - t0 < 5
    col = text.index("pto.bogus") + 1
    assert (e.value.loc.line, e.value.loc.col) == (1, col)
    lines = str(e.value).splitlines()
    assert lines[0] == f"{f}:1:{col}: error: unknown operation 'pto.bogus'"
    assert len(lines[1]) <= EXCERPT_WIDTH + 6
    assert lines[1][lines[2].index("^"):].startswith("pto.bogus %c0 } }")
    # a lexer error in the same file
    bad = text.replace("pto.bogus", "pto.tabs $")
    f.write_text(bad)
    assert main(["check", str(f)]) == 1
    err = capsys.readouterr().err.splitlines()
    assert err[0].endswith("error: unexpected character '$'") and len(err[1]) <= EXCERPT_WIDTH + 6
    assert err[1][err[2].index("^")] == "$"

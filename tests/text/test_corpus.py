"""Every corpus file parses and round-trips through the printer in all three forms; what
``fmt --form dps|ssa|asm`` prints checks exactly as the original does (issue 9 item 9)."""

from __future__ import annotations

import pytest
from text_corpus import FILES, SKIP_REASON, comment_lines, ids

from ptoisa.errors import PtoError
from ptoisa.interp import Program
from ptoisa.interp.op_names import has_ssa_form
from ptoisa.ir import first_difference, structurally_equal
from ptoisa.text import parse
from ptoisa.text import print_module as _print_module

pytestmark = pytest.mark.skipif(not FILES, reason=SKIP_REASON)


def print_module(mod, form):
    """As ``ptoisa fmt`` prints: only ops whose SSA form check accepts change form."""
    return _print_module(mod, form, has_ssa_form)


def check_message(mod) -> str | None:
    try:
        Program(mod, "a2a3").check()
    except PtoError as e:
        return e.message
    return None


@pytest.mark.parametrize("path", FILES, ids=ids(FILES))
def test_corpus_round_trip(path):
    text = path.read_text()
    mod = parse(text, str(path))
    # DPS printing keeps every op in its written form: structurally identical program.
    dps = print_module(mod, "dps")
    assert comment_lines(dps) == comment_lines(text), "dps print lost comments"
    again = parse(dps, str(path) + ".dps")
    assert structurally_equal(mod, again), first_difference(mod, again)
    assert print_module(again, "dps") == dps
    for form in ("ssa", "asm"):
        out = print_module(mod, form)
        assert comment_lines(out) == comment_lines(text), f"{form} print lost comments"
        back = parse(out, f"{path}.{form}")
        assert print_module(back, form) == out, f"{form} print is not a fixed point"
        # SSA -> DPS -> SSA is exact
        via_dps = parse(print_module(back, "dps"), f"{path}.{form}.dps")
        assert print_module(via_dps, form) == out
        assert len(list(via_dps.walk())) >= len(list(back.walk()))
        again = parse(print_module(back, form), f"{path}.{form}.again")
        assert structurally_equal(back, again), first_difference(back, again)
    # fmt prints only what check accepts: every form checks as the original does (the same
    # error for the files the compiler rejects; the dps print is the same IR, asserted above)
    want = check_message(mod)
    for form in ("ssa", "asm"):
        assert check_message(parse(print_module(mod, form), f"{path}.{form}")) == want, form


def test_fmt_keeps_inout_ops_in_dps_form():
    """taxpy's dst is read and written: its SSA spelling would drop the value it reads, and
    check rejects it naming the DPS spelling to use."""
    path = next(f for f in FILES if f.name == "taxpy_emitc.pto")
    mod = parse(path.read_text(), str(path))
    kept: list = []
    ssa = _print_module(mod, "ssa", has_ssa_form, kept)
    assert "pto.taxpy ins(%src, %cst" in ssa and "outs(%dst" in ssa
    assert [(op.name, why) for op, why in kept] == [("pto.taxpy", "has no SSA form")]
    forced = parse(_print_module(mod, "ssa"), "forced.pto")  # every op converted
    with pytest.raises(PtoError) as e:
        Program(forced, "a2a3").check()
    assert e.value.message == (
        "dst is read and written (inout), which the SSA form (operands -> results) cannot "
        "express: write it in DPS form, 'pto.taxpy ins(%src0, %scalar : ...) outs(%dst : ...)'")


def test_corpus_is_complete():
    assert len(FILES) >= 180


def test_ssa_form_converts_write_once_buffers():
    path = next(f for f in FILES if f.name == "vadd.pto")
    mod = parse(path.read_text(), str(path))
    ssa = print_module(mod, "ssa")
    assert "pto.alloc_tile" not in ssa
    assert "%7 = pto.tadd %5, %6 : (" in ssa
    assert "pto.tstore ins(%7" in ssa  # no result: stays DPS
    asm = print_module(mod, "asm")
    assert "%7 = tadd %5, %6 : (" in asm
    back = parse(asm)
    tadd = next(op for op in back.walk() if op.name == "pto.tadd")
    assert tadd.form == "ssa" and [v.name for v in tadd.inputs] == ["5", "6"]
    dps = print_module(back, "dps")
    assert dps.count("pto.alloc_tile") == 3


def test_dps_op_fields():
    path = next(f for f in FILES if f.name == "vadd.pto")
    mod = parse(path.read_text(), str(path))
    tadd = next(op for op in mod.walk() if op.name == "pto.tadd")
    assert tadd.form == "dps"
    assert [v.name for v in tadd.inputs] == ["5", "6"]
    assert [v.name for v in tadd.outs] == ["7"]
    t = tadd.outs[0].type
    assert (t.loc, str(t.dtype), t.rows, t.cols, t.v_row, t.v_col) == ("vec", "f32", 32, 32, 32, 32)
    assert (t.blayout, t.slayout, t.fractal, t.pad, t.compact) == (
        "row_major",
        "none_box",
        512,
        0,
        None,
    )
    # interned: every spelling of the same tile_buf type is one object
    types = {id(v.type) for op in mod.walk() for v in op.operands if v.type == t}
    assert len(types) == 1


def test_invalid_named_files_parse():
    """Files the compiler rejects (names with 'invalid', CHECK: error) are well-formed text."""
    rejected = [f for f in FILES if "invalid" in f.name or "CHECK: error" in f.read_text()]
    assert rejected
    for f in rejected:
        parse(f.read_text(), str(f))

"""Every corpus file parses and round-trips through the printer in all three forms."""

from __future__ import annotations

import pytest
from text_corpus import FILES, SKIP_REASON, ids

from ptoisa.ir import first_difference, structurally_equal
from ptoisa.text import parse, print_module

pytestmark = pytest.mark.skipif(not FILES, reason=SKIP_REASON)


@pytest.mark.parametrize("path", FILES, ids=ids(FILES))
def test_corpus_round_trip(path):
    text = path.read_text()
    mod = parse(text, str(path))
    # DPS printing keeps every op in its written form: structurally identical program.
    dps = print_module(mod, "dps")
    again = parse(dps, str(path) + ".dps")
    assert structurally_equal(mod, again), first_difference(mod, again)
    assert print_module(again, "dps") == dps
    for form in ("ssa", "asm"):
        out = print_module(mod, form)
        back = parse(out, f"{path}.{form}")
        assert print_module(back, form) == out, f"{form} print is not a fixed point"
        # SSA -> DPS -> SSA is exact
        via_dps = parse(print_module(back, "dps"), f"{path}.{form}.dps")
        assert print_module(via_dps, form) == out
        assert len(list(via_dps.walk())) >= len(list(back.walk()))


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
    assert tadd.form == "ssa" and [v.name for v in tadd.ins] == ["5", "6"]
    dps = print_module(back, "dps")
    assert dps.count("pto.alloc_tile") == 3


def test_dps_op_fields():
    path = next(f for f in FILES if f.name == "vadd.pto")
    mod = parse(path.read_text(), str(path))
    tadd = next(op for op in mod.walk() if op.name == "pto.tadd")
    assert tadd.form == "dps"
    assert [v.name for v in tadd.ins] == ["5", "6"]
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

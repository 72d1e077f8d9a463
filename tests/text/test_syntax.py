"""Hand-written syntax cases: forms, types, attributes, errors with locations."""

from __future__ import annotations

import pytest

from ptoisa.errors import ParseError, VerifyError
from ptoisa.ir import (
    DialectAttr,
    IntegerAttr,
    PartitionTensorViewType,
    TensorViewType,
    TileBufType,
    structurally_equal,
    verify_ssa,
)
from ptoisa.text import asm_to_ir_name, ir_to_asm_name, parse, print_module

TB = (
    "!pto.tile_buf<loc=vec, dtype=f32, rows=16, cols=16, v_row=16, v_col=16, "
    "blayout=row_major, slayout=none_box, fractal=512, pad=0>"
)


def wrap(body: str, args: str = "") -> str:
    return f"module {{\n  func.func @k({args}) {{\n{body}\n    return\n  }}\n}}\n"


def test_compact_and_keyed_tile_buf_are_equal():
    a = parse(wrap(f"    %t = pto.alloc_tile : {TB}"))
    b = parse(wrap("    %t = pto.alloc_tile : !pto.tile_buf<vec, 16x16xf32>"))
    assert structurally_equal(a, b)
    c = parse(
        wrap(
            "    %t = pto.alloc_tile : !pto.tile_buf<acc, 16x32xf32, valid=?x?, "
            "blayout=col_major, fractal=1024, pad=1, compact=2>"
        )
    )
    t = next(c.walk()).regions[0].block.ops[0].results[0].type
    assert t == TileBufType("acc", t.dtype, 16, 32, None, None, "col_major", "none_box", 1024, 1, 2)
    assert "compact=2" in print_module(c)


def test_view_types_and_enum_attrs():
    text = wrap(
        "    %c0 = arith.constant 0 : index\n"
        "    %tv = pto.make_tensor_view %p, shape = [%c0, %c0], strides = [%c0, %c0] "
        "{layout = #pto.layout<dn>} : !pto.tensor_view<?x?xf32>\n"
        "    %pv = pto.partition_view %tv, offsets = [%c0, %c0], sizes = [%c0, %c0] : "
        "!pto.tensor_view<?x?xf32> -> !pto.partition_tensor_view<16x16xf32>\n"
        "    pto.set_flag[<PIPE_MTE2>, <PIPE_V>, <EVENT_ID0>]\n"
        f"    %t = pto.alloc_tile : {TB}\n"
        f"    pto.tcvt ins(%t {{rmode = #pto<round_mode RINT>}} : {TB}) outs(%t : {TB})\n",
        "%p: !pto.ptr<f32>",
    )
    mod = parse(text)
    ops = list(mod.walk())
    tv = next(o for o in ops if o.name == "pto.make_tensor_view")
    assert tv.results[0].type == TensorViewType((None, None), tv.results[0].type.dtype)
    assert tv.attr("layout") == DialectAttr("pto.layout", "dn")
    pv = next(o for o in ops if o.name == "pto.partition_view")
    assert isinstance(pv.results[0].type, PartitionTensorViewType)
    assert pv.results[0].type.shape == (16, 16)
    flag = next(o for o in ops if o.name == "pto.set_flag")
    assert [a.value for a in flag.literals] == ["PIPE_MTE2", "PIPE_V", "EVENT_ID0"]
    cvt = next(o for o in ops if o.name == "pto.tcvt")
    assert cvt.form == "dps" and cvt.attr_place == "ins"
    rmode = cvt.attr("rmode")
    assert (rmode.mnemonic, rmode.value) == ("round_mode", "RINT")
    assert "ins(%t {rmode = #pto<round_mode RINT>} :" in print_module(mod)


def test_ssa_and_generic_forms():
    text = wrap(
        f"    %a = pto.alloc_tile : {TB}\n"
        f"    %b = pto.tadd %a, %a : ({TB}, {TB}) -> {TB}\n"
        f'    "pto.tmov"(%a, %b) {{x = 1 : i32}} : ({TB}, {TB}) -> ()\n'
    )
    mod = parse(text)
    ops = list(mod.walk())
    tadd = next(o for o in ops if o.name == "pto.tadd")
    assert tadd.form == "ssa" and len(tadd.inputs) == 2 and tadd.results[0].type.rows == 16
    tmov = next(o for o in ops if o.name == "pto.tmov")
    assert tmov.form == "generic" and tmov.attr("x") == IntegerAttr(1, tmov.attr("x").type)
    dps = print_module(mod, "dps")
    assert f"%b = pto.alloc_tile : {TB}" in dps and "outs(%b" in dps
    assert structurally_equal(parse(print_module(mod, "ssa")), mod)


def test_control_flow():
    text = wrap(
        "    %c0 = arith.constant 0 : index\n"
        "    %c4 = arith.constant 4 : index\n"
        "    %c1 = arith.constant 1 : index\n"
        "    %s = scf.for %i = %c0 to %c4 step %c1 iter_args(%acc = %c0) -> (index) {\n"
        "      %n = arith.addi %acc, %i : index\n"
        "      %lt = arith.cmpi slt, %n, %c4 : index\n"
        "      %r = scf.if %lt -> (index) {\n"
        "        scf.yield %n : index\n"
        "      } else {\n"
        "        scf.yield %c0 : index\n"
        "      }\n"
        "      scf.yield %r : index\n"
        "    }\n"
    )
    mod = parse(text)
    loop = next(o for o in mod.walk() if o.name == "scf.for")
    assert [a.name for a in loop.regions[0].block.args] == ["i", "acc"]
    cmpi = next(o for o in mod.walk() if o.name == "arith.cmpi")
    assert str(cmpi.results[0].type) == "i1"
    assert structurally_equal(parse(print_module(mod)), mod)


def test_asm_statements():
    src = (
        "%dst = tadd %src0, %src1 : !pto.tile<...> -> !pto.tile<...>\n"
        "tstore.fp %src, %fp, %sv_out[%c0, %c0]\n"
        "%d2 = trowsum %src : !pto.tile<16x16xf32> -> !pto.tile<16x1xf32>\n"
    )
    mod = parse(src, verify=False)
    names = [op.name for op in mod.ops]
    assert names == ["pto.tadd", "pto.tstore_fp", "pto.trowsum"]
    assert mod.ops[2].form == "ssa"
    with pytest.raises(VerifyError, match="undefined value '%src0'"):
        verify_ssa(mod)
    out = print_module(mod, "asm")
    assert "tstore.fp %src, %fp, %sv_out[%c0, %c0]" in out
    assert structurally_equal(parse(out, verify=False), mod)
    assert asm_to_ir_name("tstore.fp") == "pto.tstore_fp"
    assert ir_to_asm_name("pto.tinsert_fp") == "tinsert.fp"
    assert asm_to_ir_name(ir_to_asm_name("pto.tmov.fp")) == "pto.tmov.fp"


# ------------------------------------------------------------------ errors


def error_at(text: str, exc: type[Exception] = ParseError, **kw) -> tuple[int, int, str]:
    with pytest.raises(exc) as info:
        parse(text, "t.pto", **kw)
    err = info.value
    assert err.loc is not None and err.loc.file == "t.pto"
    rendered = str(err)
    assert rendered.startswith(f"t.pto:{err.loc.line}:{err.loc.col}: error: ")
    assert rendered.splitlines()[-1].strip() == "^"
    return err.loc.line, err.loc.col, err.message


def test_syntax_error_location():
    text = wrap(
        f"    %t = pto.alloc_tile : {TB}\n    pto.tadd ins(%t, %t : {TB}, {TB}) outs(%t : )"
    )
    line, col, msg = error_at(text)
    assert line == 4 and "type" in msg


def test_bad_tile_buf_key():
    line, _, msg = error_at(
        wrap("    %t = pto.alloc_tile : !pto.tile_buf<loc=vec, dtype=f32, rows=x, cols=4>")
    )
    assert line == 3 and "rows" in msg


def test_unknown_op_hook():
    text = wrap(f"    %t = pto.alloc_tile : {TB}\n    pto.tfoo ins(%t : {TB}) outs(%t : {TB})")
    parse(text)  # generic by default
    line, col, msg = error_at(text, known_ops=lambda n: n != "pto.tfoo")
    assert (line, col) == (4, 5) and msg == "unknown operation 'pto.tfoo'"


def test_undefined_value():
    _, _, msg = error_at(
        wrap(f"    pto.tadd ins(%x, %x : {TB}, {TB}) outs(%x : {TB})"), VerifyError
    )
    assert "undefined value '%x'" in msg


def test_redefinition():
    text = wrap(f"    %t = pto.alloc_tile : {TB}\n    %t = pto.alloc_tile : {TB}")
    line, _, msg = error_at(text, VerifyError)
    assert line == 4 and "redefinition" in msg


def test_value_from_nested_region_not_visible():
    text = wrap(
        "    scf.if %c {\n"
        f"      %t = pto.alloc_tile : {TB}\n"
        "    }\n"
        f"    pto.tprint ins(%t : {TB})",
        "%c: i1",
    )
    line, _, msg = error_at(text, VerifyError)
    assert line == 6 and "not visible" in msg


def test_type_mismatch_at_use():
    other = TB.replace("rows=16", "rows=32")
    text = wrap(f"    %t = pto.alloc_tile : {TB}\n    pto.tprint ins(%t : {other})")
    line, _, msg = error_at(text, VerifyError)
    assert line == 4 and "type mismatch" in msg


def _subset_then(use_type: str, second: str = "") -> str:
    big = TB.replace("cols=16, v_row=16, v_col=16", "cols=48, v_row=16, v_col=48").replace(
        "f32", "f16")
    return wrap(
        "    %c0 = arith.constant 0 : index\n"
        "    %c32 = arith.constant 32 : index\n"
        f"    %b = pto.alloc_tile : {big}\n"
        f"    %d = pto.alloc_tile : {TB.replace('f32', 'f16')}\n"
        f"    %s = pto.subset %b[%c0, %c32] sizes [16, 16] : {big}\n"
        f"    pto.tmov ins(%s : {use_type}) outs(%d : {TB.replace('f32', 'f16')})" + second)


def test_subset_short_form_takes_its_type_from_its_use() -> None:
    """The short form writes only the source's type; the result's type is the one its uses
    write (before, the static rules saw no source type and refused an f16 -> f16 TMOV)."""
    from ptoisa.interp import Compiler

    f16 = TB.replace("f32", "f16")
    Compiler(parse(_subset_then(f16)), "a2a3")  # no error
    second = f"\n    pto.tprint ins(%s : {TB})"  # a second use that disagrees
    line, _, msg = error_at(_subset_then(f16, second), VerifyError)
    assert line == 9 and "type mismatch" in msg


@pytest.mark.parametrize(
    "text",
    [
        "module {",
        "module { func.func @f( }",
        'module { %x = "unterminated }',
        "module { func.func @f() { %a = arith.constant 1 : } }",
        "module { } }",
        "%",
        "module { func.func @f() { %t = pto.alloc_tile : "
        "!pto.tile_buf<loc=vec, dtype=f32, rows=1, cols=1, slayout=a]b,c=d> } }",
        "module { func.func @f() { pto.tadd ins(%a : !pto.tile_buf<vec, 16x16xf32) } }",
    ],
)
def test_malformed_inputs_raise_parse_error(text):
    with pytest.raises(ParseError):
        parse(text, verify=False)


def test_integer_literals():
    mod = parse(wrap("    %a = arith.constant 007 : i32\n    %b = arith.constant -0x10 : i32"))
    vals = [op.literals[0] for op in mod.walk() if op.name == "arith.constant"]
    assert [v.value for v in vals] == [7, -16]
    assert structurally_equal(parse(print_module(mod)), mod)


def test_mlir_only_refuses_a_pto_as_program_at_its_first_top_level_statement():
    """PTOAS reads MLIR: a PTO-AS program's ``func @f(...)`` is no op MLIR knows (its default
    dialect at the top level is builtin), refused there in MLIR's words, as PTOAS's rule."""
    text = "// a PTO-AS program\nfunc @f(%x: !pto.tile<8x8xf32>) {\n  %y = tadd %x, %x\n}\n"
    parse(text, verify=False)  # ptoisa itself reads PTO-AS
    with pytest.raises(ParseError) as ei:
        parse(text, "p.pto", verify=False, mlir_only=True)
    e = ei.value
    assert str(e).startswith("p.pto:2:1: error: custom op 'func' is unknown (tried "
                             "'builtin.func' as well): a PTO-AS statement, not MLIR (PTOAS: "
                             "Error: Failed to parse MLIR.)"), str(e)
    assert e.ptoas_rule and e.ptoas_source == "tools/ptoas/driver.cpp:parseTextualModule"
    with pytest.raises(ParseError, match="Dialect 'tstore' not found for custom op"):
        parse("tstore.fp %a, %b\n", verify=False, mlir_only=True)
    # MLIR text is read as before (ops inside regions are not judged by their spelling)
    mlir = "module {\n  func.func @f() {\n    return\n  }\n}\n"
    assert parse(mlir, mlir_only=True).functions()[0].sym_name == "f"

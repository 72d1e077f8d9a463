"""Spellings of the August PTOAS tree: ``cf`` blocks and branches in function bodies, and the
other forms the corpus writes; each is checked, printed back and run."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from ptoisa import load
from ptoisa.errors import VerifyError
from ptoisa.text import parse, print_module

SHARED = Path(os.environ.get("PTOISA_SHARED", Path(__file__).resolve().parents[2].parent
                             / "shared"))
LIT = SHARED / "corpus" / "ptoas-main" / "test" / "lit" / "pto"
needs_lit = pytest.mark.skipif(not LIT.is_dir(), reason=f"corpus not found at {LIT}")

# |x - y| + 1 through a diamond, and a loop of blocks: sum of 0..n-1
CFG = """module {
  func.func private @absdiff(%x: i32, %y: i32) -> i32 {
    %lt = arith.cmpi slt, %x, %y : i32
    cf.cond_br %lt, ^less, ^more
  ^less:
    %a = arith.subi %y, %x : i32
    cf.br ^join(%a : i32)
  ^more:
    %b = arith.subi %x, %y : i32
    cf.br ^join(%b : i32)
  ^join(%d: i32):
    %one = arith.constant 1 : i32
    %r = arith.addi %d, %one : i32
    return %r : i32
  }
  func.func private @sum(%n: i32) -> i32 {
    %z = arith.constant 0 : i32
    cf.br ^head(%z, %z : i32, i32)
  ^head(%i: i32, %acc: i32):
    %go = arith.cmpi slt, %i, %n : i32
    cf.cond_br %go, ^body, ^done(%acc : i32)
  ^body:
    %one = arith.constant 1 : i32
    %acc2 = arith.addi %acc, %i : i32
    %i2 = arith.addi %i, %one : i32
    cf.br ^head(%i2, %acc2 : i32, i32)
  ^done(%s: i32):
    return %s : i32
  }
}
"""


@pytest.mark.parametrize("x, y", [(3, 10), (10, 3), (-5, -5)])
def test_cf_diamond(x, y):
    assert load(CFG).run("absdiff", x, y) == (abs(x - y) + 1,)


@pytest.mark.parametrize("n", [0, 1, 10])
def test_cf_loop_of_blocks(n):
    assert load(CFG).run("sum", n) == (sum(range(n)),)


def test_cf_prints_back_the_same_program():
    text = print_module(parse(CFG))
    assert "cf.br ^join(%a : i32)" in text and "cf.cond_br %lt, ^less, ^more" in text
    assert print_module(parse(text)) == text


@pytest.mark.parametrize("body, match", [
    ("cf.br ^nowhere\n  ^b:\n    return", "no block has that label"),
    ("cf.br ^b(%x : i32)\n  ^b:\n    return", r"passes 1 value\(s\) to \^b"),
    ("cf.cond_br %c, ^b, ^d\n  ^b:\n    %v = arith.addi %x, %x : i32\n    cf.br ^d\n"
     "  ^d:\n    %w = arith.addi %v, %v : i32\n    return", "not visible here"),
    ("cf.br ^b\n  ^b:\n    %v = arith.addi %x, %x : i32", "does not end with a terminator"),
    ("scf.if %c {\n      cf.br ^b\n    }\n    return\n  ^b:\n    return", "cf.br"),
])
def test_cf_errors_are_located(body, match):
    text = ("module {\n  func.func @f(%c: i1, %x: i32) {\n    " + body + "\n  }\n}\n")
    with pytest.raises(VerifyError, match=match) as e:
        load(text, filename="f.pto")
    assert e.value.loc is not None


@needs_lit
def test_corpus_cfg_files_run():
    """debug_name_hints_cfg_emitc.pto: (lhs + rhs or lhs - rhs, + rhs) * 2."""
    prog = load(LIT / "debug_name_hints_cfg_emitc.pto")
    assert prog.run("name_hints_cfg_helper", 1, 5, 3) == (22,)
    assert prog.run("name_hints_cfg_helper", 0, 5, 3) == (10,)
    prog.run("name_hints_cfg", 1, 5, 3)
    load(LIT / "plan_memory_modern_multiblock_invalid.pto").run("multiblock_cfg")
    prog = load(LIT / "issue696_scalar_gm_store_flush.pto")
    for idx, want in ((0, [9, 0, 0, 0]), (2, [9, 0, 9, 0])):
        d = np.zeros(4, np.int32)
        prog.scalar_gm_store_multi_exit(d, np.array([9], np.int32), idx)
        assert d.tolist() == want


FORMS = """module {
  func.func private @f(%n: index, %c: i1) -> f32 {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c-128_f32 = arith.constant -128.0 : f32
    %one = arith.constant 1.0 : f32
    scf.for %i = %c0 to %n step %c1 iter_args(%a = %one) -> (f32) {
      %b = arith.addf %a, %one : f32
      scf.yield %b : f32
    }
    %r = scf.for %i = %c0 to %n step %c1 iter_args(%a = %c-128_f32) -> (f32) {
      %b = arith.addf %a, %one : f32
      scf.yield %b : f32
    } {pto.hint = "unroll"}
    scf.if %c {
    } else {
    }
    return %r : f32
  }
}
"""


@pytest.mark.parametrize("n", [0, 3])
def test_mlir_forms_run_and_print_back(n):
    """A '-' in an SSA name, scf.for iter_args with unbound results, an attribute dictionary
    after a loop's region, empty scf.if regions: -128 + n."""
    assert load(FORMS).run("f", n, 1) == (np.float32(-128 + n),)
    text = print_module(parse(FORMS))
    assert "%c-128_f32" in text and '} {pto.hint = "unroll"}' in text
    assert print_module(parse(text)) == text


def test_pto_low_precision_element_types_in_shapes():
    """!pto.hif8 / !pto.f4E1M2x2 as element types of views, pointers and tiles."""
    text = """module {
  func.func @k(%p: !pto.ptr<!pto.hif8>, %q: !pto.ptr<!pto.f4E1M2x2>, %n: index) {
    %c1 = arith.constant 1 : index
    %v = pto.make_tensor_view %p, shape = [%n], strides = [%c1] : !pto.tensor_view<?x!pto.hif8>
    %w = pto.make_tensor_view %q, shape = [%n], strides = [%c1] : !pto.tensor_view<?x!pto.f4E1M2x2>
    return
  }
}
"""
    load(text, target="a5")
    assert "!pto.tensor_view<?x!pto.hif8>" in print_module(parse(text))

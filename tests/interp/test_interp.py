"""Interpreter semantics of the structured ops and the run-time errors, on small programs."""

from __future__ import annotations

import numpy as np
import pytest

from ptoisa import load
from ptoisa.errors import PtoError, VerifyError

T16 = ("!pto.tile_buf<loc=vec, dtype=f32, rows=16, cols=16, v_row=16, v_col=16, "
       "blayout=row_major, slayout=none_box, fractal=512, pad=0>")
PV = "!pto.partition_tensor_view<16x16xf32>"
TV = "!pto.tensor_view<?x?xf32>"


def scalar_fn(body: str, sig: str = "", ret: str = "i32") -> str:
    # private: a lone public function is the PTO entry, and entries must return void
    return f"module {{\n  func.func private @f({sig}) -> {ret} {{\n{body}\n  }}\n}}\n"


@pytest.mark.parametrize("lb, ub, st", [(0, 10, 1), (0, 0, 1), (3, 17, 4), (5, 5, 1),
                                         (9, 2, 3), (0, 1, 7)])
def test_scf_for_bounds_steps_and_nesting(lb, ub, st):
    """Loops run i = lb, lb + st, ... below ub: with carried values (an iter_args sum: 45 for
    0..9, 0 for no iteration), and as a loop whose body is one op carrying nothing (an inner
    loop), whatever the step and however the bounds meet."""
    prog = load(scalar_fn("""
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %z = arith.constant 0 : i32
    %r = scf.for %i = %lb to %ub step %st iter_args(%acc = %z) -> (i32) {
      %v = arith.index_cast %i : index to i32
      %s = arith.addi %acc, %v : i32
      scf.for %j = %c0 to %c2 step %c1 {
        scf.for %k = %c0 to %c2 step %c1 {
          %w = arith.index_cast %k : index to i32
        }
      }
      scf.yield %s : i32
    }
    return %r : i32""", "%lb: index, %ub: index, %st: index"))
    assert prog.f(lb, ub, st) == (sum(range(lb, ub, st)),)
    assert prog.f(np.int64(lb), np.int64(ub), np.int64(st)) == (sum(range(lb, ub, st)),)


def test_scf_if_with_results_and_select():
    prog = load(scalar_fn("""
    %c0 = arith.constant 0 : i32
    %neg = arith.cmpi slt, %x, %c0 : i32
    %r = scf.if %neg -> (i32) {
      %m = arith.subi %c0, %x : i32
      scf.yield %m : i32
    } else {
      scf.yield %x : i32
    }
    return %r : i32""", "%x: i32"))
    assert prog.f(-7) == (7,) and prog.f(5) == (5,)


def test_scf_while_counts_down():
    prog = load(scalar_fn("""
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i32
    %r:2 = scf.while (%i = %x, %n = %c0) : (i32, i32) -> (i32, i32) {
      %go = arith.cmpi sgt, %i, %c0 : i32
      scf.condition(%go) %i, %n : i32, i32
    } do {
    ^bb0(%a: i32, %b: i32):
      %a2 = arith.subi %a, %c1 : i32
      %b2 = arith.addi %b, %c1 : i32
      scf.yield %a2, %b2 : i32, i32
    }
    return %r#1 : i32""", "%x: i32"))
    assert prog.f(6) == (6,)


def test_func_call():
    prog = load("""module {
  func.func private @sq(%a: i32) -> i32 {
    %r = arith.muli %a, %a : i32
    return %r : i32
  }
  func.func private @f(%x: i32) -> i32 {
    %y = func.call @sq(%x) : (i32) -> i32
    %z = call @sq(%y) : (i32) -> i32
    return %z : i32
  }
}
""")
    assert prog.f(3) == (81,)


def test_i32_overflow_wraps_and_index_does_not():
    prog = load(scalar_fn("""
    %big = arith.constant 2147483647 : i32
    %one = arith.constant 1 : i32
    %w = arith.addi %big, %one : i32
    return %w : i32"""))
    assert prog.f() == (-2147483648,)
    prog = load(scalar_fn("""
    %big = arith.constant 2147483647 : index
    %one = arith.constant 1 : index
    %w = arith.addi %big, %one : index
    return %w : index""", ret="index"))
    assert prog.f() == (2147483648,)
    prog = load(scalar_fn("""
    %a = arith.constant 200 : i8
    %b = arith.constant 100 : i8
    %w = arith.muli %a, %b : i8
    return %w : i8""", ret="i8"))
    assert prog.f() == (((-56 * 100) + 128) % 256 - 128,)


def _blocks_kernel(offset_line: str) -> str:
    return f"""module {{
  func.func @k(%x: !pto.ptr<f32>, %y: !pto.ptr<f32>) {{
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c16 = arith.constant 16 : index
    %c64 = arith.constant 64 : index
    %b = pto.get_block_idx
    {offset_line}
    %vx = pto.make_tensor_view %x, shape = [%c64, %c16], strides = [%c16, %c1] : {TV}
    %vy = pto.make_tensor_view %y, shape = [%c64, %c16], strides = [%c16, %c1] : {TV}
    %px = pto.partition_view %vx, offsets = [%row, %c0], sizes = [%c16, %c16] : {TV} -> {PV}
    %py = pto.partition_view %vy, offsets = [%row, %c0], sizes = [%c16, %c16] : {TV} -> {PV}
    %t = pto.alloc_tile : {T16}
    pto.tload ins(%px : {PV}) outs(%t : {T16})
    pto.tadd ins(%t, %t : {T16}, {T16}) outs(%t : {T16})
    pto.tstore ins(%t : {T16}) outs(%py : {PV})
    return
  }}
}}
"""


def test_get_block_idx_selects_the_slice():
    prog = load(_blocks_kernel("%bi = arith.index_cast %b : i64 to index\n"
                               "    %row = arith.muli %bi, %c16 : index"))
    x = np.arange(64 * 16, dtype=np.float32).reshape(64, 16)
    y = np.zeros_like(x)
    prog.k(x, y, blocks=4)
    np.testing.assert_array_equal(y, 2 * x)
    y[:] = 0
    prog.k(x, y, blocks=2)
    np.testing.assert_array_equal(y[:32], 2 * x[:32])
    assert not y[32:].any()


def test_partition_view_out_of_bounds_has_location():
    text = _blocks_kernel("%bi = arith.index_cast %b : i64 to index\n"
                          "    %row = arith.muli %bi, %c64 : index")
    prog = load(text, filename="blocks.pto")
    x = np.zeros((64, 16), np.float32)
    with pytest.raises(PtoError) as ei:
        prog.k(x, x.copy(), blocks=2)
    msg = ei.value.render()
    assert msg.startswith("blocks.pto:12:11: error: partition_view: dim 0 [64, 80) outside")
    assert msg.splitlines()[-1].strip() == "^"


def test_wrong_argument_dtype_and_count():
    prog = load(_blocks_kernel("%row = arith.constant 0 : index"))
    x = np.zeros((64, 16), np.float32)
    with pytest.raises(PtoError, match=r"argument 1 \(%y: !pto.ptr<f32>\) of @k must have "
                                       r"dtype f32 \(float32\), got float64"):
        prog.k(x, np.zeros((64, 16)))
    with pytest.raises(PtoError, match="@k takes 2 arguments"):
        prog.k(x)
    with pytest.raises(PtoError, match="must be an array: numpy, or anything with __dlpack__"):
        prog.k(x, [1.0])


def test_verify_error_names_op_and_location():
    bad = _blocks_kernel("%row = arith.constant 0 : index").replace(
        "pto.tadd ins(%t, %t : ", "pto.tadd ins(%t : ").replace(f"{T16}, {T16}) outs(%t",
                                                              f"{T16}) outs(%t")
    with pytest.raises(VerifyError) as ei:
        load(bad, target="a2a3", filename="bad.pto")
    assert ei.value.render().startswith("bad.pto:15:5: error: pto.tadd: expects ins (src0, src1)")


def test_module_rules():
    with pytest.raises(VerifyError, match="PTO entry functions must return void"):
        load(scalar_fn("%c = arith.constant 1 : i32\n    return %c : i32").replace(
            "private @f()", "@f()").replace("-> i32 {", "-> i32 attributes {pto.entry} {"))
    # a lone public function that is not marked as an entry may return a value (PTOAS emits
    # it as a plain AICORE function)
    load(scalar_fn("%c = arith.constant 1 : i32\n    return %c : i32").replace(
        "private @f()", "@f()"))
    with pytest.raises(VerifyError, match="recursive function calls"):
        load("module {\n  func.func @f() {\n    func.call @f() : () -> ()\n    return\n  }\n}\n")


def test_valid_operands_only_for_dynamic_dimensions():
    """PTOAS: alloc_tile takes valid_row/valid_col only for dynamic (?) dimensions, and
    set_validshape needs a fully dynamic valid shape."""
    t16 = ("!pto.tile_buf<loc=vec, dtype=f32, rows=16, cols=16, v_row=16, v_col=16, "
           "blayout=row_major, slayout=none_box, fractal=512, pad=0>")
    text = ("module {\n  func.func @k() {\n    %c4 = arith.constant 4 : index\n"
            f"    %t = pto.alloc_tile valid_row = %c4 : {t16}\n    return\n  }}\n}}\n")
    with pytest.raises(PtoError, match="'valid_row' operand given for a static valid dimension"):
        load(text)
    text2 = ("module {\n  func.func @k() {\n    %c4 = arith.constant 4 : index\n"
             f"    %t = pto.alloc_tile : {t16}\n"
             f"    pto.set_validshape %t, %c4, %c4 : {t16}\n    return\n  }}\n}}\n")
    with pytest.raises(PtoError, match="expects a tile with a dynamic valid shape"):
        load(text2)


def test_malformed_ops_are_diagnostics_not_crashes():
    """Found by fuzzing ptoisa check: an op spelled without the result its handler needs, and a
    GM view bound where the instruction takes a tile, are located errors."""
    pv = "!pto.partition_tensor_view<16x16xf32>"
    tv = "!pto.tensor_view<?x?xf32>"
    head = ("module {\n  func.func @k(%a: !pto.ptr<f32>) {\n"
            "    %c0 = arith.constant 0 : index\n    %c1 = arith.constant 1 : index\n"
            "    %c16 = arith.constant 16 : index\n")
    no_result = head + (f"    pto.make_tensor_view %a, shape = [%c16, %c16], strides = [%c16, %c1]"
                        f" : {tv}\n    return\n  }}\n}}\n")
    with pytest.raises(VerifyError, match="malformed op: .* do not fit 'pto.make_tensor_view'"):
        load(no_result)
    swapped = head + (
        f"    %v = pto.make_tensor_view %a, shape = [%c16, %c16], strides = [%c16, %c1] : {tv}\n"
        f"    %p = pto.partition_view %v, offsets = [%c0, %c0], sizes = [%c16, %c16] : {tv} "
        f"-> {pv}\n"
        f"    %q = pto.partition_view %v, offsets = [%c0, %c0], sizes = [%c16, %c16] : {tv} "
        f"-> {pv}\n"
        f"    pto.tload ins(%p : {pv}) outs(%q : {pv})\n    return\n  }}\n}}\n")
    with pytest.raises(VerifyError, match="tload: operand 'dst' must be a tile, got a GM view"):
        load(swapped)

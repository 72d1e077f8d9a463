"""Stack-local arrays and structs of scalar code (PTO_IR_manual.md 2.7 / 2.8, "Local Array
Ops", "Struct Ops"): numpy references of what the C++ the manual gives (``T a[D1][D2];``,
``s.f0.f1 = v``) computes, and the rules PTOAS's verifier enforces."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from ptoisa import load
from ptoisa.errors import NotExecutedYet, PtoError
from ptoisa.interp import verify
from ptoisa.text import parse

SHARED = Path(os.environ.get("PTOISA_SHARED", Path(__file__).resolve().parents[2].parent
                             / "shared"))
LIT = SHARED / "corpus" / "ptoas-main" / "test" / "lit" / "pto"
needs_corpus = pytest.mark.skipif(not LIT.is_dir(), reason=f"corpus not found at {LIT}")

HIST = """module {
  func.func @hist(%x: !pto.ptr<i32>, %out: !pto.ptr<i8>, %n: index) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c4 = arith.constant 4 : index
    %z = arith.constant 0 : i8
    %one = arith.constant 1 : i8
    %h = pto.declare_local_array -> !pto.local_array<2x4xi8>
    scf.for %r = %c0 to %c2 step %c1 {
      scf.for %b = %c0 to %c4 step %c1 {
        pto.local_array_set %h[%r, %b], %z : !pto.local_array<2x4xi8>, i8
      }
    }
    scf.for %i = %c0 to %n step %c1 {
      %v = pto.load_scalar %x[%i] : !pto.ptr<i32> -> i32
      %vi = arith.index_cast %v : i32 to index
      %row = arith.remui %i, %c2 : index
      %old = pto.local_array_get %h[%row, %vi] : !pto.local_array<2x4xi8> -> i8
      %new = arith.addi %old, %one : i8
      pto.local_array_set %h[%row, %vi], %new : !pto.local_array<2x4xi8>, i8
    }
    scf.for %r = %c0 to %c2 step %c1 {
      scf.for %b = %c0 to %c4 step %c1 {
        %o = arith.muli %r, %c4 : index
        %o2 = arith.addi %o, %b : index
        %v = pto.local_array_get %h[%r, %b] : !pto.local_array<2x4xi8> -> i8
        pto.store_scalar %v, %out[%o2] : !pto.ptr<i8>, i8
      }
    }
    return
  }
}
"""


@pytest.mark.parametrize("n,seed", [(10, 0), (300, 1)])  # 300: counts past 127 wrap (i8)
def test_two_d_histogram(n, seed):
    """h[i % 2][x[i]] += 1 with int8_t counters, as the C++ computes it."""
    x = np.random.default_rng(seed).integers(0, 4, n).astype(np.int32)
    out = np.zeros(8, np.int8)
    load(HIST).hist(x, out, n)
    want = np.zeros((2, 4), np.int64)
    for i, v in enumerate(x):
        want[i % 2, v] += 1
    want = ((want + 128) % 256 - 128).astype(np.int8)  # int8_t wraps
    np.testing.assert_array_equal(out.reshape(2, 4), want)


def test_index_outside_and_uninitialised_read_are_errors():
    prog = load(HIST)
    with pytest.raises(PtoError, match=r"local_array_get.*index \[0, 5\] is outside the local "
                                       r"array of shape 2x4"):
        prog.hist(np.array([5], np.int32), np.zeros(8, np.int8), 1)
    text = HIST.replace("pto.local_array_set %h[%r, %b], %z", "pto.local_array_set %h[%c0, %b], %z")
    with pytest.raises(NotExecutedYet,
                       match=r"element \[1, 2\] is read before any "
                       r"pto.local_array_set wrote it"):
        load(text).hist(np.array([0, 2], np.int32), np.zeros(8, np.int8), 2)


STRUCT = """module {
  func.func @k(%out_f: !pto.ptr<f16>, %out_i: !pto.ptr<i16>, %out_b: !pto.ptr<i8>,
               %vf: f16, %vi: i16, %vb: i8) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %s = pto.declare_struct -> !pto.struct<!pto.struct<f16, i8>, i16>
    pto.struct_set %s[0, 0], %vf : !pto.struct<!pto.struct<f16, i8>, i16>, f16
    pto.struct_set %s[1], %vi : !pto.struct<!pto.struct<f16, i8>, i16>, i16
    pto.struct_set %s[0, 1], %vb : !pto.struct<!pto.struct<f16, i8>, i16>, i8
    %g = pto.struct_get %s[0, 0] : !pto.struct<!pto.struct<f16, i8>, i16> -> f16
    %two = arith.constant 2.0 : f16
    %d = arith.mulf %g, %two : f16
    pto.struct_set %s[0, 0], %d : !pto.struct<!pto.struct<f16, i8>, i16>, f16
    %f0 = pto.struct_get %s[0, 0] : !pto.struct<!pto.struct<f16, i8>, i16> -> f16
    %i1 = pto.struct_get %s[1] : !pto.struct<!pto.struct<f16, i8>, i16> -> i16
    %b1 = pto.struct_get %s[0, 1] : !pto.struct<!pto.struct<f16, i8>, i16> -> i8
    pto.store_scalar %g, %out_f[%c0] : !pto.ptr<f16>, f16
    pto.store_scalar %f0, %out_f[%c1] : !pto.ptr<f16>, f16
    pto.store_scalar %i1, %out_i[%c0] : !pto.ptr<i16>, i16
    pto.store_scalar %b1, %out_b[%c0] : !pto.ptr<i8>, i8
    return
  }
}
"""


def test_nested_struct_fields_and_get_is_a_copy():
    f, i, b = np.zeros(2, np.float16), np.zeros(1, np.int16), np.zeros(1, np.int8)
    load(STRUCT).k(f, i, b, 1.5, -300, -7)
    np.testing.assert_array_equal(f, np.array([1.5, 3.0], np.float16))  # %g kept 1.5
    assert i[0] == -300 and b[0] == -7


def test_unwritten_field_read_is_an_error():
    text = STRUCT.replace("pto.struct_set %s[1], %vi", "// ").replace(
        ": !pto.struct<!pto.struct<f16, i8>, i16>, i16\n", "\n", 1)
    with pytest.raises(NotExecutedYet, match=r"field \[1\] is read before any pto.struct_set"):
        load(text).k(np.zeros(2, np.float16), np.zeros(1, np.int16), np.zeros(1, np.int8),
                     1.0, 1, 1)


def _errors(body: str, sig: str = "", ret: str = "") -> list[str]:
    text = f"""module {{
  func.func @f({sig}){ret} {{
    %c0 = arith.constant 0 : index
    %v32 = arith.constant 1 : i32
    %vf = arith.constant 1.0 : f32
    {body}
  }}
}}
"""
    return [str(e) for e in verify.diagnose(parse(text), "a2a3")]


LA = "!pto.local_array<4x8xi32>"
ST = "!pto.struct<f32, i8>"


@pytest.mark.parametrize("body,sig,ret,match", [
    (f"%a = pto.declare_local_array -> {LA}\n %r = pto.local_array_get %a[%c0] : {LA} -> i32"
     "\n return", "", "", "expects 2 indices (the array's rank), got 1"),
    (f"%a = pto.declare_local_array -> {LA}\n"
     f" pto.local_array_set %a[%c0, %c0], %vf : {LA}, f32\n return", "", "",
     "value type f32 must be the array's element type i32"),
    (f"%a = pto.declare_local_array -> {LA}\n"
     f" %r = pto.local_array_get %a[%c0, %c0] : {LA} -> f32\n return", "", "",
     "result type f32 must be the array's element type i32"),
    ("%a = pto.declare_local_array -> !pto.local_array<0x8xi32>\n return", "", "",
     "every dimension must be positive"),
    ("%a = pto.declare_local_array -> !pto.local_array<4xi1>\n return", "", "",
     "not a scalar integer or float"),
    (f"%s = pto.declare_struct -> {ST}\n %r = pto.struct_get %s[2] : {ST} -> f32\n return",
     "", "", "field index 2 is out of range for a struct of 2 fields"),
    (f"%s = pto.declare_struct -> {ST}\n %r = pto.struct_get %s[0, 0] : {ST} -> f32\n return",
     "", "", "descends into a scalar field"),
    (f"%s = pto.declare_struct -> {ST}\n pto.struct_set %s[1], %v32 : {ST}, i32\n return",
     "", "", "value type i32 must be the field type i8"),
    ("%s = pto.declare_struct -> !pto.struct<f32, f8E4M3>\n return", "", "",
     "is not scalar-storable"),
    (f"%s = pto.declare_struct -> {ST}\n return %s : {ST}", "", f" -> {ST}",
     "must not be returned"),
    ("return", f"%s: {ST}", "", "must not be a function argument"),
    (f"%s = pto.declare_struct -> {ST}\n %t = pto.declare_struct -> {ST}\n"
     f" %c = arith.constant true\n %u = arith.select %c, %s, %t : {ST}\n return", "", "",
     "may only be made by pto.declare_struct"),
])
def test_rejected(body, sig, ret, match):
    errs = _errors(body, sig, ret)
    assert any(match in e for e in errs), errs


@needs_corpus
def test_corpus_local_array_snapshot_runs():
    """issue713: a[0] = 7; cur = a[0]; a[0] = cur + 1; out[0] = 100 + cur -> 107."""
    out = np.zeros(1, np.int32)
    load(LIT / "issue713_local_array_get_snapshot.pto").issue713_local_array_get_snapshot(out)
    assert out[0] == 107


@needs_corpus
@pytest.mark.parametrize("name,match", [
    ("struct_escape_indirect_invalid.pto", "a stack-local struct must not be returned"),
    ("struct_escape_return_invalid.pto",
     "stack-local struct must not escape the scope that declares it"),
    ("struct_get_aggregate_invalid.pto", "struct path must end at a scalar field"),
    ("struct_path_oob_invalid.pto", "out of range"),
    ("struct_set_array_invalid.pto", "is not scalar-storable"),
    ("struct_unrepresentable_scalar_invalid.pto", "is not scalar-storable"),
    ("struct_invalid_field_type.pto", "is not scalar-storable"),
])
def test_corpus_rejections(name, match):
    errs = [str(e) for e in verify.diagnose(parse((LIT / name).read_text()), "a2a3")]
    assert any(match in e for e in errs), errs


@needs_corpus
def test_corpus_nested_struct_runs():
    load(LIT / "struct_nested_emitc.pto").struct_nested(np.float32(1.5), 7)


def tile_scalar_kernel(blayout: str) -> str:
    tb = (f"!pto.tile_buf<loc=vec, dtype=i32, rows=8, cols=8, v_row=8, v_col=8, "
          f"blayout={blayout}, slayout=none_box, fractal=512, pad=0>")
    return f"""module {{
  func.func @k(%x: !pto.ptr<i32>, %out: !pto.ptr<i32>, %off: index, %v: i32) {{
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %c8 = arith.constant 8 : index
    %xv = pto.make_tensor_view %x, shape = [%c8, %c8], strides = [%c8, %c1]
        : !pto.tensor_view<?x?xi32>
    %xp = pto.partition_view %xv, offsets = [%c0, %c0], sizes = [%c8, %c8]
        : !pto.tensor_view<?x?xi32> -> !pto.partition_tensor_view<8x8xi32>
    %t = pto.alloc_tile : {tb}
    pto.tload ins(%xp : !pto.partition_tensor_view<8x8xi32>) outs(%t : {tb})
    %old = pto.tgetval ins(%t, %off : {tb}, index) outs : i32
    pto.tsetval ins(%off, %v : index, i32) outs(%t : {tb})
    %new = pto.tgetval ins(%t, %off : {tb}, index) outs : i32
    pto.store_scalar %old, %out[%c0] : !pto.ptr<i32>, i32
    pto.store_scalar %new, %out[%c1] : !pto.ptr<i32>, i32
    pto.tstore ins(%t : {tb}) outs(%xp : !pto.partition_tensor_view<8x8xi32>)
    return
  }}
}}
"""


@pytest.mark.parametrize("blayout", ["row_major", "col_major"])
@pytest.mark.parametrize("off", [0, 5, 13, 63])
def test_tgetval_tsetval_linear_offset(blayout, off):
    """src[offset] in the tile's storage order: row-major r * cols + c, column-major
    c * rows + r (a DN tile of a row-major GM view holds the same logical elements)."""
    x = np.arange(64, dtype=np.int32).reshape(8, 8)
    out = np.zeros(2, np.int32)
    y = x.copy()
    load(tile_scalar_kernel(blayout)).k(y, out, off, -5)
    r, c = divmod(off, 8) if blayout == "row_major" else (off % 8, off // 8)
    want = x.copy()
    want[r, c] = -5
    assert out.tolist() == [x[r, c], -5]
    np.testing.assert_array_equal(y, want)


def test_tgetval_offset_outside_the_tile():
    with pytest.raises(PtoError, match="tgetval.*offset 64 is outside the 8x8 tile"):
        load(tile_scalar_kernel("row_major")).k(np.zeros((8, 8), np.int32),
                                                np.zeros(2, np.int32), 64, 1)

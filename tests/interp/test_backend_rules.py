"""PTOAS's backend rules (interp/verify.py: backend_errors): the ``pto.backend`` names it
has, a VPTO child module's kernel kind, and the ops the VPTO pipeline does not lower (each
rule's snippet next to a valid neighbour)."""

from __future__ import annotations

import pytest

from ptoisa.interp.verify import diagnose
from ptoisa.text import parse

FENCE = """module attributes {pto.target_arch = "a5", pto.kernel_kind = #pto.kernel_kind<vector>} {
  func.func @k() attributes {pto.kernel} {
    %OP%
    return
  }
}
"""


def _msgs(text: str, backend: str | None = None) -> list[str]:
    return [e.message for e in diagnose(parse(text, "t.pto"), "a5", backend=backend)]


@pytest.mark.parametrize("op", ["pto.fence.barrier_all #pto.fence_scope<gm>",
                                "pto.cmo.cacheinvalid all #pto.address_space<gm>"])
def test_cmo_and_fence_refused_under_the_vpto_backend_only(op):
    text = FENCE.replace("%OP%", op)
    name = op.split()[0]
    assert any(f"'{name}' is not supported by the VPTO backend yet" in m
               for m in _msgs(text, "vpto"))
    assert _msgs(text) == [] and _msgs(text, "emitc") == []
    # a pipeline's limit, not the program's: a module's own pto.backend (no command line:
    # ptoisa run) is not judged by it, nor a child module for the other backend
    attr = text.replace("module attributes {", 'module attributes {pto.backend = "vpto", ', 1)
    assert _msgs(attr) == []
    emitc = text.replace("module attributes {", 'module attributes {pto.backend = "emitc", ', 1)
    assert _msgs(emitc, "vpto") == []


def test_backend_attribute_names_a_backend():
    bad = 'module attributes {pto.backend = "other"} {\n  func.func @f() { return }\n}\n'
    assert "invalid pto.backend 'other'. Expected 'emitc' or 'vpto'." in _msgs(bad)
    assert _msgs(bad.replace('"other"', '"emitc"')) == []


def test_vpto_child_module_carries_its_kernel_kind():
    text = ('module attributes {pto.target_arch = "a5"} {\n'
            '  module attributes {pto.backend = "vpto"} {\n'
            '    func.func @f() { return }\n  }\n}\n')
    assert any("expected VPTO kernel submodule to carry 'pto.kernel_kind'" in m
               for m in _msgs(text))
    kind = text.replace('"vpto"}', '"vpto", pto.kernel_kind = #pto.kernel_kind<vector>}')
    assert _msgs(kind) == []


@pytest.mark.parametrize(("body", "said"), [
    ("pto.set_flag[<PIPE_MTE2>, <PIPE_V>, <EVENT_ID0>]", "'pto.set_flag'"),
    ("pto.wait_flag[<PIPE_S>, <PIPE_MTE2>, <EVENT_ID0>]", "'pto.wait_flag'"),
    # executed on a pipe of one core (FIX: cube, V: vector): the kind is inferred
    ("pto.set_flag[<PIPE_FIX>, <PIPE_V>, <EVENT_ID0>]", None),
    ("pto.wait_flag[<PIPE_MTE2>, <PIPE_V>, <EVENT_ID0>]", None),
])
def test_vpto_child_module_kind_inferred_from_its_flag_ops(body, said):
    text = ('module attributes {pto.target_arch = "a5"} {\n'
            '  module attributes {pto.backend = "vpto"} {\n'
            f'    func.func @f() attributes {{pto.entry}} {{\n      {body}\n      return\n'
            '    }\n  }\n}\n')
    msgs = _msgs(text)
    if said is None:
        assert msgs == []
    else:
        assert any("section kind cannot be inferred uniquely" in m and said in m
                   for m in msgs), msgs


TLOAD = """module attributes {pto.kernel_kind = #pto.kernel_kind<vector>} {
  func.func @k(%src: !pto.ptr<f32, gm>) attributes {pto.aicore} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c16 = arith.constant 16 : index
    %c32 = arith.constant 32 : index
    %c64 = arith.constant 64 : index
    %view = pto.make_tensor_view %src, shape = [%c16, %c32], strides = [%c64, %INNER]
      : !pto.tensor_view<?x?xf32>
    %part = pto.partition_view %view, offsets = [%c0, %c0], sizes = [%c16, %c32]
      : !pto.tensor_view<?x?xf32> -> !pto.partition_tensor_view<16x32xf32>
    %tile = pto.alloc_tile : TILE
    pto.tload ins(%part : !pto.partition_tensor_view<16x32xf32>) outs(%tile : TILE)
    return
  }
}
""".replace("TILE", "!pto.tile_buf<loc=vec, dtype=f32, rows=16, cols=32, v_row=16, v_col=32, "
            "blayout=row_major, slayout=none_box, fractal=512, pad=0>")


def test_vpto_a2a3_tload_needs_a_unit_innermost_stride():
    strided = TLOAD.replace("%INNER", "%c32")
    said = "A2/A3 DMA lowering requires a unit innermost stride"
    msgs = [e.message for e in diagnose(parse(strided, "t.pto"), "a2a3", backend="vpto")]
    assert any(said in m for m in msgs), msgs
    # the valid neighbours: a unit stride; A5's DMA; the EmitC backend
    unit = TLOAD.replace("%INNER", "%c1")
    assert not [e for e in diagnose(parse(unit, "t.pto"), "a2a3", backend="vpto")
                if said in e.message]
    for target, backend in (("a5", "vpto"), ("a2a3", "emitc")):
        assert not [e for e in diagnose(parse(strided, "t.pto"), target, backend=backend)
                    if said in e.message]


def test_vpto_textract_vec_to_mat_has_no_template():
    tb = ("!pto.tile_buf<loc=LOC, dtype=f16, rows=16, cols=16, v_row=16, v_col=16, "
          "blayout=row_major, slayout=SL, fractal=512, pad=0>")
    src, dst = tb.replace("LOC", "vec").replace("SL", "none_box"), \
        tb.replace("LOC", "mat").replace("SL", "col_major")
    text = ('module attributes {pto.kernel_kind = #pto.kernel_kind<cube>} {\n'
            '  func.func @k() attributes {pto.aicore} {\n    %c0 = arith.constant 0 : index\n'
            f'    %s = pto.alloc_tile : {src}\n    %d = pto.alloc_tile : {dst}\n'
            f'    pto.textract ins(%s, %c0, %c0 : {src}, index, index) outs(%d : {dst})\n'
            '    return\n  }\n}\n')
    said = "no legal template for op='pto.textract' target='a5'"
    assert any(said in e.message for e in diagnose(parse(text, "t.pto"), "a5", backend="vpto"))
    assert not [e for e in diagnose(parse(text, "t.pto"), "a5") if said in e.message]

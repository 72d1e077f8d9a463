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
    # the module's own pto.backend says the same as the command line
    attr = text.replace("module attributes {", 'module attributes {pto.backend = "vpto", ', 1)
    assert any("not supported by the VPTO backend" in m for m in _msgs(attr))


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

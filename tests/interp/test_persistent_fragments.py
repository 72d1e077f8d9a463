"""PTOAS's persistent SIMT fragment rules (interp/persistent_fragments.py): each rule's
snippet next to a valid neighbour that differs in the one thing the rule is about."""

from __future__ import annotations

import pytest

from ptoisa.interp.verify import diagnose
from ptoisa.text import parse

KERNEL = """module attributes {pto.target_arch = "a5", pto.kernel_kind = #pto.kernel_kind<vector>} {
  func.func @k(%dst: !pto.ptr<f32, ub>, %i: i64) attributes {pto.entry} {
    %n = arith.constant N : i32
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c3 = arith.constant 3 : index
    %one = arith.constant 1.000000e+00 : f32
    %frag = llvm.alloca %n x f32 {pto.persistent} : (i32) -> !llvm.ptr
    pto.section.simt<<<32, 1, 1>>> {
INIT
    }
    pto.section.simt<<<DIMS, 1, 1>>> {
USE
    }
    return
  }
}
"""
STORE3 = """      "scf.for"(%c0, %c3, %c1) ({
      ^bb0(%j: index):
        %o = arith.index_cast %j : index to i64
        %e = llvm.getelementptr %frag[%o] : (!llvm.ptr, i64) -> !llvm.ptr, f32
        llvm.store %one, %e : f32, !llvm.ptr
        scf.yield
      }) {pto.unroll = "full"} : (index, index, index) -> ()"""


def _load(at: str, elem: str = "f32") -> str:
    return (f"      %c = arith.constant {at} : i64\n"
            f"      %e2 = llvm.getelementptr %frag[%c] : (!llvm.ptr, i64) -> !llvm.ptr, {elem}\n"
            "      %v = llvm.load %e2 : !llvm.ptr -> f32\n"
            "      pto.store %v, %dst[%c0] : !pto.ptr<f32, ub>, f32")


def _msgs(n: int = 3, init: str = STORE3, use: str = "", dims: int = 32) -> list[str]:
    text = (KERNEL.replace("N :", f"{n} :").replace("INIT", init)
            .replace("USE", use or _load("2")).replace("DIMS", str(dims)))
    return [e.message for e in diagnose(parse(text, "f.pto"), "a5", backend="vpto")]


def test_valid_fragment_initialised_by_an_unrolled_loop():
    assert _msgs() == []


@pytest.mark.parametrize(("kw", "said"), [
    ({"use": _load("3")}, "access at byte offset 12 exceeds allocation size 12"),
    ({"n": 4, "use": _load("3")}, "element offset 3 is not initialized by the init section"),
    ({"use": _load("2", "i8")}, "byte offset 2 must be non-negative and aligned to element "
                                "byte size 4"),
    ({"dims": 64}, "carry section launch dimensions (64, 1, 1) must match init section "
                   "dimensions (32, 1, 1)"),
    ({"use": _load("%i").replace("%c = arith.constant %i : i64\n", "")
      .replace("[%c]", "[%i]")}, "GEP index must be a compile-time integer constant"),
    ({"n": 124, "init": STORE3.replace("%c3", "%c124")
      .replace('"scf.for"', "%c124 = arith.constant 124 : index\n      \"scf.for\"")},
     "exceeds the 123-slot limit: element offset 123 of type 'f32' needs 1 slot(s), next "
     "candidate slot is 123"),
])
def test_rule_and_its_valid_neighbour(kw, said):
    assert any(said in m for m in _msgs(**kw)), _msgs(**kw)


def test_slot_budget_boundary_is_accepted():
    init = STORE3.replace("%c3", "%c123").replace(
        '"scf.for"', "%c123 = arith.constant 123 : index\n      \"scf.for\"")
    assert _msgs(n=124, init=init, use=_load("0")) == []


def test_access_under_control_flow_and_init_that_dominates_nothing():
    nested = ("      %t = arith.constant true\n      scf.if %t {\n" + _load("0") + "\n      }")
    assert any("directly inside the single top-level block" in m for m in _msgs(use=nested))
    # a load before any store in the init section
    first_load = _load("0") + "\n" + STORE3
    assert any("must be initialized by a store before its first load" in m
               for m in _msgs(init=first_load))


def test_fragment_outside_a_kernel_entry():
    text = KERNEL.replace("attributes {pto.entry} ", "").replace("N :", "3 :") \
        .replace("INIT", STORE3).replace("USE", _load("0")).replace("DIMS", "32")
    msgs = [e.message for e in diagnose(parse(text, "f.pto"), "a5", backend="vpto")]
    assert any("must be defined in a PTO kernel entry" in m for m in msgs)


def test_only_the_vpto_pipeline_is_limited_by_them():
    """The rules are PTOAS's VPTO pipeline's limits: without that backend (``ptoisa run``)
    they are not applied."""
    text = (KERNEL.replace("N :", "3 :").replace("INIT", STORE3).replace("USE", _load("3"))
            .replace("DIMS", "32"))
    assert any("exceeds allocation size" in e.message
               for e in diagnose(parse(text, "f.pto"), "a5", backend="vpto"))
    assert not [e for e in diagnose(parse(text, "f.pto"), "a5") if "fragment" in e.message]

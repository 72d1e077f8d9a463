"""The rules PTOAS's VMI passes make (``Ptoas.passes`` of the VMI entries,
``ptoisa/isa/vmi/lowering.py``; the module rules of ``ptoisa.interp.vmi.pass_errors``): each is
made only when a lit RUN line runs its pass. Every case: a minimal op its pass refuses with
PTOAS's words, the same op accepted when the pass does not run, and a valid neighbour the pass
accepts (the shapes PTOAS's own tests lower)."""

from __future__ import annotations

import pytest

from ptoisa.interp.verify import diagnose
from ptoisa.suite import lit
from ptoisa.text import parse

TO_VPTO = ("vmi-lower-unified-to-legacy", "vmi-to-vpto")
GATE = ("vmi-lower-unified-to-legacy", "pto-validate-vmi-layout-ir")
ASSIGN = ("vmi-mask-granularity-assignment", "vmi-layout-assignment")
BOUNDARY = ("pto-validate-vmi-ir",)


def vreg(n: int, t: str = "f32", lay: str = "contiguous") -> str:
    return f"!pto.vmi.vreg<{n}x{t}, #pto.vmi.layout<{lay}>>"


def mask(n: int, g: str = "b32", lay: str = "contiguous") -> str:
    return f"!pto.vmi.mask<{n}x{g}, #pto.vmi.layout<{lay}>>"


def errors(args: str, body: str, passes: tuple[str, ...]) -> list[str]:
    text = f"""module {{
  func.func @f({args}) {{
    {body}
    return
  }}
}}
"""
    return [e.render() for e in diagnose(parse(text, "p.pto"), "a5", passes=passes)]


def _compress(n: int, lay: str = "contiguous") -> tuple[str, str]:
    return (f"%s: {vreg(n, lay=lay)}, %m: {mask(n, lay=lay)}",
            f"%r = pto.vmi.compress %s, %m : {vreg(n, lay=lay)}, {mask(n, lay=lay)} -> "
            f"{vreg(n, lay=lay)}")


def _split(src: str, n: int, parts: int) -> tuple[str, str]:
    outs = ", ".join(f"%o{i}" for i in range(parts))
    types = ", ".join(vreg(n) for _ in range(parts))
    return f"%s: {src}", f'{outs} = "pto.vmi.channel_split"(%s) : ({src}) -> ({types})'


def _bitcast(src: str, dst: str) -> tuple[str, str]:
    return f"%s: {src}", f"%r = pto.vmi.vinterpret_cast %s : {src} -> {dst}"


def _ensure(src: str, dst: str) -> tuple[str, str]:
    return f"%s: {src}", f"%r = pto.vmi.ensure_layout %s : {src} -> {dst}"


def _store(v: str, extra: str = "", attrs: str = "") -> tuple[str, str]:
    return (f"%v: {v}, %p: !pto.ptr<f32, ub>, %i: index, %st: index",
            f"pto.vmi.vstore %v, %p[%i]{extra} {attrs} : {v}, !pto.ptr<f32, ub>")


def _vcvt(src: str, dst: str) -> tuple[str, str]:
    narrow = ("f16" in dst and "f32" in src) or ("i8" in dst and "i32" in src)
    sat = ' {saturate = "SAT"}' if narrow else ""
    return f"%s: {src}", f"%r = pto.vmi.vcvt %s{sat} : {src} -> {dst}"


def _shuffle(idx: list[int]) -> tuple[str, str]:
    r = vreg(len(idx))
    return (f"%s: {vreg(128)}", f'%r = "pto.vmi.shuffle"(%s) {{indices = array<i64: '
            f'{", ".join(map(str, idx))}>}} : ({vreg(128)}) -> {r}')


def _vselr(n: int, t: str, it: str, lay: str = "contiguous") -> tuple[str, str]:
    s, i = vreg(n, t, lay), vreg(n, it, lay)
    return f"%s: {s}, %x: {i}", f"%r = pto.vmi.vselr %s, %x : {s}, {i} -> {s}"


def _group_load(n: int, stride: int, lay: str | None = None, group: int = 8
                ) -> tuple[str, str]:
    t = vreg(n, lay=lay) if lay else f"!pto.vmi.vreg<{n}xf32>"
    return ("%p: !pto.ptr<f32, ub>, %i: index",
            f"%c = arith.constant {stride} : index\n    %r = pto.vmi.vload %p[%i], %c "
            f"{{group = {group}}} : !pto.ptr<f32, ub> -> {t}")


def _reduce(n: int, group: int, res: str) -> tuple[str, str]:
    return (f"%s: {vreg(n)}, %m: {mask(n)}",
            f"%r = pto.vmi.vcadd %s, %m {{group = {group}, reassoc}} : {vreg(n)}, {mask(n)} "
            f"-> {res}")


def _gather(n: int, t: str, it: str, g: str, lay: str = "contiguous") -> tuple[str, str]:
    r, i, m = vreg(n, t, lay), vreg(n, it, lay), mask(n, g, lay)
    return (f"%p: !pto.ptr<{t}, ub>, %x: {i}, %m: {m}",
            f"%r = pto.vmi.vgather %p, %x, %m : !pto.ptr<{t}, ub>, {i}, {m} -> {r}")


def _scatter(n: int) -> tuple[str, str]:
    v, i, m = vreg(n), vreg(n, "i32"), mask(n)
    return (f"%v: {v}, %p: !pto.ptr<f32, ub>, %x: {i}, %m: {m}",
            f"pto.vmi.vscatter %v, %p, %x, %m : {v}, !pto.ptr<f32, ub>, {i}, {m}")


CASES = [
    # (passes, bad, PTOAS's words, good)
    (TO_VPTO, _compress(128), "pto.vmi.compress lowers through pto.vsqz only for one "
     "contiguous full physical chunk", _compress(64)),
    (TO_VPTO, _compress(64, "deinterleaved = 2"), "only for one contiguous full physical chunk",
     _compress(64)),
    (TO_VPTO, ("%m: " + mask(32), "%r = pto.vmi.active_prefix_index %m : " + mask(32)
               + " -> " + vreg(32, "i32")),
     "pto.vmi.active_prefix_index lowers through pto.vusqz only for one contiguous physical "
     "chunk", ("%m: " + mask(64), "%r = pto.vmi.active_prefix_index %m : " + mask(64) + " -> "
               + vreg(64, "i32"))),
    (TO_VPTO, _split(vreg(192), 64, 3), "pto.vmi.channel_split supports only 2 or 4 channels",
     _split(vreg(256), 64, 4)),
    (TO_VPTO, _split(vreg(4), 2, 2), "pto.vmi.channel_split requires source layout to be "
     "contiguous or matching deinterleaved channel layout", _split(vreg(128, lay="deinterleaved "
                                                                    "= 2"), 64, 2)),
    (TO_VPTO, _bitcast(vreg(65, lay="deinterleaved = 2"), vreg(130, "i16", "deinterleaved = 2")),
     "pto.vmi.bitcast requires matching source/result layouts",
     _bitcast(vreg(64), vreg(128, "i16"))),
    (TO_VPTO, ("%a: " + vreg(64, "i32") + ", %m: " + mask(64),
               '%r = pto.vmi.vcmp %a, %a, %m {cmp = "ult"} : ' + f"{vreg(64, 'i32')}, "
               f"{vreg(64, 'i32')}, {mask(64)} -> {mask(64)}"),
     "unsupported compare predicate 'ult'",
     ("%a: " + vreg(64, "i32") + ", %m: " + mask(64),
      '%r = pto.vmi.vcmp %a, %a, %m {cmp = "lt"} : ' + f"{vreg(64, 'i32')}, {vreg(64, 'i32')}, "
      f"{mask(64)} -> {mask(64)}")),
    (TO_VPTO, ("", '%r = "pto.vmi.constant"() {value = dense<[1.0, 2.0]> : tensor<2xf32>} : () '
               f"-> {vreg(2)}"),
     "non-splat pto.vmi.constant requires a vreg immediate or scratch materialization plan",
     ("", '%r = "pto.vmi.constant"() {value = dense<[1.0, 1.0]> : tensor<2xf32>} : () -> '
      f"{vreg(2)}")),
    (TO_VPTO, _ensure(vreg(128, lay="deinterleaved = 4"), vreg(128)),
     "pto.vmi.ensure_layout cannot materialize the requested data layout conversion",
     _ensure(vreg(128, lay="deinterleaved = 2"), vreg(128))),
    (TO_VPTO, _store(vreg(129, lay="deinterleaved = 2")), "pto.vmi.store requires an 8/16/32-bit "
     "predicate-maskable element type", _store(vreg(128, lay="deinterleaved = 2"))),
    (TO_VPTO, (f"%s: {vreg(65)}, %m: {mask(65)}", f"%r = pto.vmi.vcmax %s, %m : {vreg(65)}, "
               f"{mask(65)} -> {vreg(1)}"), "pto.vmi.reduce_maxf lowers through pto.vcmax only",
     (f"%s: {vreg(64)}, %m: {mask(64)}", f"%r = pto.vmi.vcmax %s, %m : {vreg(64)}, {mask(64)} "
      f"-> {vreg(1)}")),
    (TO_VPTO, _vcvt(vreg(256, lay="deinterleaved = 4"), vreg(256, "f16")),
     "pto.vmi.truncf supports f32/f16/bf16 source narrowing",
     _vcvt(vreg(256, lay="deinterleaved = 2"), vreg(256, "f16"))),
    (TO_VPTO, ("%s: !pto.vmi.vreg<64xf32>, %x: f32, %m: !pto.vmi.mask<64xpred>",
               '%r = pto.vmi.vmuls %s, %x, %m {pmode = "merge"} : !pto.vmi.vreg<64xf32>, f32, '
               "!pto.vmi.mask<64xpred> -> !pto.vmi.vreg<64xf32>"),
     "pto.vmi.vmuls with pmode=merge requires an explicit passthru lowering",
     ("%s: !pto.vmi.vreg<64xf32>, %x: f32, %m: !pto.vmi.mask<64xpred>",
      "%r = pto.vmi.vmuls %s, %x, %m : !pto.vmi.vreg<64xf32>, f32, !pto.vmi.mask<64xpred> -> "
      "!pto.vmi.vreg<64xf32>")),
    (TO_VPTO, _vselr(32, "f32", "i32", "contiguous, lane_stride = 2"),
     "pto.vmi.vselr supports only contiguous lane_stride=1 layouts", _vselr(64, "f32", "i32")),
    (TO_VPTO, _vselr(128, "f32", "i32"), "pto.vmi.vselr supports only contiguous lane_stride=1",
     _vselr(128, "f16", "i16")),
    (TO_VPTO, ("%a: !pto.vmi.vreg<64xi32>, %m: !pto.vmi.mask<64xpred>",
               "%r = pto.vmi.vmula %a, %a, %a, %m : !pto.vmi.vreg<64xi32>, !pto.vmi.vreg<64xi32>, "
               "!pto.vmi.vreg<64xi32>, !pto.vmi.mask<64xpred> -> !pto.vmi.vreg<64xi32>"),
     "VMI-RESIDUAL-OP: failed to convert all VMI ops/types to VPTO",
     ("%a: !pto.vmi.vreg<64xf32>, %m: !pto.vmi.mask<64xpred>",
      "%r = pto.vmi.vmula %a, %a, %a, %m : !pto.vmi.vreg<64xf32>, !pto.vmi.vreg<64xf32>, "
      "!pto.vmi.vreg<64xf32>, !pto.vmi.mask<64xpred> -> !pto.vmi.vreg<64xf32>")),
    (TO_VPTO, ("%p: !pto.ptr<f32, ub>, %v: " + vreg(64) + ", %m: " + mask(64),
               "%o = arith.constant -1 : index\n    %r = pto.vmi.expand_load %p[%o], %m, %v : "
               f"!pto.ptr<f32, ub>, {mask(64)}, {vreg(64)} -> {vreg(64)}"),
     "pto.vmi.expand_load direct lowering is currently supported",
     ("%p: !pto.ptr<f32, ub>, %v: " + vreg(64) + ", %m: " + mask(64),
      "%o = arith.constant 0 : index\n    %r = pto.vmi.expand_load %p[%o], %m, %v : "
      f"!pto.ptr<f32, ub>, {mask(64)}, {vreg(64)} -> {vreg(64)}")),
    (TO_VPTO, ("%v: " + vreg(128, "bf16") + ", %p: !pto.ptr<bf16, ub>, %i: index",
               "%c = arith.constant 1048576 : index\n    pto.vmi.group_store %v, %p[%i], %c "
               f"{{num_groups = 8 : i64}} : {vreg(128, 'bf16')}, !pto.ptr<bf16, ub>"),
     "block_stride exceeds the 16-bit vsstb control field",
     ("%v: " + vreg(128, "bf16") + ", %p: !pto.ptr<bf16, ub>, %i: index",
      "%c = arith.constant 16 : index\n    pto.vmi.group_store %v, %p[%i], %c "
      f"{{num_groups = 8 : i64}} : {vreg(128, 'bf16')}, !pto.ptr<bf16, ub>")),
    (TO_VPTO, _group_load(128, 24), "VMI-RESIDUAL-OP: failed to convert all VMI ops/types",
     _group_load(128, 16)),
    (ASSIGN, _group_load(128, 12), "pto.vmi.group_load group_size 16 requires constant positive "
     "row_stride divisible by 8 f32 elements for the block8 stride plan", _group_load(128, 24)),
    (TO_VPTO, _gather(32, "f32", "i32", "b32"), "pto.vmi.gather lowers through "
     "pto.vgather2_bc + pto.vsel only", _gather(32, "ui16", "ui16", "b16")),
    (TO_VPTO, _gather(64, "f32", "i32", "b32", "deinterleaved = 2"), "contiguous result, "
     "indices, passthru, and mask layouts", _gather(64, "f32", "i32", "b32")),
    (TO_VPTO, _scatter(32), "pto.vmi.scatter lowers through pto.vscatter only", _scatter(64)),
    (TO_VPTO, _store(vreg(64), ", %st", '{group = 8, pmode = "merge"}'),
     'pmode "merge" is not supported for stores', _store(vreg(64), ", %st", "{group = 8}")),
    (TO_VPTO, _vcvt(vreg(8, "ui8", "num_groups = 8, slots = 8, lane_stride = 4"),
                    vreg(8, "ui16", "num_groups = 8, slots = 8")),
     "requires a legal cast relation for the source layout",
     _vcvt(vreg(8, "ui8", "num_groups = 8, slots = 8, lane_stride = 2"),
           vreg(8, "ui16", "num_groups = 8, slots = 8"))),
    (TO_VPTO, _shuffle([1, 2, 3, 4]), "pto.vmi.shuffle requires physical chunk forwarding or "
     "lane0 splat or vci-materializable vselr indices", _shuffle([64, 65, 66, 67])),
    (TO_VPTO, _vcvt(vreg(256, "i32", "deinterleaved = 4"), vreg(256, "i8")),
     "unsupported vcvt source/result element type pair",
     _vcvt(vreg(256, "i32", "deinterleaved = 4"), vreg(256, "ui8"))),
    (TO_VPTO, ("%p: !pto.ptr<f16, ub>, %x: " + vreg(128, "i32") + ", %m: " + mask(128, "b16"),
               "%r = pto.vmi.vgather %p, %x, %m : !pto.ptr<f16, ub>, " + vreg(128, "i32") + ", "
               + mask(128, "b16") + " -> " + vreg(128, "f16")), "32-bit result elements",
     _gather(128, "f16", "ui16", "b16")),
    # the layout gate's tables
    (GATE, _bitcast(vreg(256, "bf16", "deinterleaved = 4"), vreg(128, "i32", "deinterleaved = 4")),
     "pto.vmi.bitcast has no registered layout support", _bitcast(vreg(128, "bf16"),
                                                                  vreg(64, "i32"))),
    (GATE, _vcvt(vreg(128, "f16"), vreg(128)), "pto.vmi.extf has no registered layout support",
     _vcvt(vreg(128, "f16"), vreg(128, lay="deinterleaved = 2"))),
    (GATE, _store(vreg(128, lay="block_deinterleaved = 2")),
     "pto.vmi.store has no registered contiguous-memory layout support",
     _store(vreg(128, lay="deinterleaved = 2"))),
    (GATE, _group_load(64, 8, "block_deinterleaved = 2"),
     "pto.vmi.group_load has no registered layout support", _group_load(64, 8, "contiguous")),
    (GATE, _reduce(96, 8, vreg(8, lay="num_groups = 8, slots = 8")),
     "pto.vmi.group_reduce_addf has no registered group_slots layout support",
     _reduce(64, 8, vreg(8, lay="num_groups = 8, slots = 8"))),
    (GATE, _reduce(128, 8, vreg(8, lay="num_groups = 8, slots = 2")),
     "group_reduce source/mask/result layouts do not match",
     _reduce(128, 8, vreg(8, lay="num_groups = 8, slots = 1"))),
    (GATE, (f"%s: {vreg(8, lay='num_groups = 8, slots = 4')}",
            f"%r = pto.vmi.vbrc %s {{group = 8}} : {vreg(8, lay='num_groups = 8, slots = 4')} "
            f"-> {vreg(128)}"), "pto.vmi.group_broadcast has no registered layout support",
     (f"%s: {vreg(8, lay='num_groups = 8, slots = 8')}",
      f"%r = pto.vmi.vbrc %s {{group = 8}} : {vreg(8, lay='num_groups = 8, slots = 8')} -> "
      f"{vreg(128)}")),
    (GATE, _store(vreg(8, lay="num_groups = 8, slots = 8"), ", %st", "{group = 4}"),
     "pto.vmi.group_store has no registered group_slots layout support",
     _store(vreg(8, lay="num_groups = 8, slots = 8"), ", %st", "{group = 8}")),
    (GATE, _ensure(vreg(128, lay="deinterleaved = 4"), vreg(128)),
     "pto.vmi.ensure_layout has no registered materialization support",
     _ensure(vreg(128, lay="deinterleaved = 2"), vreg(128))),
]


@pytest.mark.parametrize(("passes", "bad", "said", "good"), CASES,
                         ids=[c[2][:40] for c in CASES])
def test_pass_rule(passes, bad, said, good):
    got = errors(*bad, passes)
    assert any(said in e for e in got), got
    assert errors(*good, passes) == []
    assert errors(*bad, ("canonicalize",)) == []  # (the pass does not run: no claim)


def _module(attrs: str, body: str) -> str:
    return f"module {attrs}{{\n{body}\n}}\n"


@pytest.mark.parametrize(("passes", "text", "said"), [
    (BOUNDARY, _module("attributes {pto.hidden = {n = [!pto.vmi.vreg<8xf32>]}} ", ""),
     "VMI-PASS-INVARIANT: a VMI type appears in a non-signature attribute"),
    (ASSIGN, _module("attributes {pto.hidden = !pto.vmi.vreg<8xf32>} ", ""),
     "VMI type appears in a non-signature attribute"),
    (TO_VPTO, _module("attributes {pto.hidden = !pto.vmi.vreg<8xf32>} ", ""),
     "VMI-RESIDUAL-OP: failed to convert all VMI ops/types to VPTO"),
    (BOUNDARY, _module("", f"func.func @f(%m: {mask(64)}) {{\n return\n}}"),
     "VMI producer boundary requires surface !pto.vmi.vreg or !pto.vmi.mask<Nxpred> type"),
    (BOUNDARY, _module("", "func.func @f(%a: !pto.vmi.vreg<64xf32>) {\n"
                       "%0 = builtin.unrealized_conversion_cast %a : !pto.vmi.vreg<64xf32> to "
                       "!pto.vmi.vreg<64xf32>\nreturn\n}"),
     "VMI typed value is used by a non-VMI semantic op"),
    (ASSIGN, _module("", "func.func private @ext(!pto.vmi.vreg<64xf32>)"),
     "VMI typed function declaration requires an explicit external ABI materialization plan"),
    (ASSIGN, _module("", "func.func @f(%g: (!pto.vmi.vreg<64xf32>) -> !pto.vmi.vreg<64xf32>, "
                     "%x: !pto.vmi.vreg<64xf32>) {\n%r = func.call_indirect %g(%x) : "
                     "(!pto.vmi.vreg<64xf32>) -> !pto.vmi.vreg<64xf32>\nreturn\n}"),
     "VMI typed call requires a direct internal callee with a body"),
    (TO_VPTO, _module("", "func.func @f(%a: i32) {\n%0 = builtin.unrealized_conversion_cast %a "
                      f": i32 to {vreg(64)}\nreturn\n}}"),
     "VMI-RESIDUAL-OP: unrealized_conversion_cast cannot carry VMI types"),
])
def test_module_pass_rule(passes, text, said):
    got = [e.render() for e in diagnose(parse(text, "m.pto"), "a5", passes=passes)]
    assert any(said in e for e in got), got
    assert not any(said in e.render() for e in diagnose(parse(text, "m.pto"), "a5"))


@pytest.mark.parametrize("text", [
    # surface types, physical registers passing through, a declaration without VMI types
    _module("", "func.func @f(%a: !pto.vmi.vreg<64xf32>, %b: !pto.vreg<64xf32>, "
            "%m: !pto.vmi.mask<64xpred>) {\nreturn\n}\nfunc.func private @g(i32) -> i32"),
    _module("", "func.func @f(%a: i32) -> f32 {\n%0 = builtin.unrealized_conversion_cast %a : "
            "i32 to f32\nreturn %0 : f32\n}"),
])
def test_module_pass_rules_accept_what_ptoas_accepts(text):
    for passes in (BOUNDARY, ASSIGN, TO_VPTO):
        assert diagnose(parse(text, "m.pto"), "a5", passes=passes) == []


def test_run_line_passes_and_vmi_diagnostics_under_not():
    assert lit.test_opt_passes(" %s -split-input-file -vmi-lower-unified-to-legacy "
                               "-vmi-to-vpto -o - 2>&1 | FileCheck %s") == (
        "vmi-lower-unified-to-legacy", "vmi-to-vpto")
    assert "vmi-to-vpto" in lit.test_opt_passes(" %s --pass-pipeline='builtin.module("
                                                "func.func(vmi-to-vpto))'")
    text = ("// RUN: not pto-test-opt %s -split-input-file -vmi-to-vpto 2>&1 | FileCheck %s\n"
            "module {}\n// CHECK: VMI{{-}}UNSUPPORTED{{:}} pto.vmi.compress lowers through\n"
            "// -----\nmodule {}\n")
    first, second = lit.modules(text)[0]
    assert first.expect_reject and first.passes == ("vmi-to-vpto",)
    assert first.expected == ("VMI{{-}}UNSUPPORTED{{:}} pto.vmi.compress lowers through",)
    assert not second.expect_reject
    # one module compiled by two RUN lines with other passes is two modules
    two = ("// RUN: pto-test-opt %s -vmi-layout-assignment | FileCheck %s\n"
           "// RUN: not pto-test-opt %s -vmi-to-vpto 2>&1 | FileCheck %s --check-prefix=E\n"
           "module {}\n// E: VMI-RESIDUAL-OP: failed to convert\n")
    a, b = lit.modules(two)[0]
    assert (a.expect_reject, b.expect_reject) == (False, True)


@pytest.mark.parametrize(("bad", "said", "good"), [
    (_ensure("!pto.vmi.vreg<128xf32>", vreg(128)), "requires source and result to be "
     "layout-assigned", _ensure(vreg(128), vreg(128, lay="deinterleaved = 2"))),
    (("%m: !pto.vmi.mask<128xpred>", "%r = pto.vmi.ensure_mask_granularity %m : "
      f"!pto.vmi.mask<128xpred> -> {mask(128)}"),
     "requires concrete source and result mask granularities",
     (f"%m: {mask(128, 'b16')}", f"%r = pto.vmi.ensure_mask_granularity %m : "
      f"{mask(128, 'b16')} -> {mask(128)}")),
    (("%m: !pto.vmi.mask<128xb16>", "%r = pto.vmi.ensure_mask_granularity %m : "
      f"!pto.vmi.mask<128xb16> -> {mask(128)}"),
     "requires either both source and result to carry layout or neither",
     ("%m: !pto.vmi.mask<128xb16>", "%r = pto.vmi.ensure_mask_granularity %m : "
      "!pto.vmi.mask<128xb16> -> !pto.vmi.mask<128xb32>")),
])
def test_layout_helper_verifier_rules(bad, said, good):
    """The helpers' own verifiers (every pass, and none)."""
    got = errors(*bad, ())
    assert any(said in e for e in got), got
    assert errors(*good, ()) == []


def test_negated_split_chunk_checks_its_own_message_lines():
    text = ("// RUN: not pto-test-opt %s -split-input-file 2>&1 | FileCheck %s\n"
            "module {}\n// -----\nmodule {}\n// CHECK: expected factor to be 2 or 4\n"
            "// -----\nmodule {}\n// CHECK-LABEL: func.func @ok\n// CHECK: pto.vadd %a\n")
    first, second, third = lit.modules(text)[0]
    assert not first.expect_reject
    assert second.expect_reject and second.expected == ("expected factor to be 2 or 4",)
    assert not third.expect_reject  # (a labelled chunk: output of a module that compiled)


def test_grouped_broadcast_load_and_block_stride_store():
    """vload {dist_mode = "brc", group = G}: group g's lanes all read ub[offset + g * stride]
    (designs/vmi-e2b-scale-broadcast-optimization.md 8); the store's block-stride form takes
    pto.vsstb's two i16 strides and is refused by name when run."""
    import numpy as np

    import ptoisa as pto
    from ptoisa.errors import ExecutionError

    text = """module {
  func.func @k(%src: !pto.ptr<f32, ub>, %dst: !pto.ptr<f32, ub>, %m: !pto.vmi.mask<16xpred>) {
    %c0 = arith.constant 0 : index
    %c3 = arith.constant 3 : index
    %b = pto.vmi.vload %src[%c0], %c3 {dist_mode = "brc", group = 4}
        : !pto.ptr<f32, ub> -> !pto.vmi.vreg<16xf32>
    %g = pto.vmi.group_broadcast_load %src[%c0], %c3 {num_groups = 4}
        : !pto.ptr<f32, ub> -> !pto.vmi.vreg<16xf32>
    %s = pto.vmi.vadd %b, %g : !pto.vmi.vreg<16xf32>, !pto.vmi.vreg<16xf32>
        -> !pto.vmi.vreg<16xf32>
    pto.vmi.vstore %s, %dst[%c0] : !pto.vmi.vreg<16xf32>, !pto.ptr<f32, ub>
    return
  }
}
"""
    src = np.arange(16, dtype=np.float32)
    dst = np.zeros(16, np.float32)
    pto.load(text, filename="k.pto").run("k", src, dst, np.ones(16, np.bool_))
    want = np.repeat(src[[0, 3, 6, 9]], 4)  # (group g: ub[3g], on its 4 lanes)
    assert dst.tolist() == (2 * want).tolist()
    store = text.replace("pto.vmi.vstore %s, %dst[%c0] :", "%i2 = arith.constant 2 : i16\n"
                         "    pto.vmi.vstore %s, %dst[%c0], %i2, %i2, %m :").replace(
        "!pto.vmi.vreg<16xf32>, !pto.ptr<f32, ub>\n    return",
        "!pto.vmi.vreg<16xf32>, !pto.ptr<f32, ub>, !pto.vmi.mask<16xpred>\n    return")
    with pytest.raises(ExecutionError, match="operation 'pto.vmi.vstore' cannot be executed by "
                       "ptoisa yet \\(with the block-stride form\\)"):
        pto.load(store, filename="k.pto").run("k", src, dst, np.ones(16, np.bool_))


def test_histogram_acc_and_result_may_differ_in_signedness():
    """vdhist's bins are ui16 or signless i16, each side on its own (PTOAS's normalization
    makes a signless result unsigned)."""
    acc, src, m = vreg(256, "ui16"), vreg(256, "ui8"), mask(256, "b8")
    args = f"%a: {acc}, %s: {src}, %m: {m}"
    body = f"%h = pto.vmi.vdhist %a, %s, %m : {acc}, {src}, {m} -> {vreg(256, 'i16')}"
    assert errors(args, body, ()) == []
    assert errors(args, body.replace("-> " + vreg(256, "i16"), "-> " + vreg(256, "f16")), ())

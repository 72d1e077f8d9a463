"""``ptoisa suite``: every verdict on small test trees written here, in upstream's layouts (a
lit file with RUN lines and expected errors, a split-input-file, a split-file, a sample, a
tilelang_st testcase whose gen_data.py writes goldens), and the command end to end."""

from __future__ import annotations

import importlib.util
import json
import time
from pathlib import Path

import pytest

from ptoisa.cli import main
from ptoisa.suite import Task, discover, do_task, host, lit, pool, work
from ptoisa.suite.result import FileResult, Outcome

KERNEL = """module {
  func.func @TADD_f32_16x16(%a_ptr: !pto.ptr<f32>, %b_ptr: !pto.ptr<f32>,
                            %c_ptr: !pto.ptr<f32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c16 = arith.constant 16 : index
    %av = pto.make_tensor_view %a_ptr, shape = [%c16, %c16], strides = [%c16, %c1]
      : !pto.tensor_view<16x16xf32>
    %bv = pto.make_tensor_view %b_ptr, shape = [%c16, %c16], strides = [%c16, %c1]
      : !pto.tensor_view<16x16xf32>
    %cv = pto.make_tensor_view %c_ptr, shape = [%c16, %c16], strides = [%c16, %c1]
      : !pto.tensor_view<16x16xf32>
    %ap = pto.partition_view %av, offsets = [%c0, %c0], sizes = [%c16, %c16]
      : !pto.tensor_view<16x16xf32> -> !pto.partition_tensor_view<16x16xf32>
    %bp = pto.partition_view %bv, offsets = [%c0, %c0], sizes = [%c16, %c16]
      : !pto.tensor_view<16x16xf32> -> !pto.partition_tensor_view<16x16xf32>
    %cp = pto.partition_view %cv, offsets = [%c0, %c0], sizes = [%c16, %c16]
      : !pto.tensor_view<16x16xf32> -> !pto.partition_tensor_view<16x16xf32>
    %a = pto.alloc_tile : !pto.tile_buf<vec, 16x16xf32>
    %b = pto.alloc_tile : !pto.tile_buf<vec, 16x16xBT>
    %c = pto.alloc_tile : !pto.tile_buf<vec, 16x16xf32>
    pto.tload ins(%ap : !pto.partition_tensor_view<16x16xf32>)
              outs(%a : !pto.tile_buf<vec, 16x16xf32>)
    EXPECT
    pto.tload ins(%bp : !pto.partition_tensor_view<16x16xf32>)
              outs(%b : !pto.tile_buf<vec, 16x16xBT>)
    pto.OP ins(%a, %b : !pto.tile_buf<vec, 16x16xf32>, !pto.tile_buf<vec, 16x16xBT>)
             outs(%c : !pto.tile_buf<vec, 16x16xf32>)
    pto.tstore ins(%c : !pto.tile_buf<vec, 16x16xf32>)
               outs(%cp : !pto.partition_tensor_view<16x16xf32>)
    return
  }
}
"""
#: what ptoisa says of the program whose second load reads f32 into an i32 tile
OUR_TEXT = "dst element type i32 != src element type f32"


def kernel(*, bad: bool = False, op: str = "tadd", expect: str = "") -> str:
    return (KERNEL.replace("BT", "i32" if bad else "f32").replace("OP", op)
            .replace("EXPECT", expect))


def verdict_of(path: Path, root: Path) -> tuple[str, FileResult]:
    [res] = do_task(Task("file", path, root))
    return res.verdict().verdict, res


def write(root: Path, rel: str, text: str) -> Path:
    p = root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text)
    return p


# ---- RUN lines ---------------------------------------------------------------------------

def test_run_lines_give_targets_levels_and_expectations():
    text = ("// RUN: ptoas --pto-arch=a5 %s | FileCheck %s\n"
            "// RUN: not ptoas --pto-arch a3 --pto-level=level3 \\\n"
            "// RUN:   %s 2>&1 | FileCheck %s --check-prefix=A3\n"
            "// RUN: FileCheck --input-file=%s %s\n"
            "// A3: error: 'pto.tadd' op expects the same shape\n" + kernel())
    mods, notes = lit.modules(text)
    assert notes == []
    assert [(m.target, m.level, m.expect_reject, m.expected) for m in mods] == [
        ("a5", None, False, ()),
        ("a2a3", "level3", True, ("'pto.tadd' op expects the same shape",))]
    assert lit.essential(mods[1].expected[0]) == "expects the same shape"
    # no --pto-arch: PTOAS's default a3; a RUN line of another tool only: nothing to check
    assert lit.modules("// RUN: ptoas %s\n")[0][0].target == "a2a3"
    # pto-test-opt checks no target: its (VMI / VPTO) modules are checked for a5
    assert lit.modules("// RUN: pto-test-opt %s -pass | FileCheck %s\n")[0][0].target == "a5"
    assert lit.modules("// RUN: pto-test-opt --pto-arch=a3 %s\n")[0][0].target == "a2a3"
    assert lit.modules("// RUN: python3 %s\n") == ([], [])


def test_split_input_file_chunks_keep_their_line_numbers():
    text = ("// RUN: ptoas -split-input-file -verify-diagnostics %s\n" + kernel()
            + "// -----\n" + kernel(bad=True, expect="// expected-error @+1 {{" + OUR_TEXT
                                     + "}}"))
    good, bad = lit.modules(text)[0]
    assert (good.where, good.expect_reject, bad.where, bad.expect_reject) == \
        ("chunk 1", False, "chunk 2", True)
    assert bad.expected == (OUR_TEXT,)
    n = text.splitlines().index("// -----")
    assert bad.text.startswith("\n" * (n + 1) + "module")  # file line numbers


def test_negated_split_chunk_checked_diagnostic_is_an_error():
    """``not pto-test-opt %s -split-input-file | FileCheck``: a chunk whose CHECK line is an
    MLIR diagnostic (``'pto.x' op ...``, no ``error:`` head) is one PTOAS rejects; a chunk
    checking printed IR is not."""
    text = ("// RUN: not pto-test-opt %s -split-input-file 2>&1 | FileCheck %s\n" + kernel()
            + "// CHECK: 'pto.tadd' op expects the same shape\n// -----\n" + kernel()
            + "// CHECK-LABEL: func.func @k\n")
    bad, good = lit.modules(text)[0]
    assert (bad.expect_reject, bad.expected) == (True, ("'pto.tadd' op expects the same shape",))
    assert good.expect_reject is False
    # without `not`, such a line may be a warning or a remark: no expectation
    assert not lit.modules(text.replace("not pto-test-opt", "pto-test-opt"))[0][0].expect_reject


def test_negated_run_checks_its_message_lines():
    """``not ptoas %s 2>&1 | FileCheck``: the CHECK lines that read as messages are PTOAS's
    diagnostics (op names alone, -LABEL and -NOT lines are not)."""
    text = ("// RUN: not ptoas %s 2>&1 | FileCheck %s\n// CHECK: pto.tadd\n"
            "// CHECK-SAME: expects the same shape\n// CHECK-NOT: error: other\n"
            "// CHECK-LABEL: func k\n" + kernel())
    [mod] = lit.modules(text)[0]
    assert mod.expect_reject and mod.expected == ("expects the same shape",)
    assert lit.carries("t.pto:3:4: error: tadd: expects the same shape (16x16, 8x8)",
                       "'pto.tadd' op {{.*}}the same{{.*}}shape")
    assert not lit.carries("error: tadd: shape differs", "expects the same shape")
    # the op's own head is dropped: "custom op 'pto.x' ...", a check from "op ..." on
    assert lit.essential("custom op 'pto.syncall' expects soft syncall") == \
        "expects soft syncall"
    assert lit.essential("op rounding must be 'R'") == "rounding must be 'R'"


@pytest.mark.parametrize(("run", "said"), [
    ("not ptoas --pto-arch=a3 --enable-bufid_sync %s", "--enable-bufid_sync requires"),
    ("not ptoas --plan-memory-impl=typo %s", "invalid --plan-memory-impl='typo'"),
    ("not ptoas --pto-arch=a3 --enable-op-fusion=true %s", "--enable-op-fusion=true requires"),
    ("ptoas --pto-arch=a5 --enable-bufid_sync --plan-memory-impl=modern %s", None),
])
def test_command_lines_ptoas_refuses(tmp_path, run, said):
    p = write(tmp_path, "lit/t.pto", f"// RUN: {run} 2>&1 | FileCheck %s\n" + kernel())
    verdict, res = verdict_of(p, tmp_path)
    if said is None:
        assert verdict == "ran", res.to_json()
        return
    assert verdict == "rejected-as-ptoas"
    assert said in res.verdict().reason and "PTOAS refuses this command line" in \
        res.verdict().reason


_MIXED = ('module attributes {pto.target_arch = "a5"} {\n'
          '  module attributes {pto.backend = "emitc"} {\n'
          '    func.func @a() attributes {pto.aicore} { return }\n  }\n'
          '  module attributes {pto.backend = "vpto", pto.kernel_kind = '
          '#pto.kernel_kind<vector>} {\n    func.func @b() { return }\n  }\n}\n')


@pytest.mark.parametrize(("run", "said"), [
    ("not ptoas --pto-arch=a5 --emit-vpto %s -o -", "does not support debug IR output flags"),
    ("not ptoas --pto-arch=a5 %s -o -", "requires an explicit file path passed with -o"),
    ("not ptoas --pto-arch=a5 %s", "requires an explicit file path passed with -o"),
    ("ptoas --pto-arch=a5 %s -o %t.o", ""),
])
def test_mixed_backend_command_lines(run, said):
    """Child modules of two backends (PTOAS's mixed fatobj mode) link one object file: an
    ``-o`` file and no debug IR flags; one backend is no mixed mode."""
    mods, _ = lit.modules(f"// RUN: {run} 2>&1 | FileCheck %s\n" + _MIXED)
    assert said in mods[0].option_error and bool(mods[0].option_error) == bool(said)
    one = _MIXED.replace('"emitc"', '"vpto"')
    assert lit.modules(f"// RUN: {run}\n" + one)[0][0].option_error == ""


def test_help_run_line_compiles_nothing_and_backend_is_kept():
    assert lit.modules("// RUN: ptoas --help | FileCheck %s\n" + kernel()) == ([], [])
    mods, _ = lit.modules("// RUN: ptoas --pto-arch=a5 --pto-backend=vpto %s\n"
                          "// RUN: ptoas --pto-arch=a5 %s\n" + kernel())
    assert [m.backend for m in mods] == ["vpto", None]


def test_split_file_parts_named_by_the_run_lines(tmp_path):
    text = ("// RUN: split-file %s %t\n"
            "// RUN: not ptoas --pto-arch=a5 %t/bad.pto 2>&1 | FileCheck %s --check-prefix=BAD\n"
            "// RUN: ptoas --pto-arch=a5 %t/good.pto\n"
            "// RUN: ptoas --pto-arch=a5 %t/missing.pto\n"
            f"// BAD: error: {OUR_TEXT}\n"
            "//--- bad.pto\n" + kernel(bad=True) + "//--- good.pto\n" + kernel())
    mods, notes = lit.modules(text)
    assert [(m.where, m.expect_reject) for m in mods] == [("part bad.pto", True),
                                                          ("part good.pto", False)]
    assert notes == ["RUN line compiles %t/missing.pto, which is no '//--- missing.pto' part"]
    verdict, res = verdict_of(write(tmp_path, "lit/split.pto", text), tmp_path)
    assert [o.verdict for o in res.outcomes] == ["rejected-as-ptoas", "ran"]
    assert res.outcomes[0].text_matched is True
    assert verdict == "ran"


def test_run_line_compiling_another_file_of_the_folder(tmp_path):
    """``ptoas ... %S/other.pto | FileCheck %s``: the other file is compiled, judged by this
    file's RUN and CHECK lines."""
    (tmp_path / "other.pto").write_text(kernel())
    text = "// RUN: ptoas --pto-arch a5 %S/other.pto | FileCheck %s\n// CHECK: TADD(\n"
    mods, notes = lit.modules(text, tmp_path)
    assert [(m.where, m.target, m.text) for m in mods] == [("file other.pto", "a5", kernel())]
    assert notes == []
    assert lit.modules(text.replace("other.pto", "gone.pto"), tmp_path) == (
        [], ["RUN line compiles %S/gone.pto, which is not there"])


# ---- verdicts of lit files and samples ----------------------------------------------------

@pytest.mark.parametrize(("run", "bad", "op", "want"), [
    ("ptoas --pto-arch=a5 %s", False, "tadd", "ran"),
    ("not ptoas --pto-arch=a5 %s 2>&1 | FileCheck %s", True, "tadd", "rejected-as-ptoas"),
    ("not ptoas --pto-arch=a5 %s 2>&1 | FileCheck %s", False, "tadd", "wrongly-accepted"),
    ("ptoas --pto-arch=a5 %s", True, "tadd", "wrongly-rejected"),
    ("ptoas --pto-arch=a5 %s", False, "vselrv2", "unsupported"),
    ("not ptoas --pto-arch=a5 %s 2>&1 | FileCheck %s", False, "vmi.vgatherb", "unsupported"),
])
def test_lit_verdicts(tmp_path, run, bad, op, want):
    p = write(tmp_path, "lit/t.pto", f"// RUN: {run}\n" + kernel(bad=bad, op=op))
    verdict, res = verdict_of(p, tmp_path)
    assert verdict == want, res.to_json()
    v = res.verdict()
    if want == "wrongly-rejected":
        assert v.reason.startswith(f"{p}:") and OUR_TEXT in v.reason  # ptoisa's first error
    if want == "unsupported":
        assert v.op == f"pto.{op}" and f"unknown operation 'pto.{op}'" in v.reason
    if want == "rejected-as-ptoas":
        assert v.text_matched is None  # PTOAS's text is not in the file: nothing to compare


@pytest.mark.parametrize(("said", "matched"), [(OUR_TEXT, True), ("another message", False)])
def test_rejection_records_whether_it_carries_ptoas_text(tmp_path, said, matched):
    p = write(tmp_path, "t.pto", "// RUN: not ptoas --pto-arch=a5 %s 2>&1 | FileCheck %s\n"
              f"// CHECK: error: 'pto.tload' op {said}\n" + kernel(bad=True))
    verdict, res = verdict_of(p, tmp_path)
    assert verdict == "rejected-as-ptoas"
    assert res.verdict().text_matched is matched


def test_split_input_file_one_verdict_per_file(tmp_path):
    text = ("// RUN: ptoas --pto-arch=a5 -split-input-file -verify-diagnostics %s\n" + kernel()
            + "// -----\n" + kernel(bad=True, expect="// expected-error @+1 {{'pto.tload' op "
                                     + OUR_TEXT + "}}"))
    verdict, res = verdict_of(write(tmp_path, "s.pto", text), tmp_path)
    assert [(o.where, o.verdict) for o in res.outcomes] == [("chunk 1", "ran"),
                                                            ("chunk 2", "rejected-as-ptoas")]
    assert res.outcomes[1].text_matched is True
    assert verdict == "ran"
    # a chunk that fails makes the file fail, whatever the others did
    text2 = text.replace("{{'pto.tload' op " + OUR_TEXT + "}}", "").replace(
        "expected-error @+1", "")
    verdict, res = verdict_of(write(tmp_path, "s2.pto", text2), tmp_path)
    assert (verdict, res.verdict().where) == ("wrongly-rejected", "chunk 2")


def test_sample_runs_on_inputs_sized_from_its_views(tmp_path, monkeypatch):
    p = write(tmp_path, "samples/Add/add.pto", kernel())
    made: list = []
    real = work.synth_args

    def spy(prog, name, target, *rest):
        args, why = real(prog, name, target, *rest)
        made.append(args)
        return args, why
    monkeypatch.setattr(work, "synth_args", spy)
    verdict, res = verdict_of(p, tmp_path)
    assert (verdict, res.kind, res.target) == ("ran", "sample", "a2a3")
    assert [a.size for a in made[0]] == [256, 256, 256]  # 16x16 views, stride 16


def test_sample_target_from_module_attribute_or_path():
    assert work.target_of('module attributes {pto.target_arch = "a5"} {', "x/y.pto") == "a5"
    assert work.target_of("module {", "samples/Qwen3DecodeA5/k.pto") == "a5"
    assert work.target_of("module {", "npu/a3/k.pto") == "a2a3"
    assert work.target_of("module {", "samples/FFN/k.pto") == "a2a3"
    assert work.target_of("module {", "samples/data5/k.pto") == "a2a3"


def test_sample_target_the_runner_script_requires(tmp_path):
    """upstream's samples/runop.sh builds some files only with --pto-arch=a5 (it skips them
    on other arches): those run on a5, the rest as before."""
    (tmp_path / "samples" / "Movfp").mkdir(parents=True)
    (tmp_path / "samples" / "runop.sh").write_text(
        'if [[ ( "$base" == "k_a" || \\\n'
        '        "$base" == "k-pto" ) && \\\n'
        '      "${case_target_arch_lc}" != "a5" ]]; then\n'
        '  echo -e "${A}(${base}.pto)\\tSKIP\\trequires --pto-arch=a5"\n  continue\nfi\n'
        'if [[ "$base" == "k_b" && "${case_target_arch_lc}" != "a3" ]]; then\n'
        '  echo -e "${A}(${base}.pto)\\tSKIP\\trequires --pto-arch=a3"\nfi\n')
    d = tmp_path / "samples" / "Movfp"
    assert work.target_of("module {", "samples/Movfp/k-pto.pto", d / "k-pto.pto") == "a5"
    assert work.target_of("module {", "samples/Movfp/k_a.pto", d / "k_a.pto") == "a5"
    assert work.target_of("module {", "samples/Movfp/k_b.pto", d / "k_b.pto") == "a2a3"
    assert work.target_of("module {", "samples/Movfp/other.pto", d / "other.pto") == "a2a3"
    # the module's own attribute still wins
    assert work.target_of('module attributes {pto.target_arch = "a3"} {', "k-pto.pto",
                          d / "k-pto.pto") == "a2a3"


def test_run_failure_is_a_verdict_with_its_error(tmp_path):
    # the view reaches 16 rows past its pointer's elements: the run fails, located
    text = kernel().replace("offsets = [%c0, %c0], sizes = [%c16, %c16]\n      : "
                            "!pto.tensor_view<16x16xf32> -> !pto.partition_tensor_view"
                            "<16x16xf32>\n    %bp",
                            "offsets = [%c16, %c0], sizes = [%c16, %c16]\n      : "
                            "!pto.tensor_view<16x16xf32> -> !pto.partition_tensor_view"
                            "<16x16xf32>\n    %bp", 1)
    assert text != kernel()
    verdict, res = verdict_of(write(tmp_path, "r.pto", text), tmp_path)
    assert verdict == "run-failed"
    assert res.verdict().reason.startswith("on synthesised inputs: ")


def test_an_exception_that_is_no_pto_error_is_a_traceback(tmp_path, monkeypatch):
    def boom(*a, **k):
        raise ZeroDivisionError("deep inside")
    monkeypatch.setattr(work, "check", boom)
    verdict, res = verdict_of(write(tmp_path, "t.pto", kernel()), tmp_path)
    assert verdict == "traceback"
    assert res.verdict().reason == "ZeroDivisionError: deep inside"
    assert "Traceback" in res.verdict().detail


def test_file_verdict_order():
    r = FileResult("f", "lit", outcomes=[Outcome("ran"), Outcome("unsupported", op="pto.vx"),
                                         Outcome("mismatch", "m")])
    assert r.verdict().verdict == "mismatch"
    r.outcomes.pop()
    assert r.verdict().verdict == "unsupported"
    r.outcomes = [Outcome("rejected-as-ptoas"), Outcome("rejected-as-ptoas")]
    assert r.verdict().verdict == "rejected-as-ptoas"
    assert FileResult("g", "lit", notes=["not checked: why"]).verdict().verdict == "not-checked"


# ---- a tilelang_st testcase ---------------------------------------------------------------

ST_COMMON = """import os
import numpy as np
def setup_case_rng(case):
    np.random.seed(len(case["name"]))
def save_case_data(name, data):
    os.makedirs(name, exist_ok=True)
    for k, a in data.items():
        a.tofile(os.path.join(name, k + ".bin"))
"""
CASES = """import numpy as np
CASES = [{"name": "f32_16x16", "dtype": np.float32, "shape": (16, 16),
          "valid_shape": (16, 16), "eps": 1e-6}]
"""
GEN_DATA = """import numpy as np
from cases import CASES
from st_common import save_case_data, setup_case_rng
IMPORT
for case in CASES:
    setup_case_rng(case)
    a = np.random.uniform(-1, 1, case["shape"]).astype(case["dtype"])
    b = np.random.uniform(-1, 1, case["shape"]).astype(case["dtype"])
    save_case_data(case["name"], {"input1": a, "input2": b, "golden": GOLDEN})
"""
MAIN_CPP = """static const TestCase kCases[] = {
    {"f32_16x16", LaunchTADD_f32_16x16, 16, 16, 16, 16, sizeof(float)},
};
"""
LAUNCH_CPP = """void LaunchTADD_f32_16x16(float *a, float *b, float *c, void *stream) {
    TADD_f32_16x16<<<1, nullptr, stream>>>((__gm__ float *)a, (__gm__ float *)b,
                                           (__gm__ float *)c);
}
"""


def tilelang(root: Path, name: str, golden: str = "a + b", imports: str = "",
             op: str = "tadd") -> Path:
    d = root / "st" / "testcase" / name
    write(root, "st/testcase/st_common.py", ST_COMMON)
    write(d, "cases.py", CASES)
    write(d, "gen_data.py", GEN_DATA.replace("GOLDEN", golden).replace("IMPORT", imports))
    write(d, "main.cpp", MAIN_CPP)
    write(d, "launch.cpp", LAUNCH_CPP)
    write(d, f"{name}.pto", kernel(op=op))
    return d


@pytest.mark.parametrize(("golden", "op", "want"), [
    ("a + b", "tadd", "matched"), ("a - b", "tadd", "mismatch"), ("a - b", "tsub", "matched")])
def test_tilelang_case_runs_gen_data_and_compares_goldens(tmp_path, golden, op, want):
    d = tilelang(tmp_path, "tadd", golden, op=op)
    [res] = do_task(Task("tilelang", d, tmp_path))
    v = res.verdict()
    assert (res.kind, v.verdict, v.where) == ("tilelang", want, "case f32_16x16"), res.to_json()
    if want == "mismatch":
        assert v.reason.startswith("256 of 256 elements differ beyond eps 1e-06; first at (0, 0)")
    assert not list(d.rglob("*.bin")) and not list(d.rglob("__pycache__"))  # ran elsewhere


PICKED_CASES = """import numpy as np
CASES = [{"name": "f32_16x16", "dtype": np.float32, "shape": (16, 16),
          "valid_shape": (16, 16), "eps": 1e-6}]
def select_compared_region(case, arr):
    return np.asarray(arr).reshape(-1)[::2]
"""
DST_CASES = """import numpy as np
CASES = [{"name": "f32_16x16", "dtype": np.float32, "dst_shape": (16, 16),
          "dst_vshape": (16, 8), "eps": 1e-6}]
"""


@pytest.mark.parametrize(("cases", "golden"), [
    # compare.py compares what cases.select_compared_region picks (the even flat elements)
    (PICKED_CASES, "np.where(np.arange(256).reshape(16, 16) % 2 == 0, a + b, 7)"),
    # a golden of the case's dst_shape is compared over its dst_vshape
    (DST_CASES, "np.where(np.arange(16) < 8, a + b, 7)")])
def test_tilelang_compares_what_upstream_compares(tmp_path, cases, golden):
    d = tilelang(tmp_path, "tadd", golden.replace("\n", ""))
    write(d, "cases.py", cases)
    if "dst_shape" in cases:
        write(d, "gen_data.py", GEN_DATA.replace('case["shape"]', '(16, 16)')
              .replace("GOLDEN", golden).replace("IMPORT", ""))
    [res] = do_task(Task("tilelang", d, tmp_path))
    assert res.verdict().verdict == "matched", res.to_json()


SRC0_VALID_CASES = """import numpy as np
CASES = [{"name": "f32_16x16", "dtype": np.float32, "shape": (16, 16),
          "valid_shape": (8, 16), "dst_vshape": (16, 16), "eps": 1e-6}]
"""


def test_tilelang_dst_vshape_wins_over_a_source_valid_shape(tmp_path):
    """tpart*'s cases.py: valid_shape is src0's, dst_vshape dst's; compare.py compares the
    golden over dst_vshape, so rows past valid_shape count."""
    golden = "np.where(np.arange(256).reshape(16, 16) < 128, a + b, 7)"
    d = tilelang(tmp_path, "tadd", golden)
    write(d, "cases.py", SRC0_VALID_CASES)
    [res] = do_task(Task("tilelang", d, tmp_path))
    v = res.verdict()
    assert v.verdict == "mismatch", res.to_json()
    assert v.reason.startswith("128 of 256 elements differ beyond eps 1e-06; first at (8, 0)")


def test_tilelang_golden_narrower_than_the_written_view(tmp_path):
    """A golden of r x 1 for a kernel that writes r rows of a wider view (trowargmax's r x 8
    dst): each golden row is compared with the start of a view row, as upstream's compare.py
    reads the output."""
    d = tilelang(tmp_path, "tadd", "(a + b)[:, :1]")
    [res] = do_task(Task("tilelang", d, tmp_path))
    assert res.verdict().verdict == "matched", res.to_json()


def test_tilelang_rows_copied_at_a_32_byte_pitch(tmp_path):
    """tpartmax's host copies its 95x95 f32 files as rows of 96 (a 32-byte pitch) into the
    buffers the kernel views with that row stride, and reads the output back the same way:
    15-float rows here, in the kernel's 16x16 views."""
    d = tilelang(tmp_path, "tadd")
    write(d, "gen_data.py", GEN_DATA.replace('case["shape"]', "(16, 15)")
          .replace("IMPORT", "").replace("GOLDEN", "a + b"))
    [res] = do_task(Task("tilelang", d, tmp_path))
    assert res.verdict().verdict == "matched", res.to_json()


def test_tilelang_without_en_dtypes_is_not_run_and_says_so(tmp_path):
    if importlib.util.find_spec("en_dtypes") is not None:
        pytest.skip("en_dtypes is installed")
    d = tilelang(tmp_path, "tadd", imports="import en_dtypes")
    [res] = do_task(Task("tilelang", d, tmp_path))
    assert res.verdict().verdict == "accepted"
    assert res.notes == ["not run: needs en-dtypes"]


def test_tilelang_gen_data_error_is_reported(tmp_path):
    d = tilelang(tmp_path, "tadd", golden="undefined_name")
    [res] = do_task(Task("tilelang", d, tmp_path))
    assert res.verdict().verdict == "accepted"
    assert res.notes[0].startswith("not run: gen_data.py failed: NameError")


def test_tilelang_gen_data_with_its_own_saver_is_not_run_and_says_so(tmp_path):
    """A gen_data.py that saves nothing the suite can see (no st_common.save_case_data, no
    case folder): the file is checked, not run, and the note says why."""
    d = tilelang(tmp_path, "tadd")
    write(d, "gen_data.py", GEN_DATA.replace("from st_common import save_case_data, ",
                                             "from st_common import ")
          .replace("IMPORT", "def save_case_data(name, data):\n    pass")
          .replace("GOLDEN", "a + b"))
    [res] = do_task(Task("tilelang", d, tmp_path))
    assert res.verdict().verdict == "accepted"
    assert res.notes == ["not run: gen_data.py saved no case through "
                         "st_common.save_case_data"]


@pytest.mark.parametrize(("golden", "want"), [("a + b", "matched"),
                                              ("a + b + 1e-7", "mismatch")])
def test_tilelang_case_folder_written_by_gen_data_itself(tmp_path, golden, want):
    """Upstream's tfillpad / texpands / tmrgsort write their case folders with a saver of
    their own: the folder of each case of cases.py is read (inputs in name order, then the
    golden, typed as the kernel's output pointer), and, with no type declared, compared bit
    for bit (an eps could hide what another type would read)."""
    d = tilelang(tmp_path, "tadd", golden)
    write(d, "gen_data.py", GEN_DATA.replace("from st_common import save_case_data, ",
                                             "from st_common import ")
          .replace("IMPORT", "import os\ndef save_case_data(name, data):\n"
                   "    os.makedirs(name, exist_ok=True)\n"
                   "    for k, v in data.items():\n"
                   "        v.tofile(os.path.join(name, k + '.bin'))")
          .replace("GOLDEN", golden))
    [res] = do_task(Task("tilelang", d, tmp_path))
    assert res.verdict().verdict == want, res.to_json()
    if want == "mismatch":
        assert res.verdict().reason.endswith("(its type taken from the kernel: compared "
                                             "exactly)")


def test_tilelang_gen_data_runs_without_arguments(tmp_path):
    """tmov's gen_data.py takes an optional case filter from sys.argv[1]: it runs as upstream
    runs it, without arguments (every case)."""
    d = tilelang(tmp_path, "tadd")
    write(d, "gen_data.py", "import sys\n" + GEN_DATA.replace("IMPORT", "").replace(
        "for case in CASES:", "for case in CASES:\n    if len(sys.argv) > 1: continue")
          .replace("GOLDEN", "a + b"))
    [res] = do_task(Task("tilelang", d, tmp_path))
    assert res.verdict().verdict == "matched", res.to_json()


def test_tilelang_output_pointer_found_by_what_the_kernel_writes(tmp_path):
    # the output first, as TCOLMIN's host code passes it: inputs go to read-only pointers
    d = tilelang(tmp_path, "tadd")
    p = d / "tadd.pto"
    p.write_text(p.read_text().replace(
        "(%a_ptr: !pto.ptr<f32>, %b_ptr: !pto.ptr<f32>,\n                            "
        "%c_ptr: !pto.ptr<f32>)",
        "(%c_ptr: !pto.ptr<f32>, %a_ptr: !pto.ptr<f32>, %b_ptr: !pto.ptr<f32>)"))
    [res] = do_task(Task("tilelang", d, tmp_path))
    assert res.verdict().verdict == "matched", res.to_json()


SCALED = """module {
  func.func @TSC_f32_16x16(%t_ptr: !pto.ptr<f32>, %c_ptr: !pto.ptr<f32>, %b_ptr: !pto.ptr<f32>,
                           %a_ptr: !pto.ptr<f32>, %s: f32) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c16 = arith.constant 16 : index
    %tv = pto.make_tensor_view %t_ptr, shape = [%c16, %c16], strides = [%c16, %c1]
      : !pto.tensor_view<16x16xf32>
    %av = pto.make_tensor_view %a_ptr, shape = [%c16, %c16], strides = [%c16, %c1]
      : !pto.tensor_view<16x16xf32>
    %bv = pto.make_tensor_view %b_ptr, shape = [%c16, %c16], strides = [%c16, %c1]
      : !pto.tensor_view<16x16xf32>
    %cv = pto.make_tensor_view %c_ptr, shape = [%c16, %c16], strides = [%c16, %c1]
      : !pto.tensor_view<16x16xf32>
    %ap = pto.partition_view %av, offsets = [%c0, %c0], sizes = [%c16, %c16]
      : !pto.tensor_view<16x16xf32> -> !pto.partition_tensor_view<16x16xf32>
    %bp = pto.partition_view %bv, offsets = [%c0, %c0], sizes = [%c16, %c16]
      : !pto.tensor_view<16x16xf32> -> !pto.partition_tensor_view<16x16xf32>
    %cp = pto.partition_view %cv, offsets = [%c0, %c0], sizes = [%c16, %c16]
      : !pto.tensor_view<16x16xf32> -> !pto.partition_tensor_view<16x16xf32>
    %a = pto.alloc_tile : !pto.tile_buf<vec, 16x16xf32>
    %b = pto.alloc_tile : !pto.tile_buf<vec, 16x16xf32>
    %c = pto.alloc_tile : !pto.tile_buf<vec, 16x16xf32>
    pto.tload ins(%ap : !pto.partition_tensor_view<16x16xf32>)
              outs(%a : !pto.tile_buf<vec, 16x16xf32>)
    pto.tload ins(%bp : !pto.partition_tensor_view<16x16xf32>)
              outs(%b : !pto.tile_buf<vec, 16x16xf32>)
    pto.tsub ins(%a, %b : !pto.tile_buf<vec, 16x16xf32>, !pto.tile_buf<vec, 16x16xf32>)
             outs(%c : !pto.tile_buf<vec, 16x16xf32>)
    pto.tmuls ins(%c, %s : !pto.tile_buf<vec, 16x16xf32>, f32)
              outs(%c : !pto.tile_buf<vec, 16x16xf32>)
    pto.tstore ins(%c : !pto.tile_buf<vec, 16x16xf32>)
               outs(%cp : !pto.partition_tensor_view<16x16xf32>)
    return
  }
}
"""
SCALED_MAIN = """static const TestCase kCases[] = {
    {"f32_16x16", DT_F32, nullptr, LaunchTSC_f32_16x16, 16, 16},
};
int RunCase() {
    ReadFile((caseDir + "/input1.bin").c_str(), size, aHost, size);
    ReadFile((caseDir + "/input2.bin").c_str(), size, bHost, size);
    tc.launchF32(cDevice, tmpDevice, aDevice, bDevice, SHOST stream);
}
"""
#: the kernel's scalar a named constant; its pointers in another order than the launcher's
SCALED_CONST = """static constexpr float SCALE = 1.5f * 2;
void LaunchTSC_f32_16x16(float *c, float *tmp, float *a, float *b, void *stream) {
    TSC_f32_16x16<<<1, nullptr, stream>>>((__gm__ float *)tmp, (__gm__ float *)c,
                                          (__gm__ float *)b, (__gm__ float *)a, SCALE);
}
"""
#: the kernel's scalar copied from a host buffer that main.cpp fills from a data file
SCALED_FILE = """void LaunchTSC_f32_16x16(float *c, float *tmp, float *a, float *b, void *s_ptr,
                         void *stream) {
    float s;
    std::memcpy(&s, s_ptr, sizeof(float));
    TSC_f32_16x16<<<1, nullptr, stream>>>((__gm__ float *)tmp, (__gm__ float *)c,
                                          (__gm__ float *)b, (__gm__ float *)a, s);
}
"""


@pytest.mark.parametrize(("launch", "golden", "want"), [
    (SCALED_CONST, "(a - b) * 3", "matched"), (SCALED_CONST, "(b - a) * 3", "mismatch"),
    (SCALED_FILE, "(a - b) * 3", "matched"), (SCALED_FILE, "(a - b) * 2", "mismatch")])
def test_tilelang_kernel_gets_what_the_host_code_passes(tmp_path, launch, golden, want):
    """Inputs go to the buffers main.cpp reads their files into (a, b: not the kernel's
    pointer order), a pointer the kernel never reads or writes (tmp) gets none, and a scalar
    is the launcher's constant expression or the value it copies from a data file."""
    d = tilelang(tmp_path, "tsc", golden)
    (d / "tsc.pto").unlink()
    write(d, "tsc.pto", SCALED)
    write(d, "launch.cpp", launch)
    by_file = "s_ptr" in launch
    write(d, "main.cpp", SCALED_MAIN.replace("SHOST", "sHost, " if by_file else ""))
    if by_file:
        write(d, "gen_data.py", GEN_DATA.replace("IMPORT", "").replace(
            '"golden": GOLDEN', '"input3": np.array([3.0], np.float32), "golden": ' + golden))
    [res] = do_task(Task("tilelang", d, tmp_path))
    assert res.verdict().verdict == want, res.to_json()
    assert not res.notes


@pytest.mark.parametrize("written_out", [True, False])
def test_tilelang_golden_goes_to_the_buffer_main_cpp_writes_out(tmp_path, written_out):
    """A kernel that also writes a source buffer (a sorted tmp stored back to src, as the
    tilelang tmrgsort topk kernels do) writes two buffers for one golden: the golden is of
    the one main.cpp's WriteFile writes out; without a WriteFile the case is not run."""
    d = tilelang(tmp_path, "tsc", "(a - b) * 3")
    (d / "tsc.pto").unlink()
    store_c = """    pto.tstore ins(%c : !pto.tile_buf<vec, 16x16xf32>)
               outs(%cp : !pto.partition_tensor_view<16x16xf32>)
"""
    scratch = store_c + store_c.replace("%cp", "%ap")
    write(d, "tsc.pto", SCALED.replace(store_c, scratch))
    write(d, "launch.cpp", SCALED_CONST)
    main = SCALED_MAIN.replace("SHOST", "")
    if written_out:
        main = main.rstrip()[:-1] + \
            '    WriteFile((caseDir + "/output.bin").c_str(), cHost, size);\n}\n'
    write(d, "main.cpp", main)
    [res] = do_task(Task("tilelang", d, tmp_path))
    if written_out:
        assert res.verdict().verdict == "matched", res.to_json()
        assert not res.notes
    else:
        assert any("cannot map 2 inputs and 1 goldens" in n for n in res.notes), res.to_json()


#: a gen_data.py that writes its golden on a second run, once output.bin exists (trandom's)
SECOND_RUN_GEN_DATA = """import os
import numpy as np
from cases import CASES
from st_common import save_case_data, setup_case_rng
for case in CASES:
    setup_case_rng(case)
    a = np.random.uniform(-1, 1, case["shape"]).astype(case["dtype"])
    b = np.random.uniform(-1, 1, case["shape"]).astype(case["dtype"])
    if os.path.exists(os.path.join(case["name"], "output.bin")):
        save_case_data(case["name"], {"input1": a, "input2": b, "golden": a + b})
    else:
        save_case_data(case["name"], {"input1": a, "input2": b})
"""


def test_tilelang_golden_written_on_gen_data_second_run(tmp_path):
    d = tilelang(tmp_path, "tadd")
    write(d, "gen_data.py", SECOND_RUN_GEN_DATA)
    [res] = do_task(Task("tilelang", d, tmp_path))
    assert res.verdict().verdict == "matched", res.to_json()
    assert not list(d.rglob("*.bin"))


def test_host_code_arguments_and_constants():
    consts = host.constants("static constexpr float K = 2.0f;\n#define N 16\n"
                            "const int32_t M = N * 2;")
    assert host.evaluate("(unsigned short)0x4200", consts) == 0x4200
    assert host.evaluate("bits_to_float(0x3FC00000U)", consts) == 1.5
    assert host.evaluate("K / 4", consts) == 0.5
    assert host.evaluate("(int16_t)M", consts) == 32
    assert host.evaluate("slope", consts) is None


def test_host_code_pointer_offsets(tmp_path):
    write(tmp_path, "launch.cpp", """
void LaunchK(void *a, float *c, void *stream) {
    uint16_t *a_ = (uint16_t *)a;
    K<<<4, nullptr, stream>>>(
        (__gm__ uint16_t *)(a_),        // the first half
        (__gm__ uint16_t *)(a_ + 16 * 2), /* the second */
        (__gm__ float *)c, (unsigned short)0x3C00);
}""")
    [lr] = host.launchers(tmp_path).values()
    assert (lr.kernel, lr.blocks) == ("K", 4)
    assert lr.args == [host.Buf(0, 0), host.Buf(0, 64), host.Buf(1, 0), host.Value(0x3C00)]


# ---- the command --------------------------------------------------------------------------

def test_discover_folds_case_folders(tmp_path):
    tilelang(tmp_path, "tadd")
    write(tmp_path, "vpto/cases/k1/kernel.pto", kernel())
    write(tmp_path, "vpto/cases/k1/golden.py", "")
    write(tmp_path, "samples/a.pto", kernel())
    write(tmp_path, "frontends/b.pto.mlir", kernel())
    write(tmp_path, "notes.txt", "")
    kinds = sorted((t.kind, t.rel()) for t in discover(tmp_path))
    assert kinds == [("file", "frontends/b.pto.mlir"), ("file", "samples/a.pto"),
                     ("tilelang", "st/testcase/tadd"), ("vpto", "vpto/cases/k1")]


def test_suite_command_table_and_json(tmp_path, capsys):
    tree = tmp_path / "tree"
    write(tree, "lit/ok.pto", "// RUN: ptoas --pto-arch=a5 %s\n" + kernel())
    write(tree, "lit/bad.pto", "// RUN: ptoas --pto-arch=a5 %s\n" + kernel(bad=True))
    write(tree, "lit/vec.pto", "// RUN: ptoas --pto-arch=a5 %s\n" + kernel(op="vselrv2"))
    write(tree, "samples/s.pto", kernel())
    tilelang(tree, "tadd")
    out = tmp_path / "s.json"
    rc = main(["suite", str(tree), "--json", str(out), "-q", "--depth", "1"])
    text = capsys.readouterr().out
    assert rc == 1  # a failure (wrongly-rejected)
    assert "lit " in text and "samples " in text and "st " in text
    assert "unsupported (refused by name): pto.vselrv2 1" in text
    assert "lit/bad.pto: wrongly-rejected: " in text
    doc = json.loads(out.read_text())
    assert doc["counts"] == {"files": 5, "ran": 2, "matched": 1, "unsupported": 1,
                             "wrongly-rejected": 1}
    assert doc["folders"]["lit"]["files"] == 3
    by = {f["path"]: f for f in doc["files"]}
    assert by["lit/vec.pto"]["op"] == "pto.vselrv2"
    assert by["st/testcase/tadd/tadd.pto"]["verdict"] == "matched"
    # --fail-on: only the verdicts named make the exit status 1
    assert main(["suite", str(tree), "-q", "--fail-on", "traceback"]) == 0
    capsys.readouterr()
    assert main(["suite", str(tmp_path / "none")]) == 2


def _sleep(seconds: float) -> float:
    time.sleep(seconds)
    return seconds


def test_pool_times_out_a_task_and_goes_on():
    got = dict(pool.run_all(_sleep, [0.0, 30.0, 0.0], jobs=2, timeout=1.0,
                            on_timeout=lambda t: f"timeout {t}"))
    assert got == {0: 0.0, 1: "timeout 30.0", 2: 0.0}



GATHER = """module {
  func.func @g() {
    %src = pto.alloc_tile : !pto.tile_buf<vec, 1x32xf16>
    %ix = pto.alloc_tile : !pto.tile_buf<vec, 1x32xi32>
    %dst = pto.alloc_tile : !pto.tile_buf<vec, 1x32xf16>
    pto.tgather ins(%src, %ix : !pto.tile_buf<vec, 1x32xf16>, !pto.tile_buf<vec, 1x32xi32>)
                outs(%dst : !pto.tile_buf<vec, 1x32xf16>)
    return
  }
}
"""


def test_a_file_without_run_lines_refused_by_a_ptoas_rule(tmp_path):
    """A frontend's file or a sample (no RUN line to say what PTOAS does) refused by one of
    PTOAS's own verifier rules is one today's PTOAS refuses too; refused by a rule of ours
    alone, it stays wrongly rejected."""
    verdict, res = verdict_of(write(tmp_path, "fe/k.pto", GATHER), tmp_path)
    assert verdict == "rejected-as-ptoas"
    assert "index-form tgather expects both indices and tmp" in res.verdict().reason
    assert "PTOAS's own rule" in res.verdict().reason
    verdict, _ = verdict_of(write(tmp_path, "fe/bad.pto", kernel(bad=True)), tmp_path)
    assert verdict == "wrongly-rejected"


MATMUL_FROM_VEC = """module attributes {pto.target_arch = "TARGET"} {
  func.func @mm() {
    %a = pto.alloc_tile : !pto.tile_buf<vec, 16x16xf16>
    %b = pto.alloc_tile : !pto.tile_buf<vec, 16x16xf16>
    %c = pto.alloc_tile : !pto.tile_buf<acc, 16x16xf32, blayout=col_major, slayout=row_major>
    pto.tmatmul ins(%a, %b : !pto.tile_buf<vec, 16x16xf16>, !pto.tile_buf<vec, 16x16xf16>)
                outs(%c : !pto.tile_buf<acc, 16x16xf32, blayout=col_major, slayout=row_major>)
    return
  }
}
"""


@pytest.mark.parametrize("target", ["a3", "a5"])
def test_a_file_refused_by_a_ptoas_rule_cited_from_its_source(tmp_path, target):
    """A rule PTOAS's verifier makes (its source says so: ptoas_source.py), though no lit test
    shows it: a file without RUN lines it refuses is rejected as PTOAS rejects it, with
    PTOAS's words and the citation."""
    text = MATMUL_FROM_VEC.replace("TARGET", target)
    verdict, res = verdict_of(write(tmp_path, "fe/mm.pto", text), tmp_path)
    reason = res.verdict().reason
    assert verdict == "rejected-as-ptoas", reason
    assert ("tmatmul: aMatrix must be a Left tile, got Vec (PTOAS: expects lhs, rhs, and dst "
            "to use the left, right, and acc address spaces)") in reason
    assert "PTOAS's own rule, lib/PTO/IR/PTO.cpp:verifyMatTileOperandsA2A3" in reason


def test_a_pto_as_program_is_rejected_as_ptoas_rejects_it(tmp_path):
    """PTOAS reads MLIR: a PTO-AS program (no RUN line) is refused at its first top-level
    statement, in MLIR's words, as PTOAS refuses it."""
    text = "// PTO-AS\nfunc @f(%x: !pto.tile<8x8xf32>) {\n  %y = tadd %x, %x\n}\n"
    verdict, res = verdict_of(write(tmp_path, "fe/old.pto", text), tmp_path)
    reason = res.verdict().reason
    assert verdict == "rejected-as-ptoas", reason
    assert "old.pto:2:1: error: custom op 'func' is unknown (tried 'builtin.func' as well)" \
        in reason
    assert "tools/ptoas/driver.cpp:parseTextualModule" in reason


def test_a_tilelang_kernel_ptoas_refuses_is_rejected_as_ptoas(tmp_path):
    """A tilelang_st kernel has no RUN line either: PTOAS refusing it by its own rule, the
    folder's file is rejected-as-ptoas (its cases are not run, nor counted as failures)."""
    d = tilelang(tmp_path, "tmm")
    write(d, "tmm.pto", MATMUL_FROM_VEC.replace("TARGET", "a5"))
    [res] = do_task(Task("tilelang", d, tmp_path))
    v = res.verdict()
    assert (res.kind, v.verdict) == ("tilelang", "rejected-as-ptoas"), res.to_json()
    assert "(PTOAS: expects lhs, rhs, and dst to use" in v.reason


def test_an_operation_not_executed_yet_is_refused_by_its_name():
    # the message need not spell "operation 'X' cannot be executed": the error's class says
    # it, and its op (set as it leaves the instruction) is the name
    from ptoisa.errors import ExecutionError, NotExecutedYet

    err = NotExecutedYet("the source has the packed type f4E2M1x2, which ptoisa does not "
                         "execute yet").at_op("mte_l1_l0a", None)
    assert work.refused_op(err) == "mte_l1_l0a"
    assert work.refused_op(ExecutionError("deadlock", op="tpop")) is None

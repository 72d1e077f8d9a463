"""``ptoisa suite``'s made-up inputs (``ptoisa/suite/synth.py``): integer arguments chosen
so that the program runs (an offset 0, a view extent large enough, a count under which the
loop body runs), arrays as large as the views the program makes under those values, on-chip
pointer arguments, and honest verdicts when no input can make a file run: a real
out-of-bounds access still fails with the bound's error; a loop no input makes run is said."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from ptoisa import load
from ptoisa.errors import PtoError
from ptoisa.suite import Task, do_task, synth
from ptoisa.suite.result import FileResult
from ptoisa.targets import get_target
from ptoisa.vector.regs import Ptr

TILE = "!pto.tile_buf<vec, 1x16xf32>"
PART = "!pto.partition_tensor_view<1x16xf32>"


def sample(args: str, body: str, view_rows: str = "%c16") -> str:
    """A vector kernel over a ROWSx16 f32 view of %src copied row by row into %dst (same
    shape); ``body`` uses %sv / %dv (the views), %t (a 1x16 tile) and the constants."""
    return f"""module {{
  func.func @k(%src: !pto.ptr<f32>, %dst: !pto.ptr<f32>{args}) {{
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c16 = arith.constant 16 : index
    %sv = pto.make_tensor_view %src, shape = [{view_rows}, %c16], strides = [%c16, %c1]
      : !pto.tensor_view<?x16xf32>
    %dv = pto.make_tensor_view %dst, shape = [{view_rows}, %c16], strides = [%c16, %c1]
      : !pto.tensor_view<?x16xf32>
    %t = pto.alloc_tile : {TILE}
{body}
    return
  }}
}}
"""


def copy_row(row: str, indent: str = "    ") -> str:
    """Load row ``row`` of %sv into %t and store it to the same row of %dv."""
    return "\n".join(indent + x for x in (
        f"%p = pto.partition_view %sv, offsets = [{row}, %c0], sizes = [%c1, %c16]"
        f" : !pto.tensor_view<?x16xf32> -> {PART}",
        f"pto.tload ins(%p : {PART}) outs(%t : {TILE})",
        f"%q = pto.partition_view %dv, offsets = [{row}, %c0], sizes = [%c1, %c16]"
        f" : !pto.tensor_view<?x16xf32> -> {PART}",
        f"pto.tstore ins(%t : {TILE}) outs(%q : {PART})"))


def verdict(tmp_path: Path, text: str) -> tuple[str, FileResult]:
    p = tmp_path / "samples" / "k.pto"
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text)
    [res] = do_task(Task("file", p, tmp_path))
    return res.verdict().verdict, res


def test_an_offset_argument_gets_a_value_inside_the_view(tmp_path):
    # %row is a row offset into a 16-row view: the old default (16) is out of bounds
    v, res = verdict(tmp_path, sample(", %row: index", copy_row("%row")))
    assert v == "ran", res.verdict().reason
    assert res.verdict().reason == "ran with %row=0"


def test_a_view_extent_argument_gets_the_size_the_partitions_need(tmp_path):
    # the view's rows come from %n; the kernel loads 4 rows from row 0: %n must be >= 4
    body = "\n".join([
        "    %c4 = arith.constant 4 : index",
        "    %t4 = pto.alloc_tile : !pto.tile_buf<vec, 4x16xf32>",
        "    %p = pto.partition_view %sv, offsets = [%c0, %c0], sizes = [%c4, %c16]"
        " : !pto.tensor_view<?x16xf32> -> !pto.partition_tensor_view<4x16xf32>",
        "    pto.tload ins(%p : !pto.partition_tensor_view<4x16xf32>)"
        " outs(%t4 : !pto.tile_buf<vec, 4x16xf32>)"])
    text = sample(", %n: index", body, view_rows="%n")
    prog = load(text)
    cf = prog.compiler("a2a3").function("k")
    assert synth.roles(cf) == {"n": {"extent"}}
    assert synth.largest_size(cf) == 16
    # the arrays are as large as the views reach under each plan's values
    args, _ = synth.make_args(cf, synth.Plan((("n", 5),)), get_target("a2a3"), False)
    assert [a.size for a in args[:2]] == [80, 80] and args[2] == 5
    v, res = verdict(tmp_path, text)
    assert (v, res.verdict().reason) == ("ran", "ran with %n=16")


def test_an_access_out_of_bounds_for_every_candidate_still_fails_with_its_bound(tmp_path):
    # row %row + 16 of a 16-row view: out of bounds whatever %row is (every candidate >= 0)
    body = "    %r = arith.addi %row, %c16 : index\n" + copy_row("%r")
    v, res = verdict(tmp_path, sample(", %row: index", body))
    assert v == "run-failed"
    reason = res.verdict().reason
    assert reason.startswith("on synthesised inputs: ")
    assert "outside the view's extent 16" in reason
    assert "candidate inputs" in reason


def test_a_constant_out_of_bounds_access_is_not_hidden(tmp_path):
    v, res = verdict(tmp_path, sample("", copy_row("%c16")))
    assert v == "run-failed"
    assert "partition_view: dim 0 [16, 17) outside the view's extent 16" in res.verdict().reason


def test_a_count_prefers_values_under_which_the_loop_runs(tmp_path):
    # %n is a loop count and (minus one) a row offset: the guess (0) runs the loop zero times,
    # so the search goes on to a value under which the body runs
    body = "\n".join([
        "    scf.for %i = %c0 to %n step %c1 {",
        "      %last = arith.subi %n, %c1 : index",
        copy_row("%last", "      "),
        "    }"])
    v, res = verdict(tmp_path, sample(", %n: index", body))
    assert v == "ran"
    assert res.verdict().reason == "ran with %n=16"
    assert not res.notes


def test_a_loop_no_candidate_runs_is_said(tmp_path):
    # the loop starts at %n and ends at 0: no candidate (all >= 0) runs its body
    body = "\n".join([
        "    scf.for %i = %n to %c0 step %c1 {",
        copy_row("%i", "      "),
        "    }"])
    v, res = verdict(tmp_path, sample(", %n: index", body))
    assert v == "ran"
    assert "loops run zero times: scf.for at line" in res.verdict().reason
    assert any("run zero times" in n for n in res.notes)


def test_index_arrays_get_non_negative_values_when_negative_ones_fail(tmp_path):
    # the row is 12 + an element of an i32 array: the default fill [-8, 8) gives row 16
    # (this seed), past the view; [0, 4) keeps it inside
    body = "\n".join([
        "    %c12 = arith.constant 12 : index",
        "    %r32 = pto.load_scalar %rows[%c0] : !pto.ptr<i32> -> i32",
        "    %r0 = arith.index_cast %r32 : i32 to index",
        "    %r = arith.addi %r0, %c12 : index",
        copy_row("%r")])
    v, res = verdict(tmp_path, sample(", %rows: !pto.ptr<i32>", body))
    assert v == "ran"
    assert res.verdict().reason == "ran with integer arrays in [0, 4)"


def test_load_scalar_indices_size_the_pointer(tmp_path):
    body = "\n".join([
        "    %c40 = arith.constant 40 : index",
        "    %x = pto.load_scalar %rows[%c40] : !pto.ptr<i32> -> i32"])
    text = sample(", %rows: !pto.ptr<i32>", body)
    prog = load(text)
    cf = prog.compiler("a2a3").function("k")
    args, _ = synth.make_args(cf, synth.Plan(), get_target("a2a3"), False)
    assert args[2].size == 41
    assert verdict(tmp_path, text)[0] == "ran"


def test_a_call_to_an_external_function_is_refused_by_name(tmp_path):
    text = sample("", "    func.call @ext() : () -> ()").replace(
        "module {", "module {\n  func.func private @ext()")
    v, res = verdict(tmp_path, text)
    assert v == "unsupported"
    assert res.verdict().op == "func.call"
    assert "@ext is declared without a body" in res.verdict().reason


def test_on_chip_pointer_arguments_are_pointers_into_the_buffer():
    text = """module {
  func.func @k(%a: !pto.ptr<f32, ub>, %b: !pto.ptr<f16, ub>, %n: index) {
    return
  }
}
"""
    prog = load(text)
    cf = prog.compiler("a5").function("k")
    args, why = synth.make_args(cf, synth.Plan(), get_target("a5"), False)
    assert why == ""
    a, b, n = args
    assert isinstance(a, Ptr) and isinstance(b, Ptr)
    # (one register into each share: a load may read before its pointer)
    assert (a.space, b.space, a.addr) == ("ub", "ub", 256)
    assert b.addr - 256 >= 128 * 1024 and b.addr % 256 == 0  # its own half of the a5 UB
    prog.run("k", a, b, 3, target="a5")
    with pytest.raises(PtoError, match=r"must be a pointer into ub of f32, got Ptr\(ub"):
        prog.run("k", b, b, 3, target="a5")


def test_plans_start_from_the_uses_and_do_not_repeat():
    text = sample(", %row: index, %n: index", copy_row("%row"), view_rows="%n")
    cf = load(text).compiler("a2a3").function("k")
    ps = synth.plans([cf])
    assert ps[0] == synth.Plan((("n", 16), ("row", 0)))
    assert ps[1] == synth.Plan()
    keys = [(p.value("n"), p.value("row"), p.signed) for p in ps]
    assert len(keys) == len(set(keys)) <= synth.MAX_PLANS


def test_a_loop_of_constant_bounds_that_runs_zero_times_is_no_input_s_doing(tmp_path):
    body = "\n".join([
        "    scf.for %i = %c16 to %c0 step %c1 {",
        copy_row("%i", "      "),
        "    }",
        copy_row("%row")])
    v, res = verdict(tmp_path, sample(", %row: index", body))
    assert (v, res.verdict().reason, res.notes) == ("ran", "ran with %row=0", [])


def test_huge_views_get_zeros_the_os_gives_on_first_touch(tmp_path):
    # 2^23 rows of 16: 128M elements (512 MiB of f32), of which the kernel reads one row
    text = sample("", copy_row("%c0")).replace(
        "    %c16 = arith.constant 16 : index",
        "    %c16 = arith.constant 16 : index\n    %big = arith.constant 8388608 : index")
    text = text.replace("shape = [%c16, %c16]", "shape = [%big, %c16]")
    v, res = verdict(tmp_path, text)
    assert v == "ran", res.verdict().reason
    assert res.verdict().reason == ("ran with zeros in %src (134217728 elements), "
                                    "%dst (134217728 elements)")


def test_the_failure_reported_is_the_furthest_run_and_a_completed_run_wins():
    err = PtoError("x")
    a = synth.Tried(synth.Plan(), err, executed=3)
    b = synth.Tried(synth.Plan(default=0), err, executed=7)
    c = synth.Tried(synth.Plan(default=1), err, executed=7)
    assert synth.best([a, b, c]) is b  # the furthest; the earliest of equals
    idle = synth.Tried(synth.Plan(default=2), None, 5, idle_loops=["loop"])
    done = synth.Tried(synth.Plan(default=3), None, 1)
    assert synth.best([a, idle]) is idle
    assert synth.best([a, idle, b]) is b  # a body that ran further failed: not hidden
    assert synth.best([a, idle, done, b]) is done
    made = synth.Tried(synth.Plan(default=4), synth.NotMade("too big"), executed=-1)
    assert synth.best([made, a]) is a


def test_a_cube_and_vector_pair_shares_its_buffers():
    text = """module {
  func.func @c(%x: !pto.ptr<f32>, %n: index) attributes {KIND<cube>} {
    return
  }
  func.func @v(%x: !pto.ptr<f32>, %y: !pto.ptr<f16>) attributes {KIND<vector>} {
    return
  }
}
""".replace("KIND", "pto.kernel_kind = #pto.kernel_kind")
    prog = load(text)
    cfs = [prog.compiler("a2a3").function(n) for n in ("c", "v")]
    small = np.zeros(4, np.float32)
    big = np.zeros(8, np.float32)
    other = np.zeros(8, np.float16)
    lists = [[small, 3], [big, other]]
    synth.share(cfs, lists)
    assert lists[0][0] is big and lists[1][0] is big and lists[1][1] is other


def test_a_zero_trip_run_does_not_hide_a_failure_in_the_loop_body(tmp_path):
    # under every %n > 0 the body copies row 0, then reads a local array element never
    # written (refused by name: there is no value to read); %n = 0 completes without running
    # the body: the refusal is the verdict
    body = "\n".join([
        "    %a = pto.declare_local_array -> !pto.local_array<16xi32>",
        "    scf.for %i = %c0 to %n step %c1 {",
        copy_row("%c0", "      "),
        "      %r = pto.local_array_get %a[%c0] : !pto.local_array<16xi32> -> i32",
        "    }"])
    v, res = verdict(tmp_path, sample(", %n: index", body))
    assert v == "unsupported", res.verdict().reason
    assert "is read before any pto.local_array_set wrote it" in res.verdict().reason


def test_a_zero_trip_run_wins_over_out_of_bounds_runs_and_says_so(tmp_path):
    # the body reads row %n + 16 of a 16-row view: every %n that runs it is out of bounds
    # (the made-up values' doing, as far as the suite can tell): the zero-trip run is kept
    body = "\n".join([
        "    %r = arith.addi %n, %c16 : index",
        "    scf.for %i = %c0 to %n step %c1 {",
        copy_row("%c0", "      "),
        copy_row("%r", "      ").replace("%p ", "%p2 ").replace("%p :", "%p2 :")
        .replace("%q ", "%q2 ").replace("%q)", "%q2)"),
        "    }"])
    v, res = verdict(tmp_path, sample(", %n: index", body))
    assert v == "ran"
    assert res.verdict().reason.startswith("ran with %n=0; loops run zero times: scf.for")


def test_a_valid_size_argument_gets_its_tile_s_whole_dimension(tmp_path):
    # %v is the valid rows of a 4-row tile added into a whole 4x16 tile: only 4 runs
    dyn = ("!pto.tile_buf<loc=vec, dtype=f32, rows=4, cols=16, v_row=?, v_col=16, "
           "blayout=row_major, slayout=none_box, fractal=512, pad=0>")
    whole = "!pto.tile_buf<vec, 4x16xf32>"
    body = "\n".join([
        f"    %d = pto.alloc_tile valid_row = %v : {dyn}",
        f"    %w = pto.alloc_tile : {whole}",
        f"    %o = pto.alloc_tile : {whole}",
        f"    pto.tadd ins(%w, %d : {whole}, {dyn}) outs(%o : {whole})"])
    text = sample(", %v: index", body)
    cf = load(text).compiler("a2a3").function("k")
    assert synth.full_valid(cf) == {"v": 4}
    v, res = verdict(tmp_path, text)
    assert (v, res.verdict().reason) == ("ran", "ran with %v=4")


def value_args_sample(args: str, body: str, ret: str = "") -> str:
    """An a5 module of one function @u taking ``args`` (lit/vmi_new's unit functions)."""
    return f"""module attributes {{pto.target_arch = "a5"}} {{
  func.func @u({args}){ret} {{
{body}
  }}
}}
"""


@pytest.mark.parametrize(("args", "body", "ret"), [
    # a VMI unit function returning a vreg (any layout) and a mask
    ("%a: !pto.vmi.vreg<64xf32>, %b: !pto.vmi.vreg<64xf32, #pto.vmi.layout<contiguous>>",
     "    %s = pto.vmi.addf %a, %b : !pto.vmi.vreg<64xf32>, "
     "!pto.vmi.vreg<64xf32, #pto.vmi.layout<contiguous>> -> !pto.vmi.vreg<64xf32>\n"
     "    return %s : !pto.vmi.vreg<64xf32>", " -> !pto.vmi.vreg<64xf32>"),
    ("%m: !pto.vmi.mask<64xpred>, %a: !pto.vmi.vreg<64xi32>",
     "    %r = pto.vmi.select %m, %a, %a : !pto.vmi.mask<64xpred>, !pto.vmi.vreg<64xi32>, "
     "!pto.vmi.vreg<64xi32> -> !pto.vmi.vreg<64xi32>\n    return %r : !pto.vmi.vreg<64xi32>",
     " -> !pto.vmi.vreg<64xi32>"),
    # vector and predicate registers
    ("%a: !pto.vreg<128xbf16>, %m: !pto.mask<b16>",
     "    %r = pto.vadd %a, %a, %m : !pto.vreg<128xbf16>, !pto.vreg<128xbf16>, !pto.mask<b16> "
     "-> !pto.vreg<128xbf16>\n    return %r : !pto.vreg<128xbf16>", " -> !pto.vreg<128xbf16>"),
    # tiles: static and ? valid dims
    (f"%a: {TILE}, %d: {TILE}",
     f"    pto.tadd ins(%a, %a : {TILE}, {TILE}) outs(%d : {TILE})\n    return", ""),
    ("%a: !pto.tile_buf<vec, 8x16xf16, valid=?x?>, %d: !pto.tile_buf<vec, 8x16xf16, valid=?x?>",
     "    pto.tabs ins(%a : !pto.tile_buf<vec, 8x16xf16, valid=?x?>) "
     "outs(%d : !pto.tile_buf<vec, 8x16xf16, valid=?x?>)\n    return", ""),
])
def test_register_and_tile_arguments_are_made_up_and_the_function_runs(tmp_path, args, body,
                                                                       ret):
    v, res = verdict(tmp_path, value_args_sample(args, body, ret))
    assert v == "ran", (res.verdict().reason, res.notes)
    assert not res.notes


def test_made_up_registers_follow_the_array_conventions():
    from ptoisa.interp.value_args import register_spec
    from ptoisa.ir import types as T
    from ptoisa.vector.logical import LMask, LVec
    from ptoisa.vector.regs import Mask, VReg

    v = synth._register(register_spec(T.OpaqueType("!pto.vmi.vreg<64xf32>")), "x", True)
    assert isinstance(v, LVec) and v.data.dtype == np.float32
    assert np.all(np.abs(v.data) < 1) and len(set(v.data.tolist())) > 32
    # the same name, the same values (deterministic); integers in [-8, 8)
    w = synth._register(register_spec(T.OpaqueType("!pto.vreg<64xi32>")), "x", True)
    assert isinstance(w, VReg) and w.data.dtype == np.int32
    assert w.data.min() >= -8 and w.data.max() < 8
    m = synth._register(register_spec(T.OpaqueType("!pto.vmi.mask<32xpred>")), "m", True)
    assert isinstance(m, LMask) and m.bits.shape == (32,) and 0 < m.bits.sum() < 32
    p = synth._register(register_spec(T.OpaqueType("!pto.mask<b32>")), "m", True)
    assert isinstance(p, Mask) and p.gran == "b32" and p.lanes(64).shape == (64,)
    # a float kept as codes (hif8) gets zeros: random codes may be NaN
    h = synth._register(register_spec(T.OpaqueType("!pto.vmi.vreg<256xhif8>")), "x", True)
    assert h is not None and not h.data.any()


def test_an_argument_that_cannot_be_made_is_not_run_and_named(tmp_path):
    text = value_args_sample("%e: !pto.pipe", "    return")
    v, res = verdict(tmp_path, text)
    assert v == "accepted"
    assert res.notes == ["not run: argument %e of type !pto.pipe cannot be made up"]


def test_a_builtin_vector_argument_is_an_array_of_its_shape(tmp_path):
    # TMRGSORT's executed-count list: a vector<4xi16> the kernel writes
    text = value_args_sample("%e: vector<4xi16>", "    return")
    v, res = verdict(tmp_path, text)
    assert v == "ran", res.notes
    prog = load(text)
    args, _ = synth.make_args(prog.compiler("a5").function("u"), synth.Plan(),
                              get_target("a5"), False)
    assert args[0].shape == (4,) and args[0].dtype == np.int16


def signal_sample(waits: str) -> str:
    """A vector kernel whose one-word signal (%sig, an i32 pointer argument) is waited on by
    ``waits`` (pto.comm ops on %s), then 16 floats of %src copied to %dst."""
    sig = "!pto.partition_tensor_view<1xi32>"
    return sample(", %sig: !pto.ptr<i32>", f"""    %sv1 = pto.make_tensor_view %sig, shape = [%c1],
      strides = [%c1] : !pto.tensor_view<1xi32>
    %s = pto.partition_view %sv1, offsets = [%c0], sizes = [%c1]
      : !pto.tensor_view<1xi32> -> {sig}
""" + waits.replace("SIG", sig) + copy_row("%c0"))


def test_a_wait_only_another_rank_satisfies_runs_with_the_signal_preset(tmp_path):
    # the signal is an input another rank sets: preset to what its notify leaves, the
    # kernel runs alone (GT 7: a word of 8)
    v, res = verdict(tmp_path, signal_sample(
        "    %v = arith.constant 7 : i32\n"
        "    pto.comm.twait(%s, %v : SIG, i32) {cmp = #pto<wait_cmp gt>}\n"))
    assert v == "ran", (res.verdict().reason, res.notes)
    assert "%sig signal words [0] preset to [8]" in res.verdict().reason


def test_a_wait_the_kernel_itself_undoes_is_not_run_and_says_so(tmp_path):
    # after the preset word passes the first wait the kernel clears it and waits again:
    # only another actor could set it, so the file is not run (no second preset)
    v, res = verdict(tmp_path, signal_sample(
        "    %v = arith.constant 1 : i32\n    %z = arith.constant 0 : i32\n"
        "    pto.comm.twait(%s, %v : SIG, i32) {cmp = #pto<wait_cmp eq>}\n"
        "    pto.comm.tnotify(%s, %z : SIG, i32) {notifyOp = #pto<notify_op set>}\n"
        "    pto.comm.twait(%s, %v : SIG, i32) {cmp = #pto<wait_cmp eq>}\n"))
    assert v == "accepted"
    assert any("a wait for a signal only another rank or process sets" in n
               for n in res.notes), res.notes


def test_a_tile_argument_of_a_cube_and_vector_pair_is_a_tile_of_each_core(tmp_path):
    text = f"""module {{
  func.func @c(%t: {TILE}) attributes {{KIND<cube>}} {{
    return
  }}
  func.func @v(%x: !pto.ptr<f32>) attributes {{KIND<vector>}} {{
    return
  }}
}}
""".replace("KIND", "pto.kernel_kind = #pto.kernel_kind")
    v, res = verdict(tmp_path, text)
    assert v == "ran", res.notes


def test_an_on_chip_memref_of_a_dynamic_shape_is_made_a_pointer_into_its_buffer(tmp_path):
    m = "memref<?xui16, #pto.address_space<mat>>"
    body = ("    %c32 = arith.constant 32 : i64\n    %c3 = arith.constant 3 : i64\n"
            "    %v = arith.constant 4660 : i32\n"
            f"    pto.raw_fill_l1 %d, %c32, %v, %c3, %c3, %c3 {{fill_word_bits = 16 : i64}} "
            f": {m}, i64, i32, i64, i64, i64\n    return")
    v, res = verdict(tmp_path, value_args_sample(f"%d: {m}", body))
    assert v == "ran", (res.verdict().reason, res.notes)
    prog = load(value_args_sample(f"%d: {m}, %e: {m}", "    return"), target="a5")
    args, _ = synth.make_args(prog.compiler("a5").function("u"), synth.Plan(),
                              get_target("a5"), False)
    assert [(a.space, a.addr) for a in args] == [("mat", 256), ("mat", 262144 + 256)]


def test_integer_vector_lanes_get_a_try_without_repeats_or_zeros(tmp_path):
    # scatter indices must not repeat (random lanes do): the try of lanes 1..N runs
    v_ = "!pto.vmi.vreg<64xf32>"
    i_ = "!pto.vmi.vreg<64xi32>"
    m_ = "!pto.vmi.mask<64xpred>"
    body = (f"    pto.vmi.vscatter %v, %dst, %i, %m : {v_}, !pto.ptr<f32, ub>, {i_}, {m_}\n"
            "    return")
    v, res = verdict(tmp_path, value_args_sample(
        f"%v: {v_}, %dst: !pto.ptr<f32, ub>, %i: {i_}, %m: {m_}", body))
    assert v == "ran", (res.verdict().reason, res.notes)
    assert res.verdict().reason == "ran with integer vector lanes 1..N in a random order"
    from ptoisa.interp.value_args import register_spec
    from ptoisa.ir import types as T

    lanes = synth._register(register_spec(T.OpaqueType("!pto.vreg<128xi16>")), "x", True,
                            distinct=True).data
    assert sorted(lanes.tolist()) == list(range(1, 129))

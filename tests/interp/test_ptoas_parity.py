"""PTOAS parity of the `.pto` front end: programs PTOAS rejects are rejected with PTOAS's
reason, programs it accepts are accepted, and no program makes ptoisa raise anything but a
located ptoisa error (each case here once crashed with a Python traceback)."""

from __future__ import annotations

import re

import pytest

from ptoisa import load
from ptoisa.errors import PtoError

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")


def _tile(loc: str, dtype: str, rows: int, cols: int, bl: str = "row_major",
          sl: str = "none_box", fractal: int = 512) -> str:
    return (f"!pto.tile_buf<loc={loc}, dtype={dtype}, rows={rows}, cols={cols}, v_row={rows}, "
            f"v_col={cols}, blayout={bl}, slayout={sl}, fractal={fractal}, pad=0>")


def _fails(text: str, match: str, target: str = "a2a3", run: str | None = None,
           *args: object) -> None:
    """``text`` is rejected (or, with ``run``, fails when function ``run`` runs) with a ptoisa
    error matching ``match`` - never another exception."""
    with pytest.raises(PtoError, match=match):
        prog = load(text, target=target)
        if run is not None:
            prog.run(run, *args, target=target)


# ---- no traceback --------------------------------------------------------------------------

def test_mx_scales_of_a_wide_type_are_refused_by_name() -> None:
    """PTOAS's emitc tests give TGEMV_MX f16 `loc=scaling` tiles; the cube reads one E8M0 byte
    per scale, and what it makes of a wider type is not documented: a run-time error naming
    the operand (was numpy's broadcast ValueError)."""
    a = _tile("left", "f8E5M2", 1, 128, "col_major", "row_major")
    sa = _tile("scaling", "f16", 1, 4, "row_major", "row_major", 32)
    b = _tile("right", "f8E5M2", 128, 32, "row_major", "col_major")
    sb = _tile("scaling", "f16", 4, 32, "row_major", "row_major", 32)
    c = _tile("acc", "f32", 1, 32, "col_major", "row_major", 1024)
    text = f"""module {{
  func.func @k() attributes {{pto.kernel_kind = #pto.kernel_kind<cube>}} {{
    %a = pto.alloc_tile : {a}
    %sa = pto.alloc_tile : {sa}
    %b = pto.alloc_tile : {b}
    %sb = pto.alloc_tile : {sb}
    %c = pto.alloc_tile : {c}
    pto.tgemv.mx ins(%a, %sa, %b, %sb : {a}, {sa}, {b}, {sb}) outs(%c : {c})
    return
  }}
}}
"""
    _fails(text, "aScaleMatrix has element type f16", "a5", "k")


_REBIND = """module {
  func.func @k(%out: !pto.ptr<f16>) attributes {pto.entry} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c16 = arith.constant 16 : index
    %a0 = arith.constant 0 : i64
    %a1 = arith.constant 4096 : i64
    %v = pto.make_tensor_view %out, shape = [%c16, %c16], strides = [%c16, %c1]
      : !pto.tensor_view<?x?xf16>
    %p = pto.partition_view %v, offsets = [%c0, %c0], sizes = [%c16, %c16]
      : !pto.tensor_view<?x?xf16> -> !pto.partition_tensor_view<16x16xf16>
    %t = pto.alloc_tile addr = %a0 : TILE
    scf.for %i = %c0 to %c2 step %c1 {
      %first = arith.cmpi eq, %i, %c0 : index
      %addr = scf.if %first -> (i64) {
        scf.yield %a0 : i64
      } else {
        scf.yield %a1 : i64
      }
      %ti = pto.tassign %t, %addr : TILE -> TILE
      %f = arith.index_cast %i : index to i32
      %s = arith.sitofp %f : i32 to f16
      pto.texpands ins(%s : f16) outs(%ti : TILE)
      pto.tstore ins(%ti : TILE) outs(%p : !pto.partition_tensor_view<16x16xf16>)
    }
    return
  }
}
""".replace("TILE", _tile("vec", "f16", 16, 16))


def test_tassign_result_is_the_placed_tile() -> None:
    """``%r = pto.tassign %t, %addr``: %r is %t, placed (its uses read None before)."""
    import numpy as np

    out = np.zeros(256, np.float16)
    load(_REBIND, target="a5").run("k", out, target="a5")
    np.testing.assert_array_equal(out, np.ones(256, np.float16))


@pytest.mark.parametrize("level", ["level1", "level2"])
def test_tassign_needs_level3(level: str) -> None:
    from ptoisa.interp.verify import diagnose
    from ptoisa.text import parse

    errors = diagnose(parse(_REBIND, "x.pto"), "a5", level=level)
    assert any("pto.tassign is only supported when --pto-level=level3" in e.render()
               for e in errors)
    assert not diagnose(parse(_REBIND, "x.pto"), "a5", level="level3")


def test_call_with_the_wrong_argument_count_is_rejected() -> None:
    text = """module {
  func.func @f(%x: i32) {
    return
  }
  func.func @k() attributes {pto.entry} {
    %c = arith.constant 1 : i32
    func.call @f(%c, %c) : (i32, i32) -> ()
    return
  }
}
"""
    _fails(text, r"incorrect number of operands for callee \(@f takes 1, the call has 2\)")


def test_call_to_an_external_function_is_a_run_time_error() -> None:
    """A declaration without a body (PTOAS's nested_resolve_reserved_buffers.pto): checks, and
    a call to it is a located error when run (was zip's ValueError)."""
    text = """module {
  func.func @k() attributes {pto.entry} {
    %c = arith.constant 1 : i32
    func.call @consume(%c) : (i32) -> ()
    return
  }
  func.func private @consume(i32)
}
"""
    _fails(text, "@consume is declared without a body", "a2a3", "k")


def test_on_chip_memref_that_is_no_tile_is_refused_by_name() -> None:
    """PTOAS's plan-memory tests allocate rank-3 UB memrefs and TLOAD into them: an error
    naming the op when run (the tile instructions got a bare array: AttributeError `_vr`)."""
    m3 = "memref<4x4x4xf16, #pto.address_space<vec>>"
    g3 = "memref<4x4x4xf16, #pto.address_space<gm>>"
    text = f"""module {{
  func.func @k(%a: {g3}) {{
    %u = memref.alloc() : {m3}
    pto.tload ins(%a : {g3}) outs(%u : {m3})
    return
  }}
}}
"""
    import numpy as np

    _fails(text, "cannot be executed by ptoisa yet: .* not a tile", "a2a3", "k",
           np.zeros((4, 4, 4), np.float16))


_ACC = _tile("acc", "f32", 16, 16, "col_major", "row_major", 1024)
_PUSH = """module {
  func.func @k(%buf: i32) attributes {pto.kernel_kind = #pto.kernel_kind<cube>} {
    %pipe = pto.initialize_l2l_pipe {dir_mask = 1, slot_size = 1024, slot_num = 8,
                                     flag_base = 0, nosplit = false}(%buf : i32) -> !pto.pipe
    %t = pto.alloc_tile : ACC
    pto.tpush(%t, %pipe : ACC, !pto.pipe) {split = SPLIT}
    return
  }
}
""".replace("ACC", _ACC)


def test_split_out_of_range_is_rejected_as_ptoas_does() -> None:
    _fails(_PUSH.replace("SPLIT", "5"), "expects 'split' to be 0, 1, 2, 3, or 4, got 5", "a5")


@pytest.mark.parametrize("split", [3, 4])
def test_odd_split_is_refused_by_name(split: int) -> None:
    """split 3/4 (PTOAS's odd modes): checked, then refused by name when run (was
    ``3 is not a valid TileSplitAxis``)."""
    _fails(_PUSH.replace("SPLIT", str(split)), f"split = {split} .* not executed by ptoisa",
           "a5", "k", 0)


# ---- what PTOAS accepts, we accept -------------------------------------------------------------

def _move(op: str, view: tuple[int, int], valid: tuple[int, int]) -> str:
    t = (f"!pto.tile_buf<loc=vec, dtype=f32, rows=16, cols=16, v_row={valid[0]}, "
         f"v_col={valid[1]}, blayout=row_major, slayout=none_box, fractal=512, pad=0>")
    pv = f"!pto.partition_tensor_view<{view[0]}x{view[1]}xf32>"
    body = (f"pto.tload ins(%p : {pv}) outs(%t : {t})" if op == "tload"
            else f"pto.tstore ins(%t : {t}) outs(%p : {pv})")
    return f"""module {{
  func.func @k(%x: !pto.ptr<f32>) {{
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c16 = arith.constant 16 : index
    %cr = arith.constant {view[0]} : index
    %cc = arith.constant {view[1]} : index
    %v = pto.make_tensor_view %x, shape = [%c16, %c16], strides = [%c16, %c1]
      : !pto.tensor_view<16x16xf32>
    %p = pto.partition_view %v, offsets = [%c0, %c0], sizes = [%cr, %cc]
      : !pto.tensor_view<16x16xf32> -> {pv}
    %t = pto.alloc_tile : {t}
    {body}
    return
  }}
}}
"""


def test_tload_of_a_larger_view_loads_the_valid_region() -> None:
    """PTOAS has no element-count rule on TLOAD (its tilelang tpartmax/tsels cases load a
    6x8 view into a 2x8 valid region): the valid region is loaded."""
    import numpy as np

    x = np.arange(256, dtype=np.float32)
    load(_move("tload", (6, 8), (2, 8)), target="a5").run("k", x, target="a5")


def test_tstore_element_count_is_ptoas_rule() -> None:
    _fails(_move("tstore", (6, 8), (2, 8)),
           r"expects dst static element count \(48\) to match src valid_shape static element "
           r"count \(16")
    load(_move("tstore", (2, 8), (2, 8)))


def test_texpands_bf16_on_a5() -> None:
    """TEXPANDS.md lists bfloat16_t for A5 (Vec and Mat); PTOAS's texpands_bf16.pto."""
    import numpy as np

    from ptoisa import TEXPANDS, Tile, target

    with target("a5"):
        t = Tile("Vec", "bf16", 8, 16)
        TEXPANDS(t, 1.5)
        np.testing.assert_array_equal(t.numpy().astype(np.float32), np.full((8, 16), 1.5))


# ---- rejected as PTOAS rejects them ------------------------------------------------------------

def _syncall(args: str, types: str, sig: str, mode: str = "soft") -> str:
    call = f"pto.syncall({args} : {types})" if args else "pto.syncall()"
    return f"""module {{
  func.func @k({sig}) {{
    {call} mode = #pto.sync_all_mode<{mode}>, core_type = #pto.sync_core_type<aiv_only>
    return
  }}
}}
"""


@pytest.mark.parametrize(("args", "types", "sig", "mode", "want"), [
    ("", "", "", "soft", "expects soft syncall to have gm_workspace and optional used_cores"),
    ("%g", "!pto.ptr<i32, gm>", "%g: !pto.ptr<i32, gm>", "hard",
     "expects hard syncall to have no gm_workspace or used_cores"),
    ("%g", "!pto.tensor_view<15xi32>", "%g: !pto.tensor_view<15xi32>", "soft",
     r"at least 16 i32 elements \(64 bytes\), but static capacity is 15"),
    ("%g", "!pto.ptr<f32, gm>", "%g: !pto.ptr<f32, gm>", "soft",
     "expects gm_workspace element type to be i32"),
    ("%g", "!pto.ptr<i32, vec>", "%g: !pto.ptr<i32, vec>", "soft",
     "expects gm_workspace to be in GM address space"),
    ("%g, %n", "!pto.ptr<i32, gm>, index", "%g: !pto.ptr<i32, gm>, %n: index", "soft",
     "operand #1 must be 32-bit signless integer")])
def test_syncall_abi(args: str, types: str, sig: str, mode: str, want: str) -> None:
    _fails(_syncall(args, types, sig, mode), want)


@pytest.mark.parametrize(("args", "types", "sig", "mode"), [
    ("", "", "", "hard"),
    ("%g, %n", "!pto.ptr<i32, gm>, i32", "%g: !pto.ptr<i32, gm>, %n: i32", "soft"),
    ("%g", "!pto.tensor_view<16xi32>", "%g: !pto.tensor_view<16xi32>", "soft")])
def test_syncall_abi_accepts(args: str, types: str, sig: str, mode: str) -> None:
    load(_syncall(args, types, sig, mode))


@pytest.mark.parametrize("attr", ["stPhase = #pto<st_phase final>",
                                  "atomicType = #pto<atomic_type atomic_add>"])
def test_hidden_fixpipe_attrs_are_rejected(attr: str) -> None:
    acc = _tile("acc", "i32", 16, 16, "col_major", "row_major", 1024)
    text = f"""module {{
  func.func @k() attributes {{pto.kernel_kind = #pto.kernel_kind<cube>}} {{
    %t = pto.alloc_tile : {acc}
    pto.tpush_to_aiv(%t : {acc}) {{split = 0}} {{{attr}}}
    return
  }}
}}
"""
    _fails(text, f"does not allow unpublished fixpipe attr '{attr.split()[0]}'", "a5")


_PEER = """module {
  module {
    func.func @consumer() attributes {pto.kernel_kind = #pto.kernel_kind<vector>} {
      %peer = pto.import_reserved_buffer {name = "fifo", peer_func = @producer} -> i32
      return
    }
  }
PRODUCERS}
"""
_PRODUCER = """  module {
    func.func public @NAME() attributes {pto.kernel_kind = #pto.kernel_kind<cube>} {
      %b = pto.reserve_buffer {name = "fifo", size = 4096,
                               location = #pto.address_space<mat>, auto = true} -> i32
      return
    }
  }
"""


@pytest.mark.parametrize(("names", "why"), [
    (["producer", "producer"], "2 functions of that name"),
    (["producer__ptodsl_user"], "no function of that name")])
def test_peer_func_names_exactly_one_function(names: list[str], why: str) -> None:
    text = _PEER.replace("PRODUCERS", "".join(_PRODUCER.replace("NAME", n) for n in names))
    _fails(text, f"expects 'peer_func' to reference an existing func.func .*{why}", "a5")


def test_tsel_tmp_capacity_on_a2a3() -> None:
    """A .pto tile may be smaller than the eager API's 32-byte rows: PTOAS's TSEL tmp
    capacity rule (8 bytes where f16 data needs 16)."""
    m = "!pto.tile_buf<loc=vec, dtype=i8, rows=1, cols=32, v_row=1, v_col=16, " \
        "blayout=row_major, slayout=none_box, fractal=512, pad=0>"
    h = _tile("vec", "f16", 1, 16)
    t = "!pto.tile_buf<loc=vec, dtype=i32, rows=1, cols=2, v_row=1, v_col=2, " \
        "blayout=row_major, slayout=none_box, fractal=512, pad=0>"
    text = f"""module {{
  func.func @k() {{
    %m = pto.alloc_tile : {m}
    %a = pto.alloc_tile : {h}
    %b = pto.alloc_tile : {h}
    %t = pto.alloc_tile : {t}
    %d = pto.alloc_tile : {h}
    pto.tsel ins(%m, %a, %b, %t : {m}, {h}, {h}, {t}) outs(%d : {h})
    return
  }}
}}
"""
    _fails(text, "expects tmp capacity to be at least 16 bytes, but got 8 bytes")
    load(text, target="a5")


def test_call_links_a_declaration_to_its_definition() -> None:
    """``func.func private @f()`` in one child module, its body in another (PTOAS's
    mixed-backend files): the call runs the body (it ran the empty declaration before)."""
    import numpy as np

    t = _tile("vec", "f32", 16, 16)
    text = f"""module {{
  module {{
    func.func private @fill(!pto.ptr<f32>)
    func.func @k(%x: !pto.ptr<f32>) attributes {{pto.entry}} {{
      func.call @fill(%x) : (!pto.ptr<f32>) -> ()
      return
    }}
  }}
  module {{
    func.func public @fill(%x: !pto.ptr<f32>) {{
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c16 = arith.constant 16 : index
      %s = arith.constant 2.0 : f32
      %v = pto.make_tensor_view %x, shape = [%c16, %c16], strides = [%c16, %c1]
        : !pto.tensor_view<16x16xf32>
      %p = pto.partition_view %v, offsets = [%c0, %c0], sizes = [%c16, %c16]
        : !pto.tensor_view<16x16xf32> -> !pto.partition_tensor_view<16x16xf32>
      %t = pto.alloc_tile : {t}
      pto.texpands ins(%s : f32) outs(%t : {t})
      pto.tstore ins(%t : {t}) outs(%p : !pto.partition_tensor_view<16x16xf32>)
      return
    }}
  }}
}}
"""
    out = np.zeros(256, np.float32)
    load(text).run("k", out)
    np.testing.assert_array_equal(out, np.full(256, 2.0, np.float32))


@pytest.mark.parametrize("op", ["alloc", "tassign"])
def test_constant_tile_address_is_32_byte_aligned(op: str) -> None:
    t = _tile("vec", "f16", 32, 64)
    place = (f"%t = pto.alloc_tile addr = %bad : {t}" if op == "alloc" else
             f"%t = pto.alloc_tile addr = %ok : {t}\n    %r = pto.tassign %t, %bad : {t} -> {t}")
    text = f"""module {{
  func.func @k() attributes {{pto.entry}} {{
    %ok = arith.constant 0 : i64
    %bad = arith.constant 70660 : i64
    {place}
    return
  }}
}}
"""
    _fails(text, "addr must be aligned to 32 bytes for local tile memory space, got 70660")


def test_a5_loads_vec_as_nd_dn_nz() -> None:
    """TLOAD.md (A5 Vec: ND, DN or NZ)."""
    import numpy as np

    from ptoisa import TLOAD, GlobalTensor, Tile, target
    from ptoisa.errors import IllegalInstruction

    g = GlobalTensor(np.zeros(512, np.float16), shape=(16, 32))
    with target("a5"):
        with pytest.raises(IllegalInstruction, match="ND, DN, or NZ, got ZZ"):
            TLOAD(Tile("Vec", "f16", 16, 32, "RowMajor", None, "RowMajor"), g)
        TLOAD(Tile("Vec", "f16", 16, 32), g)


_EPI = """module {
  func.func @k() attributes {pto.kernel_kind = #pto.kernel_kind<cube>} {
    %c0 = arith.constant 0 : i32
    pto.aic_initialize_pipe {id = 0, dir_mask = 1, slot_size = 256, nosplit = true,
      acc_push_epilogue = #pto.acc_push_epilogue<layout = nz2nd, quant = QUANT, relu = RELU>
    } (c2v_consumer_buf = %c0 : i32, v2c_consumer_buf = %c0 : i32)
    return
  }
}
"""


@pytest.mark.parametrize(("quant", "relu", "target", "want"), [
    ("no_convert", "pwl", "a5", "expected ::mlir::pto::FixpipeRelu to be one of"),
    ("qf322hif8_pre_vec", "no_relu", "a5", "expected ::mlir::pto::FixpipeQuant to be one of"),
    ("qs322bf16_pre_vec", "no_relu", "a2a3",
     "expects 'qs322bf16_pre_\\*' quantization modes to be used only on A5 target")])
def test_acc_push_epilogue_values(quant: str, relu: str, target: str, want: str) -> None:
    _fails(_EPI.replace("QUANT", quant).replace("RELU", relu), want, target)


def test_acc_push_epilogue_public_values_pass_the_rule() -> None:
    from ptoisa.interp.verify import module_rule_errors
    from ptoisa.text import parse

    text = _EPI.replace("QUANT", "qs322bf16_pre_vec").replace("RELU", "normal_relu")
    assert not list(module_rule_errors(parse(text, "x.pto"), target="a5"))


def _fixpipe(quant: str, acc: str, pop: str | None, set_quant: bool, dir_mask: int = 1) -> str:
    a = _tile("acc", acc, 16, 16, "col_major", "row_major", 1024)
    epi = f"#pto.acc_push_epilogue<layout = nz2nd, quant = {quant}, relu = no_relu>"
    sq = "pto.set_quant_scalar %q {id = 0} : f32\n    " if set_quant else ""
    popline = (f"%r = pto.tpop_from_aic {{id = 0, split = 0}} -> {_tile('vec', pop, 16, 16)}\n"
               "    pto.tfree_from_aic {id = 0, split = 0}") if pop else ""
    return f"""module {{
  func.func @cube() attributes {{pto.kernel_kind = #pto.kernel_kind<cube>}} {{
    %c0 = arith.constant 0 : i32
    %q = arith.constant 1.0 : f32
    %imp = pto.import_reserved_buffer {{name = "fifo", peer_func = @vec}} -> i32
    pto.aic_initialize_pipe {{id = 0, dir_mask = {dir_mask}, slot_size = 1024, nosplit = true,
      acc_push_epilogue = {epi}}} (c2v_consumer_buf = %imp : i32, v2c_consumer_buf = %c0 : i32)
    %t = pto.alloc_tile : {a}
    {sq}pto.tpush_to_aiv(%t : {a}) {{id = 0, split = 0}}
    return
  }}
  func.func @vec() attributes {{pto.kernel_kind = #pto.kernel_kind<vector>}} {{
    %c0 = arith.constant 0 : i32
    %buf = pto.reserve_buffer {{name = "fifo", size = 4096, location = #pto.address_space<vec>,
                                auto = true}} -> i32
    pto.aiv_initialize_pipe {{id = 0, dir_mask = {dir_mask}, slot_size = 1024, nosplit = true,
      acc_push_epilogue = {epi}}} (c2v_consumer_buf = %buf : i32, v2c_consumer_buf = %c0 : i32)
    {popline}
    return
  }}
}}
"""


@pytest.mark.parametrize(("args", "want"), [
    (("f32_f16", "i32", "f16", False), "f32_f16 takes an Acc tile of f32, got i32"),
    (("f32_f16", "f32", "bf16", False),
     r"expects consumer element type to match acc_push_epilogue.quant f32_f16 \(f16, got bf16"),
    (("f32_f16", "f32", None, False), "expects at least one tpop_from_aic for fixpipe pipe id = 0"),
    (("req8_vec", "i32", "si8", False),
     "expects a preceding pto.set_quant_vector with id = 0 in the same block"),
    (("f32_f16", "f32", "f16", False, 3),
     r"expects fixpipe pipe \(with 'acc_push_epilogue'\) to have dir_mask = 1")])
def test_fixpipe_contracts(args: tuple, want: str) -> None:  # type: ignore[type-arg]
    from ptoisa.interp.verify import module_rule_errors
    from ptoisa.text import parse

    errors = list(module_rule_errors(parse(_fixpipe(*args), "x.pto"), target="a5"))
    assert any(re.search(want, e.message) for e in errors), [e.message for e in errors]


def test_fixpipe_contract_accepts_the_documented_pairs() -> None:
    from ptoisa.interp.verify import module_rule_errors
    from ptoisa.text import parse

    for quant, acc, pop in (("f32_f16", "f32", "f16"), ("no_convert", "i32", "i32"),
                            ("f32_bf16", "f32", "bf16")):
        assert not list(module_rule_errors(parse(_fixpipe(quant, acc, pop, False), "x.pto"),
                                           target="a5"))


def _init(attrs: str) -> str:
    return f"""module {{
  func.func @k() attributes {{pto.kernel_kind = #pto.kernel_kind<cube>}} {{
    %c0 = arith.constant 0 : i32
    pto.aic_initialize_pipe {{id = 0, {attrs}, slot_size = 1024}}
      (c2v_consumer_buf = %c0 : i32, v2c_consumer_buf = %c0 : i32)
    return
  }}
}}
"""


@pytest.mark.parametrize(("attrs", "target", "want"), [
    ("dir_mask = 1, slot_num = 0", "a2a3", "expects 'slot_num' to be greater than 0"),
    ("dir_mask = 2, slot_num = 2, local_slot_num = 3", "a2a3",
     r"'local_slot_num' to be less than or equal to slot_num \(2\) for dir_mask = 2"),
    ("dir_mask = 3, local_slot_num = 5", "a2a3",
     r"less than or equal to slot_num \(4\) for dir_mask = 3"),
    ("dir_mask = 1, local_slot_num = 1", "a5",
     "'local_slot_num' is only supported for a2/a3 frontend pipe lowering")])
def test_pipe_slot_counts(attrs: str, target: str, want: str) -> None:
    from ptoisa.interp.verify import module_rule_errors
    from ptoisa.text import parse

    errors = list(module_rule_errors(parse(_init(attrs), "x.pto"), target=target))
    assert any(re.search(want, e.message) for e in errors), [e.message for e in errors]
    ok = _init("dir_mask = 1, slot_num = 8, local_slot_num = 8")
    assert not list(module_rule_errors(parse(ok, "x.pto"), target="a2a3"))


@pytest.mark.parametrize(("byte", "msb", "bad"), [(1, "false", True), (0, "true", True),
                                                  (1, "true", False)])
def test_thistogram_byte_and_legacy_ismsb(byte: int, msb: str, bad: bool) -> None:
    src = _tile("vec", "ui16", 8, 32)
    idx = ("!pto.tile_buf<loc=vec, dtype=ui8, rows=32, cols=1, v_row=8, v_col=1, "
           "blayout=col_major, slayout=none_box, fractal=512, pad=0>")
    dst = _tile("vec", "ui32", 8, 256)
    text = f"""module {{
  func.func @k() {{
    %s = pto.alloc_tile : {src}
    %i = pto.alloc_tile : {idx}
    %d = pto.alloc_tile : {dst}
    pto.thistogram ins(%s, %i : {src}, {idx}) outs(%d : {dst})
      {{byte = {byte} : i32, isMSB = {msb}}}
    return
  }}
}}
"""
    if bad:
        _fails(text, "does not allow conflicting 'byte' and legacy 'isMSB' attributes", "a5")
    else:
        load(text, target="a5")


@pytest.mark.parametrize(("shape", "layout", "want"), [
    ((2, 7), "row_major", r"row byte size \(cols \* sizeof\(dtype\)\) to be 32-byte aligned, "
                          "but got 28 bytes"),
    ((7, 2), "col_major", r"column byte size \(rows \* sizeof\(dtype\)\) to be 32-byte aligned")])
def test_unboxed_tile_rows_are_whole_blocks(shape: tuple[int, int], layout: str,
                                            want: str) -> None:
    t = _tile("vec", "f32", *shape, layout)
    _fails(f"""module {{
  func.func @k() {{
    %t = pto.alloc_tile : {t}
    return
  }}
}}
""", want)


def test_tgather_index_form_contracts() -> None:
    """TGATHER.md: A2/A3's index form needs its tmp (of the indices' valid shape); A5 takes
    16- or 32-bit indices."""
    from ptoisa import TGATHER, Tile, target
    from ptoisa.errors import IllegalInstruction

    def v(dt: str, cols: int) -> Tile:
        return Tile("Vec", dt, 1, cols)

    with target("a2a3"):
        with pytest.raises(IllegalInstruction, match="expects both indices and tmp"):
            TGATHER(v("f16", 32), v("f16", 32), v("i32", 32))
        with pytest.raises(IllegalInstruction, match="indices and tmp to have the same valid"):
            TGATHER(v("f16", 32), v("f16", 32), v("i32", 32), Tile("Vec", "i32", 1, 16))
    with target("a5"):
        with pytest.raises(IllegalInstruction, match="indices element type to be i32 or i16"):
            TGATHER(v("f32", 32), v("f32", 32), v("i8", 32))
        TGATHER(v("f32", 32), v("f32", 32), v("i16", 32))

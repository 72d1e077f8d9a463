"""GM pointers and scalar memory ops (``pto.load_scalar`` / ``store_scalar``, ``addptr``,
``castptr``, ``ptrtoint`` / ``inttoptr``) and event-id arrays, against numpy references
written from PTO_IR_manual.md: ``value = ptr[offset]``, ``ptr[offset] = value``, an addptr
offset counts elements, ``ptrtoint(addptr(p, i)) == ptrtoint(p) + i * sizeof(T)``."""

from __future__ import annotations

import os
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from ptoisa import load
from ptoisa.errors import ExecutionError, NotExecutedYet, VerifyError

SHARED = Path(os.environ.get("PTOISA_SHARED", Path(__file__).resolve().parents[2].parent
                             / "shared"))
LIT = SHARED / "corpus" / "ptoas-main" / "test" / "lit" / "pto"
needs_lit = pytest.mark.skipif(not LIT.is_dir(), reason=f"corpus not found at {LIT}")

DTYPES = {"f32": np.float32, "f16": np.float16, "bf16": ml_dtypes.bfloat16, "i8": np.int8,
          "i32": np.int32, "i64": np.int64, "ui32": np.uint32, "ui64": np.uint64}


def kernel(sig: str, body: str) -> str:
    return f"module {{\n  func.func @k({sig}) {{\n{body}\n    return\n  }}\n}}\n"


def _values(t: str, n: int) -> np.ndarray:
    rng = np.random.default_rng(7)
    dt = DTYPES[t]
    if t.startswith(("i", "ui")):
        info = np.iinfo(dt)
        return rng.integers(info.min, info.max, n, dtype=dt, endpoint=True)
    return (rng.standard_normal(n) * 100).astype(dt)


@pytest.mark.parametrize("t", sorted(DTYPES))
def test_load_then_store_copies_exactly_one_element(t):
    """load_scalar of element i is src[i] (bit for bit: extreme integers, every float);
    store_scalar writes dst[j] and nothing else."""
    prog = load(kernel(
        f"%src: !pto.ptr<{t}>, %dst: !pto.ptr<{t}>, %i: index, %j: index",
        f"    %v = pto.load_scalar %src[%i] : !pto.ptr<{t}> -> {t}\n"
        f"    pto.store_scalar %v, %dst[%j] : !pto.ptr<{t}>, {t}"))
    src = _values(t, 16)
    for i, j in ((0, 0), (15, 3), (7, 15)):
        dst = np.zeros(16, DTYPES[t])
        want = dst.copy()
        want[j] = src[i]
        prog.k(src, dst, i, j)
        assert dst.tobytes() == want.tobytes()


def test_loaded_values_follow_mlir_integer_semantics():
    """A loaded ui32 is unsigned (arith.extui keeps it), an i32 signed (extsi)."""
    prog = load(kernel(
        "%u: !pto.ptr<ui32>, %s: !pto.ptr<i32>, %o: !pto.ptr<i64>",
        "    %c0 = arith.constant 0 : index\n    %c1 = arith.constant 1 : index\n"
        "    %a = pto.load_scalar %u[%c0] : !pto.ptr<ui32> -> ui32\n"
        "    %b = pto.load_scalar %s[%c0] : !pto.ptr<i32> -> i32\n"
        "    %a64 = arith.extui %a : ui32 to i64\n"
        "    %b64 = arith.extsi %b : i32 to i64\n"
        "    pto.store_scalar %a64, %o[%c0] : !pto.ptr<i64>, i64\n"
        "    pto.store_scalar %b64, %o[%c1] : !pto.ptr<i64>, i64"))
    out = np.zeros(2, np.int64)
    prog.k(np.array([0xFFFFFFFE], np.uint32), np.array([-2], np.int32), out)
    assert out.tolist() == [0xFFFFFFFE, -2]


@pytest.mark.parametrize("t", ["f32", "f16", "i8", "i64"])
def test_addptr_offsets_count_elements(t):
    """addptr %p, n then load_scalar [k] reads element n + k (twice: offsets add up), and a
    tensor view made from the moved pointer starts at element n."""
    prog = load(kernel(
        f"%src: !pto.ptr<{t}>, %dst: !pto.ptr<{t}>, %n: index, %m: index",
        "    %c0 = arith.constant 0 : index\n    %c1 = arith.constant 1 : index\n"
        f"    %p = pto.addptr %src, %n : !pto.ptr<{t}> -> !pto.ptr<{t}>\n"
        f"    %q = pto.addptr %p, %m : !pto.ptr<{t}> -> !pto.ptr<{t}>\n"
        f"    %a = pto.load_scalar %p[%c1] : !pto.ptr<{t}> -> {t}\n"
        f"    %b = pto.load_scalar %q[%c0] : !pto.ptr<{t}> -> {t}\n"
        f"    pto.store_scalar %a, %dst[%c0] : !pto.ptr<{t}>, {t}\n"
        f"    pto.store_scalar %b, %dst[%c1] : !pto.ptr<{t}>, {t}"))
    src = _values(t, 32)
    for n, m in ((0, 0), (5, 3), (20, -12)):  # a negative offset back inside the argument
        dst = np.zeros(2, DTYPES[t])
        prog.k(src, dst, n, m)
        assert dst.tobytes() == np.array([src[n + 1], src[n + m]]).tobytes()


def test_tensor_view_from_a_moved_pointer():
    tv = "!pto.tensor_view<?xf32>"
    prog = load(kernel(
        "%src: !pto.ptr<f32>, %dst: !pto.ptr<f32>, %n: index",
        "    %c0 = arith.constant 0 : index\n    %c1 = arith.constant 1 : index\n"
        "    %c16 = arith.constant 16 : index\n"
        "    %p = pto.addptr %src, %n : !pto.ptr<f32> -> !pto.ptr<f32>\n"
        f"    %v = pto.make_tensor_view %p, shape = [%c16], strides = [%c1] : {tv}\n"
        f"    %w = pto.make_tensor_view %dst, shape = [%c16], strides = [%c1] : {tv}\n"
        f"    %pv = pto.partition_view %v, offsets = [%c0], sizes = [%c16] : {tv} -> "
        "!pto.partition_tensor_view<1x16xf32>\n"
        f"    %pw = pto.partition_view %w, offsets = [%c0], sizes = [%c16] : {tv} -> "
        "!pto.partition_tensor_view<1x16xf32>\n"
        "    %t = pto.alloc_tile : !pto.tile_buf<loc=vec, dtype=f32, rows=1, cols=16, v_row=1, "
        "v_col=16, blayout=row_major, slayout=none_box, fractal=512, pad=0>\n"
        "    pto.tload ins(%pv : !pto.partition_tensor_view<1x16xf32>) outs(%t : "
        "!pto.tile_buf<loc=vec, dtype=f32, rows=1, cols=16, v_row=1, v_col=16, "
        "blayout=row_major, slayout=none_box, fractal=512, pad=0>)\n"
        "    pto.tstore ins(%t : !pto.tile_buf<loc=vec, dtype=f32, rows=1, cols=16, v_row=1, "
        "v_col=16, blayout=row_major, slayout=none_box, fractal=512, pad=0>) outs(%pw : "
        "!pto.partition_tensor_view<1x16xf32>)"))
    src = np.arange(40, dtype=np.float32)
    dst = np.zeros(16, np.float32)
    prog.k(src, dst, 9)
    np.testing.assert_array_equal(dst, src[9:25])


def test_ptrtoint_counts_bytes_and_inttoptr_reinterprets():
    """The manual's example: ptrtoint(addptr(p, i)) == ptrtoint(p) + i * 8 for ui64, and an
    inttoptr to ui32 of that address reads the low word of p[i] (little endian)."""
    prog = load(kernel(
        "%src64: !pto.ptr<ui64>, %dst32: !pto.ptr<ui32>, %addrs: !pto.ptr<i64>, %idx: index",
        "    %c0 = arith.constant 0 : index\n    %c1 = arith.constant 1 : index\n"
        "    %off = pto.addptr %src64, %idx : !pto.ptr<ui64> -> !pto.ptr<ui64>\n"
        "    %a0 = pto.ptrtoint %src64 : !pto.ptr<ui64> -> i64\n"
        "    %a1 = pto.ptrtoint %off : !pto.ptr<ui64> -> i64\n"
        "    %p32 = pto.inttoptr %a1 : i64 -> !pto.ptr<ui32>\n"
        "    %val = pto.load_scalar %p32[%c1] : !pto.ptr<ui32> -> ui32\n"
        "    pto.store_scalar %val, %dst32[%idx] : !pto.ptr<ui32>, ui32\n"
        "    pto.store_scalar %a0, %addrs[%c0] : !pto.ptr<i64>, i64\n"
        "    pto.store_scalar %a1, %addrs[%c1] : !pto.ptr<i64>, i64"))
    src = np.array([0x1111_2222_3333_4444 * (k + 1) for k in range(4)], np.uint64)
    dst = np.zeros(4, np.uint32)
    addrs = np.zeros(2, np.int64)
    prog.k(src, dst, addrs, 2)
    assert addrs[1] - addrs[0] == 2 * 8
    assert dst[2] == int(src[2]) >> 32 and dst.sum() == dst[2]  # word 1 = the high half


def test_castptr_between_element_types_and_integers():
    """castptr ptr<f32> -> ptr<i32> reads the same bytes as another type; ptr -> i64 -> ptr
    gives the pointer back."""
    prog = load(kernel(
        "%src: !pto.ptr<f32>, %dst: !pto.ptr<i32>",
        "    %c0 = arith.constant 0 : index\n    %c3 = arith.constant 3 : index\n"
        "    %a = pto.castptr %src : !pto.ptr<f32> -> i64\n"
        "    %p = pto.castptr %a : i64 -> !pto.ptr<f32>\n"
        "    %q = pto.castptr %p : !pto.ptr<f32> -> !pto.ptr<i32>\n"
        "    %v = pto.load_scalar %q[%c3] : !pto.ptr<i32> -> i32\n"
        "    pto.store_scalar %v, %dst[%c0] : !pto.ptr<i32>, i32"))
    src = np.array([0.5, -1.0, 2.0, -3.25], np.float32)
    dst = np.zeros(1, np.int32)
    prog.k(src, dst)
    assert dst[0] == src.view(np.int32)[3]


@pytest.mark.parametrize("body, match", [
    ("%v = pto.load_scalar %src[%i] : !pto.ptr<f32> -> f32", "outside its argument"),
    ("%p = pto.addptr %src, %i : !pto.ptr<f32> -> !pto.ptr<f32>", "outside its argument"),
    ("%a = arith.constant 12345 : i64\n"
     "    %p = pto.inttoptr %a : i64 -> !pto.ptr<f32>\n"
     "    %v = pto.load_scalar %p[%i] : !pto.ptr<f32> -> f32", "belongs to no GM pointer"),
    # (byte 40 past argument 0: an address inside its span, out of its bytes)
    ("%a = arith.constant 1099511627816 : i64\n"
     "    %p = pto.inttoptr %a : i64 -> !pto.ptr<f32>\n"
     "    %v = pto.load_scalar %p[%i] : !pto.ptr<f32> -> f32", "not inside a GM pointer"),
])
def test_access_outside_the_argument_is_a_located_error(body, match):
    prog = load(kernel("%src: !pto.ptr<f32>, %i: index", "    " + body), filename="k.pto")
    with pytest.raises(ExecutionError, match=match) as e:
        prog.k(np.zeros(8, np.float32), 9)
    assert e.value.loc is not None and e.value.loc.line >= 3
    # GM no argument holds is not modelled: refused by name, not a failure of the program
    assert isinstance(e.value, NotExecutedYet) == ("belongs to no" in match)


@pytest.mark.parametrize("body, match", [
    ("%v = pto.load_scalar %src[%i] : !pto.ptr<f32> -> f16", "element type"),
    ("%c = arith.constant 1.0 : f16\n"
     "    pto.store_scalar %c, %src[%i] : !pto.ptr<f32>, f16", "element type"),
    ("%p = pto.addptr %src, %i : !pto.ptr<f32> -> !pto.ptr<f16>", "must match"),
    ("%a = arith.constant 0 : i64\n"
     "    %b = pto.castptr %a : i64 -> i32", "integer-to-integer"),
    ("%p = pto.castptr %src : !pto.ptr<f32> -> !pto.ptr<f32, ub>", "memory spaces"),
    ("%a = arith.constant 0 : i64\n"
     "    %p = pto.inttoptr %a : i64 -> !pto.ptr<f32>\n"
     "    %q = pto.addptr %p, %i : !pto.ptr<f32> -> !pto.ptr<f32>", "only be the pointer"),
])
def test_rules_of_the_manual_are_checked(body, match):
    with pytest.raises(VerifyError, match=match):
        load(kernel("%src: !pto.ptr<f32>, %i: index", "    " + body))


def test_on_chip_pointers_are_addresses_and_scalar_access_is_refused_by_name():
    # castptr makes a UB pointer of a byte address; addptr moves it by elements; castptr
    # gives the address back (tests/isa/test_micro.py runs the micro-ops through them)
    prog = load(kernel("%a: i64, %o: !pto.ptr<i64>",
                       "    %c0 = arith.constant 0 : index\n"
                       "    %c3 = arith.constant 3 : index\n"
                       "    %p = pto.castptr %a : i64 -> !pto.ptr<f32, ub>\n"
                       "    %q = pto.addptr %p, %c3 : !pto.ptr<f32, ub> -> !pto.ptr<f32, ub>\n"
                       "    %i = pto.castptr %q : !pto.ptr<f32, ub> -> i64\n"
                       "    pto.store_scalar %i, %o[%c0] : !pto.ptr<i64>, i64"))
    out = np.zeros(1, np.int64)
    prog.run("k", 64, out)
    assert out[0] == 64 + 3 * 4
    prog = load(kernel("%a: i64", "    %c0 = arith.constant 0 : index\n"
                       "    %p = pto.castptr %a : i64 -> !pto.ptr<f32, l1>\n"
                       "    %v = pto.load_scalar %p[%c0] : !pto.ptr<f32, l1> -> f32"))
    with pytest.raises(ExecutionError, match=r"operation 'pto.load_scalar' cannot be executed"):
        prog.k(0)
    # (UB pointers are executed: the machine's UB bytes, micro-isa/18)
    prog = load(kernel("%a: i64, %o: !pto.ptr<i16>",
                       "    %c0 = arith.constant 0 : index\n"
                       "    %c5 = arith.constant 5 : index\n"
                       "    %v = arith.constant -1234 : i16\n"
                       "    %p = pto.castptr %a : i64 -> !pto.ptr<i16, ub>\n"
                       "    pto.store_scalar %v, %p[%c5] : !pto.ptr<i16, ub>, i16\n"
                       "    %w = pto.load_scalar %p[%c5] : !pto.ptr<i16, ub> -> i16\n"
                       "    pto.store_scalar %w, %o[%c0] : !pto.ptr<i16>, i16"))
    out = np.zeros(1, np.int16)
    prog.run("k", 512, out)
    assert out[0] == -1234


def test_tile_buf_addr_gives_the_placed_tiles_address_as_an_integer_or_a_pointer():
    """``pto.tile_buf_addr`` of a placed tile: its byte address, as the integer or the
    on-chip pointer of the result type (upstream's textract / tmov2left cases feed it to
    ``mte_gm_l1_frac``); element 5 of a UB tile at byte 256 is that pointer's element 5."""
    tile = "!pto.tile_buf<vec, 1x16xf32>"
    prog = load(kernel("%o: !pto.ptr<f32>, %n: !pto.ptr<i64>",
                       "    %c0 = arith.constant 0 : index\n"
                       "    %c5 = arith.constant 5 : index\n"
                       "    %a = arith.constant 256 : i64\n"
                       "    %v = arith.constant 2.5 : f32\n"
                       f"    %t = pto.alloc_tile addr = %a : {tile}\n"
                       "    %s = arith.constant 0.0 : f32\n"
                       f"    pto.texpands ins(%s : f32) outs(%t : {tile})\n"
                       f"    %p = pto.tile_buf_addr %t : {tile} -> !pto.ptr<f32, ub>\n"
                       "    pto.store_scalar %v, %p[%c5] : !pto.ptr<f32, ub>, f32\n"
                       f"    %i = pto.tile_buf_addr %t : {tile} -> i64\n"
                       "    pto.store_scalar %i, %n[%c0] : !pto.ptr<i64>, i64\n"
                       "    %ov = pto.make_tensor_view %o, shape = [%c1, %c16],"
                       " strides = [%c16, %c1] : !pto.tensor_view<1x16xf32>\n"
                       "    %op = pto.partition_view %ov, offsets = [%c0, %c0], sizes = [%c1, %c16]"
                       " : !pto.tensor_view<1x16xf32> -> !pto.partition_tensor_view<1x16xf32>\n"
                       f"    pto.tstore ins(%t : {tile}) outs(%op : "
                       "!pto.partition_tensor_view<1x16xf32>)").replace(
                           "    %c0 =", "    %c1 = arith.constant 1 : index\n"
                           "    %c16 = arith.constant 16 : index\n    %c0 =", 1))
    out, addr = np.zeros(16, np.float32), np.zeros(1, np.int64)
    prog.run("k", out, addr, target="a5")
    assert addr[0] == 256
    assert out.tolist() == [0.0] * 5 + [2.5] + [0.0] * 10


def test_tile_buf_addr_of_an_unplaced_tile_is_refused_by_name():
    """An auto tile has the address PTOAS's memory planning gives it, which ptoisa does not
    model: tile_buf_addr of it is refused naming the op, never a made-up address."""
    tile = "!pto.tile_buf<vec, 1x16xf32>"
    prog = load(kernel("%n: !pto.ptr<i64>",
                       "    %c0 = arith.constant 0 : index\n"
                       f"    %t = pto.alloc_tile : {tile}\n"
                       f"    %i = pto.tile_buf_addr %t : {tile} -> i64\n"
                       "    pto.store_scalar %i, %n[%c0] : !pto.ptr<i64>, i64"))
    with pytest.raises(NotExecutedYet, match=r"tile_buf_addr: .*memory planning") as e:
        prog.run("k", np.zeros(1, np.int64), target="a5")
    assert e.value.op == "pto.tile_buf_addr"


def test_lockstep_blocks_load_and_store_their_own_elements():
    """Per-block offsets (the block index) gather and scatter in one lockstep pass."""
    prog = load(kernel(
        "%src: !pto.ptr<i32>, %dst: !pto.ptr<i32>",
        "    %b = pto.get_block_idx\n    %i = arith.index_cast %b : i64 to index\n"
        "    %v = pto.load_scalar %src[%i] : !pto.ptr<i32> -> i32\n"
        "    %w = arith.muli %v, %v : i32\n"
        "    pto.store_scalar %w, %dst[%i] : !pto.ptr<i32>, i32"))
    src = np.arange(1, 9, dtype=np.int32)
    dst = np.zeros(8, np.int32)
    prog.run("k", src, dst, blocks=6, lockstep=True)
    np.testing.assert_array_equal(dst, np.concatenate([src[:6] ** 2, [0, 0]]))


def test_eventid_array_holds_what_was_set():
    prog = load(kernel(
        "%o: !pto.ptr<i64>",
        "    %arr = pto.declare_eventid_array -> !pto.eventid_array<4>\n"
        "    %c0 = arith.constant 0 : index\n    %c3 = arith.constant 3 : index\n"
        "    %c1 = arith.constant 1 : index\n    %c2 = arith.constant 2 : index\n"
        "    pto.eventid_array_set %arr[%c3], %c1 : !pto.eventid_array<4>\n"
        "    pto.eventid_array_set %arr[%c0], %c2 : !pto.eventid_array<4>\n"
        "    pto.eventid_array_set %arr[%c3], %c2 : !pto.eventid_array<4>\n"
        "    %e = pto.eventid_array_get %arr[%c3] : !pto.eventid_array<4>\n"
        "    pto.set_flag_dyn [#pto.pipe<PIPE_MTE2>, #pto.pipe<PIPE_V>, %e]\n"
        "    pto.wait_flag_dyn [#pto.pipe<PIPE_MTE2>, #pto.pipe<PIPE_V>, %e]\n"
        "    %x = arith.index_cast %e : index to i64\n"
        "    pto.store_scalar %x, %o[%c0] : !pto.ptr<i64>, i64"))
    out = np.zeros(1, np.int64)
    prog.k(out)
    assert out[0] == 2


@pytest.mark.parametrize("idx, match", [(1, "before any"), (4, "outside the event-id array")])
def test_eventid_array_misuse_is_an_error(idx, match):
    prog = load(kernel(
        "%i: index",
        "    %arr = pto.declare_eventid_array -> !pto.eventid_array<4>\n"
        "    %c0 = arith.constant 0 : index\n"
        "    pto.eventid_array_set %arr[%c0], %c0 : !pto.eventid_array<4>\n"
        "    %e = pto.eventid_array_get %arr[%i] : !pto.eventid_array<4>"))
    with pytest.raises(ExecutionError, match=match):
        prog.k(idx)


# ---- corpus files (PTOAS's lit tests), run against what they mean -----------------------------

@needs_lit
def test_corpus_ptr_int_cast():
    """ptr_int_cast.pto: dst32[idx] = the first ui32 at &src64[idx]; the second function
    copies src64[idx] and stores its byte address."""
    prog = load(LIT / "ptr_int_cast.pto", target="a2a3")
    src = np.array([0xAAAA_BBBB_CCCC_DDDD, 0x0123_4567_89AB_CDEF, 7], np.uint64)
    dst = np.zeros(3, np.uint32)
    prog.ptr_int_cast_kernel(src, dst, 1)
    assert dst.tolist() == [0, 0x89AB_CDEF, 0]
    d64, da = np.zeros(1, np.uint64), np.zeros(1, np.int64)
    prog.ptrtoint_addptr_multi_consumer(src, d64, da, 2)
    d64b, db = np.zeros(1, np.uint64), np.zeros(1, np.int64)
    prog.ptrtoint_addptr_multi_consumer(src, d64b, db, 0)
    assert d64[0] == 7 and d64b[0] == src[0] and da[0] - db[0] == 16


@needs_lit
def test_corpus_scalar_gm_store_flush():
    prog = load(LIT / "issue696_scalar_gm_store_flush.pto", target="a2a3")
    d0, d1 = np.zeros(4, np.int32), np.zeros(4, np.int32)
    prog.scalar_gm_store_flush(d0, d1, np.array([42], np.int32), 3)
    assert d0.tolist() == [42, 0, 0, 42] and d1.tolist() == [42, 0, 0, 0]


@needs_lit
def test_corpus_eventid_arrays():
    for name in ("eventid_array_dyn_sync.pto", "eventid_array_no_cse.pto"):
        load(LIT / name).run(name[:-4])


def test_unrealized_conversion_cast_between_integers_of_one_width_keeps_the_bits():
    """builtin.unrealized_conversion_cast ui32 -> i32 (the tilelang trandom kernels' key
    words): the same 32 bits, read signed (extsi to i64 shows the sign); a cast between
    types of another kind has no meaning of its own and is refused by name."""
    prog = load(kernel(
        "%u: !pto.ptr<ui32>, %o: !pto.ptr<i64>",
        "    %c0 = arith.constant 0 : index\n"
        "    %v = pto.load_scalar %u[%c0] : !pto.ptr<ui32> -> ui32\n"
        "    %s = builtin.unrealized_conversion_cast %v : ui32 to i32\n"
        "    %w = arith.extsi %s : i32 to i64\n"
        "    pto.store_scalar %w, %o[%c0] : !pto.ptr<i64>, i64"))
    out = np.zeros(1, np.int64)
    prog.k(np.array([0xFFFFFFFE], np.uint32), out)
    assert out[0] == -2
    bad = load(kernel(
        "%u: !pto.ptr<f32>",
        "    %c0 = arith.constant 0 : index\n"
        "    %v = pto.load_scalar %u[%c0] : !pto.ptr<f32> -> f32\n"
        "    %s = builtin.unrealized_conversion_cast %v : f32 to i32"))
    with pytest.raises(ExecutionError, match="unrealized_conversion_cast.*f32 to i32"):
        bad.k(np.zeros(1, np.float32))

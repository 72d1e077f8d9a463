"""Issue 9 items 5, 6 and 17 (part): capacity in auto mode (eager and .pto), a defined start
state for every launch (the poison pattern), and clean errors for stores into read-only arrays.

References are written from the numbers: buffer sizes from buffer_limits.hpp (a2a3 UB 192 KiB,
cpu UB 512 KiB as the upstream simulator), tile bytes as rows * cols * itemsize, the poison
pattern as the documented byte 0xFF."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ptoisa as pto
from ptoisa import GlobalTensor, Tile, TileType
from ptoisa.errors import PtoMemoryError, VerifyError
from ptoisa.memory import POISON_BYTE, is_poison

KiB = 1024
UB = {"cpu": 512 * KiB, "a2a3": 192 * KiB, "a5": 256 * KiB}
ROOT = Path(__file__).resolve().parents[1]


def _vec(rows: int, cols: int = 128, name: str | None = None) -> Tile:
    return Tile(TileType.Vec, "f32", rows, cols, name=name)


# ---- item 5: capacity in auto mode, eager ------------------------------------------------------

@pytest.mark.parametrize("tgt", ["cpu", "a2a3", "a5"])
def test_one_tile_larger_than_ub_is_rejected_in_auto_mode(tgt):
    pto.target(tgt)
    big = _vec(512, 512, name="big")  # 1 MiB
    with pytest.raises(PtoMemoryError) as ei:
        pto.TEXPANDS(big, 1.0)
    msg = str(ei.value)
    assert msg.startswith(f"texpands: UB overflow on {tgt}: ")
    assert f"need {512 * 512 * 4} bytes of UB, which holds {UB[tgt]} bytes" in msg
    assert "tile 'big' (Vec f32 512x512 ND)" in msg


def test_live_tiles_add_up_and_freed_tiles_do_not_count():
    pto.target("a2a3")
    live = [_vec(128, name=f"t{i}") for i in range(3)]  # 3 x 64 KiB = all of UB
    for t in live:
        pto.TEXPANDS(t, 2.0)
    fourth = _vec(128, name="t3")
    with pytest.raises(PtoMemoryError, match=r"need 262144 bytes of UB, which holds 196608") as ei:
        pto.TEXPANDS(fourth, 2.0)
    assert all(f"tile 't{i}'" in str(ei.value) for i in range(4))
    del live[0]  # one 64 KiB tile freed: the fourth fits now
    pto.TEXPANDS(fourth, 2.0)
    assert (fourth.numpy() == 2.0).all()
    del live, fourth
    # 40 tiles of 64 KiB one after another (each dropped before the next) are fine
    for _ in range(40):
        t = _vec(128)
        pto.TEXPANDS(t, 1.0)
        del t


def test_other_buffers_and_manual_placement():
    pto.target("a2a3")
    # L0C 128 KiB: two 64x256 f32 accumulators (64 KiB each) fit, a third does not
    accs = [pto.TileAcc("f32", 64, 256) for _ in range(2)]
    for a in accs:
        a.load_numpy(np.zeros((64, 256), np.float32))
    with pytest.raises(PtoMemoryError, match="L0C overflow on a2a3: .* holds 131072 bytes"):
        pto.TileAcc("f32", 64, 256).load_numpy(np.zeros((64, 256), np.float32))
    # TASSIGNed tiles are the program's own placement: not counted against auto tiles
    m = pto.target("a2a3")
    placed = [_vec(128) for _ in range(3)]
    for i, t in enumerate(placed):
        pto.TASSIGN(t, 0)  # all at address 0 (sharing bytes): allowed
        pto.TEXPANDS(t, float(i))
    assert m.live_bytes("UB") == 0
    auto = [_vec(128) for _ in range(3)]
    for t in auto:
        pto.TEXPANDS(t, 1.0)
    assert m.live_bytes("UB") == 3 * 64 * KiB


@settings(max_examples=25, deadline=None)
@given(st.lists(st.integers(1, 96), min_size=1, max_size=12))
def test_capacity_is_the_sum_of_live_tiles(rows):
    """Tiles of rows x 128 f32 (512 B a row) stay live; the first one that brings the total
    past 192 KiB is rejected, every one before it is accepted."""
    m = pto.target("a2a3")
    try:
        keep, total = [], 0
        for r in rows:
            t = _vec(r)
            total += r * 128 * 4
            if total > 192 * KiB:
                with pytest.raises(PtoMemoryError, match=f"need {total} bytes of UB"):
                    pto.TEXPANDS(t, 0.0)
                return
            pto.TEXPANDS(t, 0.0)
            keep.append(t)
        assert m.live_bytes("UB") == total
    finally:
        pto.memory.pop(m)


def _fill_kernel(out: np.ndarray, n_tiles: int) -> None:
    b = pto.get_block_idx()
    tiles = [_vec(128) for _ in range(n_tiles)]
    for i, t in enumerate(tiles):
        pto.TEXPANDS(t, float(i))
    pto.TSTORE(GlobalTensor(out, (1, 1, 1, 128, 128), (0, 0, 0, 128, 1), offset=b * 128 * 128),
               tiles[-1])


@pytest.mark.parametrize("blocks", [1, 4])
def test_launch_checks_each_block_and_does_not_accumulate_across_launches(blocks):
    out = np.zeros((blocks * 128, 128), np.float32)
    for _ in range(3):  # the launch machine is reused: earlier launches' tiles do not count
        pto.launch(_fill_kernel, out, 3, blocks=blocks, target="a2a3")
    assert (out == 2.0).all()
    with pytest.raises(PtoMemoryError, match="UB overflow on a2a3: .* need 262144 bytes"):
        pto.launch(_fill_kernel, out, 4, blocks=blocks, target="a2a3")


def test_lazily_loaded_tiles_count():
    """A tile loaded without a copy (a big lockstep TLOAD reads GM in place) is on chip all the
    same."""
    x = np.ones((8 * 128, 128), np.float32)

    def kernel(x: np.ndarray) -> None:
        b = pto.get_block_idx()
        tiles = [_vec(128) for _ in range(4)]
        for t in tiles:
            pto.TLOAD(t, GlobalTensor(x, (1, 1, 1, 128, 128), (0, 0, 0, 128, 1),
                                      offset=b * 128 * 128))

    with pytest.raises(PtoMemoryError, match="tload: UB overflow on a2a3"):
        pto.launch(kernel, x, blocks=8, target="a2a3")
    pto.launch(kernel, x, blocks=8, target="cpu")  # 4 x 64 KiB fit in cpu's 512 KiB


# ---- item 5: capacity of .pto programs, statically ---------------------------------------------

def _tb(rows: int) -> str:
    return (f"!pto.tile_buf<loc=vec, dtype=f32, rows={rows}, cols=128, v_row={rows}, v_col=128, "
            "blayout=row_major, slayout=none_box, fractal=512, pad=0>")


def _program(body: str) -> str:
    return ("module {\n  func.func @k(%x: !pto.ptr<f32>) {\n"
            "    %c0 = arith.constant 0 : index\n    %c1 = arith.constant 1 : index\n"
            "    %c4 = arith.constant 4 : index\n    %f = arith.constant 1.0 : f32\n"
            f"{body}    return\n  }}\n}}\n")


def _alloc(name: str, rows: int = 128) -> str:
    return f"    %{name} = pto.alloc_tile : {_tb(rows)}\n"


def _use(name: str, rows: int = 128) -> str:
    return f"    pto.texpands ins(%f : f32) outs(%{name} : {_tb(rows)})\n"


def _add(dst: str, a: str, b: str) -> str:
    t = _tb(128)
    return f"    pto.tadd ins(%{a}, %{b} : {t}, {t}) outs(%{dst} : {t})\n"


def test_pto_tiles_live_together_overflow_where_the_last_becomes_live():
    # a..d are written one after another and all read at the end: four 64 KiB tiles live
    text = _program("".join(_alloc(n) for n in "abcd") + "".join(_use(n) for n in "abcd")
                    + _add("a", "a", "b") + _add("c", "c", "d"))
    with pytest.raises(VerifyError) as ei:
        pto.load(text, target="a2a3", filename="cap.pto")
    msg = ei.value.render()
    # located at the texpands that first writes %d (line 14)
    assert msg.startswith("cap.pto:14:5: error: pto.texpands: UB overflow on a2a3: the tiles "
                          "live here need 262144 bytes of UB, which holds 196608 bytes")
    assert all(f"%{n} (Vec f32 128x128 ND) 65536 B" in msg for n in "abcd")
    pto.load(text, target="cpu")  # 256 KiB fit in cpu's 512 KiB UB
    # a5's UB is 256 KiB, but PTOAS plans it as 248 KiB (PTOPlanMemory.cpp kA5)
    with pytest.raises(VerifyError, match=r"need 262144 bytes of UB, which holds 253952 bytes "
                                          r"\(248 KiB\)"):
        pto.load(text, target="a5")


def test_pto_tiles_not_live_together_fit():
    # allocated up front, but each is used once before the next one's first use: an
    # alloc_tile alone takes no space (PlanMemory starts a buffer's life at its first use)
    text = _program("".join(_alloc(n) for n in "abcdeghk") + "".join(_use(n) for n in "abcdeghk"))
    prog = pto.load(text, target="a2a3")
    prog.k(np.zeros(16, np.float32), target="a2a3")


def test_pto_a_tile_first_used_where_another_dies_may_take_its_place():
    # at the tadd, %a and %b are read for the last time and %d first written: %d can take
    # %a's place (in-place reuse), so 3 x 64 KiB are live, not 4
    text = _program("".join(_alloc(n) for n in "abcd") + "".join(_use(n) for n in "abc")
                    + _add("d", "a", "b") + _add("c", "c", "d"))
    pto.load(text, target="a2a3")
    # a larger new tile cannot take a smaller dying one's place
    big = _tb(256)
    text2 = _program("".join(_alloc(n) for n in "ab") + _alloc("d", 256)
                     + "".join(_use(n) for n in "ab")
                     + f"    pto.tadd ins(%a, %b : {_tb(128)}, {_tb(128)}) outs(%d : {big})\n")
    with pytest.raises(VerifyError, match="need 262144 bytes of UB"):
        pto.load(text2, target="a2a3")


def test_pto_a_loop_keeps_a_tile_it_uses_live_over_the_whole_loop():
    # %a is written before the loop and read first thing in its body, then %b, %c, %d are
    # written and read: straight-line, %a is dead by then (3 x 64 KiB fit in 192 KiB); in the
    # loop the next iteration reads %a again, so it is live throughout: 4 x 64 KiB
    body = (_add("a", "a", "a") + "".join(_use(n) for n in "bcd") + _add("b", "b", "c")
            + _add("b", "b", "d"))
    head = "".join(_alloc(n) for n in "abcd") + _use("a")
    pto.load(_program(head + body), target="a2a3")
    loop = "    scf.for %i = %c0 to %c4 step %c1 {\n" + body + "    }\n"
    with pytest.raises(VerifyError, match=r"UB overflow on a2a3: the tiles live here need "
                                          r"262144 bytes .*%a \(Vec"):
        pto.load(_program(head + loop), target="a2a3")
    # a tile allocated inside the loop body and used only there is not kept across it
    inner = "    scf.for %i = %c0 to %c4 step %c1 {\n" + _alloc("e") + _use("e") + "    }\n"
    pto.load(_program(inner + head + body), target="a2a3")


@settings(max_examples=30, deadline=None)
@given(st.lists(st.integers(0, 5), min_size=1, max_size=14),
       st.lists(st.sampled_from([32, 64, 128]), min_size=6, max_size=6))
def test_pto_capacity_matches_straight_line_liveness(uses, rows):
    """Straight-line programs of texpands (one tile per op, so no in-place reuse): tile t is
    live from its first to its last use; the check must fail exactly when some op has more
    than 192 KiB live, and report that op's total."""
    names = sorted(set(uses))
    text = _program("".join(_alloc(f"t{t}", rows[t]) for t in names)
                    + "".join(_use(f"t{t}", rows[t]) for t in uses))
    first = {t: uses.index(t) for t in names}
    last = {t: len(uses) - 1 - uses[::-1].index(t) for t in names}
    totals = [sum(rows[t] * 128 * 4 for t in names if first[t] <= p <= last[t])
              for p in range(len(uses))]
    over = [p for p, tot in enumerate(totals) if tot > 192 * KiB]
    if not over:
        pto.load(text, target="a2a3")
        return
    with pytest.raises(VerifyError, match=f"need {totals[over[0]]} bytes of UB"):
        pto.load(text, target="a2a3")


def test_pto_addressed_tiles_are_not_counted():
    body = "".join(f"    %a{i} = arith.constant 0 : i64\n"
                   f"    %t{i} = pto.alloc_tile addr = %a{i} : {_tb(128)}\n" + _use(f"t{i}")
                   for i in range(4))
    pto.load(_program(body + _add("t0", "t1", "t2") + _add("t0", "t0", "t3")), target="a2a3")


def test_cli_check_reports_capacity(tmp_path):
    f = tmp_path / "cap.pto"
    f.write_text(_program(_alloc("a", 512) + _use("a", 512)))  # 256 KiB
    r = subprocess.run([sys.executable, "-m", "ptoisa", "check", str(f), "--target", "a2a3"],
                       capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert r.returncode != 0
    assert "cap.pto:8:5: error: pto.texpands: UB overflow on a2a3" in r.stderr + r.stdout
    assert "Traceback" not in r.stderr


# ---- item 6: every launch starts from the poison state -----------------------------------------

def _write_kernel(out: np.ndarray, value: float) -> None:
    t = _vec(16)
    pto.TEXPANDS(t, value)
    pto.TSTORE(GlobalTensor(out), t)


def _read_unwritten_kernel(out: np.ndarray) -> None:
    t = _vec(16)  # never written
    pto.TSTORE(GlobalTensor(out), t)


@pytest.mark.parametrize("tgt", ["cpu", "a2a3"])
def test_unwritten_tile_reads_poison_whatever_ran_before(tgt):
    out = np.zeros((16, 128), np.float32)
    results = []
    for value in (None, 3.0, -7.5):
        if value is not None:  # an unrelated launch first, leaving its data in the arena
            pto.launch(_write_kernel, np.zeros((16, 128), np.float32), value, target=tgt)
        out[:] = 0
        pto.launch(_read_unwritten_kernel, out, target=tgt)
        results.append(out.view(np.uint8).copy())
    for r in results:
        assert (r == POISON_BYTE).all()
    assert np.isnan(out).all() and out.view(np.uint32)[0, 0] == 0xFFFFFFFF


def test_unwritten_tile_in_lockstep_and_per_block_launches():
    def read(out: np.ndarray) -> None:
        b = pto.get_block_idx()
        t = Tile(TileType.Vec, "i32", 16, 16)
        pto.TSTORE(GlobalTensor(out, (1, 1, 1, 16, 16), (0, 0, 0, 16, 1), offset=b * 256), t)

    def write(out: np.ndarray) -> None:
        b = pto.get_block_idx()
        t = Tile(TileType.Vec, "i32", 16, 16)
        pto.TEXPANDS(t, 5)
        pto.TSTORE(GlobalTensor(out, (1, 1, 1, 16, 16), (0, 0, 0, 16, 1), offset=b * 256), t)

    for lockstep in (True, False):
        pto.launch(write, np.zeros(4 * 256, np.int32), blocks=4, lockstep=lockstep)
        out = np.zeros(4 * 256, np.int32)
        pto.launch(read, out, blocks=4, lockstep=lockstep)
        assert (out == -1).all()  # i32 of bytes 0xFF


def test_tassigned_buffer_bytes_are_poisoned_per_launch():
    def kernel(out: np.ndarray, value: float | None) -> None:
        t = _vec(16)
        pto.TASSIGN(t, 0x100)
        if value is not None:
            pto.TEXPANDS(t, value)
        pto.TSTORE(GlobalTensor(out), t)

    out = np.zeros((16, 128), np.float32)
    pto.launch(kernel, out, 9.0, target="a5")
    assert (out == 9.0).all()
    pto.launch(kernel, out, None, target="a5")  # same address, nothing written this launch
    assert is_poison(out).all()


def test_tiles_at_overlapping_addresses_still_share_bytes_within_a_launch():
    pto.target("a2a3", mode="manual")
    a, b = _vec(16), _vec(16)
    pto.TASSIGN(a, 0)
    pto.TEXPANDS(a, 4.0)
    pto.TASSIGN(b, 16 * 128 * 2)  # b's first half is a's second half
    got = b.numpy()
    assert (got[:8] == 4.0).all() and is_poison(got[8:]).all()


def test_pto_run_reads_poison_after_an_earlier_run():
    t = _tb(16)
    pv = "!pto.partition_tensor_view<16x128xf32>"
    tv = "!pto.tensor_view<?x?xf32>"

    def prog(fill: bool) -> pto.Program:
        return pto.load(
            "module {\n  func.func @k(%x: !pto.ptr<f32>, %n: index) {\n"
            "    %c0 = arith.constant 0 : index\n    %c1 = arith.constant 1 : index\n"
            "    %c16 = arith.constant 16 : index\n    %c128 = arith.constant 128 : index\n"
            "    %f = arith.constant 6.0 : f32\n"
            "    %bid = pto.get_block_idx\n    %b = arith.index_cast %bid : i64 to index\n"
            "    %row = arith.muli %b, %c16 : index\n"
            f"    %v = pto.make_tensor_view %x, shape = [%n, %c128], strides = [%c128, %c1]"
            f" : {tv}\n"
            f"    %p = pto.partition_view %v, offsets = [%row, %c0], sizes = [%c16, %c128] : "
            f"{tv} -> {pv}\n"
            f"    %t = pto.alloc_tile : {t}\n"
            + (f"    pto.texpands ins(%f : f32) outs(%t : {t})\n" if fill else "")
            + f"    pto.tstore ins(%t : {t}) outs(%p : {pv})\n    return\n  }}\n}}\n")

    writer, reader = prog(True), prog(False)
    for blocks in (1, 3):
        x = np.zeros((16 * blocks, 128), np.float32)
        writer.k(x, 16 * blocks, blocks=blocks)
        assert (x == 6.0).all()
        reader.k(x, 16 * blocks, blocks=blocks)
        assert is_poison(x).all()


def test_pto_blocks_run_one_by_one_do_not_see_each_others_tiles():
    """Control flow on the block index makes the blocks run one after another; block 1 must
    not read what block 0 left in a tile (each block has its own buffers)."""
    t = _tb(16)
    pv = "!pto.partition_tensor_view<16x128xf32>"
    tv = "!pto.tensor_view<?x?xf32>"
    prog = pto.load(
        "module {\n  func.func @k(%x: !pto.ptr<f32>, %n: index) {\n"
        "    %c0 = arith.constant 0 : index\n    %c1 = arith.constant 1 : index\n"
        "    %c16 = arith.constant 16 : index\n    %c128 = arith.constant 128 : index\n"
        "    %f = arith.constant 6.0 : f32\n"
        "    %bid = pto.get_block_idx\n    %b = arith.index_cast %bid : i64 to index\n"
        "    %row = arith.muli %b, %c16 : index\n"
        f"    %v = pto.make_tensor_view %x, shape = [%n, %c128], strides = [%c128, %c1] : {tv}\n"
        f"    %p = pto.partition_view %v, offsets = [%row, %c0], sizes = [%c16, %c128] : {tv} "
        f"-> {pv}\n"
        f"    %t = pto.alloc_tile : {t}\n"
        "    %first = arith.cmpi eq, %b, %c0 : index\n"
        f"    scf.if %first {{\n      pto.texpands ins(%f : f32) outs(%t : {t})\n    }}\n"
        f"    pto.tstore ins(%t : {t}) outs(%p : {pv})\n    return\n  }}\n}}\n")
    for machine in (None, pto.memory.Machine("a5")):
        x = np.zeros((48, 128), np.float32)
        prog.k(x, 48, blocks=3, machine=machine)
        assert (x[:16] == 6.0).all() and is_poison(x[16:]).all()


def test_fresh_target_machine_starts_poisoned():
    for _ in range(2):
        with pto.target("a5", mode="manual"):
            t = _vec(16)
            pto.TASSIGN(t, 0)
            got = t.numpy()
            pto.TEXPANDS(t, 1.0)  # what this machine writes is not seen by the next one
        assert is_poison(got).all()


# ---- item 17: stores into read-only arrays -----------------------------------------------------

def test_tstore_into_a_read_only_array_names_instruction_and_tensor():
    pto.target("cpu")
    ro = np.zeros((16, 128), np.float32)
    ro.flags.writeable = False
    t = _vec(16)
    pto.TEXPANDS(t, 1.0)
    with pytest.raises(PtoMemoryError, match=r"^tstore: operand 'dst' \(GlobalTensor 'out' ND "
                                             r"f32 .*\) views a read-only numpy array"):
        pto.TSTORE(GlobalTensor(ro, name="out"), t)
    pto.TLOAD(t, GlobalTensor(ro))  # loading from it is fine
    from_bytes = np.frombuffer(bytes(16 * 128 * 4), np.float32).reshape(16, 128)  # read-only
    with pytest.raises(PtoMemoryError, match="tstore: operand 'dst' .* read-only"):
        pto.TSTORE(GlobalTensor(from_bytes), t)
    signal = np.frombuffer(bytes(4), np.int32)  # any instruction writing GM: TNOTIFY too
    with pytest.raises(PtoMemoryError, match="tnotify: operand 'signal' .* read-only"):
        pto.TNOTIFY(GlobalTensor(signal), 1)


def test_pto_store_into_a_read_only_argument_is_located():
    t = _tb(16)
    pv = "!pto.partition_tensor_view<16x128xf32>"
    tv = "!pto.tensor_view<?x?xf32>"
    prog = pto.load(
        "module {\n  func.func @k(%src: !pto.ptr<f32>, %dst: !pto.ptr<f32>) {\n"
        "    %c0 = arith.constant 0 : index\n    %c1 = arith.constant 1 : index\n"
        "    %c16 = arith.constant 16 : index\n    %c128 = arith.constant 128 : index\n"
        f"    %vs = pto.make_tensor_view %src, shape = [%c16, %c128], strides = [%c128, %c1]"
        f" : {tv}\n"
        f"    %vd = pto.make_tensor_view %dst, shape = [%c16, %c128], strides = [%c128, %c1]"
        f" : {tv}\n"
        f"    %ps = pto.partition_view %vs, offsets = [%c0, %c0], sizes = [%c16, %c128] : {tv} "
        f"-> {pv}\n"
        f"    %pd = pto.partition_view %vd, offsets = [%c0, %c0], sizes = [%c16, %c128] : {tv} "
        f"-> {pv}\n"
        f"    %t = pto.alloc_tile : {t}\n"
        f"    pto.tload ins(%ps : {pv}) outs(%t : {t})\n"
        f"    pto.tstore ins(%t : {t}) outs(%pd : {pv})\n    return\n  }}\n}}\n",
        filename="ro.pto")
    src = np.arange(16 * 128, dtype=np.float32).reshape(16, 128)
    src.flags.writeable = False  # a read-only input is fine
    dst = np.zeros_like(src)
    prog.k(src, dst)
    np.testing.assert_array_equal(dst, src)
    dst.flags.writeable = False
    for blocks in (1, 2):
        with pytest.raises(PtoMemoryError) as ei:
            prog.k(src, dst, blocks=blocks)
        assert ei.value.render().startswith(
            "ro.pto:13:5: error: tstore: operand 'dst' (GlobalTensor '%dst' ND f32")


# ---- lockstep blocks storing to one shared GM view (found while testing item 6) ----------------

@pytest.mark.parametrize("size", [16, 128])  # small: copied tiles; large: deferred results
def test_lockstep_blocks_storing_to_the_same_view(size):
    """Every block stores to the same GM tile (its offset does not depend on the block): as
    when the blocks run one after another, the last block's values remain, and AtomicAdd adds
    every block's values."""
    x = np.arange(4 * size * 128, dtype=np.float32).reshape(4, size, 128)

    def kernel(x: np.ndarray, out: np.ndarray, atomic: str) -> None:
        b = pto.get_block_idx()
        t, u = _vec(size), _vec(size)
        pto.TLOAD(t, GlobalTensor(x, (1, 1, 1, size, 128), (0, 0, 0, 128, 1),
                                  offset=b * size * 128))
        pto.TADD(u, t, t)
        pto.TSTORE(GlobalTensor(out), u, atomicType=atomic)

    for lockstep in (True, False):
        out = np.zeros((size, 128), np.float32)
        pto.launch(kernel, x, out, "AtomicNone", blocks=4, lockstep=lockstep)
        np.testing.assert_array_equal(out, 2 * x[3])
        out = np.ones((size, 128), np.float32)
        pto.launch(kernel, x, out, "AtomicAdd", blocks=4, lockstep=lockstep)
        np.testing.assert_array_equal(out, 1 + 2 * x.sum(axis=0))

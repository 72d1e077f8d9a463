"""``pto.alloc_multi_tile`` / ``pto.multi_tile_get`` (PTO_IR_manual.md 2.6 and "Allocate
N-Slot Multi-Buffer Tile"): N physically distinct slots of one tile_buf type; under level3
slot k is placed at ``addr + k * rows * cols * element size``. Expectations are numpy
references written from the manual, and the corpus files' own error lines."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from ptoisa import load
from ptoisa.errors import PtoError
from ptoisa.interp import verify
from ptoisa.text import parse

SHARED = Path(os.environ.get("PTOISA_SHARED", Path(__file__).resolve().parents[2].parent
                             / "shared"))
LIT = SHARED / "corpus" / "ptoas-main" / "test" / "lit" / "pto"
needs_corpus = pytest.mark.skipif(not LIT.is_dir(), reason=f"corpus not found at {LIT}")

TB = "!pto.tile_buf<vec, 8x16xf32>"
MB = "!pto.multi_tile_buf<vec, 8x16xf32, count=2>"
PV = "!pto.partition_tensor_view<8x16xf32>"


def views(name: str, arg: str, rows: str) -> str:
    return f"""
    %{name}v = pto.make_tensor_view %{arg}, shape = [{rows}, %c16], strides = [%c16, %c1]
        : !pto.tensor_view<?x?xf32>"""


def pingpong_kernel() -> str:
    """Block i of x (8x16, n blocks) is loaded into slot i mod 2, added into an accumulator
    tile; slot 0 and slot 1 are stored at the end (the last two blocks)."""
    return f"""module {{
  func.func @k(%x: !pto.ptr<f32>, %acc_out: !pto.ptr<f32>, %s0_out: !pto.ptr<f32>,
               %s1_out: !pto.ptr<f32>, %n: index) {{
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c8 = arith.constant 8 : index
    %c16 = arith.constant 16 : index
    %rows = arith.muli %n, %c8 : index
    {views("x", "x", "%rows")}
    {views("a", "acc_out", "%c8")}
    {views("p", "s0_out", "%c8")}
    {views("q", "s1_out", "%c8")}
    %mb = pto.alloc_multi_tile : {MB}
    %acc = pto.alloc_tile : {TB}
    %zero = arith.constant 0.0 : f32
    pto.texpands ins(%zero : f32) outs(%acc : {TB})
    scf.for %i = %c0 to %n step %c1 {{
      %k = arith.remui %i, %c2 : index
      %r = arith.muli %i, %c8 : index
      %s = pto.multi_tile_get %mb[%k] : {MB} -> {TB}
      %blk = pto.partition_view %xv, offsets = [%r, %c0], sizes = [%c8, %c16]
          : !pto.tensor_view<?x?xf32> -> {PV}
      pto.tload ins(%blk : {PV}) outs(%s : {TB})
      pto.tadd ins(%acc, %s : {TB}, {TB}) outs(%acc : {TB})
    }}
    %t0 = pto.multi_tile_get %mb[%c0] : {MB} -> {TB}
    %t1 = pto.multi_tile_get %mb[%c1] : {MB} -> {TB}
    %ap = pto.partition_view %av, offsets = [%c0, %c0], sizes = [%c8, %c16]
        : !pto.tensor_view<?x?xf32> -> {PV}
    %pp = pto.partition_view %pv, offsets = [%c0, %c0], sizes = [%c8, %c16]
        : !pto.tensor_view<?x?xf32> -> {PV}
    %qp = pto.partition_view %qv, offsets = [%c0, %c0], sizes = [%c8, %c16]
        : !pto.tensor_view<?x?xf32> -> {PV}
    pto.tstore ins(%acc : {TB}) outs(%ap : {PV})
    pto.tstore ins(%t0 : {TB}) outs(%pp : {PV})
    pto.tstore ins(%t1 : {TB}) outs(%qp : {PV})
    return
  }}
}}
"""


@pytest.mark.parametrize("n", [2, 3, 5])
def test_slots_are_distinct_buffers(n):
    prog = load(pingpong_kernel())
    x = np.random.default_rng(n).standard_normal((n * 8, 16)).astype(np.float32)
    acc, s0, s1 = (np.zeros((8, 16), np.float32) for _ in range(3))
    prog.k(x, acc, s0, s1, n)
    blocks = x.reshape(n, 8, 16)
    np.testing.assert_allclose(acc, blocks.sum(axis=0), rtol=1e-6, atol=1e-6)
    last_even = max(i for i in range(n) if i % 2 == 0)
    last_odd = max(i for i in range(n) if i % 2 == 1)
    np.testing.assert_array_equal(s0, blocks[last_even])
    np.testing.assert_array_equal(s1, blocks[last_odd])


def level3_kernel(base: int, alias: int) -> str:
    """Slot 1 of a multi tile at ``base`` is loaded; a plain tile placed at ``alias`` is
    stored: it shows slot 1's bytes when alias = base + 512 (16x8 f32 = 512 bytes)."""
    return f"""module {{
  func.func @k(%x: !pto.ptr<f32>, %out: !pto.ptr<f32>) {{
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c8 = arith.constant 8 : index
    %c16 = arith.constant 16 : index
    %base = arith.constant {base} : i64
    %al = arith.constant {alias} : i64
    {views("x", "x", "%c8")}
    {views("o", "out", "%c8")}
    %xp = pto.partition_view %xv, offsets = [%c0, %c0], sizes = [%c8, %c16]
        : !pto.tensor_view<?x?xf32> -> {PV}
    %op = pto.partition_view %ov, offsets = [%c0, %c0], sizes = [%c8, %c16]
        : !pto.tensor_view<?x?xf32> -> {PV}
    %mb = pto.alloc_multi_tile addr = %base : {MB}
    %alias = pto.alloc_tile addr = %al : {TB}
    %s1 = pto.multi_tile_get %mb[%c1] : {MB} -> {TB}
    pto.tload ins(%xp : {PV}) outs(%s1 : {TB})
    pto.tstore ins(%alias : {TB}) outs(%op : {PV})
    return
  }}
}}
"""


def test_level3_slot_k_is_at_addr_plus_k_slot_bytes():
    x = np.arange(128, dtype=np.float32).reshape(8, 16)
    out = np.zeros((8, 16), np.float32)
    load(level3_kernel(1024, 1024 + 512)).k(x, out)
    np.testing.assert_array_equal(out, x)


def test_dynamic_slot_out_of_range_is_an_error():
    text = pingpong_kernel().replace("%k = arith.remui %i, %c2 : index",
                                     "%k = arith.addi %i, %c1 : index")
    prog = load(text)
    args = [np.zeros((16, 16), np.float32)] + [np.zeros((8, 16), np.float32)] * 3
    with pytest.raises(PtoError, match="multi_tile_get.*slot 2 is out of range .*count=2"):
        prog.k(*args, 2)


def _errors(text: str, level: str | None = None) -> list[str]:
    return [str(e) for e in verify.diagnose(parse(text), "a2a3", level=level)]


def _module(body: str, mb: str = MB) -> str:
    return f"""module {{
  func.func @f() {{
    %c0 = arith.constant 0 : index
    %c5 = arith.constant 5 : index
    %a = arith.constant 64 : i64
    %b = arith.constant 4 : i64
    {body.replace("MB", mb)}
    return
  }}
}}
"""


@pytest.mark.parametrize("body,mb,level,match", [
    ("%m = pto.alloc_multi_tile : MB", MB.replace("count=2", "count=1"), None,
     "count must be >= 2"),
    ("%m = pto.alloc_multi_tile : MB", MB.replace("count=2", "count=17"), None,
     "<= 16, got 17"),
    ("%m = pto.alloc_multi_tile {pto.multi_buffer_addrs = array<i64: 0, 512>} : MB", MB, None,
     "'pto.multi_buffer_addrs' is reserved"),
    ("%m = pto.alloc_multi_tile : MB\n %s = pto.multi_tile_get %m[%c5] : MB -> " + TB, MB,
     None, "constant slot 5 is out of range for multi_tile_buf count=2"),
    ("%m = pto.alloc_multi_tile : MB\n %s = pto.multi_tile_get %m[%c0] : MB -> "
     "!pto.tile_buf<vec, 8x16xf16>", MB, None, "must equal the slot type"),
    ("%m = pto.alloc_multi_tile : MB", MB, "level3", "requires a base 'addr'"),
    ("%m = pto.alloc_multi_tile addr = %a : MB", MB, "level2", "unexpected 'addr'"),
    ("%m = pto.alloc_multi_tile addr = %b : MB", MB, "level3",
     "aligned to 32 bytes for local tile memory space, got 4"),
    ("%m = pto.alloc_multi_tile : MB",
     "!pto.multi_tile_buf<!pto.tile_buf<loc=vec, dtype=f32, rows=8, cols=16, v_row=8, "
     "v_col=16, blayout=row_major, slayout=none_box, fractal=512, pad=0, "
     "compact=row_plus_one>, count=2>", None, "row_plus_one"),
])
def test_rejected(body, mb, level, match):
    errs = _errors(_module(body, mb), level)
    assert any(match in e for e in errs), errs


def test_accepted_spellings():
    verbose = MB.replace("vec, 8x16xf32", "!pto.tile_buf<vec, 8x16xf32>")
    assert _errors(_module("%m = pto.alloc_multi_tile : MB\n"
                           " %s = pto.multi_tile_get %m[%c0] : MB -> " + TB, verbose)) == []
    assert _errors(_module("%m = pto.alloc_multi_tile addr = %a : MB"), "level3") == []


@needs_corpus
@pytest.mark.parametrize("name", ["multi_tile_get_dyn_slot_lowering.pto",
                                  "multi_tile_level3_explicit_addr.pto",
                                  "multi_tile_no_loop_unroll.pto"])
def test_corpus_files_run(name):
    prog = load(LIT / name)
    fn = next(iter(prog.module.functions()))
    args: list = []
    for a in fn.regions[0].block.args:
        shape = getattr(a.type, "shape", None)
        args.append(np.ones(shape, np.float16) if shape else 3)
    getattr(prog, fn.sym_name)(*args)


SAME_SLOT = """module {
  func.func @k(%gm : !pto.partition_tensor_view<16x16xf16>,
               %o : !pto.partition_tensor_view<16x16xf16>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %mb = pto.alloc_multi_tile : !pto.multi_tile_buf<vec, 16x16xf16, count=2>
    %a = pto.multi_tile_get %mb[%c0] : !pto.multi_tile_buf<vec, 16x16xf16, count=2>
        -> !pto.tile_buf<vec, 16x16xf16>
    %b = pto.multi_tile_get %mb[SLOT] : !pto.multi_tile_buf<vec, 16x16xf16, count=2>
        -> !pto.tile_buf<vec, 16x16xf16>
    pto.tload ins(%gm : !pto.partition_tensor_view<16x16xf16>)
        outs(%a : !pto.tile_buf<vec, 16x16xf16>)
    pto.tstore ins(%b : !pto.tile_buf<vec, 16x16xf16>)
        outs(%o : !pto.partition_tensor_view<16x16xf16>)
    return
  }
}
"""


@pytest.mark.parametrize("slot,synced", [("%c0", True), ("%c1", False)])
def test_insert_sync_sees_one_slot_through_two_selections(slot, synced):
    """Two selections of slot 0 are one buffer: the store waits for the load (MTE2 -> MTE3);
    slot 1 is other bytes."""
    from ptoisa.sanitizer.syncgen import insert_sync

    out = insert_sync(SAME_SLOT.replace("SLOT", slot))
    body = out[out.index("pto.tload"):out.index("pto.tstore")]
    assert ("wait_flag[<PIPE_MTE2>, <PIPE_MTE3>" in body) is synced, out


@pytest.mark.parametrize("count,fits", [(2, True), (4, False)])
def test_capacity_counts_every_slot(count, fits):
    """count slots of 64 KiB: two fit a2a3's 192 KiB UB, four do not."""
    mb = f"!pto.multi_tile_buf<vec, 128x128xf32, count={count}>"
    text = f"""module {{
  func.func @k(%gm : !pto.partition_tensor_view<128x128xf32>) {{
    %c0 = arith.constant 0 : index
    %mb = pto.alloc_multi_tile : {mb}
    %a = pto.multi_tile_get %mb[%c0] : {mb} -> !pto.tile_buf<vec, 128x128xf32>
    pto.tload ins(%gm : !pto.partition_tensor_view<128x128xf32>)
        outs(%a : !pto.tile_buf<vec, 128x128xf32>)
    return
  }}
}}
"""
    errs = _errors(text)
    assert (errs == []) is fits, errs
    if not fits:
        assert "UB overflow" in errs[0] and f"{count * 65536} bytes" in errs[0]

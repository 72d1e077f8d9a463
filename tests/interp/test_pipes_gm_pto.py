"""The GlobalData FIFO forms from ``.pto``: PTOAS's frontend global entries
(``pto.aic_initialize_pipe ... (gm_slot_tensor = %view)``, ``pto.talloc_to_aiv`` /
``pto.tpop_from_aic`` returning a ``!pto.tensor_view`` entry, ``pto.tpush_to_aiv(%entry)`` /
``pto.tfree_from_aic(%entry)``; PTO_IR_manual.md, ptoas-tpush-tpop-design.md) run as TALLOC /
TPUSH / TPOP / TFREE of a GlobalTensor slot. The reference is the input itself: the cube sends
six 16 x 32 tiles through a ring of SLOTS slots, each vector sub-block stores its 8 rows."""

from __future__ import annotations

import numpy as np
import pytest

from ptoisa.interp import Program
from ptoisa.sanitizer import Sanitizer
from ptoisa.text import parse

TEXT = """
module {
  func.func @both(%x : !pto.ptr<f32>, %fifo : !pto.ptr<f32>, %out : !pto.ptr<f32>)
      attributes {pto.entry} {
    func.call @cube(%x, %fifo) : (!pto.ptr<f32>, !pto.ptr<f32>) -> ()
    func.call @vector(%fifo, %out) : (!pto.ptr<f32>, !pto.ptr<f32>) -> ()
    return
  }

  func.func @cube(%x : !pto.ptr<f32>, %fifo : !pto.ptr<f32>)
      attributes {pto.kernel_kind = #pto.kernel_kind<cube>} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c16 = arith.constant 16 : index
    %c32 = arith.constant 32 : index
    %c6 = arith.constant 6 : index
    %c96 = arith.constant 96 : index
    %slot = pto.make_tensor_view %fifo, shape = [%c16, %c32], strides = [%c32, %c1]
      : !pto.tensor_view<16x32xf32>
    pto.aic_initialize_pipe {id = 0, dir_mask = 1, slot_size = 2048, slot_num = SLOTS}
      (gm_slot_tensor = %slot : !pto.tensor_view<16x32xf32>)
    %xv = pto.make_tensor_view %x, shape = [%c96, %c32], strides = [%c32, %c1]
      : !pto.tensor_view<96x32xf32>
    %t = pto.alloc_tile : MAT
    scf.for %i = %c0 to %c6 step %c1 {
      %row = arith.muli %i, %c16 : index
      %src = pto.partition_view %xv, offsets = [%row, %c0], sizes = [%c16, %c32]
        : !pto.tensor_view<96x32xf32> -> !pto.partition_tensor_view<16x32xf32>
      pto.tload ins(%src : !pto.partition_tensor_view<16x32xf32>)
        outs(%t : MAT)
      %entry = pto.talloc_to_aiv {id = 0, split = 1} -> !pto.tensor_view<16x32xf32>
      %dst = pto.partition_view %entry, offsets = [%c0, %c0], sizes = [%c16, %c32]
        : !pto.tensor_view<16x32xf32> -> !pto.partition_tensor_view<16x32xf32>
      pto.tstore ins(%t : MAT)
        outs(%dst : !pto.partition_tensor_view<16x32xf32>)
      pto.tpush_to_aiv(%entry : !pto.tensor_view<16x32xf32>) {id = 0, split = 1}
    }
    func.return
  }

  func.func @vector(%fifo : !pto.ptr<f32>, %out : !pto.ptr<f32>)
      attributes {pto.kernel_kind = #pto.kernel_kind<vector>} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c8 = arith.constant 8 : index
    %c16 = arith.constant 16 : index
    %c32 = arith.constant 32 : index
    %c6 = arith.constant 6 : index
    %c96 = arith.constant 96 : index
    %sb64 = pto.get_subblock_idx
    %sb = arith.index_cast %sb64 : i64 to index
    %half = arith.muli %sb, %c8 : index
    %slot = pto.make_tensor_view %fifo, shape = [%c8, %c32], strides = [%c32, %c1]
      : !pto.tensor_view<8x32xf32>
    pto.aiv_initialize_pipe {id = 0, dir_mask = 1, slot_size = 2048, slot_num = SLOTS}
      (gm_slot_tensor = %slot : !pto.tensor_view<8x32xf32>)
    %ov = pto.make_tensor_view %out, shape = [%c96, %c32], strides = [%c32, %c1]
      : !pto.tensor_view<96x32xf32>
    %t = pto.alloc_tile : VEC
    scf.for %i = %c0 to %c6 step %c1 {
      %entry = pto.tpop_from_aic {id = 0, split = 1} -> !pto.tensor_view<8x32xf32>
      %src = pto.partition_view %entry, offsets = [%c0, %c0], sizes = [%c8, %c32]
        : !pto.tensor_view<8x32xf32> -> !pto.partition_tensor_view<8x32xf32>
      pto.tload ins(%src : !pto.partition_tensor_view<8x32xf32>)
        outs(%t : VEC)
      pto.tfree_from_aic(%entry : !pto.tensor_view<8x32xf32>) {id = 0, split = 1}
      %r0 = arith.muli %i, %c16 : index
      %row = arith.addi %r0, %half : index
      %dst = pto.partition_view %ov, offsets = [%row, %c0], sizes = [%c8, %c32]
        : !pto.tensor_view<96x32xf32> -> !pto.partition_tensor_view<8x32xf32>
      pto.tstore ins(%t : VEC)
        outs(%dst : !pto.partition_tensor_view<8x32xf32>)
    }
    func.return
  }
}
"""
#: the tile types of the cube's and the vector's tiles
TYPES = {"MAT": "!pto.tile_buf<loc=mat, dtype=f32, rows=16, cols=32, v_row=16, v_col=32, "
                "blayout=col_major, slayout=row_major, fractal=512, pad=0>",
         "VEC": "!pto.tile_buf<loc=vec, dtype=f32, rows=8, cols=32, v_row=8, v_col=32, "
                "blayout=row_major, slayout=none_box, fractal=512, pad=0>"}
FREE = ("      pto.tfree_from_aic(%entry : !pto.tensor_view<8x32xf32>) {id = 0, split = 1}\n")
LOAD = "      pto.tload ins(%src : !pto.partition_tensor_view<8x32xf32>)\n"


def _run(slots: int, text: str = TEXT) -> tuple[np.ndarray, np.ndarray, Sanitizer]:
    text = text.replace("SLOTS", str(slots))
    for k, v in TYPES.items():
        text = text.replace(k, v)
    prog = Program(parse(text, "gm_fifo.pto"), "a2a3")
    prog.check()
    x = np.random.default_rng(slots).standard_normal((96, 32)).astype(np.float32)
    fifo = np.zeros(slots * 16 * 32, np.float32)
    out = np.zeros_like(x)
    san = Sanitizer(sync="auto")
    prog.both(x, fifo, out, sanitize=san)
    return x, out, san


@pytest.mark.parametrize("slots", [2, 4])
def test_global_entries_through_the_ring(slots):
    x, out, san = _run(slots)
    np.testing.assert_array_equal(out, x)
    assert [f for f in san.report.findings if f.kind == "race"] == []


def test_free_before_the_load_is_a_race():
    assert TEXT.count(FREE) == 1 and TEXT.count(LOAD) == 1
    early = TEXT.replace(FREE, "").replace(LOAD, FREE + LOAD)
    x, out, san = _run(2, early)
    np.testing.assert_array_equal(out, x)  # program order still computes it
    races = [f for f in san.report.findings if f.kind == "race" and "cores" in f.extra]
    assert {f.hazard for f in races} == {"WAR"}

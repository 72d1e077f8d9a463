"""Micro-ops (VPTO) under the sanitizer: they tell the bytes they touch (UB through pointers, GM
through their pointer arguments, ptoisa.vector.regs.touch), so a removed flag between a DMA
micro-op and a vector load, between a vector store and the DMA out, or between a tile and a
pointer to the same UB bytes is a race; the kernel with its flags is clean."""

from __future__ import annotations

import numpy as np
import pytest

import ptoisa as pto
from ptoisa.sanitizer import Sanitizer

# GM -> UB (MTE2), x * 2 on the vector pipe through a UB pointer, UB -> GM (MTE3); each pair of
# flags is marked so a test can drop it
KERNEL = """\
module {
  func.func @k(%src: !pto.ptr<f32, gm>, %dst: !pto.ptr<f32, gm>) attributes {pto.kernel} {
    %c0 = arith.constant 0 : index
    %c64 = arith.constant 64 : index
    %c128 = arith.constant 128 : index
    %c0_i64 = arith.constant 0 : i64
    %c1 = arith.constant 1 : i64
    %c512 = arith.constant 512 : i64
    %c1024 = arith.constant 1024 : i64
    %two = arith.constant 2.0 : f32
    %ub_in = pto.castptr %c0_i64 : i64 -> !pto.ptr<f32, ub>
    %ub_out = pto.castptr %c1024 : i64 -> !pto.ptr<f32, ub>
    pto.mte_gm_ub %src, %ub_in, %c0_i64, %c512
      nburst(%c1, %c512, %c512)
      : !pto.ptr<f32, gm>, !pto.ptr<f32, ub>, i64, i64, i64, i64, i64
    pto.set_flag["PIPE_MTE2", "PIPE_V", "EVENT_ID0"]  // IN
    pto.wait_flag["PIPE_MTE2", "PIPE_V", "EVENT_ID0"]  // IN
    pto.vecscope {
      scf.for %off = %c0 to %c128 step %c64 {
        %m = pto.pset_b32 "PAT_ALL" : !pto.mask<b32>
        %v = pto.vlds %ub_in[%off] : !pto.ptr<f32, ub> -> !pto.vreg<64xf32>
        %w = pto.vmuls %v, %two, %m : !pto.vreg<64xf32>, f32, !pto.mask<b32> -> !pto.vreg<64xf32>
        pto.vsts %w, %ub_out[%off], %m : !pto.vreg<64xf32>, !pto.ptr<f32, ub>, !pto.mask<b32>
      }
    }
    pto.set_flag["PIPE_V", "PIPE_MTE3", "EVENT_ID0"]  // OUT
    pto.wait_flag["PIPE_V", "PIPE_MTE3", "EVENT_ID0"]  // OUT
    pto.mte_ub_gm %ub_out, %dst, %c512
      nburst(%c1, %c512, %c512)
      : !pto.ptr<f32, ub>, !pto.ptr<f32, gm>, i64, i64, i64, i64
    pto.barrier #pto.pipe<PIPE_ALL>
    return
  }
}
"""


def _run(drop: str | None) -> tuple[Sanitizer, np.ndarray, np.ndarray]:
    text = "\n".join(ln for ln in KERNEL.splitlines() if drop is None
                     or not ln.endswith(f"// {drop}"))
    prog = pto.load(text, filename="k.pto", target="a5")
    src = np.arange(128, dtype=np.float32)
    dst = np.zeros(128, np.float32)
    san = Sanitizer()
    prog.run("k", src, dst, target="a5", sanitize=san)
    return san, src, dst


def test_the_kernel_with_its_flags_is_clean_and_right() -> None:
    san, src, dst = _run(None)
    np.testing.assert_array_equal(dst, 2 * src)
    assert not san.report.findings, str(san.report)
    assert san.mode == "manual"


@pytest.mark.parametrize(("drop", "reader", "writer", "space"), [
    ("IN", "pto.vlds", "pto.mte_gm_ub", "UB"),
    ("OUT", "pto.mte_ub_gm", "pto.vsts", "UB"),
])
def test_a_removed_flag_between_micro_ops_is_a_race(drop: str, reader: str, writer: str,
                                                     space: str) -> None:
    san, _, _ = _run(drop)
    races = [f for f in san.report.findings if f.kind == "race"]
    assert races, str(san.report)
    text = str(san.report)
    assert "RAW" in text and reader in text and writer in text and space in text


TILE_T = ("!pto.tile_buf<loc=vec, dtype=f32, rows=1, cols=64, v_row=1, v_col=64, "
          "blayout=row_major, slayout=none_box, fractal=512, pad=0>")
TILE_THEN_POINTER = """\
module {
  func.func @k(%x: !pto.ptr<f32>, %dst: !pto.ptr<f32, gm>) attributes {pto.kernel} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c64 = arith.constant 64 : index
    %c0_i64 = arith.constant 0 : i64
    %c1_i64 = arith.constant 1 : i64
    %c256 = arith.constant 256 : i64
    %c4096 = arith.constant 4096 : i64
    %tv = pto.make_tensor_view %x, shape = [%c1, %c64], strides = [%c64, %c1]
      : !pto.tensor_view<?x?xf32>
    %pv = pto.partition_view %tv, offsets = [%c0, %c0], sizes = [%c1, %c64]
      : !pto.tensor_view<?x?xf32> -> !pto.partition_tensor_view<1x64xf32>
    %t = pto.alloc_tile addr = %c0_i64
      : TILE_T
    pto.tload ins(%pv : !pto.partition_tensor_view<1x64xf32>)
      outs(%t : TILE_T)
    pto.set_flag["PIPE_MTE2", "PIPE_V", "EVENT_ID0"]  // TILE
    pto.wait_flag["PIPE_MTE2", "PIPE_V", "EVENT_ID0"]  // TILE
    %p = pto.castptr %c0_i64 : i64 -> !pto.ptr<f32, ub>
    %q = pto.castptr %c4096 : i64 -> !pto.ptr<f32, ub>
    pto.vecscope {
      %m = pto.pset_b32 "PAT_ALL" : !pto.mask<b32>
      %v = pto.vlds %p[%c0] : !pto.ptr<f32, ub> -> !pto.vreg<64xf32>
      pto.vsts %v, %q[%c0], %m : !pto.vreg<64xf32>, !pto.ptr<f32, ub>, !pto.mask<b32>
    }
    pto.set_flag["PIPE_V", "PIPE_MTE3", "EVENT_ID0"]
    pto.wait_flag["PIPE_V", "PIPE_MTE3", "EVENT_ID0"]
    pto.mte_ub_gm %q, %dst, %c256
      nburst(%c1_i64, %c256, %c256)
      : !pto.ptr<f32, ub>, !pto.ptr<f32, gm>, i64, i64, i64, i64
    pto.barrier #pto.pipe<PIPE_ALL>
    return
  }
}
"""


@pytest.mark.parametrize("drop", [None, "TILE"])
def test_a_tile_and_a_pointer_to_its_bytes_are_ordered_by_flags(drop: str | None) -> None:
    text = "\n".join(ln for ln in TILE_THEN_POINTER.replace("TILE_T", TILE_T).splitlines()
                     if drop is None or not ln.endswith(f"// {drop}"))
    prog = pto.load(text, filename="t.pto", target="a5")
    x = np.arange(64, dtype=np.float32)
    out = np.zeros(64, np.float32)
    san = Sanitizer()
    prog.run("k", x, out, target="a5", sanitize=san)
    np.testing.assert_array_equal(out, x)
    races = [f for f in san.report.findings if f.kind == "race"]
    if drop is None:
        assert not san.report.findings, str(san.report)
    else:
        assert races and "pto.tload" in str(san.report) and "pto.vlds" in str(san.report), \
            str(san.report)


# the same kernel ordered by A5 buffer ids (micro-isa/01, mode 0): a get_buf waits for every
# earlier rls_buf of its id; dropping one pair's get or release is a race
BUF_FLAGS = {
    "IN": ('    pto.set_flag["PIPE_MTE2", "PIPE_V", "EVENT_ID0"]  // IN',
           '    pto.wait_flag["PIPE_MTE2", "PIPE_V", "EVENT_ID0"]  // IN'),
    "OUT": ('    pto.set_flag["PIPE_V", "PIPE_MTE3", "EVENT_ID0"]  // OUT',
            '    pto.wait_flag["PIPE_V", "PIPE_MTE3", "EVENT_ID0"]  // OUT'),
}


def _buf_kernel(drop: str | None) -> str:
    text = KERNEL
    for (s, w) in BUF_FLAGS.values():
        text = text.replace(s + "\n", "").replace(w + "\n", "")
    get = '    pto.get_buf "PIPE_{p}", {i}, 0\n'
    rls = '    pto.rls_buf "PIPE_{p}", {i}, 0\n'
    body = {
        "    pto.mte_gm_ub": (get.format(p="MTE2", i=0), rls.format(p="MTE2", i=0), 3),
        "    pto.vecscope": (get.format(p="V", i=0) + get.format(p="V", i=1),
                            rls.format(p="V", i=0) + rls.format(p="V", i=1), 8),
        "    pto.mte_ub_gm": (get.format(p="MTE3", i=1), rls.format(p="MTE3", i=1), 3),
    }
    lines = text.splitlines(keepends=True)
    out: list[str] = []
    k = 0
    while k < len(lines):
        ln = lines[k]
        hit = next((v for key, v in body.items() if ln.startswith(key)), None)
        if hit is None:
            out.append(ln)
            k += 1
            continue
        g, r, n = hit
        block = "".join(lines[k:k + n])
        if drop != "V" or "vecscope" not in ln:
            out.append(g)
        out.append(block)
        out.append(r)
        k += n
    return "".join(out)


@pytest.mark.parametrize("drop", [None, "V"])
def test_buffer_ids_order_the_pipes(drop: str | None) -> None:
    prog = pto.load(_buf_kernel(drop), filename="b.pto", target="a5")
    src = np.arange(128, dtype=np.float32)
    dst = np.zeros(128, np.float32)
    san = Sanitizer()
    prog.run("k", src, dst, target="a5", sanitize=san)
    np.testing.assert_array_equal(dst, 2 * src)
    races = [f for f in san.report.findings if f.kind == "race"]
    if drop is None:
        assert not san.report.findings and san.report.clean, str(san.report)
    else:  # the vector pipe no longer waits for the DMA's release of buffer 0
        assert races and "pto.vlds" in str(san.report) and "pto.mte_gm_ub" in str(san.report)
    # the cycle model orders them the same way: the vector work starts after the DMA in
    rep = prog.run("k", src, dst, target="a5", cycles=True)
    assert rep.total > 0


def test_buffer_id_mode_1_is_reported_as_not_modelled() -> None:
    text = _buf_kernel(None).replace('"PIPE_V", 0, 0', '"PIPE_V", 0, 1')
    san = Sanitizer()
    pto.load(text, filename="b.pto", target="a5").run(
        "k", np.ones(128, np.float32), np.zeros(128, np.float32), target="a5", sanitize=san)
    assert not san.report.clean and "pto.get_buf" in san.report.unchecked

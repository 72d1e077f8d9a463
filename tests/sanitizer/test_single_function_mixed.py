"""A mixed kernel written as one function runs as its cores under the sanitizer, so its
cross-core flags are matched between the cores and a removed one is found: eager (one kernel,
``core_type()`` branches, ``mixed=True``) and ``.pto`` (one function, ``pto.section.cube`` /
``pto.section.vector``). Launched on one core, the same flags order nothing that runs: the
report says they were not checked instead of answering clean."""

from __future__ import annotations

import numpy as np
import pytest

import ptoisa as pto
from ptoisa import GlobalTensor, Tile
from ptoisa.sanitizer import Sanitizer

P = pto.Pipe
R, C = 16, 16


def _gm(a: np.ndarray, rows: int, off: object = 0) -> GlobalTensor:
    return GlobalTensor(a, (1, 1, 1, rows, C), (a.size, a.size, a.size, C, 1), offset=off)


def _kernel(set_flag: bool, wait_flag: bool):
    """AIC: x -> L1 -> y (GM); AIV k: its 8 rows of y -> UB -> out, after the AIC's flag."""
    def k(x, y, out):
        if pto.core_type() in ("AIC", "ANY"):
            t = Tile("Mat", "f32", R, C)
            pto.TLOAD(t, _gm(x, R))
            pto.TSTORE(_gm(y, R), t)
            if set_flag:
                pto.SYNC_SET(P.MTE3, 0)
        if pto.core_type() in ("AIV", "ANY"):
            if wait_flag:
                pto.SYNC_WAIT(P.MTE2, 0)
            off = pto.get_subblock_idx() * (R // 2) * C
            v = Tile("Vec", "f32", R // 2, C)
            pto.TLOAD(v, _gm(y, R // 2, off))
            pto.TSTORE(_gm(out, R // 2, off), v)
    return k


def _xyz():
    x = np.random.default_rng(1).standard_normal((R, C)).astype(np.float32)
    return x, np.zeros_like(x), np.zeros_like(x)


def _cross(report):
    return [f for f in report.findings if f.kind == "race" and "between cores" in f.message]


def test_eager_one_function_runs_as_its_cores():
    x, y, out = _xyz()
    r = pto.launch(_kernel(True, True), x, y, out, mixed=True, target="a2a3",
                   sanitize=Sanitizer(sync="auto"))
    assert r.clean, str(r)
    np.testing.assert_array_equal(out, x)
    # the flag taken out: the AIVs' loads race with the AIC's store
    r = pto.launch(_kernel(False, False), *_xyz(), mixed=True, target="a2a3",
                   sanitize=Sanitizer(sync="auto"))
    (f,) = _cross(r)
    assert (f.site.op, f.other.op, f.hazard) == ("TLOAD", "TSTORE", "RAW")
    assert "pto.SYNC_SET(pto.Pipe.MTE3, 0) after TSTORE" in f.fix


def test_eager_cross_core_flags_on_one_core_are_not_checked():
    r = pto.launch(_kernel(True, True), *_xyz(), target="a2a3",
                   sanitize=Sanitizer(sync="auto"))
    assert not r.findings and not r.clean
    assert set(r.unchecked) == {"SYNC_SET", "SYNC_WAIT"}
    assert "a cross-core flag in a launch on one core" in str(r)


_PTO = """module {
  func.func @k(%x: !pto.ptr<f32>, %y: !pto.ptr<f32>, %o: !pto.ptr<f32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c8 = arith.constant 8 : index
    %c16 = arith.constant 16 : index
    %vx = pto.make_tensor_view %x, shape = [%c16, %c16], strides = [%c16, %c1] : !pto.tensor_view<?x?xf32>
    %vy = pto.make_tensor_view %y, shape = [%c16, %c16], strides = [%c16, %c1] : !pto.tensor_view<?x?xf32>
    %vo = pto.make_tensor_view %o, shape = [%c16, %c16], strides = [%c16, %c1] : !pto.tensor_view<?x?xf32>
    pto.section.cube {
      %m = pto.alloc_tile : !pto.tile_buf<loc=mat, dtype=f32, rows=16, cols=16, v_row=16, v_col=16, blayout=col_major, slayout=row_major, fractal=512, pad=0>
      %px = pto.partition_view %vx, offsets = [%c0, %c0], sizes = [%c16, %c16] : !pto.tensor_view<?x?xf32> -> !pto.partition_tensor_view<16x16xf32>
      %py = pto.partition_view %vy, offsets = [%c0, %c0], sizes = [%c16, %c16] : !pto.tensor_view<?x?xf32> -> !pto.partition_tensor_view<16x16xf32>
      pto.tload ins(%px : !pto.partition_tensor_view<16x16xf32>) outs(%m : !pto.tile_buf<loc=mat, dtype=f32, rows=16, cols=16, v_row=16, v_col=16, blayout=col_major, slayout=row_major, fractal=512, pad=0>)
      pto.set_flag[<PIPE_MTE2>, <PIPE_MTE3>, <EVENT_ID0>]
      pto.wait_flag[<PIPE_MTE2>, <PIPE_MTE3>, <EVENT_ID0>]
      pto.tstore ins(%m : !pto.tile_buf<loc=mat, dtype=f32, rows=16, cols=16, v_row=16, v_col=16, blayout=col_major, slayout=row_major, fractal=512, pad=0>) outs(%py : !pto.partition_tensor_view<16x16xf32>)
      pto.sync.set #pto.pipe<PIPE_MTE3>, 0
    }
    pto.section.vector {
      pto.sync.wait #pto.pipe<PIPE_MTE2>, 0
      %sb = pto.get_subblock_idx
      %sbi = arith.index_cast %sb : i64 to index
      %row = arith.muli %sbi, %c8 : index
      %v = pto.alloc_tile : !pto.tile_buf<loc=vec, dtype=f32, rows=8, cols=16, v_row=8, v_col=16, blayout=row_major, slayout=none_box, fractal=512, pad=0>
      %py = pto.partition_view %vy, offsets = [%row, %c0], sizes = [%c8, %c16] : !pto.tensor_view<?x?xf32> -> !pto.partition_tensor_view<8x16xf32>
      %po = pto.partition_view %vo, offsets = [%row, %c0], sizes = [%c8, %c16] : !pto.tensor_view<?x?xf32> -> !pto.partition_tensor_view<8x16xf32>
      pto.tload ins(%py : !pto.partition_tensor_view<8x16xf32>) outs(%v : !pto.tile_buf<loc=vec, dtype=f32, rows=8, cols=16, v_row=8, v_col=16, blayout=row_major, slayout=none_box, fractal=512, pad=0>)
      pto.set_flag[<PIPE_MTE2>, <PIPE_MTE3>, <EVENT_ID0>]
      pto.wait_flag[<PIPE_MTE2>, <PIPE_MTE3>, <EVENT_ID0>]
      pto.tstore ins(%v : !pto.tile_buf<loc=vec, dtype=f32, rows=8, cols=16, v_row=8, v_col=16, blayout=row_major, slayout=none_box, fractal=512, pad=0>) outs(%po : !pto.partition_tensor_view<8x16xf32>)
    }
    return
  }
}
"""  # noqa: E501
_SET = "      pto.sync.set #pto.pipe<PIPE_MTE3>, 0\n"
_WAIT = "      pto.sync.wait #pto.pipe<PIPE_MTE2>, 0\n"

_M = "!pto.tile_buf<loc=mat, dtype=f32, rows=16, cols=16, v_row=16, v_col=16, " \
    "blayout=col_major, slayout=row_major, fractal=512, pad=0>"
_L, _R, _A = (f"!pto.tile_buf<loc={loc}, dtype=f32, rows=16, cols=16, v_row=16, v_col=16, "
              f"blayout={b}, slayout={s}, fractal={f}, pad=0>"
              for loc, b, s, f in (("left", "col_major", "row_major", 512),
                                   ("right", "row_major", "col_major", 512),
                                   ("acc", "col_major", "row_major", 1024)))
_P16 = "!pto.partition_tensor_view<16x16xf32>"
_TV = "!pto.tensor_view<?x?xf32>"
_FLAG = "      pto.set_flag[<PIPE_{0}>, <PIPE_{1}>, <EVENT_ID0>]\n" \
    "      pto.wait_flag[<PIPE_{0}>, <PIPE_{1}>, <EVENT_ID0>]\n"
#: A5 stores no Mat tile (TSTORE.md): the cube stores its accumulator, x @ I (the identity
#: %e, exact in f32: one nonzero product per element), on PIPE_FIX
_A5_CUBE_STORE = (
    "      %ve = pto.make_tensor_view %e, shape = [%c16, %c16], strides = [%c16, %c1] : "
    f"{_TV}\n"
    "      %pe = pto.partition_view %ve, offsets = [%c0, %c0], sizes = [%c16, %c16] : "
    f"{_TV} -> {_P16}\n"
    f"      %te = pto.alloc_tile : {_M}\n      %l = pto.alloc_tile : {_L}\n"
    f"      %r = pto.alloc_tile : {_R}\n      %acc = pto.alloc_tile : {_A}\n"
    f"      pto.tload ins(%pe : {_P16}) outs(%te : {_M})\n"
    + _FLAG.format("MTE2", "MTE1")
    + f"      pto.tmov ins(%m : {_M}) outs(%l : {_L})\n"
    f"      pto.tmov ins(%te : {_M}) outs(%r : {_R})\n"
    + _FLAG.format("MTE1", "M")
    + f"      pto.tmatmul ins(%l, %r : {_L}, {_R}) outs(%acc : {_A})\n"
    + _FLAG.format("M", "FIX")
    + f"      pto.tstore ins(%acc : {_A}) outs(%py : {_P16})\n")


def _a5(text: str) -> str:
    """The program as A5 runs it: the cube's store through its Acc (_A5_CUBE_STORE), its
    cross-core set on PIPE_FIX, one per vector core (AIV1's id 0 is the cube's id 16); the
    identity is a fourth argument."""
    lines = text.splitlines(keepends=True)
    at = next(i for i, ln in enumerate(lines) if ln.startswith("      pto.set_flag"))
    assert "pto.tstore" in lines[at + 2]
    out = "".join(lines[:at] + [_A5_CUBE_STORE] + lines[at + 3:])
    out = out.replace("%o: !pto.ptr<f32>)", "%o: !pto.ptr<f32>, %e: !pto.ptr<f32>)", 1)
    fix_set = _SET.replace("MTE3", "FIX")
    return out.replace(_SET, fix_set + fix_set.replace(", 0", ", 16"))


def _line(text: str, start: str) -> int:
    """The 1-based line of the only line of ``text`` that starts with ``start``."""
    (n,) = [i + 1 for i, ln in enumerate(text.splitlines()) if ln.startswith(start)]
    return n


@pytest.mark.parametrize("target", ["a2a3", "a5"])
def test_pto_one_function_runs_as_its_cores(target):
    text, args, pipe = _PTO, (), "PIPE_MTE3"
    if target == "a5":
        text, args, pipe = _a5(_PTO), (np.eye(C, dtype=np.float32),), "PIPE_FIX"
    sets = [ln for ln in text.splitlines(keepends=True) if "pto.sync.set" in ln]
    x, y, out = _xyz()
    san = Sanitizer()
    pto.load(text, target=target, filename="k.pto").k(x, y, out, *args, sanitize=san)
    assert san.report.clean, str(san.report)
    np.testing.assert_array_equal(out, x)
    # the cross-core pair taken out (with only one side gone the wait hangs, or the set leaks)
    san = Sanitizer()
    racy = text.replace(_WAIT, "")
    for ln in sets:
        racy = racy.replace(ln, "")
    pto.load(racy, target=target, filename="k.pto").k(*_xyz(), *args, sanitize=san)
    (f,) = _cross(san.report)
    assert (f.site.op, f.other.op, f.hazard) == ("pto.tload", "pto.tstore", "RAW")
    st = _line(racy, "      pto.tstore ins(%m" if target != "a5" else "      pto.tstore ins(%acc")
    ld = _line(racy, "      pto.tload ins(%py")
    if target == "a2a3":
        assert (st, ld) == (17, 26)
    assert f.fix.startswith(f"insert pto.sync.set #pto.pipe<{pipe}>, 0 after pto.tstore at "
                            f"k.pto:{st}:7 on AIC and pto.sync.wait #pto.pipe<PIPE_MTE2>, 0 "
                            f"before pto.tload at k.pto:{ld}:7 on AIV")

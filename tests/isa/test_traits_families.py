"""The elementwise, reduce, irregular and debug families read target traits, not names.

Each test runs a5 and a throwaway variant of a5 with one trait set to the CPU simulator's
value; the expectations are hand-computed (or quoted from the instruction's documented
example), never produced by ptoisa.
"""

from __future__ import annotations

import numpy as np
import pytest

import ptoisa as pto
from ptoisa import CmpMode, RoundMode, Tile, TileType
from ptoisa.dtypes import dtype
from ptoisa.isa.quant import quant_mode
from ptoisa.targets import get_target


def _variant(**traits):
    return get_target("a5").derive("a5t", traits=traits)


def _vec(dt, rows, cols, values=None, valid=None):
    t = Tile(TileType.Vec, dt, rows, cols, valid=valid or (rows, cols))
    if values is not None:
        t.load_numpy(np.asarray(values))
    return t


def _run(target, fn):
    with pto.target(target):
        return fn()


def test_reduce_order_tree_or_sequential():
    # the TROWPROD page example: f16 row [3, 683, 3] -> 6148 as a tree, 6144 left to right
    def rowprod():
        src = _vec("f16", 1, 16, np.array([[3, 683, 3] + [1] * 13], np.float16), valid=(1, 3))
        dst = _vec("f16", 1, 16)
        pto.TROWPROD(dst, src, _vec("f16", 1, 16))
        return float(dst.numpy()[0, 0])

    assert _run("a5", rowprod) == 6148.0
    assert _run(_variant(reduce_order="sequential"), rowprod) == 6144.0


def test_reduce_nan_propagate_or_fold():
    def rowmax():
        src = _vec("f32", 1, 8, np.array([[1, np.nan, 3, 0, 0, 0, 0, 0]], np.float32),
                   valid=(1, 3))
        dst = _vec("f32", 1, 8)
        pto.TROWMAX(dst, src, _vec("f32", 1, 8))
        return float(dst.numpy()[0, 0])

    assert np.isnan(_run("a5", rowmax))
    assert _run(_variant(reduce_nan="fold"), rowmax) == 3.0  # NaN only counts first


def test_cmp_i32_eq_only():
    def lt_bits():
        a = _vec("i32", 1, 8, np.array([[1, 2, 3, 4, 5, 6, 7, 8]], np.int32))
        b = _vec("i32", 1, 8, np.full((1, 8), 2, np.int32))
        dst = _vec("ui32", 1, 8)
        pto.TCMP(dst, a, b, CmpMode.LT)
        return int(dst.numpy()[0, 0]) & 0xFF

    assert _run("a5", lt_bits) == 0b1  # 1 < 2
    assert _run(_variant(cmp_i32_eq_only=True), lt_bits) == 0b10  # compared as 2 == 2


def test_cvt_saturation_default_and_casts():
    def cvt(src_dt, dst_dt, x, mode=None):
        src = _vec(src_dt, 1, 16, np.full((1, 16), x, np.float32))
        dst = _vec(dst_dt, 1, 16)
        if mode is None:
            pto.TCVT(dst, src)
        else:
            pto.TCVT(dst, src, mode)
        return dst.numpy()[0, 0]

    # 40000 -> i16: saturates to 32767; without saturation wraps to 40000 - 65536
    assert _run("a5", lambda: cvt("f32", "i16", 40000.0)) == 32767
    assert _run(_variant(cvt_saturate_default=False),
                lambda: cvt("f32", "i16", 40000.0)) == -25536
    # f32 -> f32 with RINT: the NPU's round-only path gives 2.0; a host cast keeps 2.5
    assert _run("a5", lambda: cvt("f32", "f32", 2.5, RoundMode.CAST_RINT)) == 2.0
    assert _run(_variant(cvt_casts="x86"),
                lambda: cvt("f32", "f32", 2.5, RoundMode.CAST_RINT)) == 2.5


def test_quant_pairs_trait():
    f32, f16 = dtype("f32"), dtype("f16")
    assert quant_mode(get_target("a5"), f32, f16) == "FLOAT"
    narrow = _variant(quant_pairs=get_target("a2a3").traits.quant_pairs)
    assert quant_mode(narrow, f32, f16) is None
    assert quant_mode(narrow.traits, dtype("i32"), dtype("i16")) == "SHIFT16"
    assert quant_mode("a2a3", f32, f16) is None  # a target's name still works


def test_npu_static_checks():
    # (the NPUs' index width rule of TSCATTER: 4-byte data takes 32-bit indexes)
    def scatter_i16():
        src = _vec("f32", 1, 16, np.arange(16, dtype=np.float32)[None])
        idx = _vec("i16", 1, 16, np.arange(15, -1, -1, dtype=np.int16)[None])
        dst = _vec("f32", 1, 16)
        pto.TSCATTER(dst, src, idx)
        return dst.numpy()

    with pytest.raises(pto.PtoError, match="4-byte data needs 32-bit indexes"):
        _run("a5", scatter_i16)
    got = _run(_variant(npu_static_checks=False), scatter_i16)
    assert (got == np.arange(15, -1, -1, dtype=np.float32)[None]).all()


def test_per_target_declarations_follow_the_lineage():
    """A variant of a5 makes a5's one-NPU valid-region check (TXORS, runtime_for) and its
    TROWEXPAND check; a2a3's impl_for (TROWEXPAND on an empty src) does not apply."""
    def xors():
        src = _vec("i32", 2, 8, np.zeros((2, 8), np.int32))
        dst = _vec("i32", 2, 8, valid=(2, 4))
        pto.TXORS(dst, src, 1, _vec("i32", 2, 8))

    for t in ("a5", _variant(reduce_order="sequential")):
        with pytest.raises(pto.PtoError, match=f"src0 valid region 2x8 must equal dst valid "
                                               f"region 2x4 on {t}"):
            _run(t, xors)
    _run("a2a3", xors)  # a2a3 does not make this check

    def rowexpand_empty():
        src = _vec("f32", 4, 8, np.ones((4, 8), np.float32), valid=(0, 1))
        dst = _vec("f32", 4, 8, np.zeros((4, 8), np.float32))
        pto.TROWEXPAND(dst, src)
        return dst.numpy()

    with pytest.raises(pto.PtoError, match="is empty"):
        _run(_variant(reduce_nan="fold"), rowexpand_empty)
    assert (_run("a2a3", rowexpand_empty) == 0).all()  # a2a3: nothing is written

"""TMOV / TMOV_FP against numpy references: layout repacks, Mat -> L0/Bias, fix-pipe paths."""

from __future__ import annotations

import numpy as np
import pytest

import ptoisa as pto
from ptoisa.errors import IllegalInstruction, RuntimeCheckError
from ptoisa.isa import REGISTRY
from ptoisa.tile import Tile, TileAcc, TileLeft, TileRight

R = REGISTRY
RNG = np.random.default_rng(11)
LAYOUTS = {"ND": ("RowMajor", "NoneBox"), "DN": ("ColMajor", "NoneBox"),
           "NZ": ("ColMajor", "RowMajor"), "ZN": ("RowMajor", "ColMajor")}


@pytest.mark.parametrize("tgt", ["cpu", "a2a3", "a5"])
@pytest.mark.parametrize("dt", ["f16", "f32", "i8", "bf16"])
@pytest.mark.parametrize("src_l,dst_l", [("ND", "NZ"), ("DN", "ND"), ("NZ", "DN"), ("ND", "ZN")])
def test_vec_to_vec_repack(tgt: str, dt: str, src_l: str, dst_l: str) -> None:
    with pto.target(tgt):
        rows, cols = 32, 64
        sb, ss = LAYOUTS[src_l]
        db, ds = LAYOUTS[dst_l]
        src = Tile("Vec", dt, rows, cols, sb, (29, 50), ss)
        dst = Tile("Vec", dt, rows, cols, db, (29, 50), ds)
        full = RNG.integers(-100, 100, (rows, cols)).astype(pto.dtype(dt).np)
        src.write(full)
        dst.fill(0, rows, cols)
        R["TMOV"](dst, src)
        want = np.zeros_like(full)
        want[:29, :50] = full[:29, :50]
        np.testing.assert_array_equal(dst.numpy(), want)


@pytest.mark.parametrize("tgt", ["cpu", "a2a3", "a5"])
@pytest.mark.parametrize("dt", ["f16", "f32", "i8"])
def test_mat_to_left_right(tgt: str, dt: str) -> None:
    with pto.target(tgt):
        a_mat = Tile("Mat", dt, 32, 64, "ColMajor", (20, 40), "RowMajor")
        b_mat = Tile("Mat", dt, 64, 32, "ColMajor", (40, 30), "RowMajor")
        av = RNG.integers(-9, 9, (32, 64)).astype(pto.dtype(dt).np)
        bv = RNG.integers(-9, 9, (64, 32)).astype(pto.dtype(dt).np)
        a_mat.write(av)
        b_mat.write(bv)
        a = TileLeft(dt, 32, 64, valid=(20, 40))
        b = TileRight(dt, 64, 32, valid=(40, 30))
        R["TMOV"](a, a_mat)
        R["TMOV"](b, b_mat)
        np.testing.assert_array_equal(a.numpy(True), av[:20, :40])
        np.testing.assert_array_equal(b.numpy(True), bv[:40, :30])


@pytest.mark.parametrize("tgt,src_dt", [("cpu", "f16"), ("a2a3", "f16"), ("a5", "bf16"),
                                        ("a5", "f32"), ("a2a3", "i32")])
def test_mat_to_bias_widens(tgt: str, src_dt: str) -> None:
    dst_dt = "i32" if src_dt == "i32" else "f32"
    with pto.target(tgt):
        src = Tile("Mat", src_dt, 1, 32, valid=(1, 32))
        vals = (RNG.standard_normal((1, 32)) * 8).astype(pto.dtype(src_dt).np)
        src.write(vals)
        dst = Tile("Bias", dst_dt, 1, 32)
        R["TMOV"](dst, src)
        np.testing.assert_array_equal(dst.numpy(), vals.astype(pto.dtype(dst_dt).np))


@pytest.mark.parametrize("tgt,dst_loc", [("cpu", "Vec"), ("a2a3", "Mat"), ("a5", "Vec"),
                                         ("a5", "Mat")])
@pytest.mark.parametrize("dst_dt", ["f32", "f16", "bf16"])
@pytest.mark.parametrize("relu", [False, True])
def test_acc_out_converts(tgt: str, dst_loc: str, dst_dt: str, relu: bool) -> None:
    with pto.target(tgt):
        acc = TileAcc("f32", 32, 32, valid=(17, 30))
        vals = (RNG.standard_normal((32, 32)) * 100).astype(np.float32)
        acc.write(vals)
        layout = ("RowMajor", "NoneBox") if dst_loc == "Vec" else ("ColMajor", "RowMajor")
        dst = Tile(dst_loc, dst_dt, 32, 32, layout[0], (17, 30), layout[1])
        R["TMOV"](dst, acc, reluMode="NormalRelu" if relu else "NoRelu")
        want = vals[:17, :30]
        if relu:
            want = np.maximum(want, 0)
        np.testing.assert_array_equal(dst.numpy(True), want.astype(pto.dtype(dst_dt).np))


def _vector_word(scale: float, offset: int = 0, signed: bool = True) -> int:
    """A vector quant word: 19-bit float scale in bits 13..31, offset 37..45, sign bit 46."""
    f = np.array([scale], np.float32).view(np.uint32)[0]
    field = ((int(f) >> 31) << 18) | (((int(f) >> 23) & 0xFF) << 10) | ((int(f) >> 13) & 0x3FF)
    return (field << 13) | (offset << 37) | (int(signed) << 46)


@pytest.mark.parametrize("tgt", ["cpu", "a2a3", "a5"])
@pytest.mark.parametrize("form", ["vector", "scalar", "tmov_fp"])
def test_acc_quantised_to_i8(tgt: str, form: str) -> None:
    with pto.target(tgt):
        acc = TileAcc("f32", 16, 32, valid=(16, 32))
        vals = (RNG.standard_normal((16, 32)) * 200).astype(np.float32)
        acc.write(vals)
        loc = "Mat" if tgt == "a2a3" else "Vec"
        lay = ("ColMajor", "RowMajor") if loc == "Mat" else ("RowMajor", "NoneBox")
        dst = Tile(loc, "i8", 16, 32, lay[0], None, lay[1])
        scales = np.array([0.25 if j % 2 else 0.5 for j in range(32)], np.float32)
        if form == "scalar":
            word = int(np.array([0.5], np.float32).view(np.uint32)[0]) | (1 << 46)
            R["TMOV"](dst, acc, word)
            scales = np.full(32, 0.5, np.float32)
        else:
            fp = Tile("Scaling", "ui64", 1, 32)
            fp.write(np.array([[_vector_word(float(s)) for s in scales]], np.uint64))
            R["TMOV_FP" if form == "tmov_fp" else "TMOV"](dst, acc, fp)
        want = np.clip(np.rint(vals * scales[None, :]), -128, 127).astype(np.int8)
        np.testing.assert_array_equal(dst.numpy(), want)


def test_mx_scale_repack_dn_to_zz() -> None:
    with pto.target("a5"):
        src = Tile("Vec", "ui8", 4, 64)  # DN-grouped exponents: (K/32) x N
        vals = RNG.integers(0, 255, (4, 64)).astype(np.uint8)
        src.write(vals)
        dst = Tile("Mat", "ui8", 64, 4, "RowMajor", None, "RowMajor", 32)  # ZZ
        tmp = Tile("Vec", "ui8", 1, 32)
        R["TMOV"](dst, src, tmp, grp_axis=0)
        np.testing.assert_array_equal(dst.numpy(), vals.T)
        nd = Tile("Mat", "ui8", 16, 64, "RowMajor", (4, 64), "RowMajor", 32)
        R["TMOV"](nd, src, tmp)
        np.testing.assert_array_equal(nd.numpy(True), vals)


def test_mat_to_scale_tiles_and_fp4() -> None:
    with pto.target("a5"):
        s_mat = Tile("Mat", "f8E8M0", 16, 2, "RowMajor", None, "RowMajor", 32)
        codes = RNG.integers(100, 150, (16, 2)).astype(np.uint8)
        s_mat.write(codes.view(pto.dtype("f8E8M0").np))
        s_l = Tile("ScaleLeft", "f8E8M0", 16, 2, "RowMajor", None, "RowMajor", 32)
        R["TMOV"](s_l, s_mat)
        np.testing.assert_array_equal(s_l.numpy().view(np.uint8), codes)
        f4 = Tile("Mat", "f4E2M1x2", 16, 64, "ColMajor", None, "RowMajor")
        c4 = RNG.integers(0, 16, (16, 64)).astype(np.uint8)
        f4.write(c4)
        left = TileLeft("f4E2M1x2", 16, 64)
        R["TMOV"](left, f4)
        np.testing.assert_array_equal(left.numpy(), c4)
        assert left.spec.nbytes == 512  # two codes per byte


def test_illegal_moves() -> None:
    with pto.target("a2a3"):
        v = Tile("Vec", "f32", 16, 16)
        with pytest.raises(IllegalInstruction, match="move Vec -> Left is not supported on a2a3"):
            R["TMOV"](TileLeft("f32", 16, 16), v)
        with pytest.raises(IllegalInstruction, match="same static shape on a2a3"):
            R["TMOV"](Tile("Vec", "f32", 16, 32), v)
        with pytest.raises(IllegalInstruction, match="only Acc sources convert"):
            R["TMOV"](Tile("Vec", "f16", 16, 16), v)
        with pytest.raises(IllegalInstruction, match="reluMode applies to Acc sources"):
            R["TMOV"](Tile("Vec", "f32", 16, 16), v, reluMode="NormalRelu")
        with pytest.raises(IllegalInstruction, match="Bias row must be a multiple of 64 bytes"):
            R["TMOV"](Tile("Bias", "f32", 1, 8), Tile("Mat", "f32", 1, 8))
        with pytest.raises(IllegalInstruction, match="move Vec -> Vec is not supported"):
            R["TMOV_FP"](Tile("Vec", "i8", 16, 32), Tile("Vec", "i8", 16, 32),
                         Tile("Scaling", "ui64", 1, 32))
    with pto.target("a5"):
        acc = TileAcc("f32", 16, 32)
        with pytest.raises(IllegalInstruction, match="fp must be a Scaling tile"):
            R["TMOV_FP"](Tile("Vec", "i8", 16, 32), acc, Tile("Vec", "ui64", 1, 32))
        with pytest.raises(RuntimeCheckError, match="larger than src"):
            R["TMOV"](Tile("Vec", "f32", 32, 32), acc)
        with pytest.raises(IllegalInstruction, match="DualModeSplitM needs NoQuant"):
            R["TMOV"](Tile("Vec", "i8", 16, 32), acc, 1 << 46, mode="DualModeSplitM")

"""The ``vpto`` backend profile: a program PTOAS builds with ``--pto-backend=vpto`` expands its
tile ops through PTOAS's a5 TileLib (lib/TileOps/a5/*.py), which differs from pto-isa's
headers in a few places (docs/targets.md, "TileLib vs pto-isa differences"). Each difference
is checked here against a numpy reference written from the TileLib template (the file and
function named in each test), and the default (no backend, ``emitc``) against the ISA page's
value, so the default stays what it was. The TileLang system tests' goldens, which PTOAS's
cmake builds with ``--pto-backend=vpto``, are checked through the suite where the corpus is
present.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

import ptoisa as pto
from ptoisa import BLayout, PadValue, SLayout, Tile, TileType
from ptoisa.errors import NotExecutedYet, PtoError, RuntimeCheckError
from ptoisa.isa.micro import cube
from ptoisa.suite import Task, do_task
from ptoisa.suite.goldens import build_backend, do_tilelang
from ptoisa.targets import BACKENDS, get_target
from ptoisa.vector.regs import Ptr

RNG = np.random.default_rng(26)
NP = {"f32": np.float32, "f16": np.float16, "bf16": ml_dtypes.bfloat16}
#: the TileLib's float pad constants (_fillpad.py _max, _load_store.py _pad_max, _part.py
#: pad_max), written out: the largest finite value of each type
TILELIB_MAX = {"f32": 3.4028234663852886e38, "f16": 65504.0, "bf16": 3.3895313892515355e38}


@pytest.fixture
def vpto():  # type: ignore[no-untyped-def]
    m = pto.target("a5", backend="vpto")
    yield m
    pto.memory.pop(m)


@pytest.fixture
def a5():  # type: ignore[no-untyped-def]
    m = pto.target("a5")
    yield m
    pto.memory.pop(m)


# ---- the profile -------------------------------------------------------------------------------

def test_a_backend_profile_is_the_target_with_the_tilelib_traits() -> None:
    a5 = get_target("a5")
    v = a5.with_backend("vpto")
    assert v is not a5 and v is a5.with_backend("vpto") is get_target("a5", "vpto")
    assert (v.name, v.lineage, v.legality is a5.legality or v.legality == a5.legality) == \
        ("a5", a5.lineage, True)
    assert str(v) == "a5" and repr(v) == "<target a5 vpto>"
    assert v.with_backend(None) is a5 and v.with_backend("emitc") is a5
    assert a5.with_backend("emitc") is a5 and a5.backend is None and v.backend == "vpto"
    # the traits the TileLib changes, and nothing else
    changed = {f for f in vars(a5.traits) if getattr(a5.traits, f) != getattr(v.traits, f)}
    assert changed == {"pad_float_extremes", "sort32_pad", "mat2right_transposing_load",
                       "mrgsort_partial_group", "fillpad_to_valid_cols",
                       "tcmps_predicate_stream"}
    # a target without a TileLib of its own behaves as with emitc; a name not a backend fails
    assert get_target("a2a3", "vpto") is get_target("a2a3")
    assert get_target("cpu").with_backend("vpto") is get_target("cpu")
    with pytest.raises(PtoError, match="unknown backend 'llvm'"):
        a5.with_backend("llvm")
    assert BACKENDS == ("emitc", "vpto")


def test_a_variant_of_a5_has_its_backend_profiles() -> None:
    a5x = get_target("a5").derive("a5x")
    assert a5x.with_backend("vpto").traits.pad_float_extremes == "finite"
    assert a5x.traits.pad_float_extremes == "inf"
    # deriving from a profile derives from its target
    assert get_target("a5", "vpto").derive("a5y").traits.pad_float_extremes == "inf"


def test_a_profile_is_checked_where_it_is_declared() -> None:
    a5 = get_target("a5")
    with pytest.raises(PtoError, match="unknown target trait\\(s\\): pad_extremes"):
        a5.derive("a5z", backends={"vpto": {"pad_extremes": "finite"}})
    with pytest.raises(PtoError, match="no backend profile for 'llvm'"):
        a5.derive("a5z", backends={"llvm": {}})


def test_the_default_traits_are_pto_isas() -> None:
    for name in ("cpu", "a2a3", "a5"):
        t = get_target(name).traits
        assert (t.pad_float_extremes, t.sort32_pad, t.mat2right_transposing_load,
                t.mrgsort_partial_group, t.fillpad_to_valid_cols, t.tcmps_predicate_stream) == \
            ("inf", "neg_inf", True, False, False, False)


# ---- pads: TFILLPAD / TFILLPAD_INPLACE / TLOAD ---------------------------------------------------

def _fillpad_reference(src: np.ndarray, sv: tuple[int, int], rows: int, cols: int,
                       pad: float, dt: str) -> np.ndarray:
    """_fillpad.py template_tfillpad (distinct src / dst): src's valid region copied, every
    other element of dst's valid region (the whole tile here) is the pad scalar."""
    out = np.full((rows, cols), pad, NP[dt])
    out[:sv[0], :sv[1]] = src[:sv[0], :sv[1]]
    return out


@pytest.mark.parametrize("dt", ["f32", "f16", "bf16"])
@pytest.mark.parametrize("pad", ["Max", "Min"])
def test_tfillpad_pads_with_the_largest_finite_value(vpto, dt: str, pad: str) -> None:
    rows, cols, sv = 16, 64, (9, 37)
    x = RNG.uniform(-4, 4, (rows, cols)).astype(NP[dt])
    src = Tile("Vec", dt, rows, cols, valid=sv).load_numpy(x[:sv[0], :sv[1]])
    dst = Tile("Vec", dt, rows, cols, pad=getattr(PadValue, pad))
    pto.TFILLPAD(dst, src)
    want = TILELIB_MAX[dt] * (1 if pad == "Max" else -1)
    ref = _fillpad_reference(x, sv, rows, cols, want, dt)
    np.testing.assert_array_equal(dst.numpy(), ref)
    assert np.isfinite(dst.numpy().astype(np.float32)).all()


@pytest.mark.parametrize("dt", ["f32", "f16"])
def test_tfillpad_default_and_emitc_keep_infinity(dt: str) -> None:
    for backend in (None, "emitc"):
        with pto.target("a5", backend=backend):
            src = Tile("Vec", dt, 8, 32, valid=(8, 5)).load_numpy(np.ones((8, 5), NP[dt]))
            dst = Tile("Vec", dt, 8, 32, pad=PadValue.Max)
            pto.TFILLPAD(dst, src)
            assert np.isposinf(dst.numpy()[:, 5:].astype(np.float32)).all()


def test_tfillpad_inplace_and_expand(vpto) -> None:
    x = RNG.uniform(-1, 1, (8, 32)).astype(np.float32)
    t = Tile("Vec", "f32", 8, 32, valid=(8, 7)).load_numpy(x[:, :7])
    dst = Tile("Vec", "f32", 8, 32, pad=PadValue.Min)
    pto.TFILLPAD_INPLACE(dst, t)  # (NPU INPLACE: no copy, the pad right of / below src)
    assert (dst.numpy()[:, 7:] == np.float32(-TILELIB_MAX["f32"])).all()
    big = Tile("Vec", "f32", 16, 64, pad=PadValue.Max)
    pto.TFILLPAD_EXPAND(big, t)
    np.testing.assert_array_equal(big.numpy(), _fillpad_reference(
        x, (8, 7), 16, 64, TILELIB_MAX["f32"], "f32"))


@pytest.mark.parametrize("inplace", [False, True])
def test_tfillpad_stops_at_dst_valid_cols(inplace: bool) -> None:
    """_fillpad.py _fill_inplace / _fill: the pad covers dst's valid region outside src's
    (rows < src valid rows: cols [src valid cols, dst valid cols); the rows below: cols
    [0, dst valid cols)); pto-isa's TFillPad pads to the tile's Cols."""
    rows, cols, sv, dv = 8, 64, (5, 9), (7, 40)
    x = RNG.uniform(-1, 1, (rows, cols)).astype(np.float32)
    got = {}
    for backend in (None, "vpto"):
        with pto.target("a5", backend=backend):
            src = Tile("Vec", "f32", rows, cols, valid=sv).load_numpy(x[:sv[0], :sv[1]])
            dst = Tile("Vec", "f32", rows, cols, valid=dv, pad=PadValue.Min)
            (pto.TFILLPAD_INPLACE if inplace else pto.TFILLPAD)(dst, src)
            got[backend] = dst.numpy(True).copy()
    low = np.float32(-TILELIB_MAX["f32"])
    ref = got["vpto"].copy()
    ref[:sv[0], sv[1]:dv[1]] = low
    ref[sv[0]:dv[0], :dv[1]] = low
    np.testing.assert_array_equal(got["vpto"][:dv[0], :dv[1]], ref[:dv[0], :dv[1]])
    if not inplace:
        np.testing.assert_array_equal(got["vpto"][:sv[0], :sv[1]], x[:sv[0], :sv[1]])
    # past dst's valid columns the TileLib writes nothing (the tile's poison stays); pto-isa's
    # pad reaches the tile's Cols
    assert np.isnan(got["vpto"][:dv[0], dv[1]:]).all()
    assert np.isneginf(got[None][:dv[0], dv[1]:]).all()


def test_tfillpad_src_wider_than_dst_is_refused(vpto) -> None:
    src = Tile("Vec", "f32", 4, 32, valid=(4, 20)).load_numpy(np.ones((4, 20), np.float32))
    dst = Tile("Vec", "f32", 4, 32, valid=(4, 16), pad=PadValue.Max)
    with pytest.raises(NotExecutedYet, match="src valid cols \\(20\\) pass dst's \\(16\\)"):
        pto.TFILLPAD(dst, src)


def test_integer_pads_are_unchanged(vpto) -> None:
    src = Tile("Vec", "i16", 4, 32, valid=(4, 3)).load_numpy(np.ones((4, 3), np.int16))
    dst = Tile("Vec", "i16", 4, 32, pad=PadValue.Min)
    pto.TFILLPAD(dst, src)
    assert (dst.numpy()[:, 3:] == -32768).all()


def test_tload_pad(vpto) -> None:
    """_load_store.py dma_pad_for: the DMA pads with _pad_max / _pad_min."""
    x = RNG.uniform(-1, 1, (4, 10)).astype(np.float16)
    t = Tile("Vec", "f16", 4, 32, valid=(4, 10), pad=PadValue.Max)
    pto.TLOAD(t, pto.GlobalTensor(x.copy()))
    np.testing.assert_array_equal(t.numpy(True)[:, :10], x)
    assert (t.numpy(True)[:, 10:] == np.float16(65504)).all()


# ---- TPARTMAX / TPARTMIN ---------------------------------------------------------------------

def _part_reference(op: str, a: np.ndarray, b: np.ndarray, av: tuple[int, int],
                    bv: tuple[int, int], dv: tuple[int, int], pad: float) -> np.ndarray:
    """_part.py register_part_extreme: dst's valid region = pad; src0 copied over its region;
    then dst = vmax / vmin(dst, src1) over src1's region."""
    fn = np.maximum if op == "TPARTMAX" else np.minimum
    out = np.full(dv, pad, a.dtype)
    out[:av[0], :av[1]] = a[:av[0], :av[1]]
    out[:bv[0], :bv[1]] = fn(out[:bv[0], :bv[1]], b[:bv[0], :bv[1]])
    return out


@pytest.mark.parametrize("op", ["TPARTMAX", "TPARTMIN"])
@pytest.mark.parametrize("dt", ["f32", "f16"])
def test_tpart_extremes(vpto, op: str, dt: str) -> None:
    dv, av, bv = (12, 48), (12, 30), (7, 48)  # neither source valid at (7.., 30..)
    a = RNG.uniform(-3, 3, dv).astype(NP[dt])
    b = RNG.uniform(-3, 3, dv).astype(NP[dt])
    b[0, 40] = -np.inf if op == "TPARTMAX" else np.inf  # src1 alone: combined with the pad
    d = Tile("Vec", dt, *dv)
    getattr(pto, op)(d, Tile("Vec", dt, *dv, valid=av).load_numpy(a[:av[0], :av[1]]),
                     Tile("Vec", dt, *dv, valid=bv).load_numpy(b[:bv[0], :bv[1]]))
    limit = TILELIB_MAX[dt]
    pad = -limit if op == "TPARTMAX" else limit
    ref = _part_reference(op, a, b, av, bv, dv, pad)
    np.testing.assert_array_equal(d.numpy(), ref)
    assert d.numpy()[0, 40] == NP[dt](pad)  # not the source's infinity


def test_tpart_default_pads_infinity(a5) -> None:
    d = Tile("Vec", "f32", 4, 16)
    pto.TPARTMAX(d, Tile("Vec", "f32", 4, 16, valid=(2, 16)).load_numpy(np.ones((2, 16))),
                 Tile("Vec", "f32", 4, 16, valid=(4, 8)).load_numpy(np.ones((4, 8))))
    assert np.isneginf(d.numpy()[2:, 8:]).all()


# ---- TSORT32 ------------------------------------------------------------------------------------

def _sort32_reference(vals: np.ndarray, idx: np.ndarray, pad: float, dt: str) -> np.ndarray:
    """tsort32.py template_tsort32_with_tmp, one row: the partial last block padded with
    _pad_min's value, each 32-block sorted descending (VBS32: equal values by position), the
    first len(vals) (value, u32 index) records of the row; pad records carry index 0."""
    npdt = NP[dt]
    out = []
    for b0 in range(0, vals.size, 32):
        v = vals[b0:b0 + 32].astype(npdt)
        i = idx[b0:b0 + 32].astype(np.uint32)
        n = v.size
        v = np.concatenate([v, np.full(32 - n, pad, npdt)])
        i = np.concatenate([i, np.zeros(32 - n, np.uint32)])
        order = sorted(range(32), key=lambda k, v=v: (-float(v[k]), k))
        for k in order:
            rec = np.zeros(8, np.uint8)
            rec[:np.dtype(npdt).itemsize] = np.array([v[k]], npdt).view(np.uint8)
            rec[4:] = np.array([i[k]], np.uint32).view(np.uint8)
            out.append(rec)
    per = 8 // np.dtype(npdt).itemsize
    return np.concatenate(out).view(npdt)[: vals.size * per]


@pytest.mark.parametrize(("dt", "pad"), [("f32", 4286578688.0), ("f16", 64512.0)])
def test_tsort32_pads_with_the_code_as_a_number(vpto, dt: str, pad: float) -> None:
    n = 45  # one whole block and 13 elements
    vals = RNG.integers(1, 100, n).astype(NP[dt])
    src = Tile("Vec", dt, 1, 64, valid=(1, n)).load_numpy(vals[None, :])
    idx = Tile("Vec", "ui32", 1, 64, valid=(1, n)).load_numpy(np.arange(n)[None, :])
    per = 8 // np.dtype(NP[dt]).itemsize
    dst = Tile("Vec", dt, 1, 64 * per)
    pto.TSORT32(dst, src, idx, Tile("Vec", dt, 1, 64))
    got = dst.numpy()[0, : n * per]
    np.testing.assert_array_equal(got.view(np.uint8),
                                  _sort32_reference(vals, np.arange(n), pad, dt).view(np.uint8))
    assert float(got[32 * per]) == pad  # the partial block's first record is padding


def test_tsort32_default_pads_minus_infinity(a5) -> None:
    vals = np.arange(13, dtype=np.float32)[None, :]
    src = Tile("Vec", "f32", 1, 32, valid=(1, 13)).load_numpy(vals)
    idx = Tile("Vec", "ui32", 1, 32, valid=(1, 13)).load_numpy(np.arange(13)[None, :])
    dst = Tile("Vec", "f32", 1, 64)
    pto.TSORT32(dst, src, idx, Tile("Vec", "f32", 1, 32))
    assert list(dst.numpy()[0, :26:2]) == list(range(12, -1, -1))


# ---- TEXTRACT Mat -> Right ---------------------------------------------------------------------

def test_textract_mat_to_right_is_the_untransposed_load(vpto) -> None:
    """textract.py template_textract_mat2right: mte_l1_l0b(src, dst, k, n) without transpose.
    The Right tile holds the source transposed; the micro-op on the same L1 bytes gives the
    same L0B bytes (the tile op as the TileLib lowers it)."""
    x = RNG.uniform(-1, 1, (16, 16)).astype(np.float16)
    mat = Tile(TileType.Mat, "f16", 16, 16, BLayout.ColMajor, None, SLayout.RowMajor)
    mat.load_numpy(x)
    right = pto.TileRight("f16", 16, 16)
    pto.TEXTRACT(right, mat, 0, 0)
    np.testing.assert_array_equal(right.numpy(), x.T)


@pytest.mark.parametrize(("rows", "cols", "k", "n"), [(16, 32, 32, 16), (32, 64, 16, 16),
                                                     (32, 32, 16, 32)])
def test_textract_right_matches_the_micro_op(rows: int, cols: int, k: int, n: int) -> None:
    """The Right tile TEXTRACT leaves equals, byte for byte, what mte_l1_l0b(src, dst, k, n)
    without transpose leaves from the same L1 bytes (the source n x k, or a taller source
    whose first box column the load reads)."""
    x = RNG.uniform(-1, 1, (rows, cols)).astype(np.float16)
    nbytes = k * n * 2
    with pto.target("a5", backend="vpto", mode="manual") as m:
        mat = Tile(TileType.Mat, "f16", rows, cols, BLayout.ColMajor, None, SLayout.RowMajor)
        pto.TASSIGN(mat, 0)
        mat.load_numpy(x)
        right = pto.TileRight("f16", k, n)
        pto.TASSIGN(right, 0)
        pto.TEXTRACT(right, mat, 0, 0)
        by_tile = m.region("L0B")[:nbytes].copy()
        m.region("L0B")[:nbytes] = 0
        cube.MTE_L1_L0B.impl(m, Ptr("l1", 0, pto.dtypes.f16), Ptr("l0b", 0, pto.dtypes.f16),
                             k, n, 0, 0)
        np.testing.assert_array_equal(m.region("L0B")[:nbytes], by_tile)
        np.testing.assert_array_equal(right.numpy(), x[:n, :k].T)


def test_textract_right_forms_not_settled_are_refused(vpto) -> None:
    x = RNG.uniform(-1, 1, (32, 64)).astype(np.float16)
    mat = Tile(TileType.Mat, "f16", 32, 64, BLayout.ColMajor, None, SLayout.RowMajor)
    mat.load_numpy(x)
    with pytest.raises(NotExecutedYet, match="untransposed mte_l1_l0b"):
        pto.TEXTRACT(pto.TileRight("f16", 16, 16), mat, 16, 0)
    with pytest.raises(NotExecutedYet, match="got index \\(0, 0\\) of a 32x64 source"):
        pto.TEXTRACT(pto.TileRight("f16", 32, 16), mat, 0, 0)  # k = 32: two box columns
    # k within one box column: the load's 16-row read is the taller source's top rows
    right = pto.TileRight("f16", 16, 16)
    pto.TEXTRACT(right, mat, 0, 0)
    np.testing.assert_array_equal(right.numpy(), x[:16, :16].T)


def test_textract_right_default_keeps_the_values(a5) -> None:
    x = RNG.uniform(-1, 1, (16, 16)).astype(np.float16)
    mat = Tile(TileType.Mat, "f16", 16, 16, BLayout.ColMajor, None, SLayout.RowMajor)
    mat.load_numpy(x)
    right = pto.TileRight("f16", 16, 16)
    pto.TEXTRACT(right, mat, 0, 0)
    np.testing.assert_array_equal(right.numpy(), x)


# ---- TMRGSORT single list -----------------------------------------------------------------------

def _records(vals: np.ndarray) -> np.ndarray:
    """f32 (value, u32 index) records, index = position."""
    out = np.zeros((vals.size, 2), np.float32)
    out[:, 0] = vals
    out[:, 1] = np.arange(vals.size, dtype=np.uint32).view(np.float32)
    return out.reshape(-1)


def test_tmrgsort_partial_group(vpto) -> None:
    """tmrgsort.py template_tmrgsort_single_list: repeat_times = valid_cols // (4 * blockLen):
    the whole groups are merged (4 sorted blocks of blockLen elements into one run), the
    records past them are not written."""
    block = 64  # elements: 32 records a block, 128 a group
    blocks = [np.sort(RNG.uniform(0, 1, 32))[::-1].astype(np.float32) for _ in range(5)]
    row = np.concatenate([_records(b) for b in blocks])  # 5 blocks: one group and a block
    src = Tile("Vec", "f32", 1, 320).load_numpy(row[None, :])
    dst = Tile("Vec", "f32", 1, 320)
    dst.load_numpy(np.full((1, 320), 7.0, np.float32))
    pto.TMRGSORT(dst, src, block)
    merged = np.sort(np.concatenate(blocks[:4]))[::-1]
    np.testing.assert_array_equal(dst.numpy()[0, :256:2], merged)
    assert (dst.numpy()[0, 256:] == 7.0).all()
    with pto.target("a5"):
        with pytest.raises(RuntimeCheckError, match="1..255 times 4\\*blockLen"):
            pto.TMRGSORT(Tile("Vec", "f32", 1, 320), Tile("Vec", "f32", 1, 320), block)
    with pytest.raises(RuntimeCheckError, match="whole groups"):
        pto.TMRGSORT(Tile("Vec", "f32", 1, 320), Tile("Vec", "f32", 1, 320, valid=(1, 128)),
                     block)


# ---- TCMPS's packed predicate stream ------------------------------------------------------------

#: (elements, bytes) of one predicate store, by source element size (tcmps.py: two 64-lane
#: vcmps interleaved by pdintlv_b8 into a 16-byte PK psts for 32-bit sources, one 128-lane PK
#: psts for 16-bit ones, one 256-lane NORM psts for 8-bit ones)
STORE = {4: (128, 16), 2: (128, 16), 1: (256, 32)}


def _tcmps_tilelib(x: np.ndarray, scalar: float, valid: tuple[int, int], dst_shape:
                   tuple[int, int], one_d: bool, before: np.ndarray) -> np.ndarray:
    """dst's bytes after tcmps.py's template (cmp lt), its store loops written out: the 1-D
    template stores chunk i of the flattened valid region at byte (i * E) // 8; the 2-D one
    stores chunk j of row r at byte (r * ceil(vc / E) + j) * B. Each store holds E bits, those
    past the valid elements 0; bytes no store covers keep ``before``."""
    vr, vc = valid
    e, b = STORE[x.dtype.itemsize]
    out = before.astype(np.uint8).reshape(-1).copy()
    lt = x[:vr, :vc] < scalar

    def store(bits: np.ndarray, at: int) -> None:
        chunk = np.zeros(e, bool)
        chunk[:bits.size] = bits
        out[at:at + b] = np.packbits(chunk, bitorder="little")

    if one_d:
        flat = lt.reshape(-1)
        for off in range(0, flat.size, e):
            store(flat[off:off + e], off // 8)
    else:
        per_row = -(-vc // e)
        for r in range(vr):
            for j in range(per_row):
                store(lt[r, j * e:(j + 1) * e], (r * per_row + j) * b)
    return out.reshape(dst_shape)


def _rows_layout(x: np.ndarray, scalar: float, valid: tuple[int, int],
                 before: np.ndarray) -> np.ndarray:
    """pto-isa's A5 TCmps into a ui8 dst: row r's bits at dst row r, whole stores (the bits
    past the valid elements 0)."""
    vr, vc = valid
    e, b = STORE[x.dtype.itemsize]
    out = before.astype(np.uint8).copy()
    span = min(-(-vc // e) * b, out.shape[1])
    out[:vr, :span] = 0
    packed = np.packbits(x[:vr, :vc] < scalar, axis=1, bitorder="little")
    out[:vr, :packed.shape[1]] = packed
    return out


# (src dtype, src rows x cols, valid, dst rows x cols, the TileLib's template is the 1-D one)
TCMPS_SHAPES = [
    ("i32", (16, 32), (16, 32), (16, 32), True),    # the tilelang smoke golden i32_16x32
    ("f32", (1, 64), (1, 64), (1, 64), False),      # ... f32_1x64: src has no whole store
    ("f32", (4, 256), (4, 256), (4, 32), True),     # lit expand_tile_op_ptodsl_compare_1d_2d
    ("f32", (4, 64), (4, 64), (4, 32), False),      # ... @TCMPS_2D: 64 is no whole store
    ("f16", (3, 112), (3, 112), (3, 128), True),    # a flattened 16-bit stream
    ("i8", (2, 96), (2, 96), (2, 96), True),        # an 8-bit one (NORM stores)
    ("f32", (4, 128), (4, 100), (4, 128), False),   # rows with a gap: the 2-D template
    ("i16", (5, 64), (5, 64), (2, 64), False),      # dst rows differ: the 2-D template
]


@pytest.mark.parametrize(("dt", "shape", "valid", "dshape", "one_d"), TCMPS_SHAPES)
def test_tcmps_writes_the_tilelib_stream(dt: str, shape: tuple[int, int],
                                         valid: tuple[int, int], dshape: tuple[int, int],
                                         one_d: bool) -> None:
    """tcmps.py: the 1-D template (where ptodsl's require_predicate_compare_1d with
    flattened_destination holds: contiguous valid rows, a dst row of at least one byte per src
    column, room for the whole stream) packs the valid region as one bit stream; the 2-D one
    starts each row after the previous row's stores. The default keeps pto-isa's rows."""
    from ptoisa.isa.tile_scalar.compare import tilelib_tcmps_1d
    npdt = np.dtype({"i32": np.int32, "f32": np.float32, "f16": np.float16, "i16": np.int16,
                     "i8": np.int8}[dt])
    x = RNG.integers(1, 10, shape).astype(npdt)
    before = RNG.integers(0, 256, (max(dshape[0], valid[0]), dshape[1])).astype(np.uint8)
    before = before[:dshape[0]]
    dvalid = (valid[0], dshape[1]) if dshape[0] >= valid[0] else None
    for backend in ("vpto", None):
        with pto.target("a5", backend=backend):
            src = Tile("Vec", dt, *shape, valid=valid).load_numpy(x[:valid[0], :valid[1]])
            if dvalid is None:  # fewer dst rows than src rows: the page's check refuses it
                dst = Tile("Vec", "ui8", *dshape)
                assert not tilelib_tcmps_1d(dst, src)
                with pytest.raises(RuntimeCheckError, match="valid rows"):
                    pto.TCMPS(dst, src, npdt.type(5), pto.CmpMode.LT)
                continue
            dst = Tile("Vec", "ui8", *dshape, valid=dvalid).load_numpy(before)
            assert tilelib_tcmps_1d(dst, src) is one_d
            pto.TCMPS(dst, src, npdt.type(5), pto.CmpMode.LT)
            want = (_tcmps_tilelib(x, 5, valid, dshape, one_d, before) if backend
                    else _rows_layout(x, 5, valid, before))
            np.testing.assert_array_equal(dst.numpy(), want, err_msg=str(backend))


def test_tcmps_without_a_tilelib_template_is_refused(vpto) -> None:
    """tcmps.py's _DTYPES: f32 / i32 / f16 / i16 / i8 / ui8 sources, a ui8 dst; the default
    (pto-isa) takes a ui32 dst too."""
    src = Tile("Vec", "f32", 2, 64).load_numpy(np.ones((2, 64), np.float32))
    with pytest.raises(RuntimeCheckError, match="no tcmps template .* ui32 dst"):
        pto.TCMPS(Tile("Vec", "ui32", 2, 8), src, np.float32(0), pto.CmpMode.GT)
    with pto.target("a5"):
        dst = Tile("Vec", "ui32", 2, 8)
        pto.TCMPS(dst, Tile("Vec", "f32", 2, 64).load_numpy(np.ones((2, 64), np.float32)),
                  np.float32(0), pto.CmpMode.GT)
        assert (dst.numpy()[:, :2] == 0xFFFFFFFF).all()


@pytest.mark.parametrize(("rows", "cols", "mcols", "one_d", "agree"), [
    (4, 256, 32, True, True),    # whole stores per row, exact packed rows: all templates agree
    (1, 64, 64, False, True),    # one row
    (4, 64, 64, True, False),    # TCMPS flattens (1-D), TSEL reads row r at r * mask.Cols
    (4, 64, 32, False, False),   # TCMPS's 2-D rows at r * 16, TSEL's at r * 32
])
def test_compare_then_select(rows: int, cols: int, mcols: int, one_d: bool,
                             agree: bool) -> None:
    """TCMPS then TSEL / TSELS. Default: the select follows the compare. vpto: tsel.py /
    tsels.py read row r's bits at r * mask.Cols (their 1-D templates only where that is the
    same byte), so where TCMPS's stream puts a row elsewhere the TileLib's pair selects by
    other bits: the result is that of the TileLib's stream read by rows, from the same
    mask bytes."""
    a = RNG.integers(-5, 5, (rows, cols)).astype(np.float32)
    b = RNG.uniform(10, 20, (rows, cols)).astype(np.float32)
    lt = a < 0
    for backend in (None, "vpto"):
        with pto.target("a5", backend=backend):
            zero = np.zeros((rows, mcols), np.uint8)
            mask = Tile("Vec", "ui8", rows, mcols).load_numpy(zero)
            src0 = Tile("Vec", "f32", rows, cols).load_numpy(a)
            pto.TCMPS(mask, src0, np.float32(0), pto.CmpMode.LT)
            dst = Tile("Vec", "f32", rows, cols)
            pto.TSEL(dst, mask, src0, Tile("Vec", "f32", rows, cols).load_numpy(b),
                     Tile("Vec", "ui8", 1, 32))
            dsts = Tile("Vec", "f32", rows, cols)
            pto.TSELS(dsts, mask, src0, Tile("Vec", "ui8", 1, 32), np.float32(7))
        if backend is None:
            bits = lt
        else:
            stream = _tcmps_tilelib(a, 0, (rows, cols), (rows, mcols), one_d, zero)
            np.testing.assert_array_equal(mask.numpy(), stream)
            bits = np.unpackbits(stream, axis=1, bitorder="little")[:, :cols].astype(bool)
            assert bool((bits == lt).all()) is agree
        np.testing.assert_array_equal(dst.numpy(), np.where(bits, a, b), err_msg=str(backend))
        np.testing.assert_array_equal(dsts.numpy(), np.where(bits, a, np.float32(7)),
                                      err_msg=str(backend))


# ---- the command line, .pto and the suite ------------------------------------------------------

FILLPAD_PTO = """module {
  func.func @k(%src_ptr: !pto.ptr<f32>, %dst_ptr: !pto.ptr<f32>) attributes {pto.kernel} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c8 = arith.constant 8 : index
    %c16 = arith.constant 16 : index
    %c128 = arith.constant 128 : index
    %sv = pto.make_tensor_view %src_ptr, shape = [%c1, %c1, %c1, %c8, %c8],
      strides = [%c128, %c128, %c128, %c8, %c1] : !pto.tensor_view<1x1x1x8x8xf32>
    %dv = pto.make_tensor_view %dst_ptr, shape = [%c1, %c1, %c1, %c8, %c16],
      strides = [%c128, %c128, %c128, %c16, %c1] : !pto.tensor_view<1x1x1x8x16xf32>
    %sp = pto.partition_view %sv, offsets = [%c0, %c0, %c0, %c0, %c0],
      sizes = [%c1, %c1, %c1, %c8, %c8]
      : !pto.tensor_view<1x1x1x8x8xf32> -> !pto.partition_tensor_view<1x1x1x8x8xf32>
    %dp = pto.partition_view %dv, offsets = [%c0, %c0, %c0, %c0, %c0],
      sizes = [%c1, %c1, %c1, %c8, %c16]
      : !pto.tensor_view<1x1x1x8x16xf32> -> !pto.partition_tensor_view<1x1x1x8x16xf32>
    %src = pto.alloc_tile : !pto.tile_buf<vec, 8x16xf32, valid=8x8>
    %dst = pto.alloc_tile : !pto.tile_buf<vec, 8x16xf32, pad=2>
    pto.tload ins(%sp : !pto.partition_tensor_view<1x1x1x8x8xf32>)
      outs(%src : !pto.tile_buf<vec, 8x16xf32, valid=8x8>)
    pto.tfillpad ins(%src : !pto.tile_buf<vec, 8x16xf32, valid=8x8>)
      outs(%dst : !pto.tile_buf<vec, 8x16xf32, pad=2>)
    pto.tstore ins(%dst : !pto.tile_buf<vec, 8x16xf32, pad=2>)
      outs(%dp : !pto.partition_tensor_view<1x1x1x8x16xf32>)
    return
  }
}
"""


def _pads(dst: np.ndarray) -> np.ndarray:
    return dst.reshape(8, 16)[:, 8:]


def test_load_with_backend_runs_the_tilelib() -> None:
    src = RNG.uniform(-1, 1, 64).astype(np.float32)
    for backend, want in ((None, np.inf), ("emitc", np.inf), ("vpto", TILELIB_MAX["f32"])):
        prog = pto.load(FILLPAD_PTO, target="a5", backend=backend)
        dst = np.zeros(128, np.float32)
        prog.run("k", src, dst)
        assert (_pads(dst) == np.float32(want)).all(), backend
        np.testing.assert_array_equal(dst.reshape(8, 16)[:, :8], src.reshape(8, 8))


@pytest.mark.parametrize(("flag", "want"), [((), "inf"), (("--pto-backend=vpto",), "3.40282e+38"),
                                            (("--backend", "emitc"), "inf")])
def test_cli_run_takes_the_backend(tmp_path: Path, flag: tuple[str, ...], want: str) -> None:
    f = tmp_path / "k.pto"
    f.write_text(FILLPAD_PTO)
    out = subprocess.run([sys.executable, "-m", "ptoisa", "run", str(f), "--target", "a5",
                          *flag, "--arg", "src_ptr=rand:64:f32", "--arg",
                          "dst_ptr=zeros:128:f32"], capture_output=True, text=True, check=True)
    assert f"max {want}" in out.stdout, out.stdout
    assert ("--pto-backend=" in out.stdout) == any("vpto" in x or "emitc" in x for x in flag)


def test_suite_reads_the_backend_from_the_cmake(tmp_path: Path) -> None:
    root = tmp_path / "st"
    (root / "testcase" / "tadd").mkdir(parents=True)
    (root / "smoke" / "testcase" / "tadd").mkdir(parents=True)
    assert build_backend(root / "testcase" / "tadd", tmp_path) is None
    (root / "testcase" / "run_ptoas_to_file.cmake").write_text(
        'set(PTOAS_COMMAND "${PTOAS_BIN}" --pto-arch=a5)\n'
        "list(APPEND PTOAS_COMMAND --pto-backend=vpto)\n")
    assert build_backend(root / "testcase" / "tadd", tmp_path) == "vpto"
    # the smoke tests use testcase/'s script (PTO_TILELANG_ST_TESTCASE_DIR)
    assert build_backend(root / "smoke" / "testcase" / "tadd", tmp_path) == "vpto"
    assert build_backend(root / "smoke" / "testcase" / "tadd", root) == "vpto"
    assert build_backend(root / "smoke" / "testcase" / "tadd", root / "smoke") is None
    (root / "smoke" / "testcase" / "run_ptoas_to_file.cmake").write_text("--pto-backend emitc")
    assert build_backend(root / "smoke" / "testcase" / "tadd", tmp_path) == "emitc"


TILELANG = Path("corpus/ptoas-main/test/tilelang_st/npu/a5/src/st")


@pytest.mark.parametrize(("folder", "cases"), [
    ("testcase/tfillpad", {"f32_260x16_pad_260x7", "f32_128x128_pad_128x127",
                           "f32_128x160_pad_128x127"}),
    ("smoke/testcase/tfillpad_inplace", {"f32_64x16_noexpand", "f32_260x16_noexpand"}),
    ("testcase/tsort32", {"f32_2x13", "f32_1x4164"}),
    ("testcase/tpartmax", {"f32_122x123_complex", "f16_122x123_complex"}),
    ("testcase/textract", {"mat2right_f16_16x16"}),
    ("testcase/tmrgsort", {"f32_topk_1280_512", "f16_topk_1280_512"}),
    ("smoke/testcase/tcmps", {"i32_16x32", "f32_1x64"}),
])
def test_tilelang_goldens(shared_dir: Path, folder: str, cases: set[str]) -> None:
    """The TileLang system tests (built by PTOAS with --pto-backend=vpto) whose goldens follow
    the TileLib: their cases match."""
    d = shared_dir / TILELANG / folder
    if not d.is_dir():
        pytest.skip("the PTOAS corpus is not here")
    [res] = do_tilelang(d, shared_dir / "corpus" / "ptoas-main")
    got = {o.where.removeprefix("case "): o.verdict for o in res.outcomes}
    if any("not run" in n for n in res.notes):
        pytest.skip("; ".join(res.notes))
    assert {c: got.get(c) for c in cases} == dict.fromkeys(cases, "matched"), res.notes


MRGSORT_LIT = """// RUN: ptoas --pto-arch=a5 BACKEND %s
module {
  func.func @k() {
    %c64 = arith.constant 64 : i32
    %src = pto.alloc_tile : !pto.tile_buf<vec, 1x320xf32>
    %dst = pto.alloc_tile : !pto.tile_buf<vec, 1x320xf32>
    pto.tmrgsort ins(%src, %c64 : !pto.tile_buf<vec, 1x320xf32>, i32)
      outs(%dst : !pto.tile_buf<vec, 1x320xf32>)
    return
  }
}
"""


@pytest.mark.parametrize(("backend", "want"), [("--pto-backend=vpto", "ran"),
                                               ("", "run-failed")])
def test_suite_runs_a_vpto_run_line_as_the_tilelib(tmp_path: Path, backend: str,
                                                   want: str) -> None:
    """A lit RUN line with --pto-backend=vpto runs with the profile: a partial TMRGSORT group
    (320 columns, groups of 256) is the TileLib's to take, the ISA page's to refuse."""
    p = tmp_path / "t.pto"
    p.write_text(MRGSORT_LIT.replace("BACKEND", backend))
    [res] = do_task(Task("file", p, tmp_path))
    v = res.verdict()
    assert v.verdict == want, v.reason
    if want == "run-failed":
        assert "1..255 times 4*blockLen (256)" in v.reason

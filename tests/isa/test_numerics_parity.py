"""Numerics the targets define differently (issue 9, items 3 and 4): in-place TDIVS on a2a3,
the CPU simulator's reduction accumulators and NaN folds, TSORT32 ties and the TCMPS predicate
layout. References are hand-computed values and numpy folds written here from the simulator
source / the ISA pages, never the code under test."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ptoisa as pto
from ptoisa.enums import BLayout, CmpMode, TileType
from ptoisa.memory import pop
from ptoisa.tile import Tile

TARGETS = ("cpu", "a2a3", "a5")
NAN = np.nan


@pytest.fixture
def on():  # type: ignore[no-untyped-def]
    made = []

    def push(target: str):  # type: ignore[no-untyped-def]
        made.append(pto.target(target))
        return made[-1]

    yield push
    for m in reversed(made):
        pop(m)


def vec(dt: str, data: np.ndarray, rows: int = 16, cols: int = 16, valid=None,  # type: ignore[no-untyped-def]
        layout: BLayout = BLayout.RowMajor) -> Tile:
    t = Tile(TileType.Vec, dt, rows, cols, layout, valid=valid)
    full = np.zeros((rows, cols), data.dtype)
    full[: data.shape[0], : data.shape[1]] = data
    return t.load_numpy(full)


# ---- item 3: TDIVS in place ------------------------------------------------------------------

def _bits(a: np.ndarray) -> list[int]:
    return [int(v) for v in np.asarray(a).view(f"u{a.dtype.itemsize}").reshape(-1)]


@pytest.mark.parametrize("target", TARGETS)
def test_tdivs_in_place_f32(on, target):  # type: ignore[no-untyped-def]
    on(target)
    x = np.array([[5, 7, 10, 14]], np.float32)
    t = vec("f32", x, valid=(1, 4))
    pto.TDIVS(t, t, 3.0)
    got = t.numpy()[0, :4]
    # IEEE quotients: 5/3 = 0x3FD55555, 7/3 = 0x40155555, 10/3 = 0x40555555, 14/3 = 0x40955555;
    # a2a3 in place multiplies by f32(1/3) = 0x3EAAAAAB: one ulp up on each of these
    ieee = [0x3FD55555, 0x40155555, 0x40555555, 0x40955555]
    recip = [0x3FD55556, 0x40155556, 0x40555556, 0x40955556]
    assert _bits(got) == (recip if target == "a2a3" else ieee)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("dt", ["f16", "f32"])
def test_tdivs_in_place_vs_out_of_place(on, target, dt):  # type: ignore[no-untyped-def]
    on(target)
    npdt = np.float16 if dt == "f16" else np.float32
    x = (np.random.default_rng(7).uniform(-100, 100, (16, 16))).astype(npdt)
    s = 7.0
    ieee = (x.astype(np.float64) / s).astype(npdt)
    # the a2a3 in-place path: T(f32(1) / f32(s)), then one product rounded to T
    inv = npdt(np.float32(1) / np.float32(s))
    recip = (x.astype(np.float64) * np.float64(inv)).astype(npdt)
    assert not np.array_equal(ieee, recip)  # the data tells the two apart
    other = Tile(TileType.Vec, dt, 16, 16)
    pto.TDIVS(other, vec(dt, x), s)  # distinct storage: a division on every target
    np.testing.assert_array_equal(other.numpy(), ieee)
    same = vec(dt, x)
    pto.TDIVS(same, same, s)
    np.testing.assert_array_equal(same.numpy(), recip if target == "a2a3" else ieee)
    rev = vec(dt, x)
    pto.TDIVS(rev, s, rev)  # scalar first: no reciprocal path anywhere
    np.testing.assert_array_equal(rev.numpy(), (s / x.astype(np.float64)).astype(npdt))


# ---- item 4: reduction accumulators -----------------------------------------------------------

def _seq(fn, x: np.ndarray, acc) -> np.ndarray:  # type: ignore[no-untyped-def]
    """acc = acc op x along the last axis, rounded to ``acc`` at every step (a Python loop)."""
    r = x[..., 0].astype(acc)
    for k in range(1, x.shape[-1]):
        r = fn(r, x[..., k].astype(acc)).astype(acc)
    return r


@pytest.mark.parametrize("target", TARGETS)
def test_tcolsum_f16_column(on, target):  # type: ignore[no-untyped-def]
    on(target)
    src = vec("f16", np.array([[2048], [1], [1]], np.float16), valid=(3, 1))
    dst = Tile(TileType.Vec, "f16", 1, 16, valid=(1, 1))
    pto.TCOLSUM(dst, src)
    # every target adds row by row in f16: 2048 + 1 rounds to 2048 twice (not 2050)
    assert float(dst.numpy()[0, 0]) == 2048


def test_tcolsum_f16_to_f32_accumulates_in_f32(on):  # type: ignore[no-untyped-def]
    on("cpu")
    src = vec("f16", np.array([[2048], [1], [1]], np.float16), valid=(3, 1))
    dst = Tile(TileType.Vec, "f32", 1, 16, valid=(1, 1))
    pto.TCOLSUM(dst, src)
    assert float(dst.numpy()[0, 0]) == 2050  # TileDst::DType is f32 here


@pytest.mark.parametrize("target, want", [("cpu", 6144), ("a2a3", 6148), ("a5", 6148)])
def test_trowprod_f16(on, target, want):  # type: ignore[no-untyped-def]
    # cpu: ((3 * 683) = 2049 -> 2048) * 3 = 6144; NPU tree: (3 * 3) * (683 * 1) = 6147 -> 6148
    on(target)
    src = vec("f16", np.array([[3, 683, 3]], np.float16), valid=(1, 3))
    dst = Tile(TileType.Vec, "f16", 16, 1, BLayout.ColMajor, valid=(1, 1))
    pto.TROWPROD(dst, src, Tile(TileType.Vec, "f16", 16, 16))
    assert float(dst.numpy()[0, 0]) == want


@pytest.mark.parametrize("target", TARGETS)
def test_tcolprod_f16(on, target):  # type: ignore[no-untyped-def]
    on(target)
    src = vec("f16", np.array([[3], [683], [3]], np.float16), valid=(3, 1))
    dst = Tile(TileType.Vec, "f16", 1, 16, valid=(1, 1))
    pto.TCOLPROD(dst, src)
    assert float(dst.numpy()[0, 0]) == 6144  # row by row in f16 on every target


@pytest.mark.parametrize("dt", ["f16", "bf16"])
def test_cpu_sequential_folds_random(on, dt):  # type: ignore[no-untyped-def]
    on("cpu")
    npdt = np.dtype(Tile(TileType.Vec, dt, 1, 16).dtype.np)
    rng = np.random.default_rng(3)
    x = rng.uniform(0.9, 1.1, (16, 16)).astype(npdt)
    big = rng.uniform(-300, 300, (16, 16)).astype(npdt)
    prod = Tile(TileType.Vec, dt, 16, 1, BLayout.ColMajor)
    pto.TROWPROD(prod, vec(dt, x), Tile(TileType.Vec, dt, 16, 16))
    np.testing.assert_array_equal(prod.numpy()[:, 0], _seq(np.multiply, x, npdt))
    col = Tile(TileType.Vec, dt, 1, 16)
    pto.TCOLSUM(col, vec(dt, big))
    np.testing.assert_array_equal(col.numpy()[0], _seq(np.add, big.T, npdt))
    pto.TCOLPROD(col, vec(dt, x))
    np.testing.assert_array_equal(col.numpy()[0], _seq(np.multiply, x.T, npdt))
    # and the data is such that an f32 accumulator would differ
    assert not np.array_equal(_seq(np.add, big.T, npdt),
                              _seq(np.add, big.T, np.float32).astype(npdt))


# ---- item 4: NaN in max/min folds --------------------------------------------------------------

ROWS = np.array([[1, NAN, 3], [NAN, 1, 3]], np.float32)


@pytest.mark.parametrize("target", TARGETS)
def test_trowmax_trowmin_nan(on, target):  # type: ignore[no-untyped-def]
    on(target)
    src = vec("f32", ROWS, valid=(2, 3))
    dst = Tile(TileType.Vec, "f32", 16, 1, BLayout.ColMajor, valid=(2, 1))
    tmp = Tile(TileType.Vec, "f32", 16, 16)
    pto.TROWMAX(dst, src, tmp)
    mx = dst.numpy()[:2, 0]
    pto.TROWMIN(dst, src, tmp)
    mn = dst.numpy()[:2, 0]
    if target == "cpu":  # std::max(acc, x) from the first element
        np.testing.assert_array_equal(mx, [3, NAN])
        np.testing.assert_array_equal(mn, [1, NAN])
    else:  # vmax/vmin propagate NaN
        np.testing.assert_array_equal(mx, [NAN, NAN])
        np.testing.assert_array_equal(mn, [NAN, NAN])


@pytest.mark.parametrize("target", TARGETS)
def test_tcolmax_tcolmin_nan(on, target):  # type: ignore[no-untyped-def]
    on(target)
    src = vec("f32", ROWS.T.copy(), valid=(3, 2))
    dst = Tile(TileType.Vec, "f32", 1, 16, valid=(1, 2))
    pto.TCOLMAX(dst, src)
    mx = dst.numpy()[0, :2]
    pto.TCOLMIN(dst, src)
    mn = dst.numpy()[0, :2]
    want_mx, want_mn = ([3, NAN], [1, NAN]) if target == "cpu" else ([NAN] * 2, [NAN] * 2)
    np.testing.assert_array_equal(mx, want_mx)
    np.testing.assert_array_equal(mn, want_mn)


@pytest.mark.parametrize("target", TARGETS)
def test_arg_reductions_nan(on, target):  # type: ignore[no-untyped-def]
    on(target)
    rows = np.array([[1, NAN, 3, 3], [NAN, 1, 3, 0], [2, 5, NAN, 5]], np.float32)
    src = vec("f32", rows, valid=(3, 4))
    idx = Tile(TileType.Vec, "i32", 16, 1, BLayout.ColMajor, valid=(3, 1))
    tmp = Tile(TileType.Vec, "f32", 16, 16)
    pto.TROWARGMAX(idx, src, tmp)
    amax = idx.numpy()[:3, 0].tolist()
    pto.TROWARGMIN(idx, src, tmp)
    amin = idx.numpy()[:3, 0].tolist()
    if target == "cpu":  # strict > / < from element 0: first extreme, NaN only as element 0
        assert amax == [2, 0, 1] and amin == [0, 0, 0]
    else:  # the first NaN is the extreme value
        assert amax == [1, 0, 2] and amin == [1, 0, 2]
    cidx = Tile(TileType.Vec, "i32", 1, 16, valid=(1, 3))
    pto.TCOLARGMAX(cidx, vec("f32", rows.T.copy(), valid=(4, 3)), tmp)
    assert cidx.numpy()[0, :3].tolist() == ([2, 0, 1] if target == "cpu" else [1, 0, 2])


# ---- item 4: TSORT32 ties ------------------------------------------------------------------------

def _records(dst: Tile, n: int) -> list[tuple[float, int]]:
    raw = np.ascontiguousarray(dst.numpy()[0]).view(np.uint8).reshape(-1, 8)[:n]
    vals = raw[:, :4].copy().view(np.float32).reshape(-1)
    ids = raw[:, 4:].copy().view(np.uint32).reshape(-1)
    return [(float(v), int(i)) for v, i in zip(vals, ids, strict=True)]


@pytest.mark.parametrize("target", TARGETS)
def test_tsort32_ties(on, target):  # type: ignore[no-untyped-def]
    on(target)
    vals = np.array([[5, 5, 9, 5] + [-1.0] * 28], np.float32)
    ids = np.array([[7, 3, 50, 1] + list(range(100, 128))], np.uint32)
    src = vec("f32", vals, rows=1, cols=32)
    idx = Tile(TileType.Vec, "ui32", 1, 32).load_numpy(ids)
    dst = Tile(TileType.Vec, "f32", 1, 64)
    pto.TSORT32(dst, src, idx)
    top = _records(dst, 4)
    if target == "cpu":  # equal scores by ascending index value (the simulator's comparator)
        assert top == [(9, 50), (5, 1), (5, 3), (5, 7)]
    else:  # VBS32 keeps equal scores in position order
        assert top == [(9, 50), (5, 7), (5, 3), (5, 1)]


# ---- item 4: TCMPS with a partial valid region ---------------------------------------------------

def test_tcmps_partial_valid_cpu_vs_a2a3(on):  # type: ignore[no-untyped-def]
    # src 16x16 f32 of ones with valid 4x10, GT 0: 10 set bits per valid row = bytes FF 03
    src_data = np.ones((16, 16), np.float32)
    on("cpu")
    dst = Tile(TileType.Vec, "ui8", 16, 32, valid=(4, 4)).load_numpy(np.full((16, 32), 0x55,
                                                                              np.uint8))
    pto.TCMPS(dst, vec("f32", src_data, valid=(4, 10)), 0.0, CmpMode.GT)
    # simulator: whole src rows (16 bits = 2 bytes each, zeros outside the valid region) as one
    # stream, laid out 4 bytes (dst.validCol) per dst row; everything else zero
    want = np.zeros((16, 32), np.uint8)
    want[0, :4] = want[1, :4] = [0xFF, 0x03, 0xFF, 0x03]
    np.testing.assert_array_equal(dst.numpy(), want)

    on("a2a3")
    dst = Tile(TileType.Vec, "ui8", 16, 32, valid=(4, 4)).load_numpy(np.full((16, 32), 0x55,
                                                                              np.uint8))
    pto.TCMPS(dst, vec("f32", src_data, valid=(4, 10)), 0.0, CmpMode.GT)
    # ISA / NPU: src row r's bits into dst row r; bytes past them are not written
    want = np.full((16, 32), 0x55, np.uint8)
    want[:4, :2] = [0xFF, 0x03]
    np.testing.assert_array_equal(dst.numpy(), want)


def test_tcmps_full_tile_layouts_agree(on):  # type: ignore[no-untyped-def]
    # one src row per dst row (dst.validCol == src.Cols / 8): cpu and a2a3 give the same bytes
    x = np.random.default_rng(5).uniform(-1, 1, (8, 32)).astype(np.float32)
    want = np.packbits(x < 0, axis=1, bitorder="little")  # 4 bytes per row
    for target in ("cpu", "a2a3"):
        on(target)
        dst = Tile(TileType.Vec, "ui8", 8, 32, valid=(8, 4))
        pto.TCMPS(dst, vec("f32", x, rows=8, cols=32), 0.0, CmpMode.LT)
        np.testing.assert_array_equal(dst.numpy()[:, :4], want)


def test_tcmp_tcmps_i32_ne_on_a2a3(on):  # type: ignore[no-untyped-def]
    # a2a3 compares i32 for equality only, but NE is the EQ mask inverted (vnot), so it holds;
    # LT falls back to EQ
    on("a2a3")
    a = np.array([[1, 2, 3, 4, 5, 6, 7, 8]], np.int32)
    b = np.array([[1, 0, 3, 0, 5, 0, 7, 0]], np.int32)
    dst = Tile(TileType.Vec, "ui8", 16, 32, valid=(1, 1))
    pto.TCMP(dst, vec("i32", a, valid=(1, 8)), vec("i32", b, valid=(1, 8)), CmpMode.NE)
    assert int(dst.numpy()[0, 0]) == 0b10101010
    pto.TCMPS(dst, vec("i32", a, valid=(1, 8)), 3, CmpMode.NE)
    assert int(dst.numpy()[0, 0]) == 0b11111011
    pto.TCMPS(dst, vec("i32", a, valid=(1, 8)), 3, CmpMode.LT)
    assert int(dst.numpy()[0, 0]) == 0b00000100  # EQ 3


def _sim_tcmps(bits: np.ndarray, src_rows: int, src_cols: int, dst_shape: tuple[int, int],
               dst_valid: tuple[int, int]) -> np.ndarray:
    """The simulator's TCmps loop, transcribed: golden H x W of 0/1, bytes of whole rows
    (W / 8 per row, LSB first), byte c -> dst (c / validCol, c % validCol) inside the valid
    region, dst zeroed first."""
    golden = np.zeros((src_rows, src_cols), np.uint8)
    golden[: bits.shape[0], : bits.shape[1]] = bits
    stream = []
    for h in range(src_rows):
        for i in range(src_cols // 8):
            byte = 0
            for bit in range(8):
                byte |= int(golden[h, i * 8 + bit]) << bit
            stream.append(byte)
    out = np.zeros(dst_shape, np.uint8)
    vr, vc = dst_valid
    for c, byte in enumerate(stream[: dst_shape[0] * dst_shape[1]]):
        i, j = divmod(c, vc)
        if i < vr:
            out[i, j] = byte
    return out


@settings(max_examples=25, deadline=None)
@given(rows=st.integers(1, 8), cols8=st.integers(1, 4), data=st.data())
def test_tcmps_cpu_layout_matches_simulator_loop(rows, cols8, data):  # type: ignore[no-untyped-def]
    cols = 8 * cols8
    vr, vc = data.draw(st.integers(1, rows)), data.draw(st.integers(1, cols))
    dvr, dvc = data.draw(st.integers(1, 8)), data.draw(st.integers(1, 32))
    x = np.random.default_rng(rows * 100 + cols).uniform(-1, 1, (rows, cols)).astype(np.float32)
    m = pto.target("cpu")
    try:
        dst = Tile(TileType.Vec, "ui8", 8, 32, valid=(dvr, dvc))
        pto.TCMPS(dst, vec("f32", x, rows=rows, cols=cols, valid=(vr, vc)), 0.0, CmpMode.GT)
        want = _sim_tcmps(x[:vr, :vc] > 0, rows, cols, (8, 32), (dvr, dvc))
        np.testing.assert_array_equal(dst.numpy(), want)
    finally:
        pop(m)


@pytest.mark.parametrize("target", TARGETS)
def test_tpairreducesum_outside_valid_region(on, target):  # type: ignore[no-untyped-def]
    on(target)
    src = vec("f16", np.arange(1, 6, dtype=np.float16)[None, :], valid=(1, 5))
    dst = Tile(TileType.Vec, "f16", 16, 16, valid=(1, 5)).load_numpy(
        np.full((16, 16), 9, np.float16))
    pto.TPAIRREDUCESUM(dst, src)
    out = dst.numpy()
    np.testing.assert_array_equal(out[0, :5], [3, 7, 5, 0, 0])  # 1+2, 3+4, 5+0, then zeros
    rest = np.delete(out.reshape(-1), range(5))
    # cpu: the simulator zeroes the whole tile first; the NPUs write the valid region only
    assert (rest == (0 if target == "cpu" else 9)).all()

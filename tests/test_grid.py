"""Grid launches: lockstep execution must give exactly what running the blocks one by one
gives, including the copy-on-write loads and deferred results that make it fast."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ptoisa as pto
from ptoisa import BLayout, GlobalTensor, SLayout, Tile, TileType

R, C = 16, 32


@pytest.fixture(autouse=True)
def copy_on_write_everywhere(monkeypatch):
    """Small tiles normally skip copy-on-write loads and deferred results (a copy is cheaper
    than the bookkeeping), and deferred chains of row-local instructions (ptoisa.rowfuse);
    these tests force those paths so their copy semantics are proven."""
    from ptoisa import rowfuse

    monkeypatch.setattr(pto.Machine, "LAZY_MIN_ELEMENTS", 0)
    monkeypatch.setattr(rowfuse, "MIN_ELEMENTS", 0)


def _views(arr: np.ndarray, b, rows: int = R, cols: int = C) -> pto.GlobalTensor:
    n = rows * cols
    return pto.GlobalTensor(arr, (1, 1, 1, rows, cols), (n, n, n, cols, 1), offset=b * n)


def _tile(**kw) -> pto.Tile:
    return pto.Tile(TileType.Vec, np.float32, R, C, **kw)


def vec_add(x, y, z):
    b = pto.get_block_idx()
    tx, ty, tz = _tile(), _tile(), _tile()
    pto.TLOAD(tx, _views(x, b))
    pto.TLOAD(ty, _views(y, b))
    pto.TADD(tz, tx, ty)
    pto.TSTORE(_views(z, b), tz)


@pytest.mark.parametrize("blocks", [1, 2, 7])
@pytest.mark.parametrize("lockstep", [True, False])
@pytest.mark.parametrize("target", ["cpu", "a2a3", "a5"])
def test_vec_add_matches_numpy(blocks, lockstep, target):
    rng = np.random.default_rng(blocks)
    n = blocks * R * C
    x, y = rng.standard_normal(n, dtype=np.float32), rng.standard_normal(n, dtype=np.float32)
    z = np.zeros(n, np.float32)
    pto.launch(vec_add, x, y, z, blocks=blocks, lockstep=lockstep, target=target)
    np.testing.assert_array_equal(z, x + y)


def test_block_idx_is_per_block_vector_in_lockstep():
    seen = []

    def k():
        seen.append(np.asarray(pto.get_block_idx()).tolist())
    pto.launch(k, blocks=4)
    assert seen == [[0, 1, 2, 3]]
    seen.clear()
    pto.launch(k, blocks=3, lockstep=False)
    assert seen == [0, 1, 2]


def test_divergent_control_flow_falls_back_or_raises():
    n = 4 * R * C
    x = np.arange(n, dtype=np.float32)
    z = np.zeros(n, np.float32)

    def k(x, z):
        b = pto.get_block_idx()
        t = _tile()
        pto.TLOAD(t, _views(x, b))
        if b == 2:  # Python branch on the block index: only per-block execution can do this
            pto.TADD(t, t, t)
        pto.TSTORE(_views(z, b), t)

    pto.launch(k, x, z, blocks=4)  # auto: falls back (nothing written to GM yet)
    exp = x.copy()
    exp[2 * R * C:3 * R * C] *= 2
    np.testing.assert_array_equal(z, exp)
    with pytest.raises(pto.BlockDivergence, match="differs between blocks"):
        pto.launch(k, x, z, blocks=4, lockstep=True)


def test_ragged_last_block_written_naturally_falls_back_per_block():
    """A kernel that sizes its last tile with Python min() (block-dependent control flow) runs
    correctly: lockstep detects the divergence before any GM write and reruns per block."""
    cols_total = 3 * C - 5
    x = np.arange(R * cols_total, dtype=np.float32).reshape(R, cols_total)
    z = np.zeros_like(x)

    def k(x, z):
        b = pto.get_block_idx()
        width = min(C, cols_total - b * C)
        t = pto.Tile(TileType.Vec, np.float32, R, C, valid=(R, pto.Dyn(width)))
        view = (1, 1, 1, R, width), (0, 0, 0, cols_total, 1)
        pto.TLOAD(t, pto.GlobalTensor(x, *view, offset=b * C))
        pto.TADD(t, t, t)
        pto.TSTORE(pto.GlobalTensor(z, *view, offset=b * C), t)

    pto.launch(k, x, z, blocks=3)
    np.testing.assert_array_equal(z, 2 * x)


def test_per_block_valid_regions_in_lockstep():
    """Valid extents computed with numpy from the block index differ per block; TROWSUM then
    runs per block on per-block views, still in one lockstep launch."""
    n = 3 * R * C
    x = np.arange(n, dtype=np.float32)
    z = np.zeros(n, np.float32)

    def k(x, z):
        b = pto.get_block_idx()
        t = _tile(valid=(R, pto.Dyn(C)))
        s = pto.Tile(TileType.Vec, np.float32, R, 8, valid=(R, 1))
        tmp = _tile()
        pto.TLOAD(t, _views(x, b))
        t.set_valid(cols=np.minimum(C, 8 * (b + 1)))   # 8, 16, 24 valid columns
        pto.TROWSUM(s, t, tmp)
        pto.TSTORE(pto.GlobalTensor(z, (1, 1, 1, R, 1), (0, 0, 0, C, 1), offset=b * R * C), s)

    pto.launch(k, x, z, blocks=3, lockstep=True)
    xs = x.reshape(3, R, C)
    for b in range(3):
        np.testing.assert_array_equal(z.reshape(3, R, C)[b, :, 0], xs[b, :, :8 * (b + 1)].sum(1))


# ---- copy-on-write loads and deferred results keep the ISA's copy semantics ----------------------

def test_load_then_store_over_the_source_keeps_the_loaded_values():
    n = 2 * R * C
    x = np.arange(n, dtype=np.float32)
    out = np.zeros(n, np.float32)

    def k(x, out):
        b = pto.get_block_idx()
        t, u = _tile(), _tile()
        pto.TLOAD(t, _views(x, b))      # t reads x in place ...
        pto.TADD(u, t, t)
        pto.TSTORE(_views(x, b), u)     # ... until x is overwritten: t must keep the old x
        pto.TSTORE(_views(out, b), t)
    orig = x.copy()
    pto.launch(k, x, out, blocks=2)
    np.testing.assert_array_equal(out, orig)
    np.testing.assert_array_equal(x, 2 * orig)


def test_deferred_result_survives_overwriting_its_inputs():
    n = R * C
    x = np.arange(n, dtype=np.float32)
    y = np.ones(n, np.float32)
    out = np.zeros(n, np.float32)

    def k(x, y, out):
        tx, ty, tz = _tile(), _tile(), _tile()
        pto.TLOAD(tx, _views(x, 0))
        pto.TLOAD(ty, _views(y, 0))
        pto.TADD(tz, tx, ty)            # deferred: reads tx and ty
        pto.TADD(tx, ty, ty)            # overwrites an input of tz before tz is used
        pto.TSTORE(_views(out, 0), tz)
    pto.launch(k, x, y, out, blocks=1)
    np.testing.assert_array_equal(out, x + 1)


def test_aliased_tiles_see_a_lazy_load():
    n = R * C
    x = np.arange(n, dtype=np.float32)
    out = np.zeros(n, np.float32)

    def k(x, out):
        a, b = _tile(), _tile()
        pto.TASSIGN(a, 0x1000)
        pto.TASSIGN(b, 0x1000)          # same bytes
        pto.TLOAD(a, _views(x, 0))
        pto.TSTORE(_views(out, 0), b)
    pto.launch(k, x, out, blocks=1, mode="manual")
    np.testing.assert_array_equal(out, x)


def test_in_place_gm_update():
    n = 3 * R * C
    x = np.arange(n, dtype=np.float32)

    def k(x):
        b = pto.get_block_idx()
        t = _tile()
        pto.TLOAD(t, _views(x, b))
        pto.TADD(t, t, t)
        pto.TSTORE(_views(x, b), t)
    orig = x.copy()
    pto.launch(k, x, blocks=3)
    np.testing.assert_array_equal(x, 2 * orig)


@settings(max_examples=25, deadline=None)
@given(blocks=st.integers(1, 6), rows=st.sampled_from([1, 8, 16]),
       cols=st.sampled_from([8, 16, 64]), seed=st.integers(0, 2**16))
def test_lockstep_equals_per_block_for_a_softmax_like_chain(blocks, rows, cols, seed):
    rng = np.random.default_rng(seed)
    n = blocks * rows * cols
    x = rng.standard_normal(n, dtype=np.float32)
    outs = []
    for ls in (True, False):
        z = np.zeros(n, np.float32)

        def k(x, z):
            b = pto.get_block_idx()
            t = pto.Tile(TileType.Vec, np.float32, rows, cols)
            s = pto.Tile(TileType.Vec, np.float32, rows, 8, valid=(rows, 1))
            tmp = pto.Tile(TileType.Vec, np.float32, rows, cols)
            pto.TLOAD(t, _views(x, b, rows, cols))
            pto.TADD(t, t, t)
            pto.TROWSUM(s, t, tmp)
            pto.TSTORE(_views(z, b, rows, cols), t)
        pto.launch(k, x, z, blocks=blocks, lockstep=ls)
        outs.append(z)
    np.testing.assert_array_equal(outs[0], outs[1])
    np.testing.assert_array_equal(outs[0], 2 * x)


def test_launch_rejects_bad_arguments():
    with pytest.raises(pto.PtoError, match="blocks must be a positive integer"):
        pto.launch(lambda: None, blocks=0)
    with pytest.raises(pto.PtoError, match="lockstep must be"):
        pto.launch(lambda: None, blocks=2, lockstep="sometimes")


def test_partial_reload_keeps_a_lazy_tiles_other_elements_on_the_npu():
    """A full load read in place, then a load of a smaller valid region: on a2a3/a5 (Null pad)
    the elements outside the new valid region keep the first load's values."""
    n = R * C
    x = np.arange(n, dtype=np.float32)
    y = -np.ones(n, np.float32)
    out = np.zeros(n, np.float32)

    def k(x, y, out):
        t = _tile(valid=(pto.Dyn(R), pto.Dyn(C)))
        pto.TLOAD(t, _views(x, 0))                       # lazy: reads x in place
        t.set_valid(R // 2, C // 2)
        pto.TLOAD(t, pto.GlobalTensor(y, (1, 1, 1, R // 2, C // 2), (n, n, n, C, 1)))
        t.set_valid(R, C)
        pto.TSTORE(_views(out, 0), t)

    pto.launch(k, x, y, out, blocks=1, target="a5")
    exp = x.reshape(R, C).copy()
    exp[:R // 2, :C // 2] = -1
    np.testing.assert_array_equal(out.reshape(R, C), exp)


def test_small_boxed_tiles_keep_copy_semantics():
    """Boxed (NZ/ZN) tiles load, move and take matmul results copy-on-write at any size: a
    load, a move and an accumulator still hold their values when what they were taken from
    is overwritten afterwards."""
    m = 16
    rng = np.random.default_rng(4)
    x = rng.standard_normal((m, m)).astype(np.float16)
    y = rng.standard_normal((m, m)).astype(np.float16)
    out = np.zeros((m, m), np.float32)
    want = x.astype(np.float64) @ y.astype(np.float64)
    want = want + x.astype(np.float64) @ y.astype(np.float64)

    def k(x, y, out):
        g = (1, 1, 1, m, m)
        mat = Tile(TileType.Mat, np.float16, m, m, BLayout.ColMajor, None, SLayout.RowMajor)
        mb = Tile(TileType.Mat, np.float16, m, m, BLayout.ColMajor, None, SLayout.RowMajor)
        left, right = pto.TileLeft(np.float16, m, m), pto.TileRight(np.float16, m, m)
        acc = pto.TileAcc(np.float32, m, m)
        pto.TLOAD(mat, GlobalTensor(x, g))
        pto.TLOAD(mb, GlobalTensor(y, g))
        pto.TMOV(left, mat)
        pto.TMOV(right, mb)
        pto.TLOAD(mat, GlobalTensor(y, g))      # left keeps x
        v = Tile(TileType.Vec, np.float16, m, m)
        pto.TLOAD(v, GlobalTensor(x, g))
        pto.TADDS(v, v, 1.0)
        pto.TSTORE(GlobalTensor(y, g), v)       # right (and mb) keep the old y
        pto.TMATMUL(acc, left, right)
        pto.TMATMUL_ACC(acc, acc, left, right)  # reads the first product back
        pto.TSTORE(GlobalTensor(out, g), acc)

    y0 = y.copy()
    for lockstep in (True, False):
        y[...] = y0
        out[...] = 0
        pto.launch(k, x, y, out, blocks=1, lockstep=lockstep)
        np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-5)
        np.testing.assert_array_equal(y, (x.astype(np.float32) + 1).astype(np.float16))


def test_a_shared_boxed_load_is_copied_when_its_gm_array_is_written():
    """Blocks that load the same A panel share it (LaneBlocks); a later store into the same
    GM array (each block its own scratch rows) makes the loaded tiles take their values first
    (a private copy of the distinct panels), in lockstep and block by block alike."""
    m = 16
    rng = np.random.default_rng(5)
    a = rng.standard_normal((6 * m, m)).astype(np.float16)   # 2 panels, then 4 scratch rows
    b = rng.standard_normal((m, m)).astype(np.float16)
    a0 = a.copy()
    want = np.concatenate([np.repeat((a0[i * m:(i + 1) * m].astype(np.float64)
                                      @ b.astype(np.float64))[None], 2, 0) for i in range(2)])

    def k(a, b, out):
        blk = pto.get_block_idx()
        bi = blk // 2
        g = (1, 1, 1, m, m)
        ta = Tile(TileType.Mat, np.float16, m, m, BLayout.ColMajor, None, SLayout.RowMajor)
        tb = Tile(TileType.Mat, np.float16, m, m, BLayout.ColMajor, None, SLayout.RowMajor)
        left, right = pto.TileLeft(np.float16, m, m), pto.TileRight(np.float16, m, m)
        acc = pto.TileAcc(np.float32, m, m)
        pto.TLOAD(ta, GlobalTensor(a, g, offset=bi * m * m))
        pto.TLOAD(tb, GlobalTensor(b, g))
        z = Tile(TileType.Vec, np.float16, m, m)
        pto.TEXPANDS(z, 0.0)
        pto.TSTORE(GlobalTensor(a, g, offset=(2 + blk) * m * m), z)
        pto.TMOV(left, ta)
        pto.TMOV(right, tb)
        pto.TMATMUL(acc, left, right)
        pto.TSTORE(GlobalTensor(out, g, offset=blk * m * m), acc)

    for lockstep in (True, False):
        a[...] = a0
        out = np.zeros((4, m, m), np.float32)
        pto.launch(k, a, b, out, blocks=4, lockstep=lockstep)
        np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-5)
        np.testing.assert_array_equal(a[:2 * m], a0[:2 * m])
        assert not a[2 * m:].any()


def test_an_instruction_overwriting_a_loaded_tile_in_full_reads_it_first():
    """TMULS(t, t, s) / TEXP(t, t) right after TLOAD(t): the result replaces the loaded values
    (never copied in first), and a tile aliasing t's bytes sees the result."""
    n = R * C
    x = np.arange(n, dtype=np.float32) / n
    out = np.zeros((3, n), np.float32)

    def k(x, out):
        t, u = _tile(), _tile()
        pto.TASSIGN(t, 0x0)
        pto.TASSIGN(u, 0x0)             # u aliases t
        pto.TLOAD(t, _views(x, 0))
        pto.TMULS(t, t, 2.0)
        pto.TSTORE(_views(out[0], 0), u)
        pto.TLOAD(t, _views(x, 0))
        pto.TEXP(t, t)
        pto.TSTORE(_views(out[1], 0), u)
        pto.TSTORE(_views(out[2], 0), t)
    pto.launch(k, x, out, blocks=1, mode="manual")
    np.testing.assert_array_equal(out[0], 2 * x)
    want = np.exp(x.astype(np.float64)).astype(np.float32)
    np.testing.assert_array_equal(out[1], want)
    np.testing.assert_array_equal(out[2], want)
    np.testing.assert_array_equal(x, np.arange(n, dtype=np.float32) / n)


def test_a_tile_written_after_a_new_lazy_reader_appeared_settles_it_first():
    """A tile whose storage was already checked (nothing read it lazily) gets a lazy reader
    (TMOV without a copy); writing the tile afterwards must give the reader its copy first."""
    n = R * C
    x = np.arange(n, dtype=np.float32)
    out = np.zeros((3, n), np.float32)

    def k(x, out):
        a, b, c = _tile(), _tile(), _tile()
        pto.TLOAD(a, _views(x, 0))
        pto.TADDS(a, a, 1.0)            # a has its own storage now
        pto.TSTORE(_views(out[0], 0), a)
        pto.TMOV(b, a)                  # b reads a's storage in place
        pto.TMOV(c, a)
        pto.TADDS(a, a, 1.0)            # ... until a is written: b and c keep x + 1
        pto.TSTORE(_views(out[1], 0), b)
        pto.TADDS(a, a, 1.0)
        pto.TSTORE(_views(out[2], 0), c)
    pto.launch(k, x, out, blocks=1)
    for row in out:
        np.testing.assert_array_equal(row, x + 1)


def test_a_store_of_a_tile_moved_from_one_reloaded_since_stores_the_moved_values():
    """Found by tests/test_copy_on_write_fuzz.py: b = TMOV(a) reads a's storage in place; a is
    then reloaded from GM (in place too), and b is stored over that GM. The store read b's
    values as a view of a's storage before the GM barrier refilled that storage from GM, so it
    stored a's new values. Barriers now run before an instruction reads its sources."""
    n = R * C
    x = np.arange(3 * n, dtype=np.float32)
    want = x.copy()

    def k(x):
        a, b = _tile(), _tile()
        pto.TLOAD(a, _views(x, 0))
        pto.TSTORE(pto.GlobalTensor(x, (1, 1, 1, R, C), offset=C), a)  # overlaps a's rows
        pto.TMOV(b, a)                  # b reads a's storage in place
        pto.TLOAD(a, _views(x, 0))      # a reads GM in place (its storage keeps b's values)
        pto.TSTORE(_views(x, 0), b)     # GM barrier: a takes GM into its storage
    pto.launch(k, x, blocks=1)
    # the plain sequence: rows 1.. get a (= rows 0..), then rows 0.. get b (= the old rows 0..)
    want[C:C + n] = want[:n].copy()
    want[:n] = np.arange(n, dtype=np.float32)
    np.testing.assert_array_equal(x, want)


def test_a_deferred_result_lands_before_a_later_load_into_the_same_bytes():
    """Found by tests/test_copy_on_write_fuzz.py: two tiles at one address (manual mode); the
    first gets a deferred result, the second is then loaded in place. The deferred result was
    written to the shared bytes only later (when its inputs' GM was overwritten), over the
    loaded values. A tile's bytes now take an aliased tile's deferred values before anything
    else writes them."""
    n = R * C
    x = np.arange(2 * n, dtype=np.float32)
    out = np.zeros(n, np.float32)

    def k(x, out):
        a, b, c = _tile(), _tile(), _tile()
        pto.TASSIGN(a, 0x0)
        pto.TASSIGN(b, 0x0)             # b shares a's bytes
        pto.TASSIGN(c, 0x4000)
        pto.TLOAD(c, _views(x, 1))
        pto.TADD(a, c, c)               # deferred: a = 2 * x[n:]
        pto.TLOAD(b, _views(x, 0))      # b (= a's bytes) = x[:n], read in place
        pto.TSTORE(_views(x, 1), b)     # x[n:] written: a's inputs change, so a is computed
        pto.TSTORE(_views(out, 0), b)   # b must still hold x[:n]
    x0 = x.copy()
    pto.launch(k, x, out, blocks=1, mode="manual")
    np.testing.assert_array_equal(out, x0[:n])
    np.testing.assert_array_equal(x[n:], x0[:n])


def test_views_of_tiles_in_lockstep():
    """Found by tests/test_copy_on_write_fuzz.py: TRESHAPE / TSUBVIEW ran once per block on
    that block's part of the tile, so the real view tile never got the bytes (a launch of more
    than one block stored poison). Now they run once for all blocks; a view whose offset
    differs between blocks falls back to block-by-block execution (or says so with
    lockstep=True)."""
    n = R * C
    blocks = 3
    x = np.arange(blocks * n, dtype=np.float32)
    out = np.zeros((2, blocks * n), np.float32)

    def k(x, out, per_block_row):
        b = pto.get_block_idx()
        t = _tile()
        pto.TLOAD(t, _views(x, b))
        sub = pto.Tile(TileType.Vec, np.float32, R // 2, C)
        pto.TSUBVIEW(sub, t, (b % 2) * 4 if per_block_row else 4, 0)
        flat = pto.Tile(TileType.Vec, np.float32, R * 2, C // 2)
        pto.TRESHAPE(flat, t)
        pto.TADDS(sub, sub, 1000.0)                      # through the view: t changes too
        pto.TSTORE(_views(out[0], b), t)
        pto.TSTORE(_views(out[1], b, R * 2, C // 2), flat)

    for per_block_row in (False, True):
        want = np.zeros_like(out)
        for b in range(blocks):
            rows = x[b * n:(b + 1) * n].reshape(R, C).copy()
            r0 = (b % 2) * 4 if per_block_row else 4
            rows[r0:r0 + R // 2] += 1000.0
            want[0, b * n:(b + 1) * n] = rows.reshape(-1)
            want[1, b * n:(b + 1) * n] = rows.reshape(-1)
        for lockstep in (True, "auto", False):
            out[...] = 0
            if per_block_row and lockstep is True:
                with pytest.raises(pto.PtoError, match="differs between blocks"):
                    pto.launch(k, x, out, per_block_row, blocks=blocks, lockstep=lockstep)
                continue
            pto.launch(k, x, out, per_block_row, blocks=blocks, lockstep=lockstep)
            np.testing.assert_array_equal(out, want)


def test_placing_a_tile_whose_valid_rows_differ_by_block():
    """Found by the fuzz: in manual mode, TASSIGN of a tile whose valid rows depend on the
    block index ran once per block on that block's part, so the tile itself was never placed
    ("has no storage"). Placement and views ignore valid regions: one call for all blocks."""
    n = R * C
    blocks = 3
    x = np.arange(blocks * n, dtype=np.float32)
    out = np.zeros(blocks * n, np.float32)

    def k(x, out):
        b = pto.get_block_idx()
        t = _tile(valid=(pto.Dyn(R - b), C))
        pto.TASSIGN(t, 0x1000)
        pto.TLOAD(t, _views(x, b))
        pto.TADDS(t, t, 1.0)
        pto.TSTORE(_views(out, b), t)
    for lockstep in (True, False):
        out[...] = 0
        pto.launch(k, x, out, blocks=blocks, mode="manual", lockstep=lockstep)
        for b in range(blocks):
            rows = out[b * n:(b + 1) * n].reshape(R, C)
            want = x[b * n:(b + 1) * n].reshape(R, C) + 1
            np.testing.assert_array_equal(rows[:R - b], want[:R - b])
            assert not rows[R - b:].any()


def test_a_deferred_result_of_one_blocks_part_is_kept():
    """Found by tests/test_lockstep_fuzz.py: tiles whose valid columns differ by block make a
    lockstep launch run TADD per block, on each block's part of the tiles; where a block's part
    was whole, its result was deferred on that temporary part and then lost (the tile kept
    its old values). The storage barrier now settles deferred tiles that own the bytes (as it
    did lazily loaded ones)."""
    n = R * C
    blocks = 3
    x = (np.arange(blocks * n, dtype=np.float32) % 17) - 8
    out = np.zeros(blocks * n, np.float32)

    def k(x, out):
        b = pto.get_block_idx()
        vc = pto.Dyn(C - (b % 2) * (C - 1))  # C, 1, C valid columns
        t, u = _tile(valid=(R, vc)), _tile(valid=(R, vc))
        pto.TLOAD(t, _views(x, b))
        pto.TADD(u, t, t)                     # whole in blocks 0 and 2: deferred there
        pto.TABS(u, u)
        pto.TSTORE(_views(out, b), u)
    for lockstep in (True, False):
        out[...] = 0
        pto.launch(k, x, out, blocks=blocks, lockstep=lockstep)
        for b in range(blocks):
            cols = C if b % 2 == 0 else 1
            got = out[b * n:(b + 1) * n].reshape(R, C)
            want = np.abs(2 * x[b * n:(b + 1) * n].reshape(R, C))
            np.testing.assert_array_equal(got[:, :cols], want[:, :cols])


def _grid_store_kernel(ni: int, nj: int, gi: int, gj: int, rows: int, cols: int,
                       width: int, atomic: bool, a_major: bool):
    """Each block loads its own rows x cols tile and stores it at grid position (i, j) of a
    GM matrix ``width`` wide: element offset i * gi * width + j * gj."""
    def kernel(src, out):
        b = pto.get_block_idx()
        i, j = (b // nj, b % nj) if a_major else (b % ni, b // ni)
        t = Tile(TileType.Vec, np.float32, rows, cols)
        n = rows * cols
        pto.TLOAD(t, GlobalTensor(src, (1, 1, 1, rows, cols), (n, n, n, cols, 1), offset=b * n))
        g = GlobalTensor(out, (1, 1, 1, rows, cols), (1, 1, 1, width, 1),
                         offset=i * gi * width + j * gj)
        if atomic:
            pto.TSTORE(g, t, atomicType=pto.AtomicType.AtomicAdd)
        else:
            pto.TSTORE(g, t)
    return kernel


@pytest.mark.parametrize("atomic", [False, True])
@pytest.mark.parametrize("a_major", [True, False])
@pytest.mark.parametrize("ni, nj, gi, gj, rows, cols, width", [
    (2, 4, 8, 16, 8, 16, 64),    # a GEMM's C: the blocks tile the matrix
    (3, 2, 10, 20, 8, 16, 48),   # gaps between the blocks
    (2, 3, 4, 8, 8, 16, 40),     # overlapping blocks: stored in block order
    (4, 1, 8, 0, 8, 16, 16),     # one column of blocks (evenly spaced: a plain window)
])
def test_blocks_storing_on_a_grid_match_block_by_block(ni, nj, gi, gj, rows, cols, width,
                                                       atomic, a_major, monkeypatch):
    """Blocks whose GM offsets form a 2-D grid (i * gi rows down, j * gj columns across) store
    in one strided copy when their windows do not overlap; lockstep equals block by block
    (the last writer wins where they overlap; atomic adds accumulate), and both equal the
    stores done one by one in numpy."""
    height = (ni - 1) * gi + rows
    kern = _grid_store_kernel(ni, nj, gi, gj, rows, cols, width, atomic, a_major)
    src = np.random.default_rng(ni * 100 + gj).standard_normal(
        (ni * nj, rows, cols)).astype(np.float32)
    grids = []
    real = GlobalTensor.grid_window

    def spy(self, r, c):
        g = real(self, r, c)
        grids.append(g is not None)
        return g
    monkeypatch.setattr(GlobalTensor, "grid_window", spy)
    runs = {}
    for lockstep in (True, False):
        out = np.full((height, width), 0.5, np.float32)
        pto.launch(kern, src, out, blocks=ni * nj, target="a2a3", lockstep=lockstep)
        runs[lockstep] = out
    # the one strided copy where the windows are a grid and do not overlap
    assert any(grids) == (nj > 1 and gj >= cols and gi >= rows)
    want = np.full((height, width), 0.5, np.float32)
    for b in range(ni * nj):
        i, j = (b // nj, b % nj) if a_major else (b % ni, b // ni)
        v = src[b]
        win = want[i * gi:i * gi + rows, j * gj:j * gj + cols]
        win[...] = win + v if atomic else v
    assert runs[True].tobytes() == runs[False].tobytes()
    np.testing.assert_array_equal(runs[True], want)


def test_grid_offsets_are_recognised_only_as_a_grid():
    from ptoisa.tensor import lane_grid

    assert lane_grid(np.array([0, 16, 32, 512, 528, 544], np.int64)) == (0, 2, 3, 512, 16)
    assert lane_grid(np.array([5, 6, 7, 8], np.int64)) is None      # evenly spaced: a window
    assert lane_grid(np.array([0, 16, 512, 530], np.int64)) is None  # not a grid
    assert lane_grid(np.array([0, 16, 32, 512, 528], np.int64)) is None  # ragged


def test_launches_run_with_warnings_off_and_leave_numpy_state_as_it_was() -> None:
    """A launch (the general path, and a `.pto` plan's replay, grid.run_one) runs with every
    numpy floating-point warning ignored and the caller's other settings (buffer size), and
    leaves numpy's state as it found it, also when that state changes between launches."""
    from pathlib import Path

    from ptoisa import grid

    seen: list[tuple[dict[str, str], int]] = []

    def kernel(x: np.ndarray) -> None:
        seen.append((np.geterr(), np.getbufsize()))

    x = np.zeros(8, np.float32)
    for bufsize, err in ((8192, "warn"), (16384, "raise"), (8192, "warn")):
        with np.errstate(all=err):
            old = np.setbufsize(bufsize)
            try:
                before = np.geterr()
                pto.launch(kernel, x)
                m = grid._launch_machine("a2a3", 1, {})
                grid._done(m)
                grid.run_one(lambda _m: kernel(x), m)
                assert np.geterr() == before and np.getbufsize() == bufsize
            finally:
                np.setbufsize(old)
    assert len(seen) == 6
    assert all(e == {k: "ignore" for k in e} for e, _b in seen)
    assert [b for _e, b in seen] == [8192, 8192, 16384, 16384, 8192, 8192]
    prog = pto.load(Path(__file__).resolve().parents[1] / "examples" / "flash_softmax.pto")
    s = np.ones(8 * 16 * 128, np.float32)
    for _ in range(4):  # (interpreted, recorded, replayed twice)
        with np.errstate(all="raise"):
            prog.run("flash_softmax_single", s, np.zeros_like(s))
            assert np.geterr()["invalid"] == "raise"

"""The shortcuts taken for speed give exactly the results (and the errors) of the long way."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import ptoisa as pto
from ptoisa import BLayout, GlobalTensor, SLayout, Tile, TileType
from ptoisa.errors import PtoError
from ptoisa.isa.reduce.rowsum import sequential_sum
from ptoisa.tile import tile_spec


def _bits(a: np.ndarray) -> np.ndarray:
    return a.view(f"u{a.dtype.itemsize}")


@pytest.mark.parametrize("dt,acc", [(np.float32, np.float32), (np.float16, np.float32),
                                    (np.int16, np.int16), (np.float64, np.float64)])
@pytest.mark.parametrize("shape", [(8, 64, 64), (600, 100), (3, 300, 7)])
def test_sequential_sum_by_column_is_cumsum(dt, acc, shape):
    rng = np.random.default_rng(0)
    x = (rng.standard_normal(shape) * 3e3).astype(dt)
    if dt == np.float32:
        flat = x.reshape(-1)
        flat[::97], flat[::89], flat[::101] = np.inf, -np.inf, np.nan
    with np.errstate(all="ignore"):
        want = np.add.accumulate(x.astype(acc), axis=-1, dtype=acc)[..., -1]  # left to right
    got = sequential_sum(x, acc)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(_bits(got), _bits(want))


def _specials(x: np.ndarray) -> None:
    x[3, :] = 0.0
    x[3, 5] = -0.0           # a zero row: which zero is kept depends on the order
    x[4, :] = -0.0
    x[4, 7] = 0.0
    x[5, 9] = np.nan         # a NaN inside a row (not first): the fold ignores it
    x[6, 0] = np.nan         # a NaN first: the fold keeps it


def _fold(x: np.ndarray, is_max: bool) -> np.ndarray:
    """The CPU simulator's row fold, by hand: keep the first, replace on strictly greater."""
    out = x[:, 0].copy()
    for r in range(x.shape[0]):
        for v in x[r, 1:]:
            if (v > out[r]) if is_max else (v < out[r]):
                out[r] = v
    return out


@pytest.mark.parametrize("special", [False, True])
@pytest.mark.parametrize("name", ["TROWMAX", "TROWMIN"])
def test_cpu_row_max_min_equal_the_fold(name, special):
    rows, cols = 64, 256  # large enough for the lockstep/deferred paths
    rng = np.random.default_rng(1)
    x = rng.standard_normal((rows, cols)).astype(np.float32)
    x[7, 3] = x[7, 200] = x[7].max() + 1  # ties of equal values
    x[8, 3] = x[8, 200] = x[8].min() - 1
    if special:  # zeros and NaNs: numpy's max/min may differ from the fold there
        _specials(x)

    for blocks, data in ((1, x), (2, np.concatenate([x, x[::-1]]))):
        out = np.zeros((blocks * rows,), np.float32)

        def kernel(src: np.ndarray, dst: np.ndarray) -> None:
            b = pto.get_block_idx()
            t = Tile(TileType.Vec, np.float32, rows, cols)
            tmp = Tile(TileType.Vec, np.float32, rows, cols)
            r = Tile(TileType.Vec, np.float32, rows, 1, BLayout.ColMajor)
            pto.TLOAD(t, GlobalTensor(src, (1, 1, 1, rows, cols), (0, 0, 0, cols, 1),
                                      offset=b * rows * cols))
            getattr(pto, name)(r, t, tmp)
            pto.TSTORE(GlobalTensor(dst, (1, 1, 1, rows, 1), (0, 0, 0, 1, 1),
                                    offset=b * rows), r)

        pto.launch(kernel, data, out, blocks=blocks, target="cpu")
        np.testing.assert_array_equal(_bits(out), _bits(_fold(data, name == "TROWMAX")))


def test_tile_spec_memo_keeps_every_check():
    tile_spec(TileType.Vec, np.float32, 16, 16)
    with pytest.raises(PtoError, match="rows must be an integer"):
        tile_spec(TileType.Vec, np.float32, True, 16)  # == 1 and hashes as 1: still refused
    with pytest.raises(PtoError, match="32 bytes"):
        tile_spec(TileType.Vec, np.float32, 16, 4)
    with pytest.raises(PtoError, match="32 bytes"):
        tile_spec(TileType.Vec, np.float32, 16, 4)  # failures are not remembered


def test_eager_bind_cache_keeps_every_check():
    a = np.arange(256, dtype=np.float32)
    out = np.zeros(256, np.float32)
    shape, stride = (1, 1, 1, 16, 16), (256, 256, 256, 16, 1)

    def kernel(bad: bool) -> None:
        t = Tile(TileType.Vec, np.float32, 16, 16)
        u = Tile(TileType.Vec, np.float32, 16, 16)
        pto.TLOAD(t, GlobalTensor(a, shape, stride))
        pto.TADD(u, t, t)
        pto.TADD(u, t, 3.0 if bad else t)  # same instruction, a scalar where a tile goes
        pto.TSTORE(GlobalTensor(out, shape, stride), u)

    pto.launch(kernel, False)
    np.testing.assert_array_equal(out, a + a)
    with pytest.raises(PtoError, match="must be a Tile"):
        pto.launch(kernel, True)


@pytest.mark.parametrize("dt", [np.float16, ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e5m2])
def test_slow_casts_by_table_are_the_cast(dt):
    from ptoisa.isa.matrix import matmul as mm

    n = 1 << (8 * np.dtype(dt).itemsize)
    codes = np.arange(n, dtype=np.uint32).astype(f"u{np.dtype(dt).itemsize}")
    want = codes.view(dt).astype(np.float32)  # every bit pattern, NaN payloads included
    got = mm._cast(codes.view(dt).reshape(-1, 16)[::-1])  # (strided, as a GM panel is)
    np.testing.assert_array_equal(_bits(got), _bits(want.reshape(-1, 16)[::-1]))


def test_f16_panels_convert_by_table_to_numpys_cast():
    a = np.random.default_rng(2).standard_normal((128, 128)).astype(np.float16)
    b = np.random.default_rng(3).standard_normal((128, 128)).astype(np.float16)
    got = np.zeros((128, 128), np.float32)

    def gemm(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> None:  # 2x2 blocks, 2 K-steps
        blk = pto.get_block_idx()
        bi, bj = blk // 2, blk % 2
        st = (1 << 14, 1 << 14, 1 << 14, 128, 1)
        ta = Tile(TileType.Mat, np.float16, 64, 64, BLayout.ColMajor, None, SLayout.RowMajor)
        tb = Tile(TileType.Mat, np.float16, 64, 64, BLayout.ColMajor, None, SLayout.RowMajor)
        left, right = pto.TileLeft(np.float16, 64, 64), pto.TileRight(np.float16, 64, 64)
        acc = pto.TileAcc(np.float32, 64, 64)
        for k in range(2):
            pto.TLOAD(ta, GlobalTensor(a, (1, 1, 1, 64, 64), st, offset=bi * 64 * 128 + k * 64))
            pto.TLOAD(tb, GlobalTensor(b, (1, 1, 1, 64, 64), st, offset=k * 64 * 128 + bj * 64))
            pto.TMOV(left, ta)
            pto.TMOV(right, tb)
            if k == 0:
                pto.TMATMUL(acc, left, right)
            else:
                pto.TMATMUL_ACC(acc, acc, left, right)
        pto.TSTORE(GlobalTensor(c, (1, 1, 1, 64, 64), st, offset=bi * 64 * 128 + bj * 64), acc)

    pto.launch(gemm, a, b, got, blocks=4)
    want_c = np.zeros_like(got)
    for i in range(2):  # by hand: f32 products of each 64-deep K-step, accumulated in f32
        for j in range(2):
            s = None
            for k in range(2):
                p = a[i * 64:(i + 1) * 64, k * 64:(k + 1) * 64].astype(np.float32) @ \
                    b[k * 64:(k + 1) * 64, j * 64:(j + 1) * 64].astype(np.float32)
                s = p if s is None else np.float32(1) * (p + s)
            want_c[i * 64:(i + 1) * 64, j * 64:(j + 1) * 64] = s
    np.testing.assert_array_equal(_bits(got), _bits(want_c))


def _pairwise(row, fn, identity, dt):
    """The NPU's halving tree by hand: pad to a power of two, then a[j] op a[j + half]."""
    vals = list(row) + [identity] * ((1 << max(len(row) - 1, 0).bit_length()) - len(row))
    vals = [dt(v) for v in vals]
    while len(vals) > 1:
        h = len(vals) // 2
        vals = [dt(fn(dt(vals[j]), dt(vals[j + h]))) for j in range(h)]
    return vals[0]


@pytest.mark.parametrize("dt", [np.float32, np.float16, np.int16])
@pytest.mark.parametrize("shape", [(1, 1), (3, 5), (2, 7, 24), (40, 1000)])
def test_tree_reduce_in_chunks_is_the_halving_tree(dt, shape, monkeypatch):
    from ptoisa.isa import rules

    rng = np.random.default_rng(7)
    x = (rng.standard_normal(shape) * 50).astype(dt)
    want = np.array([_pairwise(r, np.add, 0, dt) for r in x.reshape(-1, shape[-1])],
                    dt).reshape(shape[:-1])
    with np.errstate(all="ignore"):
        got = rules.tree_reduce(x, np.add, 0)
        monkeypatch.setattr(rules, "_TREE_SMALL", 0)  # the chunked path at any size ...
        monkeypatch.setattr(rules, "_TREE_CHUNK", 64)  # ... in many chunks
        small = rules.tree_reduce(x, np.add, 0)
    assert got.dtype == x.dtype and got.shape == shape[:-1]
    assert got.tobytes() == want.tobytes() == small.tobytes()


def test_tree_reduce_over_the_cores_is_the_same_tree(monkeypatch):
    from ptoisa import parallel
    from ptoisa.isa import rules

    x = np.random.default_rng(8).standard_normal((64, 8, 1024)).astype(np.float32)
    monkeypatch.setattr(parallel, "MIN_ELEMENTS", 1)  # split into parts even on one core
    monkeypatch.setattr(rules, "_TREE_SMALL", 0)
    monkeypatch.setattr(parallel, "workers", lambda: 2)
    lvl = x
    while lvl.shape[-1] > 1:  # one level at a time over the whole array
        h = lvl.shape[-1] // 2
        lvl = lvl[..., :h] + lvl[..., h:]
    assert rules.tree_reduce(x, np.add, 0).tobytes() == lvl[..., 0].tobytes()


@pytest.mark.parametrize("target", ["cpu", "a2a3", "a5"])
def test_exp_of_a_deferred_difference_is_exp_of_the_rounded_difference(target):
    """TEXP(t, t) on TROWEXPANDSUB's deferred result computes it chunk by chunk: the values
    are those of the f32 difference, exp taken in f64 and rounded once."""
    rows, cols, blocks = 8, 1024, 16
    rng = np.random.default_rng(9)
    x = (rng.standard_normal((rows * blocks, cols)) * 30).astype(np.float32)
    x[3, :5] = [np.inf, -np.inf, np.nan, 88.5, -104.0]
    out = np.zeros_like(x)

    def kernel(x, out):
        b = pto.get_block_idx()
        n = rows * cols
        shape, stride = (1, 1, 1, rows, cols), (n, n, n, cols, 1)
        t = Tile(TileType.Vec, np.float32, rows, cols)
        mx = Tile(TileType.Vec, np.float32, rows, 1, BLayout.ColMajor)
        pto.TLOAD(t, GlobalTensor(x, shape, stride, offset=b * n))
        pto.TLOAD(mx, GlobalTensor(x, (1, 1, 1, rows, 1), (n, n, n, cols, 1), offset=b * n))
        pto.TROWEXPANDSUB(t, t, mx)
        pto.TEXP(t, t)
        pto.TSTORE(GlobalTensor(out, shape, stride, offset=b * n), t)

    pto.launch(kernel, x, out, blocks=blocks, target=target)
    with np.errstate(all="ignore"):
        d = x - x[:, :1]
        want = np.exp(d.astype(np.float64)).astype(np.float32)
    assert out.tobytes() == want.tobytes()


@pytest.mark.parametrize("target", ["a2a3", "a5"])
def test_lanes_sharing_b_stack_their_a_rows_and_keep_block_by_block_bits(target, monkeypatch):
    """Every block multiplies its own A by the same B (attention's K / V blocks): lockstep
    runs one product of the stacked A rows when this machine's BLAS gives it the same bits,
    which the block-by-block run (one product per block) must reproduce byte for byte."""
    from ptoisa.isa.matrix import matmul as mm

    blocks, m, k, n = 8, 64, 128, 64
    rng = np.random.default_rng(11)
    a = rng.standard_normal((blocks * m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)

    def kernel(a, b, c):
        i = pto.get_block_idx()
        ta = Tile(TileType.Mat, np.float32, m, k, BLayout.ColMajor, None, SLayout.RowMajor)
        tb = Tile(TileType.Mat, np.float32, k, n, BLayout.ColMajor, None, SLayout.RowMajor)
        left, right = pto.TileLeft(np.float32, m, k), pto.TileRight(np.float32, k, n)
        acc = pto.TileAcc(np.float32, m, n)
        pto.TLOAD(ta, GlobalTensor(a, (1, 1, 1, m, k), offset=i * m * k))
        pto.TLOAD(tb, GlobalTensor(b, (1, 1, 1, k, n)))
        pto.TMOV(left, ta)
        pto.TMOV(right, tb)
        pto.TMATMUL(acc, left, right)
        pto.TSTORE(GlobalTensor(c, (1, 1, 1, m, n), offset=i * m * n), acc)

    runs = {}
    mm._STACKING.clear()
    for lockstep in (True, False):
        c = np.zeros((blocks * m, n), np.float32)
        pto.launch(kernel, a, b, c, blocks=blocks, target=target, lockstep=lockstep)
        runs[lockstep] = c
    assert ((blocks, m, k), (k, n), "<f4") in mm._STACKING      # the stacked product was asked
    assert runs[True].tobytes() == runs[False].tobytes()
    want = (a.astype(np.float64).reshape(blocks, m, k) @ b).reshape(blocks * m, n)
    np.testing.assert_allclose(runs[True], want, rtol=1e-5, atol=1e-4)
    # a BLAS that would sum differently for a taller A keeps one product per lane
    monkeypatch.setattr(mm, "_stacking_keeps_bits", lambda *args: False)
    c = np.zeros((blocks * m, n), np.float32)
    pto.launch(kernel, a, b, c, blocks=blocks, target=target)
    assert c.tobytes() == runs[False].tobytes()


@pytest.mark.parametrize("width", [2, 32, 1024])
def test_tree_reduce_first_level_as_a_pair_reduction_keeps_every_bit(width, monkeypatch):
    """f32 sums: the first level runs as a reduction over the pair axis starting at -0.0;
    a + b must come out bit for bit: signed zeros, infinities of both signs, NaNs with
    payloads and signs in either operand, subnormals, overflow."""
    from ptoisa.isa import rules

    special = np.array([0x7FC00001, 0xFFC00002, 0x7F800001, 0xFF800003, 0x7FC12345, 0x3F800000,
                        0xFF800000, 0x7F800000, 0x80000000, 0x00000000, 0x00000001, 0x80000001,
                        0x7F7FFFFF, 0xFF7FFFFF], np.uint32).view(np.float32)
    pairs = np.array([(a, b) for a in special for b in special], np.float32)
    rows = len(pairs)
    x = np.random.default_rng(3).standard_normal((rows, width)).astype(np.float32)
    h = width // 2
    x[:, 0], x[:, h] = pairs[:, 0], pairs[:, 1]  # the first level adds x[:, j] + x[:, j + h]
    x[5, :] = -0.0  # a row of negative zeros sums to -0.0
    monkeypatch.setattr(rules, "_TREE_SMALL", 0)  # the chunked path, where the pairs run
    with np.errstate(all="ignore"):
        got = rules.tree_reduce(x, np.add, 0)
        lvl = x
        while lvl.shape[-1] > 1:  # the binary tree, one level at a time
            k = lvl.shape[-1] // 2
            lvl = lvl[..., :k] + lvl[..., k:]
    assert got.tobytes() == lvl[..., 0].tobytes()
    assert got[5].tobytes() == np.float32(-0.0).tobytes()


@pytest.mark.parametrize("dt", ["f32", "f16", "bf16"])
@pytest.mark.parametrize("shape", [(8191,), (8, 1024), (40, 1000), (64, 1024), (3, 7, 4096),
                                   (65, 1024)])
def test_wide_exp_through_a_kept_buffer_is_the_one_line_cast(dt, shape):
    """exp in the wide type, rounded once: from 8 K elements the wide values go through a
    buffer the thread keeps; every size (around the buffer's and the chunks' thresholds),
    with and without ``out``, equals numpy's ``exp(a.astype(wide)).astype(dt)`` bit for bit,
    and a result handed back is not changed by the next call."""
    import ml_dtypes

    from ptoisa.dtypes import dtype
    from ptoisa.isa.elementwise.common import wide_apply

    d = dtype(dt)
    npdt = {"f32": np.float32, "f16": np.float16, "bf16": ml_dtypes.bfloat16}[dt]
    wide = np.float64 if dt == "f32" else np.float32
    rng = np.random.default_rng(len(shape) * 1000 + shape[-1])
    a = (rng.standard_normal(shape) * 6).astype(npdt)
    a.reshape(-1)[:6] = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 88.5], np.float32)
    with np.errstate(all="ignore"):
        want = np.exp(a.astype(wide)).astype(npdt)
        got = wide_apply(np.exp, a, d)
        keep = got.copy()
        out = np.empty(shape, npdt)
        wide_apply(np.exp, a[::-1].copy(), d)  # (another call through the same buffer)
        wide_apply(np.exp, a, d, out)
    assert got.tobytes() == keep.tobytes() == want.tobytes()
    assert out.tobytes() == want.tobytes()


@pytest.mark.parametrize("fn", [np.add, np.multiply])
@pytest.mark.parametrize("width", [2, 3, 16, 128, 200, 256])
def test_tree_reduce_of_short_rows_transposed_keeps_every_bit(fn, width):
    """Rows up to rules._TREE_SHORT wide are reduced with the partial sums transposed: the
    same pairs in the same operand order as one level at a time over the rows (by hand
    below), bit for bit over specials (NaN payloads and signs, infinities, signed zeros,
    subnormals, overflow) placed at random in f32 and f16 rows, and the same without NaNs
    (rows that sum to NaN are summed one level at a time: which NaN two NaNs give depends on
    numpy's loop)."""
    from ptoisa.isa import rules

    special = np.array([0x7FC00001, 0xFFC00002, 0x7F800001, 0xFF800003, 0x7FC12345, 0x3F800000,
                        0xFF800000, 0x7F800000, 0x80000000, 0x00000000, 0x00000001, 0x80000001,
                        0x7F7FFFFF, 0xFF7FFFFF], np.uint32).view(np.float32)
    rng = np.random.default_rng(width)
    no_nan = special[~np.isnan(special)]
    for dt, pool in ((np.float32, special), (np.float16, special), (np.float32, no_nan),
                     (np.float16, no_nan)):
        x = rng.standard_normal((300, width)).astype(dt)
        hit = rng.random(x.shape) < 0.05
        with np.errstate(over="ignore"):  # (f32's largest values are f16 infinities)
            x[hit] = pool[rng.integers(0, len(pool), hit.sum())].astype(dt)
        x[7, :] = -0.0
        with np.errstate(all="ignore"):
            got = rules.tree_reduce(x.reshape(3, 100, width), fn, 1 if fn is np.multiply else 0)
            n = 1 << max(width - 1, 0).bit_length()
            lvl = np.concatenate([x, np.full((300, n - width), 1 if fn is np.multiply else 0,
                                             dt)], axis=1)
            while lvl.shape[-1] > 1:
                k = lvl.shape[-1] // 2
                lvl = fn(lvl[:, :k], lvl[:, k:])
        assert got.shape == (3, 100) and got.dtype == dt
        assert got.tobytes() == lvl[:, 0].tobytes()


@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("width", [2, 16, 128, 256])
def test_tree_into_is_the_halving_tree_or_writes_nothing(dt, width):
    """rules.tree_into (a planned TROWSUM's sums, written into dst's view) gives the halving
    tree's bits, levels by hand as in the test above, over rows with specials (infinities,
    signed zeros, subnormals, overflow) placed at random; a source with a row whose root is
    a NaN is refused (tree_reduce sums such rows level by level), nothing written where
    ``out`` is not one contiguous run (which takes the last level itself); a source it does
    not take (not C-contiguous, rows not a power of two, another out type) likewise, out
    untouched; rules._has_nan is np.isnan(r).any()."""
    from ptoisa.isa import rules

    special = np.array([0x7F800000, 0xFF800000, 0x80000000, 0x00000000, 0x00000001,
                        0x80000001, 0x7F7FFFFF, 0xFF7FFFFF], np.uint32).view(np.float32)
    rng = np.random.default_rng(width)
    x = rng.standard_normal((3, 40, width)).astype(dt)
    hit = rng.random(x.shape) < 0.05
    x[hit] = special[rng.integers(0, len(special), hit.sum())].astype(dt)
    x[0, 7, :] = -0.0
    with np.errstate(all="ignore"):
        lvl = x.reshape(-1, width)
        while lvl.shape[-1] > 1:
            k = lvl.shape[-1] // 2
            lvl = lvl[:, :k] + lvl[:, k:]
        want = lvl[:, 0]
        out = np.full((3, 40, 1), 7, dt)
        if np.isnan(want).any():  # (inf - inf in a row: refused, as a NaN root)
            assert not rules.tree_into(x, np.add, out)
            assert (out == 7).all()
            x = np.where(hit, dt(1), x)  # (no specials: no NaN root)
            lvl = x.reshape(-1, width)
            while lvl.shape[-1] > 1:
                k = lvl.shape[-1] // 2
                lvl = lvl[:, :k] + lvl[:, k:]
            want = lvl[:, 0]
        assert rules.tree_into(x, np.add, out)
        assert out.reshape(-1).tobytes() == want.tobytes()
        flat = np.full(120, 7, dt)  # (1-D: the last level written into it)
        assert rules.tree_into(x, np.add, flat) and flat.tobytes() == want.tobytes()
        assert rules.tree_into(x, np.add, np.full(240, 7, dt)[::2]) is True  # (strided)
        assert rules.tree_reduce(x, np.add, 0).reshape(-1).tobytes() == want.tobytes()
        y = x.copy()
        y[2, 5, width // 2] = np.nan
        out[...] = 7
        assert not rules.tree_into(y, np.add, out) and (out == 7).all()
        assert not rules.tree_into(x[..., ::-1], np.add, out)  # (not C-contiguous)
        assert not rules.tree_into(x, np.add, out.astype(np.float16))
        assert not rules.tree_into(x[..., :width - 1].copy(), np.add, out) or width == 2
        assert (out == 7).all()
    for r in (want, np.array([np.inf, -np.inf], dt), np.array([1, np.nan], dt),
              np.array([np.nan], dt), np.zeros(0, dt), want[::2]):
        with np.errstate(all="ignore"):
            assert rules._has_nan(r) == bool(np.isnan(r).any())


def test_tree_reduce_kept_buffers_are_not_its_results():
    """Short rows' trees keep their level buffers per thread (rules._short_tree): a result
    is the caller's (a later call of the same shape does not change it), and the kept path
    and the fresh one (past rules._TREE_KEEP) give the same bits."""
    from ptoisa.isa import rules

    rng = np.random.default_rng(3)
    x, y = (rng.standard_normal((128, 128)).astype(np.float32) for _ in range(2))
    with np.errstate(all="ignore"):
        rx = rules.tree_reduce(x, np.add, 0)
        keep = rx.copy()
        rules.tree_reduce(y, np.add, 0)
        assert rx.tobytes() == keep.tobytes()
        big = rules.tree_reduce(np.concatenate([x] * 5), np.add, 0)  # (fresh arrays)
    assert rules._short_tree(640, 128, np.dtype(np.float32)) is None
    assert big[:128].tobytes() == keep.tobytes()


@pytest.mark.parametrize("target", ["a2a3", "cpu"])
@pytest.mark.parametrize("is_max", [True, False])
@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(300, 2), (300, 16), (3, 100, 128), (40, 200)])
def test_row_max_min_by_rows_keeps_every_bit(target, is_max, dt, shape):
    """The row max / min reduced row by row over the flat array (reduce_expand._by_rows) is
    numpy's reduction along the rows bit for bit: rows with NaNs of several payloads and
    signs, signed zeros and infinities among them (such rows are reduced as numpy reduces,
    the others have one value whatever the order); on cpu the simulator's fold."""
    from ptoisa.isa.reduce import reduce_expand as rx

    with np.errstate(invalid="ignore"):  # (a signalling NaN widened)
        special = np.array([0x7FC00001, 0xFFC00002, 0x7F800001, 0xFF800003, 0x80000000,
                            0x00000000, 0x7F800000, 0xFF800000, 0x00000001], np.uint32
                           ).view(np.float32).astype(dt)
    rng = np.random.default_rng(shape[-1])
    uf = np.maximum if is_max else np.minimum
    m = pto.Machine(target)
    for trial in range(4):
        x = rng.standard_normal(shape).astype(dt)
        x2 = x.reshape(-1, shape[-1])
        if trial:  # (trial 0: no specials, every row by rows)
            hit = rng.random(x2.shape) < 0.02 * trial
            x2[hit] = special[rng.integers(0, len(special), hit.sum())]
            x2[5, :] = 0.0
            x2[5, 1] = -0.0
        with np.errstate(all="ignore"):
            got = rx._extreme(m, x, -1, is_max)
            if target == "cpu":
                idx = rx._first_extreme(x, -1, is_max)
                want = np.take_along_axis(x, idx[..., None], axis=-1)[..., 0]
            else:
                want = uf.reduce(x, axis=-1)
        assert got.shape == want.shape and got.dtype == want.dtype
        assert got.tobytes() == want.tobytes()
    x = np.abs(rng.standard_normal((64, 32))).astype(dt) + 1
    assert rx._by_rows(uf, x, -1) is not None  # (the path taken)
    assert rx._by_rows(uf, x[:, ::2], -1) is None  # (not contiguous: numpy's reduction)


_TB = ("!pto.tile_buf<loc=vec, dtype=f32, rows={r}, cols={c}, v_row={r}, v_col={c}, "
       "blayout={b}, slayout=none_box, fractal=512, pad=0>")
_EXPAND_KERNEL = """
!T0 = T0TYPE
!T1 = T1TYPE
module {
  func.func @k(%s: !pto.ptr<f32>, %p: !pto.ptr<f32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c16 = arith.constant 16 : index
    %c128 = arith.constant 128 : index
    %a0 = arith.constant 0 : i64
    %am = arith.constant MAXADDR : i64
    %a1 = arith.constant 8192 : i64
    %vs = pto.make_tensor_view %s, shape = [%c16, %c128], strides = [%c128, %c1] : TV
    %vp = pto.make_tensor_view %p, shape = [%c16, %c128], strides = [%c128, %c1] : TV
    %s0 = pto.alloc_tile addr = %a0 : !T0
    %max = pto.alloc_tile addr = %am : !T1
    %tmp = pto.alloc_tile addr = %a1 : !T0
    %ps = pto.partition_view %vs, offsets = [%c0, %c0], sizes = [%c16, %c128] : TV -> PV
    pto.tload ins(%ps : PV) outs(%s0 : !T0)
    pto.trowmax ins(%s0, %tmp : !T0, !T0) outs(%max : !T1)
    pto.trowexpandOP ins(%s0, %max : !T0, !T1) outs(%s0 : !T0) {src1Col = 1}
    %pp = pto.partition_view %vp, offsets = [%c0, %c0], sizes = [%c16, %c128] : TV -> PV
    pto.tstore ins(%s0 : !T0) outs(%pp : PV)
    return
  }
}
""".replace("T0TYPE", _TB.format(r=16, c=128, b="row_major")) \
    .replace("T1TYPE", _TB.format(r=16, c=1, b="col_major")) \
    .replace("TV", "!pto.tensor_view<?x?xf32>") \
    .replace("PV", "!pto.partition_tensor_view<16x128xf32>")


@pytest.mark.parametrize("target", ["cpu", "a2a3"])
@pytest.mark.parametrize("maxaddr", [0, 512, 16384], ids=["in-row-0", "in-row-1", "apart"])
@pytest.mark.parametrize("op", ["sub", "div", "add", "mul"])
def test_row_expand_with_src1col_in_place_over_an_aliased_column(op, maxaddr, target):
    """trowexpand{sub,div,add,mul} with src1Col = 1 computes straight into dst: in place
    (dst is src0), with the row maxima's column placed inside dst's own bytes (row 0 or
    row 1 of it: the maxima overwrite 16 of its elements first) or apart, interpreted and
    replayed from a plan: the values numpy gives step by step by hand."""
    src = _EXPAND_KERNEL.replace("MAXADDR", str(maxaddr)).replace("OP", op)
    prog = pto.load(src, target=target)
    uf = {"sub": np.subtract, "div": np.divide, "add": np.add, "mul": np.multiply}[op]
    for seed in range(4):
        x = np.random.default_rng(seed).standard_normal((16, 128), dtype=np.float32)
        s, m = x.copy(), x.max(axis=1)
        if maxaddr < s.nbytes:  # the maxima written over 16 of s0's elements
            s.reshape(-1)[maxaddr // 4:maxaddr // 4 + 16] = m
        want = uf(s, m[:, None])
        p = np.zeros_like(x)
        prog.run("k", x.reshape(-1), p.reshape(-1), plans=seed > 0)
        assert p.tobytes() == want.tobytes()


@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("width", [2, 16, 128])
def test_tree_into_plan_sums_its_arrays_as_tree_into_each_call(dt, width):
    """rules.tree_into_plan (a planned TROWSUM's tree, prepared for the source and dst views
    a replay finds again): each call sums the arrays' contents of the moment, the halving
    tree's bits by hand (as above), into a 1-D out (the last level written there) or an out
    of another shape; two prepared trees of one shape called in turn each keep their own
    level buffers; a NaN root: False (the caller writes out again); None where tree_into
    takes nothing."""
    from ptoisa.isa import rules

    rng = np.random.default_rng(width + 1)
    x = np.empty((2, 16, width), dt)
    z = np.empty_like(x)
    flat, shaped = np.full(32, 7, dt), np.full((2, 16, 1), 7, dt)
    go, go_z = rules.tree_into_plan(x, np.add, flat), rules.tree_into_plan(z, np.add, shaped)
    assert go is not None and go_z is not None

    def tree(a: np.ndarray) -> np.ndarray:
        lvl = a.reshape(-1, width)
        while lvl.shape[-1] > 1:
            k = lvl.shape[-1] // 2
            lvl = lvl[:, :k] + lvl[:, k:]
        return lvl[:, 0]
    with np.errstate(all="ignore"):
        for k in range(3):
            x[...] = rng.standard_normal(x.shape) * 10.0 ** (3 * k)
            z[...] = rng.standard_normal(x.shape)
            z[1, 3, 0] = -0.0 if k else np.float32(1e-45)
            assert go() and go_z()
            assert flat.tobytes() == tree(x).tobytes()
            assert shaped.reshape(-1).tobytes() == tree(z).tobytes()
        x[0, 2, width - 1] = np.nan
        assert go() is False
        assert rules.tree_into_plan(x[..., ::-1], np.add, flat) is None
        assert rules.tree_into_plan(x, np.add, flat.astype(np.float16)) is None
        assert rules.tree_into_plan(x, np.add, np.zeros(31, dt)) is None


def test_rows_extreme_into_takes_each_new_source_and_out_as_it_finds_them():
    """reduce_expand.rows_extreme_into (a planned TROWMAX's), which checks a source and out
    it has not met and keeps their flat views for the next call: the rows' maxima of each
    call's contents into a contiguous out, or into an out of another layout; a source it
    does not take (not C-contiguous, another type or width) False, out untouched, and the
    source before it taken again after; a NaN or zero maximum False."""
    from ptoisa import memory
    from ptoisa.isa.reduce import reduce_expand

    m = memory.Machine("cpu")
    into = reduce_expand.rows_extreme_into(m, True, np.dtype(np.float32), 16)
    assert into is not None
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 8, 16)).astype(np.float32) + 5
    out, strided = np.full((2, 8, 1), 7, np.float32), np.full((2, 8, 2), 7, np.float32)
    for k in range(2):
        x[...] = rng.standard_normal(x.shape) + 5 * (1 - 2 * k)
        assert into(x, out) and out.reshape(-1).tobytes() == x.max(axis=-1).tobytes()
        assert into(x, strided[..., :1])
        assert strided[..., 0].tobytes() == x.max(axis=-1).tobytes()
        assert (strided[..., 1] == 7).all()
    out[...] = 7
    for bad in (x[..., ::-1], x.astype(np.float64), np.ascontiguousarray(x[..., :8])):
        assert not into(bad, out) and (out == 7).all()
    assert into(x, out) and out.reshape(-1).tobytes() == x.max(axis=-1).tobytes()
    y = np.abs(x)
    y[1, 3, :] = 0.0
    assert not into(y, out)


_NAN_PAIRS = np.array([0x7FC00001, 0xFFC00002, 0x7F800001, 0xFF800003, 0x7FC12345, 0x3F800000,
                       0xFF800000, 0x7F800000, 0x80000000, 0x00000000, 0x00000001, 0x80000001,
                       0x7F7FFFFF, 0xFF7FFFFF], np.uint32).view(np.float32)


@pytest.mark.parametrize("width", [512, 1024, 4096])
def test_rows_under_a_one_row_ufunc_buffer_keep_every_bit(width):
    """parallel.row_buffer (numpy's ufunc buffer set to one row around elementwise calls
    over rows of 512 to 4096): the row sums' levels, a division by a broadcast column (the
    deferred division into a store) and exp of a deferred difference, widened on the way
    (wide_apply_pending) give the bits of the same numpy calls under numpy's default buffer,
    NaN payloads of either operand included; the buffer is as before afterwards."""
    from ptoisa import parallel
    from ptoisa.dtypes import dtype
    from ptoisa.isa import rules
    from ptoisa.isa.elementwise.common import wide_apply_pending

    pairs = np.array([(a, b) for a in _NAN_PAIRS for b in _NAN_PAIRS], np.float32)
    rows = max(len(pairs), (1 << 16) // width)
    rng = np.random.default_rng(width)
    x = (rng.standard_normal((rows, width)) * 20).astype(np.float32)
    col = (rng.standard_normal((rows, 1)) * 3).astype(np.float32)
    h = width // 2
    n = len(pairs)
    x[:n, 7], x[:n, h + 7] = pairs[:, 0], pairs[:, 1]  # met by the first level
    col[:n, 0] = pairs[:, 1]
    x3, col3 = x.reshape(rows // 2, 2, width), col.reshape(rows // 2, 2, 1)
    before = np.getbufsize()
    with np.errstate(all="ignore"):
        lvl = x
        while lvl.shape[-1] > 1:
            lvl = lvl[..., :lvl.shape[-1] // 2] + lvl[..., lvl.shape[-1] // 2:]
        want_sum = lvl[..., 0]
        want_div = x3 / col3
        want_exp = np.exp((x3 - col3).astype(np.float64)).astype(np.float32)
        assert np.getbufsize() == before
        got_sum = rules.tree_reduce(x, np.add, 0)
        got_div = np.empty_like(x3)
        parallel.into(np.divide, (x3, col3), got_div)
        got_exp = np.empty_like(x3)
        wide_apply_pending(np.exp, (np.subtract, (x3, col3)), dtype("f32"), got_exp)
    assert np.getbufsize() == before
    assert _bits(got_sum).tobytes() == _bits(want_sum).tobytes()
    assert _bits(got_div).tobytes() == _bits(want_div).tobytes()
    assert _bits(got_exp).tobytes() == _bits(want_exp).tobytes()
    taken = parallel.row_buffer(width, x.size)
    np.setbufsize(before)
    assert taken == before  # (the path was taken)

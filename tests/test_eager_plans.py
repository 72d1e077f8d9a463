"""Execution plans of eager kernels (ptoisa/eager_plans.py): the same bits with plans on and
off for the benchmark and example kernels, and the launches a plan must not replay: data read
into the kernel's Python, a guard miss, control flow the record cannot see."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import ptoisa as pto
from ptoisa import GlobalTensor, Tile, TileType, eager_plans
from ptoisa.observe import observing

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

import kernels as K  # noqa: E402  (benchmarks/kernels.py)
import scale as S  # noqa: E402  (benchmarks/scale.py)


def _example(name: str) -> ModuleType:
    mod = sys.modules.get(f"example_{name}")
    if mod is None:
        spec = importlib.util.spec_from_file_location(f"example_{name}",
                                                      ROOT / "examples" / f"{name}.py")
        assert spec is not None and spec.loader is not None
        mod = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = mod
        spec.loader.exec_module(mod)
    return mod


def _counts(kernel: Callable[..., Any]) -> tuple[int, int]:
    s = eager_plans.stats(kernel)
    return (0, 0) if s is None else (s.built, s.hits)


def _both_ways(kernel: Callable[..., Any], inputs: list[np.ndarray], outputs: list[np.ndarray],
               *scalars: Any, launches: int = 5, **kw: Any) -> tuple[int, int]:
    """Launch ``kernel`` interpreted, then ``launches`` times with plans on (outputs
    poisoned before each), comparing every output's bits; (plans built, launches replayed).
    With plans on, a signature's first two launches record, the third checks the plan
    against the interpreter, the others replay."""
    args = [*inputs, *outputs, *scalars]
    for o in outputs:
        o[...] = 0
    pto.launch(kernel, *args, **kw)
    want = [o.copy() for o in outputs]
    built0, hits0 = _counts(kernel)
    for i in range(launches):
        for o in outputs:
            o.view(np.uint8)[...] = 0xA5
        pto.launch(kernel, *args, plans=True, **kw)
        for o, w in zip(outputs, want, strict=True):
            assert o.tobytes() == w.tobytes(), f"launch {i + 1} with plans: other bits"
    built, hits = _counts(kernel)
    return built - built0, hits - hits0


def _rng(seed: int = 0) -> np.random.Generator:
    return np.random.default_rng(seed)


# ---- the same bits --------------------------------------------------------------------------

def test_benchmark_vec_add_and_softmax() -> None:
    x, y = (_rng(k).standard_normal(64 * 4096, dtype=np.float32) for k in (1, 2))
    assert _both_ways(K.vec_add, [x, y], [np.zeros_like(x)], blocks=64) == (1, 2)
    xs = _rng(3).standard_normal(16 * K.SM_R * K.SM_C, dtype=np.float32)
    assert _both_ways(K.softmax, [xs], [np.zeros_like(xs)], blocks=16) == (1, 2)


@pytest.mark.parametrize("blocks", [1, 4])
def test_vec_add_rows_loop(blocks: int) -> None:
    n = 8 * 4096
    x, y = (_rng(k).standard_normal(n, dtype=np.float32) for k in (1, 2))
    z = np.zeros_like(x)
    assert _both_ways(K.vec_add_rows, [x, y], [z], blocks=blocks) == (1, 2)
    assert np.array_equal(z, x + y)
    # the Python loop's iterations are independent: one batch (blocks x iterations lanes)
    s = eager_plans.stats(K.vec_add_rows)
    assert s is not None and s.batched >= 1


def test_gemm_kernels() -> None:
    a = _rng(4).standard_normal((K.GM_N, K.GM_N)).astype(np.float16)
    b = _rng(5).standard_normal((K.GM_N, K.GM_N)).astype(np.float16)
    c = np.zeros((K.GM_N, K.GM_N), np.float32)
    assert _both_ways(K.gemm, [a, b], [c], blocks=K.GM_GRID * K.GM_GRID, launches=4) == (1, 1)
    # the scale.py GEMM on one block (a K-loop whose accumulator carries: not batched)
    a2, b2 = a[:128, :256].copy(), b[:256, :64].copy()
    c2 = np.zeros((128, 64), np.float32)
    assert _both_ways(S.gemm, [a2, b2], [c2], 128, 256, 64, 64, 64, 64,
                      blocks=2) == (1, 2)


def test_decode_chain_and_flash_attention() -> None:
    a = _rng(6).standard_normal((8, 16, 512)).astype(S.BF16)
    b = _rng(7).standard_normal((8, 512, 64)).astype(S.BF16)
    c = np.zeros((8, 16, 64), np.float32)
    assert _both_ways(S.chain, [a, b], [c]) == (1, 2)
    seq = 128
    q, k, v = (_rng(8 + i).standard_normal((seq, K.FA_D), dtype=np.float32) for i in range(3))
    nb = seq // K.FA_B
    out = np.zeros_like(q)
    scratch = [np.zeros(nb * K.FA_B * K.FA_B, np.float32),
               np.zeros(nb * K.FA_B * K.FA_B, np.float32),
               np.zeros(nb * K.FA_B * K.FA_D, np.float32)]
    # (the GM scratch is an output too: its bits are compared)
    assert _both_ways(K.flash_attention, [q, k, v], [out, *scratch], blocks=nb,
                      launches=4) == (1, 1)


def test_example_kernels() -> None:
    fs = _example("flash_softmax")
    s = _rng(9).standard_normal(4 * fs.ROWS * fs.BC, dtype=np.float32)
    for double in (False, True):
        assert _both_ways(fs.flash_softmax, [s], [np.zeros_like(s)], 4, double)[1] >= 2
    sm = _example("softmax")
    x = _rng(10).standard_normal((21, sm.COLS), dtype=np.float32)  # (a ragged last block)
    _both_ways(sm.softmax_kernel, [x], [np.zeros_like(x)], 21, blocks=sm.blocks_for(21))
    g = _example("gemm_int8")
    a, b, words, _scale, _offset = g.make_inputs()
    _both_ways(g.gemm_int8_kernel, [a, b, words], [np.zeros((g.M, g.N), np.int8)],
               blocks=(g.M // g.T) * (g.N // g.T), launches=4)
    tk = _example("topk")
    xt = tk.make_input(4)
    _both_ways(tk.topk_kernel, [xt], [np.zeros((4, tk.K), np.float32),
                                      np.zeros((4, tk.K), np.uint32)], blocks=4, launches=4)
    rr = _example("ragged_rowsum")  # (TPRINT's result is not an event: not planned)
    a_r = rr.make_input()
    out_r = np.zeros((rr.R, 1), np.int32)
    assert _both_ways(rr.ragged_rowsum_kernel, [a_r], [out_r], launches=2) == (0, 0)
    assert np.array_equal(out_r, rr.reference(a_r))
    va = _example("vec_add")
    xv, yv = va.make_inputs(4)
    assert _both_ways(va.vec_add_kernel, [xv, yv], [np.zeros_like(xv)], blocks=4,
                      mode="manual")[1] >= 2


@settings(max_examples=12, deadline=None)
@given(tiles=st.integers(1, 6), blocks=st.sampled_from([1, 2, 3]))
def test_vec_add_rows_shapes(tiles: int, blocks: int) -> None:
    n = tiles * blocks * K.VR_C
    x, y = (_rng(tiles + k).standard_normal(n, dtype=np.float32) for k in (0, 1))
    z = np.zeros_like(x)
    _both_ways(K.vec_add_rows, [x, y], [z], blocks=blocks, launches=4)
    assert np.array_equal(z, x + y)


_LC = 64  # (columns of the lockstep loop's 1-row tiles)


def _block_loop(kind: str, placed: bool = False) -> Callable[..., None]:
    """A fresh kernel (plans are kept per function object): block b adds its own bias row
    to its ``per`` rows of x, row by row in a Python loop, storing each sum to z (``"rows"``:
    row b * per + i; ``"one"``: every iteration to row b, overlapping writes) or
    accumulating it (``"carry"``: y = y + x, y starting as the bias), and stores the last
    y to row b of ``last`` after the loop. ``placed``: the tiles TASSIGNed (manual mode), x
    again in every iteration."""
    def kernel(x: np.ndarray, bias: np.ndarray, z: np.ndarray, last: np.ndarray,
               per: int) -> None:
        b = pto.get_block_idx()
        shape, stride = (1, 1, 1, 1, _LC), (x.size,) * 3 + (_LC, 1)
        tb, tx, ty = (Tile(TileType.Vec, np.float32, 1, _LC) for _ in range(3))
        if placed:
            for k, t in enumerate((tb, tx, ty)):
                pto.TASSIGN(t, 4 * _LC * k)
        pto.TLOAD(tb, GlobalTensor(bias, shape, stride, offset=b * _LC))
        if kind == "carry":
            pto.TLOAD(ty, GlobalTensor(bias, shape, stride, offset=b * _LC))
        for i in range(per):
            if placed:
                pto.TASSIGN(tx, 4 * _LC)
            pto.TLOAD(tx, GlobalTensor(x, shape, stride, offset=(b * per + i) * _LC))
            if kind == "carry":
                pto.TADD(ty, ty, tx)
            else:
                pto.TADD(ty, tx, tb)
            row = b if kind == "one" else b * per + i
            pto.TSTORE(GlobalTensor(z, shape, stride, offset=row * _LC), ty)
        pto.TSTORE(GlobalTensor(last, shape, stride, offset=b * _LC), ty)
    return kernel


@settings(max_examples=16, deadline=None)
@given(per=st.integers(2, 5), blocks=st.sampled_from([1, 2, 3, 5]),
       kind=st.sampled_from(["rows", "one", "carry"]))
@example(per=11, blocks=24, kind="rows")
def test_lockstep_loop_batches(per: int, blocks: int, kind: str) -> None:
    """A loop in every block of a lockstep launch runs as one batch over blocks x
    iterations (the bias, loaded per block before the loop, seen by each block's lanes;
    y after the loop, each block's last iteration's): numpy's sums, and the interpreter's
    bits with plans on. Overlapping writes (``"one"``) and a carried tile run as recorded."""
    rng = _rng(per * 7 + blocks)
    x = rng.standard_normal((blocks * per, _LC), dtype=np.float32)
    bias = rng.standard_normal((blocks, _LC), dtype=np.float32)
    z, last = np.zeros_like(bias if kind == "one" else x), np.zeros_like(bias)
    kernel = _block_loop(kind)
    assert _both_ways(kernel, [x, bias], [z, last], per, blocks=blocks) == (1, 2)
    xs = x.reshape(blocks, per, _LC)
    if kind == "carry":
        acc = bias.copy()
        for i in range(per):
            acc = acc + xs[:, i]
            if i == 0:
                first = acc
        assert np.array_equal(last, acc)
        assert np.array_equal(z.reshape(blocks, per, _LC)[:, 0], first)
        assert np.array_equal(z.reshape(blocks, per, _LC)[:, -1], acc)
    else:
        sums = xs + bias[:, None]
        assert np.array_equal(last, sums[:, -1])
        if kind == "rows":
            assert np.array_equal(z, sums.reshape(-1, _LC))
        else:
            assert np.array_equal(z, sums[:, -1])
    s = eager_plans.stats(kernel)
    assert s is not None
    if kind == "rows":
        assert s.batched == 1 and not s.why_loop, s
    else:
        assert s.batched == 0, s
        assert ("carries a value" if kind == "carry" else "GM bytes") in s.why_loop, s


@pytest.mark.parametrize("blocks", [1, 3])
def test_placed_tiles_loop_batches(blocks: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """The block loop with its tiles placed by hand (plan_loops.BATCH_PLACED on): one batch
    (in lockstep: blocks x iterations lanes, each its own copy of UB), numpy's sums and the
    interpreter's bits; y's bytes after the loop each block's last iteration's."""
    from ptoisa import plan_loops

    monkeypatch.setattr(plan_loops, "BATCH_PLACED", True)
    per = 4
    rng = _rng(blocks)
    x = rng.standard_normal((blocks * per, _LC), dtype=np.float32)
    bias = rng.standard_normal((blocks, _LC), dtype=np.float32)
    z, last = np.zeros_like(x), np.zeros_like(bias)
    kernel = _block_loop("rows", placed=True)
    assert _both_ways(kernel, [x, bias], [z, last], per, blocks=blocks,
                      mode="manual") == (1, 2)
    sums = x.reshape(blocks, per, _LC) + bias[:, None]
    assert np.array_equal(z, sums.reshape(-1, _LC))
    assert np.array_equal(last, sums[:, -1])
    s = eager_plans.stats(kernel)
    assert s is not None and s.batched == 1 and not s.why_loop, s


_PC = 64


def _poison_reader(x: np.ndarray, y: np.ndarray, a: np.ndarray, b: np.ndarray,
                   z: np.ndarray) -> None:
    """Reads storage no instruction of this launch wrote: ``u`` before it is loaded (a
    replay reusing the last launch's storage would store y, not poison, to ``a``) and ``p``
    never (stored to ``b``, and added into every iteration of the loop, one batch)."""
    n = x.size // _PC
    shape, stride = (1, 1, 1, 1, _PC), (x.size, x.size, x.size, _PC, 1)
    p, u, tx, tz = (Tile(TileType.Vec, np.float32, 1, _PC) for _ in range(4))
    pto.TSTORE(GlobalTensor(a, shape, stride, offset=0), u)
    pto.TLOAD(u, GlobalTensor(y, shape, stride, offset=0))
    pto.TSTORE(GlobalTensor(b, shape, stride, offset=0), p)
    for i in range(n):
        pto.TLOAD(tx, GlobalTensor(x, shape, stride, offset=i * _PC))
        pto.TADD(tz, tx, u)
        pto.TADD(tz, tz, p)
        pto.TSTORE(GlobalTensor(z, shape, stride, offset=i * _PC), tz)


@pytest.mark.parametrize("keep", [True, False])
def test_replays_after_replays_read_poison(keep: bool, monkeypatch: pytest.MonkeyPatch
                                           ) -> None:
    """Every launch starts from poisoned storage, replays too: a replay after a replay (the
    batch's lanes machine kept, plan_loops.KEEP_LANES, or reset) stores the poison where
    the kernel reads storage nothing wrote, and x + y + poison, with new inputs each launch,
    as the interpreter does; with KEEP_LANES the lanes machine is reset only by the first
    replay (the plan's check), not by the replays after it."""
    from ptoisa import memory, plan_loops

    monkeypatch.setattr(plan_loops, "KEEP_LANES", keep)
    resets = [0]
    reset = memory.Machine.reset_for_launch

    def counted(m: memory.Machine) -> None:
        resets[0] += m.lanes > 1
        reset(m)
    monkeypatch.setattr(memory.Machine, "reset_for_launch", counted)
    rng = _rng(11)
    x, y = np.zeros(4 * _PC, np.float32), np.zeros(_PC, np.float32)
    a, b, z = np.zeros(_PC, np.float32), np.zeros(_PC, np.float32), np.zeros_like(x)

    def kernel(*args: Any) -> None:  # (a kernel of this test's own: its plans fresh)
        _poison_reader(*args)
    counts = []
    for i in range(7):
        x[...] = rng.standard_normal(x.size, dtype=np.float32)
        y[...] = rng.standard_normal(y.size, dtype=np.float32)
        outs = [a, b, z]
        for o in outs:
            o.view(np.uint8)[...] = 0xA5
        pto.launch(kernel, x, y, a, b, z)
        want = [o.copy() for o in outs]
        for o in outs:
            o.view(np.uint8)[...] = 0x5A
        before = resets[0]
        pto.launch(kernel, x, y, a, b, z, plans=True)
        counts.append(resets[0] - before)
        for o, w in zip(outs, want, strict=True):
            assert o.tobytes() == w.tobytes(), f"launch {i + 1} with plans: other bits"
        poison = np.full(_PC * 4, memory.POISON_BYTE, np.uint8)
        assert a.view(np.uint8).tobytes() == poison.tobytes()
        assert b.view(np.uint8).tobytes() == poison.tobytes()
    s = eager_plans.stats(kernel)
    assert s is not None and s.batched == 1 and s.hits == 4, s
    # (launches 1-2 record, 3 checks the plan: its replay starts the lanes machine)
    assert counts == [0, 0, 1] + ([0] * 4 if keep else [1] * 4)


# ---- the copy-on-write fuzz's random programs ------------------------------------------------

def _fuzz() -> ModuleType:
    name = "cow_fuzz_for_eager_plans"
    mod = sys.modules.get(name)
    if mod is None:
        spec = importlib.util.spec_from_file_location(
            name, ROOT / "tests" / "test_copy_on_write_fuzz.py")
        assert spec is not None and spec.loader is not None
        mod = importlib.util.module_from_spec(spec)
        sys.modules[name] = mod
        spec.loader.exec_module(mod)
    return mod


_F = _fuzz()


def _fuzz_both_ways(kernel: Callable[..., Any], blocks: int = 1, **kw: Any) -> None:
    """Every array of the fuzz's kernels is read and written: each launch starts from the
    same fresh inputs (the same arrays for four launches, new ones for the fifth, as a guard
    must rebind them), and leaves the interpreter's bytes."""
    want = list(_F._inputs(blocks))
    pto.launch(kernel, *want, blocks=blocks, **kw)
    got = list(_F._inputs(blocks))
    for i in range(5):
        if i == 4:
            got = [a.copy() for a in got]
        for a, b in zip(got, _F._inputs(blocks), strict=True):
            a[...] = b
        pto.launch(kernel, *got, blocks=blocks, plans=True, **kw)
        for x, y in zip(got, want, strict=True):
            assert x.tobytes() == y.tobytes(), f"launch {i + 1} with plans: other bits"


@settings(max_examples=60, deadline=None)
@given(ops=_F._ops(), trips=st.integers(0, 3), lazy=st.sampled_from([None, 0]))
# found by this test: the acc tile's storage, first needed in a replay, was handed out where
# rv kept its storage from the record (the arena starts over every launch); and the repeated
# TSTOREs of acc at decreasing offsets, a batch over the 2-D argument itself as GM (flat[k:]
# took rows): an out-of-bounds strided view
@example(ops=[("sv_store", 0), ("pv_add", 1), ("matmul", False), ("rv_adds",),
              ("store_acc", 40), ("pv_add", 1), ("pv_store", 16), ("rv_adds",),
              ("replace_m", 1), ("store_acc", 40)], trips=0, lazy=None)
def test_fuzz_programs_same_bits(ops: list[tuple[Any, ...]], trips: int,
                                 lazy: int | None) -> None:
    """Random programs over overlapping GM regions (in a ``pto.range`` loop when ``trips``),
    tiles read lazily from the default size or at any size."""
    with _F._lazy_from(lazy):
        _fuzz_both_ways(_F._program(ops, trips=trips), target="a2a3")


@settings(max_examples=30, deadline=None)
@given(ops=_F._ops(), ub=st.lists(st.sampled_from(_F._UB), min_size=3, max_size=3),
       l1=st.lists(st.sampled_from(_F._L1), min_size=2, max_size=2))
def test_fuzz_placed_programs_same_bits(ops: list[tuple[Any, ...]], ub: list[int],
                                        l1: list[int]) -> None:
    """Manual mode, tiles placed over each other, every tile lazy."""
    with _F._lazy_from(0):
        _fuzz_both_ways(_F._program(ops, ub, l1), target="a2a3", mode="manual")


def test_fuzz_placed_programs_batched_same_bits() -> None:
    """The same with loops over placed tiles batched (plan_loops.BATCH_PLACED, on by
    default): each lane its own copy of the buffers, the proof in bytes."""
    from ptoisa import plan_loops

    saved, plan_loops.BATCH_PLACED = plan_loops.BATCH_PLACED, True
    try:
        test_fuzz_placed_programs_same_bits()
    finally:
        plan_loops.BATCH_PLACED = saved


@settings(max_examples=30, deadline=None)
@given(ops=_F._ops())
def test_fuzz_grid_programs_same_bits(ops: list[tuple[Any, ...]]) -> None:
    """Three blocks in lockstep, valid regions that differ by block."""
    _fuzz_both_ways(_F._program(ops, grid=True), blocks=_F.BLOCKS, target="a2a3")


# ---- what is not replayed -------------------------------------------------------------------

def _add_rows(rows: int) -> Callable[..., None]:
    """A fresh kernel (plans are kept per function object): z = x + y over rows x 64 f32."""
    def kernel(x: np.ndarray, y: np.ndarray, z: np.ndarray, scale: float = 1.0) -> None:
        shape, stride = (1, 1, 1, rows, 64), (x.size,) * 3 + (64, 1)
        tx, ty = Tile(TileType.Vec, np.float32, rows, 64), Tile(TileType.Vec, np.float32, rows, 64)
        pto.TLOAD(tx, GlobalTensor(x, shape, stride))
        pto.TLOAD(ty, GlobalTensor(y, shape, stride))
        pto.TADD(tx, tx, ty)
        pto.TMULS(tx, tx, np.float32(scale))
        pto.TSTORE(GlobalTensor(z, shape, stride), tx)
    return kernel


def _xyz(rows: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    x, y = (_rng(rows + k).standard_normal((rows, 64), dtype=np.float32) for k in (0, 1))
    return x, y, np.zeros_like(x)


def test_off_by_default() -> None:
    kernel = _add_rows(8)
    x, y, z = _xyz(8)
    for _ in range(3):
        pto.launch(kernel, x, y, z)
    assert eager_plans.stats(kernel) is None
    with pytest.raises(pto.PtoError, match="plans must be True or False"):
        pto.launch(kernel, x, y, z, plans="yes")


def test_guard_miss_replans() -> None:
    kernel = _add_rows(8)
    x, y, z = _xyz(8)
    for _ in range(4):
        pto.launch(kernel, x, y, z, 2.0, plans=True)
    s = eager_plans.stats(kernel)
    assert s is not None and (s.built, s.hits) == (1, 1)
    for _ in range(4):  # another scalar value: another signature, recorded and planned
        pto.launch(kernel, x, y, z, 3.0, plans=True)
        assert np.array_equal(z, (x + y) * np.float32(3.0))
    assert (s.built, s.hits) == (2, 2)
    x2, y2, z2 = (np.ascontiguousarray(np.vstack([a, a])) for a in (x, y, z))
    for _ in range(4):  # another shape: the kernel's tiles are 8 rows, the views too
        pto.launch(kernel, x2, y2, z2, 3.0, plans=True)
    assert (s.built, s.hits) == (3, 3)
    pto.launch(kernel, x, y, z, 2.0, plans=True)  # the first plan is kept
    assert np.array_equal(z, (x + y) * np.float32(2.0)) and s.hits == 4


def test_new_arrays_rebound() -> None:
    kernel = _add_rows(8)
    for i in range(5):
        x, y = (_rng(10 + 2 * i + k).standard_normal((8, 64), dtype=np.float32)
                for k in (0, 1))
        z = np.zeros((8, 64), np.float32)
        pto.launch(kernel, x, y, z, plans=True)
        assert np.array_equal(z, x + y)
    s = eager_plans.stats(kernel)
    assert s is not None and s.hits == 2


def test_data_read_into_python_is_not_planned() -> None:
    def kernel(x: np.ndarray, z: np.ndarray) -> None:
        shape, stride = (1, 1, 1, 8, 64), (x.size,) * 3 + (64, 1)
        t = Tile(TileType.Vec, np.float32, 8, 64)
        pto.TLOAD(t, GlobalTensor(x, shape, stride))
        if t.numpy()[0, 0] > 0:  # the next instruction depends on the data
            pto.TADDS(t, t, np.float32(1))
        pto.TSTORE(GlobalTensor(z, shape, stride), t)

    x, _y, z = _xyz(8)
    for sign in (1, 1, 1, -1, -1):
        xs = np.abs(x) * sign
        pto.launch(kernel, xs, z, plans=True)
        assert np.array_equal(z, xs + np.float32(1) if sign > 0 else xs)
    s = eager_plans.stats(kernel)
    assert s is not None and s.built == 0 and s.hits == 0
    assert "tile.numpy()" in s.why


def test_python_writes_into_a_tile_are_not_planned() -> None:
    def kernel(z: np.ndarray) -> None:
        t = Tile(TileType.Vec, np.float32, 8, 64)
        t.load_numpy(np.full((8, 64), 2, np.float32))
        pto.TSTORE(GlobalTensor(z, (1, 1, 1, 8, 64), (z.size,) * 3 + (64, 1)), t)

    z = np.zeros((8, 64), np.float32)
    for _ in range(4):
        z[...] = 0
        pto.launch(kernel, z, plans=True)
        assert (z == 2).all()
    s = eager_plans.stats(kernel)
    assert s is not None and s.hits == 0 and "tile.load_numpy()" in s.why


def test_global_the_kernel_reads() -> None:
    """The documented promise: the kernel's Python depends only on the signature. A global
    that changes between the two recorded launches refuses the plan; one that changes after
    the plan is made is not seen (plans=True is the user's word that it does not)."""
    state = {"scale": 1.0}

    def kernel(x: np.ndarray, y: np.ndarray, z: np.ndarray) -> None:
        _add_rows(8)(x, y, z, state["scale"])

    x, y, z = _xyz(8)
    for k in range(4):  # a counter: every launch differs
        state["scale"] = float(k + 1)
        pto.launch(kernel, x, y, z, plans=True)
        assert np.array_equal(z, (x + y) * np.float32(k + 1))
    s = eager_plans.stats(kernel)
    assert s is not None and s.hits == 0 and "differ between two launches" in s.why

    def kernel2(x: np.ndarray, y: np.ndarray, z: np.ndarray) -> None:
        _add_rows(8)(x, y, z, state["scale"])

    state["scale"] = 2.0
    for _ in range(4):
        pto.launch(kernel2, x, y, z, plans=True)
    state["scale"] = 5.0
    pto.launch(kernel2, x, y, z, plans=True)  # replayed: the recorded scale
    assert np.array_equal(z, (x + y) * np.float32(2.0))
    pto.launch(kernel2, x, y, z)  # without plans the kernel's Python runs
    assert np.array_equal(z, (x + y) * np.float32(5.0))


def test_registers_returned_to_python_are_not_planned() -> None:
    from ptoisa.vector.regs import Mask, VReg

    def kernel(x: np.ndarray, z: np.ndarray) -> None:
        r = pto.v.vadd(VReg(x), VReg(x), Mask(np.ones(256, np.bool_), "b32"))
        z[...] = r.data  # (the register's lanes are the kernel's Python values)

    x = _rng(0).standard_normal(64, dtype=np.float32)
    z = np.zeros_like(x)
    for _ in range(4):
        pto.launch(kernel, x, z, target="a5", plans=True)
        assert np.array_equal(z, x + x)
    s = eager_plans.stats(kernel)
    assert s is not None and s.hits == 0 and "VADD returns" in s.why


def test_gm_array_outside_the_arguments_is_not_planned() -> None:
    own = np.zeros((8, 64), np.float32)

    def kernel(x: np.ndarray) -> None:
        shape, stride = (1, 1, 1, 8, 64), (x.size,) * 3 + (64, 1)
        t = Tile(TileType.Vec, np.float32, 8, 64)
        pto.TLOAD(t, GlobalTensor(x, shape, stride))
        pto.TSTORE(GlobalTensor(own, shape, stride), t)

    x = _xyz(8)[0]
    for _ in range(3):
        pto.launch(kernel, x, plans=True)
    s = eager_plans.stats(kernel)
    assert s is not None and s.hits == 0 and "not an argument" in s.why
    assert np.array_equal(own, x)


def test_block_dependent_control_flow_is_not_planned() -> None:
    def kernel(x: np.ndarray, z: np.ndarray) -> None:
        b = pto.get_block_idx()
        shape, stride = (1, 1, 1, 8, 64), (x.size,) * 3 + (64, 1)
        t = Tile(TileType.Vec, np.float32, 8, 64)
        pto.TLOAD(t, GlobalTensor(x, shape, stride, offset=b * 512))
        if b == 1:
            pto.TADDS(t, t, np.float32(1))
        pto.TSTORE(GlobalTensor(z, shape, stride, offset=b * 512), t)

    x = _rng(0).standard_normal((16, 64), dtype=np.float32)
    z = np.zeros_like(x)
    want = x.copy()
    want[8:] += np.float32(1)
    for _ in range(4):
        pto.launch(kernel, x, z, blocks=2, plans=True)
        assert np.array_equal(z, want)
    s = eager_plans.stats(kernel)
    assert s is not None and s.hits == 0


def test_observed_launch_is_interpreted() -> None:
    kernel = _add_rows(8)
    x, y, z = _xyz(8)
    for _ in range(4):
        pto.launch(kernel, x, y, z, plans=True)
    s = eager_plans.stats(kernel)
    assert s is not None and s.hits == 1
    seen: list[str] = []
    with observing(lambda rec: seen.append(rec.ins.name)):
        pto.launch(kernel, x, y, z, plans=True)
    assert seen == ["TLOAD", "TLOAD", "TADD", "TMULS", "TSTORE"] and s.hits == 1
    assert s.why == "the launch is observed"
    report = pto.launch(kernel, x, y, z, plans=True, cycles=True)
    assert report is not None and s.hits == 1


def test_overlapping_arguments_are_not_planned() -> None:
    kernel = _add_rows(8)
    x, y, _z = _xyz(8)
    for _ in range(3):
        pto.launch(kernel, x, y, x, plans=True)  # z is x
    s = eager_plans.stats(kernel)
    assert s is not None and s.hits == 0 and s.why == "array arguments overlap"


def _rows_in_place() -> Callable[..., None]:
    """A fresh kernel: z += y in 1 x 4096 rows, a row per iteration (TSTORE writes the GM
    row that a tile of its own iteration still reads in place)."""
    def kernel(y: np.ndarray, z: np.ndarray) -> None:
        shape, stride = (1, 1, 1, 1, K.VR_C), (z.size,) * 3 + (K.VR_C, 1)
        ty, tz, ts = (Tile(TileType.Vec, np.float32, 1, K.VR_C) for _ in range(3))
        for i in range(z.size // K.VR_C):
            pto.TLOAD(tz, GlobalTensor(z, shape, stride, offset=i * K.VR_C))
            pto.TLOAD(ty, GlobalTensor(y, shape, stride, offset=i * K.VR_C))
            pto.TADD(ts, tz, ty)
            pto.TSTORE(GlobalTensor(z, shape, stride, offset=i * K.VR_C), ts)
    return kernel


@pytest.mark.parametrize("blocks", [1, 2])
def test_planned_windows_follow_the_arrays(blocks: int) -> None:
    """Replays of a batched loop alternating between two sets of arrays of one signature,
    their contents changed in place between launches, give numpy's sums every time (a
    replay's GM windows, however long it keeps them, follow the arrays bound and see their
    contents); so does a store to the GM a tile of its iteration still reads in place
    (z += y)."""
    n = 8 * K.VR_C
    sets = [[_rng(30 + 3 * i + k).standard_normal(n, dtype=np.float32) for k in range(3)]
            for i in range(2)]
    s0 = eager_plans.stats(K.vec_add_rows)
    hits0 = 0 if s0 is None else s0.hits
    for i in range(8):
        x, y, z = sets[i % 2]
        x += np.float32(1.0)  # (new contents, the same arrays)
        z.view(np.uint8)[...] = 0xA5
        pto.launch(K.vec_add_rows, x, y, z, blocks=blocks, plans=True)
        assert np.array_equal(z, x + y), f"launch {i + 1}"
    s = eager_plans.stats(K.vec_add_rows)
    assert s is not None and s.hits - hits0 >= 4
    kernel = _rows_in_place()
    for i in range(6):
        y, z = sets[i % 2][1], sets[i % 2][2]
        want = z + y
        pto.launch(kernel, y, z, plans=True)
        assert np.array_equal(z, want), f"in place, launch {i + 1}"
    s = eager_plans.stats(kernel)
    assert s is not None and s.hits >= 2 and s.batched >= 1


@pytest.mark.parametrize("valid_rows", [4, 2])
def test_tadd_large_tiles_whole_or_partial(valid_rows: int) -> None:
    """TADD of 4 x 4096 f32 tiles in a 1-block plan (large enough to defer its sum: its
    planned form), dst valid over all its rows or over 2 of them (the planned form gives the
    use to the general call): numpy's sums, replay after replay."""
    c = K.VR_C

    def kernel(x: np.ndarray, y: np.ndarray, z: np.ndarray) -> None:
        src = ((1, 1, 1, 4, c), (x.size,) * 3 + (c, 1))
        tx, ty = Tile(TileType.Vec, np.float32, 4, c), Tile(TileType.Vec, np.float32, 4, c)
        tz = Tile(TileType.Vec, np.float32, 4, c, valid=(valid_rows, c))
        pto.TLOAD(tx, GlobalTensor(x, *src))
        pto.TLOAD(ty, GlobalTensor(y, *src))
        pto.TADD(tz, tx, ty)
        pto.TSTORE(GlobalTensor(z, (1, 1, 1, valid_rows, c), (z.size,) * 3 + (c, 1)), tz)

    x, y = (_rng(40 + k).standard_normal((4, c), dtype=np.float32) for k in (0, 1))
    z = np.zeros((valid_rows, c), np.float32)
    assert _both_ways(kernel, [x, y], [z]) == (1, 2)
    assert np.array_equal(z, x[:valid_rows] + y[:valid_rows])


def test_guards_after_a_replay_of_the_same_arrays() -> None:
    """After replays of the same array objects (the guard's shortcut: contiguity and overlap
    not checked again), overlapping arguments of the same signature still run interpreted,
    and an argument reshaped in place is another signature."""
    kernel = _add_rows(8)
    x, y, z = _xyz(8)
    for _ in range(5):
        pto.launch(kernel, x, y, z, plans=True)
    s = eager_plans.stats(kernel)
    assert s is not None and (s.built, s.hits) == (1, 2)
    pto.launch(kernel, x, y, x, plans=True)  # z is x
    assert s.hits == 2 and s.why == "array arguments overlap"
    pto.launch(kernel, x, y, z, plans=True)
    assert s.hits == 3 and np.array_equal(z, x + y)
    shape = z.shape
    z.shape = (z.size,)  # (the same object, the same memory: another shape)
    pto.launch(kernel, x, y, z, plans=True)
    assert s.hits == 3
    z.shape = shape
    pto.launch(kernel, x, y, z, plans=True)
    assert s.hits == 4 and np.array_equal(z, x + y)


def test_python_writing_an_argument_is_caught_by_the_check() -> None:
    """The kernel zeroes its output itself, then accumulates into it with an atomic store: a
    replay would skip the zeroing. The new plan's check (interpreted, then replayed from the
    same bytes) sees other bytes and refuses it."""
    def kernel(x: np.ndarray, z: np.ndarray) -> None:
        z[...] = 0  # (Python touching memory outside the intrinsics: not replayed)
        shape, stride = (1, 1, 1, 8, 64), (x.size,) * 3 + (64, 1)
        t = Tile(TileType.Vec, np.float32, 8, 64)
        pto.TLOAD(t, GlobalTensor(x, shape, stride))
        pto.TSTORE(GlobalTensor(z, shape, stride), t, atomicType=pto.AtomicType.AtomicAdd)

    x = _xyz(8)[0]
    z = np.zeros_like(x)
    for _ in range(5):
        pto.launch(kernel, x, z, plans=True)
        assert np.array_equal(z, x)
    s = eager_plans.stats(kernel)
    assert s is not None and s.hits == 0 and "other bytes than the interpreter" in s.why


def test_a_launch_inside_the_kernel_is_not_planned() -> None:
    inner = _add_rows(8)

    def kernel(x: np.ndarray, y: np.ndarray, z: np.ndarray) -> None:
        pto.launch(inner, x, y, z)  # (on machines of its own: the record would not see it)

    x, y, z = _xyz(8)
    for _ in range(4):
        z[...] = 0
        pto.launch(kernel, x, y, z, plans=True)
        assert np.array_equal(z, x + y)
    s = eager_plans.stats(kernel)
    assert s is not None and s.hits == 0 and "pto.launch inside the kernel" in s.why


# ---- pto.launch's short path (grid._replayed, eager_plans.repeated) -------------------------

def _vec_add_kernel() -> Callable[..., None]:
    """A fresh kernel (plans are kept per function object): scale.py's vec-add, one 64x64
    tile a block."""
    def kernel(x: np.ndarray, y: np.ndarray, z: np.ndarray) -> None:
        S.vec_add(x, y, z)
    return kernel


def _short_path_counted(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """[launches the general path ran (grid.run_blocks), launches the short path replayed]."""
    from ptoisa import grid

    n = [0, 0]
    general, short = grid.run_blocks, grid._replayed

    def counted(*a: Any, **k: Any) -> Any:
        n[0] += 1
        return general(*a, **k)

    def counted_short(*a: Any, **k: Any) -> bool:
        hit = short(*a, **k)
        n[1] += hit
        return hit
    monkeypatch.setattr(grid, "run_blocks", counted)
    monkeypatch.setattr(grid, "_replayed", counted_short)
    # (launch machines of their own: another test's many would evict this one's)
    monkeypatch.setattr(grid, "_MACHINES", {})
    return n


@pytest.mark.parametrize("blocks", [1, 4])
def test_short_path_replays_the_last_launch(blocks: int, monkeypatch: pytest.MonkeyPatch
                                            ) -> None:
    """After the general path's first replay, launches of that kernel with the same argument,
    settings and machine objects take the short path: the general launcher is not called,
    the bits are the interpreter's (outputs poisoned before each launch, inputs changed in
    place), the plan's hits counted, numpy's error state and the machine stack as before."""
    kernel = _vec_add_kernel()
    x, y = (_rng(50 + k).standard_normal(blocks * 4096, dtype=np.float32) for k in (0, 1))
    z = np.zeros_like(x)
    n = _short_path_counted(monkeypatch)
    for _ in range(4):  # two records, the checked launch, the first replay
        pto.launch(kernel, x, y, z, blocks=blocks, plans=True)
    s = eager_plans.stats(kernel)
    assert s is not None and (s.built, s.hits) == (1, 1) and n == [4, 0]
    from ptoisa import memory

    stack = list(memory._stack)
    state = np.geterr()
    for i in range(5):
        x += np.float32(i)
        z.view(np.uint8)[...] = 0xA5
        pto.launch(kernel, x, y, z, blocks=blocks, plans=True)
        assert np.array_equal(z, x + y), f"launch {i + 1}"
    assert n == [4, 5] and s.hits == 6
    assert list(memory._stack) == stack and np.geterr() == state


def test_short_path_misses_take_the_general_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each guard of the short path missed once: the launch goes to the general path, which
    gives the interpreter's bits (or its error), and the next same launch is short again."""
    from ptoisa import grid

    kernel = _vec_add_kernel()
    blocks = 4
    x, y = (_rng(60 + k).standard_normal(blocks * 4096, dtype=np.float32) for k in (0, 1))
    z = np.zeros_like(x)
    n = _short_path_counted(monkeypatch)
    for _ in range(5):
        pto.launch(kernel, x, y, z, blocks=blocks, plans=True)
    s = eager_plans.stats(kernel)
    assert s is not None and n == [4, 1] and s.hits == 2

    def again(general: int, **kw: Any) -> None:
        z.view(np.uint8)[...] = 0xA5
        before = list(n)
        pto.launch(kernel, x, y, z, **{"blocks": blocks, "plans": True, **kw})
        assert np.array_equal(z, x.reshape(-1) + y)
        assert n[0] - before[0] == general and n[1] - before[1] == 1 - general, kw

    def back() -> None:  # (a miss that replaced the last replay: one general launch)
        again(1)
        again(0)

    again(1, lockstep=False)  # (one by one: interpreted)
    assert s.why == "blocks run one by one"
    again(0)
    again(1, target="cpu")  # (another machine: recorded for it)
    back()
    again(1, matmul_accumulation="exact")  # (another setting's object: another signature)
    back()
    grid._MACHINES.clear()  # (the machine the plan ran on is no longer the launch's)
    built = s.built
    for _ in range(4):  # (recorded and planned on the new machine)
        again(1)
    assert s.built == built + 1
    again(0)
    x.shape = (blocks, 4096)  # (the same object, another shape: another signature)
    again(1)
    x.shape = (blocks * 4096,)
    back()
    z2 = z.reshape(blocks, 4096)  # (another array object, the same memory)
    before = list(n)
    pto.launch(kernel, x, y, z2, blocks=blocks, plans=True)
    assert n[0] == before[0] + 1 and n[1] == before[1]
    short = n[1]
    for bad in (np.int64(blocks), True):
        with pytest.raises(pto.PtoError, match="blocks must be a positive integer"):
            pto.launch(kernel, x, y, z, blocks=bad, plans=True)
    with pytest.raises(pto.PtoError, match="lockstep must be"):
        pto.launch(kernel, x, y, z, blocks=blocks, lockstep="yes", plans=True)
    with pytest.raises(pto.PtoError, match="unknown target"):
        pto.launch(kernel, x, y, z, blocks=blocks, target="a9", plans=True)
    assert n[1] == short


def test_short_path_leaves_observed_launches_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    """An observed launch (an observing block, the sanitizer, the cycle model) after replays
    is not short-circuited: the observers see every instruction, and it runs interpreted."""
    from ptoisa.sanitizer import Sanitizer

    kernel = _vec_add_kernel()
    x, y = (_rng(70 + k).standard_normal(2 * 4096, dtype=np.float32) for k in (0, 1))
    z = np.zeros_like(x)
    n = _short_path_counted(monkeypatch)
    for _ in range(5):
        pto.launch(kernel, x, y, z, blocks=2, plans=True)
    s = eager_plans.stats(kernel)
    assert s is not None and n[1] == 1
    seen: list[str] = []
    z[...] = 0
    with observing(lambda rec: seen.append(rec.ins.name)):
        pto.launch(kernel, x, y, z, blocks=2, plans=True)
    assert seen == ["TLOAD", "TLOAD", "TADD", "TSTORE"] and n[1] == 1
    assert np.array_equal(z, x + y) and s.why == "the launch is observed"
    report = pto.launch(kernel, x, y, z, blocks=2, plans=True, cycles=True)
    assert report is not None and n[1] == 1
    san = Sanitizer()
    assert pto.launch(kernel, x, y, z, blocks=2, plans=True, sanitize=san) is not None
    assert n[1] == 1
    pto.launch(kernel, x, y, z, blocks=2, plans=True)
    assert n[1] == 2


# ---- planned forms of a GEMM's boxed loads and Acc stores -----------------------------------

def _gemm_rows(rows: int) -> Callable[..., None]:
    """A fresh kernel: scale.py's GEMM on 64 x 64 x 64 tiles, each block's A panel, left
    tile and accumulator valid over its first ``rows`` rows (64: whole tiles, the planned
    forms' use; fewer: partial tiles, which they leave to the general call), C's blocks
    ``rows`` rows apart."""
    t = 64

    def kernel(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> None:
        dt, n = a.dtype, b.shape[1]
        k = a.shape[1]
        blk = pto.get_block_idx()
        bi, bj = blk // (n // t), blk % (n // t)
        ta = Tile(TileType.Mat, dt, t, t, pto.BLayout.ColMajor, (rows, t), pto.SLayout.RowMajor)
        tb = Tile(TileType.Mat, dt, t, t, pto.BLayout.ColMajor, None, pto.SLayout.RowMajor)
        left, right = pto.TileLeft(dt, t, t, (rows, t)), pto.TileRight(dt, t, t)
        acc = pto.TileAcc(np.float32, t, t, (rows, t))
        for s in range(k // t):
            pto.TLOAD(ta, GlobalTensor(a, (1, 1, 1, rows, t), (a.size,) * 3 + (k, 1),
                                       offset=bi * rows * k + s * t))
            pto.TLOAD(tb, GlobalTensor(b, (1, 1, 1, t, t), (b.size,) * 3 + (n, 1),
                                       offset=s * t * n + bj * t))
            pto.TMOV(left, ta)
            pto.TMOV(right, tb)
            if s == 0:
                pto.TMATMUL(acc, left, right)
            else:
                pto.TMATMUL_ACC(acc, acc, left, right)
        pto.TSTORE(GlobalTensor(c, (1, 1, 1, rows, t), (c.size,) * 3 + (n, 1),
                                offset=bi * rows * n + bj * t), acc)
    return kernel


@pytest.mark.parametrize("rows", [64, 48])
@pytest.mark.parametrize("blocks", [1, 4])
@pytest.mark.parametrize("dtype", [np.float16, S.BF16])
def test_gemm_boxed_loads_and_acc_stores_planned(rows: int, blocks: int, dtype: Any) -> None:
    """A GEMM's boxed panel loads (in place: a window, or lane blocks at uneven offsets) and
    Acc stores (a window, or a grid of blocks), planned (whole tiles) or given to the general
    call (partial ones, every replay), on one block and four in lockstep: the interpreter's
    bits on every replay, with two sets of arrays alternating (the kept windows follow the
    arrays bound) and the inputs changed in place."""
    g = 2 if blocks == 4 else 1
    kernel = _gemm_rows(rows)
    sets = []
    for i in range(2):
        a = _rng(80 + 2 * i).standard_normal((g * rows, 128)).astype(dtype)
        b = _rng(81 + 2 * i).standard_normal((128, g * 64)).astype(dtype)
        sets.append((a, b, np.zeros((g * rows, g * 64), np.float32)))
    assert _both_ways(kernel, list(sets[0][:2]), [sets[0][2]], blocks=blocks) == (1, 2)
    for i in range(6):
        a, b, c = sets[i % 2]
        a[0, i] += dtype(1.0)
        pto.launch(kernel, a, b, c, blocks=blocks)
        want = c.copy()
        c.view(np.uint8)[...] = 0xA5
        pto.launch(kernel, a, b, c, blocks=blocks, plans=True)
        assert c.tobytes() == want.tobytes(), f"launch {i + 1}"
    s = eager_plans.stats(kernel)
    assert s is not None and s.hits >= 6


def test_lane_grid_answer_kept_only_for_read_only_lane_maps() -> None:
    """TMATMUL's lane grid (matmul._grid_of): a read-only lane map's answer is kept (asked
    again, the same answer); a writable one is asked every time, so a map changed in place
    gets the answer of its new values."""
    from ptoisa.isa.matrix import matmul

    ia, ib = np.array([0, 0, 1, 1]), np.array([0, 1, 0, 1])
    assert matmul._grid_of(ia, ib, 2, 2) == "ij"
    ia[...], ib[...] = [0, 1, 0, 1], [0, 0, 1, 1]
    assert matmul._grid_of(ia, ib, 2, 2) == "ji"
    ia[...] = [1, 0, 0, 1]
    assert matmul._grid_of(ia, ib, 2, 2) is None
    ra, rb = np.array([0, 0, 1, 1]), np.array([0, 1, 0, 1])
    ra.flags.writeable = rb.flags.writeable = False
    assert matmul._grid_of(ra, rb, 2, 2) == "ij" and matmul._grid_of(ra, rb, 2, 2) == "ij"
    assert matmul._grid_of(rb, ra, 2, 2) == "ji"

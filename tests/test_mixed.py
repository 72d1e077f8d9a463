"""Mixed cube + vector launches in Python: the AIC and the two AIVs of a cluster as interleaved
streams joined by TPUSH / TPOP pipes, cross-core flags and SYNCALL.

References are numpy slicing of the pushed data (the split rules of the TPUSH / TPOP pages:
TILE_UP_DOWN gives sub-block k rows [k h/2, (k+1) h/2), TILE_LEFT_RIGHT columns likewise) and
event orders written from the FIFO rule (a producer blocks only when all SlotNum slots are in
use).
"""

from __future__ import annotations

import inspect
import io
import threading

import numpy as np
import pytest

import ptoisa as pto
from ptoisa import Direction, GlobalTensor, Tile, TPipe
from ptoisa.concurrent.streams import DeadlockError

RNG = np.random.default_rng(11)
R, C = 16, 32


def _gm(arr: np.ndarray, rows: int, cols: int, offset: object = 0) -> GlobalTensor:
    n = arr.size
    return GlobalTensor(arr, (1, 1, 1, rows, cols), (n, n, n, arr.shape[-1], 1), offset=offset)


def _halves(x: np.ndarray, split: int) -> list[np.ndarray]:
    if split == 1:
        return [x[: x.shape[0] // 2], x[x.shape[0] // 2:]]
    return [x[:, : x.shape[1] // 2], x[:, x.shape[1] // 2:]]


SPLITS = {0: "TILE_NO_SPLIT", 1: "TILE_UP_DOWN", 2: "TILE_LEFT_RIGHT"}


@pytest.mark.parametrize("split", [1, 2])
@pytest.mark.parametrize("target", ["a2a3", "a5"])
def test_c2v_split_halves_reach_each_sub_block(split, target):
    x = RNG.standard_normal((R, C)).astype(np.float32)
    got = [np.zeros((R // 2, C) if split == 1 else (R, C // 2), np.float32) for _ in range(2)]
    pipe = TPipe(0, Direction.DIR_C2V, R * C * 4, 8)

    def cube(x, got):
        t = Tile("Mat", "f32", R, C)
        pto.TLOAD(t, _gm(x, R, C))
        pto.TPUSH(pipe, t, Split=SPLITS[split])

    def vector(x, got):
        mine = got[pto.get_subblock_idx()]
        h = Tile("Vec", "f32", *mine.shape)
        pto.TPOP(pipe, h, Split=SPLITS[split])
        pto.TFREE(pipe, Split=SPLITS[split])
        pto.TSTORE(_gm(mine, *mine.shape), h)

    pto.launch_mixed(cube, vector, x, got, target=target)
    for k, want in enumerate(_halves(x, split)):
        np.testing.assert_array_equal(got[k], want)


@pytest.mark.parametrize("no_split_pipe", [False, True])
def test_c2v_no_split_whole_tile(no_split_pipe):
    # split 0: on a plain pipe only AIV0 takes part; on an IsNoSplit pipe both get the tile
    x = RNG.standard_normal((R, C)).astype(np.float32)
    got = np.zeros((2, R, C), np.float32)
    pipe = TPipe(3, Direction.DIR_C2V, R * C * 4, 8, 8, no_split_pipe)

    def kernel(x, got):
        if pto.core_type() == "AIC":
            t = Tile("Acc", "f32", R, C)
            t.write(x)
            pto.TPUSH(pipe, t)
        else:
            sb = pto.get_subblock_idx()
            h = Tile("Vec", "f32", R, C)
            pto.TPOP(pipe, h)
            pto.TFREE(pipe)
            pto.TSTORE(_gm(got, R, C, sb * R * C), h)

    pto.launch(kernel, x, got, target="a2a3", mixed=True)
    np.testing.assert_array_equal(got[0], x)
    if no_split_pipe:
        np.testing.assert_array_equal(got[1], x)
    else:  # AIV1 popped nothing: its tile holds the poison pattern (NaN for f32)
        assert np.isnan(got[1]).all()


@pytest.mark.parametrize("split", [0, 1, 2])
def test_v2c_halves_join_in_one_slot(split):
    # each AIV pushes its half (split 0: AIV0 alone pushes the whole tile); the cube pops it
    x = RNG.standard_normal((R, C)).astype(np.float32)
    out = np.zeros((R, C), np.float32)
    pipe = TPipe(1, Direction.DIR_V2C, R * C * 4, 8)

    def cube(x, out):
        t = Tile("Mat", "f32", R, C)
        pto.TPOP(pipe, t, Split=SPLITS[split])
        pto.TFREE(pipe, Split=SPLITS[split])
        acc = Tile("Vec", "f32", R, C)  # read back through a Vec tile of the same values
        acc.write(t.numpy())
        pto.TSTORE(_gm(out, R, C), acc)

    def vector(x, out):
        sb = pto.get_subblock_idx()
        part = x if split == 0 else _halves(x, split)[sb]
        h = Tile("Vec", "f32", *part.shape)
        h.write(part)
        pto.TPUSH(pipe, h, Split=SPLITS[split])

    pto.launch_mixed(cube, vector, x, out, target="a2a3")
    np.testing.assert_array_equal(out, x)


def test_acc_to_vec_conversion_on_push():
    # an f32 Acc tile popped into an f16 Vec tile: the fix-pipe rounds to f16
    x = (RNG.standard_normal((R, C)) * 100).astype(np.float32)
    out = np.zeros((R, C), np.float16)
    pipe = TPipe(2, Direction.DIR_C2V, R * C * 4, 8)

    def cube(x, out):
        acc = Tile("Acc", "f32", R, C)
        acc.write(x)
        pto.TPUSH(pipe, acc)

    def vector(x, out):
        if pto.get_subblock_idx() == 0:
            h = Tile("Vec", "f16", R, C)
            pto.TPOP(pipe, h)
            pto.TSTORE(_gm(out, R, C), h)

    pto.launch_mixed(cube, vector, x, out, target="a2a3")
    np.testing.assert_array_equal(out, x.astype(np.float16))


@pytest.mark.parametrize("depth", [2, 4])
def test_fifo_depth_lets_the_producer_run_ahead(depth):
    # the cube pushes 4 tiles; it blocks only when all `depth` slots are in use
    log: list[str] = []
    got: list[float] = []
    pipe = TPipe(0, Direction.DIR_C2V, 8 * 16 * 4, depth)

    def cube():
        t = Tile("Acc", "f32", 8, 16)
        for k in range(4):
            t.write(np.full((8, 16), k, np.float32))
            pto.TPUSH(pipe, t)
            log.append(f"push{k}")

    def vector():
        if pto.get_subblock_idx():
            return
        h = Tile("Vec", "f32", 8, 16)
        for _ in range(4):
            pto.TPOP(pipe, h)
            got.append(float(h.numpy()[0, 0]))
            log.append(f"pop{int(got[-1])}")
            pto.TFREE(pipe)

    pto.launch_mixed(cube, vector, target="a2a3")
    assert got == [0, 1, 2, 3]
    if depth == 4:  # all four pushes before the first pop
        assert log == ["push0", "push1", "push2", "push3", "pop0", "pop1", "pop2", "pop3"]
    else:  # two ahead, then the cube waits for a free slot
        assert log[:3] == ["push0", "push1", "pop0"]
        assert log.index("push2") > log.index("pop0")
        assert log.index("push3") > log.index("pop1")


def _line_of(fn, text: str) -> int:
    src, first = inspect.getsourcelines(fn)
    return first + next(i for i, s in enumerate(src) if text in s)


def test_deadlock_names_each_blocked_pop_and_leaves_no_thread():
    c2v = TPipe(0, Direction.DIR_C2V, 4096, 8)
    v2c = TPipe(1, Direction.DIR_V2C, 4096, 8)

    def cube():
        pto.TPOP(v2c, Tile("Mat", "f32", 16, 16))  # nothing is ever pushed V2C

    def vector():
        pto.TPOP(c2v, Tile("Vec", "f32", 8, 16), Split="TILE_UP_DOWN")  # nor C2V

    before = threading.active_count()
    with pytest.raises(DeadlockError) as ei:
        pto.launch_mixed(cube, vector, target="a2a3", blocks=2)
    msg = str(ei.value)
    f = __file__
    assert f"AIC blocked in tpop at {f}:{_line_of(cube, 'TPOP')}" in msg
    assert f"AIV0 blocked in tpop at {f}:{_line_of(vector, 'TPOP')}" in msg
    assert f"AIV1 blocked in tpop at {f}:{_line_of(vector, 'TPOP')}" in msg
    assert threading.active_count() == before


def test_error_in_one_stream_names_it():
    def cube():
        pass

    def vector():
        if pto.get_subblock_idx() == 1:
            pto.TADD(Tile("Vec", "f32", 8, 16), Tile("Vec", "f32", 8, 16),
                     Tile("Vec", "f16", 8, 16))

    before = threading.active_count()
    with pytest.raises(pto.PtoError, match="tadd on AIV1"):
        pto.launch_mixed(cube, vector, target="a2a3")
    with pytest.raises(ZeroDivisionError) as ei:
        pto.launch_mixed(lambda: 1 // 0, lambda: None, target="a2a3")
    assert any("AIC stream" in n for n in ei.value.__notes__)
    assert threading.active_count() == before


def test_machine_per_core_and_identity():
    seen = {}

    def kernel():
        m = pto.current()
        seen[m.core] = (id(m), m.lanes, pto.get_subblock_idx(), pto.get_subblock_num())

    pto.launch(kernel, target="a2a3", mixed=True, blocks=3)
    assert set(seen) == {("AIC", (0, 1, 2)), ("AIV", (0, 1, 2), 0), ("AIV", (0, 1, 2), 1)}
    assert len({v[0] for v in seen.values()}) == 3  # three machines
    assert {v[1] for v in seen.values()} == {3}  # lockstep: each covers the 3 blocks
    assert seen[("AIV", (0, 1, 2), 1)][2:] == (1, 2)
    seen.clear()
    pto.launch(kernel, target="a2a3", mixed=True, blocks=2, lockstep=False)
    assert ("AIV", 1, 0) in seen and ("AIC", 0) in seen
    assert getattr(pto.current(), "core", None) is None  # the main thread's machine is intact


def _split_kernel(x, out):
    """Cube: block b's tile, pushed by rows; vectors: their rows * 2, stored at block b."""
    pipe = TPipe(0, Direction.DIR_C2V, R * C * 4, 4)
    b = pto.get_block_idx()
    if pto.core_type() == "AIC":
        t = Tile("Mat", "f32", R, C)
        pto.TLOAD(t, _gm(x, R, C, b * R * C))
        pto.TPUSH(pipe, t, Split="TILE_UP_DOWN")
    else:
        sb = pto.get_subblock_idx()
        h = Tile("Vec", "f32", R // 2, C)
        pto.TPOP(pipe, h, Split="TILE_UP_DOWN")
        pto.TFREE(pipe, Split="TILE_UP_DOWN")
        pto.TMULS(h, h, np.float32(2.0))
        pto.TSTORE(_gm(out, R // 2, C, b * R * C + sb * (R // 2) * C), h)


def test_lockstep_over_blocks_equals_block_by_block():
    x = RNG.standard_normal((5, R, C)).astype(np.float32)
    a, b = np.zeros_like(x), np.zeros_like(x)
    pto.launch(_split_kernel, x, a, target="a2a3", mixed=True, blocks=5, lockstep=True)
    pto.launch(_split_kernel, x, b, target="a2a3", mixed=True, blocks=5, lockstep=False)
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(a, x * 2)


def test_cross_core_flags_a2a3_mode2():
    # AIC waits for both AIVs (mode 2), then signals both
    log: list[str] = []

    def cube():
        pto.SYNC_WAIT(pto.Pipe.MTE2, 3)
        log.append("cube")
        pto.SYNC_SET(pto.Pipe.FIX, 4)

    def vector():
        sb = pto.get_subblock_idx()
        log.append(f"v{sb}-before")
        pto.SYNC_SET(pto.Pipe.MTE3, 3)
        pto.SYNC_WAIT(pto.Pipe.V, 4)
        log.append(f"v{sb}-after")

    pto.launch_mixed(cube, vector, target="a2a3", blocks=2)
    assert log.index("cube") > max(log.index("v0-before"), log.index("v1-before"))
    assert log.index("cube") < min(log.index("v0-after"), log.index("v1-after"))
    # a wait no core will ever satisfy
    with pytest.raises(DeadlockError, match="cross-core flag 5 of AIC"):
        pto.launch_mixed(lambda: pto.SYNC_WAIT(pto.Pipe.MTE2, 5), lambda: None, target="a2a3")


def test_cross_core_flags_a5_are_per_vector_core():
    # A5 intra-block flags: AIC id < 16 -> AIV0, id >= 16 -> AIV1; AIVk's id -> AIC id + 16k
    got: list[str] = []

    def cube():
        pto.SYNC_SET(pto.Pipe.FIX, 16 + 2)  # to AIV1 only
        pto.SYNC_WAIT(pto.Pipe.MTE2, 16 + 1)  # from AIV1
        got.append("cube")

    def vector():
        if pto.get_subblock_idx() == 1:
            pto.SYNC_WAIT(pto.Pipe.V, 2)
            pto.SYNC_SET(pto.Pipe.MTE3, 1)
            got.append("v1")

    pto.launch_mixed(cube, vector, target="a5")
    assert got == ["v1", "cube"]


def test_ffts_mode1_syncs_the_two_vector_cores():
    log: list[str] = []

    def vector():
        sb = pto.get_subblock_idx()
        if sb == 1:
            log.append("v1-work")
        pto.SYNC_SET(pto.Pipe.MTE3, 0, FftsMode=1)
        pto.SYNC_WAIT(pto.Pipe.V, 0)
        log.append(f"v{sb}-after")

    pto.launch_mixed(lambda: None, vector, target="a2a3")
    assert log[0] == "v1-work"


def test_syncall_is_a_barrier_over_the_participants():
    log: list[str] = []

    def kernel():
        m = pto.current()
        name = m.core[0] + str(m.core[2] if len(m.core) > 2 else "")
        log.append(f"{name}-a")
        pto.SYNCALL(CoreType="Mix")
        log.append(f"{name}-b")
        pto.SYNCALL()  # AIVOnly: the cube does not take part
        log.append(f"{name}-c")

    pto.launch(kernel, target="a2a3", mixed=True, blocks=2)
    firsts = [log.index(f"{n}-a") for n in ("AIC", "AIV0", "AIV1")]
    seconds = [log.index(f"{n}-b") for n in ("AIC", "AIV0", "AIV1")]
    assert max(firsts) < min(seconds)
    assert max(log.index("AIV0-b"), log.index("AIV1-b")) < min(log.index("AIV0-c"),
                                                               log.index("AIV1-c"))
    with pytest.raises(pto.ExecutionError, match="lockstep"):
        pto.launch(kernel, target="a2a3", mixed=True, blocks=2, lockstep=False)


def test_tprint_from_each_vector_core_in_stream_order():
    # no core blocks between the prints: AIV0's output, then AIV1's (the streams' fixed order)
    out = io.StringIO()

    def vector():
        t = Tile("Vec", "f32", 1, 8)
        t.write(np.full((1, 8), pto.get_subblock_idx() + 7, np.float32))
        pto.TPRINT(t)

    pto.launch_mixed(lambda: None, vector, target="a2a3", stdout=out)
    text = out.getvalue()
    assert text.count("TPRINT") == 2
    assert text.index("7.00") < text.index("8.00")


def test_block_dependent_pipe_shapes_fall_back_to_block_by_block():
    # block b pushes 2 (b + 1) valid rows: a lockstep FIFO cannot hold differently shaped
    # tiles, so the launch reruns block by block (nothing was stored yet) with the same result
    x = RNG.standard_normal((3, 8, C)).astype(np.float32)
    out = np.zeros_like(x)
    pipe = TPipe(0, Direction.DIR_C2V, 8 * C * 4, 4)

    calls: list[object] = []

    def cube(x, out):
        b = pto.get_block_idx()
        calls.append(b)
        t = Tile("Mat", "f32", 8, C, valid=(pto.Dyn(8), C))
        pto.TLOAD(t, _gm(x, 8, C, b * 8 * C))
        t.set_valid(2 * (b + 1), C)  # per-block valid rows (a lockstep Lanes value)
        pto.TPUSH(pipe, t)

    def vector(x, out):
        if pto.get_subblock_idx() == 0:
            b = pto.get_block_idx()
            h = Tile("Vec", "f32", 8, C, valid=(pto.Dyn(8), C))
            h.set_valid(2 * (b + 1), C)
            pto.TPOP(pipe, h)
            h.set_valid(8, C)
            pto.TSTORE(_gm(out, 8, C, b * 8 * C), h)

    pto.launch_mixed(cube, vector, x, out, blocks=3, target="a2a3")
    assert len(calls) == 4 and calls[1:] == [0, 1, 2]  # lockstep once, then per block
    for b in range(3):
        np.testing.assert_array_equal(out[b, : 2 * (b + 1)], x[b, : 2 * (b + 1)])
        assert np.isnan(out[b, 2 * (b + 1):]).all()  # rows nothing popped into: poison


def test_observers_see_every_core_before_it_runs():
    from ptoisa.concurrent import streams
    from ptoisa.observe import observing

    seen: list[tuple] = []
    recs: list[tuple] = []

    class Watch:
        def __call__(self, rec):
            recs.append((rec.machine.core[0], rec.ins.name))

        def machine_made(self, m, ranks):
            seen.append(m.core)
            m.observers.append(self)

    with observing(Watch()):
        streams.run_cluster(lambda m: pto.SYNCALL(CoreType="Mix"), target="a2a3")
    # (the first is the current machine, which the block watches for eager code)
    assert seen == [None, ("AIC", 0), ("AIV", 0, 0), ("AIV", 0, 1)]
    assert sorted(recs) == [("AIC", "SYNCALL"), ("AIV", "SYNCALL"), ("AIV", "SYNCALL")]

"""The GlobalData forms of the cube <-> vector FIFO: TALLOC, and TPUSH / TPOP / TFREE of a
GlobalTensor slot view (TALLOC.md, TPUSH.md, TPOP.md, TFREE.md of pto-isa).

The producer gets slot ``i % SlotNum`` of the pipe's GM buffer (``SlotSize`` bytes each) as a
GlobalTensor, writes it with TSTORE and commits it with TPUSH; the consumer's TPOP points its
view at the same slot (a vector sub-block ``k`` of a split at its part: TILE_UP_DOWN ``k``
times the view's rows x cols further on, TILE_LEFT_RIGHT ``k`` times its columns), it reads the
slot with TLOAD and frees it with TFREE. Free space is waited for and notified sparsely: at
producer index ``i >= SlotNum`` with ``i % SyncPeriod == 0``, at consumer index ``j`` with
``(j + 1) % SyncPeriod == 0``, ``SyncPeriod = SlotNum if SlotNum <= 2 else SlotNum // 2``.

The references below are numpy slices of what was produced, and byte offsets written from
those rules.
"""

from __future__ import annotations

import numpy as np
import pytest

import ptoisa as pto
from ptoisa import Direction, GlobalTensor, Tile, TPipe
from ptoisa.errors import PtoError
from ptoisa.sanitizer import Sanitizer

RNG = np.random.default_rng(30)
R, C = 16, 32  # one slot's data
ITERS = 6  # more iterations than the FIFO has slots
SPLITS = {1: "TILE_UP_DOWN", 2: "TILE_LEFT_RIGHT"}


def _view(arr: np.ndarray, rows: int, cols: int, row_stride: int, offset: object = 0
          ) -> GlobalTensor:
    n = arr.size
    return GlobalTensor(arr, (1, 1, 1, rows, cols), (n, n, n, row_stride, 1), offset=offset)


def _nz(rows: int, cols: int) -> Tile:
    """An NZ L1 (Mat) tile: what the cube loads and moves to L0A / L0B."""
    return Tile("Mat", "f32", rows, cols, "ColMajor", None, "RowMajor")


def _part(x: np.ndarray, split: int, k: int) -> np.ndarray:
    """Sub-block k's part of one produced R x C tile."""
    if split == 1:
        return x[k * R // 2:(k + 1) * R // 2]
    return x[:, k * C // 2:(k + 1) * C // 2]


def _part_shape(split: int) -> tuple[int, int]:
    return (R // 2, C) if split == 1 else (R, C // 2)


def _c2v_kernel(x, fifo, got, *, depth: int, split: int, free_early: bool = False):
    """AIC: for each i, Acc <- x[i] (written by the host), TALLOC, TSTORE from the Acc tile
    (FIX pipe), TPUSH. AIV k: TPOP its part, TLOAD, TFREE, TSTORE into got[k][i]."""
    pipe = TPipe(0, Direction.DIR_C2V, R * C * 4, depth, buffer=fifo)
    if pto.core_type() == "AIC":
        slot = _view(fifo, R, C, C)
        acc = Tile("Acc", "f32", R, C)
        for i in range(ITERS):
            pto.TALLOC(pipe, slot)
            acc.write(x[i])
            pto.TSTORE(slot, acc)
            pto.TPUSH(pipe, slot)
        return
    k = pto.get_subblock_idx()
    rows, cols = _part_shape(split)
    # the slot view the consumer is given: its part's shape, rows C elements apart
    slot = _view(fifo, rows, cols, C)
    t = Tile("Vec", "f32", rows, cols)
    mine = got[k]
    for i in range(ITERS):
        pto.TPOP(pipe, slot, Split=SPLITS[split])
        if free_early:  # the release before the read: the cube may overwrite the slot
            pto.TFREE(pipe, slot, Split=SPLITS[split])
        pto.TLOAD(t, slot)
        if not free_early:
            pto.TFREE(pipe, slot, Split=SPLITS[split])
        pto.TSTORE(_view(mine, rows, cols, cols, i * rows * cols), t)


def _inputs(depth: int, split: int) -> tuple[np.ndarray, np.ndarray, list[np.ndarray]]:
    x = RNG.standard_normal((ITERS, R, C)).astype(np.float32)
    fifo = np.zeros(depth * R * C, np.float32)
    rows, cols = _part_shape(split)
    got = [np.zeros((ITERS, rows, cols), np.float32) for _ in range(2)]
    return x, fifo, got


@pytest.mark.parametrize("target", ["a2a3", "a5"])
@pytest.mark.parametrize("depth", [2, 4])
@pytest.mark.parametrize("split", [1, 2])
def test_c2v_through_gm_slots(split, depth, target):
    x, fifo, got = _inputs(depth, split)
    pto.launch(lambda *a: _c2v_kernel(*a, depth=depth, split=split), x, fifo, got,
               mixed=True, target=target)
    for k in range(2):
        for i in range(ITERS):
            np.testing.assert_array_equal(got[k][i], _part(x[i], split, k))
    # the ring holds the last SlotNum tiles, tile i in slot i % SlotNum
    ring = fifo.reshape(depth, R, C)
    for i in range(ITERS - depth, ITERS):
        np.testing.assert_array_equal(ring[i % depth], x[i])


@pytest.mark.parametrize("depth", [2, 4])
def test_c2v_gm_pipeline_is_race_free(depth):
    x, fifo, got = _inputs(depth, 1)
    san = Sanitizer(sync="auto")
    pto.launch(lambda *a: _c2v_kernel(*a, depth=depth, split=1), x, fifo, got,
               mixed=True, sanitize=san, target="a2a3")
    races = [f for f in san.report.findings if f.kind == "race"]
    assert races == []


def test_sanitizer_finds_a_free_before_the_read():
    # TFREE before TLOAD: the cube's TSTORE into the reused slot is ordered after the free
    # but not after the vector's load of that slot (a WAR between the cores)
    x, fifo, got = _inputs(2, 1)
    san = Sanitizer(sync="auto")
    pto.launch(lambda *a: _c2v_kernel(*a, depth=2, split=1, free_early=True), x, fifo, got,
               mixed=True, sanitize=san, target="a2a3")
    races = [f for f in san.report.findings if f.kind == "race" and "cores" in f.extra]
    assert races and {f.hazard for f in races} == {"WAR"}
    f = races[0]
    assert f.space == "GM" and "TSTORE" in f.message and "TLOAD" in f.message


def test_sanitizer_finds_a_read_before_the_pop():
    # the consumer computes the slot's address itself (as flash_atten does) and reads it
    # before TPOP: nothing orders the cube's TSTORE before that TLOAD (a RAW between cores)
    depth = 2
    x, fifo, got = _inputs(depth, 1)

    def kernel(x, fifo, got):
        pipe = TPipe(0, Direction.DIR_C2V, R * C * 4, depth, buffer=fifo)
        if pto.core_type() == "AIC":
            slot = _view(fifo, R, C, C)
            acc = Tile("Acc", "f32", R, C)
            for i in range(ITERS):
                pto.TALLOC(pipe, slot)
                acc.write(x[i])
                pto.TSTORE(slot, acc)
                pto.TPUSH(pipe, slot)
            return
        k = pto.get_subblock_idx()
        slot = _view(fifo, R // 2, C, C)
        t = Tile("Vec", "f32", R // 2, C)
        for i in range(ITERS):
            mine = _view(fifo, R // 2, C, C, (i % depth) * R * C + k * (R // 2) * C)
            pto.TLOAD(t, mine)
            pto.TPOP(pipe, slot, Split="TILE_UP_DOWN")
            pto.TFREE(pipe, slot, Split="TILE_UP_DOWN")
            pto.TSTORE(_view(got[k], R // 2, C, C, i * (R // 2) * C), t)

    san = Sanitizer(sync="auto")
    pto.launch(kernel, x, fifo, got, mixed=True, sanitize=san, target="a2a3")
    races = [f for f in san.report.findings if f.kind == "race" and "cores" in f.extra]
    assert "RAW" in {f.hazard for f in races}


@pytest.mark.parametrize("split", [1, 2])
def test_v2c_halves_through_gm(split):
    # each AIV allocates its part of a slot (TALLOC's sub-block offset), stores and pushes;
    # the cube pops the whole slot once both parts are pushed and reads it
    depth = 2
    x = RNG.standard_normal((ITERS, R, C)).astype(np.float32)
    fifo = np.zeros(depth * R * C, np.float32)
    out = np.zeros((ITERS, R, C), np.float32)

    def kernel(x, fifo, out):
        pipe = TPipe(1, Direction.DIR_V2C, R * C * 4, depth, buffer=fifo)
        if pto.core_type() == "AIC":
            slot = _view(fifo, R, C, C)
            t = Tile("Mat", "f32", R, C)
            for i in range(ITERS):
                pto.TPOP(pipe, slot, Split=SPLITS[split])
                pto.TLOAD(t, slot)
                pto.TFREE(pipe, slot, Split=SPLITS[split])
                pto.TSTORE(_view(out, R, C, C, i * R * C), t)
            return
        k = pto.get_subblock_idx()
        rows, cols = _part_shape(split)
        slot = _view(fifo, rows, cols, C)
        h = Tile("Vec", "f32", rows, cols)
        for i in range(ITERS):
            pto.TALLOC(pipe, slot, Split=SPLITS[split])
            h.write(_part(x[i], split, k))
            pto.TSTORE(slot, h)
            pto.TPUSH(pipe, slot, Split=SPLITS[split])

    san = Sanitizer(sync="auto")
    pto.launch(kernel, x, fifo, out, mixed=True, sanitize=san, target="a2a3")
    np.testing.assert_array_equal(out, x)
    assert [f for f in san.report.findings if f.kind == "race"] == []


def test_slot_offsets_and_sparse_waits_on_one_core():
    # eager, one core (AIV0 and AIV1 named by subBlockId): the slot views' element offsets
    # follow the ring; the cube's third TALLOC (index 2 = SlotNum) needs a free notification
    # from both sub-blocks, and SyncPeriod 2 means a sub-block notifies after its 2nd free
    buf = np.zeros(2 * R * C, np.float32)
    pipe = TPipe(0, Direction.DIR_C2V, R * C * 4, 2, buffer=buf)
    assert pipe.sync_period == 2 and TPipe(0, 1, 4, 3).sync_period == 1 \
        and TPipe(0, 1, 4, 8).sync_period == 4
    slot = _view(buf, R, C, C)
    view = _view(buf, R // 2, C, C)
    offsets = []
    for _ in range(2):
        pto.TALLOC(pipe, slot)
        offsets.append(slot.offset)
        pto.TPUSH(pipe, slot)
    assert offsets == [0, R * C]
    for lane in (0, 1):
        pto.TPOP(pipe, view, lane, Split="TILE_UP_DOWN")
        assert view.offset == lane * (R // 2) * C
        pto.TFREE(pipe, view, lane, Split="TILE_UP_DOWN")  # index 0: no notification yet
    with pytest.raises(PtoError, match="deadlock.*not freed"):
        pto.TALLOC(pipe, slot)
    for lane in (0, 1):
        pto.TPOP(pipe, view, lane, Split="TILE_LEFT_RIGHT")
        assert view.offset == R * C + lane * C
        pto.TFREE(pipe, view, lane)
    pto.TALLOC(pipe, slot)
    assert slot.offset == 0


def test_protocol_errors_are_named():
    buf = np.zeros(R * C, np.float32)
    slot = _view(buf, R, C, C)
    with pytest.raises(PtoError, match="no GM slot buffer"):
        pto.TALLOC(TPipe(2, Direction.DIR_C2V, R * C * 4, 1), slot)
    pipe = TPipe(3, Direction.DIR_C2V, R * C * 4, 1, buffer=buf)
    with pytest.raises(PtoError, match="TALLOC"):
        pto.TPUSH(pipe, slot)
    with pytest.raises(PtoError, match="deadlock.*not pushed"):
        pto.TPOP(pipe, slot)
    with pytest.raises(PtoError, match="before any TPOP"):
        pto.TFREE(pipe, slot)
    both = TPipe(4, Direction.DIR_BOTH, R * C * 4, 1, buffer=buf)
    with pytest.raises(PtoError, match="DIR_BOTH.*not executed"):
        pto.TALLOC(both, slot)


@pytest.mark.parametrize("target", ["a2a3", "a5"])
def test_cycle_model_orders_by_the_same_edges(target):
    # the consumer's loads of slot i start after the producer's store of tile i ended (push ->
    # pop), and the producer's store into a reused slot after the loads that freed it
    # (free -> alloc: with SyncPeriod 2 the alloc of tile 2 waits for the frees of tiles 0, 1)
    depth = 2
    x, fifo, got = _inputs(depth, 1)
    rep = pto.launch(lambda *a: _c2v_kernel(*a, depth=depth, split=1), x, fifo, got,
                     mixed=True, target=target, cycles=True)
    stores = [s for s in rep.steps if s.op == "TSTORE" and s.core.startswith("AIC")]
    for sub in ("AIV0", "AIV1"):
        loads = [s for s in rep.steps if s.op == "TLOAD" and s.core.startswith(sub)]
        assert len(stores) == len(loads) == ITERS
        for i in range(ITERS):
            assert loads[i].start >= stores[i].end
        for i in range(depth, ITERS, pipe_period := 2):
            assert stores[i].start >= loads[i - depth + pipe_period - 1].end
    # the slot views cost no GM traffic: only the stores and loads move bytes
    assert {s.op for s in rep.steps if s.gm} == {"TSTORE", "TLOAD"}


@pytest.mark.parametrize("lockstep", [True, False])
def test_blocks_with_their_own_rings_on_a5_gm_direction(lockstep):
    # flash_atten's layout: one FIFO region per block (base + block * stride), A5's
    # DIR_C2V_GM; blocks in lockstep (per-block slot offsets) or one by one
    blocks, depth = 2, 2
    x = RNG.standard_normal((blocks, ITERS, R, C)).astype(np.float32)
    fifo = np.zeros(blocks * depth * R * C, np.float32)
    got = np.zeros((blocks, 2, ITERS, R // 2, C), np.float32)

    eye = np.eye(C, dtype=np.float32)

    def kernel(x, fifo, got, eye):
        b = pto.get_block_idx()
        n = fifo.size
        ring = GlobalTensor(fifo, (1, 1, 1, 1, depth * R * C), (n, n, n, n, 1),
                            offset=b * depth * R * C)
        pipe = TPipe(0, Direction.DIR_C2V_GM, R * C * 4, depth, buffer=ring)
        if pto.core_type() == "AIC":
            # A5 stores no Mat tile (TSTORE.md): the cube stores its Acc, as flash_atten's
            # does, here x[i] @ I (exact in f32: one nonzero product per element)
            slot = _view(fifo, R, C, C)
            t, left, acc = _nz(R, C), pto.TileLeft("f32", R, C), pto.TileAcc("f32", R, C)
            eye_mat, right = _nz(C, C), pto.TileRight("f32", C, C)
            pto.TLOAD(eye_mat, _view(eye, C, C, C))
            pto.TMOV(right, eye_mat)
            for i in range(ITERS):
                pto.TLOAD(t, _view(x, R, C, C, (b * ITERS + i) * R * C))
                pto.TMOV(left, t)
                pto.TMATMUL(acc, left, right)
                pto.TALLOC(pipe, slot)
                pto.TSTORE(slot, acc)
                pto.TPUSH(pipe, slot)
            return
        k = pto.get_subblock_idx()
        slot = _view(fifo, R // 2, C, C)
        h = Tile("Vec", "f32", R // 2, C)
        for i in range(ITERS):
            pto.TPOP(pipe, slot, Split="TILE_UP_DOWN")
            pto.TLOAD(h, slot)
            pto.TFREE(pipe, slot, Split="TILE_UP_DOWN")
            pto.TSTORE(_view(got, R // 2, C, C, ((b * 2 + k) * ITERS + i) * (R // 2) * C), h)

    pto.launch(kernel, x, fifo, got, eye, blocks=blocks, mixed=True, target="a5",
               lockstep=lockstep)
    for b in range(blocks):
        for k in range(2):
            np.testing.assert_array_equal(got[b, k], x[b, :, k * R // 2:(k + 1) * R // 2])


def test_timing_only_run_keeps_the_ring():
    # a timing-only run computes no values but still runs the FIFO protocol: same schedule
    runs = []
    for mode in (True, "timing"):
        x, fifo, got = _inputs(2, 1)
        runs.append(pto.launch(lambda *a: _c2v_kernel(*a, depth=2, split=1), x, fifo, got,
                               mixed=True, target="a2a3", cycles=mode))
    assert runs[0].total == runs[1].total > 0

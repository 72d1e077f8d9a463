"""The whole-launch model (issue #30): blocks of one launch share the GM bandwidth budget, and
launch overhead, ramp and drain are added once per launch. Expectations are written from the
rule (max(per-core time, N * B / bandwidth) + the constants), not read from the model."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

import ptoisa as pto
from ptoisa import GlobalTensor, Pipe, Tile, TileType
from ptoisa.cycles.launch import BUDGETS, Wave, budget, whole_launch
from ptoisa.cycles.schedule import schedule
from ptoisa.cycles.steps import Step
from ptoisa.targets import get_target, register_target, unregister_target

R, C = 64, 64
B = R * C * 4  # bytes one block loads


def _load(x: np.ndarray) -> None:
    b = pto.get_block_idx()
    n = R * C
    t = Tile(TileType.Vec, np.float32, R, C)
    pto.TLOAD(t, GlobalTensor(x, (1, 1, 1, R, C), (n, n, n, C, 1), offset=b * n))


def _launch(blocks: int, lockstep: bool | str = "auto"):
    x = np.ones(blocks * R * C, np.float32)
    return pto.launch(_load, x, blocks=blocks, target="a2a3", cycles=True, lockstep=lockstep)


#: the a2a3 vector cores a vector-only block runs on (910B2 / A3: 24 cube cores, two each)
AIV = 48


def _expected(rep, blocks: int) -> int:
    """Blocks in waves of ``AIV`` (one TLOAD each: alike), each wave no shorter than its
    bytes through the budget."""
    bud = budget("a2a3")
    per_core = rep.total  # one block alone: a single TLOAD
    full, rem = divmod(blocks, AIV)
    waves = [AIV] * full + ([rem] if rem else [])
    part = sum(max(per_core, math.ceil(m * B / bud.bandwidth)) for m in waves)
    return bud.launch + bud.ramp + part + bud.drain


def test_budget_documented():
    b = BUDGETS["a2a3"]
    # upstream's arch config: GM_TO_L1 135 GiB/s per core, 24 cores, 1.85 GHz
    assert b.bandwidth == pytest.approx(24 * 135 * 2**30 / 1.85e9)
    assert "arch config" in b.source and "fitted" in b.source


@pytest.mark.parametrize("blocks", [1, 8, 64, 256])
def test_n_blocks_loading_b_bytes_take_max_of_core_and_bandwidth(blocks):
    rep = _launch(blocks)
    lt = rep.launch
    assert lt.gm_bytes == blocks * B and lt.core_gm_bytes == B
    assert lt.cycles == _expected(rep, blocks)


def test_per_block_and_lockstep_launches_agree():
    a, b = _launch(64, lockstep=True), _launch(64, lockstep=False)
    assert not b.lockstep and a.lockstep
    assert a.launch.cycles == b.launch.cycles == _expected(a, 64)


def test_bandwidth_bound_launch_is_slower_than_one_core():
    rep = _launch(256)
    lt = rep.launch
    # 256 blocks on 48 vector cores: five waves of 48 and one of 16; a full wave's loads share
    # the budget (48 * B bytes: longer than one core alone), the last wave's do not
    assert [(w.first, w.count) for w in lt.waves] == [(48 * k, 48) for k in range(5)] + \
        [(240, 16)]
    full = math.ceil(AIV * B / budget("a2a3").bandwidth)
    assert [w.end - w.start for w in lt.waves] == [full] * 5 + [rep.total]
    assert full > rep.total and lt.bound == "shared"
    assert lt.cycles > rep.total + lt.launch
    assert lt.us == pytest.approx(lt.cycles / 1850.0)


def test_overhead_once_per_launch():
    one, many = _launch(1).launch, _launch(8).launch
    bud = budget("a2a3")
    fixed = bud.launch + bud.ramp + bud.drain
    assert one.cycles - max(one.shared_cycles, one.bandwidth_cycles) == fixed
    assert many.cycles - max(many.shared_cycles, many.bandwidth_cycles) == fixed


def test_stretch_follows_overlap_with_flags():
    """Two loads per block in sequence (flags order them): with 256 blocks the shared
    schedule stretches each, so the cores' part is at least the bandwidth floor."""

    def k(x: np.ndarray) -> None:
        b = pto.get_block_idx()
        n = R * C
        t = Tile(TileType.Vec, np.float32, R, C)
        for i in range(2):
            pto.TLOAD(t, GlobalTensor(x, (1, 1, 1, R, C), (n, n, n, C, 1),
                                      offset=(2 * b + i) * n))
            pto.SET_FLAG(Pipe.MTE2, Pipe.MTE3, 0)
            pto.WAIT_FLAG(Pipe.MTE2, Pipe.MTE3, 0)

    x = np.ones(2 * 256 * R * C, np.float32)
    rep = pto.launch(k, x, blocks=256, target="a2a3", cycles=True)
    lt = rep.launch
    floor = math.ceil(2 * 256 * B / budget("a2a3").bandwidth)
    assert lt.bandwidth_cycles == floor
    assert lt.shared_cycles >= floor > rep.total
    assert "whole launch" in rep.summary()


def _mixed_loads(x: np.ndarray, y: np.ndarray) -> None:
    """The cube core loads one R x C f32 block into L1; each vector core loads one into UB and
    stores it back (no data passes between the cores: only the GM traffic matters here)."""
    b = pto.get_block_idx()
    n = R * C
    if pto.core_type() == "AIC":
        t = Tile(TileType.Mat, np.float32, R, C)
        pto.TLOAD(t, GlobalTensor(x, (1, 1, 1, R, C), (n, n, n, C, 1), offset=b * n))
    else:
        v = 2 * b + pto.get_subblock_idx()
        u = Tile(TileType.Vec, np.float32, R, C)
        pto.TLOAD(u, GlobalTensor(y, (1, 1, 1, R, C), (n, n, n, C, 1), offset=v * n))
        pto.SET_FLAG(Pipe.MTE2, Pipe.MTE3, 0)
        pto.WAIT_FLAG(Pipe.MTE2, Pipe.MTE3, 0)
        pto.TSTORE(GlobalTensor(y, (1, 1, 1, R, C), (n, n, n, C, 1), offset=v * n), u)


def test_vector_cores_have_their_own_paths_in_a_mixed_launch():
    """Upstream's arch config gives GM_TO_UB 100.9 and UB_TO_GM 188.46 GiB/s per vector core;
    the A3 has 48 of them. In a mixed launch their MTE2 / MTE3 bytes go through those budgets,
    the cube's through the main one; the floor is the slowest path."""
    b = BUDGETS["a2a3"]
    assert b.vector_read == pytest.approx(48 * 100.9 * 2**30 / 1.85e9)
    assert b.vector_write == pytest.approx(48 * 188.46 * 2**30 / 1.85e9)
    blocks = 256
    x = np.ones(blocks * R * C, np.float32)
    y = np.ones(2 * blocks * R * C, np.float32)
    rep = pto.launch(_mixed_loads, x, y, blocks=blocks, target="a2a3", mixed=True, cycles=True)
    lt = rep.launch
    cube, vec = blocks * B, 2 * blocks * B  # two vector cores a block
    assert lt.paths == {"GM": (cube, b.bandwidth), "GM->UB": (vec, b.vector_read),
                        "UB->GM": (vec, b.vector_write)}
    assert lt.gm_bytes == cube + 2 * vec
    assert lt.bandwidth_cycles == max(math.ceil(cube / b.bandwidth),
                                      math.ceil(vec / b.vector_read),
                                      math.ceil(vec / b.vector_write))
    # one budget for everything (what a launch that is not mixed gets) is slower here
    one = rep.launch_with(dataclasses.replace(b, vector_read=None, vector_write=None))
    assert one.paths == {"GM": (cube + 2 * vec, b.bandwidth)}
    assert one.bandwidth_cycles == math.ceil((cube + 2 * vec) / b.bandwidth)
    assert one.cycles > lt.cycles
    assert "GM->UB" in lt.summary()


def test_launch_that_is_not_mixed_keeps_one_budget():
    lt = _launch(64).launch
    assert list(lt.paths) == ["GM"]


# ---- blocks queued behind the cores (waves) -------------------------------------------------

def test_core_counts_declared():
    # 910B2 / A3: 24 cube cores, two vector cores each; A5 (assumed): 32 and 64
    a2a3, a5 = get_target("a2a3").traits, get_target("a5").traits
    assert (a2a3.cube_cores, a2a3.vector_cores) == (24, 48)
    assert (a5.cube_cores, a5.vector_cores) == (32, 64)


def _compute(x: np.ndarray) -> None:
    """One load, then vector work well above the load's time (alike for every block)."""
    b = pto.get_block_idx()
    n = R * C
    t = Tile(TileType.Vec, np.float32, R, C)
    pto.TLOAD(t, GlobalTensor(x, (1, 1, 1, R, C), (n, n, n, C, 1), offset=b * n))
    for _ in range(8):
        pto.TEXP(t, t)


def _run(kernel, blocks: int, target: str = "a2a3", lockstep: bool | str = "auto"):
    x = np.ones(blocks * R * C, np.float32)
    return pto.launch(kernel, x, blocks=blocks, target=target, cycles=True, lockstep=lockstep)


def _part(lt) -> int:
    """The cores' part of a launch: its cycles less the launch overhead, ramp and drain."""
    return lt.cycles - lt.launch - lt.ramp - lt.drain


@pytest.mark.parametrize("lockstep", [True, False])
def test_twice_the_cores_blocks_of_equal_work_take_two_waves(lockstep):
    one = _run(_compute, AIV, lockstep=lockstep).launch
    two = _run(_compute, 2 * AIV, lockstep=lockstep).launch
    assert one.waves == [] and one.queued_cycles is None
    assert [(w.first, w.count) for w in two.waves] == [(0, AIV), (AIV, AIV)]
    assert two.waves[1].start == two.waves[0].end  # the second wave waits for the first
    assert _part(two) == pytest.approx(2 * _part(one), rel=0.01)
    assert "2 waves on 48 vector cores" in two.summary()


def test_per_block_and_lockstep_waves_agree():
    a = _run(_compute, 2 * AIV + 5, lockstep=True).launch
    b = _run(_compute, 2 * AIV + 5, lockstep=False).launch
    assert [(w.first, w.count) for w in a.waves] == [(w.first, w.count) for w in b.waves] == \
        [(0, AIV), (AIV, AIV), (2 * AIV, 5)]
    assert a.cycles == pytest.approx(b.cycles, rel=0.01)


@pytest.fixture
def nocores():
    """a2a3 with no core counts declared: every block starts at once (the model before
    queueing)."""
    register_target(get_target("a2a3").derive(
        "a2a3-nocores", traits={"cube_cores": None, "vector_cores": None}))
    yield "a2a3-nocores"
    unregister_target("a2a3-nocores")


@pytest.mark.parametrize("blocks", [1, 7, 24, 48])
def test_blocks_within_the_cores_priced_as_all_together(nocores, blocks):
    for lockstep in (True, False):
        q = _run(_compute, blocks, lockstep=lockstep).launch
        t = _run(_compute, blocks, target=nocores, lockstep=lockstep).launch
        assert q.waves == [] and q.queued_cycles is None and q.cores == AIV
        assert (q.cycles, q.shared_cycles, q.bandwidth_cycles, q.busy) == \
            (t.cycles, t.shared_cycles, t.bandwidth_cycles, t.busy)
    # beyond the cores they differ: the no-core target starts all 96 at once
    assert _run(_compute, 2 * AIV).launch.cycles > \
        _run(_compute, 2 * AIV, target=nocores).launch.cycles


def test_mixed_blocks_within_the_cube_cores_priced_as_all_together(nocores):
    blocks = 24  # 24 clusters: a cube core and its two vector cores each
    x = np.ones(blocks * R * C, np.float32)
    y = np.ones(2 * blocks * R * C, np.float32)
    q = pto.launch(_mixed_loads, x, y, blocks=blocks, target="a2a3", mixed=True,
                   cycles=True).launch
    t = pto.launch(_mixed_loads, x, y, blocks=blocks, target=nocores, mixed=True,
                   cycles=True).launch
    assert q.kind == "mixed" and q.cores == 24 and q.waves == []
    assert (q.cycles, q.shared_cycles, q.busy) == (t.cycles, t.shared_cycles, t.busy)
    x25 = np.ones(25 * R * C, np.float32)
    y25 = np.ones(50 * R * C, np.float32)
    r = pto.launch(_mixed_loads, x25, y25, blocks=25, target="a2a3", mixed=True,
                   cycles=True).launch
    assert [(w.first, w.count) for w in r.waves] == [(0, 24), (24, 1)]


def test_unequal_blocks_fill_the_first_core_that_frees_up():
    """Five vector blocks of 1000, 100, 300, 200, 50 cycles on two vector cores, queued in
    block-id order: blocks 0 and 1 start at once; block 2 goes to block 1's core when it frees
    up (100), block 3 after it (400), block 4 after that (600); block 0 ends last (1000)."""
    register_target(get_target("a2a3").derive("two-aiv", traits={"vector_cores": 2}))
    try:
        work = [1000, 100, 300, 200, 50]
        steps = [Step(i, "TEXP", Pipe.V, c, "core0", i, None, pn="V")
                 for i, c in enumerate(work)]
        schedule(steps, manual=False)
        lt = whole_launch(steps, blocks=5, lockstep=False, target="two-aiv", clock_hz=1.85e9,
                          manual=False, reschedule=schedule)
    finally:
        unregister_target("two-aiv")
    assert lt.kind == "vector" and lt.cores == 2
    assert lt.waves == [Wave(0, 2, 0, 1000), Wave(2, 2, 100, 600), Wave(4, 1, 600, 650)]
    assert lt.queued_cycles == 1000  # block 2 behind block 0 instead would end at 1300
    assert lt.busy == {"V": 1000}  # the busiest core: block 0's (the other's 650)


def test_waves_report_what_bounds_them():
    lt = _run(_compute, 2 * AIV).launch
    # each wave starts with 48 loads at once: 48 * B bytes ask more than the budget over one
    # load's time, so the waves are longer than the blocks alone (2 x one block)
    assert lt.queued_alone == 2 * lt.core_cycles < lt.queued_cycles
    assert lt.bound == "shared"
    alone = _run(_compute, 2 * AIV).launch_with(
        dataclasses.replace(budget("a2a3"), bandwidth=1e9))
    assert alone.queued_cycles == alone.queued_alone == 2 * lt.core_cycles
    assert alone.bound == "cores"


def test_launch_wide_barrier_beyond_the_cores_is_not_queued(nocores):
    """SYNCALL waits for every block: with more blocks than cores the first wave would wait for
    blocks that cannot start. The launch is priced with all blocks at once, and says so."""
    def k(x: np.ndarray) -> None:
        b = pto.get_block_idx()
        n = R * C
        if pto.core_type() == "AIC":
            t = Tile(TileType.Mat, np.float32, R, C)
            pto.TLOAD(t, GlobalTensor(x, (1, 1, 1, R, C), (n, n, n, C, 1), offset=b * n))
        pto.SYNCALL(CoreType="Mix")

    x = np.ones(30 * R * C, np.float32)
    lt = pto.launch(k, x, blocks=30, target="a2a3", mixed=True, cycles=True).launch
    t = pto.launch(k, x, blocks=30, target=nocores, mixed=True, cycles=True).launch
    assert lt.waves == [] and lt.cycles == t.cycles
    assert "not queued behind the 24 mixed cores: SYNCALL" in lt.summary()

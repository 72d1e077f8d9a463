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
from ptoisa.cycles.launch import BUDGETS, budget

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


def _expected(rep, blocks: int) -> int:
    bud = budget("a2a3")
    per_core = rep.total  # one block alone: a single TLOAD
    return bud.launch + bud.ramp + max(per_core, math.ceil(blocks * B / bud.bandwidth)) + \
        bud.drain


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
    assert lt.bound == "bandwidth"
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

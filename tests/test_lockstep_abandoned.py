"""A lockstep attempt that diverges is abandoned and the launch runs block by block: what the
observers report is then the ``lockstep=False`` run's, exactly. The cycle model keeps no step
of the abandoned attempt (block 0's timeline holds block 0's instructions once) and says
``lockstep=False``, so the whole-launch pricing treats the blocks as separate timelines; the
sanitizer counts and reports nothing of the attempt. The per-block step counts are counted by
hand from the kernels; the rest is compared with a ``lockstep=False`` launch, a path the
fallback does not touch."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import ptoisa as pto
from ptoisa import Direction, GlobalTensor, Tile, TileType, TPipe
from ptoisa.sanitizer import Sanitizer

P = pto.Pipe
BLOCKS = 4


def _g(a, i):
    return GlobalTensor(a, (1, 1, 1, 16, 16), (256, 256, 256, 16, 1), offset=i * 256)


def _diverging(x, z):
    """Seven instructions alike on every block (six flag ops and a TLOAD), then control flow
    on the block index: even blocks run one TADD more (12 instructions against 11)."""
    b = pto.get_block_idx()
    t = Tile(TileType.Vec, np.float32, 16, 16)
    u = Tile(TileType.Vec, np.float32, 16, 16)
    pto.SET_FLAG(P.V, P.MTE2, 0)
    pto.WAIT_FLAG(P.V, P.MTE2, 0)
    pto.SET_FLAG(P.MTE3, P.V, 1)
    pto.WAIT_FLAG(P.MTE3, P.V, 1)
    pto.TLOAD(t, _g(x, b))
    pto.SET_FLAG(P.MTE2, P.V, 0)
    pto.WAIT_FLAG(P.MTE2, P.V, 0)
    if b % 2 == 0:  # diverges: lockstep="auto" gives up the attempt here
        pto.TADD(u, t, t)
        pto.TADD(u, u, t)
    else:
        pto.TADD(u, t, t)
    pto.SET_FLAG(P.V, P.MTE3, 0)
    pto.WAIT_FLAG(P.V, P.MTE3, 0)
    pto.TSTORE(_g(z, b), u)


def _launch(lockstep, cycles):
    x = np.arange(BLOCKS * 256, dtype=np.float32)
    z = np.zeros_like(x)
    rep = pto.launch(_diverging, x, z, blocks=BLOCKS, target="a2a3", lockstep=lockstep,
                     cycles=cycles)
    if cycles is True:
        want = x.reshape(BLOCKS, 256) * np.array([3, 2, 3, 2], np.float32)[:, None]
        np.testing.assert_array_equal(z.reshape(BLOCKS, 256), want)
    return rep


def _figures(rep):
    steps = [(s.index, s.op, s.pn, s.cycles, s.core, s.block, s.start, s.end)
             for s in rep.steps]
    return (steps, rep.total, rep.busy, rep.timelines, rep.blocks, rep.lockstep,
            [(r.op, r.where, r.pipe, r.count, r.cycles) for r in rep.rows], rep.launch,
            rep.summary())


def _per_block(rep):
    per: dict[int, int] = {}
    for s in rep.steps:
        per[s.block] = per.get(s.block, 0) + 1
    return per


@pytest.mark.parametrize("cycles", [True, "timing"])
def test_abandoned_lockstep_attempt_leaves_no_steps_and_says_block_by_block(cycles):
    with pytest.raises(pto.BlockDivergence):
        _launch(True, cycles)  # (the kernel does diverge in lockstep)
    auto, each = _launch("auto", cycles), _launch(False, cycles)
    assert _per_block(auto) == {0: 12, 1: 11, 2: 12, 3: 11}  # counted from the kernel
    assert auto.lockstep is False
    assert "in lockstep" not in auto.summary()
    assert _figures(auto) == _figures(each)
    # the whole launch: four timelines of their own, each block's GM bytes once
    assert auto.launch.gm_bytes == 2 * BLOCKS * 256 * 4


def test_a_lockstep_run_that_does_not_diverge_still_says_so():
    def k(x, z):
        b = pto.get_block_idx()
        t = Tile(TileType.Vec, np.float32, 16, 16)
        pto.TLOAD(t, _g(x, b))
        pto.SET_FLAG(P.MTE2, P.MTE3, 0)
        pto.WAIT_FLAG(P.MTE2, P.MTE3, 0)
        pto.TSTORE(_g(z, b), t)

    x = np.arange(BLOCKS * 256, dtype=np.float32)
    z = np.zeros_like(x)
    rep = pto.launch(k, x, z, blocks=BLOCKS, target="a2a3", cycles="timing")
    assert rep.lockstep is True and _per_block(rep) == {0: 4}


def test_observed_launches_after_an_abandoned_one_are_unchanged():
    """One model over two launches: the abandoned attempt of the first leaves nothing in the
    second's records either (the same model, steps in order)."""
    x = np.arange(BLOCKS * 256, dtype=np.float32)

    def twice(lockstep):
        with pto.cycles.observe("a2a3", values=False) as model:
            for _ in range(2):
                pto.launch(_diverging, x, np.zeros_like(x), blocks=BLOCKS, target="a2a3",
                           lockstep=lockstep)
        return model.report()

    auto, each = twice("auto"), twice(False)
    assert len(auto.steps) == 2 * (12 + 11 + 12 + 11)
    assert _figures(auto) == _figures(each)


def _mixed_cube(x, out, pipe):
    b = pto.get_block_idx()
    t = Tile("Mat", "f32", 8, 16, valid=(pto.Dyn(8), 16))
    pto.TLOAD(t, GlobalTensor(x, (1, 1, 1, 8, 16), (128, 128, 128, 16, 1), offset=b * 128))
    t.set_valid(2 * (b + 1), 16)  # per-block valid rows: a lockstep FIFO cannot hold them
    pto.TPUSH(pipe, t)


def _mixed_vector(x, out, pipe):
    if pto.get_subblock_idx() == 0:
        b = pto.get_block_idx()
        h = Tile("Vec", "f32", 8, 16, valid=(pto.Dyn(8), 16))
        h.set_valid(2 * (b + 1), 16)
        pto.TPOP(pipe, h)
        pto.TSTORE(GlobalTensor(out, (1, 1, 1, 8, 16), (128, 128, 128, 16, 1),
                                offset=b * 128), h)


def test_mixed_launch_abandoned_attempt_matches_block_by_block():
    def run(lockstep):
        x = np.arange(3 * 128, dtype=np.float32)
        out = np.zeros_like(x)
        pipe = TPipe(0, Direction.DIR_C2V, 8 * 16 * 4, 4)
        rep = pto.launch_mixed(_mixed_cube, _mixed_vector, x, out, pipe, blocks=3,
                               target="a2a3", lockstep=lockstep, cycles=True)
        for b in range(3):
            rows = 2 * (b + 1) * 16
            np.testing.assert_array_equal(out[b * 128:b * 128 + rows], x[b * 128:b * 128 + rows])
        return rep

    auto, each = run("auto"), run(False)
    assert auto.lockstep is False
    assert _figures(auto) == _figures(each)


# ---- the sanitizer ------------------------------------------------------------------------

def _racy(x, z):
    """A race before the divergence (the TADD reads the TLOAD's tile with no flag between)
    and one after (the TSTORE reads the TADD's tile unflagged on odd blocks)."""
    b = pto.get_block_idx()
    t = Tile(TileType.Vec, np.float32, 16, 16)
    u = Tile(TileType.Vec, np.float32, 16, 16)
    pto.SET_FLAG(P.V, P.MTE2, 0)
    pto.WAIT_FLAG(P.V, P.MTE2, 0)
    pto.TLOAD(t, _g(x, b))
    pto.TADD(u, t, t)
    if b % 2 == 0:
        pto.SET_FLAG(P.V, P.MTE3, 0)
        pto.WAIT_FLAG(P.V, P.MTE3, 0)
    pto.TSTORE(_g(z, b), u)


def _findings(rep):
    return ([(f.kind, f.hazard, f.site, f.other, str(f)) for f in rep], rep.executed,
            rep.notes, sorted(rep.unchecked), rep.clean)


def test_sanitizer_sees_the_block_by_block_run_only():
    def run(lockstep):
        x = np.arange(BLOCKS * 256, dtype=np.float32)
        return pto.launch(_racy, x, np.zeros_like(x), blocks=BLOCKS, target="a2a3",
                          lockstep=lockstep, sanitize=Sanitizer())

    auto, each = run("auto"), run(False)
    # counted from the kernel: 7 instructions on even blocks, 5 on odd ones
    assert auto.executed == 2 * 7 + 2 * 5
    assert sorted(f.hazard for f in auto) == ["RAW", "RAW"]
    assert _findings(auto) == _findings(each)


UPSTREAM = (Path(__file__).resolve().parents[2] / "shared" / "corpus" / "frontends" / "pto-dsl"
            / "examples" / "aot" / "matmul_swizzle" / "matmul.pto")


@pytest.mark.skipif(not UPSTREAM.exists(), reason="the frontends corpus is not beside the "
                    "checkout")
def test_pto_program_diverging_after_its_record_events():
    """pto-dsl's matmul_swizzle: six record_events run in lockstep before the tile loop's
    block-dependent bounds; the report is the block-by-block run's (benchmarks/README.md)."""
    n = 512

    def run(lockstep):
        a, b, c = (np.empty(n * n, np.float16) for _ in range(3))
        prog = pto.load(UPSTREAM, target="a2a3")
        return prog.run("matmul_kernel_ABt", a, b, c, n, n, n, blocks=BLOCKS,
                        lockstep=lockstep, cycles="timing")

    auto, each = run("auto"), run(False)
    assert auto.lockstep is False
    counts = _per_block(auto)
    assert len(set(counts.values())) == 1  # alike blocks: none carries the attempt's steps
    assert _figures(auto) == _figures(each)


def test_the_suites_instruction_count_forgets_the_attempt() -> None:
    """The suite's instruction counter (suite.synth._Count, which ranks a file's tries) counts
    what ran: 12 + 11 + 12 + 11 instructions on the four blocks (counted by hand above), as
    with ``lockstep=False``, not the abandoned attempt's on top."""
    from ptoisa.observe import observing
    from ptoisa.suite.synth import _Count

    for lockstep in ("auto", False):
        count = _Count()
        with observing(count):
            _launch(lockstep, False)
        assert count.n == 46, (lockstep, count.n)

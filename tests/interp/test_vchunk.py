"""Chunk loops around a vecscope loop run as one batch (``ptoisa/interp/vchunk.py``) give
the bits of running one chunk at a time: the benchmark's VPTO kernels (vector add, online
softmax update) at small sizes, with UB read after the loop, masked tails, in-place updates
and aliased arguments; loops whose chunks are not independent (UB bytes carried from one
chunk to the next, GM rows overlapping, a carried SSA value) run one chunk at a time; and
observed runs (sanitizer, cycle model) see every micro-op."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ptoisa.errors import PtoError
from ptoisa.interp import Program, load, vbatch, vchunk
from ptoisa.sanitizer import Sanitizer

KERNELS = Path(__file__).resolve().parents[2] / "benchmarks" / "vpto"


def _kernel(name: str, chunks: int, elems: int, count: int | None = None,
            edit: Any = None) -> Program:
    """Benchmark kernel ``name`` (vadd_1m, online_softmax_1m) over ``chunks`` chunks of
    ``elems`` f32, the plt count of each chunk ``count`` (elems: no tail); ``edit`` changes
    the text further."""
    text = (KERNELS / f"{name}.pto").read_text()
    for old, new in (("%chunks = arith.constant 64 : index", f"%chunks = arith.constant "
                      f"{chunks} : index"),
                     ("%chunk = arith.constant 16384 : index", f"%chunk = arith.constant "
                      f"{elems} : index"),
                     ("%chunk_i32 = arith.constant 16384 : i32", "%chunk_i32 = arith.constant "
                      f"{elems if count is None else count} : i32"),
                     ("%row_bytes = arith.constant 65536 : i64", "%row_bytes = arith.constant "
                      f"{4 * elems} : i64")):
        assert old in text
        text = text.replace(old, new)
    if edit is not None:
        text = edit(text)
    return load(text, target="a5")


def _both(prog: Program, fn: str, args: list[np.ndarray], **kw: Any
          ) -> tuple[list[np.ndarray], list[np.ndarray], int, int]:
    """(arrays after a run batched, after one with batching off, chunk loops the first ran
    as one batch, chunk loops it ran one chunk at a time)."""
    outs = []
    b0, p0 = vchunk.stats["batched"], vchunk.stats["per_iteration"]
    got = (0, 0)
    for on in (True, False):
        copies = [a.copy() for a in args]
        vbatch.ENABLED = on
        try:
            prog.run(fn, *copies, **kw)
        finally:
            vbatch.ENABLED = True
        if on:
            got = (vchunk.stats["batched"] - b0, vchunk.stats["per_iteration"] - p0)
        outs.append(copies)
    return outs[0], outs[1], got[0], got[1]


def _same(a: list[np.ndarray], b: list[np.ndarray]) -> None:
    for k, (x, y) in enumerate(zip(a, b, strict=True)):
        assert x.tobytes() == y.tobytes(), f"argument {k} differs"


def _vadd_args(n: int, seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(n).astype(np.float32),
            rng.standard_normal(n).astype(np.float32), np.full(n, 7, np.float32)]


@pytest.mark.parametrize("chunks,elems", [(2, 64), (6, 1024), (5, 2048)])
@pytest.mark.parametrize("rows", [4096, 40])
def test_vadd_chunk_loop_batched_same_bits(chunks: int, elems: int, rows: int,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """(``rows`` 40: the chunks in groups of one or two, the last group shorter.)"""
    monkeypatch.setattr(vchunk, "GROUP_ROWS", rows)
    prog = _kernel("vadd_1m", chunks, elems)
    args = _vadd_args(chunks * elems)
    on, off, batched, per = _both(prog, "vadd_1m", args)
    assert (batched, per) == (1, 0)
    _same(on, off)
    assert on[2].tobytes() == np.add(args[0], args[1]).tobytes()


@pytest.mark.parametrize("rows", [4096, 40])
def test_online_softmax_chunk_loop_batched_same_bits(rows: int,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """In-place updates (m and l read and written back): their windows are copies, not
    views of GM."""
    monkeypatch.setattr(vchunk, "GROUP_ROWS", rows)
    prog = _kernel("online_softmax_1m", 6, 1024)
    rng = np.random.default_rng(1)
    n = 6 * 1024
    m = rng.standard_normal(n).astype(np.float32)
    l = rng.uniform(1, 100, n).astype(np.float32)  # noqa: E741 - the running sum's name
    s = (rng.standard_normal(n) * 2).astype(np.float32)
    on, off, batched, per = _both(prog, "online_softmax_1m", [m, l, s])
    assert (batched, per) == (1, 0)
    _same(on, off)
    mn = np.maximum(m, s)
    assert on[0].tobytes() == mn.tobytes()
    np.testing.assert_allclose(on[1], l * np.exp(m - mn) + np.exp(s - mn), rtol=1e-6)


def _ub_after(text: str) -> str:
    """The vadd kernel writing UB x and UB z back after the loop (to %w: 2 chunks)."""
    text = text.replace("%z: !pto.ptr<f32, gm>)", "%z: !pto.ptr<f32, gm>, %w: !pto.ptr<f32, gm>)")
    tail = """    %w2 = pto.addptr %w, %chunk : !pto.ptr<f32, gm> -> !pto.ptr<f32, gm>
    pto.mte_ub_gm %ub_x, %w, %row_bytes nburst(%c1_i64, %row_bytes, %row_bytes)
      : !pto.ptr<f32, ub>, !pto.ptr<f32, gm>, i64, i64, i64, i64
    pto.mte_ub_gm %ub_z, %w2, %row_bytes nburst(%c1_i64, %row_bytes, %row_bytes)
      : !pto.ptr<f32, ub>, !pto.ptr<f32, gm>, i64, i64, i64, i64
    return"""
    return text.replace("    return", tail)


def test_ub_after_the_loop_holds_the_last_chunk() -> None:
    chunks, elems = 4, 512
    prog = _kernel("vadd_1m", chunks, elems, edit=_ub_after)
    args = [*_vadd_args(chunks * elems), np.zeros(2 * elems, np.float32)]
    on, off, batched, _ = _both(prog, "vadd_1m", args)
    assert batched == 1
    _same(on, off)
    last = slice((chunks - 1) * elems, chunks * elems)
    assert on[3][:elems].tobytes() == args[0][last].tobytes()
    assert on[3][elems:].tobytes() == (args[0][last] + args[1][last]).tobytes()


def test_a_masked_tail_leaves_ub_bytes_carried_and_runs_chunk_by_chunk() -> None:
    """The plt count short of the chunk: the last register's inactive lanes of UB z keep
    what the previous chunk stored there, which the DMA writes to GM: a byte carried from
    one chunk to the next, so no batch (and the same bits)."""
    prog = _kernel("vadd_1m", 4, 512, count=500)
    on, off, batched, per = _both(prog, "vadd_1m", _vadd_args(4 * 512))
    assert (batched, per) == (0, 1)
    _same(on, off)
    # (chunk 1's elements 500..511 are chunk 0's sums)
    np.testing.assert_array_equal(on[2][512 + 500:1024], on[2][500:512])


def _load_z_first(text: str) -> str:
    """UB z loaded from GM z before the vecscope: a masked store lands in a window the
    chunk wrote whole."""
    dma = """      pto.mte_gm_ub %gz, %ub_z, %c0_i64, %row_bytes
        nburst(%c1_i64, %row_bytes, %row_bytes)
        : !pto.ptr<f32, gm>, !pto.ptr<f32, ub>, i64, i64, i64, i64, i64
      pto.set_flag["PIPE_MTE2", "PIPE_V", "EVENT_ID0"]"""
    return text.replace('      pto.set_flag["PIPE_MTE2", "PIPE_V", "EVENT_ID0"]', dma, 1)


def test_a_masked_tail_into_a_loaded_window_batches() -> None:
    prog = _kernel("vadd_1m", 4, 512, count=500, edit=_load_z_first)
    args = _vadd_args(4 * 512)
    on, off, batched, per = _both(prog, "vadd_1m", args)
    assert (batched, per) == (1, 0)
    _same(on, off)
    lane = np.arange(4 * 512) % 512
    want = np.where(lane < 500, args[0] + args[1], args[2])
    assert on[2].tobytes() == want.astype(np.float32).tobytes()


def _half_steps(text: str) -> str:
    """z's chunk k at k * chunk / 2: consecutive chunks write overlapping GM rows."""
    text = text.replace("      %gz = pto.addptr %z, %start", "      %half = arith.divui %start, "
                        "%c2 : index\n      %gz = pto.addptr %z, %half")
    return text.replace("    %c64 = arith.constant 64 : index",
                        "    %c64 = arith.constant 64 : index\n    %c2 = arith.constant 2 : index")


def test_overlapping_gm_writes_run_chunk_by_chunk() -> None:
    prog = _kernel("vadd_1m", 4, 512, edit=_half_steps)
    on, off, batched, per = _both(prog, "vadd_1m", _vadd_args(4 * 512))
    assert batched == 0
    _same(on, off)


def test_aliased_arguments() -> None:
    """z the same array as x (each chunk reads what it writes: batched, its windows copies);
    z one chunk past x in one buffer (chunk k writes what chunk k + 1 reads: not batched).
    Either way the bits of chunk by chunk."""
    chunks, elems = 4, 512
    prog = _kernel("vadd_1m", chunks, elems)
    for shift, want_batch in ((0, 1), (elems, 0)):
        outs = []
        counts = []
        for on in (True, False):
            buf = np.arange((chunks + 1) * elems, dtype=np.float32)
            y = np.ones(chunks * elems, np.float32)
            b0 = vchunk.stats["batched"]
            vbatch.ENABLED = on
            try:
                prog.run("vadd_1m", buf[:chunks * elems], y, buf[shift:shift + chunks * elems])
            finally:
                vbatch.ENABLED = True
            counts.append(vchunk.stats["batched"] - b0)
            outs.append(buf)
        assert counts[0] == want_batch, shift
        assert outs[0].tobytes() == outs[1].tobytes(), shift


def test_a_carried_value_is_never_batched() -> None:
    def carried(text: str) -> str:
        text = text.replace("    scf.for %k = %c0 to %chunks step %c1 {",
                            "    %n:1 = scf.for %k = %c0 to %chunks step %c1 iter_args(%t = %c0)"
                            " -> (index) {")
        return text.replace("""      pto.wait_flag["PIPE_MTE3", "PIPE_MTE2", "EVENT_ID0"]
    }""", """      pto.wait_flag["PIPE_MTE3", "PIPE_MTE2", "EVENT_ID0"]
      %t2 = arith.addi %t, %c1 : index
      scf.yield %t2 : index
    }""")
    prog = _kernel("vadd_1m", 3, 256, edit=carried)
    args = _vadd_args(3 * 256)
    on, off, batched, per = _both(prog, "vadd_1m", args)
    assert (batched, per) == (0, 0)  # (not even tried: the loop's own step)
    _same(on, off)
    assert on[2].tobytes() == np.add(args[0], args[1]).tobytes()


def test_observed_runs_see_every_micro_op() -> None:
    """The sanitizer and the cycle model run the chunk loop chunk by chunk (they see each
    micro-op with its own bytes), the same cycles as with batching off."""
    prog = _kernel("vadd_1m", 3, 512)
    x, y, z = _vadd_args(3 * 512)
    b0, p0 = vchunk.stats["batched"], vchunk.stats["per_iteration"]
    san = Sanitizer()
    prog.run("vadd_1m", x, y, z, sanitize=san)
    rep = prog.run("vadd_1m", x, y, z, cycles=True)
    assert vchunk.stats["batched"] == b0 and vchunk.stats["per_iteration"] == p0 + 2
    assert not san.report.findings and san.report.executed
    vbatch.ENABLED = False
    try:
        rep_off = prog.run("vadd_1m", x, y, z, cycles=True)
    finally:
        vbatch.ENABLED = True
    assert len(rep.steps) == len(rep_off.steps) > 3 * 8 * 4
    assert rep.total == rep_off.total > 0
    assert z.tobytes() == (x + y).tobytes()


def test_the_flags_records_are_every_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    """A plain run's flag records (its whole effect) are those of chunk by chunk, in
    order."""
    from ptoisa import grid

    seen: list[Any] = []
    done = grid._done

    def _done(m: Any) -> None:  # (the launch's machine, its log as the launch left it)
        seen.append(list(m.sync_log or []))
        done(m)
    monkeypatch.setattr(grid, "_done", _done)
    prog = _kernel("vadd_1m", 5, 256)
    for on in (True, False):
        vbatch.ENABLED = on
        b0 = vchunk.stats["batched"]
        try:
            prog.run("vadd_1m", *_vadd_args(5 * 256))
        finally:
            vbatch.ENABLED = True
        assert vchunk.stats["batched"] - b0 == int(on)
    assert len(seen) == 2 and seen[0] == seen[1] and len(seen[0]) == 5 * 6


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(1, 5), st.sampled_from([64, 128, 320, 512]),
       st.sampled_from([0, 0, 0, 1, 5, 63, 64, 80]), st.booleans(),
       st.sampled_from(["apart", "apart", "same", "next", "short"]),
       st.sampled_from([4096, 24]), st.booleans())
def test_generated_chunk_loops_same_bits(chunks: int, elems: int, short: int,
                                         load_z: bool, where: str, rows: int,
                                         every_other: bool) -> None:
    """Chunk loops of the vadd kernel, their plt count short of the chunk by 0 to 80
    lanes, UB z loaded first or not, z apart from x, x itself, one chunk past it in one
    buffer, or too short for the last chunk, over every register or every second one:
    batched or not, the same bytes, or the same error."""
    def edit(text: str) -> str:
        if every_other:
            text = text.replace("step %c64 iter_args", "step %c128 iter_args").replace(
                "    %c64 = arith.constant 64 : index",
                "    %c64 = arith.constant 64 : index\n    %c128 = arith.constant 128 : index")
        return _load_z_first(text) if load_z else text
    saved = vchunk.GROUP_ROWS
    vchunk.GROUP_ROWS = rows
    try:
        prog = _kernel("vadd_1m", chunks, elems, count=max(elems - short, 0), edit=edit)
        n = chunks * elems
        results = []
        for on in (True, False):
            buf = np.arange(2 * n + elems, dtype=np.float32) * np.float32(0.5)
            y = np.linspace(-3, 3, n, dtype=np.float32)
            x = buf[:n]
            z = {"apart": buf[n + elems:2 * n + elems], "same": x, "next": buf[elems:n + elems],
                 "short": buf[n + elems:2 * n]}[where]
            vbatch.ENABLED = on
            try:
                prog.run("vadd_1m", x, y, z)
                results.append(buf.tobytes())
            except PtoError as e:
                results.append(type(e).__name__ + str(e))
            finally:
                vbatch.ENABLED = True
        assert results[0] == results[1]
    finally:
        vchunk.GROUP_ROWS = saved


_VR = "!pto.vreg<64xf32>"
_ADD = f"{_VR}, {_VR}, !pto.mask<b32> -> {_VR}"
_STORE = f"{_VR}, !pto.ptr<f32, ub>, !pto.mask<b32>"


def _store_back(text: str) -> str:
    """The sum stored over UB x (whose load is still read after: t = a + s) and written to
    GM y in place; t to z."""
    old = f"""          %s = pto.vadd %a, %b, %mask : {_ADD}
          pto.vsts %s, %ub_z[%i], %mask : {_STORE}"""
    body = f"""          %s = pto.vadd %a, %b, %mask : {_ADD}
          pto.vsts %s, %ub_x[%i], %mask : {_STORE}
          %t = pto.vadd %a, %s, %mask : {_ADD}
          pto.vsts %t, %ub_z[%i], %mask : {_STORE}"""
    assert old in text
    text = text.replace(old, body)
    out = """      pto.mte_ub_gm %ub_x, %gy, %row_bytes nburst(%c1_i64, %row_bytes, %row_bytes)
        : !pto.ptr<f32, ub>, !pto.ptr<f32, gm>, i64, i64, i64, i64
      pto.mte_ub_gm %ub_z, %gz"""
    return _load_z_first(text.replace("      pto.mte_ub_gm %ub_z, %gz", out))


@pytest.mark.parametrize("short", [0, 10])
def test_a_store_over_a_loaded_window_keeps_the_loaded_register(short: int) -> None:
    """A register loaded from UB x is read after a store over UB x (the whole window, or
    all but a masked tail): it holds what was loaded; y is written in place."""
    chunks, elems = 3, 512
    prog = _kernel("vadd_1m", chunks, elems, count=elems - short, edit=_store_back)
    args = _vadd_args(chunks * elems)
    on, off, batched, per = _both(prog, "vadd_1m", args)
    assert (batched, per) == (1, 0)
    _same(on, off)
    x, y, z = args
    on_lane = (np.arange(chunks * elems) % elems) < elems - short
    s = x + y
    assert on[1].tobytes() == np.where(on_lane, s, x).tobytes()
    assert on[2].tobytes() == np.where(on_lane, x + s, z).tobytes()


@pytest.mark.parametrize("short", [0, 70])
def test_registers_apart_gather_and_scatter(short: int) -> None:
    """The vecscope loop over every second register of the chunk (rows not end to end:
    loads gather, stores scatter into the window UB z was loaded into)."""
    def apart(text: str) -> str:
        text = text.replace("step %c64 iter_args", "step %c128 iter_args")
        text = text.replace("    %c64 = arith.constant 64 : index",
                            "    %c64 = arith.constant 64 : index\n"
                            "    %c128 = arith.constant 128 : index")
        return _load_z_first(text)
    chunks, elems = 3, 1024
    prog = _kernel("vadd_1m", chunks, elems, count=elems // 2 - short, edit=apart)
    args = _vadd_args(chunks * elems)
    on, off, batched, per = _both(prog, "vadd_1m", args)
    assert (batched, per) == (1, 0)
    _same(on, off)
    x, y, z = args
    k = np.arange(chunks * elems) % elems
    # register r (64 lanes) of a chunk is stored when r is even; lanes count down from the
    # plt count, 64 per stored register
    stored = ((k // 64) % 2 == 0) & ((k // 128) * 64 + k % 64 < elems // 2 - short)
    assert on[2].tobytes() == np.where(stored, x + y, z).tobytes()


def test_f16_chunk_loop() -> None:
    """The vadd kernel over f16 (128 lanes, plt_b16, a masked tail into a loaded window)."""
    chunks, elems, count = 4, 1024, 1000

    def f16(text: str) -> str:
        text = text.replace("!pto.vreg<64xf32>", "!pto.vreg<128xf16>").replace("f32", "f16")
        text = text.replace("!pto.mask<b32>", "!pto.mask<b16>").replace("plt_b32", "plt_b16")
        text = text.replace("step %c64 iter_args", "step %c128 iter_args").replace(
            "    %c64 = arith.constant 64 : index",
            "    %c64 = arith.constant 64 : index\n    %c128 = arith.constant 128 : index")
        text = text.replace(f"%row_bytes = arith.constant {4 * elems} : i64",
                            f"%row_bytes = arith.constant {2 * elems} : i64")
        return _load_z_first(text)
    prog = _kernel("vadd_1m", chunks, elems, count=count, edit=f16)
    x, y, z = (a.astype(np.float16) for a in _vadd_args(chunks * elems))
    on, off, batched, per = _both(prog, "vadd_1m", [x, y, z])
    assert (batched, per) == (1, 0)
    _same(on, off)
    lane = np.arange(chunks * elems) % elems
    assert on[2].tobytes() == np.where(lane < count, x + y, z).tobytes()

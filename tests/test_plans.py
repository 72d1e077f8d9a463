"""Execution plans (ptoisa/plans.py): a ``.pto`` launch recorded once per signature and
replayed must leave the bits the interpreter leaves, on the examples, the copy-on-write fuzz's
exported programs and the PTOAS corpus; a new signature records again; an observed launch,
a function whose control flow could depend on data and ``plans=False`` / ``PTOISA_PLANS=0``
run interpreted."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import ptoisa as pto
from ptoisa import grid
from ptoisa.observe import observing

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT.parent / "shared" / "corpus" / "ptoas" / "test" / "samples"


def _module(path: Path, name: str) -> ModuleType:
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


def _stats(prog: pto.Program, name: str, target: str = "a2a3") -> Any:
    return prog.compiler(target).function(name)._plans.stats  # type: ignore[attr-defined]


def _copies(args: list[Any]) -> list[Any]:
    return [a.copy() if isinstance(a, np.ndarray) else a for a in args]


def _same(xs: list[Any], ys: list[Any]) -> bool:
    return all(x.tobytes() == y.tobytes() for x, y in zip(xs, ys, strict=True)
               if isinstance(x, np.ndarray))


def _both_ways(prog: pto.Program, name: str, args: list[Any], runs: int = 4, **kw: Any
               ) -> list[Any]:
    """Run ``name`` interpreted, then ``runs`` times with plans (the first of a signature
    runs interpreted, the second records, the others replay), each on fresh copies of
    ``args``: every run leaves the interpreter's bytes."""
    ref = _copies(args)
    prog.run(name, *ref, plans=False, **kw)
    for k in range(runs):
        got = _copies(args)
        prog.run(name, *got, **kw)
        assert _same(got, ref), f"run {k} with plans"
    return ref


# ---- the examples --------------------------------------------------------------------------

def _flash(seed: int) -> list[Any]:
    s = np.random.default_rng(seed).standard_normal(8 * 16 * 128, dtype=np.float32)
    return [s, np.zeros_like(s)]


@pytest.mark.parametrize("fn", ["flash_softmax_single", "flash_softmax_double"])
def test_flash_softmax_replays_bit_for_bit(fn: str) -> None:
    prog = pto.load(ROOT / "examples" / "flash_softmax.pto")
    _both_ways(prog, fn, _flash(0))
    st_ = _stats(prog, fn)
    assert st_.built == 1 and st_.hits == 2, st_
    # new contents of the same signature: the same plan, the new data
    ref = _both_ways(prog, fn, _flash(1), runs=1)
    assert _stats(prog, fn).hits == 3 and _stats(prog, fn).built == 1
    fs = _module(ROOT / "examples" / "flash_softmax.py", "example_flash_softmax")
    assert np.allclose(ref[1], fs.reference(ref[0]), rtol=2e-6, atol=1e-7)


@pytest.mark.parametrize("target", ["a2a3", "cpu"])
def test_flash_softmax_rows_of_nan_zero_and_negative_maxima(target: str) -> None:
    """The row max's planned form (reduce_expand.rows_extreme_into) on rows whose maximum is
    a NaN (payloads, signs), a signed zero, negative or -inf, among ordinary rows: replays
    leave the interpreter's bytes (such a batch gives the use to the entry's general form,
    which writes dst again over what the planned form reduced into it; the row sums' NaN
    rows likewise, rules.tree_into), and on rows of none of these the planned form takes
    it."""
    prog = pto.load(ROOT / "examples" / "flash_softmax.pto", target=target)
    x = _flash(7)[0].reshape(-1, 128)
    x[3, 5] = np.float32(np.nan)
    x[9].view(np.uint32)[100] = 0xFFC01234  # (a NaN of another payload and sign)
    x[20, :] = -np.abs(x[20, :])
    x[20, 17] = -0.0
    x[41, :] = -np.abs(x[41, :])
    x[41, 2], x[41, 90] = 0.0, -0.0
    x[64, :] = -np.inf
    x[77, :] = -np.abs(x[77, :]) - 1
    args = [x.reshape(-1), np.zeros(x.size, np.float32)]
    fn = "flash_softmax_single"
    _both_ways(prog, fn, args)
    assert _stats(prog, fn, target).hits == 2
    ok = _flash(8)
    ok[0].reshape(-1, 128)[5:9] = -np.abs(ok[0].reshape(-1, 128)[5:9]) - 0.5
    ref = _both_ways(prog, fn, ok, runs=2)
    fs = _module(ROOT / "examples" / "flash_softmax.py", "example_flash_softmax")
    assert np.allclose(ref[1], fs.reference(ref[0]), rtol=2e-6, atol=1e-7)


@pytest.mark.parametrize("example", ["softmax", "vec_add", "topk", "gemm_int8",
                                     "ragged_rowsum"])
def test_examples_same_bits_with_and_without_plans(example: str,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """Each example's own ``run_pto`` (one program kept across its calls), interpreted and
    three times with plans, on its inputs and on others."""
    mod = _module(ROOT / "examples" / f"{example}.py", f"example_{example}")
    kept: dict[Any, pto.Program] = {}
    real = pto.load

    def load(path: Any, **kw: Any) -> pto.Program:
        key = (str(path), tuple(sorted(kw.items())))
        if key not in kept:
            kept[key] = real(path, **kw)
        return kept[key]
    monkeypatch.setattr(pto, "load", load)
    inputs = {
        "softmax": lambda s: [(np.random.default_rng(s).standard_normal((64, 1024)) * 4)
                              .astype(np.float32)],
        "vec_add": lambda s: list(mod.make_inputs(4, seed=s)),
        "topk": lambda s: [mod.make_input(8, seed=s)],
        "gemm_int8": lambda s: list(mod.make_inputs(seed=s)[:3]),
        "ragged_rowsum": lambda s: [mod.make_input(seed=s)],
    }[example]
    for seed in (0, 1):
        args = inputs(seed)
        monkeypatch.setenv("PTOISA_PLANS", "0")
        ref = mod.run_pto(*args)
        monkeypatch.delenv("PTOISA_PLANS")
        for _ in range(3):
            got = mod.run_pto(*args)
            for x, y in zip(got if isinstance(got, tuple) else (got,),
                            ref if isinstance(ref, tuple) else (ref,), strict=True):
                assert x.tobytes() == y.tobytes()
    (prog,) = kept.values()
    name = prog.entry
    assert _stats(prog, name).hits >= 4, _stats(prog, name)


# ---- the copy-on-write fuzz's programs, exported ---------------------------------------------

def _fuzz() -> ModuleType:
    return _module(ROOT / "tests" / "test_copy_on_write_fuzz.py", "cow_fuzz_for_plans")


_F = _fuzz()


@settings(max_examples=40, deadline=None)
@given(ops=_F._ops(), trips=st.integers(1, 3), lazy=st.sampled_from([None, 0]))
def test_exported_fuzz_programs_same_bits(ops: list[tuple[Any, ...]], trips: int,
                                          lazy: int | None) -> None:
    """The random programs over overlapping GM regions (in a loop of ``trips`` when more
    than one), exported to ``.pto``: interpreted, then recorded and replayed, with tiles read
    lazily from the default size or at any size."""
    kernel = _F._program(ops, trips=trips)
    with _F._lazy_from(0):
        text = pto.export(kernel, *_F._inputs(), target="a2a3", verify=False)
    prog = pto.load(text, target="a2a3")
    with _F._lazy_from(lazy):
        _both_ways(prog, prog.entry, list(_F._inputs()))


def test_planned_read_of_a_tile_whose_bytes_a_lazy_load_owes() -> None:
    """TROWEXPANDSUB's planned form reads src0 from storage that a later TLOAD into a reshape
    of it (a tile on the same bytes, read lazily from GM) owes: the load's values land there
    first, as a read of the tile has them land (planned.values); found by the fuzz above."""
    kernel = _F._program([("rowsub", 1, 0), ("sv_store", 0), ("rv_load", 0)], trips=2)
    with _F._lazy_from(0):
        text = pto.export(kernel, *_F._inputs(), target="a2a3", verify=False)
    prog = pto.load(text, target="a2a3")
    with _F._lazy_from(0):
        _both_ways(prog, prog.entry, list(_F._inputs()))
    assert _stats(prog, prog.entry).hits == 2


@pytest.mark.parametrize("lazy", [None, 0])
def test_batched_loop_hands_back_a_tile_that_held_a_value_without_storage(
        lazy: int | None) -> None:
    """A loop of TMATMUL then TMATMUL_ACC on one accumulator (two writers: no chain, a batch
    of lanes), after a TMATMUL into it before the loop whose value the tile held without
    storage: the batch hands the last iteration's accumulator back, and what the tile held
    is dropped (the replays stored the value from before the loop: half the sums); found by
    the fuzz above (``ops=[('matmul', False), ('matmul', True)], trips=2``)."""
    kernel = _F._program([("matmul", False), ("matmul", True)], trips=2)
    with _F._lazy_from(0):
        text = pto.export(kernel, *_F._inputs(), target="a2a3", verify=False)
    prog = pto.load(text, target="a2a3")
    with _F._lazy_from(lazy):
        _both_ways(prog, prog.entry, list(_F._inputs()))
    st_ = _stats(prog, prog.entry)
    assert st_.hits == 2 and st_.batched == 1


@settings(max_examples=25, deadline=None)
@given(ops=_F._ops(), ub=st.lists(st.sampled_from(_F._UB), min_size=3, max_size=3),
       l1=st.lists(st.sampled_from(_F._L1), min_size=2, max_size=2))
def test_exported_placed_fuzz_programs_same_bits(ops: list[tuple[Any, ...]], ub: list[int],
                                                 l1: list[int]) -> None:
    """Placed tiles sharing bytes (``alloc_tile addr``), every tile lazy."""
    assume(not any(op[0].startswith("replace") for op in ops))
    kernel = _F._program(ops, ub, l1)
    with _F._lazy_from(0):
        text = pto.export(kernel, *_F._inputs(), target="a2a3", verify=False)
        prog = pto.load(text, target="a2a3")
        _both_ways(prog, prog.entry, list(_F._inputs()))


@settings(max_examples=20, deadline=None)
@given(ops=_F._ops())
def test_exported_grid_fuzz_programs_same_bits(ops: list[tuple[Any, ...]]) -> None:
    """The grid programs over 3 blocks in lockstep (a plan of a lockstep launch)."""
    kernel = _F._program(ops, grid=True)
    blocks = _F.BLOCKS
    with _F._lazy_from(0):
        text = pto.export(kernel, *_F._inputs(blocks), blocks=blocks, target="a2a3",
                          verify=False)
        prog = pto.load(text, target="a2a3")
        _both_ways(prog, prog.entry, list(_F._inputs(blocks)), blocks=blocks)


# ---- the corpus ------------------------------------------------------------------------------

def _corpus_files() -> list[Path]:
    if not SAMPLES.is_dir():
        return []
    return [SAMPLES / "Qwen3DecodeA3" / "qwen3_decode_incore_1.pto",
            *sorted(SAMPLES.glob("*/*.pto"))[::7]]


@pytest.mark.skipif(not SAMPLES.is_dir(), reason="the PTOAS corpus is not beside the checkout")
@pytest.mark.parametrize("path", _corpus_files(), ids=lambda p: p.name)
def test_corpus_samples_same_bits(path: Path) -> None:
    cs = _module(ROOT / "benchmarks" / "corpus_speed.py", "bench_corpus_speed")
    got = cs.arguments(path.read_text())
    if got is None:
        pytest.skip("a view's size is not constant")
    fn, args = got
    try:
        prog = pto.load(path, target="a2a3")
        prog.run(fn, *_copies(args), plans=False)
    except pto.PtoError as e:
        pytest.skip(f"does not run with generated inputs: {e}")
    _both_ways(prog, fn, args, runs=3)
    assert _stats(prog, fn).hits >= 1, _stats(prog, fn)


# ---- guards, observers, settings ---------------------------------------------------------------

VEC_ADD = ROOT / "examples" / "vec_add.pto"


def _vec_add(blocks: int, seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    x, y = (rng.standard_normal(blocks * 4096, dtype=np.float32) for _ in range(2))
    return [x, y, np.zeros_like(x)]


def test_a_guard_miss_records_a_new_plan() -> None:
    prog = pto.load(VEC_ADD)
    for blocks in (2, 2, 2, 4, 4, 4, 2):  # another block count and array size: another plan
        args = _vec_add(blocks, seed=blocks)
        prog.vec_add(*args, blocks=blocks)
        assert np.array_equal(args[2], args[0] + args[1])
    s = _stats(prog, "vec_add")
    assert (s.built, s.hits) == (2, 3), s
    # overlapping GM arguments: no plan for that launch (the interpreter's answer)
    x, y, _ = _vec_add(2)
    prog.vec_add(x, y, x, blocks=2)
    assert _stats(prog, "vec_add").hits == 3 and "overlap" in _stats(prog, "vec_add").why


def test_a_read_only_output_still_fails_with_a_plan() -> None:
    prog = pto.load(VEC_ADD)
    x, y, z = _vec_add(2)
    for _ in range(3):
        prog.vec_add(x, y, z, blocks=2)
    assert _stats(prog, "vec_add").hits == 1
    z.flags.writeable = False
    with pytest.raises(pto.PtoError):
        prog.vec_add(x, y, z, blocks=2)


def test_an_observed_launch_runs_interpreted() -> None:
    prog = pto.load(VEC_ADD)
    for _ in range(3):
        prog.vec_add(*_vec_add(2), blocks=2)
    assert _stats(prog, "vec_add").hits == 1
    seen: list[str] = []
    with observing(lambda rec: seen.append(rec.ins.name)):
        args = _vec_add(2)
        prog.vec_add(*args, blocks=2)
    assert seen.count("TADD") == 1 and seen.count("TLOAD") == 2
    assert _stats(prog, "vec_add").hits == 1
    assert "observed" in _stats(prog, "vec_add").why
    rep = prog.vec_add(*_vec_add(2), blocks=2, cycles=True)
    assert rep.total > 0 and _stats(prog, "vec_add").hits == 1
    prog.vec_add(*_vec_add(2), blocks=2)
    assert _stats(prog, "vec_add").hits == 2  # unobserved again: the plan


def test_one_block_replays_keep_every_guard(monkeypatch: pytest.MonkeyPatch) -> None:
    """A 1-block launch on flat arrays replays by the short path (Program._replayed): the
    same bits, and everything that stops a replay on the general path stops it there: an
    observer, plans off, a read-only output, overlapping arguments, another element type,
    another array size, the program's permissive setting changed. (Its own cache of launch
    machines: the shared one is cleared when it fills, and a replay needs the machine its plan
    was recorded on; with another machine the launch plans afresh, which this test counts.)"""
    monkeypatch.setattr(grid, "_MACHINES", {})
    prog = pto.load(VEC_ADD)
    for _ in range(3):
        x, y, z = _vec_add(1)
        prog.vec_add(x, y, z)
        assert np.array_equal(z, x + y)
    assert _stats(prog, "vec_add").hits == 1 and "vec_add" in prog._flat
    for _ in range(2):  # (the short path: the same arrays again, and new ones)
        prog.vec_add(x, y, z)
        x, y, z = _vec_add(1, seed=5)
        prog.vec_add(x, y, z)
        assert np.array_equal(z, x + y)
    assert _stats(prog, "vec_add").hits == 5
    seen: list[str] = []
    with observing(lambda rec: seen.append(rec.ins.name)):
        prog.vec_add(x, y, z)
    assert seen.count("TADD") == 1 and _stats(prog, "vec_add").hits == 5
    prog.vec_add(x, y, z, plans=False)
    monkeypatch.setenv("PTOISA_PLANS", "off")
    prog.vec_add(x, y, z)
    monkeypatch.delenv("PTOISA_PLANS")
    assert _stats(prog, "vec_add").hits == 5
    want = x + y
    prog.vec_add(x, y, x)  # (overlapping: the interpreter's answer)
    assert _stats(prog, "vec_add").hits == 5 and "overlap" in _stats(prog, "vec_add").why
    assert np.array_equal(x, want)
    x2, y2, _ = _vec_add(1)
    ro = np.zeros_like(x)
    ro.flags.writeable = False
    with pytest.raises(pto.PtoError):
        prog.vec_add(x2, y2, ro)
    with pytest.raises(pto.PtoError, match="must have dtype f32"):
        prog.vec_add(x2.astype(np.float64), y2, z)
    with pytest.raises(pto.PtoError):  # (another size: a new signature, then out of range)
        prog.vec_add(x2[:64].copy(), y2[:64].copy(), z[:64].copy())
    prog.permissive = True
    prog.vec_add(x2, y2, z)
    assert np.array_equal(z, x2 + y2) and _stats(prog, "vec_add").hits == 0  # (its own)
    prog.permissive = False
    assert _stats(prog, "vec_add").hits == 5
    prog.vec_add(x2.reshape(64, 64), y2, z)  # (a 2-D array: bound as a flat view of itself)
    assert np.array_equal(z, x2 + y2) and _stats(prog, "vec_add").hits == 6


def test_plans_off_by_keyword_and_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    prog = pto.load(VEC_ADD)
    for _ in range(3):
        prog.vec_add(*_vec_add(2), blocks=2, plans=False)
    assert not hasattr(prog.compiler("a2a3").function("vec_add"), "_plans")
    monkeypatch.setenv("PTOISA_PLANS", "off")
    for _ in range(3):
        prog.vec_add(*_vec_add(2), blocks=2)
    assert not hasattr(prog.compiler("a2a3").function("vec_add"), "_plans")
    monkeypatch.setenv("PTOISA_PLANS", "1")
    prog.vec_add(*_vec_add(2), blocks=2, plans=False)
    for _ in range(3):
        prog.vec_add(*_vec_add(2), blocks=2)
    assert _stats(prog, "vec_add").hits == 1
    with pytest.raises(pto.PtoError, match="plans must be True or False"):
        prog.vec_add(*_vec_add(2), blocks=2, plans="yes")  # type: ignore[arg-type]


_SCALAR_READ = """
module {
  func.func @k(%a: !pto.ptr<f32>, %n: !pto.ptr<i32>, %out: !pto.ptr<f32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c16 = arith.constant 16 : index
    %ci = pto.load_scalar %n[%c0] : !pto.ptr<i32> -> i32
    %cnt = arith.index_cast %ci : i32 to index
    %va = pto.make_tensor_view %a, shape = [%c16, %c16], strides = [%c16, %c1]
        : !pto.tensor_view<?x?xf32>
    %vo = pto.make_tensor_view %out, shape = [%c16, %c16], strides = [%c16, %c1]
        : !pto.tensor_view<?x?xf32>
    %pa = pto.partition_view %va, offsets = [%c0, %c0], sizes = [%c16, %c16]
        : !pto.tensor_view<?x?xf32> -> !pto.partition_tensor_view<16x16xf32>
    %po = pto.partition_view %vo, offsets = [%c0, %c0], sizes = [%c16, %c16]
        : !pto.tensor_view<?x?xf32> -> !pto.partition_tensor_view<16x16xf32>
    %t = pto.alloc_tile : !pto.tile_buf<loc=vec, dtype=f32, rows=16, cols=16, v_row=16,
        v_col=16, blayout=row_major, slayout=none_box, fractal=512, pad=0>
    pto.tload ins(%pa : !pto.partition_tensor_view<16x16xf32>) outs(%t : !pto.tile_buf<loc=vec,
        dtype=f32, rows=16, cols=16, v_row=16, v_col=16, blayout=row_major, slayout=none_box,
        fractal=512, pad=0>)
    scf.for %i = %c0 to %cnt step %c1 {
      pto.tadd ins(%t, %t : !pto.tile_buf<loc=vec, dtype=f32, rows=16, cols=16, v_row=16,
          v_col=16, blayout=row_major, slayout=none_box, fractal=512, pad=0>, !pto.tile_buf<
          loc=vec, dtype=f32, rows=16, cols=16, v_row=16, v_col=16, blayout=row_major,
          slayout=none_box, fractal=512, pad=0>) outs(%t : !pto.tile_buf<loc=vec, dtype=f32,
          rows=16, cols=16, v_row=16, v_col=16, blayout=row_major, slayout=none_box,
          fractal=512, pad=0>)
    }
    pto.tstore ins(%t : !pto.tile_buf<loc=vec, dtype=f32, rows=16, cols=16, v_row=16,
        v_col=16, blayout=row_major, slayout=none_box, fractal=512, pad=0>)
        outs(%po : !pto.partition_tensor_view<16x16xf32>)
    return
  }
}
"""


def test_data_dependent_control_flow_runs_interpreted() -> None:
    """A loop count read from GM (pto.load_scalar): no plan; every launch follows its data."""
    prog = pto.load(_SCALAR_READ)
    a = np.ones(256, np.float32)
    for n in (1, 3, 0, 2):
        out = np.zeros(256, np.float32)
        prog.k(a, np.array([n], np.int32), out)
        assert np.array_equal(out, a * 2.0 ** n)
    s = _stats(prog, "k")
    assert s.built == 0 and s.hits == 0 and "load_scalar" in s.why, s


def test_scalar_arguments_are_part_of_the_signature() -> None:
    sm = _module(ROOT / "examples" / "softmax.py", "example_softmax")
    prog = pto.load(sm.PTO_FILE)
    x = (np.random.default_rng(3).standard_normal((64, sm.COLS)) * 4).astype(np.float32)
    for rows in (64, 32, 64, 32, 64, 32):
        out = np.zeros_like(x)
        ref = np.zeros_like(x)
        prog.softmax(x, ref, rows, blocks=sm.blocks_for(rows), plans=False)
        prog.softmax(x, out, rows, blocks=sm.blocks_for(rows))
        assert out.tobytes() == ref.tobytes()
    s = _stats(prog, "softmax")
    assert s.built == 2 and s.hits == 2, s


def test_planned_flags_leave_the_interpreters_sync_log() -> None:
    """SET_FLAG / WAIT_FLAG run in their planned form (Instr.plan): the machine's sync log
    gets the records the interpreter writes, in order."""
    from ptoisa import grid

    prog = pto.load(ROOT / "examples" / "flash_softmax.pto")
    fn = "flash_softmax_double"

    def logged(on: bool) -> list[Any]:
        args = _flash(0)
        # the machine the launch reuses (its settings: the run's matmul accumulation)
        m = grid._launch_machine("a2a3", 1, {"matmul_accumulation": "f32"})
        grid._done(m)
        prog.run(fn, *args, plans=on)
        return list(m.sync_log or [])  # (a launch starts with an empty log)
    ref = logged(False)
    for _ in range(3):
        assert logged(True) == ref
    assert _stats(prog, fn).hits == 1 and len(ref) == 52


def test_a_launch_too_long_to_plan_runs_interpreted(monkeypatch: pytest.MonkeyPatch) -> None:
    from ptoisa import plans

    monkeypatch.setattr(plans, "MAX_STEPS", 10)
    prog = pto.load(ROOT / "examples" / "flash_softmax.pto")
    ref = _both_ways(prog, "flash_softmax_single", _flash(2))
    s = _stats(prog, "flash_softmax_single")
    assert s.built == 0 and s.hits == 0 and "more than 10" in s.why, s
    assert ref[1].any()


def test_replays_unbind_the_functions_tiles_only_where_the_plan_uses_them(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The 1-block short path unbinds the compiled function's tiles before a replay only
    where the plan uses them (Plan.resets: vec_add's TLOAD / TADD / TSTORE on them); a plan
    whose every call runs on a batch's own lane tiles (flash_softmax's loop, its flags) needs
    them in no state and leaves them as they are, and the launch machine's arena and
    placements with them (grid.run_one with fresh False: only its registers start anew). Either way,
    interleaved with launches on the general path (which unbind them and reset all of the
    machine first), every replay leaves the interpreter's bits."""
    from ptoisa.interp.compiler import Compiler

    resets = [0]
    real = Compiler.reset_tiles

    def counted(self: Compiler) -> None:
        resets[0] += 1
        real(self)
    monkeypatch.setattr(Compiler, "reset_tiles", counted)
    rng = np.random.default_rng(4)
    cases = [("flash_softmax", "flash_softmax_single", lambda: _flash(int(rng.integers(99))),
              False),
             ("vec_add", "vec_add", lambda: [rng.standard_normal(4096, dtype=np.float32)
                                             for _ in range(2)] + [np.zeros(4096, np.float32)],
              True)]
    for example, fn, args, uses in cases:
        prog = pto.load(ROOT / "examples" / f"{example}.pto")
        _both_ways(prog, fn, args(), runs=2)  # (interpreted, recorded)
        plan = next(p for p in prog.compiler("a2a3").function(fn)._plans.by_key.values()
                    if p is not None)
        assert plan.resets is uses, example
        for k in range(3):
            a = args()
            resets[0] = 0
            _both_ways(prog, fn, a, runs=1)  # (the general path, then a replay)
            assert resets[0] == (2 if uses else 1), (example, k)
            token = plan.machine._launch  # (renewed by each reset of the placements)
            prog.run(fn, *args())
            assert (plan.machine._launch is token) is not uses, (example, k)
        assert _stats(prog, fn).hits == 6


@pytest.mark.parametrize("fuse", [True, False])
def test_flash_softmax_division_written_straight_to_gm(fuse: bool,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """flash_softmax's loop body ends with TROWEXPANDDIV into its tile and the TSTORE of it,
    which nothing reads afterwards: the batch has the division write the store's GM window
    itself and the store only count the write (plan_loops._fuse_stores); with and without
    that (plan_loops.FUSE_STORES), on rows with NaNs, zeros and infinities, replays leave
    the interpreter's bits and the lanes count their GM write the same."""
    from ptoisa import plan_loops

    monkeypatch.setattr(plan_loops, "FUSE_STORES", fuse)
    prog = pto.load(ROOT / "examples" / "flash_softmax.pto")
    fn = "flash_softmax_single"
    for seed in range(3):
        args = _flash(seed)
        x = args[0].reshape(-1, 128)
        x[seed, 3], x[seed + 9, :], x[seed + 20, 7] = np.nan, -np.inf, np.inf
        _both_ways(prog, fn, args, runs=3)
    plan = next(p for p in prog.compiler("a2a3").function(fn)._plans.by_key.values()
                if p is not None)
    batch = plan.calls[0]
    cells = dict(zip(batch.__code__.co_freevars, batch.__closure__ or (), strict=True))
    calls, lanes = cells["calls"].cell_contents, cells["lm"].cell_contents
    assert (calls[-1].__qualname__ == "_counted_store.<locals>.call") is fuse
    prog.run(fn, *_flash(5))
    assert lanes.gm_writes == 1  # (the batch's one store, of every lane, counted either way)

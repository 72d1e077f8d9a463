"""Fast forms (``Instr.fast``): TLOAD, TMOV, TSTORE and the TMATMUL family run their run-time
rules and semantics in one step where nobody observes the machine, the semantics run once (one
block, or every block of a lockstep launch together) and the static rules passed. They must
leave every byte the general dispatch leaves, raise the errors it raises, and be taken where
they may (else they save nothing)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_copy_on_write_fuzz import _L1, _UB, BLOCKS, _inputs, _lazy_from, _ops, _program
from test_export import ROOT, _module

import ptoisa as pto
from ptoisa import BLayout, GlobalTensor, SLayout, Tile, TileType
from ptoisa.errors import PtoError
from ptoisa.isa.registry import REGISTRY

FAST = sorted(n for n, ins in REGISTRY.items() if ins.fast is not None)


def test_the_entries_with_fast_forms() -> None:
    assert set(FAST) >= {"TLOAD", "TMOV", "TSTORE", "TMATMUL", "TMATMUL_ACC", "TGEMV"}


@contextmanager
def _fast(monkeypatch: pytest.MonkeyPatch, on: bool) -> Iterator[dict[str, int]]:
    """Fast forms on (counting the uses each took) or off (the general dispatch only). The
    entries forget their resolved forms on the way in and out, and the static checks they
    remember on the way in (the first use of a type checks again)."""
    taken: dict[str, int] = {}
    for ins in REGISTRY.values():
        ins._passed.clear()
        ins._last_passed.clear()
    for name in FAST:
        ins = REGISTRY[name]
        orig = ins.fast

        def spy(i: Any, m: Any, vals: Any, params: Any, orig: Any = orig) -> bool:
            done = orig(i, m, vals, params)
            if done:
                taken[i.name] = taken.get(i.name, 0) + 1
            return done
        monkeypatch.setattr(ins, "fast", spy if on else None)
        ins._on.clear()
    try:
        yield taken
    finally:
        for name in FAST:
            REGISTRY[name]._on.clear()


def _run(monkeypatch: pytest.MonkeyPatch, on: bool, kernel: Any, **launch: Any
         ) -> tuple[tuple[np.ndarray, ...], dict[str, int]]:
    arrays = _inputs(launch.get("blocks", 1))
    with _fast(monkeypatch, on) as taken:
        pto.launch(kernel, *arrays, **launch)
    monkeypatch.undo()
    return arrays, taken


@pytest.mark.parametrize("lazy_min", [None, 0], ids=["boxed", "every-tile"])
@pytest.mark.parametrize("target", ["cpu", "a2a3", "a5"])
@settings(max_examples=150, deadline=None)
@given(ops=_ops())
def test_random_programs_leave_the_same_bytes(target: str, lazy_min: int | None,
                                              ops: list[tuple[Any, ...]]) -> None:
    """The copy-on-write fuzz's random programs (loads, moves, products and stores over
    overlapping GM rows, tiles lazy or not), with the fast forms and without; each runs twice
    in its launch (the second time every use is of types whose static rules passed)."""
    once = _program(ops)

    def kernel(*arrays: np.ndarray) -> None:
        once(*arrays)
        once(*arrays)
    mp = pytest.MonkeyPatch()
    with _lazy_from(lazy_min):
        fast, taken = _run(mp, True, kernel, target=target)
        slow, none = _run(mp, False, kernel, target=target)
    assert taken and not none
    for x, y in zip(fast, slow, strict=True):
        assert x.tobytes() == y.tobytes()


@pytest.mark.parametrize("target", ["cpu", "a2a3"])
@settings(max_examples=100, deadline=None)
@given(ops=_ops(), ub=st.lists(st.sampled_from(_UB), min_size=3, max_size=3),
       l1=st.lists(st.sampled_from(_L1), min_size=2, max_size=2), trips=st.integers(0, 2))
def test_placed_tiles_sharing_bytes_leave_the_same_bytes(target: str,
                                                         ops: list[tuple[Any, ...]],
                                                         ub: list[int], l1: list[int],
                                                         trips: int) -> None:
    """Manual mode, tiles placed over one another (one tile's load is another's bytes), in a
    loop or not."""
    once = _program(ops, ub, l1, trips=trips)

    def kernel(*arrays: np.ndarray) -> None:
        once(*arrays)
        once(*arrays)
    mp = pytest.MonkeyPatch()
    with _lazy_from(0):
        fast, taken = _run(mp, True, kernel, target=target, mode="manual")
        slow, _ = _run(mp, False, kernel, target=target, mode="manual")
    assert taken
    for x, y in zip(fast, slow, strict=True):
        assert x.tobytes() == y.tobytes()


@pytest.mark.parametrize("lockstep", [True, False])
@pytest.mark.parametrize("target", ["cpu", "a2a3"])
@settings(max_examples=100, deadline=None)
@given(ops=_ops())
def test_grids_of_blocks_leave_the_same_bytes(target: str, lockstep: bool,
                                              ops: list[tuple[Any, ...]]) -> None:
    """The fuzz's grid programs (blocks sharing A panels at uneven offsets, per-block valid
    rows): in lockstep the fast forms run once for all blocks (LaneBlocks, windows over the
    blocks' offsets), block by block once per block."""
    once = _program(ops, grid=True)

    def kernel(*arrays: np.ndarray) -> None:
        once(*arrays)
        once(*arrays)
    mp = pytest.MonkeyPatch()
    with _lazy_from(0):
        fast, taken = _run(mp, True, kernel, target=target, blocks=BLOCKS, lockstep=lockstep)
        slow, _ = _run(mp, False, kernel, target=target, blocks=BLOCKS, lockstep=lockstep)
    assert taken
    for x, y in zip(fast, slow, strict=True):
        assert x.tobytes() == y.tobytes()


# ---- errors: the same type and message either way --------------------------------------------

def _mat(dt: Any, r: int, c: int, **kw: Any) -> Tile:
    return Tile(TileType.Mat, dt, r, c, BLayout.ColMajor, None, SLayout.RowMajor, **kw)


def _gv(arr: np.ndarray, rows: int, cols: int, row_stride: int = 16) -> GlobalTensor:
    return GlobalTensor(arr, (1, 1, 1, rows, cols), (256, 256, 256, row_stride, 1))


def _twice_then_broken(use: Any, breaking: Any) -> None:
    """``use()`` twice (the second use of its types may take the fast form), then ``breaking()``
    (a change the run-time rules refuse), then ``use()`` again: the error case."""
    use()
    use()
    breaking()
    use()


def _load_not_covered(x: np.ndarray) -> None:
    t = Tile(TileType.Vec, np.float32, 16, 16, valid=(pto.Dyn(8), 16))
    # the 8-row view no longer covers the valid region
    _twice_then_broken(lambda: pto.TLOAD(t, _gv(x, 8, 16)), lambda: t.set_valid(rows=16))


def _store_not_covered(x: np.ndarray) -> None:
    t = Tile(TileType.Vec, np.float32, 16, 16, valid=(pto.Dyn(8), 16))
    pto.TLOAD(t, _gv(x, 16, 16))
    _twice_then_broken(lambda: pto.TSTORE(_gv(x, 8, 16), t), lambda: t.set_valid(rows=16))


def _store_read_only(x: np.ndarray) -> None:
    t = Tile(TileType.Vec, np.float32, 16, 16)
    pto.TLOAD(t, _gv(x, 16, 16))
    gm = [x]

    def read_only() -> None:
        gm[0] = x.copy()
        gm[0].flags.writeable = False
    _twice_then_broken(lambda: pto.TSTORE(_gv(gm[0], 16, 16), t), read_only)


def _cube(x: np.ndarray, valid_a: Any = None, acc_cols: Any = None
          ) -> tuple[Tile, Tile, Tile]:
    """Left 16x32 and Right 32x16 f16 tiles moved from Mat tiles loaded from ``x``, and their
    product in an f32 Acc tile (dynamic valid extents where given)."""
    h = x.astype(np.float16)
    a, b = _mat(np.float16, 16, 32), _mat(np.float16, 32, 16)
    left = pto.TileLeft(np.float16, 16, 32, valid=valid_a)
    right = pto.TileRight(np.float16, 32, 16)
    acc = pto.TileAcc(np.float32, 16, 16, valid=acc_cols)
    pto.TLOAD(a, _gv(h, 16, 32, 32))
    pto.TLOAD(b, _gv(h, 32, 16))
    pto.TMOV(left, a)
    pto.TMOV(right, b)
    pto.TMATMUL(acc, left, right)
    return left, right, acc


def _matmul_k_mismatch(x: np.ndarray) -> None:
    left, right, acc = _cube(x, valid_a=(16, pto.DYNAMIC))
    # k = 16 against 32 rows of B
    _twice_then_broken(lambda: pto.TMATMUL_ACC(acc, acc, left, right),
                       lambda: left.set_valid(cols=16))


def _acc_store_no_cols(x: np.ndarray) -> None:
    _, _, acc = _cube(x, acc_cols=(16, pto.DYNAMIC))
    out = np.zeros(256, np.float32)
    _twice_then_broken(lambda: pto.TSTORE(_gv(out, 16, 16), acc), lambda: acc.set_valid(cols=0))


def _move_dst_larger(x: np.ndarray) -> None:
    src = Tile(TileType.Vec, np.float32, 8, 16)
    dst = Tile(TileType.Vec, np.float32, 16, 16, valid=(pto.Dyn(8), 16))
    pto.TLOAD(src, _gv(x, 8, 16))
    _twice_then_broken(lambda: pto.TMOV(dst, src), lambda: dst.set_valid(rows=16))


#: case -> (kernel, target, what the message says)
ERRORS = {"tload view too small": (_load_not_covered, "a2a3", "covers 8x16"),
          "tstore view too small": (_store_not_covered, "a2a3", "covers 8x16"),
          "tstore read-only": (_store_read_only, "a5", "cannot be written"),
          "tmatmul k mismatch": (_matmul_k_mismatch, "a2a3", "k mismatch"),
          "acc store of no columns": (_acc_store_no_cols, "a2a3", "valid cols must be in"),
          "tmov dst larger than src": (_move_dst_larger, "cpu", "larger than src")}


def _error(monkeypatch: pytest.MonkeyPatch, on: bool, fn: Any, target: str
           ) -> tuple[type, str, dict[str, int]]:
    x = np.arange(1024, dtype=np.float32)
    with _fast(monkeypatch, on) as taken, pytest.raises(PtoError) as e:
        pto.launch(fn, x, target=target)
    monkeypatch.undo()
    return type(e.value), str(e.value), taken


@pytest.mark.parametrize("case", list(ERRORS))
def test_errors_are_the_same(case: str) -> None:
    """A use the fast form must not take (the run-time rules fail) raises what the general
    dispatch raises, after uses of the same types that it took."""
    fn, target, says = ERRORS[case]
    mp = pytest.MonkeyPatch()
    fast = _error(mp, True, fn, target)
    slow = _error(mp, False, fn, target)
    assert fast[:2] == slow[:2]
    assert says in fast[1]
    assert fast[2], "the good uses before the error took the fast form"


# ---- where they are taken ----------------------------------------------------------------------

def _chain(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> None:
    """benchmarks/scale.py's decode chain (the kernel measured for #15)."""
    _module(ROOT / "benchmarks" / "scale.py", "bench_scale").chain(a, b, c)


@pytest.mark.parametrize("target", ["cpu", "a2a3", "a5"])
def test_a_decode_chain_takes_them_and_matches_numpy(target: str,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """Every instruction of a bf16 decode chain (one block) after the first of its types
    takes its fast form (TLOAD on cpu keeps its own semantics, which pad); the result is the
    product in f32 as numpy forms it."""
    rng = np.random.default_rng(3)
    a = rng.standard_normal((4, 16, 64)).astype(ml_dtypes.bfloat16)
    b = rng.standard_normal((4, 64, 32)).astype(ml_dtypes.bfloat16)
    c = np.zeros((4, 16, 32), np.float32)
    with _fast(monkeypatch, True) as taken:
        pto.launch(_chain, a, b, c, target=target)
    loads = 0 if target == "cpu" else 2 * 4 - 2
    assert taken == {**({"TLOAD": loads} if loads else {}), "TMOV": 2 * 4 - 2, "TMATMUL": 3,
                     "TSTORE": 3}
    ref = np.matmul(a.astype(np.float32), b.astype(np.float32))
    np.testing.assert_allclose(c, ref, rtol=1e-5, atol=1e-5)


def test_lockstep_uses_take_them_and_observed_ones_do_not(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A launch of two blocks in lockstep (the same views in both: their results agree) takes
    the fast forms once for both blocks; an observed machine (an observer of every launch
    here) runs the general dispatch."""
    from ptoisa.observe import observing

    rng = np.random.default_rng(4)
    a = rng.standard_normal((2, 16, 64)).astype(ml_dtypes.bfloat16)
    b = rng.standard_normal((2, 64, 32)).astype(ml_dtypes.bfloat16)
    c = np.zeros((2, 16, 32), np.float32)
    with _fast(monkeypatch, True) as taken:
        pto.launch(_chain, a, b, c, target="a2a3", blocks=2)
    assert taken == {"TLOAD": 2, "TMOV": 2, "TMATMUL": 1, "TSTORE": 1}
    np.testing.assert_allclose(c, np.matmul(a.astype(np.float32), b.astype(np.float32)),
                               rtol=1e-5, atol=1e-5)
    seen: list[str] = []
    with _fast(monkeypatch, True) as taken, observing(lambda rec: seen.append(rec.ins.name)):
        pto.launch(_chain, a, b, c, target="a2a3")
    assert taken == {}
    assert len(seen) == 12


@pytest.mark.parametrize("target", ["cpu", "a2a3", "a5"])
def test_the_conformance_pack_gives_the_same_verdicts(target: str, shared_dir: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """The upstream pack (its later cases meet operand types earlier cases passed, so their
    loads, moves, stores and products take the fast forms): every verdict and its detail, an
    error message included, the same with and without them."""
    import io

    from ptoisa.conformance import run_pack

    root = shared_dir / "conformance"
    if not (root / "INDEX.json").is_file():
        pytest.skip(f"conformance pack not found at {root} (set PTOISA_SHARED)")
    runs = []
    for on in (True, False):
        with _fast(monkeypatch, on) as taken:
            summary = run_pack(root, target, out=io.StringIO())
        monkeypatch.undo()
        runs.append(([(v.case_id, v.status, v.detail) for v in summary.verdicts], dict(taken)))
    (fast, taken), (slow, none) = runs
    assert fast == slow
    assert taken.get("TLOAD", 0) + taken.get("TSTORE", 0) > 100 and not none


@pytest.mark.parametrize("target", ["cpu", "a2a3", "a5"])
def test_reference_tests_pass_again_through_the_fast_forms(target: str,
                                                           monkeypatch: pytest.MonkeyPatch
                                                           ) -> None:
    """Tests that check these instructions against numpy references (GM <-> tile round trips
    over every layout pair, dtype and partial valid region; Acc stores converting, with ReLU,
    a quant word, AtomicAdd; TMATMUL_ACC/_BIAS and the TGEMV family), each run twice on one
    machine: the second run's uses have types whose static rules passed, so they take the
    fast forms, and meet the same references."""
    mem = _module(ROOT / "tests" / "isa" / "test_memory_ops.py", "fast_forms_memory_ops")
    mat = _module(ROOT / "tests" / "isa" / "test_matrix.py", "fast_forms_matrix")
    with _fast(monkeypatch, True) as taken:
        m = pto.target(target)
        try:
            for _ in range(2):
                for kind in sorted(mem.TILE_KINDS):
                    for layout in (pto.Layout.ND, pto.Layout.DN, pto.Layout.NZ):
                        for dtype in ("f32", "f16", "i8"):
                            mem._round_trip(target, dtype, kind, layout, 32, 64, 32, 64)
                            if layout is not pto.Layout.NZ:
                                mem._round_trip(target, dtype, kind, layout, 32, 64, 17, 33)
                for test in (mem.test_tstore_acc_converts, mem.test_tstore_acc_atomic_add,
                             mem.test_tstore_acc_scalar_quant_word):
                    test(m)
        finally:
            pto.memory.pop(m)
        prev = pto.set_matmul_accumulation("exact")  # (the references of test_matrix.py)
        try:
            for tgt, ab, c in mat.CASES:
                if tgt == target:
                    for _ in range(2):
                        mat.test_tmatmul_acc_and_bias(tgt, ab, c)
                        mat.test_tgemv_family(tgt, ab, c)
        finally:
            pto.set_matmul_accumulation(prev)
    assert taken.get("TSTORE", 0) > 20 and taken.get("TMATMUL_ACC", 0) >= 2
    assert taken.get("TGEMV_ACC", 0) >= 1 and taken.get("TMATMUL_BIAS", 0) >= 1
    assert target == "cpu" or taken.get("TLOAD", 0) > 20

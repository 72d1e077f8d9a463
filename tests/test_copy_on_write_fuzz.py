"""Random programs over overlapping GM regions: a launch (loads read GM in place, results are
deferred, boxed tiles keep logical copies: the copy-on-write machinery of ptoisa/tile.py and
ptoisa/memory.py) must leave every GM byte as a plain machine does, which copies at every
TLOAD / TMOV and computes every result at once (the ISA's copy semantics, no laziness)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
import pytest
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st

import ptoisa as pto
from ptoisa import BLayout, GlobalTensor, SLayout, Tile, TileType, rowfuse

R, C = 16, 64   # Vec f32 tiles
M = 16          # the cube's f16 tiles (M x M), NZ / ZZ / ZN / NZ
VB = 4 * R      # GM: V, O are VB x C f32 per block; A is (4 + blocks) M x M f16
OFFSETS = (0, 4, 8, 16, 40)  # row offsets: regions overlap


def _ops() -> st.SearchStrategy[list[tuple[Any, ...]]]:
    vec = st.integers(0, 2)
    mat = st.integers(0, 1)
    off = st.sampled_from(OFFSETS)
    op = st.one_of(
        st.tuples(st.just("load_v"), vec, off),
        st.tuples(st.just("store_v"), vec, off),
        st.tuples(st.just("add"), vec, vec, vec),
        st.tuples(st.just("muls"), vec, vec),
        st.tuples(st.just("exp"), vec),
        st.tuples(st.just("mov_v"), vec, vec),
        st.tuples(st.just("load_m"), mat, off),
        st.tuples(st.just("store_a"), off),
        st.tuples(st.just("mov_left"), mat),
        st.tuples(st.just("mov_right"), mat),
        st.tuples(st.just("matmul"), st.booleans()),
        st.tuples(st.just("store_acc"), off),
        st.tuples(st.just("rowmax"), vec),
        st.tuples(st.just("rowsum"), vec),
        st.tuples(st.just("rowsub"), vec, vec),
        st.tuples(st.just("rv_adds")),
        st.tuples(st.just("rv_load"), off),
        st.tuples(st.just("sv_store"), off),
        st.tuples(st.just("sv_muls")),
        st.tuples(st.just("pv_load"), off),
        st.tuples(st.just("pv_add"), vec),
        st.tuples(st.just("pv_store"), off),
        st.tuples(st.just("pv_exp")),
        st.tuples(st.just("replace_v"), vec),
        st.tuples(st.just("replace_m"), mat),
        st.tuples(st.just("replace_at"), vec, vec),
        st.tuples(st.just("reshape"), vec),
        st.tuples(st.just("subview"), vec),
    )
    return st.lists(op, min_size=1, max_size=25)


def _program(ops: list[tuple[Any, ...]], ub: list[int] | None = None,
             l1: list[int] | None = None, grid: bool = False, trips: int = 0) -> Any:
    """The kernel of ``ops``. With ``ub`` / ``l1`` (manual mode) the three Vec tiles and the
    two Mat tiles are TASSIGNed there (the other tiles clear of them). With ``grid`` it runs
    over BLOCKS blocks: each reads and writes its own VB rows of V and O and its own scratch
    rows of A, and loads A panels that blocks share at offsets that differ between
    neighbours (a lockstep launch keeps them as shared LaneBlocks). With ``trips`` the ops
    run in ``pto.range(0, trips)``, their GM rows shifted by 4 per iteration."""
    def kernel(v: np.ndarray, a: np.ndarray, o: np.ndarray) -> None:
        b = pto.get_block_idx() if grid else 0
        vs = [Tile(TileType.Vec, np.float32, R, C) for _ in range(3)]
        ms = [Tile(TileType.Mat, np.float16, M, M, BLayout.ColMajor, None, SLayout.RowMajor)
              for _ in range(2)]
        half = Tile(TileType.Vec, np.float16, M, M)
        left, right = pto.TileLeft(np.float16, M, M), pto.TileRight(np.float16, M, M)
        acc = pto.TileAcc(np.float32, M, M)
        col = Tile(TileType.Vec, np.float32, R, 1, BLayout.ColMajor)
        tmp = Tile(TileType.Vec, np.float32, R, C)
        # views of the Vec tiles' bytes: another shape of vs[0], rows 8.. of vs[1]
        rv = Tile(TileType.Vec, np.float32, 32, 32)
        sv = Tile(TileType.Vec, np.float32, 8, C)
        # 10 valid rows of 16 (over a grid: 9 to 11, by block): loads, results and stores
        # cover part of the tile
        pv = Tile(TileType.Vec, np.float32, R, C,
                  valid=(pto.Dyn(9 + b % 3 if grid else 10), C))
        if ub is not None and l1 is not None:
            for t, addr in [*zip(vs, ub, strict=True), *zip(ms, l1, strict=True),
                            (half, 0x8000), (col, 0x9000), (tmp, 0xA000), (pv, 0xB000),
                            (left, 0), (right, 0), (acc, 0)]:
                pto.TASSIGN(t, addr)

        def gv(arr: np.ndarray, row: Any, rows: int, cols: int, stride: int = 0
               ) -> GlobalTensor:
            st = stride or cols
            return GlobalTensor(arr, (1, 1, 1, rows, cols), (arr.size,) * 3 + (st, 1),
                                offset=row * st)

        def vrow(off: int) -> Any:  # rows of V and O
            return b * VB + off

        def mrow(off: int) -> Any:  # an A panel (grid: block b reads panel (b + off//4) % 2)
            return ((b + off // 4) % 2) * M if grid else off

        def scratch(off: int) -> Any:  # the A rows store_a rewrites
            return 4 * M + b * M if grid else off

        for k, t in enumerate(vs):
            pto.TLOAD(t, gv(v, vrow(8 * k), R, C))
        for k, t in enumerate(ms):
            pto.TLOAD(t, gv(a, mrow(4 * k), M, M))
        pto.TMOV(left, ms[0])
        pto.TMOV(right, ms[1])
        pto.TMATMUL(acc, left, right)
        pto.TROWMAX(col, vs[0], tmp)
        pto.TRESHAPE(rv, vs[0])
        pto.TSUBVIEW(sv, vs[1], 8, 0)
        pto.TLOAD(pv, gv(v, vrow(20), R, C))

        def run_ops(sh: Any) -> None:  # sh: the rows every GM offset moves by
            for op in ops:
                kind = op[0]
                if kind == "load_v":
                    pto.TLOAD(vs[op[1]], gv(v, vrow(op[2] + sh), R, C))
                elif kind == "store_v":
                    pto.TSTORE(gv(v, vrow(op[2] + sh), R, C), vs[op[1]])
                elif kind == "add":
                    pto.TADD(vs[op[1]], vs[op[2]], vs[op[3]])
                elif kind == "muls":
                    pto.TMULS(vs[op[1]], vs[op[2]], 0.5)
                elif kind == "exp":
                    pto.TEXP(vs[op[1]], vs[op[1]])
                elif kind == "mov_v":
                    pto.TMOV(vs[op[1]], vs[op[2]])
                elif kind == "load_m":
                    pto.TLOAD(ms[op[1]], gv(a, mrow(op[2] + sh), M, M))
                elif kind == "store_a":  # rewrite rows of A while Mat tiles may read them
                    pto.TLOAD(half, gv(a, mrow(op[1] + sh), M, M))
                    pto.TADDS(half, half, 1.0)
                    pto.TSTORE(gv(a, scratch(op[1] + sh), M, M), half)
                elif kind == "mov_left":
                    pto.TMOV(left, ms[op[1]])
                elif kind == "mov_right":
                    pto.TMOV(right, ms[op[1]])
                elif kind == "matmul":
                    if op[1]:
                        pto.TMATMUL_ACC(acc, acc, left, right)
                    else:
                        pto.TMATMUL(acc, left, right)
                elif kind == "rowmax":
                    pto.TROWMAX(col, vs[op[1]], tmp)
                elif kind == "rowsum":
                    pto.TROWSUM(col, vs[op[1]], tmp)
                elif kind == "rowsub":  # deferred in a launch: reads col's storage in place
                    pto.TROWEXPANDSUB(vs[op[1]], vs[op[2]], col)
                elif kind == "rv_adds":
                    pto.TADDS(rv, rv, 1.0)
                elif kind == "rv_load":  # 32 x 32 of V (row stride C)
                    pto.TLOAD(rv, gv(v, vrow(pto.min(op[1] + sh, VB - 32)), 32, 32, C))
                elif kind == "sv_store":
                    pto.TSTORE(gv(v, vrow(op[1] + sh), 8, C), sv)
                elif kind == "sv_muls":
                    pto.TMULS(sv, sv, 0.5)
                elif kind == "pv_load":
                    pto.TLOAD(pv, gv(v, vrow(op[1] + sh), R, C))
                elif kind == "pv_add":
                    pto.TADD(pv, pv, vs[op[1]])
                elif kind == "pv_store":
                    pto.TSTORE(gv(v, vrow(op[1] + sh), R, C), pv)
                elif kind == "pv_exp":
                    pto.TEXP(pv, pv)
                elif kind == "replace_v":  # placed again where it is (a loop's alloc_tile)
                    if ub is not None:
                        pto.TASSIGN(vs[op[1]], ub[op[1]])
                elif kind == "replace_m":
                    if l1 is not None:
                        pto.TASSIGN(ms[op[1]], l1[op[1]])
                elif kind == "replace_at":  # placed where another Vec tile is placed
                    if ub is not None:
                        pto.TASSIGN(vs[op[1]], ub[op[2]])
                elif kind == "reshape":  # the views made again: what they held stays behind
                    pto.TRESHAPE(rv, vs[op[1]])
                elif kind == "subview":
                    pto.TSUBVIEW(sv, vs[op[1]], 8, 0)
                else:  # store_acc
                    pto.TSTORE(gv(o, vrow(op[1] + sh), M, M), acc)
        if trips:
            for i in pto.range(0, trips):
                run_ops(4 * i)
        else:
            run_ops(0)
        pto.TSTORE(gv(o, vrow(0), M, M), acc)
    return kernel


@contextmanager
def _lazy_from(elements: int | None = 0) -> Iterator[None]:
    """Launches read ND tiles lazily from ``elements`` elements (None: the default 16K);
    boxed ones always. With 0, chains of row-local instructions are deferred at any size too
    (ptoisa.rowfuse, normally from 1M elements)."""
    old, old_chain = pto.Machine.LAZY_MIN_ELEMENTS, rowfuse.MIN_ELEMENTS
    if elements is not None:
        pto.Machine.LAZY_MIN_ELEMENTS = elements
        rowfuse.MIN_ELEMENTS = elements
    try:
        yield
    finally:
        pto.Machine.LAZY_MIN_ELEMENTS = old
        rowfuse.MIN_ELEMENTS = old_chain


def _grid_equals_plain_machines(kernel: Any, target: str, **settings: Any) -> None:
    """Per block, a plain machine (block index set by hand) is the reference; a lockstep
    launch and a block-by-block launch (every tile lazy) must leave the same bytes."""
    plain = _inputs(BLOCKS)
    for blk in range(BLOCKS):
        with pto.target(target, **settings) as m:
            m.block_idx, m.block_num = blk, BLOCKS
            kernel(*plain)
    with _lazy_from(0):
        for lockstep in (True, False):
            got = _inputs(BLOCKS)
            pto.launch(kernel, *got, blocks=BLOCKS, target=target, lockstep=lockstep,
                       **settings)
            for x, y in zip(got, plain, strict=True):
                assert x.tobytes() == y.tobytes(), f"lockstep={lockstep}"


def _inputs(blocks: int = 1) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(12)
    v = (rng.standard_normal((blocks * VB, C)) * 2).astype(np.float32)
    a = rng.standard_normal(((4 + blocks) * M, M)).astype(np.float16)
    o = np.zeros((blocks * VB, C), np.float32)
    return v, a, o


@pytest.mark.parametrize("lazy_min", [None, 0], ids=["boxed", "every-tile"])
@pytest.mark.parametrize("target", ["cpu", "a2a3"])
@settings(max_examples=500, deadline=None)
@given(ops=_ops())
# rv, loaded in place, made a view of vs[1]: it used to keep (and write there) the load
@example(ops=[("rv_load", 0), ("reshape", 1), ("store_v", 1, 0)])
def test_launch_equals_a_machine_that_copies_at_once(target: str, lazy_min: int | None,
                                                      ops: list[tuple[Any, ...]]) -> None:
    """``lazy_min``: launches read boxed tiles lazily at any size and ND tiles from 16K
    elements (None); 0 makes every tile lazy, so the ND paths (deferred results, loads read in
    place, in-place overwrites) run here too."""
    kernel = _program(ops)
    lazy = _inputs()
    with _lazy_from(lazy_min):
        pto.launch(kernel, *lazy, target=target)
    plain = _inputs()
    with pto.target(target) as m:
        assert not m.lazy_loads
        kernel(*plain)
    for x, y in zip(lazy, plain, strict=True):
        assert x.tobytes() == y.tobytes()


BLOCKS = 3


@pytest.mark.parametrize("target", ["cpu", "a2a3"])
@settings(max_examples=300, deadline=None)
@given(ops=_ops())
def test_blocks_in_lockstep_and_one_by_one_equal_machines_that_copy(
        target: str, ops: list[tuple[Any, ...]]) -> None:
    """The grid program (see _program), lockstep and block by block."""
    _grid_equals_plain_machines(_program(ops, grid=True), target)


@settings(max_examples=60, deadline=None)
@given(ops=_ops())
def test_the_exported_program_leaves_the_same_bytes(ops: list[tuple[Any, ...]]) -> None:
    """The same random programs through ``pto.export`` (whose check runs the ``.pto`` program
    and the eager launch on copies and compares every array bit for bit): the interpreter's
    steps meet the copy-on-write machinery in their own order."""
    from ptoisa.text import parse, print_module

    kernel = _program(ops)
    plain = _inputs()
    with pto.target("a2a3"):
        kernel(*plain)
    with _lazy_from(0):
        text = pto.export(kernel, *_inputs(), target="a2a3")
        # and the program in the three textual forms (SSA and PTO-AS convert the ops that
        # can be written either way), each printed again from its own parse
        for form in ("dps", "ssa", "asm"):
            printed = print_module(parse(text), form)
            assert print_module(parse(printed), form) == printed
            got = _inputs()
            pto.load(printed, target="a2a3").kernel(*got)
            for x, y in zip(got, plain, strict=True):
                assert x.tobytes() == y.tobytes(), form


# ---- placed tiles that share bytes (TASSIGN): the barriers' aliasing paths ------------------

_UB = (0x0, 0x800, 0x1000, 0x2000, 0x3000)  # the Vec f32 16x64 tiles are 4 KiB: these overlap
_L1 = (0x0, 0x100, 0x200)                   # the Mat f16 16x16 tiles are 512 bytes


@pytest.mark.parametrize("target", ["cpu", "a2a3"])
@settings(max_examples=400, deadline=None)
@given(ops=_ops(), ub=st.lists(st.sampled_from(_UB), min_size=3, max_size=3),
       l1=st.lists(st.sampled_from(_L1), min_size=2, max_size=2))
# vs[1] moved from vs[0], half over it: a TMOV in place read vs[0]'s bytes, so writing vs[1]
# rewrote what it read (found by this test; see test_move_onto_overlapping_bytes)
@example(ops=[("mov_v", 1, 0), ("add", 1, 1, 0), ("sv_store", 0)], ub=[0, 2048, 0], l1=[0, 0])
# vs[1]'s deferred sum, placed on vs[2]'s bytes: it used to be written there, not where it was
@example(ops=[("add", 1, 0, 0), ("replace_at", 1, 2), ("store_v", 2, 0)],
         ub=[0, 0x1000, 0x2000], l1=[0, 0x200])
def test_placed_tiles_sharing_bytes(target: str, ops: list[tuple[Any, ...]], ub: list[int],
                                    l1: list[int]) -> None:
    """Manual mode: the Vec and Mat tiles sit at addresses that overlap (drawn per example),
    so one tile's load, move or result is another's bytes; a launch (every tile lazy) must
    leave every GM byte as a plain machine does."""
    kernel = _program(ops, ub, l1)
    plain = _inputs()
    with pto.target(target, mode="manual"):
        kernel(*plain)
    got = _inputs()
    with _lazy_from(0):
        pto.launch(kernel, *got, target=target, mode="manual")
    for x, y in zip(got, plain, strict=True):
        assert x.tobytes() == y.tobytes()


@pytest.mark.parametrize("lazy", [False, True], ids=["copies", "launch"])
@pytest.mark.parametrize("target", ["cpu", "a2a3"])
def test_move_onto_overlapping_bytes(target: str, lazy: bool) -> None:
    """TMOV to a tile placed half over its source, then TADD of the two: against a model of
    UB as one f32 array (the tiles are slices of it; numpy's assignment and ufuncs read
    overlapping operands before writing). A launch used to move in place and then rewrite
    the source's bytes under the value TADD had read from them."""
    v = np.arange(3 * R * C, dtype=np.float32).reshape(3 * R, C)
    o = np.zeros((R, C), np.float32)
    half = R * C // 2  # b sits half a tile (2 KiB) after a

    def kernel(v: np.ndarray, o: np.ndarray) -> None:
        a, b = Tile(TileType.Vec, np.float32, R, C), Tile(TileType.Vec, np.float32, R, C)
        pto.TASSIGN(a, 0)
        pto.TASSIGN(b, 4 * half)
        pto.TLOAD(a, GlobalTensor(v, (1, 1, 1, R, C), offset=0))
        pto.TLOAD(b, GlobalTensor(v, (1, 1, 1, R, C), offset=R * C))
        pto.TMOV(b, a)
        pto.TADD(b, b, a)
        pto.TSTORE(GlobalTensor(o, (1, 1, 1, R, C)), b)

    if lazy:
        with _lazy_from(0):
            pto.launch(kernel, v, o, target=target, mode="manual")
    else:
        with pto.target(target, mode="manual"):
            kernel(v, o)
    ub = np.zeros(3 * R * C, np.float32)
    ta, tb = ub[:R * C], ub[half:half + R * C]
    ta[...] = v[:R].reshape(-1)
    tb[...] = v[R:2 * R].reshape(-1)
    tb[...] = ta.copy()
    np.add(tb, ta, out=tb)
    assert o.reshape(-1).tobytes() == tb.tobytes()


@pytest.mark.parametrize("target", ["cpu", "a2a3"])
@settings(max_examples=200, deadline=None)
@given(ops=_ops(), ub=st.lists(st.sampled_from(_UB), min_size=3, max_size=3))
def test_placed_tiles_over_a_grid_of_blocks(target: str, ops: list[tuple[Any, ...]],
                                            ub: list[int]) -> None:
    """The grid program in manual mode with overlapping Vec tiles: lockstep and block by
    block against plain machines per block."""
    _grid_equals_plain_machines(_program(ops, ub, [0, 0x200], grid=True), target,
                                mode="manual")


@settings(max_examples=60, deadline=None)
@given(ops=_ops(), ub=st.lists(st.sampled_from(_UB), min_size=3, max_size=3),
       l1=st.lists(st.sampled_from(_L1), min_size=2, max_size=2))
def test_placed_programs_exported(ops: list[tuple[Any, ...]], ub: list[int], l1: list[int]
                                  ) -> None:
    """The placed programs through ``pto.export`` (``alloc_tile addr = ...``; the export's
    own check compares the .pto run with the eager launch bit for bit), and the program's
    run against a plain machine."""
    assume(not any(op[0].startswith("replace") for op in ops))  # (not exported: see tracer)
    kernel = _program(ops, ub, l1)
    with _lazy_from(0):
        text = pto.export(kernel, *_inputs(), target="a2a3")
        got = _inputs()
        pto.load(text, target="a2a3").kernel(*got)
    plain = _inputs()
    with pto.target("a2a3", mode="manual"):
        kernel(*plain)
    for x, y in zip(got, plain, strict=True):
        assert x.tobytes() == y.tobytes()


@settings(max_examples=80, deadline=None)
@given(ops=_ops())
def test_observers_change_nothing(ops: list[tuple[Any, ...]]) -> None:
    """The same programs with the sanitizer (``sync="auto"``: the programs have no flags, so
    the compiler's synchronisation is assumed; everything is initialised and in bounds) and
    with the cycle model watching: the same bytes, and nothing found."""
    from ptoisa.sanitizer import Sanitizer

    kernel = _program(ops, grid=True)
    plain = _inputs(BLOCKS)
    pto.launch(kernel, *plain, blocks=BLOCKS, target="a2a3")
    san = Sanitizer(sync="auto")
    watched = _inputs(BLOCKS)
    pto.launch(kernel, *watched, blocks=BLOCKS, target="a2a3", sanitize=san)
    assert not san.report.findings, san.report
    timed = _inputs(BLOCKS)
    rep = pto.launch(kernel, *timed, blocks=BLOCKS, target="a2a3", cycles=True)
    assert rep.total > 0 and not rep.errors
    for x, y, z in zip(plain, watched, timed, strict=True):
        assert x.tobytes() == y.tobytes() == z.tobytes()


# ---- the same ops inside a loop: state carried from one iteration to the next ---------------

@settings(max_examples=60, deadline=None)
@given(ops=_ops(), trips=st.integers(1, 3))
def test_ops_in_a_pto_range_loop(ops: list[tuple[Any, ...]], trips: int) -> None:
    """The ops (GM rows shifted by 4 per iteration) in ``pto.range``: an ``scf.for`` when
    exported, whose steps meet the lazy state the previous iteration left; eager launch and
    the exported program against a plain machine."""
    kernel = _program(ops, trips=trips)
    plain = _inputs()
    with pto.target("a2a3"):
        kernel(*plain)
    with _lazy_from(0):
        got = _inputs()
        pto.launch(kernel, *got, target="a2a3")
        for x, y in zip(got, plain, strict=True):
            assert x.tobytes() == y.tobytes(), "eager launch"
        text = pto.export(kernel, *_inputs(), target="a2a3")
        assert "scf.for" in text or trips == 1 or not ops
        got = _inputs()
        pto.load(text, target="a2a3").kernel(*got)
    for x, y in zip(got, plain, strict=True):
        assert x.tobytes() == y.tobytes(), ".pto"

"""The plain form of elementwise instructions (``Instr.plain``, ``Instr.try_plain``): a short
way for an unobserved call on small whole tiles, eager or in a compiled ``.pto`` step. It
must give the bits the full semantics give (and the numpy one-liner of the spec), take the
short way only where it may, and leave every check in force."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ptoisa as pto
from ptoisa import Tile, TileType
from ptoisa.errors import PtoError
from ptoisa.isa.registry import REGISTRY, Instr


def _nan_first(a: Any, b: Any, r: Any) -> Any:
    """vmax.md / vmin.md: ``(a > b) ? a : b`` (equal operands give b), and a NaN operand
    wins (a's when both are)."""
    return np.where(a != a, a, np.where(b != b, b, r))


# the spec of each instruction as numpy (integers wrap, NaN wins in max/min)
BINARY = {"TADD": lambda a, b: a + b, "TSUB": lambda a, b: a - b, "TMUL": lambda a, b: a * b,
          "TMAX": lambda a, b: _nan_first(a, b, np.where(a > b, a, b)),
          "TMIN": lambda a, b: _nan_first(a, b, np.where(a < b, a, b)), "TAND": lambda a, b: a & b,
          "TOR": lambda a, b: a | b}
UNARY = {"TABS": np.abs, "TNEG": lambda a: -a, "TNOT": lambda a: ~a}
# cpu follows the simulator's std::max / std::min (a NaN in src1 loses), written from
# <algorithm>: max(a, b) = a < b ? b : a, min(a, b) = b < a ? b : a; its entries have no plain
# form there
CPU_BINARY = {"TMAX": lambda a, b: np.where(a < b, b, a),
              "TMIN": lambda a, b: np.where(b < a, b, a)}
INT_ONLY = {"TAND", "TOR", "TNOT"}
DTYPES = ["f32", "f16", "bf16", "i32", "i16", "i8", "ui8", "ui16", "ui32"]
NP = {"f32": np.float32, "f16": np.float16, "i32": np.int32, "i16": np.int16, "i8": np.int8,
      "ui8": np.uint8, "ui16": np.uint16, "ui32": np.uint32}


def _np(dt: str) -> Any:
    if dt == "bf16":
        import ml_dtypes
        return ml_dtypes.bfloat16
    return NP[dt]


def _values(rng: np.random.Generator, dt: str, shape: tuple[int, int]) -> np.ndarray:
    t = np.dtype(_np(dt))
    if t.kind in "iu":
        info = np.iinfo(t)
        v = rng.integers(info.min, info.max, shape, endpoint=True, dtype=np.int64)
        v.flat[:4] = [info.min, info.max, 0, -1 if t.kind == "i" else 1]  # wrap-around cases
        return v.astype(t)
    v = (rng.standard_normal(shape) * 8).astype(t)
    if dt == "bf16":
        import ml_dtypes
        big = float(ml_dtypes.finfo(t).max)
    else:
        big = float(np.finfo(t).max)
    special = [np.inf, -np.inf, np.nan, -0.0, 0.0, big, -big]
    v.flat[:len(special)] = np.array(special).astype(t)
    return v


@contextmanager
def _count_plain(monkeypatch: pytest.MonkeyPatch, allow: bool = True) -> Iterator[list[int]]:
    """Count the uses that ran in the plain form (``allow=False``: none may). Instructions
    forget the static checks they remember (so the first use of a type checks again)."""
    for ins in REGISTRY.values():
        ins._passed.clear()
        ins._last_passed.clear()
    taken = [0]
    orig = Instr.try_plain

    def spy(self: Instr, m: Any, vals: Any, checked: bool) -> bool:
        if not allow:
            return False
        ok = orig(self, m, vals, checked)
        taken[0] += ok
        return ok
    with monkeypatch.context() as mp:
        mp.setattr(Instr, "try_plain", spy)
        yield taken


def _run(op: str, dt: str, target: str, alias: str, xs: list[np.ndarray], repeat: int
         ) -> tuple[list[np.ndarray], Any]:
    """Run ``op`` ``repeat`` times on fresh tiles (dst, src0[, src1]) holding ``xs``: the
    tiles' values after, or the error's type."""
    rows, cols = xs[0].shape
    with pto.target(target):
        tiles = [Tile(TileType.Vec, dt, rows, cols) for _ in xs]
        for t, x in zip(tiles, xs, strict=True):
            t.load_numpy(x)
        dst, *srcs = tiles
        if alias == "dst=src0":
            srcs[0] = dst
        elif alias == "src0=src1" and len(srcs) == 2:
            srcs[1] = srcs[0]
        try:
            for _ in range(repeat):
                ev = getattr(pto, op)(dst, *srcs)
                assert isinstance(ev, pto.Event) and ev.pipe is pto.Pipe.V
        except PtoError as e:
            return [], type(e)
        return [t.numpy() for t in tiles], None


SHAPES = [(8, 32), (16, 32), (4, 64), (1, 64)]  # rows of 32 bytes or more for every type


@settings(max_examples=150, deadline=None)
@given(op=st.sampled_from(sorted(BINARY) + sorted(UNARY)), dt=st.sampled_from(DTYPES),
       target=st.sampled_from(["cpu", "a2a3", "a5"]), shape=st.sampled_from(SHAPES),
       alias=st.sampled_from(["none", "dst=src0", "src0=src1"]), repeat=st.integers(1, 3),
       seed=st.integers(0, 2**16))
def test_plain_form_equals_the_semantics_and_the_spec(op, dt, target, shape, alias, repeat,
                                                      seed):
    if op in INT_ONLY and dt in ("f32", "f16", "bf16"):
        return
    rng = np.random.default_rng(seed)
    n = 3 if op in BINARY else 2
    xs = [_values(rng, dt, shape) for _ in range(n)]
    mp = pytest.MonkeyPatch()
    try:
        with _count_plain(mp) as taken:
            got, err = _run(op, dt, target, alias, xs, repeat)
        with _count_plain(mp, allow=False):
            want, want_err = _run(op, dt, target, alias, xs, repeat)
    finally:
        mp.undo()
    assert err == want_err
    if err is not None:  # a type the target does not have: the same error both ways
        assert taken[0] == 0
        return
    assert [g.tobytes() for g in got] == [w.tobytes() for w in want]
    # the spec, as numpy: repeat times dst = f(srcs) with the aliasing of the call
    vals = [x.copy() for x in xs]
    with np.errstate(all="ignore"):
        for _ in range(repeat):
            srcs = vals[1:]
            if alias == "dst=src0":
                srcs[0] = vals[0]
            elif alias == "src0=src1" and n == 3:
                srcs[1] = srcs[0]
            f = (target == "cpu" and CPU_BINARY.get(op)) or BINARY.get(op) or UNARY[op]
            vals[0] = np.asarray(f(*srcs)).astype(vals[0].dtype)
    assert got[0].tobytes() == vals[0].tobytes()
    # the first call checks the static rules; later calls with the same tiles run plain
    assert taken[0] == (0 if target == "cpu" and op in CPU_BINARY else repeat - 1)


def test_partial_valid_regions_and_lazy_tiles_take_the_full_semantics(monkeypatch):
    """A tile valid over part of its area, a lockstep launch and a launch's lazily loaded
    tiles are not the plain form's: the full semantics run (and check) them."""
    x = np.arange(256, dtype=np.float32).reshape(16, 16)
    with pto.target("a2a3"), _count_plain(monkeypatch) as taken:
        a = Tile(TileType.Vec, np.float32, 16, 16, valid=(pto.DYNAMIC, pto.DYNAMIC)).load_numpy(x)
        c = Tile(TileType.Vec, np.float32, 16, 16, valid=(pto.DYNAMIC, pto.DYNAMIC)).load_numpy(x)
        for _ in range(2):
            pto.TADD(c, c, a)
        assert taken[0] == 1
        a.set_valid(8, 16)
        with pytest.raises(PtoError, match="does not cover"):  # the run-time rule still runs
            pto.TADD(c, c, a)
        c.set_valid(8, 16)
        pto.TADD(c, c, a)
        pto.TADD(c, c, a)
        assert taken[0] == 1
        assert (c.numpy()[:8] == 5 * x[:8]).all() and (c.numpy()[8:] == 3 * x[8:]).all()
        c.set_valid(16, 16)
        a.set_valid(16, 16)
        pto.TADD(c, c, a)
        assert taken[0] == 2

    def kernel(x, y):
        b = pto.get_block_idx()
        t = Tile(TileType.Vec, np.float32, 16, 16)
        u = Tile(TileType.Vec, np.float32, 16, 16)
        g = pto.GlobalTensor(x, (1, 1, 1, 16, 16), offset=b * 256)
        pto.TLOAD(t, g)
        pto.TLOAD(u, g)
        pto.TADD(u, u, t)
        pto.TADD(u, u, t)
        pto.TSTORE(pto.GlobalTensor(y, (1, 1, 1, 16, 16), offset=b * 256), u)

    xs = np.arange(4 * 256, dtype=np.float32)
    for blocks in (1, 4):
        y = np.zeros_like(xs)
        with _count_plain(monkeypatch) as taken:
            pto.launch(kernel, xs, y, blocks=blocks)
        np.testing.assert_array_equal(y[:blocks * 256], 3 * xs[:blocks * 256])
        # one block: the loads are copies at this size; the first add checks its new tiles'
        # types, the second runs plain. Four blocks run in lockstep (one call for all), where
        # the plain form does not apply
        assert taken[0] == (1 if blocks == 1 else 0)


def test_static_rules_are_not_skipped(monkeypatch):
    """The static check is remembered for the very operands of the last call on one target
    only: other tiles, another target, another permissiveness are checked again."""
    add = REGISTRY["TADD"]
    dts = [d for d in DTYPES if _legal(add, "cpu", d) and not _legal(add, "a2a3", d)]
    assert dts  # (i8, ui8 ... : the cpu simulator's, not A2/A3's)
    x = np.ones((16, 16), np.float32)
    with pto.target("a2a3"):
        a = Tile(TileType.Vec, np.float32, 16, 16).load_numpy(x)
        c = Tile(TileType.Vec, np.float32, 16, 16).load_numpy(x)
        m = Tile(TileType.Mat, np.float32, 16, 16)
        pto.TADD(c, c, a)
        pto.TADD(c, c, a)
        with pytest.raises(PtoError):
            pto.TADD(c, c, m)  # a Mat operand
        with pytest.raises(PtoError):
            pto.TADD(c, c, m)
    for dt in dts[:2]:
        with pto.target("cpu"):
            a = Tile(TileType.Vec, dt, 16, 64)
            c = Tile(TileType.Vec, dt, 16, 64)
            pto.TADD(c, c, a)
            pto.TADD(c, c, a)
        with pto.target("a2a3"), pytest.raises(PtoError, match="not supported"):
            pto.TADD(c, c, a)


def _legal(ins: Instr, target: str, dt: str) -> bool:
    from ptoisa.tile import tile_spec

    spec = tile_spec(TileType.Vec, dt, 16, 64)
    try:
        ins.check_types(target, {"dst": spec, "src0": spec, "src1": spec})
    except PtoError:
        return False
    return True


def test_placed_tiles_sharing_bytes_run_plain_as_the_semantics(monkeypatch):
    """Manual mode: dst placed over part of a source (numpy buffers the overlap as the
    semantics' compute-then-write does)."""
    rng = np.random.default_rng(5)
    xs = [rng.standard_normal((16, 16)).astype(np.float32) for _ in range(2)]

    def run(allow: bool) -> tuple[np.ndarray, int]:
        with pto.target("a2a3", mode="manual"), _count_plain(monkeypatch, allow) as taken:
            a = Tile(TileType.Vec, np.float32, 16, 16)
            b = Tile(TileType.Vec, np.float32, 16, 16)
            c = Tile(TileType.Vec, np.float32, 16, 16)
            pto.TASSIGN(a, 0)
            pto.TASSIGN(b, 0x400)
            pto.TASSIGN(c, 0x200)  # rows 8.. of a and rows ..8 of b
            a.load_numpy(xs[0])
            b.load_numpy(xs[1])
            before = [a.numpy(), b.numpy()]
            for _ in range(3):
                pto.TSUB(c, a, b)
            return np.concatenate([*before, c.numpy(), a.numpy(), b.numpy()]), taken[0]

    got, n = run(True)
    want, _ = run(False)
    assert n == 2 and got.tobytes() == want.tobytes()


PROGRAM = """
module {
  func.func @k(%a: !pto.ptr<T>, %b: !pto.ptr<T>, %n: index) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c16 = arith.constant 16 : index
    %va = pto.make_tensor_view %a, shape = [%c16, %c16], strides = [%c16, %c1] : TV
    %pa = pto.partition_view %va, offsets = [%c0, %c0], sizes = [%c16, %c16] : TV -> PV
    %vb = pto.make_tensor_view %b, shape = [%c16, %c16], strides = [%c16, %c1] : TV
    %pb = pto.partition_view %vb, offsets = [%c0, %c0], sizes = [%c16, %c16] : TV -> PV
    %ta = pto.alloc_tile : TB
    %tb = pto.alloc_tile : TB
    %tc = pto.alloc_tile : TB
    pto.tload ins(%pa : PV) outs(%ta : TB)
    pto.tload ins(%pb : PV) outs(%tb : TB)
    scf.for %i = %c0 to %n step %c1 {
      pto.tmul ins(%ta, %tb : TB, TB) outs(%tc : TB)
      pto.tsub ins(%tc, %ta : TB, TB) outs(%tb : TB)
      pto.tmax ins(%tb, %ta : TB, TB) outs(%ta : TB)
      pto.tadd ins(%ta, %tb : TB, TB) outs(%ta : TB)
    }
    pto.tstore ins(%ta : TB) outs(%pa : PV)
    pto.tstore ins(%tb : TB) outs(%pb : PV)
    return
  }
}
"""


@pytest.mark.parametrize("dt, np_dt", [("f32", np.float32), ("f16", np.float16),
                                       ("i32", np.int32), ("i16", np.int16)])
def test_pto_steps_run_plain_with_the_same_bits(dt, np_dt, monkeypatch):
    """A compiled ``.pto`` loop of elementwise ops: the plain steps give the bits of the full
    semantics, and of numpy."""
    text = (PROGRAM.replace("TV", f"!pto.tensor_view<?x?x{dt}>")
            .replace("PV", f"!pto.partition_tensor_view<16x16x{dt}>")
            .replace("TB", f"!pto.tile_buf<loc=vec, dtype={dt}, rows=16, cols=16, v_row=16, "
                           "v_col=16, blayout=row_major, slayout=none_box, fractal=512, pad=0>")
            .replace("!pto.ptr<T>", f"!pto.ptr<{dt}>"))
    rng = np.random.default_rng(1)
    x = (rng.standard_normal((16, 16)) * 3).astype(np_dt)
    y = (rng.standard_normal((16, 16)) * 3).astype(np_dt)
    outs = []
    for allow in (True, False):
        a, b = x.copy(), y.copy()
        with _count_plain(monkeypatch, allow) as taken:
            pto.load(text, target="a2a3").k(a, b, 5)  # (compiled here: its steps see the spy)
        outs.append((a, b, taken[0]))
    (a1, b1, n1), (a2, b2, _) = outs
    # 5 x 4 ops; the first tmul writes %tc, which has no storage yet: the full semantics
    assert n1 == 19 and a1.tobytes() == a2.tobytes() and b1.tobytes() == b2.tobytes()
    ra, rb = x.copy(), y.copy()
    with np.errstate(all="ignore"):
        for _ in range(5):
            rc = ra * rb
            rb = rc - ra
            ra = np.maximum(rb, ra)
            ra = ra + rb
    assert a1.tobytes() == ra.tobytes() and b1.tobytes() == rb.tobytes()


@settings(max_examples=60, deadline=None)
@given(ops=st.lists(st.tuples(st.sampled_from(["full", "rows", "cols", "none"]),
                              st.integers(0, 16), st.integers(0, 16)), max_size=8))
def test_whole_flag_follows_the_valid_region(ops):
    """``Tile._whole`` (read by the plain form) says whether the valid region is the whole
    tile after any sequence of valid-region changes, and for a lockstep block's part."""
    t = Tile(TileType.Vec, np.float32, 16, 16, valid=(pto.DYNAMIC, pto.DYNAMIC))
    for kind, r, c in ops:
        if kind == "full":
            t.set_valid(16, 16)
        elif kind == "rows":
            t.set_valid(r, None)
        elif kind == "cols":
            t.set_valid(None, c)
        assert t._whole == (t.valid_row == 16 and t.valid_col == 16)
    t._set_valid(np.array([16, 16]), np.array([16, 3]))
    assert not t._whole
    t._set_valid(np.array([16, 16]), np.array([16, 16]))
    assert t._whole


def test_remembered_checks_keep_no_tile_alive():
    """What an instruction remembers of its last check is types, not operands: a dropped
    tile is gone (the buffers' accounting counts live tiles)."""
    import gc
    import weakref

    with pto.target("a2a3"):
        a = Tile(TileType.Vec, np.float32, 16, 16)
        c = Tile(TileType.Vec, np.float32, 16, 16)
        pto.TEXPANDS(a, 1.0)
        pto.TADD(c, a, a)
        refs = [weakref.ref(a), weakref.ref(c)]
        del a, c
        gc.collect()
        assert all(r() is None for r in refs)


SCALAR = {"TADDS": lambda a, s: a + s, "TSUBS": lambda a, s: a - s, "TMULS": lambda a, s: a * s,
          "TMAXS": lambda a, s: _nan_first(a, s, np.where(a > s, a, s)),
          "TMINS": lambda a, s: _nan_first(a, s, np.where(a < s, a, s)),
          "TANDS": lambda a, s: a & s, "TORS": lambda a, s: a | s}


def _as_type(s: Any, t: np.dtype) -> Any:
    """The scalar in the tile's element type, as the C++ conversion (int -> float rounds to
    nearest, float -> int truncates and wraps)."""
    if t.kind == "f" or t.kind == "V" or t == np.dtype(_np("bf16")):
        return np.array(s, np.float64).astype(t)[()]
    bits = t.itemsize * 8
    return np.array([int(s) & ((1 << bits) - 1)], f"u{t.itemsize}").view(t)[0]


@settings(max_examples=150, deadline=None)
@given(op=st.sampled_from(sorted(SCALAR)), dt=st.sampled_from(DTYPES),
       target=st.sampled_from(["cpu", "a2a3", "a5"]), shape=st.sampled_from(SHAPES),
       scalar=st.one_of(st.integers(-300, 300), st.sampled_from([2**31 - 1, -2**31, 70000]),
                        st.floats(-1e6, 1e6, allow_nan=False), st.sampled_from([0.5, -2.5, 1.0])),
       in_place=st.booleans(), seed=st.integers(0, 2**16))
def test_tile_scalar_plain_form_converts_the_scalar_as_the_semantics(op, dt, target, shape,
                                                                      scalar, in_place, seed):
    if op in ("TANDS", "TORS") and dt in ("f32", "f16", "bf16"):
        return
    rng = np.random.default_rng(seed)
    xs = [_values(rng, dt, shape) for _ in range(2)]

    def run(allow: bool) -> tuple[Any, list[bytes], int]:
        mp = pytest.MonkeyPatch()
        try:
            with _count_plain(mp, allow) as taken, pto.target(target):
                dst, src = (Tile(TileType.Vec, dt, *shape).load_numpy(x) for x in xs)
                if in_place:
                    src = dst
                try:
                    with np.errstate(over="ignore"):  # (70000 as f16 is inf, and says so)
                        for _ in range(2):
                            getattr(pto, op)(dst, src, scalar)
                except PtoError as e:
                    return type(e), [], taken[0]
                return None, [dst.numpy().tobytes(), src.numpy().tobytes()], taken[0]
        finally:
            mp.undo()

    err, got, n = run(True)
    want_err, want, _ = run(False)
    assert err == want_err and got == want
    if err is not None:
        return
    assert n == 1  # the second call (the first checks its types)
    t = np.dtype(_np(dt))
    with np.errstate(all="ignore"):
        s = _as_type(scalar, t)
        v = xs[0] if in_place else xs[1]
        for _ in range(2 if in_place else 1):  # dst = src op s, twice
            v = np.asarray(SCALAR[op](v, s)).astype(t)
    assert got[0] == v.tobytes()


@pytest.mark.parametrize("target", ["cpu", "a2a3"])
def test_sources_larger_than_dst_take_the_full_semantics(target, monkeypatch):
    """Whole tiles of different shapes: TADD reads the sources' top-left part (the plain
    form, one shape for all, does not apply); TADDS's valid regions must match on the NPUs
    (the target's rule still runs and fails), and on cpu it reads the top-left part too."""
    x = np.arange(32 * 32, dtype=np.float32).reshape(32, 32)
    with pto.target(target), _count_plain(monkeypatch) as taken:
        big = Tile(TileType.Vec, np.float32, 32, 32).load_numpy(x)
        small = Tile(TileType.Vec, np.float32, 16, 32).load_numpy(np.zeros((16, 32), np.float32))
        for _ in range(2):
            pto.TADD(small, big, big)
        np.testing.assert_array_equal(small.numpy(), 2 * x[:16])
        if target == "a2a3":
            with pytest.raises(PtoError, match="must equal dst"):
                pto.TADDS(small, big, 1.0)
        else:
            for _ in range(2):
                pto.TADDS(small, big, 1.0)
            np.testing.assert_array_equal(small.numpy(), x[:16] + 1)
        assert taken[0] == 0


def test_signed_zero_scalars_keep_their_sign() -> None:
    """0.0 and -0.0 compare equal (one key of the plain form's scalar cache): after a -0.0
    use, a +0.0 scalar is still +0.0 (TMAXS on a whole tile of zeros returns the scalar on
    ties, tile_vs_vpto.py's test_signed_zero_ties)."""
    from ptoisa import memory

    m = pto.target("a5")
    try:
        src = Tile(TileType.Vec, np.float32, 1, 64)
        dst = Tile(TileType.Vec, np.float32, 1, 64)
        src.load_numpy(np.array([[0.0, -0.0] * 32], np.float32))
        for z in (0.0, -0.0, 0.0, -0.0, 0.0):
            pto.TMAXS(dst, src, np.float32(z))
            assert (np.signbit(dst.numpy()) == np.signbit(np.float32(z))).all(), z
    finally:
        memory.pop(m)

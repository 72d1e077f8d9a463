"""Independent loop iterations of an execution plan run as one batch (ptoisa/plan_loops.py):
a batched loop leaves the interpreter's bits (GM, the flags' sync log, the tiles the rest of
the launch reads), and a loop with a carried tile, overlapping GM writes, iterations that
differ (a scalar from the induction variable, a branch on it) runs as recorded, saying why.
The expectations are numpy's own maths of the kernels and the interpreter's bytes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

import ptoisa as pto
from ptoisa import plans
from ptoisa.observe import observing

ROOT = Path(__file__).resolve().parent.parent
N = 8  # iterations

_T = ("!pto.tile_buf<loc=vec, dtype=f32, rows=16, cols=16, v_row=16, v_col=16, "
      "blayout=row_major, slayout=none_box, fractal=512, pad=0>")
_V = "!pto.partition_tensor_view<16x16xf32>"
_TV = "!pto.tensor_view<?x?xf32>"


def _kernel(body: str = "pto.tadd ins(%x, %bias : !T, !T) outs(%y : !T)",
            out_row: str = "%r", before: str = "") -> str:
    """y_k = body(x_k, bias) for 8 row blocks of a (128 x 16) a, stored at rows ``out_row``
    of out; the last y also to ``last`` after the loop (a tile the loop leaves)."""
    return f"""
!T = {_T}
module {{
  func.func @k(%a: !pto.ptr<f32>, %b: !pto.ptr<f32>, %out: !pto.ptr<f32>,
               %last: !pto.ptr<f32>) {{
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c8 = arith.constant {N} : index
    %c16 = arith.constant 16 : index
    %c128 = arith.constant {16 * N} : index
    %va = pto.make_tensor_view %a, shape = [%c128, %c16], strides = [%c16, %c1] : {_TV}
    %vb = pto.make_tensor_view %b, shape = [%c16, %c16], strides = [%c16, %c1] : {_TV}
    %vo = pto.make_tensor_view %out, shape = [%c128, %c16], strides = [%c16, %c1] : {_TV}
    %vl = pto.make_tensor_view %last, shape = [%c16, %c16], strides = [%c16, %c1] : {_TV}
    %bias = pto.alloc_tile : !T
    %x = pto.alloc_tile : !T
    %y = pto.alloc_tile : !T
    %pb = pto.partition_view %vb, offsets = [%c0, %c0], sizes = [%c16, %c16] : {_TV} -> {_V}
    pto.tload ins(%pb : {_V}) outs(%bias : !T)
    {before}
    scf.for %k = %c0 to %c8 step %c1 {{
      %r = arith.muli %k, %c16 : index
      %pa = pto.partition_view %va, offsets = [%r, %c0], sizes = [%c16, %c16] : {_TV} -> {_V}
      pto.tload ins(%pa : {_V}) outs(%x : !T)
      {body}
      %po = pto.partition_view %vo, offsets = [{out_row}, %c0], sizes = [%c16, %c16]
          : {_TV} -> {_V}
      pto.tstore ins(%y : !T) outs(%po : {_V})
    }}
    %pl = pto.partition_view %vl, offsets = [%c0, %c0], sizes = [%c16, %c16] : {_TV} -> {_V}
    pto.tstore ins(%y : !T) outs(%pl : {_V})
    return
  }}
}}
"""


def _args() -> list[np.ndarray]:
    rng = np.random.default_rng(5)
    return [rng.standard_normal(16 * 16 * N, dtype=np.float32),
            rng.standard_normal(256, dtype=np.float32),
            np.zeros(16 * 16 * N, np.float32), np.zeros(256, np.float32)]


def _stats(prog: pto.Program, name: str = "k") -> Any:
    return prog.compiler("a2a3").function(name)._plans.stats  # type: ignore[attr-defined]


def _runs(prog: pto.Program, name: str, args: list[np.ndarray], runs: int = 4
          ) -> tuple[list[np.ndarray], list[list[np.ndarray]]]:
    """The interpreter's arrays, and those of ``runs`` launches with plans (first
    interpreted, the second records, the others replay)."""
    ref = [a.copy() for a in args]
    prog.run(name, *ref, plans=False)
    got = []
    for _ in range(runs):
        g = [a.copy() for a in args]
        prog.run(name, *g)
        got.append(g)
    return ref, got


def test_an_independent_loop_runs_as_one_batch() -> None:
    """The iterations run together; every replay leaves numpy's sums and the interpreter's
    bytes, the tile the loop leaves (y of the last iteration) included; a tile the loop
    only reads (bias, loaded before it) is the same in every iteration."""
    prog = pto.load(_kernel())
    args = _args()
    ref, got = _runs(prog, "k", args)
    a, b = args[0].reshape(N, 16, 16), args[1].reshape(16, 16)
    assert np.array_equal(ref[2].reshape(N, 16, 16), a + b)
    assert np.array_equal(ref[3].reshape(16, 16), a[-1] + b)
    for g in got:
        assert all(x.tobytes() == y.tobytes() for x, y in zip(g, ref, strict=True))
    s = _stats(prog)
    assert s.built == 1 and s.hits == 2 and s.batched == 1 and not s.why_loop, s


def _not_batched(src: str, why: str) -> None:
    prog = pto.load(src)
    ref, got = _runs(prog, "k", _args())
    for g in got:
        assert all(x.tobytes() == y.tobytes() for x, y in zip(g, ref, strict=True))
    s = _stats(prog)
    assert s.built == 1 and s.hits == 2 and s.batched == 0 and why in s.why_loop, s
    assert "scf.for" in s.why_loop


def test_a_carried_tile_is_not_batched() -> None:
    """y accumulates across iterations (read before the iteration writes it)."""
    _not_batched(_kernel("pto.tadd ins(%x, %y : !T, !T) outs(%y : !T)",
                         before=f"pto.tload ins(%pb : {_V}) outs(%y : !T)"),
                 "tile %y carries a value between iterations")


def test_overlapping_gm_writes_are_not_batched() -> None:
    """Every iteration stores to the same rows: the last one's must win."""
    _not_batched(_kernel(out_row="%c0"), "iterations write GM bytes another iteration")


def test_a_scalar_from_the_induction_variable_is_not_batched() -> None:
    body = ("%ki = arith.index_cast %k : index to i32\n"
            "      %kf = arith.sitofp %ki : i32 to f32\n"
            "      pto.tadds ins(%x, %kf : !T, f32) outs(%y : !T)")
    _not_batched(_kernel(body), "changes between iterations")


def test_a_branch_on_the_induction_variable_is_not_batched() -> None:
    body = ("%first = arith.cmpi eq, %k, %c0 : index\n"
            "      scf.if %first {\n"
            "        pto.tadd ins(%x, %bias : !T, !T) outs(%y : !T)\n"
            "      } else {\n"
            "        pto.tsub ins(%x, %bias : !T, !T) outs(%y : !T)\n"
            "      }")
    _not_batched(_kernel(body), "iterations run different instructions")


def test_a_tile_read_before_anything_writes_it_is_not_batched() -> None:
    """A loop-invariant tile nobody wrote before the loop (its poison): run as recorded."""
    _not_batched(_kernel("pto.tadd ins(%x, %z : !T, !T) outs(%y : !T)",
                         before="%z = pto.alloc_tile : !T"), "before anything writes it")


@pytest.mark.parametrize("fn", ["flash_softmax_single", "flash_softmax_double"])
def test_flash_softmax_batched_leaves_the_interpreters_bits_and_flags(fn: str) -> None:
    """examples/flash_softmax.pto: 8 (single) / 4 (double, two tiles) independent
    iterations with their flags: the same GM bytes as the interpreter and as plans without
    batches, and the same sync log (the flags of every iteration, in order)."""
    from ptoisa import grid

    prog = pto.load(ROOT / "examples" / "flash_softmax.pto")
    x = np.random.default_rng(7).standard_normal(8 * 16 * 128, dtype=np.float32)

    def launch(**kw: Any) -> tuple[bytes, list[Any]]:
        # the machine the launch reuses (its settings: the run's matmul accumulation)
        m = grid._launch_machine("a2a3", 1, {"matmul_accumulation": "f32"})
        grid._done(m)
        p = np.zeros_like(x)
        prog.run(fn, x, p, **kw)
        return p.tobytes(), list(m.sync_log or [])  # (a launch starts with an empty log)

    ref = launch(plans=False)
    z = x.reshape(-1, 128).astype(np.float64)
    e = np.exp(z - z.max(axis=1, keepdims=True))
    want = e / e.sum(axis=1, keepdims=True)
    got = np.frombuffer(ref[0], np.float32).reshape(-1, 128)
    assert np.allclose(got, want, rtol=1e-5, atol=1e-7)
    assert len(ref[1]) > 8
    for _ in range(4):
        assert launch() == ref
    s = _stats(prog, fn)
    assert s.hits == 2 and s.batched == 1 and not s.why_loop, s


def test_batches_off_leave_the_same_bits(monkeypatch: pytest.MonkeyPatch) -> None:
    prog = pto.load(ROOT / "examples" / "flash_softmax.pto")
    x = np.random.default_rng(8).standard_normal(8 * 16 * 128, dtype=np.float32)
    outs = []
    for on in (True, False):
        monkeypatch.setattr(plans, "BATCH_LOOPS", on)
        fresh = pto.load(ROOT / "examples" / "flash_softmax.pto")
        for _ in range(3):
            p = np.zeros_like(x)
            fresh.run("flash_softmax_double", x, p)
        outs.append(p.tobytes())
        assert _stats(fresh, "flash_softmax_double").batched == (1 if on else 0)
    p = np.zeros_like(x)
    prog.run("flash_softmax_double", x, p, plans=False)
    assert outs[0] == outs[1] == p.tobytes()


def test_an_observed_launch_of_a_batched_loop_runs_interpreted() -> None:
    """The sanitizer and observers see every iteration's instructions: no plan, no batch."""
    prog = pto.load(_kernel())
    for _ in range(3):
        prog.k(*_args())
    assert _stats(prog).hits == 1 and _stats(prog).batched == 1
    seen: list[str] = []
    with observing(lambda rec: seen.append(rec.ins.name)):
        prog.k(*_args())
    assert seen.count("TADD") == N and seen.count("TSTORE") == N + 1
    rep = prog.k(*_args(), sanitize=True)
    assert rep is not None
    assert _stats(prog).hits == 1 and "observed" in _stats(prog).why


# ---- random loop bodies: batched or not, the interpreter's bits ----------------------------

_T1 = ("!pto.tile_buf<loc=vec, dtype=f32, rows=16, cols=1, v_row=16, v_col=1, "
       "blayout=col_major, slayout=none_box, fractal=512, pad=0>")
_FULL = ("x", "bias", "u", "v", "w")
_TEMPS = ("u", "v", "w")


def _op_text(op: tuple[str, ...]) -> str:
    kind, name, dst, *src = op
    if kind == "bin":
        return f"pto.{name} ins(%{src[0]}, %{src[1]} : !T, !T) outs(%{dst} : !T)"
    if kind == "un":
        return f"pto.{name} ins(%{src[0]} : !T) outs(%{dst} : !T)"
    if kind == "scalar":
        return f"pto.{name} ins(%{src[0]}, %half : !T, f32) outs(%{dst} : !T)"
    if kind == "rowred":
        return f"pto.{name} ins(%{src[0]}, %tmp : !T, !T) outs(%rw : !R)"
    return f"pto.{name} ins(%{src[0]}, %rw : !T, !R) outs(%{dst} : !T)"  # rowexp


def _random_kernel(ops: list[tuple[str, ...]], stored: str, left: str, same_rows: bool) -> str:
    body = "\n      ".join(_op_text(op) for op in ops)
    init = "\n    ".join([f"pto.tload ins(%pb : {_V}) outs(%{t} : !T)" for t in _TEMPS]
                         + ["pto.trowmax ins(%bias, %tmp : !T, !T) outs(%rw : !R)"])
    src = _kernel(body + f"\n      pto.tmov ins(%{stored} : !T) outs(%y : !T)",
                  out_row="%c0" if same_rows else "%r",
                  before="%u = pto.alloc_tile : !T\n    %v = pto.alloc_tile : !T\n    "
                         "%w = pto.alloc_tile : !T\n    %tmp = pto.alloc_tile : !T\n    "
                         "%rw = pto.alloc_tile : !R\n    "
                         "%half = arith.constant 0.5 : f32\n    " + init)
    src = src.replace("!T = ", f"!R = {_T1}\n!T = ", 1)
    # after the loop: the tile ``left`` to `last` as well (a tile the loop leaves)
    return src.replace("pto.tstore ins(%y : !T) outs(%pl", f"pto.tstore ins(%{left} : !T) outs(%pl")


def _ops() -> Any:
    from hypothesis import strategies as st

    t, dst = st.sampled_from(_FULL), st.sampled_from(_TEMPS)
    return st.lists(st.one_of(
        st.tuples(st.just("bin"), st.sampled_from(["tadd", "tsub", "tmul", "tmax"]), dst, t, t),
        st.tuples(st.just("un"), st.sampled_from(["texp", "tabs"]), dst, t),
        st.tuples(st.just("scalar"), st.sampled_from(["tadds", "tmuls"]), dst, t),
        st.tuples(st.just("rowred"), st.sampled_from(["trowmax", "trowsum"]), st.just("rw"), t),
        st.tuples(st.just("rowexp"), st.sampled_from(["trowexpandsub", "trowexpandmul"]), dst,
                  t)), min_size=1, max_size=7)


def test_random_loop_bodies_leave_the_interpreters_bits() -> None:
    """Random bodies over an invariant tile, temporaries that may carry values, a row
    tile, stores to each iteration's rows or all to the same: whether the plan batches the
    loop or not, every replay leaves the interpreter's bytes, and a body that reads a
    temporary before writing it is never batched."""
    from hypothesis import given, settings
    from hypothesis import strategies as st

    @settings(max_examples=60, deadline=None)
    @given(ops=_ops(), stored=st.sampled_from(_FULL), left=st.sampled_from(_FULL + ("y",)),
           same_rows=st.booleans())
    def check(ops: list[tuple[str, ...]], stored: str, left: str, same_rows: bool) -> None:
        prog = pto.load(_random_kernel(ops, stored, left, same_rows))
        ref, got = _runs(prog, "k", _args(), runs=3)
        for g in got:
            assert all(x.tobytes() == y.tobytes() for x, y in zip(g, ref, strict=True))
        # carried: read before the iteration writes it, and written in the body (a tile the
        # body only reads keeps its value from before the loop)
        written = {op[2] for op in ops}
        defined: set[str] = {"x"}
        carried = False
        for kind, _name, dst, *src in ops:
            reads = [*src, "rw"] if kind == "rowexp" else src
            carried |= any(s in written and s not in defined for s in reads)
            defined.add(dst)
        carried |= stored in written and stored not in defined
        s = _stats(prog)
        assert s.hits == 1
        if carried or same_rows:
            assert s.batched == 0, (ops, s)
        else:
            assert s.batched == 1, (ops, s)
    check()


_NESTED = f"""
!T = {_T}
module {{
  func.func @k(%a: !pto.ptr<f32>, %b: !pto.ptr<f32>, %out: !pto.ptr<f32>,
               %last: !pto.ptr<f32>) {{
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c3 = arith.constant 3 : index
    %c8 = arith.constant {N} : index
    %c16 = arith.constant 16 : index
    %c128 = arith.constant {16 * N} : index
    %va = pto.make_tensor_view %a, shape = [%c128, %c16], strides = [%c16, %c1] : {_TV}
    %vb = pto.make_tensor_view %b, shape = [%c16, %c16], strides = [%c16, %c1] : {_TV}
    %vo = pto.make_tensor_view %out, shape = [%c128, %c16], strides = [%c16, %c1] : {_TV}
    %vl = pto.make_tensor_view %last, shape = [%c16, %c16], strides = [%c16, %c1] : {_TV}
    %acc = pto.alloc_tile : !T
    %x = pto.alloc_tile : !T
    %y = pto.alloc_tile : !T
    %pb = pto.partition_view %vb, offsets = [%c0, %c0], sizes = [%c16, %c16] : {_TV} -> {_V}
    pto.tload ins(%pb : {_V}) outs(%acc : !T)
    scf.for %o = %c0 to %c3 step %c1 {{
      scf.for %k = %c0 to %c8 step %c1 {{
        %r = arith.muli %k, %c16 : index
        %pa = pto.partition_view %va, offsets = [%r, %c0], sizes = [%c16, %c16]
            : {_TV} -> {_V}
        pto.tload ins(%pa : {_V}) outs(%x : !T)
        pto.tadd ins(%x, %acc : !T, !T) outs(%y : !T)
        %po = pto.partition_view %vo, offsets = [%r, %c0], sizes = [%c16, %c16]
            : {_TV} -> {_V}
        pto.tstore ins(%y : !T) outs(%po : {_V})
      }}
      pto.tadd ins(%acc, %acc : !T, !T) outs(%acc : !T)
    }}
    %pl = pto.partition_view %vl, offsets = [%c0, %c0], sizes = [%c16, %c16] : {_TV} -> {_V}
    pto.tstore ins(%acc : !T) outs(%pl : {_V})
    return
  }}
}}
"""


def test_an_inner_loop_is_batched_in_every_iteration_of_a_carried_outer_one() -> None:
    """The outer loop doubles acc (carried: not batched); each run of the inner loop reads
    acc as it is then (broadcast to the lanes) and is one batch."""
    prog = pto.load(_NESTED)
    args = _args()
    ref, got = _runs(prog, "k", args)
    a, b = args[0].reshape(N, 16, 16), args[1].reshape(16, 16)
    assert np.array_equal(ref[2].reshape(N, 16, 16), a + 4 * b)
    assert np.array_equal(ref[3].reshape(16, 16), 8 * b)
    for g in got:
        assert all(x.tobytes() == y.tobytes() for x, y in zip(g, ref, strict=True))
    s = _stats(prog)
    assert s.hits == 2 and s.batched == 3 and "tile %acc carries a value" in s.why_loop, s
    plan = next(p for p in prog.compiler("a2a3").function("k")._plans.by_key.values() if p)
    lanes_machines = {id(c.__closure__[[n for n in c.__code__.co_freevars].index("lm")]
                         .cell_contents) for c in plan.calls if "lm" in c.__code__.co_freevars}
    assert len(lanes_machines) == 1  # (the three batches share one lanes machine)


def test_a_batch_too_large_runs_as_recorded(monkeypatch: pytest.MonkeyPatch) -> None:
    from ptoisa import plan_loops

    monkeypatch.setattr(plan_loops, "MAX_LANE_BYTES", 3 * 1024 * N - 1)  # (3 tiles of 1 KiB)
    _not_batched(_kernel(), "MiB of tiles")


_BLOCKS = f"""
!T = {_T}
module {{
  func.func @k(%a: !pto.ptr<f32>, %b: !pto.ptr<f32>, %out: !pto.ptr<f32>,
               %last: !pto.ptr<f32>) {{
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c8 = arith.constant {N} : index
    %c16 = arith.constant 16 : index
    %bid = pto.get_block_idx
    %bi = arith.index_cast %bid : i64 to index
    %nb = pto.get_block_num
    %n = arith.index_cast %nb : i64 to index
    %rows_b = arith.muli %n, %c16 : index
    %rows_a = arith.muli %rows_b, %c8 : index
    %row_b = arith.muli %bi, %c16 : index
    %row_a = arith.muli %row_b, %c8 : index
    %va = pto.make_tensor_view %a, shape = [%rows_a, %c16], strides = [%c16, %c1] : {_TV}
    %vb = pto.make_tensor_view %b, shape = [%rows_b, %c16], strides = [%c16, %c1] : {_TV}
    %vo = pto.make_tensor_view %out, shape = [%rows_a, %c16], strides = [%c16, %c1] : {_TV}
    %vl = pto.make_tensor_view %last, shape = [%rows_b, %c16], strides = [%c16, %c1] : {_TV}
    %bias = pto.alloc_tile : !T
    %x = pto.alloc_tile : !T
    %y = pto.alloc_tile : !T
    %pb = pto.partition_view %vb, offsets = [%row_b, %c0], sizes = [%c16, %c16]
        : {_TV} -> {_V}
    pto.tload ins(%pb : {_V}) outs(%bias : !T)
    scf.for %k = %c0 to %c8 step %c1 {{
      %rk = arith.muli %k, %c16 : index
      %r = arith.addi %row_a, %rk : index
      %pa = pto.partition_view %va, offsets = [%r, %c0], sizes = [%c16, %c16] : {_TV} -> {_V}
      pto.tload ins(%pa : {_V}) outs(%x : !T)
      pto.tadd ins(%x, %bias : !T, !T) outs(%y : !T)
      %po = pto.partition_view %vo, offsets = [%r, %c0], sizes = [%c16, %c16]
          : {_TV} -> {_V}
      pto.tstore ins(%y : !T) outs(%po : {_V})
    }}
    %pl = pto.partition_view %vl, offsets = [%row_b, %c0], sizes = [%c16, %c16]
        : {_TV} -> {_V}
    pto.tstore ins(%y : !T) outs(%pl : {_V})
    return
  }}
}}
"""


@pytest.mark.parametrize("blocks", [2, 3])
def test_a_loop_of_a_lockstep_launch_runs_as_one_batch(blocks: int) -> None:
    """Each block loops over its own 8 row blocks with its own bias (loaded before the
    loop, broadcast to that block's lanes): one batch of blocks x iterations lanes, numpy's
    sums and the interpreter's bytes, the tile the loop leaves (each block's last y)
    included."""
    prog = pto.load(_BLOCKS)
    rng = np.random.default_rng(11)
    args = [rng.standard_normal(blocks * N * 256, dtype=np.float32),
            rng.standard_normal(blocks * 256, dtype=np.float32),
            np.zeros(blocks * N * 256, np.float32), np.zeros(blocks * 256, np.float32)]
    ref = [a.copy() for a in args]
    prog.run("k", *ref, blocks=blocks, plans=False)
    a, b = args[0].reshape(blocks, N, 16, 16), args[1].reshape(blocks, 1, 16, 16)
    assert np.array_equal(ref[2].reshape(blocks, N, 16, 16), a + b)
    assert np.array_equal(ref[3].reshape(blocks, 16, 16), (a + b)[:, -1])
    for _ in range(4):
        g = [x.copy() for x in args]
        prog.run("k", *g, blocks=blocks)
        assert all(x.tobytes() == y.tobytes() for x, y in zip(g, ref, strict=True))
    s = _stats(prog)
    assert s.hits == 2 and s.batched == 1 and not s.why_loop, s


# ---- placed tiles (alloc_tile addr): per-lane buffers, the proof in bytes ------------------

@pytest.fixture
def batch_placed(monkeypatch: pytest.MonkeyPatch) -> None:
    from ptoisa import plan_loops

    monkeypatch.setattr(plan_loops, "BATCH_PLACED", True)


def _placed(src: str, addrs: dict[str, int], in_loop: tuple[str, ...] = ()) -> str:
    """``src`` with each tile of ``addrs`` placed at its byte address (UB), those of
    ``in_loop`` allocated at the top of the loop body instead of before it (as PTOAS does)."""
    consts = "".join(f"    %a_{n} = arith.constant {a} : i64\n" for n, a in addrs.items())
    src = src.replace("    %c0 = arith.constant 0 : index\n",
                      "    %c0 = arith.constant 0 : index\n" + consts, 1)
    for n in addrs:
        for ty in ("!T", "!R"):
            old = f"%{n} = pto.alloc_tile : {ty}"
            if old in src:
                new = f"%{n} = pto.alloc_tile addr = %a_{n} : {ty}"
                if n in in_loop:
                    src = src.replace(f"    {old}\n", "", 1)
                    src = src.replace("step %c1 {\n", "step %c1 {\n      " + new + "\n", 1)
                else:
                    src = src.replace(old, new, 1)
    return src


def test_placed_batches_off_leave_the_same_bits(monkeypatch: pytest.MonkeyPatch) -> None:
    from ptoisa import plan_loops

    monkeypatch.setattr(plan_loops, "BATCH_PLACED", False)
    prog = pto.load(_placed(_kernel(), {"bias": 0, "x": 1024, "y": 2048}, in_loop=("x",)))
    ref, got = _runs(prog, "k", _args())
    for g in got:
        assert all(x.tobytes() == y.tobytes() for x, y in zip(g, ref, strict=True))
    assert _stats(prog).batched == 0 and "BATCH_PLACED" in _stats(prog).why_loop


@pytest.mark.usefixtures("batch_placed")
def test_a_loop_over_placed_tiles_runs_as_one_batch() -> None:
    """x, y and bias at their own addresses, x allocated in the loop (PTOAS's alloc_tile
    addr per iteration): one batch,
    numpy's sums and the interpreter's bytes, y after the loop the last iteration's."""
    prog = pto.load(_placed(_kernel(), {"bias": 0, "x": 1024, "y": 2048}, in_loop=("x",)))
    args = _args()
    ref, got = _runs(prog, "k", args)
    a, b = args[0].reshape(N, 16, 16), args[1].reshape(16, 16)
    assert np.array_equal(ref[2].reshape(N, 16, 16), a + b)
    assert np.array_equal(ref[3].reshape(16, 16), a[-1] + b)
    for g in got:
        assert all(x.tobytes() == y.tobytes() for x, y in zip(g, ref, strict=True))
    s = _stats(prog)
    assert s.hits == 2 and s.batched == 1 and not s.why_loop, s


@pytest.mark.usefixtures("batch_placed")
def test_bytes_carried_through_an_alias_are_not_batched() -> None:
    """z shares x's bytes: the body reads z (x's bytes of the previous iteration) before
    the load writes x: carried, though no tile of the body is read before it is written."""
    body = ("pto.tadd ins(%z, %bias : !T, !T) outs(%y : !T)\n"
            "      pto.tload ins(%pa : !pto.partition_tensor_view<16x16xf32>) outs(%x : !T)")
    src = _kernel(body, before="%z = pto.alloc_tile : !T").replace(
        "      pto.tload ins(%pa : !pto.partition_tensor_view<16x16xf32>) outs(%x : !T)\n"
        "      pto.tadd", "      pto.tadd", 1)
    prog = pto.load(_placed(src, {"bias": 0, "x": 1024, "y": 2048, "z": 1024}))
    ref, got = _runs(prog, "k", _args())
    for g in got:
        assert all(x.tobytes() == y.tobytes() for x, y in zip(g, ref, strict=True))
    s = _stats(prog)
    assert s.hits == 2 and s.batched == 0 and "carries bytes" in s.why_loop, s


#: the random placed bodies' tiles, each placed at an address drawn from a few
_PLACED_NAMES = ("x", "y", "bias", "u", "v", "w", "tmp", "rw")


def _placed_cases() -> dict[str, Any]:
    """The hypothesis strategies of a random placed body (the arguments of _placed_program)."""
    from hypothesis import strategies as st

    n = len(_PLACED_NAMES)
    return {"ops": _ops(), "stored": st.sampled_from(_FULL),
            "left": st.sampled_from(_FULL + ("y",)), "same_rows": st.booleans(),
            "addrs": st.lists(st.sampled_from([0, 1024, 2048, 3072, 4096, 5120, 6144, 8192]),
                              min_size=n, max_size=n),
            "x_in_loop": st.booleans()}


def _placed_program(ops: list[tuple[str, ...]], stored: str, left: str, same_rows: bool,
                    addrs: list[int], x_in_loop: bool) -> Any:
    """The random body with its tiles at ``addrs`` (x allocated in the loop maybe), loaded."""
    return pto.load(_placed(_random_kernel(ops, stored, left, same_rows),
                            dict(zip(_PLACED_NAMES, addrs, strict=True)),
                            in_loop=("x",) if x_in_loop and left != "x" else ()))


@pytest.mark.usefixtures("batch_placed")
def test_random_placed_bodies_leave_the_interpreters_bits() -> None:
    """The random bodies above with every tile placed at an address drawn from a few (tiles
    sharing bytes at random, x maybe allocated in the loop): batched or not, every replay
    leaves the interpreter's bytes; some are batched."""
    from hypothesis import given, settings

    batched: list[int] = []

    @settings(max_examples=60, deadline=None)
    @given(**_placed_cases())
    def check(ops: list[tuple[str, ...]], stored: str, left: str, same_rows: bool,
              addrs: list[int], x_in_loop: bool) -> None:
        prog = _placed_program(ops, stored, left, same_rows, addrs, x_in_loop)
        ref, got = _runs(prog, "k", _args(), runs=3)
        for g in got:
            assert all(x.tobytes() == y.tobytes() for x, y in zip(g, ref, strict=True))
        s = _stats(prog)
        assert s.hits == 1
        batched.append(s.batched)
    check()
    assert sum(batched) > 0


def _fresh_args(seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(16 * 16 * N, dtype=np.float32),
            rng.standard_normal(256, dtype=np.float32),
            np.full(16 * 16 * N, np.nan, np.float32), np.full(256, -1, np.float32)]


@pytest.mark.usefixtures("batch_placed")
def test_placed_batches_kept_across_replays_leave_the_interpreters_bits(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The random placed bodies, replayed 4 times on new inputs each: every replay leaves the
    bytes the interpreter leaves on the same inputs, and some replays keep their lanes'
    buffers (no reset of the lanes machine, no poison written again: plan_loops.KEEP_LANES),
    so no replay reads what an earlier one left."""
    from hypothesis import given, settings

    from ptoisa.memory import Machine

    resets = {"lanes": 0}
    reset = Machine.reset_for_launch

    def counted(self: Machine) -> None:
        if self.planned:
            resets["lanes"] += 1
        reset(self)
    monkeypatch.setattr(Machine, "reset_for_launch", counted)
    kept: list[int] = []

    @settings(max_examples=40, deadline=None)
    @given(**_placed_cases())
    def check(ops: list[tuple[str, ...]], stored: str, left: str, same_rows: bool,
              addrs: list[int], x_in_loop: bool) -> None:
        prog = _placed_program(ops, stored, left, same_rows, addrs, x_in_loop)
        for seed in range(2):  # interpreted, then recorded
            prog.run("k", *_fresh_args(seed))
        resets["lanes"] = 0
        for seed in range(2, 6):
            args = _fresh_args(seed)
            ref = [a.copy() for a in args]
            prog.run("k", *ref, plans=False)
            prog.run("k", *args)
            assert all(x.tobytes() == y.tobytes() for x, y in zip(args, ref, strict=True))
        s = _stats(prog)
        assert s.hits == 4
        if s.batched:  # (the first replay starts its lanes machine afresh)
            kept.append(resets["lanes"] == 1)
    check()
    assert any(kept)


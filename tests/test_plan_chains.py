"""Accumulating loops of an execution plan run as one batch (ptoisa/plan_loops.py, chains):
a K-loop whose one carried value is an in-place TMATMUL_ACC accumulator forms every
iteration's product at once and adds C_in in iteration order
(``matmul.run_acc_chain``). The planned launch leaves the interpreter's bits for every
element type, accumulation mode and K-step count; a loop that reads or stores the
accumulator otherwise runs as recorded, saying why. The expectations are numpy's f64 (or
int64) product of the same operands and the interpreter's bytes."""

from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np
import pytest

import ptoisa as pto
from ptoisa import GlobalTensor, Tile, eager_plans, lazy, plan_loops
from ptoisa.enums import BLayout, SLayout, TileType

_ITEM = {"f16": 2, "bf16": 2, "f32": 4, "i8": 1}
_NP = {"f16": np.float16, "bf16": ml_dtypes.bfloat16, "f32": np.float32, "i8": np.int8}
#: (element type, accumulator type, m, k, n) of one K-step
SHAPES = [("f16", "f32", 16, 32, 16), ("bf16", "f32", 16, 64, 32), ("f32", "f32", 16, 16, 16),
          ("i8", "i32", 16, 64, 32)]


def _tb(loc: str, dt: str, r: int, c: int) -> str:
    bl, sl, fr = {"mat": ("col_major", "row_major", 512), "left": ("col_major", "row_major", 512),
                  "right": ("row_major", "col_major", 512),
                  "acc": ("col_major", "row_major", 1024)}[loc]
    return (f"!pto.tile_buf<loc={loc}, dtype={dt}, rows={r}, cols={c}, v_row={r}, v_col={c}, "
            f"blayout={bl}, slayout={sl}, fractal={fr}, pad=0>")


def _kernel(dt: str, acc_dt: str, m: int, k: int, n: int, steps: int, placed: bool,
            extra: str = "", accumulate: bool = True) -> str:
    """C (m x n) = sum over ``steps`` K-steps of A[:, s] @ B[s, :] as PTOAS writes it: step
    0 a TMATMUL before the loop, the loop over steps 1.. a TMATMUL_ACC in place; ``placed``:
    the tiles at addresses (alloc_tile addr, again at the top of the body); ``extra``: more
    of the body after the accumulation (``ACC`` its accumulator, ``TC`` its type, ``PC`` the
    type of a view of C, ``VC`` C's tensor view, ``%LT`` / ``%RT`` the L0 tiles, ``TL`` /
    ``TR`` their types); ``accumulate=False``: the body without its accumulation."""
    ta, tbm = _tb("mat", dt, m, k), _tb("mat", dt, k, n)
    tl, tr, tc = _tb("left", dt, m, k), _tb("right", dt, k, n), _tb("acc", acc_dt, m, n)
    pa = f"!pto.partition_tensor_view<{m}x{k}x{dt}>"
    pb = f"!pto.partition_tensor_view<{k}x{n}x{dt}>"
    pc = f"!pto.partition_tensor_view<{m}x{n}x{acc_dt}>"
    tv, tvc = f"!pto.tensor_view<?x?x{dt}>", f"!pto.tensor_view<?x?x{acc_dt}>"

    def alloc(name: str, ty: str, addr: str) -> str:
        return (f"%{name} = pto.alloc_tile addr = {addr} : {ty}" if placed
                else f"%{name} = pto.alloc_tile : {ty}")
    tiles = [("a", ta, "%z"), ("b", tbm, "%off_b"), ("l", tl, "%z"), ("r", tr, "%z"),
             ("acc", tc, "%z")]
    first = [alloc(f"{nm}0", ty, ad) for nm, ty, ad in tiles]
    inner = [alloc(f"{nm}i", ty, ad) for nm, ty, ad in tiles] if placed else [""] * 5
    a, b, lt, rt, c = (f"%{nm}{'i' if placed else '0'}" for nm, _t, _a in tiles)
    body = extra.replace("ACC", c).replace("TC", tc).replace("PC", pc).replace("VC", tvc) \
        .replace("%LT", lt).replace("%RT", rt).replace("TL", tl).replace("TR", tr)
    acc_line = (f"pto.tmatmul.acc ins({c}, {lt}, {rt} : {tc}, {tl}, {tr}) outs({c} : {tc})"
                if accumulate else "")
    return f"""
module {{
  func.func @k(%pa_: !pto.ptr<{dt}>, %pb_: !pto.ptr<{dt}>, %pc_: !pto.ptr<{acc_dt}>) {{
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %z = arith.constant 0 : i64
    %off_b = arith.constant {m * k * _ITEM[dt]} : i64
    %cm = arith.constant {m} : index
    %ck = arith.constant {k} : index
    %cn = arith.constant {n} : index
    %ckk = arith.constant {k * steps} : index
    %cs = arith.constant {steps} : index
    %va = pto.make_tensor_view %pa_, shape = [%cm, %ckk], strides = [%ckk, %c1] : {tv}
    %vb = pto.make_tensor_view %pb_, shape = [%ckk, %cn], strides = [%cn, %c1] : {tv}
    %vc = pto.make_tensor_view %pc_, shape = [%cm, %cn], strides = [%cn, %c1] : {tvc}
    {first[0]}
    %qa = pto.partition_view %va, offsets = [%c0, %c0], sizes = [%cm, %ck] : {tv} -> {pa}
    pto.tload ins(%qa : {pa}) outs(%a0 : {ta})
    {first[1]}
    %qb = pto.partition_view %vb, offsets = [%c0, %c0], sizes = [%ck, %cn] : {tv} -> {pb}
    pto.tload ins(%qb : {pb}) outs(%b0 : {tbm})
    {first[2]}
    pto.tmov ins(%a0 : {ta}) outs(%l0 : {tl})
    {first[3]}
    pto.tmov ins(%b0 : {tbm}) outs(%r0 : {tr})
    {first[4]}
    pto.tmatmul ins(%l0, %r0 : {tl}, {tr}) outs(%acc0 : {tc})
    scf.for %s = %c1 to %cs step %c1 {{
      %o = arith.muli %s, %ck : index
      {inner[0]}
      %xa = pto.partition_view %va, offsets = [%c0, %o], sizes = [%cm, %ck] : {tv} -> {pa}
      pto.tload ins(%xa : {pa}) outs({a} : {ta})
      {inner[1]}
      %xb = pto.partition_view %vb, offsets = [%o, %c0], sizes = [%ck, %cn] : {tv} -> {pb}
      pto.tload ins(%xb : {pb}) outs({b} : {tbm})
      {inner[2]}
      pto.tmov ins({a} : {ta}) outs({lt} : {tl})
      {inner[3]}
      pto.tmov ins({b} : {tbm}) outs({rt} : {tr})
      {inner[4]}
      {acc_line}
      {body}
    }}
    %xc = pto.partition_view %vc, offsets = [%c0, %c0], sizes = [%cm, %cn] : {tvc} -> {pc}
    pto.tstore ins(%acc0 : {tc}) outs(%xc : {pc})
    return
  }}
}}
"""


def _operands(dt: str, acc_dt: str, m: int, k: int, n: int, steps: int, seed: int = 0
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    if dt == "i8":
        a = rng.integers(-128, 128, (m, k * steps)).astype(np.int8)
        b = rng.integers(-128, 128, (k * steps, n)).astype(np.int8)
    else:
        a = rng.standard_normal((m, k * steps)).astype(_NP[dt])
        b = rng.standard_normal((k * steps, n)).astype(_NP[dt])
    return a, b, np.zeros((m, n), np.int32 if acc_dt == "i32" else np.float32)


def _stats(prog: pto.Program) -> Any:
    return prog.compiler("a2a3").function("k")._plans.stats  # type: ignore[attr-defined]


def _both_ways(prog: pto.Program, a: np.ndarray, b: np.ndarray, c: np.ndarray,
               **kw: Any) -> np.ndarray:
    """The interpreter's C, after checking that four launches with plans (the second
    records, the last two replay) leave its bytes, from a C holding other values."""
    ref = c.copy()
    prog.run("k", a, b, ref, plans=False, **kw)
    for _ in range(4):
        got = np.full_like(c, 7)
        prog.run("k", a, b, got, **kw)
        assert got.tobytes() == ref.tobytes()
    return ref


@pytest.mark.parametrize("steps", [1, 2, 3, 5, 16])
@pytest.mark.parametrize("placed", [False, True], ids=["auto", "placed"])
@pytest.mark.parametrize("shape", SHAPES, ids=[s[0] for s in SHAPES])
def test_an_accumulating_k_loop_runs_as_one_chain(shape: tuple[Any, ...], placed: bool,
                                                  steps: int) -> None:
    """Every element type TMATMUL takes on a2a3, auto and placed tiles, 1..16 K-steps: the
    interpreter's bits (numpy's f64 product within f32 rounding; i8 exact), and the loop
    (from 2 iterations: steps >= 3) batched."""
    dt, acc_dt, m, k, n = shape
    prog = pto.load(_kernel(dt, acc_dt, m, k, n, steps, placed), target="a2a3")
    a, b, c = _operands(dt, acc_dt, m, k, n, steps)
    ref = _both_ways(prog, a, b, c)
    if dt == "i8":
        assert np.array_equal(ref, a.astype(np.int64) @ b.astype(np.int64))
    else:
        want = a.astype(np.float64) @ b.astype(np.float64)
        assert np.allclose(ref, want, rtol=1e-5, atol=1e-4 * np.sqrt(k * steps))
    s = _stats(prog)
    assert s.hits == 2, s
    assert s.batched == (1 if steps >= 3 else 0) and not s.why_loop, s


@pytest.mark.parametrize("mode", ["exact", "sequential", "f32"])
@pytest.mark.parametrize("dt", ["bf16", "f32"])
def test_every_accumulation_mode_keeps_its_bits(dt: str, mode: str) -> None:
    """The k-sum in f64 rounded once with C_in (``exact``), the simulator's loop
    (``sequential``), f32 BLAS: the chain adds C_in as each mode's step does."""
    shape = next(s for s in SHAPES if s[0] == dt)
    _dt, acc_dt, m, k, n = shape
    prog = pto.load(_kernel(dt, acc_dt, m, k, n, 6, True), target="a2a3")
    a, b, c = _operands(dt, acc_dt, m, k, n, 6, seed=3)
    ref = _both_ways(prog, a, b, c, matmul_accumulation=mode)
    assert np.allclose(ref, a.astype(np.float64) @ b.astype(np.float64), rtol=1e-5,
                       atol=1e-3)
    assert _stats(prog).batched == 1


_STORE_EACH = """%xs = pto.partition_view %vc, offsets = [%c0, %c0], sizes = [%cm, %cn]
          : VC -> PC
      pto.tstore ins(ACC : TC) outs(%xs : PC)"""


@pytest.mark.parametrize("placed", [False, True], ids=["auto", "placed"])
@pytest.mark.parametrize("extra,why", [
    (_STORE_EACH, "carries"),
    ("pto.tmatmul.acc ins(ACC, %LT, %RT : TC, TL, TR) outs(ACC : TC)", "carries"),
], ids=["stored-each-iteration", "accumulated-twice"])
def test_an_accumulator_used_otherwise_in_the_loop_is_not_chained(
        placed: bool, extra: str, why: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The accumulator stored every iteration, or read by a second accumulation in the
    body: a carried value the chain does not model; the loop runs as recorded (the same
    bits), the reason in the stats (placed batches on, so that the reason is the carried
    bytes, not that they are off)."""
    monkeypatch.setattr(plan_loops, "BATCH_PLACED", True)
    dt, acc_dt, m, k, n = SHAPES[1]
    suffix = "i" if placed else "0"
    extra = extra.replace("%LT", f"%l{suffix}").replace("%RT", f"%r{suffix}") \
        .replace("TL", _tb("left", dt, m, k)).replace("TR", _tb("right", dt, k, n))
    prog = pto.load(_kernel(dt, acc_dt, m, k, n, 5, placed, extra), target="a2a3")
    a, b, c = _operands(dt, acc_dt, m, k, n, 5, seed=1)
    _both_ways(prog, a, b, c)
    s = _stats(prog)
    assert s.hits == 2 and s.batched == 0 and why in s.why_loop, s


# ---- eager kernels: the K-loop found as a repeated run ------------------------------------

def _gemm(a: np.ndarray, b: np.ndarray, c: np.ndarray, tm: int, tk: int, tn: int) -> None:
    """C = A @ B over a grid of blocks of tm x tn, each in K-steps of tk."""
    m, k = a.shape
    n = b.shape[1]
    blk = pto.get_block_idx()
    bi, bj = blk // (n // tn), blk % (n // tn)
    ta = Tile(TileType.Mat, a.dtype, tm, tk, BLayout.ColMajor, None, SLayout.RowMajor)
    tb = Tile(TileType.Mat, a.dtype, tk, tn, BLayout.ColMajor, None, SLayout.RowMajor)
    left, right = pto.TileLeft(a.dtype, tm, tk), pto.TileRight(a.dtype, tk, tn)
    acc = pto.TileAcc(np.float32, tm, tn)
    big = a.size + b.size + c.size
    for s in range(k // tk):
        pto.TLOAD(ta, GlobalTensor(a, (1, 1, 1, tm, tk), (big, big, big, k, 1),
                                   offset=bi * tm * k + s * tk))
        pto.TLOAD(tb, GlobalTensor(b, (1, 1, 1, tk, tn), (big, big, big, n, 1),
                                   offset=s * tk * n + bj * tn))
        pto.TMOV(left, ta)
        pto.TMOV(right, tb)
        if s == 0:
            pto.TMATMUL(acc, left, right)
        else:
            pto.TMATMUL_ACC(acc, acc, left, right)
    pto.TSTORE(GlobalTensor(c, (1, 1, 1, tm, tn), (big, big, big, n, 1),
                            offset=bi * tm * n + bj * tn), acc)


@pytest.mark.parametrize("blocks", [1, 2])
def test_an_eager_k_loop_runs_as_one_chain(blocks: int) -> None:
    """An eager GEMM's K-loop (a repeated run of its record, per block in lockstep): the
    interpreter's bits, batched."""
    s = _planned_gemm_keeps_bits(blocks, 8, ml_dtypes.bfloat16, 7)
    assert s.hits >= 2 and s.batched == 1, s


def _planned_gemm_keeps_bits(blocks: int, steps: int, dtype: Any, seed: int) -> Any:
    """An eager 16 x 32-a-block GEMM over ``steps`` K-steps of 64: interpreted (checked against
    numpy in f64), then planned five times with the interpreter's bits; the plan's stats."""
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((16, 64 * steps)).astype(dtype)
    b = rng.standard_normal((64 * steps, 32 * blocks)).astype(dtype)
    ref = np.zeros((16, 32 * blocks), np.float32)

    def kernel(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> None:
        _gemm(a, b, c, 16, 64, 32)
    pto.launch(kernel, a, b, ref, blocks=blocks, target="a2a3")
    assert np.allclose(ref, a.astype(np.float64) @ b.astype(np.float64), rtol=1e-5,
                       atol=1e-3)
    for _ in range(5):
        got = np.full_like(ref, 3)
        pto.launch(kernel, a, b, got, blocks=blocks, target="a2a3", plans=True)
        assert got.tobytes() == ref.tobytes()
    return eager_plans.stats(kernel)


@pytest.mark.parametrize("blocks", [2, 4])
def test_a_lockstep_step_counts_every_blocks_product(blocks: int,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """plan_loops.CHAIN_MAX_MACS bounds a step over all the launch's blocks (a lockstep step
    runs each block's product): 16 x 64 x 32 a block, the limit two blocks' worth, so 2 blocks
    chain and 4 run step by step (said in the stats); the interpreter's bits either way."""
    monkeypatch.setattr(plan_loops, "CHAIN_MAX_MACS", 2 * 16 * 64 * 32)
    s = _planned_gemm_keeps_bits(blocks, 6, np.float16, 8)
    assert s.hits >= 2, s
    if blocks == 2:
        assert s.batched == 1, s
    else:
        assert s.batched == 0 and f"over {blocks} block(s)" in s.why_loop, s


def test_a_large_product_runs_step_by_step(monkeypatch: pytest.MonkeyPatch) -> None:
    """Products above plan_loops.CHAIN_MAX_MACS a step are not chained (said in the
    stats); the same bits."""
    monkeypatch.setattr(plan_loops, "CHAIN_MAX_MACS", 16 * 64 * 32 - 1)
    dt, acc_dt, m, k, n = SHAPES[1]
    prog = pto.load(_kernel(dt, acc_dt, m, k, n, 4, True), target="a2a3")
    _both_ways(prog, *_operands(dt, acc_dt, m, k, n, 4))
    s = _stats(prog)
    assert s.batched == 0 and "CHAIN_MAX_MACS" in s.why_loop, s


def test_chains_off_leave_the_same_bits(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(plan_loops, "BATCH_CHAINS", False)
    dt, acc_dt, m, k, n = SHAPES[0]
    prog = pto.load(_kernel(dt, acc_dt, m, k, n, 5, True), target="a2a3")
    _both_ways(prog, *_operands(dt, acc_dt, m, k, n, 5))
    assert _stats(prog).batched == 0


def test_may_share_rows_tells_column_ranges_of_lane_rows_apart() -> None:
    """lazy.may_share_rows against numpy's exact np.shares_memory on column slices of a lanes
    buffer (rows of one stride) and other views: never False where they share, False for
    disjoint column ranges of the same rows."""
    rng = np.random.default_rng(2)
    buf = np.zeros((7, 96), np.uint8)
    views = [buf[:, 0:32], buf[:, 32:96], buf[:, 16:48], buf[:, 95:96], buf[2:5, 40:60],
             buf[:, 0:32].view(np.uint16), buf.reshape(-1)[10:300], buf[::2, 8:16]]
    views += [buf[:, lo:lo + w] for lo, w in rng.integers(0, 48, (20, 2)) if w]
    for x in views:
        for y in views:
            exact = np.shares_memory(x, y)
            assert lazy.may_share_rows(x, y) or not exact
    assert not lazy.may_share_rows(buf[:, 0:32], buf[:, 32:96])
    assert not lazy.may_share_rows(buf[:, 32:96], buf[:, 0:32].view(np.uint16))
    assert lazy.may_share_rows(buf[:, 0:33], buf[:, 32:96])


def test_an_accumulator_written_first_in_each_iteration_is_no_chain(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """TMATMUL then TMATMUL_ACC on one accumulator in each iteration, stored each iteration
    (to one place): nothing carried between iterations, so no chain and the product's size
    is no reason (the loop is refused for its overlapping stores); the interpreter's bits, C
    twice the last step's product."""
    monkeypatch.setattr(plan_loops, "CHAIN_MAX_MACS", 1)
    dt, acc_dt, m, k, n = SHAPES[1]
    extra = ("pto.tmatmul ins(%LT, %RT : TL, TR) outs(ACC : TC)\n"
             "      pto.tmatmul.acc ins(ACC, %LT, %RT : TC, TL, TR) outs(ACC : TC)\n"
             "      %xs = pto.partition_view %vc, offsets = [%c0, %c0], sizes = [%cm, %cn]"
             " : VC -> PC\n      pto.tstore ins(ACC : TC) outs(%xs : PC)")
    prog = pto.load(_kernel(dt, acc_dt, m, k, n, 5, False, extra, accumulate=False),
                    target="a2a3")
    a, b, c = _operands(dt, acc_dt, m, k, n, 5, seed=4)
    ref = _both_ways(prog, a, b, c)
    last = a[:, -k:].astype(np.float64) @ b[-k:].astype(np.float64)
    assert np.allclose(ref, 2 * last, rtol=1e-5, atol=1e-3)
    s = _stats(prog)
    assert s.hits == 2 and "GM bytes" in s.why_loop, s


@pytest.mark.parametrize("chunk", [1, 3, 4])
@pytest.mark.parametrize("placed", [False, True], ids=["auto", "placed"])
@pytest.mark.parametrize("dt", ["f16", "bf16"])
def test_lanes_converted_and_multiplied_in_chunks_keep_their_bits(
        dt: str, placed: bool, chunk: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """A chain's lanes whose panels need a conversion are converted and multiplied
    ``chunk`` lanes at a time (matmul._chunked_product; the 15 lanes of 16 K-steps in
    chunks that do and do not divide them): the interpreter's bits."""
    from ptoisa.isa.matrix import matmul

    shape = next(s for s in SHAPES if s[0] == dt)
    _dt, acc_dt, m, k, n = shape
    monkeypatch.setattr(matmul, "_LANE_CHUNK_BYTES", chunk * (m * k + k * n) * 4)
    monkeypatch.setattr(matmul, "_LANE_CHUNK_MIN", 0)
    made = []
    real = matmul._chunked_product

    def spy(*args: Any) -> Any:
        out = real(*args)
        made.append(out is not None)
        return out
    monkeypatch.setattr(matmul, "_chunked_product", spy)
    prog = pto.load(_kernel(dt, acc_dt, m, k, n, 16, placed), target="a2a3")
    a, b, c = _operands(dt, acc_dt, m, k, n, 16, seed=4)
    ref = _both_ways(prog, a, b, c)
    assert np.allclose(ref, a.astype(np.float64) @ b.astype(np.float64), rtol=1e-5,
                       atol=1e-3)
    assert _stats(prog).batched == 1 and any(made)

"""pto.export: eager kernels -> .pto. Every example with an eager grid kernel and every
benchmark kernel is exported for every target, checked for that target, run as .pto, and
compared bit for bit with the eager launch (and with numpy where the example has a
reference); plus pto.range loops, located errors for what the IR cannot express, the CLI."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

import ptoisa as pto
from ptoisa import BLayout, GlobalTensor, SLayout, Tile, TileType, cli
from ptoisa.symbolic import ExportError

ROOT = Path(__file__).resolve().parents[1]
TARGETS = ("cpu", "a2a3", "a5")


def _module(path: Path, name: str) -> ModuleType:
    mod = sys.modules.get(name)
    if mod is None:
        spec = importlib.util.spec_from_file_location(name, path)
        assert spec is not None and spec.loader is not None
        mod = importlib.util.module_from_spec(spec)
        sys.modules[name] = mod
        spec.loader.exec_module(mod)
    return mod


def _example(name: str) -> ModuleType:
    return _module(ROOT / "examples" / f"{name}.py", f"example_{name}")


def _kernels() -> ModuleType:
    return _module(ROOT / "benchmarks" / "kernels.py", "bench_kernels")


def _roundtrip(kernel: Any, args: list[Any], blocks: int, target: str) -> tuple[str, list, list]:
    """Export (without the built-in check), check the text for ``target``, run it and the
    eager kernel on copies of ``args``: (text, eager arrays, .pto arrays)."""
    text = pto.export(kernel, *args, blocks=blocks, target=target, verify=False)
    prog = pto.load(text, target=target)
    prog.check()
    eager = [np.array(a) if isinstance(a, np.ndarray) else a for a in args]
    pto.launch(kernel, *eager, blocks=blocks, target=target)
    arrays = [np.array(a) for a in args if isinstance(a, np.ndarray)]
    fn = re.search(r"func\.func @(\w+)", text).group(1)  # type: ignore[union-attr]
    getattr(prog, fn)(*arrays, blocks=blocks)
    return text, [a for a in eager if isinstance(a, np.ndarray)], arrays


def _same_bits(xs: list[np.ndarray], ys: list[np.ndarray]) -> None:
    for x, y in zip(xs, ys, strict=True):
        assert x.dtype == y.dtype and x.tobytes() == y.tobytes()


# ---- the examples ---------------------------------------------------------------------------

@pytest.mark.parametrize("target", TARGETS)
def test_vec_add_example(target: str) -> None:
    ex = _example("vec_add")
    rng = np.random.default_rng(1)
    n = 3 * ex.ROWS * ex.COLS
    x, y = rng.standard_normal(n, dtype=np.float32), rng.standard_normal(n, dtype=np.float32)
    text, eager, got = _roundtrip(ex.vec_add_kernel, [x, y, np.zeros(n, np.float32)], 3, target)
    _same_bits(eager, got)
    assert np.array_equal(got[2], x + y)
    assert "pto.alloc_tile addr = %c16384 : !T0" in text  # TASSIGN(ty, 0x4000)
    assert "pto.get_block_idx" in text


@pytest.mark.parametrize("target", TARGETS)
def test_softmax_example_ragged(target: str) -> None:
    ex = _example("softmax")
    x = (np.random.default_rng(0).standard_normal((45, ex.COLS)) * 4).astype(np.float32)
    text, eager, got = _roundtrip(ex.softmax_kernel, [x, np.zeros_like(x), 45], 6, target)
    _same_bits(eager, got)
    assert ex.check(got[1], x)
    # the last block's 5 valid rows: a dynamic valid region from the block index
    assert "arith.minsi %c8" in text and "valid_row = %valid" in text
    assert "partition_tensor_view<?x64xf32>" in text


@pytest.mark.parametrize("target", TARGETS)
def test_gemm_int8_example(target: str) -> None:
    ex = _example("gemm_int8")
    a, b, words, scale, offset = ex.make_inputs()
    c = np.zeros((ex.M, ex.N), np.int8)
    blocks = (ex.M // ex.T) * (ex.N // ex.T)
    text, eager, got = _roundtrip(ex.gemm_int8_kernel, [a, b, words, c], blocks, target)
    _same_bits(eager, got)
    assert np.array_equal(got[3], ex.reference(a, b, scale, offset))
    assert "pto.tmatmul.acc" in text and "pto.tstore_fp" in text
    assert "arith.divsi %blk, %c2" in text and "arith.remsi %blk, %c2" in text


@pytest.mark.parametrize("target", TARGETS)
def test_topk_example(target: str) -> None:
    ex = _example("topk")
    x = ex.make_input(4)
    vals, idx = np.zeros((4, ex.K), np.float32), np.zeros((4, ex.K), np.uint32)
    text, eager, got = _roundtrip(ex.topk_kernel, [x, vals, idx], 4, target)
    _same_bits(eager, got)
    want_v, want_i = ex.reference(x)
    assert np.array_equal(got[1], want_v) and np.array_equal(got[2], want_i)
    # SetValidShape from Python and the merge's executed list in outs
    assert "pto.set_validshape %best, %c1, %c32" in text
    assert "vector<4xi16>)" in text


@pytest.mark.parametrize("double", [False, True])
@pytest.mark.parametrize("target", TARGETS)
def test_flash_softmax_keeps_its_flags(target: str, double: bool) -> None:
    """Flags and barriers are exported as written: the program synchronises as the kernel
    did (same bits, the same cycle-model schedule, clean under the race checker); double
    buffering's alternating event ids roll back into a loop of two iterations."""
    from ptoisa.sanitizer import Sanitizer

    ex = _example("flash_softmax")
    nkv = 6
    s = np.random.default_rng(3).standard_normal(nkv * ex.ROWS * ex.BC, dtype=np.float32)
    text, eager, got = _roundtrip(ex.flash_softmax, [s, np.zeros_like(s), nkv, double], 1,
                                  target)
    _same_bits(eager, got)
    np.testing.assert_allclose(got[1], ex.reference(s), rtol=2e-6, atol=1e-7)
    assert "pto.set_flag[<PIPE_MTE2>, <PIPE_V>, <EVENT_ID0>]" in text
    assert "pto.wait_flag[<PIPE_MTE3>, <PIPE_MTE2>, <EVENT_ID0>]" in text
    assert ("EVENT_ID1" in text) == double
    assert text.count("scf.for") == 1
    prog = pto.load(text, target=target)
    rep = prog.flash_softmax(s, np.zeros_like(s), cycles=True)
    want = pto.launch(ex.flash_softmax, s, np.zeros_like(s), nkv, double, target=target,
                      cycles=True)
    assert rep.mode == "manual" and rep.total == want.total
    san = Sanitizer()
    prog.flash_softmax(s, np.zeros_like(s), sanitize=san)
    assert not san.report.findings, san.report
    # (the check is live: without the wait for the loads, it finds the race)
    lines = text.splitlines()
    drop = next(i for i, ln in enumerate(lines) if "wait_flag[<PIPE_MTE2>, <PIPE_V>" in ln)
    racy = pto.load("\n".join(lines[:drop] + lines[drop + 1:]) + "\n", target=target)
    san = Sanitizer()
    racy.flash_softmax(s, np.zeros_like(s), sanitize=san)
    assert san.report.findings


def test_barrier_is_exported_and_flags_with_events_are_refused() -> None:
    x = np.ones(16 * 64, np.float32)

    def barrier(x):
        t = Tile(TileType.Vec, np.float32, 16, 64)
        pto.TLOAD(t, GlobalTensor(x, (1, 1, 1, 16, 64)))
        pto.PIPE_BARRIER(pto.Pipe.ALL)
        pto.TADDS(t, t, 1.0)
        pto.PIPE_BARRIER(pto.Pipe.V)
        pto.TSTORE(GlobalTensor(x, (1, 1, 1, 16, 64)), t)

    text = pto.export(barrier, x)
    assert "pto.barrier <PIPE_ALL>" in text and "pto.barrier <PIPE_V>" in text

    def both(x):
        t = Tile(TileType.Vec, np.float32, 16, 64)
        e = pto.TLOAD(t, GlobalTensor(x, (1, 1, 1, 16, 64)))
        pto.SET_FLAG(pto.Pipe.MTE2, pto.Pipe.V, 0)
        pto.WAIT_FLAG(pto.Pipe.MTE2, pto.Pipe.V, 0)
        pto.TADDS(t, t, 1.0, e)

    with pytest.raises(pto.PtoError, match="both flags .* and Events"):
        pto.export(both, x)


def test_mixed_kernel_is_a_located_error() -> None:
    ex = _example("mixed_attention")
    q, k, v = ex.make_inputs(2)
    out = np.zeros((q.shape[0], q.shape[1], v.shape[2]), np.float32)
    with pytest.raises(ExportError, match=r"mixed_attention\.py:\d+:\d+: error: tpush: mixed"):
        pto.export(ex.cube, q, k, v, out, blocks=2, target="a2a3")


def _qk_kernel() -> Any:
    """The cube half of mixed_attention up to S = Q K^T (K^T through a DN view), stored."""
    ex = _example("mixed_attention")
    m, d, n = ex.M, ex.D, ex.N

    def qk(q: np.ndarray, k: np.ndarray, s_out: np.ndarray) -> None:
        h = pto.get_block_idx()
        q_mat, left = ex._nz(m, d), pto.TileLeft(np.float32, m, d)
        pto.TLOAD(q_mat, ex._view(q, m, d, h * m * d))
        pto.TMOV(left, q_mat)
        kt = GlobalTensor(k, (1, 1, 1, d, n), (k.size,) * 3 + (1, d), pto.Layout.DN,
                          offset=h * n * d)
        kt_mat = Tile(TileType.Mat, np.float32, d, n, BLayout.RowMajor, None, SLayout.ColMajor)
        right = pto.TileRight(np.float32, d, n)
        pto.TLOAD(kt_mat, kt)
        pto.TMOV(right, kt_mat)
        s = pto.TileAcc(np.float32, m, n)
        pto.TMATMUL(s, left, right)
        pto.TSTORE(ex._view(s_out, m, n, h * m * n), s)
    return ex, qk


@pytest.mark.parametrize("target", TARGETS)
def test_dn_view_of_the_attention_cube_half(target: str) -> None:
    ex, qk = _qk_kernel()
    q, k, _ = ex.make_inputs(2)
    s = np.zeros((2, ex.M, ex.N), np.float32)
    text, eager, got = _roundtrip(qk, [q, k, s], 2, target)
    _same_bits(eager, got)
    want = np.einsum("hmd,hnd->hmn", q.astype(np.float64), k.astype(np.float64))
    assert np.allclose(got[2], want, rtol=1e-5, atol=1e-5)
    assert "strides = [%c1, %c32] {layout = #pto.layout<dn>}" in text


# ---- the benchmark kernels ------------------------------------------------------------------

@pytest.mark.parametrize("target", TARGETS)
def test_benchmark_vec_add(target: str) -> None:
    k = _kernels()
    n = 4 * k.VA_R * k.VA_C
    rng = np.random.default_rng(2)
    x, y = rng.standard_normal(n, dtype=np.float32), rng.standard_normal(n, dtype=np.float32)
    _, eager, got = _roundtrip(k.vec_add, [x, y, np.zeros(n, np.float32)], 4, target)
    _same_bits(eager, got)
    assert np.array_equal(got[2], x + y)


@pytest.mark.parametrize("target", TARGETS)
def test_benchmark_softmax(target: str) -> None:
    k = _kernels()
    x = np.random.default_rng(3).standard_normal((3 * k.SM_R, k.SM_C)).astype(np.float32)
    _, eager, got = _roundtrip(k.softmax, [x, np.zeros_like(x)], 3, target)
    _same_bits(eager, got)
    e = np.exp(x.astype(np.float64) - x.max(axis=1, keepdims=True))
    assert np.allclose(got[1], e / e.sum(axis=1, keepdims=True), rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("target", TARGETS)
def test_benchmark_gemm(target: str) -> None:
    k = _kernels()
    rng = np.random.default_rng(4)
    n = k.GM_N
    a = (rng.integers(-8, 9, (n, n)) / 8).astype(np.float16)
    b = (rng.integers(-8, 9, (n, n)) / 8).astype(np.float16)
    text, eager, got = _roundtrip(k.gemm, [a, b, np.zeros((n, n), np.float32)], 4, target)
    _same_bits(eager, got)
    # blocks 0..3 are C tiles (0, 0..3): exact sums (k/8 products, at most 512 terms)
    ref = a.astype(np.float64)[:k.GM_T] @ b.astype(np.float64)[:, :4 * k.GM_T]
    assert np.array_equal(got[2][:k.GM_T, :4 * k.GM_T], ref.astype(np.float32))
    # the Python range loop (with `if k == 0`): the trace unrolls it, the exporter rolls the
    # 7 identical steps back into a loop: one tmatmul, then scf.for over tmatmul.acc
    assert text.count("pto.tmatmul ins") == 1 and text.count("pto.tmatmul.acc") == 1
    assert text.count("scf.for %k = %c1 to %c8 step %c1 {") == 1


# ---- pto.range: a loop in the program ----------------------------------------------------------

R, C, CHUNKS = 8, 64, 4


def chunk_sum(x: np.ndarray, out: np.ndarray) -> None:
    """out[block] = sum over CHUNKS column chunks of x's R x (CHUNKS*C) block."""
    b = pto.get_block_idx()
    w = CHUNKS * C
    acc = Tile(TileType.Vec, np.float32, R, C)
    t = Tile(TileType.Vec, np.float32, R, C)
    pto.TLOAD(acc, GlobalTensor(x, (1, 1, 1, R, C), (x.size,) * 3 + (w, 1), offset=b * R * w))
    for k in pto.range(1, CHUNKS):
        g = GlobalTensor(x, (1, 1, 1, R, C), (x.size,) * 3 + (w, 1), offset=b * R * w + k * C)
        pto.TLOAD(t, g)
        pto.TADD(acc, acc, t)
    pto.TSTORE(GlobalTensor(out, (1, 1, 1, R, C), (out.size,) * 3 + (C, 1), offset=b * R * C),
               acc)


@pytest.mark.parametrize("target", TARGETS)
def test_pto_range_is_one_scf_for(target: str) -> None:
    x = np.random.default_rng(5).integers(-50, 50, (3 * R, CHUNKS * C)).astype(np.float32)
    out = np.zeros((3 * R, C), np.float32)
    text, eager, got = _roundtrip(chunk_sum, [x, out], 3, target)
    _same_bits(eager, got)
    assert np.array_equal(got[1], x.reshape(3 * R, CHUNKS, C).sum(axis=1))
    assert text.count("scf.for %k = %c1 to %c4 step %c1 {") == 1
    assert text.count("pto.tadd") == 1
    body = text.split("scf.for", 1)[1].split("\n    }\n", 1)[0]
    assert "arith.muli %k, %c64" in body and "pto.partition_view" in body


def triangle(x: np.ndarray, out: np.ndarray) -> None:
    """Block b adds rows 0..b of x (nested loops; a trip count from the block index)."""
    b = pto.get_block_idx()
    acc = Tile(TileType.Vec, np.float32, 1, C)
    t = Tile(TileType.Vec, np.float32, 1, C)
    pto.TEXPANDS(acc, np.float32(0))
    for i in pto.range(b + 1):
        for j in pto.range(2):
            pto.TLOAD(t, GlobalTensor(x, (1, 1, 1, 1, C), offset=i * 2 * C + j * C))
            pto.TADD(acc, acc, t)
    pto.TSTORE(GlobalTensor(out, (1, 1, 1, 1, C), offset=b * C), acc)


@pytest.mark.parametrize("target", ("cpu", "a5"))
def test_nested_pto_range_with_a_block_dependent_bound(target: str) -> None:
    x = np.random.default_rng(6).integers(-9, 9, (4, 2 * C)).astype(np.float32)
    text, eager, got = _roundtrip(triangle, [x, np.zeros((4, C), np.float32)], 4, target)
    _same_bits(eager, got)
    want = np.cumsum(x.reshape(4, 2, C).sum(axis=1), axis=0)
    assert np.array_equal(got[1], want)
    assert text.count("scf.for") == 2 and "arith.addi %b, %c1" in text


def enums(x: np.ndarray, out: np.ndarray, mask: np.ndarray) -> None:
    a = Tile(TileType.Vec, np.float32, 8, 8)
    c = Tile(TileType.Vec, np.int32, 8, 8)
    m = Tile(TileType.Vec, np.uint8, 8, 32)
    pto.TLOAD(a, GlobalTensor(x, (1, 1, 1, 8, 8)))
    pto.TCVT(c, a, pto.RoundMode.CAST_FLOOR)
    pto.TSTORE(GlobalTensor(out, (1, 1, 1, 8, 8)), c)
    pto.TCMPS(m, a, np.float32(0.5), pto.CmpMode.LT)
    pto.TSTORE(GlobalTensor(mask, (1, 1, 1, 8, 32)), m)


@pytest.mark.parametrize("target", ("cpu", "a2a3"))
def test_enum_operands_in_ptoas_spelling(target: str) -> None:
    x = np.random.default_rng(7).uniform(-3, 3, 64).astype(np.float32)
    text, eager, got = _roundtrip(enums, [x, np.zeros(64, np.int32), np.zeros(256, np.uint8)],
                                  1, target)
    _same_bits(eager, got)
    assert np.array_equal(got[1], np.floor(x).astype(np.int32))
    assert "{rmode = #pto<round_mode FLOOR>}" in text
    assert "{cmpMode = #pto<cmp less_than>}" in text


def chunk_sum_range(x: np.ndarray, out: np.ndarray, squares: bool = False) -> None:
    """chunk_sum with Python's range (``squares``: chunk offsets k*k, not a constant step)."""
    b = pto.get_block_idx()
    w = (CHUNKS * CHUNKS if squares else CHUNKS) * C
    acc = Tile(TileType.Vec, np.float32, R, C)
    t = Tile(TileType.Vec, np.float32, R, C)
    pto.TLOAD(acc, GlobalTensor(x, (1, 1, 1, R, C), (x.size,) * 3 + (w, 1), offset=b * R * w))
    for k in range(1, CHUNKS):
        col = k * k * C if squares else k * C
        pto.TLOAD(t, GlobalTensor(x, (1, 1, 1, R, C), (x.size,) * 3 + (w, 1),
                                  offset=b * R * w + col))
        pto.TADD(acc, acc, t)
    pto.TSTORE(GlobalTensor(out, (1, 1, 1, R, C), (out.size,) * 3 + (C, 1), offset=b * R * C),
               acc)


@pytest.mark.parametrize("squares", [False, True])
def test_python_range_is_rolled_back_when_the_step_is_constant(squares: bool) -> None:
    w = (CHUNKS * CHUNKS if squares else CHUNKS) * C
    x = np.random.default_rng(8).integers(-50, 50, (2 * R, w)).astype(np.float32)
    out = np.zeros((2 * R, C), np.float32)
    text, eager, got = _roundtrip(chunk_sum_range, [x, out, squares], 2, "cpu")
    _same_bits(eager, got)
    cols = [k * k if squares else k for k in range(CHUNKS)]
    assert np.array_equal(got[1], sum(x[:, c * C:(c + 1) * C] for c in cols))
    if squares:  # offsets 64, 256, 576: no constant step, stays unrolled
        assert "scf.for" not in text and text.count("pto.tadd") == CHUNKS - 1
    else:
        assert text.count("scf.for %k = %c1 to %c4 step %c1 {") == 1
        assert text.count("pto.tadd") == 1


def scalars(x: np.ndarray, o1: np.ndarray, o2: np.ndarray, o3: np.ndarray) -> None:
    a = Tile(TileType.Vec, np.float32, 16, 16)
    b = Tile(TileType.Vec, np.float32, 16, 16)
    pto.TLOAD(a, GlobalTensor(x, (1, 1, 1, 16, 16)))
    pto.TMULS(b, a, np.float32(2.5))
    pto.TADDS(b, b, np.float32(-1))
    pto.TMAXS(b, b, np.float32(0))
    pto.TSTORE(GlobalTensor(o1, (1, 1, 1, 16, 16)), b)
    t = Tile(TileType.Vec, np.float32, 16, 16)
    pto.TTRANS(t, a, b)
    pto.TSTORE(GlobalTensor(o2, (1, 1, 1, 16, 16)), t)
    cs = Tile(TileType.Vec, np.float32, 1, 16)
    pto.TCOLSUM(cs, a, b, True)
    pto.TSTORE(GlobalTensor(o3, (1, 1, 1, 1, 16)), cs)


@pytest.mark.parametrize("target", TARGETS)
def test_scalar_operands_and_attribute_operands(target: str) -> None:
    x = (np.random.default_rng(9).integers(-16, 16, 256) / 4).astype(np.float32)
    args = [x, np.zeros(256, np.float32), np.zeros(256, np.float32), np.zeros(16, np.float32)]
    text, eager, got = _roundtrip(scalars, args, 1, target)
    _same_bits(eager, got)
    m = x.reshape(16, 16)
    assert np.array_equal(got[1].reshape(16, 16), np.maximum(m * 2.5 - 1, 0))
    assert np.array_equal(got[2].reshape(16, 16), m.T)
    assert np.array_equal(got[3], m.sum(axis=0))
    assert "pto.tmuls ins(%a, %cst : !T0, f32)" in text
    assert "arith.constant 2.5 : f32" in text and "arith.constant -1.0 : f32" in text
    assert "{isBinary = true}" in text  # an attribute in PTOAS, an operand in C++


def test_pto_range_outside_export_is_range() -> None:
    assert list(pto.range(2, 8, 3)) == [2, 5]
    assert pto.min(3, 5) == 3 and pto.max(3, 5) == 5


def test_export_verifies_and_uses_aliases() -> None:
    x = np.arange(2 * R * CHUNKS * C, dtype=np.float32).reshape(2 * R, CHUNKS * C)
    text = pto.export(chunk_sum, x, np.zeros((2 * R, C), np.float32), blocks=2)
    head = text.splitlines()[0]
    assert head.startswith("!T0 = !pto.tile_buf<loc=vec, dtype=f32, rows=8, cols=64")
    assert "!pto.tile_buf" not in "\n".join(text.splitlines()[1:])


# ---- what the IR cannot express: located errors -------------------------------------------------

def _line_of(fn: Any, needle: str) -> int:
    import inspect

    src, start = inspect.getsourcelines(fn)
    return start + next(k for k, line in enumerate(src) if needle in line)


def branch_on_block(x: np.ndarray) -> None:
    b = pto.get_block_idx()
    t = Tile(TileType.Vec, np.float32, 8, 8)
    if b == 0:  # differs between blocks
        pto.TLOAD(t, GlobalTensor(x, (1, 1, 1, 8, 8), (64, 64, 64, 8, 1)))


def builtin_min(x: np.ndarray) -> None:
    b = pto.get_block_idx()
    n = min(8, 20 - b * 8)  # builtin min compares
    pto.TLOAD(Tile(TileType.Vec, np.float32, 8, 8), GlobalTensor(x, (1, 1, 1, n, 8)))


def range_over_block(x: np.ndarray) -> None:
    b = pto.get_block_idx()
    for _ in range(b):  # b as a Python int
        pass


def not_an_argument(x: np.ndarray) -> None:
    other = np.zeros(64, np.float32)
    pto.TLOAD(Tile(TileType.Vec, np.float32, 8, 8), GlobalTensor(other, (1, 1, 1, 8, 8)))


def index_by_block(x: np.ndarray) -> None:
    b = pto.get_block_idx()
    pto.TLOAD(Tile(TileType.Vec, np.float32, 8, 8), GlobalTensor(x[b], (1, 1, 1, 8, 8)))


def branch_on_loop_index(x: np.ndarray) -> None:
    t = Tile(TileType.Vec, np.float32, 8, 8)
    for k in pto.range(3):
        if k == 0:  # traced once: cannot branch
            pto.TLOAD(t, GlobalTensor(x, (1, 1, 1, 8, 8), (64, 64, 64, 8, 1)))


@pytest.mark.parametrize(("kernel", "needle", "message"), [
    (branch_on_block, "if b == 0", r"comparison \(==\) of a value that differs between blocks"),
    (builtin_min, "n = min(", r"comparison .* \(use pto.min / pto.max"),
    (range_over_block, "for _ in range(b)", r"use as a Python integer of a value that differs"),
    (not_an_argument, "pto.TLOAD", r"GlobalTensor over an array that is not an argument"),
    (index_by_block, "x[b]", r"use as a Python integer of a value that differs"),
    (branch_on_loop_index, "if k == 0", r"depends on a pto.range loop index"),
])
def test_located_errors(kernel: Any, needle: str, message: str) -> None:
    x = np.zeros((3, 64), np.float32)
    with pytest.raises(ExportError, match=message) as ei:
        pto.export(kernel, x, blocks=3)
    loc = ei.value.loc
    assert loc is not None and loc.file == __file__ and loc.line == _line_of(kernel, needle)


def row_one(x: np.ndarray, out: np.ndarray) -> None:
    t = Tile(TileType.Vec, np.float32, 8, 8)
    pto.TLOAD(t, GlobalTensor(x[1], (1, 1, 1, 8, 8)))  # a view into an argument
    pto.TSTORE(GlobalTensor(out, (1, 1, 1, 8, 8)), t)


def test_a_view_into_an_argument_is_an_offset() -> None:
    x = np.arange(128, dtype=np.float32).reshape(2, 64)
    text, eager, got = _roundtrip(row_one, [x, np.zeros(64, np.float32)], 1, "cpu")
    _same_bits(eager, got)
    assert np.array_equal(got[1], x[1])
    assert "offsets = [%c8, %c0]" in text


def reads_tile(x: np.ndarray, out: np.ndarray) -> None:
    t = Tile(TileType.Vec, np.float32, 8, 8)
    pto.TLOAD(t, GlobalTensor(x, (1, 1, 1, 8, 8)))
    if t.numpy()[0, 0] > 0:  # tile data into Python
        pto.TADDS(t, t, np.float32(1))
    pto.TSTORE(GlobalTensor(out, (1, 1, 1, 8, 8)), t)


def test_tile_data_into_python_is_a_located_error() -> None:
    with pytest.raises(ExportError, match=r"reads tile values into Python") as ei:
        pto.export(reads_tile, np.ones(64, np.float32), np.zeros(64, np.float32))
    assert ei.value.loc is not None and ei.value.loc.line == _line_of(reads_tile, "t.numpy()")


def test_verify_compares_bits_with_the_eager_kernel(monkeypatch: pytest.MonkeyPatch) -> None:
    """What the trace cannot see (here: a program tampered with after tracing) is caught by
    the run against the eager kernel."""
    from ptoisa import exporter

    def kernel(x: np.ndarray, out: np.ndarray) -> None:
        t = Tile(TileType.Vec, np.float32, 8, 8)
        pto.TLOAD(t, GlobalTensor(x, (1, 1, 1, 8, 8)))
        pto.TADDS(t, t, np.float32(1))
        pto.TSTORE(GlobalTensor(out, (1, 1, 1, 8, 8)), t)

    real = exporter.with_aliases
    monkeypatch.setattr(exporter, "with_aliases",
                        lambda text, types: real(text.replace("1.0 : f32", "2.0 : f32"), types))
    with pytest.raises(ExportError, match="differs from the eager kernel"):
        pto.export(kernel, np.ones(64, np.float32), np.zeros(64, np.float32))


# ---- the command line --------------------------------------------------------------------------

def test_cli_export_then_check(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "softmax.pto"
    rc = cli.main(["export", str(ROOT / "examples" / "softmax.py") + ":softmax_kernel",
                   "--blocks", "6", "--target", "a5", "--arg", "x=rand:45x64:f32",
                   "--arg", "out=zeros:45x64:f32", "--arg", "n_rows=45", "-o", str(out)])
    assert rc == 0
    assert "same bits as the eager kernel" in capsys.readouterr().err
    assert cli.main(["check", str(out), "--target", "a5"]) == 0
    x = np.random.default_rng(0).standard_normal((45, 64)).astype(np.float32)
    res = np.zeros_like(x)
    pto.load(out, target="a5").softmax_kernel(x, res, blocks=6)
    assert np.allclose(res.sum(axis=1), 1, atol=1e-5)


def test_cli_export_errors(capsys: pytest.CaptureFixture[str]) -> None:
    path = str(ROOT / "examples" / "softmax.py")
    assert cli.main(["export", path + ":softmax_kernel", "--arg", "x=zeros:8x64:f32"]) == 1
    assert "missing --arg for out, n_rows" in capsys.readouterr().err
    assert cli.main(["export", path + ":nope"]) == 1
    assert "has no function 'nope'" in capsys.readouterr().err


def test_gemm_layouts_survive() -> None:
    """Mat/Left/Right/Acc tiles print as the tile_buf types the C++ aliases stand for."""
    def mm(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> None:
        ta = Tile(TileType.Mat, np.float16, 16, 16, BLayout.ColMajor, None, SLayout.RowMajor)
        tb = Tile(TileType.Mat, np.float16, 16, 16, BLayout.ColMajor, None, SLayout.RowMajor)
        left, right = pto.TileLeft(np.float16, 16, 16), pto.TileRight(np.float16, 16, 16)
        acc = pto.TileAcc(np.float32, 16, 16)
        pto.TLOAD(ta, GlobalTensor(a, (1, 1, 1, 16, 16)))
        pto.TLOAD(tb, GlobalTensor(b, (1, 1, 1, 16, 16)))
        pto.TMOV(left, ta)
        pto.TMOV(right, tb)
        pto.TMATMUL(acc, left, right)
        pto.TSTORE(GlobalTensor(c, (1, 1, 1, 16, 16)), acc)

    a = np.eye(16, dtype=np.float16)
    b = np.arange(256, dtype=np.float16).reshape(16, 16)
    for target in TARGETS:
        text = pto.export(mm, a, b, np.zeros((16, 16), np.float32), target=target)
        assert "loc=acc, dtype=f32, rows=16, cols=16" in text


def row_expand(x: np.ndarray, s: np.ndarray, out: np.ndarray, mode: int = 2) -> None:
    """TROWEXPANDADD with no src1Col (the C++ call): src1 RowMajor 8 columns (mode 2), a
    ColMajor column (mode 1), or src0 the expanded operand (no src1Col computes that)."""
    a = Tile(TileType.Vec, np.float32, 8, 16)
    b = Tile(TileType.Vec, np.float32, 8, 8) if mode == 2 else \
        Tile(TileType.Vec, np.float32, 8, 1, BLayout.ColMajor)
    d = Tile(TileType.Vec, np.float32, 8, 16)
    pto.TLOAD(a, GlobalTensor(x, (1, 1, 1, 8, 16)))
    pto.TLOAD(b, GlobalTensor(s, (1, 1, 1, 8, b.cols)))
    if mode == 0:
        pto.TROWEXPANDADD(d, b, a)
    else:
        pto.TROWEXPANDADD(d, a, b)
    pto.TSTORE(GlobalTensor(out, (1, 1, 1, 8, 16)), d)


def row_expand_block(x: np.ndarray, s: np.ndarray, out: np.ndarray) -> None:
    row_expand(x, s, out, 2)


def row_expand_swapped(x: np.ndarray, s: np.ndarray, out: np.ndarray) -> None:
    row_expand(x, s, out, 0)


@pytest.mark.parametrize(("mode", "attr"), [(2, "{src1Col = 8}")])
def test_row_expand_writes_the_src1col_that_computes_the_call(mode: int, attr: str) -> None:
    """A .pto trowexpand* without src1Col is src1Col = 1 (PTOAS's TileLib): the exporter
    writes the src1Col that computes what the eager call (the ISA's modes) does (mode 1, a
    ColMajor column, is src1Col = 1: examples/flash_softmax.pto)."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal(128).astype(np.float32)
    s = rng.standard_normal(64 if mode == 2 else 8).astype(np.float32)
    text, eager, got = _roundtrip(row_expand_block,
                                  [x, s, np.zeros(128, np.float32)], 1, "a5")
    _same_bits(eager, got)
    b = s.reshape(8, -1)
    want = x.reshape(8, 16) + (np.tile(b, (1, 2)) if mode == 2 else b)
    np.testing.assert_allclose(got[2].reshape(8, 16), want, rtol=1e-6)
    assert attr in text


def test_row_expand_with_src0_expanded_is_not_exported() -> None:
    with pytest.raises(ExportError, match="no value of its PTOAS attribute src1Col computes"):
        pto.export(row_expand_swapped, np.zeros(128, np.float32),
                   np.zeros(8, np.float32), np.zeros(128, np.float32), target="a5",
                   verify=False)

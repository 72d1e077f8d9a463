"""Speed at scale: each benchmark at several sizes and block counts against the plain-numpy
version of the same maths, in one process, plus the fixed cost of a launch.

    python benchmarks/scale.py [--repeat N] [--target a2a3|cpu|a5] [--quick] [--json FILE]
        [--only TEXT] [--plans [--size TEXT]]

Every size runs numpy and ptoisa alternately, ``--repeat`` rounds; the ratio printed is the
median of the per-round ratios (load drifts on a shared machine hit both sides of a round
alike) and ``spread`` is the half-width of the middle half of those ratios, relative to the
median: how noisy that row was. Every result is checked against numpy first.

Kernels (eager intrinsics, ``pto.launch``):

* vec-add f32, one 64x64 tile per block: 1 to 4096 blocks (4K to 16M elements);
* row softmax f32, 8x1024 tiles: 8 to 1024 blocks (64 to 8192 rows);
* GEMM f16 / bf16 -> f32, 64x64x64 tiles: 128^3 to 1024^3 (4 to 256 blocks);
* bf16 decode projections (Qwen3 decode shapes), eager: a chain of 8 x (16x512 @ 512x64),
  and 16x25600 @ 25600x128 in 256-deep K-steps, one block;
* the same projections as the PTOAS corpus writes them (``.pto``, when ``../shared`` is beside
  the checkout): ``qwen3_decode_incore_1`` (16x8192 @ 8192x256 in 4 x 16 K-steps of
  16x512 @ 512x64) and ``qwen3_decode_incore_15`` (16x25600 @ 25600x128, 100 K-steps);
* flash attention forward f32 (``kernels.flash_attention``), head 128, 64-row blocks, seq 256
  to 2048 (4 to 32 blocks), against the same blocked algorithm in numpy over all query blocks
  at once (``kernels.flash_attention_numpy``).

The numpy side of a bf16 product is ``a.astype(f32) @ b.astype(f32)`` (ml_dtypes' casts).

``--plans`` (issue #29: "every size from 64K elements / 128^3 up within 2x"; run it with
``OPENBLAS_NUM_THREADS=1``): the sizes from 64K elements (vec-add, softmax) and 128^3 (GEMM)
up, flash attention from seq 512, each three ways - numpy's, the launch interpreted
(``plans=False``) and replayed from its plan (``plans=True``: what a user's loop of launches
takes; ``.pto`` programs plan by default) - in rounds alternating in both orders, each timing
enough launches for ~20 ms, in process CPU time with wall time beside it. The planned bits
are checked against the interpreted ones first. ``--size TEXT``: only sizes containing it.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import ptoisa as pto  # noqa: E402
from ptoisa import BLayout, GlobalTensor, SLayout, Tile, TileType  # noqa: E402

BF16 = ml_dtypes.bfloat16


def cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def rounds(fns: list[Callable[[], Any]], repeat: int) -> list[list[float]]:
    """Times (s) of ``fns`` run alternately, ``repeat`` rounds (after one warm-up each)."""
    for f in fns:
        f()
    out: list[list[float]] = [[] for _ in fns]
    for _ in range(repeat):
        for f, ts in zip(fns, out, strict=True):
            t0 = time.perf_counter()
            f()
            ts.append(time.perf_counter() - t0)
    return out


def ratio_stats(num: list[float], den: list[float]) -> tuple[float, float]:
    """Median of per-round ratios and the relative half-width of their middle half."""
    r = sorted(a / b for a, b in zip(num, den, strict=True))
    med = statistics.median(r)
    q1, q3 = r[len(r) // 4], r[(3 * len(r)) // 4]
    return med, (q3 - q1) / 2 / med


# ---- kernels --------------------------------------------------------------------------------

def vec_add(x: np.ndarray, y: np.ndarray, z: np.ndarray) -> None:
    b = pto.get_block_idx()
    r, c = 64, 64
    n = r * c
    shape, stride = (1, 1, 1, r, c), (n, n, n, c, 1)
    tx = Tile(TileType.Vec, np.float32, r, c)
    ty = Tile(TileType.Vec, np.float32, r, c)
    tz = Tile(TileType.Vec, np.float32, r, c)
    pto.TLOAD(tx, GlobalTensor(x, shape, stride, offset=b * n))
    pto.TLOAD(ty, GlobalTensor(y, shape, stride, offset=b * n))
    pto.TADD(tz, tx, ty)
    pto.TSTORE(GlobalTensor(z, shape, stride, offset=b * n), tz)


def empty_kernel() -> None:
    pass


def softmax(x: np.ndarray, out: np.ndarray) -> None:
    import kernels as K

    K.softmax(x, out)


def _softmax_ref(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def gemm(a: np.ndarray, b: np.ndarray, c: np.ndarray, m: int, k: int, n: int,
         tm: int, tk: int, tn: int) -> None:
    """C (m x n, f32) = A (m x k) @ B (k x n) over a grid of (m/tm) x (n/tn) blocks, each
    running k/tk K-steps (TLOAD A and B panels, TMOV to L0A/L0B, TMATMUL(_ACC))."""
    dt = a.dtype
    blk = pto.get_block_idx()
    gn = n // tn
    bi, bj = blk // gn, blk % gn
    ta = Tile(TileType.Mat, dt, tm, tk, BLayout.ColMajor, None, SLayout.RowMajor)
    tb = Tile(TileType.Mat, dt, tk, tn, BLayout.ColMajor, None, SLayout.RowMajor)
    left = pto.TileLeft(dt, tm, tk)
    right = pto.TileRight(dt, tk, tn)
    acc = pto.TileAcc(np.float32, tm, tn)
    big = m * k * n
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


def chain(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> None:
    """Decode chain: for each of the h heads, C_h (16x64) = A_h (16x512) @ B_h (512x64), one
    K-step each, on one set of tiles."""
    h, m, k = a.shape
    n = b.shape[2]
    big = a.size + b.size
    ta = Tile(TileType.Mat, a.dtype, m, k, BLayout.ColMajor, None, SLayout.RowMajor)
    tb = Tile(TileType.Mat, a.dtype, k, n, BLayout.ColMajor, None, SLayout.RowMajor)
    left = pto.TileLeft(a.dtype, m, k)
    right = pto.TileRight(a.dtype, k, n)
    acc = pto.TileAcc(np.float32, m, n)
    for i in range(h):
        pto.TLOAD(ta, GlobalTensor(a, (1, 1, 1, m, k), (big, big, big, k, 1), offset=i * m * k))
        pto.TLOAD(tb, GlobalTensor(b, (1, 1, 1, k, n), (big, big, big, n, 1), offset=i * k * n))
        pto.TMOV(left, ta)
        pto.TMOV(right, tb)
        pto.TMATMUL(acc, left, right)
        pto.TSTORE(GlobalTensor(c, (1, 1, 1, m, n), (big, big, big, n, 1), offset=i * m * n),
                   acc)


# ---- cases ----------------------------------------------------------------------------------

Case = tuple[str, str, Callable[[], Any], Callable[[], Any], Callable[[], None]]


def vec_add_cases(target: str, sizes: list[int]) -> list[Case]:
    out = []
    for blocks in sizes:
        n = blocks * 4096
        rng = np.random.default_rng(0)
        x, y = rng.standard_normal(n, dtype=np.float32), rng.standard_normal(n, dtype=np.float32)
        z = np.zeros(n, np.float32)

        def check(x=x, y=y, z=z) -> None:
            assert np.array_equal(z, x + y), "vec-add: wrong result"
        out.append(("vec-add f32", f"{n >> 10}K, {blocks} blocks",
                    lambda x=x, y=y: x + y,
                    lambda plans=None, x=x, y=y, z=z, b=blocks: pto.launch(
                        vec_add, x, y, z, blocks=b, target=target, plans=plans), check))
    return out


def softmax_cases(target: str, sizes: list[int]) -> list[Case]:
    out = []
    for rows in sizes:
        x = np.random.default_rng(1).standard_normal((rows, 1024), dtype=np.float32)
        o = np.zeros_like(x)

        def check(x=x, o=o) -> None:
            assert np.allclose(o, _softmax_ref(x), rtol=1e-5, atol=1e-7), "softmax: wrong"
        out.append(("row softmax f32", f"{rows}x1024, {rows // 8} blocks",
                    lambda x=x: _softmax_ref(x),
                    lambda plans=None, x=x, o=o, b=rows // 8: pto.launch(
                        softmax, x, o, blocks=b, target=target, plans=plans), check))
    return out


def gemm_cases(target: str, dtype: Any, name: str, sizes: list[int]) -> list[Case]:
    out = []
    for n in sizes:
        rng = np.random.default_rng(2)
        a = rng.standard_normal((n, n)).astype(dtype)
        b = rng.standard_normal((n, n)).astype(dtype)
        c = np.zeros((n, n), np.float32)
        t = 64

        def check(a=a, b=b, c=c) -> None:
            ref = a.astype(np.float64) @ b.astype(np.float64)
            assert np.allclose(c, ref, rtol=1e-4, atol=1e-3), f"{name}: wrong result"
        out.append((f"GEMM {name}->f32", f"{n}^3, {(n // t) ** 2} blocks",
                    lambda a=a, b=b: a.astype(np.float32) @ b.astype(np.float32),
                    lambda plans=None, a=a, b=b, c=c, n=n, t=t: pto.launch(
                        gemm, a, b, c, n, n, n, t, t, t, blocks=(n // t) ** 2, target=target,
                        plans=plans),
                    check))
    return out


def decode_cases(target: str) -> list[Case]:
    rng = np.random.default_rng(3)
    h = 8
    a = rng.standard_normal((h, 16, 512)).astype(BF16)
    b = rng.standard_normal((h, 512, 64)).astype(BF16)
    c = np.zeros((h, 16, 64), np.float32)

    def np_chain() -> list[np.ndarray]:
        return [a[i].astype(np.float32) @ b[i].astype(np.float32) for i in range(h)]

    def check_chain() -> None:
        ref = np.matmul(a.astype(np.float64), b.astype(np.float64))
        assert np.allclose(c, ref, rtol=1e-4, atol=1e-3), "decode chain: wrong result"
    k = 25600
    x = rng.standard_normal((16, k)).astype(BF16)
    w = (rng.standard_normal((k, 128)) * 0.05).astype(BF16)
    y = np.zeros((16, 128), np.float32)

    def check_proj() -> None:
        ref = x.astype(np.float64) @ w.astype(np.float64)
        assert np.allclose(y, ref, rtol=1e-4, atol=1e-3), "decode projection: wrong result"
    return [
        ("bf16 decode chain", "8 x 16x512 @ 512x64, 1 block", np_chain,
         lambda plans=None: pto.launch(chain, a, b, c, blocks=1, target=target, plans=plans),
         check_chain),
        ("bf16 decode projection", "16x25600 @ 25600x128, 1 block",
         lambda: x.astype(np.float32) @ w.astype(np.float32),
         lambda plans=None: pto.launch(gemm, x, w, y, 16, k, 128, 16, 256, 128, blocks=1,
                                       target=target, plans=plans),
         check_proj),
    ]


#: the Qwen3 decode kernels of the PTOAS corpus (next to the checkout, as the tests find it)
QWEN3 = HERE.parent.parent / "shared" / "corpus" / "ptoas" / "test" / "samples" / "Qwen3DecodeA3"


def _plans(plans: bool | None) -> dict[str, bool]:
    """``plans=`` for ``Program.run`` only when given (plans_speed.py wraps ``run`` with its
    own)."""
    return {} if plans is None else {"plans": plans}


def corpus_decode_cases(target: str) -> list[Case]:
    """Two real Qwen3 decode projections as PTOAS writes them (``.pto``, tiles placed with
    ``alloc_tile addr`` inside the K-loop), run as given: incore_1 computes 4 blocks of 64
    output columns of 16x8192 @ 8192x8192 in 512-deep K-steps; incore_15 is 16x25600 @
    25600x128 (one 128-column block of an 8192-wide weight) in 256-deep K-steps. numpy
    multiplies the same rows by the same (strided) weight columns. Only the columns the kernels
    read hold values (the weights are mostly untouched zero pages)."""
    if not QWEN3.is_dir():
        return []
    rng = np.random.default_rng(4)
    out: list[Case] = []
    x1 = rng.standard_normal((16, 8192)).astype(BF16)
    w1 = np.zeros((8192, 8192), BF16)
    blk = 5  # output columns [blk * 256, blk * 256 + 256)
    c1 = slice(blk * 256, blk * 256 + 256)
    w1[:, c1] = (rng.standard_normal((8192, 256)) * 0.02).astype(BF16)
    y1 = np.zeros((16, 8192), np.float32)
    p1 = pto.load(QWEN3 / "qwen3_decode_incore_1.pto", target=target)

    def check1() -> None:
        ref = x1.astype(np.float64) @ w1[:, c1].astype(np.float64)
        assert np.allclose(y1[:, c1], ref, rtol=1e-4, atol=1e-3), "incore_1: wrong result"
    out.append(("Qwen3 incore_1 .pto", "16x8192 @ 8192x256, 4x16 K-steps",
                lambda: x1.astype(np.float32) @ w1[:, c1].astype(np.float32),
                lambda plans=None: p1.run("qwen3_decode_incore_1", x1, y1, w1, 0, blk,
                                          target=target, **_plans(plans)),
                check1))
    x15 = rng.standard_normal((16, 25600)).astype(BF16)
    w15 = np.zeros((25600, 8192), BF16)
    col = 1024
    c15 = slice(col, col + 128)
    w15[:, c15] = (rng.standard_normal((25600, 128)) * 0.05).astype(BF16)
    y15 = np.zeros((16, 128), np.float32)
    p15 = pto.load(QWEN3 / "qwen3_decode_incore_15.pto", target=target)

    def check15() -> None:
        ref = x15.astype(np.float64) @ w15[:, c15].astype(np.float64)
        assert np.allclose(y15, ref, rtol=1e-4, atol=1e-3), "incore_15: wrong result"
    out.append(("Qwen3 incore_15 .pto", "16x25600 @ 25600x128, 100 K-steps",
                lambda: x15.astype(np.float32) @ w15[:, c15].astype(np.float32),
                lambda plans=None: p15.run("qwen3_decode_incore_15", x15, w15, y15, col,
                                           target=target, **_plans(plans)),
                check15))
    return out


def flash_cases(target: str, seqs: list[int]) -> list[Case]:
    import kernels as K

    out = []
    for seq in seqs:
        rng = np.random.default_rng(5)
        q, k, v = (rng.standard_normal((seq, K.FA_D), dtype=np.float32) for _ in range(3))
        o = np.zeros_like(q)
        nb = seq // K.FA_B
        s_gm, p_gm = np.zeros(nb * K.FA_B * K.FA_B, np.float32), np.zeros(nb * K.FA_B ** 2,
                                                                             np.float32)
        pv_gm = np.zeros(nb * K.FA_B * K.FA_D, np.float32)

        def check(q=q, k=k, v=v, o=o) -> None:
            ref = K.flash_attention_numpy(q, k, v)
            assert np.allclose(o, ref, rtol=1e-5, atol=1e-6), "flash attention: wrong result"
        out.append(("flash attention fwd f32", f"seq {seq}, head 128, {nb} blocks",
                    lambda q=q, k=k, v=v: K.flash_attention_numpy(q, k, v),
                    lambda plans=None, q=q, k=k, v=v, o=o, a=s_gm, b=p_gm, c=pv_gm, nb=nb:
                    pto.launch(K.flash_attention, q, k, v, o, a, b, c, blocks=nb,
                               target=target, plans=plans),
                    check))
    return out


def launch_cost(target: str, repeat: int) -> tuple[float, float, float]:
    """Fixed cost of a launch (us): an empty kernel; a 1-block vec-add (4 instructions) minus
    numpy's add of the same 4096 elements; and the same at 256 blocks minus numpy's 1M add."""
    x1, y1, z1 = (np.ones(4096, np.float32) for _ in range(3))
    x2, y2, z2 = (np.ones(1 << 20, np.float32) for _ in range(3))
    t = rounds([lambda: pto.launch(empty_kernel, blocks=1, target=target),
                lambda: pto.launch(vec_add, x1, y1, z1, blocks=1, target=target),
                lambda: np.add(x1, y1, out=z1),
                lambda: pto.launch(vec_add, x2, y2, z2, blocks=256, target=target),
                lambda: np.add(x2, y2, out=z2)], max(repeat, 31))
    med = [statistics.median(ts) * 1e6 for ts in t]
    return med[0], med[1] - med[2], med[3] - med[4]


def _arrays(fn: Callable[..., Any]) -> list[np.ndarray]:
    """The arrays a case's launch holds (its defaults and closure, as ab.py digests them)."""
    return [v for v in (*(fn.__defaults__ or ()), *(c.cell_contents for c in
                                                   (fn.__closure__ or ())))
            if isinstance(v, np.ndarray)]


def _timed(fn: Callable[[], Any], k: int) -> tuple[float, float]:
    """Process CPU time and wall time (s) per call, over ``k`` calls."""
    c0, w0 = time.process_time(), time.perf_counter()
    for _ in range(k):
        fn()
    return (time.process_time() - c0) / k, (time.perf_counter() - w0) / k


def run_plans(cases: list[Case], repeat: int) -> list[dict[str, Any]]:
    """``--plans``: each case three ways - numpy's, the launch interpreted (``plans=False``)
    and replayed from its plan (``plans=True``, after the two recording launches and the
    checked one) - in alternating rounds (every other round in the opposite order, so each
    way follows each other way alike), each timing ``k`` launches in process CPU time and
    wall time. The planned bits are checked against the interpreted ones first: every array
    the interpreted launch changed is zeroed and must come back the same from a replay."""
    print(f"{'kernel':24s} {'size':32s} {'k':>3s} {'numpy ms':>9s} {'interp ms':>10s} "
          f"{'(x np)':>7s} {'planned ms':>11s} {'(x np)':>7s} {'spread':>6s}  "
          f"{'wall: np':>8s} {'interp':>7s} {'planned':>7s} {'(x np)':>7s}")
    rows = []
    for name, size, f_np, f_pto, check in cases:
        arrays = _arrays(f_pto)
        before = [a.tobytes() for a in arrays]
        f_pto(False)
        check()
        outs = [a for a, b in zip(arrays, before, strict=True) if a.tobytes() != b]
        want = [a.copy() for a in outs]
        for _ in range(3):  # two recording launches, one checked against the interpreter
            f_pto(True)
        for o in outs:
            o[...] = 0
        f_pto(True)
        if any(o.tobytes() != w.tobytes() for o, w in zip(outs, want, strict=True)):
            raise SystemExit(f"{name} {size}: the planned bits differ from the interpreted")
        check()
        ways: list[Callable[[], Any]] = [f_np, lambda f=f_pto: f(False), lambda f=f_pto: f(True)]
        t_plan = _timed(ways[2], 1)[0]
        k = max(1, min(20, round(0.02 / max(t_plan, 1e-6))))
        t: list[list[tuple[float, float]]] = [[], [], []]
        for r in range(repeat):
            order = [0, 1, 2] if r % 2 == 0 else [2, 1, 0]
            for i in order:
                t[i].append(_timed(ways[i], k))
        cpu = [[c for c, _ in ts] for ts in t]
        wall = [[w for _, w in ts] for ts in t]
        r_off, _ = ratio_stats(cpu[1], cpu[0])
        r_on, spread = ratio_stats(cpu[2], cpu[0])
        rw_on, _ = ratio_stats(wall[2], wall[0])
        m = [statistics.median(c) * 1e3 for c in cpu]
        mw = [statistics.median(w) * 1e3 for w in wall]
        print(f"{name:24s} {size:32s} {k:3d} {m[0]:9.3f} {m[1]:10.3f} {r_off:6.2f}x "
              f"{m[2]:11.3f} {r_on:6.2f}x {100 * spread:5.0f}%  {mw[0]:8.3f} {mw[1]:7.3f} "
              f"{mw[2]:7.3f} {rw_on:6.2f}x", flush=True)
        rows.append({"kernel": name, "size": size, "launches": k, "numpy_cpu_ms": m[0],
                     "interp_cpu_ms": m[1], "planned_cpu_ms": m[2], "ratio_interp": r_off,
                     "ratio_planned": r_on, "spread_planned": spread, "numpy_wall_ms": mw[0],
                     "interp_wall_ms": mw[1], "planned_wall_ms": mw[2],
                     "ratio_planned_wall": rw_on})
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--target", default="a2a3", help="default: a2a3, as everywhere")
    ap.add_argument("--repeat", type=int, default=15)
    ap.add_argument("--quick", action="store_true", help="the goal sizes only")
    ap.add_argument("--json", help="also write the rows to this file")
    ap.add_argument("--only", help="only cases whose name contains this")
    ap.add_argument("--plans", action="store_true",
                    help="numpy, interpreted and planned launches in process CPU time (run "
                    "with OPENBLAS_NUM_THREADS=1), from 64K elements / 128^3 up")
    ap.add_argument("--size", help="with --plans: only sizes containing this")
    args = ap.parse_args()
    tgt = args.target
    cases: list[Case] = []
    if args.plans:
        cases += vec_add_cases(tgt, [16, 256, 4096])
        cases += softmax_cases(tgt, [64, 512, 4096, 8192])
        cases += gemm_cases(tgt, np.float16, "f16", [128, 256, 512, 1024])
        cases += gemm_cases(tgt, BF16, "bf16", [128, 256, 512, 1024])
    elif args.quick:
        cases += vec_add_cases(tgt, [256, 4096])
        cases += softmax_cases(tgt, [4096])
        cases += gemm_cases(tgt, np.float16, "f16", [512])
        cases += gemm_cases(tgt, BF16, "bf16", [512])
    else:
        cases += vec_add_cases(tgt, [1, 16, 256, 4096])
        cases += softmax_cases(tgt, [64, 512, 4096, 8192])
        cases += gemm_cases(tgt, np.float16, "f16", [128, 256, 512, 1024])
        cases += gemm_cases(tgt, BF16, "bf16", [128, 256, 512, 1024])
    cases += decode_cases(tgt)
    cases += corpus_decode_cases(tgt)
    cases += flash_cases(tgt, [2048] if args.quick else
                         [512, 1024, 2048] if args.plans else [256, 512, 1024, 2048])
    if args.only:
        cases = [c for c in cases if args.only in c[0]]
    if args.size:
        cases = [c for c in cases if args.size in c[1]]
    if args.plans:
        import os

        print(f"CPU: {cpu_name()}, {len(os.sched_getaffinity(0))} cores; numpy "
              f"{np.__version__}; target {tgt}; OPENBLAS_NUM_THREADS="
              f"{os.environ.get('OPENBLAS_NUM_THREADS', '(unset)')}; {args.repeat} rounds, "
              "process CPU ms per launch, ratios the medians of the rounds' ratios")
        rows = run_plans(cases, args.repeat)
        if args.json:
            Path(args.json).write_text(json.dumps(rows, indent=1))
        return
    print(f"CPU: {cpu_name()}, {len(__import__('os').sched_getaffinity(0))} cores; "
          f"numpy {np.__version__}; target {tgt}; {args.repeat} alternating rounds")
    print(f"{'kernel':24s} {'size':32s} {'numpy ms':>9s} {'ptoisa ms':>10s} {'ratio':>6s} "
          f"{'spread':>7s}")
    rows = []
    for name, size, f_np, f_pto, check in cases:
        f_pto()
        check()
        t_np, t_pto = rounds([f_np, f_pto], args.repeat)
        ratio, spread = ratio_stats(t_pto, t_np)
        m_np, m_pto = statistics.median(t_np) * 1e3, statistics.median(t_pto) * 1e3
        print(f"{name:24s} {size:32s} {m_np:9.3f} {m_pto:10.3f} {ratio:6.2f} "
              f"{100 * spread:6.0f}%", flush=True)
        rows.append({"kernel": name, "size": size, "numpy_ms": m_np, "ptoisa_ms": m_pto,
                     "ratio": ratio, "spread": spread})
    if not args.only:
        empty, one, many = launch_cost(tgt, args.repeat)
        print(f"fixed cost of a launch: empty kernel {empty:.0f} us; vec-add 1 block (4 "
              f"instructions) {one:.0f} us over numpy; 256 blocks {many:.0f} us over numpy")
        rows.append({"kernel": "launch", "empty_us": empty, "one_block_us": one,
                     "blocks256_us": many})
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()

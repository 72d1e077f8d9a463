"""Multi-rank kernels for every communication instruction, each with its inputs per rank and an
independent expectation (numpy written from the ISA pages). Used by the in-process tests
(test_ranks_local.py) and by mpi_main.py, which runs them under ``mpiexec`` and compares every
rank's arrays bit for bit with the in-process backend and with the expectation."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import reduce
from typing import Any

import numpy as np

import ptoisa as pto
from ptoisa.concurrent import comm
from ptoisa.tensor import GlobalTensor
from ptoisa.tile import Tile


def gt(a: np.ndarray, rows: int, cols: int, row_stride: int | None = None,
       offset: int = 0) -> GlobalTensor:
    rs = cols if row_stride is None else row_stride
    return GlobalTensor(a, (1, 1, 1, rows, cols), (rows * rs, rows * rs, rows * rs, rs, 1),
                        offset=offset)


def vec(dtype: Any, rows: int, cols: int) -> Tile:
    return Tile("Vec", dtype, rows, cols)


def _nxt() -> int:
    return (comm.get_rank() + 1) % comm.get_rank_num()


def _prv() -> int:
    return (comm.get_rank() - 1) % comm.get_rank_num()


Args = list[np.ndarray]


@dataclass
class Case:
    name: str
    kernel: Callable[..., None]
    inputs: Callable[[int], list[Args]]            # n -> the arguments of every rank
    expect: Callable[[int, list[Args]], list[Args]]  # n, inputs -> every rank's arrays after


def _rng(n: int, r: int) -> np.random.Generator:
    return np.random.default_rng(1000 * n + r)


# ---- TPUT ------------------------------------------------------------------------------------

def k_tput_ring(x: np.ndarray, y: np.ndarray) -> None:
    # a 4x8 window of 4x16 arrays (strided rows): my x into the next rank's y
    comm.TPUT(comm.remote(gt(y, 4, 8, 16, 4), _nxt()), gt(x, 4, 8, 16), vec(np.float32, 4, 8))


def in_tput_ring(n: int) -> list[Args]:
    return [[_rng(n, r).standard_normal((4, 16)).astype(np.float32),
             np.zeros((4, 16), np.float32)] for r in range(n)]


def ex_tput_ring(n: int, ins: list[Args]) -> list[Args]:
    out = []
    for r in range(n):
        y = np.zeros((4, 16), np.float32)
        y[:, 4:12] = ins[(r - 1) % n][0][:, :8]
        out.append([ins[r][0], y])
    return out


def k_strided_many(x: np.ndarray, y: np.ndarray) -> None:
    """64 rows of 8 out of 64 x 16 arrays (64 runs: one transfer of an indexed type under
    MPI): TPUT my columns 0..7 into the next rank's columns 8..15, then TGET the previous
    rank's columns 0..7 into my columns 0..7 of y."""
    comm.TPUT(comm.remote(gt(y, 64, 8, 16, 8), _nxt()), gt(x, 64, 8, 16), vec(np.int32, 64, 8))
    comm.TGET(gt(y, 64, 8, 16), comm.remote(gt(x, 64, 8, 16), _prv()), vec(np.int32, 64, 8))


def in_strided_many(n: int) -> list[Args]:
    return [[np.arange(64 * 16, dtype=np.int32).reshape(64, 16) * (r + 1),
             np.zeros((64, 16), np.int32)] for r in range(n)]


def ex_strided_many(n: int, ins: list[Args]) -> list[Args]:
    out = []
    for r in range(n):
        y = np.zeros((64, 16), np.int32)
        y[:, 8:] = ins[(r - 1) % n][0][:, :8]
        y[:, :8] = ins[(r - 1) % n][0][:, :8]
        out.append([ins[r][0], y])
    return out


def k_tput_add(x: np.ndarray, y: np.ndarray) -> None:
    # every rank adds its x into rank 0's y (AtomicAdd, in the element type)
    rows, cols = x.shape
    comm.TPUT(comm.remote(gt(y, rows, cols), 0), gt(x, rows, cols), vec(x.dtype, rows, cols),
              atomicType=pto.AtomicType.AtomicAdd)


def in_tput_add_i32(n: int) -> list[Args]:
    return [[(np.arange(64, dtype=np.int64).reshape(2, 32) * 7 + 2**31 - 100 * (r + 1))
             .astype(np.uint32).view(np.int32), np.full((2, 32), 5, np.int32)]
            for r in range(n)]


def ex_tput_add(n: int, ins: list[Args]) -> list[Args]:
    out = [[a.copy() for a in ins[r]] for r in range(n)]
    y = out[0][1]
    if y.dtype.kind == "i":
        total = y.astype(np.int64) + sum(ins[r][0].astype(np.int64) for r in range(n))
        out[0][1] = (total & 0xFFFFFFFF).astype(np.uint32).view(np.int32)
    else:  # small integers in f16: every order of the adds gives the exact sum
        out[0][1] = (y.astype(np.float64) + sum(ins[r][0].astype(np.float64)
                                                for r in range(n))).astype(y.dtype)
    return out


def in_tput_add_f16(n: int) -> list[Args]:
    return [[np.arange(32, dtype=np.float16).reshape(2, 16) + r,
             np.full((2, 16), 0.5, np.float16)] for r in range(n)]


# ---- TGET --------------------------------------------------------------------------------------

def k_tget(x: np.ndarray, y: np.ndarray) -> None:
    comm.TGET(gt(y, 8, 16), comm.remote(gt(x, 8, 16), _nxt()), vec(np.float16, 8, 16))


def in_tget(n: int) -> list[Args]:
    return [[_rng(n, r).standard_normal((8, 16)).astype(np.float16),
             np.zeros((8, 16), np.float16)] for r in range(n)]


def ex_tget(n: int, ins: list[Args]) -> list[Args]:
    return [[ins[r][0], ins[(r + 1) % n][0]] for r in range(n)]


# ---- async -----------------------------------------------------------------------------------

def k_tput_async(x: np.ndarray, y: np.ndarray) -> None:
    flat = GlobalTensor(x, (1, 1, 1, 1, x.size))
    ev = comm.TPUT_ASYNC(comm.remote(GlobalTensor(y, (1, 1, 1, 1, y.size)), _prv()), flat,
                         "session")
    assert ev.Wait("session")


def k_tput_async_nowait(x: np.ndarray, y: np.ndarray) -> None:
    """No Wait: the transfer completes at the end of the launch all the same."""
    comm.TPUT_ASYNC(comm.remote(GlobalTensor(y, (1, 1, 1, 1, y.size)), _prv()),
                    GlobalTensor(x, (1, 1, 1, 1, x.size)), "session")


def k_tget_async(x: np.ndarray, y: np.ndarray) -> None:
    ev = comm.TGET_ASYNC(GlobalTensor(y, (1, 1, 1, 1, y.size)),
                         comm.remote(GlobalTensor(x, (1, 1, 1, 1, x.size)), _nxt()), "session")
    assert ev.Test("session")


def in_async(n: int) -> list[Args]:
    return [[np.arange(100, dtype=np.int32) * (r + 3), np.zeros(100, np.int32)]
            for r in range(n)]


def ex_tput_async(n: int, ins: list[Args]) -> list[Args]:
    return [[ins[r][0], ins[(r + 1) % n][0]] for r in range(n)]


# ---- TNOTIFY / TWAIT / TTEST -------------------------------------------------------------------

def k_notify_wait(x: np.ndarray, y: np.ndarray, z: np.ndarray, flag: np.ndarray) -> None:
    """Rank 0 produces: its x into every other rank's y, then sets their flag. Each consumer
    waits for its flag, then computes z = y + 1 from what arrived."""
    r, n = comm.get_rank(), comm.get_rank_num()
    f = GlobalTensor(flag, (1, 1, 1, 1, 1))
    if r == 0:
        for k in range(1, n):
            comm.TPUT(comm.remote(gt(y, 4, 8), k), gt(x, 4, 8), vec(np.float32, 4, 8))
            comm.TNOTIFY(comm.remote(f, k), 1, comm.NotifyOp.Set)
        return
    comm.TWAIT(f, 1, comm.WaitCmp.EQ)
    t = vec(np.float32, 4, 8)
    pto.TLOAD(t, gt(y, 4, 8))
    pto.TADDS(t, t, 1.0)
    pto.TSTORE(gt(z, 4, 8), t)


def in_notify_wait(n: int) -> list[Args]:
    return [[np.full((4, 8), 10.0 * (r + 1), np.float32) + np.arange(8, dtype=np.float32),
             np.zeros((4, 8), np.float32), np.zeros((4, 8), np.float32),
             np.zeros(1, np.int32)] for r in range(n)]


def ex_notify_wait(n: int, ins: list[Args]) -> list[Args]:
    out = [[a.copy() for a in ins[r]] for r in range(n)]
    for r in range(1, n):
        out[r][1] = ins[0][0]
        out[r][2] = ins[0][0] + np.float32(1)
        out[r][3] = np.ones(1, np.int32)
    return out


def k_counter(cnt: np.ndarray, go: np.ndarray, res: np.ndarray) -> None:
    """Every rank adds rank+1 to rank 0's counter (AtomicAdd); rank 0 first tests a flag no one
    sets (false), waits until the counter reaches the total, then tests it (true, false)."""
    r, n = comm.get_rank(), comm.get_rank_num()
    c = GlobalTensor(cnt, (1, 1, 1, 1, 1))
    total = n * (n + 1) // 2
    if r == 0:
        res[0] = comm.TTEST(GlobalTensor(go, (1, 1, 1, 1, 1)), 1, "EQ")
    comm.TNOTIFY(comm.remote(c, 0), r + 1, comm.NotifyOp.AtomicAdd)
    if r == 0:
        comm.TWAIT(c, total, comm.WaitCmp.GE)
        res[1] = comm.TTEST(c, total, comm.WaitCmp.EQ)
        res[2] = comm.TTEST(c, total, comm.WaitCmp.NE)


def in_counter(n: int) -> list[Args]:
    return [[np.zeros(1, np.int32), np.zeros(1, np.int32), np.full(3, 7, np.int32)]
            for _ in range(n)]


def ex_counter(n: int, ins: list[Args]) -> list[Args]:
    out = [[a.copy() for a in ins[r]] for r in range(n)]
    out[0][0] = np.array([n * (n + 1) // 2], np.int32)
    out[0][2] = np.array([0, 1, 0], np.int32)
    return out


def k_signal2d(sig: np.ndarray, seen: np.ndarray) -> None:
    """Rank r sets column r of rank 0's 2 x N signal block (row stride 8) to r + 1; rank 0
    waits until every word is > 0 and copies the block."""
    r, n = comm.get_rank(), comm.get_rank_num()
    comm.TNOTIFY(comm.remote(comm.Signal2D(sig, 2, 1, 8, offset=r), 0), r + 1, "Set")
    if r == 0:
        comm.TWAIT(comm.Signal2D(sig, 2, n, 8), 0, comm.WaitCmp.GT)
        seen[:] = sig


def in_signal2d(n: int) -> list[Args]:
    return [[np.zeros((2, 8), np.int32), np.zeros((2, 8), np.int32)] for _ in range(n)]


def ex_signal2d(n: int, ins: list[Args]) -> list[Args]:
    out = [[a.copy() for a in ins[r]] for r in range(n)]
    s = np.zeros((2, 8), np.int32)
    s[:, :n] = np.arange(1, n + 1)
    out[0] = [s, s.copy()]
    return out


# ---- collectives ---------------------------------------------------------------------------

def k_broadcast(x: np.ndarray, y: np.ndarray) -> None:
    """The last rank broadcasts its x into every rank's y."""
    if comm.get_rank() == comm.get_rank_num() - 1:
        comm.TBROADCAST(comm.group(gt(y, 4, 16)), gt(x, 4, 16), vec(np.int16, 2, 16))


def in_broadcast(n: int) -> list[Args]:
    return [[(np.arange(64, dtype=np.int16) * (r + 1)).reshape(4, 16),
             np.zeros((4, 16), np.int16)] for r in range(n)]


def ex_broadcast(n: int, ins: list[Args]) -> list[Args]:
    return [[ins[r][0], ins[n - 1][0]] for r in range(n)]


def _k_reduce(op: str) -> Callable[..., None]:
    def k(x: np.ndarray, y: np.ndarray) -> None:
        if comm.get_rank() == 0:
            comm.TREDUCE(comm.group(gt(x, 4, 16)), gt(y, 4, 16), vec(x.dtype, 4, 16),
                         vec(x.dtype, 4, 16), op)
    k.__name__ = f"k_reduce_{op}"
    return k


def in_reduce_f32(n: int) -> list[Args]:
    return [[_rng(n, r).standard_normal((4, 16)).astype(np.float32) * 1000,
             np.zeros((4, 16), np.float32)] for r in range(n)]


def in_reduce_i16(n: int) -> list[Args]:
    return [[_rng(n, r).integers(-30000, 30000, (4, 16)).astype(np.int16),
             np.zeros((4, 16), np.int16)] for r in range(n)]


def _ex_reduce(fn: Callable[[Any, Any], Any]) -> Callable[[int, list[Args]], list[Args]]:
    def ex(n: int, ins: list[Args]) -> list[Args]:
        out = [[a.copy() for a in ins[r]] for r in range(n)]
        with np.errstate(all="ignore"):
            out[0][1] = reduce(lambda a, b: fn(a, b).astype(a.dtype),
                               [ins[r][0] for r in range(n)])
        return out
    return ex


def k_gather(x: np.ndarray, dst: np.ndarray) -> None:
    """Rank 1 % N gathers every rank's 3x8 x into rows [3r, 3r+3) of its dst (2 rows spare)."""
    n = comm.get_rank_num()
    if comm.get_rank() == 1 % n:
        comm.TGATHER(comm.group(gt(x, 3, 8)), gt(dst, 3 * n + 2, 8), vec(np.float32, 3, 8))


def in_gather(n: int) -> list[Args]:
    return [[np.arange(24, dtype=np.float32).reshape(3, 8) + 100 * r,
             np.full((3 * n + 2, 8), -1, np.float32)] for r in range(n)]


def ex_gather(n: int, ins: list[Args]) -> list[Args]:
    out = [[a.copy() for a in ins[r]] for r in range(n)]
    root = 1 % n
    out[root][1][: 3 * n] = np.concatenate([ins[r][0] for r in range(n)])
    return out


def k_scatter(src: np.ndarray, y: np.ndarray) -> None:
    """Rank 0 scatters rows [2r, 2r+2) of its src into rank r's y."""
    n = comm.get_rank_num()
    if comm.get_rank() == 0:
        comm.TSCATTER(comm.group(gt(y, 2, 16)), gt(src, 2 * n + 1, 16), vec(np.int32, 2, 16))


def in_scatter(n: int) -> list[Args]:
    return [[np.arange((2 * n + 1) * 16, dtype=np.int32).reshape(2 * n + 1, 16) * (r + 1),
             np.zeros((2, 16), np.int32)] for r in range(n)]


def ex_scatter(n: int, ins: list[Args]) -> list[Args]:
    return [[ins[r][0], ins[0][0][2 * r: 2 * r + 2]] for r in range(n)]


# ---- the examples (examples/ring_allreduce.py, examples/notify_wait.py) -----------------------

def _example(name: str) -> Any:
    import importlib.util
    import sys
    from pathlib import Path

    mod = sys.modules.get(f"example_{name}")
    if mod is None:
        path = Path(__file__).resolve().parents[2] / "examples" / f"{name}.py"
        spec = importlib.util.spec_from_file_location(f"example_{name}", path)
        assert spec is not None and spec.loader is not None
        mod = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = mod
        spec.loader.exec_module(mod)
    return mod


ring = _example("ring_allreduce")
pc = _example("notify_wait")


def ex_ring(n: int, ins: list[Args]) -> list[Args]:
    """Every rank: the sum of all vectors (within f32 rounding of the ring's order: checked by
    the example tests; here the in-process run is the bit-for-bit reference)."""
    return []


def ex_pc(n: int, ins: list[Args]) -> list[Args]:
    out = [[a.copy() for a in ins[r]] for r in range(n)]
    for c in range(1, n - n % 2, 2):
        x2 = ins[c - 1][0] * np.float32(2)
        out[c - 1][0] = x2
        out[c][1] = np.concatenate([x2.reshape(pc.K, -1)[pc.K - 2 + (pc.K % 2)],
                                    x2.reshape(pc.K, -1)[pc.K - 1 - (pc.K % 2)]])
        out[c][2] = x2 + np.float32(1)
        out[c][3] = np.array([pc.K, 0], np.int32)
        out[c - 1][3] = np.array([0, pc.K], np.int32)
    return out


CASES = [
    Case("tput_ring", k_tput_ring, in_tput_ring, ex_tput_ring),
    Case("strided_many_runs", k_strided_many, in_strided_many, ex_strided_many),
    Case("tput_add_i32", k_tput_add, in_tput_add_i32, ex_tput_add),
    Case("tput_add_f16", k_tput_add, in_tput_add_f16, ex_tput_add),
    Case("tget", k_tget, in_tget, ex_tget),
    Case("tput_async", k_tput_async, in_async, ex_tput_async),
    Case("tput_async_nowait", k_tput_async_nowait, in_async, ex_tput_async),
    Case("tget_async", k_tget_async, in_async, ex_tget),
    Case("notify_wait", k_notify_wait, in_notify_wait, ex_notify_wait),
    Case("counter_ttest", k_counter, in_counter, ex_counter),
    Case("signal2d", k_signal2d, in_signal2d, ex_signal2d),
    Case("broadcast", k_broadcast, in_broadcast, ex_broadcast),
    Case("reduce_sum_f32", _k_reduce("Sum"), in_reduce_f32, _ex_reduce(np.add)),
    Case("reduce_max_i16", _k_reduce("Max"), in_reduce_i16, _ex_reduce(np.maximum)),
    Case("reduce_min_i16", _k_reduce("Min"), in_reduce_i16, _ex_reduce(np.minimum)),
    Case("gather", k_gather, in_gather, ex_gather),
    Case("scatter", k_scatter, in_scatter, ex_scatter),
    Case("ring_allreduce", ring.ring_allreduce,
         lambda n: [list(ring.inputs(n, r)) for r in range(n)], ex_ring),
    Case("notify_wait_example", pc.producer_consumer,
         lambda n: [pc.inputs(r) for r in range(n)], ex_pc),
]


def run_local(case: Case, n: int) -> list[Args]:
    """Run ``case`` on n in-process ranks; every rank's arrays afterwards."""
    ins = [[a.copy() for a in args] for args in case.inputs(n)]
    per_arg = [[ins[r][k] for r in range(n)] for k in range(len(ins[0]))]
    pto.launch(case.kernel, *per_arg, ranks=n)
    return ins


def mismatch(got: list[Args], want: list[Args]) -> str | None:
    """None when every rank's arrays are equal bit for bit, else the first difference (an
    empty ``want``: nothing to compare)."""
    if not want:
        return None
    for r, (g, w) in enumerate(zip(got, want, strict=True)):
        for k, (a, b) in enumerate(zip(g, w, strict=True)):
            a, b = np.asarray(a), np.asarray(b)
            if a.shape != b.shape or a.dtype != b.dtype or a.tobytes() != b.tobytes():
                return f"rank {r} argument {k}: {a.reshape(-1)[:8]} != {b.reshape(-1)[:8]}"
    return None

"""The sanitizer across ranks (in-process backend): a remote write racing a local read without
a TNOTIFY/TWAIT between them is a race between ranks; correct producer-consumers are clean."""

from __future__ import annotations

import importlib.util
import inspect
from pathlib import Path

import numpy as np
import pytest

import ptoisa as pto
from ptoisa.concurrent import comm
from ptoisa.sanitizer import Sanitizer, SanitizerError

R, C = 8, 16
ROOT = Path(__file__).resolve().parents[2]


def g(a: np.ndarray) -> pto.GlobalTensor:
    return pto.GlobalTensor(a, (1, 1, 1, R, C))


def flag(a: np.ndarray) -> pto.GlobalTensor:
    return pto.GlobalTensor(a, (1, 1, 1, 1, 1))


def line_of(fn, marker: str) -> int:
    src, first = inspect.getsourcelines(fn)
    return first + next(i for i, s in enumerate(src) if marker in s)


def racy(x, slot, y, flags):
    t = pto.Tile(pto.TileType.Vec, np.float32, R, C)
    if comm.get_rank() == 0:
        comm.TPUT(comm.remote(g(slot), 1), g(x), t)  # PUT
    else:
        pto.TLOAD(t, g(slot))  # LOAD
        pto.SET_FLAG(pto.Pipe.MTE2, pto.Pipe.MTE3, 0)
        pto.WAIT_FLAG(pto.Pipe.MTE2, pto.Pipe.MTE3, 0)
        pto.TSTORE(g(y), t)


def synced(x, slot, y, flags):
    t = pto.Tile(pto.TileType.Vec, np.float32, R, C)
    if comm.get_rank() == 0:
        comm.TPUT(comm.remote(g(slot), 1), g(x), t)
        comm.TNOTIFY(comm.remote(flag(flags), 1), 1, comm.NotifyOp.AtomicAdd)
    else:
        comm.TWAIT(flag(flags), 1, comm.WaitCmp.GE)
        pto.TLOAD(t, g(slot))
        pto.SET_FLAG(pto.Pipe.MTE2, pto.Pipe.MTE3, 0)
        pto.WAIT_FLAG(pto.Pipe.MTE2, pto.Pipe.MTE3, 0)
        pto.TSTORE(g(y), t)


def polled(x, slot, y, flags):
    t = pto.Tile(pto.TileType.Vec, np.float32, R, C)
    if comm.get_rank() == 0:
        comm.TPUT(comm.remote(g(slot), 1), g(x), t)
        comm.TNOTIFY(comm.remote(flag(flags), 1), 1, comm.NotifyOp.Set)
    else:
        while not comm.TTEST(flag(flags), 1, comm.WaitCmp.EQ):
            pass
        pto.TLOAD(t, g(slot))
        pto.SET_FLAG(pto.Pipe.MTE2, pto.Pipe.MTE3, 0)
        pto.WAIT_FLAG(pto.Pipe.MTE2, pto.Pipe.MTE3, 0)
        pto.TSTORE(g(y), t)


def early_notify(x, slot, y, flags):
    """The notify goes out before the put: the wait orders nothing of the put."""
    t = pto.Tile(pto.TileType.Vec, np.float32, R, C)
    if comm.get_rank() == 0:
        comm.TNOTIFY(comm.remote(flag(flags), 1), 1, comm.NotifyOp.AtomicAdd)
        comm.TPUT(comm.remote(g(slot), 1), g(x), t)  # PUT
    else:
        comm.TWAIT(flag(flags), 1, comm.WaitCmp.GE)
        pto.TLOAD(t, g(slot))  # LOAD
        pto.SET_FLAG(pto.Pipe.MTE2, pto.Pipe.MTE3, 0)
        pto.WAIT_FLAG(pto.Pipe.MTE2, pto.Pipe.MTE3, 0)
        pto.TSTORE(g(y), t)


def arrays(n: int = 2) -> list[list[np.ndarray]]:
    return [[np.full(R * C, r + 1, np.float32) for r in range(n)],
            [np.zeros(R * C, np.float32) for _ in range(n)],
            [np.zeros(R * C, np.float32) for _ in range(n)],
            [np.zeros(1, np.int32) for _ in range(n)]]


@pytest.mark.parametrize("kernel", [racy, early_notify])
def test_put_racing_load_is_reported_at_both(kernel) -> None:
    put, load = line_of(kernel, "# PUT"), line_of(kernel, "# LOAD")
    for _ in range(3):  # whichever thread gets there first, the same finding
        with pytest.raises(SanitizerError) as ei:
            pto.launch(kernel, *arrays(), ranks=2, sanitize=True)
        (f,) = ei.value.report.findings
        assert (f.kind, f.hazard) == ("race", "RAW")
        assert (f.site.op, f.site.loc[1]) == ("TLOAD", load)
        assert (f.other.op, f.other.loc[1]) == ("TPUT", put)
        assert f.extra["ranks"] == (0, 1) and f.extra["window"] == "slot"
        assert "between ranks" in f.message and "rank 1's window 'slot'" in f.message
        assert (f.lo, f.hi) == (0, R * C * 4)
        assert f.fix is not None and "comm.TNOTIFY" in f.fix and "comm.TWAIT" in f.fix
        assert f"after TPUT at {__file__}:{put} on rank 0" in f.fix
        assert f"before TLOAD at {__file__}:{load} on rank 1" in f.fix


@pytest.mark.parametrize("kernel", [synced, polled])
def test_notify_then_wait_or_poll_is_clean(kernel) -> None:
    a = arrays()
    assert not pto.launch(kernel, *a, ranks=2, sanitize=True)
    np.testing.assert_array_equal(a[2][1], np.full(R * C, 1, np.float32))  # rank 0's x


def test_end_of_launch_orders() -> None:
    def put_only(x, slot, y, flags):
        if comm.get_rank() == 0:
            comm.TPUT(comm.remote(g(slot), 1), g(x),
                      pto.Tile(pto.TileType.Vec, np.float32, R, C))

    def load_only(x, slot, y, flags):
        if comm.get_rank() == 1:
            t = pto.Tile(pto.TileType.Vec, np.float32, R, C)
            pto.TLOAD(t, g(slot))

    a = arrays()
    san = Sanitizer("races")
    pto.launch(put_only, *a, ranks=2, sanitize=san)
    pto.launch(load_only, *a, ranks=2, sanitize=san)
    assert not san.report


def test_atomic_adds_do_not_race_but_plain_puts_do() -> None:
    def adds(x, slot, y, flags, *, atomic=pto.AtomicType.AtomicAdd):
        r = comm.get_rank()
        if r < 2:
            comm.TPUT(comm.remote(g(slot), 2), g(x),
                      pto.Tile(pto.TileType.Vec, np.float32, R, C), atomicType=atomic)

    a = arrays(3)
    assert not pto.launch(adds, *a, ranks=3, sanitize="races")
    np.testing.assert_array_equal(a[1][2], np.full(R * C, 3, np.float32))  # 1 + 2
    san = Sanitizer("races")
    pto.launch(lambda x, s, y, f: adds(x, s, y, f, atomic=pto.AtomicType.AtomicNone),
               *arrays(3), ranks=3, sanitize=san)
    (f,) = san.report.findings
    assert f.hazard == "WAW" and set(f.extra["ranks"]) == {0, 1}


def _example(name: str):
    spec = importlib.util.spec_from_file_location(f"_ex_{name}", ROOT / "examples" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_examples_are_clean_between_ranks() -> None:
    # the examples leave intra-core flags to the compiler (sync="auto"): only the checks
    # between ranks (and blocks, uninit...) apply
    nw = _example("notify_wait")
    args = [nw.inputs(r) for r in range(2)]
    san = Sanitizer(sync="auto")
    pto.launch(nw.producer_consumer, *([args[r][k] for r in range(2)] for k in range(4)),
               ranks=2, sanitize=san)
    assert not san.report, san.report.render()
    np.testing.assert_array_equal(args[1][2], nw.inputs(0)[0] * np.float32(2) + np.float32(1))

    ra = _example("ring_allreduce")
    n = 4
    args = [ra.inputs(n, r) for r in range(n)]
    san = Sanitizer(sync="auto")
    pto.launch(ra.ring_allreduce, *([args[r][k] for r in range(n)] for k in range(3)),
               ranks=n, sanitize=san)
    assert not san.report, san.report.render()
    want = sum(ra.inputs(n, r)[0].astype(np.float64) for r in range(n))
    np.testing.assert_allclose(args[0][0], want, rtol=1e-5, atol=1e-5)


def test_missing_free_counter_in_producer_consumer_is_reported() -> None:
    """notify_wait's producer without its wait on ``free``: the put of tile i+2 overwrites a
    slot the consumer may still load tile i from."""
    nw = _example("notify_wait")
    src = inspect.getsource(nw.producer_consumer).replace(
        "comm.TWAIT(free, i - 1, comm.WaitCmp.GE)", "pass")
    ns = dict(vars(nw))
    exec(compile(src, nw.__file__, "exec"), ns)  # noqa: S102 - the example, one line changed
    args = [nw.inputs(r) for r in range(2)]
    san = Sanitizer(sync="auto")
    pto.launch(ns["producer_consumer"], *([args[r][k] for r in range(2)] for k in range(4)),
               ranks=2, sanitize=san)
    races = san.report.of("race")
    assert races and all("between ranks" in f.message for f in races)
    assert {f.other.op for f in races} == {"TPUT"} and {f.site.op for f in races} == {"TLOAD"}


def _run_pto(path: Path, tmp_path: Path) -> int:
    from ptoisa.cli import main

    for r in range(2):
        np.save(tmp_path / f"x{r}.npy", np.full(64, r, np.float32))
    return main(["run", str(path), "--target", "cpu", "--ranks", "2", "--sanitize",
                 "--arg", f"x={tmp_path}/x{{rank}}.npy", "--arg", "y=zeros:64:f32",
                 "--arg", "z=zeros:64:f32", "--arg", "flag=zeros:1:i32",
                 "--arg", "dst=peer:{next}:y", "--arg", "peer_flag=peer:{next}:flag"])


def test_cli_pto_ranks_sanitize(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = ROOT / "examples" / "notify_put.pto"
    assert _run_pto(src, tmp_path) == 0
    assert "error" not in capsys.readouterr().err
    lines = src.read_text().splitlines(keepends=True)
    racy = tmp_path / "racy.pto"  # without its TWAIT: the load of y races the peer's put
    racy.write_text("".join(ln for ln in lines if "pto.twait" not in ln))
    put = next(i for i, ln in enumerate(lines) if "pto.tput" in ln) + 1
    load = next(i for i, ln in enumerate(lines) if "pto.tload" in ln)  # one line less
    assert _run_pto(racy, tmp_path) == 1
    err = capsys.readouterr().err
    assert f"racy.pto:{load}:5: error: race (RAW) between ranks" in err
    assert "pto.tnotify (on a signal word of rank" in err
    assert f"after pto.tput at {racy}:{put}:5" in err


def test_fail_fast_raises_the_finding() -> None:
    def intra(x, slot, y, flags):  # a rank's own race (no flag between load and store)
        if comm.get_rank() == 1:
            t = pto.Tile(pto.TileType.Vec, np.float32, R, C)
            pto.TLOAD(t, g(slot))
            pto.TSTORE(g(y), t)

    with pytest.raises(SanitizerError) as ei:
        pto.launch(intra, *arrays(), ranks=2, sanitize=Sanitizer(fail_fast=True))
    (f,) = ei.value.report.findings
    assert f.hazard == "RAW" and (f.other.op, f.site.op) == ("TLOAD", "TSTORE")


def test_many_tiles_stay_clean_and_small() -> None:
    n = 64  # tiles of one row each, put one by one, each announced by a counter

    def stream(x, slot, y, flags):
        row = lambda a, i: pto.GlobalTensor(a, (1, 1, 1, 1, C), offset=i * C)  # noqa: E731
        t = pto.Tile(pto.TileType.Vec, np.float32, 1, C)
        if comm.get_rank() == 0:
            for i in range(n):
                comm.TPUT(comm.remote(row(slot, i), 1), row(x, i), t)
                comm.TNOTIFY(comm.remote(flag(flags), 1), 1, comm.NotifyOp.AtomicAdd)
        else:
            for i in range(n):
                comm.TWAIT(flag(flags), i + 1, comm.WaitCmp.GE)
                pto.TLOAD(t, row(slot, i))

    a = [[np.full(n * C, r + 1, np.float32) for r in range(2)],
         [np.zeros(n * C, np.float32) for _ in range(2)],
         [np.zeros(C, np.float32) for _ in range(2)], [np.zeros(1, np.int32) for _ in range(2)]]
    san = Sanitizer("races")
    pto.launch(stream, *a, ranks=2, sanitize=san)
    assert not san.report
    np.testing.assert_array_equal(a[1][1], np.ones(n * C, np.float32))

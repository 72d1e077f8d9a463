"""Timing-only cycle runs (``cycles="timing"``, issue #29 item 4): the same cycles as a run
with values, no values computed, value-dependent ops refused by name."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

import ptoisa as pto
from ptoisa.cli import main
from ptoisa.cycles import timed
from ptoisa.isa.registry import REGISTRY
from ptoisa.targets import get_target

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
SAMPLES = ROOT.parent / "shared" / "corpus" / "ptoas" / "test" / "samples"


def _module(path: Path, name: str) -> ModuleType:
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    sys.path.insert(0, str(path.parent))
    try:
        spec.loader.exec_module(mod)
    finally:
        sys.path.remove(str(path.parent))
    return mod


def _ex(name: str) -> ModuleType:
    return _module(EXAMPLES / f"{name}.py", f"ex_timing_{name}")


def _same_cycles(run: Callable[[bool], Any]) -> Any:
    """``run(values)`` timed with values and timing only: the same total, per-pipe busy cycles
    and per-instruction rows; returns the timing-only report."""
    full = timed(lambda: run(True))
    only = timed(lambda: run(False), values=False)
    assert full.values and not only.values
    assert only.total == full.total > 0
    assert only.busy == full.busy
    assert [(r.op, r.cycles, r.count) for r in only.rows] == \
        [(r.op, r.cycles, r.count) for r in full.rows]
    assert "timing only (no values computed)" in only.summary()
    assert "timing only" not in full.summary()
    assert not only.errors and not full.errors
    return only


def _examples() -> list[tuple[str, Callable[[bool], Any]]]:
    sm, va, gi, tk, fs, ma = (_ex(n) for n in ("softmax", "vec_add", "gemm_int8", "topk",
                                                "flash_softmax", "mixed_attention"))
    rng = np.random.default_rng(3)
    x = rng.standard_normal((64, 128)).astype(np.float32)
    xv, yv = va.make_inputs(4)
    a, b, words, *_ = gi.make_inputs()
    xt = tk.make_input(8)
    q, k, v = ma.make_inputs(2)

    def flash(double: bool, use_pto: bool) -> Callable[[bool], Any]:
        def run(values: bool) -> None:
            n = fs.PTO_NKV * fs.ROWS * fs.BC
            s = rng.standard_normal(n, dtype=np.float32) if values else np.empty(n, np.float32)
            if use_pto:
                prog = pto.load(fs.PTO_FILE)
                getattr(prog, "flash_softmax_" + ("double" if double else "single"))(
                    s, np.zeros_like(s))
            else:
                pto.launch(fs.flash_softmax, s, np.zeros_like(s), fs.PTO_NKV, double)
        return run

    return [
        ("softmax eager", lambda _: sm.run_eager(x)),
        ("softmax pto", lambda _: sm.run_pto(x)),
        ("vec_add eager", lambda _: va.run_eager(xv, yv)),
        ("vec_add pto", lambda _: va.run_pto(xv, yv)),
        ("gemm_int8 eager", lambda _: gi.run_eager(a, b, words)),
        ("gemm_int8 pto", lambda _: gi.run_pto(a, b, words)),
        ("topk eager", lambda _: tk.run_eager(xt)),
        ("topk pto", lambda _: tk.run_pto(xt)),
        ("flash_softmax eager", flash(False, False)),
        ("flash_softmax eager double", flash(True, False)),
        ("flash_softmax pto single", flash(False, True)),
        ("flash_softmax pto double", flash(True, True)),
        ("mixed_attention eager", lambda _: ma.run_eager(q, k, v)),
        ("mixed_attention pto", lambda _: ma.run_pto(q, k, v)),
    ]


@pytest.mark.parametrize("case", range(14))
def test_examples_same_cycles_without_values(case: int) -> None:
    _same_cycles(_examples()[case][1])


def _corpus() -> list[Path]:
    return [SAMPLES / "Qwen3DecodeA3" / f"qwen3_decode_incore_{i}.pto" for i in (0, 1, 15)]


@pytest.mark.skipif(not SAMPLES.is_dir(), reason="the PTOAS corpus is not beside the checkout")
@pytest.mark.parametrize("path", _corpus(), ids=lambda p: p.name)
def test_corpus_same_cycles_without_values(path: Path) -> None:
    cs = _module(ROOT / "benchmarks" / "corpus_speed.py", "bench_corpus_speed")
    got = cs.arguments(path.read_text())
    assert got is not None
    fn, args = got
    prog = pto.load(path, target="a2a3")
    _same_cycles(lambda _: prog.run(fn, *[a.copy() if isinstance(a, np.ndarray) else a
                                          for a in args]))


def test_no_values_computed_and_arrays_untouched() -> None:
    va = _ex("vec_add")
    x, y = va.make_inputs(4)
    z = np.full_like(x, 7.0)
    rep = pto.launch(va.vec_add_kernel, x, y, z, blocks=4, cycles="timing")
    assert not rep.values and rep.total > 0
    assert (z == 7.0).all()  # TSTORE's semantics did not run
    prog = pto.load(va.PTO_FILE)
    z[:] = 7.0
    rep = prog.vec_add(x, y, z, blocks=4, cycles="timing")
    assert not rep.values and (z == 7.0).all()
    # (machines compute values again afterwards)
    pto.launch(va.vec_add_kernel, x, y, z, blocks=4)
    assert np.array_equal(z, x + y)


def test_refused_ops_name_themselves() -> None:
    rr = _ex("ragged_rowsum")
    a = rr.make_input()
    with pytest.raises(pto.PtoError, match=r"tprint: needs values.*timing-only run"):
        timed(lambda: rr.run_eager(a), values=False)
    with pytest.raises(pto.PtoError, match=r"tprint: needs values"):
        timed(lambda: rr.run_pto(a), values=False)
    tp = _module(ROOT / "tests" / "test_plans.py", "timing_test_plans")
    prog = pto.load(tp._SCALAR_READ)
    args = (np.ones(256, np.float32), np.array([2], np.int32), np.zeros(256, np.float32))
    with pytest.raises(pto.PtoError, match=r"pto.load_scalar: needs values") as e:
        prog.k(*args, cycles="timing")
    assert e.value.loc is not None
    assert prog.k(*args, cycles=True).total > 0  # with values it runs

    def reads_back(x: np.ndarray) -> None:
        t = pto.Tile(pto.TileType.Vec, np.float32, 8, 8)
        pto.TLOAD(t, pto.GlobalTensor(x, (1, 1, 1, 8, 8), (64, 64, 64, 8, 1)))
        if t.numpy()[0, 0] > 0:  # control flow on a tile value
            pto.TADDS(t, t, 1.0)
    with pytest.raises(pto.PtoError, match=r"tile.numpy\(\): needs values"):
        pto.launch(reads_back, np.ones(64, np.float32), cycles="timing")


def test_bad_settings() -> None:
    va = _ex("vec_add")
    x, y = va.make_inputs(1)
    with pytest.raises(pto.PtoError, match="cycles must be False, True or 'timing'"):
        pto.launch(va.vec_add_kernel, x, y, np.zeros_like(x), cycles="fast")
    with pytest.raises(pto.PtoError, match="sanitizer needs them"):
        pto.launch(va.vec_add_kernel, x, y, np.zeros_like(x), cycles="timing", sanitize=True)


def test_every_entry_has_a_timing_kind() -> None:
    kinds = {i.timing for i in REGISTRY.values()}
    assert kinds <= {"skip", "run", "refuse"}
    assert REGISTRY["TPRINT"].timing == "refuse"
    assert REGISTRY["TADD"].timing == "skip" and REGISTRY["TSTORE"].timing == "skip"
    for n in ("SET_FLAG", "WAIT_FLAG", "TASSIGN", "TPUSH", "TPOP", "SYNCALL"):
        assert REGISTRY[n].timing == "run", n


def test_cli_cycles_timing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    sm = _ex("softmax")
    x = tmp_path / "x.npy"
    np.save(x, np.ones((16, 64), np.float32))
    base = ["run", str(sm.PTO_FILE), "--blocks", "2", "--arg", f"x={x}",
            "--arg", "out=zeros:16x64:f32", "--arg", "n_rows=16"]
    assert main([*base, "--cycles"]) == 0
    full = capsys.readouterr().out
    for flag in (["--cycles=timing"], ["--cycles", "--no-values"]):
        assert main([*base, *flag]) == 0
        out = capsys.readouterr().out
        assert out.splitlines()[0] == full.splitlines()[0]  # the same cycles line
        assert "timing only (no values computed)" in out and "arrays are unchanged" in out
    assert main([*base, "--no-values"]) == 1
    assert "give --cycles or --trace" in capsys.readouterr().err


def test_rules_decided_by_signature_still_fail() -> None:
    """Timing only, run-time rules that the use's signature decides (``by_signature``) run
    once per signature: a use with other indices, a bool or a float index, or on a
    non-permissive machine after a permissive one, still fails as it does with values."""
    def extract(*idx: Any, valid: Any = None) -> Callable[[], None]:
        def k() -> None:
            src = pto.Tile(pto.TileType.Mat, np.float16, 64, 64, pto.BLayout.ColMajor, None,
                           pto.SLayout.RowMajor)
            dst = pto.TileLeft(np.float16, 32, 32, valid)
            pto.TEXTRACT(dst, src, 0, 0)
            pto.TEXTRACT(dst, src, 0, 0)  # (the same signature: its rules passed)
            pto.TEXTRACT(dst, src, *idx)
        return k

    assert REGISTRY["TEXTRACT"].on(get_target("a2a3")).by_signature
    assert timed(extract(32, 32), "a2a3", values=False).total == \
        timed(extract(32, 32), "a2a3").total > 0
    for idx, why in (((48, 0), r"at \(48, 0\) exceeds src 64x64"),
                     ((True, 0), "indexRow must be an integer, got True"),
                     ((0, 1.0), "indexCol must be an integer, got 1.0")):
        for values in (True, False):
            with pytest.raises(pto.PtoError, match=why):
                timed(extract(*idx), "a2a3", values=values)
    # the simulator's leniency is the machine's: a permissive run walks dst's 16 valid rows
    # only and passes, a strict one checks its 32 rows and fails
    k = extract(40, 0, valid=(16, 32))
    assert pto.launch(k, target="a2a3", permissive=True, cycles="timing").total > 0
    with pytest.raises(pto.PtoError, match="exceeds src"):
        pto.launch(k, target="a2a3", cycles="timing")

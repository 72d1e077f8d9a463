"""Batched vecscope loops (``ptoisa/interp/vbatch.py``) give the bits of running one
iteration at a time: upstream's micro-op case kernels run both ways on their own golden
inputs, and generated loops of each batched op form, independent or not; observed runs
(sanitizer, cycle model) take the per-iteration path."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ptoisa.interp import Program, load, vbatch
from ptoisa.sanitizer import Sanitizer
from ptoisa.suite import discover, do_task


def _run_both(prog: Program, name: str, args: list[Any], run: Any = Program.run, **kw: Any
              ) -> tuple[list[np.ndarray], list[np.ndarray], int]:
    """The arrays after a run with batching on, after one with it off (on copies of the same
    inputs), and how many loops the first ran as batches (``run``: Program.run as it was)."""
    outs = []
    before = vbatch.stats["batched"]
    batched = 0
    for on in (True, False):
        copies = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
        saved = vbatch.ENABLED
        vbatch.ENABLED = on
        try:
            run(prog, name, *copies, **kw)
        finally:
            vbatch.ENABLED = saved
        if on:
            batched = vbatch.stats["batched"] - before
        outs.append([a for a in copies if isinstance(a, np.ndarray)])
    return outs[0], outs[1], batched


def _same_bits(a: list[np.ndarray], b: list[np.ndarray], what: str) -> None:
    assert len(a) == len(b)
    for k, (x, y) in enumerate(zip(a, b, strict=True)):
        assert x.tobytes() == y.tobytes(), f"{what}: argument {k} differs"


def test_corpus_micro_op_cases_same_bits(shared_dir: Path, monkeypatch: Any) -> None:
    """Every upstream micro-op case that runs: batched and per-iteration runs leave the same
    bytes in every argument (the suite's own inputs from golden.py)."""
    root = shared_dir / "corpus/ptoas-main/test/vpto/cases/micro-op"
    if not root.is_dir():
        pytest.skip("no ptoas-main corpus beside the checkout")
    seen = {"runs": 0, "batched": 0}
    differ: list[str] = []
    errors: list[str] = []
    orig = Program.run

    def run(self: Program, name: str, *args: Any, **kw: Any) -> Any:
        if kw.get("sanitize") or kw.get("cycles"):
            return orig(self, name, *args, **kw)
        inputs = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
        try:
            on, off, n = _run_both(self, name, inputs, orig, **kw)
        except Exception as e:  # noqa: BLE001 - a failing case fails either way (checked)
            errors.append(f"{name}: {e}")
            return orig(self, name, *args, **kw)
        if any(a.tobytes() != b.tobytes() for a, b in zip(on, off, strict=True)):
            differ.append(name)  # (an assertion here would be the suite's verdict)
        seen["runs"] += 1
        seen["batched"] += n
        return orig(self, name, *args, **kw)  # (what the suite judges)

    monkeypatch.setattr(Program, "run", run)
    for task in discover(root):
        if task.kind == "vpto":
            do_task(task)
    assert not differ, f"batched and per-iteration bits differ: {differ}"
    assert seen["runs"] >= 40
    assert seen["batched"] >= 40  # (the comparison is of batched runs, not of two alike)


# ---- generated loops ----------------------------------------------------------------------

_TYPES = {"f32": (np.float32, "b32"), "f16": (np.float16, "b16"), "i16": (np.int16, "b16"),
          "i32": (np.int32, "b32")}
_BIN = ("vadd", "vsub", "vmul", "vmax", "vmin")
_UN_FLOAT = ("vexp", "vabs", "vneg", "vrelu", "vsqrt", "vln")


def _kernel(dt: str, n: int, op: str, stride: int, shift: int, tail: bool, inplace: bool,
            chunks: int, body: str | None = None) -> str:
    """Load x and y (n elements, padded) into UB, a vecscope loop of ``op`` over
    registers ``stride`` registers apart, stored ``shift`` registers further on (into x
    itself when ``inplace``), then back to GM; ``chunks`` such loops one after another."""
    lanes = 256 // np.dtype(_TYPES[dt][0]).itemsize
    gran = _TYPES[dt][1]
    nbytes = n * np.dtype(_TYPES[dt][0]).itemsize
    span = 32768  # UB bytes per buffer
    mask = (f"%m, %rest = pto.plt_{gran} %rem : i32 -> !pto.mask<{gran}>, i32"
            if tail else f"%m = pto.pset_{gran} \"PAT_ALL\" : !pto.mask<{gran}>")
    if body is not None:  # (a given body, of %a, %b, %m, %sc, making %r)
        pass
    elif op in _BIN:
        body = (f"%r = pto.{op} %a, %b, %m : !pto.vreg<{lanes}x{dt}>, !pto.vreg<{lanes}x{dt}>, "
                f"!pto.mask<{gran}> -> !pto.vreg<{lanes}x{dt}>")
    elif op == "vmuls":
        body = (f"%r = pto.vmuls %a, %sc, %m : !pto.vreg<{lanes}x{dt}>, {dt}, !pto.mask<{gran}>"
                f" -> !pto.vreg<{lanes}x{dt}>")
    else:
        body = (f"%r = pto.{op} %a, %m : !pto.vreg<{lanes}x{dt}>, !pto.mask<{gran}> -> "
                f"!pto.vreg<{lanes}x{dt}>")
    iters = "iter_args(%rem = %cn) -> (i32)" if tail else ""
    yld = "scf.yield %rest : i32" if tail else ""
    res = "%left:1 = " if tail else ""
    dest = "%ux" if inplace else "%uz"
    sc = "arith.constant 3.0 : f32" if dt.startswith("f") else "arith.constant 3 : i32"
    sct = "f32" if dt.startswith("f") else "i32"
    if op == "vmuls" and dt != "f32":
        sc, sct = (f"arith.constant 3.0 : {dt}" if dt == "f16" else f"arith.constant 3 : {dt}",
                   dt)
    loops = "\n".join(f"""
    pto.vecscope {{
      {res}scf.for %i = %c0 to %end step %st {iters} {{
        {mask}
        %a = pto.vlds %ux[%i] : !pto.ptr<{dt}, ub> -> !pto.vreg<{lanes}x{dt}>
        %b = pto.vlds %uy[%i] : !pto.ptr<{dt}, ub> -> !pto.vreg<{lanes}x{dt}>
        {body.replace('%sc', '%sc')}
        %j = arith.addi %i, %sh : index
        pto.vsts %r, {dest}[%j], %m : !pto.vreg<{lanes}x{dt}>, !pto.ptr<{dt}, ub>, !pto.mask<{gran}>
        {yld}
      }}
    }}""" for _ in range(chunks))
    # (a zero shift is written as %i itself: no arith in the body)
    if shift == 0:
        loops = loops.replace("%j = arith.addi %i, %sh : index\n", "").replace(f"{dest}[%j]",
                                                                             f"{dest}[%i]")
    return f"""
module attributes {{pto.target_arch = "a5", pto.kernel_kind = #pto.kernel_kind<vector>}} {{
  func.func @k(%x: !pto.ptr<{dt}, gm>, %y: !pto.ptr<{dt}, gm>, %z: !pto.ptr<{dt}, gm>)
      attributes {{pto.kernel}} {{
    %c0 = arith.constant 0 : index
    %end = arith.constant {n} : index
    %st = arith.constant {stride * lanes} : index
    %sh = arith.constant {shift * lanes} : index
    %cn = arith.constant {n} : i32
    %sc = {sc}
    %c0_i64 = arith.constant 0 : i64
    %c1_i64 = arith.constant 1 : i64
    %nb = arith.constant {nbytes} : i64
    %a0 = arith.constant {span} : i64
    %a1 = arith.constant {2 * span} : i64
    %a2 = arith.constant {3 * span} : i64
    %ux = pto.castptr %a0 : i64 -> !pto.ptr<{dt}, ub>
    %uy = pto.castptr %a1 : i64 -> !pto.ptr<{dt}, ub>
    %uz = pto.castptr %a2 : i64 -> !pto.ptr<{dt}, ub>
    pto.mte_gm_ub %x, %ux, %c0_i64, %nb nburst(%c1_i64, %nb, %nb)
      : !pto.ptr<{dt}, gm>, !pto.ptr<{dt}, ub>, i64, i64, i64, i64, i64
    pto.mte_gm_ub %y, %uy, %c0_i64, %nb nburst(%c1_i64, %nb, %nb)
      : !pto.ptr<{dt}, gm>, !pto.ptr<{dt}, ub>, i64, i64, i64, i64, i64
    pto.mte_gm_ub %y, %uz, %c0_i64, %nb nburst(%c1_i64, %nb, %nb)
      : !pto.ptr<{dt}, gm>, !pto.ptr<{dt}, ub>, i64, i64, i64, i64, i64
    {loops}
    pto.mte_ub_gm {dest}, %z, %nb nburst(%c1_i64, %nb, %nb)
      : !pto.ptr<{dt}, ub>, !pto.ptr<{dt}, gm>, i64, i64, i64, i64
    return
  }}
}}
""".replace("%sc, %m", "%sc, %m").replace(" %sc = ", " %sc = ").replace(f", {dt}, !pto.mask",
                                                                        f", {sct}, !pto.mask")


def _values(draw: Any, dt: str, n: int) -> np.ndarray:
    """n values of type dt from a drawn seed, with a few drawn specials (signed zeros,
    infinities, NaN; integer extremes) at drawn places."""
    t = _TYPES[dt][0]
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    if dt.startswith("f"):
        out = (rng.standard_normal(n) * 100).astype(t)
        specials = [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-8]
    else:
        info = np.iinfo(t)
        out = rng.integers(int(info.min), int(info.max), n, endpoint=True).astype(t)
        specials = [int(info.min), int(info.max), 0, -1]
    for k in draw(st.lists(st.integers(0, n - 1), max_size=4)):
        out[k] = t(draw(st.sampled_from(specials)))
    return out


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_generated_loops_same_bits(data: Any) -> None:
    dt = data.draw(st.sampled_from(sorted(_TYPES)))
    lanes = 256 // np.dtype(_TYPES[dt][0]).itemsize
    ops = _BIN + ("vmuls",) + (_UN_FLOAT if dt.startswith("f") else ("vabs", "vneg"))
    op = data.draw(st.sampled_from(ops))
    tail = data.draw(st.booleans())
    n = data.draw(st.integers(2, 12)) * lanes - (data.draw(st.integers(0, lanes - 1))
                                                 if tail else 0)
    stride = data.draw(st.sampled_from([1, 1, 2]))
    shift = data.draw(st.sampled_from([0, 0, 0, 1, -1]))
    inplace = data.draw(st.booleans())
    chunks = data.draw(st.integers(1, 2))
    src = _kernel(dt, n, op, stride, shift, tail, inplace, chunks)
    prog = load(src, target="a5")
    x, y = _values(data.draw, dt, n), _values(data.draw, dt, n)
    z = np.zeros(n, _TYPES[dt][0])
    on, off, batched = _run_both(prog, "k", [x, y, z])
    _same_bits(on, off, f"{op} {dt} n={n} stride={stride} shift={shift} inplace={inplace}")
    trips = -(-n // (stride * lanes))
    if trips >= 2 and (shift == 0 or not inplace):
        assert batched == chunks  # (the independent forms do run as batches)
    if trips >= 2 and shift and inplace and stride == 1:
        assert batched == 0  # (iteration k stores where k + shift loads)


_V, _M = "!pto.vreg<64xf32>", "!pto.mask<b32>"
_VI, _VH = "!pto.vreg<64xi32>", "!pto.vreg<128xf16>"
#: f32 bodies (making %r of %a, %b, %m, %sc) of the ops whose entries took rows later:
#: compares (their masks then predicate an add), vdup, vbr, vbitcast, vcvt
_MORE = {
    "vcmps": f"""%p = pto.vcmps %a, %sc, %m, "{{mode}}" : {_V}, f32, {_M} -> {_M}
        %r = pto.vadd %a, %b, %p : {_V}, {_V}, {_M} -> {_V}""",
    "vcmp": f"""%p = pto.vcmp %a, %b, %m, "{{mode}}" : {_V}, {_V}, {_M} -> {_M}
        %r = pto.vsub %a, %b, %p : {_V}, {_V}, {_M} -> {_V}""",
    "vdup_scalar": f"%r = pto.vdup %sc, %m : f32, {_M} -> {_V}",
    "vdup_reg": f'%r = pto.vdup %b, %m {{{{position = "{{pos}}"}}}} : {_V}, {_M} -> {_V}',
    "vbr": f"""%s = pto.vbr %sc : f32 -> {_V}
        %r = pto.vmul %a, %s, %m : {_V}, {_V}, {_M} -> {_V}""",
    "vbitcast": f"""%t = pto.vbitcast %a : {_V} -> {_VI}
        %u = pto.vbitcast %b : {_V} -> {_VI}
        %w = pto.vadd %t, %u, %m : {_VI}, {_VI}, {_M} -> {_VI}
        %r = pto.vbitcast %w : {_VI} -> {_V}""",
    "vcvt_same": f"""%t = pto.vcvt %a, %m {{{{rnd = "{{rnd}}"}}}} : {_V}, {_M} -> {_VI}
        %r = pto.vbitcast %t : {_VI} -> {_V}""",
    "vcvt_part": f"""%t = pto.vcvt %a, %m {{{{rnd = "{{rnd}}", part = "{{part}}"}}}}
          : {_V}, {_M} -> {_VH}
        %r = pto.vbitcast %t : {_VH} -> {_V}""",
}


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_more_row_ops_same_bits(data: Any) -> None:
    """Compares, vdup, vbr, vbitcast and vcvt in a batched loop: the bits of the loop run
    one iteration at a time, and the loop does run as a batch."""
    op = data.draw(st.sampled_from(sorted(_MORE)))
    body = _MORE[op].format(mode=data.draw(st.sampled_from(["eq", "ne", "lt", "le", "gt",
                                                             "ge"])),
                            pos=data.draw(st.sampled_from(["LOWEST", "HIGHEST"])),
                            rnd=data.draw(st.sampled_from(["R", "A", "F", "C", "Z"])),
                            part=data.draw(st.sampled_from(["EVEN", "ODD"])))
    tail = data.draw(st.booleans())
    n = data.draw(st.integers(2, 10)) * 64 - (data.draw(st.integers(0, 63)) if tail else 0)
    prog = load(_kernel("f32", n, op, 1, 0, tail, False, 1, body=body), target="a5")
    x, y = _values(data.draw, "f32", n), _values(data.draw, "f32", n)
    if op.startswith("vcvt"):  # (in the integers' and f16's ranges, with a few beyond)
        x = np.where(np.abs(x) < 1e6, x / 7, x).astype(np.float32)
    z = np.zeros(n, np.float32)
    on, off, batched = _run_both(prog, "k", [x, y, z])
    _same_bits(on, off, f"{op}: {body}")
    assert batched == 1


def _dependent_kernel() -> str:
    """A loop whose iteration k stores where iteration k + 1 loads (a running shift): not
    independent, so it must run one iteration at a time."""
    return """
module attributes {pto.target_arch = "a5", pto.kernel_kind = #pto.kernel_kind<vector>} {
  func.func @k(%x: !pto.ptr<f32, gm>) attributes {pto.kernel} {
    %c0 = arith.constant 0 : index
    %c64 = arith.constant 64 : index
    %end = arith.constant 512 : index
    %z = arith.constant 0 : i64
    %one = arith.constant 1 : i64
    %nb = arith.constant 2304 : i64
    %a0 = arith.constant 0 : i64
    %a1 = arith.constant 256 : i64
    %u = pto.castptr %a0 : i64 -> !pto.ptr<f32, ub>
    %v = pto.castptr %a1 : i64 -> !pto.ptr<f32, ub>
    pto.mte_gm_ub %x, %u, %z, %nb nburst(%one, %nb, %nb)
      : !pto.ptr<f32, gm>, !pto.ptr<f32, ub>, i64, i64, i64, i64, i64
    pto.vecscope {
      %m = pto.pset_b32 "PAT_ALL" : !pto.mask<b32>
      scf.for %i = %c0 to %end step %c64 {
        %a = pto.vlds %u[%i] : !pto.ptr<f32, ub> -> !pto.vreg<64xf32>
        %r = pto.vadd %a, %a, %m
          : !pto.vreg<64xf32>, !pto.vreg<64xf32>, !pto.mask<b32> -> !pto.vreg<64xf32>
        pto.vsts %r, %v[%i], %m : !pto.vreg<64xf32>, !pto.ptr<f32, ub>, !pto.mask<b32>
      }
    }
    pto.mte_ub_gm %u, %x, %nb nburst(%one, %nb, %nb)
      : !pto.ptr<f32, ub>, !pto.ptr<f32, gm>, i64, i64, i64, i64
    return
  }
}
"""


def test_dependent_loop_runs_per_iteration() -> None:
    prog = load(_dependent_kernel(), target="a5")
    x = np.arange(576, dtype=np.float32)
    before = dict(vbatch.stats)
    on, off, batched = _run_both(prog, "k", [x])
    assert batched == 0 and vbatch.stats["per_iteration"] > before["per_iteration"]
    _same_bits(on, off, "dependent")
    want = x.copy()
    for k in range(8):  # (each register doubled into the next one's place, in order)
        want[64 * (k + 1):64 * (k + 2)] = 2 * want[64 * k:64 * (k + 1)]
    np.testing.assert_array_equal(on[0], want)


def _vadd_kernel() -> str:
    return (Path(__file__).resolve().parents[2] / "benchmarks/vpto/vadd_1m.pto").read_text()


def test_observed_runs_take_the_per_iteration_path() -> None:
    """The sanitizer and the cycle model see every micro-op with its own byte ranges: a run
    they observe never batches (so they see what they saw before batching existed), and the
    values are the batched run's."""
    prog = load(_vadd_kernel().replace("%chunks = arith.constant 64",
                                       "%chunks = arith.constant 2"), target="a5")
    n = 1 << 20
    rng = np.random.default_rng(1)
    x, y = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    z0 = np.zeros(n, np.float32)
    z1 = z0.copy()
    prog.run("vadd_1m", x, y, z0)
    before = dict(vbatch.stats)
    san = Sanitizer()
    prog.run("vadd_1m", x, y, z1, sanitize=san)
    rep = prog.run("vadd_1m", x, y, z1, cycles=True)
    assert vbatch.stats["batched"] == before["batched"]
    assert vbatch.stats["per_iteration"] == before["per_iteration"] + 4
    assert not san.report.findings and san.report.executed
    vbatch.ENABLED = False
    try:
        rep_off = prog.run("vadd_1m", x, y, z1, cycles=True)
    finally:
        vbatch.ENABLED = True
    # every micro-op of the 2 x 256 iterations is scheduled, as with batching off
    assert len(rep.steps) == len(rep_off.steps) > 2 * 256 * 5
    assert rep.total == rep_off.total > 0
    assert z0.tobytes() == z1.tobytes()
    np.testing.assert_array_equal(z0[:2 * 16384], x[:2 * 16384] + y[:2 * 16384])


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(["PLT_B8", "PLT_B16", "PLT_B32"]), st.integers(-300, 5000),
       st.integers(0, 40))
def test_plt_chain_is_the_entry_fed_back(name: str, first: int, trips: int) -> None:
    """An entry's ``chain`` (what a batched loop uses for a carried plt count) gives the
    counts of feeding the entry its own scalar_out, and the masks of the rows are the
    entry's masks of those counts."""
    from ptoisa.isa.registry import REGISTRY
    from ptoisa.targets import get_target

    ins = REGISTRY[name]
    call = ins.checked_call(get_target("a5"))
    counts = ins.chain(first, trips)
    left: Any = first
    masks = []
    for k in range(trips + 1):
        assert counts[k] == left, (k, counts[:k + 1])
        mask, left = call(None, [left], {})
        masks.append(mask.bits)
    rows, _ = call(None, [counts], {})
    assert np.array_equal(rows.bits, np.stack(masks))
    assert rows.full == bool(np.stack(masks)[:, ::{"PLT_B8": 1, "PLT_B16": 2,
                                                   "PLT_B32": 4}[name]].all())


def test_values_made_in_the_body_from_outside_are_fresh_each_launch_of_the_loop() -> None:
    """A constant and an integer op of outside values inside the loop's body (the same every
    iteration, but not every time the loop runs) feed the offsets: each run of the loop
    sees this run's values, in its checks too."""
    src = """
module attributes {pto.target_arch = "a5", pto.kernel_kind = #pto.kernel_kind<vector>} {
  func.func @k(%x: !pto.ptr<f32, gm>, %z: !pto.ptr<f32, gm>) attributes {pto.kernel} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %c128 = arith.constant 128 : index
    %c64 = arith.constant 64 : index
    %zero = arith.constant 0 : i64
    %one = arith.constant 1 : i64
    %nb = arith.constant 2048 : i64
    %a0 = arith.constant 0 : i64
    %a1 = arith.constant 8192 : i64
    %ux = pto.castptr %a0 : i64 -> !pto.ptr<f32, ub>
    %uz = pto.castptr %a1 : i64 -> !pto.ptr<f32, ub>
    pto.mte_gm_ub %x, %ux, %zero, %nb nburst(%one, %nb, %nb)
      : !pto.ptr<f32, gm>, !pto.ptr<f32, ub>, i64, i64, i64, i64, i64
    pto.mte_gm_ub %x, %uz, %zero, %nb nburst(%one, %nb, %nb)
      : !pto.ptr<f32, gm>, !pto.ptr<f32, ub>, i64, i64, i64, i64, i64
    scf.for %k = %c0 to %c4 step %c1 {
      %base = arith.muli %k, %c128 : index
      pto.vecscope {
        %m = pto.pset_b32 "PAT_ALL" : !pto.mask<b32>
        scf.for %i = %c0 to %c128 step %c64 {
          %c3 = arith.constant 3 : index
          %b = arith.addi %base, %c3 : index
          %j = arith.addi %i, %b : index
          %a = pto.vlds %ux[%j] : !pto.ptr<f32, ub> -> !pto.vreg<64xf32>
          %r = pto.vadd %a, %a, %m
            : !pto.vreg<64xf32>, !pto.vreg<64xf32>, !pto.mask<b32> -> !pto.vreg<64xf32>
          pto.vsts %r, %uz[%j], %m : !pto.vreg<64xf32>, !pto.ptr<f32, ub>, !pto.mask<b32>
        }
      }
    }
    pto.mte_ub_gm %uz, %z, %nb nburst(%one, %nb, %nb)
      : !pto.ptr<f32, ub>, !pto.ptr<f32, gm>, i64, i64, i64, i64
    return
  }
}
"""
    prog = load(src, target="a5")
    x = np.arange(512, dtype=np.float32)
    z = np.zeros(512, np.float32)
    on, off, batched = _run_both(prog, "k", [x, z])
    assert batched == 4
    _same_bits(on, off, "offsets from the body")
    want = x.copy()
    want[3:] = 2 * x[3:]  # (chunk k doubles elements 128k + 3 .. 128k + 130)
    np.testing.assert_array_equal(on[1], want)


def test_a_full_mask_read_at_another_width_counts_its_lanes() -> None:
    """A plt_b32 mask of rows says every one of its 64 lanes is on; read as 128 lanes (a
    permissive run may pair it with f16) half of them are off, and zeroing sees that."""
    from ptoisa.isa.micro.common import zeroing
    from ptoisa.isa.micro.predicate import plt_mask

    mask = plt_mask(np.array([64, 64]), "b32")
    assert mask.full
    out = zeroing(np.ones((2, 128), np.float16), mask).data
    assert out[:, 0::2].all() and not out[:, 1::2].any()

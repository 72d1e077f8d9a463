"""Documented constraints hold on every target; permissive mode reproduces the C++ simulator.

For every rule marked ``sim_unchecked`` (an ISA page's general constraint / run-time check
that the upstream CPU simulator does not make): a violating use is rejected on cpu, a2a3 and
a5 with a message naming the operands and the rule, and the same use on a permissive machine
gives the simulator's result, computed here from the page (rows/cols outside the source's
valid region left as they were), eagerly and as a ``.pto`` program.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import ptoisa as pto
from ptoisa.cli import main
from ptoisa.enums import TileType
from ptoisa.errors import ConstraintError, UnsupportedType
from ptoisa.isa.registry import REGISTRY, sim_unchecked_rules
from ptoisa.memory import pop
from ptoisa.targets import TARGET_NAMES, get_target
from ptoisa.tile import Tile

TARGETS = list(TARGET_NAMES)
SENTINEL = -7.0  # what dst holds before the instruction: the simulator leaves it there


def vec(dt: str, r: int, c: int, valid: tuple[int, int] | None = None,
        data: np.ndarray | None = None) -> Tile:
    t = Tile(TileType.Vec, dt, r, c, valid=valid)
    t.load_numpy(np.full((r, c), SENTINEL) if data is None else data)
    return t


def legal(name: str, target: str, dt: str) -> bool:
    rule = get_target(target).legality.get(name)
    if rule is None:
        return False
    if rule.dtypes is None:
        return True
    return any((d[0] if isinstance(d, tuple) else d).name == dt for d in rule.dtypes)


@pytest.fixture(params=TARGETS)
def machine(request: pytest.FixtureRequest):  # type: ignore[no-untyped-def]
    m = pto.target(request.param)
    yield m
    pop(m)


def strict_then_permissive(m: pto.Machine, run: Callable[[], Any], match: str) -> None:
    """``run`` is rejected (a ConstraintError naming the rule), then runs permissively."""
    with pytest.raises(ConstraintError, match=match):
        run()
    m.permissive = True
    run()


X = np.arange(1, 257, dtype=np.float64).reshape(16, 16) % 13 - 6  # small exact values


# ---- reductions --------------------------------------------------------------------------------

ROW_REDUCE = {"TROWSUM": np.sum, "TROWMAX": np.max, "TROWMIN": np.min, "TROWPROD": np.prod}


@pytest.mark.parametrize("name", sorted(ROW_REDUCE))
def test_row_reduce_valid_rows(machine, name):
    """src 16x16 with 8 valid rows into a dst with 16 valid rows: the seed page's
    src.GetValidRow() == dst.GetValidRow(). The simulator writes rows 0-7 only."""
    if not legal(name, machine.target.name, "f32"):
        pytest.skip(f"{name} f32 is not on {machine.target.name}")
    x = X / 4 if name == "TROWPROD" else X
    src = vec("f32", 16, 16, (8, 16), x)
    dst = vec("f32", 16, 8, (16, 1))
    strict_then_permissive(machine, lambda: REGISTRY[name](dst, src, vec("f32", 16, 16)),
                           rf"{name.lower()}: src valid rows 8 != dst valid rows 16 \(the CPU "
                           r"simulator does not check this; permissive=True skips it\)")
    want = np.full((16, 8), SENTINEL)
    want[:8, 0] = ROW_REDUCE[name](x[:8], axis=1)
    np.testing.assert_allclose(dst.numpy(), want, rtol=1e-6)


@pytest.mark.parametrize("valid", [(0, 16), (8, 0)])
def test_row_reduce_empty_src(machine, valid):
    src = vec("f32", 16, 16, (pto.Dyn(valid[0]), pto.Dyn(valid[1])), X)
    dst = vec("f32", 16, 8, (pto.Dyn(valid[0]), 1))
    strict_then_permissive(machine, lambda: pto.TROWMAX(dst, src, vec("f32", 16, 16)),
                           rf"trowmax: src valid region {valid[0]}x{valid[1]} is empty")
    assert (dst.numpy() == SENTINEL).all()  # the simulator writes nothing


COL_REDUCE = {"TCOLSUM": np.sum, "TCOLMAX": np.max, "TCOLMIN": np.min, "TCOLPROD": np.prod}


@pytest.mark.parametrize("name", sorted(COL_REDUCE))
def test_col_reduce_valid_cols(machine, name):
    """src.GetValidCol() == dst.GetValidCol() (general constraints of the TCOL* pages)."""
    if not legal(name, machine.target.name, "f32"):
        pytest.skip(f"{name} f32 is not on {machine.target.name}")
    x = X[:4] / 2
    src = vec("f32", 4, 16, (4, 8), x)
    dst = vec("f32", 1, 16, (1, 16))
    strict_then_permissive(machine, lambda: REGISTRY[name](dst, src),
                           rf"{name.lower()}: src valid cols 8 != dst valid cols 16")
    want = np.full(16, SENTINEL)
    want[:8] = COL_REDUCE[name](x[:, :8], axis=0)
    np.testing.assert_allclose(dst.numpy()[0], want, rtol=1e-6)


def test_row_argmax_valid_rows(machine):
    """TROWARGMAX: src.GetValidRow() == dst.GetValidRow() (shared row-reduce checks)."""
    src = vec("f32", 16, 16, (8, 16), X)
    dst = Tile(TileType.Vec, "i32", 16, 8, valid=(16, 1))
    dst.load_numpy(np.full((16, 8), -1, np.int32))
    strict_then_permissive(machine, lambda: pto.TROWARGMAX(dst, src, vec("f32", 16, 16)),
                           r"trowargmax: src valid rows 8 != dst valid rows 16")
    want = np.full(16, -1)
    want[:8] = np.argmax(X[:8], axis=1)
    np.testing.assert_array_equal(dst.numpy()[:, 0], want)


def test_col_argmin_valid_cols(machine):
    src = vec("f32", 8, 16, (8, 8), X[:8])
    dst = Tile(TileType.Vec, "i32", 1, 16, valid=(1, 16))
    dst.load_numpy(np.full((1, 16), -1, np.int32))
    strict_then_permissive(machine, lambda: pto.TCOLARGMIN(dst, src, vec("f32", 8, 16)),
                           r"tcolargmin: src valid cols 8 != dst valid cols 16")
    want = np.full(16, -1)
    want[:8] = np.argmin(X[:8, :8], axis=0)
    np.testing.assert_array_equal(dst.numpy()[0], want)


# ---- partial-validity patterns -------------------------------------------------------------------

PART = {"TPARTADD": np.add, "TPARTMAX": np.maximum, "TPARTMIN": np.minimum,
        "TPARTMUL": np.multiply}


A5_WITHIN = {"TPARTMAX": -np.inf, "TPARTMIN": np.inf}  # a5 takes both-within-dst, pads


@pytest.mark.parametrize("name", sorted(PART))
def test_partial_validity_pattern(machine, name):
    """Neither source's valid region equals dst's: rejected (TPARTMAX seed page); the
    simulator combines where both are valid, copies where one is, writes 0 elsewhere.
    A5's TPARTMAX / TPARTMIN take the pattern (both sources within dst) and leave their pad
    (-inf / +inf, pto-isa's a5 Padding Min / Max) where neither source is valid."""
    a, b = X[:8], X[8:] + 1
    s0 = vec("f32", 8, 16, (4, 16), a)
    s1 = vec("f32", 8, 16, (8, 5), b)
    dst = vec("f32", 8, 16, (8, 16))
    if machine.target.name == "a5" and name in A5_WITHIN:
        REGISTRY[name](dst, s0, s1)
        want = np.full((8, 16), A5_WITHIN[name])
        want[:4] = a[:4]
        want[:, :5] = b[:, :5]
        want[:4, :5] = PART[name](a[:4, :5], b[:4, :5])
        np.testing.assert_array_equal(dst.numpy(), want)
        # a source beyond dst is still rejected
        big = vec("f32", 8, 16, (8, 16), a)
        small = vec("f32", 8, 16, (6, 16))
        with pytest.raises(ConstraintError, match=rf"{name.lower()}: unsupported partial-"
                           r"validity pattern: dst valid 6x16, src0 8x16, src1 8x5 \(both "
                           r"sources must lie within dst\)"):
            REGISTRY[name](small, big, s1)
        return
    strict_then_permissive(machine, lambda: REGISTRY[name](dst, s0, s1),
                           rf"{name.lower()}: unsupported partial-validity pattern: dst valid "
                           r"8x16, src0 4x16, src1 8x5")
    want = np.zeros((8, 16))
    want[:4] = a[:4]
    want[:, :5] = b[:, :5]
    want[:4, :5] = PART[name](a[:4, :5], b[:4, :5])
    np.testing.assert_array_equal(dst.numpy(), want)


def test_partial_arg_pattern(machine):
    v0 = vec("f32", 8, 16, (4, 16), X[:8])
    v1 = vec("f32", 8, 16, (8, 5), X[8:])
    i0 = Tile(TileType.Vec, "i32", 8, 16, valid=(4, 16)).load_numpy(np.full((8, 16), 1))
    i1 = Tile(TileType.Vec, "i32", 8, 16, valid=(8, 5)).load_numpy(np.full((8, 16), 2))
    dv = vec("f32", 8, 16, (8, 16))
    di = Tile(TileType.Vec, "i32", 8, 16, valid=(8, 16))
    strict_then_permissive(machine, lambda: pto.TPARTARGMAX(dv, v0, v1, di, i0, i1),
                           r"tpartargmax: unsupported partial-validity pattern")
    want = np.zeros((8, 16))
    want[:4] = 1
    want[:, :5] = 2
    want[:4, :5] = np.where(X[:4, :5] > X[8:12, :5], 1, 2)
    np.testing.assert_array_equal(di.numpy(), want)


# ---- TEXTRACT window, TGATHER contiguous dst ------------------------------------------------

def test_textract_static_window(machine):
    """indexRow + dst Rows <= src Rows (TEXTRACT general checks); the simulator bounds dst's
    valid region only and copies it."""
    src = vec("f32", 16, 16, None, X)
    dst = vec("f32", 8, 8, (4, 4))
    strict_then_permissive(machine, lambda: pto.TEXTRACT(dst, src, 10, 2),
                           r"textract: window of 8x8 \(dst Rows x Cols\) at \(10, 2\) exceeds "
                           r"src 16x16")
    want = np.full((8, 8), SENTINEL)
    want[:4, :4] = X[10:14, 2:6]
    np.testing.assert_array_equal(dst.numpy(), want)


def test_tgather_contiguous_dst(machine):
    """Index gather: dst valid cols == Cols (both NPU lists); the simulator gathers the valid
    region: dst[i, j] = src0 flat[idx[i, j]]."""
    src = vec("f32", 8, 16, None, X[:8])
    idx_v = (np.arange(128).reshape(8, 16) * 5) % 128
    idx = Tile(TileType.Vec, "i32", 8, 16).load_numpy(idx_v)
    dst = vec("f32", 8, 16, (8, 12))
    tmp = Tile(TileType.Vec, "i32", 8, 16)
    strict_then_permissive(machine, lambda: pto.TGATHER(dst, src, idx, tmp),
                           r"tgather: dst valid cols 12 must equal Cols 16")
    want = np.full((8, 16), SENTINEL)
    want[:, :12] = X[:8].reshape(-1)[idx_v[:, :12]]
    np.testing.assert_array_equal(dst.numpy(), want)


# ---- elementwise: sources have dst's valid region ------------------------------------------

#: the entries that declare valid-region equalities (``same_valid=``)
SAME_VALID = {n: ins.same_valid for n, ins in REGISTRY.items() if ins.same_valid is not None}

_DTYPES = ("f32", "f16", "i32", "i16")
_SCALAR = {"TSHLS": 1, "TSHRS": 1, "TDIVS": 2.0, "TPOWS": 2.0}
#: (dst, source) element types of the converting instructions
_PAIRS = {"TADDRELUCONV": ("f16", "f32"), "TSUBRELUCONV": ("f16", "f32"),
          "TADDDEQRELU": ("f16", "i32")}


def _elementwise_args(name: str, dt: str, src_valid: tuple[int, int]) -> tuple[Tile, list[Any]]:
    ins = REGISTRY[name]
    spec = SAME_VALID[name]
    assert spec is not None
    dt, sdt = _PAIRS.get(name, (dt, dt))
    np_dt = pto.dtype(dt).np
    data = (np.abs(X[:8]) + 1).astype(pto.dtype(sdt).np)
    dst = Tile(TileType.Vec, dt, 8, 16, valid=(4, 8)).load_numpy(np.full((8, 16), 5, np_dt))
    args: list[Any] = []
    for o in ins.operands:
        if o.name == "dst":
            args.append(dst)
        elif o.name in spec.names and o.name != "scalar":
            args.append(Tile(TileType.Vec, sdt, 8, 16, valid=src_valid).load_numpy(data))
        elif o.kind in ("scalar", "any"):
            args.append(_SCALAR.get(name, 2.0 if dt.startswith("f") else 2))
        elif o.optional:
            break
        elif o.name == "mask":
            args.append(Tile(TileType.Vec, "ui8", 8, 32).load_numpy(np.full((8, 32), 0x55)))
        else:  # scratch
            args.append(Tile(TileType.Vec, sdt, 8, 16))
    return dst, args


def _first_legal(name: str, target: str) -> str | None:
    if name in _PAIRS:
        return _PAIRS[name][0] if get_target(target).legality.get(name) else None
    return next((d for d in _DTYPES if legal(name, target, d)), None)


@pytest.mark.parametrize("name", sorted(SAME_VALID))
@pytest.mark.parametrize("target", TARGETS)
def test_elementwise_same_valid(target, name):
    """A source with a larger valid region than dst (8x16 vs 4x8): rejected wherever the page
    lists the check; a permissive machine computes dst's valid region from the sources'
    values there (as with sources of dst's valid region) and leaves the rest of dst."""
    dt = _first_legal(name, target)
    if dt is None:
        pytest.skip(f"{name} is not on {target}")
    spec = SAME_VALID[name]
    checked = target in spec.rows or target in spec.cols
    m = pto.target(target)
    try:
        dst, args = _elementwise_args(name, dt, (8, 16))
        try:
            if checked:
                tile_ops = [n for n in spec.names if n != "scalar"]
                with pytest.raises(ConstraintError,
                                   match=rf"{name.lower()}: ({'|'.join(tile_ops)}) valid "
                                         r"(region 8x16 must equal dst valid region 4x8|cols 16 "
                                         r"must equal dst valid cols 8)"):
                    REGISTRY[name](*args)
            else:
                REGISTRY[name](*args)  # not a check of this target
        except UnsupportedType:
            pytest.skip(f"{name} {dt} combination is not on {target}")
        m.permissive = True
        REGISTRY[name](*args)
        got = dst.numpy().copy()
        m.permissive = False
        ref, ref_args = _elementwise_args(name, dt, (4, 8))
        REGISTRY[name](*ref_args)
        np.testing.assert_array_equal(got, ref.numpy())
        assert (got[4:] == 5).all() and (got[:, 8:] == 5).all()
    finally:
        pop(m)


@pytest.mark.parametrize("target", TARGETS)
def test_elementwise_permissive_values(target):
    """Independent references for a few: the simulator iterates dst's valid region."""
    m = pto.target(target, permissive=True)
    try:
        a, b = X[:8], X[8:]
        for name, args, want in (
            ("TEXP", (a / 4,), np.exp(a[:4, :8] / 4)),
            ("TSUB", (a, b), a[:4, :8] - b[:4, :8]),
            ("TADDS", (a, 1.5), a[:4, :8] + 1.5),
            ("TMAXS", (a, 0.5), np.maximum(a[:4, :8], 0.5)),
        ):
            dst = vec("f32", 8, 16, (4, 8))
            ops = [vec("f32", 8, 16, None, x) if isinstance(x, np.ndarray) else x for x in args]
            REGISTRY[name](dst, *ops)
            out = dst.numpy()
            np.testing.assert_allclose(out[:4, :8], want, rtol=1e-6)
            assert (out[4:] == SENTINEL).all() and (out[:, 8:] == SENTINEL).all()
    finally:
        pop(m)


# ---- the registry: which rules a permissive machine skips ---------------------------------------

def test_sim_unchecked_rules_are_listed_in_the_docs(shared_dir):
    """docs/cpu_sim_differences.md has a row for every instruction with a sim_unchecked rule."""
    from pathlib import Path

    doc = (Path(__file__).resolve().parents[2] / "docs" / "cpu_sim_differences.md").read_text()
    section = doc.split("## Documented constraints", 1)[1].split("\n## ", 1)[0]
    names = sorted(n for n, ins in REGISTRY.items() if sim_unchecked_rules(ins))
    assert names
    missing = [n for n in names if n not in section]
    assert not missing, missing


def test_permissive_must_be_a_bool():
    with pytest.raises(pto.PtoError, match="permissive must be True or False"):
        pto.Machine("cpu", permissive="yes")  # type: ignore[arg-type]


# ---- .pto programs, Program.run / Kernel / launch / CLI ----------------------------------------

TV = "!pto.tensor_view<?x?xf32>"


def _tb(r: int, c: int, vr: int, vc: int) -> str:
    return (f"!pto.tile_buf<loc=vec, dtype=f32, rows={r}, cols={c}, v_row={vr}, v_col={vc}, "
            "blayout=row_major, slayout=none_box, fractal=512, pad=0>")


def _program(op_line: str) -> str:
    """x (8x16) is loaded into s (16x16, 8 valid rows), y (16x8) into d (all valid); the op
    runs; d is stored back to y."""
    s, d = _tb(16, 16, 8, 16), _tb(16, 8, 16, 8)
    ps, pd = "!pto.partition_tensor_view<8x16xf32>", "!pto.partition_tensor_view<16x8xf32>"
    return f"""module {{
  func.func @k(%x: !pto.ptr<f32>, %y: !pto.ptr<f32>) {{
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c8 = arith.constant 8 : index
    %c16 = arith.constant 16 : index
    %vx = pto.make_tensor_view %x, shape = [%c8, %c16], strides = [%c16, %c1] : {TV}
    %vy = pto.make_tensor_view %y, shape = [%c16, %c8], strides = [%c8, %c1] : {TV}
    %px = pto.partition_view %vx, offsets = [%c0, %c0], sizes = [%c8, %c16] : {TV} -> {ps}
    %py = pto.partition_view %vy, offsets = [%c0, %c0], sizes = [%c16, %c8] : {TV} -> {pd}
    %s = pto.alloc_tile : {s}
    %d = pto.alloc_tile : {d}
    %t = pto.alloc_tile : {s}
    pto.tload ins(%px : {ps}) outs(%s : {s})
    pto.tload ins(%py : {pd}) outs(%d : {d})
    {op_line.format(S=s, D=d)}
    pto.tstore ins(%d : {d}) outs(%py : {pd})
    return
  }}
}}
"""


TROWSUM_PTO = _program("pto.trowsum ins(%s, %t : {S}, {S}) outs(%d : {D})")


def _xy() -> tuple[np.ndarray, np.ndarray]:
    return X[:8].astype(np.float32), np.full((16, 8), SENTINEL, np.float32)


def _trowsum_expected(x: np.ndarray) -> np.ndarray:
    want = np.full((16, 8), SENTINEL)
    want[:8, 0] = x.astype(np.float64).sum(axis=1)
    return want


@pytest.mark.parametrize("target", TARGETS)
def test_pto_program_strict_and_permissive(target):
    prog = pto.load(TROWSUM_PTO, target=target, filename="rowsum.pto")
    x, y = _xy()
    with pytest.raises(ConstraintError,
                       match=r"rowsum\.pto:16:5: error: trowsum: src valid rows 8 != dst valid "
                             r"rows 16"):
        prog.k(x, y)
    assert (y == SENTINEL).all()
    prog.k(x, y, permissive=True)  # the Kernel call
    np.testing.assert_array_equal(y, _trowsum_expected(x))
    y[:] = SENTINEL
    prog.run("k", x, y, permissive=True)
    np.testing.assert_array_equal(y, _trowsum_expected(x))
    m = pto.Machine(target, permissive=True)
    y[:] = SENTINEL
    prog.k(x, y, machine=m)  # a machine's own setting
    np.testing.assert_array_equal(y, _trowsum_expected(x))
    with pytest.raises(pto.PtoError, match="contradicts the machine"):
        prog.k(x, y, machine=m, permissive=False)


@pytest.mark.parametrize("target", TARGETS)
def test_pto_elementwise_program(target):
    """texp with a source of 8 valid rows into a dst of 16 (the seed of the same rule)."""
    prog = pto.load(_program("pto.texp ins(%s : {S}) outs(%d : {D})").replace(
        "v_row=16, v_col=8", "v_row=8, v_col=8").replace(
        "[%c16, %c8] : " + TV + " -> !pto.partition_tensor_view<16x8xf32>",
        "[%c8, %c8] : " + TV + " -> !pto.partition_tensor_view<8x8xf32>").replace(
        "!pto.partition_tensor_view<16x8xf32>", "!pto.partition_tensor_view<8x8xf32>"),
        target=target)
    x, y = _xy()
    with pytest.raises(ConstraintError, match=r"texp: src valid region 8x16 must equal dst "
                                              r"valid region 8x8"):
        prog.k(x, y)
    prog.k(x, y, permissive=True)
    want = np.full((16, 8), SENTINEL, np.float32)
    want[:8] = np.exp(x[:, :8].astype(np.float64)).astype(np.float32)
    np.testing.assert_allclose(y, want, rtol=1e-6)


def test_launch_permissive():
    def kernel(xa: np.ndarray, ya: np.ndarray) -> None:
        src = Tile(TileType.Vec, "f32", 16, 16, valid=(8, 16))
        src.load_numpy(np.zeros((16, 16)))
        src.load_numpy(np.pad(xa, ((0, 8), (0, 0))))
        dst = Tile(TileType.Vec, "f32", 16, 8).load_numpy(ya)
        pto.TROWSUM(dst, src, Tile(TileType.Vec, "f32", 16, 16))
        ya[:] = dst.numpy()

    x, y = _xy()
    with pytest.raises(ConstraintError, match="trowsum: src valid rows 8"):
        pto.launch(kernel, x, y, target="a5")
    pto.launch(kernel, x, y, target="a5", permissive=True)
    np.testing.assert_array_equal(y, _trowsum_expected(x))


def test_cli_run_permissive(tmp_path, capsys):
    f = tmp_path / "rowsum.pto"
    f.write_text(TROWSUM_PTO)
    x, y = _xy()
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "y.npy", y)
    args = ["run", str(f), "--target", "cpu", "--arg", f"x={tmp_path / 'x.npy'}", "--arg",
            f"y={tmp_path / 'y.npy'}", "--out", str(tmp_path / "out")]
    assert main(args) == 1
    assert "trowsum: src valid rows 8 != dst valid rows 16" in capsys.readouterr().err
    assert main([*args, "--permissive"]) == 0
    np.testing.assert_array_equal(np.load(tmp_path / "out" / "y.npy"), _trowsum_expected(x))


# ---- the conformance runner ------------------------------------------------------------------

def test_conformance_quirk_for_a_case_that_needs_permissive(shared_dir, tmp_path):
    """A recorded case that breaks a sim_unchecked rule runs again permissively: QUIRK with the
    constraint as the reason."""
    import shutil

    from ptoisa.conformance import run_case

    cases = sorted((shared_dir / "conformance" / "textract").glob("*IDX_8_16_L_0_0"))
    if not cases:
        pytest.skip("conformance pack not found")
    d = tmp_path / cases[0].name
    shutil.copytree(cases[0], d)
    v = run_case(d, "cpu")
    assert v.status == "QUIRK", v
    assert v.detail.startswith("needs permissive mode: textract: window of")


# ---- type rules the simulator does not check ---------------------------------------------------

def test_trowsum_same_element_type_on_cpu():
    """The seed page: dst and src use the same element type. cpu rejects the simulator's
    widening pairs by default; a permissive cpu machine sums f16 -> f32 in f32."""
    m = pto.target("cpu")
    try:
        x = np.array([[2048] + [1] * 15], np.float16)
        src = Tile(TileType.Vec, "f16", 1, 16).load_numpy(x)
        dst = Tile(TileType.Vec, "f32", 1, 8, valid=(1, 1))
        with pytest.raises(ConstraintError, match=r"trowsum: expects src and dst to have the same "
                                                  r"element type \(dst f32, src f16\)"):
            pto.TROWSUM(dst, src, src)
        m.permissive = True
        pto.TROWSUM(dst, src, src)
        assert dst.numpy()[0, 0] == 2063.0
    finally:
        pop(m)


@pytest.mark.parametrize("target", TARGETS)
def test_trowsum_widening_is_never_an_npu_type(target):
    m = pto.target(target, permissive=True)
    try:
        src = Tile(TileType.Vec, "f16", 1, 16)
        dst = Tile(TileType.Vec, "f32", 1, 8, valid=(1, 1))
        if target == "cpu":
            pto.TROWSUM(dst, src, src)
        else:  # the NPU type tables are not the simulator's missing checks
            with pytest.raises(UnsupportedType, match=r"src f16 -> dst f32 is not supported"):
                pto.TROWSUM(dst, src, src)
    finally:
        pop(m)


def test_tprint_documented_types(capsys):
    m = pto.target("cpu")
    try:
        t = Tile(TileType.Vec, "bf16", 1, 16).load_numpy(np.ones((1, 16)))
        with pytest.raises(ConstraintError, match=r"tprint: src element type bf16 is not "
                                                  r"supported \(supported: f32, f16, i8, ui8"):
            pto.TPRINT(t)
        m.permissive = True
        pto.TPRINT(t)
        assert capsys.readouterr().out.startswith("TPRINT 1x16\n  1.0000")
    finally:
        pop(m)


WIDEN_PTO = """module {
  func.func @k(%x: !pto.ptr<f16>, %y: !pto.ptr<f32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c8 = arith.constant 8 : index
    %c16 = arith.constant 16 : index
    %vx = pto.make_tensor_view %x, shape = [%c1, %c16], strides = [%c16, %c1] : TVH
    %vy = pto.make_tensor_view %y, shape = [%c1, %c8], strides = [%c8, %c1] : TVF
    %px = pto.partition_view %vx, offsets = [%c0, %c0], sizes = [%c1, %c16] : TVH -> PH
    %py = pto.partition_view %vy, offsets = [%c0, %c0], sizes = [%c1, %c8] : TVF -> PF
    %s = pto.alloc_tile : SH
    %d = pto.alloc_tile : DF
    pto.tload ins(%px : PH) outs(%s : SH)
    pto.trowsum ins(%s, %s : SH, SH) outs(%d : DF)
    pto.tstore ins(%d : DF) outs(%py : PF)
    return
  }
}
"""
for _k, _v in {"TVH": "!pto.tensor_view<?x?xf16>", "TVF": "!pto.tensor_view<?x?xf32>",
               "PH": "!pto.partition_tensor_view<1x16xf16>",
               "PF": "!pto.partition_tensor_view<1x8xf32>",
               "SH": "!pto.tile_buf<loc=vec, dtype=f16, rows=1, cols=16, v_row=1, v_col=16, "
                     "blayout=row_major, slayout=none_box, fractal=512, pad=0>",
               "DF": "!pto.tile_buf<loc=vec, dtype=f32, rows=1, cols=8, v_row=1, v_col=8, "
                     "blayout=row_major, slayout=none_box, fractal=512, pad=0>"}.items():
    WIDEN_PTO = WIDEN_PTO.replace(_k, _v)


def test_pto_type_rule_strict_and_permissive():
    with pytest.raises(pto.VerifyError, match=r"w\.pto:14:5: error: trowsum: expects src and dst "
                                              r"to have the same element type"):
        pto.load(WIDEN_PTO, filename="w.pto", target="cpu")
    prog = pto.load(WIDEN_PTO, filename="w.pto", target="cpu", permissive=True)
    x = np.array([[2048] + [1] * 15], np.float16)
    y = np.full((1, 8), SENTINEL, np.float32)
    prog.k(x, y)
    assert y[0, 0] == 2063.0  # f32 accumulation: 2048 + 15


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("name", ["TPUT_ASYNC", "TGET_ASYNC", "TPREFETCH_ASYNC"])
def test_async_dma_flat_1d(target, name):
    """The async DMA pages: flat contiguous logical 1-D GM tensors only; the simulator takes
    any view. Checked on the types (what the verifier runs for .pto)."""
    from ptoisa.tensor import GlobalTensor

    two_d = GlobalTensor(np.zeros((4, 16), np.float32)).spec
    flat = GlobalTensor(np.zeros(64, np.float32)).spec
    ins = REGISTRY[name]
    gms = [o.name for o in ins.operands if o.kind == "gm"]
    with pytest.raises(ConstraintError, match=rf"{name.lower()}: .*flat contiguous .*1x1x1x4x16"):
        ins.check_types(target, dict.fromkeys(gms, two_d))
    ins.check_types(target, dict.fromkeys(gms, two_d), permissive=True)
    ins.check_types(target, dict.fromkeys(gms, flat))


# ---- random valid regions ------------------------------------------------------------------------

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


@settings(max_examples=40, deadline=None)
@given(target=st.sampled_from(TARGETS), sv=st.tuples(st.integers(0, 8), st.integers(0, 16)),
       dvr=st.integers(0, 8), permissive=st.booleans())
def test_random_trowsum_regions(target, sv, dvr, permissive):
    """Strict: an error exactly when src is empty or the valid rows differ. Permissive: the
    simulator's result, dst[i, 0] = sum of src row i over src's valid region, i < src rows."""
    m = pto.target(target, permissive=permissive)
    try:
        src = vec("f32", 8, 16, (pto.Dyn(sv[0]), pto.Dyn(sv[1])), X[:8])
        dst = vec("f32", 8, 8, (pto.Dyn(dvr), pto.Dyn(1)))
        bad = 0 in sv or sv[0] != dvr
        if bad and not permissive:
            with pytest.raises(ConstraintError, match=r"trowsum: src valid (rows|region)"):
                pto.TROWSUM(dst, src, vec("f32", 8, 16))
            assert (dst.numpy() == SENTINEL).all()
            return
        pto.TROWSUM(dst, src, vec("f32", 8, 16))
        want = np.full((8, 8), SENTINEL)
        if sv[1]:
            want[:sv[0], 0] = X[:sv[0], :sv[1]].sum(axis=1)
        np.testing.assert_array_equal(dst.numpy(), want)
    finally:
        pop(m)


@settings(max_examples=40, deadline=None)
@given(target=st.sampled_from(TARGETS), a=st.tuples(st.integers(1, 8), st.integers(1, 16)),
       b=st.tuples(st.integers(1, 8), st.integers(1, 16)), permissive=st.booleans())
def test_random_tsub_regions(target, a, b, permissive):
    """src0 with valid region a, dst and src1 with b: strict rejects a != b (a ConstraintError,
    or first ptoisa's own cover rule when a does not cover b); a permissive machine rejects
    only what it cannot read (a not covering b) and otherwise computes dst's valid region."""
    m = pto.target(target, permissive=permissive)
    try:
        s0 = vec("f32", 8, 16, a, X[:8])
        s1 = vec("f32", 8, 16, b, X[8:])
        dst = vec("f32", 8, 16, b)
        covers = a[0] >= b[0] and a[1] >= b[1]
        if a != b and not permissive:
            err = ConstraintError if covers else pto.RuntimeCheckError
            with pytest.raises(err, match=r"tsub: src0 valid region"):
                pto.TSUB(dst, s0, s1)
            return
        if not covers:
            with pytest.raises(pto.RuntimeCheckError, match=r"does not cover dst"):
                pto.TSUB(dst, s0, s1)
            return
        pto.TSUB(dst, s0, s1)
        want = np.full((8, 16), SENTINEL)
        want[:b[0], :b[1]] = X[:b[0], :b[1]] - X[8:8 + b[0], :b[1]]
        np.testing.assert_array_equal(dst.numpy(), want)
    finally:
        pop(m)


def test_cli_check_permissive(tmp_path, capsys):
    f = tmp_path / "w.pto"
    f.write_text(WIDEN_PTO)
    assert main(["check", str(f), "--target", "cpu"]) == 1
    assert "trowsum: expects src and dst to have the same element type" in capsys.readouterr().err
    assert main(["check", str(f), "--target", "cpu", "--permissive"]) == 0


@pytest.mark.parametrize("target", ["a2a3", "a5"])
def test_pair_table_with_an_operand_type_unknown(target):
    """An operand whose type is not known statically is left out of a pair table's check:
    only what no allowed pair has at the known position is refused (it was refused for
    any type: the one known type was compared with whole pairs)."""
    ins = REGISTRY["TMOV"]
    f16 = Tile(TileType.Vec, np.float16, 16, 16).spec
    ins.check_types(target, {"dst": f16, "src": None})  # f16 -> f16 is a pair
    i64 = Tile(TileType.Vec, np.int64, 4, 16).spec
    ins.check_types(target, {"dst": i64, "src": None})
    if target == "a5":
        with pytest.raises(UnsupportedType, match="type combination dst i16"):
            ins.check_types(target, {"dst": Tile(TileType.Vec, np.int16, 16, 16).spec,
                                     "src": None})

"""TPRINT: the cpu simulator's text byte for byte, the NPU's decorated text (seed page and
seeds_check.md section 1), GlobalTensor printing, Acc/Mat with a GM tmp, the print buffer."""

from __future__ import annotations

import io
import json

import ml_dtypes
import numpy as np
import pytest

import ptoisa as pto
from ptoisa import BLayout, Dyn, GlobalTensor, Layout, PrintFormat, SLayout, Tile, TileType
from ptoisa.conformance import load_array

WARNING = "Warning: out of bound! try best to print"
NPU_NAMES = {"f32": "float32", "f16": "float16", "i8": "int8", "ui8": "uint8", "i16": "int16",
             "ui16": "uint16", "i32": "int32", "ui32": "uint32"}
NP = {"f32": np.float32, "f16": np.float16, "bf16": ml_dtypes.bfloat16, "i8": np.int8,
      "ui8": np.uint8, "i16": np.int16, "ui16": np.uint16, "i32": np.int32, "ui32": np.uint32,
      "i64": np.int64, "ui64": np.uint64, "f8E4M3": ml_dtypes.float8_e4m3fn}
WP = {PrintFormat.Width8_Precision4: (8, 4), PrintFormat.Width8_Precision2: (8, 2),
      PrintFormat.Width10_Precision6: (10, 6), PrintFormat.Width6_Precision2: (6, 2)}


def _cell(x, is_float, w, p):
    # printf spelling on purpose: the C side prints with printf / setw+setprecision
    return ("%*.*f" % (w, p, float(x))) if is_float else ("%*d" % (w, int(x)))  # noqa: UP031


def cpu_text(vals, vr, vc, is_float, fmt=PrintFormat.Width8_Precision4):
    """CPU simulator: 'TPRINT <vr>x<vc>' then the valid region, one space apart."""
    w, p = WP[fmt]
    lines = [f"TPRINT {vr}x{vc}"]
    for r in range(vr if vc else 0):
        lines.append(" ".join(_cell(vals[r][c], is_float, w, p) for c in range(vc)))
    return "\n".join(lines) + "\n"


def npu_grid(vals, vr, vc, is_float, fmt):
    w, p = WP[fmt]
    rows, cols = len(vals), len(vals[0])
    out = []
    for r in range(rows):
        cells = []
        for c in range(cols):
            cells.append(_cell(vals[r][c], is_float, w, p))
            if c == vc - 1 and 0 < vc < cols:
                cells.append("|")
        out.append(" ".join(cells) + "\n")
        if r == vr - 1 and 0 < vr < rows:
            out.append(" ".join(["-" * w] * cols) + "\n")
    return "".join(out)


def npu_text(vals, dtype, layout, role, vr, vc, fmt=PrintFormat.Width6_Precision2):
    rows, cols = len(vals), len(vals[0])
    head = (f"=== [TPRINT Tile] Data Type: {NPU_NAMES[dtype]}, Layout: {layout}, "
            f"TileType: {role} ===\n  Shape: [{rows}, {cols}], Valid Shape: [{vr}, {vc}]\n")
    return head + npu_grid(vals, vr, vc, dtype.startswith("f"), fmt)


def _values(dtype, shape, seed=0):
    rng = np.random.default_rng(seed)
    if dtype.startswith(("f", "bf")):
        return (rng.integers(-4000, 4000, shape) / 16).astype(NP[dtype])
    info = np.iinfo(NP[dtype])
    return rng.integers(info.min, info.max, shape, dtype=NP[dtype], endpoint=True)


def _printed(tile_or_gm, *args, **kw):
    m = pto.current()
    buf = io.StringIO()
    m.stdout = buf
    pto.TPRINT(tile_or_gm, *args, **kw)
    return buf.getvalue()


# ---- cpu: the upstream simulator's format ------------------------------------------------------

def _conformance_cases(shared):
    root = shared / "conformance" / "tprint"
    return sorted(root.glob("*/case.json")) if root.is_dir() else []


def test_conformance_golden_strings(shared_dir):
    cases = _conformance_cases(shared_dir)
    if not cases:
        pytest.skip(f"no TPRINT conformance cases under {shared_dir / 'conformance'}")
    checked = 0
    for path in cases:
        case = json.loads(path.read_text())
        pto.target("cpu")
        tiles = {}
        for tid, t in case["tiles"].items():
            tile = Tile(t["loc"], t["dtype"], t["rows"], t["cols"], t["blayout"],
                        (t["valid_row"]["value"], t["valid_col"]["value"]), t["slayout"],
                        t["fractal_size"])
            tile.load_numpy(load_array(path.parent, t["init"]))
            tiles[tid] = tile
        texts = {}
        for i, step in enumerate(case["program"]):
            ops = [tiles[o["tile"]] for o in step["operands"] if "tile" in o]
            fmt = step.get("template_args", {}).get("Format", "Width8_Precision4")
            texts[i] = _printed(*ops, Format=fmt.split("::")[-1])
        for chk in case["checks"]:
            if chk.get("kind") == "stdout":
                assert texts[chk["step"]] == chk["expected_text"], case["case_id"]
                checked += 1
    assert checked >= 4


@pytest.mark.parametrize("dtype", ["f32", "f16", "bf16", "i8", "ui8", "i16", "ui16", "i32",
                                   "ui32", "i64", "ui64"])
@pytest.mark.parametrize("fmt", list(PrintFormat), ids=str)
def test_cpu_format_any_type(dtype, fmt):
    # the seed page lists f32 f16 i8 ui8 i16 ui16 i32 ui32; the simulator prints any type,
    # which a permissive machine reproduces (the rejection: tests/isa/test_constraints.py)
    listed = dtype in ("f32", "f16", "i8", "ui8", "i16", "ui16", "i32", "ui32")
    pto.target("cpu", permissive=not listed)
    cols = 64 // np.dtype(NP[dtype]).itemsize
    t = Tile(TileType.Vec, dtype, 3, cols, valid=(2, 5))
    v = _values(dtype, (3, cols))
    t.load_numpy(v)
    got = _printed(t, Format=fmt)
    assert got == cpu_text(v, 2, 5, dtype.startswith(("f", "bf")), fmt)
    np.testing.assert_array_equal(t.numpy(), v)  # printing does not modify data


def test_cpu_prints_extreme_unsigned_values_exactly():
    pto.target("cpu", permissive=True)  # ui64 is not a documented TPRINT type
    t = Tile(TileType.Vec, "ui64", 1, 4)
    t.load_numpy(np.array([[2**64 - 1, 2**63, 0, 1]], np.uint64))
    assert _printed(t) == "TPRINT 1x4\n" \
        "18446744073709551615 9223372036854775808        0        1\n"


def test_cpu_default_format_and_stdout(capsys):
    pto.target("cpu")
    t = Tile(TileType.Vec, "f32", 1, 8)
    t.load_numpy(np.array([[1.23456, -3.45678, 0, 0, 0, 0, 0, 0]], np.float32))
    assert pto.TPRINT(t) is None  # void, no event
    out = capsys.readouterr().out
    assert out == "TPRINT 1x8\n  1.2346  -3.4568   0.0000   0.0000   0.0000   0.0000   0.0000" \
                  "   0.0000\n"


def test_cpu_zero_valid_region_prints_the_header_only():
    pto.target("cpu")
    t = Tile(TileType.Vec, "f32", 4, 8, valid=(Dyn(0), Dyn(8)))
    assert _printed(t) == "TPRINT 0x8\n"
    t.set_valid(3, 0)
    assert _printed(t) == "TPRINT 3x0\n"


def test_cpu_prints_boxed_and_any_role_tiles_in_logical_order():
    pto.target("cpu")
    t = Tile(TileType.Mat, "f16", 16, 16, BLayout.ColMajor, (16, 3), SLayout.RowMajor)  # NZ
    v = _values("f16", (16, 16))
    t.load_numpy(v)
    assert _printed(t, GlobalTensor(np.zeros(256, np.float16))) == cpu_text(v, 16, 3, True)
    acc = pto.TileAcc("f32", 16, 16, valid=(2, 16))
    a = _values("f32", (16, 16))
    acc.load_numpy(a)
    tmp = GlobalTensor(np.full(256, 7, np.float32))
    assert _printed(acc, tmp) == cpu_text(a, 2, 16, True)  # the CPU ignores tmp
    assert (tmp.flat == 7).all()
    left = pto.TileLeft("f16", 16, 16)
    left.load_numpy(v)
    assert _printed(left) == cpu_text(v, 16, 16, True)


# ---- a2a3 / a5: the NPU format ---------------------------------------------------------------

NPU_TYPES = ["f32", "f16", "i8", "ui8", "i16", "ui16", "i32", "ui32"]


@pytest.mark.parametrize("tgt", ["a2a3", "a5"])
@pytest.mark.parametrize("dtype", NPU_TYPES)
@pytest.mark.parametrize("valid", [(4, 16), (2, 16), (4, 5), (1, 1), (0, 16), (4, 0)])
def test_npu_vec_tile(tgt, dtype, valid):
    pto.target(tgt)
    cols = 32 // np.dtype(NP[dtype]).itemsize * 2
    vr, vc = valid[0], min(valid[1], cols)
    t = Tile(TileType.Vec, dtype, 4, cols, valid=(Dyn(vr), Dyn(vc)))
    v = _values(dtype, (4, cols))
    t.load_numpy(v)
    assert _printed(t) == npu_text(v, dtype, "ND", "Vec", vr, vc)


def test_npu_seed_example_exact():
    pto.target("a2a3")
    t = Tile(TileType.Vec, "f32", 2, 8, valid=(1, 3))
    t.load_numpy(np.arange(16, dtype=np.float32).reshape(2, 8))
    assert _printed(t) == (
        "=== [TPRINT Tile] Data Type: float32, Layout: ND, TileType: Vec ===\n"
        "  Shape: [2, 8], Valid Shape: [1, 3]\n"
        "  0.00   1.00   2.00 |   3.00   4.00   5.00   6.00   7.00\n"
        "------ ------ ------ ------ ------ ------ ------ ------\n"
        "  8.00   9.00  10.00 |  11.00  12.00  13.00  14.00  15.00\n")
    u = Tile(TileType.Vec, "ui32", 1, 8)
    u.load_numpy(np.array([[4294967295, 1, 2, 3, 4, 5, 6, 7]], np.uint32))
    assert _printed(u).splitlines()[2] == \
        "4294967295      1      2      3      4      5      6      7"


@pytest.mark.parametrize("fmt", [PrintFormat.Width8_Precision4, PrintFormat.Width8_Precision2,
                                 PrintFormat.Width10_Precision6], ids=str)
@pytest.mark.parametrize("dtype", ["f16", "i32"])
def test_npu_print_formats(fmt, dtype):
    pto.target("a5")
    t = Tile(TileType.Vec, dtype, 3, 16, valid=(2, 4))
    v = _values(dtype, (3, 16))
    t.load_numpy(v)
    assert _printed(t, Format=fmt) == npu_text(v, dtype, "ND", "Vec", 2, 4, fmt)
    assert _printed(t, Format=fmt.name) == npu_text(v, dtype, "ND", "Vec", 2, 4, fmt)


@pytest.mark.parametrize("bl, sl, name", [(BLayout.ColMajor, SLayout.NoneBox, "DN"),
                                          (BLayout.ColMajor, SLayout.RowMajor, "Nz"),
                                          (BLayout.RowMajor, SLayout.RowMajor, "Zz"),
                                          (BLayout.RowMajor, SLayout.ColMajor, "Zn")])
def test_npu_layout_names_and_logical_order(bl, sl, name):
    pto.target("a2a3")
    t = Tile(TileType.Vec, "f16", 16, 16, bl, (16, 9), sl)
    v = _values("f16", (16, 16))
    t.load_numpy(v)
    assert _printed(t) == npu_text(v, "f16", name, "Vec", 16, 9)


@pytest.mark.parametrize("tgt", ["a2a3", "a5"])
def test_npu_vec_with_tmp_prints_once(tgt):
    pto.target(tgt)
    t = Tile(TileType.Vec, "f32", 2, 8)
    v = _values("f32", (2, 8))
    t.load_numpy(v)
    tmp = GlobalTensor(np.zeros(16, np.float32))
    assert _printed(t, tmp) == npu_text(v, "f32", "ND", "Vec", 2, 8)


@pytest.mark.parametrize("tgt", ["a2a3", "a5"])
def test_npu_acc_with_tmp(tgt):
    pto.target(tgt)
    acc = pto.TileAcc("f32", 16, 16, valid=(5, 7))
    v = _values("f32", (16, 16))
    acc.load_numpy(v)
    mem = np.zeros(256, np.float32)
    got = _printed(acc, GlobalTensor(mem))
    assert got == npu_text(v, "f32", "Nz", "Acc", 5, 7)
    # the tile went through GM with NZ -> ND conversion
    np.testing.assert_array_equal(mem.reshape(16, 16), v)


def test_a2a3_mat_with_tmp_prints_raw_storage():
    pto.target("a2a3")
    mat = Tile(TileType.Mat, "f16", 16, 32, BLayout.ColMajor, None, SLayout.RowMajor)  # NZ
    v = _values("f16", (16, 32))
    mat.load_numpy(v)
    mem = np.zeros(16 * 32, np.float16)
    got = _printed(mat, GlobalTensor(mem))
    # raw storage: the second 16x16 box comes after the first (fractal order)
    raw = np.concatenate([v[:, :16].reshape(-1), v[:, 16:].reshape(-1)]).reshape(16, 32)
    assert got == npu_text(raw, "f16", "Nz", "Mat", 16, 32)
    np.testing.assert_array_equal(mem.reshape(16, 32), raw)


@pytest.mark.parametrize("tgt", ["a2a3", "a5"])
@pytest.mark.parametrize("loc", [TileType.Acc, TileType.Mat])
def test_acc_and_mat_need_gm_tmp(tgt, loc):
    pto.target(tgt)
    t = pto.TileAcc("f32", 16, 16) if loc is TileType.Acc else Tile(loc, "f32", 16, 16)
    with pytest.raises(pto.IllegalInstruction,
                       match=rf"tprint: printing a {loc.name} tile needs the GM tmp operand"):
        pto.TPRINT(t)
    small = GlobalTensor(np.zeros(255, np.float32))
    if loc is TileType.Mat and tgt == "a5":
        return
    with pytest.raises(pto.IllegalInstruction,
                       match=r"tprint: tmp holds 1020 bytes, printing needs 1024"):
        pto.TPRINT(t, small)


def test_a5_cannot_print_mat():
    pto.target("a5")
    t = Tile(TileType.Mat, "f32", 16, 16)
    with pytest.raises(pto.IllegalInstruction, match="printing Mat tiles is not supported on a5"):
        pto.TPRINT(t, GlobalTensor(np.zeros(256, np.float32)))


@pytest.mark.parametrize("tgt", ["a2a3", "a5"])
def test_npu_rejects_other_roles(tgt):
    pto.target(tgt)
    t = pto.TileRight("f16", 16, 16)
    with pytest.raises(pto.IllegalInstruction, match="cannot print a Right tile"):
        pto.TPRINT(t)


@pytest.mark.parametrize("tgt", ["a2a3", "a5"])
@pytest.mark.parametrize("dtype", ["bf16", "i64", "ui64", "f8E4M3"])
def test_npu_unsupported_types(tgt, dtype):
    pto.target(tgt)
    t = Tile(TileType.Vec, dtype, 1, 32)
    with pytest.raises(pto.UnsupportedType,
                       match=rf"tprint: element type {dtype} is not supported on {tgt} "
                             r"\(supported: f32, f16, i8, ui8, i16, ui16, i32, ui32\)"):
        pto.TPRINT(t)


# ---- the print buffer -----------------------------------------------------------------------

def test_print_buffer_overflow_warning():
    buf = io.StringIO()
    pto.target("a2a3", stdout=buf, print_buffer=100)
    t = Tile(TileType.Vec, "f32", 4, 8)
    v = _values("f32", (4, 8))
    t.load_numpy(v)
    pto.TPRINT(t)
    full = npu_text(v, "f32", "ND", "Vec", 4, 8)
    assert len(full) > 100
    out = buf.getvalue()
    assert out == full[:100] + ("" if full[99] == "\n" else "\n") + WARNING + "\n"
    pto.TPRINT(t)  # the buffer is full: only the warning
    assert buf.getvalue() == out + WARNING + "\n"


def test_default_print_buffer_is_16_kib():
    buf = io.StringIO()
    m = pto.target("a5", stdout=buf)
    assert m.print_buffer == 16 * 1024
    t = Tile(TileType.Vec, "f32", 64, 64)  # ~28 KB of text
    pto.TPRINT(t)
    out = buf.getvalue()
    assert out.endswith(WARNING + "\n")
    assert len(out) <= 16 * 1024 + len(WARNING) + 2
    m.reset_print_buffer()
    small = Tile(TileType.Vec, "f32", 1, 8)
    buf.truncate(0)
    buf.seek(0)
    pto.TPRINT(small)
    assert WARNING not in buf.getvalue()


def test_cpu_has_no_print_buffer():
    buf = io.StringIO()
    pto.target("cpu", stdout=buf, print_buffer=10)
    t = Tile(TileType.Vec, "f32", 4, 8)
    pto.TPRINT(t)
    assert WARNING not in buf.getvalue() and buf.getvalue().count("\n") == 5


# ---- GlobalTensor ----------------------------------------------------------------------------

def _gm_head(dtype, layout, shape_line):
    return f"=== [TPRINT GlobalTensor] Data Type: {NPU_NAMES[dtype]}, Layout: {layout} ===\n" \
           f"  {shape_line}\n"


@pytest.mark.parametrize("tgt", ["a2a3", "a5", "cpu"])
def test_gm_nd_batches(tgt):
    pto.target(tgt)
    fmt = PrintFormat.Width8_Precision4 if tgt == "cpu" else PrintFormat.Width6_Precision2
    a = _values("f32", (2, 1, 3, 2, 8))
    g = GlobalTensor(np.ascontiguousarray(a))
    want = _gm_head("f32", "ND", "Shape: [2, 1, 3, 2, 8]")
    for i0 in range(2):
        for i2 in range(3):
            want += f"Batch [{i0}, 0, {i2}]:\n" + npu_grid(a[i0, 0, i2], 2, 8, True, fmt)
    assert _printed(g) == want


def test_gm_dn_prints_in_logical_order():
    pto.target("a2a3")
    mem = _values("i32", (8 * 4,))
    g = GlobalTensor(mem, (1, 1, 1, 4, 8), (32, 32, 32, 1, 4), Layout.DN)
    logical = mem.reshape(8, 4).T  # element (r, c) at r + 4c
    want = _gm_head("i32", "DN", "Shape: [1, 1, 1, 4, 8]") + "Batch [0, 0, 0]:\n" + \
        npu_grid(logical, 4, 8, False, PrintFormat.Width6_Precision2)
    assert _printed(g) == want


def test_gm_nz_is_defractalised():
    pto.target("a5")
    r, c, c0 = 16, 32, 16  # f16: C0 = 16
    mem = _values("f16", (r * c,))
    g = GlobalTensor(mem, (1, c // c0, r // 16, 16, c0), (r * c, r * c0, 16 * c0, c0, 1),
                     Layout.NZ)
    rr, cc = np.meshgrid(np.arange(r), np.arange(c), indexing="ij")
    logical = mem[(cc // c0) * r * c0 + (rr // 16) * 16 * c0 + (rr % 16) * c0 + cc % c0]
    want = _gm_head("f16", "NZ", f"Logical Shape: [{r}, {c}]") + \
        npu_grid(logical, r, c, True, PrintFormat.Width6_Precision2)
    assert _printed(g) == want


def test_gm_other_layouts_are_rejected():
    pto.target("a2a3")
    g = GlobalTensor(np.zeros(64, np.float32), (1, 1, 1, 8, 8), layout=Layout.NC1HWC0)
    with pytest.raises(pto.IllegalInstruction,
                       match=r"GlobalTensor layout NC1HWC0 cannot be printed \(ND, DN or NZ"):
        pto.TPRINT(g)


def test_bad_format_is_rejected():
    pto.target("cpu")
    t = Tile(TileType.Vec, "f32", 1, 8)
    with pytest.raises(pto.PtoError, match=r"Format: 'Width4' is not a PrintFormat \(allowed:"):
        pto.TPRINT(t, Format="Width4")

"""PTOAS tile-level ops that were refused by name: ``pto.tconcatidx``, ``pto.tquant.mx``,
``pto.fusion_region``, ``pto.taddrelu``, and the forms that leave out a ``tmp`` PTOAS
allocates. Each runs against a numpy reference written from the manual (PTO_IR_manual.md,
pto-isa's pages), never the code under test."""

from __future__ import annotations

import re

import ml_dtypes
import numpy as np
import pytest

import ptoisa as pto
from ptoisa import load
from ptoisa.errors import NotExecutedYet, PtoError

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")


def _t(dtype: str, rows: int, cols: int, vr: int | None = None, vc: int | None = None,
       bl: str = "row_major") -> str:
    return (f"!pto.tile_buf<loc=vec, dtype={dtype}, rows={rows}, cols={cols}, "
            f"v_row={rows if vr is None else vr}, v_col={cols if vc is None else vc}, "
            f"blayout={bl}, slayout=none_box, fractal=512, pad=0>")


def _io(name: str, dtype: str, rows: int, cols: int, k: int) -> tuple[str, str, str]:
    """(argument, view + partition lines, partition type) of a rows x cols GM argument."""
    pt = f"!pto.partition_tensor_view<{rows}x{cols}x{dtype}>"
    lines = f"""
    %r{k} = arith.constant {rows} : index
    %c{k} = arith.constant {cols} : index
    %v{k} = pto.make_tensor_view %{name}, shape = [%r{k}, %c{k}], strides = [%c{k}, %one] :
      !pto.tensor_view<?x?x{dtype}>
    %p{k} = pto.partition_view %v{k}, offsets = [%zero, %zero], sizes = [%r{k}, %c{k}] :
      !pto.tensor_view<?x?x{dtype}> -> {pt}"""
    return f"%{name}: !pto.ptr<{dtype}>", lines, pt


def _kernel(args: list[tuple[str, str, str]], body: str, attrs: str = "") -> str:
    return f"""module {{
  func.func @k({', '.join(a[0] for a in args)}) {attrs} {{
    %zero = arith.constant 0 : index
    %one = arith.constant 1 : index{''.join(a[1] for a in args)}
{body}
    return
  }}
}}
"""


# ---- pto.tconcatidx -----------------------------------------------------------------------

def test_tconcatidx_copies_per_row_byte_counts() -> None:
    """TCONCAT's indexed form: row i takes idx0[i, 0] / sizeof(idx) columns of src0, then
    idx1[i, 0] / sizeof(idx) of src1; the rest of dst's row keeps what it held."""
    s0, s1 = _t("f32", 8, 16), _t("f32", 8, 16)
    ix = _t("i32", 8, 8, 8, 1)
    args = [_io("a", "f32", 8, 16, 0), _io("b", "f32", 8, 16, 1), _io("i", "i32", 8, 8, 2),
            _io("j", "i32", 8, 8, 3), _io("o", "f32", 8, 16, 4)]
    body = f"""
    %s0 = pto.alloc_tile : {s0}
    %s1 = pto.alloc_tile : {s1}
    %i0 = pto.alloc_tile : {ix}
    %i1 = pto.alloc_tile : {ix}
    %d = pto.alloc_tile : {s0}
    pto.tload ins(%p0 : {args[0][2]}) outs(%s0 : {s0})
    pto.tload ins(%p1 : {args[1][2]}) outs(%s1 : {s1})
    pto.tload ins(%p2 : {args[2][2]}) outs(%i0 : {ix})
    pto.tload ins(%p3 : {args[3][2]}) outs(%i1 : {ix})
    pto.tload ins(%p4 : {args[4][2]}) outs(%d : {s0})
    pto.tconcatidx ins(%s0, %s1, %i0, %i1 : {s0}, {s1}, {ix}, {ix}) outs(%d : {s0})
    pto.tstore ins(%d : {s0}) outs(%p4 : {args[4][2]})"""
    rng = np.random.default_rng(1)
    a = rng.standard_normal((8, 16)).astype(np.float32)
    b = rng.standard_normal((8, 16)).astype(np.float32)
    n0 = np.array([0, 1, 2, 3, 5, 8, 16, 4])
    n1 = np.array([16, 3, 0, 7, 2, 8, 0, 12])
    i = np.zeros((8, 8), np.int32)
    j = np.zeros((8, 8), np.int32)
    i[:, 0], j[:, 0] = n0 * 4, n1 * 4  # byte counts of i32 elements
    out = np.full((8, 16), -7.0, np.float32)
    want = out.copy()
    for r in range(8):
        k0 = n0[r]
        k1 = min(n1[r], 16 - k0)
        want[r, :k0] = a[r, :k0]
        want[r, k0:k0 + k1] = b[r, :k1]
    load(_kernel(args, body)).k(a, b, i, j, out)
    np.testing.assert_array_equal(out, want)


# ---- pto.tquant.mx ------------------------------------------------------------------------

def _mx_ref(x: np.ndarray, axis: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """MXFP8 E4M3, OCP scale (pto-isa TQUANT.md): per group of 32 along ``axis`` the shared
    exponent is floor(log2(max |x|)) - 8 (emax of e4m3), stored biased by 127 (E8M0), and the
    elements are x * 2**-shared cast to e4m3 (saturating at 448). Normal, nonzero groups."""
    g = np.moveaxis(x, axis, -1)
    g = g.reshape(*g.shape[:-1], g.shape[-1] // 32, 32)
    mx = np.abs(g).max(axis=-1)
    _, k = np.frexp(mx)  # mx = m * 2**k, m in [0.5, 1)
    shared = (k - 1) - 8
    scale = np.exp2(-shared.astype(np.float64))
    q = np.clip(g * scale[..., None], -448, 448).astype(ml_dtypes.float8_e4m3fn)
    q = np.moveaxis(q.reshape(*g.shape[:-2], -1), -1, axis)
    exp = (shared + 127).astype(np.uint8)
    if axis == 0:  # groups (row group, column)
        exp, mx = np.moveaxis(exp, -1, 0), np.moveaxis(mx, -1, 0)
    else:  # the maxima as one flat row, in (row, group) order
        mx = mx.reshape(1, -1)
    return q.view(np.uint8), exp, mx.astype(np.float32)


def _tquant_mx(rows: int, cols: int, axis: int, interleave: bool, dt: str = "f32"
               ) -> tuple[str, list]:
    # axis 1: exponents per (row, group) in rows of 32 bytes, max / scaling the flat
    # [1, groups] form (a compact prefix); axis 0: [rows / 32, cols] (interleaved exponents
    # [rows / 64, 2 cols]); max / scaling have src's element type ``dt``
    gr, gc = (rows // 32, cols) if axis == 0 else (1, rows * cols // 32)
    er, ec = (rows // 64, 2 * cols) if interleave else (gr, gc) if axis == 0 \
        else (rows, cols // 32)
    s, d = _t(dt, rows, cols), _t("ui8", rows, cols)
    e = _t("ui8", er, -(-ec // 32) * 32, er, ec)
    m = _t(dt, gr, gc)
    args = [_io("x", dt, rows, cols, 0), _io("q", "ui8", rows, cols, 1),
            _io("e", "ui8", er, ec, 2), _io("m", dt, gr, gc, 3)]
    attrs = "quant_type = #pto<quant_type MXFP8>"
    if axis == 0:
        attrs += ", grpAxis = #pto<mx_group_axis axis0>"
    if interleave:
        attrs += ", interleave = true"
    body = f"""
    %src = pto.alloc_tile : {s}
    %dst = pto.alloc_tile : {d}
    %exp = pto.alloc_tile : {e}
    %max = pto.alloc_tile : {m}
    %scl = pto.alloc_tile : {m}
    pto.tload ins(%p0 : {args[0][2]}) outs(%src : {s})
    pto.tquant.mx ins(%src : {s}) outs(%dst, %exp, %max, %scl : {d}, {e}, {m}, {m}) {{{attrs}}}
    pto.tstore ins(%dst : {d}) outs(%p1 : {args[1][2]})
    pto.tstore ins(%exp : {e}) outs(%p2 : {args[2][2]})
    pto.tstore ins(%max : {m}) outs(%p3 : {args[3][2]})"""
    return _kernel(args, body, "attributes {pto.kernel_kind = #pto.kernel_kind<vector>}"), \
        [(rows, cols), (er, ec), (gr, gc)]


# (PTOAS takes interleave for f16 / bf16 sources only: "does not support FP32 interleave with
# the pinned pto-isa revision")
@pytest.mark.parametrize(("rows", "cols", "axis", "interleave", "dt"), [
    (4, 64, 1, False, "f32"), (64, 32, 0, False, "f32"), (128, 32, 0, True, "bf16")])
def test_tquant_mx_mxfp8(rows: int, cols: int, axis: int, interleave: bool, dt: str) -> None:
    text, (qs, es, ms) = _tquant_mx(rows, cols, axis, interleave, dt)
    rng = np.random.default_rng(2)
    # magnitudes within 2**8 of each other: no element of a group rounds to (signed) zero
    sign = rng.choice([-1.0, 1.0], (rows, cols))
    x = (sign * rng.uniform(0.5, 2.0, (rows, cols)) * np.exp2(rng.integers(-3, 4, (rows, cols)))
         ).astype(np.float32)
    npt = np.float32 if dt == "f32" else ml_dtypes.bfloat16
    x = x.astype(npt)
    q, e, m = np.zeros(qs, np.uint8), np.zeros(es, np.uint8), np.zeros(ms, npt)
    load(text, target="a5").k(x, q, e, m)
    wq, we, wm = _mx_ref(x.astype(np.float32), axis)
    if interleave:  # exp[p, 2c + k] = e[2p + k, c]
        we = we.reshape(we.shape[0] // 2, 2, we.shape[1]).transpose(0, 2, 1).reshape(es)
    np.testing.assert_array_equal(q, wq)
    np.testing.assert_array_equal(e, we)
    np.testing.assert_array_equal(m.astype(np.float32), wm)


def test_tquant_mx_is_an_a5_op() -> None:
    text, _ = _tquant_mx(4, 64, 1, False)
    with pytest.raises(PtoError, match="tquant.mx is only supported on A5"):
        load(text, target="a2a3")


@pytest.mark.parametrize(("old", "new", "why"), [
    ("outs(%dst, %exp, %max, %scl : ", "outs(%dst, %exp, %max, %scl : ", None),
    ("{quant_type = #pto<quant_type MXFP8>}",
     "{quant_type = #pto<quant_type MXFP8>, interleave = true}",
     "expects interleave to be used only with grpAxis=axis0"),
    ("rows=4, cols=32, v_row=4, v_col=2,", "rows=4, cols=32, v_row=2, v_col=2,",
     r"expects exp valid_shape to match canonical \[M, N/32\] or legacy flat "
     r"\[1, M\*N/32\] for grpAxis=axis1"),
])
def test_tquant_mx_valid_shapes(old: str, new: str, why: str | None) -> None:
    text, _ = _tquant_mx(4, 64, 1, False)
    assert old in text
    # (without the store of exp, whose view is the valid shape the test changes)
    text = "\n".join(ln for ln in text.replace(old, new).splitlines()
                     if "tstore ins(%exp" not in ln)
    if why is None:
        load(text, target="a5")
    else:
        with pytest.raises(PtoError, match=why):
            load(text, target="a5")


def test_tquant_mx_storage_rules() -> None:
    """PTOAS's storage rules for the MX forms (tquant_mx_grp_axis_invalid.pto): an f32 source
    is not interleaved, the interleaved exponents take src physical rows / 64 rows, an axis-1
    MXFP8 dst has src's physical columns."""
    text, _ = _tquant_mx(128, 32, 0, True)
    with pytest.raises(PtoError, match="does not support FP32 interleave with the pinned "
                       "pto-isa revision"):
        load(text, target="a5")
    text, _ = _tquant_mx(128, 32, 0, True, "bf16")
    e = _t("ui8", 2, 64)
    with pytest.raises(PtoError, match="expects interleaved exp physical rows to be src "
                       "physical rows / 64"):
        load(text.replace(e, _t("ui8", 3, 64, 2, 64)), target="a5")
    text, _ = _tquant_mx(4, 64, 1, False)
    d = _t("ui8", 4, 64)
    with pytest.raises(PtoError, match="expects MXFP8 axis1 dst physical cols to equal src "
                       "physical cols"):
        load(text.replace(d, _t("ui8", 4, 96, 4, 64)), target="a5")


def _tquant_int8(asym: bool, tmp: str = "") -> str:
    """pto.tquant INT8 of an 8x32 f32 tile with a per-row scale (and offset), written with
    the scratch ``tmp`` as a second out when ``tmp`` is its tile type."""
    s, r = _t("f32", 8, 32), _t("f32", 8, 1, bl="col_major")
    dt = "ui8" if asym else "i8"
    d = _t(dt, 8, 32)
    args = [_io("x", "f32", 8, 32, 0), _io("f", "f32", 8, 1, 1), _io("z", "f32", 8, 1, 2),
            _io("o", dt, 8, 32, 3)]
    ins = "%src, %fp, %off" if asym else "%src, %fp"
    tys = f"{s}, {r}, {r}" if asym else f"{s}, {r}"
    outs = f"%dst, %tmp : {d}, {tmp}" if tmp else f"%dst : {d}"
    alloc_tmp = f"\n    %tmp = pto.alloc_tile : {tmp}" if tmp else ""
    body = f"""    %src = pto.alloc_tile : {s}
    %fp = pto.alloc_tile : {r}
    %off = pto.alloc_tile : {r}
    %dst = pto.alloc_tile : {d}{alloc_tmp}
    pto.tload ins(%p0 : {args[0][2]}) outs(%src : {s})
    pto.tload ins(%p1 : {args[1][2]}) outs(%fp : {r})
    pto.tload ins(%p2 : {args[2][2]}) outs(%off : {r})
    pto.tquant ins({ins} : {tys}) outs({outs})
      {{quant_type = #pto<quant_type INT8_{'ASYM' if asym else 'SYM'}>}}
    pto.tstore ins(%dst : {d}) outs(%p3 : {args[3][2]})"""
    return _kernel(args, body, "attributes {pto.kernel_kind = #pto.kernel_kind<vector>}")


@pytest.mark.parametrize("target", ["a2a3", "a5"])
@pytest.mark.parametrize("asym", [False, True])
def test_tquant_int8_with_its_scratch_in_outs(target: str, asym: bool) -> None:
    """PTO_IR_manual pto.tquant: ``outs(%dst, %tmp)`` writes the A2/A3 scratch (src's type);
    dst = saturate(rint(src * scale[r] (+ offset[r])))."""
    rng = np.random.default_rng(5)
    x = rng.uniform(-3, 3, (8, 32)).astype(np.float32)
    f = rng.uniform(10, 60, (8, 1)).astype(np.float32)
    z = rng.uniform(100, 130, (8, 1)).astype(np.float32)
    o = np.zeros((8, 32), np.uint8 if asym else np.int8)
    load(_tquant_int8(asym, _t("f32", 8, 32)), target=target).k(x, f, z, o)
    y = x.astype(np.float64) * f + (z if asym else 0)
    want = np.clip(np.rint(y), 0 if asym else -128, 255 if asym else 127)
    np.testing.assert_array_equal(o, want.astype(o.dtype))


def test_tquant_int8_scratch_and_offset_rules() -> None:
    # A2/A3's tmp has src's shape (A5 takes any placeholder); ASYM names its offset
    with pytest.raises(PtoError, match="expects A2/A3 tmp to have the same shape as src"):
        load(_tquant_int8(False, _t("f32", 8, 16)), target="a2a3")
    load(_tquant_int8(False, _t("f32", 8, 16)), target="a5")
    text = _tquant_int8(True, _t("f32", 8, 32)).replace("ins(%src, %fp, %off :", "ins(%src, %fp :")
    text = text.replace(f"{_t('f32', 8, 32)}, {_t('f32', 8, 1, bl='col_major')}, "
                        f"{_t('f32', 8, 1, bl='col_major')}) outs",
                        f"{_t('f32', 8, 32)}, {_t('f32', 8, 1, bl='col_major')}) outs")
    with pytest.raises(PtoError, match="INT8_ASYM quantization requires an offset operand"):
        load(text, target="a2a3")
    # A2/A3's fp / offset are per-row broadcast tiles (PTO_IR_manual pto.tquant)
    row = _tquant_int8(True).replace(_t("f32", 8, 1, bl="col_major"), _t("f32", 8, 1))
    with pytest.raises(PtoError, match="expects A2/A3 fp to use non-row-major layout"):
        load(row, target="a2a3")


@pytest.mark.parametrize("asym", [False, True])
def test_tquant_int8_dst_signedness(asym: bool) -> None:
    """PTOAS's verifier takes an i8 or ui8 dst for either INT8 form; pto-isa's TQUANT writes
    i8 for SYM and ui8 for ASYM only, so the other one checks but is refused by name on a
    run."""
    good, other = ("ui8", "i8") if asym else ("i8", "ui8")
    text = re.sub(r"(?<!u)i8" if good == "i8" else "ui8", other, _tquant_int8(asym))
    k = load(text, target="a2a3")
    x = np.zeros((8, 32), np.float32)
    f = np.ones((8, 1), np.float32)
    o = np.zeros((8, 32), np.int8 if asym else np.uint8)
    with pytest.raises(NotExecutedYet, match=f"INT8_{'ASYM' if asym else 'SYM'} with dst "
                       f"element type {other} .pto-isa's TQUANT writes {good}"):
        k.k(x, f, f, o)


# ---- implicit tmp -------------------------------------------------------------------------

def _rowmax(level_addr: bool = False) -> str:
    s, d = _t("f32", 8, 16), _t("f32", 8, 1, bl="col_major")
    args = [_io("x", "f32", 8, 16, 0), _io("o", "f32", 8, 1, 1)]
    addr = ("%a0 = arith.constant 0 : i64\n    %a1 = arith.constant 4096 : i64\n    "
            if level_addr else "")
    at0, at1 = (" addr = %a0", " addr = %a1") if level_addr else ("", "")
    body = f"""
    {addr}%src = pto.alloc_tile{at0} : {s}
    %dst = pto.alloc_tile{at1} : {d}
    pto.tload ins(%p0 : {args[0][2]}) outs(%src : {s})
    pto.trowmax ins(%src : {s}) outs(%dst : {d})
    pto.tstore ins(%dst : {d}) outs(%p1 : {args[1][2]})"""
    return _kernel(args, body)


@pytest.mark.parametrize("target", ["a2a3", "a5"])
def test_trowmax_without_tmp(target: str) -> None:
    x = np.random.default_rng(3).standard_normal((8, 16)).astype(np.float32)
    out = np.zeros((8, 1), np.float32)
    load(_rowmax(), target=target).k(x, out)
    np.testing.assert_array_equal(out[:, 0], x.max(axis=1))


def test_tpows_and_tcolargmax_without_tmp() -> None:
    s = _t("f32", 2, 16)
    i = _t("i32", 1, 16)
    args = [_io("x", "f32", 2, 16, 0), _io("o", "f32", 2, 16, 1), _io("i", "i32", 1, 16, 2)]
    body = f"""
    %p = arith.constant 2.0 : f32
    %src = pto.alloc_tile : {s}
    %dst = pto.alloc_tile : {s}
    %idx = pto.alloc_tile : {i}
    pto.tload ins(%p0 : {args[0][2]}) outs(%src : {s})
    pto.tpows ins(%src, %p : {s}, f32) outs(%dst : {s})
    pto.tcolargmax ins(%src : {s}) outs(%idx : {i})
    pto.tstore ins(%dst : {s}) outs(%p1 : {args[1][2]})
    pto.tstore ins(%idx : {i}) outs(%p2 : {args[2][2]})"""
    x = np.random.default_rng(4).standard_normal((2, 16)).astype(np.float32)
    out, idx = np.zeros_like(x), np.zeros((1, 16), np.int32)
    load(_kernel(args, body)).k(x, out, idx)
    np.testing.assert_allclose(out, x * x, rtol=1e-6)
    np.testing.assert_array_equal(idx[0], x.argmax(axis=0))


def test_missing_tmp_under_level3_is_ptoas_error() -> None:
    from ptoisa.interp.verify import diagnose
    from ptoisa.text import parse

    errors = diagnose(parse(_rowmax(True), "x.pto"), "a2a3", level="level3")
    assert any("requires explicit tmp when PlanMemory is skipped" in e.render()
               for e in errors)
    assert not diagnose(parse(_rowmax(True), "x.pto"), "a2a3", level="level2")
    # A5: PTOAS gives the missing tmp a placeholder at every level
    assert not diagnose(parse(_rowmax(True), "x.pto"), "a5", level="level3")


# ---- pto.fusion_region --------------------------------------------------------------------

def test_fusion_region_runs_its_body() -> None:
    s = _t("f32", 8, 16)
    args = [_io("x", "f32", 8, 16, 0), _io("o", "f32", 8, 16, 1)]
    body = f"""
    %src = pto.alloc_tile : {s}
    %dst = pto.alloc_tile : {s}
    pto.tload ins(%p0 : {args[0][2]}) outs(%src : {s})
    %n = pto.fusion_region {{
      pto.tadd ins(%src, %src : {s}, {s}) outs(%dst : {s})
      pto.tmul ins(%dst, %src : {s}, {s}) outs(%dst : {s})
      %two = arith.constant 2 : index
      pto.yield(%two) : (index) -> ()
    }} : index
    %b = arith.index_cast %n : index to i32
    %f = arith.sitofp %b : i32 to f32
    pto.tadds ins(%dst, %f : {s}, f32) outs(%dst : {s})
    pto.tstore ins(%dst : {s}) outs(%p1 : {args[1][2]})"""
    x = np.random.default_rng(5).standard_normal((8, 16)).astype(np.float32)
    out = np.zeros_like(x)
    load(_kernel(args, body)).k(x, out)
    np.testing.assert_array_equal(out, ((x + x) * x) + np.float32(2))


@pytest.mark.parametrize(("region", "why"), [
    ("{\n    ^bb0(%a: index):\n      pto.yield(%a) : (index) -> ()\n    } : index",
     "expects body block to have no arguments, got 1"),
    ("{\n      pto.yield : () -> ()\n    } : index", "expects pto.yield to return 1 values, got 0"),
    ("{\n      pto.yield(%c) : (index) -> ()\n    } : i32",
     "expects yielded value #0 to have type 'i32', got 'index'"),
])
def test_fusion_region_verifier(region: str, why: str) -> None:
    text = f"""module {{
  func.func @k() {{
    %c = arith.constant 0 : index
    %0 = pto.fusion_region {region}
    return
  }}
}}
"""
    with pytest.raises(PtoError, match=why):
        load(text)


# ---- pto.taddrelu -------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", ["f32", "f16", "i16"])
def test_taddrelu(dtype: str) -> None:
    s = _t(dtype, 4, 32)
    args = [_io("a", dtype, 4, 32, 0), _io("b", dtype, 4, 32, 1), _io("o", dtype, 4, 32, 2)]
    body = f"""
    %x = pto.alloc_tile : {s}
    %y = pto.alloc_tile : {s}
    %z = pto.alloc_tile : {s}
    pto.tload ins(%p0 : {args[0][2]}) outs(%x : {s})
    pto.tload ins(%p1 : {args[1][2]}) outs(%y : {s})
    pto.taddrelu ins(%x, %y : {s}, {s}) outs(%z : {s})
    pto.tstore ins(%z : {s}) outs(%p2 : {args[2][2]})"""
    npt = {"f32": np.float32, "f16": np.float16, "i16": np.int16}[dtype]
    rng = np.random.default_rng(6)
    if dtype == "i16":
        a = rng.integers(-32768, 32767, (4, 32)).astype(np.int16)
        b = rng.integers(-32768, 32767, (4, 32)).astype(np.int16)
        s32 = a.astype(np.int64) + b.astype(np.int64)
        wrapped = ((s32 + 32768) % 65536 - 32768).astype(np.int16)
        want = np.maximum(wrapped, 0).astype(np.int16)
    else:
        a = (rng.standard_normal((4, 32)) * 4).astype(npt)
        b = (rng.standard_normal((4, 32)) * 4).astype(npt)
        want = np.maximum((a + b).astype(npt), npt(0))
    out = np.zeros((4, 32), npt)
    load(_kernel(args, body)).k(a, b, out)
    np.testing.assert_array_equal(out, want)


def test_taddrelu_is_an_a2a3_instruction() -> None:
    with pto.target("a5"):
        t = pto.Tile("Vec", "f32", 8, 16)
        with pytest.raises(PtoError, match="not supported on target a5"):
            pto.TADDRELU(t, t, t)


def test_tquant_mx_attributes_reach_the_binding() -> None:
    from ptoisa.interp import bridge
    from ptoisa.isa.registry import REGISTRY
    from ptoisa.text import parse

    text, _ = _tquant_mx(64, 32, 0, False)
    text = text.replace("grpAxis = #pto<mx_group_axis axis0>",
                        "grpAxis = #pto<mx_group_axis axis0>, quantScaleAlg = "
                        "#pto<quant_scale_alg nv>, storeMode = #pto<vec_store_mode nz>")
    op = next(o for o in parse(text, "q.pto").ops[0].walk() if o.name == "pto.tquant.mx")
    p = bridge.bind(op, REGISTRY["TQUANT"]).params
    assert (p["grp_axis"], p["scale_alg"], p["store_mode"]) == (0, "NV", "NZ")


# ---- pto.set_quant_vector's payload --------------------------------------------------------

@pytest.mark.parametrize(("dtype", "target", "why"), [
    ("ui64", "a2a3", None), ("f16", "a5", None),
    ("ui64", "a5", "expects 'scaling_tile' element type to be f16, bf16, or f32 on A5"),
    ("f16", "a2a3", "to be packed i64/ui64 on A3 .element type f16 is not supported")])
def test_set_quant_vector_payload_by_target(dtype: str, target: str, why: str | None) -> None:
    t = (f"!pto.tile_buf<loc=scaling, dtype={dtype}, rows=1, cols=16, v_row=1, v_col=16, "
         "blayout=row_major, slayout=none_box, fractal=512, pad=0>")
    text = f"""module {{
  func.func @k() attributes {{pto.kernel_kind = #pto.kernel_kind<cube>}} {{
    %fp = pto.alloc_tile : {t}
    pto.set_quant_vector(%fp : {t})
    return
  }}
}}
"""
    if why is not None:
        with pytest.raises(PtoError, match=why):
            load(text, target=target)
        return
    prog = load(text, target=target)
    if dtype == "f16":  # A5's scales: how the fix-pipe reads them is not documented
        with pytest.raises(PtoError, match="'pto.set_quant_vector' cannot be executed"):
            prog.k()


# ---- pto.tpow / pto.tpows: PTOAS's tmp and precision rules ---------------------------------

@pytest.mark.parametrize(("dtype", "tmp", "attrs", "target", "why"), [
    ("f32", (1, 16), "", "a2a3", None),
    ("i32", None, "", "a2a3", None),  # the integer overload: no tmp (one is not allocated)
    ("i32", (1, 16), "", "a2a3", "does not accept tmp when element type is integer"),
    ("f32", (1, 8), "", "a2a3", "expects tmp and dst to have the same valid_shape"),
    ("f32", (1, 16), "{precisionType = #pto<pow_precision high_precision>}", "a2a3",
     "A2/A3 does not support precisionType=high_precision"),
    ("f32", (1, 16), "{precisionType = #pto<pow_precision high_precision>}", "a5", None),
])
def test_tpow_tmp_rules(dtype: str, tmp: tuple[int, int] | None, attrs: str, target: str,
                        why: str | None) -> None:
    t = _t(dtype, 1, 16)
    tt = None if tmp is None else _t(dtype, 1, 16, *tmp)
    ins = "%b, %e" + (", %tmp" if tt else "")
    types = f"{t}, {t}" + (f", {tt}" if tt else "")
    text = f"""module {{
  func.func @k() {{
    %b = pto.alloc_tile : {t}
    %e = pto.alloc_tile : {t}
    %d = pto.alloc_tile : {t}
    {f"%tmp = pto.alloc_tile : {tt}" if tt else ""}
    pto.tpow ins({ins} : {types}) outs(%d : {t}) {attrs}
    return
  }}
}}
"""
    if why is None:
        load(text, target=target)
    else:
        with pytest.raises(PtoError, match=why):
            load(text, target=target)


# ---- pto.mgather / pto.mscatter: PTOAS's coalesce rules ------------------------------------

def _mgather(attrs: str, idx: tuple[int, int], op: str = "mgather", dtype: str = "f32",
             target: str = "a5") -> str:
    t = _t(dtype, 8, 32)
    ix = _t("i32", 8, 32, *idx)
    pt = f"!pto.partition_tensor_view<8x32x{dtype}>"
    if op == "mgather":
        line = f"pto.mgather ins(%p, %i : {pt}, {ix}) outs(%d : {t}) {attrs}"
    else:
        line = f"pto.mscatter ins(%d, %i : {t}, {ix}) outs(%p : {pt}) {attrs}"
    return f"""module {{
  func.func @k(%g: !pto.ptr<{dtype}>) {{
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c8 = arith.constant 8 : index
    %c32 = arith.constant 32 : index
    %v = pto.make_tensor_view %g, shape = [%c8, %c32], strides = [%c32, %c1] :
      !pto.tensor_view<?x?x{dtype}>
    %p = pto.partition_view %v, offsets = [%c0, %c0], sizes = [%c8, %c32] :
      !pto.tensor_view<?x?x{dtype}> -> {pt}
    %i = pto.alloc_tile : {ix}
    %d = pto.alloc_tile : {t}
    {line}
    return
  }}
}}
"""


@pytest.mark.parametrize(("attrs", "idx", "op", "why"), [
    ("{coalesce = #pto<coalesce row>}", (8, 1), "mgather", None),
    ("{coalesce = #pto<coalesce row>}", (1, 8), "mgather", None),
    ("{coalesce = #pto<coalesce elem>}", (8, 32), "mgather", None),
    ("", (8, 32), "mgather", "requires attribute 'coalesce'"),
    ("{coalesce = #pto<coalesce row>}", (8, 32), "mgather",
     r"expects row-coalesce idx valid_shape to be \[0\|1, dst.valid_row\]"),
    ("", (8, 32), "mscatter", None),  # (mscatter infers its mode from idx)
    ("{scatterOob = #pto<scatter_oob skip>}", (8, 32), "mscatter",
     "expects coalesce when scatterAtomicOp/scatterOob/scatterConflict is specified"),
    ("{coalesce = #pto<coalesce row>}", (4, 1), "mscatter",
     r"expects row-coalesce idx valid_shape to be \[0\|1, src.valid_row\]"),
])
def test_coalesce_rules(attrs: str, idx: tuple[int, int], op: str, why: str | None) -> None:
    text = _mgather(attrs, idx, op)
    if why is None:
        load(text, target="a5")
    else:
        with pytest.raises(PtoError, match=why):
            load(text, target="a5")


def test_mgather_moves_hif8_on_a5() -> None:
    """An hif8 element is a byte to move (PTO_IR_manual pto.mgather: A5 takes !pto.hif8):
    row mode, dst[r, :] = mem[idx[r], :]."""
    h = "!pto.hif8"
    t = _t(h, 8, 32)
    ix = _t("i32", 8, 8, 8, 1)
    pt = f"!pto.partition_tensor_view<8x32x{h}>"
    pi = "!pto.partition_tensor_view<8x1xi32>"
    text = f"""module {{
  func.func @k(%g: !pto.ptr<{h}>, %x: !pto.ptr<i32>, %o: !pto.ptr<{h}>) {{
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c8 = arith.constant 8 : index
    %c32 = arith.constant 32 : index
    %v = pto.make_tensor_view %g, shape = [%c8, %c32], strides = [%c32, %c1] :
      !pto.tensor_view<?x?x{h}>
    %p = pto.partition_view %v, offsets = [%c0, %c0], sizes = [%c8, %c32] :
      !pto.tensor_view<?x?x{h}> -> {pt}
    %w = pto.make_tensor_view %o, shape = [%c8, %c32], strides = [%c32, %c1] :
      !pto.tensor_view<?x?x{h}>
    %q = pto.partition_view %w, offsets = [%c0, %c0], sizes = [%c8, %c32] :
      !pto.tensor_view<?x?x{h}> -> {pt}
    %xv = pto.make_tensor_view %x, shape = [%c8, %c1], strides = [%c1, %c1] :
      !pto.tensor_view<?x?xi32>
    %xp = pto.partition_view %xv, offsets = [%c0, %c0], sizes = [%c8, %c1] :
      !pto.tensor_view<?x?xi32> -> {pi}
    %i = pto.alloc_tile : {ix}
    %d = pto.alloc_tile : {t}
    pto.tload ins(%xp : {pi}) outs(%i : {ix})
    pto.mgather ins(%p, %i : {pt}, {ix}) outs(%d : {t}) {{coalesce = #pto<coalesce row>}}
    pto.tstore ins(%d : {t}) outs(%q : {pt})
    return
  }}
}}
"""
    g = np.arange(256, dtype=np.uint8).reshape(8, 32)
    idx = np.array([[3], [0], [7], [7], [1], [2], [6], [5]], np.int32)
    out = np.zeros((8, 32), np.uint8)
    load(text, target="a5").k(g, idx, out)
    np.testing.assert_array_equal(out, g[idx[:, 0]])


# ---- PTOAS's valid-region rules: reductions, tile subviews ---------------------------------

@pytest.mark.parametrize(("op", "src", "dst", "why"), [
    ("trowmax", (16, 8), (16, 1), None),
    ("trowmax", (16, 8), (0, 0), None),  # PyPTO's empty no-op marker
    ("trowmax", (16, 8), (16, 0), r"expects dst valid_shape\[1\] to be 1"),
    ("trowargmax", (16, 8), (0, 0),  # (no empty marker for an arg reduction)
     r"expects dst valid_shape\[1\] to be 1"),
    ("tcolargmax", (16, 8), (0, 8), r"expects dst valid_shape\[0\] to be 1"),
    ("tcolargmax", (16, 8), (1, 8), None),
])
def test_reduction_valid_regions(op: str, src: tuple[int, int], dst: tuple[int, int],
                                 why: str | None) -> None:
    s = _t("f32", 16, 16, *src)
    col = op.startswith("tcol")
    dt = "i32" if "arg" in op else "f32"
    d = _t(dt, 1, 16, *dst) if col else _t(dt, 16, 1, *dst, bl="col_major")
    text = f"""module {{
  func.func @k() attributes {{pto.kernel_kind = #pto.kernel_kind<vector>}} {{
    %s = pto.alloc_tile : {s}
    %d = pto.alloc_tile : {d}
    pto.{op} ins(%s : {s}) outs(%d : {d})
    return
  }}
}}
"""
    if why is None:
        load(text, target="a5")
    else:
        with pytest.raises(PtoError, match=why):
            load(text, target="a5")


@pytest.mark.parametrize(("valid", "result_valid", "why"), [
    ("", "v_row=5", None),
    ("valid [%c5, %c128]", "v_row=5", None),
    ("valid [%c5, %c128]", "v_row=?", None),
    ("", "v_row=?", r"expects result valid_shape\[0\] to match inferred/explicit valid_row"),
    ("valid [%c5, %c128]", "v_row=0",
     r"expects result valid_shape\[0\] to match inferred/explicit valid_row"),
])
def test_tile_subview_valid_shape(valid: str, result_valid: str, why: str | None) -> None:
    src = _t("f32", 16, 128)
    res = _t("f32", 5, 128).replace("v_row=5", result_valid)
    text = f"""module {{
  func.func @k() attributes {{pto.kernel_kind = #pto.kernel_kind<vector>}} {{
    %c0 = arith.constant 0 : index
    %c5 = arith.constant 5 : index
    %c128 = arith.constant 128 : index
    %src = pto.alloc_tile : {src}
    %t = pto.subview %src[%c0, %c0] sizes [5, 128] {valid} : {src} -> {res}
    return
  }}
}}
"""
    if why is None:
        load(text, target="a5")
    else:
        with pytest.raises(PtoError, match=why):
            load(text, target="a5")


# ---- textract / tinsert / tstore: PTOAS's operand spellings -------------------------------

_ACC = ("!pto.tile_buf<loc=acc, dtype=f32, rows=32, cols=32, v_row=32, v_col=32, "
        "blayout=col_major, slayout=row_major, fractal=1024, pad=0>")
_MAT = ("!pto.tile_buf<loc=mat, dtype=f16, rows=32, cols=32, v_row=32, v_col=32, "
        "blayout=col_major, slayout=row_major, fractal=512, pad=0>")
_FP = ("!pto.tile_buf<loc=scaling, dtype=f16, rows=1, cols=32, v_row=1, v_col=32, "
       "blayout=row_major, slayout=none_box, fractal=512, pad=0>")


def _bound(line: str) -> tuple[str, dict[str, str]]:
    """(entry, operand -> the SSA name bound to it) of the op written on ``line``."""
    from ptoisa.interp import bridge
    from ptoisa.text import parse

    text = f"""module {{
  func.func @k(%pre: i64) {{
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %src = pto.alloc_tile : {_ACC}
    %dst = pto.alloc_tile : {_MAT}
    %fp = pto.alloc_tile : {_FP}
    {line}
    return
  }}
}}
"""
    op = next(o for o in parse(text, "b.pto").ops[0].walk() if o.name == "pto.textract")
    b = bridge.bind(op, bridge.instr_for(op))  # type: ignore[arg-type]
    return b.ins.name, {o.name: v.name for o, v in zip(b.ins.operands, b.values,
                                                         strict=True) if v is not None}


def test_textract_pre_quant_scalar_is_written_last() -> None:
    """PTOAS writes ``ins(%src, %row, %col, %pre)``; the C++ overload is (dst, src,
    preQuantScalar, indexRow, indexCol), whose three scalars ptoisa holds in order."""
    name, got = _bound(f"pto.textract ins(%src, %c1, %c2, %pre : {_ACC}, index, index, i64) "
                       f"outs(%dst : {_MAT})")
    assert name == "TEXTRACT"
    assert (got["indexRow"], got["indexCol"], got["indexColQuant"]) == ("pre", "c1", "c2")


def test_textract_fp_keyword_is_textract_fp() -> None:
    name, got = _bound(f"pto.textract ins(%src, %c1, %c2 : {_ACC}, index, index fp %fp : "
                       f"{_FP}) outs(%dst : {_MAT})")
    assert name == "TEXTRACT_FP"
    assert (got["fp"], got["indexRow"], got["indexCol"]) == ("fp", "c1", "c2")


@pytest.mark.parametrize("target", ["a2a3", "a5"])
def test_trowexpand_of_a_dn_column(target: str) -> None:
    """PTOAS lowers trowexpand of a DN column vector (Cols == 1) to TROWEXPAND: dst[i, j] =
    src[i, 0]."""
    with pto.target(target):
        col = pto.Tile("Vec", "f32", 8, 1, "ColMajor")
        v = np.arange(1, 9, dtype=np.float32)
        col.write(v.reshape(8, 1))
        dst = pto.Tile("Vec", "f32", 8, 16)
        pto.TROWEXPAND(dst, col)
        np.testing.assert_array_equal(dst.numpy(), np.repeat(v[:, None], 16, axis=1))
        with pytest.raises(PtoError, match="src must be ND, or DN with Cols == 1"):
            pto.TROWEXPAND(dst, pto.Tile("Vec", "f32", 8, 8, "ColMajor"))


# ---- pre-quant forms, A5 stores, tprint ----------------------------------------------------

def test_pre_quant_form_needs_an_acc_src() -> None:
    """PTOAS's rule of ``ins(%src, %row, %col, %pre)`` / ``pre_quant %pre`` (the eager C++
    overload also quantises a Mat source)."""
    t = _t("f16", 32, 32)
    text = f"""module {{
  func.func @k(%pre: i64) {{
    %c0 = arith.constant 0 : index
    %src = pto.alloc_tile : {t}
    %dst = pto.alloc_tile : {t}
    pto.tinsert ins(%src, %c0, %c0 : {t}, index, index pre_quant %pre : i64) outs(%dst : {t})
    return
  }}
}}
"""
    with pytest.raises(PtoError, match="expects preQuantScalar form to use loc=acc src"):
        load(text, target="a5")


def test_tprint_of_a_global_tensor_takes_no_tmp() -> None:
    g = pto.GlobalTensor(np.zeros((4, 8), np.float32))
    with pytest.raises(PtoError, match="expects tmp only when src is a tile_buf"):
        pto.TPRINT(g, pto.GlobalTensor(np.zeros((4, 8), np.float32)))


@pytest.mark.parametrize(("valid", "why"), [
    ((16, 16), None), ((0, 0), None), ((16, 0), r"expects dst valid_shape\[1\] to be non-zero")])
def test_trowexpand_dst_not_half_empty(valid: tuple[int, int], why: str | None) -> None:
    s = _t("f32", 16, 1, 16, 1, bl="col_major")
    d = _t("f32", 16, 16, *valid)
    text = f"""module {{
  func.func @k() attributes {{pto.kernel_kind = #pto.kernel_kind<vector>}} {{
    %s = pto.alloc_tile : {s}
    %d = pto.alloc_tile : {d}
    pto.trowexpand ins(%s : {s}) outs(%d : {d})
    return
  }}
}}
"""
    if why is None:
        load(text, target="a5")
    else:
        with pytest.raises(PtoError, match=why):
            load(text, target="a5")


def test_fixpipe_epilogue_sizes_the_pushed_slot() -> None:
    """An i32 Acc tile pushed through a pipe whose acc_push_epilogue converts to f16
    (deqf16) fills 16 x 16 x 2 = 512 bytes of a slot, not 1024 (PTOAS sizes the slot for
    the post-fix-pipe data: fixpipe_basic_deqf16_nz2nd.pto)."""
    from ptoisa.interp.pipe_ops import _epilogue_out
    from ptoisa.isa.pipes import Direction, TPipe
    from ptoisa.isa.registry import REGISTRY
    from ptoisa.text import parse

    text = """module {
  func.func @k() {
    pto.aic_initialize_pipe {id = 0, dir_mask = 1, slot_size = 512, nosplit = true,
      acc_push_epilogue = #pto.acc_push_epilogue<layout = nz2nd, quant = deqf16_scalar,
                                                 relu = no_relu>}
    return
  }
}
"""
    op = next(o for o in parse(text).ops[0].walk() if o.name == "pto.aic_initialize_pipe")
    assert _epilogue_out(op) == "f16"
    with pto.target("a2a3"):
        acc = pto.Tile("Acc", "i32", 16, 16, "ColMajor", slayout="RowMajor", fractal=1024)
        acc.write(np.zeros((16, 16), np.int32))
        push = REGISTRY["TPUSH"]
        push(TPipe(0, Direction.DIR_C2V, 512, 2, 2, True, "f16"), acc)
        with pytest.raises(PtoError, match="the pushed data is 1024 bytes per consumer"):
            push(TPipe(1, Direction.DIR_C2V, 512, 2, 2, True), acc)


@pytest.mark.parametrize(("setter", "quant", "why"), [
    ("pto.set_quant_scalar(%s : f32) {id = 0}", "deqf16_scalar", None),
    ("pto.set_quant_scalar(%s : f32) {id = 1}", "deqf16_scalar",
     "expects 'id' = 1 to match a frontend or lowered initialize_pipe op in the same function"),
    ("pto.set_quant_scalar(%s : f32) {id = 0}", "deqf16_vec",
     "expects 'id' = 0 to reference a pipe with scalar quantization mode, but found "
     "non-scalar mode"),
    ("pto.set_quant_scalar(%h : f16) {id = 0}", "deqf16_scalar",
     "operand #0 must be 32-bit float, but got 'f16'"),
])
def test_quant_setter_rules(setter: str, quant: str, why: str | None) -> None:
    """PTOAS's rules of set_quant_scalar / set_quant_vector against the function's pipes
    (fixpipe_frontend_verify_additional_invalid.pto)."""
    text = f"""module {{
  func.func @k() attributes {{pto.kernel_kind = #pto.kernel_kind<cube>}} {{
    %s = arith.constant 1.0 : f32
    %h = arith.constant 1.0 : f16
    %c0 = arith.constant 0 : i32
    pto.aic_initialize_pipe {{id = 0, dir_mask = 1, slot_size = 512, nosplit = true,
      acc_push_epilogue = #pto.acc_push_epilogue<layout = nz2nd, quant = {quant},
                                                 relu = no_relu>}}
      (c2v_consumer_buf = %c0 : i32, v2c_consumer_buf = %c0 : i32)
    {setter}
    return
  }}
}}
"""
    from ptoisa.interp.verify import diagnose
    from ptoisa.text import parse

    errs = [e.render() for e in diagnose(parse(text, "q.pto"), "a5")]
    if why is None:
        assert not any("set_quant" in e for e in errs), errs
    else:
        assert any(why in e for e in errs), errs


# ---- packed FP4 tiles: PTOAS counts pairs, ptoisa elements ---------------------------------

def _fp4_kernel(op: str, src: str, dst: str) -> str:
    return f"""module attributes {{pto.target_arch = "a5"}} {{
  func.func @k() attributes {{pto.kernel_kind = #pto.kernel_kind<vector>}} {{
    %c0 = arith.constant 0 : index
    %s = pto.alloc_tile : {src}
    %d = pto.alloc_tile : {dst}
    {op}
    return
  }}
}}
"""


def test_packed_fp4_pair_extents_are_refused_by_name() -> None:
    """PTO_IR_manual (tile_buf): a !pto.f4* tile's extents are packed pairs. A bf16 16x16 ->
    f4 16x8 conversion and a move of f4 tiles are refused by name, never run on half the
    data."""
    bf, f4 = _t("bf16", 16, 16), _t("!pto.f4E1M2x2", 16, 8)
    text = _fp4_kernel(f"pto.tcvt ins(%s : {bf}) outs(%d : {f4})", bf, f4)
    with pytest.raises(PtoError, match=r"operation 'pto.tcvt' cannot be executed by ptoisa "
                                       r"yet: its f4E1M2x2 tile is 16x8 for a 16x16 bf16"):
        load(text, target="a5")
    v = _t("!pto.f4E2M1x2", 16, 32, 16, 16)
    text = _fp4_kernel(f"pto.tinsert ins(%s, %c0, %c0 : {v}, index, index) outs(%d : {v})",
                       v, v)
    with pytest.raises(PtoError, match=r"operation 'pto.tinsert' cannot be executed by ptoisa "
                                       r"yet: its f4E2M1x2 dst counts packed FP4 pairs"):
        load(text, target="a5")
    # (a hif8 insert, which pto-isa's a5 TInsert.hpp takes, is legal)
    h = _t("!pto.hif8", 16, 32)
    load(_fp4_kernel(f"pto.tinsert ins(%s, %c0, %c0 : {h}, index, index) outs(%d : {h})",
                     h, h), target="a5")

"""Cube micro-ops (micro-isa/16-cube-matmul.md): GM -> L1 (ND / DN -> NZ), L1 -> L0A / L0B /
BT, pto.mad*, FIXPIPE to GM / UB, against numpy references written from the chapter (the
matrix product in f64 of small integers, exact in f32), the bytes an observer is told, the
refusals of what is not executed yet, and upstream's cube-matmul / cv-mixed case folders on
their goldens."""

from __future__ import annotations

from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

import ptoisa as pto
from ptoisa.errors import ExecutionError, PtoError, VerifyError
from ptoisa.memory import is_poison

RNG = np.random.default_rng(16)

KERNEL = """
module attributes {pto.target_arch = "a5"} {
  func.func @k(%a: !pto.ptr<f16, gm>, %b: !pto.ptr<f16, gm>, %bias: !pto.ptr<f32, gm>,
               %c: !pto.ptr<f32, gm>) attributes {pto.kernel} {
    %c0 = arith.constant 0 : i64
    %c1 = arith.constant 1 : i64
    %c16 = arith.constant 16 : i64
    %M = arith.constant {M} : i64
    %N = arith.constant {N} : i64
    %K = arith.constant {K} : i64
    %MP = arith.constant {MP} : i64
    %KP = arith.constant {KP} : i64
    %AROW = arith.constant {AROW} : i64
    %BROW = arith.constant {BROW} : i64
    %BIASB = arith.constant {BIASB} : i64
    %CROW = arith.constant {CROW} : i64
    %l1b_at = arith.constant 65536 : i64
    %l1bias_at = arith.constant 131072 : i64
    %false = arith.constant false
    %l1_a = pto.castptr %c0 : i64 -> !pto.ptr<f16, l1>
    %l1_b = pto.castptr %l1b_at : i64 -> !pto.ptr<f16, l1>
    %l1_bias = pto.castptr %l1bias_at : i64 -> !pto.ptr<f32, l1>
    %l0a = pto.castptr %c0 : i64 -> !pto.ptr<f16, l0a>
    %l0b = pto.castptr %c0 : i64 -> !pto.ptr<f16, l0b>
    %l0c = pto.castptr %c0 : i64 -> !pto.ptr<f32, l0c>
    %bt = pto.castptr %c0 : i64 -> !pto.ptr<f32, bt>
    pto.mte_gm_l1_frac %a, %l1_a, nd2nz, shape(%M, %K), src_layout(%AROW),
        dst_group(%c1, %c1, %MP, %c0), ctrl(%c0, %false)
      : !pto.ptr<f16, gm>, !pto.ptr<f16, l1>, nd2nz, shape i64, i64, src_layout(i64),
        dst_group i64, i64, i64, i64, ctrl i64, i1
    pto.mte_gm_l1_frac %b, %l1_b, {BMODE}, shape({BSHAPE}), src_layout(%BROW),
        dst_group(%c1, %c1, %KP, %c0), ctrl(%c0, %false)
      : !pto.ptr<f16, gm>, !pto.ptr<f16, l1>, nd2nz, shape i64, i64, src_layout(i64),
        dst_group i64, i64, i64, i64, ctrl i64, i1
    pto.mte_gm_l1 %bias, %l1_bias, %BIASB nburst(%c1, %c0, %c0)
      : !pto.ptr<f32, gm>, !pto.ptr<f32, l1>, i64, i64, i64, i64
    pto.set_flag["PIPE_MTE2", "PIPE_MTE1", "EVENT_ID0"]
    pto.wait_flag["PIPE_MTE2", "PIPE_MTE1", "EVENT_ID0"]
    pto.mte_l1_l0a %l1_a, %l0a, %M, %K, %c0, %c0
      : !pto.ptr<f16, l1>, !pto.ptr<f16, l0a>, i64, i64, i64, i64
    pto.mte_l1_l0b %l1_b, %l0b, %K, %N, %c0, %c0 {transpose = {BT}}
      : !pto.ptr<f16, l1>, !pto.ptr<f16, l0b>, i64, i64, i64, i64
    pto.mte_l1_bt %l1_bias, %bt, %c1 nburst({BIASU}, %c0, %c0)
      : !pto.ptr<f32, l1>, !pto.ptr<f32, bt>, i64, i64, i64, i64
    pto.set_flag["PIPE_MTE1", "PIPE_M", "EVENT_ID0"]
    pto.wait_flag["PIPE_MTE1", "PIPE_M", "EVENT_ID0"]
    {MAD}
    pto.set_flag["PIPE_M", "PIPE_FIX", "EVENT_ID0"]
    pto.wait_flag["PIPE_M", "PIPE_FIX", "EVENT_ID0"]
    pto.mte_l0c_gm %l0c, %c, %M, %N, %MP, %CROW, %c0, %c0, {LAYOUT}
      : !pto.ptr<f32, l0c>, !pto.ptr<f32, gm>, i64, i64, i64, i64, i64, i64
    pto.barrier #pto.pipe<PIPE_ALL>
    return
  }
}
"""

PLAIN = ("pto.mad %l0a, %l0b, %l0c, %M, %N, %K"
         " : !pto.ptr<f16, l0a>, !pto.ptr<f16, l0b>, !pto.ptr<f32, l0c>, i64, i64, i64")
ACC = PLAIN + "\n    " + PLAIN.replace("pto.mad ", "pto.mad_acc ")
BIAS = ("pto.mad_bias %l0a, %l0b, %l0c, %bt, %M, %N, %K n_dir : !pto.ptr<f16, l0a>, "
        "!pto.ptr<f16, l0b>, !pto.ptr<f32, l0c>, !pto.ptr<f32, bt>, i64, i64, i64")


def _up(x: int, to: int) -> int:
    return -(-x // to) * to


def _kernel(m: int, n: int, k: int, *, mad: str = PLAIN, dn: bool = False,
            layout: str = "nz2nd", transpose: bool = True) -> str:
    """A kernel computing C (m x n, f32, GM rows of ``n`` elements, or columns of ``m`` under
    nz2dn) from A (m x k f16, rows of k) and B (k x n f16: ND rows of n, or DN: columns of
    k; without ``transpose`` B is given as its transpose, n x k)."""
    # B's GM source: ND k x n (rows of n), or with dn2nz the same matrix given by columns
    if transpose:
        bmode, bshape, brow = ("dn2nz", "%K, %N", 2 * k) if dn else ("nd2nz", "%K, %N", 2 * n)
        kp = _up(k, 16)
    else:  # the L1 holds B's transpose (n x k), read from GM as ND rows of k
        bmode, bshape, brow, kp = "nd2nz", "%N, %K", 2 * k, _up(n, 16)
    sub = {"M": m, "N": n, "K": k, "MP": _up(m, 16), "KP": kp, "AROW": 2 * k, "BROW": brow,
           "BIASB": 4 * _up(n, 8), "BIASU": f"%c{1}" if n <= 8 else "%c16",
           "CROW": n if layout == "nz2nd" else m, "BMODE": bmode, "BSHAPE": bshape,
           "BT": "true" if transpose else "false", "MAD": mad, "LAYOUT": layout}
    text = KERNEL
    for key, val in sub.items():
        text = text.replace("{" + key + "}", str(val))
    return text


def _ints(shape: tuple[int, ...], lo: int = -4, hi: int = 5) -> np.ndarray:
    return RNG.integers(lo, hi, shape).astype(np.float16)


def _run(text: str, a: np.ndarray, b: np.ndarray, bias: np.ndarray, c: np.ndarray,
         **kw: object) -> object:
    return pto.load(text, filename="cube.pto", target="a5").run("k", a, b, bias, c,
                                                               target="a5", **kw)


@pytest.mark.parametrize("m,n,k", [(16, 16, 16), (20, 24, 40), (33, 16, 50), (48, 64, 16)])
@pytest.mark.parametrize("form", ["plain", "acc", "bias"])
def test_gm_to_l0_to_mad_to_gm(m, n, k, form):
    a, b = _ints((m, k)), _ints((k, n))
    bias = np.zeros(_up(n, 8) * 4, np.float32)  # (16 units of 32 bytes: 128 f32 at most)
    bias[:n] = RNG.integers(-50, 50, n)
    c = np.full((m, n), 7, np.float32)
    mad = {"plain": PLAIN, "acc": ACC, "bias": BIAS}[form]
    _run(_kernel(m, n, k, mad=mad), a, b, bias, c)
    # the chapter's reference: C = A @ B (exact: small integers), doubled by mad + mad_acc,
    # plus bias[j] broadcast down the rows for mad_bias
    want = a.astype(np.float64) @ b.astype(np.float64)
    if form == "acc":
        want = 2 * want
    if form == "bias":
        want = want + bias[:n].astype(np.float64)[None, :]
    np.testing.assert_array_equal(c, want.astype(np.float32))


def test_dn2nz_and_untransposed_right_loads_and_nz2dn():
    m, n, k = 20, 24, 40
    a, b = _ints((m, k)), _ints((k, n))
    bias = np.zeros(128, np.float32)
    want = a.astype(np.float64) @ b.astype(np.float64)
    # B given by columns (DN, k contiguous): dn2nz reads the same logical k x n matrix
    c = np.zeros((m, n), np.float32)
    _run(_kernel(m, n, k, dn=True), a, np.ascontiguousarray(b.T), bias, c)
    np.testing.assert_array_equal(c, want)
    # without transpose the L1 tile holds B's transpose (n x k)
    c = np.zeros((m, n), np.float32)
    _run(_kernel(m, n, k, transpose=False), a, np.ascontiguousarray(b.T), bias, c)
    np.testing.assert_array_equal(c, want)
    # nz2dn(1): C written by columns (element [i, j] at j * m + i)
    c = np.zeros((n, m), np.float32)
    _run(_kernel(m, n, k, layout="nz2dn(%c1)"), a, b, bias, c)
    np.testing.assert_array_equal(c, want.T)


def test_tf32_mode_rounds_f32_inputs():
    # 1 + 2^-11 lies halfway between the TF32 values 1 and 1 + 2^-10 (10 mantissa bits):
    # round_even keeps 1 (even mantissa), round_away goes to 1 + 2^-10
    y = np.float32(1 + 2**-11)
    text = _tf32_kernel()
    for mode, want in (("round_even", np.float32(1.0)), ("round_away", np.float32(1 + 2**-10))):
        a = np.zeros((16, 16), np.float32)
        a[0, 0] = y
        b = np.zeros((16, 16), np.float32)
        b[0, 0] = 1
        c = np.zeros((16, 16), np.float32)
        pto.load(text.replace("MODE", mode), target="a5").run("k", a, b, c, target="a5")
        assert c[0, 0] == want, (mode, c[0, 0])


def _tf32_kernel() -> str:
    return """
module attributes {pto.target_arch = "a5"} {
  func.func @k(%a: !pto.ptr<f32, gm>, %b: !pto.ptr<f32, gm>, %c: !pto.ptr<f32, gm>)
      attributes {pto.kernel} {
    %c0 = arith.constant 0 : i64
    %c1 = arith.constant 1 : i64
    %c16 = arith.constant 16 : i64
    %c64 = arith.constant 64 : i64
    %c4096 = arith.constant 4096 : i64
    %false = arith.constant false
    %l1_a = pto.castptr %c0 : i64 -> !pto.ptr<f32, l1>
    %l1_b = pto.castptr %c4096 : i64 -> !pto.ptr<f32, l1>
    %l0a = pto.castptr %c0 : i64 -> !pto.ptr<f32, l0a>
    %l0b = pto.castptr %c0 : i64 -> !pto.ptr<f32, l0b>
    %l0c = pto.castptr %c0 : i64 -> !pto.ptr<f32, l0c>
    pto.mte_gm_l1_frac %a, %l1_a, nd2nz, shape(%c16, %c16), src_layout(%c64),
        dst_group(%c1, %c1, %c16, %c0), ctrl(%c0, %false)
      : !pto.ptr<f32, gm>, !pto.ptr<f32, l1>, nd2nz, shape i64, i64, src_layout(i64),
        dst_group i64, i64, i64, i64, ctrl i64, i1
    pto.mte_gm_l1_frac %b, %l1_b, nd2nz, shape(%c16, %c16), src_layout(%c64),
        dst_group(%c1, %c1, %c16, %c0), ctrl(%c0, %false)
      : !pto.ptr<f32, gm>, !pto.ptr<f32, l1>, nd2nz, shape i64, i64, src_layout(i64),
        dst_group i64, i64, i64, i64, ctrl i64, i1
    pto.mte_l1_l0a %l1_a, %l0a, %c16, %c16, %c0, %c0
      : !pto.ptr<f32, l1>, !pto.ptr<f32, l0a>, i64, i64, i64, i64
    pto.mte_l1_l0b %l1_b, %l0b, %c16, %c16, %c0, %c0 {transpose = true}
      : !pto.ptr<f32, l1>, !pto.ptr<f32, l0b>, i64, i64, i64, i64
    pto.mad %l0a, %l0b, %l0c, %c16, %c16, %c16 tf32_mode(MODE)
      : !pto.ptr<f32, l0a>, !pto.ptr<f32, l0b>, !pto.ptr<f32, l0c>, i64, i64, i64
    pto.mte_l0c_gm %l0c, %c, %c16, %c16, %c16, %c16, %c0, %c0, nz2nd
      : !pto.ptr<f32, l0c>, !pto.ptr<f32, gm>, i64, i64, i64, i64, i64, i64
    return
  }
}
"""


def test_nd2nz_leaves_the_nz_order_in_l1():
    """The bytes: L1 after nd2nz is the NZ order of spec/notes/model.md (16-row boxes of one
    32-byte C0 block, box columns outermost)."""
    m, k = 20, 40
    a = _ints((m, k))
    # the NZ reference, from the chapter's addressing: element [i, j] of an MP-row NZ matrix
    # at ((j // 16) * MP + i) * 16 + j % 16 (f16: C0 = 16 elements)
    mp = _up(m, 16)
    nz = np.zeros(mp * _up(k, 16), np.float16)   # (k's last C0 block padded with zeros)
    written = np.zeros(nz.size, bool)
    for i in range(m):
        for j in range(_up(k, 16)):
            at = ((j // 16) * mp + i) * 16 + j % 16
            nz[at] = a[i, j] if j < k else 0
            written[at] = True
    from ptoisa.isa.micro import cube
    from ptoisa.vector.regs import Ptr, buffer_bytes

    with pto.target("a5") as mc:
        gm = a.reshape(-1).copy()
        cube.MTE_GM_L1_FRAC.impl(mc, gm, Ptr("l1", 0, pto.dtypes.f16), (m, k), (2 * k,),
                                 (1, 1, mp, 0), (0, False), nd2nz=True)
        got = buffer_bytes(mc, "l1", 0, nz.nbytes, "the test", role=None).view(np.float16)
        np.testing.assert_array_equal(got[written], nz[written])
        # rows m .. MP are not padded in normal C0 mode: they keep what they held
        assert is_poison(got[~written].view(np.uint8)).all()


def test_the_bytes_are_told_to_an_observer():
    from ptoisa.isa.micro import cube
    from ptoisa.vector.regs import Ptr

    with pto.target("a5") as mc:
        f16 = pto.dtypes.f16
        gm = _ints((16, 32)).reshape(-1)
        mc.touched = []
        cube.MTE_GM_L1_FRAC.impl(mc, gm, Ptr("l1", 1024, f16), (16, 32), (64,),
                                 (1, 1, 16, 0), (0, False), nd2nz=True)
        told = {(r, s) for r, s, *_ in mc.touched}
        assert ("in", "GM") in told and ("out", "L1") in told
        spans = [(lo, hi) for r, s, _, lo, hi in mc.touched if s == "L1"]
        assert min(lo for lo, _ in spans) == 1024 and max(hi for _, hi in spans) == 2048
        mc.touched = []
        cube.MTE_L1_L0A.impl(mc, Ptr("l1", 1024, f16), Ptr("l0a", 0, f16), 16, 32, 0, 0)
        told = {(r, s, lo, hi) for r, s, _, lo, hi in mc.touched}
        assert ("in", "L1", 1024, 2048) in told and ("out", "L0A", 0, 1024) in told
        mc.touched = []
        cube.MAD.impl(mc, Ptr("l0a", 0, f16), Ptr("l0b", 0, f16), Ptr("l0c", 0, pto.dtypes.f32),
                      16, 16, 32, disable_gemv=False)
        told = {(r, s) for r, s, *_ in mc.touched}
        assert {("in", "L0A"), ("in", "L0B"), ("out", "L0C")} <= told
        mc.touched = None


@pytest.mark.parametrize("edit,err,match", [
    ("nz2nd\n", "nz2nd bogus_flag\n", r"unknown keyword 'bogus_flag'"),
])
def test_unknown_keywords_are_refused_not_dropped(edit, err, match):
    text = _kernel(16, 16, 16).replace(edit, err, 1)
    with pytest.raises(VerifyError, match=match):
        pto.load(text, target="a5").run("k", _ints((16, 16)), _ints((16, 16)),
                                        np.zeros(128, np.float32),
                                        np.zeros((16, 16), np.float32), target="a5")


@pytest.mark.parametrize("mad,match", [
    (PLAIN.replace("%K", "%K sat", 1).replace("%K sat,", "%K,"), r"the clause sat"),
    (PLAIN.replace("pto.mad ", "pto.mad_acc ").replace("%K", "%K unit_flag(bogus)", 1),
     r"unit_flag takes check_only or check_and_set"),
])
def test_what_is_not_executed_is_refused_by_name(mad, match):
    text = _kernel(16, 16, 16, mad=mad)
    with pytest.raises(ExecutionError, match=match):
        _run(text, _ints((16, 16)), _ints((16, 16)), np.zeros(128, np.float32),
             np.zeros((16, 16), np.float32))


_A_POS = "pto.mte_l1_l0a %l1_a, %l0a, %M, %K, %c0, %c0"
_B_POS = "pto.mte_l1_l0b %l1_b, %l0b, %K, %N, %c0, %c0"


def test_named_field_spelling_of_the_l1_to_l0_loads():
    """16-cube-matmul.md: the shape-derived fields may be written by name in any order;
    the result is the positional form's (C = A @ B)."""
    text = _kernel(20, 24, 40).replace(
        _A_POS, "pto.mte_l1_l0a %l1_a, %l0a, start_col(%c0), k(%K), m(%M), start_row(%c0)"
    ).replace(_B_POS, "pto.mte_l1_l0b %l1_b, %l0b, n(%N), start_row(%c0), k(%K), "
              "start_col(%c0)")
    a, b = _ints((20, 40)), _ints((40, 24))
    c = np.zeros((20, 24), np.float32)
    _run(text, a, b, np.zeros(128, np.float32), c)
    np.testing.assert_array_equal(c, (a.astype(np.float64) @ b.astype(np.float64))
                                  .astype(np.float32))


@pytest.mark.parametrize("load,match", [
    ("pto.mte_l1_l0a %l1_a, %l0a, m_start(%c0)", r"full control form requires k_start"),
    ("pto.mte_l1_l0a %l1_a, %l0a, m(%M), k(%K), start_row(%c0), start_col(%c0), "
     "m_start(%c0)", r"cannot mix shape-derived operands with full control operands"),
    ("pto.mte_l1_l0a %l1_a, %l0a, %M, %K, %c0, %c0, %c0",
     r"expects either four shape-derived or six full positional operands"),
])
def test_partial_mixed_and_five_operand_loads_are_refused(load, match):
    text = _kernel(16, 16, 16).replace(_A_POS, load)
    with pytest.raises(PtoError, match=match):
        pto.load(text, target="a5").check()


_FP4 = """module attributes {pto.target_arch = "a5", pto.kernel_kind = #pto.kernel_kind<cube>} {
  func.func @k() attributes {pto.kernel} {
    %c0 = arith.constant 0 : i64
    %c1 = arith.constant 1 : i64
    %src = pto.castptr %c0 : i64 -> !pto.ptr<T, l1>
    %dst = pto.castptr %c0 : i64 -> !pto.ptr<T, l0a>
    pto.OP %src, %dst, %c0, %c0, %c1, %c1, %c1, %c1
      : !pto.ptr<T, l1>, !pto.ptr<T, l0a>, i64, i64, i64, i64, i64, i64
    return
  }
}
"""


def test_packed_fp4_needs_the_s4_load():
    """PTOAS: the legacy load_cbuf_to_ca refuses packed FP4 (its S4 twin moves it);
    mte_l1_l0a takes it (and picks the S4 load), which ptoisa refuses by name at run time."""
    fp4 = _FP4.replace("T", "!pto.f4E2M1x2")
    with pytest.raises(PtoError, match=r"packed FP4 source requires the S4 load operation"):
        pto.load(fp4.replace("OP", "load_cbuf_to_ca"), target="a5").check()
    pto.load(_FP4.replace("T", "f16").replace("OP", "load_cbuf_to_ca"), target="a5").check()
    prog = pto.load(fp4.replace("OP", "mte_l1_l0a"), target="a5")
    prog.check()
    with pytest.raises(ExecutionError, match=r"operation 'pto.mte_l1_l0a' cannot be executed "
                       r"by ptoisa yet with the packed type f4E2M1x2"):
        prog.run("k", target="a5")


@pytest.mark.parametrize("flag", ["sat", "sat(preserve_nan)", "nosat"])
def test_fixpipe_sat_flags_keep_an_f32_result(flag):
    """16-cube-matmul.md: sat / sat(preserve_nan) / nosat select the final conversion; an f32
    destination keeps the f32 accumulator's values (C = A @ B, exact on small integers)."""
    a, b = _ints((16, 16)), _ints((16, 16))
    c = np.zeros((16, 16), np.float32)
    _run(_kernel(16, 16, 16, layout=f"nz2nd {flag}"), a, b, np.zeros(128, np.float32), c)
    np.testing.assert_array_equal(c, (a.astype(np.float64) @ b.astype(np.float64))
                                  .astype(np.float32))


def test_flag_group_of_no_parameter_is_refused():
    text = _kernel(16, 16, 16, layout="nz2nd bogus(preserve_nan)")
    with pytest.raises(VerifyError, match=r"expected ':', not 'bogus\(\.\.\.\)'"):
        _run(text, _ints((16, 16)), _ints((16, 16)), np.zeros(128, np.float32),
             np.zeros((16, 16), np.float32))


def test_fixpipe_clauses_not_executed_are_refused_by_name():
    text = _kernel(16, 16, 16).replace(
        "%c0, %c0, nz2nd", "%c0, %c0, nz2nd, loop3(%c1, %c0, %c0), nosat").replace(
        "%c0, %c0, nz2nd, loop3", "%c0, %c0, pre_relu(%c0), nz2nd, loop3")
    with pytest.raises(PtoError, match=r"pre_relu"):
        _run(text, _ints((16, 16)), _ints((16, 16)), np.zeros(128, np.float32),
             np.zeros((16, 16), np.float32))


# ---- upstream's case folders ----------------------------------------------------------------

#: the folders whose kernels use only what ptoisa executes: they must match their golden
MATCHED = {
    "cube-matmul": {"cube-bridge-matmul", "cube-bridge-store-nz2dn-ncdhw",
                    "cube-load-frac-layouts", "fixpipe-cc-gm", "mad_bias", "mad_f16f16f32",
                    "mad_tf32", "mad_tf32_round_away"},
    "cv-mixed": {"fixpipe-acc-store-atomic-f32-cv", "fixpipe-acc-store-dual-ub-cv",
                 "fixpipe-acc-ub-cv", "fixpipe-quant-ub-cv", "fixpipe-quant-clip-f16-ub-cv",
                 "fixpipe-quant-normal-relu-clip-f16-scalar-ub-cv",
                 "fixpipe-quant-relu-clip-f16-scalar-ub-cv",
                 # (its vector ReLU payload at FB byte 65600: past pto-isa's 4 KiB of Scaling
                 # tiles, inside the 248 KiB PTOAS plans: Target.pointer_window)
                 "fixpipe-relu-scalar-vector-f16-cv"},
}


@pytest.mark.parametrize("chapter", sorted(MATCHED))
def test_upstream_case_folders(shared_dir, chapter):
    root = Path(shared_dir) / "corpus" / "ptoas-main" / "test" / "vpto" / "cases" / "micro-op"
    if not root.is_dir():
        pytest.skip(f"no upstream vpto cases at {root} (../shared is absent)")
    from ptoisa.suite import goldens

    seen = {}
    for d in sorted(p for p in (root / chapter).iterdir() if (p / "kernel.pto").is_file()):
        res = goldens.do_vpto(d, root)
        seen[d.name] = [o.verdict for r in res for o in r.outcomes]
        if d.name in MATCHED[chapter]:
            assert seen[d.name] == ["matched"], (d.name, res[0].outcomes, res[0].notes)
        else:  # the others refuse by name what is not executed yet: never a wrong result
            assert seen[d.name] == ["unsupported"], (d.name, res[0].outcomes)
    assert MATCHED[chapter] <= set(seen)


def test_the_suite_reads_outputs_written_back_in_a_loop(shared_dir):
    """main.cpp of the cv-mixed quant cases writes its outputs in a loop over file numbers
    (``case 4: hostBuf = outUbQuantHost; ... WriteFile(path, hostBuf, kSizeOut)``); a buffer
    copied back to a file the reader cannot name is refused, never compared unwritten."""
    root = Path(shared_dir) / "corpus" / "ptoas-main" / "test" / "vpto" / "cases" / "micro-op"
    d = root / "cv-mixed" / "fixpipe-quant-clip-f16-ub-cv"
    if not d.is_dir():
        pytest.skip("../shared is absent")
    from ptoisa.suite import goldens

    host = goldens.vpto_host(d)
    written = [(b[2], b[3]) for b in host.buffers[3:9]]
    assert written == [(f"./v{k}.bin", "kSizeOut") for k in range(4, 10)]
    assert host.buffers[0][:2] == (50 * 64 * 2, "./v2.bin")  # (kSizeSrc: 50 * 64 __fp16)


def test_the_sanitizer_sees_l0_bytes_through_cube_pointers():
    text = _kernel(16, 16, 16)
    args = (_ints((16, 16)), _ints((16, 16)), np.zeros(128, np.float32),
            np.zeros((16, 16), np.float32))
    assert not pto.load(text, target="a5").run("k", *args, target="a5", sanitize=True)
    unsynced = text.replace('pto.wait_flag["PIPE_M", "PIPE_FIX", "EVENT_ID0"]', "")
    from ptoisa.sanitizer.report import SanitizerError

    with pytest.raises(SanitizerError, match=r"race \(RAW\) on L0C .*pto.mte_l0c_gm .*pto.mad"):
        pto.load(unsynced, target="a5").run("k", *args, target="a5", sanitize=True)


FILL = """
module attributes {pto.target_arch = "a5"} {
  func.func @k(%out: !pto.ptr<ui16, gm>) attributes {pto.kernel} {
    %c0 = arith.constant 0 : i64
    %c1 = arith.constant 1 : i64
    %c2 = arith.constant 2 : i64
    %c3 = arith.constant 3 : i64
    %c10 = arith.constant 10 : i64
    %c32 = arith.constant 32 : i64
    %c320 = arith.constant 320 : i64
    %v = arith.constant RAW : i32
    %l1 = pto.castptr %c0 : i64 -> !pto.ptr<ui16, mat>
    %ub = pto.castptr %c0 : i64 -> !pto.ptr<ui16, ub>
    pto.raw_fill_l1 %l1, %c32, %v, %c3, %c2, %c1 {fill_word_bits = BITS : i64}
      : !pto.ptr<ui16, mat>, i64, i32, i64, i64, i64
    pto.mte_l1_ub %l1, %ub, %c10 nburst(%c1, %c0, %c0)
      : !pto.ptr<ui16, mat>, !pto.ptr<ui16, ub>, i64, i64, i64, i64
    pto.mte_ub_gm %ub, %out, %c320 nburst(%c1, %c0, %c0)
      : !pto.ptr<ui16, ub>, !pto.ptr<ui16, gm>, i64, i64, i64, i64
    return
  }
}
"""


@pytest.mark.parametrize("bits,raw", [(16, 0x1234ABCD), (32, 0x1234ABCD)])
def test_raw_fill_l1_repeats_the_word_in_strided_blocks(bits, raw):
    out = np.zeros(160, np.uint16)
    text = FILL.replace("RAW", str(raw)).replace("BITS", str(bits))
    pto.load(text, target="a5").run("k", out, target="a5")
    raw_bytes = out.view(np.uint8)
    # the chapter: 3 repetitions of 2 blocks of 32 bytes from byte 32, 1 block of gap between
    filled = np.zeros(320, bool)
    for r in range(3):
        filled[32 + r * 96:32 + r * 96 + 64] = True
    word = (raw & 0xFFFF).to_bytes(2, "little") if bits == 16 else raw.to_bytes(4, "little")
    want = np.frombuffer(word * (320 // len(word)), np.uint8)
    np.testing.assert_array_equal(raw_bytes[filled], want[filled])
    assert is_poison(raw_bytes[~filled]).all()  # the rest of L1 was never written


def test_raw_fill_l1_rejects_a_misaligned_offset():
    text = FILL.replace("RAW", "1").replace("BITS", "16").replace(
        "pto.raw_fill_l1 %l1, %c32,", "pto.raw_fill_l1 %l1, %c2,")
    with pytest.raises(ExecutionError, match="not 32-byte aligned"):
        pto.load(text, target="a5").run("k", np.zeros(160, np.uint16), target="a5")


GEMV = """
module attributes {pto.target_arch = "a5"} {
  func.func @k(%a: !pto.ptr<f16, gm>, %b: !pto.ptr<f16, gm>, %c: !pto.ptr<f32, gm>)
      attributes {pto.kernel} {
    %c0 = arith.constant 0 : i64
    %c1 = arith.constant 1 : i64
    %K = arith.constant 64 : i64
    %N = arith.constant 32 : i64
    %KP = arith.constant 64 : i64
    %AB = arith.constant 128 : i64
    %BROW = arith.constant 64 : i64
    %l1b_at = arith.constant 4096 : i64
    %false = arith.constant false
    %l1_a = pto.castptr %c0 : i64 -> !pto.ptr<f16, l1>
    %l1_b = pto.castptr %l1b_at : i64 -> !pto.ptr<f16, l1>
    %l0a = pto.castptr %c0 : i64 -> !pto.ptr<f16, l0a>
    %l0b = pto.castptr %c0 : i64 -> !pto.ptr<f16, l0b>
    %l0c = pto.castptr %c0 : i64 -> !pto.ptr<f32, l0c>
    pto.mte_gm_l1 %a, %l1_a, %AB nburst(%c1, %c0, %c0)
      : !pto.ptr<f16, gm>, !pto.ptr<f16, l1>, i64, i64, i64, i64
    pto.mte_gm_l1_frac %b, %l1_b, nd2nz, shape(%K, %N), src_layout(%BROW),
        dst_group(%c1, %c1, %KP, %c0), ctrl(%c0, %false)
      : !pto.ptr<f16, gm>, !pto.ptr<f16, l1>, nd2nz, shape i64, i64, src_layout(i64),
        dst_group i64, i64, i64, i64, ctrl i64, i1
    pto.load_cbuf_to_ca %l1_a, %l0a, %c0, %c0, %c1, %c1, %c1, %c1
      : !pto.ptr<f16, l1>, !pto.ptr<f16, l0a>, i64, i64, i64, i64, i64, i64
    pto.mte_l1_l0b %l1_b, %l0b, %K, %N, %c0, %c0 {transpose = true}
      : !pto.ptr<f16, l1>, !pto.ptr<f16, l0b>, i64, i64, i64, i64
    pto.mad %l0a, %l0b, %l0c, %c1, %N, %K
      : !pto.ptr<f16, l0a>, !pto.ptr<f16, l0b>, !pto.ptr<f32, l0c>, i64, i64, i64
    %c16 = arith.constant 16 : i64
    pto.mte_l0c_gm %l0c, %c, %c1, %N, %c16, %N, %c0, %c0, nz2nd
      : !pto.ptr<f32, l0c>, !pto.ptr<f32, gm>, i64, i64, i64, i64, i64, i64
    return
  }
}
"""


def test_gemv_reads_the_row_contiguous():
    """m = 1 without disable_gemv: lhs holds the 1 x K row as its K elements one after the
    other (the tile level's 1-row Left tile), here copied raw: GM -> L1 -> one fractal
    block of L0A (the legacy full-control load)."""
    a, b = _ints((1, 64)), _ints((64, 32))
    c = np.zeros((1, 32), np.float32)
    pto.load(GEMV, target="a5").run("k", a, b, c, target="a5")
    np.testing.assert_array_equal(c, a.astype(np.float64) @ b.astype(np.float64))


def _byte_kernel(m: int, n: int, k: int, ty: str) -> str:
    """KERNEL for 1-byte A and B (``ty``): L1 boxes of 16 rows x 32 elements, so B's box
    columns (k rows, transposed into L0B) are k padded to 32 high; no bias."""
    text = _kernel(m, n, k, transpose=True).replace("f16", ty)
    for old, new in (("%KP = arith.constant " + str(_up(k, 16)), f"%KP = arith.constant "
                      f"{_up(k, 32)}"), (f"%AROW = arith.constant {2 * k}",
                                         f"%AROW = arith.constant {k}"),
                     (f"%BROW = arith.constant {2 * n}", f"%BROW = arith.constant {n}")):
        assert old in text
        text = text.replace(old, new)
    return text


@pytest.mark.parametrize("m,n,k", [(16, 32, 32), (20, 64, 96), (5, 96, 64)])
@pytest.mark.parametrize("ty", ["f8E4M3", "!pto.hif8"])
def test_byte_operands_transposing_l0b_load(m, n, k, ty):
    """1-byte B through the transposing L1 -> L0B load (as upstream's tilelang_st tmatmul
    kernels load fp8 / HiF8 B), and HiF8 products in mad: C = A @ B of the decoded values."""
    if ty == "f8E4M3":
        av = RNG.integers(-8, 9, (m, k)) / 4
        bv = RNG.integers(-8, 9, (k, n)) / 4
        a = av.astype(ml_dtypes.float8_e4m3fn)
        b = bv.astype(ml_dtypes.float8_e4m3fn)
    else:  # HiF8 codes 0x08-0x0F are 1.mmm (dot field 0001, no exponent bits), bit 7 the sign
        ca, cb = RNG.integers(0x08, 0x10, (m, k)), RNG.integers(0x08, 0x10, (k, n))
        sa, sb = RNG.integers(0, 2, (m, k)), RNG.integers(0, 2, (k, n))
        av = (1 + (ca & 7) / 8) * np.where(sa, -1, 1)
        bv = (1 + (cb & 7) / 8) * np.where(sb, -1, 1)
        a, b = (ca | sa << 7).astype(np.uint8), (cb | sb << 7).astype(np.uint8)
    c = np.full((m, n), 7, np.float32)
    _run(_byte_kernel(m, n, k, ty), a, b, np.zeros(_up(n, 8) * 4, np.float32), c)
    np.testing.assert_array_equal(c, (av @ bv).astype(np.float32))


def test_byte_transposing_load_of_ragged_blocks_is_refused():
    a = np.zeros((5, 40), np.uint8)
    b = np.zeros((40, 9), np.uint8)
    with pytest.raises(PtoError, match=r"mte_l1_l0b.*transpose of 1-byte elements with a 40 x 9"):
        _run(_byte_kernel(5, 9, 40, "!pto.hif8"), a, b, np.zeros(64, np.float32),
             np.zeros((5, 9), np.float32))


@pytest.mark.parametrize("ty", ["f4e2m1", "f4e1m2"])
def test_packed_fp4_pairs_move_as_bytes(ty):
    """A packed fp4 pair type is one byte a pair: mte_gm_l1 moves len_burst bytes whatever the
    type, and mte_gm_l1_frac's shape / strides count pairs (sizeof(T) = 1): tilelang_st
    tmatmul_bias_mx moves a K = 128 fp4 B as shape(128, 32) with src_layout(32)."""
    from ptoisa.isa.micro import cube
    from ptoisa.vector.regs import Ptr, buffer_bytes

    dt = getattr(pto.dtypes, ty)
    n, d = 20, 40                        # 20 rows of 40 pairs (80 fp4 values)
    src = RNG.integers(0, 256, (n, d), dtype=np.uint8)
    rows = _up(n, 16)
    # the NZ reference with 1-byte elements: C0 = 32 pairs, [i, j] at ((j // 32) * rows + i)
    # * 32 + j % 32, the last C0 block of a row padded with zero bytes
    nz = np.zeros(rows * _up(d, 32), np.uint8)
    written = np.zeros(nz.size, bool)
    for i in range(n):
        for j in range(_up(d, 32)):
            at = ((j // 32) * rows + i) * 32 + j % 32
            nz[at] = src[i, j] if j < d else 0
            written[at] = True
    with pto.target("a5") as mc:
        cube.MTE_GM_L1_FRAC.impl(mc, src.reshape(-1).copy(), Ptr("l1", 0, dt), (n, d), (d,),
                                 (1, 1, rows, 0), (0, False), nd2nz=True)
        got = buffer_bytes(mc, "l1", 0, nz.nbytes, "the test", role=None)
        np.testing.assert_array_equal(got[written], nz[written])
        # bursts of 24 bytes, 3 rows, source rows 40 bytes apart, destination rows 32 apart
        cube.MTE_GM_L1.impl(mc, src.reshape(-1).copy(), Ptr("l1", 4096, dt), 24, (3, 40, 32))
        got = buffer_bytes(mc, "l1", 4096, 96, "the test", role=None).reshape(3, 32)
        np.testing.assert_array_equal(got[:, :24], src[:3, :24])


@pytest.mark.parametrize("ty", ["f4e2m1", "f4e1m2"])
def test_packed_fp4_l1_to_l0_loads_keep_the_logical_codes(ty):
    """The packed fp4 L1 -> L0 loads (16-cube-matmul.md: PTOAS's S4 load, extents in logical
    values, 64 a 32-byte C0 block): A (m x k, L1 NZ of pairs as mte_gm_l1_frac leaves it) into
    L0A, and B (k x n, likewise) with transpose into L0B, read back through the Left / Right
    tiles TMATMUL_MX takes there; the GM bytes hold two codes each, the even one low (the
    packing of upstream's tilelang_st gen_data.py pack_two_fp4)."""
    from ptoisa.enums import BLayout, SLayout, TileType
    from ptoisa.isa.micro import cube
    from ptoisa.tile import Tile
    from ptoisa.vector.regs import Ptr

    dt = getattr(pto.dtypes, ty)
    m, k, n = 35, 128, 56
    mp, np_ = 48, 64

    def gm(codes: np.ndarray) -> np.ndarray:
        return (codes[:, 0::2] | (codes[:, 1::2] << 4)).astype(np.uint8).reshape(-1)

    a = RNG.integers(0, 16, (mp, k)).astype(np.uint8)
    b = RNG.integers(0, 16, (k, np_)).astype(np.uint8)
    with pto.target("a5") as mc:
        cube.MTE_GM_L1_FRAC.impl(mc, gm(a), Ptr("l1", 0, dt), (mp, k // 2), (k // 2,),
                                 (1, 1, mp, 0), (0, False), nd2nz=True)
        cube.MTE_GM_L1_FRAC.impl(mc, gm(b), Ptr("l1", 8192, dt), (k, np_ // 2), (np_ // 2,),
                                 (1, 1, k, 0), (0, False), nd2nz=True)
        cube.MTE_L1_L0A.impl(mc, Ptr("l1", 0, dt), Ptr("l0a", 0, dt), m, k, 0, 0)
        cube.MTE_L1_L0B.impl(mc, Ptr("l1", 8192, dt), Ptr("l0b", 0, dt), k, n, 0, 0,
                             transpose=True)
        left = Tile(TileType.Left, dt, mp, k, BLayout.ColMajor, (m, k), SLayout.RowMajor)
        right = Tile(TileType.Right, dt, k, np_, BLayout.RowMajor, (k, n), SLayout.ColMajor)
        mc.assign(left, 0)
        mc.assign(right, 0)
        np.testing.assert_array_equal(np.asarray(left.read()), a[:m])
        np.testing.assert_array_equal(np.asarray(right.read()), b[:, :n])


def test_packed_fp4_gemv_row_stays_contiguous_and_wide_gemv_scales_are_refused():
    """m = 1 (the tgemv templates' GEMV organisation): the 1 x K row is contiguous in L1 (as
    upstream's tgemv_mx keeps it) and in L0A (the 1-row Left tile, as the non-packed GEMV
    model); a GEMV scale row beyond one 16 x 2 box is refused by name."""
    from ptoisa.enums import BLayout, SLayout, TileType
    from ptoisa.isa.micro import cube
    from ptoisa.tile import Tile
    from ptoisa.vector.regs import Ptr, buffer_bytes

    dt = pto.dtypes.f4e1m2
    k = 256
    a = RNG.integers(0, 16, k).astype(np.uint8)
    with pto.target("a5") as mc:
        buffer_bytes(mc, "l1", 0, k // 2, "the test", role=None)[:] = a[0::2] | (a[1::2] << 4)
        cube.MTE_L1_L0A.impl(mc, Ptr("l1", 0, dt), Ptr("l0a", 0, dt), 1, k, 0, 0)
        left = Tile(TileType.Left, dt, 1, k, BLayout.ColMajor, (1, k), SLayout.RowMajor)
        mc.assign(left, 0)
        np.testing.assert_array_equal(np.asarray(left.read())[0], a)
        with pytest.raises(ExecutionError, match="m = 1 and 8 scale groups"):
            cube.MTE_L1_L0A_MX.impl(mc, Ptr("l1", 1024, pto.dtypes.f8e4m3),
                                    Ptr("l0a", 0, dt), 1, k, 0, 0)

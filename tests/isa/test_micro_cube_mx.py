"""MX cube micro-ops (micro-isa/16-cube-matmul.md, MX Matmul Model / MX Scale Load Model):
``mte_l1_l0a_mx`` / ``mte_l1_l0b_mx`` and ``pto.mad_mx`` / ``mad_mx_acc`` / ``mad_mx_bias``
in a GM -> L1 -> L0 -> L0C -> GM chain, against a numpy reference written from the chapter
(dequantise each fp8 value with its E8M0 scale 2^(e - 127), one per 32 k, then an f64
matmul), with the L1 packings upstream's MX cases use (tilelang_st tmatmul_bias_mx
gen_data.py: A and B in NZ, the left scales in ZZ, the right scales in NN); the bytes told
to an observer, the cycle report, and the refusals."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import ptoisa as pto
from ptoisa.errors import ExecutionError, PtoError

RNG = np.random.default_rng(28)
E4 = ml_dtypes.float8_e4m3fn

KERNEL = """
module attributes {pto.target_arch = "a5"} {
  func.func @k(%a: !pto.ptr<f8E4M3FN, gm>, %b: !pto.ptr<f8E4M3FN, gm>,
               %sa: !pto.ptr<f8E4M3FN, gm>, %sb: !pto.ptr<f8E4M3FN, gm>,
               %bias: !pto.ptr<f32, gm>, %c: !pto.ptr<f32, gm>) attributes {pto.kernel} {
    %c0 = arith.constant 0 : i64
    %c1 = arith.constant 1 : i64
    %M = arith.constant {M} : i64
    %N = arith.constant {N} : i64
    %K = arith.constant {K} : i64
    %MP = arith.constant {MP} : i64
    %AB = arith.constant {AB} : i64
    %BB = arith.constant {BB} : i64
    %SAB = arith.constant {SAB} : i64
    %SBB = arith.constant {SBB} : i64
    %BIASB = arith.constant {BIASB} : i64
    %BIASU = arith.constant {BIASU} : i64
    %at_b = arith.constant 32768 : i64
    %at_sa = arith.constant 65536 : i64
    %at_sb = arith.constant 69632 : i64
    %at_bias = arith.constant 73728 : i64
    %l0_at = arith.constant {L0AT} : i64
    %l1_a = pto.castptr %c0 : i64 -> !pto.ptr<f8E4M3FN, l1>
    %l1_b = pto.castptr %at_b : i64 -> !pto.ptr<f8E4M3FN, l1>
    %l1_sa = pto.castptr %at_sa : i64 -> !pto.ptr<f8E4M3FN, l1>
    %l1_sb = pto.castptr %at_sb : i64 -> !pto.ptr<f8E4M3FN, l1>
    %l1_bias = pto.castptr %at_bias : i64 -> !pto.ptr<f32, l1>
    %l0a = pto.castptr %l0_at : i64 -> !pto.ptr<f8E4M3FN, l0a>
    %l0b = pto.castptr %l0_at : i64 -> !pto.ptr<f8E4M3FN, l0b>
    %l0c = pto.castptr %c0 : i64 -> !pto.ptr<f32, l0c>
    %bt = pto.castptr %c0 : i64 -> !pto.ptr<f32, bt>
    pto.mte_gm_l1 %a, %l1_a, %AB nburst(%c1, %c0, %c0)
      : !pto.ptr<f8E4M3FN, gm>, !pto.ptr<f8E4M3FN, l1>, i64, i64, i64, i64
    pto.mte_gm_l1 %b, %l1_b, %BB nburst(%c1, %c0, %c0)
      : !pto.ptr<f8E4M3FN, gm>, !pto.ptr<f8E4M3FN, l1>, i64, i64, i64, i64
    pto.mte_gm_l1 %sa, %l1_sa, %SAB nburst(%c1, %c0, %c0)
      : !pto.ptr<f8E4M3FN, gm>, !pto.ptr<f8E4M3FN, l1>, i64, i64, i64, i64
    pto.mte_gm_l1 %sb, %l1_sb, %SBB nburst(%c1, %c0, %c0)
      : !pto.ptr<f8E4M3FN, gm>, !pto.ptr<f8E4M3FN, l1>, i64, i64, i64, i64
    pto.mte_gm_l1 %bias, %l1_bias, %BIASB nburst(%c1, %c0, %c0)
      : !pto.ptr<f32, gm>, !pto.ptr<f32, l1>, i64, i64, i64, i64
    pto.set_flag["PIPE_MTE2", "PIPE_MTE1", "EVENT_ID0"]
    pto.wait_flag["PIPE_MTE2", "PIPE_MTE1", "EVENT_ID0"]
    pto.mte_l1_l0a %l1_a, %l0a, %M, %K, %c0, %c0
      : !pto.ptr<f8E4M3FN, l1>, !pto.ptr<f8E4M3FN, l0a>, i64, i64, i64, i64
    pto.mte_l1_l0b %l1_b, %l0b, %K, %N, %c0, %c0 {transpose = true}
      : !pto.ptr<f8E4M3FN, l1>, !pto.ptr<f8E4M3FN, l0b>, i64, i64, i64, i64
    pto.mte_l1_l0a_mx %l1_sa, %l0a, %M, %K, %c0, %c0{SAX}
      : !pto.ptr<f8E4M3FN, l1>, !pto.ptr<f8E4M3FN, l0a>, i64, i64, i64, i64{SAT}
    pto.mte_l1_l0b_mx %l1_sb, %l0b, %K, %N, %c0, %c0
      : !pto.ptr<f8E4M3FN, l1>, !pto.ptr<f8E4M3FN, l0b>, i64, i64, i64, i64
    pto.mte_l1_bt %l1_bias, %bt, %BIASU nburst(%c1, %c0, %c0)
      : !pto.ptr<f32, l1>, !pto.ptr<f32, bt>, i64, i64, i64, i64
    pto.set_flag["PIPE_MTE1", "PIPE_M", "EVENT_ID0"]
    pto.wait_flag["PIPE_MTE1", "PIPE_M", "EVENT_ID0"]
    {MAD}
    pto.set_flag["PIPE_M", "PIPE_FIX", "EVENT_ID0"]
    pto.wait_flag["PIPE_M", "PIPE_FIX", "EVENT_ID0"]
    pto.mte_l0c_gm %l0c, %c, %M, %N, %MP, %N, %c0, %c0, nz2nd
      : !pto.ptr<f32, l0c>, !pto.ptr<f32, gm>, i64, i64, i64, i64, i64, i64
    pto.barrier #pto.pipe<PIPE_ALL>
    return
  }
}
"""

_TYPES = "!pto.ptr<f8E4M3FN, l0a>, !pto.ptr<f8E4M3FN, l0b>, !pto.ptr<f32, l0c>"
PLAIN = f"pto.mad_mx %l0a, %l0b, %l0c, %M, %N, %K disable_gemv : {_TYPES}, i64, i64, i64"
ACC = PLAIN + "\n    " + PLAIN.replace("pto.mad_mx ", "pto.mad_mx_acc ").replace(
    "disable_gemv", "disable_gemv nosat")
BIAS = (f"pto.mad_mx_bias %l0a, %l0b, %l0c, %bt, %M, %N, %K disable_gemv sat : {_TYPES}, "
        "!pto.ptr<f32, bt>, i64, i64, i64")


def _up(x: int, to: int) -> int:
    return -(-x // to) * to


def _boxes(x: np.ndarray, br: int, bc: int, rows_outer: bool, inner_col_major: bool
           ) -> np.ndarray:
    """The bytes of ``x`` (zero-padded to whole br x bc boxes) box by box: boxes in row-major
    order of the box grid (``rows_outer``) or column-major, each box's elements row-major or
    (``inner_col_major``) column-major."""
    r, c = _up(x.shape[0], br), _up(x.shape[1], bc)
    p = np.zeros((r, c), x.dtype)
    p[:x.shape[0], :x.shape[1]] = x
    g = p.reshape(r // br, br, c // bc, bc)                # [box row, i, box col, j]
    g = g.transpose(0, 2, 1, 3) if rows_outer else g.transpose(2, 0, 1, 3)
    if inner_col_major:
        g = g.transpose(0, 1, 3, 2)
    return np.ascontiguousarray(g).reshape(-1)


def _case(m: int, n: int, k: int):
    groups = k // 32
    a = RNG.integers(-8, 9, (m, k)).astype(E4)
    b = RNG.integers(-8, 9, (k, n)).astype(E4)
    sa = RNG.integers(122, 133, (m, groups)).astype(np.uint8)
    sb = RNG.integers(122, 133, (groups, n)).astype(np.uint8)
    bias = RNG.integers(-5, 6, n).astype(np.float32)
    # upstream's packings (tilelang_st tmatmul_bias_mx/gen_data.py): A NZ (16 x 32-byte
    # boxes, box columns outermost), B (k x n) NZ likewise (n whole 32-column blocks: a
    # ragged 1-byte transposing load is refused, its order unsettled); the
    # left scales ZZ (16 x 2 boxes, box rows outermost, rows inside), the right NN (2 x 16
    # boxes, box columns outermost, columns inside)
    packed = (_boxes(a, 16, 32, False, False), _boxes(b, 16, 32, False, False),
              _boxes(sa, 16, 2, True, False), _boxes(sb, 2, 16, False, True))
    return (a, b, sa, sb, bias), packed


def _reference(a, b, sa, sb, bias=None) -> np.ndarray:
    """The chapter's mx_product in f64 (exact here), rounded once to f32."""
    grp = np.arange(a.shape[1]) // 32
    av = a.astype(np.float64) * np.exp2(sa.astype(np.float64) - 127)[:, grp]
    bv = b.astype(np.float64) * np.exp2(sb.astype(np.float64) - 127)[grp, :]
    out = av @ bv
    if bias is not None:
        out = out + bias.astype(np.float64)
    return out.astype(np.float32)


def _kernel(m: int, n: int, k: int, packed, mad: str = PLAIN, l0_at: int = 0,
            full_group: bool = False) -> str:
    sub = {"M": m, "N": n, "K": k, "MP": _up(m, 16), "AB": packed[0].size,
           "BB": packed[1].size, "SAB": packed[2].size, "SBB": packed[3].size,
           "BIASB": 4 * _up(n, 8), "BIASU": _up(n, 8) * 4 // 32, "L0AT": l0_at, "MAD": mad,
           "SAX": ", %c1, %c1" if full_group else "",
           "SAT": ", i64, i64" if full_group else ""}
    text = KERNEL
    for key, val in sub.items():
        text = text.replace("{" + key + "}", str(val))
    return text


def _run(m, n, k, mad=PLAIN, l0_at=0, **kw):
    (a, b, sa, sb, bias), packed = _case(m, n, k)
    c = np.zeros((m, n), np.float32)
    bias_gm = np.zeros(_up(n, 8), np.float32)
    bias_gm[:n] = bias
    prog = pto.load(_kernel(m, n, k, packed, mad, l0_at), filename="mx.pto", target="a5")
    rep = prog.run("k", packed[0].view(E4), packed[1].view(E4), packed[2].view(E4),
                   packed[3].view(E4), bias_gm, c, target="a5", **kw)
    return (a, b, sa, sb, bias), c, rep


@pytest.mark.parametrize("m,n,k", [(16, 32, 64), (40, 64, 128), (33, 96, 192)])
@pytest.mark.parametrize("form", ["plain", "acc", "bias"])
def test_gm_to_l0_mx_scales_to_mad_mx_to_gm(m, n, k, form):
    mad = {"plain": PLAIN, "acc": ACC, "bias": BIAS}[form]
    (a, b, sa, sb, bias), c, _ = _run(m, n, k, mad, l0_at=4096 if form == "acc" else 0)
    want = _reference(a, b, sa, sb, bias if form == "bias" else None)
    if form == "acc":
        want = _reference(a, b, sa, sb) * np.float32(2)
    np.testing.assert_allclose(c, want, rtol=1e-6, atol=0)


def test_the_scales_matter_and_sit_at_the_l0_address_over_16():
    """A scale load into the scale buffer of another L0 address leaves these scales unread:
    the result changes (the scales are read where TGET_SCALE_ADDR puts them, l0 >> 4: A5
    utils.hpp's GetScaleAddr, SHIFT_MX_ADDR 4)."""
    from ptoisa.isa.micro import cube
    from ptoisa.vector.regs import Ptr, buffer_bytes

    with pto.target("a5") as mc:
        cube.MTE_L1_L0A_MX.impl(mc, Ptr("l1", 0, pto.dtypes.f8e4m3),
                                Ptr("l0a", 512, pto.dtypes.f8e4m3), 16, 64, 0, 0)
        # 16 x 2 scales of an L0A tile at 512: bytes [32, 64) of L0A_MX
        mc.touched = []
        cube.MTE_L1_L0B_MX.impl(mc, Ptr("l1", 64, pto.dtypes.f8e4m3),
                                Ptr("l0b", 1024, pto.dtypes.f8e4m3), 64, 16, 0, 0)
        assert ("in", "L1", None, 64, 96) in mc.touched
        assert ("out", "L0B_MX", None, 64, 96) in mc.touched
        mc.touched = None
        assert buffer_bytes(mc, "l0a_mx", 32, 32, "t", role=None).size == 32


def test_the_bytes_are_told_to_an_observer_and_priced():
    _, _, rep = _run(16, 32, 64, cycles=True)
    text = rep.explain()
    for op in ("MTE_L1_L0A_MX", "MTE_L1_L0B_MX", "MAD_MX"):
        lines = [ln for ln in text.splitlines() if ln.startswith(f"  {op} at ")]
        assert lines and all("[estimate:" in ln for ln in lines), (op, lines)
    from ptoisa.isa.micro import cube
    from ptoisa.vector.regs import Ptr

    f8 = pto.dtypes.f8e4m3
    with pto.target("a5") as mc:
        mc.touched = []
        cube.MAD_MX.impl(mc, Ptr("l0a", 0, f8), Ptr("l0b", 0, f8),
                         Ptr("l0c", 0, pto.dtypes.f32), 16, 32, 64, disable_gemv=True)
        told = {(r, s) for r, s, *_ in mc.touched}
        mc.touched = None
    assert {("in", "L0A"), ("in", "L0B"), ("in", "L0A_MX"), ("in", "L0B_MX"),
            ("out", "L0C")} <= told


def test_a_missing_flag_before_mad_mx_is_found_by_the_sanitizer():
    (a, b, sa, sb, bias), packed = _case(16, 32, 64)
    text = _kernel(16, 32, 64, packed).replace(
        '    pto.set_flag["PIPE_MTE1", "PIPE_M", "EVENT_ID0"]\n'
        '    pto.wait_flag["PIPE_MTE1", "PIPE_M", "EVENT_ID0"]\n', "")
    prog = pto.load(text, filename="mx.pto", target="a5")
    c = np.zeros((16, 32), np.float32)
    with pytest.raises(PtoError, match=r"(?s)race \(RAW\) on L0A_MX .*pto\.mad_mx .*"
                                       r"pto\.mte_l1_l0a_mx .*race \(RAW\) on L0B_MX"):
        prog.run("k", packed[0].view(E4), packed[1].view(E4), packed[2].view(E4),
                 packed[3].view(E4), np.zeros(32, np.float32), c, target="a5", sanitize=True)


@pytest.mark.parametrize("what,match", [
    ("k", r"multiples of 64"),
    ("full", r"full MX group"),
    ("gemv", r"m = 1 without disable_gemv"),
])
def test_what_is_not_executed_or_invalid_is_refused(what, match):
    (a, b, sa, sb, bias), packed = _case(16, 32, 64)
    mad = PLAIN
    if what == "k":
        mad = PLAIN.replace("%N, %K disable_gemv", "%N, %N disable_gemv")
    if what == "gemv":
        mad = PLAIN.replace("%M, %N, %K disable_gemv", "%c1, %N, %K")
    text = _kernel(16, 32, 64, packed, mad, full_group=what == "full")
    with pytest.raises(ExecutionError, match=match):
        pto.load(text, filename="mx.pto", target="a5").run(
            "k", packed[0].view(E4), packed[1].view(E4), packed[2].view(E4),
            packed[3].view(E4), np.zeros(32, np.float32), np.zeros((16, 32), np.float32),
            target="a5")


_MX_LOAD = """module attributes {pto.target_arch = "a5", pto.kernel_kind = #pto.kernel_kind<cube>} {
  func.func @k() attributes {pto.kernel} {
    %c0 = arith.constant 0 : i64
    %c2 = arith.constant 2 : i64
    %cneg = arith.constant -1 : i64
    %cs = arith.constant SRC : i64
    %cd = arith.constant DST : i64
    %src = pto.castptr %cs : i64 -> !pto.ptr<!pto.f8E8M0, l1>
    %dst = pto.castptr %cd : i64 -> !pto.ptr<f8E4M3FN, l0a>
    pto.mte_l1_l0a_mx %src, %dst, ARGS
      : !pto.ptr<!pto.f8E8M0, l1>, !pto.ptr<f8E4M3FN, l0a>, TYPES
    return
  }
}
"""


@pytest.mark.parametrize("src,dst,args,match", [
    (1, 0, "", r"LOAD.MX source address must be aligned to 32 bytes, got 1"),
    (0, 1, "", r"LOAD.MX destination address must be aligned to 16 bytes, got 1"),
    (0, 0, "%c0, %c0, %cneg, %c2, %c2, %c2", r"x_step must be non-negative"),
    (0, 0, "%c0, %c0, %c2, %c2, %c2, %cneg", r"dst_stride must be non-negative"),
    (64, 32, "", None),  # the valid neighbours
    (0, 0, "%c0, %c0, %c2, %c2, %c2, %c2", None),
])
def test_mx_load_values_known_at_compile_time(src, dst, args, match):
    """PTOAS checks the MX scale loads' constant addresses and full-group counts."""
    args = args or "%c0, %c0, %c0, %c0"
    text = (_MX_LOAD.replace("SRC", str(src)).replace("DST", str(dst)).replace("ARGS", args)
            .replace("TYPES", ", ".join(["i64"] * len(args.split(",")))))
    if match is None:
        pto.load(text, target="a5").check()
        return
    with pytest.raises(PtoError, match=match):
        pto.load(text, target="a5").check()


def _tile_mx(m: int, n: int, k: int, bias: bool) -> str:
    """pto.tmatmul.mx[.bias] on tiles at the L0 pointers' addresses, with f16 ``loc=scaling``
    scale tiles ([M, K/32] and [K/32, N]) at address 0, as upstream's tilelang_st
    tmatmul_bias_mx writes it: PTOAS's a5 TileLib drops those tiles and emits mad_mx."""
    mp, g2 = _up(m, 16), k // 32
    left = (f"!pto.tile_buf<loc=left, dtype=f8E4M3FN, rows={mp}, cols={k}, v_row={m}, "
            f"v_col={k}, blayout=col_major, slayout=row_major, fractal=512, pad=0>")
    right = (f"!pto.tile_buf<loc=right, dtype=f8E4M3FN, rows={k}, cols={n}, v_row={k}, "
             f"v_col={n}, blayout=row_major, slayout=col_major, fractal=512, pad=0>")
    sa = (f"!pto.tile_buf<loc=scaling, dtype=f16, rows={m}, cols={g2}, v_row={m}, "
          f"v_col={g2}, blayout=row_major, slayout=row_major, fractal=32, pad=0>")
    sb = (f"!pto.tile_buf<loc=scaling, dtype=f16, rows={g2}, cols={n}, v_row={g2}, "
          f"v_col={n}, blayout=col_major, slayout=col_major, fractal=32, pad=0>")
    bt = (f"!pto.tile_buf<loc=bias, dtype=f32, rows=1, cols={n}, v_row=1, v_col={n}, "
          "blayout=row_major, slayout=none_box, fractal=512, pad=0>")
    acc = (f"!pto.tile_buf<loc=acc, dtype=f32, rows={mp}, cols={n}, v_row={m}, v_col={n}, "
           "blayout=col_major, slayout=row_major, fractal=512, pad=0>")
    tiles = "\n    ".join(f"%t_{name} = pto.alloc_tile addr = %c0 : {ty}" for name, ty in
                          (("a", left), ("sa", sa), ("b", right), ("sb", sb), ("bt", bt),
                           ("c", acc)))
    if bias:
        op = (f"pto.tmatmul.mx.bias ins(%t_a, %t_sa, %t_b, %t_sb, %t_bt : {left}, {sa}, "
              f"{right}, {sb}, {bt}) outs(%t_c : {acc})")
    else:
        op = (f"pto.tmatmul.mx ins(%t_a, %t_sa, %t_b, %t_sb : {left}, {sa}, {right}, {sb}) "
              f"outs(%t_c : {acc})")
    return tiles + "\n    " + op


@pytest.mark.parametrize("m,n,k", [(16, 32, 64), (40, 64, 128)])
@pytest.mark.parametrize("bias", [False, True])
def test_tile_mx_with_f16_scaling_tiles_reads_the_scale_buffer(m, n, k, bias):
    """An f16 scale tile holds no codes the cube reads (PTOAS's TileLib templates ignore the
    scale operands; pto-isa's TMATMUL_MX_IMPL calls mad_mx(c, a, b)): the scales are those
    mte_l1_l0a_mx / mte_l1_l0b_mx left at the data tiles' addresses >> 4."""
    (a, b, sa, sb, bv), packed = _case(m, n, k)
    c = np.zeros((m, n), np.float32)
    bias_gm = np.zeros(_up(n, 8), np.float32)
    bias_gm[:n] = bv
    text = _kernel(m, n, k, packed, _tile_mx(m, n, k, bias))
    prog = pto.load(text, filename="mx.pto", target="a5")
    prog.run("k", packed[0].view(E4), packed[1].view(E4), packed[2].view(E4),
             packed[3].view(E4), bias_gm, c, target="a5")
    np.testing.assert_allclose(c, _reference(a, b, sa, sb, bv if bias else None), rtol=1e-6,
                               atol=0)


def test_tile_mx_with_f16_scaling_tiles_is_refused_by_name_on_cpu():
    from ptoisa.errors import RuntimeCheckError
    from ptoisa.isa.matrix import matmul
    from ptoisa.tile import Tile

    f16 = pto.dtypes.f16
    with pto.target("cpu") as mc:
        r = {"a": None, "sa": Tile.of(pto.tile_spec("scaling", f16, 16, 16), None)}
        with pytest.raises(RuntimeCheckError, match="aScaleMatrix has element type f16.*"
                           "no scale buffer"):
            matmul._scale_tile(mc, "tmatmul_mx", r, "sa", 16, 2)


def test_tile_mx_with_f16_scaling_tiles_and_an_unplaced_data_tile_is_refused_by_name():
    """The f16 scale tile's codes are at the data tile's address >> 4; an auto tile's address
    is PTOAS's memory planning's, which ptoisa does not model: refused naming the op."""
    from ptoisa.errors import NotExecutedYet
    from ptoisa.isa.matrix import matmul
    from ptoisa.tile import Tile

    f16, e4 = pto.dtypes.f16, pto.dtypes.f8e4m3
    with pto.target("a5") as mc:
        a = Tile.of(pto.tile_spec("left", e4, 16, 64), None)
        r = {"a": a, "sa": Tile.of(pto.tile_spec("scaling", f16, 16, 16), None)}
        with pytest.raises(NotExecutedYet, match="aScaleMatrix has element type f16.*memory "
                           "planning") as e:
            matmul._scale_tile(mc, "tmatmul_mx", r, "sa", 16, 2)
    assert e.value.op == "tmatmul_mx"

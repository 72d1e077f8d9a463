"""``pto.section.cube { }`` / ``pto.section.vector { }``: the body runs on the cores of its kind.

PTOAS lowers a section to ``#if defined(__DAV_CUBE__)`` / ``__DAV_VEC__``: a function whose
sections are of one kind is a kernel of that kind (each block one core, the body runs), one
with both kinds is a mixed kernel (each section on its own cores). Before, ptoisa skipped
section bodies without a word (exit 0, outputs untouched): every test here compares against
numpy, so a skipped body fails it.
"""

# ruff: noqa: E501 - the .pto programs keep PTOAS's one-op-per-line spelling
from __future__ import annotations

from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

import ptoisa as pto
from ptoisa.errors import ExecutionError, VerifyError
from ptoisa.sanitizer import Sanitizer

RNG = np.random.default_rng(11)
SHARED = Path(__file__).resolve().parents[3] / "shared"
FRONTENDS = SHARED / "corpus" / "frontends"
frontends = pytest.mark.skipif(not FRONTENDS.is_dir(),
                               reason=f"the frontends corpus is not at {FRONTENDS}")

_V = ("!pto.tile_buf<loc=vec, dtype={t}, rows={r}, cols={c}, v_row={r}, v_col={c}, "
      "blayout=row_major, slayout=none_box, fractal=512, pad=0>")

# a vector-only kernel: every block adds its 1x256 slice; the body is inside a section
_ADD = """
module {
  func.func @add(%x: !pto.ptr<f32>, %y: !pto.ptr<f32>, %z: !pto.ptr<f32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c256 = arith.constant 256 : index
    %b = pto.get_block_idx
    %bi = arith.index_cast %b : i64 to index
    %n = pto.get_block_num
    %ni = arith.index_cast %n : i64 to index
    %len = arith.muli %ni, %c256 : index
    %off = arith.muli %bi, %c256 : index
    pto.section.vector {
      %vx = pto.make_tensor_view %x, shape = [%len], strides = [%c1] : !pto.tensor_view<?xf32>
      %vy = pto.make_tensor_view %y, shape = [%len], strides = [%c1] : !pto.tensor_view<?xf32>
      %vz = pto.make_tensor_view %z, shape = [%len], strides = [%c1] : !pto.tensor_view<?xf32>
      %tx = pto.alloc_tile : T
      %ty = pto.alloc_tile : T
      %tz = pto.alloc_tile : T
      %px = pto.partition_view %vx, offsets = [%off], sizes = [%c256] : !pto.tensor_view<?xf32> -> !pto.partition_tensor_view<1x256xf32>
      %py = pto.partition_view %vy, offsets = [%off], sizes = [%c256] : !pto.tensor_view<?xf32> -> !pto.partition_tensor_view<1x256xf32>
      %pz = pto.partition_view %vz, offsets = [%off], sizes = [%c256] : !pto.tensor_view<?xf32> -> !pto.partition_tensor_view<1x256xf32>
      pto.tload ins(%px : !pto.partition_tensor_view<1x256xf32>) outs(%tx : T)
      pto.tload ins(%py : !pto.partition_tensor_view<1x256xf32>) outs(%ty : T)
      pto.tadd ins(%tx, %ty : T, T) outs(%tz : T)
      pto.tstore ins(%tz : T) outs(%pz : !pto.partition_tensor_view<1x256xf32>)
    }
    return
  }
}
""".replace("T", _V.format(t="f32", r=1, c=256))


@pytest.mark.parametrize("target", ["cpu", "a2a3", "a5"])
@pytest.mark.parametrize("blocks", [1, 4])
def test_vector_section_runs(target, blocks):
    x = RNG.standard_normal(256 * blocks).astype(np.float32)
    y = RNG.standard_normal(256 * blocks).astype(np.float32)
    z = np.zeros_like(x)
    prog = pto.load(_ADD, target=target)
    prog.add(x, y, z, blocks=blocks)
    np.testing.assert_array_equal(z, x + y)


def test_vector_section_lockstep_and_one_by_one_agree():
    x = RNG.standard_normal(1024).astype(np.float32)
    y = RNG.standard_normal(1024).astype(np.float32)
    outs = []
    for lockstep in (True, False):
        z = np.zeros_like(x)
        pto.load(_ADD).run("add", x, y, z, blocks=4, lockstep=lockstep)
        outs.append(z)
    np.testing.assert_array_equal(outs[0], x + y)
    np.testing.assert_array_equal(outs[1], x + y)


_L = ("!pto.tile_buf<loc={loc}, dtype={t}, rows=16, cols=16, v_row=16, v_col=16, "
      "blayout={bl}, slayout={sl}, fractal={fr}, pad=0>")
MAT = _L.format(loc="mat", t="f16", bl="col_major", sl="row_major", fr=512)
LEFT = _L.format(loc="left", t="f16", bl="row_major", sl="row_major", fr=512)
RIGHT = _L.format(loc="right", t="f16", bl="row_major", sl="col_major", fr=512)
ACC = _L.format(loc="acc", t="f32", bl="col_major", sl="row_major", fr=1024)
HALF = _V.format(t="f32", r=8, c=16)

# a mixed kernel: the cube section writes h = x @ w to GM and raises cross-core flag 0; each
# vector core waits for it and writes relu of its 8 rows of h to out
_MIXED = f"""
module {{
  func.func @ffn(%x: !pto.ptr<f16>, %w: !pto.ptr<f16>, %h: !pto.ptr<f32>, %o: !pto.ptr<f32>) {{
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c8 = arith.constant 8 : index
    %c16 = arith.constant 16 : index
    %vx = pto.make_tensor_view %x, shape = [%c16, %c16] strides = [%c16, %c1] : !pto.tensor_view<?x?xf16>
    %vw = pto.make_tensor_view %w, shape = [%c16, %c16] strides = [%c16, %c1] : !pto.tensor_view<?x?xf16>
    %vh = pto.make_tensor_view %h, shape = [%c16, %c16] strides = [%c16, %c1] : !pto.tensor_view<?x?xf32>
    %vo = pto.make_tensor_view %o, shape = [%c16, %c16] strides = [%c16, %c1] : !pto.tensor_view<?x?xf32>
    pto.section.cube {{
      %a = pto.alloc_tile : {MAT}
      %b = pto.alloc_tile : {MAT}
      %l = pto.alloc_tile : {LEFT}
      %r = pto.alloc_tile : {RIGHT}
      %acc = pto.alloc_tile : {ACC}
      %px = pto.partition_view %vx, offsets = [%c0, %c0], sizes = [%c16, %c16] : !pto.tensor_view<?x?xf16> -> !pto.partition_tensor_view<16x16xf16>
      %pw = pto.partition_view %vw, offsets = [%c0, %c0], sizes = [%c16, %c16] : !pto.tensor_view<?x?xf16> -> !pto.partition_tensor_view<16x16xf16>
      %ph = pto.partition_view %vh, offsets = [%c0, %c0], sizes = [%c16, %c16] : !pto.tensor_view<?x?xf32> -> !pto.partition_tensor_view<16x16xf32>
      pto.tload ins(%px : !pto.partition_tensor_view<16x16xf16>) outs(%a : {MAT})
      pto.tload ins(%pw : !pto.partition_tensor_view<16x16xf16>) outs(%b : {MAT})
      pto.tmov ins(%a : {MAT}) outs(%l : {LEFT})
      pto.tmov ins(%b : {MAT}) outs(%r : {RIGHT})
      pto.tmatmul ins(%l, %r : {LEFT}, {RIGHT}) outs(%acc : {ACC})
      pto.tstore ins(%acc : {ACC}) outs(%ph : !pto.partition_tensor_view<16x16xf32>)
      SET
    }}
    pto.section.vector {{
      WAIT
      %sb = pto.get_subblock_idx
      %sbi = arith.index_cast %sb : i64 to index
      %row = arith.muli %sbi, %c8 : index
      %t = pto.alloc_tile : {HALF}
      %u = pto.alloc_tile : {HALF}
      %ph = pto.partition_view %vh, offsets = [%row, %c0], sizes = [%c8, %c16] : !pto.tensor_view<?x?xf32> -> !pto.partition_tensor_view<8x16xf32>
      %po = pto.partition_view %vo, offsets = [%row, %c0], sizes = [%c8, %c16] : !pto.tensor_view<?x?xf32> -> !pto.partition_tensor_view<8x16xf32>
      pto.tload ins(%ph : !pto.partition_tensor_view<8x16xf32>) outs(%t : {HALF})
      pto.trelu ins(%t : {HALF}) outs(%u : {HALF})
      pto.tstore ins(%u : {HALF}) outs(%po : !pto.partition_tensor_view<8x16xf32>)
    }}
    return
  }}
}}
"""
_SET = "pto.sync.set #pto.pipe<PIPE_FIX>, 0"
_WAIT = "pto.sync.wait #pto.pipe<PIPE_MTE2>, 0"


def _ffn_inputs():
    x = RNG.standard_normal((16, 16)).astype(np.float16)
    w = RNG.standard_normal((16, 16)).astype(np.float16)
    return x, w, np.zeros((16, 16), np.float32), np.zeros((16, 16), np.float32)


def test_mixed_sections_run_each_on_its_cores():
    prog = pto.load(_MIXED.replace("SET", _SET).replace("WAIT", _WAIT), filename="ffn.pto")
    x, w, h, o = _ffn_inputs()
    prog.ffn(x, w, h, o, sanitize=True)  # raises on findings: the flag orders the cores
    ref = x.astype(np.float64) @ w.astype(np.float64)
    np.testing.assert_allclose(h, ref, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(o, np.maximum(h, 0))


def test_mixed_sections_without_a_flag_are_a_cross_core_race():
    prog = pto.load(_MIXED.replace("SET", "").replace("WAIT", ""), filename="ffn.pto")
    san = Sanitizer()
    prog.ffn(*_ffn_inputs(), sanitize=san)
    kinds = {(f.kind, f.site.op, f.other.op) for f in san.report.findings}
    assert ("race", "pto.tload", "pto.tstore") in kinds
    assert any("between cores" in str(f) for f in san.report.findings)


def test_section_simt_without_dimensions_is_refused_by_name():
    text = """
module {
  func.func @k() {
    pto.section.simt {
      %c0 = arith.constant 0 : index
    }
    return
  }
}
"""
    prog = pto.load(text, filename="simt.pto")  # PTOAS accepts it: so does check
    with pytest.raises(ExecutionError, match=r"simt.pto:4:5: .*'pto.section.simt' cannot be "
                                             r"executed by ptoisa yet without launch dim"):
        prog.k()


def test_nested_sections_are_rejected():
    text = """
module {
  func.func @k() {
    pto.section.vector {
      pto.section.cube {
      }
    }
    return
  }
}
"""
    with pytest.raises(VerifyError, match=r"n.pto:5:7: .*'pto.section.cube' nested in "
                                          r"'pto.section.vector'"):
        pto.load(text, filename="n.pto")


def test_empty_sections_are_taken_and_run_nothing():
    """``pto.section.vector { }`` (PTOAS's lit tests: several sections of one kind, an empty
    cube section beside uncovered code) is a section with nothing in it; a section without a
    body is not."""
    text = """
module {
  func.func @k(%x: !pto.ptr<f32>) attributes {pto.kernel} {
    pto.section.vector {
    }
    pto.section.vector {
    }
    return
  }
}
"""
    prog = pto.load(text, filename="e.pto", target="a5")
    x = np.ones(4, np.float32)
    prog.k(x)
    np.testing.assert_array_equal(x, 1)
    with pytest.raises(VerifyError, match=r"e.pto:4:5: .*'pto.section.vector' takes no "
                                          r"operands, has no results and one region"):
        pto.load(text.replace("pto.section.vector {\n    }\n    pto.section", "pto.section"
                              ).replace("vector {\n    }", "vector"), filename="e.pto")


@pytest.mark.parametrize("term", ["scf.yield", "scf.condition"])
def test_a_terminator_out_of_place_is_an_error_not_dropped(term):
    text = f"""
module {{
  func.func @k() {{
    pto.section.vector {{
      "{term}"() : () -> ()
    }}
    return
  }}
}}
"""
    with pytest.raises(VerifyError, match=rf"t.pto:5:7: .*'{term}' is not in a region of"):
        pto.load(text, filename="t.pto")


# ---- the frontends' kernels -----------------------------------------------------------------

_DSL_ADD = (FRONTENDS / "pto-dsl/.agent/skills/translate_cpp2py/references/example_translation/"
            "elementwise/add_dynamic_multicore/add/add.pto")
_GEMM_BF16 = FRONTENDS / "pto-kernels/bench/generated/gmm/grouped_matmul/b1_m128_k128_n256/kernel.pto"
_SOFTMAX_F16 = (FRONTENDS / "pto-kernels/bench/generated/attention/prompt_flash_attention/"
                "q64_k128_d64/stage2_softmax/kernel.pto")


@frontends
@pytest.mark.parametrize("blocks", [1, 4])
def test_pto_dsl_1d_add(blocks):
    n = 8192 * 6  # more tiles than blocks, and not a multiple of 4 blocks' share
    x = RNG.standard_normal(n).astype(np.float32)
    y = RNG.standard_normal(n).astype(np.float32)
    z = np.zeros(n, np.float32)
    pto.load(_DSL_ADD).vec_add_1d_dynamic(x, y, z, n, blocks=blocks)
    np.testing.assert_array_equal(z, x + y)


@frontends
@pytest.mark.parametrize("blocks", [1, 3, 8])
def test_pto_kernels_bf16_gemm(blocks):
    a = RNG.standard_normal((128, 128)).astype(ml_dtypes.bfloat16)
    b = RNG.standard_normal((128, 256)).astype(ml_dtypes.bfloat16)
    c = np.zeros((128, 256), ml_dtypes.bfloat16)
    pto.load(_GEMM_BF16).grouped_matmul_dense_bf16_bf16(c, a, b, 128, blocks=blocks)
    ref = (a.astype(np.float64) @ b.astype(np.float64)).astype(ml_dtypes.bfloat16)
    got = c.astype(np.float64)
    # f32 accumulation in a different order than f64, then one rounding to bf16: one ulp
    np.testing.assert_allclose(got, ref.astype(np.float64), rtol=2 ** -7, atol=1e-6)
    assert (got == ref.astype(np.float64)).mean() > 0.9


@frontends
@pytest.mark.parametrize("blocks", [1, 4])
def test_pto_kernels_f16_row_softmax(blocks):
    x = RNG.standard_normal((64, 128)).astype(np.float16)
    io = x.copy()
    pto.load(_SOFTMAX_F16).dense_attention_row_softmax(io, blocks=blocks)
    xf = x.astype(np.float64)
    e = np.exp(xf - xf.max(axis=1, keepdims=True))
    ref = e / e.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(io.astype(np.float64), ref, rtol=2e-3, atol=1e-4)


@pytest.mark.parametrize(("attrs", "dims", "why"), [
    ("", "32, -1, 1", "requires non-negative i32 launch dimensions"),
    ("attributes {pto.simt_entry}", "32, 2, 1",
     "must not appear inside a function marked with 'pto.simt_entry'"),
])
def test_simt_section_rules(attrs: str, dims: str, why: str) -> None:
    """PTOAS's rules of pto.section.simt (section_simt_verify_invalid_*.pto)."""
    text = f"""module attributes {{pto.target_arch = "a5"}} {{
  func.func @k() {attrs} {{
    pto.section.simt <<<{dims}>>> {{
    }}
    return
  }}
}}
"""
    with pytest.raises(VerifyError, match=why):
        pto.load(text, target="a5")

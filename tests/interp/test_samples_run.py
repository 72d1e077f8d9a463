"""Corpus sample kernels run (blocks=1) and match numpy references written from what each
program means (not recomputed with ptoisa)."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from interp_corpus import CORPUS, FILES, SKIP_REASON

from ptoisa.interp import Program, bridge
from ptoisa.ir import types as T
from ptoisa.text import parse

pytestmark = pytest.mark.skipif(not FILES, reason=SKIP_REASON)
SAMPLES = CORPUS / "test" / "samples"
RNG = np.random.default_rng(7)


def load(rel: str, target: str = "a2a3") -> Program:
    p = SAMPLES / rel
    prog = Program(parse(p.read_text(), str(p)), target)
    prog.check()
    return prog


def rand(*shape: int, dtype=np.float32) -> np.ndarray:
    if np.issubdtype(dtype, np.integer):
        return RNG.integers(-1000, 1000, size=shape).astype(dtype)
    return RNG.standard_normal(shape).astype(dtype)


def test_vector_addition():
    a, b, c = rand(32, 32), rand(32, 32), np.zeros((32, 32), np.float32)
    load("VectorAddition/vadd.pto").vec_add_kernel_2d(a, b, c)
    np.testing.assert_array_equal(c, a + b)


def test_concat_columns():
    a, b = rand(32, 16, dtype=np.int16), rand(32, 16, dtype=np.int16)
    c = np.zeros((32, 32), np.int16)
    load("Concat/concat-pto-ir.pto").concat_kernel_2d(a, b, c)
    np.testing.assert_array_equal(c, np.hstack([a, b]))


def test_control_flow_nested_loops_and_branches():
    x, y = rand(32, 32), np.zeros((32, 32), np.float32)
    load("ControlFlow/control_flow-pto-new.pto").control_flow_kernel_2d(x, y)
    want = x.copy()
    for i in range(2):  # outer: +1.25 on the first pass, -0.75 after; inner: j == 1 ? +0.5 : -0.25
        want += np.float32(1.25 if i == 0 else -0.75)
        for j in range(3):
            want += np.float32(0.5 if j == 1 else -0.25)
    np.testing.assert_array_equal(y, want)


@pytest.mark.parametrize(("kind", "n"), [("orchestration_example", 16),
                                         ("vector_example_dag", 128)])
def test_pyptoir_add_mul_add_scalar(kind, n):
    a, b = rand(n, n), rand(n, n)
    out = np.zeros((n, n), np.float32)
    load(f"PyPTOIRParser/{kind}_kernel_add.pto").kernel_add(a, b, out)
    np.testing.assert_array_equal(out, a + b)
    load(f"PyPTOIRParser/{kind}_kernel_mul.pto").kernel_mul(a, b, out)
    np.testing.assert_array_equal(out, a * b)
    load(f"PyPTOIRParser/{kind}_kernel_add_scalar.pto").kernel_add_scalar(a, 2.5, out)
    np.testing.assert_array_equal(out, a + np.float32(2.5))


def test_ffn_activation_dynamic_valid_region():
    h1, h2 = rand(32, 32) * 3, rand(32, 32)
    h = np.zeros((32, 32), np.float32)
    vr, vc = 20, 24
    load("FFN/ffn_act.pto").ffn_act_block(h1, h2, h, vr, vc)
    x = np.clip(h1, np.float32(-4.0001), np.float32(4.0001))
    gate = (x * np.float32(0.25) + np.float32(0.5)) + (x * x * x) * np.float32(-2.083333e-02)
    want = np.zeros_like(h)
    want[:vr, :vc] = (gate * h2)[:vr, :vc]
    np.testing.assert_allclose(h, want, rtol=1e-6, atol=1e-6)


def test_partition5d_copies_a_16x16x16_block():
    n = 16 * 1024 * 1024  # the 1x1x16x1024x1024 view; np.zeros pages in only what is touched
    src, dst = np.zeros(n, np.float32), np.zeros(n, np.float32)
    view = src.reshape(16, 1024, 1024)
    view[:, :16, :16] = rand(16, 16, 16)
    load("Partition5D/partition5d.pto").run_partition(src, dst)
    out = dst.reshape(16, 1024, 1024)
    np.testing.assert_array_equal(out[:, :16, :16], view[:, :16, :16])
    assert not out[:, 16:, :].any() and not out[:, :, 16:].any()


def _args(prog: Program, name: str) -> list:
    fn = prog.compiler(prog.target).function(name)
    args = []
    for _, t, _n in fn.args:
        if isinstance(t, T.PtrType):
            args.append(np.zeros(1 << 20, bridge.elem_dtype(t.dtype).np))
        elif isinstance(t, T.FloatType):
            args.append(0.5)
        elif isinstance(t, T.IntegerType) and t.width == 1:
            args.append(0)  # i1 holds 0 or 1 (16 was refused as out of range; it wrapped to 0)
        else:
            args.append(16)
    return args


RUNNABLE = [
    "ControlFlow/control_flow_dynamic_branch.pto", "ControlFlow/control_flow_mixed_pipe.pto",
    "ControlFlow/control_flow_nested_vec.pto", "FFN/ffn-pto-new.pto", "FFN/ffn_act_dynamic.pto",
    "FFN/ffn_fc1.pto", "FFN/ffn_fc1_splitk.pto", "FFN/ffn_fc2.pto", "FFN/ffn_full_tiled.pto",
    "PyPTOIRParser/paged_attention_example_kernel_init_inplace.pto",
    "PyPTOIRParser/paged_attention_example_kernel_online_update.pto",
    "PyPTOIRParser/paged_attention_example_kernel_softmax_prepare.pto",
    "Qwen3DecodeA3/qwen3_decode_incore_4.pto", "Qwen3DecodeA3/qwen3_decode_incore_6.pto",
    "Qwen3DecodeA3/qwen3_decode_incore_8.pto", "SCF/scf_for_break_like.pto",
    "SCF/scf_while_break.pto", "Sync/compensation_test.pto", "Sync/nested_loop_confliect.pto",
    "Sync/rar_optimization_test.pto", "Sync/test_auto_sync_tail_hint.pto",
    "Sync/test_if_else_tile_result.pto",
    "Sync/test_inject_sync_intra_pipe_barrier.pto",
]


@pytest.mark.parametrize("rel", RUNNABLE)
def test_sample_runs(rel):
    prog = load(rel)
    for name in prog.functions:
        prog.run(name, *_args(prog, name))


def test_dynamic_valid_shape_sample_overflows_its_tile():
    # its pto.section.vector body (skipped before sections ran) sets valid_col 32, then 33 on a
    # 32-column tile: the second iteration is an error at the alloc_tile, after the first ran
    from ptoisa.errors import PtoError

    x, y = rand(64), np.zeros(64, np.float32)
    with pytest.raises(PtoError, match=r"test_dynamic_valid_shape.pto:21:16: .*valid cols 33 "
                                       r"outside \[0, 32\]"):
        load("Sync/test_dynamic_valid_shape.pto").test_dynamic_valid_shape(x, y, 64)


# ---- cube kernels: f32 / bf16 inputs, f32 accumulation ------------------------------------------
# The cube forms exact products and accumulates in f32 (ptoisa: one rounding of the f64 sum);
# a numpy f64 reference differs by the f32 rounding of a K-term sum: rtol 1e-5 for f32 inputs.

def _mm(*xs: np.ndarray) -> np.ndarray:
    out = xs[0].astype(np.float64)
    for x in xs[1:]:
        out = out @ x.astype(np.float64)
    return out


@pytest.mark.parametrize("rel", ["MatMul/0.pto", "MatMul/tmatmulk.pto"])
@pytest.mark.parametrize("with_bias", [False, True])
def test_matmul_split_k_with_optional_bias(rel, with_bias):
    # C(32x32) = A(32x256) @ B(256x32) over 8 K-steps of 32 (+ bias row when %arg4)
    a, b, bias = rand(32, 256), rand(256, 32), rand(1, 32)
    c = np.zeros((32, 32), np.float32)
    load(rel).RunTMATMULSplitK(c, a, b, bias, int(with_bias))
    want = _mm(a, b) + (bias.astype(np.float64) if with_bias else 0.0)
    np.testing.assert_allclose(c, want, rtol=1e-5, atol=1e-4)


def test_ffn_fc1_two_projections():
    x, w1, w3 = rand(32, 32), rand(32, 32), rand(32, 32)
    h1, h2 = np.zeros((32, 32), np.float32), np.zeros((32, 32), np.float32)
    load("FFN/ffn_fc1.pto").ffn_fc1_block(x, w1, w3, h1, h2)
    np.testing.assert_allclose(h1, _mm(x, w1), rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(h2, _mm(x, w3), rtol=1e-5, atol=1e-4)


def test_ffn_fc1_split_k():
    x, w1, w3 = rand(32, 128), rand(128, 32), rand(128, 32)
    h1, h2 = np.zeros((32, 32), np.float32), np.zeros((32, 32), np.float32)
    load("FFN/ffn_fc1_splitk.pto").ffn_fc1_splitk_block(x, w1, w3, h1, h2)
    np.testing.assert_allclose(h1, _mm(x, w1), rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(h2, _mm(x, w3), rtol=1e-5, atol=1e-4)


def test_ffn_fc2():
    h, w2 = rand(32, 32), rand(32, 32)
    out = np.zeros((32, 32), np.float32)
    load("FFN/ffn_fc2.pto").ffn_fc2_block(h, w2, out)
    np.testing.assert_allclose(out, _mm(h, w2), rtol=1e-5, atol=1e-4)


def _gate(h1: np.ndarray, power: int) -> np.ndarray:
    """The kernels' polynomial SiLU stand-in on x = clamp(h1, +-4.0001):
    0.25 x + 0.5 - x^power / 48 (f64 reference)."""
    x = np.clip(h1.astype(np.float64), -4.0001, 4.0001)
    return 0.25 * x + 0.5 + (-2.083333e-02) * x ** power


@pytest.mark.parametrize(("vr", "vc"), [(32, 32), (20, 24)])
def test_ffn_swiglu_block(vr, vc):
    # h1 = x @ w1, h2 = x @ w3 (32x32); h = gate3(h1) * h2 over the vr x vc valid region of the
    # vector tiles (the rest of h stays as it was: 0); out = h @ w2
    x, w1, w3, w2 = (rand(32, 32) * 0.25 for _ in range(4))
    h1, h2, h, out = (np.zeros((32, 32), np.float32) for _ in range(4))
    load("FFN/ffn-pto-new.pto").ffn_swiglu_block(x, w1, w3, w2, h1, h2, h, out, vr, vc)
    r1, r3 = _mm(x, w1), _mm(x, w3)
    np.testing.assert_allclose(h1, r1, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(h2, r3, rtol=1e-5, atol=1e-5)
    rh = np.zeros((32, 32))
    rh[:vr, :vc] = (_gate(r1, 3) * r3)[:vr, :vc]
    np.testing.assert_allclose(h, rh, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(out, _mm(rh, w2), rtol=1e-4, atol=1e-4)


def test_ffn_full_tiled():
    # FC1 split-K (X 32x128 @ W1/W3 128x32), act = gate5(h1) * h2, y = act @ W2 (32x32)
    x, w1, w3, w2 = rand(32, 128) * 0.25, rand(128, 32) * 0.25, rand(128, 32) * 0.25, rand(32, 32)
    h1, h2, act, y = (np.zeros((32, 32), np.float32) for _ in range(4))
    load("FFN/ffn_full_tiled.pto").ffn_full_tiled_block(x, w1, w3, w2, h1, h2, act, y)
    r1, r3 = _mm(x, w1), _mm(x, w3)
    np.testing.assert_allclose(h1, r1, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(h2, r3, rtol=1e-5, atol=1e-5)
    ra = _gate(r1, 5) * r3
    np.testing.assert_allclose(act, ra, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(y, _mm(ra, w2), rtol=1e-4, atol=1e-4)


def _bf16(*shape: int) -> np.ndarray:
    return rand(*shape).astype(ml_dtypes.bfloat16)


def test_paged_attention_qk_matmul():
    # S(16x128) = Q(16x128) @ K^T: the K view is column-major over a 128x128 row-per-key buffer
    q, k = _bf16(16, 128), _bf16(128, 128)
    s = np.zeros((16, 128), np.float32)
    load("PyPTOIRParser/paged_attention_example_kernel_qk_matmul.pto").kernel_qk_matmul(q, k, s)
    np.testing.assert_allclose(s, _mm(q, k.T), rtol=1e-5, atol=1e-4)


def test_paged_attention_pv_matmul():
    p, v = _bf16(16, 128), _bf16(128, 128)
    o = np.zeros((16, 128), np.float32)
    load("PyPTOIRParser/paged_attention_example_kernel_pv_matmul.pto").kernel_pv_matmul(p, v, o)
    np.testing.assert_allclose(o, _mm(p, v), rtol=1e-5, atol=1e-4)


# ---- Qwen3 decode (A3) projections: bf16 activations x bf16 weights, f32 accumulation ----------
# Full-size GM views (8192 x 25600 weights); only the column band a block reads is filled
# (np.zeros pages in only what is touched).

def test_qwen3_decode_gate_projection():
    # incore_12: gate(16x256) = post_norm(16x8192) @ w_gate[:, c0:c0+256], K in 64 steps of 128
    c0 = 512
    x = _bf16(16, 8192)
    w = np.zeros((8192, 25600), ml_dtypes.bfloat16)
    w[:, c0:c0 + 256] = _bf16(8192, 256)
    out = np.zeros((16, 256), np.float32)
    load("Qwen3DecodeA3/qwen3_decode_incore_12.pto").qwen3_decode_incore_12(x, w, out, c0)
    np.testing.assert_allclose(out, _mm(x, w[:, c0:c0 + 256]), rtol=1e-5, atol=1e-3)


def test_qwen3_decode_q_projection():
    # incore_1: block b computes q_proj[:, 64 j : 64 j + 64] = normed @ wq[:, same] for the four
    # output blocks j = 4 b + ob (j < 128), K in 16 steps of 512
    b = 3
    cols = slice(256 * b, 256 * b + 256)
    x = _bf16(16, 8192)
    w = np.zeros((8192, 8192), ml_dtypes.bfloat16)
    w[:, cols] = _bf16(8192, 256)
    q = np.zeros((16, 8192), np.float32)
    load("Qwen3DecodeA3/qwen3_decode_incore_1.pto").qwen3_decode_incore_1(x, q, w, 0, b)
    np.testing.assert_allclose(q[:, cols], _mm(x, w[:, cols]), rtol=1e-5, atol=1e-3)
    q[:, cols] = 0
    assert not q.any()

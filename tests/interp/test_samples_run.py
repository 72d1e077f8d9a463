"""Corpus sample kernels run (blocks=1) and match numpy references written from what each
program means (not recomputed with ptoisa)."""

from __future__ import annotations

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
    "Sync/test_dynamic_valid_shape.pto", "Sync/test_if_else_tile_result.pto",
    "Sync/test_inject_sync_intra_pipe_barrier.pto",
]


@pytest.mark.parametrize("rel", RUNNABLE)
def test_sample_runs(rel):
    prog = load(rel)
    for name in prog.functions:
        prog.run(name, *_args(prog, name))

"""Mixed cube + vector ``.pto`` programs run: the corpus's tpush/tpop samples that PTOAS accepts,
the TPushTPop samples with their host code's inputs (A = I, B = ones ... from main.cpp) plus
random ones, frontend pipes, cross-core flags, lockstep over blocks.

References are numpy one-liners of what each program means; programs whose cores pop from a
pipe nothing pushes to are expected to end in a deadlock report naming every core's pop.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
from interp_corpus import CORPUS, FILES, SKIP_REASON

from ptoisa.concurrent.streams import DeadlockError
from ptoisa.errors import ExecutionError, PtoError
from ptoisa.interp import Program
from ptoisa.text import parse

BASIC = CORPUS / "test" / "basic"
#: the TPushTPop samples (PTOAS test/samples/TPushTPop: kernel.pto + main.cpp per test); not in
#: every copy of the corpus, so also looked for in $PTOISA_TPUSHTPOP
TPT = Path(os.environ.get("PTOISA_TPUSHTPOP", CORPUS / "test" / "samples" / "TPushTPop"))
RNG = np.random.default_rng(5)

corpus = pytest.mark.skipif(not FILES, reason=SKIP_REASON)
samples = pytest.mark.skipif(not TPT.is_dir(), reason=f"TPushTPop samples not found at {TPT}")


def load(path: Path, target: str, text: str | None = None) -> Program:
    prog = Program(parse(text if text is not None else path.read_text(), str(path)), target)
    prog.check()
    return prog


def printed(fn) -> str:
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        fn()
    return buf.getvalue()


def tprints(text: str) -> list[np.ndarray]:
    """The tiles a run printed, as arrays (one per TPRINT)."""
    out = []
    for block in text.split("=== [TPRINT")[1:]:
        rows = [[float(v) for v in ln.split()] for ln in block.splitlines()[2:]
                if re.fullmatch(r"(\s*([-+]?(nan|inf)|[\d.eE+-]+))+\s*", ln) and ln.strip()]
        out.append(np.array(rows, np.float32))
    return out


def f32(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


def _mm(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return a.astype(np.float64) @ b.astype(np.float64)


# ---- the corpus's basic samples ----------------------------------------------------------------

@corpus
@pytest.mark.parametrize("identity", [True, False])
def test_roundtrip_nosplit_a5(identity):
    # vector: src -> cube (V2C); cube: src @ B -> vector (C2V); vector stores it. A5 runs the
    # no-split vector function on sub-block 0 only
    src = f32(16, 16)
    b = np.eye(16, dtype=np.float32) if identity else f32(16, 16)
    out = np.zeros((16, 16), np.float32)
    prog = load(BASIC / "test_tpush_tpop_roundtrip_nosplit_a5.pto", "a5")
    prog.test_tpush_tpop_roundtrip_nosplit_a5(src, b, out)
    np.testing.assert_allclose(out, _mm(src, b), rtol=1e-5, atol=1e-5)


@corpus
def test_dir_both_prints_the_product_halves():
    # the vector cores push a 16x16 tile each that nothing wrote (split 1 -> the 32x16 right
    # operand): it holds the poison pattern (NaN for f32), so the cube's A @ B pushed back split
    # by rows is NaN: each vector core prints an 8x16 block of NaN
    a = f32(16, 32)
    text = printed(lambda: load(BASIC / "tpush_tpop_dir_both.pto", "a2a3").run_mixed(
        "cube_bidir", "vector_bidir", cube_args=(a, np.zeros(512, np.float32))))
    tiles = tprints(text)
    assert len(tiles) == 2 and all(t.shape == (8, 16) and np.isnan(t).all() for t in tiles)


@corpus
@pytest.mark.parametrize(("rel", "target", "cube_args", "vector_args"), [
    ("tpush_tpop_frontend_lowering_a3.pto", "a2a3", "slot", "slot"),
    ("tpush_tpop_frontend_lowering_a5.pto", "a5", (), ()),
    ("tpush_tpop_frontend_nosplit_a5.pto", "a5", (), ()),
    ("tpush_tpop_emitc.pto", "a2a3", "slot0", "slot0"),
])
def test_frontend_samples_run(rel, target, cube_args, vector_args):
    slot = np.zeros(256, np.float32)
    args = {"slot": (slot,), "slot0": (slot, 0), (): ()}
    names = ("cube_push_gm", "vector_pop_gm") if "emitc" in rel else ("cube_kernel",
                                                                      "vector_kernel")
    load(BASIC / rel, target).run_mixed(*names, cube_args=args[cube_args],
                                        vector_args=args[vector_args])


@corpus
@pytest.mark.parametrize(("rel", "args", "lines"), [
    ("tpush_tpop_dynamic_validshape_a5.pto", (16, 32), (20, 42)),
    ("tpush_tpop_dynamic_validshape_default_a5.pto", (), (19, 40)),
])
def test_pops_without_pushes_deadlock_with_every_location(rel, args, lines):
    # both functions only pop: on the NPU every core would wait forever
    path = BASIC / rel
    with pytest.raises(DeadlockError) as ei:
        load(path, "a5").run_mixed("cube_kernel", "vector_kernel", cube_args=args,
                                   vector_args=args)
    msg = str(ei.value)
    assert f"AIC blocked in tpop at {path}:{lines[0]}" in msg
    for sub in (0, 1):
        assert f"AIV{sub} blocked in tpop at {path}:{lines[1]}" in msg


@corpus
def test_issue489_vector_alone_reports_its_pop():
    path = BASIC / "issue489_interleaved_tpop_tfree_a3.pto"
    with pytest.raises(ExecutionError, match=r"489_interleaved_tpop_tfree_a3.pto:19:5: .*tpop"):
        load(path, "a2a3").vector_pop_interleaved(np.zeros(256, np.float32), 0)


# ---- the TPushTPop samples, with the inputs of their main.cpp ----------------------------------

def _sample(name: str, target: str) -> Program:
    return load(TPT / name / "kernel.pto", target)


@samples
@pytest.mark.parametrize("target", ["a2a3", "a5"])
@pytest.mark.parametrize("host", [True, False])
def test_tpushtpop_test1_prints_the_product(target, host):
    # A = I, B = ones (main.cpp): every printed 8x16 half is 1.0; random A, B: (A @ B) halves
    a, b = (np.eye(16, dtype=np.float32), np.ones((16, 16), np.float32)) if host else \
        (f32(16, 16), f32(16, 16))
    text = printed(lambda: _sample("test1", target).matmul_tpush_tpop_print(a, b))
    tiles = tprints(text)
    want = _mm(a, b)
    assert len(tiles) == 2  # AIV0 then AIV1
    np.testing.assert_allclose(tiles[0], want[:8], atol=0.006)  # printed with 2 decimals
    np.testing.assert_allclose(tiles[1], want[8:], atol=0.006)


@samples
def test_tpushtpop_test2_loop_of_four_pushes():
    # B_i = (i + 1) * ones (main.cpp): AIV0 prints rows 0-7 of the four products, then AIV1
    a = np.eye(16, dtype=np.float32)
    b_all = np.concatenate([np.full((16, 16), i + 1, np.float32) for i in range(4)])
    tiles = tprints(printed(lambda: _sample("test2", "a5").matmul_tpush_tpop_loop4_print(
        a, b_all)))
    assert [float(t[0, 0]) for t in tiles] == [1, 2, 3, 4, 1, 2, 3, 4]


@samples
@pytest.mark.parametrize("name", ["a3/test1", "a3/test2"])
def test_tpushtpop_a3_gm_slot_samples(name):
    a, n = np.eye(16, dtype=np.float32), 1 if name.endswith("1") else 4
    b = np.concatenate([np.full((16, 16), i + 1, np.float32) for i in range(n)])
    slot = np.zeros(1 << 16, np.float32)
    prog = _sample(name, "a2a3")
    text = printed(lambda: getattr(prog, prog.entry)(a, b, slot))
    tiles = tprints(text)
    # split 0 on A2/A3: both vector cores receive the whole 16x16 product (IsNoSplit pipe)
    assert len(tiles) == 2 * n and all(t.shape == (16, 16) for t in tiles)
    assert [float(t[0, 0]) for t in tiles] == [i + 1 for i in range(n)] * 2


@samples
def test_tpushtpop_test3_round_trip():
    src = np.arange(256, dtype=np.float32).reshape(16, 16)  # main.cpp: src[i] = i, B = I
    tiles = tprints(printed(lambda: _sample("test3", "a5").round_trip_tpush_tpop_print(
        src, np.eye(16, dtype=np.float32))))
    assert len(tiles) == 1  # A5: the no-split vector function runs on sub-block 0 only
    np.testing.assert_array_equal(tiles[0], src)


@samples
def test_tpushtpop_test4_bf16_matmul_added_by_rows():
    # out[16x512] += lhs[16x64] @ rhs[64x512] in 4 column steps of 128; each vector core adds
    # its 8 rows (main.cpp's lhsValue / rhsValue patterns, and random)
    for lhs, rhs in (
        (np.fromfunction(lambda r, c: ((r * 17 + c * 29 + 3) % 11) - 5, (16, 64)),
         np.fromfunction(lambda r, c: ((r * 13 + c * 19 + 7) % 13) - 6, (64, 512))),
        (RNG.standard_normal((16, 64)), RNG.standard_normal((64, 512))),
    ):
        lhs, rhs = lhs.astype(ml_dtypes.bfloat16), rhs.astype(ml_dtypes.bfloat16)
        out = f32(16, 512)
        want = out + _mm(lhs, rhs)
        _sample("test4", "a5").scope3_incore_4_incore_0_tpush_tpop_add(out, lhs, rhs)
        np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-4)


@samples
def test_tpushtpop_test5_left_right_halves():
    # out[16x128] += lhs[16x64] @ rhs[64x128], split by columns. The sample places the 16x64
    # lhs at L1 byte 16384, inside the 32 KiB of the 64x128 f32 rhs at 0 (a port of test4's
    # bf16 layout); that overlap corrupts B on any machine, so the lhs is moved to 32768 here
    text = (TPT / "test5" / "kernel.pto").read_text()
    assert "%c16384_i64 = arith.constant 16384 : i64" in text
    fixed = text.replace("%c16384_i64 = arith.constant 16384 : i64",
                         "%c16384_i64 = arith.constant 32768 : i64")
    lhs = np.fromfunction(lambda r, c: ((r * 17 + c * 29 + 3) % 11) - 5, (16, 64))
    rhs = np.fromfunction(lambda r, c: ((r * 13 + c * 19 + 7) % 13) - 6, (64, 128))
    lhs, rhs = lhs.astype(np.float32), rhs.astype(np.float32)
    out = f32(16, 128)
    want = out + _mm(lhs, rhs)
    load(TPT / "test5" / "kernel.pto", "a5", fixed).tpush_tpop_left_right_add(out, lhs, rhs)
    np.testing.assert_allclose(out, want, rtol=1e-6, atol=1e-5)


# ---- programs of our own -----------------------------------------------------------------------

_T = ("!pto.tile_buf<loc={loc}, dtype=f32, rows={r}, cols={c}, v_row={r}, v_col={c}, "
      "blayout={bl}, slayout={sl}, fractal={fr}, pad=0>")


def _tb(loc: str, r: int, c: int) -> str:
    if loc == "vec":
        return _T.format(loc=loc, r=r, c=c, bl="row_major", sl="none_box", fr=512)
    return _T.format(loc=loc, r=r, c=c, bl="col_major", sl="row_major",
                     fr=1024 if loc == "acc" else 512)


def _depth_program(n: int) -> str:
    """The cube pushes n 8x16 tiles (tile i = x + i) through a one-direction pipe (8 slots)
    before the vector core pops any; sub-block 0 pops each and stores it at rows 8 i."""
    mat, vec = _tb("mat", 8, 16), _tb("vec", 8, 16)
    pv = "!pto.partition_tensor_view<8x16xf32>"
    tv = "!pto.tensor_view<?x?xf32>"
    cube_kind = "{pto.kernel_kind = #pto.kernel_kind<cube>}"
    vec_kind = "{pto.kernel_kind = #pto.kernel_kind<vector>}"
    bufs = "(c2v_consumer_buf = %buf : i32, v2c_consumer_buf = %z : i32)"
    return f"""
module {{
  func.func @main(%x: !pto.ptr<f32>, %out: !pto.ptr<f32>) attributes {{pto.entry}} {{
    func.call @cube(%x) : (!pto.ptr<f32>) -> ()
    func.call @vector(%out) : (!pto.ptr<f32>) -> ()
    return
  }}
  func.func private @cube(%x: !pto.ptr<f32>) attributes {cube_kind} {{
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c8 = arith.constant 8 : index
    %c16 = arith.constant 16 : index
    %cn = arith.constant {n} : index
    %buf = pto.import_reserved_buffer {{name = "c2v", peer_func = @vector}} -> i32
    %z = arith.constant 0 : i32
    pto.aic_initialize_pipe {{dir_mask = 1, slot_size = 512}} {bufs}
    %vx = pto.make_tensor_view %x, shape = [%c8, %c16], strides = [%c16, %c1]
      : {tv}
    %px = pto.partition_view %vx, offsets = [%c0, %c0], sizes = [%c8, %c16] : {tv} -> {pv}
    %t = pto.alloc_tile : {mat}
    scf.for %i = %c0 to %cn step %c1 {{
      pto.tload ins(%px : {pv}) outs(%t : {mat})
      pto.tpush_to_aiv(%t : {mat}) {{split = 0}}
    }}
    return
  }}
  func.func private @vector(%out: !pto.ptr<f32>) attributes {vec_kind} {{
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c8 = arith.constant 8 : index
    %c16 = arith.constant 16 : index
    %cn = arith.constant {n} : index
    %rows = arith.muli %cn, %c8 : index
    %buf = pto.reserve_buffer {{name = "c2v", size = 4096,
      location = #pto.address_space<vec>, auto = true}} -> i32
    %z = arith.constant 0 : i32
    pto.aiv_initialize_pipe {{dir_mask = 1, slot_size = 512}} {bufs}
    %vo = pto.make_tensor_view %out, shape = [%rows, %c16], strides = [%c16, %c1]
      : {tv}
    scf.for %i = %c0 to %cn step %c1 {{
      %r0 = arith.muli %i, %c8 : index
      %po = pto.partition_view %vo, offsets = [%r0, %c0], sizes = [%c8, %c16] : {tv} -> {pv}
      %t = pto.tpop_from_aic {{split = 0}} -> {vec}
      pto.tstore ins(%t : {vec}) outs(%po : {pv})
      pto.tfree_from_aic {{split = 0}}
    }}
    return
  }}
}}
"""


@pytest.mark.parametrize("n", [3, 8, 11])
def test_fifo_depth_in_pto(n):
    # 8 slots (dir_mask 1): the cube runs up to 8 pushes ahead of the pops (11: it waits for
    # freed slots); on a3 the vector function runs on both sub-blocks, each popping the whole
    # tile (split 0 everywhere: an IsNoSplit pipe)
    x = f32(8, 16)
    out = np.zeros((8 * n, 16), np.float32)
    load(Path("depth.pto"), "a2a3", _depth_program(n)).main(x, out)
    np.testing.assert_array_equal(out, np.tile(x, (n, 1)))


def _split_program(sb: str) -> str:
    """The cube pushes a 16x16 tile split up / down (split 1); each vector sub-block pops its
    8 rows naming itself with ``aiv_subblockid(%sb)`` (``sb``: how %sb is made) and stores
    them at rows 8 sb (tpush_tpop_aiv_subblockid_emitc's form)."""
    mat, vec = _tb("mat", 16, 16), _tb("vec", 8, 16)
    tv = "!pto.tensor_view<?x?xf32>"
    pv16, pv8 = ("!pto.partition_tensor_view<16x16xf32>", "!pto.partition_tensor_view<8x16xf32>")
    bufs = "(c2v_consumer_buf = %buf : i32, v2c_consumer_buf = %z : i32)"
    return f"""
module {{
  func.func @main(%x: !pto.ptr<f32>, %out: !pto.ptr<f32>) attributes {{pto.entry}} {{
    func.call @cube(%x) : (!pto.ptr<f32>) -> ()
    func.call @vector(%out) : (!pto.ptr<f32>) -> ()
    return
  }}
  func.func private @cube(%x: !pto.ptr<f32>)
      attributes {{pto.kernel_kind = #pto.kernel_kind<cube>}} {{
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c16 = arith.constant 16 : index
    %buf = pto.import_reserved_buffer {{name = "c2v", peer_func = @vector}} -> i32
    %z = arith.constant 0 : i32
    pto.aic_initialize_pipe {{dir_mask = 1, slot_size = 1024}} {bufs}
    %vx = pto.make_tensor_view %x, shape = [%c16, %c16], strides = [%c16, %c1] : {tv}
    %px = pto.partition_view %vx, offsets = [%c0, %c0], sizes = [%c16, %c16] : {tv} -> {pv16}
    %t = pto.alloc_tile : {mat}
    pto.tload ins(%px : {pv16}) outs(%t : {mat})
    pto.tpush_to_aiv(%t : {mat}) {{split = 1}}
    return
  }}
  func.func private @vector(%out: !pto.ptr<f32>)
      attributes {{pto.kernel_kind = #pto.kernel_kind<vector>}} {{
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c8 = arith.constant 8 : index
    %c16 = arith.constant 16 : index
    %buf = pto.reserve_buffer {{name = "c2v", size = 4096,
      location = #pto.address_space<vec>, auto = true}} -> i32
    %z = arith.constant 0 : i32
    pto.aiv_initialize_pipe {{dir_mask = 1, slot_size = 1024}} {bufs}
    %vo = pto.make_tensor_view %out, shape = [%c16, %c16], strides = [%c16, %c1] : {tv}
    %me = pto.get_subblock_idx
    %mi = arith.index_cast %me : i64 to index
    %r0 = arith.muli %mi, %c8 : index
    %po = pto.partition_view %vo, offsets = [%r0, %c0], sizes = [%c8, %c16] : {tv} -> {pv8}
    {sb}
    %t = pto.tpop_from_aic {{split = 1}} aiv_subblockid(%sb) -> {vec}
    pto.tstore ins(%t : {vec}) outs(%po : {pv8})
    pto.tfree_from_aic {{split = 1}}
    return
  }}
}}
"""


def test_a_pop_naming_its_subblock_runs_and_a_wrong_one_is_an_error():
    # aiv_subblockid(%id) names the receiving vector core (tpush_tpop_aiv_subblockid_emitc):
    # it is not a valid-shape operand; a value other than the running core's is refused, and
    # PTOAS takes it only on a split pipe entry
    x = f32(16, 16)
    out = np.zeros((16, 16), np.float32)
    load(Path("named.pto"), "a2a3", _split_program("%sb = pto.get_subblock_idx")).main(x, out)
    np.testing.assert_array_equal(out, x)
    wrong = _split_program("%sb = arith.constant 7 : i64")
    with pytest.raises(PtoError, match=r"aiv_subblockid\(7\) names another vector core"):
        load(Path("wrong.pto"), "a2a3", wrong).main(x, np.zeros((16, 16), np.float32))
    unsplit = _split_program("%sb = pto.get_subblock_idx").replace("{split = 1}",
                                                                    "{split = 0}")
    with pytest.raises(PtoError, match=r"expects 'aiv_subblockid' only when 'split' is 1, 2, "
                                       r"3, or 4"):
        load(Path("unsplit.pto"), "a2a3", unsplit)


def test_tile_arguments_of_a_cube_and_vector_launch():
    # each core that runs the function gets its own tile holding the array; the array gets
    # back the cube's tile or vector sub-block 0's. The cube pushes its Acc argument, each
    # vector sub-block pops it (split 0: the whole tile) and adds it to its own argument
    acc, vec = _tb("acc", 8, 16), _tb("vec", 8, 16)
    text = f"""
module {{
  func.func @cube(%a: {acc}) attributes {{pto.kernel_kind = #pto.kernel_kind<cube>}} {{
    %buf = pto.import_reserved_buffer {{name = "c2v", peer_func = @vector}} -> i32
    %z = arith.constant 0 : i32
    pto.aic_initialize_pipe {{dir_mask = 1, slot_size = 512}}
      (c2v_consumer_buf = %buf : i32, v2c_consumer_buf = %z : i32)
    pto.tpush_to_aiv(%a : {acc}) {{split = 0}}
    return
  }}
  func.func @vector(%w: {vec}) attributes {{pto.kernel_kind = #pto.kernel_kind<vector>}} {{
    %buf = pto.reserve_buffer {{name = "c2v", size = 4096,
      location = #pto.address_space<vec>, auto = true}} -> i32
    %z = arith.constant 0 : i32
    pto.aiv_initialize_pipe {{dir_mask = 1, slot_size = 512}}
      (c2v_consumer_buf = %buf : i32, v2c_consumer_buf = %z : i32)
    %t = pto.tpop_from_aic {{split = 0}} -> {vec}
    pto.tadd ins(%t, %w : {vec}, {vec}) outs(%w : {vec})
    pto.tfree_from_aic {{split = 0}}
    return
  }}
}}
"""
    a, w = f32(8, 16), f32(8, 16)
    w0 = w.copy()
    load(Path("tile_args.pto"), "a2a3", text).run_mixed("cube", "vector", cube_args=(a,),
                                                         vector_args=(w,))
    np.testing.assert_array_equal(w, w0 + a)


def test_tile_native_pop_and_free_name_the_tile():
    # pto.tpop(%tile, %pipe) / pto.tfree(%tile, %pipe) (pipe_tile_native.pto): the free names
    # the tile the slot was popped into; split 1 gives sub-block 0 the upper 8 rows
    acc, vec = _tb("acc", 16, 16), _tb("vec", 8, 16)
    gm = "memref<256xf32, #pto.address_space<gm>>"
    init = ("pto.initialize_l2g2l_pipe {dir_mask = 1, slot_size = 1024, slot_num = 8, "
            f"local_slot_num = 8, flag_base = 0}}(%gm : {gm}, %c : i32) -> !pto.pipe")
    text = f"""
module {{
  func.func @cube(%gm: {gm}, %c: i32, %a: {acc})
      attributes {{pto.kernel_kind = #pto.kernel_kind<cube>}} {{
    %pipe = {init}
    pto.tpush(%a, %pipe : {acc}, !pto.pipe) {{split = 1}}
    return
  }}
  func.func @vector(%gm: {gm}, %c: i32, %t: {vec})
      attributes {{pto.kernel_kind = #pto.kernel_kind<vector>}} {{
    %pipe = {init}
    pto.tpop(%t, %pipe : {vec}, !pto.pipe) {{split = 1}}
    pto.tfree(%t, %pipe : {vec}, !pto.pipe) {{split = 1}}
    return
  }}
}}
"""
    a, t = f32(16, 16), np.zeros((8, 16), np.float32)
    fifo = np.zeros(256 * 8, np.float32)
    load(Path("native.pto"), "a2a3", text).run_mixed(
        "cube", "vector", cube_args=(fifo, 0, a), vector_args=(fifo, 0, t))
    np.testing.assert_array_equal(t, a[:8])


def test_mixed_attention_lockstep_equals_block_by_block():
    path = Path(__file__).resolve().parents[2] / "examples" / "mixed_attention.pto"
    q, k, v = f32(3 * 16, 32), f32(3 * 64, 32), f32(3 * 64, 32)
    a, b = np.zeros((48, 32), np.float32), np.zeros((48, 32), np.float32)
    prog = load(path, "a2a3")
    prog.run("attention", q, k, v, a, blocks=3, lockstep=True)
    prog.run("attention", q, k, v, b, blocks=3, lockstep=False)
    np.testing.assert_array_equal(a, b)


_SYNC = """
module {
  func.func @entry() attributes {pto.entry} {
    func.call @cube() : () -> ()
    func.call @vec() : () -> ()
    return
  }
  func.func private @cube() attributes {pto.kernel_kind = #pto.kernel_kind<cube>} {
    pto.sync.wait #pto.pipe<PIPE_MTE2>, 1
    pto.sync.set #pto.pipe<PIPE_FIX>, 2
    return
  }
  func.func private @vec() attributes {pto.kernel_kind = #pto.kernel_kind<vector>} {
    pto.sync.set #pto.pipe<PIPE_MTE3>, 1
    pto.sync.wait #pto.pipe<PIPE_V>, 2
    WAIT_AGAIN
    return
  }
}
"""


def test_sync_set_wait_in_pto():
    ok = load(Path("sync.pto"), "a2a3", _SYNC.replace("WAIT_AGAIN", ""))
    ok.run("entry", blocks=2)
    bad = load(Path("sync.pto"), "a2a3",
               _SYNC.replace("WAIT_AGAIN", "pto.sync.wait #pto.pipe<PIPE_V>, 2"))
    with pytest.raises(DeadlockError) as ei:
        bad.run("entry")
    msg = str(ei.value)
    assert "AIC finished" in msg
    assert "AIV0 blocked in sync_wait at sync.pto:16" in msg
    assert "AIV1 blocked in sync_wait at sync.pto:16" in msg


@corpus
def test_cli_runs_a_cube_vector_pair(tmp_path, capsys):
    from ptoisa import cli

    # no entry: the module's one cube and one vector function run together
    assert cli.main(["run", str(BASIC / "tpush_tpop_frontend_lowering_a5.pto"),
                     "--target", "a5"]) == 0
    rc = cli.main(["run", str(BASIC / "tpush_tpop_dynamic_validshape_a5.pto"), "--target", "a5",
                   "--arg", "vr=16", "--arg", "vc=32"])
    err = capsys.readouterr().err
    assert rc != 0 and "deadlock" in err and "AIV1 blocked in tpop" in err
    # --entry CUBE+VECTOR, one --arg per name, shared by both functions
    assert cli.main(["run", str(BASIC / "tpush_tpop_dir_both.pto"), "--target", "a2a3",
                     "--entry", "cube_bidir+vector_bidir", "--arg", "gm_a=zeros:16x32:f32",
                     "--arg", "gm_b=zeros:16x32:f32", "--out", str(tmp_path)]) == 0
    assert len(tprints(capsys.readouterr().out)) == 2
    assert (tmp_path / "gm_a.npy").exists()

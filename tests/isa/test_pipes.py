"""TPUSH / TPOP / TFREE over a TPipe FIFO, and the fix-pipe quant registers of a pushed Acc tile.

References are written from the ISA pages (TPUSH.md, TPOP.md, TFREE.md, system/ops/TPUSH.md):
a FIFO of SlotNum slots, split halves per vector sub-block, numpy slicing for the halves.
"""

from __future__ import annotations

import numpy as np
import pytest

import ptoisa as pto
from ptoisa import Tile
from ptoisa.errors import ExecutionError, IllegalInstruction, PtoError
from ptoisa.isa.pipes import Direction, FixpipeParams, TPipe
from ptoisa.memory import is_poison

TPUSH, TPOP, TFREE = pto.isa.registry.REGISTRY["TPUSH"], pto.isa.registry.REGISTRY["TPOP"], \
    pto.isa.registry.REGISTRY["TFREE"]
SET_QUANT_SCALAR = pto.isa.registry.REGISTRY["SET_QUANT_SCALAR"]
SET_QUANT_VECTOR = pto.isa.registry.REGISTRY["SET_QUANT_VECTOR"]


def _vec(rows, cols, data=None, dtype="f32", loc="Vec"):
    t = Tile(loc, dtype, rows, cols)
    if data is not None:
        t.write(data)
    return t


def test_parse_cpp_type():
    p = TPipe.parse("pto::TPipe<'\\x13', '\\x03', 2048, 2, 2, true>")
    assert (p.flag_id, p.direction, p.slot_size, p.slot_num, p.local_slot_num,
            p.is_no_split) == (19, Direction.DIR_BOTH, 2048, 2, 2, True)
    q = TPipe.parse("TPipe<'\\v', '\\x01', 2048, 2>")
    assert (q.flag_id, q.direction, q.is_no_split) == (11, Direction.DIR_C2V, False)
    with pytest.raises(IllegalInstruction, match="SlotNum"):
        TPipe(0, 1, 64, 0)


def test_fifo_order_and_wraparound(machine):
    pipe = TPipe(0, Direction.DIR_C2V, 16 * 32 * 4, 2)
    src, dst = _vec(16, 32), _vec(16, 32)
    seen = []
    for k in range(5):
        src.write(np.full((16, 32), k, np.float32))
        TPUSH(pipe, src)
        TPOP(pipe, dst)
        seen.append(dst.numpy()[0, 0])
        TFREE(pipe)
    assert seen == [0, 1, 2, 3, 4]
    # two in flight, popped oldest first
    for k in (10, 11):
        src.write(np.full((16, 32), k, np.float32))
        TPUSH(pipe, src)
    TPOP(pipe, dst)
    assert dst.numpy()[0, 0] == 10
    TFREE(pipe)
    TPOP(pipe, dst)
    assert dst.numpy()[0, 0] == 11


def test_full_and_empty_fifo_deadlock(machine):
    pipe = TPipe(1, Direction.DIR_C2V, 256, 1)
    t = _vec(8, 8, np.arange(64, dtype=np.float32).reshape(8, 8))
    with pytest.raises(ExecutionError, match="no ready slot"):
        TPOP(pipe, _vec(8, 8))
    TPUSH(pipe, t)
    with pytest.raises(ExecutionError, match="slots .* are in use"):
        TPUSH(pipe, t)
    # a popped slot stays in use until TFREE
    TPOP(pipe, _vec(8, 8))
    with pytest.raises(ExecutionError, match="in use"):
        TPUSH(pipe, t)
    TFREE(pipe)
    TPUSH(pipe, t)


def test_slot_size_is_checked(machine):
    pipe = TPipe(2, Direction.DIR_C2V, 64, 2)
    with pytest.raises(PtoError, match="slot .* holds 64"):
        TPUSH(pipe, _vec(8, 8))


@pytest.mark.parametrize("split", ["TILE_UP_DOWN", "TILE_LEFT_RIGHT"])
def test_c2v_split_gives_each_sub_block_its_half(machine, split):
    full = np.arange(16 * 16, dtype=np.float32).reshape(16, 16)
    acc = _vec(16, 16, full, loc="Acc")
    pipe = TPipe(4, Direction.DIR_C2V, 512, 1)
    shape = (8, 16) if split == "TILE_UP_DOWN" else (16, 8)
    halves = [_vec(*shape), _vec(*shape)]
    TPUSH(pipe, acc, Split=split)
    for lane in (0, 1):
        TPOP(pipe, halves[lane], lane, Split=split)
    ref = (full[:8], full[8:]) if split == "TILE_UP_DOWN" else (full[:, :8], full[:, 8:])
    np.testing.assert_array_equal(halves[0].numpy(), ref[0])
    np.testing.assert_array_equal(halves[1].numpy(), ref[1])
    # one slot: recycled only after both sub-blocks freed it
    TFREE(pipe, 0, Split=split)
    with pytest.raises(ExecutionError, match="in use"):
        TPUSH(pipe, acc, Split=split)
    TFREE(pipe, 1, Split=split)
    TPUSH(pipe, acc, Split=split)


def test_v2c_split_assembles_both_halves(machine):
    pipe = TPipe(5, Direction.DIR_V2C, 2048, 2)
    top = _vec(8, 32, np.full((8, 32), 1, np.float32))
    bottom = _vec(8, 32, np.full((8, 32), 2, np.float32))
    mat = Tile("Mat", "f32", 16, 32)
    TPUSH(pipe, top, 0, Split="TILE_UP_DOWN")
    with pytest.raises(ExecutionError, match="no ready slot"):
        TPOP(pipe, mat, Split="TILE_UP_DOWN")  # half a slot is not ready
    TPUSH(pipe, bottom, 1, Split="TILE_UP_DOWN")
    TPOP(pipe, mat, Split="TILE_UP_DOWN")
    np.testing.assert_array_equal(mat.numpy(), np.repeat([[1.0], [2.0]], 8, axis=0)
                                  * np.ones((1, 32), np.float32))


def test_no_split_lanes(machine):
    data = np.arange(512, dtype=np.float32).reshape(16, 32)
    # IsNoSplit pipe: both vector sub-blocks receive the whole tile
    dual = TPipe(6, Direction.DIR_C2V, 2048, 2, 2, True)
    TPUSH(dual, _vec(16, 32, data, loc="Mat"))
    a, b = _vec(16, 32), _vec(16, 32)
    TPOP(dual, a, 0)
    TPOP(dual, b, 1)
    np.testing.assert_array_equal(a.numpy(), data)
    np.testing.assert_array_equal(b.numpy(), data)
    # single-lane pipe: AIV1's calls are no-ops
    single = TPipe(7, Direction.DIR_C2V, 2048, 2)
    TPUSH(single, _vec(16, 32, data, loc="Mat"))
    idle = _vec(16, 32)
    TPOP(single, idle, 1)
    TFREE(single, 1)
    assert is_poison(idle.numpy()).all()  # never written
    TPOP(single, a, 0)
    np.testing.assert_array_equal(a.numpy(), data)


def test_tfree_without_pop_discards_the_oldest_slot(machine):
    pipe = TPipe(2, Direction.DIR_C2V, 64, 4, 0)
    first, second = _vec(2, 8, np.ones((2, 8))), _vec(2, 8, np.full((2, 8), 7.0))
    out = _vec(2, 8)
    TPUSH(pipe, first)
    TFREE(pipe)
    TPUSH(pipe, second)
    TPOP(pipe, out)
    np.testing.assert_array_equal(out.numpy(), 7.0)


def test_dir_both_keeps_directions_apart(machine):
    pipe = TPipe(8, Direction.DIR_BOTH, 2048, 2)
    acc = _vec(16, 32, np.full((16, 32), 3.0), loc="Acc")
    vec = _vec(16, 32, np.full((16, 32), 9.0))
    TPUSH(pipe, vec)   # V2C
    TPUSH(pipe, acc)   # C2V
    got_vec, got_mat = _vec(16, 32), Tile("Mat", "f32", 16, 32)
    TPOP(pipe, got_vec)
    TPOP(pipe, got_mat)
    assert got_vec.numpy()[0, 0] == 3.0 and got_mat.numpy()[0, 0] == 9.0


def test_valid_region_only(machine):
    pipe = TPipe(9, Direction.DIR_C2V, 8192, 2)
    data = np.arange(128 * 128, dtype=np.int32).reshape(128, 128)
    acc = Tile("Acc", "i32", 128, 128, valid=(16, 128))
    acc.write(data[:16])
    dst = Tile("Vec", "i32", 16, 128)
    TPUSH(pipe, acc)
    TPOP(pipe, dst)
    np.testing.assert_array_equal(dst.numpy(), data[:16])


def test_fixpipe_scalar_and_vector_dequant(machine):
    rng = np.random.default_rng(1)
    x = rng.integers(-1000, 1000, (16, 16)).astype(np.int32)
    acc = Tile("Acc", "i32", 16, 16, "ColMajor", slayout="RowMajor", fractal=1024)
    acc.write(x)
    pipe = TPipe(0, Direction.DIR_C2V, 16 * 16 * 2, 2, 2, True)
    out = Tile("Vec", "f16", 16, 16)
    SET_QUANT_SCALAR(0.5, OutType="_Float16")
    TPUSH(pipe, acc, TConfig="FixpipeParams<LayoutMode_t::NZ2ND, DEQF16>")
    TPOP(pipe, out)
    np.testing.assert_array_equal(out.numpy(), (x * 0.5).astype(np.float16))
    TFREE(pipe)
    # vector: one word per column, the 19-bit scale in bits [13..31]: 2**(e-127) * (1 + m/1024)
    scales = np.exp2(np.arange(16) % 4 - 2).astype(np.float32)  # 0.25 .. 2
    words = (scales.view(np.uint32).astype(np.uint64) & np.uint64(0xFFFFE000))
    fp = Tile("Scaling", "ui64", 1, 16)
    fp.write(words.reshape(1, 16))
    SET_QUANT_VECTOR(fp)
    TPUSH(pipe, acc, TConfig=FixpipeParams("NZ2ND", "VDEQF16"))
    TPOP(pipe, out)
    np.testing.assert_array_equal(out.numpy(), (x * scales[None, :]).astype(np.float16))


def test_fixpipe_needs_the_register(machine):
    pipe = TPipe(0, Direction.DIR_C2V, 4096, 2)
    acc = Tile("Acc", "i32", 16, 16, "ColMajor", slayout="RowMajor", fractal=1024)
    with pytest.raises(PtoError, match="SET_QUANT_VECTOR"):
        TPUSH(pipe, acc, TConfig="FixpipeParams<LayoutMode_t::NZ2ND, VDEQF16>")


def test_illegal_uses(machine):
    pipe = TPipe(0, Direction.DIR_C2V, 4096, 2)
    with pytest.raises(PtoError, match="TPipe"):
        TPUSH("not a pipe", _vec(4, 8))
    with pytest.raises(IllegalInstruction, match="must be a"):
        TPOP(pipe, Tile("Left", "f16", 16, 16, "ColMajor", slayout="RowMajor"))
    with pytest.raises(PtoError, match="subBlockId"):
        TPOP(pipe, _vec(4, 8), 2)
    with pytest.raises(IllegalInstruction, match="Scaling"):
        SET_QUANT_VECTOR(Tile("Vec", "ui64", 1, 16))

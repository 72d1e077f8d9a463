"""Happens-before edges between the cores of a cluster (ptoisa.concurrent.edges): the sanitizer's
GM state
shared by the AIC and AIVs of a block, and the cycle model's consumer starting after its
producer on another core.

References: the race a program has or has not, by construction (a store on one core, a load of
the same bytes on another, with or without the flag, pipe or barrier between them); cycle
totals added up by hand from the cost table's rules (see each test).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

import ptoisa as pto
from ptoisa import Direction, GlobalTensor, Tile, TPipe
from ptoisa.sanitizer import Sanitizer

P = pto.Pipe
R, C = 16, 16
EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def _gm(arr: np.ndarray, rows: int, cols: int, offset: object = 0) -> GlobalTensor:
    n = arr.size
    return GlobalTensor(arr, (1, 1, 1, rows, cols), (n, n, n, arr.shape[-1], 1), offset=offset)


def _findings(kernel, *args, sync="auto", **kw):
    """The races between the cores of a block (the kernels here leave their intra-core
    flags out: ``sync="manual"`` would report those too)."""
    san = Sanitizer(sync=sync)
    pto.launch(kernel, *args, mixed=True, sanitize=san, **kw)
    return [f for f in san.report.findings if f.kind == "race" and "cores" in f.extra]


def _cube_store(src: GlobalTensor, dst: GlobalTensor) -> pto.Pipe:
    """The cube's copy of ``src`` to ``dst`` (GM), and the pipe its store runs on: A2/A3
    stores its L1 tile (MTE3); A5 stores no Mat tile (TSTORE.md), so the cube stores its
    accumulator, src @ I (exact in f32: one nonzero product per element), through FIX."""
    if "a5" not in pto.current().target.lineage:
        t = Tile("Mat", "f32", R, C)
        pto.TLOAD(t, src)
        pto.TSTORE(dst, t)
        return P.MTE3
    t = Tile("Mat", "f32", R, C, "ColMajor", None, "RowMajor")
    pto.TLOAD(t, src)
    eye = Tile("Mat", "f32", C, C, "ColMajor", None, "RowMajor")
    pto.TLOAD(eye, GlobalTensor(np.eye(C, dtype=np.float32)))
    left, right, acc = pto.TileLeft("f32", R, C), pto.TileRight("f32", C, C), \
        pto.TileAcc("f32", R, C)
    pto.TMOV(left, t)
    pto.TMOV(right, eye)
    pto.TMATMUL(acc, left, right)
    pto.TSTORE(dst, acc)
    return P.FIX


def _store_then_load(flag: bool, wait_pipe=P.MTE2):
    """AIC: x -> y (GM), by _cube_store. AIV k: its 8 rows of y -> UB -> its rows of out. With
    ``flag``: a cross-core flag from the AIC's store to the AIVs' loads."""

    def kernel(x, y, out):
        b = pto.get_block_idx()
        if pto.core_type() == "AIC":
            pipe = _cube_store(_gm(x, R, C, b * R * C), _gm(y, R, C, b * R * C))
            if flag:
                pto.SYNC_SET(pipe, 0)  # A2/A3 mode 2: both AIVs; A5: AIV0's id 0
                if "a5" in pto.current().target.lineage:
                    pto.SYNC_SET(pipe, 16)  # A5: AIV1's id 0
        else:
            off = b * R * C + pto.get_subblock_idx() * (R // 2) * C
            if flag:
                pto.SYNC_WAIT(wait_pipe, 0)
            v = Tile("Vec", "f32", R // 2, C)
            pto.TLOAD(v, _gm(y, R // 2, C, off))
            pto.TSTORE(_gm(out, R // 2, C, off), v)
    return kernel


def _xy(blocks: int = 1):
    x = np.random.default_rng(3).standard_normal((blocks, R, C)).astype(np.float32)
    return x, np.zeros_like(x), np.zeros_like(x)


# ---- the sanitizer ---------------------------------------------------------------------------

@pytest.mark.parametrize("lockstep", [True, False])
@pytest.mark.parametrize("target", ["a2a3", "a5"])
def test_gm_race_between_cube_and_vector_of_one_block(target, lockstep):
    x, y, out = _xy(2)
    found = _findings(_store_then_load(False), x, y, out, blocks=2, target=target,
                      lockstep=lockstep)
    assert len(found) == 1  # one pair of instructions (both AIVs, both blocks: deduplicated)
    f = found[0]
    assert f.hazard == "RAW" and f.space == "GM" and f.extra["cores"][0] == "AIC"
    assert "between cores" in f.message and "TLOAD (PIPE_MTE2) on AIV" in f.message
    pipe = "FIX" if target == "a5" else "MTE3"  # (the store's pipe: _cube_store)
    assert f"pto.SYNC_SET(pto.Pipe.{pipe}, 0) after TSTORE" in f.fix
    np.testing.assert_array_equal(out, x)  # the run still computes in program order


@pytest.mark.parametrize("lockstep", [True, False])
@pytest.mark.parametrize("target", ["a2a3", "a5"])
def test_cross_core_flag_orders_them(target, lockstep):
    # block by block, each block's cores share one GM state and blocks stay apart
    x, y, out = _xy(3)
    assert _findings(_store_then_load(True), x, y, out, blocks=3, target=target,
                     lockstep=lockstep) == []
    # manual sync: the flag fires once the store's pipe (MTE3; FIX on a5) drained
    assert _findings(_store_then_load(True), x, y, out, blocks=3, target=target,
                     lockstep=lockstep, sync="manual") == []


def test_a5_wait_holds_only_its_pipe():
    # A2/A3 wait_flag_dev stalls the whole core; A5 wait_intra_block(PIPE_V) holds PIPE_V only,
    # so the load on PIPE_MTE2 may still run before the cube's store
    x, y, out = _xy()
    kw = {"sync": "manual"}  # (auto-sync: the compiler would order the core after the wait)
    assert _findings(_store_then_load(True, P.V), x, y, out, target="a2a3", **kw) == []
    found = _findings(_store_then_load(True, P.V), x, y, out, target="a5", **kw)
    assert [f.hazard for f in found] == ["RAW"]
    assert _findings(_store_then_load(True), x, y, out, target="a5", **kw) == []


def test_flag_on_the_wrong_pipe_is_a_race_in_manual_mode():
    # sync.set on PIPE_S fires without waiting for the MTE3 store (ffts_cross_core_sync(pipe))
    def kernel(x, y, out):
        if pto.core_type() == "AIC":
            t = Tile("Mat", "f32", R, C)
            pto.TLOAD(t, _gm(x, R, C))
            pto.SET_FLAG(P.MTE2, P.MTE3, 0)
            pto.WAIT_FLAG(P.MTE2, P.MTE3, 0)
            pto.TSTORE(_gm(y, R, C), t)
            pto.SYNC_SET(P.S, 0)
        else:
            off = pto.get_subblock_idx() * (R // 2) * C
            pto.SYNC_WAIT(P.MTE2, 0)
            v = Tile("Vec", "f32", R // 2, C)
            pto.TLOAD(v, _gm(y, R // 2, C, off))
            pto.SET_FLAG(P.MTE2, P.MTE3, 0)
            pto.WAIT_FLAG(P.MTE2, P.MTE3, 0)
            pto.TSTORE(_gm(out, R // 2, C, off), v)

    x, y, out = _xy()
    found = _findings(kernel, x, y, out, target="a2a3", sync="manual")
    assert len(found) == 1 and found[0].extra["cores"] == ("AIC", "AIV0")


def _push_pop(push: bool):
    """AIC: x -> L1 -> y (GM), then (``push``) the L1 tile to the AIVs (split by rows). AIV:
    pop its half, read it on PIPE_V; load y (which the AIC stored) and store it to out."""
    pipe = TPipe(0, Direction.DIR_C2V, R * C * 4, 2)

    def kernel(x, y, out):
        sb = pto.get_subblock_idx()
        if pto.core_type() == "AIC":
            t = Tile("Mat", "f32", R, C)
            pto.TLOAD(t, _gm(x, R, C))
            pto.SET_FLAG(P.MTE2, P.MTE3, 0)
            pto.WAIT_FLAG(P.MTE2, P.MTE3, 0)
            pto.TSTORE(_gm(y, R, C), t)
            pto.SET_FLAG(P.MTE3, P.FIX, 0)
            pto.WAIT_FLAG(P.MTE3, P.FIX, 0)
            if push:
                pto.TPUSH(pipe, t, Split="TILE_UP_DOWN")
        else:
            h = Tile("Vec", "f32", R // 2, C)
            v = Tile("Vec", "f32", R // 2, C)
            if push:
                pto.TPOP(pipe, h, Split="TILE_UP_DOWN")
                pto.TFREE(pipe, Split="TILE_UP_DOWN")
            pto.TLOAD(v, _gm(y, R // 2, C, sb * (R // 2) * C))
            pto.SET_FLAG(P.MTE2, P.V, 0)
            pto.WAIT_FLAG(P.MTE2, P.V, 0)
            if push:
                pto.TADD(v, v, h)  # the popped tile
            pto.SET_FLAG(P.V, P.MTE3, 0)
            pto.WAIT_FLAG(P.V, P.MTE3, 0)
            pto.TSTORE(_gm(out, R // 2, C, sb * (R // 2) * C), v)
    return kernel


def test_tpush_tpop_orders_the_consumer_after_the_producer():
    x, y, out = _xy()
    found = _findings(_push_pop(False), x, y, out, target="a2a3", sync="manual")
    assert [(f.hazard, f.extra["cores"][0]) for f in found] == [("RAW", "AIC")]
    # the pop carries what the cube did before its push: the load of y is ordered, and the
    # popped tile is read (after the MTE2 -> V flag) without a finding
    assert _findings(_push_pop(True), x, y, out, target="a2a3", sync="manual") == []
    np.testing.assert_array_equal(out[0], 2 * x[0])


@pytest.mark.parametrize("slots", [1, 2])
def test_tfree_orders_the_push_that_reuses_the_slot(slots):
    # AIV k reads its rows of y, then pops and frees slot 0. The cube's second push reuses
    # slot 0's ring position only with one slot: only then is its later store of y ordered
    # after the vector cores' reads (WAR)
    pipe = TPipe(1, Direction.DIR_C2V, R * C * 4, slots)

    def kernel(x, y, out):
        if pto.core_type() == "AIC":
            t = Tile("Mat", "f32", R, C)
            pto.TLOAD(t, _gm(x, R, C))
            pto.TPUSH(pipe, t, Split="TILE_UP_DOWN")
            pto.TPUSH(pipe, t, Split="TILE_UP_DOWN")
            pto.TSTORE(_gm(y, R, C), t)
        else:
            off = pto.get_subblock_idx() * (R // 2) * C
            v = Tile("Vec", "f32", R // 2, C)
            pto.TLOAD(v, _gm(y, R // 2, C, off))
            for _ in range(2):
                pto.TPOP(pipe, v, Split="TILE_UP_DOWN")
                pto.TFREE(pipe, Split="TILE_UP_DOWN")
            pto.TSTORE(_gm(out, R // 2, C, off), v)

    x, y, out = _xy()
    found = _findings(kernel, x, y, out, target="a2a3")
    # (two slots: the cube's streams ran to the end first, so the race shows as the vector
    # load reading what the store wrote)
    assert [f.hazard for f in found] == ([] if slots == 1 else ["RAW"])


def test_syncall_orders_the_cores():
    def kernel(x, y, out, barrier):
        if pto.core_type() == "AIC":
            t = Tile("Mat", "f32", R, C)
            pto.TLOAD(t, _gm(x, R, C))
            pto.TSTORE(_gm(y, R, C), t)
        if barrier:
            pto.SYNCALL(CoreType="Mix")
        if pto.core_type() == "AIV":
            off = pto.get_subblock_idx() * (R // 2) * C
            v = Tile("Vec", "f32", R // 2, C)
            pto.TLOAD(v, _gm(y, R // 2, C, off))
            pto.TSTORE(_gm(out, R // 2, C, off), v)

    x, y, out = _xy()
    assert [f.hazard for f in _findings(kernel, x, y, out, False, target="a2a3")] == ["RAW"]
    assert _findings(kernel, x, y, out, True, target="a2a3") == []


@pytest.mark.parametrize("flag", [False, True])
def test_ffts_mode1_orders_the_vector_cores(flag):
    # AIV0 stores rows 0-7 of y; AIV1 loads them (mode 1: each AIV waits for both AIVs' sets)
    def kernel(x, y):
        if pto.core_type() == "AIV":
            sb = pto.get_subblock_idx()
            v = Tile("Vec", "f32", R // 2, C)
            if sb == 0:
                pto.TLOAD(v, _gm(x, R // 2, C))
                pto.TSTORE(_gm(y, R // 2, C), v)
            if flag:
                pto.SYNC_SET(P.MTE3, 1, FftsMode=1)
                pto.SYNC_WAIT(P.MTE2, 1)
            if sb == 1:
                pto.TLOAD(v, _gm(y, R // 2, C))

    x, y, _ = _xy()
    found = _findings(kernel, x, y, target="a2a3", sync="manual")
    assert [(f.hazard, f.extra["cores"]) for f in found] == \
        ([] if flag else [("RAW", ("AIV0", "AIV1"))])


def test_vector_push_orders_its_earlier_stores_for_the_cube():
    # V2C: the vector core's push signals from MTE3, after its store of y; the cube pops the
    # slot, then loads y
    pipe = TPipe(4, Direction.DIR_V2C, R * C * 4, 2)

    def kernel(x, y):
        if pto.core_type() == "AIC":
            pto.TPOP(pipe, Tile("Mat", "f32", R, C), Split="TILE_UP_DOWN")
            pto.TFREE(pipe, Split="TILE_UP_DOWN")
            pto.TLOAD(Tile("Mat", "f32", R, C), _gm(y, R, C))
        else:
            off = pto.get_subblock_idx() * (R // 2) * C
            v = Tile("Vec", "f32", R // 2, C)
            pto.TLOAD(v, _gm(x, R // 2, C, off))
            pto.SET_FLAG(P.MTE2, P.MTE3, 0)
            pto.WAIT_FLAG(P.MTE2, P.MTE3, 0)
            pto.TSTORE(_gm(y, R // 2, C, off), v)
            pto.SET_FLAG(P.MTE2, P.FIX, 0)
            pto.WAIT_FLAG(P.MTE2, P.FIX, 0)
            pto.TPUSH(pipe, v, Split="TILE_UP_DOWN")

    x, y, _ = _xy()
    assert _findings(kernel, x, y, target="a2a3", sync="manual") == []
    np.testing.assert_array_equal(y, x)


@pytest.mark.parametrize("own_rows", [False, True])
def test_vector_cores_storing_the_same_rows(own_rows):
    def kernel(x, out):
        if pto.core_type() == "AIV":
            off = pto.get_subblock_idx() * R * C if own_rows else 0
            v = Tile("Vec", "f32", R, C)
            pto.TLOAD(v, _gm(x, R, C))
            pto.TSTORE(_gm(out, R, C, off), v)

    x = np.ones((R, C), np.float32)
    found = _findings(kernel, x, np.zeros((2, R, C), np.float32), target="a2a3")
    if own_rows:
        assert found == []
    else:
        assert [(f.hazard, f.extra["cores"]) for f in found] == [("WAW", ("AIV0", "AIV1"))]
        assert "get_subblock_idx" in found[0].fix and "FftsMode=1" in found[0].fix


_MAT = ("!pto.tile_buf<loc=mat, dtype=f32, rows=16, cols=16, v_row=16, v_col=16, "
        "blayout=col_major, slayout=row_major, fractal=512, pad=0>")
_VEC = ("!pto.tile_buf<loc=vec, dtype=f32, rows=8, cols=16, v_row=8, v_col=16, "
        "blayout=row_major, slayout=none_box, fractal=512, pad=0>")
_TV = "!pto.tensor_view<?x?xf32>"
_P16, _P8 = "!pto.partition_tensor_view<16x16xf32>", "!pto.partition_tensor_view<8x16xf32>"
_PTR = "!pto.ptr<f32>"
_CUBE = "{pto.kernel_kind = #pto.kernel_kind<cube>}"
_VECK = "{pto.kernel_kind = #pto.kernel_kind<vector>}"
#: the cube stores x to y; each vector core loads its 8 rows of y and stores them to out
_PTO = f"""
module {{
  func.func @xcore(%x: {_PTR}, %y: {_PTR}, %out: {_PTR}) attributes {{pto.entry}} {{
    func.call @cube(%x, %y) : ({_PTR}, {_PTR}) -> ()
    func.call @vec(%y, %out) : ({_PTR}, {_PTR}) -> ()
    return
  }}
  func.func private @cube(%x: {_PTR}, %y: {_PTR}) attributes {_CUBE} {{
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c16 = arith.constant 16 : index
    %vx = pto.make_tensor_view %x, shape = [%c16, %c16], strides = [%c16, %c1] : {_TV}
    %vy = pto.make_tensor_view %y, shape = [%c16, %c16], strides = [%c16, %c1] : {_TV}
    %px = pto.partition_view %vx, offsets = [%c0, %c0], sizes = [%c16, %c16] : {_TV} -> {_P16}
    %py = pto.partition_view %vy, offsets = [%c0, %c0], sizes = [%c16, %c16] : {_TV} -> {_P16}
    %t = pto.alloc_tile : {_MAT}
    pto.tload ins(%px : {_P16}) outs(%t : {_MAT})
    pto.tstore ins(%t : {_MAT}) outs(%py : {_P16})
    SET
    return
  }}
  func.func private @vec(%y: {_PTR}, %out: {_PTR}) attributes {_VECK} {{
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c8 = arith.constant 8 : index
    %c16 = arith.constant 16 : index
    %sb = pto.get_subblock_idx
    %k = arith.index_cast %sb : i64 to index
    %r0 = arith.muli %k, %c8 : index
    %vy = pto.make_tensor_view %y, shape = [%c16, %c16], strides = [%c16, %c1] : {_TV}
    %vo = pto.make_tensor_view %out, shape = [%c16, %c16], strides = [%c16, %c1] : {_TV}
    %py = pto.partition_view %vy, offsets = [%r0, %c0], sizes = [%c8, %c16] : {_TV} -> {_P8}
    %po = pto.partition_view %vo, offsets = [%r0, %c0], sizes = [%c8, %c16] : {_TV} -> {_P8}
    %t = pto.alloc_tile : {_VEC}
    WAIT
    pto.tload ins(%py : {_P8}) outs(%t : {_VEC})
    pto.tstore ins(%t : {_VEC}) outs(%po : {_P8})
    return
  }}
}}
"""

_BUF = "v_row=16, v_col=16, blayout={}, slayout={}, fractal={}, pad=0>"
_LEFT = "!pto.tile_buf<loc=left, dtype=f32, rows=16, cols=16, " + _BUF.format(
    "col_major", "row_major", 512)
_RIGHT = "!pto.tile_buf<loc=right, dtype=f32, rows=16, cols=16, " + _BUF.format(
    "row_major", "col_major", 512)
_ACC = "!pto.tile_buf<loc=acc, dtype=f32, rows=16, cols=16, " + _BUF.format(
    "col_major", "row_major", 1024)
#: A5 stores no Mat tile (TSTORE.md): its cube stores its accumulator, x @ I (the identity
#: %e, exact in f32: one nonzero product per element), on PIPE_FIX
_A5_STORE = f"""\
    %ve = pto.make_tensor_view %e, shape = [%c16, %c16], strides = [%c16, %c1] : {_TV}
    %pe = pto.partition_view %ve, offsets = [%c0, %c0], sizes = [%c16, %c16] : {_TV} -> {_P16}
    %te = pto.alloc_tile : {_MAT}
    %l = pto.alloc_tile : {_LEFT}
    %r = pto.alloc_tile : {_RIGHT}
    %acc = pto.alloc_tile : {_ACC}
    pto.tload ins(%pe : {_P16}) outs(%te : {_MAT})
    pto.tmov ins(%t : {_MAT}) outs(%l : {_LEFT})
    pto.tmov ins(%te : {_MAT}) outs(%r : {_RIGHT})
    pto.tmatmul ins(%l, %r : {_LEFT}, {_RIGHT}) outs(%acc : {_ACC})
    pto.tstore ins(%acc : {_ACC}) outs(%py : {_P16})
"""


def _pto(target: str) -> str:
    """_PTO as ``target`` runs it: on A5 the cube stores through its Acc (_A5_STORE), the
    entry takes the identity as a fourth argument (_args)."""
    if target != "a5":
        return _PTO
    out = _PTO.replace(f"%out: {_PTR})", f"%out: {_PTR}, %e: {_PTR})", 1)
    out = out.replace(f"func.call @cube(%x, %y) : ({_PTR}, {_PTR})",
                      f"func.call @cube(%x, %y, %e) : ({_PTR}, {_PTR}, {_PTR})")
    out = out.replace(f"@cube(%x: {_PTR}, %y: {_PTR})", f"@cube(%x: {_PTR}, %y: {_PTR}, "
                      f"%e: {_PTR})")
    out = out.replace(f"    pto.tstore ins(%t : {_MAT}) outs(%py : {_P16})\n", _A5_STORE)
    assert out.count("%e") > 3 and "tmatmul" in out
    return out


def _args(target: str, x: np.ndarray, y: np.ndarray, out: np.ndarray) -> tuple:
    return (x, y, out) + ((np.eye(C, dtype=np.float32),) if target == "a5" else ())


def _store_pipe(target: str) -> str:
    """The pipe of the cube's store (what its cross-core set waits for)."""
    return "PIPE_FIX" if target == "a5" else "PIPE_MTE3"


@pytest.mark.parametrize("target", ["a2a3", "a5"])
def test_pto_sync_set_wait(target):
    # the program has no intra-core flags (auto-sync): cross-core races are reported all the
    # same, with the .pto spelling of the fix
    text, pipe = _pto(target), _store_pipe(target)
    x = np.arange(R * C, dtype=np.float32).reshape(R, C)
    san = Sanitizer()
    racy = text.replace("SET", "").replace("WAIT", "")
    pto.load(racy, target=target, filename="xcore.pto").xcore(
        *_args(target, x, np.zeros_like(x), np.zeros_like(x)), sanitize=san)
    (f,) = san.report.findings
    assert f.kind == "race" and f.site.op == "pto.tload" and f.other.op == "pto.tstore"
    assert f.fix.startswith(f"insert pto.sync.set #pto.pipe<{pipe}>, 0 after pto.tstore at "
                            "xcore.pto:")
    wait = "pto.sync.wait #pto.pipe<PIPE_MTE2>, 0"
    sets = f"pto.sync.set #pto.pipe<{pipe}>, 0" + (
        f"\n    pto.sync.set #pto.pipe<{pipe}>, 16" if target == "a5" else "")
    ok = text.replace("SET", sets).replace("WAIT", wait)
    y, out = np.zeros_like(x), np.zeros_like(x)
    pto.load(ok, target=target).xcore(*_args(target, x, y, out), sanitize=True)  # (findings raise)
    np.testing.assert_array_equal(out, x)
    # the cycle model: the vector cores' load waits for the cube's store (hand-added:
    # TLOAD of 1024 bytes 265 + 1024/128 = 273; the cube's TSTORE out of L1 265 + 1024/18.56
    # (upstream's L1_TO_GM, 32 GiB/s) = 320; SYNC_WAIT 1 cycle on PIPE_S, the load after it
    # 265 + 512/128 = 269, then the store, 269)
    if target == "a2a3":
        rep = pto.load(ok, target=target).xcore(x, y, out, cycles=True)
        assert rep.total == 273 + 320 + 269 + 269


def _attention():
    sys.path.insert(0, str(EXAMPLES))
    try:
        import mixed_attention as ma
    finally:
        sys.path.remove(str(EXAMPLES))
    return ma


def test_mixed_attention_is_clean_and_its_pops_wait_for_the_pushes():
    ma = _attention()
    q, k, v = ma.make_inputs(2)
    out = np.zeros((2, ma.M, ma.D), np.float32)

    def kernel(*a):
        (ma.cube if pto.core_type() == "AIC" else ma.vector)(*a)

    assert _findings(kernel, q, k, v, out, blocks=2, target="a2a3") == []
    assert ma.check(out, q, k, v)
    rep = pto.load(ma.PTO_FILE, target="a2a3").attention(q, k, v, out, blocks=2, cycles=True)
    pops = [s for s in rep.steps if s.op == "TPOP"]
    assert len(pops) == 3  # the cube's (P, both halves) and each vector core's (S)
    for s in pops:
        assert s.after and all(p.op == "TPUSH" and p.core != s.core for p in s.after)
        assert s.start >= max(p.end for p in s.after)
    cube_pop = next(s for s in pops if s.core == "AIC")
    assert len(cube_pop.after) == 2  # both vector cores' halves fill the slot it pops


@pytest.mark.parametrize("pto_file", [False, True])
def test_mixed_attention_script_sanitize_and_cycles(pto_file, capsys):
    ma = _attention()
    argv = ["--heads", "2", "--sanitize", "--cycles"] + (["--pto"] if pto_file else [])
    assert ma.main(argv) == 0
    out = capsys.readouterr().out
    assert "sanitizer: no findings" in out and "matches numpy" in out
    assert "cycles: " in out and "critical pipe" in out


# ---- the cycle model -------------------------------------------------------------------------

def test_push_pop_pipeline_total_hand_computed():
    # AIC: TPUSH of a 16x16 f32 Acc tile (FIX: 20 + 1024/128 = 28 cycles). AIV k: TPOP of its
    # 8x16 half (MTE2: 512/128 = 4), then TSTORE of it (a DMA: 265 + 512/128 = 269, after the
    # pop: auto-sync data dependence). The pop starts when the push completed: 28 + 4 + 269
    pipe = TPipe(2, Direction.DIR_C2V, R * C * 4, 2)

    def kernel(out):
        if pto.core_type() == "AIC":
            pto.TPUSH(pipe, pto.TileAcc(np.float32, R, C), Split="TILE_UP_DOWN")
        else:
            h = Tile("Vec", "f32", R // 2, C)
            pto.TPOP(pipe, h, Split="TILE_UP_DOWN")
            pto.TSTORE(_gm(out, R // 2, C, pto.get_subblock_idx() * (R // 2) * C), h)

    rep = pto.launch(kernel, np.zeros((R, C), np.float32), mixed=True, target="a2a3",
                     cycles=True)
    push = next(s for s in rep.steps if s.op == "TPUSH")
    assert push.cycles == 28
    for s in rep.steps:
        if s.op == "TPOP":
            assert (s.start, s.cycles) == (28, 4)
    assert rep.total == 28 + 4 + 269
    # the trace draws the edge from the AIC's FIX pipe to each AIV's MTE2 pipe
    ev = rep.trace_events()["traceEvents"]
    xs = [e for e in ev if e.get("cat") == "cross-core"]
    assert len(xs) == 4 and {e["ph"] for e in xs} == {"s", "f"}
    # at cycle 28; the trace's times are microseconds at 1.85 GHz (1850 cycles a us)
    assert all(abs(e["ts"] * 1850 - 28) < 1e-9 for e in xs)
    json.dumps(ev)


def test_one_slot_pipe_bounds_the_producer():
    # one slot: the second push waits until both vector cores freed the first slot, which
    # fires once their pop (PIPE_MTE2) is done: push 28, pop 4 (starts 28), free -> 32
    pipe = TPipe(3, Direction.DIR_C2V, R * C * 4, 1)

    def kernel():
        if pto.core_type() == "AIC":
            acc = pto.TileAcc(np.float32, R, C)
            pto.TPUSH(pipe, acc, Split="TILE_UP_DOWN")
            pto.TPUSH(pipe, acc, Split="TILE_UP_DOWN")
        else:
            h = Tile("Vec", "f32", R // 2, C)
            for _ in range(2):
                pto.TPOP(pipe, h, Split="TILE_UP_DOWN")
                pto.TFREE(pipe, Split="TILE_UP_DOWN")

    rep = pto.launch(kernel, mixed=True, target="a2a3", cycles=True)
    p1, p2 = (s for s in rep.steps if s.op == "TPUSH")
    assert (p1.start, p2.start) == (0, 32)
    assert rep.total == 32 + 28 + 4


def test_syncall_across_cores_cycles():
    # the vector cores leave the barrier when the cube arrives, after its load (265 + 8)
    def kernel(x):
        if pto.core_type() == "AIC":
            pto.TLOAD(Tile("Mat", "f32", R, C), _gm(x, R, C))
        pto.SYNCALL(CoreType="Mix")
        if pto.core_type() == "AIV":
            pto.TLOAD(Tile("Vec", "f32", R // 2, C), _gm(x, R // 2, C))

    rep = pto.launch(kernel, np.zeros((R, C), np.float32), mixed=True, target="a2a3",
                     cycles=True)
    loads = [s for s in rep.steps if s.op == "TLOAD" and s.core != "AIC"]
    assert [s.start for s in loads] == [273, 273]
    assert rep.total == 273 + 269


@pytest.mark.parametrize("target", ["a2a3", "a5"])
def test_named_intra_block_flags_are_the_cross_core_flags(target):
    # pto.set_intra_block / pto.wait_intra_block (the A5 names; PTOAS lowers them to the FFTS
    # sync on A2/A3) are SYNC_SET / SYNC_WAIT: the sanitizer sees the edge they make
    x = np.arange(R * C, dtype=np.float32).reshape(R, C)
    text, pipe = _pto(target), _store_pipe(target)
    sets = f"pto.set_intra_block <{pipe}>, 0" + (
        f"\n    pto.set_intra_block <{pipe}>, 16" if target == "a5" else "")
    ok = text.replace("SET", sets).replace("WAIT", "pto.wait_intra_block <PIPE_MTE2>, 0")
    y, out = np.zeros_like(x), np.zeros_like(x)
    pto.load(ok, target=target).xcore(*_args(target, x, y, out), sanitize=True)  # (raises)
    np.testing.assert_array_equal(out, x)
    san = Sanitizer()
    racy = text.replace("SET", sets).replace("WAIT", "")
    pto.load(racy, target=target).xcore(*_args(target, x, np.zeros_like(x), np.zeros_like(x)),
                                        sanitize=san)
    assert [f.kind for f in san.report.findings] == ["race"]

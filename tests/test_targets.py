"""A new target is one ``derive`` call: a throwaway variant of a5 whose Left tiles are ZZ
(``left_blayout="row_major"``, as on a2a3) behaves as that trait declares, like a5 in every
other respect (legality, results, a5's per-entry declarations through its lineage), and is
known by name to ``pto.target``, ``pto.launch`` and ``.pto`` runs."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import ptoisa as pto
from ptoisa import BLayout, Dyn, Tile, TileAcc, TileLeft, TileRight, TileType
from ptoisa.errors import IllegalInstruction, PtoError
from ptoisa.interp import bridge
from ptoisa.isa import REGISTRY
from ptoisa.memory import pop
from ptoisa.targets import get_target, register_target, unregister_target
from ptoisa.text import parse


@pytest.fixture
def a5x():  # type: ignore[no-untyped-def]
    t = register_target(get_target("a5").derive("a5x", traits={"left_blayout": "row_major"}))
    yield t
    unregister_target("a5x")


def _nz_left(dt: str, rows: int, cols: int) -> Tile:
    """A Left tile in NZ (ColMajor + RowMajor 512-byte boxes): a5's TileLeft."""
    return Tile(TileType.Left, dt, rows, cols, "ColMajor", None, "RowMajor", 512)


def _matmul(left: Tile) -> np.ndarray:
    a = np.arange(16 * 16, dtype=np.float32).reshape(16, 16) % 7 - 3
    b = np.arange(16 * 16, dtype=np.float32).reshape(16, 16) % 5 - 2
    right, acc = TileRight("f16", 16, 16), TileAcc("f32", 16, 16)
    left.write(a.astype(np.float16))
    right.write(b.astype(np.float16))
    pto.TMATMUL(acc, left, right)
    # small integers: every product and sum is exact in f16 inputs / f32 accumulation
    np.testing.assert_array_equal(acc.numpy(), a @ b)
    return acc.numpy()


# ---- (a) the changed trait governs what it says --------------------------------------------

def test_the_changed_trait_changes_tileleft_and_the_cube_rule(a5x) -> None:  # type: ignore[no-untyped-def]
    with pto.target("a5"):
        assert TileLeft("f16", 16, 16).spec.blayout is BLayout.ColMajor
        _matmul(_nz_left("f16", 16, 16))
    with pto.target("a5x"):
        left = TileLeft("f16", 16, 16)
        assert left.spec.layout_name == "ZZ"
        _matmul(left)
        with pytest.raises(IllegalInstruction, match=r"ZZ \(TileLeft on a5x: RowMajor"):
            pto.TMATMUL(TileAcc("f32", 16, 16), _nz_left("f16", 16, 16), TileRight("f16", 16, 16))


def test_pto_left_tiles_take_the_traits_layout(a5x) -> None:  # type: ignore[no-untyped-def]
    """PTOAS fixes the blayout of a ``loc=left`` tile per arch whatever the text writes."""
    text = ("module {\n  func.func @k() {\n    %t = pto.alloc_tile : !pto.tile_buf<loc=left, "
            "dtype=f16, rows=16, cols=16, v_row=16, v_col=16, blayout=col_major, "
            "slayout=row_major, fractal=512, pad=0>\n    return\n  }\n}\n")
    op = next(o for o in parse(text).walk() if o.name == "pto.alloc_tile")
    t = op.results[0].type
    assert bridge.tile_spec_of(t, "a5").blayout is BLayout.ColMajor
    assert bridge.tile_spec_of(t, "a5x").blayout is BLayout.RowMajor


# ---- (b) everything else is a5 ---------------------------------------------------------------

def test_everything_else_is_a5s(a5x) -> None:  # type: ignore[no-untyped-def]
    a5 = get_target("a5")
    assert a5x.legality == a5.legality and a5x.buffers == a5.buffers and a5x.plan == a5.plan
    diff = {k for k, v in dataclasses.asdict(a5x.traits).items()
            if v != getattr(a5.traits, k)}
    # a5's fit is of a5's hardware, not a5x's (Target.derive)
    assert diff == {"left_blayout", "costs_measured"}
    assert a5x.lineage == ("a5x", "a5")
    # the same uses are illegal, with the same message
    for tgt in ("a5", "a5x"):
        with pto.target(tgt), pytest.raises(IllegalInstruction,
                                            match=f"element type i32 is not supported on {tgt}"):
            pto.TEXP(*(Tile(TileType.Vec, "i32", 4, 16) for _ in range(2)))


def test_a5_per_entry_declarations_apply_through_the_lineage(a5x) -> None:  # type: ignore[no-untyped-def]
    """TTRANS declares ``impl_for={"a5": ...}`` (a5 transposes the static shape, not the valid
    region): a5x, derived from a5, runs it too."""
    ttrans = REGISTRY["TTRANS"]
    assert ttrans.on(a5x).impl is ttrans.on(get_target("a5")).impl is not ttrans.impl
    a = np.arange(8 * 8, dtype=np.float32).reshape(8, 8)
    out = {}
    for tgt in ("cpu", "a5", "a5x"):
        with pto.target(tgt):
            src = Tile(TileType.Vec, "f32", 8, 8, valid=(Dyn(4), Dyn(8))).load_numpy(a)
            dst = Tile(TileType.Vec, "f32", 8, 8, valid=(Dyn(8), Dyn(4)))
            pto.TTRANS(dst, src, Tile(TileType.Vec, "f32", 8, 8))
            out[tgt] = dst.numpy()
    np.testing.assert_array_equal(out["cpu"][:, :4], a[:4].T)  # cpu: the valid region
    np.testing.assert_array_equal(out["a5"], a.T)  # a5: the whole static shape
    np.testing.assert_array_equal(out["a5x"], a.T)


def _kernel(x: np.ndarray, y: np.ndarray) -> None:
    t = Tile(TileType.Vec, "f32", 16, 16)
    s = Tile(TileType.Vec, "f32", 16, 1, "ColMajor")
    g = pto.GlobalTensor(x, (1, 1, 1, 16, 16), (256, 256, 256, 16, 1))
    pto.TLOAD(t, g)
    pto.TADD(t, t, t)
    pto.TROWSUM(s, t, Tile(TileType.Vec, "f32", 16, 16))
    pto.TSTORE(pto.GlobalTensor(y, (1, 1, 1, 16, 1), (16, 16, 16, 1, 1)), s)


# ---- (c) known by name ---------------------------------------------------------------------

def test_pto_target_and_launch_by_name(a5x) -> None:  # type: ignore[no-untyped-def]
    m = pto.target("a5x")
    try:
        assert m.target is a5x
    finally:
        pop(m)
    x = (np.arange(256, dtype=np.float32) % 9).reshape(16, 16)
    ys = {}
    for tgt in ("a5", "a5x"):
        ys[tgt] = np.zeros((16, 1), np.float32)
        pto.launch(_kernel, x, ys[tgt], target=tgt)
    np.testing.assert_array_equal(ys["a5x"], 2 * x.sum(axis=1, keepdims=True))
    np.testing.assert_array_equal(ys["a5x"], ys["a5"])


T16 = ("!pto.tile_buf<loc=vec, dtype=f32, rows=16, cols=16, v_row=16, v_col=16, "
       "blayout=row_major, slayout=none_box, fractal=512, pad=0>")
PV = "!pto.partition_tensor_view<16x16xf32>"
TV = "!pto.tensor_view<?x?xf32>"
PROGRAM = f"""module {{
  func.func @k(%x: !pto.ptr<f32>, %y: !pto.ptr<f32>) {{
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c16 = arith.constant 16 : index
    %vx = pto.make_tensor_view %x, shape = [%c16, %c16], strides = [%c16, %c1] : {TV}
    %vy = pto.make_tensor_view %y, shape = [%c16, %c16], strides = [%c16, %c1] : {TV}
    %px = pto.partition_view %vx, offsets = [%c0, %c0], sizes = [%c16, %c16] : {TV} -> {PV}
    %py = pto.partition_view %vy, offsets = [%c0, %c0], sizes = [%c16, %c16] : {TV} -> {PV}
    %t = pto.alloc_tile : {T16}
    pto.tload ins(%px : {PV}) outs(%t : {T16})
    pto.tadd ins(%t, %t : {T16}, {T16}) outs(%t : {T16})
    pto.tstore ins(%t : {T16}) outs(%py : {PV})
    return
  }}
}}
"""


def test_pto_programs_run_on_the_new_target(a5x) -> None:  # type: ignore[no-untyped-def]
    x = (np.arange(256, dtype=np.float32) - 100).reshape(16, 16)
    y = np.zeros_like(x)
    pto.load(PROGRAM, target="a5x").k(x, y, target="a5x")
    np.testing.assert_array_equal(y, 2 * x)


def test_an_unregistered_target_is_unknown(a5x) -> None:  # type: ignore[no-untyped-def]
    unregister_target("a5x")
    with pytest.raises(PtoError, match="unknown target 'a5x'"):
        pto.target("a5x")

"""Arguments that are values, not memory, as ``Program.run`` takes them from Python
(``ptoisa/interp/value_args.py``): VMI vectors and masks, vector and predicate registers, and
tiles. A VMI unit function (as PTOAS's pto-test-opt runs the lit/vmi_new functions, returning
vregs) is callable with made-up lanes and returns its results; expectations are numpy."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import ptoisa
from ptoisa.errors import PtoError
from ptoisa.vector.logical import LMask, LVec
from ptoisa.vector.regs import Mask, VReg

V = "!pto.vmi.vreg<64xf32>"
VC = "!pto.vmi.vreg<64xf32, #pto.vmi.layout<contiguous>>"
M = "!pto.vmi.mask<64xpred>"
VMI = f"""module {{
  func.func @addcmp(%a: {V}, %b: {VC}) -> ({V}, {M}) {{
    %s = pto.vmi.addf %a, %b : {V}, {VC} -> {V}
    %m = pto.vmi.cmpf "olt", %a, %b : {V}, {VC} -> {M}
    return %s, %m : {V}, {M}
  }}
  func.func @sel(%m: {M}, %a: {V}, %b: {V}) -> {V} {{
    %r = pto.vmi.select %m, %a, %b : {M}, {V}, {V} -> {V}
    return %r : {V}
  }}
}}"""

R = "!pto.vreg<64xf32>"
VPTO = f"""module {{
  func.func @vadd(%a: {R}, %b: {R}, %m: !pto.mask<b32>) -> {R} {{
    %r = pto.vadd %a, %b, %m : {R}, {R}, !pto.mask<b32> -> {R}
    return %r : {R}
  }}
}}"""

T16 = "!pto.tile_buf<vec, 16x16xf32>"
TDYN = "!pto.tile_buf<loc=vec, dtype=f32, rows=16, cols=16, v_row=?, v_col=?, " \
       "blayout=row_major, slayout=none_box, fractal=512, pad=0>"
TILES = f"""module {{
  func.func @add(%a: {T16}, %b: {T16}, %d: {T16}) {{
    pto.tadd ins(%a, %b : {T16}, {T16}) outs(%d : {T16})
    return
  }}
  func.func @add_dyn(%a: {TDYN}, %d: {TDYN}) {{
    pto.tadd ins(%a, %a : {TDYN}, {TDYN}) outs(%d : {TDYN})
    return
  }}
}}"""


def lanes(seed: int, n: int = 64) -> np.ndarray:
    return np.random.default_rng(seed).uniform(-1, 1, n).astype(np.float32)


def test_a_vmi_unit_function_returns_its_vectors_and_masks():
    p = ptoisa.load(VMI, target="a5")
    a, b = lanes(1), lanes(2)
    s, m = p.addcmp(LVec(a), b)  # an LVec or the array of its lanes
    assert isinstance(s, LVec) and isinstance(m, LMask)
    np.testing.assert_array_equal(s.data, a + b)
    np.testing.assert_array_equal(m.bits, a < b)
    (r,) = p.sel(a < b, a, b)
    np.testing.assert_array_equal(r.data, np.where(a < b, a, b))


def test_a_corpus_vmi_function_converts_its_made_up_input():
    path = Path(__file__).parents[2] / "../shared/corpus/ptoas-main/test/lit/vmi_new" \
        / "vmi_vcvt_saturate_lower_to_legacy.pto"
    if not path.exists():
        pytest.skip("the PTOAS corpus is not beside the checkout")
    x = np.linspace(-3, 3, 64).astype(np.float32)
    (r,) = ptoisa.load(path.read_text(), target="a5").run("fpnarrow_sat", x)
    np.testing.assert_array_equal(r.data, x.astype(np.float16))


@pytest.mark.parametrize(("fn", "args", "said"), [
    ("sel", ("a", "a", "a"), "must have dtype bool"),
    ("sel", ("m", "short", "a"), "must have 64 lanes (shape (64,)), got shape (32,)"),
    ("sel", ("m", "f16", "a"), "must have dtype float32, got float16"),
    ("sel", ("m", "lvec32", "a"), "must be a vector of 64 x f32, got !pto.vmi.vreg<32xf32>"),
    ("sel", ("m", "list", "a"), "must be a numpy array of 64 lanes or a register value"),
    ("sel", ("lmask32", "a", "a"), "must be a mask of 64 lanes"),
])
def test_a_vmi_argument_of_another_type_is_refused_naming_it(fn, args, said):
    p = ptoisa.load(VMI, target="a5")
    a = lanes(1)
    vals = {"a": a, "m": a < 0, "short": a[:32], "f16": a.astype(np.float16),
            "lvec32": LVec(a[:32]), "list": list(a), "lmask32": LMask(np.ones(32, bool))}
    with pytest.raises(PtoError) as e:
        p.run(fn, *(vals[x] for x in args))
    assert said in str(e.value)
    assert "of @sel" in str(e.value)


def test_vector_and_predicate_registers_as_arguments_and_result():
    p = ptoisa.load(VPTO, target="a5")
    a, b = lanes(3), lanes(4)
    on = np.arange(64) % 3 == 0
    (r,) = p.vadd(a, VReg(b), on)
    assert isinstance(r, VReg)
    np.testing.assert_array_equal(r.data[on], (a + b)[on])
    (r2,) = p.vadd(a, b, Mask.of_lanes(on, "b32"))
    np.testing.assert_array_equal(r2.data, r.data)
    with pytest.raises(PtoError, match="predicate register of !pto.mask<b32>, got Mask"):
        p.vadd(a, b, Mask.of_lanes(np.ones(128, bool), "b16"))
    with pytest.raises(PtoError, match=r"must have 64 lanes \(shape \(64,\)\)"):
        p.vadd(a, b, np.ones(128, bool))


def test_tile_arguments_are_arrays_loaded_into_tiles_and_written_back():
    p = ptoisa.load(TILES, target="a2a3")
    a = np.random.default_rng(5).uniform(-1, 1, (16, 16)).astype(np.float32)
    b = np.random.default_rng(6).uniform(-1, 1, (16, 16)).astype(np.float32)
    d = np.zeros((16, 16), np.float32)
    assert p.add(a, b, d) == ()
    np.testing.assert_array_equal(d, a + b)
    # a ? valid region is the array's shape: only that block is computed and written back
    small = a[:8, :4].copy()
    out = np.full((8, 4), 7, np.float32)
    p.add_dyn(small, out)
    np.testing.assert_array_equal(out, small + small)


@pytest.mark.parametrize(("arg", "kw", "said"), [
    (np.zeros((16, 16), np.float16), {}, "must have dtype f32 (float32), got float16"),
    (np.zeros((8, 8), np.float32), {}, "is neither the tile (16x16) nor its valid region"),
    (np.zeros(256, np.float32), {}, "must be a 2-D array"),
    (np.zeros((16, 16), np.float32), {"blocks": 2}, "is one core's tile: run with blocks=1"),
])
def test_a_tile_argument_that_does_not_fit_is_refused(arg, kw, said):
    p = ptoisa.load(TILES, target="a2a3")
    ok = np.zeros((16, 16), np.float32)
    with pytest.raises(PtoError) as e:
        p.run("add", ok, ok, arg, **kw)
    assert said in str(e.value)


def test_a_tile_object_is_refused_with_what_to_pass():
    p = ptoisa.load(TILES, target="a2a3")
    ok = np.zeros((16, 16), np.float32)
    t = ptoisa.Tile(ptoisa.TileType.Vec, np.float32, 16, 16)
    with pytest.raises(PtoError, match="pass the tile's contents as a numpy array"):
        p.add(ok, ok, t)


L1 = """module attributes {pto.target_arch = "a5"} {
  func.func @fill(%dst: memref<?xui16, #pto.address_space<mat>>) attributes {KIND} {
    %c32 = arith.constant 32 : i64
    %c3 = arith.constant 3 : i64
    %c7 = arith.constant 7 : i64
    %c11 = arith.constant 11 : i64
    %v = arith.constant 4660 : i32
    pto.raw_fill_l1 %dst, %c32, %v, %c3, %c7, %c11 {fill_word_bits = 16 : i64}
      : memref<?xui16, #pto.address_space<mat>>, i64, i32, i64, i64, i64
    return
  }
}""".replace("KIND", "pto.kernel_kind = #pto.kernel_kind<cube>")


def test_an_on_chip_memref_of_a_dynamic_shape_is_a_pointer_into_its_buffer():
    from ptoisa import dtypes as D
    from ptoisa.vector.regs import Ptr

    p = ptoisa.load(L1, target="a5")
    assert p.fill(Ptr("mat", 0, D.dtype("ui16"))) == ()
    with pytest.raises(PtoError, match=r"must be a pointer into mat of ui16, got Ptr\(ub"):
        p.fill(Ptr("ub", 0, D.dtype("ui16")))


def test_a_tile_argument_of_a_cube_and_vector_launch_is_a_tile_of_each_core():
    text = f"""module {{
  func.func @c(%t: {T16}) attributes {{KIND<cube>}} {{
    return
  }}
  func.func @v(%x: !pto.ptr<f32>) attributes {{KIND<vector>}} {{
    return
  }}
}}""".replace("KIND", "pto.kernel_kind = #pto.kernel_kind")
    p = ptoisa.load(text)
    # (tests/interp/test_mixed_pto.py runs one that pushes, pops and writes back)
    t = np.arange(256, dtype=np.float32).reshape(16, 16)
    p.run_mixed("c", "v", cube_args=(t,), vector_args=(np.zeros(16, np.float32),))
    np.testing.assert_array_equal(t, np.arange(256, dtype=np.float32).reshape(16, 16))

"""One exception hierarchy; errors name the instruction, operand, expectation and finding."""

from __future__ import annotations

import numpy as np
import pytest

import ptoisa as pto
from ptoisa import GlobalTensor, Tile, TileType
from ptoisa.errors import SourceLoc


def test_hierarchy():
    assert issubclass(pto.UnsupportedType, pto.IllegalInstruction)
    for cls in (pto.ParseError, pto.VerifyError, pto.IllegalInstruction, pto.RuntimeCheckError,
                pto.PtoMemoryError, pto.ExecutionError):
        assert issubclass(cls, pto.PtoError)
    assert issubclass(pto.PtoError, Exception)


def test_render_with_op_and_location():
    e = pto.RuntimeCheckError("src valid rows 3 != dst valid rows 4", op="trowsum")
    assert str(e) == "trowsum: src valid rows 3 != dst valid rows 4"
    assert (e.op, e.message, e.loc) == ("trowsum", "src valid rows 3 != dst valid rows 4", None)
    loc = SourceLoc("k.pto", 14, 5, "    pto.trowsum ins(%a, %b) outs(%c)\n")
    located = e.with_loc(loc)
    assert type(located) is pto.RuntimeCheckError
    assert str(located) == ("k.pto:14:5: error: trowsum: src valid rows 3 != dst valid rows 4\n"
                            "    pto.trowsum ins(%a, %b) outs(%c)\n"
                            "    ^")
    assert str(e.with_loc(SourceLoc("k.pto", 1, 1))) == "k.pto:1:1: error: trowsum: src valid " \
                                                        "rows 3 != dst valid rows 4"


def test_plain_message_without_op():
    assert str(pto.PtoError("bad")) == "bad"


def test_eager_errors_carry_the_mnemonic(machine):
    d = Tile(TileType.Vec, "f32", 8, 8, valid=(8, 8))
    s = Tile(TileType.Vec, "f32", 8, 8, valid=(4, 8))
    with pytest.raises(pto.RuntimeCheckError) as ei:
        pto.TADD(d, s, d)
    assert ei.value.op == "tadd" and str(ei.value).startswith("tadd: src0 valid region 4x8")


def test_memory_errors_raised_inside_semantics_get_the_mnemonic():
    pto.target("a5", mode="manual")
    d = Tile(TileType.Vec, "f32", 8, 8)
    with pytest.raises(pto.PtoMemoryError) as ei:
        pto.TADD(d, d, d)
    assert ei.value.op == "tadd" and str(ei.value).startswith("tadd: tile (Vec f32 8x8 ND) has "
                                                              "no storage")


def test_unsupported_type_lists_the_supported_ones():
    pto.target("a2a3")
    t = Tile(TileType.Vec, "i64", 4, 8)
    with pytest.raises(pto.UnsupportedType,
                       match=r"^tprint: element type i64 is not supported on a2a3 \(supported: "
                             r"f32, f16, i8, ui8, i16, ui16, i32, ui32\)$"):
        pto.TPRINT(t)


def test_missing_instruction_on_a_target():
    """An instruction absent from a target's legality table is 'not supported on target'."""
    from ptoisa.targets import Target, get_target

    real = get_target("a5")
    legality = dict(real.legality)
    del legality["TADD"]
    fake = Target("a5", real.buffers, legality)
    spec = Tile(TileType.Vec, "f32", 8, 8).spec
    with pytest.raises(pto.IllegalInstruction, match="^tadd: not supported on target a5$"):
        pto.TADD.check_types(fake, {"dst": spec, "src0": spec, "src1": spec})


def test_check_types_is_the_verifier_entry_point():
    spec = Tile(TileType.Vec, "f16", 16, 16).spec
    dst = Tile(TileType.Vec, "f32", 16, 8).spec
    with pytest.raises(pto.ConstraintError, match="to have the same element type"):
        pto.TROWSUM.check_types("cpu", {"dst": dst, "src": spec, "tmp": spec})
    pto.TROWSUM.check_types("cpu", {"dst": dst, "src": spec, "tmp": spec}, permissive=True)
    with pytest.raises(pto.UnsupportedType, match="src f16 -> dst f32 is not supported on a5"):
        pto.TROWSUM.check_types("a5", {"dst": dst, "src": spec, "tmp": spec})


def test_wrong_operand_counts_and_kinds(machine):
    t = Tile(TileType.Vec, "f32", 8, 8)
    with pytest.raises(pto.PtoError, match=r"^tadd: takes operands \(dst, src0, src1\); got 4$"):
        pto.TADD(t, t, t, t)
    with pytest.raises(pto.PtoError, match=r"^tadd: operand 'src1' must be a Tile, got float$"):
        pto.TADD(t, t, 1.0)
    g = GlobalTensor(np.zeros((8, 8), np.float32))
    with pytest.raises(pto.PtoError, match=r"^tadd: operand 'src0' must be a Tile, got "
                                           r"GlobalTensor$"):
        pto.TADD(t, g, t)


def test_bad_enum_values_list_the_allowed_ones(machine):
    t = Tile(TileType.Vec, "f32", 8, 8)
    g = GlobalTensor(np.zeros((8, 8), np.float32))
    with pytest.raises(pto.PtoError, match=r"tstore: atomicType: 'AtomicMax' is not a AtomicType "
                                           r"\(allowed: AtomicNone, AtomicAdd\)"):
        pto.TSTORE(g, t, atomicType="AtomicMax")


def test_lookup_by_any_name():
    assert pto.lookup("TROWSUM") is pto.TROWSUM is pto.REGISTRY["TROWSUM"]
    assert pto.lookup("trowsum") is pto.TROWSUM
    assert pto.lookup("pto.tstore_fp") is pto.TSTORE_FP
    assert pto.lookup("nosuchop") is None
    with pytest.raises(AttributeError, match="has no attribute 'TNOSUCH'"):
        pto.TNOSUCH  # noqa: B018


def test_no_numpy_exception_escapes_for_bad_user_input(machine):
    """Mismatched shapes or types must surface as PtoError, never as numpy errors."""
    t = Tile(TileType.Vec, "f32", 4, 8)
    for bad in ([1, 2], np.zeros((3, 3)), np.zeros((8, 4))):
        with pytest.raises(pto.PtoError):
            t.load_numpy(bad)

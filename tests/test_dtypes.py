"""Element types: spellings, interning, properties, pad values (model.md sections 5 and 7)."""

from __future__ import annotations

import pickle

import ml_dtypes
import numpy as np
import pytest

import ptoisa as pto
from ptoisa import PadValue, dtypes
from ptoisa.enums import pad_value

SPELLINGS = {
    "f32": ["f32", "float", "float32", "float32_t", np.float32, np.dtype("float32")],
    "f16": ["f16", "half", "float16_t", "aclFloat16", np.float16],
    "bf16": ["bf16", "bfloat16_t", "bfloat16", ml_dtypes.bfloat16],
    "f8E4M3": ["f8E4M3", "f8E4M3FN", "float8_e4m3_t", ml_dtypes.float8_e4m3fn],
    "f8E5M2": ["f8E5M2", "float8_e5m2_t", ml_dtypes.float8_e5m2],
    "f8E8M0": ["f8E8M0", "float8_e8m0_t", ml_dtypes.float8_e8m0fnu],
    "i8": ["i8", "int8_t", "int8", np.int8],
    "ui8": ["ui8", "u8", "uint8_t", np.uint8],
    "i16": ["i16", "int16_t", np.int16],
    "ui16": ["ui16", "uint16_t", np.uint16],
    "i32": ["i32", "int32_t", "int", np.int32],
    "ui32": ["ui32", "uint32_t", np.uint32],
    "i64": ["i64", "int64_t", np.int64],
    "ui64": ["ui64", "uint64_t", np.uint64],
}

ITEMSIZE = {"f32": 4, "f16": 2, "bf16": 2, "f8E4M3": 1, "f8E5M2": 1, "f8E8M0": 1, "i8": 1,
            "ui8": 1, "i16": 2, "ui16": 2, "i32": 4, "ui32": 4, "i64": 8, "ui64": 8}


@pytest.mark.parametrize("name", sorted(SPELLINGS))
def test_every_spelling_resolves_to_one_interned_object(name):
    ref = pto.dtype(name)
    assert ref.name == name
    for s in SPELLINGS[name]:
        assert pto.dtype(s) is ref, s
    assert ref.itemsize == ITEMSIZE[name]
    assert ref.bits == 8 * ITEMSIZE[name]
    assert pickle.loads(pickle.dumps(ref)) is ref


@pytest.mark.parametrize("name", sorted(SPELLINGS))
def test_kind_flags(name):
    d = pto.dtype(name)
    is_float = name.startswith(("f", "bf"))
    assert d.is_float == is_float
    assert d.is_int == (not is_float)
    assert d.is_signed == (not name.startswith("ui"))


def test_case_insensitive_names():
    assert pto.dtype("FLOAT") is pto.dtype("f32")
    assert pto.dtype("Half") is pto.dtype("f16")


@pytest.mark.parametrize("bad", ["f128", "float4_e2m1", "quux", ""])
def test_unknown_names_list_the_known_types(bad):
    with pytest.raises(pto.PtoError, match=r"unknown element type .*known: f32, f16, bf16"):
        pto.dtype(bad)


def test_numpy_types_without_pto_equivalent_are_rejected():
    with pytest.raises(pto.PtoError, match="no PTO equivalent"):
        pto.dtype(np.complex64)
    with pytest.raises(pto.PtoError, match="not an element type"):
        pto.dtype(object())


def test_limits():
    assert dtypes.int_limits(pto.dtype("i16")) == (-32768, 32767)
    assert dtypes.int_limits(pto.dtype("ui8")) == (0, 255)
    assert dtypes.finfo_limits(pto.dtype("f16")) == (-65504.0, 65504.0)
    assert dtypes.finfo_limits(pto.dtype("f8E4M3")) == (-448.0, 448.0)
    assert dtypes.finfo_limits(pto.dtype("bf16"))[1] == pytest.approx(3.3895313892515355e38)


# ---- pad values (model.md section 5, PadValueMap bit patterns) --------------------------------

PAD_BITS = {
    # dtype: (Zero, Min, Max) as raw unsigned bit patterns
    "f32": (0, 0xFF800000, 0x7F800000),
    "f16": (0, 0xFC00, 0x7C00),
    "bf16": (0, 0xFF80, 0x7F80),
    "i32": (0, 0x80000000, 0x7FFFFFFF),
    "i16": (0, 0x8000, 0x7FFF),
    "i8": (0, 0x80, 0x7F),
    "ui32": (0, 0, 0xFFFFFFFF),
    "ui16": (0, 0, 0xFFFF),
    "ui8": (0, 0, 0xFF),
    "i64": (0, 0, 0),
    "ui64": (0, 0, 0),
    "f8E4M3": (0, 0, 0),
    "f8E5M2": (0, 0, 0),
}
_UINT = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


def _bits(x, d):
    return int(np.asarray(x, d.np).reshape(1).view(_UINT[d.itemsize])[0])


@pytest.mark.parametrize("name", sorted(PAD_BITS))
def test_named_pad_values_follow_the_hardware_bit_patterns(name):
    d = pto.dtype(name)
    zero, lo, hi = PAD_BITS[name]
    assert _bits(PadValue.Null.scalar(d), d) == 0
    assert _bits(PadValue.Zero.scalar(d), d) == zero
    assert _bits(PadValue.Min.scalar(d), d) == lo
    assert _bits(PadValue.Max.scalar(d), d) == hi


def test_custom_pad_values():
    f32, f16, i16, i8 = (pto.dtype(n) for n in ("f32", "f16", "i16", "i8"))
    assert PadValue.custom(-1.0).scalar(f32) == np.float32(-1.0)
    assert PadValue.custom(-1).scalar(i16) == -1
    # PadValueCustom(-1.0f) == 0x1BF800000: f32 takes the raw 32 bits
    assert PadValue.custom_bits(0x1BF800000).scalar(f32) == np.float32(-1.0)
    # PadValueCustom(int16_t(-1)) == 0x10000FFFF: 2-byte types take the low 16 bits
    assert PadValue.custom_bits(0x10000FFFF).scalar(i16) == -1
    assert _bits(PadValue.custom_bits(0x1BF800000).scalar(f16), f16) == 0x0000
    assert _bits(PadValue.custom_bits(0x13C00).scalar(f16), f16) == 0x3C00  # 1.0
    # 1-byte types the low 8 bits
    assert PadValue.custom_bits(0x1000000FE).scalar(i8) == -2


def test_pad_value_spellings():
    assert pad_value(None) is PadValue.Null
    assert [pad_value(i) for i in range(4)] == [PadValue.Null, PadValue.Zero, PadValue.Max,
                                                 PadValue.Min]
    assert pad_value("max") is PadValue.Max
    assert pad_value(PadValue.Min) is PadValue.Min
    with pytest.raises(pto.PtoError, match="not a pad value"):
        pad_value(7)
    with pytest.raises(pto.PtoError, match="not a pad value"):
        pad_value("biggest")

"""Element types of the PTO ISA, backed by numpy and ml_dtypes.

A :class:`DType` is interned: ``dtype("f32") is dtype(np.float32) is dtype("float")``. Every
spelling a user may bring (PTOAS ``f32``/``ui8``, C++ ``float``/``half``/``int8_t``, numpy dtypes,
ml_dtypes scalar types, conformance-pack names) resolves to the same object.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import ml_dtypes
import numpy as np

from .errors import PtoError


@dataclass(frozen=True, eq=False)
class DType:
    """One element type. ``name`` is the PTOAS spelling (f32, bf16, i8, ui8, f8E4M3 ...)."""

    name: str
    np: np.dtype
    kind: str  # "float" | "int" | "uint" | "bool"
    cpp: str
    #: 4-bit types stored two per byte (even element in the low nibble, model.md 2.5); their
    #: logical values are the 4-bit codes as uint8 (decode with :func:`fp4_decode`).
    packed: bool = False
    #: 8-bit storage whose logical values are codes, not numpy numbers (s4, hif8): tiles and GM
    #: hold the code bytes; arithmetic decodes with :func:`decode` / encodes with :func:`encode`
    coded: bool = False
    #: a SIMT packed value (17-simt.md ``vector<2xf16>``, ``!pto.hif8x2``): ``lanes`` elements
    #: of :attr:`lane_type` side by side, one element of memory (its ``np`` a structured type
    #: of one field ``v`` holding them); 1 for every other type
    lanes: int = 1

    @property
    def lane_type(self) -> DType:
        """The type of one element of a packed SIMT value (the type itself otherwise)."""
        return _PACKED_BASE.get(self.name, self)

    @property
    def itemsize(self) -> int:
        return self.np.itemsize

    @property
    def bits(self) -> int:
        return 4 if self.packed else self.np.itemsize * 8

    def storage_bytes(self, numel: int) -> int:
        """Bytes that ``numel`` elements occupy (two per byte for packed 4-bit types)."""
        return (numel + 1) // 2 if self.packed else numel * self.np.itemsize

    @property
    def is_float(self) -> bool:
        return self.kind == "float"

    @property
    def is_int(self) -> bool:
        return self.kind in ("int", "uint")

    @property
    def is_signed(self) -> bool:
        return self.kind in ("int", "float")

    def __repr__(self) -> str:
        return self.name

    __str__ = __repr__

    def __reduce__(self) -> tuple[Any, ...]:
        return (dtype, (self.name,))


def _mk(name: str, npdt: Any, kind: str, cpp: str) -> DType:
    return DType(name, np.dtype(npdt), kind, cpp)


f32 = _mk("f32", np.float32, "float", "float")
f16 = _mk("f16", np.float16, "float", "half")
bf16 = _mk("bf16", ml_dtypes.bfloat16, "float", "bfloat16_t")
f8e4m3 = _mk("f8E4M3", ml_dtypes.float8_e4m3fn, "float", "float8_e4m3_t")
f8e5m2 = _mk("f8E5M2", ml_dtypes.float8_e5m2, "float", "float8_e5m2_t")
f8e8m0 = _mk("f8E8M0", ml_dtypes.float8_e8m0fnu, "float", "float8_e8m0_t")
f64 = _mk("f64", np.float64, "float", "double")
i8 = _mk("i8", np.int8, "int", "int8_t")
u8 = _mk("ui8", np.uint8, "uint", "uint8_t")
i16 = _mk("i16", np.int16, "int", "int16_t")
u16 = _mk("ui16", np.uint16, "uint", "uint16_t")
i32 = _mk("i32", np.int32, "int", "int32_t")
u32 = _mk("ui32", np.uint32, "uint", "uint32_t")
i64 = _mk("i64", np.int64, "int", "int64_t")
u64 = _mk("ui64", np.uint64, "uint", "uint64_t")
i1 = _mk("i1", np.bool_, "bool", "bool")
f4e2m1 = DType("f4E2M1x2", np.dtype(np.uint8), "float", "float4_e2m1x2_t", packed=True)
f4e1m2 = DType("f4E1M2x2", np.dtype(np.uint8), "float", "float4_e1m2x2_t", packed=True)
#: pto::int4b_t: one signed 4-bit value per byte (``storage & 0x0F``, sign-extended; model.md
#: section 7, the conformance pack's ``int4x2``); the byte holds the code in its low nibble
s4 = DType("s4", np.dtype(np.uint8), "int", "int4b_t", coded=True)
#: hifloat8_t, Huawei HiF8 (sign, dot, exponent, mantissa; see :func:`hif8_decode`)
hif8 = DType("hif8", np.dtype(np.uint8), "float", "hifloat8_t", coded=True)

#: !pto.bf16x2: two bf16 values in one 32-bit carrier (the first in the low half), VMI's
#: conversion-only side of the bf16 <-> packed fp4 pair (vmi-isa/06); no arithmetic takes it,
#: and it is not among ALL (no tile, no legality line but VMI's)
bf16x2 = DType("bf16x2", np.dtype(np.uint32), "float", "bfloat16x2_t")

ALL: tuple[DType, ...] = (
    f32, f16, bf16, f8e4m3, f8e5m2, f8e8m0, f64, i8, u8, i16, u16, i32, u32, i64, u64, i1,
    f4e2m1, f4e1m2, s4, hif8,
)

_ALIASES: dict[str, DType] = {}


def _alias(dt: DType, *names: str) -> None:
    for n in names:
        _ALIASES[n] = dt
        _ALIASES[n.lower()] = dt


_alias(f32, "f32", "float32", "float", "float32_t", "fp32")
_alias(f16, "f16", "float16", "half", "float16_t", "fp16", "aclFloat16")
_alias(bf16, "bf16", "bfloat16", "bfloat16_t")
_alias(f8e4m3, "f8E4M3", "f8E4M3FN", "float8_e4m3fn", "float8_e4m3", "float8_e4m3_t", "e4m3", "fp8")
_alias(f8e5m2, "f8E5M2", "float8_e5m2", "float8_e5m2_t", "e5m2")
_alias(f8e8m0, "f8E8M0", "f8E8M0FNU", "float8_e8m0fnu", "float8_e8m0_t", "e8m0")
_alias(f64, "f64", "float64", "double")
_alias(i8, "i8", "int8", "int8_t", "si8", "s8")
_alias(u8, "ui8", "u8", "uint8", "uint8_t")
_alias(i16, "i16", "int16", "int16_t", "si16", "s16")
_alias(u16, "ui16", "u16", "uint16", "uint16_t")
_alias(i32, "i32", "int32", "int32_t", "int", "si32", "s32")
_alias(u32, "ui32", "u32", "uint32", "uint32_t")
_alias(i64, "i64", "int64", "int64_t", "si64", "s64")
_alias(u64, "ui64", "u64", "uint64", "uint64_t")
_alias(i1, "i1", "bool")
_alias(f4e2m1, "f4E2M1x2", "float4_e2m1fn_x2", "float4_e2m1x2_t", "float4_e2m1x2", "e2m1x2")
_alias(f4e1m2, "f4E1M2x2", "float4_e1m2_x2", "float4_e1m2x2_t", "float4_e1m2x2", "e1m2x2")
_alias(s4, "s4", "i4", "int4", "int4b_t", "int4x2")
_alias(hif8, "hif8", "hifloat8", "hifloat8_t", "HiF8")
_alias(bf16x2, "bf16x2")

_PACKED: dict[tuple[str, int], DType] = {}
_PACKED_BASE: dict[str, DType] = {}


def packed_vector(base: Any, lanes: int) -> DType:
    """The interned SIMT packed type of ``lanes`` elements of ``base`` (``vector<2xf16>``:
    ``packed_vector(f16, 2)``); not among :data:`ALL` (no tile, no vector register holds it)."""
    b = dtype(base)
    if b.lanes != 1 or b.packed or lanes < 1:
        raise PtoError(f"no packed SIMT type of {lanes} x {b.name}")
    key = (b.name, int(lanes))
    dt = _PACKED.get(key)
    if dt is None:
        name = f"{b.name}x{lanes}" if b is hif8 else f"vector<{lanes}x{b.name}>"
        dt = DType(name, np.dtype([("v", b.np, (lanes,))]), b.kind, f"{b.cpp}x{lanes}",
                   coded=b.coded, lanes=int(lanes))
        _PACKED[key] = dt
        _PACKED_BASE[name] = b
    return dt


_BY_NP: dict[np.dtype, DType] = {dt.np: dt for dt in ALL if not (dt.packed or dt.coded)}


def dtype(x: Any) -> DType:
    """Resolve any spelling of an element type to its interned :class:`DType`."""
    if isinstance(x, DType):
        return x
    if isinstance(x, str):
        dt = _ALIASES.get(x) or _ALIASES.get(x.lower())
        if dt is None:
            known = ", ".join(d.name for d in ALL)
            raise PtoError(f"unknown element type {x!r} (known: {known})")
        return dt
    try:
        npdt = np.dtype(x)
    except TypeError:
        raise PtoError(f"not an element type: {x!r}") from None
    dt = _BY_NP.get(npdt)
    if dt is None:
        raise PtoError(f"element type {npdt} has no PTO equivalent")
    return dt


def names(dts: Any) -> str:
    """Comma-separated PTOAS names, for error messages."""
    return ", ".join(d.name for d in dts)


def finfo_limits(dt: DType) -> tuple[float, float]:
    """(lowest, highest) finite value of a float type."""
    fi = ml_dtypes.finfo(dt.np) if dt.np.kind == "V" or dt in (bf16, f8e4m3, f8e5m2, f8e8m0) \
        else np.finfo(dt.np)
    return float(fi.min), float(fi.max)


def int_limits(dt: DType) -> tuple[int, int]:
    ii = np.iinfo(dt.np)
    return int(ii.min), int(ii.max)


# ---- packed 4-bit floats (MX fp4) ----------------------------------------------------------

def _fp4_table(exp_bits: int, man_bits: int, bias: int) -> np.ndarray:
    """Values of the 16 codes of a 1-sign/exp/mantissa 4-bit float without inf/NaN."""
    out = np.zeros(16, np.float32)
    for code in range(16):
        sign = -1.0 if code & 8 else 1.0
        e = (code >> man_bits) & ((1 << exp_bits) - 1)
        m = code & ((1 << man_bits) - 1)
        if e == 0:
            v = m / (1 << man_bits) * 2.0 ** (1 - bias)
        else:
            v = (1 + m / (1 << man_bits)) * 2.0 ** (e - bias)
        out[code] = sign * v
    return out


#: code -> value (e2m1: +-{0, 0.5, 1, 1.5, 2, 3, 4, 6}; e1m2: +-{0, 0.25, .., 1.75})
FP4_VALUES = {"f4E2M1x2": _fp4_table(2, 1, 1), "f4E1M2x2": _fp4_table(1, 2, 1)}


def fp4_decode(codes: Any, dt: DType) -> np.ndarray:
    """4-bit codes (low nibble of each uint8) -> float32 values."""
    return FP4_VALUES[dt.name][np.asarray(codes, np.uint8) & 0xF]


def fp4_encode(values: Any, dt: DType) -> np.ndarray:
    """float values -> 4-bit codes (uint8): round to nearest, ties to an even code, saturate to
    the largest finite magnitude (the formats have no inf/NaN; NaN encodes as +0; the sign of
    values that round to zero is kept, as ml_dtypes does)."""
    table = FP4_VALUES[dt.name]
    mags = table[:8].astype(np.float64)
    x = np.nan_to_num(np.asarray(values, np.float64), nan=0.0)
    a = np.minimum(np.abs(x), mags[-1])
    idx = np.searchsorted(mags, a)  # mags[idx-1] < a <= mags[idx]
    idx = np.clip(idx, 1, 7)
    lo, hi = mags[idx - 1], mags[idx]
    pick_hi = (a - lo > hi - a) | ((a - lo == hi - a) & (idx % 2 == 0))
    code = np.where(a <= 0, 0, np.where(pick_hi, idx, idx - 1)).astype(np.uint8)
    neg = np.signbit(x)
    return (code | np.where(neg, 8, 0).astype(np.uint8)).astype(np.uint8)



# ---- coded 8-bit types: int4b_t (s4) and HiFloat8 -------------------------------------------

def s4_decode(codes: Any) -> np.ndarray:
    """s4 storage bytes -> int8 values in [-8, 7] (low nibble, sign-extended)."""
    c = (np.asarray(codes).astype(np.uint8) & 0xF).astype(np.int8)
    return np.where(c >= 8, c - 16, c).astype(np.int8)


def s4_encode(values: Any) -> np.ndarray:
    """Integers in [-8, 7] -> s4 storage bytes (the code in the low nibble, high nibble 0)."""
    return (np.asarray(values).astype(np.int64) & 0xF).astype(np.uint8)


def _hif8_value(code: int) -> float:
    """HiF8 (Huawei HiFloat8, arXiv:2409.16626): sign bit, then a prefix-coded *dot* field
    giving the exponent width D, a D-bit sign-magnitude exponent with an implicit leading 1
    (first bit = exponent sign, 1 negative), and the mantissa:

    ====== == ======== ==============
    dot    D mantissa exponent
    ====== == ======== ==============
    11     4  1        +-[8, 15]
    10     3  2        +-[4, 7]
    01     2  3        +-[2, 3]
    001    1  3        +-1
    0001   0  3        0
    0000   -  3        denormal: 2^(M-23) (M = 0 is zero)
    ====== == ======== ==============

    Specials: 0x00 = 0, 0x80 = NaN, S 11 0111 1 (0x6F / 0xEF) = +-inf (the code above
    +-2^15, the largest finite magnitude)."""
    sign = -1.0 if code & 0x80 else 1.0
    b = code & 0x7F
    if code == 0x80:
        return float("nan")
    if b == 0x6F:
        return sign * float("inf")
    if b >> 5 == 0b11:
        d, mbits = 4, 1
    elif b >> 5 == 0b10:
        d, mbits = 3, 2
    elif b >> 5 == 0b01:
        d, mbits = 2, 3
    elif b >> 4 == 0b001:
        d, mbits = 1, 3
    elif b >> 3 == 0b0001:
        d, mbits = 0, 3
    else:  # 0000 MMM: denormal
        m = b & 7
        return sign * (2.0 ** (m - 23)) if m else sign * 0.0
    man = b & ((1 << mbits) - 1)
    ebits = (b >> mbits) & ((1 << d) - 1)
    if d == 0:
        e = 0
    else:
        mag = (1 << (d - 1)) | (ebits & ((1 << (d - 1)) - 1))
        e = -mag if ebits >> (d - 1) else mag
    return sign * (1.0 + man / (1 << mbits)) * 2.0 ** e


#: code -> value of all 256 HiF8 codes (float64)
HIF8_VALUES = np.array([_hif8_value(c) for c in range(256)], np.float64)
HIF8_MAX = 2.0 ** 15

# finite non-negative magnitudes in ascending order and their (positive) codes, for encoding
_HIF8_POS = [c for c in range(0x80) if np.isfinite(HIF8_VALUES[c])]
_HIF8_ORDER = np.array(sorted(_HIF8_POS, key=lambda c: HIF8_VALUES[c]), np.uint8)
_HIF8_MAGS = HIF8_VALUES[_HIF8_ORDER]


def hif8_decode(codes: Any) -> np.ndarray:
    """HiF8 codes (uint8) -> float32 values (every HiF8 value is exact in f32)."""
    return HIF8_VALUES[np.asarray(codes).astype(np.uint8)].astype(np.float32)


def hif8_encode(values: Any, mode: str = "rint", *, saturate: bool = False) -> np.ndarray:
    """Float values -> HiF8 codes, correctly rounded from the exact (float64) value.

    ``mode``: ``rint`` nearest, ties to the even code (last mantissa bit 0); ``round``
    nearest, ties away from zero; ``floor``/``ceil``/``trunc`` directed. NaN -> 0x80.
    Magnitudes above 2^15 round to +-inf (code 0x6F/0xEF) when the rounding would leave the
    finite range, or to +-2^15 with ``saturate``; a result of zero keeps the input's sign
    bit only for +0 (the code 0x80 is NaN, so -0 encodes as 0x00)."""
    x = np.asarray(values, np.float64)
    nan = np.isnan(x)
    a = np.abs(np.where(nan, 0.0, x))
    neg = (x < 0) & ~nan
    mags = _HIF8_MAGS
    n = len(mags)
    hi_i = np.clip(np.searchsorted(mags, a, side="left"), 0, n - 1)
    lo_i = np.clip(np.searchsorted(mags, a, side="right") - 1, 0, n - 1)
    lo, hi = mags[lo_i], mags[hi_i]
    lo_c, hi_c = _HIF8_ORDER[lo_i], _HIF8_ORDER[hi_i]
    over = a > HIF8_MAX
    # above the largest finite value the next step up is the (virtual) 1.5 * 2^15 = inf code
    hi = np.where(over, 1.5 * HIF8_MAX, hi)
    hi_c = np.where(over, np.uint8(0x6F), hi_c)
    away = {"floor": neg, "ceil": ~neg, "trunc": np.zeros(a.shape, bool)}.get(mode)
    if away is None:
        d_lo, d_hi = a - lo, hi - a
        tie_hi = np.ones(a.shape, bool) if mode == "round" else (hi_c & 1) == 0
        away = (d_hi < d_lo) | ((d_hi == d_lo) & tie_hi)
    exact = a == lo
    code = np.where(exact, lo_c, np.where(away, hi_c, lo_c)).astype(np.uint8)
    code = np.where(np.isinf(a), np.uint8(0x6F), code)
    if saturate:
        code = np.where(code == 0x6F, np.uint8(0x6E), code)
    code = np.where(neg & (code != 0), code | np.uint8(0x80), code)
    return np.where(nan, np.uint8(0x80), code).astype(np.uint8)


def decode(codes: Any, dt: DType) -> np.ndarray:
    """Logical numbers of a coded type's storage: s4 -> int8, hif8 -> float32."""
    return s4_decode(codes) if dt is s4 else hif8_decode(codes)

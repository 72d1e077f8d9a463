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

ALL: tuple[DType, ...] = (
    f32, f16, bf16, f8e4m3, f8e5m2, f8e8m0, f64, i8, u8, i16, u16, i32, u32, i64, u64, i1,
    f4e2m1, f4e1m2,
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

_BY_NP: dict[np.dtype, DType] = {dt.np: dt for dt in ALL if not dt.packed}


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


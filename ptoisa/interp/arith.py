"""Semantics of the MLIR ``arith`` ops the interpreter runs, exactly as MLIR defines them.

Integers are signless two's-complement values of their type's bit width (``index`` is 64
bits); the op says whether it reads an operand as signed (``divsi``, ``shrsi``, ``cmpi slt``)
or unsigned (``divui``, ``shrui``, ``cmpi ult``, ``extui``), and results wrap to the width.
A value is kept as a Python int in the signed range (``ui`` types: the unsigned range; ``i1``:
0 or 1), or as an int64 :class:`~ptoisa.grid.Lanes` array in a lockstep launch.
Where MLIR makes a result poison or undefined (division by zero, ``INT_MIN / -1``, a shift by
the bit width or more, ``fptosi`` of NaN or of a value out of range) the interpreter stops
with an :class:`~ptoisa.errors.ExecutionError` instead of inventing a value.

Floats are numpy scalars of their type; every result is rounded once to that type (bf16 too,
which a cast through f32 would round twice). ``maximumf``/``minimumf`` propagate NaN and order
-0 below +0 (IEEE 754-2019 maximum/minimum); ``maxnumf``/``minnumf`` return the other operand
when one is NaN (maximumNumber/minimumNumber).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from .. import dtypes as D
from ..dtypes import DType
from ..errors import ExecutionError
from ..ir import types as T


def width(t: T.Type) -> int | None:
    """Bit width of an integer or index type (None for other types)."""
    if isinstance(t, T.IntegerType):
        return t.width
    if isinstance(t, T.IndexType):
        return 64
    return None


def signed(v: int, w: int) -> int:
    """``v``'s low ``w`` bits read as a signed number."""
    v &= (1 << w) - 1
    return v - (1 << w) if v >> (w - 1) else v


def unsigned(v: int, w: int) -> int:
    """``v``'s low ``w`` bits read as an unsigned number."""
    return v & ((1 << w) - 1)


def wrap(v: int, t: T.Type) -> int:
    """An exact integer result as a value of type ``t`` (wraps to the width)."""
    return wrapper(t)(v)


def wrapper(t: T.Type) -> Callable[[int], int]:
    """:func:`wrap` for one type, with its constants computed once (the interpreter's ops call
    it per execution)."""
    w = width(t)
    if w is None:
        return lambda v: v
    mask = (1 << w) - 1
    if w == 1 or (isinstance(t, T.IntegerType) and t.signedness == "u"):
        return lambda v: v & mask
    top, full = 1 << (w - 1), 1 << w

    def signed_wrap(v: int) -> int:
        if -top <= v < top:
            return v
        v &= mask
        return v - full if v >= top else v
    return signed_wrap


# ---- integer binary ops: f(a, b, w) -> exact result (wrapped by the caller) -------------------

def _nonzero(b: int) -> None:
    if b == 0:
        raise ExecutionError("integer division by zero")


def _divsi(a: int, b: int, w: int) -> int:
    a, b = signed(a, w), signed(b, w)
    _nonzero(b)
    if a == -(1 << (w - 1)) and b == -1 and w > 1:
        raise ExecutionError(f"signed division overflows i{w} ({a} / -1 is undefined in MLIR)")
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q  # truncates toward zero


def _remsi(a: int, b: int, w: int) -> int:
    a, b = signed(a, w), signed(b, w)
    _nonzero(b)
    r = abs(a) % abs(b)
    return -r if a < 0 else r  # the sign of the dividend


def _divui(a: int, b: int, w: int) -> int:
    a, b = unsigned(a, w), unsigned(b, w)
    _nonzero(b)
    return a // b


def _remui(a: int, b: int, w: int) -> int:
    a, b = unsigned(a, w), unsigned(b, w)
    _nonzero(b)
    return a % b


def _ceildivsi(a: int, b: int, w: int) -> int:
    a, b = signed(a, w), signed(b, w)
    _nonzero(b)
    return -((-a) // b)


def _ceildivui(a: int, b: int, w: int) -> int:
    a, b = unsigned(a, w), unsigned(b, w)
    _nonzero(b)
    return -((-a) // b)


def _floordivsi(a: int, b: int, w: int) -> int:
    a, b = signed(a, w), signed(b, w)
    _nonzero(b)
    return a // b


def _amount(b: int, w: int) -> int:
    n = unsigned(b, w)
    if n >= w:
        raise ExecutionError(f"shift amount {n} is not below the bit width {w} (the result is "
                             "poison in MLIR)")
    return n


INT_BINARY: dict[str, Callable[[int, int, int], int]] = {
    "arith.addi": lambda a, b, w: a + b,
    "arith.subi": lambda a, b, w: a - b,
    "arith.muli": lambda a, b, w: a * b,
    "arith.andi": lambda a, b, w: a & b,
    "arith.ori": lambda a, b, w: a | b,
    "arith.xori": lambda a, b, w: a ^ b,
    "arith.divsi": _divsi, "arith.remsi": _remsi, "arith.divui": _divui, "arith.remui": _remui,
    "arith.ceildivsi": _ceildivsi, "arith.ceildivui": _ceildivui,
    "arith.floordivsi": _floordivsi,
    "arith.shli": lambda a, b, w: a << _amount(b, w),
    "arith.shrsi": lambda a, b, w: signed(a, w) >> _amount(b, w),
    "arith.shrui": lambda a, b, w: unsigned(a, w) >> _amount(b, w),
    "arith.maxsi": lambda a, b, w: max(signed(a, w), signed(b, w)),
    "arith.minsi": lambda a, b, w: min(signed(a, w), signed(b, w)),
    "arith.maxui": lambda a, b, w: max(unsigned(a, w), unsigned(b, w)),
    "arith.minui": lambda a, b, w: min(unsigned(a, w), unsigned(b, w)),
}

#: ops whose int64 numpy form is exact modulo 2^64 (then wrapped): the lockstep fast path
NUMPY_EXACT: dict[str, Callable[[Any, Any], Any]] = {
    "arith.addi": np.add, "arith.subi": np.subtract, "arith.muli": np.multiply,
    "arith.andi": np.bitwise_and, "arith.ori": np.bitwise_or, "arith.xori": np.bitwise_xor,
}


# ---- float binary ops -------------------------------------------------------------------------

def _maximumf(a: Any, b: Any) -> Any:
    if math.isnan(a) or math.isnan(b):
        return a if math.isnan(a) else b
    if a == b:  # +0 and -0: +0 is the larger
        return b if math.copysign(1.0, a) < 0 else a
    return a if a > b else b


def _minimumf(a: Any, b: Any) -> Any:
    if math.isnan(a) or math.isnan(b):
        return a if math.isnan(a) else b
    if a == b:
        return a if math.copysign(1.0, a) < 0 else b
    return a if a < b else b


def _maxnumf(a: Any, b: Any) -> Any:
    if math.isnan(a):
        return b
    return a if math.isnan(b) else _maximumf(a, b)


def _minnumf(a: Any, b: Any) -> Any:
    if math.isnan(a):
        return b
    return a if math.isnan(b) else _minimumf(a, b)


FLOAT_BINARY: dict[str, Callable[[Any, Any], Any]] = {
    "arith.addf": lambda a, b: a + b, "arith.subf": lambda a, b: a - b,
    "arith.mulf": lambda a, b: a * b, "arith.divf": lambda a, b: a / b,
    "arith.remf": lambda a, b: np.fmod(a, b),
    "arith.maximumf": _maximumf, "arith.minimumf": _minimumf,
    "arith.maxnumf": _maxnumf, "arith.minnumf": _minnumf,
}


# ---- comparisons --------------------------------------------------------------------------------

_SIGNED_CMP = {"slt": np.less, "sle": np.less_equal, "sgt": np.greater, "sge": np.greater_equal}
_UNSIGNED_CMP = {"ult": np.less, "ule": np.less_equal, "ugt": np.greater,
                 "uge": np.greater_equal, "eq": np.equal, "ne": np.not_equal}


def cmpi(pred: str, w: int) -> Callable[[Any, Any], Any] | None:
    """``arith.cmpi`` with predicate ``pred`` on ``w``-bit operands (ints or int64 arrays)."""
    if pred in _SIGNED_CMP:
        f = _SIGNED_CMP[pred]
        return lambda a, b: f(_lanes(a, w, signed), _lanes(b, w, signed))
    if pred in _UNSIGNED_CMP:
        f = _UNSIGNED_CMP[pred]
        return lambda a, b: f(_lanes(a, w, unsigned), _lanes(b, w, unsigned))
    return None


def _lanes(v: Any, w: int, read: Callable[[int, int], int]) -> Any:
    """``v`` read as signed/unsigned ``w``-bit number(s); arrays elementwise (uint64 holds
    every unsigned 64-bit value)."""
    if not isinstance(v, np.ndarray):
        return read(int(v), w)
    a = np.asarray(v).astype(np.int64)
    if read is unsigned:
        u = a.view(np.uint64)
        return u if w == 64 else u & np.uint64((1 << w) - 1)
    if w == 64:
        return a
    m = np.int64((1 << w) - 1)
    x = a & m
    return np.where(x >> np.int64(w - 1) != 0, x - np.int64(1 << w), x)


def _uno(a: Any, b: Any) -> Any:
    return np.isnan(a) | np.isnan(b)


_ORDERED = {"oeq": np.equal, "ogt": np.greater, "oge": np.greater_equal, "olt": np.less,
            "ole": np.less_equal, "one": np.not_equal}
_UNORDERED = {"ueq": np.equal, "ugt": np.greater, "uge": np.greater_equal, "ult": np.less,
              "ule": np.less_equal, "une": np.not_equal}


def cmpf(pred: str) -> Callable[[Any, Any], Any] | None:
    """``arith.cmpf``: ``o*`` predicates are false and ``u*`` true when an operand is NaN."""
    if pred in _ORDERED:
        f = _ORDERED[pred]
        return lambda a, b: ~_uno(a, b) & f(a, b)
    if pred in _UNORDERED:
        f = _UNORDERED[pred]
        return lambda a, b: _uno(a, b) | f(a, b)
    return {"ord": lambda a, b: ~_uno(a, b), "uno": _uno,
            "true": lambda a, b: np.True_, "false": lambda a, b: np.False_}.get(pred)


# ---- conversions -------------------------------------------------------------------------------

_SIGNIFICAND = {"f64": 53, "f32": 24, "f16": 11, "bf16": 8}


def int_to_float(v: int, dt: DType) -> Any:
    """The exact integer ``v`` rounded once (to nearest, ties to even) to the float type."""
    p = _SIGNIFICAND.get(dt.name)
    n = abs(v).bit_length()
    if p is not None and n > p:
        shift = n - p
        q, r = divmod(abs(v), 1 << shift)
        half = 1 << (shift - 1)
        if r > half or (r == half and q & 1):
            q += 1
        v = (q << shift) * (1 if v >= 0 else -1)
    with np.errstate(over="ignore"):
        return dt.np.type(float(v)) if abs(v) < 2 ** 1024 else dt.np.type(math.copysign(
            math.inf, v))


def to_float(x: Any, dt: DType) -> Any:
    """A number as a scalar of the float type ``dt``, rounded once."""
    if type(x) is dt.np.type:
        return x
    if isinstance(x, (int, np.integer)) and not isinstance(x, bool):
        return int_to_float(int(x), dt)
    f = float(x)
    if dt.name == "bf16" and math.isfinite(f):
        # float64 -> bf16 through f32 rounds twice: make the f32 step round to odd (sticky)
        y = np.float32(f)
        if float(y) != f and math.isfinite(float(y)) and not int(y.view(np.uint32)) & 1:
            y = np.nextafter(y, np.float32(math.inf if f > float(y) else -math.inf))
        return dt.np.type(y)
    with np.errstate(over="ignore"):
        return dt.np.type(f)


def _float_dtype(t: T.Type) -> DType:
    return D.dtype(t.name)  # type: ignore[attr-defined]


def cast(name: str, v: Any, src: T.Type, dst: T.Type) -> Any:
    """One scalar through the cast op ``name`` from type ``src`` to ``dst``."""
    return caster(name, src, dst)(v)


def caster(name: str, src: T.Type, dst: T.Type) -> Callable[[Any], Any]:
    """The cast op ``name`` from ``src`` to ``dst`` as a function of one scalar."""
    ws, wd = width(src) or 64, width(dst)
    wr = wrapper(dst)
    if name in ("arith.index_cast", "arith.extsi"):
        return lambda v: wr(signed(int(v), ws))
    if name in ("arith.index_castui", "arith.extui"):
        return lambda v: wr(unsigned(int(v), ws))
    if name == "arith.trunci":
        return lambda v: wr(int(v))
    if name in ("arith.sitofp", "arith.uitofp"):
        dt = _float_dtype(dst)
        read = signed if name == "arith.sitofp" else unsigned
        return lambda v: int_to_float(read(int(v), ws), dt)
    if name in ("arith.fptosi", "arith.fptoui"):
        bits = wd or 0
        lo, hi = ((-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if name == "arith.fptosi"
                  else (0, (1 << bits) - 1))

        def to_int(v: Any) -> int:
            f = float(v)
            if not math.isfinite(f) or not lo <= math.trunc(f) <= hi:
                raise ExecutionError(f"{name[6:]} of {f} to {dst}: out of range (the result "
                                     "is poison in MLIR)")
            return wr(math.trunc(f))
        return to_int
    if name in ("arith.extf", "arith.truncf"):
        dt = _float_dtype(dst)
        return lambda v: to_float(v, dt)
    if name == "arith.bitcast":
        return lambda v: bitcast(v, src, dst)
    raise ExecutionError(f"cast {name} is not supported")


def bitcast(v: Any, src: T.Type, dst: T.Type) -> Any:
    """The same bits read as ``dst`` (equal widths, which the verifier requires)."""
    ws = width(src)
    if ws is not None:
        bits = np.array(unsigned(int(v), ws), dtype=f"u{max(ws, 8) // 8}")
    else:
        bits = np.array(v, dtype=_float_dtype(src).np).view(
            f"u{_float_dtype(src).itemsize}")
    wd = width(dst)
    if wd is not None:
        return wrap(int(bits), dst)
    return bits.view(_float_dtype(dst).np)[()]


__all__ = ["FLOAT_BINARY", "INT_BINARY", "NUMPY_EXACT", "bitcast", "cast", "caster", "cmpf",
           "cmpi", "int_to_float", "signed", "to_float", "unsigned", "width", "wrap", "wrapper"]

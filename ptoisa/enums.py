"""The enumerations of the C++ API (pto/common/type.hpp, constants.hpp), same names and values."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any

import numpy as np

from .dtypes import finfo_limits
from .errors import PtoError


class TileType(enum.Enum):
    """Role of a tile; decides the on-chip buffer it lives in."""

    Vec = "vec"
    Mat = "mat"
    Left = "left"
    Right = "right"
    Acc = "acc"
    Bias = "bias"
    Scaling = "scaling"
    ScaleLeft = "scale_left"
    ScaleRight = "scale_right"

    def __repr__(self) -> str:
        return f"TileType.{self.name}"


class BLayout(enum.Enum):
    RowMajor = "row_major"
    ColMajor = "col_major"


class SLayout(enum.Enum):
    NoneBox = "none_box"
    RowMajor = "row_major"
    ColMajor = "col_major"


class Layout(enum.Enum):
    """GlobalTensor layouts."""

    ND = "nd"
    DN = "dn"
    NZ = "nz"
    SCALE = "scale"
    NC1HWC0 = "nc1hwc0"
    NDC1HWC0 = "ndc1hwc0"
    NCHW = "nchw"
    NHWC = "nhwc"
    NCDHW = "ncdhw"
    FRACTAL_Z = "fractal_z"
    MX_A_ZZ = "mx_a_zz"
    MX_A_ND = "mx_a_nd"
    MX_A_DN = "mx_a_dn"
    MX_B_NN = "mx_b_nn"
    MX_B_ND = "mx_b_nd"
    MX_B_DN = "mx_b_dn"


class CompactMode(enum.Enum):
    Null = 0
    Normal = 1
    RowPlusOne = 2
    RowAlignedPadding = 3


class Pipe(enum.Enum):
    S = "PIPE_S"
    V = "PIPE_V"
    M = "PIPE_M"
    MTE1 = "PIPE_MTE1"
    MTE2 = "PIPE_MTE2"
    MTE3 = "PIPE_MTE3"
    FIX = "PIPE_FIX"
    ALL = "PIPE_ALL"


class PrintFormat(enum.Enum):
    """TPRINT number formats. ``Default`` is the target's default (see TPRINT docs)."""

    Width8_Precision4 = 0
    Width8_Precision2 = 1
    Width10_Precision6 = 2
    Width6_Precision2 = 3  # the seed page's %6.2f / %6d, default on a2a3/a5


class AtomicType(enum.Enum):
    AtomicNone = 0
    AtomicAdd = 1


class ReluPreMode(enum.Enum):
    NoRelu = 0
    NormalRelu = 1


class AccToVecMode(enum.Enum):
    """TMOV Acc -> Vec destination mode (which vector core(s) receive the tile)."""

    SingleModeVec0 = 0
    SingleModeVec1 = 1
    DualModeSplitM = 2
    DualModeSplitN = 3


class AccPhase(enum.Enum):
    """Matmul unit-flag phase (multi-pass accumulation hint; no effect on values)."""

    Unspecified = 0
    Partial = 1
    Final = 2


class STPhase(enum.Enum):
    """Store phase of an Acc store (TSTORE<STPhase::...>): ``Final`` waits on the unit flag a
    matmul with AccPhase Final set on the Acc bytes (no effect on values)."""

    Unspecified = 0
    Partial = 1
    Final = 2


class RoundMode(enum.Enum):
    CAST_NONE = 0
    CAST_RINT = 1
    CAST_ROUND = 2
    CAST_FLOOR = 3
    CAST_CEIL = 4
    CAST_TRUNC = 5
    CAST_ODD = 6


class SaturationMode(enum.Enum):
    ON = 0
    OFF = 1


class CmpMode(enum.Enum):
    EQ = 0
    NE = 1
    LT = 2
    LE = 3
    GT = 4
    GE = 5


class TFillPadMode(enum.Enum):
    Normal = 0
    InPlace = 1
    Expand = 2


# Members are singletons that compare by identity: hash them by identity too (a C slot), not
# by Enum's Python-level hash of the name. They key the static-check caches, the spec memos
# and the legality tables on every instruction.
for _cls in (TileType, BLayout, SLayout, Layout, CompactMode, Pipe, PrintFormat, AtomicType,
             ReluPreMode, AccToVecMode, AccPhase, RoundMode, SaturationMode, CmpMode,
             TFillPadMode):
    _cls.__hash__ = object.__hash__  # type: ignore[method-assign,assignment]
del _cls

DYNAMIC = -1


@dataclass(frozen=True)
class PadValue:
    """The pad value of a tile: Null, Zero, Max, Min, or a custom value.

    ``PadValue.Null`` etc. are the named ones; ``PadValue.custom(-1.0)`` pads with that value
    (converted to the tile's element type); ``PadValue.custom_bits(0x1BF800000)`` takes the C++
    ``PadValueCustom`` encoding (CustomBase | bits) and applies the bits as the hardware does.
    """

    kind: str  # "Null" | "Zero" | "Max" | "Min" | "Custom" | "CustomBits"
    value: Any = None

    Null: Any = None  # filled in below (class-level constants)
    Zero: Any = None
    Max: Any = None
    Min: Any = None

    @staticmethod
    def custom(value: float | int) -> PadValue:
        return PadValue("Custom", value)

    @staticmethod
    def custom_bits(encoded: int) -> PadValue:
        return PadValue("CustomBits", int(encoded) & 0xFFFFFFFF)

    @property
    def is_null(self) -> bool:
        return self.kind == "Null"

    def __repr__(self) -> str:
        if self.kind in ("Custom", "CustomBits"):
            return f"PadValue.{self.kind.lower()}({self.value!r})"
        return f"PadValue.{self.kind}"

    def scalar(self, dt: Any, float_extremes: str = "inf") -> Any:
        """The pad element for element type ``dt`` (a DType), as a numpy scalar.

        Hardware bit patterns (PadValueMap): Min/Max are -inf/+inf for floats with infinities,
        INT_MIN/INT_MAX for signed ints, 0/all-ones for unsigned. 64-bit ints and fp8 pad 0.
        ``float_extremes`` "finite" (a target's ``pad_float_extremes`` trait: PTOAS's a5
        TileLib) makes a float Min/Max the type's most negative / largest finite value.
        """
        npdt = dt.np
        if self.kind in ("Null", "Zero"):
            return np.zeros((), npdt)[()]
        if self.kind == "Custom":
            return np.asarray(self.value).astype(npdt)[()]
        if self.kind == "CustomBits":
            bits = self.value
            if dt.itemsize == 4:
                return np.array([bits], np.uint32).view(npdt)[0]
            if dt.itemsize == 2:
                return np.array([bits & 0xFFFF], np.uint16).view(npdt)[0]
            if dt.itemsize == 1:
                return np.array([bits & 0xFF], np.uint8).view(npdt)[0]
            return np.zeros((), npdt)[()]
        if getattr(dt, "packed", False):
            # packed fp4 codes: Max/Min are the largest magnitudes (0b0111 / 0b1111), as the
            # CPU simulator pads (recorded TLOAD cases)
            return npdt.type(0x7 if self.kind == "Max" else 0xF)
        if dt.itemsize == 8 or dt.name.startswith("f8"):
            return np.zeros((), npdt)[()]
        high = self.kind == "Max"
        if dt.is_float:
            if float_extremes == "finite":
                low, top = finfo_limits(dt)
                return np.array(top if high else low).astype(npdt)[()]
            return np.array(np.inf if high else -np.inf).astype(npdt)[()]
        ii = np.iinfo(npdt)
        return npdt.type(ii.max if high else ii.min)


PadValue.Null = PadValue("Null")
PadValue.Zero = PadValue("Zero")
PadValue.Max = PadValue("Max")
PadValue.Min = PadValue("Min")


def pad_value(x: Any) -> PadValue:
    """Accept a PadValue, a name ('zero', 'Max'), or the PTOAS integer code 0..3."""
    if isinstance(x, PadValue):
        return x
    if x is None:
        return PadValue.Null
    if isinstance(x, (int, np.integer)) and not isinstance(x, bool) and 0 <= int(x) <= 3:
        return (PadValue.Null, PadValue.Zero, PadValue.Max, PadValue.Min)[int(x)]
    if isinstance(x, str):
        key = x.split("::")[-1]  # the C++ spelling PadValue::Zero too
        for pv in (PadValue.Null, PadValue.Zero, PadValue.Max, PadValue.Min):
            if pv.kind.lower() == key.lower():
                return pv
    raise PtoError(f"not a pad value: {x!r} (use PadValue.Null/Zero/Max/Min or PadValue.custom)")


def coerce_enum(enum_cls: type[enum.Enum], x: Any, what: str) -> Any:
    """Accept an enum member, its name (any case) or its value."""
    if isinstance(x, enum_cls):
        return x
    if isinstance(x, str):
        key = x.split("::")[-1].replace("_", "").lower()
        for m in enum_cls:
            if m.name.replace("_", "").lower() == key or \
                    str(m.value).replace("_", "").lower() == key:
                return m
    else:
        for m in enum_cls:
            if m.value == x:
                return m
    allowed = ", ".join(m.name for m in enum_cls)
    raise PtoError(f"{what}: {x!r} is not a {enum_cls.__name__} (allowed: {allowed})")

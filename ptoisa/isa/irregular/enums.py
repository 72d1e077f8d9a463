"""The C++ enums of the irregular family (pto/common/type.hpp): mask patterns, gather/scatter
axes and out-of-range modes, histogram bytes."""

from __future__ import annotations

import enum
from typing import Any

# ---- enums of the C++ API (pto/common/type.hpp) --------------------------------------------------


class MaskPattern(enum.Enum):
    P0101 = 1
    P1010 = 2
    P0001 = 3
    P0010 = 4
    P0100 = 5
    P1000 = 6
    P1111 = 7


class GatherAxis(enum.Enum):
    GATHER_ROW = 0
    GATHER_COL = 1


class ScatterAxis(enum.Enum):
    SCATTER_ROW = 0
    SCATTER_COL = 1


class Coalesce(enum.Enum):
    Row = 0
    Elem = 1


class GatherOOB(enum.Enum):
    Undefined = 0
    Clamp = 1
    Wrap = 2
    Zero = 3


class ScatterAtomicOp(enum.Enum):
    # C++ spells the first one ``None``; ``NoOp`` keeps Python happy, ``None`` is accepted too.
    NoOp = 0
    Add = 1
    Max = 2
    Min = 3


class ScatterOOB(enum.Enum):
    Undefined = 0
    Skip = 1
    Clamp = 2
    Wrap = 3


class ScatterConflict(enum.Enum):
    Default = 0
    Last = 1


class HistByte(enum.Enum):
    BYTE_0 = 0
    BYTE_1 = 1
    BYTE_2 = 2
    BYTE_3 = 3


#: (stride F, position) of each mask pattern: element ``pos`` of every group of ``F``.
_PATTERN = {MaskPattern.P0101: (2, 0), MaskPattern.P1010: (2, 1), MaskPattern.P0001: (4, 0),
            MaskPattern.P0010: (4, 1), MaskPattern.P0100: (4, 2), MaskPattern.P1000: (4, 3),
            MaskPattern.P1111: (1, 0)}


def _atomic(x: Any) -> ScatterAtomicOp:
    if isinstance(x, str) and x.split("::")[-1] == "None":
        return ScatterAtomicOp.NoOp
    if x is None:
        return ScatterAtomicOp.NoOp
    from ...enums import coerce_enum

    return coerce_enum(ScatterAtomicOp, x, "mscatter: Atomic")  # type: ignore[no-any-return]

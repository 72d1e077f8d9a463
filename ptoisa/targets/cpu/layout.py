"""Legality on cpu of the layout-and-rearrangement family (the CPU simulator's generic paths:
any role to any role, element types converted when they differ)."""

from ...dtypes import ALL
from .. import Rule, rule

ANY_1_2_4 = [d for d in ALL if d.itemsize in (1, 2, 4) and d.name != "i1"]
MOVE_TYPES = "i8 ui8 i16 ui16 i32 ui32 f16 bf16 f32 f8E4M3 f8E5M2 f8E8M0"
CONCAT_TYPES = "i8 ui8 i16 ui16 i32 ui32 f16 bf16 f32"
TRANS_TYPES = "ui32 i32 f32 ui16 i16 f16 bf16 ui8 i8 f8E4M3 f8E5M2 f8E8M0"

LEGALITY: dict[str, Rule] = {
    # the CPU simulator also extracts packed fp4 (Mat -> Left/Right of the MX matmuls)
    "TEXTRACT": rule(MOVE_TYPES + " f4E2M1x2 f4E1M2x2", convert="any"),
    "TEXTRACT_FP": rule(MOVE_TYPES, convert="any"),
    "TINSERT": rule(MOVE_TYPES, convert="any"),
    "TINSERT_FP": rule(MOVE_TYPES, convert="any"),
    "TCONCAT": rule(CONCAT_TYPES),
    "TTRANS": rule(TRANS_TYPES),
    "TRESHAPE": rule(),
    "TSUBVIEW": rule(),
    "TGET_SCALE_ADDR": rule(),
    "TALIAS": rule(),
}

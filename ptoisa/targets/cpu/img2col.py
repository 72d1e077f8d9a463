"""Legality on cpu of TIMG2COL and its configuration instructions (the CPU simulator takes
the A5 element types)."""

from .. import Rule, rule

IMG2COL_TYPES = "i8 ui8 i16 ui16 i32 ui32 f16 bf16 f32"

LEGALITY: dict[str, Rule] = {
    "TIMG2COL": rule(IMG2COL_TYPES),
    "SETFMATRIX": rule(),
    "SET_IMG2COL_RPT": rule(),
    "SET_IMG2COL_PADDING": rule(),
}

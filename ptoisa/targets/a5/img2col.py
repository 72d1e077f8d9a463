"""Legality on a5 of TIMG2COL (TIMG2COL.md implementation checks) and its configuration
instructions."""

from .. import Rule, rule

LEGALITY: dict[str, Rule] = {
    "TIMG2COL": rule("i8 ui8 i16 ui16 i32 ui32 f16 bf16 f32"),
    "SETFMATRIX": rule(),
    "SET_IMG2COL_RPT": rule(),
    "SET_IMG2COL_PADDING": rule(),
}

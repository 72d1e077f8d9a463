"""Legality on a2a3 of TIMG2COL (TIMG2COL.md implementation checks) and its configuration
instructions."""

from .. import Rule, rule

LEGALITY: dict[str, Rule] = {
    "TIMG2COL": rule("i8 f16 bf16 f32"),
    "SETFMATRIX": rule(),
    "SET_IMG2COL_RPT": rule(),
    "SET_IMG2COL_PADDING": rule(),
}

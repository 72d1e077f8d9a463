"""Legality on a2a3 of the layout-and-rearrangement family (ops.tsv and the manual pages:
Mat -> Left/Right and Acc -> Mat window moves, Acc conversions through the fix-pipe)."""

from ...enums import TileType as T
from .. import Rule, rule

MOVE_TYPES = "i8 ui8 i16 ui16 i32 ui32 f16 bf16 f32"
#: Acc -> Mat conversions (plain f32 -> f16/bf16, quantised f32 -> i8, i32 -> i8/ui8/f16/i16)
ACC_CONVERT = frozenset({("f32", "f16"), ("f32", "bf16"), ("f32", "i8"), ("i32", "i8"),
                         ("i32", "ui8"), ("i32", "f16"), ("i32", "i16")})
EXTRACT_MOVES = frozenset({(T.Mat, T.Left), (T.Mat, T.Right), (T.Acc, T.Mat), (T.Vec, T.Vec)})
ACC_MOVES = frozenset({(T.Acc, T.Mat)})

LEGALITY: dict[str, Rule] = {
    "TEXTRACT": rule(MOVE_TYPES, moves=EXTRACT_MOVES, convert=ACC_CONVERT),
    "TEXTRACT_FP": rule(MOVE_TYPES, moves=ACC_MOVES, convert=ACC_CONVERT),
    "TINSERT": rule(MOVE_TYPES, moves=ACC_MOVES, convert=ACC_CONVERT),
    "TINSERT_FP": rule(MOVE_TYPES, moves=ACC_MOVES, convert=ACC_CONVERT),
    "TCONCAT": rule("i8 ui8 i16 ui16 i32 ui32 f16 bf16 f32", row_major=True),
    "TTRANS": rule("ui32 i32 f32 ui16 i16 f16 bf16 ui8 i8"),
    "TRESHAPE": rule(),
    "TSUBVIEW": rule(),
    "TALIAS": rule(),
}

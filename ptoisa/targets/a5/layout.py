"""Legality on a5 of the layout-and-rearrangement family (ops.tsv and the manual pages: Mat ->
Left/Right/ScaleLeft/ScaleRight, Acc -> Mat/Vec, Vec -> Vec/Mat; TPACK and TGET_SCALE_ADDR are
a5-only)."""

from ...enums import TileType as T
from .. import Rule, rule

MOVE_TYPES = "i8 ui8 f8E5M2 f8E4M3 f8E8M0 f16 bf16 f32 i32"
#: Acc conversions: plain f32 -> f16/bf16; quantised f32 -> i8/ui8/f16/bf16/f8E4M3 and
#: i32 -> i8/ui8/f16/bf16
ACC_CONVERT = frozenset({("f32", "f16"), ("f32", "bf16"), ("f32", "i8"), ("f32", "ui8"),
                         ("f32", "f8E4M3"), ("i32", "i8"), ("i32", "ui8"), ("i32", "f16"),
                         ("i32", "bf16")})
EXTRACT_MOVES = frozenset({(T.Mat, T.Left), (T.Mat, T.Right), (T.Mat, T.ScaleLeft),
                           (T.Mat, T.ScaleRight), (T.Acc, T.Mat), (T.Acc, T.Vec),
                           (T.Vec, T.Vec), (T.Vec, T.Mat)})
INSERT_MOVES = frozenset({(T.Acc, T.Mat), (T.Acc, T.Vec), (T.Vec, T.Vec), (T.Vec, T.Mat)})
ACC_MOVES = frozenset({(T.Acc, T.Mat), (T.Acc, T.Vec)})

LEGALITY: dict[str, Rule] = {
    "TEXTRACT": rule(MOVE_TYPES, moves=EXTRACT_MOVES, convert=ACC_CONVERT),
    "TEXTRACT_FP": rule(MOVE_TYPES, moves=ACC_MOVES, convert=ACC_CONVERT),
    "TINSERT": rule(MOVE_TYPES, moves=INSERT_MOVES, convert=ACC_CONVERT),
    "TINSERT_FP": rule(MOVE_TYPES, moves=ACC_MOVES, convert=ACC_CONVERT),
    "TCONCAT": rule("i8 ui8 i16 ui16 i32 ui32 f16 bf16 f32", row_major=True),
    "TTRANS": rule("ui32 i32 f32 ui16 i16 f16 bf16 ui8 i8"),
    "TRESHAPE": rule(),
    "TSUBVIEW": rule(),
    "TGET_SCALE_ADDR": rule(),
    "TALIAS": rule(),
    "TPACK": rule(),
}

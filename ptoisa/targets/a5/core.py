"""Legality on a5 of the foundation instructions (memory, seeds, TADD)."""

from ...dtypes import ALL
from ...enums import TileType
from .. import Rule, pairs, rule

ANY_1_2_4 = [d for d in ALL if d.itemsize in (1, 2, 4) and d.name != "i1"]


LEGALITY: dict[str, Rule] = {
    "TASSIGN": rule(),
    "TLOAD": rule("i8 ui8 i16 ui16 i32 ui32 i64 ui64 f16 bf16 f32 f8E4M3 f8E5M2 f8E8M0 hif8"),
    "TSTORE": rule("i8 ui8 i16 ui16 i32 ui32 i64 ui64 f16 bf16 f32 f8E4M3 f8E5M2 f8E8M0 hif8"),
    "TSTORE_FP": rule(pairs("f32->i8 f32->ui8 f32->f16 f32->bf16 f32->f8E4M3 f32->f32 "
                            "f32->hif8 i32->i8 i32->ui8 i32->f16 i32->bf16"), locs=[TileType.Acc]),
    "TPRINT": rule("f32 f16 i8 i16 i32 ui8 ui16 ui32"),
    "TROWSUM": rule(pairs("f16->f16 f32->f32 i32->i32 i16->i16 i64->i64 ui64->ui64")),
    "TFILLPAD": rule(ANY_1_2_4),
    "TFILLPAD_INPLACE": rule(ANY_1_2_4),
    "TFILLPAD_EXPAND": rule(ANY_1_2_4),
    "TPARTADD": rule("ui8 i8 ui16 i16 ui32 i32 i64 ui64 f16 f32 bf16"),
    "TPARTMUL": rule("ui8 i8 ui16 i16 ui32 i32 f16 f32 bf16"),
    "TPARTMAX": rule("i8 ui8 i16 ui16 i32 ui32 i64 ui64 f16 bf16 f32"),
    "TPARTMIN": rule("i8 ui8 i16 ui16 i32 ui32 i64 ui64 f16 bf16 f32"),
    "TADD": rule("i32 ui32 i64 ui64 f32 i16 ui16 f16 bf16 ui8 i8 f8E4M3 f8E5M2"),
}

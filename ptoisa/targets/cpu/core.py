"""Legality on cpu of the foundation instructions (memory, seeds, TADD)."""

from ...dtypes import ALL
from .. import Rule, pairs, rule

ANY_1_2_4 = [d for d in ALL if d.itemsize in (1, 2, 4) and d.name != "i1"]
ARITH = [d for d in ALL if d.name not in ("i1", "f64", "f8E8M0")]


LEGALITY: dict[str, Rule] = {
    "TASSIGN": rule(),
    "TLOAD": rule(),
    "TSTORE": rule(),
    "TSTORE_FP": rule(),
    "TPRINT": rule(),
    "TROWSUM": rule(pairs("f16->f16 bf16->bf16 f16->f32 bf16->f32 f32->f32 i16->i16 i16->i32 "
                          "i32->i32")),
    "TFILLPAD": rule(ANY_1_2_4),
    "TFILLPAD_INPLACE": rule(ANY_1_2_4),
    "TFILLPAD_EXPAND": rule(ANY_1_2_4),
    "TPARTADD": rule("i32 i16 f16 bf16 f32 i8 ui8"),
    "TPARTMUL": rule("i32 i16 f16 bf16 f32 i8 ui8"),
    "TPARTMAX": rule("i32 i16 f16 bf16 f32 i8 ui8"),
    "TPARTMIN": rule("i32 i16 f16 bf16 f32 i8 ui8"),
    "TADD": rule(ARITH),
}

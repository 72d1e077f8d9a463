"""Legality on cpu (the upstream CPU simulator) of the reduce-and-expand family.

Sources: spec/notes/ops.tsv column dtypes_CPU_sim and the recorded conformance cases. Where
the simulator's templates are generic, every 1/2/4/8-byte integer and f16/bf16/f32 is taken.
"""

from itertools import product

from .. import Rule, pairs, rule

NUM = "i8 ui8 i16 ui16 i32 ui32 i64 ui64 f16 bf16 f32"
EXPAND_OP = "i8 ui8 i16 ui16 i32 ui32 f16 bf16 f32"
ARG_SRC = "i8 ui8 i16 ui16 i32 ui32 i64 ui64 f16 bf16 f32"
ARG = rule(list(product(ARG_SRC.split(), ("i32", "ui32"))))
COL_FLOAT = "f16->f16 bf16->bf16 f16->f32 bf16->f32 f32->f32"
SAME = [(d, d) for d in NUM.split()]
ILV = "i8 ui8 i16 ui16 i32 ui32 f16 bf16 f32"

LEGALITY: dict[str, Rule] = {
    "TROWPROD": rule(NUM),
    "TROWMAX": rule(NUM),
    "TROWMIN": rule(NUM),
    "TROWARGMAX": ARG,
    "TROWARGMIN": ARG,
    "TCOLSUM": rule(pairs(COL_FLOAT)),
    "TCOLPROD": rule(SAME),
    "TCOLMAX": rule(pairs(COL_FLOAT + " i8->i8 ui8->ui8")),
    "TCOLMIN": rule(sorted(set(SAME) | set(pairs(COL_FLOAT)))),
    "TCOLARGMAX": ARG,
    "TCOLARGMIN": ARG,
    "TROWEXPAND": rule(NUM),
    "TCOLEXPAND": rule(NUM),
    **{f"TROWEXPAND{op}": rule(EXPAND_OP) for op in ("ADD", "SUB", "MUL", "DIV", "MAX", "MIN")},
    **{f"TCOLEXPAND{op}": rule(EXPAND_OP) for op in ("ADD", "SUB", "MUL", "DIV", "MAX", "MIN")},
    "TROWEXPANDEXPDIF": rule("f16 f32"),
    "TCOLEXPANDEXPDIF": rule("f16 f32"),
    "TPAIRREDUCESUM": rule("f16 bf16 f32 i16 i32"),
    "TINTERLEAVE": rule(ILV),
    "TDEINTERLEAVE": rule(ILV),
    "TPARTARGMAX": rule(pairs("f16->i16 f16->ui16 f16->i32 f16->ui32 f32->i32 f32->ui32")),
    "TPARTARGMIN": rule(pairs("f16->i16 f16->ui16 f16->i32 f16->ui32 f32->i32 f32->ui32")),
}

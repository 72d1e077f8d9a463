"""Legality on a5 of the reduce-and-expand family (ops.tsv dtypes_A5, the manual pages)."""

from itertools import product

from .. import Rule, pairs, rule

EXPAND_OP = "f16 f32 i16 i32 ui16 ui32"
COL_RED = "f16 f32 i8 ui8 i16 ui16 i32 ui32 bf16"
PART = rule(pairs("f16->i16 f16->ui16 f16->i32 f16->ui32 f32->i32 f32->ui32"))
ROW_ARG = rule(list(product("f16 bf16 i16 ui16 f32 i32 ui32".split(), ("i32", "ui32"))))
# index-only: 32-bit indices; value+index: 16-bit for 2-byte sources (rule _npu_idx_width)
COL_ARG = rule(list(product("i8 ui8 i16 ui16 i32 ui32 f16 f32".split(),
                            ("i16", "ui16", "i32", "ui32"))))

LEGALITY: dict[str, Rule] = {
    "TROWPROD": rule("f16 f32 i32 i16"),
    "TROWMAX": rule("f16 f32 i32 i64 ui64 i16 i8 ui8"),
    "TROWMIN": rule("f16 f32 i32 i64 ui64 i16 i8 ui8"),
    "TROWARGMAX": ROW_ARG,
    "TROWARGMIN": ROW_ARG,
    "TCOLSUM": rule([(d, d) for d in (COL_RED + " i64 ui64").split()]),
    "TCOLPROD": rule([(d, d) for d in "f32 f16 bf16 i16 ui16 i32 ui32".split()]),
    "TCOLMAX": rule([(d, d) for d in COL_RED.split()]),
    "TCOLMIN": rule([(d, d) for d in COL_RED.split()]),
    "TCOLARGMAX": COL_ARG,
    "TCOLARGMIN": COL_ARG,
    "TROWEXPAND": rule("i8 ui8 i16 ui16 i32 ui32 i64 ui64 f16 bf16 f32"),
    "TCOLEXPAND": rule("i8 ui8 i16 ui16 i32 ui32 i64 ui64 f16 bf16 f32 f8E4M3 f8E5M2 f8E8M0"),
    **{f"TROWEXPAND{op}": rule(EXPAND_OP) for op in ("ADD", "SUB", "MUL", "DIV", "MAX", "MIN")},
    **{f"TCOLEXPAND{op}": rule(EXPAND_OP) for op in ("ADD", "SUB", "MUL", "DIV", "MAX", "MIN")},
    "TROWEXPANDEXPDIF": rule("f16 f32"),
    "TCOLEXPANDEXPDIF": rule("f16 f32"),
    "TPAIRREDUCESUM": rule("f16 f32"),
    "TINTERLEAVE": rule("i32 ui32 f32 i16 ui16 f16 bf16 ui8 i8"),
    "TDEINTERLEAVE": rule("i32 ui32 f32 i16 ui16 f16 bf16 ui8 i8"),
    "TPARTARGMAX": PART,
    "TPARTARGMIN": PART,
}

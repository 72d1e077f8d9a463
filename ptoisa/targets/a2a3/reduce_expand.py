"""Legality on a2a3 of the reduce-and-expand family (ops.tsv dtypes_A2A3, the manual pages).

TINTERLEAVE and TDEINTERLEAVE have no a2a3 implementation and are absent.
"""

from itertools import product

from .. import Rule, pairs, rule

SAME4 = "f16 f32 i16 i32"
EXPAND_OP = "f16 f32 i16 i32"
PART = rule(pairs("f16->i16 f16->ui16 f16->i32 f16->ui32 f32->i32 f32->ui32"))
ROW_ARG = rule(list(product(("f16", "f32"), ("i32", "ui32"))))
# index-only: 32-bit indices; value+index: 16-bit for 2-byte sources (rule _npu_idx_width)
COL_ARG = rule(pairs("f16->i32 f16->ui32 f16->i16 f16->ui16 ui16->i32 ui16->ui32 ui16->i16 "
                     "ui16->ui16 f32->i32 f32->ui32 ui32->i32 ui32->ui32"))

LEGALITY: dict[str, Rule] = {
    "TROWPROD": rule(SAME4),
    "TROWMAX": rule(SAME4),
    "TROWMIN": rule(SAME4),
    "TROWARGMAX": ROW_ARG,
    "TROWARGMIN": ROW_ARG,
    "TCOLSUM": rule([(d, d) for d in SAME4.split()]),
    "TCOLPROD": rule([(d, d) for d in SAME4.split()]),
    "TCOLMAX": rule([(d, d) for d in SAME4.split()]),
    "TCOLMIN": rule([(d, d) for d in SAME4.split()]),
    "TCOLARGMAX": COL_ARG,
    "TCOLARGMIN": COL_ARG,
    "TROWEXPAND": rule("i8 ui8 i16 ui16 i32 ui32 f16 bf16 f32"),
    "TCOLEXPAND": rule("i8 ui8 i16 ui16 i32 ui32 f16 bf16 f32 f8E4M3 f8E5M2 f8E8M0"),
    **{f"TROWEXPAND{op}": rule(EXPAND_OP) for op in ("ADD", "SUB", "MUL", "MAX", "MIN")},
    **{f"TCOLEXPAND{op}": rule(EXPAND_OP) for op in ("ADD", "SUB", "MUL", "MAX", "MIN")},
    "TROWEXPANDDIV": rule("f16 f32"),
    "TCOLEXPANDDIV": rule("f16 f32"),
    "TROWEXPANDEXPDIF": rule("f16 f32"),
    "TCOLEXPANDEXPDIF": rule("f16 f32"),
    "TPAIRREDUCESUM": rule("f16 f32"),
    "TPARTARGMAX": PART,
    "TPARTARGMIN": PART,
}

"""Legality on a2a3 of the elementwise, tile-scalar, fused and TCVT instructions
(spec/notes/ops.tsv column dtypes_A2A3 and the manual pages). TADDC, TSUBC, TADDSC and TSUBSC
have no NPU implementation. The predicate tile of TCMP/TCMPS is ui8.
"""

from .. import Rule, pairs, rule

B12 = "i8 ui8 i16 ui16"
I124 = "i8 ui8 i16 ui16 i32 ui32"
BASIC = "i32 i16 f16 f32"

LEGALITY: dict[str, Rule] = {
    # tile-tile
    "TABS": rule("f32 f16"),
    "TAND": rule(B12),
    "TCMP": rule(pairs("i32->ui8 f16->ui8 f32->ui8")),
    "TCVT": rule(pairs(
        "f32->f16 f32->f32 f32->bf16 f32->i16 f32->i32 f32->i64 "
        "f16->f32 f16->i32 f16->i16 f16->i8 f16->ui8 bf16->f32 bf16->i32 "
        "i16->f16 i16->f32 i32->f32 i32->i16 i32->i64 i32->f16 i64->f32 i64->i32 "
        "ui8->f16 i8->f16 f16->s4 s4->f16")),
    "TDIV": rule("f16 f32"),
    "TEXP": rule("f32 f16"),
    "TFMOD": rule("f32 f16"),
    "TLOG": rule("f32 f16"),
    "TMAX": rule(BASIC),
    "TMIN": rule(BASIC),
    "TMUL": rule(BASIC),
    "TNEG": rule(BASIC),
    "TNOT": rule(I124),
    "TOR": rule(B12),
    "TPOW": rule("i32 i16 i8 ui32 ui16 ui8 f32"),
    "TPRELU": rule("f16 f32"),
    "TRECIP": rule("f32 f16 i32 i16"),
    "TRELU": rule("f16 f32 i32"),
    "TREM": rule("f32 i32"),
    "TRSQRT": rule("f32 f16"),
    "TSEL": rule("i16 ui16 i32 ui32 f16 bf16 f32"),
    "TSHL": rule(I124),
    "TSHR": rule(I124),
    "TSQRT": rule("f32 f16"),
    "TSUB": rule(BASIC),
    "TXOR": rule(I124),
    # tile-scalar
    "TADDS": rule(BASIC),
    "TSUBS": rule(BASIC),
    "TMULS": rule(BASIC),
    "TDIVS": rule(BASIC),
    "TMAXS": rule(BASIC),
    "TMINS": rule(BASIC),
    "TANDS": rule(I124),
    "TORS": rule(I124),
    "TXORS": rule(I124),
    "TSHLS": rule("i32 i16 ui32 ui16"),
    "TSHRS": rule("i32 i16 ui32 ui16"),
    "TLRELU": rule("f16 f32"),
    "TFMODS": rule("f32"),
    "TREMS": rule("f32 i32"),
    "TPOWS": rule("i32 i16 i8 ui32 ui16 ui8 f32"),
    "TEXPANDS": rule("ui8 i8 ui16 i16 ui32 i32 f16 bf16 f32"),
    "TCMPS": rule(pairs("i32->ui8 f32->ui8 f16->ui8 ui16->ui8 i16->ui8")),
    "TSELS": rule("i16 ui16 i32 ui32 f16 bf16 f32"),
    "TAXPY": rule(pairs("f16->f16 f32->f32 f32->f16")),
    # fused (flat-only)
    "TADDDEQRELU": rule(pairs("f16->i32")),
    "TADDRELUCONV": rule(pairs("f32->f16 f16->i8 i16->i8")),
    "TSUBRELUCONV": rule(pairs("f32->f16 f16->i8 i16->i8")),
    "TSUBRELU": rule("f16 f32"),
    "TMULADDDST": rule("f16 f32"),
    "TFUSEDMULADD": rule("f16 f32"),
    "TFUSEDMULADDRELU": rule("f16 f32"),
}

"""Legality on a5 of the elementwise, tile-scalar, fused and TCVT instructions
(spec/notes/ops.tsv column dtypes_A5, including the flat pages' 64-bit additions, and the
manual pages). TADDC, TSUBC, TADDSC and TSUBSC have no NPU implementation. The predicate tile
of TCMP/TCMPS is ui32.
"""

from .. import Rule, pairs, rule

I124 = "i8 ui8 i16 ui16 i32 ui32"
I1248 = I124 + " i64 ui64"
ALLNUM = I1248 + " f16 bf16 f32"
_CMP = "ui32 i32 i64 ui64 ui16 i16 ui8 i8 f32 f16 bf16"

LEGALITY: dict[str, Rule] = {
    # tile-tile
    "TABS": rule("f32 f16 i32 i16 i8"),
    "TAND": rule(I124),
    "TCMP": rule([(s, "ui32") for s in _CMP.split()]),
    "TCVT": rule(pairs(
        "f32->f32 f32->f16 f32->bf16 f32->i16 f32->i32 f32->i64 f32->f8E4M3 f32->f8E5M2 "
        "f16->f32 f16->i32 f16->i16 f16->i8 f16->ui8 bf16->f32 bf16->i32 bf16->f16 "
        "i16->ui8 i16->f16 i16->f32 i16->ui32 i16->i32 i32->f32 i32->i16 i32->ui16 i32->i64 "
        "bf16->f4E1M2x2 bf16->f4E2M1x2 "
        "i32->ui8 i64->f32 i64->i32 ui8->f16 ui8->ui16 i8->f16 i8->i16 i8->i32 "
        "ui32->ui8 ui32->ui16 ui32->i16 f8E4M3->f32 f8E5M2->f32 f32->hif8 f16->hif8")),
    "TDIV": rule("i32 ui32 f32 i16 ui16 f16 i64 ui64"),
    "TEXP": rule("f32 f16"),
    "TFMOD": rule("f16 f32 ui16 i16 ui32 i32"),
    "TLOG": rule("f32 f16"),
    "TMAX": rule(ALLNUM),
    "TMIN": rule(ALLNUM),
    "TMUL": rule("i32 ui32 f32 i16 ui16 f16 bf16 i64 ui64"),
    "TNEG": rule("i32 i16 ui32 ui16 f16 f32 bf16"),
    "TNOT": rule(I124),
    "TOR": rule(I124),
    "TPOW": rule(I124 + " f16 f32 bf16"),
    "TPRELU": rule("f16 f32"),
    "TRECIP": rule("f32 f16"),
    "TRELU": rule("f16 f32 i32"),
    "TREM": rule("f32 i32 ui32 f16 i16 ui16 i64 ui64"),
    "TRSQRT": rule("f32 f16"),
    "TSEL": rule(ALLNUM),
    "TSHL": rule(I1248),
    "TSHR": rule(I1248),
    "TSQRT": rule("f32 f16"),
    "TSUB": rule(ALLNUM),
    "TXOR": rule(I124),
    # tile-scalar
    "TADDS": rule(ALLNUM),
    "TSUBS": rule(ALLNUM),
    "TMULS": rule("ui16 i16 ui32 i32 f16 f32 bf16 i64 ui64"),
    "TDIVS": rule(I1248 + " f16 f32"),
    "TMAXS": rule(ALLNUM),
    "TMINS": rule(ALLNUM),
    "TANDS": rule(I124),
    "TORS": rule(I124),
    "TXORS": rule(I124),
    "TSHLS": rule(I1248),
    "TSHRS": rule(I1248),
    "TLRELU": rule("f16 f32"),
    "TFMODS": rule("i16 ui16 i32 ui32 f16 f32"),
    "TREMS": rule("f32 i32 ui32 f16 i16 ui16 i64 ui64"),
    "TPOWS": rule(I124 + " f16 f32 bf16"),
    "TEXPANDS": rule(I1248 + " f16 f32"),
    "TCMPS": rule([(s, "ui32") for s in _CMP.split()]),
    "TSELS": rule(ALLNUM),
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

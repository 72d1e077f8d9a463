"""Legality on cpu (the upstream CPU simulator) of the elementwise, tile-scalar, fused and TCVT
instructions. Most are generic templates there (ElementTileOp.h, TBinSOps.hpp): every standard
numeric element type; bitwise ones need integers, the math ones are restricted where the
simulator static_asserts (TAbs, TSqrt, TRSqrt). The predicate tile of TCMP/TCMPS is ui8 or ui32.
"""

from itertools import product

from .. import Rule, pairs, rule

STD = "i8 ui8 i16 ui16 i32 ui32 i64 ui64 f16 bf16 f32"
INTS = "i8 ui8 i16 ui16 i32 ui32 i64 ui64"
FLOATS = "f16 bf16 f32"
FP4 = ("f4E2M1x2", "f4E1M2x2")

_CMP_U8 = "i32 f16 f32"
_CMP_U32 = "ui32 i32 ui16 i16 ui8 i8 f32 f16 bf16"

LEGALITY: dict[str, Rule] = {
    # tile-tile
    "TABS": rule("i32 i16 i8 f16 bf16 f32"),
    "TADDC": rule(STD),
    "TAND": rule(INTS),
    "TCMP": rule([(s, "ui8") for s in _CMP_U8.split()] + [(s, "ui32") for s in _CMP_U32.split()]),
    "TCVT": rule(list(product(STD.split(), STD.split()))
                 + [(f, q) for f in FLOATS.split() for q in FP4]
                 + [(q, f) for f in FLOATS.split() for q in FP4]
                 + [(f, q) for f in FLOATS.split() for q in ("s4", "hif8")]
                 + [(q, f) for f in FLOATS.split() for q in ("s4", "hif8")]),
    "TDIV": rule(STD),
    "TEXP": rule(STD),
    "TFMOD": rule(STD),
    "TLOG": rule(STD),
    "TMAX": rule(STD),
    "TMIN": rule(STD),
    "TMUL": rule(STD),
    "TNEG": rule("i8 i16 i32 i64 f16 bf16 f32"),
    "TNOT": rule(INTS),
    "TOR": rule(INTS),
    "TPOW": rule(STD),
    "TPRELU": rule(FLOATS),
    "TRECIP": rule(STD),
    "TRELU": rule("i8 i16 i32 i64 f16 bf16 f32"),
    "TREM": rule(STD),
    "TRSQRT": rule("f16 f32"),
    "TSEL": rule(STD),
    "TSHL": rule(INTS),
    "TSHR": rule(INTS),
    "TSQRT": rule("bf16 f16 f32"),
    "TSUB": rule(STD),
    "TSUBC": rule(STD),
    "TXOR": rule(INTS),
    # tile-scalar
    "TADDS": rule(STD),
    "TSUBS": rule(STD),
    "TMULS": rule(STD),
    "TDIVS": rule(STD),
    "TMAXS": rule(STD),
    "TMINS": rule(STD),
    "TANDS": rule(INTS),
    "TORS": rule(INTS),
    "TXORS": rule(INTS),
    "TSHLS": rule(INTS),
    "TSHRS": rule(INTS),
    "TLRELU": rule(FLOATS),
    "TFMODS": rule(STD),
    "TREMS": rule(STD),
    "TPOWS": rule(STD),
    "TEXPANDS": rule(STD),
    "TCMPS": rule([(s, d) for s in STD.split() for d in ("ui8", "ui32")]),
    "TSELS": rule(STD),
    "TAXPY": rule(pairs("f16->f16 f32->f32 f32->f16")),
    "TADDSC": rule(STD),
    "TSUBSC": rule(STD),
    # fused (flat-only); TADDRELUCONV/TSUBRELUCONV have no CPU implementation
    "TADDDEQRELU": rule(pairs("f16->i32")),
    "TSUBRELU": rule("f16 f32"),
    "TMULADDDST": rule("f16 f32"),
    "TFUSEDMULADD": rule("f16 f32"),
    "TFUSEDMULADDRELU": rule("f16 f32"),
}

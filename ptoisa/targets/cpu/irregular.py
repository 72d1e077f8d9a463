"""Legality on cpu (the upstream CPU simulator's profile) of the irregular family."""

from .. import Rule, pairs, rule

B124 = "i8 ui8 i16 ui16 i32 ui32 f16 bf16 f32"
GATHER = "i8 ui8 i16 ui16 i32 ui32 f16 bf16 f32 f8E4M3 f8E5M2"

LEGALITY: dict[str, Rule] = {
    "TCI": rule("i16 ui16 i32 ui32"),
    "TTRI": rule("i32 i16 ui32 ui16 f16 bf16 f32"),
    "TGATHER": rule(B124),
    "TGATHERB": rule(B124),
    "TSCATTER": rule(B124 + " i64 ui64"),
    "MGATHER": rule(GATHER),
    "MSCATTER": rule(GATHER),
    "TSORT32": rule("f16 f32 i16 i32 bf16"),
    "TMRGSORT": rule("f16 f32"),
    "TDEQUANT": rule(pairs("i8->f32 i16->f32 i32->f32")),  # TDeQuant.hpp converts any int
    "TPREFETCH": rule(),
    "THISTOGRAM": rule("ui16 ui32"),
    "TRANDOM": rule("i32 ui32"),
    # MXFP8 (f32/f16/bf16 -> e4m3 bytes), MXFP4 (f16/bf16 -> packed e2m1), INT8 sym/asym (f32)
    "TQUANT": rule(pairs("f32->i8 f16->i8 bf16->i8 f16->f4E2M1x2 bf16->f4E2M1x2 f32->ui8")),
}

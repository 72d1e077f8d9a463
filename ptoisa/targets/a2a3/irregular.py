"""Legality on a2a3 of the irregular family (ops.tsv dtypes_A2A3 and the manual pages).
THISTOGRAM and TRANDOM are not implemented on a2a3."""

from .. import Rule, pairs, rule

B124 = "i8 ui8 i16 ui16 i32 ui32 f16 bf16 f32"

LEGALITY: dict[str, Rule] = {
    "TCI": rule("i16 ui16 i32 ui32"),
    "TTRI": rule("i32 i16 ui32 ui16 f16 f32"),
    "TGATHER": rule("i16 ui16 i32 ui32 f16 bf16 f32"),
    "TGATHERB": rule(B124),
    "TSCATTER": rule(B124),
    "MGATHER": rule(B124),
    "MSCATTER": rule(B124),
    "TSORT32": rule("f16 f32"),
    "TMRGSORT": rule("f16 f32"),
    "TDEQUANT": rule(pairs("i8->f32 i16->f32")),
    "TPREFETCH": rule(),
    "TQUANT": rule(pairs("f32->i8 f32->ui8")),  # INT8 path only (tquant.md)
}

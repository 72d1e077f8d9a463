"""Legality on a5 of the cube instructions (incl. fp8 and MX) and TMOV."""

from ...enums import TileType as T
from .. import Rule, pairs, rule

FP8 = ("f8E4M3", "f8E5M2")
FP4 = ("f4E2M1x2", "f4E1M2x2")
MM = [("f32", "f16", "f16"), ("f32", "bf16", "bf16"), ("f32", "f32", "f32"),
      ("i32", "i8", "i8")] + [("f32", a, b) for a in FP8 for b in FP8]
MX = [("f32", a, b) for a in FP8 for b in FP8] + [("f32", a, b) for a in FP4 for b in FP4]
SAME = [(d, d) for d in ("i8 ui8 f8E4M3 f8E5M2 f8E8M0 f16 bf16 f32 i32 i64 ui64 "
                         "f4E2M1x2 f4E1M2x2").split()]
CONVERT = pairs("f32->f16 f32->bf16 f32->i8 f32->ui8 f32->f8E4M3 i32->f16 i32->bf16 i32->i8 "
                "i32->ui8 f16->f32 bf16->f32")
PATHS = {(T.Mat, T.Left), (T.Mat, T.Right), (T.Mat, T.Bias), (T.Mat, T.Scaling),
         (T.Mat, T.ScaleLeft), (T.Mat, T.ScaleRight), (T.Vec, T.Vec), (T.Vec, T.Mat),
         (T.Acc, T.Vec), (T.Acc, T.Mat)}

LEGALITY: dict[str, Rule] = {
    "TMATMUL": rule(MM),
    "TMATMUL_ACC": rule(MM),
    "TMATMUL_BIAS": rule(MM),
    "TGEMV": rule(MM),
    "TGEMV_ACC": rule(MM),
    "TGEMV_BIAS": rule(MM),
    "TMATMUL_MX": rule(MX),
    "TGEMV_MX": rule(MX),
    "TMOV": rule(SAME + CONVERT, paths=frozenset(PATHS)),
    "TMOV_FP": rule(SAME + CONVERT, paths=frozenset({(T.Acc, T.Vec), (T.Acc, T.Mat)})),
    "SETTF32MODE": rule(),
    "SETHF32MODE": rule(),
}

"""Legality on cpu (the upstream CPU simulator) of the cube instructions and TMOV."""

from ...dtypes import ALL
from ...enums import TileType as T
from .. import Rule, pairs, rule

MM = [("f32", "f16", "f16"), ("f32", "bf16", "bf16"), ("f32", "f32", "f32"), ("i32", "i8", "i8")]
FP8 = ("f8E4M3", "f8E5M2")
FP4 = ("f4E2M1x2", "f4E1M2x2")
MX = [("f32", a, b) for a in FP8 for b in FP8] + [("f32", a, b) for a in FP4 for b in FP4]

SAME = [(d.name, d.name) for d in ALL if d.name not in ("i1", "f64")]
CONVERT = pairs("f32->f16 f32->bf16 f32->i8 f32->ui8 i32->f16 i32->i8 i32->ui8 i32->i16 "
                "f16->f32 bf16->f32")
PATHS = {(T.Vec, T.Vec), (T.Vec, T.Mat), (T.Mat, T.Left), (T.Mat, T.Right), (T.Mat, T.Bias),
         (T.Mat, T.Scaling), (T.Mat, T.ScaleLeft), (T.Mat, T.ScaleRight), (T.Acc, T.Vec),
         (T.Acc, T.Mat),
         # the CPU simulator's TMOV copies between any of these too (recorded cases use them)
         (T.Mat, T.Vec), (T.Vec, T.Left), (T.Vec, T.Right)}

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

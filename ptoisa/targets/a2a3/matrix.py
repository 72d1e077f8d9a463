"""Legality on a2a3 of the cube instructions and TMOV (no MX, no TF32)."""

from ...enums import TileType as T
from .. import Rule, pairs, rule

MM = [("f32", "f16", "f16"), ("f32", "bf16", "bf16"), ("f32", "f32", "f32"), ("i32", "i8", "i8")]
SAME = [(d, d) for d in "i8 ui8 i16 ui16 i32 ui32 i64 ui64 f16 bf16 f32".split()]
CONVERT = pairs("f32->f16 f32->bf16 f32->i8 f32->ui8 i32->f16 i32->i8 i32->ui8 i32->i16 "
                "f16->f32")
# Acc -> Vec: the PTOAS verifier's A2A3 pairs include it (PTO_IR_manual, pto.tmov, and the
# corpus's tmov_acc_to_vec_mode_a5_emitc.pto lowers it for a3), the C++ A2A3 page does not
PATHS = {(T.Mat, T.Left), (T.Mat, T.Right), (T.Mat, T.Bias), (T.Mat, T.Scaling),
         (T.Vec, T.Vec), (T.Acc, T.Mat), (T.Acc, T.Vec)}

LEGALITY: dict[str, Rule] = {
    "TMATMUL": rule(MM),
    "TMATMUL_ACC": rule(MM),
    "TMATMUL_BIAS": rule(MM),
    "TGEMV": rule(MM),
    "TGEMV_ACC": rule(MM),
    "TGEMV_BIAS": rule(MM),
    "TMOV": rule(SAME + CONVERT, paths=frozenset(PATHS)),
    "TMOV_FP": rule(SAME + CONVERT, paths=frozenset({(T.Acc, T.Mat)})),
    "SETTF32MODE": rule(),
    "SETHF32MODE": rule(),
}

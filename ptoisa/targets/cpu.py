"""The upstream C++ CPU simulator's profile (include/pto/cpu/).

Buffers: the simulator's A2A3 sizes with UB raised to 512 KiB (NPUMemoryModel); Bias and
Scaling tiles live in UB there, so this profile has no separate BIAS/FB buffers.
"""

from ..dtypes import ALL
from . import Rule, Target, pairs, rule

KiB = 1024
ANY_1_2_4 = [d for d in ALL if d.itemsize in (1, 2, 4) and d.name != "i1"]
ARITH = [d for d in ALL if d.name not in ("i1", "f64", "f8E8M0")]

BUFFERS = {"UB": 512 * KiB, "L1": 512 * KiB, "L0A": 64 * KiB, "L0B": 64 * KiB, "L0C": 128 * KiB,
           "L0A_MX": 4 * KiB, "L0B_MX": 4 * KiB}

LEGALITY: dict[str, Rule] = {
    "TASSIGN": rule(),
    "TLOAD": rule(),
    "TSTORE": rule(),
    "TSTORE_FP": rule(),
    "TPRINT": rule(),
    "TROWSUM": rule(pairs("f16->f16 bf16->bf16 f16->f32 bf16->f32 f32->f32 i16->i16 i16->i32 "
                          "i32->i32")),
    "TFILLPAD": rule(ANY_1_2_4),
    "TFILLPAD_INPLACE": rule(ANY_1_2_4),
    "TFILLPAD_EXPAND": rule(ANY_1_2_4),
    "TPARTADD": rule("i32 i16 f16 bf16 f32 i8 ui8"),
    "TPARTMUL": rule("i32 i16 f16 bf16 f32 i8 ui8"),
    "TPARTMAX": rule("i32 i16 f16 bf16 f32 i8 ui8"),
    "TPARTMIN": rule("i32 i16 f16 bf16 f32 i8 ui8"),
    "TADD": rule(ARITH),
}

TARGET = Target("cpu", BUFFERS, LEGALITY, __doc__ or "")

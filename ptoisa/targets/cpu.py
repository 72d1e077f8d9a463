"""The upstream C++ CPU simulator's profile (include/pto/cpu/).

Buffers: the simulator's A2A3 sizes with UB raised to 512 KiB (NPUMemoryModel); Bias and
Scaling tiles live in UB there, so this profile has no separate BIAS/FB buffers."""

from __future__ import annotations

from itertools import product

from ..dtypes import ALL
from ..enums import TileType as T
from .a2a3 import TARGET as A2A3
from .base import Rule, pairs, rule

KiB = 1024

BUFFERS = {"UB": 512 * KiB, "L1": 512 * KiB, "L0A": 64 * KiB, "L0B": 64 * KiB, "L0C": 128 * KiB,
           "L0A_MX": 4 * KiB, "L0B_MX": 4 * KiB}

ARITH = [d for d in ALL if d.name not in ("i1", "f64", "f8E8M0")]
STD = "i8 ui8 i16 ui16 i32 ui32 i64 ui64 f16 bf16 f32"
INTS = "i8 ui8 i16 ui16 i32 ui32 i64 ui64"
FLOATS = "f16 bf16 f32"
FP4 = ("f4E2M1x2", "f4E1M2x2")
_CMP_U8 = "i32 f16 f32"
_CMP_U32 = "ui32 i32 ui16 i16 ui8 i8 f32 f16 bf16"
IMG2COL_TYPES = "i8 ui8 i16 ui16 i32 ui32 f16 bf16 f32"
B124 = "i8 ui8 i16 ui16 i32 ui32 f16 bf16 f32"
GATHER = "i8 ui8 i16 ui16 i32 ui32 f16 bf16 f32 f8E4M3 f8E5M2"
MOVE_TYPES = "i8 ui8 i16 ui16 i32 ui32 f16 bf16 f32 f8E4M3 f8E5M2 f8E8M0"
CONCAT_TYPES = "i8 ui8 i16 ui16 i32 ui32 f16 bf16 f32"
TRANS_TYPES = "ui32 i32 f32 ui16 i16 f16 bf16 ui8 i8 f8E4M3 f8E5M2 f8E8M0"
FP8 = ("f8E4M3", "f8E5M2")
MX = [("f32", a, b) for a in FP8 for b in FP8] + [("f32", a, b) for a in FP4 for b in FP4]
SAME = [(d.name, d.name) for d in ALL if d.name not in ("i1", "f64")]
CONVERT = pairs("f32->f16 f32->bf16 f32->i8 f32->ui8 i32->f16 i32->i8 i32->ui8 i32->i16 "
                "f16->f32 bf16->f32")
PATHS = {(T.Vec, T.Vec), (T.Vec, T.Mat), (T.Mat, T.Left), (T.Mat, T.Right), (T.Mat, T.Bias),
         (T.Mat, T.Scaling), (T.Mat, T.ScaleLeft), (T.Mat, T.ScaleRight), (T.Acc, T.Vec),
         (T.Acc, T.Mat),
         # the CPU simulator's TMOV copies between any of these too (recorded cases use them)
         (T.Mat, T.Vec), (T.Vec, T.Left), (T.Vec, T.Right)}
NUM = "i8 ui8 i16 ui16 i32 ui32 i64 ui64 f16 bf16 f32"
EXPAND_OP = "i8 ui8 i16 ui16 i32 ui32 f16 bf16 f32"
ARG_SRC = "i8 ui8 i16 ui16 i32 ui32 i64 ui64 f16 bf16 f32"
ARG = rule(list(product(ARG_SRC.split(), ("i32", "ui32"))))
COL_FLOAT = "f16->f16 bf16->bf16 f16->f32 bf16->f32 f32->f32"
SAME_NUM = [(d, d) for d in NUM.split()]
ILV = "i8 ui8 i16 ui16 i32 ui32 f16 bf16 f32"


#: entries that differ from a2a3 (the rest are a2a3's)
LEGALITY: dict[str, Rule] = {
    "TPREFETCH": rule(),  # (any element type: a copy; A2/A3 has no low-precision ones)
    # ---- core ------------------------------------------------------------------------------------
    # the foundation instructions (memory, seeds, TADD).
    "TLOAD": rule(),
    "TSTORE": rule(),
    "TSTORE_FP": rule(),
    "TPRINT": rule(),
    "TROWSUM": rule(pairs("f16->f16 bf16->bf16 f16->f32 bf16->f32 f32->f32 i16->i16 i16->i32 "
                          "i32->i32")),
    "TPARTADD": rule("i32 i16 f16 bf16 f32 i8 ui8"),
    "TPARTMUL": rule("i32 i16 f16 bf16 f32 i8 ui8"),
    "TPARTMAX": rule("i32 i16 f16 bf16 f32 i8 ui8"),
    "TPARTMIN": rule("i32 i16 f16 bf16 f32 i8 ui8"),
    "TADD": rule(ARITH),

    # ---- elementwise -----------------------------------------------------------------------------
    # the elementwise, tile-scalar, fused and TCVT instructions. Most are generic templates
    # there (ElementTileOp.h, TBinSOps.hpp): every standard numeric element type; bitwise ones
    # need integers, the math ones are restricted where the simulator static_asserts (TAbs,
    # TSqrt, TRSqrt). The predicate tile of TCMP/TCMPS is ui8 or ui32.
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
    "TADDSC": rule(STD),
    "TSUBSC": rule(STD),

    # ---- img2col ---------------------------------------------------------------------------------
    # TIMG2COL and its configuration instructions (the CPU simulator takes the A5 element
    # types).
    "TIMG2COL": rule(IMG2COL_TYPES),

    # ---- irregular -------------------------------------------------------------------------------
    # the irregular family.
    "TTRI": rule("i32 i16 ui32 ui16 f16 bf16 f32"),
    "TGATHER": rule(B124),
    "TSCATTER": rule(B124 + " i64 ui64"),
    "MGATHER": rule(GATHER),
    "MSCATTER": rule(GATHER),
    "TSORT32": rule("f16 f32 i16 i32 bf16"),
    "TDEQUANT": rule(pairs("i8->f32 i16->f32 i32->f32")),
    "THISTOGRAM": rule("ui16 ui32"),
    "TRANDOM": rule("i32 ui32"),
    # MXFP8 (f32/f16/bf16 -> e4m3 bytes), MXFP4 (f16/bf16 -> packed e2m1), INT8 sym/asym (f32)
    "TQUANT": rule(pairs("f32->i8 f16->i8 bf16->i8 f16->f4E2M1x2 bf16->f4E2M1x2 f32->ui8")),

    # ---- layout ----------------------------------------------------------------------------------
    # the layout-and-rearrangement family (the CPU simulator's generic paths: any role to any
    # role, element types converted when they differ).
    # the CPU simulator also extracts packed fp4 (Mat -> Left/Right of the MX matmuls)
    "TEXTRACT": rule(MOVE_TYPES + " f4E2M1x2 f4E1M2x2", convert="any"),
    "TEXTRACT_FP": rule(MOVE_TYPES, convert="any"),
    "TINSERT": rule(MOVE_TYPES, convert="any"),
    "TINSERT_FP": rule(MOVE_TYPES, convert="any"),
    "TCONCAT": rule(CONCAT_TYPES),
    "TTRANS": rule(TRANS_TYPES),
    "TGET_SCALE_ADDR": rule(),

    # ---- matrix ----------------------------------------------------------------------------------
    # the cube instructions and TMOV.
    "TMATMUL_MX": rule(MX),
    "TGEMV_MX": rule(MX),
    "TMOV": rule(SAME + CONVERT, paths=frozenset(PATHS)),
    "TMOV_FP": rule(SAME + CONVERT, paths=frozenset({(T.Acc, T.Vec), (T.Acc, T.Mat)})),

    # ---- reduce_expand ---------------------------------------------------------------------------
    # the reduce-and-expand family.
    "TROWPROD": rule(NUM),
    "TROWMAX": rule(NUM),
    "TROWMIN": rule(NUM),
    "TROWARGMAX": ARG,
    "TROWARGMIN": ARG,
    "TCOLSUM": rule(pairs(COL_FLOAT)),
    "TCOLPROD": rule(SAME_NUM),
    "TCOLMAX": rule(pairs(COL_FLOAT + " i8->i8 ui8->ui8")),
    "TCOLMIN": rule(sorted(set(SAME_NUM) | set(pairs(COL_FLOAT)))),
    "TCOLARGMAX": ARG,
    "TCOLARGMIN": ARG,
    "TROWEXPAND": rule(NUM),
    "TCOLEXPAND": rule(NUM),
    **{f"TROWEXPAND{op}": rule(EXPAND_OP) for op in ("ADD", "SUB", "MUL", "DIV", "MAX", "MIN")},
    **{f"TCOLEXPAND{op}": rule(EXPAND_OP) for op in ("ADD", "SUB", "MUL", "DIV", "MAX", "MIN")},
    "TPAIRREDUCESUM": rule("f16 bf16 f32 i16 i32"),
    "TINTERLEAVE": rule(ILV),
    "TDEINTERLEAVE": rule(ILV),
}


#: instructions a2a3 has that the simulator lacks
#: (the micro DMA copies a2a3 has: the CPU simulator runs tile instructions only)
REMOVED = ("TADDRELUCONV", "TSUBRELUCONV", "TADDRELU", "MTE_GM_UB", "MTE_UB_GM")

TARGET = A2A3.derive("cpu", buffers=BUFFERS, legality=LEGALITY, removed=REMOVED,
                     traits={
                         "npu_runtime_checks": False,
                         "print_style": "cpu_sim",
                         "npu_static_checks": False,
                         "fp_tile_words": "cast",
                         "reduce_order": "sequential",
                         "reduce_nan": "fold",
                         "predicate_layout": "cpu_sim",
                         "cmp_i32_eq_only": False,
                         "cvt_saturate_default": False,
                         "cvt_casts": "x86",
                         # ---- layout, memory, matrix, img2col, comm families
                         "left_blayout": "col_major",
                         "left_blayout_fixed": False,
                         "tinsert_split": False,
                         "cube_static_shapes_chain": False,
                         "mad_f32_modes": frozenset(),
                         # TMATMUL / TMATMUL_ACC stay f32 BLAS (speed: a k-loop is 100x
                         # slower at 128^3); "sequential" accumulation runs them as the rest
                         "mad_sequential": frozenset({
                             "TMATMUL_BIAS", "TGEMV", "TGEMV_ACC", "TGEMV_BIAS", "TMATMUL_MX",
                             "TGEMV_MX"}),
                         "fixpipe_f16_saturation": "window",
                         "fixpipe_relu_nan": "zero",
                         "fillpad_whole_tile": True,
                         # ---- cycle model, conformance
                         "conformance_reference": True,
                         },
                     doc=__doc__ or "", plan={}, inherit_behaviour=False)

"""Ascend A5 (include/pto/npu/a5, buffer_limits.hpp)."""

from __future__ import annotations

from itertools import product

from ..enums import TileType
from ..enums import TileType as T
from .a2a3 import TARGET as A2A3
from .base import Rule, pairs, rule

KiB = 1024

#: L0A_MX / L0B_MX: 4 KiB, buffer_limits.hpp's A5 ScaleLeft / ScaleRight, and the range the
#: scale address (L0A / L0B address >> 4, A5 utils.hpp GetScaleAddr) gives a 64 KiB L0A / L0B
BUFFERS = {"UB": 256 * KiB, "L1": 512 * KiB, "L0A": 64 * KiB, "L0B": 64 * KiB, "L0C": 256 * KiB,
           "BIAS": 4 * KiB, "FB": 4 * KiB, "L0A_MX": 4 * KiB, "L0B_MX": 4 * KiB}

#: PTOAS PlanMemory's A5 memory spec (lib/PTO/Transforms/PTOPlanMemory.cpp, kA5, given there in
#: bits): UB and Scaling planned as 248 KiB, Bias as 64 KiB
PLAN = {"UB": (248 * KiB, 32), "L1": (512 * KiB, 32), "L0A": (64 * KiB, 512),
        "L0B": (64 * KiB, 512), "L0C": (256 * KiB, 512), "BIAS": (64 * KiB, 32),
        "FB": (248 * KiB, 32)}

I124 = "i8 ui8 i16 ui16 i32 ui32"
I1248 = I124 + " i64 ui64"
ALLNUM = I1248 + " f16 bf16 f32"
_CMP = "ui32 i32 i64 ui64 ui16 i16 ui8 i8 f32 f16 bf16"
#: the predicate tile of TCMP / TCMPS: ui32 (the pages), and the 1-byte tiles PTOAS's A5
#: verifier asks of tcmp (PTO.cpp TCmpOp::verify: "expects dst element type to be i8") and its
#: tilelang cases use. A5's TCmp.hpp / TCmps.hpp take any row-major dst: the bits of row r go
#: to dst row r (psts at dst + r * RowStride * sizeof(dst) bytes), LSB first
CMP_DST = ("ui32", "ui8", "i8")
B124 = "i8 ui8 i16 ui16 i32 ui32 f16 bf16 f32"
GATHER = "i8 ui8 i16 ui16 i32 ui32 f16 bf16 f32 f8E4M3 f8E5M2"
#: what micro-ISA loads, stores and DMA move: bytes of any element type
MICRO_ANY = ALLNUM + " f8E4M3 f8E5M2 f8E8M0 hif8 f4E2M1x2 f4E1M2x2"
MOVE_TYPES = "i8 ui8 f8E5M2 f8E4M3 f8E8M0 f16 bf16 f32 i32"
# the element types PTOAS's VPTO verifier calls low-precision: an arithmetic or select vector op
# refuses them with its own words (vadd_low_precision_verify_invalid.pto and its kin)
LOW_PRECISION = frozenset({"f8E4M3", "f8E5M2", "f8E8M0", "hif8", "f4E2M1x2", "f4E1M2x2",
                           "bf16x2"})


def low_precision(operand: str) -> dict[str, object]:
    """PTOAS's words for a low-precision ``operand`` (``rule(..., **low_precision("lhs"))``)."""
    return {"says": f"{operand} type must not use low-precision vector element type",
            "says_when": LOW_PRECISION}

#: Acc conversions: plain f32 -> f16/bf16; quantised f32 -> i8/ui8/f16/bf16/f8E4M3 and
#: i32 -> i8/ui8/f16/bf16
ACC_CONVERT = frozenset({("f32", "f16"), ("f32", "bf16"), ("f32", "i8"), ("f32", "ui8"),
                         ("f32", "f8E4M3"), ("i32", "i8"), ("i32", "ui8"), ("i32", "f16"),
                         ("i32", "bf16")})
EXTRACT_MOVES = frozenset({(T.Mat, T.Left), (T.Mat, T.Right), (T.Mat, T.ScaleLeft),
                           (T.Mat, T.ScaleRight), (T.Acc, T.Mat), (T.Acc, T.Vec),
                           (T.Vec, T.Vec), (T.Vec, T.Mat)})
INSERT_MOVES = frozenset({(T.Acc, T.Mat), (T.Acc, T.Vec), (T.Vec, T.Vec), (T.Vec, T.Mat)})
ACC_MOVES = frozenset({(T.Acc, T.Mat), (T.Acc, T.Vec)})
FP8 = ("f8E4M3", "f8E5M2")
FP4 = ("f4E2M1x2", "f4E1M2x2")
# (hif8, hif8) -> f32: upstream's a5 CheckMadValid (shared by every TMATMUL / TGEMV form), the
# TMATMUL / TGEMV* pages ("hifloat8_t/hifloat8_t (target-defined)") and PTOAS's TileLib dtypes
MM = [("f32", "f16", "f16"), ("f32", "bf16", "bf16"), ("f32", "f32", "f32"),
      ("i32", "i8", "i8"), ("f32", "hif8", "hif8")] + [("f32", a, b) for a in FP8 for b in FP8]
MX = [("f32", a, b) for a in FP8 for b in FP8] + [("f32", a, b) for a in FP4 for b in FP4]
#: PTOAS's words for the MX type rule (tmatmul_mx_low_precision_invalid_a5.pto)
MX_SAYS = ("expects A5 mx lhs/rhs element types to be a supported fp8/fp8 or fp4/fp4 pair, "
           "with an f32 result")
SAME = [(d, d) for d in ("i8 ui8 f8E4M3 f8E5M2 f8E8M0 hif8 f16 bf16 f32 i32 i64 ui64 "
                         "f4E2M1x2 f4E1M2x2").split()]
CONVERT = pairs("f32->f16 f32->bf16 f32->i8 f32->ui8 f32->f8E4M3 i32->f16 i32->bf16 i32->i8 "
                "i32->ui8 f16->f32 bf16->f32")
PATHS = {(T.Mat, T.Left), (T.Mat, T.Right), (T.Mat, T.Bias), (T.Mat, T.Scaling),
         (T.Mat, T.ScaleLeft), (T.Mat, T.ScaleRight), (T.Vec, T.Vec), (T.Vec, T.Mat),
         (T.Acc, T.Vec), (T.Acc, T.Mat)}
#: T{ROW,COL}EXPAND{ADD,SUB,MUL,DIV,MAX,MIN}: the pages list bf16, i8 and ui8 for A5 too
EXPAND_OP = "f16 f32 i16 i32 ui16 ui32 bf16 i8 ui8"
COL_RED = "f16 f32 i8 ui8 i16 ui16 i32 ui32 bf16"
ROW_ARG = rule(list(product("f16 bf16 i16 ui16 f32 i32 ui32".split(), ("i32", "ui32"))))
# index-only: 32-bit indices; value+index: 16-bit for 2-byte sources (rule _npu_idx_width)
COL_ARG = rule(list(product("i8 ui8 i16 ui16 i32 ui32 f16 f32".split(),
                            ("i16", "ui16", "i32", "ui32"))),
               says="expects src element type to be 1, 2, or 4 bytes wide",
               says_when={"i64", "ui64", "f64"})


#: entries that differ from a2a3 (the rest are a2a3's)
LEGALITY: dict[str, Rule] = {
    "TPREFETCH": rule(),  # (any element type: a copy; A2/A3 has no low-precision ones)
    # ---- core ------------------------------------------------------------------------------------
    # the foundation instructions (memory, seeds, TADD).
    # the packed fp4 pairs too: A5's TLoad.hpp moves them as bytes (IsFP4 paths of the Vec and
    # Mat ND / DN loops; tload_common.hpp's ND2NZ rounds odd counts up, and refuses DN2NZ)
    "TLOAD": rule("i8 ui8 i16 ui16 i32 ui32 i64 ui64 f16 bf16 f32 f8E4M3 f8E5M2 f8E8M0 hif8 "
                  "f4E2M1x2 f4E1M2x2"),
    # no Mat store on A5 (TSTORE.md, implementation checks (A5)): Vec and Acc sources only
    "TSTORE": rule("i8 ui8 i16 ui16 i32 ui32 i64 ui64 f16 bf16 f32 f8E4M3 f8E5M2 f8E8M0 hif8",
                   locs=[TileType.Vec, TileType.Acc],
                   locs_says="expects A5 tstore src to use loc=vec or loc=acc"),
    "TSTORE_FP": rule(pairs("f32->i8 f32->ui8 f32->f16 f32->bf16 f32->f8E4M3 f32->f32 "
                            "f32->hif8 i32->i8 i32->ui8 i32->f16 i32->bf16"), locs=[TileType.Acc]),
    "TROWSUM": rule(pairs("f16->f16 f32->f32 i32->i32 i16->i16 i64->i64 ui64->ui64")),
    "TPARTADD": rule("ui8 i8 ui16 i16 ui32 i32 i64 ui64 f16 f32 bf16"),
    "TPARTMUL": rule("ui8 i8 ui16 i16 ui32 i32 f16 f32 bf16"),
    "TPARTMAX": rule("i8 ui8 i16 ui16 i32 ui32 i64 ui64 f16 bf16 f32"),
    "TPARTMIN": rule("i8 ui8 i16 ui16 i32 ui32 i64 ui64 f16 bf16 f32"),
    "TADD": rule("i32 ui32 i64 ui64 f32 i16 ui16 f16 bf16 ui8 i8 f8E4M3 f8E5M2"),

    # ---- elementwise -----------------------------------------------------------------------------
    # the elementwise, tile-scalar, fused and TCVT instructions (spec/notes/ops.tsv column
    # dtypes_A5, including the flat pages' 64-bit additions, and the manual pages). The
    # predicate tile of TCMP/TCMPS: CMP_DST. TADDC, TSUBC, TADDSC and TSUBSC have no pto-isa NPU
    # intrinsic; PTOAS accepts them on A5 and expands each into two vector adds / subtracts
    # (lit add_carry_tile_native.pto, sub_tile_native.pto): the types both halves take.
    "TADDC": rule(ALLNUM),
    "TSUBC": rule(ALLNUM),
    "TADDSC": rule(ALLNUM),
    "TSUBSC": rule(ALLNUM),
    # tile-tile
    "TABS": rule("f32 f16 i32 i16 i8"),
    "TAND": rule(I124),
    "TCMP": rule([(s, d) for s in _CMP.split() for d in CMP_DST]),
    "TCVT": rule(pairs(
        "f32->f32 f32->f16 f32->bf16 f32->i16 f32->i32 f32->i64 f32->f8E4M3 f32->f8E5M2 "
        "f16->f32 f16->i32 f16->i16 f16->i8 f16->ui8 bf16->f32 bf16->i32 bf16->f16 "
        "i16->ui8 i16->f16 i16->f32 i16->ui32 i16->i32 i32->f32 i32->i16 i32->ui16 i32->i64 "
        "bf16->f4E1M2x2 bf16->f4E2M1x2 "
        "i32->ui8 i64->f32 i64->i32 ui8->f16 ui8->ui16 i8->f16 i8->i16 i8->i32 "
        "ui32->ui8 ui32->ui16 ui32->i16 f8E4M3->f32 f8E5M2->f32 f32->hif8 f16->hif8 "
        # A5-only sources (the TCVT page's supported-conversions table): HiF8 widens to f32,
        # the packed fp4 pairs to bf16
        "hif8->f32 f4E1M2x2->bf16 f4E2M1x2->bf16")),
    "TDIV": rule("i32 ui32 f32 i16 ui16 f16 i64 ui64"),
    "TFMOD": rule("f16 f32 ui16 i16 ui32 i32"),
    "TMAX": rule(ALLNUM),
    "TMIN": rule(ALLNUM),
    "TMUL": rule("i32 ui32 f32 i16 ui16 f16 bf16 i64 ui64"),
    "TNEG": rule("i32 i16 ui32 ui16 f16 f32 bf16"),
    "TOR": rule(I124),
    "TPOW": rule(I124 + " f16 f32 bf16"),
    "TRECIP": rule("f32 f16"),
    "TREM": rule("f32 i32 ui32 f16 i16 ui16 i64 ui64"),
    "TSEL": rule(ALLNUM),
    "TSHL": rule(I1248),
    "TSHR": rule(I1248),
    "TSUB": rule(ALLNUM),
    # tile-scalar
    "TADDS": rule(ALLNUM),
    "TSUBS": rule(ALLNUM),
    "TMULS": rule("ui16 i16 ui32 i32 f16 f32 bf16 i64 ui64"),
    "TDIVS": rule(I1248 + " f16 f32"),
    "TMAXS": rule(ALLNUM),
    "TMINS": rule(ALLNUM),
    "TSHLS": rule(I1248),
    "TSHRS": rule(I1248),
    "TFMODS": rule("i16 ui16 i32 ui32 f16 f32"),
    "TREMS": rule("f32 i32 ui32 f16 i16 ui16 i64 ui64"),
    "TPOWS": rule(I124 + " f16 f32 bf16"),
    "TEXPANDS": rule(I1248 + " f16 bf16 f32"),  # (TEXPANDS.md: bfloat16_t on A5 too)
    "TCMPS": rule([(s, d) for s in _CMP.split() for d in CMP_DST]),
    "TSELS": rule(ALLNUM),

    # ---- img2col ---------------------------------------------------------------------------------
    # TIMG2COL (TIMG2COL.md implementation checks) and its configuration instructions.
    "TIMG2COL": rule("i8 ui8 i16 ui16 i32 ui32 f16 bf16 f32"),

    # ---- irregular -------------------------------------------------------------------------------
    # the irregular family (ops.tsv dtypes_A5 and the manual pages).
    "TTRI": rule("i64 ui64 i32 i16 i8 ui32 ui16 ui8 f16 f32 bf16"),
    # (and hif8 bytes, which PTOAS's A5 verifier takes: tgather_low_precision_a5_emitc.pto;
    # the gather moves elements without reading them as numbers)
    "TGATHER": rule(GATHER + " hif8",
                    says="expects A5 gather src/dst element type to be i8/i16/i32/f16/f32"),
    "TSCATTER": rule(B124 + " i64 ui64"),
    # (PTO_IR_manual pto.mgather / pto.mscatter: A5 also moves !pto.hif8 elements)
    "MGATHER": rule(GATHER + " hif8"),
    "MSCATTER": rule(GATHER + " hif8"),
    "THISTOGRAM": rule("ui16 ui32"),
    "TRANDOM": rule("i32 ui32"),
    # MXFP8 (f32/f16/bf16 -> e4m3 bytes), MXFP4 (f16/bf16 -> packed e2m1), INT8 sym/asym (f32)
    # the quant words, and A5's payload of f16 / bf16 / f32 scales (PTOAS
    # designs/fixpipe-tpipe-design.md 7.2), which ptoisa refuses by name when it runs
    # (says=: PTOAS's words for the .pto payload rule, which takes the scales only)
    "SET_QUANT_VECTOR": rule("i64 ui64 f16 bf16 f32", locs=[TileType.Scaling],
                             says="expects 'scaling_tile' element type to be f16, bf16, or "
                                  "f32 on A5"),
    "TQUANT": rule(pairs("f32->i8 f16->i8 bf16->i8 f16->f4E2M1x2 bf16->f4E2M1x2 f32->ui8 "
                         "f16->ui8 bf16->ui8")),

    # ---- layout ----------------------------------------------------------------------------------
    # the layout-and-rearrangement family (ops.tsv and the manual pages: Mat ->
    # Left/Right/ScaleLeft/ScaleRight, Acc -> Mat/Vec, Vec -> Vec/Mat; TPACK and TGET_SCALE_ADDR
    # are a5-only).
    # packed fp4 pairs on the cube's Mat -> Left / Right paths only (A5 TExtract.hpp: the
    # isFp4Type branches of TExtractToLeft / TExtractToRight; its Vec -> Mat copy has none)
    "TEXTRACT": rule(MOVE_TYPES + " f4E2M1x2 f4E1M2x2", moves=EXTRACT_MOVES, convert=ACC_CONVERT,
                     packed_moves=frozenset({(T.Mat, T.Left), (T.Mat, T.Right)}),
                     says="expects A5 textract element type to be an fp8/f16/bf16/f32 or int8 "
                          "family type"),
    "TEXTRACT_FP": rule(MOVE_TYPES, moves=ACC_MOVES, convert=ACC_CONVERT,
                        convert_says="expects A5 acc preQuantScalar textract element types to "
                                     "be (src=f32,dst=i8/fp8/f16/bf16/f32) or "
                                     "(src=i32,dst=i8/f16/bf16)"),
    # (pto-isa's a5 TInsert.hpp also takes hif8 and the packed FP4 pairs)
    "TINSERT": rule(MOVE_TYPES + " hif8 f4E2M1x2 f4E1M2x2", moves=INSERT_MOVES,
                    convert=ACC_CONVERT),
    # (its vector quant also writes hif8: ops.tsv's A5 TINSERT quant f32 -> hif8; PTOAS's
    # TileLib lowers the Acc -> Mat one, expand_tile_op_tilelang_tinsert_fp_acc2mat.pto)
    "TINSERT_FP": rule(MOVE_TYPES + " hif8", moves=ACC_MOVES,
                       convert=ACC_CONVERT | {("f32", "hif8")}),
    "TGET_SCALE_ADDR": rule(),
    "TPACK": rule(),

    # ---- matrix ----------------------------------------------------------------------------------
    # the cube instructions (incl. fp8 and MX) and TMOV.
    "TMATMUL": rule(MM),
    "TMATMUL_ACC": rule(MM),
    "TMATMUL_BIAS": rule(MM),
    "TGEMV": rule(MM),
    "TGEMV_ACC": rule(MM),
    "TGEMV_BIAS": rule(MM),
    "TMATMUL_MX": rule(MX, says=MX_SAYS),
    "TGEMV_MX": rule(MX, says=MX_SAYS),
    "TMOV": rule(SAME + CONVERT, paths=frozenset(PATHS)),
    "TMOV_FP": rule(SAME + CONVERT, paths=frozenset({(T.Acc, T.Vec), (T.Acc, T.Mat)})),

    # ---- reduce_expand ---------------------------------------------------------------------------
    # the reduce-and-expand family (ops.tsv dtypes_A5, the manual pages).
    "TROWMAX": rule("f16 f32 i32 i64 ui64 i16 i8 ui8"),
    "TROWMIN": rule("f16 f32 i32 i64 ui64 i16 i8 ui8"),
    "TROWARGMAX": ROW_ARG,
    "TROWARGMIN": ROW_ARG,
    "TCOLSUM": rule([(d, d) for d in (COL_RED + " i64 ui64").split()]),
    "TCOLPROD": rule([(d, d) for d in "f32 f16 bf16 i16 ui16 i32 ui32".split()]),
    "TCOLMAX": rule([(d, d) for d in COL_RED.split()]),
    "TCOLMIN": rule([(d, d) for d in COL_RED.split()]),
    "TCOLARGMAX": COL_ARG,
    "TCOLARGMIN": COL_ARG,
    "TROWEXPAND": rule("i8 ui8 i16 ui16 i32 ui32 i64 ui64 f16 bf16 f32"),
    "TCOLEXPAND": rule("i8 ui8 i16 ui16 i32 ui32 i64 ui64 f16 bf16 f32 f8E4M3 f8E5M2 f8E8M0"),
    **{f"TROWEXPAND{op}": rule(EXPAND_OP) for op in ("ADD", "SUB", "MUL", "DIV", "MAX", "MIN")},
    **{f"TCOLEXPAND{op}": rule(EXPAND_OP) for op in ("ADD", "SUB", "MUL", "DIV", "MAX", "MIN")},
    "TINTERLEAVE": rule("i32 ui32 f32 i16 ui16 f16 bf16 ui8 i8"),
    "TDEINTERLEAVE": rule("i32 ui32 f32 i16 ui16 f16 bf16 ui8 i8"),
    # ---- micro (vector micro-ISA, VPTO) ----------------------------------------------------------
    # the "A5 types" lines of spec/ptoas-main/isa/micro-isa/ 05-08 (keyed on the first
    # register or pointer operand); loads, stores and DMA move bytes of any element type
    **{op: rule(MICRO_ANY) for op in ("MTE_GM_UB", "MTE_UB_GM", "VLDS", "VSTS")},
    # cube micro-ops (16-cube-matmul.md): moves of any element type; MAD keyed on lhs, the
    # type combinations checked when it runs; FIXPIPE keyed on the accumulator
    **{op: rule(MICRO_ANY) for op in ("MTE_GM_L1", "MTE_L1_UB", "MTE_GM_L1_FRAC", "MTE_L1_L0A",
                                      "MTE_L1_L0B", "COPY_GM_TO_CBUF",
                                      "RAW_FILL_L1", "LOAD_CBUF_TO_CA", "MTE_L1_L0A_MX",
                                      "MTE_L1_L0B_MX")},
    "MTE_L1_BT": rule("f32 i32"),
    "MTE_L1_FB": rule("f16 bf16 f32"),
    **{op: rule("f16 bf16 f32 i8 f8E4M3 f8E5M2 hif8") for op in ("MAD", "MAD_ACC", "MAD_BIAS")},
    **{op: rule("f8E4M3 f8E5M2") for op in ("MAD_MX", "MAD_MX_ACC", "MAD_MX_BIAS")},
    **{op: rule("f32 i32") for op in ("MTE_L0C_GM", "MTE_L0C_UB", "MTE_L0C_L1")},
    **{op: rule() for op in ("PLDS", "PLDI", "PSTS", "PSTI", "VBITCAST", "VBR", "VDUP")},
    **{op: rule() for op in ("PSET_B8", "PSET_B16", "PSET_B32", "PGE_B8", "PGE_B16", "PGE_B32",
                             "PLT_B8", "PLT_B16", "PLT_B32", "PLTM_B8", "PLTM_B16",
                             "PLTM_B32")},
    # (PTOAS's words for low-precision lanes: vadd_low_precision_verify_invalid.pto,
    # vmuls_... and vsel_...; the operand names are those of its op definitions)
    **{op: rule(I1248 + " f16 bf16 f32", **low_precision("lhs")) for op in ("VADD", "VSUB")},
    **{op: rule(I124 + " f16 bf16 f32") for op in ("VMAX", "VMIN")},
    "VMUL": rule("i16 ui16 i32 ui32 f16 bf16 f32"),
    # (the page: f16, f32, and signed i16 / i32 through the A5 software library; PTOAS's
    # words for another integer lane type: issue_1241_vdiv_i16_reject.pto)
    "VDIV": rule("i16 i32 f16 f32",
                 says="A5 integer pto.vdiv is not supported for {result} with mask {mask}; "
                      "only signed or signless i16 vectors with a b16 mask and i32 vectors "
                      "with a b32 mask are materialized through the A5 Software Library",
                 says_when={"i8", "ui8", "ui16", "ui32", "i64", "ui64"}),
    # (bitwise ops on float lanes too: PTOAS takes them, and the upstream vor case uses f16)
    **{op: rule(MICRO_ANY, says="does not support bf16x2 vector elements; low-precision bitwise "
                               "operations require an 8-bit payload type", says_when={"bf16x2"})
       for op in ("VAND", "VOR", "VXOR", "VNOT")},
    **{op: rule(I1248) for op in ("VSHL", "VSHR")},
    **{op: rule("i32 ui32") for op in ("VADDC", "VSUBC")},
    **{op: rule("i8 i16 i32 f16 f32") for op in ("VABS", "VNEG")},
    **{op: rule("f16 f32") for op in ("VEXP", "VLN", "VSQRT")},
    "VRELU": rule("i32 f16 f32", says="requires si32/i32/f16/f32 vector element type"),
    **{op: rule(I124 + " f16 bf16 f32", **low_precision("input"))
       for op in ("VADDS", "VMULS", "VMAXS", "VMINS", "VLRELU")},
    **{op: rule(I124) for op in ("VSHLS", "VSHRS")},
    # compare / select (11), reductions (10: "A5 types" i8-i32, f16, f32), rearrangement (12)
    **{op: rule(I124 + " f16 bf16 f32") for op in ("VCMP", "VCMPS", "VSELR", "VINTLV",
                                                   "VDINTLV", "VSQZ")},
    "VSEL": rule(I124 + " f16 bf16 f32", **low_precision("src0")),
    **{op: rule(I124 + " f16 f32") for op in ("VCADD", "VCMAX", "VCMIN", "VCBMAX", "VCBMIN",
                                              "VCGADD", "VCGMAX", "VCGMIN")},
    "VCPADD": rule("f16 f32"),
    "VUSQZ": rule("i8 i16 i32"),
    "VPACK": rule("i16 ui16 i32 ui32"),
    **{op: rule("i8 ui8 i16 ui16") for op in ("VSUNPACK", "VZUNPACK")},
    # gathers / scatters (03): the forms the chapter lists (keyed on the UB pointer / value)
    "VGATHER2": rule("i8 ui8 i16 ui16 f16 bf16 i32 ui32 f32"),
    **{op: rule("i32 ui32 f32") for op in ("VGATHER2_BC",)},
    "VGATHERB": rule(MICRO_ANY),
    "VSCATTER": rule("i8 ui8 i16 ui16 f16 bf16 i32 ui32 f32"),
    **{op: rule() for op in ("PNOT", "PSEL", "PBITCAST", "PPACK", "PUNPACK", "PINTLV_B8",
                             "PINTLV_B16", "PINTLV_B32", "PDINTLV_B8", "PDINTLV_B16",
                             "PDINTLV_B32")},
    # pto.vcvt: the per-form lines of micro-isa/09-conversion-ops.md, and the low-precision
    # float forms and i64 -> f32 that PTOAS takes (its cases vcvt-low-precision-special and
    # vsts-packed-dist-mask-granularity)
    "VCVT": rule(pairs(
        "f32->i16 f32->i32 f32->i64 f16->i32 f16->i16 f16->i8 f16->ui8 bf16->i32 "
        "f32->f16 f32->bf16 bf16->f16 f16->f32 bf16->f32 "
        "ui8->f16 i8->f16 i16->f16 i16->f32 i32->f32 "
        "ui8->ui16 ui8->ui32 i8->i16 i8->i32 ui16->ui8 ui16->ui32 i16->ui8 i16->ui32 i16->i32 "
        "ui32->ui8 ui32->ui16 ui32->i16 i32->ui8 i32->ui16 i32->i16 i32->i64 i64->f32 "
        "f32->f8E4M3 f32->f8E5M2 f32->hif8 f8E4M3->f32 f8E5M2->f32 hif8->f32 "
        "bf16->f4E1M2x2 bf16->f4E2M1x2 f4E1M2x2->bf16 f4E2M1x2->bf16")),
    # DSA / SFU (micro-isa/13): the page's A5 types; vmula as vmul's, vci its result types
    **{op: rule("f16 f32") for op in ("VPRELU", "VEXPDIF", "VAXPY")},
    "VMULA": rule("i16 ui16 i32 ui32 f16 bf16 f32"),
    "VMADD": rule("f16 bf16 f32"),
    "VMULL": rule("i32 ui32"),
    "VCI": rule("i8 i16 i32 f16 f32"),
    "VBITSORT": rule("f16 f32"),
    # dual and block-strided loads / stores (micro-isa/03): bytes of any element type
    **{op: rule(MICRO_ANY) for op in ("VLDSX2", "VSTSX2", "VSLDB", "VSSTB")},
    # SPR AR (micro-isa/03): stored through ui32 / i32 UB pointers
    "SPRCLR": rule(),
    # SIMT (17-simt.md: "These operations are available on A5"): types checked when they run
    **{op: rule() for op in (
        "STORE_VFSIMT_INFO", "GET_TID_X", "GET_TID_Y", "GET_TID_Z", "GET_BLOCK_DIM_X",
        "GET_BLOCK_DIM_Y", "GET_BLOCK_DIM_Z", "GET_GRID_DIM_X", "GET_GRID_DIM_Y",
        "GET_GRID_DIM_Z", "GET_BLOCK_IDX_X", "GET_BLOCK_IDX_Y", "GET_BLOCK_IDX_Z", "GET_LANEID",
        "GET_LANEMASK_EQ", "GET_LANEMASK_LT", "GET_LANEMASK_LE", "GET_LANEMASK_GT",
        "GET_LANEMASK_GE", "LOAD", "STORE", "LDG", "STG", "ATOMIC_EXCH", "ATOMIC_ADD",
        "ATOMIC_SUB", "ATOMIC_MIN", "ATOMIC_MAX", "ATOMIC_AND", "ATOMIC_OR", "ATOMIC_XOR",
        "ATOMIC_CAS", "VOTE_ALL", "VOTE_ANY", "VOTE_UNI", "VOTE_BALLOT", "SHUFFLE_IDX",
        "SHUFFLE_UP", "SHUFFLE_DOWN", "SHUFFLE_BFLY", "REDUX_ADD", "REDUX_MAX", "REDUX_MIN",
        "KEEP", "RESUME", "SYNCTHREADS", "THREADFENCE", "THREADFENCE_BLOCK",
        "ABSF", "SQRT", "EXP", "LOG", "POW", "CEIL", "FLOOR", "RINT", "ROUND", "FMIN", "FMAX",
        "FMA", "CONVERT")},
    **{op: rule("ui32 i32") for op in ("SPRSTI", "SPRSTS")},
    # the register-driven DMA (spec isa-legacy/02-dma-copy.md)
    **{op: rule(MICRO_ANY) for op in ("COPY_GM_TO_UBUF", "COPY_UBUF_TO_GM")},
    **{f"SET_LOOP{k}_{w}": rule() for k in ("_SIZE", "1_STRIDE", "2_STRIDE")
       for w in ("OUTTOUB", "UBTOOUT")},
    # the MTE3 atomic mode: s32 add
    **{op: rule() for op in ("SET_ATOMIC_S32", "SET_ATOMIC_ADD", "SET_ATOMIC_NONE")},
    # unaligned streams (micro-isa/03): bytes of any element type
    **{op: rule(MICRO_ANY) for op in ("VLDAS", "VLDUS", "VSTUS", "VSTUR", "VSTAR",
                                            "VSTAS")},
    "INIT_ALIGN": rule(),
    "VMRGSORT4": rule("f32 f16"),
    "GET_VMS4_SR": rule(),
    "PSTU": rule("ui16 ui32"),
}


#: what a program built by PTOAS's ``--pto-backend=vpto`` (``--enable-tile-op-expand``) does
#: unlike pto-isa's a5 headers: the tile ops PTOAS expands through its a5 TileLib (Python
#: templates, lib/TileOps/a5/*.py) where the template provably computes something else
#: (docs/targets.md, "TileLib vs pto-isa differences"; each trait's comment cites the file)
VPTO_TILELIB = {
    # _fillpad.py _max / _min, _load_store.py _pad_max / _pad_min, _part.py pad_max / pad_min
    "pad_float_extremes": "finite",
    # _fillpad.py _fill / _fill_inplace: columns up to dst's valid columns
    "fillpad_to_valid_cols": True,
    # tsort32.py _pad_min (template_tsort32_with_tmp)
    "sort32_pad": "code_as_number",
    # textract.py template_textract_mat2right: mte_l1_l0b without transpose
    "mat2right_transposing_load": False,
    # tmrgsort.py template_tmrgsort_single_list: repeat_times = valid_cols // (4 * blockLen)
    "mrgsort_partial_group": True,
    # tcmps.py _emit_tcmps_1d / _emit_tcmps_2d: a packed predicate stream, not dst's rows
    "tcmps_predicate_stream": True,
}

# TADDRELU: PTOAS's A2/A3 VADDRELU lowering; no A5 form is documented
TARGET = A2A3.derive("a5", buffers=BUFFERS, legality=LEGALITY, doc=__doc__ or "", plan=PLAN,
                     removed=("TADDRELU",), backends={"vpto": VPTO_TILELIB},
                     traits={
                         "cmp_i32_eq_only": False,
                         "predicate_whole_stores": True,
                         "level3_needs_tmp": False,
                         "vec_nz_views_by_tile": True,
                         "vpto_dma_unit_inner_stride": False,
                         "mx_wide_scales_at_data_addr": True,
                         "quant_vector_types": frozenset({"f16", "bf16", "f32"}),
                         "quant_pairs": frozenset({
                             ("f32", "i8"), ("f32", "ui8"), ("f32", "f16"), ("f32", "bf16"),
                             ("f32", "f8E4M3"), ("f32", "hif8"), ("i32", "i8"), ("i32", "ui8"),
                             ("i32", "f16"), ("i32", "bf16")}),
                         # ---- layout, memory, matrix, img2col, comm families
                         "left_blayout": "col_major",
                         "tinsert_split": True,
                         "cube_static_shapes_chain": False,
                         "mad_f32_modes": frozenset({"hf32", "tf32"}),
                         # ---- sync, mixed kernels
                         "cross_core_flags_per_subblock": True,
                         "cross_core_wait_holds_pipe": True,
                         "nosplit_vector_subblock0_only": True,
                         "pipe_epilogue_a5_quant": True,
                         "pipe_local_slot_num": False,
                         "same_pipe_barriers": frozenset(),
                         # ---- cycle model
                         "cost_table": "a5_vf",
                         # the A5 fit (a5_fit.json) is of A5 measurements; the a2a3
                         # coefficients it falls back to stay estimates here
                         "costs_measured": True,
                         # upstream has no A5 arch config: its one (A2/A3) clock, assumed
                         "clock_hz": 1.85e9,
                         # no upstream figure for A5's core count: assumed 32 cube cores (the
                         # 32 blocks its matmul_mxfp4_performance README runs as one launch)
                         # with A5's 1:2 cluster, 64 vector cores
                         "cube_cores": 32,
                         "vector_cores": 64,
                     },
                     inherit_behaviour=False)

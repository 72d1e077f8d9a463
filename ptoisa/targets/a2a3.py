"""Ascend A2/A3 (include/pto/npu/a2a3, buffer_limits.hpp)."""

from __future__ import annotations

from itertools import product

from ..dtypes import ALL
from ..enums import TileType
from ..enums import TileType as T
from .base import Rule, Target, Traits, pairs, rule

KiB = 1024

BUFFERS = {"UB": 192 * KiB, "L1": 512 * KiB, "L0A": 64 * KiB, "L0B": 64 * KiB, "L0C": 128 * KiB,
           "BIAS": 1 * KiB, "FB": 2 * KiB}

#: PTOAS PlanMemory's A3 memory spec (lib/PTO/Transforms/PTOPlanMemory.cpp, kA3, given there in
#: bits): the hardware sizes, except that Bias is planned as 64 KiB and Scaling as large as UB
PLAN = {"UB": (192 * KiB, 32), "L1": (512 * KiB, 32), "L0A": (64 * KiB, 512),
        "L0B": (64 * KiB, 512), "L0C": (128 * KiB, 512), "BIAS": (64 * KiB, 32),
        "FB": (192 * KiB, 32)}

ANY_1_2_4 = [d for d in ALL if d.itemsize in (1, 2, 4) and d.name != "i1"]
B12 = "i8 ui8 i16 ui16"
I124 = "i8 ui8 i16 ui16 i32 ui32"
BASIC = "i32 i16 f16 f32"
B124 = "i8 ui8 i16 ui16 i32 ui32 f16 bf16 f32"
#: what VMI loads and stores move: any element type
VMI_ANY = I124 + " i64 ui64 f16 bf16 f32 f8E4M3 f8E5M2 f8E8M0 hif8 f4E2M1x2 f4E1M2x2 bf16x2"
MOVE_TYPES = "i8 ui8 i16 ui16 i32 ui32 f16 bf16 f32"
#: Acc -> Mat conversions (plain f32 -> f16/bf16, quantised f32 -> i8, i32 -> i8/ui8/f16/i16)
ACC_CONVERT = frozenset({("f32", "f16"), ("f32", "bf16"), ("f32", "i8"), ("i32", "i8"),
                         ("i32", "ui8"), ("i32", "f16"), ("i32", "i16")})
EXTRACT_MOVES = frozenset({(T.Mat, T.Left), (T.Mat, T.Right), (T.Acc, T.Mat), (T.Vec, T.Vec)})
ACC_MOVES = frozenset({(T.Acc, T.Mat)})
#: TINSERT: pto-isa's A2/A3 path is Acc -> Mat; PTOAS also emits TINSERT Vec -> Vec for A3 (a
#: UB -> UB copy, as TEXTRACT Vec -> Vec: lit extract_insert_tile_native.pto)
INSERT_MOVES = frozenset({(T.Acc, T.Mat), (T.Vec, T.Vec)})
MM = [("f32", "f16", "f16"), ("f32", "bf16", "bf16"), ("f32", "f32", "f32"), ("i32", "i8", "i8")]
SAME = [(d, d) for d in "i8 ui8 i16 ui16 i32 ui32 i64 ui64 f16 bf16 f32".split()]
CONVERT = pairs("f32->f16 f32->bf16 f32->i8 f32->ui8 i32->f16 i32->i8 i32->ui8 i32->i16 "
                "f16->f32")
# Acc -> Vec: the PTOAS verifier's A2A3 pairs include it (PTO_IR_manual, pto.tmov, and the
# corpus's tmov_acc_to_vec_mode_a5_emitc.pto lowers it for a3), the C++ A2A3 page does not
PATHS = {(T.Mat, T.Left), (T.Mat, T.Right), (T.Mat, T.Bias), (T.Mat, T.Scaling),
         (T.Vec, T.Vec), (T.Acc, T.Mat), (T.Acc, T.Vec)}
SAME4 = "f16 f32 i16 i32"
EXPAND_OP = "f16 f32 i16 i32"
PART = rule(pairs("f16->i16 f16->ui16 f16->i32 f16->ui32 f32->i32 f32->ui32"))
ROW_ARG = rule(list(product(("f16", "f32"), ("i32", "ui32"))))
# index-only: 32-bit indices; value+index: 16-bit for 2-byte sources (rule _npu_idx_width)
COL_ARG = rule(pairs("f16->i32 f16->ui32 f16->i16 f16->ui16 ui16->i32 ui16->ui32 ui16->i16 "
                     "ui16->ui16 f32->i32 f32->ui32 ui32->i32 ui32->ui32"),
               # (PTOAS's words when the source is too wide, issue554_tcolarg_invalid_width.pto)
               says="expects src/tmp element type to be 1, 2, or 4 bytes wide",
               says_when={"i64", "ui64", "f64"})


LEGALITY: dict[str, Rule] = {
    # ---- comm ------------------------------------------------------------------------------------
    # the communication instructions (single-process semantics; any element type the GM views
    # carry).
    "TGET": rule(),
    "TPUT": rule(),
    "TGET_ASYNC": rule(),
    "TPUT_ASYNC": rule(),
    "TNOTIFY": rule(),
    "TWAIT": rule(),
    "TTEST": rule(),
    "TBROADCAST": rule(),
    "TREDUCE": rule(),
    "COMM_TGATHER": rule(),
    "COMM_TSCATTER": rule(),

    # ---- core ------------------------------------------------------------------------------------
    # the foundation instructions (memory, seeds, TADD).
    "TASSIGN": rule(),
    "TLOAD": rule("i8 ui8 i16 ui16 i32 ui32 i64 ui64 f16 bf16 f32"),
    "TSTORE": rule("i8 ui8 i16 ui16 i32 ui32 i64 ui64 f16 bf16 f32"),
    # the quantising pairs, and the plain conversions an Acc store makes (fp then unused:
    # PTOAS emits the fp form for them, lit tstore_fp_insert_sync_effects.pto)
    "TSTORE_FP": rule(pairs("f32->i8 f32->ui8 i32->i8 i32->ui8 i32->f16 i32->i16 "
                            "f32->f16 f32->bf16 f32->f32 i32->i32"), locs=[TileType.Acc]),
    "TPRINT": rule("f32 f16 i8 i16 i32 ui8 ui16 ui32"),
    "TROWSUM": rule(pairs("f16->f16 f32->f32 i32->i32 i16->i16")),
    "TFILLPAD": rule(ANY_1_2_4),
    "TFILLPAD_INPLACE": rule(ANY_1_2_4),
    "TFILLPAD_EXPAND": rule(ANY_1_2_4),
    "TPARTADD": rule("i32 i16 f16 f32", row_major=True),
    "TPARTMUL": rule("i32 i16 f16 f32", row_major=True),
    "TPARTMAX": rule("i32 i16 f16 f32", row_major=True),
    "TPARTMIN": rule("i32 i16 f16 f32", row_major=True),
    "TADD": rule("i32 i16 f16 bf16 f32"),

    # ---- elementwise -----------------------------------------------------------------------------
    # the elementwise, tile-scalar, fused and TCVT instructions (spec/notes/ops.tsv column
    # dtypes_A2A3 and the manual pages). The predicate tile of TCMP/TCMPS is ui8.
    # TADDC, TSUBC, TADDSC and TSUBSC have no pto-isa NPU intrinsic, but PTOAS lowers each to
    # two vector instructions (pto.taddc -> TADD, TADD: lit add_carry_tile_native.pto), so they
    # run on A2/A3 for the types both halves take (a rounding after each, as ptoisa computes).
    "TADDC": rule("i32 i16 f16 bf16 f32"),
    "TSUBC": rule(BASIC),
    "TADDSC": rule(BASIC),
    "TSUBSC": rule(BASIC),
    # tile-tile
    "TABS": rule("f32 f16"),
    # TAND / TOR: the page lists 1- and 2-byte integers; PTOAS emits TAND / TOR on i32 and
    # ui32 for A3 (lit bitwise_i32_ui32_a3_emitc.pto: "A2/A3 supports 32-bit bitwise tile
    # operations"), and a bitwise op is the same on a 32-bit lane as on its two 16-bit halves
    "TAND": rule(I124),
    "TCMP": rule(pairs("i32->ui8 f16->ui8 f32->ui8")),
    "TCVT": rule(pairs(
        "f32->f16 f32->f32 f32->bf16 f32->i16 f32->i32 f32->i64 "
        "f16->f32 f16->i32 f16->i16 f16->i8 f16->ui8 bf16->f32 bf16->i32 "
        "i16->f16 i16->f32 i32->f32 i32->i16 i32->i64 i32->f16 i64->f32 i64->i32 "
        "ui8->f16 i8->f16 f16->s4 s4->f16")),
    "TDIV": rule("f16 f32"),
    "TEXP": rule("f32 f16"),
    "TFMOD": rule("f32 f16"),
    "TLOG": rule("f32 f16"),
    "TMAX": rule(BASIC),
    "TMIN": rule(BASIC),
    "TMUL": rule(BASIC),
    "TNEG": rule(BASIC),
    "TNOT": rule(I124),
    "TOR": rule(I124),
    "TPOW": rule("i32 i16 i8 ui32 ui16 ui8 f32"),
    "TPRELU": rule("f16 f32"),
    "TADDRELU": rule("f32 f16 i16"),
    "TRECIP": rule("f32 f16 i32 i16"),
    "TRELU": rule("f16 f32 i32"),
    "TREM": rule("f32 i32"),
    "TRSQRT": rule("f32 f16"),
    "TSEL": rule("i16 ui16 i32 ui32 f16 bf16 f32"),
    "TSHL": rule(I124),
    "TSHR": rule(I124),
    "TSQRT": rule("f32 f16"),
    "TSUB": rule(BASIC),
    "TXOR": rule(I124),
    # tile-scalar
    "TADDS": rule(BASIC),
    "TSUBS": rule(BASIC),
    "TMULS": rule(BASIC),
    "TDIVS": rule(BASIC),
    "TMAXS": rule(BASIC),
    "TMINS": rule(BASIC),
    "TANDS": rule(I124),
    "TORS": rule(I124),
    "TXORS": rule(I124),
    "TSHLS": rule("i32 i16 ui32 ui16"),
    "TSHRS": rule("i32 i16 ui32 ui16"),
    "TLRELU": rule("f16 f32"),
    "TFMODS": rule("f32"),
    "TREMS": rule("f32 i32"),
    "TPOWS": rule("i32 i16 i8 ui32 ui16 ui8 f32"),
    "TEXPANDS": rule("ui8 i8 ui16 i16 ui32 i32 f16 bf16 f32"),
    "TCMPS": rule(pairs("i32->ui8 f32->ui8 f16->ui8 ui16->ui8 i16->ui8")),
    "TSELS": rule("i16 ui16 i32 ui32 f16 bf16 f32"),
    "TAXPY": rule(pairs("f16->f16 f32->f32 f32->f16")),
    # fused (flat-only)
    "TADDDEQRELU": rule(pairs("f16->i32")),
    "TADDRELUCONV": rule(pairs("f32->f16 f16->i8 i16->i8")),
    "TSUBRELUCONV": rule(pairs("f32->f16 f16->i8 i16->i8")),
    "TSUBRELU": rule("f16 f32"),
    "TMULADDDST": rule("f16 f32"),
    "TFUSEDMULADD": rule("f16 f32"),
    "TFUSEDMULADDRELU": rule("f16 f32"),

    # ---- img2col ---------------------------------------------------------------------------------
    # TIMG2COL (TIMG2COL.md implementation checks) and its configuration instructions.
    "TIMG2COL": rule("i8 f16 bf16 f32"),
    "SETFMATRIX": rule(),
    "SET_IMG2COL_RPT": rule(),
    "SET_IMG2COL_PADDING": rule(),

    # ---- irregular -------------------------------------------------------------------------------
    # the irregular family (ops.tsv dtypes_A2A3 and the manual pages). THISTOGRAM and TRANDOM
    # are not implemented on a2a3.
    "TCI": rule("i16 ui16 i32 ui32"),
    "TTRI": rule("i32 i16 ui32 ui16 f16 f32"),
    "TGATHER": rule("i16 ui16 i32 ui32 f16 bf16 f32",
                    says="expects gather src/dst element type to be i16/i32/f16/f32"),
    "TGATHERB": rule(B124),
    "TSCATTER": rule(B124),
    "MGATHER": rule(B124),
    "MSCATTER": rule(B124),
    "TSORT32": rule("f16 f32"),
    "TMRGSORT": rule("f16 f32"),
    "TDEQUANT": rule(pairs("i8->f32 i16->f32")),
    # (no low-precision element types on A2/A3: PTOAS's words, tprefetch_low_precision_*_a3)
    "TPREFETCH": rule("f32 f16 bf16 i8 ui8 i16 ui16 i32 ui32 i64 ui64",
                      says="expects A2/A3 tprefetch low-precision element types to be "
                           "unsupported"),
    "TQUANT": rule(pairs("f32->i8 f32->ui8")),

    # ---- layout ----------------------------------------------------------------------------------
    # the layout-and-rearrangement family (ops.tsv and the manual pages: Mat -> Left/Right and
    # Acc -> Mat window moves, Acc conversions through the fix-pipe).
    "TEXTRACT": rule(MOVE_TYPES, moves=EXTRACT_MOVES, convert=ACC_CONVERT),
    "TEXTRACT_FP": rule(MOVE_TYPES, moves=ACC_MOVES, convert=ACC_CONVERT,
                        convert_says="expects A2/A3 acc preQuantScalar textract element types "
                                     "to be (src=f32,dst=i8) or (src=i32,dst=i8/f16/i16)"),
    "TINSERT": rule(MOVE_TYPES, moves=INSERT_MOVES, convert=ACC_CONVERT),
    "TINSERT_FP": rule(MOVE_TYPES, moves=ACC_MOVES, convert=ACC_CONVERT),
    "TCONCAT": rule("i8 ui8 i16 ui16 i32 ui32 f16 bf16 f32", row_major=True),
    "TTRANS": rule("ui32 i32 f32 ui16 i16 f16 bf16 ui8 i8"),
    "TRESHAPE": rule(),
    "TSUBVIEW": rule(),
    "TALIAS": rule(),

    # ---- matrix ----------------------------------------------------------------------------------
    # the cube instructions and TMOV (no MX, no TF32).
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

    # ---- pipes -----------------------------------------------------------------------------------
    # the cube <-> vector FIFO instructions and the fix-pipe quant registers (any element type
    # moves through a FIFO; producers Acc/Vec/Mat, consumers Vec/Mat; the GlobalData forms
    # take a GlobalTensor slot view of any element type).
    "TPUSH": rule(locs=[TileType.Acc, TileType.Vec, TileType.Mat]),
    "TPOP": rule(locs=[TileType.Vec, TileType.Mat]),
    "TFREE": rule(),
    "TALLOC": rule(),
    "SET_QUANT_SCALAR": rule(),
    # the packed 64-bit quant words on A2/A3 (PTOAS designs/fixpipe-tpipe-design.md 7.2)
    "SET_QUANT_VECTOR": rule("i64 ui64", locs=[TileType.Scaling],
                             says="expects 'scaling_tile' element type to be packed i64/ui64 "
                                  "on A3"),

    # ---- prefetch_hif4 ---------------------------------------------------------------------------
    # TPREFETCH_ASYNC (any element type: a cache hint). TMATMUL_MX_HIF4 is an A6 instruction: no
    # target here has it (see ptoisa/isa/matrix/hif4.py).
    "TPREFETCH_ASYNC": rule(),

    # ---- reduce_expand ---------------------------------------------------------------------------
    # the reduce-and-expand family (ops.tsv dtypes_A2A3, the manual pages).
    "TROWPROD": rule(SAME4),
    "TROWMAX": rule(SAME4),
    "TROWMIN": rule(SAME4),
    "TROWARGMAX": ROW_ARG,
    "TROWARGMIN": ROW_ARG,
    "TCOLSUM": rule([(d, d) for d in SAME4.split()]),
    "TCOLPROD": rule([(d, d) for d in SAME4.split()]),
    "TCOLMAX": rule([(d, d) for d in SAME4.split()]),
    "TCOLMIN": rule([(d, d) for d in SAME4.split()]),
    "TCOLARGMAX": COL_ARG,
    "TCOLARGMIN": COL_ARG,
    "TROWEXPAND": rule("i8 ui8 i16 ui16 i32 ui32 f16 bf16 f32"),
    "TCOLEXPAND": rule("i8 ui8 i16 ui16 i32 ui32 f16 bf16 f32 f8E4M3 f8E5M2 f8E8M0"),
    **{f"TROWEXPAND{op}": rule(EXPAND_OP) for op in ("ADD", "SUB", "MUL", "MAX", "MIN")},
    **{f"TCOLEXPAND{op}": rule(EXPAND_OP) for op in ("ADD", "SUB", "MUL", "MAX", "MIN")},
    "TROWEXPANDDIV": rule("f16 f32"),
    "TCOLEXPANDDIV": rule("f16 f32"),
    "TROWEXPANDEXPDIF": rule("f16 f32"),
    "TCOLEXPANDEXPDIF": rule("f16 f32"),
    "TPAIRREDUCESUM": rule("f16 f32"),
    "TPARTARGMAX": PART,
    "TPARTARGMIN": PART,

    # ---- sync ------------------------------------------------------------------------------------
    # the synchronisation instructions (no element types involved).
    "TSYNC": rule(),
    "SYNCALL": rule(),
    "SET_FLAG": rule(),
    "SYNC_SET": rule(),
    "SYNC_WAIT": rule(),
    "WAIT_FLAG": rule(),
    "PIPE_BARRIER": rule(),
    # ---- micro (VPTO): the GM <-> UB DMA copies only (PTOAS's VPTO backend lowers them on A3
    # too, to the v220 MOV intrinsics with software loops: ub/ub_to_llvm/transfer/
    # mte_gm_ub.pto); every other micro-op is A5's (a5.py). They move bytes of any type.
    "MTE_GM_UB": rule(),
    "MTE_UB_GM": rule(),
    # ---- vmi (logical vectors, spec/ptoas-main/isa/vmi-isa/): the pages' "datatypes" lines,
    # keyed on the first vector or pointer operand; loads and stores move any element type.
    # Declared here, so on every target: a VMI value is logical (its lanes, no register
    # layout), and PTOAS verifies VMI without a target (its lit tests give no --pto-arch)
    **{op: rule(VMI_ANY) for op in ("VMI_VLOAD", "VMI_VSTORE", "VMI_VINTERPRET_CAST")},
    "VMI_VGATHER": rule(B124),
    **{op: rule() for op in ("VMI_CREATE_MASK", "VMI_CREATE_GROUP_MASK", "VMI_VAND",
                             "VMI_VOR", "VMI_VXOR", "VMI_VNOT", "VMI_VBRC", "VMI_VCI")},
    **{op: rule(I124 + " f16 bf16 f32") for op in ("VMI_VADD", "VMI_VSUB", "VMI_VMUL",
                                                   "VMI_VMAX", "VMI_VMIN", "VMI_VABS",
                                                   "VMI_VNEG", "VMI_VADDS",
                                                   "VMI_VMULS", "VMI_VMAXS", "VMI_VMINS",
                                                   "VMI_VCMPS", "VMI_VSEL")},
    # (says=: PTOAS's verifier's words, vmi_unary_math_integer_invalid.pto and its kin)
    "VMI_VRELU": rule("i32 f16 f32", says="requires si32, f16, or f32 VMI element type"),
    "VMI_VCMP": rule(I124 + " f16 bf16 f32",
                     says="requires i8, i16, i32, f16, bf16, or f32 VMI element type"),
    **{op: rule("f16 f32", says="requires f16 or f32 VMI element type")
       for op in ("VMI_VDIV", "VMI_VEXP", "VMI_VLN", "VMI_VSQRT")},
    **{op: rule(I124, says="requires integer-like VMI element type")
       for op in ("VMI_VSHL", "VMI_VSHLS", "VMI_VSHRS")},
    "VMI_VSHR": rule(I124, says="requires integer VMI element type"),
    "VMI_VCADD": rule(I124 + " f16 f32"),
    # (vcmax / vcmin: the page says i16-i32; PTOAS takes 8-bit lanes too, lit vmi_new's
    # vmi_to_vpto_reduce_extended)
    **{op: rule(I124 + " f16 f32") for op in ("VMI_VCMAX", "VMI_VCMIN")},
    # vcvt: source and destination from the page's list (the pairs are the verifier's)
    "VMI_VCVT": rule(),
    **{op: rule() for op in ("VMI_PSET", "VMI_ENSURE_LAYOUT", "VMI_ENSURE_MASK_LAYOUT",
                             "VMI_ENSURE_MASK_GRANULARITY", "VMI_PACK", "VMI_UNPACK",
                             "VMI_CONSTANT", "VMI_CONSTANT_MASK", "VMI_SHUFFLE",
                             "VMI_CHANNEL_SPLIT", "VMI_CHANNEL_MERGE", "VMI_COMPRESS",
                             "VMI_ACTIVE_PREFIX_INDEX")},
    **{op: rule(VMI_ANY) for op in ("VMI_MASKED_LOAD", "VMI_EXPAND_LOAD",
                                    "VMI_COMPRESS_STORE")},
    "VMI_VSCATTER": rule(B124),
    # vmi-isa/07 and 09: the pages' datatypes (histograms: their 16-bit bins)
    **{op: rule("f16 f32") for op in ("VMI_VEXPDIF", "VMI_VAXPY", "VMI_VLRELU",
                                      "VMI_VPRELU")},
    # (a float vmula lowers to the legacy fma, whose verifier words a low-precision float:
    # vmi_to_vpto_fma_element_type_invalid.pto)
    "VMI_VMULA": rule(I124 + " f16 bf16 f32",
                      says="requires f16, bf16, or f32 VMI element type (the rule of the "
                           "pto.vmi.fma a float vmula lowers to)",
                      says_when={"f8E4M3", "f8E5M2", "hif8", "f8E8M0", "f4E2M1x2",
                                 "f4E1M2x2"}),
    "VMI_VMULL": rule("i32 ui32", says="requires a, b, low, and high element types to be "
                                        "exactly i32 or ui32"),
    **{op: rule("i16 ui16") for op in ("VMI_VDHIST", "VMI_VCHIST")},
    **{op: rule(B124 + " f8E4M3 f8E5M2") for op in ("VMI_VINTLV", "VMI_VDINTLV", "VMI_VSELR")},
}


TARGET = Target("a2a3", BUFFERS, LEGALITY, __doc__ or "", plan=PLAN, traits=Traits(
    npu_static_checks=True,
    reduce_order="tree",
    reduce_nan="propagate",
    predicate_layout="rows",
    cmp_i32_eq_only=True,
    cvt_saturate_default=True,
    cvt_casts="npu",
    quant_pairs=frozenset({("f32", "i8"), ("f32", "ui8"), ("i32", "i8"), ("i32", "ui8"),
                           ("i32", "f16"), ("i32", "i16")}),
    # ---- layout, memory, matrix, img2col, comm families
    left_blayout="row_major",
    left_blayout_fixed=True,
    cube_static_shapes_chain=True,
    mad_f32_modes=frozenset({"hf32"}),
    fixpipe_f16_saturation="always",
    fillpad_whole_tile=False,
    # ---- sync, mixed kernels
    cross_core_flags_per_subblock=False,
    cross_core_wait_holds_pipe=False,
    nosplit_vector_subblock0_only=False,
    # ---- cycle model, conformance
    cost_table="fitted",
    costs_measured=True,
    conformance_reference=False,
    # upstream's arch config (arch_config.hpp: kA2A3ArchConfig, 1.85 GHz)
    clock_hz=1.85e9,
    # the 910B2 (A2) and the A3 die its kernels/manual READMEs measure on: 24 cube cores, two
    # vector cores each (48); upstream's arch config gives per-core rates only, no core count
    cube_cores=24,
    vector_cores=48,
))

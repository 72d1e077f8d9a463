"""What a target profile is made of: legality rules (:class:`Rule`, :func:`rule`,
:func:`pairs`), behaviour traits (:class:`Traits`) and the profile itself (:class:`Target`).
The target modules (``a2a3.py``, ``a5.py``, ``cpu.py``) are written in these terms; the
package (:mod:`ptoisa.targets`) re-exports them and finds the targets by name."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass, field, fields
from typing import Any

from ..dtypes import dtype
from ..enums import TileType
from ..errors import PtoError


@dataclass(frozen=True)
class Rule:
    """Legality of one instruction on one target.

    ``dtypes`` is a set of element types checked against the instruction's ``dtype_key``
    operand, or a set of tuples when the key names several operands (e.g. (src, dst) pairs).
    ``None`` means any type. ``locs`` restricts tile roles of the key operands; ``row_major``
    requires every tile operand to be row-major; ``extra`` carries instruction-specific data
    (``says``: PTOAS's words for the type rule, the head of the error; ``says_when``: the
    type names those words are about, where the rule names a class of types; ``locs_says``:
    PTOAS's words for the ``locs`` rule, the head of that error).
    """

    dtypes: frozenset[Any] | None = None
    locs: frozenset[TileType] | None = None
    row_major: bool = False
    extra: dict[str, Any] = field(default_factory=dict, hash=False, compare=False)


def rule(dtypes: Iterable[Any] | str | None = None, *, locs: Iterable[TileType] | None = None,
         row_major: bool = False, **extra: Any) -> Rule:
    """Build a Rule; ``dtypes`` accepts names ('f16 f32'), DTypes, or tuples of them."""
    dts: frozenset[Any] | None
    if dtypes is None:
        dts = None
    else:
        items = dtypes.split() if isinstance(dtypes, str) else list(dtypes)
        dts = frozenset(
            tuple(dtype(x) for x in it) if isinstance(it, tuple) else dtype(it) for it in items
        )
    return Rule(dts, None if locs is None else frozenset(locs), row_major, extra)


def pairs(spec: str) -> list[tuple[str, str]]:
    """'f32->i8 f32->u8' -> [('f32','i8'), ('f32','u8')]."""
    out = []
    for p in spec.split():
        a, b = p.split("->")
        out.append((a, b))
    return out


#: PTOAS's code-generation backends (``--pto-backend``): ``emitc`` lowers tile ops to
#: pto-isa's C++ headers (the ISA pages' behaviour, ptoisa's default), ``vpto`` expands them
#: through PTOAS's TileLib templates (:meth:`Target.with_backend`)
BACKENDS = ("emitc", "vpto")


@dataclass(frozen=True)
class Traits:
    """Named behaviours of a target that instruction semantics and rules read (an instruction
    asks ``m.target.traits.reduce_order``, never the target's name). A new target states its
    traits once; :meth:`Target.derive` copies a parent's and changes the ones given."""

    #: run-time checks the NPU performs (valid-region limits, pattern checks ...); the upstream
    #: CPU simulator has none of them
    npu_runtime_checks: bool = True
    #: whether a ``.pto`` op that leaves out its ``tmp`` (``Ptoas.materialised``) needs PTOAS's
    #: PlanMemory to allocate one, so that ``--pto-level=level3`` rejects it (A2/A3: the
    #: vector code uses tmp); False where PTOAS gives it a placeholder without an address at
    #: every level (A5, ttrans_implicit_tmp_a5_level3.pto)
    level3_needs_tmp: bool = True
    #: whether PTOAS's VPTO backend lowers ``tload`` / ``tstore`` to a DMA that needs a unit
    #: innermost GM stride (A2/A3: "A2/A3 DMA lowering requires a unit innermost stride",
    #: ub/tile_to_ub/transfer/tload_nonunit_stride.pto); A5's DMA takes strided rows
    vpto_dma_unit_inner_stride: bool = True
    #: the element types PTOAS's verifier takes for ``pto.set_quant_vector``'s payload tile
    #: (designs/fixpipe-tpipe-design.md 7.2: packed 64-bit words on A2/A3, f16 / bf16 / f32
    #: scales on A5)
    quant_vector_types: frozenset[str] = frozenset({"i64", "ui64"})
    #: how TPRINT writes: "cpu_sim" (the simulator's header and format, straight to the output)
    #: or "npu" (whole tile, through the print buffer)
    print_style: str = "npu"
    #: the NPU implementation's static operand rules that the upstream CPU simulator does not
    #: make: index and element widths of TGATHER/TSCATTER/TCOLARG*, 1-byte atomic MSCATTER,
    #: the tile roles TPRINT takes, the Mat source of a Mat -> Left/Right extract is NZ/ZN, fp
    #: quant words live in a Scaling tile, the fix-pipe's Acc store limits and its ND/NZ-only
    #: GM layouts, TGET_SCALE_ADDR into the scaling space, TIMG2COL into an NZ tile, the
    #: accumulator fits L0C, no GM -> Acc load, a quant scalar converts Acc tiles only;
    #: False (cpu): the simulator's looser typing accepts those programs
    npu_static_checks: bool = True
    #: how the fix-pipe reads an ``fp`` (Scaling) tile whose elements are not 64-bit (PTOAS's
    #: f32 / f16 scaling tiles): "raw" (the NPU: FPC holds the tile's buffer address, the
    #: fix-pipe reads its bytes as 64-bit quant words) or "cast" (the CPU simulator: each
    #: element cast to a uint64 word)
    fp_tile_words: str = "raw"
    #: how a ``.pto`` 5-D tensor view without a ``layout`` attribute that a Vec NZ tile
    #: (col_major, row_major box) loads from / stores to is addressed: True (PTOAS's A5 TileLib
    #: picks the load / store template by the tile: tload_nz2nz / tstore_nz move the view as
    #: NZ, rows shape[2]*shape[3], cols shape[0]*shape[1]*shape[4]) or False (the layout its
    #: strides give, as InferPTOLayout does for the EmitC lowering)
    vec_nz_views_by_tile: bool = False
    #: where TMATMUL_MX / TGEMV_MX read the codes of a scale tile wider than one byte (the f16
    #: ``loc=scaling`` tiles PTOAS's a5 TileLib declares and never reads): True (the NPU's
    #: cube reads the scale buffer at the data tile's address >> 4, as ``mad_mx`` does) or
    #: False (refused by name: no scale buffers)
    mx_wide_scales_at_data_addr: bool = False

    # ---- elementwise, reduce, irregular, debug families ----------------------------------------
    #: summation/product order of the reductions: "tree" (the NPU's reduction instructions:
    #: TROWSUM/TROWPROD a pairwise tree in the element type; TCOLSUM/TCOLPROD row by row in the
    #: source's element type, TCOLSUM isBinary a tree over row pairs) or "sequential" (the CPU
    #: simulator's loops, left to right / top to bottom, accumulating in dst's type; TROWSUM
    #: of f16/bf16 in f32)
    reduce_order: str = "tree"
    #: NaN in TROW*/TCOL* MAX/MIN and ARGMAX/ARGMIN: "propagate" (vmax/vmin: a NaN anywhere
    #: gives NaN, the first NaN is the arg extreme) or "fold" (the CPU simulator's strict
    #: comparison fold from the first element: a NaN counts only as the first element)
    reduce_nan: str = "propagate"
    #: the predicate-mask convention of TCMP/TCMPS/TSEL: "rows" (each row's bits packed
    #: LSB-first into its own mask row; dst outside the bits untouched) or "cpu_sim" (the CPU
    #: simulator's: the predicate tile is zeroed whole first, TCMPS writes one byte stream of
    #: whole src rows and TSEL reads 8 bits per mask element as one stream)
    predicate_layout: str = "rows"
    #: TCMP/TCMPS store each row's bits with whole predicate stores (A5's TCmp.hpp /
    #: TCmps.hpp: ``psts`` of 16 bytes per 128 compared elements of a 2- or 4-byte source,
    #: 32 bytes per 256 of a 1-byte one), so the bytes of those stores past the valid columns'
    #: bits are written 0 (the compare's inactive lanes), inside the dst row, whatever dst's
    #: valid region; False: only the dst elements holding the bits are written
    predicate_whole_stores: bool = False
    #: the vector compare of int32 sources tests equality only: TCMP/TCMPS compare LT/GT/LE/GE
    #: as EQ (NE is the inverted EQ mask, so it stays NE)
    cmp_i32_eq_only: bool = False
    #: TCVT without a SaturationMode operand saturates (the NPU default) or not (the simulator)
    cvt_saturate_default: bool = True
    #: TCVT arithmetic where vconv and a host C++ cast differ: "npu" (f32 -> f32 rounds to an
    #: integral value; non-saturating float -> int converts saturating to 32/64 bits, then
    #: wraps) or "x86" (the CPU simulator's static_cast on x86-64: same-type identity,
    #: cvttsd2si's INT_MIN for out-of-range values)
    cvt_casts: str = "npu"
    #: (src, dst) element-type name pairs the fix-pipe quantises (TSTORE_FP, TMOV_FP,
    #: TEXTRACT_FP, TINSERT_FP, quant words); other pairs are plain conversions
    quant_pairs: frozenset[tuple[str, str]] = frozenset({
        ("f32", "i8"), ("f32", "ui8"), ("i32", "i8"), ("i32", "ui8"), ("i32", "f16"),
        ("i32", "i16")})

    # ---- layout, memory, matrix, img2col, comm families ----------------------------------------
    #: the box layout of a Left (L0A) tile: "col_major" (NZ, the C++ TileLeft on a5 and cpu) or
    #: "row_major" (ZZ, TileLeft on a2a3); TileLeft and an on-chip ``memref`` of L0A take it
    left_blayout: str = "col_major"
    #: Left tiles must use ``left_blayout``: TMATMUL/TGEMV reject the other one, and a ``.pto``
    #: ``loc=left`` tile type takes it whatever the text writes (PTOAS fixes it per arch); the
    #: CPU simulator takes either
    left_blayout_fixed: bool = True
    #: TINSERT's TInsertMode SPLIT2 / SPLIT4 (an NZ Vec -> Mat insert copied in 2 or 4 bursts:
    #: the C++ overload exists under PTO_NPU_ARCH_A5 only)
    tinsert_split: bool = False
    #: the cube's static tile shapes must chain (Left Rows == Acc Rows, Left Cols == Right Rows,
    #: Right Cols == Acc Cols), not only the valid regions (a2a3)
    cube_static_shapes_chain: bool = False
    #: the f32 input transforms of the cube that SETHF32MODE / SETTF32MODE switch on
    #: ("hf32": round to 11 mantissa bits, "tf32": to 10); a mode not listed is ignored
    mad_f32_modes: frozenset[str] = frozenset({"hf32", "tf32"})
    #: the cube instructions whose float k-sum follows the CPU simulator's loop in the default
    #: "f32" accumulation (an f32 sum from 0, one fused multiply-add per k, then C_in / bias
    #: added in f32; the MX forms add each f64 scaled product to the f32 sum); the others
    #: sum as f32 BLAS (MX: the f64 sum, rounded once). See ptoisa.set_matmul_accumulation
    mad_sequential: frozenset[str] = frozenset()
    #: when the fix-pipe's scaled f32 -> f16 conversion of TEXTRACT/TINSERT saturates to the
    #: finite f16 range (NaN -> 0): "always" (the NPU) or "window" (the CPU simulator: only
    #: when src and dst shapes differ; an equally shaped move keeps inf and NaN)
    fixpipe_f16_saturation: str = "always"
    #: what the fix-pipe's ReLU of TEXTRACT / TINSERT (reluMode NormalRelu) makes of NaN:
    #: "propagate" (NaN stays NaN: the pages say max(x, 0) and are silent on NaN) or "zero"
    #: (the CPU simulator's ``x > 0 ? x : 0``)
    fixpipe_relu_nan: str = "propagate"
    #: TFILLPAD* pad every row of the tile and TFILLPAD_INPLACE copies src as well (the CPU
    #: simulator); else they pad the rows below the valid rows only and INPLACE does not copy
    fillpad_whole_tile: bool = False

    #: what the float pad values Max / Min are (TLOAD's pad, TFILLPAD*, A5's TPARTMAX /
    #: TPARTMIN start value): "inf" (pto-isa's PadValueMap and the ISA pages: +inf / -inf) or
    #: "finite" (PTOAS's a5 TileLib, the ``vpto`` backend: the largest finite value of the type,
    #: +-3.4028235e38 for f32, +-65504 for f16, +-3.3895314e38 for bf16; integers are the same)
    pad_float_extremes: str = "inf"
    #: what TSORT32 pads a partial last 32-block with (with a tmp tile): "neg_inf" (the TSORT32
    #: page: -inf, the padding sorts after every real element) or "code_as_number" (PTOAS's a5
    #: TileLib, lib/TileOps/a5/tsort32.py ``_pad_min``: the -inf bit pattern written as a
    #: number, ``pto.f32(0xFF800000)`` = 4286578688.0, f16 64512.0, bf16 0xFF80 -> 65536.0: a
    #: large positive value that sorts *before* the real elements)
    sort32_pad: str = "neg_inf"
    #: TEXTRACT of an NZ Mat tile into a Right (ZN) tile loads with a transpose, so Right
    #: holds the window's values (pto-isa's TEXTRACT_M2LR); False: PTOAS's a5 TileLib
    #: (lib/TileOps/a5/textract.py ``template_textract_mat2right``) issues ``mte_l1_l0b``
    #: without ``transpose``, which reads the L1 matrix as B's transpose: Right holds the
    #: window transposed (dst[i, j] = src[j, i])
    mat2right_transposing_load: bool = True
    #: TMRGSORT's single-list form takes a src whose valid columns end in a partial group of
    #: 4 blocks: False (the TMRGSORT page: valid cols are 1..255 whole groups, else an error)
    #: or True (PTOAS's a5 TileLib, lib/TileOps/a5/tmrgsort.py
    #: ``template_tmrgsort_single_list``: ``repeat_times = valid_cols // (blockLen * 4)``, so
    #: the whole groups are merged and dst past them is not written)
    mrgsort_partial_group: bool = False
    #: how far right TFILLPAD / _INPLACE / _EXPAND pad: False (pto-isa's A5 and A2/A3
    #: TFillPad: to the tile's Cols, ``padCols = Dst::Cols - srcValidCol``) or True (PTOAS's
    #: a5 TileLib, lib/TileOps/a5/_fillpad.py ``_fill`` / ``_fill_inplace``: to dst's valid
    #: columns; the columns past them keep what they held)
    fillpad_to_valid_cols: bool = False
    #: where TCMPS puts row r's predicate bits: False (pto-isa's A5 TCmps: at byte
    #: r * dst.Cols * sizeof(dst element), dst's own row) or True (PTOAS's a5 TileLib,
    #: lib/TileOps/a5/tcmps.py: a packed stream from dst's first byte. ``template_tcmps_1d``,
    #: chosen when ptodsl's ``require_predicate_compare_1d(..., flattened_destination=True)``
    #: holds, packs the whole valid region as one bit stream, element k = r * validCol + c at
    #: bit k; ``template_tcmps`` (2-D) starts row r at byte r * ceil(validCol / E) * B, one
    #: predicate store of E elements and B bytes being 128 / 16 for 32- and 16-bit sources,
    #: 256 / 32 for 8-bit ones. Its TSEL / TSELS read row r at r * mask.Cols either way)
    tcmps_predicate_stream: bool = False

    # ---- sync, mixed kernels ------------------------------------------------------------------
    #: how SYNC_SET (``pto.sync.set``) routes a cross-core flag: False (A2/A3's FFTS,
    #: ``ffts_cross_core_sync``: FftsMode 0 sets every cube's flag, 1 both vector cores', 2
    #: the cube's once both vector cores set it) or True (A5's intra-block flags, one per
    #: vector core: the cube's ids 0-15 go to AIV0 and 16-31 to AIV1, AIV n's id i is the
    #: cube's flag i + 16 n; FftsMode is not read)
    cross_core_flags_per_subblock: bool = False
    #: what a cross-core wait (SYNC_WAIT, TPOP, a TPUSH waiting for a free slot) orders after
    #: itself: False (A2/A3's ``wait_flag_dev`` stalls the core's scalar issue: every later
    #: instruction of every pipe) or True (A5's ``wait_intra_block(pipe, id)`` holds that one
    #: pipe); read by edges.wait_scope
    cross_core_wait_holds_pipe: bool = False
    #: a vector function of a mixed ``.pto`` kernel that uses a no-split pipe and does not read
    #: its sub-block index runs on sub-block 0 only (PTOAS guards it with
    #: ``if (get_subblockid() == 0)`` on A5); False: on both vector cores
    nosplit_vector_subblock0_only: bool = False
    #: a frontend pipe's ``acc_push_epilogue`` may name the fix-pipe quant modes of the A5
    #: data path (``qs322bf16_pre_*``, ``qf322hif8_pre_scalar``, ``qf322fp8_pre_scalar``:
    #: PTOAS rejects them elsewhere)
    pipe_epilogue_a5_quant: bool = False
    #: a frontend pipe may name ``local_slot_num`` (PTOAS: a2/a3 frontend pipe lowering only)
    pipe_local_slot_num: bool = True
    #: a GM store and a later load of the same bytes on one core are ordered only by a full
    #: drain (``pto.barrier <PIPE_ALL>``): a set_flag/wait_flag between their pipes (MTE3 ->
    #: MTE2) orders the pipes, not the write reaching GM, and the load may read stale data or
    #: hang the MTE (PTOAS #730, seen on A2/A3; assumed of A5's MTEs too); read by the sanitizer
    gm_reload_needs_drain: bool = True
    #: the pipes whose own dependences (two instructions of one pipe on the same bytes) need a
    #: ``pipe_barrier(pipe)`` after the first, and whose barrier the toolchain accepts (pipe
    #: names). A2/A3: the vector unit (PTOAS keeps ``pipe_barrier(PIPE_V)``; the MTEs issue
    #: in order, no MTE2 barrier, PTOAS #667); A5: none (its toolchain rejects
    #: ``pipe_barrier(PIPE_V)``, PTOAS drops them, #224). ``ptoisa sync`` emits barriers on
    #: these pipes only, and the sanitizer's ``sync="strict"`` asks for them on these only
    same_pipe_barriers: frozenset[str] = frozenset({"PIPE_V"})

    # ---- cycle model, conformance --------------------------------------------------------------
    #: the cost table of the cycle model: "fitted" (fitted on A2/A3 measurements,
    #: ../shared/costmodel) or "a5_vf" (that table with A5 vector-function loop formulas
    #: fitted on A5 measurements, ../shared/costmodel/a5, for the instructions they measure)
    cost_table: str = "fitted"
    #: the fitted costs were measured on this target's hardware (the cycle report then calls
    #: them costs, elsewhere estimates). Measurements belong to the hardware they were made on:
    #: :meth:`Target.derive` sets it False unless its ``traits`` say otherwise
    costs_measured: bool = False
    #: the conformance pack's recorded results (the upstream CPU simulator's runs) are this
    #: target's expected results: a recorded program it rejects (illegal, too large) fails. On
    #: a target without it such a program is skipped, and a failure that a documented target
    #: difference explains (and that passes on ``CONFORMANCE_TARGET``) is DIFF
    conformance_reference: bool = False
    #: the AI core clock in Hz, converting the cycle model's cycles to time (reports, traces):
    #: upstream's arch config (include/pto/costmodel/arch_config.hpp, kMainFrequencyHz) says
    #: 1.85 GHz for A2/A3, its only configuration; it has none for A5 (a5 assumes the same)
    clock_hz: float = 1.85e9
    #: the chip's cube cores (AIC) and vector cores (AIV) a launch's blocks run on (the launch
    #: model queues the blocks beyond them: a cube or mixed block takes a cube core, with its
    #: cluster's vector cores, a vector-only block one vector core). None: not declared, every
    #: block starts at once (docs/cycles.md "The whole launch")
    cube_cores: int | None = None
    vector_cores: int | None = None

    def replace(self, **changes: Any) -> Traits:
        unknown = sorted(set(changes) - {f.name for f in fields(self)})
        if unknown:
            raise PtoError(f"unknown target trait(s): {', '.join(unknown)} (traits: "
                           f"{', '.join(f.name for f in fields(self))})")
        return dataclasses.replace(self, **changes)


@dataclass(frozen=True, eq=False)  # hashed by identity: caches key on the object
class Target:
    """A target profile: on-chip buffer sizes, the legality table and the traits.

    ``lineage`` is the target's name followed by the names of the targets it was derived from
    for *behaviour* (``("a5x", "a5")`` for a variant of a5): a registry entry that declares a
    per-target override (``impl_for={"a5": ...}``) applies it to every target whose lineage
    names that key, so a variant inherits its parent's semantics.
    """

    name: str
    buffers: dict[str, int]
    legality: dict[str, Rule]
    doc: str = ""
    #: what PTOAS's memory planning (PlanMemory) allows per buffer for a ``.pto`` program:
    #: space -> (bytes, alignment of each tile in bytes); a buffer not listed: its size above
    plan: dict[str, tuple[int, int]] = field(default_factory=dict)
    traits: Traits = field(default_factory=Traits)
    lineage: tuple[str, ...] = ()
    #: per PTOAS code-generation backend (``--pto-backend``), the traits in which a program
    #: built with it behaves unlike pto-isa's C++ headers (the default backend, ``emitc``);
    #: :meth:`with_backend` makes that profile. A5's ``vpto`` expands tile ops through PTOAS's
    #: own TileLib (``lib/TileOps/a5/*.py``), which differs from pto-isa in a few places
    #: (docs/targets.md, "TileLib vs pto-isa differences")
    backends: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: the backend this profile is for: None for pto-isa's behaviour (no backend, ``emitc``),
    #: else a key of ``backends``
    backend: str | None = None
    #: this target's backend profiles, made once (shared by a target and its profiles, so a
    #: profile's ``with_backend(None)`` is the target itself: caches key on the object)
    _profiles: dict[str | None, Target] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        if not self.lineage or self.lineage[0] != self.name:
            object.__setattr__(self, "lineage", (self.name, *self.lineage))
        for backend, changes in self.backends.items():  # (a typo fails where it is declared)
            if backend not in BACKENDS or backend == "emitc":
                raise PtoError(f"target {self.name}: no backend profile for {backend!r} (a "
                               f"profile is for one of: {', '.join(BACKENDS[1:])})")
            self.traits.replace(**changes)

    def with_backend(self, backend: str | None) -> Target:
        """This target as a program built by PTOAS's ``--pto-backend=backend`` runs:
        ``backend`` None or ``emitc`` (pto-isa's C++ headers) is the target itself; ``vpto``
        changes the traits of ``backends["vpto"]`` (a target that declares none behaves as
        with ``emitc``). Same name, buffers, legality and lineage; one object per backend."""
        if backend is not None and backend not in BACKENDS:
            raise PtoError(f"unknown backend {backend!r} (choose from: {', '.join(BACKENDS)})")
        key = None if backend == "emitc" or backend not in self.backends else backend
        if key == self.backend:
            return self
        if not self._profiles:
            self._profiles[self.backend] = self
        hit = self._profiles.get(key)
        if hit is None:
            base = self._profiles[None]
            hit = dataclasses.replace(base, traits=base.traits.replace(**base.backends[key]),
                                      backend=key)
            self._profiles[key] = hit
        return hit

    def buffer_size(self, space: str) -> int:
        return self.buffers.get(space, 0)

    def pointer_window(self, space: str) -> int:
        """Bytes a micro-op's on-chip pointer (``!pto.ptr<T, fb>`` ...) may address in
        ``space``: the buffer, or the larger space PTOAS's memory plan gives it. A5's FB is
        the case: pto-isa gives Scaling tiles 4 KiB (TASSIGN.md's capacity table, the tile
        capacity here), while PTOAS plans its Scaling space over 248 KiB
        (PTOPlanMemory.cpp, kA5) and its own cases place vector ReLU payloads past 64 KiB
        (vpto/cases/micro-op/cv-mixed/fixpipe-relu-scalar-vector-f16-cv: FB byte 0x10040).
        Tiles keep the buffer's capacity; micro-op pointers address the plan's space."""
        return max(self.buffers.get(space, 0), (self.plan.get(space) or (0, 0))[0])

    def plan_size(self, space: str) -> tuple[int, int]:
        """(bytes, tile alignment) the ``.pto`` capacity check plans ``space`` with."""
        return self.plan.get(space) or (self.buffers.get(space, 0), 32)

    def derive(self, name: str, *, buffers: dict[str, int] | None = None,
               legality: dict[str, Rule] | None = None, removed: Iterable[str] = (),
               traits: dict[str, Any] | None = None, doc: str = "",
               plan: dict[str, tuple[int, int]] | None = None,
               inherit_behaviour: bool = True,
               backends: dict[str, dict[str, Any]] | None = None) -> Target:
        """A new target from this one: its legality table merged with ``legality`` (entries
        that differ or are new) less ``removed``; buffers, memory plan and traits changed where
        given. ``inherit_behaviour`` puts this target in the new one's lineage (per-target
        overrides of the registry entries then apply to it too). ``backends``: backend
        profiles (trait changes) added or replaced; a backend profile derives as its target
        does."""
        if self.backend is not None:
            return self._profiles[None].derive(
                name, buffers=buffers, legality=legality, removed=removed, traits=traits,
                doc=doc, plan=plan, inherit_behaviour=inherit_behaviour, backends=backends)
        table = dict(self.legality)
        table.update(legality or {})
        for n in removed:
            if n not in table:
                raise PtoError(f"target {name}: cannot remove {n}: {self.name} does not have it")
            del table[n]
        bufs = dict(self.buffers) if buffers is None else dict(buffers)
        # measured costs are of the parent's hardware, not the new target's
        changes = {"costs_measured": False, **(traits or {})}
        return Target(name, bufs, table, doc or self.doc,
                      plan=dict(self.plan if plan is None else plan),
                      traits=self.traits.replace(**changes),
                      lineage=(name, *self.lineage) if inherit_behaviour else (name,),
                      backends={k: dict(v) for k, v in
                                {**self.backends, **(backends or {})}.items()})

    def __repr__(self) -> str:
        return f"<target {self.name}{'' if self.backend is None else ' ' + self.backend}>"

    def __str__(self) -> str:
        return self.name

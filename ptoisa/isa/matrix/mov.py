"""TMOV and TMOV_FP: moves between tile roles, with the fix-pipe conversion on Acc sources.

Paths (per target in the legality tables, ``Rule.extra["paths"]``): Vec -> Vec / Mat, Mat ->
Left / Right / Bias / Scaling / ScaleLeft / ScaleRight, Acc -> Vec / Mat. Tiles are copied
*logically* (element (r, c) to element (r, c)), which is exactly the ND -> NZ / ND -> ZN / ND ->
ZZ repacks of the manual since every tile stores its elements in its own physical layout. The
copied region is dst's valid region (values outside src's valid region are whatever src holds
there, as on hardware).

Conversions: Mat -> Bias widens f16/bf16 to f32; Acc sources go through the fix-pipe
(``ptoisa.isa.quant``): a plain move converts (f32 -> f16/bf16 round to nearest even, ...), a
``preQuantScalar`` (uint64) applies a scalar quant word, an ``fp`` Scaling tile a vector quant
word per output column; ``reluMode=NormalRelu`` clamps negatives to zero. The 3-operand form
with a non-Scaling ``tmp`` tile is the MX exponent repack: ``grp_axis=1`` ND -> ZZ (a copy),
``grp_axis=0`` DN -> ZZ (``dst[r, c] = src[c, r]``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ... import dtypes as D
from ... import lazy
from ...enums import AccToVecMode, Pipe, ReluPreMode, TileType
from ...errors import RuntimeCheckError
from ...memory import Machine
from ...tile import Tile, TileSpec
from ..quant import fp_words, quant_mode, quantize
from ..registry import Instr, Opnd, Param, PipeForms, Sig, instr
from ..spelling import Attr, Form, Ptoas


def _mx_scale(t: TileSpec) -> bool:
    """A Scaling tile of E8M0 codes: an MX scale (PTOAS writes the C++ TileLeftScale /
    TileRightScale as ``loc=scaling``), which a Mat move fills as pto-isa's Mat -> ScaleLeft /
    ScaleRight (CommonCheckMX: the same float8_e8m0_t on both sides), not the fix-pipe's
    quant-word row."""
    return t.loc is TileType.Scaling and t.dtype is D.f8e8m0


def _fix_pipe_rule(sig: Sig) -> None:
    dst, src, extra = sig["dst"], sig["src"], sig["fp"]
    if not (isinstance(dst, TileSpec) and isinstance(src, TileSpec)):
        return
    target = sig.target
    rule = target.legality.get(sig.ins.name)
    paths = rule.extra.get("paths") if rule is not None else None
    if paths is not None and (src.loc, dst.loc) not in paths:
        allowed = ", ".join(sorted(f"{a.name}->{b.name}" for a, b in paths))
        raise sig.fail(f"move {src.loc.name} -> {dst.loc.name} is not supported on {target} "
                       f"(supported: {allowed})")
    acc = src.loc is TileType.Acc
    if src.dtype is not dst.dtype:
        widen = dst.loc is TileType.Bias and dst.dtype is D.f32 and src.dtype in (D.f16, D.bf16)
        if not (acc or widen):
            raise sig.fail(f"src element type {src.dtype} != dst element type {dst.dtype} "
                           "(only Acc sources convert, and Mat -> Bias widens f16/bf16 to f32)")
    if sig.params.get("reluMode") is ReluPreMode.NormalRelu and not acc:
        raise sig.fail("reluMode applies to Acc sources (the fix-pipe) only")
    if isinstance(extra, TileSpec) and acc and extra.loc is not TileType.Scaling:
        raise sig.fail(f"fp must be a Scaling tile (quant words), got {extra.loc.name}")
    # an fp tile of another element type (PTOAS programs write f32/f16 scaling tiles) is
    # read by the target's fp_tile_words (quant.fp_words, docs/cpu_sim_differences.md)
    if extra is not None and not acc and not isinstance(extra, TileSpec):
        raise sig.fail("a quant scalar applies to Acc sources only")
    mode = sig.params.get("mode")
    if acc and mode in (AccToVecMode.DualModeSplitM, AccToVecMode.DualModeSplitN):
        if dst.loc is not TileType.Vec:
            raise sig.fail(f"{mode.name} moves Acc -> Vec only")
        if extra is not None and quant_mode(target, src.dtype, dst.dtype,
                                            scalar=not isinstance(extra, TileSpec)) is not None:
            raise sig.fail(f"{mode.name} needs NoQuant (no quant word for "
                           f"{src.dtype} -> {dst.dtype})")
    if dst.loc is TileType.Bias:
        nbytes = dst.cols * dst.dtype.itemsize
        if src.rows != 1:
            raise sig.fail(f"a Bias move takes one source row, got {src.rows}")
        if nbytes % 64:
            raise sig.fail(f"Bias row must be a multiple of 64 bytes, got {nbytes}")
    if dst.loc is TileType.Scaling and not _mx_scale(dst):
        nbytes = dst.cols * dst.dtype.itemsize
        if src.rows != 1:
            raise sig.fail(f"a Scaling move takes one source row, got {src.rows}")
        if nbytes % 128:
            raise sig.fail(f"Scaling row must be a multiple of 128 bytes, got {nbytes}")


def _a2a3_same_shape(sig: Sig) -> None:
    """a2a3: TMOV keeps the static shape."""
    dst, src = sig["dst"], sig["src"]
    if isinstance(dst, TileSpec) and isinstance(src, TileSpec) and \
            (src.rows, src.cols) != (dst.rows, dst.cols):
        raise sig.fail(f"src and dst must have the same static shape on a2a3 "
                       f"({src.rows}x{src.cols} vs {dst.rows}x{dst.cols})")


def _a5_table_rows(sig: Sig) -> None:
    """a5: a Bias row fits the 4096-byte bias table, a Scaling row the 4096-byte fix-pipe
    buffer."""
    dst, src = sig["dst"], sig["src"]
    if not (isinstance(dst, TileSpec) and isinstance(src, TileSpec)):
        return
    nbytes = dst.cols * dst.dtype.itemsize
    if dst.loc is TileType.Bias and nbytes > 4096:
        raise sig.fail(f"Bias row of {nbytes} bytes exceeds the 4096-byte bias table")
    if dst.loc is TileType.Scaling and nbytes > 4096:
        raise sig.fail(f"Scaling row of {nbytes} bytes exceeds the 4096-byte fix-pipe buffer")


def _plain_move(dst: Tile, src: Tile, fp: Any) -> bool:
    """A move without a quant word, not from Acc, from a source that holds dst's valid
    region: the common case, for which _shape_runtime has nothing to refuse."""
    ss = src.spec
    return fp is None and ss.loc is not TileType.Acc and dst._vr <= ss.rows \
        and dst._vc <= ss.cols


def _shape_runtime(ins: Instr, dst: Tile, src: Tile, fp: Any = None, **params: Any) -> None:
    if _plain_move(dst, src, fp):
        return
    vr, vc = dst._vr, dst._vc
    transposed = isinstance(fp, Tile) and src.loc is not TileType.Acc \
        and params.get("grp_axis", 1) == 0
    sr, sc = (src.cols, src.rows) if transposed else (src.rows, src.cols)
    if vr > sr or vc > sc:
        raise RuntimeCheckError(
            f"dst valid region {vr}x{vc} is larger than src ({src.rows}x{src.cols})",
            op=ins.mnemonic)
    mode = params.get("mode")
    if src.loc is TileType.Acc and mode is AccToVecMode.DualModeSplitN \
            and dst.dtype.itemsize == 4 and src.valid_col % 32:
        raise RuntimeCheckError(
            f"DualModeSplitN with a 32-bit dst needs src valid cols % 32 == 0, got "
            f"{src.valid_col}", op=ins.mnemonic)
    if isinstance(fp, Tile) and src.loc is TileType.Acc and fp.cols < vc:
        raise RuntimeCheckError(
            f"fp holds {fp.cols} quant words, dst has {vc} valid columns (one per column)",
            op=ins.mnemonic)


def _words(m: Machine, fp: Tile, vc: int) -> np.ndarray:
    return fp_words(fp, vc, raw=m.target.traits.fp_tile_words == "raw")


def _move_in_place(m: Machine, dst: Tile, src: Tile) -> bool:
    """TMOV of a whole tile (no quant word, not from Acc) without a copy, where it can: the
    moved values stay where they are until either tile is written (copy-on-write). False:
    nothing done."""
    if src.spec.loc is TileType.Acc or src.spec.dtype is not dst.spec.dtype \
            or dst.spec.dtype.packed or not lazy.ok(m, dst):
        return False
    vr, vc = dst.spec.rows, dst.spec.cols
    shared = src.shared_lanes()
    # (what src reads lazily, or a view of its storage)
    off_chip = src._lazy is not None and src._off_chip
    dst.set_lazy(shared if shared is not None and (vr, vc) == shared.shape[1:]
                 else src.read(vr, vc), m, off_chip)
    return True


def _tmov_fast(ins: Instr, m: Machine, vals: list[Any], params: dict[str, Any]) -> bool:
    """TMOV's run-time rule where it is quick to see passing (no quant word, not from Acc, a
    source that holds dst's valid region), then its semantics (Instr.fast)."""
    dst, src = vals[0], vals[1]
    if not _plain_move(dst, src, vals[2]):
        return False
    if not (dst._whole and _move_in_place(m, dst, src)):  # (move's first case, taken here)
        move(m, dst, src, None, params["reluMode"], params["grp_axis"])
    return True


def move(m: Machine, dst: Tile, src: Tile, extra: Any, relu: ReluPreMode,
         grp_axis: int = 1) -> None:
    vr, vc = dst.valid_shape
    if not (vr and vc):
        return
    if isinstance(extra, Tile) and src.loc is not TileType.Acc:
        # MX exponent repack (tmp operand): DN -> ZZ transposes, ND -> ZZ copies
        vals = np.asarray(src.read(vc, vr)).swapaxes(-1, -2) if grp_axis == 0 \
            else src.read(vr, vc)
        dst.write(np.array(vals, copy=True))
        return
    if extra is None and dst._whole and _move_in_place(m, dst, src):
        return
    vals = np.asarray(src.read(vr, vc))
    if src.loc is TileType.Acc:
        on = relu is ReluPreMode.NormalRelu
        if isinstance(extra, Tile):
            mode = quant_mode(m.target, src.dtype, dst.dtype)
            words = _words(m, extra, vc) if mode is not None else np.zeros((1, vc), np.uint64)
            out = quantize(vals, words, mode, dst.dtype, vector=True, relu=on)
        elif extra is not None:
            mode = quant_mode(m.target, src.dtype, dst.dtype, scalar=True)
            words = np.full((1, vc), int(extra) & 0xFFFFFFFFFFFFFFFF, np.uint64)
            out = quantize(vals, words, mode, dst.dtype, vector=False, relu=on)
        else:
            out = quantize(vals, np.zeros((1, vc), np.uint64), None, dst.dtype, vector=True,
                           relu=on)
        dst.write(out)
        return
    if src.dtype is not dst.dtype:
        vals = vals.astype(np.float32).astype(dst.dtype.np)
    dst.write(np.array(vals, copy=True))


#: the pipe of each TMOV path (pto-isa's event.hpp: TMOV_V2V, TMOV_V2M, TMOV_M2B/L/R/S,
#: TMOV_A2V/A2M)
TMOV_PIPES = PipeForms(("src", "dst"), {
    ("Vec", "Vec"): Pipe.V, ("Vec", "Mat"): Pipe.FIX,
    ("Mat", "Left"): Pipe.MTE1, ("Mat", "Right"): Pipe.MTE1, ("Mat", "Bias"): Pipe.MTE1,
    ("Mat", "Scaling"): Pipe.FIX,
    ("Mat", "ScaleLeft"): Pipe.MTE1, ("Mat", "ScaleRight"): Pipe.MTE1,
    ("Acc", "Vec"): Pipe.FIX, ("Acc", "Mat"): Pipe.FIX,
    # paths of the CPU simulator only (no NPU pipe to follow): Mat -> Vec as PTOAS selects
    # it (its fallback, V); Vec -> L0A/L0B as the Vec -> Mat path
    ("Mat", "Vec"): Pipe.V, ("Vec", "Left"): Pipe.FIX, ("Vec", "Right"): Pipe.FIX,
}, why="Mat -> ScaleLeft/ScaleRight (A5's MX scales) are L1 -> L0 loads like Mat -> Left.")


@instr("TMOV", family="matrix", pipe=Pipe.MTE1, batched=True, pipe_of=TMOV_PIPES,
       ptoas=Ptoas(
           # the generic spelling: operandSegmentSizes over (src, dst, fp, preQuantScalar)
           forms={"pto.tmov": (Form(inputs=("src",)), Form(inputs=("src", "fp")),
                               Form(segments=("src", "dst", "fp", "fp")))},
           attrs={"accToVecMode": Attr("mode"), "reluPreMode": Attr("reluMode")}),
       operands=(Opnd("dst", "tile", "out"), Opnd("src", "tile"),
                 Opnd("fp", "any", optional=True)),
       params=(Param("reluMode", ReluPreMode.NoRelu, ReluPreMode),
               Param("mode", AccToVecMode.SingleModeVec0, AccToVecMode),
               Param("grp_axis", 1)),
       dtype_key=("src", "dst"),
       static=(_fix_pipe_rule,),
       static_for={"a2a3": (_a2a3_same_shape,), "a5": (_a5_table_rows,)},
       runtime=(_shape_runtime,), fast=_tmov_fast)
def TMOV(m: Machine, dst: Tile, src: Tile, fp: Any = None, *,  # noqa: N802
         reluMode: ReluPreMode, mode: AccToVecMode, grp_axis: int) -> None:  # noqa: N803
    """dst = src over dst's valid region, repacked into dst's layout. The optional third operand
    is a Scaling tile of vector quant words, a uint64 scalar quant word (Acc sources), or the
    ``tmp`` of the MX exponent repack (``grp_axis`` 1: ND -> ZZ, 0: DN -> ZZ). ``mode`` (the
    AccToVecMode) selects the receiving vector core(s); a single core is modelled, so every
    mode delivers the whole tile to dst."""
    move(m, dst, src, fp, reluMode, grp_axis)


@instr("TMOV_FP", family="matrix", pipe=Pipe.FIX, ptoas=Ptoas(op="pto.tmov.fp"),
       operands=(Opnd("dst", "tile", "out"), Opnd("src", "tile"), Opnd("fp", "tile")),
       params=(Param("reluMode", ReluPreMode.NoRelu, ReluPreMode),),
       dtype_key=("src", "dst"),
       static=(_fix_pipe_rule,),
       static_for={"a2a3": (_a2a3_same_shape,), "a5": (_a5_table_rows,)},
       runtime=(_shape_runtime,))
def TMOV_FP(m: Machine, dst: Tile, src: Tile, fp: Tile, *,  # noqa: N802
            reluMode: ReluPreMode) -> None:  # noqa: N803
    """Acc -> Vec/Mat through the fix-pipe with one vector quant word per output column taken
    from row 0 of the Scaling tile ``fp`` (pairs without a quant mode convert plainly)."""
    move(m, dst, src, fp, reluMode)

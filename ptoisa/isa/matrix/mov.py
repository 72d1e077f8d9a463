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
with a non-Scaling ``tmp`` tile is the MX exponent repack, which moves bytes rather than
elements: the ZZ stream of ``grp_axis=1`` ND -> ZZ or ``grp_axis=0`` DN -> ZZ is written from
the start of dst's storage whatever dst's layout (``_to_zz``).
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
    if isinstance(fp, Tile) and src.loc is not TileType.Acc:
        return  # (the MX exponent repack moves bytes: _to_zz checks what it needs)
    sr, sc = src.rows, src.cols
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


def _bytes_of(t: Tile) -> np.ndarray:
    """A 1-byte tile's storage in physical order (blocks first), from its logical elements."""
    vals = np.asarray(t.read(t.rows, t.cols))
    offs = t.spec.offsets.reshape(-1)
    flat = np.zeros((*vals.shape[:-2], int(offs.max()) + 1), np.uint8)
    flat[..., offs] = vals.reshape(*vals.shape[:-2], -1).view(np.uint8)
    return flat


def _put_bytes(t: Tile, stream: np.ndarray) -> None:
    """Write ``stream`` into the first bytes of 1-byte tile ``t``'s storage (the rest stays)."""
    vals = np.array(t.read(t.rows, t.cols), copy=True)
    offs = t.spec.offsets
    hit = offs < stream.shape[-1]
    vals.view(np.uint8)[..., hit] = stream[..., offs[hit]]
    t.write(vals)


def _to_zz(dst: Tile, src: Tile, grp_axis: int) -> None:
    """The MX exponent repack (TMOV with a ``tmp`` tile, pto-isa's TMovNdTo2Zz /
    TMovDnTo2Zz): the exponents, read from src's bytes as a dense row-major matrix, are
    written from the start of dst's bytes in ZZ order, [16, 2] boxes of 32 bytes, whatever
    dst's own layout (a flat 1 x N tile holds the stream as it is). ND -> ZZ (``grp_axis``
    1): dst's valid rows x cols, rows padded to a multiple of 16 with zeros (the bytes of src
    past its valid rows, up to its storage, are zeroed as the hardware does; past src's
    storage they are not modelled), ``E_ZZ[rb, p, i, q] = E[16 rb + i][2 p + q]``. DN -> ZZ
    (0): src's valid M^ x N exponents, ``E_ZZ[cb, p, q, d] = E[2 p + d][16 cb + q]``."""
    if dst.dtype.itemsize != 1 or src.dtype.itemsize != 1:
        raise RuntimeCheckError(f"the MX exponent repack moves 1-byte codes, got {src.dtype} -> "
                                f"{dst.dtype}", op="tmov")
    flat = _bytes_of(src)
    lead = flat.shape[:-1]
    if grp_axis == 0:
        hm, n = src.valid_shape
        pairs, cbs = hm // 2, n // 16
        e = flat[..., : hm * n].reshape(*lead, hm, n)[..., : 2 * pairs, : 16 * cbs]
        stream = e.reshape(*lead, pairs, 2, cbs, 16)
        stream = np.moveaxis(stream, (-4, -3, -2, -1), (-3, -1, -4, -2))
    else:
        vr, vc = dst.valid_shape
        pc, rbs = vc // 2, -(-vr // 16)
        if flat.shape[-1] > vr * vc:
            flat[..., vr * vc: rbs * 16 * vc] = 0
            _put_bytes(src, flat)
        need = rbs * 16 * vc
        if flat.shape[-1] < need:
            flat = np.concatenate([flat, np.zeros((*lead, need - flat.shape[-1]), np.uint8)],
                                  axis=-1)
        e = flat[..., :need].reshape(*lead, rbs * 16, vc)[..., : 2 * pc]
        stream = np.moveaxis(e.reshape(*lead, rbs, 16, pc, 2), (-4, -3, -2, -1),
                             (-4, -2, -3, -1))
    stream = np.ascontiguousarray(stream).reshape(*lead, -1)
    if stream.shape[-1] > int(dst.spec.offsets.max()) + 1:
        raise RuntimeCheckError(f"the ZZ exponents take {stream.shape[-1]} bytes, dst "
                                f"({dst.rows}x{dst.cols} {dst.dtype}) holds "
                                f"{int(dst.spec.offsets.max()) + 1}", op="tmov")
    _put_bytes(dst, stream)


def move(m: Machine, dst: Tile, src: Tile, extra: Any, relu: ReluPreMode,
         grp_axis: int = 1) -> None:
    vr, vc = dst.valid_shape
    if not (vr and vc):
        return
    if isinstance(extra, Tile) and src.loc is not TileType.Acc:
        _to_zz(dst, src, grp_axis)
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
           attrs={"accToVecMode": Attr("mode"), "reluPreMode": Attr("reluMode"),
                  "grpAxis": Attr("grp_axis", values={"axis0": 0, "axis1": 1})}),
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

"""Layout and rearrangement: TEXTRACT, TEXTRACT_FP, TINSERT, TINSERT_FP, TTRANS, TCONCAT, TPACK,
and the view instructions TRESHAPE, TSUBVIEW, TGET_SCALE_ADDR, TALIAS.

Window moves (TEXTRACT/TINSERT) convert element types through the fix-pipe when the source is
an accumulator (or, on ``cpu``, whenever the types differ, as the CPU simulator does): a scalar
quant word (the ``preQuantScalar`` overload) or a Scaling tile of uint64 words, one per output
column (the ``*_FP`` forms), see :mod:`ptoisa.isa.quant`. ReLU is applied after quantisation.

Views make the destination tile *share bytes* with the source: a later write through either
tile is seen by the other, in auto mode as in manual (TASSIGN) mode.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ... import dtypes as D
from ...conv import ConvTile, transform
from ...enums import BLayout, Pipe, ReluPreMode, SLayout, TileType
from ...errors import ExecutionError, NotExecutedYet, RuntimeCheckError
from ...memory import Machine, current
from ...tile import Tile, TileSpec
from ..quant import fp_words, quant_mode, quantize
from ..registry import (
    Instr,
    Opnd,
    Param,
    PipeForms,
    Sig,
    by_signature,
    except_on,
    instr,
    locs,
    same_dtype,
    sim_unchecked,
)
from ..spelling import SCALE, TMP_LIKE_SRC, Attr, Form, Ptoas

# ---- shared rules ------------------------------------------------------------------------------


def _rule_extra(sig: Sig, key: str) -> Any:
    r = sig.target.legality.get(sig.ins.name)
    return None if r is None else r.extra.get(key)


def _moves(sig: Sig) -> None:
    """(src role, dst role) must be one of the target's data paths (legality ``moves``; a
    packed 4-bit dst only along the paths of ``packed_moves`` where the rule has one)."""
    moves = _rule_extra(sig, "moves")
    s, d = sig["src"], sig["dst"]
    if moves is None or not isinstance(s, TileSpec) or not isinstance(d, TileSpec):
        return
    if (s.loc, d.loc) not in moves:
        allowed = ", ".join(sorted(f"{a.name}->{b.name}" for a, b in moves))
        if sig.ins.mnemonic.endswith("_fp") and s.loc is not TileType.Acc:
            # (PTOAS checks the fp form's source before the pair)
            raise sig.fail(f"expects fp form to use loc=acc src ({s.loc.name} -> "
                           f"{d.loc.name} is not a data path of {sig.ins.mnemonic} on "
                           f"{sig.target}; supported: {allowed})")
        # (PTOAS's words first: "expects A5 textract to use a supported src/dst loc pair")
        arch = {"a5": "A5 ", "a2a3": "A2/A3 "}.get(str(sig.target), "")
        op = sig.ins.mnemonic.removesuffix("_fp")
        pairs = sorted(f"{a.name}->{b.name}".lower() for a, b in moves)
        listed = ", ".join(pairs[:-1]) + (", or " if len(pairs) > 2 else " or ") + pairs[-1] \
            if len(pairs) > 1 else pairs[0]
        raise sig.fail(f"expects {arch}{op} to use a supported src/dst loc pair: {listed} "
                       f"({s.loc.name} -> {d.loc.name} is not a data path on {sig.target}; "
                       f"supported: {allowed})")
    packed = _rule_extra(sig, "packed_moves")
    if packed is not None and d.dtype.packed and (s.loc, d.loc) not in packed:
        allowed = ", ".join(sorted(f"{a.name}->{b.name}" for a, b in packed))
        raise sig.fail(f"the packed type {d.dtype} moves on {sig.target} only along "
                       f"{allowed}, not {s.loc.name} -> {d.loc.name}")


def _conversion(sig: Sig) -> None:
    """Element types may differ only where the target converts (legality ``convert``)."""
    s, d = sig["src"], sig["dst"]
    if not isinstance(s, TileSpec) or not isinstance(d, TileSpec) or s.dtype is d.dtype:
        return
    conv = _rule_extra(sig, "convert")
    if conv == "any":
        return
    pair = (s.dtype.name, d.dtype.name)
    if s.loc is TileType.Acc and conv and pair in conv:
        return
    what = "an Acc source" if s.loc is TileType.Acc else f"a {s.loc.name} source"
    # (PTOAS's words for the Acc source's type pairs, where the table gives them)
    says = _rule_extra(sig, "convert_says") if s.loc is TileType.Acc else None
    head = f"{says} (" if says else ""
    raise sig.fail(f"{head}dst element type {d.dtype} != src element type {s.dtype} "
                   f"({what} is not converted on {sig.target}){')' if says else ''}")


def _npu_mat_src_fractal(sig: Sig) -> None:
    """NPU Mat -> Left/Right moves read NZ or ZN boxes (the manual's layout requirement),
    but for GEMV a Left tile may come from a one-row row-major source (TEXTRACT page, A2A3 and
    A5 implementation checks: ``SrcTileData::Rows == 1 && SrcTileData::isRowMajor``)."""
    s, d = sig["src"], sig["dst"]
    if not sig.target.traits.npu_static_checks or not isinstance(s, TileSpec) \
            or not isinstance(d, TileSpec):
        return
    # (a FRACTAL_Z ConvTile - conv weights - is 16 x 16 boxes too: [C1HW, N1, N0, C0], read
    # as its (K, N) matrix; its spec is a flat buffer)
    if d.loc is TileType.Left and s.rows == 1 and s.is_row_major:
        return
    if s.loc is TileType.Mat and d.loc in (TileType.Left, TileType.Right) and \
            s.layout_name not in ("NZ", "ZN") and getattr(s, "conv_layout", None) != "FRACTAL_Z":
        # (PTOAS's words first where the target is one of its architectures)
        arch = {"a5": "A5 ", "a2a3": "A2/A3 "}.get(str(sig.target))
        head = f"expects {arch}{sig.ins.mnemonic} src to use a supported mat blayout/" \
            "slayout combination (" if arch and sig.ins.mnemonic == "textract" else ""
        raise sig.fail(f"{head}a Mat source of a {d.loc.name} tile must be NZ or ZN on "
                       f"{sig.target}, got {s.layout_name}{')' if head else ''}")


def _packed_pairs_not_run(sig: Sig) -> None:
    """A ``.pto`` move of packed FP4 tiles: PTOAS counts their columns (and the window's) in
    packed pairs (PTO_IR_manual, tile_buf), ptoisa's FP4 tiles count FP4 elements, so the
    window would be half of the program's: refused by name."""
    for name in ("dst", "src"):
        t = sig[name]
        if isinstance(t, TileSpec) and t.dtype.packed:
            raise sig.fail(f"operation 'pto.{sig.ins.mnemonic}' cannot be executed by ptoisa "
                           f"yet: its {t.dtype} {name} counts packed FP4 pairs (PTOAS's "
                           "extents; ptoisa's FP4 tiles count FP4 elements)")


def _fp_words(sig: Sig) -> None:
    fp = sig["fp"]
    if not isinstance(fp, TileSpec):
        return
    # fp holds 64-bit quant words; a tile of another element type (PTOAS programs write
    # f32/f16 scaling tiles) is read by the target's fp_tile_words (quant.fp_words)
    if sig.target.traits.npu_static_checks and fp.loc is not TileType.Scaling:
        raise sig.fail(f"expects fp to use loc=scaling (fp must be a Scaling tile on "
                       f"{sig.target}, got {fp.loc.name})")


def _index(ins: Instr, name: str, v: Any) -> int:
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)):
        raise RuntimeCheckError(f"{name} must be an integer, got {v!r}", op=ins.mnemonic)
    v = int(v)
    if not 0 <= v <= 0xFFFF:
        raise RuntimeCheckError(f"{name} {v} outside the uint16 range [0, 65535]",
                                op=ins.mnemonic)
    return v


def _window_fits(ins: Instr, what: str, big: Tile, r0: int, c0: int, rows: int, cols: int,
                 extent: str) -> None:
    if r0 + rows > big.rows or c0 + cols > big.cols:
        raise RuntimeCheckError(
            f"window of {rows}x{cols} ({extent}) at ({r0}, {c0}) exceeds {what} "
            f"{big.rows}x{big.cols}", op=ins.mnemonic)


def _convert(m: Machine, vals: np.ndarray, src: Tile, dst: Tile, relu: bool,
             scalar_word: Any = None, words: np.ndarray | None = None) -> np.ndarray:
    """The fix-pipe conversion of a block of src values to dst's element type."""
    if relu and m.target.traits.fixpipe_relu_nan == "zero" and vals.dtype.kind == "f" \
            and words is None and scalar_word is None:
        # (a plain conversion: ReLU first or last is the same, and x > 0 ? x : 0 is 0 on NaN)
        vals = np.where(np.isnan(vals), vals.dtype.type(0), vals)
    mode = None
    if words is not None:
        mode = quant_mode(m.target, src.dtype, dst.dtype)
    elif scalar_word is not None:
        mode = quant_mode(m.target, src.dtype, dst.dtype, scalar=True)
        words = np.full((1, vals.shape[1]), int(scalar_word) & 0xFFFFFFFFFFFFFFFF, np.uint64)
    keeps_inf = m.target.traits.fixpipe_f16_saturation == "window" and src.shape == dst.shape
    if mode == "FLOAT" and dst.dtype is D.f16 and not keeps_inf:
        # (the CPU simulator converts a window of an equally shaped tile without saturation:
        # inf and NaN pass through there, as its recorded goldens show)
        # the fix-pipe saturates a scaled f32 to the finite f16 range (as for i32 -> f16) and
        # turns NaN into 0 (the upstream golden; the CPU simulator agrees)
        with np.errstate(invalid="ignore", over="ignore"):
            prod = quantize(vals, words, mode, D.f32, vector=scalar_word is None, relu=relu)
        prod = np.nan_to_num(prod, nan=0.0, posinf=65504.0, neginf=-65504.0)
        return np.clip(prod, -65504.0, 65504.0).astype(np.float16)
    if mode is not None:
        return quantize(vals, words, mode, dst.dtype, vector=scalar_word is None, relu=relu)
    with np.errstate(over="ignore", invalid="ignore"):
        return quantize(vals, np.zeros((1, vals.shape[1]), np.uint64), None, dst.dtype,
                        vector=True, relu=relu)


def _split_args(ins: Instr, a: Any, b: Any, c: Any) -> tuple[Any, int, int]:
    """C++ overloads: (indexRow=0, indexCol=0) or (preQuantScalar, indexRow, indexCol)."""
    if c is not None:
        return a, _index(ins, "indexRow", b), _index(ins, "indexCol", c)
    return None, _index(ins, "indexRow", 0 if a is None else a), \
        _index(ins, "indexCol", 0 if b is None else b)


_RELU = Param("reluMode", ReluPreMode.NoRelu, ReluPreMode)
#: PTOAS's A5 accToVecMode: the vector core(s) an Acc -> Vec move delivers to (one core is
#: modelled: a single-core mode delivers the whole window to dst; a dual mode, which splits it
#: between the two, is refused by name when it runs)
_ACC_TO_VEC = Param("accToVecMode", "single_mode_vec0")
#: PTOAS attributes of pto.textract / pto.tinsert
_MOVE_ATTRS = {"reluPreMode": Attr("reluMode"), "accToVecMode": Attr("accToVecMode")}
#: A5's TInsertMode SPLIT2 / SPLIT4 (PTOAS ``tinsertMode = #pto.tinsert_mode<split2>``): a
#: Vec (NZ) -> Mat insert whose UB -> L1 copy is cut into 2 or 4 bursts; the data moved is
#: the plain insert's (TINSERT page, "NZ Split")
_TINSERT_MODE = Param("tinsertMode", None)
_TINSERT_ATTRS = {**_MOVE_ATTRS, "tinsertMode": Attr("tinsertMode")}


def _split_insert(sig: Sig) -> None:
    mode = sig.params.get("tinsertMode")
    if mode is None:
        return
    name = str(getattr(mode, "name", mode)).lower()
    if name not in ("split2", "split4"):
        raise sig.fail(f"tinsertMode {name}: ptoisa knows the NZ split modes split2 and split4")
    if not sig.target.traits.tinsert_split:
        raise sig.fail(f"tinsertMode {name} (the NZ split insert) is an A5 form, not on "
                       f"{sig.target}")
    s, d = sig["src"], sig["dst"]
    if isinstance(s, TileSpec) and isinstance(d, TileSpec) and not (
            s.loc is TileType.Vec and d.loc is TileType.Mat and s.layout_name == "NZ"):
        raise sig.fail(f"tinsertMode {name} moves an NZ Vec tile into a Mat tile, got "
                       f"{s.loc.name} ({s.layout_name}) -> {d.loc.name}")


def _a5_acc_src_nz(sig: Sig) -> None:
    """A5's Acc tile is NZ: col_major boxes of row_major fractals (the C++ TileAcc)."""
    s = sig["src"]
    if isinstance(s, TileSpec) and s.loc is TileType.Acc and not (
            s.blayout is BLayout.ColMajor and s.slayout is SLayout.RowMajor):
        raise sig.fail("expects A5 acc-source textract src to use blayout=col_major and "
                       f"slayout=row_major, got {s.blayout.name} / {s.slayout.name}")


def _a5_right_dst(sig: Sig) -> None:
    """A5's Right tile is ZN: row_major boxes of col_major fractals (the C++ TileRight)."""
    d = sig["dst"]
    if isinstance(d, TileSpec) and d.loc is TileType.Right and not (
            d.blayout is BLayout.RowMajor and d.slayout is SLayout.ColMajor):
        raise sig.fail("expects A5 right dst to use row_major blayout and col_major slayout, "
                       f"got {d.blayout.name} / {d.slayout.name}")


def _pre_quant_acc(sig: Sig) -> None:
    """PTOAS's rule of the pre-quant form (``ins(%src, %row, %col, %pre)``): its src is an Acc
    tile (the C++ overload also quantises a Mat source: not a rule of the instruction)."""
    s = sig["src"]
    if sig["indexColQuant"] is not None and isinstance(s, TileSpec) \
            and s.loc is not TileType.Acc:
        raise sig.fail(f"expects preQuantScalar form to use loc=acc src, got {s.loc.name}")


def _single_core(op: str, mode: Any) -> None:
    """Refuse by name a dual accToVecMode (the window split between the two vector cores)."""
    name = str(getattr(mode, "value", mode)).rsplit("<", 1)[-1].rstrip(">").lower()
    if name.startswith("dual"):
        raise ExecutionError(
            f"operation 'pto.{op}' cannot be executed by ptoisa yet: accToVecMode {name} "
            "splits the window between the two vector cores, which ptoisa does not model")
#: PTOAS writes the scalar pre-quant word after the indices, ``ins(%src, %row, %col, %pre)``;
#: the C++ overload is ``(dst, src, preQuantScalar, indexRow, indexCol)``, which the three
#: optional scalar operands hold in that order
_PRE_QUANT_LAST = Form(inputs=("src", "indexCol", "indexColQuant", "indexRow"))
#: ``ins(%src, %row, %col fp %fp : ...)``: the TEXTRACT_FP / TINSERT_FP spelling
_FP_FORM = Form(inputs=("src", "indexRow", "indexCol", "fp"))
_IDX_OPNDS = (Opnd("indexRow", "scalar", optional=True), Opnd("indexCol", "scalar", optional=True),
              Opnd("indexColQuant", "scalar", optional=True))


# ---- TEXTRACT / TEXTRACT_FP --------------------------------------------------------------------

def _extract_bounds(ins: Instr, dst: Tile, src: Tile, r0: int, c0: int) -> None:
    if isinstance(src, ConvTile):
        if src.layout != "FRACTAL_Z":
            raise RuntimeCheckError(f"can extract from a FRACTAL_Z ConvTile only, got "
                                    f"{src.layout}", op=ins.mnemonic)
        k, n = src.matrix_shape()
        if r0 + dst.rows > k or c0 + dst.cols > n:
            raise RuntimeCheckError(
                f"window of {dst.rows}x{dst.cols} at ({r0}, {c0}) exceeds the {k}x{n} matrix of "
                f"the FRACTAL_Z src", op=ins.mnemonic)
        return
    if _reads_transposed(current(), dst, src):
        return  # (the TileLib's untransposed load: _untransposed_right checks what it reads)
    _extract_static_window(ins, dst, src, r0, c0)
    # a permissive machine (the CPU simulator) walks dst's valid region only
    _window_fits(ins, "src", src, r0, c0, dst.valid_row, dst.valid_col, "dst valid region")


@sim_unchecked
def _extract_static_window(ins: Instr, dst: Tile, src: Tile, r0: int, c0: int) -> None:
    """The page's general run-time bounds: indexRow + dst Rows <= src Rows, likewise cols."""
    _window_fits(ins, "src", src, r0, c0, dst.rows, dst.cols, "dst Rows x Cols")


@by_signature  # (tile types and valid extents, the indices, the target, permissive)
def _textract_runtime(ins: Instr, dst: Tile, src: Tile, a: Any = None, b: Any = None,
                      c: Any = None, **params: Any) -> None:
    _, r0, c0 = _split_args(ins, a, b, c)
    _extract_bounds(ins, dst, src, r0, c0)


def _extract(m: Machine, dst: Tile, src: Tile, r0: int, c0: int, relu: bool,
             scalar_word: Any = None, words: np.ndarray | None = None) -> None:
    vr, vc = dst.valid_shape
    if not (vr and vc):
        return
    if isinstance(src, ConvTile):  # a FRACTAL_Z weight tile read as its (K, N) matrix
        vals = src.matrix_read(vr, vc, r0, c0)
    elif _reads_transposed(m, dst, src):
        vals = _untransposed_right(dst, src, r0, c0)
    else:
        vals = np.asarray(src.read(vr, vc, r0, c0))
    dst.write(_convert(m, vals, src, dst, relu, scalar_word, words))


def _reads_transposed(m: Machine, dst: Tile, src: Tile) -> bool:
    """An NZ Mat -> Right extract on a target whose load does not transpose it
    (``mat2right_transposing_load`` False: PTOAS's a5 TileLib)."""
    return not m.target.traits.mat2right_transposing_load and \
        dst.spec.loc is TileType.Right and src.spec.loc is TileType.Mat and \
        src.spec.layout_name == "NZ"


def _untransposed_right(dst: Tile, src: Tile, r0: int, c0: int) -> np.ndarray:
    """What PTOAS's a5 TileLib leaves in a Right tile extracted from an NZ Mat tile
    (``mat2right_transposing_load`` False; lib/TileOps/a5/textract.py
    ``template_textract_mat2right``: ``mte_l1_l0b(src, dst, k, n)`` without ``transpose``).
    That load reads the L1 bytes as B's transpose, an n x k NZ matrix whose box columns are n
    (padded to 16) rows high (``MTE_L1_L0B``), so the k x n Right tile holds the source's
    first n x k values transposed: dst[i, j] = src[j, i]. Executed where those bytes are the
    source's own: from index (0, 0), of a source whose box columns are that high, or taller
    when k fits in one box column (the load reads the first box column's top rows).
    Anything else is refused by name."""
    vr, vc = dst.valid_shape
    n_up = -(-vc // 16) * 16
    c0_elems = 32 // src.dtype.itemsize
    fits = src.rows == n_up or (src.rows > n_up and vr <= c0_elems)
    if r0 or c0 or not fits or src.cols < vr:
        raise NotExecutedYet(
            f"a Mat -> Right extract as PTOAS's TileLib issues it (an untransposed "
            f"mte_l1_l0b, reading {n_up}-row box columns) is executed from index (0, 0) of an "
            f"NZ source whose box columns are {n_up} rows high (or taller, with k <= "
            f"{c0_elems}), got index ({r0}, {c0}) of a {src.rows}x{src.cols} source for a "
            f"{vr}x{vc} window")
    return np.asarray(src.read(vc, vr, 0, 0)).T


def _a5_vec_vec_nd(sig: Sig) -> None:
    """a5: a Vec -> Vec extract copies rows of ND tiles (the PTOAS verifier's A5 rule)."""
    s, d = sig["src"], sig["dst"]
    if not isinstance(s, TileSpec) or not isinstance(d, TileSpec):
        return
    if s.loc is TileType.Vec and d.loc is TileType.Vec and not (s.is_nd and d.is_nd):
        raise sig.fail("expects A5 vec->vec textract src/dst to use ND layout (blayout=row_major, "
                       f"slayout=none_box), got src {s.layout_name}, dst {d.layout_name}")


@instr("TEXTRACT", family="layout", pipe=Pipe.MTE1, pipe_of=PipeForms(("src", "dst"), {
           ("Mat", "Left"): Pipe.MTE1, ("Mat", "Right"): Pipe.MTE1,
           ("Mat", "ScaleLeft"): Pipe.MTE1, ("Mat", "ScaleRight"): Pipe.MTE1,
           ("Acc", "Mat"): Pipe.FIX, ("Acc", "Vec"): Pipe.FIX,
           ("Vec", "Mat"): Pipe.FIX, ("Vec", "Vec"): Pipe.V,
       }, why="pto-isa's TEXTRACT_M2LR (MTE1), TEXTRACT_A2M and TEXTRACT_V2M (FIX); A5's "
              "Acc -> Vec leaves through the fix-pipe like TMOV_A2V, Vec -> Vec is a vector "
              "copy (PTOAS)."),
       ptoas=Ptoas(forms={"pto.textract": (
           # A5 textract mat -> scaling extracts an MX scale window (the Mat -> Scale path)
           Form(inputs=("src", "indexRow", "indexCol"), retype={"dst": SCALE}),
           _PRE_QUANT_LAST)}, attrs=_MOVE_ATTRS,
           rules={"pto.textract": (_pre_quant_acc,)},
           keywords={"fp": ("TEXTRACT_FP", _FP_FORM), "pre_quant": ("TEXTRACT", _PRE_QUANT_LAST)}),
       operands=(Opnd("dst", "tile", "out"), Opnd("src", "tile"), *_IDX_OPNDS),
       params=(_RELU, _ACC_TO_VEC), dtype_key=("dst",),
       static=(_moves, _conversion, _npu_mat_src_fractal),
       static_for={"a5": (_a5_vec_vec_nd, _a5_acc_src_nz, _a5_right_dst)},
       runtime=(_textract_runtime,))
def TEXTRACT(m: Machine, dst: Tile, src: Tile, indexRow: Any = None, indexCol: Any = None,  # noqa: N802,N803
             indexColQuant: Any = None, *, reluMode: ReluPreMode,
             accToVecMode: Any = "single_mode_vec0") -> None:  # noqa: N803
    """dst[i, j] = src[indexRow + i, indexCol + j] over dst's valid region.

    C++ overloads: ``TEXTRACT(dst, src, indexRow=0, indexCol=0)`` and
    ``TEXTRACT(dst, src, preQuantScalar, indexRow, indexCol)`` (a scalar quant word for the
    fix-pipe). Element types convert through the fix-pipe (Acc sources; any source on cpu);
    ``reluMode=NormalRelu`` applies ReLU. On cpu the window is dst's valid region, on the NPUs
    dst's static Rows x Cols must fit inside src (the manual's bound). ``accToVecMode``
    (PTOAS, A5 Acc -> Vec): a single-core mode delivers the whole window to dst; a dual mode
    is refused by name.
    """
    _single_core("textract", accToVecMode)
    q, r0, c0 = _split_args(TEXTRACT, indexRow, indexCol, indexColQuant)
    _extract(m, dst, src, r0, c0, reluMode is ReluPreMode.NormalRelu, scalar_word=q)


def _fp_cols(ins: Instr, fp: Tile, first: int, n: int) -> None:
    if first + n > fp.valid_col:
        raise RuntimeCheckError(
            f"fp holds {fp.valid_col} quant words (valid cols) but columns {first}..{first + n - 1}"
            " need one each", op=ins.mnemonic)


def _textract_fp_runtime(ins: Instr, dst: Tile, src: Tile, fp: Tile, indexRow: Any,
                         indexCol: Any, **params: Any) -> None:
    r0, c0 = _index(ins, "indexRow", indexRow), _index(ins, "indexCol", indexCol)
    _extract_bounds(ins, dst, src, r0, c0)
    if quant_mode(current().target, src.dtype, dst.dtype) is not None and dst.valid_col:
        _fp_cols(ins, fp, c0, dst.valid_col)


def _words(m: Machine, fp: Tile, first: int, n: int) -> np.ndarray:
    return fp_words(fp, n, first, raw=m.target.traits.fp_tile_words == "raw")


@instr("TEXTRACT_FP", family="layout", pipe=Pipe.FIX,
       ptoas=Ptoas(attrs=_MOVE_ATTRS),  # (pto.textract ... fp %fp: see TEXTRACT)
       operands=(Opnd("dst", "tile", "out"), Opnd("src", "tile"), Opnd("fp", "tile"),
                 Opnd("indexRow", "scalar"), Opnd("indexCol", "scalar")),
       params=(_RELU, _ACC_TO_VEC), dtype_key=("dst",),
       static=(_moves, _conversion, _fp_words),
       static_for={"a5": (_a5_acc_src_nz,)},
       runtime=(_textract_fp_runtime,))
def TEXTRACT_FP(m: Machine, dst: Tile, src: Tile, fp: Tile, indexRow: int, indexCol: int, *,  # noqa: N802,N803
                reluMode: ReluPreMode, accToVecMode: Any = "single_mode_vec0") -> None:  # noqa: N803
    """TEXTRACT through the fix-pipe with per-column quant words: dst[i, j] =
    quant(src[indexRow + i, indexCol + j]; fp[0, indexCol + j]) (the backend offsets the quant
    parameter address by indexCol). Pairs without a quant mode are a plain conversion."""
    _single_core("textract", accToVecMode)
    r0, c0 = int(indexRow), int(indexCol)
    vc = dst.valid_col
    words = None
    if vc and quant_mode(m.target, src.dtype, dst.dtype) is not None:
        words = _words(m, fp, c0, vc)
    _extract(m, dst, src, r0, c0, reluMode is ReluPreMode.NormalRelu, words=words)


# ---- TINSERT / TINSERT_FP ----------------------------------------------------------------------

def _insert_bounds(ins: Instr, dst: Tile, src: Tile, r0: int, c0: int) -> None:
    """The ISA's bound (TINSERT page: indexRow + src.ValidRow <= dst.Rows, likewise for
    columns), which a5 checks on every path (a2a3 adds a stricter one for Acc sources)."""
    _window_fits(ins, "dst", dst, r0, c0, src.valid_row, src.valid_col, "src valid region")


def _a2a3_acc_insert_bounds(ins: Instr, dst: Tile, src: Tile, r0: int, c0: int) -> None:
    """a2a3: the Acc -> Mat path asserts the static bound indexRow + src.Rows <= dst.Rows
    (likewise for columns)."""
    if src.loc is TileType.Acc:
        _window_fits(ins, "dst", dst, r0, c0, src.rows, src.cols, "src Rows x Cols")


def _tinsert_runtime(ins: Instr, dst: Tile, src: Tile, a: Any = None, b: Any = None,
                     c: Any = None, **params: Any) -> None:
    _, r0, c0 = _split_args(ins, a, b, c)
    _insert_bounds(ins, dst, src, r0, c0)


def _a2a3_tinsert_runtime(ins: Instr, dst: Tile, src: Tile, a: Any = None, b: Any = None,
                          c: Any = None, **params: Any) -> None:
    _, r0, c0 = _split_args(ins, a, b, c)
    _a2a3_acc_insert_bounds(ins, dst, src, r0, c0)


def _insert(m: Machine, dst: Tile, src: Tile, r0: int, c0: int, relu: bool,
            scalar_word: Any = None, words: np.ndarray | None = None) -> None:
    vr, vc = src.valid_shape
    if not (vr and vc):
        return
    vals = np.asarray(src.read(vr, vc))
    dst.write(_convert(m, vals, src, dst, relu, scalar_word, words), r0, c0)


def _npu_insert_dst(sig: Sig) -> None:
    """a2a3: an Acc -> Mat insert writes NZ boxes of 512 bytes."""
    s, d = sig["src"], sig["dst"]
    if not isinstance(s, TileSpec) or not isinstance(d, TileSpec) or s.loc is not TileType.Acc:
        return
    if d.layout_name != "NZ" or d.fractal != 512 or (d.cols * d.dtype.itemsize) % 32:
        raise sig.fail(f"dst must be an NZ Mat tile with 512-byte boxes on a2a3, got "
                       f"{d.layout_name} (fractal {d.fractal})")


def _a2a3_insert_dtypes(sig: Sig) -> None:
    """a2a3: TINSERT (Acc -> Mat) writes f32 accumulators as f16/bf16 (the PTOAS verifier's
    A2/A3 rule; quantised inserts go through TINSERT_FP or the pre_quant scalar)."""
    s, d = sig["src"], sig["dst"]
    if not isinstance(s, TileSpec) or not isinstance(d, TileSpec) or s.loc is not TileType.Acc:
        return
    if sig["indexColQuant"] is not None and quant_mode(sig.target, s.dtype, d.dtype,
                                                       scalar=True) is not None:
        return  # the pre_quant scalar form quantises (PTOAS lit tinsert_forms_emitc.pto)
    if s.dtype.name != "f32" or d.dtype.name not in ("f16", "bf16"):
        raise sig.fail("expects A2/A3 tinsert element types to be src=f32, dst=f16/bf16, got "
                       f"src={s.dtype}, dst={d.dtype}")


@instr("TINSERT", family="layout", pipe=Pipe.FIX, pipe_of=PipeForms(("src", "dst"), {
           ("Acc", "Mat"): Pipe.FIX, ("Acc", "Vec"): Pipe.FIX,
           ("Vec", "Mat"): Pipe.MTE3, ("Vec", "Vec"): Pipe.V,
       }, why="pto-isa's TINSERT_A2M (FIX); A5's UB sources as PTOAS selects them (Vec -> Mat "
              "MTE3, Vec -> Vec V)."),
       ptoas=Ptoas(forms={"pto.tinsert": (_PRE_QUANT_LAST,)}, attrs=_TINSERT_ATTRS,
                   rules={"pto.tinsert": (_pre_quant_acc, _packed_pairs_not_run)},
                   keywords={"fp": ("TINSERT_FP", _FP_FORM),
                             "pre_quant": ("TINSERT", _PRE_QUANT_LAST)}),
       operands=(Opnd("dst", "tile", "out"), Opnd("src", "tile"), *_IDX_OPNDS),
       params=(_RELU, _ACC_TO_VEC, _TINSERT_MODE), dtype_key=("dst",),
       static=(_moves, _conversion, _split_insert),
       static_for={"a2a3": (_npu_insert_dst, _a2a3_insert_dtypes)},
       runtime=(_tinsert_runtime,), runtime_for={"a2a3": (_a2a3_tinsert_runtime,)})
def TINSERT(m: Machine, dst: Tile, src: Tile, indexRow: Any = None, indexCol: Any = None,  # noqa: N802,N803
            indexColQuant: Any = None, *, reluMode: ReluPreMode,
            accToVecMode: Any = "single_mode_vec0", tinsertMode: Any = None) -> None:  # noqa: N803
    """dst[indexRow + i, indexCol + j] = src[i, j] over src's valid region; the rest of dst is
    untouched. Overloads, conversion, ReLU and ``accToVecMode`` as TEXTRACT (``TINSERT(dst,
    src, indexRow, indexCol)`` or ``TINSERT(dst, src, preQuantScalar, indexRow,
    indexCol)``). ``tinsertMode`` split2 / split4 (A5, NZ Vec -> Mat) only cuts the copy
    into bursts: the same data moves."""
    del tinsertMode
    _single_core("tinsert", accToVecMode)
    q, r0, c0 = _split_args(TINSERT, indexRow, indexCol, indexColQuant)
    _insert(m, dst, src, r0, c0, reluMode is ReluPreMode.NormalRelu, scalar_word=q)


def _tinsert_fp_runtime(ins: Instr, dst: Tile, src: Tile, fp: Tile, indexRow: Any,
                        indexCol: Any, **params: Any) -> None:
    r0, c0 = _index(ins, "indexRow", indexRow), _index(ins, "indexCol", indexCol)
    _insert_bounds(ins, dst, src, r0, c0)
    if quant_mode(current().target, src.dtype, dst.dtype) is not None and src.valid_col:
        _fp_cols(ins, fp, 0, src.valid_col)


def _a2a3_tinsert_fp_runtime(ins: Instr, dst: Tile, src: Tile, fp: Tile, indexRow: Any,
                             indexCol: Any, **params: Any) -> None:
    r0, c0 = _index(ins, "indexRow", indexRow), _index(ins, "indexCol", indexCol)
    _a2a3_acc_insert_bounds(ins, dst, src, r0, c0)


@instr("TINSERT_FP", family="layout", pipe=Pipe.FIX,
       ptoas=Ptoas(attrs=_MOVE_ATTRS),  # (pto.tinsert ... fp %fp: see TINSERT)
       operands=(Opnd("dst", "tile", "out"), Opnd("src", "tile"), Opnd("fp", "tile"),
                 Opnd("indexRow", "scalar"), Opnd("indexCol", "scalar")),
       params=(_RELU, _ACC_TO_VEC), dtype_key=("dst",),
       static=(_moves, _conversion, _fp_words),
       static_for={"a2a3": (_npu_insert_dst,)},
       runtime=(_tinsert_fp_runtime,), runtime_for={"a2a3": (_a2a3_tinsert_fp_runtime,)})
def TINSERT_FP(m: Machine, dst: Tile, src: Tile, fp: Tile, indexRow: int, indexCol: int, *,  # noqa: N802,N803
               reluMode: ReluPreMode, accToVecMode: Any = "single_mode_vec0") -> None:  # noqa: N803
    """TINSERT through the fix-pipe with per-column quant words: dst[indexRow + i,
    indexCol + j] = quant(src[i, j]; fp[0, j]) (one word per source column)."""
    _single_core("tinsert", accToVecMode)
    vc = src.valid_col
    words = None
    if vc and quant_mode(m.target, src.dtype, dst.dtype) is not None:
        words = _words(m, fp, 0, vc)
    _insert(m, dst, src, int(indexRow), int(indexCol), reluMode is ReluPreMode.NormalRelu,
            words=words)


# ---- TCONCAT -----------------------------------------------------------------------------------

def _idx_tiles(sig: Sig) -> None:
    for n in ("dstIdx", "src0Idx", "src1Idx"):
        t = sig[n]
        if isinstance(t, TileSpec) and not t.dtype.is_int:
            raise sig.fail(f"{n} must hold integers, got {t.dtype}")


def _tconcat_runtime(ins: Instr, dst: Tile, src0: Tile, src1: Tile, a: Tile | None = None,
                     b: Tile | None = None, c: Tile | None = None) -> None:
    rows = {dst.valid_row, src0.valid_row, src1.valid_row}
    if len(rows) != 1:
        raise RuntimeCheckError(
            f"valid rows must be equal (dst {dst.valid_row}, src0 {src0.valid_row}, src1 "
            f"{src1.valid_row})", op=ins.mnemonic)
    idx = [t for t in (a, b, c) if t is not None]
    if len(idx) == 1:
        raise RuntimeCheckError("the indexed forms take src0Idx and src1Idx (and optionally "
                                "dstIdx first)", op=ins.mnemonic)
    for t in idx:
        if t.valid_col < 1 or t.valid_row < dst.valid_row:
            raise RuntimeCheckError(
                f"index tile {t._label()} must hold one entry per row ({dst.valid_row} rows)",
                op=ins.mnemonic)


def _concat_cols(ins: Instr, dst: Tile, src0: Tile, src1: Tile, idx: tuple[Any, ...],
                 exact: bool) -> None:
    """The plain form's column count: n0 + n1 == dst valid cols (``exact``), or at most dst's
    static Cols (a2a3)."""
    if any(t is not None for t in idx):
        return
    n = src0.valid_col + src1.valid_col
    if (not exact and n > dst.cols) or (exact and dst.valid_col != n):
        want = f"dst valid cols {dst.valid_col}" if exact else f"at most dst Cols {dst.cols}"
        raise RuntimeCheckError(
            f"src0 valid cols {src0.valid_col} + src1 valid cols {src1.valid_col} = {n} must be "
            f"{want} on {current().target}", op=ins.mnemonic)


def _tconcat_cols_valid(ins: Instr, dst: Tile, src0: Tile, src1: Tile, a: Tile | None = None,
                        b: Tile | None = None, c: Tile | None = None) -> None:
    """Every target but a2a3: the sources' valid cols add up to dst's valid cols."""
    _concat_cols(ins, dst, src0, src1, (a, b, c), exact=True)


def _a2a3_tconcat_cols(ins: Instr, dst: Tile, src0: Tile, src1: Tile, a: Tile | None = None,
                       b: Tile | None = None, c: Tile | None = None) -> None:
    """a2a3: the sources' valid cols fit dst's static Cols."""
    _concat_cols(ins, dst, src0, src1, (a, b, c), exact=False)


@instr("TCONCAT", family="layout", pipe=Pipe.V,
       # PTOAS writes the indexed form as its own op: ins(src0, src1, src0Idx, src1Idx)
       ptoas=Ptoas(forms={"pto.tconcatidx": (Form(inputs=("src0", "src1", "idx0", "idx1")),)},
                   attrs={"candidates": Attr(only=None, why="the vector templates PTOAS may "
                                             "expand the op with; the result is the same")}),
       operands=(Opnd("dst", "tile", "out"), Opnd("src0", "tile"), Opnd("src1", "tile"),
                 Opnd("idx0", "tile", "inout", optional=True),
                 Opnd("idx1", "tile", optional=True), Opnd("idx2", "tile", optional=True)),
       dtype_key=("dst",),
       static=(locs(["dst", "src0", "src1", "idx0", "idx1", "idx2"], TileType.Vec),
               same_dtype("dst", "src0", "src1"), _idx_tiles),
       runtime=(_tconcat_runtime, except_on("a2a3", _tconcat_cols_valid)),
       runtime_for={"a2a3": (_a2a3_tconcat_cols,)})
def TCONCAT(m: Machine, dst: Tile, src0: Tile, src1: Tile, idx0: Tile | None = None,  # noqa: N802
            idx1: Tile | None = None, idx2: Tile | None = None) -> None:
    """Row-wise concatenation: dst[i, :] = src0[i, :n0] ++ src1[i, :n1] for i < dst valid rows.

    ``TCONCAT(dst, src0, src1)``: n0, n1 are the sources' valid cols. Indexed forms
    ``TCONCAT(dst, src0, src1, src0Idx, src1Idx)`` and ``TCONCAT(dst, src0, src1, dstIdx,
    src0Idx, src1Idx)``: column 0 of the index tiles holds per-row *byte* lengths counted in
    units of the index element (n = idx // sizeof(idx element), at most the source's valid
    cols); the 6-operand form also writes dstIdx[i, 0] = src0Idx[i, 0] + src1Idx[i, 0]. Columns
    of dst past n0 + n1 are left untouched.
    """
    if idx2 is not None:
        dst_idx, i0, i1 = idx0, idx1, idx2
    else:
        dst_idx, i0, i1 = None, idx0, idx1
    vr = dst.valid_row
    if not vr:
        return
    if i0 is None or i1 is None:
        n0, n1 = src0.valid_col, src1.valid_col
        if n0:
            dst.write(src0.read(vr, n0))
        if n1:
            dst.write(src1.read(vr, n1), 0, n0)
        return
    raw0 = np.asarray(i0.read(vr, 1)).astype(np.int64)[:, 0]
    raw1 = np.asarray(i1.read(vr, 1)).astype(np.int64)[:, 0]
    c0 = np.clip(raw0 // i0.dtype.itemsize, 0, src0.valid_col)
    c1 = np.clip(raw1 // i1.dtype.itemsize, 0, src1.valid_col)
    for r in range(vr):
        a, b = int(c0[r]), int(c1[r])
        b = min(b, dst.cols - a)
        if a:
            dst.write(src0.read(1, a, r, 0), r, 0)
        if b > 0:
            dst.write(src1.read(1, b, r, 0), r, a)
    if dst_idx is not None:
        with np.errstate(over="ignore"):
            tot = (raw0 + raw1).astype(dst_idx.dtype.np)
        dst_idx.write(tot[:, None])


# ---- TTRANS ------------------------------------------------------------------------------------

def _same_elem_size(sig: Sig) -> None:
    d, s = sig["dst"], sig["src"]
    if isinstance(d, TileSpec) and isinstance(s, TileSpec) and \
            d.dtype.itemsize != s.dtype.itemsize:
        raise sig.fail(f"dst and src element sizes differ ({d.dtype} vs {s.dtype})")


def _ttrans_static(sig: Sig) -> None:
    d, s = sig["dst"], sig["src"]
    if not isinstance(d, TileSpec) or not isinstance(s, TileSpec):
        return
    if s.is_boxed or d.is_boxed:
        raise sig.fail(f"src and dst must be ND or DN tiles, got {s.layout_name} -> "
                       f"{d.layout_name}")


def _a2a3_ttrans_src(sig: Sig) -> None:
    """a2a3: TTRANS reads a row-major src."""
    s = sig["src"]
    if isinstance(s, TileSpec) and isinstance(sig["dst"], TileSpec) and not s.is_row_major:
        raise sig.fail(f"src must be row-major on a2a3, got {s.layout_name}")


def _ttrans_runtime(ins: Instr, dst: Tile, src: Tile, tmp: Tile) -> None:
    if isinstance(src, ConvTile) or isinstance(dst, ConvTile):
        if not (isinstance(src, ConvTile) and isinstance(dst, ConvTile)):
            raise RuntimeCheckError("a ConvTile transform needs ConvTile src and dst",
                                    op=ins.mnemonic)


def _a5_ttrans(m: Machine, dst: Tile, src: Tile, tmp: Tile) -> None:
    """a5 TTRANS transposes the static Rows x Cols (it does not consult the valid region)."""
    if isinstance(src, ConvTile):
        transform(dst, src)  # type: ignore[arg-type]
        return
    _transpose(dst, src, src.rows, src.cols)


def _a5_ttrans_runtime(ins: Instr, dst: Tile, src: Tile, tmp: Tile) -> None:
    """a5 transposes the static shape: dst must hold src's Cols x Rows."""
    if isinstance(src, ConvTile) or isinstance(dst, ConvTile):
        return
    if dst.rows < src.cols or dst.cols < src.rows:
        raise RuntimeCheckError(f"dst {dst.rows}x{dst.cols} cannot hold the transpose of src "
                                f"{src.rows}x{src.cols} (a5 transposes the static shape)",
                                op=ins.mnemonic)


def _cpu_ttrans_runtime(ins: Instr, dst: Tile, src: Tile, tmp: Tile) -> None:
    """cpu (the CPU simulator): dst's valid region is the transpose of src's."""
    if isinstance(src, ConvTile) or isinstance(dst, ConvTile):
        return
    vr, vc = src.valid_shape
    if (dst.valid_row, dst.valid_col) != (vc, vr):
        raise RuntimeCheckError(
            f"dst valid region {dst.valid_row}x{dst.valid_col} must be the transpose of src's "
            f"{vr}x{vc}", op=ins.mnemonic)


def _a2a3_ttrans_runtime(ins: Instr, dst: Tile, src: Tile, tmp: Tile) -> None:
    """a2a3: dst's static shape holds the transpose of src's valid region."""
    if isinstance(src, ConvTile) or isinstance(dst, ConvTile):
        return
    vr, vc = src.valid_shape
    if dst.rows < vc or dst.cols < vr:
        raise RuntimeCheckError(
            f"dst {dst.rows}x{dst.cols} cannot hold the transpose of src's valid region "
            f"{vr}x{vc}", op=ins.mnemonic)


@instr("TTRANS", family="layout", pipe=Pipe.V, ptoas=TMP_LIKE_SRC,
       operands=(Opnd("dst", "tile", "out"), Opnd("src", "tile"), Opnd("tmp", "tile", "scratch")),
       dtype_key=("src",),
       static=(locs(["dst", "src"], TileType.Vec), _same_elem_size, _ttrans_static),
       static_for={"a2a3": (_a2a3_ttrans_src,)},
       runtime=(_ttrans_runtime,),
       runtime_for={"a2a3": (_a2a3_ttrans_runtime,), "a5": (_a5_ttrans_runtime,),
                    "cpu": (_cpu_ttrans_runtime,)},
       impl_for={"a5": _a5_ttrans})
def TTRANS(m: Machine, dst: Tile, src: Tile, tmp: Tile) -> None:  # noqa: N802
    """dst[i, j] = src[j, i] (bit copy). cpu and a2a3 transpose src's valid region; a5 the
    static Rows x Cols (it does not consult the valid region). tmp is scratch.

    ConvTile operands transform between convolution layouts (NCHW <-> NC1HWC0, GNCHW <->
    GNC1HWC0, (G)NC1HWC0 -> FRACTAL_Z), see :func:`ptoisa.conv.transform`."""
    if isinstance(src, ConvTile):
        transform(dst, src)  # type: ignore[arg-type]
        return
    _transpose(dst, src, *src.valid_shape)


def _transpose(dst: Tile, src: Tile, vr: int, vc: int) -> None:
    """dst[i, j] = src[j, i] over src's first vr x vc elements."""
    if not (vr and vc):
        return
    vals = np.asarray(src.read(vr, vc)).T
    dst.write(vals.view(dst.dtype.np) if vals.dtype != dst.dtype.np else vals)


# ---- views: TRESHAPE, TSUBVIEW, TGET_SCALE_ADDR, TALIAS ------------------------------------------

def _same_loc(sig: Sig) -> None:
    d, s = sig["dst"], sig["src"]
    if isinstance(d, TileSpec) and isinstance(s, TileSpec) and d.loc is not s.loc:
        raise sig.fail(f"dst and src must have the same tile role ({d.loc.name} vs "
                       f"{s.loc.name})")


def _treshape_static(sig: Sig) -> None:
    d, s = sig["dst"], sig["src"]
    if not isinstance(d, TileSpec) or not isinstance(s, TileSpec):
        return
    if d.nbytes != s.nbytes:
        raise sig.fail(f"dst and src must have the same byte size ({d.describe()}: {d.nbytes} "
                       f"bytes, {s.describe()}: {s.nbytes} bytes)")
    if d.is_boxed != s.is_boxed:
        raise sig.fail(f"cannot reshape between boxed and non-boxed layouts ({s.layout_name} "
                       f"-> {d.layout_name})")


def _cpu_treshape_kind(sig: Sig) -> None:
    """cpu (the CPU simulator): reshape keeps floats floats and integers integers."""
    d, s = sig["dst"], sig["src"]
    if isinstance(d, TileSpec) and isinstance(s, TileSpec) and \
            d.dtype.is_float != s.dtype.is_float:
        raise sig.fail(f"element types must both be floating point or both integer on cpu "
                       f"({s.dtype} -> {d.dtype})")


@instr("TRESHAPE", family="layout", pipe=Pipe.S, batched=True, any_valid=True, access="view",
       operands=(Opnd("dst", "tile", "out"), Opnd("src", "tile")),
       static=(_same_loc, _treshape_static), static_for={"cpu": (_cpu_treshape_kind,)})
def TRESHAPE(m: Machine, dst: Tile, src: Tile) -> None:  # noqa: N802
    """Reinterpret src's bytes as dst's tile type: afterwards dst *is* a view of src's storage
    (no copy; later writes through either tile are seen by both). dst keeps its valid region."""
    m.alias(dst, src, 0, op="treshape")


def _tsubview_static(sig: Sig) -> None:
    d, s = sig["dst"], sig["src"]
    if not isinstance(d, TileSpec) or not isinstance(s, TileSpec):
        return
    if d.dtype is not s.dtype:
        raise sig.fail(f"dst element type {d.dtype} != src element type {s.dtype}")
    if (d.blayout, d.slayout, d.fractal) != (s.blayout, s.slayout, s.fractal):
        raise sig.fail(f"dst layout {d.layout_name} must be src's layout {s.layout_name}")
    # no rule on the static shapes: the page asks for the same location and box layout only,
    # and every implementation (simulator, a2a3, a5) points dst at src's element, addressed
    # with dst's own layout


def _tsubview_runtime(ins: Instr, dst: Tile, src: Tile, rowIdx: Any, colIdx: Any) -> None:  # noqa: N803
    r0, c0 = _index(ins, "rowIdx", rowIdx), _index(ins, "colIdx", colIdx)
    ir, ic = src.spec.inner
    if r0 % ir or c0 % ic:
        raise RuntimeCheckError(f"offset ({r0}, {c0}) must be a multiple of the {ir}x{ic} box "
                                f"of a {src.spec.layout_name} tile", op=ins.mnemonic)
    _window_fits(ins, "src", src, r0, c0, dst.valid_row, dst.valid_col, "dst valid region")


def _tsubview_offset(vals: list[Any]) -> int:
    """The view's byte offset in src: where logical element (rowIdx, colIdx) is."""
    src = vals[1]
    return int(src.spec.offsets[int(vals[2]), int(vals[3])]) * src.dtype.itemsize


@instr("TSUBVIEW", family="layout", pipe=Pipe.S, batched=True, any_valid=True, access="view",
       view_offset=_tsubview_offset,
       operands=(Opnd("dst", "tile", "out"), Opnd("src", "tile"), Opnd("rowIdx", "scalar"),
                 Opnd("colIdx", "scalar")),
       static=(_same_loc, _tsubview_static),
       runtime=(_tsubview_runtime,))
def TSUBVIEW(m: Machine, dst: Tile, src: Tile, rowIdx: int, colIdx: int) -> None:  # noqa: N802,N803
    """Make dst a view of src starting at logical element (rowIdx, colIdx): dst[i, j] *is*
    src[rowIdx + i, colIdx + j] (same bytes) for every (i, j) of dst's valid region when both
    share the pitch (row-major: the same Cols; col-major: the same Rows). Like the C++ tile
    pointer it is (the simulator, a2a3 and a5 all set dst's address to that element), the view
    is dst's own layout from there on: with another Cols, row i of a row-major dst starts
    i * dst.Cols elements after src[rowIdx, colIdx], and the view may run past src (into the
    following bytes of the buffer; of an auto-mode src, past src only as far as the array
    src's storage is part of goes, dst's valid region always inside src)."""
    vr, vc = int(np.max(dst.valid_row)), int(np.max(dst.valid_col))  # (lockstep: per block)
    reach = int(dst.spec.offsets[:vr, :vc].max() + 1) * dst.dtype.itemsize if vr and vc else 0
    m.alias(dst, src, _tsubview_offset([dst, src, rowIdx, colIdx]), op="tsubview", reach=reach)


#: A5's scale address of an L0A / L0B byte address: addr >> 4 (pto-isa include/pto/npu/a5/utils.hpp,
#: GetScaleAddr, the same shift since the MX moves came in; PTOAS designs/mad-semantic-op-design.md
#: section 6: the scale base is the data address / 16). A 64 KiB L0A / L0B thus maps onto the
#: 4 KiB L0A_MX / L0B_MX (buffer_limits.hpp's A5 ScaleLeft / ScaleRight). The page
#: get-scale-addr.md's "currently 2" disagrees with that source and is not followed.
SHIFT_MX_ADDR = 4


def _scale_dst(sig: Sig) -> None:
    """On the NPU the scale address lives in the scaling buffer (L0A_MX / L0B_MX): dst is a
    Scaling / ScaleLeft / ScaleRight tile (PTOAS: ``loc=scaling``); the CPU simulator's
    descriptor takes any tile."""
    d = sig["dst"]
    if not sig.target.traits.npu_static_checks or not isinstance(d, TileSpec):
        return
    if d.loc not in (TileType.Scaling, TileType.ScaleLeft, TileType.ScaleRight):
        raise sig.fail(f"expects dst to be in the scaling address space, got {d.loc.name}")


def _cpu_scale_addr(m: Machine, dst: Tile, src: Tile) -> None:
    """cpu: the simulator's descriptor aliases src's storage, so dst views src's bytes."""
    m.alias(dst, src, 0, op="tget_scale_addr")


@instr("TGET_SCALE_ADDR", family="layout", pipe=Pipe.S, batched=True, any_valid=True,
       access="view", operands=(Opnd("dst", "tile", "out"), Opnd("src", "tile")),
       static=(_scale_dst,), impl_for={"cpu": _cpu_scale_addr})
def TGET_SCALE_ADDR(m: Machine, dst: Tile, src: Tile) -> None:  # noqa: N802
    """Bind dst to the scale address of src: on a5, byte address src >> SHIFT_MX_ADDR (4) in
    dst's buffer (auto-mode tiles keep their storage: the compiler pairs them); on cpu the
    simulator's descriptor aliases src's storage, so dst views src's bytes."""
    if src.addr is not None:
        m.assign(dst, src.addr >> SHIFT_MX_ADDR)


@instr("TALIAS", family="layout", pipe=Pipe.S, batched=True, any_valid=True, access="view",
       operands=(Opnd("dst", "tile", "out"), Opnd("src", "tile")),
       static=(_same_loc,))
def TALIAS(m: Machine, dst: Tile, src: Tile) -> None:  # noqa: N802
    """dst becomes an alias of src's storage (the manual's TALIAS: a tile view sharing the
    original storage); dst's type may differ but its bytes must fit inside src's."""
    if dst.spec.nbytes > src.spec.nbytes:
        raise RuntimeCheckError(f"dst ({dst.spec.nbytes} bytes) does not fit in src "
                                f"({src.spec.nbytes} bytes)", op="talias")
    m.alias(dst, src, 0, op="talias")


# ---- TPACK -------------------------------------------------------------------------------------

def _tpack_static(sig: Sig) -> None:
    d, s = sig["dst"], sig["src"]
    if isinstance(d, TileSpec) and isinstance(s, TileSpec):
        pair = (s.dtype.itemsize, d.dtype.itemsize)
        if pair not in ((4, 2), (4, 1), (2, 1)):
            raise sig.fail(f"packs 4->2, 4->1 or 2->1 byte elements, got {s.dtype} -> {d.dtype}")


def _tpack_runtime(ins: Instr, dst: Tile, src: Tile) -> None:
    if dst.valid_shape != src.valid_shape:
        raise RuntimeCheckError(f"dst valid region {dst.valid_row}x{dst.valid_col} != src "
                                f"{src.valid_row}x{src.valid_col}", op=ins.mnemonic)


@instr("TPACK", family="layout", pipe=Pipe.V,
       operands=(Opnd("dst", "tile", "out"), Opnd("src", "tile")),
       dtype_key=("src", "dst"),
       static=(locs(["dst", "src"], TileType.Vec), _tpack_static),
       runtime=(_tpack_runtime,))
def TPACK(m: Machine, dst: Tile, src: Tile) -> None:  # noqa: N802
    """Narrow each element to dst's width by keeping its low-order bytes (the vector pack:
    b32 -> b16, b32 -> b8, b16 -> b8), over the common valid region."""
    vr, vc = src.valid_shape
    if not (vr and vc):
        return
    bits = np.asarray(src.read()).view(f"u{src.dtype.itemsize}")
    low = bits.astype(f"u{dst.dtype.itemsize}")  # unsigned narrowing keeps the low bytes
    dst.write(low.view(dst.dtype.np))

"""Gathers and scatters: TGATHER (mask, index and compare forms), TGATHERB, TSCATTER, and the
GM forms MGATHER / MSCATTER.

They address tile *storage* (the physical element order), as the ISA does (``dst_flat[k]``);
indices are read as unsigned 32-bit; bit-preserving moves copy raw bits (NaN payloads and
cross-type moves of the same size are exact)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...enums import CmpMode, Layout, Pipe, TileType
from ...errors import PtoError, RuntimeCheckError
from ...memory import Machine
from ...tensor import GlobalTensor, GMSpec
from ...tile import Tile, TileSpec
from ..registry import (
    Instr,
    Opnd,
    Param,
    PipeForms,
    Sig,
    except_on,
    instr,
    locs,
    same_dtype,
    sim_unchecked,
)
from ..rules import row_major_nd
from ..spelling import CMP_MODE, Attr, Form, Ptoas
from .common import _bits, _fail, _int_dtype, _uidx, _wrap_to
from .enums import (
    _PATTERN,
    Coalesce,
    GatherAxis,
    GatherOOB,
    MaskPattern,
    ScatterAtomicOp,
    ScatterAxis,
    ScatterConflict,
    ScatterOOB,
    _atomic,
)


def _gather_form(sig: Sig) -> str | None:
    """TGATHER's form by its operand types: "compare" (src1, tmp and tmp2 given), "index" (an
    index tile), "mask", or None while dst/src0 are not known tiles."""
    dst, src0, src1 = sig["dst"], sig["src0"], sig["src1"]
    if not isinstance(src0, TileSpec) or not isinstance(dst, TileSpec):
        return None
    if src1 is not None and sig["tmp"] is not None and sig["tmp2"] is not None:
        return "compare"
    return "index" if isinstance(src1, TileSpec) else "mask"


def _tgather_static(sig: Sig) -> None:
    dst, src0, src1 = sig["dst"], sig["src0"], sig["src1"]
    form = _gather_form(sig)
    if form is None:
        return
    if form == "compare":
        # compare form (kValue a tile, or a scalar as PTOAS writes it): dst i32/u32 indices
        if dst.dtype.name not in ("i32", "ui32"):
            raise sig.fail(f"compare-form dst must be i32 or ui32, got {dst.dtype}")
        return
    if dst.dtype.itemsize != src0.dtype.itemsize:
        raise sig.fail(f"dst ({dst.dtype}) and src0 ({src0.dtype}) must have the same element "
                       "size")
    if form == "index":
        if dst.dtype is not src0.dtype:
            raise sig.fail(f"dst ({dst.dtype}) and src0 ({src0.dtype}) must have the same "
                           "element type")
        if not src1.dtype.is_int:
            raise sig.fail(f"indices must be integers, got {src1.dtype}")


def _index_sizes(sizes: tuple[int, ...]) -> Any:
    """The index form's data element sizes (TGATHER.md, implementation checks): 2 or 4 bytes
    on A2/A3; 1, 2, 4 or 8 on A5, where 8-byte data takes 32-bit indices."""
    def rule(sig: Sig) -> None:
        dst, src1 = sig["dst"], sig["src1"]
        if _gather_form(sig) != "index" or not sig.target.traits.npu_static_checks:
            return
        if dst.dtype.itemsize not in sizes:
            raise sig.fail(f"index gather needs {'-, '.join(map(str, sizes))}-byte elements "
                           f"on {sig.target}, got {dst.dtype}")
        if dst.dtype.itemsize == 8 and src1.dtype.itemsize != 4:
            raise sig.fail(f"index gather of 8-byte data needs 32-bit indices, got {src1.dtype}")
    rule.__name__ = f"_index_sizes_{'_'.join(map(str, sizes))}"
    return rule


def _tgather_compare_a2a3(sig: Sig) -> None:
    """A2/A3's compare form takes f16/f32 sources, or i32 ones for cmpMode EQ."""
    src0 = sig["src0"]
    if _gather_form(sig) == "compare":
        eq = sig.params.get("cmpMode", CmpMode.EQ) is CmpMode.EQ
        if not (src0.dtype.name in ("f16", "f32") or (eq and src0.dtype.name == "i32")):
            raise sig.fail("expects A2/A3 compare-form tgather src element type to be f16/f32, "
                           f"or i32 when cmpMode=eq, got {src0.dtype}")


def _tgather_index32(sig: Sig) -> None:
    """The index form's indices are 32-bit (a5 takes 16-bit ones too)."""
    src1 = sig["src1"]
    if _gather_form(sig) == "index" and src1.dtype.itemsize != 4:
        # (PTOAS's words: tgather_a2a3_indices_dtype_invalid.pto)
        raise sig.fail(f"expects indices element type to be i32 (32-bit indices on "
                       f"{sig.target}), got {src1.dtype}")


def _tgather_index_tmp_a2a3(sig: Sig) -> None:
    """A2/A3's index gather needs its tmp (the C++ API's explicit scratch), of the indices'
    valid shape (TGATHER.md; PTOAS's verifier)."""
    if _gather_form(sig) != "index":
        return
    ix, tmp = sig["src1"], sig["tmp"]
    if tmp is None:
        raise sig.fail("index-form tgather expects both indices and tmp on a2a3", ptoas=True)
    if isinstance(ix, TileSpec) and isinstance(tmp, TileSpec) and \
            None not in (ix.valid_row, ix.valid_col, tmp.valid_row, tmp.valid_col) and \
            (ix.valid_row, ix.valid_col) != (tmp.valid_row, tmp.valid_col):
        raise sig.fail(f"expects indices and tmp to have the same valid_shape (indices "
                       f"{ix.valid_row}x{ix.valid_col}, tmp {tmp.valid_row}x{tmp.valid_col})")


def _tgather_index16_a5(sig: Sig) -> None:
    """A5's index gather takes 16- or 32-bit indices (TGATHER.md)."""
    ix = sig["src1"]
    if _gather_form(sig) == "index" and ix.dtype.itemsize not in (2, 4):
        raise sig.fail(f"expects indices element type to be i32 or i16 (or their unsigned "
                       f"forms), got {ix.dtype}")


@sim_unchecked
def _tgather_contiguous(ins: Instr, dst: Tile, src0: Tile, src1: Any = None, tmp: Any = None,
                        tmp2: Any = None, offset: Any = None, **params: Any) -> None:
    """Mask and index gathers write dst contiguously: dst valid cols == Cols (both NPUs'
    implementation checks; the CPU simulator writes any valid region)."""
    if src1 is None and dst.valid_col != dst.cols:
        raise _fail(ins, f"mask gather writes dst contiguously: dst valid cols "
                    f"{dst.valid_col} must equal Cols {dst.cols}")
    if isinstance(src1, Tile) and tmp2 is None and dst.valid_col != dst.cols:
        raise _fail(ins, f"dst valid cols {dst.valid_col} must equal Cols {dst.cols} "
                    "(continuous dst)")


def _tgather_runtime(ins: Instr, dst: Tile, src0: Tile, src1: Any = None, tmp: Any = None,
                     tmp2: Any = None, offset: Any = None, **params: Any) -> None:
    if isinstance(src1, Tile) and tmp2 is None:
        if src1.valid_row < dst.valid_row or src1.valid_col < dst.valid_col:
            raise _fail(ins, f"indices valid region {src1.valid_row}x{src1.valid_col} does not "
                        f"cover dst valid region {dst.valid_row}x{dst.valid_col}")


@instr("TGATHER", family="irregular", pipe=Pipe.V,
       # the index and compare forms' tmp operands are scratch tiles
       access_roles={"tmp": "scratch", "tmp2": "scratch"},
       ptoas=Ptoas(
           # mask form ins(src) {maskPattern} (its axis the string after the types: "row" |
           # "col"); index form ins(src, indices, tmp); compare form ins(src, kValue, tmp)
           # outs(dst, cdst) {offset}
           literal="axis",
           forms={"pto.tgather": (
               Form(inputs=("src0",)),
               Form(inputs=("src0", "src1", "tmp")),
               Form(inputs=("src0", "src1", "tmp2"), outs=("dst", "tmp"),
                    attr_operands={"offset": "offset"}))},
           attrs={"maskPattern": Attr("maskPattern"), "cmpMode": CMP_MODE,
                  "offset": Attr("offset"),
                  "axis": Attr("gatherType", values={"row": GatherAxis.GATHER_ROW,
                                                     "col": GatherAxis.GATHER_COL})}),
       operands=(Opnd("dst", "tile", "out"), Opnd("src0", "tile"),
                 Opnd("src1", "any", optional=True), Opnd("tmp", "any", optional=True),
                 Opnd("tmp2", "any", optional=True), Opnd("offset", "any", optional=True)),
       params=(Param("maskPattern", MaskPattern.P1111, MaskPattern),
               Param("gatherType", GatherAxis.GATHER_ROW, GatherAxis),
               Param("cmpMode", CmpMode.EQ, CmpMode)),
       dtype_key=("src0",),
       static=(locs(["dst", "src0"], TileType.Vec), row_major_nd("dst", "src0"),
               _tgather_static, except_on("a5", _tgather_index32),
               except_on("a5", _index_sizes((2, 4)))),
       static_for={"a2a3": (_tgather_compare_a2a3, _tgather_index_tmp_a2a3),
                   "a5": (_tgather_index16_a5, _index_sizes((1, 2, 4, 8)))},
       runtime=(_tgather_runtime, _tgather_contiguous))
def TGATHER(m: Machine, dst: Tile, src0: Tile, src1: Any = None, tmp: Any = None,  # noqa: N802
            tmp2: Any = None, offset: Any = None, *, maskPattern: MaskPattern,  # noqa: N803
            gatherType: GatherAxis, cmpMode: CmpMode) -> None:  # noqa: N803
    """Three forms, chosen by the operands:

    * ``TGATHER(dst, src0, indices, tmp)``: dst[i, j] = src0_flat[indices[i, j]] over dst's
      valid region (src0_flat = src0's storage). Out-of-range indices: the cpu target clamps
      to the last element; on a2a3/a5 they are undefined (we clamp too).
    * ``TGATHER<maskPattern, gatherType>(dst, src)``: the elements of src's valid region
      selected by the pattern (P0101: even positions, P1010: odd, P0001/P0010/P0100/P1000:
      position 0/1/2/3 of every 4, P1111: all) along the columns (GATHER_ROW) or the rows
      (GATHER_COL), packed contiguously into dst's storage from element 0 (raw bits, so dst
      may have another type of the same size).
    * ``TGATHER<cmpMode>(dst, src0, kValue, cdst, tmp, offset)``: per row r, the column
      indices j (plus ``offset``) of src0's valid elements with src0[r, j] > kValue[r, 0]
      (GT) or == (EQ), packed from dst[r, 0]; cdst[r, 0] = their count.
    """
    if src1 is None:
        _mask_gather(dst, src0, maskPattern, gatherType)
    elif isinstance(tmp, Tile) and isinstance(tmp2, Tile):
        # compare form: outs (dst, cdst) bind dst and tmp, its scratch tile binds tmp2
        _cmp_gather(dst, src0, src1, tmp, tmp2, int(offset or 0), cmpMode)
    else:
        if not isinstance(src1, Tile):
            raise PtoError("indices (src1) must be a Tile")
        vr, vc = dst.valid_shape
        if not (vr and vc):
            return
        flat = src0.storage
        idx = _uidx(src1.read(vr, vc))
        idx = np.minimum(idx, flat.size - 1)
        dst.write(_bits(flat)[idx].view(dst.dtype.np))


def _mask_gather(dst: Tile, src: Tile, pat: MaskPattern, axis: GatherAxis) -> None:
    f, pos = _PATTERN[pat]
    vals = _bits(np.asarray(src.read()))
    sel = vals[:, pos::f] if axis is GatherAxis.GATHER_ROW else vals[pos::f, :]
    out = sel.reshape(-1)
    store = _bits(dst.storage)
    n = min(out.size, store.size)
    store[:n] = out[:n]


def _cmp_gather(dst: Tile, src: Tile, kval: Any, cdst: Tile, tmp: Tile, offset: int,
                mode: CmpMode) -> None:
    if mode not in (CmpMode.GT, CmpMode.EQ):
        raise PtoError(f"cmpMode must be GT or EQ, got {mode.name}")
    vr, vc = src.valid_shape
    x = np.asarray(src.read())
    k = (np.asarray(kval.read(vr, 1)) if isinstance(kval, Tile) else np.full((vr, 1), kval)
         ).astype(x.dtype)
    hit = x > k if mode is CmpMode.GT else x == k
    counts = np.zeros((vr, 1), np.int64)
    for r in range(vr):
        js = np.flatnonzero(hit[r]) + offset
        counts[r, 0] = js.size
        if js.size:
            dst.write(_wrap_to(js, dst.dtype)[None, : dst.cols], r, 0)
    cdst.write(_wrap_to(counts, cdst.dtype))


# ==== TGATHERB ====================================================================================

@instr("TGATHERB", family="irregular", pipe=Pipe.V,
       operands=(Opnd("dst", "tile", "out"), Opnd("src", "tile"), Opnd("offset", "tile")),
       dtype_key=("dst",),
       static=(locs(["dst", "src", "offset"], TileType.Vec), row_major_nd("dst"),
               same_dtype("dst", "src"), _int_dtype("offset", (4,))))
def TGATHERB(m: Machine, dst: Tile, src: Tile, offset: Tile) -> None:  # noqa: N802
    """Block gather: dst row i is a sequence of 32-byte blocks, and block j of it is copied from
    the 32 bytes at *byte* offset offset[i, j] from src's base address, for the blocks covering
    dst's valid cols. Bytes past the end of src read as the last bytes of src's storage
    (clamped, as the cpu simulator; undefined on the NPUs)."""
    vr, vc = dst.valid_shape
    if not (vr and vc):
        return
    esz = dst.dtype.itemsize
    per = 32 // esz
    nb = -(-vc // per)
    if offset.valid_row < vr or offset.valid_col < nb:
        raise RuntimeCheckError(f"offset valid region {offset.valid_row}x{offset.valid_col} "
                                f"must hold {nb} block offsets for each of {vr} rows")
    raw = src.storage.view(np.uint8)
    off = _uidx(offset.read(vr, nb))
    pos = off[:, :, None] + np.arange(32, dtype=np.int64)[None, None, :]
    blocks = raw[np.minimum(pos, raw.size - 1)].reshape(vr, nb * 32)
    vals = np.ascontiguousarray(blocks).view(dst.dtype.np)[:, :vc]
    dst.write(vals)


# ==== TSCATTER ====================================================================================

def _tscatter_static(sig: Sig) -> None:
    dst, src, idx = sig["dst"], sig["src"], sig["indexes"]
    if not isinstance(dst, TileSpec) or not isinstance(src, TileSpec):
        return
    if dst.dtype is not src.dtype:
        raise sig.fail(f"dst ({dst.dtype}) and src ({src.dtype}) must have the same element "
                       "type")
    if isinstance(idx, TileSpec):
        if not idx.dtype.is_int:
            raise sig.fail(f"indexes must be integers, got {idx.dtype}")
        want = 4 if dst.dtype.itemsize == 4 else 2
        if sig.target.traits.npu_static_checks and idx.dtype.itemsize != want:
            raise sig.fail(f"{dst.dtype.itemsize}-byte data needs {8 * want}-bit indexes, "
                           f"got {idx.dtype}")


def _tscatter_runtime(ins: Instr, dst: Tile, src: Tile, indexes: Any = None, **p: Any) -> None:
    if indexes is None:
        f, _ = _PATTERN[p["maskPattern"]]
        if p["ScatterType"] is ScatterAxis.SCATTER_ROW:
            ok = src.valid_row == dst.valid_row and dst.valid_col == src.valid_col * f
        else:
            ok = src.valid_col == dst.valid_col and dst.valid_row == src.valid_row * f
        if not ok:
            raise _fail(ins, f"mask scatter {p['maskPattern'].name} along "
                        f"{p['ScatterType'].name}: dst valid {dst.valid_row}x{dst.valid_col} "
                        f"must be src valid {src.valid_row}x{src.valid_col} expanded x{f}")
    elif indexes.valid_row < src.valid_row or indexes.valid_col < src.valid_col:
        raise _fail(ins, f"indexes valid region {indexes.valid_row}x{indexes.valid_col} does "
                    f"not cover src valid region {src.valid_row}x{src.valid_col}")


@instr("TSCATTER", family="irregular", pipe=Pipe.V,
       # the mask form's axis is a string written after the types: ins(%src, {maskPattern =
       # ...} : T, "row" | "col") (PTO_IR_manual pto.tscatter)
       ptoas=Ptoas(literal="axis", attrs={
           "axis": Attr("ScatterType", values={"row": ScatterAxis.SCATTER_ROW,
                                               "col": ScatterAxis.SCATTER_COL}),
           "maskPattern": Attr("maskPattern")}),
       operands=(Opnd("dst", "tile", "out"), Opnd("src", "tile"),
                 Opnd("indexes", "tile", optional=True)),
       params=(Param("maskPattern", MaskPattern.P1111, MaskPattern),
               Param("ScatterType", ScatterAxis.SCATTER_ROW, ScatterAxis)),
       dtype_key=("dst",),
       static=(locs(["dst", "src", "indexes"], TileType.Vec), row_major_nd("dst", "src"),
               _tscatter_static),
       runtime=(_tscatter_runtime,))
def TSCATTER(m: Machine, dst: Tile, src: Tile, indexes: Tile | None = None, *,  # noqa: N802
             maskPattern: MaskPattern, ScatterType: ScatterAxis) -> None:  # noqa: N803
    """Index form: dst_flat[indexes[i, j]] = src[i, j] over src's valid region in row order
    (the last writer wins); dst_flat is dst's storage. Indexes past the end of dst are dropped
    (out of the tile's storage; undefined on the NPUs).

    Mask form ``TSCATTER<maskPattern, ScatterType>(dst, src)``: the whole dst tile is zeroed,
    then src[i, j] goes to dst[i, F*j + pos] (SCATTER_ROW) or dst[F*i + pos, j] (SCATTER_COL),
    the inverse of the mask gather (F, pos as in TGATHER)."""
    vr, vc = src.valid_shape
    if indexes is None:
        store = _bits(dst.storage)
        store[:] = 0
        if not (vr and vc):
            return
        f, pos = _PATTERN[maskPattern]
        vals = _bits(np.asarray(src.read()))
        d = _bits(np.zeros((dst.rows, dst.cols), dst.dtype.np))
        if ScatterType is ScatterAxis.SCATTER_ROW:
            d[:vr, pos:pos + f * vc:f] = vals
        else:
            d[pos:pos + f * vr:f, :vc] = vals
        dst.write(d.view(dst.dtype.np))
        return
    if not (vr and vc):
        return
    store = dst.storage
    idx = _uidx(indexes.read(vr, vc)).reshape(-1)
    vals = np.asarray(src.read()).reshape(-1)
    keep = idx < store.size
    store[idx[keep]] = vals[keep]  # numpy assigns in order: the last writer wins


# ==== MGATHER / MSCATTER ==========================================================================

def _m_static(tile_name: str, gm_name: str) -> Any:
    def rule(sig: Sig) -> None:
        t, g, ix = sig[tile_name], sig[gm_name], sig["indexes"]
        if isinstance(t, TileSpec) and isinstance(g, GMSpec):
            if t.dtype.itemsize != g.dtype.itemsize:
                raise sig.fail(f"{tile_name} ({t.dtype}) and the GM table ({g.dtype}) must have "
                               "the same element size")
            if g.layout is not Layout.ND:
                raise sig.fail(f"the GM table must be ND, got {g.layout.name}")
            if t.loc is TileType.Mat and t.layout_name != "NZ":
                raise sig.fail(f"a Mat {tile_name} must be NZ, got {t.layout_name}")
        if isinstance(ix, (TileSpec, GMSpec)) and (not ix.dtype.is_int or ix.dtype.itemsize != 4):
            raise sig.fail(f"indexes must be i32 or ui32, got {ix.dtype}")
        if isinstance(t, TileSpec) and t.loc is TileType.Mat and isinstance(ix, TileSpec):
            raise sig.fail("a Mat destination takes its indexes from GM (a GlobalTensor)")
    return rule


def _vec_nd(tile_name: str, gm_name: str) -> Any:
    """A Vec tile of MGATHER/MSCATTER is row-major ND (a5 takes other layouts too)."""
    def rule(sig: Sig) -> None:
        t, g = sig[tile_name], sig[gm_name]
        if isinstance(t, TileSpec) and isinstance(g, GMSpec) and t.loc is TileType.Vec \
                and not t.is_nd:
            raise sig.fail(f"{tile_name} must be row-major ND, got {t.layout_name}")
    return rule


def _index_values(ix: Any, rows: int, cols: int, row_mode: bool,
                  sign64: bool = False) -> np.ndarray:
    """Index values as uint32 in int64: a Tile (valid region) or a GM view (row-major).
    ``sign64``: signed indices keep their value (a negative one stands for the 64-bit
    unsigned value it converts to in C++, ``static_cast<size_t>``; see _wrap64)."""
    if isinstance(ix, Tile):
        a = np.asarray(ix.read())
    else:
        if row_mode:
            a = ix.flat[ix.offset: ix.offset + ix.spec.numel]
        else:
            a = ix.flat[ix.indices(*ix.spec.rows_cols)]
    a = a.astype(np.int64) if sign64 and a.dtype.kind == "i" else _uidx(a)
    if row_mode:
        flat = a.reshape(-1)
        if flat.size < rows:
            raise RuntimeCheckError(f"indexes hold {flat.size} row indices, dst has {rows} "
                                    "valid rows", op="mgather")
        return flat[:rows]
    if a.ndim == 1 or a.shape != (rows, cols):
        flat = a.reshape(-1)
        if flat.size < rows * cols:
            raise RuntimeCheckError(f"indexes hold {flat.size} values, dst valid region is "
                                    f"{rows}x{cols}", op="mgather")
        if isinstance(ix, Tile):
            if ix.valid_shape != (rows, cols):
                raise RuntimeCheckError(
                    f"Elem mode needs indexes valid {ix.valid_row}x{ix.valid_col} == dst valid "
                    f"{rows}x{cols}", op="mgather")
        return flat[: rows * cols].reshape(rows, cols)
    return a


def _oob_index(idx: np.ndarray, cap: int, wrap: bool, clamp: bool) -> np.ndarray:
    """Wrap (idx mod cap) or clamp (to cap - 1) the indices; a negative one (``sign64``) is
    2^64 + idx, as the simulator's size_t: -42 wraps mod 44 to 18, and clamps to cap - 1."""
    cap = max(cap, 1)
    neg = idx < 0
    if wrap:
        return np.where(neg, ((1 << 64) % cap + idx % cap) % cap, idx % cap)
    if clamp:
        return np.where(neg, cap - 1, np.minimum(idx, cap - 1))
    return idx


def _table_rows(g: GlobalTensor) -> tuple[int, int]:
    s = g.spec.shape
    return s[0] * s[1] * s[2] * s[3], s[4]


def _mgather_cpu(m: Machine, dst: Tile, src: GlobalTensor, indexes: Any,
                 scratch: GlobalTensor | None = None, *, CMode: Coalesce,  # noqa: N803
                 Mode: GatherOOB) -> None:  # noqa: N803
    _mgather(dst, src, indexes, CMode, Mode, sign64=True)


@instr("MGATHER", family="irregular", pipe=Pipe.MTE2,
       pipe_of=PipeForms("dst", {"Vec": Pipe.V, "Mat": Pipe.MTE2},
                         why="pto-isa's MGATHER_VEC and MGATHER_MAT."),
       ptoas=Ptoas(attrs={"coalesce": Attr("CMode"), "gatherOob": Attr("Mode")}),
       operands=(Opnd("dst", "tile", "out"), Opnd("src", "gm"), Opnd("indexes", "tile|gm"),
                 Opnd("scratch", "gm", "scratch", optional=True)),
       params=(Param("CMode", Coalesce.Row, Coalesce), Param("Mode", GatherOOB.Undefined,
                                                               GatherOOB)),
       dtype_key=("dst",),
       static=(locs(["dst"], TileType.Vec, TileType.Mat), _m_static("dst", "src"),
               except_on("a5", _vec_nd("dst", "src"))),
       impl_for={"cpu": _mgather_cpu})
def MGATHER(m: Machine, dst: Tile, src: GlobalTensor, indexes: Any,  # noqa: N802
            scratch: GlobalTensor | None = None, *, CMode: Coalesce,  # noqa: N803
            Mode: GatherOOB) -> None:  # noqa: N803
    """Gather from a GM table through indices (a Vec tile, or a GM tensor for a Mat NZ dst).

    Row (CMode=Row): dst[r, :] = table[idx[r], :] for r < dst's valid rows (table rows =
    Shape[0..3] product, row stride Stride[3], row width = dst valid cols). Elem: dst[r, c] =
    table_flat[idx[r, c]] (capacity = the view's element count, contiguous from its start).
    Mode: Undefined (unchecked; we clamp rather than read outside the array), Clamp
    (min(idx, cap-1)), Wrap (idx % cap), Zero (out-of-range gives 0). Indices are uint32; on
    cpu a negative signed index is the 64-bit unsigned value C++'s size_t makes of it (-42 wraps
    mod 44 to 18, not 6), as in the simulator."""
    _mgather(dst, src, indexes, CMode, Mode, sign64=False)


def _mgather(dst: Tile, src: GlobalTensor, indexes: Any, CMode: Coalesce,  # noqa: N803
             Mode: GatherOOB, sign64: bool) -> None:  # noqa: N803
    vr, vc = dst.valid_shape
    if not (vr and vc):
        return
    row_mode = CMode is Coalesce.Row
    nrows, width = _table_rows(src)
    cap = nrows if row_mode else src.spec.numel
    idx = _index_values(indexes, vr, vc, row_mode, sign64)
    oob = (idx >= cap) | (idx < 0)
    idx = _oob_index(idx, cap, Mode is GatherOOB.Wrap, Mode is not GatherOOB.Wrap)
    flat = _bits(src.flat)
    if row_mode:
        if vc > width and Mode is not GatherOOB.Undefined:
            raise RuntimeCheckError(f"dst valid cols {vc} exceed the table row width {width}",
                                    op="mgather")
        stride3 = src.spec.stride[3]
        pos = src.offset + idx[:, None] * stride3 + np.arange(vc, dtype=np.int64)[None, :]
        zero_mask = oob[:, None] & np.ones((1, vc), bool)
    else:
        pos = src.offset + idx
        zero_mask = oob
    pos = np.minimum(pos, flat.size - 1)
    vals = flat[pos]
    if Mode is GatherOOB.Zero:
        vals = np.where(zero_mask, 0, vals).astype(vals.dtype)
    out = vals.view(dst.dtype.np) if vals.dtype.itemsize == dst.dtype.itemsize else vals
    if dst.loc is TileType.Mat and not (Mode is GatherOOB.Zero and row_mode):
        pass
    dst.write(out)


def _mscatter_static(sig: Sig) -> None:
    atomic = _atomic(sig.params.get("Atomic"))
    conflict = sig.params.get("Conflict")
    if conflict is ScatterConflict.Last and atomic is not ScatterAtomicOp.NoOp:
        raise sig.fail("Conflict=Last cannot be combined with an atomic scatter")
    src = sig["src"]
    if atomic in (ScatterAtomicOp.Max, ScatterAtomicOp.Min, ScatterAtomicOp.Add) and \
            isinstance(src, TileSpec) and src.dtype.itemsize == 1 \
            and sig.target.traits.npu_static_checks:
        raise sig.fail(f"atomic {atomic.name} does not support {src.dtype}")


def _mscatter_cpu(m: Machine, dst: GlobalTensor, src: Tile, indexes: Tile, *,
                  Mode: Coalesce, Atomic: Any, Oob: ScatterOOB,  # noqa: N803
                  Conflict: ScatterConflict) -> None:  # noqa: N803
    _mscatter(dst, src, indexes, Mode, Atomic, Oob, sign64=True)


@instr("MSCATTER", family="irregular", pipe=Pipe.V,
       ptoas=Ptoas(attrs={
           "scatterAtomicOp": Attr("Atomic", values={"none": ScatterAtomicOp.NoOp}),
           "scatterOob": Attr("Oob"), "coalesce": Attr("Mode"),
           "scatterConflict": Attr("Conflict")}),
       operands=(Opnd("dst", "gm", "out"), Opnd("src", "tile"), Opnd("indexes", "tile")),
       params=(Param("Mode", Coalesce.Row, Coalesce),
               Param("Atomic", ScatterAtomicOp.NoOp, None),
               Param("Oob", ScatterOOB.Undefined, ScatterOOB),
               Param("Conflict", ScatterConflict.Default, ScatterConflict)),
       dtype_key=("src",),
       static=(locs(["src", "indexes"], TileType.Vec), _m_static("src", "dst"),
               _mscatter_static, except_on("a5", _vec_nd("src", "dst"))),
       impl_for={"cpu": _mscatter_cpu})
def MSCATTER(m: Machine, dst: GlobalTensor, src: Tile, indexes: Tile, *,  # noqa: N802
             Mode: Coalesce, Atomic: Any, Oob: ScatterOOB,  # noqa: N803
             Conflict: ScatterConflict) -> None:  # noqa: N803
    """Scatter a tile into a GM table through indices. Row: table[idx[r], :] (op)= src[r, :];
    Elem: table_flat[idx[r, c]] (op)= src[r, c], over src's valid region in row order (so the
    last writer wins for plain stores). Atomic: None (store), Add, Max, Min. Oob: Undefined
    (out-of-range writes are dropped here), Skip (dropped), Clamp, Wrap. Indices as for
    MGATHER (on cpu a negative signed index is the 64-bit unsigned size_t value)."""
    _mscatter(dst, src, indexes, Mode, Atomic, Oob, sign64=False)


def _mscatter(dst: GlobalTensor, src: Tile, indexes: Tile, Mode: Coalesce,  # noqa: N803
              Atomic: Any, Oob: ScatterOOB, sign64: bool) -> None:  # noqa: N803
    atomic = _atomic(Atomic)
    vr, vc = src.valid_shape
    if not (vr and vc):
        return
    row_mode = Mode is Coalesce.Row
    nrows, width = _table_rows(dst)
    cap = nrows if row_mode else dst.spec.numel
    idx = _index_values(indexes, vr, vc, row_mode, sign64)
    idx = _oob_index(idx, cap, Oob is ScatterOOB.Wrap, Oob is ScatterOOB.Clamp)
    vals = np.asarray(src.read())
    if row_mode:
        keep = (idx < cap) & (idx >= 0)
        pos = dst.offset + idx[keep, None] * dst.spec.stride[3] + \
            np.arange(vc, dtype=np.int64)[None, :]
        vals = vals[keep]
    else:
        keep = (idx < cap) & (idx >= 0)
        pos = dst.offset + idx[keep]
        vals = vals[keep]
    pos = pos.reshape(-1)
    vals = vals.reshape(-1)
    inb = pos < dst.flat.size
    pos, vals = pos[inb], vals[inb]
    table = dst.flat
    if atomic is ScatterAtomicOp.NoOp:
        _bits(table)[pos] = _bits(np.ascontiguousarray(vals)).astype(_bits(table).dtype)
        return
    v = vals.astype(table.dtype)
    with np.errstate(over="ignore", invalid="ignore"):
        if atomic is ScatterAtomicOp.Add:
            if table.dtype.kind == "f" and table.dtype.itemsize < 4 or table.dtype.kind == "V":
                acc = table.astype(np.float32)
                np.add.at(acc, pos, v.astype(np.float32))
                _sequential_round(table, pos, v)
            else:
                np.add.at(table, pos, v)
        elif atomic is ScatterAtomicOp.Max:
            np.maximum.at(table, pos, v)
        else:
            np.minimum.at(table, pos, v)


def _sequential_round(table: np.ndarray, pos: np.ndarray, v: np.ndarray) -> None:
    """Atomic add of narrow floats: every add rounds to the element type (one at a time)."""
    for p, x in zip(pos.tolist(), v, strict=True):
        table[p] = (table[p].astype(np.float32) + np.float32(x)).astype(table.dtype)


# ==== TSORT32 / TMRGSORT ==========================================================================

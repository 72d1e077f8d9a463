"""Irregular instructions: gather/scatter (tile and GM), sort and merge, index/mask generators,
dequantisation, histogram, random numbers, prefetch.

Notes that hold for the whole family:

* Gathers and scatters address tile *storage* (the physical element order), as the ISA does
  (``dst_flat[k]``); for the row-major tiles these instructions require that is the logical
  row-major order with row stride ``Cols``.
* Indices are read as unsigned 32-bit (negative ones are huge), as every target does.
* Bit-preserving moves (mask gather/scatter, MGATHER/MSCATTER without atomics) copy raw bits,
  so NaN payloads and cross-type (same size) moves are exact.
"""

from __future__ import annotations

import enum
from typing import Any

import ml_dtypes
import numpy as np

from ..dtypes import DType, fp4_encode
from ..enums import CmpMode, Layout, Pipe, TileType
from ..errors import PtoError, RuntimeCheckError
from ..memory import Machine
from ..tensor import GlobalTensor, GMSpec
from ..tile import Tile, TileSpec
from .registry import Instr, Opnd, Param, Sig, instr, locs, same_dtype, sim_unchecked
from .spelling import CMP_MODE, Attr, Form, Ptoas

# ---- enums of the C++ API (pto/common/type.hpp) --------------------------------------------------


class MaskPattern(enum.Enum):
    P0101 = 1
    P1010 = 2
    P0001 = 3
    P0010 = 4
    P0100 = 5
    P1000 = 6
    P1111 = 7


class GatherAxis(enum.Enum):
    GATHER_ROW = 0
    GATHER_COL = 1


class ScatterAxis(enum.Enum):
    SCATTER_ROW = 0
    SCATTER_COL = 1


class Coalesce(enum.Enum):
    Row = 0
    Elem = 1


class GatherOOB(enum.Enum):
    Undefined = 0
    Clamp = 1
    Wrap = 2
    Zero = 3


class ScatterAtomicOp(enum.Enum):
    # C++ spells the first one ``None``; ``NoOp`` keeps Python happy, ``None`` is accepted too.
    NoOp = 0
    Add = 1
    Max = 2
    Min = 3


class ScatterOOB(enum.Enum):
    Undefined = 0
    Skip = 1
    Clamp = 2
    Wrap = 3


class ScatterConflict(enum.Enum):
    Default = 0
    Last = 1


class HistByte(enum.Enum):
    BYTE_0 = 0
    BYTE_1 = 1
    BYTE_2 = 2
    BYTE_3 = 3


#: (stride F, position) of each mask pattern: element ``pos`` of every group of ``F``.
_PATTERN = {MaskPattern.P0101: (2, 0), MaskPattern.P1010: (2, 1), MaskPattern.P0001: (4, 0),
            MaskPattern.P0010: (4, 1), MaskPattern.P0100: (4, 2), MaskPattern.P1000: (4, 3),
            MaskPattern.P1111: (1, 0)}


def _atomic(x: Any) -> ScatterAtomicOp:
    if isinstance(x, str) and x.split("::")[-1] == "None":
        return ScatterAtomicOp.NoOp
    if x is None:
        return ScatterAtomicOp.NoOp
    from ..enums import coerce_enum

    return coerce_enum(ScatterAtomicOp, x, "mscatter: Atomic")  # type: ignore[no-any-return]


# ---- small helpers -------------------------------------------------------------------------------

def _bits(a: np.ndarray) -> np.ndarray:
    """Same-size unsigned integer view (bit-exact moves)."""
    return a.view(f"u{a.dtype.itemsize}")


def _uidx(a: np.ndarray) -> np.ndarray:
    """Indices as unsigned 32-bit values in int64 (negative indices become huge)."""
    a = np.asarray(a)
    if a.dtype.kind == "i":
        a = a.astype(np.int64) & 0xFFFFFFFF if a.dtype.itemsize >= 4 else \
            a.astype(np.int64) & ((1 << (8 * a.dtype.itemsize)) - 1)
    return a.astype(np.int64)


def _fail(ins: Instr, msg: str) -> RuntimeCheckError:
    return RuntimeCheckError(msg, op=ins.mnemonic)


def _row_major(*names: str) -> Any:
    def rule(sig: Sig) -> None:
        for n in names:
            t = sig[n]
            if isinstance(t, TileSpec) and not t.is_nd:
                raise sig.fail(f"{n} must be row-major ND, got {t.layout_name}")
    return rule


def _elem_size(names: tuple[str, ...], sizes: tuple[int, ...]) -> Any:
    def rule(sig: Sig) -> None:
        for n in names:
            t = sig[n]
            if isinstance(t, (TileSpec, GMSpec)) and t.dtype.itemsize not in sizes:
                raise sig.fail(f"{n} element size must be {' or '.join(map(str, sizes))} bytes, "
                               f"got {t.dtype} ({t.dtype.itemsize} bytes)")
    return rule


def _same_size(a: str, b: str) -> Any:
    def rule(sig: Sig) -> None:
        x, y = sig[a], sig[b]
        if isinstance(x, (TileSpec, GMSpec)) and isinstance(y, (TileSpec, GMSpec)) and \
                x.dtype.itemsize != y.dtype.itemsize:
            raise sig.fail(f"{a} ({x.dtype}) and {b} ({y.dtype}) must have the same element "
                           "size")
    return rule


def _int_dtype(name: str, sizes: tuple[int, ...] = (2, 4)) -> Any:
    def rule(sig: Sig) -> None:
        t = sig[name]
        if isinstance(t, (TileSpec, GMSpec)) and (not t.dtype.is_int or
                                                  t.dtype.itemsize not in sizes):
            want = "/".join(f"{8 * s}-bit" for s in sizes)
            raise sig.fail(f"{name} must hold {want} integers, got {t.dtype}")
    return rule


# ==== TCI =========================================================================================

def _tci_rows(sig: Sig) -> None:
    d = sig["dst"]
    if isinstance(d, TileSpec) and d.rows != 1:
        raise sig.fail(f"dst must have Rows == 1, got {d.rows}")


@instr("TCI", family="irregular", pipe=Pipe.S,
       ptoas=Ptoas(attrs={"descending": Attr("descending")}),
       operands=(Opnd("dst", "tile", "out"), Opnd("start", "scalar"),
                 Opnd("tmp", "tile", "scratch", optional=True)),
       params=(Param("descending", False), Param("T", None)),
       dtype_key=("dst",),
       static=(locs(["dst"], TileType.Vec), _row_major("dst"), _tci_rows))
def TCI(m: Machine, dst: Tile, start: Any, tmp: Tile | None = None, *,  # noqa: N802
        descending: Any, T: Any) -> None:  # noqa: N803
    """dst[0, k] = start + k (descending: start - k) for k < dst's valid cols; integers wrap.
    ``tmp`` (the a2a3 vector path's scratch) is accepted and not needed."""
    vc = dst.valid_col
    if not vc or not dst.valid_row:
        return
    k = np.arange(vc, dtype=np.int64)
    seq = int(start) - k if bool(int(descending)) else int(start) + k
    dst.write(_wrap_to(seq, dst.dtype)[None, :])


def _wrap_to(x: np.ndarray, dt: DType) -> np.ndarray:
    if dt.is_int:
        bits = dt.itemsize * 8
        u = x.astype(np.int64) & ((1 << bits) - 1) if bits < 64 else x.astype(np.int64)
        return u.astype(f"u{dt.itemsize}").view(dt.np)
    return x.astype(dt.np)


# ==== TTRI ========================================================================================

@instr("TTRI", family="irregular", pipe=Pipe.V,
       ptoas=Ptoas(attrs={"upperOrLower": Attr("isUpperOrLower")}),
       operands=(Opnd("dst", "tile", "out"), Opnd("diagonal", "scalar")),
       params=(Param("isUpperOrLower", 0),),
       dtype_key=("dst",),
       static=(locs(["dst"], TileType.Vec), _row_major("dst")))
def TTRI(m: Machine, dst: Tile, diagonal: Any, *, isUpperOrLower: Any) -> None:  # noqa: N802,N803
    """Triangular mask over dst's valid region. Lower (isUpperOrLower=0): dst[i, j] = 1 if
    j <= i + diagonal else 0. Upper (1): dst[i, j] = 0 if j < i + diagonal else 1."""
    mode = int(isUpperOrLower)
    if mode not in (0, 1):
        raise PtoError(f"isUpperOrLower must be 0 (lower) or 1 (upper), got {mode}")
    vr, vc = dst.valid_shape
    if not (vr and vc):
        return
    i = np.arange(vr, dtype=np.int64)[:, None]
    j = np.arange(vc, dtype=np.int64)[None, :]
    d = int(diagonal)
    mask = (j <= i + d) if mode == 0 else ~(j < i + d)
    dst.write(mask.astype(dst.dtype.np))


# ==== TGATHER =====================================================================================

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
        if dst.dtype.itemsize not in (2, 4) and sig.target.traits.npu_static_checks:
            raise sig.fail(f"index gather needs 2- or 4-byte elements on {sig.target}, "
                           f"got {dst.dtype}")


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
        raise sig.fail(f"indices must be 32-bit on {sig.target}, got {src1.dtype}")


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
       ptoas=Ptoas(
           # mask form ins(src) {maskPattern}; index form ins(src, indices, tmp); compare form
           # ins(src, kValue, tmp) outs(dst, cdst) {offset}
           forms={"pto.tgather": (
               Form(ins=("src0",)),
               Form(ins=("src0", "src1", "tmp")),
               Form(ins=("src0", "src1", "tmp2"), outs=("dst", "tmp"),
                    attr_operands={"offset": "offset"}))},
           attrs={"maskPattern": Attr("maskPattern"), "cmpMode": CMP_MODE,
                  "offset": Attr("offset")}),
       operands=(Opnd("dst", "tile", "out"), Opnd("src0", "tile"),
                 Opnd("src1", "any", optional=True), Opnd("tmp", "any", optional=True),
                 Opnd("tmp2", "any", optional=True), Opnd("offset", "any", optional=True)),
       params=(Param("maskPattern", MaskPattern.P1111, MaskPattern),
               Param("gatherType", GatherAxis.GATHER_ROW, GatherAxis),
               Param("cmpMode", CmpMode.EQ, CmpMode)),
       dtype_key=("src0",),
       static=(locs(["dst", "src0"], TileType.Vec), _row_major("dst", "src0"),
               _tgather_static),
       static_for={"a2a3": (_tgather_compare_a2a3, _tgather_index32),
                   "cpu": (_tgather_index32,)},
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
        _cmp_gather(dst, src0, src1, tmp, int(offset or 0), cmpMode)
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
       static=(locs(["dst", "src", "offset"], TileType.Vec), _row_major("dst"),
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


def _tscatter_no_mask_form(sig: Sig) -> None:
    dst, src, idx = sig["dst"], sig["src"], sig["indexes"]
    if isinstance(dst, TileSpec) and isinstance(src, TileSpec) and not isinstance(idx, TileSpec):
        raise sig.fail("the mask form is supported on a5 and cpu only")


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
       operands=(Opnd("dst", "tile", "out"), Opnd("src", "tile"),
                 Opnd("indexes", "tile", optional=True)),
       params=(Param("maskPattern", MaskPattern.P1111, MaskPattern),
               Param("ScatterType", ScatterAxis.SCATTER_ROW, ScatterAxis)),
       dtype_key=("dst",),
       static=(locs(["dst", "src", "indexes"], TileType.Vec), _row_major("dst", "src"),
               _tscatter_static),
       static_for={"a2a3": (_tscatter_no_mask_form,)},
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


def _index_values(ix: Any, rows: int, cols: int, row_mode: bool) -> np.ndarray:
    """Index values as uint32 in int64: a Tile (valid region) or a GM view (row-major)."""
    if isinstance(ix, Tile):
        a = np.asarray(ix.read())
    else:
        if row_mode:
            a = ix.flat[ix.offset: ix.offset + ix.spec.numel]
        else:
            a = ix.flat[ix.indices(*ix.spec.rows_cols)]
    a = _uidx(a)
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


def _table_rows(g: GlobalTensor) -> tuple[int, int]:
    s = g.spec.shape
    return s[0] * s[1] * s[2] * s[3], s[4]


@instr("MGATHER", family="irregular", pipe=Pipe.MTE2,
       operands=(Opnd("dst", "tile", "out"), Opnd("src", "gm"), Opnd("indexes", "tile|gm"),
                 Opnd("scratch", "gm", "scratch", optional=True)),
       params=(Param("CMode", Coalesce.Row, Coalesce), Param("Mode", GatherOOB.Undefined,
                                                               GatherOOB)),
       dtype_key=("dst",),
       static=(locs(["dst"], TileType.Vec, TileType.Mat), _m_static("dst", "src")),
       static_for={k: (_vec_nd("dst", "src"),) for k in ("cpu", "a2a3")})
def MGATHER(m: Machine, dst: Tile, src: GlobalTensor, indexes: Any,  # noqa: N802
            scratch: GlobalTensor | None = None, *, CMode: Coalesce,  # noqa: N803
            Mode: GatherOOB) -> None:  # noqa: N803
    """Gather from a GM table through indices (a Vec tile, or a GM tensor for a Mat NZ dst).

    Row (CMode=Row): dst[r, :] = table[idx[r], :] for r < dst's valid rows (table rows =
    Shape[0..3] product, row stride Stride[3], row width = dst valid cols). Elem: dst[r, c] =
    table_flat[idx[r, c]] (capacity = the view's element count, contiguous from its start).
    Mode: Undefined (unchecked; we clamp rather than read outside the array), Clamp
    (min(idx, cap-1)), Wrap (idx % cap), Zero (out-of-range gives 0). Indices are uint32."""
    vr, vc = dst.valid_shape
    if not (vr and vc):
        return
    row_mode = CMode is Coalesce.Row
    nrows, width = _table_rows(src)
    cap = nrows if row_mode else src.spec.numel
    idx = _index_values(indexes, vr, vc, row_mode)
    oob = idx >= cap
    if Mode is GatherOOB.Wrap:
        idx = idx % max(cap, 1)
    else:
        idx = np.minimum(idx, max(cap - 1, 0))
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


@instr("MSCATTER", family="irregular", pipe=Pipe.MTE3,
       ptoas=Ptoas(attrs={
           "scatterAtomicOp": Attr("Atomic", values={"none": ScatterAtomicOp.NoOp}),
           "scatterOob": Attr("Oob")}),
       operands=(Opnd("dst", "gm", "out"), Opnd("src", "tile"), Opnd("indexes", "tile")),
       params=(Param("Mode", Coalesce.Row, Coalesce),
               Param("Atomic", ScatterAtomicOp.NoOp, None),
               Param("Oob", ScatterOOB.Undefined, ScatterOOB),
               Param("Conflict", ScatterConflict.Default, ScatterConflict)),
       dtype_key=("src",),
       static=(locs(["src", "indexes"], TileType.Vec), _m_static("src", "dst"),
               _mscatter_static),
       static_for={k: (_vec_nd("src", "dst"),) for k in ("cpu", "a2a3")})
def MSCATTER(m: Machine, dst: GlobalTensor, src: Tile, indexes: Tile, *,  # noqa: N802
             Mode: Coalesce, Atomic: Any, Oob: ScatterOOB,  # noqa: N803
             Conflict: ScatterConflict) -> None:  # noqa: N803
    """Scatter a tile into a GM table through indices. Row: table[idx[r], :] (op)= src[r, :];
    Elem: table_flat[idx[r, c]] (op)= src[r, c], over src's valid region in row order (so the
    last writer wins for plain stores). Atomic: None (store), Add, Max, Min. Oob: Undefined
    (out-of-range writes are dropped here), Skip (dropped), Clamp, Wrap."""
    atomic = _atomic(Atomic)
    vr, vc = src.valid_shape
    if not (vr and vc):
        return
    row_mode = Mode is Coalesce.Row
    nrows, width = _table_rows(dst)
    cap = nrows if row_mode else dst.spec.numel
    idx = _index_values(indexes, vr, vc, row_mode)
    if Oob is ScatterOOB.Clamp:
        idx = np.minimum(idx, max(cap - 1, 0))
    elif Oob is ScatterOOB.Wrap:
        idx = idx % max(cap, 1)
    vals = np.asarray(src.read())
    if row_mode:
        keep = idx < cap
        pos = dst.offset + idx[keep, None] * dst.spec.stride[3] + \
            np.arange(vc, dtype=np.int64)[None, :]
        vals = vals[keep]
    else:
        keep = idx < cap
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

def _records_per(dt: DType) -> int:
    """Elements of type ``dt`` in one 8-byte (value, index) record."""
    return 8 // dt.itemsize


def _pack_records(vals: np.ndarray, idx: np.ndarray, dt: DType) -> np.ndarray:
    """(n,) values + (n,) uint32 indices -> (n * 8/size,) elements of ``dt`` (raw records)."""
    n = vals.size
    rec = np.zeros((n, 8), np.uint8)
    vb = np.ascontiguousarray(vals.astype(dt.np)).view(np.uint8).reshape(n, dt.itemsize)
    rec[:, :dt.itemsize] = vb
    rec[:, 4:8] = np.ascontiguousarray(idx.astype(np.uint32)).view(np.uint8).reshape(n, 4)
    return rec.reshape(-1).view(dt.np)


def _unpack_records(elems: np.ndarray, dt: DType) -> tuple[np.ndarray, np.ndarray]:
    raw = np.ascontiguousarray(elems).view(np.uint8).reshape(-1, 8)
    vals = np.ascontiguousarray(raw[:, :dt.itemsize]).view(dt.np).reshape(-1)
    idx = np.ascontiguousarray(raw[:, 4:8]).view(np.uint32).reshape(-1)
    return vals, idx


def _desc_order(vals: np.ndarray, idx: np.ndarray | None = None, n_real: int = 32
                ) -> np.ndarray:
    """Descending order of ``vals``; NaN sorts first; padding (positions >= n_real) after
    every real element. Equal values keep their position order (stable), or with ``idx``
    are ordered by ascending index value (the CPU simulator's comparator)."""
    key = vals.astype(np.float64)
    key = np.where(np.isnan(key), np.inf, key)
    if idx is None:
        return np.argsort(-key, kind="stable")
    pad = np.arange(vals.size) >= n_real
    return np.lexsort((idx, -key, pad))  # last key is the primary one


def _sort_dtypes(sig: Sig) -> None:
    d, s = sig["dst"], sig["src"]
    if isinstance(d, TileSpec) and isinstance(s, TileSpec) and d.dtype is not s.dtype:
        raise sig.fail(f"dst ({d.dtype}) and src ({s.dtype}) must have the same element type")
    ix = sig["idx"]
    if isinstance(ix, TileSpec) and ix.dtype.name != "ui32":
        raise sig.fail(f"idx must be ui32, got {ix.dtype}")


def _tsort32_runtime(ins: Instr, dst: Tile, src: Tile, idx: Tile, tmp: Any = None) -> None:
    vr, vc = src.valid_shape
    if tmp is None and vc % 32:
        raise _fail(ins, f"src valid cols {vc} must be a multiple of 32 (pass a tmp tile to "
                    "sort a partial last block)")
    need = vc * _records_per(src.dtype)
    if dst.cols < need:
        raise _fail(ins, f"dst needs {need} columns for {vc} sorted records, has {dst.cols}")
    if idx.valid_col < vc or idx.valid_row < vr:
        raise _fail(ins, f"idx valid region {idx.valid_row}x{idx.valid_col} does not cover src "
                    f"valid region {vr}x{vc}")


def _sort_blocks(dst: Tile, src: Tile, idx: Tile, tmp: Tile | None, ties_by_idx: bool) -> None:
    """TSORT32's semantics; ``ties_by_idx`` orders equal values by ascending idx value (the
    CPU simulator's comparator) instead of by position."""
    vr, vc = src.valid_shape
    if not (vr and vc):
        return
    nb = -(-vc // 32)
    per = _records_per(src.dtype)
    x = np.asarray(src.read()).astype(src.dtype.np)
    ix = np.asarray(idx.read(vr, vc)).view(np.uint32)
    for r in range(vr):
        out = []
        for b in range(nb):
            v = x[r, b * 32:(b + 1) * 32]
            i = ix[r, b * 32:(b + 1) * 32]
            if v.size < 32:
                pad = 32 - v.size
                v = np.concatenate([v, np.full(pad, -np.inf, src.dtype.np)])
                i = np.concatenate([i, np.zeros(pad, np.uint32)])
            n_real = min(32, vc - b * 32)
            o = _desc_order(v, i if ties_by_idx else None, n_real)
            o = [k for k in o if k < n_real] if tmp is None else o
            out.append(_pack_records(v[o], i[o], src.dtype))
        row = np.concatenate(out)
        dst.write(row[None, : vc * per], r, 0)


def _tsort32_cpu(m: Machine, dst: Tile, src: Tile, idx: Tile, tmp: Tile | None = None) -> None:
    _sort_blocks(dst, src, idx, tmp, ties_by_idx=True)


@instr("TSORT32", family="irregular", pipe=Pipe.V,
       operands=(Opnd("dst", "tile", "out"), Opnd("src", "tile"), Opnd("idx", "tile"),
                 Opnd("tmp", "tile", "scratch", optional=True)),
       dtype_key=("src",),
       static=(locs(["dst", "src", "idx"], TileType.Vec), _row_major("dst", "src", "idx"),
               _sort_dtypes),
       runtime=(_tsort32_runtime,), impl_for={"cpu": _tsort32_cpu})
def TSORT32(m: Machine, dst: Tile, src: Tile, idx: Tile, tmp: Tile | None = None) -> None:  # noqa: N802
    """Per row, each block of 32 elements of src's valid region is sorted in descending order
    of value, together with its u32 index from ``idx``; dst row r receives the blocks'
    8-byte (value, index) records in order (f32: 2 elements per record, f16: 4, the value in
    the low bytes). With ``tmp`` a partial last block is padded with -inf (records keep the
    index 0; they sort last and only the first validCol records are written).

    Equal values: on a2a3/a5 they keep their position order (VBS32 sorts stably, the ISA's
    vbitsort page; the TSORT32 page's "ties broken by smaller index first" agrees whenever
    idx ascends with position, as the usual iota does); on cpu they are ordered by ascending
    idx value, as the simulator's comparator does (values [5, 5] with idx [7, 3] give the
    records (5, 3), (5, 7) on cpu and (5, 7), (5, 3) on the NPUs)."""
    _sort_blocks(dst, src, idx, tmp, ties_by_idx=False)


class MrgSortExecutedNumList:
    """``pto::MrgSortExecutedNumList``: records consumed from each list by TMRGSORT."""

    __slots__ = ("mrgSortList0", "mrgSortList1", "mrgSortList2", "mrgSortList3")

    def __init__(self, l0: int = 0, l1: int = 0, l2: int = 0, l3: int = 0) -> None:
        self.mrgSortList0, self.mrgSortList1 = l0, l1
        self.mrgSortList2, self.mrgSortList3 = l2, l3

    def as_tuple(self) -> tuple[int, int, int, int]:
        return (self.mrgSortList0, self.mrgSortList1, self.mrgSortList2, self.mrgSortList3)

    def to_bytes(self) -> bytes:
        return np.array(self.as_tuple(), np.uint16).tobytes()

    @classmethod
    def from_bytes(cls, raw: bytes) -> MrgSortExecutedNumList:
        v = np.frombuffer(raw[:8].ljust(8, b"\0"), np.uint16)
        return cls(*(int(x) for x in v))

    def __repr__(self) -> str:
        return f"MrgSortExecutedNumList{self.as_tuple()}"


def _merge(lists: list[tuple[np.ndarray, np.ndarray]], exhausted: bool
           ) -> tuple[np.ndarray, np.ndarray, list[int]]:
    """Merge descending lists (values, indices); ties go to the lower list number. With
    ``exhausted`` the merge stops when any list runs out."""
    heads = [0] * len(lists)
    ov: list[Any] = []
    oi: list[Any] = []
    total = sum(v.size for v, _ in lists)
    keys = [np.where(np.isnan(v.astype(np.float64)), np.inf, v.astype(np.float64))
            for v, _ in lists]
    while len(ov) < total:
        best = -1
        for k, (v, _) in enumerate(lists):
            if heads[k] < v.size and (best < 0 or keys[k][heads[k]] > keys[best][heads[best]]):
                best = k
        ov.append(lists[best][0][heads[best]])
        oi.append(lists[best][1][heads[best]])
        heads[best] += 1
        if exhausted and heads[best] == lists[best][0].size:
            break
    dt = lists[0][0].dtype
    return np.array(ov, dt), np.array(oi, np.uint32), heads


def _mrg_static(sig: Sig) -> None:
    for o in sig.instr.operands:
        t = sig[o.name]
        if isinstance(t, TileSpec) and t.rows != 1:
            raise sig.fail(f"{o.name} must have Rows == 1, got {t.rows}")
    names = [n for n in ("dst", "src0", "src1", "src2", "src3") if isinstance(sig[n], TileSpec)]
    same_dtype(*names)(sig)


@instr("TMRGSORT", family="irregular", pipe=Pipe.V,
       ptoas=Ptoas(
           # PTOAS: ins(src0, src1[, src2[, src3]], tmp) outs(dst, executed: vector<4xi16>);
           # the manual's format2 writes tmp in outs: ins(src0..srcN) outs(dst, tmp, executed)
           forms={"pto.tmrgsort": (
               Form(ins=("a1", "a2")),
               Form(ins=("src0", "src1", "a2"), outs=("dst", "a1")),
               Form(ins=("src0", "src1", "src2", "a2"), outs=("dst", "a1")),
               Form(ins=("src0", "src1", "src2", "src3", "a2"), outs=("dst", "a1")),
               Form(ins=("src0", "src1"), outs=("dst", "a2", "a1")),
               Form(ins=("src0", "src1", "src2"), outs=("dst", "a2", "a1")),
               Form(ins=("src0", "src1", "src2", "src3"), outs=("dst", "a2", "a1")))},
           attrs={"exhausted": Attr("exhausted")}),
       operands=(Opnd("dst", "tile", "out"), Opnd("a1", "any"), Opnd("a2", "any", optional=True),
                 Opnd("src0", "tile", optional=True), Opnd("src1", "tile", optional=True),
                 Opnd("src2", "tile", optional=True), Opnd("src3", "tile", optional=True)),
       params=(Param("exhausted", False),),
       dtype_key=("dst",),
       static=(locs(["dst", "src0", "src1", "src2", "src3"], TileType.Vec),
               _row_major("dst", "src0", "src1", "src2", "src3"), _mrg_static))
def TMRGSORT(m: Machine, dst: Tile, a1: Any, a2: Any = None, src0: Tile | None = None,  # noqa: N802
             src1: Tile | None = None, src2: Tile | None = None, src3: Tile | None = None, *,
             exhausted: Any) -> None:
    """Merge sorted lists of 8-byte (value, u32 index) records into descending order.

    * ``TMRGSORT(dst, src, blockLen)``: src's valid row holds sorted blocks of ``blockLen``
      elements; each group of 4 consecutive blocks is merged into one run of 4*blockLen
      elements of dst. blockLen must be a multiple of 64, src valid cols a multiple of
      4*blockLen (1..255 groups).
    * ``TMRGSORT<exhausted>(dst, executedNumList, tmp, src0, src1[, src2[, src3]])``: merges
      2-4 sorted lists (each src's valid cols) into dst. With exhausted=true the merge stops
      when a list runs out; ``executedNumList`` (a :class:`MrgSortExecutedNumList`) receives the
      number of records taken from each list. Ties go to the lower-numbered list.
    """
    dt = dst.dtype
    per = _records_per(dt)
    if isinstance(a1, Tile):
        src = a1
        if a2 is None or isinstance(a2, Tile):
            raise PtoError("single-list form needs (dst, src, blockLen)")
        block = int(a2)
        vc = src.valid_col
        if block <= 0 or block % 64:
            raise RuntimeCheckError(f"blockLen must be a positive multiple of 64, got {block}")
        if vc % (4 * block) or not 1 <= vc // (4 * block) <= 255:
            raise RuntimeCheckError(f"src valid cols {vc} must be 1..255 times 4*blockLen "
                                    f"({4 * block})")
        if dst.cols < vc:
            raise RuntimeCheckError(f"dst has {dst.cols} columns, needs {vc}")
        row = np.asarray(src.read(1, vc)).reshape(-1)
        out = []
        for g in range(vc // (4 * block)):
            lists = [_unpack_records(row[(4 * g + k) * block:(4 * g + k + 1) * block], dt)
                     for k in range(4)]
            v, i, _ = _merge(lists, False)
            out.append(_pack_records(v, i, dt))
        dst.write(np.concatenate(out)[None, :], 0, 0)
        return
    srcs = [s for s in (src0, src1, src2, src3) if s is not None]
    if len(srcs) < 2:
        raise PtoError("multi-list form needs 2 to 4 source lists")
    lists = [_unpack_records(np.asarray(s.read(1, s.valid_col)).reshape(-1)[
        : s.valid_col // per * per], dt) for s in srcs]
    ex = bool(exhausted) if not isinstance(exhausted, str) else exhausted.lower() == "true"
    v, i, heads = _merge(lists, ex)
    rec = _pack_records(v, i, dt)
    if rec.size > dst.cols:
        raise RuntimeCheckError(f"dst has {dst.cols} columns, the merge produced {rec.size}")
    if rec.size:
        dst.write(rec[None, :], 0, 0)
    if isinstance(a1, MrgSortExecutedNumList):
        h = heads + [0] * (4 - len(heads))
        a1.mrgSortList0, a1.mrgSortList1, a1.mrgSortList2, a1.mrgSortList3 = \
            (int(x) for x in h)


# ==== TDEQUANT ====================================================================================

def _tdequant_runtime(ins: Instr, dst: Tile, src: Tile, scale: Tile, offset: Tile) -> None:
    if src.valid_shape != dst.valid_shape:
        raise _fail(ins, f"src valid region {src.valid_row}x{src.valid_col} != dst valid "
                    f"region {dst.valid_row}x{dst.valid_col}")
    for n, t in (("scale", scale), ("offset", offset)):
        if t.valid_row < dst.valid_row or t.valid_col < 1:
            raise _fail(ins, f"{n} valid region {t.valid_row}x{t.valid_col} must give one value "
                        f"per dst valid row ({dst.valid_row})")


def _dequant(dst: Tile, src: Tile, scale: Tile, offset: Tile, elementwise: bool) -> None:
    """TDEQUANT's semantics. A parameter tile is read per row (one column broadcast), or with
    ``elementwise`` (the CPU simulator) element by element when its valid region is as wide as
    dst's."""
    vr, vc = dst.valid_shape
    if not (vr and vc):
        return

    def cols(para: Tile) -> int:
        return vc if elementwise and para.valid_col >= vc > 1 else 1

    x = np.asarray(src.read(vr, vc)).astype(np.float32)
    off = np.asarray(offset.read(vr, cols(offset))).astype(np.float32)
    sc = np.asarray(scale.read(vr, cols(scale))).astype(np.float32)
    with np.errstate(all="ignore"):
        dst.write(((x - off) * sc).astype(dst.dtype.np))


def _tdequant_cpu(m: Machine, dst: Tile, src: Tile, scale: Tile, offset: Tile) -> None:
    _dequant(dst, src, scale, offset, elementwise=True)


@instr("TDEQUANT", family="irregular", pipe=Pipe.V,
       operands=(Opnd("dst", "tile", "out"), Opnd("src", "tile"), Opnd("scale", "tile"),
                 Opnd("offset", "tile")),
       dtype_key=("src", "dst"),
       static=(locs(["dst", "src", "scale", "offset"], TileType.Vec),
               _row_major("dst", "src"), same_dtype("dst", "scale", "offset")),
       runtime=(_tdequant_runtime,), impl_for={"cpu": _tdequant_cpu})
def TDEQUANT(m: Machine, dst: Tile, src: Tile, scale: Tile, offset: Tile) -> None:  # noqa: N802
    """dst[r, c] = (f32(src[r, c]) - offset[r, 0]) * scale[r, 0] over dst's valid region, in
    f32 arithmetic (each step rounded).

    On cpu a parameter tile whose valid region covers dst's (rather than one column) is read
    element-wise, ``offset[r, c]`` / ``scale[r, c]``, as the CPU simulator does (the manual only
    defines the per-row form; see docs/cpu_sim_differences.md)."""
    _dequant(dst, src, scale, offset, elementwise=False)


# ==== TPREFETCH ===================================================================================

@instr("TPREFETCH", family="irregular", pipe=Pipe.MTE2,
       operands=(Opnd("dst", "tile", "out"), Opnd("src", "tile|gm")),
       dtype_key=("dst",),
       static=(same_dtype("dst", "src"),))
def TPREFETCH(m: Machine, dst: Tile, src: Any) -> None:  # noqa: N802
    """A prefetch hint; like the CPU simulator we perform it as a blocking copy of src (a tile's
    valid region, or a GM view in row-major order) into dst's valid region."""
    vr, vc = dst.valid_shape
    if not (vr and vc):
        return
    if isinstance(src, Tile):
        if src.valid_row < vr or src.valid_col < vc:
            raise RuntimeCheckError(f"src valid region {src.valid_row}x{src.valid_col} does "
                                    f"not cover dst valid region {vr}x{vc}")
        dst.write(np.asarray(src.read(vr, vc)))
    else:
        r, c = src.spec.rows_cols
        if r * c < vr * vc:
            raise RuntimeCheckError(f"GM view holds {r * c} elements, dst valid region "
                                    f"{vr}x{vc}")
        dst.write(src.flat[src.indices(r, c)].reshape(-1)[: vr * vc].reshape(vr, vc))


# ==== THISTOGRAM ==================================================================================

def _hist_static(sig: Sig) -> None:
    s, i, d = sig["src"], sig["idx"], sig["dst"]
    byte = sig.params.get("byte")
    if isinstance(d, TileSpec) and d.dtype.name != "ui32":
        raise sig.fail(f"dst must be ui32, got {d.dtype}")
    if isinstance(i, TileSpec) and i.dtype.name != "ui8":
        raise sig.fail(f"idx must be ui8, got {i.dtype}")
    if isinstance(s, TileSpec) and s.dtype.name == "ui16" and byte not in (HistByte.BYTE_0,
                                                                           HistByte.BYTE_1):
        raise sig.fail(f"a ui16 src has bytes BYTE_0 and BYTE_1 only, got {byte.name}")
    if isinstance(d, TileSpec) and d.cols < 256:
        raise sig.fail(f"dst needs 256 columns (one bin per byte value), has {d.cols}")


@instr("THISTOGRAM", family="irregular", pipe=Pipe.V,
       ptoas=Ptoas(attrs={
           # C++ A5: THISTOGRAM<..., isMSB> is HistByte BYTE_1 (the high byte of a ui16)
           "isMSB": Attr("byte", values={True: HistByte.BYTE_1, False: HistByte.BYTE_0},
                         default=True)}),
       operands=(Opnd("dst", "tile", "out"), Opnd("src", "tile"), Opnd("idx", "tile")),
       params=(Param("byte", HistByte.BYTE_0, HistByte),),
       dtype_key=("src",),
       static=(locs(["dst", "src", "idx"], TileType.Vec), _hist_static))
def THISTOGRAM(m: Machine, dst: Tile, src: Tile, idx: Tile, *, byte: HistByte) -> None:  # noqa: N802
    """dst[r, b] = number of j < src valid cols whose byte ``byte`` is <= b (a cumulative
    histogram, what the CPU simulator and its tests produce; the manual's formula shows the
    per-bin counts, whose running sum this is) and whose higher
    bytes match the filter: ui16 BYTE_0 counts elements with high byte == idx[r, 0]; ui32
    BYTE_k (k < 3) requires byte 3 == idx[0, r], byte 2 == idx[1, r], ... down to byte k+1
    (one filter row per already-processed byte). The whole 256-bin row is overwritten."""
    vr, vc = src.valid_shape
    if not vr:
        return
    x = np.asarray(src.read()).astype(np.uint64)
    k = byte.value
    sel = ((x >> np.uint64(8 * k)) & np.uint64(0xFF)).astype(np.int64)
    mask = np.ones(x.shape, bool)
    if src.dtype.itemsize == 2:
        if k == 0:
            f = np.asarray(idx.read(vr, 1)).astype(np.uint64)
            mask &= ((x >> np.uint64(8)) & np.uint64(0xFF)) == f
    else:
        for level, b in enumerate(range(3, k, -1)):
            f = np.asarray(idx.read(level + 1, vr)).astype(np.uint64)[level][:, None]
            mask &= ((x >> np.uint64(8 * b)) & np.uint64(0xFF)) == f
    out = np.zeros((vr, 256), np.uint32)
    for r in range(vr):
        out[r] = np.cumsum(np.bincount(sel[r][mask[r]], minlength=256)[:256])
    dst.write(out)


# ==== TRANDOM =====================================================================================

_PHILOX_M0, _PHILOX_M1 = 0xD2511F53, 0xCD9E8D57
_PHILOX_W0, _PHILOX_W1 = 0x9E3779B9, 0xBB67AE85


def philox4x32(counter: np.ndarray, key: tuple[int, int], rounds: int) -> np.ndarray:
    """Philox4x32-``rounds`` of counters (n, 4) uint64 (holding u32) -> (n, 4) u32 words."""
    c = [counter[:, k].astype(np.uint64) for k in range(4)]
    k0, k1 = np.uint64(key[0]), np.uint64(key[1])
    mask = np.uint64(0xFFFFFFFF)
    for _ in range(rounds):
        p0 = c[0] * np.uint64(_PHILOX_M0)
        p1 = c[2] * np.uint64(_PHILOX_M1)
        hi0, lo0 = p0 >> np.uint64(32), p0 & mask
        hi1, lo1 = p1 >> np.uint64(32), p1 & mask
        c = [(hi1 ^ c[1] ^ k0) & mask, lo1, (hi0 ^ c[3] ^ k1) & mask, lo0]
        k0 = (k0 + np.uint64(_PHILOX_W0)) & mask
        k1 = (k1 + np.uint64(_PHILOX_W1)) & mask
    return np.stack(c, axis=1).astype(np.uint32)


def _as_words(x: Any, n: int, what: str) -> list[int]:
    a = np.asarray(x).reshape(-1)
    if a.size != n:
        raise PtoError(f"{what} must hold {n} 32-bit words, got {a.size}")
    return [int(v) & 0xFFFFFFFF for v in a.tolist()]


def _rounds(x: Any) -> int:
    if isinstance(x, str):
        x = x.rsplit(")", 1)[-1]
    r = int(x)
    if r not in (7, 10):
        raise PtoError(f"Rounds must be 7 or 10, got {r}")
    return r


@instr("TRANDOM", family="irregular", pipe=Pipe.V,
       ptoas=Ptoas(forms={"pto.trandom": (Form(ins=("key*2", "counter*4")),)},
                    attrs={"rounds": Attr("Rounds")}),
       operands=(Opnd("dst", "tile", "out"), Opnd("key", "any"), Opnd("counter", "any")),
       params=(Param("Rounds", 10),),
       dtype_key=("dst",),
       static=(locs(["dst"], TileType.Vec), _row_major("dst")))
def TRANDOM(m: Machine, dst: Tile, key: Any, counter: Any, *, Rounds: Any) -> None:  # noqa: N802,N803
    """Counter-based random numbers (Philox4x32 with ``Rounds`` = 7 or 10 rounds, key = 2 u32
    words, counter = 4 u32 words): the valid region, in row-major order, receives the words of
    blocks counter, counter+1, ... (128-bit increment): with n = valid elements and q =
    ceil(n / 4), element w*q + b is word w of block b (the CPU simulator's layout)."""
    rounds = _rounds(Rounds)
    k = _as_words(key, 2, "key")
    c = _as_words(counter, 4, "counter")
    vr, vc = dst.valid_shape
    n = vr * vc
    if not n:
        return
    nblk = -(-n // 4)
    base = c[0] | c[1] << 32 | c[2] << 64 | c[3] << 96
    ctr = np.array([[(base + b) >> (32 * w) & 0xFFFFFFFF for w in range(4)]
                    for b in range(nblk)], np.uint64)
    words = philox4x32(ctr, (k[0], k[1]), rounds).T.reshape(-1)[:n]
    dst.write(words.view(np.uint32).reshape(vr, vc).view(dst.dtype.np))


__all__ = [
    "Coalesce", "GatherAxis", "GatherOOB", "HistByte", "MaskPattern", "MrgSortExecutedNumList",
    "ScatterAtomicOp", "ScatterAxis", "ScatterConflict", "ScatterOOB", "TileSpec", "philox4x32",
]


# ==== TQUANT ======================================================================================

#: MX formats: (largest exponent of a normal value, largest magnitude)
_MX_FMT = {"fp8": (8, 448.0), "fp4": (2, 6.0)}
_MX_ALG = {"OcpMxFp8E4M3": ("fp8", "OCP"), "NvMxFp8E4M3": ("fp8", "NV"),
           "OcpMxFp4E2M1": ("fp4", "OCP"), "NvMxFp4E2M1": ("fp4", "NV")}


def _enum_name(v: Any) -> str:
    return str(getattr(v, "name", v)).rsplit(":", 1)[-1]


def _quant_mode(quant_type: Any, scale_alg: Any, mx_alg: Any) -> tuple[str, str]:
    """(format, algorithm): ('fp8'|'fp4', 'OCP'|'NV') or ('int8', 'SYM'|'ASYM')."""
    if mx_alg is not None:
        name = _enum_name(mx_alg)
        if name not in _MX_ALG:
            raise PtoError(f"unknown mx_alg {name} (expected one of {', '.join(_MX_ALG)})")
        return _MX_ALG[name]
    qt = _enum_name(quant_type)
    alg = _enum_name(scale_alg or "OCP")
    table = {"MXFP8": ("fp8", alg), "MXFP4_E2M1": ("fp4", alg), "INT8_SYM": ("int8", "SYM"),
             "INT8_ASYM": ("int8", "ASYM")}
    if qt not in table:
        raise PtoError(f"unknown quant_type {qt} (expected one of {', '.join(table)})")
    return table[qt]


def _e8m0(mx: np.ndarray, fmt: str, alg: str) -> np.ndarray:
    """Shared exponents (biased, 0..254; 255 = NaN group) of the group maxima ``mx`` (f32).
    OCP: exponent field of the max minus the format's emax (0 for zero/subnormal maxima);
    NV: ceil(log2(max / Vmax)), the quotient rounded to f32 first."""
    emax, vmax = _MX_FMT[fmt]
    with np.errstate(all="ignore"):
        if alg == "OCP":
            ef = ((mx.view(np.uint32) >> 23) & 0xFF).astype(np.int64)
            e = np.where(ef == 0, 0, ef - emax)
        else:
            r = (mx / np.float32(vmax)).astype(np.float32)
            lg = np.ceil(np.log2(np.where(r > 0, r, 1).astype(np.float64)))
            e = np.where(r == 0, -127, np.where(np.isinf(r), 127, lg)) + 127
        e = np.clip(np.nan_to_num(e), 0, 254).astype(np.int64)
    return np.where(np.isnan(mx), 255, e)


def _write_flat(tile: Tile, values: np.ndarray) -> None:
    """Write values in row-major order over the tile's whole static shape (the simulator
    addresses the max/scaling scratch tiles as flat arrays)."""
    full = np.array(tile.read(tile.rows, tile.cols), copy=True).reshape(-1)
    if values.size > full.size:
        raise PtoError(f"{tile.name or 'tile'}: {values.size} groups do not fit a "
                       f"{tile.rows}x{tile.cols} tile")
    full[: values.size] = values.astype(full.dtype, copy=False)
    tile.write(full.reshape(tile.rows, tile.cols))


def _tquant_mx(m: Machine, dst: Tile, src: Tile, exp: Tile, mxt: Tile | None,
               scaling: Tile | None, exp_zz: Tile | None, fmt: str, alg: str, axis: int) -> None:
    vr, vc = src.valid_shape
    x = np.asarray(src.read(vr, vc)).astype(np.float32)
    if axis == 1:
        if vc % 32:
            raise PtoError(f"MX groups are 32 columns; src has {vc} valid columns")
        g = x.reshape(vr, vc // 32, 32)
        ax = 2
    else:
        if vr % 32:
            raise PtoError(f"MX groups along axis 0 are 32 rows; src has {vr} valid rows")
        g = x.reshape(vr // 32, 32, vc)
        ax = 1
    with np.errstate(all="ignore"):
        if fmt == "fp8":
            # the fp8 path's max skips NaN elements (an all-NaN group has max 0)
            mx = np.nan_to_num(np.nanmax(np.abs(g), axis=ax), nan=0.0, posinf=np.inf)
        else:
            mx = np.abs(g).max(axis=ax)
    mx = mx.astype(np.float32)
    e = _e8m0(mx, fmt, alg)
    nan = e == 255
    scale = np.where(nan, np.float32(np.nan),
                     np.ldexp(np.float32(1), 127 - np.where(nan, 127, e))).astype(np.float32)
    with np.errstate(all="ignore"):
        y = (g * (scale[:, :, None] if axis == 1 else scale[:, None, :])).astype(np.float32)
    y = y.reshape(vr, vc)
    if fmt == "fp8":
        q = np.clip(y, -448, 448).astype(ml_dtypes.float8_e4m3fn).view(np.int8)
        if alg == "OCP":
            q = np.where(q == -128, 0, q).astype(np.int8)  # the OCP cast drops the sign of 0
        dst.write(q.astype(dst.dtype.np, copy=False) if not dst.dtype.packed else q)
    else:
        dst.write(fp4_encode(np.nan_to_num(y, nan=6.0), dst.dtype))
    # exponents land at (row, group) (axis 1) or (row group, column) (axis 0), as far as the
    # exp tile reaches
    ex = e.astype(np.uint8)[: exp.rows, : exp.cols]
    exp.write(ex.astype(exp.dtype.np, copy=False))
    mflat = mx.reshape(-1)
    if fmt == "fp4" and alg == "OCP":
        # the OCP fp4 path keeps its group maxima as bf16 (truncated)
        mflat = (mflat.view(np.uint32) & np.uint32(0xFFFF0000)).view(np.float32)
    if mxt is not None:
        _write_flat(mxt, mflat)
    if scaling is not None:
        _write_flat(scaling, scale.reshape(-1))
    if exp_zz is not None:
        # the ZZ copy is made from the exp tile's storage, read as the row-major exponent matrix
        ez = np.asarray(exp.read(exp.rows, exp.cols)).reshape(-1)[: e.size]
        if ez.size < e.size:
            ez = np.concatenate([ez, np.zeros(e.size - ez.size, ez.dtype)])
        ez = ez.reshape(e.shape).astype(np.uint8)
        if ez.shape[0] % 16 or ez.shape[1] % 2:
            raise PtoError(f"the ZZ exponent layout needs 16x2 exponent boxes; got "
                           f"{ez.shape[0]}x{ez.shape[1]} exponents")
        zz = ez.reshape(ez.shape[0] // 16, 16, ez.shape[1] // 2, 2).transpose(0, 2, 1, 3)
        _write_flat(exp_zz, zz.reshape(-1))


def _tquant_int8(dst: Tile, src: Tile, scale: Tile, offset: Tile | None, alg: str) -> None:
    vr, vc = dst.valid_shape
    x = np.asarray(src.read(vr, vc)).astype(np.float32)
    sc = np.asarray(scale.read(vr, 1)).astype(np.float32)
    with np.errstate(all="ignore"):
        y = (x * sc).astype(np.float32)
        if alg == "ASYM":
            if offset is None:
                raise PtoError("INT8_ASYM needs an offset tile")
            y = (y + np.asarray(offset.read(vr, 1)).astype(np.float32)).astype(np.float32)
        lo, hi = (0, 255) if alg == "ASYM" else (-128, 127)
        q = np.clip(np.nan_to_num(np.rint(y), nan=0.0), lo, hi)
    dst.write(q.astype(dst.dtype.np))


def _tquant_static(sig: Sig) -> None:
    fmt, alg = _quant_mode(sig.params.get("quant_type"), sig.params.get("scale_alg"),
                           sig.params.get("mx_alg"))
    d, s = sig["dst"], sig["src"]
    if not (isinstance(d, TileSpec) and isinstance(s, TileSpec)):
        return
    want = {"fp8": ("i8",), "fp4": ("f4E2M1x2",), "int8": ("ui8",) if alg == "ASYM"
            else ("i8",)}[fmt]
    if fmt == "int8":
        # PTOAS writes the offset after the scale (bound to ``scaling``); the eager
        # ``(dst, src, scale, offset)`` call binds it to ``max``
        if alg == "ASYM" and sig["max"] is None and sig["scaling"] is None:
            raise sig.fail("INT8_ASYM quantization requires an offset operand")
        if alg == "SYM" and sig["scaling"] is not None:
            raise sig.fail("INT8_SYM quantization must not have an offset operand")
        if d.dtype.name not in want:
            raise sig.fail(f"expects dst element type {want[0]} for INT8_{alg} quantization, "
                           f"got {d.dtype}")
    if d.dtype.name not in want:
        raise sig.fail(f"{fmt} {alg} quantisation writes a {want[0]} dst, got {d.dtype}")
    if fmt == "int8" and s.dtype.name != "f32":
        raise sig.fail(f"INT8 quantisation takes an f32 src, got {s.dtype}")
    if fmt == "fp4" and s.dtype.name not in ("f16", "bf16"):
        raise sig.fail(f"MXFP4 quantisation takes an f16 or bf16 src, got {s.dtype}")
    e = sig["exp"]
    if fmt != "int8" and isinstance(e, TileSpec) and e.dtype.name not in ("ui8", "f8E8M0"):
        raise sig.fail(f"exp holds E8M0 exponents (ui8), got {e.dtype}")


@instr("TQUANT", family="irregular", pipe=Pipe.V,
       ptoas=Ptoas(
           # INT8 only: ins(src, fp[, offset]) {quant_type}: fp is the scale, offset the last
           forms={"pto.tquant": (Form(ins=("src", "exp")), Form(ins=("src", "exp", "scaling")))},
           attrs={"quant_type": Attr("quant_type")}),
       operands=(Opnd("dst", "tile", "out"), Opnd("src", "tile"), Opnd("exp", "tile", "inout"),
                 Opnd("max", "tile", "inout", optional=True),
                 Opnd("scaling", "tile", "inout", optional=True),
                 Opnd("exp_zz", "tile", "inout", optional=True)),
       params=(Param("quant_type", None), Param("scale_alg", None), Param("store_mode", None),
               Param("grp_axis", 1), Param("mx_alg", None)),
       dtype_key=("src", "dst"),
       static=(locs(["dst", "src", "exp", "max", "scaling", "exp_zz"], TileType.Vec),
               _row_major("dst", "src"), _tquant_static))
def TQUANT(m: Machine, dst: Tile, src: Tile, exp: Tile, max: Tile | None = None,  # noqa: A002,N802
           scaling: Tile | None = None, exp_zz: Tile | None = None, *, quant_type: Any,
           scale_alg: Any, store_mode: Any, grp_axis: Any, mx_alg: Any) -> None:
    """Quantise src. MX (MXFP8 e4m3 / MXFP4 e2m1, groups of 32 along columns, or rows with
    ``grp_axis=0``): operands ``(dst, src, exp, max, scaling[, exp_zz])``; per group the
    maximum magnitude (``max``, flat), the E8M0 shared exponent (``exp``, per row and group, or
    per row group and column) from it (OCP: exponent of the max minus emax; NV: ceil(log2(max /
    Vmax))), ``scaling = 2**(127 - exp)`` (flat) and ``dst = cast(src * scaling)`` (round to
    nearest even, saturating; NaN groups have exponent 255). ``exp_zz`` (store_mode NZ) gets the
    exponents in 16x2 ZZ boxes. INT8: operands ``(dst, src, scale[, offset])`` or ``(dst, src,
    scale, tmp, offset)``; ``dst = saturate(rint(src * scale[r] (+ offset[r])))``, i8 for
    INT8_SYM, ui8 for INT8_ASYM; ``tmp`` (the A2/A3 scratch) is not needed here."""
    fmt, alg = _quant_mode(quant_type, scale_alg, mx_alg)
    if fmt == "int8":
        offset = scaling if scaling is not None else max
        _tquant_int8(dst, src, exp, offset if alg == "ASYM" else None, alg)
        return
    if exp_zz is None and _enum_name(store_mode or "ND") == "NZ":
        raise PtoError("store_mode NZ needs the exp_zz operand")
    _tquant_mx(m, dst, src, exp, max, scaling, exp_zz, fmt, alg, int(grp_axis))

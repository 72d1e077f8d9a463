"""TCMPS and TSELS: the tile-scalar forms of compare and select (the packed predicate
conventions are shared with TCMP/TSEL: ptoisa/isa/elementwise/compare.py)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...enums import BLayout, CmpMode, CompactMode, Pipe, SLayout
from ...errors import RuntimeCheckError
from ...memory import Machine
from ...tile import Tile
from ..elementwise.common import as_elem, cover, same_tile_dtype
from ..elementwise.compare import (
    _CMP,
    _mode,
    _pack,
    _pack_stream,
    _pred_dst,
    _pred_mask,
    _row_bits,
    _tcmp_runtime,
)
from ..registry import Opnd, instr, same_dtype
from ..rules import vec
from ..spelling import CMP_MODE, Ptoas
from ..valid_region import BOTH, SameValid


@instr("TCMPS", family="tile-scalar", pipe=Pipe.V,
       ptoas=Ptoas(attrs={"cmpMode": CMP_MODE}),
       operands=(Opnd("dst", "tile", "out"), Opnd("src0", "tile"), Opnd("src1", "any"),
                 Opnd("cmpMode", "enum", enum=CmpMode, optional=True)),
       dtype_key=("src0", "dst"),
       static=(vec("dst", "src0"), same_tile_dtype("src0", "src1"), _pred_dst),
       runtime=(_tcmp_runtime,))
def TCMPS(m: Machine, dst: Tile, src0: Tile, src1: Any,  # noqa: N802
          cmpMode: CmpMode | None = None) -> None:  # noqa: N803
    """dst = packed predicate (src0 cmpMode scalar); ``src1`` is a number (converted to src0's
    element type) or a tile whose element [0, 0] is the scalar (the C++ tile overload).

    Layout. a2a3/a5 (the ISA page's example and the NPU code): row r's bits are packed
    LSB-first into dst row r (row length dst.Cols), like TCMP. cpu (the CPU simulator):
    whole src rows (src.Cols bits each, 0 outside the valid region) as one byte stream laid
    out with row length dst.validCol, see :func:`_pack_stream`; this is what its TSEL reads.
    The two agree for a u8 dst when src's valid region is the whole tile and
    dst.validCol == src.Cols / 8 (each dst row then holds exactly one src row).
    With the ``tcmps_predicate_stream`` trait (PTOAS's a5 TileLib, the ``vpto`` backend):
    the packed stream of lib/TileOps/a5/tcmps.py from dst's first byte, see
    :func:`_pack_tilelib`."""
    vr, vc = src0.valid_shape
    s = src1.read(1, 1)[0, 0] if isinstance(src1, Tile) else as_elem(src1, src0.dtype)
    mode = _mode(m, src0, cmpMode or CmpMode.EQ)
    with np.errstate(invalid="ignore"):
        bits = _CMP[mode](np.asarray(src0.read(vr, vc)), s)
    if m.target.traits.predicate_layout == "cpu_sim":
        _pack_stream(dst, src0, bits)
    elif m.target.traits.tcmps_predicate_stream:
        _pack_tilelib(dst, src0, bits)
    else:
        _pack(m, dst, bits, src0.dtype.itemsize)


#: (elements, bytes) of one predicate store of the TileLib's TCMPS, by source element size
#: (ptodsl's _PREDICATE_PACKING_LAYOUTS: two 64-lane compares interleaved into one 16-byte PK
#: store for 32-bit sources, one 128-lane PK store for 16-bit, one 256-lane NORM store for
#: 8-bit)
_TILELIB_STORE = {4: (128, 16), 2: (128, 16), 1: (256, 32)}
#: the source types of lib/TileOps/a5/tcmps.py's templates (``_DTYPES``: dst is ui8)
_TILELIB_SRC = ("f32", "i32", "f16", "i16", "i8", "ui8")


def _flat_local(t: Tile) -> bool:
    """ptodsl's ``_is_flat_local_tile``: static valid shape, row-major, no boxes, rows without
    a gap (compact mode Null or Normal)."""
    s = t.spec
    return (s.valid_row is not None and s.valid_col is not None and s.blayout is BLayout.RowMajor
            and s.slayout is SLayout.NoneBox
            and s.compact in (CompactMode.Null, CompactMode.Normal))


def tilelib_tcmps_1d(dst: Tile, src: Tile) -> bool:
    """Whether PTOAS's a5 TileLib expands this TCMPS with ``template_tcmps_1d`` (preferred
    over the 2-D template when its constraint holds): ptodsl's
    ``require_predicate_compare_1d("src", predicate_operand="dst",
    flattened_destination=True)`` (ptodsl/tilelib/constraints.py), for a ui8 dst."""
    vr, vc = src.valid_shape
    elems, nbytes = _TILELIB_STORE[src.dtype.itemsize]
    row_bytes = dst.cols * dst.dtype.itemsize
    row_stores = -(-vc // elems)
    if not (_flat_local(src) and _flat_local(dst) and dst.valid_row == vr
            and row_bytes % 32 == 0 and row_bytes >= row_stores * nbytes):
        return False
    if vr == 1:
        return src.cols >= row_stores * elems
    if row_bytes >= src.cols * dst.dtype.itemsize:  # "one predicate container per element"
        return vc == src.cols and dst.rows * row_bytes >= -(-(vr * vc) // elems) * nbytes
    return vc == src.cols and vc % elems == 0 and row_bytes == row_stores * nbytes


def _pack_tilelib(dst: Tile, src: Tile, bits: np.ndarray) -> None:
    """PTOAS's a5 TileLib TCMPS (lib/TileOps/a5/tcmps.py): whole predicate stores written
    from dst's first byte on, over dst's rows as one byte run (the bits past the valid
    elements 0 in each store, the bytes after the last store untouched). The 1-D template
    (:func:`tilelib_tcmps_1d`) packs the valid region as one stream, element
    r * validCol + c at bit r * validCol + c (``_emit_tcmps_1d``: store at element offset
    // 8); the 2-D one packs each row into ceil(validCol / E) stores and starts row r after
    the previous row's stores (``_emit_tcmps_2d``, "Each row starts after the packed bytes
    emitted for the preceding row"), not at dst row r."""
    if dst.dtype.name != "ui8" or src.dtype.name not in _TILELIB_SRC:
        raise RuntimeCheckError(
            f"PTOAS's a5 TileLib has no tcmps template for a {src.dtype} src and a {dst.dtype} "
            f"dst (lib/TileOps/a5/tcmps.py: src {', '.join(_TILELIB_SRC)}, dst ui8)",
            op="TCMPS")
    vr, vc = bits.shape
    if vr == 0 or vc == 0:
        return
    elems, nbytes = _TILELIB_STORE[src.dtype.itemsize]
    if tilelib_tcmps_1d(dst, src):
        total = -(-(vr * vc) // elems) * nbytes
        packed = np.packbits(bits.reshape(-1), bitorder="little")
        stream = np.zeros(total, np.uint8)
        stream[: packed.size] = packed
    else:
        per_row = -(-vc // elems) * nbytes
        rows = np.zeros((vr, per_row), np.uint8)
        packed = np.packbits(bits, axis=1, bitorder="little")
        rows[:, : packed.shape[1]] = packed
        stream = rows.reshape(-1)
    cols = dst.cols
    if stream.size > dst.rows * cols:
        raise RuntimeCheckError(
            f"the TileLib's packed predicate ({stream.size} bytes) does not fit dst "
            f"({dst.rows}x{cols} ui8)", op="TCMPS")
    whole, rest = divmod(stream.size, cols)
    if whole:
        dst.write(stream[: whole * cols].reshape(whole, cols))
    if rest:
        dst.write(stream[whole * cols:].reshape(1, rest), whole, 0)


@instr("TSELS", family="tile-scalar", pipe=Pipe.V,
       operands=(Opnd("dst", "tile", "out"), Opnd("mask", "tile"), Opnd("src", "tile"),
                 Opnd("tmp", "tile", "scratch"), Opnd("scalar", "scalar")),
       dtype_key=("dst",),
       static=(vec("dst", "mask", "src"), same_dtype("dst", "src"), _pred_mask),
       runtime=(cover("src"),),
       same_valid=SameValid(("src",), BOTH))
def TSELS(m: Machine, dst: Tile, mask: Tile, src: Tile, tmp: Tile,  # noqa: N802
          scalar: Any) -> None:
    """dst = mask bit ? src : scalar over dst's valid region (per-row packed mask on every
    target); tmp is scratch (a2a3 keeps the scalar there)."""
    vr, vc = dst.valid_shape
    if not (vr and vc):
        return
    bits = _row_bits(TSELS, mask, vr, vc)
    dst.write(np.where(bits, np.asarray(src.read(vr, vc)), as_elem(scalar, dst.dtype)))

"""TCMPS and TSELS: the tile-scalar forms of compare and select (the packed predicate
conventions are shared with TCMP/TSEL: ptoisa/isa/elementwise/compare.py)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...enums import CmpMode, Pipe
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
    dst.validCol == src.Cols / 8 (each dst row then holds exactly one src row)."""
    vr, vc = src0.valid_shape
    s = src1.read(1, 1)[0, 0] if isinstance(src1, Tile) else as_elem(src1, src0.dtype)
    mode = _mode(m, src0, cmpMode or CmpMode.EQ)
    with np.errstate(invalid="ignore"):
        bits = _CMP[mode](np.asarray(src0.read(vr, vc)), s)
    if m.target.traits.predicate_layout == "cpu_sim":
        _pack_stream(dst, src0, bits)
    else:
        _pack(m, dst, bits, src0.dtype.itemsize)


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

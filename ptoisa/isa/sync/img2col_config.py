"""SETFMATRIX, SET_IMG2COL_PADDING, SET_IMG2COL_RPT: the img2col configuration registers that
TIMG2COL reads (ptoisa/isa/layout/img2col.py holds the state and the transform)."""

from __future__ import annotations

from ...conv import ConvTile
from ...enums import Pipe
from ...memory import Machine
from ..layout.img2col import (
    _GEOMETRY,
    _MODE,
    _PADDING,
    _REPEAT,
    SetFmatrixMode,
    _feature_map,
    _mat_src,
    _set,
)
from ..registry import Opnd, instr


@instr("SETFMATRIX", family="sync", pipe=Pipe.S, batched=False, timing="run",
       operands=(Opnd("src", "tile"),), params=(_MODE,), dtype_key=("src",),
       static=(_mat_src,), runtime=(_feature_map,))
def SETFMATRIX(m: Machine, src: ConvTile, *, FmatrixMode: SetFmatrixMode) -> None:  # noqa: N802,N803
    """Set the FMATRIX slot of ``FmatrixMode`` (A or B) from the feature-map ConvTile: map
    height/width and padding list."""
    _set(m, src, FmatrixMode, _GEOMETRY)


@instr("SET_IMG2COL_PADDING", family="sync", pipe=Pipe.S, batched=False, timing="run",
       operands=(Opnd("src", "tile"),), params=(_MODE,), dtype_key=("src",),
       static=(_mat_src,), runtime=(_feature_map,))
def SET_IMG2COL_PADDING(m: Machine, src: ConvTile, *,  # noqa: N802
                        FmatrixMode: SetFmatrixMode) -> None:  # noqa: N803
    """Set the padding value of the FMATRIX slot from the ConvTile's config."""
    _set(m, src, FmatrixMode, _PADDING)


@instr("SET_IMG2COL_RPT", family="sync", pipe=Pipe.S, batched=False, timing="run",
       operands=(Opnd("src", "tile"),), params=(_MODE,), dtype_key=("src",),
       static=(_mat_src,), runtime=(_feature_map,))
def SET_IMG2COL_RPT(m: Machine, src: ConvTile, *,  # noqa: N802
                    FmatrixMode: SetFmatrixMode) -> None:  # noqa: N803
    """Set the repeat fields (count, stride, mode) of the FMATRIX slot from the ConvTile."""
    _set(m, src, FmatrixMode, _REPEAT)

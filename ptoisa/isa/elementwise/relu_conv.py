"""TADDDEQRELU, TADDRELUCONV, TSUBRELUCONV: tile-tile adds fused with dequantisation or a
conversion and ReLU."""

from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np

from ...dtypes import DType, dtype
from ...enums import Pipe
from ...memory import Machine
from ...tile import Tile
from ..registry import Instr, Opnd, instr, same_dtype
from ..rules import vec
from ..valid_region import SameValid
from .common import cover
from .unary_binary import _relu

_DST = Opnd("dst", "tile", "out")
_F16 = dtype("f16")


def _sat_convert(x: np.ndarray, dt: DType) -> np.ndarray:
    """Saturating narrowing with round-to-nearest-even."""
    if dt.is_float:
        hi = float(ml_dtypes.finfo(dt.np).max) if dt.np.kind == "f" else float(dt.np.type(1e38))
        return np.clip(x, -hi, hi).astype(dt.np)
    ii = np.iinfo(dt.np)
    return np.clip(np.rint(np.nan_to_num(x.astype(np.float64))), ii.min, ii.max).astype(dt.np)


@instr("TADDDEQRELU", family="elementwise", pipe=Pipe.V,
       operands=(_DST, Opnd("src0", "tile"), Opnd("src1", "tile"), Opnd("deqScale", "scalar"),
                 Opnd("tmp", "tile", "scratch")),
       dtype_key=("dst", "src0"),
       static=(vec("dst", "src0", "src1", "tmp"), same_dtype("src0", "src1")),
       runtime=(cover("src0", "src1"),),
       same_valid=SameValid(("src0", "src1"), "Valid region"))
def TADDDEQRELU(m: Machine, dst: Tile, src0: Tile, src1: Tile, deqScale: Any,  # noqa: N802, N803
                tmp: Tile) -> None:
    """dst = half(max(0, (src0 + src1) * deqScale)): the i32 sum (wrapping) goes to f32 and is
    scaled as ((x * 2^-17) * deqScale) * 2^17 in f32, then ReLU and a saturating RNE
    conversion to f16."""
    vr, vc = dst.valid_shape
    if not (vr and vc):
        return
    with np.errstate(all="ignore"):
        x = np.add(np.asarray(src0.read(vr, vc)), np.asarray(src1.read(vr, vc)))
        f = x.astype(np.float32) * np.float32(2.0 ** -17)
        f = f * np.float32(deqScale)
        f = f * np.float32(2.0 ** 17)
        f = np.maximum(f, np.float32(0))
        dst.write(_sat_convert(f, _F16))


def _relu_conv(name: str, sign: int, same_valid: SameValid) -> Instr:
    what = "+" if sign > 0 else "-"

    def impl(m: Machine, dst: Tile, src0: Tile, src1: Tile) -> None:
        vr, vc = dst.valid_shape
        if not (vr and vc):
            return
        st = src0.dtype
        with np.errstate(all="ignore"):
            a, b = np.asarray(src0.read(vr, vc)), np.asarray(src1.read(vr, vc))
            y = a + b if sign > 0 else a - b
            y = _relu(y)
            dst.write(_sat_convert(y.astype(np.float64) if st.is_int else
                                   y.astype(np.float32), dst.dtype))

    impl.__doc__ = (f"dst = convert(max(0, src0 {what} src1)): the operation in the source type "
                    "(integers wrap), ReLU, then a saturating round-to-nearest-even narrowing "
                    "to dst's type.")
    return instr(name, family="elementwise", pipe=Pipe.V,
                 operands=(_DST, Opnd("src0", "tile"), Opnd("src1", "tile")),
                 dtype_key=("src0", "dst"),
                 static=(vec("dst", "src0", "src1"), same_dtype("src0", "src1")),
                 runtime=(cover("src0", "src1"),), same_valid=same_valid)(impl)


TADDRELUCONV = _relu_conv("TADDRELUCONV", 1,
                          same_valid=SameValid(("src0", "src1"), "Valid region"))


TSUBRELUCONV = _relu_conv("TSUBRELUCONV", -1,
                          same_valid=SameValid(("src0", "src1"), "Valid region (as TADDRELUCONV)"))

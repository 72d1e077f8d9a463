"""Compare and select (micro-isa/11-compare-select.md): ``%p = pto.vcmp %a, %b, %seed, "lt"``,
``%p = pto.vcmps %a, %s, %seed, "gt"`` (predicates out), ``%r = pto.vsel %t, %f, %mask`` and
``%r = pto.vselr %src, %idx`` (registers out).

Compares follow the element type: signed or unsigned integers, IEEE floats (a NaN compares
unequal to everything, ``ne`` true). Lanes outside the seed are 0 in the result predicate
(the native predication); the result keeps the seed's granularity. ``vselrv2``, whose page
records only its operand shape, is not declared: refused by name."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...enums import Pipe
from ...errors import ExecutionError
from ...vector.regs import Mask, MaskSpec, VReg, VRegSpec
from ..registry import Opnd, Param, Sig, instr
from .common import active, mask_fits, same_vreg, scalar_as

#: the compare modes of the page
CMP_MODES = {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal,
             "gt": np.greater, "ge": np.greater_equal}


def _mode(cmp_mode: Any, op: str) -> Any:
    fn = CMP_MODES.get(str(cmp_mode).lower())
    if fn is None:
        raise ExecutionError(f"pto.{op}: compare mode {cmp_mode!r} is not one of "
                             f"{', '.join(CMP_MODES)}")
    return fn


def _seed_result(sig: Sig) -> None:
    s, r = sig["seed"], sig["result"]
    if isinstance(s, MaskSpec) and isinstance(r, MaskSpec) and s != r:
        raise sig.fail(f"result is {r}, seed is {s}: they must match")


def _compare(fn: Any, a: np.ndarray, b: np.ndarray, seed: Mask) -> Mask:
    with np.errstate(all="ignore"):
        hit = np.asarray(fn(a, b), np.bool_)
    # (rows of registers or of seeds, one per iteration of a batched loop, give rows)
    return Mask.of_lanes(hit & active(seed, a.shape[-1]), seed.gran)


@instr("VCMP", pipe=Pipe.V, dialect="vpto",
       operands=(Opnd("src0", "vreg"), Opnd("src1", "vreg"), Opnd("seed", "mask")),
       params=(Param("cmp_mode", "eq"),), results=(Opnd("result", "mask"),),
       dtype_key=("src0",), rows=True,
       static=(same_vreg("src0", "src1"), mask_fits("src0", "seed"), _seed_result))
def VCMP(m: Any, src0: VReg, src1: VReg, seed: Mask, *, cmp_mode: str = "eq") -> Mask:
    """result[i] = src0[i] CMP src1[i] on the seed's active lanes, 0 elsewhere; CMP is one of
    eq ne lt le gt ge, by the element type (signed / unsigned integers, floats)."""
    return _compare(_mode(cmp_mode, "vcmp"), src0.data, src1.data, seed)


@instr("VCMPS", pipe=Pipe.V, dialect="vpto",
       operands=(Opnd("src", "vreg"), Opnd("scalar", "scalar"), Opnd("seed", "mask")),
       params=(Param("cmp_mode", "eq"),), results=(Opnd("result", "mask"),),
       dtype_key=("src",), static=(mask_fits("src", "seed"), _seed_result), rows=True)
def VCMPS(m: Any, src: VReg, scalar: Any, seed: Mask, *, cmp_mode: str = "eq") -> Mask:
    """result[i] = src[i] CMP scalar on the seed's active lanes, 0 elsewhere; the scalar is
    taken as one element of src's type (integers wrap to its width)."""
    s = np.full(src.data.shape, scalar_as(scalar, src.dtype, "scalar"), src.data.dtype)
    return _compare(_mode(cmp_mode, "vcmps"), src.data, s, seed)


@instr("VSEL", pipe=Pipe.V, dialect="vpto",
       operands=(Opnd("src0", "vreg"), Opnd("src1", "vreg"), Opnd("mask", "mask")),
       results=(Opnd("result", "vreg"),), dtype_key=("src0",),
       static=(same_vreg("src0", "src1", "result"), mask_fits("src0")))
def VSEL(m: Any, src0: VReg, src1: VReg, mask: Mask) -> VReg:
    """result[i] = mask[i] ? src0[i] : src1[i] (every lane is written: the mask selects,
    it does not predicate)."""
    return VReg(np.where(active(mask, src0.data.size), src0.data, src1.data))


def _idx_width(sig: Sig) -> None:
    s, i = sig["src"], sig["idx"]
    if isinstance(s, VRegSpec) and isinstance(i, VRegSpec) and (
            i.dtype.is_float or i.lanes != s.lanes or i.dtype.itemsize != s.dtype.itemsize):
        raise sig.fail(f"idx is {i}: it needs {s.lanes} integer lanes of "
                       f"{8 * s.dtype.itemsize} bits (src is {s})")


@instr("VSELR", pipe=Pipe.V, dialect="vpto",
       operands=(Opnd("src", "vreg"), Opnd("idx", "vreg")),
       results=(Opnd("result", "vreg"),), dtype_key=("src",),
       static=(same_vreg("src", "result"), _idx_width))
def VSELR(m: Any, src: VReg, idx: VReg) -> VReg:
    """result[i] = src[idx[i]]; an index outside [0, N) is an error (the page gives no
    wrap-around)."""
    n = src.data.size
    u = np.dtype(f"u{idx.data.dtype.itemsize}")
    ix = idx.data.view(u).astype(np.int64)
    bad = np.flatnonzero(ix >= n)
    if bad.size:
        raise ExecutionError(f"pto.vselr: idx[{bad[0]}] = {ix[bad[0]]} is outside the "
                             f"{n} lanes of src")
    return VReg(src.data[ix])

"""Conversion ops (micro-isa/09-conversion-ops.md): ``pto.vbitcast`` and ``pto.vcvt`` (the
TCVT conversion functions of ``isa/elementwise/cvt.py``, so rounding and saturation are
bit-exact as the tile op's; the packed 4-bit types, a byte lane of two values, by the same
fp4 rounding as TCVT's)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ... import dtypes as D
from ...enums import Pipe, RoundMode
from ...errors import ExecutionError
from ...ptoas_source import source_rule
from ...vector.regs import VREG_BYTES, Mask, MaskSpec, VReg, VRegSpec, vreg_spec
from ..elementwise.cvt import convert, round_fp4
from ..registry import Opnd, Param, Sig, instr
from .common import active


def _to(result_type: Any) -> VRegSpec:
    if isinstance(result_type, VRegSpec):
        return result_type
    spec = vreg_spec(str(result_type)) if isinstance(result_type, str) else None
    if spec is None:
        raise ExecutionError(f"result_type must be a !pto.vreg type, got "
                             f"{result_type!r}")
    return spec


def _same_bits(sig: Sig) -> None:
    t = sig.params.get("result_type")
    if t is not None and not isinstance(t, VRegSpec):
        raise sig.fail(f"the result must be a !pto.vreg, got {t}")


@instr("VBITCAST", pipe=Pipe.V, dialect="vpto", operands=(Opnd("input", "vreg"),),
       params=(Param("result_type", None),), results=(Opnd("result", "vreg"),),
       static=(_same_bits,), rows=True)
def VBITCAST(m: Any, input: VReg, *, result_type: Any = None) -> VReg:  # noqa: A002
    """result = input's 256 bytes read as result_type's lanes (the bits unchanged)."""
    to = _to(result_type)
    x = input.data  # (rows of registers, one per iteration of a batched loop: the last axis)
    if x.shape[-1] * x.itemsize != VREG_BYTES:
        raise ExecutionError(f"the input holds {x.shape[-1] * x.itemsize} bytes")
    return VReg(np.ascontiguousarray(x).view(to.dtype.np))


# ---- pto.vcvt -------------------------------------------------------------------------------

#: the page's rounding tokens -> the TCVT rounding modes (the same conversion functions)
RND = {"R": RoundMode.CAST_RINT, "A": RoundMode.CAST_ROUND, "F": RoundMode.CAST_FLOOR,
       "C": RoundMode.CAST_CEIL, "Z": RoundMode.CAST_TRUNC, "O": RoundMode.CAST_ODD}
#: part token -> (how many destination lanes one source lane's slot spans, its index)
PART = {"EVEN": (2, 0), "ODD": (2, 1), "P0": (4, 0), "P1": (4, 1), "P2": (4, 2), "P3": (4, 3)}


def _strip(tok: Any) -> str | None:
    if tok is None:
        return None
    s = str(tok)
    for pre in ("PART_", "ROUND_", "RS_"):
        s = s.removeprefix(pre)
    return s


#: the packed 4-bit forms take no sat (VcvtOp::verify: its contract for them requires none)
_PTOAS_NO_SAT = source_rule("lib/PTO/IR/VPTO.cpp:VcvtOp::verify",
                            "sat attr is not valid for this vcvt type pair", ("a5",))


def _vcvt_static(sig: Sig) -> None:
    t = sig.params.get("result_type")
    if t is not None and not isinstance(t, VRegSpec):
        raise sig.fail(f"the result must be a !pto.vreg, got {t}")
    rnd, sat, part = (_strip(sig.params.get(k)) for k in ("rnd", "sat", "part"))
    if rnd is not None and rnd not in RND:
        raise sig.fail(f"rnd = \"{rnd}\": the rounding modes are {', '.join(RND)}")
    if sat is not None and sat not in ("SAT", "NOSAT"):
        raise sig.fail(f"sat = \"{sat}\": it is SAT or NOSAT")
    if part is not None and part not in PART:
        raise sig.fail(f"part = \"{part}\": the parts are {', '.join(PART)}")
    src, mask = sig["input"], sig["mask"]
    if isinstance(src, VRegSpec) and isinstance(mask, MaskSpec):
        # (64-bit lanes take b32: VPTO has no b64 mask, a lane reads its first byte's bit)
        want = {1: "b8", 2: "b16"}.get(VREG_BYTES // src.lanes, "b32")
        if mask.gran != want:
            raise sig.fail(f"mask is {mask}, the source ({src}) takes !pto.mask<{want}>")
    if isinstance(src, VRegSpec) and isinstance(t, VRegSpec) and part in PART and \
            src.lanes != t.lanes and not (src.dtype.packed or t.dtype.packed):
        k = max(src.lanes, t.lanes) // min(src.lanes, t.lanes)
        if PART[part][0] != k:  # (PTOAS's words)
            raise sig.fail("part must be EVEN or ODD for 8/16 and 16/32 vcvt forms, got "
                           f"{part} ({src} -> {t})" if k == 2 else
                           f"part must be P0, P1, P2, or P3 for packed vcvt forms, got {part} "
                           f"({src} -> {t})")
    if isinstance(src, VRegSpec) and isinstance(t, VRegSpec) and \
            (src.dtype.packed or t.dtype.packed):
        if part is not None and part in PART and PART[part][0] != 4:
            raise sig.fail(f"part must be P0, P1, P2, or P3 for packed vcvt forms, got {part} "
                           f"({src} -> {t})")
        if sat is not None:
            raise sig.fail(f"sat on {src} -> {t}: fp4 saturates to its largest magnitude by "
                           "itself", ptoas=_PTOAS_NO_SAT)


@instr("VCVT", pipe=Pipe.V, dialect="vpto",
       operands=(Opnd("input", "vreg"), Opnd("mask", "mask")),
       params=(Param("result_type", None), Param("rnd", None), Param("sat", None),
               Param("part", None), Param("source_type", None)),
       results=(Opnd("result", "vreg"),), dtype_key=("input", "result"),
       static=(_vcvt_static,), rows=True)
def VCVT(m: Any, input: VReg, mask: Mask, *, result_type: Any = None,  # noqa: A002
         rnd: str | None = None, sat: str | None = None, part: str | None = None,
         source_type: Any = None) -> VReg:
    """Each active source lane converted to the result type as TCVT converts
    (``isa/elementwise/cvt.py``: rounding ``rnd`` R / A / F / C / Z / O, default R;
    ``sat`` SAT clamps to the destination's range (NaN to 0 for float results too), NOSAT
    wraps integers and lets floats overflow; without it, SAT for integer results (the NPU's
    default) and NOSAT for float ones). Lane placement by the widths:

    * same width: ``result[i] = cvt(input[i])``;
    * narrowing by k (2: ``EVEN`` / ``ODD``, 4: ``P0``..``P3``): ``result[k*i + p] =
      cvt(input[i])``, the other lanes 0 (a later ``vor`` merges the parts);
    * widening by k: ``result[i] = cvt(input[k*i + p])`` (the mask read at that source
      lane);
    * bf16 <-> the packed 4-bit floats (``f4E1M2x2`` / ``f4E2M1x2``, a byte lane holding two
      values): a pair of bf16 lanes is one 32-bit slot, its byte ``P0``..``P3`` their two
      codes (the first in the low nibble), see :func:`_packed_vcvt`.

    Inactive lanes are 0 (zeroing predication). ``source_type``: the source register's
    declared type, where its lanes' numpy type does not say it (a packed or coded type's
    register holds bytes; the ``.pto`` interpreter passes it)."""
    to = _to(result_type)
    # (a packed 4-bit or coded 8-bit register holds bytes: its declared type says which)
    src, dst = (input.dtype if source_type is None else _to(source_type).dtype), to.dtype
    if src.packed or dst.packed:
        return _packed_vcvt(input, src, mask, to, _strip(rnd) or "R", _strip(part))
    # (rows of registers or masks, one per iteration of a batched loop: the last axis lanes)
    ns, nd = input.data.shape[-1], to.lanes
    on = active(mask, ns)
    # without sat: integer results saturate (the NPU default of TCVT); float results do not
    # (IEEE overflow to infinity, infinities kept: a widening is exact)
    r, p = _strip(rnd) or "R", _strip(part)
    s = _strip(sat) or ("SAT" if dst.is_int else "NOSAT")
    mode = RND[r]
    x = input.data
    if sat is not None and s == "SAT" and src.is_float and dst.is_float:
        # the explicit saturating mode normalises exceptional values as the chapters' sat
        # (micro-isa/16: NaN to 0, infinities to the finite extrema by the clamp)
        x = np.where(np.isnan(x), x.dtype.type(0), x)
    if ns == nd:
        if p is not None:
            raise ExecutionError(f"part = \"{p}\" on a same-width conversion {src.name} -> "
                                 f"{dst.name}")
        src_idx, dst_idx = np.arange(ns), np.arange(nd)
    else:
        k = max(ns, nd) // min(ns, nd)
        if p is None or PART[p][0] != k:
            want = "EVEN or ODD" if k == 2 else "P0, P1, P2 or P3"
            raise ExecutionError(f"{src.name} -> {dst.name} changes the lane count by {k}: "
                                 f"it needs part = {want}, got {p!r}")
        off = PART[p][1]
        if nd > ns:
            src_idx, dst_idx = np.arange(ns), k * np.arange(ns) + off
        else:
            src_idx, dst_idx = k * np.arange(nd) + off, np.arange(nd)
    vals = np.asarray(convert(x[..., src_idx], src, dst, mode, s == "SAT", "npu"))
    sel = on[..., src_idx]
    out = np.zeros(np.broadcast_shapes(x.shape[:-1], on.shape[:-1]) + (nd,), dst.np)
    # (each destination lane of dst_idx once: its converted source lane where active, else 0)
    out[..., dst_idx] = np.where(sel, vals.astype(dst.np, copy=False), dst.np.type(0))
    return VReg(out)


def _packed_vcvt(input: VReg, src: D.DType, mask: Mask, to: VRegSpec,  # noqa: A002
                 r: str, p: str | None) -> VReg:
    """bf16 <-> a packed 4-bit float (a byte lane holding two values, the low nibble first),
    placed as the 4-way forms place a 32-bit slot's byte: each pair of bf16 lanes (one 32-bit
    slot) and byte ``p`` of that slot. Narrowing: ``byte[4i + p] = code(input[2i]) |
    code(input[2i+1]) << 4`` (TCVT's fp4 rounding ``rnd``; an inactive bf16 lane's nibble
    and the other bytes 0); widening: ``result[2i], result[2i+1]`` = the values of the low /
    high nibble of ``input[4i + p]`` (0 where that byte's lane is inactive)."""
    dst = to.dtype
    x = input.data
    ns, nd = x.shape[-1], to.lanes
    if (src.packed and dst.name != "bf16") or (dst.packed and src.name != "bf16") or \
            (ns, nd) not in ((128, 256), (256, 128)):
        raise ExecutionError(f"operation 'pto.vcvt' cannot be executed by ptoisa yet from "
                             f"{src.name} to {dst.name} (the packed 4-bit forms are bf16 <-> "
                             "f4E1M2x2 / f4E2M1x2)")
    if p is None or PART.get(p, (0,))[0] != 4:
        raise ExecutionError(f"{src.name} -> {dst.name} is a 4-way packed form: it needs part "
                             f"= P0, P1, P2 or P3, got {p!r}")
    off = PART[p][1]
    on = active(mask, ns)
    if dst.packed:
        codes = np.asarray(round_fp4(x.astype(np.float64), dst, RND[r]), np.uint8) & 0xF
        codes = np.where(on, codes, np.uint8(0)).astype(np.uint8)
        out = np.zeros(codes.shape[:-1] + (nd,), np.uint8)
        out[..., off::4] = codes[..., 0::2] | (codes[..., 1::2] << 4)
        return VReg(out)
    b = np.where(on, x.view(np.uint8), np.uint8(0))[..., off::4]  # the 64 chosen bytes
    out = np.empty(b.shape[:-1] + (nd,), np.float32)
    out[..., 0::2] = D.fp4_decode(b & 0xF, src)
    out[..., 1::2] = D.fp4_decode(b >> 4, src)
    return VReg(out.astype(dst.np))  # (the fp4 values are exact in bf16)

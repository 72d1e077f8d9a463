"""VMI conversions (vmi-isa/06-convert.md): ``vcvt`` (one logical conversion, lane i to lane
i, whatever parts and packing the NPU needs) and ``vinterpret_cast`` (the same bits).

``vcvt`` converts with TCVT's conversion functions (``isa/elementwise/cvt.py``, as the
micro-op ``pto.vcvt`` does), so rounding and saturation are bit-exact: ``rounding`` R
(nearest even, the default) / A / F / C / Z; ``saturate = "SAT"`` clamps to the
destination's range and sends NaN to 0, ``"NOSAT"`` wraps integers (the bit truncation) and
lets floats overflow. Without ``saturate`` (the widenings and int -> float, where nothing
overflows) integer results clamp, float ones do not. The packed 4-bit carriers
(``!pto.bf16x2`` <-> ``f4E1M2x2`` / ``f4E2M1x2``, a lane of either holding two values, the
first in the low bits) convert value by value with TCVT's fp4 rounding; rounding ``"H"``
(half-up: the page does not say how a tie of a negative value rounds) is refused by name.

The static rules are PTOAS's contract with its words: ``rounding`` on fp narrowing and fp ->
int only, one of R / A / H / Z; ``saturate`` on the narrowings and fp -> int only, required
on fp and int narrowing (F and C are the packed bf16x2 -> f4x2 pair's, which ptoisa does not
run)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ... import dtypes as D
from ...enums import Pipe
from ...errors import ExecutionError
from ...vector.logical import LMask, LVec, VmiSpec
from ..elementwise.cvt import convert, round_fp4
from ..micro.conversion import RND
from ..registry import Opnd, Param, Sig, instr
from . import lowering
from .common import SPELLING, active, names, result_spec, same_lanes


def _kind(src: D.DType, dst: D.DType) -> str:
    """vmi-isa/06's seven conversion kinds."""
    if src.is_float and dst.is_float:
        return "FpWiden" if dst.itemsize > src.itemsize else "FpNarrow"
    if src.is_float:
        return "FpToSi" if dst.is_signed else "FpToUi"
    if dst.is_float:
        return "SiToFp"
    return "IntWiden" if dst.itemsize > src.itemsize else "IntNarrow"


def _vcvt_static(sig: Sig) -> None:
    """PTOAS's vcvt contract (vmi-isa/06 "attributes", its verifier's words)."""
    s, r = sig.params.get("source_type") or sig["src"], sig["result"]
    rnd, sat = sig.params.get("rounding"), sig.params.get("saturate")
    if sat not in (None, "SAT", "NOSAT"):
        # (PTOAS's words: "saturate must be" on vcvt, "saturate attr must be" on the others)
        attr = "" if str(sig.params.get("spelling") or "").endswith("vcvt") else " attr"
        raise sig.fail(f"saturate{attr} must be 'SAT' or 'NOSAT', got {sat!r}")
    if not (isinstance(s, VmiSpec) and isinstance(r, VmiSpec)):
        return
    if s.lanes != r.lanes:
        raise sig.fail(f"requires source and result logical lane counts to match (the source "
                       f"has {s.lanes} lanes, the result {r.lanes})")
    pair = (s.dtype.name, r.dtype.name)
    if "bf16x2" in pair or s.dtype.packed or r.dtype.packed:
        _packed_static(sig, pair, rnd, sat)
        return
    if s.dtype.is_float and r.dtype.is_float and s.dtype.itemsize == r.dtype.itemsize and \
            pair != ("bf16", "f16"):
        raise sig.fail(f"same-width fp-to-fp conversion is not supported ({s.dtype.name} -> "
                       f"{r.dtype.name}: of the same-width pairs only bf16 -> f16 converts)")
    kind = _kind(s.dtype, r.dtype)
    if rnd is not None:
        if kind not in ("FpNarrow", "FpToSi", "FpToUi"):
            raise sig.fail("'rounding' attribute is only valid for floating-point narrowing or "
                           "floating-point-to-integer conversions")
        if rnd not in ("R", "A", "H", "Z"):
            raise sig.fail("rounding must be 'R' (nearest-even), 'A' (away-from-zero), 'H' "
                           "(half-up), or 'Z' (toward-zero)")
    if sat is not None and kind not in ("FpNarrow", "IntNarrow", "FpToSi", "FpToUi"):
        raise sig.fail("'saturate' attribute is only valid for fp-narrow / int-narrow "
                       "conversions")
    if sat is None and kind in ("FpNarrow", "IntNarrow"):
        raise sig.fail("'saturate' attribute is required for fp-narrow / int-narrow "
                       "conversions", ptoas=True)
    name = str(sig.params.get("spelling") or "").removeprefix("pto.vmi.")
    if name == "extui" and any(t.dtype.is_signed and not t.signless for t in (s, r)):
        raise sig.fail("requires unsigned or signless integer source and result element types")
    if name == "extsi" and any(not t.dtype.is_signed or t.signless for t in (s, r)):
        raise sig.fail("requires signed integer source and result element types")
    if name == "fptoui":  # (PTOAS's legacy fptoui verifier, vmi_fptoui_verifier.pto)
        if r.dtype.is_signed and not r.signless:
            raise sig.fail("requires unsigned or signless integer result element type, got "
                           f"{r}")
        if sat is None and kind == "FpToUi":
            raise sig.fail("'saturate' attribute is required for this fp-to-ui conversion")
    if name in _KINDS and kind not in _KINDS[name]:
        raise sig.fail(f"'pto.vmi.{name}' is a {' or '.join(_KINDS[name])} conversion, "
                       f"{s.dtype.name} -> {r.dtype.name} is {kind}")


#: the packed pairs (vmi-isa/06 "datatypes": lookupVMIFpToFpContract): bf16x2 -> f4x2 narrows
#: (rounding R / A / F / C / Z, R when absent as PTOAS takes it; no saturate), f4x2 -> bf16x2
#: widens (neither attribute)
_PAIRS = {("bf16x2", "f4E1M2x2"), ("bf16x2", "f4E2M1x2"), ("f4E1M2x2", "bf16x2"),
          ("f4E2M1x2", "bf16x2")}


def _packed_static(sig: Sig, pair: tuple[str, str], rnd: Any, sat: Any) -> None:
    # (PTOAS's words name the spelling: the older names say "attr", fptosi / fptoui / truncf
    # their conversion kind)
    name = str(sig.params.get("spelling") or "pto.vmi.vcvt").removeprefix("pto.vmi.")
    attr = "" if name == "vcvt" else " attr"
    if pair not in _PAIRS:
        what = {"fptosi": "fp-to-si conversion element type pair",
                "fptoui": "fp-to-ui conversion element type pair",
                "truncf": "bf16x2 fp-to-fp conversion element type pair"}.get(name)
        raise sig.fail(f"unsupported {what} ({pair[0]} -> {pair[1]})" if what and "bf16x2" in
                       pair else "unsupported conversion involving bf16x2 element type"
                       if "bf16x2" in pair else
                       "unsupported packed fp-to-fp conversion element type pair")
    if pair[0] == "bf16x2":
        if sat is not None:
            raise sig.fail("'saturate' is not valid for the bf16x2 -> f4x2 conversion (it "
                           "saturates to the largest fp4 magnitude by itself)")
        if rnd is not None and len(str(rnd)) != 1:
            raise sig.fail(f"rounding{attr} must be a single-character mode token (got {rnd!r})")
        if rnd is not None and rnd not in ("R", "A", "F", "C", "Z"):
            raise sig.fail(f"rounding{attr} is not valid for this fp-to-fp conversion type pair "
                           f"(got {rnd!r}: R, A, F, C or Z)")
        return
    if rnd is not None:
        raise sig.fail("'rounding' attribute is only valid for floating-point narrowing or "
                       "floating-point-to-integer conversions")
    if sat is not None:
        raise sig.fail("'saturate' attribute is only valid for fp-narrow / int-narrow "
                       "conversions")


def _bf16_halves(u: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The two bf16 values of each bf16x2 lane (the low half first) as f64."""
    lo = ((u & np.uint32(0xFFFF)) << np.uint32(16)).view(np.float32)
    hi = (u & np.uint32(0xFFFF0000)).view(np.float32)
    return lo.astype(np.float64), hi.astype(np.float64)


def _to_bf16_bits(v: np.ndarray) -> np.ndarray:
    """f32 values that bf16 holds exactly (fp4 values) -> their 16 bf16 bits."""
    return (v.astype(np.float32).view(np.uint32) >> np.uint32(16)).astype(np.uint32)


def _convert_pair(x: np.ndarray, sdt: D.DType, ddt: D.DType, rounding: str | None
                  ) -> np.ndarray:
    """bf16x2 -> f4x2: each bf16 of a lane to a 4-bit code (TCVT's fp4 rounding: the largest
    magnitude for what is beyond it, NaN to +0), the low half's code in the byte's low
    nibble; f4x2 -> bf16x2: each code's value (exact in bf16), the low nibble's in the low
    half."""
    if sdt.name == "bf16x2":
        lo, hi = _bf16_halves(x.view(np.uint32))
        mode = RND[rounding or "R"]
        c_lo = np.asarray(round_fp4(lo, ddt, mode), np.uint8) & 0xF
        c_hi = np.asarray(round_fp4(hi, ddt, mode), np.uint8) & 0xF
        return (c_lo | (c_hi << 4)).astype(np.uint8)
    b = x.view(np.uint8)
    lo_v = D.fp4_decode(b & 0xF, sdt)
    hi_v = D.fp4_decode(b >> 4, sdt)
    return _to_bf16_bits(lo_v) | (_to_bf16_bits(hi_v) << np.uint32(16))


#: the older names of vcvt (designs/vmi-implementation-manual.md 3.1) -> the conversion kinds
#: each one is
_KINDS = {"extf": ("FpWiden",), "truncf": ("FpNarrow",), "extsi": ("IntWiden",),
          "extui": ("IntWiden",), "trunci": ("IntNarrow",), "fptosi": ("FpToSi",),
          "fptoui": ("FpToUi",), "sitofp": ("SiToFp",), "uitofp": ("SiToFp",)}


@instr("VMI_VCVT", pipe=Pipe.V, dialect="vmi",
       operands=(Opnd("src", "lvec"), Opnd("mask", "lmask", optional=True)),
       params=(Param("rounding", None), Param("saturate", None), Param("pmode", None),
               Param("result_type", None), Param("source_type", None), SPELLING),
       results=(Opnd("result", "lvec"),), dtype_key=("src", "result"),
       static=(_vcvt_static, same_lanes("src", "mask", "result", gran=False)),
       ptoas=names(*_KINDS, passes=lowering.CAST))
def VMI_VCVT(m: Any, src: LVec, mask: LMask | None = None, *, rounding: str | None = None,
             saturate: str | None = None, pmode: str | None = None,
             result_type: Any = None, source_type: Any = None,
             spelling: str | None = None) -> LVec:
    """result[i] = src[i] converted to the result's element type (active lanes; 0
    elsewhere), rounding and saturation as the module says. Under the older names the name
    says the source's signedness where it matters: ``extui`` / ``uitofp`` read it unsigned,
    ``extsi`` / ``sitofp`` signed."""
    to = result_spec(result_type, "vcvt")
    # (a bf16x2 value is held as uint32 lanes: the program's type says what they are)
    frm = result_spec(source_type, "vcvt") if source_type is not None else None
    sdt, ddt = (frm.dtype if frm is not None else src.dtype), to.dtype
    if (sdt.name, ddt.name) in _PAIRS:
        out = _convert_pair(src.data, sdt, ddt, rounding)
        if mask is not None:
            out = np.where(active(mask, out.size), out, out.dtype.type(0))
        return LVec(out)
    if sdt.packed or ddt.packed or rounding == "H":
        what = "rounding = \"H\"" if rounding == "H" else \
            f"the packed type {(sdt if sdt.packed else ddt).name}"
        raise ExecutionError(f"operation 'pto.vmi.vcvt' cannot be executed by ptoisa yet with "
                             f"{what}")
    if pmode not in (None, "zero"):
        raise ExecutionError(f"operation 'pto.vmi.vcvt' with pmode = \"{pmode}\" cannot be "
                             "executed by ptoisa yet")
    x = src.data
    name = str(spelling or "").removeprefix("pto.vmi.")
    if sdt.is_int and name in ("extui", "uitofp", "extsi", "sitofp"):
        signed = name in ("extsi", "sitofp")
        x = x.view(np.dtype(f"{'i' if signed else 'u'}{x.dtype.itemsize}"))
        sdt = D.dtype(x.dtype)
    sat = saturate == "SAT" if saturate is not None else ddt.is_int
    if saturate == "SAT" and sdt.is_float and ddt.is_float:
        x = np.where(np.isnan(x), x.dtype.type(0), x)  # (the saturating mode: NaN to 0)
    out = np.asarray(convert(x, sdt, ddt, RND[rounding or "R"], sat, "npu")).astype(
        ddt.np, copy=False)
    if mask is not None:
        out = np.where(active(mask, out.size), out, ddt.np.type(0))
    return LVec(out)


def _same_bits(sig: Sig) -> None:
    s, r = sig["src"], sig["result"]
    if isinstance(s, VmiSpec) and isinstance(r, VmiSpec) and \
            s.lanes * s.dtype.itemsize != r.lanes * r.dtype.itemsize:
        raise sig.fail(f"requires source and result to carry the same total number of bits "
                       f"({s}: {8 * s.lanes * s.dtype.itemsize}, {r}: "
                       f"{8 * r.lanes * r.dtype.itemsize})")


@instr("VMI_VINTERPRET_CAST", pipe=Pipe.V, dialect="vmi", operands=(Opnd("src", "lvec"),),
       params=(Param("result_type", None),), results=(Opnd("result", "lvec"),),
       static=(_same_bits,), ptoas=names("bitcast", passes=lowering.BITCAST))
def VMI_VINTERPRET_CAST(m: Any, src: LVec, *, result_type: Any = None) -> LVec:
    """The source's bits read as the result type's lanes (lane count may change, the bits
    are conserved)."""
    to = result_spec(result_type, "vinterpret_cast")
    if src.data.nbytes != to.lanes * to.dtype.itemsize:
        raise ExecutionError(f"vinterpret_cast: {src.data.nbytes} bytes cannot be {to}")
    return LVec(src.data.view(to.dtype.np).copy())

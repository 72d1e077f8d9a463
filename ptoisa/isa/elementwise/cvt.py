"""TCVT: elementwise type conversion with a rounding mode and a saturation mode.

Rounding (RoundMode): RINT nearest-even, ROUND nearest ties-away, FLOOR, CEIL, TRUNC, ODD,
NONE. They apply to float -> int, float -> narrower float and int -> float conversions, as
the NPU's vconv does (the upstream CPU simulator applies them to float -> int only and
rounds float narrowing to nearest-even: ptoisa follows the hardware on every target, see
docs/cpu_sim_differences.md). ODD is round-to-odd (von Neumann) for float results; for
float -> int it resolves ties to the odd integer (the simulator's rule; the NPU has no
round-to-odd integer conversion). NONE is nearest-even for float results and truncation
(the C cast) for float -> int. f32 -> f32 is the identity on cpu and rounds to an integral
value on a2a3/a5 (the NPU's "round-only" f32 -> f32 path).

Saturation (SaturationMode): ON clamps to the destination's finite range and makes NaN 0
(upstream's vcvt-f32-special golden: f32 -> f16 under SAT gives 0 for NaN, +-65504 for
+-inf). OFF lets floats overflow to inf and makes integer results wrap: a float is
first converted saturating to 32 (64 for 64-bit destinations) bits and then truncated to the
destination width (the NPU's non-saturating, PyTorch-compatible path). Without a SaturationMode
operand the cpu target uses OFF (as the simulator does) and a2a3/a5 use ON (the NPU default),
except for the exact widenings f16 / bf16 -> f32, which keep infinities and NaN.
The targets' traits ``cvt_saturate_default`` and ``cvt_casts`` ("npu" / "x86") carry these
differences.
"""

from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np

from ...dtypes import FP4_VALUES, DType, decode, dtype, fp4_decode, hif8_encode, s4_encode
from ...enums import Pipe, RoundMode, SaturationMode, TileType
from ...memory import Machine
from ...tile import Tile, TileSpec
from ..registry import Instr, Opnd, Param, Sig, instr, locs
from ..spelling import Attr, Ptoas
from .common import cover, wrap_to


def _finfo_max(dt: DType) -> float:
    fi = ml_dtypes.finfo(dt.np)  # numpy's finfo knows no ml_dtypes type (fp8 has kind "f")
    return float(fi.max)


def _step(y: np.ndarray, up: Any) -> np.ndarray:
    """Next representable value of y's float type toward +inf (``up``) or -inf; ``up`` may
    be a bool array (a direction per element). On the bits: away from zero is +1, toward zero
    -1, and a zero steps to the smallest subnormal of the direction's sign."""
    u = y.view(f"u{y.dtype.itemsize}")
    it = u.dtype.type
    top = it(1 << (y.dtype.itemsize * 8 - 1))
    one = it(1)
    # (NaNs step too, by the same arithmetic: round_float never chooses the result)
    out = np.where((u >= top) != up, u + one, u - one)
    return np.where((u & (top - one)) == 0, np.where(up, one, top + one), out).view(y.dtype)


def round_float(x: np.ndarray, dt: DType, mode: RoundMode) -> np.ndarray:
    """Float64 values rounded to the float type ``dt`` under ``mode`` (overflow: as IEEE)."""
    with np.errstate(all="ignore"):
        y = x.astype(dt.np)
        if mode in (RoundMode.CAST_RINT, RoundMode.CAST_NONE):
            return y
        back = y.astype(np.float64)
        inexact = (back != x) & ~np.isnan(x)
        # x lies between y and its neighbour on x's side: one step per element
        side = _step(y, back < x)
        down = np.where(inexact & (back > x), side, y)
        up = np.where(inexact & (back < x), side, y)
        if mode is RoundMode.CAST_FLOOR:
            return down
        if mode is RoundMode.CAST_CEIL:
            return up
        if mode is RoundMode.CAST_TRUNC:
            return np.where(x >= 0, down, up)
        d_lo = x - down.astype(np.float64)
        d_hi = up.astype(np.float64) - x
        if mode is RoundMode.CAST_ROUND:
            return np.where(d_lo < d_hi, down, np.where(d_hi < d_lo, up,
                                                        np.where(x >= 0, up, down)))
        # CAST_ODD: an inexact result takes the neighbour with an odd last significand bit
        lsb = (down.view(f"u{dt.itemsize}") & 1).astype(bool)
        return np.where(inexact, np.where(lsb, down, up), y)


def round_fp4(x: np.ndarray, dt: DType, mode: RoundMode) -> np.ndarray:
    """Float64 values -> 4-bit codes of ``dt`` under ``mode``. The formats have no inf/NaN:
    magnitudes saturate to the largest finite value and NaN encodes as +0."""
    table = FP4_VALUES[dt.name].astype(np.float64)
    order = np.argsort(table, kind="stable")
    vals = table[order]  # ascending; -0 (code 8) sorts next to +0
    top = float(vals[-1])
    xs = np.clip(np.nan_to_num(x, nan=0.0), -top, top)
    hi_i = np.clip(np.searchsorted(vals, xs, side="left"), 0, len(vals) - 1)
    lo_i = np.clip(np.searchsorted(vals, xs, side="right") - 1, 0, len(vals) - 1)
    lo, hi = vals[lo_i], vals[hi_i]
    lo_c, hi_c = order[lo_i], order[hi_i]
    exact = lo == hi
    if mode is RoundMode.CAST_FLOOR:
        pick_hi = np.zeros(xs.shape, bool)
    elif mode is RoundMode.CAST_CEIL:
        pick_hi = np.ones(xs.shape, bool)
    elif mode is RoundMode.CAST_TRUNC:
        pick_hi = xs < 0
    elif mode is RoundMode.CAST_ODD:
        pick_hi = (hi_c & 1).astype(bool)
    else:
        d_lo, d_hi = xs - lo, hi - xs
        if mode is RoundMode.CAST_ROUND:
            tie_hi = xs > 0
        else:  # RINT / NONE: ties to the even code
            tie_hi = (hi_c & 1) == 0
        pick_hi = (d_hi < d_lo) | ((d_hi == d_lo) & tie_hi)
    code = np.where(exact | pick_hi, hi_c, lo_c).astype(np.uint8)
    # a zero result keeps the sign of the input, as the encoder of the other fp4 paths does
    zero = (code & 7) == 0
    return np.where(zero, np.where(np.signbit(xs), 8, 0), code).astype(np.uint8)


def round_int(x: np.ndarray, mode: RoundMode) -> np.ndarray:
    """Float64 values rounded to integral float64 values under ``mode``."""
    if mode is RoundMode.CAST_RINT:
        return np.rint(x)
    if mode is RoundMode.CAST_ROUND:
        return np.sign(x) * np.floor(np.abs(x) + 0.5)
    if mode is RoundMode.CAST_FLOOR:
        return np.floor(x)
    if mode is RoundMode.CAST_CEIL:
        return np.ceil(x)
    if mode is RoundMode.CAST_ODD:
        fl = np.floor(x)
        tie = (x - fl) == 0.5
        return np.where(tie, np.where(np.fmod(fl, 2) != 0, fl, fl + 1), np.rint(x))
    return np.trunc(x)  # CAST_TRUNC and CAST_NONE (the C cast)


def convert(x: np.ndarray, src: DType, dst: DType, mode: RoundMode, sat: bool,
            casts: str = "npu") -> np.ndarray:
    """The TCVT conversion of an array of ``src`` elements to ``dst`` (packed 4-bit types are
    arrays of 4-bit codes); ``casts`` is the target's ``cvt_casts`` trait ("npu" or "x86")."""
    if src.packed:
        x, src = fp4_decode(x, src), dtype("f32")
    if dst.packed:
        with np.errstate(all="ignore"):
            return round_fp4(x.astype(np.float64), dst, mode)
    if src.coded or dst.coded:
        return _convert_coded(x, src, dst, mode, sat, casts)
    with np.errstate(all="ignore"):
        if dst.is_float:
            x64 = x.astype(np.float64)
            if src is dst:
                if casts == "x86" or not src.is_float or mode is RoundMode.CAST_NONE:
                    return x.copy()
                return round_int(x64, mode).astype(dst.np)
            if sat:  # NaN to 0, the rest clamped (upstream's vcvt-f32-special golden)
                hi = _finfo_max(dst)
                x64 = np.where(np.isnan(x64), 0.0, np.clip(x64, -hi, hi))
            if src.is_float and src.itemsize < dst.itemsize and src.name != "bf16" \
                    or (src.name == "bf16" and dst.name == "f32"):
                return x64.astype(dst.np)  # widening: exact
            if src.is_int and src.itemsize == 8:
                # 64-bit integers are not exact in float64: round from the exact integer
                return np.array([_round_big(int(v), dst, mode) for v in x.reshape(-1)],
                                dtype=dst.np).reshape(x.shape)
            return round_float(x64, dst, mode)
        lo, hi = (int(v) for v in (np.iinfo(dst.np).min, np.iinfo(dst.np).max))
        if src.is_float:
            x64 = x.astype(np.float64)
            r = round_int(x64, mode)
            r = np.where(np.isnan(r), 0.0, r)
            if sat:
                return np.clip(r, lo, hi).astype(dst.np)
            if casts == "x86":
                return _x86_cast(r, dst)
            wide = 64 if dst.itemsize == 8 else 32
            signed = dst.is_signed or wide == 32
            wl, wh = (-(1 << (wide - 1)), (1 << (wide - 1)) - 1) if signed else (0, (1 << wide) - 1)
            if wide == 64:
                r = np.clip(r, -2.0 ** 63, np.nextafter(2.0 ** 63, 0))
                return wrap_to(r.astype(np.int64), dst) if dst.is_signed else \
                    np.clip(r, 0, np.nextafter(2.0 ** 64, 0)).astype(np.uint64)
            return wrap_to(np.clip(r, wl, wh).astype(np.int64), dst)
        # int -> int
        if sat:
            if src.name == "ui64":
                return np.minimum(x, np.uint64(hi)).astype(dst.np)
            xi = x.astype(np.int64)
            if dst.name == "ui64":
                return np.maximum(xi, 0).astype(np.uint64)
            return np.clip(xi, lo, hi).astype(dst.np)
        return x.astype(dst.np)  # two's-complement truncation / extension


def _convert_coded(x: np.ndarray, src: DType, dst: DType, mode: RoundMode, sat: bool,
                   casts: str) -> np.ndarray:
    """Conversions from and to the coded 8-bit types. s4 sources and HiF8 sources decode
    exactly (to i8 / f32). To s4: rounded with ``mode`` and always clamped to [-8, 7] (the
    simulator's and the NPU's f16 -> s4 results saturate whatever the saturation mode; NaN
    -> 0). To HiF8: correctly rounded with ``mode`` (RINT/NONE/ODD ties to the even code,
    ROUND ties away); out of range -> +-inf, or +-2^15 with saturation; NaN -> 0x80."""
    if src.coded:
        x, src = decode(x, src), dtype("i8" if src.name == "s4" else "f32")
        if src is dst:  # HiF8 -> f32: the decoded value is exact (not f32 -> f32's rounding)
            return x.astype(dst.np)
        if not dst.coded:
            return convert(x, src, dst, mode, sat, casts)
    with np.errstate(all="ignore"):
        x64 = x.astype(np.float64)
        if dst.name == "s4":
            r = round_int(x64, mode)
            return s4_encode(np.clip(np.nan_to_num(r, nan=0.0), -8, 7))
        rm = {RoundMode.CAST_ROUND: "round", RoundMode.CAST_FLOOR: "floor",
              RoundMode.CAST_CEIL: "ceil", RoundMode.CAST_TRUNC: "trunc"}.get(mode, "rint")
        return hif8_encode(x64, rm, saturate=sat)


def _x86_cast(r: np.ndarray, dst: DType) -> np.ndarray:
    """static_cast<D>(double) as the CPU simulator's x86-64 build executes it: cvttsd2si to
    32 bits (64 bits for i64/ui32/ui64 destinations), whose out-of-range or NaN result is the
    "integer indefinite" INT_MIN, then truncation to D's width."""
    w = 64 if dst.name in ("i64", "ui32", "ui64") else 32
    lo, hi = -(2.0 ** (w - 1)), 2.0 ** (w - 1)
    if dst.name == "ui64":  # converted by halves: [2^63, 2^64) is in range too
        hi = 2.0 ** 64
    bad = np.isnan(r) | (r < lo) | (r >= hi)
    big = r >= 2.0 ** 63
    safe = np.where(bad | big, 0.0, r).astype(np.int64)
    if dst.name == "ui64":
        top = np.where(big & ~bad, r - 2.0 ** 63, 0.0).astype(np.int64).astype(np.uint64)
        out = np.where(big & ~bad, top + np.uint64(1 << 63), safe.astype(np.uint64))
        return np.where(bad, np.uint64(1 << 63), out)
    out = np.where(bad, np.int64(-(1 << (w - 1))), safe)
    return wrap_to(out, dst)


def _round_big(v: int, dt: DType, mode: RoundMode) -> Any:
    """One 64-bit integer rounded to a float type of at most 24 significand bits. The two
    float64 neighbours lo <= v <= hi bracket v, and no rounding boundary of ``dt`` lies
    strictly between them, so the directed modes round lo or hi and the nearest modes f."""
    f = float(v)
    if int(f) == v:
        return round_float(np.array([f]), dt, mode)[0]
    lo = f if int(f) < v else float(np.nextafter(f, -np.inf))
    hi = float(np.nextafter(lo, np.inf))
    pick = {RoundMode.CAST_FLOOR: lo, RoundMode.CAST_CEIL: hi,
            RoundMode.CAST_TRUNC: lo if v > 0 else hi}.get(mode, f)
    return round_float(np.array([pick]), dt, mode)[0]


class _TcvtInstr(Instr):
    """TCVT(dst, src, [tmp,] mode[, satMode]): a missing tmp tile shifts the enum operands."""

    def bind(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[list[Any], dict]:
        # an explicit None is the omitted tmp itself, not a shifted mode
        if len(args) >= 3 and args[2] is not None and not isinstance(args[2], Tile) \
                and "tmp" not in kwargs:
            from ..registry import Event

            if not isinstance(args[2], Event):
                args = (*args[:2], None, *args[2:])
        return super().bind(args, kwargs)


def _cvt_shapes(ins: Instr, dst: Tile, src: Tile, *rest: Any, **kw: Any) -> None:
    cover("src")(ins, dst, src)


def _cvt_static_shapes(sig: Sig) -> None:
    """src and dst have compatible shapes: the same declared shape and, where both are static,
    the same valid region (manual; the PTOAS verifier's wording)."""
    d, s = sig["dst"], sig["src"]
    if not (isinstance(d, TileSpec) and isinstance(s, TileSpec)):
        return
    for p, o in ((d, s), (s, d)):
        if p.dtype.packed and not o.dtype.packed and p.rows == o.rows and 2 * p.cols == o.cols:
            # PTOAS counts a !pto.f4* tile's columns in packed pairs (PTO_IR_manual,
            # tile_buf); ptoisa's FP4 tiles count FP4 elements
            raise sig.fail(f"operation 'pto.tcvt' cannot be executed by ptoisa yet: its "
                           f"{p.dtype} tile is {p.rows}x{p.cols} for a {o.rows}x{o.cols} "
                           f"{o.dtype} one (PTOAS's packed-pair extents; ptoisa's FP4 tiles "
                           "count FP4 elements)")
    if (d.rows, d.cols) != (s.rows, s.cols):
        raise sig.fail(f"expects src and dst to have compatible shapes (src {s.rows}x{s.cols}, "
                       f"dst {d.rows}x{d.cols})")
    vs, vd = (s.valid_row, s.valid_col), (d.valid_row, d.valid_col)
    if None not in vs + vd and vs != vd:
        raise sig.fail(f"expects src and dst to have the same valid_shape (src {vs[0]}x{vs[1]}, "
                       f"dst {vd[0]}x{vd[1]})")


def _ptoas_packed_shapes(sig: Sig) -> None:
    """PTOAS counts a packed fp4 tile type's columns in pairs (``!pto.f4E1M2x2``, 16x8 holds
    16x16 values): written with the same declared shape as an unpacked partner, it holds twice
    the values (tcvt_low_precision_packed_shape_invalid_a5.pto). A ``.pto`` rule: the eager
    API's packed tiles count values."""
    d, s = sig["dst"], sig["src"]
    if isinstance(d, TileSpec) and isinstance(s, TileSpec) and \
            d.dtype.packed != s.dtype.packed and (d.rows, d.cols) == (s.rows, s.cols):
        raise sig.fail(f"expects src and dst to have compatible shapes (src {s.rows}x{s.cols} "
                       f"{s.dtype}, dst {d.rows}x{d.cols} {d.dtype}: the packed type's "
                       "columns hold two values each)")


@instr("TCVT", family="elementwise", pipe=Pipe.V,
       ptoas=Ptoas(attrs={"rmode": Attr("mode"), "sat_mode": Attr("satMode")},
                   rules={"pto.tcvt": (_ptoas_packed_shapes,)}),
       operands=(Opnd("dst", "tile", "out"), Opnd("src", "tile"),
                 Opnd("tmp", "tile", "scratch", optional=True),
                 Opnd("mode", "enum", enum=RoundMode, optional=True),
                 Opnd("satMode", "enum", enum=SaturationMode, optional=True)),
       params=(Param("NeedSetCtrl", True),),
       dtype_key=("src", "dst"),
       static=(locs(["dst", "src"], TileType.Vec), _cvt_static_shapes),
       runtime=(_cvt_shapes,))
def TCVT(m: Machine, dst: Tile, src: Tile, tmp: Tile | None = None,  # noqa: N802
         mode: RoundMode | None = None, satMode: SaturationMode | None = None,  # noqa: N803
         NeedSetCtrl: bool = True) -> None:  # noqa: N803
    """dst = cast_{mode, satMode}(src) over dst's valid region (see the module doc for the
    rounding and saturation rules). ``mode`` defaults to CAST_RINT; tmp is scratch."""
    vr, vc = dst.valid_shape
    if not (vr and vc):
        return
    rm = mode or RoundMode.CAST_RINT
    if satMode is None:
        # (an exact widening between floats has nothing to saturate: the default keeps its
        # infinities and NaN, as vcvt without ``sat`` and PTOAS's lowering of it do)
        widening = src.dtype.is_float and dst.dtype.is_float and not src.dtype.coded \
            and src.dtype.itemsize < dst.dtype.itemsize and dst.dtype.name == "f32"
        sat = m.target.traits.cvt_saturate_default and not widening
    else:
        sat = satMode is SaturationMode.ON
    x = np.asarray(src.read(vr, vc))
    dst.write(convert(x, src.dtype, dst.dtype, rm, sat, m.target.traits.cvt_casts))


TCVT.__class__ = _TcvtInstr

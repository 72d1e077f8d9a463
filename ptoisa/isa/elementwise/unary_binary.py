"""Elementwise tile-tile instructions (besides TADD, in elementwise.py) and the fused ones.

Every instruction iterates dst's valid region; sources are read at the same (i, j) and their
valid regions must cover it. Integers wrap (two's complement) where the arithmetic overflows.
Floating-point results are rounded once to the element type (f16/bf16 compute in f32, f32 in
f64, which is exact for + - * / sqrt and correctly rounded for the fused forms).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ... import lazy, rowfuse
from ...enums import Pipe
from ...memory import Machine, current
from ...tile import Tile, TileSpec
from .. import planned
from ..registry import Instr, Opnd, Param, Sig, instr, same_dtype
from ..rules import npu_max, npu_min, vec
from ..spelling import Ptoas
from ..valid_region import BOTH, NPU, SameValid
from .common import (
    Algorithm,
    cover,
    idiv,
    irem_trunc,
    kinds,
    plain_form,
    to_float,
    wide,
    wide_apply,
    wide_apply_pending,
    wrap_to,
)

ALGO = (Param("PrecisionType", Algorithm.DEFAULT, Algorithm),)


def no_high_precision(sig: Sig) -> None:
    """A2/A3's TPOW / TPOWS have no high-precision path (pto-isa a2a3 TPow.hpp takes no
    precision parameter)."""
    if sig.params.get("PrecisionType") not in (None, Algorithm.DEFAULT):
        raise sig.fail("A2/A3 does not support precisionType=high_precision")

_DST = Opnd("dst", "tile", "out")




def _pow(a: np.ndarray, b: np.ndarray, dt: Any) -> np.ndarray:
    """pow in the element type: integers by repeated multiplication (wrapping; a negative
    exponent gives 1/base^-e truncated: 1 for base 1, +-1 for base -1, else 0); floats by
    std::pow."""
    if dt.is_float:
        x, e = to_float(a, dt), to_float(b, dt)
        with np.errstate(all="ignore"):
            r = np.power(x, e)
        # numpy computes x ** 0.5 as sqrt(x); C's pow gives +inf for -inf and +0 for -0
        half = e == 0.5
        r = np.where(half & (x == 0), 0.0, np.where(half & (x == -np.inf), np.inf, r))
        return r.astype(dt.np)
    a = np.asarray(a)
    b = np.broadcast_to(np.asarray(b, dtype=dt.np), a.shape)
    work = np.uint64 if dt.name == "ui64" else np.int64
    base = a.astype(work)
    e = b.astype(work)
    neg = e < 0 if work is np.int64 else np.zeros(e.shape, bool)
    e = np.where(neg, 0, e)
    out = np.ones(a.shape, work)
    with np.errstate(all="ignore"):
        cur = base.copy()
        ee = e.copy()
        for _ in range(int(e.max(initial=0)).bit_length()):
            odd = (ee & 1).astype(bool)
            out = np.where(odd, out * cur, out)
            cur = cur * cur
            ee = ee >> 1
    if neg.any():
        odd_e = (b.astype(np.int64) % 2) != 0
        inv = np.where(base == 1, 1, np.where(base == -1, np.where(odd_e, -1, 1), 0))
        out = np.where(neg, inv, out)
    return wrap_to(out, dt)


def _rem_floor(a: np.ndarray, b: np.ndarray, dt: Any) -> np.ndarray:
    """a - floor(a / b) * b (result has the sign of the divisor)."""
    if dt.is_float:
        with np.errstate(all="ignore"):
            return np.mod(to_float(a, dt), to_float(b, dt)).astype(dt.np)
    b = np.broadcast_to(np.asarray(b, dtype=dt.np), np.shape(a))
    r = irem_trunc(a, b, dt)
    fix = (r != 0) & ((r < 0) != (b < 0)) if dt.is_signed else np.zeros(r.shape, bool)
    with np.errstate(all="ignore"):
        return np.where(fix, r + b, r).astype(dt.np)


def _rem_floor_cpu(a: np.ndarray, b: np.ndarray, dt: Any) -> np.ndarray:
    """The simulator's remainder: r = fmod(a, b), plus b when the signs differ and r != 0,
    so a zero result keeps the dividend's sign (4 rem -2 = +0; numpy's mod gives -0)."""
    r = _rem_floor(a, b, dt)
    if not dt.is_float:
        return r
    with np.errstate(all="ignore"):
        z = np.fmod(to_float(a, dt), to_float(b, dt)).astype(dt.np)
    return np.where(r == 0, z, r)


def _max_cpu(a: np.ndarray, b: np.ndarray, dt: Any) -> np.ndarray:
    """std::max(a, b) = a < b ? b : a: a NaN in src0 is kept, one in src1 is not."""
    return np.where(a < b, b, a)


def _min_cpu(a: np.ndarray, b: np.ndarray, dt: Any) -> np.ndarray:
    """std::min(a, b) = b < a ? b : a."""
    return np.where(b < a, b, a)


def _in_f32(f: Callable[..., Any]) -> Fn:
    """f on f16 values promoted to f32 (the simulator's C++ arithmetic on half: each
    operation rounded to f32, the result once to f16); other types as they are."""
    def g(*args: Any) -> np.ndarray:
        *vals, dt = args
        if dt.name == "f16":
            return np.asarray(f(*(np.asarray(v).astype(np.float32) for v in vals))).astype(dt.np)
        return np.asarray(f(*vals))
    return g


def _fmod(a: np.ndarray, b: np.ndarray, dt: Any) -> np.ndarray:
    if dt.is_float:
        with np.errstate(all="ignore"):
            return np.fmod(to_float(a, dt), to_float(b, dt)).astype(dt.np)
    return irem_trunc(a, b, dt)


def _div(a: np.ndarray, b: np.ndarray, dt: Any) -> np.ndarray:
    if dt.is_float:
        with np.errstate(all="ignore"):
            return (to_float(a, dt) / to_float(b, dt)).astype(dt.np)
    return idiv(a, b, dt)


def _shift(a: np.ndarray, s: np.ndarray, dt: Any, left: bool) -> np.ndarray:
    """Shift by s bits; s >= bit width shifts everything out (0, or the sign for an
    arithmetic right shift), as the vector shifter does."""
    a = np.asarray(a)
    s = np.broadcast_to(np.asarray(s), a.shape).astype(np.int64)
    big = (s >= dt.bits) | (s < 0)
    sc = np.where(big, 0, s).astype(a.dtype)
    with np.errstate(all="ignore"):
        if left:
            return np.where(big, 0, np.left_shift(a, sc)).astype(dt.np)
        out = np.right_shift(a, sc)
        fill = np.where(a < 0, -1, 0) if dt.is_signed else 0
        return np.where(big, fill, out).astype(dt.np)


def _relu(x: np.ndarray) -> np.ndarray:
    return np.where(x > 0, x, np.zeros((), x.dtype))


# ---- declaration helpers -------------------------------------------------------------------

Fn = Callable[..., Any]


def _unary(name: str, fn: Fn, doc: str, *, params: tuple[Param, ...] = (),
           tmp: bool = False, static: tuple[Any, ...] = (), into: Fn | None = None,
           pending: Fn | None = None, row: Any = None,
           same_valid: SameValid | None = None) -> Instr:
    """``into(a, dt, out)``, when given, computes straight into dst's storage (one pass);
    ``pending((fn, args), dt, out)`` from dst's own deferred result ``fn(*args)``; ``row``: the
    numpy ufunc that ``fn`` computes in the wide type (see wide_apply), for a deferred chain
    (ptoisa.rowfuse); ``fn`` a numpy ufunc: the plain form too (see plain_form)."""
    fn, plain = plain_form(fn)
    ops = [_DST, Opnd("src", "tile")]
    if tmp:
        ops.append(Opnd("tmp", "tile", "scratch", optional=True))

    def impl(m: Machine, dst: Tile, src: Tile, *rest: Any, **kw: Any) -> None:
        vr, vc = dst.valid_shape
        if vr and vc:
            if pending is not None and src is dst and dst._pending is not None \
                    and (vr, vc) == dst.shape and not dst.spec.is_boxed:
                # in place on a deferred result (TEXP(t, t) after TROWEXPANDSUB(t, ...)):
                # deferred in turn, a step of the chain (see ptoisa.rowfuse), or computed from
                # it chunk by chunk, never stored on its own
                kid = lazy.node_of(dst) if row is not None and lazy.worth(m, dst) else None
                if kid is not None and lazy.defer(m, dst, rowfuse.node(
                        rowfuse.wide(row, dst.dtype.np, wide(dst.dtype)), (kid,), kid.shape)):
                    return
                p, dst._pending = dst._pending, None
                if dst._buf is None:
                    current().auto_storage(dst, False)  # written in full below
                out = dst.view2d()
                assert out is not None  # (not boxed)
                pending(p, dst.dtype, out)
                return
            a = np.asarray(src.read(vr, vc))
            if (vr, vc) == dst.shape:
                dst._overwrite()  # (a TLOAD's window read in place: not copied in first)
            with m.errstate():
                out = dst.view2d() if into is not None else None
                if out is not None:
                    into(a, dst.dtype, out[..., :vr, :vc])
                else:
                    dst.write(fn(a, dst.dtype))

    impl.__doc__ = doc

    def plan(ins: Instr, m: Machine, vals: list[Any], params: dict[str, Any]
             ) -> Callable[[], bool] | None:
        """The planned form (Instr.plan, ptoisa/isa/planned.py) of ``into``: src and dst whole
        tiles of one shape (the run-time rules, src covering dst, pass), src's values
        computed straight into dst (no deferred chain: dst below rowfuse's size)."""
        dst, src = vals[0], vals[1]
        if into is None or not (planned.plain(dst) and planned.plain(src)) \
                or (src.spec.rows, src.spec.cols) != (dst.spec.rows, dst.spec.cols) \
                or (row is not None and lazy.worth(m, dst)):
            return None
        dt = dst.dtype

        def call() -> bool:
            if m._lazy and not planned.settled(m):
                return False
            a, out = planned.values(src, m), planned.target(dst, m)
            if a is None or out is None:
                return False
            planned.written(dst, m)  # (a TLOAD's window read in place: not copied in first)
            if m.quiet:  # (a launch's machine: numpy's warnings are off)
                into(a, dt, out)
            else:
                with np.errstate(all="ignore"):
                    into(a, dt, out)
            return True
        return call

    return instr(name, family="elementwise", pipe=Pipe.V, batched=True, operands=ops, params=params,
                 dtype_key=("dst",),
                 static=(vec("dst", "src"), same_dtype("dst", "src"), *static),
                 runtime=(cover("src"),), plain=plain, same_valid=same_valid,
                 plan=plan if into is not None else None)(impl)


def _binary(name: str, fn: Fn, doc: str, *, params: tuple[Param, ...] = (),
            tmp: bool | str = False, static: tuple[Any, ...] = (),
            same_valid: SameValid | None = None, fn_for: dict[str, Fn] | None = None,
            static_for: dict[str, tuple[Any, ...]] | None = None,
            ptoas: Ptoas | None = None) -> Instr:
    """``fn`` a numpy ufunc: the plain form too (see plain_form). ``fn_for`` gives the
    function of a target whose arithmetic differs (the entry's ``impl_for``)."""
    fn, plain = plain_form(fn)
    ops = [_DST, Opnd("src0", "tile"), Opnd("src1", "tile")]
    if tmp:
        ops.append(Opnd("tmp", "tile", "scratch", optional=tmp == "optional"))

    def semantics(f: Fn) -> Callable[..., None]:
        def impl(m: Machine, dst: Tile, src0: Tile, src1: Tile, *rest: Any, **kw: Any) -> None:
            vr, vc = dst.valid_shape
            if vr and vc:
                a = np.asarray(src0.read(vr, vc))
                b = np.asarray(src1.read(vr, vc))
                with np.errstate(all="ignore"):
                    dst.write(f(a, b, dst.dtype))
        return impl

    impl = semantics(fn)
    impl.__doc__ = doc
    return instr(name, family="elementwise", pipe=Pipe.V, batched=True, operands=ops, params=params,
                 dtype_key=("dst",), ptoas=ptoas,
                 static=(vec("dst", "src0", "src1"), same_dtype("dst", "src0", "src1"),
                         *static),
                 runtime=(cover("src0", "src1"),), plain=plain, same_valid=same_valid,
                 static_for=static_for or {},
                 impl_for={t: semantics(f) for t, f in (fn_for or {}).items()})(impl)


def _trem_tmp_a2a3(sig: Sig) -> None:
    """A2/A3 TREM's scratch (PTOAS's verifier): two valid rows, as many valid columns as dst
    (static valid dims only; a dynamic one is the run's)."""
    t, d = sig["tmp"], sig["dst"]
    if not isinstance(t, TileSpec) or not isinstance(d, TileSpec):
        return
    if t.valid_row is not None and t.valid_row < 2:
        raise sig.fail(f"expects A2/A3 tmp valid_shape[0] to be at least 2, got {t.valid_row}")
    if t.valid_col is not None and d.valid_col is not None and t.valid_col < d.valid_col:
        raise sig.fail(f"expects A2/A3 tmp valid_shape[1] to be at least {d.valid_col} (dst "
                       f"valid_shape[1]), got {t.valid_col}")


def _tprelu_tmp_a2a3(sig: Sig) -> None:
    """A2/A3 TPRELU keeps its TCMPS mask in tmp and one more physical row for TSEL's
    (TPRELU.md: tmp valid rows > dst valid rows; PTOAS checks the physical rows)."""
    t, d = sig["tmp"], sig["dst"]
    if isinstance(t, TileSpec) and isinstance(d, TileSpec) and d.valid_row is not None \
            and t.rows < d.valid_row + 1:
        raise sig.fail(f"expects A2/A3 tmp shape[0] to be at least dst valid_shape[0] + 1 "
                       f"({d.valid_row + 1}), got {t.rows}")


def _ternary(name: str, fn: Fn, doc: str, *, static: tuple[Any, ...] = (),
             fn_for: dict[str, Fn] | None = None) -> Instr:
    ops = [_DST, Opnd("src0", "tile"), Opnd("src1", "tile"), Opnd("src2", "tile")]

    def semantics(f: Fn) -> Callable[..., None]:
        def impl(m: Machine, dst: Tile, src0: Tile, src1: Tile, src2: Tile) -> None:
            vr, vc = dst.valid_shape
            if vr and vc:
                with np.errstate(all="ignore"):
                    dst.write(f(np.asarray(src0.read(vr, vc)), np.asarray(src1.read(vr, vc)),
                                np.asarray(src2.read(vr, vc)), dst.dtype))
        return impl

    impl = semantics(fn)
    impl.__doc__ = doc
    return instr(name, family="elementwise", pipe=Pipe.V, batched=True, operands=ops,
                 dtype_key=("dst",),
                 static=(vec("dst", "src0", "src1", "src2"),
                         same_dtype("dst", "src0", "src1", "src2"), *static),
                 runtime=(cover("src0", "src1", "src2"),),
                 impl_for={t: semantics(f) for t, f in (fn_for or {}).items()})(impl)


def _fused(name: str, fn: Fn, doc: str, *, single: bool = False,
           f32_for: tuple[str, ...] = ()) -> Instr:
    """dst is read as well as written: dst = fn(src0, src1, dst), each operation rounded to
    the element type, or (``single``) computed wide and rounded once like an FMA; on the
    targets of ``f32_for`` float types compute in f32, each operation rounded there (C++ float
    arithmetic, f16 promoted), then once to the element type."""
    ops = [Opnd("dst", "tile", "inout"), Opnd("src0", "tile"), Opnd("src1", "tile")]

    def semantics(as_f32: bool) -> Callable[..., None]:
        def impl(m: Machine, dst: Tile, src0: Tile, src1: Tile) -> None:
            vr, vc = dst.valid_shape
            if vr and vc:
                dt = dst.dtype
                a, b, d = (np.asarray(t.read(vr, vc)) for t in (src0, src1, dst))
                if as_f32 and dt.is_float:
                    a, b, d = (x.astype(np.float32) for x in (a, b, d))
                elif single:
                    a, b, d = (to_float(x, dt) for x in (a, b, d))
                with np.errstate(all="ignore"):
                    dst.write(fn(a, b, d).astype(dt.np))
        return impl

    impl = semantics(False)
    impl.__doc__ = doc
    return instr(name, family="elementwise", pipe=Pipe.V, batched=True, operands=ops,
                 dtype_key=("dst",),
                 static=(vec("dst", "src0", "src1"), same_dtype("dst", "src0", "src1")),
                 runtime=(cover("src0", "src1"),),
                 impl_for={t: semantics(True) for t in f32_for})(impl)


_INT = (kinds(("dst", "int")),)
_FLOAT = (kinds(("dst", "float")),)

# ---- tile-tile -----------------------------------------------------------------------------

TABS = _unary("TABS", np.abs, "dst = |src| (integers wrap: |INT_MIN| = INT_MIN).",
              same_valid=SameValid(("src",), NPU))
TNEG = _unary("TNEG", np.negative, "dst = -src (integers wrap).")
TNOT = _unary("TNOT", np.invert, "dst = ~src (bitwise).", static=_INT,
              same_valid=SameValid(("src",), BOTH))
TRELU = _unary("TRELU", lambda a, dt: _relu(a), "dst = max(src, 0).",
               same_valid=SameValid(("src",), BOTH))
TEXP = _unary("TEXP", lambda a, dt: wide_apply(np.exp, a, dt),
              "dst = exp(src); integer tiles (cpu only) compute in double and truncate.",
              params=ALGO, into=lambda a, dt, out: wide_apply(np.exp, a, dt, out),
              pending=lambda p, dt, out: wide_apply_pending(np.exp, p, dt, out), row=np.exp,
              same_valid=SameValid(("src",), NPU))
TLOG = _unary("TLOG", lambda a, dt: _int_or_float(np.log, a, dt),
              "dst = ln(src); ln(0) = -inf, ln(<0) = NaN. Integer tiles (cpu only) compute "
              "std::log in double and truncate toward zero (a non-finite result gives 0).",
              params=ALGO,
              same_valid=SameValid(("src",), NPU))
TSQRT = _unary("TSQRT", lambda a, dt: np.sqrt(to_float(a, dt)).astype(dt.np),
               "dst = sqrt(src) (NaN for negative inputs).", params=ALGO, static=_FLOAT,
               same_valid=SameValid(("src",), NPU))
def _rsqrt(a: np.ndarray, dt: Any) -> np.ndarray:
    """1 / sqrt(a) as the NPU computes it, ``vsqrt`` then ``vdiv`` (the TRSQRT page: "The
    default-precision implementation uses vsqrt + vdiv directly"): the root rounded to dt,
    then its reciprocal rounded again."""
    with np.errstate(all="ignore"):
        root = np.sqrt(to_float(a, dt)).astype(dt.np)
        return (1.0 / to_float(root, dt)).astype(dt.np)


TRSQRT = _unary("TRSQRT", _rsqrt,
                "dst = 1 / sqrt(src), rounded twice as the NPU's vsqrt + vdiv (the root to "
                "the element type, then its reciprocal); the optional tmp tile is accepted "
                "and unused.",
                params=ALGO, tmp=True, static=_FLOAT,
                same_valid=SameValid(("src",), NPU))
TRECIP = _unary("TRECIP", lambda a, dt: _div(np.ones((), dt.np), a, dt),
                "dst = 1 / src (TDIVS(dst, 1, src)); integers divide truncating toward zero.",
                params=ALGO,
                same_valid=SameValid(("src",), NPU))


def _int_or_float(f: Fn, a: np.ndarray, dt: Any) -> np.ndarray:
    if dt.is_float:
        return f(to_float(a, dt)).astype(dt.np)
    r = f(a.astype(np.float64))
    r = np.where(np.isfinite(r), np.trunc(r), 0)
    return wrap_to(r.astype(np.int64), dt)


TSUB = _binary("TSUB", np.subtract, "dst = src0 - src1 (integers wrap).",
               same_valid=SameValid(("src0", "src1"), BOTH))
TMUL = _binary("TMUL", np.multiply, "dst = src0 * src1 (integers wrap).",
               same_valid=SameValid(("src0", "src1"), BOTH))
TDIV = _binary("TDIV", _div,
               "dst = src0 / src1. Integers divide truncating toward zero and wrap "
               "(INT_MIN / -1); integer division by zero is target-defined (ptoisa: 0); float "
               "division by zero follows IEEE (inf/NaN).", params=ALGO,
               same_valid=SameValid(("src0", "src1"), BOTH))
TMAX = _binary("TMAX", npu_max,
               "dst = max(src0, src1) (NaN wins; of equal operands, +0 and -0, src1: vmax's "
               "(src0 > src1) ? src0 : src1). On cpu std::max(src0, src1), the simulator's: "
               "NaN only when src0 is NaN.", fn_for={"cpu": _max_cpu},
               same_valid=SameValid(("src0", "src1"), BOTH))
TMIN = _binary("TMIN", npu_min,
               "dst = min(src0, src1) (NaN wins; of equal operands, +0 and -0, src1: vmin's "
               "(src0 < src1) ? src0 : src1). On cpu std::min(src0, src1), the simulator's: "
               "NaN only when src0 is NaN.", fn_for={"cpu": _min_cpu},
               same_valid=SameValid(("src0", "src1"), BOTH))
TAND = _binary("TAND", np.bitwise_and, "dst = src0 & src1.", static=_INT,
               same_valid=SameValid(("src0", "src1"), BOTH))
TOR = _binary("TOR", np.bitwise_or, "dst = src0 | src1.", static=_INT,
              same_valid=SameValid(("src0", "src1"), BOTH))
TXOR = _binary("TXOR", lambda a, b, dt: np.bitwise_xor(a, b),
               "dst = src0 ^ src1; tmp is scratch (used on a2a3, where XOR is built from "
               "AND/OR/NOT), its contents afterwards are unspecified.", tmp=True, static=_INT,
               same_valid=SameValid(("src0", "src1"), BOTH))
TSHL = _binary("TSHL", lambda a, b, dt: _shift(a, b, dt, True),
               "dst = src0 << src1 (shift counts >= the bit width give 0).", static=_INT,
               same_valid=SameValid(("src0", "src1"), BOTH))
TSHR = _binary("TSHR", lambda a, b, dt: _shift(a, b, dt, False),
               "dst = src0 >> src1, arithmetic for signed types (shift counts >= the bit width "
               "give 0 or -1).", static=_INT,
               same_valid=SameValid(("src0", "src1"), BOTH))
TFMOD = _binary("TFMOD", _fmod,
                "dst = fmod(src0, src1): the remainder with the sign of the dividend (C fmod / "
                "integer %); x fmod 0 is NaN for floats, 0 for integers.", params=ALGO)
TREM = _binary("TREM", _rem_floor,
               "dst = src0 - floor(src0 / src1) * src1: the remainder with the sign of the "
               "divisor; tmp is scratch. On cpu a zero result keeps the dividend's sign (the "
               "simulator adds src1 to fmod's result only when that is not 0).", params=ALGO,
               tmp=True, fn_for={"cpu": _rem_floor_cpu},
               static_for={"a2a3": (_trem_tmp_a2a3,)},
               same_valid=SameValid(("src0", "src1"), BOTH))
TPOW = _binary("TPOW", _pow,
               "dst = pow(base, exp): std::pow for floats, repeated multiplication (wrapping) "
               "for integers; tmp is scratch.", params=ALGO, tmp=True,
               ptoas=Ptoas(materialised={"tmp": "src0"}),
               static_for={"a2a3": (no_high_precision,)},
               same_valid=SameValid(("src0", "src1"),
                                    "General constraints (dst == base, dst == exp)"))
def _addrelu(a: np.ndarray, b: np.ndarray, dt: Any) -> np.ndarray:
    s = np.add(a, b)  # in the element type: rounded (floats), wrapping (i16)
    return np.where(s > 0, s, np.zeros((), s.dtype))


TADDRELU = _binary("TADDRELU", _addrelu,
                   "dst = max(src0 + src1, 0): the sum rounded to the element type (integers "
                   "wrap), then negative values (and -0) become 0 and NaN stays NaN. PTOAS "
                   "lowers pto.taddrelu to the A2/A3 vector instruction VADDRELU (f32, f16, "
                   "i16; designs/a2a3-vpto-elementwise-impl.md); it has no pto-isa intrinsic, "
                   "so it is an A2/A3 instruction here.")
TPRELU = _binary("TPRELU", lambda a, b, dt: np.where(a > 0, a, a * b),
                 "dst = src0 > 0 ? src0 : src0 * src1 (per-element slope); tmp is scratch "
                 "(A2/A3's; A5's TPRELU does not use it).",
                 tmp=True, static=_FLOAT, static_for={"a2a3": (_tprelu_tmp_a2a3,)},
                 same_valid=SameValid(("src0", "src1"), BOTH),
                 ptoas=Ptoas(unplanned={"a5": ("tmp",)}))
TSUBRELU = _binary("TSUBRELU", lambda a, b, dt: _relu(np.subtract(a, b)),
                   "dst = max(src0 - src1, 0).", static=_FLOAT)

TADDC = _ternary("TADDC", lambda a, b, c, dt: a + b + c,
                 "dst = src0 + src1 + src2 (a ternary add, rounded after each add; integers "
                 "wrap). On cpu f16 adds in f32 and rounds once (the simulator's C++ "
                 "arithmetic on half).", fn_for={"cpu": _in_f32(lambda a, b, c: a + b + c)})
TSUBC = _ternary("TSUBC", lambda a, b, c, dt: a - b + c,
                 "dst = src0 - src1 + src2 (rounded after each operation; integers wrap). On "
                 "cpu f16 computes in f32 and rounds once, as the simulator.",
                 fn_for={"cpu": _in_f32(lambda a, b, c: a - b + c)})

TMULADDDST = _fused("TMULADDDST", lambda a, b, d: a * b + d,
                    "dst = src0 * src1 + dst (product rounded, then the sum).")
TFUSEDMULADD = _fused("TFUSEDMULADD", lambda a, b, d: a * d + b,
                      "dst = src0 * dst + src1, fused: rounded once. On cpu as the simulator's "
                      "C++ `src0 * dst + src1` in float: the product and the sum each rounded "
                      "to f32 (f32 rounds twice).", single=True, f32_for=("cpu",))
TFUSEDMULADDRELU = _fused("TFUSEDMULADDRELU", lambda a, b, d: _relu(a * d + b),
                          "dst = max(src0 * dst + src1, 0) (product rounded, then the sum).")

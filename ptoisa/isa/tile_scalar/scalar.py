"""Tile-scalar elementwise instructions (TADDS ... TSUBSC) and the scalar-taking fused ones.

The scalar is a plain Python/numpy number; it is converted to the tile's element type as the
C++ template parameter ``typename TileData::DType scalar`` would be (see ``as_elem``).
Iteration domain: dst's valid region; tile sources must cover it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ...dtypes import dtype
from ...enums import Pipe, TileType
from ...errors import RuntimeCheckError
from ...memory import Machine
from ...ptoas_source import source_rule
from ...tile import Tile, TileSpec
from ..elementwise.common import as_elem, cover, kinds, plain_form
from ..elementwise.unary_binary import (
    ALGO,
    _div,
    _fmod,
    _pow,
    _rem_floor,
    _rem_floor_cpu,
    _shift,
    no_high_precision,
)
from ..registry import (
    Instr,
    Opnd,
    Param,
    PipeForms,
    Sig,
    StaticRule,
    instr,
    locs,
    same_dtype,
    same_type_message,
)
from ..rules import npu_max, npu_min, vec
from ..spelling import Ptoas
from ..valid_region import (
    A2A3,
    A2A3_LIST,
    A5,
    A5_LIST,
    BOTH,
    COMMON,
    NPUS_DIFFER,
    SameValid,
    static_same_valid,
)

_DST = Opnd("dst", "tile", "out")
Fn = Callable[..., Any]

# pto.tadds / tsubs / tmuls / tmaxs / tmins (TAddSOp ... TMinSOp::verify, through
# verifyArithmeticScalarTileOpWithArchDispatch and verifyNumericScalarTileOpCommon, on a2a3 and
# a5) refuse a src or dst outside UB, src first; no lit test shows it, the source does
_PTOAS_VEC = source_rule("lib/PTO/IR/PTO.cpp:verifyScalarTileOp",
                         "expects {} to be in the vec address space")
_PTOAS_VEC_OPS = frozenset({"TADDS", "TSUBS", "TMULS", "TMAXS", "TMINS"})


def _vec_tiles(name: str, src: str) -> StaticRule:
    """dst and ``src`` are Vec tiles; for the ops PTOAS's verifyScalarTileOp checks, in its
    order (src first) and marked as its rule."""
    if name not in _PTOAS_VEC_OPS:
        return vec("dst", src)

    def rule(sig: Sig) -> None:
        for n, said in ((src, "src"), ("dst", "dst")):
            t = sig[n]
            if isinstance(t, TileSpec) and t.loc is not TileType.Vec:
                raise sig.fail(f"{n} must be a Vec tile, got {t.loc.name}", ptoas=_PTOAS_VEC,
                               names=(said,))
    rule.__name__ = f"vec(dst, {src})"
    return rule
_INT = (kinds(("dst", "int")),)
_FLOAT = (kinds(("dst", "float")),)




def _nonneg(ins: Instr, dst: Tile, src: Tile, scalar: Any, *rest: Any, **kw: Any) -> None:
    if scalar < 0:
        raise RuntimeCheckError(f"shift count must be >= 0, got {scalar}", op=ins.mnemonic)


def _scalar_op(name: str, fn: Fn, doc: str, *, params: tuple[Param, ...] = (),
               tmp: bool = False, static: tuple[Any, ...] = (), runtime: tuple[Any, ...] = (),
               src: str = "src", same_valid: SameValid | None = None,
               fn_for: dict[str, Fn] | None = None,
               static_for: dict[str, tuple[Any, ...]] | None = None,
               ptoas: Ptoas | None = None) -> Instr:
    """``fn`` a numpy ufunc: the plain form too, taking the converted scalar (see
    plain_form). ``fn_for``: the function of a target whose arithmetic differs."""
    fn, plain = plain_form(fn)
    ops = [_DST, Opnd(src, "tile"), Opnd("scalar", "scalar")]
    if tmp:
        ops.append(Opnd("tmp", "tile", "scratch"))

    def semantics(f: Fn) -> Callable[..., None]:
        def impl(m: Machine, dst: Tile, s: Tile, scalar: Any, *rest: Any, **kw: Any) -> None:
            vr, vc = dst.valid_shape
            sc = as_elem(scalar, dst.dtype)
            if vr and vc:
                with np.errstate(all="ignore"):
                    dst.write(f(np.asarray(s.read(vr, vc)), sc, dst.dtype))
        return impl

    impl = semantics(fn)
    impl.__doc__ = doc
    return instr(name, family="tile-scalar", pipe=Pipe.V, batched=True, operands=ops,
                 params=params, ptoas=ptoas,
                 dtype_key=("dst",),
                 static=(_vec_tiles(name, src), same_dtype("dst", src), *static),
                 runtime=(cover(src), *runtime), plain=plain,
                 plain_scalar=as_elem if plain is not None else None,
                 same_valid=same_valid, static_for=static_for or {},
                 impl_for={t: semantics(f) for t, f in (fn_for or {}).items()})(impl)


def _txors_tmp_a2a3(sig: Sig) -> None:
    """A2/A3 builds XOR from AND/OR/NOT through tmp: a row-major tile of dst's element type
    (TXORS.md; PTOAS's verifier)."""
    t, d = sig["tmp"], sig["dst"]
    if not isinstance(t, TileSpec):
        return
    if isinstance(d, TileSpec) and t.dtype is not d.dtype:
        raise sig.fail(f"expects tmp to have the same element type as src and dst ({d.dtype}), "
                       f"got {t.dtype}")
    if not t.is_row_major:
        raise sig.fail(f"expects tmp to use row-major layout, got {t.layout_name}")


_TADDS_VALID = SameValid(("src0",), NPUS_DIFFER, rows=A2A3)
# (PTOAS's verifier compares valid rows on A5 too, tadds_validrow_mismatch.pto: a rule of the
# .pto op, docs/ptoas_compat.md)
TADDS = _scalar_op("TADDS", np.add, "dst = src + scalar (integers wrap).", src="src0",
                   same_valid=_TADDS_VALID,
                   ptoas=Ptoas(rules={"pto.tadds": (static_same_valid(_TADDS_VALID, True,
                                                                      True),)}))
TSUBS = _scalar_op("TSUBS", np.subtract, "dst = src - scalar (integers wrap).", src="src0",
                   same_valid=SameValid(("src0",), BOTH))
TMULS = _scalar_op("TMULS", np.multiply, "dst = src * scalar (integers wrap).", src="src0",
                   same_valid=SameValid(("src0",), NPUS_DIFFER, rows=A2A3))
TMAXS = _scalar_op("TMAXS", npu_max, "dst = max(src, scalar) (NaN wins; of +0 and -0, the "
                   "scalar: vmaxs's max as vmax's (src > scalar) ? src : scalar).",
                   same_valid=SameValid(("src",), COMMON))
TMINS = _scalar_op("TMINS", npu_min, "dst = min(src, scalar) (NaN wins; of +0 and -0, the "
                   "scalar).",
                   same_valid=SameValid(("src",), NPUS_DIFFER, rows=A2A3))
TANDS = _scalar_op("TANDS", np.bitwise_and, "dst = src & scalar.", static=_INT,
                   same_valid=SameValid(("src",), A2A3_LIST, rows=A2A3, cols=A2A3))
TORS = _scalar_op("TORS", np.bitwise_or, "dst = src | scalar.", static=_INT,
                  same_valid=SameValid(("src",), A2A3_LIST, rows=A2A3, cols=A2A3))
TXORS = _scalar_op("TXORS", lambda a, s, dt: a ^ s,
                   "dst = src ^ scalar; tmp is scratch (used on a2a3).", tmp=True,
                   static=_INT, src="src0", static_for={"a2a3": (_txors_tmp_a2a3,)},
                   same_valid=SameValid(("src0",), A5_LIST, rows=A5, cols=A5))
TSHLS = _scalar_op("TSHLS", lambda a, s, dt: _shift(a, s, dt, True),
                   "dst = src << scalar (scalar >= 0; counts >= the bit width give 0).",
                   static=_INT, runtime=(_nonneg,),
                   same_valid=SameValid(("src",), BOTH))
TSHRS = _scalar_op("TSHRS", lambda a, s, dt: _shift(a, s, dt, False),
                   "dst = src >> scalar, arithmetic for signed types (scalar >= 0).",
                   static=_INT, runtime=(_nonneg,),
                   same_valid=SameValid(("src",), BOTH))
TLRELU = _scalar_op("TLRELU", lambda a, s, dt: np.where(a > 0, a, a * s),
                    "dst = src > 0 ? src : src * slope (slope in the tile's element type).",
                    static=_FLOAT,
                    same_valid=SameValid(("src",), COMMON))
TFMODS = _scalar_op("TFMODS", lambda a, s, dt: _fmod(a, s, dt),
                    "dst = fmod(src, scalar) (sign of the dividend; integers: C %, x % 0 = 0).",
                    params=ALGO,
                    same_valid=SameValid(("src",), BOTH))
TREMS = _scalar_op("TREMS", lambda a, s, dt: _rem_floor(a, s, dt),
                   "dst = src - floor(src / scalar) * scalar (sign of the divisor); tmp is "
                   "scratch. On cpu a zero result keeps src's sign (the simulator adds the "
                   "scalar to fmod's result only when that is not 0).", params=ALGO, tmp=True,
                   fn_for={"cpu": lambda a, s, dt: _rem_floor_cpu(a, s, dt)},
                   same_valid=SameValid(("src",), BOTH))
TPOWS = _scalar_op("TPOWS", lambda a, s, dt: _pow(a, s, dt),
                   "dst = pow(base, exp) with a scalar exponent (integers: repeated "
                   "multiplication, wrapping); tmp is scratch.", params=ALGO, tmp=True,
                   src="base", ptoas=Ptoas(materialised={"tmp": "base"}),
                   static_for={"a2a3": (no_high_precision,)},
                   same_valid=SameValid(("base",), "General constraints (dst == base)"))


# ---- TDIVS: either operand order -------------------------------------------------------------

def _divs_operands(ins: Instr, dst: Tile, a: Any, b: Any, **kw: Any) -> None:
    if isinstance(a, Tile) == isinstance(b, Tile):
        raise RuntimeCheckError("takes one tile and one scalar: TDIVS(dst, src, scalar) or "
                                "TDIVS(dst, scalar, src)", op=ins.mnemonic)
    src = a if isinstance(a, Tile) else b
    vr, vc = dst.valid_shape
    if src.valid_row < vr or src.valid_col < vc:
        raise RuntimeCheckError(f"src valid region {src.valid_row}x{src.valid_col} does not "
                                f"cover dst valid region {vr}x{vc}", op=ins.mnemonic)


def _divs_types(sig: Sig) -> None:
    for n in ("src0", "scalar"):
        t = sig[n]
        if hasattr(t, "dtype") and hasattr(t, "loc"):
            if t.loc is not TileType.Vec:
                raise sig.fail(f"src must be a Vec tile, got {t.loc.name}")
            if t.dtype is not sig["dst"].dtype:
                raise sig.fail(same_type_message([("dst", sig["dst"].dtype),
                                                  ("src", t.dtype)]))


def _same_storage(a: Tile, b: Tile) -> bool:
    """Whether two tiles start at the same byte (the NPU's pointer test ``dst == src``)."""
    if a is b:
        return True
    if a._buf is None or b._buf is None:  # an unplaced tile has no storage to share yet
        return False
    return bool(a._buf.__array_interface__["data"][0] == b._buf.__array_interface__["data"][0])


def _tdivs_a2a3(m: Machine, dst: Tile, a: Any, b: Any, **kw: Any) -> Any:
    """a2a3's in-place path (dst and src the same storage): multiply by the reciprocal; other
    uses are the common semantics."""
    vr, vc = dst.valid_shape
    dt = dst.dtype
    if vr and vc and isinstance(a, Tile) and dt.is_float and _same_storage(dst, a):
        with np.errstate(all="ignore"):
            inv = (np.float32(1) / np.float32(as_elem(b, dt))).astype(dt.np)
            dst.write((np.asarray(a.read(vr, vc)) * inv).astype(dt.np))
        return None
    return NotImplemented


@instr("TDIVS", family="tile-scalar", pipe=Pipe.V,
       operands=(_DST, Opnd("src0", "any"), Opnd("scalar", "any")), params=ALGO,
       dtype_key=("dst",), static=(vec("dst"), _divs_types), runtime=(_divs_operands,),
       impl_for={"a2a3": _tdivs_a2a3},
       same_valid=SameValid(("src0", "scalar"), BOTH))
def TDIVS(m: Machine, dst: Tile, a: Any, b: Any, **kw: Any) -> None:  # noqa: N802
    """dst = src / scalar, or dst = scalar / src when the scalar comes first. Integers divide
    truncating toward zero (division by zero is target-defined; ptoisa gives 0).

    Float division is IEEE (correctly rounded) on every target, except in place on ``a2a3``:
    when dst and src are the same storage (the NPU tests ``dst == src``), TDIVS(dst, src, s)
    multiplies by the reciprocal, ``dst = src * T(f32(1) / f32(s))`` (a2a3's TDivS.hpp in-place
    path: vmuls, one rounding of the reciprocal and one of the product), which can differ from
    src / s by an ulp. ``cpu`` (the simulator) and ``a5`` (vdiv in registers) divide."""
    vr, vc = dst.valid_shape
    dt = dst.dtype
    if not (vr and vc):
        return
    if isinstance(a, Tile):
        x, y = np.asarray(a.read(vr, vc)), np.full((vr, vc), as_elem(b, dt))
    else:
        x, y = np.full((vr, vc), as_elem(a, dt)), np.asarray(b.read(vr, vc))
    dst.write(_div(x, y, dt))


# ---- TEXPANDS --------------------------------------------------------------------------------

@instr("TEXPANDS", family="tile-scalar", pipe=Pipe.V,
       pipe_of=PipeForms("dst", {"Vec": Pipe.V, "Mat": Pipe.MTE2},
                         why="pto-isa's TEXPANDS and TEXPANDS_MAT (an L1 fill)."),
       operands=(_DST, Opnd("scalar", "scalar")), dtype_key=("dst",),
       static=(locs(["dst"], TileType.Vec, TileType.Mat),))
def TEXPANDS(m: Machine, dst: Tile, scalar: Any) -> None:  # noqa: N802
    """dst[i, j] = scalar over dst's valid region (Vec); a Mat tile is filled entirely."""
    sc = as_elem(scalar, dst.dtype)
    if dst.loc is TileType.Mat:
        dst.fill(sc, dst.rows, dst.cols)
        return
    vr, vc = dst.valid_shape
    if vr and vc:
        dst.fill(sc, vr, vc)


# ---- scalar with two tiles ---------------------------------------------------------------------

def _sc2(name: str, fn: Callable[..., Any], doc: str, same_valid: SameValid) -> Instr:
    """dst = fn(src0, scalar, src1), each operation rounded to the element type; on cpu f16
    computes in f32 and rounds once (the simulator's C++ arithmetic on half)."""
    def semantics(promote: bool) -> Callable[..., None]:
        def impl(m: Machine, dst: Tile, src0: Tile, scalar: Any, src1: Tile) -> None:
            vr, vc = dst.valid_shape
            sc = as_elem(scalar, dst.dtype)
            if vr and vc:
                a, b = np.asarray(src0.read(vr, vc)), np.asarray(src1.read(vr, vc))
                if promote and dst.dtype.name == "f16":
                    a, b, sc = a.astype(np.float32), b.astype(np.float32), np.float32(sc)
                with np.errstate(all="ignore"):
                    dst.write(np.asarray(fn(a, sc, b)).astype(dst.dtype.np))
        return impl

    impl = semantics(False)
    impl.__doc__ = doc
    return instr(name, family="tile-scalar", pipe=Pipe.V, batched=True,
                 operands=(_DST, Opnd("src0", "tile"), Opnd("scalar", "scalar"),
                           Opnd("src1", "tile")),
                 dtype_key=("dst",),
                 static=(vec("dst", "src0", "src1"), same_dtype("dst", "src0", "src1")),
                 runtime=(cover("src0", "src1"),), same_valid=same_valid,
                 impl_for={"cpu": semantics(True)})(impl)


TADDSC = _sc2("TADDSC", lambda a, s, b: a + s + b,
              "dst = src0 + scalar + src1 (rounded after each add; integers wrap). On cpu f16 "
              "adds in f32 and rounds once, as the simulator.",
              same_valid=SameValid(("src0", "src1"), COMMON))
TSUBSC = _sc2("TSUBSC", lambda a, s, b: a - s + b,
              "dst = src0 - scalar + src1 (rounded after each operation; integers wrap). On "
              "cpu f16 computes in f32 and rounds once, as the simulator.",
              same_valid=SameValid(("src0", "src1"), COMMON))


@instr("TAXPY", family="tile-scalar", pipe=Pipe.V,
       operands=(Opnd("dst", "tile", "inout"), Opnd("src0", "tile"), Opnd("scalar", "scalar")),
       dtype_key=("dst", "src0"), static=(vec("dst", "src0"),), runtime=(cover("src0"),),
       same_valid=SameValid(("src0",), "dst and src0 share the valid shape (all targets)"))
def TAXPY(m: Machine, dst: Tile, src0: Tile, scalar: Any) -> None:  # noqa: N802
    """dst = scalar * src0 + dst (dst is read): the product is rounded to dst's element type,
    then the sum. The scalar has src0's element type; an f16 source accumulates into an f32
    dst (source and scalar widened exactly first)."""
    vr, vc = dst.valid_shape
    if not (vr and vc):
        return
    dt = dst.dtype.np
    s = as_elem(scalar, src0.dtype).astype(dt)
    x = np.asarray(src0.read(vr, vc)).astype(dt)
    with np.errstate(all="ignore"):
        dst.write(x * s + np.asarray(dst.read(vr, vc)))


# ---- fused add + convert ---------------------------------------------------------------------

_F16 = dtype("f16")



"""Quantisation in the vector unit: TDEQUANT and TQUANT (MX fp8/fp4 with E8M0 scales, INT8
symmetric/asymmetric)."""

from __future__ import annotations

import warnings
from typing import Any

import ml_dtypes
import numpy as np

from ...dtypes import fp4_encode
from ...enums import Pipe, TileType
from ...errors import ExecutionError, NotExecutedYet, PtoError
from ...memory import Machine
from ...tile import Tile, TileSpec
from ..registry import Instr, Opnd, Param, Sig, except_on, instr, locs, same_dtype
from ..rules import row_major_nd
from ..spelling import Attr, Form, Ptoas
from .common import _fail


def _tdequant_runtime(ins: Instr, dst: Tile, src: Tile, scale: Tile, offset: Tile) -> None:
    if src.valid_shape != dst.valid_shape:
        raise _fail(ins, f"src valid region {src.valid_row}x{src.valid_col} != dst valid "
                    f"region {dst.valid_row}x{dst.valid_col}")
    for n, t in (("scale", scale), ("offset", offset)):
        if t.valid_row < dst.valid_row or t.valid_col < 1:
            raise _fail(ins, f"{n} valid region {t.valid_row}x{t.valid_col} must give one value "
                        f"per dst valid row ({dst.valid_row})")


def _dequant(dst: Tile, src: Tile, scale: Tile, offset: Tile, elementwise: bool) -> None:
    """TDEQUANT's semantics. A parameter tile is read per row (one column broadcast), or with
    ``elementwise`` (the CPU simulator) element by element when its valid region is as wide as
    dst's."""
    vr, vc = dst.valid_shape
    if not (vr and vc):
        return

    def cols(para: Tile) -> int:
        return vc if elementwise and para.valid_col >= vc > 1 else 1

    x = np.asarray(src.read(vr, vc)).astype(np.float32)
    off = np.asarray(offset.read(vr, cols(offset))).astype(np.float32)
    sc = np.asarray(scale.read(vr, cols(scale))).astype(np.float32)
    with np.errstate(all="ignore"):
        dst.write(((x - off) * sc).astype(dst.dtype.np))


def _tdequant_cpu(m: Machine, dst: Tile, src: Tile, scale: Tile, offset: Tile) -> None:
    _dequant(dst, src, scale, offset, elementwise=True)


@instr("TDEQUANT", family="irregular", pipe=Pipe.V,
       operands=(Opnd("dst", "tile", "out"), Opnd("src", "tile"), Opnd("scale", "tile"),
                 Opnd("offset", "tile")),
       dtype_key=("src", "dst"),
       static=(locs(["dst", "src", "scale", "offset"], TileType.Vec),
               row_major_nd("dst", "src"), same_dtype("dst", "scale", "offset")),
       runtime=(_tdequant_runtime,), impl_for={"cpu": _tdequant_cpu})
def TDEQUANT(m: Machine, dst: Tile, src: Tile, scale: Tile, offset: Tile) -> None:  # noqa: N802
    """dst[r, c] = (f32(src[r, c]) - offset[r, 0]) * scale[r, 0] over dst's valid region, in
    f32 arithmetic (each step rounded).

    On cpu a parameter tile whose valid region covers dst's (rather than one column) is read
    element-wise, ``offset[r, c]`` / ``scale[r, c]``, as the CPU simulator does (the manual only
    defines the per-row form; see docs/cpu_sim_differences.md)."""
    _dequant(dst, src, scale, offset, elementwise=False)


# ==== TPREFETCH ===================================================================================


_MX_FMT = {"fp8": (8, 448.0), "fp4": (2, 6.0)}
_MX_ALG = {"OcpMxFp8E4M3": ("fp8", "OCP"), "NvMxFp8E4M3": ("fp8", "NV"),
           "OcpMxFp4E2M1": ("fp4", "OCP"), "NvMxFp4E2M1": ("fp4", "NV")}


def _enum_name(v: Any) -> str:
    return str(getattr(v, "name", v)).rsplit(":", 1)[-1]


def _quant_mode(quant_type: Any, scale_alg: Any, mx_alg: Any) -> tuple[str, str]:
    """(format, algorithm): ('fp8'|'fp4', 'OCP'|'NV') or ('int8', 'SYM'|'ASYM')."""
    if mx_alg is not None:
        name = _enum_name(mx_alg)
        if name not in _MX_ALG:
            raise PtoError(f"unknown mx_alg {name} (expected one of {', '.join(_MX_ALG)})")
        return _MX_ALG[name]
    qt = _enum_name(quant_type)
    alg = _enum_name(scale_alg or "OCP")
    table = {"MXFP8": ("fp8", alg), "MXFP4_E2M1": ("fp4", alg), "INT8_SYM": ("int8", "SYM"),
             "INT8_ASYM": ("int8", "ASYM")}
    if qt not in table:
        raise PtoError(f"unknown quant_type {qt} (expected one of {', '.join(table)})")
    return table[qt]


def _e8m0(mx: np.ndarray, fmt: str, alg: str) -> np.ndarray:
    """Shared exponents (biased, 0..254; 255 = NaN group) of the group maxima ``mx`` (f32).
    OCP: exponent field of the max minus the format's emax (0 for zero/subnormal maxima);
    NV: ceil(log2(max / Vmax)), the quotient rounded to f32 first."""
    emax, vmax = _MX_FMT[fmt]
    with np.errstate(all="ignore"):
        if alg == "OCP":
            ef = ((mx.view(np.uint32) >> 23) & 0xFF).astype(np.int64)
            e = np.where(ef == 0, 0, ef - emax)
        else:
            r = (mx / np.float32(vmax)).astype(np.float32)
            lg = np.ceil(np.log2(np.where(r > 0, r, 1).astype(np.float64)))
            e = np.where(r == 0, -127, np.where(np.isinf(r), 127, lg)) + 127
        e = np.clip(np.nan_to_num(e), 0, 254).astype(np.int64)
    return np.where(np.isnan(mx), 255, e)


def _write_flat(tile: Tile, values: np.ndarray) -> None:
    """Write values in row-major order over the tile's whole static shape (the simulator
    addresses the max/scaling scratch tiles as flat arrays)."""
    full = np.array(tile.read(tile.rows, tile.cols), copy=True).reshape(-1)
    if values.size > full.size:
        raise PtoError(f"{tile.name or 'tile'}: {values.size} groups do not fit a "
                       f"{tile.rows}x{tile.cols} tile")
    full[: values.size] = values.astype(full.dtype, copy=False)
    tile.write(full.reshape(tile.rows, tile.cols))


def _tquant_mx(m: Machine, dst: Tile, src: Tile, exp: Tile, mxt: Tile | None,
               scaling: Tile | None, exp_zz: Tile | None, fmt: str, alg: str, axis: int,
               interleave: bool = False) -> None:
    vr, vc = src.valid_shape
    if fmt == "fp4" and dst.valid_col != vc:
        # PTOAS counts the columns of a !pto.f4E2M1x2 tile in packed pairs (PTO_IR_manual,
        # tile_buf); ptoisa's FP4 tiles count FP4 elements, two to a byte
        raise ExecutionError(
            f"operation 'pto.tquant.mx' cannot be executed by ptoisa yet: its MXFP4 dst has "
            f"{dst.valid_col} valid columns for {vc} source columns (PTOAS's packed-pair "
            "extents of !pto.f4E2M1x2; ptoisa's FP4 tiles count FP4 elements)")
    x = np.asarray(src.read(vr, vc)).astype(np.float32)
    if axis == 1:
        if vc % 32:
            raise PtoError(f"MX groups are 32 columns; src has {vc} valid columns")
        g = x.reshape(vr, vc // 32, 32)
        ax = 2
    else:
        if vr % 32:
            raise PtoError(f"MX groups along axis 0 are 32 rows; src has {vr} valid rows")
        g = x.reshape(vr // 32, 32, vc)
        ax = 1
    with np.errstate(all="ignore"):
        if fmt == "fp8":
            # the fp8 path's max skips NaN elements (an all-NaN group has max 0)
            with warnings.catch_warnings():  # (an all-NaN group: numpy warns, max is 0)
                warnings.simplefilter("ignore", RuntimeWarning)
                mx = np.nan_to_num(np.nanmax(np.abs(g), axis=ax), nan=0.0, posinf=np.inf)
        else:
            mx = np.abs(g).max(axis=ax)
    mx = mx.astype(np.float32)
    e = _e8m0(mx, fmt, alg)
    nan = e == 255
    scale = np.where(nan, np.float32(np.nan),
                     np.ldexp(np.float32(1), 127 - np.where(nan, 127, e))).astype(np.float32)
    with np.errstate(all="ignore"):
        y = (g * (scale[:, :, None] if axis == 1 else scale[:, None, :])).astype(np.float32)
    y = y.reshape(vr, vc)
    if fmt == "fp8":
        q = np.clip(y, -448, 448).astype(ml_dtypes.float8_e4m3fn).view(np.int8)
        if alg == "OCP":
            q = np.where(q == -128, 0, q).astype(np.int8)  # the OCP cast drops the sign of 0
        dst.write(q.astype(dst.dtype.np, copy=False) if not dst.dtype.packed else q)
    else:
        dst.write(fp4_encode(np.nan_to_num(y, nan=6.0), dst.dtype))
    # exponents land at (row, group) (axis 1) or (row group, column) (axis 0), as far as the
    # exp tile reaches
    ex = e.astype(np.uint8)
    if interleave:
        if ex.shape[0] % 2:
            ex = np.concatenate([ex, np.zeros((1, ex.shape[1]), np.uint8)])
        ex = ex.reshape(ex.shape[0] // 2, 2, ex.shape[1]).transpose(0, 2, 1)
        ex = ex.reshape(ex.shape[0], -1)
    ex = ex[: exp.rows, : exp.cols]
    exp.write(ex.astype(exp.dtype.np, copy=False))
    mflat = mx.reshape(-1)
    if fmt == "fp4" and alg == "OCP":
        # the OCP fp4 path keeps its group maxima as bf16 (truncated)
        mflat = (mflat.view(np.uint32) & np.uint32(0xFFFF0000)).view(np.float32)
    if mxt is not None:
        _write_flat(mxt, mflat)
    if scaling is not None:
        _write_flat(scaling, scale.reshape(-1))
    if exp_zz is not None:
        # the ZZ copy is made from the exp tile's storage, read as the row-major exponent matrix
        ez = np.asarray(exp.read(exp.rows, exp.cols)).reshape(-1)[: e.size]
        if ez.size < e.size:
            ez = np.concatenate([ez, np.zeros(e.size - ez.size, ez.dtype)])
        ez = ez.reshape(e.shape).astype(np.uint8)
        if ez.shape[0] % 16 or ez.shape[1] % 2:
            raise PtoError(f"the ZZ exponent layout needs 16x2 exponent boxes; got "
                           f"{ez.shape[0]}x{ez.shape[1]} exponents")
        zz = ez.reshape(ez.shape[0] // 16, 16, ez.shape[1] // 2, 2).transpose(0, 2, 1, 3)
        _write_flat(exp_zz, zz.reshape(-1))


def _tquant_int8(dst: Tile, src: Tile, scale: Tile, offset: Tile | None, alg: str) -> None:
    vr, vc = dst.valid_shape
    x = np.asarray(src.read(vr, vc)).astype(np.float32)
    sc = np.asarray(scale.read(vr, 1)).astype(np.float32)
    with np.errstate(all="ignore"):
        y = (x * sc).astype(np.float32)
        if alg == "ASYM":
            if offset is None:
                raise PtoError("INT8_ASYM needs an offset tile")
            y = (y + np.asarray(offset.read(vr, 1)).astype(np.float32)).astype(np.float32)
        lo, hi = (0, 255) if alg == "ASYM" else (-128, 127)
        q = np.clip(np.nan_to_num(np.rint(y), nan=0.0), lo, hi)
    dst.write(q.astype(dst.dtype.np))


def _tquant_static(sig: Sig) -> None:
    fmt, alg = _quant_mode(sig.params.get("quant_type"), sig.params.get("scale_alg"),
                           sig.params.get("mx_alg"))
    d, s = sig["dst"], sig["src"]
    if not (isinstance(d, TileSpec) and isinstance(s, TileSpec)):
        return
    want = {"fp8": ("i8", "ui8"), "fp4": ("f4E2M1x2",), "int8": ("ui8",) if alg == "ASYM"
            else ("i8",)}[fmt]
    if fmt == "int8":
        # PTOAS writes the offset after the scale (bound to ``scaling``); the eager
        # ``(dst, src, scale, offset)`` call binds it to ``max``
        if alg == "ASYM" and sig["max"] is None and sig["scaling"] is None:
            raise sig.fail("INT8_ASYM quantization requires an offset operand")
        if alg == "SYM" and sig["scaling"] is not None:
            raise sig.fail("INT8_SYM quantization must not have an offset operand")
        if d.dtype.name not in ("i8", "ui8"):
            # (PTOAS's verifier takes either 8-bit integer; pto-isa's TQUANT wants i8 for
            # SYM and ui8 for ASYM, which _tquant_int8_signedness refuses by name)
            raise sig.fail(f"expects dst element type i8/ui8 for INT8_{alg} quantization "
                           f"(got {d.dtype})")
    elif d.dtype.name not in want:
        raise sig.fail(f"{fmt} {alg} quantisation writes a {' or '.join(want)} dst, "
                       f"got {d.dtype}")
    if fmt == "int8" and s.dtype.name != "f32":
        raise sig.fail(f"INT8 quantisation takes an f32 src, got {s.dtype}")
    if fmt == "fp4" and s.dtype.name not in ("f16", "bf16"):
        raise sig.fail(f"MXFP4 quantisation takes an f16 or bf16 src, got {s.dtype}")
    e = sig["exp"]
    if fmt != "int8" and isinstance(e, TileSpec) and e.dtype.name not in ("ui8", "f8E8M0"):
        raise sig.fail(f"exp holds E8M0 exponents (ui8), got {e.dtype}")


def _tquant_int8_signedness(ins: Instr, dst: Tile, src: Tile, *rest: Any,
                            **params: Any) -> None:
    """pto-isa's TQUANT writes an i8 dst for INT8_SYM and a ui8 one for INT8_ASYM (a
    static_assert on every NPU): the other 8-bit type, which PTOAS's verifier lets through,
    has no semantics to execute, so it is refused by name."""
    fmt, alg = _quant_mode(params.get("quant_type"), params.get("scale_alg"),
                           params.get("mx_alg"))
    want = "ui8" if alg == "ASYM" else "i8"
    if fmt == "int8" and dst.dtype.name != want:
        raise NotExecutedYet(
            f"INT8_{alg} with dst element type {dst.dtype.name} (pto-isa's TQUANT writes "
            f"{want} for INT8_{alg}; the {dst.dtype.name} form PTOAS accepts does not "
            "compile there)", op=ins.mnemonic)


def _mx_a5_only(sig: Sig) -> None:
    """MX quantisation is an A5 instruction (PTOAS: 'tquant.mx is only supported on A5')."""
    fmt, _ = _quant_mode(sig.params.get("quant_type"), sig.params.get("scale_alg"),
                         sig.params.get("mx_alg"))
    if fmt != "int8":
        raise sig.fail(f"tquant.mx is only supported on A5, not on {sig.target}")


def _tquant_mx_shapes(sig: Sig) -> None:
    """The MX forms' shapes as PTOAS's verifier takes them (PTO_IR_manual pto.tquant.mx;
    PTOAS's TQuantMxOp verifier, in its order and words): with M x N src valid and R x C its
    storage, axis 1 groups 32 columns (exp / max / scaling [M, N/32], or the flat [1, M*N/32]),
    axis 0 groups 32 rows (exp / max / scaling [M/32, N]; interleaved exp [M/64, 2N]), every
    shape static; then the storage each lowering addresses: the physical columns the grouped
    tiles share with src, capacities, compact prefixes, and the forms the pinned pto-isa does
    not lower. An MXFP4 dst's shapes are PTOAS's, in packed pairs (N/2 valid columns)."""
    fmt, alg = _quant_mode(sig.params.get("quant_type"), sig.params.get("scale_alg"),
                           sig.params.get("mx_alg"))
    if fmt == "int8":
        return
    dn = int(sig.params.get("grp_axis", 1)) == 0
    inter = bool(sig.params.get("interleave"))
    if inter and not dn:
        raise sig.fail("expects interleave to be used only with grpAxis=axis0")
    ez = sig["exp_zz"]
    if ez is not None and dn:
        raise sig.fail("expects the deprecated exp_zz form to use grpAxis=axis1; use pto.tmov "
                       "with a non-scaling tmp for axis0 exponents")
    t = {k: sig[k] for k in ("src", "dst", "exp", "max", "scaling")}
    if not all(isinstance(v, TileSpec) for v in t.values()):
        return
    for k, v in t.items():
        if v.valid_row is None or v.valid_col is None:
            raise sig.fail(f"expects static valid and physical shapes for {k} in MX "
                           "quantization")
    s, d, e, mx, sc = t["src"], t["dst"], t["exp"], t["max"], t["scaling"]
    m, n, big_r, big_c = s.valid_row, s.valid_col, s.rows, s.cols
    if (m if dn else n) % 32:
        raise sig.fail(f"expects src valid_shape[{0 if dn else 1}] to be a multiple of 32 when "
                       f"grpAxis is axis{0 if dn else 1} (got {m}x{n})")
    groups = m * (n // 32)
    if isinstance(ez, TileSpec) and ez.valid_row is not None and ez.valid_col is not None \
            and ez.valid_row * ez.valid_col != groups:
        raise sig.fail("expects exp_zz valid element count to equal MX group count")

    def fail(msg: str, got: TileSpec | None = None) -> None:
        said = f" (got {got.rows}x{got.cols} valid {got.valid_row}x{got.valid_col})" \
            if got is not None else ""
        raise sig.fail(msg + said)

    def grouped(name: str, v: TileSpec) -> None:
        shape = (v.valid_row, v.valid_col)
        if shape == ((m // 32, n) if dn else (m, n // 32)) or \
                (not dn and shape == (1, groups)):
            return
        fail(f"expects {name} valid_shape to match " + (
            "canonical [M/32, N] for grpAxis=axis0" if dn else
            "canonical [M, N/32] or legacy flat [1, M*N/32] for grpAxis=axis1"), v)

    def capacity(name: str, v: TileSpec, need: int, nbytes: bool = False) -> None:
        have = v.rows * v.cols * (v.dtype.itemsize if nbytes else 1)
        if have < need:
            fail(f"expects {name} physical capacity to cover {need} "
                 f"{'bytes' if nbytes else 'elements'}", v)

    def compact(name: str, v: TileSpec) -> None:
        if v.valid_row != 1 and v.cols != v.valid_col:
            fail(f"expects {name} valid elements to form a compact physical prefix", v)

    def align(x: int, a: int) -> int:
        return -(-x // a) * a

    grouped("max", mx)
    grouped("scaling", sc)
    if not inter:
        grouped("exp", e)
    else:
        if m % 64:
            fail("expects src valid rows to be a multiple of 64 when interleave is true", s)
        if big_r % 64:
            fail("expects src physical rows to be a multiple of 64 when interleave is true", s)
        if (e.valid_row, e.valid_col) != (m // 64, 2 * n):
            fail("expects exp valid_shape to match [M/64, 2N] for grpAxis=axis0 with "
                 "interleave=true", e)
    fp4 = fmt == "fp4"
    b16 = s.dtype.name in ("f16", "bf16")
    if fp4 and big_c % 2:
        fail("expects MXFP4 src physical cols to be even for packed destination addressing", s)
    pack = 2 if fp4 else 1
    dn_cols = n // pack
    if (d.valid_row, d.valid_col) != (m, dn_cols):
        fail(f"expects dst valid_shape to be [{m}, {dn_cols}] for MX quantization", d)
    if d.rows < m:
        fail("expects dst physical rows to cover src valid rows", d)
    if dn:
        if fp4:
            if d.cols != big_c // 2:
                fail("expects MXFP4 axis0 dst physical cols to equal src physical cols / 2", d)
            capacity("dst", d, (m - 1) * (big_c // 2) + dn_cols)
            if s.dtype.name == "f16" and (big_c // 2) % 32:
                fail("does not support FP16 MXFP4 axis0 when packed source stride is not a "
                     "multiple of 32 bytes", s)
        else:
            capacity("dst", d, (m - 1) * d.cols + n)
        if mx.cols != big_c:
            fail("expects max physical cols to equal src physical cols for grpAxis=axis0", mx)
        if sc.cols != big_c:
            fail("expects scaling physical cols to equal src physical cols for grpAxis=axis0",
                 sc)
        aux = (m // 32) * big_c
        capacity("max", mx, aux)
        capacity("scaling", sc, aux)
        if not inter:
            if e.cols != big_c:
                fail("expects exp physical cols to equal src physical cols for grpAxis=axis0", e)
            capacity("exp", e, aux)
        else:
            if e.rows != big_r // 64:
                fail("expects interleaved exp physical rows to be src physical rows / 64", e)
            if e.cols != align(2 * big_c, 32):
                fail("expects interleaved exp physical cols to be align32(2 * src physical "
                     "cols)", e)
        if s.dtype.name == "f32" and inter:
            fail("does not support FP32 interleave with the pinned pto-isa revision", s)
    else:
        if d.cols != big_c // pack:
            fail("expects MXFP4 axis1 dst physical cols to equal src physical cols / 2" if fp4
                 else "expects MXFP8 axis1 dst physical cols to equal src physical cols", d)
        capacity("dst", d, (m - 1) * (big_c // pack) + dn_cols)
        compact("max", mx)
        compact("scaling", sc)
        capacity("max", mx, groups)
        if e.rows == 1:
            if big_c != n:
                fail("expects axis1 flat exp to use a tight source with physical cols equal "
                     "to valid cols", s)
            if (e.valid_row, e.valid_col) != (1, groups):
                fail("expects axis1 flat exp valid_shape to match legacy flat [1, M*N/32]", e)
            capacity("exp", e, groups)
            unroll = big_r * big_c > 1024 and (big_r * big_c) % 256 == 0 \
                and (m * big_c) % 256 == 0
            if s.dtype.name == "f32":
                what = "axis1 flat unrolled f32 scaling" if unroll else "axis1 flat f32 scaling"
                capacity(what, sc, align(groups * (2 if unroll else 1), 64) * 4, nbytes=True)
            elif alg == "OCP":
                capacity("axis1 flat B16 OCP scaling", sc, align(groups, 128) * 2, nbytes=True)
            else:
                fail("does not support axis1 flat B16 NV quantization with the pinned pto-isa "
                     "revisions", s)
        else:
            if e.valid_row == 1:
                fail("expects legacy flat exp to use physical rows == 1", e)
            if b16:
                fail("does not support axis1 canonical 2D B16 quantization with the pinned "
                     "pto-isa revision", s)
            if (e.valid_row, e.valid_col) != (m, n // 32):
                fail("expects exp valid_shape to match canonical [M, N/32] for grpAxis=axis1", e)
            if e.rows < m or e.cols < n // 32:
                fail("expects axis1 canonical exp physical shape to cover [M, N/32]", e)
            capacity("exp", e, (m - 1) * e.cols + n // 32)
            capacity("scaling", sc, groups)
    if b16 and n < big_c and 128 % big_c == 0 and (m * big_c) % 128:
        fail("does not support padded B16 source whose VL-aligned padding store has an "
             "incomplete final VL", s)


def _tquant_int8_ptoas(sig: Sig) -> None:
    """``pto.tquant`` (PTO_IR_manual): the offset is the third input (bound to ``scaling``),
    required by INT8_ASYM; a second out is the scratch tmp (bound to ``max``)."""
    _, alg = _quant_mode(sig.params.get("quant_type"), sig.params.get("scale_alg"),
                         sig.params.get("mx_alg"))
    if alg == "ASYM" and sig["scaling"] is None:
        raise sig.fail("INT8_ASYM quantization requires an offset operand")


def _tquant_a2a3_operands(sig: Sig) -> None:
    """``pto.tquant`` on A2/A3 (PTO_IR_manual): fp and offset are per-row broadcast tiles
    (not row-major, dst's valid rows, one valid column) and an explicit tmp has src's
    element type, shape and valid shape (A5 broadcasts natively and takes tmp as a
    placeholder)."""
    fmt, _ = _quant_mode(sig.params.get("quant_type"), sig.params.get("scale_alg"),
                         sig.params.get("mx_alg"))
    d, s, tmp = sig["dst"], sig["src"], sig["max"]
    if fmt != "int8" or not (isinstance(d, TileSpec) and isinstance(s, TileSpec)):
        return
    for name, t in (("fp", sig["exp"]), ("offset", sig["scaling"])):
        if not isinstance(t, TileSpec):
            continue
        if t.is_row_major:
            raise sig.fail(f"expects A2/A3 {name} to use non-row-major layout")
        if None not in (t.valid_row, t.valid_col, d.valid_row) and \
                (t.valid_row != d.valid_row or t.valid_col != 1):
            raise sig.fail(f"expects A2/A3 {name} valid_shape to be [{d.valid_row}, 1] "
                           f"(a value per dst row), got [{t.valid_row}, {t.valid_col}]")
    if isinstance(tmp, TileSpec) and (tmp.dtype, tmp.rows, tmp.cols, tmp.valid_row,
                                      tmp.valid_col) != (s.dtype, s.rows, s.cols, s.valid_row,
                                                         s.valid_col):
        raise sig.fail(f"expects A2/A3 tmp to have the same shape as src (tmp {tmp.dtype} "
                       f"{tmp.rows}x{tmp.cols} valid {tmp.valid_row}x{tmp.valid_col}, src "
                       f"{s.dtype} {s.rows}x{s.cols} valid {s.valid_row}x{s.valid_col})")


@instr("TQUANT", family="irregular", pipe=Pipe.V,
       ptoas=Ptoas(
           # INT8 only: ins(src, fp[, offset]) {quant_type}: fp is the scale, offset the last;
           # MX: ins(src) outs(dst, exp, max, scaling[, exp_zz]) (PTO_IR_manual pto.tquant.mx)
           # INT8 with the A2/A3 scratch: outs(dst, tmp), tmp bound to max (the eager
           # (dst, src, scale, tmp, offset) order)
           forms={"pto.tquant": (Form(inputs=("src", "exp")),
                                 Form(inputs=("src", "exp", "scaling")),
                                 Form(inputs=("src", "exp"), outs=("dst", "max")),
                                 Form(inputs=("src", "exp", "scaling"), outs=("dst", "max"))),
                  "pto.tquant.mx": (Form(inputs=("src",), outs=("dst", "exp", "max", "scaling")),
                                    Form(inputs=("src",),
                                         outs=("dst", "exp", "max", "scaling", "exp_zz")))},
           attrs={"quant_type": Attr("quant_type"),
                  "quantScaleAlg": Attr("scale_alg", values={"ocp": "OCP", "nv": "NV"}),
                  "grpAxis": Attr("grp_axis", values={"axis0": 0, "axis1": 1}),
                  "storeMode": Attr("store_mode", values={"nd": "ND", "nz": "NZ"}),
                  "interleave": Attr("interleave")},
           rules={"pto.tquant.mx": (_tquant_mx_shapes,),
                  "pto.tquant": (_tquant_int8_ptoas, except_on("a5", _tquant_a2a3_operands))}),
       operands=(Opnd("dst", "tile", "out"), Opnd("src", "tile"), Opnd("exp", "tile", "inout"),
                 Opnd("max", "tile", "inout", optional=True),
                 Opnd("scaling", "tile", "inout", optional=True),
                 Opnd("exp_zz", "tile", "inout", optional=True)),
       params=(Param("quant_type", None), Param("scale_alg", None), Param("store_mode", None),
               Param("grp_axis", 1), Param("mx_alg", None), Param("interleave", False)),
       dtype_key=("src", "dst"),
       static=(locs(["dst", "src", "exp", "max", "scaling", "exp_zz"], TileType.Vec),
               row_major_nd("dst", "src"), _tquant_static),
       runtime=(_tquant_int8_signedness,),
       static_for={"a2a3": (_mx_a5_only,)})
def TQUANT(m: Machine, dst: Tile, src: Tile, exp: Tile, max: Tile | None = None,  # noqa: A002,N802
           scaling: Tile | None = None, exp_zz: Tile | None = None, *, quant_type: Any,
           scale_alg: Any, store_mode: Any, grp_axis: Any, mx_alg: Any,
           interleave: Any = False) -> None:
    """Quantise src. MX (MXFP8 e4m3 / MXFP4 e2m1, groups of 32 along columns, or rows with
    ``grp_axis=0``): operands ``(dst, src, exp, max, scaling[, exp_zz])``; per group the
    maximum magnitude (``max``, flat), the E8M0 shared exponent (``exp``, per row and group, or
    per row group and column) from it (OCP: exponent of the max minus emax; NV: ceil(log2(max /
    Vmax))), ``scaling = 2**(127 - exp)`` (flat) and ``dst = cast(src * scaling)`` (round to
    nearest even, saturating; NaN groups have exponent 255). ``exp_zz`` (store_mode NZ) gets the
    exponents in 16x2 ZZ boxes. ``interleave`` (axis 0 only) writes the exponents of row groups
    2p and 2p + 1 side by side: ``exp[p, 2c + k] = e[2p + k, c]`` (0 for a missing last
    group); max and scaling keep their layout. INT8: operands ``(dst, src, scale[,
    offset])`` or ``(dst, src, scale, tmp, offset)``; ``dst = saturate(rint(src * scale[r]
    (+ offset[r])))``, i8 for INT8_SYM, ui8 for INT8_ASYM; ``tmp`` (the A2/A3 scratch) is
    not needed here."""
    fmt, alg = _quant_mode(quant_type, scale_alg, mx_alg)
    if fmt == "int8":
        offset = scaling if scaling is not None else max
        _tquant_int8(dst, src, exp, offset if alg == "ASYM" else None, alg)
        return
    if exp_zz is None and _enum_name(store_mode or "ND") == "NZ":
        raise PtoError("store_mode NZ needs the exp_zz operand")
    _tquant_mx(m, dst, src, exp, max, scaling, exp_zz, fmt, alg, int(grp_axis),
               bool(interleave))

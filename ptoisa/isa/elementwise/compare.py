"""Predicate masks: TCMP / TCMPS produce them, TSEL / TSELS consume them.

Encoding (model.md section 8; the predicate dtype is target-defined: u8 on a2a3, u32 on a5,
either on cpu): one bit per compared element, row by row; the bits of row r are packed
LSB-first into the bytes of mask row r (so a u32 word w holds columns 32w..32w+31 and a u8
byte w columns 8w..8w+7).

TSELS reads that layout on every target. TSEL does on a2a3/a5; the cpu target reproduces the
upstream CPU simulator, which reads the mask as one continuous LSB-first bit stream over dst's
valid region, taking 8 bits from each mask element (even a u32 one) and moving to the next
mask row after ``mask.validCol`` elements. TCMP writes the per-row layout on every target;
TCMPS does on a2a3/a5, and on cpu writes the simulator's stream (see :func:`_pack_stream`).
The target's ``predicate_layout`` trait chooses ("rows" or "cpu_sim"); ``cmp_i32_eq_only``
says whether int32 sources compare for equality only (a2a3); ``predicate_whole_stores`` (a5)
whether a row's bits are written with whole predicate stores, the rest of each store 0.

a5's per-row layout is its TCmp.hpp / TCmps.hpp (pto-isa, since 2026-04-28): row r's bits are
stored at dst + r * dst.Cols * sizeof(dst element) bytes whatever dst's element type (ui32, or
the i8 / ui8 tiles PTOAS uses). Their earlier code wrote the bits as one stream over the
valid region (pto-isa 569a5e23 changed that); ptoisa follows the current code. PTOAS's a5
TileLib (the ``vpto`` backend: the ``tcmps_predicate_stream`` trait) writes TCMPS as a packed
stream instead (ptoisa/isa/tile_scalar/compare.py ``_pack_tilelib``), which is what the
golden of PTOAS's tilelang smoke tcmps shows; its TCMP, TSEL and TSELS keep the rows.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...enums import CmpMode, Pipe
from ...errors import RuntimeCheckError
from ...memory import Machine, current
from ...tile import Tile, TileSpec
from ..registry import Instr, Opnd, Sig, instr, same_dtype
from ..rules import vec
from ..spelling import CMP_MODE, Ptoas
from .common import cover

_CMP = {
    CmpMode.EQ: np.equal, CmpMode.NE: np.not_equal, CmpMode.LT: np.less,
    CmpMode.LE: np.less_equal, CmpMode.GT: np.greater, CmpMode.GE: np.greater_equal,
}




def _pack(m: Machine, dst: Tile, bits: np.ndarray, src_bytes: int = 4) -> None:
    """Write a (rows, cols) boolean predicate into dst, packed per row (a source of
    ``src_bytes``-byte elements: the store size of ``predicate_whole_stores``)."""
    if m.target.traits.predicate_layout == "cpu_sim":  # the simulator zeroes the whole tile
        dst.fill(0, dst.rows, dst.cols)
    rows, cols = bits.shape
    if rows == 0 or cols == 0:
        return
    per = dst.dtype.bits
    words = -(-cols // per)
    nbytes = words * dst.dtype.itemsize
    packed = np.packbits(bits, axis=1, bitorder="little")
    buf = np.zeros((rows, nbytes), np.uint8)
    buf[:, : packed.shape[1]] = packed
    vals = np.ascontiguousarray(buf).view(dst.dtype.np)
    n = min(words, dst.valid_col)
    if m.target.traits.predicate_whole_stores and src_bytes <= 4:
        lanes, store = (256, 32) if src_bytes == 1 else (128, 16)
        span = min(-(-cols // lanes) * store // dst.dtype.itemsize, dst.cols)
        if span > n:  # (the bits past ``cols`` are 0 in those stores)
            whole = np.zeros((rows, span), dst.dtype.np)
            k = min(words, span)
            whole[:, :k] = vals[:, :k]
            vals, n = whole, span
    dst.write(vals[:, :n])


def _pack_stream(dst: Tile, src: Tile, bits: np.ndarray) -> None:
    """The CPU simulator's TCMPS layout: the predicate of src's valid region is placed in a
    src.Rows x src.Cols bit matrix (0 elsewhere), whose rows are packed whole (Cols // 8
    bytes each, LSB-first) into one byte stream; byte c goes to dst element
    (c // dst.validCol, c % dst.validCol) when that lies in dst's valid region (bytes past it
    are dropped), one byte per dst element; the rest of dst is zero."""
    dst.fill(0, dst.rows, dst.cols)
    dr, dc = dst.valid_shape
    if dr == 0 or dc == 0:
        return
    full = np.zeros((src.rows, src.cols), bool)
    full[: bits.shape[0], : bits.shape[1]] = bits
    per_row = src.cols // 8  # the simulator's bits_per_row = W / 8 (a remainder is dropped)
    stream = np.packbits(full[:, : per_row * 8], axis=1, bitorder="little").reshape(-1)
    n = min(stream.size, dr * dc)
    if n == 0:
        return
    vals = stream[:n].astype(dst.dtype.np)
    whole, rest = divmod(n, dc)
    if whole:
        dst.write(vals[: whole * dc].reshape(whole, dc))
    if rest:
        dst.write(vals[whole * dc:].reshape(1, rest), whole, 0)


def _mask_words(ins: Instr, dst: Tile, src: Tile) -> None:
    vr = dst.valid_row
    if src.valid_row != vr:
        raise RuntimeCheckError(f"src0 valid rows {src.valid_row} != dst valid rows {vr}",
                                op=ins.mnemonic)
    need = -(-src.valid_col // dst.dtype.bits)
    if dst.valid_col < need:
        raise RuntimeCheckError(
            f"dst valid cols {dst.valid_col} cannot hold {src.valid_col} predicate bits "
            f"({need} {dst.dtype} elements per row needed)", op=ins.mnemonic)


def _tcmp_runtime(ins: Instr, dst: Tile, src0: Tile, src1: Any, *rest: Any, **kw: Any) -> None:
    if not (ins.name == "TCMPS" and current().target.traits.predicate_layout == "cpu_sim"):
        _mask_words(ins, dst, src0)
    if isinstance(src1, Tile) and (src1.valid_row < src0.valid_row
                                   or src1.valid_col < src0.valid_col):
        raise RuntimeCheckError(
            f"src1 valid region {src1.valid_row}x{src1.valid_col} does not cover src0 valid "
            f"region {src0.valid_row}x{src0.valid_col}", op=ins.mnemonic)


def _pred_dst(sig: Sig) -> None:
    d = sig["dst"]
    if d is not None and d.dtype.name not in ("ui8", "i8", "ui32"):
        raise sig.fail(f"dst is a predicate tile and must be ui8, i8 or ui32, got {d.dtype}")


def _mode(m: Machine, src: Tile, mode: CmpMode) -> CmpMode:
    # A2/A3 compares int32 only for equality (tcmp.md: other modes fall back to EQ). NE stays
    # NE: the a2a3 implementation computes every NE as EQ and then inverts the mask (vnot), for
    # int32 too, so only LT/GT/LE/GE become EQ.
    if m.target.traits.cmp_i32_eq_only and src.dtype.name == "i32" and mode is not CmpMode.NE:
        return CmpMode.EQ
    return mode


@instr("TCMP", family="elementwise", pipe=Pipe.V,
       ptoas=Ptoas(attrs={"cmpMode": CMP_MODE}),
       operands=(Opnd("dst", "tile", "out"), Opnd("src0", "tile"), Opnd("src1", "tile"),
                 Opnd("cmpMode", "enum", enum=CmpMode, optional=True)),
       dtype_key=("src0", "dst"),
       static=(vec("dst", "src0", "src1"), same_dtype("src0", "src1"), _pred_dst),
       runtime=(_tcmp_runtime,))
def TCMP(m: Machine, dst: Tile, src0: Tile, src1: Tile,  # noqa: N802
         cmpMode: CmpMode | None = None) -> None:  # noqa: N803
    """dst = packed predicate (src0 cmpMode src1) over src0's valid region (default EQ). On
    a2a3 int32 sources are compared for equality when cmpMode is LT/GT/LE/GE (hardware; NE
    is the inverted EQ mask there, so it stays NE)."""
    vr, vc = src0.valid_shape
    mode = _mode(m, src0, cmpMode or CmpMode.EQ)
    with np.errstate(invalid="ignore"):
        bits = _CMP[mode](np.asarray(src0.read(vr, vc)), np.asarray(src1.read(vr, vc)))
    _pack(m, dst, bits, src0.dtype.itemsize)


# ---- selection ---------------------------------------------------------------------------------

def _row_bits(ins: Instr, mask: Tile, vr: int, vc: int) -> np.ndarray:
    """(vr, vc) selection bits in the per-row packed layout."""
    per = mask.dtype.bits
    need = -(-vc // per)
    if mask.valid_row < vr or mask.valid_col < need:
        raise RuntimeCheckError(
            f"mask valid region {mask.valid_row}x{mask.valid_col} holds fewer than {vr} rows "
            f"of {vc} predicate bits ({need} {mask.dtype} elements per row)", op=ins.mnemonic)
    words = np.ascontiguousarray(mask.read(vr, need))
    raw = words.view(np.uint8).reshape(vr, -1)
    return np.unpackbits(raw, axis=1, bitorder="little")[:, :vc].astype(bool)


def _stream_bits(ins: Instr, mask: Tile, vr: int, vc: int) -> np.ndarray:
    """The CPU simulator's TSEL reading: 8 bits per mask element, continuous over rows."""
    mr, mc = mask.valid_shape
    need = -(-(vr * vc) // 8)
    if mr * mc < need:
        raise RuntimeCheckError(
            f"mask valid region {mr}x{mc} provides {mr * mc * 8} predicate bits, dst valid "
            f"region {vr}x{vc} needs {vr * vc}", op=ins.mnemonic)
    elems = np.asarray(mask.read(mr, mc)).reshape(-1)[:need]
    low = (elems.astype(np.uint64) & np.uint64(0xFF)).astype(np.uint8)
    return np.unpackbits(low, bitorder="little")[: vr * vc].reshape(vr, vc).astype(bool)


def _pred_mask(sig: Sig) -> None:
    mk = sig["mask"]
    if mk is not None and not mk.dtype.is_int:
        raise sig.fail(f"mask must be an integer predicate tile, got {mk.dtype}")


def _tsel_tmp_a2a3(sig: Sig) -> None:
    """A2/A3 copies each row's compare mask into tmp: 16 bytes for 16-bit data, 8 for 32-bit
    (TSEL.md; PTOAS checks tmp's capacity)."""
    t, d = sig["tmp"], sig["dst"]
    if not isinstance(t, TileSpec) or not isinstance(d, TileSpec):
        return
    need = 16 if d.dtype.itemsize == 2 else 8
    have = t.rows * t.cols * t.dtype.itemsize
    if have < need:
        raise sig.fail(f"expects tmp capacity to be at least {need} bytes, but got {have} bytes")


@instr("TSEL", family="elementwise", pipe=Pipe.V,
       operands=(Opnd("dst", "tile", "out"), Opnd("mask", "tile"), Opnd("src0", "tile"),
                 Opnd("src1", "tile"), Opnd("tmp", "tile", "scratch", optional=True)),
       dtype_key=("dst",),
       static=(vec("dst", "mask", "src0", "src1"), same_dtype("dst", "src0", "src1"),
               _pred_mask),
       static_for={"a2a3": (_tsel_tmp_a2a3,)},
       runtime=(cover("src0", "src1"),))
def TSEL(m: Machine, dst: Tile, mask: Tile, src0: Tile, src1: Tile,  # noqa: N802
         tmp: Tile | None = None) -> None:
    """dst = mask bit ? src0 : src1 over dst's valid region (mask layout: module doc; the cpu
    target reads it as the CPU simulator does). tmp is scratch (a2a3)."""
    vr, vc = dst.valid_shape
    if not (vr and vc):
        return
    read = _stream_bits if m.target.traits.predicate_layout == "cpu_sim" else _row_bits
    bits = read(TSEL, mask, vr, vc)
    dst.write(np.where(bits, np.asarray(src0.read(vr, vc)), np.asarray(src1.read(vr, vc))))



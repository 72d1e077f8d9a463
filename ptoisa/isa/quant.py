"""Fix-pipe quantisation shared by TSTORE_FP, TSTORE with a scalar quant word, and (later)
TMOV_FP / TEXTRACT_FP / TINSERT_FP.

A quant word is a uint64 (spec/notes/seeds_check.md section 3, ``quantize_element``):

* vector modes (one word per output column): scale = the 19-bit float in bits [13..31]
  (sign, 8-bit exponent with bias 127, 10-bit mantissa; exponent and mantissa both 0 means 0);
* scalar modes: scale = the low 32 bits as an IEEE f32;
* offset = bits [37..45] (9 bits, unsigned), sign = bit 46 (1: signed 8-bit output range
  [-128, 127], 0: [0, 255]); shift (i32 -> i16) = bits [32..35] + 1.

Arithmetic: B8 modes ``clamp(rint(x*scale + offset))`` with ties to even; i32 -> f16
``clamp(x*scale, +-65504)``; i32 -> i16 arithmetic shift then *saturation* (the hardware; the
upstream CPU simulator wraps first). ReLU, when enabled, is applied to the converted value, the
order of the fix-pipe's pre-stage (quant, then relu) which the CPU simulator also follows.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import dtypes as D
from ..dtypes import DType
from ..errors import ExecutionError, NotExecutedYet, PtoError
from ..targets import TargetLike, Traits, get_target

#: the scalar quant word (TSTORE's preQuantScalar) also scales f32 -> f16/bf16 (QF322F16 ...).
SCALAR_EXTRA_PAIRS = {("f32", "f16"), ("f32", "bf16")}


def _quant_pairs(target: TargetLike | Traits) -> frozenset[tuple[str, str]]:
    if isinstance(target, Traits):
        return target.quant_pairs
    try:
        return get_target(target).traits.quant_pairs
    except PtoError:  # an unknown name: nothing quantises
        return frozenset()


def quant_mode(target: TargetLike | Traits, src: DType, dst: DType, *,
               scalar: bool = False) -> str | None:
    """'B8', 'DEQF16', 'SHIFT16', 'FLOAT' (scale then convert), or None (plain conversion).
    The pairs that quantise are the target's ``quant_pairs`` trait (``target`` is a Target,
    its traits, or its name)."""
    pair = (src.name, dst.name)
    if pair not in _quant_pairs(target) and not (scalar and pair in SCALAR_EXTRA_PAIRS):
        return None
    if dst.name in ("i8", "ui8"):
        return "B8"
    if pair == ("i32", "f16"):
        return "DEQF16"
    if pair == ("i32", "i16"):
        return "SHIFT16"
    return "FLOAT"


def fp_words(fp: Any, n: int, first: int = 0, *, raw: bool = False) -> np.ndarray:
    """The ``n`` 64-bit quant words of a Scaling tile from column ``first``: row 0 of a tile
    of 64-bit integers. PTOAS programs also write f32 / f16 scaling tiles: with ``raw`` (the
    target's ``fp_tile_words``, the NPU) the fix-pipe reads the tile's bytes from its start as
    the words (FPC holds the tile's address; an f32 1.0 in a word's low half is scale 1.0),
    else each element is cast to a uint64 word, as the CPU simulator does."""
    dt = fp.dtype.np
    if dt.itemsize == 8 and dt.kind in "iu":
        return np.asarray(fp.read(1, n, 0, first)).view(np.uint64)
    if not raw:
        w = np.asarray(fp.read(1, n, 0, first))
        return w.astype(np.float64).astype(np.int64).view(np.uint64)
    if first:
        # (FPC's address unit is 128 bytes and the backends offset it by first elements of
        # the tile's type: which words an offset reaches is not settled here)
        raise ExecutionError(f"the quant words of a {fp.dtype.name} Scaling tile from column "
                             f"{first} cannot be read by ptoisa yet (only from its start)")
    raw_bytes = np.ascontiguousarray(fp.storage).view(np.uint8)
    if raw_bytes.size < 8 * n:
        # (the fix-pipe reads on past the tile, into Scaling-buffer bytes this program never
        # wrote: what they hold is not known, so the use is refused by name)
        raise NotExecutedYet(f"the {fp.dtype.name} Scaling tile holds {raw_bytes.size // 8} "
                             f"64-bit quant words, {n} columns need one each: the fix-pipe "
                             "would read the quant words of the rest from Scaling-buffer "
                             "bytes past the tile, which nothing wrote")
    return raw_bytes[: 8 * n].view(np.uint64).reshape(1, n)


def decode_vector_scale(words: np.ndarray) -> np.ndarray:
    """The 19-bit scale of vector quant words, as float64."""
    w = words.astype(np.uint64)
    field = (w >> np.uint64(13)) & np.uint64(0x7FFFF)
    sign = (field >> np.uint64(18)).astype(np.int64)
    exp = ((field >> np.uint64(10)) & np.uint64(0xFF)).astype(np.int64)
    man = (field & np.uint64(0x3FF)).astype(np.float64)
    val = (1.0 + man / 1024.0) * np.exp2(exp.astype(np.float64) - 127.0)
    val = np.where((exp == 0) & (man == 0), 0.0, val)
    return np.where(sign == 1, -val, val)


def decode_scalar_scale(words: np.ndarray) -> np.ndarray:
    w = words.astype(np.uint64)
    lo = (w & np.uint64(0xFFFFFFFF)).astype(np.uint32)
    return lo.view(np.float32).astype(np.float64)


def decode_offset_sign(words: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    w = words.astype(np.uint64)
    offset = ((w >> np.uint64(37)) & np.uint64(0x1FF)).astype(np.float64)
    signed = ((w >> np.uint64(46)) & np.uint64(1)).astype(bool)
    return offset, signed


def quantize(x: np.ndarray, words: np.ndarray, mode: str | None, dst: DType, *,
             vector: bool, relu: bool) -> np.ndarray:
    """Convert ``x`` (src values, 2-D) with per-column ``words`` (broadcastable) to ``dst``."""
    if mode is None:
        y = x
        if relu:
            y = np.maximum(y, np.zeros((), y.dtype))
        return convert(y, dst)
    xf = x.astype(np.float64)
    if mode == "SHIFT16":
        shift = ((words.astype(np.uint64) >> np.uint64(32)) & np.uint64(0xF)).astype(np.int64) + 1
        r = np.right_shift(x.astype(np.int64), shift)
        r = np.clip(r, -32768, 32767)
        out = r.astype(np.int16)
        return np.maximum(out, 0).astype(np.int16) if relu else out
    scale = decode_vector_scale(words) if vector else decode_scalar_scale(words)
    if mode == "B8":
        offset, signed = decode_offset_sign(words)
        lo = np.where(signed, -128.0, 0.0)
        hi = np.where(signed, 127.0, 255.0)
        # float32 arithmetic as the fix-pipe computes it, then rint (ties to even)
        prod = xf.astype(np.float32) * scale.astype(np.float32) + offset.astype(np.float32)
        q = np.clip(np.rint(prod).astype(np.float64), lo, hi)
        if relu:
            q = np.maximum(q, 0.0)
        return q.astype(np.int64).astype(dst.np)
    prod = xf.astype(np.float32) * scale.astype(np.float32)
    if mode == "DEQF16":
        prod = np.clip(prod, -65504.0, 65504.0)
    if relu:
        prod = np.maximum(prod, np.float32(0))
    return convert(prod, dst)


def convert(y: np.ndarray, dst: DType) -> np.ndarray:
    """Plain conversion to ``dst``: round to nearest even for floats, saturating to the finite
    range for fp8 (which has no infinity) and HiF8, truncation toward zero for float -> int."""
    if dst.name == "hif8":  # nearest (ties to the even code), saturating like fp8 e4m3
        return D.hif8_encode(y.astype(np.float64), "rint", saturate=True)
    if y.dtype == dst.np:
        return y
    if dst.name == "f8E4M3":
        lo, hi = D.finfo_limits(dst)
        return np.clip(y.astype(np.float32), lo, hi).astype(dst.np)
    if dst.is_int and y.dtype.kind == "f":
        ii = np.iinfo(dst.np)
        with np.errstate(invalid="ignore"):
            t = np.trunc(y.astype(np.float64))
            t = np.nan_to_num(t, nan=0.0, posinf=ii.max, neginf=ii.min)
            return np.clip(t, ii.min, ii.max).astype(dst.np)
    return y.astype(dst.np)

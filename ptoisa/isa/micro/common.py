"""What the micro-op modules share: how masked lanes come out, operand rules over register
types, element arithmetic in the register's type."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ... import dtypes as D
from ...vector.regs import VREG_BYTES, Mask, MaskSpec, VReg, VRegSpec
from ..registry import Sig, StaticRule

#: the pipe families of the chapter headers: vector ops on PIPE_V, DMA on MTE2 / MTE3


def active(mask: Mask, n: int) -> np.ndarray:
    """The active lanes of a register of ``n`` lanes under ``mask`` (one bool per lane; a
    mask of several rows, one per iteration of a batched loop, gives one row each)."""
    return mask.bits[..., :: VREG_BYTES // n] if n <= VREG_BYTES \
        else np.repeat(mask.bits, 2, axis=-1)


def zeroing(values: np.ndarray, mask: Mask) -> VReg:
    """A result register under the native predication (vpto-spec.md "Predication
    Behavior"): inactive lanes are zero. (``values`` may have a leading axis of rows, one
    per iteration of a batched loop: ``interp/vbatch.py``; the lanes are the last axis.)"""
    n = values.shape[-1]
    on = active(mask, n)
    # (a mask that says it is full says so of its own lanes: read at another width, count)
    full = mask.full if mask.full is not None and n * mask.step == VREG_BYTES else None
    if full if full is not None else on.all():
        return VReg(values)
    return VReg(np.where(on, values, values.dtype.type(0)))


def widened(dt: D.DType) -> Any:
    """The numpy type arithmetic on ``dt`` lanes runs in before rounding back: f32 for the
    16-bit floats (one rounding, as the hardware's f16 / bf16 units), the type itself
    otherwise."""
    return np.float32 if dt.is_float and dt.itemsize < 4 else dt.np


def elementwise(fn: Callable[..., np.ndarray], dt: D.DType, *args: np.ndarray) -> np.ndarray:
    """``fn`` over lanes of type ``dt``: floats in :func:`widened` precision, integers
    wrapping; no numpy warning escapes (NaN, infinities and overflow are results)."""
    w = widened(dt)
    with np.errstate(all="ignore"):
        if w is not dt.np:
            out = fn(*(a.astype(w) for a in args))
        else:
            out = fn(*args)
        return np.asarray(out).astype(dt.np, copy=False)


def on_bits(fn: Callable[..., np.ndarray], *args: np.ndarray) -> np.ndarray:
    """``fn`` over the lanes' bit patterns (unsigned integers of their width), viewed back
    as the first operand's type."""
    u = np.dtype(f"u{args[0].dtype.itemsize}")
    return np.asarray(fn(*(a.view(u) for a in args))).astype(u, copy=False).view(args[0].dtype)


def scalar_as(v: Any, dt: D.DType, what: str = "") -> Any:
    """A scalar operand as one element of type ``dt`` (integers wrap to its width; a float
    out of ``dt``'s range is inf)."""
    if dt.is_float:
        with np.errstate(all="ignore"):
            return dt.np.type(float(v))
    bits = 8 * dt.itemsize
    iv = int(v) & ((1 << bits) - 1)
    if dt.is_signed and iv >= 1 << (bits - 1):
        iv -= 1 << bits
    return dt.np.type(iv)


# ---- static rules over register types ---------------------------------------------------------

def same_vreg(*names: str) -> StaticRule:
    """The named registers (operands or results) have one type where the program states it."""
    def rule(sig: Sig) -> None:
        ts = [(n, sig[n]) for n in names if isinstance(sig[n], VRegSpec)]
        for n, t in ts[1:]:
            if t != ts[0][1]:
                raise sig.fail(f"{n} is {t}, {ts[0][0]} is {ts[0][1]}: they must match")
    return rule


def same_width(a: str, b: str) -> StaticRule:
    """``b`` has ``a``'s lane count and element width (a shift's signed amounts)."""
    def rule(sig: Sig) -> None:
        ta, tb = sig[a], sig[b]
        if isinstance(ta, VRegSpec) and isinstance(tb, VRegSpec) and (
                ta.lanes != tb.lanes or ta.dtype.itemsize != tb.dtype.itemsize):
            raise sig.fail(f"{b} is {tb}: it needs {a}'s {ta.lanes} lanes of "
                           f"{8 * ta.dtype.itemsize} bits")
    return rule


def mask_fits(vreg: str, mask: str = "mask") -> StaticRule:
    """The predicate's granularity is the register's element width (b32 for 32-bit lanes)."""
    def rule(sig: Sig) -> None:
        tv, tm = sig[vreg], sig[mask]
        if isinstance(tv, VRegSpec) and isinstance(tm, MaskSpec):
            want = {1: "b8", 2: "b16", 4: "b32"}.get(VREG_BYTES // tv.lanes)
            if want is not None and tm.gran != want:
                raise sig.fail(f"{mask} is {tm}, {vreg} ({tv}) takes !pto.mask<{want}>")
    return rule


__all__ = ["active", "elementwise", "mask_fits", "on_bits", "same_vreg", "same_width",
           "scalar_as", "widened", "zeroing"]

"""Shared pieces of the elementwise families (tile-tile, tile-scalar, fused, TCVT, masks).

Run-time rules keyed on operand *names*, the C++ conversion of a scalar argument to the tile's
element type, C-style integer division, and the precision-algorithm template enum.
"""

from __future__ import annotations

import enum
import math
import threading
from collections.abc import Callable
from typing import Any

import numpy as np

from ... import parallel
from ...dtypes import DType
from ...errors import PtoError, RuntimeCheckError
from ...tile import Tile
from ..registry import Instr, Sig, StaticRule, elem_type, same_type_message
from ..rules import npu_max, npu_min


class Algorithm(enum.Enum):
    """``DivAlgorithm``/``ExpAlgorithm``/... ``{DEFAULT, HIGH_PRECISION}`` (one enum: the C++
    spellings ``DivAlgorithm::DEFAULT`` etc. are all accepted). Only A5 distinguishes them."""

    DEFAULT = 0
    HIGH_PRECISION = 1


def cover(*names: str) -> Callable[..., None]:
    """Run-time rule: the valid region of every named tile operand covers dst's valid region
    (the iteration domain). Scratch operands are not named and so not checked."""

    def rule(ins: Instr, *vals: Any, **kw: Any) -> None:
        by_name = {o.name: v for o, v in zip(ins.operands, vals, strict=False)}
        dst = by_name["dst"]
        vr, vc = dst.valid_shape
        for n in names:
            s = by_name.get(n)
            if isinstance(s, Tile) and (s.valid_row < vr or s.valid_col < vc):
                raise RuntimeCheckError(
                    f"{n} valid region {s.valid_row}x{s.valid_col} does not cover dst valid "
                    f"region {vr}x{vc}", op=ins.mnemonic)
    rule.__name__ = f"cover({', '.join(names)})"
    return rule


#: functions that are called as a binary ufunc is (``fn(a, b, out=None)``, numpy broadcasting)
UFUNC_LIKE = (npu_max, npu_min)


def plain_form(fn: Callable[..., Any]) -> tuple[Callable[..., Any], Callable[..., Any] | None]:
    """An entry's semantics ``fn(*values, dt)`` and its plain form (``Instr.plain``): when
    ``fn`` is given as a numpy ufunc, it is that ufunc on the values (the element type is
    not needed) and the ufunc is the plain form (so for the UFUNC_LIKE functions); anything
    else has none."""
    if isinstance(fn, np.ufunc) or fn in UFUNC_LIKE:
        uf = fn
        return (lambda *args: uf(*args[:-1])), uf
    return fn, None


def kinds(*spec: tuple[str, str]) -> StaticRule:
    """Static rule: named operands are of an element kind ('float' / 'int')."""

    def rule(sig: Sig) -> None:
        for n, kind in spec:
            d = elem_type(sig[n])
            if d is None:
                continue
            ok = d.is_float if kind == "float" else d.is_int
            if not ok:
                raise sig.fail(f"{n} must have a{'n' if kind == 'int' else ''} {kind} element "
                               f"type, got {d}")
    return rule


def as_elem(v: Any, dt: DType, what: str = "scalar") -> Any:
    """A Python/numpy number converted to ``dt`` as the C++ implicit conversion does:
    float -> int truncates toward zero (and wraps modulo 2^bits, the usual two's-complement
    result), int -> float rounds to nearest even."""
    if isinstance(v, np.generic) and v.dtype == dt.np:
        return v
    if isinstance(v, (bool, np.bool_)):
        v = int(v)
    if dt.is_float:
        if isinstance(v, (int, np.integer)):
            return np.array(int(v), dtype=np.float64).astype(dt.np)[()]
        return np.array(v).astype(np.float64).astype(dt.np)[()]
    if isinstance(v, (float, np.floating)) or (isinstance(v, np.generic) and v.dtype.kind == "V"):
        f = float(v)
        if not np.isfinite(f):
            raise PtoError(f"{what} {f} cannot be converted to {dt}")
        v = int(f)  # truncation toward zero
    bits = dt.bits
    raw = int(v) & ((1 << bits) - 1)
    return np.array([raw], dtype=f"u{dt.itemsize}").view(dt.np)[0]


_F64, _F32 = np.dtype(np.float64), np.dtype(np.float32)


def wide(dt: DType) -> np.dtype:
    """Computation type of a float element type (f16/bf16/fp8 compute in f32)."""
    return _F64 if dt.name == "f32" else _F32


def to_float(a: Any, dt: DType) -> np.ndarray:
    return np.asarray(a).astype(wide(dt))


_CHUNK = 1 << 16
#: from this many elements a wide intermediate goes into a buffer the thread keeps (see
#: _scratch); below it numpy's own small-array allocation is quicker
_SCRATCH_MIN = 1 << 13
#: larger buffers are not kept (a thread holds at most a few MiB)
_SCRATCH_MAX = 1 << 18
_tls = threading.local()


def _scratch(slot: str, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    """A buffer of ``shape`` the calling thread keeps for ``slot`` (grown as needed): a fresh
    array of a few hundred KiB every call goes back to the OS when freed and page-faults in
    again next time (6x the cost of an f64 exp of 64 K elements here). The contents are the
    caller's until its next call with that slot. Past _SCRATCH_MAX elements: a fresh array.
    (The views handed out are kept by slot, type and shape, while their buffer stands.)"""
    views = getattr(_tls, "views", None)
    if views is None:
        views = _tls.views = {}
        _tls.bufs = {}
    key = (slot, dtype, shape)
    v = views.get(key)
    if v is not None:
        return v  # type: ignore[no-any-return]
    n = math.prod(shape)
    if n > _SCRATCH_MAX:
        return np.empty(shape, dtype)
    bufs = _tls.bufs
    b = bufs.get((slot, dtype))
    if b is None or b.size < n:
        b = bufs[(slot, dtype)] = np.empty(n, dtype)
        views.clear()  # (views of the buffer replaced)
    if len(views) >= 64:
        views.clear()
    v = views[key] = b[:n].reshape(shape)
    return v


def wide_apply(fn: Callable[..., np.ndarray], a: Any, dt: DType,
               out: np.ndarray | None = None) -> np.ndarray:
    """``fn`` computed in the wide type (f64 for f32, f32 for f16/bf16) and rounded once to
    ``dt``; large arrays go through in cache-sized chunks (same values, far less memory
    traffic than widening the whole array). ``out``: where to put the result (same shape)."""
    a = np.asarray(a)
    w = wide(dt)
    if a.size <= _CHUNK or a.ndim < 2:
        if not _SCRATCH_MIN <= a.size <= _CHUNK:
            b = fn(a.astype(w))
        else:  # (the same casts, into a kept buffer)
            b = _scratch("wide", a.shape, w)
            b[...] = a
            fn(b, out=b)
        if out is None:
            return b.astype(dt.np)
        out[...] = b
        return out
    if out is None:
        out = np.empty(a.shape, dt.np)
    # chunks of whole rows (the trailing axis), so any strided in/out views work
    rows_a = a.reshape(-1, a.shape[-1])
    rows_o = out.reshape(-1, a.shape[-1]) if out.flags.c_contiguous or out.ndim == 2 else None
    step = max(1, _CHUNK // max(a.shape[-1], 1))
    if rows_o is None or not np.shares_memory(rows_o, out):
        out[...] = fn(a.astype(w)).astype(dt.np)
        return out

    def part(lo: int, hi: int) -> None:  # rows [lo, hi), in chunks; one buffer per thread
        buf = _scratch("wide", (min(step, hi - lo), a.shape[-1]), w)
        with np.errstate(all="ignore"):
            for i in range(lo, hi, step):
                blk = buf[:min(step, hi - i)]
                blk[...] = rows_a[i:i + len(blk)]
                rows_o[i:i + len(blk)] = fn(blk, out=blk)

    if parallel.disjoint_rows((rows_a,), rows_o):
        parallel.over_rows(part, rows_a.shape[0], a.size)
    else:
        part(0, rows_a.shape[0])
    return out


def wide_apply_pending(fn: Callable[..., np.ndarray], pending: tuple[Any, tuple[Any, ...]],
                       dt: DType, out: np.ndarray) -> None:
    """``wide_apply(fn, a, dt, out)`` where ``a`` is a deferred result ``pf(*args)`` (a tile's
    pending elementwise op, rounded to ``out``'s type) that is never stored: each chunk of
    rows computes ``a`` into a small buffer and ``fn`` from it, in cache (the same values as
    materialising ``a`` first, one pass over memory fewer). ``out`` may be the storage an
    argument reads, element for element (each chunk is read before it is written)."""
    pf, args = pending
    n = out.shape[0]
    per = max(1, out[0].size) if out.ndim > 1 else 1
    if out.ndim < 2 or n < 2 or not parallel.disjoint_rows(args, out):
        a = np.empty(out.shape, out.dtype)
        pf(*args, out=a)
        wide_apply(fn, a, dt, out)
        return
    step = max(1, _CHUNK // per)
    w = wide(dt)
    # an f32 ufunc of f32 arrays: its f32 loop, each result widened on the way into the wide
    # buffer (the same f32 values widened exactly as ``b[...] = t``; one pass fewer)
    direct = (isinstance(pf, np.ufunc) and out.dtype == np.float32 and w == np.float64
              and all(isinstance(x, np.ndarray) and x.dtype == np.float32 for x in args))

    def part(lo: int, hi: int) -> None:
        rows = min(step, hi - lo)
        tmp = None if direct else _scratch("pending", (rows, *out.shape[1:]), out.dtype)
        buf = _scratch("wide", (rows, *out.shape[1:]), w)
        old = parallel.row_buffer(out.shape[-1], out.size)  # (elementwise calls)
        try:
            for i in range(lo, hi, rows):
                j = min(hi, i + rows)
                sub = [x[i:j] if isinstance(x, np.ndarray) and x.ndim == out.ndim
                       and x.shape[0] == n else x for x in args]
                b = buf[:j - i]
                if tmp is None:
                    pf(*sub, out=b, dtype=np.float32)
                else:
                    t = tmp[:j - i]
                    pf(*sub, out=t)
                    b[...] = t
                out[i:j] = fn(b, out=b)
        finally:
            if old:
                np.setbufsize(old)

    with np.errstate(all="ignore"):
        parallel.over_rows(part, n, out.size)


def idiv(a: np.ndarray, b: np.ndarray | Any, dt: DType) -> np.ndarray:
    """C integer division (truncation toward zero) in ``dt``, wrapping (INT_MIN / -1);
    division by zero is target-defined: ptoisa returns 0."""
    a, b = np.broadcast_arrays(np.asarray(a, dtype=dt.np), np.asarray(b, dtype=dt.np))
    work = np.uint64 if dt.name == "ui64" else np.int64
    aw = a.astype(work)
    bw = b.astype(work)
    zero = bw == 0
    bs = np.where(zero, 1, bw).astype(work)
    with np.errstate(all="ignore"):
        q = aw // bs
        if work is np.int64:
            r = aw - q * bs
            q = q + ((r != 0) & ((aw < 0) != (bs < 0))).astype(np.int64)
    q = np.where(zero, 0, q)
    return q.astype(dt.np)


def irem_trunc(a: np.ndarray, b: np.ndarray | Any, dt: DType) -> np.ndarray:
    """C ``%`` (sign of the dividend); x % 0 -> 0 (target-defined)."""
    a, b = np.broadcast_arrays(np.asarray(a, dtype=dt.np), np.asarray(b, dtype=dt.np))
    with np.errstate(all="ignore"):
        q = idiv(a, b, dt)
        return (a - q * b).astype(dt.np) * (b != 0)


def wrap_to(x: np.ndarray, dt: DType) -> np.ndarray:
    """Integers (any width, as int64/uint64 or object) reduced modulo 2^bits into ``dt``."""
    u = np.asarray(x).astype(np.int64).astype(np.uint64) & np.uint64((1 << dt.bits) - 1)
    return u.astype(f"u{dt.itemsize}").view(dt.np)


def same_tile_dtype(*names: str) -> StaticRule:
    """Like ``same_dtype`` but ignores operands that are not tiles (scalars)."""

    def rule(sig: Sig) -> None:
        present = [(n, elem_type(sig[n])) for n in names if elem_type(sig[n]) is not None]
        if len({d for _, d in present}) > 1:
            raise sig.fail(same_type_message(present))
    return rule

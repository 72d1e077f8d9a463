"""Rules and numerics several instruction families share (each was written once per family
before): static rules over operand types, and the NPU's pairwise reduction tree.

The most common static rules (``same_dtype``, ``locs``, ``nd``, ``same_static_shape``) live in
:mod:`ptoisa.isa.registry` next to the ``Sig`` they read; these are the ones that families
had grown copies of.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import parallel
from ..enums import TileType
from ..tile import TileSpec
from .registry import locs

if TYPE_CHECKING:
    from .registry import Sig, StaticRule


def vec(*names: str) -> StaticRule:
    """Operands ``names`` are Vec (UB) tiles."""
    return locs(names, TileType.Vec)


def _layout_rule(names: tuple[str, ...], ok: Callable[[TileSpec], bool],
                 what: str) -> StaticRule:
    def rule(sig: Sig) -> None:
        for n in names:
            t = sig[n]
            if isinstance(t, TileSpec) and not ok(t):
                raise sig.fail(f"{n} must be {what}, got {t.layout_name}")
    return rule


def row_major(*names: str) -> StaticRule:
    """Operands ``names`` are row-major tiles (BLayout RowMajor, boxes allowed)."""
    return _layout_rule(names, lambda t: t.is_row_major, "row-major")


def row_major_nd(*names: str) -> StaticRule:
    """Operands ``names`` are row-major ND tiles (no boxes)."""
    return _layout_rule(names, lambda t: t.is_nd, "row-major ND")


def reduction_valid(axis: int, empty_marker: bool) -> StaticRule:
    """PTOAS's valid-region rule of a reduction along ``axis`` (1: rows, 0: columns), over
    the static extents: src's valid region is not empty, nor is dst's reduced extent
    (PTOAS: "expects dst valid_shape[1] to be 1"). ``empty_marker``: a dst valid region of
    0x0 (PyPTO's no-op replay marker) is accepted, for the plain reductions (the arg
    reductions always produce an index).

    Not made here: PTOAS also rejects a reduced extent above 1; ptoisa runs such a use as
    pto-isa documents it (column 0 of a wider dst is written). That src and dst keep the
    same extent is the instruction's documented run-time check, which a permissive machine
    skips as the CPU simulator does."""
    red = 1 if axis == 1 else 0

    def rule(sig: Sig) -> None:
        s, d = sig["src"], sig["dst"]
        if sig.permissive or not (isinstance(s, TileSpec) and isinstance(d, TileSpec)):
            return  # (a permissive check reproduces the CPU simulator, which has no verifier)
        sv, dv = (s.valid_row, s.valid_col), (d.valid_row, d.valid_col)
        if empty_marker and dv == (0, 0):
            return
        for k in (0, 1):
            if sv[k] == 0:
                raise sig.fail(f"expects src valid_shape[{k}] to be non-zero")
        if dv[red] == 0:
            raise sig.fail(f"expects dst valid_shape[{red}] to be 1, got 0")
    return rule


def same_static_rows(sig: Sig) -> None:
    """The CPU simulator's row reductions static_assert equal src and dst Rows (declared for
    cpu with ``static_for``)."""
    s, d = sig["src"], sig["dst"]
    if isinstance(s, TileSpec) and isinstance(d, TileSpec) and s.rows != d.rows:
        raise sig.fail(f"src Rows {s.rows} != dst Rows {d.rows} (the {sig.target} target "
                       "requires equal static rows)")


def _pick(ufunc: np.ufunc, a: Any, b: Any, out: np.ndarray | None = None) -> np.ndarray:
    with np.errstate(all="ignore"):
        a, b = np.asarray(a), np.asarray(b)
        ties = None if a.dtype.kind in "iub" else a == b  # (before ``out`` may overwrite a)
        r = ufunc(a, b, out=out)
        if ties is not None and ties.any():
            np.copyto(r, np.broadcast_to(b, r.shape), where=ties)
    return r


def npu_max(a: Any, b: Any, out: np.ndarray | None = None) -> np.ndarray:
    """The vector unit's maximum: ``(a > b) ? a : b`` with NaN propagating (pto-isa's
    vmax.md), so equal operands give ``b``: of +0 and -0, the second (numpy's own maximum
    picks either zero, by dtype and SIMD path). Called as a ufunc (``out=``): an entry's
    plain form too."""
    return _pick(np.maximum, a, b, out)


def npu_min(a: Any, b: Any, out: np.ndarray | None = None) -> np.ndarray:
    """The vector unit's minimum: ``(a < b) ? a : b`` with NaN propagating (vmin.md); see
    npu_max."""
    return _pick(np.minimum, a, b, out)


def tree_reduce(x: np.ndarray, fn: np.ufunc, identity: Any) -> np.ndarray:
    """Reduce along the last axis by halving (pairwise tree: element j meets j + width/2,
    then j + width/4 ...), every partial result in x's element type: the order of the NPU's
    reduction instructions (vcadd, vcgadd ...); a row whose length is not a power of two is
    padded with ``identity``. Rows go through in chunks that stay in cache, each level into a
    preallocated buffer, over the cores for large inputs: the same additions of the same
    operands as one level at a time over the whole array, so the same bits. numpy's
    floating-point warnings are the caller's to silence (an instruction's Machine.errstate;
    the parts on the pool's threads silence their own)."""
    n = x.shape[-1]
    width = 1 << max(n - 1, 0).bit_length()
    if width != n:
        pad = np.full((*x.shape[:-1], width - n), identity, x.dtype)
        x = np.concatenate([x, pad], axis=-1)
    if width == 1:
        return x[..., 0]
    if x.size < _TREE_SMALL:  # in cache anyway: one level at a time over everything
        if width <= _TREE_SHORT:
            # short rows: after the first level, the partial sums transposed (row r's
            # element j at [j, r]), so each level is one pass over two contiguous halves
            # instead of a short strided run per row: the same pairs in the same order.
            # Which NaN numpy's add gives for two NaNs depends on where its SIMD loop
            # meets them (a vector's lanes or the tail), so a row summing to NaN is
            # summed as below; any other row met no NaN (one propagates to the root),
            # and without NaNs the sums are the same bits whatever the loop
            rows = x.reshape(-1, width)
            h = width // 2
            kept = _short_tree(rows.shape[0], width, x.dtype)
            if kept is None:
                b = fn(rows[:, :h], rows[:, h:]).T.copy()
                while h > 1:
                    h //= 2
                    fn(b[:h], b[h:2 * h], out=b[:h])
                r = b[0]
            else:  # (the same levels into buffers the thread keeps, their halves cut once)
                first, b, levels = kept
                fn(rows[:, :h], rows[:, h:], out=first)
                np.copyto(b, first.T)
                for lo, hi in levels:
                    fn(lo, hi, out=lo)
                r = b[0].copy()
            if x.dtype.kind not in "fc" or not _has_nan(r):
                return r.reshape(x.shape[:-1])
        old = parallel.row_buffer(width // 2, x.size // 2)  # (the levels: elementwise)
        try:
            while x.shape[-1] > 1:
                h = x.shape[-1] // 2
                x = fn(x[..., :h], x[..., h:])
        finally:
            if old:
                np.setbufsize(old)
        return x[..., 0]
    lead = x.reshape(-1, width)
    rows = lead.shape[0]
    out = np.empty(rows, x.dtype)
    chunk = max(1, min(rows, _TREE_CHUNK // width))  # rows per chunk
    # the first level reads the input, each row's halves: as two strided operands that is a
    # new page every half row, which the prefetcher does not follow (~4x slower than the same
    # adds over contiguous memory); as a reduction over the pair axis it reads each row in
    # order. For f32 adds the sum -0.0 + a + b is a + b bit for bit (-0.0 + a is a for every
    # a, NaNs included, and the reduction adds in that order: tests/test_speed_paths.py)
    pairs = fn is np.add and x.dtype == np.float32 and lead.strides[-1] == x.itemsize

    def part(lo: int, hi: int) -> None:
        rr = min(chunk, hi - lo)
        a = np.empty((rr, width // 2), x.dtype)  # levels alternate between a and b: an
        b = np.empty((rr, max(width // 4, 1)), x.dtype)  # in-place level would be copied
        with np.errstate(all="ignore"):
            for i in range(lo, hi, rr):
                j = min(hi, i + rr)
                h = width // 2
                src, dst = a[:j - i], b[:j - i]
                if pairs:
                    np.add.reduce(lead[i:j].reshape(j - i, 2, h), axis=1, out=src,
                                  initial=-0.0)
                else:
                    fn(lead[i:j, :h], lead[i:j, h:], out=src)
                while h > 1:
                    h //= 2
                    fn(src[:, :h], src[:, h:2 * h], out=dst[:, :h])
                    src, dst = dst, src
                out[i:j] = src[:, 0]

    parallel.over_rows(part, rows, lead.size)
    return out.reshape(x.shape[:-1])


def tree_into(x: np.ndarray, fn: np.ufunc, out: np.ndarray) -> bool:
    """:func:`tree_reduce` of ``x`` (no padding: rows of a power of two) written into
    ``out`` (one element per row, x's type; any shape; a contiguous 1-D ``out`` takes the
    last level itself), through the buffers :func:`_short_tree` keeps (no result array
    made): True. False: not a C-contiguous f32 / f64 ``x`` of short rows (2 to _TREE_SHORT
    wide, at most _TREE_KEEP elements), nothing written; or a row whose root is a NaN
    (those :func:`tree_reduce` sums one level at a time), ``out`` maybe written (the caller
    writes it again). numpy's warnings are the caller's."""
    go = _tree_into(x, fn, out, False)
    return go is not None and go()


def tree_into_plan(x: np.ndarray, fn: np.ufunc, out: np.ndarray
                   ) -> Callable[[], bool] | None:
    """:func:`tree_into` of these very arrays, prepared once (a planned TROWSUM's, whose
    source and dst views stand from one replay to the next): the call that sums ``x`` into
    ``out`` as :func:`tree_into` does (the same additions in the same order, the same NaN
    check and result), its operands' halves and levels cut and checked here, through level
    buffers of its own (a call may run on any thread; its arrays are its plan's); None where
    :func:`tree_into` would write nothing."""
    return _tree_into(x, fn, out, True)


def _tree_into(x: np.ndarray, fn: np.ufunc, out: np.ndarray, own: bool
               ) -> Callable[[], bool] | None:
    w = x.shape[-1] if x.ndim else 0
    if x.dtype.type not in (np.float32, np.float64) or out.dtype != x.dtype \
            or not x.flags.c_contiguous or not 2 <= w <= _TREE_SHORT or w & (w - 1):
        return None
    rows = x.size // w
    if out.size != rows:
        return None
    kept = _short_tree(rows, w, x.dtype, own)
    if kept is None:
        return None
    first, b, levels = kept
    h = w // 2
    x2 = x.reshape(rows, w)
    lo1, hi1, first_t = x2[:, :h], x2[:, h:], first.T
    # (the roots straight into out where it is one contiguous run, else in b's first row)
    direct = bool(levels) and out.ndim == 1 and out.strides[0] == out.itemsize
    mid = levels[:-1] if direct else levels
    last = (levels[-1][0][0], levels[-1][1][0]) if direct else None
    root = out if direct else b[0]
    copyto = np.copyto

    def go() -> bool:
        fn(lo1, hi1, out=first)  # (as tree_reduce's short rows)
        copyto(b, first_t)
        for lo, hi in mid:
            fn(lo, hi, out=lo)
        if last is not None:
            fn(last[0], last[1], out=out)
        d = root.dot(root)  # (_has_nan's check: root is a contiguous 1-D f32 / f64 run)
        if d != d:
            return False
        if root is not out:
            out[...] = root.reshape(out.shape)
        return True
    return go


def _has_nan(r: np.ndarray) -> bool:
    """Is an element of the 1-D float array ``r`` a NaN? For f32 / f64 the dot product
    r . r (BLAS, ~0.3 us for 128 elements against ~0.9 for a ufunc reduction): every
    product is a NaN, +inf or a non-negative number, so the sum is a NaN only where an
    element is (no inf - inf)."""
    if r.dtype.type in (np.float32, np.float64) and r.ndim == 1 and r.flags.c_contiguous:
        d = r.dot(r)
    else:
        d = np.add.reduce(r, axis=None)  # (NaN also from inf - inf: then a NaN is looked for)
        if d == d:
            return False
        d = np.isnan(r).any()
        return bool(d)
    return bool(d != d)


_tls = threading.local()
#: short rows' trees up to this many elements keep their level buffers (see _short_tree)
_TREE_KEEP = 1 << 16


def _short_tree(rows: int, width: int, dtype: np.dtype, own: bool = False
                ) -> tuple[Any, ...] | None:
    """Buffers the calling thread keeps for :func:`tree_reduce`'s short rows (``rows`` of
    ``width``, a power of two): the first level (rows, width / 2), its transpose and each
    later level's (lower, upper) halves of it, cut once (a level is a small add whose
    slicing cost as much as the add); None past _TREE_KEEP elements (fresh arrays).
    ``own``: buffers of the caller's own, the same shapes, not kept."""
    if rows * width > _TREE_KEEP:
        return None
    if own:
        return _tree_buffers(rows, width, dtype)
    kept = getattr(_tls, "trees", None)
    if kept is None:
        kept = _tls.trees = {}
    key = (rows, width, dtype)
    hit = kept.get(key)
    if hit is None:
        if len(kept) >= 16:
            kept.clear()
        hit = kept[key] = _tree_buffers(rows, width, dtype)
    return hit  # type: ignore[no-any-return]


def _tree_buffers(rows: int, width: int, dtype: np.dtype) -> tuple[Any, ...]:
    h = width // 2
    first = np.empty((rows, h), dtype)
    b = np.empty((h, rows), dtype)
    levels = []
    while h > 1:
        h //= 2
        levels.append((b[:h], b[h:2 * h]))
    return first, b, tuple(levels)


#: input elements per chunk of :func:`tree_reduce` (its first level's buffer: half of that)
_TREE_CHUNK = 1 << 20
#: smaller inputs go one level at a time (faster while the whole tree stays in cache)
_TREE_SMALL = 1 << 21
#: rows up to this wide (small inputs) are reduced transposed: flash_softmax's 128 rows of
#: 128, 22 -> 15 us; 2048 rows of 16, 66 -> 32 us; rows of 1024 and more lose by it
_TREE_SHORT = 256

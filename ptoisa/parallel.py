"""Splitting one large numpy computation over the machine's cores.

numpy releases the GIL inside its loops, so a large computation whose parts are independent
(rows of a sequential reduction, say) runs on all cores when its parts are handed to a small
thread pool. Results are identical to the one-call version: each part is computed by the
same loop over the same elements. Small inputs run in the calling thread (a hand-off costs
tens of microseconds).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import numpy as np

#: below this many elements an operation runs in the calling thread
MIN_ELEMENTS = 1 << 20

_pool: list[tuple[int, ThreadPoolExecutor]] = []  # (owning process id, pool)
_PREFIX = "ptoisa-pool"


def workers() -> int:
    """Cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def _executor() -> ThreadPoolExecutor:
    pid = os.getpid()
    if not _pool or _pool[0][0] != pid:  # a forked child does not inherit the pool's threads
        _pool[:] = [(pid, ThreadPoolExecutor(max_workers=workers(),
                                             thread_name_prefix=_PREFIX))]
    return _pool[0][1]


def over_rows(fn: Callable[[int, int], None], n: int, elements: int) -> None:
    """Call ``fn(lo, hi)`` for slices ``[lo, hi)`` covering ``range(n)`` (the leading axis of
    an array of ``elements`` elements), in parallel when the work is large enough. ``fn``
    must only write its own slice."""
    k = workers()
    if k < 2 or n < 2 or elements < MIN_ELEMENTS \
            or threading.current_thread().name.startswith(_PREFIX):
        fn(0, n)  # (small; or already on a worker: waiting for the pool there could deadlock)
        return
    parts = min(n, 4 * k)  # a few parts per core: cores finish together
    bounds = [n * i // parts for i in range(parts + 1)]
    futures = [_executor().submit(fn, lo, hi) for lo, hi in zip(bounds, bounds[1:], strict=False)
               if hi > lo]
    for f in futures:
        f.result()


#: rows from this many elements take :func:`row_buffer` (shorter ones are not faster for it)
ROW_BUFFER_MIN = 512
#: and arrays from this many elements (the two calls cost ~2 us)
ROW_BUFFER_ELEMENTS = 1 << 15


def row_buffer(width: int, size: int) -> int:
    """Before elementwise ufunc calls over rows of ``width`` elements (the result's last
    axis; ``size`` elements in all): set numpy's ufunc buffer (this thread's,
    ``np.setbufsize``; an ``np.errstate`` restores it as it ends) to one row and return the
    size to restore (``np.setbufsize(old)`` after the calls); 0 when nothing was changed.

    numpy's iterator makes inner loops of its buffer's size (8192 elements by default): over
    shorter rows whose operands have other strides (a broadcast column, a row's halves, a
    window of a wider array) it first copies them through its buffers, ~2x the time of the
    op itself over rows of 512 to 4096 elements; with a buffer of one row it runs its loop on
    each row where it lies. Only the iteration changes: each element is the same loop's
    result from the same operands. Rows of a power of two only: every inner loop, either
    way, then covers whole rows (the default buffer is a multiple of one), so no element
    moves between a vector's lanes and a loop's tail (where numpy's add may pick the other
    of two NaNs). Not for reductions (their order would change with the buffer)."""
    if size < ROW_BUFFER_ELEMENTS or width < ROW_BUFFER_MIN or width & (width - 1):
        return 0
    old = np.getbufsize()
    if width >= old or old % width:
        return 0
    np.setbufsize(width)
    return old


def by_rows(fn: Callable[..., object], args: tuple[object, ...], out: np.ndarray) -> None:
    """``fn(*args, out=out)`` (elementwise) under :func:`row_buffer` where it applies."""
    old = row_buffer(out.shape[-1], out.size) if out.ndim > 1 else 0
    try:
        fn(*args, out=out)
    finally:
        if old:
            np.setbufsize(old)


def into(fn: Callable[..., object], args: tuple[object, ...], out: np.ndarray) -> None:
    """``fn(*args, out=out)`` for an elementwise ``fn`` (a ufunc), split along ``out``'s
    leading axis when large; array arguments with that leading extent are split alongside,
    others (broadcast) are passed whole."""
    n = out.shape[0] if out.ndim else 0
    # memory-bound: a split pays off only on larger arrays than compute-bound work
    if out.ndim < 2 or n < 2 or out.size < 2 * MIN_ELEMENTS or workers() < 2 \
            or not disjoint_rows(args, out):
        by_rows(fn, args, out)
        return

    def part(lo: int, hi: int) -> None:
        sub = [a[lo:hi] if isinstance(a, np.ndarray) and a.ndim == out.ndim
               and a.shape[0] == n else a for a in args]
        with np.errstate(all="ignore"):
            row_buffer(out.shape[-1], out.size)  # (restored as the errstate ends)
            fn(*sub, out=out[lo:hi])

    over_rows(part, n, out.size)


def disjoint_rows(args: tuple[object, ...], out: np.ndarray) -> bool:
    """May ``out`` be computed in row slices from ``args``? Not when an argument overlaps it
    other than element for element (a shifted alias): one numpy call buffers such overlaps,
    slices computed concurrently would not."""
    for a in args:
        if isinstance(a, np.ndarray) and np.may_share_memory(a, out) and not (
                a.shape == out.shape and a.strides == out.strides
                and a.__array_interface__["data"][0] == out.__array_interface__["data"][0]):
            return False
    return True

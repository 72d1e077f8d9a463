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


def into(fn: Callable[..., object], args: tuple[object, ...], out: np.ndarray) -> None:
    """``fn(*args, out=out)`` for an elementwise ``fn`` (a ufunc), split along ``out``'s
    leading axis when large; array arguments with that leading extent are split alongside,
    others (broadcast) are passed whole."""
    n = out.shape[0] if out.ndim else 0
    # memory-bound: a split pays off only on larger arrays than compute-bound work
    if out.ndim < 2 or n < 2 or out.size < 2 * MIN_ELEMENTS or workers() < 2 \
            or not disjoint_rows(args, out):
        fn(*args, out=out)
        return

    def part(lo: int, hi: int) -> None:
        sub = [a[lo:hi] if isinstance(a, np.ndarray) and a.ndim == out.ndim
               and a.shape[0] == n else a for a in args]
        with np.errstate(all="ignore"):
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

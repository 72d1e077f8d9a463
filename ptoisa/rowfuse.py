"""Deferred row-local values: a chain of vector instructions computed in one pass.

A lockstep vector kernel such as row softmax (TROWMAX, TROWEXPANDSUB, TEXP, TROWSUM,
TROWEXPANDDIV, TSTORE) runs every instruction over tiles of all blocks together; one at a time
that is a pass over memory per instruction, and the tiles are larger than the caches. Every
one of these instructions is *row-local*: elementwise, or a reduction along the row, or a row's
value spread along it. Such a result is kept here as an expression (:class:`Rows`) over the
arrays it reads (GM windows, tile storage) and computed when something needs it (TSTORE
straight into GM, a read of the tile) in chunks of whole rows that stay in cache, every step of
the chain on the chunk's rows in turn.

Each step is the instruction's own computation (the same numpy calls), applied to a chunk of
rows instead of all of them: a row's values do not depend on other rows, so the results are
the same bits as one instruction at a time. A tile holding such a value has it as its deferred
result (``Tile._pending == (rows, rows.leaves)``: the arrays it reads are the arguments, so the
copy-on-write barriers of :mod:`ptoisa.lazy` see what it depends on). This module is the
expressions and their evaluation, over arrays; :mod:`ptoisa.lazy` keeps them on tiles
(``lazy.node_of``, ``lazy.defer``, ``lazy.compute``).
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable
from typing import Any

import numpy as np

from . import parallel

#: the largest intermediate of a chunk, in elements (1 MiB of f32, its f64 exponent 2 MiB:
#: in the caches; smaller chunks pay the steps' calls and the tree sums' levels more often
#: than they save, 64 K elements made the softmax 1.66x slower than 256 K)
CHUNK_ELEMENTS = 1 << 18
#: a chain is kept only over tiles of at least this many elements (all blocks together):
#: smaller ones stay in the caches between instructions, and an expression's bookkeeping
#: costs more than the passes it saves (flash attention's 64x64 tiles were 6-9% slower)
MIN_ELEMENTS = 1 << 20
#: an expression grows no larger (a loop's running values would otherwise chain without end):
#: past it, the operands are computed first and the expression starts from them
MAX_NODES = 24


class Node:
    """One step, ``fn(work, *values of kids)``, or a leaf (``fn`` None: the array ``leaf``)."""

    __slots__ = ("fn", "kids", "leaf", "shape", "size")

    def __init__(self, fn: Step | None, kids: tuple[Node, ...], shape: tuple[int, ...],
                 leaf: np.ndarray | None = None) -> None:
        self.fn = fn
        self.kids = kids
        self.leaf = leaf
        self.shape = shape
        #: steps below and including this one, a shared one counted each time (a bound)
        self.size = 1 + sum(k.size for k in kids)


def leaf(a: np.ndarray) -> Node:
    return Node(None, (), a.shape, a)


class Work:
    """The buffers of one thread's chunks: a step's result (and scratch) is allocated once, at
    the chunk size, and reused by every chunk and by the thread's next chunks (fresh arrays of
    this size would go to the OS and back each time, page faults and all); the last step
    writes straight into the destination."""

    __slots__ = ("_bufs", "_rows", "_into", "_pool")

    def __init__(self, rows: int) -> None:
        self._bufs: dict[Any, np.ndarray] = {}
        self._rows = rows  # (the chunk's leading extent)
        #: the steps whose results are wanted, and where the chunk's rows of each go
        self._into: dict[Any, np.ndarray] = {}
        pool = getattr(_tls, "pool", None)
        if pool is None:
            pool = _tls.pool = {}
        self._pool: dict[tuple[Any, ...], list[np.ndarray]] = pool

    def get(self, key: Any, shape: tuple[int, ...], dtype: Any) -> np.ndarray:
        into = self._into.get(key)
        if into is not None and into.shape == shape and into.dtype == dtype:
            return into
        b = self._bufs.get(key)
        if b is None:
            full = (max(self._rows, shape[0]), *shape[1:])
            free = self._pool.get((full, np.dtype(dtype)))
            b = self._bufs[key] = free.pop() if free else np.empty(full, dtype)
        elif b.shape[1:] != shape[1:] or b.shape[0] < shape[0] or b.dtype != dtype:
            raise AssertionError("a step's shape changed between chunks")  # (row-local)
        return b[:shape[0]]

    def done(self) -> None:
        """Give the buffers back to the thread's pool (up to _POOL_BYTES, for the next
        chains)."""
        held = sum(b.nbytes for v in self._pool.values() for b in v)
        for b in self._bufs.values():
            if held + b.nbytes > _POOL_BYTES:
                break
            self._pool.setdefault((b.shape, b.dtype), []).append(b)
            held += b.nbytes
        self._bufs.clear()


_tls = threading.local()
#: the bytes of buffers a thread keeps for the next chains (a softmax's chunk needs ~4 MiB)
_POOL_BYTES = 8 << 20


Step = Callable[..., np.ndarray]


def ufunc(fn: Any, dt: Any) -> Step:
    """``fn(*values)`` into an array of ``dt`` (a deferred elementwise op, as lazy.materialize
    computes it into the tile)."""
    def step(work: Work, *vals: np.ndarray) -> np.ndarray:
        r = work.get(step, np.broadcast_shapes(*(v.shape for v in vals)), dt)
        parallel.by_rows(fn, vals, r)
        return r
    return step


def wide(fn: Any, dt: Any, wdt: Any) -> Step:
    """``fn`` computed in the wide type ``wdt`` and rounded once to ``dt`` (as
    ptoisa.isa.elementwise.common.wide_apply: the same casts)."""
    def step(work: Work, x: np.ndarray) -> np.ndarray:
        b = work.get((step, 0), x.shape, wdt)
        b[...] = x
        fn(b, out=b)
        r = work.get(step, x.shape, dt)
        r[...] = b
        return r
    return step


def reduction(values: Callable[[np.ndarray], np.ndarray]) -> Step:
    """A row reduction's (..., rows, 1) values from its source's (small: allocated)."""
    def step(work: Work, x: np.ndarray) -> np.ndarray:
        return values(x)
    return step


class Rows:
    """A deferred value: ``rows(*leaves, out=out)`` computes it into ``out`` (the tile's
    logical (..., rows, cols) view, or a GM window of that shape), as any deferred op is
    called; the leaves may be passed sliced along the leading axis with ``out`` (as
    ``wide_apply_pending`` does). Whole values go through :func:`compute`."""

    __slots__ = ("root", "leaves", "ids", "_nodes")

    def __init__(self, root: Node) -> None:
        self.root = root
        nodes: list[Node] = []
        _collect(root, set(), nodes)
        self._nodes = nodes
        self.leaves = tuple(n.leaf for n in nodes if n.fn is None)
        #: the steps (not the leaves): another value sharing one is computed alongside
        self.ids = frozenset(id(n) for n in nodes if n.fn is not None)

    def __call__(self, *args: np.ndarray, out: np.ndarray) -> None:
        _run((self.root,), self._nodes, args, (out,))


def _run(roots: tuple[Node, ...], nodes: list[Node], args: tuple[np.ndarray, ...],
         outs: tuple[np.ndarray, ...]) -> None:
    """Compute every root into its ``outs`` entry (all of one leading extent) in one pass of
    row chunks; ``nodes``: every step and leaf under the roots, kids first (see _collect);
    ``args``: the leaf arrays, in that order."""
    out = outs[0]
    if any(isinstance(a, np.ndarray) and np.may_share_memory(a, out)
           and not (a.shape == out.shape and a.strides == out.strides
                    and a.__array_interface__["data"][0]
                    == out.__array_interface__["data"][0]) for a in args):
        # an operand overlapping the result other than element for element: into a buffer
        # first, as a single numpy call would
        tmp = np.empty(out.shape, out.dtype)
        _run(roots, nodes, args, (tmp, *outs[1:]))
        out[...] = tmp
        return
    leaf_nodes = [n for n in nodes if n.fn is None]
    # elements of the largest step per index of the leading axis (the chunk's measure)
    per_lead = max(math.prod(n.shape[1:]) for n in nodes) or 1
    n = out.shape[0] if out.ndim else 1
    step = max(1, CHUNK_ELEMENTS // per_lead)
    nd = out.ndim

    def part(lo: int, hi: int) -> None:
        work = Work(step)
        with np.errstate(all="ignore"):
            for i in range(lo, hi, step):
                j = min(hi, i + step)
                memo: dict[int, np.ndarray] = {}
                for ln, a in zip(leaf_nodes, args, strict=True):
                    memo[id(ln)] = a[i:j] if a.ndim == nd and a.shape[0] == n else a
                dests = [o[i:j] for o in outs]
                work._into = {r.fn: d for r, d in zip(roots, dests, strict=True)}
                for r, d in zip(roots, dests, strict=True):
                    v = _value(r, memo, work)
                    if v is not d:
                        d[...] = v
        work.done()

    parallel.over_rows(part, n, n * per_lead)


def evaluate(rows: Rows, out: np.ndarray, others: list[tuple[Rows, Any]]
             ) -> list[np.ndarray]:
    """Compute ``rows`` into ``out`` and, in the same pass, each of ``others`` (values that
    share a step with it, with their element types) into an array of its own, returned in
    order: no step is computed twice."""
    if not others:
        _run((rows.root,), rows._nodes, rows.leaves, (out,))
        return []
    roots = (rows.root, *(r.root for r, _ in others))
    nodes: list[Node] = []
    seen: set[int] = set()
    for r in roots:
        _collect(r, seen, nodes)
    own = [np.empty(r.root.shape, dt) for r, dt in others]
    _run(roots, nodes, tuple(n.leaf for n in nodes if n.fn is None), (out, *own))
    return own


def _collect(n: Node, seen: set[int], out: list[Node]) -> None:
    if id(n) in seen:
        return
    seen.add(id(n))
    for k in n.kids:
        _collect(k, seen, out)
    out.append(n)


def _value(n: Node, memo: dict[int, np.ndarray], work: Work) -> np.ndarray:
    v = memo.get(id(n))
    if v is None:
        assert n.fn is not None  # (leaves are in the memo from the start)
        v = memo[id(n)] = n.fn(work, *(_value(k, memo, work) for k in n.kids))
    return v


def node(fn: Step, kids: tuple[Node, ...], shape: tuple[int, ...]
         ) -> Node | None:
    """A step over ``kids``; None when the expression would grow past MAX_NODES."""
    if 1 + sum(k.size for k in kids) > MAX_NODES:
        return None
    return Node(fn, kids, shape)

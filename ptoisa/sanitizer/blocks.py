"""Races between blocks: two blocks of a launch touching the same GM bytes, at least one
writing, with no SYNCALL between them.

Blocks run concurrently on the NPU and only SYNCALL orders one block's work against another's
(every block takes part in every SYNCALL). So two accesses of different blocks are ordered
exactly when a SYNCALL separates them: each access is stamped with its block's *phase* (the
SYNCALLs it has passed), and accesses of different blocks in the same phase, with a byte in
common and a write among them, race. Atomic stores (TSTORE with an atomic mode, atomic
MSCATTER) do not race with each other.

A lockstep launch sees all blocks at once (per-block offsets of the GM views); a launch that
runs one block after another sees them in turn: both give the same findings.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..tensor import GlobalTensor
from .report import Finding, Site, where

_MAX_RECORDS = 512  # per array: older reads are dropped beyond this (writes are kept)


class _Rec:
    __slots__ = ("blocks", "lo", "hi", "r0", "r1", "c0", "c1", "row", "write", "atomic",
                 "phase", "site", "min", "max", "one")

    def __init__(self, blocks: np.ndarray, lo: np.ndarray, hi: np.ndarray, rect: Any,
                 write: bool, atomic: bool, phase: int, site: Site) -> None:
        self.blocks, self.lo, self.hi = blocks, lo, hi
        self.min, self.max = int(lo.min()), int(hi.max())  # the hull: a cheap first test
        self.one = int(blocks[0]) if blocks.size == 1 else None
        self.row = None if rect is None else rect[0]
        if rect is not None:
            self.r0, self.r1, self.c0, self.c1 = rect[1:]
        self.write, self.atomic, self.phase, self.site = write, atomic, phase, site


def _footprint(g: GlobalTensor, span: Any, lanes: int, block: Any
               ) -> tuple[Any, ...] | None:
    """(blocks, lo, hi, rect or None) of a GM view, one entry per block that uses it (``rect``
    as in :class:`ptoisa.concurrent.access.Span`, one row per block)."""
    isz = g.flat.dtype.itemsize
    off = g.offset
    if isinstance(off, np.ndarray) and off.ndim == 1 and off.size > 1:
        base = int(off.min())
        d = (off.astype(np.int64) - base) * isz
        width = span.hi - span.lo - (int(off.max()) - base) * isz
        blocks = np.arange(off.size)
        lo = span.lo + d
    elif lanes > 1:  # lockstep, one view for every block
        width = span.hi - span.lo
        blocks = np.arange(lanes)
        lo = np.full(lanes, span.lo, np.int64)
    elif isinstance(block, (int, np.integer)):
        width = span.hi - span.lo
        blocks = np.array([int(block)])
        lo = np.array([span.lo], np.int64)
    else:
        return None
    hi = lo + width
    rect = None
    sh, st = g.spec.shape, g.spec.stride
    if st[4] == 1 and sh[0] == sh[1] == sh[2] == 1 and sh[3] > 1 and 0 < sh[4] <= st[3] \
            and not g.spec.dtype.packed:
        row = st[3] * isz
        r0, c0 = np.divmod(lo, row)
        cw = sh[4] * isz
        if cw < row and bool((c0 + cw <= row).all()):  # (full rows: the range is exact)
            rect = (row, r0, r0 + sh[3], c0, c0 + cw)
    return blocks, lo, hi, rect


def _atomic(rec: Any) -> bool:
    for k in ("atomicType", "AtomicType", "Atomic"):
        v = rec.params.get(k)
        if v is not None and getattr(v, "name", str(v)) not in ("AtomicNone", "NoOp", "None"):
            return True
    return False


class BlockRaces:
    """Cross-block GM state of one launch (kept by the Sanitizer, shared by its cores)."""

    def __init__(self) -> None:
        self.recs: dict[Any, list[_Rec]] = {}

    def access(self, san: Any, rec: Any, role: str, g: GlobalTensor, span: Any, phase: int,
               site_of: Any) -> None:
        fp = _footprint(g, span, rec.machine.lanes, rec.machine.block_idx)
        if fp is None:
            return
        blocks, lo, hi, rect = fp
        write = role != "in"
        reads = role in ("in", "inout")
        atomic = write and _atomic(rec)
        lst = self.recs.setdefault(span.key, [])
        site = site_of(rec)
        new = _Rec(blocks, lo, hi, rect, write, atomic, phase, site)
        # the blocks of one lockstep instruction race with each other too
        for r in (*lst, *((new,) if write and not atomic and blocks.size > 1 else ())):
            if r.phase != phase or not (write or r.write) or (atomic and r.atomic):
                continue
            if r.min >= new.max or new.min >= r.max or \
                    (r.one is not None and r.one == new.one):
                continue  # hulls apart, or the same block
            hit = _pairs(r, blocks, lo, hi, rect)
            if hit is None:
                continue
            a, b = hit
            hz = "RAW" if reads and r.write else ("WAW" if r.write else "WAR")
            key = ("xblock", r.site.loc, r.site.op, site.loc, site.op)
            if key in san._seen:
                continue
            verb = {"RAW": ("reads", "wrote"), "WAR": ("writes", "read"),
                    "WAW": ("writes", "wrote")}[hz]
            msg = (f"race ({hz}) between blocks on GM ({span.label}): {site.op} in block {b} "
                   f"{verb[0]} what {r.site.op} in block {a} at {where(r.site.loc)} "
                   f"{verb[1]}; blocks are ordered only by SYNCALL")
            fix = ("give each block its own part of the array (check the offsets computed "
                   f"from the block index), or put a SYNCALL between {r.site.op} and "
                   f"{site.op}")
            san.add(Finding("race", msg, site, r.site, hz, "GM", fix=fix,
                            extra={"blocks": (a, b)}), key)
        lst.append(new)
        if len(lst) > _MAX_RECORDS:
            drop = next((i for i, r in enumerate(lst) if not r.write), 0)
            del lst[drop]


def _pairs(r: _Rec, blocks: np.ndarray, lo: np.ndarray, hi: np.ndarray,
           rect: Any) -> tuple[int, int] | None:
    """The first (block of r, block of the new access) pair of different blocks whose
    footprints meet, or None."""
    if r.lo is lo and rect is None:  # one lockstep access against itself: sort, not square
        order = np.argsort(lo, kind="stable")
        clash = np.flatnonzero(lo[order][1:] < np.maximum.accumulate(hi[order])[:-1])
        if clash.size == 0:
            return None
        j = int(order[clash[0] + 1])
        i = int(order[int(np.flatnonzero(hi[order][:clash[0] + 1] > lo[j])[0])])
        return int(blocks[i]), int(blocks[j])
    meet = (r.lo[:, None] < hi[None, :]) & (lo[None, :] < r.hi[:, None])
    meet &= r.blocks[:, None] != blocks[None, :]
    if not meet.any():
        return None
    if rect is not None and r.row is not None and r.row == rect[0]:
        _, r0, r1, c0, c1 = rect
        meet &= (r.r0[:, None] < r1[None, :]) & (r0[None, :] < r.r1[:, None])
        meet &= (r.c0[:, None] < c1[None, :]) & (c0[None, :] < r.c1[:, None])
        if not meet.any():
            return None
    i, j = np.argwhere(meet)[0]
    return int(r.blocks[i]), int(blocks[j])

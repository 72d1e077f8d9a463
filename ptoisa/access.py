"""What one executed instruction reads and writes: the access model the sanitizer and the cycle
model share.

An observer of the machine (see :meth:`ptoisa.isa.registry.Instr.run`) gets an
:class:`~ptoisa.isa.registry.InstrRecord`; :func:`accesses` turns it into the byte spans the
instruction reads and writes, and the record's ``pipe`` says where it runs. Spans are keyed by
the memory they live in, so two spans can only overlap when their keys are equal:

* a tile placed with TASSIGN: ``(space, machine)`` and its byte range in that buffer (tiles at
  overlapping addresses share bytes, as on hardware);
* an auto-placed tile: the tile itself (private storage: whole-tile granularity);
* a GlobalTensor: the numpy array's memory and the byte range from the lowest to the highest
  element the view reaches (every block's offset included in a lockstep launch).

Operand roles decide the direction: ``in`` reads, ``out`` writes, ``inout`` and ``scratch``
both. This is deliberately conservative (a tile's whole storage, a GM view's whole extent):
a checker built on it may report an overlap that a finer model would not, never miss one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from . import ranks
from .targets import LOC_SPACE
from .tensor import GlobalTensor
from .tile import Tile

if TYPE_CHECKING:
    from .isa.registry import InstrRecord


@dataclass(frozen=True)
class Span:
    """A byte range ``[lo, hi)`` of one memory (``key``); ``space`` and ``label`` are for
    reports (``UB``, ``GM``; the tile or array name with its element range)."""

    space: str
    key: Any
    lo: int
    hi: int
    label: str

    def overlaps(self, other: Span) -> bool:
        return self.key == other.key and self.lo < other.hi and other.lo < self.hi

    def __str__(self) -> str:
        return f"{self.space} [{self.lo:#x}, {self.hi:#x}) ({self.label})"


def tile_span(t: Tile, machine: Any = None) -> Span:
    nbytes = t.spec.nbytes
    name = t.name or "tile"
    space = LOC_SPACE.get(t.loc, t.loc.name)
    if t.addr is not None:
        return Span(space, (space, id(t._machine or machine)), t.addr, t.addr + nbytes,
                    f"{name} @{t.addr:#x}")
    return Span(space, ("tile", id(t)), 0, nbytes, name)


def gm_span(g: GlobalTensor) -> Span:
    """The bytes of the GM array a view reaches (lowest to highest element, all blocks). In a
    multi-rank launch a view of a window (this rank's or another's) is keyed by the window
    copy it reaches, ``("rank", rank, window)``: the same bytes have the same key on every
    rank (see :func:`ptoisa.ranks.gm_location`)."""
    where = ranks.gm_location(g)
    if where is not None:
        rank, win, lo, hi = where
        return Span("GM", ("rank", rank, win), lo, hi, f"rank {rank} window {win} [{lo}:{hi}]")
    lo_e, hi_e = g.spec.extent
    off = g.offset
    if isinstance(off, np.ndarray):
        lo_o, hi_o = (int(off.min()), int(off.max())) if off.size else (0, 0)
    else:
        lo_o = hi_o = int(off)
    isz = g.flat.dtype.itemsize
    root = _root_address(g.flat)
    start = int(g.flat.__array_interface__["data"][0]) - root  # the flat view inside its memory
    lo_i, hi_i = lo_o + lo_e, hi_o + hi_e + 1
    return Span("GM", ("gm", root), start + lo_i * isz, start + hi_i * isz,
                f"{g.name or 'gm'}[{lo_i}:{hi_i}]")


def _root_address(a: np.ndarray) -> int:
    """Start address of the memory a numpy array views (its base chain's owner)."""
    while isinstance(a.base, np.ndarray):
        a = a.base
    return int(a.__array_interface__["data"][0])


def operand_span(v: Any, machine: Any = None) -> Span | None:
    if isinstance(v, Tile):
        return tile_span(v, machine)
    if isinstance(v, GlobalTensor):
        return gm_span(v)
    return None


def accesses(rec: InstrRecord) -> tuple[list[Span], list[Span]]:
    """(reads, writes) of one executed instruction, by its operands' roles."""
    reads: list[Span] = []
    writes: list[Span] = []
    for o, v in zip(rec.instr.operands, rec.values, strict=False):
        if isinstance(v, (tuple, list)):
            items = list(v)
        else:
            items = [v]
        for x in items:
            s = operand_span(x, rec.machine)
            if s is None:
                continue
            if o.role in ("in", "inout", "scratch"):
                reads.append(s)
            if o.role in ("out", "inout", "scratch"):
                writes.append(s)
    return reads, writes

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
both (an entry's ``access_roles`` say an operand's role where the declared one is generic;
``none``: this use accesses nothing through it, as the GlobalData forms of TPUSH / TPOP, which
only name a GM FIFO slot).
The instructions whose entry declares ``access="view"`` (TRESHAPE, TSUBVIEW, TALIAS,
TGET_SCALE_ADDR) or ``access="place"`` (TASSIGN) move no data: they access nothing; a view of
an auto tile is placed inside its base's span (at the entry's ``view_offset``) through
``aliases`` (``{id(view): (base, byte_offset)}``, kept by the observer that watches
the view instructions, see :func:`view_alias`). This is deliberately conservative (a tile's
whole storage, a GM view's whole extent): a checker built on it may report an overlap that a
finer model would not, never miss one.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from ..targets import LOC_SPACE
from ..tensor import GlobalTensor
from ..tile import Tile
from . import ranks

if TYPE_CHECKING:
    from ..isa.registry import InstrRecord


@dataclass(frozen=True)
class Span:
    """A byte range ``[lo, hi)`` of one memory (``key``); ``space`` and ``label`` are for
    reports (``UB``, ``GM``; the tile or array name with its element range).

    ``rect``, when known, is the exact footprint of a 2-D strided GM view inside that range:
    ``(row_stride, r0, r1, c0, c1)`` in bytes — rows ``r0 <= r < r1`` of ``row_stride`` bytes,
    bytes ``[c0, c1)`` of each — so column blocks of one array do not overlap."""

    space: str
    key: Any
    lo: int
    hi: int
    #: the label, or a function making it (most spans are never reported: build it late)
    _label: str | Callable[[], str] = field(compare=False)
    rect: tuple[int, int, int, int, int] | None = None

    @property
    def label(self) -> str:
        lab = self._label
        return lab if isinstance(lab, str) else lab()

    def overlaps(self, other: Span) -> bool:
        if self.key != other.key or self.lo >= other.hi or other.lo >= self.hi:
            return False
        return rects_meet(self.rect, other.rect)

    def covers(self, other: Span) -> bool:
        """Whether every byte of ``other`` is a byte of this span."""
        if self.key != other.key or other.lo < self.lo or other.hi > self.hi:
            return False
        if self.rect is None:
            return True
        o = other.rect
        if o is None or o[0] != self.rect[0]:
            return False
        _, r0, r1, c0, c1 = self.rect
        return r0 <= o[1] and o[2] <= r1 and c0 <= o[3] and o[4] <= c1

    def __str__(self) -> str:
        return f"{self.space} [{self.lo:#x}, {self.hi:#x}) ({self.label})"


def rects_meet(a: tuple[int, int, int, int, int] | None,
               b: tuple[int, int, int, int, int] | None) -> bool:
    """Whether two footprints (see :class:`Span`) share a byte; unknown ones may."""
    if a is None or b is None or a[0] != b[0]:
        return True
    return a[1] < b[2] and b[1] < a[2] and a[3] < b[4] and b[3] < a[4]


def _tile_name(t: Tile) -> str:
    return t.name or f"tile {t.spec.describe()}"


def tile_span(t: Tile, machine: Any = None, aliases: dict[int, Any] | None = None) -> Span:
    nbytes = t.spec.nbytes
    space = LOC_SPACE.get(t.loc, t.loc.name)
    if aliases and t.addr is None and id(t) in aliases:
        base, off = aliases[id(t)]
        b = tile_span(base, machine, aliases)
        return Span(b.space, b.key, b.lo + off, b.lo + off + nbytes,
                    lambda: f"{_tile_name(t)} (view of {b.label})")
    addr = t.addr
    if addr is not None:
        return Span(space, (space, id(t._machine or machine)), addr, addr + nbytes,
                    lambda: f"{_tile_name(t)} @{addr:#x}")
    return Span(space, ("tile", id(t)), 0, nbytes, lambda: _tile_name(t))


def gm_span(g: GlobalTensor) -> Span:
    """The bytes of the GM array a view reaches (lowest to highest element, all blocks). In a
    multi-rank launch a view of a window (this rank's or another's) is keyed by the window
    copy it reaches, ``("rank", rank, window)``: the same bytes have the same key on every
    rank (see :func:`ptoisa.concurrent.ranks.gm_location`)."""
    where = ranks.gm_location(g)
    if where is not None:
        rank, win, lo, hi = where
        return Span("GM", ("rank", rank, win), lo, hi, f"rank {rank} window {win} [{lo}:{hi}]")
    lo_e, hi_e = g.spec.extent
    off = g.offset
    if isinstance(off, np.ndarray):
        span = g._span  # (lowest, highest, spacing) of the per-block offsets, kept by the view
        lo_o, hi_o = (span[0], span[1]) if span is not None else \
            ((int(off.min()), int(off.max())) if off.size else (0, 0))
    else:
        lo_o = hi_o = int(off)
    isz = g.flat.dtype.itemsize
    root = _root_address(g.flat)
    start = int(g.flat.__array_interface__["data"][0]) - root  # the flat view inside its memory
    lo_i, hi_i = lo_o + lo_e, hi_o + hi_e + 1
    lo_b, hi_b = start + lo_i * isz, start + hi_i * isz
    rect = None
    sh, st = g.spec.shape, g.spec.stride
    if lo_o == hi_o and st[4] == 1 and sh[0] == sh[1] == sh[2] == 1 and sh[3] > 1 \
            and 0 < sh[4] <= st[3] and not g.spec.dtype.packed:
        row = st[3] * isz  # one row of the view's 2-D footprint, in bytes
        r0, c0 = divmod(lo_b, row)
        if sh[4] * isz < row and c0 + sh[4] * isz <= row:  # (full rows: the range is exact)
            rect = (row, r0, r0 + sh[3], c0, c0 + sh[4] * isz)
    # (the label made now: a closure would keep the view alive as long as the span)
    return Span("GM", ("gm", root), lo_b, hi_b, f"{g.name or 'gm'}[{lo_i}:{hi_i}]", rect)


def touched_accesses(m: Any, entries: list[tuple[str, str, Any, int, int]]
                     ) -> list[tuple[str, Any, Span]]:
    """(role, None, span) of the byte ranges a micro-op told it touched (``Machine.touched``,
    :func:`ptoisa.vector.regs.touch`): a range of the machine's buffer is keyed as a tile
    placed there is (a pointer and a tile on the same bytes meet); a range of a GM argument
    as a GM view of that array is."""
    out: list[tuple[str, Any, Span]] = []
    for role, space, base, lo, hi in entries:
        if base is None:
            out.append((role, None, Span(space, (space, id(m)), lo, hi,
                                         f"through a {space} pointer")))
            continue
        root = _root_address(base)
        start = int(base.__array_interface__["data"][0]) - root
        out.append((role, None, Span("GM", ("gm", root), start + lo, start + hi,
                                     f"bytes [{lo}, {hi}) from a GM pointer")))
    return out


def _root_address(a: np.ndarray) -> int:
    """Start address of the memory a numpy array views (its base chain's owner)."""
    while isinstance(a.base, np.ndarray):
        a = a.base
    return int(a.__array_interface__["data"][0])


def operand_span(v: Any, machine: Any = None,
                 aliases: dict[int, Any] | None = None) -> Span | None:
    if isinstance(v, Tile):
        return tile_span(v, machine, aliases)
    if isinstance(v, GlobalTensor):
        return gm_span(v)
    return None


def view_alias(rec: InstrRecord) -> tuple[Tile, Tile, int] | None:
    """(view, base, byte offset) of an instruction whose entry declares ``access="view"``
    (TRESHAPE/TSUBVIEW/TALIAS/TGET_SCALE_ADDR), computed before it runs, as it will place the
    view (at the entry's ``view_offset``; 0 when it has none or it cannot tell); None
    otherwise."""
    ins = rec.ins
    if ins.access != "view" or len(rec.values) < 2:
        return None
    dst, src = rec.values[0], rec.values[1]
    if not isinstance(dst, Tile) or not isinstance(src, Tile):
        return None
    off = 0
    if ins.view_offset is not None:
        try:
            off = ins.view_offset(rec.values)
        except (TypeError, ValueError, IndexError):
            off = 0
    return dst, src, off


def role_of(rec: InstrRecord, opnd: Any) -> str:
    """An operand's role in this use: its declared role unless the entry's ``access_roles``
    say better."""
    return role_in_use(rec.ins, opnd, rec.values)


def role_in_use(ins: Any, opnd: Any, values: list[Any]) -> str:
    """:func:`role_of` from the entry and the operand values (``none``: only named)."""
    r = ins.access_roles.get(opnd.name)
    if r is None:
        return str(opnd.role)
    return r(values) if callable(r) else str(r)


def operand_accesses(rec: InstrRecord, aliases: dict[int, Any] | None = None,
                     memo: dict[Any, Any] | None = None) -> list[tuple[str, Any, Span]]:
    """(role, operand value, span) of every tile/GM operand of one executed instruction (roles
    ``in``, ``out``, ``inout``, ``scratch``); nothing for an entry that moves no data (its
    ``access`` is ``"view"`` or ``"place"``)."""
    if rec.ins.access != "data":
        return []
    out: list[tuple[str, Any, Span]] = []
    for o, v in zip(rec.ins.operands, rec.values, strict=False):
        items = list(v) if isinstance(v, (tuple, list)) else [v]
        for x in items:
            if memo is None:
                s = operand_span(x, rec.machine, aliases)
            else:  # one span per operand object (and placement) for the memo's lifetime
                key = (id(x), getattr(x, "addr", None))
                hit = memo.get(key)
                if hit is None or hit[0] is not x:
                    hit = memo[key] = (x, operand_span(x, rec.machine, aliases))
                s = hit[1]
            if s is not None:
                role = role_of(rec, o)
                if role != "none":  # an operand this use only names (a FIFO slot view)
                    out.append((role, x, s))
    return out


def accesses(rec: InstrRecord, aliases: dict[int, Any] | None = None,
             memo: dict[Any, Any] | None = None) -> tuple[list[Span], list[Span]]:
    """(reads, writes) of one executed instruction, by its operands' roles; ``memo`` (a dict
    the caller keeps) remembers each operand object's span (tiles by their placement)."""
    reads: list[Span] = []
    writes: list[Span] = []
    for role, _, s in operand_accesses(rec, aliases, memo):
        if role in ("in", "inout", "scratch"):
            reads.append(s)
        if role in ("out", "inout", "scratch"):
            writes.append(s)
    return reads, writes

"""Cube <-> vector FIFOs: TPUSH, TPOP, TFREE, TALLOC (tiles through the FIFO, or GlobalTensor
slots of a ring in GM), and the fix-pipe registers of a pushed Acc tile (SET_QUANT_SCALAR,
SET_QUANT_VECTOR).

A :class:`TPipe` is the C++ ``TPipe<FlagID, DirType, SlotSize, SlotNum, LocalSlotNum,
IsNoSplit>`` type: a ring of ``SlotNum`` slots between the cube core (AIC) and its two vector
sub-blocks (AIV0, AIV1). The machine keeps one :class:`Fifo` per pipe type and direction, so
every TPipe object of the same type names the same FIFO (the GM slot buffer and flag IDs are
shared by the producer's and the consumer's objects).

* ``TPUSH(pipe, tile)`` waits for a free slot (``SlotNum`` slots not yet released), stores the
  tile's valid region into it and marks it ready. A cube push (C2V) stores the whole tile; a
  vector push (V2C) with a split stores sub-block ``k``'s half (rows for TILE_UP_DOWN, columns
  for TILE_LEFT_RIGHT) and the slot is ready once both halves are in.
* ``TPOP(pipe, tile)`` takes the oldest ready slot: with a split, sub-block ``k`` of a C2V pipe
  receives half ``k`` of it; a V2C pop (cube) receives the whole slot. When both vector
  sub-blocks consume a C2V slot (a split, or ``IsNoSplit=true`` where each lane gets the whole
  tile), the slot is released only after both have popped and freed it.
* ``TFREE(pipe)`` releases the slot the sub-block popped last. On the CPU simulator a TFREE with
  nothing popped releases (discards) the oldest queued slot; ptoisa does the same on every
  target (the consumer's free notification is what recycles a slot; without a pop it recycles
  the head of the ring).
* With ``TILE_NO_SPLIT`` on a pipe whose ``IsNoSplit`` is false only AIV0 takes part; AIV1's
  TPUSH/TPOP/TFREE are no-ops ("inactive lane skips the protocol").

On a single core (eager code, a one-function ``.pto`` run) program order is execution order,
so a TPOP of an empty FIFO or a TPUSH into a full one can never be satisfied: both are reported
as deadlocks. In a mixed launch (:mod:`ptoisa.concurrent.streams`) the three cores of a cluster
share
their FIFOs and such a TPOP / TPUSH blocks its core until another one frees or fills a slot.
A FIFO is named by the pipe's FlagID and direction (the producer's and the consumer's TPipe
objects name the same one). The FIFO's slots are kept apart from the machine's memory: the
consumer's reserved buffer (L1 / UB) and the A2/A3 GM slot buffer are not written, so tiles a
program places there do not see pushed data (on the NPU they would share those bytes). In a
lockstep launch a slot holds every block's tile at once. The
sub-block running an instruction is the optional ``subBlockId`` operand (C++
``TPUSH<Pipe, Tile, Split>(pipe, tile, subBlockId)``), else ``machine.sub_block_id`` (0).

The GlobalData forms (TALLOC.md, TPOP.md, TFREE.md) are a second protocol on a pipe whose
``buffer`` is the C++ constructor's ``GM_SLOT_BUFFER``: ``TALLOC(pipe, slot)`` points a
GlobalTensor at slot ``tileIndex % SlotNum`` of that GM ring (``SlotSize`` bytes each; a
vector producer's view at its sub-block's part of a split slot), the producer writes it with
TSTORE and commits it with ``TPUSH(pipe, slot)``; ``TPOP(pipe, slot)`` points the consumer's
view at the next pushed slot (a vector consumer's at its part) and ``TFREE(pipe, slot)``
releases it after the TLOADs. Each core keeps its own tile indices (the C++ pipe object's),
the flags count notifications as FFTS does (the cube waits for and signals both sub-blocks),
and free space is waited for and notified sparsely (``Pipe::SyncPeriod``): exactly the
hardware's handshake, so a kernel that reads or reuses a slot outside it races on the slot's
GM bytes, which the sanitizer reports. DIR_BOTH pipes have no GlobalData form here (an error
names it).

``TPUSH<Pipe, Tile, TConfig>`` pushes an Acc tile through the fix-pipe: ``TConfig`` is the
C++ ``FixpipeParams<LayoutMode, QuantPre, ...>`` (text or :class:`FixpipeParams`); a quantising
``QuantPre`` reads the quant word(s) programmed by SET_QUANT_SCALAR / SET_QUANT_VECTOR.
"""

from __future__ import annotations

import ast
import enum
import re
from collections import deque
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .. import dtypes as D
from ..concurrent import edges
from ..enums import Pipe, TileType
from ..errors import (
    BlockDivergence,
    ExecutionError,
    IllegalInstruction,
    PtoError,
    RuntimeCheckError,
)
from ..memory import Machine
from ..tensor import GlobalTensor, GMSpec
from ..tile import Tile, TileSpec
from .quant import quantize
from .registry import Opnd, Param, Sig, instr
from .spelling import SPLIT, Attr, Form, Ptoas


class Direction(enum.IntEnum):
    """``DirType`` of a TPipe (include/pto/common/fifo.hpp)."""

    DIR_C2V = 1
    DIR_V2C = 2
    DIR_BOTH = 3
    DIR_V2C_CTRL = 4
    DIR_C2V_GM = 5
    DIR_V2C_GM = 6
    DIR_BOTH_GM = 7


class TileSplitAxis(enum.Enum):
    TILE_NO_SPLIT = 0
    TILE_UP_DOWN = 1
    TILE_LEFT_RIGHT = 2


#: PTOAS's ``split`` values: 0-2 the TileSplitAxis values, 3/4 its odd modes (AIV0 takes the
#: ceil half of an odd valid row/col count), which ptoisa does not execute yet
SPLIT_VALUES = range(5)
ODD_SPLITS = {3: "TILE_UP_DOWN_ODD", 4: "TILE_LEFT_RIGHT_ODD"}
SPLIT_RANGE = "expects 'split' to be 0, 1, 2, 3, or 4"

_C2V = {Direction.DIR_C2V, Direction.DIR_C2V_GM}
#: a consumer's free fires once its pop's copy out of the slot is done (ffts_cross_core_sync
#: on PIPE_MTE2, TPOP page); named here because the instructions' ``Pipe`` parameter shadows
_FREE_PIPE = Pipe.MTE2
#: a vector core's push signals the cube from MTE3 (the cube's from the fix-pipe: TPUSH's pipe)
_VEC_PUSH_PIPE = Pipe.MTE3
_V2C = {Direction.DIR_V2C, Direction.DIR_V2C_GM, Direction.DIR_V2C_CTRL}


@dataclass(frozen=True)
class TPipe:
    """``TPipe<FlagID, DirType, SlotSize, SlotNum, LocalSlotNum=2, IsNoSplit=false>``."""

    flag_id: int
    direction: Direction
    slot_size: int
    slot_num: int
    local_slot_num: int = 2
    is_no_split: bool = False
    #: the element type an Acc tile pushed without a TConfig leaves the fix-pipe as (a
    #: frontend pipe's ``acc_push_epilogue`` quant mode, PTOAS), which its slots hold; None:
    #: the Acc element type
    epilogue_out: str | None = None
    #: ``EN_UNIT_FLAG``: the tile-form push of an Acc tile stores it with the unit flag
    #: (TSTORE<STPhase::Final>); it does not change the data path
    en_unit_flag: bool = field(default=False, compare=False)
    #: the constructor's ``GM_SLOT_BUFFER``: the GM ring the GlobalData forms (TALLOC, TPUSH /
    #: TPOP / TFREE of a GlobalTensor) hand out slots of, a numpy array or a GlobalTensor (its
    #: array from its offset on); None when the pipe is only used with tiles
    buffer: Any = field(default=None, compare=False, repr=False)

    @property
    def sync_period(self) -> int:
        """``Pipe::SyncPeriod``: a producer waits for free space, and a consumer notifies it,
        once every this many slots."""
        return self.slot_num if self.slot_num <= 2 else self.slot_num // 2

    def __post_init__(self) -> None:
        if self.slot_num < 1:
            raise IllegalInstruction(f"TPipe: SlotNum must be >= 1, got {self.slot_num}")
        if self.slot_size < 1:
            raise IllegalInstruction(f"TPipe: SlotSize must be >= 1, got {self.slot_size}")
        object.__setattr__(self, "direction", Direction(int(self.direction)))

    @classmethod
    def parse(cls, text: str) -> TPipe:
        """From the C++ type text, e.g. ``pto::TPipe<'\\x00', '\\x01', 32768, 8>`` (char
        template arguments are printed as character literals)."""
        m = re.search(r"TPipe<(.*)>\s*$", text.strip())
        if not m:
            raise IllegalInstruction(f"not a TPipe type: {text!r}")
        args = []
        for a in _split_args(m.group(1)):
            if a.startswith("'"):
                args.append(ord(ast.literal_eval(a)))
            elif a in ("true", "false"):
                args.append(a == "true")
            else:
                args.append(int(a, 0))
        if len(args) < 4:
            raise IllegalInstruction(f"TPipe needs FlagID, DirType, SlotSize, SlotNum: {text!r}")
        return cls(args[0], Direction(args[1]), args[2], args[3], *(args[4:7]))

    def __str__(self) -> str:
        return (f"TPipe<{self.flag_id}, {self.direction.name}, {self.slot_size}, "
                f"{self.slot_num}, {self.local_slot_num}, {str(self.is_no_split).lower()}>")


def _split_args(s: str) -> list[str]:
    out, cur, q = [], "", False
    for i, ch in enumerate(s):
        if ch == "'" and (i == 0 or s[i - 1] != "\\" or s[i - 2:i] == "\\\\"):
            q = not q
        if ch == "," and not q:
            out.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        out.append(cur.strip())
    return out


@dataclass(frozen=True)
class FixpipeParams:
    """``FixpipeParams<LayoutMode, QuantPre, ReluMode, ...>`` (the TConfig of TPUSH)."""

    layout_mode: str = "NZ2ND"
    quant_pre: str = "NoQuant"
    relu: bool = False

    @classmethod
    def parse(cls, text: Any) -> FixpipeParams:
        if isinstance(text, FixpipeParams):
            return text
        m = re.search(r"FixpipeParams<(.*)>", str(text))
        args = [a.strip().rsplit("::", 1)[-1] for a in (m.group(1).split(",") if m else [])]
        layout = args[0] if args else "NZ2ND"
        quant = args[1] if len(args) > 1 else "NoQuant"
        relu = len(args) > 2 and args[2] == "NormalRelu"
        return cls(layout, quant, relu)


#: QuantPre mode -> (destination element type, vector (per column) words?)
_QUANT_OUT: dict[str, tuple[str, bool]] = {
    "DEQF16": ("f16", False), "VDEQF16": ("f16", True),
    "QF322F16_PRE": ("f16", False), "VQF322F16_PRE": ("f16", True),
    "QF322BF16_PRE": ("bf16", False), "VQF322BF16_PRE": ("bf16", True),
    "REQ8": ("i8", False), "VREQ8": ("i8", True), "QF322B8_PRE": ("i8", False),
    "VQF322B8_PRE": ("i8", True), "DEQS16": ("i16", False), "VDEQS16": ("i16", True),
}


@dataclass
class _Slot:
    data: np.ndarray | None = None  # logical rows x cols of the pushed tile(s)
    parts: set[int] = field(default_factory=set)  # producer halves written (V2C split)
    readers: int = 1  # consumer sub-blocks that pop this slot
    from_acc: bool = False  # pushed from an Acc tile (converted to the consumer's type on pop)
    popped: set[int] = field(default_factory=set)
    freed: set[int] = field(default_factory=set)
    #: ring position: the slot made ``slot_num`` slots earlier must be freed before this one
    seq: int = 0
    #: cross-core edges (ptoisa.concurrent.edges): the producers' pushes, the consumers' frees,
    #: and the free of the slot this one reuses
    pushed: list[Any] = field(default_factory=list)
    frees: list[Any] = field(default_factory=list)
    reuse: Any = None


@dataclass
class Fifo:
    """The state of one pipe direction: slots in use, oldest first."""

    pipe: TPipe
    direction: Direction
    slots: deque[_Slot] = field(default_factory=deque)
    pushes: int = 0
    pops: int = 0
    made: int = 0  # slots made so far (the next slot's ``seq``)
    #: the release tokens of freed slots by ``seq``, until the slot reusing them is made
    freed: dict[int, Any] = field(default_factory=dict)

    def in_use(self) -> int:
        return len(self.slots)


def fifo(m: Machine, pipe: TPipe, direction: Direction) -> Fifo:
    """The machine's FIFO for ``pipe`` in one direction (created on first use)."""
    table: dict[tuple[TPipe, Direction], Fifo] | None = m.fifos
    if table is None:
        table = {}
        m.fifos = table
    key = (pipe.flag_id, direction)
    f = table.get(key)
    if f is None:
        f = table[key] = Fifo(pipe, direction)
    return f


def _wait(m: Machine, ready: Any, why: str) -> bool:
    """Block the calling core until ``ready()`` when it runs in a mixed launch (another core
    can fill or free a slot); False on a single core, where nothing else can."""
    stream = m.stream
    if stream is None:
        return False
    stream.wait_until(ready, why)
    return True


def _whole(m: Machine, tile: Tile) -> None:
    """A lockstep FIFO holds every block's tile in one slot: pipe operands must agree in shape
    across blocks (else the launch runs block by block)."""
    if m.lanes > 1 and tile.storage.ndim == 1:
        raise BlockDivergence("a pipe operand differs in shape between blocks")


def _push_direction(pipe: TPipe, tile: Tile) -> Direction:
    d = pipe.direction
    if d in (Direction.DIR_BOTH, Direction.DIR_BOTH_GM):
        return Direction.DIR_V2C if tile.spec.loc is TileType.Vec else Direction.DIR_C2V
    return Direction.DIR_V2C if d in _V2C else Direction.DIR_C2V


def _pop_direction(pipe: TPipe, tile: Tile) -> Direction:
    d = pipe.direction
    if d in (Direction.DIR_BOTH, Direction.DIR_BOTH_GM):
        return Direction.DIR_C2V if tile.spec.loc is TileType.Vec else Direction.DIR_V2C
    return Direction.DIR_V2C if d in _V2C else Direction.DIR_C2V


def _lane(m: Machine, sub_block: Any) -> int:
    lane = int(m.sub_block_id if sub_block is None else sub_block)
    if lane not in (0, 1):
        raise RuntimeCheckError(f"subBlockId must be 0 or 1 (AIV0/AIV1), got {lane}")
    return lane


def _split(v: Any) -> TileSplitAxis:
    if isinstance(v, TileSplitAxis):
        return v
    if isinstance(v, int):  # PTOAS writes {split = 0/1/2}
        if v in ODD_SPLITS:
            raise PtoError(f"split = {v} ({ODD_SPLITS[v]}) is not executed by ptoisa yet "
                           "(the odd split modes of GM-backed C2V pipes)")
        if v not in SPLIT_VALUES:
            raise PtoError(SPLIT_RANGE)
        return TileSplitAxis(v)
    return TileSplitAxis[str(v).rsplit("::", 1)[-1]]


def _lanes_active(pipe: TPipe, split: TileSplitAxis) -> int:
    """How many vector sub-blocks take part: both for a split or an IsNoSplit pipe."""
    return 2 if split is not TileSplitAxis.TILE_NO_SPLIT or pipe.is_no_split else 1


def _half(split: TileSplitAxis, lane: int, rows: int, cols: int) -> tuple[int, int, int, int]:
    """(r0, c0, rows, cols) of sub-block ``lane``'s part of a rows x cols slot."""
    if split is TileSplitAxis.TILE_UP_DOWN:
        h = rows // 2
        return lane * h, 0, h, cols
    if split is TileSplitAxis.TILE_LEFT_RIGHT:
        w = cols // 2
        return 0, lane * w, rows, w
    return 0, 0, rows, cols


def _split_rule(sig: Sig) -> None:
    """PTOAS's ``split`` attribute takes 0-4 (the odd modes 3/4 are refused when run)."""
    v = sig.params.get("Split")
    if isinstance(v, int) and not isinstance(v, bool) and v not in SPLIT_VALUES:
        raise sig.fail(f"{SPLIT_RANGE}, got {v}")


def _tile_pipe_rule(sig: Sig) -> None:
    t = sig["tile"]
    if not isinstance(t, TileSpec):
        return  # a GlobalTensor slot (the GlobalData form), or not known yet
    if t.loc not in _PIPE_LOCS:
        allowed = ", ".join(sorted(x.name for x in _PIPE_LOCS))
        raise sig.fail(f"tile must be a {allowed} tile, got {t.loc.name}")


_PIPE_LOCS = {TileType.Acc, TileType.Vec, TileType.Mat}


def _pipe_operand(ins: Any, pipe: Any, *rest: Any, **params: Any) -> None:
    """The operand is a TPipe and, when the ``Pipe`` template argument is given, that type."""
    if not isinstance(pipe, TPipe):
        raise RuntimeCheckError(f"pipe must be a TPipe, got {type(pipe).__name__}",
                                op=ins.mnemonic)
    given = params.get("Pipe")
    if given is not None and (TPipe.parse(given) if isinstance(given, str) else given) != pipe:
        raise RuntimeCheckError(f"template argument Pipe={given} differs from the pipe "
                                f"operand {pipe}", op=ins.mnemonic)


def _quant_register(m: Machine) -> tuple[str, np.ndarray] | None:
    return m.fixpipe_quant


def _fixpipe(m: Machine, tile: Tile, cfg: FixpipeParams) -> np.ndarray:
    """The values a TConfig push stores: the Acc tile's valid region through the fix-pipe."""
    vals = tile.read()
    out = _QUANT_OUT.get(cfg.quant_pre)
    if out is None:
        if cfg.quant_pre != "NoQuant":
            raise IllegalInstruction(f"TConfig QuantPre {cfg.quant_pre} is not supported")
        return np.maximum(vals, 0) if cfg.relu else np.array(vals, copy=True)
    dst_name, vector = out
    reg = _quant_register(m)
    want = "vector" if vector else "scalar"
    if reg is None or reg[0] != want:
        setter = "SET_QUANT_VECTOR" if vector else "SET_QUANT_SCALAR"
        raise RuntimeCheckError(f"TConfig QuantPre {cfg.quant_pre} needs the {want} quant "
                                f"register; call {setter} before TPUSH")
    words = reg[1]
    dst = D.dtype(dst_name)
    mode = "B8" if dst_name in ("i8", "ui8") else ("DEQF16" if cfg.quant_pre.endswith("DEQF16")
                                                 else "SHIFT16" if dst_name == "i16"
                                                 else "FLOAT")
    if vector:
        vc = vals.shape[-1]
        if words.size < vc:
            raise RuntimeCheckError(f"quant vector holds {words.size} words, the Acc tile has "
                                    f"{vc} valid columns (one word per column)")
        words = words.reshape(-1)[:vc].reshape(1, vc)
    with np.errstate(all="ignore"):
        return quantize(vals, words, mode, dst, vector=vector, relu=cfg.relu)


def _slot_form_on_s(vals: dict[str, Any]) -> Pipe | None:
    """The GlobalData forms of TPUSH / TPOP compute a slot address and signal or wait on a
    cross-core flag (the scalar unit); the data moves in the TSTORE / TLOAD around them."""
    return Pipe.S if isinstance(vals.get("tile"), GlobalTensor) else None


def _no_access(role: str) -> Any:
    """The access role of a pipe operand that may be a tile or a GlobalTensor slot: a slot
    view is only pointed at (TALLOC / TPOP) or named (TPUSH / TFREE); its bytes are accessed
    by the TSTORE / TLOAD around it (:mod:`ptoisa.concurrent.access`)."""
    def role_of(values: list[Any]) -> str:
        return "none" if len(values) > 1 and isinstance(values[1], GlobalTensor) else role
    return role_of


_OPERANDS = (Opnd("pipe", "any"), Opnd("tile", "tile|gm"),
             Opnd("subBlockId", "scalar", optional=True))


@instr("TPUSH", family="pipes", sync="pipe", pipe=Pipe.FIX, operands=_OPERANDS,
       ptoas=Ptoas(forms={"pto.tpush": (Form(inputs=("tile", "pipe"), outs=()),)}, attrs=SPLIT,
                   frontend=("pto.tpush_to_aiv", "pto.tpush_to_aic")),
       params=(Param("Pipe", None), Param("Split", "TILE_NO_SPLIT"), Param("TConfig", None)),
       dtype_key=("tile",), static=(_tile_pipe_rule, _split_rule), runtime=(_pipe_operand,),
       access_roles={"tile": _no_access("in")}, pipe_of=_slot_form_on_s, batched=True)
def TPUSH(m: Machine, pipe: TPipe, tile: Tile, subBlockId: Any = None, *,  # noqa: N802,N803
          Pipe: Any, Split: Any, TConfig: Any) -> None:  # noqa: N803
    """Producer half of the FIFO: wait for a free slot, store the tile's valid region into it,
    mark it ready. A vector push with a split stores sub-block ``subBlockId``'s half; with
    ``TConfig`` (FixpipeParams) the Acc tile goes through the fix-pipe conversion.

    ``TPUSH(pipe, slot)`` (a GlobalTensor from TALLOC) is the GlobalData form: it only tells
    the consumer(s) that the slot is written (see TALLOC)."""
    split = _split(Split)
    lane = _lane(m, subBlockId)
    if isinstance(tile, GlobalTensor):
        gm_push(m, pipe, lane)
        return
    direction = _push_direction(pipe, tile)
    f = fifo(m, pipe, direction)
    vector_producer = direction is Direction.DIR_V2C
    if vector_producer and lane >= _lanes_active(pipe, split):
        return  # AIV1 does not take part in a single-lane NO_SPLIT pipe
    _whole(m, tile)
    values = _fixpipe(m, tile, FixpipeParams.parse(TConfig)) if TConfig is not None \
        else np.array(tile.read(), copy=True)
    itemsize = values.dtype.itemsize
    if TConfig is None and tile.loc is TileType.Acc and pipe.epilogue_out is not None:
        itemsize = D.dtype(pipe.epilogue_out).itemsize  # (the consumer's converted data)
    nbytes = values.size * itemsize // max(m.lanes, 1)
    if vector_producer and split is not TileSplitAxis.TILE_NO_SPLIT:
        # two halves into one slot: the open slot is the oldest one still missing this half
        def open_slot() -> _Slot | None:
            return next((s for s in f.slots if s.parts and lane not in s.parts
                         and len(s.parts) < 2), None)
        slot = open_slot()
        if slot is None:
            slot = _new_slot(m, f, pipe, nbytes, readers=1, opened=open_slot)
        if slot.data is None:
            *lead, h, w = values.shape
            full = (2 * h, w) if split is TileSplitAxis.TILE_UP_DOWN else (h, 2 * w)
            slot.data = np.zeros((*lead, *full), values.dtype)
        r0, c0, h, w = _half(split, lane, *slot.data.shape[-2:])
        if (h, w) != values.shape[-2:]:
            raise RuntimeCheckError(f"sub-block {lane} pushes a {values.shape[-2]}x"
                                    f"{values.shape[-1]} tile into a {h}x{w} half slot")
        slot.data[..., r0:r0 + h, c0:c0 + w] = values
        slot.parts.add(lane)
    else:
        readers = _lanes_active(pipe, split) if direction is Direction.DIR_C2V else 1
        slot = _new_slot(m, f, pipe, nbytes, readers=readers)
        slot.data = values
        slot.parts = {0, 1}
    slot.from_acc = tile.loc is TileType.Acc
    f.pushes += 1
    # cross-core edges: this push writes the ring position a consumer's free released; the
    # consumer's pop of this slot is ordered after it
    edges.acquire(m, slot.reuse, pipe=edges.wait_scope(m))
    slot.pushed.append(edges.release(m, _VEC_PUSH_PIPE if vector_producer else None))


def _slot_rule(sig: Sig) -> None:
    t = sig["slot"]
    if t is not None and not isinstance(t, GMSpec):
        raise sig.fail("slot must be a GlobalTensor (the FIFO slot view)")


@instr("TALLOC", family="pipes", sync="pipe", pipe=Pipe.S, access="place",
       ptoas=Ptoas(frontend=("pto.talloc_to_aiv", "pto.talloc_to_aic")),
       operands=(Opnd("pipe", "any"), Opnd("slot", "gm", "out"),
                 Opnd("subBlockId", "scalar", optional=True)),
       params=(Param("Pipe", None), Param("Split", "TILE_NO_SPLIT")),
       static=(_slot_rule, _split_rule), runtime=(_pipe_operand,), batched=True)
def TALLOC(m: Machine, pipe: TPipe, slot: GlobalTensor, subBlockId: Any = None, *,  # noqa: N802,N803
           Pipe: Any, Split: Any) -> None:  # noqa: N803
    """Producer half of the GlobalData FIFO: point ``slot`` at the next slot of the pipe's GM
    buffer (``TPipe(..., buffer=...)``), slot ``tileIndex % SlotNum`` of ``SlotSize`` bytes;
    a vector producer's (V2C) view starts at its sub-block's part of a split slot (TILE_UP_DOWN:
    sub-block ``k`` is ``k`` times the view's rows x cols further on, TILE_LEFT_RIGHT: ``k``
    times its columns). Before reusing a slot it waits for the consumers' free notifications,
    sparsely as ``Pipe::shouldWaitFree`` does: at tile index ``i >= SlotNum`` with
    ``i % SyncPeriod == 0`` (``SyncPeriod`` = SlotNum when SlotNum <= 2, else SlotNum / 2).
    Nothing is written: store into ``slot`` (TSTORE), then commit it with ``TPUSH(pipe, slot)``.
    On the vector side both sub-blocks take part whatever the split (the cube waits for and
    notifies both), as the C++ GlobalData forms do."""
    gm_alloc(m, pipe, slot, _split(Split), _lane(m, subBlockId))


def _new_slot(m: Machine, f: Fifo, pipe: TPipe, nbytes: int, readers: int,
              opened: Any = None) -> _Slot:
    """A new slot for ``nbytes`` of data read by ``readers`` sub-blocks (a split slot holds one
    ``SlotSize`` part per sub-block). With all slots in use, a core of a mixed launch waits
    for a consumer to free one (or, for a split push, for the other sub-block to open the slot
    this half belongs to: ``opened()``)."""
    per_part = nbytes // 2 if readers == 2 and not pipe.is_no_split else nbytes
    if per_part > pipe.slot_size:
        raise RuntimeCheckError(f"the pushed data is {per_part} bytes per consumer, a slot of "
                                f"{pipe} holds {pipe.slot_size}")
    if f.in_use() >= pipe.slot_num:
        def ready() -> bool:
            return f.in_use() < pipe.slot_num or (opened is not None and opened() is not None)
        if not _wait(m, ready, f"all {pipe.slot_num} slots of the {f.direction.name[4:]} "
                               f"FIFO (flag {pipe.flag_id}) are in use"):
            raise ExecutionError(f"deadlock: all {pipe.slot_num} slots of {pipe} "
                                 f"({f.direction.name}) are in use and no consumer can free "
                                 "one", op="tpush")
        if opened is not None and (s := opened()) is not None:
            return s
    slot = _Slot(readers=readers, seq=f.made)
    slot.reuse = f.freed.pop(f.made - pipe.slot_num, None)
    f.made += 1
    f.slots.append(slot)
    return slot


def _release_slot(m: Machine, f: Fifo, slot: _Slot) -> None:
    """Recycle ``slot`` (every consumer freed it): the push that reuses its ring position
    picks up the consumers' free tokens."""
    f.slots.remove(slot)
    tok = edges.merged(*slot.frees)
    if tok is not None:
        f.freed[slot.seq] = tok


@instr("TPOP", family="pipes", sync="pipe", pipe=Pipe.MTE2,
       ptoas=Ptoas(forms={"pto.tpop": (Form(inputs=("tile", "pipe"), outs=()),)}, attrs=SPLIT,
                   frontend=("pto.tpop_from_aic", "pto.tpop_from_aiv")),
       operands=(Opnd("pipe", "any"), Opnd("tile", "tile|gm", "out"),
                 Opnd("subBlockId", "scalar", optional=True)),
       params=(Param("Pipe", None), Param("Split", "TILE_NO_SPLIT")),
       dtype_key=("tile",), static=(_tile_pipe_rule, _split_rule), runtime=(_pipe_operand,),
       access_roles={"tile": _no_access("out")}, pipe_of=_slot_form_on_s, batched=True)
def TPOP(m: Machine, pipe: TPipe, tile: Tile, subBlockId: Any = None, *,  # noqa: N802,N803
         Pipe: Any, Split: Any) -> None:  # noqa: N803
    """Consumer half: take the oldest ready slot (sub-block ``subBlockId``'s half of it for a
    split C2V pipe) into the tile's valid region.

    ``TPOP(pipe, slot)`` (a GlobalTensor) is the GlobalData form: wait until the next slot is
    pushed and point ``slot`` at it (at sub-block ``subBlockId``'s part for a split C2V pipe);
    the consumer reads it with TLOAD and releases it with ``TFREE(pipe, slot)``."""
    split = _split(Split)
    lane = _lane(m, subBlockId)
    if isinstance(tile, GlobalTensor):
        gm_pop(m, pipe, tile, split, lane)
        return
    direction = _pop_direction(pipe, tile)
    f = fifo(m, pipe, direction)
    vector_consumer = direction is Direction.DIR_C2V
    if vector_consumer and lane >= _lanes_active(pipe, split):
        return  # AIV1 does not take part in a single-lane NO_SPLIT pipe
    _whole(m, tile)

    def ready_slot() -> _Slot | None:
        if vector_consumer:
            return next((s for s in f.slots if lane not in s.popped and len(s.parts) == 2),
                        None)
        return next((s for s in f.slots if not s.popped and len(s.parts) == 2), None)
    slot = ready_slot()
    if slot is None and _wait(m, lambda: ready_slot() is not None,
                              f"the {f.direction.name[4:]} FIFO (flag {pipe.flag_id}) has no "
                              f"ready slot for sub-block {lane}"):
        slot = ready_slot()
    if slot is None or slot.data is None:
        raise ExecutionError(f"deadlock: {pipe} ({f.direction.name}) has no ready slot "
                             f"for sub-block {lane} and nothing else runs to fill it",
                             op="tpop")
    data = slot.data
    if vector_consumer:
        r0, c0, h, w = _half(split, lane, *data.shape[-2:])
        data = data[..., r0:r0 + h, c0:c0 + w]
    vr, vc = tile.valid_shape
    if data.shape[-2] < vr or data.shape[-1] < vc:
        raise RuntimeCheckError(f"the slot holds {data.shape[-2]}x{data.shape[-1]}, the "
                                f"tile's valid region is {vr}x{vc}")
    if data.dtype != tile.dtype.np:
        if not slot.from_acc:
            raise RuntimeCheckError(f"the slot holds {data.dtype} data, the tile is "
                                    f"{tile.dtype}")
        # an Acc tile leaves the cube through the fix-pipe, which converts to the consumer's
        # element type (round to nearest even; saturating for integers)
        data = _convert(data, tile.dtype.np)
    tile.write(data[..., :vr, :vc])
    slot.popped.add(lane if vector_consumer else 0)
    f.pops += 1
    # cross-core edge: what the producer(s) did before the push is done before this pop
    edges.acquire(m, *slot.pushed, pipe=edges.wait_scope(m))


@instr("TFREE", family="pipes", sync="pipe", pipe=Pipe.S,
       # pto.tfree(%pipe) or, naming what the slot was popped into, pto.tfree(%tile | %entry,
       # %pipe) (tile-native and GlobalTensor entry forms)
       ptoas=Ptoas(forms={"pto.tfree": (Form(inputs=("pipe",), outs=()),
                                        Form(inputs=("slot", "pipe"), outs=()))}, attrs=SPLIT,
                   frontend=("pto.tfree_from_aic", "pto.tfree_from_aiv")),
       operands=(Opnd("pipe", "any"), Opnd("slot", "any", optional=True),
                 Opnd("subBlockId", "scalar", optional=True)),
       params=(Param("Pipe", None), Param("Split", "TILE_NO_SPLIT")), static=(_split_rule,),
       runtime=(_pipe_operand,), access_roles={"slot": "none"}, batched=True)
def TFREE(m: Machine, pipe: TPipe, slot: Any = None, subBlockId: Any = None, *,  # noqa: N802,N803
          Pipe: Any, Split: Any) -> None:  # noqa: N803
    """Release the slot this sub-block popped last (the slot is recycled once every consumer
    sub-block has freed it). With nothing popped, the oldest queued slot is released and its
    data discarded (what the CPU simulator does).

    ``TFREE(pipe, slot)`` (the GlobalTensor TPOP pointed at a slot) is the GlobalData form:
    the consumer is done reading the slot; it tells the producer once every ``SyncPeriod``
    slots (see TALLOC). A number in ``slot``'s place is the sub-block id (``TFREE(pipe, 1)``:
    ptoisa's tile-form extension, as before the GlobalData form). A tile in ``slot``'s place
    (PTOAS's ``pto.tfree(%tile, %pipe)``: the tile the slot was popped into) frees the slot
    this sub-block popped last, as ``TFREE(pipe)``."""
    if isinstance(slot, Tile):
        slot = None
    if slot is not None and not isinstance(slot, GlobalTensor):
        slot, subBlockId = None, slot
    split = _split(Split)
    lane = _lane(m, subBlockId)
    if slot is not None:
        gm_free(m, pipe, lane)
        return
    for direction in _free_directions(pipe):
        f = fifo(m, pipe, direction)
        vector_consumer = direction is Direction.DIR_C2V
        if vector_consumer and lane >= _lanes_active(pipe, split):
            return  # AIV1 does not take part in a single-lane NO_SPLIT pipe
        who = lane if vector_consumer else 0
        slot = next((s for s in f.slots if who in s.popped and who not in s.freed), None)
        if slot is not None:
            slot.freed.add(who)
            # the free fires once the pop's copy out of the slot (MTE2) is done
            slot.frees.append(edges.release(m, _FREE_PIPE))
            if len(slot.freed) >= slot.readers:
                _release_slot(m, f, slot)
            return
    for direction in _free_directions(pipe):
        f = fifo(m, pipe, direction)
        if f.slots and not f.slots[0].popped:
            slot = f.slots[0]
            slot.frees.append(edges.release(m, _FREE_PIPE))
            _release_slot(m, f, slot)
            return


# ---- the GlobalData forms: a ring of slots in GM ---------------------------------------------

#: who takes part in a GM ring: the cube, or a vector sub-block (0, 1)
_CUBE = "AIC"


@dataclass
class GmRing:
    """One GM FIFO (a pipe's FlagID and direction) used through its GlobalData forms. Each
    core's TPipe object keeps its own producer and consumer tile index (C++ ``prod.tileIndex``
    / ``cons.tileIndex``), and the cross-core flags count notifications: ``ready[(p, c)]`` the
    data-ready records producer ``p`` made for consumer ``c`` not yet waited for, ``free[(c,
    p)]`` the free notifications consumer ``c`` made for producer ``p``; each entry is the
    edge token of one notification (:mod:`ptoisa.concurrent.edges`)."""

    pipe: TPipe
    direction: Direction
    prod: dict[Any, int] = field(default_factory=dict)
    cons: dict[Any, int] = field(default_factory=dict)
    ready: dict[tuple[Any, Any], deque[Any]] = field(default_factory=dict)
    free: dict[tuple[Any, Any], deque[Any]] = field(default_factory=dict)
    pushed: dict[Any, int] = field(default_factory=dict)

    @property
    def producers(self) -> tuple[Any, ...]:
        return (_CUBE,) if self.direction is Direction.DIR_C2V else (0, 1)

    @property
    def consumers(self) -> tuple[Any, ...]:
        return (0, 1) if self.direction is Direction.DIR_C2V else (_CUBE,)

    def queue(self, table: dict[tuple[Any, Any], deque[Any]], key: tuple[Any, Any]) -> deque[Any]:
        q = table.get(key)
        if q is None:
            q = table[key] = deque()
        return q


def _gm_direction(pipe: TPipe, op: str) -> Direction:
    d = pipe.direction
    if d in (Direction.DIR_C2V, Direction.DIR_C2V_GM):
        return Direction.DIR_C2V
    if d in (Direction.DIR_V2C, Direction.DIR_V2C_GM):
        return Direction.DIR_V2C
    raise ExecutionError(f"the GlobalData form of {op} on a {d.name} pipe is not executed by "
                         "ptoisa (C2V and V2C pipes: DIR_C2V / DIR_V2C, DIR_C2V_GM / "
                         "DIR_V2C_GM)", op=op.lower())


def gm_ring(m: Machine, pipe: TPipe, op: str) -> GmRing:
    """The machine's (cluster's) GM ring of ``pipe`` (created on first use)."""
    direction = _gm_direction(pipe, op)
    if pipe.buffer is None:
        raise RuntimeCheckError(f"{pipe} has no GM slot buffer: the GlobalData form of {op} "
                                "needs TPipe(..., buffer=array or GlobalTensor) (the C++ "
                                "constructor's GM_SLOT_BUFFER)", op=op.lower())
    table = m.fifos
    if table is None:
        table = m.fifos = {}
    key = (pipe.flag_id, direction, "gm")
    r = table.get(key)
    if r is None:
        r = table[key] = GmRing(pipe, direction)
    return r


def _gm_slot(m: Machine, pipe: TPipe, slot: GlobalTensor, index: int, split: TileSplitAxis,
             lane: int | None, op: str) -> None:
    """Point ``slot`` at ring position ``index % SlotNum`` of the pipe's GM buffer, at vector
    sub-block ``lane``'s part for a split (the slot view's static rows x cols: the next rows
    for TILE_UP_DOWN, the next columns for TILE_LEFT_RIGHT; ``lane`` None: the whole slot)."""
    buf = pipe.buffer
    if isinstance(buf, GlobalTensor):
        flat, base = buf.flat, buf.offset * buf.dtype.itemsize
    elif isinstance(buf, np.ndarray) and buf.flags.c_contiguous:
        flat, base = buf.reshape(-1), 0
    else:
        raise RuntimeCheckError(f"the GM slot buffer of {pipe} must be a C-contiguous numpy "
                                f"array or a GlobalTensor, got {type(buf).__name__}", op=op)
    item = slot.dtype.itemsize
    rows, cols = slot.spec.shape[3], slot.spec.shape[4]
    part = 0
    if lane is not None and split is TileSplitAxis.TILE_UP_DOWN:
        part = lane * rows * cols * item
    elif lane is not None and split is TileSplitAxis.TILE_LEFT_RIGHT:
        part = lane * cols * item
    byte = base + (index % pipe.slot_num) * pipe.slot_size + part
    raw = flat.view(np.uint8)
    if raw.nbytes % item or np.any(np.asarray(byte) % item):
        raise RuntimeCheckError(f"slot {index % pipe.slot_num} of {pipe} is not aligned to "
                                f"the slot view's {slot.dtype.name} elements", op=op)
    slot.point_at(raw.view(slot.dtype.np), byte // item)


def _gm_wait(m: Machine, ring: GmRing, table: dict[tuple[Any, Any], deque[Any]],
             keys: list[tuple[Any, Any]], what: str, op: str) -> list[Any]:
    """Take one notification from each queue of ``keys`` (waiting, in a mixed launch, until
    every one has one): the edge tokens taken."""
    def ready() -> bool:
        return all(table.get(k) for k in keys)
    if not ready() and not _wait(m, ready, f"{what} (GM FIFO flag {ring.pipe.flag_id})"):
        raise ExecutionError(f"deadlock: {ring.pipe} ({ring.direction.name}): {what} and "
                             "nothing else runs to give it", op=op)
    return [ring.queue(table, k).popleft() for k in keys]


def _producer(ring: GmRing, lane: int) -> Any:
    return _CUBE if ring.direction is Direction.DIR_C2V else lane


def _consumer(ring: GmRing, lane: int) -> Any:
    return lane if ring.direction is Direction.DIR_C2V else _CUBE


def gm_alloc(m: Machine, pipe: TPipe, slot: GlobalTensor, split: TileSplitAxis,
             lane: int) -> None:
    """TALLOC: wait for free space where ``Pipe::shouldWaitFree`` says (tile index >= SlotNum
    and a multiple of SyncPeriod), point ``slot`` at the next ring position."""
    ring = gm_ring(m, pipe, "TALLOC")
    who = _producer(ring, lane)
    index = ring.prod.get(who, 0)
    if index >= pipe.slot_num and index % pipe.sync_period == 0:
        keys = [(c, who) for c in ring.consumers]
        toks = _gm_wait(m, ring, ring.free, keys,
                        f"slot {index % pipe.slot_num} is not freed yet", "talloc")
        hold = Pipe.FIX if who == _CUBE else Pipe.MTE3  # A5 waits on the writing pipe
        edges.acquire(m, *toks, pipe=edges.wait_scope(m, hold))
    _gm_slot(m, pipe, slot, index, split, None if who == _CUBE else lane, "talloc")
    ring.prod[who] = index + 1


def gm_push(m: Machine, pipe: TPipe, lane: int) -> None:
    """TPUSH of a GlobalTensor: record data-ready for every consumer (the cube's record fires
    from the fix pipe, a vector core's from MTE3: what wrote the slot must be done there)."""
    ring = gm_ring(m, pipe, "TPUSH")
    who = _producer(ring, lane)
    n = ring.pushed.get(who, 0)
    if n >= ring.prod.get(who, 0):
        raise RuntimeCheckError(f"TPUSH of a GlobalTensor slot of {pipe} with no slot "
                                "allocated: call TALLOC(pipe, slot) first (and write it)",
                                op="tpush")
    ring.pushed[who] = n + 1
    tok = edges.release(m, Pipe.FIX if who == _CUBE else _VEC_PUSH_PIPE)
    for c in ring.consumers:
        ring.queue(ring.ready, (who, c)).append(tok)


def gm_pop(m: Machine, pipe: TPipe, slot: GlobalTensor, split: TileSplitAxis,
           lane: int) -> None:
    """TPOP of a GlobalTensor: wait for data-ready from every producer, point ``slot`` at the
    next ring position (a vector consumer at its part of a split slot)."""
    ring = gm_ring(m, pipe, "TPOP")
    who = _consumer(ring, lane)
    index = ring.cons.get(who, 0)
    keys = [(p, who) for p in ring.producers]
    toks = _gm_wait(m, ring, ring.ready, keys, f"slot {index % pipe.slot_num} is not pushed "
                    f"yet for {'the cube' if who == _CUBE else f'sub-block {who}'}", "tpop")
    edges.acquire(m, *toks, pipe=edges.wait_scope(m, Pipe.MTE2))
    _gm_slot(m, pipe, slot, index, split, None if who == _CUBE else lane, "tpop")
    ring.cons[who] = index + 1


def gm_free(m: Machine, pipe: TPipe, lane: int) -> None:
    """TFREE of a GlobalTensor: notify free space where ``Pipe::shouldNotifyFree`` says (the
    popped tile index + 1 a multiple of SyncPeriod), from MTE2 (the slot's loads done)."""
    ring = gm_ring(m, pipe, "TFREE")
    who = _consumer(ring, lane)
    popped = ring.cons.get(who, 0) - 1
    if popped < 0:
        raise RuntimeCheckError(f"TFREE of a GlobalTensor slot of {pipe} before any TPOP of "
                                f"one by {'the cube' if who == _CUBE else f'sub-block {who}'}",
                                op="tfree")
    if (popped + 1) % pipe.sync_period:
        return
    tok = edges.release(m, _FREE_PIPE)
    for p in ring.producers:
        ring.queue(ring.free, (who, p)).append(tok)


def _convert(data: np.ndarray, to: np.dtype) -> np.ndarray:
    with np.errstate(invalid="ignore", over="ignore"):  # (NaN / inf: numpy's cast, no warning)
        if np.issubdtype(to, np.integer):
            info = np.iinfo(to)
            return np.clip(np.rint(data), info.min, info.max).astype(to)
        return data.astype(to)


def _free_directions(pipe: TPipe) -> list[Direction]:
    if pipe.direction in (Direction.DIR_BOTH, Direction.DIR_BOTH_GM):
        return [Direction.DIR_C2V, Direction.DIR_V2C]
    return [Direction.DIR_V2C if pipe.direction in _V2C else Direction.DIR_C2V]


#: SET_QUANT_SCALAR's OutType -> whether the 8-bit sign flag (bit 46) is set
_SIGNED_8 = {"int8_t": True, "signed char": True, "i8": True, "uint8_t": False,
             "unsigned char": False, "ui8": False}


#: ``{id = k}`` of pto.set_quant_scalar / pto.set_quant_vector
_QUANT_ID = Ptoas(attrs={"id": Attr(only=None, why=(
    "PTOAS's logical pipe id, which it checks a fix-pipe push against; the C++ call takes "
    "none: one quant register per core, read by the next fix-pipe TPUSH in program order "
    "(PTOAS re-emits the setting before a push of another id)"))})


@instr("SET_QUANT_SCALAR", family="pipes", pipe=Pipe.S, ptoas=_QUANT_ID,
       operands=(Opnd("preQuantScalar", "scalar"),), params=(Param("OutType", "_Float16"),))
def SET_QUANT_SCALAR(m: Machine, preQuantScalar: Any, *,  # noqa: N802,N803
                     OutType: Any) -> None:  # noqa: N803
    """Program the scalar quant register read by the next fix-pipe TPUSH: the f32 bits of
    ``preQuantScalar``, with the sign flag (bit 46) for a signed 8-bit ``OutType``."""
    word = int(np.array([preQuantScalar], np.float32).view(np.uint32)[0])
    if _SIGNED_8.get(str(OutType).replace("std::", ""), False):
        word |= 1 << 46
    m.fixpipe_quant = ("scalar", np.array([[word]], np.uint64))


def _scaling_tile(sig: Sig) -> None:
    t = sig["fpTile"]
    if t is not None and t.loc is not TileType.Scaling:
        raise sig.fail(f"fpTile must be a Scaling tile, got {t.loc.name}")


def _ptoas_payload(sig: Sig) -> None:
    """PTOAS's rule for the payload tile's element type (by target: a trait; PTOAS's words
    are the ``says`` of the target's legality rule)."""
    t = sig["fpTile"]
    want = sig.target.traits.quant_vector_types
    if t is not None and t.dtype.name not in want:
        rule = sig.target.legality.get("SET_QUANT_VECTOR")
        says = rule.extra.get("says") if rule is not None else None
        head = says or f"expects 'scaling_tile' element type to be one of {sorted(want)}"
        raise sig.fail(f"{head} (target {sig.target}: {' or '.join(sorted(want))}, got "
                       f"{t.dtype})")


@instr("SET_QUANT_VECTOR", family="pipes", pipe=Pipe.S,
       ptoas=Ptoas(attrs=_QUANT_ID.attrs, rules={"pto.set_quant_vector": (_ptoas_payload,)}),
       operands=(Opnd("fpTile", "tile"),), dtype_key=("fpTile",), static=(_scaling_tile,))
def SET_QUANT_VECTOR(m: Machine, fpTile: Tile) -> None:  # noqa: N802,N803
    """Program the vector quant register (one uint64 word per output column) from a Scaling
    tile, read by the next fix-pipe TPUSH. A5's payload of f16 / bf16 / f32 scales is refused
    by name when it runs: how the fix-pipe reads it (the FPC encoding) is not documented."""
    if fpTile.dtype.is_float:
        raise ExecutionError(
            "operation 'pto.set_quant_vector' cannot be executed by ptoisa yet: a vector quant "
            f"payload of {fpTile.dtype} scales (A5), whose encoding in the fix-pipe's FPC "
            "register is implementation-defined (SET_QUANT_VECTOR.md)")
    words = np.array(fpTile.read(), copy=True).astype(np.uint64).reshape(1, -1)
    m.fixpipe_quant = ("vector", words)

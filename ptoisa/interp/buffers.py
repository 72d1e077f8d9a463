"""Interpreter handlers of the ops that make and place tile buffers: ``alloc_tile`` (placed at
``addr`` through the TASSIGN entry, or automatically), ``alloc_multi_tile`` /
``multi_tile_get`` (N slots of one tile type, one selected by index), ``memref.alloc``,
``set_validshape`` and ``tassign``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..errors import ExecutionError, PtoError, VerifyError
from ..ir import types as T
from ..ir.core import Op
from ..isa import REGISTRY
from ..memory import address_fault, tile_space
from ..targets import get_target
from ..tile import Tile
from . import bridge
from .compiler import (
    CompiledFunc,
    Env,
    Step,
    _index,
    handler,
)
from .views import _NO_PARAMS, _one_value

#: placement of a .pto tile: the TASSIGN entry, as eager code writes it
_TASSIGN = REGISTRY["TASSIGN"]


def _placement(cf: CompiledFunc, op: Op) -> tuple[Any, Any, Any]:
    """The slots of an allocation's ``addr``, ``valid_row`` and ``valid_col`` (None: not
    written)."""
    kw = op.keyword_operands
    return tuple(cf.slot(kw[n]) if n in kw else None  # type: ignore[return-value]
                 for n in ("addr", "valid_row", "valid_col"))


def _place(env: Env, tile: Tile, at: int | None, vr: Any, vc: Any, loc: Any) -> None:
    """Place ``tile`` at byte ``at`` through the TASSIGN entry (as eager code writes it; None:
    automatic placement) and give it the valid region the slots ``vr`` / ``vc`` hold."""
    if at is not None:
        _TASSIGN.run(env[0].machine, [tile, at], _NO_PARAMS, checked=True, loc=loc)
    if vr is not None or vc is not None:
        tile.set_valid(None if vr is None else _index(env[vr]),
                       None if vc is None else _index(env[vc]))


@handler("pto.alloc_tile")
def _alloc_tile(cf: CompiledFunc, op: Op) -> Step:
    res = op.results[0]
    tile = cf.result_tile(op, res, "alloc_tile result type", "a tile_buf")
    k = cf.slot(res)
    addr, vr, vc = _placement(cf, op)
    loc = op.loc
    if addr is not None and addr in cf.consts:  # a constant address: checked before any run
        _check_const_addr(cf, op, tile, cf.consts[addr])

    def step(env: Env) -> None:
        try:
            _place(env, tile, None if addr is None else int(env[addr]), vr, vc, loc)
        except PtoError as e:
            raise e.with_loc(loc) from None
        env[k] = tile
    return step


def _check_const_addr(cf: CompiledFunc, op: Op, tile: Tile, addr: Any) -> None:
    """VerifyError at ``op`` when a constant ``alloc_tile addr`` cannot hold the tile (the
    placement's own checks, made when compiling: ``ptoisa check`` refuses what a run would)."""
    if isinstance(addr, bool) or not isinstance(addr, (int, np.integer)):
        return  # (not an integer: the placement says so when it runs)
    target = get_target(cf.c.target)
    fault = address_fault(tile._label(), int(addr), tile.spec.nbytes,
                          tile_space(tile.loc, target), target, tile.loc.name)
    if fault is not None:
        raise VerifyError(fault, op=op.name, loc=op.loc)


class MultiTile:
    """The value of ``pto.alloc_multi_tile``: ``count`` slots of one tile_buf type, each a
    tile of its own (PlanMemory gives each slot its own bytes; under level3 slot ``k`` is
    placed at ``addr + k * slotBytes``, slotBytes = rows * cols * element size)."""

    __slots__ = ("slots",)

    def __init__(self, slots: Sequence[Tile]) -> None:
        self.slots = tuple(slots)


def _multi_of(op: Op, t: T.Type) -> tuple[T.Type, int]:
    try:
        got = bridge.multi_tile_type(t)
    except PtoError as e:
        raise VerifyError(str(e), op=op.name, loc=op.loc) from None
    if got is None:
        raise VerifyError(f"expects a !pto.multi_tile_buf<slot, count=N>, got {t}", op=op.name,
                          loc=op.loc)
    return got


@handler("pto.alloc_multi_tile")
def _alloc_multi_tile(cf: CompiledFunc, op: Op) -> Step:
    """N slots of one tile type; the manual's type and op constraints are checked here (the
    level rules and a constant addr's alignment in :mod:`ptoisa.interp.verify`)."""
    res = op.results[0] if op.results else None
    if res is None:
        raise VerifyError("expects one !pto.multi_tile_buf result", op=op.name, loc=op.loc)
    slot, count = _multi_of(op, res.type)
    if not 2 <= count <= 16:
        raise VerifyError(f"multi_tile_buf count must be >= 2 and <= 16, got {count}",
                          op=op.name, loc=op.loc)
    if op.attributes.get("pto.multi_buffer_addrs") is not None:
        raise VerifyError("attribute 'pto.multi_buffer_addrs' is reserved for pto-plan-memory "
                          "(the slot addresses are planned, or derived from 'addr' under "
                          "level3)", op=op.name, loc=op.loc)
    if isinstance(slot, T.TileBufType) and slot.compact == "row_plus_one":
        raise VerifyError("rejects a compact = row_plus_one slot layout (slots are placed "
                          "rows * cols elements apart and would overlap)", op=op.name,
                          loc=op.loc)
    tiles = []
    for k in range(count):
        spec = bridge.tile_spec_of(slot, cf.c.target)
        if spec is None:
            raise VerifyError(f"slot type {slot} is not a tile_buf", op=op.name, loc=op.loc)
        tile = Tile.of(spec, name=f"{res.name}[{k}]")
        cf.tiles.append(tile)
        tiles.append(tile)
    value = MultiTile(tiles)
    slot_bytes = tiles[0].spec.rows * tiles[0].spec.cols * tiles[0].spec.dtype.itemsize
    kslot = cf.slot(res)
    addr, vr, vc = _placement(cf, op)
    loc = op.loc

    def step(env: Env) -> None:
        try:
            for k, tile in enumerate(tiles):  # (placed slot by slot)
                at = None if addr is None else \
                    _one_value(env[addr], op, "addr") + k * slot_bytes
                _place(env, tile, at, vr, vc, loc)
        except PtoError as e:
            raise e.with_loc(loc) from None
        env[kslot] = value
    return step


@handler("pto.multi_tile_get")
def _multi_tile_get(cf: CompiledFunc, op: Op) -> Step:
    """Slot ``k`` of a multi_tile_buf, the same tile each time (a view: no data moves); ``k``
    outside ``[0, count)`` is an error where it is evaluated (constants: at check)."""
    if len(op.operands) != 2 or len(op.results) != 1:
        raise VerifyError("expects %multi[%slot] and one tile_buf result", op=op.name,
                          loc=op.loc)
    slot, count = _multi_of(op, op.operands[0].type)
    if op.results[0].type != slot:
        raise VerifyError(f"result type {op.results[0].type} must equal the slot type {slot}",
                          op=op.name, loc=op.loc)
    src, idx, k = cf.slot(op.operands[0]), cf.slot(op.operands[1]), cf.slot(op.results[0])
    loc, name = op.loc, op.name

    def step(env: Env) -> None:
        multi = env[src]
        i = _one_value(env[idx], op, "the slot")
        if not isinstance(multi, MultiTile):
            raise ExecutionError(f"needs a multi_tile_buf, got {type(multi).__name__}",
                                 op=name, loc=loc)
        if not 0 <= i < count:
            raise ExecutionError(f"slot {i} is out of range for multi_tile_buf count={count}",
                                 op=name, loc=loc)
        env[k] = multi.slots[i]
    return step


@handler("memref.alloc")
def _memref_alloc(cf: CompiledFunc, op: Op) -> Step:
    res = op.results[0]
    k = cf.slot(res)
    if bridge.tile_spec_of(res.type, cf.c.target) is not None:
        tile = cf.result_tile(op, res)

        def step(env: Env) -> None:
            env[k] = tile
        return step
    t = res.type
    if not isinstance(t, T.MemRefType) or None in t.shape:
        raise VerifyError(f"cannot allocate {t}", op=op.name, loc=op.loc)
    if bridge.memref_space(t) not in ("gm", None):
        # an on-chip buffer that is no tile (ptoisa's tiles are 2-D): tile instructions would
        # get a bare array (PTOAS's plan-memory tests allocate rank-3 UB memrefs)
        loc, name = op.loc, op.name

        def refuse(env: Env) -> None:
            raise ExecutionError(f"operation '{name}' cannot be executed by ptoisa yet: {t} is "
                                 "an on-chip buffer but not a tile (tiles are 2-D)", op=name,
                                 loc=loc)
        return refuse
    arr = np.zeros(t.shape, bridge.elem_dtype(t.dtype).np)

    def step2(env: Env) -> None:
        env[k] = arr
    return step2


@handler("pto.set_validshape")
def _set_validshape(cf: CompiledFunc, op: Op) -> Step:
    t, r, c = (cf.slot(v) for v in op.operands[:3])
    loc = op.loc

    def step(env: Env) -> None:
        try:
            env[t].set_valid(_index(env[r]), _index(env[c]))
        except PtoError as e:
            raise e.with_loc(loc) from None
    return step


@handler("pto.tassign")
def _tassign(cf: CompiledFunc, op: Op) -> Step:
    t, a = (cf.slot(v) for v in op.operands[:2])
    # ``%r = pto.tassign %t, %addr : T -> T``: the result is the same tile, placed
    k = cf.slot(op.results[0]) if op.results else None
    loc = op.loc
    tassign = _TASSIGN

    def step(env: Env) -> None:
        try:
            tassign.run(env[0].machine, [env[t], int(env[a])], _NO_PARAMS, checked=True,
                         loc=loc)
        except PtoError as e:
            raise e.with_loc(loc) from None
        if k is not None:
            env[k] = env[t]
    return step

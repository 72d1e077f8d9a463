"""Interpreter handlers of the ``pto`` ops that are not tile instructions: tensor views
(``make_tensor_view``, ``partition_view`` / ``subview``), tile buffers (``alloc_tile``,
``memref.alloc``, ``set_validshape``, ``tassign``), block queries (``get_block_idx`` ...), the
flags between pipes (``set_flag`` / ``wait_flag`` / ``barrier`` / ``record_event`` ..., run as
the SET_FLAG / WAIT_FLAG / PIPE_BARRIER instructions), and the remaining view ops:
``pto.get_tensor_view_dim`` / ``pto.get_tensor_view_stride`` (a dimension's size / stride of a
tensor view), ``pto.tensor_view_addr`` (the view's GM base: its array), ``pto.tile_buf_addr``
(a placed tile's byte address in its buffer), ``pto.subset`` (a window of a tile: the result
tile views the source's bytes from element ``[i, j]`` on, as TSUBVIEW), ``pto.subview`` of
a tile (a window keeping the source's pitch, run as TSUBVIEW), ``pto.alloc_multi_tile`` /
``pto.multi_tile_get`` (N slots of one tile type, each its own buffer; one slot selected by
index) and ``pto.test_async_event`` (async events complete at once here: true); PTOAS's async
comm session ops ``pto.comm.build_async_session`` and ``pto.comm.wait_async_event`` /
``test_async_event`` (the event of ``pto.comm.tput_async`` / ``tget_async``)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from .. import dtypes as D
from ..enums import Layout, Pipe
from ..errors import ExecutionError, PtoError, VerifyError
from ..ir import attrs as A
from ..ir import types as T
from ..ir.core import Op
from ..isa import REGISTRY
from ..isa.comm import AsyncEvent, AsyncSession
from ..lanes import BlockDivergence
from ..memory import address_fault, tile_space
from ..targets import get_target
from ..tensor import GlobalTensor, lane_span
from ..tile import Tile
from . import bridge
from .compiler import (
    _HANDLERS,
    CompiledFunc,
    Env,
    Step,
    TensorView,
    _bracket_args,
    _index,
    handler,
    infer_layout,
    kernel_kind,
)


def _view_query(field: str) -> Any:
    def build(cf: CompiledFunc, op: Op) -> Step:
        tv, dim = cf.slot(op.operands[0]), cf.slot(op.operands[1])
        k = cf.slot(op.results[0])
        loc = op.loc

        def step(env: Env) -> None:
            view = env[tv]
            if not isinstance(view, TensorView):
                raise ExecutionError(f"{op.name} needs a tensor_view, got "
                                     f"{type(view).__name__}", loc=loc)
            vals = getattr(view, field)
            d = int(env[dim])
            if not 0 <= d < len(vals):
                raise ExecutionError(f"{op.name}: dim {d} of a rank-{len(vals)} view", loc=loc)
            env[k] = int(vals[d])
        return step
    return build


handler("pto.get_tensor_view_dim")(_view_query("shape"))
handler("pto.get_tensor_view_stride")(_view_query("strides"))


@handler("pto.tensor_view_addr")
def _tensor_view_addr(cf: CompiledFunc, op: Op) -> Step:
    tv, k = cf.slot(op.operands[0]), cf.slot(op.results[0])

    def step(env: Env) -> None:
        v = env[tv]
        env[k] = v.array if isinstance(v, TensorView) else v.data()
    return step


@handler("pto.tile_buf_addr")
def _tile_buf_addr(cf: CompiledFunc, op: Op) -> Step:
    t, k = cf.slot(op.operands[0]), cf.slot(op.results[0])
    loc = op.loc

    def step(env: Env) -> None:
        tile: Tile = env[t]
        if tile.addr is None:
            raise ExecutionError(f"tile_buf_addr: tile {tile.name or ''} has no address (not "
                                 "placed with an addr or pto.tassign)", loc=loc)
        env[k] = int(tile.addr)
    return step


def _sizes(op: Op) -> list[int]:
    """The integers of ``sizes [a, b]``."""
    s = op.syntax
    for i, p in enumerate(s):
        if p.kind == "k" and p.value == "sizes":
            out = []
            for q in s[i + 1:]:
                if q.value == "]":
                    break
                if q.kind == "a":
                    out.append(int(bridge.attr_value(q.value)))  # type: ignore[arg-type]
            return out
    return []


@handler("pto.subset")
def _subset(cf: CompiledFunc, op: Op) -> Step:
    res = op.results[0]
    spec = bridge.tile_spec_of(res.type, cf.c.target)
    sizes = _sizes(op)
    src = cf.slot(op.operands[0])
    r, c = (cf.slot(v) for v in op.operands[1:3])
    k = cf.slot(res)
    loc = op.loc

    def step(env: Env) -> None:
        base: Tile = env[src]
        sp = spec
        if sp is None:  # short form ``: <RxCxT, space>``: the source's config, sizes' shape
            if len(sizes) != 2:
                raise ExecutionError("subset: sizes [rows, cols] not found", loc=loc)
            sp = replace(base.spec, rows=sizes[0], cols=sizes[1], valid_row=None,
                         valid_col=None)
        tile = Tile.of(sp, name=res.name)
        try:
            off = int(base.spec.offsets[_index(env[r]), _index(env[c])]) * base.dtype.itemsize
            env[0].machine.alias(tile, base, off, op="subset")
        except PtoError as e:
            raise e.with_loc(loc) from None
        env[k] = tile
    return step


@handler("pto.test_async_event")
def _test_async_event(cf: CompiledFunc, op: Op) -> Step:
    k = cf.slot(op.results[0])

    def step(env: Env) -> None:
        env[k] = True
    return step


#: attributes of pto.comm.build_async_session (PTO_IR_manual 4.21): the session's
#: configuration, which does not change what the transfers compute
_SESSION_ATTRS = ("sync_id", "block_bytes", "comm_block_offset", "queue_num",
                  "channel_group_idx")


@handler("pto.comm.build_async_session")
def _build_async_session(cf: CompiledFunc, op: Op) -> Step:
    for key, _ in op.attributes.items:
        if key not in _SESSION_ATTRS:
            raise VerifyError(f"unknown attribute '{key}' (PTOAS attributes of {op.name}: "
                              f"{', '.join(_SESSION_ATTRS)})", op=op.name, loc=op.loc)
    if len(op.operands) != 2 or len(op.results) != 1:
        raise VerifyError("expects (scratch, workspace) -> !pto.async_session", op=op.name,
                          loc=op.loc)
    config = {k: bridge.attr_value(a) for k, a in op.attributes.items}
    s, w = cf.slot(op.operands[0]), cf.slot(op.operands[1])
    k = cf.slot(op.results[0])

    def step(env: Env) -> None:
        env[k] = AsyncSession(env[s], env[w], config)
    return step


def _async_completion(blocking: bool) -> Callable[[CompiledFunc, Op], Step]:
    """pto.comm.wait_async_event / test_async_event: the event's Wait / Test (a multi-rank
    launch flushes the rank's transfers there), its i1 result."""
    def bind(cf: CompiledFunc, op: Op) -> Step:
        if len(op.operands) != 2 or len(op.results) != 1:
            raise VerifyError("expects (event, session) -> i1", op=op.name, loc=op.loc)
        e, s = cf.slot(op.operands[0]), cf.slot(op.operands[1])
        k = cf.slot(op.results[0])
        loc = op.loc

        def step(env: Env) -> None:
            ev = env[e]
            if not isinstance(ev, AsyncEvent):
                raise ExecutionError(f"{op.name}: the event must come from "
                                     f"pto.comm.tput_async / tget_async, got "
                                     f"{type(ev).__name__}", loc=loc)
            env[k] = ev.Wait(env[s]) if blocking else ev.Test(env[s])
        return step
    return bind


handler("pto.comm.wait_async_event")(_async_completion(True))
handler("pto.comm.test_async_event")(_async_completion(False))


def _kw_list(op: Op, key: str) -> list[int] | None:
    """Operand indices inside ``key = [ ... ]`` of a custom spelling."""
    s = op.syntax
    for i in range(len(s) - 2):
        if s[i].kind == "k" and s[i].value == key and s[i + 1].value == "=":
            out = []
            j = i + 2
            if s[j].value != "[":
                return [int(s[j].value)] if s[j].kind == "v" else []  # type: ignore[arg-type]
            j += 1
            while j < len(s) and s[j].value != "]":
                if s[j].kind == "v":
                    out.append(int(s[j].value))  # type: ignore[arg-type]
                j += 1
            return out
    return None


def _layout_attr(op: Op) -> Layout | None:
    a = op.attributes.get("layout")
    if a is None:
        return None
    v = str(bridge.attr_value(a)).lower()
    for lay in Layout:
        if lay.value == v or lay.name.lower() == v:
            return lay
    return None


@handler("pto.make_tensor_view")
def _make_tensor_view(cf: CompiledFunc, op: Op) -> Step:
    ptr = cf.slot(op.operands[0])
    shape = [cf.slot(op.operands[i]) for i in (_kw_list(op, "shape") or [])]
    strides = [cf.slot(op.operands[i]) for i in (_kw_list(op, "strides") or [])]
    if len(shape) != len(strides):
        raise VerifyError(f"{len(shape)} sizes in shape but {len(strides)} strides",
                          op=op.name, loc=op.loc)
    k = cf.slot(op.results[0])
    rt = op.results[0].type
    dt = bridge.elem_dtype(rt.dtype) if isinstance(rt, T.TensorViewType) else None
    layout = _layout_attr(op)
    loc = op.loc
    pname = f"%{op.operands[0].name}"

    def step(env: Env) -> None:
        arr = env[ptr]
        if not isinstance(arr, np.ndarray):
            raise ExecutionError("make_tensor_view needs a pointer argument bound to a numpy "
                                 f"array, got {type(arr).__name__}", loc=loc)
        env[k] = TensorView(arr, tuple([int(env[s]) for s in shape]),
                            tuple([int(env[s]) for s in strides]), layout,
                            dt or D.dtype(arr.dtype), pname)
    return step


def _kw_sizes(cf: CompiledFunc, op: Op) -> list[tuple[bool, int]]:
    """``sizes = [...]`` items as (is_constant, value or slot): ``pto.subview`` writes
    integer literals, ``pto.partition_view`` SSA values."""
    s = op.syntax
    for i in range(len(s) - 3):
        if s[i].kind == "k" and s[i].value == "sizes" and s[i + 2].value == "[":
            out: list[tuple[bool, int]] = []
            for p in s[i + 3:]:
                if p.value == "]":
                    break
                if p.kind == "v":
                    out.append((False, cf.slot(op.operands[int(p.value)])))  # type: ignore[arg-type]
                elif p.kind == "a":
                    out.append((True, int(bridge.attr_value(p.value))))  # type: ignore[arg-type]
            return out
    return []


def _bracket_operands(op: Op, key: str) -> list[int]:
    """Operand indices inside ``key [ ... ]`` of a custom spelling (``valid [%r, %c]``)."""
    s = op.syntax
    for i in range(len(s) - 1):
        if s[i].kind == "k" and s[i].value == key and s[i + 1].value == "[":
            out = []
            for p in s[i + 2:]:
                if p.value == "]":
                    break
                if p.kind == "v":
                    out.append(int(p.value))  # type: ignore[arg-type]
            return out
    return []


def _one_value(v: Any, op: Op, what: str) -> int:
    """An index operand as one int; per-block values (lockstep) must agree, else the
    launch runs the blocks one by one (BlockDivergence)."""
    if isinstance(v, np.ndarray):
        flat = np.asarray(v).reshape(-1)
        if flat.size and (flat == flat[0]).all():
            return int(flat[0])
        raise BlockDivergence(f"{op.name}: {what} differs between blocks", op=op.name,
                              loc=op.loc)
    return int(v)


def _tile_subview(cf: CompiledFunc, op: Op) -> Step:
    """``pto.subview %tile[%r, %c] sizes [R, C] (valid [%vr, %vc])``: a window of a tile.

    As PTOAS lowers it (a tile of the source's config at the address of element [r, c]),
    the result keeps the source's pitch: a row-major tile (ND, or boxes in row-major
    order) keeps the source's columns, a column-major one its rows, whatever the result
    type's shape says (PTOAS writes ``Tile<..., 64, 256, ..., 64, 128, ...>`` for a
    ``sizes [64, 128]`` window of a 64x256 tile). The other extent is ``sizes``'s (the view
    then never reaches past the window's last row / column). Valid region: the ``valid``
    operands, else the result type's static valid shape, else ``sizes``, clipped by
    ``sizes``."""
    res = op.results[0]
    src_spec = bridge.tile_spec_of(op.operands[0].type, cf.c.target)
    declared = bridge.tile_spec_of(res.type, cf.c.target)
    sizes = _sizes(op)
    if src_spec is None or declared is None:
        raise VerifyError("a tile subview needs tile_buf source and result types",
                          op=op.name, loc=op.loc)
    if len(sizes) != 2 or min(sizes) < 0:
        raise VerifyError(f"sizes must be [rows, cols] (non-negative), got {sizes}",
                          op=op.name, loc=op.loc)
    if len(op.operands) < 3:
        raise VerifyError("expects two offsets, '%tile[%row, %col]'", op=op.name, loc=op.loc)
    valid = _bracket_operands(op, "valid")
    if valid and len(valid) != 2:
        raise VerifyError("'valid [...]' takes two values (rows, cols)", op=op.name,
                          loc=op.loc)
    sr, sc = sizes
    src, r, c = cf.slot(op.operands[0]), cf.slot(op.operands[1]), cf.slot(op.operands[2])
    vslots = [cf.slot(op.operands[i]) for i in valid]
    # PTOAS: a static result valid extent is the inferred or explicit one; a dynamic one
    # needs the explicit operand (there is no other value to give it)
    for k, (name, want) in enumerate((("valid_row", declared.valid_row),
                                      ("valid_col", declared.valid_col))):
        given = cf.consts.get(vslots[k]) if vslots else None
        if (not vslots and want is None) or \
                (given is not None and want is not None and int(given) != want):
            raise VerifyError(f"expects result valid_shape[{k}] to match inferred/explicit "
                              f"{name}", op=op.name, loc=op.loc)
    fixed_valid = (sr if declared.valid_row is None else min(declared.valid_row, sr),
                   sc if declared.valid_col is None else min(declared.valid_col, sc))
    k = cf.slot(res)
    loc = op.loc
    tsubview = REGISTRY["TSUBVIEW"]

    def step(env: Env) -> None:
        base: Tile = env[src]
        if not isinstance(base, Tile):
            raise ExecutionError(f"{op.name}: the source must be a tile, got "
                                 f"{type(base).__name__}", loc=loc)
        bs = base.spec
        r0, c0 = _one_value(env[r], op, "the row offset"), _one_value(env[c], op,
                                                                       "the column offset")
        if vslots:
            vr, vc = (_one_value(env[s], op, "the valid shape") for s in vslots)
            if vr < 0 or vc < 0:
                raise ExecutionError(f"{op.name}: valid shape {vr}x{vc} is negative", loc=loc)
            vr, vc = min(vr, sr), min(vc, sc)
        else:
            vr, vc = fixed_valid
        if not (0 <= r0 < bs.rows and 0 <= c0 < bs.cols):
            raise ExecutionError(f"{op.name}: offset ({r0}, {c0}) is outside the source tile's "
                                 f"{bs.rows}x{bs.cols}", loc=loc)
        row_major = bs.is_row_major
        shape = (sr, bs.cols) if row_major else (bs.rows, sc)
        sp = replace(bs, rows=shape[0], cols=shape[1], valid_row=None, valid_col=None)
        tile = Tile.of(sp, valid=(vr, vc), name=res.name)
        m = env[0].machine
        if base._buf is None and base.addr is None and m.mode != "manual":
            # the first view of a fresh tile: its storage gets a pitch of slack, so that a
            # column window of the last rows (ping-pong halves) is a view of it too
            m.auto_storage(base, base._lazy is None and base._pending is None,
                           slack=bs.cols if row_major else bs.rows)
        try:  # (TSUBVIEW checks the window's valid region lies inside the source)
            tsubview.run(m, [tile, base, r0, c0], _NO_PARAMS, checked=True, loc=loc)
        except PtoError as e:
            if e.op is None or e.op == "tsubview":
                e.op = op.name
            raise e.with_loc(loc) from None
        env[k] = tile
    return step


@handler("pto.subview")  # tensor_view -> tile_view window, or a window of a tile
@handler("pto.partition_view")
def _partition_view(cf: CompiledFunc, op: Op) -> Step:
    if op.operands and isinstance(op.operands[0].type, T.TileBufType):
        return _tile_subview(cf, op)
    tv = cf.slot(op.operands[0])
    offs = [cf.slot(op.operands[i]) for i in (_kw_list(op, "offsets") or [])]
    sizes = _kw_sizes(cf, op)
    # sizes given by arith.constant values are known now (they usually all are)
    known = [int(cf.consts[v]) if not const and v in cf.consts else v if const else None
             for const, v in sizes]
    fixed = tuple(known) if None not in known else None
    k = cf.slot(op.results[0])
    loc = op.loc
    # a 2-D view of constant sizes (nearly every view): int offsets inside the view's extents
    # are checked and combined in step, without going through general
    two = (offs[0], offs[1], *fixed) if len(offs) == 2 and fixed is not None \
        and len(fixed) == 2 and min(fixed) >= 0 else None

    def general(env: Env, view: TensorView) -> tuple[tuple[int, ...], Any]:
        """(sizes, element offset) of this step's view, every offset checked against the
        view's extents (lockstep: one offset per block)."""
        o = [_index(env[s]) for s in offs]
        sz = fixed if fixed is not None else \
            tuple([v if const else int(env[v]) for const, v in sizes])
        st = view.strides
        if not (len(o) == len(sz) == len(st)):
            raise ExecutionError(f"partition_view: {len(o)} offsets and {len(sz)} sizes for a "
                                 f"rank-{len(st)} view", loc=loc)
        offset: Any = 0
        for d, (a, n, full, s) in enumerate(zip(o, sz, view.shape, st, strict=True)):
            if type(a) is int and 0 <= a and 0 <= n and a + n <= full:  # (the common case)
                offset += a * s
                continue
            if isinstance(a, np.ndarray):  # lockstep: one offset per block
                lo, hi = lane_span(np.asarray(a, np.int64).reshape(-1))[:2] if a.size \
                    else (0, 0)
            else:
                lo = hi = a
            if n < 0:
                raise ExecutionError(f"partition_view: dim {d} size {n} is negative", loc=loc)
            if lo < 0 or hi + n > full:
                where = ""
                if isinstance(a, np.ndarray):  # lockstep: name the first offending block
                    bad = int(np.flatnonzero((a < 0) | (a + n > full))[0])
                    a, where = int(a[bad]), f" (block {bad})"
                raise ExecutionError(
                    f"partition_view: dim {d} [{a}, {a + n}) outside the view's extent {full}"
                    f"{where}", loc=loc)
            offset = offset + a * s
        return sz, offset

    def step(env: Env) -> None:
        view: TensorView = env[tv]
        if not isinstance(view, TensorView):  # the text named something else as the source
            raise ExecutionError(f"{op.name}: the source must be a tensor view (from "
                                 f"pto.make_tensor_view), got {type(view).__name__}", loc=loc)
        st = view.strides
        offset: Any = None
        if two is not None and len(st) == 2:
            s0, s1, n0, n1 = two
            a0, a1 = env[s0], env[s1]
            f0, f1 = view.shape
            if type(a0) is int and type(a1) is int and 0 <= a0 <= f0 - n0 \
                    and 0 <= a1 <= f1 - n1:
                sz, offset = fixed, a0 * st[0] + a1 * st[1]
        if offset is None:
            sz, offset = general(env, view)
        if isinstance(offset, np.ndarray):
            offset = np.asarray(offset, np.int64)
        else:
            made = view.parts.get(sz)
            if made is not None:  # (a loop's view again, at another offset)
                try:
                    env[k] = made.at(offset)
                except PtoError as e:
                    raise e.with_loc(loc) from None
                return
        layout = view.layout or infer_layout(sz, st)
        try:  # (tuples: GlobalTensor remembers the spec of the same shape and strides)
            env[k] = g = GlobalTensor(view.array, sz[-5:], st[-5:], layout, dtype=view.dtype,
                                      offset=offset, name=view.name)
        except PtoError as e:
            raise e.with_loc(loc) from None
        if not isinstance(offset, np.ndarray):
            view.parts[sz] = g

    def located(env: Env) -> None:
        try:
            step(env)
        except PtoError as e:
            # a view refused where it is made: the ops that would have read it (a sanitized
            # run's report names them)
            if getattr(e, "readers", None) is None:
                e.readers = _readers(cf.op, op.results[0])  # type: ignore[attr-defined]
            raise
    return located


def _readers(func: Op, value: Any) -> list[tuple[str, Any]]:
    """(op name, location) of every op of ``func`` that takes ``value`` as an operand."""
    return [(o.name, o.loc) for o in func.walk() if any(x is value for x in o.operands)]


_NO_PARAMS: dict[str, Any] = {}


@handler("pto.alloc_tile")
def _alloc_tile(cf: CompiledFunc, op: Op) -> Step:
    res = op.results[0]
    tile = cf.result_tile(op, res, "alloc_tile result type", "a tile_buf")
    k = cf.slot(res)
    kw = op.keyword_operands
    addr = cf.slot(kw["addr"]) if "addr" in kw else None
    vr = cf.slot(kw["valid_row"]) if "valid_row" in kw else None
    vc = cf.slot(kw["valid_col"]) if "valid_col" in kw else None
    loc = op.loc
    tassign = REGISTRY["TASSIGN"]
    if addr is not None and addr in cf.consts:  # a constant address: checked before any run
        _check_const_addr(cf, op, tile, cf.consts[addr])

    def step(env: Env) -> None:
        try:
            if addr is not None:  # placement is TASSIGN, as eager code writes it
                tassign.run(env[0].machine, [tile, int(env[addr])], _NO_PARAMS, checked=True,
                             loc=loc)
            if vr is not None or vc is not None:
                tile.set_valid(None if vr is None else _index(env[vr]),
                               None if vc is None else _index(env[vc]))
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
    kw = op.keyword_operands
    addr = cf.slot(kw["addr"]) if "addr" in kw else None
    vr = cf.slot(kw["valid_row"]) if "valid_row" in kw else None
    vc = cf.slot(kw["valid_col"]) if "valid_col" in kw else None
    loc = op.loc
    tassign = REGISTRY["TASSIGN"]

    def step(env: Env) -> None:
        try:
            for k, tile in enumerate(tiles):
                if addr is not None:  # placement is TASSIGN, slot by slot
                    base = _one_value(env[addr], op, "addr")
                    tassign.run(env[0].machine, [tile, base + k * slot_bytes],
                                _NO_PARAMS, checked=True, loc=loc)
                if vr is not None or vc is not None:
                    tile.set_valid(None if vr is None else _index(env[vr]),
                                   None if vc is None else _index(env[vc]))
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
    tassign = REGISTRY["TASSIGN"]

    def step(env: Env) -> None:
        try:
            tassign.run(env[0].machine, [env[t], int(env[a])], _NO_PARAMS, checked=True,
                         loc=loc)
        except PtoError as e:
            raise e.with_loc(loc) from None
        if k is not None:
            env[k] = env[t]
    return step


#: the pipes ``pto.fence.barrier_all #pto.fence_scope<gm>`` drains before its ``dsb(DSB_DDR)``
#: (PTOAS's EmitC lowering: every pipe in a vector kernel, test/lit/pto/
#: signal_payload_cache_consistency.pto; the GM producers MTE2, MTE3 and FIX otherwise,
#: designs/ptoas-memory-consistency-design.md)
_FENCE_PIPES = {"vector": (Pipe.ALL,), None: (Pipe.MTE2, Pipe.MTE3, Pipe.FIX)}


@handler("pto.fence.barrier_all")
def _fence_barrier_all(cf: CompiledFunc, op: Op) -> Step:
    """A GM visibility fence: PIPE_BARRIER on the pipes above (so the sanitizer and the cycle
    model see barriers), then ``dsb(DSB_DDR)``, which has nothing to do here: ptoisa's global
    memory has no write buffer or cache, a store is visible to every core once it ran."""
    scopes = [p.value.body for p in op.syntax
              if p.kind == "a" and isinstance(p.value, A.DialectAttr)
              and p.value.name == "pto.fence_scope"]
    if scopes != ["gm"] or op.operands:
        raise VerifyError("expects '#pto.fence_scope<gm>' (the one scope PTOAS has), got "
                          f"{scopes or 'none'}", op=op.name, loc=op.loc)
    pipes = _FENCE_PIPES.get(kernel_kind(cf.op), _FENCE_PIPES[None])
    barrier = REGISTRY["PIPE_BARRIER"]
    loc = op.loc

    def step(env: Env) -> None:
        m = env[0].machine
        for p in pipes:
            barrier.run(m, [p], _NO_PARAMS, checked=True, loc=loc)
    return step


#: PTOAS's sync endpoints (``#pto.pipe_event_type<TLOAD>``, legacy ``EVENT_LOAD_FROM_GM``)
#: and the pipe its lowering maps each to (mapSyncOpTypeToPipe)
SYNC_OP_PIPES = {
    "TLOAD": "PIPE_MTE2", "TSTORE_VEC": "PIPE_MTE3", "TSTORE_ACC": "PIPE_FIX",
    "TMOV_M2L": "PIPE_MTE1", "TMOV_M2B": "PIPE_MTE1", "TMOV_M2S": "PIPE_FIX",
    "TMOV_M2V": "PIPE_V", "TMOV_V2M": "PIPE_FIX", "TMATMUL": "PIPE_M", "TVEC": "PIPE_V",
    "TVECWAIT_EVENT": "PIPE_V",
    "EVENT_LOAD_FROM_GM": "PIPE_MTE2", "EVENT_STORE_FROM_ACC": "PIPE_FIX",
    "EVENT_STORE_FROM_VEC": "PIPE_MTE3", "EVENT_MOVE_MAT_TO_LEFT": "PIPE_MTE1",
    "EVENT_MOVE_MAT_TO_SCALAR": "PIPE_FIX", "EVENT_MOVE_MAT_TO_BIAS": "PIPE_MTE1",
    "EVENT_MOVE_MAT_TO_VEC": "PIPE_V", "EVENT_MOVE_VEC_TO_MAT": "PIPE_FIX",
    "EVENT_COMPUTE_MATMUL": "PIPE_M", "EVENT_COMPUTE_VEC": "PIPE_V",
    "EVENT_VEC_WAITPOINT": "PIPE_V",
}


def _sync_pipe(item: Any, op: Op) -> Any:
    """An endpoint item of record_event / wait_event / barrier_sync as its pipe."""
    if not isinstance(item, str):
        return item
    key = item.rsplit("<", 1)[-1].rstrip(">").strip().strip('"')
    if key.startswith("PIPE_"):  # a pipe named as such (pto.get_buf "PIPE_MTE2", ...)
        return key
    pipe = SYNC_OP_PIPES.get(key)
    if pipe is None:
        raise VerifyError(f"unknown sync endpoint '{item}' (one of {', '.join(SYNC_OP_PIPES)})",
                          op=op.name, loc=op.loc)
    return pipe


def _sync_step(instr_name: str, n_args: int, endpoints: int = 0
               ) -> Callable[[CompiledFunc, Op], Step]:
    """``pto.set_flag`` / ``pto.wait_flag`` (and their ``_dyn`` forms with an SSA event id),
    ``pto.barrier``: the SET_FLAG / WAIT_FLAG / PIPE_BARRIER instructions of the registry, so
    they pass the dispatch point like every instruction."""
    def h(cf: CompiledFunc, op: Op) -> Step:
        ins = REGISTRY[instr_name]
        items = _bracket_args(op)
        items[:endpoints] = [_sync_pipe(x, op) for x in items[:endpoints]]
        need = sum(1 for o in ins.operands if not o.optional)
        if not need <= len(items) <= n_args:
            names = ", ".join(o.name + ("?" if o.optional else "") for o in ins.operands)
            count = f"{n_args}" if need == n_args else f"{need} to {n_args}"
            raise VerifyError(f"expects {count} bracketed operand(s) ({names}), got "
                              f"{len(items)}", op=op.name, loc=op.loc)
        slots = [cf.slot(v) if not isinstance(v, str) else None for v in items]
        try:
            fixed, _ = ins.bind(tuple(v if isinstance(v, str) else 0 for v in items), {})
        except PtoError as e:
            raise VerifyError(e.message, op=op.name, loc=op.loc) from None
        run = ins.run
        loc = op.loc

        def step(env: Env) -> None:
            vals = [fixed[i] if s is None else int(env[s]) for i, s in enumerate(slots)]
            try:
                run(env[0].machine, vals, {}, checked=True, loc=loc)
            except PtoError as e:
                if e.op is None:
                    e.op = ins.mnemonic
                raise e.with_loc(loc) from None
        return step
    h.instr_name = instr_name  # type: ignore[attr-defined]  # read by ptoisa.reference
    return h


def _block_query(attr: str) -> Callable[[CompiledFunc, Op], Step]:
    def h(cf: CompiledFunc, op: Op) -> Step:
        k = cf.slot(op.results[0])

        def step(env: Env) -> None:
            env[k] = getattr(env[0], attr)
        return step
    return h


# the bracketed sync ops the entries declare (``ptoas=Ptoas(bracketed=...)``: set_flag,
# record_event, barrier ...); record/wait events and barrier_sync name op kinds, lowered to
# the flags of their pipes
for _ins in REGISTRY.values():
    for _n, _ends in (_ins.ptoas.bracketed if _ins.ptoas is not None else {}).items():
        _HANDLERS[_n] = _sync_step(_ins.name, len(_ins.operands), endpoints=_ends)


_HANDLERS["pto.get_block_idx"] = _block_query("block_idx")
_HANDLERS["pto.get_block_num"] = _block_query("block_num")
_HANDLERS["pto.get_subblock_idx"] = _block_query("subblock_idx")
_HANDLERS["pto.get_subblock_num"] = _block_query("subblock_num")

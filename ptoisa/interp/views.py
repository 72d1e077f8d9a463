"""Interpreter handlers of the ``pto`` view ops: tensor views (``make_tensor_view``; a
dimension's size / stride, ``get_tensor_view_dim`` / ``get_tensor_view_stride``; its GM base,
``tensor_view_addr``), windows (``partition_view`` / ``subview`` of a tensor view; ``subview``
of a tile, run as TSUBVIEW; ``subset``: a window of a tile from element ``[i, j]`` on), a
placed tile's byte address (``tile_buf_addr``) and a tile's valid extents
(``tile_valid_rows`` / ``tile_valid_cols``)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from .. import dtypes as D
from ..enums import Layout, TileType
from ..errors import ExecutionError, NotExecutedYet, PtoError, VerifyError
from ..ir import types as T
from ..ir.core import Op
from ..isa import REGISTRY
from ..lanes import BlockDivergence
from ..tensor import GlobalTensor, lane_span
from ..tile import Tile
from ..vector.regs import SPACES, Ptr
from . import bridge
from .compiler import (
    CompiledFunc,
    Env,
    Step,
    TensorView,
    _index,
    handler,
    infer_layout,
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
    rt = op.results[0].type
    chip = None
    if isinstance(rt, T.PtrType) and (rt.space or "gm") != "gm":
        # (-> !pto.ptr<T, l1>: an on-chip pointer at the tile's address, as castptr makes)
        if rt.space not in SPACES:
            raise VerifyError(f"unknown pointer space '{rt.space}' (known: "
                              f"{', '.join(SPACES)})", op=op.name, loc=loc)
        chip = (rt.space, bridge.elem_dtype(rt.dtype))

    def step(env: Env) -> None:
        tile: Tile = env[t]
        if tile.addr is None:
            # (PTOAS's PlanMemory gives such a tile an address; ptoisa keeps an unplaced
            # tile's storage apart from the buffer, so no pointer could alias it)
            raise NotExecutedYet(f"tile_buf_addr: tile {tile.name or ''} has no address (not "
                                 "placed with an addr or pto.tassign): the address PTOAS's "
                                 "memory planning would give it is not modelled",
                                 op="pto.tile_buf_addr", loc=loc)
        env[k] = int(tile.addr) if chip is None else Ptr(chip[0], int(tile.addr), chip[1])
    return step


def _tile_valid(axis: int) -> Any:
    """``pto.tile_valid_rows`` / ``tile_valid_cols %t : !pto.tile_buf<...> -> index``: the
    tile's valid row / column count (ptoas-tileop-expand-design.md's tile_buf intrinsics)."""
    def build(cf: CompiledFunc, op: Op) -> Step:
        if len(op.operands) != 1 or len(op.results) != 1:
            raise VerifyError(f"'{op.name}' takes one tile and gives one index", op=op.name,
                              loc=op.loc)
        t, k = cf.slot(op.operands[0]), cf.slot(op.results[0])
        loc = op.loc

        def step(env: Env) -> None:
            tile = env[t]
            if not isinstance(tile, Tile):
                raise ExecutionError(f"{op.name} needs a tile, got {type(tile).__name__}",
                                     loc=loc)
            env[k] = int(tile.valid_shape[axis])
        return step
    return build


handler("pto.tile_valid_rows")(_tile_valid(0))
handler("pto.tile_valid_cols")(_tile_valid(1))


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


_VIEW_DERIVING = ("pto.partition_view", "pto.subview")


def _moved_by_vec_nz_tiles(cf: CompiledFunc, view_op: Op) -> bool:
    """Whether the view ``view_op`` makes is used (directly or through partition views) by
    loads and stores only, all of Vec NZ tiles, and at least one (the traits'
    ``vec_nz_views_by_tile``: PTOAS's A5 TileLib then moves the view as NZ)."""
    views = {id(view_op.results[0])}
    found = False
    for o in cf.op.walk():  # (pre-order: a partition view comes before its uses)
        if o.name in _VIEW_DERIVING and o.operands and id(o.operands[0]) in views:
            views.update(id(r) for r in o.results)
            continue
        if o.name not in ("pto.tload", "pto.tstore"):
            if any(id(v) in views for v in o.operands):
                return False  # (another use of the view: its strides decide, as elsewhere)
            continue
        ins, outs = o.written()
        if len(ins) != 1 or len(outs) != 1:
            continue
        gm, tile = (ins[0], outs[0][0]) if o.name == "pto.tload" else (outs[0][0], ins[0])
        if id(gm) not in views:
            continue
        spec = bridge.tile_spec_of(tile.type, cf.c.target)
        if spec is None or spec.loc is not TileType.Vec or spec.layout_name != "NZ":
            return False
        found = True
    return found


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
    if layout is None and len(shape) == 5 and cf.c.target.traits.vec_nz_views_by_tile \
            and _moved_by_vec_nz_tiles(cf, op):
        layout = Layout.NZ
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

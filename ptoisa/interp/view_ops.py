"""Interpreter handlers of the remaining view and tile-buffer ops (not tile instructions):
``pto.get_tensor_view_dim`` / ``pto.get_tensor_view_stride`` (a dimension's size / stride of a
tensor view), ``pto.tensor_view_addr`` (the view's GM base: its array), ``pto.tile_buf_addr``
(a placed tile's byte address in its buffer), ``pto.subset`` (a window of a tile: the result
tile views the source's bytes from element ``[i, j]`` on, as TSUBVIEW) and
``pto.test_async_event`` (async events complete at once here: true)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ..errors import ExecutionError, PtoError
from ..ir.core import Op
from ..tile import Tile
from . import bridge
from .compiler import CompiledFunc, Env, Step, TensorView, _index, handler


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

"""Interpreter handlers of the frontend pipe ops of mixed cube + vector kernels.

* ``pto.reserve_buffer`` / ``pto.import_reserved_buffer`` give the consumer FIFO's local base
  address (``base`` when written, else 0: ptoisa keeps a FIFO's slots outside the tile buffers).
* ``pto.aic_initialize_pipe`` / ``pto.aiv_initialize_pipe {dir_mask, slot_size[, nosplit]}``
  make the function's pipe, a :class:`~ptoisa.isa.pipes.TPipe` as PTOAS lowers it: FlagID 0,
  ``dir_mask`` 1 / 2 / 3 -> DIR_C2V / DIR_V2C / DIR_BOTH, SlotNum 8 for one direction and 4
  for both (ptoas-tpush-tpop-design.md), IsNoSplit from ``nosplit`` or, when absent, true
  when every frontend op of the function and its peers uses ``split = 0``.
* ``pto.tpush_to_aiv`` / ``pto.tpush_to_aic`` / ``pto.tpop_from_aic`` / ``pto.tpop_from_aiv`` /
  ``pto.tfree_from_aic`` / ``pto.tfree_from_aiv {split}`` run TPUSH / TPOP / TFREE on that pipe
  (a pop's result is a tile of the written type; ``(%vr, %vc)`` operands set its valid shape).
* Global entries (a GM FIFO, PTO_IR_manual's "global-only GM FIFO"): an initialize op with
  ``(gm_slot_tensor = %view)`` (one slot's tensor view; its base is the ring's, ``slot_num``
  slots of ``slot_size`` bytes, 8 when not written) gives the pipe its GM buffer;
  ``pto.talloc_to_aiv`` / ``pto.talloc_to_aic`` and ``pto.tpop_from_aic`` /
  ``pto.tpop_from_aiv`` returning a ``!pto.tensor_view`` run TALLOC / TPOP of a GlobalTensor
  slot (the result views the slot with the descriptor's shape and strides), and
  ``pto.tpush_to_*(%entry)`` / ``pto.tfree_from_*(%entry)`` TPUSH / TFREE of it.
* ``pto.initialize_l2g2l_pipe`` / ``pto.initialize_l2l_pipe {dir_mask, slot_size, slot_num,
  local_slot_num, flag_base}`` return the pipe value that ``pto.tpush`` / ``pto.tpop`` /
  ``pto.tfree`` take.
* ``pto.declare_tile`` declares a tile (a pop's destination) without storage of its own.

On A5, PTOAS wraps a vector function whose pipes are all no-split in
``if (get_subblockid() == 0)``: only sub-block 0 runs it (:func:`runs_on_subblock`).
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any

from ..errors import PtoError, VerifyError
from ..ir import attrs as A
from ..ir import types as T
from ..ir.core import Op
from ..isa.pipes import ODD_SPLITS, SPLIT_RANGE, Direction, TPipe
from ..isa.registry import FRONTEND_OPS, REGISTRY
from ..lanes import BlockDivergence
from ..targets import TargetLike, get_target
from ..tile import Tile
from . import bridge
from .compiler import (
    CompiledFunc,
    Env,
    Step,
    TensorView,
    _bracket_args,
    _index,
    handler,
    kernel_kind,
)
from .views import _kw_list

#: frontend op -> instruction (the entries' ``ptoas=Ptoas(frontend=...)``)
_FRONTEND = FRONTEND_OPS
_INITS = ("pto.aic_initialize_pipe", "pto.aiv_initialize_pipe")
_SPLITS = ("TILE_NO_SPLIT", "TILE_UP_DOWN", "TILE_LEFT_RIGHT")


def _attr(op: Op, key: str, default: Any = None) -> Any:
    a = op.attributes.get(key)
    return default if a is None else bridge.attr_value(a)


def _split(op: Op) -> str:
    s = _attr(op, "split", 0)
    try:
        return _SPLITS[int(s)]
    except (ValueError, IndexError, TypeError):
        pass
    if isinstance(s, int) and s in ODD_SPLITS:
        raise VerifyError(f"operation '{op.name}' cannot be executed by ptoisa yet: split = {s} "
                          f"({ODD_SPLITS[s]}, an odd split mode of GM-backed C2V pipes)",
                          op=op.name, loc=op.loc)
    raise VerifyError(f"{SPLIT_RANGE}, got {s}", op=op.name, loc=op.loc)


def _peer(op: Op) -> str | None:
    p = op.attributes.get("peer_func")
    if p is None:
        return None
    return p.name if isinstance(p, A.SymbolRefAttr) else str(p).lstrip("@")


def _group(module: Any, fn: Op) -> list[Op]:
    """``fn`` and the functions linked to it by reserved buffers (either direction)."""
    funcs = {f.sym_name: f for f in module.functions() if f.sym_name}
    out, k = [fn], 0
    while k < len(out):
        f = out[k]
        k += 1
        for op in f.walk():
            if op.name == "pto.import_reserved_buffer":
                p = funcs.get(_peer(op) or "")
                if p is not None and p not in out:
                    out.append(p)
        for g in funcs.values():
            if g not in out and any(op.name == "pto.import_reserved_buffer"
                                    and _peer(op) == f.sym_name for op in g.walk()):
                out.append(g)
    return out


def _no_split(module: Any, fn: Op, init: Op) -> bool:
    explicit = _attr(init, "nosplit")
    if explicit is not None:
        return bool(explicit)
    splits = {_split(op) for f in _group(module, fn) for op in f.walk() if op.name in _FRONTEND}
    return splits == {"TILE_NO_SPLIT"}


def _direction(op: Op) -> Direction:
    mask = int(_attr(op, "dir_mask", 1))
    if mask not in (1, 2, 3):
        raise VerifyError(f"dir_mask must be 1 (C2V), 2 (V2C) or 3 (both), got {mask}",
                          op=op.name, loc=op.loc)
    return {1: Direction.DIR_C2V, 2: Direction.DIR_V2C, 3: Direction.DIR_BOTH}[mask]


def _pipe_key(cf: CompiledFunc) -> int:
    """The frame slot that holds the function's frontend pipe."""
    key = getattr(cf, "_frontend_pipe", None)
    if key is None:
        key = cf._frontend_pipe = object()  # type: ignore[attr-defined]
    return cf.slot(key)


@handler("pto.reserve_buffer", "pto.import_reserved_buffer")
def _buffer(cf: CompiledFunc, op: Op) -> Step:
    k = cf.slot(op.results[0])
    base = int(_attr(op, "base", 0) or 0)

    def step(env: Env) -> None:
        env[k] = base
    return step


#: acc_push_epilogue.quant (PTOAS's fixpipe-tpipe design) -> the element type it writes
_EPILOGUE_OUT = {"deqf16": "f16", "f32_f16": "f16", "f32_bf16": "bf16", "req8": "i8",
                 "qf322b8_pre": "i8", "qf322f16_pre": "f16", "qf322bf16_pre": "bf16",
                 "qs322bf16_pre": "bf16", "qf322hif8_pre": "hif8", "qf322fp8_pre": "f8E4M3"}


def _epilogue_out(op: Op) -> str | None:
    """The element type a frontend pipe's ``acc_push_epilogue`` quant mode converts an Acc
    push to (None: no_convert, or no epilogue)."""
    body = getattr(op.attributes.get("acc_push_epilogue"), "body", None)
    if not isinstance(body, str):
        return None
    m = re.search(r"quant\s*=\s*(\w+)", body)
    if m is None:
        return None
    q = m.group(1)
    for mode in sorted(_EPILOGUE_OUT, key=len, reverse=True):
        if q == mode or q.startswith(mode + "_"):
            return _EPILOGUE_OUT[mode]
    return None
def _slot_key(cf: CompiledFunc) -> int:
    """The frame slot that holds the function's GM slot descriptor (``gm_slot_tensor``)."""
    key = getattr(cf, "_frontend_slot", None)
    if key is None:
        key = cf._frontend_slot = object()  # type: ignore[attr-defined]
    return cf.slot(key)


@handler(*_INITS)
def _init(cf: CompiledFunc, op: Op) -> Step:
    d = _direction(op)
    slot_num = int(_attr(op, "slot_num", 4 if d is Direction.DIR_BOTH else 8))
    if slot_num < 1:
        raise VerifyError(f"slot_num must be greater than 0, got {slot_num}", op=op.name,
                          loc=op.loc)
    pipe = TPipe(0, d, int(_attr(op, "slot_size", 1024)), slot_num, slot_num,
                 _no_split(cf.c.module, cf.op, op), _epilogue_out(op))
    k = _pipe_key(cf)
    # a GM FIFO: ``(gm_slot_tensor = %view)`` describes one slot; its base is the ring's
    desc = _kw_list(op, "gm_slot_tensor")
    g = cf.slot(op.operands[desc[0]]) if desc else None
    sk = _slot_key(cf)

    def step(env: Env) -> None:
        if g is None:
            env[k] = pipe
            return
        view = env[g]
        if not isinstance(view, TensorView):
            raise PtoError(f"gm_slot_tensor must be a tensor view, got {type(view).__name__}",
                           op=op.name).with_loc(op.loc)
        env[k] = dataclasses.replace(pipe, buffer=view.array)
        env[sk] = view
    return step


@handler("pto.initialize_l2g2l_pipe", "pto.initialize_l2l_pipe")
def _init_value(cf: CompiledFunc, op: Op) -> Step:
    d = _direction(op)
    slot_num = int(_attr(op, "slot_num", 4 if d is Direction.DIR_BOTH else 8))
    local = int(_attr(op, "local_slot_num", slot_num))
    res = op.results[0]
    users = [u for u in cf.op.walk() if u.name in ("pto.tpush", "pto.tpop", "pto.tfree")
             and any(v is res for v in u.operands)]
    explicit = _attr(op, "nosplit")
    no_split = bool(explicit) if explicit is not None else \
        {_split(u) for u in users} == {"TILE_NO_SPLIT"}
    pipe = TPipe(int(_attr(op, "flag_base", 0)), d, int(_attr(op, "slot_size", 1024)), slot_num,
                 local, no_split)
    k = cf.slot(res)

    def step(env: Env) -> None:
        env[k] = pipe
    return step


@handler("pto.declare_tile")
def _declare_tile(cf: CompiledFunc, op: Op) -> Step:
    res = op.results[0]
    tile = cf.result_tile(op, res, "declare_tile result type", "a tile_buf")
    k = cf.slot(res)

    def step(env: Env) -> None:
        env[k] = tile
    return step


@handler(*_FRONTEND)
def _frontend(cf: CompiledFunc, op: Op) -> Step:
    ins = REGISTRY[_FRONTEND[op.name]]
    params = {"Pipe": None, "Split": _split(op)}
    if ins.name == "TPUSH":
        params["TConfig"] = None
    pk = _pipe_key(cf)
    loc = op.loc
    tile: Tile | None = None
    src: int | None = None
    valid: list[int] = []
    k: int | None = None
    # a global entry (!pto.tensor_view): the GlobalData forms on the pipe's GM slots
    entry = bool(op.results) and isinstance(op.results[0].type, T.TensorViewType)
    sk = _slot_key(cf)
    if ins.name == "TPUSH":
        if not op.operands:
            raise VerifyError("expects the tile to push", op=op.name, loc=loc)
        src = cf.slot(op.operands[0])
    elif entry:  # TALLOC / TPOP returning a global entry
        k = cf.slot(op.results[0])
    elif ins.name == "TPOP":
        if not op.results:
            raise VerifyError("expects a tile result", op=op.name, loc=loc)
        res = op.results[0]
        tile = cf.result_tile(op, res)
        k = cf.slot(res)
        grouped = set(op.grouped("aiv_subblockid"))
        valid = [cf.slot(v) for i, v in enumerate(op.operands) if i not in grouped][:2]
    elif ins.name == "TALLOC":
        raise VerifyError("expects a !pto.tensor_view result (the allocated GM slot entry)",
                          op=op.name, loc=loc)
    elif op.operands:  # TFREE of a global entry
        src = cf.slot(op.operands[0])
    try:
        ins.check_types(cf.c.target, {"tile": tile.spec} if tile is not None else {}, params)
    except PtoError as e:
        raise VerifyError(e.message, op=op.name, loc=loc) from None
    run = ins.run
    mnemonic = ins.mnemonic
    # aiv_subblockid(%id): the vector core the frontend says runs the op; ptoisa's core is
    # known, so the value is checked against it, never taken instead of it
    named = [cf.slot(op.operands[i]) for i in op.grouped("aiv_subblockid")]

    def step(env: Env) -> None:
        pipe = env[pk]
        try:
            for s in named:
                core = env[0].machine.core
                if core is not None and core[0] == "AIV" and _index(env[s]) != core[2]:
                    raise PtoError(f"aiv_subblockid({_index(env[s])}) names another vector "
                                   f"core than the one running it (sub-block {core[2]})")
            if pipe is None:
                raise PtoError(f"no pipe: {op.name} needs pto.aic_initialize_pipe / "
                               "pto.aiv_initialize_pipe earlier in the function")
            if entry:  # TALLOC / TPOP of a global entry: a view of the described slot
                desc = env[sk]
                if desc is None or pipe.buffer is None:
                    raise PtoError(f"{op.name} returns a GM slot entry: the pipe's initialize "
                                   "op needs (gm_slot_tensor = %view)")
                view = desc.whole()
                run(env[0].machine, [pipe, view, None], params, checked=True, loc=loc)
                if not isinstance(view.offset, int):
                    raise BlockDivergence("a GM slot entry differs between blocks")
                env[k] = TensorView(view.flat[view.offset:], desc.shape, desc.strides,
                                    desc.layout, desc.dtype, desc.name)
                return
            elif ins.name == "TPUSH":
                vals = [pipe, _operand(env[src]), None]
            elif ins.name == "TPOP":
                if valid:
                    tile.set_valid(_index(env[valid[0]]),  # type: ignore[union-attr]
                                   _index(env[valid[1]]) if len(valid) > 1 else None)
                env[k] = tile  # type: ignore[index]
                vals = [pipe, tile, None]
            else:
                vals = [pipe, None if src is None else _operand(env[src]), None]
            run(env[0].machine, vals, params, checked=True, loc=loc)
        except PtoError as e:
            raise e.at_op(mnemonic, loc) from None
    return step


def _operand(v: Any) -> Any:
    """A frontend op's operand as the entry takes it: a global entry as a GlobalTensor."""
    return v.whole() if isinstance(v, TensorView) else v


def runs_on_subblock(module: Any, fn: Op, target: TargetLike, sub: int) -> bool:
    """Whether vector function ``fn`` runs on sub-block ``sub``: where the target's
    ``nosplit_vector_subblock0_only`` trait says so (A5), PTOAS guards a vector function that
    uses a no-split pipe (and does not read its sub-block index itself) with
    ``if (get_subblockid() == 0)``."""
    if sub == 0 or kernel_kind(fn) != "vector" \
            or not get_target(target).traits.nosplit_vector_subblock0_only:
        return True
    ops = list(fn.walk())
    if any(op.name == "pto.get_subblock_idx" for op in ops):
        return True
    for op in ops:
        if op.name in _INITS and _no_split(module, fn, op):
            return False
    return True


def _cross_core(instr_name: str) -> Any:
    """``pto.sync.set #pto.pipe<PIPE_X>, id [{ffts_mode = n}]`` / ``pto.sync.wait`` (static id
    or an SSA id), or ``pto.set_intra_block <PIPE_X>, id`` / ``pto.wait_intra_block``: the
    SYNC_SET / SYNC_WAIT instructions."""
    def build(cf: CompiledFunc, op: Op) -> Step:
        ins = REGISTRY[instr_name]
        items = _bracket_args(op)
        if len(items) != 2:
            raise VerifyError(f"expects a pipe and an event id, got {len(items)} operand(s)",
                              op=op.name, loc=op.loc)
        params: dict[str, Any] = {}
        if instr_name == "SYNC_SET":
            params["FftsMode"] = int(_attr(op, "ffts_mode", 2))
        pipe_item, id_item = items
        slot = None if isinstance(id_item, str) else cf.slot(id_item)
        try:
            fixed, _ = ins.bind((pipe_item, 0 if slot is not None else id_item), {})
        except PtoError as e:
            raise VerifyError(e.message, op=op.name, loc=op.loc) from None
        run = ins.run
        loc = op.loc

        def step(env: Env) -> None:
            vals = [fixed[0], fixed[1] if slot is None else int(env[slot])]
            try:
                run(env[0].machine, vals, params, checked=True, loc=loc)
            except PtoError as e:
                raise e.at_op(ins.mnemonic, loc) from None
        return step
    return build


# ``pto.set_intra_block <PIPE_X>, id`` / ``pto.wait_intra_block``: the named spellings of the
# same flags (A5 set/wait_intra_block; PTOAS lowers them to the FFTS sync on A2/A3)
handler("pto.sync.set", "pto.set_intra_block")(_cross_core("SYNC_SET"))
handler("pto.sync.wait", "pto.wait_intra_block")(_cross_core("SYNC_WAIT"))

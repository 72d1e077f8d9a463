"""Interpreter handlers of the synchronisation and block ops that are not tile instructions
by name: the bracketed sync ops the entries declare (``set_flag`` / ``wait_flag`` /
``barrier`` / ``record_event`` / ``get_buf`` ..., run as their SET_FLAG / WAIT_FLAG /
PIPE_BARRIER / GET_BUF ... entries), ``fence.barrier_all``, the block queries
(``get_block_idx`` ...) and PTOAS's async comm events (``comm.build_async_session``,
``comm.wait_async_event`` / ``test_async_event``: the event of ``tput_async`` /
``tget_async`` completes at once here)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..enums import Pipe
from ..errors import ExecutionError, PtoError, VerifyError
from ..ir import attrs as A
from ..ir.core import Op
from ..isa import REGISTRY
from ..isa.comm import AsyncEvent, AsyncSession
from . import bridge
from .compiler import (
    _HANDLERS,
    CompiledFunc,
    Env,
    Step,
    _bracket_args,
    handler,
    kernel_kind,
)
from .views import _NO_PARAMS


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


def _planned(ins: Any, m: Any, vals: list[Any]) -> Any:
    """The entry's planned call for these operands on machine ``m`` (Instr.plan), or False
    when it has none or its operands fail (the dispatch point then runs it and says so)."""
    on = ins._on.get(m.target) or ins.on(m.target)
    if on.plan is None or on.runtime:
        return False
    try:
        return on.plan(ins, m, vals, {}) or False
    except PtoError:
        return False


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
        static = all(s is None for s in slots)
        static_vals = tuple(fixed[:len(slots)])
        # a static flag on a plain machine (unobserved, one lane, values, no mixed launch):
        # the entry's planned call (Instr.plan: its record, the event id checked once), bound
        # per machine; anything else takes the dispatch point
        bound: list[Any] = [None, None]

        def step(env: Env) -> None:
            m = env[0].machine
            if static and not m.observers and m.stream is None and m.lanes == 1 and m.values:
                if bound[0] is not m or bound[1] is None:
                    bound[0], bound[1] = m, _planned(ins, m, [fixed[i] for i in range(len(slots))])
                call = bound[1]
                if call is not False and call():
                    return
            # (static operands: one tuple for every run, as plain_operands passes them:
            # Instr.run only reads them)
            vals = static_vals if static else \
                [fixed[i] if s is None else int(env[s]) for i, s in enumerate(slots)]
            try:
                run(env[0].machine, vals, {}, True, loc)  # (checked, loc)
            except PtoError as e:
                raise e.at_op(ins.mnemonic, loc) from None
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

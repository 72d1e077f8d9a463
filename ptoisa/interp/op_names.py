"""Which operation names a ``.pto`` program may use, so that ``check`` rejects a misspelt op.

The parser reads any op generically (the registry decides later what it means), and the
compiler turns an op it cannot execute into a step that fails when it runs. That is right for
real PTOAS / MLIR ops ptoisa does not execute yet, and wrong for a typo: ``pto.trsqrtt`` must
be an error at ``check``, located, not at ``run``. So in the namespaces a ``.pto`` program
draws from (``pto``, ``arith``, ``scf``, ``func``, ``memref``, ``cf``) a name is known when the
compiler handles it, the registry has it, or it is listed here (ops of the PTOAS dialect and of
the upstream MLIR dialects that ptoisa parses but does not run). Ops of other dialects
(``math``, ``vector``, ...) stay run-time "cannot be executed yet".

The compiler's own tables of names live here too, below the compiler and the handler modules
that fill them (:mod:`ptoisa.interp.compiler` re-exports them): ``_HANDLERS`` (op name -> its
handler, registered with :func:`handler`) and ``NO_EFFECT`` (ops that compute nothing).
"""

from __future__ import annotations

import difflib
import functools
from collections.abc import Callable, Iterable
from typing import Any

from ..errors import VerifyError
from ..ir.core import Module, Op
from ..isa.registry import _OP_NAMES, FRONTEND_OPS, REGISTRY
from ..text import NON_DPS_OPS, ir_to_asm_name
from . import bridge

CHECKED_DIALECTS = ("pto", "arith", "scf", "func", "memref", "cf")

# PTOAS ops (PTO_IR_manual.md, the corpus) that ptoisa parses and checks but does not execute;
# ops it executes are known through the compiler's handlers and the registry
_PTOAS_NOT_RUN = """
pto.aic_initialize_pipe pto.aiv_initialize_pipe pto.initialize_l2l_pipe
pto.initialize_l2g2l_pipe pto.reserve_buffer pto.import_reserved_buffer
pto.declare_tile
pto.declare_tile_memref pto.build_async_session pto.wait_async_event pto.test_async_event
pto.bind_tile pto.pointer_cast pto.print pto.trap
pto.set_flag_dyn pto.wait_flag_dyn
"""

# the upstream MLIR ops of the dialects a .pto file uses (mlir/Dialect/{Arith,SCF,Func,MemRef,
# ControlFlow})
_MLIR = """
arith.addf arith.addi arith.addui_extended arith.andi arith.bitcast arith.ceildivsi
arith.ceildivui arith.cmpf arith.cmpi arith.constant arith.divf arith.divsi arith.divui
arith.extf arith.extsi arith.extui arith.floordivsi arith.fptosi arith.fptoui
arith.index_cast arith.index_castui arith.maximumf arith.maxnumf arith.maxsi arith.maxui
arith.minimumf arith.minnumf arith.minsi arith.minui arith.mulf arith.muli
arith.mulsi_extended arith.mului_extended arith.negf arith.ori arith.remf arith.remsi
arith.remui arith.scaling_extf arith.scaling_truncf arith.select arith.shli arith.shrsi
arith.shrui arith.sitofp arith.subf arith.subi arith.truncf arith.trunci arith.uitofp
arith.xori
scf.condition scf.execute_region scf.for scf.forall scf.forall.in_parallel scf.if
cf.assert cf.br cf.cond_br cf.switch
scf.index_switch scf.parallel scf.reduce scf.reduce.return scf.while scf.yield
func.call func.call_indirect func.constant func.func func.return
memref.alloc memref.alloca memref.alloca_scope memref.alloca_scope.return
memref.assume_alignment memref.atomic_rmw memref.atomic_yield memref.cast
memref.collapse_shape memref.copy memref.dealloc memref.dim memref.dma_start
memref.dma_wait memref.expand_shape memref.extract_aligned_pointer_as_index
memref.extract_strided_metadata memref.generic_atomic_rmw memref.get_global memref.global
memref.load memref.memory_space_cast memref.prefetch memref.rank memref.realloc
memref.reinterpret_cast memref.reshape memref.store memref.subview memref.transpose
memref.view
"""

KNOWN: frozenset[str] = frozenset((_PTOAS_NOT_RUN + _MLIR).split())

#: ops that compute nothing, each with the reason it changes no value ptoisa computes (their
#: step only tells observers that a model such as the sanitizer's skipped them); the exact
#: names, never prefixes: any other op is executed, checked, or refused by name
#: (``tests/interp/test_every_op.py`` walks every name ``check`` accepts)
NO_EFFECT: dict[str, str] = {
    "pto.set_ffts": "sets the FFTS base address of cross-core flags; ptoisa's cross-core "
                    "flags need no address",
    "pto.auto_sync_tail_hint": "a hint to PTOAS's automatic synchronisation pass",
    "pto.mem_bar": "a UB memory fence between the vector core's loads and stores; ptoisa "
                   "runs a core's micro-ops in program order, so the order it enforces "
                   "already holds",
    "memref.dealloc": "frees a buffer; ptoisa's tiles are freed when nothing refers to them",
    "pto.dsb": "a data synchronization barrier (micro-isa/01); ptoisa completes every memory "
               "access of a core before its next op, so the order it enforces already holds",
    "pto.dcci": "data-cache clean / invalidate (micro-isa/01); ptoisa models no data cache: "
                "every scalar store is in GM or UB the moment it runs",
    "pto.cmo.cacheinvalid": "invalidates the data cache's copy of GM (one line or all: dcci); "
                            "ptoisa's scalar loads read global memory itself, never a stale "
                            "cached copy, so what a load after it reads is already current "
                            "(its operand is checked: interp/verify.py)",
}

# ---- the compiler's handlers (here, below the compiler and every handler module) -----------

#: ``(CompiledFunc, Op) -> Step | None``
Handler = Callable[[Any, Op], Any]
#: op name -> the compiler's handler (``handler(cf, op)`` -> a Step, or None: nothing to run),
#: filled by the handler modules (std_ops, views, buffers, sync_ops, pipe_ops, ...) through :func:`handler`
_HANDLERS: dict[str, Handler] = {}


def handler(*names: str) -> Callable[[Handler], Any]:
    def deco(fn: Handler) -> Any:
        for n in names:
            _HANDLERS[n] = fn
        return fn
    return deco


@functools.cache
def _all_known() -> frozenset[str]:
    """(Read once every handler module registered its ops: at the first ``check``.)"""
    names = set(KNOWN) | set(NON_DPS_OPS) | set(FRONTEND_OPS)
    names |= set(_OP_NAMES) | set(_HANDLERS)
    names |= {"pto." + k.lower() for k in REGISTRY} | set(NO_EFFECT)
    return frozenset(names)


def is_checked(name: str) -> bool:
    """Whether ``name`` is in a namespace whose op names ``check`` knows completely."""
    return name.split(".", 1)[0] in CHECKED_DIALECTS


def _shown(op: Op) -> str:
    """The op's name as the user wrote it (PTO-AS mnemonics have no ``pto.`` prefix)."""
    if op.form == "asm" and op.name.startswith("pto."):
        return ir_to_asm_name(op.name)
    return op.name


def _suggest(name: str, names: Iterable[str]) -> str:
    close = difflib.get_close_matches(name, sorted(names), n=1, cutoff=0.8)
    return f" (did you mean '{close[0]}'?)" if close else ""


def unknown_op_error(op: Op) -> VerifyError | None:
    """A located error for an op the compiler met without a handler or registry entry,
    when its name is not a known op of a checked dialect; None when it is (or the dialect is
    not one ``check`` knows completely)."""
    if not is_checked(op.name) or op.name in _all_known():
        return None
    return VerifyError(f"unknown operation '{_shown(op)}'{_suggest(op.name, _all_known())}",
                       loc=op.loc)


def check_top_level(module: Module) -> None:
    """A program is a module of functions: a file with no module (``hello world``, nothing
    at all) or a stray op at module level is an error, not "ok (0 functions)"."""
    if module.implicit and not module.ops:
        raise VerifyError("no module: a .pto program is 'module { func.func @name(...) "
                          "{ ... } }'", loc=module.loc)
    for op in module.ops:
        if op.name in ("func.func", "builtin.module", "module"):
            continue
        err = unknown_op_error(op)
        if err is not None and op.form != "asm":
            raise err
        what = "a module" if module.implicit else "'func.func'"
        raise VerifyError(f"expected {what} at the top level, found '{_shown(op)}' (a .pto "
                          "program is 'module { func.func @name(...) { ... } }')", loc=op.loc)


def has_ssa_form(name: str) -> bool:
    """Whether a DPS ``pto`` op may be printed as ``%dst = pto.X %ins : (...) -> T`` (and an
    SSA one as DPS) so that ``check`` accepts it: a registry instruction with exactly one
    required ``out`` operand, a tile, and no operand that is read and written (``taxpy``'s
    dst is an accumulator: its SSA spelling would lose the value it reads)."""
    ins = bridge.instr_of(name)
    if ins is None:
        return False
    outs = [o for o in ins.operands if o.role == "out" and not o.optional]
    if any(o.role == "inout" for o in ins.operands) or len(outs) != 1:
        return False
    return "tile" in outs[0].kind


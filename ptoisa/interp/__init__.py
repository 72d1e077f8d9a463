"""Run PTO programs: ``ptoisa.load(path_or_text)`` then ``mod.<func>(*arrays, blocks=N)``.

The module is parsed, checked for the target (SSA + every instruction's legality from the
registry), compiled once per (function, target) to closures, and run on numpy arrays: pointer
arguments bind to arrays (results are written into them), scalar arguments to numbers. A
launch over N blocks runs every block with its own ``get_block_idx``.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from .. import grid, memory
from ..errors import ExecutionError, PtoError, VerifyError
from ..ir import attrs as A
from ..ir import types as T
from ..ir.core import Module, Op
from . import bridge
from . import view_ops as _view_ops  # noqa: F401 - registers the view / tile-buffer handlers
from .compiler import CompiledFunc, Compiler, Context


def _bind_arg(fn: CompiledFunc, i: int, t: T.Type, name: str, v: Any) -> Any:
    where = f"argument {i} (%{name}: {t}) of @{fn.name}"
    if isinstance(t, T.PtrType) or (isinstance(t, T.MemRefType)
                                   and bridge.memref_space(t) == "gm"):
        if not isinstance(v, np.ndarray):
            raise PtoError(f"{where} must be a numpy array, got {type(v).__name__}")
        want = bridge.elem_dtype(t.dtype)
        if v.dtype != want.np:
            raise PtoError(f"{where} must have dtype {want.name} ({want.np}), got {v.dtype}")
        if not v.flags.c_contiguous:
            raise PtoError(f"{where} must be C-contiguous")
        return v.reshape(-1)
    if isinstance(t, (T.IntegerType, T.IndexType)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
            raise PtoError(f"{where} must be an integer, got {v!r}")
        return int(v)
    if isinstance(t, T.FloatType):
        if not isinstance(v, (int, float, np.floating, np.integer)):
            raise PtoError(f"{where} must be a number, got {v!r}")
        return bridge.elem_dtype(t).np.type(v)
    return v


class Kernel:
    """A callable function of a loaded module."""

    def __init__(self, program: Program, name: str) -> None:
        self.program = program
        self.name = name

    def __call__(self, *args: Any, blocks: int = 1, target: str | None = None,
                 machine: memory.Machine | None = None, sanitize: Any = False
                 ) -> tuple[Any, ...]:
        return self.program.run(self.name, *args, blocks=blocks, target=target,
                                machine=machine, sanitize=sanitize)

    def __repr__(self) -> str:
        return f"<kernel @{self.name}>"


class Program:
    """A parsed ``.pto`` module, runnable for any target."""

    def __init__(self, module: Module, target: str = "cpu", *, level: str | None = None) -> None:
        self.module = module
        self.target = target
        self.level = level  # PTOAS --pto-level (``level3``: addresses are the program's)
        self._compilers: dict[str, Compiler] = {}

    def compiler(self, target: str) -> Compiler:
        c = self._compilers.get(target)
        if c is None:
            c = self._compilers[target] = Compiler(self.module, target)
        return c

    def check(self, target: str | None = None) -> None:
        """Module rules (entry functions return nothing, no recursion, the cross-op rules of
        :mod:`ptoisa.interp.verify`), then compile every function for the target (raises
        VerifyError with location)."""
        from .verify import check_module_rules

        check_module(self.module)
        check_module_rules(self.module, self.level)
        c = self.compiler(target or self.target)
        for f in self.module.functions():
            if f.sym_name and f.regions and f.regions[0].blocks:
                c.function(f.sym_name)

    @property
    def entry(self) -> str:
        """The function a launch runs by default: the one marked ``pto.entry`` (or with a
        ``pto.kernel_kind``), else the only public function with a body."""
        names = entry_functions(self.module)
        if len(names) == 1:
            return names[0]
        raise PtoError("no single entry function; choose one of: " + ", ".join(self.functions))

    @property
    def functions(self) -> list[str]:
        return [f.sym_name for f in self.module.functions() if f.sym_name]

    def run(self, name: str, *args: Any, blocks: int = 1, target: str | None = None,
            machine: memory.Machine | None = None, lockstep: bool | str = "auto",
            sanitize: Any = False) -> tuple[Any, ...]:
        """Run function ``name`` over ``blocks`` blocks. Blocks run in lockstep (one pass, each
        instruction once for all blocks) unless the program's control flow depends on the
        block index, in which case (lockstep="auto") they run one after another.
        ``sanitize`` as for :func:`ptoisa.launch` (raises SanitizerError on findings, unless
        a Sanitizer object was passed: then its ``report`` has them)."""
        if sanitize is not False and sanitize is not None:
            from ..sanitizer import SanitizerError, sanitized, sync_mode_of

            out, report, strict = sanitized(
                sanitize, sync_mode_of(self.module, name), lambda: self.run(
                    name, *args, blocks=blocks, target=target, machine=machine,
                    lockstep=lockstep), machine)
            if report and strict:
                raise SanitizerError(report)
            return out  # type: ignore[no-any-return]
        tgt = target or (machine.target.name if machine else self.target)
        fn = self.compiler(tgt).function(name)
        if len(args) != len(fn.args):
            sig = ", ".join(f"%{n}: {t}" for _, t, n in fn.args)
            raise PtoError(f"@{name} takes {len(fn.args)} arguments ({sig}), got {len(args)}")
        bound = [_bind_arg(fn, i, t, n, v) for i, ((_, t, n), v) in
                 enumerate(zip(fn.args, args, strict=True))]
        if isinstance(blocks, bool) or not isinstance(blocks, int) or blocks < 1:
            raise PtoError(f"blocks must be a positive integer, got {blocks!r}")
        if lockstep not in (True, False, "auto"):
            raise PtoError(f"lockstep must be True, False or 'auto', got {lockstep!r}")
        self.compiler(tgt).reset_tiles()
        with np.errstate(all="ignore"):  # ISA semantics define inf/NaN/wrap: no warnings
            return self._run(fn, bound, blocks, tgt, machine, lockstep)

    def _run(self, fn: CompiledFunc, bound: list[Any], blocks: int, tgt: str,
             machine: memory.Machine | None, lockstep: bool | str) -> tuple[Any, ...]:
        if machine is None and lockstep and blocks > 1:
            m = grid._launch_machine(tgt, blocks, {})
            try:
                m.block_idx, m.block_num = grid.Lanes(np.arange(blocks)), blocks
                ctx = Context(m, m.block_idx, blocks)
                return fn.invoke(ctx, bound)  # type: ignore[attr-defined,no-any-return]
            except grid.BlockDivergence:
                if lockstep is True or m.gm_writes:
                    raise
                self.compiler(tgt).reset_tiles()
            finally:
                grid._done(m)
        if machine is not None:
            m = memory.push(machine)
            m.quiet = True
        else:
            m = grid._launch_machine(tgt, 1, {})
        out: tuple[Any, ...] = ()
        try:
            for b in range(blocks):
                if machine is None:
                    m.reset_for_launch()
                m.block_idx, m.block_num = b, blocks
                m.reset_print_buffer()
                out = fn.invoke(Context(m, b, blocks), bound)  # type: ignore[attr-defined]
        finally:
            if machine is None:
                grid._done(m)
            else:
                m.quiet = False
                memory.pop(m)
        return out

    def __getattr__(self, name: str) -> Callable[..., Any]:
        if name.startswith("_"):
            raise AttributeError(name)
        if self.module.lookup(name) is None:
            raise AttributeError(f"module has no function '{name}' "
                                 f"(functions: {', '.join(self.functions)})")
        return Kernel(self, name)


def _defined(module: Module) -> list[Op]:
    return [f for f in module.functions() if f.sym_name and f.regions and f.regions[0].blocks]


def entry_functions(module: Module) -> list[str]:
    """Functions marked as entries or kernels; else the only public defined function."""
    funcs = _defined(module)
    marked = [f.sym_name for f in funcs if f.attributes.get("pto.entry") is not None]
    if not marked:
        marked = [f.sym_name for f in funcs if f.attributes.get("pto.kernel_kind") is not None]
    if not marked:
        public = [f for f in funcs if bridge.attr_value(f.attributes.get("sym_visibility")
                                                         or A.StringAttr("public")) != "private"]
        marked = [f.sym_name for f in public] if len(public) == 1 else []
    return [m for m in marked if m]


def check_module(module: Module) -> None:
    """PTOAS module rules: entry functions return void; the call graph has no cycle."""
    by_name = {f.sym_name: f for f in _defined(module)}
    for name in entry_functions(module):
        f = by_name[name]
        fty = f.attributes.get("function_type")
        if isinstance(fty, A.TypeAttr) and getattr(fty.type, "results", ()):
            raise VerifyError(f"PTO entry functions must return void (@{name} returns "
                              f"{', '.join(map(str, fty.type.results))})", loc=f.loc)
    calls: dict[str, list[tuple[str, Op]]] = {}
    for name, f in by_name.items():
        calls[name] = [(op.callee, op) for op in f.walk()
                       if op.name in ("func.call", "call") and op.callee]
    state: dict[str, int] = {}

    def visit(n: str) -> None:
        state[n] = 1
        for callee, op in calls.get(n, ()):
            if state.get(callee) == 1:
                raise VerifyError("recursive function calls are not supported for EmitC C++ "
                                  f"emission (@{n} calls @{callee})", loc=op.loc)
            if callee in calls and callee not in state:
                visit(callee)
        state[n] = 2

    for n in calls:
        if n not in state:
            visit(n)


def load(source: str | Path, *, target: str = "cpu", filename: str | None = None) -> Program:
    """Parse a ``.pto`` file (a path) or program text, check it, and return a Program."""
    from ..text import parse

    if isinstance(source, Path) or (isinstance(source, str) and "\n" not in source
                                    and source.endswith(".pto")):
        path = Path(source)
        try:
            text = path.read_text()
        except OSError as e:
            raise PtoError(f"cannot read {path}: {e.strerror}") from None
        fname = filename or str(path)
    else:
        text = str(source)
        fname = filename or "<string>"
    prog = Program(parse(text, fname), target)
    prog.check()
    return prog


__all__ = ["ExecutionError", "Kernel", "Program", "check_module", "entry_functions", "load"]

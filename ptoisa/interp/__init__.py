"""Run PTO programs: ``ptoisa.load(path_or_text)`` then ``mod.<func>(*arrays, blocks=N)``.

The module is parsed, checked for the target (SSA + every instruction's legality from the
registry), compiled once per (function, target) to closures, and run on numpy arrays: pointer
arguments bind to arrays (results are written into them), scalar arguments to numbers. A
launch over N blocks runs every block with its own ``get_block_idx``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np

from .. import eager_plans, grid, memory, observe
from .. import plans as _plans
from ..errors import ExecutionError, PtoError
from ..foreign import Foreign, to_numpy, type_name, write_back
from ..ir import types as T
from ..ir.core import Module
from ..targets import DEFAULT_TARGET, Target, TargetLike, get_target
from ..tensor import GlobalTensor
from ..vector.regs import SPACES, Ptr
from . import bridge
from . import buffers as _buffers  # noqa: F401 - registers the tile buffer / placement handlers
from . import local_ops as _local_ops  # noqa: F401 - registers the local array / struct ops
from . import micro as _micro  # noqa: F401 - registers the micro-op binding
from . import pipe_ops as _pipe_ops
from . import scalar_ops as _scalar_ops  # noqa: F401 - registers the pointer / scalar ops
from . import sections as _sections
from . import std_ops as _std_ops  # noqa: F401 - registers the arith/scf/func handlers
from . import structure as _structure
from . import sync_ops as _sync_ops  # noqa: F401 - registers the sync / block-query handlers
from . import value_args as _value_args
from . import vbatch as _vbatch  # noqa: F401 - registers vecscope (its loops run batched)
from . import views as _views  # noqa: F401 - registers the tensor view / window handlers
from . import vmi as _vmi  # noqa: F401 - registers the VMI binding
from .compiler import CompiledFunc, Compiler, Context
from .op_names import _HANDLERS, NO_EFFECT
from .verify import check_module, check_module_rules, check_symbols, entry_functions

_NDARRAY = np.ndarray  # (the 1-block short path's argument check: one global read)


def _settings(permissive: bool, acc: str) -> dict[str, Any]:
    """A launch's machine settings (what its launch machine is cached by: grid.machine_key;
    the general path and the 1-block short path must make the same)."""
    settings: dict[str, Any] = {"permissive": True} if permissive else {}
    settings["matmul_accumulation"] = acc
    return settings


def _bind_arg(fn: CompiledFunc, i: int, t: T.Type, name: str, v: Any,
              foreign: list[Foreign] | None = None) -> Any:
    if type(v) is np.ndarray and type(t) is T.PtrType and t.space in (None, "gm") \
            and v.dtype == bridge.elem_dtype(t.dtype).np and v.flags.c_contiguous:
        # (a GM array as the pointer wants it: as below, no message made; a flat array is
        # itself, so a replayed plan finds the arrays it bound last time, ptoisa/plans.py)
        return v if v.ndim == 1 else v.reshape(-1)
    where = f"argument {i} (%{name}: {t}) of @{fn.name}"
    if isinstance(t, T.PtrType) and t.space not in (None, "gm") and isinstance(v, Ptr):
        return _bind_chip_ptr(t, v, where)
    if isinstance(t, T.MemRefType) and bridge.memref_space(t) != "gm" and isinstance(v, Ptr) \
            and bridge.tile_spec_of(t, fn.c.target) is None:
        # an on-chip memref of a dynamic shape (``memref<?xf16, #pto.address_space<mat>>``):
        # a buffer's address, as an on-chip pointer is
        return _bind_chip_ptr(T.PtrType(t.dtype, bridge.memref_space(t)), v, where)
    if isinstance(t, T.PtrType) or (isinstance(t, T.MemRefType)
                                   and bridge.memref_space(t) == "gm"):
        origin = ""
        if not isinstance(v, np.ndarray):  # torch / jax / ... arrays (ptoisa/arrays.py)
            v, f = to_numpy(v, where)
            if f is not None and foreign is not None:
                foreign.append(f)
            origin = f" (from {type_name(f.obj)})" if f is not None else ""
        want = bridge.elem_dtype(t.dtype)
        if want.lanes > 1 and v.dtype == want.lane_type.np and v.flags.c_contiguous \
                and v.size % want.lanes == 0:  # (a packed SIMT pointer: lanes side by side)
            v = v.reshape(-1).view(want.np)
        if v.dtype != want.np:
            raise PtoError(f"{where} must have dtype {want.name} ({want.np}), got {v.dtype}"
                           + origin)
        if not v.flags.c_contiguous:
            raise PtoError(f"{where} must be C-contiguous")
        return v.reshape(-1)
    if isinstance(t, T.PartitionTensorViewType) and isinstance(v, np.ndarray):
        # a partition view argument given as the array of its (static) shape: that array as
        # a row-major GM tensor (a GlobalTensor argument is taken as it is)
        if None in t.shape:
            raise PtoError(f"{where} has a dynamic shape: pass a GlobalTensor")
        want = bridge.elem_dtype(t.dtype)
        if v.dtype != want.np:
            raise PtoError(f"{where} must have dtype {want.name} ({want.np}), got {v.dtype}")
        if v.size != int(np.prod(t.shape)):
            raise PtoError(f"{where} must have {int(np.prod(t.shape))} elements "
                           f"({'x'.join(map(str, t.shape))}), got shape {v.shape}")
        if not v.flags.c_contiguous:
            raise PtoError(f"{where} must be C-contiguous")
        return GlobalTensor(v, tuple(t.shape), dtype=want, name=name)
    if isinstance(t, T.IntegerType) and t.width == 1 and isinstance(v, (bool, np.bool_)):
        return int(v)  # an i1 is a truth value: Python's True/False are its two values
    if isinstance(t, (T.IntegerType, T.IndexType)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
            raise PtoError(f"{where} must be an integer, got {v!r}")
        lo, hi = int_range(t)
        if not lo <= int(v) <= hi:  # the interpreter would wrap it silently
            raise PtoError(f"{where}: {_num(int(v))} is out of range for {t} [{lo}, {hi}]")
        return int(v)
    if isinstance(t, T.FloatType):
        if not isinstance(v, (int, float, np.floating, np.integer)):
            raise PtoError(f"{where} must be a number, got {v!r}")
        from .arith import to_float

        dt = bridge.elem_dtype(t)
        try:
            with np.errstate(over="ignore", invalid="ignore"):
                x = to_float(v, dt)  # rounded once (bf16 too)
            finite_in = bool(np.isfinite(float(v)))
        except OverflowError:  # an int beyond even f64
            x, finite_in = dt.np.type("inf"), True
        if finite_in and not np.isfinite(float(x)):
            raise PtoError(f"{where}: {_num(v)} overflows {t} (largest finite "
                           f"{float(ml_dtypes.finfo(dt.np).max)})")
        return x
    spec = _value_args.register_spec(t)
    if spec is not None:
        return _value_args.bind_register(spec, v, where)
    if isinstance(t, T.TileBufType) or (isinstance(t, T.MemRefType)
                                        and bridge.memref_space(t) != "gm"):
        tile = bridge.tile_spec_of(t, fn.c.target)
        if tile is not None:  # (an on-chip memref of a static 2-D shape is a tile)
            return _value_args.bind_tile(tile, v, where, name)
    return v


def _bind_chip_ptr(t: T.PtrType, v: Ptr, where: str) -> Ptr:
    """An on-chip pointer argument (``!pto.ptr<T, ub>`` ...) given as a ``vector.regs.Ptr``
    (an array is taken as before: the VMI ops read it as the buffer): one into that buffer,
    of that element type."""
    if SPACES.get(v.space) != SPACES.get(t.space or "") or v.dtype != bridge.elem_dtype(t.dtype):
        raise PtoError(f"{where} must be a pointer into {t.space} of {t.dtype}, got {v!r}")
    return v


def _num(v: Any) -> str:
    """A number for a message: huge integers by their size, not thousands of digits."""
    if isinstance(v, int) and v.bit_length() > 128:
        return f"a {v.bit_length()}-bit integer"
    return str(v)


def int_range(t: T.Type) -> tuple[int, int]:
    """The values an integer argument of type ``t`` holds: signless and signed iN as two's
    complement (as the interpreter computes them), uiN unsigned, i1 as 0/1, index as i64."""
    w = t.width if isinstance(t, T.IntegerType) else 64
    if w == 1:
        return 0, 1
    if isinstance(t, T.IntegerType) and t.signedness == "u":
        return 0, (1 << w) - 1
    return -(1 << (w - 1)), (1 << (w - 1)) - 1


class Kernel:
    """A callable function of a loaded module."""

    def __init__(self, program: Program, name: str) -> None:
        self.program = program
        self.name = name

    def __call__(self, *args: Any, blocks: int = 1, target: TargetLike | None = None,
                 machine: memory.Machine | None = None, permissive: bool | None = None,
                 cycles: bool | str = False, sanitize: Any = False, plans: bool | None = None
                 ) -> Any:
        return self.program.run(self.name, *args, blocks=blocks, target=target,
                                machine=machine, permissive=permissive, cycles=cycles,
                                sanitize=sanitize, plans=plans)

    def __repr__(self) -> str:
        return f"<kernel @{self.name}>"


class Program:
    """A parsed ``.pto`` module, runnable for any target."""

    def __init__(self, module: Module, target: TargetLike = DEFAULT_TARGET, *,
                 level: str | None = None, permissive: bool = False) -> None:
        self.module = module
        _structure.register(module)  # (fix notes name the scf.if / loop around an op)
        self.target = get_target(target)
        self.level = level  # PTOAS --pto-level (``level3``: addresses are the program's)
        #: the default of run(permissive=...): skip the documented checks (types and run
        #: time) the upstream CPU simulator does not make
        self.permissive = permissive
        #: loop iterations a run may take (0: the default, ``compiler.MAX_STEPS``)
        self.max_steps = 0
        self._compilers: dict[tuple[Target, bool], Compiler] = {}
        self._core_compilers: dict[tuple[Target, int, bool], Compiler] = {}
        #: function name -> what a 1-block launch of it on flat GM arrays binds, for
        #: _replayed (filled by such a launch's general path)
        self._flat: dict[str, tuple[Target, bool, Compiler, CompiledFunc,
                                    tuple[np.dtype, ...]]] = {}
        #: (matmul accumulation, target, permissive, the key of their launch machine) for
        #: _replayed (the settings compared by identity, as the key holds them)
        self._flat_machine: tuple[Any, Any, Any, Any] = (None, None, None, None)

    def compiler(self, target: TargetLike, permissive: bool | None = None) -> Compiler:
        p = self.permissive if permissive is None else permissive
        target = get_target(target)
        c = self._compilers.get((target, p))
        if c is None:
            c = self._compilers[(target, p)] = Compiler(self.module, target, p)
        return c

    def check(self, target: TargetLike | None = None) -> None:
        """Module rules (entry functions return nothing, no recursion, the cross-op rules of
        :mod:`ptoisa.interp.verify`), then compile every function for the target (raises
        VerifyError with location)."""
        check_module(self.module)
        target = get_target(target or self.target)
        check_module_rules(self.module, self.level, target)
        check_symbols(self.module)
        c = self.compiler(target)
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

    def run(self, name: str, *args: Any, blocks: int = 1, target: TargetLike | None = None,
            machine: memory.Machine | None = None, lockstep: bool | str = "auto",
            permissive: bool | None = None, cycles: bool | str = False,
            sanitize: Any = False, matmul_accumulation: str | None = None,
            plans: bool | None = None) -> Any:
        """Run function ``name`` over ``blocks`` blocks. Blocks run in lockstep (one pass, each
        instruction once for all blocks) unless the program's control flow depends on the
        block index, in which case (lockstep="auto") they run one after another.
        ``permissive=True`` skips the documented run-time checks the upstream CPU simulator
        does not make (see :func:`ptoisa.target`); with ``machine`` its own setting holds.
        ``matmul_accumulation``: "f32" | "exact" (see :func:`ptoisa.set_matmul_accumulation`;
        by default the current machine's, or ``machine``'s).
        ``cycles=True`` returns the cycle model's report (its ``outputs`` hold the results);
        ``cycles="timing"``: the same cycles, no values computed (``outputs`` hold none).
        ``sanitize`` as for :func:`ptoisa.launch` (raises SanitizerError on findings, unless
        a Sanitizer object was passed: then its ``report`` has them).
        ``plans``: replay the function's execution plan for this signature (ptoisa.plans;
        None: on unless ``PTOISA_PLANS=0``); observed launches always run interpreted."""
        if blocks == 1 and machine is None and target is None and permissive is None \
                and matmul_accumulation is None and cycles is False and sanitize is False \
                and self._replayed(name, args, lockstep, plans):
            return ()
        use_plans = _plans.enabled(plans)
        sanitizing = sanitize is not False and sanitize is not None
        from ..cycles import cycles_mode

        cycles, with_values = cycles_mode(cycles)
        if sanitizing and not with_values:
            raise PtoError("cycles='timing' computes no values: the sanitizer needs them "
                           "(sanitize with cycles=True or without cycles)")
        if sanitizing or cycles:
            with contextlib.ExitStack() as stack:
                if sanitizing:
                    from ..sanitizer import SanitizerError, sync_mode_of
                    from ..sanitizer import sanitizing as _sanitizing

                    session = stack.enter_context(
                        _sanitizing(sanitize, sync_mode_of(self.module, name)))
                if cycles:
                    from ..cycles import observe as _timing

                    model = stack.enter_context(_timing(
                        target or (machine.target if machine else self.target),
                        values=with_values))
                out = self._launch(name, args, blocks, target, machine, lockstep, permissive,
                                   matmul_accumulation, use_plans)
            if sanitizing and session.report and session.strict:
                raise SanitizerError(session.report)
            if not cycles:
                return out
            rep = model.report()
            rep.outputs = out
            return rep
        return self._launch(name, args, blocks, target, machine, lockstep, permissive,
                            matmul_accumulation, use_plans)

    def _replayed(self, name: str, args: tuple[Any, ...], lockstep: Any, plans: bool | None
                  ) -> bool:
        """A 1-block launch of ``name`` on this program's target and settings, every argument
        a flat C-contiguous array of its pointer's element type (bound as itself, as
        _bind_arg binds it), replayed from its plan with only what the replay needs: the
        plan's guards (ptoisa.plans.replay) on the launch machine. False, having done
        nothing observable: not such a launch, or not a replay (the general path decides)."""
        flat = self._flat.get(name)
        if flat is None:
            return False
        target, permissive, comp, fn, wants = flat
        if target is not self.target or permissive is not self.permissive \
                or len(args) != len(wants) or not (lockstep is True or lockstep is False
                                                   or lockstep == "auto"):
            return False
        keys = [None] * len(wants)
        i = 0
        for v in args:  # (as many as wants)
            if type(v) is not _NDARRAY:
                return False
            d = v.dtype
            if d is not wants[i] and d != wants[i]:  # (numpy's types: one object each)
                return False
            fl = v.flags
            if v.ndim != 1 or not fl.c_contiguous:
                return False
            keys[i] = (d, v.size, fl.writeable)  # (plans' signature of an array)
            i += 1
        if plans is not True and not _plans.enabled(plans):
            return False
        acc = memory.current().matmul_accumulation
        mk = self._flat_machine
        if mk[0] is not acc or mk[1] is not target or mk[2] is not permissive:
            # (the key the general path's machine is cached by: made once for these settings)
            mk = self._flat_machine = (acc, target, permissive,
                                       grid.machine_key(target, 1, _settings(permissive, acc)))
        m = grid.machine_by_key(mk[3])
        if m is None or m.observers or observe.active():
            return False
        got = _plans.replay(fn, m, args, (1, tuple(keys)))
        if got is None:
            return False
        go, resets = got
        eager_plans.nested("a launch")
        if resets:  # (a plan that uses none of the function's tiles: they may stay bound)
            comp.reset_tiles()
        grid.run_one(go, m, resets)  # (m and every launch unobserved: seen above)
        return True

    def _note_flat(self, name: str, comp: Compiler, fn: CompiledFunc, bound: list[Any],
                   args: tuple[Any, ...]) -> None:
        """(A 1-block launch's general path, on the program's own target and settings) what
        _replayed needs, when every argument is a flat array bound as itself."""
        was = self._flat.get(name)
        if (was is not None and was[0] is self.target and was[1] is self.permissive) \
                or not all(b is a for b, a in zip(bound, args, strict=True)):
            return
        wants = []
        for (_, t, _n), b in zip(fn.args, bound, strict=True):
            if type(t) is not T.PtrType or t.space not in (None, "gm") \
                    or type(b) is not np.ndarray or b.dtype != bridge.elem_dtype(t.dtype).np:
                return
            wants.append(b.dtype)
        self._flat[name] = (self.target, self.permissive, comp, fn, tuple(wants))

    def _launch(self, name: str, args: tuple[Any, ...], blocks: int, target: TargetLike | None,
                machine: memory.Machine | None, lockstep: bool | str,
                permissive: bool | None, matmul_accumulation: str | None = None,
                use_plans: bool = False) -> Any:
        target = get_target(target or (machine.target if machine else self.target))
        if permissive is not None and not isinstance(permissive, bool):
            raise PtoError(f"permissive must be True or False, got {permissive!r}")
        if machine is not None and permissive is not None and permissive != machine.permissive:
            raise PtoError(f"permissive={permissive} contradicts the machine passed "
                           f"(permissive={machine.permissive})")
        if permissive is None:
            permissive = machine.permissive if machine is not None else self.permissive
        if machine is not None and matmul_accumulation is not None \
                and matmul_accumulation != machine.matmul_accumulation:
            raise PtoError(f"matmul_accumulation={matmul_accumulation!r} contradicts the machine "
                           f"passed ({machine.matmul_accumulation!r})")
        acc = matmul_accumulation or (machine or memory.current()).matmul_accumulation
        settings = _settings(permissive, acc)
        comp = self.compiler(target, permissive)
        fn = comp.function(name)
        if len(args) != len(fn.args):
            sig = ", ".join(f"%{n}: {t}" for _, t, n in fn.args)
            raise PtoError(f"@{name} takes {len(fn.args)} arguments ({sig}), got {len(args)}")
        foreign: list[Foreign] = []  # other libraries' arrays
        bound = [_bind_arg(fn, i, t, n, v, foreign) for i, ((_, t, n), v) in
                 enumerate(zip(fn.args, args, strict=True))]
        if isinstance(blocks, bool) or not isinstance(blocks, int) or blocks < 1:
            raise PtoError(f"blocks must be a positive integer, got {blocks!r}")
        tiles = [b for b in bound if isinstance(b, _value_args.TileArg)]
        if tiles and blocks != 1:
            raise PtoError(f"tile argument %{tiles[0].name} of @{name} is one core's tile: "
                           f"run with blocks=1, got {blocks}")
        use_plans = use_plans and not tiles  # (a plan replays arrays, not tiles made per run)
        if lockstep not in (True, False, "auto"):
            raise PtoError(f"lockstep must be True, False or 'auto', got {lockstep!r}")
        if self._is_mixed(name):
            if tiles:
                raise PtoError(f"@{name} is a mixed cube + vector kernel: its tile argument "
                               f"%{tiles[0].name} would be a tile of each core it runs on "
                               "(not supported)")
            if machine is not None:
                raise PtoError(f"@{name} is a mixed cube + vector kernel: it runs on a machine "
                               "per core; machine= is not supported")
            self._run_mixed({"any": (name, bound)}, blocks, target, lockstep,
                            {"matmul_accumulation": acc})
            write_back(foreign)
            return ()
        if blocks == 1 and use_plans and machine is None and target is self.target \
                and permissive is self.permissive and not foreign:
            self._note_flat(name, comp, fn, bound, args)
        comp.reset_tiles()
        # (ISA semantics define inf/NaN/wrap: no warnings, by run_blocks' numpy error state)
        out = self._run(fn, bound, blocks, target, machine, lockstep, settings,
                        use_plans and machine is None)
        write_back(foreign)
        return out

    # ---- mixed cube + vector kernels ---------------------------------------------------------
    def _is_mixed(self, name: str) -> bool:
        """Does ``name`` call (directly or not) both a cube and a vector function, or hold
        (itself or in a function it calls) both a cube and a vector section?"""
        cache = self.__dict__.setdefault("_mixed", {})
        if name not in cache:
            cache[name] = self._calls_both_kinds(name)
        return bool(cache[name])

    def _calls_both_kinds(self, name: str) -> bool:
        kinds, seen, todo = set(), {name}, [name]
        while todo:
            f = self.module.lookup(todo.pop())
            if f is None:
                continue
            k = _pipe_ops.kernel_kind(f)
            if k:
                kinds.add(k)
            kinds |= _sections.section_kinds(f)  # pto.section.cube / .vector bodies
            for op in f.walk():
                if op.name in ("func.call", "call") and op.callee and op.callee not in seen:
                    seen.add(op.callee)
                    todo.append(op.callee)
        return kinds == {"cube", "vector"}

    def run_mixed(self, cube: str, vector: str, *, cube_args: tuple[Any, ...] = (),
                  vector_args: tuple[Any, ...] = (), blocks: int = 1,
                  target: TargetLike | None = None,
                  lockstep: bool | str = "auto", matmul_accumulation: str | None = None) -> None:
        """Launch cube function ``cube`` on the AIC and vector function ``vector`` on both AIVs
        of ``blocks`` clusters, joined by their pipes (for modules without an entry that
        calls both). ``matmul_accumulation`` as for :meth:`run`. A tile argument (its array)
        becomes a tile of each core that runs the function, holding the array's values; the
        array gets back the cube's tile, or vector sub-block 0's (one block)."""
        target = get_target(target or self.target)
        calls: dict[str, tuple[str, list[Any]]] = {}
        foreign: list[Foreign] = []
        for kind, name, args in (("cube", cube, cube_args), ("vector", vector, vector_args)):
            fn = self.compiler(target).function(name)
            if len(args) != len(fn.args):
                sig = ", ".join(f"%{n}: {t}" for _, t, n in fn.args)
                raise PtoError(f"@{name} takes {len(fn.args)} arguments ({sig}), got {len(args)}")
            calls[kind] = (name, [_bind_arg(fn, i, t, n, v, foreign) for i, ((_, t, n), v) in
                                  enumerate(zip(fn.args, args, strict=True))])
        acc = matmul_accumulation or memory.current().matmul_accumulation
        self._run_mixed(calls, blocks, target, lockstep, {"matmul_accumulation": acc})
        write_back(foreign)

    def _core_compiler(self, target: Target, core: int) -> Compiler:
        """A compiler per core: each core's functions get their own tiles."""
        key = (target, core, self.permissive)
        c = self._core_compilers.get(key)
        if c is None:
            c = self._core_compilers[key] = Compiler(self.module, target, self.permissive)
        return c

    def _run_mixed(self, calls: dict[str, tuple[str, list[Any]]], blocks: int, target: Target,
                   lockstep: bool | str, settings: dict[str, Any] | None = None) -> None:
        from ..concurrent.streams import run_cluster

        module = self.module

        def body(m: memory.Machine) -> None:
            kind = "cube" if m.core[0] == "AIC" else "vector"
            sub = int(m.sub_block_id)
            comp = self._core_compiler(target, 0 if kind == "cube" else 1 + sub)
            comp.reset_tiles()
            ctx = Context(m, m.block_idx, blocks, self.max_steps)
            ctx.subblock_idx, ctx.subblock_num = sub, 2
            ctx.core = _Core(module, target, kind, sub)
            entry = calls.get("any") or calls.get(kind)
            if entry is None:
                return
            name, bound = entry
            if "any" not in calls and not ctx.core.runs(kind, name):
                return
            # a tile argument is a tile of each core that runs the function, holding the
            # array; the array gets back the cube's tile, or vector sub-block 0's
            own = [_value_args.TileArg(b.spec, b.array, b.valid, b.name)
                   if isinstance(b, _value_args.TileArg) else b for b in bound]
            args, tiles = _value_args.materialize(own)
            comp.function(name).invoke(ctx, args)  # type: ignore[attr-defined]
            if kind == "cube" or sub == 0:
                for ta in tiles:
                    ta.write_back()

        run_cluster(body, target=target, blocks=blocks, lockstep=lockstep, settings=settings)

    def _run(self, fn: CompiledFunc, bound: list[Any], blocks: int, target: Target,
             machine: memory.Machine | None, lockstep: bool | str,
             settings: dict[str, Any], use_plans: bool = False) -> tuple[Any, ...]:
        comp = self.compiler(target, bool(settings.get("permissive")))

        def body(m: memory.Machine) -> tuple[Any, ...]:
            ctx = Context(m, m.block_idx, blocks, self.max_steps)
            if use_plans:  # replay the launch's plan, or record one (ptoisa/plans.py)
                return _plans.run(  # type: ignore[no-any-return]
                    fn, ctx, bound, lambda: fn.invoke(ctx, bound),  # type: ignore[attr-defined]
                    lambda: _plans.plannable(self.module, fn.name, _HANDLERS, NO_EFFECT))
            args, tiles = _value_args.materialize(bound)
            out = fn.invoke(ctx, args)  # type: ignore[attr-defined]
            for ta in tiles:
                ta.write_back()
            return out  # type: ignore[no-any-return]

        out = grid.run_blocks(body, blocks=blocks, target=target, lockstep=lockstep,
                              settings=settings, machine=machine, fresh=comp.reset_tiles,
                              planned=True)
        return out if out is not None else ()

    def __getattr__(self, name: str) -> Callable[..., Any]:
        if name.startswith("_"):
            raise AttributeError(name)
        known = self.__dict__.setdefault("_known", set())  # lookup walks the module
        if name not in known:
            if self.module.lookup(name) is None:
                raise AttributeError(f"module has no function '{name}' "
                                     f"(functions: {', '.join(self.functions)})")
            known.add(name)
        return Kernel(self, name)


class _Core:
    """The core a frame runs on in a mixed launch: which kernel-kind functions it runs."""

    __slots__ = ("module", "target", "kind", "sub", "_runs")

    def __init__(self, module: Module, target: Target, kind: str, sub: int) -> None:
        self.module, self.target, self.kind, self.sub = module, target, kind, sub
        self._runs: dict[str, bool] = {}

    def runs(self, kind: str, name: str) -> bool:
        if kind != self.kind:
            return False
        r = self._runs.get(name)
        if r is None:
            f = self.module.lookup(name)
            r = self._runs[name] = f is None or _pipe_ops.runs_on_subblock(
                self.module, f, self.target, self.sub)
        return r


def load(source: str | Path, *, target: TargetLike = DEFAULT_TARGET, filename: str | None = None,
         permissive: bool = False, backend: str | None = None) -> Program:
    """Parse a ``.pto`` file (a path) or program text, check it, and return a Program.
    ``permissive``: check and (by default) run it skipping the documented checks the upstream
    CPU simulator does not make (see :func:`ptoisa.target`). ``backend``: check and run it as
    PTOAS's ``--pto-backend=backend`` builds it (``"vpto"``: PTOAS's a5 TileLib where it
    differs from pto-isa, :meth:`ptoisa.targets.Target.with_backend`; default: pto-isa's)."""
    if backend is not None:
        target = get_target(target, backend)
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
    prog = Program(parse(text, fname), target, permissive=permissive)
    prog.check()
    return prog


__all__ = ["ExecutionError", "Kernel", "Program", "check_module", "entry_functions", "load"]

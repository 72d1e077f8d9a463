"""Compile a verified ``func.func`` to a list of closures over a slot array, then run it.

Every SSA value gets a slot index at compile time; each op becomes one Python closure that
reads its operand slots and writes its result slots. Tile instructions are bound to their
registry entry once (static legality is checked here, at compile time, for the chosen
target); at run time a closure only runs the instruction's run-time rules and semantics.
Tiles from ``pto.alloc_tile`` are created once per compiled function and reused by every
execution of the op, as the hardware reuses a buffer.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from .. import dtypes as D
from ..enums import Layout
from ..errors import ExecutionError, PtoError, VerifyError
from ..ir import attrs as A
from ..ir import types as T
from ..ir.core import Op, Region, Value
from ..isa.registry import Instr
from ..lanes import BlockDivergence, Lanes
from ..memory import Machine
from ..targets import TargetLike, get_target
from ..tensor import GlobalTensor
from ..tile import Tile
from . import bridge, op_names
from .capacity import check_function
from .op_names import _HANDLERS, NO_EFFECT
from .op_names import handler as handler  # re-exported: the handler modules register here

Env = list[Any]
Step = Callable[[Env], None]


class TensorView:
    """Run-time value of ``pto.make_tensor_view``: flat GM array, shape, strides, layout."""

    __slots__ = ("array", "shape", "strides", "layout", "dtype", "name", "parts")

    def __init__(self, array: np.ndarray, shape: tuple[int, ...], strides: tuple[int, ...],
                 layout: Layout | None, dtype: D.DType, name: str | None = None) -> None:
        self.array = array
        self.name = name  # the pointer's SSA name (``%arg0``), for diagnostics
        self.shape = shape
        self.strides = strides
        self.layout = layout
        self.dtype = dtype
        #: sizes -> a partition view of them made before (partition_view moves it)
        self.parts: dict[tuple[int, ...], GlobalTensor] = {}


    def whole(self) -> GlobalTensor:
        """The whole view as a GM operand (a comm op takes a tensor_view as it is)."""
        layout = self.layout or infer_layout(self.shape, self.strides)
        return GlobalTensor(self.array, self.shape[-5:], self.strides[-5:], layout,
                            dtype=self.dtype, name=self.name)


def infer_layout(shape: Sequence[int], strides: Sequence[int]) -> Layout:
    """PTOAS layout inference from strides: ND when the innermost stride is 1 (row-major),
    DN when the first of the last two strides is 1 (column-major), ND otherwise."""
    if len(strides) >= 2 and strides[-1] != 1 and strides[-2] == 1:
        return Layout.DN
    return Layout.ND


class _Return(Exception):
    def __init__(self, values: tuple[Any, ...]) -> None:
        self.values = values


def _unmodelled_step(name: str, why: str, loc: Any) -> Step:
    """A NO_EFFECT op: nothing to compute, but an observer that checks what a run does (the
    sanitizer) hears that it passed an op it does not model (``not_modelled``)."""
    def step(env: Env) -> None:
        m = env[0].machine
        if m.observers:
            for o in m.observers:
                hook = getattr(o, "not_modelled", None)
                if hook is not None:
                    hook(m, name, loc, why)
    return step


#: terminators that their parent op's handler reads -> the ops they may end a region of
_TERMINATORS = {"scf.yield": "scf.for, scf.if or scf.while", "scf.condition": "scf.while",
                "pto.yield": "pto.fusion_region",
                "cf.br": "a function body of several blocks",
                "cf.cond_br": "a function body of several blocks"}
#: the branches between the blocks of a function body (read by CompiledFunc.cfg)
_BRANCHES = ("cf.br", "cf.cond_br")


class Compiler:
    """Compiles the functions of one module for one target."""

    def __init__(self, module: Any, target: TargetLike, permissive: bool = False) -> None:
        self.module = module
        self.target = get_target(target)
        self.permissive = permissive  # skip the type rules the CPU simulator does not check
        self.funcs: dict[str, CompiledFunc] = {}
        #: the pto-test-opt passes whose rules verification makes (diagnose's ``passes``)
        self.passes: frozenset[str] = frozenset()

    def reset_tiles(self) -> None:
        for f in self.funcs.values():
            for t in f.tiles:
                t.unbind()

    def function(self, name: str) -> CompiledFunc:
        cf = self.funcs.get(name)
        if cf is None:
            op = defined_function(self.module, name)
            if op is None:
                names = ", ".join(f.sym_name for f in self.module.functions())
                raise PtoError(f"no function '{name}' in the module (functions: {names})")
            cf = CompiledFunc(self, op)
            self.funcs[name] = cf
            cf.build()
        return cf


def defined_function(module: Any, name: str) -> Op | None:
    """Function ``name`` of the module: its definition where one of the (nested) modules has
    a body for it (a ``func.func private @f()`` declaration elsewhere links to it), else its
    declaration, else None."""
    decl = None
    for f in module.functions():
        if f.sym_name == name:
            if f.regions and f.regions[0].blocks:
                return f
            decl = decl or f
    return decl


class CompiledFunc:
    def __init__(self, compiler: Compiler, op: Op) -> None:
        self.c = compiler
        self.op = op
        self.name = op.sym_name or "?"
        self.slots: dict[int, int] = {}
        self.n = 1  # slot 0 holds the launch Context
        self.steps: list[Step] = []
        self.args: list[tuple[int, T.Type, str]] = []
        fty = op.attributes.get("function_type")
        self.result_types = fty.type.results if isinstance(fty, A.TypeAttr) else ()
        self.tiles: list[Tile] = []
        #: the op of each step (by id), to locate a block divergence raised inside a step
        self.op_of: dict[int, Op] = {}
        #: slots of arith.constant results -> their values (ops may read them when compiled)
        self.consts: dict[int, Any] = {}
        #: slots of the ``!pto.ptr`` arguments (their arrays are the launch's GM roots)
        self.ptr_args: list[int] = []

    # ---- slots -------------------------------------------------------------------------------
    def slot(self, v: Any) -> int:
        k = self.slots.get(id(v))
        if k is None:
            k = self.slots[id(v)] = self.n
            self.n += 1
        return k

    def build(self) -> None:
        body = self.op.regions[0].block if self.op.regions and self.op.regions[0].blocks \
            else None
        if body is None:
            return
        for a in body.args:
            self.args.append((self.slot(a), a.type, a.name))
            _check_arg_type(self.op, a.name, a.type)
        self.ptr_args = [k for k, t, _ in self.args if isinstance(t, T.PtrType)]
        region = self.op.regions[0]
        self.steps = self.block(region) if len(region.blocks) == 1 else [self.cfg(region)]
        check_function(self.op, self.c.target)  # the tiles live at once fit their buffers

    def block(self, region: Region, ends: str | None = None) -> list[Step]:
        """The steps of ``region``'s ops; ``ends``: the terminator its parent reads (the
        ``scf.yield`` of a loop body), which compiles to nothing. A terminator anywhere
        else is an error: it would otherwise be dropped without a word."""
        if len(region.blocks) > 1:
            second = region.blocks[1]
            where = second.ops[0].loc if second.ops else None
            raise VerifyError(f"a region of {len(region.blocks)} blocks (^{second.label}): "
                              "only a function body may branch between blocks", loc=where)
        steps: list[Step] = []
        ops = region.block.ops
        for op in ops:
            if op.name in _TERMINATORS and (op.name != ends or op is not ops[-1]):
                where = ("must be the last op of its region" if op.name == ends
                         else f"is not in a region of {_TERMINATORS[op.name]}")
                raise VerifyError(f"'{op.name}' {where}", op=op.name, loc=op.loc)
            st = self.compile_op(op)
            if st is not None:
                steps.append(st)
                self.op_of[id(st)] = op
        return steps

    def cfg(self, region: Region) -> Step:
        """A function body of several blocks joined by ``cf.br`` / ``cf.cond_br``: one step
        that runs a block's steps, then its terminator, which passes the successor's block
        arguments and names the block to run next (``return`` leaves the function)."""
        index = {b.label: k for k, b in enumerate(region.blocks)}
        compiled: list[tuple[list[Step], Callable[[Env], int] | None]] = []
        for b in region.blocks:
            ops = b.ops
            last = ops[-1] if ops else None
            if last is None or last.name not in _BRANCHES and last.name not in (
                    "func.return", "return"):
                where = last.loc if last is not None else None
                if last is not None and last.name.startswith("cf."):
                    raise VerifyError(f"operation '{last.name}' cannot be executed by ptoisa "
                                      "yet (of the branches, cf.br and cf.cond_br are)",
                                      op=last.name, loc=where)
                raise VerifyError(f"block ^{b.label} does not end with a terminator "
                                  "(cf.br, cf.cond_br or return)", loc=where)
            body = Region((replace(b, ops=ops[:-1] if last.name in _BRANCHES else ops),))
            steps = self.block(body)
            term = self.branch(last, region, index) if last.name in _BRANCHES else None
            compiled.append((steps, term))
        blocks = tuple(compiled)

        def step(env: Env) -> None:
            k = 0
            while True:
                steps, term = blocks[k]
                for s in steps:
                    s(env)
                if term is None:
                    return  # (a return step raised _Return)
                k = term(env)
        return step

    def branch(self, op: Op, region: Region, index: dict[str | None, int]
               ) -> Callable[[Env], int]:
        """The terminator ``cf.br ^b(%v...)`` / ``cf.cond_br %c, ^t(...), ^f(...)``: copies the
        values passed into the target's block arguments, returns the target's index."""
        targets: list[tuple[int, list[int], list[int]]] = []
        cond: int | None = None
        for p in op.syntax:
            if p.kind == "s":
                k = index[str(p.value)]  # (the SSA check rejected unknown labels)
                targets.append((k, [], [self.slot(a) for a in region.blocks[k].args]))
            elif p.kind == "v":
                v = op.operands[int(p.value)]  # type: ignore[call-overload]
                if targets:
                    targets[-1][1].append(self.slot(v))
                elif op.name == "cf.cond_br" and cond is None:
                    cond = self.slot(v)
        want = 2 if op.name == "cf.cond_br" else 1
        if len(targets) != want or (op.name == "cf.cond_br" and cond is None):
            raise VerifyError(f"expects {'a condition and ' if want == 2 else ''}{want} "
                              f"successor block(s), got {len(targets)}", op=op.name,
                              loc=op.loc)
        for k, passed, args in targets:
            if len(passed) != len(args):
                raise VerifyError(f"passes {len(passed)} value(s) to ^{region.blocks[k].label}, "
                                  f"which has {len(args)} argument(s)", op=op.name, loc=op.loc)

        def go(env: Env, target: tuple[int, list[int], list[int]]) -> int:
            k, passed, args = target
            vals = [env[x] for x in passed]
            for d, v in zip(args, vals, strict=True):
                env[d] = v
            return k

        if cond is None:
            only = targets[0]
            return lambda env: go(env, only)
        c = cond
        yes, no = targets

        def cond_br(env: Env) -> int:
            cv = env[c]
            if isinstance(cv, np.ndarray) and cv.ndim:  # per-block conditions (lockstep)
                cv = _same_for_all_blocks(cv.view(Lanes), op, "the branch condition")
            return go(env, yes if cv else no)
        return cond_br

    # ---- ops ---------------------------------------------------------------------------------
    def compile_op(self, op: Op) -> Step | None:
        name = op.name
        try:
            h = _HANDLERS.get(name)
            if h is not None:
                return h(self, op)
            ins = bridge.instr_of(name)
            if ins is not None and ins.dialect != "tile":
                return _BINDERS[ins.dialect](self, op, ins)
            b = bridge.check_op(op, self.c.target, self.c.permissive)
            if b is not None:
                return self.instr_step(op, b)
            if name in NO_EFFECT:
                return _unmodelled_step(name, NO_EFFECT[name], op.loc)
        except VerifyError:
            raise
        except PtoError as e:
            raise VerifyError(e.message, op=e.op or name, loc=op.loc) from None
        except (IndexError, KeyError, ValueError):
            # a handler met an op without the operands/results/regions its spelling has
            # (text the parser accepts generically): a diagnostic, not a traceback
            raise VerifyError(
                f"malformed op: {len(op.operands)} operand(s), {len(op.results)} result(s), "
                f"{len(op.regions)} region(s) do not fit '{name}'", op=name, loc=op.loc
            ) from None
        return self.unsupported(op)

    def unsupported(self, op: Op) -> Step:
        err = op_names.unknown_op_error(op)
        if err is not None:  # a misspelt op is an error at check, not when it runs
            raise err
        loc = op.loc

        def step(env: Env) -> None:
            raise ExecutionError(f"operation '{op.name}' cannot be executed by ptoisa yet",
                                 loc=loc)
        return step

    def instr_step(self, op: Op, b: bridge.Binding) -> Step:
        """One tile instruction. SSA results become tiles created here, once."""
        ins: Instr = b.ins
        slots: list[Any] = []  # slot | None | Const | tuple of slots (packed operand)
        results: list[tuple[int, Tile]] = []
        for v, from_res in zip(b.values, b.from_result, strict=True):
            if isinstance(v, bridge.Scratch):  # PTOAS allocates it: a tile of its own, once
                spec = bridge.tile_spec_of(v.type, self.c.target)
                if spec is None:
                    raise VerifyError(f"cannot allocate a scratch tile of type {v.type}",
                                      op=op.name, loc=op.loc)
                tile = Tile.of(spec, name="tmp")
                self.tiles.append(tile)
                slots.append(bridge.Const(tile, None))
                continue
            if v is None or isinstance(v, bridge.Const):
                slots.append(v)
                continue
            if isinstance(v, tuple):
                slots.append(tuple(self.slot(x) for x in v))
                continue
            k = self.slot(v)
            slots.append(k)
            if from_res:
                results.append((k, self.result_tile(op, v)))
        params = b.params
        run = ins.run
        loc = op.loc
        opname = ins.mnemonic
        fixed = tuple(slots)
        res = tuple(results)
        ret = None if b.result is None else self.slot(b.result)
        simple = all(isinstance(s, int) or s is None for s in fixed)
        # a GM memref operand (a function argument) arrives as its array: view it whole
        as_gm = tuple((i, gs) for i, v in enumerate(b.values)
                      if v is not None and not isinstance(v, (bridge.Const, tuple))
                      and isinstance(v.type, T.MemRefType) and None not in v.type.shape
                      and (gs := bridge.gm_spec_of(v.type)) is not None)
        # ... and so does one packed in a tuple operand (the group(...) of a collective)
        as_gm_in = tuple((i, j, gs) for i, v in enumerate(b.values) if isinstance(v, tuple)
                         for j, x in enumerate(v)
                         if isinstance(x.type, T.MemRefType) and None not in x.type.shape
                         and (gs := bridge.gm_spec_of(x.type)) is not None)
        # a tensor_view operand (or one in a tuple) is its whole view
        as_view = tuple(i for i, v in enumerate(b.values)
                        if any(isinstance(x.type, T.TensorViewType) for x in (
                            v if isinstance(v, tuple) else (v,) if isinstance(v, Value) else ())))
        # the operand values in one C call when every operand is a plain slot
        fetch = operator.itemgetter(*fixed) if simple and len(fixed) > 1 \
            and None not in fixed else None

        def get(env: Env, s: Any) -> Any:
            if s is None:
                return None
            if isinstance(s, int):
                return env[s]
            if isinstance(s, bridge.Const):
                return s.value
            return tuple(env[x] for x in s)

        def located(e: PtoError) -> PtoError:
            return e.at_op(opname, loc)

        def step(env: Env) -> None:
            for k, t in res:
                env[k] = t
            vals = (list(fetch(env)) if fetch is not None
                    else [None if s is None else env[s] for s in fixed] if simple
                    else [get(env, s) for s in fixed])
            for i, gs in as_gm:
                if isinstance(vals[i], np.ndarray):
                    vals[i] = GlobalTensor(vals[i], gs.shape, gs.stride, dtype=gs.dtype.np)
            for i in as_view:
                if isinstance(vals[i], TensorView):
                    vals[i] = vals[i].whole()
                elif isinstance(vals[i], tuple):
                    vals[i] = tuple(x.whole() if isinstance(x, TensorView) else x
                                    for x in vals[i])
            for i, j, gs in as_gm_in:
                if isinstance(vals[i][j], np.ndarray):
                    vals[i] = (*vals[i][:j], GlobalTensor(vals[i][j], gs.shape, gs.stride,
                                                          dtype=gs.dtype.np), *vals[i][j + 1:])
            try:
                out = run(env[0].machine, vals, params, True, loc)
            except PtoError as e:
                raise located(e) from None
            if ret is not None:  # the op's SSA result is what the instruction returns
                env[ret] = out

        if res or as_gm or as_view or as_gm_in or ret is not None or fetch is None:
            return step

        def plain_operands(env: Env) -> None:
            # (the common case: every operand a slot, no result tile, no GM argument; the
            # operands as the tuple itemgetter makes: Instr.run only reads them)
            try:
                run(env[0].machine, fetch(env), params, True, loc)
            except PtoError as e:
                raise located(e) from None
        return plain_operands

    def result_tile(self, op: Op, v: Any, what: str = "result type", kind: str = "a tile"
               ) -> Tile:
        """The tile an op's SSA result is: made once, at compile time, from its tile_buf type
        (reused by every execution of the op, as the hardware reuses a buffer, and forgotten
        by :meth:`Compiler.reset_tiles`); VerifyError at the op when the type is not a tile."""
        spec = bridge.tile_spec_of(v.type, self.c.target)
        if spec is None:
            raise VerifyError(f"{what} {v.type} is not {kind}", op=op.name, loc=op.loc)
        tile = Tile.of(spec, name=v.name)
        self.tiles.append(tile)
        return tile

    def value_of(self, v: Any) -> Callable[[Env], Any]:
        k = self.slot(v)
        return lambda env: env[k]


def _check_arg_type(func: Op, name: str, t: T.Type) -> None:
    """VerifyError at the function when an argument's element type is one ptoisa does not
    know (``!pto.ptr<f99>``): binding it at launch would fail, so ``check`` says so first."""
    elem = t.dtype if isinstance(t, (T.PtrType, T.MemRefType)) else t
    if not isinstance(elem, T.FloatType):
        return  # (integer widths and the other types are checked where they are used)
    try:
        bridge.elem_dtype(elem)
    except PtoError as e:
        raise VerifyError(f"argument %{name} ({t}): {e.message}", op="func.func",
                          loc=func.loc) from None


# ---- handlers ----------------------------------------------------------------------------------

#: dialect of a registry entry -> how its ops bind (``vpto``: interp/micro.py)
_BINDERS: dict[str, Callable[[CompiledFunc, Op, Instr], Step]] = {}


def dialect_binder(dialect: str, fn: Callable[[CompiledFunc, Op, Instr], Step]) -> None:
    _BINDERS[dialect] = fn
def _literal(op: Op) -> Any:
    for p in op.syntax:
        if p.kind == "a":
            return p.value
    return op.attributes.get("value")


def _bracket_args(op: Op) -> list[Any]:
    """The items of ``pto.set_flag[<PIPE_MTE2>, <PIPE_V>, <EVENT_ID0>]``-style spellings (and
    ``pto.barrier <PIPE_ALL>``): attribute bodies as strings, SSA operands as slot markers."""
    out: list[Any] = []
    for p in op.syntax:
        if p.kind == "a":
            v = p.value
            out.append(v.body if isinstance(v, A.DialectAttr) else str(bridge.attr_value(v)))
        elif p.kind == "v":
            out.append(op.operands[int(p.value)])  # type: ignore[call-overload]
    return out


def _index(v: Any) -> Any:
    """An index operand: an int, or per-block values (Lanes) in a lockstep run."""
    return v if isinstance(v, np.ndarray) else int(v)


def kernel_kind(fn: Op | None) -> str | None:
    """``cube`` / ``vector`` for a function with ``pto.kernel_kind``, else None."""
    if fn is None:
        return None
    a = fn.attributes.get("pto.kernel_kind")
    if a is None:
        return None
    text = str(bridge.attr_value(a))
    return "cube" if "cube" in text else "vector" if "vector" in text else None



#: the loop iterations one run may take by default (about a day of interpretation)
MAX_STEPS = 10 ** 11


class Context:
    """Slot 0 of every frame: the machine and the launch coordinates (``core``: the core of a
    mixed launch, which decides which ``pto.kernel_kind`` functions a call runs)."""

    __slots__ = ("machine", "block_idx", "block_num", "subblock_idx", "subblock_num", "core",
                 "gm_roots", "steps_left", "max_steps", "loops")

    def __init__(self, machine: Machine, block_idx: int, block_num: int,
                 max_steps: int = 0) -> None:
        self.machine = machine
        self.block_idx = block_idx
        self.block_num = block_num
        self.subblock_idx = 0
        self.subblock_num = 1
        self.core: Any = None
        #: loop iterations this run may still take (scf.for counts a loop's trips when it
        #: starts, scf.while its passes): a loop to 1e18 is an error, not a hang
        self.max_steps = max_steps or MAX_STEPS
        self.steps_left = self.max_steps
        #: the arrays of the launch's GM pointer arguments, in binding order: what a pointer
        #: value (a view into one of them) is resolved against (``interp/scalar_ops.py``)
        self.gm_roots: list[np.ndarray] = []
        #: a plan's recorder while it records (ptoisa/plans.py): told where each ``scf.for``
        #: iteration starts (``loops.iterate(op, seq)``), else None
        self.loops: Any = None

    def spend(self, n: int, op: Op) -> None:
        """Take ``n`` loop iterations of the run's budget, or stop the run saying so."""
        self.steps_left -= n
        if self.steps_left < 0:
            raise ExecutionError(
                f"{op.name}: the run would take more than {self.max_steps} loop iterations "
                f"(this loop alone {n}); raise the limit with --max-steps N (Python: "
                "prog.max_steps = N)", loc=op.loc)

    def note_gm(self, arr: np.ndarray) -> None:
        """Remember ``arr`` (a pointer argument) unless it lies inside one already known."""
        a = arr.__array_interface__["data"][0]
        for r in self.gm_roots:
            d = a - r.__array_interface__["data"][0]
            if 0 <= d and d + arr.nbytes <= r.nbytes:
                return
        self.gm_roots.append(arr)


def _invoke(self: CompiledFunc, ctx: Context, args: list[Any]) -> tuple[Any, ...]:
    env: Env = [None] * max(self.n, 1)
    env[0] = ctx
    for (k, _t, _n), v in zip(self.args, args, strict=True):
        env[k] = v
    for k in self.ptr_args:
        v = env[k]
        if isinstance(v, np.ndarray):
            ctx.note_gm(v)
    try:
        for s in self.steps:
            s(env)
    except _Return as r:
        return r.values
    except BlockDivergence as e:
        raise self.locate(e, s) from None
    return ()


def _locate(self: CompiledFunc, e: BlockDivergence, step: Step) -> BlockDivergence:
    """A divergence raised inside ``step`` without a location: located at its op."""
    op = self.op_of.get(id(step))
    if e.loc is not None or op is None or op.loc is None:
        return e
    located = e.with_loc(op.loc)
    located.op = located.op or op.name
    return located  # type: ignore[return-value]


CompiledFunc.locate = _locate  # type: ignore[attr-defined]


CompiledFunc.invoke = _invoke  # type: ignore[attr-defined]


def _same_for_all_blocks(v: Lanes, op: Op, what: str) -> int:
    """The one value of ``v`` when every block of a lockstep run has it; else a located
    BlockDivergence naming the branch (a lockstep run takes one path for all blocks)."""
    flat = np.asarray(v).reshape(-1)
    if flat.size and (flat == flat[0]).all():
        return int(flat[0])
    vals = ", ".join(str(x) for x in flat[:4].tolist()) + (", ..." if flat.size > 4 else "")
    raise BlockDivergence(
        f"{what} differs between blocks ([{vals}]): blocks that branch differently cannot run "
        "in lockstep (lockstep='auto' falls back to one by one only before the first GM "
        "store); run them one by one (CLI: --lockstep off; Python: lockstep=False)",
        op=op.name, loc=op.loc)

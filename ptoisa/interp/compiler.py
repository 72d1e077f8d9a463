"""Compile a verified ``func.func`` to a list of closures over a slot array, then run it.

Every SSA value gets a slot index at compile time; each op becomes one Python closure that
reads its operand slots and writes its result slots. Tile instructions are bound to their
registry entry once (static legality is checked here, at compile time, for the chosen
target); at run time a closure only runs the instruction's run-time rules and semantics.
Tiles from ``pto.alloc_tile`` are created once per compiled function and reused by every
execution of the op, as the hardware reuses a buffer.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .. import dtypes as D
from ..enums import Layout
from ..errors import ExecutionError, PtoError, VerifyError
from ..ir import attrs as A
from ..ir import types as T
from ..ir.core import Op, Region
from ..isa.registry import Instr
from ..lanes import BlockDivergence, Lanes
from ..memory import Machine
from ..tensor import GlobalTensor
from ..tile import Tile
from . import arith, bridge, op_names
from .capacity import check_function

Env = list[Any]
Step = Callable[[Env], None]


class TensorView:
    """Run-time value of ``pto.make_tensor_view``: flat GM array, shape, strides, layout."""

    __slots__ = ("array", "shape", "strides", "layout", "dtype", "name")

    def __init__(self, array: np.ndarray, shape: list[int], strides: list[int],
                 layout: Layout | None, dtype: D.DType, name: str | None = None) -> None:
        self.array = array
        self.name = name  # the pointer's SSA name (``%arg0``), for diagnostics
        self.shape = shape
        self.strides = strides
        self.layout = layout
        self.dtype = dtype


class _Return(Exception):
    def __init__(self, values: tuple[Any, ...]) -> None:
        self.values = values


def infer_layout(shape: list[int], strides: list[int]) -> Layout:
    """PTOAS layout inference from strides: ND when the innermost stride is 1 (row-major),
    DN when the first of the last two strides is 1 (column-major), ND otherwise."""
    if len(strides) >= 2 and strides[-1] != 1 and strides[-2] == 1:
        return Layout.DN
    return Layout.ND


def _wrap_int(v: int, t: T.Type) -> int:
    return arith.wrap(v, t)


def _float(v: Any, t: T.Type) -> Any:
    if isinstance(t, T.FloatType):
        return arith.to_float(v, bridge.elem_dtype(t))
    return v


_NOOP_PREFIXES = (
    "pto.sync.", "pto.get_buf", "pto.rls_buf", "pto.tsync", "pto.set_ffts",
    "pto.auto_sync_tail_hint", "pto.section.", "memref.dealloc", "pto.tfree",
)


class Compiler:
    """Compiles the functions of one module for one target."""

    def __init__(self, module: Any, target: str, permissive: bool = False) -> None:
        self.module = module
        self.target = target
        self.permissive = permissive  # skip the type rules the CPU simulator does not check
        self.funcs: dict[str, CompiledFunc] = {}

    def reset_tiles(self) -> None:
        for f in self.funcs.values():
            for t in f.tiles:
                t.unbind()

    def function(self, name: str) -> CompiledFunc:
        cf = self.funcs.get(name)
        if cf is None:
            op = self.module.lookup(name)
            if op is None:
                names = ", ".join(f.sym_name for f in self.module.functions())
                raise PtoError(f"no function '{name}' in the module (functions: {names})")
            cf = CompiledFunc(self, op)
            self.funcs[name] = cf
            cf.build()
        return cf


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
        self.steps = self.block(self.op.regions[0])
        check_function(self.op, self.c.target)  # the tiles live at once fit their buffers

    def block(self, region: Region) -> list[Step]:
        steps: list[Step] = []
        for op in region.block.ops:
            st = self.compile_op(op)
            if st is not None:
                steps.append(st)
                self.op_of[id(st)] = op
        return steps

    # ---- ops ---------------------------------------------------------------------------------
    def compile_op(self, op: Op) -> Step | None:
        name = op.name
        try:
            h = _HANDLERS.get(name)
            if h is not None:
                return h(self, op)
            b = bridge.check_op(op, self.c.target, self.c.permissive)
            if b is not None:
                return self.instr_step(op, b)
            if name.startswith(_NOOP_PREFIXES):
                return None
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
        instr: Instr = b.instr
        slots: list[Any] = []  # slot | None | Const | tuple of slots (packed operand)
        results: list[tuple[int, Tile]] = []
        for v, from_res in zip(b.values, b.from_result, strict=True):
            if v is None or isinstance(v, bridge.Const):
                slots.append(v)
                continue
            if isinstance(v, tuple):
                slots.append(tuple(self.slot(x) for x in v))
                continue
            k = self.slot(v)
            slots.append(k)
            if from_res:
                spec = bridge.tile_spec_of(v.type, self.c.target)
                if spec is None:
                    raise VerifyError(f"result type {v.type} is not a tile", op=op.name,
                                      loc=op.loc)
                tile = Tile.of(spec, name=v.name)
                self.tiles.append(tile)
                results.append((k, tile))
        params = b.params
        run = instr.run
        loc = op.loc
        opname = instr.mnemonic
        fixed = tuple(slots)
        res = tuple(results)
        simple = all(isinstance(s, int) or s is None for s in fixed)

        def get(env: Env, s: Any) -> Any:
            if s is None:
                return None
            if isinstance(s, int):
                return env[s]
            if isinstance(s, bridge.Const):
                return s.value
            return tuple(env[x] for x in s)

        def step(env: Env) -> None:
            for k, t in res:
                env[k] = t
            vals = ([None if s is None else env[s] for s in fixed] if simple
                    else [get(env, s) for s in fixed])
            try:
                run(env[0].machine, vals, params, checked=True, loc=loc)
            except PtoError as e:
                if e.op is None:
                    e.op = opname
                raise e.with_loc(loc) from None
        return step

    def value_of(self, v: Any) -> Callable[[Env], Any]:
        k = self.slot(v)
        return lambda env: env[k]


# ---- handlers ----------------------------------------------------------------------------------

_HANDLERS: dict[str, Callable[[CompiledFunc, Op], Step | None]] = {}


def handler(*names: str) -> Callable[[Callable[[CompiledFunc, Op], Step | None]], Any]:
    def deco(fn: Callable[[CompiledFunc, Op], Step | None]) -> Any:
        for n in names:
            _HANDLERS[n] = fn
        return fn
    return deco


def _literal(op: Op) -> Any:
    for p in op.syntax:
        if p.kind == "a":
            return p.value
    return op.attributes.get("value")


def _dense(text: str, t: T.Type, op: Op) -> np.ndarray:
    """``dense<[1, 2]>`` / ``dense<0.5>`` of a vector/tensor type as a numpy array."""
    import re

    body = text[len("dense<"):-1].strip()
    nums = [float(x) if any(c in x for c in ".eE") and not x.startswith("0x") else int(x, 0)
            for x in re.findall(r"[-+]?(?:0x[0-9a-fA-F]+|\d+\.?\d*(?:[eE][-+]?\d+)?)", body)]
    m = re.match(r"(?:vector|tensor)<([\dx]+)x(\w+)>", str(t))
    if m is None:
        raise VerifyError(f"dense constant of type {t} is not supported", op=op.name, loc=op.loc)
    shape = tuple(int(d) for d in m.group(1).split("x"))
    from ..dtypes import dtype as _dt

    dt = _dt(m.group(2)).np
    # integer literals are bit patterns of the element width (dense<65535> : vector<4xi16>)
    try:
        arr = (np.asarray(nums, dtype=np.int64).astype(dt) if np.issubdtype(dt, np.integer)
               else np.asarray(nums, dtype=dt))
    except OverflowError:
        raise VerifyError(f"dense literal out of range for {m.group(2)}", op=op.name,
                          loc=op.loc) from None
    return np.broadcast_to(arr, shape).copy() if arr.size == 1 else arr.reshape(shape)


@handler("arith.constant")
def _constant(cf: CompiledFunc, op: Op) -> Step:
    a = _literal(op)
    rt = op.results[0].type
    if isinstance(a, A.IntegerAttr):
        val: Any = _wrap_int(a.value, rt)
    elif isinstance(a, A.FloatAttr):
        if isinstance(rt, (T.IntegerType, T.IndexType)):
            raise VerifyError(f"a float literal ({a.value}) for an integer type ({rt})",
                              op=op.name, loc=op.loc)
        val = _float(a.value, rt)
    elif isinstance(a, A.BoolAttr):
        val = int(a.value)
    elif isinstance(a, A.OpaqueAttr) and a.text.startswith("dense<"):
        val = _dense(a.text, rt, op)
    else:
        raise VerifyError(f"unsupported constant {a}", op=op.name, loc=op.loc)
    k = cf.slot(op.results[0])

    def step(env: Env) -> None:
        env[k] = val
    return step


def _binary(cf: CompiledFunc, op: Op) -> Step:
    ta, tb = (getattr(v, "type", None) for v in op.operands[:2])
    known = not any(t is None or isinstance(t, T.UnknownType) for t in (ta, tb))
    if known and ta != tb:  # MLIR: one type for both operands
        raise VerifyError(f"operands have different types ({ta} and {tb})", op=op.name,
                          loc=op.loc)
    a, b = (cf.slot(v) for v in op.operands[:2])
    k = cf.slot(op.results[0])
    rt = op.results[0].type
    loc = op.loc
    w = arith.width(rt)
    if op.name in arith.INT_BINARY:
        if w is None:
            raise VerifyError(f"result type {rt} is not an integer type", op=op.name, loc=loc)
        fn = arith.INT_BINARY[op.name]
        fast = arith.NUMPY_EXACT.get(op.name)
        wr = arith.wrapper(rt)

        def run(x: Any, y: Any) -> Any:
            if not isinstance(x, np.ndarray) and not isinstance(y, np.ndarray):
                if isinstance(x, (float, np.floating)) or isinstance(y, (float, np.floating)):
                    raise TypeError("a float operand of an integer op")
                return wr(fn(int(x), int(y), w))
            if fast is not None:  # exact modulo 2^64, then wrapped to the width
                return _wrap_lanes(fast(np.asarray(x, np.int64), np.asarray(y, np.int64)), rt)
            xs, ys = np.broadcast_arrays(np.asarray(x, np.int64), np.asarray(y, np.int64))
            out = [arith.signed(fn(int(p), int(q), w), 64) for p, q in zip(xs.flat, ys.flat,
                                                                          strict=True)]
            return _wrap_lanes(np.array(out, np.int64).reshape(xs.shape), rt)
    else:
        ffn = arith.FLOAT_BINARY[op.name]
        dt = bridge.elem_dtype(rt) if isinstance(rt, T.FloatType) else None

        tf = arith.to_float

        def run(x: Any, y: Any) -> Any:
            if dt is None:
                return ffn(x, y)
            if not isinstance(x, np.ndarray) and not isinstance(y, np.ndarray):
                return tf(ffn(tf(x, dt), tf(y, dt)), dt)
            xs, ys = np.broadcast_arrays(np.asarray(x, dt.np), np.asarray(y, dt.np))
            return np.array([arith.to_float(ffn(p, q), dt) for p, q in zip(
                xs.flat, ys.flat, strict=True)], dt.np).reshape(xs.shape)

    def step(env: Env) -> None:
        try:
            env[k] = run(env[a], env[b])
        except ExecutionError as e:
            raise e.with_loc(loc) from None
        except TypeError:  # e.g. an untyped float constant where an integer belongs
            raise ExecutionError(f"{op.name}: cannot combine {_short_val(env[a])} and "
                                 f"{_short_val(env[b])}", loc=loc) from None
        except OverflowError:  # per-block values (int64) meet an operand past 64 bits
            raise ExecutionError(f"{op.name}: operands {_short_val(env[a])} and "
                                 f"{_short_val(env[b])} leave the 64-bit range",
                                 loc=loc) from None
    return step


def _short_val(v: Any) -> str:
    if isinstance(v, np.ndarray):
        flat = np.asarray(v).reshape(-1)
        return "[" + ", ".join(map(str, flat[:4].tolist())) + (", ...]" if flat.size > 4 else "]")
    return str(v)


def _wrap_lanes(r: np.ndarray, t: T.Type) -> Lanes:
    v = np.asarray(r).astype(np.int64)
    if isinstance(t, T.IntegerType) and 1 < t.width < 64:
        w = t.width
        v = v & ((1 << w) - 1)
        if t.signedness != "u":
            v = np.where(v >= 1 << (w - 1), v - (1 << w), v)
    return v.view(Lanes)


for _n in (*arith.INT_BINARY, *arith.FLOAT_BINARY):
    _HANDLERS[_n] = _binary


@handler("arith.cmpi", "arith.cmpf")
def _cmp(cf: CompiledFunc, op: Op) -> Step:
    pred = None
    for p in op.syntax:
        if p.kind in ("k", "a"):
            pred = str(p.value.value if isinstance(p.value, A.StringAttr) else p.value)
            break
    pa = op.attributes.get("predicate")
    if pred is None and pa is not None:
        pred = str(bridge.attr_value(pa))
    pred = (pred or "").strip('"')
    w = arith.width(op.operands[0].type) if op.operands else None
    fn = (arith.cmpi(pred, w) if w is not None and op.name == "arith.cmpi" else
          arith.cmpf(pred) if op.name == "arith.cmpf" else None)
    if fn is None:
        raise VerifyError(f"unknown comparison predicate {pred!r}", op=op.name, loc=op.loc)
    a, b = (cf.slot(v) for v in op.operands[:2])
    k = cf.slot(op.results[0])

    def step(env: Env) -> None:
        r = fn(env[a], env[b])
        env[k] = np.asarray(r).astype(np.int64).view(Lanes) if isinstance(r, np.ndarray) \
            and r.ndim else int(bool(r))
    return step


@handler("arith.select")
def _select(cf: CompiledFunc, op: Op) -> Step:
    c, a, b = (cf.slot(v) for v in op.operands[:3])
    k = cf.slot(op.results[0])

    def step(env: Env) -> None:
        cond = env[c]
        if isinstance(cond, np.ndarray):
            r = np.where(np.asarray(cond) != 0, env[a], env[b])
            env[k] = r.view(Lanes) if r.dtype.kind in "iu" else r
        else:
            env[k] = env[a] if cond else env[b]
    return step


@handler("arith.index_cast", "arith.index_castui", "arith.extsi", "arith.extui",
         "arith.trunci", "arith.sitofp", "arith.uitofp", "arith.fptosi", "arith.fptoui",
         "arith.extf", "arith.truncf", "arith.bitcast")
def _cast(cf: CompiledFunc, op: Op) -> Step:
    a = cf.slot(op.operands[0])
    k = cf.slot(op.results[0])
    st = op.operands[0].type
    rt = op.results[0].type
    name = op.name
    loc = op.loc
    to_int = isinstance(rt, (T.IntegerType, T.IndexType))
    conv = arith.caster(name, st, rt)
    ws = arith.width(st)
    # lanes fast path: integer -> integer casts of int64 lanes holding signed values
    lanes_mask: int | None = None
    if to_int and ws is not None and ws > 1 and not (isinstance(st, T.IntegerType)
                                                     and st.signedness == "u"):
        if name in ("arith.index_cast", "arith.extsi", "arith.trunci"):
            lanes_mask = -1
        elif name in ("arith.index_castui", "arith.extui") and ws < 64:
            lanes_mask = (1 << ws) - 1

    def step(env: Env) -> None:
        v = env[a]
        try:
            if isinstance(v, np.ndarray) and v.ndim and lanes_mask is not None:
                env[k] = _wrap_lanes(np.asarray(v, np.int64) & np.int64(lanes_mask), rt)
            elif isinstance(v, np.ndarray) and v.ndim:  # per-block values of a lockstep run
                out = [conv(x) for x in v.flat]
                env[k] = (_wrap_lanes(np.array([arith.signed(int(x), 64) for x in out],
                                               np.int64).reshape(v.shape), rt) if to_int
                          else np.array(out, bridge.elem_dtype(rt).np).reshape(v.shape))
            else:
                env[k] = conv(v)
        except ExecutionError as e:
            raise e.with_loc(loc) from None
    return step


@handler("arith.negf")
def _negf(cf: CompiledFunc, op: Op) -> Step:
    a = cf.slot(op.operands[0])
    k = cf.slot(op.results[0])

    def step(env: Env) -> None:
        env[k] = -env[a]
    return step


@handler("scf.for")
def _for(cf: CompiledFunc, op: Op) -> Step:
    lb, ub, stp = (cf.slot(v) for v in op.operands[:3])
    inits = [cf.slot(v) for v in op.operands[3:]]
    body_blk = op.regions[0].block
    iv = cf.slot(body_blk.args[0])
    iters = [cf.slot(a) for a in body_blk.args[1:]]
    results = [cf.slot(r) for r in op.results]
    body = cf.block(op.regions[0])
    yield_slots = _yield_slots(cf, op.regions[0])
    _counts_agree(op, ("initial values", len(inits)), ("loop-carried block arguments",
                                                       len(iters)))
    if yield_slots:
        _counts_agree(op, ("yielded values", len(yield_slots)),
                      ("loop-carried block arguments", len(iters)))

    def step(env: Env) -> None:
        for d, s in zip(iters, inits, strict=True):
            env[d] = env[s]
        i, end, st = env[lb], env[ub], env[stp]
        if isinstance(i, Lanes) or isinstance(end, Lanes) or isinstance(st, Lanes):
            i, end, st = (_same_for_all_blocks(x, op, "a loop bound") for x in (i, end, st))
        if st <= 0:
            raise ExecutionError(f"scf.for step must be positive, got {st}", loc=op.loc)
        while i < end:
            env[iv] = i
            try:
                for s in body:
                    s(env)
            except BlockDivergence as e:
                raise cf.locate(e, s) from None
            if yield_slots:
                vals = [env[y] for y in yield_slots]
                for d, v in zip(iters, vals, strict=True):
                    env[d] = v
            i += st
        for r, d in zip(results, iters, strict=True):
            env[r] = env[d]
    return step


def _counts_agree(op: Op, a: tuple[str, int], b: tuple[str, int]) -> None:
    """Loop values pass between regions one for one (the parser does not check it)."""
    if a[1] != b[1]:
        raise VerifyError(f"{a[1]} {a[0]} but {b[1]} {b[0]}", op=op.name, loc=op.loc)


def _yield_slots(cf: CompiledFunc, region: Region) -> list[int]:
    ops = region.block.ops
    if ops and ops[-1].name == "scf.yield":
        return [cf.slot(v) for v in ops[-1].operands]
    return []


@handler("scf.yield", "scf.condition")
def _yield(cf: CompiledFunc, op: Op) -> None:
    return None


@handler("scf.if")
def _if(cf: CompiledFunc, op: Op) -> Step:
    c = cf.slot(op.operands[0])
    then = cf.block(op.regions[0])
    then_y = _yield_slots(cf, op.regions[0])
    has_else = len(op.regions) > 1 and op.regions[1].blocks
    other = cf.block(op.regions[1]) if has_else else []
    other_y = _yield_slots(cf, op.regions[1]) if has_else else []
    results = [cf.slot(r) for r in op.results]

    def step(env: Env) -> None:
        cv = env[c]
        if isinstance(cv, Lanes):
            cv = _same_for_all_blocks(cv, op, "the condition")
        if cv:
            for s in then:
                s(env)
            ys = then_y
        else:
            for s in other:
                s(env)
            ys = other_y
        for r, y in zip(results, ys, strict=False):
            env[r] = env[y]
    return step


@handler("scf.while")
def _while(cf: CompiledFunc, op: Op) -> Step:
    inits = [cf.slot(v) for v in op.operands]
    before, after = op.regions[0], op.regions[1]
    b_args = [cf.slot(a) for a in before.block.args]
    a_args = [cf.slot(a) for a in after.block.args]
    b_steps = cf.block(before)
    a_steps = cf.block(after)
    cond_op = before.block.ops[-1]
    cond = cf.slot(cond_op.operands[0])
    passed = [cf.slot(v) for v in cond_op.operands[1:]]
    a_yield = _yield_slots(cf, after)
    results = [cf.slot(r) for r in op.results]
    _counts_agree(op, ("initial values", len(inits)), ("'before' block arguments", len(b_args)))
    _counts_agree(op, ("values scf.condition passes", len(passed)),
                  ("'after' block arguments", len(a_args)))
    if a_yield:
        _counts_agree(op, ("values the 'after' region yields", len(a_yield)),
                      ("'before' block arguments", len(b_args)))

    def step(env: Env) -> None:
        vals = [env[s] for s in inits]
        guard = 0
        while True:
            for d, v in zip(b_args, vals, strict=True):
                env[d] = v
            for s in b_steps:
                s(env)
            out = [env[p] for p in passed]
            cv = env[cond]
            if isinstance(cv, Lanes):
                cv = _same_for_all_blocks(cv, op, "the condition")
            if not cv:
                break
            for d, v in zip(a_args, out, strict=True):
                env[d] = v
            for s in a_steps:
                s(env)
            vals = [env[y] for y in a_yield]
            guard += 1
        for r, v in zip(results, out, strict=False):
            env[r] = v
    return step


@handler("func.return", "return")
def _return(cf: CompiledFunc, op: Op) -> Step:
    slots = [cf.slot(v) for v in op.operands]

    def step(env: Env) -> None:
        raise _Return(tuple(env[s] for s in slots))
    return step


@handler("func.call", "call")
def _call(cf: CompiledFunc, op: Op) -> Step:
    callee_name = op.callee
    if callee_name is None:
        raise VerifyError("call without a callee", op=op.name, loc=op.loc)
    args = [cf.slot(v) for v in op.operands]
    results = [cf.slot(r) for r in op.results]
    compiler = cf.c
    kind = _kernel_kind(compiler.module.lookup(callee_name))

    def step(env: Env) -> None:
        ctx = env[0]
        if kind is not None and ctx.core is not None and not ctx.core.runs(kind, callee_name):
            return  # a cube function on a vector core or the reverse (#if __DAV_CUBE__ ...)
        callee = compiler.function(callee_name)
        out = callee.invoke(ctx, [env[a] for a in args])
        for r, v in zip(results, out, strict=False):
            env[r] = v
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
        env[k] = TensorView(arr, [int(env[s]) for s in shape], [int(env[s]) for s in strides],
                            layout, dt or D.dtype(arr.dtype), pname)
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


@handler("pto.subview")  # tensor_view -> tile_view window with static sizes
@handler("pto.partition_view")
def _partition_view(cf: CompiledFunc, op: Op) -> Step:
    tv = cf.slot(op.operands[0])
    offs = [cf.slot(op.operands[i]) for i in (_kw_list(op, "offsets") or [])]
    sizes = _kw_sizes(cf, op)
    k = cf.slot(op.results[0])
    loc = op.loc

    def step(env: Env) -> None:
        view: TensorView = env[tv]
        if not isinstance(view, TensorView):  # the text named something else as the source
            raise ExecutionError(f"{op.name}: the source must be a tensor view (from "
                                 f"pto.make_tensor_view), got {type(view).__name__}", loc=loc)
        o = [_index(env[s]) for s in offs]
        sz = [v if const else int(env[v]) for const, v in sizes]
        st = view.strides
        if not (len(o) == len(sz) == len(st)):
            raise ExecutionError(f"partition_view: {len(o)} offsets and {len(sz)} sizes for a "
                                 f"rank-{len(st)} view", loc=loc)
        for d, (a, n, full) in enumerate(zip(o, sz, view.shape, strict=True)):
            if isinstance(a, np.ndarray):  # lockstep: one offset per block
                lo, hi = (int(a.min()), int(a.max())) if a.size else (0, 0)
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
        offset = sum(a * s for a, s in zip(o, st, strict=True))
        if isinstance(offset, np.ndarray):
            offset = np.asarray(offset, np.int64)
        layout = view.layout or infer_layout(sz, st)
        try:
            env[k] = GlobalTensor(view.array, sz[-5:], st[-5:], layout, dtype=view.dtype,
                                  offset=offset, name=view.name)
        except PtoError as e:
            raise e.with_loc(loc) from None
    return step


@handler("pto.alloc_tile")
def _alloc_tile(cf: CompiledFunc, op: Op) -> Step:
    res = op.results[0]
    spec = bridge.tile_spec_of(res.type, cf.c.target)
    if spec is None:
        raise VerifyError(f"alloc_tile result type {res.type} is not a tile_buf", op=op.name,
                          loc=op.loc)
    tile = Tile.of(spec, name=res.name)
    cf.tiles.append(tile)
    k = cf.slot(res)
    kw = op.keyword_operands
    addr = cf.slot(kw["addr"]) if "addr" in kw else None
    vr = cf.slot(kw["valid_row"]) if "valid_row" in kw else None
    vc = cf.slot(kw["valid_col"]) if "valid_col" in kw else None
    loc = op.loc

    def step(env: Env) -> None:
        try:
            if addr is not None:
                env[0].machine.assign(tile, int(env[addr]))
            if vr is not None or vc is not None:
                tile.set_valid(None if vr is None else _index(env[vr]),
                               None if vc is None else _index(env[vc]))
        except PtoError as e:
            raise e.with_loc(loc) from None
        env[k] = tile
    return step


@handler("memref.alloc")
def _memref_alloc(cf: CompiledFunc, op: Op) -> Step:
    res = op.results[0]
    spec = bridge.tile_spec_of(res.type, cf.c.target)
    k = cf.slot(res)
    if spec is not None:
        tile = Tile.of(spec, name=res.name)
        cf.tiles.append(tile)

        def step(env: Env) -> None:
            env[k] = tile
        return step
    t = res.type
    if not isinstance(t, T.MemRefType) or None in t.shape:
        raise VerifyError(f"cannot allocate {t}", op=op.name, loc=op.loc)
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
    loc = op.loc

    def step(env: Env) -> None:
        try:
            env[0].machine.assign(env[t], int(env[a]))
        except PtoError as e:
            raise e.with_loc(loc) from None
    return step


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
    key = item.rsplit("<", 1)[-1].rstrip(">").strip()
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
    from ..isa.registry import REGISTRY

    def h(cf: CompiledFunc, op: Op) -> Step:
        ins = REGISTRY[instr_name]
        items = _bracket_args(op)
        items[:endpoints] = [_sync_pipe(x, op) for x in items[:endpoints]]
        if len(items) != n_args:
            raise VerifyError(f"expects {n_args} bracketed operand(s) "
                              f"({', '.join(o.name for o in ins.operands)}), got {len(items)}",
                              op=op.name, loc=op.loc)
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


for _n, (_i, _k) in {"pto.set_flag": ("SET_FLAG", 3), "pto.set_flag_dyn": ("SET_FLAG", 3),
                     "pto.wait_flag": ("WAIT_FLAG", 3), "pto.wait_flag_dyn": ("WAIT_FLAG", 3),
                     "pto.barrier": ("PIPE_BARRIER", 1)}.items():
    _HANDLERS[_n] = _sync_step(_i, _k)
# record/wait events and barrier_sync name op kinds: lowered to the flags of their pipes
_HANDLERS["pto.record_event"] = _sync_step("SET_FLAG", 3, endpoints=2)
_HANDLERS["pto.wait_event"] = _sync_step("WAIT_FLAG", 3, endpoints=2)
_HANDLERS["pto.barrier_sync"] = _sync_step("PIPE_BARRIER", 1, endpoints=1)


def _block_query(attr: str) -> Callable[[CompiledFunc, Op], Step]:
    def h(cf: CompiledFunc, op: Op) -> Step:
        k = cf.slot(op.results[0])

        def step(env: Env) -> None:
            env[k] = getattr(env[0], attr)
        return step
    return h


_HANDLERS["pto.get_block_idx"] = _block_query("block_idx")
_HANDLERS["pto.get_block_num"] = _block_query("block_num")
_HANDLERS["pto.get_subblock_idx"] = _block_query("subblock_idx")
_HANDLERS["pto.get_subblock_num"] = _block_query("subblock_num")


def _index(v: Any) -> Any:
    """An index operand: an int, or per-block values (Lanes) in a lockstep run."""
    return v if isinstance(v, np.ndarray) else int(v)


def _kernel_kind(fn: Any) -> str | None:
    from .pipe_ops import kernel_kind

    return kernel_kind(fn)


class Context:
    """Slot 0 of every frame: the machine and the launch coordinates (``core``: the core of a
    mixed launch, which decides which ``pto.kernel_kind`` functions a call runs)."""

    __slots__ = ("machine", "block_idx", "block_num", "subblock_idx", "subblock_num", "core")

    def __init__(self, machine: Machine, block_idx: int, block_num: int) -> None:
        self.machine = machine
        self.block_idx = block_idx
        self.block_num = block_num
        self.subblock_idx = 0
        self.subblock_num = 1
        self.core: Any = None


def _invoke(self: CompiledFunc, ctx: Context, args: list[Any]) -> tuple[Any, ...]:
    env: Env = [None] * max(self.n, 1)
    env[0] = ctx
    for (k, _t, _n), v in zip(self.args, args, strict=True):
        env[k] = v
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


CompiledFunc.locate = _locate  # type: ignore[attr-defined]


CompiledFunc.invoke = _invoke  # type: ignore[attr-defined]

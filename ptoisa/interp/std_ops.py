"""Interpreter handlers of the standard MLIR dialects a ``.pto`` program uses: ``arith``
(constants, integer and float ops with MLIR's semantics through :mod:`.arith`, comparisons,
select, casts), ``scf`` (for, if, while: divergence between lockstep blocks is located at the
op) and ``func`` (return, call)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from ..errors import ExecutionError, NotExecutedYet, PtoError, VerifyError
from ..ir import attrs as A
from ..ir import types as T
from ..ir.core import Op, Region
from ..lanes import BlockDivergence, Lanes
from . import arith, bridge, simt
from .compiler import (
    _HANDLERS,
    CompiledFunc,
    Env,
    Step,
    _literal,
    _Return,
    _same_for_all_blocks,
    defined_function,
    handler,
    kernel_kind,
)


def _wrap_int(v: int, t: T.Type) -> int:
    return arith.wrap(v, t)


def _float(v: Any, t: T.Type) -> Any:
    if isinstance(t, T.FloatType):
        return arith.to_float(v, bridge.elem_dtype(t))
    return v


def _float_bits(a: A.IntegerAttr, t: T.FloatType, op: Op) -> Any:
    """A hex literal of a float type is its bit pattern (MLIR: ``0x3F800000 : f32`` is 1.0);
    a decimal integer literal is an error there, as in MLIR."""
    dt = bridge.elem_dtype(t).np
    bits = 8 * np.dtype(dt).itemsize
    if not a.hex:
        raise VerifyError(f"decimal integer literal {a.value} for a float type ({t}): write "
                          f"{a.value}.0, or the {bits}-bit pattern in hex", op=op.name,
                          loc=op.loc)
    if not 0 <= a.value < (1 << bits):
        raise VerifyError(f"hex literal {a.value:#x} does not fit the {bits} bits of {t}",
                          op=op.name, loc=op.loc)
    return np.array(a.value, dtype=f"u{bits // 8}").view(dt)[()]


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
    if isinstance(a, A.IntegerAttr) and isinstance(rt, T.FloatType):
        val: Any = _float_bits(a, rt, op)
    elif isinstance(a, A.IntegerAttr):
        w = arith.width(rt)
        if w is not None and not -(1 << (w - 1)) <= a.value < (1 << w):  # MLIR rejects these
            raise VerifyError(f"integer literal {a.value} out of range for {rt}", op=op.name,
                              loc=op.loc)
        val = _wrap_int(a.value, rt)
    elif isinstance(a, A.FloatAttr):
        if isinstance(rt, (T.IntegerType, T.IndexType)):
            raise VerifyError(f"a float literal ({a.value}) for an integer type ({rt})",
                              op=op.name, loc=op.loc)
        val = _float(a.value, rt)
        if isinstance(rt, T.FloatType) and np.isinf(val) and np.isfinite(float(a.value)):
            raise VerifyError(f"float literal {a.value} out of range for {rt}", op=op.name,
                              loc=op.loc)
    elif isinstance(a, A.BoolAttr):
        val = int(a.value)
    elif isinstance(a, A.OpaqueAttr) and a.text.startswith("dense<"):
        val = _dense(a.text, rt, op)
        if _lane_type(rt) is not rt:  # a SIMT packed value: one for every workitem, its lanes
            val = val.reshape(1, -1)  # along the last axis (per-workitem ones: (n, lanes))
    else:
        raise VerifyError(f"unsupported constant {a}", op=op.name, loc=op.loc)
    k = cf.slot(op.results[0])
    cf.consts[k] = val

    def step(env: Env) -> None:
        env[k] = val
    return step


def _lane_type(t: T.Type) -> T.Type:
    """The element type of a SIMT packed value's type (``vector<2xi16>``: i16; 17-simt.md:
    arithmetic on it is lane-wise), ``t`` itself for every other type."""
    if isinstance(t, T.OpaqueType) and t.text.startswith("vector<"):
        try:
            dt = bridge.elem_dtype(t)
        except PtoError:
            return t
        if dt.lanes > 1:
            lt = dt.lane_type
            if lt.is_int:
                return T.IntegerType(8 * lt.itemsize, "u" if lt.kind == "uint" else "")
            if not lt.coded:
                return T.FloatType(str(t.text)[len("vector<"):-1].split("x", 1)[1])
    return t


def _binary(cf: CompiledFunc, op: Op) -> Step:
    ta, tb = (getattr(v, "type", None) for v in op.operands[:2])
    known = not any(t is None or isinstance(t, T.UnknownType) for t in (ta, tb))
    if known and ta != tb:  # MLIR: one type for both operands
        raise VerifyError(f"operands have different types ({ta} and {tb})", op=op.name,
                          loc=op.loc)
    a, b = (cf.slot(v) for v in op.operands[:2])
    k = cf.slot(op.results[0])
    rt = _lane_type(op.results[0].type)
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
         "arith.extf", "arith.truncf", "arith.bitcast", "llvm.bitcast")
def _cast(cf: CompiledFunc, op: Op) -> Step:
    a = cf.slot(op.operands[0])
    k = cf.slot(op.results[0])
    st = op.operands[0].type
    rt = op.results[0].type
    name = op.name
    loc = op.loc
    if name == "llvm.bitcast":  # (LLVM's bitcast of a scalar: the same bits, as arith's)
        scalar = (T.IntegerType, T.FloatType, T.IndexType)
        if isinstance(st, T.OpaqueType) and isinstance(rt, T.IntegerType) and \
                _lane_type(st) is not st:
            return _packed_to_int(cf, op, st, rt)
        if not (isinstance(st, scalar) and isinstance(rt, scalar)):
            return cf.unsupported(op)
        name = "arith.bitcast"
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


def _packed_to_int(cf: CompiledFunc, op: Op, st: T.Type, rt: T.IntegerType) -> Step:
    """llvm.bitcast of a SIMT packed value (``vector<2xf16>`` to i32): its lanes' bits, the
    first lane in the low bits (LLVM's vector layout on a little-endian target)."""
    from ..isa.micro import simt as simt_isa

    elem = bridge.elem_dtype(st).np
    if 8 * elem.itemsize != rt.width:
        raise VerifyError(f"bitcast of {st} ({8 * elem.itemsize} bits) to {rt}", op=op.name,
                          loc=op.loc)
    a, k = cf.slot(op.operands[0]), cf.slot(op.results[0])
    u = np.dtype(f"u{elem.itemsize}")
    loc = op.loc

    def step(env: Env) -> None:
        v = env[a]
        try:
            n = simt_isa.values_of(v, elem)
            bits = np.ascontiguousarray(simt_isa.as_elem(v, elem, n)).view(u).astype(np.int64)
        except ExecutionError as e:
            raise e.with_loc(loc) from None
        out = _wrap_lanes(bits, rt)
        env[k] = out if np.ndim(v) > 1 and np.shape(v)[0] > 1 else int(out[0])
    return step


@handler("builtin.unrealized_conversion_cast")
def _unrealized_cast(cf: CompiledFunc, op: Op) -> Step:
    """MLIR's placeholder cast, as PTOAS's frontends leave it between integer types of one
    width (the tilelang trandom kernels: ui32 key words to the i32 its op takes): the same
    bits, as arith.bitcast reads them; between a type and itself, the value. Any other cast
    has no meaning of its own: refused by name, with the types."""
    if len(op.operands) != 1 or len(op.results) != 1:
        return _refuse(op, f"{len(op.operands)} operand(s) to {len(op.results)} result(s)")
    st, rt = op.operands[0].type, op.results[0].type
    if st == rt:  # (a bridge between one type and itself, as PTOAS's tile-op expansion
        # leaves around a tile_buf: the value itself)
        a, k = cf.slot(op.operands[0]), cf.slot(op.results[0])

        def same(env: Env) -> None:
            env[k] = env[a]
        return same
    ws, wr = arith.width(st), arith.width(rt)
    if not (isinstance(st, T.IntegerType) and isinstance(rt, T.IntegerType) and ws == wr):
        return _refuse(op, f"{st} to {rt} (only integers of one width are executed: the "
                       "same bits)")
    a = cf.slot(op.operands[0])
    k = cf.slot(op.results[0])
    loc = op.loc

    def step(env: Env) -> None:
        v = env[a]
        try:
            if isinstance(v, np.ndarray) and v.ndim:  # per-block values of a lockstep run
                env[k] = _wrap_lanes(np.array([arith.signed(int(arith.bitcast(x, st, rt)), 64)
                                               for x in v.flat], np.int64).reshape(v.shape),
                                     rt)
            else:
                env[k] = arith.bitcast(v, st, rt)
        except ExecutionError as e:
            raise e.with_loc(loc) from None
    return step


def _refuse(op: Op, what: str) -> Step:
    loc = op.loc

    def step(env: Env) -> None:
        raise ExecutionError(f"operation '{op.name}' cannot be executed by ptoisa yet: {what}",
                             loc=loc)
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
    body = cf.block(op.regions[0], ends="scf.yield")
    yield_slots = _yield_slots(cf, op.regions[0])
    _counts_agree(op, ("initial values", len(inits)), ("loop-carried block arguments",
                                                       len(iters)))
    if yield_slots:
        _counts_agree(op, ("yielded values", len(yield_slots)),
                      ("loop-carried block arguments", len(iters)))

    one = body[0] if len(body) == 1 and not iters and not yield_slots and not results \
        else None

    def step(env: Env) -> None:
        for d, s in zip(iters, inits, strict=True):
            env[d] = env[s]
        i, end, st = env[lb], env[ub], env[stp]
        if isinstance(i, Lanes) or isinstance(end, Lanes) or isinstance(st, Lanes):
            i, end, st = (_same_for_all_blocks(x, op, "a loop bound") for x in (i, end, st))
        if st <= 0:
            raise ExecutionError(f"scf.for step must be positive, got {st}", loc=op.loc)
        if type(i) is int and type(end) is int and type(st) is int:
            seq: Any = range(i, end, st)  # (the common case: Python int bounds)
            env[0].spend(len(seq), op)
        else:
            seq = _steps(i, end, st)
            env[0].spend(max(0, -(-(int(end) - int(i)) // int(st))), op)
        lp = env[0].loops
        if lp is not None:  # a plan records: it marks where each iteration starts
            seq = lp.iterate(op, seq)
        try:
            if one is not None:  # one step, nothing carried
                for j in seq:
                    env[iv] = j
                    one(env)
                return
            for j in seq:
                env[iv] = j
                for s in body:
                    s(env)
                if yield_slots:
                    vals = [env[y] for y in yield_slots]
                    for d, v in zip(iters, vals, strict=True):
                        env[d] = v
        except BlockDivergence as e:
            raise cf.locate(e, s if one is None else one) from None
        for r, d in zip(results, iters, strict=False):  # (no results: they are unbound)
            env[r] = env[d]
    from . import vchunk  # (a chunk loop around a vecscope loop, as one batch)
    return vchunk.wrap(cf, op, step)


def _steps(i: Any, end: Any, st: Any) -> Iterator[Any]:
    """i, i + st, ... below end, in the bounds' own types (numpy integers stay numpy)."""
    while i < end:
        yield i
        i += st


def _counts_agree(op: Op, a: tuple[str, int], b: tuple[str, int]) -> None:
    """Loop values pass between regions one for one (the parser does not check it)."""
    if a[1] != b[1]:
        raise VerifyError(f"{a[1]} {a[0]} but {b[1]} {b[0]}", op=op.name, loc=op.loc)


def _yield_slots(cf: CompiledFunc, region: Region) -> list[int]:
    ops = region.block.ops
    if ops and ops[-1].name == "scf.yield":
        return [cf.slot(v) for v in ops[-1].operands]
    return []


@handler("scf.yield", "scf.condition", "pto.yield")
def _yield(cf: CompiledFunc, op: Op) -> None:
    return None


@handler("pto.fusion_region")
def _fusion_region(cf: CompiledFunc, op: Op) -> Step:
    """``%r = pto.fusion_region { ...; pto.yield(%v) : (T) -> () } : T``: a span of ops PTOAS's
    tile fusion groups so that later passes may fuse their loops; what it computes is its
    body's, run in place, and its results are the values ``pto.yield`` names (PTOAS's
    verifier: no block arguments, as many yielded values as results, of the same types)."""
    region = op.regions[0] if len(op.regions) == 1 else None
    if region is None or len(region.blocks) != 1:
        raise VerifyError("expects one region with one block", op=op.name, loc=op.loc)
    args = region.block.args
    if args:
        raise VerifyError(f"expects body block to have no arguments, got {len(args)}",
                          op=op.name, loc=op.loc)
    ops = region.block.ops
    if not ops or ops[-1].name != "pto.yield":
        raise VerifyError("expects its body to end with pto.yield", op=op.name, loc=op.loc)
    ys = ops[-1].operands
    if len(ys) != len(op.results):
        raise VerifyError(f"expects pto.yield to return {len(op.results)} values, got "
                          f"{len(ys)}", op=op.name, loc=op.loc)
    for i, (y, r) in enumerate(zip(ys, op.results, strict=True)):
        if y.type != r.type:
            raise VerifyError(f"expects yielded value #{i} to have type '{r.type}', got "
                              f"'{y.type}'", op=op.name, loc=op.loc)
    body = cf.block(region, ends="pto.yield")
    yield_slots = [cf.slot(v) for v in ys]
    results = [cf.slot(r) for r in op.results]

    def step(env: Env) -> None:
        for s in body:
            s(env)
        for r, y in zip(results, yield_slots, strict=True):
            env[r] = env[y]
    return step


@handler("scf.if")
def _if(cf: CompiledFunc, op: Op) -> Step:
    c = cf.slot(op.operands[0])
    then = cf.block(op.regions[0], ends="scf.yield")
    then_y = _yield_slots(cf, op.regions[0])
    has_else = len(op.regions) > 1 and op.regions[1].blocks
    other = cf.block(op.regions[1], ends="scf.yield") if has_else else []
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
    b_steps = cf.block(before, ends="scf.condition")
    a_steps = cf.block(after, ends="scf.yield")
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
            if not guard & 1023:  # (a while loop spends its iterations a thousand at a time)
                env[0].spend(1024, op)
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
    target = defined_function(compiler.module, callee_name)
    kind = kernel_kind(target)
    fty = None if target is None else target.attributes.get("function_type")
    if isinstance(fty, A.TypeAttr) and isinstance(fty.type, T.FunctionType):
        # MLIR's func.call verifier: the call's operands and results are the callee's
        for what, have, want in (("operands", len(op.operands), len(fty.type.inputs)),
                                 ("results", len(op.results), len(fty.type.results))):
            if have != want:
                raise VerifyError(f"incorrect number of {what} for callee (@{callee_name} "
                                  f"takes {want}, the call has {have})", op=op.name,
                                  loc=op.loc)
    external = target is not None and not (target.regions and target.regions[0].blocks)
    simt_body = simt.is_entry(target) and not simt.is_entry(cf.op)

    def step(env: Env) -> None:
        ctx = env[0]
        if kind is not None and ctx.core is not None and not ctx.core.runs(kind, callee_name):
            return  # a cube function on a vector core or the reverse (#if __DAV_CUBE__ ...)
        if external:
            raise NotExecutedYet(f"@{callee_name} is declared without a body (an external "
                                 "function, defined outside the file): ptoisa cannot run a "
                                 "call to it", op=op.name, loc=op.loc)
        callee = compiler.function(callee_name)
        if simt_body:  # a SIMT body, launched with pto.store_vfsimt_info's dimensions
            dims = ctx.machine.micro_regs.get("simt_info")
            if dims is None:
                raise ExecutionError(f"@{callee_name} is a pto.simt_entry function called with "
                                     "no launch dimensions (pto.store_vfsimt_info before the "
                                     "call)", op=op.name, loc=op.loc)
            simt.run_body(ctx, callee, [env[a] for a in args], dims, op)
            return
        out = callee.invoke(ctx, [env[a] for a in args])
        for r, v in zip(results, out, strict=False):
            env[r] = v
    return step


for _n in (*arith.INT_BINARY, *arith.FLOAT_BINARY):
    _HANDLERS[_n] = _binary

"""One tile element from scalar code (``pto.tgetval`` / ``pto.tsetval``, PTO_IR_manual.md 4.14:
``src[offset]``, a linear element offset in the tile's storage order) and stack-local scalar
storage of a kernel's scalar code (PTO_IR_manual.md 2.7 / 2.8 and the
"Local Array Ops" / "Struct Ops" sections): ``!pto.local_array<D1x...xDkxT>``
(``pto.declare_local_array``, ``pto.local_array_get`` / ``_set``) and
``!pto.struct<T0, ..., Tn-1>`` (``pto.declare_struct``, ``pto.struct_get`` / ``_set`` by a
constant field path).

Both are C++ stack variables: each execution of the declaration makes fresh storage whose
elements are uninitialised, so reading one before a ``_set`` wrote it is refused by name
here (the C++ would read an indeterminate value: there is no result to give). A ``_get``
copies the element out (a later ``_set`` does not change the SSA value). Values are stored
as the element type (integers wrap to its width, floats round to it). The type rules are
the manual's and PTOAS's verifier's: checked where the op is compiled; the rules that span a
module (a struct is never returned, never a function argument, never made by another op,
never handed to a terminator) are in :func:`struct_escape_errors`.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import numpy as np

from .. import dtypes as D
from ..errors import ExecutionError, NotExecutedYet, PtoError, VerifyError
from ..ir import attrs as A
from ..ir import types as T
from ..ir.core import Op
from ..lanes import Lanes
from ..tile import Tile
from . import bridge
from .compiler import CompiledFunc, Env, Step, _same_for_all_blocks, handler
from .scalar_ops import _int_reader, _storable

_LOCAL_ARRAY = re.compile(r"!pto\.local_array<\s*((?:\d+\s*x\s*)+)([A-Za-z0-9_.!]+)\s*>")
_STRUCT_HEAD = "!pto.struct<"
#: the scalar field / element types with an exact C++ spelling
_STORABLE_FLOATS = frozenset({"f16", "bf16", "f32", "f64"})
_STORABLE_WIDTHS = frozenset({8, 16, 32, 64})


def _scalar_type(text: str) -> T.Type:
    from ..text.parser import Parser  # (the text front end sits above the interpreter)

    return Parser(text, "<type>").parse_type()


def _storable_scalar(t: T.Type) -> bool:
    if isinstance(t, T.IntegerType):
        return t.width in _STORABLE_WIDTHS
    return isinstance(t, T.FloatType) and t.name in _STORABLE_FLOATS


# ---- one tile element -------------------------------------------------------------------------

_TILE_SCALAR_WHY = ("a scalar-pipe access to a tile element: its order against the tile's "
                    "other pipes is not checked")


def _tile_element(env: Env, op: Op, tile: Any, off: Any) -> tuple[int, int]:
    """(row, col) of linear element ``off`` in ``tile``'s storage order (row-major ND:
    off = r * cols + c; column-major DN: off = c * rows + r); the hook of observers that check
    pipe order is told the access is not modelled."""
    if not isinstance(tile, Tile):
        raise ExecutionError(f"needs a tile, got {type(tile).__name__}", op=op.name,
                             loc=op.loc)
    m = env[0].machine
    for o in m.observers:
        hook = getattr(o, "not_modelled", None)
        if hook is not None:
            hook(m, op.name, op.loc, _TILE_SCALAR_WHY)
    s = tile.spec
    k = int(_one(off, op, "the offset"))
    if s.is_boxed:
        raise ExecutionError(f"a linear offset into a {s.layout_name} tile (fractal boxes) is "
                             "not supported: only ND and DN tiles", op=op.name, loc=op.loc)
    if not 0 <= k < s.rows * s.cols:
        raise ExecutionError(f"offset {k} is outside the {s.rows}x{s.cols} tile", op=op.name,
                             loc=op.loc)
    return divmod(k, s.cols) if s.is_row_major else (k % s.rows, k // s.rows)


def _vec_tile(op: Op, t: T.Type, what: str) -> D.DType:
    if not isinstance(t, T.TileBufType) or t.loc != "vec":
        raise VerifyError(f"{what} must be a loc=vec !pto.tile_buf (scalar reads and writes of "
                          f"other locations are not supported), got {t}", op=op.name,
                          loc=op.loc)
    return bridge.elem_dtype(t.dtype)


@handler("pto.tgetval")
def _tgetval(cf: CompiledFunc, op: Op) -> Step:
    if len(op.operands) != 2 or len(op.results) != 1:
        raise VerifyError("expects ins(%src, %offset) and one scalar result", op=op.name,
                          loc=op.loc)
    dt = _vec_tile(op, op.operands[0].type, "src")
    rt = op.results[0].type
    if rt != op.operands[0].type.dtype:  # type: ignore[attr-defined]
        raise VerifyError(f"result type {rt} must be src's element type {dt.name}",
                          op=op.name, loc=op.loc)
    src, off, k = (cf.slot(v) for v in (*op.operands, op.results[0]))
    read = _int_reader(dt) if not dt.is_float else (lambda x: x)

    def step(env: Env) -> None:
        t = env[src]
        r, c = _tile_element(env, op, t, env[off])
        env[k] = read(np.asarray(t.read(1, 1, r, c)).reshape(-1)[0])
    return step


@handler("pto.tsetval")
def _tsetval(cf: CompiledFunc, op: Op) -> Step:
    if len(op.operands) != 3:
        raise VerifyError("expects ins(%offset, %value) outs(%dst)", op=op.name, loc=op.loc)
    off_v, val_v, dst_v = _tsetval_operands(op)
    dt = _vec_tile(op, dst_v.type, "dst")
    if val_v.type != dst_v.type.dtype:
        raise VerifyError(f"value type {val_v.type} must be dst's element type {dt.name}",
                          op=op.name, loc=op.loc)
    off, val, dst = cf.slot(off_v), cf.slot(val_v), cf.slot(dst_v)
    w = None if dt.is_float else 8 * dt.itemsize

    def step(env: Env) -> None:
        t = env[dst]
        r, c = _tile_element(env, op, t, env[off])
        x = _storable(_one(env[val], op, "the value"), dt, w)
        t.write(np.full((1, 1), x, dt.np), r, c)
    return step


def _tsetval_operands(op: Op) -> tuple[Any, Any, Any]:
    """(offset, value, dst) of ``ins(%off, %val) outs(%dst)`` (the written order)."""
    a, b, c = op.operands
    if isinstance(a.type, T.TileBufType):  # (a form with dst first)
        return b, c, a
    return a, b, c


# ---- local arrays ------------------------------------------------------------------------------

def local_array_type(t: T.Type, op: Op) -> tuple[tuple[int, ...], D.DType]:
    """(shape, element type) of a ``!pto.local_array``; VerifyError at ``op`` otherwise."""
    m = _LOCAL_ARRAY.fullmatch(str(t).strip())
    if m is None:
        raise VerifyError(f"expected !pto.local_array<D1x...xDkxT>, got {t}", op=op.name,
                          loc=op.loc)
    dims = tuple(int(d) for d in m.group(1).replace(" ", "").split("x") if d)
    if not dims or min(dims) <= 0:
        raise VerifyError(f"{t}: every dimension must be positive", op=op.name, loc=op.loc)
    try:
        et = _scalar_type(m.group(2))
    except PtoError:
        et = T.UnknownType()
    if not _storable_scalar(et):
        raise VerifyError(f"{t}: element type {m.group(2)} is not a scalar integer or float",
                          op=op.name, loc=op.loc)
    return dims, bridge.elem_dtype(et)


class LocalArray:
    """A stack-local array: its elements and which of them were written."""

    __slots__ = ("data", "written")

    def __init__(self, shape: tuple[int, ...], dt: D.DType) -> None:
        self.data = np.zeros(shape, dt.np)
        self.written = np.zeros(shape, bool)


def _one(v: Any, op: Op, what: str) -> Any:
    """A value every block of a lockstep run agrees on (else BlockDivergence)."""
    if isinstance(v, (Lanes, np.ndarray)) and np.ndim(v):
        flat = np.asarray(v).reshape(-1)
        if flat.size and (flat == flat[0]).all():
            return flat[0] if not isinstance(v, Lanes) else int(flat[0])
        return _same_for_all_blocks(v, op, what)  # raises: the blocks differ
    return v


def _element(env: Env, op: Op, arr: Any, idx: list[int], shape: tuple[int, ...]
             ) -> tuple[int, ...]:
    if not isinstance(arr, LocalArray):
        raise ExecutionError(f"not a local array (got {type(arr).__name__})", op=op.name,
                             loc=op.loc)
    at = tuple(int(_one(env[i], op, "the index")) for i in idx)
    if any(not 0 <= a < d for a, d in zip(at, shape, strict=True)):
        raise ExecutionError(f"index {list(at)} is outside the local array of shape "
                             f"{'x'.join(map(str, shape))}", op=op.name, loc=op.loc)
    return at


@handler("pto.declare_local_array")
def _declare_local_array(cf: CompiledFunc, op: Op) -> Step:
    if len(op.results) != 1 or op.operands:
        raise VerifyError("expects no operands and one !pto.local_array result", op=op.name,
                          loc=op.loc)
    shape, dt = local_array_type(op.results[0].type, op)
    k = cf.slot(op.results[0])

    def step(env: Env) -> None:
        env[k] = LocalArray(shape, dt)  # fresh (uninitialised) storage each time it runs
    return step


def _indices(op: Op, rank: int, n_extra: int) -> None:
    got = len(op.operands) - 1 - n_extra
    if got != rank:
        raise VerifyError(f"expects {rank} indices (the array's rank), got {got}", op=op.name,
                          loc=op.loc)


@handler("pto.local_array_get")
def _local_array_get(cf: CompiledFunc, op: Op) -> Step:
    shape, dt = local_array_type(op.operands[0].type, op)
    _indices(op, len(shape), 0)
    rt = op.results[0].type if len(op.results) == 1 else None
    if rt is None or bridge.elem_dtype(rt) != dt:
        raise VerifyError(f"result type {rt} must be the array's element type {dt.name}",
                          op=op.name, loc=op.loc)
    a, k = cf.slot(op.operands[0]), cf.slot(op.results[0])
    idx = [cf.slot(v) for v in op.operands[1:]]
    read = _int_reader(dt) if not dt.is_float else (lambda x: x)

    def step(env: Env) -> None:
        arr = env[a]
        at = _element(env, op, arr, idx, shape)
        if not arr.written[at]:
            raise NotExecutedYet(f"element {list(at)} is read before any "
                                 "pto.local_array_set wrote it (uninitialised C++ stack "
                                 "storage: no value to read)", op=op.name, loc=op.loc)
        env[k] = read(arr.data[at])  # a copy: a later set leaves this value alone
    return step


@handler("pto.local_array_set")
def _local_array_set(cf: CompiledFunc, op: Op) -> Step:
    shape, dt = local_array_type(op.operands[0].type, op)
    _indices(op, len(shape), 1)
    vt = op.operands[-1].type
    if bridge.elem_dtype(vt) != dt if _storable_scalar(vt) else True:
        raise VerifyError(f"value type {vt} must be the array's element type {dt.name}",
                          op=op.name, loc=op.loc)
    a, v = cf.slot(op.operands[0]), cf.slot(op.operands[-1])
    idx = [cf.slot(x) for x in op.operands[1:-1]]
    w = None if dt.is_float else 8 * dt.itemsize

    def step(env: Env) -> None:
        arr = env[a]
        at = _element(env, op, arr, idx, shape)
        arr.data[at] = _storable(_one(env[v], op, "the value"), dt, w)
        arr.written[at] = True
    return step


# ---- structs -----------------------------------------------------------------------------------

def _split_top(body: str) -> list[str]:
    out, depth, start = [], 0, 0
    for i, ch in enumerate(body):
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth -= 1
        elif ch == "," and depth == 0:
            out.append(body[start:i].strip())
            start = i + 1
    out.append(body[start:].strip())
    return [x for x in out if x]


def is_struct(t: Any) -> bool:
    return isinstance(t, T.OpaqueType) and t.text.startswith(_STRUCT_HEAD)


#: a struct type: its fields, each a scalar type or a nested struct (a tuple)
Fields = tuple[Any, ...]


def struct_fields(t: T.Type | str, op: Op) -> Fields:
    """The fields of a ``!pto.struct<...>``; VerifyError at ``op`` for a field that is not
    scalar-storable (the manual 2.8)."""
    text = str(t).strip()
    if not (text.startswith(_STRUCT_HEAD) and text.endswith(">")):
        raise VerifyError(f"expected !pto.struct<T0, ...>, got {t}", op=op.name, loc=op.loc)
    parts = _split_top(text[len(_STRUCT_HEAD):-1])
    if not parts:
        raise VerifyError(f"{t}: a struct has at least one field", op=op.name, loc=op.loc)
    out: list[Any] = []
    for p in parts:
        if p.startswith(_STRUCT_HEAD):
            out.append(struct_fields(p, op))
            continue
        try:
            ft = _scalar_type(p)
        except PtoError:
            ft = T.UnknownType()
        if not _storable_scalar(ft):
            raise VerifyError(f"field type {p} is not scalar-storable (an integer of width "
                              "8/16/32/64, f16, bf16, f32, f64 or a nested !pto.struct)",
                              op=op.name, loc=op.loc)
        out.append(ft)
    return tuple(out)


class Struct:
    """A stack-local struct: its fields (None: not written yet; a nested Struct)."""

    __slots__ = ("fields",)

    def __init__(self, fields: Fields) -> None:
        self.fields: list[Any] = [Struct(f) if isinstance(f, tuple) else None for f in fields]


def _path(op: Op, fields: Fields) -> tuple[tuple[int, ...], T.Type]:
    """The constant field path ``[i, j, ...]`` of a struct_get / struct_set and the scalar
    type it ends at."""
    path: list[int] = []
    inside = False
    for p in op.syntax:
        if p.kind == "p" and p.value == "[":
            inside = True
        elif p.kind == "p" and p.value == "]":
            break
        elif inside and p.kind == "a" and isinstance(p.value, A.IntegerAttr):
            path.append(int(p.value.value))
        elif inside and p.kind == "v":
            raise VerifyError("a struct field path is constant integers, not SSA values",
                              op=op.name, loc=op.loc)
    if not path:
        raise VerifyError("expects a non-empty constant field path [i, ...]", op=op.name,
                          loc=op.loc)
    level: Any = fields
    for depth, i in enumerate(path):
        if not isinstance(level, tuple):
            raise VerifyError(f"struct path {path}: index {depth} descends into a scalar field",
                              op=op.name, loc=op.loc)
        if not 0 <= i < len(level):
            raise VerifyError(f"struct path {path}: field index {i} is out of range for a "
                              f"struct of {len(level)} fields", op=op.name, loc=op.loc)
        level = level[i]
    if isinstance(level, tuple):
        raise VerifyError(f"struct path must end at a scalar field; {path} ends at a nested "
                          "struct (extend the path to a scalar inside it)", op=op.name,
                          loc=op.loc)
    return tuple(path), level


def _holder(env: Env, op: Op, s: Any, path: tuple[int, ...]) -> Struct:
    if not isinstance(s, Struct):
        raise ExecutionError(f"not a struct (got {type(s).__name__})", op=op.name, loc=op.loc)
    for i in path[:-1]:
        s = s.fields[i]
    return s


@handler("pto.declare_struct")
def _declare_struct(cf: CompiledFunc, op: Op) -> Step:
    if len(op.results) != 1 or op.operands:
        raise VerifyError("expects no operands and one !pto.struct result", op=op.name,
                          loc=op.loc)
    fields = struct_fields(op.results[0].type, op)
    k = cf.slot(op.results[0])

    def step(env: Env) -> None:
        env[k] = Struct(fields)  # fresh (uninitialised) storage each time it runs
    return step


@handler("pto.struct_get")
def _struct_get(cf: CompiledFunc, op: Op) -> Step:
    path, ft = _path(op, struct_fields(op.operands[0].type, op))
    rt = op.results[0].type if len(op.results) == 1 else None
    if rt != ft:
        raise VerifyError(f"result type {rt} must be the field type {ft} at {list(path)}",
                          op=op.name, loc=op.loc)
    dt = bridge.elem_dtype(ft)
    read = _int_reader(dt) if not dt.is_float else (lambda x: x)
    s, k = cf.slot(op.operands[0]), cf.slot(op.results[0])

    def step(env: Env) -> None:
        x = _holder(env, op, env[s], path).fields[path[-1]]
        if x is None:
            raise NotExecutedYet(f"field {list(path)} is read before any pto.struct_set wrote "
                                 "it (uninitialised C++ stack storage: no value to read)",
                                 op=op.name, loc=op.loc)
        env[k] = read(x)
    return step


@handler("pto.struct_set")
def _struct_set(cf: CompiledFunc, op: Op) -> Step:
    path, ft = _path(op, struct_fields(op.operands[0].type, op))
    vt = op.operands[-1].type if len(op.operands) == 2 else None
    if vt != ft:
        raise VerifyError(f"value type {vt} must be the field type {ft} at {list(path)}",
                          op=op.name, loc=op.loc)
    dt = bridge.elem_dtype(ft)
    w = None if dt.is_float else 8 * dt.itemsize
    s, v = cf.slot(op.operands[0]), cf.slot(op.operands[1])

    def step(env: Env) -> None:
        holder = _holder(env, op, env[s], path)
        holder.fields[path[-1]] = _storable(_one(env[v], op, "the value"), dt, w)
    return step


# ---- the module-wide struct rules ----------------------------------------------------------------

_TERMINATORS = frozenset({"func.return", "scf.yield", "scf.condition", "cf.br", "cf.cond_br",
                          "cf.switch", "scf.reduce.return", "scf.forall.in_parallel"})


def struct_escape_errors(func: Op) -> Iterator[VerifyError]:
    """A ``!pto.struct`` is stack storage of the function that declares it: never returned
    (not even a pass-through), never a function argument (PTOAS's verifier: an argument could
    hide any caller-owned slot), never produced by an op other than ``pto.declare_struct``
    (``arith.select``, ``scf.if``, calls ... would hide where it lives), never handed to a
    terminator."""
    ft = func.attributes.get("function_type")
    ftype = getattr(ft, "type", ft)
    for i, t in enumerate(getattr(ftype, "results", ()) or ()):
        if is_struct(t):
            yield VerifyError(f"result {i} has type {t}, but a stack-local struct must not be "
                              "returned", op=func.name, loc=func.loc)
    for i, t in enumerate(getattr(ftype, "inputs", ()) or ()):
        if is_struct(t):
            yield VerifyError(f"argument {i} has type {t}, but a stack-local struct must not "
                              "be a function argument", op=func.name, loc=func.loc)
    for op in func.walk():
        if op is func:
            continue
        if op.name not in ("pto.declare_struct", "pto.struct_get") and \
                any(is_struct(r.type) for r in op.results):  # (struct_get: its path rule)
            yield VerifyError("a !pto.struct may only be made by pto.declare_struct (this "
                              "op's result would hide where the storage lives)", op=op.name,
                              loc=op.loc)
        if op.name in _TERMINATORS and any(is_struct(v.type) for v in op.operands):
            yield VerifyError("a stack-local struct must not escape the scope that declares "
                              "it", op=op.name, loc=op.loc)
        for region in op.regions:
            for block in region.blocks:
                for a in block.args:
                    if is_struct(a.type):
                        yield VerifyError("a stack-local struct must not be a region "
                                          "argument (a loop-carried struct)", op=op.name,
                                          loc=op.loc)

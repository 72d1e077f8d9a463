"""From IR types and ops to the registry: the one place the text front end meets the ISA.

* IR types -> the registry's operand types (TileSpec, GMSpec, DType), so the verifier runs
  the same static rules as the eager API;
* a ``pto.*`` op -> its :class:`~ptoisa.isa.registry.Instr` and the mapping of its written
  operands (DPS ``ins``/``outs`` or SSA operands/results) onto the instruction's operands
  in C++ order (dst first), plus template parameters from attributes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from .. import dtypes as D
from ..dtypes import DType
from ..enums import Layout, PadValue, TileType
from ..errors import PtoError, VerifyError
from ..ir import attrs as A
from ..ir import types as T
from ..ir.core import Op, Value
from ..isa.registry import REGISTRY, Instr
from ..tensor import GMSpec, gm_spec
from ..tile import TileSpec, tile_spec

_PAD = (PadValue.Null, PadValue.Zero, PadValue.Max, PadValue.Min)
_LOC = {"vec": TileType.Vec, "mat": TileType.Mat, "left": TileType.Left, "right": TileType.Right,
        "acc": TileType.Acc, "bias": TileType.Bias, "scaling": TileType.Scaling,
        "ub": TileType.Vec, "l1": TileType.Mat, "cbuf": TileType.Mat, "l0a": TileType.Left,
        "l0b": TileType.Right, "l0c": TileType.Acc, "cc": TileType.Acc}


def elem_dtype(t: T.Type) -> DType:
    """Element type of an IR scalar type (f32, i8, ui16, ...)."""
    if isinstance(t, T.FloatType):
        return D.dtype(t.name)
    if isinstance(t, T.IntegerType):
        if t.width == 1:
            return D.i1
        return D.dtype(("ui" if t.signedness == "u" else "i") + str(t.width))
    if isinstance(t, T.IndexType):
        return D.i64
    raise PtoError(f"{t} is not an element type")


def tile_spec_of(t: T.Type) -> TileSpec | None:
    """The tile type of a ``!pto.tile_buf`` (or an on-chip ``memref``), else None."""
    if isinstance(t, T.TileBufType):
        loc = _LOC.get(t.loc)
        if loc is None:
            raise PtoError(f"unknown tile location '{t.loc}'")
        return tile_spec(loc, elem_dtype(t.dtype), t.rows, t.cols, t.blayout, t.v_row, t.v_col,
                         t.slayout, t.fractal, _PAD[t.pad] if 0 <= t.pad < 4 else PadValue.Null,
                         t.compact or 0, check_alignment=False)
    if isinstance(t, T.MemRefType) and len(t.shape) == 2 and None not in t.shape:
        space = memref_space(t)
        if space is None or space == "gm":
            return None
        loc = _LOC.get(space)
        if loc is None:
            return None
        rows, cols = t.shape  # type: ignore[misc]
        return tile_spec(loc, elem_dtype(t.dtype), rows, cols, check_alignment=False)
    return None


def memref_space(t: T.MemRefType) -> str | None:
    ms = t.memory_space
    if ms is None:
        return "gm"
    text = str(ms)
    m = re.search(r"address_space<\s*(\w+)\s*>", text) or re.search(r"(\w+)\s*>?\s*$", text)
    return m.group(1).lower() if m else None


def gm_spec_of(t: T.Type) -> GMSpec | None:
    """A GM view type for static checks (shape padded to 5-D; ``?`` dims count as 1)."""
    if isinstance(t, (T.PartitionTensorViewType, T.TensorViewType)) or (
            isinstance(t, T.MemRefType) and memref_space(t) == "gm"):
        shape = tuple(1 if d is None else d for d in t.shape)  # type: ignore[attr-defined]
        shape = (1,) * (5 - len(shape)) + shape[-5:]
        stride = [1] * 5
        for k in range(3, -1, -1):
            stride[k] = stride[k + 1] * shape[k + 1]
        return gm_spec(elem_dtype(t.dtype), shape, tuple(stride),  # type: ignore[attr-defined]
                       Layout.ND)
    return None


def operand_type(t: T.Type) -> Any:
    """What the registry's static rules see for a value of IR type ``t``."""
    ts = tile_spec_of(t)
    if ts is not None:
        return ts
    gs = gm_spec_of(t)
    if gs is not None:
        return gs
    if isinstance(t, (T.IntegerType, T.FloatType, T.IndexType)):
        return elem_dtype(t)
    return None


def instr_of(op_name: str) -> Instr | None:
    """``pto.tmatmul.acc`` -> TMATMUL_ACC; None for ops that are not tile instructions."""
    if not op_name.startswith("pto."):
        return None
    return REGISTRY.get(op_name[4:].upper().replace(".", "_"))


@dataclass(frozen=True)
class Binding:
    """How an op's written values map onto an instruction's operands (C++ order)."""

    instr: Instr
    values: tuple[Value | None, ...]  # per instruction operand (None: omitted optional)
    from_result: tuple[bool, ...]  # operand is an SSA result of the op (a new tile)
    params: dict[str, Any]


def _norm(name: str) -> str:
    return name.replace("_", "").lower()


def attr_value(a: A.Attribute) -> Any:
    if isinstance(a, A.IntegerAttr):
        return a.value
    if isinstance(a, A.FloatAttr):
        return a.value
    if isinstance(a, A.BoolAttr):
        return a.value
    if isinstance(a, A.StringAttr):
        return a.value
    if isinstance(a, A.DialectAttr):
        return a.value
    if isinstance(a, A.UnitAttr):
        return True
    return str(a)


def bind(op: Op, instr: Instr) -> Binding:
    """Map the op's operands/results onto ``instr``'s operands; VerifyError when they do not
    fit. Outputs (role out) take the DPS ``outs`` (or the SSA results) in order; every other
    operand takes the next ``ins`` value."""
    outs_written: list[tuple[Value, bool]]
    if op.form == "dps":
        ins = list(op.ins) + list(op.extra_operands)
        outs_written = [(v, False) for v in op.outs]
    else:
        ins = list(op.operands)
        outs_written = [(v, True) for v in op.results]
    out_ops = [o for o in instr.operands if o.role == "out"]
    in_ops = [o for o in instr.operands if o.role != "out"]
    need_in = sum(1 for o in in_ops if not o.optional)
    if len(outs_written) != len(out_ops) or not need_in <= len(ins) <= len(in_ops):
        want_in = ", ".join(o.name + ("?" if o.optional else "") for o in in_ops) or "none"
        want_out = ", ".join(o.name for o in out_ops) or "none"
        raise VerifyError(
            f"expects ins ({want_in}) and outs ({want_out}); got {len(ins)} ins and "
            f"{len(outs_written)} outs", op=op.name, loc=op.loc)
    vals: list[Value | None] = []
    from_res: list[bool] = []
    it_in = iter(ins)
    it_out = iter(outs_written)
    for o in instr.operands:
        if o.role == "out":
            v, r = next(it_out)
            vals.append(v)
            from_res.append(r)
        else:
            vals.append(next(it_in, None))
            from_res.append(False)
    params: dict[str, Any] = {}
    by_norm = {_norm(p.name): p.name for p in instr.params}
    for key, a in op.attributes.items:
        name = by_norm.get(_norm(key))
        if name is not None:
            params[name] = attr_value(a)
    try:
        full = instr.resolve_params(params)
    except PtoError as e:
        raise VerifyError(e.message, op=op.name, loc=op.loc) from None
    return Binding(instr, tuple(vals), tuple(from_res), full)


def check_op(op: Op, target: str) -> Binding | None:
    """Static legality of one ``pto.*`` op for ``target`` (VerifyError with the op's
    location). Returns the binding, or None when the op is not a tile instruction."""
    instr = instr_of(op.name)
    if instr is None:
        return None
    b = bind(op, instr)
    types = {o.name: (operand_type(v.type) if v is not None else None)
             for o, v in zip(instr.operands, b.values, strict=True)}
    try:
        instr.check_types(target, types, b.params)
    except PtoError as e:
        raise VerifyError(e.message, op=e.op or instr.mnemonic, loc=op.loc) from None
    return b

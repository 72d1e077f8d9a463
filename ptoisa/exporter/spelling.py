"""How the exporter spells Python-side things in the IR: PTOAS op names, element and tile
types, enum attributes, custom-syntax pieces; and the index expressions of
:class:`ptoisa.symbolic.SymInt` as structural keys and linear forms."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .. import symbolic as S
from ..enums import PadValue, TileType
from ..ir import attrs as A
from ..ir import types as T
from ..ir.core import Op, Piece
from ..isa import REGISTRY
from ..isa.registry import PIPE_SYNC, Instr, ptoas_op
from ..isa.spelling import CMP_MODE
from ..symbolic import SymInt
from ..tile import Tile

#: by the entry's sync kind: the flags between pipes and the barriers are exported as written
#: (manual synchronisation, ``PIPE_SYNC``); a wait for Events has no op (Events are not
#: exported); these are not exported yet
_SYNC_SKIPPED = "events"
_SYNC_NOT_EXPORTED = frozenset({"pipe", "signal", "all_cores"})
#: the ops written for them (``pto.set_flag``, ``pto.wait_flag``, ``pto.barrier``)
_SYNC_OPS = frozenset(ptoas_op(ins) for ins in REGISTRY.values() if ins.sync in PIPE_SYNC)
_LOC_NAMES = {TileType.Vec: "vec", TileType.Mat: "mat", TileType.Left: "left",
              TileType.Right: "right", TileType.Acc: "acc", TileType.Bias: "bias",
              TileType.Scaling: "scaling"}
_PADS = ("Null", "Zero", "Max", "Min")
#: PTOAS spellings of enum attributes (PTOOps.td; the corpus), else a string attribute: the
#: compare modes as the entries declare them (isa/spelling.py's CMP_MODE)
_CMP_WORDS = {mode.name: word for word, mode in CMP_MODE.values.items()}


def _snake(name: str) -> str:
    return "".join("_" + c.lower() if c.isupper() and k else c.lower()
                   for k, c in enumerate(name))


_ENUM_ATTR: dict[str, Callable[[Any], A.Attribute]] = {
    "maskPattern": lambda v: A.DialectAttr("pto.mask_pattern", v.name),
    "rmode": lambda v: A.DialectAttr("pto", f"round_mode {v.name.removeprefix('CAST_')}"),
    "sat_mode": lambda v: A.DialectAttr("pto", f"saturation_mode {v.name}"),
    "cmpMode": lambda v: A.DialectAttr("pto", f"cmp {_CMP_WORDS[v.name]}"),
    "reluPreMode": lambda v: A.DialectAttr("pto", f"relu_pre_mode {_snake(v.name)}"),
    "atomicType": lambda v: A.DialectAttr("pto", f"atomic_type {_snake(v.name)}"),
}
_ARITH = {"add": "arith.addi", "sub": "arith.subi", "mul": "arith.muli", "min": "arith.minsi",
          "max": "arith.maxsi"}

#: scalar operands that are values of the tile's element type (the others are counts)
_VALUE_SCALARS = frozenset({"scalar", "deqScale", "preQuantScalar", "cmpValue"})

#: longest op sequence the rerolling looks for as a loop body
_MAX_PERIOD = 32
#: fewest repetitions that become a loop (two stay as written: a loop would not be shorter)
_MIN_TRIPS = 3

_COLON = Piece("p", ":")
_COMMA = Piece("p", ",")
_EQ = Piece("p", "=")


def sync_op(ins: Instr, values: list[Any]) -> Op:
    """``pto.set_flag[<PIPE_MTE2>, <PIPE_V>, <EVENT_ID0>]`` / ``pto.wait_flag[...]`` /
    ``pto.barrier <PIPE_V>`` for SET_FLAG / WAIT_FLAG / PIPE_BARRIER."""
    from ..isa.sync.flags import _event_id
    from ..memory import current

    if ins.sync == "barrier":
        return Op(ptoas_op(ins), form="custom",
                  syntax=(Piece("a", A.DialectAttr("", values[0].value)),))
    src, dst, eid = values[:3]
    if isinstance(eid, SymInt):
        raise S.fail(f"{ins.mnemonic}: an event id that depends on the block index or a "
                     "pto.range index is not exported yet")
    items = (src.value, dst.value, f"EVENT_ID{_event_id(ins, current(), eid)}")
    syntax: list[Piece] = [Piece("p", "[")]
    for k, item in enumerate(items):
        if k:
            syntax.append(_COMMA)
        syntax.append(Piece("a", A.DialectAttr("", item)))
    syntax.append(Piece("p", "]"))
    return Op(ptoas_op(ins), form="custom", syntax=tuple(syntax))


def op_name(ins: Instr) -> str:
    """The PTOAS op of an instruction: ``pto.tadd``, or the op its entry declares
    (``ptoas=Ptoas(op=...)``: ``pto.tmatmul.acc``, ``pto.tmov.fp``)."""
    return ptoas_op(ins)


def ir_elem_type(name: str) -> T.Type:
    """The IR element type of a ptoisa dtype name (f32, ui8, i1, f8E4M3, ...)."""
    if name.startswith("ui") and name[2:].isdigit():
        return T.intern(T.IntegerType(int(name[2:]), "u"))
    if name.startswith("i") and name[1:].isdigit():
        return T.intern(T.IntegerType(int(name[1:])))
    return T.intern(T.FloatType(name))


def tile_type(tile: Tile) -> T.TileBufType:
    s = tile.spec
    pad = next((k for k, n in enumerate(_PADS) if s.pad == getattr(PadValue, n)), None)
    if pad is None:
        raise S.fail(f"tile pad {s.pad} has no tile_buf spelling (null, zero, max, min)")
    compact = None if s.compact.value == 0 else int(s.compact.value)
    return T.intern(T.TileBufType(
        _LOC_NAMES.get(s.loc) or _no_loc(s.loc), ir_elem_type(s.dtype.name), s.rows, s.cols,
        s.valid_row, s.valid_col, s.blayout.value, s.slayout.value, s.fractal, pad, compact))


def _no_loc(loc: TileType) -> str:
    raise S.fail(f"a {loc.name} tile has no tile_buf location in PTOAS")


def _key(x: Any) -> Any:
    """A structural key of an index expression (equal expressions share one SSA value)."""
    if isinstance(x, SymInt):
        n = x.node
        if n[0] == "block":
            return ("block",)
        if n[0] == "iv":
            return ("iv", id(n[1]))
        return (n[0], _key(n[1]), _key(n[2]))
    return ("c", int(x))


def _has_iv(x: Any) -> bool:
    if not isinstance(x, SymInt):
        return False
    n = x.node
    if n[0] == "iv":
        return True
    return n[0] != "block" and (_has_iv(n[1]) or _has_iv(n[2]))


def _linear(x: Any) -> tuple[dict[Any, tuple[int, Any]], int]:
    """``x`` as sum(coef * atom) + const (atoms: the block index, loop indices and any
    non-linear sub-expression)."""
    if not isinstance(x, SymInt):
        return {}, int(x)
    n = x.node
    if n[0] in ("add", "sub"):
        (ta, ca), (tb, cb) = _linear(n[1]), _linear(n[2])
        sign = 1 if n[0] == "add" else -1
        out = dict(ta)
        for k, (c, atom) in tb.items():
            c0 = out.get(k, (0, atom))[0]
            out[k] = (c0 + sign * c, atom)
        return {k: v for k, v in out.items() if v[0]}, ca + sign * cb
    if n[0] == "mul" and not isinstance(n[2], SymInt):
        t, c = _linear(n[1])
        f = int(n[2])
        return {k: (v * f, a) for k, (v, a) in t.items()}, c * f
    if n[0] == "mul" and not isinstance(n[1], SymInt):
        t, c = _linear(n[2])
        f = int(n[1])
        return {k: (v * f, a) for k, (v, a) in t.items()}, c * f
    return {_key(x): (1, x)}, 0


def _rebuild(x: Any, add: int) -> Any:
    """``x + add`` written from ``x``'s linear form (the constants folded into one)."""
    terms, c = _linear(x)
    out: Any = 0
    for coef, atom in terms.values():
        out = out + atom * coef
    return out + (c + add)


def _const_order(op: Op) -> tuple[str, float]:
    t = op.results[0].type
    a = op.syntax[0].value
    return (str(t) if t != T.INDEX else "", getattr(a, "value", 0))


def _list(idx: Any) -> list[Piece]:
    out: list[Piece] = []
    for k, i in enumerate(idx):
        if k:
            out.append(_COMMA)
        out.append(Piece("v", i))
    return out


def _same(a: Any, b: Any) -> bool:
    try:
        return bool(a == b) and type(a) is type(b) or a is b
    except Exception:  # noqa: BLE001 - numpy arrays etc.
        return a is b

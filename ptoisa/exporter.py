"""Export an eager kernel to the ``.pto`` program PTOAS compiles: ``pto.export(kernel, *args)``.

The kernel runs once, as block 0 of a ``blocks``-block launch, on copies of its arguments,
with an observer on the machine's one dispatch point (:meth:`ptoisa.isa.registry.Instr.run`):
every instruction it executes becomes an op of a ``func.func`` in :mod:`ptoisa.ir`, printed
by :func:`ptoisa.text.print_module` in DPS form. How the Python kernel maps onto the program:

* **arguments**: every numpy array argument becomes a ``!pto.ptr<dtype>`` parameter named as
  the kernel's parameter; every other argument (ints, floats, options) is a Python value the
  trace specialises on: it is baked into the program and is not a parameter.
* **block index**: ``pto.get_block_idx()`` is a symbolic integer (:class:`ptoisa.symbolic.SymInt`)
  that becomes ``pto.get_block_idx`` + ``arith.index_cast``; ``+ - * // %`` with ints and
  ``pto.min`` / ``pto.max`` become ``arith`` ops (``divsi``/``remsi`` where the operands are
  known to be non-negative, else ``floordivsi``). ``pto.get_block_num()`` is the constant
  ``blocks``.
* **loops**: a loop over ``pto.range(...)`` becomes one ``scf.for``: its body is traced once
  with a symbolic loop index (so it must not branch on it). A loop over the built-in ``range``
  is unrolled by the trace (its index is a plain int: the body may branch on it, e.g.
  ``if k == 0`` to start an accumulation), and the exporter then rolls repeated code back:
  **a run of three or more repetitions of the same op sequence (same ops, tiles, attributes
  and view sizes) whose GM views differ only by a constant offset step per repetition becomes
  one ``scf.for``** over the repetitions, the views' offsets ``o + k * step``. Iterations that
  differ (the ``k == 0`` one) stay before the loop; offsets without a constant step stay
  unrolled.
* **tiles**: each Tile the kernel uses is a ``pto.alloc_tile`` at the top of the function
  (with ``addr`` when the kernel placed it with TASSIGN, ``valid_row``/``valid_col`` for
  dynamic valid extents, which may depend on the block index: ``Dyn(pto.min(8, n - row0))``).
* **GM views**: each GlobalTensor is a ``pto.partition_view`` of a ``pto.make_tensor_view``
  over its argument: its element offset (a sum of multiples of the block index, loop indices
  and constants) is split over the view's dimensions by their strides, and dimensions of
  extent 1 that take no offset are dropped (a ``(1, 1, 1, R, C)`` view is 2-D).
* **instructions** are written in DPS form (``ins(...) outs(...)``, C++ operand order,
  template parameters as attributes); every op is bound back through the same bridge the
  interpreter uses, so an instruction whose PTOAS spelling the exporter cannot produce is an
  error rather than a wrong program. Events and sync instructions (set/wait flags, barriers)
  are left out: PTOAS inserts the synchronisation.

What cannot be expressed is a located :class:`~ptoisa.symbolic.ExportError` at the kernel's
line: Python control flow on the block index or a ``pto.range`` index (``if``, ``min()``,
comparisons that differ between blocks), using them as Python ints, instructions that return
values to Python, GM views over arrays that are not kernel arguments, mixed cube/vector
kernels. Types are written once as aliases (``!T0 = !pto.tile_buf<...>``) at the top.

By default (``verify=True``) the exported program is checked for the target and run on the
example arguments, and its results must equal the eager kernel's bit for bit.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from . import symbolic as S
from .enums import Layout, PadValue, TileType
from .errors import PtoError
from .ir import attrs as A
from .ir import types as T
from .ir.core import Block, Module, Op, Piece, Region, Value
from .isa.registry import Event, Instr, InstrRecord
from .memory import Machine, pop, push
from .symbolic import ExportError, SymInt
from .tensor import GlobalTensor
from .tile import Dyn, Tile

__all__ = ["ExportError", "export"]

#: instructions the program leaves to PTOAS (synchronisation) or has no op for
_SKIP = frozenset({"SET_FLAG", "WAIT_FLAG", "PIPE_BARRIER", "TSYNC"})
_MIXED = frozenset({"TPUSH", "TPOP", "TFREE", "TNOTIFY", "TWAIT", "TTEST", "SYNCALL"})
_LOC_NAMES = {TileType.Vec: "vec", TileType.Mat: "mat", TileType.Left: "left",
              TileType.Right: "right", TileType.Acc: "acc", TileType.Bias: "bias",
              TileType.Scaling: "scaling"}
_PADS = ("Null", "Zero", "Max", "Min")
#: PTOAS spellings of enum attributes (PTOOps.td; the corpus), else a string attribute
_CMP_WORDS = {"EQ": "equal", "NE": "not_equal", "LT": "less_than", "LE": "less_equal",
              "GT": "greater_than", "GE": "greater_equal"}


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


def op_name(ins: Instr) -> str:
    """The PTOAS op of an instruction: ``pto.tadd``; the matmul/gemv variants and TMOV_FP are
    dotted (``pto.tmatmul.acc``, ``pto.tmov.fp``)."""
    m = ins.mnemonic
    if m.startswith(("tmatmul_", "tgemv_")) or m == "tmov_fp":
        m = m.replace("_", ".")
    return "pto." + m


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


class _Scope:
    def __init__(self) -> None:
        self.ops: list[Op] = []
        self.cache: dict[Any, Value] = {}


class _Loop:
    """One ``pto.range`` loop being traced."""

    def __init__(self, iv: Value) -> None:
        self.iv = iv
        self.named = False


class Tracer:
    """Builds the function while the kernel runs (see the module docstring)."""

    def __init__(self, fn_name: str, params: list[tuple[str, np.ndarray]], blocks: int) -> None:
        self.fn_name = fn_name
        self.blocks = blocks
        self.names: set[str] = set()
        self.args: list[tuple[Value, np.ndarray]] = []
        for name, arr in params:
            from .dtypes import dtype as to_dtype

            t = T.intern(T.PtrType(ir_elem_type(to_dtype(arr.dtype).name)))
            self.args.append((Value(self._name(name), t, owner="arg"), arr))
        self.consts: dict[tuple[Any, T.Type], Value] = {}
        self.const_ops: list[Op] = []
        self.header: list[Op] = []  # index arithmetic on the block index
        self.h_views: list[Op] = []  # make_tensor_view
        self.h_parts: list[Op] = []  # partition_view that do not depend on a loop index
        self.h_tiles: list[Op] = []  # alloc_tile
        self.header_cache: dict[Any, Value] = {}
        self.scopes: list[_Scope] = [_Scope()]
        self.tiles: dict[int, tuple[Tile, Value]] = {}
        self.tile_valid: dict[int, tuple[Tile, Any, Any]] = {}
        self.tile_addr: dict[int, int] = {}
        self.cur_valid: dict[int, tuple[Any, Any]] = {}
        #: id(partition value) -> how it was built (for rerolling repeated code into loops)
        self.pv_info: dict[int, tuple[Any, ...]] = {}
        self.gm_sym: dict[int, tuple[GlobalTensor, Any, Any, Any]] = {}
        self.views: dict[Any, Value] = {}
        self.loops: list[_Loop] = []
        self.error: PtoError | None = None

    # ---- names and constants --------------------------------------------------------------
    def _name(self, base: str) -> str:
        base = "".join(c if c.isalnum() or c == "_" else "_" for c in base) or "v"
        if base[0].isdigit():
            base = "v" + base
        name, k = base, 0
        while name in self.names:
            k += 1
            name = f"{base}_{k}"
        self.names.add(name)
        return name

    def const(self, v: Any, t: T.Type = T.INDEX) -> Value:
        key = (v, t)
        got = self.consts.get(key)
        if got is not None:
            return got
        if isinstance(v, str):  # an attribute written as is (dense<0>)
            attr: A.Attribute = A.OpaqueAttr(v)
            base = "cst"
        elif isinstance(t, T.FloatType):
            attr = A.FloatAttr(float(v))
            base = "cst"
        else:
            attr = A.IntegerAttr(int(v))
            base = f"c{int(v)}" if int(v) >= 0 else f"cm{-int(v)}"
            if t != T.INDEX:
                base += f"_{t}"
        val = Value(self._name(base), t)
        self.const_ops.append(Op("arith.constant", results=(val,),
                                 syntax=(Piece("a", attr), _COLON, Piece("t", t))))
        self.consts[key] = val
        return val

    # ---- index expressions ------------------------------------------------------------------
    def index(self, x: Any) -> Value:
        """The SSA value (index) of an int or SymInt, materialised where it can be shared."""
        if not isinstance(x, SymInt):
            return self.const(int(x))
        key = _key(x)
        if _has_iv(x):
            for sc in reversed(self.scopes):
                if key in sc.cache:
                    return sc.cache[key]
            ops, cache = self.scopes[-1].ops, self.scopes[-1].cache
        else:
            if key in self.header_cache:
                return self.header_cache[key]
            ops, cache = self.header, self.header_cache
        n = x.node
        if n[0] == "block":
            bid = Value(self._name("bid"), T.I64)
            ops.append(Op("pto.get_block_idx", results=(bid,)))
            v = Value(self._name(S.user_name(x) or "b"), T.INDEX)
            ops.append(Op("arith.index_cast", operands=(bid,), results=(v,), n_ins=1,
                          syntax=(Piece("v", 0), _COLON, Piece("t", T.I64), Piece("k", "to"),
                                  Piece("t", T.INDEX))))
        elif n[0] == "iv":
            v = n[1].iv
            if not n[1].named:  # the loop variable's name, at its first use
                n[1].named = True
                v.name = self._name(S.user_name(x) or "k")
        else:
            a, b = self.index(n[1]), self.index(n[2])
            op = n[0]
            a_nn = S._nonneg(n[1])
            b_pos = S._nonneg(n[2]) and (not isinstance(n[2], int) or isinstance(n[2], SymInt)
                                         or int(n[2]) > 0)
            if op == "floordiv":
                name = "arith.divsi" if a_nn and b_pos else "arith.floordivsi"
            elif op == "mod":
                if not (a_nn and b_pos):
                    raise S.fail("% of a possibly negative index: write it so that both "
                                 "operands are non-negative")
                name = "arith.remsi"
            else:
                name = _ARITH[op]
            v = Value(self._name(S.user_name(x) or "idx"), T.INDEX)
            ops.append(Op(name, operands=(a, b), results=(v,), n_ins=2,
                          syntax=(Piece("v", 0), _COMMA, Piece("v", 1), _COLON,
                                  Piece("t", T.INDEX))))
        cache[key] = v
        return v

    # ---- loops ------------------------------------------------------------------------------
    def loop(self, args: tuple[Any, ...]) -> Iterator[Any]:
        if not 1 <= len(args) <= 3:
            raise S.fail(f"pto.range takes 1 to 3 arguments, got {len(args)}")
        start, stop, step = (0, args[0], 1) if len(args) == 1 else (*args, 1)[:3]
        if isinstance(step, SymInt) or int(step) <= 0:
            raise S.fail("pto.range: the step must be a positive constant")
        if not any(isinstance(a, SymInt) for a in (start, stop)) and \
                int(start) >= int(stop):
            return  # an empty loop: nothing to trace
        lb, ub, st = self.index(start), self.index(stop), self.index(step)
        iv = Value("k?", T.INDEX, owner="arg")
        lp = _Loop(iv)
        sym = SymInt(S.concrete(start), ("iv", lp), None, S._nonneg(start))
        self.loops.append(lp)
        self.scopes.append(_Scope())
        done = False
        try:
            yield sym
            done = True
        finally:
            if done:
                self.scopes[-1].ops[:] = self.reroll(self.scopes[-1].ops)
            body = self.scopes.pop()
            self.loops.pop()
            if not lp.named:
                lp.named = True
                iv.name = self._name("k")
            self.scopes[-1].ops.append(Op(
                "scf.for", operands=(lb, ub, st), form="for",
                regions=(Region((Block(tuple(body.ops), (iv,)),)),)))
            if not done and self.error is None:
                self.error = S.fail("a pto.range loop left early (break/return): its body "
                                    "must run to the end")

    # ---- tiles and GM views -----------------------------------------------------------------
    def note_tile(self, tile: Tile, valid: Any) -> Any:
        """Tile construction hook: keep symbolic valid extents, hand the tile concrete ones."""
        if valid is None:
            return valid
        vr, vc = valid

        def conc(x: Any) -> Any:
            if isinstance(x, Dyn) and isinstance(x.value, SymInt):
                return Dyn(S.concrete(x.value))
            if isinstance(x, SymInt):
                raise S.fail("a static valid extent cannot depend on the block index: write "
                             "pto.Dyn(n) for a dynamic one")
            return x

        if any(isinstance(x, Dyn) and isinstance(x.value, SymInt) for x in (vr, vc)):
            self.tile_valid[id(tile)] = (tile,
                                         vr.value if isinstance(vr, Dyn) else None,
                                         vc.value if isinstance(vc, Dyn) else None)
        return (conc(vr), conc(vc))

    def note_gm(self, gt: GlobalTensor, shape: Any, stride: Any, offset: Any
                ) -> tuple[Any, Any, Any]:
        """GlobalTensor construction hook: keep symbolic shape/offset, hand it concrete ones."""
        def conc(x: Any) -> Any:
            return S.concrete(x) if isinstance(x, SymInt) else x

        syms = isinstance(offset, SymInt) or (
            shape is not None and any(isinstance(s, SymInt) for s in shape))
        if stride is not None and any(isinstance(s, SymInt) for s in stride):
            raise S.fail("GlobalTensor strides cannot depend on the block index")
        if not syms:
            return shape, stride, offset
        self.gm_sym[id(gt)] = (gt, shape, stride, offset)
        return (None if shape is None else tuple(conc(s) for s in shape), stride, conc(offset))

    def note_set_valid(self, tile: Tile, rows: Any, cols: Any) -> tuple[Any, Any]:
        """Tile.set_valid hook (SetValidShape from Python): a ``pto.set_validshape`` when the
        tile is already in the program, else the valid extents its alloc_tile will take."""
        if _has_iv(rows) or _has_iv(cols):
            raise S.fail("a valid shape that depends on a pto.range index is not exported")

        def conc(x: Any) -> Any:
            return S.concrete(x) if isinstance(x, SymInt) else x

        got = self.tiles.get(id(tile))
        if got is None:
            old = self.tile_valid.get(id(tile), (tile, None, None))
            self.tile_valid[id(tile)] = (
                tile, rows if isinstance(rows, SymInt) else (None if rows is not None
                                                             else old[1]),
                cols if isinstance(cols, SymInt) else (None if cols is not None else old[2]))
            return conc(rows), conc(cols)
        r = rows if rows is not None else self.cur_valid[id(tile)][0]
        c = cols if cols is not None else self.cur_valid[id(tile)][1]
        ops = self.scopes[-1].ops
        operands = (got[1], self.index(r), self.index(c))
        ops.append(Op("pto.set_validshape", operands=operands, n_ins=3,
                      syntax=(Piece("v", 0), _COMMA, Piece("v", 1), _COMMA, Piece("v", 2),
                              _COLON, Piece("t", got[1].type))))
        self.cur_valid[id(tile)] = (r, c)
        return conc(rows), conc(cols)

    def note_tile_access(self, tile: Tile, what: str) -> None:
        """Tile.numpy / load_numpy hook: an error when the kernel (not ptoisa) calls it."""
        if S.called_from_user():
            raise S.fail(f"the kernel {what}, which the exported program cannot do")

    def tile_value(self, tile: Tile) -> Value:
        got = self.tiles.get(id(tile))
        if got is not None:
            return got[1]
        ty = tile_type(tile)
        v = Value(self._name(tile.name or S.user_name(tile) or "t"), ty)
        pieces: list[Piece] = []
        operands: list[Value] = []
        addr = self.tile_addr.get(id(tile))
        if addr is not None:
            operands.append(self.const(addr))
            pieces += [Piece("k", "addr"), _EQ, Piece("v", len(operands) - 1)]
        sym = self.tile_valid.get(id(tile))
        for k, (key, static) in enumerate((("valid_row", ty.v_row), ("valid_col", ty.v_col))):
            if static is not None:
                continue
            x = sym[1 + k] if sym is not None else None
            if x is None or S.concrete(x) != (tile._vr, tile._vc)[k]:
                x = (tile._vr, tile._vc)[k]
            if _has_iv(x):
                raise S.fail("a tile's dynamic valid extent cannot depend on a pto.range index")
            operands.append(self.index(x))
            pieces += [Piece("k", key), _EQ, Piece("v", len(operands) - 1)]
        pieces += [_COLON, Piece("t", ty)]
        self.h_tiles.append(Op("pto.alloc_tile", operands=tuple(operands), results=(v,),
                              n_ins=len(operands), syntax=tuple(pieces)))
        self.tiles[id(tile)] = (tile, v)
        self.cur_valid[id(tile)] = (tile._vr, tile._vc)
        return v

    def _arg_of(self, gt: GlobalTensor) -> tuple[Value, int]:
        flat = gt.flat
        for v, arr in self.args:
            if np.shares_memory(arr, flat):
                if arr.dtype != flat.dtype:
                    raise S.fail(f"GlobalTensor reads argument %{v.name} ({arr.dtype}) as "
                                 f"{flat.dtype}: reinterpreting a GM argument is not exported")
                d = flat.__array_interface__["data"][0] - arr.__array_interface__["data"][0]
                return v, d // arr.itemsize
        raise S.fail("GlobalTensor over an array that is not an argument of the kernel: only "
                     "kernel arguments are GM in the exported program")

    def view_value(self, gt: GlobalTensor) -> Value:
        arg, base = self._arg_of(gt)
        sym = self.gm_sym.get(id(gt))
        shape: list[Any] = list(gt.spec.shape)
        stride = list(gt.spec.stride)
        offset: Any = gt.offset
        if sym is not None:
            _, sshape, _, soffset = sym
            if sshape is not None:
                sshape = list(sshape)
                shape = [1] * (5 - len(sshape)) + sshape
            offset = soffset
        offset = offset + base if base else offset
        terms, c = _linear(offset)
        offs: list[Any] = [0] * 5
        kept = [d for d in range(5) if not (not isinstance(shape[d], SymInt) and shape[d] == 1)]
        by_stride = sorted((d for d in range(5) if stride[d] > 0),
                           key=lambda d: (d not in kept, -stride[d]))
        for coef, atom in terms.values():
            d = next((d for d in by_stride if coef % stride[d] == 0), None)
            if d is None:
                raise S.fail(f"GM offset term {coef} * (index) is not a multiple of any stride "
                             f"{tuple(stride)} of the GlobalTensor")
            offs[d] = offs[d] + atom * (coef // stride[d])
        for d in by_stride:
            if c <= 0 and c == 0:
                break
            q = c // stride[d]
            if q:
                offs[d] = offs[d] + q
                c -= q * stride[d]
        if c:
            raise S.fail(f"GM offset {c} cannot be split over the strides {tuple(stride)}")
        used = [d for d in range(5) if d in kept or
                isinstance(offs[d], SymInt) or offs[d] != 0] or [4]
        dt = ir_elem_type(gt.dtype.name)
        total = self._arg_size(arg) - base
        ext: list[int] = []
        for d in used:  # up to the next larger stride that it divides, else the whole array
            outer = [stride[e] // stride[d] for e in used
                     if stride[d] and stride[e] > stride[d] and stride[e] % stride[d] == 0]
            ext.append(min(outer) if outer else -(-max(total, 1) // max(stride[d], 1)))
        layout = gt.spec.layout
        vkey = (arg.name, base, tuple(stride[d] for d in used), tuple(ext), dt, layout)
        tv = self.views.get(vkey)
        tv_type = T.intern(T.TensorViewType((None,) * len(used), dt))
        if tv is None:
            operands = [arg] + [self.const(e) for e in ext] + [self.const(stride[d])
                                                                for d in used]
            n = len(used)
            pieces = [Piece("v", 0), _COMMA, Piece("k", "shape"), _EQ, Piece("p", "[")]
            pieces += _list(range(1, n + 1))
            pieces += [Piece("p", "]"), _COMMA, Piece("k", "strides"), _EQ, Piece("p", "[")]
            pieces += _list(range(n + 1, 2 * n + 1))
            pieces += [Piece("p", "]"), _COLON, Piece("t", tv_type)]
            attrs = A.DictAttr(()) if layout is Layout.ND else A.DictAttr(
                (("layout", A.DialectAttr("pto.layout", layout.name.lower())),))
            if attrs.items:
                pieces.insert(-2, Piece("d", ("layout",)))
            tv = Value(self._name("v" + arg.name), tv_type)
            self.h_views.append(Op("pto.make_tensor_view", operands=tuple(operands),
                                  results=(tv,), n_ins=len(operands), syntax=tuple(pieces),
                                  attributes=attrs))
            self.views[vkey] = tv
        return self.partition(tv, tv_type, [offs[d] for d in used],
                              [shape[d] for d in used], dt,
                              S.user_name(gt) or "p" + arg.name)

    def partition(self, tv: Value, tv_type: T.Type, offs: list[Any], sizes: list[Any],
                  dt: T.Type, hint: str) -> Value:
        """A ``pto.partition_view`` of ``tv`` (shared when the same one exists in scope)."""
        pkey = ("pv", id(tv), tuple(_key(o) for o in offs), tuple(_key(x) for x in sizes))
        scope_ops, cache = self._scope_for(offs + sizes)
        if scope_ops is self.header:
            scope_ops = self.h_parts
        got = cache.get(pkey)
        if got is not None:
            return got
        operands = [tv] + [self.index(o) for o in offs] + [self.index(x) for x in sizes]
        n = len(offs)
        pt = T.intern(T.PartitionTensorViewType(
            tuple(None if isinstance(x, SymInt) else int(x) for x in sizes), dt))
        pieces = [Piece("v", 0), _COMMA, Piece("k", "offsets"), _EQ, Piece("p", "[")]
        pieces += _list(range(1, n + 1))
        pieces += [Piece("p", "]"), _COMMA, Piece("k", "sizes"), _EQ, Piece("p", "[")]
        pieces += _list(range(n + 1, 2 * n + 1))
        pieces += [Piece("p", "]"), _COLON, Piece("t", tv_type), Piece("p", "->"),
                   Piece("t", pt)]
        pv = Value(self._name(hint), pt)
        scope_ops.append(Op("pto.partition_view", operands=tuple(operands), results=(pv,),
                            n_ins=len(operands), syntax=tuple(pieces)))
        cache[pkey] = pv
        self.pv_info[id(pv)] = (pv, tv, tv_type, offs, sizes, dt, hint)
        return pv

    def _scope_for(self, xs: list[Any]) -> tuple[list[Op], dict[Any, Value]]:
        if any(_has_iv(x) for x in xs):
            return self.scopes[-1].ops, self.scopes[-1].cache
        return self.header, self.header_cache

    def _arg_size(self, arg: Value) -> int:
        return next(a.size for v, a in self.args if v is arg)

    # ---- instructions -----------------------------------------------------------------------
    def observe(self, rec: InstrRecord) -> None:
        if self.error is not None:
            return
        try:
            self._observe(rec)
        except PtoError as e:
            self.error = e

    def _observe(self, rec: InstrRecord) -> None:
        ins = rec.instr
        if ins.name in _SKIP:
            return
        if ins.name in _MIXED:
            raise S.fail(f"{ins.mnemonic}: mixed cube + vector kernels (TPUSH/TPOP pipes, "
                         "cross-core flags) are not exported yet; write their .pto by hand "
                         "(see examples/mixed_attention.pto)")
        if ins.name == "TASSIGN":
            obj, addr = rec.values[0], rec.values[1]
            if not isinstance(obj, Tile):
                raise S.fail("TASSIGN of a GlobalTensor is not exported")
            if id(obj) in self.tiles and self.tile_addr.get(id(obj)) != int(addr):
                raise S.fail("TASSIGN of a tile already used: place tiles before their first use")
            self.tile_addr[id(obj)] = int(addr)
            return
        if not ins.returns_event:
            raise S.fail(f"{ins.mnemonic} returns a value to Python, which the exported program "
                         "cannot do")
        op = self.instr_op(ins, rec.values, rec.params)
        self.scopes[-1].ops.append(op)

    def operand(self, ins: Instr, v: Any, tiles: list[Any], oname: str = ""
                ) -> tuple[Value, T.Type]:
        """The SSA value of one operand. Scalars: an element of the tile's type for the
        value operands of ``*S`` instructions (``scalar``), ``index`` for positions
        (``indexRow``, ``posM``, ...), else ``i32`` for ints."""
        if isinstance(v, Tile):
            val = self.tile_value(v)
            return val, val.type
        if isinstance(v, GlobalTensor):
            val = self.view_value(v)
            return val, val.type
        positional = oname.startswith(("index", "pos")) or oname.endswith("Idx")
        if positional and S._is_int(v):
            return self.index(v), T.INDEX
        if isinstance(v, SymInt):
            raise S.fail(f"{ins.mnemonic}: operand '{oname}' that depends on the block index "
                         "is not exported yet")
        if type(v).__name__ == "MrgSortExecutedNumList":
            t = T.intern(T.OpaqueType("vector<4xi16>"))
            vals = v.as_tuple()
            dense = f"dense<{vals[0]}>" if len(set(vals)) == 1 else \
                f"dense<[{', '.join(map(str, vals))}]>"
            return self.const(dense, t), t
        if isinstance(v, (bool, np.bool_)):
            t = T.I1
            return self.const(int(v), t), t
        if isinstance(v, (int, float, np.integer, np.floating)):
            ref = next((x for x in tiles if isinstance(x, (Tile, GlobalTensor))), None)
            if isinstance(v, np.generic):
                from .dtypes import dtype as to_dtype

                et = ir_elem_type(to_dtype(v.dtype).name)
            elif ref is not None and (oname in _VALUE_SCALARS or isinstance(v, float)):
                et = ir_elem_type(ref.dtype.name)
            else:
                et = T.I32 if isinstance(v, int) else T.intern(T.FloatType("f32"))
            if isinstance(et, T.FloatType):
                return self.const(float(v), et), et
            if isinstance(et, T.IntegerType):  # arith constants are signless
                et = T.intern(T.IntegerType(et.width))
            if isinstance(v, float):
                raise S.fail(f"{ins.mnemonic}: float scalar for an integer tile")
            return self.const(int(v), et), et
        raise S.fail(f"{ins.mnemonic}: operand of type {type(v).__name__} is not exported")

    def instr_op(self, ins: Instr, values: list[Any], params: dict[str, Any]) -> Op:
        from .interp import bridge

        ins_v: list[Value] = []
        ins_t: list[T.Type] = []
        outs_v: list[Value] = []
        outs_t: list[T.Type] = []
        attrs: list[tuple[str, A.Attribute]] = []
        expect: list[Any] = []
        for o, v in zip(ins.operands, values, strict=False):
            if v is None or isinstance(v, Event):
                expect.append(None)
                continue
            if o.kind == "enum":
                key = self.attr_name(ins, o.name)
                attrs.append((key, self.enum_attr(key, v)))
                expect.append(("const", v))
                continue
            val, t = self.operand(ins, v, values, o.name)
            expect.append(val)
            if o.role in ("out", "inout"):
                outs_v.append(val)
                outs_t.append(t)
            else:
                ins_v.append(val)
                ins_t.append(t)
        expect += [None] * (len(ins.operands) - len(expect))
        order = self.written_order(ins, values, expect)
        if order is not None:
            ins_v, ins_t, outs_v, outs_t = order
        defaults = {p.name: p.default for p in ins.params}
        for k, v in params.items():
            if k in defaults and _same(defaults[k], v):
                continue
            key = self.attr_name(ins, k)
            attrs.append((key, self.enum_attr(key, v)))
        name = op_name(ins)
        op = Op(name, operands=tuple(ins_v + outs_v), attributes=A.DictAttr(tuple(attrs)),
                form="dps", n_ins=len(ins_v), n_outs=len(outs_v),
                operand_types=tuple(ins_t + outs_t))
        try:
            b = bridge.bind(op, ins)
        except PtoError as e:
            raise S.fail(f"{ins.mnemonic} cannot be exported yet (its PTOAS spelling differs "
                         f"from the C++ operand order: {e.message})") from None
        for o, want, got in zip(ins.operands, expect, b.values, strict=True):
            if isinstance(want, tuple):
                ok = isinstance(got, bridge.Const) and _same(got.value, want[1])
            else:
                ok = got is want
            if not ok:
                raise S.fail(f"{ins.mnemonic} cannot be exported yet: its PTOAS spelling does "
                             f"not map operand '{o.name}' back onto itself")
        for k, v in params.items():
            if not _same(b.params.get(k), v):
                raise S.fail(f"{ins.mnemonic} cannot be exported yet: template parameter {k} = "
                             f"{v!r} does not survive its PTOAS spelling")
        return op

    def written_order(self, ins: Instr, values: list[Any], expect: list[Any]) -> Any:
        """ins/outs in the order of the op's PTOAS spelling (:mod:`ptoisa.interp.forms`) when
        it lists one for exactly the operands given, else None (C++ order)."""
        from .interp import forms

        have = {o.name: (v, v.type) for o, v in zip(ins.operands, expect, strict=True)
                if isinstance(v, Value)}
        for f in forms.forms_of(op_name(ins)):
            names = [n for n in (*f.ins, *f.outs)]
            if f.segments or f.attr_operands or any("*" in n or n == "-" for n in names):
                continue
            if set(names) != set(have) or len(names) != len(have):
                continue
            return ([have[n][0] for n in f.ins], [have[n][1] for n in f.ins],
                    [have[n][0] for n in f.outs], [have[n][1] for n in f.outs])
        return None

    def attr_name(self, ins: Instr, param: str) -> str:
        from .interp import forms

        for key, spec in forms.ATTRS.get("pto." + ins.mnemonic, {}).items():
            if spec.to == param:
                return key
        return param

    def enum_attr(self, name: str, v: Any) -> A.Attribute:
        import enum

        if isinstance(v, enum.Enum):
            mk = _ENUM_ATTR.get(name)
            return mk(v) if mk is not None else A.StringAttr(v.name)
        if isinstance(v, (bool, np.bool_)):
            return A.BoolAttr(bool(v))
        if isinstance(v, (int, np.integer)):
            return A.IntegerAttr(int(v))
        if isinstance(v, (float, np.floating)):
            return A.FloatAttr(float(v))
        raise S.fail(f"template parameter {name} = {v!r} has no attribute spelling")

    # ---- rerolling: repeated code back into loops ---------------------------------------------
    def reroll(self, ops: list[Op]) -> list[Op]:
        """Each run of >= 3 repetitions of the same op sequence whose GM views differ by a
        constant offset step per repetition (a Python ``range`` loop the trace unrolled)
        becomes one ``scf.for``; at each position the run covering the most ops wins."""
        out: list[Op] = []
        i, total = 0, len(ops)
        while i < total:
            best: tuple[int, int, int, list[Any]] | None = None
            for p in range(1, min(_MAX_PERIOD, (total - i) // 2) + 1):
                n, steps = self._repeats(ops, i, p)
                if n >= _MIN_TRIPS and (best is None or p * n > best[0]):
                    best = (p * n, p, n, steps)
            if best is None:
                out.append(ops[i])
                i += 1
                continue
            _, p, n, steps = best
            out.append(self._loop_of(ops[i:i + p], n, steps))
            i += p * n
        return out

    def _repeats(self, ops: list[Op], i: int, p: int) -> tuple[int, list[Any]]:
        """How many times ops[i:i+p] repeats from i with a constant step, and the steps."""
        first = ops[i:i + p]
        steps: list[Any] = []
        for a, b in zip(first, ops[i + p:i + 2 * p], strict=False):
            d = self._delta(a, b)
            if d is None:
                return 1, []
            steps.append(d)
        if len(steps) < p or not any(x for st in steps for x in st if x):
            return 1, []
        n = 2
        while i + (n + 1) * p <= len(ops):
            rep = ops[i + n * p:i + (n + 1) * p]
            ok = True
            for a, b, st in zip(first, rep, steps, strict=True):
                d = self._delta(a, b)
                if d is None or any((x or 0) * n != (y or 0) for x, y in zip(st, d, strict=True)
                                    if not isinstance(x, tuple)) or any(
                        tuple(n * c for c in x) != y for x, y in zip(st, d, strict=True)
                        if isinstance(x, tuple)):
                    ok = False
                    break
            if not ok:
                break
            n += 1
        return n, steps

    def _delta(self, a: Op, b: Op) -> list[Any] | None:
        """Per operand of two ops of the same shape: 0 when it is the same value, the offset
        step per dimension when both are partition views of one tensor view differing by
        constants; None when the ops differ otherwise."""
        if a.name != b.name or a.form != b.form or a.regions or b.regions or \
                len(a.operands) != len(b.operands) or a.attributes != b.attributes or \
                a.operand_types != b.operand_types or a.syntax != b.syntax or a.results:
            return None
        if a.form != "dps" and a.name != "pto.set_validshape":
            return None
        out: list[Any] = []
        for x, y in zip(a.operands, b.operands, strict=True):
            if x is y:
                out.append(0)
                continue
            ix, iy = self.pv_info.get(id(x)), self.pv_info.get(id(y))
            if ix is None or iy is None or ix[1] is not iy[1] or \
                    [_key(s) for s in ix[4]] != [_key(s) for s in iy[4]]:
                return None
            d: list[int] = []
            for ox, oy in zip(ix[3], iy[3], strict=True):
                (tx, cx), (ty, cy) = _linear(ox), _linear(oy)
                if {k: v[0] for k, v in tx.items()} != {k: v[0] for k, v in ty.items()}:
                    return None
                d.append(cy - cx)
            out.append(tuple(d))
        return out

    def _loop_of(self, body: list[Op], n: int, steps: list[Any]) -> Op:
        import dataclasses

        # start the loop at m when every stepped offset is m * step + rest (then the views'
        # offsets are rest + k * step: the loop index is the written one, e.g. 1 to 8)
        starts = set()
        for op, st in zip(body, steps, strict=True):
            for v, d in zip(op.operands, st, strict=True):
                if isinstance(d, tuple):
                    for o, c in zip(self.pv_info[id(v)][3], d, strict=True):
                        if c:
                            c0 = _linear(o)[1]
                            starts.add(c0 // c if c0 % c == 0 else None)
        m = starts.pop() if len(starts) == 1 and None not in starts else 0
        m = m if m >= 0 else 0
        iv = Value("k?", T.INDEX, owner="arg")
        lp = _Loop(iv)
        k = SymInt(m, ("iv", lp), None, True)
        self.scopes.append(_Scope())
        try:
            for op, st in zip(body, steps, strict=True):
                operands = list(op.operands)
                for j, d in enumerate(st):
                    if not isinstance(d, tuple):
                        continue
                    _, tv, tv_type, offs, sizes, dt, hint = self.pv_info[id(operands[j])]
                    new = [_rebuild(o, -m * c) + k * c if c else o
                           for o, c in zip(offs, d, strict=True)]
                    operands[j] = self.partition(tv, tv_type, new, sizes, dt, hint)
                self.scopes[-1].ops.append(dataclasses.replace(op, operands=tuple(operands)))
        finally:
            scope = self.scopes.pop()
        if not lp.named:
            iv.name = self._name("k")
        return Op("scf.for", operands=(self.const(m), self.const(m + n), self.const(1)),
                  form="for",
                  regions=(Region((Block(tuple(scope.ops), (iv,)),)),))

    def _dead_code(self, prologue: list[Op], rest: list[Op]) -> list[Op]:
        """``prologue`` without the ops whose results nothing uses (views and index
        arithmetic left over from unrolled iterations)."""
        keep = list(prologue)
        while True:
            used: set[int] = set()
            for op in keep + rest:
                for o in op.walk():
                    used.update(id(v) for v in o.operands)
            kept = [op for op in keep if not op.results
                    or any(id(r) in used for r in op.results)
                    or op.name == "pto.alloc_tile"]
            if len(kept) == len(keep):
                return kept
            keep = kept

    # ---- the module -------------------------------------------------------------------------
    def module(self) -> Module:
        main = self.reroll(self.scopes[0].ops) + [Op("func.return")]
        consts = sorted(self.const_ops, key=_const_order)
        body = self._dead_code(consts + self.header + self.h_views + self.h_parts
                               + self.h_tiles, main) + main
        ftype = T.FunctionType(tuple(v.type for v, _ in self.args), ())
        fn = Op("func.func", form="func",
                attributes=A.DictAttr((("sym_name", A.StringAttr(self.fn_name)),
                                       ("function_type", A.TypeAttr(ftype)))),
                regions=(Region((Block(tuple(body), tuple(v for v, _ in self.args)),)),))
        return Module((fn,))


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


def _vid(x: Any) -> Any:
    return id(x) if isinstance(x, Value) else x


def _same(a: Any, b: Any) -> bool:
    try:
        return bool(a == b) and type(a) is type(b) or a is b
    except Exception:  # noqa: BLE001 - numpy arrays etc.
        return a is b


# ---- aliases ---------------------------------------------------------------------------------

def with_aliases(text: str, types: list[T.Type]) -> str:
    """``text`` with every tile_buf type written once as ``!T0 = ...`` at the top (the parser
    reads type aliases; see docs)."""
    order: list[str] = []
    for t in types:
        s = str(t)
        if s not in order:
            order.append(s)
    if not order:
        return text
    head = []
    for k, s in enumerate(order):
        head.append(f"!T{k} = {s}")
        text = text.replace(s, f"!T{k}")
    return "\n".join(head) + "\n" + text


# ---- the entry point ---------------------------------------------------------------------------

def export(kernel: Callable[..., Any], *args: Any, blocks: int = 1, target: str = "cpu",
           name: str | None = None, verify: bool = True, aliases: bool = True) -> str:
    """The ``.pto`` program of the eager ``kernel`` for ``kernel(*args)`` launched on
    ``blocks`` blocks of ``target`` (see :mod:`ptoisa.export` for what maps to what and what
    raises :class:`ExportError`). ``name``: the function name (default: the kernel's).
    ``verify``: check the program for ``target`` and compare a run of it with
    ``pto.launch(kernel, ...)`` on copies of ``args``, bit for bit. ``aliases``: write
    tile types once as ``!Tn = ...`` aliases."""
    from .text import parse, print_module

    if isinstance(blocks, bool) or not isinstance(blocks, int) or blocks < 1:
        raise PtoError(f"blocks must be a positive integer, got {blocks!r}")
    fname = name or getattr(kernel, "__name__", "kernel")
    try:
        sig_names = list(inspect.signature(kernel).parameters)
    except (TypeError, ValueError):
        sig_names = []
    copies = [np.array(a, copy=True) if isinstance(a, np.ndarray) else a for a in args]
    params = [(sig_names[k] if k < len(sig_names) else f"arg{k}", a)
              for k, a in enumerate(copies) if isinstance(a, np.ndarray)]
    tracer = Tracer(fname, params, blocks)
    m = Machine(target, lanes=1)
    m.block_idx = S.block_index(blocks)
    m.block_num = blocks
    m.quiet = True
    m.observers.append(tracer.observe)
    prev = S.TRACER
    S.TRACER = tracer
    push(m)
    try:
        with np.errstate(all="ignore"):
            kernel(*copies)
    except PtoError as e:
        if tracer.error is None or isinstance(e, ExportError):
            raise
    finally:
        pop(m)
        S.TRACER = prev
    if tracer.error is not None:
        raise tracer.error
    mod = tracer.module()
    text = print_module(mod, "dps")
    if aliases:
        tile_types = [v.type for _, v in tracer.tiles.values()]
        text = with_aliases(text, tile_types)
    parse(text, f"<export of {fname}>")  # the printed program reads back
    if verify:
        _verify(kernel, args, text, fname, blocks, target)
    return text


def _verify(kernel: Callable[..., Any], args: tuple[Any, ...], text: str, fname: str,
            blocks: int, target: str) -> None:
    from . import grid, interp

    eager = [np.array(a, copy=True) if isinstance(a, np.ndarray) else a for a in args]
    grid.launch(kernel, *eager, blocks=blocks, target=target)
    prog = interp.load(text, target=target)
    arrays = [np.array(a, copy=True) for a in args if isinstance(a, np.ndarray)]
    getattr(prog, fname)(*arrays, blocks=blocks)
    got = iter(arrays)
    for k, a in enumerate(eager):
        if not isinstance(a, np.ndarray):
            continue
        b = next(got)
        if a.tobytes() != b.tobytes():
            raise ExportError(f"the exported program's argument {k} differs from the eager "
                              f"kernel's after a run on {blocks} blocks of {target}: the kernel "
                              "uses something the trace did not see (a Python value computed "
                              "from tile data or from the block index outside + - * // %)")


# ---- command line: ptoisa export module.py:fn ---------------------------------------------------

def load_kernel(ref: str) -> Callable[..., Any]:
    """``path/to/module.py:fn`` (or ``package.module:fn``) -> the function."""
    import importlib
    import importlib.util
    import sys
    from pathlib import Path

    path, sep, fn = ref.rpartition(":")
    if not sep or not path or not fn:
        raise PtoError(f"expected MODULE.py:FUNCTION, got {ref!r}")
    if path.endswith(".py") or "/" in path:
        p = Path(path)
        if not p.is_file():
            raise PtoError(f"cannot read {path}: no such file")
        spec = importlib.util.spec_from_file_location(p.stem, p)
        if spec is None or spec.loader is None:
            raise PtoError(f"cannot import {path}")
        mod = importlib.util.module_from_spec(spec)
        sys.path.insert(0, str(p.resolve().parent))
        sys.modules.setdefault(p.stem, mod)
        try:
            spec.loader.exec_module(mod)
        finally:
            sys.path.pop(0)
    else:
        mod = importlib.import_module(path)
    kernel = getattr(mod, fn, None)
    if not callable(kernel):
        have = ", ".join(n for n, v in vars(mod).items()
                         if inspect.isfunction(v) and v.__module__ == mod.__name__)
        raise PtoError(f"{path} has no function {fn!r} (functions: {have or 'none'})")
    return kernel  # type: ignore[no-any-return]


def arg_value(spec: str, name: str) -> Any:
    """A ``--arg`` value: FILE.npy, ``zeros:SHAPE[:DTYPE]``, ``rand:SHAPE[:DTYPE]`` (seeded
    uniform values in [-4, 4), integers for integer types), or a number."""
    from . import dtypes

    kind, _, rest = spec.partition(":")
    if kind in ("zeros", "rand") and rest:
        shape_s, _, dt_s = rest.partition(":")
        try:
            shape = tuple(int(d) for d in shape_s.split("x"))
            dt = dtypes.dtype(dt_s or "f32")
        except (PtoError, KeyError, TypeError, ValueError):
            raise PtoError(f"argument {name}: expected {kind}:SHAPE[:DTYPE] (e.g. "
                           f"{kind}:45x64:f32), got {spec!r}") from None
        if kind == "zeros":
            return np.zeros(shape, dt.np)
        rng = np.random.default_rng(0)
        if np.issubdtype(dt.np, np.integer):
            info = np.iinfo(dt.np)
            return rng.integers(max(info.min, -4), min(info.max, 4) + 1, shape).astype(dt.np)
        return rng.uniform(-4, 4, shape).astype(dt.np)
    if spec.endswith(".npy"):
        try:
            return np.load(spec, allow_pickle=False)
        except (OSError, ValueError) as e:
            raise PtoError(f"argument {name}: cannot read {spec}: {e}") from None
    for conv in (lambda s: int(s, 0), float):
        try:
            return conv(spec)
        except ValueError:
            pass
    raise PtoError(f"argument {name}: expected FILE.npy, zeros:SHAPE:DTYPE, rand:SHAPE:DTYPE or "
                   f"a number, got {spec!r}")


def kernel_args(kernel: Callable[..., Any], specs: list[str]) -> list[Any]:
    """The kernel's arguments from ``NAME=VALUE`` / ``INDEX=VALUE`` specs (parameters with
    defaults may be left out)."""
    params = list(inspect.signature(kernel).parameters.values())
    given: dict[int, Any] = {}
    for s in specs:
        key, eq, val = s.partition("=")
        if not eq:
            raise PtoError(f"--arg takes NAME=VALUE, got {s!r}")
        idx = next((k for k, p in enumerate(params) if p.name == key), None)
        if idx is None and key.isdigit() and int(key) < len(params):
            idx = int(key)
        if idx is None:
            names = ", ".join(p.name for p in params)
            raise PtoError(f"--arg {key}: the kernel has no such parameter ({names})")
        given[idx] = arg_value(val, params[idx].name)
    out: list[Any] = []
    for k, p in enumerate(params):
        if k in given:
            out.append(given[k])
        elif p.default is not inspect.Parameter.empty:
            out.append(p.default)
        elif p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            break
        else:
            missing = [q.name for j, q in enumerate(params) if j not in given
                       and q.default is inspect.Parameter.empty
                       and q.kind not in (q.VAR_POSITIONAL, q.VAR_KEYWORD)]
            raise PtoError(f"missing --arg for {', '.join(missing)} (FILE.npy, "
                           "zeros:SHAPE:DTYPE, rand:SHAPE:DTYPE or a number)")
    return out


def cli_export(ns: Any) -> int:
    """``ptoisa export MODULE.py:FN [--blocks N] [--target T] [--arg NAME=VALUE] [-o OUT]``."""
    import sys
    from pathlib import Path

    kernel = load_kernel(ns.kernel)
    args = kernel_args(kernel, ns.arg or [])
    text = export(kernel, *args, blocks=ns.blocks, target=ns.target, name=ns.name,
                  verify=not ns.no_verify)
    if ns.output:
        Path(ns.output).write_text(text)
        print(f"{ns.output}: {len(text.splitlines())} lines, {ns.blocks} block(s), target "
              f"{ns.target}" + ("" if ns.no_verify else ", same bits as the eager kernel"),
              file=sys.stderr)
    else:
        sys.stdout.write(text)
    return 0

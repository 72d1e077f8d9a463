"""The tracer: an observer of the dispatch point that builds the ``func.func`` while the
kernel runs (see :mod:`ptoisa.exporter` for what maps to what)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from .. import symbolic as S
from ..enums import Layout
from ..errors import PtoError
from ..ir import attrs as A
from ..ir import types as T
from ..ir.core import Block, Module, Op, Piece, Region, Value
from ..isa.registry import PIPE_SYNC, Event, Instr, InstrRecord, ptoas_attrs, ptoas_forms
from ..symbolic import SymInt
from ..tensor import GlobalTensor
from ..tile import Dyn, Tile
from .reroll import Rerolling, _Loop, _Scope
from .spelling import (
    _ARITH,
    _COLON,
    _COMMA,
    _ENUM_ATTR,
    _EQ,
    _SYNC_NOT_EXPORTED,
    _SYNC_SKIPPED,
    _VALUE_SCALARS,
    _const_order,
    _has_iv,
    _key,
    _linear,
    _list,
    _same,
    ir_elem_type,
    op_name,
    sync_op,
    tile_type,
)


class Tracer(Rerolling):
    """Builds the function while the kernel runs (see the module docstring)."""

    def __init__(self, fn_name: str, params: list[tuple[str, np.ndarray]], blocks: int) -> None:
        self.fn_name = fn_name
        self.blocks = blocks
        self.names: set[str] = set()
        self.args: list[tuple[Value, np.ndarray]] = []
        for name, arr in params:
            from ..dtypes import dtype as to_dtype

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
        self.error: PtoError | None = None
        self.last_failure: PtoError | None = None  # see symbolic.fail
        #: the kernel's synchronisation: flags and barriers are exported as written; Events
        #: passed to intrinsics are not (PTOAS inserts what they order)
        self.used_flags = False
        self.used_events = False

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

    def const(self, v: Any, t: T.Type = T.INDEX, hint: str | None = None) -> Value:
        key = (v, t)
        got = self.consts.get(key)
        if got is not None:
            return got
        if isinstance(v, str):  # an attribute written as is (dense<0>)
            attr: A.Attribute = A.OpaqueAttr(v)
            base = hint or "cst"
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
        self.scopes.append(_Scope())
        done = False
        try:
            yield sym
            done = True
        finally:
            if done:
                self.scopes[-1].ops[:] = self.reroll(self.scopes[-1].ops)
            body = self.scopes.pop()
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
            if np.may_share_memory(arr, flat):
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
        total = self._arg_size(arg)
        ext: list[int] = []
        for d in used:  # up to the next larger stride that it divides, else the whole array
            outer = [stride[e] // stride[d] for e in used
                     if stride[d] and stride[e] > stride[d] and stride[e] % stride[d] == 0]
            ext.append(min(outer) if outer else -(-max(total, 1) // max(stride[d], 1)))
        layout = gt.spec.layout
        vkey = (arg.name, tuple(stride[d] for d in used), tuple(ext), dt, layout)
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
        ins = rec.ins
        if rec.waits:
            self.used_events = True
        if ins.sync in PIPE_SYNC:
            self.used_flags = True
            self.scopes[-1].ops.append(sync_op(ins, rec.values))
            return
        if ins.sync == _SYNC_SKIPPED:
            return
        if ins.sync in _SYNC_NOT_EXPORTED:
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
            return self.const(dense, t, S.user_name(v)), t
        if isinstance(v, (bool, np.bool_)):
            t = T.I1
            return self.const(int(v), t), t
        if isinstance(v, (int, float, np.integer, np.floating)):
            ref = next((x for x in tiles if isinstance(x, (Tile, GlobalTensor))), None)
            if isinstance(v, np.generic):
                from ..dtypes import dtype as to_dtype

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
        from ..interp import bridge

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
            key = self.attr_name(ins, o.name)
            if o.kind == "enum" or (self.is_attr(ins, o.name)
                                    and not isinstance(v, (Tile, GlobalTensor))):
                # an attribute in PTOAS (``{isBinary = true}``, ``{rmode = ...}``)
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
        translated = set()
        for k, v in params.items():
            if k in defaults and _same(defaults[k], v):
                spec = self.attr_spec(ins, k)
                if spec is None or spec.written is None:
                    continue
                # (the op's default means something else: the value that computes the same)
                w = spec.written({o.name: x for o, x in zip(ins.operands, values, strict=False)})
                if w is None:
                    raise S.fail(f"{ins.mnemonic} cannot be exported yet: no value of its "
                                 f"PTOAS attribute {self.attr_name(ins, k)} computes what "
                                 f"{k} = {v!r} does here")
                v = w
                translated.add(k)
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
                # (a scratch operand the call left out: PTOAS allocates one, which the
                # instruction only uses where the call could not have run without it)
                ok = got is want or (want is None and isinstance(got, bridge.Scratch))
            if not ok:
                raise S.fail(f"{ins.mnemonic} cannot be exported yet: its PTOAS spelling does "
                             f"not map operand '{o.name}' back onto itself")
        for k, v in params.items():
            if k not in translated and not _same(b.params.get(k), v):
                raise S.fail(f"{ins.mnemonic} cannot be exported yet: template parameter {k} = "
                             f"{v!r} does not survive its PTOAS spelling")
        return op

    def written_order(self, ins: Instr, values: list[Any], expect: list[Any]) -> Any:
        """ins/outs in the order of the op's PTOAS spelling (the entry's ``ptoas`` forms) when
        it lists one for exactly the operands given, else None (C++ order)."""
        have = {o.name: (v, v.type) for o, v in zip(ins.operands, expect, strict=True)
                if isinstance(v, Value)}
        for f in ptoas_forms(op_name(ins)):
            names = [n for n in (*f.inputs, *f.outs)]
            if f.segments or f.attr_operands or f.keyword \
                    or any("*" in n or n == "-" for n in names):
                continue
            if set(names) != set(have) or len(names) != len(have):
                continue
            return ([have[n][0] for n in f.inputs], [have[n][1] for n in f.inputs],
                    [have[n][0] for n in f.outs], [have[n][1] for n in f.outs])
        return None

    def is_attr(self, ins: Instr, name: str) -> bool:
        """Whether PTOAS writes operand ``name`` as an attribute (the entry's ``ptoas.attrs``)."""
        return any(spec.to == name and not spec.values
                   for spec in ptoas_attrs(op_name(ins)).values())

    def attr_spec(self, ins: Instr, param: str) -> Any:
        """The PTOAS attribute declaration that sets template parameter ``param``, if any."""
        for spec in ptoas_attrs(op_name(ins)).values():
            if spec.to == param and not spec.values:
                return spec
        return None

    def attr_name(self, ins: Instr, param: str) -> str:
        """The PTOAS attribute that sets template parameter / operand ``param`` (``param``
        itself when PTOAS has no attribute of another name for it)."""
        for key, spec in ptoas_attrs(op_name(ins)).items():
            if spec.to == param and not spec.values:
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

    # ---- the module -------------------------------------------------------------------------
    def module(self) -> Module:
        if self.used_flags and self.used_events:
            raise PtoError("a kernel that synchronises with both flags (SET_FLAG / WAIT_FLAG) "
                           "and Events is not exported yet: the program would keep the flags "
                           "and lose what the Events order (use flags only, or Events only)")
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

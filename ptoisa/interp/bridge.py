"""From IR types and ops to the registry: the one place the text front end meets the ISA.

* IR types -> the registry's operand types (TileSpec, GMSpec, DType), so the verifier runs
  the same static rules as the eager API;
* a ``pto.*`` op -> its :class:`~ptoisa.isa.registry.Instr` and the mapping of its written
  operands (DPS ``ins``/``outs`` or SSA operands/results) onto the instruction's operands
  in C++ order (dst first), plus template parameters from attributes.
"""

from __future__ import annotations

import dataclasses
import enum
import os
import re
from dataclasses import dataclass, field
from typing import Any

from .. import dtypes as D
from ..dtypes import DType
from ..enums import BLayout, Layout, PadValue, SLayout, TileType, coerce_enum
from ..errors import PtoError, VerifyError
from ..ir import attrs as A
from ..ir import types as T
from ..ir.core import Op, Piece, Value
from ..isa.registry import REGISTRY, Instr, lookup, ptoas_attrs, ptoas_forms
from ..isa.spelling import RESULT, SCALE, STRUCTURAL_ATTRS, Form
from ..targets import TargetLike, get_target
from ..tensor import GMSpec, gm_spec
from ..tile import FRACTAL_AB, FRACTAL_C, FRACTAL_MX, TileSpec, tile_spec

#: the SIMT packed types (17-simt.md: two-lane ``vector<2xT>`` and ``!pto.hif8x2``)
_PACKED = re.compile(r"vector<(2)x(\w+)>|!pto\.hif8x2")
_PAD = (PadValue.Null, PadValue.Zero, PadValue.Max, PadValue.Min)
_LOC = {"vec": TileType.Vec, "mat": TileType.Mat, "left": TileType.Left, "right": TileType.Right,
        "acc": TileType.Acc, "bias": TileType.Bias, "scaling": TileType.Scaling,
        "ub": TileType.Vec, "l1": TileType.Mat, "cbuf": TileType.Mat, "l0a": TileType.Left,
        "l0b": TileType.Right, "l0c": TileType.Acc, "cc": TileType.Acc}


def elem_dtype(t: T.Type) -> DType:
    """Element type of an IR scalar type (f32, i8, ui16, ...)."""
    if isinstance(t, T.FloatType):
        return D.dtype(t.name.removeprefix("!pto."))  # (!pto.hif8: PTOAS's spelling)
    if isinstance(t, T.IntegerType):
        if t.width == 1:
            return D.i1
        return D.dtype(("ui" if t.signedness == "u" else "i") + str(t.width))
    if isinstance(t, T.IndexType):
        return D.i64
    if isinstance(t, T.OpaqueType):  # a SIMT packed value: vector<2xf16>, !pto.hif8x2
        pk = _PACKED.fullmatch(t.text)
        if pk:
            inner = pk.group(2) or "hif8"
            try:
                return D.packed_vector(D.dtype(inner), int(pk.group(1) or 2))
            except PtoError:
                pass
    if isinstance(t, T.OpaqueType) and t.text.startswith("!pto."):  # !pto.hif8, !pto.f4...
        try:
            return D.dtype(t.text.removeprefix("!pto."))
        except Exception:  # noqa: BLE001 - no element type of that name
            pass
    raise PtoError(f"{t} is not an element type")


# Layout of an on-chip ``memref`` per location: the C++ aliases (TileLeft is ZZ on a2a3).
_MEMREF_LAYOUT = {
    TileType.Left: (BLayout.ColMajor, SLayout.RowMajor, FRACTAL_AB),
    TileType.Right: (BLayout.RowMajor, SLayout.ColMajor, FRACTAL_AB),
    TileType.Acc: (BLayout.ColMajor, SLayout.RowMajor, FRACTAL_C),
    # L1 holds cube operands as NZ (TLOAD ND -> NZ; the TMOV/TEXTRACT Mat -> Left/Right and
    # the A2/A3 TINSERT Acc -> Mat paths read/write NZ boxes)
    TileType.Mat: (BLayout.ColMajor, SLayout.RowMajor, FRACTAL_AB),
}


_MULTI = re.compile(r"!pto\.multi_tile_buf<(.*),\s*count\s*=\s*(-?\d+)\s*>", re.S)


def multi_tile_type(t: T.Type) -> tuple[T.Type, int] | None:
    """``!pto.multi_tile_buf<slot, count=N>`` (the slot written inline, ``vec, 16x16xf16``,
    or as ``!pto.tile_buf<...>``) as (slot type, N); None for any other type. The text front
    end keeps the type opaque; the slot type is read here with the tile_buf parser (a slot that
    is no tile_buf comes back as whatever the parser makes of it: callers check)."""
    if not isinstance(t, T.OpaqueType):
        return None
    m = _MULTI.fullmatch(t.text.strip())
    if m is None:
        return None
    from ..text.parser import Parser  # (the text front end sits above the bridge)
    body = m.group(1).strip()
    text = body if body.startswith("!pto.tile_buf<") else f"!pto.tile_buf<{body}>"
    try:
        slot = Parser(text, "<multi_tile_buf>").parse_type()
    except PtoError as e:
        raise PtoError(f"{t}: slot type: {e}") from None
    return slot, int(m.group(2))


def tile_spec_of(t: T.Type, target: TargetLike | None = None) -> TileSpec | None:
    """The tile type of a ``!pto.tile_buf`` (or an on-chip ``memref``, which takes the
    target's default layout for its location), else None."""
    traits = None if target is None else \
        get_target(target).traits
    if isinstance(t, T.TileBufType):
        loc = _LOC.get(t.loc)
        if loc is None:
            raise PtoError(f"unknown tile location '{t.loc}'")
        blayout = t.blayout
        if loc is TileType.Left and traits is not None and traits.left_blayout_fixed:
            # PTOAS forces the blayout of ``loc=left`` by arch when it parses the type (the
            # C++ TileLeft: ZZ on A2/A3, NZ on A5), whatever the text writes
            blayout = BLayout(traits.left_blayout)
        return tile_spec(loc, elem_dtype(t.dtype), t.rows, t.cols, blayout, t.v_row, t.v_col,
                         t.slayout, t.fractal, _PAD[t.pad] if 0 <= t.pad < 4 else PadValue.Null,
                         t.compact or 0, check_alignment=False)
    if isinstance(t, T.TileType) and len(t.shape) == 2 and None not in t.shape:
        # the ISA pages' SSA tile type ``!pto.tile<16x16xf32>``: a Vec tile with the
        # documented tile_buf defaults (row_major, none_box, fractal 512, pad null, valid =
        # the whole shape; spec/notes/syntax.md 2.1)
        rows, cols = t.shape  # type: ignore[misc]
        return tile_spec(TileType.Vec, elem_dtype(t.dtype), rows, cols, BLayout.RowMajor,
                         rows, cols, check_alignment=False)
    if isinstance(t, T.MemRefType) and len(t.shape) == 2 and None not in t.shape:
        space = memref_space(t)
        if space is None or space == "gm":
            return None
        loc = _LOC.get(space)
        if loc is None:
            return None
        rows, cols = t.shape  # type: ignore[misc]
        bl, sl, fr = _MEMREF_LAYOUT.get(loc, (BLayout.RowMajor, SLayout.NoneBox, FRACTAL_AB))
        if loc is TileType.Left and traits is not None:
            bl = BLayout(traits.left_blayout)
        return tile_spec(loc, elem_dtype(t.dtype), rows, cols, bl, None, None, sl, fr,
                         check_alignment=False)
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


def operand_type(t: T.Type, target: TargetLike | None = None) -> Any:
    """What the registry's static rules see for a value of IR type ``t``."""
    ts = tile_spec_of(t, target)
    if ts is not None:
        return ts
    gs = gm_spec_of(t)
    if gs is not None:
        return gs
    if isinstance(t, (T.IntegerType, T.FloatType, T.IndexType)):
        return elem_dtype(t)
    return None


def instr_of(op_name: str) -> Instr | None:
    """The tile instruction a ``pto.*`` op is (``pto.tmatmul.acc`` -> TMATMUL_ACC), by the
    registry's one lookup; None for ops that are not tile instructions."""
    if not op_name.startswith("pto."):
        return None
    return lookup(op_name)


def _keyword_form(op: Op) -> tuple[Instr, Form] | None:
    """(entry, form) a keyword written among the op's ins selects (``Ptoas.keywords``)."""
    ins = instr_of(op.name)
    if ins is None or ins.ptoas is None or not ins.ptoas.keywords:
        return None
    for p in op.syntax:
        if p.kind == "k" and p.value in ins.ptoas.keywords:
            name, form = ins.ptoas.keywords[p.value]  # type: ignore[index]
            return REGISTRY[name], form
    return None


def instr_for(op: Op) -> Instr | None:
    """The tile instruction this op is: :func:`instr_of` its name, or the entry a keyword
    written among its ins selects (``fp %fp`` makes pto.textract TEXTRACT_FP), or the one its
    operand types select where PTOAS infers the lowering (``Ptoas.by_types``)."""
    kw = _keyword_form(op)
    if kw is not None:
        return kw[0]
    ins = instr_of(op.name)
    if ins is not None and ins.ptoas is not None and ins.ptoas.by_types is not None:
        inputs, outs = written(op)
        name = ins.ptoas.by_types(tuple(v.type for v in inputs if isinstance(v, Value)),
                                  tuple(v.type for v, _ in outs if isinstance(v, Value)))
        if name is not None:
            return REGISTRY[name]
    return ins


@dataclass(frozen=True)
class Const:
    """An operand the text writes as an attribute (``{offset = 7 : i32}`` of ``tgather``)."""

    value: Any
    type: T.Type | None


@dataclass(frozen=True)
class Scratch(Const):
    """A scratch operand the op leaves out and PTOAS allocates (``Ptoas.materialised``): a
    tile of ``like``'s type, made by the compiler (``type`` is that type)."""

    like: Value | None = None


Bound = Value | Const | tuple[Value, ...] | None


@dataclass(frozen=True)
class Binding:
    """How an op's written values map onto an instruction's operands (C++ order)."""

    ins: Instr
    values: tuple[Bound, ...]  # per instruction operand (None: omitted optional)
    from_result: tuple[bool, ...]  # operand is an SSA result of the op (a new tile)
    params: dict[str, Any]
    retype: dict[str, TileType | str] = field(default_factory=dict)
    result: Value | None = None  # the SSA result receiving the instruction's return value

    @property
    def materialised(self) -> tuple[str, ...]:
        """The scratch operands the op left out, for PTOAS to allocate."""
        return tuple(o.name for o, v in zip(self.ins.operands, self.values, strict=True)
                     if isinstance(v, Scratch))


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


def segment_sizes(op: Op) -> list[int] | None:
    a = op.attributes.get("operandSegmentSizes")
    if a is None:
        return None
    return [int(x) for x in re.findall(r"-?\d+", str(a).split(":", 1)[-1])]


def written(op: Op) -> tuple[list[Value], list[tuple[Value, bool]]]:
    """The op's written ins and outs, normalised by the IR (:meth:`Op.written`)."""
    return op.written()


def _fail(op: Op, ins: Instr, n_in: int, n_out: int, results: bool = False) -> VerifyError:
    """What the instruction takes, in the spelling the op used (DPS ``ins``/``outs``, or SSA
    operands/results), against what it has. An operand that is read and written (``inout``)
    is an ``outs`` operand in DPS form and has no SSA spelling: say so, and name the DPS
    spelling to use, instead of listing counts that look like they fit."""
    def names(ops: list[Any]) -> str:
        return ", ".join(o.name + ("?" if o.optional else "") for o in ops) or "none"

    if not results:
        in_ops = [o for o in ins.operands if o.role not in ("out", "inout")]
        out_ops = [o for o in ins.operands if o.role in ("out", "inout")]
        return VerifyError(f"expects ins ({names(in_ops)}) and outs ({names(out_ops)}); got "
                           f"{n_in} ins and {n_out} outs", op=op.name, loc=op.loc)
    inout = [o for o in ins.operands if o.role == "inout" and not o.optional]
    if inout:
        in_ops = [o for o in ins.operands if o.role not in ("out", "inout")]
        out_ops = [o for o in ins.operands if o.role in ("out", "inout")]
        return VerifyError(
            f"{names(inout)} is read and written (inout), which the SSA form (operands -> "
            f"results) cannot express: write it in DPS form, '{op.name} ins("
            f"{', '.join('%' + o.name for o in in_ops)} : ...) outs("
            f"{', '.join('%' + o.name for o in out_ops)} : ...)'", op=op.name, loc=op.loc)
    in_ops = [o for o in ins.operands if o.role != "out"]
    out_ops = [o for o in ins.operands if o.role == "out"]
    return VerifyError(f"expects operands ({names(in_ops)}) and results ({names(out_ops)}); "
                       f"got {n_in} operands and {n_out} results", op=op.name, loc=op.loc)


def _default_map(op: Op, ins: Instr, inputs: list[Value], outs: list[tuple[Value, bool]],
                 skip: frozenset[str] = frozenset()) -> dict[str, tuple[Bound, bool]]:
    """C++ order: written outs fill the out (and, in DPS, inout) operands in order, optional
    trailing outs may be left out; the ins fill every other operand (but ``skip``) in order."""
    dps_like = not any(r for _, r in outs)
    out_ops = [o for o in ins.operands
               if o.role == "out" or (o.role == "inout" and dps_like)]
    in_ops = [o for o in ins.operands if o not in out_ops and o.name not in skip]
    need_out = sum(1 for o in out_ops if not o.optional)
    need_in = sum(1 for o in in_ops if not o.optional)
    if not need_out <= len(outs) <= len(out_ops) or not need_in <= len(inputs) <= len(in_ops):
        raise _fail(op, ins, len(inputs), len(outs), not dps_like)
    got: dict[str, tuple[Bound, bool]] = {}
    for o, (v, r) in zip(out_ops, outs, strict=False):
        got[o.name] = (v, r)
    for o, v in zip(in_ops, inputs, strict=False):
        got[o.name] = (v, False)
    return got


def _form_map(op: Op, form: Form, inputs: list[Value], outs: list[tuple[Value, bool]]
              ) -> dict[str, tuple[Bound, bool]] | None:
    if form.segments:
        sizes = segment_sizes(op)
        if op.form != "generic" or sizes is None or len(sizes) != len(form.segments):
            return None
        got: dict[str, tuple[Bound, bool]] = {}
        k = 0
        for name, n in zip(form.segments, sizes, strict=True):
            for v in op.operands[k:k + n]:
                got[name] = (v, False)
            k += n
        return got
    if form.bundles:
        return _bundle_map(op, form, outs)
    if not form.fits(len(inputs)) or len(form.outs) != len(outs):
        return None
    if form.keyword and Piece("k", form.keyword) not in op.syntax:
        return None
    got = {}
    it = iter(inputs)
    for name in form.inputs:
        if name.endswith("*"):
            got[name[:-1]] = (tuple(it), False)
        elif "*" in name:
            base, n = name.split("*")
            got[base] = (tuple(next(it) for _ in range(int(n))), False)
        else:
            v = next(it)
            if name != "-":
                got[name] = (v, False)
    for name, (v, r) in zip(form.outs, outs, strict=True):
        if name != "-":
            got[name] = (v, r)
    for key, name in form.attr_operands.items():
        a = op.attributes.get(key)
        if a is not None:
            got[name] = (Const(attr_value(a), getattr(a, "type", T.IntegerType(32))), False)
    return got


def _bundle_map(op: Op, form: Form, outs: list[tuple[Value, bool]]
                ) -> dict[str, tuple[Bound, bool]] | None:
    """A variant whose operands are grouped under keywords (``buf(%ping, %pong)``,
    ``group(%g0, %g1)``): None when the op's groups are not the variant's; a wrong count in a
    group it has is a VerifyError naming the group."""
    groups = op.keyword_groups()
    if groups is None or len(form.outs) != len(outs):
        return None
    plain, kws = groups
    if len(plain) != len(form.inputs) or not set(kws) <= set(form.bundles):
        return None
    got: dict[str, tuple[Bound, bool]] = {}
    for name, v in zip(form.inputs, plain, strict=True):
        if name != "-":
            got[name] = (v, False)
    for kw, names in form.bundles.items():
        vals = kws.get(kw, [])
        if len(names) == 1 and names[0].endswith("*"):
            if not vals:
                raise VerifyError(f"{kw}(...) must hold at least one value", op=op.name,
                                  loc=op.loc)
            got[names[0][:-1]] = (tuple(vals), False)
            continue
        need = sum(1 for n in names if not n.endswith("?"))
        if not need <= len(vals) <= len(names):
            want = (str(need) if need == len(names) else f"{need} to {len(names)}")
            raise VerifyError(f"{kw}(...) takes {want} value(s) "
                              f"({', '.join(names)}), got {len(vals)}", op=op.name,
                              loc=op.loc)
        for name, v in zip(names, vals, strict=False):
            got[name.rstrip("?")] = (v, False)
    for name, (v, r) in zip(form.outs, outs, strict=True):
        if name != "-":
            got[name] = (v, r)
    return got


def _materialised_map(op: Op, ins: Instr, inputs: list[Value], outs: list[tuple[Value, bool]]
                      ) -> dict[str, tuple[Bound, bool]]:
    """The default mapping; where it does not fit and the entry lets PTOAS allocate scratch
    operands the op left out (``Ptoas.materialised``), the mapping without them, each bound
    to a :class:`Scratch` of its model operand's type."""
    mat = ins.ptoas.materialised if ins.ptoas is not None else {}
    try:
        got = _default_map(op, ins, inputs, outs)
    except VerifyError as e:
        if not mat:
            raise
        err = e
        try:
            got = _default_map(op, ins, inputs, outs, frozenset(mat))
        except VerifyError:
            raise err from None
    for name, like in mat.items():
        if name in got:
            continue
        v = got.get(like, (None, False))[0]
        if not isinstance(v, Value):
            raise _fail(op, ins, len(inputs), len(outs))
        got[name] = (Scratch(None, v.type, v), False)
    return got


def _reject_offset_operands(op: Op) -> None:
    """PTO-AS writes a GM operand with a base offset as ``%view[%r, %c]``; ptoisa takes the
    offset through the view (``pto.partition_view ... offsets = [...]``): say so instead of
    counting the offsets as operands."""
    text = op.indexed_operand()
    if text is not None:
        raise VerifyError(f"'{text}' (an operand with a base offset) is PTO-AS notation "
                          "ptoisa does not take: write the offset into a view, "
                          "'pto.partition_view %view, offsets = [...], sizes = [...]', and "
                          "pass that view", op=op.name, loc=op.loc)


def bind(op: Op, ins: Instr) -> Binding:
    """Map the op's written values onto ``ins``'s operands (C++ order, dst first), through
    the entry's ``ptoas`` forms when PTOAS spells it differently;
    VerifyError when they do not fit."""
    if op.form == "asm":
        _reject_offset_operands(op)
    inputs, outs = written(op)
    if op.form in ("ssa", "asm") and not op.results and not outs:
        # the ISA pages' spellings of an op without a result: SSA writes the destination as
        # the last operand(s) ('pto.tstore %src, %mem : (T, V) -> ()'); PTO-AS writes a
        # destination tile first, as the C++ intrinsic does ('tadds %dst, %src, 0x3F800000'),
        # and a GM destination last ('tstore %t, %view')
        dst = [o for o in ins.operands if o.role in ("out", "inout") and not o.optional]
        k = len(dst)
        if 0 < k < len(inputs):
            if op.form == "asm" and all("tile" in o.kind and o.kind != "tile|gm" for o in dst):
                inputs, outs = inputs[k:], [(v, False) for v in inputs[:k]]
            else:
                inputs, outs = inputs[:-k], [(v, False) for v in inputs[-k:]]
    got = None
    form = None
    kw = _keyword_form(op)
    for f in ((kw[1],) if kw is not None and kw[0] is ins else ptoas_forms(op.name)):
        got = _form_map(op, f, inputs, outs)
        if got is not None:
            form = f
            break
    if got is None:
        got = _materialised_map(op, ins, inputs, outs)
    missing = [o.name for o in ins.operands if not o.optional and o.name not in got]
    if missing and not (form is not None and form.bundles):
        raise _fail(op, ins, len(inputs), len(outs), any(r for _, r in outs))
    result = got.pop(RESULT, (None, False))[0]
    params = _attributes(op, ins, form, got)
    missing = [o.name for o in ins.operands if not o.optional and o.name not in got]
    if missing:  # (a bundled variant's enum operands may come from its attributes)
        raise VerifyError(f"missing operand(s) {', '.join(missing)}", op=op.name, loc=op.loc)
    vals = tuple(got.get(o.name, (None, False))[0] for o in ins.operands)
    from_res = tuple(got.get(o.name, (None, False))[1] for o in ins.operands)
    try:
        full = ins.resolve_params(params)
    except PtoError as e:
        raise VerifyError(e.message, op=op.name, loc=op.loc) from None
    return Binding(ins, vals, from_res, full, dict(form.retype) if form else {},
                   result if isinstance(result, Value) else None)


def _attributes(op: Op, ins: Instr, form: Form | None,
                got: dict[str, tuple[Bound, bool]]) -> dict[str, Any]:
    """Every attribute of ``op`` onto ``ins``'s template parameters (returned) or operands
    (added to ``got``), by the entry's ``ptoas.attrs`` or else by name; an attribute that maps
    nowhere, or to a value the registry does not take, is a VerifyError at the op: none is
    dropped."""
    table = ptoas_attrs(op.name) if lookup(op.name) is ins \
        else dict(ins.ptoas.attrs) if ins.ptoas else {}
    consumed = set(form.attr_operands) if form else set()
    params: dict[str, Any] = {}
    by_norm = {_norm(p.name): p.name for p in ins.params}
    by_norm.update({_norm(o.name): o.name for o in ins.operands
                    if o.kind in ("enum", "scalar", "any") and o.name not in got})
    written = {k for k, _ in op.attributes.items}
    todo = list(op.attributes.items)
    lit = ins.ptoas.literal if ins.ptoas is not None else ""
    strings = [a for a in op.literals if isinstance(a, A.StringAttr)]
    if lit and strings:
        if lit in written or len(strings) > 1:
            raise VerifyError(f"'{lit}' is written more than once", op=op.name, loc=op.loc)
        todo.append((lit, strings[0]))
    def sets(key: str) -> str | None:  # the parameter / operand a written attribute sets
        spec = table.get(key)
        return spec.to if spec is not None else by_norm.get(_norm(key))

    given = {sets(k) for k in written}
    for key, spec in table.items():  # PTOAS defaults that differ from the registry's
        # (not where another written attribute sets the same parameter: pto.thistogram's
        # byte = 3 with the legacy isMSB left out)
        if key not in written and spec.default is not None and spec.to not in given:
            todo.append((key, A.BoolAttr(spec.default) if isinstance(spec.default, bool)
                         else A.IntegerAttr(spec.default)))
    for key, a in todo:
        if key in consumed or key in STRUCTURAL_ATTRS or "." in key:
            # consumed by the variant; structure; a dialect's discardable attribute
            continue
        spec = table.get(key)
        raw = attr_value(a)
        if spec is not None and spec.to is None:
            if spec.only is None or raw in spec.only:
                continue
            raise VerifyError(f"attribute '{key}' = {a} is not supported: {spec.why}",
                              op=op.name, loc=op.loc)
        name = spec.to if spec is not None else by_norm.get(_norm(key))
        if name is None:
            have = ", ".join(table) or "none"
            raise VerifyError(f"unknown attribute '{key}' (PTOAS attributes of {op.name}: "
                              f"{have})", op=op.name, loc=op.loc)
        if spec is not None:
            key_v = raw.lower() if isinstance(raw, str) else raw
            raw = spec.values.get(key_v, raw)
        param = next((p for p in ins.params if p.name == name), None)
        opnd = next((o for o in ins.operands if o.name == name), None)
        cls = _enum_class(param.type if param else opnd.enum if opnd else None,
                          param.default if param else None)
        value = raw if cls is None else _to_enum(cls, raw, op, key)
        if param is not None:
            params[name] = value
        elif opnd is not None:
            if name in got:
                raise VerifyError(f"operand '{name}' is given both as a value and as attribute "
                                  f"'{key}'", op=op.name, loc=op.loc)
            got[name] = (Const(value, getattr(a, "type", None) or _attr_type(raw)), False)
        else:  # a table entry naming neither: a bug of the entry's ptoas.attrs, said plainly
            raise VerifyError(f"attribute '{key}' maps to '{name}', which {ins.name} does "
                              f"not have", op=op.name, loc=op.loc)
    return params


def _attr_type(raw: Any) -> T.Type | None:
    if isinstance(raw, bool):
        return T.IntegerType(1)
    if isinstance(raw, int):
        return T.IntegerType(32)
    return None


def _enum_class(t: Any, default: Any) -> type[enum.Enum] | None:
    if isinstance(t, type) and issubclass(t, enum.Enum):
        return t
    if isinstance(default, enum.Enum):
        return type(default)
    return None


def _to_enum(cls: type[enum.Enum], raw: Any, op: Op, key: str) -> enum.Enum:
    """A written enum value as ``cls``'s member: by name or value (``coerce_enum``), or by name
    without the prefix all of ``cls``'s names share (PTOAS ``ROUND`` is ``CAST_ROUND``)."""
    if isinstance(raw, cls):
        return raw
    names = [m.name for m in cls]
    prefix = os.path.commonprefix(names)
    prefix = prefix[:prefix.rfind("_") + 1] if len(names) > 1 else ""
    tries = [raw] + ([prefix + raw] if isinstance(raw, str) and prefix else [])
    for x in tries:
        try:
            return coerce_enum(cls, x, key)  # type: ignore[no-any-return]
        except PtoError:
            pass
    short = [n[len(prefix):] for n in names]
    allowed = ", ".join(short)
    if isinstance(raw, int) and all(n.isdigit() for n in short) and \
            sorted(map(int, short)) == list(range(int(short[0]), int(short[0]) + len(short))):
        # an integer out of a run of integers: PTOAS words it as a range (HistByte's byte)
        lo, hi = min(map(int, short)), max(map(int, short))
        raise VerifyError(f"expects {key} to be in range [{lo}, {hi}] (attribute '{key}': "
                          f"{raw} is not a {cls.__name__})", op=op.name, loc=op.loc)
    raise VerifyError(f"attribute '{key}': {raw!r} is not a {cls.__name__} (allowed: "
                      f"{allowed})", op=op.name, loc=op.loc)


def bound_type(v: Bound, target: TargetLike | None = None) -> Any:
    """What the static rules see for a bound operand."""
    if v is None or isinstance(v, tuple):
        return None
    if isinstance(v, Scratch):
        return operand_type(v.type, target) if v.type is not None else None
    if isinstance(v, Const):
        return elem_dtype(v.type) if isinstance(v.type, (T.IntegerType, T.FloatType)) else None
    return operand_type(v.type, target)


# the C++ MX scale tiles: TileLeftScale (ZZ) and TileRightScale (NN), 32-byte boxes
_SCALE_LAYOUT = {TileType.ScaleLeft: (BLayout.RowMajor, SLayout.RowMajor),
                 TileType.ScaleRight: (BLayout.ColMajor, SLayout.ColMajor)}


def _scale_tile(ts: TileSpec, loc: TileType) -> TileSpec:
    """A ``loc=scaling`` tile used as an MX scale operand, seen as the C++ scale tile over the
    same bytes: PTOAS has no scale-tile types and leaves the layout and element type of the
    scaling buffer to the target (its tests write f16 scaling tiles in any layout), while the
    C++ TileLeftScale / TileRightScale hold one E8M0 byte per scale in 32-byte boxes."""
    if loc not in _SCALE_LAYOUT:
        return dataclasses.replace(ts, loc=loc)
    bl, sl = _SCALE_LAYOUT[loc]
    k = ts.dtype.itemsize if not ts.dtype.packed else 1
    vc = None if ts.valid_col is None else ts.valid_col * k
    return tile_spec(loc, D.f8e8m0, ts.rows, ts.cols * k, bl, ts.valid_row, vc, sl, FRACTAL_MX,
                     check_alignment=False)


def check_op(op: Op, target: TargetLike, permissive: bool = False) -> Binding | None:
    """Static legality of one ``pto.*`` op for ``target`` (VerifyError with the op's
    location; ``permissive`` skips the type rules the CPU simulator does not check). Returns
    the binding, or None when the op is not a tile instruction."""
    ins = instr_for(op)
    if ins is None or ins.dialect != "tile":
        return None  # (micro-ops bind in interp/micro.py)
    b = bind(op, ins)
    types = {o.name: bound_type(v, target) for o, v in zip(ins.operands, b.values, strict=True)}
    for name, loc in b.retype.items():
        ts = types.get(name)
        if isinstance(ts, TileSpec) and ts.loc is TileType.Scaling:
            if loc == SCALE:
                # an MX scale window (textract mat -> scaling): Left/Right by the box order
                nn = ts.blayout is BLayout.ColMajor and ts.slayout is SLayout.ColMajor
                types[name] = dataclasses.replace(
                    ts, loc=TileType.ScaleRight if nn else TileType.ScaleLeft)
            else:
                types[name] = _scale_tile(ts, loc)
    for o in ins.operands:
        t = types.get(o.name)
        want = _KIND_TYPES.get(o.kind)
        if want is not None and t is not None and not isinstance(t, want):
            raise VerifyError(f"operand '{o.name}' must be {_KIND_WORDS[o.kind]}, got "
                              f"{_describe(t)}", op=ins.mnemonic, loc=op.loc)
    extra = tuple(ins.ptoas.rules.get(op.name, ())) if ins.ptoas is not None else ()
    check_types_at(op, ins, target, types, b.params, permissive, extra)
    return b


def check_types_at(op: Op, ins: Instr, target: TargetLike, types: dict[str, Any],
                   params: dict[str, Any], permissive: bool,
                   extra: tuple[Any, ...] = ()) -> None:
    """``ins``'s static rules for the types op ``op`` binds (:meth:`Instr.check_types`); what
    they refuse is a VerifyError located at the op."""
    try:
        ins.check_types(target, types, params, permissive, extra)
    except PtoError as e:
        v = VerifyError(e.message, op=e.op or ins.mnemonic, loc=op.loc)
        v.ptoas_rule = e.ptoas_rule
        v.ptoas_source = e.ptoas_source
        raise v from None


# operand kinds of the registry against the types IR values bind to (what the eager API's
# bind() checks on values); the static rules may then rely on them
_KIND_TYPES: dict[str, tuple[type, ...]] = {"tile": (TileSpec,), "gm": (GMSpec,),
                                            "tile|gm": (TileSpec, GMSpec), "scalar": (DType,)}
_KIND_WORDS = {"tile": "a tile", "gm": "a GM view", "tile|gm": "a tile or a GM view",
               "scalar": "a scalar"}


def _describe(t: Any) -> str:
    if isinstance(t, TileSpec):
        return f"a {t.loc.name} tile"
    if isinstance(t, GMSpec):
        return "a GM view"
    if isinstance(t, DType):
        return f"a {t.name} scalar"
    return type(t).__name__

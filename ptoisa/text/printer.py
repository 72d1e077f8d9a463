"""Printer for the IR: canonical .pto text in DPS, SSA or PTO-AS style.

``print_module(mod, form)`` prints every op in one canonical spelling (two-space indent,
one op per line, the keyed ``!pto.tile_buf<loc=..., ...>`` type spelling). ``form`` only
changes how pto compute ops that can be written either way are printed:

* ``"dps"``: ``pto.X ins(...) outs(...)``. An op written in SSA form
  (``%r = pto.X %a : (T) -> Tr``) whose single result is a ``!pto.tile_buf`` is printed as
  ``%r = pto.alloc_tile : Tr`` immediately followed by ``pto.X ins(%a : T) outs(%r : Tr)``,
  unless the op is one of :data:`NON_DPS_OPS` (view/allocation ops that only exist in SSA
  form) or the ``dps_ops`` predicate rejects it.
* ``"ssa"``: a DPS op with exactly one ``outs`` operand becomes ``%r = pto.X ins... : (..) -> T``
  when that operand is a write-once buffer: it is defined by a plain
  ``%r = pto.alloc_tile : T`` in the same block, this op is its first use, and the op is
  its only writer among its uses (every later use reads it). The ``alloc_tile`` is then not
  printed and the op's result takes the buffer's name, so the text stays well-formed SSA.
  Every other DPS op (several outs, no outs, buffers written twice or read before written,
  outs that are GM views as in ``tstore``) stays in DPS form.
* ``"asm"``: as ``"ssa"``, but the convertible ops use the PTO-AS mnemonic
  (``%r = tadd %a, %b : (Ta, Tb) -> Tr``; ``pto.tstore_fp`` <-> ``tstore.fp``). Other ops keep
  their MLIR spelling, which the parser reads in the same file.

Round trips: ``parse(print(m, f))`` is structurally equal to ``m`` when ``m`` has no
convertible op of the other form; in general ``print(parse(print(m, f)), f)`` is a fixed point,
and SSA -> DPS -> SSA is exact. DPS -> SSA -> DPS moves each converted ``alloc_tile`` to just
before its writer (same buffer, same type; only its position in the block changes).
Attribute placement survives conversion: a dictionary written inside ``ins(...)`` is printed
before the ``:`` in SSA form, one written after ``outs(...)`` is printed after the type.
"""

from __future__ import annotations

from collections.abc import Callable

from ptoisa.ir import attrs as A
from ptoisa.ir import types as T
from ptoisa.ir.core import Block, Module, Op, Piece, Region, Value
from ptoisa.text.comments import Comments, comments_of

# pto ops with an SSA result that are not destination-passing compute ops.
NON_DPS_OPS = frozenset(
    """pto.alloc_tile pto.treshape pto.tassign pto.subset pto.subview pto.bitcast pto.bind_tile
    pto.pointer_cast pto.declare_tile pto.declare_tile_memref pto.make_tensor_view
    pto.partition_view pto.tpop_from_aic pto.tpop_from_aiv pto.tget_scale_addr pto.tgetval
    pto.addptr pto.load_scalar pto.reserve_buffer pto.import_reserved_buffer""".split()
)

FORMS = ("dps", "ssa", "asm")


def ir_to_asm_name(name: str) -> str:
    """``pto.tstore_fp`` -> ``tstore.fp``, ``pto.tadd`` -> ``tadd``."""
    m = name[4:] if name.startswith("pto.") else name
    if m.endswith("_fp"):
        m = m[:-3] + ".fp"
    return m


def _result_text(results: tuple[Value, ...]) -> str:
    parts: list[str] = []
    i = 0
    n = len(results)
    while i < n:
        name = results[i].name
        if name.endswith("#0"):
            base = name[:-2]
            k = 1
            while i + k < n and results[i + k].name == f"{base}#{k}":
                k += 1
            parts.append(f"%{base}:{k}")
            i += k
        else:
            parts.append(f"%{name}")
            i += 1
    return ", ".join(parts)


class Printer:
    def __init__(self, form: str, dps_ops: Callable[[str], bool] | None) -> None:
        if form not in FORMS:
            raise ValueError(f"form must be one of {FORMS}, not {form!r}")
        self.form = form
        self.dps_ops = dps_ops
        self.lines: list[str] = []
        self.skip: set[int] = set()  # ids of alloc_tile ops folded into their writer
        self.to_ssa: dict[int, Value] = {}  # id(dps op) -> buffer value that becomes its result
        self.comments = Comments()
        self.folded: dict[int, Op] = {}  # id(writer) -> the alloc_tile folded into it
        #: (op, why) for each pto DPS op printed in DPS form although ``form`` is ssa/asm
        self.kept: list[tuple[Op, str]] = []

    # ------------------------------------------------------------- analysis
    def analyse(self, mod: Module) -> None:
        if self.form == "dps":
            for op in mod.walk():
                if (op.form == "ssa" and op.name.startswith("pto.")
                        and op.name not in NON_DPS_OPS and not self._dps_ok(op)):
                    self.kept.append((op, self._why_not_dps(op)))
            return
        uses: dict[int, list[tuple[Op, int, int]]] = {}  # id(value) -> (op, operand idx, block)
        allocs: dict[int, tuple[Op, int]] = {}  # id(value) -> (alloc op, block id)

        def visit(block: Block) -> None:
            bid = id(block)
            for op in block.ops:
                for k, v in enumerate(op.operands):
                    uses.setdefault(id(v), []).append((op, k, bid))
                if (
                    op.name == "pto.alloc_tile"
                    and not op.operands
                    and len(op.results) == 1
                    and not op.attributes.items
                    and not op.regions
                    and len(op.syntax) == 2
                    and op.syntax[0] == Piece("p", ":")
                    and isinstance(op.results[0].type, T.TileBufType)
                ):
                    allocs[id(op.results[0])] = (op, bid)
                for region in op.regions:
                    for b in region.blocks:
                        visit(b)

        for top in mod.ops:
            for region in top.regions:
                for b in region.blocks:
                    visit(b)
        for op in mod.ops:  # ops directly in the module body
            for k, v in enumerate(op.operands):
                uses.setdefault(id(v), []).append((op, k, 0))
        for vid, (alloc, bid) in allocs.items():
            vuses = uses.get(vid)
            if not vuses:
                continue
            w, k, wbid = vuses[0]
            if (
                wbid != bid
                or w.form != "dps"
                or w.n_outs != 1
                or k != w.n_ins
                or len(w.operands) != w.n_ins + 1
                or w.syntax
                or id(w) in self.to_ssa
                or not self._ssa_ok(w)
                or any(u[0] is w for u in vuses[1:])
            ):
                continue
            v = alloc.results[0]
            if w.operand_types[k] not in (None, v.type):
                continue
            self.skip.add(id(alloc))
            self.to_ssa[id(w)] = v
            self.folded[id(w)] = alloc
        for op in mod.walk():
            if op.form != "dps" or not op.name.startswith("pto.") or id(op) in self.to_ssa:
                continue
            if not self._ssa_ok(op):
                why = f"has no {self.form.upper()} form"
            elif op.n_outs != 1:
                why = f"has {op.n_outs} outs (the {self.form.upper()} form has one result)"
            else:
                why = ("writes a buffer that is not fresh (the SSA form needs an alloc_tile of "
                       "the same block that this op writes first and alone)")
            self.kept.append((op, why))

    def _why_not_dps(self, op: Op) -> str:
        if len(op.results) != 1:
            return f"has {len(op.results)} results (the DPS form writes one outs buffer)"
        t = op.results[0].type
        if not isinstance(t, T.TileBufType):
            return f"returns {t}, not a !pto.tile_buf (DPS writes into a buffer)"
        return "has no DPS form"

    def _ssa_ok(self, op: Op) -> bool:
        if not op.name.startswith("pto.") or op.name in NON_DPS_OPS:
            return False
        return self.dps_ops is None or self.dps_ops(op.name)

    def _dps_ok(self, op: Op) -> bool:
        return (
            op.form == "ssa"
            and len(op.results) == 1
            and isinstance(op.results[0].type, T.TileBufType)
            and self._ssa_ok(op)
        )

    # -------------------------------------------------------------- printing
    def module(self, mod: Module) -> str:
        self.comments = comments_of(mod) or Comments()
        self.analyse(mod)
        self.comment_lines(self.comments.head, "")
        if mod.implicit:
            for op in mod.ops:
                self.op(op, 0)
        else:
            head = "module"
            if mod.name is not None:
                head += f" {A.SymbolRefAttr(mod.name)}"
            if mod.attributes.items:
                head += f" attributes {mod.attributes}"
            self.lines.append(head + " {")
            for op in mod.ops:
                self.op(op, 1)
            self.comment_lines(self.comments.module_end, "  ")
            self.lines.append("}")
        self.comment_lines(self.comments.tail, "")
        return "\n".join(self.lines) + "\n"

    def comment_lines(self, group: list[str], ind: str) -> None:
        self.lines.extend(ind + c if c else "" for c in group)

    def types_of(self, op: Op, idx: range) -> list[str]:
        out: list[str] = []
        for k in idx:
            written = op.operand_types[k] if k < len(op.operand_types) else None
            out.append(str(written if written is not None else op.operands[k].type))
        return out

    def op(self, op: Op, depth: int) -> None:
        """``op`` with its comments: the lines before it, the one at the end of its line."""
        if id(op) in self.skip:
            return
        c = self.comments
        ind = "  " * depth
        alloc = self.folded.get(id(op))
        if alloc is not None:  # the folded alloc_tile's comments go with the op it became
            self.comment_lines(c.before.get(alloc, []), ind)
            if alloc in c.eol:
                self.lines.append(ind + c.eol[alloc])
        self.comment_lines(c.before.get(op, []), ind)
        self.op_text(op, depth)
        if op in c.eol:
            self.lines[-1] += "  " + c.eol[op]

    def op_text(self, op: Op, depth: int) -> None:
        ind = "  " * depth
        form = op.form
        if form == "func":
            self.func(op, depth)
            return
        if form == "for":
            self.for_op(op, depth)
            return
        if form == "while":
            self.while_op(op, depth)
            return
        if form == "generic":
            self.generic(op, depth)
            return
        if form == "dps":
            buf = self.to_ssa.get(id(op))
            if buf is not None:
                self.lines.append(ind + self.ssa_text(op, (buf,), op.n_ins))
            else:
                self.lines.append(ind + self.dps_text(op, op.operands, op.n_ins, op.n_outs))
            return
        if form == "ssa":
            if self.form == "dps" and self._dps_ok(op):
                r = op.results[0]
                self.lines.append(f"{ind}%{r.name} = pto.alloc_tile : {r.type}")
                self.lines.append(ind + self.dps_text(op, op.operands + (r,), op.n_ins, 1))
            else:
                self.lines.append(ind + self.ssa_text(op, op.results, len(op.operands)))
            return
        self.custom(op, depth)

    def attr_dict(self, op: Op, keys: tuple[str, ...] | None = None) -> str:
        items = op.attributes.items
        if keys is not None:
            d = dict(items)
            items = tuple((k, d[k]) for k in keys)
        return A.format_attr_dict(items)

    def dps_text(self, op: Op, operands: tuple[Value, ...], n_ins: int, n_outs: int) -> str:
        has_attrs = bool(op.attributes.items)
        types = self.types_of_values(op, operands)
        parts = [op.name]
        if n_ins or op.attr_place == "ins" or not n_outs:
            ins = ", ".join(f"%{v.name}" for v in operands[:n_ins])
            if has_attrs and op.attr_place == "ins":
                ins += (" " if ins else "") + self.attr_dict(op)
            tys = ", ".join(types[:n_ins])
            parts.append(f" ins({ins} : {tys})" if n_ins else f" ins({ins})")
        if n_outs:
            outs = ", ".join(f"%{v.name}" for v in operands[n_ins : n_ins + n_outs])
            parts.append(f" outs({outs} : {', '.join(types[n_ins : n_ins + n_outs])})")
        if has_attrs and op.attr_place != "ins":
            parts.append(" " + self.attr_dict(op))
        text = "".join(parts)
        if op.syntax:
            text += " " + self.pieces(op, op.syntax, after_name=False)
        return text

    def types_of_values(self, op: Op, operands: tuple[Value, ...]) -> list[str]:
        out: list[str] = []
        for k, v in enumerate(operands):
            written = op.operand_types[k] if k < len(op.operand_types) else None
            out.append(str(written if written is not None else v.type))
        return out

    def ssa_text(self, op: Op, results: tuple[Value, ...], n_ins: int) -> str:
        name = op.name
        if self.form == "asm":
            name = ir_to_asm_name(name)
        head = f"{_result_text(results)} = " if results else ""
        ins = ", ".join(f"%{v.name}" for v in op.operands[:n_ins])
        text = f"{head}{name}" + (f" {ins}" if ins else "")
        has_attrs = bool(op.attributes.items)
        if has_attrs and op.attr_place == "ins":
            text += " " + self.attr_dict(op)
        tys = self.types_of_values(op, op.operands[:n_ins])
        res = [str(r.type) for r in results]
        res_text = res[0] if len(res) == 1 else f"({', '.join(res)})"
        text += f" : ({', '.join(tys)}) -> {res_text}"
        if has_attrs and op.attr_place != "ins":
            text += " " + self.attr_dict(op)
        return text

    def pieces(self, op: Op, pieces: tuple[Piece, ...], after_name: bool = True) -> str:
        out: list[str] = []
        prev_kind = "name" if after_name else "p"
        prev = ""
        for p in pieces:
            kind = p.kind
            if kind == "v":
                t = f"%{op.operands[p.value].name}"  # type: ignore[index]
            elif kind in ("t", "a"):
                t = str(p.value)
            elif kind in ("k", "p"):
                t = str(p.value)
            elif kind == "d":
                t = self.attr_dict(op, p.value)  # type: ignore[arg-type]
            elif kind == "P":
                t = "<" + self.attr_dict(op, p.value) + ">"  # type: ignore[arg-type]
            elif kind == "s":
                t = f"^{p.value}"
            elif kind == "r":
                t = "\x00" + str(p.value)  # region marker, expanded by the caller
            else:  # pragma: no cover - pieces are produced by the parser only
                raise ValueError(f"bad piece {p}")
            if out or after_name:
                space = not (
                    t in (",", ")", "]")
                    or prev in ("(", "[")
                    or (t in ("(", "[") and prev_kind in ("k", "v", "name", "sym", "s"))
                )
                if space:
                    out.append(" ")
            out.append(t)
            prev = t
            prev_kind = "sym" if kind == "a" and isinstance(p.value, A.SymbolRefAttr) else kind
        return "".join(out)

    def custom(self, op: Op, depth: int) -> None:
        ind = "  " * depth
        head = f"{_result_text(op.results)} = " if op.results else ""
        name = ir_to_asm_name(op.name) if op.form == "asm" else op.name
        text = head + name + self.pieces(op, op.syntax)
        self.emit_with_regions(text, op.regions, depth, ind)

    def emit_with_regions(
        self, text: str, regions: tuple[Region, ...], depth: int, ind: str
    ) -> None:
        if "\x00" not in text:
            self.lines.append(ind + text)
            return
        segs = text.split("\x00")
        line = ind + segs[0]
        for seg in segs[1:]:
            digits = len(seg) - len(seg.lstrip("0123456789"))
            idx, rest = int(seg[:digits]), seg[digits:]
            self.lines.append(line + "{")
            self.region_body(regions[idx], depth + 1, show_entry_args=True)
            line = ind + "}" + rest
        self.lines.append(line)

    def region_body(self, region: Region, depth: int, show_entry_args: bool) -> None:
        for n, block in enumerate(region.blocks):
            if n > 0 or block.label is not None or (show_entry_args and block.args):
                label = block.label or f"bb{n}"
                args = ", ".join(f"%{a.name}: {a.type}" for a in block.args)
                self.lines.append(
                    "  " * (depth - 1) + f"^{label}" + (f"({args})" if args else "") + ":"
                )
            for op in block.ops:
                self.op(op, depth)
            self.comment_lines(self.comments.end.get(block, []), "  " * depth)

    def func(self, op: Op, depth: int) -> None:
        ind = "  " * depth
        d = dict(op.attributes.items)
        ftype = d["function_type"]
        assert isinstance(ftype, A.TypeAttr) and isinstance(ftype.type, T.FunctionType)
        fn = ftype.type
        vis = d.get("sym_visibility")
        head = "func.func "
        if isinstance(vis, A.StringAttr):
            head += vis.value + " "
        name = d["sym_name"]
        assert isinstance(name, A.StringAttr)
        head += str(A.SymbolRefAttr(name.value))
        arg_attrs = d.get("arg_attrs")
        res_attrs = d.get("res_attrs")
        body = op.regions[0].blocks[0] if op.regions else None
        params: list[str] = []
        for k, ty in enumerate(fn.inputs):
            p = f"%{body.args[k].name}: {ty}" if body is not None else str(ty)
            if isinstance(arg_attrs, A.ArrayAttr) and arg_attrs.elements[k] != A.DictAttr(()):
                p += f" {arg_attrs.elements[k]}"
            params.append(p)
        head += f"({', '.join(params)})"
        if fn.results:
            outs = []
            for k, ty in enumerate(fn.results):
                r = str(ty)
                if isinstance(res_attrs, A.ArrayAttr) and res_attrs.elements[k] != A.DictAttr(()):
                    r += f" {res_attrs.elements[k]}"
                outs.append(r)
            if (
                len(outs) == 1
                and res_attrs is None
                and not isinstance(fn.results[0], T.FunctionType)
            ):
                head += f" -> {outs[0]}"
            else:
                head += f" -> ({', '.join(outs)})"
        rest = tuple(
            (k, v)
            for k, v in op.attributes.items
            if k not in ("sym_visibility", "sym_name", "function_type", "arg_attrs", "res_attrs")
        )
        if rest:
            head += f" attributes {A.format_attr_dict(rest)}"
        if not op.regions:
            self.lines.append(ind + head)
            return
        self.lines.append(ind + head + " {")
        self.region_body(op.regions[0], depth + 1, show_entry_args=False)
        self.lines.append(ind + "}")

    def for_op(self, op: Op, depth: int) -> None:
        ind = "  " * depth
        block = op.regions[0].blocks[0]
        iv = block.args[0]
        lb, ub, step = op.operands[:3]
        inits = op.operands[3:]
        head = f"{_result_text(op.results)} = " if op.results else ""
        head += f"scf.for %{iv.name} = %{lb.name} to %{ub.name} step %{step.name}"
        if inits:
            pairs = ", ".join(
                f"%{a.name} = %{v.name}" for a, v in zip(block.args[1:], inits, strict=True)
            )
            tys = ", ".join(str(a.type) for a in block.args[1:])
            head += f" iter_args({pairs}) -> ({tys})"
        if op.syntax:
            head += f" : {iv.type}"
        self.lines.append(ind + head + " {")
        self.region_body(op.regions[0], depth + 1, show_entry_args=False)
        self.lines.append(ind + "}" + (" " + self.attr_dict(op) if op.attributes.items else ""))

    def while_op(self, op: Op, depth: int) -> None:
        ind = "  " * depth
        before, after = op.regions
        head = f"{_result_text(op.results)} = " if op.results else ""
        pairs = ", ".join(
            f"%{a.name} = %{v.name}"
            for a, v in zip(before.blocks[0].args, op.operands, strict=True)
        )
        head += f"scf.while ({pairs}) : {op.syntax[0].value} {{"
        self.lines.append(ind + head)
        self.region_body(before, depth + 1, show_entry_args=False)
        self.lines.append(ind + "} do {")
        self.region_body(after, depth + 1, show_entry_args=True)
        self.lines.append(ind + "}")

    def generic(self, op: Op, depth: int) -> None:
        ind = "  " * depth
        head = f"{_result_text(op.results)} = " if op.results else ""
        text = head + A.quote(op.name) + "(" + ", ".join(f"%{v.name}" for v in op.operands) + ")"
        for p in op.syntax:
            if p.kind == "P":
                text += " <" + self.attr_dict(op, p.value) + ">"  # type: ignore[arg-type]
        for p in op.syntax:
            if p.kind == "d":
                tail = " " + self.attr_dict(op, p.value)  # type: ignore[arg-type]
                break
        else:
            tail = ""
        ins = ", ".join(self.types_of(op, range(len(op.operands))))
        res = ", ".join(str(r.type) for r in op.results)
        tail += f" : ({ins}) -> ({res})"
        if not op.regions:
            self.lines.append(ind + text + tail)
            return
        self.lines.append(ind + text + " ({")
        for k, region in enumerate(op.regions):
            self.region_body(region, depth + 1, show_entry_args=True)
            if k + 1 < len(op.regions):
                self.lines.append(ind + "}, {")
        self.lines.append(ind + "})" + tail)


def print_module(
    mod: Module,
    form: str = "dps",
    dps_ops: Callable[[str], bool] | None = None,
    kept: list[tuple[Op, str]] | None = None,
) -> str:
    """Canonical text of ``mod`` (see the module docstring for ``form``).

    ``dps_ops(name)``, if given, says whether a pto op may be converted between DPS and SSA
    form (default: every pto op not in :data:`NON_DPS_OPS`). ``kept``, if given, receives
    ``(op, reason)`` for every pto op that ``form`` ssa/asm had to leave in DPS form (and,
    for ``form`` dps, every SSA compute op it had to leave in SSA form).
    """
    p = Printer(form, dps_ops)
    text = p.module(mod)
    if kept is not None:
        kept.extend(p.kept)
    return text

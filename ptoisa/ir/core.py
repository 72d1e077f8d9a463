"""IR containers: values, ops, blocks, regions, modules.

Ops are immutable records. A pto op keeps the form it was written in (``form``):

* ``"dps"``: ``pto.X ins(<ins> : ...) outs(<outs> : ...)``; ``op.inputs``/``op.outs`` split
  ``op.operands`` (``n_ins``/``n_outs``), and any operands after them come from a trailing
  custom part (``syntax``, e.g. ``pad_value = %v : f32`` of ``tload``).
* ``"ssa"``: ``%r = pto.X %a, %b : (Ta, Tb) -> Tr``; all operands are ins, ``op.results``.
* ``"generic"``: ``"pto.X"(%a) <{props}> {attrs} : (Ta) -> Tr``.
* ``"custom"``: any other op-specific spelling (``pto.make_tensor_view %p, shape = [...]``,
  ``arith.constant 0 : index``, ``scf.if``...). ``syntax`` is the written sequence of pieces
  (see :class:`Piece`), which the printer replays; operands appear in it by index.
* ``"asm"``: the PTO-AS statement form (``%d = tadd %a, %b : !pto.tile<...>``); ``syntax``
  holds the pieces after the mnemonic.

``func.func``, ``scf.for`` and ``scf.while`` have their own structured spellings (form
``"func"``, ``"for"``, ``"while"``); their region arguments are the block arguments.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from ptoisa.errors import SourceLoc
from ptoisa.ir.attrs import Attribute, DictAttr, StringAttr, SymbolRefAttr
from ptoisa.ir.types import Type

EMPTY_ATTRS = DictAttr(())


@dataclass(eq=False, slots=True)
class Value:
    """An SSA value. Identity matters (``eq`` is ``is``); ``name`` is the text name without ``%``.

    ``loc`` is where it is defined; ``owner`` is ``"op"``, ``"arg"`` or ``"free"`` (a use of a
    name never defined, kept only when parsing with ``verify=False``).
    """

    name: str
    type: Type
    loc: SourceLoc | None = None
    owner: str = "op"

    def __repr__(self) -> str:
        return f"%{self.name}: {self.type}"


@dataclass(frozen=True, slots=True)
class Piece:
    """One item of a custom spelling.

    ``kind`` is one of: ``"v"`` operand (``value`` = operand index), ``"t"`` a written type,
    ``"a"`` an attribute literal (``7``, ``"s"``, ``#pto.pipe<PIPE_V>``, ``<PIPE_V>``, ``@f``),
    ``"k"`` a keyword (``offsets``, ``to``, ``else``), ``"p"`` punctuation (``, = : -> ( ) [ ]``),
    ``"d"`` an attribute dictionary (``value`` = tuple of keys into ``op.attributes``),
    ``"r"`` a region (``value`` = region index), ``"s"`` a successor block (``value`` = its
    label without ``^``; the operands written after it are the values it passes).
    """

    kind: str
    value: object


@dataclass(frozen=True, eq=False, slots=True)
class Op:
    name: str
    operands: tuple[Value, ...] = ()
    results: tuple[Value, ...] = ()
    attributes: DictAttr = EMPTY_ATTRS
    regions: tuple[Region, ...] = ()
    loc: SourceLoc | None = None
    form: str = "custom"
    n_ins: int = 0
    n_outs: int = 0
    attr_place: str = "after"
    operand_types: tuple[Type | None, ...] = ()
    syntax: tuple[Piece, ...] = ()
    result_types_written: bool = True

    @property
    def inputs(self) -> tuple[Value, ...]:
        """The input operands (``ins(...)`` in DPS form; all operands in SSA form)."""
        if self.form in ("dps", "ssa"):
            return self.operands[: self.n_ins]
        return self.operands

    @property
    def outs(self) -> tuple[Value, ...]:
        """The destination operands of a DPS op (empty for other forms)."""
        if self.form == "dps":
            return self.operands[self.n_ins : self.n_ins + self.n_outs]
        return ()

    @property
    def extra_operands(self) -> tuple[Value, ...]:
        """Operands of a DPS op written after ``outs(...)`` (keyword operands)."""
        if self.form == "dps":
            return self.operands[self.n_ins + self.n_outs :]
        return ()

    def attr(self, key: str) -> Attribute | None:
        return self.attributes.get(key)

    @property
    def literals(self) -> tuple[Attribute, ...]:
        """Attribute literals of a custom spelling in written order (``<PIPE_V>``, ``0``...)."""
        return tuple(p.value for p in self.syntax if p.kind == "a")  # type: ignore[misc]

    def written(self) -> tuple[list[Value], list[tuple[Value, bool]]]:
        """The written ins and outs (an out is (value, is_ssa_result)), whatever the form:
        DPS ``ins(...) outs(...)`` (keyword operands after ``outs`` count as ins), SSA operands
        -> results, or a custom spelling that still writes ``ins(`` / ``outs(`` (abbreviated
        types make the parser keep it custom)."""
        if self.form == "dps":
            return list(self.inputs) + list(self.extra_operands), [(v, False) for v in self.outs]
        if self.form == "custom":
            keys = {p.value for p in self.syntax if p.kind == "k"}
            if "ins" in keys and "outs" in keys:
                where = "pre"
                inputs: list[Value] = []
                outs: list[tuple[Value, bool]] = []
                for p in self.syntax:
                    if p.kind == "k" and p.value in ("ins", "outs"):
                        where = str(p.value)
                    elif p.kind == "v":
                        v = self.operands[int(p.value)]  # type: ignore[call-overload]
                        if where == "outs":
                            outs.append((v, False))
                        else:
                            inputs.append(v)
                return inputs, outs + [(r, True) for r in self.results]
        return list(self.operands), [(v, True) for v in self.results]

    def keyword_groups(self) -> tuple[list[Value], dict[str, list[Value]]] | None:
        """A custom spelling's operands grouped under keywords (``pto.comm.tput(%d, %s,
        buf(%ping, %pong) : ...)``): (the values written outside a group, keyword -> its
        values); None when the op writes no such group."""
        if self.form != "custom":
            return None
        plain: list[Value] = []
        groups: dict[str, list[Value]] = {}
        kw: str | None = None
        cur: list[Value] | None = None
        depth = 0
        for p in self.syntax:
            if p.kind == "p" and p.value == ":" and depth <= 1:
                break
            if p.kind == "k":
                kw = str(p.value)
            elif p.kind == "p" and p.value == "(":
                depth += 1
                if depth == 2 and kw is not None:
                    cur = groups.setdefault(kw, [])
            elif p.kind == "p" and p.value == ")":
                depth -= 1
                if depth <= 1:
                    cur, kw = None, None
            elif p.kind == "v":
                v = self.operands[int(p.value)]  # type: ignore[call-overload]
                (cur if cur is not None else plain).append(v)
                kw = None if cur is None else kw
        return (plain, groups) if groups else None

    def grouped(self, keyword: str) -> list[int]:
        """Indices of the operands written inside ``keyword(...)`` anywhere in a custom
        spelling (``pto.tpop_from_aic {..} aiv_subblockid(%id)``)."""
        s = self.syntax
        out: list[int] = []
        for j in range(len(s) - 1):
            if s[j] == Piece("k", keyword) and s[j + 1] == Piece("p", "("):
                k = j + 2
                while k < len(s) and s[k] != Piece("p", ")"):
                    if s[k].kind == "v":
                        out.append(int(s[k].value))  # type: ignore[call-overload]
                    k += 1
        return out

    def indexed_operand(self) -> str | None:
        """The text of a PTO-AS operand written with a base offset (``%view[%r, %c]``), if
        the op has one."""
        s = self.syntax
        for j in range(len(s) - 1):
            if s[j].kind == "v" and s[j + 1] == Piece("p", "["):
                k = next((m for m in range(j + 1, len(s)) if s[m] == Piece("p", "]")),
                         len(s) - 1)
                parts = []
                for p in s[j:k + 1]:
                    if p.kind == "v":
                        parts.append("%" + self.operands[int(p.value)].name)  # type: ignore
                    else:
                        parts.append(", " if p.value == "," else str(p.value))
                return "".join(parts)
        return None

    @property
    def keyword_operands(self) -> dict[str, Value]:
        """``key = %v`` operands of a custom spelling (``valid_row = %c32``, ``addr = %a``)."""
        out: dict[str, Value] = {}
        s = self.syntax
        for i in range(len(s) - 2):
            if s[i].kind == "k" and s[i + 1] == _EQ and s[i + 2].kind == "v":
                out[str(s[i].value)] = self.operands[int(s[i + 2].value)]  # type: ignore[call-overload]
        return out

    @property
    def sym_name(self) -> str | None:
        a = self.attributes.get("sym_name")
        return a.value if isinstance(a, StringAttr) else None

    @property
    def callee(self) -> str | None:
        for p in self.syntax:
            if p.kind == "a" and isinstance(p.value, SymbolRefAttr):
                return p.value.name
        return None

    def walk(self) -> Iterator[Op]:
        """This op and every op nested in its regions, in pre-order."""
        yield self
        for region in self.regions:
            for block in region.blocks:
                for op in block.ops:
                    yield from op.walk()

    def __repr__(self) -> str:
        return f"<Op {self.name} form={self.form} at {self.loc}>"


_EQ = Piece("p", "=")


@dataclass(frozen=True, eq=False, slots=True)
class Block:
    ops: tuple[Op, ...] = ()
    args: tuple[Value, ...] = ()
    label: str | None = None


@dataclass(frozen=True, eq=False, slots=True)
class Region:
    blocks: tuple[Block, ...] = ()

    @property
    def block(self) -> Block:
        """The single block of the region (every corpus region has one)."""
        return self.blocks[0]


@dataclass(frozen=True, eq=False, slots=True)
class Module:
    """A ``module { ... }`` (``implicit`` when the text had no ``module`` wrapper)."""

    ops: tuple[Op, ...] = ()
    attributes: DictAttr = EMPTY_ATTRS
    name: str | None = None
    loc: SourceLoc | None = None
    implicit: bool = False
    filename: str = "<string>"
    extra: dict[str, object] = field(default_factory=dict)

    def functions(self) -> list[Op]:
        """The ``func.func`` ops, in order (including nested ``module``s)."""
        return [op for top in self.ops for op in top.walk() if op.name == "func.func"]

    def lookup(self, name: str) -> Op | None:
        for f in self.functions():
            if f.sym_name == name:
                return f
        return None

    def walk(self) -> Iterator[Op]:
        for op in self.ops:
            yield from op.walk()

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Module):
            return NotImplemented
        return structurally_equal(self, other)

    __hash__ = None  # type: ignore[assignment]


# ---- structural equality (``Module.__eq__``; re-exported by ptoisa.ir.equality) ------------
# Source locations and SSA value names are ignored (values are compared by where they are
# defined), so ``parse(print(m))`` equals ``m`` even though every location differs.

class _Keyer:
    def __init__(self) -> None:
        self.ids: dict[int, int] = {}

    def define(self, v: Value) -> tuple[object, ...]:
        self.ids[id(v)] = len(self.ids)
        return (v.type,)

    def use(self, v: Value) -> object:
        n = self.ids.get(id(v))
        return ("free", v.name) if n is None else n

    def op(self, op: Op) -> tuple[object, ...]:
        operands = tuple(self.use(v) for v in op.operands)
        results = tuple(self.define(v) for v in op.results)
        regions = tuple(self.region(r) for r in op.regions)
        syntax = tuple(
            (p.kind, frozenset(p.value) if p.kind in "dP" else p.value)  # type: ignore[arg-type]
            for p in op.syntax
        )
        written = tuple(op.operand_types) + (None,) * (len(op.operands) - len(op.operand_types))
        return (
            op.name,
            op.form,
            op.n_ins,
            op.n_outs,
            op.attr_place if op.attributes.items else "",
            operands,
            written,
            results,
            op.attributes,
            syntax,
            regions,
        )

    def block(self, b: Block) -> tuple[object, ...]:
        args = tuple(self.define(a) for a in b.args)
        return (args, tuple(self.op(o) for o in b.ops))

    def region(self, r: Region) -> tuple[object, ...]:
        return tuple(self.block(b) for b in r.blocks)


def module_key(mod: Module) -> tuple[object, ...]:
    k = _Keyer()
    return (mod.name, mod.attributes, mod.implicit, tuple(k.op(o) for o in mod.ops))


def structurally_equal(a: Module, b: Module) -> bool:
    """True when ``a`` and ``b`` are the same program up to locations and value names."""
    return module_key(a) == module_key(b)


def first_difference(a: Module, b: Module) -> str | None:
    """A short description of where two modules first differ (for test failure messages)."""
    ka, kb = module_key(a), module_key(b)
    if ka == kb:
        return None
    ops_a, ops_b = list(a.walk()), list(b.walk())
    for x, y in zip(ops_a, ops_b, strict=False):
        if x.name != y.name or x.form != y.form or x.attributes != y.attributes:
            return f"{x.loc}: {x.name}/{x.form} vs {y.loc}: {y.name}/{y.form}"
        if [v.type for v in x.results] != [v.type for v in y.results]:
            return f"{x.loc}: result types of {x.name} differ"
        if x.syntax != y.syntax and (len(x.syntax) != len(y.syntax)):
            return f"{x.loc}: spelling of {x.name} differs"
    if len(ops_a) != len(ops_b):
        return f"{len(ops_a)} ops vs {len(ops_b)} ops"
    return "operand wiring or attributes differ"

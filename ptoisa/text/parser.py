"""Recursive-descent parser for .pto text (PTOAS MLIR dialect) and PTO-AS statements.

One generic reader covers every op spelling: an op body is read as a sequence of pieces
(operands, types, attribute literals, keywords, punctuation, attribute dictionaries, regions),
then classified by shape into the DPS form (``ins(...) outs(...)``), the SSA form
(``%r = pto.X %a : (T) -> T``) or left as a custom spelling that the printer replays.
Only ``func.func``, ``scf.for``, ``scf.while`` and the generic ``"op"(...)`` form, which bind
region arguments or carry types in fixed places, have dedicated readers. No per-instruction
parse code: the registry decides later what each op means.

Inside a custom body a new line ends the op unless the line continues it (it starts with
``:``, ``->``, ``,``, ``{``, ``outs``, ``ins``, ``to``, ``step``, ``iter_args``, ``else``,
``do``, ``attributes`` or ``key =``, or the previous line ends with ``,``, ``:``, ``->``,
``=``, ``(`` or ``[``); brackets always continue.
"""

from __future__ import annotations

from collections.abc import Callable

from ptoisa.errors import ParseError, SourceLoc
from ptoisa.ir import attrs as A
from ptoisa.ir import types as T
from ptoisa.ir.core import EMPTY_ATTRS, Block, Module, Op, Piece, Region, Value
from ptoisa.ptoas_source import MLIR_PARSE
from ptoisa.text.attributes import AttributeParser, _int, _unescape
from ptoisa.text.base import (
    _BUILTIN_TYPE_RE,
    _CONT_END,
    _CONT_GROUPS,
    _CONT_START,
    _FUNC_DEFAULT,
    _OPAQUE_ATTR_HEADS,
    MLIR_DIALECTS,
    P_ARROW,
    P_COLON,
    P_COMMA,
    P_LPAREN,
    P_RPAREN,
    _Scope,
    asm_to_ir_name,
)
from ptoisa.text.forms import _infer_result_types, _match_dps, _match_ssa, _stray_piece
from ptoisa.text.lexer import (
    BANG,
    CARET,
    EOF,
    FLOAT,
    HASH,
    IDENT,
    INT,
    PUNCT,
    STRING,
    SYMBOL,
    VALUE,
)


class Parser(AttributeParser):
    def parse_module(self) -> Module:
        mod = self.parse_module_body()
        if self.comments.out:
            mod.extra["comments"] = self.comments.out
        return mod

    def parse_module_body(self) -> Module:
        self.comments.out.head.extend(self.take_comments())
        self.skip_aliases()
        kinds, texts = self.kinds, self.texts
        if kinds[self.i] == IDENT and texts[self.i] in ("module", "builtin.module"):
            start = self.i
            self.i += 1
            name = None
            if kinds[self.i] == SYMBOL:
                name = texts[self.i][1:]
                self.i += 1
            attributes = EMPTY_ATTRS
            if self.accept("attributes"):
                attributes = self.parse_attr_dict()
            self.expect("{")
            self.last_op = None
            ops = self.parse_ops(("}",))
            self.comments.out.module_end.extend(self.take_comments(self.last_op))
            self.expect("}")
            self.skip_aliases()
            self.comments.out.tail.extend(self.take_comments())
            if kinds[self.i] != EOF:
                raise self.error(
                    f"expected end of input after module, found {self.describe(self.i)}"
                )
            return Module(tuple(ops), attributes, name, self.loc(start), False, self.src.filename)
        ops = self.parse_ops(())
        if kinds[self.i] != EOF:
            raise self.error(f"unexpected {self.describe(self.i)}")
        self.comments.out.tail.extend(self.take_comments(self.last_op))
        return Module(tuple(ops), EMPTY_ATTRS, None, self.loc(0), True, self.src.filename)

    def skip_aliases(self) -> None:
        """``#name = attr`` / ``!name = type`` definitions at top level."""
        kinds = self.kinds
        while kinds[self.i] in (HASH, BANG) and self.texts[self.i + 1] == "=":
            tok = self.texts[self.i]
            self.i += 2
            if tok[0] == "#":
                self.aliases[tok] = self.parse_attr()
            else:
                self.type_aliases[tok] = self.parse_type()

    def parse_ops(self, enders: tuple[str, ...]) -> list[Op]:
        ops: list[Op] = []
        kinds, texts = self.kinds, self.texts
        while True:
            k = kinds[self.i]
            if k == EOF or (k == PUNCT and texts[self.i] in enders) or k == CARET:
                return ops
            if k in (HASH, BANG) and texts[self.i + 1] == "=":
                self.skip_aliases()
                continue
            ops.append(self.parse_op())

    def parse_region(self, args: list[tuple[str, T.Type, SourceLoc]] | None = None) -> Region:
        self.expect("{")
        self.last_op = None  # a comment after '{' goes with the first op of the region
        self.scopes.append(_Scope())
        self.region_depth += 1
        blocks: list[Block] = []
        block_args = [self.define(n, t, loc, "arg") for n, t, loc in (args or [])]
        label = None
        if self.kinds[self.i] == CARET:
            if args:
                raise self.error("entry block of this region cannot have a label")
            label, block_args = self.parse_block_label()
        while True:
            ops = self.parse_ops(("}",))
            blocks.append(Block(tuple(ops), tuple(block_args), label))
            if self.kinds[self.i] == CARET:
                label, block_args = self.parse_block_label()
                continue
            break
        end = self.take_comments(self.last_op)
        if end:
            self.comments.out.end[blocks[-1]] = end
        self.expect("}")
        self.closed.update(self.scopes.pop().names)
        self.region_depth -= 1
        return Region(tuple(blocks))

    def parse_block_label(self) -> tuple[str, list[Value]]:
        label = self.texts[self.i][1:]
        self.i += 1
        args: list[Value] = []
        if self.accept("("):
            if not self.accept(")"):
                while True:
                    name, loc = self.parse_value_def()
                    self.expect(":")
                    args.append(self.define(name, self.parse_type(), loc, "arg"))
                    if self.accept(")"):
                        break
                    self.expect(",")
        self.expect(":")
        return label, args

    def parse_value_def(self) -> tuple[str, SourceLoc]:
        i = self.i
        if self.kinds[i] != VALUE:
            raise self.error(f"expected SSA value name, found {self.describe(i)}")
        self.i += 1
        return self.texts[i][1:], self.loc(i)

    # ---------------------------------------------------------------------- ops
    def starts_result_list(self, i: int) -> bool:
        kinds, texts = self.kinds, self.texts
        while kinds[i] == VALUE:
            i += 1
            if texts[i] == ":" and kinds[i + 1] == INT:
                i += 2
            if texts[i] == "=":
                return True
            if texts[i] != ",":
                return False
            i += 1
        return False

    def parse_op(self) -> Op:
        lead = self.take_comments(self.last_op)
        op = self.parse_op_body()
        if lead:
            self.comments.out.before[op] = lead + self.comments.out.before.get(op, [])
        self.last_op = op
        return op

    def parse_op_body(self) -> Op:
        kinds, texts = self.kinds, self.texts
        start = self.i
        results: list[tuple[str, int, SourceLoc]] = []
        if kinds[start] == VALUE:
            if not self.starts_result_list(start):
                raise self.error(
                    f"expected an operation, found value {texts[start]} (missing '=' ?)"
                )
            while True:
                name, loc = self.parse_value_def()
                count = 1
                if texts[self.i] == ":" and kinds[self.i + 1] == INT:
                    count = _int(texts[self.i + 1])
                    if count < 1:
                        raise self.error("result group size must be positive", self.i + 1)
                    self.i += 2
                results.append((name, count, loc))
                if self.accept("="):
                    break
                self.expect(",")
        head = self.i
        k = kinds[head]
        t = texts[head]
        nres = sum(c for _, c, _ in results)
        op_loc = self.loc(head)
        if k == STRING:
            return self.parse_generic(results, nres, op_loc)
        if k != IDENT:
            raise self.error(f"expected an operation name, found {self.describe(head)}")
        self.i += 1
        asm = False
        if "." in t:
            if t.split(".", 1)[0] not in MLIR_DIALECTS:
                asm = True
        elif t not in _FUNC_DEFAULT and t != "module":
            asm = True
        if asm and self.mlir_only and self.region_depth == 0:
            # (only there: inside a region a line the layout rules split off an op reads as
            # a PTO-AS statement too, so only the top level tells a PTO-AS file for sure)
            e = self.error(self.not_mlir(t), head)
            e.ptoas_rule, e.ptoas_source = True, MLIR_PARSE.cite
            raise e
        name = asm_to_ir_name(t) if asm else _FUNC_DEFAULT.get(t, t)
        if self.known_ops is not None and name.startswith("pto.") and not self.known_ops(name):
            raise self.error(f"unknown operation '{name}'", head)
        if name == "func.func":
            return self.parse_func(results, op_loc)
        if name == "scf.for":
            return self.parse_for(results, nres, op_loc)
        if name == "scf.while":
            return self.parse_while(results, nres, op_loc)
        return self.parse_custom(name, results, nres, op_loc, asm)

    def not_mlir(self, name: str) -> str:
        """MLIR's refusal of op name ``name`` at the top level (a PTO-AS mnemonic: no dialect
        MLIR knows; the default dialect there is builtin)."""
        why = f"a PTO-AS statement, not MLIR (PTOAS: {MLIR_PARSE.says})"
        if "." in name:
            return f"Dialect '{name.split('.', 1)[0]}' not found for custom op '{name}': {why}"
        return f"custom op '{name}' is unknown (tried 'builtin.{name}' as well): {why}"

    def make_results(
        self, results: list[tuple[str, int, SourceLoc]], types: list[T.Type]
    ) -> tuple[Value, ...]:
        out: list[Value] = []
        k = 0
        for name, count, loc in results:
            for j in range(count):
                ty = types[k] if k < len(types) else T.UNKNOWN
                k += 1
                out.append(self.define(name if count == 1 else f"{name}#{j}", ty, loc))
        return tuple(out)

    # ---- generic form
    def parse_generic(
        self, results: list[tuple[str, int, SourceLoc]], nres: int, loc: SourceLoc
    ) -> Op:
        name = self.parse_string_token()
        if self.known_ops is not None and name.startswith("pto.") and not self.known_ops(name):
            raise self.error(f"unknown operation '{name}'", self.i - 1)
        self.expect("(")
        operands: list[Value] = []
        if not self.accept(")"):
            while True:
                operands.append(self.parse_use())
                if self.accept(")"):
                    break
                self.expect(",")
        items: list[tuple[str, A.Attribute]] = []
        pieces: list[Piece] = []
        if self.texts[self.i] == "<" and self.texts[self.i + 1] == "{":
            self.i += 1
            props = self.parse_attr_dict()
            self.expect(">")
            items.extend(props.items)
            pieces.append(Piece("P", tuple(k for k, _ in props.items)))
        regions: list[Region] = []
        if self.texts[self.i] == "(" and self.texts[self.i + 1] == "{":
            self.i += 1
            while True:
                regions.append(self.parse_region())
                if self.accept(")"):
                    break
                self.expect(",")
        if self.texts[self.i] == "{":
            d = self.parse_attr_dict()
            items.extend(d.items)
            pieces.append(Piece("d", tuple(k for k, _ in d.items)))
        self.expect(":")
        ftype_at = self.i
        ftype = self.parse_type()
        if not isinstance(ftype, T.FunctionType):
            raise self.error("expected a function type '(...) -> (...)'", ftype_at)
        if len(ftype.inputs) != len(operands):
            raise self.error(
                f"'{name}' has {len(operands)} operands but its type lists {len(ftype.inputs)}",
                ftype_at,
            )
        if len(ftype.results) != nres:
            raise self.error(
                f"'{name}' defines {nres} results but its type lists {len(ftype.results)}",
                ftype_at,
            )
        self.check_unique_keys(items, loc)
        return Op(
            name,
            tuple(operands),
            self.make_results(results, list(ftype.results)),
            A.DictAttr(tuple(items)),
            tuple(regions),
            loc,
            "generic",
            len(operands),
            0,
            "after",
            tuple(ftype.inputs),
            tuple(pieces),
        )

    def check_unique_keys(self, items: list[tuple[str, A.Attribute]], loc: SourceLoc) -> None:
        if len({k for k, _ in items}) != len(items):
            seen: set[str] = set()
            for k, _ in items:
                if k in seen:
                    raise ParseError(f"duplicate attribute '{k}'", loc=loc)
                seen.add(k)

    def parse_use(self) -> Value:
        i = self.i
        if self.kinds[i] != VALUE:
            raise self.error(f"expected SSA value, found {self.describe(i)}")
        self.i += 1
        return self.lookup(self.texts[i][1:], i)

    def parse_string_token(self) -> str:
        i = self.i
        if self.kinds[i] != STRING:
            raise self.error(f"expected string, found {self.describe(i)}")
        self.i += 1
        return _unescape(self.texts[i], self, i)

    # ---- func.func
    def parse_func(self, results: list[tuple[str, int, SourceLoc]], loc: SourceLoc) -> Op:
        if results:
            raise ParseError("func.func does not define values", loc=loc)
        items: list[tuple[str, A.Attribute]] = []
        if self.kinds[self.i] == IDENT and self.texts[self.i] in ("private", "public", "nested"):
            items.append(("sym_visibility", A.StringAttr(self.texts[self.i])))
            self.i += 1
        if self.kinds[self.i] != SYMBOL:
            raise self.error(f"expected function name '@name', found {self.describe(self.i)}")
        sym = self.texts[self.i][1:]
        if sym.startswith('"'):
            sym = _unescape(sym, self, self.i)
        self.i += 1
        self.expect("(")
        args: list[tuple[str, T.Type, SourceLoc]] = []
        arg_attrs: list[A.DictAttr] = []
        inputs: list[T.Type] = []
        if not self.accept(")"):
            while True:
                if self.kinds[self.i] == VALUE:
                    name, vloc = self.parse_value_def()
                    self.expect(":")
                    ty = self.parse_type()
                    args.append((name, ty, vloc))
                else:
                    ty = self.parse_type()
                inputs.append(ty)
                arg_attrs.append(
                    self.parse_attr_dict() if self.texts[self.i] == "{" else EMPTY_ATTRS
                )
                if self.accept(")"):
                    break
                self.expect(",")
        if args and len(args) != len(inputs):
            raise ParseError("function arguments must all be named or all be unnamed", loc=loc)
        outputs: list[T.Type] = []
        res_attrs: list[A.DictAttr] = []
        if self.accept("->"):
            if self.accept("("):
                if not self.accept(")"):
                    while True:
                        outputs.append(self.parse_type())
                        res_attrs.append(
                            self.parse_attr_dict() if self.texts[self.i] == "{" else EMPTY_ATTRS
                        )
                        if self.accept(")"):
                            break
                        self.expect(",")
            else:
                outputs.append(self.parse_type())
                res_attrs.append(EMPTY_ATTRS)
        items.append(("sym_name", A.StringAttr(sym)))
        items.append(
            ("function_type", A.TypeAttr(T.intern(T.FunctionType(tuple(inputs), tuple(outputs)))))
        )
        if any(d.items for d in arg_attrs):
            items.append(("arg_attrs", A.ArrayAttr(tuple(arg_attrs))))
        if any(d.items for d in res_attrs):
            items.append(("res_attrs", A.ArrayAttr(tuple(res_attrs))))
        if self.accept("attributes"):
            items.extend(self.parse_attr_dict().items)
        self.check_unique_keys(items, loc)
        regions: tuple[Region, ...] = ()
        if self.texts[self.i] == "{" and self.kinds[self.i] == PUNCT:
            if not args and inputs:
                raise self.error("a function with a body must name its arguments")
            saved = self.scopes
            self.scopes = [_Scope()]
            try:
                regions = (self.parse_region(args),)
            finally:
                self.scopes = saved
        return Op("func.func", (), (), A.DictAttr(tuple(items)), regions, loc, "func")

    # ---- scf.for
    def parse_for(self, results: list[tuple[str, int, SourceLoc]], nres: int, loc: SourceLoc) -> Op:
        iv, iv_loc = self.parse_value_def()
        self.expect("=")
        lb = self.parse_use()
        self.expect("to")
        ub = self.parse_use()
        self.expect("step")
        step = self.parse_use()
        inits: list[Value] = []
        names: list[tuple[str, SourceLoc]] = []
        if self.accept("iter_args"):
            self.expect("(")
            if not self.accept(")"):
                while True:
                    names.append(self.parse_value_def())
                    self.expect("=")
                    inits.append(self.parse_use())
                    if self.accept(")"):
                        break
                    self.expect(",")
        res_types: list[T.Type] = []
        if self.accept("->"):
            res_types = self.parse_type_list_maybe_paren()
        iv_type: T.Type = T.INDEX
        written_iv = False
        if self.accept(":"):
            iv_type = self.parse_type()
            written_iv = True
        if len(res_types) != len(inits):
            raise self.error(
                f"scf.for has {len(inits)} iter_args but {len(res_types)} result types"
            )
        if nres not in (0, len(inits)):  # (results unbound: 'scf.for ... iter_args(...)')
            raise ParseError(
                f"scf.for defines {nres} results but has {len(inits)} iter_args", loc=loc
            )
        args = [(iv, iv_type, iv_loc)] + [
            (n, t, nl) for (n, nl), t in zip(names, res_types, strict=True)
        ]
        region = self.parse_region(args)
        attrs = EMPTY_ATTRS
        if self.texts[self.i] == "{" and self.is_attr_dict(self.i):  # '} {attr = ...}'
            attrs = self.parse_attr_dict()
        syntax = (Piece("t", iv_type),) if written_iv else ()
        op_types: tuple[T.Type | None, ...] = (None, None, None) + tuple(res_types)
        return Op(
            "scf.for",
            (lb, ub, step, *inits),
            self.make_results(results, res_types if nres else []),
            attrs,
            (region,),
            loc,
            "for",
            operand_types=op_types,
            syntax=syntax,
        )

    # ---- scf.while
    def parse_while(
        self, results: list[tuple[str, int, SourceLoc]], nres: int, loc: SourceLoc
    ) -> Op:
        names: list[tuple[str, SourceLoc]] = []
        inits: list[Value] = []
        self.expect("(")
        if not self.accept(")"):
            while True:
                names.append(self.parse_value_def())
                self.expect("=")
                inits.append(self.parse_use())
                if self.accept(")"):
                    break
                self.expect(",")
        self.expect(":")
        at = self.i
        ftype = self.parse_type()
        if not isinstance(ftype, T.FunctionType) or len(ftype.inputs) != len(inits):
            raise self.error("scf.while needs a type '(inits...) -> (results...)'", at)
        if len(ftype.results) != nres:
            raise self.error(
                f"scf.while defines {nres} results, its type lists {len(ftype.results)}", at
            )
        before = self.parse_region(
            [(n, t, nl) for (n, nl), t in zip(names, ftype.inputs, strict=True)]
        )
        self.expect("do")
        after = self.parse_region()
        return Op(
            "scf.while",
            tuple(inits),
            self.make_results(results, list(ftype.results)),
            EMPTY_ATTRS,
            (before, after),
            loc,
            "while",
            operand_types=tuple(ftype.inputs),
            syntax=(Piece("t", ftype),),
        )

    def parse_type_list_maybe_paren(self) -> list[T.Type]:
        if self.accept("("):
            out: list[T.Type] = []
            if self.accept(")"):
                return out
            while True:
                out.append(self.parse_type())
                if self.accept(")"):
                    return out
                self.expect(",")
        return [self.parse_type()]

    # ---- custom bodies (everything else)
    def is_type_start(self, i: int) -> bool:
        k = self.kinds[i]
        if k == BANG:
            return True
        if k == IDENT:
            t = self.texts[i]
            if _BUILTIN_TYPE_RE.match(t):
                return True
            return (
                t in ("memref", "vector", "tensor", "complex", "tuple") and self.texts[i + 1] == "<"
            )
        return False

    def parse_custom(
        self,
        name: str,
        results: list[tuple[str, int, SourceLoc]],
        nres: int,
        loc: SourceLoc,
        asm: bool,
    ) -> Op:
        kinds, texts = self.kinds, self.texts
        pieces: list[Piece] = []
        operands: list[Value] = []
        items: list[tuple[str, A.Attribute]] = []
        regions: list[Region] = []
        depth = 0
        first = True
        piece_tok: dict[int, int] = {}  # first piece of each step -> its token (for errors)
        while True:
            i = self.i
            k = kinds[i]
            t = texts[i]
            piece_tok.setdefault(len(pieces), i)
            if k == EOF:
                break
            if depth == 0:
                if k == PUNCT and t == "}":
                    break
                if k == CARET and self.newline_before(i) and texts[i - 1] != ",":
                    break  # the label of the next block
                if not first and self.newline_before(i):
                    prev = texts[i - 1]
                    cont = (
                        k == PUNCT
                        or (k == IDENT and t in _CONT_START)
                        or (k == IDENT and t in _CONT_GROUPS and texts[i + 1] == "(")
                        or (kinds[i - 1] in (PUNCT, IDENT) and prev in _CONT_END)
                        or (k == IDENT and "." not in t and texts[i + 1] == "=")
                    )
                    if not cont:
                        break
                if k == VALUE and self.starts_result_list(i):
                    break
                if k == IDENT and (("." in t and not first) or t in _FUNC_DEFAULT):
                    break
                if k == IDENT and "." in t and self.newline_before(i):
                    break  # an op of no operands (pto.set_atomic_add): the next line's op
                if k in (HASH, BANG) and texts[i + 1] == "=" and not asm:
                    break
            first = False
            if k == CARET:  # a successor block (cf.br ^bb1(%v : i32), cf.cond_br ...)
                self.i += 1
                pieces.append(Piece("s", t[1:]))
                continue
            if k == VALUE:
                operands.append(self.parse_use())
                pieces.append(Piece("v", len(operands) - 1))
                continue
            if k == PUNCT:
                if (
                    t == ":"
                    and (self.is_type_start(i + 1) or texts[i + 1] in ("(", "<"))
                    and not (kinds[i + 1] == INT and pieces and pieces[-1].kind == "v")
                ):
                    self.i += 1
                    pieces.append(P_COLON)
                    self.parse_type_pieces(pieces)
                    continue
                if (
                    t == ":"
                    and texts[i + 1] in (")", ",", "}", "]", "")
                    and kinds[i + 1]
                    in (
                        PUNCT,
                        EOF,
                    )
                ):
                    raise self.error(f"expected a type, found {self.describe(i + 1)}", i + 1)
                if t == "->":
                    self.i += 1
                    pieces.append(P_ARROW)
                    if texts[self.i] == "(":
                        self.i += 1
                        pieces.append(P_LPAREN)
                        if not self.accept(")"):
                            self.parse_type_pieces(pieces)
                            self.expect(")")
                        pieces.append(P_RPAREN)
                    else:  # one type, or several (``-> !pto.mask<b32>, i32``)
                        self.parse_type_pieces(pieces)
                    continue
                if t in "([":
                    depth += 1
                    self.i += 1
                    pieces.append(Piece("p", t))
                    continue
                if t in ")]":
                    if depth == 0:
                        break
                    depth -= 1
                    self.i += 1
                    pieces.append(Piece("p", t))
                    continue
                if t == "{":
                    first_region = name in _REGION_OPS and (
                        not regions or pieces[-1] == Piece("k", "else"))
                    if self.is_attr_dict(i) and not first_region:  # ('{}' there: a region)
                        d = self.parse_attr_dict()
                        items.extend(d.items)
                        pieces.append(Piece("d", tuple(key for key, _ in d.items)))
                    else:
                        regions.append(self.parse_region())
                        pieces.append(Piece("r", len(regions) - 1))
                    continue
                if t == "<":
                    pieces.append(Piece("a", A.DialectAttr("", self.angle_body())))
                    continue
                if t in ",=?*+|-:":
                    self.i += 1
                    pieces.append(Piece("p", t))
                    continue
                raise self.error(f"unexpected {self.describe(i)} in '{name}'")
            if k == IDENT:
                if t == "loc" and texts[i + 1] == "(":
                    self.skip_balanced()
                    continue
                if t in ("true", "false"):
                    self.i += 1
                    pieces.append(Piece("a", A.BoolAttr(t == "true")))
                    continue
                if t in _OPAQUE_ATTR_HEADS and texts[i + 1] == "<":
                    pieces.append(Piece("a", self.parse_attr(allow_type=False)))
                    continue
                if t == "to" and self.is_type_start(i + 1):
                    self.i += 1
                    pieces.append(Piece("k", "to"))
                    pieces.append(Piece("t", self.parse_type()))
                    continue
                if self.is_type_start(i) and texts[i + 1] in ("<",):
                    pieces.append(Piece("t", self.parse_type()))
                    continue
                self.i += 1
                pieces.append(Piece("k", t))
                continue
            if k == BANG:
                pieces.append(Piece("t", self.parse_type()))
                continue
            if k in (INT, FLOAT, STRING, HASH, SYMBOL):
                pieces.append(Piece("a", self.parse_attr(allow_type=False)))
                continue
            raise self.error(f"unexpected {self.describe(i)} in '{name}'")
        if depth:
            raise self.error(f"unbalanced brackets in '{name}'")
        self.check_unique_keys(items, loc)
        op = self.classify(name, results, nres, loc, asm, pieces, operands, items, regions)
        stray = _stray_piece(op, pieces)
        if stray is not None:
            at = piece_tok.get(stray, self.i)
            raise self.error(f"unexpected {self.describe(at)} in '{name}'", at)
        return op

    def parse_type_pieces(self, pieces: list[Piece]) -> None:
        """A comma-separated type list after ':' (stops before a ',' not followed by a type)."""
        texts = self.texts
        if texts[self.i] == "(":
            pieces.append(Piece("t", self.parse_type()))
            return
        pieces.append(Piece("t", self.parse_type()))
        while (
            texts[self.i] == "," and self.kinds[self.i] == PUNCT and self.is_type_start(self.i + 1)
        ):
            self.i += 1
            pieces.append(P_COMMA)
            pieces.append(Piece("t", self.parse_type()))

    def is_attr_dict(self, i: int) -> bool:
        k1, t1 = self.kinds[i + 1], self.texts[i + 1]
        if t1 == "}" and k1 == PUNCT:
            return True
        if k1 in (IDENT, STRING):
            t2 = self.texts[i + 2]
            return self.kinds[i + 2] == PUNCT and t2 in ("=", ",", "}")
        return False

    def skip_balanced(self) -> None:
        self.i += 1
        self.expect("(")
        depth = 1
        while depth:
            k, t = self.kinds[self.i], self.texts[self.i]
            if k == EOF:
                raise self.error("unterminated 'loc('")
            if k == PUNCT:
                depth += (t == "(") - (t == ")")
            self.i += 1

    def classify(
        self,
        name: str,
        results: list[tuple[str, int, SourceLoc]],
        nres: int,
        loc: SourceLoc,
        asm: bool,
        pieces: list[Piece],
        operands: list[Value],
        items: list[tuple[str, A.Attribute]],
        regions: list[Region],
    ) -> Op:
        attributes = A.DictAttr(tuple(items)) if items else EMPTY_ATTRS
        if not regions and name.startswith("pto."):
            dps = _match_dps(pieces, len(operands))
            if dps is not None and nres == 0:
                n_ins, n_outs, place, op_types, tail = dps
                return Op(
                    name,
                    tuple(operands),
                    (),
                    attributes,
                    (),
                    loc,
                    "dps",
                    n_ins,
                    n_outs,
                    place,
                    op_types,
                    tuple(tail),
                )
            ssa = _match_ssa(pieces, len(operands), nres)
            if ssa is not None:
                ftype, place = ssa
                return Op(
                    name,
                    tuple(operands),
                    self.make_results(results, list(ftype.results)),
                    attributes,
                    (),
                    loc,
                    "ssa",
                    len(operands),
                    0,
                    place,
                    tuple(ftype.inputs),
                )
        res_types = _infer_result_types(name, pieces, nres)
        return Op(
            name,
            tuple(operands),
            self.make_results(results, res_types),
            attributes,
            tuple(regions),
            loc,
            "asm" if asm else "custom",
            len(operands),
            0,
            "after",
            (),
            tuple(pieces),
            len(res_types) == nres,
        )

    # ------------------------------------------------------------- attributes

#: ops whose first region (and the one after ``else``) may be written ``{}``
#: ops whose first ``{`` opens a region, never an attribute dictionary (``pto.section.simt
#: <<<32, 1, 1>>> { pto.syncthreads }`` would read as a unit attribute otherwise)
_REGION_OPS = frozenset(["scf.if", "scf.execute_region", "pto.section.simt"])


def parse(
    text: str,
    filename: str = "<string>",
    known_ops: Callable[[str], bool] | None = None,
) -> Module:
    """Parse without the SSA checks (see :func:`ptoisa.text.parse`)."""
    return Parser(text, filename, known_ops).parse_module()


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

import re
from collections.abc import Callable
from typing import Any

from ptoisa.errors import ParseError, SourceLoc
from ptoisa.ir import attrs as A
from ptoisa.ir import types as T
from ptoisa.ir.core import EMPTY_ATTRS, Block, Module, Op, Piece, Region, Value
from ptoisa.text.comments import Collector
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
    Source,
    tokenize,
)

MLIR_DIALECTS = frozenset(
    "pto func scf arith memref builtin math cf tensor vector llvm emitc affine index gpu "
    "linalg bufferization ub".split()
)
# ops of the default dialect inside func.func bodies, written without prefix
_FUNC_DEFAULT = {"return": "func.return", "call": "func.call"}
# PTO-AS mnemonics whose IR name is not "pto." + mnemonic.
ASM_TO_IR = {"tmov.fp": "pto.tmov.fp"}

_BUILTIN_TYPE_RE = re.compile(r"(?:[su]?i\d+|f\d+\w*|bf16|tf32|index|none)$")
_INT_TYPE_RE = re.compile(r"([su]?)i(\d+)$")
_WORD_RE = re.compile(r"[A-Za-z_]\w*$")
_SHAPE_RE = re.compile(r"((?:(?:\?|-?\d+)x)*)(.+)$")
_CONT_START = frozenset(
    [
        ":",
        "->",
        ",",
        "{",
        "outs",
        "ins",
        "to",
        "step",
        "iter_args",
        "else",
        "do",
        "attributes",
        ")",
        "]",
        "=",
        "<",
    ]
)
_CONT_END = frozenset([",", ":", "->", "=", "(", "[", "ins", "outs", "<"])
_OPAQUE_ATTR_HEADS = frozenset(
    [
        "dense",
        "array",
        "strided",
        "affine_map",
        "affine_set",
        "sparse",
        "dense_resource",
        "opaque",
        "distinct",
    ]
)
_NO_SPACE_AFTER = frozenset("([<")
_NO_SPACE_BEFORE = frozenset(",)]>")

P_COMMA = Piece("p", ",")
P_COLON = Piece("p", ":")
P_ARROW = Piece("p", "->")
P_LPAREN = Piece("p", "(")
P_RPAREN = Piece("p", ")")


def asm_to_ir_name(mnemonic: str) -> str:
    """PTO-AS mnemonic to IR op name: ``tstore.fp`` -> ``pto.tstore_fp``."""
    if mnemonic.startswith("pto."):
        return mnemonic
    if mnemonic in ASM_TO_IR:
        return ASM_TO_IR[mnemonic]
    if mnemonic.endswith(".fp"):
        mnemonic = mnemonic[:-3] + "_fp"
    return "pto." + mnemonic


class _Scope:
    __slots__ = ("names",)

    def __init__(self) -> None:
        self.names: dict[str, Value] = {}


class Parser:
    def __init__(
        self,
        text: str,
        filename: str = "<string>",
        known_ops: Callable[[str], bool] | None = None,
    ) -> None:
        self.src = Source(text, filename)
        self.text = text
        comments: list[tuple[int, str]] = []
        self.kinds, self.texts, self.offs = tokenize(self.src, comments)
        self.comments = Collector(text, comments)
        self.last_op: Op | None = None  # the op a comment on its line belongs to
        self.i = 0
        self.known_ops = known_ops
        self.scopes: list[_Scope] = [_Scope()]
        self.free: dict[str, Value] = {}
        self.closed: dict[str, Value] = {}  # defined in a region that has ended
        self.type_cache: dict[str, T.Type] = {}
        self.aliases: dict[str, A.Attribute] = {}
        self.type_aliases: dict[str, T.Type] = {}

    # ----------------------------------------------------------------- helpers
    def loc(self, i: int | None = None) -> SourceLoc:
        return self.src.loc(self.offs[self.i if i is None else i])

    def error(self, msg: str, i: int | None = None) -> ParseError:
        return ParseError(msg, loc=self.loc(i))

    def describe(self, i: int) -> str:
        return "end of input" if self.kinds[i] == EOF else repr(self.texts[i])

    def expect(self, text: str) -> int:
        i = self.i
        if self.texts[i] != text or self.kinds[i] in (STRING, EOF):
            raise self.error(f"expected '{text}', found {self.describe(i)}")
        self.i = i + 1
        return i

    def accept(self, text: str) -> bool:
        if self.texts[self.i] == text and self.kinds[self.i] not in (STRING, EOF):
            self.i += 1
            return True
        return False

    def newline_before(self, i: int) -> bool:
        return i > 0 and "\n" in self.text[self.offs[i - 1] : self.offs[i]]

    def adjacent(self, i: int) -> bool:
        """Token i directly follows token i-1 (no whitespace)."""
        return self.offs[i - 1] + len(self.texts[i - 1]) == self.offs[i]

    def take_comments(self, last_op: Op | None = None) -> list[str]:
        """The comments before the current token (see :mod:`ptoisa.text.comments`)."""
        i = self.i
        if not self.comments.pending(self.offs[i]):
            return []
        prev_end = self.offs[i - 1] + len(self.texts[i - 1]) if i > 0 else 0
        return self.comments.take(prev_end, self.offs[i], last_op)

    # ------------------------------------------------------------------ values
    def lookup(self, name: str, i: int) -> Value:
        for scope in reversed(self.scopes):
            v = scope.names.get(name)
            if v is not None:
                return v
        v = self.closed.get(name) or self.free.get(name)
        if v is None:
            v = Value(name, T.UNKNOWN, self.loc(i), "free")
            self.free[name] = v
        return v

    def define(self, name: str, type_: T.Type, loc: SourceLoc, owner: str = "op") -> Value:
        v = Value(name, type_, loc, owner)
        self.scopes[-1].names[name] = v
        return v

    # ----------------------------------------------------------------- module
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
        if nres != len(inits):
            raise ParseError(
                f"scf.for defines {nres} results but has {len(inits)} iter_args", loc=loc
            )
        args = [(iv, iv_type, iv_loc)] + [
            (n, t, nl) for (n, nl), t in zip(names, res_types, strict=True)
        ]
        region = self.parse_region(args)
        syntax = (Piece("t", iv_type),) if written_iv else ()
        op_types: tuple[T.Type | None, ...] = (None, None, None) + tuple(res_types)
        return Op(
            "scf.for",
            (lb, ub, step, *inits),
            self.make_results(results, res_types),
            EMPTY_ATTRS,
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
                if k == CARET:
                    break
                if not first and self.newline_before(i):
                    prev = texts[i - 1]
                    cont = (
                        k == PUNCT
                        or (k == IDENT and t in _CONT_START)
                        or (kinds[i - 1] in (PUNCT, IDENT) and prev in _CONT_END)
                        or (k == IDENT and "." not in t and texts[i + 1] == "=")
                    )
                    if not cont:
                        break
                if k == VALUE and self.starts_result_list(i):
                    break
                if k == IDENT and (("." in t and not first) or t in _FUNC_DEFAULT):
                    break
                if k in (HASH, BANG) and texts[i + 1] == "=" and not asm:
                    break
            first = False
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
                    else:
                        pieces.append(Piece("t", self.parse_type()))
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
                    if self.is_attr_dict(i):
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
    def angle_body(self) -> str:
        """Consume a balanced ``<...>`` and return its normalised inner text."""
        start = self.i
        self.expect("<")
        depth = 1
        kinds, texts = self.kinds, self.texts
        while True:
            k = kinds[self.i]
            if k == EOF:
                raise self.error("unterminated '<'", start)
            if k == PUNCT:
                t = texts[self.i]
                if t == "<":
                    depth += 1
                elif t == ">":
                    depth -= 1
                    if depth == 0:
                        break
            self.i += 1
        body = self.normalize(start + 1, self.i)
        self.i += 1
        return body

    def normalize(self, a: int, b: int) -> str:
        """Canonical text of tokens a..b-1: single spaces where the source had any, none after
        an opening bracket or before a closing one, one after each comma."""
        texts, offs = self.texts, self.offs
        out: list[str] = []
        for j in range(a, b):
            t = texts[j]
            if j > a:
                prev = texts[j - 1]
                gap = offs[j - 1] + len(prev) != offs[j]
                if prev == ",":
                    out.append(" ")
                elif gap and prev not in _NO_SPACE_AFTER and t not in _NO_SPACE_BEFORE:
                    out.append(" ")
            out.append(t)
        return "".join(out)

    def parse_attr_dict(self) -> A.DictAttr:
        self.expect("{")
        items: list[tuple[str, A.Attribute]] = []
        if self.accept("}"):
            return EMPTY_ATTRS
        while True:
            i = self.i
            k = self.kinds[i]
            if k == STRING:
                key = self.parse_string_token()
            elif k == IDENT:
                key = self.texts[i]
                self.i += 1
            else:
                raise self.error(f"expected attribute name, found {self.describe(i)}")
            if self.accept("="):
                items.append((key, self.parse_attr()))
            else:
                items.append((key, A.UnitAttr()))
            if self.accept("}"):
                return A.DictAttr(tuple(items))
            self.expect(",")

    def parse_attr(self, allow_type: bool = True) -> A.Attribute:
        i = self.i
        k = self.kinds[i]
        t = self.texts[i]
        if k == INT:
            self.i += 1
            value = _int(t)
            ty = self.parse_opt_colon_type() if allow_type else None
            return A.IntegerAttr(value, ty, "0x" in t.lower())
        if k == FLOAT:
            self.i += 1
            ty = self.parse_opt_colon_type() if allow_type else None
            return A.FloatAttr(float(t), ty)
        if k == STRING:
            return A.StringAttr(self.parse_string_token())
        if k == SYMBOL:
            self.i += 1
            name = t[1:]
            if name.startswith('"'):
                name = _unescape(name, self, i)
            return A.SymbolRefAttr(name)
        if k == HASH:
            self.i += 1
            if self.texts[self.i] == "<" and self.adjacent(self.i):
                return A.DialectAttr(t[1:], self.angle_body())
            if t in self.aliases:
                return self.aliases[t]
            return A.DialectAttr(t[1:], None)
        if k == PUNCT:
            if t == "[":
                self.i += 1
                elems: list[A.Attribute] = []
                if self.accept("]"):
                    return A.ArrayAttr(())
                while True:
                    elems.append(self.parse_attr())
                    if self.accept("]"):
                        return A.ArrayAttr(tuple(elems))
                    self.expect(",")
            if t == "{":
                return self.parse_attr_dict()
            if t == "<":
                return A.DialectAttr("", self.angle_body())
            if t == "(":
                return A.TypeAttr(self.parse_type())
        if k == IDENT:
            if t in ("true", "false"):
                self.i += 1
                return A.BoolAttr(t == "true")
            if t == "unit":
                self.i += 1
                return A.UnitAttr()
            if t in _OPAQUE_ATTR_HEADS and self.texts[i + 1] == "<":
                self.i += 1
                body = self.angle_body()
                text = f"{t}<{body}>"
                if allow_type and t == "dense":
                    ty = self.parse_opt_colon_type()
                    if ty is not None:
                        text += f" : {ty}"
                return A.OpaqueAttr(text)
            if self.is_type_start(i):
                return A.TypeAttr(self.parse_type())
        if k == BANG:
            return A.TypeAttr(self.parse_type())
        raise self.error(f"expected attribute value, found {self.describe(i)}")

    def parse_opt_colon_type(self) -> T.Type | None:
        if (
            self.texts[self.i] == ":"
            and self.kinds[self.i] == PUNCT
            and self.is_type_start(self.i + 1)
        ):
            self.i += 1
            return self.parse_type()
        return None

    # ------------------------------------------------------------------ types
    def parse_type(self) -> T.Type:
        i = self.i
        k = self.kinds[i]
        t = self.texts[i]
        texts = self.texts
        if k == PUNCT and t == "<":
            # dialect type with its '!pto.xxx' prefix elided by the op's format
            at = self.i
            body = self.angle_body()
            if body.startswith("loc="):
                end = self.i
                self.i = at
                ty = self.parse_tile_buf(at, at + 1, end - 1)
                self.i = end
                return ty
            return T.intern(T.OpaqueType(f"<{body}>"))
        if k == PUNCT and t == "(":
            self.i += 1
            inputs: list[T.Type] = []
            if not self.accept(")"):
                while True:
                    inputs.append(self.parse_type())
                    if self.accept(")"):
                        break
                    self.expect(",")
            if not self.accept("->"):
                if len(inputs) == 1:
                    return inputs[0]  # a parenthesised type
                raise self.error(
                    f"expected '->' after type list, found {self.describe(self.i)}: a function "
                    "type is '(operand types) -> (result types)', '-> ()' without results; "
                    "in ins(...) / outs(...) write the types without parentheses"
                )
            outputs = self.parse_type_list_maybe_paren()
            return T.intern(T.FunctionType(tuple(inputs), tuple(outputs)))
        if k == BANG or k == IDENT:
            if texts[i + 1] == "<" and self.adjacent(i + 1):
                # find the matching '>' and use the raw text as cache key
                j = i + 2
                depth = 1
                kinds = self.kinds
                while True:
                    kj = kinds[j]
                    if kj == EOF:
                        raise self.error("unterminated '<' in type", i + 1)
                    if kj == PUNCT:
                        tj = texts[j]
                        if tj == "<":
                            depth += 1
                        elif tj == ">":
                            depth -= 1
                            if depth == 0:
                                break
                    j += 1
                raw = self.text[self.offs[i] : self.offs[j] + 1]
                cached = self.type_cache.get(raw)
                if cached is not None:
                    self.i = j + 1
                    return cached
                ty = self.parse_parametric_type(i, j)
                self.type_cache[raw] = ty
                self.i = j + 1
                return ty
            if k == BANG:
                self.i += 1
                if t in self.type_aliases:
                    return self.type_aliases[t]
                return T.intern(T.OpaqueType(t))
            ty = _builtin_scalar(t)
            if ty is not None:
                self.i += 1
                return ty
        raise self.error(f"expected a type, found {self.describe(i)}")

    def elements(self, a: int, b: int) -> list[tuple[int, int]]:
        """Top-level comma-separated token ranges of tokens a..b-1."""
        out: list[tuple[int, int]] = []
        depth = 0
        start = a
        kinds, texts = self.kinds, self.texts
        for j in range(a, b):
            if kinds[j] != PUNCT:
                continue
            tj = texts[j]
            if tj in "<([{":
                depth += 1
            elif tj in ">)]}":
                depth -= 1
            elif tj == "," and depth == 0:
                out.append((start, j))
                start = j + 1
        out.append((start, b))
        return out

    def raw(self, a: int, b: int) -> str:
        if a >= b:
            return ""
        return self.text[self.offs[a] : self.offs[b - 1] + len(self.texts[b - 1])]

    def parse_parametric_type(self, i: int, j: int) -> T.Type:
        """Type ``head<...>`` spanning tokens i..j (j is the closing '>')."""
        head = self.texts[i]
        a, b = i + 2, j
        if head == "!pto.tile_buf":
            return self.parse_tile_buf(i, a, b)
        if head in ("!pto.tensor_view", "!pto.partition_tensor_view", "!pto.tile"):
            if head == "!pto.tile":
                self.reject_positional(head, i, a, b)
            parsed = self.parse_shape(a, b, required=head != "!pto.tile")
            if parsed is not None:
                shape, dtype = parsed
                cls = {
                    "!pto.tensor_view": T.TensorViewType,
                    "!pto.partition_tensor_view": T.PartitionTensorViewType,
                    "!pto.tile": T.TileType,
                }[head]
                return T.intern(cls(shape, dtype))  # type: ignore[abstract]
        elif head == "!pto.ptr":
            els = self.elements(a, b)
            if 1 <= len(els) <= 2:
                dtype = self.sub_type(*els[0])
                space = self.raw(*els[1]).strip() if len(els) == 2 else None
                return T.intern(T.PtrType(dtype, space))
        elif head == "memref":
            els = self.elements(a, b)
            parsed = self.parse_shape(*els[0], required=True)
            assert parsed is not None
            shape, dtype = parsed
            rest = [self.sub_attr(x, y) for x, y in els[1:]]
            if len(rest) > 2:
                raise self.error("memref type takes at most a layout and a memory space", i)
            layout = memspace = None
            if len(rest) == 2:
                layout, memspace = rest
            elif len(rest) == 1:
                if isinstance(rest[0], A.OpaqueAttr) and rest[0].text.startswith(
                    ("strided", "affine_map")
                ):
                    layout = rest[0]
                else:
                    memspace = rest[0]
            return T.intern(T.MemRefType(shape, dtype, layout, memspace))
        text = f"{head}<{self.normalize(a, b)}>"
        return T.intern(T.OpaqueType(text))

    def _sub(self, a: int, b: int, parse: Callable[[], Any], what: str) -> Any:
        """``parse()`` over exactly the tokens [a, b), then back where we were."""
        saved = self.i
        self.i = a
        try:
            r = parse()
            if self.i != b:
                raise self.error(f"unexpected {self.describe(self.i)} in {what}")
            return r
        finally:
            self.i = saved

    def sub_type(self, a: int, b: int) -> T.Type:
        return self._sub(a, b, self.parse_type, "type")  # type: ignore[no-any-return]

    def sub_attr(self, a: int, b: int) -> A.Attribute:
        return self._sub(a, b, self.parse_attr, "attribute")  # type: ignore[no-any-return]

    def parse_shape(
        self, a: int, b: int, required: bool
    ) -> tuple[tuple[int | None, ...], T.Type] | None:
        text = "".join(self.texts[a:b])
        m = _SHAPE_RE.match(text)
        dtype = _builtin_scalar(m.group(2)) if m else None
        if m is None or dtype is None:
            if required:
                raise self.error(f"expected a shape like '32x32xf32', found '{self.raw(a, b)}'", a)
            return None
        dims = tuple(None if d in ("?", "-1") else int(d) for d in m.group(1).split("x")[:-1])
        return dims, dtype

    def reject_positional(self, head: str, i: int, a: int, b: int) -> None:
        """The pages' positional spelling (``!pto.tile<f32, 16, 16>``, ``!pto.tile_buf<loc=vec,
        f32, 16, 16, RowMajor, NoneBox, None, Zero>``) is not PTOAS syntax: say what to write."""
        els = [self.raw(x, y).replace(" ", "") for x, y in self.elements(a, b)]
        hint = _positional_hint(head, els)
        if hint is not None:
            raise self.error(f"{head}<{', '.join(els)}> is the ISA pages' positional spelling, "
                             f"which PTOAS does not parse: write {hint}", a)

    def parse_tile_buf(self, i: int, a: int, b: int) -> T.Type:
        self.reject_positional("!pto.tile_buf", i, a, b)
        els = [self.raw(x, y).replace(" ", "").replace("\n", "") for x, y in self.elements(a, b)]
        fields: dict[str, str] = {}
        pos = self.elements(a, b)

        def fail(msg: str, k: int = 0) -> ParseError:
            return self.error(f"!pto.tile_buf: {msg}", pos[k][0] if k < len(pos) else i)

        if els and "=" not in els[0] and _SHAPE_RE.match(els[0]) and "x" in els[0]:
            # pre-release spelling '!pto.tile_buf<32x64xf32, #pto.address_space<vec>>'
            return T.intern(T.OpaqueType(f"!pto.tile_buf<{self.normalize(a, b)}>"))
        if els and "=" in els[0]:
            for k, el in enumerate(els):
                key, sep, val = el.partition("=")
                if not sep or not val:
                    raise fail(f"expected 'key=value', found '{el}'", k)
                if key in fields:
                    raise fail(f"duplicate key '{key}'", k)
                fields[key] = val
        else:
            if len(els) < 2:
                raise fail("expected '<loc, RxCxdtype, ...>' or '<loc=..., dtype=..., ...>'")
            fields["loc"] = els[0]
            m = _SHAPE_RE.match(els[1])
            if m is None or len(m.group(1).split("x")) != 3:
                raise fail(f"expected a shape like '32x32xf32', found '{els[1]}'", 1)
            r, c = m.group(1).split("x")[:2]
            fields["rows"], fields["cols"], fields["dtype"] = r, c, m.group(2)
            for k, el in enumerate(els[2:], 2):
                key, sep, val = el.partition("=")
                if not sep or not val or key in fields:
                    raise fail(f"unexpected '{el}'", k)
                if key == "valid":
                    vr, x, vc = val.partition("x")
                    if not x:
                        raise fail(f"expected 'valid=RxC', found '{el}'", k)
                    fields["v_row"], fields["v_col"] = vr, vc
                else:
                    fields[key] = val
        allowed = {
            "loc",
            "dtype",
            "rows",
            "cols",
            "v_row",
            "v_col",
            "blayout",
            "slayout",
            "fractal",
            "pad",
            "compact",
        }
        unknown = set(fields) - allowed
        if unknown:
            raise fail(f"unknown key '{sorted(unknown)[0]}'")
        for key in ("loc", "dtype", "rows", "cols"):
            if key not in fields:
                raise fail(f"missing '{key}'")
        for key in ("loc", "blayout", "slayout"):
            if key in fields and not _WORD_RE.match(fields[key]):
                raise fail(f"'{key}' must be a name, found '{fields[key]}'")
        dtype = _builtin_scalar(fields["dtype"])
        if dtype is None:
            raise fail(f"unknown element type '{fields['dtype']}'")

        def integer(key: str, default: int | None = None, dyn: bool = False) -> int | None:
            val = fields.get(key)
            if val is None:
                return default
            if dyn and val in ("?", "-1"):
                return None
            try:
                return _int(val)
            except ValueError:
                raise fail(f"'{key}' must be an integer, found '{val}'") from None

        rows = integer("rows")
        cols = integer("cols")
        assert rows is not None and cols is not None
        return T.intern(
            T.TileBufType(
                fields["loc"],
                dtype,
                rows,
                cols,
                integer("v_row", rows, dyn=True),
                integer("v_col", cols, dyn=True),
                fields.get("blayout", "row_major"),
                fields.get("slayout", "none_box"),
                integer("fractal", 512) or 0,
                integer("pad", 0) or 0,
                integer("compact"),
            )
        )


# custom spellings whose only bare word is 'to' (casts): any other word is a stray token
_NO_WORDS = ("func.return", "scf.yield", "scf.condition", "func.call")
_WORDS_OK = frozenset(["to", "overflow", "fastmath", "exact"])  # casts, MLIR flags


def _stray_piece(op: Op, pieces: list[Piece]) -> int | None:
    """Index of a piece that no spelling of ``op`` has (a stray word), else None: anything
    after ``outs(...)`` of a DPS op but an attribute dictionary; a word before ``ins(`` of
    an op that writes one; a bare word in an arith op (other than a comparison predicate and
    'to') or in return / yield / call."""
    if op.form == "dps":
        return len(pieces) - len(op.syntax) if op.syntax else None
    if op.form == "generic":
        return None
    words = [(j, p.value) for j, p in enumerate(pieces) if p.kind == "k"]
    if op.name.startswith("pto.") and any(w == "ins" for _, w in words):
        first = next((j for j, p in enumerate(pieces) if p.kind not in ("v", "p")), None)
        if first is not None and pieces[first] != Piece("k", "ins"):
            return first
        return None
    if op.name in _NO_WORDS or (op.name.startswith("arith.")
                                and op.name not in ("arith.cmpi", "arith.cmpf")):
        for j, w in words:
            if w not in _WORDS_OK:
                return j
    return None


_POS_LAYOUT = {"rowmajor": "row_major", "colmajor": "col_major", "nonebox": "none_box"}
_POS_PAD = {"null": 0, "none": 0, "zero": 1, "max": 2, "min": 3}


def _positional_hint(head: str, els: list[str]) -> str | None:
    """The keyed/shaped spelling of a positional ``<[loc=L,] dtype, R, C[, BLayout[, SLayout[,
    _[, Pad]]]]>`` type, or None when ``els`` is not that."""
    loc = "vec"
    rest = list(els)
    if rest and rest[0].startswith("loc="):
        loc = rest.pop(0)[4:]
    if len(rest) < 3 or _builtin_scalar(rest[0]) is None or not all(
        x.isdigit() for x in rest[1:3]
    ):
        return None
    dtype, rows, cols = rest[:3]
    if head == "!pto.tile":
        shape = f"{rows}x{cols}x{dtype}"
        return f"'!pto.tile<{shape}>' (or '!pto.tile_buf<{loc}, {shape}>')"
    extra = []
    names = rest[3:]
    if names and _POS_LAYOUT.get(names[0].lower(), "row_major") != "row_major":
        extra.append(f"blayout={_POS_LAYOUT[names[0].lower()]}")
    if len(names) > 1 and _POS_LAYOUT.get(names[1].lower(), "none_box") != "none_box":
        extra.append(f"slayout={_POS_LAYOUT[names[1].lower()]}")
    if len(names) > 3 and _POS_PAD.get(names[3].lower(), 0):
        extra.append(f"pad={_POS_PAD[names[3].lower()]}")
    return f"'!pto.tile_buf<{', '.join([loc, f'{rows}x{cols}x{dtype}', *extra])}>'"


def _int(t: str) -> int:
    """Integer literal: decimal (leading zeros allowed, as in MLIR) or 0x hexadecimal."""
    if t.lstrip("-")[:2].lower() == "0x":
        return int(t, 16)
    return int(t, 10)


def _builtin_scalar(t: str) -> T.Type | None:
    if t == "index":
        return T.INDEX
    if t == "none":
        return T.intern(T.NoneType())
    m = _INT_TYPE_RE.match(t)
    if m:
        return T.intern(T.IntegerType(int(m.group(2)), m.group(1)))
    if _BUILTIN_TYPE_RE.match(t):
        return T.intern(T.FloatType(t))
    return None


_ESCAPES = {"n": "\n", "t": "\t", '"': '"', "\\": "\\"}


def _unescape(tok: str, parser: Parser, i: int) -> str:
    body = tok[1:-1]
    if "\\" not in body:
        return body
    out: list[str] = []
    j = 0
    while j < len(body):
        ch = body[j]
        if ch == "\\":
            nxt = body[j + 1 : j + 2]
            if nxt in _ESCAPES:
                out.append(_ESCAPES[nxt])
                j += 2
                continue
            hx = body[j + 1 : j + 3]
            if len(hx) == 2 and all(c in "0123456789abcdefABCDEF" for c in hx):
                out.append(chr(int(hx, 16)))
                j += 3
                continue
            raise parser.error("invalid escape in string", i)
        out.append(ch)
        j += 1
    return "".join(out)


def _match_group(
    pieces: list[Piece], j: int
) -> tuple[int, list[int], list[T.Type], tuple[str, ...] | None] | None:
    """Match ``( v, v [{d}] : t, t )`` starting at pieces[j] == '('. Returns the index after
    ')', operand indices, types and the dict keys (or None)."""
    n = len(pieces)
    if j >= n or pieces[j] != P_LPAREN:
        return None
    j += 1
    vals: list[int] = []
    types: list[T.Type] = []
    keys = None
    # per-operand spelling: ( v : t, v : t )
    k = j
    while k + 2 < n and pieces[k].kind == "v" and pieces[k + 1] == P_COLON:
        if pieces[k + 2].kind != "t":
            break
        vals.append(pieces[k].value)  # type: ignore[arg-type]
        types.append(pieces[k + 2].value)  # type: ignore[arg-type]
        k += 3
        if k < n and pieces[k] == P_COMMA:
            k += 1
            continue
        if k < n and pieces[k] == P_RPAREN and len(vals) > 1:
            return k + 1, vals, types, None
        break
    vals, types = [], []
    while j < n and pieces[j].kind == "v":
        vals.append(pieces[j].value)  # type: ignore[arg-type]
        j += 1
        if j < n and pieces[j] == P_COMMA:
            j += 1
            if j < n and pieces[j].kind != "v":
                return None
    if j < n and pieces[j].kind == "d":
        keys = pieces[j].value  # type: ignore[assignment]
        j += 1
    if vals:
        if j >= n or pieces[j] != P_COLON:
            return None
        j += 1
        while j < n and pieces[j].kind == "t":
            types.append(pieces[j].value)  # type: ignore[arg-type]
            j += 1
            if j < n and pieces[j] == P_COMMA:
                j += 1
    if j >= n or pieces[j] != P_RPAREN or len(types) != len(vals):
        return None
    return j + 1, vals, types, keys


def _match_dps(
    pieces: list[Piece], nops: int
) -> tuple[int, int, str, tuple[T.Type | None, ...], list[Piece]] | None:
    if len(pieces) < 3 or pieces[0] != Piece("k", "ins") and pieces[0] != Piece("k", "outs"):
        return None
    j = 0
    ins: list[int] = []
    outs: list[int] = []
    types: list[T.Type] = []
    place = "after"
    if pieces[0] == Piece("k", "ins"):
        m = _match_group(pieces, 1)
        if m is None:
            return None
        j, ins, types, keys = m
        if keys is not None:
            place = "ins"
    if j < len(pieces) and pieces[j] == Piece("k", "outs"):
        m = _match_group(pieces, j + 1)
        if m is None or m[3] is not None:
            return None
        j, outs, out_types, _ = m
        types += out_types
    if ins + outs != list(range(len(ins) + len(outs))):
        return None
    tail = pieces[j:]
    if tail and tail[0].kind == "d":
        if place == "ins":
            return None
        tail = tail[1:]
    if any(p.kind == "d" for p in tail):
        return None
    return len(ins), len(outs), place, tuple(types) + (None,) * (nops - len(types)), tail


def _match_ssa(pieces: list[Piece], nops: int, nres: int) -> tuple[T.FunctionType, str] | None:
    """``v, v [{d}] : (t, t) -> t [{d}]`` or ``v : t -> t``."""
    n = len(pieces)
    j = 0
    k = 0
    while j < n and pieces[j].kind == "v":
        if pieces[j].value != k:
            return None
        k += 1
        j += 1
        if j < n and pieces[j] == P_COMMA:
            j += 1
            if j >= n or pieces[j].kind != "v":
                return None
    if k != nops:
        return None
    place = "after"
    if j < n and pieces[j].kind == "d":
        place = "ins"
        j += 1
    if j >= n or pieces[j] != P_COLON:
        return None
    j += 1
    if j < n and pieces[j].kind == "t" and isinstance(pieces[j].value, T.FunctionType):
        ftype: T.FunctionType = pieces[j].value  # type: ignore[assignment]
        j += 1
    elif (
        nops == 1
        and j + 2 < n
        and pieces[j].kind == "t"
        and pieces[j + 1] == P_ARROW
        and pieces[j + 2].kind == "t"
    ):
        ftype = T.intern(T.FunctionType((pieces[j].value,), (pieces[j + 2].value,)))  # type: ignore[arg-type]
        j += 3
    else:
        return None
    if j < n and pieces[j].kind == "d" and place == "after" and pieces[j].value:
        j += 1
    if j != n or len(ftype.inputs) != nops or len(ftype.results) != nres:
        return None
    return ftype, place


_I64_RESULT_OPS = frozenset(
    ["pto.get_block_idx", "pto.get_block_num", "pto.get_subblock_idx", "pto.get_subblock_num"]
)


def _infer_result_types(name: str, pieces: list[Piece], nres: int) -> list[T.Type]:
    """Result types of a custom spelling, from where MLIR custom formats put them.

    Order of evidence: a function type after ':'; the types after the last '->'; a type after
    'to'; then the types after the last ':'. Returns [] when the text states no type.
    """
    if nres == 0:
        return []
    if name in ("arith.cmpi", "arith.cmpf"):
        return [T.I1] * nres
    if name in _I64_RESULT_OPS:
        return [T.I64] * nres
    if name == "pto.eventid_array_get":
        return [T.INDEX] * nres
    if name == "pto.subset":  # the written type is the source's; the result's is derived
        return []
    last_arrow = last_colon = last_to = -1
    for j, p in enumerate(pieces):
        if p.kind == "p":
            if p.value == "->":
                last_arrow = j
            elif p.value == ":":
                last_colon = j
        elif p.kind == "k" and p.value == "to":
            last_to = j
    if last_colon >= 0 and last_colon + 1 < len(pieces):
        p = pieces[last_colon + 1]
        if p.kind == "t" and isinstance(p.value, T.FunctionType) and last_arrow < last_colon:
            return list(p.value.results)
    for start in (last_arrow, last_to, last_colon):
        if start < 0:
            continue
        types: list[T.Type] = []
        for p in pieces[start + 1 :]:
            if p.kind == "t":
                types.append(p.value)  # type: ignore[arg-type]
            elif p.kind == "p" and p.value in ",()":
                continue
            else:
                break
        if types:
            if len(types) > nres:
                types = types[-nres:]
            return types
    return []


def parse(
    text: str,
    filename: str = "<string>",
    known_ops: Callable[[str], bool] | None = None,
) -> Module:
    """Parse without the SSA checks (see :func:`ptoisa.text.parse`)."""
    return Parser(text, filename, known_ops).parse_module()

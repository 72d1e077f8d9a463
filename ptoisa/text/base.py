"""The parser's base: tokens, locations, errors and SSA scopes, shared by the readers of
types/attributes (:mod:`ptoisa.text.attributes`) and of ops (:mod:`ptoisa.text.parser`)."""

from __future__ import annotations

import re
from collections.abc import Callable

from ptoisa.errors import ParseError, SourceLoc
from ptoisa.ir import attrs as A
from ptoisa.ir import types as T
from ptoisa.ir.core import Op, Piece, Value
from ptoisa.text.comments import Collector
from ptoisa.text.lexer import EOF, STRING, Source, tokenize

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
#: keyword groups a micro-ISA op continues with on the next line (``pto.mte_gm_ub ...
#: nburst(...) loop(...) pad(...)``, micro-isa/02-dma-copy.md), when an '(' follows
_CONT_GROUPS = frozenset(["nburst", "loop", "pad", "l2_cache_ctl"])
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


class ParserBase:
    def __init__(
        self,
        text: str,
        filename: str = "<string>",
        known_ops: Callable[[str], bool] | None = None,
        mlir_only: bool = False,
    ) -> None:
        self.src = Source(text, filename)
        self.text = text
        comments: list[tuple[int, str]] = []
        self.kinds, self.texts, self.offs = tokenize(self.src, comments)
        self.comments = Collector(text, comments)
        self.last_op: Op | None = None  # the op a comment on its line belongs to
        self.i = 0
        self.known_ops = known_ops
        #: read as PTOAS (an MLIR tool) reads the text: a PTO-AS statement outside every region
        #: (a module's body, the file's top level) is an error
        self.mlir_only = mlir_only
        self.region_depth = 0  # regions open around the parser's position
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

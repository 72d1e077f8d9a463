"""Reading types and attributes: ``!pto.tile_buf<...>``, tensor/memref/vector types,
builtin scalars, ``#pto.*`` and dictionary attributes (a mixin of the op parser)."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from ptoisa.errors import ParseError
from ptoisa.ir import attrs as A
from ptoisa.ir import types as T
from ptoisa.ir.core import EMPTY_ATTRS
from ptoisa.text.base import (
    _BUILTIN_TYPE_RE,
    _INT_TYPE_RE,
    _NO_SPACE_AFTER,
    _NO_SPACE_BEFORE,
    _OPAQUE_ATTR_HEADS,
    _SHAPE_RE,
    _WORD_RE,
    ParserBase,
)
from ptoisa.text.lexer import BANG, EOF, FLOAT, HASH, IDENT, INT, PUNCT, STRING, SYMBOL

_POS_LAYOUT = {"rowmajor": "row_major", "colmajor": "col_major", "nonebox": "none_box"}
_POS_PAD = {"null": 0, "none": 0, "zero": 1, "max": 2, "min": 3}


class AttributeParser(ParserBase):
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
            m = _SHORT_PTR.fullmatch(body)
            scalar = _builtin_scalar(m.group(1)) if m else None
            if m and scalar is not None:  # ``<f32>`` / ``<ui64, gm>``: a !pto.ptr (pto.addptr)
                return T.intern(T.PtrType(scalar, m.group(2)))
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


#: the body of a ``!pto.ptr`` written without its prefix: an element type, a memory space
_SHORT_PTR = re.compile(r"\s*(\w+)\s*(?:,\s*(gm|ub|l1|l0a|l0b|l0c|bt|fb)\s*)?")


def _builtin_scalar(t: str) -> T.Type | None:
    if t == "index":
        return T.INDEX
    if t == "none":
        return T.intern(T.NoneType())
    m = _INT_TYPE_RE.match(t)
    if m:
        return T.intern(T.IntegerType(int(m.group(2)), m.group(1)))
    if _BUILTIN_TYPE_RE.match(t) or t in _PTO_ELEMENT_TYPES:
        return T.intern(T.FloatType(t))
    return None


#: the low-precision element types PTOAS spells as its own dialect types
_PTO_ELEMENT_TYPES = frozenset(["!pto.hif8", "!pto.f4E1M2x2", "!pto.f4E2M1x2", "!pto.f8E8M0"])


_ESCAPES = {"n": "\n", "t": "\t", '"': '"', "\\": "\\"}


def _unescape(tok: str, parser: ParserBase, i: int) -> str:
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



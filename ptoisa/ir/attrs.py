"""IR attributes: immutable values that print back to equivalent text (``str(attr)``)."""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass

from ptoisa.ir.base import Attribute, Type


@dataclass(frozen=True, slots=True)
class IntegerAttr(Attribute):
    """``7`` or ``7 : i32``; ``hex`` keeps the ``0x..`` spelling."""

    value: int
    type: Type | None = None
    hex: bool = False

    def __str__(self) -> str:
        text = hex(self.value) if self.hex else str(self.value)
        return text if self.type is None else f"{text} : {self.type}"


@dataclass(frozen=True, slots=True)
class FloatAttr(Attribute):
    value: float
    type: Type | None = None

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, FloatAttr):
            return NotImplemented
        same = self.value == other.value or (math.isnan(self.value) and math.isnan(other.value))
        return same and self.type == other.type

    def __hash__(self) -> int:
        return hash(("float", repr(self.value), self.type))

    def __str__(self) -> str:
        if math.isfinite(self.value):
            text = repr(self.value)
        else:
            text = {"inf": "0x7F800000", "-inf": "0xFF800000"}.get(str(self.value), "0x7FC00000")
        return text if self.type is None else f"{text} : {self.type}"


@dataclass(frozen=True, slots=True)
class BoolAttr(Attribute):
    value: bool

    def __str__(self) -> str:
        return "true" if self.value else "false"


@dataclass(frozen=True, slots=True)
class UnitAttr(Attribute):
    """A present-without-value attribute (``{pto.entry}``)."""

    def __str__(self) -> str:
        return "unit"


@dataclass(frozen=True, slots=True)
class StringAttr(Attribute):
    value: str

    def __str__(self) -> str:
        return quote(self.value)


@dataclass(frozen=True, slots=True)
class SymbolRefAttr(Attribute):
    """``@name``."""

    name: str

    def __str__(self) -> str:
        return "@" + (self.name if _is_bare(self.name) else quote(self.name))


@dataclass(frozen=True, slots=True)
class TypeAttr(Attribute):
    type: Type

    def __str__(self) -> str:
        return str(self.type)


@dataclass(frozen=True, slots=True)
class ArrayAttr(Attribute):
    elements: tuple[Attribute, ...]

    def __iter__(self) -> Iterator[Attribute]:
        return iter(self.elements)

    def __len__(self) -> int:
        return len(self.elements)

    def __str__(self) -> str:
        return "[" + ", ".join(map(str, self.elements)) + "]"


@dataclass(frozen=True, slots=True)
class DictAttr(Attribute):
    """An attribute dictionary; ``items`` keeps the written order (equality ignores order)."""

    items: tuple[tuple[str, Attribute], ...]

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, DictAttr):
            return NotImplemented
        return dict(self.items) == dict(other.items)

    def __hash__(self) -> int:
        return hash(frozenset(self.items))

    def get(self, key: str) -> Attribute | None:
        for k, v in self.items:
            if k == key:
                return v
        return None

    def __str__(self) -> str:
        return format_attr_dict(self.items)


@dataclass(frozen=True, slots=True)
class DialectAttr(Attribute):
    """An attribute of a dialect, written ``#name<body>`` (or ``<body>`` when ``name`` is "").

    ``#pto.pipe<PIPE_V>`` has name ``pto.pipe`` and body ``PIPE_V``; ``#pto<round_mode RINT>``
    has name ``pto`` and body ``round_mode RINT``. :attr:`mnemonic` and :attr:`value` give the
    enum kind and value in both spellings. ``body`` is normalised text (whitespace collapsed).
    """

    name: str
    body: str | None = None

    @property
    def mnemonic(self) -> str:
        if self.name in ("pto", "") and self.body and " " in self.body:
            return self.body.split(" ", 1)[0]
        return self.name.split(".", 1)[1] if "." in self.name else self.name

    @property
    def value(self) -> str:
        body = self.body or ""
        if self.name == "pto" and " " in body:
            return body.split(" ", 1)[1]
        return body

    def __str__(self) -> str:
        head = f"#{self.name}" if self.name else ""
        return head if self.body is None else f"{head}<{self.body}>"


@dataclass(frozen=True, slots=True)
class OpaqueAttr(Attribute):
    """A builtin attribute kept as normalised text (``dense<[1, 2]>``, ``array<i32: 1, 0>``,
    ``strided<[16, 1], offset: ?>``, ``affine_map<...>``, ``#alias``)."""

    text: str

    def __str__(self) -> str:
        return self.text


def _is_bare(name: str) -> bool:
    return (
        bool(name)
        and (name[0].isalpha() or name[0] == "_")
        and all(c.isalnum() or c in "_$." for c in name)
    )


def quote(s: str) -> str:
    out = ['"']
    for ch in s:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif ord(ch) < 32 or ord(ch) == 127:
            out.append(f"\\{ord(ch):02X}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def format_key(key: str) -> str:
    return key if _is_bare(key) else quote(key)


def format_attr_dict(items: tuple[tuple[str, Attribute], ...]) -> str:
    parts = [
        format_key(k) if isinstance(v, UnitAttr) else f"{format_key(k)} = {v}" for k, v in items
    ]
    return "{" + ", ".join(parts) + "}"

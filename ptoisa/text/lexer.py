"""Tokenizer for .pto text (MLIR syntax subset plus PTO-AS statements).

One compiled regex turns the whole text into three parallel lists (kinds, texts, offsets);
line/column are computed only when an error or a location is needed.
"""

from __future__ import annotations

import bisect
import re

from ptoisa.errors import EXCERPT_WIDTH, ParseError, SourceLoc

# Token kinds (single characters keep comparisons cheap).
VALUE = "%"  # %name
SYMBOL = "@"  # @name or @"name"
HASH = "#"  # #pto.pipe, #map
BANG = "!"  # !pto.tile_buf
CARET = "^"  # ^bb0
STRING = "s"
INT = "i"
FLOAT = "f"
IDENT = "w"  # bare identifier, may contain dots (pto.tadd, f8E4M3FN)
PUNCT = "p"
EOF = "$"

_TOKEN_RE = re.compile(
    r"""
    (?P<ws>\s+)
  | (?P<comment>//[^\n]*)
  | (?P<value>%(?:[\w$.]|-(?!>))+(?:\#\d+)?)
  | (?P<symbol>@(?:[A-Za-z_$.][\w$.\-]*|"(?:[^"\\\n]|\\.)*"))
  | (?P<hash>\#[A-Za-z_$.][\w$.\-]*)
  | (?P<bang>![A-Za-z_$.][\w$.]*)
  | (?P<caret>\^[\w$.\-]+)
  | (?P<string>"(?:[^"\\\n]|\\.)*")
  | (?P<float>-?\d+\.\d*(?:[eE][+-]?\d+)?|-?\d+[eE][+-]?\d+)
  | (?P<int>-?0x[0-9a-fA-F]+|-?\d+)
  | (?P<ident>[A-Za-z_][\w$.]*)
  | (?P<punct>->|\.\.\.|::|[()\[\]{}<>,:=?*+|\-])
    """,
    re.VERBOSE,
)

_KIND = {
    "value": VALUE,
    "symbol": SYMBOL,
    "hash": HASH,
    "bang": BANG,
    "caret": CARET,
    "string": STRING,
    "float": FLOAT,
    "int": INT,
    "ident": IDENT,
    "punct": PUNCT,
}


class Source:
    """A text with its line table, to turn offsets into :class:`SourceLoc`."""

    def __init__(self, text: str, filename: str) -> None:
        self.text = text
        self.filename = filename
        self.line_starts = [0] + [m.end() for m in re.finditer(r"\n", text)]

    def loc(self, offset: int) -> SourceLoc:
        line = bisect.bisect_right(self.line_starts, offset) - 1
        start = self.line_starts[line]
        end = (self.line_starts[line + 1] - 1 if line + 1 < len(self.line_starts)
               else len(self.text))
        col = offset - start + 1
        if end - start <= EXCERPT_WIDTH:
            return SourceLoc(self.filename, line + 1, col, self.text[start:end])
        # a long line: keep only the excerpt (every op records a location; copying a
        # megabyte line into each would make parsing quadratic)
        a = max(start, min(offset - EXCERPT_WIDTH // 2, end - EXCERPT_WIDTH))
        b = min(end, a + EXCERPT_WIDTH)
        head = "..." if a > start else ""
        text = head + self.text[a:b] + ("..." if b < end else "")
        caret = offset - a + len(head)
        return SourceLoc(self.filename, line + 1, col, text, caret)


def tokenize(
    src: Source, comments: list[tuple[int, str]] | None = None
) -> tuple[list[str], list[str], list[int]]:
    """(kinds, texts, offsets); the last token is EOF. Raises ParseError on a stray character.

    ``//`` comments are not tokens; ``comments``, if given, receives each as (offset, text)
    (the printer puts them back next to the ops they belong to)."""
    text = src.text
    kinds: list[str] = []
    texts: list[str] = []
    offs: list[int] = []
    pos = 0
    n = len(text)
    match = _TOKEN_RE.match
    while pos < n:
        m = match(text, pos)
        if m is None:
            ch = text[pos]
            if ch == '"':
                raise ParseError("unterminated string literal", loc=src.loc(pos))
            raise ParseError(f"unexpected character {ch!r}", loc=src.loc(pos))
        group = m.lastgroup
        end = m.end()
        if group == "comment":
            if comments is not None:
                comments.append((pos, m.group()))
        elif group != "ws":
            kinds.append(_KIND[group])  # type: ignore[index]
            texts.append(m.group())
            offs.append(pos)
        pos = end
    kinds.append(EOF)
    texts.append("")
    offs.append(n)
    return kinds, texts, offs

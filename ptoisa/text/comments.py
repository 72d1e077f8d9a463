"""``//`` comments of a .pto text, attached to what they annotate so ``fmt`` keeps them.

As code formatters do: comments on lines of their own belong to the op that follows them
(printed just before it, at its indentation), a comment after an op on the same line stays at
the end of that op's line, comments before a closing ``}`` stay at the end of that block, and
the comments before ``module`` (the file header: ``// RUN: ...`` lines, command lines) and
after its closing ``}`` (FileCheck ``// CHECK`` lines) stay at the top and the bottom. A blank
line between comments, or between a comment and what it annotates, is kept (one at most).

The parser fills a :class:`Comments` and stores it in ``Module.extra["comments"]``; the IR
itself, and so structural equality, does not see comments.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ptoisa.ir.core import Block, Module, Op

#: a blank line inside a comment group
BLANK = ""


@dataclass
class Comments:
    before: dict[Op, list[str]] = field(default_factory=dict)
    eol: dict[Op, str] = field(default_factory=dict)
    end: dict[Block, list[str]] = field(default_factory=dict)
    head: list[str] = field(default_factory=list)  # before 'module' (or the first op)
    module_end: list[str] = field(default_factory=list)  # before the module's '}'
    tail: list[str] = field(default_factory=list)  # after the module

    def __bool__(self) -> bool:
        return bool(self.before or self.eol or self.end or self.head or self.module_end
                    or self.tail)


class Collector:
    """Hands out the comments of a text in order, as groups that end at a token."""

    def __init__(self, text: str, comments: list[tuple[int, str]]) -> None:
        self.text = text
        self.comments = comments
        self.k = 0
        self.out = Comments()

    def pending(self, offset: int) -> bool:
        return self.k < len(self.comments) and self.comments[self.k][0] < offset

    def take(self, prev_end: int, offset: int, last_op: Op | None) -> list[str]:
        """The comments before ``offset`` (the next token), after ``prev_end`` (the end of the
        token before). A comment on the line of that token is ``last_op``'s end-of-line
        comment when there is one, else it joins the group."""
        group: list[str] = []
        at = prev_end
        comments, text = self.comments, self.text
        while self.k < len(comments) and comments[self.k][0] < offset:
            pos, body = comments[self.k]
            self.k += 1
            if pos < prev_end and last_op is not None:
                # inside the op just read (between its continuation lines): keep it before it
                self.out.before.setdefault(last_op, []).append(body)
                continue
            gap = text.count("\n", at, pos)
            if gap == 0 and last_op is not None and not group and last_op not in self.out.eol:
                self.out.eol[last_op] = body
                at = pos + len(body)
                continue
            if gap >= 2 and (group or at > 0):
                group.append(BLANK)
            group.append(body)
            at = pos + len(body)
        if group and text.count("\n", at, offset) >= 2:
            group.append(BLANK)
        return group


def comments_of(mod: Module) -> Comments | None:
    c = mod.extra.get("comments")
    return c if isinstance(c, Comments) else None

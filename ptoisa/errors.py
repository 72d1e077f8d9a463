"""One exception hierarchy for everything ptoisa reports to a user.

Every error names what went wrong in the user's terms: the instruction (lower-case mnemonic),
the operand, what was expected and what was found. Errors raised while processing text carry
a source location and render as ``file.pto:LINE:COL: error: ...`` with the line and a caret.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SourceLoc:
    """A position in a source text (1-based line and column)."""

    file: str
    line: int
    col: int
    source_line: str = ""
    #: index of the caret in ``source_line`` when that is an excerpt of a long line (see
    #: :func:`excerpt`); None: the whole line, caret under ``col``
    caret: int | None = None

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col}"


#: most characters of a source line a diagnostic shows (a generated one-line program can be
#: megabytes long: the excerpt around the column is what the reader needs)
EXCERPT_WIDTH = 200


def excerpt(line: str, col0: int, width: int = EXCERPT_WIDTH) -> tuple[str, int]:
    """(at most ``width`` characters of ``line`` around index ``col0``, with ``...`` where it
    is cut, and the caret's index in that text)."""
    if len(line) <= width:
        return line, col0
    a = max(0, min(col0 - width // 2, len(line) - width))
    b = a + width
    head = "..." if a > 0 else ""
    return head + line[a:b] + ("..." if b < len(line) else ""), col0 - a + len(head)


class PtoError(Exception):
    """Base class of every error ptoisa raises on bad user input."""

    #: the error is one of PTOAS's own verifier rules, in its words (a registry rule raised
    #: with ``Sig.fail(..., ptoas=True)``: tests/test_ptoas_rules.py finds each text in PTOAS's
    #: lit tests; or with ``ptoas=SourceRule(...)``, cited from PTOAS's source)
    ptoas_rule: bool = False
    #: the ``path:function`` of PTOAS's source that makes the rule ("": not cited from source)
    ptoas_source: str = ""

    def __init__(self, message: str, *, op: str | None = None, loc: SourceLoc | None = None):
        self.message = message
        self.op = op
        self.loc = loc
        super().__init__(self.render())

    def render(self) -> str:
        text = f"{self.op}: {self.message}" if self.op else self.message
        if self.loc is None:
            return text
        out = f"{self.loc}: error: {text}"
        if self.loc.source_line:
            line = self.loc.source_line.rstrip("\n")
            caret = self.loc.caret
            if caret is None:
                line, caret = excerpt(line, max(self.loc.col - 1, 0))
            out += f"\n{line}\n{' ' * caret}^"
        return out

    def with_loc(self, loc: SourceLoc | None) -> PtoError:
        """The same error, located at ``loc`` (used when an IR op is checked/run)."""
        err = type(self).__new__(type(self))
        PtoError.__init__(err, self.message, op=self.op, loc=loc)
        for key, value in vars(self).items():  # what a subclass carries besides the text
            vars(err).setdefault(key, value)
        return err

    def at_op(self, op: str, loc: SourceLoc | None) -> PtoError:
        """The error of a failed step of a ``.pto`` op: naming ``op`` where it names none,
        located at the op's line (:meth:`with_loc`)."""
        if self.op is None:
            self.op = op
        return self.with_loc(loc)

    def __str__(self) -> str:
        return self.render()


class ParseError(PtoError):
    """Malformed program text."""


class VerifyError(PtoError):
    """A program that is well-formed text but not a legal PTO program (types, SSA, legality)."""


class IllegalInstruction(PtoError):
    """An instruction used with operands its target does not accept (static legality)."""


class UnsupportedType(IllegalInstruction):
    """An element type that the instruction or target does not support."""


class RuntimeCheckError(PtoError):
    """A run-time check failed (valid regions, shapes known only when running)."""


class ConstraintError(IllegalInstruction, RuntimeCheckError):
    """A documented constraint failed that the upstream CPU simulator does not check: at run
    time (valid regions) or on the operand types. A permissive machine skips it (see
    ``ptoisa.isa.registry.sim_unchecked``)."""


class PtoMemoryError(PtoError):
    """Tile storage problems: unassigned tile, out of capacity, misaligned, GM out of bounds."""


class ExecutionError(PtoError):
    """A failure while running a program that is not attributable to a single instruction."""


class NotExecutedYet(ExecutionError):
    """An operation (or a form of it) ptoisa does not execute yet: refused by name, the op
    being the error's ``op`` (set when the error leaves the instruction), never a no-op."""


class OutsideArgument(ExecutionError):
    """A transfer reaches GM bytes outside the array it was given for a pointer argument (the
    host's buffer). The suite tells it from other failures: upstream kernels that reach past
    their host buffer pass on the device, whose allocator hands out more than was asked."""


class BlockDivergence(PtoError):
    """Python control flow depends on a value that differs between blocks of a lockstep run
    (see :mod:`ptoisa.lockstep`; ``launch(..., lockstep="auto")`` then runs the blocks one by
    one)."""


def needs_values(what: str) -> PtoError:
    """The error of a timing-only run (``Machine.values`` False) that reached ``what``, an op
    whose effect is a value (control flow or output would depend on data never computed)."""
    return PtoError("needs values: its effect is a tile or memory value, and this is a "
                    "timing-only run (no values computed); run with values (cycles=True, "
                    "ptoisa run --cycles)", op=what)

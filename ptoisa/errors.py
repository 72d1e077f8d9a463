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

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col}"


class PtoError(Exception):
    """Base class of every error ptoisa raises on bad user input."""

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
            out += f"\n{line}\n{' ' * max(self.loc.col - 1, 0)}^"
        return out

    def with_loc(self, loc: SourceLoc) -> PtoError:
        """The same error, located at ``loc`` (used when an IR op is checked/run)."""
        err = type(self).__new__(type(self))
        PtoError.__init__(err, self.message, op=self.op, loc=loc)
        return err

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

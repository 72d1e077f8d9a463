"""PTOAS verifier rules proven from PTOAS's source, not from its lit tests.

A registry rule marked ``Sig.fail(..., ptoas=True)`` is one of PTOAS's verifier rules whose
words tests/test_ptoas_rules.py finds in PTOAS's lit tests. Some of PTOAS's rules appear in no
lit test but are plainly in its verifier's source; a :class:`SourceRule` cites one: the file
and function of PTOAS at :data:`PTOAS_COMMIT` (the commit of the corpus under
``../shared/corpus/ptoas-main``) that emit the error, PTOAS's words, and the targets on which
the cited code runs. ``Sig.fail(msg, ptoas=RULE)`` marks the error as PTOAS's own rule (for
those targets only) and quotes PTOAS's words after ours: ``tmatmul: aMatrix must be a Left
tile, got Mat (PTOAS: expects lhs, rhs, and dst to use the left, right, and acc address
spaces)``.

The rules live beside the code that makes them (``isa/matrix/matmul.py``); :data:`MLIR_PARSE`
is PTOAS's reading of its textual input as MLIR (the text parser's ``mlir_only``).

tests/test_ptoas_rules.py checks every rule declared here: the citation is well formed and
the words long enough to mean something; with a copy of PTOAS's repository at hand
(:func:`mirror`), the cited function is defined in the cited file at :data:`PTOAS_COMMIT` and
its body holds the words.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

#: the PTOAS commit the rules are proven at (the corpus's commit, ptoas-main)
PTOAS_COMMIT = "e32488c9"
#: where a git copy of PTOAS's repository is looked for (the env var overrides it)
MIRROR_ENV = "PTOISA_PTOAS_MIRROR"
DEFAULT_MIRROR = "/work/.mirror/tonibohnlein+PTOAS/repo"
#: the literal text between the ``{}`` slots of :attr:`SourceRule.says` must be this long in
#: all (a few words are no proof)
MIN_WORDS = 20

#: every rule declared (in declaration order), for the test
SOURCE_RULES: list[SourceRule] = []

_CITE = re.compile(r"[\w./-]+\.(?:cpp|h|td):[A-Za-z_]\w*(?:::[A-Za-z_]\w*)*")


@dataclass(frozen=True)
class SourceRule:
    """One PTOAS verifier error, cited from PTOAS's source at :data:`PTOAS_COMMIT`."""

    #: ``path/in/PTOAS.cpp:functionName`` (``Class::method`` for a method): the function
    #: whose body emits the error
    cite: str
    #: PTOAS's error text; ``{}`` where PTOAS streams in an operand's name
    says: str
    #: the targets on which the cited code runs (PTOAS's a2a3 / a5 verifiers)
    targets: frozenset[str]

    def __post_init__(self) -> None:
        if not _CITE.fullmatch(self.cite):
            raise ValueError(f"a PTOAS source citation is path:function, got {self.cite!r}")
        if len("".join(self.pieces())) < MIN_WORDS:
            raise ValueError(f"too few of PTOAS's words to prove a rule: {self.says!r}")
        if not self.targets or not self.targets <= {"a2a3", "a5"}:
            raise ValueError(f"PTOAS verifies for a2a3 and a5, got {sorted(self.targets)}")
        SOURCE_RULES.append(self)

    @property
    def path(self) -> str:
        return self.cite.split(":")[0]

    @property
    def function(self) -> str:
        return self.cite.split(":", 1)[1]

    def pieces(self) -> list[str]:
        """The literal parts of :attr:`says` (what PTOAS's source spells out)."""
        return [p for p in self.says.split("{}") if p]

    def text(self, *names: str) -> str:
        """PTOAS's message with ``names`` in its slots."""
        return self.says.format(*names)


def source_rule(cite: str, says: str, targets: tuple[str, ...] = ("a2a3", "a5")) -> SourceRule:
    return SourceRule(cite, says, frozenset(targets))


def mirror() -> Path | None:
    """The git directory of a copy of PTOAS's repository, if there is one."""
    p = Path(os.environ.get(MIRROR_ENV) or DEFAULT_MIRROR)
    return p if p.is_dir() else None


def function_body(source: str, function: str) -> str | None:
    """The text of ``function``'s definition in C++ ``source`` (from its name to the closing
    brace at the start of a line), None if it is not defined there (a declaration alone does
    not count)."""
    for m in re.finditer(rf"^[A-Za-z_][\w:<>,\s\*&]*?\b{re.escape(function)}\s*\(", source,
                         re.M):
        rest = source[m.end():]
        brace, semi = rest.find("{"), rest.find(";")
        if brace < 0 or (0 <= semi < brace):
            continue  # a declaration
        end = rest.find("\n}")
        return source[m.start():m.end() + (end if end >= 0 else len(rest))]
    return None


#: PTOAS reads a textual input as MLIR (``parseAsmSourceFile``) and stops at MLIR's error:
#: text that is not MLIR (a PTO-AS program) is refused at its first op MLIR does not know
MLIR_PARSE = source_rule("tools/ptoas/driver.cpp:parseTextualModule",
                         "Error: Failed to parse MLIR.")

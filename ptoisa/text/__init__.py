"""Text front end: parse .pto / PTO-AS text into :mod:`ptoisa.ir`, print it back.

``parse`` runs :func:`ptoisa.ir.verify_ssa` on the result unless ``verify=False`` (use that
for fragments such as single PTO-AS statements whose values are defined elsewhere; undefined
names then become free values that ``verify_ssa`` reports later).
"""

from __future__ import annotations

from collections.abc import Callable

from ptoisa.ir import Module, verify_ssa
from ptoisa.text.parser import Parser, asm_to_ir_name
from ptoisa.text.printer import NON_DPS_OPS, ir_to_asm_name, print_module

__all__ = ["NON_DPS_OPS", "asm_to_ir_name", "ir_to_asm_name", "parse", "print_module"]


def parse(
    text: str,
    filename: str = "<string>",
    known_ops: Callable[[str], bool] | None = None,
    *,
    verify: bool = True,
) -> Module:
    """Parse ``text``; raises ParseError (syntax) or VerifyError (SSA checks), with location.

    ``known_ops(name)``, if given, makes any ``pto.*`` op it rejects a ParseError
    "unknown operation 'pto.foo'" at the op.
    """
    mod = Parser(text, filename, known_ops).parse_module()
    if verify:
        verify_ssa(mod)
    return mod

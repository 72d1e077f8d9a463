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
    mlir_only: bool = False,
) -> Module:
    """Parse ``text``; raises ParseError (syntax) or VerifyError (SSA checks), with location.

    ``known_ops(name)``, if given, makes any ``pto.*`` op it rejects a ParseError
    "unknown operation 'pto.foo'" at the op. ``mlir_only``: read the text as PTOAS (an MLIR
    tool) does: a PTO-AS statement at the top level (an op named without a dialect MLIR
    knows: ``func @f(...)``, ``tadd``) is a ParseError in MLIR's words ("custom op 'func' is
    unknown"). Inside a region it is not checked (a line split off an op by the layout rules
    reads as one).
    """
    mod = Parser(text, filename, known_ops, mlir_only).parse_module()
    if verify:
        verify_ssa(mod)
    return mod

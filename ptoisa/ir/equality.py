"""Structural equality of IR: same ops, operands wired the same way, same types and attributes.

Source locations and SSA value names are ignored (values are compared by where they are
defined), so ``parse(print(m))`` equals ``m`` even though every location differs.

The comparison is defined in :mod:`ptoisa.ir.core` (``Module.__eq__`` uses it, and this module
needs the IR's classes) and re-exported here, where it was defined before.
"""

from __future__ import annotations

from ptoisa.ir.core import first_difference, module_key, structurally_equal

__all__ = ["first_difference", "module_key", "structurally_equal"]

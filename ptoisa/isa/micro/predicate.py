"""Predicate generation (micro-isa/05-materialization-predicate.md): ``pto.pset_b*`` /
``pto.pge_b*`` from a pattern token, ``pto.plt_b*`` from a remaining-lane count.

A predicate register is 256 bits, one per byte of a vector register; ``b8`` / ``b16`` /
``b32`` read it as 256 / 128 / 64 lanes (``ptoisa/vector/regs.py``)."""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from ...enums import Pipe
from ...errors import ExecutionError
from ...vector.regs import GRANULARITY, VREG_BYTES, Mask
from ..registry import Instr, Opnd, Param, instr


def pattern_lanes(pattern: str, n: int, op: str) -> np.ndarray:
    """The active lanes (of ``n``) a pattern token names: ``PAT_ALL``, ``PAT_ALLF`` (none),
    ``PAT_VL<k>`` (the first k). The page lists ``PAT_H``, ``PAT_Q``, ``PAT_M3``, ``PAT_M4``
    without saying which lanes they set: refused by name, never guessed."""
    lanes = np.arange(n)
    if pattern == "PAT_ALL":
        return np.ones(n, np.bool_)
    if pattern == "PAT_ALLF":
        return np.zeros(n, np.bool_)
    mt = re.fullmatch(r"PAT_VL(\d+)", pattern)
    if mt is not None and int(mt.group(1)) in (1, 2, 3, 4, 8, 16, 32, 64, 128):
        return lanes < int(mt.group(1))
    if pattern in ("PAT_H", "PAT_Q", "PAT_M3", "PAT_M4"):
        raise ExecutionError(f"operation 'pto.{op}' cannot be executed by ptoisa yet with "
                             f"pattern {pattern} (the page does not say which lanes it sets)")
    raise ExecutionError(f"unknown pattern token {pattern!r} (PAT_ALL, PAT_ALLF, "
                         "PAT_VL1..PAT_VL128, PAT_H, PAT_Q, PAT_M3, PAT_M4)")


def _pattern_op(kind: str, gran: str) -> Instr:
    name = f"{kind}_{gran}".upper()
    n = VREG_BYTES // GRANULARITY[gran]

    def impl(m: Any, *, pattern: str) -> Mask:
        return Mask.of_lanes(pattern_lanes(str(pattern), n, name.lower()), gran)

    impl.__doc__ = (f"A !pto.mask<{gran}> ({n} lanes) from a pattern token: PAT_ALL, "
                    "PAT_ALLF, PAT_VL<k> (the first k lanes).")
    impl.__module__ = __name__
    return instr(name, pipe=Pipe.V, dialect="vpto", operands=(),
                 params=(Param("pattern", "PAT_ALL"),),
                 results=(Opnd("result", "mask"),))(impl)


def _plt(gran: str) -> Instr:
    n = VREG_BYTES // GRANULARITY[gran]

    def impl(m: Any, scalar: Any) -> tuple[Mask, int]:
        left = int(scalar)
        mask = Mask.of_lanes(np.arange(n) < left, gran)
        return mask, 0 if left < n else left - n

    impl.__doc__ = (f"mask[i] = i < scalar over {n} lanes (!pto.mask<{gran}>); scalar_out = "
                    f"scalar < {n} ? 0 : scalar - {n}, the count left for the next vector.")
    impl.__module__ = __name__
    return instr(f"PLT_{gran.upper()}", pipe=Pipe.V, dialect="vpto",
                 operands=(Opnd("scalar", "scalar"),),
                 results=(Opnd("mask", "mask"), Opnd("scalar_out", "scalar")))(impl)


PSET_B8, PSET_B16, PSET_B32 = (_pattern_op("pset", g) for g in ("b8", "b16", "b32"))
PGE_B8, PGE_B16, PGE_B32 = (_pattern_op("pge", g) for g in ("b8", "b16", "b32"))
PLT_B8, PLT_B16, PLT_B32 = (_plt(g) for g in ("b8", "b16", "b32"))

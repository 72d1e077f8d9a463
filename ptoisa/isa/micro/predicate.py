"""Predicate generation (micro-isa/05-materialization-predicate.md): ``pto.pset_b*`` /
``pto.pge_b*`` from a pattern token, ``pto.plt_b*`` from a remaining-lane count, ``pto.pltm_b*``
from a loop index and a bound.

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
                 results=(Opnd("result", "mask"),), rows=True)(impl)


def _plt(gran: str) -> Instr:
    n = VREG_BYTES // GRANULARITY[gran]

    def impl(m: Any, scalar: Any) -> tuple[Mask, Any]:
        if isinstance(scalar, np.ndarray):  # one count per row (a batched loop)
            return plt_mask(scalar, gran), np.where(scalar < n, 0, scalar - n)
        left = int(scalar)
        return plt_mask(left, gran), 0 if left < n else left - n

    impl.__doc__ = (f"mask[i] = i < scalar over {n} lanes (!pto.mask<{gran}>); scalar_out = "
                    f"scalar < {n} ? 0 : scalar - {n}, the count left for the next vector.")
    impl.__module__ = __name__
    return instr(f"PLT_{gran.upper()}", pipe=Pipe.V, dialect="vpto",
                 operands=(Opnd("scalar", "scalar"),),
                 results=(Opnd("mask", "mask"), Opnd("scalar_out", "scalar")), rows=True,
                 chain=lambda first, k: plt_counts(first, gran, k))(impl)


def _pltm(gran: str) -> Instr:
    n = VREG_BYTES // GRANULARITY[gran]

    def impl(m: Any, loop: Any, bound: Any) -> Mask:
        return Mask.of_lanes(np.arange(n) + int(loop) * n < int(bound), gran)

    impl.__doc__ = (f"mask[i] = i + loop * {n} < bound over {n} lanes (!pto.mask<{gran}>): "
                    "the tail predicate of vector number ``loop``; no count is returned "
                    "(unlike plt).")
    impl.__module__ = __name__
    return instr(f"PLTM_{gran.upper()}", pipe=Pipe.V, dialect="vpto",
                 operands=(Opnd("loop", "scalar"), Opnd("bound", "scalar")),
                 results=(Opnd("mask", "mask"),))(impl)


def plt_mask(left: Any, gran: str) -> Mask:
    """The mask ``pto.plt_<gran>`` makes of ``left`` lanes to go: lane i active when i < left
    (an array of counts, one per iteration of a batched loop, gives one row each)."""
    n = VREG_BYTES // GRANULARITY[gran]
    counts = np.asarray(left)
    mask = Mask.of_lanes(np.arange(n) < counts[..., None], gran)
    mask.full = bool((counts >= n).all())
    return mask


def plt_counts(init: int, gran: str, trips: int) -> np.ndarray:
    """The count operands of ``trips + 1`` ``pto.plt_<gran>`` ops in a row, each fed the
    scalar_out of the one before and the first ``init`` (what a loop carrying the count
    computes, the last one what it yields at its end): ``left - n`` while ``left >= n`` of
    the n lanes are to go, then 0; so ``max(init - k * n, 0)`` after k ops."""
    n = VREG_BYTES // GRANULARITY[gran]
    out = np.maximum(init - np.arange(trips + 1, dtype=np.int64) * n, 0)
    out[0] = init
    return out


PSET_B8, PSET_B16, PSET_B32 = (_pattern_op("pset", g) for g in ("b8", "b16", "b32"))
PGE_B8, PGE_B16, PGE_B32 = (_pattern_op("pge", g) for g in ("b8", "b16", "b32"))
PLT_B8, PLT_B16, PLT_B32 = (_plt(g) for g in ("b8", "b16", "b32"))
PLTM_B8, PLTM_B16, PLTM_B32 = (_pltm(g) for g in ("b8", "b16", "b32"))

"""VMI mask producers (vmi-isa/08-predicate-ops.md): ``create_mask`` (the first N lanes) and
``create_group_mask`` (the first N lanes of every group)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...enums import Pipe
from ...vector.logical import LMask, VmiMaskSpec
from ..micro.predicate import pattern_lanes
from ..registry import Opnd, Param, Sig, instr
from .common import result_spec


def _lanes(result_type: Any, what: str) -> int:
    return int(result_spec(result_type, what, mask=True).lanes)


@instr("VMI_CREATE_MASK", pipe=Pipe.V, dialect="vmi",
       operands=(Opnd("active_lanes", "index"),), params=(Param("result_type", None),),
       results=(Opnd("result", "lmask"),))
def VMI_CREATE_MASK(m: Any, active_lanes: int, *, result_type: Any = None) -> LMask:
    """result[i] = i < active_lanes (all lanes from active_lanes >= L on; none below 1)."""
    n = _lanes(result_type, "create_mask")
    return LMask(np.arange(n) < int(active_lanes))


def _group_shape(sig: Sig) -> None:
    p = sig.params
    g, s = p.get("num_groups"), p.get("group_size")
    for name, v in (("num_groups", g), ("group_size", s)):
        if not isinstance(v, int) or isinstance(v, bool) or v <= 0:
            raise sig.fail(f"'{name}' must be a positive integer, got {v!r}")
    r = sig["result"] if sig["result"] is not None else p.get("result_type")
    if isinstance(r, VmiMaskSpec) and g * s != r.lanes:
        raise sig.fail(f"requires result lane count to equal num_groups * group_size "
                       f"({g} x {s} = {g * s}, the mask has {r.lanes} lanes)")


@instr("VMI_CREATE_GROUP_MASK", pipe=Pipe.V, dialect="vmi",
       operands=(Opnd("active_elems_per_group", "index"),),
       params=(Param("num_groups", None), Param("group_size", None),
               Param("result_type", None)),
       results=(Opnd("result", "lmask"),), static=(_group_shape,))
def VMI_CREATE_GROUP_MASK(m: Any, active_elems_per_group: int, *, num_groups: Any = None,
                          group_size: Any = None, result_type: Any = None) -> LMask:
    """result[i] = (i % group_size) < active_elems_per_group, over num_groups groups."""
    n = _lanes(result_type, "create_group_mask")
    return LMask(np.arange(n) % int(group_size) < int(active_elems_per_group))


@instr("VMI_PSET", pipe=Pipe.V, dialect="vmi", operands=(),
       params=(Param("pattern", "PAT_ALL"), Param("result_type", None)),
       results=(Opnd("result", "lmask"),))
def VMI_PSET(m: Any, *, pattern: str = "PAT_ALL", result_type: Any = None) -> LMask:
    """A mask from a pattern token over the logical lanes: PAT_ALL, PAT_ALLF (none),
    PAT_VL<k> (the first k lanes); the micro-ops' tokens (micro-isa/05)."""
    n = _lanes(result_type, "pset")
    return LMask(pattern_lanes(str(pattern), n, "vmi.pset"))

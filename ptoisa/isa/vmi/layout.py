"""VMI layout helpers (designs/vmi-introduction.md 3.2, vmi-implementation-manual.md):
``ensure_layout``, ``ensure_mask_layout`` and ``ensure_mask_granularity`` move a value's lanes
between physical registers so that a consumer finds them where its lowering wants them. At the
logical level ptoisa runs, a value is its lanes: each is the identity on them. Their rule is
that only the layout (or the granularity) changes: the lane count and element type stay."""

from __future__ import annotations

from typing import Any

from ...enums import Pipe
from ...vector.logical import VmiMaskSpec, VmiSpec
from ..registry import Opnd, Sig, instr


def _same_value(sig: Sig) -> None:
    s, r = sig["source"], sig["result"]
    if isinstance(s, VmiSpec) and isinstance(r, VmiSpec) and (s.lanes, s.dtype) != (
            r.lanes, r.dtype):
        raise sig.fail(f"changes the value's type ({s} -> {r}): only its layout may change")
    if isinstance(s, VmiMaskSpec) and isinstance(r, VmiMaskSpec) and s.lanes != r.lanes:
        raise sig.fail(f"changes the mask's lane count ({s} -> {r})")


def _helper(name: str, kind: str, doc: str) -> Any:
    def impl(m: Any, source: Any) -> Any:
        return source

    impl.__doc__ = doc
    impl.__module__ = __name__
    return instr(f"VMI_{name.upper()}", pipe=Pipe.V, dialect="vmi",
                 operands=(Opnd("source", kind),), results=(Opnd("result", kind),),
                 static=(_same_value,))(impl)


ENSURE_LAYOUT = _helper("ensure_layout", "lvec", "result = source: the same lanes, placed in "
                        "the result type's layout.")
ENSURE_MASK_LAYOUT = _helper("ensure_mask_layout", "lmask", "result = source: the same mask "
                             "lanes, placed in the result type's layout.")
ENSURE_MASK_GRANULARITY = _helper("ensure_mask_granularity", "lmask", "result = source: the "
                                  "same mask lanes, read at the result type's granularity.")



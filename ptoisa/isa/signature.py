"""The Python signature of an intrinsic, from its registry entry: operands positional in C++
order (optional ones defaulting to None), then ``*events``, then the template parameters as
keywords. ``Instr.__signature__`` (help(), IDEs, notebooks) and the stub writer
(:mod:`ptoisa.stubgen`) both read it; it sits below the registry (it reads an entry's
fields, it imports nothing of the package)."""

from __future__ import annotations

import enum
import inspect
from typing import Any

#: operand kind -> annotation (names resolvable in the stub's namespace)
_KIND = {
    "tile": "Tile",
    "gm": "GlobalTensor",
    "tile|gm": "Tile | GlobalTensor",
    "scalar": "int | float | np.generic",
    "simt": "int | float | np.generic | np.ndarray",
    "any": "Any",
}


def _operand_annotation(o: Any) -> str:
    if o.kind == "enum" and o.enum is not None:
        return o.enum.__name__
    return _KIND.get(o.kind, "Any")


def _param_annotation(p: Any) -> str:
    t = p.type
    if t is None and isinstance(p.default, enum.Enum):
        t = type(p.default)
    if t is not None and isinstance(t, type):
        return t.__name__
    d = p.default
    if isinstance(d, bool):
        return "bool"
    if isinstance(d, int):
        return "int"
    if isinstance(d, str):
        return "str"
    return "Any"


def _varargs(ins: Any) -> str:
    """Trailing Event arguments are ``*events`` (``*waits`` where an operand has that name)."""
    return "waits" if any(o.name == "events" for o in ins.operands) else "events"


def signature(ins: Any) -> inspect.Signature:
    """The Python signature of one intrinsic (also attached to the Instr at run time)."""
    P = inspect.Parameter
    params = []
    for o in ins.operands:
        params.append(P(o.name, P.POSITIONAL_OR_KEYWORD,
                        default=None if o.optional else P.empty,
                        annotation=_operand_annotation(o) + (" | None" if o.optional else "")))
    params.append(P(_varargs(ins), P.VAR_POSITIONAL, annotation="Event"))
    for p in ins.params:
        params.append(P(p.name, P.KEYWORD_ONLY, default=p.default,
                        annotation=_param_annotation(p)))
    ret = "Event" if ins.returns_event else "Any"
    return inspect.Signature(params, return_annotation=ret)

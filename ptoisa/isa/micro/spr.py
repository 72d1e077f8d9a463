"""SPR state ops (micro-isa/03-vector-load-store.md "SPR State Ops"): ``pto.sprclr "AR"``
and the stores of AR to UB, ``pto.sprsti`` (offset in 4-byte words) and ``pto.sprsts``
(offset in bytes).

AR is the state the AR-driven unaligned stores (``vstur`` / ``vstar``) advance; ptoisa
executes none of them yet, so AR's only known value is the 0 ``sprclr`` sets. Storing AR
before a ``sprclr`` on that core is an error naming it, not a guessed value. A post-update
form stores at its base and returns the base advanced (as ``pto.vlds``'s post-update form
does)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...enums import Pipe
from ...errors import ExecutionError, NotExecutedYet
from ...vector.regs import Ptr, buffer_bytes
from ..registry import Opnd, Param, instr


def _only_ar(spr: Any, op: str) -> None:
    if str(spr) != "AR":
        raise ExecutionError(f"pto.{op} takes \"AR\" only, got {spr!r}")


@instr("SPRCLR", pipe=Pipe.V, dialect="vpto", operands=(), params=(Param("spr", "AR"),))
def SPRCLR(m: Any, *, spr: str = "AR") -> None:
    """AR = 0."""
    _only_ar(spr, "sprclr")
    m.micro_regs["AR"] = 0


def _store_ar(m: Any, op: str, spr: Any, dest: Any, nbytes: int, post: bool) -> Ptr:
    _only_ar(spr, op)
    if not isinstance(dest, Ptr) or dest.space != "ub" or dest.dtype.name not in ("ui32",
                                                                                  "i32"):
        raise ExecutionError(f"pto.{op}: the destination must be a ui32 / i32 UB pointer, "
                             f"got {dest!r}")
    if "AR" not in m.micro_regs:
        raise NotExecutedYet(f"pto.{op}: AR holds no value ptoisa knows (no pto.sprclr "
                             f"\"AR\" before it on this core, and the spec gives AR no reset "
                             "value)")
    at = dest.addr + (0 if post else nbytes)
    out = buffer_bytes(m, "ub", at, 4, "the stored AR", role="out")
    out.view(np.uint32)[0] = m.micro_regs["AR"]
    return Ptr("ub", dest.addr + nbytes, dest.dtype)


@instr("SPRSTI", pipe=Pipe.V, dialect="vpto",
       operands=(Opnd("dest", "ptr"), Opnd("offset", "scalar")),
       params=(Param("spr", "AR"), Param("post_update", False)),
       results=(Opnd("next", "ptr", optional=True),), dtype_key=("dest",))
def SPRSTI(m: Any, dest: Ptr, offset: Any, *, spr: str = "AR",
           post_update: bool = False) -> Ptr:
    """The 32-bit AR stored at dest + 4 * offset bytes (offset: a signed 8-bit count of
    words); the post-update form stores at dest and returns next = dest + 4 * offset."""
    off = int(offset)
    if not -128 <= off <= 127:
        raise ExecutionError(f"pto.sprsti: offset {off} is not a signed 8-bit immediate")
    return _store_ar(m, "sprsti", spr, dest, 4 * off, post_update)


@instr("SPRSTS", pipe=Pipe.V, dialect="vpto",
       operands=(Opnd("dest", "ptr"), Opnd("offset", "scalar")),
       params=(Param("spr", "AR"), Param("post_update", False)),
       results=(Opnd("next", "ptr", optional=True),), dtype_key=("dest",))
def SPRSTS(m: Any, dest: Ptr, offset: Any, *, spr: str = "AR",
           post_update: bool = False) -> Ptr:
    """The 32-bit AR stored at dest + offset bytes; the post-update form stores at dest and
    returns next = dest + offset."""
    return _store_ar(m, "sprsts", spr, dest, int(offset), post_update)


__all__ = ["SPRCLR", "SPRSTI", "SPRSTS"]

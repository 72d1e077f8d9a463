"""The atomic mode of the UB -> GM DMA (MTE3): ``pto.set_atomic_s32`` picks the element
type, ``pto.set_atomic_add`` the operation, ``pto.set_atomic_none`` turns it off. While an
operation is on, ``pto.mte_ub_gm`` / ``pto.copy_ubuf_to_gm`` write GM[x] = GM[x] op UB[x] per
element of the type (the read-modify-write of the cube chapter's ``atomic(type, op)``,
micro-isa/16). Executed: s32 add (wrapping); other types and operations are not declared, so
they are refused by name."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...enums import Pipe
from ...errors import ExecutionError
from ..registry import instr


def _mode(m: Any) -> dict[str, Any]:
    """The MTE3 atomic mode: {"type": numpy type, "op": "add" | None}."""
    return m.micro_regs.setdefault("atomic", {"type": None, "op": None})


@instr("SET_ATOMIC_S32", pipe=Pipe.MTE3, dialect="vpto", operands=())
def SET_ATOMIC_S32(m: Any) -> None:
    """The atomic element type: 32-bit signed integers."""
    _mode(m)["type"] = np.int32


@instr("SET_ATOMIC_ADD", pipe=Pipe.MTE3, dialect="vpto", operands=())
def SET_ATOMIC_ADD(m: Any) -> None:
    """UB -> GM DMA adds to GM from now on (GM[x] += UB[x] per element)."""
    _mode(m)["op"] = "add"


@instr("SET_ATOMIC_NONE", pipe=Pipe.MTE3, dialect="vpto", operands=())
def SET_ATOMIC_NONE(m: Any) -> None:
    """UB -> GM DMA plainly writes again."""
    _mode(m)["op"] = None


def combine(m: Any, old: np.ndarray, new: np.ndarray, op: str) -> np.ndarray:
    """The bytes a UB -> GM row leaves in GM: ``new`` unless an atomic operation is on."""
    mode = m.micro_regs.get("atomic")
    if mode is None or mode["op"] is None:
        return new
    t = mode["type"]
    if t is None:
        raise ExecutionError(f"pto.{op}: the atomic add is on but no atomic type was set "
                             f"(pto.set_atomic_s32)")
    size = np.dtype(t).itemsize
    if old.shape[-1] % size:
        raise ExecutionError(f"pto.{op}: atomic rows of {old.shape[-1]} bytes are not whole "
                             f"{np.dtype(t).name} elements")
    a = np.ascontiguousarray(old).view(t)
    b = np.ascontiguousarray(new).view(t)
    with np.errstate(all="ignore"):
        return (a + b).view(np.uint8).reshape(old.shape)


__all__ = ["SET_ATOMIC_ADD", "SET_ATOMIC_NONE", "SET_ATOMIC_S32", "combine"]

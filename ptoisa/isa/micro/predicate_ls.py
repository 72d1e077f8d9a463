"""Predicate loads and stores (micro-isa/04-predicate-load-store.md): ``pto.plds`` /
``pto.pldi`` and ``pto.psts`` / ``pto.psti``.

A predicate register's UB image is its 256 bits packed 8 to a byte, bit 0 first (``NORM``,
32 bytes); ``PK`` stores every second bit (16 bytes), ``US`` loads 16 bytes and doubles each
bit, ``DS`` loads 64 bytes and keeps every second bit. ``plds`` / ``psts`` offsets are bytes;
``pldi`` / ``psti`` count units of the distribution (NORM 32, US / PK 16, DS 32 bytes).
Without the post-update result the op accesses base + advance; with it, base itself, and the
result is base + advance."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...enums import Pipe
from ...errors import ExecutionError
from ...vector.regs import VREG_BYTES, Mask, MaskSpec, Ptr, buffer_bytes
from ..registry import Instr, Opnd, Param, instr

#: (load dist -> payload bytes), (store dist -> payload bytes); immediate offset units
_LOAD = {"NORM": 32, "US": 16, "DS": 64}
_STORE = {"NORM": 32, "PK": 16}
_UNIT = {"pldi": {"NORM": 32, "US": 16, "DS": 32}, "psti": {"NORM": 32, "PK": 16}}


def _ptr(p: Any, op: str) -> Ptr:
    if not isinstance(p, Ptr) or p.space != "ub":
        raise ExecutionError(f"the pointer must be a UB pointer, got {p!r}")
    return p


def _gran(result_type: Any) -> str:
    if isinstance(result_type, MaskSpec):
        return result_type.gran
    if isinstance(result_type, str) and result_type in ("b8", "b16", "b32"):
        return result_type
    return "b8"


def _load(name: str) -> Instr:
    op = name.lower()
    unit = 1 if op == "plds" else None

    def impl(m: Any, source: Ptr, offset: Any, *, dist: str = "NORM",
             result_type: Any = None, post_update: bool = False) -> tuple[Mask, Ptr]:
        p = _ptr(source, op)
        dist = str(dist)
        if dist not in _LOAD:
            raise ExecutionError(f"dist {dist!r} (NORM, US or DS)")
        adv = int(offset) * (unit or _UNIT[op][dist])
        at = p.addr if post_update else p.addr + adv
        raw = buffer_bytes(m, "ub", at, _LOAD[dist], "the accessed", role="in")
        bits = np.unpackbits(raw, bitorder="little").astype(np.bool_)
        if dist == "US":
            bits = np.repeat(bits, 2)
        elif dist == "DS":
            bits = bits[::2]
        return Mask(bits[:VREG_BYTES].copy(), _gran(result_type)), Ptr(p.space, p.addr + adv,
                                                                       p.dtype)

    impl.__doc__ = (f"mask = the predicate image at source + offset "
                    f"({'bytes' if unit else 'units of dist'}) read by dist (NORM / US / DS); "
                    "updated_base = source + the advance (the post-update form reads at "
                    "source).")
    impl.__module__ = __name__
    return instr(name, pipe=Pipe.V, dialect="vpto",
                 operands=(Opnd("source", "ptr"), Opnd("offset", "scalar")),
                 params=(Param("dist", "NORM"), Param("result_type", None),
                         Param("post_update", False)),
                 results=(Opnd("result", "mask"), Opnd("updated_base", "ptr", optional=True)),
                 )(impl)


def _store(name: str) -> Instr:
    op = name.lower()
    unit = 1 if op == "psts" else None

    def impl(m: Any, value: Mask, dest: Ptr, offset: Any, *, dist: str = "NORM",
             post_update: bool = False) -> Ptr:
        p = _ptr(dest, op)
        dist = str(dist)
        if dist not in _STORE:
            raise ExecutionError(f"dist {dist!r} (NORM or PK)")
        adv = int(offset) * (unit or _UNIT[op][dist])
        at = p.addr if post_update else p.addr + adv
        bits = value.bits if dist == "NORM" else value.bits[::2]
        out = buffer_bytes(m, "ub", at, _STORE[dist], "the stored", role="out")
        out[:] = np.packbits(bits, bitorder="little")
        return Ptr(p.space, p.addr + adv, p.dtype)

    impl.__doc__ = (f"UB[dest + offset ({'bytes' if unit else 'units of dist'})] = the "
                    "predicate's packed image (NORM: 32 bytes; PK: every second bit, 16 "
                    "bytes); updated_dest = dest + the advance (the post-update form writes "
                    "at dest).")
    impl.__module__ = __name__
    return instr(name, pipe=Pipe.V, dialect="vpto",
                 operands=(Opnd("value", "mask"), Opnd("dest", "ptr"), Opnd("offset", "scalar")),
                 params=(Param("dist", "NORM"), Param("post_update", False)),
                 results=(Opnd("updated_dest", "ptr", optional=True),))(impl)


PLDS, PLDI = _load("PLDS"), _load("PLDI")
PSTS, PSTI = _store("PSTS"), _store("PSTI")

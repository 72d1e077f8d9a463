"""Vector loads and stores between UB and registers (micro-isa/03-vector-load-store.md):
``%v = pto.vlds %ub[%offset] {dist = "NORM"}`` and ``pto.vsts %v, %ub[%offset], %mask``.

``%offset`` counts elements of the pointer's type. The bytes are the machine's UB bytes
(``vector.regs.buffer_bytes``), the ones tiles placed there hold. Distributions executed:
loads ``NORM``, ``BRC_B8/B16/B32`` (lane 0's element to every lane), ``US_B8/B16`` (each
element twice), ``DS_B8/B16`` (every second element), ``UNPK_B8/B16/B32`` (each element to
the low half of a double-width slot); stores ``NORM_B8/B16/B32`` (active lanes written, the
others' bytes left as they are), ``1PT_B8/B16/B32`` (element 0 only) and the packing
``PK_B16/B32/B64``, ``PK4_B32`` (each lane's low half / low byte, stored contiguously).
Other distribution tokens are refused by name when they run."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...enums import Pipe
from ...errors import ExecutionError
from ...vector.regs import VREG_BYTES, Mask, Ptr, PtrSpec, VReg, VRegSpec, buffer_bytes
from ..registry import Opnd, Param, Sig, instr
from .common import active

_WIDTH = {"B8": 1, "B16": 2, "B32": 4}


def _ub(p: Any, op: str) -> Ptr:
    if not isinstance(p, Ptr) or p.space != "ub":
        raise ExecutionError(f"the pointer must be a UB pointer (!pto.ptr<T, ub>), got "
                             f"{p!r}")
    return p


#: packing store distributions: lane width in bytes, bytes kept of each lane (its low part)
_PACK = {"PK_B16": (2, 1), "PK_B32": (4, 2), "PK_B64": (8, 4), "PK4_B32": (4, 1)}


def _not_run(op: str, dist: str) -> ExecutionError:
    return ExecutionError(f"operation 'pto.{op}' cannot be executed by ptoisa yet with "
                          f"dist = \"{dist}\"")


def _width_rule(dist: str, itemsize: int, op: str) -> None:
    w = dist.rsplit("_", 1)[-1]
    if dist in _PACK:  # a packing store reads the register at its own lane width
        return
    if w in _WIDTH and _WIDTH[w] != itemsize:
        raise ExecutionError(f"dist {dist} is for {8 * _WIDTH[w]}-bit elements, the "
                             f"register holds {8 * itemsize}-bit ones")


def _ptr_elems(sig: Sig) -> None:
    p, r = sig["source"], sig["result"]
    if isinstance(p, PtrSpec) and isinstance(r, VRegSpec) and \
            p.dtype.itemsize != r.dtype.itemsize:
        raise sig.fail(f"source {p} and result {r} differ in element width")


@instr("VLDS", pipe=Pipe.V, dialect="vpto",
       operands=(Opnd("source", "ptr"), Opnd("offset", "scalar", optional=True)),
       params=(Param("dist", "NORM"), Param("post_update", False)),
       results=(Opnd("result", "vreg"), Opnd("updated_base", "ptr", optional=True)),
       dtype_key=("source",), static=(_ptr_elems,))
def VLDS(m: Any, source: Ptr, offset: Any = None, *, dist: str = "NORM",
         post_update: bool = False) -> tuple[VReg, Ptr]:
    """result = the register loaded from UB at source + offset elements by the distribution
    (``NORM``: 256 contiguous bytes; ``BRC_B*``: one element to every lane; ``US_B*``: 128
    bytes, each element twice; ``DS_B*``: 512 bytes, every second element). The post-update
    form loads at source itself and returns updated_base = source + offset."""
    p = _ub(source, "vlds")
    dt = p.dtype
    off = 0 if offset is None else int(offset)
    at = p.addr + (0 if post_update else off * dt.itemsize)
    n = VREG_BYTES // dt.itemsize
    dist = str(dist)
    _width_rule(dist, dt.itemsize, "vlds")
    if dist == "NORM":
        data = buffer_bytes(m, "ub", at, VREG_BYTES, "the loaded", role="in").view(dt.np).copy()
    elif dist.startswith("BRC_") and dist != "BRC_BLK":
        one = buffer_bytes(m, "ub", at, dt.itemsize, "the loaded", role="in").view(dt.np)
        data = np.full(n, one[0], dt.np)
    elif dist.startswith("US_"):
        half = buffer_bytes(m, "ub", at, VREG_BYTES // 2, "the loaded", role="in").view(dt.np)
        data = np.repeat(half, 2)
    elif dist.startswith("DS_"):
        data = buffer_bytes(m, "ub", at, 2 * VREG_BYTES, "the loaded",
                            role="in").view(dt.np)[::2].copy()
    elif dist.startswith("UNPK_B"):
        # 128 bytes, element i to the low half of the double-width slot i (lane 2i), the
        # high halves zero
        half = buffer_bytes(m, "ub", at, VREG_BYTES // 2, "the loaded", role="in").view(dt.np)
        data = np.zeros(n, dt.np)
        data[::2] = half
    else:
        raise _not_run("vlds", dist)
    return VReg(data), p.plus(off)


@instr("VSTS", pipe=Pipe.V, dialect="vpto",
       operands=(Opnd("value", "vreg"), Opnd("dest", "ptr"),
                 Opnd("offset", "scalar", optional=True), Opnd("mask", "mask", optional=True)),
       params=(Param("dist", ""), Param("post_update", False)),
       results=(Opnd("updated_dest", "ptr", optional=True),), dtype_key=("value",))
def VSTS(m: Any, value: VReg, dest: Ptr, offset: Any = None, mask: Mask | None = None, *,
         dist: str = "", post_update: bool = False) -> Ptr:
    """UB[dest + offset + i] = value[i] for the active lanes (``NORM_B*``, the default: the
    inactive lanes' bytes are left as they are); ``1PT_B*`` writes element 0 only, whatever
    the mask; ``PK_B16/B32/B64`` store each lane's low half and ``PK4_B32`` its low byte,
    the lanes and the predicate taken at the dist's width. The post-update form stores at
    dest itself and returns updated_dest = dest +
    offset."""
    p = _ub(dest, "vsts")
    data = value.data
    isz = data.dtype.itemsize
    off = 0 if offset is None else int(offset)
    at = p.addr + (0 if post_update else off * p.dtype.itemsize)
    dist = str(dist) or f"NORM_B{8 * isz}"
    _width_rule(dist, isz, "vsts")
    if dist.startswith("NORM"):
        out = buffer_bytes(m, "ub", at, data.nbytes, "the stored", role="out").view(data.dtype)
        if mask is None:
            out[:] = data
        else:
            on = active(mask, data.size)
            out[on] = data[on]
    elif dist.startswith("1PT_"):
        buffer_bytes(m, "ub", at, isz, "the stored", role="out").view(data.dtype)[0] = data[0]
    elif dist in _PACK:
        # lanes of the dist's width (the predicate read at that width), each one's low
        # half (PK_*) or low byte (PK4_B32) stored contiguously at its lane's position
        w, keep = _PACK[dist]
        lanes = data.view(np.dtype(f"u{w}"))
        low = lanes.astype(np.dtype(f"u{keep}"))
        out = buffer_bytes(m, "ub", at, low.nbytes, "the stored", role="out").view(low.dtype)
        if mask is None:
            out[:] = low
        else:
            on = mask.bits[::w]
            out[on] = low[on]
    else:
        raise _not_run("vsts", dist)
    return p.plus(off)

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

from ... import dtypes as D
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


def _vlds_rows_access(vals: list[Any], params: dict[str, Any]
                      ) -> list[tuple[str, np.ndarray, int]] | None:
    """The UB bytes VLDS reads at one offset per row (dist NORM only)."""
    source, offset = vals
    if str(params.get("dist", "NORM")) != "NORM" or params.get("post_update") \
            or not isinstance(source, Ptr) or source.space != "ub" \
            or not isinstance(offset, np.ndarray):
        return None
    return [("in", source.addr + offset * source.dtype.itemsize, VREG_BYTES)]


def _vlds_rows_window(rows: np.ndarray, chunks: int, rel: np.ndarray, vals: list[Any],
                      params: dict[str, Any], span: Any) -> tuple[Any, bool]:
    """VLDS (dist NORM) over every chunk's window (Instr.rows_window)."""
    source = vals[0]
    data, view = vlds_window(rows, rel, source.dtype, span)
    return (VReg(data.reshape(chunks * rel.size, -1)), source), view


@instr("VLDS", pipe=Pipe.V, dialect="vpto",
       operands=(Opnd("source", "ptr"), Opnd("offset", "scalar", optional=True)),
       params=(Param("dist", "NORM"), Param("post_update", False)),
       results=(Opnd("result", "vreg"), Opnd("updated_base", "ptr", optional=True)),
       dtype_key=("source",), static=(_ptr_elems,), rows=True, rows_access=_vlds_rows_access,
       rows_window=_vlds_rows_window)
def VLDS(m: Any, source: Ptr, offset: Any = None, *, dist: str = "NORM",
         post_update: bool = False) -> tuple[VReg, Ptr]:
    """result = the register loaded from UB at source + offset elements by the distribution
    (``NORM``: 256 contiguous bytes; ``BRC_B*``: one element to every lane; ``US_B*``: 128
    bytes, each element twice; ``DS_B*``: 512 bytes, every second element). The post-update
    form loads at source itself and returns updated_base = source + offset."""
    p = _ub(source, "vlds")
    dt = p.dtype
    if isinstance(offset, np.ndarray):  # one offset per row (a batched loop; NORM only)
        if _vlds_rows_access([source, offset], {"dist": dist, "post_update": post_update}) \
                is None:
            raise _not_run("vlds", f"{dist} over rows")
        return vlds_rows(m, p, p.addr + offset * dt.itemsize), p
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


def _spec_of(data: np.ndarray) -> VRegSpec:
    """The register type of lanes ``data`` (the last axis; rows before it)."""
    return VRegSpec(data.shape[-1], D.dtype(data.dtype))


def _rows_from(at: np.ndarray) -> tuple[int, int, np.ndarray | None, bool]:
    """(lowest byte, end, each row's offset from the lowest or None when packed, whether the
    rows lie end to end from the lowest in order) of registers at byte addresses ``at``."""
    first, last = int(at[0]), int(at[-1])
    if last - first == (at.size - 1) * VREG_BYTES and \
            (at.size == 1 or bool((np.diff(at) == VREG_BYTES).all())):
        return first, last + VREG_BYTES, None, True
    lo = int(at.min())
    return lo, int(at.max()) + VREG_BYTES, at - lo, False


def vlds_rows(m: Any, source: Ptr, at: np.ndarray) -> VReg:
    """``pto.vlds`` with dist NORM at each byte address of ``at`` (source's UB, one address
    per iteration of a batched loop: ``interp/vbatch.py``), as one register of rows: row k
    holds the 256 bytes from at[k], as VLDS reads them."""
    dt = source.dtype
    lo, hi, rel, _packed = _rows_from(at)
    hull = buffer_bytes(m, "ub", lo, hi - lo, "the loaded", role=None)
    if rel is None:  # (packed)
        return VReg(hull.view(dt.np).reshape(at.size, -1).copy())
    return VReg(hull[rel[:, None] + np.arange(VREG_BYTES)].view(dt.np))


def vsts_rows(m: Any, value: VReg, dest: Ptr, at: np.ndarray, mask: Mask | None) -> None:
    """``pto.vsts`` with dist NORM_B* at each byte address of ``at`` (dest's UB, one per
    iteration of a batched loop), row k of ``value`` (or value itself, the same for every
    row) and of ``mask`` (or mask itself) at at[k]: the active lanes written, the others'
    bytes left as they are, as VSTS does. The caller has made sure no two rows share a
    byte."""
    n = at.size
    lanes = value.data.shape[-1]
    data = np.broadcast_to(value.data, (n, lanes))
    lo, hi, rel, _packed = _rows_from(at)
    hull = buffer_bytes(m, "ub", lo, hi - lo, "the stored", role=None)
    full = mask is not None and mask.full is True and lanes * mask.step == VREG_BYTES
    on = None if mask is None or full else np.broadcast_to(active(mask, lanes), (n, lanes))
    if rel is None:  # (packed)
        out = hull.view(data.dtype).reshape(n, lanes)
        if on is None:
            out[...] = data
        else:
            np.copyto(out, data, where=on)
        return
    idx = rel[:, None] + np.arange(VREG_BYTES)
    raw = np.ascontiguousarray(data).view(np.uint8)
    if on is None:
        hull[idx] = raw
    else:
        on_bytes = np.repeat(on, data.dtype.itemsize, axis=1)
        hull[idx[on_bytes]] = raw[on_bytes]


#: (lowest byte, end, each row's offset from the lowest or None when they lie end to end,
#: whether they do) of registers at byte offsets ``at``
rows_span = _rows_from


def vlds_window(rows: np.ndarray, rel: np.ndarray, dt: D.DType,
                span: tuple[int, int, np.ndarray | None, bool] | None = None
                ) -> tuple[np.ndarray, bool]:
    """``pto.vlds`` with dist NORM at byte offsets ``rel`` (one per iteration of a vecscope
    loop) of every row of ``rows`` (chunks, bytes: each chunk's own UB bytes, a chunk loop
    run as one batch: ``interp/vchunk.py``): (the lanes as (chunks, len(rel), lanes), whether
    they are a view of ``rows``). Row k of chunk c holds the 256 bytes from rel[k], as VLDS
    reads them. (``span``: :data:`rows_span` of ``rel``, when the caller has it.)"""
    lanes = VREG_BYTES // dt.itemsize
    lo, hi, idx, _packed = span if span is not None else _rows_from(rel)
    if idx is None:  # (end to end: the bytes as they are)
        return rows[:, lo:hi].view(dt.np).reshape(rows.shape[0], rel.size, lanes), True
    got = np.ascontiguousarray(rows[:, lo + idx[:, None] + np.arange(VREG_BYTES)])
    return got.view(dt.np).reshape(rows.shape[0], rel.size, lanes), False


def vsts_window(rows: np.ndarray, rel: np.ndarray, data: np.ndarray, mask: Mask | None,
                span: tuple[int, int, np.ndarray | None, bool] | None = None) -> None:
    """``pto.vsts`` with dist NORM_B* at byte offsets ``rel`` (one per iteration) of every
    row of ``rows`` (chunks, bytes, as :func:`vlds_window`): lanes ``data`` (chunks,
    len(rel), lanes), under ``mask`` (rows of one iteration each, or of every chunk's
    iterations): the active lanes written, the others' bytes left as they are, as VSTS does.
    The caller has made sure no two rows share a byte. (``span`` as for vlds_window.)"""
    chunks, n, lanes = data.shape
    full = mask is None or mask.full is True and lanes * mask.step == VREG_BYTES
    on = None
    if not full:
        on = active(mask, lanes)  # type: ignore[arg-type]
        on = on.reshape(chunks, n, lanes) if on.ndim == 2 and on.shape[0] == chunks * n \
            else np.broadcast_to(on, (chunks, n, lanes))
    lo, hi, idx, _packed = span if span is not None else _rows_from(rel)
    if idx is None:
        out = rows[:, lo:hi].view(data.dtype).reshape(chunks, n, lanes)
        if on is None:
            out[...] = data
        else:
            np.copyto(out, data, where=on)
        return
    at = lo + idx[:, None] + np.arange(VREG_BYTES)
    raw = np.ascontiguousarray(data).view(np.uint8).reshape(chunks, n, VREG_BYTES)
    if on is None:
        rows[:, at] = raw
    else:
        on_bytes = np.repeat(on, data.dtype.itemsize, axis=-1)
        cur = rows[:, at]
        np.copyto(cur, raw, where=on_bytes)
        rows[:, at] = cur


def _vsts_rows_access(vals: list[Any], params: dict[str, Any]
                      ) -> list[tuple[str, np.ndarray, int]] | None:
    """The UB bytes VSTS may write at one offset per row (dist NORM_B* only): every lane's,
    the mask's inactive ones too."""
    value, dest, offset, _mask = vals
    spec = value if isinstance(value, VRegSpec) else None
    if spec is None or not isinstance(dest, Ptr) or dest.space != "ub" \
            or not isinstance(offset, np.ndarray) or params.get("post_update") \
            or spec.lanes * spec.dtype.itemsize != VREG_BYTES \
            or str(params.get("dist", "")) not in ("", f"NORM_B{8 * spec.dtype.itemsize}"):
        return None
    return [("out", dest.addr + offset * dest.dtype.itemsize, VREG_BYTES)]


def _vsts_rows_window(rows: np.ndarray | None, chunks: int, rel: np.ndarray,
                      vals: list[Any], params: dict[str, Any], span: Any
                      ) -> tuple[Any, np.ndarray | None]:
    """VSTS (dist NORM_B*) over every chunk's window (Instr.rows_window)."""
    value, dest, _offset, mask = vals
    lanes = value.data.shape[-1]
    data = value.data.reshape(chunks, rel.size, lanes) if value.data.ndim == 2 else \
        np.broadcast_to(value.data, (chunks, rel.size, lanes))  # (one register for all)
    if rows is None:  # (end to end, every lane: the bytes are the register's)
        return dest, np.ascontiguousarray(data).view(np.uint8).reshape(chunks, -1)
    vsts_window(rows, rel, data, mask, span)
    return dest, None


@instr("VSTS", pipe=Pipe.V, dialect="vpto",
       operands=(Opnd("value", "vreg"), Opnd("dest", "ptr"),
                 Opnd("offset", "scalar", optional=True), Opnd("mask", "mask", optional=True)),
       params=(Param("dist", ""), Param("post_update", False)),
       results=(Opnd("updated_dest", "ptr", optional=True),), dtype_key=("value",),
       rows=True, rows_access=_vsts_rows_access, rows_window=_vsts_rows_window)
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
    if isinstance(offset, np.ndarray):  # one offset per row (a batched loop; NORM_B* only)
        spec = _spec_of(data)
        if _vsts_rows_access([spec, dest, offset, mask],
                             {"dist": dist, "post_update": post_update}) is None:
            raise _not_run("vsts", f"{dist or 'NORM'} over rows")
        vsts_rows(m, value, p, p.addr + offset * p.dtype.itemsize, mask)
        return p
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

"""DSA / SFU ops (micro-isa/13-dsa-sfu-ops.md): the fused register ops ``pto.vprelu``,
``pto.vexpdif``, ``pto.vaxpy``, ``pto.vmula``, the widening ``pto.vmull``, the index
generator ``pto.vci`` and the UB-to-UB ``pto.vbitsort``.

Register ops follow the native predication (inactive lanes 0). Fused float ops round once:
the product and sum are formed exactly in f64 (a product of two f32 / f16 values is exact
there) and rounded to the lane type. ``pto.vmrgsort4`` / ``pto.get_vms4_sr`` (a control word
ptoisa does not decode yet) and ``pto.vmulscvt`` stay refused by name."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...enums import Pipe
from ...errors import ExecutionError
from ...vector.regs import Mask, Ptr, VReg, VRegSpec, buffer_bytes
from ..irregular.sort import merge_records
from ..registry import Opnd, Param, Sig, instr
from .common import active, elementwise, mask_fits, same_vreg, scalar_as, zeroing
from .conversion import _to


def _fused(dt: Any, fn: Any, *args: np.ndarray) -> np.ndarray:
    """``fn`` over the lanes in f64 (float lanes) and rounded once to ``dt``; integer lanes
    wrap (``elementwise``)."""
    if not dt.is_float:
        return elementwise(fn, dt, *args)
    with np.errstate(all="ignore"):
        return np.asarray(fn(*(a.astype(np.float64) for a in args))).astype(dt.np)


@instr("VPRELU", pipe=Pipe.V, dialect="vpto",
       operands=(Opnd("input", "vreg"), Opnd("alpha", "vreg"), Opnd("mask", "mask")),
       results=(Opnd("result", "vreg"),), dtype_key=("input",),
       static=(same_vreg("input", "alpha", "result"), mask_fits("input")))
def VPRELU(m: Any, input: VReg, alpha: VReg, mask: Mask) -> VReg:  # noqa: A002
    """result[i] = input[i] >= 0 ? input[i] : alpha[i] * input[i] on active lanes, 0
    elsewhere."""
    return zeroing(elementwise(lambda x, a: np.where(x >= 0, x, a * x), input.dtype,
                               input.data, alpha.data), mask)


def _expdif_static(sig: Sig) -> None:
    src, r = sig["input"], sig["result"]
    if isinstance(r, VRegSpec) and r.dtype.name != "f32":
        raise sig.fail(f"the result is {r}: pto.vexpdif makes !pto.vreg<64xf32>")
    part = sig.params.get("part")
    if isinstance(src, VRegSpec) and src.lanes == 128 and part not in ("EVEN", "ODD"):
        raise sig.fail(f"a 16-bit source takes part \"EVEN\" or \"ODD\", got {part!r}")


@instr("VEXPDIF", pipe=Pipe.V, dialect="vpto",
       operands=(Opnd("input", "vreg"), Opnd("max", "vreg"), Opnd("mask", "mask")),
       params=(Param("part", None),), results=(Opnd("result", "vreg"),),
       dtype_key=("input",), static=(same_vreg("input", "max"), mask_fits("input"),
                                     _expdif_static))
def VEXPDIF(m: Any, input: VReg, max: VReg, mask: Mask, *,  # noqa: A002
            part: str | None = None) -> VReg:
    """result[i] = exp(input[j] - max[j]) in f32 on active lanes, 0 elsewhere: j = i for f32
    sources; for f16 sources (128 lanes to 64) j = 2i (``EVEN``) or 2i + 1 (``ODD``), the
    mask read at lane j. The difference is an f32 subtraction, the exponential rounded once
    to f32."""
    n = input.data.size
    on = active(mask, n)
    if n == 64:
        idx = np.arange(64)
    elif part in ("EVEN", "ODD"):
        idx = 2 * np.arange(64) + (part == "ODD")
    else:
        raise ExecutionError(f"pto.vexpdif of {input.spec} needs part EVEN or ODD, got "
                             f"{part!r}")
    with np.errstate(all="ignore"):
        d = input.data[idx].astype(np.float32) - max.data[idx].astype(np.float32)
        out = np.exp(d.astype(np.float64)).astype(np.float32)
    return VReg(np.where(on[idx], out, np.float32(0)))


@instr("VAXPY", pipe=Pipe.V, dialect="vpto",
       operands=(Opnd("src0", "vreg"), Opnd("src1", "vreg"), Opnd("alpha", "scalar"),
                 Opnd("mask", "mask")),
       results=(Opnd("result", "vreg"),), dtype_key=("src0",),
       static=(same_vreg("src0", "src1", "result"), mask_fits("src0")))
def VAXPY(m: Any, src0: VReg, src1: VReg, alpha: Any, mask: Mask) -> VReg:
    """result[i] = alpha * src0[i] + src1[i] on active lanes (fused: one rounding), 0
    elsewhere."""
    dt = src0.dtype
    a = np.full(src0.data.size, scalar_as(alpha, dt, "alpha"), dt.np)
    return zeroing(_fused(dt, lambda s, x, y: s * x + y, a, src0.data, src1.data), mask)


@instr("VMULA", pipe=Pipe.V, dialect="vpto",
       operands=(Opnd("acc", "vreg"), Opnd("lhs", "vreg"), Opnd("rhs", "vreg"),
                 Opnd("mask", "mask")),
       results=(Opnd("result", "vreg"),), dtype_key=("acc",),
       static=(same_vreg("acc", "lhs", "rhs", "result"), mask_fits("acc")))
def VMULA(m: Any, acc: VReg, lhs: VReg, rhs: VReg, mask: Mask) -> VReg:
    """result[i] = acc[i] + lhs[i] * rhs[i] on active lanes (fused: one rounding; integers
    wrap), 0 elsewhere."""
    return zeroing(_fused(acc.dtype, lambda c, x, y: c + x * y, acc.data, lhs.data, rhs.data),
                   mask)


@instr("VMADD", pipe=Pipe.V, dialect="vpto",
       operands=(Opnd("acc", "vreg"), Opnd("lhs", "vreg"), Opnd("rhs", "vreg"),
                 Opnd("mask", "mask")),
       results=(Opnd("result", "vreg"),), dtype_key=("acc",),
       static=(same_vreg("acc", "lhs", "rhs", "result"), mask_fits("acc")))
def VMADD(m: Any, acc: VReg, lhs: VReg, rhs: VReg, mask: Mask) -> VReg:
    """result[i] = lhs[i] * acc[i] + rhs[i] on active lanes (07-binary-vector-ops.md: acc is
    the destination-as-source multiplicand; fused: one rounding), 0 elsewhere."""
    return zeroing(_fused(acc.dtype, lambda c, x, y: x * c + y, acc.data, lhs.data, rhs.data),
                   mask)


@instr("VMULL", pipe=Pipe.V, dialect="vpto",
       operands=(Opnd("lhs", "vreg"), Opnd("rhs", "vreg"), Opnd("mask", "mask")),
       results=(Opnd("low", "vreg"), Opnd("high", "vreg")), dtype_key=("lhs",),
       static=(same_vreg("lhs", "rhs", "low", "high"), mask_fits("lhs")))
def VMULL(m: Any, lhs: VReg, rhs: VReg, mask: Mask) -> tuple[VReg, VReg]:
    """The exact 64-bit product of 32-bit lanes (signed for i32, unsigned for ui32): low =
    its bits 0..31, high = bits 32..63, on active lanes; 0 elsewhere."""
    dt = lhs.dtype
    wide = np.int64 if dt.is_signed else np.uint64
    with np.errstate(all="ignore"):
        p = lhs.data.astype(wide) * rhs.data.astype(wide)
    u = p.view(np.uint64)
    lo = (u & np.uint64(0xFFFFFFFF)).astype(np.uint32).view(dt.np)
    hi = (u >> np.uint64(32)).astype(np.uint32).view(dt.np)
    return zeroing(lo, mask), zeroing(hi, mask)


def _vci_static(sig: Sig) -> None:
    t = sig.params.get("result_type")
    if t is not None and not isinstance(t, VRegSpec):
        raise sig.fail(f"the result must be a !pto.vreg, got {t}")
    order = sig.params.get("order")
    if order not in (None, "ASC", "DESC"):
        raise sig.fail(f"order = {order!r}: it is \"ASC\" or \"DESC\"")


@instr("VCI", pipe=Pipe.V, dialect="vpto", operands=(Opnd("index", "scalar"),),
       params=(Param("result_type", None), Param("order", "ASC")),
       results=(Opnd("result", "vreg"),), dtype_key=("result",), static=(_vci_static,))
def VCI(m: Any, index: Any, *, result_type: Any = None, order: str = "ASC") -> VReg:
    """result[i] = index + i (``ASC``) or index - i (``DESC``) in the result's element type
    (integers wrap; float lanes are the value rounded to the type)."""
    to = _to(result_type)
    dt, n = to.dtype, to.lanes
    step = -1 if str(order) == "DESC" else 1
    if dt.is_float:
        vals = (float(index) + step * np.arange(n, dtype=np.float64)).astype(dt.np)
    else:
        bits = 8 * dt.itemsize
        base = int(scalar_as(index, dt, "index"))
        raw = [(base + step * i) & ((1 << bits) - 1) for i in range(n)]
        vals = np.array(raw, np.dtype(f"u{dt.itemsize}")).view(dt.np)
    return VReg(vals)


def _ub_ptr(p: Any, what: str) -> Ptr:
    if not isinstance(p, Ptr) or p.space != "ub":
        raise ExecutionError(f"{what} must be a UB pointer (!pto.ptr<T, ub>), got {p!r}")
    return p


@instr("VBITSORT", pipe=Pipe.V, dialect="vpto",
       operands=(Opnd("dest", "ptr"), Opnd("src", "ptr"), Opnd("indices", "ptr"),
                 Opnd("repeat_times", "scalar")),
       dtype_key=("src",))
def VBITSORT(m: Any, dest: Ptr, src: Ptr, indices: Ptr, repeat_times: Any) -> None:
    """For each repeat r: the 32 scores at src + 32r (f32 or f16) with their 32-bit indices
    at indices + 32r, sorted by score descending (equal scores keep their input order; NaN
    scores last), written to dest + 256r as 8-byte records: the score in the low 4 bytes
    (an f16 score in the low 2, the reserved 2 left as they are), the index in the high 4."""
    d, s, ix = _ub_ptr(dest, "dest"), _ub_ptr(src, "src"), _ub_ptr(indices, "indices")
    sdt = s.dtype
    if sdt.name not in ("f32", "f16"):
        raise ExecutionError(f"pto.vbitsort sorts f32 or f16 scores, got {sdt.name}")
    for r in range(int(repeat_times)):
        sc = buffer_bytes(m, "ub", s.addr + 32 * r * sdt.itemsize, 32 * sdt.itemsize,
                          "the scores", role="in").view(sdt.np).copy()
        idx = buffer_bytes(m, "ub", ix.addr + 128 * r, 128, "the indices",
                           role="in").view(np.uint32).copy()
        order = np.argsort(-sc.astype(np.float64), kind="stable")
        out = buffer_bytes(m, "ub", d.addr + 256 * r, 256, "the sorted records", role="out")
        rec = out.reshape(32, 8)
        rec[:, 0:sdt.itemsize] = sc[order].view(np.uint8).reshape(32, sdt.itemsize)
        rec[:, 4:8] = idx[order].view(np.uint8).reshape(32, 4)


@instr("VMRGSORT4", pipe=Pipe.V, dialect="vpto",
       operands=(Opnd("dest", "ptr"), Opnd("src0", "ptr"), Opnd("src1", "ptr"),
                 Opnd("src2", "ptr"), Opnd("src3", "ptr"), Opnd("count", "scalar"),
                 Opnd("config", "scalar")),
       dtype_key=("dest",))
def VMRGSORT4(m: Any, dest: Ptr, src0: Ptr, src1: Ptr, src2: Ptr, src3: Ptr, count: Any,
              config: Any) -> None:
    """Merge up to four lists of 8-byte records (a f32 / f16 score in the low bytes, the
    index in the high 4), each sorted by score descending, into dest, descending (ties to the
    lower list). The words as designs/a2a3-vector-builtins.md packs ``vmrgsort4``:
    count = the records of list i in bits [16i, 16i + 16); config = repeat (bits 0-7, 1 is
    executed), the lists taken (bit 8 + i), and bit 12 the exhausted mode, where the merge
    stops as soon as one list runs out. VMS4_SR keeps the records taken from each list
    (``pto.get_vms4_sr``)."""
    d = _ub_ptr(dest, "dest")
    srcs = [_ub_ptr(p, f"src{i}") for i, p in enumerate((src0, src1, src2, src3))]
    dt = d.dtype
    if dt.name not in ("f32", "f16"):
        raise ExecutionError(f"pto.vmrgsort4 merges f32 or f16 records, got {dt.name}")
    cnt, cfg = int(count), int(config)
    repeat, valid, exhausted = cfg & 0xFF, (cfg >> 8) & 0xF, bool((cfg >> 12) & 1)
    if repeat != 1:
        raise ExecutionError(f"operation 'pto.vmrgsort4' cannot be executed by ptoisa yet with "
                             f"repeat {repeat} (the page does not say where repeats read)")
    lists = []
    for i, p in enumerate(srcs):
        n = (cnt >> (16 * i)) & 0xFFFF if valid >> i & 1 else 0
        raw = buffer_bytes(m, "ub", p.addr, 8 * n, f"list {i}", role="in").reshape(n, 8).copy()
        lists.append((raw[:, :dt.itemsize].copy().view(dt.np).reshape(-1),
                      raw.view(np.uint64).reshape(-1)))
    # (TMRGSORT's merge: descending, ties to the lower list, whole records)
    merged, heads = merge_records(lists, exhausted)
    if merged.size:
        buffer_bytes(m, "ub", d.addr, 8 * merged.size, "the merged records", role="out")[:] = \
            merged.view(np.uint8)
    m.micro_regs["VMS4_SR"] = tuple(heads)


@instr("GET_VMS4_SR", pipe=Pipe.S, dialect="vpto", operands=(),
       results=(Opnd("list0", "scalar"), Opnd("list1", "scalar"), Opnd("list2", "scalar"),
                Opnd("list3", "scalar")))
def GET_VMS4_SR(m: Any) -> tuple[int, int, int, int]:
    """The records the last pto.vmrgsort4 took from lists 0-3 (VMS4_SR's four 16-bit
    fields)."""
    sr = m.micro_regs.get("VMS4_SR")
    if sr is None:
        raise ExecutionError("pto.get_vms4_sr: no pto.vmrgsort4 ran on this core")
    return tuple(int(x) - (1 << 16) if x >= 1 << 15 else int(x) for x in sr)  # type: ignore


__all__ = ["GET_VMS4_SR", "VAXPY", "VBITSORT", "VCI", "VEXPDIF", "VMADD", "VMRGSORT4", "VMULA",
           "VMULL",
           "VPRELU"]


"""VMI layout helpers (designs/vmi-introduction.md 3.2, vmi-implementation-manual.md):
``ensure_layout``, ``ensure_mask_layout`` and ``ensure_mask_granularity`` move a value's lanes
between physical registers so that a consumer finds them where its lowering wants them. At the
logical level ptoisa runs, a value is its lanes: each is the identity on them. Their rule is
that only the layout (or the granularity) changes: the lane count and element type stay.

``pack`` / ``unpack`` are where the layout shows: they turn a layout-assigned value into its
physical registers (VPTO's ``!pto.vreg`` / ``!pto.mask``) and back, by the lane maps of
``ptoisa.vector.logical.lane_map`` (the layouts of designs/vmi-introduction.md 2)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...enums import Pipe
from ...errors import PtoError
from ...vector.logical import (
    LMask,
    LVec,
    VmiMaskSpec,
    VmiSpec,
    lane_map,
    parse_layout,
    vmi_spec,
)
from ...vector.regs import GRANULARITY, VREG_BYTES, Mask, MaskSpec, VReg, VRegSpec
from ..registry import Opnd, Param, Sig, instr
from ..spelling import Ptoas
from . import lowering


def _same_value(sig: Sig) -> None:
    s, r = sig["source"], sig["result"]
    if isinstance(s, VmiSpec) and isinstance(r, VmiSpec) and (s.lanes, s.dtype) != (
            r.lanes, r.dtype):
        raise sig.fail(f"changes the value's type ({s} -> {r}): only its layout may change")
    if isinstance(s, VmiMaskSpec) and isinstance(r, VmiMaskSpec) and s.lanes != r.lanes:
        raise sig.fail(f"changes the mask's lane count ({s} -> {r})")


def _assigned(sig: Sig) -> None:
    """ensure_layout moves lanes between two placements: both must be stated."""
    s, r = sig["source"], sig["result"]
    if isinstance(s, VmiSpec) and isinstance(r, VmiSpec) and (s.layout is None or
                                                              r.layout is None):
        raise sig.fail(f"requires source and result to be layout-assigned ({s} -> {r})")


def _granularities(sig: Sig) -> None:
    """ensure_mask_granularity rereads a mask at another granularity: both are concrete (b8,
    b16, b32), and the layout is stated on both sides or on neither."""
    s, r = sig["source"], sig["result"]
    if not (isinstance(s, VmiMaskSpec) and isinstance(r, VmiMaskSpec)):
        return
    if s.gran not in GRANULARITY or r.gran not in GRANULARITY:
        raise sig.fail(f"requires concrete source and result mask granularities ({s} -> {r})")
    if (s.layout is None) != (r.layout is None):
        raise sig.fail("requires either both source and result to carry layout or neither to "
                       f"carry layout ({s} -> {r})")


def _helper(name: str, kind: str, doc: str, passes: Any = None,
            static: tuple[Any, ...] = ()) -> Any:
    def impl(m: Any, source: Any) -> Any:
        return source

    impl.__doc__ = doc
    impl.__module__ = __name__
    return instr(f"VMI_{name.upper()}", pipe=Pipe.V, dialect="vmi",
                 operands=(Opnd("source", kind),), results=(Opnd("result", kind),),
                 static=(_same_value, *static), ptoas=Ptoas(passes=passes or {}))(impl)


ENSURE_LAYOUT = _helper("ensure_layout", "lvec", "result = source: the same lanes, placed in "
                        "the result type's layout.", lowering.ENSURE_LAYOUT, (_assigned,))
ENSURE_MASK_LAYOUT = _helper("ensure_mask_layout", "lmask", "result = source: the same mask "
                             "lanes, placed in the result type's layout.",
                             lowering.ENSURE_MASK_LAYOUT)
ENSURE_MASK_GRANULARITY = _helper("ensure_mask_granularity", "lmask", "result = source: the "
                                  "same mask lanes, read at the result type's granularity.",
                                  static=(_granularities,))




# ---- pack / unpack: a logical value and its physical registers ----------------------------

def _elem_bytes(spec: Any) -> int:
    if isinstance(spec, VmiSpec):
        return spec.dtype.itemsize
    return GRANULARITY.get(spec.gran, 0)


def _physical(spec: Any, what: str) -> list[np.ndarray]:
    """The lane map of a layout-assigned VMI type (PtoError naming ``what`` otherwise)."""
    if isinstance(spec, str):
        spec = vmi_spec(spec)
    if not isinstance(spec, (VmiSpec, VmiMaskSpec)) or spec.layout is None:
        raise PtoError(f"{what} requires a layout-assigned VMI type, got {spec}")
    if isinstance(spec, VmiMaskSpec) and spec.gran not in GRANULARITY:
        raise PtoError(f"{what} requires a mask of granularity b8, b16 or b32, got {spec}")
    return lane_map(spec.lanes, _elem_bytes(spec), parse_layout(spec.layout))


def _parts_fit(sig: Sig, vmi: Any, parts: Any, what: str) -> None:
    if vmi is None or parts is None:
        return
    maps = _physical(vmi, what)
    if len(parts) != len(maps):
        raise sig.fail(f"requires {len(maps)} physical parts, got {len(parts)}")
    for t in parts:
        if isinstance(vmi, VmiSpec) and isinstance(t, VRegSpec) and t.dtype != vmi.dtype:
            raise sig.fail(f"a physical part is {t}, the value's elements {vmi.dtype.name}")
        if isinstance(vmi, VmiMaskSpec) and isinstance(t, MaskSpec) and \
                t.gran != _physical_gran(vmi):
            raise sig.fail(f"a physical part is {t}, the mask {vmi} is held as "
                           f"!pto.mask<{_physical_gran(vmi)}>")


def _physical_gran(spec: VmiMaskSpec) -> str:
    """The granularity a mask's registers are read at: its own times its lane stride (a b16
    mask of lane stride 2 is a b32 register: a logical lane per 4 bytes, the same bits)."""
    stride = parse_layout(spec.layout).stride if spec.layout else 1
    return {1: "b8", 2: "b16", 4: "b32"}.get(GRANULARITY.get(spec.gran, 0) * stride,
                                             spec.gran)


@instr("VMI_UNPACK", pipe=Pipe.V, dialect="vmi", operands=(Opnd("source", "any"),),
       params=(Param("source_type", None), Param("result_types", None)),
       results=(Opnd("parts", "any"),),
       static=(lambda sig: _parts_fit(sig, sig.params.get("source_type"),
                                      sig.params.get("result_types"), "pto.vmi.unpack"),))
def VMI_UNPACK(m: Any, source: Any, *, source_type: Any = None,
               result_types: Any = None) -> tuple[Any, ...]:
    """The physical registers of a layout-assigned value (``source_type`` states its layout),
    in PTOAS's canonical order (``ptoisa.vector.logical.lane_map``). Data lanes outside the
    value (padding, unused group slots: undefined on the NPU) hold the poison pattern of
    unwritten bytes (0xFF); mask lanes outside it are inactive."""
    maps = _physical(source_type, "pto.vmi.unpack")
    out: list[Any] = []
    for lanes in maps:
        on = lanes >= 0
        if isinstance(source, LMask):
            active = np.zeros(lanes.size, np.bool_)
            active[on] = source.bits[lanes[on]]
            spec = vmi_spec(source_type) if isinstance(source_type, str) else source_type
            bits = Mask.of_lanes(active, spec.gran).bits  # (the bits of its own granularity)
            out.append(Mask(bits, _physical_gran(spec)))
            continue
        reg = np.full(VREG_BYTES, 0xFF, np.uint8).view(source.data.dtype).copy()
        reg[on] = source.data[lanes[on]]
        out.append(VReg(reg))
    return tuple(out)


@instr("VMI_PACK", pipe=Pipe.V, dialect="vmi", operands=(Opnd("parts", "group"),),
       params=(Param("result_type", None),), results=(Opnd("result", "any"),),
       static=(lambda sig: _parts_fit(sig, sig.params.get("result_type"), sig["parts"],
                                      "pto.vmi.pack"),))
def VMI_PACK(m: Any, parts: tuple[Any, ...], *, result_type: Any = None) -> Any:
    """The layout-assigned value ``result_type`` whose physical registers are ``parts`` (the
    inverse of unpack: each logical lane read where the lane map puts it)."""
    spec = vmi_spec(result_type) if isinstance(result_type, str) else result_type
    maps = _physical(spec, "pto.vmi.pack")
    if len(parts) != len(maps):
        raise PtoError(f"requires {len(maps)} physical parts, got {len(parts)}")
    if isinstance(spec, VmiMaskSpec):
        bits = np.zeros(spec.lanes, np.bool_)
        for lanes, p in zip(maps, parts, strict=True):
            on = lanes >= 0
            bits[lanes[on]] = p.lanes(lanes.size)[on]
        return LMask(bits)
    data = np.zeros(spec.lanes, spec.dtype.np)
    for lanes, p in zip(maps, parts, strict=True):
        on = lanes >= 0
        data[lanes[on]] = p.data.view(spec.dtype.np)[on]
    return LVec(data)

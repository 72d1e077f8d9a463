"""The values of VMI (``pto.vmi.*``, spec/ptoas-main/isa/vmi-isa/): logical vectors and masks.

A VMI value is *logical* (vmi-isa/00 "Logical vs Physical"): ``L`` lanes of one element type,
whatever physical registers PTOAS's layout pass would split it onto. ptoisa runs VMI at that
level, so a value is its lanes and nothing else:

* :class:`LVec` - ``!pto.vmi.vreg<LxT>`` (a layout in the type, ``#pto.vmi.layout<...>``,
  says where the lanes would sit in physical registers: it changes no lane's value and is
  kept on the spec only for the verifier);
* :class:`LMask` - ``!pto.vmi.mask<Lxpred>`` (or ``<Lxb8|b16|b32>``, a granularity chosen by
  layout assignment): one bool per logical lane.

``VmiSpec`` / ``VmiMaskSpec`` are their types, what static rules and legality see.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

import numpy as np

from .. import dtypes as D
from ..errors import PtoError

#: the granularities a VMI mask may state: abstract ``pred`` or the concrete ones
MASK_GRANS = ("pred", "b8", "b16", "b32")


@dataclass(frozen=True, slots=True)
class VmiSpec:
    """``!pto.vmi.vreg<LxT[, layout]>``: ``lanes`` logical lanes of ``dtype``."""

    lanes: int
    dtype: D.DType
    layout: str | None = None  # the text of #pto.vmi.layout<...>, None: surface VMI
    #: a signless integer type (``i32``; ``si32`` is signed): comparisons read it unsigned
    signless: bool = False

    def __str__(self) -> str:
        lay = f", {self.layout}" if self.layout else ""
        name = self.dtype.name
        if not self.signless and self.dtype.is_int and self.dtype.is_signed:
            name = "s" + name
        return f"!pto.vmi.vreg<{self.lanes}x{name}{lay}>"


@dataclass(frozen=True, slots=True)
class VmiMaskSpec:
    """``!pto.vmi.mask<Lxgran[, layout]>``."""

    lanes: int
    gran: str = "pred"
    layout: str | None = None

    def __str__(self) -> str:
        lay = f", {self.layout}" if self.layout else ""
        return f"!pto.vmi.mask<{self.lanes}x{self.gran}{lay}>"


@functools.cache
def _vspec(lanes: int, dt: D.DType) -> VmiSpec:
    return VmiSpec(lanes, dt)


@functools.cache
def _mspec(lanes: int) -> VmiMaskSpec:
    return VmiMaskSpec(lanes)


class LVec:
    """A logical vector's value: ``data``, a 1-D numpy array of its lanes (never written after
    the op that made it returns)."""

    __slots__ = ("data",)

    def __init__(self, data: np.ndarray) -> None:
        self.data = data

    @property
    def dtype(self) -> D.DType:
        return D.dtype(self.data.dtype)

    @property
    def spec(self) -> VmiSpec:
        return _vspec(self.data.size, D.dtype(self.data.dtype))

    def numpy(self) -> np.ndarray:
        return self.data.copy()

    def __repr__(self) -> str:
        return f"LVec({self.spec}: {self.data!r})"


class LMask:
    """A logical mask's value: ``bits``, one bool per logical lane."""

    __slots__ = ("bits",)

    def __init__(self, bits: np.ndarray) -> None:
        self.bits = bits

    @property
    def spec(self) -> VmiMaskSpec:
        return _mspec(self.bits.size)

    def numpy(self) -> np.ndarray:
        return self.bits.copy()

    def __repr__(self) -> str:
        return f"LMask({int(self.bits.sum())} of {self.bits.size})"


@dataclass(frozen=True, slots=True)
class Layout:
    """A parsed ``#pto.vmi.layout<...>`` (designs/vmi-introduction.md 2): ``kind`` is
    ``contiguous``, ``deinterleaved``, ``block_deinterleaved`` or ``group_slots``; ``factor``
    F of the two deinterleaved kinds; ``groups`` / ``slots`` of group slots; ``stride`` the
    lane stride (1 by default)."""

    kind: str
    factor: int = 1
    groups: int = 0
    slots: int = 0
    stride: int = 1


_LAYOUT_RE = re.compile(r"#pto\.vmi\.layout<(.*)>", re.DOTALL)


@functools.cache
def parse_layout(text: str) -> Layout:
    """The layout a ``#pto.vmi.layout<...>`` text states; PtoError with PTOAS's words for one
    its attribute verifier rejects."""
    mt = _LAYOUT_RE.fullmatch(text.strip())
    if mt is None:
        raise PtoError(f"{text}: expected #pto.vmi.layout<...>")
    fields: dict[str, int] = {}
    kind = ""
    for part in (x.strip() for x in mt.group(1).split(",")):
        if part == "contiguous":
            kind = "contiguous"
            continue
        kv = re.fullmatch(r"(\w+)\s*=\s*(-?\d+)", part)
        if kv is None or kv.group(1) not in ("deinterleaved", "block_deinterleaved",
                                             "num_groups", "slots", "lane_stride"):
            raise PtoError(f"{text}: expected 'lane_stride = <integer>'")
        fields[kv.group(1)] = int(kv.group(2))
    stride = fields.pop("lane_stride", 1)
    if stride <= 0:
        raise PtoError(f"{text}: expected a positive lane_stride")
    for k in ("deinterleaved", "block_deinterleaved"):
        if k in fields:
            if fields[k] not in (2, 4):
                raise PtoError(f"{text} expected factor to be 2 or 4")
            return Layout(k, factor=fields[k], stride=stride)
    if "num_groups" in fields or "slots" in fields:
        g, k = fields.get("num_groups", 0), fields.get("slots", 0)
        if g <= 0 or k <= 0:
            raise PtoError(f"{text}: num_groups and slots are positive integers")
        return Layout("group_slots", groups=g, slots=k, stride=stride)
    if kind != "contiguous":
        raise PtoError(f"{text}: expected a layout kind (contiguous, deinterleaved = F, "
                       "block_deinterleaved = F, num_groups = G, slots = K)")
    return Layout("contiguous", stride=stride)


def lane_map(lanes: int, elem_bytes: int, layout: Layout) -> list[np.ndarray]:
    """Where the logical lanes of a value sit in its physical registers, in PTOAS's canonical
    order (vmi-implementation-manual.md "OneToN Conversion Details": contiguous chunks in
    logical order; deinterleaved parts part-major, each part's chunks in order; group slots
    in storage order): one array per register of its ``256 / elem_bytes`` lanes, each the
    logical lane held there or -1 (padding, or a slot no group result uses)."""
    per = 256 // elem_bytes  # physical lanes of one register
    out: list[np.ndarray] = []
    s = layout.stride
    if layout.kind == "group_slots":
        g, k = layout.groups, layout.slots
        for c in range(-(-g // k)):
            reg = np.full(per, -1, np.int64)
            for j in range(k):
                grp = c * k + j
                if grp < g and j * s < per:
                    reg[j * s] = grp
            out.append(reg)
        return out
    if layout.kind == "contiguous":
        step = per // s  # logical lanes per register
        for c in range(-(-lanes // step)):
            reg = np.full(per, -1, np.int64)
            idx = c * step + np.arange(step)
            keep = idx < lanes
            reg[(np.arange(step) * s)[keep]] = idx[keep]
            out.append(reg)
        return out
    f = layout.factor
    part_lanes = -(-lanes // f)  # the longest part
    if layout.kind == "deinterleaved":
        chunks = -(-part_lanes // per)
        for p in range(f):
            for c in range(chunks):
                idx = (c * per + np.arange(per)) * f + p
                out.append(np.where(idx < lanes, idx, -1))
        return out
    b = max(1, 32 // elem_bytes)  # lanes of one 32-byte block
    chunks = -(-(-(-lanes // (b * f)) * b) // per)
    for p in range(f):
        for c in range(chunks):
            phys = c * per + np.arange(per)
            t, r = phys // b, phys % b
            idx = (t * f + p) * b + r
            out.append(np.where(idx < lanes, idx, -1))
    return out


_VMI_RE = re.compile(r"!pto\.vmi\.(vreg|mask)<\s*(\d+)\s*x\s*([\w.!]+)\s*(?:,\s*(.*))?>",
                     re.DOTALL)


def _element(text: str, name: str) -> D.DType:
    name = name.removeprefix("!pto.")
    if re.fullmatch(r"si\d+", name):  # signed integers: i<W> of ptoisa
        name = name[1:]
    try:
        return D.dtype(name)
    except Exception:  # noqa: BLE001 - an element type without a numpy type
        raise PtoError(f"{text}: element type {name} is not supported") from None


def vmi_spec(text: str) -> VmiSpec | VmiMaskSpec | None:
    """The spec of a ``!pto.vmi.vreg`` / ``!pto.vmi.mask`` type's text, None for another type;
    PtoError for one PTOAS's type verifier rejects (no lanes, an element of 64 bits, a
    ``pred`` mask with a layout, an unknown granularity: its words) or ptoisa cannot hold (an
    element type without a numpy type)."""
    mt = _VMI_RE.fullmatch(text.strip())
    if mt is None:
        return None
    kind, lanes, elem, layout = mt.group(1), int(mt.group(2)), mt.group(3), mt.group(4)
    layout = layout.strip() if layout else None
    if layout is not None:
        parse_layout(layout)
    if lanes <= 0:
        raise PtoError(f"'{text}': expected a positive element count")
    if kind == "mask":
        if elem not in MASK_GRANS:
            raise PtoError(f"'{text}': the mask granularity is one of {', '.join(MASK_GRANS)}")
        if elem == "pred" and layout is not None:
            raise PtoError(f"'{text}': pred mask must not carry layout")
        return VmiMaskSpec(lanes, elem, layout)
    dt = _element(text, elem)
    if dt.itemsize not in (1, 2, 4):
        raise PtoError(f"'{text}' expected an 8-bit, 16-bit, or 32-bit logical element type")
    return VmiSpec(lanes, dt, layout,
                   signless=re.fullmatch(r"(!pto\.)?i\d+", elem) is not None)


__all__ = ["MASK_GRANS", "LMask", "LVec", "Layout", "VmiMaskSpec", "VmiSpec", "lane_map",
           "parse_layout", "vmi_spec"]

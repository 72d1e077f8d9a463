"""The state the vector micro-ISA (VPTO) works on: vector registers, predicate registers,
the align carrier and pointers into the machine's buffers (vpto-spec.md "Special Types").

* :class:`VReg` - a 256-byte vector register viewed as ``N`` lanes of one element type
  (``!pto.vreg<64xf32>``, ``<128xf16>``, ``<256xi8>``). A value: every op makes a new one.
* :class:`Mask` - a 256-bit predicate register, one bit per byte of a vector register
  (``!pto.mask<b8|b16|b32>``). The granularity is how many bytes form one logical lane
  (1, 2, 4: 256, 128, 64 lanes); the bits are kept per byte, so one register read under
  another granularity sees the same bits (a lane is active when the bit of its first byte
  is; ops making a ``b32`` mask set that bit only).
* :class:`Align` - the align carrier of unaligned loads and stores (``!pto.align``).
* :class:`Ptr` - an on-chip pointer (``!pto.ptr<T, ub>``): buffer, byte address, element
  type. It addresses the machine's byte buffers (``Machine.region``), the same bytes placed
  tiles live in, so a tile and a pointer to its address alias as on hardware. GM pointers
  stay what ``interp/scalar_ops.py`` makes them: numpy arrays of the pointer argument.

``VRegSpec`` / ``MaskSpec`` / ``PtrSpec`` are their types: what static rules and legality
tables see (the IR type of a value, or the ``spec`` of an eager value).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import dtypes as D
from ..errors import ExecutionError, PtoError

#: bytes of one vector register (and bits of one predicate register)
VREG_BYTES = 256
#: the mask granularities: name -> bytes per logical lane
GRANULARITY = {"b8": 1, "b16": 2, "b32": 4}
#: on-chip spaces a pointer names -> the machine's buffer
SPACES = {"ub": "UB", "l1": "L1", "cbuf": "L1", "l0a": "L0A", "l0b": "L0B", "l0c": "L0C",
          "bt": "BIAS", "fb": "FB",
          # the legacy names of 16-cube-matmul.md's address-space table
          "mat": "L1", "left": "L0A", "right": "L0B", "acc": "L0C", "bias": "BIAS",
          "scaling": "FB"}
#: the MX scale buffers, reached by the MX cube micro-ops through their L0A / L0B pointers
#: (``isa/micro/cube.py``), never a pointer space a program names
SCALE_SPACES = {"l0a_mx": "L0A_MX", "l0b_mx": "L0B_MX"}


@dataclass(frozen=True, slots=True)
class VRegSpec:
    """The type of a vector register: ``lanes`` x ``dtype`` (lanes x itemsize = 256 bytes,
    or fewer for the packed 4-bit types)."""

    lanes: int
    dtype: D.DType

    def __str__(self) -> str:
        return f"!pto.vreg<{self.lanes}x{self.dtype.name}>"


@dataclass(frozen=True, slots=True)
class MaskSpec:
    gran: str  # b8 / b16 / b32

    def __str__(self) -> str:
        return f"!pto.mask<{self.gran}>"


@dataclass(frozen=True, slots=True)
class PtrSpec:
    space: str  # gm, ub, ...
    dtype: D.DType

    def __str__(self) -> str:
        return f"!pto.ptr<{self.dtype.name}, {self.space}>"


@dataclass(frozen=True, slots=True)
class GroupSpec:
    """What static rules see of a clause a ``.pto`` micro-op writes (``pre_relu(mode = x,
    clip = %c)``): its items in the order written, a value as its type (a spec, None where no
    rule reads it) and a keyword as its string. An eager call's clause is its values, which
    the run-time checks see."""

    items: tuple[Any, ...]


@dataclass(frozen=True, slots=True)
class AlignSpec:
    def __str__(self) -> str:
        return "!pto.align"


@functools.cache
def _spec(cls: type, *args: Any) -> Any:
    """One spec object per type (the registry remembers checked uses by their types' ids)."""
    if cls is VRegSpec:
        return cls(args[0], D.dtype(args[1]))
    return cls(*args)


class VReg:
    """A vector register's value: ``data``, a 1-D numpy array of its lanes (never written
    after the op that made it returns)."""

    __slots__ = ("data",)

    def __init__(self, data: np.ndarray) -> None:
        self.data = data

    @property
    def dtype(self) -> D.DType:
        return D.dtype(self.data.dtype)

    @property
    def spec(self) -> VRegSpec:
        return _spec(VRegSpec, self.data.size, self.data.dtype)

    @classmethod
    def zeros(cls, spec: VRegSpec) -> VReg:
        return cls(np.zeros(spec.lanes, spec.dtype.np))

    def __repr__(self) -> str:
        return f"VReg({self.spec}: {self.data!r})"


class Mask:
    """A predicate register: ``bits``, 256 bools (one per byte of a vector register), read
    with ``gran`` bytes per lane."""

    __slots__ = ("bits", "gran", "full")

    def __init__(self, bits: np.ndarray, gran: str, full: bool | None = None) -> None:
        self.bits = bits
        self.gran = gran
        #: every lane of every row active, when the op that made it knows (None: not said;
        #: a batched loop's plt masks say it, sparing a pass over their rows' bits)
        self.full = full

    @property
    def spec(self) -> MaskSpec:
        return _spec(MaskSpec, self.gran)

    @property
    def step(self) -> int:
        return GRANULARITY[self.gran]

    def lanes(self, n: int | None = None) -> np.ndarray:
        """One bool per logical lane (``n`` lanes: a register of that many lanes)."""
        step = VREG_BYTES // n if n else self.step
        return self.bits[::step]

    @classmethod
    def of_lanes(cls, active: np.ndarray, gran: str) -> Mask:
        """The register whose lanes of granularity ``gran`` are ``active``: the bit of each
        lane's first byte (a b32 lane is bit 4i, its other three bits clear: the packed image
        ``pto.psts`` stores, as upstream's vaddc golden packs a b32 carry)."""
        step = GRANULARITY[gran]
        # (rows of lanes, one per iteration of a batched loop, give rows of bits)
        bits = np.zeros(np.shape(active)[:-1] + (VREG_BYTES,), np.bool_)
        bits[..., ::step] = active
        return cls(bits, gran)

    def __repr__(self) -> str:
        return f"Mask({self.gran}: {int(self.lanes().sum())} of {VREG_BYTES // self.step})"


class Align:
    """The align carrier state of unaligned loads / stores (``!pto.align``): bytes buffered
    between ops of one stream. No op of ptoisa produces one yet."""

    __slots__ = ("pending",)

    def __init__(self, pending: bytes = b"") -> None:
        self.pending = pending

    @property
    def spec(self) -> AlignSpec:
        return _spec(AlignSpec)


class Ptr:
    """A pointer into an on-chip buffer: ``space`` (``ub``), byte ``addr``, element ``dtype``.
    Arithmetic (``pto.addptr``) makes a new one."""

    __slots__ = ("space", "addr", "dtype")

    def __init__(self, space: str, addr: int, dtype: D.DType) -> None:
        self.space = space
        self.addr = addr
        self.dtype = dtype

    @property
    def spec(self) -> PtrSpec:
        return _spec(PtrSpec, self.space, self.dtype)

    def plus(self, elems: int) -> Ptr:
        return Ptr(self.space, self.addr + elems * self.dtype.itemsize, self.dtype)

    def __repr__(self) -> str:
        return f"Ptr({self.space}+{self.addr:#x}: {self.dtype.name})"


def touch(m: Any, role: str, space: str, base: Any, starts: Any, n: int) -> None:
    """Tell an observer that asked (``m.touched``, see Machine) that the running micro-op
    ``role`` (``in`` reads, ``out`` writes, ``inout`` both) the ``n`` bytes from each of
    ``starts`` (an int or an array of byte offsets) of ``space``: the machine's buffer of that
    name (``base`` None) or the GM argument whose bytes ``base`` is. Adjacent ranges are
    merged; more than 64 ranges are told as their hull (a checker may then see an overlap a
    finer model would not, never miss one)."""
    got = m.touched
    if got is None or n <= 0:
        return
    if isinstance(starts, (int, np.integer)):
        got.append((role, space, base, int(starts), int(starts) + n))
        return
    st = np.unique(np.asarray(starts, np.int64))
    if st.size == 0:
        return
    if st.size > 64:
        got.append((role, space, base, int(st[0]), int(st[-1]) + n))
        return
    lo, hi = int(st[0]), int(st[0]) + n
    for s in st[1:].tolist():
        if s <= hi:
            hi = max(hi, s + n)
            continue
        got.append((role, space, base, lo, hi))
        lo, hi = s, s + n
    got.append((role, space, base, lo, hi))


def buffer_bytes(m: Any, space: str, addr: int, nbytes: int, what: str, *,
                 role: str | None) -> np.ndarray:
    """Bytes [addr, addr + nbytes) of the machine's ``space`` buffer (uint8, a view; unwritten
    bytes hold the poison pattern), after the tiles that still owe those bytes their values
    (lazy or deferred: ``ptoisa/tile.py``) have written them. ExecutionError outside it
    (``what`` names the access in it: "the loaded"). ``role``: how the caller uses the bytes
    (``in``, ``out``, ``inout``: told to an observer that asks, see :func:`touch`), or None
    when the caller tells the exact bytes itself."""
    buf = SPACES.get(space) or SCALE_SPACES.get(space)
    if buf is None:
        raise ExecutionError(f"pointers into '{space}' are not on-chip buffers ({what})")
    cap = m.target.pointer_window(buf)  # (A5's FB: the space PTOAS plans, targets/base.py)
    if cap <= 0 or m.target.buffer_size(buf) <= 0:
        raise ExecutionError(f"target {m.target.name} has no {buf} buffer ({what})")
    if addr < 0 or addr + nbytes > cap:
        raise ExecutionError(f"{what} bytes [{addr:#x}, {addr + nbytes:#x}) leave the {buf} "
                             f"buffer of {m.target.name} ({cap} bytes)")
    if m.lanes > 1:
        from ..lanes import BlockDivergence

        raise BlockDivergence("micro-ops run one block at a time")
    if role is not None and m.touched is not None:
        touch(m, role, buf, None, addr, nbytes)
    reg = m._poison_to(buf, max(addr + nbytes, m._clean.get(buf, 0)))
    view = reg[addr:addr + nbytes]
    if m._lazy:
        for t in list(m._lazy):  # tiles owing or reading these bytes settle first
            tb = t._buf
            if tb is not None and np.shares_memory(tb, view):
                t._materialize()
        m._lazy = [t for t in m._lazy if t._lazy is not None or t._pending is not None]
        m._lazy_gen += 1
    return view


_VREG_RE = re.compile(r"!pto\.vreg<\s*(\d+)\s*x\s*([\w.!]+)\s*>")
_MASK_RE = re.compile(r"!pto\.mask<\s*(b8|b16|b32)\s*>")


def vreg_spec(text: str) -> VRegSpec | None:
    """The spec of a ``!pto.vreg<NxT>`` type's text, None for another type; PtoError when it
    is a vreg type ptoisa has no element type for or whose lanes do not fill 256 bytes."""
    mt = _VREG_RE.fullmatch(text)
    if mt is None:
        return None
    n, name = int(mt.group(1)), mt.group(2).removeprefix("!pto.")
    if name.startswith("si"):  # signed integers: i<W> of ptoisa
        name = name[1:]
    try:
        dt = D.dtype(name)
    except Exception:  # noqa: BLE001 - an element type without a numpy type
        raise PtoError(f"{text}: element type {name} is not supported") from None
    # (a lane of a packed 4-bit type, f4E2M1x2, is the byte holding two values)
    if n * dt.itemsize != VREG_BYTES:
        raise PtoError(f"{text}: {n} lanes of {dt.name} are {n * dt.itemsize} bytes, a "
                       f"vector register holds {VREG_BYTES}")
    return VRegSpec(n, dt)


def mask_spec(text: str) -> MaskSpec | None:
    mt = _MASK_RE.fullmatch(text)
    return None if mt is None else MaskSpec(mt.group(1))


__all__ = ["GRANULARITY", "SCALE_SPACES", "SPACES", "VREG_BYTES", "Align", "AlignSpec", "Mask",
           "MaskSpec", "Ptr", "PtrSpec", "VReg", "VRegSpec", "buffer_bytes", "mask_spec",
           "vreg_spec"]

"""SIMT ops of the vector micro-ISA (micro-isa/17-simt.md): scalar code run by a group of
workitems (threads), launched from the outer vector kernel with ``pto.simt_launch
@body<<<x, y, z>>>(args)`` or ``pto.store_vfsimt_info z, y, x`` and a ``func.call`` of a
``pto.simt_entry`` function (``interp/simt.py``).

How ptoisa runs a SIMT body: **all workitems in step, the thread as a leading numpy axis**.
The body runs once; a value that differs between workitems is an array with one element per
workitem, in linear order ``tid = x + dim_x * (y + dim_y * z)``. So every workitem reaches
each op together with the others, which is what the lane collectives (vote, shuffle, redux)
and ``pto.syncthreads`` require. Control flow that differs between workitems is refused by
name (the run stops: nothing is guessed).

Defined orders where the page leaves the choice to the target:

* memory ops of one op: workitems in ascending linear tid; two stores to one element leave
  the higher tid's value;
* atomics: applied one workitem at a time in ascending linear tid (one of the total orders
  the page allows, "Algorithms must not rely on any particular tie order"); each workitem's
  old value is the one it saw in that order;
* lanes: ``laneid = tid % 32`` (the page's subgroup width is 32; a launch of more than 32
  workitems is several subgroups of 32 consecutive tids), and a collective (vote, redux,
  shuffle) works within one subgroup of 32; ``pto.shuffle_*`` ``width`` 16 splits it in two.
  A shuffle whose source lane leaves the group keeps the workitem's own value (the page: out
  of range is "target-scoped"; CUDA's __shfl_* does the same).

Values: integers are :class:`~ptoisa.lanes.Lanes` (int64) as everywhere in the interpreter,
floats numpy arrays of their type. Every entry here is also an eager intrinsic; the thread
state it reads (``m.micro_regs["simt"]``) is set by :func:`simt_run`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import ml_dtypes
import numpy as np

from ... import dtypes as D
from ...dtypes import DType
from ...enums import Pipe
from ...errors import ExecutionError
from ...lanes import Lanes
from ...vector.regs import SPACES, Ptr, PtrSpec, buffer_bytes, touch
from ..registry import Opnd, Param, Sig, instr

#: the subgroup (warp) width of the lane collectives and lane masks (17-simt.md: "width ...
#: defaults to 32"; get_lanemask_* are 32-bit masks)
WARP = 32
#: most workitems of one launch (17-simt.md: "the launch count is bounded by 2048")
MAX_THREADS = 2048


class SimtState:
    """The workitems of the running SIMT launch: dims (x, y, z), their count, and the linear
    tid of each (arange)."""

    __slots__ = ("dims", "n", "tid")

    def __init__(self, dims: tuple[int, int, int]) -> None:
        self.dims = dims
        self.n = dims[0] * dims[1] * dims[2]
        self.tid = np.arange(self.n, dtype=np.int64)


def state(m: Any, op: str) -> SimtState:
    s = m.micro_regs.get("simt")
    if s is None:
        raise ExecutionError(f"pto.{op} runs only inside a SIMT body (a function marked "
                             "pto.simt_entry, run by pto.simt_launch or a call after "
                             "pto.store_vfsimt_info)")
    return s  # type: ignore[no-any-return]


def active(m: Any) -> bool:
    """Is a SIMT body running on machine ``m``?"""
    return m.micro_regs.get("simt") is not None


class ThreadGm:
    """One GM pointer per workitem (``pto.addptr`` of a GM pointer by a per-workitem offset):
    the pointer ``base`` (an argument's array, or a view of it) and each workitem's element
    offset from it, in elements of ``dtype``."""

    __slots__ = ("base", "offset", "dtype")
    #: (an operand of kind 'ptr': one pointer per workitem)
    per_workitem = True

    def __init__(self, base: np.ndarray, offset: np.ndarray, dtype: np.dtype[Any]) -> None:
        self.base, self.offset, self.dtype = base, offset, dtype

    @staticmethod
    def at(p: Any, off: Any, dtype: Any) -> ThreadGm:
        """``p`` (a GM pointer or a ThreadGm) moved by ``off`` elements of ``dtype``."""
        dt = np.dtype(dtype)
        o = np.asarray(off, np.int64)
        if isinstance(p, ThreadGm):
            return ThreadGm(p.base, p.offset + o, dt)
        if not isinstance(p, np.ndarray):
            raise ExecutionError(f"pto.addptr: the base is not a GM pointer (got "
                                 f"{type(p).__name__})")
        return ThreadGm(p, o, dt)

    def __repr__(self) -> str:
        return f"ThreadGm({self.dtype.name}, {self.offset.size} workitems)"


def simt_run(m: Any, dims: tuple[int, int, int], body: Callable[[], Any]) -> Any:
    """Run ``body`` (the SIMT function, once for all workitems) with the launch's thread
    state set; the state of an enclosing launch is restored after it."""
    x, y, z = (int(d) for d in dims)
    if min(x, y, z) < 0 or x * y * z > MAX_THREADS:
        raise ExecutionError(f"SIMT launch <<<{x}, {y}, {z}>>>: the workitem count must be "
                             f"0 .. {MAX_THREADS} (17-simt.md)")
    if m.lanes > 1:
        raise ExecutionError("a SIMT launch runs one block at a time (launch with "
                             "lockstep=False)")
    before = m.micro_regs.get("simt")
    m.micro_regs["simt"] = SimtState((x, y, z))
    try:
        return body()
    finally:
        m.micro_regs["simt"] = before


def _ints(v: Any) -> Lanes:
    return Lanes(np.asarray(v, np.int64))


def _per_thread(s: SimtState, v: Any) -> np.ndarray:
    """``v`` (one value, or one per workitem) as an array of one per workitem; a packed value
    (``vector<2xf16>``) has its lanes along a last axis: (1, lanes) one for all, (n, lanes)
    one per workitem."""
    a = np.asarray(v)
    if a.ndim == 0:
        return np.broadcast_to(a, (s.n,))
    if a.ndim == 2 and a.shape[0] in (1, s.n):
        return np.broadcast_to(a, (s.n, a.shape[1]))
    if a.shape != (s.n,):
        raise ExecutionError(f"a value of shape {a.shape} in a SIMT launch of {s.n} workitems")
    return a


# ---- launch configuration ------------------------------------------------------------------

@instr("STORE_VFSIMT_INFO", pipe=Pipe.S, dialect="vpto",
       operands=(Opnd("dim_z", "simt"), Opnd("dim_y", "simt"), Opnd("dim_x", "simt")))
def STORE_VFSIMT_INFO(m: Any, dim_z: Any, dim_y: Any, dim_x: Any) -> None:
    """The launch dimensions the next calls of a pto.simt_entry function run with."""
    m.micro_regs["simt_info"] = (int(dim_x), int(dim_y), int(dim_z))


# ---- thread and lane queries -----------------------------------------------------------------

def _query(name: str, doc: str, fn: Callable[[SimtState], Any]) -> Any:
    def sem(m: Any) -> Any:
        return fn(state(m, name.lower()))
    sem.__name__ = sem.__qualname__ = name
    sem.__doc__ = doc
    return instr(name, pipe=Pipe.V, dialect="vpto", operands=(),
                 results=(Opnd("result", "simt"),))(sem)


def _tid(axis: int) -> Callable[[SimtState], Any]:
    def f(s: SimtState) -> Any:
        x, y, _ = s.dims
        t = s.tid
        return _ints((t % x) if axis == 0 else (t // x % y) if axis == 1 else t // (x * y))
    return f


#: the page gives no value; upstream's simt-scalar-core case (vpto/cases/micro-op/simt, its
#: golden.py, run on the device) expects 0 in every grid dimension of a VF launch
_NO_GRID = "0: a VF launch has no grid (upstream's simt-scalar-core golden)."
GET_TID_X = _query("GET_TID_X", "tid_x of each workitem: 0 .. dim_x - 1.", _tid(0))
GET_TID_Y = _query("GET_TID_Y", "tid_y of each workitem: 0 .. dim_y - 1.", _tid(1))
GET_TID_Z = _query("GET_TID_Z", "tid_z of each workitem: 0 .. dim_z - 1.", _tid(2))
GET_BLOCK_DIM_X = _query("GET_BLOCK_DIM_X", "dim_x (one block: the launch's).",
                         lambda s: s.dims[0])
GET_BLOCK_DIM_Y = _query("GET_BLOCK_DIM_Y", "dim_y (one block: the launch's).",
                         lambda s: s.dims[1])
GET_BLOCK_DIM_Z = _query("GET_BLOCK_DIM_Z", "dim_z (one block: the launch's).",
                         lambda s: s.dims[2])
GET_GRID_DIM_X = _query("GET_GRID_DIM_X", _NO_GRID, lambda s: 0)
GET_GRID_DIM_Y = _query("GET_GRID_DIM_Y", _NO_GRID, lambda s: 0)
GET_GRID_DIM_Z = _query("GET_GRID_DIM_Z", _NO_GRID, lambda s: 0)
GET_BLOCK_IDX_X = _query("GET_BLOCK_IDX_X", "0: a VF launch is one block.", lambda s: 0)
GET_BLOCK_IDX_Y = _query("GET_BLOCK_IDX_Y", "0: a VF launch is one block.", lambda s: 0)
GET_BLOCK_IDX_Z = _query("GET_BLOCK_IDX_Z", "0: a VF launch is one block.", lambda s: 0)
GET_LANEID = _query("GET_LANEID", "The lane of each workitem: tid % 32.",
                    lambda s: _ints(s.tid % WARP))


def _lanemask(rel: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> Callable[[SimtState],
                                                                                 Any]:
    def f(s: SimtState) -> Any:
        lane = s.tid % WARP
        bits = np.arange(WARP, dtype=np.int64)
        on = rel(bits[None, :], lane[:, None])
        u = (on.astype(np.int64) << bits[None, :]).sum(axis=1)
        return _ints(np.where(u >= 1 << 31, u - (1 << 32), u))  # as i32
    return f


GET_LANEMASK_EQ = _query("GET_LANEMASK_EQ", "1 << laneid.", _lanemask(np.equal))
GET_LANEMASK_LT = _query("GET_LANEMASK_LT", "Bits of lanes 0 .. laneid - 1.",
                         _lanemask(np.less))
GET_LANEMASK_LE = _query("GET_LANEMASK_LE", "Bits of lanes 0 .. laneid.",
                         _lanemask(np.less_equal))
GET_LANEMASK_GT = _query("GET_LANEMASK_GT", "Bits of lanes laneid + 1 .. 31.",
                         _lanemask(np.greater))
GET_LANEMASK_GE = _query("GET_LANEMASK_GE", "Bits of lanes laneid .. 31.",
                         _lanemask(np.greater_equal))


# ---- static rules (PTOAS's verifier, where the page or its negative tests say) -----------------

#: ops that run only in a SIMT body: the page says so of keep / resume / syncthreads /
#: threadfence, PTOAS's simt_ldg_stg_scope_invalid of ldg / stg (interp/micro.py checks it)
SCOPED = frozenset({"LDG", "STG", "KEEP", "RESUME", "SYNCTHREADS", "THREADFENCE",
                    "THREADFENCE_BLOCK"})


def _gm_pointer(sig: Sig) -> None:
    p = sig["ptr"]
    if isinstance(p, PtrSpec) and p.space != "gm":
        raise sig.fail(f"requires GM pointer, got {p}")


def _atomic_types(sig: Sig) -> None:
    p = sig["ptr"]
    if not isinstance(p, PtrSpec):
        return
    if p.space == "ub" and p.dtype.itemsize == 8:
        raise sig.fail(f"does not support i64 UB-space atomics ({p})")
    if p.dtype.is_float and (sig.params.get("signed") or sig.params.get("unsigned")):
        raise sig.fail("floating-point atomics do not take signed / unsigned")


def _redux_sign(sig: Sig) -> None:
    v = sig["value"]
    if isinstance(v, DType) and not v.is_float and sig.ins.name != "REDUX_ADD" and \
            bool(sig.params.get("signed")) == bool(sig.params.get("unsigned")):
        raise sig.fail("requires explicit signedness for integer redux (signed or unsigned)")


def _slot(sig: Sig) -> None:
    v = sig["value"]
    try:
        k = int(sig.params.get("slot", 0))
    except (TypeError, ValueError):
        return
    if not 0 <= k <= 122:
        raise sig.fail(f"slot {k} is not in [0, 122]")
    if isinstance(v, DType) and v.itemsize == 8 and (k % 2 or k + 1 > 122):
        raise sig.fail(f"requires an even slot for 64-bit keep/resume values (slot {k}; a "
                       "64-bit value takes slot and slot + 1)")


# ---- scalar memory -----------------------------------------------------------------------------

class _Place:
    """Where ``ptr[offset]`` is for each workitem: ``mem`` the bytes (a view), ``at`` the byte
    offset of each element in them, and what an observer is told (space, GM array or None,
    the starts in that space)."""

    __slots__ = ("mem", "at", "space", "base", "told")

    def __init__(self, mem: np.ndarray, at: np.ndarray, space: str, base: Any,
                 told: np.ndarray) -> None:
        self.mem, self.at, self.space, self.base, self.told = mem, at, space, base, told


def _where(m: Any, ptr: Any, offset: Any, op: str, elem: np.dtype[Any]) -> _Place:
    """``ptr[offset]``, offsets counted in elements of ``elem`` (17-simt.md: "element
    offsets, not byte offsets"); one offset, or one per workitem."""
    off = np.asarray(offset, np.int64).reshape(-1)
    size = elem.itemsize
    if isinstance(ptr, ThreadGm):
        ptr, off = ptr.base, (ptr.offset + off).reshape(-1)
    if isinstance(ptr, Ptr):
        at = ptr.addr + off * size
        lo, hi = int(at.min()), int(at.max()) + size
        mem = buffer_bytes(m, ptr.space, lo, hi - lo, f"the {op} element", role=None)
        return _Place(mem, at - lo, SPACES.get(ptr.space, ptr.space.upper()), None, at)
    if isinstance(ptr, np.ndarray):
        mem = ptr.reshape(-1).view(np.uint8)
        at = off * size
        if int(at.min()) < 0 or int(at.max()) + size > mem.size:
            raise ExecutionError(f"{op}: elements [{int(off.min())}, {int(off.max())}] leave "
                                 f"the GM pointer's argument ({mem.size} bytes from it on)")
        return _Place(mem, at, "GM", mem, at)
    raise ExecutionError(f"{op}: the pointer must be a !pto.ptr, got {ptr!r}")


def elem_of(ptr: Any) -> np.dtype[Any]:
    """The element type a pointer value counts offsets in."""
    if isinstance(ptr, ThreadGm):
        return ptr.dtype
    if isinstance(ptr, Ptr):
        return np.dtype(ptr.dtype.np)
    return np.dtype(ptr.dtype)


def as_value(a: np.ndarray, one: bool) -> Any:
    """Loaded elements as the interpreter keeps values: integers as Lanes, floats as arrays;
    ``one``: the single element itself; a packed element (``vector<2xf16>``) is its lanes
    along a last axis."""
    if a.dtype.names == ("v",):  # (a packed SIMT element: its lanes, shape (n, lanes))
        lanes = as_value(np.ascontiguousarray(a["v"]).reshape(-1), False)
        return lanes.reshape(a.shape + a.dtype["v"].shape)[0 if one else slice(None)]
    if a.dtype.kind in "iub":
        v: Any = Lanes(a.view(np.int64) if a.dtype == np.uint64 else a.astype(np.int64))
    else:
        v = a
    return v.reshape(-1)[0] if one else v


def values_of(value: Any, elem: np.dtype[Any]) -> int:
    """How many values ``value`` holds (one, or one per workitem) for elements of ``elem``
    (a packed element's lanes are its last axis)."""
    return max(1, int(np.size(value)) // (elem["v"].shape[0] if elem.names == ("v",) else 1))


def as_elem(value: Any, elem: np.dtype[Any], n: int) -> np.ndarray:
    """``value`` (one, or n) as n elements of ``elem`` (integers wrap to its width); for a
    packed ``elem`` one value is its lanes (shape (lanes,)), n values shape (n, lanes)."""
    v = np.asarray(value)
    if elem.names == ("v",):
        base, (k,) = elem["v"].base, elem["v"].shape
        if v.shape[-1:] != (k,) or v.ndim > 2:
            raise ExecutionError(f"a value of shape {v.shape} for a packed element of {k} "
                                 f"{base} lanes")
        lanes = as_elem(v.reshape(-1), base, v.size).reshape(v.shape)
        packed = np.empty(1 if v.ndim == 1 else v.shape[0], elem)
        packed["v"] = lanes
        return np.broadcast_to(packed, (n,)) if packed.size == 1 else packed
    if elem.kind in "iu":
        out = v.astype(np.int64).astype(np.uint64).astype(np.dtype(f"u{elem.itemsize}")) \
            .view(elem)
    else:
        out = v.astype(elem)
    return np.broadcast_to(out, (n,)) if out.ndim == 0 else out.reshape(-1)


def read_elems(m: Any, ptr: Any, offset: Any, op: str) -> Any:
    elem = elem_of(ptr)
    p = _where(m, ptr, offset, op, elem)
    touch(m, "in", p.space, p.base, p.told, elem.itemsize)
    idx = p.at[:, None] + np.arange(elem.itemsize)[None, :]
    out = np.ascontiguousarray(p.mem[idx]).view(elem).reshape(-1)
    return as_value(out, np.ndim(offset) == 0 and m.micro_regs.get("simt") is None)


def write_elems(m: Any, ptr: Any, offset: Any, value: Any, op: str) -> None:
    elem = elem_of(ptr)
    p = _where(m, ptr, offset, op, elem)
    n = max(p.at.size, values_of(value, elem))
    at = np.broadcast_to(p.at, (n,))
    vals = as_elem(value, elem, n)
    # workitems in ascending tid: a later one's store to the same element wins
    _, first_rev = np.unique(at[::-1], return_index=True)
    keep = np.sort(n - 1 - first_rev)
    if p.base is not None:
        m.gm_barrier(p.base)
    touch(m, "out", p.space, p.base, np.broadcast_to(p.told, (n,)), elem.itemsize)
    idx = at[keep][:, None] + np.arange(elem.itemsize)[None, :]
    p.mem[idx] = np.ascontiguousarray(vals[keep]).view(np.uint8).reshape(-1, elem.itemsize)


@instr("LOAD", pipe=Pipe.V, dialect="vpto",
       operands=(Opnd("ptr", "ptr"), Opnd("offset", "simt")),
       results=(Opnd("value", "simt"),))
def LOAD(m: Any, ptr: Any, offset: Any) -> Any:
    """value = ptr[offset] (an element offset) for each workitem."""
    return read_elems(m, ptr, offset, "load")


@instr("STORE", pipe=Pipe.V, dialect="vpto",
       operands=(Opnd("value", "simt"), Opnd("ptr", "ptr", "out"), Opnd("offset", "simt")))
def STORE(m: Any, value: Any, ptr: Any, offset: Any) -> None:
    """ptr[offset] = value for each workitem (an element offset), in ascending tid."""
    write_elems(m, ptr, offset, value, "store")


@instr("LDG", pipe=Pipe.V, dialect="vpto",
       operands=(Opnd("ptr", "ptr"), Opnd("offset", "simt"),
                 Opnd("l1cache", "group", optional=True),
                 Opnd("l2cache", "group", optional=True)),
       results=(Opnd("value", "simt"),), static=(_gm_pointer,))
def LDG(m: Any, ptr: Any, offset: Any, l1cache: Any = None, l2cache: Any = None) -> Any:
    """value = ptr[offset] from GM; the cache clauses change no value."""
    if not isinstance(ptr, np.ndarray):
        raise ExecutionError(f"pto.ldg reads GM, got {ptr!r}")
    return read_elems(m, ptr, offset, "ldg")


@instr("STG", pipe=Pipe.V, dialect="vpto",
       operands=(Opnd("value", "simt"), Opnd("ptr", "ptr", "out"), Opnd("offset", "simt"),
                 Opnd("l1cache", "group", optional=True),
                 Opnd("l2cache", "group", optional=True)), static=(_gm_pointer,))
def STG(m: Any, value: Any, ptr: Any, offset: Any, l1cache: Any = None,
        l2cache: Any = None) -> None:
    """ptr[offset] = value in GM; the cache clauses change no value."""
    if not isinstance(ptr, np.ndarray):
        raise ExecutionError(f"pto.stg writes GM, got {ptr!r}")
    write_elems(m, ptr, offset, value, "stg")


# ---- atomics ------------------------------------------------------------------------------------

def _atomic(m: Any, op: str, ptr: Any, values: list[Any], signed: bool, unsigned: bool,
            fn: Callable[[Any, Any, Any], Any]) -> Any:
    """Each workitem's read-modify-write of ``*ptr``, one after the other in ascending tid;
    returns the old value each saw."""
    if signed and unsigned:
        raise ExecutionError(f"pto.{op}: both signed and unsigned")
    elem = elem_of(ptr)
    packed = elem.names == ("v",)
    lane = elem["v"].base if packed else elem
    if (_is_float(elem) or packed) and (signed or unsigned):
        raise ExecutionError(f"pto.{op}: a floating-point or packed atomic takes no "
                             "signedness")
    if packed and (lane not in (np.dtype(np.float16), np.dtype(D.bf16.np))
                   or elem["v"].shape != (2,) or op in ("atomic_and", "atomic_or",
                                                        "atomic_xor")):
        raise ExecutionError(f"pto.{op} of a packed element takes vector<2xf16> or "
                             f"vector<2xbf16> (17-simt.md), got {lane} x "
                             f"{elem['v'].shape[0]}")
    s = m.micro_regs.get("simt")
    n = 1 if s is None else s.n
    if any(np.ndim(v) > packed for v in values) and s is None:
        n = max(values_of(v, elem) for v in values)
    p = _where(m, ptr, 0, op, elem)
    if p.at.size > 1:
        n = p.at.size
    if p.base is not None:
        m.gm_barrier(p.base)
    touch(m, "inout", p.space, p.base, p.told, elem.itemsize)
    at = np.broadcast_to(p.at, (n,)).tolist()
    vs = [as_elem(v, elem, n) for v in values]
    cmp_t = np.dtype(f"u{elem.itemsize}") if unsigned else elem
    old = np.empty(n, elem)
    old_bytes = old.view(np.uint8).reshape(n, elem.itemsize)
    with np.errstate(all="ignore"):
        for k in range(n):
            raw = p.mem[at[k]:at[k] + elem.itemsize]
            old_bytes[k] = raw
            cell = raw.view(lane)
            if packed:  # (one location; the update is lane-wise, 17-simt.md)
                cell[:] = fn(cell.copy(), *(v[k]["v"] for v in vs), cmp_t)
            else:
                cell[0] = fn(cell[0], *(v[k] for v in vs), cmp_t)  # type: ignore[call-arg]
    return as_value(old, s is None and n == 1)


def _is_float(dt: np.dtype[Any]) -> bool:
    """A float type, numpy's or ml_dtypes' (bfloat16 and the fp8 types are kind 'V')."""
    return dt.kind == "f" or (dt.kind == "V" and dt.names is None)


def _bits_min(a: Any, b: Any, t: np.dtype[Any]) -> Any:
    if _is_float(a.dtype):
        return np.fmin(a, b)
    return a if np.array(a).view(t) <= np.array(b).view(t) else b


def _bits_max(a: Any, b: Any, t: np.dtype[Any]) -> Any:
    if _is_float(a.dtype):
        return np.fmax(a, b)
    return a if np.array(a).view(t) >= np.array(b).view(t) else b


_ATOMICS: dict[str, tuple[str, Callable[..., Any]]] = {
    "ATOMIC_EXCH": ("*ptr = value", lambda a, b, t: b),
    "ATOMIC_ADD": ("*ptr = old + value (wrapping; floats rounded to the type)",
                   lambda a, b, t: a + b),
    "ATOMIC_SUB": ("*ptr = old - value", lambda a, b, t: a - b),
    "ATOMIC_MIN": ("*ptr = min(old, value) (signed / unsigned: how integers compare; floats: "
                   "IEEE minNum)", _bits_min),
    "ATOMIC_MAX": ("*ptr = max(old, value)", _bits_max),
    "ATOMIC_AND": ("*ptr = old & value", lambda a, b, t: a & b),
    "ATOMIC_OR": ("*ptr = old | value", lambda a, b, t: a | b),
    "ATOMIC_XOR": ("*ptr = old ^ value", lambda a, b, t: a ^ b),
}


def _make_atomic(name: str, doc: str, fn: Callable[..., Any]) -> Any:
    op = name.lower()

    def sem(m: Any, ptr: Any, value: Any, l2cache: Any = None, *, signed: bool = False,
            unsigned: bool = False) -> Any:
        if op in ("atomic_and", "atomic_or", "atomic_xor") and elem_of(ptr).kind in "fV":
            raise ExecutionError(f"pto.{op} takes integers, got {elem_of(ptr)}")
        return _atomic(m, op, ptr, [value], signed, unsigned, fn)
    sem.__name__ = sem.__qualname__ = name
    sem.__doc__ = f"old = *ptr; {doc}; returns old, workitems one by one in ascending tid."
    return instr(name, pipe=Pipe.V, dialect="vpto",
                 operands=(Opnd("ptr", "ptr", "inout"), Opnd("value", "simt"),
                           Opnd("l2cache", "group", optional=True)),
                 params=(Param("signed", False), Param("unsigned", False)),
                 results=(Opnd("old", "simt"),), static=(_atomic_types,))(sem)


ATOMIC_EXCH = _make_atomic("ATOMIC_EXCH", *_ATOMICS["ATOMIC_EXCH"])
ATOMIC_ADD = _make_atomic("ATOMIC_ADD", *_ATOMICS["ATOMIC_ADD"])
ATOMIC_SUB = _make_atomic("ATOMIC_SUB", *_ATOMICS["ATOMIC_SUB"])
ATOMIC_MIN = _make_atomic("ATOMIC_MIN", *_ATOMICS["ATOMIC_MIN"])
ATOMIC_MAX = _make_atomic("ATOMIC_MAX", *_ATOMICS["ATOMIC_MAX"])
ATOMIC_AND = _make_atomic("ATOMIC_AND", *_ATOMICS["ATOMIC_AND"])
ATOMIC_OR = _make_atomic("ATOMIC_OR", *_ATOMICS["ATOMIC_OR"])
ATOMIC_XOR = _make_atomic("ATOMIC_XOR", *_ATOMICS["ATOMIC_XOR"])


@instr("ATOMIC_CAS", pipe=Pipe.V, dialect="vpto",
       operands=(Opnd("ptr", "ptr", "inout"), Opnd("compare", "simt"), Opnd("value", "simt"),
                 Opnd("l2cache", "group", optional=True)),
       params=(Param("signed", False), Param("unsigned", False)),
       results=(Opnd("old", "simt"),), static=(_atomic_types,))
def ATOMIC_CAS(m: Any, ptr: Any, compare: Any, value: Any, l2cache: Any = None, *,
               signed: bool = False, unsigned: bool = False) -> Any:
    """old = *ptr; if old == compare (bit for bit; a packed element: both lanes): *ptr = value;
    returns old, workitems one by one in ascending tid."""
    def cas(a: Any, c: Any, v: Any, t: np.dtype[Any]) -> Any:
        # (a packed element compares whole: both lanes)
        return v if np.array(a).tobytes() == np.array(c).tobytes() else a
    return _atomic(m, "atomic_cas", ptr, [compare, value], signed, unsigned, cas)


# ---- lane collectives ----------------------------------------------------------------------------

def _groups(s: SimtState, width: int) -> np.ndarray:
    """The group (of ``width`` consecutive lanes of one subgroup) of each workitem."""
    return s.tid // width


def _collect(s: SimtState, v: Any, width: int, fn: Callable[[np.ndarray], Any]) -> np.ndarray:
    a = _per_thread(s, v)
    g = _groups(s, width)
    out = np.empty(s.n, dtype=np.result_type(fn(a[:1])))
    for k in np.unique(g).tolist():
        sel = g == k
        out[sel] = fn(a[sel])
    return out


def _bool(s: SimtState, pred: Any) -> np.ndarray:
    return _per_thread(s, np.asarray(pred).astype(np.int64) & 1).astype(bool)


@instr("VOTE_ALL", pipe=Pipe.V, dialect="vpto", operands=(Opnd("pred", "simt"),),
       results=(Opnd("result", "simt"),))
def VOTE_ALL(m: Any, pred: Any) -> Any:
    """pred of every lane of the subgroup (32 lanes) is true."""
    s = state(m, "vote_all")
    return _ints(_collect(s, _bool(s, pred), WARP, lambda a: a.all()).astype(np.int64))


@instr("VOTE_ANY", pipe=Pipe.V, dialect="vpto", operands=(Opnd("pred", "simt"),),
       results=(Opnd("result", "simt"),))
def VOTE_ANY(m: Any, pred: Any) -> Any:
    """pred of some lane of the subgroup is true."""
    s = state(m, "vote_any")
    return _ints(_collect(s, _bool(s, pred), WARP, lambda a: a.any()).astype(np.int64))


@instr("VOTE_UNI", pipe=Pipe.V, dialect="vpto", operands=(Opnd("pred", "simt"),),
       results=(Opnd("result", "simt"),))
def VOTE_UNI(m: Any, pred: Any) -> Any:
    """pred is the same on every lane of the subgroup."""
    s = state(m, "vote_uni")
    return _ints(_collect(s, _bool(s, pred), WARP,
                          lambda a: a.all() or not a.any()).astype(np.int64))


@instr("VOTE_BALLOT", pipe=Pipe.V, dialect="vpto", operands=(Opnd("pred", "simt"),),
       results=(Opnd("result", "simt"),))
def VOTE_BALLOT(m: Any, pred: Any) -> Any:
    """Bit lane of the i32 result: pred of that lane of the subgroup."""
    s = state(m, "vote_ballot")
    b = _bool(s, pred)
    lane = s.tid % WARP
    out = np.zeros(s.n, np.int64)
    for k in np.unique(s.tid // WARP).tolist():
        sel = s.tid // WARP == k
        out[sel] = int((b[sel].astype(np.int64) << lane[sel]).sum())
    return _ints(np.where(out >= 1 << 31, out - (1 << 32), out))


def _shuffle(m: Any, op: str, value: Any, ctl: Any, width: Any,
             source: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> Any:
    s = state(m, op)
    w = WARP if width is None else int(width)
    if w not in (16, 32):
        raise ExecutionError(f"pto.{op}: width must be 16 or 32, got {w}")
    v = _per_thread(s, value)
    c = _per_thread(s, np.asarray(ctl, np.int64))
    base = s.tid // w * w
    local = s.tid - base
    src_local = source(local, c)
    ok = (src_local >= 0) & (src_local < w) & (base + src_local < s.n)
    src = np.where(ok, base + src_local, s.tid)  # out of the group: the workitem's own value
    out = np.asarray(v)[src]
    return _ints(out) if out.dtype.kind in "iub" else out


def _make_shuffle(name: str, doc: str, source: Callable[[np.ndarray, np.ndarray],
                                                            np.ndarray]) -> Any:
    def sem(m: Any, value: Any, ctl: Any, *, width: Any = None) -> Any:
        return _shuffle(m, name.lower(), value, ctl, width, source)
    sem.__name__ = sem.__qualname__ = name
    sem.__doc__ = doc
    return instr(name, pipe=Pipe.V, dialect="vpto",
                 operands=(Opnd("value", "simt"), Opnd("ctl", "simt")),
                 params=(Param("width", None),), results=(Opnd("result", "simt"),))(sem)


SHUFFLE_IDX = _make_shuffle("SHUFFLE_IDX", "value of lane ctl of the workitem's group.",
                            lambda local, c: c)
SHUFFLE_UP = _make_shuffle("SHUFFLE_UP", "value of lane local - ctl of the group.",
                           lambda local, c: local - c)
SHUFFLE_DOWN = _make_shuffle("SHUFFLE_DOWN", "value of lane local + ctl of the group.",
                             lambda local, c: local + c)
SHUFFLE_BFLY = _make_shuffle("SHUFFLE_BFLY", "value of lane local xor ctl of the group.",
                             lambda local, c: local ^ c)


def _redux(m: Any, op: str, value: Any, signed: bool, unsigned: bool, kind: str) -> Any:
    s = state(m, op)
    v = _per_thread(s, value)
    if v.ndim != 1:
        raise ExecutionError(f"operation 'pto.{op}' cannot be executed by ptoisa yet with a "
                             "packed value")
    if v.dtype.kind == "f":
        if signed or unsigned:
            raise ExecutionError(f"pto.{op}: a floating-point value takes no signedness")
        f = {"add": np.sum, "max": np.max, "min": np.min}[kind]
        return _collect(s, v, WARP, lambda a: f(a).astype(v.dtype))
    if kind != "add" and signed == unsigned:
        raise ExecutionError(f"pto.{op} of i32 takes signed or unsigned")
    a = np.asarray(v, np.int64) & 0xFFFFFFFF
    a = a if unsigned else np.where(a >= 1 << 31, a - (1 << 32), a)
    f = {"add": np.sum, "max": np.max, "min": np.min}[kind]
    out = _collect(s, a, WARP, lambda x: f(x)) & 0xFFFFFFFF
    return _ints(np.where(out >= 1 << 31, out - (1 << 32), out))


def _make_redux(name: str, doc: str) -> Any:
    kind = name.split("_")[1].lower()

    def sem(m: Any, value: Any, *, signed: bool = False, unsigned: bool = False) -> Any:
        return _redux(m, name.lower(), value, signed, unsigned, kind)
    sem.__name__ = sem.__qualname__ = name
    sem.__doc__ = doc
    return instr(name, pipe=Pipe.V, dialect="vpto", operands=(Opnd("value", "simt"),),
                 params=(Param("signed", False), Param("unsigned", False)),
                 results=(Opnd("result", "simt"),), static=(_redux_sign,))(sem)


REDUX_ADD = _make_redux("REDUX_ADD", "The sum over the subgroup's lanes, to each of them "
                        "(i32 wraps; floats summed in lane order in the type).")
REDUX_MAX = _make_redux("REDUX_MAX", "The maximum over the subgroup's lanes, to each.")
REDUX_MIN = _make_redux("REDUX_MIN", "The minimum over the subgroup's lanes, to each.")


# ---- keep / resume -------------------------------------------------------------------------------

@instr("KEEP", pipe=Pipe.V, dialect="vpto", operands=(Opnd("value", "simt"),),
       params=(Param("slot", 0),), static=(_slot,))
def KEEP(m: Any, value: Any, *, slot: Any = 0) -> None:
    """The workitem's value kept in logical slot ``slot`` (0 .. 122) for a later SIMT body."""
    s = state(m, "keep")
    k = int(slot)
    if not 0 <= k <= 122:
        raise ExecutionError(f"pto.keep: slot {k} is not in [0, 122]")
    m.micro_regs.setdefault("simt_slots", {})[k] = np.array(_per_thread(s, value))


@instr("RESUME", pipe=Pipe.V, dialect="vpto", operands=(),
       params=(Param("slot", 0), Param("result_type", None)),
       results=(Opnd("value", "simt"),), static=(_slot,))
def RESUME(m: Any, *, slot: Any = 0, result_type: Any = None) -> Any:
    """The value the same workitem kept in slot ``slot``."""
    s = state(m, "resume")
    k = int(slot)
    kept = m.micro_regs.get("simt_slots", {}).get(k)
    if kept is None:
        raise ExecutionError(f"pto.resume: nothing was kept in slot {k}")
    if kept.shape[0] != s.n:
        raise ExecutionError(f"pto.resume: slot {k} was kept by {kept.size} workitems, this "
                             f"launch has {s.n}")
    if kept.dtype.kind == "f" and result_type is not None:
        return kept.astype(np.dtype(result_type.np))
    return _ints(kept) if kept.dtype.kind in "iub" else kept


# ---- scalar math ---------------------------------------------------------------------------------

def _float(op: str, v: Any) -> np.ndarray:
    a = np.asarray(v)
    if a.dtype.kind != "f" and a.dtype.name not in ("bfloat16",):
        raise ExecutionError(f"pto.{op} takes f16 / bf16 / f32 values, got {a.dtype}")
    return a


def _math(name: str, doc: str, arity: int, fn: Callable[..., Any]) -> Any:
    """A SIMT float op: computed in f64 from the operands, rounded once to their type."""
    op = name.lower()

    def sem(m: Any, *vals: Any) -> Any:
        xs = [_float(op, v) for v in vals]
        dt = xs[0].dtype
        if any(x.dtype != dt for x in xs):
            raise ExecutionError(f"pto.{op}: operands of types "
                                 f"{', '.join(str(x.dtype) for x in xs)} (one type expected)")
        with np.errstate(all="ignore"):
            out = np.asarray(fn(*(x.astype(np.float64) for x in xs))).astype(dt)
        return out[()] if out.ndim == 0 else out
    names = ("x",) if arity == 1 else ("a", "b") if arity == 2 else ("a", "b", "acc")
    sem.__name__ = sem.__qualname__ = name
    sem.__doc__ = doc
    return instr(name, pipe=Pipe.V, dialect="vpto",
                 operands=tuple(Opnd(n, "simt") for n in names),
                 results=(Opnd("result", "simt"),))(sem)


def _round_half_away(x: np.ndarray) -> np.ndarray:
    return np.sign(x) * np.floor(np.abs(x) + 0.5)


ABSF = _math("ABSF", "|x|.", 1, np.abs)
SQRT = _math("SQRT", "sqrt(x), rounded once to the type (f64 in between).", 1, np.sqrt)
EXP = _math("EXP", "e ** x, rounded once to the type (f64 in between; the hardware's "
            "approximation may differ in the last bit).", 1, np.exp)
LOG = _math("LOG", "ln(x), rounded once to the type (f64 in between).", 1, np.log)
POW = _math("POW", "a ** b, rounded once to the type (f64 in between).", 2, np.power)
CEIL = _math("CEIL", "The least integral value >= x.", 1, np.ceil)
FLOOR = _math("FLOOR", "The greatest integral value <= x.", 1, np.floor)
RINT = _math("RINT", "x rounded to an integral value, ties to even (the default rounding "
             "rule).", 1, np.rint)
ROUND = _math("ROUND", "x rounded to an integral value, ties away from zero (C round()).", 1,
              _round_half_away)
FMIN = _math("FMIN", "The smaller of a and b; a NaN operand gives the other (IEEE minNum).",
             2, np.fmin)
FMAX = _math("FMAX", "The larger of a and b; a NaN operand gives the other (IEEE maxNum).",
             2, np.fmax)
FMA = _math("FMA", "a * b + acc: the product exact in f64, the sum rounded to f64 and then to "
            "the type (f16 / bf16: exact, so one rounding; f32: a double rounding in rare "
            "ties, marked as an approximation of the fused op).", 3,
            lambda a, b, c: a * b + c)


# ---- conversion ----------------------------------------------------------------------------------

#: round(R) selectors (17-simt.md "Rounding selectors") -> f64 -> integral f64
_TO_INT = {"r": np.rint, "a": _round_half_away, "f": np.floor, "c": np.ceil, "z": np.trunc}


@instr("CONVERT", pipe=Pipe.V, dialect="vpto",
       operands=(Opnd("src", "simt"), Opnd("round", "group")),
       params=(Param("sat", False), Param("nosat", False), Param("signed", False),
               Param("unsigned", False), Param("result_type", None),
               Param("source_type", None)),
       results=(Opnd("dst", "simt"),))
def CONVERT(m: Any, src: Any, round: Any, *, sat: bool = False, nosat: bool = False,
            signed: bool = False, unsigned: bool = False, result_type: Any = None,
            source_type: Any = None) -> Any:
    """dst = src converted to the result type with rounding ``round(R)``, ``sat`` clamping a
    finite overflow (and NaN to 0) for an integer result; ``signed`` / ``unsigned`` read an
    integer source; a packed two-lane value (``vector<2xf32> -> vector<2xf16>``) converts
    lane by lane (``source_type``: the source's type, which a packed one needs)."""
    mode = str(round[0]) if round else "r"
    if sat == nosat:
        raise ExecutionError("pto.convert takes one of sat / nosat")
    if getattr(result_type, "lanes", 1) > 1 or getattr(source_type, "lanes", 1) > 1:
        return _convert_packed(src, mode, sat, signed or unsigned, source_type, result_type)
    if result_type is None or not hasattr(result_type, "np"):
        raise ExecutionError(f"operation 'pto.convert' cannot be executed by ptoisa yet to "
                             f"{result_type} (packed vector forms)")
    dst = np.dtype(result_type.np)
    a = np.asarray(src)
    int_src = a.dtype.kind in "iub"
    if int_src or dst.kind in "iu":
        if signed == unsigned:
            raise ExecutionError("pto.convert to or from an integer takes signed or unsigned")
    if int_src and dst.kind in "iu":
        raise ExecutionError("pto.convert does not convert integers to integers")
    if int_src:
        bits = 8 * result_type_bits(src)
        x = np.asarray(a, np.int64)
        x = x & ((1 << bits) - 1) if unsigned else x
        if mode != "r":
            raise ExecutionError(f"operation 'pto.convert' cannot be executed by ptoisa yet "
                                 f"with round({mode}) from an integer")
        out = x.astype(np.float64).astype(dst)  # (exact for i32 in f64: one rounding)
    elif dst.kind in "iu" or dst.name.startswith("int") or dst.name.startswith("uint"):
        f = _TO_INT.get(mode)
        if f is None:
            raise ExecutionError(f"operation 'pto.convert' cannot be executed by ptoisa yet "
                                 f"with round({mode}) to an integer")
        if not sat:
            raise ExecutionError("pto.convert of a float to an integer requires sat "
                                 "(17-simt.md)")
        x = f(a.astype(np.float64))
        bits = 8 * dst.itemsize
        lo, hi = (0, (1 << bits) - 1) if unsigned else (-(1 << (bits - 1)), (1 << (bits - 1)) - 1)
        x = np.where(np.isnan(x), 0, np.clip(x, lo, hi))
        out = x.astype(np.int64)
        return _ints(np.where(out >= 1 << (bits - 1), out - (1 << bits), out)) \
            if np.ndim(out) else int(out if out < 1 << (bits - 1) else out - (1 << bits))
    else:
        if mode != "r":
            raise ExecutionError(f"operation 'pto.convert' cannot be executed by ptoisa yet "
                                 f"with round({mode}) between floats")
        with np.errstate(over="ignore"):  # (an overflow is inf, then sat clamps it)
            out = a.astype(np.float32).astype(dst) if a.dtype.itemsize <= 4 else a.astype(dst)
        if sat:
            fin = np.isfinite(a.astype(np.float64))
            big = float(np.finfo(dst).max) if dst.kind == "f" else float(
                np.asarray(np.inf, dst))
            out = np.where(fin & ~np.isfinite(out.astype(np.float64)),
                           np.sign(a.astype(np.float64)) * big, out).astype(dst)
    return out[()] if np.ndim(out) == 0 else out


def _convert_packed(src: Any, mode: str, sat: bool, signedness: bool, st: Any,
                    dt: Any) -> Any:
    """A packed two-lane pto.convert: the pairs PTOAS's verifier takes (f32x2 <-> f16x2 /
    bf16x2, f32x2 -> f8x2, f32x2 / f16x2 -> hif8x2, f8x2 / hif8x2 -> f32x2 / f16x2), each
    lane converted as the scalar form converts it; the roundings ptoisa does not make are
    refused by name."""
    def name(t: Any) -> str:
        return getattr(t, "name", str(t))
    if getattr(st, "lanes", 1) != 2 or getattr(dt, "lanes", 1) != 2:
        raise ExecutionError(f"pto.convert from {name(st)} to {name(dt)}: a packed conversion "
                             "takes a packed source and result")
    if signedness:
        raise ExecutionError("pto.convert of packed values takes no signed / unsigned")
    s, d = st.lane_type, dt.lane_type
    pair = f"{name(st)} -> {name(dt)}"
    wide = (D.f32, D.f16)
    f8 = (D.f8e4m3, D.f8e5m2)
    if (s, d) in ((D.f32, D.f16), (D.f32, D.bf16)) or (s is D.f32 and d in f8):
        narrow = True
        ok = ("r",)  # (a/f/c/z/o: the directed roundings of a narrowing are not made yet)
    elif (s in (D.f16, D.bf16) and d is D.f32) or (s in f8 + (D.hif8,) and d in wide):
        narrow, ok = False, ("r", "a", "f", "c", "z")  # (exact: every rounding agrees)
    elif s in wide and d is D.hif8:
        narrow, ok = True, ("a",)
    else:
        raise ExecutionError(f"pto.convert: unsupported packed conversion {pair}")
    if mode not in ok:
        raise ExecutionError(f"operation 'pto.convert' cannot be executed by ptoisa yet with "
                             f"round({mode}) for {pair}")
    a = np.asarray(src)
    x = (D.hif8_decode(np.asarray(a, np.int64).astype(np.uint8)) if s is D.hif8
         else a.astype(s.np)).astype(np.float64)
    if not narrow:
        out = x.astype(d.np)
        if not np.array_equal(out.astype(np.float64), x, equal_nan=True):
            raise ExecutionError(f"pto.convert {pair}: a value the result type does not hold "
                                 "exactly")
        return out
    if d is D.hif8:
        return _ints(D.hif8_encode(x, "round", saturate=sat).astype(np.int64))
    big = float(ml_dtypes.finfo(d.np).max)
    fin = np.isfinite(x)
    over = fin & (np.abs(x) > big)
    with np.errstate(over="ignore"):
        out = x.astype(np.float32).astype(d.np)  # (f32 source: exact in f32; RNE once)
    if sat:
        out = np.where(over | (fin & ~np.isfinite(out.astype(np.float64))),
                       np.sign(x) * big, out).astype(d.np)
    elif d in f8 and bool((fin & ~np.isfinite(out.astype(np.float64))).any()):
        raise ExecutionError(f"operation 'pto.convert' cannot be executed by ptoisa yet with a "
                             f"finite value past {d.name}'s range under nosat ({pair})")
    return out


def result_type_bits(v: Any) -> int:
    """Bytes of an integer source value: 4 (the i32 of the SIMT conversions)."""
    return 4


# ---- entry synchronization ---------------------------------------------------------------------

@instr("SYNCTHREADS", pipe=Pipe.V, dialect="vpto", operands=())
def SYNCTHREADS(m: Any) -> None:
    """Every workitem waits for the others: ptoisa runs them in step, so each op's memory
    effects of every workitem come before the next op's."""
    state(m, "syncthreads")


@instr("THREADFENCE", pipe=Pipe.V, dialect="vpto", operands=())
def THREADFENCE(m: Any) -> None:
    """A fence of the workitem's memory effects (ptoisa's are in program order already)."""
    state(m, "threadfence")


@instr("THREADFENCE_BLOCK", pipe=Pipe.V, dialect="vpto", operands=())
def THREADFENCE_BLOCK(m: Any) -> None:
    """A block-scoped fence (ptoisa's memory effects are in program order already)."""
    state(m, "threadfence_block")


__all__ = ["MAX_THREADS", "SCOPED", "WARP", "SimtState", "ThreadGm", "active", "simt_run", "state",
           *(n for n in dir() if n.isupper() and n[0] != "_" and n not in
             ("WARP", "MAX_THREADS", "SPACES", "SCOPED"))]


def simt_entries() -> frozenset[str]:
    """The SIMT ops: the entries this module declares (what PTOAS marks SimtOpInterface)."""
    from ..registry import REGISTRY

    return frozenset(n for n, ins in REGISTRY.items() if ins.impl.__module__ == __name__)

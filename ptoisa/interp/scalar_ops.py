"""Interpreter handlers of the scalar memory ops: GM pointers (``pto.addptr``, ``pto.castptr``,
``pto.ptrtoint`` / ``pto.inttoptr``), one element read or written through a pointer
(``pto.load_scalar`` / ``pto.store_scalar``) and the event-id arrays
(``pto.declare_eventid_array``, ``pto.eventid_array_get`` / ``_set``).

A GM pointer value is a 1-D numpy array of the pointer's element type that starts at the
element the pointer points to and runs to the end of the pointer argument it was derived
from: a bound pointer argument is the argument's array itself, ``pto.addptr %p, %n`` its view
from element ``n`` on. Every op that takes a pointer (``pto.make_tensor_view`` too) takes such
an array, and writes through it land in the argument. ``ptrtoint`` gives a byte address in a
GM address space of the launch's own: pointer argument ``k`` (in binding order) starts at
``(k + 1) << 40``, so addresses are the same on every run and ``inttoptr`` maps one back to
the argument holding it; an address outside every pointer argument is an error, never a read
of memory the program was not given. Offsets are checked against the argument: an element
outside it is an error naming the argument, where the hardware would read or write whatever
lies there.

Pointers into on-chip buffers (``!pto.ptr<T, ub>``, ``l1``, ``l0c`` ...) are
:class:`~ptoisa.vector.regs.Ptr` values: a buffer, a byte address in it, an element type.
``pto.castptr`` makes one from an integer address (and gives it back), ``pto.addptr`` moves it
by elements; the micro-ops (``ptoisa/isa/micro/``) read and write the machine's buffer bytes
through it, the bytes placed tiles live in. ``pto.load_scalar`` / ``pto.store_scalar`` /
``pto.inttoptr`` on them are still refused by name when they run.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from .. import dtypes as D
from .. import lazy
from ..errors import ExecutionError, NotExecutedYet, VerifyError, needs_values
from ..ir import types as T
from ..ir.core import Op
from ..isa.micro import simt
from ..lanes import Lanes
from ..vector.regs import SPACES, Ptr, buffer_bytes
from . import arith, bridge
from .compiler import CompiledFunc, Env, Step, handler
from .std_ops import _same_for_all_blocks

#: byte address of pointer argument k's first byte: (k + 1) << ROOT_SHIFT
ROOT_SHIFT = 40
_ROOT_SPAN = 1 << ROOT_SHIFT


def _data(a: np.ndarray) -> int:
    return int(a.__array_interface__["data"][0])


def _is_gm(t: T.Type) -> bool:
    return isinstance(t, T.PtrType) and (t.space is None or t.space == "gm")


def _elem(t: T.Type, op: Op, what: str) -> D.DType:
    if not isinstance(t, T.PtrType):
        raise VerifyError(f"{what} must be a !pto.ptr, got {t}", op=op.name, loc=op.loc)
    try:
        return bridge.elem_dtype(t.dtype)
    except Exception:  # noqa: BLE001 - an element type ptoisa has no numpy type for
        if str(t.dtype).startswith(("vector<", "!pto.hif8x")):
            # (the SIMT chapter's packed two-element values: PTOAS takes them, ptoisa has no
            # element type for them yet: refused by name)
            raise VerifyError(f"operation '{op.name}' cannot be executed by ptoisa yet with "
                              f"the packed pointer element type {t.dtype}", op=op.name,
                              loc=op.loc) from None
        raise VerifyError(f"pointer element type {t.dtype} is not supported", op=op.name,
                          loc=op.loc) from None


def _on_chip(op: Op, t: T.Type) -> Step:
    """The step of an op on an on-chip pointer: refused by name when it runs."""
    msg = (f"operation '{op.name}' cannot be executed by ptoisa yet on {t} (on-chip pointers "
           "are executed by castptr, addptr and the micro-ops; GM pointers by every op)")
    loc = op.loc

    def step(env: Env) -> None:
        raise ExecutionError(msg, loc=loc)
    return step


def _chip_space(op: Op, t: T.PtrType) -> str:
    space = t.space or "gm"
    if space not in SPACES:
        raise VerifyError(f"unknown pointer space '{space}' (known: gm, "
                          f"{', '.join(SPACES)})", op=op.name, loc=op.loc)
    return space


def _scalar(env: Env, k: int, op: Op, what: str) -> int:
    v = env[k]
    if isinstance(v, Lanes):
        v = _same_for_all_blocks(v, op, what)
    return int(v)


def _chip_cast(cf: CompiledFunc, op: Op, st: T.Type, rt: T.Type, dt: D.DType) -> Step:
    """castptr with an on-chip pointer: integer -> pointer (the integer is the byte address
    in the buffer), pointer -> integer (its address), pointer -> pointer (same bytes, the new
    element type)."""
    src, k = cf.slot(op.operands[0]), cf.slot(op.results[0])
    loc = op.loc
    if isinstance(rt, T.PtrType):
        space = _chip_space(op, rt)
        if isinstance(st, T.PtrType):
            def retype(env: Env) -> None:
                p = env[src]
                if not isinstance(p, Ptr):
                    raise ExecutionError(f"{op.name}: the source is not a {space} pointer (got "
                                         f"{type(p).__name__})", loc=loc)
                env[k] = Ptr(space, p.addr, dt)
            return retype

        def make(env: Env) -> None:
            addr = _scalar(env, src, op, "the address")
            if addr < 0:
                raise ExecutionError(f"{op.name}: address {addr} is negative", loc=loc)
            env[k] = Ptr(space, addr, dt)
        return make
    wrap = arith.wrapper(rt)

    def address(env: Env) -> None:
        p = env[src]
        if not isinstance(p, Ptr):
            raise ExecutionError(f"{op.name}: the source is not an on-chip pointer (got "
                                 f"{type(p).__name__})", loc=loc)
        env[k] = wrap(p.addr)
    return address


def _root_of(env: Env, p: np.ndarray) -> tuple[int, int]:
    """(index of the pointer argument ``p`` points into, byte offset of ``p`` in it)."""
    a = _data(p)
    for k, r in enumerate(env[0].gm_roots):
        d = a - _data(r)
        if 0 <= d <= r.nbytes:
            return k, d
    raise ExecutionError("the pointer does not point into a GM pointer argument of this "
                         "launch")


def _view(root: np.ndarray, byte: int, dt: D.DType) -> np.ndarray:
    """The elements of type ``dt`` of ``root`` from byte ``byte`` on (a view)."""
    isz = dt.itemsize
    if root.dtype == dt.np and byte % isz == 0:
        return root[byte // isz:]
    b = root.view(np.uint8)[byte:]
    return b[:b.size // isz * isz].view(dt.np)


def _arg_name(env: Env, k: int) -> str:
    r = env[0].gm_roots[k]
    return f"pointer argument {k} ({r.size} x {D.dtype(r.dtype).name})"


def _index_of(env: Env, p: Any, off: Any, dt: D.DType, op: Op, what: str
              ) -> tuple[np.ndarray, Any]:
    """(array, index) of element ``off`` of pointer ``p``: ``p`` itself when the index lies
    in it, else a view of its argument from the element on; ExecutionError outside it."""
    if not isinstance(p, np.ndarray):
        raise ExecutionError(f"{op.name}: the {what} is not a GM pointer (got "
                             f"{type(p).__name__})", loc=op.loc)
    if p.dtype != dt.np:
        k, byte = _root_of(env, p)
        p = _view(env[0].gm_roots[k], byte, dt)
    if isinstance(off, np.ndarray):  # per-block offsets of a lockstep launch
        offs = np.asarray(off, np.int64)
        if offs.size and (offs.min() < 0 or offs.max() >= p.size):
            raise ExecutionError(
                f"{op.name}: per-block offsets [{int(offs.min())}, {int(offs.max())}] leave "
                f"the {what}'s {p.size} elements (to its argument's end); a block whose element "
                "lies before the pointer runs one by one (lockstep=False)", loc=op.loc)
        return p, offs
    off = int(off)
    if 0 <= off < p.size:
        return p, off
    try:
        k, byte = _root_of(env, p)
    except ExecutionError as e:
        raise e.with_loc(op.loc) from None
    root = env[0].gm_roots[k]
    at = byte + off * dt.itemsize
    if at < 0 or at + dt.itemsize > root.nbytes:
        raise ExecutionError(
            f"{op.name}: element {off} of the {what} is outside its argument (byte {at} of "
            f"{_arg_name(env, k)}, {root.nbytes} bytes)", loc=op.loc)
    return _view(root, at, dt), 0


def _int_reader(dt: D.DType) -> Any:
    if dt.np == np.bool_:
        return lambda x: int(bool(x))
    return int


# ---- pointers ---------------------------------------------------------------------------------

@handler("pto.addptr")
def _addptr(cf: CompiledFunc, op: Op) -> Step:
    pt, rt = op.operands[0].type, op.results[0].type
    dt = _elem(pt, op, "the base")
    if not (isinstance(rt, T.PtrType) and rt.dtype == pt.dtype  # type: ignore[attr-defined]
            and (rt.space or "gm") == (pt.space or "gm")):  # type: ignore[attr-defined]
        raise VerifyError(f"result type {rt} must match the input pointer type {pt}",
                          op=op.name, loc=op.loc)
    ps, os_, k = cf.slot(op.operands[0]), cf.slot(op.operands[1]), cf.slot(op.results[0])
    loc = op.loc
    if not _is_gm(pt):
        _chip_space(op, pt)  # type: ignore[arg-type]

        def chip(env: Env) -> None:
            p = env[ps]
            if not isinstance(p, Ptr):
                raise ExecutionError(f"{op.name}: the base is not an on-chip pointer (got "
                                     f"{type(p).__name__})", loc=loc)
            off = env[os_]
            if isinstance(off, Lanes) and simt.active(env[0].machine):
                # one pointer per workitem of a SIMT body (addresses: an array over them)
                env[k] = Ptr(p.space, Lanes(np.asarray(p.addr, np.int64)
                                            + np.asarray(off) * dt.itemsize), p.dtype)
                return
            env[k] = p.plus(_scalar(env, os_, op, "the pointer offset"))
        return chip

    def step(env: Env) -> None:
        p, off = env[ps], env[os_]
        if isinstance(off, Lanes) and simt.active(env[0].machine) or \
                isinstance(p, simt.ThreadGm):
            env[k] = simt.ThreadGm.at(p, off, dt.np)  # one GM pointer per workitem
            return
        if isinstance(off, Lanes):
            off = _same_for_all_blocks(off, op, "the pointer offset")
        off = int(off)
        if isinstance(p, np.ndarray) and p.dtype == dt.np and 0 <= off <= p.size:
            env[k] = p[off:]
            return
        r, byte = _gm_root(env, p, op, "the base")
        root = env[0].gm_roots[r]
        at = byte + off * dt.itemsize
        if not 0 <= at <= root.nbytes:
            raise ExecutionError(f"{op.name}: offset {off} moves the pointer outside its "
                                 f"argument (byte {at} of {_arg_name(env, r)}, "
                                 f"{root.nbytes} bytes)", loc=loc)
        env[k] = _view(root, at, dt)
    return step


def _gm_root(env: Env, p: Any, op: Op, what: str) -> tuple[int, int]:
    """(argument index, byte offset in it) of GM pointer ``p``; a located error when ``p`` is
    not a GM pointer or points into no argument."""
    if not isinstance(p, np.ndarray):
        raise ExecutionError(f"{op.name}: {what} is not a GM pointer (got "
                             f"{type(p).__name__})", loc=op.loc)
    try:
        return _root_of(env, p)
    except ExecutionError as e:
        raise e.with_loc(op.loc) from None


def _to_address(cf: CompiledFunc, op: Op) -> Step:
    """ptr -> i64: the pointer's byte address in the launch's GM address space."""
    ps, k = cf.slot(op.operands[0]), cf.slot(op.results[0])
    wrap = arith.wrapper(op.results[0].type)

    def step(env: Env) -> None:
        r, byte = _gm_root(env, env[ps], op, "the source")
        env[k] = wrap(((r + 1) << ROOT_SHIFT) + byte)
    return step


def _from_address(cf: CompiledFunc, op: Op, dt: D.DType) -> Step:
    """i64 -> ptr: the argument holding that byte address, viewed as ``dt`` from there."""
    a, k = cf.slot(op.operands[0]), cf.slot(op.results[0])
    loc = op.loc

    def step(env: Env) -> None:
        v = env[a]
        if isinstance(v, Lanes):
            v = _same_for_all_blocks(v, op, "the address")
        addr = int(v)
        r, byte = (addr >> ROOT_SHIFT) - 1, addr & (_ROOT_SPAN - 1)
        roots = env[0].gm_roots
        if not 0 <= r < len(roots):
            # (GM the launch was not given: the host may own memory there, ptoisa's GM is
            # the launch's arrays only)
            raise NotExecutedYet(
                f"address {addr:#x} belongs to no GM pointer argument of this "
                "launch, and ptoisa's GM is the launch's arrays only (its addresses come from "
                "pto.ptrtoint / pto.castptr of a pointer argument; argument k spans [(k + 1) "
                f"<< {ROOT_SHIFT}, + its bytes])", op=op.name, loc=loc)
        if byte > roots[r].nbytes:
            raise ExecutionError(
                f"{op.name}: address {addr:#x} is not inside a GM pointer argument of this "
                "launch (ptoisa's addresses come from pto.ptrtoint / pto.castptr of a pointer "
                f"argument; argument k spans [(k + 1) << {ROOT_SHIFT}, + its bytes])", loc=loc)
        env[k] = _view(roots[r], byte, dt)
    return step


@handler("pto.ptrtoint")
def _ptrtoint(cf: CompiledFunc, op: Op) -> Step:
    pt = op.operands[0].type
    _elem(pt, op, "the source")
    if not isinstance(op.results[0].type, T.IntegerType):
        raise VerifyError(f"result must be an integer, got {op.results[0].type}", op=op.name,
                          loc=op.loc)
    if not _is_gm(pt):
        _chip_space(op, pt)  # type: ignore[arg-type]
        return _chip_cast(cf, op, pt, op.results[0].type, _elem(pt, op, "the source"))
    return _to_address(cf, op)


@handler("pto.inttoptr")
def _inttoptr(cf: CompiledFunc, op: Op) -> Step:
    rt = op.results[0].type
    dt = _elem(rt, op, "the result")
    res = op.results[0]
    # PTOAS: an integer-derived pointer is only ever the pointer of a scalar load / store
    for user in cf.op.walk():
        for i, v in enumerate(user.operands):
            if v is res and (user.name, i) not in (("pto.load_scalar", 0),
                                                   ("pto.store_scalar", 1)):
                where = f" at {user.loc.line}:{user.loc.col}" if user.loc else ""
                raise VerifyError(
                    "the result of pto.inttoptr may only be the pointer of pto.load_scalar / "
                    f"pto.store_scalar, not an operand of '{user.name}'{where}", op=op.name,
                    loc=op.loc)
    if not _is_gm(rt):
        return _on_chip(op, rt)
    return _from_address(cf, op, dt)


@handler("pto.castptr")
def _castptr(cf: CompiledFunc, op: Op) -> Step:
    st, rt = op.operands[0].type, op.results[0].type
    ints = (T.IntegerType, T.IndexType)
    if isinstance(st, ints) and isinstance(rt, ints):
        raise VerifyError("integer-to-integer casts are not castptr's (use arith casts)",
                          op=op.name, loc=op.loc)
    for t in (st, rt):
        if not isinstance(t, (T.PtrType, *ints)):
            raise VerifyError(f"casts between integers and !pto.ptr only, got {t}",
                              op=op.name, loc=op.loc)
    if isinstance(st, T.PtrType) and isinstance(rt, T.PtrType):
        if (st.space or "gm") != (rt.space or "gm"):
            raise VerifyError(f"a cast between memory spaces ({st.space or 'gm'} -> "
                              f"{rt.space or 'gm'}) is not allowed", op=op.name, loc=op.loc)
    for t in (st, rt):
        if isinstance(t, T.PtrType):
            dt = _elem(t, op, "the pointer")
    for t in (st, rt):
        if isinstance(t, T.PtrType) and not _is_gm(t):
            return _chip_cast(cf, op, st, rt, dt)
    if isinstance(rt, ints):
        return _to_address(cf, op)
    if isinstance(st, ints):
        return _from_address(cf, op, dt)
    ps, k = cf.slot(op.operands[0]), cf.slot(op.results[0])
    loc = op.loc

    def step(env: Env) -> None:  # ptr -> ptr: the same bytes as the new element type
        p = env[ps]
        if not isinstance(p, np.ndarray):
            raise ExecutionError(f"{op.name}: the source is not a GM pointer (got "
                                 f"{type(p).__name__})", loc=loc)
        if p.dtype == dt.np:
            env[k] = p
            return
        try:
            r, byte = _root_of(env, p)
        except ExecutionError as e:
            raise e.with_loc(loc) from None
        env[k] = _view(env[0].gm_roots[r], byte, dt)
    return step


# ---- one element through a pointer ------------------------------------------------------------

def _scalar_of(op: Op, pt: Any, vt: Any, what: str) -> D.DType:
    """The element type of pointer type ``pt``; the scalar ``what`` (of type ``vt``) a
    load_scalar / store_scalar moves through it must have it."""
    dt = _elem(pt, op, "the pointer")
    if vt != pt.dtype and not isinstance(vt, T.UnknownType):
        raise VerifyError(f"{what} type {vt} must be the pointer's element type "
                          f"{pt.dtype}", op=op.name, loc=op.loc)
    return dt


def _element_at(env: Env, p: Any, off: Any, dt: D.DType, op: Op) -> np.ndarray:
    """The one-element view of a UB pointer's byte at ``p + off`` elements (the machine's UB
    bytes, micro-isa/18 "Scalar-Pipeline Memory Operations")."""
    if not isinstance(p, Ptr) or p.space != "ub":
        raise ExecutionError(f"operation '{op.name}' cannot be executed by ptoisa yet on "
                             f"{p!r} (of the on-chip pointers, UB ones are executed)",
                             loc=op.loc)
    if isinstance(off, Lanes):
        off = _same_for_all_blocks(off, op, "the offset")
    at = p.addr + int(off) * dt.itemsize
    # (a scalar access is no instruction an observer sees: not told, see docs/sanitizer.md)
    return buffer_bytes(env[0].machine, "ub", at, dt.itemsize, "the scalar",
                        role=None).view(dt.np)


def _ub_load(cf: CompiledFunc, op: Op, dt: D.DType) -> Step:
    ps, os_, k = cf.slot(op.operands[0]), cf.slot(op.operands[1]), cf.slot(op.results[0])
    read = _int_reader(dt) if not dt.is_float else (lambda x: x)

    def step(env: Env) -> None:
        env[k] = read(_element_at(env, env[ps], env[os_], dt, op)[0])
    return step


def _ub_store(cf: CompiledFunc, op: Op, dt: D.DType) -> Step:
    vs, ps, os_ = (cf.slot(v) for v in op.operands[:3])
    w = None if dt.is_float else 8 * dt.itemsize

    def step(env: Env) -> None:
        v = env[vs]
        if isinstance(v, Lanes):
            v = _same_for_all_blocks(v, op, "the value")
        _element_at(env, env[ps], env[os_], dt, op)[0] = _storable(v, dt, w)
    return step


@handler("pto.load_scalar")
def _load_scalar(cf: CompiledFunc, op: Op) -> Step:
    pt = op.operands[0].type
    dt = _scalar_of(op, pt, op.results[0].type, "result")
    if not _is_gm(pt):
        if getattr(pt, "space", None) == "ub" and len(op.operands) == 2:
            return _ub_load(cf, op, dt)
        return _on_chip(op, pt)
    ps, os_, k = cf.slot(op.operands[0]), cf.slot(op.operands[1]), cf.slot(op.results[0])
    is_int = not dt.is_float
    read = _int_reader(dt) if is_int else (lambda x: x)
    npt = dt.np

    loc = op.loc

    def step(env: Env) -> None:
        if not env[0].machine.values:  # a timing-only run: the value was never computed
            raise ExecutionError(needs_values("pto.load_scalar").message,
                                 op="pto.load_scalar", loc=loc)
        p, off = env[ps], env[os_]
        if type(off) is int and type(p) is np.ndarray and p.dtype == npt and 0 <= off < p.size:
            env[k] = read(p[off])  # (the common case)
            return
        a, i = _index_of(env, p, off, dt, op, "pointer")
        if isinstance(i, np.ndarray):
            vals = a[i]
            env[k] = vals.astype(np.int64).view(Lanes) if is_int else vals
        else:
            env[k] = read(a[i])
    return step


def _storable(v: Any, dt: D.DType, w: int | None) -> Any:
    """A value of the interpreter as an element of type ``dt``."""
    if isinstance(v, np.ndarray):
        return (np.asarray(v, np.int64) if w else np.asarray(v)).astype(dt.np)
    if dt.np == np.bool_:
        return np.bool_(int(v) & 1)
    if w:
        iv = int(v)
        return dt.np.type(arith.signed(iv, w) if dt.is_signed else arith.unsigned(iv, w))
    return dt.np.type(v)


@handler("pto.store_scalar")
def _store_scalar(cf: CompiledFunc, op: Op) -> Step:
    pt = op.operands[1].type
    dt = _scalar_of(op, pt, op.operands[0].type, "value")
    if not _is_gm(pt):
        if getattr(pt, "space", None) == "ub" and len(op.operands) == 3:
            return _ub_store(cf, op, dt)
        return _on_chip(op, pt)
    vs, ps, os_ = (cf.slot(v) for v in op.operands[:3])
    w = None if dt.is_float else 8 * dt.itemsize
    loc = op.loc

    def step(env: Env) -> None:
        p, off, v = env[ps], env[os_], env[vs]
        a, i = _index_of(env, p, off, dt, op, "pointer")
        lazy.gm_barrier(env[0].machine, a)  # tiles still reading these bytes in place copy first
        try:
            x = _storable(v, dt, w)
        except (TypeError, ValueError, OverflowError):
            raise ExecutionError(f"{op.name}: cannot store {v!r} as {dt.name}", loc=loc) \
                from None
        if isinstance(x, np.ndarray) and not isinstance(i, np.ndarray):
            x = x.reshape(-1)[-1]  # every block stores to one element: the last one's stays
        a[i] = x
    return step


# ---- event-id arrays --------------------------------------------------------------------------

def _array_len(t: T.Type, op: Op) -> int:
    m = re.fullmatch(r"!pto\.eventid_array<\s*(\d+)\s*>", str(t))
    if m is None:
        raise VerifyError(f"expected !pto.eventid_array<N>, got {t}", op=op.name, loc=op.loc)
    return int(m.group(1))


@handler("pto.declare_eventid_array")
def _declare_eventid_array(cf: CompiledFunc, op: Op) -> Step:
    n = _array_len(op.results[0].type, op)
    k = cf.slot(op.results[0])

    def step(env: Env) -> None:
        env[k] = [None] * n  # a fresh array each time the declaration runs
    return step


def _slot_index(env: Env, arr: Any, i: Any, op: Op) -> int:
    if isinstance(i, Lanes):
        i = _same_for_all_blocks(i, op, "the index")
    i = int(i)
    if not isinstance(arr, list):
        raise ExecutionError(f"{op.name}: not an event-id array (got {type(arr).__name__})",
                             loc=op.loc)
    if not 0 <= i < len(arr):
        raise ExecutionError(f"{op.name}: index {i} outside the event-id array of "
                             f"{len(arr)}", loc=op.loc)
    return i


@handler("pto.eventid_array_get")
def _eventid_array_get(cf: CompiledFunc, op: Op) -> Step:
    _array_len(op.operands[0].type, op)
    a, i, k = cf.slot(op.operands[0]), cf.slot(op.operands[1]), cf.slot(op.results[0])

    def step(env: Env) -> None:
        arr = env[a]
        j = _slot_index(env, arr, env[i], op)
        if arr[j] is None:
            raise ExecutionError(f"{op.name}: element {j} read before any "
                                 "pto.eventid_array_set wrote it", loc=op.loc)
        env[k] = arr[j]
    return step


@handler("pto.eventid_array_set")
def _eventid_array_set(cf: CompiledFunc, op: Op) -> Step:
    _array_len(op.operands[0].type, op)
    a, i, v = (cf.slot(x) for x in op.operands[:3])

    def step(env: Env) -> None:
        arr = env[a]
        arr[_slot_index(env, arr, env[i], op)] = env[v]
    return step

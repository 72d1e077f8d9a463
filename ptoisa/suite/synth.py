"""The inputs ``ptoisa suite`` makes up for a file without goldens (a model sample, a lit
file, a frontend's kernel), and the search for inputs the program can run with.

A function run alone gets its arguments from a *plan*: a value for each integer argument,
and how the integer arrays are filled. Pointer arguments are arrays as large as the program
reaches through them (its ``make_tensor_view`` shapes and strides, ``load_scalar`` /
``store_scalar`` indices and ``addptr`` offsets, evaluated under the plan's values, block 0 of
one block); on-chip pointer arguments (``!pto.ptr<T, ub>`` ...) are pointers into the core's
own buffer (each one 256-byte register into its share of the buffer: a load PTOAS lets
read before its pointer, at a negative offset, reads the buffer); a
``partition_tensor_view`` argument of a static shape is an array of that shape;
a ``tile_buf`` argument the array of its whole shape (a ``?`` valid dimension the whole one:
``Program.run`` makes the tile on the core's machine); a VMI vector or mask (``!pto.vmi.vreg``,
``!pto.vmi.mask``) or a vector or predicate register (``!pto.vreg``, ``!pto.mask``) argument
a value of that type, its lanes made up as arrays are, its mask bits random; a builtin
``vector<4xi16>`` argument an array of its shape.

A wait on a signal that nothing in the run sets (TWAIT in a single process: only another rank
or process could set it) makes the run start again with those signal words preset to a value
the wait accepts (:class:`Presets`, once per word; the verdict names them).

The plans are tried in order (:func:`plans`): the values the arguments' uses suggest (an
offset or an index 0, a view extent the largest constant size of the function's partitions,
a count or a valid size 1), the old default (every integer 16), the guess with counts of 2 or
extents of the largest index constant, then integer arrays in [0, 4) (they are often indices)
and the same value for every argument (0, 1, that largest size); integer arrays are in
[-8, 8) unless said. The first plan under which the run completes and every loop it reaches
(whose bounds an input changes) runs at least once is kept; when no plan makes some loop run,
the first run with the fewest such loops is kept and the verdict says which loops never ran.
When no plan runs, the failure reported is the one of the run that got furthest (most
instructions): a program that fails under every candidate fails with its own error.
Arrays of more than ``RANDOM_ELEMS`` elements are zeros (pages the OS maps when touched).
"""

from __future__ import annotations

import contextlib
import re
import time
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import PtoError

#: bytes an on-chip pointer argument starts into its share of the buffer (one register)
_HEADROOM = 256
#: elements of a pointer argument whose reach could not be evaluated
DEFAULT_ELEMS = 1 << 20
#: most elements the suite gives one synthesised pointer argument
MAX_ELEMS = 1 << 30
#: most elements of an argument filled with made-up values: a larger one is zeros (pages the
#: OS gives when first touched: a 1 GiB weight a kernel reads a few tiles of costs those)
RANDOM_ELEMS = 1 << 22
#: the value of an integer argument in the default plan
DEFAULT_INT = 16
#: the most plans tried, and the seconds a file's search may take before it stops trying
MAX_PLANS = 12
SEARCH_SECONDS = 40.0

_INT_OPS: dict[str, Callable[[int, int], int]] = {
    "arith.addi": lambda a, b: a + b, "arith.subi": lambda a, b: a - b,
    "arith.muli": lambda a, b: a * b,
    "arith.divsi": lambda a, b: int(a / b), "arith.divui": lambda a, b: a // b,
    "arith.floordivsi": lambda a, b: a // b,
    "arith.ceildivsi": lambda a, b: -(-a // b), "arith.ceildivui": lambda a, b: -(-a // b),
    "arith.remsi": lambda a, b: int(np.fmod(a, b)), "arith.remui": lambda a, b: a % b,
    "arith.maxsi": max, "arith.minsi": min, "arith.maxui": max, "arith.minui": min,
}
_CASTS = ("arith.index_cast", "arith.index_castui", "arith.extsi", "arith.extui",
          "arith.trunci")
_LAUNCH = ("pto.get_block_idx", "pto.get_block_num", "pto.get_subblock_idx",
           "pto.get_subblock_num")


@dataclass(frozen=True)
class Plan:
    """Values for one try: ``scalars`` (argument name -> value; an argument not named gets
    ``default``), integer arrays ``signed`` ([-8, 8)) or not ([0, 4)); with ``distinct``
    the lanes of integer vector arguments are 1..N in a random order (indices without repeats,
    divisors without a zero)."""

    scalars: tuple[tuple[str, int], ...] = ()
    default: int = DEFAULT_INT
    signed: bool = True
    distinct: bool = False

    def value(self, name: str) -> int:
        return dict(self.scalars).get(name, self.default)

    def describe(self, names: list[str]) -> str:
        said = [f"%{n}={self.value(n)}" for n in names]
        if not self.signed:
            said.append("integer arrays in [0, 4)")
        if self.distinct:
            said.append("integer vector lanes 1..N in a random order")
        return ", ".join(said)


@dataclass
class Tried:
    """What one plan's run did: its error (None: it completed), the instructions it ran, the
    loops it reached that never ran their body."""

    plan: Plan
    error: Exception | None = None
    executed: int = 0
    idle_loops: list[Any] = field(default_factory=list)


# ---- integers the function computes before it runs -----------------------------------------

def known_ints(cf: Any, plan: Plan | None, launch: dict[str, int]) -> dict[int, int]:
    """id(value) -> the integer it holds, for the values computed from constants, the plan's
    integer arguments (None: the arguments are not known) and the launch coordinates
    (``launch``: op name -> value) by integer arithmetic: what can be known of the function
    before it runs."""
    from ..ir import types as T

    known: dict[int, int] = {}
    for vid, slot in cf.slots.items():
        c = cf.consts.get(slot)
        if isinstance(c, (int, np.integer)) and not isinstance(c, bool):
            known[vid] = int(c)
    for a in cf.op.regions[0].block.args:
        if plan is not None and isinstance(a.type, (T.IntegerType, T.IndexType)) \
                and not _is_i1(a.type):
            known[id(a)] = plan.value(a.name)
    for op in cf.op.walk():
        if not op.results:
            continue
        if op.name in _LAUNCH:
            known[id(op.results[0])] = launch[op.name]
            continue
        vals = [known.get(id(v)) for v in op.operands]
        if None in vals:
            continue
        try:
            if op.name in _CASTS and len(vals) == 1:
                known[id(op.results[0])] = vals[0]  # type: ignore[assignment]
            elif op.name in _INT_OPS and len(vals) == 2:
                known[id(op.results[0])] = _INT_OPS[op.name](*vals)  # type: ignore[arg-type]
        except ZeroDivisionError:
            continue
    return known


def _is_i1(t: Any) -> bool:
    from ..ir import types as T

    return isinstance(t, T.IntegerType) and t.width == 1


def _launches(mixed: bool) -> list[dict[str, int]]:
    """The launch coordinates a run of one block has (both vector sub-blocks when mixed)."""
    subs = (0, 1) if mixed else (0,)
    return [{"pto.get_block_idx": 0, "pto.get_block_num": 1, "pto.get_subblock_idx": s,
             "pto.get_subblock_num": len(subs)} for s in subs]


def reach(cf: Any, ptr: Any, known: dict[int, int]) -> tuple[int, bool]:
    """(elements pointer ``ptr`` is known to reach, whether some use's reach is unknown): the
    views made on it (shape and strides), the elements ``load_scalar`` / ``store_scalar``
    index, and what pointers ``addptr`` moves from it reach."""
    from ..interp.views import _kw_list

    need, unknown = 0, False

    def at_least(n: int | None) -> None:
        nonlocal need, unknown
        if n is None:
            unknown = True
        else:
            need = max(need, n)

    for op in cf.op.walk():
        ops = op.operands
        if op.name == "pto.store_scalar" and len(ops) >= 3 and ops[1] is ptr:
            i = known.get(id(ops[2]))  # store_scalar %v, %p[%i]
            at_least(None if i is None else i + 1)
        if not ops or ops[0] is not ptr:
            continue
        if op.name == "pto.make_tensor_view":
            shape, strides = ([known.get(id(ops[i])) for i in _kw_list(op, key) or []]
                              for key in ("shape", "strides"))
            if None in shape or None in strides or len(shape) != len(strides):
                at_least(None)
            elif 0 not in shape:
                at_least(1 + sum((n - 1) * s for n, s in  # type: ignore[operator]
                                 zip(shape, strides, strict=True)))
        elif op.name == "pto.load_scalar" and len(ops) == 2:
            i = known.get(id(ops[1]))
            at_least(None if i is None else i + 1)
        elif op.name == "pto.addptr" and len(ops) == 2 and op.results:
            off = known.get(id(ops[1]))
            more, unk = reach(cf, op.results[0], known)
            unknown |= unk
            if off is None:
                at_least(None)
            elif more:
                at_least(off + more)
    return need, unknown


# ---- what the integer arguments are used for -----------------------------------------------

def _uses(cf: Any) -> dict[int, list[tuple[Any, int]]]:
    out: dict[int, list[tuple[Any, int]]] = {}
    for op in cf.op.walk():
        for i, v in enumerate(op.operands):
            out.setdefault(id(v), []).append((op, i))
    return out


def _role(op: Any, i: int) -> str | None:
    """What operand ``i`` of ``op`` is to the program (None: a value computed on)."""
    from ..interp.views import _kw_list

    name = op.name
    if name in _INT_OPS or name in _CASTS:
        return None
    if name == "pto.make_tensor_view":
        return "extent" if i > 0 else "other"
    if name == "pto.partition_view":
        return "offset" if i in (_kw_list(op, "offsets") or []) else "size"
    if name in ("pto.load_scalar", "pto.addptr", "pto.local_array_get") and i > 0:
        return "offset"
    if name in ("pto.store_scalar", "pto.local_array_set") and i > 1:
        return "offset"
    if name == "scf.for":
        return ("offset", "count")[i] if i < 2 else "other"
    if name in ("pto.alloc_tile", "pto.set_validshape", "pto.tile_set_valid"):
        return "valid"
    return "other"


def roles(cf: Any) -> dict[str, set[str]]:
    """Integer argument name -> what its value (and what is computed from it) is used as:
    ``offset`` (an offset or index), ``extent`` (a view's shape or stride), ``count`` (a loop
    bound), ``size`` / ``valid`` (a partition's or a tile's size), ``other``."""
    uses = _uses(cf)
    out: dict[str, set[str]] = {}
    for a in cf.op.regions[0].block.args:
        from ..ir import types as T

        if not isinstance(a.type, (T.IntegerType, T.IndexType)) or _is_i1(a.type):
            continue
        got: set[str] = set()
        todo, seen = [a], {id(a)}
        while todo:
            v = todo.pop()
            for op, i in uses.get(id(v), ()):
                r = _role(op, i)
                if r is not None:
                    got.add(r)
                    continue
                for res in op.results:
                    if id(res) not in seen:
                        seen.add(id(res))
                        todo.append(res)
        out[a.name] = got
    return out


def full_valid(cf: Any) -> dict[str, int]:
    """Integer argument name -> the largest dimension of a tile whose valid rows or columns it
    is directly (``alloc_tile valid_row = %arg``): the tile used whole."""
    from ..interp.views import _kw_list
    from ..ir import types as T

    args = {id(a): a.name for a in cf.op.regions[0].block.args}
    out: dict[str, int] = {}
    for op in cf.op.walk():
        if op.name != "pto.alloc_tile" or not op.results:
            continue
        t = op.results[0].type
        if not isinstance(t, T.TileBufType):
            continue
        for key, dim in (("valid_row", t.rows), ("valid_col", t.cols)):
            for i in _kw_list(op, key) or []:
                n = args.get(id(op.operands[i]))
                if n is not None:
                    out[n] = max(out.get(n, 0), int(dim))
    return out


def largest_size(cf: Any) -> int:
    """The largest constant size of a partition view of the function (16 without any)."""
    from ..interp.views import _kw_list

    best = 0
    for op in cf.op.walk():
        if op.name == "pto.partition_view":
            for i in _kw_list(op, "sizes") or []:
                c = cf.consts.get(cf.slots.get(id(op.operands[i])))
                if isinstance(c, (int, np.integer)):
                    best = max(best, int(c))
    return best or DEFAULT_INT


def largest_index(cf: Any) -> int:
    """The largest constant of type ``index`` of the function (16 without any)."""
    from ..ir import types as T

    best = 0
    for op in cf.op.walk():
        if op.name == "arith.constant" and op.results \
                and isinstance(op.results[0].type, T.IndexType):
            c = cf.consts.get(cf.slots.get(id(op.results[0])))
            if isinstance(c, (int, np.integer)):
                best = max(best, int(c))
    return best or DEFAULT_INT


def guess(r: set[str], extent: int, count: int = 1, counts_first: bool = False) -> int:
    """The value an argument used as ``r`` most likely runs with (``extent`` for a view's
    extent, ``count`` for a loop bound or a size; a count that is also an offset is 0 unless
    ``counts_first``)."""
    if "extent" in r:
        return extent
    if counts_first and "count" in r:
        return count
    if "offset" in r:
        return 0
    if r & {"count", "valid", "size"}:
        return count
    return DEFAULT_INT


def plans(cfs: list[Any]) -> list[Plan]:
    """The plans to try for the functions ``cfs`` (run together), in order, without
    repeats: the uses' guess, the default, the guess with counts of 2 (a loop from 1 runs;
    then also for a count that is an offset too), with a tile's valid size its whole
    dimension, or with extents the largest index constant (a view that holds every offset the
    function computes), then integer arrays in [0, 4) and the same value for every
    argument."""
    rs: dict[str, set[str]] = {}
    for cf in cfs:
        for n, r in roles(cf).items():
            rs.setdefault(n, set()).update(r)
    big = max(largest_size(cf) for cf in cfs)
    huge = max(largest_index(cf) for cf in cfs)
    names = sorted(rs)

    def guessed(extent: int, count: int = 1, first: bool = False
                ) -> tuple[tuple[str, int], ...]:
        return tuple((n, guess(r, extent, count, first)) for n, r in sorted(rs.items()))

    whole: dict[str, int] = {}
    for cf in cfs:
        for n, d in full_valid(cf).items():
            whole[n] = max(whole.get(n, 0), d)
    tiles = tuple((n, whole.get(n, v)) for n, v in guessed(big))
    out: list[Plan] = []
    seen: set[tuple[Any, ...]] = set()
    for p in (Plan(guessed(big)), Plan(), Plan(guessed(big, 2)), Plan(guessed(big, 2, True)),
              Plan(tiles), Plan(guessed(huge)),
              Plan(guessed(big), signed=False), Plan(default=0, signed=False),
              Plan(default=1, signed=False), Plan(default=big, signed=False),
              Plan(signed=False), Plan(default=0)):
        key = (tuple(p.value(n) for n in names), p.signed)
        if key not in seen:
            seen.add(key)
            out.append(p)
    if any(_int_lanes(t) for cf in cfs for _, t, _ in cf.args):
        out.insert(1, Plan(guessed(big), distinct=True))
    return out[:MAX_PLANS]


def _int_lanes(t: Any) -> bool:
    """Is ``t`` a VMI vector or vector register type of integer lanes?"""
    from ..interp.value_args import register_spec
    from ..vector.logical import VmiSpec
    from ..vector.regs import VRegSpec

    try:
        spec = register_spec(t)
    except PtoError:
        return False
    return isinstance(spec, (VmiSpec, VRegSpec)) and spec.dtype.is_int


# ---- arguments -----------------------------------------------------------------------------

def make_args(cf: Any, plan: Plan, target: Any, mixed: bool,
              zeroed: list[str] | None = None) -> tuple[list[Any] | None, str]:
    """Arguments for the compiled function ``cf`` under ``plan``; (None, why) when an argument
    cannot be made up. ``zeroed`` is told the arguments of more than ``RANDOM_ELEMS``
    elements (zeros)."""
    zeroed = [] if zeroed is None else zeroed
    from ..interp import bridge
    from ..interp.value_args import register_spec
    from ..ir import types as T
    from ..vector.regs import SPACES, Ptr

    knowns = [known_ints(cf, plan, launch) for launch in _launches(mixed)]
    block = cf.op.regions[0].block
    chips = [a for a in block.args if (isinstance(a.type, T.PtrType)
                                       and a.type.space not in (None, "gm"))
             or (isinstance(a.type, T.MemRefType) and bridge.memref_space(a.type) != "gm"
                 and not _is_tile(a.type, target))]
    args: list[Any] = []
    for a in block.args:
        t, n = a.type, a.name
        if a in chips:
            space = t.space if isinstance(t, T.PtrType) else bridge.memref_space(t)
            if space not in SPACES:
                return None, f"%{n}: a pointer into unknown space '{space}'"
            try:
                dt = bridge.elem_dtype(t.dtype)
            except (PtoError, KeyError, TypeError, ValueError, AttributeError):
                return None, f"%{n}: no numpy type for {t}"
            same = [c for c in chips if SPACES.get(_space(c.type)) == SPACES[space]]
            share = target.buffer_size(SPACES[space]) // len(same) // 512 * 512
            args.append(Ptr(space, same.index(a) * share + (_HEADROOM if share > 2 * _HEADROOM
                                                            else 0), dt))
        elif isinstance(t, T.PtrType) or (isinstance(t, T.MemRefType)
                                          and bridge.memref_space(t) == "gm"):
            elems = 0
            for known in knowns:
                need, unknown = reach(cf, a, known)
                elems = max(elems, need, DEFAULT_ELEMS if unknown or not need else 0)
            if elems > MAX_ELEMS:
                return None, f"%{n}'s views reach {elems} elements (more than {MAX_ELEMS})"
            arr = _array(t.dtype, elems, n, plan.signed)
            if elems > RANDOM_ELEMS:
                zeroed.append(f"%{n} ({elems} elements)")
            if arr is None:
                return None, f"%{n}: no numpy type for {t}"
            args.append(arr)
        elif isinstance(t, T.PartitionTensorViewType) and None not in t.shape:
            arr = _array(t.dtype, int(np.prod(t.shape)), n, plan.signed)
            if arr is None:
                return None, f"%{n}: no numpy type for {t}"
            args.append(arr.reshape(t.shape))
        elif _is_i1(t):
            args.append(0)
        elif isinstance(t, (T.IntegerType, T.IndexType)):
            args.append(plan.value(n))
        elif isinstance(t, T.FloatType):
            args.append(0.5)
        elif isinstance(t, (T.TileBufType, T.MemRefType)):  # (an on-chip one: a tile)
            try:
                tile = bridge.tile_spec_of(t, target)
            except PtoError as e:
                return None, f"argument %{n} of type {t} cannot be made up ({e.message})"
            assert tile is not None
            got = _values(tile.dtype, tile.rows * tile.cols, n, plan.signed)
            if got is None:
                return None, f"argument %{n} of type {t}: no made-up values of {tile.dtype.name}"
            args.append(got.reshape(tile.rows, tile.cols))  # (a ? valid dim: the whole one)
        elif (vec := _vector_shape(t)) is not None:
            got = _values(vec[1], int(np.prod(vec[0])), n, plan.signed)
            if got is None:
                return None, f"argument %{n} of type {t}: no made-up values of {vec[1].name}"
            args.append(got.reshape(vec[0]))
        else:
            try:
                reg = register_spec(t)
            except PtoError as e:
                return None, f"argument %{n} of type {t} cannot be made up ({e.message})"
            if reg is None:
                return None, f"argument %{n} of type {t} cannot be made up"
            value = _register(reg, n, plan.signed, plan.distinct)
            if value is None:
                return None, f"argument %{n} of type {t}: no made-up values of its lanes"
            args.append(value)
    return args, ""


def _vector_shape(t: Any) -> tuple[tuple[int, ...], Any] | None:
    """(shape, element dtype) of a builtin ``vector<4xi16>`` type of static shape (a value
    the kernel gets whole, as TMRGSORT's executed-count list), else None."""
    from ..dtypes import dtype
    from ..ir import types as T

    if not isinstance(t, T.OpaqueType) or t.dialect_name != "vector":
        return None
    m = re.fullmatch(r"vector<((?:\d+x)+)(\w+)>", t.text)
    if m is None:
        return None
    try:
        return tuple(int(d) for d in m.group(1).split("x")[:-1]), dtype(m.group(2))
    except (PtoError, KeyError, TypeError, ValueError):
        return None


def _is_tile(t: Any, target: Any) -> bool:
    """Does the on-chip memref type ``t`` describe a tile (a static 2-D one)?"""
    from ..interp import bridge

    try:
        return bridge.tile_spec_of(t, target) is not None
    except PtoError:
        return False


def _space(t: Any) -> str | None:
    """The space an on-chip pointer or memref type names."""
    from ..interp import bridge
    from ..ir import types as T

    return t.space if isinstance(t, T.PtrType) else bridge.memref_space(t)


def _register(spec: Any, name: str, signed: bool, distinct: bool = False) -> Any:
    """A made-up value of a VMI vector / mask or vector / predicate register type: lanes as
    :func:`_values` makes them (integer ones 1..N in a random order when ``distinct``; N past
    the type's range wraps), mask bits random (seeded by the argument's name)."""
    from ..vector.logical import LMask, LVec, VmiMaskSpec, VmiSpec
    from ..vector.regs import GRANULARITY, VREG_BYTES, Mask, VReg, VRegSpec

    if isinstance(spec, (VmiSpec, VRegSpec)):
        if distinct and spec.dtype.is_int:
            rng = np.random.default_rng(zlib.crc32(name.encode()))
            lanes = rng.permutation(np.arange(1, spec.lanes + 1)).astype(spec.dtype.np)
        else:
            lanes = _values(spec.dtype, spec.lanes, name, signed)
        if lanes is None:
            return None
        return LVec(lanes) if isinstance(spec, VmiSpec) else VReg(lanes)
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    if isinstance(spec, VmiMaskSpec):
        return LMask(rng.integers(0, 2, spec.lanes).astype(np.bool_))
    n = VREG_BYTES // GRANULARITY[spec.gran]
    return Mask.of_lanes(rng.integers(0, 2, n).astype(np.bool_), spec.gran)


def _values(dt: Any, elems: int, name: str, signed: bool) -> np.ndarray | None:
    """``elems`` values of ptoisa dtype ``dt`` as :func:`_array` makes them; a float type kept
    as codes (hif8, packed pairs, 4-bit types) gets zeros, a finite value in every one of
    them (random codes may be NaN)."""
    if dt.is_float and not np.issubdtype(dt.np, np.floating) \
            and dt.np.kind not in "V":  # (ml_dtypes' floats are kind V)
        return np.zeros(elems, dt.np)
    return _random(dt.np, elems, name, signed)


def share(cfs: list[Any], arglists: list[Any]) -> None:
    """Make the functions of a pair take the same array for a pointer argument of the same
    name and type (the larger of the two), as a host launching both with one buffer would."""
    from ..ir import types as T

    arrays: dict[tuple[str, str], Any] = {}
    for cf, args in zip(cfs, arglists, strict=True):
        for (_, t, n), v in zip(cf.args, args, strict=True):
            if isinstance(t, T.PtrType) and isinstance(v, np.ndarray):
                key = (n, str(t))
                if key not in arrays or arrays[key].size < v.size:
                    arrays[key] = v
    for cf, args in zip(cfs, arglists, strict=True):
        for i, (_, t, n) in enumerate(cf.args):
            if (n, str(t)) in arrays and isinstance(args[i], np.ndarray):
                args[i] = arrays[(n, str(t))]


def _array(elem: Any, elems: int, name: str, signed: bool) -> np.ndarray | None:
    """``elems`` values of element type ``elem``, seeded by the argument's name: floats in
    [-1, 1), integers in [-8, 8) (``signed``) or [0, 4), booleans false; more than
    ``RANDOM_ELEMS`` elements zeros."""
    from ..interp import bridge

    try:
        dt = bridge.elem_dtype(elem).np
    except (PtoError, KeyError, TypeError, ValueError, AttributeError):
        return None
    return _random(dt, elems, name, signed)


def _random(dt: Any, elems: int, name: str, signed: bool) -> np.ndarray:
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    if dt == np.bool_ or elems > RANDOM_ELEMS:
        return np.zeros(elems, dt)
    if np.issubdtype(dt, np.integer):
        lo, hi = (-8, 8) if signed else (0, 4)
        return rng.integers(lo, hi, elems).astype(dt)
    return rng.uniform(-1, 1, elems).astype(dt)


class Presets:
    """Signal words set before a run: a TWAIT on a signal that only another rank or process
    sets (``SignalNeverSet``) can run alone once its words hold what that notify leaves there.
    Each word is set once: a wait the preset does not satisfy (the kernel reset the word, or
    waits again for more) is the run's failure."""

    #: the most signal words preset for one run
    MOST = 64

    def __init__(self) -> None:
        # (function index, argument index) -> {element index: value}
        self.words: dict[tuple[int, int], dict[int, int]] = {}
        self.names: dict[tuple[int, int], str] = {}

    def __bool__(self) -> bool:
        return bool(self.words)

    def add(self, err: Any, arglists: list[list[Any]], argdecls: list[Any]) -> bool:
        """Record the words ``err`` (a ``SignalNeverSet``) waits on, in the argument array
        that holds them; False when they are in no argument, or were preset already."""
        flat = err.flat
        for g, args in enumerate(arglists):
            for k, arr in enumerate(args):
                if not isinstance(arr, np.ndarray) or arr.itemsize != flat.itemsize \
                        or not np.shares_memory(arr, flat):
                    continue
                base = (flat.ctypes.data - arr.ctypes.data) // flat.itemsize
                got = self.words.setdefault((g, k), {})
                pos = [int(base + i) for i in err.idx]
                if all(got.get(p) == err.wanted for p in pos) \
                        or sum(map(len, self.words.values())) + len(pos) > self.MOST:
                    return False
                got.update(dict.fromkeys(pos, int(err.wanted)))
                self.names[(g, k)] = argdecls[g][k][2]
                return True
        return False

    def apply(self, arglists: list[list[Any]]) -> None:
        for (g, k), words in self.words.items():
            flat = arglists[g][k].reshape(-1)
            for p, v in words.items():
                flat[p] = v

    def describe(self) -> str:
        return ", ".join(
            f"%{self.names[key]} signal words {sorted(w)[:4]}{'...' if len(w) > 4 else ''} "
            f"preset to {sorted(set(w.values()))} (as another rank's notify leaves them)"
            for key, w in self.words.items())


# ---- runs ----------------------------------------------------------------------------------

class _Count:
    """An observer: the instructions a run executed."""

    def __init__(self) -> None:
        self.n = 0

    def __call__(self, rec: Any) -> None:
        self.n += 1

    def mark(self) -> int:
        """(observe.marks) the count before a lockstep attempt"""
        return self.n

    def rewind(self, mark: int) -> None:
        """(observe.rewind) the attempt was abandoned: its instructions run again per block"""
        self.n = mark


@contextlib.contextmanager
def loop_trips() -> Iterator[dict[int, tuple[Any, int]]]:
    """id(loop op) -> (the op, the most trips it started with) for the loops of the runs
    inside the block (each ``scf.for`` tells the launch's budget its trips as it starts:
    ``Context.spend``)."""
    from ..interp.compiler import Context

    trips: dict[int, tuple[Any, int]] = {}
    real = Context.spend

    def spend(self: Any, n: int, op: Any) -> None:
        old = trips.get(id(op))
        if old is None or n > old[1]:
            trips[id(op)] = (op, n)
        real(self, n, op)

    Context.spend = spend  # type: ignore[method-assign]
    try:
        yield trips
    finally:
        Context.spend = real  # type: ignore[method-assign]


def fixed_loops(cfs: list[Any], mixed: bool) -> set[int]:
    """id() of the loops of ``cfs`` whose bounds no input changes (constants, the launch
    coordinates of a one-block run): a loop of those that runs zero times does so whatever
    the suite chooses."""
    out: set[int] = set()
    for cf in cfs:
        knowns = [known_ints(cf, None, launch) for launch in _launches(mixed)]
        for op in cf.op.walk():
            if op.name == "scf.for" and all(id(v) in k for k in knowns
                                            for v in op.operands[:3]):
                out.add(id(op))
    return out


def attempt(run: Callable[[Plan], None], plan: Plan, fixed: set[int] | None = None) -> Tried:
    """Run ``run(plan)``, counting its instructions and the loops that never ran a trip
    (but those of ``fixed``)."""
    from ..observe import observing

    count = _Count()
    tried = Tried(plan)
    with loop_trips() as trips, observing(count):
        try:
            run(plan)
        except NotMade as e:  # (ranked below every run that started)
            tried.error, count.n = e, -1
        except PtoError as e:
            tried.error = e
    tried.executed = count.n
    tried.idle_loops = [op for op, n in trips.values()
                        if n == 0 and id(op) not in (fixed or ())]
    return tried


class NotMade(Exception):
    """An argument that cannot be made up (its message says which and why)."""


def search(run: Callable[[Plan], None], candidates: list[Plan],
           stop: Callable[[PtoError], bool], fixed: set[int] | None = None) -> list[Tried]:
    """Try ``candidates`` in order until a run completes with every loop it reaches running
    (or ``stop(error)`` says more tries cannot help, or the time is up); the tries made.
    ``fixed``: loops (by id) whose zero trips no input changes.
    An exception that is neither a PtoError nor a NotMade propagates."""
    t0 = time.monotonic()
    out: list[Tried] = []
    for plan in candidates:
        tried = attempt(run, plan, fixed)
        out.append(tried)
        if tried.error is None and not tried.idle_loops:
            break
        if isinstance(tried.error, PtoError) and stop(tried.error):
            break
        if time.monotonic() - t0 > SEARCH_SECONDS:
            break
    return out


#: an access outside a view, an argument's array, a local array or a buffer: what made-up
#: offsets and sizes cause, more often than not
OUT_OF_BOUNDS = re.compile(r"outside the view's extent|outside its argument|leave its argument|"
                           r"but the array has|outside the local array|leave the \w+ buffer|"
                           r"is outside the \w+ tile|outside \[")


def best(tries: list[Tried]) -> Tried:
    """The try to report: the first run that completed with the fewest loops that never ran,
    unless some loop never ran in it and a run that failed otherwise than out of bounds got
    further (the loop body it reached failed: a zero-trip run must not hide that); else the
    failure that got furthest (the earliest of equals)."""
    done = [t for t in tries if t.error is None]
    failed = [t for t in tries if t.error is not None
              and (not done or not OUT_OF_BOUNDS.search(str(getattr(t.error, "message", t.error))))]
    furthest = max(failed, key=lambda t: t.executed) if failed else None
    if done:
        ran = min(done, key=lambda t: len(t.idle_loops))
        if not ran.idle_loops or furthest is None or furthest.executed <= ran.executed:
            return ran
    assert furthest is not None
    return furthest

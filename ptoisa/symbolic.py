"""Symbolic integers for exporting an eager kernel to ``.pto`` (see :mod:`ptoisa.export`).

While :func:`ptoisa.export` traces a kernel, ``pto.get_block_idx()`` returns a :class:`SymInt`
and ``pto.range(n)`` yields one: an ``int`` (its value is the one of a representative block,
so the kernel runs normally) that also records how it was computed. ``+ - * // %`` with ints
and other SymInts, and ``pto.min`` / ``pto.max``, give SymInts again; the exporter turns the
recorded expression into ``arith`` ops. What the IR cannot express is a located
:class:`ExportError` (the kernel's file:line): branching on a SymInt (``if``, ``min()``,
comparisons whose result differs between blocks), using it as a Python integer (``range(b)``,
indexing), and operators other than the ones above.

Outside an export none of this exists: ``get_block_idx()`` is an int (or a ``Lanes`` vector in
a lockstep launch) and ``pto.range`` is ``range``.

:data:`TRACER` is the active exporter (None otherwise); ``Tile`` and ``GlobalTensor`` hand it
their symbolic valid extents, shapes and offsets when they are built. :data:`WATCH` is the
recorder of an eager execution plan (None otherwise): the same classes tell it when their data
passes to or from the kernel's Python.
"""

from __future__ import annotations

import builtins
import sys
from collections.abc import Iterator
from typing import Any

import numpy as np

from .errors import PtoError, SourceLoc
from .lockstep import Lanes

#: the active exporter (ptoisa.export.Tracer) while a kernel is traced, else None
TRACER: Any = None
#: while an eager launch records an execution plan (ptoisa/eager_plans.py), its recorder:
#: called with what the kernel did (``"tile.numpy()"``) when tile or GM data passes between
#: the kernel's Python and ptoisa outside an instruction (a replay would not see it); else None
WATCH: Any = None

_PACKAGE_DIR = __file__.rsplit("/", 1)[0]


class ExportError(PtoError):
    """A kernel does something that the exported ``.pto`` program cannot express."""


def user_loc() -> SourceLoc | None:
    """file:line of the innermost frame outside the ptoisa package (the kernel's line)."""
    f: Any = sys._getframe(1)
    while f is not None and f.f_code.co_filename.startswith(_PACKAGE_DIR):
        f = f.f_back
    if f is None:
        return None
    import linecache

    line = linecache.getline(f.f_code.co_filename, f.f_lineno).rstrip("\n")
    return SourceLoc(f.f_code.co_filename, f.f_lineno, len(line) - len(line.lstrip()) + 1, line)


def user_name(obj: Any) -> str | None:
    """The name of a local variable of the kernel's frame (or a caller's) bound to ``obj``."""
    f: Any = sys._getframe(1)
    while f is not None and f.f_code.co_filename.startswith(_PACKAGE_DIR):
        f = f.f_back
    for _ in builtins.range(3):
        if f is None:
            break
        for k, v in f.f_locals.items():
            if v is obj and not k.startswith("_"):
                return str(k)
        f = f.f_back
    return None


def called_from_user() -> bool:
    """Whether the caller of the function calling this is outside the ptoisa package."""
    f: Any = sys._getframe(3)
    return f is not None and not f.f_code.co_filename.startswith(_PACKAGE_DIR)


def fail(message: str) -> ExportError:
    """A located ExportError; the exporter also remembers it, in case the code that called
    ``__index__`` (numpy indexing, ...) replaces it with an error of its own."""
    err = ExportError(message, loc=user_loc())
    if TRACER is not None:
        TRACER.last_failure = err
    return err


Operand = "int | SymInt"


class SymInt:
    """An integer of an exported kernel that depends on the block index or a loop index.

    Not an ``int``: whatever needs a Python integer calls ``__index__``/``__int__``, which
    raise a located ExportError unless every block has the same value (``range(b)``,
    ``a[b]``); ``value`` is the representative value the traced run uses.

    ``node`` is the expression: ``("block",)``, ``("iv", loop)``, ``(op, a, b)`` with op one
    of add sub mul floordiv mod min max; ``vals`` the value in every block (None when it
    depends on a ``pto.range`` index); ``nonneg`` whether it is known to be >= 0."""

    __slots__ = ("value", "node", "vals", "nonneg")

    def __init__(self, value: int, node: tuple[Any, ...], vals: np.ndarray | None,
                 nonneg: bool) -> None:
        self.value = int(value)
        self.node = node
        self.vals = vals
        self.nonneg = nonneg

    # ---- arithmetic ---------------------------------------------------------------------
    def _bin(self, op: str, a: Any, b: Any) -> Any:
        if not _is_int(a) or not _is_int(b):
            return NotImplemented
        a = a if isinstance(a, SymInt) else int(a)
        b = b if isinstance(b, SymInt) else int(b)
        folded = _fold(op, a, b)
        if folded is not None:
            return folded
        va, vb = _vals(a), _vals(b)
        vals = None if va is None or vb is None else _NP[op](va, vb)
        x, y = concrete(a), concrete(b)
        if op in ("floordiv", "mod") and (y == 0 or (vb is not None and (vb == 0).any())):
            raise fail("division by zero in an index computation")
        value = _PY[op](x, y)
        nonneg = _nonneg(a) and _nonneg(b) if op != "sub" else False
        if op in ("floordiv", "mod") and not (_nonneg(b) and y > 0):
            nonneg = False
        if op == "min":
            nonneg = _nonneg(a) and _nonneg(b)
        if op == "max":
            nonneg = _nonneg(a) or _nonneg(b)
        if vals is not None and op == "sub":
            nonneg = bool((vals >= 0).all())
        return SymInt(value, (op, a, b), vals, nonneg)

    def __add__(self, o: Any) -> Any:
        return self._bin("add", self, o)

    def __radd__(self, o: Any) -> Any:
        return self._bin("add", o, self)

    def __sub__(self, o: Any) -> Any:
        return self._bin("sub", self, o)

    def __rsub__(self, o: Any) -> Any:
        return self._bin("sub", o, self)

    def __mul__(self, o: Any) -> Any:
        return self._bin("mul", self, o)

    def __rmul__(self, o: Any) -> Any:
        return self._bin("mul", o, self)

    def __floordiv__(self, o: Any) -> Any:
        return self._bin("floordiv", self, o)

    def __rfloordiv__(self, o: Any) -> Any:
        return self._bin("floordiv", o, self)

    def __mod__(self, o: Any) -> Any:
        return self._bin("mod", self, o)

    def __rmod__(self, o: Any) -> Any:
        return self._bin("mod", o, self)

    def __neg__(self) -> Any:
        return self._bin("sub", 0, self)

    def __pos__(self) -> Any:
        return self

    # ---- what the IR cannot express -----------------------------------------------------
    def _uniform(self, what: str) -> int:
        v = self.vals
        if v is not None and v.size and (v == v.flat[0]).all():
            return int(v.flat[0])
        raise fail(f"{what} of {self.describe()}: Python control flow and Python integers "
                   "cannot depend on the block index or a pto.range index in an exported "
                   "kernel (compute with + - * // %, pto.min, pto.max instead)")

    def describe(self) -> str:
        if self.vals is None:
            return "a value that depends on a pto.range loop index"
        flat = self.vals.reshape(-1)
        vals = ", ".join(str(x) for x in flat[:4].tolist())
        return (f"a value that differs between blocks ([{vals}"
                f"{', ...' if flat.size > 4 else ''}])")

    def _cmp(self, o: Any, name: str) -> bool:
        if not _is_int(o):
            return NotImplemented  # type: ignore[return-value]
        a, b = _vals(self), _vals(o)
        if a is not None and b is not None:
            r = _CMP[name](a, b)
            if r.size and (r == r.flat[0]).all():
                return bool(r.flat[0])
        raise fail(f"comparison ({name}) of {self.describe()}: Python control flow cannot "
                   "depend on the block index or a pto.range index in an exported kernel "
                   "(use pto.min / pto.max for clamping)")

    def __eq__(self, o: object) -> bool:
        return self._cmp(o, "==")

    def __ne__(self, o: object) -> bool:
        return self._cmp(o, "!=")

    def __lt__(self, o: Any) -> bool:
        return self._cmp(o, "<")

    def __le__(self, o: Any) -> bool:
        return self._cmp(o, "<=")

    def __gt__(self, o: Any) -> bool:
        return self._cmp(o, ">")

    def __ge__(self, o: Any) -> bool:
        return self._cmp(o, ">=")

    def __hash__(self) -> int:
        return hash(self.value)

    def __bool__(self) -> bool:
        return bool(self._uniform("truth value"))

    def __int__(self) -> int:
        return self._uniform("int()")

    def __index__(self) -> int:
        return self._uniform("use as a Python integer")

    def __float__(self) -> float:
        return float(self._uniform("float()"))

    def _unsupported(self, *_: Any) -> Any:
        raise fail(f"operator not supported on {self.describe()} in an exported kernel "
                   "(+ - * // % pto.min pto.max are)")

    __truediv__ = __rtruediv__ = __pow__ = __rpow__ = _unsupported
    __lshift__ = __rlshift__ = __rshift__ = __rrshift__ = _unsupported
    __and__ = __rand__ = __or__ = __ror__ = __xor__ = __rxor__ = _unsupported
    __abs__ = __invert__ = __divmod__ = __rdivmod__ = _unsupported

    def __repr__(self) -> str:
        return f"SymInt({self.value}, {self.describe()})"


def _is_int(x: Any) -> bool:
    return isinstance(x, (int, np.integer, SymInt)) and not isinstance(x, (bool, np.bool_))


def concrete(x: Any) -> Any:
    """The representative value of a SymInt (the traced run's); anything else unchanged."""
    return x.value if isinstance(x, SymInt) else x


def _vals(x: Any) -> np.ndarray | None:
    if isinstance(x, SymInt):
        return x.vals
    return np.asarray(int(x), np.int64)


def _nonneg(x: Any) -> bool:
    return x.nonneg if isinstance(x, SymInt) else int(x) >= 0


def _fold(op: str, a: Any, b: Any) -> Any:
    """x + 0, x - 0, x * 1, x // 1 are x; x * 0 is 0 (keeps exported index code short)."""
    sa, sb = isinstance(a, SymInt), isinstance(b, SymInt)
    if op == "add":
        if not sb and b == 0:
            return a
        if not sa and a == 0:
            return b
    if op == "sub" and not sb and b == 0:
        return a
    if op == "mul":
        if (not sb and b == 0) or (not sa and a == 0):
            return 0
        if not sb and b == 1:
            return a
        if not sa and a == 1:
            return b
    if op == "floordiv" and not sb and b == 1:
        return a
    return None


_PY = {"add": lambda x, y: x + y, "sub": lambda x, y: x - y, "mul": lambda x, y: x * y,
       "floordiv": lambda x, y: x // y, "mod": lambda x, y: x % y, "min": min, "max": max}
_NP = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "floordiv": np.floor_divide,
       "mod": np.mod, "min": np.minimum, "max": np.maximum}
_CMP = {"==": np.equal, "!=": np.not_equal, "<": np.less, "<=": np.less_equal,
        ">": np.greater, ">=": np.greater_equal}


def block_index(blocks: int) -> SymInt:
    """The block index of an exported kernel (its value: block 0's)."""
    return SymInt(0, ("block",), np.arange(blocks, dtype=np.int64), True)


# ---- helpers a kernel calls (exported to the package namespace) ----------------------------

def min(a: Any, b: Any) -> Any:  # noqa: A001 - the kernel-facing name: pto.min
    """``min(a, b)`` of two integers that may depend on the block index: a Python int, a
    per-block vector in a lockstep launch, ``arith.minsi`` when exported."""
    return _minmax("min", a, b)


def max(a: Any, b: Any) -> Any:  # noqa: A001 - pto.max
    """``max(a, b)``; see :func:`min`."""
    return _minmax("max", a, b)


def _minmax(op: str, a: Any, b: Any) -> Any:
    if isinstance(a, SymInt):
        return a._bin(op, a, b)
    if isinstance(b, SymInt):
        return b._bin(op, a, b)
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        r = (np.minimum if op == "min" else np.maximum)(a, b)
        return r.view(Lanes) if isinstance(r, np.ndarray) and r.ndim else r[()]
    return _PY[op](a, b)


def range(*args: Any) -> Iterator[Any]:  # noqa: A001 - the kernel-facing name: pto.range
    """``range(stop)`` / ``range(start, stop[, step])`` for a kernel loop that becomes one
    ``scf.for`` when the kernel is exported: the body is traced once with a symbolic loop
    index, so the body must not branch on it (a located error says so). Outside an export it
    is the built-in ``range``."""
    tracer = TRACER
    if tracer is None:
        # per-block bounds in a lockstep launch: __index__ raises BlockDivergence, and the
        # launch reruns the kernel block by block
        yield from builtins.range(*(a.__index__() for a in args))
        return
    yield from tracer.loop(args)

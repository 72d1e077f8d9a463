"""Export an eager kernel to the ``.pto`` program PTOAS compiles: ``pto.export(kernel, *args)``.

The kernel runs once, as block 0 of a ``blocks``-block launch, on copies of its arguments,
with an observer on the machine's one dispatch point (:meth:`ptoisa.isa.registry.Instr.run`):
every instruction it executes becomes an op of a ``func.func`` in :mod:`ptoisa.ir`, printed
by :func:`ptoisa.text.print_module` in DPS form. How the Python kernel maps onto the program:

* **arguments**: every numpy array argument becomes a ``!pto.ptr<dtype>`` parameter named as
  the kernel's parameter; every other argument (ints, floats, options) is a Python value the
  trace specialises on: it is baked into the program and is not a parameter.
* **block index**: ``pto.get_block_idx()`` is a symbolic integer (:class:`ptoisa.symbolic.SymInt`)
  that becomes ``pto.get_block_idx`` + ``arith.index_cast``; ``+ - * // %`` with ints and
  ``pto.min`` / ``pto.max`` become ``arith`` ops (``divsi``/``remsi`` where the operands are
  known to be non-negative, else ``floordivsi``). ``pto.get_block_num()`` is the constant
  ``blocks``.
* **loops**: a loop over ``pto.range(...)`` becomes one ``scf.for``: its body is traced once
  with a symbolic loop index (so it must not branch on it). A loop over the built-in ``range``
  is unrolled by the trace (its index is a plain int: the body may branch on it, e.g.
  ``if k == 0`` to start an accumulation), and the exporter then rolls repeated code back:
  **a run of three or more repetitions of the same op sequence (same ops, tiles, attributes
  and view sizes) whose GM views differ only by a constant offset step per repetition becomes
  one ``scf.for``** over the repetitions, the views' offsets ``o + k * step``. Iterations that
  differ (the ``k == 0`` one) stay before the loop; offsets without a constant step stay
  unrolled.
* **tiles**: each Tile the kernel uses is a ``pto.alloc_tile`` at the top of the function
  (with ``addr`` when the kernel placed it with TASSIGN, ``valid_row``/``valid_col`` for
  dynamic valid extents, which may depend on the block index: ``Dyn(pto.min(8, n - row0))``).
* **GM views**: each GlobalTensor is a ``pto.partition_view`` of a ``pto.make_tensor_view``
  over its argument: its element offset (a sum of multiples of the block index, loop indices
  and constants) is split over the view's dimensions by their strides, and dimensions of
  extent 1 that take no offset are dropped (a ``(1, 1, 1, R, C)`` view is 2-D).
* **instructions** are written in DPS form (``ins(...) outs(...)``, C++ operand order,
  template parameters as attributes); every op is bound back through the same bridge the
  interpreter uses, so an instruction whose PTOAS spelling the exporter cannot produce is an
  error rather than a wrong program. Flags and barriers (SET_FLAG / WAIT_FLAG /
  PIPE_BARRIER) are written as ``pto.set_flag`` / ``pto.wait_flag`` / ``pto.barrier``: the
  program synchronises as the kernel did. Events passed to intrinsics are left out (PTOAS
  inserts what they order); a kernel using both is refused.

What cannot be expressed is a located :class:`~ptoisa.symbolic.ExportError` at the kernel's
line: Python control flow on the block index or a ``pto.range`` index (``if``, ``min()``,
comparisons that differ between blocks), using them as Python ints, instructions that return
values to Python, GM views over arrays that are not kernel arguments, mixed cube/vector
kernels. Types are written once as aliases (``!T0 = !pto.tile_buf<...>``) at the top.

By default (``verify=True``) the exported program is checked for the target and run on the
example arguments, and its results must equal the eager kernel's bit for bit.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import numpy as np

from .. import symbolic as S
from ..errors import PtoError
from ..foreign import is_array_like, to_numpy
from ..ir import types as T
from ..memory import Machine, pop, push
from ..symbolic import ExportError
from ..targets import DEFAULT_TARGET, TargetLike
from .tracer import Tracer

__all__ = ["ExportError", "Tracer", "export", "with_aliases"]


# ---- aliases ---------------------------------------------------------------------------------

def with_aliases(text: str, types: list[T.Type]) -> str:
    """``text`` with every tile_buf type written once as ``!T0 = ...`` at the top (the parser
    reads type aliases; see docs)."""
    order: list[str] = []
    for t in types:
        s = str(t)
        if s not in order:
            order.append(s)
    if not order:
        return text
    head = []
    for k, s in enumerate(order):
        head.append(f"!T{k} = {s}")
        text = text.replace(s, f"!T{k}")
    return "\n".join(head) + "\n" + text


# ---- the entry point ---------------------------------------------------------------------------

def export(kernel: Callable[..., Any], *args: Any, blocks: int = 1,
           target: TargetLike = DEFAULT_TARGET,
           name: str | None = None, verify: bool = True, aliases: bool = True) -> str:
    """The ``.pto`` program of the eager ``kernel`` for ``kernel(*args)`` launched on
    ``blocks`` blocks of ``target`` (see :mod:`ptoisa.export` for what maps to what and what
    raises :class:`ExportError`). ``name``: the function name (default: the kernel's).
    ``verify``: check the program for ``target`` and compare a run of it with
    ``pto.launch(kernel, ...)`` on copies of ``args``, bit for bit. ``aliases``: write
    tile types once as ``!Tn = ...`` aliases."""
    from ..text import parse, print_module

    if isinstance(blocks, bool) or not isinstance(blocks, int) or blocks < 1:
        raise PtoError(f"blocks must be a positive integer, got {blocks!r}")
    fname = name or getattr(kernel, "__name__", "kernel")
    try:
        sig_names = list(inspect.signature(kernel).parameters)
    except (TypeError, ValueError):
        sig_names = []
    args = tuple(to_numpy(a, f"argument {k}")[0] if is_array_like(a) else a
                 for k, a in enumerate(args))  # torch / jax / ... arrays (ptoisa/arrays.py)
    copies = [np.array(a, copy=True) if isinstance(a, np.ndarray) else a for a in args]
    params = [(sig_names[k] if k < len(sig_names) else f"arg{k}", a)
              for k, a in enumerate(copies) if isinstance(a, np.ndarray)]
    tracer = Tracer(fname, params, blocks)
    m = Machine(target, lanes=1)
    m.block_idx = S.block_index(blocks)
    m.block_num = blocks
    m.quiet = True
    m.observers.append(tracer.observe)
    prev = S.TRACER
    S.TRACER = tracer
    push(m)
    try:
        with np.errstate(all="ignore"):
            kernel(*copies)
    except PtoError as e:
        if tracer.error is None or isinstance(e, ExportError):
            raise
    except (TypeError, IndexError, ValueError):
        if tracer.last_failure is None:
            raise
        raise tracer.last_failure from None  # numpy turned our error into its own
    finally:
        pop(m)
        S.TRACER = prev
    if tracer.error is not None:
        raise tracer.error
    mod = tracer.module()
    text = print_module(mod, "dps")
    if aliases:
        tile_types = [v.type for _, v in tracer.tiles.values()]
        text = with_aliases(text, tile_types)
    parse(text, f"<export of {fname}>")  # the printed program reads back
    if verify:
        _verify(kernel, args, text, fname, blocks, target)
    return text


def _verify(kernel: Callable[..., Any], args: tuple[Any, ...], text: str, fname: str,
            blocks: int, target: TargetLike) -> None:
    from .. import grid, interp

    eager = [np.array(a, copy=True) if isinstance(a, np.ndarray) else a for a in args]
    grid.launch(kernel, *eager, blocks=blocks, target=target)
    arrays = [np.array(a, copy=True) for a in args if isinstance(a, np.ndarray)]
    try:
        prog = interp.load(text, target=target)
        getattr(prog, fname)(*arrays, blocks=blocks)
    except PtoError as e:  # a program the exporter should not have written: say so
        raise ExportError(f"the exported program fails on {blocks} blocks of {target} where "
                          f"the eager kernel runs (an exporter bug, please report it): "
                          f"{e}") from None
    got = iter(arrays)
    for k, a in enumerate(eager):
        if not isinstance(a, np.ndarray):
            continue
        b = next(got)
        if a.tobytes() != b.tobytes():
            raise ExportError(f"the exported program's argument {k} differs from the eager "
                              f"kernel's after a run on {blocks} blocks of {target}: the kernel "
                              "uses something the trace did not see (a Python value computed "
                              "from tile data or from the block index outside + - * // %)")

"""Launching a kernel over a grid of blocks, with the blocks run in lockstep.

``pto.launch(kernel, *args, blocks=N)`` runs ``kernel(*args)`` for N blocks the way the NPU
does, each block with its own ``pto.get_block_idx()`` and its own on-chip buffers. Rather
than N Python passes, the kernel runs **once** with every block in lockstep: the machine gets
``lanes = N``, every buffer and tile a leading block dimension, ``get_block_idx()`` returns the
vector of block indices (a :class:`Lanes` array), GlobalTensor offsets computed from it become
per-block offset vectors, and each intrinsic call processes all blocks in one numpy call.

Instructions whose semantics index tiles as ``[..., r, c]`` are declared ``batched`` and run
once for all blocks; any other instruction, and any call whose operands differ between blocks
in shape (e.g. different valid regions), runs once per block on per-block views, with the
same results. Python control flow that depends on the block index cannot run in lockstep:
``bool(block_idx == 3)`` raises :class:`BlockDivergence` (unless all blocks agree), and
``launch(..., lockstep="auto")`` (the default) then reruns the kernel block by block, which
is always correct as long as nothing was written to GM yet.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from .errors import PtoError
from .hostmem import check_lockstep
from .memory import Machine, current, pop
from .memory import push as _push
from .tensor import GlobalTensor
from .tile import Tile

if TYPE_CHECKING:
    from .isa.registry import Instr


class BlockDivergence(PtoError):
    """Python control flow depends on a value that differs between blocks of a lockstep run."""


class Lanes(np.ndarray):
    """Per-block integer values of a lockstep launch (``get_block_idx()`` and what is computed
    from it). Arithmetic works elementwise; turning it into one Python value works only when
    every block has the same value."""

    def __new__(cls, values: Any) -> Lanes:
        return np.asarray(values, dtype=np.int64).view(cls)

    def _uniform(self, what: str) -> Any:
        flat = np.asarray(self).reshape(-1)
        if flat.size and (flat == flat[0]).all():
            return flat[0].item()
        raise BlockDivergence(
            f"{what} of a value that differs between blocks ({_short(flat)}): Python control "
            "flow on the block index cannot run the blocks in lockstep; launch with "
            "lockstep=False, or compute with numpy (np.minimum, np.where) instead of if/min")

    def __bool__(self) -> bool:
        return bool(self._uniform("truth value"))

    def __int__(self) -> int:
        return int(self._uniform("int()"))

    def __index__(self) -> int:
        return int(self._uniform("index"))

    def __float__(self) -> float:
        return float(self._uniform("float()"))

    def __array_wrap__(self, arr: Any, context: Any = None, return_scalar: bool = False) -> Any:
        out = np.asarray(arr)
        if out.ndim == 0:
            return out[()]
        return out.view(Lanes) if out.dtype.kind in "iub" else out


def _short(flat: np.ndarray) -> str:
    vals = ", ".join(str(x) for x in flat[:4].tolist())
    return f"[{vals}{', ...' if flat.size > 4 else ''}]"


def get_block_idx() -> Any:
    """This block's index (in a lockstep launch: the vector of all blocks' indices)."""
    return current().block_idx


def get_block_num() -> int:
    """How many blocks the kernel was launched on."""
    return current().block_num


# ---- running one instruction for all lanes -------------------------------------------------------

def _uniform(v: Any) -> bool:
    if isinstance(v, Tile):
        return not isinstance(v._vr, np.ndarray) and not isinstance(v._vc, np.ndarray)
    return not isinstance(v, np.ndarray) or not isinstance(v, Lanes)


def block_of(v: Any, b: int) -> Any:
    """The part of an operand that belongs to block ``b``."""
    if isinstance(v, Tile):
        return v.block(b)
    if isinstance(v, GlobalTensor):
        return v.block(b)
    if isinstance(v, Lanes):
        return v[b].item() if v.ndim == 1 else np.asarray(v)[b]
    return v


def run_lockstep(instr: Instr, m: Machine, vals: list[Any], params: dict[str, Any]) -> Any:
    """Run one instruction for every block of a lockstep machine: once for all blocks when
    the instruction is batched and its operands agree in shape across blocks, else once per
    block on per-block views."""
    if instr.batched and all(_uniform(v) for v in vals):
        return instr.execute(m, vals, params)  # types and (uniform) valid regions agree
    result = None
    for b in range(m.lanes):
        result = instr.execute(m, [block_of(v, b) for v in vals], params)
    return result


# ---- launching ------------------------------------------------------------------------------

def launch(kernel: Callable[..., Any], *args: Any, blocks: int = 1, target: str = "cpu",
           lockstep: bool | str = "auto", **settings: Any) -> None:
    """Run ``kernel(*args)`` on ``blocks`` blocks of ``target`` (results land in the numpy
    arrays passed in). ``lockstep``: True (fail on block-dependent control flow), False (one
    Python pass per block), "auto" (lockstep, falling back per block when the kernel branches
    on the block index before writing GM). ``settings`` go to the machine (mode, stdout...)."""
    if isinstance(blocks, bool) or not isinstance(blocks, int) or blocks < 1:
        raise PtoError(f"blocks must be a positive integer, got {blocks!r}")
    if lockstep not in (True, False, "auto"):
        raise PtoError(f"lockstep must be True, False or 'auto', got {lockstep!r}")
    if lockstep and blocks > 1:
        check_lockstep(blocks)
    with np.errstate(all="ignore"):  # ISA semantics define inf/NaN/wrap; no numpy warnings
        if lockstep and blocks > 1:
            m = _launch_machine(target, blocks, settings)
            m.block_idx, m.block_num = Lanes(np.arange(blocks)), blocks
            try:
                kernel(*args)
                return
            except BlockDivergence:
                if lockstep is True or m.gm_writes:
                    raise
            finally:
                _done(m)
        m = _launch_machine(target, 1, settings)
        try:
            for b in range(blocks):
                m.reset_for_launch()
                m.block_idx, m.block_num = b, blocks
                kernel(*args)
        finally:
            _done(m)


_MACHINES: dict[Any, Machine] = {}


def _launch_machine(target: str, lanes: int, settings: dict[str, Any]) -> Machine:
    """A machine for a launch, reused across launches with the same target and lane count so
    its buffers and arena are not allocated (and page-faulted in) again every time."""
    key = (target, lanes, tuple(sorted((k, id(v)) for k, v in settings.items())))
    m = _MACHINES.get(key)
    if m is None:
        if len(_MACHINES) > 8:
            _MACHINES.clear()
        m = _MACHINES[key] = Machine(target, lanes=lanes, **settings)
    m.reset_for_launch()
    m.lazy_loads = True
    m.quiet = True
    _push(m)
    return m


def _done(m: Machine) -> None:
    m._lazy.clear()
    m.quiet = False
    pop(m)

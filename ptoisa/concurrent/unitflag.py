"""The unit flag of L0C: the hand-off between a matmul and the fix pipe's store of its Acc tile
that replaces the M -> FIX and FIX -> M flags (C++ ``TMATMUL<AccPhase::...>`` /
``TSTORE<STPhase::Final>``; the ``unit_flag(check_only | check_and_set)`` clause of PTOAS's
``pto.mad``; pto-isa's flash-attention kernel with ``UF_ENABLE``).

* A matmul with ``Phase`` Partial or Final checks the unit flag before writing its Acc bytes:
  it waits until the last unit-flag store of those bytes has read them (write-after-read).
* A matmul with ``Phase`` Final also sets it when done: the accumulation is complete.
* A store with ``Phase`` Final (Partial) of an Acc tile waits for that set (read-after-write);
  a Final store then releases the bytes to the next unit-flag matmul.

No instruction's values depend on it: it is ordering only, so the observers that model order
(the sanitizer, the cycle model) keep one :class:`UnitFlags` each and call :meth:`before` /
:meth:`after` around their own record of the instruction, with their own ``edge_release`` /
``edge_acquire`` payloads (:mod:`ptoisa.concurrent.edges`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..enums import AccPhase, STPhase, TileType
from ..tile import Tile
from .access import tile_span

__all__ = ["UnitFlags"]

_MATMUL_PHASES = (AccPhase.Partial, AccPhase.Final)
_STORE_PHASES = (STPhase.Partial, STPhase.Final)
_ACC_OUT = ("cMatrix", "cOutMatrix")


def _use(rec: Any) -> tuple[str, Any] | None:
    """("mad" | "mad_final" | "store" | "store_final", the Acc tile's span) for a unit-flag use,
    else None."""
    ph = rec.params.get("Phase")
    if ph is None:
        return None
    ins = rec.ins
    if isinstance(ph, AccPhase):
        # (TMATMUL's Acc operand is cMatrix, TMATMUL_ACC's cOutMatrix)
        if ph not in _MATMUL_PHASES or not ins.operands or ins.operands[0].name not in _ACC_OUT:
            return None
        acc = rec.values[0]
        kind = "mad_final" if ph is AccPhase.Final else "mad"
    elif isinstance(ph, STPhase) and ph in _STORE_PHASES and len(rec.values) > 1:
        acc = rec.values[1]
        kind = "store_final" if ph is STPhase.Final else "store"
    else:
        return None
    if not isinstance(acc, Tile) or acc.loc is not TileType.Acc:
        return None
    span = tile_span(acc, rec.machine)
    return (kind, span) if span is not None else None


def _overlapping(table: dict[Any, Any], span: Any) -> list[Any]:
    return [p for (key, lo, hi), p in table.items()
            if key == span.key and lo < span.hi and span.lo < hi]


class UnitFlags:
    """One observer's unit-flag state: who last set (``ready``) and last released (``free``)
    which Acc bytes, as that observer's edge payloads."""

    def __init__(self) -> None:
        self.ready: dict[Any, Any] = {}
        self.free: dict[Any, Any] = {}
        self._pending: tuple[str, Any] | None = None

    def mark(self) -> tuple[dict[Any, Any], dict[Any, Any]]:
        """The state now, for :meth:`rewind` (an observer's ``mark``: ptoisa.observe)."""
        return dict(self.ready), dict(self.free)

    def rewind(self, mark: tuple[dict[Any, Any], dict[Any, Any]]) -> None:
        """Back to the state of :meth:`mark` (an abandoned lockstep attempt)."""
        self.ready, self.free = dict(mark[0]), dict(mark[1])
        self._pending = None

    def before(self, rec: Any) -> list[Any]:
        """The payloads ``rec`` waits for (call before recording it; empty: not a unit-flag
        use, or nothing to wait for)."""
        use = self._pending = _use(rec)
        if use is None:
            return []
        kind, span = use
        return _overlapping(self.free if kind.startswith("mad") else self.ready, span)

    def after(self, release: Callable[[], Any]) -> None:
        """Call after recording the instruction given to :meth:`before`: when it sets the flag
        (a Final matmul) or releases the bytes (a Final store), keep ``release()`` (the
        observer's payload) for the instructions that will wait for it."""
        use, self._pending = self._pending, None
        if use is None or use[0] not in ("mad_final", "store_final"):
            return
        kind, span = use
        payload = release()
        if payload is not None:
            (self.ready if kind == "mad_final" else self.free)[(span.key, span.lo, span.hi)] = \
                payload

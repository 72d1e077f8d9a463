"""TPREFETCH_ASYNC: an SDMA prefetch of a GM range into the L2 cache."""

from __future__ import annotations

from typing import Any

from ...enums import Pipe
from ...memory import Machine
from ...tensor import GlobalTensor, GMSpec
from ..comm import AsyncEvent
from ..registry import Opnd, Sig, instr, sim_unchecked_type


@sim_unchecked_type
def _flat_contiguous(sig: Sig) -> None:
    """The SDMA CMO prefetch takes a flat contiguous (packed 1-D) GlobalTensor (page
    constraint, every target); the CPU simulator's no-op takes any view (permissive)."""
    t = sig["src"]
    if not isinstance(t, GMSpec):
        return
    if t.shape[:4] != (1, 1, 1, 1) or t.stride[4] != 1:
        raise sig.fail(f"src must be a flat contiguous 1-D GlobalTensor (shape 1x1x1x1xN, unit "
                       f"stride), got shape {'x'.join(map(str, t.shape))} stride "
                       f"{list(t.stride)}")


@instr("TPREFETCH_ASYNC", family="memory", pipe=Pipe.MTE2, returns_event=False,
       timing="run",
       operands=(Opnd("src", "gm"), Opnd("ctx", "any", optional=True)),
       dtype_key=(), static=(_flat_contiguous,))
def TPREFETCH_ASYNC(m: Machine, src: GlobalTensor, ctx: Any = None) -> AsyncEvent:  # noqa: N802
    """``TPREFETCH_ASYNC(src, ctx) -> AsyncEvent``: prefetch a GM range into the L2 cache via
    an SDMA CMO. It changes no architectural data (L2 is not modelled), so it is a no-op that
    returns a completed :class:`~ptoisa.isa.comm.AsyncEvent` (``evt.Wait(ctx.session)``), as
    on the CPU simulator."""
    return AsyncEvent()


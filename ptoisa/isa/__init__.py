"""The instruction registry and its families. Importing this package declares every
instruction; ``REGISTRY`` maps C++ names (TADD) to :class:`~ptoisa.isa.registry.Instr`."""

from . import debug, elementwise, fillpad, memory_ops, partial, reduce  # noqa: F401
from .registry import REGISTRY, Event, Instr, lookup

__all__ = ["REGISTRY", "Event", "Instr", "lookup"]

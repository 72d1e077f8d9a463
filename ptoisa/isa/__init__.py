"""The instruction registry and its families. Importing this package declares every
instruction: each module of this package is one family and is imported here automatically.
``REGISTRY`` maps C++ names (TADD) to :class:`~ptoisa.isa.registry.Instr`."""

import importlib
import pkgutil

from .registry import REGISTRY, Event, Instr, lookup

for _info in sorted(pkgutil.iter_modules(__path__), key=lambda i: i.name):
    if _info.name != "registry":
        importlib.import_module(f"{__name__}.{_info.name}")

__all__ = ["REGISTRY", "Event", "Instr", "lookup"]

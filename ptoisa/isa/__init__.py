"""The instruction registry and its families. Importing this package declares every
instruction: each family is a subpackage (``elementwise/``, ``reduce/``, ...) or module
(``comm.py``, ``pipes.py``) named after it, imported here automatically; ``registry.py``,
``spelling.py``, ``rules.py``, ``quant.py`` and ``valid_region.py`` are what families share.
``REGISTRY`` maps C++ names (TADD) to :class:`~ptoisa.isa.registry.Instr`."""

import importlib
import pkgutil

from .registry import REGISTRY, Event, Instr, lookup

for _info in sorted(pkgutil.iter_modules(__path__), key=lambda i: i.name):
    if _info.name != "registry":
        importlib.import_module(f"{__name__}.{_info.name}")

__all__ = ["REGISTRY", "Event", "Instr", "lookup"]

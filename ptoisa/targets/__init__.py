"""Target profiles: on-chip buffer sizes and per-instruction legality, as data.

Each target is one module: ``a2a3.py`` states its buffers (bytes per on-chip buffer), its
traits (:class:`Traits`) and its ``LEGALITY`` table (instruction name -> :class:`Rule`, in
sections by family); ``a5.py`` and ``cpu.py`` derive from it with :meth:`Target.derive`,
listing only the entries that differ. An instruction missing from a target's table is not
available there. A new target is one such module (see docs/developing.md). One checker
(``ptoisa.isa.registry.check_legality``) turns a miss into the uniform error
``trowsum: element type i64 is not supported on a2a3 (supported: f16, f32, ...)``.

The vocabulary the target modules are written in (:class:`Rule`, :func:`rule`, :func:`pairs`,
:class:`Traits`, :class:`Target`) is in ``base.py``, below them: this package imports a
target's module when the target is first asked for (:func:`get_target`), so a target module
imports ``.base``, never the package.
"""

from __future__ import annotations

import importlib

from ..dtypes import DType, dtype
from ..enums import TileType
from ..errors import PtoError
from .base import BACKENDS as BACKENDS
from .base import Rule as Rule
from .base import Target as Target
from .base import Traits as Traits
from .base import pairs as pairs
from .base import rule as rule

LOC_SPACE = {
    TileType.Vec: "UB",
    TileType.Mat: "L1",
    TileType.Left: "L0A",
    TileType.Right: "L0B",
    TileType.Acc: "L0C",
    TileType.Bias: "BIAS",
    TileType.Scaling: "FB",
    TileType.ScaleLeft: "L0A_MX",
    TileType.ScaleRight: "L0B_MX",
}

#: the built-in targets, each one module of this package (``targets/<name>.py``)
TARGET_NAMES = ("cpu", "a2a3", "a5")
#: the target every entry point uses when none is named: eager code, ``pto.launch``,
#: ``pto.load``, ``pto.export`` and the command line (the hardware most users have, the one
#: the cycle model is fitted on, and the one whose limits a program must meet to run there)
DEFAULT_TARGET = "a2a3"
#: the target whose behaviour the conformance pack records (the upstream CPU simulator's, the
#: one with ``Traits.conformance_reference``): ``conformance``'s default target, and the one a
#: documented target difference must pass on
CONFORMANCE_TARGET = "cpu"
_ALIASES = {"a2": "a2a3", "a3": "a2a3", "A2A3": "a2a3", "A5": "a5", "CPU": "cpu"}
_EXTRA: dict[str, Target] = {}
_BUILT_IN: dict[str, Target] = {}


#: what a public entry point takes for a target: a :class:`Target` or its name. Inside
#: ptoisa a target is the object, named ``target``; a name is resolved once, at the entry.
TargetLike = str | Target


def get_target(name: TargetLike, backend: str | None = None) -> Target:
    """The target profile called ``name`` (cpu, a2a3, a5, or one added by
    :func:`register_target`); a :class:`Target` is returned as it is. ``backend``: as a
    program built by PTOAS's ``--pto-backend=backend`` runs there (:meth:`Target.with_backend`:
    ``get_target("a5", "vpto")`` follows PTOAS's a5 TileLib where it differs from pto-isa)."""
    if backend is not None:
        return get_target(name).with_backend(backend)
    if isinstance(name, Target):
        return name
    hit = _BUILT_IN.get(name)
    if hit is not None:
        return hit
    key = _ALIASES.get(name, name)
    if key in _EXTRA:
        return _EXTRA[key]
    if key not in TARGET_NAMES:
        raise PtoError(f"unknown target {name!r} (choose from: {', '.join(known_targets())})")
    t: Target = importlib.import_module(f"{__name__}.{key}").TARGET
    _BUILT_IN[name] = t  # (a built-in name never changes meaning: a launch asks every time)
    return t


def known_targets() -> tuple[str, ...]:
    """The names of the targets known now: the built-in ones and those registered."""
    return (*TARGET_NAMES, *_EXTRA)


def register_target(t: Target) -> Target:
    """Make a target (usually ``get_target("a5").derive(...)``) known by name to
    ``pto.target``, ``pto.launch`` and ``.pto`` runs."""
    if t.name in TARGET_NAMES:
        raise PtoError(f"target {t.name} is built in")
    _EXTRA[t.name] = t
    return t


def unregister_target(name: str) -> None:
    _EXTRA.pop(name, None)


def dtype_set(names: str) -> frozenset[DType]:
    return frozenset(dtype(n) for n in names.split())

"""Target profiles: on-chip buffer sizes and per-instruction legality, as data.

Each target package (cpu, a2a3, a5) defines ``BUFFERS`` (bytes per on-chip buffer); each module
inside it defines a ``LEGALITY`` dict (instruction name -> :class:`Rule`) for one instruction
family, and the package merges them (an instruction in two modules is an error). An
instruction missing from a target's table is not available there. One checker
(``ptoisa.isa.registry.check_legality``) turns a miss into the uniform error
``trowsum: element type i64 is not supported on a2a3 (supported: f16, f32, ...)``.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from ..dtypes import DType, dtype
from ..enums import TileType
from ..errors import PtoError


@dataclass(frozen=True)
class Rule:
    """Legality of one instruction on one target.

    ``dtypes`` is a set of element types checked against the instruction's ``dtype_key``
    operand, or a set of tuples when the key names several operands (e.g. (src, dst) pairs).
    ``None`` means any type. ``locs`` restricts tile roles of the key operands; ``row_major``
    requires every tile operand to be row-major; ``extra`` carries instruction-specific data.
    """

    dtypes: frozenset[Any] | None = None
    locs: frozenset[TileType] | None = None
    row_major: bool = False
    extra: dict[str, Any] = field(default_factory=dict, hash=False, compare=False)


def rule(dtypes: Iterable[Any] | str | None = None, *, locs: Iterable[TileType] | None = None,
         row_major: bool = False, **extra: Any) -> Rule:
    """Build a Rule; ``dtypes`` accepts names ('f16 f32'), DTypes, or tuples of them."""
    dts: frozenset[Any] | None
    if dtypes is None:
        dts = None
    else:
        items = dtypes.split() if isinstance(dtypes, str) else list(dtypes)
        dts = frozenset(
            tuple(dtype(x) for x in it) if isinstance(it, tuple) else dtype(it) for it in items
        )
    return Rule(dts, None if locs is None else frozenset(locs), row_major, extra)


def pairs(spec: str) -> list[tuple[str, str]]:
    """'f32->i8 f32->u8' -> [('f32','i8'), ('f32','u8')]."""
    out = []
    for p in spec.split():
        a, b = p.split("->")
        out.append((a, b))
    return out


@dataclass(frozen=True)
class Target:
    name: str
    buffers: dict[str, int]
    legality: dict[str, Rule]
    doc: str = ""
    #: what PTOAS's memory planning (PlanMemory) allows per buffer for a ``.pto`` program:
    #: space -> (bytes, alignment of each tile in bytes); a buffer not listed: its size above
    plan: dict[str, tuple[int, int]] = field(default_factory=dict)

    def buffer_size(self, space: str) -> int:
        return self.buffers.get(space, 0)

    def plan_size(self, space: str) -> tuple[int, int]:
        """(bytes, tile alignment) the ``.pto`` capacity check plans ``space`` with."""
        return self.plan.get(space) or (self.buffers.get(space, 0), 32)


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

TARGET_NAMES = ("cpu", "a2a3", "a5")


def get_target(name: str) -> Target:
    """The target profile called ``name`` (cpu, a2a3, a5)."""
    from . import a2a3, a5, cpu

    mods = {"cpu": cpu, "a2a3": a2a3, "a5": a5}
    key = {"a2": "a2a3", "a3": "a2a3", "A2A3": "a2a3", "A5": "a5", "CPU": "cpu"}.get(name, name)
    if key not in mods:
        raise PtoError(f"unknown target {name!r} (choose from: {', '.join(TARGET_NAMES)})")
    return mods[key].TARGET


def collect_legality(package: str, path: Iterable[str]) -> dict[str, Rule]:
    """Merge the ``LEGALITY`` tables of every module of a target package."""
    merged: dict[str, Rule] = {}
    for info in sorted(pkgutil.iter_modules(list(path)), key=lambda i: i.name):
        mod = importlib.import_module(f"{package}.{info.name}")
        for name, r in getattr(mod, "LEGALITY", {}).items():
            if name in merged:
                raise RuntimeError(f"{package}: legality of {name} declared twice")
            merged[name] = r
    return merged


def dtype_set(names: str) -> frozenset[DType]:
    return frozenset(dtype(n) for n in names.split())

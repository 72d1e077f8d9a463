"""The roots of the IR's two vocabularies: :class:`Type` and :class:`Attribute`.

Types and attributes refer to each other (a ``TypeAttr`` holds a type, a memref type holds a
layout attribute): ``types.py`` and ``attrs.py`` both import these two base classes from here,
neither imports the other. Both names stay importable from their modules and from
:mod:`ptoisa.ir`.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Type:
    """Base class of every IR type."""

    def __str__(self) -> str:  # pragma: no cover - every subclass overrides
        raise NotImplementedError


@dataclass(frozen=True, slots=True)
class Attribute:
    """Base class of every attribute."""

    def __str__(self) -> str:  # pragma: no cover - every subclass overrides
        raise NotImplementedError

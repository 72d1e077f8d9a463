"""Rules and numerics several instruction families share (each was written once per family
before): static rules over operand types, and the NPU's pairwise reduction tree.

The most common static rules (``same_dtype``, ``locs``, ``nd``, ``same_static_shape``) live in
:mod:`ptoisa.isa.registry` next to the ``Sig`` they read; these are the ones that families
had grown copies of.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from ..enums import TileType
from ..tile import TileSpec
from .registry import locs

if TYPE_CHECKING:
    from .registry import Sig, StaticRule


def vec(*names: str) -> StaticRule:
    """Operands ``names`` are Vec (UB) tiles."""
    return locs(names, TileType.Vec)


def _layout_rule(names: tuple[str, ...], ok: Callable[[TileSpec], bool],
                 what: str) -> StaticRule:
    def rule(sig: Sig) -> None:
        for n in names:
            t = sig[n]
            if isinstance(t, TileSpec) and not ok(t):
                raise sig.fail(f"{n} must be {what}, got {t.layout_name}")
    return rule


def row_major(*names: str) -> StaticRule:
    """Operands ``names`` are row-major tiles (BLayout RowMajor, boxes allowed)."""
    return _layout_rule(names, lambda t: t.is_row_major, "row-major")


def row_major_nd(*names: str) -> StaticRule:
    """Operands ``names`` are row-major ND tiles (no boxes)."""
    return _layout_rule(names, lambda t: t.is_nd, "row-major ND")


def same_static_rows(sig: Sig) -> None:
    """The CPU simulator's row reductions static_assert equal src and dst Rows (declared for
    cpu with ``static_for``)."""
    s, d = sig["src"], sig["dst"]
    if isinstance(s, TileSpec) and isinstance(d, TileSpec) and s.rows != d.rows:
        raise sig.fail(f"src Rows {s.rows} != dst Rows {d.rows} (the {sig.target} target "
                       "requires equal static rows)")


def tree_reduce(x: np.ndarray, fn: Callable[[Any, Any], Any], identity: Any) -> np.ndarray:
    """Reduce along the last axis by halving (pairwise tree), every partial result in x's
    element type: the order of the NPU's reduction instructions (vcadd, vcgadd ...); a row
    whose length is not a power of two is padded with ``identity``."""
    n = x.shape[-1]
    width = 1 << max(n - 1, 0).bit_length()
    if width != n:
        pad = np.full((*x.shape[:-1], width - n), identity, x.dtype)
        x = np.concatenate([x, pad], axis=-1)
    with np.errstate(all="ignore"):
        while x.shape[-1] > 1:
            h = x.shape[-1] // 2
            x = fn(x[..., :h], x[..., h:])
    return x[..., 0]

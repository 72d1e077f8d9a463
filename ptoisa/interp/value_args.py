"""Function arguments that are values rather than memory, as ``Program.run`` takes them from
Python:

* ``!pto.vmi.vreg<LxT[, layout]>``: an ``LVec`` of that spec, or a 1-D array of ``L``
  elements of ``T`` (a layout changes no lane's value: the lanes are the logical ones);
* ``!pto.vmi.mask<Lx...>``: an ``LMask`` of ``L`` lanes, or a 1-D bool array of ``L``;
* ``!pto.vreg<NxT>``: a ``VReg`` of that spec, or a 1-D array of ``N`` elements of ``T``;
* ``!pto.mask<bK>``: a ``Mask`` of that granularity, or a 1-D bool array of its lanes
  (256 / K bytes);
* ``!pto.tile_buf<...>``: a numpy array of the tile's shape or of its valid shape (a ``?``
  valid dimension is the array's). The run makes a tile of that type on the machine of the
  core running the function, placed automatically, loads the array into it, and writes the
  tile's contents back into the array when the function returns (as a pointer argument's
  array receives what the function stores), so one core's tile: ``blocks=1``.

A VMI or register value the function returns comes back as an ``LVec`` / ``LMask`` /
``VReg`` / ``Mask`` (``.data`` / ``.bits`` hold the lanes).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import PtoError
from ..ir import types as T
from ..tile import Tile, TileSpec
from ..vector.logical import LMask, LVec, VmiMaskSpec, VmiSpec, vmi_spec
from ..vector.regs import VREG_BYTES, Mask, MaskSpec, VReg, VRegSpec, mask_spec, vreg_spec


def register_spec(t: T.Type) -> VmiSpec | VmiMaskSpec | VRegSpec | MaskSpec | None:
    """The spec of a VMI vector / mask or vector / predicate register type, else None
    (PtoError for such a type ptoisa cannot hold)."""
    if not isinstance(t, T.OpaqueType):
        return None
    return vmi_spec(t.text) or vreg_spec(t.text) or mask_spec(t.text)


def _lanes_array(v: Any, n: int, dt: Any, where: str) -> np.ndarray:
    if not isinstance(v, np.ndarray):
        raise PtoError(f"{where} must be a numpy array of {n} lanes or a register value, "
                       f"got {type(v).__name__}")
    if v.dtype != dt:
        raise PtoError(f"{where} must have dtype {dt}, got {v.dtype}")
    if v.shape != (n,):
        raise PtoError(f"{where} must have {n} lanes (shape ({n},)), got shape {v.shape}")
    return v.copy()  # (a register value is never written after it is made)


def bind_register(spec: Any, v: Any, where: str) -> Any:
    """The value of a register argument of ``spec`` given as ``v`` (see the module)."""
    if isinstance(spec, VmiSpec):
        if isinstance(v, LVec):
            if v.data.shape != (spec.lanes,) or v.data.dtype != spec.dtype.np:
                raise PtoError(f"{where} must be a vector of {spec.lanes} x {spec.dtype.name}, "
                               f"got {v.spec}")
            return v
        return LVec(_lanes_array(v, spec.lanes, spec.dtype.np, where))
    if isinstance(spec, VmiMaskSpec):
        if isinstance(v, LMask):
            if v.bits.shape != (spec.lanes,):
                raise PtoError(f"{where} must be a mask of {spec.lanes} lanes, got {v.spec}")
            return v
        return LMask(_lanes_array(v, spec.lanes, np.dtype(np.bool_), where))
    if isinstance(spec, VRegSpec):
        if isinstance(v, VReg):
            if v.data.shape != (spec.lanes,) or v.data.dtype != spec.dtype.np:
                raise PtoError(f"{where} must be a register of {spec}, got {v.spec}")
            return v
        return VReg(_lanes_array(v, spec.lanes, spec.dtype.np, where))
    assert isinstance(spec, MaskSpec)
    if isinstance(v, Mask):
        if v.gran != spec.gran or v.bits.shape != (VREG_BYTES,):
            raise PtoError(f"{where} must be a predicate register of {spec}, got "
                           f"Mask({v.gran})")
        return v
    lanes = VREG_BYTES // {"b8": 1, "b16": 2, "b32": 4}[spec.gran]
    return Mask.of_lanes(_lanes_array(v, lanes, np.dtype(np.bool_), where), spec.gran)


class TileArg:
    """A tile argument: the array given for it and the valid region it gives the tile; each
    run makes the tile afresh on its core's machine (:meth:`make`) and writes it back
    (:meth:`write_back`)."""

    __slots__ = ("spec", "array", "valid", "name", "tile")

    def __init__(self, spec: TileSpec, array: np.ndarray, valid: tuple[int, int],
                 name: str) -> None:
        self.spec, self.array, self.valid, self.name = spec, array, valid, name
        self.tile: Tile | None = None

    def make(self) -> Tile:
        """The tile, on the current machine (placed automatically), holding the array."""
        self.tile = Tile.of(self.spec, valid=self.valid, name=self.name)
        self.tile.load_numpy(self.array)
        return self.tile

    def write_back(self) -> None:
        if self.tile is None:
            return
        rows, cols = self.array.shape
        self.array[...] = np.asarray(self.tile.read(rows, cols))
        self.tile = None


def bind_tile(spec: TileSpec, v: Any, where: str, name: str) -> TileArg:
    """A tile argument of ``spec`` given as the array ``v`` (see the module)."""
    if isinstance(v, Tile):
        raise PtoError(f"{where}: pass the tile's contents as a numpy array of shape "
                       f"{spec.rows}x{spec.cols} (the run makes the tile on its own machine)")
    if not isinstance(v, np.ndarray):
        raise PtoError(f"{where} must be a numpy array, got {type(v).__name__}")
    if v.dtype != spec.dtype.np:
        raise PtoError(f"{where} must have dtype {spec.dtype.name} ({spec.dtype.np}), "
                       f"got {v.dtype}")
    full = (spec.rows, spec.cols)
    static = (spec.valid_row, spec.valid_col)
    if v.ndim != 2:
        raise PtoError(f"{where} must be a 2-D array (the tile, {full[0]}x{full[1]}, or its "
                       f"valid region), got shape {v.shape}")
    if v.shape == full:
        valid = tuple(n if s is None else s for s, n in zip(static, full, strict=True))
    else:
        fits = all(0 <= n <= cap and (s is None or s == n)
                   for n, s, cap in zip(v.shape, static, full, strict=True))
        if not fits:
            vr, vc = ("?" if s is None else str(s) for s in static)
            raise PtoError(f"{where}: an array of shape {v.shape} is neither the tile "
                           f"({full[0]}x{full[1]}) nor its valid region ({vr}x{vc})")
        valid = v.shape
    return TileArg(spec, v, (int(valid[0]), int(valid[1])), name)


def materialize(bound: list[Any]) -> tuple[list[Any], list[TileArg]]:
    """The arguments a run's function gets (its tile arguments made on the current machine)
    and those tile arguments, to write back when it returns."""
    tiles = [b for b in bound if isinstance(b, TileArg)]
    if not tiles:
        return bound, tiles
    return [b.make() if isinstance(b, TileArg) else b for b in bound], tiles

"""TPARTADD, TPARTMUL, TPARTMAX, TPARTMIN: elementwise ops over partially valid sources.

Domain = dst's valid region. Where both sources are valid: the operation; where one is: a
copy of it. Only patterns where one source's valid region equals dst's and the other's does
not exceed it are supported (the page's general constraints and the seed notes; checked on
every target, an error otherwise). The CPU simulator is total: it accepts any pattern and
writes 0 where neither source is valid; a permissive machine does the same.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..enums import Pipe, TileType
from ..errors import RuntimeCheckError
from ..memory import Machine
from ..tile import Tile
from .registry import Instr, Opnd, instr, locs, same_dtype, sim_unchecked


def check_partial_pattern(op: str, d: tuple[int, int], a: tuple[int, int],
                          b: tuple[int, int]) -> None:
    """The supported partial-validity patterns (shared by TPART* and TPARTARG*): one
    source's valid region equals dst's, the other's does not exceed it."""
    if d[0] == 0 or d[1] == 0:
        return
    ok = (a == d and b[0] <= d[0] and b[1] <= d[1]) or (b == d and a[0] <= d[0] and a[1] <= d[1])
    if not ok:
        raise RuntimeCheckError(
            f"unsupported partial-validity pattern: dst valid {d[0]}x{d[1]}, src0 {a[0]}x{a[1]}, "
            f"src1 {b[0]}x{b[1]} (one source must equal dst, the other must not exceed it)",
            op=op)


@sim_unchecked
def _pattern(ins: Instr, dst: Tile, src0: Tile, src1: Tile) -> None:
    check_partial_pattern(ins.mnemonic, dst.valid_shape, src0.valid_shape, src1.valid_shape)


def _part(dst: Tile, src0: Tile, src1: Tile, fn: Callable[[np.ndarray, np.ndarray], Any]) -> None:
    vr, vc = dst.valid_shape
    if vr == 0 or vc == 0:
        return
    a_r, a_c = min(src0.valid_row, vr), min(src0.valid_col, vc)
    b_r, b_c = min(src1.valid_row, vr), min(src1.valid_col, vc)
    out = np.zeros((vr, vc), dst.dtype.np)
    if a_r and a_c:
        out[:a_r, :a_c] = src0.read(a_r, a_c)
    if b_r and b_c:
        out[:b_r, :b_c] = src1.read(b_r, b_c)
    o_r, o_c = min(a_r, b_r), min(a_c, b_c)
    if o_r and o_c:
        with np.errstate(over="ignore", invalid="ignore"):
            out[:o_r, :o_c] = fn(np.asarray(src0.read(o_r, o_c)), np.asarray(src1.read(o_r, o_c)))
    dst.write(out)


def _decl(name: str, fn: Callable[[np.ndarray, np.ndarray], Any], what: str) -> Instr:
    def impl(m: Machine, dst: Tile, src0: Tile, src1: Tile) -> None:
        _part(dst, src0, src1, fn)

    impl.__doc__ = (f"dst = {what} where both sources are valid, a copy of the valid one "
                    "elsewhere in dst's valid region.")
    return instr(name, family="irregular", pipe=Pipe.V,
                 operands=(Opnd("dst", "tile", "out"), Opnd("src0", "tile"), Opnd("src1", "tile")),
                 dtype_key=("dst",),
                 static=(locs(["dst", "src0", "src1"], TileType.Vec),
                         same_dtype("dst", "src0", "src1")),
                 runtime=(_pattern,))(impl)


# std::max(a, b) = (a < b) ? b : a and std::min(a, b) = (b < a) ? b : a: NaN handling follows.
TPARTADD = _decl("TPARTADD", np.add, "src0 + src1")
TPARTMUL = _decl("TPARTMUL", np.multiply, "src0 * src1")
TPARTMAX = _decl("TPARTMAX", lambda a, b: np.where(a < b, b, a), "max(src0, src1)")
TPARTMIN = _decl("TPARTMIN", lambda a, b: np.where(b < a, b, a), "min(src0, src1)")

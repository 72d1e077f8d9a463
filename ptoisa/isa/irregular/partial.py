"""TPARTADD, TPARTMUL, TPARTMAX, TPARTMIN: elementwise ops over partially valid sources.

Domain = dst's valid region. Where both sources are valid: the operation; where one is: a
copy of it. Only patterns where one source's valid region equals dst's and the other's does
not exceed it are supported (the page's general constraints and the seed notes; checked on
every target, an error otherwise). The CPU simulator is total: it accepts any pattern and
writes 0 where neither source is valid; a permissive machine does the same.

A5's TPARTMAX / TPARTMIN (pto-isa's a5 TPartMasterImpl, and PTOAS's a5 TileLib template) take
any pattern whose two source regions lie within dst's: dst's valid region is first filled with
the pad (PadValue Min for max, Max for min: -inf / +inf for floats, the integer extremes), then
combined with each source over its own region. Where neither source is valid the pad remains
(the ISA page leaves it undefined; ptoisa writes what a5's code writes). pto-isa's pad is
-inf / +inf; PTOAS's TileLib (lib/TileOps/a5/_part.py ``register_part_extreme`` with
``pad_min`` / ``pad_max``) broadcasts the largest finite values (-3.4028235e38 / +65504 ...):
the target's ``pad_float_extremes`` trait ("finite" on a5 under the ``vpto`` backend).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ...enums import PadValue, Pipe, TileType
from ...errors import RuntimeCheckError
from ...memory import Machine
from ...tile import Tile
from ..registry import Instr, Opnd, except_on, instr, locs, same_dtype, sim_unchecked


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


def _padded_src0(dst: Tile, src0: Tile, src1: Tile, pad: Any
                 ) -> tuple[np.ndarray, int, int, int, int] | None:
    """dst's valid region filled with ``pad`` and src0 copied over its part of it, with the
    two sources' extents within dst (a_r, a_c, b_r, b_c); None when dst has no valid region."""
    vr, vc = dst.valid_shape
    if vr == 0 or vc == 0:
        return None
    a_r, a_c = min(src0.valid_row, vr), min(src0.valid_col, vc)
    b_r, b_c = min(src1.valid_row, vr), min(src1.valid_col, vc)
    out = np.full((vr, vc), pad, dst.dtype.np)
    if a_r and a_c:
        out[:a_r, :a_c] = src0.read(a_r, a_c)
    return out, a_r, a_c, b_r, b_c


def _part(dst: Tile, src0: Tile, src1: Tile, fn: Callable[[np.ndarray, np.ndarray], Any],
          pad: Any = 0) -> None:
    got = _padded_src0(dst, src0, src1, pad)
    if got is None:
        return
    out, a_r, a_c, b_r, b_c = got
    if b_r and b_c:
        out[:b_r, :b_c] = src1.read(b_r, b_c)
    o_r, o_c = min(a_r, b_r), min(a_c, b_c)
    if o_r and o_c:
        with np.errstate(over="ignore", invalid="ignore"):
            out[:o_r, :o_c] = fn(np.asarray(src0.read(o_r, o_c)), np.asarray(src1.read(o_r, o_c)))
    dst.write(out)


def _tilelib_part(dst: Tile, src0: Tile, src1: Tile,
                  fn: Callable[[np.ndarray, np.ndarray], Any], pad: Any) -> None:
    """PTOAS's a5 TileLib TPARTMAX / TPARTMIN (lib/TileOps/a5/_part.py,
    ``register_part_extreme``): dst's valid region filled with the (finite) pad, src0 copied
    over its region, then dst = fn(dst, src1) over src1's region. So where only src1 is valid
    dst is fn(pad, src1): -inf in src1 alone gives -FLT_MAX for TPARTMAX."""
    got = _padded_src0(dst, src0, src1, pad)
    if got is None:
        return
    out, _a_r, _a_c, b_r, b_c = got
    if b_r and b_c:
        with np.errstate(over="ignore", invalid="ignore"):
            out[:b_r, :b_c] = fn(out[:b_r, :b_c], np.asarray(src1.read(b_r, b_c)))
    dst.write(out)


@sim_unchecked
def _within_dst(ins: Instr, dst: Tile, src0: Tile, src1: Tile) -> None:
    """A5's TPARTMAX / TPARTMIN: both sources' valid regions within dst's."""
    d, a, b = dst.valid_shape, src0.valid_shape, src1.valid_shape
    if d[0] == 0 or d[1] == 0:
        return
    if not (a[0] <= d[0] and a[1] <= d[1] and b[0] <= d[0] and b[1] <= d[1]):
        raise RuntimeCheckError(
            f"unsupported partial-validity pattern: dst valid {d[0]}x{d[1]}, src0 {a[0]}x{a[1]}, "
            f"src1 {b[0]}x{b[1]} (both sources must lie within dst)",
            op=ins.mnemonic)


def _decl(name: str, fn: Callable[[np.ndarray, np.ndarray], Any], what: str,
          a5_pad: str | None = None) -> Instr:
    def impl(m: Machine, dst: Tile, src0: Tile, src1: Tile) -> None:
        _part(dst, src0, src1, fn)

    impl.__doc__ = (f"dst = {what} where both sources are valid, a copy of the valid one "
                    "elsewhere in dst's valid region.")
    more: dict[str, Any] = {}
    runtime: tuple[Any, ...] = (_pattern,)
    if a5_pad is not None:
        pad = PadValue(a5_pad)

        def a5_impl(m: Machine, dst: Tile, src0: Tile, src1: Tile) -> None:
            extremes = m.target.traits.pad_float_extremes
            if extremes == "finite":
                _tilelib_part(dst, src0, src1, fn, pad.scalar(dst.dtype, extremes))
            else:
                _part(dst, src0, src1, fn, pad.scalar(dst.dtype))

        a5_impl.__doc__ = (f"A5: both sources within dst; {what} where both are valid, the "
                           f"valid one where one is, the {a5_pad} pad where neither is. Under "
                           "PTOAS's vpto backend (pad_float_extremes 'finite') the pad is the "
                           "largest finite value and src1 is combined with the pad where src0 "
                           "is not valid (lib/TileOps/a5/_part.py register_part_extreme).")
        runtime = (except_on("a5", _pattern),)
        more = {"impl_for": {"a5": a5_impl}, "runtime_for": {"a5": (_within_dst,)}}
    return instr(name, family="irregular", pipe=Pipe.V,
                 operands=(Opnd("dst", "tile", "out"), Opnd("src0", "tile"), Opnd("src1", "tile")),
                 dtype_key=("dst",),
                 static=(locs(["dst", "src0", "src1"], TileType.Vec),
                         same_dtype("dst", "src0", "src1")),
                 runtime=runtime, **more)(impl)


# std::max(a, b) = (a < b) ? b : a and std::min(a, b) = (b < a) ? b : a: NaN handling follows.
TPARTADD = _decl("TPARTADD", np.add, "src0 + src1")
TPARTMUL = _decl("TPARTMUL", np.multiply, "src0 * src1")
TPARTMAX = _decl("TPARTMAX", lambda a, b: np.where(a < b, b, a), "max(src0, src1)", "Min")
TPARTMIN = _decl("TPARTMIN", lambda a, b: np.where(b < a, b, a), "min(src0, src1)", "Max")

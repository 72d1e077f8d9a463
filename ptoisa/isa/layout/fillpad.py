"""TFILLPAD, TFILLPAD_INPLACE, TFILLPAD_EXPAND: copy the valid region, pad the rest.

The padded extent differs by target (spec/notes/seeds_check.md section 4):

* cpu pads every row of the tile (all static Rows) and copies src (also for INPLACE);
* a2a3/a5 pad only rows below dst's valid rows; INPLACE does not copy (dst already holds the
  data, usually the same buffer as src); on a2a3 the partial 32-byte block right after the
  source's valid columns is padded by INPLACE only when src and dst carry different pad values.

The first difference is the target trait ``fillpad_whole_tile``; the a2a3 block rule is
TFILLPAD_INPLACE's ``impl_for={"a2a3": ...}``. The float Max / Min pads are +-inf (pto-isa's
PadValueMap), or the largest finite values where the target's ``pad_float_extremes`` trait
says "finite" (a5 under PTOAS's ``vpto`` backend: lib/TileOps/a5/_fillpad.py ``_fill_scalar``
picks ``_max`` / ``_min``, +-3.4028235e38 for f32, +-65504 for f16); the TileLib also pads
only up to dst's valid columns, where pto-isa pads to the tile's Cols
(``fillpad_to_valid_cols``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...enums import Pipe, TileType
from ...errors import NotExecutedYet
from ...memory import Machine
from ...tile import Tile, TileSpec
from ..registry import Opnd, Param, PipeForms, Sig, instr, locs, same_static_shape
from ..spelling import Attr, Ptoas


def _pad_not_null(sig: Sig) -> None:
    d = sig["dst"]
    if isinstance(d, TileSpec) and d.pad.is_null and sig.params.get("PadVal") is None:
        raise sig.fail("dst PadVal must not be Null (give the dst tile a pad value: Zero, Max, "
                       "Min or PadValue.custom(x))")


def _same_elem_size(sig: Sig) -> None:
    d, s = sig["dst"], sig["src"]
    if isinstance(d, TileSpec) and isinstance(s, TileSpec):
        if d.dtype.itemsize != s.dtype.itemsize:
            raise sig.fail(f"dst and src element sizes differ ({d.dtype} vs {s.dtype})")
        if d.dtype.itemsize not in (1, 2, 4):
            raise sig.fail(f"element size must be 1, 2 or 4 bytes, got {d.dtype}")


def _expand_shape(sig: Sig) -> None:
    d, s = sig["dst"], sig["src"]
    if isinstance(d, TileSpec) and isinstance(s, TileSpec) and (d.rows < s.rows or
                                                                 d.cols < s.cols):
        raise sig.fail(f"dst {d.rows}x{d.cols} must be at least src {s.rows}x{s.cols}")


def _fillpad_types(sig: Sig) -> None:
    """TFILLPAD's shapes (TFILLPAD page): a Vec fill into a larger dst is the Expand mode
    (``TFILLPAD<TFillPadMode::Expand>``, PTOAS infers it: dst at least src in both
    dimensions); otherwise (and for Mat) the static shapes match."""
    d, s = sig["dst"], sig["src"]
    if not isinstance(d, TileSpec) or not isinstance(s, TileSpec):
        return
    if (d.rows, d.cols) == (s.rows, s.cols):
        return
    if TileType.Mat in (d.loc, s.loc) or d.rows < s.rows or d.cols < s.cols:
        raise sig.fail(f"operands must have the same static shape, or dst at least src in "
                       f"both dimensions for a Vec fill (the Expand fill): dst "
                       f"{d.rows}x{d.cols}, src {s.rows}x{s.cols}")


def _mat_one_type(sig: Sig) -> None:
    """PTOAS's pto.tfillpad on loc=mat: the C++ Mat overload ``TFILLPAD(TileData &dst,
    TileData &src)`` takes one tile type, so src and dst agree in valid shape and pad too
    (a .pto rule: an eager call's tiles carry their valid region at run time)."""
    d, s = sig["dst"], sig["src"]
    if not isinstance(d, TileSpec) or not isinstance(s, TileSpec) or \
            TileType.Mat not in (d.loc, s.loc):
        return

    def show(v: int | None) -> str:
        return "?" if v is None else str(v)
    diff = [f"{name} ({show(a)} vs {show(b)})" for name, a, b in (
        ("rows", s.rows, d.rows), ("cols", s.cols, d.cols),
        ("v_row", s.valid_row, d.valid_row), ("v_col", s.valid_col, d.valid_col)) if a != b]
    if s.pad != d.pad:
        diff.append(f"pad ({s.pad.kind} vs {d.pad.kind})")
    if diff:
        raise sig.fail("expects src/dst tile types to be lowerable to TFILLPAD for loc=mat "
                       f"(one tile type): mismatching fields: {', '.join(diff)}; the "
                       "heterogeneous TFILLPAD overload is only available for loc=vec")


def _fill(m: Machine, dst: Tile, src: Tile, *, inplace: bool, pad_override: Any = None,
          block_aligned: bool = False) -> None:
    """Copy src's valid region into dst (unless an NPU INPLACE fill) and pad the rest.
    ``block_aligned`` (a2a3 INPLACE with equal pad values) leaves the partial 32-byte block
    right after src's valid columns unpadded."""
    dvr, dvc = dst.valid_shape
    if dvr == 0 or dvc == 0:
        return
    svr, svc = min(src.valid_row, dst.rows), min(src.valid_col, dst.cols)
    pad_v = pad_override if pad_override is not None else dst.spec.pad
    pad = pad_v.scalar(dst.dtype, m.target.traits.pad_float_extremes)
    whole = m.target.traits.fillpad_whole_tile
    copy = whole or not inplace
    if copy and svr and svc:
        vals = np.asarray(src.read(svr, svc))
        dst.write(vals.view(dst.dtype.np) if vals.dtype != dst.dtype.np else vals)
    rows_end = dst.rows if whole else max(dvr, svr)
    # (PTOAS's a5 TileLib pads up to dst's valid columns: fillpad_to_valid_cols)
    cols_end = dst.cols
    if m.target.traits.fillpad_to_valid_cols:
        cols_end = min(dvc, dst.cols)
        if svc > cols_end and svr:
            # (_fill_inplace's mask is dst's XOR src's lanes: it pads [dvc, svc) of the rows
            # src covers or not, as the lowering PTOAS picks by aliasing decides)
            raise NotExecutedYet(
                f"a fill whose src valid cols ({svc}) pass dst's ({dvc}) as PTOAS's TileLib "
                "lowers it (its pad there depends on the lowering PTOAS picks)")
    col_start = svc
    if block_aligned and inplace and src.spec.pad == dst.spec.pad:
        per_block = 32 // dst.dtype.itemsize
        col_start = min(-(-svc // per_block) * per_block, dst.cols)
    if col_start < cols_end and svr:
        dst.fill(pad, min(svr, rows_end), cols_end - col_start, 0, col_start)
    if rows_end > svr:
        dst.fill(pad, rows_end - svr, cols_end, svr, 0)


def _expand_when_larger(inputs: tuple[Any, ...], outs: tuple[Any, ...]) -> str | None:
    """pto.tfillpad is TFILLPAD_EXPAND where dst's static shape differs from src's (PTO IR
    manual, pto.tfillpad: PTOAS infers the expand lowering from the physical shapes, valid
    shapes aside; a dst smaller than src stays TFILLPAD, whose rule says why)."""
    if len(inputs) == 1 and len(outs) == 1:
        src, dst = inputs[0], outs[0]
        if TileType.Mat in (getattr(src, "loc", None), getattr(dst, "loc", None)):
            return None  # loc=mat: one tile type (_mat_one_type says PTOAS's words)
        shape = [(getattr(t, "rows", None), getattr(t, "cols", None)) for t in (src, dst)]
        if None not in shape[0] + shape[1] and shape[0] != shape[1] and \
                shape[1][0] >= shape[0][0] and shape[1][1] >= shape[0][1]:
            return "TFILLPAD_EXPAND"
    return None


_VEC = locs(["dst", "src"], TileType.Vec)
#: (tfillpad_non_normal_mat_invalid.pto: the lowering follows from the tile types)
_NO_MODE = ("pto.tfillpad does not accept 'mode'; PTOAS infers TFILLPAD lowering from physical "
            "shape and planned addresses")
_PADVAL = Param("PadVal", None)


@instr("TFILLPAD", family="layout", pipe=Pipe.V,
       ptoas=Ptoas(rules={"pto.tfillpad": (_mat_one_type,)}, by_types=_expand_when_larger,
                   attrs={"mode": Attr(why=_NO_MODE)}),
       pipe_of=PipeForms("dst", {"Vec": Pipe.V, "Mat": Pipe.MTE2},
                         why="pto-isa's TFILLPAD_VEC and TFILLPAD_MAT (an L1 fill)."),
       operands=(Opnd("dst", "tile", "out"), Opnd("src", "tile")),
       params=(_PADVAL,), dtype_key=("dst",),
       static=(locs(["dst", "src"], TileType.Vec, TileType.Mat), _pad_not_null, _same_elem_size,
               _fillpad_types))
def TFILLPAD(m: Machine, dst: Tile, src: Tile, *, PadVal: Any = None) -> None:  # noqa: N802,N803
    """dst[i, j] = src[i, j] inside src's valid region, dst's pad value elsewhere. A Vec dst
    larger than src is the Expand fill (as TFILLPAD_EXPAND)."""
    from ...enums import pad_value

    _fill(m, dst, src, inplace=False, pad_override=None if PadVal is None else pad_value(PadVal))


def _a2a3_fill_inplace(m: Machine, dst: Tile, src: Tile) -> None:
    """a2a3 TFILLPAD_INPLACE: with equal pad values on src and dst, the partial 32-byte block
    right after src's valid columns keeps its contents."""
    _fill(m, dst, src, inplace=True, block_aligned=True)


@instr("TFILLPAD_INPLACE", family="layout", pipe=Pipe.V,
       operands=(Opnd("dst", "tile", "out"), Opnd("src", "tile")),
       dtype_key=("dst",),
       static=(_VEC, _pad_not_null, _same_elem_size, same_static_shape("dst", "src")),
       impl_for={"a2a3": _a2a3_fill_inplace})
def TFILLPAD_INPLACE(m: Machine, dst: Tile, src: Tile) -> None:  # noqa: N802
    """In-place fill: write dst's pad value outside src's valid region. The NPU does not copy
    (dst already holds the data); the cpu target copies src's valid region as well."""
    _fill(m, dst, src, inplace=True)


@instr("TFILLPAD_EXPAND", family="layout", pipe=Pipe.V,
       operands=(Opnd("dst", "tile", "out"), Opnd("src", "tile")),
       dtype_key=("dst",),
       static=(_VEC, _pad_not_null, _same_elem_size, _expand_shape))
def TFILLPAD_EXPAND(m: Machine, dst: Tile, src: Tile) -> None:  # noqa: N802
    """Like TFILLPAD into a larger dst: copy src's valid region, pad the rest of dst."""
    _fill(m, dst, src, inplace=False)

"""Elementwise tile-tile instructions."""

from __future__ import annotations

from typing import Any

import numpy as np

from ... import lazy
from ...enums import Pipe, TileType
from ...errors import RuntimeCheckError
from ...memory import Machine
from ...tile import Tile
from ..registry import Instr, Opnd, instr, locs, same_dtype


def srcs_cover_dst(ins: Instr, dst: Tile, *srcs: Any, **kw: Any) -> None:
    """Every tile source's valid region covers dst's valid region (the iteration domain)."""
    vr, vc = dst._vr, dst._vc
    for s in srcs:
        if isinstance(s, Tile) and (s._vr < vr or s._vc < vc):
            i = srcs.index(s)
            raise RuntimeCheckError(
                f"src{i} valid region {s.valid_row}x{s.valid_col} does not cover dst valid "
                f"region {vr}x{vc}", op=ins.mnemonic)


def _tadd_plan(ins: Instr, m: Machine, vals: list[Any], params: dict[str, Any]) -> Any:
    """TADD's planned form (Instr.plan) where its semantics defer the sum: three plain tiles
    of one shape, large enough to owe a deferred result on ``m`` (a smaller one keeps its
    plain form). Per call, while all three are whole (the run-time rules then pass) and the
    machine loads lazily, the sum is deferred as TADD defers it; else the general call."""
    dst, src0, src1 = vals[0], vals[1], vals[2]
    if params or type(dst) is not Tile or type(src0) is not Tile or type(src1) is not Tile:
        return None
    s = dst.spec
    rows, cols = s.rows, s.cols
    if s.is_boxed or (src0.spec.rows, src0.spec.cols) != (rows, cols) \
            or (src1.spec.rows, src1.spec.cols) != (rows, cols) \
            or s.numel * m.lanes < m.LAZY_MIN_ELEMENTS:
        return None

    def call() -> bool:
        if not (dst._whole and src0._whole and src1._whole and lazy.ok(m, dst)):
            return False
        dst.set_pending(np.add, (src0.read(rows, cols), src1.read(rows, cols)), m)
        return True
    return call


@instr("TADD", family="elementwise", pipe=Pipe.V, batched=True, plain=np.add,
       operands=(Opnd("dst", "tile", "out"), Opnd("src0", "tile"), Opnd("src1", "tile")),
       dtype_key=("dst",),
       static=(locs(["dst", "src0", "src1"], TileType.Vec), same_dtype("dst", "src0", "src1")),
       runtime=(srcs_cover_dst,), plan=_tadd_plan)
def TADD(m: Machine, dst: Tile, src0: Tile, src1: Tile) -> None:  # noqa: N802
    """dst[i, j] = src0[i, j] + src1[i, j] over dst's valid region (integers wrap)."""
    vr, vc = dst._vr, dst._vc
    if vr and vc:
        a, b = src0.read(vr, vc), src1.read(vr, vc)
        s = dst.spec
        whole = vr == s.rows and vc == s.cols
        if whole and lazy.ok(m, dst) and not s.is_boxed:
            dst.set_pending(np.add, (a, b), m)  # computed when read, or by TSTORE into GM
            return
        out = dst.view2d()
        if out is not None:  # straight into dst's storage (numpy handles overlap)
            if not whole:
                out = out[..., :vr, :vc]
            if m.quiet:
                np.add(a, b, out=out)
            else:
                with np.errstate(over="ignore"):
                    np.add(a, b, out=out)
        else:
            with np.errstate(over="ignore"):
                dst.write(np.add(a, b))

"""PTOAS parity of the `.pto` front end: programs PTOAS rejects are rejected with PTOAS's
reason, programs it accepts are accepted, and no program makes ptoisa raise anything but a
located ptoisa error (each case here once crashed with a Python traceback)."""

from __future__ import annotations

import pytest

from ptoisa import load
from ptoisa.errors import PtoError

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")


def _tile(loc: str, dtype: str, rows: int, cols: int, bl: str = "row_major",
          sl: str = "none_box", fractal: int = 512) -> str:
    return (f"!pto.tile_buf<loc={loc}, dtype={dtype}, rows={rows}, cols={cols}, v_row={rows}, "
            f"v_col={cols}, blayout={bl}, slayout={sl}, fractal={fractal}, pad=0>")


def _fails(text: str, match: str, target: str = "a2a3", run: str | None = None,
           *args: object) -> None:
    """``text`` is rejected (or, with ``run``, fails when function ``run`` runs) with a ptoisa
    error matching ``match`` - never another exception."""
    with pytest.raises(PtoError, match=match):
        prog = load(text, target=target)
        if run is not None:
            prog.run(run, *args, target=target)


# ---- no traceback --------------------------------------------------------------------------

def test_mx_scales_of_a_wide_type_are_refused_by_name() -> None:
    """PTOAS's emitc tests give TGEMV_MX f16 `loc=scaling` tiles; the cube reads one E8M0 byte
    per scale, and what it makes of a wider type is not documented: a run-time error naming
    the operand (was numpy's broadcast ValueError)."""
    a = _tile("left", "f8E5M2", 1, 128, "col_major", "row_major")
    sa = _tile("scaling", "f16", 1, 4, "row_major", "row_major", 32)
    b = _tile("right", "f8E5M2", 128, 32, "row_major", "col_major")
    sb = _tile("scaling", "f16", 4, 32, "row_major", "row_major", 32)
    c = _tile("acc", "f32", 1, 32, "col_major", "row_major", 1024)
    text = f"""module {{
  func.func @k() attributes {{pto.kernel_kind = #pto.kernel_kind<cube>}} {{
    %a = pto.alloc_tile : {a}
    %sa = pto.alloc_tile : {sa}
    %b = pto.alloc_tile : {b}
    %sb = pto.alloc_tile : {sb}
    %c = pto.alloc_tile : {c}
    pto.tgemv.mx ins(%a, %sa, %b, %sb : {a}, {sa}, {b}, {sb}) outs(%c : {c})
    return
  }}
}}
"""
    _fails(text, "aScaleMatrix has element type f16", "a5", "k")

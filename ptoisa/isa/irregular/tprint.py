"""TPRINT: print a tile or a GlobalTensor.

Two output styles, by the target's ``print_style`` trait (spec/notes/seeds_check.md section 1
and the seed page):

* ``cpu_sim`` (cpu) reproduces the upstream CPU simulator byte for byte: ``TPRINT <vr>x<vc>``
  then the valid region only, each element right-aligned in the format's width, one space apart.
* ``npu`` (a2a3, a5) follows the NPU: a header with type, layout and role, the shapes, then the
  whole tile with ``|`` after the last valid column and a dashed row after the last valid row.
  Default format per the seed page: floats ``%6.2f``, integers ``%6d`` (unsigned ``%6u``);
  ``Format=PrintFormat.Width8_Precision4`` etc. select the newer formats. Output goes through
  the NPU's print buffer (16 KiB by default, ``pto.target(..., print_buffer=N)``): when it
  overflows, the warning ``Warning: out of bound! try best to print`` is printed and the rest
  of the output is dropped.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...enums import Layout, Pipe, PrintFormat, TileType
from ...memory import Machine
from ...tensor import GlobalTensor, GMSpec
from ...tile import Tile, TileSpec
from ..registry import Opnd, Param, Sig, dtype_in, instr, sim_unchecked_type
from ..spelling import Attr, Ptoas

_FMT = {
    PrintFormat.Width8_Precision4: (8, 4),
    PrintFormat.Width8_Precision2: (8, 2),
    PrintFormat.Width10_Precision6: (10, 6),
    PrintFormat.Width6_Precision2: (6, 2),
}

_NPU_TYPE_NAME = {
    "f32": "float32", "f16": "float16", "i8": "int8", "ui8": "uint8", "i16": "int16",
    "ui16": "uint16", "i32": "int32", "ui32": "uint32",
}

OVERFLOW_WARNING = "Warning: out of bound! try best to print"


def format_values(vals: np.ndarray, is_float: bool, fmt: PrintFormat) -> list[list[str]]:
    w, p = _FMT[fmt]
    if is_float:
        f = vals.astype(np.float64)
        return [[f"{x:{w}.{p}f}" for x in row] for row in f.tolist()]
    # tolist() gives exact Python ints (u64 above 2**63 must not wrap through int64)
    return [[f"{int(x):{w}d}" for x in row] for row in vals.tolist()]


def _cpu_tile_text(tile: Tile, fmt: PrintFormat) -> str:
    vr, vc = tile.valid_shape
    out = [f"TPRINT {vr}x{vc}\n"]
    if vr and vc:
        vals = np.asarray(tile.read())
        for row in format_values(vals, tile.dtype.is_float, fmt):
            out.append(" ".join(row) + "\n")
    return "".join(out)


def _npu_grid(vals: np.ndarray, is_float: bool, fmt: PrintFormat, vr: int, vc: int) -> str:
    rows, cols = vals.shape
    w = _FMT[fmt][0]
    cells = format_values(vals, is_float, fmt)
    lines = []
    for r in range(rows):
        parts = []
        for c in range(cols):
            parts.append(cells[r][c])
            if c == vc - 1 and 0 < vc < cols:
                parts.append("|")
        lines.append(" ".join(parts) + "\n")
        if r == vr - 1 and 0 < vr < rows:
            lines.append(" ".join(["-" * w] * cols) + "\n")
    return "".join(lines)


def _npu_tile_text(tile: Tile, fmt: PrintFormat, data: np.ndarray | None = None) -> str:
    s = tile.spec
    vr, vc = tile.valid_shape
    head = (f"=== [TPRINT Tile] Data Type: {_NPU_TYPE_NAME.get(s.dtype.name, s.dtype.name)}, "
            f"Layout: {_npu_layout(s)}, TileType: {s.loc.name} ===\n"
            f"  Shape: [{s.rows}, {s.cols}], Valid Shape: [{vr}, {vc}]\n")
    vals = data if data is not None else tile.numpy()
    return head + _npu_grid(vals, s.dtype.is_float, fmt, vr, vc)


def _npu_layout(s: TileSpec) -> str:
    return {"ND": "ND", "DN": "DN", "ZZ": "Zz", "NZ": "Nz", "ZN": "Zn", "NN": "Nn"}[s.layout_name]


def _gm_text(gm: GlobalTensor, fmt: PrintFormat) -> str:
    s = gm.spec
    fl = s.dtype.is_float
    if s.layout is Layout.NZ:
        rows, cols = s.rows_cols
        vals = gm.flat[gm.indices(rows, cols)]
        return (f"=== [TPRINT GlobalTensor] Data Type: {_NPU_TYPE_NAME.get(s.dtype.name)}, "
                f"Layout: NZ ===\n  Logical Shape: [{rows}, {cols}]\n"
                + _npu_grid(vals, fl, fmt, rows, cols))
    data = gm.numpy()
    out = [f"=== [TPRINT GlobalTensor] Data Type: {_NPU_TYPE_NAME.get(s.dtype.name)}, "
           f"Layout: {s.layout.name} ===\n  Shape: [{', '.join(map(str, s.shape))}]\n"]
    n0, n1, n2, n3, n4 = s.shape
    for i0 in range(n0):
        for i1 in range(n1):
            for i2 in range(n2):
                out.append(f"Batch [{i0}, {i1}, {i2}]:\n")
                out.append(_npu_grid(data[i0, i1, i2], fl, fmt, n3, n4))
    return "".join(out)


def _emit(m: Machine, text: str) -> None:
    if m.target.traits.print_style == "cpu_sim":  # the simulator prints directly
        m.out.write(text)
        return
    room = m.print_buffer - m.print_used
    data = text.encode()
    if len(data) <= room:
        m.print_used += len(data)
        m.out.write(text)
        return
    if room > 0:
        m.out.write(data[:room].decode(errors="ignore"))
        m.print_used = m.print_buffer
        if not text[:room].endswith("\n"):
            m.out.write("\n")
    m.out.write(OVERFLOW_WARNING + "\n")


def _tprint_rule(sig: Sig) -> None:
    src, tmp = sig["src"], sig["tmp"]
    if isinstance(src, TileSpec):
        if src.loc in (TileType.Acc, TileType.Mat):
            if tmp is None:
                raise sig.fail(f"printing a {src.loc.name} tile needs the GM tmp operand "
                               "(TPRINT(src, tmp), tmp of at least Numel*sizeof(T) bytes)")
            need = src.rows * src.cols * src.dtype.itemsize  # (Numel*sizeof(T): Rows*Cols)
            if isinstance(tmp, GMSpec) and tmp.numel * tmp.dtype.itemsize < need:
                raise sig.fail(f"tmp holds {tmp.numel * tmp.dtype.itemsize} bytes, "
                               f"printing needs {need} (Numel*sizeof(T))")
        elif src.loc is not TileType.Vec and sig.target.traits.npu_static_checks:
            raise sig.fail(f"cannot print a {src.loc.name} tile (Vec, Acc or Mat only)")
    elif isinstance(src, GMSpec) and src.layout not in (Layout.ND, Layout.DN, Layout.NZ):
        raise sig.fail(f"GlobalTensor layout {src.layout.name} cannot be printed "
                       "(ND, DN or NZ only)")
    if isinstance(src, GMSpec) and tmp is not None:
        # (the C++ overloads: TPRINT(globalTensor) and TPRINT(tile, globalTmp))
        raise sig.fail("expects tmp only when src is a tile_buf (a GlobalTensor prints "
                       "without one)")


def _no_mat_print(sig: Sig) -> None:
    """a5 cannot print Mat tiles."""
    src = sig["src"]
    if isinstance(src, TileSpec) and src.loc is TileType.Mat:
        raise sig.fail(f"printing Mat tiles is not supported on {sig.target}")


@instr("TPRINT", family="irregular", pipe=Pipe.ALL, returns_event=False, timing="refuse",
       ptoas=Ptoas(attrs={"printFormat": Attr("Format", values={
           0: PrintFormat.Width8_Precision4, 1: PrintFormat.Width8_Precision2,
           2: PrintFormat.Width10_Precision6})}),
       operands=(Opnd("src", "tile|gm"), Opnd("tmp", "tile|gm", "scratch", optional=True)),
       params=(Param("Format", None),),
       dtype_key=("src",),
       # the seed page's supported element types; the simulator prints any type
       static=(_tprint_rule,
               sim_unchecked_type(dtype_in("src", "f32 f16 i8 i16 i32 ui8 ui16 ui32"))),
       static_for={"a5": (_no_mat_print,)})
def TPRINT(m: Machine, src: Any, tmp: Any = None, *, Format: Any = None) -> None:  # noqa: N802,N803
    """Print a tile (or GlobalTensor) for debugging; the data is not modified."""
    fmt = _resolve_format(m, Format)
    if isinstance(src, GlobalTensor):
        _emit(m, _gm_text(src, fmt))
        return
    if m.target.traits.print_style == "cpu_sim":
        _emit(m, _cpu_tile_text(src, fmt))
        return
    data = None
    if src.loc in (TileType.Acc, TileType.Mat) and isinstance(tmp, GlobalTensor):
        # The NPU copies the tile to GM first: Acc with NZ -> ND conversion, Mat as raw storage.
        if src.loc is TileType.Acc:
            data = src.numpy()
        else:
            data = src.storage.reshape(src.rows, src.cols).copy()
        raw = tmp.flat.view(np.uint8)
        n = data.size  # (an Acc tile of a partial 16-row box stores more than it holds)
        raw[: n * src.dtype.itemsize] = np.ascontiguousarray(data).reshape(-1).view(np.uint8)
    _emit(m, _npu_tile_text(src, fmt, data))


def _resolve_format(m: Machine, fmt: Any) -> PrintFormat:
    if fmt is None:
        return PrintFormat.Width8_Precision4 if m.target.traits.print_style == "cpu_sim" \
            else PrintFormat.Width6_Precision2
    from ...enums import coerce_enum

    return coerce_enum(PrintFormat, fmt, "tprint: Format")



"""HTML tables of tiles and GlobalTensors (what Jupyter shows), and the values they show.

``Tile._repr_html_`` / ``GlobalTensor._repr_html_`` call :func:`tile_html` / :func:`gm_html`:
the logical values as a table, the valid region outlined, the pads (positions outside the
valid region) greyed, the element type, layout and location in the caption. An axis longer
than ``2 * EDGE + 1`` shows its first and last ``EDGE`` positions around an ellipsis. Reading
values never runs an instruction and never places a tile. This module reads the attributes of
the tile or view it is given and imports neither class (they import it); the heat maps and the
command line's ``--show`` are in :mod:`ptoisa.display`, which re-exports everything here.
"""

from __future__ import annotations

import html
import math
from typing import TYPE_CHECKING, Any

import numpy as np

from . import dtypes as dt_mod
from .errors import PtoError

if TYPE_CHECKING:
    from .tensor import GlobalTensor
    from .tile import Tile

#: positions shown at each end of an elided axis
EDGE = 8

_PAD_STYLE = "color:#9a9a9a;background:#ececec"
_EDGE_COLOR = "#d62728"


# ---- values ------------------------------------------------------------------------------

def shown(n: int) -> list[int]:
    """The positions of an axis of length ``n`` a table shows (all, or both ends)."""
    if n <= 2 * EDGE + 1:
        return list(range(n))
    return list(range(EDGE)) + list(range(n - EDGE, n))


def _logical(values: np.ndarray, dt: dt_mod.DType) -> np.ndarray:
    """Numbers a person reads: 4-bit and coded types decoded, narrow floats widened."""
    if dt.packed:
        return dt_mod.fp4_decode(values, dt)
    if dt.coded:
        return dt_mod.decode(values, dt)
    if dt.is_float and values.dtype != np.float64:
        return values.astype(np.float32)
    return values


def _lanes(t: Tile) -> int:
    """The number of blocks a tile of a lockstep launch holds values for (0: a plain tile)."""
    if t._buf is not None:
        return t._buf.shape[0] if t._buf.ndim > 1 else 0
    lz = t._lazy
    return lz.shape[0] if lz is not None and len(lz.shape) == 3 else 0


def _pick(n: int, block: int | None) -> int:
    b = 0 if block is None else block
    if not -n <= b < n:
        raise PtoError(f"block {block} out of range: the launch has {n} blocks")
    return b % n


def _valid(t: Tile, b: int | None) -> tuple[int, int]:
    vr, vc = t._vr, t._vc
    if b is not None:
        vr = int(vr[b]) if isinstance(vr, np.ndarray) else vr
        vc = int(vc[b]) if isinstance(vc, np.ndarray) else vc
    return int(vr), int(vc)


def tile_values(t: Tile, block: int | None = None
                ) -> tuple[np.ndarray | None, tuple[int, int], str]:
    """(the tile's logical ``rows x cols`` values as readable numbers (a copy) or None when the
    tile has no storage yet, its valid shape, a note naming the block) for one block of a
    lockstep launch (``block``, default 0) or the tile."""
    n = _lanes(t)
    b = _pick(n, block) if n else None
    note = f"block {b} of {n}" if n else ""
    if not (t.assigned or t._lazy is not None or t._pending is not None):
        return None, _valid(t, b), note
    v = np.array(t.read(t.rows, t.cols), copy=True)
    if v.ndim == 3:
        v = v[0 if b is None else b]
    return _logical(v, t.dtype), _valid(t, b), note


def gm_values(g: GlobalTensor, rows: list[int] | None = None, cols: list[int] | None = None
              ) -> np.ndarray:
    """Values of a GlobalTensor's 2-D view at rows x cols (default all) as numbers."""
    if isinstance(g.offset, np.ndarray):
        g = g.block(0)
    nr, nc = g.spec.rows_cols
    r = np.asarray(range(nr) if rows is None else rows, np.int64)[:, None]
    c = np.asarray(range(nc) if cols is None else cols, np.int64)[None, :]
    off = g.spec.offsets_at(r, c) + g.offset
    if g.dtype.packed:  # two codes per byte, the even element in the low nibble
        b = g.flat.view(np.uint8)[off >> 1]
        return _logical(np.where(off & 1, b >> 4, b & 0xF).astype(np.uint8), g.dtype)
    return _logical(np.array(g.flat[off]), g.dtype)


def _fmt(x: Any) -> str:
    if isinstance(x, (float, np.floating)):
        return "nan" if math.isnan(x) else f"{float(x):.4g}"
    return str(x.item() if isinstance(x, np.generic) else x)


# ---- captions ----------------------------------------------------------------------------

def tile_caption(t: Tile, valid: tuple[int, int], note: str = "") -> str:
    s = t.spec
    vr, vc = valid
    parts = [f"Tile {t.name!r}" if t.name else "Tile", s.dtype.name,
             f"{s.rows}x{s.cols}", f"valid {vr}x{vc}", f"{s.layout_name} layout",
             f"loc {s.loc.name}"]
    if t.addr is not None:
        parts.append(f"@{t.addr:#x}")
    if not s.pad.is_null:
        pv = s.pad.kind if s.pad.value is None else f"{s.pad.kind}({s.pad.value})"
        parts.append(f"pad value {pv}")
    if note:
        parts.append(note)
    return ", ".join(parts)


def gm_caption(g: GlobalTensor) -> str:
    s = g.spec
    rows, cols = s.rows_cols
    shape = "x".join(map(str, s.shape))
    off = g.offset if isinstance(g.offset, int) else f"{int(g.offset[0])} (block 0)"
    parts = [f"GlobalTensor {g.name!r}" if g.name else "GlobalTensor", s.dtype.name,
             f"{s.layout.name} layout", f"shape {shape}",
             f"stride {list(s.stride)}", f"offset {off}", f"as {rows}x{cols}"]
    outer = s.shape[:3]
    if s.layout.name == "ND" and math.prod(outer) > 1:
        parts.append(f"(outer {'x'.join(map(str, outer))} folded into rows)")
    return ", ".join(parts)


def _elided(rows: int, cols: int) -> str:
    if rows <= 2 * EDGE + 1 and cols <= 2 * EDGE + 1:
        return ""
    return f"showing the first and last {EDGE} of an axis longer than {2 * EDGE + 1}"


# ---- HTML ----------------------------------------------------------------------------------

def _table(caption: str, rows: int, cols: int, valid: tuple[int, int],
           cell: Any) -> str:
    """``cell(r_index_list, c_index_list) -> 2-D values`` or None (no values)."""
    rs, cs = shown(rows), shown(cols)
    vals = cell(rs, cs)
    vr, vc = valid
    out = ['<table class="ptoisa" style="border-collapse:collapse;font-family:monospace;'
           'font-size:11px;text-align:right">',
           f'<caption style="caption-side:top;text-align:left">{html.escape(caption)}'
           '</caption>']
    head = ["<th></th>"]
    for k, c in enumerate(cs):
        if k and c != cs[k - 1] + 1:
            head.append('<th class="ellipsis">\u2026</th>')
        head.append(f'<th class="col">{c}</th>')
    out.append("<thead><tr>" + "".join(head) + "</tr></thead><tbody>")
    width = len(head)
    for i, r in enumerate(rs):
        if i and r != rs[i - 1] + 1:
            out.append('<tr class="ellipsis"><th>\u22ee</th>'
                       + '<td class="ellipsis">\u22ee</td>' * (width - 1) + "</tr>")
        tds = [f'<th class="row">{r}</th>']
        for k, c in enumerate(cs):
            if k and c != cs[k - 1] + 1:
                tds.append('<td class="ellipsis">\u2026</td>')
            text = "" if vals is None else html.escape(_fmt(vals[i, k]))
            if r < vr and c < vc:
                style = []
                if r == vr - 1:
                    style.append(f"border-bottom:2px solid {_EDGE_COLOR}")
                if c == vc - 1:
                    style.append(f"border-right:2px solid {_EDGE_COLOR}")
                st = f' style="{";".join(style)}"' if style else ""
                tds.append(f'<td class="valid"{st}>{text}</td>')
            else:
                tds.append(f'<td class="pad" title="pad (outside the valid region)" '
                           f'style="{_PAD_STYLE}">{text}</td>')
        out.append("<tr>" + "".join(tds) + "</tr>")
    out.append("</tbody></table>")
    return "".join(out)


def tile_html(t: Tile, block: int | None = None) -> str:
    """The tile as an HTML table (what Jupyter shows for a Tile)."""
    vals, valid, note = tile_values(t, block)
    notes = [n for n in (note, _elided(t.rows, t.cols),
                         "" if vals is not None else "no storage yet: no values") if n]
    cap = tile_caption(t, valid, "; ".join(notes))

    def cell(rs: list[int], cs: list[int]) -> np.ndarray | None:
        return None if vals is None else vals[np.ix_(rs, cs)]
    return _table(cap, t.rows, t.cols, valid, cell)


def gm_html(g: GlobalTensor) -> str:
    """The GlobalTensor's 2-D view as an HTML table (what Jupyter shows for one)."""
    rows, cols = g.spec.rows_cols
    cap = gm_caption(g)
    el = _elided(rows, cols)
    if el:
        cap += "; " + el
    return _table(cap, rows, cols, (rows, cols), lambda rs, cs: gm_values(g, rs, cs))

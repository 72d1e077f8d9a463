"""Pictures of tiles and GlobalTensors: HTML tables for notebooks, heat maps as PNG.

* ``Tile._repr_html_`` / ``GlobalTensor._repr_html_`` (Jupyter shows a tile or a view by
  evaluating it) call :func:`tile_html` / :func:`gm_html`: the logical values as a table, the
  valid region outlined, the pads (positions outside the valid region) greyed, the element
  type, layout and location in the caption. An axis longer than ``2 * EDGE + 1`` shows its
  first and last ``EDGE`` positions around an ellipsis; the caption gives the full shape.
* :func:`show` (``pto.show(tile)``) draws the same values as a heat map with matplotlib (the
  optional extra ``ptoisa[plot]``; imported only when a picture is drawn): pads in grey, the
  valid region outlined. ``ptoisa run FILE.pto --show NAME`` writes that picture as
  ``NAME.png`` (:func:`cli_show`).

A GlobalTensor is shown as the 2-D view a tile sees through it (``GMSpec.rows_cols``: for ND
the outer three dimensions are folded into the rows); its caption gives the 5-D shape, the
strides and the offset. Reading values for a picture never runs an instruction and never
places a tile: a tile that has no storage yet is shown without values.
"""

from __future__ import annotations

import html
import math
from pathlib import Path
from typing import Any

import numpy as np

from . import dtypes as dt_mod
from .errors import PtoError
from .tensor import GlobalTensor
from .tile import Tile

#: positions shown at each end of an elided axis
EDGE = 8
#: the picture's size in pixels (``FIGSIZE`` inches at ``DPI``)
FIGSIZE = (6.4, 4.8)
DPI = 100
#: a heat map draws at most this many values (larger views are sampled with a stride)
MAX_PIXELS = 1 << 22

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


# ---- heat maps ----------------------------------------------------------------------------

def _picture_data(x: Any, block: int | None) -> tuple[np.ndarray, tuple[int, int], str]:
    """(values rows x cols as float, valid (rows, cols), title) of what :func:`show` draws."""
    if isinstance(x, Tile):
        vals, valid, note = tile_values(x, block)
        if vals is None:
            raise PtoError(f"{tile_caption(x, valid)}: the tile has no storage yet (nothing "
                           "was written to it): no values to show")
        return vals.astype(np.float64), valid, tile_caption(x, valid, note)
    if isinstance(x, GlobalTensor):
        rows, cols = x.spec.rows_cols
        step = max(1, math.ceil(math.sqrt(rows * cols / MAX_PIXELS)))
        v = gm_values(x, list(range(0, rows, step)), list(range(0, cols, step)))
        title = gm_caption(x) + (f", every {step}th row and column" if step > 1 else "")
        return v.astype(np.float64), v.shape, title  # type: ignore[return-value]
    a = np.asarray(x)
    if a.dtype.kind not in "biuf":
        raise PtoError(f"show takes a Tile, a GlobalTensor or a numeric array, got "
                       f"{type(x).__name__} of {a.dtype}")
    shape = "x".join(map(str, a.shape)) or "scalar"
    a2 = a.reshape(1, -1) if a.ndim < 2 else a.reshape(-1, a.shape[-1])
    note = "" if a.ndim <= 2 else f" as {a2.shape[0]}x{a2.shape[1]}"
    return a2.astype(np.float64), a2.shape, f"array {a.dtype} {shape}{note}"  # type: ignore


def show(x: Any, *, block: int | None = None, path: str | Path | None = None,
         title: str | None = None, cmap: str = "viridis") -> Any:
    """Draw a Tile, GlobalTensor or numpy array as a heat map and return the matplotlib
    ``Figure`` (a notebook shows it). Pads are grey and the valid region is outlined;
    ``block`` picks one block of a tile of a lockstep launch (default 0); ``path`` also
    writes the picture as PNG (``FIGSIZE`` x ``DPI``: 640 x 480 pixels). Needs matplotlib
    (``pip install 'ptoisa[plot]'``)."""
    require_matplotlib()
    from matplotlib.figure import Figure
    from matplotlib.patches import Rectangle
    from matplotlib.ticker import MaxNLocator
    vals, (vr, vc), auto = _picture_data(x, block)
    rows, cols = vals.shape
    mask = np.ones(vals.shape, bool)
    mask[:vr, :vc] = False
    data = np.ma.masked_array(vals, mask | ~np.isfinite(vals))
    fig = Figure(figsize=FIGSIZE, dpi=DPI)
    ax = fig.add_subplot()
    import matplotlib

    cm = matplotlib.colormaps[cmap].with_extremes(bad="#d9d9d9")
    aspect = "equal" if max(rows, cols) <= 4 * min(rows, cols) else "auto"
    im = ax.imshow(data, cmap=cm, interpolation="nearest", aspect=aspect)
    if (vr, vc) != (rows, cols) and vr and vc:
        ax.add_patch(Rectangle((-0.5, -0.5), vc, vr, fill=False, edgecolor=_EDGE_COLOR,
                               linewidth=1.5))
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("col")
    ax.set_ylabel("row")
    ax.set_title(title if title is not None else _wrap(auto), fontsize=8)
    fig.colorbar(im, ax=ax, fraction=0.046, pad=0.04)
    if path is not None:
        try:
            fig.savefig(path, dpi=DPI, format="png")
        except OSError as e:
            raise PtoError(f"cannot write {path}: {e.strerror or e}") from None
    return fig


def require_matplotlib() -> None:
    """Raise a PtoError saying how to install matplotlib when it is missing."""
    import importlib.util

    if importlib.util.find_spec("matplotlib") is None:
        raise PtoError("show needs matplotlib: pip install 'ptoisa[plot]'")


def _wrap(text: str, width: int = 80) -> str:
    import textwrap

    return "\n".join(textwrap.wrap(text, width))


# ---- the command line ----------------------------------------------------------------------

def resolve(names: list[str], arrays: dict[str, Any], tiles: list[Tile]) -> list[tuple[str, Any]]:
    """``ptoisa run --show NAME``: each NAME (``%`` optional) is a pointer argument (its array)
    or a tile SSA name of the compiled program (its Tile object, read after the run)."""
    require_matplotlib()  # before the run, not after it
    by_name: dict[str, Tile] = {}
    for t in tiles:
        if t.name:
            by_name.setdefault(t.name.lstrip("%"), t)
    out = []
    for raw in names:
        n = raw.lstrip("%")
        if n in arrays:
            if not isinstance(arrays[n], np.ndarray):
                raise PtoError(f"--show {raw}: argument %{n} is a scalar, not an array")
            out.append((n, arrays[n]))
        elif n in by_name:
            out.append((n, by_name[n]))
        else:
            known = sorted({*(k for k, v in arrays.items() if isinstance(v, np.ndarray)),
                            *by_name})
            raise PtoError(f"--show {raw}: no pointer argument or tile named %{n} (known: "
                           + ", ".join("%" + k for k in known) + ")")
    return out


def cli_show(items: list[tuple[str, Any]], out_dir: str | None) -> list[Path]:
    """Write each resolved ``--show`` item as ``NAME.png`` (into ``--out DIR`` when given,
    else the current directory): an array as it is after the run, a tile as the run left it
    (in a launch of several blocks: the last block's)."""
    d = Path(out_dir) if out_dir else Path(".")
    try:
        d.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise PtoError(f"cannot create {d}: {e.strerror or e}") from None
    written = []
    for name, x in items:
        p = d / f"{name}.png"
        title = None
        if isinstance(x, np.ndarray):
            title = f"%{name}: {x.dtype} {'x'.join(map(str, x.shape))} after the run"
        show(x, block=-1, path=p, title=title)
        written.append(p)
    return written


__all__ = ["cli_show", "gm_html", "resolve", "show", "tile_html"]

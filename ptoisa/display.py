"""Pictures of tiles and GlobalTensors: HTML tables for notebooks, heat maps as PNG.

* ``Tile._repr_html_`` / ``GlobalTensor._repr_html_`` (Jupyter shows a tile or a view by
  evaluating it) call :func:`tile_html` / :func:`gm_html`: the logical values as a table, the
  valid region outlined, the pads (positions outside the valid region) greyed, the element
  type, layout and location in the caption. An axis longer than ``2 * EDGE + 1`` shows its
  first and last ``EDGE`` positions around an ellipsis; the caption gives the full shape.
  Those tables live in :mod:`ptoisa.tables`, below tiles and GlobalTensors (which import it);
  this module, which names both classes, re-exports them.
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

import math
from pathlib import Path
from typing import Any

import numpy as np

from .errors import PtoError
from .tables import (
    _EDGE_COLOR,
    EDGE,
    gm_caption,
    gm_html,
    gm_values,
    shown,
    tile_caption,
    tile_html,
    tile_values,
)
from .tensor import GlobalTensor
from .tile import Tile

__all__ = ["DPI", "EDGE", "FIGSIZE", "MAX_PIXELS", "cli_show", "gm_caption", "gm_html",
           "gm_values", "require_matplotlib", "resolve", "show", "shown", "tile_caption",
           "tile_html", "tile_values"]

#: the picture's size in pixels (``FIGSIZE`` inches at ``DPI``)
FIGSIZE = (6.4, 4.8)
DPI = 100
#: a heat map draws at most this many values (larger views are sampled with a stride)
MAX_PIXELS = 1 << 22

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

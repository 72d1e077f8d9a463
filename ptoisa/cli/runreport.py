"""What ``ptoisa run`` prints about its results when they are not written with ``--out``:
one line per pointer argument (name, shape, element type, min / max / mean, NaN count), so a
run never computes and silently discards its results.

::

    @softmax on a2a3, 6 blocks:
      %x    45x64 f32  min -12.1  max 13.3  mean 0.0457            (unchanged)
      %out  45x64 f32  min 1.62e-12  max 0.998  mean 0.0156
"""

from __future__ import annotations

import hashlib
from typing import Any

import numpy as np

from .. import dtypes


def fingerprint(a: np.ndarray) -> bytes:
    """A digest of the array's bytes (to say which arguments a run left unchanged, without
    keeping a copy of them)."""
    return hashlib.blake2b(np.ascontiguousarray(a).view(np.uint8).ravel().data,
                           digest_size=16).digest()


def _type_name(a: np.ndarray) -> str:
    try:
        return dtypes.dtype(a.dtype).name
    except Exception:  # noqa: BLE001 - a numpy type ptoisa has no name for
        return str(a.dtype)


def _num(x: float) -> str:
    return f"{x:.6g}"


def summarize(a: np.ndarray) -> str:
    """``45x64 f32  min ..  max ..  mean ..`` (``NaN n`` when any; integers and floats of every
    width, ml_dtypes' too, are read as float64 for the figures)."""
    shape = "x".join(str(d) for d in a.shape) or "scalar"
    head = f"{shape} {_type_name(a)}"
    if a.size == 0:
        return f"{head}  (empty)"
    try:
        v = a.astype(np.float64)
    except (TypeError, ValueError):  # an element type with no float value
        return head
    nan = int(np.isnan(v).sum())
    ok = v[~np.isnan(v)] if nan else v
    parts = [head]
    if ok.size:
        parts += [f"min {_num(ok.min())}", f"max {_num(ok.max())}", f"mean {_num(ok.mean())}"]
    if nan:
        parts.append(f"NaN {nan}")
    return "  ".join(parts)


def render(title: str, arrays: list[tuple[str, np.ndarray]],
           before: dict[str, bytes] | None = None) -> str:
    """The title line, then one indented line per array; ``before`` (name -> fingerprint taken
    before the run) marks the arrays the run did not change."""
    width = max((len(n) for n, _ in arrays), default=0) + 2
    lines = [title]
    for name, a in arrays:
        line = f"  %{name:<{width}}{summarize(a)}"
        if before is not None and before.get(name) == fingerprint(a):
            line += "  (unchanged)"
        lines.append(line)
    return "\n".join(lines)


def pointer_arrays(pairs: Any) -> list[tuple[str, np.ndarray]]:
    """The (name, array) pairs of a run's arguments that are arrays."""
    return [(n, v) for n, v in pairs if isinstance(v, np.ndarray)]

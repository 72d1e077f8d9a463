"""The cycle model: per-instruction costs (a per-target table fitted to hardware), an in-order
pipe schedule per core with flags or data dependences, reports, Chrome traces and plots.

``pto.launch(kernel, ..., cycles=True)`` and ``prog.fn(..., cycles=True)`` return a
:class:`CycleReport`; ``ptoisa run FILE.pto --cycles [--trace out.json]`` prints it;
``ptoisa cycles PACK`` compares the model with the hardware measurements.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from ..observe import observing
from .report import CycleReport, Row
from .schedule import CycleModel

__all__ = ["CycleModel", "CycleReport", "Row", "observe", "timed"]


def timed(run: Any, target: str | None = None) -> CycleReport:
    """Run ``run()`` with a cycle model observing every launch machine; return its report,
    the run's return value in ``report.outputs``."""
    with observe(target) as model:
        out = run()
    rep = model.report()
    rep.outputs = out
    return rep


@contextmanager
def observe(target: str | None = None) -> Iterator[CycleModel]:
    """Time a block: ``with observe() as model: ...`` times eager code on the current machine
    and every launch inside the block; ``model.report()`` afterwards."""
    model = CycleModel(target)
    with observing(model):
        yield model

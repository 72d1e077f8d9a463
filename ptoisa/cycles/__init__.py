"""The cycle model: per-instruction costs (a per-target table fitted to hardware), an in-order
pipe schedule per core with flags or data dependences, reports, Chrome traces and plots.

``pto.launch(kernel, ..., cycles=True)`` and ``prog.fn(..., cycles=True)`` return a
:class:`CycleReport`; ``ptoisa run FILE.pto --cycles [--trace out.json]`` prints it;
``ptoisa cycles PACK`` compares the model with the hardware measurements.
``cycles="timing"`` (``ptoisa run --cycles=timing``) times a run without computing values
(``Instr.timing``; value-dependent ops stop it by name): the same cycles, far faster.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from ..errors import PtoError
from ..observe import observing
from ..targets import TargetLike
from .report import CycleReport, Row
from .schedule import CycleModel

__all__ = ["CycleModel", "CycleReport", "Row", "cycles_mode", "observe", "timed"]


def cycles_mode(cycles: Any) -> tuple[bool, bool]:
    """``cycles=`` of a launcher (False, True or "timing") as (timed, with values)."""
    if cycles is False or cycles is None:
        return False, True
    if cycles is True:
        return True, True
    if cycles == "timing":
        return True, False
    raise PtoError(f"cycles must be False, True or 'timing' (no values computed), got "
                   f"{cycles!r}")


def timed(run: Any, target: TargetLike | None = None, *, values: bool = True) -> CycleReport:
    """Run ``run()`` with a cycle model observing every launch machine; return its report,
    the run's return value in ``report.outputs`` (``values=False``: timing only)."""
    with observe(target, values=values) as model:
        out = run()
    rep = model.report()
    rep.outputs = out
    return rep


@contextmanager
def observe(target: TargetLike | None = None, *, values: bool = True) -> Iterator[CycleModel]:
    """Time a block: ``with observe() as model: ...`` times eager code on the current machine
    and every launch inside the block; ``model.report()`` afterwards. ``values=False``: the
    machines compute no values inside the block (timing only)."""
    model = CycleModel(target, values=values)
    with observing(model):
        yield model

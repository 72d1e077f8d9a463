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

from .report import CycleReport, Row
from .schedule import CycleModel

__all__ = ["CycleModel", "CycleReport", "Row", "observe", "timed"]


def timed(run: Any, target: str | None = None, machine: Any = None) -> CycleReport:
    """Run ``run()`` with a cycle model observing every launch machine (and ``machine``);
    return its report, the run's return value in ``report.outputs``."""
    from .. import grid

    model = CycleModel(target)
    grid.launch_observers.append(model)
    if machine is not None:
        machine.observers.append(model)
    hooks = _core_hooks()

    def attach(m: Any) -> None:  # every core's machine of a mixed launch
        m.observers.append(model)

    if hooks is not None:
        hooks.append(attach)
    try:
        out = run()
    finally:
        grid.launch_observers.remove(model)
        if machine is not None and model in machine.observers:
            machine.observers.remove(model)
        if hooks is not None:
            hooks.remove(attach)
    rep = model.report()
    rep.outputs = out
    return rep


_HOOKS: list[Any] = []


def _core_hooks() -> list[Any] | None:
    """The hooks a mixed (cube + vector) launch calls with each core's machine, where that
    launcher exists (ptoisa.streams); looked up once (a failed import is slow)."""
    if not _HOOKS:
        try:
            from .. import streams  # type: ignore[attr-defined]
            _HOOKS.append(getattr(streams, "MACHINE_HOOKS", None))
        except ImportError:
            _HOOKS.append(None)
    return _HOOKS[0]  # type: ignore[no-any-return]


@contextmanager
def observe(target: str | None = None) -> Iterator[CycleModel]:
    """Time eager code outside a launch: ``with observe() as model: ...`` attaches a cycle
    model to the current machine (and to launches inside the block); ``model.report()``
    afterwards."""
    from .. import grid
    from ..memory import current

    model = CycleModel(target)
    m = current()
    m.observers.append(model)
    grid.launch_observers.append(model)
    try:
        yield model
    finally:
        grid.launch_observers.remove(model)
        if model in m.observers:
            m.observers.remove(model)

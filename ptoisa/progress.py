"""A progress line for long work on a terminal: ``conformance: 412/1203 (34%) 96.1/s ETA 0:08``,
rewritten in place (``\\r``) on stderr, erased when the work ends.

It shows only where someone watches: when the stream is a TTY, when nothing turned it off
(``--quiet`` of a command: :func:`set_quiet`; ``PTOISA_PROGRESS=0`` in the environment), once
the work has lasted ``delay`` seconds (short work prints nothing), and only for the outermost
piece of work (a conformance case's launch does not draw over the conformance line). Lines are
redrawn at most every ``interval`` seconds.

::

    with Progress(len(cases), "conformance") as bar:
        for c in cases:
            run(c)
            bar.before_output(sys.stdout)   # erased first when stdout is the terminal too
            print(result)
            bar.update()
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from typing import Any, TextIO

_quiet = False
_active: list[Progress] = []
#: defaults: seconds before the line first shows, and between redraws
DELAY, INTERVAL = 0.5, 0.1


def set_quiet(quiet: bool) -> bool:
    """Turn progress lines off (True) or back on; returns the previous setting."""
    global _quiet
    prev, _quiet = _quiet, bool(quiet)
    return prev


def before_output(stream: Any) -> None:
    """Someone is about to write to ``stream`` (TPRINT to stdout): erase the progress line
    first if it shares the terminal (it comes back at the next update)."""
    for bar in _active:
        bar.before_output(stream)


def _fmt_eta(seconds: float) -> str:
    s = int(seconds + 0.5)
    h, rem = divmod(s, 3600)
    m, s = divmod(rem, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


class Progress:
    """``total`` items (None: unknown), named ``label``; :meth:`update` as they finish."""

    def __init__(self, total: int | None, label: str, *, stream: TextIO | None = None,
                 delay: float | None = None, interval: float | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.total, self.label = total, label
        self.stream = stream if stream is not None else sys.stderr
        self.delay = DELAY if delay is None else delay
        self.interval = INTERVAL if interval is None else interval
        self.clock = clock
        self.done = 0
        self.start = clock()
        self._last_draw = -1e300
        self._width = 0  # characters of the line on screen (0: nothing drawn)
        self.enabled = (not _quiet and os.environ.get("PTOISA_PROGRESS", "1") != "0"
                        and not _active and _isatty(self.stream))

    def __enter__(self) -> Progress:
        if self.enabled:
            _active.append(self)
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def update(self, n: int = 1) -> None:
        self.done += n
        if not self.enabled:
            return
        now = self.clock()
        if now - self.start < self.delay or now - self._last_draw < self.interval:
            return
        self._last_draw = now
        self._draw(self.line(now))

    def line(self, now: float | None = None) -> str:
        """The text of the line: count (and share of the total), rate, time left."""
        elapsed = max((self.clock() if now is None else now) - self.start, 1e-9)
        rate = self.done / elapsed
        if self.total:
            pct = 100 * self.done // self.total
            text = f"{self.label}: {self.done}/{self.total} ({pct}%) {rate:.1f}/s"
            if rate > 0 and self.done < self.total:
                text += f" ETA {_fmt_eta((self.total - self.done) / rate)}"
            return text
        return f"{self.label}: {self.done} {rate:.1f}/s"

    def clear(self) -> None:
        """Erase the line (before other output to the same terminal); the next update redraws
        it at once."""
        if self._width:
            self._write("\r" + " " * self._width + "\r")
            self._width = 0
            self._last_draw = -1e300

    def before_output(self, stream: Any) -> None:
        """Erase the line if ``stream`` (about to be written) shares the terminal."""
        if self._width and _isatty(stream):
            self.clear()

    def close(self) -> None:
        self.clear()
        if self in _active:
            _active.remove(self)

    def _draw(self, text: str) -> None:
        pad = max(self._width - len(text), 0)
        self._write("\r" + text + " " * pad)
        self._width = max(len(text), self._width)

    def _write(self, s: str) -> None:
        try:
            self.stream.write(s)
            self.stream.flush()
        except (OSError, ValueError):  # a closed or broken terminal: stop drawing
            self.enabled = False


def _isatty(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):
        return False

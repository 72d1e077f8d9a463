"""Host memory: refuse, up front and in one line, what the machine running ptoisa cannot hold.

A ``zeros:100000x100000:f32`` argument or a lockstep launch of 10^9 blocks would otherwise
die deep inside numpy (or swap the machine to a halt) after seconds of work. Every place that
sizes a large host allocation from user input asks :func:`check_host_memory` first.
"""

from __future__ import annotations

import os

from .errors import PtoError


class HostMemoryError(PtoError):
    """What was asked for needs more host memory than the machine has available."""


def available_bytes() -> int | None:
    """Host memory available to this process now (Linux: MemAvailable; else free physical
    pages), or None when the platform does not say."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return int(os.sysconf("SC_AVPHYS_PAGES")) * int(os.sysconf("SC_PAGE_SIZE"))
    except (OSError, ValueError, AttributeError):
        return None


def fmt_bytes(n: int) -> str:
    for unit, size in (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            return f"{n / size:.1f} {unit}" if n < 1 << 60 else f"{n / size:.3g} {unit}"
    return f"{n} bytes"


def check_host_memory(nbytes: int, what: str) -> None:
    """Raise HostMemoryError when ``what`` (needing ``nbytes``) exceeds the available host
    memory. Platforms that do not report available memory are not checked."""
    avail = available_bytes()
    if avail is not None and nbytes > avail:
        raise HostMemoryError(f"{what} needs {fmt_bytes(nbytes)} of host memory; "
                              f"{fmt_bytes(avail)} available")


#: bytes per lane by which a machine's auto-storage arena grows (memory.Machine._arena_alloc)
ARENA_CHUNK = 1 << 19


def lockstep_bytes(blocks: int) -> int:
    """Host bytes a lockstep launch holds per block besides its tiles: the block's share of
    the auto-storage arena and its block-index values."""
    return blocks * (ARENA_CHUNK + 64)


#: lockstep launches needing less host memory than this are not checked
LOCKSTEP_UNCHECKED = 256 << 20


def check_lockstep(blocks: int) -> None:
    """A lockstep launch keeps every block's on-chip storage at once: refuse block counts
    whose storage alone exceeds the host's memory (before allocating anything). Launches
    needing less than :data:`LOCKSTEP_UNCHECKED` are not checked: reading the host's free
    memory costs tens of microseconds, a large part of a small launch."""
    if lockstep_bytes(blocks) < LOCKSTEP_UNCHECKED:
        return
    try:
        check_host_memory(lockstep_bytes(blocks), f"a lockstep launch of {blocks} blocks "
                          "(each block holds its own on-chip storage)")
    except HostMemoryError as e:
        raise HostMemoryError(f"{e.message}: launch fewer blocks, or run them one by one "
                              "(lockstep=False; CLI: --lockstep off)") from None

"""Ascend A2/A3 (include/pto/npu/a2a3, buffer_limits.hpp)."""

from .. import Target, collect_legality

KiB = 1024

BUFFERS = {"UB": 192 * KiB, "L1": 512 * KiB, "L0A": 64 * KiB, "L0B": 64 * KiB, "L0C": 128 * KiB,
           "BIAS": 1 * KiB, "FB": 2 * KiB}

TARGET = Target("a2a3", BUFFERS, collect_legality(__name__, __path__), __doc__ or "")

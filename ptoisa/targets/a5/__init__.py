"""Ascend A5 (include/pto/npu/a5, buffer_limits.hpp)."""

from .. import Target, collect_legality

KiB = 1024

BUFFERS = {"UB": 256 * KiB, "L1": 512 * KiB, "L0A": 64 * KiB, "L0B": 64 * KiB, "L0C": 256 * KiB,
           "BIAS": 4 * KiB, "FB": 4 * KiB, "L0A_MX": 4 * KiB, "L0B_MX": 4 * KiB}

TARGET = Target("a5", BUFFERS, collect_legality(__name__, __path__), __doc__ or "")

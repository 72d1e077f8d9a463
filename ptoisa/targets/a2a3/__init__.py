"""Ascend A2/A3 (include/pto/npu/a2a3, buffer_limits.hpp)."""

from .. import Target, collect_legality

KiB = 1024

BUFFERS = {"UB": 192 * KiB, "L1": 512 * KiB, "L0A": 64 * KiB, "L0B": 64 * KiB, "L0C": 128 * KiB,
           "BIAS": 1 * KiB, "FB": 2 * KiB}

#: PTOAS PlanMemory's A3 memory spec (lib/PTO/Transforms/PTOPlanMemory.cpp, kA3, given there in
#: bits): the hardware sizes, except that Bias is planned as 64 KiB and Scaling as large as UB
PLAN = {"UB": (192 * KiB, 32), "L1": (512 * KiB, 32), "L0A": (64 * KiB, 512),
        "L0B": (64 * KiB, 512), "L0C": (128 * KiB, 512), "BIAS": (64 * KiB, 32),
        "FB": (192 * KiB, 32)}

TARGET = Target("a2a3", BUFFERS, collect_legality(__name__, __path__), __doc__ or "",
                PLAN)

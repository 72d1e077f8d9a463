"""Ascend A5 (include/pto/npu/a5, buffer_limits.hpp)."""

from .. import Target, collect_legality

KiB = 1024

BUFFERS = {"UB": 256 * KiB, "L1": 512 * KiB, "L0A": 64 * KiB, "L0B": 64 * KiB, "L0C": 256 * KiB,
           "BIAS": 4 * KiB, "FB": 4 * KiB, "L0A_MX": 4 * KiB, "L0B_MX": 4 * KiB}

#: PTOAS PlanMemory's A5 memory spec (lib/PTO/Transforms/PTOPlanMemory.cpp, kA5, given there in
#: bits): UB and Scaling planned as 248 KiB, Bias as 64 KiB
PLAN = {"UB": (248 * KiB, 32), "L1": (512 * KiB, 32), "L0A": (64 * KiB, 512),
        "L0B": (64 * KiB, 512), "L0C": (256 * KiB, 512), "BIAS": (64 * KiB, 32),
        "FB": (248 * KiB, 32)}

TARGET = Target("a5", BUFFERS, collect_legality(__name__, __path__), __doc__ or "",
                PLAN)

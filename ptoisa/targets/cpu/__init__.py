"""The upstream C++ CPU simulator's profile (include/pto/cpu/).

Buffers: the simulator's A2A3 sizes with UB raised to 512 KiB (NPUMemoryModel); Bias and
Scaling tiles live in UB there, so this profile has no separate BIAS/FB buffers.
"""

from .. import Target, collect_legality

KiB = 1024

BUFFERS = {"UB": 512 * KiB, "L1": 512 * KiB, "L0A": 64 * KiB, "L0B": 64 * KiB, "L0C": 128 * KiB,
           "L0A_MX": 4 * KiB, "L0B_MX": 4 * KiB}

TARGET = Target("cpu", BUFFERS, collect_legality(__name__, __path__), __doc__ or "")

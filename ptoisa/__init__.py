"""ptoisa: the PTO tile ISA of Ascend NPUs, executable in Python.

Write tile kernels with the C++ intrinsics' names (``pto.TLOAD``, ``pto.TADD``, ...), run them
on numpy arrays for the cpu, a2a3 or a5 target, and get errors that say what is allowed.
"""

from __future__ import annotations

from typing import Any

from . import dtypes
from .concurrent.mixed import (
    DeadlockError,
    Direction,
    TileSplitAxis,
    TPipe,
    core_type,
    get_subblock_idx,
    get_subblock_num,
    launch_mixed,
)
from .display import show
from .dtypes import DType, dtype
from .enums import (
    DYNAMIC,
    AtomicType,
    BLayout,
    CmpMode,
    CompactMode,
    Layout,
    PadValue,
    Pipe,
    PrintFormat,
    ReluPreMode,
    RoundMode,
    SaturationMode,
    SLayout,
    TileType,
)
from .errors import (
    ConstraintError,
    ExecutionError,
    IllegalInstruction,
    ParseError,
    PtoError,
    PtoMemoryError,
    RuntimeCheckError,
    UnsupportedType,
    VerifyError,
)
from .exporter import export
from .grid import BlockDivergence, Lanes, get_block_idx, get_block_num, launch
from .interp import Program, load
from .isa import REGISTRY, Event, Instr, lookup
from .isa.matrix.matmul import set_matmul_accumulation
from .memory import Machine, current, target
from .symbolic import ExportError
from .symbolic import max as max  # noqa: A004 - pto.max (not in __all__)
from .symbolic import min as min  # noqa: A004 - pto.min
from .symbolic import range as range  # noqa: A004 - pto.range
from .targets import DEFAULT_TARGET
from .tensor import GlobalTensor
from .tile import Dyn, Tile, TileAcc, TileLeft, TileRight, TileSpec, tile_spec

__version__ = "0.1.0"

__all__ = [
    "DYNAMIC", "AtomicType", "BLayout", "CmpMode", "CompactMode", "DType", "Dyn", "Event",
    "ExecutionError", "GlobalTensor", "IllegalInstruction", "Instr", "Layout", "Machine",
    "PadValue", "ParseError", "Pipe", "PrintFormat", "PtoError", "PtoMemoryError", "REGISTRY",
    "ReluPreMode", "RoundMode", "RuntimeCheckError", "SLayout", "SaturationMode", "Tile",
    "TileAcc", "TileLeft", "TileRight", "TileSpec", "TileType", "UnsupportedType", "VerifyError",
    "current", "dtype", "dtypes", "lookup", "target", "tile_spec",
    "BlockDivergence", "Lanes", "get_block_idx", "get_block_num", "launch",
]

__all__ += ["ConstraintError", "Program", "load", "set_matmul_accumulation"]
__all__ += ["DEFAULT_TARGET"]
# pto.min / pto.max / pto.range are attributes only: a star import must not shadow builtins
__all__ += ["ExportError", "export"]
__all__ += ["show"]
__all__ += ["DeadlockError", "Direction", "TPipe", "TileSplitAxis", "core_type",
            "get_subblock_idx", "get_subblock_num", "launch_mixed"]

from .concurrent import comm  # noqa: E402 - the pto::comm namespace (multi-rank kernels)

__all__ += ["comm"]

from .vector import v as v  # noqa: E402 - pto.v.vadd ...: the vector micro-ISA's ops

__all__ += ["v"]

from .vector import vmi as vmi  # noqa: E402 - pto.vmi.vadd ...: the logical vector ops (VMI)
from .vector.logical import LMask as LMask  # noqa: E402 - VMI values
from .vector.logical import LVec as LVec  # noqa: E402

__all__ += ["LMask", "LVec", "vmi"]

# Every registered instruction is an attribute of the package: pto.TADD, pto.TROWSUM, ...
globals().update(REGISTRY)
__all__ += sorted(REGISTRY)


def __getattr__(name: str) -> Any:
    ins = REGISTRY.get(name)
    if ins is not None:
        return ins
    raise AttributeError(f"module 'ptoisa' has no attribute {name!r}")

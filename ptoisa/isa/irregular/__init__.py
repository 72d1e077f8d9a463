"""The irregular-and-complex family: gathers/scatters, sorts, quantisation, histograms, random
numbers, partial ops, TPRINT.

The family is this package (its name, ``_`` read as ``-``); each module below holds a few of its
instructions (importing the package declares them all)."""

from . import (  # noqa: F401 - declare
    gather_scatter,
    generators,
    partial,
    quant_ops,
    sort,
    tprint,
)
from .enums import (
    Coalesce,
    GatherAxis,
    GatherOOB,
    HistByte,
    MaskPattern,
    ScatterAtomicOp,
    ScatterAxis,
    ScatterConflict,
    ScatterOOB,
)
from .generators import philox4x32
from .sort import MrgSortExecutedNumList

__all__ = ["Coalesce", "GatherAxis", "GatherOOB", "HistByte", "MaskPattern",
           "MrgSortExecutedNumList", "ScatterAtomicOp", "ScatterAxis", "ScatterConflict",
           "ScatterOOB", "philox4x32"]

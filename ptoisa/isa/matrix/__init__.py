"""The matrix-and-matrix-vector family: TMATMUL/TGEMV (+ACC, BIAS, MX), moves between tile roles
(TMOV), the HF32/TF32 modes.

The family is this package (its name, ``_`` read as ``-``); each module below holds a few of its
instructions (importing the package declares them all)."""

from . import hif4, matmul, mov  # noqa: F401 - declare the instructions

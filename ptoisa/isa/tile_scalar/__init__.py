"""The tile-scalar-and-immediate family (``tile-scalar``): a tile with a scalar operand.

The family is this package (its name, ``_`` read as ``-``); each module below holds a few of its
instructions (importing the package declares them all)."""

from . import compare, scalar  # noqa: F401 - declare the instructions

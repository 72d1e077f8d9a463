"""The reduce-and-expand family: row/column reductions, arg-reductions, expansions, interleaving.

The family is this package (its name, ``_`` read as ``-``); each module below holds a few of its
instructions (importing the package declares them all)."""

from . import reduce_expand, rowsum  # noqa: F401 - declare the instructions

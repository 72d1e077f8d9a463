"""The irregular-and-complex family: gathers/scatters, sorts, quantisation, histograms, random
numbers, partial ops, TPRINT.

The family is this package (its name, ``_`` read as ``-``); each module below holds a few of its
instructions (importing the package declares them all)."""

from . import ops, partial, tprint  # noqa: F401 - declare the instructions

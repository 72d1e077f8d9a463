"""The layout-and-rearrangement family: extract/insert windows, concat, transpose, reshape/views,
fill-pad, img2col.

The family is this package (its name, ``_`` read as ``-``); each module below holds a few of its
instructions (importing the package declares them all)."""

from . import fillpad, img2col, rearrange  # noqa: F401 - declare the instructions

"""The sync-and-config family: flags between pipes, barriers, cross-core flags, SYNCALL, the
img2col configuration registers.

The family is this package (its name, ``_`` read as ``-``); each module below holds a few of its
instructions (importing the package declares them all)."""

from . import cross_core, flags, img2col_config  # noqa: F401 - declare the instructions

"""The memory-and-data-movement family: TASSIGN, TLOAD, TSTORE, TSTORE_FP, TPREFETCH_ASYNC.

The family is this package (its name, ``_`` read as ``-``); each module below holds a few of its
instructions (importing the package declares them all)."""

from . import load_store, prefetch_async  # noqa: F401 - declare the instructions

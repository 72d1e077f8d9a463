"""The elementwise (tile-tile) family: unary and binary operations over the valid region,
conversions (TCVT), comparisons and selection (TCMP, TSEL).

The family is this package (its name, ``_`` read as ``-``); each module below holds a few of its
instructions (importing the package declares them all)."""

from . import (  # noqa: F401 - declare the instructions
    common,
    compare,
    cvt,
    relu_conv,
    tadd,
    unary_binary,
)

"""The vector micro-ISA (VPTO, ``dialect="vpto"``): one module per chapter of
``spec/ptoas-main/isa/micro-isa/`` that ptoisa executes (DMA copies, predicates, vector
loads / stores, unary, binary and vector-scalar ops, conversions, DSA / SFU ops, the cube
chapter's staged loads, MAD and FIXPIPE). ``common.py`` holds what they share: the lane
masking, operand rules and the element arithmetic.

The family is this package; importing it declares every entry."""

from . import (  # noqa: F401 - declare the instructions
    atomic,
    binary,
    compare_select,
    conversion,
    cube,
    dma,
    dma_regs,
    gather_scatter,
    load_store,
    materialize,
    predicate,
    predicate_logic,
    predicate_ls,
    rearrangement,
    reduction,
    sfu,
    simt,
    spr,
    strided,
    unaligned,
    unary,
    vec_scalar,
)

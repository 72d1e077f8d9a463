"""VMI (``pto.vmi.*``, ``dialect="vmi"``, spec/ptoas-main/isa/vmi-isa/): the logical vector
layer above the micro-ops. ptoisa runs it at the logical level: a value is its ``L`` lanes
(``ptoisa/vector/logical.py``), never the physical registers PTOAS's layout pass would split
it onto, so a program's results are those of its value semantics. One module per group of
the ISA's chapters: ``memory.py`` (01, 07 gathers), ``masks.py`` (08), ``arith.py`` (02, 03),
``reduce.py`` (04, 05), ``convert.py`` (06), ``sfu.py`` (07, 09), ``permute.py`` (the
manual's constants and permutations); ``layout.py`` holds the
layout helpers (``ensure_*``: the identity on a logical value), ``common.py`` what they
share.

The family is this package; importing it declares every entry. An entry's registry name is
``VMI_`` + its op name upper-cased (``pto.vmi.vadd`` is ``VMI_VADD``)."""

from . import (  # noqa: F401 - declare the instructions
    arith,
    convert,
    layout,
    masks,
    memory,
    permute,
    reduce,
    sfu,
)

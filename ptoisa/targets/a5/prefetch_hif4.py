"""Legality of TPREFETCH_ASYNC (any element type: a cache hint). TMATMUL_MX_HIF4 is an A6
instruction: no target here has it (see ptoisa/isa/hif4.py)."""

from .. import Rule, rule

LEGALITY: dict[str, Rule] = {
    "TPREFETCH_ASYNC": rule(),
}

"""Legality of TPREFETCH_ASYNC (any element type: a cache hint) and TMATMUL_MX_HIF4 (declared
on every target so that a use reports why it is not modelled, see ptoisa/isa/hif4.py)."""

from .. import Rule, rule

LEGALITY: dict[str, Rule] = {
    "TPREFETCH_ASYNC": rule(),
    "TMATMUL_MX_HIF4": rule(),
}

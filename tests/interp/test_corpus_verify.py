"""Every corpus file verifies (parse + SSA + compile) for the targets of its RUN lines, or is
rejected with the diagnostic PTOAS gives, when PTOAS rejects it (``not ptoas``).

Files that state several errors (one per function: ``tquant_verify_invalid.pto``,
``tcvt_verify_invalid.pto``) are checked function by function, in file order.

Honest bookkeeping: rejections our verifier does not detect yet are strict xfails (they turn
into failures the day they are detected, so the table gets updated); programs PTOAS accepts
but that use an instruction the target does not implement are listed with the reason.
"""

from __future__ import annotations

import pytest
from interp_corpus import CASES, SKIP_REASON, Case

from ptoisa.errors import ParseError, PtoError
from ptoisa.interp.verify import diagnose
from ptoisa.text import parse

pytestmark = pytest.mark.skipif(not CASES, reason=SKIP_REASON)

# PTOAS rejects these; our verifier does not detect it yet (xfail strict=True).
UNDETECTED: dict[str, str] = {}

# Detected, with our wording: the essential part our message must contain.
OUR_WORDING = {
    "issue487_tsel_i8_parser_arch_scope.pto": "element type i8 is not supported on a2a3",
    "thistogram_verify_invalid_a3.pto": "thistogram: not supported on target a2a3",
    "tinsert_verify_a5_invalid_loc.pto": "Vec -> Acc is not a data path on a5",
}

# PTOAS accepts these (its verifier does not check the arch), the target has no implementation
# of the instruction (no NPU code in the C++ ISA): not supported here, by design.
NO_TARGET_IMPL = {
    "recent_ops_v0_roundtrip.pto": "a ptobc round-trip test: TGEMV_MX on the default arch a3",
}

# This corpus is an older PTOAS's; rules the current one (ptoas-main) added since reject these
# files as they stand (the current tree's copy of the file was updated to the rule); a key
# "NAME@TARGET" holds for that target only.
TIGHTENED = {
    "tgemv_mx_emitc.pto": "ptoas-main's MX verifier takes fp8 as f8E4M3FN / f8E5M2, not MLIR's "
                          "f8E4M3 (its tgemv_mx_variants_emitc.pto now expects the rejection)",
    "tgemv_mx_variants_emitc.pto": "the same f8E4M3 rule (ptoas-main's copy is a 'not ptoas' "
                                   "test)",
    "tmatmul_mx_emitc.pto": "ptoas-main's MX verifier: the a_scale tile is [M, ceil(K/32)] "
                            "(tmatmul_mx_scale_invalid_a5.pto); this file's 16x32 is gone",
    "trem_emitc.pto": "A2/A3 trem tmp needs 2 valid rows (ptoas-main trem_tmp_contract_a3_invalid;"
                      " its trem_emitc.pto now passes a 2-row tmp)",
    "tquant.pto@a2a3": "A2/A3 tquant fp / offset are per-row broadcast tiles, not row-major (the "
                  "manual's pto.tquant; ptoas-main tquant_verify_invalid_a3_offset_layout; its "
                  "lit/pto/tquant.pto now passes col-major 16x1 tiles)",
    "tquant_e2e.pto@a2a3": "the same rule (its ptoas-main copy loads col-major 32x1 fp / "
                           "offset tiles)",
}


# ... and files it rejected that the current one accepts (the current tree states the new rule)
LOOSENED = {
    "pto_entry_single_nonvoid_rejected.pto": "a lone unmarked function may return a value "
                                             "(ptoas-main pto_entry_single_nonvoid_non_entry)",
}


# ... and single diagnostics of a file that states several, which the current PTOAS no longer
# gives (that function verifies now): diagnostic -> why
LOOSENED_DIAGNOSTICS = {
    "tquant_verify_invalid.pto": {
        "expects dst element type i8 for INT8_SYM quantization":
            "PTOAS takes an i8 or ui8 dst for either INT8 form (ptoas-main "
            "tquant_verify_invalid_int8_sym_wrong_dst.pto); ptoisa refuses the run by name",
        "expects dst element type ui8 for INT8_ASYM quantization":
            "the same (tquant_verify_invalid_int8_asym_wrong_dst.pto)"},
}


def _essential(diag: str) -> str:
    """``'pto.x' op expects ...`` -> ``expects ...`` (our messages name the op differently)."""
    return diag.split(" op ", 1)[1] if " op " in diag else diag


def _diagnose(case: Case) -> list[PtoError]:
    """Every error PTOAS-style verification finds: the module rules, then each function on its
    own (PTOAS reports one error per failing function)."""
    try:
        return diagnose(parse(case.path.read_text(), str(case.path)), case.target,
                        level=case.level)
    except ParseError as e:
        return [e]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_corpus_verifies(case: Case) -> None:
    name = case.path.name
    errors = _diagnose(case)
    if case.expect_fail and name in LOOSENED:
        assert not errors, errors[0].render()
        return
    if case.expect_fail:
        if name in UNDETECTED:
            if errors:
                pytest.fail(f"now detected: update UNDETECTED ({UNDETECTED[name]}): "
                            f"{errors[0].render()}")
            pytest.xfail(UNDETECTED[name])
        assert errors, f"PTOAS rejects {name}: {case.diagnostics}"
        gone = LOOSENED_DIAGNOSTICS.get(name, {})
        wants = [OUR_WORDING.get(name) or _essential(d) for d in case.diagnostics
                 if _essential(d) not in gone] or [""]
        assert len(errors) >= len(wants), ([e.render() for e in errors], wants)
        for err, want in zip(errors, wants, strict=False):
            assert want in err.render(), (want, err.render())
            assert err.loc is not None
        return
    if errors and name in NO_TARGET_IMPL and "not supported on target" in errors[0].message:
        pytest.xfail(NO_TARGET_IMPL[name])
    if name in TIGHTENED or f"{name}@{case.target}" in TIGHTENED:
        assert errors, f"{name} is accepted again: update TIGHTENED"
        return
    assert not errors, errors[0].render()


def test_undetected_table_names_real_files() -> None:
    names = {c.path.name for c in CASES if c.expect_fail}
    assert set(UNDETECTED) <= names
    assert set(OUR_WORDING) <= names
    assert set(NO_TARGET_IMPL) <= {c.path.name for c in CASES}
    assert {k.split("@")[0] for k in TIGHTENED} <= {c.path.name for c in CASES}
    assert set(LOOSENED) <= names
    assert set(LOOSENED_DIAGNOSTICS) <= names

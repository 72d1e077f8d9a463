"""Every corpus file verifies (parse + SSA + compile) for the targets of its RUN lines, or is
rejected with the diagnostic PTOAS gives, when PTOAS rejects it (``not ptoas``).

Honest bookkeeping: rejections our verifier does not detect yet are strict xfails (they turn
into failures the day they are detected, so the table gets updated); programs PTOAS accepts
but a family rule here rejects are listed with the reason.
"""

from __future__ import annotations

import pytest
from interp_corpus import CASES, SKIP_REASON, Case

from ptoisa.errors import ParseError, VerifyError
from ptoisa.interp import Program
from ptoisa.text import parse

pytestmark = pytest.mark.skipif(not CASES, reason=SKIP_REASON)

# PTOAS rejects these; our verifier does not detect it yet (xfail strict=True).
UNDETECTED = {
    "async_put_invalid_non_1d.pto": "tput_async GM operand must be flat 1-D: not checked",
    "resolve_reserved_buffers_reject_incomplete_peer_group_a5.pto":
        "initialize_l2l_pipe / reserve_buffer pairing is not modelled",
    "resolve_reserved_buffers_reject_non_peer_init_a5.pto":
        "initialize_l2l_pipe / reserve_buffer pairing is not modelled",
    "tpush_tpop_frontend_mixed_split_a5.pto": "initialize_l2l_pipe split usage is not modelled",
    "tpush_tpop_frontend_nosplit_conflict_a5.pto":
        "initialize_l2l_pipe split usage is not modelled",
    "tpush_tpop_dynamic_validshape_invalid.pto": "tpop_from_aic result types are not checked",
    "tassign_level3_missing_alloc_addr.pto": "--pto-level=level3 is not modelled",
    "tcvt_verify_invalid.pto": "tcvt src/dst shape compatibility is not checked (family rule)",
    "textract_verify_a5_vec_vec_invalid_layout.pto":
        "textract a5 vec->vec layout is not checked (family rule)",
    "tget_scale_addr_verify_invalid.pto": "tget_scale_addr dst space is not checked",
    "tinsert_verify_a2a3_invalid_dtype.pto": "tinsert a2a3 dtypes are not checked (family rule)",
}

# Detected, with our wording: the essential part our message must contain.
OUR_WORDING = {
    "issue487_tsel_i8_parser_arch_scope.pto": "element type i8 is not supported on a2a3",
    "tgather_compare_invalid_src_type.pto": "tgather",
    "thistogram_verify_invalid_a3.pto": "thistogram: not supported on target a2a3",
    "tinsert_verify_a5_invalid_loc.pto": "tinsert",
}

# PTOAS accepts these, a family rule here rejects them (reported to the family owners).
FALSE_REJECT = {
    "a2a3 Left layout": "matrix family: a2a3 TileLeft must be ZZ, PTOAS programs use NZ left "
                        "tiles on A3",
    "fp must hold 64-bit quant words": "PTOAS writes the fp (quant) tile as f32/f16 scaling",
    "Acc -> Vec is not supported on a2a3": "PTOAS lists acc->vec TMOV for A2/A3",
    "must be ZZ with 32-byte boxes": "mx scale tiles: PTOAS scaling tile layouts differ",
    "is not a data path on a5": "textract mat->scaling on a5",
    "must be an NZ Mat tile with 512-byte boxes": "tinsert a2a3 dst from a plain mat memref",
    "must have the same element size": "tgather compare form checked as the index form",
}


def _essential(diag: str) -> str:
    """``'pto.x' op expects ...`` -> ``expects ...`` (our messages name the op differently)."""
    return diag.split(" op ", 1)[1] if " op " in diag else diag


def _verify(case: Case) -> None:
    prog = Program(parse(case.path.read_text(), str(case.path)), case.target)
    prog.check()


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_corpus_verifies(case: Case) -> None:
    name = case.path.name
    if case.expect_fail:
        if name in UNDETECTED:
            try:
                _verify(case)
            except (ParseError, VerifyError):
                pytest.fail(f"now detected: update UNDETECTED ({UNDETECTED[name]})")
            pytest.xfail(UNDETECTED[name])
        with pytest.raises((ParseError, VerifyError)) as ei:
            _verify(case)
        want = OUR_WORDING.get(name) or _essential(case.diagnostic or "")
        assert want in ei.value.render(), (want, ei.value.render())
        assert ei.value.loc is not None
        return
    try:
        _verify(case)
    except VerifyError as e:
        msg = e.render()
        if "not supported on target" in msg:
            pytest.xfail(f"instruction family in progress: {e.message}")
        for key, why in FALSE_REJECT.items():
            if key in msg or (key == "a2a3 Left layout" and "TileLeft on a2a3" in msg):
                pytest.xfail(f"{why}: {e.message}")
        raise


def test_undetected_table_names_real_files() -> None:
    names = {c.path.name for c in CASES if c.expect_fail}
    assert set(UNDETECTED) <= names
    assert set(OUR_WORDING) <= names

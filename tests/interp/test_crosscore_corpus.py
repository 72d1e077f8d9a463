"""The corpus's runnable tpush/tpop samples under the sanitizer: no race is reported, and the
cycle model times them with every pop after its push (the samples are correct programs; a
report would be a false positive of the cross-core edges). Uninitialised reads are not
checked here: several samples push tiles nothing wrote (they test the lowering)."""

from __future__ import annotations

import contextlib
import io

import numpy as np
import pytest
from interp_corpus import CORPUS, FILES, SKIP_REASON

from ptoisa.cycles import timed
from ptoisa.interp import Program
from ptoisa.sanitizer import Sanitizer, sanitized, sync_mode_of
from ptoisa.text import parse

BASIC = CORPUS / "test" / "basic"
corpus = pytest.mark.skipif(not FILES, reason=SKIP_REASON)

SAMPLES = [
    ("test_tpush_tpop_roundtrip_nosplit_a5.pto", "a5", None),
    ("tpush_tpop_dir_both.pto", "a2a3", ("cube_bidir", "vector_bidir", "gm", ())),
    ("tpush_tpop_frontend_lowering_a3.pto", "a2a3", ("cube_kernel", "vector_kernel", "slot",
                                                     "slot")),
    ("tpush_tpop_frontend_lowering_a5.pto", "a5", ("cube_kernel", "vector_kernel", (), ())),
    ("tpush_tpop_frontend_nosplit_a5.pto", "a5", ("cube_kernel", "vector_kernel", (), ())),
    ("tpush_tpop_emitc.pto", "a2a3", ("cube_push_gm", "vector_pop_gm", "slot0", "slot0")),
]


def _run(name: str, target: str, how):
    prog = Program(parse((BASIC / name).read_text(), str(BASIC / name)), target)
    prog.check()
    rng = np.random.default_rng(0)
    if how is None:  # the roundtrip sample's entry: src, b, out (16x16 f32)
        src, b = (rng.standard_normal((16, 16)).astype(np.float32) for _ in range(2))
        return prog, lambda **kw: prog.test_tpush_tpop_roundtrip_nosplit_a5(
            src, b, np.zeros((16, 16), np.float32), **kw)
    slot = np.zeros(512, np.float32)
    args = {"slot": (slot,), "slot0": (slot, 0), "gm": (rng.standard_normal((16, 32)).astype(
        np.float32), slot), (): ()}
    cube, vector, ca, va = how
    return prog, lambda: prog.run_mixed(cube, vector, cube_args=args[ca], vector_args=args[va])


@corpus
@pytest.mark.parametrize(("name", "target", "how"), SAMPLES, ids=[s[0] for s in SAMPLES])
def test_correct_samples_have_no_race(name, target, how):
    prog, run = _run(name, target, how)
    san = Sanitizer("races")
    with contextlib.redirect_stdout(io.StringIO()):
        sanitized(san, sync_mode_of(prog.module), run)
        rep = timed(run)
    assert san.report.findings == []
    pops = [s for s in rep.steps if s.op == "TPOP" and s.after]
    assert pops  # every sample pops something a push filled
    for s in pops:
        assert all(p.op == "TPUSH" for p in s.after)
        assert s.start >= max(p.end for p in s.after)

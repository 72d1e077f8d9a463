"""The hand-synchronised PTOAS corpus programs: as they are, the sanitizer reports nothing;
deleting any one flag pair (every set_flag/wait_flag, or record_event/wait_event, with that
source, destination and event id) is found as a race."""

from __future__ import annotations

import os
import re
from pathlib import Path

import numpy as np
import pytest

import ptoisa as pto
from ptoisa.sanitizer import Sanitizer

SHARED = Path(os.environ.get("PTOISA_SHARED",
                             Path(__file__).resolve().parents[3] / "shared"))
CORPUS = SHARED / "corpus" / "ptoas"
# split-K matmuls: L1 loads (MTE2), L0 moves (MTE1), the cube (M), the acc store (FIX)
# (tools/ptobc/testdata/matmul_static_singlecore.pto, the record_event form, wraps its body in
# a pto.section.cube that ptoisa does not execute yet)
PROGRAMS = ["test/samples/MatMul/tmatmulk.pto", "test/samples/MatMul/0.pto"]
PAIR = re.compile(r"pto\.(?:set_flag|wait_flag|record_event|wait_event)\s*\[(.*?), #?pto\.event"
                  r"<(EVENT_ID\d)>\]|pto\.(?:set|wait)_flag\[(<\w+>, <\w+>), <(EVENT_ID\d)>\]")

pytestmark = pytest.mark.skipif(not CORPUS.is_dir(), reason=f"no PTOAS corpus at {CORPUS}")


def pairs(text: str) -> list[str]:
    """The (src, dst, id) of every flag op, as the text that identifies its lines."""
    out = []
    for m in PAIR.finditer(text):
        key = f"{m.group(1) or m.group(3)}, "
        key += f"#pto.event<{m.group(2)}>" if m.group(1) else f"<{m.group(4)}>"
        if key not in out:
            out.append(key)
    return out


def run(text: str, name: str, bias: int = 1):
    prog = pto.load(text, target="a2a3", filename=name)
    rng = np.random.default_rng(0)
    out = np.zeros((32, 32), np.float32)
    a, b = rng.random((32, 256), np.float32), rng.random((256, 32), np.float32)
    bvec = rng.random((1, 32), np.float32)
    san = Sanitizer()
    prog.RunTMATMULSplitK(out, a, b, bvec, bias, sanitize=san)
    want = a.astype(np.float64) @ b + (bvec if bias else 0)
    np.testing.assert_allclose(out, want, rtol=1e-5)  # still computed in program order
    return san.report


@pytest.mark.parametrize("rel", PROGRAMS)
def test_hand_synced_corpus_program_is_clean(rel):
    text = (CORPUS / rel).read_text()
    for bias in (0, 1):
        r = run(text, rel, bias)
        assert not r, r.render()


@pytest.mark.parametrize("rel", PROGRAMS)
def test_deleting_any_flag_pair_is_found(rel):
    text = (CORPUS / rel).read_text()
    keys = pairs(text)
    assert len(keys) >= 4, keys
    for key in keys:
        mutant = "\n".join(ln for ln in text.splitlines() if key not in ln)
        assert mutant.count("\n") < text.count("\n")
        r = run(mutant, rel)
        races = r.of("race")
        assert races, f"deleting {key} went unnoticed"
        assert len(races) == len(r)


BARRIERS = "test/samples/Sync/test_tmov_col_major_16x1_align_a5.pto"


def test_barrier_synced_sample_clean_and_each_barrier_needed():
    """load -> barrier(ALL) -> tmov -> barrier(ALL) -> store (a5): clean as it is; without
    either barrier the next op reads what the previous pipe wrote."""
    text = (CORPUS / BARRIERS).read_text()
    lines = text.splitlines()

    def run(t):
        prog = pto.load(t, target="a5", filename="s.pto")
        x = np.arange(16, dtype=np.float32)
        z = np.zeros(16, np.float32)
        san = Sanitizer()
        prog.test_tmov_col_major_16x1_align_a5(x, z, sanitize=san)
        np.testing.assert_array_equal(z, x)
        return san.report

    assert not run(text)
    where = [i for i, ln in enumerate(lines) if "pto.barrier <PIPE_ALL>" in ln]
    assert len(where) == 2
    for i, (later, earlier) in zip(where, [("pto.tmov", "pto.tload"),
                                           ("pto.tstore", "pto.tmov")], strict=True):
        r = run("\n".join(ln for k, ln in enumerate(lines) if k != i))
        assert [(f.hazard, f.site.op, f.other.op) for f in r] == [("RAW", later, earlier)]

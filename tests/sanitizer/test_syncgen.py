"""``ptoisa sync``: the synchronisation it inserts makes the sanitizer (strict: same-pipe
dependences need a barrier too) report nothing; where PTOAS tests state the flags InsertSync
emits (CHECK lines), ours appear in the same order; a hand-synced program is left as it is."""

from __future__ import annotations

import os
import re
from pathlib import Path

import numpy as np
import pytest

import ptoisa as pto
from ptoisa.cli import main
from ptoisa.dtypes import dtype as D
from ptoisa.sanitizer import Sanitizer
from ptoisa.sanitizer.syncgen import insert_sync

HERE = Path(__file__).resolve().parent
SHARED = Path(os.environ.get("PTOISA_SHARED",
                             Path(__file__).resolve().parents[3] / "shared"))
CORPUS = SHARED / "corpus" / "ptoas"
needs_corpus = pytest.mark.skipif(not CORPUS.is_dir(), reason=f"no PTOAS corpus at {CORPUS}")
AUTO_LOOP = "\n".join(ln for ln in (HERE / "loop_clean.pto").read_text().splitlines()
                      if "_flag[" not in ln) + "\n"


def run_strict(text: str, args_for, name="p.pto"):
    prog = pto.load(text, target="a2a3", filename=name)
    reports = []
    for fn in pto.interp.entry_functions(prog.module):
        san = Sanitizer("races", sync="strict")
        prog.run(fn, *args_for(prog.compiler("a2a3").function(fn)), sanitize=san)
        reports.append(san.report)
    return reports


def test_synced_loop_is_clean_and_computes_the_same():
    out = insert_sync(AUTO_LOOP, "loop.pto")
    body = [ln.strip() for ln in out.splitlines()]
    i = body.index(next(ln for ln in body if ln.startswith("pto.tadd")))
    assert body[i - 2:i] == ["pto.set_flag[<PIPE_MTE2>, <PIPE_V>, <EVENT_ID0>]",
                             "pto.wait_flag[<PIPE_MTE2>, <PIPE_V>, <EVENT_ID0>]"]
    # the back-edges (the load after the previous add, the add after the previous store): one
    # pair from MTE3, which has waited for V, orders the load after both; the load's pair to V
    # then carries the store too, and the add's rewrite of its own tile (PIPE_V after PIPE_V)
    # needs no barrier either
    assert body[i - 5:i - 3] == ["pto.set_flag[<PIPE_MTE3>, <PIPE_MTE2>, <EVENT_ID0>]",
                                 "pto.wait_flag[<PIPE_MTE3>, <PIPE_MTE2>, <EVENT_ID0>]"]
    assert sum(ln.startswith("pto.set_flag") for ln in body) == 3
    assert "pto.barrier <PIPE_V>" not in body
    assert body[-4] == "pto.barrier <PIPE_ALL>"
    prog = pto.load(out, target="a2a3", filename="synced.pto")
    x = np.arange(64 * 16, dtype=np.float32).reshape(64, 16)
    z = np.zeros_like(x)
    san = Sanitizer(sync="strict")
    prog.loop(x, z, sanitize=san)
    assert not san.report, san.report.render()
    np.testing.assert_array_equal(z, 2 * x)
    # and without it the same run is racy
    san = Sanitizer(sync="manual")
    pto.load(AUTO_LOOP, target="a2a3").loop(x, z, sanitize=san)
    assert san.report.of("race")


def test_cli_sync_writes_the_program(tmp_path, capsys):
    src = tmp_path / "auto.pto"
    src.write_text(AUTO_LOOP)
    out = tmp_path / "synced.pto"
    assert main(["sync", str(src), "-o", str(out)]) == 0
    assert "pto.wait_flag[<PIPE_MTE2>, <PIPE_V>" in out.read_text()
    assert main(["run", str(out), "--sanitize", "--sync", "manual", "--arg",
                 "x=zeros:64x16:f32", "--arg", "z=zeros:64x16:f32"]) == 0
    assert capsys.readouterr().err == ""


def _args(fn):
    out = []
    for _, t, _n in fn.args:
        s = str(t)
        if "ptr" in s or "memref" in s:
            m = re.search(r"memref<(?:[\d?]+x)*(\w+)", s) or re.search(r"<(\w+)", s)
            shape = re.search(r"memref<((?:\d+x)+)", s)
            out.append(np.ones(tuple(int(x) for x in shape.group(1).rstrip("x").split("x"))
                               if shape else (1 << 18,), D(m.group(1)).np))
        else:
            out.append(1.0 if s.startswith("f") else 1)
    return out


SAMPLES = ["Sync/compensation_test.pto", "Sync/nested_loop_confliect.pto",
           "Sync/rar_optimization_test.pto", "Sync/test_if_else_tile_result.pto",
           "Sync/matmul.pto", "ControlFlow/control_flow_nested_vec.pto",
           "Qwen3DecodeA3/qwen3_decode_incore_11.pto"]


@needs_corpus
@pytest.mark.parametrize("rel", SAMPLES)
def test_synced_corpus_samples_are_clean(rel):
    text = (CORPUS / "test" / "samples" / rel).read_text()
    if "rar_" not in rel:  # (two reads of one buffer: no hazard to begin with)
        assert any(run_strict(text, _args, rel))  # unsynchronised: racy (strict)
    for r in run_strict(insert_sync(text, rel), _args, rel):
        assert not r, r.render()


_FLAG = re.compile(r"(set_flag|wait_flag)[(\[]\s*<?(PIPE_\w+)>?,\s*<?(PIPE_\w+)>?"
                   r"|(barrier)[\s(<\[]*<?(PIPE_\w+)")


def _flags(lines):
    return [(m.group(1), m.group(2), m.group(3)) if m.group(1) else ("barrier", m.group(5))
            for ln in lines for m in _FLAG.finditer(ln)]


@needs_corpus
@pytest.mark.parametrize("rel", [
    "test/samples/Sync/test_inject_sync_intra_pipe_barrier.pto",
    "test/basic/tmov_acc_mat_pipe_selection.pto",
    "test/basic/tinsert_a5_pipe_selection.pto",
    "test/basic/issue428_cube_sync_regression.pto",
    "test/basic/insert_sync_level3_enable.pto",
])
def test_flags_agree_with_ptoas_check_lines(rel):
    text = (CORPUS / rel).read_text()
    want = _flags(ln for ln in text.splitlines() if re.match(r"\s*//\s*CHECK(-NEXT)?:", ln))
    assert want
    # PTOAS gives each buffer of a multi-buffered loop its own event (two M -> MTE1 pairs
    # side by side); one pair orders both
    want = [w for k, w in enumerate(want) if k == 0 or w != want[k - 1]]
    target = "a5" if "a5" in rel or "Ascend950" in text else "a2a3"
    got = _flags(ln for ln in insert_sync(text, rel, target).splitlines()
                 if not ln.strip().startswith("//"))
    it = iter(got)
    assert all(any(w == g for g in it) for w in want), (want, got)


@needs_corpus
def test_a_hand_synced_program_is_left_as_it_is():
    text = (CORPUS / "test/samples/MatMul/tmatmulk.pto").read_text()
    assert insert_sync(text, "tmatmulk.pto") == text

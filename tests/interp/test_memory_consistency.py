"""``pto.fence.barrier_all #pto.fence_scope<gm>`` and ``pto.cmo.cacheinvalid``
(PTOAS designs/ptoas-memory-consistency-design.md): the fence runs as pipe barriers (every
pipe in a vector kernel, MTE2 / MTE3 / FIX otherwise, then a DSB with nothing to do in
ptoisa's cacheless GM); the cache invalidation changes no value ptoisa computes (NO_EFFECT)
and its address must be in GM."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from ptoisa import load
from ptoisa.enums import Pipe
from ptoisa.interp import verify
from ptoisa.interp.op_names import NO_EFFECT
from ptoisa.observe import observing
from ptoisa.text import parse

SHARED = Path(os.environ.get("PTOISA_SHARED", Path(__file__).resolve().parents[2].parent
                             / "shared"))
MAIN = SHARED / "corpus" / "ptoas-main" / "test"
needs_corpus = pytest.mark.skipif(not MAIN.is_dir(), reason=f"corpus not found at {MAIN}")


def kernel(kind: str | None, body: str, arg: str = "!pto.ptr<i32>") -> str:
    attrs = "" if kind is None else \
        f" attributes {{pto.kernel_kind = #pto.kernel_kind<{kind}>}}"
    return f"""module {{
  func.func @k(%p: {arg}){attrs} {{
    %c0 = arith.constant 0 : index
    %v = arith.constant 7 : i32
    {body}
    return
  }}
}}
"""


STORE_FENCE = """pto.store_scalar %v, %p[%c0] : !pto.ptr<i32>, i32
    pto.cmo.cacheinvalid %p single_cache_line : !pto.ptr<i32>
    pto.cmo.cacheinvalid all #pto.address_space<gm>
    pto.fence.barrier_all #pto.fence_scope<gm>"""


class Seen:
    def __init__(self) -> None:
        self.recs: list[tuple[str, list[Any]]] = []

    def __call__(self, rec: Any) -> None:
        self.recs.append((rec.ins.name, list(rec.values)))


@pytest.mark.parametrize("kind,pipes", [
    ("vector", [Pipe.ALL]),
    ("cube", [Pipe.MTE2, Pipe.MTE3, Pipe.FIX]),
    (None, [Pipe.MTE2, Pipe.MTE3, Pipe.FIX]),
])
def test_fence_is_pipe_barriers_and_the_store_lands(kind, pipes):
    prog = load(kernel(kind, STORE_FENCE))
    p = np.zeros(8, np.int32)
    seen = Seen()
    with observing(seen):
        prog.k(p)
    assert p[0] == 7 and not p[1:].any()
    assert [v[0] for name, v in seen.recs if name == "PIPE_BARRIER"] == pipes


def test_cacheinvalid_is_a_documented_no_effect():
    assert "pto.cmo.cacheinvalid" in NO_EFFECT
    assert "pto.fence.barrier_all" not in NO_EFFECT  # it runs barriers


def _errors(text: str) -> list[str]:
    return [str(e) for e in verify.diagnose(parse(text), "a2a3")]


@pytest.mark.parametrize("body,arg,match", [
    ("pto.cmo.cacheinvalid %p single_cache_line : !pto.ptr<i32, vec>", "!pto.ptr<i32, vec>",
     "single_cache_line address expects a GM pointer or GM tensor view"),
    ("pto.cmo.cacheinvalid all #pto.address_space<vec>", "!pto.ptr<i32>",
     "'all' expects #pto.address_space<gm>"),
    ("pto.fence.barrier_all #pto.fence_scope<ub>", "!pto.ptr<i32>",
     "expects '#pto.fence_scope<gm>'"),
])
def test_rejected(body, arg, match):
    errs = _errors(kernel("vector", body, arg))
    assert any(match in e for e in errs), errs


def test_accepted():
    assert _errors(kernel("vector", STORE_FENCE)) == []


@needs_corpus
def test_corpus_signal_clear_runs():
    """moe_signal_clear stores 0 into the three arrival flags (i32[2] each), invalidating
    each one's cache line and fencing GM after it."""
    path = MAIN / "samples" / "DeepseekV4DecodeA3" / "kernels" / "aiv" / "moe_signal_clear.pto"
    prog = load(path)
    flags = [np.array([5, 6], np.int32) for _ in range(3)]
    hidden = np.ones(4 * 4096, np.float32)
    others = [np.zeros(2, np.int64) for _ in range(3)]
    seen = Seen()
    with observing(seen):
        prog.moe_signal_clear(hidden, *flags, *others, 1)
    for f in flags:
        np.testing.assert_array_equal(f, [0, 0])
    assert sum(name == "PIPE_BARRIER" for name, _ in seen.recs) == 6  # 3 fences x 2 rows


@needs_corpus
def test_corpus_cmo_rejections():
    errs = _errors((MAIN / "lit" / "pto" / "cmo_cacheinvalid_single_line_invalid.pto")
                   .read_text())
    assert any("single_cache_line address expects a GM pointer" in e for e in errs), errs
    assert _errors((MAIN / "lit" / "pto" / "issue995_cmo_partition_view_emitc.pto")
                   .read_text()) == []

"""The sanitizer's fix notes can be applied as written: each names a place where the flag is
correct (a producer inside an ``scf.if`` or loop and a consumer after it: after that scf.if /
loop, not after the op inside it), and applying every note of a report, then sanitizing
again, converges to a clean kernel on the generated-code samples of the PTOAS corpus (code
generators' output that leaves all synchronisation to the compiler)."""

from __future__ import annotations

import os
import re
from pathlib import Path

import numpy as np
import pytest

import ptoisa as pto
from ptoisa.interp import entry_functions
from ptoisa.sanitizer import Sanitizer
from ptoisa.text import parse

SHARED = Path(os.environ.get("PTOISA_SHARED",
                             Path(__file__).resolve().parents[3] / "shared"))
SAMPLES = SHARED / "corpus" / "ptoas" / "test" / "samples"
needs_corpus = pytest.mark.skipif(not SAMPLES.is_dir(), reason=f"no corpus at {SAMPLES}")

_AT = r"(\S+) at (\S+):(\d+):(\d+)(?: \(holding [^)]*\))?"
_PAIR = re.compile(rf"insert (pto\.set_flag\[[^\]]*\]) after {_AT} and (pto\.wait_flag\[[^\]]*\])"
                   rf" before {_AT}(?:; they meet across iterations of the {_AT}: also insert"
                   r" one .*? before that \S+ and one .*? after it)?")
_BARRIER = re.compile(rf"insert (pto\.barrier <PIPE_\w+>) after {_AT}(?: \(before {_AT}\)| and "
                      rf"before {_AT})")


def _ops_at(text: str, name: str) -> dict[tuple[int, int], tuple[list, int]]:
    """(line, col) -> (the op's block, its index)."""
    out: dict[tuple[int, int], tuple[list, int]] = {}

    def walk(ops: list) -> None:
        for i, op in enumerate(ops):
            if op.loc is not None:
                out.setdefault((op.loc.line, op.loc.col), (ops, i))
            for r in op.regions:
                for b in r.blocks:
                    walk(list(b.ops))
    walk(list(parse(text, name).ops))
    return out


def apply_notes(text: str, name: str, fixes: list[str]) -> str:
    """``text`` with every note applied literally: "X after OP at L:C" goes right after that
    op (before the op that follows it in its block, or before the block's closing brace),
    "Y before OP at L:C" right before it; a loop clause adds one set before the loop and one
    wait after it."""
    lines = text.splitlines()
    at = _ops_at(text, name)
    inserts: list[tuple[int, int, str]] = []  # (line index, order, text)

    def indent(i: int) -> str:
        return lines[i][:len(lines[i]) - len(lines[i].lstrip())]

    def op_of(line: str, col: str, op: str) -> tuple[list, int]:
        blk, i = at[(int(line), int(col))]
        assert blk[i].name.replace(".", "_") == op.replace(".", "_"), (op, blk[i].name, line)
        return blk, i

    def before(line: str, col: str, op: str, what: str) -> None:
        op_of(line, col, op)
        k = int(line) - 1
        inserts.append((k, len(inserts), indent(k) + what))

    def after(line: str, col: str, op: str, what: str) -> None:
        blk, i = op_of(line, col, op)
        k = int(line) - 1
        if i + 1 < len(blk) and blk[i + 1].loc is not None:
            n = blk[i + 1].loc.line - 1
            inserts.append((n, len(inserts), indent(n) + what))
            return
        # the last op of its block: before the closing brace below it
        n = next(j for j in range(k + 1, len(lines))
                 if lines[j].lstrip().startswith("}") and len(indent(j)) < len(indent(k)))
        inserts.append((n, len(inserts), indent(k) + what))

    for fix in fixes:
        m = _PAIR.search(fix)
        if m:
            setf, aop, _, al, ac, waitf, bop, _, bl, bc, lop, _, ll, lc = m.groups()
            after(al, ac, aop, setf)
            before(bl, bc, bop, waitf)
            if lop:
                before(ll, lc, lop, setf)
                after(ll, lc, lop, waitf)
            continue
        m = _BARRIER.search(fix)
        assert m, f"a note that says no place: {fix}"
        bar, aop, _, al, ac = m.groups()[:5]
        after(al, ac, aop, bar)
    done = set()
    for k, _, line in sorted(inserts, key=lambda x: (-x[0], -x[1])):
        if (k, line) not in done:  # (two notes naming the same pair at the same places)
            done.add((k, line))
            lines.insert(k, line)
    return "\n".join(lines) + "\n"


def _run(text: str, name: str, target: str = "a2a3"):
    """Every entry function, its i1 arguments all true, then all false, in one report."""
    prog = pto.load(text, target=target, filename=name)
    san = Sanitizer("races", sync="manual")
    for fn in entry_functions(prog.module):
        f = prog.compiler(target).function(fn)
        for flag in (1, 0):
            args = []
            for _, t, _n in f.args:
                s = str(t)
                if "ptr" in s or "memref" in s:
                    dt = re.search(r"<(\w+)", s).group(1)
                    args.append(np.ones(1 << 18, pto.dtypes.dtype(dt).np))
                else:
                    args.append(flag if s == "i1" else 1.0 if s.startswith("f") else 1)
            prog.run(fn, *args, sanitize=san)
    return san.report


# generated code: code generators' kernels without a single flag (PyPTO IR, Qwen3 decode)
GENERATED = ["Sync/compensation_test.pto", "Sync/nested_loop_confliect.pto",
             "Sync/test_if_else_tile_result.pto", "ControlFlow/control_flow_nested_vec.pto",
             "Qwen3DecodeA3/qwen3_decode_incore_11.pto", "Qwen3DecodeA3/qwen3_decode_incore_8.pto",
             "PyPTOIRParser/paged_attention_example_kernel_online_update.pto",
             "PyPTOIRParser/paged_attention_example_kernel_softmax_prepare.pto",
             "FFN/ffn_full_tiled.pto"]


@needs_corpus
@pytest.mark.parametrize("rel", GENERATED)
def test_applying_the_notes_converges_to_a_clean_kernel(rel):
    text = (SAMPLES / rel).read_text()
    report = _run(text, rel)
    assert report.findings  # (racy as written, checked as hand-synchronised)
    for _ in range(6):
        fixes = [f.fix for f in report.findings]
        text = apply_notes(text, rel, fixes)
        report = _run(text, rel)
        if not report.findings:
            break
    assert not report.findings, report.render() + "\n" + text


LOOP = """module {
  func.func @k(%x: !pto.ptr<f32>, %z: !pto.ptr<f32>, %c: i1) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %c16 = arith.constant 16 : index
    %vx = pto.make_tensor_view %x, shape = [%c16, %c16], strides = [%c16, %c1] : !pto.tensor_view<?x?xf32>
    %vz = pto.make_tensor_view %z, shape = [%c16, %c16], strides = [%c16, %c1] : !pto.tensor_view<?x?xf32>
    %px = pto.partition_view %vx, offsets = [%c0, %c0], sizes = [%c16, %c16] : !pto.tensor_view<?x?xf32> -> !pto.partition_tensor_view<16x16xf32>
    %pz = pto.partition_view %vz, offsets = [%c0, %c0], sizes = [%c16, %c16] : !pto.tensor_view<?x?xf32> -> !pto.partition_tensor_view<16x16xf32>
    %a = pto.alloc_tile : !pto.tile_buf<loc=vec, dtype=f32, rows=16, cols=16, v_row=16, v_col=16, blayout=row_major, slayout=none_box, fractal=512, pad=0>
    %b = pto.alloc_tile : !pto.tile_buf<loc=vec, dtype=f32, rows=16, cols=16, v_row=16, v_col=16, blayout=row_major, slayout=none_box, fractal=512, pad=0>
    scf.for %i = %c0 to %c4 step %c1 {
      scf.if %c {
        pto.tload ins(%px : !pto.partition_tensor_view<16x16xf32>) outs(%a : !pto.tile_buf<loc=vec, dtype=f32, rows=16, cols=16, v_row=16, v_col=16, blayout=row_major, slayout=none_box, fractal=512, pad=0>)
      } else {
        pto.tload ins(%px : !pto.partition_tensor_view<16x16xf32>) outs(%a : !pto.tile_buf<loc=vec, dtype=f32, rows=16, cols=16, v_row=16, v_col=16, blayout=row_major, slayout=none_box, fractal=512, pad=0>)
      }
    }
    pto.tadd ins(%a, %a : !pto.tile_buf<loc=vec, dtype=f32, rows=16, cols=16, v_row=16, v_col=16, blayout=row_major, slayout=none_box, fractal=512, pad=0>, !pto.tile_buf<loc=vec, dtype=f32, rows=16, cols=16, v_row=16, v_col=16, blayout=row_major, slayout=none_box, fractal=512, pad=0>) outs(%b : !pto.tile_buf<loc=vec, dtype=f32, rows=16, cols=16, v_row=16, v_col=16, blayout=row_major, slayout=none_box, fractal=512, pad=0>)
    pto.set_flag[<PIPE_V>, <PIPE_MTE3>, <EVENT_ID0>]
    pto.wait_flag[<PIPE_V>, <PIPE_MTE3>, <EVENT_ID0>]
    pto.tstore ins(%b : !pto.tile_buf<loc=vec, dtype=f32, rows=16, cols=16, v_row=16, v_col=16, blayout=row_major, slayout=none_box, fractal=512, pad=0>) outs(%pz : !pto.partition_tensor_view<16x16xf32>)
    return
  }
}
"""  # noqa: E501


def test_a_producer_in_a_loop_gets_its_flag_after_the_loop():
    report = _run(LOOP, "loop.pto")  # (each branch's load: one finding each, one place)
    assert [(f.site.op, f.other.op, f.other.loc.line) for f in report.findings] == [
        ("pto.tadd", "pto.tload", 15), ("pto.tadd", "pto.tload", 17)]
    for f in report.findings:
        assert f.fix == ("insert pto.set_flag[<PIPE_MTE2>, <PIPE_V>, <EVENT_ID0>] after scf.for "
                         f"at loop.pto:13:5 (holding pto.tload at loop.pto:{f.other.loc.line}:9)"
                         " and pto.wait_flag[<PIPE_MTE2>, <PIPE_V>, <EVENT_ID0>] before pto.tadd"
                         " at loop.pto:20:5")
    fixed = apply_notes(LOOP, "loop.pto", [f.fix for f in report.findings])
    assert "    }\n    pto.set_flag[<PIPE_MTE2>, <PIPE_V>, <EVENT_ID0>]\n" \
           "    pto.wait_flag[<PIPE_MTE2>, <PIPE_V>, <EVENT_ID0>]\n    pto.tadd" in fixed
    assert not _run(fixed, "loop.pto").findings
    # the note of old, "after pto.tload" (inside the branch, inside the loop), sets the flag
    # on every iteration with one wait after the loop: an event set again before its wait
    inside = LOOP.replace(
        "      }\n    }\n",
        "      }\n      pto.set_flag[<PIPE_MTE2>, <PIPE_V>, <EVENT_ID0>]\n    }\n").replace(
        "    pto.tadd", "    pto.wait_flag[<PIPE_MTE2>, <PIPE_V>, <EVENT_ID0>]\n    pto.tadd")
    assert "double-set" in {f.kind for f in _run(inside, "inside.pto").findings}


@needs_corpus
def test_a_loop_carried_note_names_the_loop():
    """A consumer before its producer in a loop body: the note names the loop and asks for one
    set before it and one wait after it."""
    text = (SAMPLES / "Sync/nested_loop_confliect.pto").read_text()
    fixes = [f.fix for f in _run(text, "n.pto").findings]
    carried = [f for f in fixes if "they meet across iterations" in f]
    assert len(carried) == 1, fixes
    assert re.search(r"after scf\.for at n\.pto:25:7 \(holding pto\.tstore at n\.pto:27:9\) and "
                     r"pto\.wait_flag\S* \S* \S* before pto\.tload at n\.pto:22:7; they meet "
                     r"across iterations of the scf\.for at n\.pto:19:5: also insert one "
                     r"pto\.set_flag.* before that scf\.for and one pto\.wait_flag.* after it$",
                     carried[0]), carried[0]

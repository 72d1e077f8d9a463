"""The syntax the ISA pages document parses (issue 9 item 11).

The test walks the seed pages and the ISA manual (``spec/pto-isa/isa/**``), pulls every code
block (seed pages: every line) written in PTO-AS, SSA or DPS syntax, and parses it. The pages
elide types (``!pto.tile<...>``) and write type variables (``dtype``); the test puts in the
concrete types listed in :data:`PLACEHOLDERS`, each with the reason, and nothing else. Then
every example

* parses, and each op that is a tile instruction binds to the registry's operands with every
  tile type mapped onto a tile (``!pto.tile<16x16xf32>``: a Vec tile with the tile_buf
  defaults), or
* gets an error that names what to write instead (``write '!pto.tile<16x16xf32>'``,
  ``expects operands (src, tmp) and results (dst)``).

Blocks that are not programs at all (diagrams, cycle formulas, type variables
of the micro-instruction pages) are classified by :data:`NOT_PROGRAMS`, each with the reason;
every rule must still match something, so the list cannot silently grow stale.
"""

from __future__ import annotations

import re

import pytest
from text_corpus import SHARED

from ptoisa.enums import BLayout, PadValue, SLayout, TileType
from ptoisa.errors import PtoError
from ptoisa.interp import bridge
from ptoisa.ir import types as T
from ptoisa.ir.core import Value
from ptoisa.text import parse

SEEDS = SHARED / "seeds"
ISA = SHARED / "spec" / "pto-isa" / "isa"
pytestmark = pytest.mark.skipif(not ISA.is_dir() or not SEEDS.is_dir(),
                                reason=f"ISA pages not found under {SHARED}")

# a statement: optional results, then a pto op or a PTO-AS mnemonic, and an SSA operand
_STMT = re.compile(r"^\s*(?:%[\w#:]+(?:\s*,\s*%[\w#:]+)*\s*=\s*)?(?:pto\.\w[\w.]*|t[a-z0-9_]+"
                   r"(?:\.[a-z0-9]+)*)\b[^\n]*%", re.M)
_FENCE = re.compile(r"^```[ \t]*(\w*)[ \t]*\n(.*?)^```", re.S | re.M)

#: (pattern, replacement, why): the only edits made to an example before it is parsed
PLACEHOLDERS: list[tuple[str, str, str]] = [
    (r"!pto\.tile<\.\.\.>", "!pto.tile<16x16xf32>", "the pages elide the tile shape"),
    (r"!pto\.tile_buf<\.\.\.>", "!pto.tile_buf<vec, 16x16xf32>", "elided tile_buf parameters"),
    (r"MxNxdtype|RxCxT", "16x16xf32", "the shape written as a formula"),
    (r"\?x\?xT\b", "?x?xf32", "the element type written as a variable"),
    (r"!pto\.tensor_view<\.\.\.>", "!pto.tensor_view<?x?xf32>", "elided view shape"),
    (r"!pto\.partition_tensor_view<\.\.\.>", "!pto.partition_tensor_view<16x16xf32>",
     "elided view shape"),
    (r"!pto\.(?:global|memref)<\.\.\.>", "!pto.partition_tensor_view<16x16xf32>",
     "a GM operand of elided type (PTO-AS writes it as a memref or partition view)"),
    (r"\bdtype\b", "f32", "the element type written as a variable"),
    (r"(!pto\.[\w.]+<[^<>]*>)(?:\s*\|\s*!pto\.[\w.]+<[^<>]*>)+", r"\1",
     "'A | B' lists alternative operand types: take the first"),
    (r"(?m)^\s*#.*$", "", "lines starting with '#' are the pages' headings/comments inside "
     "code blocks (PTO-AS attributes '#key=value' follow an op, they are kept)"),
    (r"(?m)\s--\s.*$", "", "'-- text' explains the line"),
]

#: (pattern found in the example, why it is not a program)
NOT_PROGRAMS: list[tuple[str, str]] = [
    (r"[│┌└▼×≈→←]|\+--|\|<-", "a diagram or a cycle formula"),
    (r":\s*\.\.\.|\.\.\.\s*->|, \.\.\.", "operand types elided with '...'"),
    (r"\(\.\.\.\)", "operands elided: 'ins(...)'"),
    (r"->[ \t]*(?:\n|$)", "a truncated example: nothing after '->'"),
    (r"!pto\.(?:ptr|vreg)<(?:[A-Z]\b|N?x?[A-Z]>)|!pto\.ptr<[A-Z],",
     "a type variable (T, A, NxT) of the micro-instruction pages"),
]


def _examples() -> list[tuple[str, str]]:
    """(where, text) of every syntax example of the pages."""
    out: list[tuple[str, str]] = []
    for p in sorted(SEEDS.glob("*.txt")):
        for n, line in enumerate(p.read_text(encoding="utf-8-sig").splitlines(), 1):
            if _STMT.match(line):
                out.append((f"seeds/{p.name}:{n}", line))
    for p in sorted(ISA.rglob("*.md")):
        text = p.read_text(encoding="utf-8-sig").replace("\r\n", "\n")
        for m in _FENCE.finditer(text):
            if m.group(1) in ("text", "mlir", "asm", "assembly", "") and _STMT.search(m.group(2)):
                line = text.count("\n", 0, m.start()) + 2
                out.append((f"{p.relative_to(ISA)}:{line}", m.group(2)))
    return out


EXAMPLES = _examples() if ISA.is_dir() and SEEDS.is_dir() else []


def instantiate(text: str) -> str:
    for pattern, repl, _why in PLACEHOLDERS:
        text = re.sub(pattern, repl, text)
    return text


def names_the_spelling(e: PtoError) -> bool:
    """An error that says what to write: the spelling to use, the operands expected, or the
    values an attribute takes (the pages write placeholders such as '#pto<cmp xx>')."""
    return bool(re.search(r"\bwrite\b|expects (?:ins|operands) \(|\(allowed: ", e.message))


def outcome(text: str) -> str | PtoError:
    """'ok', or the error the example gets."""
    try:
        mod = parse(text, "example.pto", verify=False)
        for op in mod.walk():
            ins = bridge.instr_of(op.name)
            if ins is None or ins.dialect != "tile":
                continue  # (micro-ops bind in interp/micro.py, by their own spelling)
            b = bridge.bind(op, ins)
            for v in b.values:
                if not isinstance(v, Value):
                    continue
                t = v.type
                if isinstance(t, (T.TileType, T.TileBufType)) and bridge.tile_spec_of(t) is None:
                    return PtoError(f"{op.name}: tile type {t} does not map onto a tile")
    except PtoError as e:
        return e
    return "ok"


def test_pages_have_examples():
    # the seed pages' forms and the manual's: hundreds of instructions, three forms each
    assert sum(w.startswith("seeds/") for w, _ in EXAMPLES) >= 20
    assert len(EXAMPLES) >= 1500


def test_every_documented_example_parses_or_names_the_spelling():
    bad: list[str] = []
    used = {p: 0 for p, _ in NOT_PROGRAMS}
    ok = 0
    for where, raw in EXAMPLES:
        text = instantiate(raw)
        r = outcome(text)
        if r == "ok":
            ok += 1
            continue
        assert isinstance(r, PtoError)
        if names_the_spelling(r):
            continue
        rule = next((p for p, _ in NOT_PROGRAMS if re.search(p, raw)), None)
        if rule is not None:
            used[rule] += 1
            continue
        bad.append(f"{where}: {r}")
    assert not bad, f"{len(bad)} examples neither parse nor name the spelling:\n" + \
        "\n".join(bad[:20])
    assert all(used.values()), f"stale NOT_PROGRAMS rules: {[p for p, n in used.items() if not n]}"
    assert ok >= 0.8 * len(EXAMPLES)


@pytest.mark.parametrize("text", [
    # the seed pages, as written there (types instantiated)
    "%dst = pto.trowsum %src, %tmp : (!pto.tile<16x16xf32>, !pto.tile<16x16xf32>) "
    "-> !pto.tile<16x1xf32>",
    "%dst = pto.tpartmax %src0, %src1 : (!pto.tile<16x16xf32>, !pto.tile<16x16xf32>) "
    "-> !pto.tile<16x16xf32>",
    "%dst = tpartmax %src0, %src1 : !pto.tile<16x16xf32> -> !pto.tile<16x16xf32>",
    "%dst = pto.tfillpad_inplace %src : !pto.tile<16x16xf32> -> !pto.tile<16x16xf32>",
    "pto.tstore.fp %src, %fp, %mem : (!pto.tile<16x16xf32>, !pto.tile<16x16xf32>, "
    "!pto.partition_tensor_view<16x16xf32>) -> ()",
    "pto.tstore %src, %mem : (!pto.tile<16x16xf32>, !pto.partition_tensor_view<16x16xf32>) -> ()",
    "pto.tprint %src : !pto.tile<16x16xf32> -> ()",
])
def test_seed_spellings_bind(text):
    assert outcome(text) == "ok"


def test_ssa_tstore_binds_dst_last():
    mod = parse("pto.tstore %src, %mem : (!pto.tile<16x16xf32>, "
                "!pto.partition_tensor_view<16x16xf32>) -> ()", verify=False)
    op = next(mod.walk())
    b = bridge.bind(op, bridge.instr_of(op.name))
    names = {o.name: v.name for o, v in zip(b.ins.operands, b.values, strict=True) if v}
    assert names == {"dst": "mem", "src": "src"}
    ts = bridge.tile_spec_of(T.TileType((16, 16), T.FloatType("f32")))
    assert (ts.loc, ts.rows, ts.cols, ts.valid_row, ts.valid_col, ts.blayout, ts.slayout,
            ts.fractal, ts.pad) == (TileType.Vec, 16, 16, 16, 16, BLayout.RowMajor,
                                    SLayout.NoneBox, 512, PadValue.Null)


def test_asm_form_without_scratch_names_the_operands():
    """The TROWSUM seed's PTO-AS form leaves the scratch tile to the lowering, which allocates
    one (PTOAS's implicit tmp: Ptoas.materialised); an op short of a non-scratch operand
    says which are missing."""
    assert outcome("%dst = trowsum %src : !pto.tile<16x16xf32> -> !pto.tile<16x1xf32>") == "ok"
    r = outcome("%dst = tadd %src : !pto.tile<16x16xf32> -> !pto.tile<16x16xf32>")
    assert isinstance(r, PtoError)
    assert r.message == ("expects operands (src0, src1) and results (dst); got 1 operands and "
                         "1 results")


@pytest.mark.parametrize("text, hint", [
    ("pto.tadd ins(%a, %b : !pto.tile_buf<f32, 16, 16>, !pto.tile_buf<f32, 16, 16>) "
     "outs(%c : !pto.tile_buf<f32, 16, 16>)", "write '!pto.tile_buf<vec, 16x16xf32>'"),
    ("%t = pto.tload %m : !pto.partition_tensor_view<16x16xf32> -> "
     "!pto.tile_buf<loc=vec, f32, 16, 16, RowMajor, NoneBox, None, Zero>",
     "write '!pto.tile_buf<vec, 16x16xf32, pad=1>'"),
    ("%d = pto.tadd %a, %b : (!pto.tile<f32, 16, 16>, !pto.tile<f32, 16, 16>) -> "
     "!pto.tile<f32, 16, 16>", "write '!pto.tile<16x16xf32>'"),
    ("pto.tgemv.mx ins(%a, %b : (!pto.tile<16x16xf32>, !pto.tile<16x16xf32>)) outs(%c : "
     "!pto.tile<16x16xf32>)", "write the types without parentheses"),
    ("tstore %t1, %sv_out[%c0, %c0]", "'%sv_out[%c0, %c0]' (an operand with a base offset) is "
     "PTO-AS notation ptoisa does not take: write the offset into a view"),
])
def test_documented_spellings_ptoas_rejects_name_the_one_to_use(text, hint):
    r = outcome(text)
    assert isinstance(r, PtoError) and hint in r.message, r


def test_program_in_the_pages_spellings_runs():
    """SSA (``!pto.tile`` results), PTO-AS and the pages' result-less SSA tstore in one
    program: it checks and runs (dst = exp(a + a), a numpy one-liner)."""
    import numpy as np

    from ptoisa.interp import Program

    v = "!pto.partition_tensor_view<16x16xf32>"
    t = "!pto.tile<16x16xf32>"
    views = "".join(
        f"    %t{x} = pto.make_tensor_view %{x}, shape = [%c16, %c16], strides = [%c16, %c1] : "
        f"!pto.tensor_view<?x?xf32>\n"
        f"    %p{x} = pto.partition_view %t{x}, offsets = [%c0, %c0], sizes = [%c16, %c16] : "
        f"!pto.tensor_view<?x?xf32> -> {v}\n" for x in "ao")
    text = (
        "module {\n  func.func @k(%a: !pto.ptr<f32>, %o: !pto.ptr<f32>) {\n"
        "    %c0 = arith.constant 0 : index\n    %c1 = arith.constant 1 : index\n"
        "    %c16 = arith.constant 16 : index\n" + views +
        f"    %t = pto.tload %pa : {v} -> {t}\n"
        f"    %s = tadd %t, %t : {t}, {t} -> {t}\n"
        f"    %e = pto.texp %s : {t} -> {t}\n"
        f"    pto.tstore %e, %po : ({t}, {v}) -> ()\n"
        "    return\n  }\n}\n")
    prog = Program(parse(text, "pages.pto"), "cpu")
    prog.check()
    a = np.random.default_rng(0).random((16, 16), dtype=np.float32)
    o = np.zeros_like(a)
    prog.run("k", a, o)
    np.testing.assert_allclose(o, np.exp(a + a), rtol=1e-6)


def test_asm_statements_without_results_run():
    """PTO-AS as the syntax page writes it: a destination tile first (the C++ order), a GM
    destination last (``tstore %t, %view``): dst = a + 2 (numpy)."""
    import numpy as np

    from ptoisa.interp import Program

    v = "!pto.partition_tensor_view<16x16xf32>"
    t = "!pto.tile_buf<vec, 16x16xf32>"
    views = "".join(
        f"    %t{x} = pto.make_tensor_view %{x}, shape = [%c16, %c16], strides = [%c16, %c1] : "
        f"!pto.tensor_view<?x?xf32>\n"
        f"    %p{x} = pto.partition_view %t{x}, offsets = [%c0, %c0], sizes = [%c16, %c16] : "
        f"!pto.tensor_view<?x?xf32> -> {v}\n" for x in "ao")
    text = (
        "module {\n  func.func @k(%a: !pto.ptr<f32>, %o: !pto.ptr<f32>) {\n"
        "    %c0 = arith.constant 0 : index\n    %c1 = arith.constant 1 : index\n"
        "    %c16 = arith.constant 16 : index\n    %s = arith.constant 2.0 : f32\n" + views +
        f"    %t = pto.alloc_tile : {t}\n    %d = pto.alloc_tile : {t}\n"
        f"    tload %t, %pa : {t}, {v}\n"
        f"    tadds %d, %t, %s : {t}, {t}, f32\n"
        f"    tstore %d, %po : {t}, {v}\n"
        "    return\n  }\n}\n")
    prog = Program(parse(text, "asm.pto"), "cpu")
    prog.check()
    a = np.random.default_rng(1).random((16, 16), dtype=np.float32)
    o = np.zeros_like(a)
    prog.run("k", a, o)
    np.testing.assert_array_equal(o, a + np.float32(2))

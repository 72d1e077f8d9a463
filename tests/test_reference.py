"""The generated instruction reference (``ptoisa ops --markdown DIR``, docs/reference/)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ptoisa import REGISTRY, reference
from ptoisa.cli import main


def test_checked_in_reference_is_current(tmp_path: Path) -> None:
    """Regenerate into a temporary directory and compare with docs/reference/ file by file."""
    assert main(["ops", "--markdown", str(tmp_path)]) == 0
    fresh = {p.name: p.read_text() for p in tmp_path.glob("*.md")}
    docs = {p.name: p.read_text() for p in reference.DOCS.glob("*.md")}
    assert sorted(fresh) == sorted(docs), "docs/reference is stale: run python -m ptoisa.reference"
    stale = [n for n in fresh if fresh[n] != docs[n]]
    assert stale == [], f"docs/reference is stale ({stale[:5]}): run python -m ptoisa.reference"


def test_one_page_per_instruction_and_a_linked_index(capsys: pytest.CaptureFixture[str]) -> None:
    pages = reference.render()
    assert sorted(pages) == sorted([f"{n}.md" for n in REGISTRY] + ["README.md"])
    idx = pages["README.md"]
    assert sorted(re.findall(r"\]\((\w+)\.md\)", idx)) == sorted(REGISTRY)
    families = {ins.family for ins in REGISTRY.values()}
    assert set(re.findall(r"^## (\S+)$", idx, re.M)) == families
    assert reference.render() == pages  # deterministic
    for name, ins in REGISTRY.items():
        text = pages[f"{name}.md"]
        assert text.startswith(f"# {name}\n")
        assert f"[{ins.family}](README.md#{ins.family})" in text
        for section in ("## C++", "## Python", "## PTOAS", "## Operands",
                        "## Element types per target"):
            assert section in text


def test_trowsum_page() -> None:
    """Hand-written expectations: the manual's C++ operand order (dst, src, tmp), the PTOAS
    DPS and SSA spellings, the roles, the a2a3 element types of its legality table."""
    text = reference.render()["TROWSUM.md"]
    assert ("template <typename TileDst, typename TileSrc, typename TileTmp, typename... "
            "WaitEvents>\nPTO_INST RecordEvent TROWSUM(TileDst &dst, TileSrc &src, "
            "TileTmp &tmp, WaitEvents &... events);") in text
    assert "pto.TROWSUM(dst: Tile, src: Tile, tmp: Tile, *events: Event) -> Event" in text
    assert "pto.trowsum ins(%src, %tmp : ...) outs(%dst : ...)" in text
    assert "%dst = pto.trowsum %src, %tmp : ..." in text
    assert "| 0 | `dst` | tile | written |  |" in text
    assert "| 2 | `tmp` | tile | scratch (contents undefined after) |  |" in text
    assert "pipe: `PIPE_V`" in text
    assert "| a2a3 | f32 f16 i16 i32 |" in text  # the manual: half, float, int32_t, int16_t
    assert "dst[i, 0] = sum_j src[i, j]" in text  # the semantics docstring


def test_operand_dependent_pipe_and_declared_spelling() -> None:
    pages = reference.render()
    tmov = pages["TMOV.md"]
    assert "pipe: depends on the operands" in tmov and "Mat -> Scaling PIPE_FIX" in tmov
    assert "(by operands)" in pages["README.md"]
    assert "`pto.tmov ins(%src, %fp) outs(%dst)`" in tmov
    assert "| `accToVecMode` | sets `mode` |" in tmov
    tstore = pages["TSTORE.md"]
    assert "| `stPhase` | sets `Phase` |" in tstore
    assert "| `id` | accepted, no effect:" in pages["SET_QUANT_SCALAR.md"]
    assert "atomicType: AtomicType = AtomicType.AtomicNone" in tstore
    assert "| `atomicType` | AtomicType | `AtomicType::AtomicNone` |" in tstore
    # an instruction a target lacks says so (THISTOGRAM: A5 only)
    hist = pages["THISTOGRAM.md"]
    assert "| a2a3 | not available |" in hist and "| cpu | not available |" not in hist


def test_stale_finds_changed_missing_and_extra_pages(tmp_path: Path) -> None:
    reference.write(tmp_path)
    assert reference.stale(tmp_path) == []
    (tmp_path / "TADD.md").write_text("old\n")
    (tmp_path / "TSUB.md").unlink()
    (tmp_path / "TGONE.md").write_text("removed instruction\n")
    assert reference.stale(tmp_path) == ["TADD.md", "TSUB.md", "TGONE.md"]
    reference.write(tmp_path)  # rewriting deletes the page of a removed instruction
    assert reference.stale(tmp_path) == []


def test_ops_markdown_reports_an_unwritable_directory(tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]
                                                      ) -> None:
    f = tmp_path / "file"
    f.write_text("")
    assert main(["ops", "--markdown", str(f / "sub")]) == 1
    assert "cannot write" in capsys.readouterr().err


def test_sync_ops_are_spelled_as_the_compiler_binds_them() -> None:
    """set_flag / wait_flag / barrier take bracketed operands, not ins/outs."""
    pages = reference.render()
    assert "pto.set_flag[<srcPipe>, <dstPipe>, <eventId>]" in pages["SET_FLAG.md"]
    assert "pto.wait_flag_dyn[<srcPipe>, <dstPipe>, <eventId>]" in pages["WAIT_FLAG.md"]
    assert "pto.barrier[<pipe>]" in pages["PIPE_BARRIER.md"]
    assert "ins(" not in pages["SET_FLAG.md"]

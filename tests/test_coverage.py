"""Every instruction of the ISA has an entry: the tile instructions of
spec/notes/ops.tsv and every ``pto.t*`` op the PTOAS corpus uses resolve to a registry entry
(``ptoisa.interp.bridge.instr_of``, PTOAS spellings and the frontend pipe ops of
the registry entries' ``ptoas`` declarations) or, for the
view and tile-buffer ops, to a handler of the interpreter (``compiler._HANDLERS``)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ptoisa.interp import compiler
from ptoisa.interp.bridge import instr_of
from ptoisa.isa import REGISTRY
from ptoisa.isa.registry import FRONTEND_OPS

#: ops.tsv names that the manual spells differently from the registry
_RENAMED = {"SUBVIEW": "TSUBVIEW", "GET_SCALE_ADDR": "TGET_SCALE_ADDR"}

#: ops.tsv rows that are interpreter ops over views and tile buffers, not registry entries
_INTERP_OPS = {"ALLOC_TILE", "MAKE_TENSOR_VIEW", "PARTITION_VIEW", "SET_VALIDSHAPE", "SUBSET",
               "GET_TENSOR_VIEW_DIM", "GET_TENSOR_VIEW_STRIDE", "TENSOR_VIEW_ADDR",
               "TILE_BUF_ADDR"}


def _ops_tsv(shared: Path) -> list[str]:
    path = shared / "spec" / "notes" / "ops.tsv"
    if not path.is_file():
        pytest.skip(f"{path} not found (set PTOISA_SHARED)")
    rows = path.read_text().splitlines()[1:]
    return [r.split("\t")[0] for r in rows if r.strip()]


#: an op name: not a type (``!pto.tile_buf``), an attribute (``#pto.x``) or an attribute key
#: (``pto.target_arch = "a5"``, ``"pto.target_arch" = "a3"``)
_OP = re.compile(r"(?<![!#\w.])(pto\.t[a-z0-9_.]*[a-z0-9_])(?![\w.<])(?!\"?\s*=)")


def _corpus_ops(shared: Path) -> set[str]:
    root = shared / "corpus" / "ptoas" / "test"
    if not root.is_dir():
        pytest.skip(f"{root} not found (set PTOISA_SHARED)")
    ops: set[str] = set()
    for f in root.glob("**/*.pto"):
        ops.update(_OP.findall(f.read_text(errors="replace")))
    return ops


def _handled(op: str) -> bool:
    return (instr_of(op) is not None or op in compiler._HANDLERS
            or FRONTEND_OPS.get(op) in REGISTRY)


def test_every_ops_tsv_instruction_has_an_entry(shared_dir):
    missing = []
    for name in _ops_tsv(shared_dir):
        if name in _INTERP_OPS:
            if "pto." + name.lower() not in compiler._HANDLERS:
                missing.append(f"{name} (interpreter op pto.{name.lower()})")
        elif _RENAMED.get(name, name) not in REGISTRY:
            missing.append(name)
    assert not missing, f"{len(missing)} ops.tsv instructions lack an entry: {missing}"


def test_every_corpus_tile_op_has_an_entry(shared_dir):
    ops = _corpus_ops(shared_dir)
    assert len(ops) > 50  # the corpus was found and scanned
    missing = sorted(op for op in ops if not _handled(op))
    assert not missing, f"{len(missing)} pto.t* ops of the corpus lack an entry: {missing}"

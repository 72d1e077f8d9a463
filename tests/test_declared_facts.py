"""Every per-instruction fact lives on the instruction's entry (``@instr(...)`` in ptoisa/isa/).

The facts below used to be tables keyed by instruction name in the modules that read them
(ptoisa/isa/valid_region.py, access.py, the sanitizer, the cycle model, the exporter, the
interpreter). Those tables are written here once, as they were, and the declared facts must
reproduce them exactly; the last test keeps new tables from appearing outside the registry.
"""

from __future__ import annotations

import ast
from pathlib import Path

import ptoisa
from ptoisa import sanitizer
from ptoisa.exporter import spelling as export_spelling
from ptoisa.interp.compiler import _HANDLERS
from ptoisa.isa import REGISTRY
from ptoisa.isa.registry import FRONTEND_OPS, PIPE_SYNC, ptoas_op
from ptoisa.targets import TARGET_NAMES

ROOT = Path(ptoisa.__file__).parent

_BOTH = "A2A3 and A5 implementation checks"
_NPU = "Implementation checks (NPU)"
_COMMON = "Common constraints"
_ALL = frozenset(TARGET_NAMES)
_A2A3 = frozenset({"a2a3"})
_A5 = frozenset({"a5"})
_DIFFER = "A2A3: rows and cols; A5: cols"

#: ptoisa/isa/valid_region.py's SAME_VALID: name -> (operands, page words, rows on, cols on)
OLD_SAME_VALID = {
    "TABS": (("src",), _NPU, _ALL, _ALL),
    "TEXP": (("src",), _NPU, _ALL, _ALL),
    "TLOG": (("src",), _NPU, _ALL, _ALL),
    "TSQRT": (("src",), _NPU, _ALL, _ALL),
    "TRSQRT": (("src",), _NPU, _ALL, _ALL),
    "TRECIP": (("src",), _NPU, _ALL, _ALL),
    "TRELU": (("src",), _BOTH, _ALL, _ALL),
    "TNOT": (("src",), _BOTH, _ALL, _ALL),
    "TSUB": (("src0", "src1"), _BOTH, _ALL, _ALL),
    "TMUL": (("src0", "src1"), _BOTH, _ALL, _ALL),
    "TDIV": (("src0", "src1"), _BOTH, _ALL, _ALL),
    "TMAX": (("src0", "src1"), _BOTH, _ALL, _ALL),
    "TMIN": (("src0", "src1"), _BOTH, _ALL, _ALL),
    "TREM": (("src0", "src1"), _BOTH, _ALL, _ALL),
    "TAND": (("src0", "src1"), _BOTH, _ALL, _ALL),
    "TOR": (("src0", "src1"), _BOTH, _ALL, _ALL),
    "TXOR": (("src0", "src1"), _BOTH, _ALL, _ALL),
    "TSHL": (("src0", "src1"), _BOTH, _ALL, _ALL),
    "TSHR": (("src0", "src1"), _BOTH, _ALL, _ALL),
    "TPRELU": (("src0", "src1"), _BOTH, _ALL, _ALL),
    "TPOW": (("src0", "src1"), "General constraints (dst == base, dst == exp)", _ALL, _ALL),
    "TADDRELUCONV": (("src0", "src1"), "Valid region", _ALL, _ALL),
    "TSUBRELUCONV": (("src0", "src1"), "Valid region (as TADDRELUCONV)", _ALL, _ALL),
    "TADDDEQRELU": (("src0", "src1"), "Valid region", _ALL, _ALL),
    "TSUBS": (("src0",), _BOTH, _ALL, _ALL),
    "TDIVS": (("src0", "scalar"), _BOTH, _ALL, _ALL),
    "TSHLS": (("src",), _BOTH, _ALL, _ALL),
    "TSHRS": (("src",), _BOTH, _ALL, _ALL),
    "TFMODS": (("src",), _BOTH, _ALL, _ALL),
    "TREMS": (("src",), _BOTH, _ALL, _ALL),
    "TSELS": (("src",), _BOTH, _ALL, _ALL),
    "TMAXS": (("src",), _COMMON, _ALL, _ALL),
    "TLRELU": (("src",), _COMMON, _ALL, _ALL),
    "TADDSC": (("src0", "src1"), _COMMON, _ALL, _ALL),
    "TSUBSC": (("src0", "src1"), _COMMON, _ALL, _ALL),
    "TPOWS": (("base",), "General constraints (dst == base)", _ALL, _ALL),
    "TAXPY": (("src0",), "dst and src0 share the valid shape (all targets)", _ALL, _ALL),
    "TADDS": (("src0",), _DIFFER, _A2A3, _ALL),
    "TMULS": (("src0",), _DIFFER, _A2A3, _ALL),
    "TMINS": (("src",), _DIFFER, _A2A3, _ALL),
    "TANDS": (("src",), "A2A3 implementation checks", _A2A3, _A2A3),
    "TORS": (("src",), "A2A3 implementation checks", _A2A3, _A2A3),
    "TXORS": (("src0",), "A5 implementation checks", _A5, _A5),
}

#: access.py's VIEW_OPS and NO_DATA_OPS (= VIEW_OPS | {"TASSIGN"})
OLD_VIEW_OPS = {"TRESHAPE", "TSUBVIEW", "TALIAS", "TGET_SCALE_ADDR"}
#: TALLOC (added with the GlobalData FIFO forms) points a GlobalTensor at a slot, like TASSIGN
OLD_NO_DATA_OPS = OLD_VIEW_OPS | {"TASSIGN", "TALLOC"}
#: access.py's ROLES keys (the values are checked by behaviour below)
OLD_ROLES = {("TGATHER", "tmp"), ("TGATHER", "tmp2"), ("TMRGSORT", "a2"),
             # the GlobalData FIFO forms name a slot view without accessing it
             ("TPUSH", "tile"), ("TPOP", "tile"), ("TFREE", "slot")}

#: sanitizer/clocks.py's _SYNC, cycles/schedule.py's SYNC_OPS, exporter/spelling.py's _SKIP,
#: _SYNC_OPS and _MIXED, conformance.py's _PIPE_OPS
OLD_SANITIZER_SYNC = {"SET_FLAG", "WAIT_FLAG", "PIPE_BARRIER", "TSYNC", "SYNCALL"}
OLD_CYCLES_SYNC = {"SET_FLAG", "WAIT_FLAG", "PIPE_BARRIER"}
OLD_EXPORT_SKIP = {"TSYNC"}
OLD_EXPORT_SYNC_OPS = {"SET_FLAG": "pto.set_flag", "WAIT_FLAG": "pto.wait_flag",
                       "PIPE_BARRIER": "pto.barrier"}
OLD_EXPORT_MIXED = {"TPUSH", "TPOP", "TFREE", "TALLOC", "TNOTIFY", "TWAIT", "TTEST",
                    "SYNCALL"}
OLD_CONFORMANCE_PIPE_OPS = {"TPUSH", "TPOP", "TFREE", "TALLOC"}
#: sanitizer/__init__.py's SYNC_OPS (ops that make a .pto function manually synchronised)
OLD_MANUAL_SYNC_OPS = {"pto.set_flag", "pto.wait_flag", "pto.set_flag_dyn", "pto.wait_flag_dyn",
                       "pto.barrier", "pto.barrier_sync", "pto.record_event", "pto.wait_event"}
#: interp/sync_ops.py's sync handlers: op -> (instruction, bracketed items, endpoint items)
OLD_SYNC_HANDLERS = {
    "pto.set_flag": ("SET_FLAG", 3, 0), "pto.set_flag_dyn": ("SET_FLAG", 3, 0),
    "pto.wait_flag": ("WAIT_FLAG", 3, 0), "pto.wait_flag_dyn": ("WAIT_FLAG", 3, 0),
    "pto.barrier": ("PIPE_BARRIER", 1, 0), "pto.record_event": ("SET_FLAG", 3, 2),
    "pto.wait_event": ("WAIT_FLAG", 3, 2), "pto.barrier_sync": ("PIPE_BARRIER", 1, 1),
}
#: interp/pipe_ops.py's _FRONTEND
OLD_FRONTEND = {"pto.tpush_to_aiv": "TPUSH", "pto.tpush_to_aic": "TPUSH",
                "pto.tpop_from_aic": "TPOP", "pto.tpop_from_aiv": "TPOP",
                "pto.tfree_from_aic": "TFREE", "pto.tfree_from_aiv": "TFREE",
                # added with the GlobalData FIFO forms (global entries)
                "pto.talloc_to_aiv": "TALLOC", "pto.talloc_to_aic": "TALLOC"}
#: exporter/spelling.py's _CMP_WORDS
OLD_CMP_WORDS = {"EQ": "equal", "NE": "not_equal", "LT": "less_than", "LE": "less_equal",
                 "GT": "greater_than", "GE": "greater_equal"}


def _old_op_name(name: str) -> str:
    """exporter/spelling.py's op_name as it was: the matmul/gemv variants and TMOV_FP dotted."""
    m = name.lower()
    if m.startswith(("tmatmul_", "tgemv_")) or m == "tmov_fp":
        m = m.replace("_", ".")
    return "pto." + m


#: entries declared after the tables above were replaced (A5 buffer ids, #28): the old tables
#: did not know them; ADDED_SINCE's own test says where they appear
ADDED_SINCE = {"GET_BUF", "RLS_BUF"}
ADDED_OPS = {"pto.get_buf", "pto.get_buf_dyn", "pto.rls_buf", "pto.rls_buf_dyn"}


def _declared(fact: str) -> dict[str, object]:
    return {n: getattr(i, fact) for n, i in REGISTRY.items()
            if getattr(i, fact) not in (None, "data", {}) and n not in ADDED_SINCE}


def test_same_valid_reproduces_the_old_table():
    got = {n: (sv.names, sv.page, sv.rows, sv.cols)  # type: ignore[attr-defined]
           for n, sv in _declared("same_valid").items()}
    assert got == OLD_SAME_VALID


def test_same_valid_rules_are_where_the_old_table_put_them():
    """A check on every target is the last common run-time rule; a per-target one the last
    rule that target declares, on the targets that compare rows or cols."""
    for name, (_, _, rows, cols) in OLD_SAME_VALID.items():
        ins = REGISTRY[name]
        if rows == cols == _ALL:
            assert ins.runtime[-1].__name__.startswith("same_valid("), name
            assert not any(r.__name__.startswith("same_valid(")
                           for rs in ins.runtime_for.values() for r in rs), name
        else:
            assert not any(r.__name__.startswith("same_valid(") for r in ins.runtime), name
            have = {k for k, rs in ins.runtime_for.items()
                    if rs and rs[-1].__name__.startswith("same_valid(")}
            assert have == rows | cols, name


def test_access_kinds_reproduce_the_old_tables():
    access = _declared("access")
    assert {n for n, a in access.items() if a == "view"} == OLD_VIEW_OPS
    assert set(access) == OLD_NO_DATA_OPS
    assert set(_declared("view_offset")) == {"TSUBVIEW"}
    roles = {(n, o) for n, r in _declared("access_roles").items() for o in r}  # type: ignore
    assert roles == OLD_ROLES
    assert REGISTRY["TGATHER"].access_roles == {"tmp": "scratch", "tmp2": "scratch"}


def test_tmrgsort_a2_role_by_use():
    """a2 is the tmp tile when an executed-list comes first, else a source."""
    from ptoisa.tile import Tile

    fn = REGISTRY["TMRGSORT"].access_roles["a2"]
    t = Tile("Vec", "f32", 1, 64)
    assert callable(fn)
    assert fn([t, [0, 0, 0, 0], t, t]) == "scratch"
    assert fn([t, t, t]) == "in"
    assert fn([t, t]) == "in"


def test_sync_kinds_reproduce_the_old_tables():
    sync = _declared("sync")
    assert {n for n, k in sync.items() if k in PIPE_SYNC | {"events", "all_cores"}} \
        == OLD_SANITIZER_SYNC
    assert {n for n, k in sync.items() if k in PIPE_SYNC} == OLD_CYCLES_SYNC
    assert {n for n, k in sync.items() if k == export_spelling._SYNC_SKIPPED} == OLD_EXPORT_SKIP
    assert {n for n, k in sync.items() if k in export_spelling._SYNC_NOT_EXPORTED} \
        == OLD_EXPORT_MIXED
    assert {n for n, k in sync.items() if k == "pipe"} == OLD_CONFORMANCE_PIPE_OPS
    assert {n: ptoas_op(REGISTRY[n]) for n in OLD_CYCLES_SYNC} == OLD_EXPORT_SYNC_OPS
    assert export_spelling._SYNC_OPS == frozenset(OLD_EXPORT_SYNC_OPS.values()) | {
        "pto.get_buf", "pto.rls_buf"}
    assert {n for n, k in sync.items() if k == "cross_core"} == {"SYNC_SET", "SYNC_WAIT"}


def test_sync_op_spellings_reproduce_the_old_tables():
    assert sanitizer.SYNC_OPS == OLD_MANUAL_SYNC_OPS | ADDED_OPS
    got = {}
    for op, h in _HANDLERS.items():
        name = getattr(h, "instr_name", None)
        if name is not None and name not in ADDED_SINCE:
            ins = REGISTRY[name]
            assert ins.ptoas is not None
            got[op] = (name, len(ins.operands), ins.ptoas.bracketed[op])
    assert got == OLD_SYNC_HANDLERS
    assert FRONTEND_OPS == OLD_FRONTEND
    assert export_spelling._CMP_WORDS == OLD_CMP_WORDS


def test_exported_op_names_reproduce_the_old_rule():
    """(The flags and barriers were written through _SYNC_OPS: checked above.)"""
    for name, ins in REGISTRY.items():
        if name not in OLD_EXPORT_SYNC_OPS:
            assert export_spelling.op_name(ins) == _old_op_name(name), name


# ---- no tables of instruction names outside the registry and the targets ----------------------

#: modules allowed to hold a literal naming several instructions, each with the reason
ALLOWED = {
    "concurrent/comm.py": "__all__: the module's public names (the comm intrinsics it re-exports)",
    "conformance.py": "the recorded pack's format and the runner's coverage of it: calls "
                      "recorded under another name, the instructions whose ConvTile operands "
                      "it rebuilds, where a golden sits (TINSERT), documented per-case "
                      "differences from the CPU simulator",
    "concurrent/conformance_ranks.py": "the pack's two-rank cases: which operand the recorded "
                                       "case puts on rank 1, and the pack's folder names",
    "cycles/costs.py": "cost-model data: upstream's cycle priors per intrinsic, which the "
                       "fitted pack replaces (model data, like a target's legality table)",
    "interp/sync_ops.py": "SYNC_OP_PIPES: PTOAS's sync endpoint kinds (#pto.pipe_event_type"
                          "<TLOAD>), an enum of PTOAS, not instructions",
    "dtypes.py": "rounding-mode names of the HiFloat8 conversion (floor, ceil, trunc, round), "
                 "which the SIMT chapter's pto.floor / pto.ceil happen to share",
    "sanitizer/bounds.py": "the out-of-range check is code for the two indexed GM accesses "
                           "(MGATHER / MSCATTER), reading their index operands",
}


def _literal_tables(tree: ast.AST, names: set[str]) -> list[tuple[int, list[str]]]:
    """(line, names) of every set / dict / list / tuple literal that names two or more
    instructions (C++ names or mnemonics) in its items or keys."""
    out = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Set, ast.List, ast.Tuple)):
            items: list[ast.AST] = list(node.elts)
        elif isinstance(node, ast.Dict):
            items = [k for k in node.keys if k is not None]
        else:
            continue
        hits = sorted({e.value for e in items if isinstance(e, ast.Constant)
                       and isinstance(e.value, str) and e.value in names})
        if len(hits) >= 2:
            out.append((node.lineno, hits))
    return sorted(out)


def test_no_instruction_tables_outside_the_registry():
    names = set(REGISTRY) | {n.lower() for n in REGISTRY}
    found = {}
    for f in sorted(ROOT.rglob("*.py")):
        rel = f.relative_to(ROOT).as_posix()
        if rel.startswith(("isa/", "targets/")) or rel in ALLOWED:
            continue
        hits = _literal_tables(ast.parse(f.read_text()), names)
        if hits:
            found[rel] = hits
    assert not found, (
        "tables of instruction names outside ptoisa/isa/ and ptoisa/targets/: declare the "
        f"fact on the entries (@instr(...)) and read it there: {found}")


def test_the_allow_list_is_needed():
    """Every allowed module still holds such a table (else its entry goes)."""
    names = set(REGISTRY) | {n.lower() for n in REGISTRY}
    for rel in ALLOWED:
        assert _literal_tables(ast.parse((ROOT / rel).read_text()), names), rel


def test_the_scan_finds_a_table():
    names = {"SET_FLAG", "WAIT_FLAG", "TADD"}
    tree = ast.parse('X = frozenset({"SET_FLAG", "WAIT_FLAG"})\nY = {"TADD": 1}\n'
                     'Z = ("set_flag", "wait_flag")\n')
    assert _literal_tables(tree, names | {"set_flag", "wait_flag"}) == [
        (1, ["SET_FLAG", "WAIT_FLAG"]), (3, ["set_flag", "wait_flag"])]


def test_buffer_ids_are_pipe_sync_of_one_core():
    """GET_BUF / RLS_BUF (added since): they order a core's pipes, so a program with one is
    manually synchronised, and the sanitizer, the cycle model and the exporter read them."""
    assert {n: REGISTRY[n].sync for n in ADDED_SINCE} == {"GET_BUF": "buf_get",
                                                          "RLS_BUF": "buf_rls"}
    assert {"buf_get", "buf_rls"} <= PIPE_SYNC
    assert ADDED_OPS <= sanitizer.SYNC_OPS
    assert {op: getattr(_HANDLERS[op], "instr_name", None) for op in ADDED_OPS} == {
        "pto.get_buf": "GET_BUF", "pto.get_buf_dyn": "GET_BUF",
        "pto.rls_buf": "RLS_BUF", "pto.rls_buf_dyn": "RLS_BUF"}

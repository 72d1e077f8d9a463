"""Documented valid-region equalities of the elementwise and tile-scalar instructions.

The ISA pages (``../shared/spec/pto-isa/isa/<OP>.md``, "Constraints") list run-time checks
that a source's valid region equals dst's: under "Implementation checks (NPU)", "Common
constraints", "General constraints", or in both the A2A3 and the A5 lists. Those hold on every
target, cpu included: a user develops on cpu to learn what the NPU rejects. A check only one
NPU's list has holds on that target only. The upstream C++ CPU simulator makes none of them
(it iterates over dst's valid region and reads the sources there), so every rule here is
``sim_unchecked``: a permissive machine skips it.

Where a page says the sources are "not validated by explicit runtime checks" and lists no
check (TADD, TADDC, TSUBC, TFMOD, TNEG, TSUBRELU, the fused multiply-adds) nothing is added;
their ``cover`` rule (each source's valid region covers dst's, so nothing outside a source's
valid region is read) is ptoisa's own and stays. TCMP/TCMPS (packed predicate dst) and TSEL
are left to their family module.

One line per instruction: the operands compared with dst, the page's words, and (when the
NPUs differ) the targets that compare rows / cols. Applied to the registry entries at import:
a check on every target joins the entry's run-time rules, a per-target one its ``runtime_for``
declarations (so a target derived from a5 makes a5's checks).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..errors import RuntimeCheckError
from ..memory import current
from ..targets import TARGET_NAMES
from ..tile import Tile
from . import elementwise, tile_scalar  # noqa: F401 - the instructions it attaches checks to
from .registry import REGISTRY, Instr, RuntimeRule, check_target_keys, sim_unchecked

ALL = frozenset(TARGET_NAMES)


@dataclass(frozen=True)
class SameValid:
    """``names`` must have dst's valid rows (on targets ``rows``) and cols (on ``cols``); the
    targets are keys of a target's lineage (``Target.lineage``)."""

    names: tuple[str, ...]
    page: str
    rows: frozenset[str] = ALL
    cols: frozenset[str] = ALL


_BOTH = "A2A3 and A5 implementation checks"
_NPU = "Implementation checks (NPU)"
_COMMON = "Common constraints"

SAME_VALID: dict[str, SameValid] = {
    # unary
    "TABS": SameValid(("src",), _NPU),
    "TEXP": SameValid(("src",), _NPU),
    "TLOG": SameValid(("src",), _NPU),
    "TSQRT": SameValid(("src",), _NPU),
    "TRSQRT": SameValid(("src",), _NPU),
    "TRECIP": SameValid(("src",), _NPU),
    "TRELU": SameValid(("src",), _BOTH),
    "TNOT": SameValid(("src",), _BOTH),
    # tile-tile
    "TSUB": SameValid(("src0", "src1"), _BOTH),
    "TMUL": SameValid(("src0", "src1"), _BOTH),
    "TDIV": SameValid(("src0", "src1"), _BOTH),
    "TMAX": SameValid(("src0", "src1"), _BOTH),
    "TMIN": SameValid(("src0", "src1"), _BOTH),
    "TREM": SameValid(("src0", "src1"), _BOTH),
    "TAND": SameValid(("src0", "src1"), _BOTH),
    "TOR": SameValid(("src0", "src1"), _BOTH),
    "TXOR": SameValid(("src0", "src1"), _BOTH),
    "TSHL": SameValid(("src0", "src1"), _BOTH),
    "TSHR": SameValid(("src0", "src1"), _BOTH),
    "TPRELU": SameValid(("src0", "src1"), _BOTH),
    "TPOW": SameValid(("src0", "src1"), "General constraints (dst == base, dst == exp)"),
    "TADDRELUCONV": SameValid(("src0", "src1"), "Valid region"),
    "TSUBRELUCONV": SameValid(("src0", "src1"), "Valid region (as TADDRELUCONV)"),
    "TADDDEQRELU": SameValid(("src0", "src1"), "Valid region"),
    # tile-scalar
    "TSUBS": SameValid(("src0",), _BOTH),
    "TDIVS": SameValid(("src0", "scalar"), _BOTH),  # either overload: the tile operand
    "TSHLS": SameValid(("src",), _BOTH),
    "TSHRS": SameValid(("src",), _BOTH),
    "TFMODS": SameValid(("src",), _BOTH),
    "TREMS": SameValid(("src",), _BOTH),
    "TSELS": SameValid(("src",), _BOTH),
    "TMAXS": SameValid(("src",), _COMMON),
    "TLRELU": SameValid(("src",), _COMMON),
    "TADDSC": SameValid(("src0", "src1"), _COMMON),
    "TSUBSC": SameValid(("src0", "src1"), _COMMON),
    "TPOWS": SameValid(("base",), "General constraints (dst == base)"),
    "TAXPY": SameValid(("src0",), "dst and src0 share the valid shape (all targets)"),
    # the NPUs differ: A2A3 compares rows and cols, A5 cols only
    "TADDS": SameValid(("src0",), "A2A3: rows and cols; A5: cols", rows=frozenset({"a2a3"})),
    "TMULS": SameValid(("src0",), "A2A3: rows and cols; A5: cols", rows=frozenset({"a2a3"})),
    "TMINS": SameValid(("src",), "A2A3: rows and cols; A5: cols", rows=frozenset({"a2a3"})),
    # one NPU only
    "TANDS": SameValid(("src",), "A2A3 implementation checks",
                       rows=frozenset({"a2a3"}), cols=frozenset({"a2a3"})),
    "TORS": SameValid(("src",), "A2A3 implementation checks",
                      rows=frozenset({"a2a3"}), cols=frozenset({"a2a3"})),
    "TXORS": SameValid(("src0",), "A5 implementation checks",
                       rows=frozenset({"a5"}), cols=frozenset({"a5"})),
}


def same_valid(spec: SameValid, ins: Instr, rows: bool = True, cols: bool = True,
               everywhere: bool = True) -> RuntimeRule:
    """The run-time rule of one SAME_VALID line (operand positions resolved once: it runs on
    every call of the instruction): on every target, or (``everywhere`` False) the rule one
    target declares, comparing ``rows`` and/or ``cols``."""
    pos = {o.name: i for i, o in enumerate(ins.operands)}
    di = pos["dst"]
    srcs = [(n, pos[n]) for n in spec.names if n in pos]

    def fail(n: str, s: Tile, dst: Tile, rows: bool, tgt: object) -> RuntimeCheckError:
        if rows:
            what, got, want = ("valid region", f"{s.valid_row}x{s.valid_col}",
                               f"{dst.valid_row}x{dst.valid_col}")
        else:
            what, got, want = "valid cols", str(s.valid_col), str(dst.valid_col)
        where = "" if everywhere else f" on {tgt}"
        return RuntimeCheckError(f"{n} {what} {got} must equal dst {what} {want}{where}",
                                 op=ins.mnemonic)

    @sim_unchecked
    def rule(ins: Instr, *vals: Any, **kw: Any) -> None:
        dst = vals[di]
        if everywhere:
            shape = dst.valid_shape
            for n, i in srcs:
                s = vals[i] if i < len(vals) else None
                if isinstance(s, Tile) and s.valid_shape != shape:
                    raise fail(n, s, dst, True, "")
            return
        for n, i in srcs:
            s = vals[i] if i < len(vals) else None
            if not isinstance(s, Tile):
                continue
            if (rows and s.valid_row != dst.valid_row) or (cols and s.valid_col != dst.valid_col):
                raise fail(n, s, dst, rows, current().target)

    rule.__name__ = f"same_valid({', '.join(spec.names)})"
    # it reads valid regions only: it passes when every tile is valid over its whole area and
    # all have one shape (an instruction's plain form relies on it: see Instr.on)
    rule.valid_regions_only = True  # type: ignore[attr-defined]
    return rule


def _apply() -> None:
    for name, spec in SAME_VALID.items():
        check_target_keys(f"SAME_VALID[{name!r}]", spec.rows | spec.cols)
        ins = REGISTRY[name]
        if spec.rows == spec.cols == ALL:
            ins.runtime = (*ins.runtime, same_valid(spec, ins))
        else:
            for key in ALL:
                rows, cols = key in spec.rows, key in spec.cols
                if rows or cols:
                    ins.runtime_for[key] = (*ins.runtime_for.get(key, ()),
                                            same_valid(spec, ins, rows, cols, everywhere=False))


_apply()

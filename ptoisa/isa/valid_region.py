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

Each entry declares its line (``@instr(..., same_valid=SameValid(("src",), NPU))``): the
operands compared with dst, the page's words, and (when the NPUs differ) the targets that
compare rows / cols. The registry adds the rules when it declares the entry: a check on every
target joins the entry's run-time rules, a per-target one its ``runtime_for`` declarations (so
a target derived from a5 makes a5's checks).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..errors import RuntimeCheckError
from ..memory import current
from ..targets import TARGET_NAMES
from ..tile import Tile, TileSpec
from .registry import Instr, RuntimeRule, Sig, StaticRule, sim_unchecked, sim_unchecked_type

ALL = frozenset(TARGET_NAMES)


@dataclass(frozen=True)
class SameValid:
    """``names`` must have dst's valid rows (on targets ``rows``) and cols (on ``cols``); the
    targets are keys of a target's lineage (``Target.lineage``)."""

    names: tuple[str, ...]
    page: str
    rows: frozenset[str] = ALL
    cols: frozenset[str] = ALL

    def rules(self, ins: Instr) -> tuple[tuple[RuntimeRule, ...], dict[str, RuntimeRule]]:
        """The run-time rules of this line for entry ``ins``: the ones on every target, and
        the per-target ones by target name."""
        if self.rows == self.cols == ALL:
            return (same_valid(self, ins),), {}
        per_target: dict[str, RuntimeRule] = {}
        for key in ALL:
            rows, cols = key in self.rows, key in self.cols
            if rows or cols:
                per_target[key] = same_valid(self, ins, rows, cols, everywhere=False)
        return (), per_target


#: the pages' words for where a check is listed
BOTH = "A2A3 and A5 implementation checks"
NPU = "Implementation checks (NPU)"
COMMON = "Common constraints"
A2A3_LIST = "A2A3 implementation checks"
A5_LIST = "A5 implementation checks"
NPUS_DIFFER = "A2A3: rows and cols; A5: cols"
#: where the NPUs differ, the targets that compare (A2A3 rows and cols, A5 cols only; TANDS
#: on A2A3 only ...)
A2A3 = frozenset({"a2a3"})
A5 = frozenset({"a5"})


def static_same_valid(spec: SameValid, rows: bool, cols: bool) -> StaticRule:
    """A compile-time copy of a line's check, for the valid extents the types state (a
    ``.pto`` tile_buf's ``v_row`` / ``v_col``; ``?`` is checked when it runs): the named
    sources' valid rows (``rows``) and cols (``cols``) equal dst's, in PTOAS's words. An
    entry declares it as the rule of its PTOAS op where PTOAS's verifier makes the check
    (``Ptoas(rules=...)``: TADDS, tadds_validrow_mismatch.pto)."""
    # (PTOAS names the one tile source of a tile-scalar op "src"; pto-isa's C++ "src0")
    said = {n: "src" if len(spec.names) == 1 and n.startswith("src") else n
            for n in spec.names}

    @sim_unchecked_type
    def rule(sig: Sig) -> None:
        dst = sig["dst"]
        if not isinstance(dst, TileSpec):
            return
        for n in spec.names:
            s = sig[n]
            if not isinstance(s, TileSpec):
                continue
            for axis, on, a, b in ((0, rows, s.valid_row, dst.valid_row),
                                   (1, cols, s.valid_col, dst.valid_col)):
                if on and a is not None and b is not None and a != b:
                    raise sig.fail(f"expects {said[n]} and dst to have the same valid_shape"
                                   f"[{axis}] ({n} {a}, dst {b})")

    rule.__name__ = f"static_same_valid({', '.join(spec.names)})"
    return rule


def same_valid(spec: SameValid, ins: Instr, rows: bool = True, cols: bool = True,
               everywhere: bool = True) -> RuntimeRule:
    """The run-time rule of one declared line (operand positions resolved once: it runs on
    every call of the instruction): on every target, or (``everywhere`` False) the rule one
    target declares, comparing ``rows`` and/or ``cols``."""
    pos = {o.name: i for i, o in enumerate(ins.operands)}
    di = pos["dst"]
    srcs = [(n, pos[n]) for n in spec.names if n in pos]

    def fail(n: str, s: Tile, dst: Tile, rows: bool, target: object) -> RuntimeCheckError:
        if rows:
            what, got, want = ("valid region", f"{s.valid_row}x{s.valid_col}",
                               f"{dst.valid_row}x{dst.valid_col}")
        else:
            what, got, want = "valid cols", str(s.valid_col), str(dst.valid_col)
        where = "" if everywhere else f" on {target}"
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

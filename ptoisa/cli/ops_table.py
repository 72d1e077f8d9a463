"""The support matrix (``ptoisa ops``), generated from the registry and the target tables."""

from __future__ import annotations

from typing import Any

from ..dtypes import DType
from ..isa.registry import REGISTRY, _order
from ..targets import DEFAULT_TARGET, TARGET_NAMES, Rule, TargetLike, get_target


def _dtypes_text(r: Rule) -> str:
    if r.dtypes is None:
        return "any"
    items = list(r.dtypes)
    if items and isinstance(items[0], tuple):
        if all(len(set(p)) == 1 for p in items):
            return " ".join(d.name for d in sorted({p[0] for p in items}, key=_order))
        return " ".join(sorted("->".join(d.name for d in p) for p in items))
    return " ".join(d.name for d in sorted(items, key=_order))


def support_matrix(target: TargetLike | None = None, dialect: str | None = None
                   ) -> list[dict[str, Any]]:
    """One row per instruction (of ``dialect`` only, when given: ``tile``, ``vpto``): name,
    family, pipe, operands, per target the element types (or None when the instruction
    is not available there), and its cost rules in the cycle model (``cost``: on ``target``,
    else on a5 for a micro-op and a2a3 for the others)."""
    from ..cycles.costs import describe

    names = (target,) if target else TARGET_NAMES
    tgts = [get_target(n) for n in names]
    rows = []
    for name in sorted(REGISTRY):
        ins = REGISTRY[name]
        if dialect is not None and ins.dialect != dialect:
            continue
        row: dict[str, Any] = {
            "name": name,
            "mnemonic": f"pto.{ins.mnemonic}",
            "family": ins.family,
            "pipe": ins.pipe.value,
            "operands": [f"{o.name}:{o.kind}:{o.role}" for o in ins.operands],
            "params": [p.name for p in ins.params],
            "dtype_key": list(ins.dtype_key),
        }
        for t in tgts:
            r = t.legality.get(name)
            row[t.name] = None if r is None else _dtypes_text(r)
        # (priced on the target asked, else the default one, else the first that has it)
        row["cost"] = describe(name, ins.pipe, target or next(
            (t.name for t in (get_target(DEFAULT_TARGET), *tgts) if name in t.legality),
            DEFAULT_TARGET))
        rows.append(row)
    return rows


def render_matrix(rows: list[dict[str, Any]], target: TargetLike | None = None) -> str:
    names = (target,) if target else TARGET_NAMES
    head = ["instruction", "family"] + list(names) + ["cycles"]
    table = [[r["name"], r["family"]] + [r[n] if r[n] is not None else "-" for n in names]
             + [r.get("cost", "")] for r in rows]
    widths = [max(len(str(x)) for x in col) for col in zip(head, *table, strict=True)]
    widths = [min(w, 60) for w in widths]

    def fmt(cells: list[Any]) -> str:
        return "  ".join(str(c).ljust(w) for c, w in zip(cells, widths, strict=True)).rstrip()

    lines = [fmt(head), fmt(["-" * w for w in widths])]
    lines += [fmt(t) for t in table]
    counts = [f"{n}: {sum(1 for r in rows if r[n] is not None)}" for n in names]
    lines.append(f"\n{len(rows)} instructions; available per target: {', '.join(counts)}")
    return "\n".join(lines)


__all__ = ["DType", "render_matrix", "support_matrix"]

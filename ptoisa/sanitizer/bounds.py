"""Out-of-bounds GM accesses the semantics would hide.

A GlobalTensor view already refuses, when it is made, to reach outside its array (a located
``PtoMemoryError``). What is left are accesses whose address comes from data: MGATHER and
MSCATTER in their ``Undefined`` out-of-range mode, where the NPU reads or writes outside the
table and ptoisa clamps (gather) or drops (scatter) to stay inside the array. Each is a finding
with the offending index, its position and the table's extent.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..lanes import block_of
from .report import Finding, Site


def check(rec: Any, site_of: Any) -> tuple[Finding, Any] | None:
    """The out-of-range finding of one MGATHER / MSCATTER (None when in range or defined)."""
    name = rec.ins.name
    if name not in ("MGATHER", "MSCATTER"):
        return None
    from ..isa.irregular import enums as ir
    from ..isa.irregular.gather_scatter import _index_values, _table_rows

    p = rec.params
    if name == "MGATHER":
        dst, table, idx_v = rec.values[0], rec.values[1], rec.values[2]
        if p.get("Mode") is not ir.GatherOOB.Undefined:
            return None
        row_mode = p.get("CMode") is ir.Coalesce.Row
        data, verb = dst, "reads"
    else:
        table, data, idx_v = rec.values[0], rec.values[1], rec.values[2]
        if p.get("Oob") is not ir.ScatterOOB.Undefined:
            return None
        row_mode = p.get("Mode") is ir.Coalesce.Row
        verb = "writes"
    lanes = rec.machine.lanes
    for b in range(lanes):
        t, d, ix = (table, data, idx_v) if lanes == 1 else \
            (block_of(table, b), block_of(data, b), block_of(idx_v, b))
        vr, vc = d.valid_shape
        if not (vr and vc):
            continue
        nrows, _ = _table_rows(t)
        cap = nrows if row_mode else t.spec.numel
        try:
            idx = _index_values(ix, vr, vc, row_mode)
        except Exception:  # noqa: BLE001 - the instruction's own check reports bad indices
            return None
        bad = np.flatnonzero(np.asarray(idx).reshape(-1) >= cap)
        if bad.size == 0:
            continue
        pos = np.unravel_index(int(bad[0]), np.asarray(idx).shape)
        val = int(np.asarray(idx).reshape(-1)[bad[0]])
        s: Site = site_of(rec)
        unit = "row" if row_mode else "element"
        gname = getattr(t, "name", None) or "the table"
        where_b = f" (block {b})" if lanes > 1 else ""
        msg = (f"out of bounds: {s.op} {verb} {unit} {val} of {gname}, which has {cap} "
               f"{unit}s (index at {tuple(int(i) for i in pos)}, {bad.size} index(es) out of "
               f"range{where_b}); on the NPU this {verb} outside the array")
        fix = ("keep the indices below the table extent, or choose a defined out-of-range "
               "mode (" + ("Mode=Clamp/Wrap/Zero" if name == "MGATHER" else
                           "Oob=Skip/Clamp/Wrap") + ")")
        return (Finding("oob", msg, s, fix=fix,
                        extra={"index": val, "extent": cap, "count": int(bad.size)}),
                ("oob", rec.loc, name))
    return None

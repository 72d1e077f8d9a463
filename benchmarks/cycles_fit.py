"""Fit a cost table to a hardware pack and measure how well it generalises.

    PYTHONPATH=. python benchmarks/cycles_fit.py [PACK] [--write] [--verbose] [--vf-impl]

* PACK (default ../shared/costmodel) measures a2a3 or a5 (its cases' ``target``): an a2a3
  pack fits :data:`costs.A2A3_PRIORS` (``--write``: ptoisa/cycles/a2a3_fit.json), an a5 pack
  (../shared/costmodel/a5) the A5 vector-function formulas :data:`costs.A5_PRIORS`
  (``--write``: ptoisa/cycles/a5_fit.json), over the a2a3 fit already written;
* fits the coefficients on every non-suspect case of PACK;
* leave-one-out: each case predicted by a table fitted without it;
* leave-op-out: all cases of one instruction predicted by a table fitted without any of them
  (priors and the coefficients its hardware class shares with other instructions);
* random 60/40 splits (the hidden share of the pack is 40%): fit on 60%, predict the 40%.

For each: median precision, cases at or above upstream's precision (the pass bar), failures.

``--vf-impl`` (a5 pack, a measurement only: ptoisa's cost model does not read it) lets the 1D
loop rules (bases ``vf1``, ``vfp``) see which loop the case ran, from the pack's
``vf_impl_kind``: upstream's A5 headers (pto-isa 3186c38, TBinOp / TBinSOp / TUnaryOp /
TRsqrt.hpp) run the 1D loop (rows whole, or one row) with post-update addressing (each
``vlds`` / ``vsts`` advances its own address register) by default and with offsets from the
loop index under VFIMPL_1D_NO_POST_UPDATE; TCVT's 1D loop has only the offset form
(castData_1D_NoPostUpdate), TSEL has no such variants, and the 2D loops are left as they are.
The no-post-update 1D loop gets one head term ``d`` shared by every instruction and key (one
number for the whole table, fitted with the rest in every fit: the rules fitted without the
no-post-update points, ``d`` the 1/y-weighted median of those points' residuals, then the
rules refitted on every point moved by ``d``).
"""

from __future__ import annotations

import json
import random
import statistics
import sys
from pathlib import Path
from typing import Any

import numpy as np

from ptoisa.cycles import costs
from ptoisa.cycles.pack import load_pack, run_case

NO_POST = "VFIMPL_1D_NO_POST_UPDATE"
#: set by --vf-impl
VF_IMPL = False
_PRIORS = costs._fresh(costs.A5_PRIORS)


def no_post_1d(c: dict[str, Any]) -> int:
    """1 where the case ran upstream's 1D loop with offset addressing (no post-update)."""
    kind = (c.get("params") or {}).get("vf_impl_kind", "VFIMPL_DEFAULT")
    tiles = [o for o in c["operands"] if o.get("kind") == "tile"]
    one_loop = all(o["valid_col"] == o["cols"] for o in tiles) or \
        all(o["rows"] == 1 for o in tiles)
    if c["op"] == "TSEL" or not one_loop:
        return 0
    return 1 if c["op"] == "TCVT" else int(kind == NO_POST)


def precision(pred: float, hw: float) -> float:
    return max(0.0, 1.0 - abs(pred - hw) / hw)


def samples(cases: list[dict[str, Any]]) -> list[tuple[dict[str, Any], Any, Any]]:
    out = []
    for c in cases:
        _, _, feats = run_case(c)
        f, pipe = feats[int(c.get("measured_call", len(c["program"]) - 1))]
        if VF_IMPL and c.get("target") == "a5":
            _, v = costs.variant_of(_PRIORS, f, pipe)
            f = dict(f, no_post=no_post_1d(c) if v.basis in ("vf1", "vfp") else 0)
        out.append((c, f, pipe))
    return out


def fit_of(train: list[tuple[dict[str, Any], Any, Any]], target: str) -> dict[str, Any]:
    pts = ((f, p, float(c["hardware_cycles"])) for c, f, p in train if not c.get("suspect"))
    if target == "a5":
        return costs.fit_table(pts, priors=costs.A5_PRIORS, target="a5")
    return costs.fit_table(pts, target=target)


def _table(fit: dict[str, Any], target: str) -> dict[str, Any]:
    if target == "a5":
        return costs.load_a5_table(None, fit=fit)
    t = costs.load_table(None)
    costs.apply_fit(t, fit)
    return t


def _rule(t: dict[str, Any], f: Any, p: Any) -> float:
    _, v = costs.variant_of(t, f, p)
    return costs.combine(v.basis, v.coefficients(f.get(v.key)), costs.BASES[v.basis](f))


def table_from(train: list[tuple[dict[str, Any], Any, Any]], target: str
               ) -> tuple[dict[str, Any], float]:
    """The fitted table and the no-post-update head ``d`` (0 without --vf-impl)."""
    if not any(f.get("no_post") for _, f, _ in train):
        return _table(fit_of(train, target), target), 0.0
    t1 = _table(fit_of([s for s in train if not s[1].get("no_post")], target), target)
    res, ys = [], []
    for c, f, p in train:
        if f.get("no_post"):
            _, v = costs.variant_of(t1, f, p)
            if v.key_of(f) != "any" and (not v.ops_measured or f["op"] in v.ops_measured):
                res.append(float(c["hardware_cycles"]) - _rule(t1, f, p))
                ys.append(float(c["hardware_cycles"]))
    d = float(costs._wmedian(np.array(res), np.array(ys))) if res else 0.0
    moved = [(dict(c, hardware_cycles=float(c["hardware_cycles"]) - d * f["no_post"]), f, p)
             if f.get("no_post") else (c, f, p) for c, f, p in train]
    return _table(fit_of(moved, target), target), d


def predict(model: tuple[dict[str, Any], float], f: Any, p: Any) -> int:
    t, d = model
    if d and f.get("no_post"):
        return max(1, int(round(_rule(t, f, p) + d)))
    return costs.predict(t, f, p)


def score(rows: list[tuple[dict[str, Any], float]]) -> dict[str, Any]:
    ps = [precision(p, c["hardware_cycles"]) for c, p in rows]
    ok = [precision(p, c["hardware_cycles"]) >= (c.get("upstream_accuracy") or 0) - 1e-9
          for c, p in rows]
    return {"n": len(rows), "median": statistics.median(ps) if ps else 0.0,
            "at_least_upstream": sum(ok), "failed": [c["case_id"] for (c, _), k
                                                     in zip(rows, ok, strict=True) if not k]}


def _few(ids: list[str], n: int = 8) -> str:
    return (", ".join(ids[:n]) + (f" and {len(ids) - n} more" if len(ids) > n else "")
            if ids else "none")


def main(argv: list[str]) -> int:
    global VF_IMPL
    VF_IMPL = "--vf-impl" in argv
    args = [a for a in argv if not a.startswith("--")]
    pack = args[0] if args else str(Path(__file__).resolve().parents[2] / "shared/costmodel")
    cases = load_pack(pack)
    smp = samples(cases)
    main_smp = [s for s in smp if not s[0].get("suspect")]
    target = str(cases[0].get("target", "a2a3")) if cases else "a2a3"
    # fitted on everything
    full = table_from(main_smp, target)
    fit_rows = [(c, predict(full, f, p)) for c, f, p in main_smp]
    # leave one out
    loo_rows = []
    for i, (c, f, p) in enumerate(main_smp):
        t = table_from(main_smp[:i] + main_smp[i + 1:], target)
        loo_rows.append((c, predict(t, f, p)))
    # leave one instruction out: every case of the op predicted without any of them
    lopo_rows = []
    for op in sorted({c["op"] for c, _, _ in main_smp}):
        t = table_from([x for x in main_smp if x[0]["op"] != op], target)
        lopo_rows += [(c, predict(t, f, p)) for c, f, p in main_smp if c["op"] == op]
    # random 60/40 splits
    split_scores = []
    for seed in range(20):
        rnd = random.Random(seed)
        idx = list(range(len(main_smp)))
        rnd.shuffle(idx)
        cut = int(0.6 * len(idx))
        train = [main_smp[i] for i in idx[:cut]]
        test = [main_smp[i] for i in idx[cut:]]
        t = table_from(train, target)
        split_scores.append(score([(c, predict(t, f, p)) for c, f, p in test]))
    print(f"pack: {pack} ({len(main_smp)} cases, {len(smp) - len(main_smp)} suspect left out)")
    if VF_IMPL:
        print(f"  --vf-impl: {sum(f.get('no_post', 0) for _, f, _ in main_smp)} cases ran the "
              f"no-post-update 1D loop; its head term fitted on all: {full[1]:+.3f}")
    for name, rows in (("fitted on all", fit_rows), ("leave-one-out", loo_rows),
                       ("leave-op-out", lopo_rows)):
        s = score(rows)
        print(f"{name:>14}: median precision {s['median']:.3f}; >= upstream on "
              f"{s['at_least_upstream']}/{s['n']} ({100 * s['at_least_upstream'] / s['n']:.0f}%)"
              f"; below: {_few(s['failed'])}")
    by_op: dict[str, list[tuple[dict[str, Any], float]]] = {}
    for row in loo_rows:
        by_op.setdefault(row[0]["op"], []).append(row)
    print("  leave-one-out per instruction: " + "; ".join(
        f"{op} {s['median']:.3f} {s['at_least_upstream']}/{s['n']}"
        for op, s in ((op, score(rows)) for op, rows in sorted(by_op.items()))))
    meds = [s["median"] for s in split_scores]
    fr = [s["at_least_upstream"] / s["n"] for s in split_scores]
    print(f"  60/40 splits: median precision on the 40% {statistics.median(meds):.3f} "
          f"(min {min(meds):.3f}); >= upstream on {100 * statistics.median(fr):.0f}% "
          f"(min {100 * min(fr):.0f}%) over {len(split_scores)} splits")
    if "--write" in argv and VF_IMPL:
        print("not written: --vf-impl is a measurement (the cost model has no such term)")
    elif "--write" in argv:
        fit = fit_of(main_smp, target)
        out = costs.A5_FIT_FILE if target == "a5" else costs.FIT_FILE
        out.write_text(json.dumps(fit, indent=1, sort_keys=True) + "\n")
        print(f"wrote {out}")
    if "--verbose" in argv:
        for (c, p), (_, q) in zip(fit_rows, loo_rows, strict=True):
            print(f"  {c['case_id']:<50} hw {c['hardware_cycles']:>7} fit {p:>7} loo {q:>7} "
                  f"bar {c.get('upstream_accuracy')}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

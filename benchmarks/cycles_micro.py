"""The micro-op costs against the A5 pack: a tile instruction that A5 implements as one vector
function looping over the tile's 256-byte registers is priced as that loop of micro-ops, and
compared with the pack's measurement. Nothing is fitted: the micro-op costs are upstream's
VfSim table (ptoisa/cycles/costs.py, A5_MICRO), so every case is out of sample.

    PYTHONPATH=. python benchmarks/cycles_micro.py [PACK] [--verbose]

PACK defaults to ../shared/costmodel/a5. The loop bodies are read from upstream's A5
implementations (include/pto/npu/a5/: TBinOp, TUnaryOp, TDivS, TRsqrt), one predicate
(``plt``) a register as the 1D loops make it; TCVT, TSEL, TRECIP's high-precision algorithm
and the 2D path (a loop per row, whose per-row overhead the micro-op model does not
price) are listed apart.
"""

from __future__ import annotations

import json
import math
import statistics
import sys
from pathlib import Path
from typing import Any

from ptoisa.cycles import costs
from ptoisa.cycles.schedule import VecFunction

#: one iteration (one 256-byte register of the destination) of each instruction's A5 loop
LOOPS: dict[str, list[str]] = {
    "TADD": ["PLT_B32", "VLDS", "VLDS", "VADD", "VSTS"],
    "TSUB": ["PLT_B32", "VLDS", "VLDS", "VSUB", "VSTS"],
    "TMUL": ["PLT_B32", "VLDS", "VLDS", "VMUL", "VSTS"],
    "TMINS": ["PLT_B32", "VLDS", "VMINS", "VSTS"],
    "TNEG": ["PLT_B32", "VLDS", "VMULS", "VSTS"],
    "TEXP": ["PLT_B32", "VLDS", "VEXP", "VSTS"],
    "TSQRT": ["PLT_B32", "VLDS", "VSQRT", "VSTS"],
    "TRSQRT": ["PLT_B32", "VLDS", "VSQRT", "VDIV", "VSTS"],
    "TDIVS": ["PLT_B32", "VLDS", "VDIV", "VSTS"],
    "TRECIP": ["PLT_B32", "VLDS", "VDIV", "VSTS"],
}
#: before the loop (a scalar broadcast into a register)
PROLOGUE: dict[str, list[str]] = {"TDIVS": ["VDUP"], "TRECIP": ["VDUP"], "TRSQRT": ["VDUP"]}


def predict(op: str, vectors: int, b: int) -> int:
    """The cycles of ``op``'s loop over ``vectors`` registers of ``b``-byte lanes, priced as
    the cycle model prices a vector function (steps summed)."""
    table = costs.default_table("a5")
    vf = VecFunction(0)
    total = 0
    for name in PROLOGUE.get(op, []) + LOOPS[op] * vectors:
        mc = table[name][0].micro
        assert mc is not None, name
        total += vf.add(mc.port, mc.occupancy(b), mc.latency(b))
    return total


def precision(pred: float, hw: float) -> float:
    return max(0.0, 1.0 - abs(pred - hw) / hw)


def main(argv: list[str]) -> int:
    args = [a for a in argv if not a.startswith("-")]
    verbose = "--verbose" in argv
    pack = Path(args[0] if args else "../shared/costmodel/a5")
    if pack.is_dir():
        pack = pack / "cycles.json"
    cases = json.loads(pack.read_text())["cases"]
    groups: dict[tuple[str, str, str], list[tuple[str, int, float, float]]] = {}
    skipped: dict[str, int] = {}
    for c in cases:
        op = c["op"]
        algo = c.get("params", {}).get("op_params", "default")
        if op not in LOOPS or c.get("suspect") or algo == "high_precision":
            k = op if op not in LOOPS else f"{op} ({algo})"
            skipped[k] = skipped.get(k, 0) + 1
            continue
        t = c["operands"][0]
        b = {"float32": 4, "float16": 2, "bfloat16": 2}.get(t["dtype"], 1)
        r, cols, vc = t["valid_row"], t["cols"], t["valid_col"]
        path = "1D" if vc == cols or r == 1 else "2D"
        vectors = math.ceil(r * vc * b / 256) if path == "1D" else r * math.ceil(vc * b / 256)
        pred = predict(op, vectors, b)
        hw = float(c["hardware_cycles"])
        groups.setdefault((op, t["dtype"], path), []).append(
            (c["case_id"], vectors, pred, hw))
    print(f"{'instruction':8} {'dtype':9} {'path':4} {'cases':>5} {'median':>7} "
          f"{'min':>6}  per register: model / pack (slope of a line through the cases)")
    allp: dict[str, list[float]] = {"1D": [], "2D": []}
    for (op, dt, path), rows in sorted(groups.items()):
        ps = [precision(p, hw) for _, _, p, hw in rows]
        allp[path] += ps
        xs = [v for _, v, _, _ in rows]
        slope = _slope(xs, [hw for *_, hw in rows])
        mslope = _slope(xs, [float(p) for _, _, p, _ in rows])
        print(f"{op:11} {dt:9} {path:4} {len(rows):5} {statistics.median(ps):7.3f} "
              f"{min(ps):6.3f}  {mslope:.2f} / {slope:.2f}")
        if verbose:
            for cid, v, p, hw in rows:
                print(f"    {cid}: {v} registers, model {p}, pack {hw:g}")
    for path, ps in allp.items():
        if ps:
            print(f"all {path}: {len(ps)} cases, median precision {statistics.median(ps):.3f}, "
                  f"within 2x of the pack: {sum(p >= 0.5 for p in ps)}")
    print("not compared: " + ", ".join(f"{k} {v}" for k, v in sorted(skipped.items())))
    # the one number taken from the pack: SFU ops on 16-bit lanes at half rate. Per
    # instruction, the pack's f16 / f32 cycles a register (1D path); leave-one-out: the
    # factor the other instructions give
    ratios = {}
    for op in ("TEXP", "TSQRT", "TDIVS", "TRECIP", "TRSQRT"):
        sl = {}
        for dt in ("float16", "float32"):
            rows = groups.get((op, dt, "1D"), [])
            sl[dt] = _slope([v for _, v, _, _ in rows], [hw for *_, hw in rows])
        ratios[op] = sl["float16"] / sl["float32"]
    for op, r in ratios.items():
        rest = statistics.fmean(x for k, x in ratios.items() if k != op)
        print(f"{op}: f16 / f32 cycles a register {r:.2f}; the others give {rest:.2f}")
    return 0


def _slope(xs: list[int], ys: list[float]) -> float:
    if len(set(xs)) < 2:
        return float("nan")
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sum(
        (x - mx) ** 2 for x in xs)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))


__all__: list[Any] = []

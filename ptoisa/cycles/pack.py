"""The cycles conformance runner: ``ptoisa cycles PACK`` (a directory with ``cycles.json`` or
the file itself, schema ``ptoisa-cycles/1``; see ../shared/costmodel/README.md).

Each case's operands are built from its JSON, its program runs through the machine with the
cycle model observing, and the measured call's predicted cycles are compared with the
hardware's: ``precision = max(0, 1 - |pred - hw| / hw)``; a case passes at precision >= its
``upstream_accuracy``. Cases marked ``suspect`` are reported apart (not counted).
"""

from __future__ import annotations

import json
import math
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

import numpy as np

from .. import memory
from ..enums import Pipe
from ..errors import PtoError
from ..isa.registry import REGISTRY
from ..progress import Progress
from ..targets import DEFAULT_TARGET
from ..tensor import GlobalTensor
from ..tile import Tile
from . import costs
from .schedule import CycleModel

_NP = {"float32": np.float32, "float16": np.float16, "int32": np.int32, "int16": np.int16,
       "int8": np.int8, "uint8": np.uint8, "uint16": np.uint16, "uint32": np.uint32,
       "bfloat16": "bf16"}


def load_pack(path: str | Path) -> list[dict[str, Any]]:
    p = Path(path)
    if p.is_dir():
        p = p / "cycles.json"
    try:
        data = json.loads(p.read_text())
    except OSError as e:
        raise PtoError(f"cannot read {p}: {e.strerror}") from None
    except UnicodeDecodeError as e:  # a binary file (an image, a .npy, ...)
        raise PtoError(f"{p}: not JSON: not UTF-8 text (byte {e.start})") from None
    except json.JSONDecodeError as e:
        raise PtoError(f"{p}: not JSON: {e}") from None
    if not isinstance(data, dict) or not str(data.get("schema", "")).startswith("ptoisa-cycles/"):
        raise PtoError(f"{p}: not a cycles pack (schema ptoisa-cycles/1)")
    cases = list(data.get("cases") or [])
    for c in cases:
        if isinstance(c, dict) and not c.get("suspect"):
            why = placeholder(c)
            if why:
                c["suspect"] = why
    return cases


def placeholder(case: dict[str, Any]) -> str | None:
    """Why a case's hardware number looks like a placeholder the pack does not mark (then it
    is reported apart like the pack's own ``suspect`` cases), else None: a TSORT32 count equal
    to the sorted tile's row count (upstream's tests pass the row count where the profiled
    number goes, with accuracy 0: 8 cycles for 8 rows of 32 f32, 32 for 32 rows)."""
    if case.get("op") != "TSORT32" or case.get("upstream_accuracy"):
        return None
    tiles = [o for o in case.get("operands") or [] if o.get("kind") == "tile"]
    rows = {int(o.get("valid_row") or o.get("rows") or 0) for o in tiles}
    hw = case.get("hardware_cycles")
    if hw is not None and float(hw) in {float(r) for r in rows}:
        return "the count equals the row count (a placeholder, not a measurement)"
    return None


def _operand(o: dict[str, Any], built: dict[str, Any]) -> Any:
    kind = o.get("kind")
    if kind == "scalar":
        try:
            return np.dtype(_NP.get(o["dtype"], o["dtype"])).type(o.get("value", 1))
        except TypeError:  # an element type numpy does not name (bf16...): a Python number
            return o.get("value", 1)
    if kind == "gm":
        shape = [int(x) for x in o["shape"]]
        stride = [int(x) for x in o["stride"]]
        n = sum((s - 1) * t for s, t in zip(shape, stride, strict=False)) + 1
        arr = np.zeros(max(n, 1), _NP.get(o["dtype"], o["dtype"]))
        return GlobalTensor(arr, shape, stride, o.get("layout", "ND"), name=o["name"])
    if o.get("conv_tile"):
        return _conv_tile(o, built)
    dt = _NP.get(o["dtype"], o["dtype"])
    valid = (int(o.get("valid_row", o["rows"])), int(o.get("valid_col", o["cols"])))
    try:
        return Tile(o["loc"], dt, int(o["rows"]), int(o["cols"]), o.get("blayout", "RowMajor"),
                    valid, o.get("slayout", "NoneBox"), int(o.get("fractal_bytes", 512)),
                    o.get("pad", "Null"), name=o["name"])
    except PtoError:
        # a layout this target rejects for the role: the cost only needs the shape and type
        return Tile(o["loc"], dt, int(o["rows"]), int(o["cols"]), valid=valid, name=o["name"])


def _conv_tile(o: dict[str, Any], case_ops: dict[str, Any]) -> Any:
    from ..conv import ConvTile

    gm = case_ops.get("_gm")
    dt = np.dtype(_NP.get(gm["dtype"] if gm else "float16", "float16"))
    shape = [int(x) for x in (gm["shape"] if gm else o["conv_shape"])]
    lay = str(o.get("layout", "NC1HWC0"))
    if lay == "FRACTAL_Z" and len(shape) == 5:
        shape = [shape[0] * shape[1], shape[2], shape[3], shape[4]]
    return ConvTile(o.get("loc", "Mat"), dt, int(o["buffer_bytes"]), lay, tuple(shape),
                    name=o["name"])


@dataclass
class CaseResult:
    case_id: str
    op: str
    predicted: int
    hardware: float
    bar: float
    suspect: str | None
    note: str = ""

    @property
    def precision(self) -> float:
        if not self.hardware:
            return 0.0
        return max(0.0, 1.0 - abs(self.predicted - self.hardware) / self.hardware)

    @property
    def passed(self) -> bool:
        return self.precision >= float(self.bar or 0.0) - 1e-9


def run_case(case: dict[str, Any], table: dict[str, Any] | None = None
             ) -> tuple[int, str, list[tuple[costs.Features, Pipe]]]:
    """(predicted cycles of the measured call, a note, (features, pipe) of every call)."""
    ops = {o["name"]: o for o in case["operands"]}
    built: dict[str, Any] = {"_gm": next((o for o in case["operands"] if o.get("kind") == "gm"),
                                         None)}
    note = ""
    model = CycleModel(case.get("target", DEFAULT_TARGET), table=table)
    feats: list[tuple[costs.Features, Pipe]] = []

    def observe(rec: Any) -> None:
        feats.append((costs.features(rec.ins, rec.values, rec.params),
                      rec.ins.pipe_on(rec.values)))
        model(rec)

    m = memory.Machine(case.get("target", DEFAULT_TARGET))
    m.quiet = True
    m.observers.append(observe)
    memory.push(m)
    try:
        for name, o in ops.items():
            try:
                built[name] = _operand(o, built)
            except (PtoError, KeyError, TypeError, ValueError) as e:
                note = f"operand {name}: {e}"
        in_place = bool(case.get("params", {}).get("in_place"))
        for call in case["program"]:
            ins = REGISTRY.get(call["op"])
            if ins is None:
                note = f"unknown instruction {call['op']}"
                continue
            args = [built.get(a) for a in call["args"]]
            if "is_binary" in (case.get("params") or {}) and \
                    any(o.name == "isBinary" for o in ins.operands):
                args.append(bool(case["params"]["is_binary"]))
            if in_place and len(args) >= 2 and isinstance(args[1], Tile):
                args[0] = args[1]
            kwargs = _params(ins, case.get("params") or {})
            try:
                with np.errstate(all="ignore"):
                    ins(*args, **kwargs)
            except PtoError as e:  # the cost was taken before the semantics ran
                note = note or f"semantics: {str(e).splitlines()[0]}"
    finally:
        memory.pop(m)
    rep = model.report()
    idx = int(case.get("measured_call", len(case["program"]) - 1))
    work = [s for s in rep.steps if s.sync is None]
    pred = work[idx].cycles if idx < len(work) else 0
    if idx >= len(work):
        note = note or "measured call did not run"
    return pred, note, feats


def _params(ins: Any, params: dict[str, Any]) -> dict[str, Any]:
    names = {p.name for p in ins.params}
    out: dict[str, Any] = {}
    if "is_binary" in params and "isBinary" in names:
        out["isBinary"] = bool(params["is_binary"])
    if params.get("op_params") == "high_precision" and "PrecisionType" in names:
        out["PrecisionType"] = "HIGH_PRECISION"
    if "round_mode" in params and "mode" in names:
        mode = str(params["round_mode"]).replace("CAST_", "")
        out["mode"] = {"NONE": "CAST_NONE"}.get(mode, params["round_mode"])
    return out


def evaluate(cases: list[dict[str, Any]], table: dict[str, Any] | None = None
             ) -> list[CaseResult]:
    res = []
    with Progress(len(cases), "cycles") as bar:
        for c in cases:
            try:
                pred, note, _ = run_case(c, table)
            except Exception as e:  # noqa: BLE001 - one broken case must not stop the pack
                pred, note = 0, f"error: {type(e).__name__}: {e}"
            res.append(CaseResult(c["case_id"], c.get("op", "?"), int(pred),
                                  float(c["hardware_cycles"]),
                                  float(c.get("upstream_accuracy") or 0), c.get("suspect"), note))
            bar.update()
    return res


def explain_case(case: dict[str, Any]) -> str:
    """The rule that priced the case's measured call (see :func:`costs.explain`)."""
    _, _, feats = run_case(case)
    idx = int(case.get("measured_call", len(case["program"]) - 1))
    if idx >= len(feats):
        return "measured call did not run"
    f, pipe = feats[idx]
    target = case.get("target", DEFAULT_TARGET)
    return costs.explain(costs.default_table(target), f, pipe, target)[1]


def run_pack(path: str | Path, *, as_json: bool = False, out: TextIO | None = None,
             explain: bool = False) -> int:
    """Print the per-case comparison (or JSON; ``explain``: each case's rule, marked
    ``[estimate: why]`` where no measurement on its target is behind it); return the number
    of failed cases."""
    out = out or sys.stdout
    cases = load_pack(path)
    res = evaluate(cases)
    rules = {c["case_id"]: explain_case(c) for c in cases} if explain else {}
    if as_json:
        out.write(json.dumps([{"case_id": r.case_id, "predicted_cycles": r.predicted,
                               "hardware_cycles": r.hardware,
                               "precision": round(r.precision, 6),
                               **({"rule": rules[r.case_id]} if explain else {})}
                              for r in res], indent=1))
        out.write("\n")
        return sum(1 for r in res if not r.suspect and not r.passed)
    main = [r for r in res if not r.suspect]
    sus = [r for r in res if r.suspect]
    w = max((len(r.case_id) for r in res), default=10)
    out.write(f"{'case':<{w}}  {'pred':>7}  {'hw':>7}  prec   bar\n")
    for r in main:
        out.write(_line(r, w))
        if explain:
            out.write(f"    {rules[r.case_id]}\n")
    if sus:
        out.write("suspect hardware numbers (reported apart, not counted):\n")
        for r in sus:
            out.write(_line(r, w).rstrip("\n") + f"  (suspect: {r.suspect})\n")
            if explain:
                out.write(f"    {rules[r.case_id]}\n")
    precs = sorted(r.precision for r in main)
    if precs:
        med = precs[len(precs) // 2] if len(precs) % 2 else \
            (precs[len(precs) // 2 - 1] + precs[len(precs) // 2]) / 2
        at_least = sum(1 for r in main if r.precision >= r.bar - 1e-9)
        out.write(f"median precision {med:.3f}; at least upstream's precision on "
                  f"{at_least}/{len(main)} cases\n")
    failed = sum(1 for r in main if not r.passed)
    out.write(f"{len(main) - failed} passed, {failed} failed\n")
    return failed


def _line(r: CaseResult, w: int) -> str:
    verdict = "PASS" if r.passed else "FAIL"
    note = f"  [{r.note}]" if r.note else ""
    hw = int(r.hardware) if math.isfinite(r.hardware) and r.hardware == int(r.hardware) \
        else r.hardware
    return (f"{r.case_id:<{w}}  {r.predicted:>7}  {hw:>7}  {r.precision:.3f}  "
            f"{r.bar:.3f}  {verdict}{note}\n")

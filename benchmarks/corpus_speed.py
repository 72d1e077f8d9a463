"""The PTOAS corpus's programs run as given, timed, with generated inputs.

    python benchmarks/corpus_speed.py [GLOB] [--target T] [--repeat N] [--digest]

GLOB (default: the Qwen3 decode kernels) names ``.pto`` files under the corpus next to the
checkout (``../shared/corpus/ptoas/test/samples``). Each program's entry function gets, for
every pointer argument, a flat array as large as the ``pto.make_tensor_view`` over it reaches
(its shape and strides must be written with ``arith.constant`` values; programs whose views
are not are skipped), filled with seeded values (floats: normal * 0.5 in the first 4M
elements, zeros after; integers: 0..6), and 0 for every index argument.

Prints per program the median time of ``--repeat`` runs, the instructions one run executes
and the three instructions that took longest (a timing wrapper around ``Instr.run``: entries
that a compiled step runs in their plain form bypass it and are not listed). ``--digest``
prints a digest of every array after one run on cpu, a2a3 and a5 instead: run it in two
checkouts and diff the outputs to compare revisions bit for bit.
"""

from __future__ import annotations

import argparse
import collections
import hashlib
import re
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np

HERE = Path(__file__).resolve().parent
SAMPLES = HERE.parent.parent / "shared" / "corpus" / "ptoas" / "test" / "samples"

_DT = {"f32": np.float32, "f16": np.float16, "bf16": ml_dtypes.bfloat16, "i32": np.int32,
       "i16": np.int16, "i8": np.int8, "ui8": np.uint8, "ui16": np.uint16, "ui32": np.uint32,
       "i64": np.int64}
#: arrays larger than this (elements) are not made: the program is skipped
_MAX_ELEMENTS = 300_000_000


def arguments(text: str, seed: int = 11) -> tuple[str, list[Any]] | None:
    """(entry function name, its generated arguments) of a program, or None when a pointer
    argument's size cannot be read off its tensor view."""
    consts = {m.group(1): int(m.group(2)) for m in
              re.finditer(r"%(\w+) = arith.constant (-?\d+) : index", text)}
    sig = re.search(r"func.func @(\w+)\(([^)]*)\)", text)
    if sig is None:
        return None
    rng = np.random.default_rng(seed)
    args: list[Any] = []
    for a in sig.group(2).split(","):
        if ":" not in a:
            return None
        name, typ = (s.strip() for s in a.split(":", 1))
        ptr = re.match(r"!pto.ptr<(\w+)>", typ)
        if ptr is None:
            args.append(0)
            continue
        view = re.search(rf"make_tensor_view {re.escape(name)}, shape = \[([^\]]*)\], "
                         r"strides = \[([^\]]*)\]", text)
        dt = _DT.get(ptr.group(1))
        if view is None or dt is None:
            return None
        shape, strides = ([consts.get(s.strip().lstrip("%")) for s in g.split(",")]
                          for g in view.groups())
        if None in shape or None in strides:
            return None
        n = 1 + sum((d - 1) * st for d, st in zip(shape, strides, strict=False))  # its reach
        if n > _MAX_ELEMENTS:
            return None
        arr = np.zeros(n, dt)
        if np.dtype(dt).kind in "iu":
            arr[:] = np.arange(n) % 7
        else:
            k = min(n, 1 << 22)
            arr[:k] = (rng.standard_normal(k) * 0.5).astype(dt)
        args.append(arr)
    return sig.group(1), args


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("glob", nargs="?", default="Qwen3DecodeA3/*.pto",
                    help="files under the corpus samples (default: Qwen3DecodeA3/*.pto)")
    ap.add_argument("--target", default="a2a3")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--digest", action="store_true",
                    help="print a digest of every array after a run on cpu, a2a3 and a5")
    args = ap.parse_args()
    from ptoisa.isa import registry

    spent: collections.Counter[str] = collections.Counter()
    calls: collections.Counter[str] = collections.Counter()
    run = registry.Instr.run

    def timed(self: Any, *a: Any, **k: Any) -> Any:
        t0 = time.perf_counter()
        try:
            return run(self, *a, **k)
        finally:
            spent[self.name] += time.perf_counter() - t0
            calls[self.name] += 1
    if not args.digest:
        registry.Instr.run = timed  # (before programs are compiled: steps bind it then)
    import ptoisa as pto

    files = sorted(SAMPLES.glob(args.glob), key=lambda p: (p.parent.name, len(p.name), p.name))
    if not files:
        sys.exit(f"no corpus files match {args.glob} under {SAMPLES}")
    for path in files:
        got = arguments(path.read_text())
        if got is None:
            print(f"{path.name:44s} skipped (a view's size is not constant)")
            continue
        fn, inputs = got
        try:
            if args.digest:
                for tgt in ("cpu", "a2a3", "a5"):
                    arrays = [a.copy() if isinstance(a, np.ndarray) else a for a in inputs]
                    pto.load(path, target=tgt).run(fn, *arrays, target=tgt)
                    h = hashlib.sha1()
                    for a in arrays:
                        if isinstance(a, np.ndarray):
                            h.update(a.tobytes())
                    print(f"{path.name:44s} {tgt:5s} {h.hexdigest()[:16]}", flush=True)
                continue
            prog = pto.load(path, target=args.target)
            prog.run(fn, *inputs, target=args.target)
            times = []
            for _ in range(args.repeat):
                spent.clear()
                calls.clear()
                t0 = time.perf_counter()
                prog.run(fn, *inputs, target=args.target)
                times.append(time.perf_counter() - t0)
        except Exception as e:  # noqa: BLE001 (a program this generator cannot feed: say so)
            print(f"{path.name:44s} error: {type(e).__name__}: {str(e).splitlines()[0][:90]}")
            continue
        top = ", ".join(f"{k} {calls[k]}x{spent[k] / calls[k] * 1e6:.0f}us"
                        for k, _ in spent.most_common(3))
        print(f"{path.name:44s} {statistics.median(times) * 1e3:8.2f} ms "
              f"{sum(calls.values()):5d} instrs | {top}", flush=True)


if __name__ == "__main__":
    main()

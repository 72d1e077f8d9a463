"""Parse speed of the .pto front end: largest corpus file, and ops/second over the corpus.

Usage: python benchmarks/parse_speed.py [path-to-shared-dir]
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from ptoisa.text import parse, print_module


def main() -> None:
    default = Path(__file__).resolve().parents[1].parent / "shared"
    shared = Path(sys.argv[1] if len(sys.argv) > 1 else os.environ.get("PTOISA_SHARED", default))
    files = sorted((shared / "corpus" / "ptoas").rglob("*.pto"))
    if not files:
        sys.exit(f"no corpus under {shared}")
    texts = {f: f.read_text() for f in files}
    largest = max(files, key=lambda f: len(texts[f]))
    text = texts[largest]
    parse(text, str(largest))  # warm-up
    runs = 20
    t0 = time.perf_counter()
    for _ in range(runs):
        mod = parse(text, str(largest))
    dt = (time.perf_counter() - t0) / runs
    nops = sum(1 for _ in mod.walk())
    print(f"largest: {largest.name} ({len(text)} bytes, {nops} ops): {dt * 1e3:.2f} ms per parse")
    t0 = time.perf_counter()
    total_ops = 0
    for f in files:
        total_ops += sum(1 for _ in parse(texts[f], str(f)).walk())
    dt_all = time.perf_counter() - t0
    print(
        f"corpus: {len(files)} files, {total_ops} ops in {dt_all * 1e3:.1f} ms "
        f"= {total_ops / dt_all:,.0f} ops/s (parse + SSA checks)"
    )
    t0 = time.perf_counter()
    for _ in range(runs):
        print_module(mod, "dps")
    print(f"print (dps) of the largest file: {(time.perf_counter() - t0) / runs * 1e3:.2f} ms")


if __name__ == "__main__":
    main()

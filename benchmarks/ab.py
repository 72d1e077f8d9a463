"""A/B in one process: the working tree's ptoisa against another revision's, the two runs of
each kernel alternating round by round (a shared machine's slow spells then hit both alike),
and (``--bits``) every output of the scale.py kernels compared byte for byte.

The other revision is taken with ``git archive REV ptoisa`` into a temporary directory as the
package ``ptoisa_ab`` (its absolute imports rewritten), so both import side by side.

Usage: python benchmarks/ab.py REV [--cases eager,pto,vadd,chain,corpus,gemm,softmax,flash]
       [--rounds N] [--bits] [--all-sizes]
Prints per case: the median of the per-round ratios new/REV, and the fastest round of each.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import re
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Callable
from io import BytesIO
from pathlib import Path
from types import ModuleType
from typing import Any

import ml_dtypes
import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

import ptoisa as NEW  # noqa: E402

ALL_CASES = ("eager", "pto", "vadd", "chain", "corpus", "gemm", "softmax", "flash")


def other_revision(rev: str, into: Path) -> ModuleType:
    """``rev``'s ptoisa imported as ``ptoisa_ab``."""
    data = subprocess.run(["git", "-C", str(ROOT), "archive", rev, "ptoisa"], check=True,
                          capture_output=True).stdout
    with tarfile.open(fileobj=BytesIO(data)) as tar:
        tar.extractall(into, filter="data")
    pkg = into / "ptoisa_ab"
    (into / "ptoisa").rename(pkg)
    for py in pkg.rglob("*.py"):
        text = py.read_text()
        new = re.sub(r"^(\s*)(from|import) ptoisa([. ])", r"\1\2 ptoisa_ab\3", text,
                     flags=re.M).replace('["ptoisa", "isa"]', '["ptoisa_ab", "isa"]')
        if new != text:
            py.write_text(new)
    sys.path.insert(0, str(into))
    import ptoisa_ab

    return ptoisa_ab


def rebound(path: Path, name: str, pkg: ModuleType) -> ModuleType:
    """A fresh copy of a benchmark module whose ptoisa names are ``pkg``'s."""
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    for nm, v in list(vars(mod).items()):
        if v is NEW:
            setattr(mod, nm, pkg)
        elif str(getattr(v, "__module__", "")).startswith("ptoisa") and hasattr(pkg, nm):
            setattr(mod, nm, getattr(pkg, nm))
    return mod


def modules(pkg: ModuleType, tag: str) -> tuple[ModuleType, ModuleType, ModuleType]:
    k = rebound(HERE / "kernels.py", f"kernels_{tag}", pkg)
    sys.modules["kernels"] = k  # scale.py imports it by that name inside its cases
    s = rebound(HERE / "scale.py", f"scale_{tag}", pkg)
    s.softmax = k.softmax  # (scale.softmax imports "kernels" when called: whichever was last)
    io = rebound(HERE / "interp_overhead.py", f"interp_{tag}", pkg)
    return k, s, io


def timed_cases(pkg: ModuleType, tag: str, names: set[str], quick: bool = True
                ) -> dict[str, Callable[[], Any]]:
    k_mod, s_mod, io_mod = modules(pkg, tag)
    tile, tt = pkg.Tile, pkg.TileType
    out: dict[str, Callable[[], Any]] = {}
    if "eager" in names:
        def loop(n: int) -> None:
            a = tile(tt.Vec, np.float32, 16, 16)
            c = tile(tt.Vec, np.float32, 16, 16)
            for _ in range(n):
                pkg.TADD(c, c, a)
        out["eager TADD 16x16 x2000"] = lambda: pkg.launch(loop, 2000, blocks=1)
    if "pto" in names:
        prog = pkg.load(io_mod.program(), target="a2a3")
        a = np.random.default_rng(0).standard_normal((16, 16)).astype(np.float32)
        c = np.zeros_like(a)
        out[".pto tadd 16x16 x2000"] = lambda: prog.loop(a, c, 2000)
    for case_name, size, _np_fn, pto_fn, _check in scale_cases(s_mod, names, quick=quick):
        out[f"{case_name} {size}"] = pto_fn
    return out


def scale_cases(s_mod: ModuleType, names: set[str], quick: bool, target: str = "a2a3"
                ) -> list[Any]:
    cases: list[Any] = []
    bf16 = ml_dtypes.bfloat16
    if "vadd" in names:
        cases += s_mod.vec_add_cases(target, [1, 256] if quick else [1, 16, 256])
    if "softmax" in names:
        cases += s_mod.softmax_cases(target, [4096] if quick else [64, 512, 4096])
    if "gemm" in names:
        for dt, nm in ((np.float16, "f16"), (bf16, "bf16")):
            cases += s_mod.gemm_cases(target, dt, nm, [512] if quick else [128, 256, 512])
    if "chain" in names:
        cases += s_mod.decode_cases(target)
    if "corpus" in names:
        cases += s_mod.corpus_decode_cases(target)
    if "flash" in names:
        cases += s_mod.flash_cases(target, [2048] if quick else [256, 1024])
    return cases


def digests(pkg: ModuleType, tag: str, target: str) -> dict[str, str]:
    """sha1 of every array each scale.py launch holds (inputs and outputs) after running."""
    _, s_mod, _ = modules(pkg, tag)
    res = {}
    for name, size, _np_fn, pto_fn, _check in scale_cases(s_mod, set(ALL_CASES), False, target):
        pto_fn()
        pto_fn()  # (twice: a second launch meets what the first left, as in a benchmark)
        h = hashlib.sha1()
        for v in (*(pto_fn.__defaults__ or ()),
                  *(c.cell_contents for c in (pto_fn.__closure__ or ()))):
            if isinstance(v, np.ndarray):
                h.update(v.tobytes())
        res[f"{target} {name} {size}"] = h.hexdigest()
    return res


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("rev", help="the git revision to compare with (e.g. HEAD, main~3)")
    ap.add_argument("--cases", default="eager,pto,vadd,chain",
                    help=f"comma-separated, of {','.join(ALL_CASES)}")
    ap.add_argument("--rounds", type=int, default=21)
    ap.add_argument("--bits", action="store_true",
                    help="also compare every scale.py output (cpu, a2a3, a5) byte for byte")
    ap.add_argument("--all-sizes", action="store_true",
                    help="time the smaller sizes too (those --bits compares), not only the goals'")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        old = other_revision(args.rev, Path(tmp))
        names = set(args.cases.split(","))
        print(f"new = working tree, old = {args.rev}; {args.rounds} alternating rounds")
        quick = not args.all_sizes
        new_c = timed_cases(NEW, "new", names, quick)
        old_c = timed_cases(old, "old", names, quick)
        for key, f_new in new_c.items():
            f_old = old_c[key]
            for f in (f_new, f_old, f_new, f_old):
                f()
            ratios, t_new, t_old = [], [], []
            for i in range(args.rounds):
                t = {}
                for f in ((f_new, f_old) if i % 2 == 0 else (f_old, f_new)):
                    t0 = time.perf_counter()
                    f()
                    t[f] = time.perf_counter() - t0
                t_new.append(t[f_new])
                t_old.append(t[f_old])
                ratios.append(t[f_new] / t[f_old])
            print(f"{key:52s} new/old {statistics.median(ratios):.3f}   fastest: new "
                  f"{min(t_new) * 1e3:.3f} ms, old {min(t_old) * 1e3:.3f} ms", flush=True)
        if args.bits:
            differ = compared = 0
            for target in ("cpu", "a2a3", "a5"):
                a, b = digests(NEW, "new", target), digests(old, "old", target)
                for k in a:
                    compared += 1
                    if a[k] != b[k]:
                        differ += 1
                        print(f"DIFFERENT BITS: {k}")
            print(f"bits: {compared} launches' arrays compared, {differ} differ")
            if differ:
                sys.exit(1)


if __name__ == "__main__":
    main()

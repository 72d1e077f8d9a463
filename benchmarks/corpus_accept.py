"""How much of the August PTOAS test tree and the frontends' files ``ptoisa.load`` accepts.

    python benchmarks/corpus_accept.py [--top N] [--list REASON] [--out FILE.json]

Every ``.pto`` under ``../shared/corpus/ptoas-main/test`` (but the micro-ISA folders
``lit/vpto``, ``lit/vmi_new`` and ``vpto/``) and ``../shared/corpus/frontends`` is loaded for
the target of its first ``// RUN:`` line (``--pto-arch=a5`` -> a5, else a2a3). A file is

* ``runnable``: accepted, and every op compiles to something ptoisa executes;
* ``accepted, not executable``: accepted, but an op compiles to a step that refuses to run
  (the reason names the first such op);
* ``rejected``: ``load`` raised (the reason is the first error, numbers and SSA names
  blanked so that one cause counts once).

Files PTOAS itself rejects (``not ptoas`` / ``error:`` CHECK lines) are counted apart.
"""

from __future__ import annotations

import argparse
import collections
import json
import re
import signal
import sys
from pathlib import Path
from typing import Any

import ptoisa
from ptoisa.interp import compiler

SHARED = Path(__file__).resolve().parents[2] / "shared"
ROOTS = (SHARED / "corpus" / "ptoas-main" / "test", SHARED / "corpus" / "frontends")
MICRO = ("/lit/vpto/", "/lit/vmi_new/", "/test/vpto/")


def files() -> list[Path]:
    out = []
    for r in ROOTS:
        out += [p for p in sorted(r.rglob("*.pto")) if not any(m in str(p) for m in MICRO)]
    return out


def target_of(text: str) -> tuple[str, bool]:
    runs = [ln for ln in text.splitlines() if "RUN:" in ln]
    first = runs[0] if runs else ""
    m = re.search(r"--pto-arch[= ](\w+)", first)
    tgt = "a5" if m and m.group(1) == "a5" else "a2a3"
    fails = any("not ptoas" in r for r in runs) or bool(
        re.search(r"//\s*[\w-]+:.*error:", text) or "expected-error" in text)
    return tgt, fails


def reason(msg: str) -> str:
    msg = msg.splitlines()[0]
    msg = re.sub(r"^.*?:\d+:\d+: (error: )?", "", msg)
    msg = re.sub(r"%[\w#-]+", "%v", msg)
    msg = re.sub(r"\d+", "N", msg)
    return msg[:90]


class _Timeout(Exception):
    pass


def classify(path: Path) -> tuple[str, str, bool]:
    text = path.read_text(errors="replace")
    tgt, ptoas_rejects = target_of(text)
    refused: list[str] = []
    orig = compiler.CompiledFunc.unsupported

    def spy(self: Any, op: Any) -> Any:
        refused.append(op.name)
        return orig(self, op)

    compiler.CompiledFunc.unsupported = spy  # type: ignore[method-assign]
    signal.alarm(20)
    try:
        ptoisa.load(text, target=tgt, filename=path.name)
    except _Timeout:
        return "rejected", "timeout (20 s)", ptoas_rejects
    except ptoisa.PtoError as e:
        return "rejected", reason(str(e)), ptoas_rejects
    except Exception as e:  # noqa: BLE001 - a traceback is a finding too
        return "rejected", f"CRASH {type(e).__name__}: {reason(str(e))}", ptoas_rejects
    finally:
        signal.alarm(0)
        compiler.CompiledFunc.unsupported = orig  # type: ignore[method-assign]
    if refused:
        return "accepted, not executable", f"cannot execute '{refused[0]}'", ptoas_rejects
    return "runnable", "", ptoas_rejects


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--top", type=int, default=25)
    ap.add_argument("--list", default=None, help="print the files whose reason contains this")
    ap.add_argument("--out", default=None)
    a = ap.parse_args()

    def _alarm(*_: Any) -> None:
        raise _Timeout

    signal.signal(signal.SIGALRM, _alarm)
    res: dict[str, tuple[str, str, bool]] = {}
    for p in files():
        res[str(p)] = classify(p)
    for expect, title in ((False, "files PTOAS accepts"), (True, "files PTOAS rejects")):
        sub = {k: v for k, v in res.items() if v[2] == expect}
        kinds = collections.Counter(v[0] for v in sub.values())
        print(f"== {title}: {len(sub)}  " + "  ".join(f"{k}: {n}" for k, n in kinds.items()))
        if not expect:
            reasons = collections.Counter(v[1] for v in sub.values() if v[0] != "runnable")
            for r, n in reasons.most_common(a.top):
                print(f"  {n:5d}  {r}")
    if a.list:
        for k, v in res.items():
            if a.list in v[1]:
                print(k)
    if a.out:
        Path(a.out).write_text(json.dumps(res, indent=0))
    sys.stdout.flush()


if __name__ == "__main__":
    main()

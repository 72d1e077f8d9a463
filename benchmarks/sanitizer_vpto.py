"""The sanitizer on upstream's micro-op (VPTO) case folders: every folder that runs, under the
sanitizer with its flags as written (clean, or its findings); then, with ``--mutate``, each
``set_flag`` / ``wait_flag`` pair dropped in turn: a race must be found where the pair was
executed (a pair in a branch the case never runs is counted apart).

    python benchmarks/sanitizer_vpto.py ../shared/corpus/ptoas-main/test/vpto/cases/micro-op \
        [--mutate]
"""
import json
import re
import shutil
import sys
import tempfile
from pathlib import Path

from ptoisa.interp import Program
from ptoisa.sanitizer import Sanitizer
from ptoisa.suite import Task, discover, do_task

root = Path(sys.argv[1])
mutate = "--mutate" in sys.argv
orig_run = Program.run
LAST = {}
def run(self, *a, **kw):
    san = Sanitizer()
    kw["sanitize"] = san
    try:
        return orig_run(self, *a, **kw)
    finally:
        LAST["san"] = san
Program.run = run

def one(task):
    LAST.clear()
    [res] = do_task(task)
    san = LAST.get("san")
    return res.verdict().verdict, san

tasks = [t for t in discover(root) if t.kind == "vpto"]
summary = {"clean": 0, "findings": 0, "not-run": 0}
detail = []
muts = {"found": 0, "missed": 0, "not-executed": 0}
for t in tasks:
    v, san = one(t)
    if san is None or v not in ("matched", "mismatch", "ran"):
        summary["not-run"] += 1
        continue
    rep = san.report
    kinds = sorted({f.kind for f in rep.findings})
    if rep.findings:
        summary["findings"] += 1
        detail.append((t.rel(), v, kinds, str(rep).splitlines()[0][:240]))
    else:
        summary["clean"] += 1
    if mutate and not rep.findings:
        text = (t.path / "kernel.pto").read_text()
        sets = [m for m in re.finditer(r"^\s*pto\.set_flag\[([^\]]*)\][^\n]*\n", text, re.M)]
        for m in sets:
            args = m.group(1)
            w = re.search(r"^\s*pto\.wait_flag\[" + re.escape(args) + r"\][^\n]*\n",
                          text[m.end():], re.M)
            if w is None:
                continue
            a, b = m.end() + w.start(), m.end() + w.end()
            mutated = text[:m.start()] + text[m.end():a] + text[b:]
            with tempfile.TemporaryDirectory() as td:
                d = Path(td) / t.path.name
                shutil.copytree(t.path, d)
                (d / "kernel.pto").write_text(mutated)
                v2, san2 = one(Task("vpto", d, Path(td)))
            if san2 is None:
                continue
            races = [f for f in san2.report.findings if f.kind == "race"]
            if san2.report.executed == rep.executed:  # the pair sat in code that never ran
                muts["not-executed"] += 1
                continue
            muts["found" if races else "missed"] += 1
            if not races:
                detail.append(("MISSED " + t.rel(), args, v2, ""))
print(json.dumps(summary), json.dumps(muts))
for d in detail:
    print(d)

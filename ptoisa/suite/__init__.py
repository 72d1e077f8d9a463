"""``ptoisa suite DIR``: upstream's own tests, as upstream runs them.

Every ``.pto`` file under DIR gets one verdict (``result.VERDICTS``). The layouts of PTOAS's
test tree are understood:

* a lit file (``// RUN:`` lines: ``lit.py``): its modules checked for the RUN lines' targets,
  accepted or rejected as PTOAS does, and what is accepted run on synthesised inputs;
* a sample (no RUN line): checked, then run on synthesised inputs sized from its views;
* a ``tilelang_st`` testcase (``cases.py`` + ``gen_data.py``): its kernels run on the inputs
  ``gen_data.py`` writes and compared with its goldens at the case's ``eps``
  (``goldens.py``);
* a ``vpto/cases`` folder (``kernel.pto`` + ``golden.py`` + ``compare.py``): checked, then run
  on ``golden.py``'s data and judged by ``compare.py`` (``goldens.do_vpto``); micro-ops of
  chapters ptoisa does not execute yet are refused by name.

It prints a table per folder and the failures with their first reason; ``--json FILE`` writes
the summary and every file's verdict.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import PtoError
from .result import FAILED, VERDICTS, FileResult, Outcome

SUFFIXES = (".pto", ".pto.mlir")


@dataclass(frozen=True)
class Task:
    kind: str  # file, tilelang, vpto
    path: Path
    root: Path

    def rel(self, p: Path | None = None) -> str:
        return (p or self.path).relative_to(self.root).as_posix()


def _is_pto(p: Path) -> bool:
    return p.is_file() and p.name.endswith(SUFFIXES)


def discover(root: Path) -> list[Task]:
    """The work under ``root``: case folders (a tilelang testcase, a vpto case) as one task
    each, every other ``.pto`` / ``.pto.mlir`` file as one."""
    cases: dict[Path, str] = {}
    for p in sorted(root.rglob("gen_data.py")):
        if (p.parent / "cases.py").is_file():
            cases[p.parent] = "tilelang"
    for p in sorted(root.rglob("golden.py")):
        if (p.parent / "kernel.pto").is_file():
            cases.setdefault(p.parent, "vpto")
    tasks = [Task(kind, d, root) for d, kind in cases.items()]
    for p in sorted(root.rglob("*")):
        if _is_pto(p) and p.parent not in cases:
            tasks.append(Task("file", p, root))
    return tasks


def do_task(task: Task) -> list[FileResult]:
    """One task's file verdicts (in a worker process)."""
    from . import goldens, work

    if task.kind == "file":
        return [work.do_file(task.path, task.rel())]
    if task.kind == "tilelang":
        return goldens.do_tilelang(task.path, task.root)
    return goldens.do_vpto(task.path, task.root)


def _timed_out(task: Task, timeout: float) -> list[FileResult]:
    files = [task.path] if task.kind == "file" else sorted(
        p for p in task.path.iterdir() if _is_pto(p))
    return [FileResult(task.rel(f), task.kind, outcomes=[Outcome(
        "timeout", f"no verdict within {timeout:g} s (--timeout)")]) for f in files]


class _Call:
    """A picklable-free callable for the forked workers."""

    def __call__(self, task: Task) -> list[FileResult]:
        return do_task(task)


def run_suite(root: Path, jobs: int = 2, timeout: float = 120.0,
              progress: bool = True) -> list[FileResult]:
    from ..progress import Progress
    from .pool import run_all

    tasks = discover(root)
    out: list[FileResult] = []
    with Progress(len(tasks), "suite") as bar:
        for _, res in run_all(_Call(), tasks, jobs, timeout,
                              lambda t: _timed_out(t, timeout)):
            if isinstance(res, BaseException):  # the worker's last net
                raise res
            out.extend(res)
            if progress:
                bar.update()
    out.sort(key=lambda r: r.path)
    return out


def folder_of(path: str, depth: int) -> str:
    parts = Path(path).parts[:-1]
    return "/".join(parts[:depth]) or "."


COLUMNS = ("files", "accepted", "rejected-as-ptoas", "ran", "matched", "unsupported",
           "failed", "not-checked")


def summary(results: list[FileResult], depth: int) -> dict[str, Any]:
    """Counts per verdict (whole run and per folder), ops refused by name, checks and runs
    not made (by reason), and the failures."""
    total: Counter[str] = Counter()
    folders: dict[str, Counter[str]] = {}
    ops: Counter[str] = Counter()
    not_made: Counter[str] = Counter()
    text: Counter[str] = Counter()
    for r in results:
        v = r.verdict()
        c = folders.setdefault(folder_of(r.path, depth), Counter())
        for k in (total, c):
            k[v.verdict] += 1
            k["files"] += 1
            if v.verdict in FAILED:
                k["failed"] += 1
        if v.op:
            ops[v.op] += 1
        for n in r.notes:
            not_made[_general(n)] += 1
        if v.verdict == "rejected-as-ptoas":
            text[{True: "carries PTOAS's text", False: "other text",
                  None: "no text to compare"}[v.text_matched]] += 1
    return {"counts": {k: total[k] for k in ("files", *VERDICTS) if total[k]},
            "folders": {f: {k: c[k] for k in ("files", *VERDICTS) if c[k]}
                        for f, c in sorted(folders.items())},
            "unsupported_ops": dict(ops.most_common()),
            "rejection_text": dict(text),
            "not_made": dict(not_made.most_common())}


def _general(note: str) -> str:
    """A note without its particulars (argument names, numbers) for counting."""
    import re

    note = re.sub(r"%[\w#]+", "%x", note)
    return re.sub(r"\d+", "N", note)


def render(results: list[FileResult], summ: dict[str, Any], seconds: float) -> str:
    rows = [("folder", *COLUMNS)]
    for f, c in summ["folders"].items():
        rows.append((f, *(str(c.get(k, 0) if k != "failed" else
                              sum(c.get(x, 0) for x in FAILED)) for k in COLUMNS)))
    tot = summ["counts"]
    rows.append(("total", *(str(tot.get(k, 0) if k != "failed" else
                                sum(tot.get(x, 0) for x in FAILED)) for k in COLUMNS)))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(x.ljust(w) if i == 0 else x.rjust(w)
                       for i, (x, w) in enumerate(zip(r, widths, strict=True)))
             for r in rows]
    lines.insert(1, "-" * len(lines[0]))
    lines.insert(len(lines) - 1, "-" * len(lines[0]))
    fails = Counter({k: v for k, v in tot.items() if k in FAILED})
    if fails:
        lines.append("failed: " + ", ".join(f"{n} {k}" for k, n in fails.most_common()))
    if summ["rejection_text"]:
        lines.append("rejections: " + ", ".join(f"{n} {k}" for k, n in
                                                summ["rejection_text"].items()))
    if summ["unsupported_ops"]:
        ops = list(summ["unsupported_ops"].items())
        shown = ", ".join(f"{op} {n}" for op, n in ops[:12])
        more = f", ... ({len(ops) - 12} more ops)" if len(ops) > 12 else ""
        lines.append(f"unsupported (refused by name): {shown}{more}")
    if summ["not_made"]:
        lines.append("not made:")
        lines += [f"  {n:5d}  {why}" for why, n in list(summ["not_made"].items())[:15]]
    bad = [r for r in results if r.verdict().verdict in FAILED]
    if bad:
        lines.append("")
        lines.append("failures (first reason):")
        for r in bad:
            v = r.verdict()
            where = f" [{v.where}]" if v.where else ""
            lines.append(f"  {r.path}{where}: {v.verdict}: {v.reason}")
            if v.verdict == "traceback" and v.detail:
                lines += ["    " + x for x in v.detail.rstrip().splitlines()[-6:]]
    lines.append(f"{tot.get('files', 0)} files in {seconds:.1f} s")
    return "\n".join(lines)


def main(ns: argparse.Namespace) -> int:
    root = Path(ns.dir)
    if not root.is_dir():
        print(f"ptoisa suite: {root}: no such directory", file=sys.stderr)
        return 2
    if ns.jobs < 1 or ns.timeout <= 0:
        raise PtoError("--jobs takes a positive count and --timeout a positive number")
    t0 = time.monotonic()
    results = run_suite(root, ns.jobs, ns.timeout)
    seconds = time.monotonic() - t0
    summ = summary(results, ns.depth)
    print(render(results, summ, seconds))
    if ns.json:
        doc = {"dir": str(root), "seconds": round(seconds, 1), **summ,
               "files": [r.to_json() for r in results]}
        try:
            Path(ns.json).write_text(json.dumps(doc, indent=1) + "\n")
        except OSError as e:
            raise PtoError(f"cannot write {ns.json}: {e.strerror or e}") from None
    if not results:
        print(f"ptoisa suite: {root}: no .pto file", file=sys.stderr)
        return 2
    fail_on = set(ns.fail_on.split(",")) if ns.fail_on else set(FAILED)
    unknown = fail_on - set(FAILED)
    if unknown:
        raise PtoError(f"--fail-on: unknown verdict {', '.join(sorted(unknown))} "
                       f"(failures: {', '.join(FAILED)})")
    return 1 if any(r.verdict().verdict in fail_on for r in results) else 0


def add_parser(sub: Any) -> None:
    s = sub.add_parser("suite", help="run upstream's tests (PTOAS's test tree, frontends' "
                                     ".pto files): a verdict per file")
    s.add_argument("dir", help="a test tree, e.g. ../shared/corpus/ptoas-main")
    s.add_argument("--json", metavar="FILE", help="write the summary and every file's verdict")
    s.add_argument("--jobs", type=int, default=2, help="worker processes (default 2)")
    s.add_argument("--timeout", type=float, default=120.0,
                   help="seconds one file (or case folder) may take (default 120)")
    s.add_argument("--depth", type=int, default=2,
                   help="folder levels the table groups by (default 2)")
    s.add_argument("--fail-on", metavar="VERDICTS",
                   help="comma-separated failure verdicts that make the exit status 1 "
                        "(default: every failure)")
    s.add_argument("-q", "--quiet", action="store_true", help="no progress line")
    s.set_defaults(fn=main)

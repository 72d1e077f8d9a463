"""What a lit test file asks of PTOAS: the modules it compiles, for which target, and whether
PTOAS must accept or reject each (with the message it must give).

A file's ``// RUN:`` lines (``\\`` continues a line) invoke ``ptoas`` or ``pto-test-opt``:

* ``--pto-arch=a3|a5`` is the target (a3 is ``a2a3``; PTOAS's default is a3), ``--pto-level``
  the level; ``pto-test-opt`` checks no target, and its modules are checked for a5;
* ``-split-input-file`` makes every ``// -----`` chunk its own module;
* ``split-file %s %t`` cuts the file at ``//--- NAME`` lines, and a RUN line that compiles
  ``%t/NAME`` compiles that part;
* PTOAS rejects the module when the tool is run under ``not``, when the chunk has an
  ``expected-error`` (``-verify-diagnostics``), or when the RUN line's FileCheck prefix checks
  an ``error:`` (some files pipe a failing compiler into FileCheck without ``not``); under
  ``not``, a checked ``'pto.x' op ...`` diagnostic is an error too (``-split-input-file``
  chunks checked without the ``error:`` head).

RUN lines of other tools (``FileCheck``, ``python``, ...) and ``ptoas --help`` ask nothing of
the compiler. ``--pto-backend`` is kept on the module (rules of one backend's pipeline).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ARCH = {"a3": "a2a3", "a5": "a5"}
DEFAULT_ARCH = "a2a3"  # ptoas without --pto-arch compiles for a3
#: pto-test-opt runs passes and op verifiers that check no target: its modules (VMI and VPTO
#: micro-ops, the A5 vector ISA) are checked for a5
TEST_OPT_ARCH = "a5"

_TOOL = re.compile(r"(?:^|[\s;(&|])(not\s+)?(ptoas|pto-test-opt)(?=\s)")
_SPLIT = re.compile(r"^//\s*-----\s*$")
_PART = re.compile(r"^//\s*---\s+(\S+)\s*$")
_EXPECTED = re.compile(r"expected-error\s*(?:@[+-]?\w+\s*)?\{\{(.*?)\}\}")


@dataclass(frozen=True)
class Module:
    """One module PTOAS compiles: its text (padded with blank lines so that line numbers are
    the file's) and what PTOAS does with it."""

    text: str
    where: str  # "" for the whole file, "chunk 3" / "part NAME" otherwise
    target: str
    level: str | None
    expect_reject: bool
    expected: tuple[str, ...]  # the error texts PTOAS gives (may be empty)
    option_error: str = ""  # PTOAS refuses the RUN line's options themselves (option_error)
    #: no RUN line says what PTOAS does with it (a sample, a frontend's file): PTOAS is taken
    #: to accept it, unless one of PTOAS's own verifier rules refuses it
    assumed: bool = False
    #: the RUN line's ``--pto-backend`` (``vpto`` / ``emitc``; None: not given)
    backend: str | None = None
    #: the passes a ``pto-test-opt`` RUN line runs, in order, without their dashes
    #: (``vmi-to-vpto``): the rules PTOAS makes only in a pass are checked when it runs
    passes: tuple[str, ...] = ()


_BACKEND_ATTR = re.compile(r'pto\.backend\s*=\s*"(\w+)"')


def option_error(run: str, target: str, text: str = "") -> str:
    """PTOAS's error for a command line it refuses whatever the module holds ("" if none):
    options that need A5, a --plan-memory-impl it does not know; for a module ``text`` whose
    child modules name different ``pto.backend``s (PTOAS's mixed fatobj mode, which links one
    object file), an ``-o`` that is not a file and the debug IR output flags. A
    PTOAS-compatibility rule of the RUN line (docs/ptoas_compat.md), checked by the suite
    only."""
    if len(set(_BACKEND_ATTR.findall(text))) > 1:
        if re.search(r"\s--(?:emit-vpto\S*|mlir-print-ir-\S+)", run):
            return ("mixed pto.backend fatobj mode does not support debug IR output flags "
                    "(--emit-vpto*, --mlir-print-ir-*)")
        out = re.search(r"\s-o[= ]?(\S+)", run)
        if out is None or out.group(1) == "-":
            return ("mixed pto.backend fatobj mode requires an explicit file path passed with "
                    "-o (it writes one object file)")
    m = re.search(r"--plan-memory-impl[= ](\S+)", run)
    if m and m.group(1) not in ("legacy", "modern"):
        return (f"Error: invalid --plan-memory-impl='{m.group(1)}', expected 'legacy' or "
                "'modern'.")
    if target != "a5":
        if re.search(r"--enable-bufid_sync(?:=true)?(?=\s|$)", run):
            return "Error: --enable-bufid_sync requires --pto-arch=a5."
        if re.search(r"--enable-op-fusion(?:=true)?(?=\s|$)", run):
            return "Error: --enable-op-fusion=true requires --pto-arch=a5."
    return ""


#: pto-test-opt options that are no pass
_NOT_PASSES = frozenset({"split-input-file", "verify-diagnostics", "o",
                         "allow-unregistered-dialect", "mlir-print-ir-after-all", "debug"})


def test_opt_passes(run: str) -> tuple[str, ...]:
    """The passes of a ``pto-test-opt`` command (its ``-name`` words up to the pipe), in
    order; ``--pass-pipeline=...`` names its passes too."""
    cmd = run.split("|", 1)[0]
    out: list[str] = []
    for m in re.finditer(r"(?<!\S)--?([a-z][\w-]*)(?:=(\S+))?", cmd):
        name, value = m.group(1), m.group(2)
        if name == "pass-pipeline" and value:
            out.extend(re.findall(r"[a-z][\w-]*(?=[(,)\"']|$)", value.strip("\"'")))
        elif name not in _NOT_PASSES and not name.startswith(("check-", "implicit-")):
            out.append(name)
    return tuple(out)


def run_lines(text: str) -> list[str]:
    """The file's RUN commands, continuation lines joined."""
    out: list[str] = []
    cont = False
    for line in text.splitlines():
        m = re.search(r"RUN:(.*)$", line)
        if m is None:
            cont = False
            continue
        body = m.group(1).strip()
        joined = body.endswith("\\")
        body = body.rstrip("\\").strip()
        if cont and out:
            out[-1] += " " + body
        else:
            out.append(body)
        cont = joined
    return out


def is_lit(text: str) -> bool:
    return "RUN:" in text


def _prefixes(run: str) -> list[str]:
    m = re.search(r"--check-prefix(?:es)?[= ]([\w,-]+)", run)
    return m.group(1).split(",") if m else ["CHECK"]


def _checked_errors(lines: list[str], prefixes: list[str], negated: bool = False) -> list[str]:
    """The ``error:`` texts the FileCheck lines of ``prefixes`` expect (``-NOT`` excluded).
    Under ``not``, a checked MLIR diagnostic without its ``error:`` head (``// CHECK: 'pto.x'
    op requires ...``, ``// CHECK: '!pto.vmi.vreg<...>' expected ...``) is an error text too:
    the failing tool's stderr is what is checked; so is one of PTOAS's VMI pass diagnostics,
    which start with their kind (``// CHECK: VMI{{-}}UNSUPPORTED{{:}} pto.vmi.compress ...``).
    """
    head = "(" + "|".join(map(re.escape, prefixes)) + r")(-(?!NOT)[\w]+)?:"
    pat = re.compile(r"//\s*" + head + r".*?error:\s*(.*)$")
    diag = re.compile(r"//\s*" + head + r"\s*('[^']+' (?:op )?\w.*|VMI(?:-|\{\{)\S*.*)$")
    out = []
    for line in lines:
        if (m := pat.search(line)) or (negated and (m := diag.search(line))):
            out.append(m.group(3).strip())
    return out


def _checked_texts(lines: list[str], prefixes: list[str]) -> list[str]:
    """Under ``not`` (the failing tool's stderr is what is checked): the texts of the CHECK
    lines that read as messages (more than one word; ``-NOT`` and ``-LABEL`` lines excluded),
    ``// CHECK: addr must be aligned to 32 bytes``."""
    pat = re.compile(r"//\s*(" + "|".join(map(re.escape, prefixes))
                     + r")(-(?!NOT|LABEL)[\w]+)?:\s*(.*\S.*)$")
    return [t for line in lines if (m := pat.search(line)) and " " in (t := m.group(3).strip())]


def _labelled(lines: list[str], prefixes: list[str]) -> bool:
    """Has a CHECK-LABEL line of ``prefixes`` (the output of a module that compiled)."""
    pat = re.compile(r"//\s*(" + "|".join(map(re.escape, prefixes)) + r")-LABEL:")
    return any(pat.search(line) for line in lines)


def _chunks(text: str) -> list[tuple[int, str]]:
    """``-split-input-file``: (first line index, text) of each ``// -----`` chunk."""
    lines = text.splitlines(keepends=True)
    out: list[tuple[int, str]] = []
    start = 0
    for i, line in enumerate(lines):
        if _SPLIT.match(line.strip()):
            out.append((start, "".join(lines[start:i])))
            start = i + 1
    out.append((start, "".join(lines[start:])))
    return out


def _parts(text: str) -> dict[str, tuple[int, str]]:
    """``split-file``: NAME -> (first line index, text) of each ``//--- NAME`` part."""
    lines = text.splitlines(keepends=True)
    heads = [(i, m.group(1)) for i, line in enumerate(lines) if (m := _PART.match(line.strip()))]
    out: dict[str, tuple[int, str]] = {}
    for k, (i, name) in enumerate(heads):
        end = heads[k + 1][0] if k + 1 < len(heads) else len(lines)
        out[name] = (i + 1, "".join(lines[i + 1:end]))
    return out


def _padded(first: int, body: str) -> str:
    return "\n" * first + body


def modules(text: str, folder: Path | None = None) -> tuple[list[Module], list[str]]:
    """(the modules the RUN lines compile, deduplicated; notes on RUN lines that could not be
    followed). A file with RUN lines of other tools only gives no module. A RUN line that
    compiles another file of the test's folder (``%S/NAME.pto``) compiles that file, judged
    by this one's CHECK lines."""
    found: dict[tuple[Any, ...], Module] = {}
    notes: list[str] = []
    parts = _parts(text) if re.search(r"\bsplit-file\b", text) else {}
    for run in run_lines(text):
        m = _TOOL.search(run)
        if m is None:
            continue
        negated = bool(m.group(1))
        if re.search(r"\s--help(?=\s|$)", run):
            continue  # (prints the options: compiles nothing)
        arch = re.search(r"--pto-arch[= ](\w+)", run)
        default = TEST_OPT_ARCH if m.group(2) == "pto-test-opt" else DEFAULT_ARCH
        target = ARCH.get(arch.group(1), default) if arch else default
        lv = re.search(r"--pto-level[= ](\w+)", run)
        level = lv.group(1) if lv else None
        be = re.search(r"--pto-backend[= ](\w+)", run)
        backend = be.group(1) if be else None
        prefixes = _prefixes(run)
        all_lines = text.splitlines()
        src = re.search(r"%t/(\S+)", run[m.end():])
        other = re.search(r"%S/(\S+\.pto)\b", run[m.end():])
        if other is not None and src is None:
            path = None if folder is None else folder / other.group(1)
            if path is None or not path.is_file():
                notes.append(f"RUN line compiles %S/{other.group(1)}, which is not there")
                continue
            units = [(f"file {other.group(1)}", 0, path.read_text())]
        elif src is not None:
            name = src.group(1)
            if name not in parts:
                notes.append(f"RUN line compiles %t/{name}, which is no '//--- {name}' part")
                continue
            first, body = parts[name]
            units = [(f"part {name}", first, body)]
        elif "-split-input-file" in run or "--split-input-file" in run:
            units = [(f"chunk {i + 1}", first, body)
                     for i, (first, body) in enumerate(_chunks(text))]
        else:
            units = [("", 0, text)]
        split = len(units) > 1
        refused = option_error(run, target, text) if m.group(2) == "ptoas" else ""
        passes = test_opt_passes(run[m.end():]) if m.group(2) == "pto-test-opt" else ()
        for where, first, body in units:
            lines = body.splitlines()
            expected = [e.strip() for line in lines for e in _EXPECTED.findall(line)]
            # a chunk's own CHECK lines say what it gives; a part's are in the file's head
            checks = _checked_errors(lines if where.startswith("chunk") else all_lines,
                                     prefixes, negated)
            if negated and not split:
                reject = True
                if not expected and not checks:
                    checks = _checked_texts(all_lines, prefixes)
            elif negated and not expected and not checks and where.startswith("chunk") and \
                    not _labelled(lines, prefixes):
                # (a chunk of a failing tool whose own CHECK lines read as messages, none a
                # label of output it prints: the message it fails with)
                checks = _checked_texts(lines, prefixes)
                reject = bool(checks)
            elif expected:
                reject = True
            elif checks:
                reject = True
            else:
                reject = False
            key = (where, target, level, refused, backend, passes)
            if key in found:
                continue
            # (a bare `CHECK: error:` marks a rejection and gives no text to compare)
            found[key] = Module(_padded(first, body), where, target, level, reject or
                                bool(refused), tuple(t for t in expected or checks if t),
                                refused, backend=backend, passes=passes)
    return list(found.values()), notes


_OP_HEAD = re.compile(r"^(?:custom op\s+)?'[\w.]+'\s+(?:op\s+)?|^op\s+")


def essential(diag: str) -> str:
    """``'pto.x' op expects ...`` -> ``expects ...`` (ptoisa names the op its own way; also
    ``custom op 'pto.x' expects ...`` and a text checked from ``op expects ...`` on)."""
    diag = diag.split(" op ", 1)[1] if " op " in diag else diag
    return _OP_HEAD.sub("", diag.strip())


def carries(message: str, diag: str) -> bool:
    """Does ``message`` carry PTOAS's diagnostic ``diag``: its essential text, the pieces
    around FileCheck's ``{{regex}}`` holes found in order?"""
    pieces = [p.strip() for p in re.split(r"\{\{.*?\}\}", essential(diag))]
    at = 0
    for p in pieces:
        if not p:
            continue
        at = message.find(p, at)
        if at < 0:
            return False
        at += len(p)
    return any(pieces)

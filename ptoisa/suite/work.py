"""One unit of ``ptoisa suite``'s work, done in a worker process: check a file's modules as
PTOAS would, then run what it accepts (on synthesised inputs, or on upstream's goldens).

Any exception that is not a :class:`PtoError` becomes the verdict ``traceback`` with its text:
a bug in ptoisa, reported with the file, never a crash of the suite.
"""

from __future__ import annotations

import math
import re
import time
import traceback
from pathlib import Path
from typing import Any

from ..errors import NotExecutedYet, PtoError
from ..isa.comm import SignalNeverSet
from ..targets import TargetLike, get_target
from . import lit
from .result import FileResult, Outcome

_UNKNOWN_OP = re.compile(r"unknown operation '([^']+)'")
_NOT_RUN_OP = re.compile(r"operation '([^']+)' cannot be executed by ptoisa yet")


def refused_op(err: PtoError) -> str | None:
    """The op an error refuses by name (check: unknown; run: not executed yet), else None."""
    m = _UNKNOWN_OP.search(err.message) or _NOT_RUN_OP.search(err.message)
    if m is None and isinstance(err, NotExecutedYet) and err.op:
        return err.op
    return m.group(1) if m else None


def first_line(err: BaseException) -> str:
    text = err.render() if isinstance(err, PtoError) else f"{type(err).__name__}: {err}"
    return text.splitlines()[0] if text else type(err).__name__


def _crash(e: BaseException, where: str = "") -> Outcome:
    return Outcome("traceback", f"{type(e).__name__}: {' '.join(str(e).split())[:300]}",
                   where, detail=traceback.format_exc())


def target_of(text: str, rel: str, path: Path | None = None) -> str:
    """A file without RUN lines: the module's ``pto.target_arch``, else the arch the samples'
    runner script (``runop.sh`` in a folder above ``path``) requires for this file, else an
    ``a5`` / ``a3`` in its path (``Qwen3DecodeA5/``, ``npu/a5/``), else PTOAS's default
    (a3)."""
    m = re.search(r'pto\.target_arch\s*=\s*"(\w+)"', text)
    if m and m.group(1) in lit.ARCH:
        return lit.ARCH[m.group(1)]
    if path is not None:
        for d in path.parents:
            script = d / "runop.sh"
            if script.is_file():
                arch = _runner_archs(script).get(path.stem)
                if arch in lit.ARCH:
                    return lit.ARCH[arch]
                break
    for part in reversed(Path(rel).parts):
        # a word of its own (npu/a5, x_a3) or a CamelCase end (Qwen3DecodeA5)
        m = re.search(r"(?:(?<![A-Za-z0-9])[aA]|(?<=[a-z0-9])A)([35])(?![0-9])", part)
        if m:
            return lit.ARCH["a" + m.group(1)]
    return lit.DEFAULT_ARCH


_RUNNER_ARCHS: dict[Path, dict[str, str]] = {}
# ``if [[ ( "$base" == "x" || ... ) && "${case_target_arch_lc}" != "a5" ]]; then``
# ``echo ... SKIP\trequires --pto-arch=a5``: the files upstream's sample runner builds only
# for that arch (it adds ``--pto-arch`` for them on such a SoC).
_REQUIRES = re.compile(r'if \[\[ \(?(?P<cond>(?:[^\]]|\](?!\]))*?)\)? &&\s*\\?\s*'
                       r'"\$\{case_target_arch_lc\}" != "(?P<arch>a[35])" \]\]; then\s*'
                       r'echo[^\n]*requires --pto-arch=(?P=arch)')


def _runner_archs(script: Path) -> dict[str, str]:
    """File stem -> the arch upstream's sample runner script requires for it."""
    if script not in _RUNNER_ARCHS:
        try:
            text = script.read_text(errors="replace")
        except OSError:
            text = ""
        found: dict[str, str] = {}
        for m in _REQUIRES.finditer(text):
            for base in re.findall(r'"\$base" == "([^"]+)"', m.group("cond")):
                found[base] = m.group("arch")
        _RUNNER_ARCHS[script] = found
    return _RUNNER_ARCHS[script]


# ---- check ---------------------------------------------------------------------------------

def check(text: str, name: str, target: TargetLike, level: str | None,
          backend: str | None = None,
          passes: tuple[str, ...] = ()) -> tuple[Any, list[PtoError]]:
    """(the Program, []) when the module checks for ``target`` (with the rules of the
    ``pto-test-opt`` ``passes`` that run), else (None, its errors in source order: PTOAS
    reports one per failing function). ``backend``: the command line's ``--pto-backend``
    (its pipeline's own rules apply)."""
    from ..interp import Program
    from ..interp.verify import diagnose
    from ..ir import verify_ssa
    from ..text import parse

    try:
        mod = parse(text, name, mlir_only=True)  # (PTOAS reads MLIR, never PTO-AS)
        verify_ssa(mod)
    except PtoError as e:
        return None, [e]
    errors = diagnose(mod, target, level=level, backend=backend, passes=passes)
    if errors:
        return None, errors
    return Program(mod, target, level=level), []


def judge(mod: lit.Module, errors: list[PtoError]) -> Outcome:
    """The verdict of one checked module against what PTOAS does with it."""
    for e in errors:
        op = refused_op(e)
        if op is not None:
            return Outcome("unsupported", first_line(e), mod.where, op=op)
    if not errors:
        if mod.expect_reject:
            said = f": {mod.expected[0]}" if mod.expected else ""
            return Outcome("wrongly-accepted", f"PTOAS rejects it{said}", mod.where)
        return Outcome("accepted", "", mod.where)
    if not mod.expect_reject:
        if mod.assumed and all(e.ptoas_rule for e in errors):
            # written for an older PTOAS (the frontends pin theirs), or a case PTOAS's own
            # tests never compile: today's PTOAS refuses it with the same rule (seen in its
            # lit tests, or cited from its source), so it is not a file PTOAS accepts
            cited = f", {errors[0].ptoas_source}" if errors[0].ptoas_source else ""
            return Outcome("rejected-as-ptoas", f"{first_line(errors[0])} (PTOAS's own "
                           f"rule{cited}: today's PTOAS rejects it too)", mod.where,
                           text_matched=True)
        return Outcome("wrongly-rejected", first_line(errors[0]), mod.where)
    matched = None
    if mod.expected:
        matched = any(lit.carries(e.render(), x) for x in mod.expected for e in errors)
    return Outcome("rejected-as-ptoas", first_line(errors[0]), mod.where, text_matched=matched)


# ---- runs on synthesised inputs ------------------------------------------------------------

def _entries(prog: Any) -> list[str]:
    from ..interp import entry_functions

    names = entry_functions(prog.module)
    if names:
        return names
    called = {op.callee for f in prog.module.functions() for op in f.walk()
              if op.name in ("func.call", "call") and op.callee}
    return [f.sym_name for f in prog.module.functions()
            if f.sym_name and f.regions and f.regions[0].blocks and f.sym_name not in called]


def _view_elems(cf: Any, arg: Any) -> int | None:
    """Elements the ``make_tensor_view``s of pointer ``arg`` reach, from constant shapes and
    strides (None when a view's extent depends on a value known only at run time)."""
    from ..interp.views import _kw_list

    need = 0
    for op in cf.op.walk():
        if op.name != "pto.make_tensor_view" or not op.operands or op.operands[0] is not arg:
            continue
        dims = []
        for key in ("shape", "strides"):
            vals = []
            for i in _kw_list(op, key) or []:
                slot = cf.slots.get(id(op.operands[i]))
                if slot not in cf.consts:
                    return None
                vals.append(int(cf.consts[slot]))
            dims.append(vals)
        shape, strides = dims
        if len(shape) != len(strides):
            return None
        if 0 in shape:
            continue
        need = max(need, 1 + sum((n - 1) * s for n, s in zip(shape, strides, strict=True)))
    return need or None


def synth_args(prog: Any, name: str, target: TargetLike, plan: Any = None,
               mixed: bool = False, zeroed: list[str] | None = None
               ) -> tuple[list[Any] | None, str]:
    """Arguments for function ``name`` under ``plan`` (``synth.Plan``; None: the default
    one): pointers arrays as large as the program reaches through them, integers the plan's
    (see ``synth``). (None, why) when an argument cannot be made up."""
    from ..targets import get_target
    from . import synth

    cf = prog.compiler(target).function(name)
    return synth.make_args(cf, plan or synth.Plan(), get_target(target), mixed, zeroed)


def _run_outcome(e: BaseException, where: str) -> Outcome:
    if isinstance(e, PtoError):
        op = refused_op(e)
        if op is not None:
            return Outcome("unsupported", first_line(e), where, op=op)
        return Outcome("run-failed", first_line(e), where)
    return _crash(e, where)


def synth_run(prog: Any, target: TargetLike, where: str, notes: list[str]) -> Outcome:
    """Run the module's entry functions (a cube + vector pair together) once each, 1 block,
    on synthesised inputs, trying the plans of ``synth.plans`` until one runs: ``ran`` (with
    the values chosen) when every run completes."""
    from ..interp.pipe_ops import kernel_kind

    names = _entries(prog)
    if not names:
        notes.append("not run: no entry function")
        return Outcome("accepted", "", where)
    kinds = {n: kernel_kind(prog.module.lookup(n)) for n in names}
    cubes = [n for n, k in kinds.items() if k == "cube"]
    vectors = [n for n, k in kinds.items() if k == "vector"]
    pair = (cubes[0], vectors[0]) if len(names) == 2 and cubes and vectors else None
    groups = [list(pair)] if pair is not None else [[n] for n in names]
    said: list[str] = []
    for group in groups:
        out = _search_group(prog, group, pair is not None, target, where, notes)
        if out is None or out.verdict != "ran":
            return out or Outcome("accepted", "", where)
        if out.reason:
            said.append(out.reason)
    return Outcome("ran", "; ".join(said), where)


def _search_group(prog: Any, group: list[str], paired: bool, target: TargetLike, where: str,
                  notes: list[str]) -> Outcome | None:
    """Search inputs for one launch (a function, or a cube + vector pair): its outcome, or
    None (a note says why) when it is not run."""
    from . import synth

    cfs = [prog.compiler(target).function(n) for n in group]
    mixed = paired or prog._is_mixed(group[0])
    names = sorted({n for cf in cfs for n in synth.roles(cf)})

    zeroed: dict[Any, list[str]] = {}
    presets: dict[Any, synth.Presets] = {}

    def run(plan: Any) -> None:
        presets[plan] = synth.Presets()
        while True:
            zeroed[plan] = []
            made = [synth_args(prog, n, target, plan, mixed, zeroed[plan]) for n in group]
            for args, why in made:
                if args is None:
                    raise synth.NotMade(why)
            arglists = [m[0] or [] for m in made]
            if paired:  # the host passes both kernels the same buffers
                synth.share(cfs, arglists)
            presets[plan].apply(arglists)
            try:
                if paired:
                    prog.run_mixed(*group, cube_args=tuple(arglists[0]),
                                   vector_args=tuple(arglists[1]), target=target)
                else:
                    prog.run(group[0], *arglists[0], target=target, plans=False)
                return
            except SignalNeverSet as e:
                # a wait only another rank satisfies: run again with its signal words
                # holding what the other side's notify leaves there (once per word)
                if not presets[plan].add(e, arglists, [cf.args for cf in cfs]):
                    raise

    try:
        tries = synth.search(run, synth.plans(cfs), _hopeless, synth.fixed_loops(cfs, mixed))
    except Exception as e:  # noqa: BLE001 - every failure becomes a verdict
        return _run_outcome(e, where)
    chosen = synth.best(tries)
    values = chosen.plan.describe(names)
    preset = presets.get(chosen.plan)
    if preset:
        values = ", ".join(x for x in (values, preset.describe()) if x)
    if zeroed.get(chosen.plan):
        big = ", ".join(dict.fromkeys(zeroed[chosen.plan]))
        values = ", ".join(x for x in (values, f"zeros in {big}") if x)
    if chosen.error is None:
        reason = f"ran with {values}" if values else ""
        if chosen.idle_loops:
            lines = ", ".join(_line(op) for op in chosen.idle_loops[:4])
            notes.append(f"ran only with loops that run zero times ({lines}) under every "
                         f"candidate input tried ({len(tries)})")
            reason = f"{reason or 'ran'}; loops run zero times: {lines}"
        return Outcome("ran", reason, where)
    err = chosen.error
    if isinstance(err, synth.NotMade):
        notes.append(f"not run: {err}")
        return None
    alone = _not_alone(err)
    if alone:
        notes.append(f"not run: {first_line(err).split('error: ', 1)[-1]} ({alone})")
        return None
    out = _run_outcome(err, where)
    if out.verdict == "run-failed":
        tried = f"; with {values}" if values else ""
        more = f" (the furthest of {len(tries)} candidate inputs{tried})" \
            if len(tries) > 1 else (f" (with {values})" if values else "")
        out.reason = f"on synthesised inputs: {out.reason}{more}"
    return out


def _line(op: Any) -> str:
    loc = getattr(op, "loc", None)
    line = getattr(loc, "line", None)
    return f"{op.name} at line {line}" if line else op.name


def _hopeless(err: PtoError) -> bool:
    """An error other inputs cannot cure: an op refused by name."""
    return refused_op(err) is not None


def _not_alone(err: BaseException) -> str:
    """Why a failure says the function cannot run alone (its inputs are not the cause): a
    wait for a signal that no actor of the launch ever sets (and the preset did not cure);
    else "". (A call to a function defined outside the file is refused by name: the call is
    an operation ptoisa cannot execute.)"""
    if not isinstance(err, PtoError):
        return ""
    if "no other actor of this process changes it" in err.message:
        return "alone, a wait for a signal only another rank or process sets"
    return ""


# ---- one file ------------------------------------------------------------------------------

def do_file(path: Path, rel: str, run: bool = True) -> FileResult:
    """A lit file or a sample: its modules checked, the accepted ones run on synthesised
    inputs."""
    t0 = time.monotonic()
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as e:
        res = FileResult(rel, "sample")
        res.notes.append(f"not checked: cannot read it ({e})")
        return res
    if lit.is_lit(text):
        mods, notes = lit.modules(text, path.parent)
        res = FileResult(rel, "lit", notes=list(notes))
        if not mods and not notes:
            res.notes.append("not checked: its RUN lines run no ptoas / pto-test-opt")
    else:
        res = FileResult(rel, "sample")
        mods = [lit.Module(text, "", target_of(text, rel, path), None, False, (),
                           assumed=True)]
    res.target = ",".join(sorted({m.target for m in mods}))
    # (a module that RUN lines compile with other passes runs once: passes check, not change)
    runs: dict[tuple[str, str, str | None, str | None], Outcome] = {}
    for m in mods:
        try:
            if m.option_error:
                prog, errors = None, [PtoError(f"PTOAS refuses this command line: "
                                               f"{m.option_error}")]
            else:
                prog, errors = check(m.text, str(path), m.target, m.level, m.backend,
                                     m.passes)
            out = judge(m, errors)
            if out.verdict == "accepted" and run:
                key = (m.text, m.target, m.level, m.backend)
                if key not in runs:
                    # (run as the RUN line's --pto-backend builds it: Target.with_backend)
                    runs[key] = synth_run(prog, get_target(m.target, m.backend), m.where,
                                          res.notes)
                out = runs[key]
        except Exception as e:  # noqa: BLE001 - a bug in ptoisa: a verdict, not a crash
            out = _crash(e, m.where)
        res.outcomes.append(out)
    res.seconds = time.monotonic() - t0
    return res


def blocks_of(launch: str) -> dict[str, int]:
    """Kernel name -> the block count its ``K<<<N, ...>>>`` launch uses (literal N only)."""
    return {m.group(1): int(m.group(2))
            for m in re.finditer(r"(\w+)\s*<<<\s*(\d+)\s*,", launch)}


def elems_of(shape: Any) -> int:
    return math.prod(int(d) for d in shape)

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
import zlib
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import PtoError
from ..targets import TargetLike
from . import lit
from .result import FileResult, Outcome

#: elements of a pointer argument whose views could not be sized from constants
DEFAULT_ELEMS = 1 << 20
#: most elements the suite gives one synthesised pointer argument
MAX_ELEMS = 1 << 26
_UNKNOWN_OP = re.compile(r"unknown operation '([^']+)'")
_NOT_RUN_OP = re.compile(r"operation '([^']+)' cannot be executed by ptoisa yet")


def refused_op(err: PtoError) -> str | None:
    """The op an error refuses by name (check: unknown; run: not executed yet), else None."""
    m = _UNKNOWN_OP.search(err.message) or _NOT_RUN_OP.search(err.message)
    return m.group(1) if m else None


def first_line(err: BaseException) -> str:
    text = err.render() if isinstance(err, PtoError) else f"{type(err).__name__}: {err}"
    return text.splitlines()[0] if text else type(err).__name__


def _crash(e: BaseException, where: str = "") -> Outcome:
    return Outcome("traceback", f"{type(e).__name__}: {' '.join(str(e).split())[:300]}",
                   where, detail=traceback.format_exc())


def target_of(text: str, rel: str) -> str:
    """A file without RUN lines: the module's ``pto.target_arch``, else an ``a5`` / ``a3``
    in its path (``Qwen3DecodeA5/``, ``npu/a5/``), else PTOAS's default (a3)."""
    m = re.search(r'pto\.target_arch\s*=\s*"(\w+)"', text)
    if m and m.group(1) in lit.ARCH:
        return lit.ARCH[m.group(1)]
    for part in reversed(Path(rel).parts):
        # a word of its own (npu/a5, x_a3) or a CamelCase end (Qwen3DecodeA5)
        m = re.search(r"(?:(?<![A-Za-z0-9])[aA]|(?<=[a-z0-9])A)([35])(?![0-9])", part)
        if m:
            return lit.ARCH["a" + m.group(1)]
    return lit.DEFAULT_ARCH


# ---- check ---------------------------------------------------------------------------------

def check(text: str, name: str, target: TargetLike, level: str | None
          ) -> tuple[Any, list[PtoError]]:
    """(the Program, []) when the module checks for ``target``, else (None, its errors in
    source order: PTOAS reports one per failing function)."""
    from ..interp import Program
    from ..interp.verify import diagnose
    from ..ir import verify_ssa
    from ..text import parse

    try:
        mod = parse(text, name)
        verify_ssa(mod)
    except PtoError as e:
        return None, [e]
    errors = diagnose(mod, target, level=level)
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
            # written for an older PTOAS (the frontends pin theirs): today's PTOAS refuses it
            # with the same rule, so it is not a file PTOAS accepts
            return Outcome("rejected-as-ptoas", f"{first_line(errors[0])} (PTOAS's own rule: "
                           "today's PTOAS rejects it too)", mod.where, text_matched=True)
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


def synth_args(prog: Any, name: str, target: TargetLike) -> tuple[list[Any] | None, str]:
    """Arguments for function ``name``: every pointer an array as large as its views reach
    (uniform values in [-1, 1) seeded by the argument's name, integers in [-8, 8)), integers
    16, i1 0, floats 0.5. (None, why) when an argument cannot be made up."""
    from ..interp import bridge
    from ..ir import types as T

    cf = prog.compiler(target).function(name)
    args: list[Any] = []
    for slot, t, n in cf.args:
        del slot
        if isinstance(t, T.PtrType) or (isinstance(t, T.MemRefType)
                                         and bridge.memref_space(t) == "gm"):
            arg = next(a for a in cf.op.regions[0].block.args if a.name == n)
            elems = _view_elems(cf, arg) or DEFAULT_ELEMS
            if elems > MAX_ELEMS:
                return None, f"%{n}'s views reach {elems} elements (more than {MAX_ELEMS})"
            try:
                dt = bridge.elem_dtype(t.dtype).np
            except (PtoError, KeyError, TypeError, ValueError, AttributeError):
                return None, f"%{n}: no numpy type for {t}"
            rng = np.random.default_rng(zlib.crc32(n.encode()))
            if np.issubdtype(dt, np.integer):
                args.append(rng.integers(-8, 8, elems).astype(dt))
            elif dt == np.bool_:
                args.append(np.zeros(elems, dt))
            else:
                args.append(rng.uniform(-1, 1, elems).astype(dt))
        elif isinstance(t, T.IntegerType) and t.width == 1:
            args.append(0)
        elif isinstance(t, (T.IntegerType, T.IndexType)):
            args.append(16)
        elif isinstance(t, T.FloatType):
            args.append(0.5)
        else:
            return None, f"argument %{n} of type {t} cannot be made up"
    return args, ""


def _run_outcome(e: BaseException, where: str) -> Outcome:
    if isinstance(e, PtoError):
        op = refused_op(e)
        if op is not None:
            return Outcome("unsupported", first_line(e), where, op=op)
        return Outcome("run-failed", first_line(e), where)
    return _crash(e, where)


def synth_run(prog: Any, target: TargetLike, where: str, notes: list[str]) -> Outcome:
    """Run the module's entry functions (a cube + vector pair together) once each, 1 block,
    on synthesised inputs: ``ran`` when every run completes."""
    from ..interp.pipe_ops import kernel_kind

    names = _entries(prog)
    if not names:
        notes.append("not run: no entry function")
        return Outcome("accepted", "", where)
    kinds = {n: kernel_kind(prog.module.lookup(n)) for n in names}
    cubes = [n for n, k in kinds.items() if k == "cube"]
    vectors = [n for n, k in kinds.items() if k == "vector"]
    pair = (cubes[0], vectors[0]) if len(names) == 2 and cubes and vectors else None
    try:
        if pair is not None:
            made = [synth_args(prog, n, target) for n in pair]
            for args, why in made:
                if args is None:
                    notes.append(f"not run: {why}")
                    return Outcome("accepted", "", where)
            prog.run_mixed(*pair, cube_args=tuple(made[0][0] or ()),
                           vector_args=tuple(made[1][0] or ()), target=target)
            return Outcome("ran", "", where)
        for n in names:
            args, why = synth_args(prog, n, target)
            if args is None:
                notes.append(f"not run: {why}")
                return Outcome("accepted", "", where)
            prog.run(n, *args, target=target)
    except Exception as e:  # noqa: BLE001 - every failure becomes a verdict
        out = _run_outcome(e, where)
        if out.verdict == "run-failed":
            out.reason = f"on synthesised inputs: {out.reason}"
        return out
    return Outcome("ran", "", where)


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
        mods = [lit.Module(text, "", target_of(text, rel), None, False, (), assumed=True)]
    res.target = ",".join(sorted({m.target for m in mods}))
    for m in mods:
        try:
            if m.option_error:
                prog, errors = None, [PtoError(f"PTOAS refuses this command line: "
                                               f"{m.option_error}")]
            else:
                prog, errors = check(m.text, str(path), m.target, m.level)
            out = judge(m, errors)
            if out.verdict == "accepted" and run:
                out = synth_run(prog, m.target, m.where, res.notes)
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

"""The ``ptoisa`` command line: ``check``, ``fmt`` and ``run`` for .pto programs; ``ops`` and
``conformance`` for the registry; ``cycles`` for the cycle model against hardware; ``suite``
for upstream's test trees.

User mistakes (bad text, illegal programs, bad arguments) are diagnostics on stderr and exit
status 1, never a traceback.
"""

from __future__ import annotations

import argparse
import math
import os
import re
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import PtoError
from ..hostmem import check_host_memory
from ..targets import (
    BACKENDS,
    CONFORMANCE_TARGET,
    DEFAULT_TARGET,
    TARGET_NAMES,
    TargetLike,
    get_target,
)

TARGETS = list(TARGET_NAMES)


def _read(path: str) -> tuple[str, str]:
    """(text, filename) of FILE or of stdin for ``-``."""
    if path == "-":
        return sys.stdin.read(), "<stdin>"
    try:
        return Path(path).read_text(), path
    except (OSError, UnicodeDecodeError) as e:
        raise PtoError(f"cannot read {path}: {getattr(e, 'strerror', None) or e}") from None


def _load(path: str, target: TargetLike, permissive: bool = False) -> Any:
    from ..interp import Program
    from ..ir import verify_ssa
    from ..text import parse

    text, name = _read(path)
    mod = parse(text, name)
    verify_ssa(mod)
    prog = Program(mod, target, permissive=permissive)
    prog.check()
    return prog


def _add_backend(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--pto-backend", "--backend", dest="backend", choices=BACKENDS,
                        default=None,
                        help="run as a program PTOAS builds with --pto-backend=BACKEND: vpto "
                             "follows PTOAS's a5 TileLib where it differs from pto-isa (pads "
                             "of the largest finite value ...: docs/targets.md); default and "
                             "emitc: pto-isa's behaviour")


def _with_backend(ns: argparse.Namespace) -> None:
    """``ns.target`` as the command's ``--pto-backend`` builds the program (a Target, whose
    ``str`` is the name the messages print)."""
    if getattr(ns, "backend", None) is not None:
        ns.target = get_target(ns.target, ns.backend)


def _on(ns: argparse.Namespace) -> str:
    """The target a run reports, with the backend it runs as where one was given."""
    be = getattr(ns, "backend", None)
    return f"{ns.target}" + (f" (--pto-backend={be})" if be else "")


def _cmd_check(ns: argparse.Namespace) -> int:
    _with_backend(ns)
    try:
        prog = _load(ns.file, ns.target, ns.permissive)
    except PtoError as e:
        print(e.render(), file=sys.stderr)
        return 1
    except RecursionError:
        print(f"{ns.file}: error: program nested too deeply", file=sys.stderr)
        return 1
    except Exception as e:  # a bug in ptoisa, not in the program: say so, still exit 1
        print(f"{ns.file}: error: internal error: {type(e).__name__}: {e}", file=sys.stderr)
        return 1
    n = len(prog.functions)
    print(f"{ns.file}: ok ({n} function{'s' * (n != 1)}, target {_on(ns)})")
    return 0


def _cmd_fmt(ns: argparse.Namespace) -> int:
    from ..interp.op_names import has_ssa_form
    from ..text import parse, print_module

    text, name = _read(ns.file)
    kept: list[Any] = []
    try:
        # only ops whose SSA spelling check accepts change form (taxpy's inout dst does not)
        out = print_module(parse(text, name), ns.form, has_ssa_form, kept)
    except PtoError as e:
        print(e.render(), file=sys.stderr)
        return 1
    _fmt_notes(kept, ns.form)
    _write_text(ns.output, out)
    return 0


def _write_text(output: str | None, text: str) -> None:
    """A command's text output: to the file ``-o`` names, else (or ``-o -``) to stdout."""
    if output and output != "-":
        try:
            Path(output).write_text(text)
        except OSError as e:
            raise PtoError(f"cannot write {output}: {e.strerror}") from None
    else:
        sys.stdout.write(text)


def _cmd_sync(ns: argparse.Namespace) -> int:
    from ..sanitizer.syncgen import insert_sync

    text, name = _read(ns.file)
    _write_text(ns.output, insert_sync(text, name, ns.target))
    return 0


def _fmt_notes(kept: list[Any], form: str) -> None:
    """One located note per (op, reason) that ``--form`` could not print in the form asked
    for (DPS ops under ssa/asm, SSA ops under dps; with how many more there are), on stderr:
    the output is still a program, but not all in that form."""
    groups: dict[tuple[str, str], list[Any]] = {}
    for op, why in kept:
        groups.setdefault((op.name, why), []).append(op)
    for (opname, why), ops in groups.items():
        more = f" ({len(ops) - 1} more like it)" if len(ops) > 1 else ""
        kept_form = "SSA" if ops[0].form == "ssa" else "DPS"
        print(f"{ops[0].loc}: note: {opname} printed in {kept_form} form: it {why}{more}",
              file=sys.stderr)


_ZEROS = re.compile(r"(zeros|rand):(\d{1,18}(?:x\d{1,18})*)(?::(\w+))?$")


def _arg_value(spec: str, name: str, t: Any) -> Any:
    """``--arg`` value: FILE.npy, ``zeros:SHAPE[:DTYPE]``, ``rand:SHAPE[:DTYPE]`` (uniform
    values in [-4, 4), seeded by the argument's name) or a number."""
    from .. import dtypes
    from ..interp import bridge
    from ..ir import types as T

    if isinstance(t, (T.IntegerType, T.IndexType, T.FloatType)):
        return _scalar_value(spec, name, t)
    is_ptr = isinstance(t, T.PtrType) or (isinstance(t, T.MemRefType)
                                          and bridge.memref_space(t) == "gm")
    m = _ZEROS.match(spec)
    if m:
        shape = tuple(int(d) for d in m.group(2).split("x"))
        try:
            dt = dtypes.dtype(m.group(3)) if m.group(3) else bridge.elem_dtype(t.dtype)
        except (PtoError, KeyError, TypeError, ValueError, AttributeError):
            raise PtoError(f"argument %{name}: unknown element type {_clip(m.group(3))!r} "
                           "(use f32, f16, bf16, i32, ui8, ...)") from None
        check_host_memory(math.prod(shape) * dt.np.itemsize, f"argument %{name} ({_clip(spec)})")
        try:
            if m.group(1) == "rand":
                import zlib

                from ..exporter.cli import random_array

                return random_array(shape, dt.np, zlib.crc32(name.encode()))  # seed: the name
            return np.zeros(shape, dt.np)
        except ValueError as e:  # more dimensions than numpy takes
            raise PtoError(f"argument %{name}: {_clip(spec)}: {e}") from None
    if spec.startswith("zeros:"):
        raise PtoError(f"argument %{name}: zeros takes zeros:SHAPE[:DTYPE] with SHAPE like "
                       f"32x32, got {_clip(spec)!r}")
    if spec.endswith(".npy"):
        return _load_npy(spec, name)
    if is_ptr:
        raise PtoError(f"argument %{name} ({t}) is a pointer: give FILE.npy or "
                       f"zeros:SHAPE:DTYPE, got {_clip(spec)!r}")
    raise PtoError(f"argument %{name} ({t}) cannot be given on the command line")


def _clip(text: str, n: int = 60) -> str:
    """User text quoted in a diagnostic, cut to a readable length."""
    return text if len(text) <= n else text[:n - 3] + "..."


def _scalar_value(spec: str, name: str, t: Any) -> int | float:
    """A number for a scalar argument (its range for the type is checked when binding)."""
    from ..ir import types as T

    if spec.endswith(".npy") or spec.startswith("zeros:"):
        raise PtoError(f"argument %{name} ({t}) is a scalar: give a number, "
                       f"got {_clip(spec)!r}")
    try:
        if isinstance(t, T.FloatType):
            x = float(spec)
            if math.isinf(x) and "inf" not in spec.lower():
                raise PtoError(f"argument %{name} ({t}): {_clip(spec)} overflows {t}")
            return x
        return int(spec, 0)
    except ValueError:
        kind = "a number" if isinstance(t, T.FloatType) else "an integer"
        raise PtoError(f"argument %{name} ({t}) takes {kind}, got {_clip(spec)!r}") from None


def _load_npy(spec: str, name: str) -> Any:
    """np.load, after checking the size its header declares against host memory."""
    fmt = np.lib.format
    try:
        with open(spec, "rb") as f:
            version = fmt.read_magic(f)
            header = {(1, 0): fmt.read_array_header_1_0,
                      (2, 0): fmt.read_array_header_2_0}.get(version)
            if header is not None:
                shape, _, dt = header(f)
                check_host_memory(math.prod(shape) * dt.itemsize, f"argument %{name} ({spec})")
        return np.load(spec, allow_pickle=False)
    except (OSError, ValueError, EOFError, TypeError) as e:
        why = getattr(e, "strerror", None) or str(e).splitlines()[0][:200]
        raise PtoError(f"argument %{name}: cannot read {spec}: {why}") from None


def _cmd_run(ns: argparse.Namespace) -> int:
    from ..isa.matrix.matmul import set_matmul_accumulation

    prev = set_matmul_accumulation(ns.matmul_accumulation)
    try:
        return _run(ns)
    finally:
        set_matmul_accumulation(prev)


def _pair(prog: Any, entry: str | None) -> tuple[str, str] | None:
    """``--entry CUBE+VECTOR``, or with no entry a module of one cube and one vector function
    (``pto.kernel_kind``) and nothing that calls them: run them as a mixed pair."""
    if entry:
        return tuple(entry.split("+", 1)) if "+" in entry else None  # type: ignore[return-value]
    from ..interp import entry_functions
    from ..interp.pipe_ops import kernel_kind

    names = entry_functions(prog.module)
    kinds = {n: kernel_kind(prog.module.lookup(n)) for n in names}
    cubes = [n for n, k in kinds.items() if k == "cube"]
    vectors = [n for n, k in kinds.items() if k == "vector"]
    if len(names) == 2 and len(cubes) == 1 and len(vectors) == 1:
        return cubes[0], vectors[0]
    return None


_LOCKSTEP = {"auto": "auto", "on": True, "off": False}


def _check_writable(flag: str, path: str) -> None:
    """Refuse an output file whose folder is missing before the run, not after it (when the
    run's other results would be lost with it)."""
    folder = Path(path).parent
    if not folder.is_dir():
        raise PtoError(f"{flag} {path}: no folder {folder} (create it first)")
    if not os.access(folder, os.W_OK):
        raise PtoError(f"{flag} {path}: cannot write in {folder}")


def _run(ns: argparse.Namespace) -> int:
    _with_backend(ns)
    if ns.trace:
        _check_writable("--trace", ns.trace)
    if ns.ranks is not None:  # a multi-rank launch (ptoisa.cli.ranks)
        from .ranks import run as run_ranks

        return run_ranks(ns, _arg_value, lambda: _load(ns.file, ns.target, ns.permissive))
    prog = _load(ns.file, ns.target, ns.permissive)
    prog.max_steps = ns.max_steps or 0
    pair = _pair(prog, ns.entry)
    if pair is not None:
        return _run_pair(ns, prog, pair)
    entry = (ns.entry or "").lstrip("@") or prog.entry  # @name as the program spells it
    fn = prog.compiler(ns.target).function(entry)
    names = [n for _, _, n in fn.args]
    given: dict[int, str] = {}
    for a in ns.arg or ():
        key, sep, val = a.partition("=")
        key = key.lstrip("%")
        if not sep or not key:
            raise PtoError(f"--arg takes NAME_OR_INDEX=VALUE, got {_clip(a)!r}")
        if key in names:
            i = names.index(key)
        elif key.isascii() and key.isdigit() and len(key) < 10 and int(key) < len(names):
            i = int(key)
        else:
            raise PtoError(f"@{entry} has no argument {_clip(key)!r} (arguments: "
                           + ", ".join(f"%{n}" for n in names) + ")")
        if i in given:
            raise PtoError(f"argument %{names[i]} given twice (--arg {names[i]}=...)")
        given[i] = val
    values = []
    for i, (_, t, n) in enumerate(fn.args):
        spec = given.get(i)
        if spec is None:
            raise PtoError(f"missing argument %{n} ({t}) of @{entry}: pass --arg {n}=VALUE")
        values.append(_arg_value(spec, n, t))
    shows = _shows(ns, dict(zip(names, values, strict=True)), fn.tiles
                   + [t for f in prog.compiler(ns.target).funcs.values() for t in f.tiles])
    if ns.no_values and not (ns.cycles or ns.trace or ns.cycles_timing):
        raise PtoError("--no-values times the run without values: give --cycles or --trace")
    if ns.explain and not (ns.cycles or ns.cycles_timing):
        raise PtoError("--explain prints the cost rules of a timed run: give --cycles")
    timing_only = ns.cycles_timing or ns.no_values
    if timing_only and (ns.out or ns.show):
        raise PtoError(f"{'--out' if ns.out else '--show'} needs values: a timing-only run "
                       "computes none (drop --cycles=timing / --no-values)")
    ns.cycles = ns.cycles or ns.cycles_timing
    timed = ns.cycles or ns.trace
    before = _fingerprints(ns, zip(names, values, strict=True))
    san = None
    if ns.sanitize or ns.sanitize_checks or ns.sync:
        from ..sanitizer import Sanitizer, SanitizerError

        san = Sanitizer(ns.sanitize_checks, sync=ns.sync)
    try:
        rep = prog.run(entry, *values, blocks=ns.blocks, target=ns.target,
                       lockstep=_LOCKSTEP[ns.lockstep],
                       cycles="timing" if timing_only else bool(timed),
                       sanitize=san if san is not None else False)
    except PtoError as e:
        if san is None or not isinstance(e, SanitizerError):
            raise
        print(e.report, file=sys.stderr)  # the run could not go on (a refused placement)
        return 1
    sys.stdout.flush()
    if ns.out:  # the results first: nothing written after them can lose them
        _save_all(Path(ns.out), [(n, v) for (_, _, n), v in zip(fn.args, values, strict=True)
                                 if isinstance(v, np.ndarray)])
    if timed:
        if ns.cycles:
            print(rep.summary())
            if ns.explain:
                print(rep.explain())
        if ns.trace:
            rep.write_trace(ns.trace)
            print(f"trace: {ns.trace} (open in https://ui.perfetto.dev or chrome://tracing)")
        for d in rep.deadlocks:
            print(f"{_where(d.step.loc)}: error: deadlock: {d.message}", file=sys.stderr)
    _write_shows(shows, ns.out)
    if timing_only:  # the arrays hold what they held: no results to describe
        if not ns.quiet:
            print(f"@{entry} on {_on(ns)}, {ns.blocks} block{'s' * (ns.blocks != 1)}: "
                  "timing only, no values computed (the arrays are unchanged)")
    else:
        _report(ns, f"@{entry}", zip(names, values, strict=True), before)
    if san is not None and san.report:
        print(san.report, file=sys.stderr)
        return 1
    if san is not None and not san.report.clean:  # nothing run, or ops it did not check
        print(san.report, file=sys.stderr)
    return 1 if timed and rep.deadlocks else 0


def _where(loc: Any) -> str:
    from ..cycles.report import _where as where

    return where(loc)


def _cmd_cycles(ns: argparse.Namespace) -> int:
    from ..cycles.pack import run_pack

    return 1 if run_pack(ns.pack, as_json=ns.json, explain=ns.explain) else 0


def _run_pair(ns: argparse.Namespace, prog: Any, pair: tuple[str, str]) -> int:
    """A cube function and a vector function launched together; ``--arg NAME=VALUE`` binds
    every argument of that name in either function (one array for both)."""
    fns = [prog.compiler(ns.target).function(n) for n in pair]
    given: dict[str, str] = {}
    for a in ns.arg or ():
        key, sep, val = a.partition("=")
        if not sep or not key:
            raise PtoError(f"--arg takes NAME=VALUE, got {a!r}")
        given[key.lstrip("%")] = val
    values: dict[str, Any] = {}
    args: list[list[Any]] = []
    for fn in fns:
        vals = []
        for _, t, n in fn.args:
            if n not in values:
                spec = given.get(n)
                if spec is None:
                    raise PtoError(f"missing argument %{n} ({t}) of @{fn.name}: pass "
                                   f"--arg {n}=VALUE")
                values[n] = _arg_value(spec, n, t)
            vals.append(values[n])
        args.append(vals)
    unknown = set(given) - set(values)
    if unknown:
        raise PtoError(f"@{pair[0]} and @{pair[1]} have no argument "
                       + ", ".join(sorted(unknown)))
    shows = _shows(ns, values, [])  # arrays only: each core has its own tiles
    before = _fingerprints(ns, values.items())

    def run() -> Any:
        return prog.run_mixed(pair[0], pair[1], cube_args=tuple(args[0]),
                              vector_args=tuple(args[1]), blocks=ns.blocks, target=ns.target)

    san = None
    if ns.sanitize or ns.sanitize_checks or ns.sync:
        from ..sanitizer import Sanitizer, SanitizerError, sanitized, sync_mode_of

        san = Sanitizer(ns.sanitize_checks, sync=ns.sync)
        mode = "manual" if "manual" in (sync_mode_of(prog.module, n) for n in pair) else "auto"
        try:
            sanitized(san, mode, run)
        except SanitizerError as e:  # the run could not go on (a refused placement)
            print(e.report, file=sys.stderr)
            return 1
    else:
        run()
    sys.stdout.flush()
    if ns.out:
        _save_all(Path(ns.out), [(n, v) for n, v in values.items() if isinstance(v, np.ndarray)])
    _write_shows(shows, ns.out)
    _report(ns, f"@{pair[0]} + @{pair[1]}", values.items(), before)
    if san is not None and san.report:
        print(san.report, file=sys.stderr)
        return 1
    if san is not None and not san.report.clean:  # nothing run, or ops it did not check
        print(san.report, file=sys.stderr)
    return 0


def _shows(ns: argparse.Namespace, arrays: dict[str, Any], tiles: list[Any]) -> list[Any]:
    """``--show NAME``: the arrays and tiles to draw after the run (checked before it)."""
    if not ns.show:
        return []
    from ..display import resolve

    return resolve(ns.show, arrays, tiles)


def _write_shows(items: list[Any], out: str | None) -> None:
    if items:
        from ..display import cli_show

        for p in cli_show(items, out):
            print(f"show: {p}")


def _fingerprints(ns: argparse.Namespace, pairs: Any) -> dict[str, bytes] | None:
    """Digests of the array arguments before a run whose results are reported (``_report``)."""
    if ns.out or ns.quiet:
        return None
    from .runreport import fingerprint, pointer_arrays

    return {n: fingerprint(v) for n, v in pointer_arrays(pairs)}


def _report(ns: argparse.Namespace, what: str, pairs: Any, before: dict[str, bytes] | None
            ) -> None:
    """Unless ``--quiet``: the target and block count the run used, then (without ``--out``)
    each array argument's shape, type, min / max / mean and NaN count, or (with it) where the
    arrays went."""
    if ns.quiet:
        return
    from .runreport import pointer_arrays, render

    n = ns.blocks
    title = f"{what} on {_on(ns)}, {n} block{'s' * (n != 1)}"
    arrays = pointer_arrays(pairs)
    if before is None:
        print(f"{title}: wrote " + ", ".join(f"{name}.npy" for name, _ in arrays)
              + f" to {ns.out}")
    else:
        print(render(f"{title}:", arrays, before))


def _save_all(out: Path, arrays: list[tuple[str, np.ndarray]]) -> None:
    """Write every array to OUT/NAME.npy, all or nothing: each goes to a temporary file in OUT
    first, and only when all are written do they replace earlier results (a full disk leaves
    the previous results intact and no partial file behind)."""
    done: list[tuple[Path, Path]] = []
    try:
        out.mkdir(parents=True, exist_ok=True)
        for n, v in arrays:
            fd, tmp = tempfile.mkstemp(prefix=f".{n}.", suffix=".npy.tmp", dir=out)
            done.append((Path(tmp), out / f"{n}.npy"))
            with os.fdopen(fd, "wb") as f:
                np.save(f, v, allow_pickle=False)
                f.flush()
                os.fsync(f.fileno())
        for tmp, final in done:
            os.replace(tmp, final)
    except OSError as e:
        raise PtoError(f"cannot write results to {out}: {e.strerror or e} "
                       "(earlier results there are unchanged)") from None
    finally:
        for tmp, _ in done:
            tmp.unlink(missing_ok=True)


def _cmd_conformance(ns: argparse.Namespace) -> int:
    from ..conformance import run_pack

    root = Path(ns.dir)
    if not root.exists():
        print(f"ptoisa conformance: {root}: no such directory", file=sys.stderr)
        return 2
    if ns.ranks is not None:  # the comm cases across ranks (ptoisa.concurrent.conformance_ranks)
        from ..concurrent.conformance_ranks import main as across_ranks

        return across_ranks([str(root), *(["--ranks", str(ns.ranks)] if ns.ranks else []),
                             *[a for w in ns.only or () for a in ("--only", w)]])
    summary = run_pack(root, ns.target, only=ns.only or ())
    if not summary.verdicts:  # nothing was checked: that is not a pass
        what = "no case matches --only" if ns.only else "no conformance cases (case.json)"
        print(f"ptoisa conformance: {root}: {what}", file=sys.stderr)
        return 2
    return 1 if summary.count("FAIL") else 0


def _cmd_ops(ns: argparse.Namespace) -> int:
    from .ops_table import render_matrix, support_matrix

    if ns.markdown:
        from ..reference import write

        try:
            files = write(ns.markdown)
        except OSError as e:
            raise PtoError(f"cannot write {ns.markdown}: {e.strerror or e}") from None
        print(f"wrote {len(files)} pages to {ns.markdown} (index: README.md)")
        return 0
    rows = support_matrix(ns.target, ns.dialect)
    if ns.json:
        import json

        print(json.dumps(rows, indent=1))
    else:
        print(render_matrix(rows, ns.target))
    return 0


def build_parser() -> argparse.ArgumentParser:
    from .. import __version__

    p = argparse.ArgumentParser(
        prog="ptoisa", description=f"The PTO tile ISA, executable. Default target: "
        f"{DEFAULT_TARGET} (every command but conformance, whose pack is the cpu simulator's).",
        epilog="example: ptoisa run examples/vec_add.pto --blocks 4 --arg x=rand:16384:f32 "
               "--arg y=rand:16384:f32 --arg z=zeros:16384:f32")
    p.add_argument("--version", action="version", version=f"ptoisa {__version__}")
    sub = p.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("conformance", help="run the upstream conformance pack")
    c.add_argument("dir", help="pack directory (e.g. ../shared/conformance) or one case")
    c.add_argument("--target", default=CONFORMANCE_TARGET, choices=TARGETS)
    c.add_argument("--only", nargs="*", help="instruction folders or case ids to run")
    c.add_argument("--ranks", nargs="?", type=_rank_count, const=0, metavar="N",
                   help="the communication cases across two ranks: --ranks under mpiexec -n 2, "
                        "--ranks 2 in this process")
    c.add_argument("-q", "--quiet", action="store_true",
                   help="no progress line on the terminal (the results are printed still)")
    c.set_defaults(fn=_cmd_conformance)
    o = sub.add_parser("ops", help="the instruction support matrix, from the registry")
    o.add_argument("--target", choices=TARGETS, default=None,
                   help="one target (default: all of them)")
    o.add_argument("--json", action="store_true", help="machine-readable output")
    o.add_argument("--dialect", choices=("tile", "vpto", "vmi"), default=None,
                   help="only the tile instructions, the vector micro-ops or the logical "
                        "vector ops (default: all)")
    o.add_argument("--markdown", metavar="DIR",
                   help="write the instruction reference: one page per instruction and an "
                        "index by family, DIR/README.md (as docs/reference/)")
    o.set_defaults(fn=_cmd_ops)
    k = sub.add_parser("check", help="parse, verify and compile a .pto file for a target")
    k.add_argument("file", help="FILE.pto, or - for stdin")
    k.add_argument("--target", default=DEFAULT_TARGET, choices=TARGETS)
    k.add_argument("--permissive", action="store_true",
                   help="skip the documented type checks the upstream CPU simulator does not "
                        "make (as `run --permissive`)")
    _add_backend(k)
    k.set_defaults(fn=_cmd_check)
    f = sub.add_parser("fmt", help="print a .pto file in one form")
    f.add_argument("file", help="FILE.pto, or - for stdin")
    f.add_argument("--form", default="dps", choices=["dps", "ssa", "asm"])
    f.add_argument("-o", "--output", help="output file (default: stdout)")
    f.set_defaults(fn=_cmd_fmt)
    r = sub.add_parser("run", help="run a function of a .pto file on numpy buffers")
    r.add_argument("file", help="FILE.pto, or - for stdin")
    r.add_argument("--entry", help="function to run (default: the entry function); CUBE+VECTOR "
                   "runs a cube and a vector function together (a mixed launch)")
    r.add_argument("--target", default=DEFAULT_TARGET, choices=TARGETS)
    _add_backend(r)
    r.add_argument("--blocks", type=int, default=1, help="launch blocks (default 1)")
    r.add_argument("--permissive", action="store_true",
                   help="skip the documented run-time checks the upstream CPU simulator does "
                        "not make, reproducing its results (docs/cpu_sim_differences.md)")
    r.add_argument("--arg", action="append", metavar="NAME_OR_INDEX=VALUE",
                   help="FILE.npy, zeros:SHAPE:DTYPE (e.g. zeros:32x32:f32), rand:SHAPE:DTYPE "
                        "(seeded uniform in [-4, 4)) or a number")
    r.add_argument("--out", metavar="DIR", help="write every pointer argument to DIR/NAME.npy "
                   "(without it: print each one's shape, type, min/max/mean and NaN count)")
    r.add_argument("-q", "--quiet", action="store_true",
                   help="print no summary of the results and no progress line (TPRINT output "
                        "still appears)")
    r.add_argument("--ranks", nargs="?", type=_rank_count, const=0, metavar="N",
                   help="multi-rank: --ranks under mpiexec (this process is one rank), "
                        f"--ranks N starts N ranks (1 to {MAX_RANKS}; more with "
                        "PTOISA_MAX_RANKS); {rank} {size} {next} {prev} in --arg/--out, "
                        "--arg NAME=peer:RANK:ARG binds another rank's ARG")
    r.add_argument("--show", action="append", metavar="NAME",
                   help="after the run, draw a pointer argument's array (--show z) or the last "
                        "value of a tile (--show %%t; with --blocks N, the last block's) as a "
                        "heat map NAME.png in --out DIR or the current directory (needs "
                        "matplotlib: pip install 'ptoisa[plot]')")
    r.add_argument("--max-steps", type=int, metavar="N",
                   help="stop the run with an error past N loop iterations (scf.for trips "
                        "counted when a loop starts; default 10^11)")
    r.add_argument("--matmul-accumulation", choices=["f32", "exact", "sequential"],
                   default="f32",
                   help="f32 (default: the cube's f32 accumulation, as f32 BLAS; on cpu the "
                        "_BIAS, GEMV and MX forms as the simulator), exact (f64 sum of the "
                        "exact products, rounded once per instruction) or sequential (the "
                        "CPU simulator's loop over k, one f32 fma a step, for every form)")
    r.add_argument("--sanitize", action="store_true",
                   help="find races between pipes, uninitialised reads, out-of-bounds and "
                        "placement errors (diagnostics on stderr, exit 1 when any)")
    r.add_argument("--sanitize-checks", metavar="CHECKS",
                   help="comma-separated: races,oob,uninit,placement,nan (implies --sanitize; "
                        "default all but nan)")
    r.add_argument("--sync", choices=["auto", "manual", "strict"],
                   help="how the program is synchronised (implies --sanitize): manual (flags "
                        "in the program), strict (same-pipe dependences need a barrier too), "
                        "auto (the compiler inserts them: no race reports); default manual "
                        "when the function has a set_flag/wait_flag/barrier/event op, else auto")
    r.add_argument("--cycles", action="store_true",
                   help="time the run with the cycle model: total cycles, per-pipe busy time, "
                        "the critical pipe, the costliest instructions")
    # (an option named with its '=': argparse matches the whole word before splitting it)
    r.add_argument("--explain", action="store_true",
                   help="with --cycles: under the report, the cost rule that priced each "
                        "instruction, marked [estimate: why] where no measurement on the "
                        "target is behind it")
    r.add_argument("--cycles=timing", dest="cycles_timing", action="store_true",
                   help="--cycles, timing only: no tile values are computed (shapes, addresses "
                        "and costs), for full-size what-if runs; an op that needs a value "
                        "(load_scalar, TPRINT) stops the run by name")
    r.add_argument("--no-values", dest="no_values", action="store_true",
                   help="with --cycles or --trace: timing only (as --cycles=timing)")
    r.add_argument("--trace", metavar="OUT.json",
                   help="write the pipe timeline as Chrome Trace Event JSON (Perfetto)")
    r.add_argument("--lockstep", choices=list(_LOCKSTEP), default="auto",
                   help="run the blocks in lockstep (on), one by one (off), or in lockstep "
                        "unless control flow depends on the block index (auto, the default)")
    r.set_defaults(fn=_cmd_run)
    sy = sub.add_parser("sync", help="insert the set_flag/wait_flag/barrier a .pto program "
                                     "needs (as PTOAS's InsertSync)")
    sy.add_argument("file", help="FILE.pto, or - for stdin")
    sy.add_argument("-o", "--output", help="output file (default: stdout)")
    sy.add_argument("--target", default=DEFAULT_TARGET, choices=TARGETS)
    sy.set_defaults(fn=_cmd_sync)
    y = sub.add_parser("cycles", help="compare the cycle model with hardware measurements")
    y.add_argument("pack", help="cycles pack: a directory with cycles.json (e.g. "
                                "../shared/costmodel) or the JSON file")
    y.add_argument("--json", action="store_true",
                   help="a JSON array of {case_id, predicted_cycles, hardware_cycles, "
                        "precision}")
    y.add_argument("--explain", action="store_true",
                   help="under each case, the cost rule that priced it (terms and "
                        "coefficients), marked [estimate: why] where no measurement on the "
                        "case's target is behind it")
    y.add_argument("-q", "--quiet", action="store_true",
                   help="no progress line on the terminal")
    y.set_defaults(fn=_cmd_cycles)

    from ..suite import add_parser as add_suite

    add_suite(sub)

    x = sub.add_parser(
        "export", help="trace an eager Python kernel into the .pto program PTOAS compiles",
        epilog="example: ptoisa export examples/softmax.py:softmax_kernel --blocks 6 "
               "--arg x=rand:45x64:f32 --arg out=zeros:45x64:f32 --arg n_rows=45 "
               "-o softmax_export.pto")
    x.add_argument("kernel", help="MODULE.py:FUNCTION (or package.module:FUNCTION)")
    x.add_argument("--blocks", type=int, default=1, help="launch blocks (default 1)")
    x.add_argument("--target", default=DEFAULT_TARGET, choices=TARGETS)
    x.add_argument("--arg", action="append", metavar="NAME_OR_INDEX=VALUE",
                   help="a kernel argument: FILE.npy, zeros:SHAPE[:DTYPE], rand:SHAPE[:DTYPE] "
                        "or a number (non-array arguments are baked into the program)")
    x.add_argument("--name", help="function name in the program (default: the kernel's)")
    x.add_argument("--no-verify", action="store_true",
                   help="skip running the program against the eager kernel")
    x.add_argument("-o", "--output", help="output file (default: stdout)")
    x.set_defaults(fn=_cmd_export)
    for name, sp in sub.choices.items():  # every --help ends with a command line to copy
        if name in EXAMPLES and not sp.epilog:
            sp.epilog = "example:\n  " + EXAMPLES[name]
            sp.formatter_class = argparse.RawDescriptionHelpFormatter
    return p


#: one command line per subcommand, shown at the end of its --help (from a checkout's root)
EXAMPLES = {
    "check": "ptoisa check examples/softmax.pto --target a5",
    "fmt": "ptoisa fmt examples/softmax.pto --form ssa -o softmax_ssa.pto",
    "run": "ptoisa run examples/vec_add.pto --blocks 4 --arg x=rand:16384:f32 "
           "--arg y=rand:16384:f32 --arg z=zeros:16384:f32 --out results/",
    "sync": "ptoisa sync racy.pto -o synced.pto",
    "ops": "ptoisa ops --target a5",
    "conformance": "ptoisa conformance ../shared/conformance --only TADD TROWSUM",
    "cycles": "ptoisa cycles ../shared/costmodel",
    "suite": "ptoisa suite ../shared/corpus/ptoas-main --json suite.json",
}


#: exit status of an error inside ptoisa itself (user errors exit 1, usage errors 2)
EXIT_INTERNAL = 3


def _cmd_export(ns: argparse.Namespace) -> int:
    from ..exporter.cli import cli_export

    return cli_export(ns)


#: the most ranks ``--ranks N`` starts (each a process under mpiexec, or a thread): a typo such
#: as 1000 on a laptop would start that many; PTOISA_MAX_RANKS raises it
MAX_RANKS = 64


def _rank_count(text: str) -> int:
    """``--ranks N``: a whole number from 1 to the cap (argparse reports anything else)."""
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of ranks") from None
    cap = int(os.environ.get("PTOISA_MAX_RANKS", MAX_RANKS))
    if n < 1:
        raise argparse.ArgumentTypeError(f"{n}: a launch needs at least 1 rank")
    if n > cap:
        raise argparse.ArgumentTypeError(
            f"{n} ranks is more than {cap} (each rank is a process or a thread on "
            f"{os.cpu_count()} cores); set PTOISA_MAX_RANKS to allow more")
    return n


def main(argv: list[str] | None = None) -> int:
    """Run one command. Whatever happens, the user gets one diagnostic, never a traceback:
    exit 1 for bad input, 2 for bad usage, 130 on Ctrl-C, 3 for a bug in ptoisa."""
    try:
        ns = build_parser().parse_args(argv)
        from ..progress import set_quiet

        # long work draws a progress line on a terminal (ptoisa/progress.py) unless --quiet
        prev = set_quiet(True) if getattr(ns, "quiet", False) else None
        try:
            return int(ns.fn(ns))
        finally:
            if prev is not None:
                set_quiet(prev)
    except PtoError as e:
        print(e.render() if e.loc else f"ptoisa: {e}", file=sys.stderr)
        return 1
    except BrokenPipeError:
        return 0
    except KeyboardInterrupt:
        print("ptoisa: interrupted", file=sys.stderr)
        return 130
    except MemoryError:
        print("ptoisa: error: out of host memory", file=sys.stderr)
        return 1
    except RecursionError:
        print("ptoisa: error: program nested too deeply", file=sys.stderr)
        return 1
    except Exception as e:  # noqa: BLE001 - a bug in ptoisa: one line, not a traceback
        msg = " ".join(str(e).split())[:300]
        print(f"ptoisa: internal error: {type(e).__name__}: {msg} (a bug in ptoisa: please "
              "report it with the command line; PTOISA_TRACEBACK=1 shows the traceback)",
              file=sys.stderr)
        if os.environ.get("PTOISA_TRACEBACK"):
            import traceback

            traceback.print_exc()
        return EXIT_INTERNAL


if __name__ == "__main__":
    sys.exit(main())

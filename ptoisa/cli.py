"""The ``ptoisa`` command line: ``check``, ``fmt`` and ``run`` for .pto programs; ``ops`` and
``conformance`` for the registry.

User mistakes (bad text, illegal programs, bad arguments) are diagnostics on stderr and exit
status 1, never a traceback.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path
from typing import Any

import numpy as np

from .errors import PtoError

TARGETS = ["cpu", "a2a3", "a5"]


def _read(path: str) -> tuple[str, str]:
    """(text, filename) of FILE or of stdin for ``-``."""
    if path == "-":
        return sys.stdin.read(), "<stdin>"
    try:
        return Path(path).read_text(), path
    except (OSError, UnicodeDecodeError) as e:
        raise PtoError(f"cannot read {path}: {getattr(e, 'strerror', None) or e}") from None


def _load(path: str, target: str, permissive: bool = False) -> Any:
    from .interp import Program
    from .ir import verify_ssa
    from .text import parse

    text, name = _read(path)
    mod = parse(text, name)
    verify_ssa(mod)
    prog = Program(mod, target, permissive=permissive)
    prog.check()
    return prog


def _cmd_check(ns: argparse.Namespace) -> int:
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
    print(f"{ns.file}: ok ({n} function{'s' * (n != 1)}, target {ns.target})")
    return 0


def _cmd_fmt(ns: argparse.Namespace) -> int:
    from .interp.op_names import has_ssa_form
    from .text import parse, print_module

    text, name = _read(ns.file)
    kept: list[Any] = []
    try:
        # only ops whose SSA spelling check accepts change form (taxpy's inout dst does not)
        out = print_module(parse(text, name), ns.form, has_ssa_form, kept)
    except PtoError as e:
        print(e.render(), file=sys.stderr)
        return 1
    _fmt_notes(kept, ns.form)
    if ns.output and ns.output != "-":
        try:
            Path(ns.output).write_text(out)
        except OSError as e:
            raise PtoError(f"cannot write {ns.output}: {e.strerror}") from None
    else:
        sys.stdout.write(out)
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


_ZEROS = re.compile(r"zeros:(\d+(?:x\d+)*)(?::(\w+))?$")


def _arg_value(spec: str, name: str, t: Any) -> Any:
    """``--arg`` value: FILE.npy, ``zeros:SHAPE[:DTYPE]`` or a number."""
    from . import dtypes
    from .interp import bridge
    from .ir import types as T

    is_ptr = isinstance(t, T.PtrType) or (isinstance(t, T.MemRefType)
                                          and bridge.memref_space(t) == "gm")
    m = _ZEROS.match(spec)
    if m:
        shape = tuple(int(d) for d in m.group(1).split("x"))
        try:
            dt = dtypes.dtype(m.group(2)) if m.group(2) else bridge.elem_dtype(t.dtype)
        except (PtoError, KeyError, TypeError, ValueError, AttributeError):
            raise PtoError(f"argument %{name}: unknown element type {m.group(2)!r} "
                           "(use f32, f16, bf16, i32, ui8, ...)") from None
        return np.zeros(shape, dt.np)
    if spec.endswith(".npy"):
        try:
            return np.load(spec, allow_pickle=False)
        except (OSError, ValueError) as e:
            raise PtoError(f"argument %{name}: cannot read {spec}: {e}") from None
    if is_ptr:
        raise PtoError(f"argument %{name} ({t}) is a pointer: give FILE.npy or "
                       f"zeros:SHAPE:DTYPE, got {spec!r}")
    try:
        if isinstance(t, T.FloatType):
            return float(spec)
        return int(spec, 0)
    except ValueError:
        raise PtoError(f"argument %{name} ({t}) takes a number, got {spec!r}") from None


def _cmd_run(ns: argparse.Namespace) -> int:
    from .isa.matrix import set_matmul_accumulation

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
    from .interp import entry_functions
    from .interp.pipe_ops import kernel_kind

    names = entry_functions(prog.module)
    kinds = {n: kernel_kind(prog.module.lookup(n)) for n in names}
    cubes = [n for n, k in kinds.items() if k == "cube"]
    vectors = [n for n, k in kinds.items() if k == "vector"]
    if len(names) == 2 and len(cubes) == 1 and len(vectors) == 1:
        return cubes[0], vectors[0]
    return None


def _run(ns: argparse.Namespace) -> int:
    if ns.ranks is not None:  # a multi-rank launch (ptoisa.ranks_cli)
        from .ranks_cli import run as run_ranks

        return run_ranks(ns, _arg_value, lambda: _load(ns.file, ns.target, ns.permissive))
    prog = _load(ns.file, ns.target, ns.permissive)
    pair = _pair(prog, ns.entry)
    if pair is not None:
        return _run_pair(ns, prog, pair)
    entry = ns.entry or prog.entry
    fn = prog.compiler(ns.target).function(entry)
    given: dict[str, str] = {}
    for a in ns.arg or ():
        key, sep, val = a.partition("=")
        if not sep or not key:
            raise PtoError(f"--arg takes NAME_OR_INDEX=VALUE, got {a!r}")
        given[key.lstrip("%")] = val
    names = [n for _, _, n in fn.args]
    for key in given:
        if key not in names and not (key.isdigit() and int(key) < len(names)):
            raise PtoError(f"@{entry} has no argument {key!r} (arguments: "
                           + ", ".join(f"%{n}" for n in names) + ")")
    values = []
    for i, (_, t, n) in enumerate(fn.args):
        spec = given.get(n, given.get(str(i)))
        if spec is None:
            raise PtoError(f"missing argument %{n} ({t}) of @{entry}: pass --arg {n}=VALUE")
        values.append(_arg_value(spec, n, t))
    prog.run(entry, *values, blocks=ns.blocks, target=ns.target)
    sys.stdout.flush()
    if ns.out:
        out = Path(ns.out)
        try:
            out.mkdir(parents=True, exist_ok=True)
            for (_, _, n), v in zip(fn.args, values, strict=True):
                if isinstance(v, np.ndarray):
                    np.save(out / f"{n}.npy", v, allow_pickle=False)
        except OSError as e:
            raise PtoError(f"cannot write to {out}: {e.strerror}") from None
    return 0


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
    prog.run_mixed(pair[0], pair[1], cube_args=tuple(args[0]), vector_args=tuple(args[1]),
                   blocks=ns.blocks, target=ns.target)
    sys.stdout.flush()
    if ns.out:
        out = Path(ns.out)
        try:
            out.mkdir(parents=True, exist_ok=True)
            for n, v in values.items():
                if isinstance(v, np.ndarray):
                    np.save(out / f"{n}.npy", v, allow_pickle=False)
        except OSError as e:
            raise PtoError(f"cannot write to {out}: {e.strerror}") from None
    return 0


def _cmd_conformance(ns: argparse.Namespace) -> int:
    from .conformance import run_pack

    root = Path(ns.dir)
    if not root.exists():
        print(f"ptoisa conformance: {root}: no such directory", file=sys.stderr)
        return 2
    if ns.ranks is not None:  # the comm cases across ranks (ptoisa.conformance_ranks)
        from .conformance_ranks import main as across_ranks

        return across_ranks([str(root), *(["--ranks", str(ns.ranks)] if ns.ranks else []),
                             *[a for w in ns.only or () for a in ("--only", w)]])
    summary = run_pack(root, ns.target, only=ns.only or ())
    return 1 if summary.count("FAIL") else 0


def _cmd_ops(ns: argparse.Namespace) -> int:
    from .support import render_matrix, support_matrix

    rows = support_matrix(ns.target)
    if ns.json:
        import json

        print(json.dumps(rows, indent=1))
    else:
        print(render_matrix(rows, ns.target))
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="ptoisa", description="The PTO tile ISA, executable.")
    sub = p.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("conformance", help="run the upstream conformance pack")
    c.add_argument("dir", help="pack directory (e.g. ../shared/conformance) or one case")
    c.add_argument("--target", default="cpu", choices=["cpu", "a2a3", "a5"])
    c.add_argument("--only", nargs="*", help="instruction folders or case ids to run")
    c.add_argument("--ranks", nargs="?", type=int, const=0, metavar="N",
                   help="the communication cases across two ranks: --ranks under mpiexec -n 2, "
                        "--ranks 2 in this process")
    c.set_defaults(fn=_cmd_conformance)
    o = sub.add_parser("ops", help="the instruction support matrix, from the registry")
    o.add_argument("--target", choices=["cpu", "a2a3", "a5"], default=None,
                   help="one target (default: all three)")
    o.add_argument("--json", action="store_true", help="machine-readable output")
    o.set_defaults(fn=_cmd_ops)
    k = sub.add_parser("check", help="parse, verify and compile a .pto file for a target")
    k.add_argument("file", help="FILE.pto, or - for stdin")
    k.add_argument("--target", default="a2a3", choices=TARGETS)
    k.add_argument("--permissive", action="store_true",
                   help="skip the documented type checks the upstream CPU simulator does not "
                        "make (as `run --permissive`)")
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
    r.add_argument("--target", default="a2a3", choices=TARGETS)
    r.add_argument("--blocks", type=int, default=1, help="launch blocks (default 1)")
    r.add_argument("--permissive", action="store_true",
                   help="skip the documented run-time checks the upstream CPU simulator does "
                        "not make, reproducing its results (docs/cpu_sim_differences.md)")
    r.add_argument("--arg", action="append", metavar="NAME_OR_INDEX=VALUE",
                   help="FILE.npy, zeros:SHAPE:DTYPE (e.g. zeros:32x32:f32) or a number")
    r.add_argument("--out", metavar="DIR", help="write every pointer argument to DIR/NAME.npy")
    r.add_argument("--ranks", nargs="?", type=int, const=0, metavar="N",
                   help="multi-rank: --ranks under mpiexec (this process is one rank), "
                        "--ranks N starts N ranks; {rank} {size} {next} {prev} in --arg/--out, "
                        "--arg NAME=peer:RANK:ARG binds another rank's ARG")
    r.add_argument("--matmul-accumulation", choices=["f32", "exact"], default="f32",
                   help="f32 (default: the cube's f32 accumulation, as f32 BLAS) or exact "
                        "(f64 sum of the exact products, rounded once per instruction)")
    r.set_defaults(fn=_cmd_run)
    return p


def main(argv: list[str] | None = None) -> int:
    ns = build_parser().parse_args(argv)
    try:
        return int(ns.fn(ns))
    except PtoError as e:
        print(e.render() if e.loc else f"ptoisa: {e}", file=sys.stderr)
        return 1
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())

"""A fuzz of the command line (issue 9): ``check``, ``fmt`` and ``run`` on mutated programs
and mutated argument specs, in-process through ``ptoisa.cli.main``. Whatever the input, the
command ends with exit status 0 (fine), 1 (bad input) or 2 (bad usage) and a bounded
diagnostic: never an uncaught exception, a traceback or an "internal error".

Deterministic (fixed seeds); a run that takes longer than its time slice is interrupted
(SIGALRM -> KeyboardInterrupt, which must itself end as one line with exit 130).
"""

from __future__ import annotations

import contextlib
import io
import os
import random
import re
import signal
from pathlib import Path

import numpy as np
import pytest

from ptoisa.cli import main

ROOT = Path(__file__).resolve().parents[2]
SHARED = Path(os.environ.get("PTOISA_SHARED", ROOT.parent / "shared"))
CORPUS = SHARED / "corpus" / "ptoas" / "test"

# example program -> (blocks, {argument: (shape, dtype) of an input file or a zeros: spec})
EXAMPLES: dict[str, tuple[int, dict[str, object]]] = {
    "softmax.pto": (6, {"x": ((45, 64), "f32"), "out": "zeros:45x64:f32", "n_rows": "45"}),
    "topk.pto": (4, {"x": ((4, 256), "f32"), "top_vals": "zeros:4x16:f32",
                     "top_idx": "zeros:4x16:ui32"}),
    "gemm_int8.pto": (4, {"a": ((64, 96), "f16"), "b": ((96, 64), "f16"),
                          "words": ((1, 64), "ui64"), "c": "zeros:64x64:i8"}),
}
CORPUS_FILES = {  # a few real PTOAS programs (when the corpus is there) with their arguments
    "samples/VectorAddition/vadd.pto": (2, {"arg0": ((32, 32), "f32"), "arg1": ((32, 32), "f32"),
                                            "arg2": "zeros:32x32:f32"}),
    "samples/ControlFlow/control_flow-pto-new.pto": (1, {"0": ((32, 32), "f32"),
                                                         "1": "zeros:32x32:f32"}),
    # check and fmt only (no arguments given: run stops at the first missing one)
    "basic/kernel_kind_vector_scf_while_emitc.pto": (1, {}),
    "basic/plan_memory_if_in_loop.pto": (1, {}),
    "basic/taxpy_emitc.pto": (1, {}),
}
NP = {"f32": np.float32, "f16": np.float16, "ui64": np.uint64, "ui32": np.uint32}
TOKEN = re.compile(r"\s+|%[\w.]+|@\w+|-?\d+(?:\.\d+)?(?:e[+-]?\d+)?|[A-Za-z_][\w.]*|.", re.S)
NUMBERS = ["0", "-1", "1", "7", "-4294967296", "4294967297", "99999999999999999999999",
           "65536", "1e308", "-0.0", "2147483648", "18446744073709551616"]
WORDS = ["row_major", "col_major", "none_box", "vec", "mat", "acc", "f32", "i8", "ui64", "?",
         "true", "nan", "inf", "x", "index", "pto.tadd", "scf.if", "{", "}", "(", ")", ":", "->",
         ",", "<", ">", "=", "[", "]", "\"s\"", "%c0", "%zz"]
BAD_SPECS = ["zeros:100000000x100000000:f32", "zeros:0:f32", "zeros:2x2:f32", "zeros:7",
             "zeros:3x:f32", "zeros:32x32:f99",
             "zeros:32x32:bool", "zeros:1:i1", "nope.npy", "-1", "3.5", "1e999", "0x7fffffff",
             "99999999999999999999", "", "=", "zeros", "zeros:-1:f32", "nan", "True", "é",
             "zeros:4294967296x4294967296x4294967296:f32", "zeros:" + "1x" * 70 + "1:f32",
             "zeros:4:" + "f" * 5000, "9" * 5000]
SLICE = 2.0  # seconds one command may run
# more iterations / other seeds for a longer hunt: PTOISA_FUZZ=N,SEED
_N, _SEED = (int(x) for x in os.environ.get("PTOISA_FUZZ", "0,9").split(","))
N_PROGRAMS, N_SPECS = (_N, _N) if _N else (100, 80)


def _programs() -> list[tuple[str, str, int, dict[str, object]]]:
    out = [(n, (ROOT / "examples" / n).read_text(), *spec) for n, spec in EXAMPLES.items()]
    for rel, spec in CORPUS_FILES.items():
        if (CORPUS / rel).exists():
            out.append((rel, (CORPUS / rel).read_text(), *spec))
    return out


PROGRAMS = _programs()


KEYED = re.compile(r"\b(\w+=)([\w?.-]+)|(arith\.constant )(-?[\w.]+)")


def mutate(text: str, rng: random.Random) -> str:
    """One to three token edits: delete, duplicate, swap, replace a number or a word by an
    odd one, change an attribute value, truncate; or one consistent edit (``rows=8`` or
    ``arith.constant 64`` changed everywhere, so that types still agree and the program gets
    past the parser into the verifier and the run)."""
    if rng.random() < 0.4:
        m = rng.choice(list(KEYED.finditer(text)))
        new = (m.group(1) or m.group(3)) + rng.choice(NUMBERS + WORDS[:12])
        return text.replace(m.group(0), new)
    toks = TOKEN.findall(text)
    for _ in range(rng.randint(1, 3)):
        real = [i for i, t in enumerate(toks) if not t.isspace()]
        i = rng.choice(real)
        # number and attribute edits mostly still parse: they reach the verifier and the run
        kind = rng.choices(range(7), weights=(1, 1, 1, 4, 3, 1, 1))[0]
        if kind == 0:
            del toks[i]
        elif kind == 1:
            toks.insert(i, toks[i])
        elif kind == 2:
            j = rng.choice(real)
            toks[i], toks[j] = toks[j], toks[i]
        elif kind == 3:
            nums = [k for k in real if toks[k][-1].isdigit()]
            toks[rng.choice(nums or real)] = rng.choice(NUMBERS)
        elif kind == 4:
            eqs = [k for k in real if toks[k] == "=" and k + 1 < len(toks)]
            k = rng.choice(eqs or real) + 1
            while k < len(toks) - 1 and toks[k].isspace():
                k += 1
            toks[k] = rng.choice(NUMBERS + WORDS)
        elif kind == 5:
            toks[i] = rng.choice(WORDS)
        else:
            toks = toks[:i]
            break
    return "".join(toks)


@contextlib.contextmanager
def time_slice(seconds: float):
    """Interrupt the command like Ctrl-C after ``seconds`` (a mutated loop bound can make a
    program run for hours: that is the program's business, not a crash)."""
    def on_alarm(signum, frame):
        raise KeyboardInterrupt
    old = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def cli(argv: list[str]) -> tuple[int, str]:
    err, out = io.StringIO(), io.StringIO()
    rc: int | None = None
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out), \
                time_slice(SLICE):
            try:
                rc = main(argv)
            except SystemExit as e:  # argparse: usage errors exit 2
                rc = e.code if isinstance(e.code, int) else 2
    except KeyboardInterrupt:
        if rc is None:  # main let the interrupt escape
            raise
    return rc, err.getvalue()


def check_outcome(argv: list[str], rc: int, err: str) -> None:
    what = " ".join(argv)[:300]
    assert rc in (0, 1, 2, 130), f"{what}: exit {rc}: {err[-2000:]}"
    assert "Traceback" not in err and "internal error" not in err, f"{what}:\n{err[-3000:]}"
    assert len(err) < 4000, f"{what}: {len(err)} characters on stderr"
    if rc == 130:
        assert err.strip().endswith("ptoisa: interrupted"), err[-500:]


def _inputs(tmp: Path, args: dict[str, object]) -> list[str]:
    out = []
    rng = np.random.default_rng(0)
    for name, spec in args.items():
        if isinstance(spec, tuple):
            shape, dt = spec
            path = tmp / f"in_{name}.npy"
            np.save(path, rng.integers(-4, 5, size=shape).astype(NP[dt]))
            spec = str(path)
        out += ["--arg", f"{name}={spec}"]
    return out


@pytest.mark.skipif(not hasattr(signal, "setitimer"), reason="needs SIGALRM (POSIX)")
def test_fuzz_programs(tmp_path):
    rng = random.Random(_SEED)
    src = tmp_path / "m.pto"
    for it in range(N_PROGRAMS):
        name, text, blocks, args = PROGRAMS[it % len(PROGRAMS)]
        src.write_text(mutate(text, rng))
        target = rng.choice(["cpu", "a2a3", "a5"])
        for argv in (["check", str(src), "--target", target],
                     ["fmt", str(src), "--form", rng.choice(["dps", "ssa", "asm"])],
                     ["run", str(src), "--target", target,
                      "--blocks", str(rng.choice([1, blocks, blocks + 3])),
                      "--lockstep", rng.choice(["auto", "on", "off"]),
                      *_inputs(tmp_path, args), "--out", str(tmp_path / "o")]):
            rc, err = cli(argv)
            check_outcome(argv, rc, err)


@pytest.mark.skipif(not hasattr(signal, "setitimer"), reason="needs SIGALRM (POSIX)")
def test_fuzz_argument_specs(tmp_path):
    rng = random.Random(_SEED + 1)
    wrong, small = tmp_path / "wrong.npy", tmp_path / "small.npy"
    np.save(wrong, np.zeros((3, 5, 7), np.int8))
    np.save(small, np.ones((2, 3), np.float32))  # the right dtype for most, far too small
    for it in range(N_SPECS):
        name, text, blocks, args = PROGRAMS[it % len(PROGRAMS)]
        src = tmp_path / f"p{it % len(PROGRAMS)}.pto"
        src.write_text(text)
        argv = ["run", str(src), "--target", rng.choice(["cpu", "a2a3", "a5"])]
        given = _inputs(tmp_path, args)
        pairs = [given[i:i + 2] for i in range(0, len(given), 2)]
        for _ in range(rng.randint(1, 3)):
            k = rng.randrange(6)
            if k == 0 and pairs:
                pairs.pop(rng.randrange(len(pairs)))
            elif k == 1 and pairs:
                pairs.append(rng.choice(pairs))
            elif k == 2 and pairs:
                p = rng.randrange(len(pairs))
                key = pairs[p][1].partition("=")[0]
                pairs[p] = ["--arg", f"{key}={rng.choice([*BAD_SPECS, str(wrong), str(small)])}"]
            elif k == 3:
                pairs.append(["--arg", rng.choice(["zz=1", "99=1", "=3", "noequals", "%=1", "²=1",
                                                   "9" * 5000 + "=1"])])
            elif k == 4:
                argv += ["--blocks", rng.choice(["0", "-1", "1000000000", "99999999999999",
                                                 "x", str(blocks * 3)])]
            else:
                argv += ["--entry", rng.choice(["missing", "", "@softmax", "topk"])]
        argv += [x for p in pairs for x in p]
        rc, err = cli(argv)
        check_outcome(argv, rc, err)

"""Case folders whose upstream Python writes inputs and goldens: ``tilelang_st`` testcases
(``cases.py``, ``gen_data.py`` through ``st_common.py``) and ``vpto/cases`` folders.

Upstream's scripts run in a subprocess (``sys.executable``), in a temporary directory, with a
time limit, never in this process. For a tilelang testcase a small driver of ours wraps
``st_common.save_case_data`` to record, per case, the files in the order ``gen_data.py`` gives
them (inputs, then ``golden``), and reads ``cases.py``'s shapes and ``eps``. The host code
says which kernel each case launches and on how many blocks (``main.cpp``'s case table names
a launcher; ``launch.cpp``'s launcher calls ``KERNEL<<<N, ...>>>``). Pointer arguments take the
inputs in order, then one output per golden; outputs are compared with the goldens over the
case's valid shape (its ``dst_vshape`` where it names one; the elements
``cases.select_compared_region`` picks, where it has one)
as ``st_common.result_cmp`` does: ``allclose`` at ``atol = rtol = eps``.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import OutsideArgument, PtoError
from ..targets import Target, TargetLike, get_target
from . import host, lit, work
from .result import FileResult, Outcome

#: seconds upstream's data script may take
SCRIPT_TIMEOUT = 60.0

_DRIVER = r"""
import json, os, runpy, sys
import numpy as np
case_dir = sys.argv[1]
sys.path[:0] = [case_dir, *sys.argv[2:]]
record = {}
import st_common
_save = st_common.save_case_data
def save(name, data):
    record[str(name)] = [[str(k), np.asarray(v).dtype.name, list(np.asarray(v).shape)]
                         for k, v in data.items()]
    _save(name, data)
st_common.save_case_data = save
import cases
meta = []
pick = getattr(cases, "select_compared_region", None)
for c in getattr(cases, "CASES", []):
    try:
        m = {"name": str(c["name"]), "shape": [int(d) for d in c.get("shape", ())],
             "valid_shape": [int(d) for d in c.get("valid_shape", ())],
             "eps": None if c.get("eps") is None else float(c["eps"])}
        if c.get("dst_vshape") is not None:
            # dst's valid shape, over which compare.py compares a golden of the dst tile's
            # shape (dst_shape, else shape: tpart*'s valid_shape is src0's)
            m["dst_vshape"] = [int(d) for d in c["dst_vshape"]]
            if c.get("dst_shape") is not None:
                m["dst_shape"] = [int(d) for d in c["dst_shape"]]
        if pick is not None and m["shape"]:
            # the elements the case's own compare.py compares (a DN tile's valid region is
            # not the row-major top-left corner): picked from an array of flat indices
            idx = np.arange(int(np.prod(m["shape"]))).reshape(m["shape"])
            m["compared"] = np.asarray(pick(c, idx)).reshape(-1).astype(int).tolist()
        meta.append(m)
    except Exception as e:
        meta.append({"name": str(c.get("name")), "error": repr(e)})
sys.argv = [os.path.join(case_dir, "gen_data.py")]  # (its own arguments: none)
runpy.run_path(sys.argv[0], run_name="__main__")
# a gen_data.py that writes a case's golden only on its second run, once the case has an
# output.bin (trandom's: the golden computed from the key and counter it saved first, as
# upstream's compare.py also does): run it again with an empty stand-in output
again = [c["name"] for c in meta if c.get("name") in record and not any(
    k.startswith("golden") for k, _, _ in record[c["name"]])
    and not os.path.exists(os.path.join(c["name"], "output.bin"))]
if again:
    for n in again:
        open(os.path.join(n, "output.bin"), "wb").close()
    runpy.run_path(sys.argv[0], run_name="__main__")
    for n in again:
        os.remove(os.path.join(n, "output.bin"))
for c in meta:
    # a case gen_data.py wrote with a saver of its own: its folder's files, types unknown
    n = c.get("name")
    if n and n not in record and os.path.isdir(n):
        bins = sorted(f[:-4] for f in os.listdir(n) if f.endswith(".bin"))
        record[n] = [[k, None, None] for k in bins if not k.startswith("golden")] + \
            [[k, None, None] for k in bins if k.startswith("golden")]
with open("suite_manifest.json", "w") as f:
    json.dump({"files": record, "cases": meta}, f)
"""


def _pto_files(d: Path) -> list[Path]:
    return sorted(p for p in d.iterdir() if p.is_file() and p.name.endswith(work_suffixes()))


def work_suffixes() -> tuple[str, ...]:
    return (".pto", ".pto.mlir")


def build_backend(d: Path, root: Path) -> str | None:
    """The ``--pto-backend`` a testcase folder's kernels are built with: the one the nearest
    ``run_ptoas_to_file.cmake`` above it (up to ``root``; itself or in a ``testcase/`` folder,
    where the smoke tests find it) passes to ptoas, else None (none named)."""
    top = root.resolve()
    for p in [d.resolve(), *d.resolve().parents]:
        for q in (p, p / "testcase"):
            f = q / "run_ptoas_to_file.cmake"
            if f.is_file():
                m = re.search(r"--pto-backend[= ](\w+)", f.read_text(errors="replace"))
                return m.group(1) if m else None
        if p == top:
            break
    return None


def _check_files(d: Path, root: Path) -> tuple[list[FileResult], dict[str, tuple[Any, Target,
                                                                                  FileResult]]]:
    """Each .pto file of the folder checked; function name -> (program, the target it runs
    on: the file's, as the folder's ``--pto-backend`` builds it (:func:`build_backend`), its
    file)."""
    results: list[FileResult] = []
    funcs: dict[str, tuple[Any, Target, FileResult]] = {}
    kind = "tilelang" if (d / "cases.py").is_file() else "vpto"
    backend = build_backend(d, root) if kind == "tilelang" else None
    for p in _pto_files(d):
        rel = p.relative_to(root).as_posix()
        res = FileResult(rel, kind)
        results.append(res)
        try:
            text = p.read_text()
            target = work.target_of(text, rel)
            res.target = target
            prog, errors = work.check(text, str(p), target, None, backend)
            # (no RUN line: PTOAS is taken to accept it unless its own rule refuses it)
            res.outcomes.append(work.judge(lit.Module(text, "", target, None, False, (),
                                                      assumed=True, backend=backend), errors))
            if prog is not None:
                for f in prog.functions:
                    funcs[f] = (prog, get_target(target, backend), res)
        except Exception as e:  # noqa: BLE001 - a bug in ptoisa: a verdict
            res.outcomes.append(work._crash(e))
    return results, funcs


def script_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONDONTWRITEBYTECODE"] = "1"  # never a __pycache__ in upstream's folders
    env.pop("PYTHONPATH", None)
    return env


def _needs(stderr: str) -> str | None:
    m = re.search(r"No module named '([\w.]+)'", stderr)
    if m is None:
        return None
    mod = m.group(1).split(".")[0]
    return mod.replace("_", "-")


def do_tilelang(d: Path, root: Path) -> list[FileResult]:
    t0 = time.monotonic()
    results, funcs = _check_files(d, root)
    if not funcs:
        return results
    first = next(iter(funcs.values()))[2]
    with tempfile.TemporaryDirectory(prefix="ptoisa-suite-") as tmp:
        try:
            helpers = [str(p) for p in _helper_dirs(d, root)]
            proc = subprocess.run([sys.executable, "-c", _DRIVER, str(d.resolve()), *helpers],
                                  cwd=tmp,
                                  env=script_env(), capture_output=True, text=True,
                                  timeout=SCRIPT_TIMEOUT)
        except subprocess.TimeoutExpired:
            first.notes.append(f"not run: gen_data.py ran over {SCRIPT_TIMEOUT:g} s")
            return results
        if proc.returncode != 0:
            need = _needs(proc.stderr)
            why = f"needs {need}" if need else "gen_data.py failed: " + _last(proc.stderr)
            for r in {id(x[2]): x[2] for x in funcs.values()}.values():
                r.notes.append(f"not run: {why}")
            return results
        manifest = json.loads((Path(tmp) / "suite_manifest.json").read_text())
        launches = _launches(d)
        cases = {c["name"]: c for c in manifest["cases"]}
        for name, files in manifest["files"].items():
            lr = launches.get(name)
            kernel = lr.kernel if lr is not None else _by_suffix(name, funcs)
            if kernel is None or kernel not in funcs:
                first.notes.append(f"not run: no kernel for case {name}")
                continue
            prog, target, res = funcs[kernel]
            if [o.verdict for o in res.outcomes] == ["accepted"]:
                res.outcomes.clear()  # its runs say more than its check
            res.outcomes.append(_run_case(prog, target, kernel, lr, Path(tmp) / name,
                                          files, cases.get(name, {}), res.notes))
    for r in {id(x[2]): x[2] for x in funcs.values()}.values():
        if [o.verdict for o in r.outcomes] == ["accepted"] and not r.notes:
            # (checked, but no case ran it: never a silent "accepted")
            r.notes.append("not run: " + (
                "gen_data.py saved no case through st_common.save_case_data"
                if not manifest["files"] else "no case of gen_data.py runs its kernels"))
    for r in results:
        r.seconds = (time.monotonic() - t0) / len(results)
    return results


def _helper_dirs(d: Path, root: Path) -> list[Path]:
    """The nearest folder above the testcase (up to the suite's root) that holds
    ``st_common.py``, or whose ``testcase/`` does: upstream's runner copies
    ``testcase/st_common.py`` beside each testcase's scripts (smoke tests included)."""
    for p in [d.resolve(), *d.resolve().parents]:
        for q in (p, p / "testcase"):
            if (q / "st_common.py").is_file():
                return [q]
        if p == root.resolve():
            break
    return []


def _last(stderr: str) -> str:
    lines = [x for x in stderr.strip().splitlines() if x.strip()]
    return lines[-1][:200] if lines else "no message"


def _launches(d: Path) -> dict[str, host.Launcher]:
    """Case name -> its launcher (the kernel, blocks and arguments it passes), from main.cpp's
    case table and launch.cpp's launchers."""
    try:
        main = (d / "main.cpp").read_text()
    except OSError:
        return {}
    launchers = host.launchers(d)
    table = {}
    for m in re.finditer(r'\{\s*"([^"]+)"\s*,([^{}]*)\}', host.strip_comments(main)):
        named = [w for w in re.findall(r"\w+", m.group(2)) if w in launchers]
        if named:
            table[m.group(1)] = named[0]
    out = {}
    for case, fn in table.items():
        lr = launchers[fn]
        if not lr.files:
            lr.files = host.main_files(d, lr)
        if not lr.outputs:
            lr.outputs = host.main_outputs(d, lr)
        out[case] = lr
    return out


def _by_suffix(case: str, funcs: dict[str, Any]) -> str | None:
    hits = [f for f in funcs if f.lower().endswith("_" + case.lower()) or f == case]
    return hits[0] if len(hits) == 1 else None


def _np_dtype(name: str) -> Any:
    try:
        return np.dtype(name)
    except TypeError:
        import ml_dtypes

        t = getattr(ml_dtypes, name, None)
        if t is None:
            raise PtoError(f"no numpy type {name}") from None
        return np.dtype(t)


def _direct(params: list[Any]) -> host.Launcher:
    """The launcher of a kernel called with its host's buffers and scalars as they are."""
    from ..ir import types as T

    ps = [("", a.name, isinstance(a.type, T.PtrType)) for a in params]
    return host.Launcher("", ps, "", 1,
                         [host.Buf(i, 0) if p[2] else host.Param(i) for i, p in enumerate(ps)])


class _Skip(Exception):
    """A case that cannot be run, and why."""


class _Failed(Exception):
    """The kernel failed before its inputs could be placed (the run that finds what it
    writes): its error is the case's verdict."""

    def __init__(self, error: BaseException) -> None:
        super().__init__(str(error))
        self.error = error


def _run_case(prog: Any, target: TargetLike, kernel: str, lr: host.Launcher | None,
              data: Path, files: list[list[Any]], case: dict[str, Any],
              notes: list[str]) -> Outcome:
    """One case: the kernel run on gen_data.py's inputs as the host code passes them, its
    outputs compared with the goldens."""
    where = f"case {data.name}"
    try:
        args, outs, expect, blocks = _bind(prog, target, kernel, lr, data, files, case, where)
    except _Skip as e:
        notes.append(f"not run: {where}: {e}")
        return Outcome("accepted", "", where)
    except _Failed as e:
        return work._run_outcome(e.error, where)
    try:
        prog.run(kernel, *args, blocks=blocks, target=target)
    except Exception as e:  # noqa: BLE001 - every failure becomes a verdict
        return work._run_outcome(e, where)
    eps = case.get("eps")
    if eps is None:
        notes.append(f"not compared: {where}: cases.py gives no eps")
        return Outcome("ran", "", where)
    exact = ""
    if any(f[1] is None for f in files if f[0].startswith("golden")):
        # the golden's type is the kernel's, not declared: bit for bit (an eps could hide
        # what another type would read, e.g. the indices of value-index pairs)
        eps, exact = 0, " (its type taken from the kernel: compared exactly)"
    for g, (buf, reach) in zip(expect, outs, strict=True):
        span = reach // g.itemsize
        if g.ndim == 2 and span > g.size and span % g.shape[0] == 0:
            # the kernel writes the rows of a wider view than the golden (trowargmax: an r x 8
            # dst for an r x 1 golden): each golden row is the start of a view row, as
            # upstream's compare.py reads the output
            o = np.frombuffer(buf[:span * g.itemsize].tobytes(), g.dtype).reshape(
                g.shape[0], -1)[:, :g.shape[1]]
        else:
            o = np.frombuffer(buf[:g.nbytes].tobytes(), g.dtype).reshape(g.shape)
        shape, valid = case.get("shape") or [], case.get("valid_shape") or []
        dst_valid = case.get("dst_vshape") or []
        picked = case.get("compared")
        if picked is not None and list(g.shape) == shape:
            # cases.py's select_compared_region: the elements upstream compares
            sel = np.asarray(picked, np.int64)
            g, o = g.reshape(-1)[sel], o.reshape(-1)[sel]
        elif len(dst_valid) == 2 and list(g.shape) in (shape, case.get("dst_shape")):
            # a case naming dst's valid region apart (tpart*: valid_shape is src0's) is
            # compared over it, as its compare.py does
            g, o = g[:dst_valid[0], :dst_valid[1]], o[:dst_valid[0], :dst_valid[1]]
        elif list(g.shape) == shape and len(valid) == len(shape) == 2:
            g, o = g[:valid[0], :valid[1]], o[:valid[0], :valid[1]]
        g64, o64 = g.astype(np.float64), o.astype(np.float64)
        close = np.isclose(g64, o64, atol=eps, rtol=eps, equal_nan=True)
        if not close.all():
            i = int(np.argmin(close.reshape(-1)))
            bad = int((~close).sum())
            return Outcome("mismatch", f"{bad} of {close.size} elements differ beyond eps "
                           f"{eps:g}; first at {tuple(map(int, np.unravel_index(i, g.shape)))}:"
                           f" {float(o64.reshape(-1)[i])} (golden "
                           f"{float(g64.reshape(-1)[i])}){exact}", where)
    return Outcome("matched", "", where)


def _bind(prog: Any, target: TargetLike, kernel: str, lr: host.Launcher | None, data: Path,
          files: list[list[Any]], case: dict[str, Any], where: str
          ) -> tuple[list[Any], list[tuple[np.ndarray, int]], list[np.ndarray], int]:
    """The kernel's arguments, the host buffers that take the goldens (with the bytes the
    kernel's views of each reach), the goldens and the block count. The host's buffers are
    byte arrays: a kernel pointer views one at its offset, in the kernel's element type (the
    host copies bytes, whatever its C types).
    Goldens go to the buffers the kernel writes, in the launcher's order; inputs to the
    buffers (and scalar parameters) main.cpp reads their file into, else to those the kernel
    reads, in order."""
    from ..interp import bridge
    from ..ir import types as T

    fn = prog.compiler(target).function(kernel)
    params = list(fn.op.regions[0].block.args)
    if lr is None or len(lr.args) != len(params):
        if any(not isinstance(a.type, T.PtrType) for a in params):
            raise _Skip(f"@{kernel} takes a scalar the host code does not show")
        lr = _direct(params)
    inputs = [f for f in files if not f[0].startswith("golden")]
    golds = [f for f in files if f[0].startswith("golden")]
    elem = {id(p): bridge.elem_dtype(p.type.dtype).np for p in params
            if isinstance(p.type, T.PtrType)}
    reach = {id(p): work._view_elems(fn, p) or 0 for p in params}

    def pointers(i: int) -> list[tuple[Any, host.Buf]]:
        return [(p, a) for p, a in zip(params, lr.args, strict=True)
                if isinstance(a, host.Buf) and a.param == i]

    n = len(lr.params)
    written = [any(_writes(fn.op, p) for p, _ in pointers(i)) for i in range(n)]
    if sum(written) > len(golds) and lr.outputs:
        # more buffers written than goldens (a source reused as scratch): the goldens are of
        # the buffers main.cpp writes out
        written = [w and i in lr.outputs for i, w in enumerate(written)]
    used = [any(_uses(fn.op, p) for p, _ in pointers(i))
            or any(isinstance(a, (host.Load, host.Param)) and a.param == i for a in lr.args)
            for i in range(n)]
    try:
        blobs = {k: (np.fromfile(data / f"{k}.bin", np.uint8),
                     None if dt is None else _np_dtype(dt), shape) for k, dt, shape in files}
    except (OSError, ValueError, PtoError) as e:
        raise _Skip(f"cannot read its data: {e}") from None

    def size(i: int, least: int) -> int:
        return max([least, *(a.offset + reach[id(p)] * elem[id(p)].itemsize
                             for p, a in pointers(i))])

    def arrays(bufs: list[np.ndarray]) -> list[Any]:
        out: list[Any] = []
        for p, a in zip(params, lr.args, strict=True):
            if isinstance(a, host.Buf):
                dt = elem[id(p)]
                b = bufs[a.param][a.offset:]
                out.append(b[:b.size - b.size % dt.itemsize].view(dt))
            elif isinstance(a, host.Param):
                ctype = lr.params[a.param][0]
                raw = bufs[a.param]
                v = raw[:host.itemsize(ctype)].view(host.C_TYPES.get(ctype, raw.dtype.name)) \
                    if ctype in host.C_TYPES else None
                out.append(_scalar(v, p, kernel, where))
            elif isinstance(a, host.Load):
                raw = bufs[a.param][:host.itemsize(a.ctype)]
                out.append(_scalar(raw.view(_c_dtype(a.ctype)), p, kernel, where))
            else:
                k = params.index(p)
                ctype = lr.kernel_ctypes[k] if lr.kernel_ctypes else None
                v = np.asarray([a.value]).astype(_c_dtype(ctype)) if ctype in host.C_TYPES \
                    else np.asarray([a.value])
                out.append(_scalar(v, p, kernel, where))
        return out

    if sum(written) != len(golds) or not golds:
        # a write the ops' operands do not show (a micro-op's pointer): run once on a
        # pattern and see which buffers change
        # (each buffer as large as the largest data file: what reaches it is not known yet)
        # (a second pattern when the first finds too few: a result can equal the pattern,
        # e.g. an MX matmul whose 0x3C scales make the product vanish beside a 0x3C bias)
        most = max(b[0].size for b in blobs.values())
        written = [False] * n
        for pattern in (0x3C, 0xA5):
            probe = [np.full(size(i, most), pattern, np.uint8) for i in range(n)]
            try:
                prog.run(kernel, *arrays(probe), blocks=lr.blocks, target=target)
            except Exception as e:  # noqa: BLE001 - the kernel does not run: the verdict
                raise _Failed(e) from None
            written = [w or (bool((b != pattern).any()) and lr.params[i][2])
                       for i, (w, b) in enumerate(zip(written, probe, strict=True))]
            if sum(written) >= len(golds):
                break
    takes = [i for i in range(n) if used[i] and not written[i]]
    if sum(written) != len(golds) or not golds:
        raise _Skip(f"cannot map {len(inputs)} inputs and {len(golds)} goldens onto "
                    f"@{kernel}'s {len(takes)} read and {sum(written)} written buffers")
    feed: dict[int, str] = {}
    names = {p[1]: i for i, p in enumerate(lr.params)}
    for k, _, _ in inputs:
        i = lr.files.get(k, names.get(k))
        if i is not None and i not in feed:
            feed[i] = k
    rest = [k for k, _, _ in inputs if k not in feed.values()]
    free = [i for i in takes if i not in feed]
    if len(rest) != len(free):
        raise _Skip(f"cannot map {len(inputs)} inputs and {len(golds)} goldens onto "
                    f"@{kernel}'s {len(takes)} read and {sum(written)} written buffers")
    feed.update(zip(free, rest, strict=True))
    outs_at = [i for i in range(n) if written[i]]
    bufs = []
    for i in range(n):
        least = blobs[feed[i]][0].size if i in feed else 0
        if i in outs_at:
            g = golds[outs_at.index(i)]
            least = max(least, blobs[g[0]][0].size)
        b = np.zeros(size(i, least), np.uint8)
        if i in feed:
            raw, dt, shape = blobs[feed[i]]
            pitch = _pitch(raw, dt, shape, size(i, 0))
            if pitch:  # (rows copied to a 32-byte pitch, as the host code does)
                rows = raw.reshape(shape[0], -1)
                b[:shape[0] * pitch].reshape(shape[0], pitch)[:, :rows.shape[1]] = rows
            else:
                b[:raw.size] = raw
        bufs.append(b)
    expect = []
    for (k, _, _), i in zip(golds, outs_at, strict=True):
        raw, dt, shape = blobs[k]
        if dt is None:  # (a golden gen_data.py wrote itself: the type the kernel writes)
            dt = next(elem[id(p)] for p, _ in pointers(i))
            shape = next((list(s) for s in (case.get("shape"), case.get("dst_shape"))
                          if s and int(np.prod(s)) * dt.itemsize == raw.size),
                         [raw.size // dt.itemsize])
        expect.append(np.frombuffer(raw[:raw.size - raw.size % dt.itemsize].tobytes(),
                                    dt).reshape(shape))
    try:
        return arrays(bufs), [(bufs[i], size(i, 0)) for i in outs_at], expect, lr.blocks
    except (ValueError, TypeError) as e:
        raise _Skip(f"cannot pass its data: {e}") from None


def _pitch(raw: np.ndarray, dt: Any, shape: Any, reach: int) -> int:
    """The row pitch in bytes at which the host copies a 2-D data file of rows narrower than
    32-byte multiples (tpartmax's 95x95 f32 as 95 rows of 96): where the kernel's views reach
    exactly its rows at that pitch; 0 where the file goes in as it is."""
    if dt is None or shape is None or len(shape) != 2 or raw.size != int(np.prod(shape)) * \
            dt.itemsize:
        return 0
    row = shape[1] * dt.itemsize
    pitch = -(-row // 32) * 32
    return pitch if pitch != row and reach == shape[0] * pitch else 0


def _c_dtype(ctype: str | None) -> np.dtype[Any]:
    name = host.C_TYPES.get(ctype or "", "uint8")
    return _np_dtype(name)


def _scalar(v: np.ndarray | None, p: Any, kernel: str, where: str) -> Any:
    """A host scalar (a one-element array in its C type) as kernel parameter ``p`` takes it:
    bit for bit where the sizes agree and the kinds differ (the f16 a host passes as an
    ``unsigned short``), else converted."""
    from ..interp import bridge
    from ..ir import types as T

    if v is None or v.size < 1:
        raise _Skip(f"no value for @{kernel}'s %{p.name}")
    if isinstance(p.type, T.IndexType):
        return int(v[0])
    try:
        want = np.dtype(bridge.elem_dtype(p.type).np)
    except (PtoError, KeyError, TypeError, ValueError, AttributeError):
        raise _Skip(f"@{kernel}'s %{p.name} is a {p.type}") from None
    x = v[:1]
    if x.dtype != want:
        x = x.view(want) if x.dtype.itemsize == want.itemsize and x.dtype.kind != want.kind \
            else x.astype(want)
    return x[0].item()


def _writes(func: Any, arg: Any) -> bool:
    """Does the function write through pointer ``arg``: is a view made from it (through
    any chain of views) among an op's ``outs``?"""
    derived = {id(arg)}
    for op in func.walk():  # definitions come before uses
        if op.results and any(id(v) in derived for v in op.operands) and \
                op.name in _VIEW_OPS:
            derived |= {id(r) for r in op.results}
        if any(id(v) in derived for v in op.outs):
            return True
    return False


def _uses(func: Any, arg: Any) -> bool:
    """Does any op other than a view of it take pointer ``arg`` (or a view made from it)?"""
    derived = {id(arg)}
    for op in func.walk():
        if any(id(v) in derived for v in op.operands):
            if op.name not in _VIEW_OPS:
                return True
            derived |= {id(r) for r in op.results}
    return False


#: ops whose result is a view of (or a pointer into) their first operand's memory
_VIEW_OPS = frozenset({"pto.make_tensor_view", "pto.partition_view", "pto.subview",
                       "pto.addptr", "pto.pointer_cast"})


def do_vpto(d: Path, root: Path) -> list[FileResult]:
    """A vpto case folder: its kernel checked, then run as upstream's validation script does
    (``test/vpto/scripts/run_host_vpto_validation.sh``): ``golden.py`` writes the inputs and
    goldens in a temporary directory, the kernel runs on the files ``main.cpp`` reads into
    the buffers it passes to the launcher, the buffers ``main.cpp`` writes back are written
    there, and ``compare.py`` (``COMPARE_STRICT=1``) decides: exit status 0 is matched."""
    t0 = time.monotonic()
    results, funcs = _check_files(d, root)
    runnable = [r for r in results if [o.verdict for o in r.outcomes] == ["accepted"]]
    if not funcs or len(runnable) != 1 or not (d / "golden.py").is_file() \
            or not (d / "compare.py").is_file():
        for r in runnable:
            r.notes.append("not run: the folder needs one kernel, golden.py and compare.py")
        return results
    res = runnable[0]
    prog, target, _ = next(iter(funcs.values()))
    try:
        host = vpto_host(d)
    except PtoError as e:
        res.notes.append(f"not run: {e.message}")
        return results
    if len(host.launches) == 1 and host.kernel not in funcs and len(funcs) == 1:
        host.launches = [(next(iter(funcs)), host.blocks, host.args)]
    missing = [k for k, _, _ in host.launches if k not in funcs]
    if missing:
        res.notes.append(f"not run: no kernel '{missing[0]}' in the module")
        return results
    with tempfile.TemporaryDirectory(prefix="ptoisa-suite-") as tmp:
        out = _run_vpto(d, Path(tmp), prog, target, host, res.notes)
    if out is not None:
        res.outcomes[:] = [out]
    res.seconds = time.monotonic() - t0
    return results


class VptoHost:
    """What a vpto case's host code does: the kernel its launcher calls on how many blocks,
    the device buffers ``main.cpp`` passes (bytes, the file read into it, the file it is
    written back to and how many bytes: None where it does not), and which buffer each of
    the kernel's pointer arguments is (``launch.cpp`` may pass one buffer several times)."""

    def __init__(self, kernel: str, blocks: int,
                 buffers: list[tuple[int | None, str | None, str | None, str | None]],
                 args: list[int], consts: dict[str, str], reads: dict[str, str],
                 scalars: dict[int, int] | None = None,
                 launches: list[tuple[str, int, list[int]]] | None = None) -> None:
        self.kernel = kernel
        #: every launch main.cpp makes, in order: (kernel, blocks, buffer of each argument);
        #: the first is ``kernel`` / ``blocks`` / ``args``
        self.launches = launches or [(kernel, blocks, args)]
        #: launcher parameters main.cpp passes a constant integer for (an ``int`` argument
        #: of the kernel): index -> value
        self.scalars = scalars or {}
        self.blocks = blocks
        self.buffers = buffers  # (bytes, file read, file written, its size expression)
        self.args = args
        self.consts = consts
        #: size variables ``ReadFile(path, var, ...)`` sets to the file's size (a reference)
        self.reads = reads

    def written_bytes(self, expr: str | None, tmp: Path) -> int | None:
        """The bytes ``WriteFile`` writes: its size expression, where a variable a
        ``ReadFile`` set holds that file's size."""
        if expr is None:
            return None
        consts = dict(self.consts)
        for var, path in self.reads.items():
            f = tmp / path
            if f.is_file():
                consts[var] = str(f.stat().st_size)
        return _eval_size(expr, consts)


def vpto_host(d: Path) -> VptoHost:
    """Read ``main.cpp`` / ``launch.cpp`` of a vpto case (PtoError when they do not say)."""
    try:
        main = _strip_comments((d / "main.cpp").read_text())
        launch = _strip_comments((d / "launch.cpp").read_text())
    except OSError as e:
        raise PtoError(f"cannot read the host code: {e}") from None
    launchers = _launchers(launch)
    if not launchers:
        raise PtoError("launch.cpp has no launcher calling a kernel with '<<<...>>>'")
    calls = []
    for launcher in launchers:
        found = [c for c in re.finditer(r"\b" + re.escape(launcher) + r"\s*\(([^;{}]*)\)\s*;",
                                        main)
                 if not re.search(r"\bvoid\s*$", main[max(0, c.start() - 20):c.start()])]
        if len(found) > 1 or (len(launchers) == 1 and not found):
            raise PtoError(f"main.cpp calls {launcher} {len(found)} times (once expected)")
        calls += [(c.start(), launcher, c) for c in found]
    if not calls:
        raise PtoError("main.cpp calls none of launch.cpp's launchers")
    calls.sort(key=lambda c: c[0])
    # (a C++ cast, reinterpret_cast<float *>(v1Device), passes the name inside it)
    passed_of = [[re.sub(r"\([^()]*\)", "", re.sub(
        r"\b\w+_cast\s*<[^<>]*>\s*\(\s*([\w&\[\]]+)\s*\)", r"\1", a)).strip().lstrip("&")
        for a in c.group(1).split(",") if a.strip()] for _, _, c in calls]
    passed: list[str] = []  # every name main.cpp passes, once, in order
    for names in passed_of:
        passed += [x for x in names if x not in passed]
    launches = []
    for (_, launcher, _c), names in zip(calls, passed_of, strict=True):
        kernel, n, kargs = launchers[launcher]
        if any(k >= len(names) for k in kargs):
            raise PtoError(f"main.cpp passes {len(names)} arguments to {launcher}, which uses "
                           f"parameter {max(kargs) + 1}")
        launches.append((kernel, int(n) if n.isdigit() else 1,
                         [passed.index(names[k]) for k in kargs]))
    consts = _constants(main)
    buffers = []
    scalars: dict[int, int] = {}
    for dev in passed:
        size = src = dst = dst_size = None
        item = re.fullmatch(r"(\w+)\[(\d+)\]", dev)
        if item is not None:  # device[3]: one of a table of buffers made in loops
            buffers.append(_table_buffer(main, item.group(1), int(item.group(2)), consts))
            continue
        member = _member_buffer(main, dev, consts)
        if member is not None:  # buf.device of a struct set up with buf.setup("f.bin", size)
            buffers.append(member)
            continue
        # (void **)&dev, or reinterpret_cast<void **>(&dev)
        mm = re.search(r"aclrtMalloc\s*\(\s*(?:\(void\s*\*\*\)\s*&" + re.escape(dev)
                       + r"|\w+_cast\s*<\s*void\s*\*\*\s*>\s*\(\s*&" + re.escape(dev)
                       + r"\s*\))\s*,\s*([^,]+),", main)
        if mm is not None:
            size = _eval_size(mm.group(1), consts)
        h2d = re.search(r"aclrtMemcpy\s*\(\s*" + re.escape(dev) + r"\s*,[^,]+,\s*(\w+)\s*,"
                        r"[^;]*HOST_TO_DEVICE", main)
        if h2d is not None:
            rf = re.search(r'ReadFile\s*\(\s*"([^"]+)"\s*,\s*\w+\s*,\s*' +
                           re.escape(h2d.group(1)) + r"\b", main) or re.search(
                r'readExact\s*\(\s*"([^"]+)"\s*,\s*' + re.escape(h2d.group(1)) + r"\b", main)
            src = rf.group(1) if rf else None
        d2h = re.search(r"aclrtMemcpy\s*\(\s*(\w+)\s*,[^,]+,\s*" + re.escape(dev) +
                        r"\s*,[^;]*DEVICE_TO_HOST", main)
        if d2h is not None:
            wf = re.search(r'(?:WriteFile|writeExact)\s*\(\s*"([^"]+)"\s*,\s*'
                           + re.escape(d2h.group(1)) + r"\s*,\s*([^)]+)\)", main)
            if wf is not None:
                dst, dst_size = wf.group(1), wf.group(2)
            else:
                dst, dst_size = _switch_written(main, d2h.group(1))
            if dst is None:
                dst, dst_size = _fwritten(main, d2h.group(1))
            if dst is None:  # (a compare of the golden with a file never written: refused)
                raise PtoError(f"main.cpp copies {dev} back, but ptoisa cannot tell which "
                               "file it writes it to")
        if mm is None and h2d is None and d2h is None:
            value = _eval_size(dev, consts)
            if value is not None:  # (an integer the host passes by value)
                scalars[len(buffers)] = value
        buffers.append((size, src, dst, dst_size))
    reads = {m.group(2): m.group(1)
             for m in re.finditer(r'ReadFile\s*\(\s*"([^"]+)"\s*,\s*(\w+)\s*,', main)}
    kernel, blocks, args = launches[0]
    return VptoHost(kernel, blocks, buffers, args, consts, reads, scalars, launches)


def _member_buffer(main: str, dev: str, consts: dict[str, int]) -> tuple[
        int | None, str | None, str | None, str | None] | None:
    """(bytes, file read, file written, its size expression) of ``buf.device`` where
    main.cpp sets the buffer up as ``buf.setup("f.bin", size)`` and its helpers read the file
    into it (``ReadFile(b->name, ...)``) and write it back to the same file
    (``WriteFile(b->name, ...)``; upstream's simt-vector-ldg-stg-core); None otherwise."""
    dm = re.fullmatch(r"(\w+)\.device", dev)
    if dm is None:
        return None
    sm = re.search(r"\b" + re.escape(dm.group(1)) + r'\.setup\s*\(\s*"([^"]+)"\s*,\s*([^;]+)'
                   r"\)\s*;", main)
    if sm is None:
        return None
    reads = re.search(r"ReadFile\s*\(\s*\w+->name\s*,", main) is not None
    writes = re.search(r"WriteFile\s*\(\s*\w+->name\s*,", main) is not None
    size = _eval_size(sm.group(2), consts)
    return (size, sm.group(1) if reads else None, sm.group(1) if writes else None,
            sm.group(2) if writes else None)


def _launchers(launch: str) -> dict[str, tuple[str, str, list[int]]]:
    """launch.cpp's launchers: name -> (the kernel it calls, its block count as written,
    the launcher parameter each kernel argument is)."""
    out = {}
    for fm in re.finditer(r"void\s+(Launch\w*)\s*\(([^)]*)\)\s*\{", launch):
        depth, j = 1, fm.end()
        while depth and j < len(launch):
            depth += {"{": 1, "}": -1}.get(launch[j], 0)
            j += 1
        km = re.search(r"(\w+)\s*<<<\s*(\w+)\s*,[^>]*>>>\s*\(([^;]*)\)\s*;",
                       launch[fm.end():j])
        if km is None:
            continue
        lparams = [re.findall(r"\w+", p)[-1] for p in fm.group(2).split(",") if p.strip()]
        kargs = []
        for a in km.group(3).split(","):
            a = re.sub(r"\([^()]*\)", "", a).strip()  # the casts
            if a not in lparams:
                raise PtoError(f"launch.cpp passes '{a}' to the kernel (a launcher parameter "
                               "expected)")
            kargs.append(lparams.index(a))
        out[fm.group(1)] = (km.group(1), km.group(2), kargs)
    return out


def _switch_written(main: str, host: str) -> tuple[str | None, str | None]:
    """(file, size expression) of a host buffer ``main.cpp`` writes back in a loop over file
    numbers: ``case 4: hostBuf = outHost; break;`` ... ``snprintf(path, ..., "./v%d.bin",
    index); WriteFile(path, hostBuf, size)`` (upstream's cv-mixed cases); (None, None) when
    the code does not say so."""
    case = re.search(r"case\s+(\d+)\s*:\s*(\w+)\s*=\s*" + re.escape(host) + r"\s*;", main)
    fmt = re.search(r'snprintf\s*\(\s*(\w+)\s*,[^,]+,\s*"([^"%]*)%d([^"%]*)"', main)
    if case is None or fmt is None:
        return None, None
    wf = re.search(r"WriteFile\s*\(\s*" + re.escape(fmt.group(1)) + r"\s*,\s*"
                   + re.escape(case.group(2)) + r"\s*,\s*([^)]+)\)", main)
    if wf is None:
        return None, None
    return f"{fmt.group(2)}{case.group(1)}{fmt.group(3)}", wf.group(1)


def _loops(main: str, consts: dict[str, str]) -> list[tuple[range | list[int], str]]:
    """The loops over ``i`` of the host code: (the values of ``i``, BODY) of ``for (size_t i =
    START; i < END; ++i) { BODY }`` (END a constant), and of ``for (size_t x : TABLE) {
    size_t i = x; BODY }`` (TABLE an array of integer constants)."""
    out: list[tuple[range | list[int], str]] = []

    def body(m: re.Match[str]) -> str:
        depth, j = 1, m.end()
        while depth and j < len(main):
            depth += {"{": 1, "}": -1}.get(main[j], 0)
            j += 1
        return main[m.end():j - 1]

    for m in re.finditer(r"for\s*\(\s*(?:size_t|int|unsigned)\s+i\s*=\s*(\d+)\s*;\s*i\s*<\s*(\w+)"
                         r"\s*;[^)]*\)\s*\{", main):
        n = _eval_size(m.group(2), consts)
        if n is not None:
            out.append((range(int(m.group(1)), n), body(m)))
    for m in re.finditer(r"for\s*\(\s*(?:const\s+)?(?:size_t|int|unsigned)\s+(\w+)\s*:\s*(\w+)"
                         r"\s*\)\s*\{\s*(?:size_t|int|unsigned)\s+i\s*=\s*(\w+)\s*;", main):
        items = _table(main, m.group(2), consts)
        if items is None or m.group(3) != m.group(1):
            continue
        values = [_eval_size(x, consts) for x in items]
        if all(v is not None for v in values):
            out.append(([int(v) for v in values if v is not None], body(m)))
    return out


def _table(main: str, name: str, consts: dict[str, str]) -> list[str] | None:
    """The initialiser of array ``name`` (``sizes[kBuffers] = {a, b, ...}``), its items."""
    m = re.search(r"\b" + re.escape(name) + r"\s*\[\s*\w*\s*\]\s*=\s*\{([^{}]*)\}", main)
    return None if m is None else [x.strip() for x in m.group(1).split(",") if x.strip()]


def _table_buffer(main: str, arr: str, k: int, consts: dict[str, str]
                  ) -> tuple[int | None, str | None, str | None, str | None]:
    """(bytes, file read into it, file written from it, bytes written) of ``arr[k]``, one of
    a table of device buffers made, filled and written back in loops over ``i``::

        aclrtMalloc(&device[i], sizes[i], ...);   snprintf(path, ..., "./v%zu.bin", i + 1);
        ReadFile(path, ...);                       ... WriteFile(path, host[i], sizes[i]);

    (a loop body's ``if (!kIsOutput[i]) continue;`` skips the buffers its table marks
    false); or one size for all, the paths a table of names and the write-back a loop over a
    table of buffer numbers::

        aclrtMalloc((void **)&device[i], kBytes, ...);   ReadFile(files[i], ..., host[i], ...);
        for (size_t o : kOutputIndices) { size_t i = o; ... WriteFile(files[i], host[i], ...); }
    """
    size = src = dst = None
    for values, body in _loops(main, consts):
        if k not in values:
            continue
        skip = re.search(r"if\s*\(\s*!\s*(\w+)\s*\[\s*i\s*\]\s*\)\s*continue", body)
        if skip is not None:
            flags = _table(main, skip.group(1), consts)
            if flags is None or k >= len(flags) or flags[k] != "true":
                continue
        fmt = re.search(r'snprintf\s*\([^,]+,[^,]+,\s*"([^"%]*)%z?u([^"%]*)"\s*,\s*i\s*'
                        r"(?:\+\s*(\d+))?\s*\)", body)
        path = None if fmt is None else \
            f"{fmt.group(1)}{k + int(fmt.group(3) or 0)}{fmt.group(2)}"
        # (or each call names the i-th of a table of file names: ReadFile(files[i], ...))
        named = r"path\b" if fmt is not None else r"(\w+)\s*\[\s*i\s*\]"
        paths: dict[str, str | None] = {}
        for call in ("ReadFile", "WriteFile"):
            paths[call] = path
            fm = re.search(call + r"\s*\(\s*" + named, body) if fmt is None else None
            names = _table(main, fm.group(1), consts) if fm is not None else None
            if names is not None and k < len(names) and re.fullmatch(r'"[^"]*"', names[k]):
                paths[call] = names[k][1:-1]
        mm = re.search(r"aclrtMalloc\s*\(\s*(?:\(\s*void\s*\*\*\s*\)\s*)?&\s*" + re.escape(arr)
                       + r"\s*\[\s*i\s*\]\s*,\s*(\w+)\s*(\[\s*i\s*\])?", body)
        if mm is not None and mm.group(2):
            items = _table(main, mm.group(1), consts)
            if items is not None and k < len(items):
                size = _eval_size(items[k], consts)
        elif mm is not None:  # (one size for every buffer of the table)
            size = _eval_size(mm.group(1), consts)
        if re.search(r"ReadFile\s*\(\s*" + named, body) and "HOST_TO_DEVICE" in body:
            src = paths["ReadFile"]
        if re.search(r"aclrtMemcpy\s*\([^;]*\b" + re.escape(arr) + r"\s*\[\s*i\s*\][^;]*"
                     r"DEVICE_TO_HOST", body) and re.search(r"WriteFile\s*\(\s*" + named, body):
            dst = paths["WriteFile"]
    return size, src, dst, None if dst is None or size is None else str(size)


def _fwritten(main: str, host: str) -> tuple[str | None, str | None]:
    """(file, size expression) of a host buffer ``main.cpp`` writes with stdio:
    ``f = std::fopen("./out.bin", "wb"); std::fwrite(hostBuf, 1, bytes, f)``; (None, None)
    when it does not."""
    fw = re.search(r"fwrite\s*\(\s*" + re.escape(host) + r"\s*,\s*1\s*,\s*(\w+)\s*,\s*(\w+)\s*\)",
                   main)
    if fw is None:
        return None, None
    fo = re.search(re.escape(fw.group(2)) + r'\s*=\s*(?:std::)?fopen\s*\(\s*"([^"]+)"\s*,\s*"wb"',
                   main)
    if fo is None:
        return None, None
    return fo.group(1), fw.group(1)


def _strip_comments(text: str) -> str:
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


_SIZEOF = {"float": 4, "double": 8, "half": 2, "__fp16": 2, "aclFloat16": 2, "bfloat16_t": 2,
           "char": 1,
           "int8_t": 1, "uint8_t": 1, "int16_t": 2, "uint16_t": 2, "int32_t": 4,
           "uint32_t": 4, "int64_t": 8, "uint64_t": 8, "int": 4, "unsigned": 4,
           "size_t": 8}


def _constants(text: str) -> dict[str, str]:
    """Integer names the host code defines (``constexpr size_t N = 32 * 32;``,
    ``#define N 1024``, ``size_t fileSize = elemCount * sizeof(float);``)."""
    out: dict[str, str] = {}
    for m in re.finditer(r"#define\s+(\w+)\s+([^\n]+)", text):
        out[m.group(1)] = m.group(2)
    for m in re.finditer(r"\b(?:[\w:]+\s+)+(\w+)\s*=\s*([^;{}]+);", text):
        out.setdefault(m.group(1), m.group(2))
    return out


def _eval_size(expr: str, consts: dict[str, str], depth: int = 0) -> int | None:
    """An integer expression of the host code (sizes), None when it is not one."""
    if depth > 8:
        return None
    e = re.sub(r"sizeof\s*\(\s*([\w\s]+?)\s*\)",
               lambda m: str(_SIZEOF.get(m.group(1).split()[-1], "?")), expr)
    e = re.sub(r"\(\s*(?:size_t|int|int64_t|uint64_t|uint32_t|unsigned)\s*\)", "", e)
    e = re.sub(r"(\d+)(?:[uU]?[lL]{0,2}|[lL]{1,2}[uU])\b", r"\1", e)

    def name(m: re.Match[str]) -> str:
        v = consts.get(m.group(0))
        if v is None:
            return "?"
        r = _eval_size(v, consts, depth + 1)
        return "?" if r is None else str(r)
    e = re.sub(r"[A-Za-z_]\w*", name, e)
    if not re.fullmatch(r"[\d\s+\-*/()]+", e):
        return None
    try:
        v = eval(e.replace("/", "//"), {"__builtins__": {}})  # noqa: S307 - digits and + - * / ()
    except (SyntaxError, ZeroDivisionError):
        return None
    return int(v) if isinstance(v, int) else None


def _run_vpto(d: Path, tmp: Path, prog: Any, target: TargetLike, host: VptoHost,
              notes: list[str]) -> Outcome | None:
    from ..ir import types as T

    where = d.name
    try:
        proc = subprocess.run([sys.executable, str((d / "golden.py").resolve())], cwd=tmp,
                              env=script_env(), capture_output=True, text=True,
                              timeout=SCRIPT_TIMEOUT)
    except subprocess.TimeoutExpired:
        notes.append(f"not run: golden.py ran over {SCRIPT_TIMEOUT:g} s")
        return None
    if proc.returncode != 0:
        need = _needs(proc.stderr)
        notes.append("not run: " + (f"needs {need}" if need else
                                    "golden.py failed: " + _last(proc.stderr)))
        return None
    runs = []
    for kernel, blocks, args in host.launches:
        fn = prog.compiler(target).function(kernel)
        params = list(fn.op.regions[0].block.args)
        if len(params) != len(args) or any(
                not isinstance(a.type, T.PtrType) and not (k in host.scalars and isinstance(
                    a.type, (T.IntegerType, T.IndexType))) for a, k in zip(params, args,
                                                                           strict=False)):
            notes.append(f"not run: launch.cpp passes {len(args)} arguments to @{kernel}, "
                         f"which takes {len(params)} (pointers, and integers main.cpp gives "
                         "as constants, are run)")
            return None
        runs.append((kernel, blocks, args, params))
    made = _host_buffers(tmp, host, notes)
    if made is None:
        return None
    slack = 0
    try:
        bufs = _run_on(prog, target, runs, host, made, 0)
    except OutsideArgument as e:
        # upstream kernels that reach past main.cpp's buffer (a DMA of 64 rows from a 1-row
        # input, a store of 4096 bytes to a 1024-byte output) pass on the device, whose
        # allocator gives more than it is asked for; run again with room after each buffer,
        # filled with SLACK_FILL so that a result that read it does not match by luck, and say so
        try:
            slack = SLACK
            bufs = _run_on(prog, target, runs, host, made, SLACK)
        except Exception as e2:  # noqa: BLE001 - every failure becomes a verdict
            return work._run_outcome(e2, where)
        said = f"{e.op}: {e.message}" if e.op else e.message
        notes.append(f"the kernel reaches past main.cpp's buffers ({said}); ran again with "
                     f"{SLACK} bytes of 0x{SLACK_FILL:02x} after each buffer")
    except Exception as e:  # noqa: BLE001 - every failure becomes a verdict
        return work._run_outcome(e, where)
    try:
        cmp = _compare(d, tmp, host, bufs)
    except subprocess.TimeoutExpired:
        notes.append(f"not compared: compare.py ran over {SCRIPT_TIMEOUT:g} s")
        return Outcome("ran", "", where)
    if cmp.returncode == 0:
        return Outcome("matched", "", where)
    said = [x.strip() for x in (cmp.stdout + cmp.stderr).splitlines() if x.strip()]
    why = "; ".join(x for x in said if "ERROR" in x or "FAIL" in x)[:400] or _last(
        cmp.stdout + cmp.stderr)
    why += _unwritten(d, tmp, host, bufs,
                      lambda: _run_on(prog, target, runs, host, made, slack))
    return Outcome("mismatch", f"compare.py: {why}", where)


def _compare(d: Path, tmp: Path, host: VptoHost, bufs: list[np.ndarray | None]
             ) -> subprocess.CompletedProcess[str]:
    """compare.py run on the output files main.cpp would write of ``bufs``."""
    for buf, (_size, _src, dst, expr) in zip(bufs, host.buffers, strict=True):
        if dst is not None and buf is not None:
            n = host.written_bytes(expr, tmp)
            (tmp / dst).write_bytes(buf[:n if n is not None else buf.size].tobytes())
    env = script_env()
    env["COMPARE_STRICT"] = "1"
    return subprocess.run([sys.executable, str((d / "compare.py").resolve())], cwd=tmp,
                          env=env, capture_output=True, text=True, timeout=SCRIPT_TIMEOUT)


def _unwritten(d: Path, tmp: Path, host: VptoHost, bufs: list[np.ndarray | None],
               again: Any) -> str:
    """What a mismatch owes to on-chip bytes the kernel never wrote: ptoisa's hold the poison
    pattern, a device's whatever was there. ``again`` runs the launches once more, here with
    unwritten bytes 0: if the outputs change, they copy out such bytes, and the verdict stays
    a mismatch (the golden's value of them is no semantics), the reason says so."""
    from .. import memory

    keep = memory.POISON_BYTE
    memory.POISON_BYTE = 0x00
    try:
        zero = again()
    except Exception:  # noqa: BLE001 - a diagnosis only
        return ""
    finally:
        memory.POISON_BYTE = keep
    outs = [k for k, (_s, _r, dst, _e) in enumerate(host.buffers) if dst is not None]
    if all(bufs[k] is None or zero[k] is None or np.array_equal(bufs[k], zero[k])
           for k in outs):
        return ""
    try:
        ok = _compare(d, tmp, host, zero).returncode == 0
    except subprocess.TimeoutExpired:
        return ""
    return (f" (the outputs copy out on-chip bytes the kernel never wrote, 0x{keep:02x} in "
            f"ptoisa; with them 0 compare.py {'passes' if ok else 'fails too'})")


#: bytes of room after each host buffer when a kernel reaches past it, and their value
SLACK = 1 << 20
SLACK_FILL = 0xFF


def _host_buffers(tmp: Path, host: VptoHost, notes: list[str]) -> list[bytes | None] | None:
    """What each of main.cpp's buffers holds before the launch: the bytes of the file read
    into it, zeros after them up to its size; None for a buffer the launcher does not
    pass."""
    made: list[bytes | None] = []
    # (the launcher's other parameters: the stream)
    used = {k for _, _, args in host.launches for k in args}
    for k, (size, src, _dst, _n) in enumerate(host.buffers):
        if k not in used or k in host.scalars:
            made.append(None)
            continue
        raw = b""
        if src is not None:
            try:
                raw = (tmp / src).read_bytes()
            except OSError:
                notes.append(f"not run: golden.py wrote no {src}")
                return None
        n = max(size or 0, len(raw))
        if n == 0:
            notes.append(f"not run: cannot size buffer {k} of main.cpp")
            return None
        made.append(raw + bytes(n - len(raw)))
    return made


def _run_on(prog: Any, target: TargetLike, runs: list[tuple[str, int, list[int], list[Any]]],
            host: VptoHost, made: list[bytes | None], slack: int) -> list[np.ndarray | None]:
    """The launches (kernel, blocks, buffer of each argument, its parameters) run in order on
    fresh buffers holding ``made``; each pointer argument is its buffer and ``slack`` bytes
    of SLACK_FILL after it. The buffers, without the slack."""
    from ..interp import bridge

    whole: list[np.ndarray | None] = []
    for m in made:
        if m is None:
            whole.append(None)
            continue
        buf = np.full(len(m) + slack, SLACK_FILL, np.uint8)
        buf[:len(m)] = np.frombuffer(m, np.uint8)
        whole.append(buf)
    for kernel, blocks, args, params in runs:
        arrays: list[Any] = []
        for a, k in zip(params, args, strict=True):
            if k in host.scalars:
                arrays.append(host.scalars[k])
                continue
            dt = np.dtype(bridge.elem_dtype(a.type.dtype).np)
            b = whole[k]
            assert b is not None
            arrays.append(b[:b.size // dt.itemsize * dt.itemsize].view(dt))
        prog.run(kernel, *arrays, blocks=blocks, target=target)
    return [None if b is None or m is None else b[:len(m)]
            for b, m in zip(whole, made, strict=True)]


__all__ = ["VptoHost", "do_tilelang", "do_vpto", "lit", "vpto_host"]

"""``ptoisa run FILE.pto --ranks [N]``: a ``.pto`` kernel on every rank of a multi-rank launch.

* ``mpiexec -n 4 ptoisa run k.pto --ranks --arg ...``: this process is one rank of the MPI job;
* ``ptoisa run k.pto --ranks 4 --arg ...``: start that job (``mpiexec -n 4`` of this Python,
  from the ``ptoisa[mpi]`` extra); without mpi4py, 4 ranks as threads of this process.

Each rank binds its own arguments: ``{rank}``, ``{size}``, ``{next}`` and ``{prev}`` in an
``--arg`` value or ``--out`` are replaced by its rank, the number of ranks and its neighbours
on the ring (``--arg x=x{rank}.npy --out out{rank}``). ``--arg NAME=peer:R:ARG`` binds the
pointer argument NAME to rank R's copy of argument ARG (``--arg dst=peer:{next}:y``): the
remote address the communication instructions write through. The other array arguments are
the windows (symmetric memory: argument k on every rank).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import PtoError
from ..memory import Machine


def _under_mpi() -> int | None:
    """The size of the MPI job this process was started in by a launcher, else None."""
    for k in ("PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "MPI_LOCALNRANKS"):
        v = os.environ.get(k)
        if v and v.isdigit():
            return int(v)
    return None


def _have_mpi() -> bool:
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        return False
    return True


def _argv(ns: argparse.Namespace) -> list[str]:
    """The ``run`` command line again, for each rank (``--ranks`` without a count)."""
    out = ["run", ns.file, "--target", str(ns.target), "--blocks", str(ns.blocks),
           "--ranks", "--matmul-accumulation", ns.matmul_accumulation]
    if getattr(ns, "backend", None):
        out += ["--pto-backend", ns.backend]
    if ns.entry:
        out += ["--entry", ns.entry]
    if ns.permissive:
        out.append("--permissive")
    for a in ns.arg or ():
        out += ["--arg", a]
    if ns.out:
        out += ["--out", ns.out]
    return out


def run(ns: argparse.Namespace, arg_value: Callable[[str, str, Any], Any],
        load: Callable[[], Any]) -> int:
    """The ``run`` command with ``--ranks``; ``arg_value`` and ``load`` are the CLI's own."""
    n = ns.ranks
    size = _under_mpi()
    if getattr(ns, "sanitize", False) or getattr(ns, "sanitize_checks", None) or \
            getattr(ns, "sync", None):
        return _sanitized(ns, arg_value, load, n if n and size is None else "mpi")
    if n and size is None:
        if _have_mpi():
            from ..concurrent.ranks_mpi import mpiexec

            exe = mpiexec()
            if exe is not None:
                cmd = [exe, "-n", str(n), sys.executable, "-m", "ptoisa", *_argv(ns)]
                return run_group(cmd)
        from ..concurrent.ranks import run_on_ranks

        run_on_ranks(_binder(ns, arg_value, load), ranks=n, target=ns.target)
        return 0
    if n and size is not None and n != size:
        raise PtoError(f"--ranks {n}, but this MPI job has {size} ranks")
    from ..concurrent.ranks import run_on_ranks

    run_on_ranks(_binder(ns, arg_value, load), ranks="mpi", target=ns.target)
    return 0


def run_group(cmd: list[str], grace: float = 5.0) -> int:
    """Run ``cmd`` (mpiexec) in a process group of its own and return its exit status. Its
    ranks are in that group: when this process ends early (Ctrl-C, SIGTERM, SIGHUP, an
    error) or ``cmd`` exits leaving some behind, the whole group is stopped (SIGTERM, then
    SIGKILL after ``grace`` seconds), so no rank outlives the command."""
    import signal
    import threading

    p = subprocess.Popen(cmd, start_new_session=True)

    def stop(signum: int, _frame: Any) -> None:
        raise SystemExit(128 + signum)

    old: dict[int, Any] = {}
    if threading.current_thread() is threading.main_thread():  # (handlers: main thread only)
        for sig in (signal.SIGTERM, signal.SIGHUP):
            old[sig] = signal.signal(sig, stop)
    try:
        return p.wait()
    finally:
        for sig, handler in old.items():
            signal.signal(sig, handler)
        _stop_group(p, grace)


def descendants(pid: int) -> set[int]:
    """The processes below ``pid`` (children, their children ...), read from /proc where
    there is one (else none): mpich's hydra starts its proxy and every rank in a process group
    of its own, so stopping mpiexec's group alone relies on mpiexec passing the signal on."""
    kids: dict[int, list[int]] = {}
    try:
        entries = os.listdir("/proc")
    except OSError:
        return set()
    for d in entries:
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        kids.setdefault(ppid, []).append(int(d))
    out: set[int] = set()
    todo = [pid]
    while todo:
        for k in kids.get(todo.pop(), []):
            if k not in out:
                out.add(k)
                todo.append(k)
    return out


def _stop_group(p: subprocess.Popen[Any], grace: float) -> None:
    import signal
    import time

    below = descendants(p.pid)  # (before mpiexec goes: its ranks then have another parent)
    try:
        os.killpg(p.pid, signal.SIGTERM)
    except (ProcessLookupError, PermissionError):
        p.wait()
        _kill_all(below)
        return  # nothing left in the group
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        if p.poll() is not None:  # (reaped: it no longer counts as a member)
            try:
                os.killpg(p.pid, 0)
            except (ProcessLookupError, PermissionError):
                return  # the whole group has ended
        time.sleep(0.05)
    try:
        os.killpg(p.pid, signal.SIGKILL)  # what ignored SIGTERM (or took longer)
    except (ProcessLookupError, PermissionError):
        pass
    p.wait()
    _kill_all(below)


def _kill_all(pids: set[int]) -> None:
    """SIGKILL what is left of mpiexec's proxies and ranks (each in its own group)."""
    import signal

    for q in pids:
        try:
            os.kill(q, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


def _sanitized(ns: argparse.Namespace, arg_value: Callable[[str, str, Any], Any],
               load: Callable[[], Any], ranks: Any) -> int:
    """``--sanitize`` with ``--ranks``: ``--ranks N`` runs the ranks as threads of this
    process, where races between ranks are checked too; under mpiexec each rank is checked on
    its own (docs/sanitizer.md). Findings on stderr, exit 1."""
    from ..concurrent.ranks import run_on_ranks
    from ..sanitizer import Sanitizer, sync_mode_of
    from ..sanitizer.ranks import sanitized_ranks

    if ns.ranks and _under_mpi() is not None and ns.ranks != _under_mpi():
        raise PtoError(f"--ranks {ns.ranks}, but this MPI job has {_under_mpi()} ranks")
    prog = load()
    mode = sync_mode_of(prog.module, (ns.entry or "").lstrip("@") or prog.entry)
    san = Sanitizer(ns.sanitize_checks, sync=ns.sync)
    report, _ = sanitized_ranks(san, lambda: run_on_ranks(
        _binder(ns, arg_value, load), ranks=ranks, target=ns.target), ranks, mode)
    if report:
        print(report, file=sys.stderr)
        return 1
    return 0


def _binder(ns: argparse.Namespace, arg_value: Callable[[str, str, Any], Any],
            load: Callable[[], Any]) -> Callable[[int, int], Any]:
    def bind(r: int, n: int) -> tuple[Callable[[Machine], None], list[np.ndarray], list[str]]:
        subst = {"rank": r, "size": n, "next": (r + 1) % n, "prev": (r - 1) % n}
        prog = load()  # one program per rank: its compiled steps hold the rank's tiles
        entry = ns.entry or prog.entry
        fn = prog.compiler(ns.target).function(entry)
        given: dict[str, str] = {}
        for a in ns.arg or ():
            key, sep, val = a.partition("=")
            if not sep or not key:
                raise PtoError(f"--arg takes NAME_OR_INDEX=VALUE, got {a!r}")
            try:
                given[key.lstrip("%")] = val.format(**subst)
            except (KeyError, IndexError, ValueError) as e:
                raise PtoError(f"--arg {a}: unknown placeholder {e} (use {{rank}}, {{size}}, "
                               "{next}, {prev})") from None
        names = [nm for _, _, nm in fn.args]
        values: list[Any] = []
        peers: dict[int, tuple[int, int]] = {}
        for i, (_, t, nm) in enumerate(fn.args):
            spec = given.get(nm, given.get(str(i)))
            if spec is None:
                raise PtoError(f"missing argument %{nm} ({t}) of @{entry}: pass --arg "
                               f"{nm}=VALUE")
            if spec.startswith("peer:"):
                _, rank_s, other = (spec.split(":", 2) + ["", ""])[:3]
                if not rank_s.lstrip("-").isdigit() or other.lstrip("%") not in names:
                    raise PtoError(f"argument %{nm}: peer:RANK:ARG names a rank and another "
                                   f"argument (arguments: {', '.join(names)}), got {spec!r}")
                peers[i] = (int(rank_s), names.index(other.lstrip("%")))
                values.append(None)
            else:
                values.append(arg_value(spec, nm, t))
        for i, (_, j) in peers.items():
            if not isinstance(values[j], np.ndarray):
                raise PtoError(f"argument %{names[i]}: %{names[j]} is not an array")
        wins = [k for k, v in enumerate(values) if isinstance(v, np.ndarray)]

        def body(m: Machine) -> None:
            from ..concurrent.ranks import remote_array

            for i, (rank, j) in peers.items():
                values[i] = remote_array(values[j], rank)
            prog.run(entry, *values, blocks=ns.blocks, target=ns.target, machine=m)
            sys.stdout.flush()

        def after() -> None:  # every rank is done: nothing writes this rank's windows now
            if ns.out:
                out = Path(ns.out.format(**subst))
                try:
                    out.mkdir(parents=True, exist_ok=True)
                    for k in wins:
                        np.save(out / f"{names[k]}.npy", values[k], allow_pickle=False)
                except OSError as e:
                    raise PtoError(f"cannot write to {out}: {e.strerror}") from None

        body.after = after  # type: ignore[attr-defined]
        return body, [values[k] for k in wins], [names[k] for k in wins]

    return bind

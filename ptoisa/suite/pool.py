"""Worker processes with a time limit per task: a task that runs over it has its worker
killed (and replaced) and gets a ``timeout`` verdict; the others go on."""

from __future__ import annotations

import multiprocessing as mp
import os
import queue
import time
from collections.abc import Callable, Iterator
from typing import Any


def _serve(fn: Callable[[Any], Any], tasks: Any, results: Any) -> None:
    import sys

    sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - what the programs print (TPRINT)
    while True:
        item = tasks.get()
        if item is None:
            return
        i, task = item
        results.put((i, "start", os.getpid()))
        try:
            out = fn(task)
        except BaseException as e:  # noqa: BLE001 - fn reports its own errors; this is a last net
            out = e
        results.put((i, "done", out))


def run_all(fn: Callable[[Any], Any], tasks: list[Any], jobs: int, timeout: float,
            on_timeout: Callable[[Any], Any]) -> Iterator[tuple[int, Any]]:
    """(index, fn(task)) as tasks finish, over ``jobs`` processes (forked: ``fn`` must be a
    module-level function); a task over ``timeout`` seconds yields ``on_timeout(task)``."""
    ctx = mp.get_context("fork")
    results: Any = ctx.Queue()
    todo: Any = ctx.Queue()
    for item in enumerate(tasks):
        todo.put(item)
    workers: dict[int, Any] = {}  # pid -> process
    running: dict[int, tuple[int, float]] = {}  # task index -> (pid, start)
    left = len(tasks)

    def spawn() -> None:
        p = ctx.Process(target=_serve, args=(fn, todo, results), daemon=True)
        p.start()
        workers[p.pid] = p

    for _ in range(max(1, min(jobs, len(tasks)))):
        spawn()
    pid_of_task: dict[int, int] = {}
    try:
        while left:
            try:
                i, what, out = results.get(timeout=0.2)
            except queue.Empty:
                i = -1
            if i >= 0 and what == "start":
                running[i] = (out, time.monotonic())
                pid_of_task[i] = out
            elif i >= 0:
                running.pop(i, None)
                left -= 1
                yield i, out
            now = time.monotonic()
            for j, (_, t0) in list(running.items()):
                if now - t0 > timeout:
                    pid = pid_of_task.get(j)
                    p = workers.pop(pid, None) if pid else None
                    if p is None:
                        continue
                    p.kill()
                    p.join()
                    running.pop(j)
                    left -= 1
                    yield j, on_timeout(tasks[j])
                    spawn()
            for pid, p in list(workers.items()):  # a worker that died (killed by the OS)
                if not p.is_alive() and left and p.exitcode not in (0, None):
                    workers.pop(pid)
                    for j, owner in list(pid_of_task.items()):
                        if owner == pid and j in running:
                            running.pop(j)
                            left -= 1
                            yield j, on_timeout(tasks[j])
                    spawn()
    finally:
        for _ in workers:
            todo.put(None)
        for p in workers.values():
            p.join(timeout=1)
            if p.is_alive():
                p.kill()
                p.join()


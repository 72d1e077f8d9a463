"""One door: every instruction passes ``Instr.run``, so an observer sees the same instruction
stream whether a kernel runs eagerly or as its ``.pto`` program.

Each example kernel that ships both forms runs both ways under ``with observing(recorder):``;
the streams (per core, for the mixed kernel) must be equal, placement (TASSIGN, which a
``.pto`` program writes as ``alloc_tile addr = ...``) included.
"""

from __future__ import annotations

import contextlib
import importlib
import io
import sys
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from ptoisa.observe import observing

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def _module(name: str) -> Any:
    sys.path.insert(0, str(EXAMPLES))
    try:
        return importlib.import_module(name)
    finally:
        sys.path.remove(str(EXAMPLES))


def _streams(run: Callable[[], Any]) -> dict[Any, list[str]]:
    """The instructions each core ran, in order (one key outside mixed launches)."""
    seen: dict[Any, list[str]] = defaultdict(list)

    def record(rec: Any) -> None:
        core = rec.machine.core
        seen[None if core is None else (core[0], core[2] if len(core) > 2 else None)].append(
            rec.ins.name)

    with observing(record), contextlib.redirect_stdout(io.StringIO()):
        run()
    return dict(seen)


def _inputs(name: str, mod: Any) -> tuple[Any, ...]:
    rng = np.random.default_rng(0)
    return {
        "vec_add": lambda: mod.make_inputs(4),
        "softmax": lambda: (rng.standard_normal((40, 64)).astype(np.float32),),
        "gemm_int8": lambda: mod.make_inputs()[:3],
        "ragged_rowsum": lambda: (mod.make_input(),),
        "topk": lambda: (mod.make_input(4),),
        "mixed_attention": lambda: mod.make_inputs(2),
    }[name]()


@pytest.mark.parametrize("name", ["vec_add", "softmax", "gemm_int8", "ragged_rowsum", "topk",
                                  "mixed_attention"])
def test_eager_and_pto_are_observed_alike(name: str) -> None:
    mod = _module(name)
    args = _inputs(name, mod)
    eager = _streams(lambda: mod.run_eager(*args))
    from_pto = _streams(lambda: mod.run_pto(*args))
    if name == "mixed_attention":
        # its .pto cube function issues both loads before both moves, the eager one
        # alternates them: the same instructions per core, in the order each was written
        eager = {k: sorted(v) for k, v in eager.items()}
        from_pto = {k: sorted(v) for k, v in from_pto.items()}
    assert eager == from_pto
    assert sum(map(len, eager.values())) > 0


def test_flash_softmax_eager_and_pto_are_observed_alike() -> None:
    mod = _module("flash_softmax")
    for double in (False, True):
        eager = _streams(lambda d=double: mod.run(mod.PTO_NKV, d))
        from_pto = _streams(lambda d=double: mod.run(mod.PTO_NKV, d, use_pto=True))
        assert eager == from_pto


def test_vec_add_from_pto_shows_its_placement() -> None:
    mod = _module("vec_add")
    seen = _streams(lambda: mod.run_pto(*mod.make_inputs(2)))
    assert seen == {None: ["TASSIGN"] * 3 + ["TLOAD", "TLOAD", "TADD", "TSTORE"]}

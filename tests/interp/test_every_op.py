"""Every op name ``check`` accepts is executed, checked, or refused by name: never a no-op.

For each name ``check`` knows (the compiler's handlers, the registry and its PTOAS spellings,
the PTOAS and MLIR ops listed in ``interp/op_names.py``), a program holding that op in its
generic spelling, without operands, is loaded and run. Each must end one of four ways:

* ``check`` rejects it with a located error (the op needs operands, attributes, a region);
* the run raises an error that names it (an op ptoisa does not execute yet);
* it runs, and the name is one ptoisa executes: a compiler handler or a registry entry;
* it runs, and the name is in ``compiler.NO_EFFECT`` with the reason it changes nothing.

A name that runs silently without being any of these would be a silent skip: the test fails.
"""

from __future__ import annotations

import pytest

import ptoisa as pto
from ptoisa.errors import ExecutionError, PtoError, VerifyError
from ptoisa.interp import bridge, op_names
from ptoisa.interp.compiler import _HANDLERS, NO_EFFECT

NAMES = sorted(op_names._all_known())


def _program(name: str) -> str:
    return f'module {{\n  func.func @f() {{\n    "{name}"() : () -> ()\n    return\n  }}\n}}\n'


def test_the_walk_covers_what_the_corpus_needs():
    # the names that were silently skipped before: section bodies, the flag ops
    for n in ("pto.section.cube", "pto.section.vector", "pto.section.simt", "pto.get_buf",
              "pto.set_ffts", "pto.tadd", "scf.for", "memref.load", "pto.load_scalar"):
        assert n in NAMES


@pytest.mark.parametrize("name", NAMES)
def test_op_is_executed_checked_or_refused(name):
    try:
        prog = pto.load(_program(name), filename="op.pto")
    except VerifyError as e:
        assert e.loc is not None and e.loc.line == 3, f"{name}: unlocated: {e}"
        return  # checked
    try:
        prog.run("f")
    except ExecutionError as e:
        assert name in str(e), f"{name}: refused without naming the op: {e}"
        return  # refused by name
    except PtoError as e:
        assert e.loc is not None or e.op is not None, f"{name}: error names nothing: {e}"
        return  # refused: the op cannot run like this
    if name in NO_EFFECT:
        assert len(NO_EFFECT[name]) > 20  # a reason, not a placeholder
        return
    executed = name in _HANDLERS or bridge.instr_of(name) is not None
    assert executed, f"{name} ran without being executed, checked or refused: a silent skip"


def test_no_effect_names_are_exact():
    # prefixes swallowed future ops of a namespace (pto.section.* bodies were skipped that way)
    for n in NO_EFFECT:
        assert n.count(".") >= 1 and not n.endswith("."), n

"""Every instruction lives in the module of its family: ``ptoisa/isa/<family>/`` (or
``<family>.py``), so the family ``ptoisa ops`` shows is where its code is."""

from __future__ import annotations

import inspect

import pytest

from ptoisa.isa.registry import REGISTRY, family_of_module, instr


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_family_is_the_module(name: str) -> None:
    ins = REGISTRY[name]
    module = inspect.getmodule(ins.impl)
    assert module is not None
    assert family_of_module(module.__name__) == ins.family


def test_family_of_module() -> None:
    assert family_of_module("ptoisa.isa.tile_scalar.scalar") == "tile-scalar"
    assert family_of_module("ptoisa.isa.comm") == "comm"
    assert family_of_module("tests.isa.x") is None


def test_a_family_that_contradicts_the_module_is_refused() -> None:
    def impl(m: object) -> None:
        """nothing"""

    impl.__module__ = "ptoisa.isa.reduce.rowsum"
    with pytest.raises(RuntimeError, match="says family 'layout' but is declared in "
                                           "ptoisa.isa.reduce.rowsum"):
        instr("TNOTHING", family="layout", pipe=REGISTRY["TADD"].pipe, operands=())(impl)
    assert "TNOTHING" not in REGISTRY

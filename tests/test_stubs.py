"""The typed stub ptoisa/__init__.pyi is generated from the registry and kept current."""

from __future__ import annotations

import inspect
import types

import numpy as np
import pytest

import ptoisa as pto
from ptoisa import stubgen


def test_stub_is_current() -> None:
    assert stubgen.STUB.read_text() == stubgen.render(), \
        "ptoisa/__init__.pyi is stale: run python -m ptoisa.stubgen"


@pytest.fixture(scope="module")
def stub_module() -> types.ModuleType:
    """Execute the stub as a module of the package: every annotation and default must
    resolve (a name missing from its imports fails here)."""
    mod = types.ModuleType("ptoisa._stub_under_test")
    mod.__package__ = "ptoisa"
    exec(compile(stubgen.STUB.read_text(), str(stubgen.STUB), "exec"), mod.__dict__)
    return mod


def test_every_public_name_is_in_the_stub(stub_module: types.ModuleType) -> None:
    missing = [n for n in pto.__all__ if not hasattr(stub_module, n)]
    assert missing == []


@pytest.mark.parametrize("name", sorted(pto.REGISTRY))
def test_stub_signature_matches_the_registry(stub_module: types.ModuleType, name: str) -> None:
    ins = pto.REGISTRY[name]
    got = inspect.signature(getattr(stub_module, name))
    want = inspect.signature(ins)  # the signature the Instr reports at run time
    assert [(p.name, p.kind, p.default) for p in got.parameters.values()] == \
        [(p.name, p.kind, p.default) for p in want.parameters.values()]
    # operands in C++ order, dst first; then the events; then the template parameters
    names = [p.name for p in got.parameters.values()]
    assert names[:len(ins.operands)] == [o.name for o in ins.operands]
    assert names[len(ins.operands) + 1:] == [p.name for p in ins.params]
    assert (getattr(stub_module, name).__doc__ or "").strip()


def test_signature_shows_in_help() -> None:
    sig = str(inspect.signature(pto.TROWSUM))
    assert sig.startswith("(dst: 'Tile', src: 'Tile', tmp: 'Tile', *events: 'Event')")


def test_call_following_the_signature_runs() -> None:
    """Binding through the reported signature and calling the intrinsic agree: operands by
    position or keyword, a trailing event, template parameters as keywords."""
    a = (np.arange(64, dtype=np.float32).reshape(8, 8) - 31.5) * 0.5
    src = pto.Tile(pto.TileType.Vec, np.float32, 8, 8)
    dst = pto.Tile(pto.TileType.Vec, np.int32, 8, 8)
    with pto.target("cpu"):
        src.load_numpy(a)
        ev = pto.TMOV(src, src)
        ba = inspect.signature(pto.TCVT).bind(dst, src, None, pto.RoundMode.CAST_FLOOR, None, ev)
        pto.TCVT(*ba.args, **ba.kwargs)
        np.testing.assert_array_equal(dst.numpy(), np.floor(a).astype(np.int32))
        pto.TCVT(dst, src, mode=pto.RoundMode.CAST_CEIL)
        np.testing.assert_array_equal(dst.numpy(), np.ceil(a).astype(np.int32))

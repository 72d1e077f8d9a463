"""The one dispatch point: every instruction, eager or from a .pto program, passes
Instr.run, where observers of the machine see it (with its location) before it runs."""

from __future__ import annotations

import numpy as np

import ptoisa as pto
from ptoisa import load
from ptoisa.isa.registry import InstrRecord

T16 = ("!pto.tile_buf<loc=vec, dtype=f32, rows=16, cols=16, v_row=16, v_col=16, "
       "blayout=row_major, slayout=none_box, fractal=512, pad=0>")
PV = "!pto.partition_tensor_view<16x16xf32>"
TV = "!pto.tensor_view<?x?xf32>"

PROGRAM = f"""module {{
  func.func @add(%x: !pto.ptr<f32>, %z: !pto.ptr<f32>) {{
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c16 = arith.constant 16 : index
    %vx = pto.make_tensor_view %x, shape = [%c16, %c16], strides = [%c16, %c1] : {TV}
    %vz = pto.make_tensor_view %z, shape = [%c16, %c16], strides = [%c16, %c1] : {TV}
    %px = pto.partition_view %vx, offsets = [%c0, %c0], sizes = [%c16, %c16] : {TV} -> {PV}
    %pz = pto.partition_view %vz, offsets = [%c0, %c0], sizes = [%c16, %c16] : {TV} -> {PV}
    %a = pto.alloc_tile : {T16}
    %b = pto.alloc_tile : {T16}
    pto.tload ins(%px : {PV}) outs(%a : {T16})
    pto.tadd ins(%a, %a : {T16}, {T16}) outs(%b : {T16})
    pto.tstore ins(%b : {T16}) outs(%pz : {PV})
    return
  }}
}}
"""


def test_eager_calls_reach_observers_with_the_callers_line() -> None:
    seen: list[InstrRecord] = []
    x = np.arange(256, dtype=np.float32).reshape(16, 16)
    z = np.zeros_like(x)
    g = pto.GlobalTensor(x, (1, 1, 1, 16, 16), (256, 256, 256, 16, 1))
    gz = pto.GlobalTensor(z, (1, 1, 1, 16, 16), (256, 256, 256, 16, 1))
    a = pto.Tile(pto.TileType.Vec, np.float32, 16, 16)
    b = pto.Tile(pto.TileType.Vec, np.float32, 16, 16)
    with pto.target("a2a3") as m:
        m.observers.append(seen.append)
        ev = pto.TLOAD(a, g); line = _line()  # noqa: E702
        pto.TADD(b, a, a, ev)
        pto.TSTORE(gz, b)
    assert [r.ins.name for r in seen] == ["TLOAD", "TADD", "TSTORE"]
    assert seen[0].loc == (__file__, line)
    assert seen[1].values[0] is b and seen[1].waits == (ev,)
    assert seen[0].pipe is pto.Pipe.MTE2
    np.testing.assert_array_equal(z, 2 * x)  # observing changes nothing


def _line() -> int:
    import sys

    return sys._getframe(1).f_lineno


def test_pto_steps_reach_observers_with_the_op_location() -> None:
    seen: list[InstrRecord] = []
    prog = load(PROGRAM, filename="add.pto")
    x = np.arange(256, dtype=np.float32)
    z = np.zeros_like(x)
    m = pto.Machine("a5")
    m.observers.append(seen.append)
    prog.add(x, z, machine=m)
    assert [r.ins.name for r in seen] == ["TLOAD", "TADD", "TSTORE"]
    assert [(r.loc.file, r.loc.line) for r in seen] == [("add.pto", 12), ("add.pto", 13),
                                                          ("add.pto", 14)]
    np.testing.assert_array_equal(z, 2 * x)


def test_registry_and_grid_do_not_import_each_other() -> None:
    import ast
    from pathlib import Path

    root = Path(pto.__file__).parent

    def imports(mod: str) -> set[str]:
        tree = ast.parse((root / mod).read_text())
        return {n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}

    assert not any("registry" in i or i.endswith("isa") for i in imports("grid.py"))
    assert not any("grid" in i for i in imports("isa/registry.py"))

"""The other checks: data-dependent out-of-bounds GM (MGATHER/MSCATTER), overlapping manual
placement of live tiles, NaN origin (opt-in). Each clean kernel reports nothing."""

from __future__ import annotations

import numpy as np
import pytest

import ptoisa as pto
from ptoisa import GlobalTensor, Tile, TileType
from ptoisa.sanitizer import Sanitizer

P = pto.Pipe


def _g(a, r=16, c=16):
    return GlobalTensor(a, (1, 1, 1, r, c), (r * c, r * c, r * c, c, 1))


def gather(table, idx, out, mode):
    ti = Tile(TileType.Vec, np.int32, 1, 8)
    dst = Tile(TileType.Vec, np.float32, 8, 8)
    pto.TLOAD(ti, _g(idx, 1, 8))
    pto.SET_FLAG(P.MTE2, P.V, 0)  # a gather into a Vec tile runs on V (MGATHER_VEC)
    pto.WAIT_FLAG(P.MTE2, P.V, 0)
    pto.MGATHER(dst, GlobalTensor(table), ti, Mode=mode)
    pto.SET_FLAG(P.V, P.MTE3, 0)
    pto.WAIT_FLAG(P.V, P.MTE3, 0)
    pto.TSTORE(_g(out, 8, 8), dst)


def test_gather_index_outside_the_table():
    table = np.arange(80, dtype=np.float32).reshape(10, 8)
    out = np.zeros((8, 8), np.float32)
    ok = np.array([[3, 9, 0, 3, 1, 2, 4, 5]], np.int32)
    assert not pto.launch(gather, table, ok, out, "Undefined", sanitize=Sanitizer())
    np.testing.assert_array_equal(out, table[ok[0]])
    bad = np.array([[3, 9, 0, 12, 1, 2, 4, 5]], np.int32)
    r = pto.launch(gather, table, bad, out, "Undefined", sanitize=Sanitizer())
    (f,) = r
    assert f.kind == "oob" and f.site.op == "MGATHER"
    assert "reads row 12 of the table, which has 10 rows (index at (3,)" in f.message
    assert f.extra["extent"] == 10 and f.extra["index"] == 12
    # a defined out-of-range mode is no bug
    assert not pto.launch(gather, table, bad, out, "Clamp", sanitize=Sanitizer())


def placed(x, z, b_addr):
    a, b, c = (Tile(TileType.Vec, np.float32, 16, 16) for _ in range(3))
    pto.TASSIGN(a, 0x0)
    pto.TASSIGN(b, b_addr)
    pto.TASSIGN(c, 0x1000)
    pto.TLOAD(a, _g(x))
    pto.TLOAD(b, _g(x))  # overwrites part of a when b_addr < 0x400
    pto.SET_FLAG(P.MTE2, P.V, 0)
    pto.WAIT_FLAG(P.MTE2, P.V, 0)
    pto.TADD(c, a, b)
    pto.SET_FLAG(P.V, P.MTE3, 0)
    pto.WAIT_FLAG(P.V, P.MTE3, 0)
    pto.TSTORE(_g(z), c)


def test_overlapping_placement_of_live_tiles():
    x, z = np.arange(256, dtype=np.float32), np.zeros(256, np.float32)
    assert not pto.launch(placed, x, z, 0x400, target="a2a3", sanitize=Sanitizer())
    r = pto.launch(placed, x, z, 0x200, target="a2a3", sanitize=Sanitizer())
    (f,) = r
    assert f.kind == "placement" and (f.site.op, f.other.op) == ("TADD", "TLOAD")
    assert (f.space, f.lo, f.hi) == ("UB", 0x200, 0x400)
    assert "TADD reads tile Vec f32 16x16 ND @0x0 (UB [0x0, 0x400)), but TLOAD at " in f.message
    assert "wrote tile Vec f32 16x16 ND @0x200 over [0x200, 0x400) while" in f.message
    assert not pto.launch(placed, x, z, 0x200, target="a2a3", sanitize=Sanitizer("races"))


def divide(x, y, z):
    a, b, c = (Tile(TileType.Vec, np.float32, 16, 16) for _ in range(3))
    pto.TLOAD(a, _g(x))
    pto.TLOAD(b, _g(y))
    pto.SET_FLAG(P.MTE2, P.V, 0)
    pto.WAIT_FLAG(P.MTE2, P.V, 0)
    pto.TDIV(c, a, b)
    pto.TADD(c, c, c)  # spreads the inf: not its origin
    pto.SET_FLAG(P.V, P.MTE3, 0)
    pto.WAIT_FLAG(P.V, P.MTE3, 0)
    pto.TSTORE(_g(z), c)


def test_nan_origin_is_the_first_instruction_with_finite_inputs():
    x = np.ones(256, np.float32)
    y = np.full(256, 2, np.float32)
    z = np.zeros(256, np.float32)
    assert not pto.launch(divide, x, y, z, sanitize=Sanitizer("races,uninit,nan"))
    y[37] = 0
    r = pto.launch(divide, x, y, z, sanitize=Sanitizer("races,uninit,nan"))
    (f,) = r
    assert f.kind == "nan" and f.site.op == "TDIV"
    assert f.extra["element"] == (2, 5) and f.extra["value"] == np.inf
    assert not pto.launch(divide, x, y, z, sanitize=Sanitizer())  # opt-in


EXAMPLES = __import__("pathlib").Path(__file__).resolve().parents[2] / "examples"


@pytest.mark.parametrize("name", ["softmax", "gemm_int8", "topk"])
@pytest.mark.parametrize("form", [[], ["--pto"]])
def test_examples_read_nothing_uninitialised(name, form, monkeypatch, capsys):
    """The examples are auto-synchronised (no flags): with races off, nothing to report —
    scratch operands the registry leaves generic (TMRGSORT's tmp) are not reads."""
    import runpy

    from ptoisa.observe import observing

    san = Sanitizer(sync="auto")
    san.begin("auto")
    monkeypatch.setattr("sys.argv", [f"{name}.py", *form])
    try:
        with observing(san):
            runpy.run_path(str(EXAMPLES / f"{name}.py"), run_name="__main__")
    except SystemExit as e:
        assert not e.code
    capsys.readouterr()
    assert san._core_ids  # it watched the launches
    r = san.finish()
    assert not r, r.render()


def test_capacity_and_alignment_join_the_report():
    def k(x, z):
        a = Tile(TileType.Vec, np.float32, 16, 16)
        pto.TLOAD(a, _g(x))  # no flag before the store below: a race, found first
        pto.TSTORE(_g(z), a)
        pto.TASSIGN(Tile(TileType.Vec, np.float32, 16, 16), 0x10)  # misaligned

    x, z = np.ones(256, np.float32), np.zeros(256, np.float32)
    with pytest.raises(pto.sanitizer.SanitizerError) as e:
        pto.launch(k, x, z, target="a2a3", sanitize=Sanitizer(sync="manual"))
    assert [f.kind for f in e.value.report] == ["race", "placement"]
    f = e.value.report.findings[1]
    assert "not 32-byte aligned" in f.message and f.loc[0] == __file__


def test_a_view_outside_its_array_joins_the_report():
    def k(x):
        t = Tile(TileType.Vec, np.float32, 16, 16)
        pto.TLOAD(t, _g(x))
        pto.TLOAD(t, GlobalTensor(x, (1, 1, 1, 16, 16), (256, 256, 256, 16, 1), offset=8))

    with pytest.raises(pto.sanitizer.SanitizerError) as e:
        pto.launch(k, np.ones(256, np.float32), sanitize=Sanitizer())
    (f,) = e.value.report
    assert f.kind == "oob" and f.loc == (__file__, f.loc[1]) and f.loc[1] > 0
    assert "reaches elements [8, 263] but the array has 256" in f.message

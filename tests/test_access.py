"""The shared access model: which bytes an instruction reads and writes, and on which pipe."""

from __future__ import annotations

import numpy as np

import ptoisa as pto
from ptoisa.concurrent.access import accesses, gm_span, tile_span
from ptoisa.isa.registry import InstrRecord

V = pto.TileType.Vec


def _records(fn) -> list[InstrRecord]:
    seen: list[InstrRecord] = []
    with pto.target("a2a3") as m:
        m.observers.append(seen.append)
        fn()
    return seen


def test_load_add_store_reads_and_writes() -> None:
    x = np.arange(512, dtype=np.float32)
    z = np.zeros_like(x)
    a = pto.Tile(V, np.float32, 16, 16, name="a")
    b = pto.Tile(V, np.float32, 16, 16, name="b")

    def kernel() -> None:
        pto.TLOAD(a, pto.GlobalTensor(x, (1, 1, 1, 16, 16), (256, 256, 256, 16, 1), offset=256))
        pto.TADD(b, a, a)
        pto.TSTORE(pto.GlobalTensor(z, (1, 1, 1, 16, 16), (256, 256, 256, 16, 1)), b)

    load, add, store = _records(kernel)
    r, w = accesses(load)
    assert [s.space for s in r] == ["GM"] and (r[0].lo, r[0].hi) == (1024, 2048)
    assert w == [tile_span(a)]
    r, w = accesses(add)
    assert r == [tile_span(a), tile_span(a)] and w == [tile_span(b)]
    r, w = accesses(store)
    assert r == [tile_span(b)] and (w[0].lo, w[0].hi) == (0, 1024)
    assert not w[0].overlaps(accesses(load)[0][0])  # x and z are different arrays
    assert [rec.pipe for rec in (load, add, store)] == [pto.Pipe.MTE2, pto.Pipe.V,
                                                        pto.Pipe.MTE3]


def test_views_of_one_array_overlap_by_element_range() -> None:
    x = np.zeros((4, 64), dtype=np.float16)
    g0 = pto.GlobalTensor(x, (1, 1, 1, 2, 64), (128, 128, 128, 64, 1))
    g1 = pto.GlobalTensor(x, (1, 1, 1, 2, 64), (128, 128, 128, 64, 1), offset=128)
    g2 = pto.GlobalTensor(x, (1, 1, 1, 2, 64), (128, 128, 128, 64, 1), offset=64)
    assert not gm_span(g0).overlaps(gm_span(g1))
    assert gm_span(g0).overlaps(gm_span(g2)) and gm_span(g1).overlaps(gm_span(g2))
    # a view of a slice of the same array is the same memory
    g3 = pto.GlobalTensor(x[2:], (1, 1, 1, 1, 64), (64, 64, 64, 64, 1))
    assert gm_span(g3).overlaps(gm_span(g1)) and not gm_span(g3).overlaps(gm_span(g0))


def test_placed_tiles_overlap_by_address() -> None:
    with pto.target("a2a3", mode="manual"):
        a = pto.Tile(V, np.float32, 16, 16)
        b = pto.Tile(V, np.float32, 16, 16)
        c = pto.Tile(V, np.float32, 16, 16)
        pto.TASSIGN(a, 0x0)
        pto.TASSIGN(b, 0x200)   # a covers [0, 0x400)
        pto.TASSIGN(c, 0x400)
        assert tile_span(a).overlaps(tile_span(b))
        assert not tile_span(a).overlaps(tile_span(c))
        assert str(tile_span(c)).startswith("UB [0x400, 0x800)")


def test_acc_store_runs_on_fix() -> None:
    acc = pto.Tile(pto.TileType.Acc, np.float32, 16, 16,
                   blayout=pto.BLayout.ColMajor, slayout=pto.SLayout.RowMajor, fractal=1024)
    z = np.zeros(256, np.float32)
    recs = _records(lambda: pto.TSTORE(pto.GlobalTensor(z, (1, 1, 1, 16, 16)), acc))
    assert recs[0].pipe is pto.Pipe.FIX


def test_column_blocks_of_one_array_are_disjoint_footprints():
    a = np.zeros((16, 64), np.float32)
    views = [pto.GlobalTensor(a, (1, 1, 1, 16, 16), (1024, 1024, 1024, 64, 1), offset=16 * j)
             for j in range(4)]
    spans = [gm_span(v) for v in views]
    # the hulls overlap (each spans 15 full rows), the footprints do not
    assert spans[0].lo < spans[1].hi and spans[1].lo < spans[0].hi
    assert not spans[0].overlaps(spans[1]) and spans[1].overlaps(spans[1])
    whole = gm_span(pto.GlobalTensor(a, (1, 1, 1, 16, 64), (1024, 1024, 1024, 64, 1)))
    assert all(whole.overlaps(s) and whole.covers(s) for s in spans)
    assert not spans[0].covers(whole)

"""The machine: per-target on-chip buffers, TASSIGN placement, aliasing, auto/manual mode."""

from __future__ import annotations

import numpy as np
import pytest

import ptoisa as pto
from ptoisa import BLayout, SLayout, Tile, TileType
from ptoisa import memory as mem

KiB = 1024

# model.md section 3 (buffer_limits.hpp; the CPU simulator: A2A3 sizes with UB >= 512 KiB and
# Bias/Scaling tiles placed in UB).
BUFFERS = {
    "a2a3": {TileType.Vec: 192 * KiB, TileType.Mat: 512 * KiB, TileType.Left: 64 * KiB,
             TileType.Right: 64 * KiB, TileType.Acc: 128 * KiB, TileType.Bias: 1 * KiB,
             TileType.Scaling: 2 * KiB, TileType.ScaleLeft: 0, TileType.ScaleRight: 0},
    "a5": {TileType.Vec: 256 * KiB, TileType.Mat: 512 * KiB, TileType.Left: 64 * KiB,
           TileType.Right: 64 * KiB, TileType.Acc: 256 * KiB, TileType.Bias: 4 * KiB,
           TileType.Scaling: 4 * KiB, TileType.ScaleLeft: 4 * KiB, TileType.ScaleRight: 4 * KiB},
    "cpu": {TileType.Vec: 512 * KiB, TileType.Mat: 512 * KiB, TileType.Left: 64 * KiB,
            TileType.Right: 64 * KiB, TileType.Acc: 128 * KiB, TileType.Bias: 512 * KiB,
            TileType.Scaling: 512 * KiB, TileType.ScaleLeft: 4 * KiB,
            TileType.ScaleRight: 4 * KiB},
}


def _one_kib_tile(loc: TileType) -> Tile:
    """A 1 KiB tile of role ``loc`` (Bias/Scaling: one row)."""
    if loc in (TileType.Bias,):
        return Tile(loc, "f32", 1, 256)
    if loc is TileType.Scaling:
        return Tile(loc, "ui64", 1, 128)
    if loc in (TileType.ScaleLeft, TileType.ScaleRight):
        return Tile(loc, "f8E8M0", 32, 32)
    return Tile(loc, "f32", 16, 16)


@pytest.mark.parametrize("loc", list(BUFFERS["a5"]))
def test_tassign_capacity_per_target(machine, loc):
    cap = BUFFERS[machine.target.name][loc]
    t = _one_kib_tile(loc)
    assert t.spec.nbytes == 1024
    if cap == 0:
        with pytest.raises(pto.PtoMemoryError, match=f"has no .* buffer for {loc.name} tiles"):
            pto.TASSIGN(t, 0)
        return
    pto.TASSIGN(t, cap - 1024)  # the last KiB: fits exactly
    assert t.addr == cap - 1024 and t.assigned
    with pytest.raises(pto.PtoMemoryError,
                       match=rf"exceeds the \w+ buffer of {machine.target.name} "
                             rf"\({cap} bytes = {cap // KiB} KiB\)"):
        pto.TASSIGN(_one_kib_tile(loc), cap - 992)


@pytest.mark.parametrize("addr", [1, 16, 0x1010, 31])
def test_tassign_needs_32_byte_alignment(machine, addr):
    with pytest.raises(pto.PtoMemoryError, match=r"tassign: .*is not 32-byte aligned"):
        pto.TASSIGN(Tile(TileType.Vec, "f32", 8, 8), addr)


def test_tassign_rejects_negative_and_non_integer_addresses(machine):
    t = Tile(TileType.Vec, "f32", 8, 8)
    # the fault named is the address's sign, not its alignment (issue 9 item 17)
    for bad in (-32, -256, -1):
        with pytest.raises(pto.PtoMemoryError, match=f"tassign: .*address {bad} is negative"):
            pto.TASSIGN(t, bad)
    cap = machine.target.buffer_size("UB")
    with pytest.raises(pto.PtoMemoryError, match=f"address {cap:#x} is beyond the UB buffer"):
        pto.TASSIGN(t, cap)
    for bad in (32.0, "32", True):
        with pytest.raises(pto.PtoMemoryError, match="address must be an integer"):
            pto.TASSIGN(t, bad)


def test_overlapping_tiles_share_bytes(machine):
    a = Tile(TileType.Vec, "f32", 16, 16, name="a")
    b = Tile(TileType.Vec, "f32", 16, 16, name="b")
    pto.TASSIGN(a, 0x1000)
    pto.TASSIGN(b, 0x1000 + 8 * 16 * 4)  # b starts at a's row 8
    a.load_numpy(np.arange(256, dtype=np.float32).reshape(16, 16))
    np.testing.assert_array_equal(b.numpy()[:8], np.arange(128, 256).reshape(8, 16))
    b.write(np.full((1, 16), -5.0, np.float32), r0=0)
    assert (a.numpy()[8] == -5.0).all()


def test_aliasing_across_element_types(machine):
    f = Tile(TileType.Vec, "f32", 8, 8)
    i = Tile(TileType.Vec, "i32", 8, 8)
    h = Tile(TileType.Vec, "f16", 8, 16)
    u = Tile(TileType.Vec, "ui8", 8, 32)
    for t in (f, i, h, u):
        pto.TASSIGN(t, 0x2000)
    vals = np.linspace(-3, 3, 64, dtype=np.float32).reshape(8, 8)
    f.load_numpy(vals)
    np.testing.assert_array_equal(i.numpy(), vals.view(np.int32))
    np.testing.assert_array_equal(h.numpy(), vals.view(np.float16))
    np.testing.assert_array_equal(u.numpy(), vals.view(np.uint8))
    u.write(np.zeros((1, 4), np.uint8), 0, 0)  # clear f[0, 0]'s bytes through the u8 view
    assert f.numpy()[0, 0] == 0.0 and f.numpy()[0, 1] == vals[0, 1]


def test_aliasing_between_nd_and_dn_views(machine):
    nd = Tile(TileType.Vec, "f32", 8, 8)
    dn = Tile(TileType.Vec, "f32", 8, 8, BLayout.ColMajor)
    pto.TASSIGN(nd, 0)
    pto.TASSIGN(dn, 0)
    x = np.arange(64, dtype=np.float32).reshape(8, 8)
    nd.load_numpy(x)
    np.testing.assert_array_equal(dn.numpy(), x.T)


def test_aliasing_through_instructions(machine):
    """An instruction writing one tile is visible through an overlapping one."""
    a = Tile(TileType.Vec, "i32", 8, 8)
    b = Tile(TileType.Vec, "i32", 8, 8)
    dst = Tile(TileType.Vec, "i16", 8, 16)
    pto.TASSIGN(a, 0)
    pto.TASSIGN(b, 256)
    pto.TASSIGN(dst, 512)
    a.load_numpy(np.full((8, 8), 0x00010002, np.int32))
    b.load_numpy(np.full((8, 8), 0x00030004, np.int32))
    i32_view = Tile(TileType.Vec, "i32", 8, 8)
    pto.TASSIGN(i32_view, 512)
    pto.TADD(i32_view, a, b)
    # little endian: each i32 0x00040006 is i16 (6, 4)
    np.testing.assert_array_equal(dst.numpy()[0, :4], [6, 4, 6, 4])


def test_separate_buffers_do_not_alias(machine):
    v = Tile(TileType.Vec, "f32", 16, 16)
    m = Tile(TileType.Mat, "f32", 16, 16)
    pto.TASSIGN(v, 0)
    pto.TASSIGN(m, 0)
    v.load_numpy(np.ones((16, 16)))
    assert mem.is_poison(m.numpy()).all()  # still the launch's start state


def test_nz_tile_at_an_address_keeps_physical_order(machine):
    m = Tile(TileType.Mat, "f16", 32, 32, BLayout.ColMajor, None, SLayout.RowMajor)  # NZ
    raw = Tile(TileType.Mat, "f16", 1, 1024)
    pto.TASSIGN(m, 0x400)
    pto.TASSIGN(raw, 0x400)
    logical = np.arange(1024, dtype=np.float16).reshape(32, 32)
    m.load_numpy(logical)
    assert raw.numpy()[0, 277] == logical[17, 5]


def test_scaling_and_bias_live_in_ub_on_cpu():
    m = pto.target("cpu")
    s = Tile(TileType.Scaling, "ui64", 1, 4)
    v = Tile(TileType.Vec, "ui64", 1, 4)
    pto.TASSIGN(s, 0)
    pto.TASSIGN(v, 0)
    v.load_numpy(np.array([[1, 2, 3, 4]], np.uint64))
    np.testing.assert_array_equal(s.numpy(), [[1, 2, 3, 4]])
    mem.pop(m)


def test_manual_mode_needs_tassign():
    m = pto.target("a2a3", mode="manual")
    t = Tile(TileType.Vec, "f32", 16, 16, name="lhs")
    u = Tile(TileType.Vec, "f32", 16, 16)
    pto.TASSIGN(u, 0)
    with pytest.raises(pto.PtoMemoryError,
                       match=r"tadd: tile 'lhs' \(Vec f32 16x16 ND\) has no storage: TASSIGN it "
                             r"to an address in UB \(0\.\.196608 bytes\)"):
        pto.TADD(u, t, u)
    with pytest.raises(pto.PtoMemoryError, match="has no storage"):
        t.numpy()
    pto.TASSIGN(t, 1024)
    pto.TADD(u, t, u)
    mem.pop(m)


def test_auto_mode_gives_private_storage():
    m = pto.target("a5")
    t = Tile(TileType.Vec, "f32", 16, 16)
    assert not t.assigned
    assert t.numpy().shape == (16, 16) and t.assigned and t.addr is None
    mem.pop(m)


def test_machine_settings_are_validated():
    with pytest.raises(pto.PtoError, match="mode must be 'auto' or 'manual'"):
        pto.target("cpu", mode="lazy")
    with pytest.raises(pto.PtoError, match="print_buffer must be positive"):
        pto.target("a5", print_buffer=0)
    with pytest.raises(pto.PtoError, match=r"unknown target 'a9' \(choose from: cpu, a2a3, a5\)"):
        pto.target("a9")


def test_target_stack():
    base = pto.current()
    m = pto.target("a5")
    assert pto.current() is m
    with pto.target("a2a3") as inner:
        assert pto.current() is inner and inner.target.name == "a2a3"
    assert pto.current() is m
    mem.pop(m)
    assert pto.current() is base
    assert pto.target("A2A3").target.name == "a2a3"  # aliases of target names


def test_default_machine_is_a2a3_auto():
    mem._stack.clear()
    m = pto.current()
    assert (m.target.name, m.mode) == ("a2a3", "auto")

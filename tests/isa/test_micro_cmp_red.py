"""Micro-ISA chapters 10-12 (reductions, compare / select, rearrangement): every op against a
reference written from the chapter's pseudocode as plain Python loops over the lanes (never
the code under test), masked lanes as the chapter says."""

from __future__ import annotations

import numpy as np
import pytest

import ptoisa as pto
from ptoisa import dtypes as D
from ptoisa.errors import ExecutionError
from ptoisa.vector.regs import Mask, Ptr, VReg

RNG = np.random.default_rng(11)
GRAN = {1: "b8", 2: "b16", 4: "b32"}


@pytest.fixture
def a5():
    m = pto.target("a5")
    yield m
    from ptoisa import memory

    memory.pop(m)


def _mask(active, gran: str) -> Mask:
    step = {"b8": 1, "b16": 2, "b32": 4}[gran]
    bits = np.zeros(256, np.bool_)
    bits[::step] = np.asarray(active, bool)
    return Mask(bits, gran)


def _lanes(mask: Mask, n: int) -> list[bool]:
    return [bool(mask.bits[i * (256 // n)]) for i in range(n)]


def _vals(dt: str, lo: float = -8, hi: float = 8) -> np.ndarray:
    npt = np.dtype(D.dtype(dt).np)
    n = 256 // npt.itemsize
    if npt.kind == "f":
        return RNG.uniform(lo, hi, n).astype(npt)
    info = np.iinfo(npt)
    return RNG.integers(max(info.min, -100), min(info.max, 100), n, endpoint=True).astype(npt)


# ---- 11 compare / select ----------------------------------------------------------------------

PY_CMP = {"eq": lambda a, b: a == b, "ne": lambda a, b: a != b, "lt": lambda a, b: a < b,
          "le": lambda a, b: a <= b, "gt": lambda a, b: a > b, "ge": lambda a, b: a >= b}


@pytest.mark.parametrize("mode", list(PY_CMP))
@pytest.mark.parametrize("dt", ["f32", "f16", "i8", "ui8", "i16", "ui16", "i32", "ui32"])
def test_vcmp_and_vcmps(a5, mode, dt):
    a, b = _vals(dt), _vals(dt)
    b[::5] = a[::5]  # some equal lanes
    n = a.size
    on = RNG.random(n) < 0.75
    seed = _mask(on, GRAN[a.itemsize])
    got = _lanes(pto.v.vcmp(VReg(a), VReg(b), seed, cmp_mode=mode), n)
    # the page: if (seed[i]) dst[i] = src0[i] CMP src1[i]; lanes outside the seed are 0
    want = [bool(on[i]) and PY_CMP[mode](a[i].item(), b[i].item()) for i in range(n)]
    assert got == want
    s = a[3].item()
    got = pto.v.vcmps(VReg(a), s, seed, cmp_mode=mode)
    assert got.gran == GRAN[a.itemsize]
    assert _lanes(got, n) == [bool(on[i]) and PY_CMP[mode](a[i].item(), s) for i in range(n)]


def test_vcmp_unsigned_lanes_compare_unsigned(a5):
    a = np.array([0xFFFF] + [0] * 127, np.uint16)
    b = np.array([1] + [0] * 127, np.uint16)
    got = pto.v.vcmp(VReg(a), VReg(b), _mask(np.ones(128), "b16"), cmp_mode="gt")
    assert _lanes(got, 128)[0] is True
    got = pto.v.vcmp(VReg(a.view(np.int16)), VReg(b.view(np.int16)),
                     _mask(np.ones(128), "b16"), cmp_mode="gt")
    assert _lanes(got, 128)[0] is False
    with pytest.raises(ExecutionError, match="compare mode 'bogus'"):
        pto.v.vcmp(VReg(a), VReg(b), _mask(np.ones(128), "b16"), cmp_mode="bogus")


@pytest.mark.parametrize("dt", ["f32", "f16", "i8", "i32"])
def test_vsel_and_vselr(a5, dt):
    a, b = _vals(dt), _vals(dt)
    n = a.size
    on = RNG.random(n) < 0.5
    got = pto.v.vsel(VReg(a), VReg(b), _mask(on, GRAN[a.itemsize])).data
    want = [a[i] if on[i] else b[i] for i in range(n)]  # every lane written
    np.testing.assert_array_equal(got, np.array(want, a.dtype))
    idx = RNG.integers(0, n, n).astype(np.dtype(f"i{a.itemsize}"))
    got = pto.v.vselr(VReg(a), VReg(idx)).data
    np.testing.assert_array_equal(got, np.array([a[int(idx[i])] for i in range(n)], a.dtype))
    if a.itemsize == 1:  # (8-bit indices, read unsigned, reach all 256 lanes)
        return
    idx[2] = n
    with pytest.raises(ExecutionError, match=r"idx\[2\]"):
        pto.v.vselr(VReg(a), VReg(idx))


# ---- 10 reductions ----------------------------------------------------------------------------

def _ints_wrap(x: int, dt: np.dtype) -> int:
    bits = 8 * dt.itemsize
    x &= (1 << bits) - 1
    return x - (1 << bits) if dt.kind == "i" and x >= 1 << (bits - 1) else x


@pytest.mark.parametrize("dt,out", [("f32", "f32"), ("i32", "i32"), ("ui32", "ui32"),
                                    ("i16", "i32"), ("ui16", "ui32"), ("i8", "i16"),
                                    ("ui8", "ui16")])
def test_vcadd(a5, dt, out):
    a = _vals(dt)
    on = RNG.random(a.size) < 0.8
    got = pto.v.vcadd(VReg(a), _mask(on, GRAN[a.itemsize])).data
    to = np.dtype(D.dtype(out).np)
    assert got.dtype == to and got.size == 256 // to.itemsize
    if to.kind == "f":
        assert got[0] == pytest.approx(sum(float(a[i]) for i in range(a.size) if on[i]),
                                       rel=1e-5)
    else:
        assert int(got[0]) == _ints_wrap(sum(int(a[i]) for i in range(a.size) if on[i]), to)
    assert not got[1:].any()
    none = pto.v.vcadd(VReg(a), _mask(np.zeros(a.size), GRAN[a.itemsize])).data
    assert not none.any()  # all predicate bits zero: the result is zero


@pytest.mark.parametrize("kind", ["max", "min"])
@pytest.mark.parametrize("dt", ["f32", "f16", "i8", "ui16", "i32"])
def test_vcmax_vcmin_value_and_first_index(a5, kind, dt):
    a = _vals(dt)
    n = a.size
    on = RNG.random(n) < 0.6
    a[n - 1] = a[n - 2]  # ties resolved to the lowest index
    best, idx = None, 0
    for i in range(n):  # the page's loop over the active lanes
        if on[i] and (best is None or (a[i] > best if kind == "max" else a[i] < best)):
            best, idx = a[i], i
    got = getattr(pto.v, f"vc{kind}")(VReg(a), _mask(on, GRAN[a.itemsize])).data
    assert got[0] == best
    assert int(got[1:2].view(np.dtype(f"u{a.itemsize}"))[0]) == idx
    assert not got[2:].any()
    none = getattr(pto.v, f"vc{kind}")(VReg(a), _mask(np.zeros(n), GRAN[a.itemsize])).data
    if a.dtype.kind == "f":
        assert none[0] == (-np.inf if kind == "max" else np.inf)
    else:
        info = np.iinfo(a.dtype)
        assert none[0] == (info.min if kind == "max" else info.max)


@pytest.mark.parametrize("kind", ["max", "min"])
def test_vcbmax_vcbmin_mark_every_match(a5, kind):
    a = RNG.integers(-5, 5, 64).astype(np.float32)
    a[10] = -0.0 if kind == "max" else 0.0
    on = RNG.random(64) < 0.7
    value, pred = getattr(pto.v, f"vcb{kind}")(VReg(a), _mask(on, "b32"))
    act = [float(a[i]) for i in range(64) if on[i]]
    ext = max(act) if kind == "max" else min(act)
    assert value.data[0] == ext and not value.data[1:].any()
    assert _lanes(pred, 64) == [bool(on[i]) and float(a[i]) == ext for i in range(64)]
    _, pred = getattr(pto.v, f"vcb{kind}")(VReg(a), _mask(np.zeros(64), "b32"))
    assert not any(_lanes(pred, 64))


@pytest.mark.parametrize("dt", ["f32", "f16", "i8", "i16", "ui32"])
def test_group_reductions_per_32_byte_vlane(a5, dt):
    a = _vals(dt)
    n, k = a.size, 32 // a.itemsize
    on = RNG.random(n) < 0.6
    on[:k] = False  # an all-inactive VLane takes the neutral value
    m = _mask(on, GRAN[a.itemsize])
    isf = a.dtype.kind == "f"
    lo = -np.inf if isf else np.iinfo(a.dtype).min
    hi = np.inf if isf else np.iinfo(a.dtype).max
    for kind in ("add", "max", "min"):
        got = getattr(pto.v, f"vcg{kind}")(VReg(a), m).data
        for g in range(8):
            xs = [a[g * k + i].item() for i in range(k) if on[g * k + i]]
            if kind == "add":
                want = sum(xs) if isf else _ints_wrap(sum(xs), a.dtype)
                if isf:
                    assert got[g] == pytest.approx(want, rel=2e-3, abs=1e-2)
                else:
                    assert int(got[g]) == want
            else:
                assert got[g] == ((max(xs) if xs else lo) if kind == "max"
                                  else (min(xs) if xs else hi))
        assert not got[8:].any()


def test_vcgmax_vcgmin_signed_zero(a5):
    a = np.ones(64, np.float32)
    a[:8] = [0.0, -0.0, -1.0, -2.0, -3.0, -4.0, -5.0, -6.0]
    a[8:16] = [-0.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
    m = _mask(np.ones(64), "b32")
    assert not np.signbit(pto.v.vcgmax(VReg(a), m).data[0])  # max(+0, -0) = +0
    assert np.signbit(pto.v.vcgmin(VReg(a), m).data[1])  # min(-0, +0) = -0


def test_vcpadd_inclusive_scan(a5):
    a = np.arange(1, 65, dtype=np.float32)
    on = np.ones(64, bool)
    on[5] = False
    got = pto.v.vcpadd(VReg(a), _mask(on, "b32")).data
    want, acc = [], 0.0
    for i in range(64):
        acc += float(a[i]) if on[i] else 0.0
        want.append(acc)
    np.testing.assert_array_equal(got, np.array(want, np.float32))
    assert got[3] == 10  # the page's example: 1, 3, 6, 10, 15


# ---- 12 rearrangement -------------------------------------------------------------------------

@pytest.mark.parametrize("dt", ["f32", "f16", "i8"])
def test_vintlv_vdintlv(a5, dt):
    a, b = _vals(dt), _vals(dt)
    n = a.size
    low, high = pto.v.vintlv(VReg(a), VReg(b))
    want = []
    for i in range(n):
        want += [a[i], b[i]]
    np.testing.assert_array_equal(low.data, np.array(want[:n], a.dtype))
    np.testing.assert_array_equal(high.data, np.array(want[n:], a.dtype))
    even, odd = pto.v.vdintlv(VReg(a), VReg(b))
    s = list(a) + list(b)
    np.testing.assert_array_equal(even.data, np.array(s[0::2], a.dtype))
    np.testing.assert_array_equal(odd.data, np.array(s[1::2], a.dtype))
    back = pto.v.vdintlv(low, high)
    np.testing.assert_array_equal(back[0].data, a)
    np.testing.assert_array_equal(back[1].data, b)


@pytest.mark.parametrize("dt", ["f32", "i16", "ui8"])
def test_vsqz_and_vusqz(a5, dt):
    a = _vals(dt)
    n = a.size
    on = RNG.random(n) < 0.4
    m = _mask(on, GRAN[a.itemsize])
    got = pto.v.vsqz(VReg(a), m).data
    want = [a[i] for i in range(n) if on[i]]
    want += [0] * (n - len(want))
    np.testing.assert_array_equal(got, np.array(want, a.dtype))
    if dt in ("i16",):
        got = pto.v.vusqz(VReg(a), m).data
        dst = [0]
        for i in range(1, n):
            dst.append(dst[i - 1] + 1 if on[i - 1] else dst[i - 1])
        np.testing.assert_array_equal(got, np.array(dst, a.dtype))


@pytest.mark.parametrize("src,dst", [("i32", np.uint16), ("ui32", np.uint16),
                                     ("i16", np.uint8), ("ui16", np.uint8)])
@pytest.mark.parametrize("part", ["LOWER", "HIGHER"])
def test_vpack_truncates_into_one_half(a5, src, dst, part):
    npt = np.dtype(D.dtype(src).np)
    info = np.iinfo(npt)
    a = RNG.integers(info.min, info.max, 256 // npt.itemsize, endpoint=True).astype(npt)
    n = a.size
    got = pto.v.vpack(VReg(a), part=part).data
    bits = 8 * np.dtype(dst).itemsize
    want = [0] * (2 * n)
    for i in range(n):
        want[(0 if part == "LOWER" else n) + i] = int(a[i]) & ((1 << bits) - 1)
    np.testing.assert_array_equal(got, np.array(want, dst))


@pytest.mark.parametrize("dt", ["i8", "ui8", "i16", "ui16"])
@pytest.mark.parametrize("part", [0, 1])
def test_vsunpack_vzunpack(a5, dt, part):
    npt = np.dtype(D.dtype(dt).np)
    info = np.iinfo(npt)
    a = RNG.integers(info.min, info.max, 256 // npt.itemsize, endpoint=True).astype(npt)
    half = a.size // 2
    bits = 8 * npt.itemsize
    raw = [int(x) & ((1 << bits) - 1) for x in a[part * half:(part + 1) * half]]
    s = pto.v.vsunpack(VReg(a), part).data
    z = pto.v.vzunpack(VReg(a), part).data
    assert s.itemsize == z.itemsize == 2 * npt.itemsize and s.size == half
    np.testing.assert_array_equal(
        s.astype(np.int64), [r - (1 << bits) if r >= 1 << (bits - 1) else r for r in raw])
    np.testing.assert_array_equal(z.astype(np.int64), raw)


def test_chapter_ops_are_refused_off_a5_and_on_illegal_types():
    with pto.target("a2a3"):
        with pytest.raises(Exception, match="not supported on target a2a3"):
            pto.v.vsqz(VReg(np.zeros(64, np.float32)), _mask(np.ones(64), "b32"))
    with pto.target("a5"):
        with pytest.raises(Exception, match="VCPADD|vcpadd|i32"):
            pto.v.vcpadd(VReg(np.zeros(64, np.int32)), _mask(np.ones(64), "b32"))


# ---- 03 gathers / scatters, 05 pnot / psel ----------------------------------------------------

def _ub_fill(addr: int, data: np.ndarray) -> None:
    pto.v.vsts(VReg(data), Ptr("ub", addr, D.dtype(data.dtype)), 0,
               _mask(np.ones(data.size), GRAN[data.itemsize]))


def _ub_read(addr: int, dt: str, n: int) -> np.ndarray:
    npt = np.dtype(D.dtype(dt).np)
    out = []
    for k in range(0, n * npt.itemsize, 256):
        out.append(pto.v.vlds(Ptr("ub", addr + k, D.dtype(dt)))[0].data)
    return np.concatenate(out)[:n]


@pytest.mark.parametrize("dt,off", [("f32", "ui32"), ("i32", "i32"), ("f16", "ui16"),
                                    ("ui8", "ui16"), ("i8", "i16")])
@pytest.mark.parametrize("op", ["vgather2", "vgather2_bc"])
def test_gathers_against_the_pages_loop(a5, dt, off, op):
    if op == "vgather2_bc" and dt not in ("f32", "i32"):
        pytest.skip("vgather2_bc: 32-bit offsets")
    npt = np.dtype(D.dtype(dt).np)
    table = RNG.integers(0, 120, 512 // npt.itemsize).astype(npt)  # 512 bytes at 1024
    _ub_fill(1024, table[:256 // npt.itemsize])
    _ub_fill(1280, table[256 // npt.itemsize:])
    n = 64 if npt.itemsize == 4 else 128
    idx = RNG.integers(0, min(table.size, np.iinfo(np.dtype(D.dtype(off).np)).max), n)
    on = RNG.random(n) < 0.7
    got = getattr(pto.v, op)(Ptr("ub", 1024, D.dtype(dt)), VReg(idx.astype(D.dtype(off).np)),
                             _mask(on, GRAN[256 // n])).data
    raw = table.view(np.uint8)
    want = []
    for i in range(n):  # addr = base + offsets[i] * sizeof(T); 8-bit payloads zero-extended
        if not on[i]:
            want.append(0)
            continue
        b = raw[idx[i] * npt.itemsize:(idx[i] + 1) * npt.itemsize]
        want.append(int(b[0]) if npt.itemsize == 1 else b.view(npt)[0])
    if npt.itemsize == 1:
        assert got.itemsize == 2
        np.testing.assert_array_equal(got.view(np.uint16), np.array(want, np.uint16))
    else:
        np.testing.assert_array_equal(got, np.array(want, npt))


def test_gather_checks_alignment_and_bounds(a5):
    with pytest.raises(ExecutionError, match="not aligned"):
        pto.v.vgather2(Ptr("ub", 1026, D.f32), VReg(np.zeros(64, np.uint32)),
                       _mask(np.ones(64), "b32"))
    with pytest.raises(ExecutionError, match="leave the UB"):
        pto.v.vgather2(Ptr("ub", 0, D.f32), VReg(np.full(64, 1 << 20, np.uint32)),
                       _mask(np.ones(64), "b32"))
    # masked-off lanes do not access memory
    got = pto.v.vgather2(Ptr("ub", 0, D.f32), VReg(np.full(64, 1 << 20, np.uint32)),
                         _mask(np.zeros(64), "b32")).data
    assert not got.any()


def test_vgatherb_blocks(a5):
    src = np.arange(256, dtype=np.int32)  # 1 KiB at 2048
    for k in range(4):
        _ub_fill(2048 + 256 * k, src[64 * k:64 * (k + 1)])
    offs = np.zeros(64, np.uint32)
    offs[:8] = [32 * b for b in (5, 0, 31, 7, 7, 2, 9, 1)]
    on = np.array([1, 1, 0, 1, 1, 1, 0, 1] + [1] * 56, bool)
    got = pto.v.vgatherb(Ptr("ub", 2048, D.i32), VReg(offs), _mask(on, "b32")).data
    raw = src.view(np.uint8)
    want = np.zeros(256, np.uint8)
    for blk in range(8):  # the page's loop: dst_block[blk] = UB_block[base + offsets[blk]]
        if on[blk]:
            want[32 * blk:32 * blk + 32] = raw[offs[blk]:offs[blk] + 32]
    np.testing.assert_array_equal(got.view(np.uint8), want)
    offs[0] = 4
    with pytest.raises(ExecutionError, match="multiple of 32"):
        pto.v.vgatherb(Ptr("ub", 2048, D.i32), VReg(offs), _mask(on, "b32"))


@pytest.mark.parametrize("dt,off", [("f32", "ui32"), ("i16", "ui16"), ("ui8", "i16")])
def test_vscatter_against_the_pages_loop(a5, dt, off):
    npt = np.dtype(D.dtype(dt).np)
    base = np.full(256 // npt.itemsize, 7, npt)
    _ub_fill(4096, base)
    value = RNG.integers(0, 100, base.size).astype(npt)
    n = 64 if npt.itemsize == 4 else 128
    idx = RNG.permutation(base.size)[:n].astype(D.dtype(off).np)
    on = RNG.random(n) < 0.6
    pto.v.vscatter(VReg(value), Ptr("ub", 4096, D.dtype(dt)), VReg(idx), _mask(on, GRAN[256 // n]))
    want = base.copy()
    for i in range(n):
        if on[i]:
            want[int(idx[i])] = value[2 * i] if npt.itemsize == 1 else value[i]
    np.testing.assert_array_equal(_ub_read(4096, dt, base.size), want)


@pytest.mark.parametrize("gran,n", [("b8", 256), ("b16", 128), ("b32", 64)])
def test_pnot_psel(a5, gran, n):
    a, b, s = (RNG.random(n) < 0.5 for _ in range(3))
    got = _lanes(pto.v.pnot(_mask(a, gran), _mask(s, gran)), n)
    assert got == [bool(s[i]) and not a[i] for i in range(n)]
    got = _lanes(pto.v.psel(_mask(a, gran), _mask(b, gran), _mask(s, gran)), n)
    assert got == [bool(a[i] if s[i] else b[i]) for i in range(n)]

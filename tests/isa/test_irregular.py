"""Irregular family: independent numpy references from the manual pages, over dtypes x targets
x partial valid regions, plus rejected illegal uses."""

from __future__ import annotations

import numpy as np
import pytest

import ptoisa as pto
import ptoisa.isa.comm as C
import ptoisa.isa.irregular as I
from ptoisa.errors import ExecutionError, IllegalInstruction, PtoError, RuntimeCheckError
from ptoisa.memory import is_poison, pop
from ptoisa.memory import target as make_target
from ptoisa.tensor import GlobalTensor
from ptoisa.tile import Dyn, Tile

TARGETS = ["cpu", "a2a3", "a5"]
RNG = np.random.default_rng(7)


@pytest.fixture(params=TARGETS)
def tgt(request: pytest.FixtureRequest):  # type: ignore[no-untyped-def]
    m = make_target(request.param)
    yield request.param
    pop(m)


def vec(dtype, rows, cols, valid=None, data=None) -> Tile:  # type: ignore[no-untyped-def]
    t = Tile("Vec", dtype, rows, cols, valid=valid)
    if data is not None:
        t.load_numpy(np.asarray(data))
    return t


# ---- TCI / TTRI ----------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", ["i16", "ui16", "i32", "ui32"])
@pytest.mark.parametrize("desc", [0, 1])
def test_tci(tgt, dtype, desc):  # type: ignore[no-untyped-def]
    t = vec(dtype, 1, 32, valid=(1, Dyn(20)))
    pto.TCI(t, 5, descending=desc)
    k = np.arange(20)
    ref = (5 - k if desc else 5 + k).astype(np.int64).astype(t.dtype.np)
    np.testing.assert_array_equal(t.numpy()[0, :20], ref)
    assert is_poison(t.numpy()[0, 20:]).all()  # beyond the valid region: untouched


def test_tci_rejects_rows(tgt):  # type: ignore[no-untyped-def]
    with pytest.raises(IllegalInstruction, match="Rows == 1"):
        pto.TCI(vec("i32", 2, 8), 0)
    with pytest.raises(IllegalInstruction, match="not supported"):
        pto.TCI(vec("f32", 1, 8), 0)


@pytest.mark.parametrize("upper", [0, 1])
@pytest.mark.parametrize("diag", [-2, 0, 3])
@pytest.mark.parametrize("dtype", ["f32", "i16", "f16"])
def test_ttri(tgt, upper, diag, dtype):  # type: ignore[no-untyped-def]
    t = vec(dtype, 16, 16, valid=(Dyn(12), Dyn(10)))
    pto.TTRI(t, diag, isUpperOrLower=upper)
    ref = np.zeros((12, 10))
    for i in range(12):
        for j in range(10):
            ref[i, j] = (j <= i + diag) if upper == 0 else not (j < i + diag)
    np.testing.assert_array_equal(t.numpy(True).astype(np.float64), ref)
    out = t.numpy()
    assert is_poison(out[12:]).all() and is_poison(out[:, 10:]).all()  # untouched


def test_ttri_rejects_mode(tgt):  # type: ignore[no-untyped-def]
    with pytest.raises(PtoError, match="isUpperOrLower"):
        pto.TTRI(vec("f32", 8, 8), 0, isUpperOrLower=2)


# ---- TGATHER / TSCATTER --------------------------------------------------------------------------

PATTERNS = {"P0101": (2, 0), "P1010": (2, 1), "P0001": (4, 0), "P0010": (4, 1),
            "P0100": (4, 2), "P1000": (4, 3), "P1111": (1, 0)}


@pytest.mark.parametrize("pat", list(PATTERNS))
@pytest.mark.parametrize("axis", ["GATHER_ROW", "GATHER_COL"])
@pytest.mark.parametrize("dtype", ["f32", "i16", "ui32"])
def test_tgather_mask(tgt, pat, axis, dtype):  # type: ignore[no-untyped-def]
    src = vec(dtype, 8, 32, valid=(Dyn(8), Dyn(16)),
              data=RNG.integers(0, 100, (8, 32)))
    dst = vec(dtype, 8, 32)
    pto.TGATHER(dst, src, maskPattern=pat, gatherType=axis)
    f, p = PATTERNS[pat]
    s = src.numpy()[:8, :16]
    sel = s[:, p::f] if axis == "GATHER_ROW" else s[p::f, :]
    np.testing.assert_array_equal(dst.numpy().reshape(-1)[:sel.size], sel.reshape(-1))


@pytest.mark.parametrize("dtype,itype", [("f32", "i32"), ("i16", "i32"), ("f16", "ui32")])
def test_tgather_index(tgt, dtype, itype):  # type: ignore[no-untyped-def]
    src = vec(dtype, 4, 32, data=RNG.integers(0, 1000, (4, 32)))
    idx = vec(itype, 4, 16, data=RNG.integers(0, 128, (4, 16)))
    dst = vec(dtype, 4, 16)
    tmp = vec(itype, 4, 16)
    pto.TGATHER(dst, src, idx, tmp)
    ref = src.numpy().reshape(-1)[idx.numpy().astype(np.int64)]
    np.testing.assert_array_equal(dst.numpy(), ref)


@pytest.mark.parametrize("mode", ["GT", "EQ"])
def test_tgather_compare(tgt, mode):  # type: ignore[no-untyped-def]
    """Compare form TGATHER(dst, src, kValue, cdst, tmp, offset): per row, the column indices
    (+ offset) of src's valid elements > (GT) or == (EQ) kValue, packed from column 0; cdst's
    column 0 counts them."""
    data = RNG.integers(0, 7, (4, 16)).astype(np.float32)
    src = vec("f32", 4, 16, data=data)
    dst, cdst, tmp = vec("i32", 4, 16), vec("i32", 4, 8), vec("f32", 4, 16)
    pto.TGATHER(dst, src, 3.0, cdst, tmp, 2, cmpMode=mode)
    for r in range(4):
        hit = [j + 2 for j in range(16) if (data[r, j] > 3 if mode == "GT" else data[r, j] == 3)]
        assert cdst.numpy()[r, 0] == len(hit)
        np.testing.assert_array_equal(dst.numpy()[r, :len(hit)], hit)


def test_tgather_rejects(tgt):  # type: ignore[no-untyped-def]
    with pytest.raises(IllegalInstruction, match="same element size"):
        pto.TGATHER(vec("f32", 4, 16), vec("f16", 4, 16), maskPattern="P0101")


@pytest.mark.parametrize("dtype", ["f32", "i8", "i16"])
def test_tgatherb(tgt, dtype):  # type: ignore[no-untyped-def]
    esz = np.dtype({"f32": np.float32, "i8": np.int8, "i16": np.int16}[dtype]).itemsize
    per = 32 // esz
    src = vec(dtype, 2, 4 * per, data=RNG.integers(0, 100, (2, 4 * per)))
    blocks = RNG.integers(0, 8, (2, 8))
    off = vec("ui32", 2, 8, data=blocks * 32)
    dst = vec(dtype, 2, 4 * per, valid=(2, Dyn(2 * per)))
    pto.TGATHERB(dst, src, off)
    flat = src.numpy().reshape(-1)
    for i in range(2):
        for b in range(2):
            np.testing.assert_array_equal(dst.numpy()[i, b * per:(b + 1) * per],
                                          flat[blocks[i, b] * per:(blocks[i, b] + 1) * per])


@pytest.mark.parametrize("dtype,itype", [("f32", "i32"), ("i16", "i16"), ("f16", "ui16")])
def test_tscatter_index(tgt, dtype, itype):  # type: ignore[no-untyped-def]
    src = vec(dtype, 4, 16, valid=(Dyn(3), Dyn(16)), data=RNG.integers(0, 100, (4, 16)))
    perm = RNG.permutation(64)[:64].reshape(4, 16)
    idx = vec(itype, 4, 16, data=perm)
    dst = vec(dtype, 4, 16, data=np.zeros((4, 16)))
    pto.TSCATTER(dst, src, idx)
    ref = np.zeros(64)
    ref[perm[:3].reshape(-1)] = src.numpy()[:3].reshape(-1)
    np.testing.assert_array_equal(dst.numpy().reshape(-1).astype(np.float64), ref)


def test_tscatter_mask_and_rejects(tgt):  # type: ignore[no-untyped-def]
    src = vec("f32", 4, 8, data=RNG.integers(1, 9, (4, 8)))
    dst = vec("f32", 4, 32, data=np.full((4, 32), 7.0))
    # (every target: a2a3's TScatter.hpp has the mask overload too)
    pto.TSCATTER(dst, src, maskPattern="P0100")
    ref = np.zeros((4, 32), np.float32)
    ref[:, 2::4] = src.numpy()
    np.testing.assert_array_equal(dst.numpy(), ref)
    with pytest.raises(RuntimeCheckError, match="expanded"):
        pto.TSCATTER(vec("f32", 4, 16), src, maskPattern="P0100")


# ---- MGATHER / MSCATTER --------------------------------------------------------------------------

@pytest.mark.parametrize("oob", ["Clamp", "Wrap", "Zero"])
@pytest.mark.parametrize("dtype", ["f32", "i16", "ui8"])
def test_mgather_elem(tgt, oob, dtype):  # type: ignore[no-untyped-def]
    table_np = RNG.integers(1, 100, 40).astype(vec(dtype, 1, 32).dtype.np)
    table = GlobalTensor(table_np)
    raw = RNG.integers(0, 60, (2, 32))
    idx = vec("i32", 2, 32, valid=(2, Dyn(5)), data=raw)
    dst = vec(dtype, 2, 32, valid=(2, Dyn(5)))
    pto.MGATHER(dst, table, idx, CMode="Elem", Mode=oob)
    ix = raw[:, :5]
    if oob == "Clamp":
        ref = table_np[np.minimum(ix, 39)]
    elif oob == "Wrap":
        ref = table_np[ix % 40]
    else:
        ref = np.where(ix < 40, table_np[np.minimum(ix, 39)], 0)
    np.testing.assert_array_equal(dst.numpy()[:, :5], ref)


def _size_t(i: int) -> int:
    """C++ static_cast<size_t> of a (signed) index on a 64-bit host."""
    return i % (1 << 64)


def _u32(i: int) -> int:
    return i % (1 << 32)


@pytest.mark.parametrize("oob", ["Clamp", "Wrap", "Zero"])
def test_negative_indices_mgather_mscatter(tgt, oob):  # type: ignore[no-untyped-def]
    # cpu: the simulator converts an int32 index to size_t (64-bit): -42 mod 44 is 18;
    # a2a3/a5: indices are uint32 (-42 -> 2^32 - 42, mod 44 is 6)
    cap = 44
    table_np = np.arange(100, 100 + cap).astype(np.int32)
    raw = [-42, -1, 5, -44, 43, 44, -100, 0]
    conv = _size_t if tgt == "cpu" else _u32
    idx = vec("i32", 1, 8, data=[raw])
    dst = vec("i32", 1, 8)
    pto.MGATHER(dst, GlobalTensor(table_np), idx, CMode="Elem", Mode=oob)
    want = []
    for i in raw:
        u = conv(i)
        k = u % cap if oob == "Wrap" else min(u, cap - 1)
        want.append(0 if oob == "Zero" and u >= cap else int(table_np[k]))
    np.testing.assert_array_equal(dst.numpy()[0], want)
    if tgt == "cpu" and oob == "Wrap":
        assert want[0] == table_np[18]
    if oob == "Zero":
        return
    out_np = np.zeros(cap, np.int32)
    src = vec("i32", 1, 8, data=[list(range(1, 9))])
    pto.MSCATTER(GlobalTensor(out_np), src, idx, Mode="Elem", Oob=oob)
    ref = np.zeros(cap, np.int32)
    for v, i in zip(range(1, 9), raw, strict=True):  # row order: the last writer wins
        u = conv(i)
        ref[u % cap if oob == "Wrap" else min(u, cap - 1)] = v
    np.testing.assert_array_equal(out_np, ref)


def test_mgather_row_and_mscatter_row(tgt):  # type: ignore[no-untyped-def]
    table_np = RNG.normal(size=(10, 8)).astype(np.float32)
    table = GlobalTensor(table_np)
    idx = vec("i32", 1, 8, valid=(1, Dyn(4)), data=[[3, 9, 0, 3, 0, 0, 0, 0]])
    dst = vec("f32", 4, 8)
    pto.MGATHER(dst, table, idx)
    np.testing.assert_array_equal(dst.numpy(), table_np[[3, 9, 0, 3]])
    out_np = np.zeros((10, 8), np.float32)
    pto.MSCATTER(GlobalTensor(out_np), dst, idx, Mode="Row", Atomic="Add")
    ref = np.zeros((10, 8), np.float32)
    np.add.at(ref, [3, 9, 0, 3], table_np[[3, 9, 0, 3]])
    np.testing.assert_allclose(out_np, ref, rtol=1e-6)


@pytest.mark.parametrize("atomic", ["None", "Max", "Min"])
def test_mscatter_elem(tgt, atomic):  # type: ignore[no-untyped-def]
    out_np = np.full(16, 50, np.int32)
    src = vec("i32", 2, 8, data=RNG.integers(0, 100, (2, 8)))
    raw = RNG.integers(0, 20, (2, 8))
    idx = vec("i32", 2, 8, data=raw)
    pto.MSCATTER(GlobalTensor(out_np), src, idx, Mode="Elem", Atomic=atomic, Oob="Skip")
    ref = np.full(16, 50, np.int32)
    for v, k in zip(src.numpy().reshape(-1), raw.reshape(-1), strict=True):
        if k >= 16:
            continue
        ref[k] = v if atomic == "None" else (max(ref[k], v) if atomic == "Max" else
                                             min(ref[k], v))
    np.testing.assert_array_equal(out_np, ref)


def test_mscatter_rejects_last_with_atomic(tgt):  # type: ignore[no-untyped-def]
    with pytest.raises(IllegalInstruction, match="Conflict=Last"):
        pto.MSCATTER(GlobalTensor(np.zeros(16, np.float32)), vec("f32", 1, 8), vec("i32", 1, 8),
                   Mode="Elem", Atomic="Add", Conflict="Last")


# ---- TSORT32 / TMRGSORT -------------------------------------------------------------------------

def _records(vals, idx, npdt):  # type: ignore[no-untyped-def]
    out = []
    for v, i in zip(vals, idx, strict=True):
        b = np.zeros(8, np.uint8)
        vb = np.array([v], npdt).view(np.uint8)
        b[:vb.size] = vb
        b[4:] = np.array([i], np.uint32).view(np.uint8)
        out.append(b)
    return np.concatenate(out).view(npdt)


@pytest.mark.parametrize("dtype,npdt", [("f32", np.float32), ("f16", np.float16)])
def test_tsort32(tgt, dtype, npdt):  # type: ignore[no-untyped-def]
    vals = RNG.permutation(64).astype(npdt).reshape(1, 64)
    src = vec(dtype, 1, 64, data=vals)
    idx = vec("ui32", 1, 64, data=np.arange(64).reshape(1, 64))
    per = 8 // np.dtype(npdt).itemsize
    dst = vec(dtype, 1, 64 * per)
    pto.TSORT32(dst, src, idx)
    exp = []
    for b in range(2):
        blk = vals[0, b * 32:(b + 1) * 32]
        order = sorted(range(32), key=lambda k, blk=blk: -float(blk[k]))
        exp.append(_records(blk[order], [b * 32 + k for k in order], npdt))
    np.testing.assert_array_equal(dst.numpy().reshape(-1).view(np.uint8),
                                  np.concatenate(exp).view(np.uint8))


def test_tsort32_shared_idx_row(tgt):  # type: ignore[no-untyped-def]
    """A 1 x C idx tile serves every src row (TSORT32.md's operand table; the tilelang ST
    cases *_shared_idx); an idx of 2 rows for 3 src rows is an error."""
    vals = np.stack([RNG.permutation(32) for _ in range(3)]).astype(np.float32)
    src = vec("f32", 3, 32, data=vals)
    idx = vec("ui32", 1, 32, data=(np.arange(32) + 100).reshape(1, 32))
    dst = vec("f32", 3, 64)
    pto.TSORT32(dst, src, idx)
    for r in range(3):
        order = sorted(range(32), key=lambda k, r=r: -float(vals[r, k]))
        np.testing.assert_array_equal(dst.numpy()[r].view(np.uint8),
                                      _records(vals[r, order], [100 + k for k in order],
                                               np.float32).view(np.uint8))
    with pytest.raises(RuntimeCheckError, match="nor is it one row"):
        pto.TSORT32(dst, src, vec("ui32", 2, 32))


def test_tsort32_rejects_partial_block(tgt):  # type: ignore[no-untyped-def]
    with pytest.raises(RuntimeCheckError, match="multiple of 32"):
        pto.TSORT32(vec("f32", 1, 128), vec("f32", 1, 64, valid=(1, Dyn(40))), vec("ui32", 1, 64))


def test_tmrgsort_multi(tgt):  # type: ignore[no-untyped-def]
    a = np.sort(RNG.normal(size=8).astype(np.float32))[::-1]
    b = np.sort(RNG.normal(size=8).astype(np.float32))[::-1]
    s0 = vec("f32", 1, 16, data=_records(a, range(8), np.float32)[None, :])
    s1 = vec("f32", 1, 16, data=_records(b, range(8, 16), np.float32)[None, :])
    dst, tmp = vec("f32", 1, 32), vec("f32", 1, 32)
    ex = I.MrgSortExecutedNumList()
    pto.TMRGSORT(dst, ex, tmp, s0, s1, exhausted=True)
    merged = sorted([(v, i) for i, v in enumerate(a)] + [(v, 8 + i) for i, v in enumerate(b)],
                    key=lambda t: -t[0])
    # the merge stops once a list is exhausted: the first list to run out
    n = next(k + 1 for k in range(16)
             if sum(1 for t in merged[:k + 1] if t[1] < 8) == 8
             or sum(1 for t in merged[:k + 1] if t[1] >= 8) == 8)
    got = dst.numpy().reshape(-1)[: 2 * n].view(np.uint32).reshape(-1, 2)[:, 1]
    assert got.tolist() == [t[1] for t in merged[:n]]
    assert ex.mrgSortList0 + ex.mrgSortList1 == n


def test_tmrgsort_executed_list_as_four_integers_or_refused(tgt):  # type: ignore[no-untyped-def]
    """The executed list may be 4 integers (a .pto ``vector<4xi16>``): written like the
    struct; anything else is refused, never left holding stale counts."""
    a = np.sort(RNG.normal(size=8).astype(np.float32))[::-1]
    s0 = vec("f32", 1, 16, data=_records(a, range(8), np.float32)[None, :])
    s1 = vec("f32", 1, 16, data=_records(a, range(8, 16), np.float32)[None, :])
    ex = np.full(4, 99, np.int16)
    pto.TMRGSORT(vec("f32", 1, 32), ex, vec("f32", 1, 32), s0, s1, exhausted=False)
    assert ex.tolist() == [8, 8, 0, 0]
    with pytest.raises(PtoError, match="executedNumList must be"):
        pto.TMRGSORT(vec("f32", 1, 32), [0, 0, 0, 0], vec("f32", 1, 32), s0, s1,
                     exhausted=False)


def test_tmrgsort_multi_keeps_top_records_in_a_narrower_dst(tgt):  # type: ignore[no-untyped-def]
    """dst receives the first dst-valid-cols elements of the merge (upstream's TMrgsort: the
    merge into tmp, then dst.GetValidCol() elements copied to dst): a TopK of 2 x 8 records
    into a 6-record dst; the rest of dst is untouched."""
    a = np.sort(RNG.normal(size=8).astype(np.float32))[::-1]
    b = np.sort(RNG.normal(size=8).astype(np.float32))[::-1]
    s0 = vec("f32", 1, 16, data=_records(a, range(8), np.float32)[None, :])
    s1 = vec("f32", 1, 16, data=_records(b, range(8, 16), np.float32)[None, :])
    dst, tmp = vec("f32", 1, 16, valid=(1, 12)), vec("f32", 1, 32)
    dst.fill(5.0, 1, 16)
    pto.TMRGSORT(dst, I.MrgSortExecutedNumList(), tmp, s0, s1, exhausted=False)
    top = sorted([(v, i) for i, v in enumerate(a)] + [(v, 8 + i) for i, v in enumerate(b)],
                 key=lambda t: -t[0])[:6]
    want = _records([v for v, _ in top], [i for _, i in top], np.float32)
    got = dst.numpy().reshape(-1)
    np.testing.assert_array_equal(got[:12].view(np.uint8), want.view(np.uint8))
    assert (got[12:] == 5.0).all()


def _f16_records(vals, pads, idx):  # type: ignore[no-untyped-def]
    """f16 records (value, 2 pad bytes, u32 index) written byte by byte, with chosen pads."""
    raw = np.zeros((len(vals), 8), np.uint8)
    raw[:, 0:2] = np.asarray(vals, np.float16).view(np.uint8).reshape(-1, 2)
    raw[:, 2:4] = np.asarray(pads, np.uint16).view(np.uint8).reshape(-1, 2)
    raw[:, 4:8] = np.asarray(idx, np.uint32).view(np.uint8).reshape(-1, 4)
    return raw


def test_tmrgsort_f16_carries_pad_bytes(tgt):  # type: ignore[no-untyped-def]
    """A merge moves whole 8-byte records: the 2 bytes between an f16 value and its index
    come from the source record (the CPU simulator copies each struct; issue #27)."""
    a = _f16_records([9, 5, 1, -2], [0xA001, 0xA002, 0xA003, 0xA004], [0, 1, 2, 3])
    b = _f16_records([8, 7, 0, -5], [0xB001, 0xB002, 0xB003, 0xB004], [4, 5, 6, 7])
    s0 = vec("f16", 1, 16, data=a.reshape(-1).view(np.float16)[None, :])
    s1 = vec("f16", 1, 16, data=b.reshape(-1).view(np.float16)[None, :])
    dst, tmp = vec("f16", 1, 32), vec("f16", 1, 32)
    pto.TMRGSORT(dst, I.MrgSortExecutedNumList(), tmp, s0, s1, exhausted=False)
    order = [(a, 0), (b, 0), (b, 1), (a, 1), (a, 2), (b, 2), (a, 3), (b, 3)]  # 9 8 7 5 1 0 -2 -5
    exp = np.concatenate([rec[k] for rec, k in order])
    np.testing.assert_array_equal(dst.numpy().reshape(-1).view(np.uint8), exp)
    # the single-list form: four blocks of 16 records (blockLen 64 f16 elements)
    vals = RNG.permutation(64).astype(np.float16)
    blocks = [np.sort(vals[16 * k:16 * k + 16])[::-1] for k in range(4)]
    pads = RNG.integers(0, 1 << 16, 64).astype(np.uint16)
    src_raw = _f16_records(np.concatenate(blocks), pads, np.arange(64))
    src = vec("f16", 1, 256, data=src_raw.reshape(-1).view(np.float16)[None, :])
    dst = vec("f16", 1, 256)
    pto.TMRGSORT(dst, src, 64)
    exp = src_raw[np.argsort(-np.concatenate(blocks).astype(np.float64), kind="stable")]
    np.testing.assert_array_equal(dst.numpy().reshape(-1).view(np.uint8), exp.reshape(-1))


def test_tmrgsort_rejects(tgt):  # type: ignore[no-untyped-def]
    with pytest.raises(RuntimeCheckError, match="multiple of 64"):
        pto.TMRGSORT(vec("f32", 1, 256), vec("f32", 1, 256), 32)
    with pytest.raises(IllegalInstruction, match="Rows == 1"):
        pto.TMRGSORT(vec("f32", 2, 256), vec("f32", 2, 256), 64)


# ---- TDEQUANT / THISTOGRAM / TRANDOM / TPREFETCH -------------------------------------------------

@pytest.mark.parametrize("stype", ["i8", "i16"])
def test_tdequant(tgt, stype):  # type: ignore[no-untyped-def]
    x = RNG.integers(-100, 100, (4, 32))
    src = vec(stype, 4, 32, valid=(Dyn(3), Dyn(20)), data=x)
    sc = vec("f32", 4, 8, data=RNG.normal(size=(4, 8)))
    of = vec("f32", 4, 8, data=RNG.normal(size=(4, 8)))
    dst = vec("f32", 4, 32, valid=(Dyn(3), Dyn(20)))
    pto.TDEQUANT(dst, src, sc, of)
    ref = (x[:3, :20].astype(np.float32) - of.numpy()[:3, :1]) * sc.numpy()[:3, :1]
    np.testing.assert_array_equal(dst.numpy()[:3, :20], ref)
    with pytest.raises(RuntimeCheckError, match="src valid region"):
        pto.TDEQUANT(vec("f32", 4, 32), src, sc, of)


def test_thistogram(tgt):  # type: ignore[no-untyped-def]
    x = RNG.integers(0, 1 << 16, (2, 16)).astype(np.uint16)
    x[:, :6] = (0x12 << 8) | RNG.integers(0, 256, 6)
    src = vec("ui16", 2, 16, data=x)
    idx = Tile("Vec", "ui8", 32, 1, "col_major", valid=(2, 1))
    idx.load_numpy(np.full((32, 1), 0x12))
    dst = vec("ui32", 2, 256)
    if tgt == "a2a3":
        with pytest.raises(IllegalInstruction, match="not supported on target a2a3"):
            pto.THISTOGRAM(dst, src, idx, byte="BYTE_0")
        return
    pto.THISTOGRAM(dst, src, idx, byte="BYTE_0")
    for r in range(2):
        keep = x[r][(x[r] >> 8) == 0x12] & 0xFF
        ref = np.array([np.sum(keep <= b) for b in range(256)])
        np.testing.assert_array_equal(dst.numpy()[r], ref)


@pytest.mark.parametrize("byte,rows", [("BYTE_0", 2), ("BYTE_1", 1)])
def test_thistogram_u32_filter_rows(byte, rows):  # type: ignore[no-untyped-def]
    """A ui32 histogram of BYTE_k reads 3 - k filter rows of idx: too few is a run-time error
    naming them (was numpy's IndexError)."""
    with pto.target("a5"):
        src = vec("ui32", 2, 16, data=RNG.integers(0, 1 << 31, (2, 16)))
        idx = vec("ui8", rows, 32)
        with pytest.raises(RuntimeCheckError, match=f"idx needs {3 - int(byte[-1])} row"):
            pto.THISTOGRAM(vec("ui32", 2, 256), src, idx, byte=byte)
        idx3 = vec("ui8", 3, 32, data=np.zeros((3, 32)))
        dst = vec("ui32", 2, 256)
        pto.THISTOGRAM(dst, src, idx3, byte="BYTE_3")
        x = src.numpy() >> 24
        for r in range(2):
            np.testing.assert_array_equal(dst.numpy()[r], [np.sum(x[r] <= b) for b in range(256)])


def test_trandom_philox_vector(tgt):  # type: ignore[no-untyped-def]
    # Random123's published Philox4x32-10 known-answer vector (counter 0, key 0)
    out = I.philox4x32(np.zeros((1, 4), np.uint64), (0, 0), 10)[0]
    assert [hex(v) for v in out] == ["0x6627e8d5", "0xe169c58d", "0xbc57ac4c", "0x9b00dbd8"]
    if tgt == "a2a3":
        return
    dst = vec("ui32", 1, 8)
    pto.TRANDOM(dst, np.zeros(2, np.uint32), np.zeros(4, np.uint32))
    assert dst.numpy()[0, 0] == 0x6627E8D5
    # the second word of block 0: column 64 on cpu (past this row), column 1 on a5
    assert (dst.numpy()[0, 1] == 0xE169C58D) == (tgt == "a5")
    with pytest.raises(PtoError, match="Rounds"):
        pto.TRANDOM(dst, np.zeros(2, np.uint32), np.zeros(4, np.uint32), Rounds=8)


def _philox_ref(block: int, key: tuple[int, int], rounds: int) -> list[int]:
    """Philox4x32 of one 128-bit counter, written from Salmon et al. (SC'11), in Python ints."""
    x = [block >> (32 * i) & 0xFFFFFFFF for i in range(4)]
    k0, k1 = key
    for _ in range(rounds):
        a, b = x[0] * 0xD2511F53, x[2] * 0xCD9E8D57
        x = [(b >> 32) ^ x[1] ^ k0, b & 0xFFFFFFFF, (a >> 32) ^ x[3] ^ k1, a & 0xFFFFFFFF]
        k0, k1 = (k0 + 0x9E3779B9) & 0xFFFFFFFF, (k1 + 0xBB67AE85) & 0xFFFFFFFF
    return x


@pytest.mark.parametrize("dtype", ["ui32", "i32"])
@pytest.mark.parametrize(("shape", "valid", "rounds"), [
    ((2, 24), (2, 24), 10), ((3, 320), (3, 300), 7), ((4, 64), (3, 40), 10), ((1, 256), None, 10)])
def test_trandom_layout(tgt, dtype, shape, valid, rounds):  # type: ignore[no-untyped-def]
    # cpu: the simulator's TRandom.hpp; a5: the A5 vector code (TRandom.hpp, vintlv order)
    if tgt == "a2a3":
        return
    key = (0x01234, 0x56789)
    ctr0 = [0xFFFFFFF0, 0xFFFFFFFF, 7, 0]  # the lane adds carry into the upper words
    dst = vec(dtype, *shape, valid=None if valid is None else (Dyn(valid[0]), Dyn(valid[1])))
    pto.TRANDOM(dst, np.array(key, np.uint32), np.array(ctr0, np.uint32), Rounds=rounds)
    vr, vc = valid or shape
    nloop = -(-vc // 256)
    ctr = sum(v << (32 * i) for i, v in enumerate(ctr0))
    ref = np.zeros((vr, vc), np.uint32)
    for r in range(vr):
        for j in range(nloop):
            for c in range(256 * j, min(vc, 256 * j + 256)):
                w, lane = ((c % 256) // 64, c % 64) if tgt == "cpu" else (c % 4, (c % 256) // 4)
                ref[r, c] = _philox_ref(ctr + lane, key, rounds)[w]
            if tgt == "cpu":
                ctr += shape[1] // 4
            else:
                ctr += 64 if j < nloop - 1 else (vc - 1) % 64 + 1
    np.testing.assert_array_equal(dst.numpy()[:vr, :vc].view(np.uint32), ref)


def test_tprefetch(tgt):  # type: ignore[no-untyped-def]
    a = RNG.normal(size=(8, 16)).astype(np.float32)
    dst = vec("f32", 8, 16)
    pto.TPREFETCH(dst, GlobalTensor(a))
    np.testing.assert_array_equal(dst.numpy(), a)


# ---- communication -------------------------------------------------------------------------------

def test_comm_single_process(tgt):  # type: ignore[no-untyped-def]
    src = RNG.integers(0, 100, (8, 16)).astype(np.int32)
    dst = np.ones((8, 16), np.int32)
    C.TPUT(GlobalTensor(dst), GlobalTensor(src), vec("i32", 8, 16), atomicType="AtomicAdd")
    np.testing.assert_array_equal(dst, src + 1)
    C.TGET(GlobalTensor(dst), GlobalTensor(src), vec("i32", 8, 16))
    np.testing.assert_array_equal(dst, src)
    sig = np.zeros(1, np.int32)
    C.TNOTIFY(GlobalTensor(sig), 5, "AtomicAdd")
    C.TNOTIFY(GlobalTensor(sig), 2, "AtomicAdd")
    assert sig[0] == 7
    assert C.TTEST(GlobalTensor(sig), 7, "EQ") is True
    assert C.TTEST(GlobalTensor(sig), 8, "GE") is False
    C.TWAIT(GlobalTensor(sig), 3, "GT")
    with pytest.raises(ExecutionError, match="deadlock"):
        C.TWAIT(GlobalTensor(sig), 9, "EQ")
    with pytest.raises(IllegalInstruction, match="same element type"):
        C.TGET(GlobalTensor(np.zeros(4, np.float32)), GlobalTensor(np.zeros(4, np.int32)),
               vec("f32", 1, 8))


# ---- A2/A3 tmp contracts (PTOAS's verifier, after the PTO-ISA pages) -------------------------

def test_a2a3_tmp_contracts():  # type: ignore[no-untyped-def]
    """The scratch tiles the A2/A3 implementations need, checked on a2a3 only (a5 keeps tmp
    as an unused placeholder)."""
    E = R = S = pto  # (every entry is the eager intrinsic of its name)

    def f32(r: int, c: int, valid=None) -> Tile:  # type: ignore[no-untyped-def]
        return Tile("Vec", "f32", r, c, valid=valid)

    cases = [
        (lambda: pto.TCI(vec("i32", 1, 64), 0, f32(1, 128)),
         "at least 768 bytes for 32-bit dst element type, got 512"),
        (lambda: pto.TCI(vec("i16", 1, 64), 0, f32(1, 192)),
         "at least 1792 bytes for 16-bit dst element type, got 768"),
        (lambda: E.TREM(f32(16, 64), f32(16, 64), f32(16, 64), f32(1, 64)),
         r"tmp valid_shape\[0\] to be at least 2, got 1"),
        (lambda: E.TPRELU(f32(16, 64), f32(16, 64), f32(16, 64), vec("i8", 16, 32)),
         r"tmp shape\[0\] to be at least dst valid_shape\[0\] \+ 1 \(17\), got 16"),
        (lambda: R.TROWARGMAX(vec("ui32", 16, 8, valid=(13, 1)), f32(16, 128, (13, 127)),
                              f32(16, 8, (13, 8))),
         r"tmp valid_shape\[1\] to be at least 16 for src valid_shape\[1\] = 127, got 8"),
        (lambda: R.TCOLARGMAX(vec("ui32", 1, 256, valid=(1, 255)), f32(16, 256, (15, 255)),
                              f32(1, 8)),
         r"tmp valid_shape\[1\] to be at least 16 for src valid_shape\[1\] = 255, got 8"),
        (lambda: S.TXORS(vec("i16", 16, 64), vec("i16", 16, 64), 3, vec("i8", 1, 64)),
         r"same element type as src and dst \(i16\), got i8"),
    ]
    for tgt in ("a2a3", "a5"):
        with pto.target(tgt):
            for call, msg in cases:
                if tgt == "a2a3":
                    with pytest.raises(IllegalInstruction, match=msg):
                        call()
                else:  # (a5: no contract; the call may still fail for its own reasons)
                    try:
                        call()
                    except PtoError as e:
                        assert "tmp" not in str(e), e

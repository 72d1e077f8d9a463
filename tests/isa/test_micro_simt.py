"""SIMT (micro-isa/17-simt.md) and the micro-ops added with it: each op against a reference
written here from the page (plain numpy / Python loops over the workitems, never the code
under test), the ``.pto`` launch forms (``pto.simt_launch``, ``pto.store_vfsimt_info`` + a
call), the defined orders (stores and atomics in ascending tid), what is refused by name,
and the sanitizer and cycle model seeing SIMT ops."""

from __future__ import annotations

import numpy as np
import pytest

import ptoisa as pto
from ptoisa import dtypes as D
from ptoisa.errors import ExecutionError, PtoError, VerifyError
from ptoisa.vector.regs import Mask, Ptr, VReg


@pytest.fixture
def a5():
    m = pto.target("a5")
    yield m
    from ptoisa import memory

    memory.pop(m)


def ub(addr: int, dt: str) -> Ptr:
    return Ptr("ub", addr, D.dtype(dt))


def launch(body, dims=(32, 1, 1), *args):
    return pto.v.simt_launch(body, dims, *args)


def as_i32(x: int) -> int:
    x &= 0xFFFFFFFF
    return x - (1 << 32) if x >= 1 << 31 else x


# ---- queries ----------------------------------------------------------------------------------

def test_thread_and_lane_queries(a5):
    dx, dy, dz = 5, 3, 4  # 60 workitems: two subgroups of 32 (the second of 28)

    def body():
        v = pto.v
        return [np.asarray(f()) for f in (
            v.get_tid_x, v.get_tid_y, v.get_tid_z, v.get_laneid, v.get_lanemask_eq,
            v.get_lanemask_lt, v.get_lanemask_le, v.get_lanemask_gt, v.get_lanemask_ge,
            v.get_block_dim_x, v.get_block_dim_y, v.get_block_dim_z, v.get_block_idx_x)]
    got = launch(body, (dx, dy, dz))
    # reference: linear_tid = x + dx * (y + dy * z) (the page's formula), lanes of 32
    want: list[list[int]] = [[] for _ in got]
    for z in range(dz):
        for y in range(dy):
            for x in range(dx):
                lane = (x + dx * (y + dy * z)) % 32
                row = [x, y, z, lane, 1 << lane, (1 << lane) - 1, (1 << (lane + 1)) - 1,
                       0xFFFFFFFF & ~((1 << (lane + 1)) - 1), 0xFFFFFFFF & ~((1 << lane) - 1),
                       dx, dy, dz, 0]
                for k, r in enumerate(row):
                    want[k].append(as_i32(r))
    for k, (g, w) in enumerate(zip(got, want, strict=True)):
        assert np.broadcast_to(g, (60,)).tolist() == w, k


def test_a_simt_op_outside_a_launch_is_an_error(a5):
    with pytest.raises(PtoError, match="only inside a SIMT body"):
        pto.v.get_tid_x()
    with pytest.raises(ExecutionError, match="workitem count must be 0 .. 2048"):
        launch(lambda: None, (64, 64, 1))


# ---- memory ------------------------------------------------------------------------------------

def test_store_and_load_element_offsets_later_tid_wins(a5):
    base = ub(256, "i32")

    def body():
        t = pto.v.get_tid_x()
        pto.v.store(t * 3 + 1, base, t)          # one element each
        pto.v.store(t, base, np.asarray(t) // 4 + 40)  # four workitems an element
        return pto.v.load(base, 7 - np.asarray(t) % 8)
    got = np.asarray(launch(body, (16, 1, 1)))
    mem = np.zeros(64, np.int64)
    for t in range(16):
        mem[t] = t * 3 + 1
    for t in range(16):  # ascending tid: the last writer of an element stays
        mem[t // 4 + 40] = t
    assert got.tolist() == [int(mem[7 - t % 8]) for t in range(16)]
    out = pto.v.simt_launch(lambda: pto.v.load(base, np.arange(40, 44)), (4, 1, 1))
    assert np.asarray(out).tolist() == [3, 7, 11, 15]


def test_ldg_stg_reach_gm_and_refuse_other_memory(a5):
    gm = np.arange(32, dtype=np.float32)

    def body():
        t = pto.v.get_tid_x()
        x = pto.v.ldg(gm, t, ("cache",), ("nmfv",))
        pto.v.stg(x * np.float32(2), gm, np.asarray(t) + 16)
    launch(body, (16, 1, 1))
    assert gm[16:].tolist() == [2.0 * k for k in range(16)]
    with pytest.raises(PtoError, match="requires GM pointer"):
        launch(lambda: pto.v.ldg(ub(0, "f32"), 0), (1, 1, 1))


# ---- atomics: one workitem after another in ascending tid --------------------------------------

def test_atomics_apply_in_ascending_tid(a5):
    cell = ub(0, "i32")
    vals = np.array([5, -3, 7, 2, -9, 4, 1, 8], np.int64)
    pto.v.simt_launch(lambda: pto.v.store(100, cell, 0), (1, 1, 1))
    old = np.asarray(launch(lambda: pto.v.atomic_add(cell, vals, signed=True), (8, 1, 1)))
    acc, want = 100, []
    for v in vals:
        want.append(acc)
        acc += int(v)
    assert old.tolist() == want
    final = pto.v.simt_launch(lambda: pto.v.load(cell, 0), (1, 1, 1))
    assert int(np.asarray(final).reshape(-1)[0]) == acc


@pytest.mark.parametrize("op,signed,ref", [
    ("atomic_max", True, max), ("atomic_min", True, min),
    ("atomic_max", False, lambda a, b: a if (a & 0xFFFFFFFF) >= (b & 0xFFFFFFFF) else b),
    ("atomic_and", False, lambda a, b: as_i32(a & b)),
    ("atomic_or", False, lambda a, b: as_i32(a | b)),
    ("atomic_xor", False, lambda a, b: as_i32(a ^ b)),
    ("atomic_sub", True, lambda a, b: as_i32(a - b)),
    ("atomic_exch", True, lambda a, b: b)])
def test_integer_atomics(a5, op, signed, ref):
    cell = ub(64, "i32")
    vals = np.array([3, -1, 12, 7, -20, 0x7FFF0000, 5], np.int64)
    pto.v.simt_launch(lambda: pto.v.store(9, cell, 0), (1, 1, 1))
    kw = {"signed": True} if signed else {"unsigned": True}
    old = np.asarray(launch(lambda: getattr(pto.v, op)(cell, vals, **kw), (7, 1, 1)))
    acc, want = 9, []
    for v in vals.tolist():
        want.append(acc)
        acc = ref(acc, v)
    assert old.tolist() == want


def test_cas_and_float_atomics(a5):
    cell = ub(128, "f32")
    pto.v.simt_launch(lambda: pto.v.store(np.float32(0), cell, 0), (1, 1, 1))
    t = np.arange(4, dtype=np.float32)
    # every workitem swaps 0 -> tid + 1: only the first (tid 0) finds 0
    old = launch(lambda: pto.v.atomic_cas(cell, np.float32(0), t + 1), (4, 1, 1))
    assert np.asarray(old).tolist() == [0.0, 1.0, 1.0, 1.0]
    old = launch(lambda: pto.v.atomic_add(cell, t * np.float32(0.5)), (4, 1, 1))
    assert np.asarray(old).tolist() == [1.0, 1.0, 1.5, 2.5]
    with pytest.raises(PtoError, match="do not take signed / unsigned"):
        launch(lambda: pto.v.atomic_add(cell, t, signed=True), (4, 1, 1))
    with pytest.raises(PtoError, match="takes integers"):
        launch(lambda: pto.v.atomic_and(cell, t), (4, 1, 1))


# ---- lane collectives ------------------------------------------------------------------------

def test_vote_ballot_shuffle_redux_per_subgroup(a5):
    n = 48  # a full subgroup of 32 and one of 16
    rng = np.random.default_rng(3)
    pred = rng.random(n) < 0.5
    pred[32:] = True  # the second subgroup votes all
    val = rng.integers(-1000, 1000, n)

    def body():
        v = pto.v
        return [np.asarray(x) for x in (
            v.vote_all(pred), v.vote_any(pred), v.vote_uni(pred), v.vote_ballot(pred),
            v.shuffle_idx(val, 3), v.shuffle_up(val, 2), v.shuffle_down(val, 2),
            v.shuffle_bfly(val, 5), v.shuffle_down(val, 3, width=16),
            v.redux_add(val), v.redux_max(val, signed=True), v.redux_min(val, unsigned=True))]
    got = launch(body, (n, 1, 1))
    want: list[list[int]] = [[] for _ in got]
    for t in range(n):
        g0 = t // 32 * 32
        grp = list(range(g0, min(g0 + 32, n)))
        p, v = [bool(pred[i]) for i in grp], [int(val[i]) for i in grp]
        local = t - g0

        def src(s: int, base: int = g0, width: int = 32, t: int = t) -> int:
            # the source lane's value; out of the group (or past the launch): the own value
            return int(val[base + s]) if 0 <= s < width and base + s < n else int(val[t])
        b16 = t // 16 * 16
        row = [all(p), any(p), all(p) or not any(p),
               as_i32(sum(1 << (i - g0) for i in grp if pred[i])),
               src(3), src(local - 2), src(local + 2), src(local ^ 5),
               src(t - b16 + 3, b16, 16), sum(v), max(v), as_i32(min(x & 0xFFFFFFFF
                                                                   for x in v))]
        for k, r in enumerate(row):
            want[k].append(int(r))
    for k, (g, w) in enumerate(zip(got, want, strict=True)):
        assert g.astype(np.int64).tolist() == w, k
    with pytest.raises(PtoError, match="signed or unsigned"):
        launch(lambda: pto.v.redux_max(val), (n, 1, 1))


# ---- scalar math and conversion ------------------------------------------------------------

def test_math_against_f64_references(a5):
    x = np.array([0.25, 2.0, 9.5, 1e-3, 3.75, -2.5, 0.5, 7.0], np.float32)
    y = np.array([2.0, -1.0, 0.5, 3.0, 1.5, 2.0, -0.5, 0.0], np.float32)

    def body():
        v = pto.v
        return [v.sqrt(np.abs(x)), v.exp(x), v.log(np.abs(x)), v.pow(np.abs(x), y),
                v.absf(y), v.ceil(x), v.floor(x), v.rint(x), v.round(x),
                v.fmin(x, y), v.fmax(x, y), v.fma(x, y, x)]
    got = launch(body, (8, 1, 1))
    xd, yd = x.astype(np.float64), y.astype(np.float64)
    # references: the page's functions in f64, rounded once to f32; round: ties away from 0
    want = [np.sqrt(np.abs(xd)), np.exp(xd), np.log(np.abs(xd)), np.abs(xd) ** yd,
            np.abs(yd), np.ceil(xd), np.floor(xd), np.rint(xd),
            np.sign(xd) * np.floor(np.abs(xd) + 0.5), np.minimum(xd, yd),
            np.maximum(xd, yd), xd * yd + xd]
    for k, (g, w) in enumerate(zip(got, want, strict=True)):
        assert np.asarray(g).dtype == np.float32, k
        np.testing.assert_array_equal(np.asarray(g), w.astype(np.float32), err_msg=str(k))
    assert float(np.asarray(launch(lambda: pto.v.round(np.float32(-2.5)), (1, 1, 1)))) == -3.0


def test_convert_rounding_saturation_and_signedness(a5):
    f = np.array([2.5, -2.5, 3.7, -3.7, 1e10, -1e10, np.nan, 0.49], np.float32)
    i32 = D.dtype("i32")
    f16 = D.dtype("f16")

    def conv(x, mode, **kw):
        return np.asarray(launch(lambda: pto.v.convert(x, (mode,), **kw), (8, 1, 1)))
    for mode, fn in (("r", np.rint), ("z", np.trunc), ("f", np.floor), ("c", np.ceil),
                     ("a", lambda v: np.sign(v) * np.floor(np.abs(v) + 0.5))):
        got = conv(f, mode, sat=True, signed=True, result_type=i32)
        ref = [0 if np.isnan(v) else int(min(max(fn(float(v)), -2 ** 31), 2 ** 31 - 1))
               for v in f.astype(np.float64)]
        assert got.tolist() == ref, mode
    u = np.array([-1, 7], np.int64)  # read as unsigned: 4294967295 and 7
    got = np.asarray(launch(lambda: pto.v.convert(u, ("r",), nosat=True, unsigned=True,
                                                  result_type=D.dtype("f32")), (2, 1, 1)))
    assert got.tolist() == [np.float32(4294967295.0), 7.0]
    got = conv(np.float32(70000.0) * np.ones(8, np.float32), "r", sat=True, result_type=f16)
    assert got.tolist() == [65504.0] * 8  # sat: a finite overflow clamps to f16's max
    with pytest.raises(PtoError, match="requires sat"):
        conv(f, "z", nosat=True, signed=True, result_type=i32)


# ---- keep / resume, and the .pto launch forms ---------------------------------------------

KERNEL = """module attributes {pto.target_arch = "a5"} {
  func.func @k(%out: !pto.ptr<i32, gm>) attributes {pto.kernel} {
    %c0 = arith.constant 0 : i64
    %c4 = arith.constant 4 : i32
    %c2 = arith.constant 2 : i32
    %c1 = arith.constant 1 : i32
    %c16 = arith.constant 16 : i32
    %c1_i64 = arith.constant 1 : i64
    %c128 = arith.constant 128 : i64
    %ub = pto.castptr %c0 : i64 -> !pto.ptr<i32, ub>
    pto.simt_launch @first<<<%c4, %c2, %c1>>>(%ub) : (!pto.ptr<i32, ub>) -> ()
    pto.store_vfsimt_info %c1, %c2, %c4 : i32, i32, i32
    func.call @second(%ub) : (!pto.ptr<i32, ub>) -> ()
    pto.set_flag["PIPE_V", "PIPE_MTE3", "EVENT_ID0"]
    pto.wait_flag["PIPE_V", "PIPE_MTE3", "EVENT_ID0"]
    pto.mte_ub_gm %ub, %out, %c128 nburst(%c1_i64, %c128, %c128)
      : !pto.ptr<i32, ub>, !pto.ptr<i32, gm>, i64, i64, i64, i64
    return
  }
  func.func @first(%dst: !pto.ptr<i32, ub>) attributes {pto.simt_entry} {
    %tx = pto.get_tid_x : i32
    %ty = pto.get_tid_y : i32
    %c4 = arith.constant 4 : i32
    %c10 = arith.constant 10 : i32
    %row = arith.muli %ty, %c4 : i32
    %t = arith.addi %row, %tx : i32
    %v = arith.muli %t, %c10 : i32
    %i = arith.index_castui %t : i32 to index
    pto.store %v, %dst[%i] : !pto.ptr<i32, ub>, i32
    pto.keep %t {slot = 3 : i64} : i32
    return
  }
  func.func @second(%dst: !pto.ptr<i32, ub>) attributes {pto.simt_entry} {
    %t = pto.resume {slot = 3 : i64} : i32
    %c8 = arith.constant 8 : i32
    %c7 = arith.constant 7 : i32
    %at = arith.addi %t, %c8 : i32
    %i = arith.index_castui %at : i32 to index
    %src = arith.subi %c7, %t : i32
    %j = arith.index_castui %src : i32 to index
    %x = pto.load %dst[%j] : !pto.ptr<i32, ub> -> i32
    pto.store %x, %dst[%i] : !pto.ptr<i32, ub>, i32
    return
  }
}
"""


def test_pto_launch_forms_and_keep_resume():
    out = np.zeros(32, np.int32)
    pto.load(KERNEL, filename="k.pto", target="a5").run("k", out, target="a5")
    # reference: first writes 10 * t at t (t = x + 4 y, 8 workitems), keeps t; second reads
    # element 7 - t and writes it at 8 + t
    want = np.zeros(32, np.int64)
    for t in range(8):
        want[t] = 10 * t
    for t in range(8):
        want[8 + t] = want[7 - t]
    assert out[:16].tolist() == want[:16].tolist()


def test_divergent_control_flow_is_refused_by_name():
    text = KERNEL.replace("""    pto.keep %t {slot = 3 : i64} : i32
""", """    %c3 = arith.constant 3 : i32
    %odd = arith.cmpi sgt, %t, %c3 : i32
    scf.if %odd {
      pto.store %t, %dst[%i] : !pto.ptr<i32, ub>, i32
    }
""")
    with pytest.raises(ExecutionError, match="take different paths") as e:
        pto.load(text, filename="k.pto", target="a5").run("k", np.zeros(32, np.int32),
                                                          target="a5")
    assert e.value.loc is not None


def test_launch_rules_are_checked():
    bad = KERNEL.replace("@first<<<", "@k2<<<")
    with pytest.raises(VerifyError, match="does not define"):
        pto.load(bad, filename="k.pto", target="a5").run("k", np.zeros(32, np.int32),
                                                         target="a5")
    bad = KERNEL.replace("attributes {pto.simt_entry} {\n    %tx", "{\n    %tx")
    with pytest.raises(VerifyError, match="not marked 'pto.simt_entry'"):
        pto.load(bad, filename="k.pto", target="a5").run("k", np.zeros(32, np.int32),
                                                         target="a5")


def test_sanitizer_sees_simt_stores_and_the_cycle_model_prices_them():
    # (the flags moved before the launch: the program still synchronises by hand, and
    # nothing orders the SIMT stores before the DMA that reads them)
    sync = ('    pto.set_flag["PIPE_V", "PIPE_MTE3", "EVENT_ID0"]\n'
            '    pto.wait_flag["PIPE_V", "PIPE_MTE3", "EVENT_ID0"]\n')
    racy = KERNEL.replace(sync, "").replace("    pto.simt_launch", sync + "    pto.simt_launch")
    from ptoisa.sanitizer import SanitizerError

    assert not pto.load(KERNEL, filename="k.pto", target="a5").run(
        "k", np.zeros(32, np.int32), target="a5", sanitize=True)
    with pytest.raises(SanitizerError) as e:
        pto.load(racy, filename="k.pto", target="a5").run("k", np.zeros(32, np.int32),
                                                          target="a5", sanitize=True)
    text = str(e.value)
    assert "race" in text and "pto.store" in text and "pto.mte_ub_gm" in text
    from ptoisa.cycles import costs

    table = costs.load_table()
    for op in ("GET_TID_X", "STORE", "LOAD", "ATOMIC_ADD", "SHUFFLE_IDX", "CONVERT", "KEEP"):
        assert table[op][0].note.startswith("no upstream figure"), op


# ---- predicate interleave / bitcast, vstur, pstu, vmrgsort4 --------------------------------------

def _lanes_mask(active: np.ndarray, gran: str) -> Mask:
    step = {"b8": 1, "b16": 2, "b32": 4}[gran]
    bits = np.zeros(256, np.bool_)
    bits[::step] = active
    return Mask(bits, gran)


@pytest.mark.parametrize("gran", ["b8", "b16", "b32"])
def test_pintlv_pdintlv(a5, gran):
    n = {"b8": 256, "b16": 128, "b32": 64}[gran]
    rng = np.random.default_rng(11)
    a, b = rng.random(n) < 0.5, rng.random(n) < 0.5
    lo, hi = getattr(pto.v, f"pintlv_{gran}")(_lanes_mask(a, gran), _lanes_mask(b, gran))
    inter = [x for pair in zip(a.tolist(), b.tolist(), strict=True) for x in pair]
    assert lo.lanes().tolist() == inter[:n] and hi.lanes().tolist() == inter[n:]
    lo, hi = getattr(pto.v, f"pdintlv_{gran}")(_lanes_mask(a, gran), _lanes_mask(b, gran))
    both = a.tolist() + b.tolist()
    assert lo.lanes().tolist() == both[0::2] and hi.lanes().tolist() == both[1::2]


def test_pbitcast_keeps_the_predicate_bits(a5):
    m16 = _lanes_mask(np.arange(128) % 3 == 0, "b16")
    m32 = pto.v.pbitcast(m16, result_type=pto.vector.regs.MaskSpec("b32"))
    assert m32.gran == "b32"
    # b32 lane j is bit 4j of the register: b16 lane 2j
    assert m32.lanes().tolist() == [(2 * j) % 3 == 0 for j in range(64)]


def _bits_ref(lanes: list[bool], gran: str) -> list[bool]:
    """The 256 predicate bits of ``lanes`` at ``gran`` (05: a lane is its first byte's bit)."""
    step = {"b8": 1, "b16": 2, "b32": 4}[gran]
    out = [False] * 256
    for i, x in enumerate(lanes):
        out[step * i] = x
    return out


@pytest.mark.parametrize("gran", ["b8", "b16", "b32"])
@pytest.mark.parametrize("part", ["LOWER", "HIGHER"])
def test_ppack_punpack_at_one_granularity(a5, gran, part):
    """05 "Predicate Pack/Unpack", its loops over VL logical lanes, written out here."""
    n = {"b8": 256, "b16": 128, "b32": 64}[gran]
    a = (np.random.default_rng(5).random(n) < 0.5).tolist()
    got = pto.v.ppack(_lanes_mask(np.array(a), gran), part=part)
    want = [False] * n
    for i in range(n // 2):
        want[(0 if part == "LOWER" else n // 2) + i] = a[2 * i]
    assert got.gran == gran and got.lanes().tolist() == want
    got = pto.v.punpack(_lanes_mask(np.array(a), gran), part=part)
    want = [False] * n
    for i in range(n // 2):
        want[2 * i] = a[(0 if part == "LOWER" else n // 2) + i]
    assert got.gran == gran and got.lanes().tolist() == want


@pytest.mark.parametrize(("src", "dst"), [("b32", "b16"), ("b16", "b8")])
@pytest.mark.parametrize("part", ["LOWER", "HIGHER"])
def test_ppack_narrows_and_punpack_widens_one_step(a5, src, dst, part):
    """One granularity step: ppack keeps one bit of each adjacent pair of the 256 and packs
    them into the chosen half; punpack spreads the chosen half over the even bits. So an
    input lane keeps its index (in the chosen half of the lanes)."""
    n = {"b8": 256, "b16": 128, "b32": 64}[src]
    a = (np.random.default_rng(6).random(n) < 0.5).tolist()
    bits = _bits_ref(a, src)
    packed = [False] * 256
    for i in range(128):
        packed[(0 if part == "LOWER" else 128) + i] = bits[2 * i]
    got = pto.v.ppack(_lanes_mask(np.array(a), src), part=part,
                      result_type=pto.vector.regs.MaskSpec(dst))
    assert got.gran == dst and got.bits.tolist() == packed
    m = 2 * n  # (the b16 / b8 result's lanes: the input's n in the chosen half)
    assert got.lanes().tolist() == (a + [False] * n if part == "LOWER" else [False] * n + a)
    assert len(got.lanes()) == m
    # punpack back: each lane of the chosen half lands at the same index one step wider
    back = pto.v.punpack(got, part=part, result_type=pto.vector.regs.MaskSpec(src))
    spread = [False] * 256
    for i in range(128):
        spread[2 * i] = packed[(0 if part == "LOWER" else 128) + i]
    assert back.gran == src and back.bits.tolist() == spread
    assert back.lanes().tolist() == a


def test_ppack_punpack_rules(a5):
    with pytest.raises(PtoError, match="part to be LOWER or HIGHER"):
        pto.v.ppack(_lanes_mask(np.ones(64, bool), "b32"), part="EVEN")
    with pytest.raises(PtoError, match="does not match result mask type"):
        pto.v.ppack(_lanes_mask(np.ones(64, bool), "b32"),
                    result_type=pto.vector.regs.MaskSpec("b8"))
    with pytest.raises(PtoError, match="does not match result mask type"):
        pto.v.punpack(_lanes_mask(np.ones(64, bool), "b32"),
                      result_type=pto.vector.regs.MaskSpec("b16"))


_PACK_KERNEL = """
module attributes {pto.target_arch = "a5"} {
  func.func @k(%out: !pto.ptr<ui32, gm>) attributes {pto.kernel} {
    %c0 = arith.constant 0 : index
    %c32 = arith.constant 32 : index
    %n = arith.constant 40 : i32
    %c0_i64 = arith.constant 0 : i64
    %c1_i64 = arith.constant 1 : i64
    %c64_i64 = arith.constant 64 : i64
    %ub = pto.castptr %c0_i64 : i64 -> !pto.ptr<ui8, ub>
    %gm = pto.castptr %out : !pto.ptr<ui32, gm> -> !pto.ptr<ui8, gm>
    pto.vecscope {
      %m, %r = pto.plt_b32 %n : i32 -> !pto.mask<b32>, i32
      %p = pto.ppack %m, "HIGHER" : !pto.mask<b32> -> !pto.mask<b16>
      %u = pto.punpack %p, "HIGHER" : !pto.mask<b16> -> !pto.mask<b32>
      pto.psts %p, %ub[%c0], "NORM" : !pto.mask<b16>, !pto.ptr<ui8, ub>, index
      pto.psts %u, %ub[%c32], "NORM" : !pto.mask<b32>, !pto.ptr<ui8, ub>, index
    }
    pto.set_flag["PIPE_V", "PIPE_MTE3", "EVENT_ID0"]
    pto.wait_flag["PIPE_V", "PIPE_MTE3", "EVENT_ID0"]
    pto.mte_ub_gm %ub, %gm, %c64_i64 nburst(%c1_i64, %c64_i64, %c64_i64)
      : !pto.ptr<ui8, ub>, !pto.ptr<ui8, gm>, i64, i64, i64, i64
    pto.barrier #pto.pipe<PIPE_ALL>
    return
  }
}
"""


def test_ppack_punpack_in_a_kernel():
    out = np.zeros(16, np.uint32)
    pto.load(_PACK_KERNEL, filename="k.pto", target="a5").run("k", out, target="a5")
    # b32 lanes 0..39 (bits 0, 4, ..., 156) -> ppack keeps bits 0, 2, ...: register bits
    # 0..78 (even), moved to the higher half: bits 128 + 2i for i < 40
    packed = np.zeros(256, bool)
    packed[128 + 2 * np.arange(40)] = True
    back = np.zeros(256, bool)  # punpack HIGHER: bit 2i = bit 128 + i -> bits 4i, i < 40
    back[4 * np.arange(40)] = True
    want = np.packbits(np.concatenate([packed, back]), bitorder="little").view(np.uint32)
    assert out.tolist() == want.tolist()
    bad = _PACK_KERNEL.replace('"HIGHER" : !pto.mask<b32> -> !pto.mask<b16>',
                               '"HIGHER" : !pto.mask<b32> -> !pto.mask<b8>')
    with pytest.raises(VerifyError, match="does not match result mask type"):
        pto.load(bad, filename="k.pto", target="a5").check()


def test_vstur_appends_sqzn_bytes_at_base_plus_ar(a5):
    vals = np.arange(64, dtype=np.float32) + 1
    keep = np.arange(64) % 5 == 0  # 13 lanes
    pto.v.sprclr()
    sq = pto.v.vsqz(VReg(vals), _lanes_mask(keep, "b32"))
    base = ub(1024, "f32")
    mem = pto.v.vlds(base, 0)  # (the bytes before: poison, kept apart from the check)
    al = pto.v.vstur(pto.v.init_align(), sq, base, mode="POST_UPDATE")
    al = pto.v.vstur(al, sq, base, mode="POST_UPDATE")  # AR advanced: continues the stream
    pto.v.vstar(al, base)
    got = pto.v.vlds(base, 0)[0].data[:26]
    assert got.tolist() == vals[keep].tolist() * 2
    del mem


def test_pstu_packs_one_bit_per_lane(a5):
    base = ub(2048, "ui32")
    m1, m2 = _lanes_mask(np.arange(64) < 13, "b32"), _lanes_mask(np.arange(64) < 7, "b32")
    al, nxt = pto.v.pstu(pto.v.init_align(), m1, base)
    al, nxt = pto.v.pstu(al, m2, nxt)
    pto.v.vstas(al, nxt, 0)
    got = pto.v.vlds(ub(2048, "ui8"), 0)[0].data[:16]
    want = np.concatenate([np.packbits(np.arange(64) < n, bitorder="little") for n in (13, 7)])
    assert got.tolist() == want.tolist()
    assert nxt.addr == 2048 + 16


def test_vmrgsort4_merges_and_reports_taken_counts(a5):
    recs = [[(9.0, 1), (3.0, 2)], [(8.0, 3), (8.0, 4), (1.0, 5)], [(10.0, 6)], [(2.0, 7)]]
    srcs = []
    for i, lst in enumerate(recs):
        p = ub(4096 + 256 * i, "f32")
        raw = np.array([(s, k) for s, k in lst], dtype=[("s", np.float32), ("k", np.uint32)])
        pto.v.vsts(VReg(np.frombuffer(raw.tobytes().ljust(256, b"\0"), np.float32).copy()),
                   p, 0, _lanes_mask(np.ones(64, bool), "b32"))
        srcs.append(p)
    count = sum(len(lst) << (16 * i) for i, lst in enumerate(recs))
    dest = ub(8192, "f32")
    for exhausted, want_n in ((0, 7), (1, 1)):
        pto.v.vmrgsort4(dest, *srcs, count, 1 | 0xF << 8 | exhausted << 12)
        out = pto.v.vlds(dest, 0)[0].data[:2 * want_n].view(np.uint32)[1::2].tolist()
        # reference: merge by score descending, ties to the lower list; exhausted mode stops
        # when a list runs out (list 2, one record, after its first)
        heads, order = [0, 0, 0, 0], []
        while len(order) < want_n:
            best = max((k for k in range(4) if heads[k] < len(recs[k])),
                       key=lambda k: (recs[k][heads[k]][0], -k))
            order.append(recs[best][heads[best]][1])
            heads[best] += 1
        assert out == order
        # (exhausted: list 2's only record, the largest, goes first and ends the merge)
        assert list(pto.v.get_vms4_sr()) == ([0, 0, 1, 0] if exhausted else [2, 3, 1, 1])


def test_fb_pointers_address_the_space_ptoas_plans(a5):
    """A5's FB: Scaling tiles hold 4 KiB (pto-isa's TASSIGN table), a micro-op's fb pointer
    reaches the 248 KiB PTOAS plans (PTOPlanMemory.cpp kA5); past it, an error."""
    from ptoisa.targets import get_target
    from ptoisa.vector.regs import buffer_bytes

    t = get_target("a5")
    assert t.buffer_size("FB") == 4 * 1024 and t.pointer_window("FB") == 248 * 1024
    buffer_bytes(a5, "fb", 0x10040, 512, "the payload", role=None)[:] = 7
    assert (buffer_bytes(a5, "fb", 0x10040, 512, "x", role=None) == 7).all()
    with pytest.raises(ExecutionError, match="leave the FB buffer"):
        buffer_bytes(a5, "fb", 248 * 1024 - 32, 64, "the payload", role=None)


@pytest.mark.parametrize("body,message", [
    ("%v = pto.ldg %u[%c0] : !pto.ptr<i32, ub> -> i32", "requires GM pointer"),
    ("%v = pto.atomic_add %u64, %c1_64 signed : !pto.ptr<i64, ub>, i64 -> i64",
     "does not support i64 UB-space atomics"),
    ("%v = pto.redux_max %c1 : i32 -> i32", "requires explicit signedness"),
    ("pto.keep %c1_64 {slot = 7 : i64} : i64", "requires an even slot"),
    ("pto.keep %c1 {slot = 123 : i64} : i32", "not in \\[0, 122\\]"),
])
def test_ptoas_rules_of_simt_ops(body, message):
    text = f"""module attributes {{pto.target_arch = "a5"}} {{
  func.func @b(%u: !pto.ptr<i32, ub>, %u64: !pto.ptr<i64, ub>) attributes {{pto.simt_entry}} {{
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : i32
    %c1_64 = arith.constant 1 : i64
    {body}
    return
  }}
}}
"""
    with pytest.raises(PtoError, match=message) as e:
        pto.load(text, filename="k.pto", target="a5").check()
    assert e.value.loc is not None


def test_simt_only_ops_outside_a_simt_body_are_rejected():
    text = """module attributes {pto.target_arch = "a5"} {
  func.func @k(%g: !pto.ptr<i32, gm>) attributes {pto.kernel} {
    %c0 = arith.constant 0 : index
    %v = pto.ldg %g[%c0] : !pto.ptr<i32, gm> -> i32
    return
  }
}
"""
    with pytest.raises(VerifyError, match="must be inside a pto.simt_entry function"):
        pto.load(text, filename="k.pto", target="a5").run("k", np.zeros(4, np.int32),
                                                          target="a5")


def test_section_simt_runs_its_body_as_a_launch():
    text = """module attributes {pto.target_arch = "a5"} {
  func.func @k(%out: !pto.ptr<i32, gm>) attributes {pto.kernel} {
    %c0 = arith.constant 0 : i64
    %c1_i64 = arith.constant 1 : i64
    %c64 = arith.constant 64 : i64
    %c5 = arith.constant 5 : i32
    %ub = pto.castptr %c0 : i64 -> !pto.ptr<i32, ub>
    pto.section.simt <<<8, 2, 1>>> {
      %tx = pto.get_tid_x : i32
      %ty = pto.get_tid_y : i32
      %c8 = arith.constant 8 : i32
      %r = arith.muli %ty, %c8 : i32
      %t = arith.addi %r, %tx : i32
      %v = arith.muli %t, %c5 : i32
      %i = arith.index_castui %t : i32 to index
      pto.store %v, %ub[%i] : !pto.ptr<i32, ub>, i32
    }
    pto.set_flag["PIPE_V", "PIPE_MTE3", "EVENT_ID0"]
    pto.wait_flag["PIPE_V", "PIPE_MTE3", "EVENT_ID0"]
    pto.mte_ub_gm %ub, %out, %c64 nburst(%c1_i64, %c64, %c64)
      : !pto.ptr<i32, ub>, !pto.ptr<i32, gm>, i64, i64, i64, i64
    return
  }
}
"""
    out = np.zeros(16, np.int32)
    pto.load(text, filename="k.pto", target="a5").run("k", out, target="a5")
    # (the outer value %c5 is the same for every workitem; t = x + 8 y)
    assert out.tolist() == [5 * t for t in range(16)]


PACKED_LDG_STG = """module attributes {pto.target_arch = "a5"} {
  func.func @k(%f: !pto.ptr<vector<2xf32>, gm>, %h: !pto.ptr<vector<2xf16>, gm>,
               %s: !pto.ptr<vector<2xi16>, gm>, %q: !pto.ptr<vector<2xf8E4M3FN>, gm>) {
    %c1 = arith.constant 1 : i32
    %c4 = arith.constant 4 : i32
    pto.simt_launch @b<<<%c4, %c1, %c1>>>(%f, %h, %s, %q) : (!pto.ptr<vector<2xf32>, gm>,
        !pto.ptr<vector<2xf16>, gm>, !pto.ptr<vector<2xi16>, gm>,
        !pto.ptr<vector<2xf8E4M3FN>, gm>) -> ()
    return
  }
  func.func @b(%f: !pto.ptr<vector<2xf32>, gm>, %h: !pto.ptr<vector<2xf16>, gm>,
               %s: !pto.ptr<vector<2xi16>, gm>, %q: !pto.ptr<vector<2xf8E4M3FN>, gm>)
      attributes {pto.simt_entry} {
    %c4 = arith.constant 4 : i32
    %c8 = arith.constant 8 : i32
    %t = pto.get_tid_x : i32
    %tb = arith.addi %t, %c4 : i32
    %to = arith.addi %t, %c8 : i32
    %i = arith.index_castui %t : i32 to index
    %j = arith.index_castui %tb : i32 to index
    %o = arith.index_castui %to : i32 to index
    %fa = pto.ldg %f[%i] : !pto.ptr<vector<2xf32>, gm> -> vector<2xf32>
    %fb = pto.ldg %f[%j] : !pto.ptr<vector<2xf32>, gm> -> vector<2xf32>
    %fs = arith.mulf %fa, %fb : vector<2xf32>
    pto.stg %fs, %f[%o] : !pto.ptr<vector<2xf32>, gm>, vector<2xf32>
    %ha = pto.ldg %h[%i] : !pto.ptr<vector<2xf16>, gm> -> vector<2xf16>
    %hb = pto.ldg %h[%j] : !pto.ptr<vector<2xf16>, gm> -> vector<2xf16>
    %hs = arith.addf %ha, %hb : vector<2xf16>
    pto.stg %hs, %h[%o] : !pto.ptr<vector<2xf16>, gm>, vector<2xf16>
    %sa = pto.ldg %s[%i] : !pto.ptr<vector<2xi16>, gm> -> vector<2xi16>
    %sb = pto.ldg %s[%j] : !pto.ptr<vector<2xi16>, gm> -> vector<2xi16>
    %ss = arith.addi %sa, %sb : vector<2xi16>
    pto.stg %ss, %s[%o] : !pto.ptr<vector<2xi16>, gm>, vector<2xi16>
    %qa = pto.ldg %q[%i] : !pto.ptr<vector<2xf8E4M3FN>, gm> -> vector<2xf8E4M3FN>
    pto.stg %qa, %q[%o] : !pto.ptr<vector<2xf8E4M3FN>, gm>, vector<2xf8E4M3FN>
    return
  }
}
"""


def test_packed_ldg_stg_move_whole_pairs_and_add_lane_wise():
    import ml_dtypes

    rng = np.random.default_rng(7)
    f = rng.standard_normal(24).astype(np.float32)
    h = rng.standard_normal(24).astype(np.float16)
    s = rng.integers(-32768, 32768, 24).astype(np.int16)  # (sums wrap at 16 bits)
    q = rng.integers(0, 256, 24).astype(np.uint8).view(ml_dtypes.float8_e4m3fn)
    want = [x.copy() for x in (f, h, s, q)]
    # reference (17-simt.md: a packed value is one element of the pointer; offsets count
    # pairs; arithmetic is lane-wise in the lane type): pair 8 + t = pair t op pair 4 + t
    for t in range(4):
        a, b, o = slice(2 * t, 2 * t + 2), slice(2 * t + 8, 2 * t + 10), \
            slice(2 * t + 16, 2 * t + 18)
        want[0][o] = f[a] * f[b]
        want[1][o] = (h[a].astype(np.float64) + h[b]).astype(np.float16)
        want[2][o] = ((s[a].astype(np.int64) + s[b] + 32768) % 65536 - 32768).astype(np.int16)
        want[3][o] = q[a]
    bufs = [x.copy() for x in (f, h, s, q)]
    pto.load(PACKED_LDG_STG, filename="k.pto", target="a5").run("k", *bufs, target="a5")
    for got, w in zip(bufs, want, strict=True):
        assert got.view(np.uint8).tolist() == w.view(np.uint8).tolist()


def test_packed_atomics_update_both_lanes_in_ascending_tid(a5):
    import ml_dtypes

    h2, b2 = D.packed_vector(D.f16, 2).np, D.packed_vector(D.bf16, 2).np
    g = np.zeros(2, h2)
    g["v"] = [[1.0, 2.0], [1.0, 1.0]]
    gb = np.zeros(1, b2)
    gb["v"] = [[1.5, -3.0]]
    t = np.arange(5)
    add = np.stack([t * 0.375, -t * 0.25], axis=1).astype(np.float16)
    mn = np.stack([2.0 - t, t - 4.0], axis=1).astype(ml_dtypes.bfloat16)
    cmp = np.ones(2, np.float16)
    new = np.stack([t + 5.0, t + 6.0], axis=1).astype(np.float16)

    def body():
        return (np.asarray(pto.v.atomic_add(g[0:], add)),
                np.asarray(pto.v.atomic_min(gb, mn)),
                np.asarray(pto.v.atomic_cas(g[1:], cmp, new)))
    o_add, o_min, o_cas = launch(body, (5, 1, 1))
    # reference (17-simt.md: one location, the update lane-wise; workitems one by one in
    # ascending tid; CAS compares the whole pair)
    cur = np.array([1.0, 2.0], np.float16)
    cur_b = np.array([1.5, -3.0], ml_dtypes.bfloat16)
    cur_c = np.array([1.0, 1.0], np.float16)
    for k in range(5):
        assert o_add[k].tolist() == cur.tolist()
        cur = (cur.astype(np.float64) + add[k]).astype(np.float16)
        assert o_min[k].tolist() == cur_b.tolist()
        cur_b = np.array([min(float(a), float(b)) for a, b in zip(cur_b, mn[k], strict=True)],
                         ml_dtypes.bfloat16)
        assert o_cas[k].tolist() == cur_c.tolist()
        if cur_c.tolist() == cmp.tolist():
            cur_c = new[k].copy()
    assert g["v"].tolist() == [cur.tolist(), cur_c.tolist()]
    assert gb["v"].astype(np.float32).tolist() == [cur_b.astype(np.float32).tolist()]
    with pytest.raises(ExecutionError, match="takes no signedness"):
        launch(lambda: pto.v.atomic_add(g[0:], add, signed=True), (5, 1, 1))
    with pytest.raises(ExecutionError, match="atomic_xor takes integers"):
        launch(lambda: pto.v.atomic_xor(g[0:], add), (5, 1, 1))


PACKED_MATH = """module attributes {pto.target_arch = "a5"} {
  func.func @k(%o: !pto.ptr<i32, gm>, %w: !pto.ptr<i64, gm>, %src: !pto.ptr<vector<2xf32>, gm>) {
    %c1 = arith.constant 1 : i32
    %c3 = arith.constant 3 : i32
    pto.simt_launch @b<<<%c3, %c1, %c1>>>(%o, %w, %src) : (!pto.ptr<i32, gm>,
        !pto.ptr<i64, gm>, !pto.ptr<vector<2xf32>, gm>) -> ()
    return
  }
  func.func @b(%o: !pto.ptr<i32, gm>, %w: !pto.ptr<i64, gm>,
               %src: !pto.ptr<vector<2xf32>, gm>) attributes {pto.simt_entry} {
    %c3 = arith.constant 3 : i32
    %c6 = arith.constant 6 : i32
    %c9 = arith.constant 9 : i32
    %c12 = arith.constant 12 : i32
    %one = arith.constant 1 : i32
    %t = pto.get_tid_x : i32
    %i = arith.index_castui %t : i32 to index
    %f2 = pto.ldg %src[%i] : !pto.ptr<vector<2xf32>, gm> -> vector<2xf32>
    %h2 = pto.convert %f2 round(r) nosat : vector<2xf32> -> vector<2xf16>
    %b2 = pto.convert %f2 round(r) nosat : vector<2xf32> -> vector<2xbf16>
    %q2 = pto.convert %f2 round(r) nosat : vector<2xf32> -> vector<2xf8E4M3FN>
    %k2 = pto.convert %f2 round(a) nosat : vector<2xf32> -> !pto.hif8x2
    %q32 = pto.convert %q2 round(r) nosat : vector<2xf8E4M3FN> -> vector<2xf32>
    %k32 = pto.convert %k2 round(a) nosat : !pto.hif8x2 -> vector<2xf32>
    %ha = pto.absf %h2 : vector<2xf16> -> vector<2xf16>
    %hs = pto.sqrt %ha : vector<2xf16> -> vector<2xf16>
    %hm = pto.fma %h2, %h2, %hs : vector<2xf16>, vector<2xf16>, vector<2xf16> -> vector<2xf16>
    %bm = pto.fmax %b2, %b2 : vector<2xbf16>, vector<2xbf16> -> vector<2xbf16>
    %hn = pto.shuffle_down %hm, %one : vector<2xf16>, i32 -> vector<2xf16>
    %x0 = llvm.bitcast %hs : vector<2xf16> to i32
    %x1 = llvm.bitcast %hn : vector<2xf16> to i32
    %x2 = llvm.bitcast %bm : vector<2xbf16> to i32
    %x3 = llvm.bitcast %q32 : vector<2xf32> to i64
    %x4 = llvm.bitcast %k32 : vector<2xf32> to i64
    %j1 = arith.addi %t, %c3 : i32
    %j2 = arith.addi %t, %c6 : i32
    %j3 = arith.addi %t, %c9 : i32
    %i1 = arith.index_castui %j1 : i32 to index
    %i2 = arith.index_castui %j2 : i32 to index
    %i3 = arith.index_castui %j3 : i32 to index
    pto.stg %x0, %o[%i] : !pto.ptr<i32, gm>, i32
    pto.stg %x1, %o[%i1] : !pto.ptr<i32, gm>, i32
    pto.stg %x2, %o[%i2] : !pto.ptr<i32, gm>, i32
    pto.stg %x3, %w[%i] : !pto.ptr<i64, gm>, i64
    pto.stg %x4, %w[%i1] : !pto.ptr<i64, gm>, i64
    return
  }
}
"""


def test_packed_math_convert_and_bitcast_lane_wise():
    import ml_dtypes

    src = np.array([[2.0, 9.0], [0.3, -1.7], [5.5, 0.01]], np.float32)
    o = np.zeros(9, np.int32)
    w = np.zeros(6, np.int64)
    pto.load(PACKED_MATH, filename="k.pto", target="a5").run("k", o, w, src.reshape(-1).copy(),
                                                              target="a5")
    # reference (17-simt.md: every op lane by lane, in the lane type; llvm.bitcast puts lane 0
    # in the low bits; shuffle_down 1: the next workitem's pair, the last keeps its own)
    h = src.astype(np.float16)
    hs = np.sqrt(np.abs(h.astype(np.float64))).astype(np.float16)
    hm = (h.astype(np.float64) * h + hs).astype(np.float16)
    hn = np.concatenate([hm[1:], hm[-1:]])
    bm = src.astype(ml_dtypes.bfloat16)
    q = src.astype(ml_dtypes.float8_e4m3fn).astype(np.float32)
    k = D.hif8_decode(D.hif8_encode(src, "round")).astype(np.float32)

    def pair_bits(a, u):
        return np.ascontiguousarray(a).view(u).reshape(-1).tolist()
    assert o.view(np.uint32)[0:3].tolist() == pair_bits(hs, np.uint32)
    assert o.view(np.uint32)[3:6].tolist() == pair_bits(hn, np.uint32)
    assert o.view(np.uint32)[6:9].tolist() == pair_bits(bm, np.uint32)
    assert w.view(np.uint64)[0:3].tolist() == pair_bits(q, np.uint64)
    assert w.view(np.uint64)[3:6].tolist() == pair_bits(k, np.uint64)


def test_packed_atomic_old_value_must_stay_unused():
    # (17-simt.md on beta.1: "%old must be left unused"; PTOAS's verifier's words)
    text = """module attributes {pto.target_arch = "a5"} {
  func.func @b(%g: !pto.ptr<vector<2xf16>, gm>, %o: !pto.ptr<vector<2xf16>, gm>)
      attributes {pto.simt_entry} {
    %c0 = arith.constant 0 : index
    %v = arith.constant dense<1.000000e+00> : vector<2xf16>
    %old = pto.atomic_add %g, %v : !pto.ptr<vector<2xf16>, gm>, vector<2xf16> -> vector<2xf16>
    pto.stg %old, %o[%c0] : !pto.ptr<vector<2xf16>, gm>, vector<2xf16>
    return
  }
}
"""
    with pytest.raises(VerifyError, match="does not support using the old value result for "
                                          "packed atomics"):
        pto.load(text, filename="k.pto", target="a5").check()
    unused = text.replace("    pto.stg %old, %o[%c0] : !pto.ptr<vector<2xf16>, gm>, "
                          "vector<2xf16>\n", "")
    pto.load(unused, filename="k.pto", target="a5").check()


def test_packed_types_stay_refused_by_name_outside_the_simt_ops():
    text = """module attributes {pto.target_arch = "a5"} {
  func.func @k(%g: !pto.ptr<f32, gm>) {
    %c0 = arith.constant 0 : i64
    %c0i = arith.constant 0 : index
    %p = pto.castptr %c0 : i64 -> !pto.ptr<vector<2xf32>, ub>
    %v = pto.vlds %p[%c0i] : !pto.ptr<vector<2xf32>, ub> -> !pto.vreg<64xf32>
    return
  }
}
"""
    with pytest.raises(VerifyError, match="'pto.vlds' cannot be executed by ptoisa yet with "
                                          "the packed type vector<2xf32>"):
        pto.load(text, filename="k.pto", target="a5").check()


def test_a_mismatch_from_unwritten_on_chip_bytes_says_so(shared_dir):
    """simt-scalar-core copies out 32 fields per lane and writes 26: its golden has the other
    six 0, ptoisa's unwritten UB bytes are the poison pattern. The verdict stays a mismatch
    (what a device's UB held is no semantics) and the reason says where it comes from; the
    26 written fields all match (with unwritten bytes 0, compare.py passes)."""
    from pathlib import Path

    root = Path(shared_dir) / "corpus" / "ptoas-main" / "test" / "vpto" / "cases" / "micro-op"
    d = root / "simt" / "simt-scalar-core"
    if not d.is_dir():
        pytest.skip("../shared is absent")
    from ptoisa import memory
    from ptoisa.suite import goldens

    res = goldens.do_vpto(d, root)
    (o,) = res[0].outcomes
    assert o.verdict == "mismatch"
    assert "never wrote, 0xff in ptoisa; with them 0 compare.py passes" in o.reason
    assert memory.POISON_BYTE == 0xFF

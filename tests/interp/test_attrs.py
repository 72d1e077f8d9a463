"""Instruction attributes of ``.pto`` programs reach the instruction (issue 9, item 2).

Every instruction whose modes PTOAS writes as attributes (``rmode``, ``sat_mode``, ``cmpMode``,
``upperOrLower``...) runs eagerly and as a ``.pto`` program over every value of each mode, and
the two must give the same bits; an attribute that maps nowhere is a located error. Inputs are
chosen so the modes matter (ties at .5, values beyond the saturation range, NaN, -0).
A sweep over the registry runs every other instruction with modes that a generic set-up of
f32 tiles can run, with the mode written as an attribute of its C++ name, and names the rest
with the reason.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from typing import Any

import ml_dtypes
import numpy as np
import pytest

from ptoisa import load
from ptoisa.dtypes import dtype
from ptoisa.enums import CmpMode, RoundMode, SaturationMode
from ptoisa.errors import PtoError, VerifyError
from ptoisa.interp import bridge
from ptoisa.isa.registry import REGISTRY, ptoas_attr_tables, ptoas_attrs
from ptoisa.memory import pop
from ptoisa.memory import target as make_target
from ptoisa.tile import Tile


def tile_t(dt: str, rows: int, cols: int) -> str:
    return (f"!pto.tile_buf<loc=vec, dtype={dt}, rows={rows}, cols={cols}, v_row={rows}, "
            f"v_col={cols}, blayout=row_major, slayout=none_box, fractal=512, pad=0>")


Tiles = dict[str, tuple[str, int, int]]


def program(tiles: Tiles, loads: list[str], stores: list[str], body: str) -> str:
    """A kernel that loads ``loads`` from GM, runs ``body`` (``{name}`` is a tile's type) and
    stores ``stores``; one ``!pto.ptr`` argument per loaded or stored tile, in that order."""
    gm = loads + [s for s in stores if s not in loads]
    args = ", ".join(f"%g_{n}: !pto.ptr<{tiles[n][0]}>" for n in gm)
    lines = ["%c0 = arith.constant 0 : index", "%c1 = arith.constant 1 : index"]
    for n, (dt, r, c) in tiles.items():
        lines.append(f"%{n} = pto.alloc_tile : {tile_t(dt, r, c)}")
    for n in gm:
        dt, r, c = tiles[n]
        tv, pv = f"!pto.tensor_view<?x?x{dt}>", f"!pto.partition_tensor_view<{r}x{c}x{dt}>"
        lines += [f"%r_{n} = arith.constant {r} : index", f"%k_{n} = arith.constant {c} : index",
                  f"%v_{n} = pto.make_tensor_view %g_{n}, shape = [%r_{n}, %k_{n}], "
                  f"strides = [%k_{n}, %c1] : {tv}",
                  f"%p_{n} = pto.partition_view %v_{n}, offsets = [%c0, %c0], "
                  f"sizes = [%r_{n}, %k_{n}] : {tv} -> {pv}"]
    for n in loads:
        dt, r, c = tiles[n]
        lines.append(f"pto.tload ins(%p_{n} : !pto.partition_tensor_view<{r}x{c}x{dt}>) "
                     f"outs(%{n} : {tile_t(dt, r, c)})")
    lines += body.format(**{n: tile_t(*t) for n, t in tiles.items()}).strip().splitlines()
    for n in stores:
        dt, r, c = tiles[n]
        lines.append(f"pto.tstore ins(%{n} : {tile_t(dt, r, c)}) "
                     f"outs(%p_{n} : !pto.partition_tensor_view<{r}x{c}x{dt}>)")
    inner = "\n    ".join(lines)
    return f"module {{\n  func.func @k({args}) {{\n    {inner}\n    return\n  }}\n}}\n"


def run_both(target: str, tiles: Tiles, inputs: dict[str, np.ndarray], stores: list[str],
             body: str, eager: Callable[[dict[str, Tile]], Any]) -> bool:
    """Run ``body`` as a ``.pto`` program and ``eager`` on tiles holding the same inputs; the
    stored tiles must hold the same bytes, or both runs must fail (then False)."""
    # stored tiles start as zeros in both runs: bytes an instruction leaves alone compare too
    inputs = {n: np.zeros((r, c), dtype(dt).np) for n, (dt, r, c) in tiles.items()
              if n in stores} | inputs
    loads = list(inputs)
    gm = {n: inputs[n].copy() for n in loads}
    m = make_target(target)
    try:
        ts = {n: Tile("Vec", dt, r, c) for n, (dt, r, c) in tiles.items()}
        for n, a in inputs.items():
            ts[n].load_numpy(a)
        try:
            eager(ts)
            want: list[np.ndarray] | str = [ts[n].numpy() for n in stores]
        except PtoError as e:
            want = type(e).__name__
    finally:
        pop(m)
    text = program(tiles, loads, stores, body)
    try:
        prog = load(text, target=target, filename="attrs.pto")
        prog.k(*[gm[n] for n in loads])
        got: list[np.ndarray] | str = [gm[n] for n in stores]
    except PtoError as e:
        got = type(e).__name__
        if isinstance(want, list):
            raise AssertionError(f"eager ran, .pto raised {e}\n{text}") from None
    if isinstance(want, str) or isinstance(got, str):
        assert isinstance(want, str) and isinstance(got, str), (target, want, got, text)
        return False
    for n, w, g in zip(stores, want, got, strict=True):
        wb = np.ascontiguousarray(w).view(np.uint8)
        gb = np.ascontiguousarray(g).view(np.uint8)
        if not np.array_equal(wb, gb):
            at = np.argwhere(wb != gb)[0] if wb.shape == gb.shape else "shape"
            raise AssertionError(f"{target}: {n} differs at byte {at}: eager {w.reshape(-1)[:8]}"
                                 f", .pto {g.reshape(-1)[:8]}\n{text}")
    return True


TARGETS = ["cpu", "a2a3", "a5"]

# ---- TCVT: rmode x sat_mode ------------------------------------------------------------------

#: PTOAS RoundMode spellings (PTOAttrs.td) -> the C++ mode PTOAS lowers them to
RMODES = {"NONE": RoundMode.CAST_NONE, "RINT": RoundMode.CAST_RINT,
          "ROUND": RoundMode.CAST_ROUND, "FLOOR": RoundMode.CAST_FLOOR,
          "CEIL": RoundMode.CAST_CEIL, "TRUNC": RoundMode.CAST_TRUNC,
          "ODD": RoundMode.CAST_ODD, "CAST_RINT": RoundMode.CAST_RINT}
SATS = {None: None, "ON": SaturationMode.ON, "OFF": SaturationMode.OFF}


def _f32_inputs() -> np.ndarray:
    special = [0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 1 + 2 ** -8, 1 + 3 * 2 ** -8, -(1 + 2 ** -8),
               1 + 2 ** -11, 1 + 3 * 2 ** -11, 1 + 2 ** -8 + 2 ** -20, 127.5, 128.5, -128.5,
               255.5, 32767.5, -32768.5, 40000.0, -40000.0, 65504.0, 65520.0, 70000.0, 1e10,
               -1e10, 2.0 ** 31, -(2.0 ** 31) - 256, 3e38, np.inf, -np.inf, np.nan, -0.0,
               0.0, 2.0 ** 24 + 2, 1e-8, -1e-8, 6e-5, 0.1, -0.7, 3.7]
    rng = np.random.default_rng(9)
    rest = rng.standard_normal(64 - len(special)) * rng.choice([1, 100, 1e5], 64 - len(special))
    return np.concatenate([special, rest]).astype(np.float32).reshape(2, 32)


def _i32_inputs() -> np.ndarray:
    v = [0, 1, -1, 127, 128, -129, 255, 256, 32767, 32768, -32769, 65535, 65536,
         2 ** 24 + 1, 2 ** 24 + 3, -(2 ** 24) - 1, 2 ** 31 - 1, -(2 ** 31), 2 ** 30 + 65,
         16777217, 33554435, -33554435, 1000001, 7]
    return np.resize(np.array(v, np.int64), 64).astype(np.int32).reshape(2, 32)


CVT_PAIRS = [("f32", "bf16"), ("f32", "f16"), ("f32", "i32"), ("f32", "i16"), ("f32", "i8"),
             ("f32", "f32"), ("i32", "f32"), ("i32", "f16"), ("i32", "i16"), ("f16", "i8")]


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("pair", CVT_PAIRS, ids=lambda p: "->".join(p))
def test_tcvt_modes_match_eager(target: str, pair: tuple[str, str]) -> None:
    s, d = pair
    with np.errstate(over="ignore"):  # f16 inputs: the f32 values past 65504 become inf
        x = _i32_inputs() if s == "i32" else _f32_inputs().astype(dtype(s).np)
    tiles = {"src": (s, 2, 32), "dst": (d, 2, 32)}
    ran = 0
    for rm, mode in RMODES.items():
        for sat_text, sat in SATS.items():
            attrs = f"rmode = #pto<round_mode {rm}>"
            if sat_text:
                attrs += f", sat_mode = #pto<saturation_mode {sat_text}>"
            body = "pto.tcvt ins(%src {{" + attrs + "}} : {src}) outs(%dst : {dst})"

            def eager(ts: dict[str, Tile], mode: RoundMode = mode,
                      sat: SaturationMode | None = sat) -> None:
                REGISTRY["TCVT"](ts["dst"], ts["src"], mode, *([sat] if sat else []))
            ran += run_both(target, tiles, {"src": x}, ["dst"], body, eager)
    illegal = {"a2a3": [("f32", "i8")], "a5": [("f32", "i8"), ("i32", "f16")]}
    assert ran == (0 if pair in illegal.get(target, []) else len(RMODES) * len(SATS))


def test_tcvt_issue_examples() -> None:
    """The three wrong answers of the issue, against hand-computed values."""
    def cvt(x: np.ndarray, d: str, attrs: str, target: str = "cpu") -> np.ndarray:
        tiles = {"src": ("f32", 1, 8), "dst": (d, 1, 8)}
        body = "pto.tcvt ins(%src {{" + attrs + "}} : {src}) outs(%dst : {dst})"
        y = np.zeros((1, 8), dtype(d).np)
        load(program(tiles, ["src"], ["dst"], body), target=target).k(x, y)
        return y

    x = np.full((1, 8), 1 + 2 ** -8, np.float32)
    assert cvt(x, "bf16", "rmode = #pto<round_mode ROUND>")[0, 0] == ml_dtypes.bfloat16(1.0078125)
    assert cvt(x, "bf16", "rmode = #pto<round_mode RINT>")[0, 0] == 1.0
    x = np.array([[2.5, -2.5, 2.7, -2.7, 0.5, -0.5, 3.5, 1.2]], np.float32)
    want = {"RINT": [2, -2, 3, -3, 0, 0, 4, 1], "ROUND": [3, -3, 3, -3, 1, -1, 4, 1],
            "FLOOR": [2, -3, 2, -3, 0, -1, 3, 1], "CEIL": [3, -2, 3, -2, 1, 0, 4, 2],
            "TRUNC": [2, -2, 2, -2, 0, 0, 3, 1]}
    for rm, w in want.items():
        assert cvt(x, "i32", f"rmode = #pto<round_mode {rm}>").tolist() == [w], rm
    x = np.full((1, 8), 40000.0, np.float32)
    off = "rmode = #pto<round_mode RINT>, sat_mode = #pto<saturation_mode OFF>"
    on = "rmode = #pto<round_mode RINT>, sat_mode = #pto<saturation_mode ON>"
    assert cvt(x, "i16", off, "a5")[0, 0] == 40000 - 65536  # wraps
    assert cvt(x, "i16", on, "a5")[0, 0] == 32767


# ---- the other instructions whose modes PTOAS writes as attributes ---------------------------

CMP_SPELLINGS = {"eq": CmpMode.EQ, "ne": CmpMode.NE, "lt": CmpMode.LT, "le": CmpMode.LE,
                 "gt": CmpMode.GT, "ge": CmpMode.GE, "less_than": CmpMode.LT,
                 "greater_equal": CmpMode.GE}


def _cmp_inputs() -> tuple[np.ndarray, np.ndarray]:
    a = np.array([1, 2, 3, np.nan, -0.0, 0.0, 5, -5] * 4, np.float32).reshape(1, 32)
    b = np.array([1, 3, 2, 1, 0.0, -0.0, np.nan, -5] * 4, np.float32).reshape(1, 32)
    return a, b


@pytest.mark.parametrize("target", TARGETS)
def test_tcmp_tcmps_cmp_mode(target: str) -> None:
    a, b = _cmp_inputs()
    packed = "ui32" if target == "a5" else "ui8"  # the predicate tile's type on each target
    tiles = {"a": ("f32", 1, 32), "b": ("f32", 1, 32), "dst": (packed, 1, 32)}
    ran = 0
    for text, mode in CMP_SPELLINGS.items():
        body = "pto.tcmp ins(%a, %b {{cmpMode = #pto<cmp " + text + ">}} : {a}, {b}) " \
               "outs(%dst : {dst})"
        ran += run_both(target, tiles, {"a": a, "b": b}, ["dst"], body,
                        lambda ts, mode=mode: REGISTRY["TCMP"](ts["dst"], ts["a"], ts["b"], mode))
        body = ("%s = arith.constant 2.0 : f32\n"
                "pto.tcmps ins(%a, %s {{cmpMode = #pto<cmp " + text + ">}} : {a}, f32) "
                "outs(%dst : {dst})")
        ran += run_both(target, tiles, {"a": a}, ["dst"], body,
                        lambda ts, mode=mode: REGISTRY["TCMPS"](ts["dst"], ts["a"],
                                                                np.float32(2.0), mode))
    assert ran == 2 * len(CMP_SPELLINGS)


@pytest.mark.parametrize("target", TARGETS)
def test_ttri_tci_tcolsum_trandom(target: str) -> None:
    tri = {"dst": ("f32", 8, 16)}
    for ul in (0, 1):
        for diag in (-2, 0, 3):
            body = (f"%d = arith.constant {diag} : i32\n"
                    f"pto.ttri ins(%d {{{{upperOrLower = {ul} : i32}}}} : i32) "
                    "outs(%dst : {dst})")
            assert run_both(target, tri, {}, ["dst"], body,
                     lambda ts, ul=ul, diag=diag: REGISTRY["TTRI"](ts["dst"], diag,
                                                                   isUpperOrLower=ul))
    ci = {"dst": ("i32", 1, 32)}
    for desc in (False, True):
        body = ("%s = arith.constant 5 : i32\n"
                f"pto.tci ins(%s {{{{descending = {str(desc).lower()}}}}} : i32) "
                "outs(%dst : {dst})")
        assert run_both(target, ci, {}, ["dst"], body,
                 lambda ts, desc=desc: REGISTRY["TCI"](ts["dst"], np.int32(5), descending=desc))
    x = (np.arange(8 * 16, dtype=np.float32).reshape(8, 16) * 1.1e-3 + 1e4).astype(np.float32)
    cs = {"src": ("f32", 8, 16), "tmp": ("f32", 8, 16), "dst": ("f32", 1, 16)}
    for binary in (False, True):
        body = (f"pto.tcolsum ins(%src, %tmp {{{{isBinary = {str(binary).lower()}}}}} : "
                "{src}, {tmp}) outs(%dst : {dst})")
        assert run_both(target, cs, {"src": x}, ["dst"], body,
                 lambda ts, binary=binary: REGISTRY["TCOLSUM"](ts["dst"], ts["src"], ts["tmp"],
                                                               binary))
    rnd = {"dst": ("i32", 4, 16)}
    for rounds in (7, 10):
        body = "\n".join(f"%w{i} = arith.constant {v} : i32" for i, v in
                         enumerate([11, 22, 3, 4, 5, 6]))
        body += ("\npto.trandom ins(%w0, %w1, %w2, %w3, %w4, %w5 {{rounds = " + str(rounds)
                 + " : i32}} : i32, i32, i32, i32, i32, i32) outs(%dst : {dst})")
        assert target == "a2a3" or run_both(target, rnd, {}, ["dst"], body,
                 lambda ts, rounds=rounds: REGISTRY["TRANDOM"](
                     ts["dst"], (np.uint32(11), np.uint32(22)),
                     tuple(np.uint32(v) for v in (3, 4, 5, 6)), Rounds=rounds))


@pytest.mark.parametrize("target", TARGETS)
def test_tgather_mask_pattern(target: str) -> None:
    from ptoisa.isa.irregular import MaskPattern

    x = np.arange(8 * 32, dtype=np.float32).reshape(8, 32)
    tiles = {"src": ("f32", 8, 32), "dst": ("f32", 8, 32)}
    for p in MaskPattern:
        body = ("pto.tgather ins(%src, {{maskPattern = #pto.mask_pattern<" + p.name + ">}} : "
                "{src}) outs(%dst : {dst})")
        assert run_both(target, tiles, {"src": x}, ["dst"], body,
                 lambda ts, p=p: REGISTRY["TGATHER"](ts["dst"], ts["src"], maskPattern=p))


@pytest.mark.parametrize("target", ["a2a3", "a5"])
@pytest.mark.parametrize(("axis", "pattern"), [("row", "P0101"), ("col", "P0101"),
                                               ("col", "P0100"), ("row", "P1000")])
def test_tscatter_mask_pattern_axis(target: str, axis: str, pattern: str) -> None:
    """PTO_IR_manual pto.tscatter: the axis is the string after the types; "row":
    dst[i, F j + pos] = src[i, j], "col": dst[F i + pos, j] = src[i, j], the rest zero
    (F, pos: P0101 -> 2, 0; P0100 -> 4, 2; P1000 -> 4, 3). A2/A3 has the mask form too
    (pto-isa's a2a3 TScatter.hpp, the manual's lowering note)."""
    f, pos = {"P0101": (2, 0), "P0100": (4, 2), "P1000": (4, 3)}[pattern]
    x = np.arange(1, 1 + 2 * 16, dtype=np.float32).reshape(2, 16)
    shape = (2, 16 * f) if axis == "row" else (2 * f, 16)
    want = np.zeros(shape, np.float32)
    if axis == "row":
        want[:, pos::f] = x
    else:
        want[pos::f, :] = x
    tiles = {"src": ("f32", 2, 16), "dst": ("f32", *shape)}
    body = ("pto.tscatter ins(%src, {{maskPattern = #pto.mask_pattern<" + pattern + ">}} : "
            "{src}, \"" + axis + "\") outs(%dst : {dst})")
    dst = np.full(shape, 7, np.float32)
    load(program(tiles, ["src"], ["dst"], body), target=target).k(x, dst)
    np.testing.assert_array_equal(dst, want)


@pytest.mark.parametrize("axis", ["row", "col"])
def test_tgather_mask_axis_string(axis: str) -> None:
    """pto.tgather's mask form writes its axis after the types (PTO_IR_manual): "row" keeps
    the pattern's columns of each row, "col" the pattern's rows (P0101: even positions),
    packed from dst's first element."""
    x = np.arange(4 * 16, dtype=np.float32).reshape(4, 16)
    want = x[:, 0::2] if axis == "row" else x[0::2, :]
    shape = want.shape
    tiles = {"src": ("f32", 4, 16), "dst": ("f32", *shape)}
    body = ("pto.tgather ins(%src, {{maskPattern = #pto.mask_pattern<P0101>}} : {src}, \""
            + axis + "\") outs(%dst : {dst})")
    dst = np.zeros(shape, np.float32)
    load(program(tiles, ["src"], ["dst"], body), target="a5").k(x, dst)
    np.testing.assert_array_equal(dst, want)


def test_tgather_index_form_of_one_byte_data_on_a5_only() -> None:
    """TGATHER.md implementation checks: A5's index gather takes 1-byte data, A2/A3's 2 or
    4 bytes; dst[i, j] = src_flat[idx[i, j]]."""
    x = np.arange(64, dtype=np.int8).reshape(2, 32)
    idx = np.random.default_rng(3).integers(0, 64, (2, 32)).astype(np.int32)
    tiles = {"src": ("i8", 2, 32), "idx": ("i32", 2, 32), "tmp": ("i32", 2, 32),
             "dst": ("i8", 2, 32)}
    body = "pto.tgather ins(%src, %idx, %tmp : {src}, {idx}, {tmp}) outs(%dst : {dst})"
    text = program(tiles, ["src", "idx"], ["dst"], body)
    dst = np.zeros((2, 32), np.int8)
    load(text, target="a5").k(x, idx, dst)
    np.testing.assert_array_equal(dst, x.reshape(-1)[idx])
    with pytest.raises(PtoError, match="i8 is not supported on a2a3"):
        load(text, target="a2a3")


def test_tscatter_axis_must_be_row_or_col() -> None:
    tiles = {"src": ("f32", 2, 16), "dst": ("f32", 2, 32)}
    body = ("pto.tscatter ins(%src, {{maskPattern = #pto.mask_pattern<P0101>}} : {src}, "
            "\"diag\") outs(%dst : {dst})")
    with pytest.raises(PtoError, match="diag"):
        load(program(tiles, ["src"], ["dst"], body), target="a5")


# ---- TMRGSORT: exhausted, both format2 spellings (item 10) ------------------------------------

def _sorted_records(values: list[float], base: int) -> np.ndarray:
    """(f32 value, u32 index) records sorted by value, descending, as a 1-row f32 tile."""
    v = np.array(sorted(values, reverse=True), np.float32)
    idx = (np.arange(len(v)) + base).astype(np.uint32).view(np.float32)
    return np.stack([v, idx], axis=1).reshape(1, -1)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("tmp_in_outs", [False, True])
def test_tmrgsort_exhausted_and_format2(target: str, tmp_in_outs: bool) -> None:
    from ptoisa.isa.irregular import MrgSortExecutedNumList

    s0 = _sorted_records([9, 7, 5, 3, 1, 0.5, 0.25, 0.125] * 4, 0)
    s1 = _sorted_records([8, 8, 6, 2] * 8, 100)
    tiles = {"s0": ("f32", 1, 64), "s1": ("f32", 1, 64), "tmp": ("f32", 1, 128),
             "dst": ("f32", 1, 128)}
    for ex in (False, True):
        a = "{{exhausted = " + str(ex).lower() + "}}"
        if tmp_in_outs:
            op = (f"pto.tmrgsort ins(%s0, %s1 {a} : {{s0}}, {{s1}}) "
                  "outs(%dst, %tmp, %e : {dst}, {tmp}, vector<4xi16>)")
        else:
            op = (f"pto.tmrgsort ins(%s0, %s1, %tmp {a} : {{s0}}, {{s1}}, {{tmp}}) "
                  "outs(%dst, %e : {dst}, vector<4xi16>)")
        body = "%e = arith.constant dense<0> : vector<4xi16>\n" + op

        def eager(ts: dict[str, Tile], ex: bool = ex) -> None:
            REGISTRY["TMRGSORT"](ts["dst"], MrgSortExecutedNumList(), ts["tmp"], ts["s0"],
                                 ts["s1"], exhausted=ex)
        assert run_both(target, tiles, {"s0": s0, "s1": s1}, ["dst"], body, eager)


def test_tmrgsort_format2_tmp_in_outs_merges() -> None:
    """The manual's format2 (tmp in outs) against a hand-sorted merge."""
    s0 = _sorted_records([4, 3, 2, 1] * 16, 0)
    s1 = _sorted_records([3.5, 2.5] * 32, 100)
    tiles = {"s0": ("f32", 1, 128), "s1": ("f32", 1, 128), "tmp": ("f32", 1, 256),
             "dst": ("f32", 1, 256)}
    body = ("%e = arith.constant dense<0> : vector<4xi16>\n"
            "pto.tmrgsort ins(%s0, %s1 {{exhausted = false}} : {s0}, {s1}) "
            "outs(%dst, %tmp, %e : {dst}, {tmp}, vector<4xi16>)")
    dst = np.zeros((1, 256), np.float32)
    load(program(tiles, ["s0", "s1"], ["dst"], body)).k(s0, s1, dst)
    values = dst.reshape(-1, 2)[:, 0]
    want = sorted([4, 3, 2, 1] * 16 + [3.5, 2.5] * 32, reverse=True)
    assert values.tolist() == want


@pytest.mark.parametrize("n", [2, 3])
def test_tmrgsort_format2_no_tmp_merges(n: int) -> None:
    """PTOAS's implicit-tmp format2 (``no_tmp`` after the sources: PTOAS allocates tmp),
    2 and 3 lists, against a hand-sorted merge; the executed counts are every list's size."""
    lists = [[4, 3, 2, 1] * 16, [3.5, 2.5] * 32, [5, 0.5] * 32][:n]
    srcs = [f"s{k}" for k in range(n)]
    tiles = {**{s: ("f32", 1, 128) for s in srcs}, "dst": ("f32", 1, 128 * n)}
    names = ", ".join(f"%{s}" for s in srcs)
    types = ", ".join(f"{{{s}}}" for s in srcs)
    body = (f"pto.tmrgsort ins({names} no_tmp {{{{exhausted = false}}}} : {types}) "
            "outs(%dst, %e : {dst}, vector<4xi16>)")
    text = program(tiles, srcs, ["dst"], body).replace(
        "%g_dst: !pto.ptr<f32>", "%g_dst: !pto.ptr<f32>, %e: vector<4xi16>")
    dst = np.zeros((1, 128 * n), np.float32)
    ex = np.zeros(4, np.int16)
    load(text).k(*(_sorted_records(v, 100 * k) for k, v in enumerate(lists)), dst, ex)
    assert dst.reshape(-1, 2)[:, 0].tolist() == sorted(sum(lists, []), reverse=True)
    assert ex.tolist() == [64] * n + [0] * (4 - n)


def test_tmrgsort_no_tmp_needs_an_explicit_tmp_under_level3() -> None:
    from ptoisa.interp.verify import diagnose
    from ptoisa.text import parse

    tiles = {"s0": ("f32", 1, 64), "s1": ("f32", 1, 64), "dst": ("f32", 1, 128)}
    body = ("%e = arith.constant dense<0> : vector<4xi16>\n"
            "pto.tmrgsort ins(%s0, %s1 no_tmp {{exhausted = false}} : {s0}, {s1}) "
            "outs(%dst, %e : {dst}, vector<4xi16>)")
    errs = diagnose(parse(program(tiles, ["s0", "s1"], ["dst"], body)), "a2a3", level="level3")
    assert any("requires explicit tmp for tmrgsort format2 when PlanMemory is skipped"
               in e.message for e in errs), errs


# ---- the mechanism: every attribute maps or is a located error -------------------------------

def test_every_ptoas_attribute_maps_onto_its_instruction() -> None:
    for op, table in ptoas_attr_tables().items():
        ins = bridge.instr_of(op)
        assert ins is not None, op
        names = {p.name for p in ins.params} | {o.name for o in ins.operands}
        for key, spec in table.items():
            if spec.to is not None:
                assert spec.to in names, (op, key, spec.to)
            else:
                assert spec.why, (op, key)


def _mode_names(ins: Any) -> set[str]:
    return {p.name for p in ins.params} | {o.name for o in ins.operands if o.enum}


#: the (instruction, mode) pairs that PTOAS writes as attributes and the tests above run both
#: eagerly and as .pto over every value
RUN_HERE = {("TCVT", "mode"), ("TCVT", "satMode"), ("TCMP", "cmpMode"), ("TCMPS", "cmpMode"),
            ("TTRI", "isUpperOrLower"), ("TCI", "descending"), ("TCOLSUM", "isBinary"),
            ("TRANDOM", "Rounds"), ("TGATHER", "maskPattern"), ("TMRGSORT", "exhausted"),
            ("TSTORE", "atomicType"),
            ("TSCATTER", "maskPattern"), ("TSCATTER", "ScatterType"),
            ("TGATHER", "gatherType")}

#: mapped attributes whose instructions need cube, GM, A5-only or pipe set-ups: the tests
#: below check that the written value reaches the binding
#: (test_mapped_attributes_elsewhere_reach_the_registry, test_corpus_attributes_reach_the_binding);
#: tests/isa/ runs their semantics eagerly
RUN_ELSEWHERE = {("TSTORE", "reluPreMode"), ("TMOV", "mode"),
                 ("TMOV", "reluMode"), ("THISTOGRAM", "byte"), ("MSCATTER", "Atomic"),
                 ("MSCATTER", "Oob"), ("TGATHER", "cmpMode"), ("TGATHER", "offset"),
                 ("TQUANT", "quant_type"), ("TPUSH", "Split"), ("TPOP", "Split"),
                 # pto.tquant.mx (A5): grpAxis, interleave run in tests/interp/test_ptoas_ops.py,
                 # quantScaleAlg, storeMode checked on the binding there
                 ("TQUANT", "grp_axis"), ("TQUANT", "interleave"), ("TQUANT", "scale_alg"),
                 ("TQUANT", "store_mode"),
                 # pto.tmov's grpAxis (the MX exponent repack) runs in test_mx_scale_moves.py
                 ("TMOV", "grp_axis"),
                 # single-core modes run here; a dual mode is refused by name when it runs
                 ("TEXTRACT", "accToVecMode"), ("TINSERT", "accToVecMode"),
                 ("TEXTRACT_FP", "accToVecMode"), ("TINSERT_FP", "accToVecMode"),
                 ("TEXTRACT_FP", "reluMode"), ("TINSERT_FP", "reluMode"),
                 ("TSTORE_FP", "atomicType"), ("TSTORE_FP", "reluPreMode"),
                 ("TFREE", "Split"), ("MGATHER", "CMode"), ("MGATHER", "Mode"),
                 ("MSCATTER", "Mode"), ("MSCATTER", "Conflict"), ("TPRINT", "Format"),
                 ("TEXTRACT", "reluMode"), ("TINSERT", "reluMode"),
                 # split2 / split4 move the plain insert's data: tests/interp/test_ptoas_parity.py
                 ("TINSERT", "tinsertMode"),
                 # pto.comm.*: every value run across 2 ranks in tests/ranks/test_ptoas_comm.py
                 ("TPUT", "atomicType"), ("TNOTIFY", "op"), ("TWAIT", "cmp"), ("TTEST", "cmp"),
                 ("TREDUCE", "op"),
                 # VMI's older op names write num_groups for group: tests/isa/test_vmi.py
                 # (the integer-cast case folder: group_reduce_addi, group_broadcast)
                 *((n, "group") for n in ("VMI_VLOAD", "VMI_VSTORE", "VMI_VCADD", "VMI_VCMAX",
                                          "VMI_VCMIN", "VMI_VBRC")),
                 *((n, "Phase") for n in ("TMATMUL", "TMATMUL_ACC", "TMATMUL_BIAS", "TGEMV",
                                          "TGEMV_ACC", "TGEMV_BIAS", "TMATMUL_MX", "TGEMV_MX",
                                          "TMATMUL_MX_HIF4")),
                 ("TSTORE", "Phase"),  # the unit flag: tests/sanitizer/test_unit_flag.py
                 # (tests/isa/test_reduce_expand_ops.py: test_row_expand_src1col*)
                 *((f"TROWEXPAND{op}", "src1Col") for op in ("ADD", "SUB", "MUL", "DIV", "MAX",
                                                              "MIN", "EXPDIF")),
                 ("TROWEXPANDDIV", "PrecisionType")}


def test_every_mode_is_accounted_for() -> None:
    """Each instruction mode PTOAS can write is run both ways here or named in RUN_ELSEWHERE;
    a mode PTOAS has no attribute for keeps the registry default in .pto, which is the eager
    default too (nothing to drop)."""
    mapped = {(bridge.instr_of(op).name, spec.to)  # type: ignore[union-attr]
              for op, table in ptoas_attr_tables().items() for spec in table.values() if spec.to}
    assert mapped == RUN_HERE | RUN_ELSEWHERE
    for name, mode in mapped:
        assert mode in {p.name for p in REGISTRY[name].params} | \
            {o.name for o in REGISTRY[name].operands}


def _one_op(op_line: str, extra: str = "") -> str:
    return program({"src": ("f32", 1, 16), "dst": ("f32", 1, 16)}, ["src"], ["dst"],
                   extra + op_line)


@pytest.mark.parametrize("line,match", [
    ("pto.tadd ins(%src, %src {{foo = 1 : i32}} : {src}, {src}) outs(%dst : {dst})",
     r"attrs.pto:\d+:\d+: error: pto.tadd: unknown attribute 'foo'"),
    ("pto.tcvt ins(%src {{rmode = #pto<round_mode SIDEWAYS>}} : {src}) outs(%dst : {dst})",
     r"attrs.pto:\d+:\d+: error: pto.tcvt: attribute 'rmode': 'SIDEWAYS' is not a RoundMode "
     r"\(allowed: NONE, RINT, ROUND, FLOOR, CEIL, TRUNC, ODD\)"),
    ("pto.tcvt ins(%src {{rmode = #pto<round_mode RINT>, sat = 1}} : {src}) outs(%dst : {dst})",
     r"unknown attribute 'sat' \(PTOAS attributes of pto.tcvt: rmode, sat_mode\)"),
])
def test_unmapped_attributes_are_located_errors(line: str, match: str) -> None:
    with pytest.raises(VerifyError, match=match):
        load(_one_op(line), filename="attrs.pto")


def test_attributes_without_counterpart() -> None:
    """tload's pad_mode has no TLOAD counterpart: rejected; its default init_out_buffer=false
    changes nothing: accepted; tstore's stPhase orders pipes only: accepted."""
    tiles = {"src": ("f32", 1, 16)}
    text = program(tiles, ["src"], ["src"], "")
    bad = text.replace("outs(%src :", "outs(%src {pad_mode = #pto<pad_mode PadValue>} :", 1)
    with pytest.raises(VerifyError, match=r"x.pto:\d+:\d+: .*attribute 'pad_mode' = .* is not "
                                          r"supported: PTOAS lowers pto.tload"):
        load(bad, filename="x.pto")
    load(text.replace("outs(%src :", "outs(%src {init_out_buffer = false} :", 1))
    with pytest.raises(VerifyError, match="init_out_buffer"):
        load(text.replace("outs(%src :", "outs(%src {init_out_buffer = true} :", 1))
    ok = text.replace("pto.tstore ins(%src", "pto.tstore ins(%src {stPhase = #pto<st_phase final>}")
    x = np.arange(16, dtype=np.float32).reshape(1, 16)
    y = x.copy()
    load(ok).k(y)
    assert np.array_equal(y, x)


def test_mapped_attributes_elsewhere_reach_the_registry() -> None:
    """The RUN_ELSEWHERE attributes bind to the registry values (checked on the binding)."""
    from ptoisa.enums import AtomicType, ReluPreMode
    from ptoisa.isa.irregular import HistByte
    from ptoisa.text import parse

    u16 = tile_t("ui16", 8, 32)
    idx = tile_t("ui8", 8, 1).replace("row_major, slayout", "col_major, slayout")
    hist = tile_t("ui32", 8, 256)
    text = f"""module {{
  func.func @k(%p: !pto.ptr<f32>) {{
    %s = pto.alloc_tile : {u16}
    %i = pto.alloc_tile : {idx}
    %d = pto.alloc_tile : {hist}
    pto.thistogram ins(%s, %i : {u16}, {idx}) outs(%d : {hist})
    pto.thistogram ins(%s, %i : {u16}, {idx}) outs(%d : {hist}) {{isMSB = false}}
    pto.thistogram ins(%s, %i : {u16}, {idx}) outs(%d : {hist}) {{byte = 3 : i32}}
    return
  }}
}}
"""
    ops = [o for o in parse(text, "h.pto").ops[0].walk() if o.name == "pto.thistogram"]
    got = [bridge.bind(o, REGISTRY["THISTOGRAM"]).params["byte"] for o in ops]
    # PTOAS default isMSB = true, unless the byte attribute is written (then it stands)
    assert got == [HistByte.BYTE_1, HistByte.BYTE_0, HistByte.BYTE_3]
    tiles = {"src": ("f32", 1, 16)}
    text = program(tiles, ["src"], ["src"], "").replace(
        "pto.tstore ins(%src", "pto.tstore ins(%src {atomicType = #pto<atomic_type atomic_add>,"
        " reluPreMode = #pto<relu_pre_mode normal_relu>}")
    op = next(o for o in parse(text, "s.pto").ops[0].walk() if o.name == "pto.tstore")
    p = bridge.bind(op, REGISTRY["TSTORE"]).params
    assert p["atomicType"] is AtomicType.AtomicAdd and p["reluPreMode"] is ReluPreMode.NormalRelu
    from ptoisa.isa.irregular import ScatterAtomicOp, ScatterOOB

    f32, i32 = tile_t("f32", 1, 16), tile_t("i32", 1, 16)
    text = f"""module {{
  func.func @k(%m: memref<1x16xf32>) {{
    %s = pto.alloc_tile : {f32}
    %i = pto.alloc_tile : {i32}
    %t = pto.alloc_tile : {f32}
    %d = pto.alloc_tile : {f32}
    %c = pto.alloc_tile : {i32}
    %k = arith.constant 1.0 : f32
    pto.mscatter ins(%s, %i : {f32}, {i32}) outs(%m : memref<1x16xf32>)
    pto.mscatter ins(%s, %i : {f32}, {i32}) outs(%m : memref<1x16xf32>) {{scatterAtomicOp = #pto<scatter_atomic_op add>, scatterOob = #pto<scatter_oob skip>}}
    pto.tgather ins(%s, %k, %t {{cmpMode = #pto<cmp gt>}} : {f32}, f32, {f32}) outs(%d, %c : {f32}, {i32})
    return
  }}
}}
"""  # noqa: E501
    ops = [o for o in parse(text, "m.pto").ops[0].walk() if o.name in ("pto.mscatter",
                                                                        "pto.tgather")]
    p0, p1, p2 = (bridge.bind(o, bridge.instr_of(o.name)).params for o in ops)  # type: ignore
    assert (p0["Atomic"], p0["Oob"]) == (ScatterAtomicOp.NoOp, ScatterOOB.Undefined)
    assert (p1["Atomic"], p1["Oob"]) == (ScatterAtomicOp.Add, ScatterOOB.Skip)
    assert p2["cmpMode"] is CmpMode.GT


def test_enum_values_all_spellable() -> None:
    """Every member of each enum an attribute maps to can be written in PTOAS's spelling (the
    member name, or without the common prefix)."""
    for op, table in ptoas_attr_tables().items():
        ins = bridge.instr_of(op)
        assert ins is not None
        for spec in table.values():
            p = next((p for p in ins.params if p.name == spec.to), None)
            o = next((o for o in ins.operands if o.name == spec.to), None)
            cls = (p.type if p and isinstance(p.type, type) else None) or (o.enum if o else None)
            if cls is None or not issubclass(cls, enum.Enum):
                continue
            for member in cls:
                short = member.name.split("_", 1)[1] if cls is RoundMode else member.name
                assert bridge._to_enum(cls, short, None, "k") is member  # type: ignore[arg-type]


# ---- the registry sweep: every instruction with modes ----------------------------------------

def _mode_values(ins: Any) -> dict[str, tuple[str, list[Any]]]:
    """Each mode of ``instr`` with the values it takes: template parameters of an enum or bool
    type and enum operands ("param" / "operand")."""
    out: dict[str, tuple[str, list[Any]]] = {}
    for p in ins.params:
        cls = p.type if isinstance(p.type, type) else type(p.default)
        if issubclass(cls, enum.Enum):
            out[p.name] = ("param", list(cls))
        elif isinstance(p.default, bool):
            out[p.name] = ("param", [False, True])
    for o in ins.operands:
        if o.enum is not None:
            out[o.name] = ("operand", list(o.enum))
    return out


def _attr_text(v: Any) -> str:
    if isinstance(v, bool):
        return str(v).lower()
    return f"#pto<mode {v.name}>"


_SWEEP_X = np.array([[2.5, -2.5, 0.5, -0.0, 0.0, 1e-3, 3.7, -1.2, np.nan, np.inf, -np.inf, 100.0,
                      7.0, 0.3333, 1e30, -1e-30] * 2, np.linspace(-4, 4, 32)], np.float32)


def _sweep(ins: Any, target: str) -> int:
    """Run every value of every mode of a tile/scalar instruction eagerly and as .pto with the
    mode written as an attribute of the same name; the number of runs that ran."""
    tiles: Tiles = {}
    in_names: list[str] = []
    types: list[str] = []
    outs: list[str] = []
    eager_args: list[Any] = []
    consts = ""
    for o in ins.operands:
        if o.optional or o.enum is not None:
            continue
        scalar = o.kind == "scalar" or (o.kind == "any" and "scalar" in o.name)
        if scalar:
            consts += f"%{o.name} = arith.constant 2.5 : f32\n"
            in_names.append(f"%{o.name}")
            types.append("f32")
            eager_args.append(("scalar", o.name))
            continue
        if o.kind not in ("tile", "any"):
            return 0
        tiles[o.name] = ("f32", 2, 32)
        eager_args.append(("tile", o.name))
        if o.role == "out":
            outs.append(o.name)
        else:
            in_names.append(f"%{o.name}")
            types.append("{" + o.name + "}")
    inputs = {n: _SWEEP_X for n in tiles if n not in outs}
    ran = 0
    for mode, (where, values) in _mode_values(ins).items():
        for v in values:
            ins_text = ", ".join(in_names) + " {{" + mode + " = " + _attr_text(v) + "}}"
            body = (consts.replace("{", "{{") + f"pto.{ins.mnemonic} ins({ins_text} : "
                    f"{', '.join(types)}) outs(" + ", ".join(f"%{n} : {{{n}}}" for n in outs)
                    + ")")

            def eager(ts: dict[str, Tile], mode: str = mode, v: Any = v,
                      where: str = where) -> None:
                args = [ts[n] if k == "tile" else np.float32(2.5) for k, n in eager_args]
                if where == "operand":
                    args.append(v)
                ins(*args, **({mode: v} if where == "param" else {}))
            ran += run_both(target, tiles, inputs, outs, body, eager)
    return ran


#: instructions with modes that the sweep runs (f32 tiles, a scalar 2.5)
SWEPT = {"TEXP", "TLOG", "TSQRT", "TRSQRT", "TRECIP", "TDIV", "TFMOD", "TREM", "TPOW",
         "TFMODS", "TREMS", "TDIVS", "TPOWS"}

#: instructions with modes the sweep cannot set up, and why; the PTOAS-mapped ones among them
#: are run in RUN_HERE / RUN_ELSEWHERE
NOT_SWEPT = {
    **{n: "GM / multi-rank communication" for n in
       ("TPUT", "TGET_ASYNC", "TPUT_ASYNC", "TNOTIFY", "TWAIT", "TTEST", "TBROADCAST",
        "TREDUCE", "MGATHER", "MSCATTER", "COMM_TGATHER", "COMM_TSCATTER")},
    **{n: "cube (Left/Right/Acc tiles), fix-pipe or img2col state" for n in
       ("TMATMUL", "TMATMUL_ACC", "TMATMUL_BIAS", "TGEMV", "TGEMV_ACC", "TGEMV_BIAS",
        "TMATMUL_MX", "TGEMV_MX", "TMATMUL_MX_HIF4", "SETFMATRIX", "SET_IMG2COL_PADDING",
        "SET_IMG2COL_RPT", "TIMG2COL", "SETTF32MODE", "SETHF32MODE", "TEXTRACT",
        "TEXTRACT_FP", "TINSERT", "TINSERT_FP", "TSTORE", "TSTORE_FP", "TMOV", "TMOV_FP",
        "SET_QUANT_SCALAR", "TQUANT")},
    **{n: "pipes and synchronisation" for n in ("TPUSH", "TPOP", "TFREE", "TALLOC", "TSYNC",
                                                 "SYNCALL", "SET_FLAG", "WAIT_FLAG",
                                                 "PIPE_BARRIER", "SYNC_SET", "SYNC_WAIT",
                                                 "GET_BUF", "RLS_BUF")},
    "TPRINT": "prints; its Format has no value set",
    "TFILLPAD": "PadVal is a value, not a mode",
    "TROWEXPANDDIV": "PrecisionType is a C++ spelling string here, not a mode",
    **{f"TROWEXPAND{op}": "src1Col is a column count, not a mode (run eagerly and as .pto "
       "in tests/isa/test_reduce_expand_ops.py)"
       for op in ("ADD", "SUB", "MUL", "MAX", "MIN", "EXPDIF")},
    "TCOLEXPANDDIV": "PrecisionType is a C++ spelling string here, not a mode",
    "THISTOGRAM": "ui16/ui32 sources with filter tiles (A5 only)",
    "TSCATTER": "index tiles",
}


@pytest.mark.parametrize("target", TARGETS)
def test_registry_sweep_every_instruction_with_modes(target: str) -> None:
    ran = {name for name in SWEPT if _sweep(REGISTRY[name], target)}
    assert ran == SWEPT
    here = {n for n, _ in RUN_HERE}
    # (micro-ops' parameters, dist and pattern tokens, are tested in tests/isa/test_micro.py)
    with_modes = {n for n, i in REGISTRY.items() if i.dialect == "tile" and (
        _mode_values(i) or any(p.name for p in i.params))}
    unaccounted = with_modes - SWEPT - here - set(NOT_SWEPT)
    assert not unaccounted, unaccounted


@pytest.mark.parametrize("target", TARGETS)
def test_tstore_atomic_type(target: str) -> None:
    """tstore {atomicType} adds into GM as the eager TSTORE<AtomicAdd> does (or stores)."""
    from ptoisa.enums import AtomicType
    from ptoisa.tensor import GlobalTensor

    x = np.array([[1.5, -2.0, 0.25, 3.0] * 4], np.float32)
    y0 = np.array([[10.0, 20.0, -30.0, 0.5] * 4], np.float32)
    tiles = {"src": ("f32", 1, 16), "dst": ("f32", 1, 16)}
    base = program(tiles, ["src"], ["dst"], "pto.tmov ins(%src : {src}) outs(%dst : {dst})")
    for atomic, text in ((AtomicType.AtomicNone, "atomic_none"),
                         (AtomicType.AtomicAdd, "atomic_add")):
        m = make_target(target)
        try:
            t = Tile("Vec", "f32", 1, 16).load_numpy(x)
            want = y0.copy()
            REGISTRY["TSTORE"](GlobalTensor(want), t, atomicType=atomic)
        finally:
            pop(m)
        prog_text = base.replace(
            "pto.tstore ins(%dst", "pto.tstore ins(%dst {atomicType = #pto<atomic_type "
            + text + ">}")
        got = y0.copy()
        load(prog_text, target=target).k(x, got)
        assert np.array_equal(got.view(np.uint32), want.view(np.uint32)), (target, text)
        assert np.array_equal(want, x + y0 if atomic is AtomicType.AtomicAdd else x)


def _norm_value(v: Any) -> str:
    s = v.name if isinstance(v, enum.Enum) else str(v)
    return s.replace("_", "").lower()


def test_corpus_attributes_reach_the_binding() -> None:
    """Every mapped attribute the PTOAS corpus writes (tmov accToVecMode/reluPreMode, tgather
    offset, tquant quant_type, tpush/tpop/tfree split, ...) arrives in the binding with the
    written value."""
    from interp_corpus import FILES, SKIP_REASON

    from ptoisa.text import parse

    if not FILES:
        pytest.skip(SKIP_REASON)
    seen: set[tuple[str, str]] = set()
    for path in FILES:
        try:
            module = parse(path.read_text(), str(path))
        except PtoError:
            continue
        for op in (o for top in module.ops for o in top.walk()):
            table = ptoas_attrs(op.name)
            ins = bridge.instr_of(op.name)
            if not table or ins is None:
                continue
            try:
                b = bridge.bind(op, ins)
            except PtoError:
                continue  # files PTOAS rejects
            for key, a in op.attributes.items:
                spec = table.get(key)
                if spec is None or spec.to is None:
                    continue
                raw = bridge.attr_value(a)
                want = spec.values.get(raw.lower() if isinstance(raw, str) else raw, raw)
                names = [o.name for o in ins.operands]
                got = (b.params[spec.to] if spec.to in b.params
                       else b.values[names.index(spec.to)].value)  # type: ignore[union-attr]
                assert _norm_value(got).endswith(_norm_value(want)), (path, key, got, want)
                seen.add((ins.name, spec.to))
    assert {("TCVT", "mode"), ("TMOV", "mode"), ("TMOV", "reluMode"), ("TGATHER", "offset"),
            ("TQUANT", "quant_type"), ("TPUSH", "Split"), ("TSTORE", "reluPreMode")} <= seen


def test_august_attributes_reach_the_binding() -> None:
    """The attributes of the August 2026 PTOAS tree: mgather/mscatter ``coalesce`` (and
    ``gatherOob`` / ``scatterConflict``), the matmul family's ``accPhase``, tprint's
    ``printFormat``, textract / tinsert ``reluPreMode`` and single-core ``accToVecMode``,
    set_quant_* ``id`` (no counterpart: accepted, nothing bound)."""
    from ptoisa.enums import AccPhase, PrintFormat, ReluPreMode
    from ptoisa.isa.irregular import Coalesce, GatherOOB, ScatterConflict
    from ptoisa.text import parse

    f32, i32 = tile_t("f32", 1, 16), tile_t("i32", 1, 16)
    pv = "!pto.partition_tensor_view<1x16xf32>"
    text = f"""module {{
  func.func @k(%m: {pv}) {{
    %s = pto.alloc_tile : {f32}
    %i = pto.alloc_tile : {i32}
    pto.mgather ins(%m, %i : {pv}, {i32}) outs(%s : {f32}) {{coalesce = #pto<coalesce elem>}}
    pto.mgather ins(%m, %i : {pv}, {i32}) outs(%s : {f32}) {{coalesce = #pto<coalesce row>, gatherOob = #pto<gather_oob zero>}}
    pto.mscatter ins(%s, %i : {f32}, {i32}) outs(%m : {pv}) {{coalesce = #pto<coalesce elem>, scatterConflict = #pto<scatter_conflict last>}}
    pto.tprint ins(%s : {f32}) {{printFormat = 2 : i32}}
    return
  }}
}}
"""  # noqa: E501
    ops = [o for o in parse(text, "m.pto").ops[0].walk()
           if o.name in ("pto.mgather", "pto.mscatter", "pto.tprint")]
    p = [bridge.bind(o, bridge.instr_of(o.name)).params for o in ops]  # type: ignore[arg-type]
    assert (p[0]["CMode"], p[0]["Mode"]) == (Coalesce.Elem, GatherOOB.Undefined)
    assert (p[1]["CMode"], p[1]["Mode"]) == (Coalesce.Row, GatherOOB.Zero)
    assert (p[2]["Mode"], p[2]["Conflict"]) == (Coalesce.Elem, ScatterConflict.Last)
    assert p[3]["Format"] is PrintFormat.Width10_Precision6
    left = tile_t("f32", 16, 16).replace("loc=vec", "loc=left").replace(
        "row_major, slayout=none_box", "col_major, slayout=row_major")
    right = tile_t("f32", 16, 16).replace("loc=vec", "loc=right").replace(
        "slayout=none_box", "slayout=col_major")
    acc = tile_t("f32", 16, 16).replace("loc=vec", "loc=acc").replace(
        "row_major, slayout=none_box, fractal=512", "col_major, slayout=row_major, fractal=1024")
    text = f"""module {{
  func.func @k() {{
    %c0 = arith.constant 0 : index
    %a = pto.alloc_tile : {left}
    %b = pto.alloc_tile : {right}
    %c = pto.alloc_tile : {acc}
    %v = pto.alloc_tile : {tile_t("f32", 16, 16)}
    pto.tmatmul ins(%a, %b : {left}, {right}) outs(%c : {acc}) {{accPhase = #pto<acc_phase partial>}}
    pto.textract ins(%c, %c0, %c0 : {acc}, index, index) outs(%v : {tile_t("f32", 16, 16)}) {{reluPreMode = #pto<relu_pre_mode normal_relu>, accToVecMode = #pto.acc_to_vec_mode<single_mode_vec0>}}
    return
  }}
}}
"""  # noqa: E501
    ops = [o for o in parse(text, "c.pto").ops[0].walk()
           if o.name in ("pto.tmatmul", "pto.textract")]
    assert bridge.bind(ops[0], REGISTRY["TMATMUL"]).params["Phase"] is AccPhase.Partial
    assert bridge.bind(ops[1], REGISTRY["TEXTRACT"]).params["reluMode"] is \
        ReluPreMode.NormalRelu
    dual = text.replace("single_mode_vec0", "dual_mode_split_m")
    prog = load(dual, target="a5")  # PTOAS takes it; ptoisa refuses it by name when it runs
    with pytest.raises(PtoError, match="'pto.textract' cannot be executed by ptoisa yet: "
                                       "accToVecMode dual_mode_split_m"):
        prog.k()
    sq = program({"src": ("f32", 1, 16)}, ["src"], ["src"], "").replace(
        "pto.tstore", "%q = arith.constant 2.0 : f32\n    pto.set_quant_scalar(%q : f32) "
        "{id = 1}\n    pto.tstore", 1)
    # an id must name a pipe initialised in the same function (PTOAS, fixpipe-tpipe design
    # 7.2): this function has none
    with pytest.raises(PtoError, match="expects 'id' = 1 to match a frontend or lowered "
                                       "initialize_pipe op in the same function"):
        load(sq)
    load(sq.replace(" {id = 1}", ""))  # without an id: accepted


def test_mgather_coalesce_elem_runs_as_pto() -> None:
    """coalesce = elem gathers table_flat[idx[i, j]] (the manual's elem mode); row mode
    gathers table rows."""
    f32, i32 = tile_t("f32", 2, 8), tile_t("i32", 2, 8)
    pv, iv = ("!pto.partition_tensor_view<4x8xf32>", "!pto.partition_tensor_view<2x8xi32>")
    text = f"""module {{
  func.func @k(%tab: !pto.ptr<f32>, %ix: !pto.ptr<i32>, %out: !pto.ptr<f32>) {{
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c4 = arith.constant 4 : index
    %c8 = arith.constant 8 : index
    %tv = pto.make_tensor_view %tab, shape = [%c4, %c8], strides = [%c8, %c1] : !pto.tensor_view<?x?xf32>
    %iv = pto.make_tensor_view %ix, shape = [%c2, %c8], strides = [%c8, %c1] : !pto.tensor_view<?x?xi32>
    %ov = pto.make_tensor_view %out, shape = [%c2, %c8], strides = [%c8, %c1] : !pto.tensor_view<?x?xf32>
    %tp = pto.partition_view %tv, offsets = [%c0, %c0], sizes = [%c4, %c8] : !pto.tensor_view<?x?xf32> -> {pv}
    %ip = pto.partition_view %iv, offsets = [%c0, %c0], sizes = [%c2, %c8] : !pto.tensor_view<?x?xi32> -> {iv}
    %op = pto.partition_view %ov, offsets = [%c0, %c0], sizes = [%c2, %c8] : !pto.tensor_view<?x?xf32> -> !pto.partition_tensor_view<2x8xf32>
    %i = pto.alloc_tile : {i32}
    %d = pto.alloc_tile : {f32}
    pto.tload ins(%ip : {iv}) outs(%i : {i32})
    pto.mgather ins(%tp, %i : {pv}, {i32}) outs(%d : {f32}) {{coalesce = #pto<coalesce elem>}}
    pto.tstore ins(%d : {f32}) outs(%op : !pto.partition_tensor_view<2x8xf32>)
    return
  }}
}}
"""  # noqa: E501
    tab = np.arange(32, dtype=np.float32).reshape(4, 8) * 1.5
    idx = np.array([[31, 0, 5, 7, 8, 9, 30, 2], [1, 1, 1, 3, 17, 18, 19, 20]], np.int32)
    out = np.zeros((2, 8), np.float32)
    load(text, target="a5").k(tab, idx, out)
    np.testing.assert_array_equal(out, tab.reshape(-1)[idx])

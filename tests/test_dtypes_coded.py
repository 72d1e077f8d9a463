"""The coded 8-bit element types: HiF8 (Huawei HiFloat8) and s4 (int4b_t), their codecs, and
the TCVT / TSTORE_FP paths that use them. References: hand-decoded HiF8 codes from the format
table, and a brute-force nearest-value search over all 256 codes."""

from __future__ import annotations

import numpy as np
import pytest

import ptoisa as pto
from ptoisa import GlobalTensor, Tile, TileType
from ptoisa import dtypes as D

# code -> value, decoded by hand: sign | dot | exponent (sign-magnitude, implicit 1) | mantissa
HAND = {0x00: 0.0, 0x08: 1.0, 0x09: 1.125, 0x0F: 1.875,      # dot 0001: 2^0 x 1.mmm
        0x10: 2.0, 0x18: 0.5,                                # dot 001: 2^+-1
        0x20: 4.0, 0x28: 8.0, 0x30: 0.25,                    # dot 01: exp 00 +2, 01 +3, 10 -2
        0x40: 16.0, 0x41: 20.0, 0x50: 1 / 16,                # dot 10: +-4 .. +-7
        0x60: 256.0, 0x6E: 32768.0, 0x7E: 2.0 ** -15, 0x7F: 1.5 * 2.0 ** -15,  # dot 11
        0x01: 2.0 ** -22, 0x07: 2.0 ** -16,                  # denormals 0000 mmm: 2^(m-23)
        0x88: -1.0, 0xEE: -32768.0}


def test_hif8_decode_hand_values():
    for code, v in HAND.items():
        assert D.hif8_decode(np.uint8(code)) == np.float32(v), hex(code)
    assert np.isnan(D.hif8_decode(0x80))
    assert D.hif8_decode(0x6F) == np.inf and D.hif8_decode(0xEF) == -np.inf
    assert D.dtype("hifloat8") is D.hif8 and D.dtype("int4x2") is D.s4
    assert D.dtype(np.uint8) is D.u8  # the coded types do not capture numpy's uint8


def _nearest_ref(x: float, mode: str) -> int:
    """Brute force over the finite codes (ties: rint -> even code, round -> away)."""
    best = None
    for c in range(256):
        v = float(D.HIF8_VALUES[c])
        if not np.isfinite(v) or (v == 0 and c != 0):
            continue
        key = (abs(v - x), (c & 1) if mode == "rint" else -abs(v))
        if best is None or key < best[0]:
            best = (key, c)
    return best[1]


def test_hif8_encode_is_correctly_rounded():
    rng = np.random.default_rng(1)
    xs = np.concatenate([rng.standard_normal(300) * 10.0 ** rng.integers(-6, 5, 300),
                         D.HIF8_VALUES[np.isfinite(D.HIF8_VALUES)],
                         [1.0625, 1.1875, 2.0 ** -16 * 1.5, 3 * 2.0 ** -23, 36000.0]])
    xs = xs[np.abs(xs) <= 32768]
    for mode in ("rint", "round"):
        got = D.hif8_encode(xs, mode)
        want = np.array([_nearest_ref(float(x), mode) for x in xs], np.uint8)
        np.testing.assert_array_equal(D.hif8_decode(got), D.hif8_decode(want))


def test_hif8_encode_specials_and_overflow():
    x = np.array([np.nan, np.inf, -np.inf, 40959.0, 40960.0, 1e6, -1e6, 0.0, -0.0, 1e-30])
    got = D.hif8_encode(x)
    assert list(got) == [0x80, 0x6F, 0xEF, 0x6E, 0x6E, 0x6F, 0xEF, 0x00, 0x00, 0x00]
    sat = D.hif8_encode(x, saturate=True)
    assert list(sat[1:3]) == [0x6E, 0xEE] and list(sat[5:7]) == [0x6E, 0xEE]
    assert D.hif8_encode(np.array([40960.0]), "round")[0] == 0x6F  # tie away -> inf


def _tile(dt, rows=4, cols=32):
    return Tile(TileType.Vec, dt, rows, cols)


@pytest.mark.parametrize("tgt", ["cpu", "a5"])
def test_tcvt_f32_to_hif8(tgt):
    m = pto.target(tgt)
    try:
        vals = np.random.default_rng(2).standard_normal((4, 32)).astype(np.float32) * 50
        src, dst = _tile("f32"), _tile("hif8")
        src.write(vals)
        pto.TCVT(dst, src, "CAST_RINT", "ON")
        want = [_nearest_ref(float(v), "rint") for v in vals.reshape(-1)]
        np.testing.assert_array_equal(D.hif8_decode(dst.numpy()).reshape(-1),
                                      D.hif8_decode(np.array(want, np.uint8)))
    finally:
        pto.memory.pop(m)


def test_tcvt_s4_paths_and_legality():
    m = pto.target("a2a3")
    try:
        src, dst, back = _tile("f16"), _tile("s4"), _tile("f16")
        vals = np.linspace(-12, 12, 128, dtype=np.float16).reshape(4, 32)
        src.write(vals)
        pto.TCVT(dst, src, "CAST_RINT", "OFF")
        want = np.clip(np.rint(vals.astype(np.float64)), -8, 7)
        np.testing.assert_array_equal(dst.numpy(), (want.astype(np.int64) & 0xF))
        pto.TCVT(back, dst, "CAST_RINT")
        np.testing.assert_array_equal(back.numpy(), want.astype(np.float16))
        with pytest.raises(pto.UnsupportedType,
                           match=r"src f32 -> dst s4 is not supported on a2a3"):
            pto.TCVT(dst, _tile("f32"), "CAST_RINT")
    finally:
        pto.memory.pop(m)


def test_tstore_fp_f32_to_hif8_on_a5():
    m = pto.target("a5")
    try:
        acc = Tile(TileType.Acc, "f32", 16, 16, blayout=pto.BLayout.ColMajor,
                   slayout=pto.SLayout.RowMajor, fractal=1024)
        vals = (np.arange(256, dtype=np.float32).reshape(16, 16) - 128) * 0.37
        acc.write(vals)
        fp = Tile(TileType.Scaling, "ui64", 1, 16)
        # vector quant word: 19-bit scale 2.0 at bits [13..31] (exponent 128, mantissa 0)
        fp.write(np.full((1, 16), np.uint64(128 << 10) << np.uint64(13), np.uint64))
        out = np.zeros(256, np.uint8)
        pto.TSTORE_FP(GlobalTensor(out, (1, 1, 1, 16, 16), dtype="hif8"), acc, fp)
        want = [_nearest_ref(float(v) * 2.0, "rint") for v in vals.reshape(-1)]
        np.testing.assert_array_equal(D.hif8_decode(out), D.hif8_decode(np.array(want, np.uint8)))
    finally:
        pto.memory.pop(m)


def test_tcvt_hif8_and_fp4_sources_widen_on_a5():
    # the TCVT page's A5 conversions: H8 -> FP32, FP4_E1M2X2 / FP4_E2M1X2 -> BF16
    m = pto.target("a5")
    try:
        codes = sorted(HAND)
        src, dst = _tile("hif8", 1, 32), _tile("f32", 1, 32)
        src.write(np.array([codes + [0x80] + [0x00] * (31 - len(codes))], np.uint8))
        pto.TCVT(dst, src, "CAST_RINT")
        got = dst.numpy()[0]
        np.testing.assert_array_equal(got[:len(codes)], np.float32([HAND[c] for c in codes]))
        assert np.isnan(got[len(codes)])
        # fp4 codes 0..15 (sign bit 8): e2m1 0 .5 1 1.5 2 3 4 6; e1m2 0 .25 .5 .75 1 1.25 1.5 1.75
        mag = {"f4E2M1x2": [0, 0.5, 1, 1.5, 2, 3, 4, 6],
               "f4E1M2x2": [0, 0.25, 0.5, 0.75, 1, 1.25, 1.5, 1.75]}
        for name, vals in mag.items():
            q, b = _tile(name, 1, 64), _tile("bf16", 1, 64)
            q.write((np.arange(64, dtype=np.uint8) % 16).reshape(1, 64))
            pto.TCVT(b, q, "CAST_RINT")
            want = np.float32(vals + [-v for v in vals])
            np.testing.assert_array_equal(b.numpy()[0, :16].astype(np.float32), want)
    finally:
        pto.memory.pop(m)

"""Index and mask generators (TCI, TTRI), TPREFETCH, THISTOGRAM and TRANDOM (Philox4x32)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...enums import Pipe, TileType
from ...errors import PtoError, RuntimeCheckError
from ...memory import Machine
from ...tile import Tile, TileSpec
from ..registry import Opnd, Param, PipeForms, Sig, instr, locs, same_dtype
from ..rules import row_major_nd
from ..spelling import Attr, Form, Ptoas
from .common import _tci_rows, _wrap_to
from .enums import HistByte


def _tci_tmp_a2a3(sig: Sig) -> None:
    """A2/A3's vector TCI path needs 768 bytes of scratch for a 32-bit dst, 1792 for a 16-bit
    one (PTOAS's verifier, after the PTO-ISA tmp contract)."""
    t, d = sig["tmp"], sig["dst"]
    if not isinstance(t, TileSpec) or not isinstance(d, TileSpec):
        return
    need = 1792 if d.dtype.itemsize == 2 else 768
    if t.rows * t.cols * t.dtype.itemsize < need:
        raise sig.fail(f"expects A2/A3 tmp capacity to be at least {need} bytes for "
                       f"{8 * d.dtype.itemsize}-bit dst element type, got "
                       f"{t.rows * t.cols * t.dtype.itemsize}")


@instr("TCI", family="irregular", pipe=Pipe.S,
       pipe_of=PipeForms("tmp", {"-": Pipe.S, "Vec": Pipe.V},
                         why="pto-isa's event.hpp has one TCI op, on PIPE_S: the form without "
                             "tmp, a scalar loop; with tmp the a2a3 code is vector "
                             "instructions (TCI.hpp), so that form runs on V."),
       ptoas=Ptoas(attrs={"descending": Attr("descending")}),
       operands=(Opnd("dst", "tile", "out"), Opnd("start", "scalar"),
                 Opnd("tmp", "tile", "scratch", optional=True)),
       params=(Param("descending", False), Param("T", None)),
       dtype_key=("dst",),
       static=(locs(["dst"], TileType.Vec), row_major_nd("dst"), _tci_rows),
       static_for={"a2a3": (_tci_tmp_a2a3,)})
def TCI(m: Machine, dst: Tile, start: Any, tmp: Tile | None = None, *,  # noqa: N802
        descending: Any, T: Any) -> None:  # noqa: N803
    """dst[0, k] = start + k (descending: start - k) for k < dst's valid cols; integers wrap.
    ``tmp`` (the a2a3 vector path's scratch) is accepted and not needed."""
    vc = dst.valid_col
    if not vc or not dst.valid_row:
        return
    k = np.arange(vc, dtype=np.int64)
    seq = int(start) - k if bool(int(descending)) else int(start) + k
    dst.write(_wrap_to(seq, dst.dtype)[None, :])


# ==== TTRI ========================================================================================

@instr("TTRI", family="irregular", pipe=Pipe.V,
       ptoas=Ptoas(attrs={"upperOrLower": Attr("isUpperOrLower")}),
       operands=(Opnd("dst", "tile", "out"), Opnd("diagonal", "scalar")),
       params=(Param("isUpperOrLower", 0),),
       dtype_key=("dst",),
       static=(locs(["dst"], TileType.Vec), row_major_nd("dst")))
def TTRI(m: Machine, dst: Tile, diagonal: Any, *, isUpperOrLower: Any) -> None:  # noqa: N802,N803
    """Triangular mask over dst's valid region. Lower (isUpperOrLower=0): dst[i, j] = 1 if
    j <= i + diagonal else 0. Upper (1): dst[i, j] = 0 if j < i + diagonal else 1."""
    mode = int(isUpperOrLower)
    if mode not in (0, 1):
        raise PtoError(f"isUpperOrLower must be 0 (lower) or 1 (upper), got {mode}")
    vr, vc = dst.valid_shape
    if not (vr and vc):
        return
    i = np.arange(vr, dtype=np.int64)[:, None]
    j = np.arange(vc, dtype=np.int64)[None, :]
    d = int(diagonal)
    mask = (j <= i + d) if mode == 0 else ~(j < i + d)
    dst.write(mask.astype(dst.dtype.np))


# ==== TGATHER =====================================================================================


@instr("TPREFETCH", family="irregular", pipe=Pipe.MTE2,
       operands=(Opnd("dst", "tile", "out"), Opnd("src", "tile|gm")),
       dtype_key=("dst", "src"),
       static=(same_dtype("dst", "src"),))
def TPREFETCH(m: Machine, dst: Tile, src: Any) -> None:  # noqa: N802
    """A prefetch hint; like the CPU simulator we perform it as a blocking copy of src (a tile's
    valid region, or a GM view in row-major order) into dst's valid region."""
    vr, vc = dst.valid_shape
    if not (vr and vc):
        return
    if isinstance(src, Tile):
        if src.valid_row < vr or src.valid_col < vc:
            raise RuntimeCheckError(f"src valid region {src.valid_row}x{src.valid_col} does "
                                    f"not cover dst valid region {vr}x{vc}")
        dst.write(np.asarray(src.read(vr, vc)))
    else:
        r, c = src.spec.rows_cols
        if r * c < vr * vc:
            raise RuntimeCheckError(f"GM view holds {r * c} elements, dst valid region "
                                    f"{vr}x{vc}")
        dst.write(src.flat[src.indices(r, c)].reshape(-1)[: vr * vc].reshape(vr, vc))


# ==== THISTOGRAM ==================================================================================

def _hist_static(sig: Sig) -> None:
    s, i, d = sig["src"], sig["idx"], sig["dst"]
    byte = sig.params.get("byte")
    if isinstance(d, TileSpec) and d.dtype.name != "ui32":
        raise sig.fail(f"dst must be ui32, got {d.dtype}")
    if isinstance(i, TileSpec) and i.dtype.name != "ui8":
        raise sig.fail(f"idx must be ui8, got {i.dtype}")
    if isinstance(s, TileSpec) and s.dtype.name == "ui16" and byte not in (HistByte.BYTE_0,
                                                                           HistByte.BYTE_1):
        raise sig.fail(f"a ui16 src has bytes BYTE_0 and BYTE_1 only, got {byte.name}")
    if isinstance(d, TileSpec) and d.cols < 256:
        raise sig.fail(f"dst needs 256 columns (one bin per byte value), has {d.cols}")


def _hist_runtime(ins: Any, dst: Tile, src: Tile, idx: Tile, *, byte: HistByte,
                  **params: Any) -> None:
    """The filter rows a ui32 histogram reads: one per byte above ``byte`` (byte 3 reads
    none), each with a column per src valid row."""
    if src.dtype.itemsize != 4:
        return
    need = 3 - byte.value
    if need and (idx.rows < need or idx.cols < src.valid_row):
        raise RuntimeCheckError(
            f"a ui32 histogram of {byte.name} filters on the {need} byte(s) above it: idx "
            f"needs {need} row(s) of {src.valid_row} column(s) (one per src valid row), "
            f"is {idx.rows}x{idx.cols}", op=ins.mnemonic)


@instr("THISTOGRAM", family="irregular", pipe=Pipe.V,
       ptoas=Ptoas(attrs={
           # C++ A5: THISTOGRAM<..., isMSB> is HistByte BYTE_1 (the high byte of a ui16)
           "isMSB": Attr("byte", values={True: HistByte.BYTE_1, False: HistByte.BYTE_0},
                         default=True)},
                   unsupported="thistogram is only supported on A5"),
       operands=(Opnd("dst", "tile", "out"), Opnd("src", "tile"), Opnd("idx", "tile")),
       params=(Param("byte", HistByte.BYTE_0, HistByte),),
       dtype_key=("src",),
       static=(locs(["dst", "src", "idx"], TileType.Vec), _hist_static),
       runtime=(_hist_runtime,))
def THISTOGRAM(m: Machine, dst: Tile, src: Tile, idx: Tile, *, byte: HistByte) -> None:  # noqa: N802
    """dst[r, b] = number of j < src valid cols whose byte ``byte`` is <= b (a cumulative
    histogram, what the CPU simulator and its tests produce; the manual's formula shows the
    per-bin counts, whose running sum this is) and whose higher
    bytes match the filter: ui16 BYTE_0 counts elements with high byte == idx[r, 0]; ui32
    BYTE_k (k < 3) requires byte 3 == idx[0, r], byte 2 == idx[1, r], ... down to byte k+1
    (one filter row per already-processed byte). The whole 256-bin row is overwritten."""
    vr, vc = src.valid_shape
    if not vr:
        return
    x = np.asarray(src.read()).astype(np.uint64)
    k = byte.value
    sel = ((x >> np.uint64(8 * k)) & np.uint64(0xFF)).astype(np.int64)
    mask = np.ones(x.shape, bool)
    if src.dtype.itemsize == 2:
        if k == 0:
            f = np.asarray(idx.read(vr, 1)).astype(np.uint64)
            mask &= ((x >> np.uint64(8)) & np.uint64(0xFF)) == f
    else:
        for level, b in enumerate(range(3, k, -1)):
            f = np.asarray(idx.read(level + 1, vr)).astype(np.uint64)[level][:, None]
            mask &= ((x >> np.uint64(8 * b)) & np.uint64(0xFF)) == f
    out = np.zeros((vr, 256), np.uint32)
    for r in range(vr):
        out[r] = np.cumsum(np.bincount(sel[r][mask[r]], minlength=256)[:256])
    dst.write(out)


# ==== TRANDOM =====================================================================================

_PHILOX_M0, _PHILOX_M1 = 0xD2511F53, 0xCD9E8D57
_PHILOX_W0, _PHILOX_W1 = 0x9E3779B9, 0xBB67AE85


def philox4x32(counter: np.ndarray, key: tuple[int, int], rounds: int) -> np.ndarray:
    """Philox4x32-``rounds`` of counters (n, 4) uint64 (holding u32) -> (n, 4) u32 words."""
    c = [counter[:, k].astype(np.uint64) for k in range(4)]
    k0, k1 = np.uint64(key[0]), np.uint64(key[1])
    mask = np.uint64(0xFFFFFFFF)
    for _ in range(rounds):
        p0 = c[0] * np.uint64(_PHILOX_M0)
        p1 = c[2] * np.uint64(_PHILOX_M1)
        hi0, lo0 = p0 >> np.uint64(32), p0 & mask
        hi1, lo1 = p1 >> np.uint64(32), p1 & mask
        c = [(hi1 ^ c[1] ^ k0) & mask, lo1, (hi0 ^ c[3] ^ k1) & mask, lo0]
        k0 = (k0 + np.uint64(_PHILOX_W0)) & mask
        k1 = (k1 + np.uint64(_PHILOX_W1)) & mask
    return np.stack(c, axis=1).astype(np.uint32)


def _as_words(x: Any, n: int, what: str) -> list[int]:
    a = np.asarray(x).reshape(-1)
    if a.size != n:
        raise PtoError(f"{what} must hold {n} 32-bit words, got {a.size}")
    return [int(v) & 0xFFFFFFFF for v in a.tolist()]


def _rounds(x: Any) -> int:
    if isinstance(x, str):
        x = x.rsplit(")", 1)[-1]
    r = int(x)
    if r not in (7, 10):
        raise PtoError(f"Rounds must be 7 or 10, got {r}")
    return r


_RND_LANES = 64  # 32-bit lanes of one 256-byte vector repeat
_RND_CHUNK = 4 * _RND_LANES  # columns one Philox pass of 64 lanes fills (4 words per lane)


def _trandom_rows(dst: Tile, key: Any, counter: Any, rounds: Any,
                  place: Any, step: Any) -> None:
    """Fill dst's valid region row by row in chunks of 256 columns: chunk j of a row takes the
    Philox blocks ctr + lane (lane < 64, 128-bit adds) of the running counter ctr, word w of
    lane l going to column 256*j + place(w, l); ctr then advances by step(j, nloop, vc)."""
    r = _rounds(rounds)
    k = _as_words(key, 2, "key")
    c = _as_words(counter, 4, "counter")
    vr, vc = dst.valid_shape
    if not vr or not vc:
        return
    nloop = -(-vc // _RND_CHUNK)
    ctr = c[0] | c[1] << 32 | c[2] << 64 | c[3] << 96
    full = (1 << 128) - 1
    lanes = np.arange(_RND_LANES)
    out = np.zeros((vr, nloop * _RND_CHUNK), np.uint32)
    for row in range(vr):
        for j in range(nloop):
            blk = np.array([[((ctr + lane) & full) >> (32 * w) & 0xFFFFFFFF for w in range(4)]
                            for lane in range(_RND_LANES)], np.uint64)
            words = philox4x32(blk, (k[0], k[1]), r)  # (lane, w)
            for w in range(4):
                out[row, _RND_CHUNK * j + place(w, lanes)] = words[:, w]
            ctr = (ctr + step(j, nloop, vc)) & full
    dst.write(out[:, :vc].view(dst.dtype.np))


def _trandom_a5(m: Machine, dst: Tile, key: Any, counter: Any, *, Rounds: Any) -> None:  # noqa: N803
    # A5 TRandom.hpp: vintlv puts the four words of a lane side by side (column 4*lane + w);
    # the counter advances by 64 after a full chunk and by ((vc - 1) % 64) + 1 after the last
    _trandom_rows(dst, key, counter, Rounds, lambda w, lane: 4 * lane + w,
                  lambda j, nloop, vc: _RND_LANES if j != nloop - 1 else (vc - 1) % _RND_LANES + 1)


@instr("TRANDOM", family="irregular", pipe=Pipe.V,
       ptoas=Ptoas(forms={"pto.trandom": (Form(inputs=("key*2", "counter*4")),)},
                    attrs={"rounds": Attr("Rounds")}),
       operands=(Opnd("dst", "tile", "out"), Opnd("key", "any"), Opnd("counter", "any")),
       params=(Param("Rounds", 10),),
       dtype_key=("dst",),
       static=(locs(["dst"], TileType.Vec), row_major_nd("dst")),
       impl_for={"a5": _trandom_a5})
def TRANDOM(m: Machine, dst: Tile, key: Any, counter: Any, *, Rounds: Any) -> None:  # noqa: N802,N803
    """Counter-based random numbers (Philox4x32 with ``Rounds`` = 7 or 10 rounds, key = 2 u32
    words, counter = 4 u32 words). Each valid row is filled in chunks of 256 columns: chunk j
    runs 64 lanes on the Philox blocks ctr + lane (128-bit adds) of a running counter ctr
    (starting at ``counter``), and word w of lane l goes to column 256*j + 64*w + l; after
    each chunk ctr advances by dst.Cols / 4 (the CPU simulator's layout). On ``a5`` the words
    of a lane sit side by side (column 256*j + 4*l + w) and ctr advances by 64 after a full
    chunk, by ((validCol - 1) % 64) + 1 after a row's last (the A5 vector code)."""
    _trandom_rows(dst, key, counter, Rounds, lambda w, lane: _RND_LANES * w + lane,
                  lambda j, nloop, vc: dst.spec.cols // 4)

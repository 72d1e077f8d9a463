"""Cube micro-ops (micro-isa/16-cube-matmul.md): the staged loads GM -> L1 -> L0A / L0B / BT,
``pto.mad`` / ``mad_acc`` / ``mad_bias`` on L0A x L0B -> L0C, and the FIXPIPE writeback
``pto.mte_l0c_gm`` / ``mte_l0c_ub`` / ``mte_l0c_l1``.

Pointers address the machine's bytes (``vector/regs.py``), so what these ops leave in L1 / L0 /
BT is what a tile placed there reads. The physical orders are the tile level's, taken from
:attr:`ptoisa.tile.TileSpec.offsets` (never a second formula): an L1 cube-fractal tile is NZ
(16-row boxes of 32 bytes), L0A the target's Left layout (``traits.left_blayout``: NZ on a5),
L0B the Right layout (ZN), L0C the Acc layout (NZ, 16x16 boxes), a bias the Bias row.
``pto.mad*`` runs the tile level's TMATMUL maths (``isa/matrix/matmul.py``) on tiles placed at
the three pointers. Every byte an op reads or writes is told to an observing sanitizer through
``buffer_bytes(..., role=...)`` / ``touch``.

MX (``mte_l1_l0a_mx`` / ``mte_l1_l0b_mx``, ``pto.mad_mx*``): the E8M0 scales live in the
machine's L0A_MX / L0B_MX buffers, at the L0A / L0B address >> 4 (TGET_SCALE_ADDR's a5 rule),
in the tile level's ScaleLeft (ZZ) / ScaleRight (NN) order; ``pto.mad_mx*`` runs TMATMUL_MX's
maths on the data tiles and those scale tiles.

What is not executed yet is refused by name (an error when the op runs, never a no-op): GEMV
left-tile organisation (``%m = 1`` without ``disable_gemv``), non-zero ``start_row`` /
``start_col`` of the shape-derived L1 -> L0 loads and their full-control form, small-C0 loads,
the full MX group of the scale loads, ``sat`` on an MX MAD whose result is not finite,
``mte_l1_fb`` and the FIXPIPE clauses (``pre_quant``, ``pre_relu``,
``unit_flag``, ``loop3``, ``nz2nz``, split ``dst_mode``) other than the layouts ``nz2nd`` /
``nz2dn(1)`` with an unchanged element type."""

from __future__ import annotations

from typing import Any

import numpy as np

from ... import dtypes as D
from ...enums import BLayout, Pipe, RoundMode, SLayout, TileType
from ...errors import ExecutionError, NotExecutedYet
from ...tile import FRACTAL_AB, FRACTAL_C, Tile, TileSpec, tile_spec
from ...vector.regs import SPACES, GroupSpec, Ptr, PtrSpec, buffer_bytes, touch
from ..matrix import matmul as mm_maths
from ..registry import Opnd, Param, Sig, instr
from ..spelling import Ptoas
from .dma import _check_gm, _gm_bytes, _rows, _span

C0_BYTES = 32
BOX_ROWS = 16
#: bytes of one mte_l1_fb load unit
FB_UNIT = 64


def _not_yet(op: str, what: str) -> ExecutionError:
    return ExecutionError(f"operation 'pto.{op}' cannot be executed by ptoisa yet with {what}")


def _ptr(p: Any, space: str, what: str, bytes_only: bool = False) -> Ptr:
    """``p`` checked to point into ``space``. ``bytes_only``: the op moves bytes whatever the
    element type (its sizes count bytes, or 1-byte elements), so a packed fp4 pair type (one
    byte a pair) is moved as its bytes; the other ops refuse packed types by name."""
    if not isinstance(p, Ptr) or SPACES.get(p.space) != SPACES[space]:
        raise ExecutionError(f"the {what} must be a {space} pointer, got {p!r}")
    if p.dtype.packed and not bytes_only:
        raise NotExecutedYet(f"the {what} has the packed type {p.dtype.name}, which ptoisa "
                             "does not execute yet")
    return p


def _count(v: Any, what: str, lo: int = 1) -> int:
    n = int(v)
    if n < lo:
        raise ExecutionError(f"{what} is {n}, must be at least {lo}")
    return n


def _up(n: int, to: int) -> int:
    return -(-n // to) * to


def _c0(dt: D.DType) -> int:
    """Elements of one 32-byte C0 block."""
    return max(C0_BYTES // dt.itemsize, 1)


# ---- tiles over pointer bytes ------------------------------------------------------------------

def _nz(loc: TileType, dt: D.DType, rows: int, cols: int) -> TileSpec:
    """The NZ order of a ``rows x cols`` matrix: 16 x C0 boxes, box columns outermost (L1's
    cube-fractal tiles; Left on a5)."""
    return tile_spec(loc, dt, rows, cols, BLayout.ColMajor, slayout=SLayout.RowMajor,
                     fractal=FRACTAL_AB, check_alignment=False)


def _left(m: Any, dt: D.DType, rows: int, cols: int) -> TileSpec:
    return tile_spec(TileType.Left, dt, rows, cols, BLayout(m.target.traits.left_blayout),
                     slayout=SLayout.RowMajor, fractal=FRACTAL_AB, check_alignment=False)


def _right(dt: D.DType, rows: int, cols: int) -> TileSpec:
    return tile_spec(TileType.Right, dt, rows, cols, BLayout.RowMajor, slayout=SLayout.ColMajor,
                     fractal=FRACTAL_AB, check_alignment=False)


def _acc(dt: D.DType, rows: int, cols: int) -> TileSpec:
    return tile_spec(TileType.Acc, dt, rows, cols, BLayout.ColMajor, slayout=SLayout.RowMajor,
                     fractal=FRACTAL_C, check_alignment=False)


def _elements(m: Any, p: Ptr, spec: TileSpec, what: str, role: str) -> np.ndarray:
    """The elements of a ``spec`` tile at ``p`` in physical order (a view of the buffer)."""
    raw = buffer_bytes(m, p.space, p.addr, spec.nbytes, what, role=role)
    return raw.view(spec.dtype.np)


def read_matrix(m: Any, p: Ptr, spec: TileSpec, what: str) -> np.ndarray:
    """The logical ``rows x cols`` matrix of a ``spec`` tile at ``p`` (a copy)."""
    return _elements(m, p, spec, what, "in")[spec.offsets]


def write_matrix(m: Any, p: Ptr, spec: TileSpec, values: np.ndarray, what: str) -> None:
    """Write the logical matrix ``values`` (``spec``'s shape) into a ``spec`` tile at ``p``."""
    _elements(m, p, spec, what, "out")[spec.offsets] = values


def _placed(m: Any, spec: TileSpec, p: Ptr, valid: tuple[int, int]) -> Tile:
    """A tile of ``spec`` placed at ``p``'s bytes (as TASSIGN would), valid ``valid``."""
    t = Tile.of(spec, valid)
    m.assign(t, p.addr)
    return t


# ---- GM / L1 / UB burst copies ----------------------------------------------------------------

def _burst_copy(m: Any, op: str, src: Any, src_space: str, dst: Any, dst_space: str,
                len_burst: Any, nburst: tuple[Any, ...], loop: Any) -> None:
    """Rows of ``len_burst`` bytes (``dma.py``'s nburst / loop model) from ``src`` to ``dst``;
    ``gm`` sides are the launch's arrays, the others pointers into the machine's buffers."""
    n = int(len_burst)
    s_rows, d_rows = _rows(n, nburst, loop, op)
    s_lo, s_hi = _span(s_rows, n)
    d_lo, d_hi = _span(d_rows, n)
    if s_hi == s_lo or d_hi == d_lo:
        return
    if src_space == "gm":
        data = _gm_bytes(src, op, "source")
        _check_gm(data, s_rows, n, op, "source")
        touch(m, "in", "GM", data, s_rows, n)
        s_off = s_rows
    else:
        sp = _ptr(src, src_space, "source", bytes_only=True)
        data = buffer_bytes(m, sp.space, sp.addr + s_lo, s_hi - s_lo, "the source", role=None)
        touch(m, "in", SPACES[src_space], None, sp.addr + s_rows, n)
        s_off = s_rows - s_lo
    cols = np.arange(n, dtype=np.int64)
    vals = data[s_off[:, None] + cols[None, :]]
    if dst_space == "gm":
        out = _gm_bytes(dst, op, "destination")
        _check_gm(out, d_rows, n, op, "destination")
        touch(m, "out", "GM", out, d_rows, n)
        m.gm_barrier(dst)
        out[d_rows[:, None] + cols[None, :]] = vals
        return
    dp = _ptr(dst, dst_space, "destination", bytes_only=True)
    out = buffer_bytes(m, dp.space, dp.addr + d_lo, d_hi - d_lo, "the destination", role=None)
    touch(m, "out", SPACES[dst_space], None, dp.addr + d_rows, n)
    out[(d_rows - d_lo)[:, None] + cols[None, :]] = vals


_BURST_OPS = (Opnd("len_burst", "scalar"), Opnd("nburst", "group"),
              Opnd("loop", "group", optional=True))


@instr("MTE_GM_L1", pipe=Pipe.MTE2, dialect="vpto",
       operands=(Opnd("src", "ptr"), Opnd("dst", "ptr", "out"), *_BURST_OPS),
       dtype_key=("dst",))
def MTE_GM_L1(m: Any, src: np.ndarray, dst: Ptr, len_burst: Any, nburst: tuple[Any, ...],
              loop: Any = None) -> None:
    """For every row r of the nburst / loop groups (strides in bytes):
    L1[dst + dst_row(r) ..][:len_burst] = GM[src + src_row(r) ..][:len_burst]."""
    _burst_copy(m, "mte_gm_l1", src, "gm", dst, "l1", len_burst, nburst, loop)


@instr("MTE_L1_UB", pipe=Pipe.MTE1, dialect="vpto",
       operands=(Opnd("src", "ptr"), Opnd("dst", "ptr", "out"), *_BURST_OPS),
       dtype_key=("dst",))
def MTE_L1_UB(m: Any, src: Ptr, dst: Ptr, len_burst: Any, nburst: tuple[Any, ...],
              loop: Any = None) -> None:
    """``count`` bursts of ``len_burst`` 32-byte blocks from L1 to UB; after a burst the source
    and destination advance by the burst plus their nburst gap (in 32-byte blocks); each
    ``loop(count, src_stride, dst_stride)`` repeats the whole, its strides in bytes.

    The chapter calls the nburst operands byte strides from row start to row start, but PTOAS
    hands them with len_burst to the hardware L1 -> UB copy (``copy_cbuf_to_ubuf``: burst
    length and gaps in 32-byte blocks), and upstream's cv-mixed cases move 40 rows of 256
    bytes with ``%c64 nburst(%c40, %c0, %c0)``: the hardware's reading is followed. On the cube
    core of a mixed launch the UB written is vector sub-block 0's (the sub-block field PTOAS
    writes in that copy is 0)."""
    op = "mte_l1_ub"
    if len(nburst) != 3:
        raise ExecutionError("nburst takes (count, src_gap, dst_gap)")
    count, sgap, dgap = (int(x) for x in nburst)
    nb = _count(len_burst, "len_burst", 0) * C0_BYTES
    bursts = np.arange(_count(count, "count", 0), dtype=np.int64)
    s_in = bursts * (nb + sgap * C0_BYTES)
    d_in = bursts * (nb + dgap * C0_BYTES)
    s_out, d_out = _rows(nb, (1, 0, 0), loop, op)
    sp = _ptr(src, "l1", "source", bytes_only=True)
    dp = _ptr(dst, "ub", "destination", bytes_only=True)
    core = m.core
    dm = _ub_of(m, 0, op) if core and core[0] == "AIC" else m
    for so, do in zip(s_out.tolist(), d_out.tolist(), strict=True):
        for si, di in zip(s_in.tolist(), d_in.tolist(), strict=True):
            vals = buffer_bytes(m, sp.space, sp.addr + so + si, nb, "the source", role="in")
            out = buffer_bytes(dm, dp.space, dp.addr + do + di, nb, "the destination",
                               role="out")
            out[:] = vals


@instr("MTE_L1_FB", pipe=Pipe.MTE1, dialect="vpto",
       operands=(Opnd("src", "ptr"), Opnd("dst", "ptr", "out"), Opnd("len_burst", "scalar"),
                 Opnd("nburst", "group")),
       dtype_key=("dst",))
def MTE_L1_FB(m: Any, src: Ptr, dst: Ptr, len_burst: Any, nburst: tuple[Any, ...]) -> None:
    """``count`` bursts of ``len_burst`` load units (64 bytes: upstream's cases load 64 u64
    quant words, or 128 u32 ReLU alphas, with len_burst 8) copied as they are from L1 to FB;
    after a burst source and destination advance by the burst plus their gap (in units)."""
    s = _ptr(src, "l1", "source", bytes_only=True)
    d = _ptr(dst, "fb", "destination", bytes_only=True)
    if len(nburst) != 3:
        raise ExecutionError("nburst takes (count, src_gap, dst_gap)")
    count, sgap, dgap = (int(x) for x in nburst)
    units = _count(len_burst, "len_burst", 0)
    for b in range(_count(count, "count", 0)):
        nb = units * FB_UNIT
        vals = buffer_bytes(m, "l1", s.addr + b * (units + sgap) * FB_UNIT, nb, "the source",
                            role="in")
        out = buffer_bytes(m, "fb", d.addr + b * (units + dgap) * FB_UNIT, nb,
                           "the destination", role="out")
        out[:] = vals


@instr("COPY_GM_TO_CBUF", pipe=Pipe.MTE2, dialect="vpto",
       operands=(Opnd("src", "ptr"), Opnd("dst", "ptr", "out"), Opnd("n_burst", "scalar"),
                 Opnd("len_burst", "scalar"), Opnd("src_stride", "scalar"),
                 Opnd("dst_stride", "scalar")),
       dtype_key=("dst",))
def COPY_GM_TO_CBUF(m: Any, src: np.ndarray, dst: Ptr, n_burst: Any, len_burst: Any,
                    src_stride: Any, dst_stride: Any) -> None:
    """The hardware GM -> L1 copy (isa-legacy/16, ``copy_gm_to_cbuf(dst, src, sid, nBurst,
    lenBurst, srcStride, dstStride)`` of designs/a2a3-dma-builtins.md): ``n_burst`` bursts of
    ``len_burst`` 32-byte blocks; after a burst source and destination advance by the burst
    plus their gap (``src_stride`` / ``dst_stride``, in 32-byte blocks)."""
    nb = _count(len_burst, "len_burst", 0) * C0_BYTES
    k = np.arange(_count(n_burst, "n_burst", 0), dtype=np.int64)
    s_rows = k * (nb + int(src_stride) * C0_BYTES)
    d_rows = k * (nb + int(dst_stride) * C0_BYTES)
    if k.size == 0 or nb == 0:
        return
    # (the burst model of mte_gm_l1: rows of nb bytes at the given starts)
    _burst_copy(m, "copy_gm_to_cbuf", src, "gm", dst, "l1", nb,
                (1, 0, 0), ((k.size, int(s_rows[1] if k.size > 1 else 0),
                             int(d_rows[1] if k.size > 1 else 0)),))


def _fill_bits(sig: Sig) -> None:
    bits = sig.params.get("fill_word_bits")
    if bits is not None and int(bits) not in (16, 32):
        raise sig.fail(f"fill_word_bits must be 16 or 32, got {int(bits)}")


@instr("RAW_FILL_L1", pipe=Pipe.MTE2, dialect="vpto",
       operands=(Opnd("dst", "ptr", "out"), Opnd("byte_offset", "scalar"),
                 Opnd("raw_value", "scalar"), Opnd("repeat_times", "scalar"),
                 Opnd("block_num_32b", "scalar"), Opnd("dst_gap_32b", "scalar")),
       params=(Param("fill_word_bits", 16),), dtype_key=("dst",), static=(_fill_bits,))
def RAW_FILL_L1(m: Any, dst: Ptr, byte_offset: Any, raw_value: Any, repeat_times: Any,
                block_num_32b: Any, dst_gap_32b: Any, *, fill_word_bits: Any = 16) -> None:
    """For r < repeat_times: the block_num_32b 32-byte blocks from ``dst + byte_offset + r *
    (block_num_32b + dst_gap_32b) * 32`` hold the raw word repeated: the low 16 bits of
    raw_value (``fill_word_bits = 16``) or all 32 (``= 32``), little-endian."""
    p = _ptr(dst, "l1", "destination", bytes_only=True)
    bits = int(fill_word_bits)
    if bits not in (16, 32):
        raise ExecutionError(f"fill_word_bits is {bits}: 16 or 32")
    off = _count(byte_offset, "byte_offset", 0)
    if (p.addr + off) % C0_BYTES:
        raise ExecutionError(f"the filled address {p.addr + off:#x} is not 32-byte aligned")
    reps, blocks, gap = (_count(v, what, 0) for v, what in (
        (repeat_times, "repeat_times"), (block_num_32b, "block_num_32b"),
        (dst_gap_32b, "dst_gap_32b")))
    for v, what in ((reps, "repeat_times"), (blocks, "block_num_32b"), (gap, "dst_gap_32b")):
        if v > 32767:
            raise ExecutionError(f"{what} is {v}, at most 32767")
    word = np.array([int(raw_value) & ((1 << bits) - 1)],
                    np.uint16 if bits == 16 else np.uint32).view(np.uint8)
    nb = blocks * C0_BYTES
    for r in range(reps):
        out = buffer_bytes(m, p.space, p.addr + off + r * (blocks + gap) * C0_BYTES, nb,
                           "the filled", role="out")
        out[:] = np.resize(word, nb)


# ---- GM -> L1 with the ND / DN -> NZ transform --------------------------------------------------

@instr("MTE_GM_L1_FRAC", pipe=Pipe.MTE2, dialect="vpto",
       operands=(Opnd("src", "ptr"), Opnd("dst", "ptr", "out"), Opnd("shape", "group"),
                 Opnd("src_layout", "group"), Opnd("dst_group", "group"),
                 Opnd("ctrl", "group")),
       params=(Param("nd2nz", False), Param("dn2nz", False)),
       dtype_key=("dst",))
def MTE_GM_L1_FRAC(m: Any, src: np.ndarray, dst: Ptr, shape: tuple[Any, ...],
                   src_layout: tuple[Any, ...], dst_group: tuple[Any, ...],
                   ctrl: tuple[Any, ...], *, nd2nz: bool = False,
                   dn2nz: bool = False) -> None:
    """For each of ``group_count`` matrices g: the logical ``n x d`` matrix read from GM at
    ``src + g * src_outer_stride`` (``nd2nz``: element [i, j] at byte ``i * src_inner_stride +
    j * sizeof(T)``; ``dn2nz``: at ``j * src_inner_stride + i * sizeof(T)``) is written in NZ
    order at ``dst + g * dst_loop4_stride * 32``: row i of box column j // C0 at C0 unit
    ``i * dst_loop2_stride + (j // C0) * dst_loop3_stride`` (32-byte units), its last C0
    block padded with zeros (with dst_loop2_stride = 1 the NZ order of a matrix of
    dst_loop3_stride rows: TileSpec.offsets of an NZ tile, which the tests check)."""
    op = "mte_gm_l1_frac"
    if nd2nz == dn2nz:
        raise ExecutionError("takes exactly one of the keywords nd2nz, dn2nz")
    p = _ptr(dst, "l1", "destination", bytes_only=True)
    gm = _gm_bytes(src, op, "source")
    if len(shape) != 2 or len(src_layout) not in (1, 2) or len(dst_group) != 4 \
            or len(ctrl) != 2:
        raise ExecutionError("expects shape(n, d), src_layout(inner[, outer]), "
                             "dst_group(count, loop2, loop3, loop4), ctrl(l2, smallc0)")
    if bool(ctrl[1]):
        raise _not_yet(op, "small-C0 packing (ctrl smallc0_en = true)")
    n, d = _count(shape[0], "n", 0), _count(shape[1], "d", 0)
    inner = int(src_layout[0])
    outer = int(src_layout[1]) if len(src_layout) == 2 else 0
    groups, loop2, loop3, loop4 = (int(x) for x in dst_group)
    dt = p.dtype
    c0 = _c0(dt)
    cols = _up(d, c0)
    isz = dt.itemsize
    i = np.arange(n, dtype=np.int64)[:, None]
    j = np.arange(d, dtype=np.int64)[None, :]
    at = (i * inner + j * isz) if nd2nz else (j * inner + i * isz)
    # the destination: row i of C0 block b at 32-byte unit i * loop2 + b * loop3 (with
    # loop2 = 1 and loop3 = the row count: the NZ order of TileSpec.offsets), the elements
    # of a row padded with zeros to the block
    jj = np.arange(cols, dtype=np.int64)[None, :]
    d_el = (i * loop2 + (jj // c0) * loop3) * (C0_BYTES // isz) + jj % c0
    rows_at = np.unique((i * loop2 + (jj // c0) * loop3).reshape(-1)) * C0_BYTES
    for g in range(_count(groups, "group_count", 0)):
        starts = (g * outer + at).reshape(-1)
        _check_gm(gm, starts, isz, op, "source")
        touch(m, "in", "GM", gm, starts, isz)
        vals = gm[starts[:, None] + np.arange(isz)[None, :]].reshape(-1).view(dt.np)
        block = np.zeros((n, cols), dt.np)
        block[:, :d] = vals.reshape(n, d)
        base = p.addr + g * loop4 * C0_BYTES
        if n == 0:
            continue
        hi = (int(d_el.max()) + 1) * isz
        el = buffer_bytes(m, p.space, base, hi, "the written", role=None).view(dt.np)
        touch(m, "out", "L1", None, base + rows_at, C0_BYTES)
        el[d_el] = block


# ---- L1 -> L0A / L0B / BT ---------------------------------------------------------------------

def _l1_to_l0(m: Any, op: str, src: Any, dst: Any, space: str, outer: int, inner: int,
              start_row: Any, start_col: Any, transpose: bool) -> None:
    """L0A (``space`` l0a): the ``outer x inner`` = m x k left tile; L0B: k x n right tile.
    The L1 source is an NZ cube-fractal tile, copied box by box: without ``transpose`` it
    holds the matrix as L0A stores it (l0a: A, m x k; l0b: B's transpose, n x k), with
    ``transpose`` the other one (l0a: A's transpose, k x m; l0b: B, k x n). The L1 matrix's
    row count (its box columns' height) is its first extent padded to a box, as the
    shape-derived form derives it: the form has no operand for a taller source."""
    s = _ptr(src, "l1", "source", bytes_only=True)
    d = _ptr(dst, space, "destination", bytes_only=True)
    if s.dtype.packed or d.dtype.packed:
        if s.dtype is not d.dtype:
            raise ExecutionError(f"source {s.dtype.name} and destination {d.dtype.name} "
                                 "differ: a packed fp4 load keeps its type (PTOAS's S4 load)")
        if int(start_row) or int(start_col):
            raise _not_yet(op, "a non-zero start_row / start_col of a packed fp4 load")
        _l1_to_l0_fp4(m, s, d, space, outer, inner, transpose)
        return
    if s.dtype.itemsize != d.dtype.itemsize:
        raise ExecutionError(f"source {s.dtype.name} and destination {d.dtype.name} differ "
                             "in width")
    if transpose and d.dtype.itemsize == 1 and (int(outer) % 32 or int(inner) % 32):
        # 1-byte boxes are 16 x 32: the transposing load moves whole 32 x 32 blocks; with
        # both extents whole blocks the result is the matrix's transpose (upstream's
        # tilelang_st tmatmul fp8 / HiF8 / i8 goldens). A ragged edge is not settled: reading
        # B with its columns padded to 32 matched tmatmul_bias_mx's n = 30 and 95 but gave NaN
        # against mad_hif8's and mad_mx's goldens (n = 16)
        raise _not_yet(op, f"transpose of 1-byte elements with a {outer} x {inner} extent "
                       "not in whole 32 x 32 blocks (the order of a ragged edge's half "
                       "blocks is not settled)")
    if int(start_row) or int(start_col):
        raise _not_yet(op, "a non-zero start_row / start_col (the source matrix's extent is "
                       "not an operand of the shape-derived form)")
    dt = d.dtype
    c0 = _c0(dt)
    if space == "l0a":
        mm, k = outer, inner
        rows, cols = _up(mm, BOX_ROWS), _up(k, c0)
        dspec = _left(m, dt, rows, cols)
        l1_is_dst = True   # the L1 matrix is A itself without transpose
    else:
        k, nn = outer, inner
        rows, cols = _up(k, c0), _up(nn, BOX_ROWS)
        dspec = _right(dt, rows, cols)
        l1_is_dst = False  # without transpose the L1 matrix is B's transpose
    same = l1_is_dst != transpose
    if same:
        # (L0B with transpose: the L1 matrix is B itself, k x n, its columns padded to whole
        # C0 blocks: 16 for 2-byte elements, 32 for 1-byte ones, as upstream's MX cases pack
        # fp8 B, tilelang_st tmatmul_bias_mx/gen_data.py pack_mx_rhs_fp8_fractal)
        sspec = _nz(TileType.Mat, s.dtype, rows, _up(cols, c0))
    else:
        sspec = _nz(TileType.Mat, s.dtype, cols, rows)
    x = read_matrix(m, s, sspec, "the source").view(dt.np)[:rows, :cols] if same else \
        read_matrix(m, s, sspec, "the source").view(dt.np)
    write_matrix(m, d, dspec, x if same else x.T, "the destination")


def _l1_to_l0_fp4(m: Any, s: Ptr, d: Ptr, space: str, outer: int, inner: int,
                  transpose: bool) -> None:
    """The packed fp4 form (16-cube-matmul.md: PTOAS expands it to the S4 load): the extents
    count logical fp4 values, one 32-byte C0 block holds 64 of them, and the copy is
    :func:`_l1_to_l0`'s on the logical 4-bit codes (the L1 NZ tile and the L0 tile read and
    written through the tile level's packed orders, two codes a byte)."""
    dt = d.dtype
    c0 = 2 * C0_BYTES
    if space == "l0a":
        rows, cols = _up(outer, BOX_ROWS), _up(inner, c0)
        # m = 1 (the tgemv templates' GEMV organisation): the row as the tile level's 1-row
        # Mat and Left tiles hold it, its values one after the other on both sides (test_gemv_
        # reads_the_row_contiguous; upstream's tgemv_mx keeps a 1 x K row contiguous in L1)
        dspec = _left(m, dt, 1 if outer == 1 else rows, cols)
        l1_is_dst = True
    else:
        rows, cols = _up(outer, c0), _up(inner, BOX_ROWS)
        dspec = _right(dt, rows, cols)
        l1_is_dst = False
    same = l1_is_dst != transpose
    # the L1 side as its bytes: an NZ tile of 1-byte elements (16 x 32-byte boxes, as
    # mte_gm_l1_frac leaves the pairs), each byte two codes (even value in the low nibble)
    l1_rows, l1_vals = (dspec.rows if space == "l0a" else rows, _up(cols, c0)) if same else \
        (_up(cols, BOX_ROWS), _up(rows, c0))
    raw = read_matrix(m, s, _nz(TileType.Mat, D.u8, l1_rows, l1_vals // 2), "the source")
    x = np.empty((l1_rows, l1_vals), np.uint8)
    x[:, 0::2] = raw & 0xF
    x[:, 1::2] = raw >> 4
    dst_t = _placed(m, dspec, d, (dspec.rows, cols))
    dst_t.write(x[:dspec.rows, :cols] if same else x.T[:dspec.rows, :cols])


_L0_OPS = (Opnd("src", "ptr"), Opnd("dst", "ptr", "out"), Opnd("outer", "scalar"),
           Opnd("inner", "scalar"), Opnd("start_row", "scalar"), Opnd("start_col", "scalar"),
           Opnd("src_stride", "scalar", optional=True),
           Opnd("dst_stride", "scalar", optional=True))


def _full_control(m: Any, op: str, src: Any, dst: Any, space: str, m_start: Any, k_start: Any,
                  m_step: Any, k_step: Any, src_stride: Any, dst_stride: Any,
                  transpose: bool) -> None:
    """The full-control form: for mb < m_step, kb < k_step the 512-byte fractal block
    (m_start + mb, k_start + kb) of the L1 source, block (M, K) at ``K * src_stride + M``
    blocks (NZ: the M blocks of a K column, src_stride of them, follow each other), is copied
    to block ``kb * dst_stride + mb`` of the destination. Executed: L0A without transpose
    (the block order of L0B's and of transposing loads is not settled here)."""
    if space != "l0a" or transpose:
        raise _not_yet(op, "the full-control form " + ("with transpose" if transpose else
                                                       "into L0B"))
    for p, what in ((src, "source"), (dst, "destination")):
        if isinstance(p, Ptr) and p.dtype.packed:  # (refused by name: the op is known)
            raise _not_yet(op, f"the packed type {p.dtype.name} in the full-control form "
                               f"(the {what}; its S4 load)")
    s = _ptr(src, "l1", "source")
    d = _ptr(dst, space, "destination")
    ms, ks = _count(m_start, "m_start", 0), _count(k_start, "k_start", 0)
    mstep, kstep = _count(m_step, "m_step"), _count(k_step, "k_step")
    ss, ds = _count(src_stride, "src_stride"), _count(dst_stride, "dst_stride")
    for v, what, hi in ((ms, "m_start", 65535), (ks, "k_start", 65535), (mstep, "m_step", 255),
                        (kstep, "k_step", 255), (ss, "src_stride", 65535),
                        (ds, "dst_stride", 65535)):
        if v > hi:
            raise ExecutionError(f"{what} is {v}, at most {hi}")
    block = FRACTAL_AB
    for kb in range(kstep):
        for mb in range(mstep):
            s_at = s.addr + ((ks + kb) * ss + ms + mb) * block
            d_at = d.addr + (kb * ds + mb) * block
            vals = buffer_bytes(m, s.space, s_at, block, "the source", role="in")
            out = buffer_bytes(m, d.space, d_at, block, "the destination", role="out")
            out[:] = vals


def mat_source(sig: Sig) -> None:
    """PTOAS: an L1 -> L0 load reads a MAT (L1) source (a memref source: interp/verify.py)."""
    p = sig["src"]
    if isinstance(p, PtrSpec) and SPACES.get(p.space) != "L1":
        raise sig.fail(f"requires MAT source, got {p}")


def _whole_form(what: str) -> Any:
    """PTOAS: four shape-derived or six full positional operands, nothing between."""
    def rule(sig: Sig) -> None:
        if (sig["src_stride"] is None) != (sig["dst_stride"] is None):
            raise sig.fail(f"expects either four shape-derived or six full positional {what}")
    return rule


def _s4_only(sig: Sig) -> None:
    """PTOAS: packed FP4 data moves through the S4 loads (``mte_l1_l0a`` picks one), never
    the plain legacy ``load_cbuf_to_ca``."""
    for name in ("src", "dst"):
        p = sig[name]
        if isinstance(p, PtrSpec) and p.dtype.packed:
            role = "source" if name == "src" else "destination"
            raise sig.fail(f"packed FP4 {role} requires the S4 load operation "
                           f"(pto.load_cbuf_to_ca_s4; {p.dtype.name} here)")


def _named_fields(shape: tuple[str, ...], full: tuple[str, ...], mx: str = "") -> Ptoas:
    """The named-field spelling of an L1 -> L0 load (16-cube-matmul.md)."""
    return Ptoas(named={f"shape-derived{mx}": shape,
                        "full MX" if mx else "full control": full})


_FULL = ("m_start", "k_start", "m_step", "k_step", "src_stride", "dst_stride")
_FULL_MX = ("x_start", "y_start", "x_step", "y_step", "src_stride", "dst_stride")
_SHAPE = {"l0a": ("m", "k", "start_row", "start_col"), "l0b": ("k", "n", "start_row",
                                                               "start_col")}


def _l0_entry(name: str, space: str, doc: str, named: Ptoas | None = None,
              extra: tuple[Any, ...] = ()) -> Any:
    def impl(m: Any, src: Ptr, dst: Ptr, outer: Any, inner: Any, start_row: Any,
             start_col: Any, src_stride: Any = None, dst_stride: Any = None, *,
             transpose: bool = False) -> None:
        op = name.lower()
        if src_stride is not None:
            _full_control(m, op, src, dst, space, outer, inner, start_row, start_col,
                          src_stride, dst_stride, bool(transpose))
            return
        _l1_to_l0(m, op, src, dst, space, _count(outer, "the first extent"),
                  _count(inner, "the second extent"), start_row, start_col, bool(transpose))
    impl.__doc__ = doc
    impl.__name__ = name
    return instr(name, pipe=Pipe.MTE1, dialect="vpto", operands=_L0_OPS,
                 params=(Param("transpose", False),), dtype_key=("dst",),
                 static=(mat_source, _whole_form("operands"), *extra), ptoas=named)(impl)


MTE_L1_L0A = _l0_entry(
    "MTE_L1_L0A", "l0a",
    "L0A <- the m x k left tile A from the L1 NZ tile at src (A itself; with transpose, A's "
    "transpose k x m), in the target's Left order, rows padded to 16 and k to one C0 block. "
    "With eight operands (m_start, k_start, m_step, k_step, src_stride, dst_stride): the "
    "full-control form, 512-byte fractal blocks copied as they are.",
    _named_fields(_SHAPE["l0a"], _FULL))
LOAD_CBUF_TO_CA = _l0_entry(
    "LOAD_CBUF_TO_CA", "l0a",
    "The legacy spelling of mte_l1_l0a's full-control form (isa-legacy/16): m_start, "
    "k_start, m_step, k_step, src_stride, dst_stride.", extra=(_s4_only,))
MTE_L1_L0B = _l0_entry(
    "MTE_L1_L0B", "l0b",
    "L0B <- the k x n right tile B from the L1 NZ tile at src (B's transpose n x k; with "
    "transpose, B itself), in the Right order (ZN), k padded to one C0 block and n to 16.",
    _named_fields(_SHAPE["l0b"], _FULL))


# ---- L1 -> the MX scale buffers ----------------------------------------------------------------

def _scale_spec(side: str, rows: int, cols: int) -> TileSpec:
    """The tile level's MX scale tile (:func:`~ptoisa.isa.matrix.matmul.mx_scale_spec`): left
    ``rows x cols`` = M x groups in ZZ order, right = groups x N in NN order."""
    return mm_maths.mx_scale_spec(side == "l0a", rows, cols)


def _scale_addr(p: Ptr, what: str) -> int:
    """The byte address in the scale buffer (L0A_MX / L0B_MX) that belongs to the L0A / L0B
    pointer ``p``: ``p.addr >> SHIFT_MX_ADDR``, TGET_SCALE_ADDR's a5 rule (one definition)."""
    from ..layout.rearrange import SHIFT_MX_ADDR

    if p.addr % 16:
        raise ExecutionError(f"the {what} address {p.addr:#x} is not 16-byte aligned (the MX "
                             "destination address unit)")
    return p.addr >> SHIFT_MX_ADDR


def _mx_entry(name: str, space: str, doc: str) -> Any:
    def impl(m: Any, src: Ptr, dst: Ptr, outer: Any, inner: Any, start_row: Any,
             start_col: Any, src_stride: Any = None, dst_stride: Any = None) -> None:
        op = name.lower()
        # (the data pointer only names the scale buffer's address; the scales are bytes)
        s = _ptr(src, "l1", "source", bytes_only=True)
        d = _ptr(dst, space, "destination", bytes_only=True)
        if src_stride is not None or dst_stride is not None:
            raise _not_yet(op, "the full MX group (x_start, y_start, x_step, y_step, "
                           "src_stride, dst_stride)")
        if int(start_row) or int(start_col):
            raise _not_yet(op, "a non-zero start_row / start_col (the packed L1 matrix's "
                           "extent is not an operand of the shape-derived form)")
        if s.addr % C0_BYTES:
            raise ExecutionError(f"the source address {s.addr:#x} is not 32-byte aligned (an "
                                 "MX scale fragment)")
        a, b = _count(outer, "the first extent"), _count(inner, "the second extent")
        if space == "l0a":
            if a == 1 and -(-b // mm_maths.MX_GROUP) > 2:
                # one row's scales beyond one 2-group box: upstream's GEMV (m = 1) cases keep
                # them contiguous in L1, the ZZ order puts box columns 32 bytes apart; which
                # one the scale buffer holds for a GEMV is not settled
                raise _not_yet(op, f"m = 1 and {-(-b // mm_maths.MX_GROUP)} scale groups (the "
                               "GEMV order of the left scales beyond one 16 x 2 box)")
            spec = _scale_spec(space, a, -(-b // mm_maths.MX_GROUP))
        else:
            spec = _scale_spec(space, -(-a // mm_maths.MX_GROUP), b)
        at = _scale_addr(d, "destination")
        vals = buffer_bytes(m, s.space, s.addr, spec.nbytes, "the source", role="in")
        out = buffer_bytes(m, space + "_mx", at, spec.nbytes, "the scale destination",
                           role="out")
        out[:] = vals
    impl.__doc__ = doc
    impl.__name__ = name
    return instr(name, pipe=Pipe.MTE1, dialect="vpto", operands=_L0_OPS,
                 dtype_key=("dst",), static=(_whole_form("MX operands"),),
                 ptoas=_named_fields(_SHAPE[space], _FULL_MX, " MX"))(impl)


#: the full MX group's fields (after x_start, y_start) PTOAS requires to be non-negative
_MX_COUNTS = ("x_step", "y_step", "src_stride", "dst_stride")


def mx_load_known_errors(src_addr: int | None, dst_addr: int | None,
                         fields: list[int | None]) -> str | None:
    """PTOAS's verifier on an MX scale load's values known at compile time (the others are
    checked when it runs): the source is a 32-byte-aligned L1 scale fragment, the L0
    destination 16-byte aligned (the scale buffer's address unit, dst >> 4), and the full MX
    group's steps and strides non-negative. ``fields``: the six positional values, None where
    not a constant."""
    if src_addr is not None and src_addr % C0_BYTES:
        return ("statically known LOAD.MX source address must be aligned to 32 bytes, got "
                f"{src_addr}")
    if dst_addr is not None and dst_addr % 16:
        return ("statically known LOAD.MX destination address must be aligned to 16 bytes, "
                f"got {dst_addr}")
    if len(fields) == 6:
        for name, v in zip(_MX_COUNTS, fields[2:], strict=True):
            if v is not None and v < 0:
                return f"{name} must be non-negative (got {v})"
    return None


_MX_LOAD_DOC = (
    "The E8M0 scales of an MX {what} tile ({shape}, one byte per 32 k) from the L1 scale "
    "fragments at src into the {buf} scale buffer at dst.addr >> 4 (TGET_SCALE_ADDR's a5 "
    "rule), where ``pto.mad_mx*`` reads them for the {side} at dst. The L1 fragments are "
    "taken to hold the scales in the order the scale buffer keeps them, the tile level's "
    "{order} (upstream's cases pack them so: golden.py of vpto/cases/micro-op/cube-matmul/"
    "mad_mx): the bytes of the tile, groups padded to 2 and {pad} to 16, are copied as they "
    "are. Executed: the shape-derived form with start_row = start_col = 0.")
MTE_L1_L0A_MX = _mx_entry(
    "MTE_L1_L0A_MX", "l0a",
    _MX_LOAD_DOC.format(what="left", shape="m x ceil(k / 32)", buf="L0A_MX", side="lhs",
                        order="ScaleLeft ZZ order (16 x 2 boxes, row-major)", pad="m"))
MTE_L1_L0B_MX = _mx_entry(
    "MTE_L1_L0B_MX", "l0b",
    _MX_LOAD_DOC.format(what="right", shape="ceil(k / 32) x n", buf="L0B_MX", side="rhs",
                        order="ScaleRight NN order (2 x 16 boxes, column-major)", pad="n"))


@instr("MTE_L1_BT", pipe=Pipe.MTE1, dialect="vpto",
       operands=(Opnd("src", "ptr"), Opnd("dst", "ptr", "out"), Opnd("len_burst", "scalar"),
                 Opnd("nburst", "group")),
       dtype_key=("dst",))
def MTE_L1_BT(m: Any, src: Ptr, dst: Ptr, len_burst: Any, nburst: tuple[Any, ...]) -> None:
    """``count`` bursts of ``len_burst`` load units (one unit: 32 source bytes) from L1 to BT;
    after a burst source and destination advance by the burst plus their gap (in units).
    Source and destination element types f32->f32, i32->i32, or f16 / bf16 -> f32 (each value
    widened: a unit of 16 f16 values fills 64 bytes of BT)."""
    s = _ptr(src, "l1", "source")
    d = _ptr(dst, "bt", "destination")
    pair = (s.dtype.name, d.dtype.name)
    if pair not in (("f32", "f32"), ("i32", "i32"), ("f16", "f32"), ("bf16", "f32")):
        raise ExecutionError(f"{pair[0]} -> {pair[1]} is not a bias load (f32->f32, i32->i32, "
                             "f16->f32, bf16->f32)")
    if len(nburst) != 3:
        raise ExecutionError("nburst takes (count, src_gap, dst_gap)")
    count, sgap, dgap = (int(x) for x in nburst)
    units = _count(len_burst, "len_burst", 0)
    per = C0_BYTES // s.dtype.itemsize      # values of one unit
    for b in range(_count(count, "count", 0)):
        s_at = s.addr + b * (units + sgap) * C0_BYTES
        d_at = d.addr + b * (units + dgap) * per * d.dtype.itemsize
        vals = buffer_bytes(m, "l1", s_at, units * C0_BYTES, "the source", role="in")
        out = buffer_bytes(m, "bt", d_at, units * per * d.dtype.itemsize, "the destination",
                           role="out")
        out.view(d.dtype.np)[:] = vals.view(s.dtype.np).astype(d.dtype.np)


# ---- MAD ---------------------------------------------------------------------------------------

_TF32 = {"round_even": RoundMode.CAST_RINT, "round_away": RoundMode.CAST_ROUND}


def _mad(m: Any, op: str, kind: str, lhs: Any, rhs: Any, dst: Any, bias: Any, mv: Any, nv: Any,
         kv: Any, disable_gemv: bool, tf32_mode: Any, flags: dict[str, Any],
         mx: bool = False) -> None:
    a = _ptr(lhs, "l0a", "lhs")
    b = _ptr(rhs, "l0b", "rhs")
    c = _ptr(dst, "l0c", "dst")
    mm, n, k = _count(mv, "m"), _count(nv, "n"), _count(kv, "k")
    for name, v in (("m", mm), ("n", n), ("k", k)):
        if v > mm_maths.MAX_MKN:
            raise ExecutionError(f"{name} is {v}, at most {mm_maths.MAX_MKN}")
    # (n_dir orders the production of dst, never its values; unit_flag orders this op against
    # the FIXPIPE one in program order here, which the sanitizer does not see)
    # (MX: sat / nosat are handled below)
    skip = ("unit_flag", "n_dir", "sat", "nosat") if mx else ("unit_flag", "n_dir")
    on = [f for f, v in flags.items() if v not in (None, False) and f not in skip]
    uf = flags.get("unit_flag")
    if uf is not None and tuple(uf) not in (("check_only",), ("check_and_set",)):
        raise ExecutionError(f"unit_flag takes check_only or check_and_set, got {uf}")
    if on:
        raise _not_yet(op, f"the clause {on[0]}")
    # GEMV (m = 1 without disable_gemv): lhs is the tile level's 1-row Left tile (its k
    # elements contiguous) and the maths TGEMV's
    gemv = mm == 1 and not disable_gemv
    if mx:
        _mx_check(op, a, b, c, k, gemv, flags)
    if tf32_mode is not None:
        word = tf32_mode[0] if len(tf32_mode) == 1 else None
        if word not in _TF32:
            raise ExecutionError(f"tf32_mode takes round_even or round_away, got {tf32_mode}")
        if (a.dtype.name, b.dtype.name, c.dtype.name) != ("f32", "f32", "f32"):
            raise ExecutionError("tf32_mode(...) requires f32 lhs, rhs and dst")
    if a.dtype.is_float != c.dtype.is_float:
        raise ExecutionError(f"{a.dtype.name} x {b.dtype.name} -> {c.dtype.name} is not a "
                             "cube type combination")
    rows, n16 = _up(mm, BOX_ROWS), _up(n, BOX_ROWS)
    at = _left(m, a.dtype, 1 if gemv else rows, _up(k, _c0(a.dtype)))
    bt = _right(b.dtype, _up(k, _c0(b.dtype)), n16)
    ct = _acc(c.dtype, rows, n16)
    # tell the observer the bytes, and settle the tiles that owe them, before the tiles below
    # read them in place
    buffer_bytes(m, a.space, a.addr, at.nbytes, "the lhs", role="in")
    buffer_bytes(m, b.space, b.addr, bt.nbytes, "the rhs", role="in")
    buffer_bytes(m, c.space, c.addr, ct.nbytes, "the dst",
                 role="inout" if kind == "acc" else "out")
    tiles = [_placed(m, ct, c, (mm, n)), _placed(m, at, a, (mm, k)), _placed(m, bt, b, (k, n))]
    if kind == "bias":
        bp = _ptr(bias, "bt", "bias")
        if bp.dtype != c.dtype:
            raise ExecutionError(f"bias element type {bp.dtype.name} is not dst's "
                                 f"{c.dtype.name}")
        bs = tile_spec(TileType.Bias, bp.dtype, 1, n16, check_alignment=False)
        buffer_bytes(m, bp.space, bp.addr, bs.nbytes, "the bias", role="in")
        tiles.append(_placed(m, bs, bp, (1, n)))
    if mx:
        tiles = _with_scales(m, kind, tiles, a, b, mm, n, k)
    modes = mm_maths.mad_modes(m)
    saved = modes["tf32"]
    if tf32_mode is not None:
        modes["tf32"] = (True, _TF32[tf32_mode[0]])
    try:
        base = "TGEMV" if gemv else "TMATMUL"
        if mx:
            mm_maths.run_matmul(m, f"{base}_MX", "mx", tiles)
        else:
            mm_maths.run_matmul(m, base if kind == "plain" else f"{base}_{kind.upper()}", kind,
                                tiles)
    finally:
        modes["tf32"] = saved
    # the accumulator's new values into its bytes now (a deferred result would be owed by a
    # tile nothing else holds)
    buffer_bytes(m, c.space, c.addr, ct.nbytes, "the dst", role=None)
    if mx and flags.get("sat"):
        res = read_matrix(m, c, ct, "the dst")[:mm, :n]
        if not np.isfinite(res).all():
            raise _not_yet(op, "sat and a non-finite result (sat's normalisation of NaN / "
                           "infinite inputs and saturation of an overflowing sum are not "
                           "modelled)")


#: the MX data types of ``pto.mad_mx*`` (the chapter's target profile names f8E4M3FN; the tile
#: level's TMATMUL_MX also takes f8E5M2)
_MX_DATA = ("f8E4M3", "f8E5M2")


def _mx_check(op: str, a: Ptr, b: Ptr, c: Ptr, k: int, gemv: bool, flags: dict[str, Any]
              ) -> None:
    """The MX MAD's operand rules (16-cube-matmul.md, MX Matmul Model)."""
    if a.dtype.name not in _MX_DATA or b.dtype.name not in _MX_DATA or c.dtype.name != "f32":
        raise ExecutionError(f"{a.dtype.name} x {b.dtype.name} -> {c.dtype.name} is not an MX "
                             "type combination (f8E4M3FN / f8E5M2 lhs and rhs, f32 dst)")
    if k % (2 * mm_maths.MX_GROUP):
        raise ExecutionError(f"k is {k}: the MX matmul consumes k in multiples of 64 (two "
                             "32-element scale groups)")
    if gemv:
        raise _not_yet(op, "m = 1 without disable_gemv (the GEMV organisation of the MX "
                       "operands and scales is not settled)")
    if flags.get("sat") and flags.get("nosat"):
        raise ExecutionError("sat and nosat are mutually exclusive")


def _with_scales(m: Any, kind: str, tiles: list[Tile], a: Ptr, b: Ptr, mm: int, n: int,
                 k: int) -> list[Tile]:
    """The MAD tiles (c, a, b[, bias]) with the MX scale tiles the scale loads left for lhs /
    rhs (L0A_MX / L0B_MX at their addresses >> 4) in TMATMUL_MX's operand order: (c, a, sa,
    b, sb[, bias]), the accumulating form (c, c, a, sa, b, sb)."""
    groups = -(-k // mm_maths.MX_GROUP)
    placed = []
    for side, p, shape, valid in (("l0a", a, (mm, groups), (mm, groups)),
                                  ("l0b", b, (groups, n), (groups, n))):
        spec = _scale_spec(side, *shape)
        at = _scale_addr(p, "lhs" if side == "l0a" else "rhs")
        buffer_bytes(m, side + "_mx", at, spec.nbytes, f"the {side} scales", role="in")
        t = Tile.of(spec, valid)
        m.assign(t, at)
        placed.append(t)
    c, ta, tb, *bias = tiles
    sa, sb = placed
    if kind == "acc":
        return [c, c, ta, sa, tb, sb]
    return [c, ta, sa, tb, sb, *bias]


_MAD_FLAGS = (Param("disable_gemv", False), Param("sat", False), Param("nosat", False),
              Param("n_dir", False))


def _mad_sat(sig: Sig) -> None:
    """PTOAS: the sat / nosat clauses are for floating lhs / rhs / dst element types."""
    if not (sig.params.get("sat") or sig.params.get("nosat")):
        return
    for n in ("lhs", "rhs", "dst"):
        t = sig[n]
        if isinstance(t, PtrSpec) and not t.dtype.is_float:
            raise sig.fail(f"requires sat/nosat only for floating lhs/rhs/dst element types "
                           f"({n} is {t})")


def _mad_entry(name: str, kind: str, doc: str, mx: bool = False) -> Any:
    """A MAD entry of ``kind`` (plain, acc, bias); ``mx``: the MX form, which scales lhs and
    rhs by the E8M0 codes in the scale buffers, and has no tf32_mode and no floating-type
    check of sat / nosat (its operands are floating by type)."""
    bias = (Opnd("bias", "ptr"),) if kind == "bias" else ()
    tf32 = () if mx else (Opnd("tf32_mode", "group", optional=True),)
    operands = (Opnd("lhs", "ptr"), Opnd("rhs", "ptr"), Opnd("dst", "ptr", "out"), *bias,
                Opnd("m", "scalar"), Opnd("n", "scalar"), Opnd("k", "scalar"), *tf32,
                Opnd("unit_flag", "group", optional=True))

    def impl(m: Any, *vals: Any, disable_gemv: bool = False, sat: bool = False,
             nosat: bool = False, n_dir: bool = False) -> None:
        lhs, rhs, dst = vals[:3]
        rest = list(vals[3:])
        b = rest.pop(0) if kind == "bias" else None
        if mx:
            rest.insert(3, None)  # (no tf32_mode)
        mv, nv, kv, tf32_mode, unit_flag = (rest + [None, None])[:5]
        _mad(m, name.lower(), kind, lhs, rhs, dst, b, mv, nv, kv, disable_gemv, tf32_mode,
             {"sat": sat, "nosat": nosat, "n_dir": n_dir, "unit_flag": unit_flag}, mx=mx)
    impl.__doc__ = doc
    impl.__name__ = name
    return instr(name, pipe=Pipe.M, dialect="vpto", operands=operands, params=_MAD_FLAGS,
                 dtype_key=("lhs",), static=() if mx else (_mad_sat,))(impl)


MAD = _mad_entry("MAD", "plain",
                 "dst[i, j] = sum_k lhs[i, k] * rhs[k, j] (i < m, j < n, k < k): TMATMUL's "
                 "maths on the tiles at the L0A / L0B / L0C pointers; tf32_mode(round_even | "
                 "round_away) rounds f32 inputs to TF32 first.")
MAD_ACC = _mad_entry("MAD_ACC", "acc",
                     "dst[i, j] += sum_k lhs[i, k] * rhs[k, j]: TMATMUL_ACC's maths in place.")
MAD_BIAS = _mad_entry("MAD_BIAS", "bias",
                      "dst[i, j] = sum_k lhs[i, k] * rhs[k, j] + bias[j] (bias: N values in "
                      "BT of dst's type): TMATMUL_BIAS's maths.")
_MX_MAD_DOC = (" with lhs' = lhs * 2^(sa - 127), rhs' = rhs * 2^(sb - 127), one E8M0 scale "
               "per 32 k, the scales those mte_l1_l0a_mx / mte_l1_l0b_mx left for the lhs / "
               "rhs pointers: TMATMUL_MX's maths (k a multiple of 64). ``sat`` is executed "
               "where nothing exceptional arises (an error names it otherwise); ``nosat`` "
               "keeps the IEEE values.")
MAD_MX = _mad_entry("MAD_MX", "plain",
                    "dst[i, j] = sum_k lhs'[i, k] * rhs'[k, j]" + _MX_MAD_DOC, mx=True)
MAD_MX_ACC = _mad_entry("MAD_MX_ACC", "acc",
                        "dst[i, j] += sum_k lhs'[i, k] * rhs'[k, j]" + _MX_MAD_DOC, mx=True)
MAD_MX_BIAS = _mad_entry("MAD_MX_BIAS", "bias",
                         "dst[i, j] = sum_k lhs'[i, k] * rhs'[k, j] + bias[j] (f32 in BT)"
                         + _MX_MAD_DOC, mx=True)


# ---- FIXPIPE writeback ----------------------------------------------------------------------

_ATOMIC = {"add": np.add, "max": np.maximum, "min": np.minimum}
_ATOMIC_TYPES = {"f32": "f32", "f16": "f16", "bf16": "bf16", "s32": "i32", "s16": "i16",
                 "s8": "i8"}


def _atomic(clause: Any, dt: D.DType) -> Any:
    """The ufunc of ``atomic(type = T, op = add | max | min)`` (None without the clause)."""
    if clause is None:
        return None
    words = dict(zip(clause[0::2], clause[1::2], strict=False))
    if set(words) != {"type", "op"} or len(clause) != 4:
        raise ExecutionError(f"atomic takes (type = T, op = add | max | min), got {clause}")
    t, fn = str(words["type"]), str(words["op"])
    if fn not in _ATOMIC or t not in _ATOMIC_TYPES:
        raise ExecutionError(f"atomic(type = {t}, op = {fn}): types "
                             f"{', '.join(_ATOMIC_TYPES)}, ops add, max, min")
    if _ATOMIC_TYPES[t] != dt.name:
        raise _not_yet("mte_l0c_gm", f"atomic type {t} on a {dt.name} destination")
    return _ATOMIC[fn]


def _ub_of(m: Any, sub: int, op: str) -> Any:
    """The machine whose UB is sub-block ``sub``'s: in a mixed launch (``concurrent/``) that
    vector core's; on a single core its own (sub-block 0 only)."""
    cl = m.cluster
    if cl is None:
        if sub != 0:
            raise ExecutionError(f"UB sub-block {sub}: this launch has one core (run it as a "
                                 "mixed launch for two vector sub-blocks)")
        return m
    for st in cl.streams:
        core = st.machine.core
        if core and core[0] == "AIV" and len(core) > 2 and int(core[2]) == sub:
            if st.machine is not m and m.touched is not None:
                raise _not_yet(op, "an observer (the sanitizer does not model a cube core's "
                               "writes into a vector core's UB)")
            return st.machine
    raise ExecutionError(f"no vector core of sub-block {sub} in this launch")


#: the pre_quant modes executed: mode -> (accumulator type, destination types, kind); "scale"
#: multiplies by the payload's scale in f32 (the tile level's fix-pipe FLOAT quantisation,
#: ``isa/quant.py``), "convert" only converts (the payload selects nothing)
_QUANT = {
    "f32_f16": ("f32", ("f16",), "convert"), "f32_bf16": ("f32", ("bf16",), "convert"),
    **{f"qf322{d}_pre_{w}": ("f32", (d,), "scale") for d in ("f16", "bf16", "f32")
       for w in ("scalar", "vec")},
}


def _clause(words: tuple[Any, ...], what: str) -> tuple[Any, dict[str, Any]]:
    """(the payload or None, name -> value) of ``pre_quant(%p, mode = x)`` /
    ``pre_relu([%p, ]mode = x[, clip = %c])`` as the binder hands it over (operands and
    keywords in the order written)."""
    vals = list(words)
    payload = None
    if vals and not (isinstance(vals[0], str) and vals[0] in ("mode", "clip")):
        payload = vals.pop(0)
    named: dict[str, Any] = {}
    while vals:
        key = vals.pop(0)
        if key not in ("mode", "clip") or not vals:
            raise ExecutionError(f"{what}(...) takes [payload, ]mode = <mode>[, clip = %v], "
                                 f"got {words}")
        named[key] = vals.pop(0)
    if "mode" not in named:
        raise ExecutionError(f"{what}(...) needs mode = ...")
    return payload, named


def _per_channel(m: Any, p: Any, n: int, width: int, what: str) -> np.ndarray:
    """``n`` per-channel payload entries of ``width`` bytes from the FB pointer ``p``."""
    fp = _ptr(p, "fb", what)
    raw = buffer_bytes(m, fp.space, fp.addr, n * width, what, role="in")
    return raw.copy()


def _pre_stage(m: Any, op: str, acc: D.DType, dt: D.DType, pre_quant: Any, pre_relu: Any
               ) -> Any:
    """The FIXPIPE pre-stage as a function of (values, first channel, channels) -> values of
    ``dt``: pre_quant (scale), pre_relu, clip, then the conversion (``isa/quant.py``)."""
    from ..quant import convert, decode_scalar_scale, decode_vector_scale

    scale: Any = None
    if pre_quant is not None:
        payload, named = _clause(pre_quant, "pre_quant")
        mode = str(named["mode"])
        if "clip" in named:
            raise ExecutionError("clip belongs to pre_relu(...)")
        got = _QUANT.get(mode)
        if got is None:
            raise _not_yet(op, f"pre_quant mode {mode} (executed: {', '.join(_QUANT)})")
        src_t, dsts, kind = got
        if acc.name != src_t or dt.name not in dsts:
            raise ExecutionError(f"pre_quant mode {mode} takes {src_t} -> {'/'.join(dsts)}, "
                                 f"not {acc.name} -> {dt.name}")
        if kind == "scale" and mode.endswith("_vec"):
            def scale(c0: int, nc: int, p: Any = payload) -> np.ndarray:
                w = _per_channel(m, p, c0 + nc, 8, "the pre_quant payload").view(np.uint64)
                return decode_vector_scale(w[c0:c0 + nc]).astype(np.float32)
        elif kind == "scale":
            if isinstance(payload, (Ptr, np.ndarray)) or payload is None:
                raise ExecutionError(f"pre_quant mode {mode} takes a scalar payload")
            word = np.array([np.float32(payload)]).view(np.uint32).astype(np.uint64)
            words = decode_scalar_scale(word).astype(np.float32)

            def scale(c0: int, nc: int, w: Any = words) -> np.ndarray:
                return w
    elif dt != acc:
        raise _not_yet(op, f"{acc.name} -> {dt.name} without pre_quant (a conversion needs a "
                       "pre_quant mode)")
    relu: Any = None
    clip: Any = None
    if pre_relu is not None:
        payload, named = _clause(pre_relu, "pre_relu")
        mode = str(named["mode"])
        if "clip" in named:
            if dt.name != "f16":
                raise _not_yet(op, f"clip on a {dt.name} destination (executed: f16)")
            clip = np.float32(named["clip"])
        if mode in ("no_relu", "normal_relu"):
            if payload is not None:
                raise ExecutionError(f"pre_relu mode {mode} takes no payload")
            if mode == "normal_relu":
                def relu(x: np.ndarray, c0: int, nc: int) -> np.ndarray:
                    return np.maximum(x, np.float32(0))
        elif mode == "scalar_relu":
            if payload is None or isinstance(payload, (Ptr, np.ndarray)):
                raise ExecutionError("pre_relu mode scalar_relu takes a scalar payload")
            alpha = np.float32(payload)

            def relu(x: np.ndarray, c0: int, nc: int) -> np.ndarray:
                return np.where(x >= 0, x, x * alpha)
        elif mode == "vector_relu":
            fp = _ptr(payload, "fb", "the pre_relu payload")
            if fp.dtype.name not in ("f16", "bf16", "f32"):
                raise ExecutionError(f"vector_relu takes an f16 / bf16 / f32 FB pointer, got "
                                     f"{fp.dtype.name}")

            def relu(x: np.ndarray, c0: int, nc: int) -> np.ndarray:
                a = _per_channel(m, fp, c0 + nc, fp.dtype.itemsize, "the pre_relu payload")
                al = a.view(fp.dtype.np)[c0:c0 + nc].astype(np.float32)
                return np.where(x >= 0, x, x * al)
        else:
            raise ExecutionError(f"pre_relu mode {mode}: no_relu, normal_relu, scalar_relu, "
                                 "vector_relu")
    if pre_quant is None and relu is None and clip is None:
        return None

    def stage(x: np.ndarray, c0: int, nc: int) -> np.ndarray:
        with np.errstate(all="ignore"):
            y = x.astype(np.float32)
            if scale is not None:
                y = y * scale(c0, nc)
            if relu is not None:
                y = relu(y, c0, nc)
            if clip is not None:
                y = np.minimum(y, clip)
            return convert(y, dt)
    return stage


def _fixpipe(m: Any, op: str, src: Any, dst: Any, dst_space: str, mv: Any, nv: Any,
             src_stride: Any, dst_stride: Any, nz2nd: bool, nz2dn: Any, loop3: Any,
             atomic: Any, clauses: dict[str, Any], parts: Any = None) -> None:
    """Read the logical m x n accumulator (L0C, NZ with ``src_stride`` rows, a multiple of
    16, between box columns) and write it to ``dst`` row-major (``nz2nd``: element [i, j] at
    ``i * dst_stride + j``) or column-major (``nz2dn(1)``: at ``j * dst_stride + i``);
    ``loop3(count, src_stride3, dst_stride3)`` repeats it ``count`` times, the source moved by
    ``src_stride3`` 32-byte units and the destination by ``dst_stride3`` elements each time.
    ``parts`` (UB only): (sub-block, first row, rows, first column, columns) of each part of
    the result and the UB it goes to (``dst_mode``). ``sat`` / ``nosat`` change nothing when
    the element type stays (f32 keeps its exceptional values, i32 has none)."""
    c = _ptr(src, "l0c", "source")
    given = [k for k, v in clauses.items() if v not in (None, False)
             and k not in ("unit_flag", "sat", "nosat", "pre_quant", "pre_relu")]
    if given:
        raise _not_yet(op, f"the clause {given[0]}")
    if nz2nd == (nz2dn is not None):
        raise _not_yet(op, "a layout other than exactly one of nz2nd, nz2dn(...)")
    if nz2dn is not None and (len(nz2dn) != 1 or int(nz2dn[0]) != 1):
        raise _not_yet(op, f"nz2dn{tuple(nz2dn)} (executed: nz2dn(1))")
    mm, n = _count(mv, "m"), _count(nv, "n")
    rows = int(src_stride)
    if rows < mm or rows % BOX_ROWS:
        raise ExecutionError(f"src_stride {rows} must be a multiple of 16 of at least m = {mm}")
    if clauses.get("sat") and clauses.get("nosat"):
        raise ExecutionError("sat and nosat are mutually exclusive")
    reps, s3, d3 = 1, 0, 0
    if loop3 is not None:
        if len(loop3) != 3:
            raise ExecutionError("loop3 takes (count, src_stride3, dst_stride3)")
        reps, s3, d3 = (int(x) for x in loop3)
    ds = int(dst_stride)
    spec = _acc(c.dtype, rows, _up(n, BOX_ROWS))
    if parts is None:
        parts = ((None, 0, mm, 0, n),)
    if dst_space == "gm":
        if not isinstance(dst, np.ndarray):
            raise ExecutionError(f"the destination must be a GM pointer, got {dst!r}")
        dt = D.dtype(dst.dtype)
    else:
        dt = _ptr(dst, dst_space, "destination").dtype
    stage = _pre_stage(m, op, c.dtype, dt, clauses.get("pre_quant"), clauses.get("pre_relu"))
    if dt != c.dtype and (clauses.get("sat") or clauses.get("nosat")):
        raise _not_yet(op, f"sat / nosat on a {c.dtype.name} -> {dt.name} conversion")
    ufunc = _atomic(atomic, dt)
    isz = dt.itemsize
    for r, (sub, r0, nr, c0, nc) in ((r, part) for r in range(_count(reps, "the loop3 count", 0))
                                     for part in parts):
        cp = Ptr(c.space, c.addr + r * s3 * C0_BYTES, c.dtype)
        x = read_matrix(m, cp, spec, "the accumulator")[r0:r0 + nr, c0:c0 + nc]
        if stage is not None:
            x = stage(x, c0, nc)
        x = x.reshape(-1)
        i = np.arange(nr, dtype=np.int64)[:, None]
        j = np.arange(nc, dtype=np.int64)[None, :]
        at = ((i * ds + j) if nz2nd else (j * ds + i)).reshape(-1) + r * d3
        starts = at * isz
        if dst_space == "gm":
            gm = _gm_bytes(dst, op, "destination")
            _check_gm(gm, starts, isz, op, "destination")
            touch(m, "inout" if ufunc is not None else "out", "GM", gm, starts, isz)
            m.gm_barrier(dst)
            flat = gm[:gm.size - gm.size % isz].view(dt.np)
            if ufunc is not None:
                with np.errstate(all="ignore"):
                    x = ufunc(flat[at], x)
            flat[at] = x
            continue
        p = _ptr(dst, dst_space, "destination")
        dm = m if sub is None else _ub_of(m, sub, op)
        lo, hi = _span(starts, isz)
        out = buffer_bytes(dm, p.space, p.addr + lo, hi - lo, "the destination", role=None)
        touch(dm, "out", SPACES[dst_space], None, p.addr + starts, isz)
        out.view(dt.np)[(starts - lo) // isz] = x


_FIX_GROUPS = (Opnd("unit_flag", "group", optional=True),
               Opnd("pre_quant", "group", optional=True),
               Opnd("pre_relu", "group", optional=True),
               Opnd("nz2dn", "group", optional=True), Opnd("nz2nz", "group", optional=True),
               Opnd("loop3", "group", optional=True))
_FIX_FLAGS = (Param("nz2nd", False), Param("sat", False), Param("nosat", False))


def _sat_once(sig: Sig) -> None:
    """PTOAS: one of sat / nosat at most."""
    if sig.params.get("sat") and sig.params.get("nosat"):
        raise sig.fail("duplicate sat/nosat clause (sat and nosat are mutually exclusive)")


#: the accumulator -> destination element types of the pre_quant modes the acc-store design
#: (designs/acc-store-structured-interface.md, fixpipe-tpipe-design.md's mode table) states;
#: another mode is checked when it runs
_MODE_TYPES: dict[str, tuple[str, tuple[str, ...]]] = {
    "f32_f16": ("f32", ("f16",)), "f32_bf16": ("f32", ("bf16",)),
    **{f"{mode}_{w}": types for w in ("vec", "scalar") for mode, types in (
        ("req8", ("i32", ("i8", "ui8"))), ("deqf16", ("i32", ("f16",))),
        ("qf322f16_pre", ("f32", ("f16",))), ("qf322bf16_pre", ("f32", ("bf16",))),
        ("qf322f32_pre", ("f32", ("f32",))), ("qf322b8_pre", ("f32", ("i8", "ui8"))),
        ("qf322fp8_pre", ("f32", ("f8E4M3",))), ("qf322hif8_pre", ("f32", ("hif8",))),
        ("qs322bf16_pre", ("i32", ("bf16",))))},
}
_SCALE_TYPES = ("f16", "bf16", "f32")


def _clause_types(g: Any) -> tuple[Any, dict[str, Any]] | None:
    """(the payload's type or None, name -> value or type) of a clause as the verifier sees
    it (a :class:`GroupSpec`); None for an eager call or a clause :func:`_clause` refuses
    when it runs."""
    if not isinstance(g, GroupSpec):
        return None
    vals = list(g.items)
    payload = None
    if vals and not (isinstance(vals[0], str) and vals[0] in ("mode", "clip")):
        payload = vals.pop(0)
    named: dict[str, Any] = {}
    while len(vals) >= 2 and vals[0] in ("mode", "clip"):
        key = vals.pop(0)
        named[key] = vals.pop(0)
    return None if vals or "mode" not in named else (payload, named)


def _named(t: Any) -> str | None:
    dt = getattr(t, "dtype", t)
    return dt.name if isinstance(dt, D.DType) else None


def _acc_store_clauses(sig: Sig) -> None:
    """PTOAS's rules for the FIXPIPE clauses of an acc store, where the types state them
    (acc-store-structured-interface.md: a mode matches the source and destination types, a
    scalar mode's payload is an f16 / bf16 / f32 value, a vector mode's an f16 / bf16 / f32
    FB pointer, scalar_relu and vector_relu carry a payload, clip only for an f16, ui8 or
    signed 8/16-bit destination, and a ui8 one takes a 16-bit clip)."""
    src, dst = _named(sig["src"]), _named(sig["dst"])
    op = sig.ins.mnemonic
    quant = _clause_types(sig["pre_quant"])
    if quant is not None:
        payload, named = quant
        mode = str(named["mode"])
        want = _MODE_TYPES.get(mode)
        if src and dst and ((want is not None and (src != want[0] or dst not in want[1]))
                            or (mode == "no_convert" and src != dst)):
            raise sig.fail(f"pre_quant mode {mode} is incompatible with source element type "
                           f"'{src}' and destination element type '{dst}'")
        if mode.endswith("_vec"):
            if isinstance(payload, PtrSpec) and payload.dtype.name not in _SCALE_TYPES:
                raise sig.fail("vector pre_quant mode requires scaling pointer element type "
                               f"to be f16, bf16, or f32 (got {payload.dtype.name})")
        elif payload is not None and (isinstance(payload, PtrSpec)
                                      or _named(payload) not in _SCALE_TYPES):
            raise sig.fail(f"scalar pre_quant mode requires f16/bf16/f32 payload (mode {mode}, "
                           f"got {payload})")
    relu = _clause_types(sig["pre_relu"])
    if relu is not None:
        payload, named = relu
        mode = str(named["mode"])
        if mode == "scalar_relu" and payload is None:
            raise sig.fail("scalar_relu requires payload")
        if mode == "vector_relu" and payload is None:
            raise sig.fail("vector_relu requires payload (an FB address)")
        if mode == "pwl" and op == "mte_l0c_l1":
            raise sig.fail(f"pwl is not supported for target_profile {op}")
        if "clip" in named and dst is not None:
            if dst not in ("f16", "ui8", "i8", "i16", "s4"):
                raise sig.fail("clip requires destination element type to be f16, ui8, or "
                               f"signed 4/8/16-bit integer (got {dst})")
            if dst == "ui8" and _named(named["clip"]) not in ("ui16", "i16"):
                raise sig.fail("clip for ui8 destination requires ui16/signless i16 payload "
                               f"(got {_named(named['clip'])})")


#: PTOAS parses the ``atomic(type = T, op = O)`` clause on every acc store and refuses it
#: where the destination is not GM (an operand the L1 / UB stores declare to refuse it)
_NO_ATOMIC = Opnd("atomic", "group", optional=True)


def _gm_only_atomic(op: str, atomic: Any) -> None:
    if atomic is not None:
        raise ExecutionError(f"atomic is only supported for mte_l0c_gm (not {op})")


def _acc_store_layout(sig: Sig) -> None:
    """PTOAS's rules for the layout and atomic clauses of an acc store: ``nz2dn`` carries its
    loop0 source stride (``nz2dn(%stride)``), ``nz2nz`` writes an f32 destination, and
    ``atomic(...)`` is a GM store's (acc-store-structured-interface.md)."""
    dn = sig["nz2dn"]
    if isinstance(dn, GroupSpec) and not dn.items:
        raise sig.fail("nz2dn requires loop0_src_stride (write nz2dn(%stride))")
    dst = _named(sig["dst"])
    if isinstance(sig["nz2nz"], GroupSpec) and dst is not None and dst != "f32":
        raise sig.fail(f"nz2nz requires destination element type to be f32 (got {dst})")
    if sig.ins.mnemonic != "mte_l0c_gm" and sig.types.get("atomic") is not None:
        raise sig.fail(f"atomic is only supported for mte_l0c_gm (not {sig.ins.mnemonic})")


def _dst_mode(sig: Sig) -> None:
    """PTOAS: dst_mode names a sub-block (a value) or split_m / split_n."""
    g = sig["dst_mode"]
    if isinstance(g, GroupSpec) and not (
            len(g.items) == 1 and (not isinstance(g.items[0], str)
                                   or g.items[0] in ("split_m", "split_n"))):
        raise sig.fail("expected dst_mode(%sub_blockid), dst_mode(split_m), or "
                       f"dst_mode(split_n) (got dst_mode({', '.join(map(str, g.items))}))")


@instr("MTE_L0C_GM", pipe=Pipe.FIX, dialect="vpto",
       operands=(Opnd("src", "ptr"), Opnd("dst", "ptr", "out"), Opnd("m", "scalar"),
                 Opnd("n", "scalar"), Opnd("src_stride", "scalar"),
                 Opnd("dst_stride", "scalar"), Opnd("sid", "scalar"),
                 Opnd("l2_cache_ctrl", "scalar"), *_FIX_GROUPS,
                 Opnd("atomic", "group", optional=True)),
       params=_FIX_FLAGS, dtype_key=("src",),
       static=(_sat_once, _acc_store_clauses, _acc_store_layout))
def MTE_L0C_GM(m: Any, src: Ptr, dst: np.ndarray, mv: Any, nv: Any, src_stride: Any,
               dst_stride: Any, sid: Any, l2_cache_ctrl: Any, unit_flag: Any = None,
               pre_quant: Any = None, pre_relu: Any = None, nz2dn: Any = None,
               nz2nz: Any = None, loop3: Any = None, atomic: Any = None, *,
               nz2nd: bool = False,
               sat: bool = False, nosat: bool = False) -> None:
    """GM[dst + (i * dst_stride + j)] = acc[i, j] for i < m, j < n (``nz2nd``; ``nz2dn(1)``:
    at j * dst_stride + i), acc the L0C NZ tile at src with src_stride rows, repeated by
    ``loop3``; ``atomic(type = T, op = add | max | min)`` writes GM[x] op acc instead.
    ``sid`` / ``l2_cache_ctrl`` change no value."""
    _fixpipe(m, "mte_l0c_gm", src, dst, "gm", mv, nv, src_stride, dst_stride, nz2nd, nz2dn,
             loop3, atomic, {"unit_flag": unit_flag, "pre_quant": pre_quant,
                             "pre_relu": pre_relu, "nz2nz": nz2nz, "sat": sat, "nosat": nosat})


@instr("MTE_L0C_L1", pipe=Pipe.FIX, dialect="vpto",
       operands=(Opnd("src", "ptr"), Opnd("dst", "ptr", "out"), Opnd("m", "scalar"),
                 Opnd("n", "scalar"), Opnd("src_stride", "scalar"),
                 Opnd("dst_stride", "scalar"), *_FIX_GROUPS, _NO_ATOMIC),
       params=_FIX_FLAGS, dtype_key=("src",),
       static=(_sat_once, _acc_store_clauses, _acc_store_layout))
def MTE_L0C_L1(m: Any, src: Ptr, dst: Ptr, mv: Any, nv: Any, src_stride: Any, dst_stride: Any,
               unit_flag: Any = None, pre_quant: Any = None, pre_relu: Any = None,
               nz2dn: Any = None, nz2nz: Any = None, loop3: Any = None, atomic: Any = None,
               *, nz2nd: bool = False, sat: bool = False, nosat: bool = False) -> None:
    """As ``mte_l0c_gm``, into L1 at dst (this core's): element [i, j] of the m x n result,
    after pre_quant / pre_relu / clip, at ``i * dst_stride + j`` (``nz2nd``). ``atomic`` is
    refused (a GM store's clause)."""
    _gm_only_atomic("mte_l0c_l1", atomic)
    _fixpipe(m, "mte_l0c_l1", src, dst, "l1", mv, nv, src_stride, dst_stride, nz2nd, nz2dn,
             loop3, None, {"unit_flag": unit_flag, "pre_quant": pre_quant,
                           "pre_relu": pre_relu, "nz2nz": nz2nz, "sat": sat, "nosat": nosat})


@instr("MTE_L0C_UB", pipe=Pipe.FIX, dialect="vpto",
       operands=(Opnd("src", "ptr"), Opnd("dst", "ptr", "out"), Opnd("m", "scalar"),
                 Opnd("n", "scalar"), Opnd("src_stride", "scalar"),
                 Opnd("dst_stride", "scalar"), Opnd("dst_mode", "group"), *_FIX_GROUPS,
                 _NO_ATOMIC),
       params=_FIX_FLAGS, dtype_key=("src",),
       static=(_sat_once, _acc_store_clauses, _acc_store_layout, _dst_mode))
def MTE_L0C_UB(m: Any, src: Ptr, dst: Ptr, mv: Any, nv: Any, src_stride: Any, dst_stride: Any,
               dst_mode: tuple[Any, ...], unit_flag: Any = None, pre_quant: Any = None,
               pre_relu: Any = None, nz2dn: Any = None, nz2nz: Any = None, loop3: Any = None,
               atomic: Any = None, *, nz2nd: bool = False, sat: bool = False,
               nosat: bool = False) -> None:
    """As ``mte_l0c_gm``, into UB at dst: ``dst_mode(%sub_blockid)`` writes the whole m x n
    result to that vector sub-block's UB (0 or 1); ``split_m`` rows [0, m/2) to sub-block 0 and
    [m/2, m) to sub-block 1, ``split_n`` columns [0, n/2) and [n/2, n), each part at dst of its
    sub-block. In a mixed launch a sub-block's UB is that vector core's. ``atomic`` is
    refused (a GM store's clause)."""
    op = "mte_l0c_ub"
    _gm_only_atomic(op, atomic)
    mm, n = _count(mv, "m"), _count(nv, "n")
    if len(dst_mode) != 1:
        raise ExecutionError("dst_mode takes one of %sub_blockid, split_m, split_n")
    mode = dst_mode[0]
    if mode == "split_m":
        if mm % 2:
            raise ExecutionError(f"dst_mode(split_m) needs an even m, got {mm}")
        parts: Any = ((0, 0, mm // 2, 0, n), (1, mm // 2, mm // 2, 0, n))
    elif mode == "split_n":
        if n % 32:
            raise ExecutionError(f"dst_mode(split_n) needs n a multiple of 32, got {n}")
        parts = ((0, 0, mm, 0, n // 2), (1, 0, mm, n // 2, n // 2))
    elif isinstance(mode, str):
        raise ExecutionError(f"dst_mode takes %sub_blockid, split_m or split_n, got {mode}")
    else:
        sub = int(mode)
        if sub not in (0, 1):
            raise ExecutionError(f"dst_mode sub-block {sub}: 0 or 1")
        parts = ((sub, 0, mm, 0, n),)
    if isinstance(mode, str) and any(v is not None for v in (pre_quant, pre_relu, loop3)):
        raise ExecutionError(f"dst_mode({mode}) takes no pre_quant, pre_relu or loop3")
    _fixpipe(m, op, src, dst, "ub", mm, n, src_stride, dst_stride, nz2nd, nz2dn, loop3, None,
             {"unit_flag": unit_flag, "pre_quant": pre_quant, "pre_relu": pre_relu,
              "nz2nz": nz2nz, "sat": sat, "nosat": nosat}, parts)

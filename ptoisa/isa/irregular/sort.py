"""Sorting: TSORT32 (32-element blocks of (value, index) records) and TMRGSORT (merge of sorted
lists)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...dtypes import DType
from ...enums import Pipe, TileType
from ...errors import PtoError, RuntimeCheckError
from ...memory import Machine
from ...tile import Tile, TileSpec
from ..registry import Instr, Opnd, Param, Sig, instr, locs, same_dtype
from ..rules import row_major_nd
from ..spelling import TMP_LIKE_SRC, Attr, Form, Ptoas
from .common import _fail


def _records_per(dt: DType) -> int:
    """Elements of type ``dt`` in one 8-byte (value, index) record."""
    return 8 // dt.itemsize


def _pack_records(vals: np.ndarray, idx: np.ndarray, dt: DType) -> np.ndarray:
    """(n,) values + (n,) uint32 indices -> (n * 8/size,) elements of ``dt`` (raw records)."""
    n = vals.size
    rec = np.zeros((n, 8), np.uint8)
    vb = np.ascontiguousarray(vals.astype(dt.np)).view(np.uint8).reshape(n, dt.itemsize)
    rec[:, :dt.itemsize] = vb
    rec[:, 4:8] = np.ascontiguousarray(idx.astype(np.uint32)).view(np.uint8).reshape(n, 4)
    return rec.reshape(-1).view(dt.np)


def _records_of(elems: np.ndarray, dt: DType) -> tuple[np.ndarray, np.ndarray]:
    """A list of records for TMRGSORT: (values, the records' 8 raw bytes as uint64)."""
    raw = np.ascontiguousarray(elems).view(np.uint8).reshape(-1, 8)
    vals = np.ascontiguousarray(raw[:, :dt.itemsize]).view(dt.np).reshape(-1)
    return vals, raw.reshape(-1).view(np.uint64)


def _desc_order(vals: np.ndarray, idx: np.ndarray | None = None, n_real: int = 32
                ) -> np.ndarray:
    """Descending order of ``vals``; NaN sorts first; padding (positions >= n_real) after
    every real element. Equal values keep their position order (stable), or with ``idx``
    are ordered by ascending index value (the CPU simulator's comparator)."""
    key = vals.astype(np.float64)
    key = np.where(np.isnan(key), np.inf, key)
    if idx is None:
        return np.argsort(-key, kind="stable")
    pad = np.arange(vals.size) >= n_real
    return np.lexsort((idx, -key, pad))  # last key is the primary one


def _sort_dtypes(sig: Sig) -> None:
    d, s = sig["dst"], sig["src"]
    if isinstance(d, TileSpec) and isinstance(s, TileSpec) and d.dtype is not s.dtype:
        raise sig.fail(f"dst ({d.dtype}) and src ({s.dtype}) must have the same element type")
    ix = sig["idx"]
    if isinstance(ix, TileSpec) and ix.dtype.name != "ui32":
        raise sig.fail(f"idx must be ui32, got {ix.dtype}")


def _tsort32_runtime(ins: Instr, dst: Tile, src: Tile, idx: Tile, tmp: Any = None) -> None:
    vr, vc = src.valid_shape
    if tmp is None and vc % 32:
        raise _fail(ins, f"src valid cols {vc} must be a multiple of 32 (pass a tmp tile to "
                    "sort a partial last block)")
    need = vc * _records_per(src.dtype)
    if dst.cols < need:
        raise _fail(ins, f"dst needs {need} columns for {vc} sorted records, has {dst.cols}")
    if idx.valid_col < vc or idx.valid_row < vr and idx.valid_row != 1:
        raise _fail(ins, f"idx valid region {idx.valid_row}x{idx.valid_col} does not cover src "
                    f"valid region {vr}x{vc} (nor is it one row shared by every row)")


def _sort32_pad(m: Machine, dt: DType) -> Any:
    """What a partial last block is padded with (the target's ``sort32_pad``): -inf (the
    TSORT32 page), or PTOAS's a5 TileLib's value (lib/TileOps/a5/tsort32.py ``_pad_min``
    writes ``pto.f32(0xFF800000)`` / ``pto.f16(0xFC00)`` / ``pto.bf16(0xFF80)``: the -inf bit
    patterns as numbers, 4286578688.0 / 64512.0 / 65408 rounded to bf16 65536.0)."""
    if m.target.traits.sort32_pad == "code_as_number":
        code = {4: 0xFF800000, 2: 0xFC00 if dt.name == "f16" else 0xFF80}[dt.itemsize]
        return np.array(float(code)).astype(dt.np)[()]
    return np.array(-np.inf).astype(dt.np)[()]


def _sort_blocks(dst: Tile, src: Tile, idx: Tile, tmp: Tile | None, ties_by_idx: bool,
                 pad_value: Any = -np.inf) -> None:
    """TSORT32's semantics; ``ties_by_idx`` orders equal values by ascending idx value (the
    CPU simulator's comparator) instead of by position; ``pad_value`` pads a partial last
    block (with tmp)."""
    vr, vc = src.valid_shape
    if not (vr and vc):
        return
    nb = -(-vc // 32)
    per = _records_per(src.dtype)
    x = np.asarray(src.read()).astype(src.dtype.np)
    shared = idx.valid_row < vr  # one idx row for every src row (TSORT32.md: 1 x C)
    ix = np.asarray(idx.read(1 if shared else vr, vc)).view(np.uint32)
    for r in range(vr):
        out = []
        for b in range(nb):
            v = x[r, b * 32:(b + 1) * 32]
            i = ix[0 if shared else r, b * 32:(b + 1) * 32]
            if v.size < 32:
                pad = 32 - v.size
                v = np.concatenate([v, np.full(pad, pad_value, src.dtype.np)])
                i = np.concatenate([i, np.zeros(pad, np.uint32)])
            n_real = min(32, vc - b * 32)
            o = _desc_order(v, i if ties_by_idx else None, n_real)
            o = [k for k in o if k < n_real] if tmp is None else o
            out.append(_pack_records(v[o], i[o], src.dtype))
        row = np.concatenate(out)
        dst.write(row[None, : vc * per], r, 0)


def _tsort32_cpu(m: Machine, dst: Tile, src: Tile, idx: Tile, tmp: Tile | None = None) -> None:
    _sort_blocks(dst, src, idx, tmp, ties_by_idx=True)


@instr("TSORT32", family="irregular", pipe=Pipe.V, ptoas=TMP_LIKE_SRC,
       operands=(Opnd("dst", "tile", "out"), Opnd("src", "tile"), Opnd("idx", "tile"),
                 Opnd("tmp", "tile", "scratch", optional=True)),
       dtype_key=("src",),
       static=(locs(["dst", "src", "idx"], TileType.Vec), row_major_nd("dst", "src", "idx"),
               _sort_dtypes),
       runtime=(_tsort32_runtime,), impl_for={"cpu": _tsort32_cpu})
def TSORT32(m: Machine, dst: Tile, src: Tile, idx: Tile, tmp: Tile | None = None) -> None:  # noqa: N802
    """Per row, each block of 32 elements of src's valid region is sorted in descending order
    of value, together with its u32 index from ``idx`` (its row r, or its only row when idx
    has one valid row: shared by every row); dst row r receives the blocks'
    8-byte (value, index) records in order (f32: 2 elements per record, f16: 4, the value in
    the low bytes). With ``tmp`` a partial last block is padded with -inf (records keep the
    index 0; they sort last and only the first validCol records are written).

    Equal values: on a2a3/a5 they keep their position order (VBS32 sorts stably, the ISA's
    vbitsort page; the TSORT32 page's "ties broken by smaller index first" agrees whenever
    idx ascends with position, as the usual iota does); on cpu they are ordered by ascending
    idx value, as the simulator's comparator does (values [5, 5] with idx [7, 3] give the
    records (5, 3), (5, 7) on cpu and (5, 7), (5, 3) on the NPUs).

    Under PTOAS's vpto backend on a5 (trait ``sort32_pad`` "code_as_number") the padding is
    the TileLib's value (lib/TileOps/a5/tsort32.py ``_pad_min``, template_tsort32_with_tmp):
    f32 4286578688.0, a large positive number that sorts *first*, so a row's first records
    are padding (index 0 here; the TileLib's vbitsort reads idx past its valid columns)."""
    _sort_blocks(dst, src, idx, tmp, ties_by_idx=False, pad_value=_sort32_pad(m, src.dtype))


class MrgSortExecutedNumList:
    """``pto::MrgSortExecutedNumList``: records consumed from each list by TMRGSORT."""

    __slots__ = ("mrgSortList0", "mrgSortList1", "mrgSortList2", "mrgSortList3")

    def __init__(self, l0: int = 0, l1: int = 0, l2: int = 0, l3: int = 0) -> None:
        self.mrgSortList0, self.mrgSortList1 = l0, l1
        self.mrgSortList2, self.mrgSortList3 = l2, l3

    def as_tuple(self) -> tuple[int, int, int, int]:
        return (self.mrgSortList0, self.mrgSortList1, self.mrgSortList2, self.mrgSortList3)

    def to_bytes(self) -> bytes:
        return np.array(self.as_tuple(), np.uint16).tobytes()

    @classmethod
    def from_bytes(cls, raw: bytes) -> MrgSortExecutedNumList:
        v = np.frombuffer(raw[:8].ljust(8, b"\0"), np.uint16)
        return cls(*(int(x) for x in v))

    def __repr__(self) -> str:
        return f"MrgSortExecutedNumList{self.as_tuple()}"


def merge_records(lists: list[tuple[np.ndarray, np.ndarray]], exhausted: bool
           ) -> tuple[np.ndarray, list[int]]:
    """Merge descending lists of records (values, raw 8-byte records as uint64, see
    :func:`_records_of`); ties go to the lower list number. With ``exhausted`` the merge stops
    when any list runs out. A record moves whole: the bytes between an f16 value and its
    index (the 2 bytes of padding of the (value, pad, index) record) come from the source."""
    heads = [0] * len(lists)
    out: list[Any] = []
    total = sum(v.size for v, _ in lists)
    keys = [np.where(np.isnan(v.astype(np.float64)), np.inf, v.astype(np.float64))
            for v, _ in lists]
    while len(out) < total:
        best = -1
        for k, (v, _) in enumerate(lists):
            if heads[k] < v.size and (best < 0 or keys[k][heads[k]] > keys[best][heads[best]]):
                best = k
        out.append(lists[best][1][heads[best]])
        heads[best] += 1
        if exhausted and heads[best] == lists[best][0].size:
            break
    return np.array(out, np.uint64), heads


def _mrg_static(sig: Sig) -> None:
    for o in sig.ins.operands:
        t = sig[o.name]
        if isinstance(t, TileSpec) and t.rows != 1:
            raise sig.fail(f"{o.name} must have Rows == 1, got {t.rows}")
    names = [n for n in ("dst", "src0", "src1", "src2", "src3") if isinstance(sig[n], TileSpec)]
    same_dtype(*names)(sig)


def _tmrgsort_a2(vals: list[Any]) -> str:
    # TMRGSORT(dst, executed, tmp, src0, ...): with an executed-list first, a2 is the tmp tile
    return "scratch" if len(vals) > 2 and not isinstance(vals[1], Tile) else "in"


@instr("TMRGSORT", family="irregular", pipe=Pipe.V, access_roles={"a2": _tmrgsort_a2},
       ptoas=Ptoas(
           # PTOAS: ins(src0, src1[, src2[, src3]], tmp) outs(dst, executed: vector<4xi16>);
           # the manual's format2 writes tmp in outs: ins(src0..srcN) outs(dst, tmp, executed);
           # 'no_tmp' after the sources leaves tmp to PTOAS (implicit-tmp design: format2)
           forms={"pto.tmrgsort": (
               *(Form(inputs=srcs, outs=("dst", "a1"), keyword="no_tmp")
                 for srcs in (("src0", "src1"), ("src0", "src1", "src2"),
                              ("src0", "src1", "src2", "src3"))),
               Form(inputs=("a1", "a2")),
               Form(inputs=("src0", "src1", "a2"), outs=("dst", "a1")),
               Form(inputs=("src0", "src1", "src2", "a2"), outs=("dst", "a1")),
               Form(inputs=("src0", "src1", "src2", "src3", "a2"), outs=("dst", "a1")),
               Form(inputs=("src0", "src1"), outs=("dst", "a2", "a1")),
               Form(inputs=("src0", "src1", "src2"), outs=("dst", "a2", "a1")),
               Form(inputs=("src0", "src1", "src2", "src3"), outs=("dst", "a2", "a1")))},
           attrs={"exhausted": Attr("exhausted")}),
       operands=(Opnd("dst", "tile", "out"), Opnd("a1", "any"), Opnd("a2", "any", optional=True),
                 Opnd("src0", "tile", optional=True), Opnd("src1", "tile", optional=True),
                 Opnd("src2", "tile", optional=True), Opnd("src3", "tile", optional=True)),
       params=(Param("exhausted", False),),
       dtype_key=("dst",),
       static=(locs(["dst", "src0", "src1", "src2", "src3"], TileType.Vec),
               row_major_nd("dst", "src0", "src1", "src2", "src3"), _mrg_static))
def TMRGSORT(m: Machine, dst: Tile, a1: Any, a2: Any = None, src0: Tile | None = None,  # noqa: N802
             src1: Tile | None = None, src2: Tile | None = None, src3: Tile | None = None, *,
             exhausted: Any) -> None:
    """Merge sorted lists of 8-byte (value, u32 index) records into descending order.

    * ``TMRGSORT(dst, src, blockLen)``: src's valid row holds sorted blocks of ``blockLen``
      elements; each group of 4 consecutive blocks is merged into one run of 4*blockLen
      elements of dst. blockLen must be a multiple of 64, src valid cols a multiple of
      4*blockLen (1..255 groups). Under PTOAS's vpto backend on a5 (trait
      ``mrgsort_partial_group``) a partial last group is allowed: its records are neither
      merged nor written (lib/TileOps/a5/tmrgsort.py ``template_tmrgsort_single_list``
      repeats ``valid_cols // (4 * blockLen)`` times).
    * ``TMRGSORT<exhausted>(dst, executedNumList, tmp, src0, src1[, src2[, src3]])``: merges
      2-4 sorted lists (each src's valid cols); dst receives the first dst-valid-cols
      elements of the merge (a narrower dst keeps the top records: TopK). With exhausted=true
      the merge stops when a list runs out; ``executedNumList`` (a
      :class:`MrgSortExecutedNumList`) receives the number of records taken from each list.
      Ties go to the lower-numbered list.

    Records move whole, on every target: an f16 record is (value, 2 bytes of padding, index)
    and its padding bytes reach dst as they were in the source (as the CPU simulator's merge
    copies each 8-byte struct).
    """
    dt = dst.dtype
    per = _records_per(dt)
    if isinstance(a1, Tile):
        src = a1
        if a2 is None or isinstance(a2, Tile):
            raise PtoError("single-list form needs (dst, src, blockLen)")
        block = int(a2)
        vc = src.valid_col
        if block <= 0 or block % 64:
            raise RuntimeCheckError(f"blockLen must be a positive multiple of 64, got {block}")
        ragged = m.target.traits.mrgsort_partial_group  # (PTOAS's a5 TileLib: vpto)
        groups = vc // (4 * block)
        if ragged and not 1 <= groups <= 255:
            raise RuntimeCheckError(f"src valid cols {vc} must hold 1..255 whole groups of "
                                    f"4*blockLen ({4 * block}) elements")
        if not ragged and (vc % (4 * block) or not 1 <= groups <= 255):
            raise RuntimeCheckError(f"src valid cols {vc} must be 1..255 times 4*blockLen "
                                    f"({4 * block})")
        if dst.cols < groups * 4 * block:
            raise RuntimeCheckError(f"dst has {dst.cols} columns, needs {groups * 4 * block}")
        row = np.asarray(src.read(1, vc)).reshape(-1)
        out = []
        for g in range(groups):
            lists = [_records_of(row[(4 * g + k) * block:(4 * g + k + 1) * block], dt)
                     for k in range(4)]
            out.append(merge_records(lists, False)[0].view(dt.np))
        dst.write(np.concatenate(out)[None, :], 0, 0)
        return
    srcs = [s for s in (src0, src1, src2, src3) if s is not None]
    if len(srcs) < 2:
        raise PtoError("multi-list form needs 2 to 4 source lists")
    lists = [_records_of(np.asarray(s.read(1, s.valid_col)).reshape(-1)[
        : s.valid_col // per * per], dt) for s in srcs]
    ex = bool(exhausted) if not isinstance(exhausted, str) else exhausted.lower() == "true"
    merged, heads = merge_records(lists, ex)
    # the merge goes to tmp, and dst receives its first dst-valid-cols elements (upstream's
    # TMrgsort: vmrgsort4 into tmp, then MovUb2Ub of dst.GetValidCol(); PTOAS's TileLib
    # template copies the same span): a dst narrower than the merge keeps its top records
    rec = merged.view(dt.np)[:dst.valid_col]
    if rec.size:
        dst.write(rec[None, :], 0, 0)
    h = heads + [0] * (4 - len(heads))
    if isinstance(a1, MrgSortExecutedNumList):
        a1.mrgSortList0, a1.mrgSortList1, a1.mrgSortList2, a1.mrgSortList3 = \
            (int(x) for x in h)
    elif isinstance(a1, np.ndarray) and a1.size == 4 and a1.dtype.kind in "iu":
        a1.reshape(-1)[:] = h  # (a ``vector<4xi16>`` executed list of a .pto program)
    elif a1 is not None:
        # never left as it was: the counts would be a silent stale value
        raise PtoError(f"executedNumList must be a MrgSortExecutedNumList or 4 integers, got "
                       f"{type(a1).__name__}")


# ==== TDEQUANT ====================================================================================

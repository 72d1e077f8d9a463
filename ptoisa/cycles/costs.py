"""What one instruction costs: features of its operands, a per-target table of linear cost
rules (data), and the fitter that sets the table's coefficients from hardware measurements.

A rule is ``cycles = c0 + c1 * x1 + c2 * x2`` where ``(x1, x2)`` come from a named *basis*
computed from the operands (vector repeats, rows, DMA transfers and bytes, cube fractals...);
the a5 vector functions' row loop (basis ``vf2``) is
``c0 + max(c1 * x1 + c3, c4 * x1 + c2 * x2)`` instead (see :data:`MAX_FORM`).
The hardware structure lives in the bases:

* the vector unit works on 256-byte repeats, one row after another (a row of ``C`` elements of
  ``b`` bytes takes ``ceil(C*b/256)`` repeats, so ``rep = rows * that``);
* UB-to-UB copies (TMOV Vec->Vec) move 32-byte blocks in bursts, one burst for a whole tile and
  one burst per row otherwise, each burst paying a fixed overhead;
* a GM transfer (TLOAD/TSTORE) is one DMA instruction per step of the GM view's three outer
  dimensions, each paying a latency, plus bytes over the pipe bandwidth;
* the cube works on fractals (16 x 32 bytes x 16) per cycle, f32 at half rate, after a head.

The table (:data:`A2A3_PRIORS`: op -> variants; a variant has a condition on the features, a
basis, a hardware class whose members share coefficients, and coefficients per element type
with ``any`` as the fallback) says which basis each instruction uses. The fitted coefficients
come from the hardware pack (``ptoisa/cycles/a2a3_fit.json``, written by :func:`fit_table`
through benchmarks/cycles_fit.py); the priors (upstream's per-intrinsic head/slope numbers, or
a pipe default, :data:`PIPE_DEFAULT`) fill what the pack does not measure: those are
estimates. a5: the instructions the A5 pack measures have their own vector-function loop
formulas fitted to it (:data:`A5_PRIORS`, ``a5_fit.json``), every other one the a2a3 numbers
(estimates). The vector micro-ops (VPTO) are priced per port use inside their vector
function from upstream's A5 VF-simulator table, the DMA micro-ops as one DMA instruction
(:data:`A5_MICRO`, all estimates). See docs/cycles.md.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from ..enums import Pipe, TileType
from ..errors import PtoError
from ..targets import DEFAULT_TARGET, TargetLike
from ..tensor import GlobalTensor
from ..tile import Tile

Features = dict[str, Any]
#: (c0, c1, c2), and for a :data:`MAX_FORM` rule c3 and c4 (0 and 1 where absent)
Coef = tuple[float, ...]


# ---- features of one executed instruction ---------------------------------------------------

def _nbytes(n: int, dt: Any) -> int:
    """The bytes ``n`` elements of ``dt`` occupy on the chip: packed 4-bit types hold two a
    byte (upstream's A5 TLoad / TExtract move fp4 as bytes, halving the element strides),
    though ptoisa stores one a byte."""
    return (n + 1) // 2 if dt.packed else n * dt.itemsize


def _tile_bytes(t: Tile) -> int:
    return _nbytes(t.valid_row * t.valid_col, t.dtype)


#: the A5 MX scale layouts: upstream's a5 TLoad moves a scale view with one DMA instruction
#: whatever its 5-D shape (TLoadMxCubeAND2ZZ / ADN2ZZ / BND2NN / BDN2NN: one ND-to-NZ
#: instruction over the tile's valid region; ZZ2ZZ / NN2NN: one instruction of gShape1 bursts)
_MX_LAYOUTS = frozenset({"MX_A_ZZ", "MX_A_ND", "MX_A_DN", "MX_B_NN", "MX_B_ND", "MX_B_DN"})


#: a dtype kind's letter in a conversion's class (``cvt_bits``)
_KIND = {"float": "f", "int": "i", "uint": "u", "bool": "b"}


def features(ins: Any, values: list[Any], params: dict[str, Any], machine: Any = None
             ) -> Features:
    """The operand facts the cost rules look at (plain numbers and names). ``machine``: the
    machine running it (a register-driven DMA micro-op reads its loop registers there)."""
    if ins.dialect == "vpto":
        return _micro_features(ins, values, machine)
    tiles: list[tuple[str, Tile]] = []
    gms: list[GlobalTensor] = []
    scalar_first = False
    first_data: str | None = None
    for o, v in zip(ins.operands, values, strict=False):
        if isinstance(v, Tile):
            tiles.append((o.name, v))
            if o.role == "in" and first_data is None:
                first_data = "tile"
        elif isinstance(v, GlobalTensor):
            gms.append(v)
        elif o.kind == "scalar" or isinstance(v, (int, float, np.number)):
            if o.role == "in" and first_data is None:
                first_data = "scalar"
                scalar_first = True
    f: Features = {"op": ins.name, "family": ins.family}
    if tiles:
        # the tile the instruction sweeps: the one with the most valid bytes (dst on ties)
        _, p = max(tiles, key=lambda nt: _tile_bytes(nt[1]))
        b = p.dtype.itemsize
        r, c = p.valid_row, p.valid_col
        rowrep = max(1, math.ceil(c * b / 256))
        whole_p = r == p.rows and c == p.cols
        # a5 vector functions: one loop over the tile's vectors when rows are whole (1D), else
        # a loop per row (2D); rows of one vector are one loop over the rows, a vector each,
        # with no inner loop to restart (A5 pack: TCVT bf16 -> f16 10 x 128 of a 10 x 192 tile
        # costs 65, 1 cycle a row more than 3 x 128; f16 -> hif8 1 x 1280, 10 vectors in one
        # loop, 66; f16 TSQRT 10 x 128 of 10 x 192 103, 1 x 1280 104)
        flat_rows = c == p.cols or p.rows == 1
        f["path"] = "1D" if flat_rows or rowrep == 1 else "2D"
        f["vectors_1d"] = math.ceil(r * c * b / 256) if flat_rows else r * rowrep
        f["vectors"] = f["vectors_1d"] if f["path"] == "1D" else r * rowrep
        f.update(dtype=p.dtype.name, R=r, C=c, b=b, rowrep=rowrep, rep=r * rowrep,
                 loc=p.loc.name, partial=1 if (c * b) % 256 else 0,
                 flat=math.ceil(r * c * b / 256) if whole_p else r * rowrep)
        dst = tiles[0][1]
        src = tiles[1][1] if len(tiles) > 1 else dst
        f["dst_loc"], f["src_loc"] = dst.loc.name, src.loc.name
        f["dst_R"] = dst.valid_row
        # a conversion's cost depends on both element types (a5: f32 -> fp8 is ~7x f32 -> f16)
        f["cvt"] = f"{src.dtype.name}->{dst.dtype.name}"
        # ... and the instruction sequence on their kinds and widths alone (a5: f32 -> f8E4M3,
        # f8E5M2 and hif8 are one loop, so are bf16 -> either fp4): "f32->f8", "i16->f32"
        f["cvt_bits"] = f"{_KIND[src.dtype.kind]}{src.dtype.bits}->" \
            f"{_KIND[dst.dtype.kind]}{dst.dtype.bits}"
        f["cvt_loop"] = _cvt_loop(f["cvt_bits"])
        # vectors of the swept tile one trip of the 1D loop handles: upstream's A5 TCVT widens
        # 8- and 4-bit sources into two vectors a trip (cast8to32_1D: 128 values, two f32
        # stores; castFp4toBf16_1D: 256 values, two bf16 stores), every other loop one
        f["trip_vectors"] = 2 if ins.name == "TCVT" and src.dtype.bits <= 8 \
            and dst.dtype.bits >= 4 * src.dtype.bits else 1
        f["in_place"] = dst is src or (dst.addr is not None and dst.addr == src.addr
                                      and dst.loc == src.loc and len(tiles) > 1)
        whole = all(t.valid_row == t.rows and t.valid_col == t.cols for _, t in tiles[:2])
        blocks_row = max(1, math.ceil(c * b / 32))
        # what a move carries: the smaller of dst and src (an extract's window, an insert's src)
        f["move_elems"] = min(t.valid_row * t.valid_col for _, t in tiles[:2])
        f["bursts"], f["blocks"] = (1, math.ceil(r * c * b / 32)) if whole else \
            (r, r * blocks_row)
    if gms:
        g = gms[0]
        s = g.spec.shape
        f["gm_layout"] = g.spec.layout.name
        f["dtype"] = f.get("dtype") if tiles and not _is_conv(tiles) else g.dtype.name
        f["n_dma"] = 1 if f["gm_layout"] in _MX_LAYOUTS else s[0] * s[1] * s[2]
        f["bytes"] = _nbytes(g.spec.numel, g.dtype)
        acc = dict(tiles).get("src")
        if acc is not None and acc.loc is TileType.Acc:
            # out of L0C through the fix-pipe: one copy_matrix_cc_to_gm whatever the GM
            # layout (upstream's a2a3 TStoreAcc: NZ2ND, NZ2NZ and NZ2NC1HWC0 alike), writing
            # the Acc tile's valid region
            f["n_dma"] = 1
            f["bytes"] = acc.valid_row * acc.valid_col * g.dtype.itemsize
    elif tiles:
        f["bytes"] = sum(_tile_bytes(t) for _, t in tiles[:1])
    named = dict(tiles)
    if "aMatrix" in named and "bMatrix" in named:
        # A and B by their roles (Left / Right): an accumulating MX form (cOut, cIn, a, sa, b,
        # sb) binds its operands positionally, so "aMatrix" is cIn and "bMatrix" sa there
        a = next((t for _, t in tiles if t.loc is TileType.Left), named["aMatrix"])
        bt = next((t for _, t in tiles if t.loc is TileType.Right), named["bMatrix"])
        m, k, n = a.valid_row, a.valid_col, bt.valid_col
        f["dtype"] = a.dtype.name
        f["fractals"] = math.ceil(m / 16) * math.ceil(k * a.dtype.itemsize / 32) * \
            math.ceil(n / 16)
    f["operand_order"] = "scalar_tile" if scalar_first else "tile_scalar"
    # DEFAULT / HIGH_PRECISION (TRECIP, TDIVS...: a5's high-precision loops are ~100x slower)
    algo = params.get("PrecisionType")
    f["algo"] = getattr(algo, "name", "DEFAULT") if algo is not None else "DEFAULT"
    # the index forms of TGATHER / TSCATTER (an index tile) against the mask / compare forms
    f["index_form"] = isinstance(named.get("src1", named.get("indexes")), Tile)
    f["is_binary"] = bool(params.get("isBinary", False)) or any(
        o.name == "isBinary" and bool(v) for o, v in zip(ins.operands, values, strict=False))
    return f


#: the float conversions from a 16-bit source that upstream's A5 TCvt.hpp runs as one load,
#: one or two vcvt and one store a trip with nothing between trips (cast16to16, cast16to32 and
#: the f16 -> hif8 loop): the A5 pack measures them alike at every shape it has two of them
#: at (2D rows: 75 / 75 / 76 cycles at 3 x 9 vectors of the wider tile, 131 / 131 / 132 at 10 x
#: 30, 193 / 193 / 194 at 10 x 100; rows of one vector: 65 / 66 / 65 at 10 rows)
_CVT_FROM16 = frozenset({"f16->f16", "f16->f32", "f16->f8"})


def _cvt_loop(bits: str) -> str:
    """A conversion's loop class (TCVT's cost key on a5): its ``cvt_bits``, except the
    16-bit float source loops of :data:`_CVT_FROM16`, one class ``f16->f8|f16|f32``."""
    return "f16->f8|f16|f32" if bits in _CVT_FROM16 else bits


def _micro_features(ins: Any, values: list[Any], machine: Any) -> Features:
    """A micro-op's facts: the element type of its first register or pointer (``b``: its
    bytes, which pick a latency), and for a DMA copy its rows and bytes (one DMA
    instruction)."""
    f: Features = {"op": ins.name, "family": ins.family, "n_dma": 0, "bytes": 0}
    named = {o.name: v for o, v in zip(ins.operands, values, strict=False)}
    for v in values:
        dt = getattr(v, "dtype", None)
        if dt is not None and hasattr(v, "spec") and not isinstance(v, np.ndarray):
            f["dtype"], f["b"] = dt.name, dt.itemsize
            break
    if "len_burst" in named:
        rows = 1
        if "nburst" in named:  # pto.mte_gm_ub / mte_ub_gm: nburst(n, ...) loop(n, ...)...
            rows = int(named["nburst"][0])
            for g in named.get("loop") or ():
                rows *= int(g[0])
        else:  # pto.copy_gm_to_ubuf / copy_ubuf_to_gm: n_burst and the loop registers
            rows = int(named["n_burst"])
            way = "outtoub" if ins.pipe is Pipe.MTE2 else "ubtoout"
            regs = getattr(machine, "micro_regs", {}).get("dma_loop", {})
            for count in regs.get((way, "size"), ()):
                rows *= max(int(count), 1)
        f["n_dma"], f["rows"] = 1, rows
        f["bytes"] = rows * int(named["len_burst"]) * _BURST_UNIT.get(ins.name, 1)
    elif "m" in named and "n" in named and "k" in named:  # pto.mad*: TMATMUL's fractals
        a = named.get("lhs")
        isz = a.dtype.itemsize if hasattr(a, "dtype") else 2
        mm, nn, kk = (int(named[x]) for x in ("m", "n", "k"))
        f["dtype"] = a.dtype.name if hasattr(a, "dtype") else "f16"
        f["fractals"] = math.ceil(mm / 16) * math.ceil(kk * isz / 32) * math.ceil(nn / 16)
    elif "m" in named and "n" in named:  # FIXPIPE out of L0C: m x n f32 accumulators
        f["n_dma"], f["bytes"] = 1, int(named["m"]) * int(named["n"]) * 4
    elif "repeat_times" in named and "block_num_32b" in named:  # pto.raw_fill_l1
        f["n_dma"] = 1
        f["bytes"] = int(named["repeat_times"]) * int(named["block_num_32b"]) * 32
    elif ins.name in _HEAD_ONLY:  # a cube load whose size these features do not read
        f["n_dma"] = 1
    simt = getattr(machine, "micro_regs", {}).get("simt")
    n = 1 if simt is None else simt.n  # (a SIMT op outside a SIMT body: one workitem)
    f["threads"], f["warps"] = n, math.ceil(n / 32)
    return f


#: the bytes of one ``len_burst`` unit where a cube micro-op counts in blocks (PTOAS's
#: lowering, isa/micro/cube.py): mte_l1_ub and mte_l1_bt in 32-byte units, mte_l1_fb in 64
_BURST_UNIT = {"MTE_L1_UB": 32, "MTE_L1_BT": 32, "MTE_L1_FB": 64}
#: cube loads priced by their transfer's head alone (see A5_MICRO)
_HEAD_ONLY = frozenset({"MTE_GM_L1_FRAC", "MTE_L1_L0A", "LOAD_CBUF_TO_CA", "MTE_L1_L0B",
                        "MTE_L1_L0A_MX", "MTE_L1_L0B_MX"})


def _is_conv(tiles: list[tuple[str, Tile]]) -> bool:
    return any(hasattr(t, "conv_shape") for _, t in tiles)


# ---- bases: (x1, x2) from the features ------------------------------------------------------

def _g(f: Features, k: str) -> float:
    return float(f.get(k, 0) or 0)


BASES: dict[str, Callable[[Features], tuple[float, float]]] = {
    # vector repeats (256 B, row by row); rows that are not whole repeats run masked (x2)
    "vec": lambda f: (_g(f, "rep"), _g(f, "partial")),
    # tile-scalar ops: repeats row by row; 32-bit rows of whole repeats pay a floor (x2): an
    # empirical term (the measured f32 heads are ~15 cycles above the 16-bit and masked ones)
    "vecs": lambda f: (_g(f, "rep"), 1.0 if f.get("b") == 4 and not f.get("partial") else 0.0),
    # vector repeats over the tile as one contiguous range when the valid region is the whole
    # tile (the unary math functions), else row by row
    "flat": lambda f: (_g(f, "flat"), 0.0),
    # per-row work (x1) plus repeats (x2)
    "row": lambda f: (_g(f, "R"), 0.0),
    # per row of the destination (a gather's source may be a wider or longer table)
    "dstrow": lambda f: (_g(f, "dst_R"), 0.0),
    # row reductions: rows of one repeat reduce one per row (x1); wider rows fold first (x2)
    "rowred": lambda f: ((_g(f, "R"), 0.0) if f.get("rowrep", 1) == 1
                         else (0.0, _g(f, "rep"))),
    # column reductions (empirical): rows^2 per repeat of a row
    "colred": lambda f: (_g(f, "R") ** 2 / max(1.0, _g(f, "rowrep")), 0.0),
    # UB copies: bursts (x1), 32-byte blocks (x2)
    "copy": lambda f: (_g(f, "bursts"), _g(f, "blocks")),
    # GM transfers: DMA instructions (x1), bytes (x2)
    "dma": lambda f: (_g(f, "n_dma"), _g(f, "bytes")),
    "bytes": lambda f: (0.0, _g(f, "bytes")),
    # a5 vector functions: 1D one loop over the tile's 256-byte vectors (x1; rows of one
    # vector: one a row), x2 1 for a single trip, at most ``trip_vectors`` (1 but for TCVT's
    # widening 8- and 4-bit loops: 2) vectors (a loop that never branches back: TMINS, TNEG
    # f32 1 x 64 2 cycles under their line, TADD 3, TCVT f32 -> fp8 3, fp4 -> bf16 1 x 256,
    # two bf16 vectors in one trip, 1 above); 2D a loop per
    # row: vectors (x1) and rows (x2), combined by MAX_FORM (not summed)
    "vf1": lambda f: (_g(f, "vectors_1d"),
                      1.0 if f.get("vectors_1d", 0) <= f.get("trip_vectors", 1) else 0.0),
    "vf2": lambda f: (_g(f, "rep"), _g(f, "R")),
    # a5 vector functions whose loop body dwarfs any row restart: the vectors of either loop
    "vf": lambda f: (_g(f, "vectors"), 0.0),
    # ... and the same over either loop with a cycle's set-up more for the loop per row (x2 1
    # on the 2D path): a loop so port-bound that no row restart shows (f32 TRSQRT: 76 + 4 a
    # vector in one loop, 77 + 4 a vector over rows of 2 to 20 vectors)
    "vfp": lambda f: (_g(f, "vectors"), 1.0 if f.get("path") == "2D" else 0.0),
    # a5 vector functions that always loop over the rows (upstream's A5 TSel.hpp: a row loop,
    # a trip per vector or vector pair, whatever the tile's shape): vectors (x1), rows (x2)
    "vfr": lambda f: (_g(f, "rep"), _g(f, "R")),
    # cube fractal steps
    "mad": lambda f: (_g(f, "fractals"), 0.0),
    # SIMT ops: 32-workitem subgroups (x1), workitems one after another (x2: atomics)
    "simt": lambda f: (_g(f, "warps"), _g(f, "threads")),
    # VBS32 sorts: one call per row (x1) of one repeat per 32 source elements (x2; the
    # source is the smaller operand: dst holds records of 2 or 4 elements)
    "sort32": lambda f: (_g(f, "R"), _g(f, "R") * math.ceil(
        _g(f, "move_elems") / max(1.0, _g(f, "R")) / 32)),
    # the fix-pipe out of L0C: transfers (x1) and 2 bytes per element whatever the element
    # type (x2: upstream prices copy_matrix_cc_to_gm / _to_cbuf by rows * cols * 2)
    "fix": lambda f: (_g(f, "n_dma"), 2 * _g(f, "move_elems")),
    # elements of the moved region (scalar loops)
    "elems": lambda f: (0.0, _g(f, "move_elems")),
    "const": lambda f: (0.0, 0.0),
    # a vector micro-op: one use of its port (its cost in a vector function: MicroCost)
    "vreg": lambda f: (1.0, 0.0),
}


#: bases whose rule is ``c0 + max(c1 * x1 + c3, c4 * x1 + c2 * x2)``, not the sum: an a5 vector
#: function's loop per row (2D). Its vectors go through the vector ports at ``c1`` cycles each
#: (the loop body's initiation interval: 2 for two loads a vector, 4 for two SFU ops...), while
#: the loop itself issues at most one vector a cycle and pays ``c2`` cycles a row to restart
#: the inner loop (the row's address set-up, the loop branch). The two overlap: a loop whose
#: ports are busy (c1 > 1) hides the row restarts, a cheap one (TMINS, TNEG: c1 ~ 1) pays them.
#: The restart-bound loop issues a vector every ``c4`` >= 1 cycles (1 for most loops; the
#: f32 SFU class fits 1.16), and the two bounds have their own fixed parts (``c3``: the
#: port-bound line's head minus the restart-bound one's). Pack evidence: f32 TSQRT costs 6.8 /
#: 8 / 20 / 40 cycles a row at 2 / 3 / 10 / 20 vectors a row (max(2v, v + 5)); f32 TRSQRT
#: exactly 4 a vector whatever the row length; TMINS 7 / 8 / 15 / 26 (v + 5); the f32 binary
#: ops 51 + (v + 5) a row at 2 and 3 vectors a row but 41 + 2.05 a vector on rows of 10 and 20
#: (c3 = -10: the port-bound loop hides part of the head).
MAX_FORM = frozenset({"vf2"})


def combine(basis: str, c: Coef, x: tuple[float, float]) -> float:
    """A rule's cycles from its coefficients and basis values (before rounding)."""
    c0, c1, c2 = c[:3]
    x1, x2 = x
    if basis in MAX_FORM:
        c3, c4 = (c[3] if len(c) > 3 else 0.0), (c[4] if len(c) > 4 else 1.0)
        return c0 + max(c1 * x1 + c3, c4 * x1 + c2 * x2)
    return c0 + c1 * x1 + c2 * x2


# ---- the table ------------------------------------------------------------------------------

@dataclass
class Variant:
    """One way an instruction runs: a condition on the features (``when``), a basis and the
    coefficients per element type (``coef[dtype]``; ``any`` is the fallback). ``prior`` is the
    starting point (and the estimate where no measurement exists)."""

    basis: str
    prior: Coef
    when: dict[str, Any] = field(default_factory=dict)
    coef: dict[str, Coef] = field(default_factory=dict)
    fitted: set[str] = field(default_factory=set)
    #: fit one coefficient set per element type (else one for all types)
    by_dtype: bool = False
    #: instructions of one hardware class share their coefficients (fitted together)
    group: str | None = None
    #: the feature whose value selects the coefficients (``dtype``; TCVT's ``cvt``: the pair)
    key: str = "dtype"
    #: with ``by_dtype``: also fit one set over every key, the ``any`` fallback of a key
    #: without measurements (an estimate) and the prior of each key's own fit
    pool: bool = False
    #: the target whose measurements the fitted coefficients come from, and how many per key
    source: str | None = None
    n: dict[str, int] = field(default_factory=dict)
    #: the instructions whose measurements the fit used (a class shares one fit)
    ops_measured: frozenset[str] = frozenset()
    #: where the prior comes from (an estimate's source, printed by ``--explain``)
    note: str = ""
    #: in a class (``group``): each measured member keeps the class's slopes but its own head,
    #: the class fit's ``c0`` moved by the member's median residual (each instruction's vector
    #: function sets itself up its own way: a scalar broadcast, a constant, a second register)
    member_heads: bool = False
    #: a vector micro-op (VPTO): its port class, occupancy and latency (:class:`MicroCost`);
    #: the schedule prices it inside its vector function (:class:`VecFunction`)
    micro: MicroCost | None = None

    def matches(self, f: Features) -> bool:
        return all(f.get(k) == v for k, v in self.when.items())

    def coefficients(self, key: str | None) -> Coef:
        if key is not None and key in self.coef:
            return self.coef[key]
        return self.coef.get("any", self.prior)

    def key_of(self, f: Features) -> str:
        """The coefficient set ``f`` uses: its own key's, else ``any`` (else the prior)."""
        k = f.get(self.key)
        return str(k) if k is not None and k in self.coef else "any"


def _v(basis: str, c0: float, c1: float = 0.0, c2: float = 0.0, *, by_dtype: bool = False,
       group: str | None = None, key: str = "dtype", pool: bool = False, note: str = "",
       member_heads: bool = False, **when: Any) -> Variant:
    return Variant(basis, (c0, c1, c2), dict(when), by_dtype=by_dtype, group=group, key=key,
                   pool=pool, note=note, member_heads=member_heads)


# Upstream's A2/A3 bandwidth table (include/pto/costmodel/arch_config.hpp, GiB/s at 1.85 GHz)
# in bytes per cycle: the on-chip moves the pack does not measure are priced by it.
_GIB_PER_CYCLE = 1024 ** 3 / 1.85e9
L1_TO_L0A = 441.0 * _GIB_PER_CYCLE    # 256 B/cycle
L1_TO_L0B = 220.5 * _GIB_PER_CYCLE    # 128 B/cycle
L1_TO_BT = 32.0 * _GIB_PER_CYCLE      # 18.6 B/cycle (the bias table; L1_TO_FB the same)
L0C_TO_L1 = 128.0 * _GIB_PER_CYCLE    # 74.3 B/cycle
L0C_TO_GM = 70.0 * _GIB_PER_CYCLE     # 40.6 B/cycle
L1_TO_GM = 32.0 * _GIB_PER_CYCLE      # 18.6 B/cycle
_ARCH = "upstream's arch_config.hpp"


#: the binary row-expand ops' prior (no measurement of them)
_ROWEXPAND_BIN = ("upstream's TRowExpandBinOp: a vbrcb of the column and a V barrier (~20 + "
                  "~20: the V barrier of upstream's vgather calibration, vbrcb at the vector "
                  "pipe's default head), then the binary op over the rows' repeats at the "
                  "binary class's fit (33 + 1.84/repeat, +16.4 masked)")


def _mte1(dst: str, rate: float, name: str, src: str = "Mat") -> Variant:
    return _v("bytes", 10, 0, 1 / rate, src_loc=src, dst_loc=dst,
              note=f"{_ARCH} {name} {rate:.1f} B/cycle, a guessed 10-cycle head")


def _fix(rate: float, name: str, **when: Any) -> Variant:
    return _v("fix", 20, 0, 1 / rate, note=f"{_ARCH} {name} {rate:.1f} B/cycle over 2 bytes "
              "an element (as upstream counts the fix-pipe), a guessed 20-cycle head", **when)


#: TEXTRACT and TMOV between L1 and L0 and out of L0C (same paths, same rates)
_ONCHIP: list[Variant] = [
    _mte1("Left", L1_TO_L0A, "L1_TO_L0A"),
    _mte1("Right", L1_TO_L0B, "L1_TO_L0B"),
    _mte1("Bias", L1_TO_BT, "L1_TO_BT"),
    _mte1("Scaling", L1_TO_BT, "L1_TO_FB"),
    _mte1("ScaleLeft", L1_TO_BT, "L1_TO_FB (A5's MX scales: no A5 figure)"),
    _mte1("ScaleRight", L1_TO_BT, "L1_TO_FB (A5's MX scales: no A5 figure)"),
    _fix(L0C_TO_L1, "L0C_TO_L1", src_loc="Acc"),
]


# Priors: upstream's per-intrinsic head+tail / slope (cce_costmodel) where it has them, else a
# pipe default. Fitted coefficients replace them where the pack measures the instruction.
#: the target whose measurements and docs the figures of A2A3_PRIORS are (data: the table
#: is named for it); a prior priced on another target says so in ``--explain``
_PRIORS_OF = "a2a3"

A2A3_PRIORS: dict[str, list[Variant]] = {
    # vadd/vsub/vmul/vmax/vmin: 2 cycles per repeat, masked rows pay a count-mode floor
    **{op: [_v("vec", 24, 2, 16, group="binary")] for op in (
        "TADD", "TSUB", "TMUL", "TMAX", "TMIN", "TAND", "TOR", "TXOR", "TPRELU", "TADDC",
        "TSUBC", "TMULADDDST", "TFUSEDMULADD", "TFUSEDMULADDRELU", "TCMP", "TSHL", "TSHR")},
    # vabs/vrelu/vadds/vmuls/vmaxs...: 1 cycle per repeat
    **{op: [_v("vec", 20, 1, group="unary")] for op in ("TABS", "TNEG", "TNOT", "TRELU")},
    **{op: [_v("vecs", 8, 1, 16, group="scalar")] for op in (
        "TADDS", "TSUBS", "TMULS", "TMAXS", "TMINS", "TANDS", "TORS", "TXORS", "TSHLS",
        "TSHRS", "TLRELU", "TEXPANDS", "TCMPS", "TAXPY", "TADDSC", "TSUBSC")},
    # vexp/vln/vsqrt...: transcendental head, over the tile as one range
    **{op: [_v("flat", 31, 2, group="exp")] for op in ("TEXP", "TLOG", "TPOW", "TPOWS")},
    **{op: [_v("flat", 31, 2)] for op in ("TRSQRT", "TRECIP")},
    "TSQRT": [_v("flat", 31, 2, in_place=True), _v("flat", 31, 2, in_place=False)],
    **{op: [_v("vec", 31, 4, 16)] for op in ("TDIV", "TFMOD", "TREM", "TFMODS", "TREMS")},
    "TDIVS": [_v("vec", 31, 4)],
    "TCVT": [_v("vec", 32, 1)],
    "TSEL": [_v("row", 4, 16)],
    "TSELS": [_v("row", 4, 16)],
    # one vbitsort per row then a V barrier (upstream's vbitsort: 6 + 2/repeat, a barrier ~20
    # in its vgather calibration); the pack's two TSORT32 numbers are placeholders
    "TSORT32": [_v("sort32", 0, 26, 2, note="upstream's vbitsort 6 + 2/repeat of 32 elements "
                   "and a V barrier of ~20 per row")],
    # vmrgsort4: upstream's 910B3 calibration, 20 + 78 per repeat of 4 x 64 8-byte records
    # (single list); the multi-list forms at the same rate per record
    "TMRGSORT": [_v("bytes", 20, 0, 78 / 2048, note="upstream's vmrgsort4 calibration on "
                    "910B3 (single list, blockLen 64): 20 + 78 per 2 KiB of records")],
    # TGATHER with an index tile: a vmuls, a barrier and a vgather per row, 46.6 cycles a row
    # measured by upstream; the mask form is one vreducev2 over the repeats
    "TGATHER": [_v("dstrow", 24, 46.6, index_form=True, note="upstream's TGATHER calibration "
                   "on 910B3: 46.6 cycles a row, vgather head 24"),
                _v("vec", 20, 1, note="vreducev2 at upstream's default 1/repeat")],
    # TSCATTER with an index tile: A2/A3 runs a scalar loop over the elements (about 5 scalar
    # instructions an element: two loads, the address, the store, the loop); the mask form a
    # masked vcopy per row
    "TSCATTER": [_v("elems", 20, 0, 5, index_form=True, note="a scalar loop over the "
                    "elements, ~5 scalar instructions each at upstream's 1 cycle"),
                 _v("dstrow", 20, 2, note="a masked vcopy per row")],
    # TTRANS (Vec): vnchwconv 16x16-block transposes (upstream's default 2 per 512-byte repeat)
    # into tmp and a vector copy back (1 per 256-byte repeat)
    "TTRANS": [_v("bytes", 20, 0, 2 / 512 + 1 / 256, note="vnchwconv at upstream's default "
                  "2/repeat of 512 bytes and a copy back at 1/repeat of 256 bytes")],
    **{op: [_v("rowred", 14, 7, 1, group="rowred")] for op in (
        "TROWSUM", "TROWMAX", "TROWMIN", "TROWPROD", "TROWARGMAX", "TROWARGMIN")},
    # TCOLSUM: one class whatever the mode (upstream's formula table gives the binary-mode
    # measurement for the default mode too)
    "TCOLSUM": [_v("colred", 17, 0.3, is_binary=True, group="colsum"),
                _v("colred", 17, 0.3, group="colsum")],
    **{op: [_v("colred", 17, 0.6, group="colred")] for op in (
        "TCOLMAX", "TCOLMIN", "TCOLPROD", "TCOLARGMAX", "TCOLARGMIN")},
    # TROWEXPAND (the broadcast) is a loop over rows, each a V -> S -> V round trip (read the
    # row's value, vector_dup it): per row, measured. The binary forms are not (upstream's
    # a2a3 TRowExpandBinOp.hpp): one vbrcb of the column into a temporary, a V barrier, then
    # the binary vector op over the rows' repeats (rows x ceil(row bytes / 256), one
    # instruction per 256-byte column band, or per row in count mode: the same repeats)
    "TROWEXPAND": [_v("row", 18, 14, group="rowexpand")],
    "TROWEXPANDEXPDIF": [_v("vec", 73 + 20 + 31, 1.84 + 2, 16.4, note=(
        "upstream's a2a3 TROWEXPANDEXPDIF: TROWEXPANDSUB (" + _ROWEXPAND_BIN + "), a V "
        "barrier (~20), TEXP (31 + 2/repeat)"))],
    **{op: [_v("vec", 33 + 40, 1.84, 16.4, group="rowexpand_bin", note=_ROWEXPAND_BIN)]
       for op in ("TROWEXPANDADD", "TROWEXPANDSUB", "TROWEXPANDMUL", "TROWEXPANDMAX",
                  "TROWEXPANDMIN")},
    "TROWEXPANDDIV": [_v("vec", 32 + 40, 4, 16, note=_ROWEXPAND_BIN.replace(
        "the binary class's fit (33 + 1.84/repeat, +16.4 masked)",
        "TDIV's (32 + 4/repeat, +16 masked)"))],
    # TMOV: UB -> UB copy in bursts; L1 -> L0 (MTE1) and L0C -> UB/L1 (FIX) by bandwidth
    "TMOV": [_v("copy", 0, 5, 1, src_loc="Vec", dst_loc="Vec"), *_ONCHIP,
             _v("bytes", 10, 0, 1 / 256, src_loc="Mat", note="a guess: 256 B/cycle"),
             _v("copy", 0, 5, 1)],
    "TEXTRACT": [*_ONCHIP,
                 _v("copy", 0, 5, 1, src_loc="Vec", dst_loc="Vec",
                    note="TMOV Vec->Vec's fitted copy (bursts and 32-byte blocks)"),
                 _v("bytes", 20, 0, 1 / 128, note="a guess: 128 B/cycle")],
    "TINSERT": [_fix(L0C_TO_L1, "L0C_TO_L1", src_loc="Acc"),
                _v("bytes", 20, 0, 1 / 128, note="a guess: 128 B/cycle")],
    # GM transfers: one DMA instruction per outer step (latency), bytes over the bandwidth;
    # convolution layouts stream without the per-transfer latency
    "TLOAD": [_v("bytes", 20, 0, 1 / 134, gm_layout="NC1HWC0"),
              _v("bytes", 20, 0, 1 / 256, gm_layout="FRACTAL_Z"),
              _v("dma", 0, 265, 1 / 128, group="dma")],
    # the other GM transfers: as TLOAD's (estimates: the pack measures loads only); out of L0C
    # through the fix-pipe and out of L1 at upstream's rates (and the DMA head)
    "TSTORE": [_v("fix", 0, 265, 1 / L0C_TO_GM, src_loc="Acc", note=f"{_ARCH} L0C_TO_GM "
                  f"{L0C_TO_GM:.1f} B/cycle over 2 bytes an element, TLOAD's fitted DMA head"),
               _v("dma", 0, 265, 1 / L1_TO_GM, src_loc="Mat", note=f"{_ARCH} L1_TO_GM "
                  f"{L1_TO_GM:.1f} B/cycle, TLOAD's DMA head"),
               _v("dma", 0, 265, 1 / 128, group="dma")],
    "TPREFETCH": [_v("dma", 0, 265, 1 / 128, group="dma")],
    **{op: [_v("mad", 6, 1, by_dtype=True, group="mad", note="upstream's cube: 1 fractal "
               "(16 x 32 bytes x 16) a cycle after a head of 6, f32 at half rate; MX fp8 at the "
               "same fractal rate (2x fp16's MACs), fp4 (a byte an element here) as fp8")]
    for op in (
        "TMATMUL", "TMATMUL_ACC", "TMATMUL_BIAS", "TGEMV", "TGEMV_ACC", "TGEMV_BIAS",
        "TMATMUL_MX", "TGEMV_MX")},
}
# per-dtype priors that upstream states (f32 cube at half rate)
for _op in ("TMATMUL", "TMATMUL_ACC", "TMATMUL_BIAS", "TGEMV", "TGEMV_ACC", "TGEMV_BIAS"):
    A2A3_PRIORS[_op][0].coef["f32"] = (6, 2, 0)
# defaults by pipe for instructions the table does not name (estimates)
PIPE_DEFAULT: dict[Pipe, Variant] = {
    Pipe.V: _v("vec", 20, 1),
    Pipe.M: _v("mad", 6, 1),
    Pipe.MTE2: _v("dma", 0, 265, 1 / 128),
    Pipe.MTE3: _v("dma", 0, 265, 1 / 128),
    Pipe.MTE1: _v("bytes", 10, 0, 1 / 256),
    Pipe.FIX: _v("bytes", 20, 0, 1 / 128),
    Pipe.S: _v("const", 1),
    Pipe.ALL: _v("const", 1),
}



# ---- the vector micro-ops (VPTO) ------------------------------------------------------------
#
# A5 runs a ``pto.vecscope`` as a vector function (VF): its micro-ops issue to ports of three
# kinds that work in parallel, 2 load ports, 1 store port and 2 execution units (EXU0, EXU1;
# some ops on EXU0 only), up to 5 ops a cycle. Upstream's VF simulator
# (include/pto/costmodel/a5/VfSim/params/, pto-isa 3186c38) gives per op a latency and a
# throughput (the cycles it holds its unit), the ports (uarch.csv) and a VF start-up and drain
# cost (isa_defaults.csv). Our model of one VF: every op occupies its port class, the classes
# overlap, so the loop costs its busiest class; on top, the start-up, the drain and the
# latency of one load -> compute -> store chain (the last iteration's, exposed at the end):
#
#   cycles(VF) = 23 + 12 + (9 if it loads) + (longest compute latency) + (9 if it stores)
#                + max(load occupancy / 2, store occupancy, EXU occupancy / 2,
#                      EXU0-only occupancy, ops / 5)
#
# Each micro-op's step costs what it adds to that figure (ptoisa.cycles.schedule's
# VecFunction), so a VF's steps sum to it. Every number is upstream's estimate, not a
# measurement of ours; ops upstream's table does not list take the figures of the op named in
# their note (also an estimate).

#: (derived from the A5 pack, not upstream's table) the f16 loops of TEXP, TSQRT, TDIVS, TRECIP
#: and TRSQRT (a vexp / vsqrt / vdiv on f16 registers, as upstream's A5 code writes them)
#: take 3.6-4.3 cycles a register where their f32 loops take 1.7-2.0 (TRSQRT, two SFU ops:
#: 8.1 against 4.0): each alone gives a factor of ~2 (1.9-2.2), so does leaving any one out
_SFU16 = ("the A5 pack's f16 SFU loops (TEXP, TSQRT, TDIVS, TRECIP, TRSQRT) take twice "
          "their f32 cycles a register (upstream's table says 4)")
VF_STARTUP = 23       # isa_defaults.csv vf_startup_cost
VF_DRAIN = 12         # isa_defaults.csv vf_drain_cost
VF_ISSUE_WIDTH = 5    # uarch.csv IDU_issue_width: ops issued a cycle
#: ports of each class (uarch.csv: load_ports 2, store_ports 1, issue_ports 2 = EXU0, EXU1)
VF_PORTS = {"ld": 2, "st": 1, "exu": 2, "exu0": 1, "issue": 0}
_VFSIM = "upstream's VfSim isa.csv"


@dataclass(frozen=True)
class MicroCost:
    """A vector micro-op's place in a vector function: its port class (``ld``, ``st``,
    ``exu``: either EXU, ``exu0``: EXU0 only, ``issue``: none, it only takes an issue slot),
    the cycles one use holds a port of that class (``occ``), and its latency for 32-bit
    lanes and for narrower ones."""

    port: str
    occ: float
    lat: int
    lat16: int
    #: the occupancy for narrower lanes where it differs (the SFU ops: see A5_MICRO)
    occ16: float | None = None

    def latency(self, b: int) -> int:
        return self.lat if b >= 4 else self.lat16

    def occupancy(self, b: int) -> float:
        return self.occ if b >= 4 or self.occ16 is None else self.occ16

    def alone(self, b: int) -> float:
        """The cycles of a vector function of this op alone."""
        ld = 9 if self.port == "ld" else 0
        st = 9 if self.port == "st" else 0
        comp = self.latency(b) if self.port not in ("ld", "st") else 0
        ports = VF_PORTS[self.port]
        busy = max(self.occupancy(b) / ports if ports else 0.0, 1 / VF_ISSUE_WIDTH)
        return VF_STARTUP + VF_DRAIN + ld + comp + st + busy


def _m(port: str, occ: float, lat: int, lat16: int | None = None, src: str = "",
       like: str = "", why: str = "", occ16: float | None = None) -> Variant:
    """A vector micro-op's cost: ``src`` names upstream's row; ``like`` the op whose figures
    an op upstream does not list takes."""
    mc = MicroCost(port, occ, lat, lat if lat16 is None else lat16, occ16)
    ports = VF_PORTS[port]
    if like:
        note = f"{_VFSIM} has no row: {like}'s figures"
    elif src:
        note = f"{_VFSIM} {src}"
    else:
        note = f"no upstream figure, {why}"
    where = {"ld": "a load port (2)", "st": "the store port (1)", "exu": "an EXU (2)",
             "exu0": "EXU0 (1)", "issue": ""}[port]
    use = f"{occ:g} cycle(s) on {where}" if where else "no port, an issue slot (5 a cycle)"
    note += (f": {use}, latency {mc.lat}"
             + (f" ({mc.lat16} for 16/8-bit lanes)" if mc.lat16 != mc.lat else ""))
    if occ16 is not None:
        note += f"; {occ16:g} cycles for 16/8-bit lanes: {_SFU16}"
    v = Variant("vreg", (0.0, occ / ports if ports else 0.0, 0.0), note=note)
    v.micro = mc
    return v


def _dma(way: str) -> Variant:
    return _v("dma", 0, 265, 1 / 128, note=f"one DMA instruction {way} at TLOAD's fitted "
              "head and rate (~264 cycles a DMA instruction, 128 B/cycle: A2/A3 "
              "measurements) over the bytes of its len_burst x nburst x loop rows; no per-row "
              "term (TLOAD's fit has none)")


_SCALAR_REG = _v("const", 1, note="a write of a DMA control register (scalar): 1 cycle")

#: SIMT ops priced as one issue a 32-workitem subgroup (see A5_MICRO)
SIMT_ALU = (
    "GET_TID_X", "GET_TID_Y", "GET_TID_Z", "GET_BLOCK_DIM_X", "GET_BLOCK_DIM_Y",
    "GET_BLOCK_DIM_Z", "GET_GRID_DIM_X", "GET_GRID_DIM_Y", "GET_GRID_DIM_Z",
    "GET_BLOCK_IDX_X", "GET_BLOCK_IDX_Y", "GET_BLOCK_IDX_Z", "GET_LANEID", "GET_LANEMASK_EQ",
    "GET_LANEMASK_LT", "GET_LANEMASK_LE", "GET_LANEMASK_GT", "GET_LANEMASK_GE", "VOTE_ALL",
    "VOTE_ANY", "VOTE_UNI", "VOTE_BALLOT", "SHUFFLE_IDX", "SHUFFLE_UP", "SHUFFLE_DOWN",
    "SHUFFLE_BFLY", "REDUX_ADD", "REDUX_MAX", "REDUX_MIN", "KEEP", "RESUME", "SYNCTHREADS",
    "THREADFENCE", "THREADFENCE_BLOCK", "ABSF", "CEIL", "FLOOR", "RINT", "ROUND", "FMIN",
    "FMAX", "FMA", "CONVERT")


def _cube_move(way: str, sized: bool = True) -> Variant:
    return _v("dma", 0, 265, 1 / 128, note=f"{way}: one transfer at TLOAD's fitted head and "
              "rate (no figure for this cube path; A2/A3 measurements)"
              + ("" if sized else "; its size is not read here: the head alone, an "
                 "underestimate of a large load"))

#: the micro-ops' costs, keyed by entry name (ptoisa/isa/micro/): a5 only, as the ops are
A5_MICRO: dict[str, list[Variant]] = {
    # cube data movement (micro-isa/16): one transfer each over the bytes its operands give
    **{op: [_cube_move(way)] for op, way in (
        ("MTE_GM_L1", "GM -> L1"), ("COPY_GM_TO_CBUF", "GM -> L1"), ("MTE_L1_UB", "L1 -> UB"),
        ("MTE_L1_BT", "L1 -> BT"), ("MTE_L1_FB", "L1 -> FB"), ("RAW_FILL_L1", "fill of L1"),
        ("MTE_L0C_GM", "L0C -> GM (FIXPIPE)"), ("MTE_L0C_L1", "L0C -> L1 (FIXPIPE)"),
        ("MTE_L0C_UB", "L0C -> UB (FIXPIPE)"))},
    **{op: [_cube_move(way, sized=False)] for op, way in (
        ("MTE_GM_L1_FRAC", "GM -> L1 (ND/DN to NZ)"), ("MTE_L1_L0A", "L1 -> L0A"),
        ("LOAD_CBUF_TO_CA", "L1 -> L0A"), ("MTE_L1_L0B", "L1 -> L0B"),
        ("MTE_L1_L0A_MX", "L1 -> L0A_MX (MX scales)"),
        ("MTE_L1_L0B_MX", "L1 -> L0B_MX (MX scales)"))},
    # cube multiply: TMATMUL's rule over the fractals of m x k x n (see TMATMUL)
    **{op: [_v("mad", 6, 1, by_dtype=True, note="TMATMUL's rule (upstream's cube: 1 fractal "
               "a cycle after a head of 6, f32 at half rate) over m x k x n's fractals")]
       for op in ("MAD", "MAD_ACC", "MAD_BIAS")},
    # MX multiply: TMATMUL_MX's rule (an estimate: no figure for the scaled cube)
    **{op: [_v("mad", 6, 1, by_dtype=True, note="TMATMUL_MX's rule, an estimate (upstream's "
               "cube: 1 fractal a cycle after a head of 6; MX fp8 at the same fractal rate, "
               "the scaling assumed free) over m x k x n's fractals")]
       for op in ("MAD_MX", "MAD_MX_ACC", "MAD_MX_BIAS")},
    # DMA between GM and UB: one DMA instruction each (MTE2 / MTE3)
    **{op: [_dma("GM -> UB")] for op in ("MTE_GM_UB", "COPY_GM_TO_UBUF")},
    **{op: [_dma("UB -> GM")] for op in ("MTE_UB_GM", "COPY_UBUF_TO_GM")},
    **{op: [_SCALAR_REG] for op in (
        "SET_LOOP_SIZE_OUTTOUB", "SET_LOOP1_STRIDE_OUTTOUB", "SET_LOOP2_STRIDE_OUTTOUB",
        "SET_LOOP_SIZE_UBTOOUT", "SET_LOOP1_STRIDE_UBTOOUT", "SET_LOOP2_STRIDE_UBTOOUT",
        "SET_ATOMIC_ADD", "SET_ATOMIC_NONE", "SET_ATOMIC_S32")},
    # vector loads and stores: a register a port use (x2 forms: two registers)
    "VLDS": [_m("ld", 1, 9, src="VLDS")],
    "VSTS": [_m("st", 1, 9, src="VSTS")],
    **{op: [_m("ld", 1, 9, like="VLDS")] for op in ("VLDUS", "VLDAS", "PLDS", "PLDI")},
    "VLDSX2": [_m("ld", 2, 9, like="VLDS (two registers)")],
    **{op: [_m("st", 1, 9, like="VSTS")] for op in (
        "VSTUS", "VSTAS", "VSTAR", "VSSTB", "PSTS", "PSTI")},
    "VSTSX2": [_m("st", 2, 9, like="VSTS (two registers)")],
    # gathers / scatters by index: no upstream figure; assumed 8 elements a cycle of the port
    # (a 32-bit gather of 64 lanes: 8 cycles), a block gather of 8 x 32 bytes as one load
    **{op: [_m("ld", 8, 9, why="8 elements a cycle assumed")]
       for op in ("VGATHER2", "VGATHER2_BC")},
    "VGATHERB": [_m("ld", 1, 9, like="VLDS (8 blocks of 32 bytes: one register)")],
    "VSCATTER": [_m("st", 8, 9, why="8 elements a cycle assumed")],
    # two-operand arithmetic (upstream: throughput 2 on EXU0/1)
    "VADD": [_m("exu", 2, 7, src="VADD")],
    "VSUB": [_m("exu", 2, 7, src="VSUB")],
    "VMUL": [_m("exu", 2, 8, src="VMUL")],
    "VMAX": [_m("exu", 2, 6, src="VMAX")],
    "VMIN": [_m("exu", 2, 6, src="VMIN")],
    **{op: [_m("exu", 2, 7, like="VADD")] for op in ("VADDC", "VSUBC")},
    **{op: [_m("exu", 2, 8, like="VMUL")] for op in ("VMULA", "VMADD", "VMULL", "VAXPY",
                                                     "VPRELU")},
    # one-operand and vector-scalar ALU ops (throughput 1)
    "VADDS": [_m("exu", 1, 7, src="VADDS")],
    "VMULS": [_m("exu", 1, 8, src="VMULS")],
    "VMAXS": [_m("exu", 1, 6, src="VMAXS")],
    "VMINS": [_m("exu", 1, 6, src="VMINS")],
    "VABS": [_m("exu", 1, 5, src="VABS")],
    "VAND": [_m("exu", 1, 6, src="VAND")],
    "VSHLS": [_m("exu", 1, 6, src="VSHLS")],
    "VSHRS": [_m("exu", 1, 6, src="VSHRS")],
    "VSEL": [_m("exu", 1, 6, src="VSEL")],
    "VCMP": [_m("exu", 1, 6, src="VCMP_EQ")],
    "VBR": [_m("exu", 1, 6, src="VBR")],
    "VCVT": [_m("exu", 1, 7, src="VCVT_F32_TO_F16 (f32 <-> s32: 8)")],
    **{op: [_m("exu", 1, 6, like="VAND")] for op in ("VOR", "VXOR", "VNOT")},
    **{op: [_m("exu", 1, 6, like="VSHLS")] for op in ("VSHL", "VSHR")},
    **{op: [_m("exu", 1, 5, like="VABS")] for op in ("VNEG", "VRELU")},
    "VLRELU": [_m("exu", 1, 8, like="VMULS")],
    "VCMPS": [_m("exu", 1, 6, like="VCMP_EQ")],
    "VSELR": [_m("exu", 1, 6, like="VSEL")],
    # rearrangement (interleave, pack, squeeze, slide): register-to-register moves
    **{op: [_m("exu", 1, 6, like="VSEL (a register-to-register ALU op)")] for op in (
        "VINTLV", "VDINTLV", "VPACK", "VSUNPACK", "VZUNPACK", "VSQZ", "VUSQZ", "VSLDB")},
    # SFU: exp / log / divide / sqrt (throughput 4 on EXU0/1; 16-bit lanes at half rate)
    "VEXP": [_m("exu", 4, 16, 21, src="VEXP", occ16=8)],
    "VDIV": [_m("exu", 4, 17, 22, src="VDIV", occ16=8)],
    **{op: [_m("exu", 4, 16, 21, like="VEXP", occ16=8)] for op in ("VLN", "VEXPDIF")},
    "VSQRT": [_m("exu", 4, 17, 22, like="VDIV", occ16=8)],
    "VBITSORT": [_m("exu", 4, 16, 21, like="VEXP (an SFU op)")],
    # reductions: whole-register ones on EXU0 only, group ones on either EXU
    "VCADD": [_m("exu0", 1, 22, 24, src="VCADD")],
    "VCMAX": [_m("exu0", 1, 16, 17, src="VCMAX")],
    "VCMIN": [_m("exu0", 1, 16, 17, src="VCMIN")],
    "VCGMAX": [_m("exu", 1, 13, 14, src="VCGMAX")],
    **{op: [_m("exu", 1, 13, 14, like="VCGMAX")] for op in (
        "VCGADD", "VCGMIN", "VCBMAX", "VCBMIN", "VCPADD")},
    "VDUP": [_m("exu0", 1, 6, src="VDUP")],
    "VCI": [_m("exu0", 1, 6, like="VDUP")],
    # predicates, special registers, alignment state, register reinterpretation: an issue
    # slot, no port (latency 1: a guess)
    **{op: [_m("issue", 0, 1, why="cheap (latency 1: a guess)")] for op in (
        "PSET_B8", "PSET_B16", "PSET_B32", "PLT_B8", "PLT_B16", "PLT_B32", "PLTM_B8",
        "PLTM_B16", "PLTM_B32", "PGE_B8",
        "PGE_B16", "PGE_B32", "PNOT", "PSEL", "SPRCLR", "SPRSTI", "SPRSTS", "INIT_ALIGN",
        "VBITCAST", "PBITCAST", "PINTLV_B8", "PINTLV_B16", "PINTLV_B32", "PDINTLV_B8",
        "PDINTLV_B16", "PDINTLV_B32", "PPACK", "PUNPACK", "GET_VMS4_SR")},
    **{op: [_m("st", 1, 9, like="VSTS")] for op in ("VSTUR", "PSTU")},
    "VMRGSORT4": [_m("exu", 4, 16, 21, like="VBITSORT (an SFU op)")],
    # SIMT (micro-isa/17): no upstream figure at all. Estimates: a scalar op issues once a
    # 32-workitem subgroup (1 cycle each), a scalar memory access twice (2), an SFU-like math
    # op (sqrt, exp, log, pow) 4 a subgroup as the vector SFU ops' throughput, an atomic
    # one read-modify-write a workitem after another (4 cycles each); the launch itself
    # (store_vfsimt_info) a control register write
    **{op: [_v("simt", 0, 1, note="no upstream figure: 1 cycle a 32-workitem subgroup")]
       for op in SIMT_ALU},
    **{op: [_v("simt", 0, 2, note="no upstream figure: 2 cycles a 32-workitem subgroup (a "
               "scalar memory access)")] for op in ("LOAD", "STORE", "LDG", "STG")},
    **{op: [_v("simt", 0, 4, note="no upstream figure: 4 cycles a 32-workitem subgroup (the "
               "vector SFU ops' throughput)")] for op in ("SQRT", "EXP", "LOG", "POW")},
    **{op: [_v("simt", 0, 0, 4, note="no upstream figure: 4 cycles a workitem, one "
               "read-modify-write after another")] for op in (
        "ATOMIC_EXCH", "ATOMIC_ADD", "ATOMIC_SUB", "ATOMIC_MIN", "ATOMIC_MAX", "ATOMIC_AND",
        "ATOMIC_OR", "ATOMIC_XOR", "ATOMIC_CAS")},
    "STORE_VFSIMT_INFO": [_SCALAR_REG],
}


def _vf(c1: float, key: str = "dtype", group: str | None = None, heads2d: bool = False,
        **when: Any) -> list[Variant]:
    """An A5 vector function: one loop over the tile's 256-byte vectors when its rows are
    whole (1D: ``c0 + c1 * vectors``), else a loop per row (2D: ``c0 + max(c1 * vectors,
    vectors + c2 * rows)``, :data:`MAX_FORM`); coefficients per ``key`` value, pooled over
    all of them as the fallback; the instructions of one ``group`` (one hardware class) share
    them, path by path (``heads2d``: the 2D loop's head each member's own,
    :attr:`Variant.member_heads`)."""
    return [_v("vf1", 60, c1, by_dtype=True, key=key, pool=True, path="1D",
               group=group and f"{group}/1D", **when),
            _v("vf2", 60, c1, 2, by_dtype=True, key=key, pool=True, path="2D",
               group=group and f"{group}/2D", member_heads=heads2d, **when)]


# a5: the instructions the A5 pack measures (../shared/costmodel/a5), fitted to it into
# a5_fit.json; every other instruction keeps the a2a3 table (estimates on a5). TRECIP's
# high-precision algorithm is its own loop (~350 cycles an f32 vector, not 2).
#
# Two hardware classes share their loops' coefficients: the binary ops (TADD, TSUB, TMUL: two
# loads, one ALU op, one store a vector; the pack measures the three alike, 869 cycles each
# for 20 x 1280 f32) and the one-SFU-op loops (TDIVS, TEXP, TSQRT and TRECIP's default
# algorithm: 2.0 cycles an f32 vector and a 5-cycle row restart each when fitted apart, 462-467
# cycles for 10 x 1280 f32). TMINS and TNEG (one load, one store: 1.4 cycles a vector, TNEG's
# head 2 cycles above TMINS's) and TRSQRT (two SFU ops) keep their own.
A5_PRIORS: dict[str, list[Variant]] = {
    **{op: _vf(2, group="a5_binary") for op in ("TADD", "TSUB", "TMUL")},
    **{op: _vf(2, group="a5_sfu", heads2d=True) for op in ("TDIVS", "TEXP", "TSQRT")},
    **{op: _vf(2) for op in ("TMINS", "TNEG")},
    # TSEL: upstream's A5 TSel.hpp runs one loop for 32-bit elements (TSel_b32: two vectors a
    # trip, the mask interleaved into two predicates, odd vectors in a second loop over the
    # rows) and another for 16- and 8-bit ones (TSel_b16_8: one vector a trip): each its own
    # rules, so an unmeasured f16 takes int8's loop, not a pool with f32's. Neither has a 1D
    # form: both loop over the rows whatever the tile (a one-row tile is a row loop of one
    # row), so each is one line over vectors and rows (basis vfr), not a 1D and a 2D rule
    # (int8: 53 + 2 a vector + 1 a row on the pack's 1-row and 2-row points alike)
    "TSEL": [_v("vfr", 60, 2, 1, by_dtype=True, pool=True, b=4),
             _v("vfr", 60, 2, 1, by_dtype=True, pool=True)],
    # TRSQRT (two SFU ops a vector, 4 cycles an f32 one): port-bound on every row length the
    # pack has, one line over either loop, the row loop a cycle more (basis vfp)
    "TRSQRT": [_v("vfp", 60, 4, 1, by_dtype=True, pool=True)],
    # TRECIP's high-precision algorithm: ~350 cycles an f32 vector (~170 f16) and no row
    # restart to see: one line over both loops (f32: 39 + 346.5 a vector at 3 to 30 vectors,
    # 2D and 1D alike), a loop of a single vector off it (vf1's single term: f32 1 x 1 401,
    # 16 above the line; f16 1 x 128 210, 9 above) instead of dragging it; each element type
    # on its own (TRECIP has two; a pool of f16's and f32's lines, a slope of 170 and one of
    # 346, is no fallback for either)
    "TRECIP": [_v("vf1", 60, 170, by_dtype=True, algo="HIGH_PRECISION")]
    + _vf(2, group="a5_sfu", heads2d=True),
    # a conversion costs by its pair of element widths (f32 -> fp8 takes ~7x f32 -> f16);
    # formats of one width share a loop (upstream's formula table agrees: one row for f32 ->
    # f8E4M3 / f8E5M2 / hif8, one for bf16 -> either fp4), and so do the float conversions
    # from 16 bits that run one load, convert and store a trip (key cvt_loop, _CVT_FROM16)
    "TCVT": _vf(2, key="cvt_loop"),
}

FIT_FILE = Path(__file__).with_name("a2a3_fit.json")
A5_FIT_FILE = Path(__file__).with_name("a5_fit.json")


def _fresh(priors: dict[str, list[Variant]]) -> dict[str, list[Variant]]:
    return {op: [replace(v, when=dict(v.when), coef=dict(v.coef), fitted=set()) for v in vs]
            for op, vs in priors.items()}


def load_table(path: Path | None = FIT_FILE) -> dict[str, list[Variant]]:
    """The a2a3 table: priors with the fitted coefficients of ``path`` applied, and the
    micro-ops' costs (:data:`A5_MICRO`; they run on a5 only)."""
    table = _fresh(A2A3_PRIORS)
    if path is not None and path.exists():
        apply_fit(table, json.loads(path.read_text()))
    micro = _fresh(A5_MICRO)
    # the DMA micro-ops: one DMA instruction each, at TLOAD's fitted head and rate
    dma = next(v for v in table["TLOAD"] if v.basis == "dma").coefficients(None)
    for vs in micro.values():
        for v in vs:
            if v.basis == "dma":
                v.coef["any"] = dma
    table.update(micro)
    return table


def load_a5_table(path: Path | None = A5_FIT_FILE, *, a2a3: Path | None = FIT_FILE,
                  fit: dict[str, Any] | None = None) -> dict[str, list[Variant]]:
    """The a5 table: the instructions of :data:`A5_PRIORS` with the A5 fit (``fit``, else
    the file ``path``), each in front of its a2a3 variants (which price what the A5 variants
    do not match); every other instruction as in the a2a3 table."""
    table = load_table(a2a3)
    a5 = _fresh(A5_PRIORS)
    if fit is None and path is not None and path.exists():
        fit = json.loads(path.read_text())
    if fit is not None:
        apply_fit(a5, fit)
    for op, vs in a5.items():
        table[op] = vs + table.get(op, [])
    return table


#: the values of the ``cost_table`` trait (see ptoisa.targets.Traits)
COST_TABLES = ("fitted", "a5_vf")
_DEFAULT: dict[str, dict[str, list[Variant]]] = {}


_BY_NAME: dict[str, dict[str, list[Variant]]] = {}


def default_table(target: Any = None) -> dict[str, list[Variant]]:
    """The table of a target (a Target or a name), loaded once (shared: do not modify it), as
    its ``cost_table`` trait says: the table fitted on a2a3 ("fitted"), or the same with the
    vector-function loop formulas fitted on A5 for the instructions the A5 pack measures
    ("a5_vf", :func:`load_a5_table`). An unknown name gets the fitted table."""
    if isinstance(target, str):
        hit = _BY_NAME.get(target)
        if hit is not None:
            return hit
        from ..targets import TARGET_NAMES, get_target

        name = target
        try:
            target = get_target(target)
        except Exception:  # noqa: BLE001 - an unknown name: the a2a3 table
            target = None
        if name in TARGET_NAMES:  # built-in names never change meaning: remember them
            _BY_NAME[name] = default_table(target)
            return _BY_NAME[name]
    traits = getattr(target, "traits", None)
    key = traits.cost_table if traits is not None else "fitted"
    if key not in COST_TABLES:
        raise PtoError(f"target {target}: unknown cost_table {key!r} (known: "
                       f"{', '.join(COST_TABLES)})")
    t = _DEFAULT.get(key)
    if t is None:
        t = load_a5_table() if key == "a5_vf" else load_table()
        _DEFAULT[key] = t
    return t


def apply_fit(table: dict[str, list[Variant]], fit: dict[str, Any]) -> None:
    counts = fit.get("n", {})
    for op, by_variant in fit.get("coef", {}).items():
        for idx, by_dtype in by_variant.items():
            v = table[op][int(idx)]
            v.source = fit.get("target", DEFAULT_TARGET)
            v.ops_measured = frozenset(fit.get("ops", {}).get(op, {}).get(idx, ()))
            for dt, c in by_dtype.items():
                v.coef[dt] = tuple(float(z) for z in c)
                v.fitted.add(dt)
                n = counts.get(op, {}).get(idx, {}).get(dt)
                if n is not None:
                    v.n[dt] = int(n)


def variant_of(table: dict[str, list[Variant]], f: Features, pipe: Pipe
               ) -> tuple[int, Variant]:
    for i, v in enumerate(table.get(f["op"], ())):
        if v.matches(f):
            return i, v
    return -1, PIPE_DEFAULT.get(pipe, PIPE_DEFAULT[Pipe.V])


def predict(table: dict[str, list[Variant]], f: Features, pipe: Pipe) -> int:
    """The cycles of ``f``'s instruction (a vector micro-op: a vector function of it alone;
    the schedule prices it inside its vector function)."""
    _, v = variant_of(table, f, pipe)
    if v.micro is not None:
        return max(1, int(math.floor(v.micro.alone(int(f.get("b", 4))) + 0.5)))
    return max(1, int(round(combine(v.basis, v.coefficients(f.get(v.key)),
                                    BASES[v.basis](f)))))


_XNAMES = {"vec": ("repeats", "masked"), "vecs": ("repeats", "b32_whole"),
           "flat": ("repeats", ""), "row": ("rows", ""), "rowred": ("rows", "repeats"),
           "colred": ("rows^2/rowrep", ""), "copy": ("bursts", "blocks"),
           "dma": ("dma", "bytes"), "bytes": ("", "bytes"), "vf1": ("vectors", "single"),
           "vf2": ("vectors", "rows"), "vfr": ("vectors", "rows"), "vf": ("vectors", ""),
           "vfp": ("vectors", "row_loop"),
           "mad": ("fractals", ""), "const": ("", ""),
           "sort32": ("rows", "repeats32"), "dstrow": ("dst_rows", ""),
           "fix": ("dma", "2*elems"), "elems": ("", "elems"), "vreg": ("uses", "")}


def describe(op: str, pipe: Pipe, target: Any = None) -> str:
    """``op``'s cost rules on ``target`` in a few words (``ptoisa ops``): each variant's
    formula with the ``any`` coefficients, ``fitted`` where measurements are behind them,
    ``est.`` where not; a vector micro-op's port, occupancy and latency."""
    table = default_table(target)
    vs = table.get(op)
    if not vs:
        d = PIPE_DEFAULT.get(pipe, PIPE_DEFAULT[Pipe.V])
        return f"{pipe.name} default {_formula(d)} (est.)"
    out = []
    for v in vs:
        if v.micro is not None:
            mc = v.micro
            occ = f"{mc.occ:g}" + (f" ({mc.occ16:g} 16-bit)" if mc.occ16 is not None else "")
            use = f"{mc.port} port {occ}/use" if mc.port != "issue" else "issue slot only"
            out.append(f"VF {use}, latency {mc.lat} (est.)")
            continue
        cond = ",".join(f"{k}={w}" for k, w in v.when.items())
        out.append((f"[{cond}] " if cond else "") + _formula(v)
                   + (" (fitted)" if v.fitted else " (est.)"))
    return " | ".join(out)


def _offset(c: Coef, digits: int) -> str:
    """A :data:`MAX_FORM` rule's c3, signed, or nothing where it is 0."""
    c3 = c[3] if len(c) > 3 else 0.0
    return f" {'-' if c3 < 0 else '+'} {abs(c3):.{digits}g}" if c3 else ""


def _issue(c: Coef, digits: int) -> str:
    """A :data:`MAX_FORM` rule's c4 as a factor, or nothing where it is 1."""
    c4 = c[4] if len(c) > 4 else 1.0
    return f"{c4:.{digits}g}*" if c4 != 1.0 else ""


def _formula(v: Variant) -> str:
    c = v.coefficients(None)
    c0, c1, c2 = c[:3]
    n1, n2 = _XNAMES.get(v.basis, ("x1", "x2"))
    if v.basis in MAX_FORM:
        return (f"{c0:.4g} + max({c1:.4g}*{n1}{_offset(c, 4)}, {_issue(c, 4)}{n1} + "
                f"{c2:.4g}*{n2})")
    terms = [f"{c0:.4g}"] + [f"{c:.4g}*{n}" for c, n in ((c1, n1), (c2, n2)) if c and n]
    return " + ".join(terms).replace("+ -", "- ")


def explain(table: dict[str, list[Variant]], f: Features, pipe: Pipe, target: Any
            ) -> tuple[int, str, bool]:
    """(cycles, the rule that priced ``f`` in words, whether a measurement on ``target``'s
    hardware is behind it). Estimates say why: no rule for the instruction, a prior, a key
    (element type, type pair) or algorithm without measurements, or another target's fit."""
    from ..targets import get_target

    idx, v = variant_of(table, f, pipe)
    if v.micro is not None:
        mc, b = v.micro, int(f.get("b", 4))
        ports = VF_PORTS[mc.port]
        share = f"{mc.occupancy(b) / ports:g} a use in a loop" if ports else "an issue slot"
        cyc = predict(table, f, pipe)
        rule = (f"{f['op']}[{mc.port}] vector function: {share}, latency {mc.latency(b)}; "
                f"alone {VF_STARTUP}+{VF_DRAIN} (start-up, drain) + latency + ports = {cyc}")
        return cyc, f"{rule}  [estimate: {v.note}]", False
    k = v.key_of(f)
    c = v.coefficients(f.get(v.key))
    c0, c1, c2 = c[:3]
    x1, x2 = BASES[v.basis](f)
    n1, n2 = _XNAMES.get(v.basis, ("x1", "x2"))
    terms = [f"{c0:.6g}"] + [f"{c:.6g}*{n}({x:g})" for c, n, x in ((c1, n1, x1), (c2, n2, x2))
                             if c and n]
    if v.basis in MAX_FORM:
        terms = [f"{c0:.6g}", f"max({c1:.6g}*{n1}({x1:g}){_offset(c, 6)}, "
                 f"{_issue(c, 6)}{n1}({x1:g}) + {c2:.6g}*{n2}({x2:g}))"]
    cyc = predict(table, f, pipe)
    cond = ", ".join([f"{a}={b}" for a, b in v.when.items()]
                     + ([f"{v.key}={f.get(v.key)}"] if v.by_dtype else []))
    formula = " + ".join(terms).replace("+ -", "- ")
    rule = f"{f['op']}[{cond or 'any'}] {v.basis}: {formula} = {cyc}"
    try:
        target = get_target(target)
        tname: str | None = target.name
        own = target.name if target.traits.costs_measured else None
    except Exception:  # noqa: BLE001 - an unknown target: nothing was measured on it
        tname = own = None
    key = f.get(v.key) if v.by_dtype else None
    why = ""
    if idx < 0:
        why = f"no rule for {f['op']}: the {pipe.name} pipe's default"
    elif k not in v.fitted:
        why = "a prior, no measurement" + (f": {v.note}" if v.note else "")
        if tname != _PRIORS_OF and v.source != tname:
            why += f"; A2/A3's figure, none for {target}"
    elif v.by_dtype and k == "any":
        why = f"no measurement of {v.key} {key}: the fit pooled over the measured ones"
    elif f.get("algo", "DEFAULT") != "DEFAULT" and "algo" not in v.when:
        why = f"{f['algo']} not measured: the default algorithm's cost"
    elif v.ops_measured and f["op"] not in v.ops_measured:
        why = (f"{f['op']} not measured: its class's fit (on "
               f"{', '.join(sorted(v.ops_measured))})")
    elif v.source != own:
        why = f"fitted to {v.source} measurements, not {target}'s"
    if why:
        return cyc, f"{rule}  [estimate: {why}]", False
    n = v.n.get(k)
    return cyc, f"{rule}  [fitted to {n or 'the'} {v.source} measurement(s)]", True


# ---- fitting --------------------------------------------------------------------------------

def _fit_group(xs: list[tuple[float, float]], ys: list[float], prior: Coef,
               signed2: bool = False) -> Coef:
    """Coefficients minimising the sum of relative errors (L1: the pass rule counts cases,
    so one odd measurement must not drag the others) over the points: c0 always, c1/c2 only
    when their feature varies among the points (else the prior's); non-negative, except the
    masked-row correction c2 of the vector bases and the a5 single-vector one (``signed2``)."""
    x = np.array(xs, float).reshape(-1, 2)
    y = np.array(ys, float)
    free = [0] + [i + 1 for i in range(2) if len(set(x[:, i])) > 1]
    free = free[:len(y)]
    coef = list(prior)
    cols = np.column_stack([np.ones(len(y)), x])
    while True:
        fixed = sum(coef[j] * cols[:, j] for j in range(3) if j not in free)
        a = cols[:, free] / y[:, None]
        rhs = (y - fixed) / y
        sol = _l1(a, rhs)
        neg = [j for j, s in zip(free, sol, strict=True) if s < 0 and not (j == 2 and signed2)]
        if not neg:
            for j, s in zip(free, sol, strict=True):
                coef[j] = float(s)
            return (coef[0], coef[1], coef[2])
        # a negative coefficient: pin it at 0 (a head; its slope is then free) or keep the
        # prior (a slope) and refit
        for j in neg:
            coef[j] = 0.0 if j == 0 else coef[j]
            free.remove(j)
            if j == 0:
                slope = next((i + 1 for i in range(2) if x[:, i].any() and i + 1 not in free),
                             None)
                if slope is not None and len(free) < len(y):
                    free.append(slope)
        if not free:
            return (coef[0], coef[1], coef[2])


def _wmedian(r: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Along the last axis, the ``c`` minimising ``sum |c - r| / y`` (the 1/y-weighted
    median of ``r``)."""
    order = np.argsort(r, axis=-1)
    rs = np.take_along_axis(r, order, -1)
    w = np.cumsum(np.take_along_axis(np.broadcast_to(1 / y, r.shape), order, -1), -1)
    pick = (w < w[..., -1:] / 2).sum(-1)
    return np.take_along_axis(rs, pick[..., None], -1)[..., 0]


def _slope_hi(x: np.ndarray, y: np.ndarray, p1: float) -> float:
    """The top of a slope search: twice the median slope from the smallest x, at least 8."""
    far = x > x.min()
    slope = float(np.median((y[far] - y[~far].min()) / (x[far] - x.min()))) if far.any() \
        else 0.0
    return max(8.0, 2 * slope, 2 * p1)


def _fit_max_shared(x1: np.ndarray, x2: np.ndarray, y: np.ndarray, prior: Coef
                    ) -> tuple[float, Coef]:
    """(sum of relative errors, coefficients) of the :data:`MAX_FORM` rule whose two bounds
    share their head (``c3`` = 0): ``c1`` and ``c2`` by a grid search refined three times,
    ``c0`` for each pair the weighted median. The prior's ``c1`` where the vectors do not
    vary, its ``c2`` with fewer than three points."""
    p0, p1, p2 = prior[:3]
    c1s = np.array([p1]) if len(set(x1)) < 2 else np.linspace(0.0, _slope_hi(x1, y, p1), 65)
    c2s = np.array([p2]) if len(y) < 3 else np.linspace(0.0, 32.0, 33)
    best = (np.inf, p0, p1, p2)
    for _ in range(4):
        g = np.maximum(c1s[:, None, None] * x1, x1 + c2s[None, :, None] * x2)
        c0 = np.maximum(_wmedian(y - g, y), 0.0)
        err = (np.abs(c0[..., None] + g - y) / y).sum(-1)
        i, j = np.unravel_index(int(np.argmin(err)), err.shape)
        if err[i, j] < best[0] - 1e-12:
            best = (float(err[i, j]), float(c0[i, j]), float(c1s[i]), float(c2s[j]))
        if len(c1s) > 1:
            d1 = c1s[1] - c1s[0]
            c1s = np.linspace(max(0.0, best[2] - d1), best[2] + d1, 21)
        if len(c2s) > 1:
            d2 = c2s[1] - c2s[0]
            c2s = np.linspace(max(0.0, best[3] - d2), best[3] + d2, 21)
    return best[0], (best[1], best[2], best[3], 0.0)


def _l1_line(x: np.ndarray, y: np.ndarray, w: np.ndarray, slopes: np.ndarray
             ) -> tuple[float, float]:
    """(intercept, slope) of the line ``a + s*x`` minimising ``sum |a + s*x - y| / w``, the
    slope one of ``slopes``."""
    r = y[None, :] - slopes[:, None] * x[None, :]
    a = _wmedian(r, np.broadcast_to(w, r.shape))
    err = (np.abs(r - a[:, None]) / w).sum(-1)
    i = int(np.argmin(err))
    return float(a[i]), float(slopes[i])


def _fit_max(xs: list[tuple[float, float]], ys: list[float], prior: Coef,
             signed2: bool = False) -> Coef:
    """The coefficients of a :data:`MAX_FORM` rule ``c0 + max(c1*V + c3, c4*V + c2*R)``
    minimising the sum of relative errors (as :func:`_fit_group`; V vectors, R rows): the
    better of two fits. One with a shared head and one issue a cycle (``c3`` = 0, ``c4`` = 1,
    :func:`_fit_max_shared`); one with a line per bound: the points split by their vectors a
    row (each split point in turn: the rows of fewer vectors restart-bound, the others
    port-bound), each side its own line (port-bound ``A + c1*V``, c1 in steps of 1/64;
    restart-bound ``B + c4*V + c2*R``, c4 from 1 to 2 in steps of 1/32 where the side has
    three points and two row lengths, else 1, c2 in steps of 1/16; each head the weighted
    median). A restart-bound side with fewer than two points (or one row count) takes the
    prior's line; a port-bound side without two vector counts has no line, and the rule no
    port bound (``c1`` = 0, ``A`` = B: the restart-bound line prices every point). Borrowing
    the prior's port line there (the pooled fit of other keys, or 2 cycles a vector) made
    the max pick another loop's slope wherever it ran above the key's own line: TCVT f32 ->
    f16 10 x 1280 held out, 407 cycles for 288, priced 295 without it. ``c0`` = B, ``c3`` =
    A - B."""
    del signed2
    x = np.array(xs, float).reshape(-1, 2)
    y = np.array(ys, float)
    x1, x2 = x[:, 0], x[:, 1]
    prior = tuple(prior[:3]) + ((prior[3],) if len(prior) > 3 else (0.0,)) \
        + ((prior[4],) if len(prior) > 4 else (1.0,))
    best_err, shared = _fit_max_shared(x1, x2, y, prior)
    best: Coef = shared + (1.0,)
    if len(y) < 3:
        return best
    per_row = x1 / np.maximum(x2, 1.0)
    c2s = np.arange(0.0, 32 + 1 / 32, 1 / 16)
    for t in sorted(set(per_row)) + [np.inf]:
        hi, lo = per_row >= t, per_row < t
        if hi.sum() >= 2 and len(set(x1[hi])) > 1:
            top = math.ceil(_slope_hi(x1[hi], y[hi], prior[1]))
            step = max(1 / 64, 2.0 ** math.ceil(math.log2(top / 1024)))
            a, c1 = _l1_line(x1[hi], y[hi], y[hi], np.arange(0.0, top + step / 2, step))
        else:  # no port bound the points show: the restart-bound line alone (a = b below)
            a, c1 = None, 0.0
        if lo.sum() >= 3 and len(set(x2[lo])) > 1 and len(set(per_row[lo])) > 1:
            fits = [(_l1_line(x2[lo], y[lo] - c4 * x1[lo], y[lo], c2s), c4)
                    for c4 in np.arange(1.0, 2 + 1 / 64, 1 / 32)]
            errs = [float((np.abs(b + c4 * x1[lo] + c2 * x2[lo] - y[lo]) / y[lo]).sum())
                    for (b, c2), c4 in fits]
            (b, c2), c4 = fits[int(np.argmin(errs))]
        elif lo.sum() >= 2 and len(set(x2[lo])) > 1:
            (b, c2), c4 = _l1_line(x2[lo], y[lo] - x1[lo], y[lo], c2s), 1.0
        else:
            b, c2, c4 = prior[0], prior[2], prior[4]
        if a is None:
            a = b
        err = float((np.abs(np.maximum(a + c1 * x1, b + c4 * x1 + c2 * x2) - y) / y).sum())
        if err < best_err - 1e-12:
            best_err, best = err, (b, c1, c2, a - b, float(c4))
    return best


def _l1(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """argmin_s sum |a s - b| by iteratively reweighted least squares."""
    sol = np.linalg.lstsq(a, b, rcond=None)[0]
    for _ in range(100):
        w = 1.0 / np.sqrt(np.maximum(np.abs(a @ sol - b), 1e-6))
        new = np.linalg.lstsq(a * w[:, None], b * w, rcond=None)[0]
        if np.allclose(new, sol, rtol=0, atol=1e-10):
            break
        sol = new
    return sol


def fit_table(samples: Iterable[tuple[Features, Pipe, float]], *,
              priors: dict[str, list[Variant]] | None = None,
              target: TargetLike = DEFAULT_TARGET) -> dict[str, Any]:
    """Fit the coefficients of ``priors`` (default :data:`A2A3_PRIORS`) to ``(features,
    pipe, cycles)`` samples measured on ``target``: per (instruction, variant) one ``any``
    group over all element types, or (``by_dtype``) one group per key value that has
    measurements (and, ``pool``, the ``any`` group too). Returns the JSON-able fit (see
    :func:`apply_fit`)."""
    table = _fresh(A2A3_PRIORS if priors is None else priors)
    members: dict[str, list[tuple[str, int]]] = {}
    for op, vs in table.items():
        for i, v in enumerate(vs):
            members.setdefault(v.group or f"{op}/{i}", []).append((op, i))
    groups: dict[tuple[str, str], list[tuple[tuple[float, float], float, str]]] = {}
    seen: dict[str, set[str]] = {}
    for f, pipe, y in samples:
        idx, v = variant_of(table, f, pipe)
        if idx < 0:
            continue
        seen.setdefault(v.group or f"{f['op']}/{idx}", set()).add(f["op"])
        x = BASES[v.basis](f)
        # by_dtype: each element type on its own (rates differ: f32 cubes at half rate);
        # the "any" fallback keeps its prior
        keys = ((str(f.get(v.key) or "any"),) + (("any",) if v.pool else ())
                if v.by_dtype else ("any",))
        for dt in dict.fromkeys(keys):
            groups.setdefault((v.group or f"{f['op']}/{idx}", dt), []).append((x, y, f["op"]))
    fitted: dict[tuple[str, str], Coef] = {}
    for (g, dt), pts in sorted(groups.items(), key=lambda kv: (kv[0][0], kv[0][1] != "any")):
        op, idx = members[g][0]
        v = table[op][idx]
        prior = v.coef.get(dt) or fitted.get((g, "any")) or v.coef.get("any", v.prior)
        fit = _fit_max if v.basis in MAX_FORM else _fit_group
        fitted[(g, dt)] = fit([p[0] for p in pts], [p[1] for p in pts], prior,
                              signed2=v.basis in ("vec", "vecs", "vf1"))
    out: dict[str, dict[str, dict[str, list[float]]]] = {}
    counts: dict[str, dict[str, dict[str, int]]] = {}
    for (g, dt), c in sorted(fitted.items()):
        op0, idx0 = members[g][0]
        v = table[op0][idx0]
        pts = groups[(g, dt)]
        for op, idx in members[g]:
            own = [(x, y) for x, y, o in pts if o == op]
            cm = c
            if v.member_heads and own and len(own) < len(pts):
                ys = np.array([y for _, y in own], float)
                pred = np.array([combine(v.basis, c, x) for x, _ in own], float)
                cm = (c[0] + float(_wmedian(ys - pred, ys)),) + tuple(c[1:])
            out.setdefault(op, {}).setdefault(str(idx), {})[dt] = [round(z, 6) for z in cm]
            counts.setdefault(op, {}).setdefault(str(idx), {})[dt] = len(pts)
    ops: dict[str, dict[str, list[str]]] = {}
    for g, names in seen.items():
        for op, idx in members[g]:
            ops.setdefault(op, {})[str(idx)] = sorted(names)
    return {"schema": "ptoisa-cycle-fit/1", "target": target, "coef": out, "n": counts,
            "ops": ops}

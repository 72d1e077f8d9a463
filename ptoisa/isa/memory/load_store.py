"""Memory and data movement: TASSIGN, TLOAD, TSTORE, TSTORE_FP."""

from __future__ import annotations

from typing import Any

import numpy as np

from ... import conv, lazy
from ...conv import ConvSpec, ConvTile
from ...enums import AtomicType, Layout, Pipe, ReluPreMode, STPhase, TileType
from ...errors import PtoError, RuntimeCheckError
from ...memory import Machine, current
from ...ptoas_source import source_rule
from ...tensor import GlobalTensor, GMSpec
from ...tile import LaneBlocks, Tile, TileSpec, _pack4, _unpack4
from .. import planned
from ..quant import convert, fp_words, quant_mode, quantize
from ..registry import Instr, Opnd, Param, PipeForms, Sig, instr, locs
from ..spelling import LAYOUT_HINT, Attr, Form, Ptoas

# ---- TASSIGN ---------------------------------------------------------------------------------


@instr("TASSIGN", family="memory", pipe=Pipe.S, returns_event=False, batched=True,
       any_valid=True, access="place",
       operands=(Opnd("obj", "tile|gm", "out"), Opnd("addr", "any")))
def TASSIGN(m: Machine, obj: Any, addr: Any) -> None:  # noqa: N802
    """Bind a tile to byte address ``addr`` of its role's buffer (UB, L1, L0A/B/C, ...), or a
    GlobalTensor to a numpy array. Tiles at overlapping addresses share bytes."""
    if isinstance(obj, Tile):
        m.assign(obj, addr)
    else:
        if not isinstance(addr, np.ndarray):
            raise PtoError("a GlobalTensor is assigned a numpy array, got "
                           f"{type(addr).__name__}")
        obj.rebind(addr)


# ---- shape rule shared by TLOAD / TSTORE -------------------------------------------------------

def _gm_covers(op: str, gm: GlobalTensor, tile: Tile, what: str) -> None:
    """The view must cover the tile's valid region; the valid region is what is transferred
    (dynamic-shape kernels load a partial valid region from a full-size partition view; the
    CPU simulator does the same). Rows/cols of the view are counted by the *tile's* major
    order (row-major: rows = s0*s1*s2*s3; col-major: rows = s3), or as the NZ box grid for an
    NZ view; elements are addressed by the view's layout tag."""
    rows, cols = tile._vr, tile._vc
    gr, gc = _cover(gm, tile)[:2]
    if gr < rows or gc < cols:
        raise RuntimeCheckError(
            f"GlobalTensor {gm.spec.describe()} covers {gr}x{gc} elements as a tile, "
            f"{what} valid region is {rows}x{cols}", op=op)


def _cover(gm: GlobalTensor, tile: Tile) -> tuple[int, ...]:
    """(rows, cols) the view covers as ``tile`` (see _gm_covers), remembered by the types."""
    key = (id(gm.spec), id(tile.spec))
    hit = _COVERS.get(key)
    if hit is None:
        s0, s1, s2, s3, s4 = gm.spec.shape
        if gm.spec.layout not in (Layout.ND, Layout.DN):
            cover = gm.spec.rows_cols
        elif tile.spec.is_row_major:
            cover = s0 * s1 * s2 * s3, s4
        else:
            cover = s3, s0 * s1 * s2 * s4
        if len(_COVERS) >= 4096:
            _COVERS.clear()
        hit = _COVERS[key] = (*cover, gm.spec, tile.spec)  # (the specs keep their ids theirs)
    return hit


def _plain_transfer(gm: GlobalTensor, tile: Tile) -> bool:
    """Do TLOAD's / TSTORE's run-time rules pass for this plain tile and view, as quick to
    see (a plain Tile, no convolution-only layout, a view covering the valid region: the
    rules of _conv_path and _gm_covers)? False: the general dispatch decides."""
    if type(tile) is not Tile or type(gm) is not GlobalTensor or gm.spec.layout in _CONV_ONLY:
        return False
    c = _cover(gm, tile)
    return c[0] >= tile._vr and c[1] >= tile._vc


#: ids of (GM view spec, tile spec) -> (the rows, the cols a view covers as that tile, the
#: two specs): see _gm_covers
_COVERS: dict[tuple[int, int], tuple[Any, ...]] = {}


def _gm_layouts(*allowed: Layout) -> Any:
    def rule(sig: Sig) -> None:
        for o in sig.ins.operands:
            t = sig[o.name]
            if isinstance(t, GMSpec) and t.layout not in allowed:
                names = ", ".join(a.name for a in allowed)
                raise sig.fail(f"{o.name} layout {t.layout.name} is not supported "
                               f"(supported: {names})")
    return rule


# pto.tload (TLoadOp::verify) refuses element types of different sizes, in other words on
# each target (a5's are in tload_invalid_elem_size.pto, a2a3's in the source only)
_PTOAS_TLOAD_SIZE = {
    "a2a3": source_rule("lib/PTO/IR/PTO.cpp:TLoadOp::verify",
                        "expects src and dst element types to have the same bitwidth", ("a2a3",)),
    "a5": source_rule("lib/PTO/IR/PTO.cpp:TLoadOp::verify",
                      "expects src and dst element types to have the same element size",
                      ("a5",))}


def _gm_dtype_matches(tile_name: str, gm_name: str) -> Any:
    def rule(sig: Sig) -> None:
        t, g = sig[tile_name], sig[gm_name]
        if t is None or g is None:
            return
        if t.loc is TileType.Acc:
            return  # Acc -> GM converts (fix-pipe)
        if not sig.target.traits.npu_static_checks and sig["preQuantScalar"] is not None:
            return  # the CPU simulator converts any tile given a quant scalar
        if t.dtype is not g.dtype:
            head = f"{tile_name} element type {t.dtype} != {gm_name} element type {g.dtype}"
            if t.dtype.itemsize != g.dtype.itemsize:
                cited = _PTOAS_TLOAD_SIZE.get(sig.target.name) if tile_name == "dst" else None
                if cited is not None:  # a TLOAD on a target of PTOAS's
                    raise sig.fail(head, ptoas=cited)
                # (PTOAS's words where even the sizes differ: tload_invalid_elem_size.pto)
                a, b = sorted((tile_name, gm_name), reverse=True)
                head += f" (expects {a} and {b} element types to have the same element size)"
            raise sig.fail(head)
    return rule


def _gather(gm: GlobalTensor, rows: int, cols: int) -> np.ndarray:
    if gm.dtype.packed:  # 4-bit codes at nibble offsets (even element = low nibble)
        return _unpack4(gm.flat, gm.indices(rows, cols))
    w = gm.window(rows, cols)
    if w is not None:
        return w
    lb = gm.lane_blocks(rows, cols)
    if lb is not None:
        return lb[0][lb[1]]
    return gm.flat[gm.indices(rows, cols)]


# ---- TLOAD -------------------------------------------------------------------------------------

def _acc_tload_cpu_only(sig: Sig) -> None:
    """GM -> Acc has no data path on the NPUs; the CPU simulator's TLOAD fills Acc tiles (its
    TMOV Acc -> Vec tests rely on it)."""
    dst = sig["dst"]
    if isinstance(dst, TileSpec) and dst.loc is TileType.Acc and \
            sig.target.traits.npu_static_checks:
        raise sig.fail(f"dst must be a Vec, Mat, Left, Right, Bias or Scaling tile on "
                       f"{sig.target}, got Acc")


def _tload_vec_layout_a5(sig: Sig) -> None:
    """A5 loads a Vec tile as ND, DN or NZ only (TLOAD.md's A5 layout pairs)."""
    d = sig["dst"]
    if isinstance(d, TileSpec) and d.loc is TileType.Vec and \
            d.layout_name not in ("ND", "DN", "NZ"):
        raise sig.fail(f"expects A5 tload vec dst layout to be ND, DN, or NZ, got "
                       f"{d.layout_name}")


def _tload_fp4_a5(sig: Sig) -> None:
    """A5 loads packed fp4 into an NZ Mat tile from ND or NZ only (tload_common.hpp,
    TLoadCubeCheck: DN2NZ is refused for fp4)."""
    d, g = sig["dst"], sig["src"]
    if isinstance(d, TileSpec) and isinstance(g, GMSpec) and d.dtype.packed and \
            g.layout is Layout.DN and d.layout_name == "NZ":
        raise sig.fail(f"a DN GM view does not load into an NZ tile for the packed type "
                       f"{d.dtype} on {sig.target} (its DN -> NZ load has no fp4 path)")


def _tload_runtime(ins: Instr, dst: Tile, src: GlobalTensor) -> None:
    if _conv_path(ins, src, dst):
        return
    _gm_covers(ins.mnemonic, src, dst, "dst")


# ---- ConvTile operands (the convolution layouts; see ptoisa.conv) ---------------------------

#: GM layouts only a ConvTile is transferred with (NC1HWC0 also stores plain tiles)
_CONV_ONLY = (Layout.FRACTAL_Z, Layout.NDC1HWC0)
_CONV_LAYOUTS = (Layout.NCHW, Layout.NHWC, Layout.NC1HWC0, Layout.NCDHW, Layout.NDC1HWC0,
                 Layout.FRACTAL_Z)


def _conv_or(plain_rule: Any) -> Any:
    """Static layout rule: a ConvTile operand takes the convolution GM layouts, a plain tile
    what ``plain_rule`` allows."""
    def rule(sig: Sig) -> None:
        if not any(isinstance(sig[o.name], ConvSpec) for o in sig.ins.operands):
            plain_rule(sig)
            return
        for o in sig.ins.operands:
            t = sig[o.name]
            if isinstance(t, GMSpec) and t.layout not in _CONV_LAYOUTS:
                names = ", ".join(a.name for a in _CONV_LAYOUTS)
                raise sig.fail(f"{o.name} layout {t.layout.name} is not a convolution layout "
                               f"(a ConvTile takes {names})")
    return rule


def _conv_path(ins: Instr, gm: GlobalTensor, tile: Tile) -> bool:
    """Run-time rule of the ConvTile branch: True when ``tile`` is a ConvTile (checked here:
    same element type, GM view in a convolution layout holding the tile's elements)."""
    if not isinstance(tile, ConvTile):
        if gm.spec.layout in _CONV_ONLY:
            raise RuntimeCheckError(f"a {gm.spec.layout.name} GM view is transferred with a "
                                    "ConvTile, got a plain tile", op=ins.mnemonic)
        return False
    if gm.spec.layout.name != tile.layout and not (
            tile.layout == "FRACTAL_Z" and gm.spec.layout is Layout.FRACTAL_Z):
        raise RuntimeCheckError(f"GM layout {gm.spec.layout.name} != ConvTile layout "
                                f"{tile.layout}", op=ins.mnemonic)
    if gm.dtype is not tile.dtype:
        raise RuntimeCheckError(f"GM element type {gm.dtype} != ConvTile element type "
                                f"{tile.dtype}", op=ins.mnemonic)
    try:
        conv.gm_indices(gm, tile)
    except PtoError as e:
        raise RuntimeCheckError(str(e), op=ins.mnemonic) from None
    return True


def _load_in_place(m: Machine, dst: Tile, src: GlobalTensor) -> bool:
    """TLOAD of a whole tile without a copy, where it can: dst reads the GM view in place
    until either is written (see Tile.set_lazy). False: nothing done (copy instead)."""
    spec = dst.spec
    if src.spec.dtype is not spec.dtype or spec.dtype.packed or not lazy.ok(m, dst):
        return False
    vr, vc = spec.rows, spec.cols
    w = src.window(vr, vc)
    if w is None and spec.is_boxed:
        # blocks at uneven offsets: kept as (strided GM view, block per lane) in logical
        # order until the tile is read in its own layout or written
        lb = src.lane_blocks(vr, vc)
        if lb is not None:
            dst.set_lazy(LaneBlocks(*lb), m, off_chip=True)
            return True
    if w is not None:  # read GM in place until the tile or that GM is written
        dst.set_lazy(w, m, off_chip=True)
        return True
    return False


def _tload_fast(ins: Instr, m: Machine, vals: list[Any], params: dict[str, Any]) -> bool:
    """TLOAD's run-time rules where they are quick to see passing (a plain tile, a view in a
    plain layout covering its valid region), then its semantics (Instr.fast)."""
    dst, src = vals[0], vals[1]
    if not _plain_transfer(src, dst):
        return False
    _tload(m, dst, src, null_pads=False)
    return True


def _transfer_plan(gm: Any, tile: Any) -> tuple[int, int] | None:
    """(When planned) (rows, cols) of a TLOAD / TSTORE of a whole plain tile whose run-time
    rules pass while the tile is whole (see _plain_transfer), or None."""
    if not planned.plain(tile) or type(gm) is not GlobalTensor \
            or gm.spec.layout in _CONV_ONLY or gm.spec.dtype is not tile.spec.dtype:
        return None
    rows, cols = tile.spec.rows, tile.spec.cols
    c = _cover(gm, tile)
    return (rows, cols) if c[0] >= rows and c[1] >= cols else None


class _Window:
    """A planned transfer's GM window, made again only when the plan binds its view to other
    arrays (a view's offsets are the plan's): ``get()`` -> the window, or None. A store's
    (``write``) is None where GM is not writable or the lanes' windows overlap; with
    ``grid`` lanes (> 1) it is then their blocks where the lanes' windows are uneven
    (:meth:`GlobalTensor.grid_window`, as ``_store`` finds them)."""

    __slots__ = ("gm", "rows", "cols", "flat", "w", "write", "grid")

    def __init__(self, gm: GlobalTensor, rows: int, cols: int, write: bool,
                 grid: int = 1) -> None:
        self.gm, self.rows, self.cols, self.write, self.grid = gm, rows, cols, write, grid
        self.flat: np.ndarray | None = None
        self.w: np.ndarray | None = None

    def get(self) -> np.ndarray | None:
        flat = self.gm.flat
        if flat is not self.flat:
            w = self.gm.window(self.rows, self.cols)
            if self.write:
                if w is not None and _lanes_overlap(w):
                    w = None
                if w is None and self.grid > 1:
                    w = self.gm.grid_window(self.rows, self.cols)
                if not flat.flags.writeable:
                    w = None
            self.flat, self.w = flat, w
        return self.w


def _tload_plan(ins: Instr, m: Machine, vals: list[Any], params: dict[str, Any]
                ) -> Any:
    """TLOAD's planned form (Instr.plan, ptoisa/isa/planned.py): a whole plain tile from a
    view covering it (the run-time rules pass), loaded as _tload loads it: in place where
    the tile may be lazy (its window kept while the plan's view reads the same arrays), else
    copied into its storage."""
    dst, src = vals[0], vals[1]
    if len(vals) == 2 and not params and type(dst) is Tile and dst.spec.is_boxed:
        return _boxed_tload_plan(m, dst, src)
    rc = _transfer_plan(src, dst) if len(vals) == 2 and not params else None
    if rc is None:
        return None
    win = _Window(src, *rc, write=False)
    big = lazy.ok(m, dst)

    def call() -> bool:
        if not dst._whole:
            return False
        w = win.get()
        if w is None:
            return False
        if big and m.lazy_loads:
            dst.set_lazy(w, m, off_chip=True)
            return True
        if m._lazy and not planned.settled(m):
            return False
        out = planned.target(dst, m)
        if out is None:
            return False
        planned.written(dst, m)
        out[...] = w
        return True
    return call


class _BoxedWindow:
    """A planned boxed TLOAD's source as _load_in_place finds it, made again only when the
    plan binds its view to other arrays: ``get()`` -> the GM window, or the (strided view,
    block per lane) of blocks at uneven offsets, or None (neither: a copy)."""

    __slots__ = ("gm", "rows", "cols", "flat", "got")

    def __init__(self, gm: GlobalTensor, rows: int, cols: int) -> None:
        self.gm, self.rows, self.cols = gm, rows, cols
        self.flat: np.ndarray | None = None
        self.got: Any = None

    def get(self) -> Any:
        flat = self.gm.flat
        if flat is not self.flat:
            got: Any = self.gm.window(self.rows, self.cols)
            if got is None:
                lb = self.gm.lane_blocks(self.rows, self.cols)
                if lb is not None:
                    lb[1].flags.writeable = False  # (every load's LaneBlocks shares it)
                    got = (*lb, LaneBlocks(*lb).unique_view())
            self.flat, self.got = flat, got
        return self.got


def _boxed_tload_plan(m: Machine, dst: Tile, src: Any) -> Any:
    """TLOAD's planned form for a whole boxed tile (a Mat panel of a GEMM) from a view of its
    element type covering it (the run-time rules pass while it is whole): read in place as
    _load_in_place reads it, its window or lane blocks kept while the plan's view reads the
    same arrays; anything else (a copy into the boxes) the general call."""
    spec = dst.spec
    if spec.dtype.packed or type(src) is not GlobalTensor or src.spec.layout in _CONV_ONLY \
            or src.spec.dtype is not spec.dtype or not lazy.ok(m, dst):
        return None
    rows, cols = spec.rows, spec.cols
    c = _cover(src, dst)
    if c[0] < rows or c[1] < cols:
        return None
    win = _BoxedWindow(src, rows, cols)

    def call() -> bool:
        if not (dst._whole and m.lazy_loads):
            return False
        got = win.get()
        if got is None:
            return False
        dst.set_lazy(got if type(got) is not tuple else LaneBlocks(*got), m, off_chip=True)
        return True
    return call


def _cpu_tload(m: Machine, dst: Tile, src: GlobalTensor) -> None:
    """cpu: TLOAD as the CPU simulator, which fills the whole tile with the pad value first
    (Null pads 0)."""
    _tload(m, dst, src, null_pads=True)


@instr("TLOAD", family="memory", pipe=Pipe.MTE2, batched=True,
       ptoas=Ptoas(attrs={
           "pad_mode": Attr(why="PTOAS lowers pto.tload to a TLOAD without padding; write "
                                "pto.tfillpad for padding"),
           "init_out_buffer": Attr(only=(False,), why="PTOAS lowers pto.tload to a TLOAD that "
                                                     "does not initialise the tile"),
           "layout": LAYOUT_HINT}),
       operands=(Opnd("dst", "tile", "out"), Opnd("src", "gm")),
       dtype_key=("dst",),
       static=(locs(["dst"], TileType.Vec, TileType.Mat, TileType.Left, TileType.Right,
                    TileType.Bias, TileType.Scaling, TileType.Acc),
               _acc_tload_cpu_only,
               _conv_or(_gm_layouts(Layout.ND, Layout.DN, Layout.NZ, Layout.MX_A_ZZ,
                                    Layout.MX_A_ND, Layout.MX_A_DN, Layout.MX_B_NN,
                                    Layout.MX_B_ND, Layout.MX_B_DN)),
               _gm_dtype_matches("dst", "src")),
       static_for={"a5": (_tload_vec_layout_a5, _tload_fp4_a5)},
       runtime=(_tload_runtime,),
       impl_for={"cpu": _cpu_tload}, fast=_tload_fast, plan=_tload_plan)
def TLOAD(m: Machine, dst: Tile, src: GlobalTensor) -> None:  # noqa: N802
    """Copy the GM view into dst's valid region (any GM layout into any tile layout, e.g.
    ND -> NZ). With a pad value other than Null the rest of the tile is filled with it; on cpu
    the whole tile is first filled with the pad value (Null pads 0), as the CPU simulator does.
    A ConvTile dst takes the view's elements in order (NC1HWC0, NDC1HWC0, FRACTAL_Z ...).
    """
    _tload(m, dst, src, null_pads=False)


def _tload(m: Machine, dst: Tile, src: GlobalTensor, *, null_pads: bool) -> None:
    """TLOAD's semantics; ``null_pads``: a Null pad value pads with 0 (the cpu target's
    declaration: the CPU simulator fills the whole tile first), else it leaves the rest of the
    tile untouched (the NPU)."""
    if isinstance(dst, ConvTile):
        conv.load(dst, src)
        return
    vr, vc = dst._vr, dst._vc
    spec = dst.spec
    whole = dst._whole
    if not whole and (null_pads or not spec.pad.is_null):
        # (the float Max / Min: +-inf, or the largest finite values under PTOAS's a5 TileLib,
        # lib/TileOps/a5/_load_store.py _pad_max / _pad_min: pad_float_extremes)
        p = spec.pad.scalar(spec.dtype, m.target.traits.pad_float_extremes)
        dst.fill(p, vr, spec.cols - vc, 0, vc)
        dst.fill(p, spec.rows - vr, spec.cols, vr, 0)
    if not (vr and vc):
        return
    if whole and _load_in_place(m, dst, src):
        return
    # a partial load writes through storage, which first settles any earlier lazy contents:
    # what lies outside the valid region is kept (the NPU does not touch it)
    dst.write(_gather(src, vr, vc))


# ---- TSTORE ------------------------------------------------------------------------------------

def _tstore_runtime(ins: Instr, dst: GlobalTensor, src: Tile, *rest: Any, **params: Any) -> None:
    if _conv_path(ins, dst, src):
        return
    _gm_covers(ins.mnemonic, dst, src, "src")



def _store(m: Machine, dst: GlobalTensor, values: np.ndarray, atomic: AtomicType) -> None:
    if values.ndim == 3 and not isinstance(dst.offset, np.ndarray):
        # every block of a lockstep launch stores to the same GM window: in block order, as
        # the blocks of a sequential launch (the last writer wins; atomic adds accumulate)
        for v in values:
            _store(m, dst, v, atomic)
        return
    m.gm_writes += 1
    lazy.gm_barrier(m, dst.flat)
    if dst.dtype.packed:
        idx = dst.indices(*values.shape[-2:])
        _pack4(dst.flat, idx, values)
        return
    w = dst.window(*values.shape[-2:])
    if w is None or _lanes_overlap(w):
        # blocks on a grid, none overlapping (a GEMM's C): one strided copy all the same
        w = dst.grid_window(*values.shape[-2:]) if values.ndim == 3 else None
    if w is not None:
        v = values.reshape(w.shape) if w.ndim == 4 else values  # (a grid: (ni, nj, r, c))
        if atomic is AtomicType.AtomicAdd:
            with np.errstate(over="ignore"):
                w[...] = (w + v.astype(w.dtype)).astype(w.dtype)
        else:
            w[...] = v
        return
    lb = dst.lane_blocks(*values.shape[-2:]) if atomic is AtomicType.AtomicNone else None
    if lb is not None:
        lb[0][lb[1]] = values  # blocks in block order: the last writer wins, as sequentially
        return
    idx = dst.indices(*values.shape[-2:])
    if atomic is AtomicType.AtomicAdd and idx.ndim > 2:
        with np.errstate(over="ignore"):  # blocks may add into the same elements
            np.add.at(dst.flat, idx, values.astype(dst.flat.dtype))
        return
    if atomic is AtomicType.AtomicAdd:
        cur = dst.flat[idx]
        with np.errstate(over="ignore"):
            dst.flat[idx] = (cur + values.astype(cur.dtype)).astype(cur.dtype)
    else:
        dst.flat[idx] = values


def _lanes_overlap(w: np.ndarray) -> bool:
    """Blocks of a lockstep store whose GM windows overlap must write in block order."""
    if w.ndim < 3 or w.shape[0] < 2:
        return False
    return bool(np.shares_memory(w[0], w[1]))


def _acc_store_rule(sig: Sig) -> None:
    src = sig["src"]
    if not isinstance(src, TileSpec) or src.loc is not TileType.Acc:
        return
    if not sig.target.traits.npu_static_checks:
        return
    if not 1 <= src.cols <= 4095:
        raise sig.fail(f"Acc src Cols must be in [1, 4095], got {src.cols}")
    dst = sig["dst"]
    if isinstance(dst, GMSpec):
        if dst.layout is Layout.ND and not 1 <= src.rows <= 8192:
            raise sig.fail(f"Acc src Rows must be in [1, 8192] for an ND store, got {src.rows}")
        if dst.layout is Layout.NZ and (not 1 <= src.rows <= 65535 or src.cols % 16):
            raise sig.fail("Acc src to an NZ store needs Rows in [1, 65535] and Cols % 16 == 0, "
                           f"got {src.rows}x{src.cols}")


def _acc_valid_col_runtime(ins: Instr, dst: GlobalTensor, src: Tile, *rest: Any,
                           **params: Any) -> None:
    if not 1 <= src._vc <= 4095 and src.loc is TileType.Acc and \
            current().target.traits.npu_runtime_checks:
        raise RuntimeCheckError(f"src valid cols must be in [1, 4095], got {src.valid_col}",
                                op=ins.mnemonic)


def _tstore_fast(ins: Instr, m: Machine, vals: list[Any], params: dict[str, Any]) -> bool:
    """TSTORE's run-time rules where they are quick to see passing (a plain tile, a writable
    view in a plain layout covering its valid region, an Acc source's valid columns in
    [1, 4095]), then its semantics (Instr.fast)."""
    dst, src = vals[0], vals[1]
    if not _plain_transfer(dst, src) or not dst.flat.flags.writeable \
            or (src.spec.loc is TileType.Acc and not 1 <= src._vc <= 4095):
        return False
    # (the unit-flag phase orders the fix pipe: observers see it, the values do not)
    _tstore(m, *vals, atomicType=params["atomicType"], reluPreMode=params["reluPreMode"])
    return True


def _tstore_plan(ins: Instr, m: Machine, vals: list[Any], params: dict[str, Any]) -> Any:
    """TSTORE's planned form (Instr.plan, ptoisa/isa/planned.py): a whole plain Vec / Mat
    tile of the view's type to a writable view covering it, no quantisation, ReLU or atomic
    add (the run-time rules pass), stored as _tstore stores it: a deferred result computed
    straight into GM, else the tile's values copied (the window kept while the plan's view
    writes the same arrays)."""
    dst, src = vals[0], vals[1]
    if type(src) is Tile and src.spec.loc is TileType.Acc:
        return _acc_tstore_plan(m, vals, params)
    rc = _transfer_plan(dst, src)
    if rc is None or (len(vals) > 2 and vals[2] is not None) \
            or params.get("atomicType") is not AtomicType.AtomicNone \
            or params.get("reluPreMode") is not ReluPreMode.NoRelu \
            or (m.lanes > 1) != isinstance(dst.offset, np.ndarray):
        return None  # (every block to one window: _store orders them)
    win = _Window(dst, *rc, write=True)

    def call() -> bool:
        if not src._whole:
            return False
        w = win.get()
        if w is None:
            return False
        if src._pending is not None:
            return _store_pending(m, dst, src, w)
        if m._lazy and not planned.settled(m):
            return False
        lazy.gm_barrier(m, dst.flat)  # (a tile reading it in place takes its copy first)
        v = planned.values(src, m)
        if v is None:
            return False
        m.gm_writes += 1
        w[...] = v
        return True
    call.store_window = (win.get, dst)  # type: ignore[attr-defined]  (plan_loops' fusion)
    return call


def _acc_tstore_plan(m: Machine, vals: list[Any], params: dict[str, Any]) -> Any:
    """TSTORE's planned form for a whole Acc tile (a GEMM's C) to a view of its element type
    covering it, no quantisation, ReLU or atomic add, the Acc rules passing (its valid
    columns in [1, 4095]): stored as _tstore stores it, the values read, GM settled, then
    copied into the view's window (or its grid of blocks), kept while the plan's view writes
    the same arrays; anything else (a deferred result, another window) the general call."""
    dst, src = vals[0], vals[1]
    spec = src.spec
    rows, cols = spec.rows, spec.cols
    if type(dst) is not GlobalTensor or (len(vals) > 2 and vals[2] is not None) \
            or spec.dtype.packed or dst.spec.dtype is not spec.dtype \
            or dst.spec.layout in _CONV_ONLY or not 1 <= cols <= 4095 or rows < 1 \
            or params.get("atomicType") is not AtomicType.AtomicNone \
            or params.get("reluPreMode") is not ReluPreMode.NoRelu \
            or (m.lanes > 1) != isinstance(dst.offset, np.ndarray):
        return None  # (every block to one window: _store orders them)
    c = _cover(dst, src)
    if c[0] < rows or c[1] < cols:
        return None
    win = _Window(dst, rows, cols, True, m.lanes)

    def call() -> bool:
        if not src._whole or src._pending is not None:
            return False
        w = win.get()
        if w is None:
            return False
        v = np.asarray(src.read())
        m.gm_writes += 1
        lazy.gm_barrier(m, dst.flat)
        w[...] = v.reshape(w.shape) if w.ndim == 4 else v  # (a grid: (ni, nj, r, c))
        return True
    return call


def _store_pending(m: Machine, dst: GlobalTensor, src: Tile, w: np.ndarray) -> bool:
    """src's deferred result computed straight into GM window ``w`` (src's whole tile, of
    dst's type; w a window of its own per lane: the caller has seen no two lanes' windows
    overlap, _lanes_overlap); src then reads it in place."""
    if not (m.lanes == 1 or w.ndim == 3):
        return False
    m.gm_writes += 1
    lazy.gm_barrier(m, dst.flat)
    p = src.take_pending()
    if p is None:
        return False
    lazy.compute(m, src, p, w)
    src.set_lazy(w, m, off_chip=True)
    return True


#: PTOAS attributes of pto.tstore (and of its fp form, TSTORE_FP)
_TSTORE_ATTRS = {
    "stPhase": Attr(only=None, why="the phase of a split store synchronises the fix pipe "
                                   "with the cube; the functional model runs in order"),
    "atomicType": Attr("atomicType"), "reluPreMode": Attr("reluPreMode"),
    "layout": LAYOUT_HINT}


@instr("TSTORE", family="memory", pipe=Pipe.MTE3, batched=True,
       pipe_of=PipeForms("src", {"Vec": Pipe.MTE3, "Mat": Pipe.MTE3, "Acc": Pipe.FIX},
                         why="pto-isa's TSTORE_VEC, TSTORE_MAT, TSTORE_ACC."),
       ptoas=Ptoas(attrs={**_TSTORE_ATTRS, "stPhase": Attr("Phase")},
                   # ``pto.tstore ins(%acc fp %fp : ...) outs(%view ...)``: TSTORE_FP
                   keywords={"fp": ("TSTORE_FP", Form(inputs=("src", "fp")))}),
       operands=(Opnd("dst", "gm", "out"), Opnd("src", "tile"),
                 Opnd("preQuantScalar", "scalar", optional=True)),
       params=(Param("atomicType", AtomicType.AtomicNone, AtomicType),
               Param("reluPreMode", ReluPreMode.NoRelu, ReluPreMode),
               Param("Phase", STPhase.Unspecified, STPhase)),
       dtype_key=("src",),
       static=(locs(["src"], TileType.Vec, TileType.Mat, TileType.Acc),
               _conv_or(_gm_layouts(Layout.ND, Layout.DN, Layout.NZ, Layout.NC1HWC0,
                                    Layout.NDC1HWC0)),
               _gm_dtype_matches("src", "dst"), _acc_store_rule),
       runtime=(_tstore_runtime, _acc_valid_col_runtime), fast=_tstore_fast,
       plan=_tstore_plan)
def TSTORE(m: Machine, dst: GlobalTensor, src: Tile, preQuantScalar: Any = None, *,  # noqa: N802,N803
           atomicType: AtomicType, reluPreMode: ReluPreMode,
           Phase: STPhase = STPhase.Unspecified) -> None:  # noqa: N803
    """Copy src's valid region to the GM view. Acc sources convert to the GM element type
    through the fix-pipe (optionally with a scalar quant word ``preQuantScalar`` and ReLU);
    ``atomicType=AtomicAdd`` adds into GM instead of overwriting. A ConvTile src stores its
    elements in order to the view (convolution layouts, no conversion). ``Phase=Final``
    (``TSTORE<STPhase::Final>`` of an Acc tile) is the unit-flag store: the fix pipe waits for
    the matmul that ended the accumulation with ``Phase=Final`` on those Acc bytes (in place
    of an M -> FIX flag) and releases them to the next unit-flag matmul (in place of FIX -> M);
    the sanitizer and the cycle model order by it (:mod:`ptoisa.concurrent.unitflag`)."""
    _tstore(m, dst, src, preQuantScalar, atomicType=atomicType, reluPreMode=reluPreMode)


def _tstore(m: Machine, dst: GlobalTensor, src: Tile, preQuantScalar: Any = None, *,  # noqa: N803
            atomicType: AtomicType, reluPreMode: ReluPreMode) -> None:
    """TSTORE's semantics (its entry's and its fast form's)."""
    if isinstance(src, ConvTile):
        m.gm_writes += 1
        lazy.gm_barrier(m, dst.flat)
        conv.store(dst, src)
        return
    vr, vc = src.valid_shape
    if not (vr and vc):
        return
    relu = reluPreMode is ReluPreMode.NormalRelu
    if src._pending is not None and preQuantScalar is None and not relu \
            and src.dtype is dst.dtype and atomicType is AtomicType.AtomicNone \
            and (vr, vc) == src.shape:
        w = dst.window(vr, vc)
        # compute the deferred result straight into GM; the tile then reads it in place
        if w is not None and not _lanes_overlap(w) and _store_pending(m, dst, src, w):
            return
    vals = np.asarray(src.read())
    if preQuantScalar is not None or src.dtype is not dst.dtype or relu:
        mode = quant_mode(m.target, src.dtype, dst.dtype, scalar=True)
        if preQuantScalar is not None and mode is not None:
            words = np.full((1, vc), int(preQuantScalar) & 0xFFFFFFFFFFFFFFFF, np.uint64)
            vals = quantize(vals, words, mode, dst.dtype, vector=False, relu=relu)
        else:
            if relu:
                vals = np.maximum(vals, np.zeros((), vals.dtype))
            vals = convert(vals, dst.dtype)
    _store(m, dst, vals, atomicType)


# ---- TSTORE_FP ---------------------------------------------------------------------------------

def _tstore_fp_runtime(ins: Instr, dst: GlobalTensor, src: Tile, fp: Tile, **params: Any) -> None:
    _tstore_runtime(ins, dst, src)
    _acc_valid_col_runtime(ins, dst, src)
    if quant_mode(current().target, src.dtype, dst.dtype) is not None \
            and fp.valid_col < src.valid_col:
        raise RuntimeCheckError(
            f"fp holds {fp.valid_col} quant words (valid cols) but src has {src.valid_col} "
            "valid columns (one word per output column)", op=ins.mnemonic)


def _fp_dst_layout_rule(sig: Sig) -> None:
    """The NPUs store through the fix-pipe to ND or NZ only (seed page; DN is not handled by
    the NPU code); the CPU simulator also takes DN, NC1HWC0 and NDC1HWC0."""
    if sig.target.traits.npu_static_checks:
        _gm_layouts(Layout.ND, Layout.NZ)(sig)
    else:
        _gm_layouts(Layout.ND, Layout.NZ, Layout.DN, Layout.NC1HWC0, Layout.NDC1HWC0)(sig)


@instr("TSTORE_FP", family="memory", pipe=Pipe.FIX, ptoas=Ptoas(attrs=_TSTORE_ATTRS),
       operands=(Opnd("dst", "gm", "out"), Opnd("src", "tile"), Opnd("fp", "tile")),
       params=(Param("atomicType", AtomicType.AtomicNone, AtomicType),
               Param("reluPreMode", ReluPreMode.NoRelu, ReluPreMode)),
       dtype_key=("src", "dst"),
       static=(_fp_dst_layout_rule, _acc_store_rule),
       runtime=(_tstore_fp_runtime,))
def TSTORE_FP(m: Machine, dst: GlobalTensor, src: Tile, fp: Tile, *,  # noqa: N802
              atomicType: AtomicType, reluPreMode: ReluPreMode) -> None:
    """Store an accumulator tile to GM, converting each element through the fix-pipe with the
    quant word of its *output column* taken from row 0 of the Scaling tile ``fp`` (64-bit words:
    scale, offset, sign; an f32 / f16 tile, as PTOAS programs write, is read as the target's
    fp_tile_words says: its bytes as the words on the NPUs, cast to words on cpu).
    Pairs without a quant mode are a plain conversion (fp unused)."""
    vr, vc = src.valid_shape
    if not (vr and vc):
        return
    mode = quant_mode(m.target, src.dtype, dst.dtype)
    vals = np.asarray(src.read())
    relu = reluPreMode is ReluPreMode.NormalRelu
    if mode is None:
        out = quantize(vals, np.zeros((1, vc), np.uint64), None, dst.dtype, vector=True,
                       relu=relu)
    else:
        out = quantize(vals, fp_words(fp, vc, raw=m.target.traits.fp_tile_words == "raw"),
                       mode, dst.dtype, vector=True, relu=relu)
    _store(m, dst, out, atomicType)

"""Cube (matrix) instructions: TMATMUL / TGEMV (+ _ACC, _BIAS, _MX) and the HF32/TF32 modes.

Data path: Mat -> (TMOV/TEXTRACT) -> Left (A) / Right (B) -> cube -> Acc (C). With
``M = a.valid_row``, ``K = a.valid_col``, ``N = b.valid_col``:
``C[i, j] = sum_k A[i, k] * B[k, j]`` for ``i < M, j < N``; the rest of C is untouched.

Numerics: products of f16/bf16/fp8/fp4 inputs and of decoded HiF8 codes are exact in f32 and, as
the ISA specifies, accumulation is in the accumulator's type: f32 (i32 for i8 inputs, exact:
|sum| < 2^31 for K <= 4095; integer results wrap to i32 where an accumulator input is added).
The ISA leaves the order of the f32 sum open. By default it runs as f32 BLAS (its order is the
BLAS's), except for the instructions a target lists in ``traits.mad_sequential`` (on cpu
TMATMUL_BIAS, the TGEMV and the MX forms), which follow the CPU simulator's loop: an f32 sum
from 0 with one fused multiply-add per k, then C_in / bias added in f32 (MX: each f64 scaled
product added to the f32 sum). ``set_matmul_accumulation("sequential")`` runs every form so, on
every target; ``"exact"`` forms the sum in f64 and rounds it to f32 at the end. f32 inputs are
used as they are unless a HF32 / TF32 mode is set (SETHF32MODE / SETTF32MODE): then the inputs
are first rounded to 11 (HF32) or 10 (TF32) mantissa bits.

MX (microscaling): A and B are fp8 / packed fp4 values with one E8M0 scale per 32 consecutive
``k``: ``A'[i, k] = A[i, k] * 2^(sa[i, k // 32] - 127)``, ``B'[k, j] = B[k, j] * 2^(sb[k // 32, j]
- 127)`` (ScaleLeft ``M x ceil(K/32)``, ScaleRight ``ceil(K/32) x N``); C is f32.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

import numpy as np

from ... import dtypes as D
from ... import lazy
from ...enums import AccPhase, BLayout, Pipe, RoundMode, SLayout, TileType
from ...errors import NotExecutedYet, RuntimeCheckError
from ...memory import MATMUL_ACCUMULATIONS, Machine, current
from ...ptoas_source import SourceRule, source_rule
from ...tile import FRACTAL_MX, Tile, TileSpec, tile_spec
from ..registry import Instr, Opnd, Param, Sig, by_signature, elem_type, instr
from ..spelling import Attr, Form, Ptoas

if TYPE_CHECKING:
    from ...targets import Target

MAX_MKN = 4095
MX_GROUP = 32

#: how TMATMUL / TGEMV form a float accumulation (see :func:`set_matmul_accumulation`)
ACCUMULATIONS = MATMUL_ACCUMULATIONS


def set_matmul_accumulation(mode: str) -> str:
    """Choose how the float forms of TMATMUL / TGEMV accumulate on the current machine, and on
    the machines made while it is current (``pto.target``, ``pto.launch``, ``.pto`` runs);
    returns its previous mode. Integer accumulation is always exact. A launch or machine takes
    it as a setting too: ``pto.launch(..., matmul_accumulation="exact")``,
    ``pto.target("a2a3", matmul_accumulation="exact")``, ``Program.run(...,
    matmul_accumulation=...)``, ``ptoisa run --matmul-accumulation``.

    * ``"f32"`` (default): in f32, as the ISA specifies for the cube ("accumulation uses the
      accumulator tile's native datatype"): products are exact, the running sum is rounded to
      f32 in the order of the host's f32 BLAS, and the accumulator input / bias is then added in
      f32. As fast as numpy's own matmul; the last bit may differ between BLAS builds. The
      instructions in the target's ``traits.mad_sequential`` (on cpu: TMATMUL_BIAS, TGEMV,
      TGEMV_ACC, TGEMV_BIAS, TMATMUL_MX, TGEMV_MX) sum as ``"sequential"`` does; the other MX
      forms as ``"exact"``.
    * ``"sequential"``: the upstream CPU simulator's loop for every form: an f32 sum from 0,
      one fused multiply-add (a single rounding) per k, then the accumulator input / bias added
      in f32; the MX forms add each f64 scaled product to the f32 sum in f64 and round to f32.
      Bit for bit the simulator's; a numpy loop over k (a 128x128x128 TMATMUL takes ~7 ms
      where BLAS takes 0.1 ms).
    * ``"exact"``: the k-sum of exact products is formed in f64 and rounded to f32 (together
      with the accumulator input) at the end: order-independent, reproducible on any machine,
      about 2x slower.
    """
    if mode not in ACCUMULATIONS:
        raise ValueError(f"matmul accumulation must be one of {', '.join(ACCUMULATIONS)}, "
                         f"got {mode!r}")
    m = current()
    prev = m.matmul_accumulation
    m.matmul_accumulation = mode
    return prev

# ---- operand roles (the C++ overloads share a name) -------------------------------------------

_PLAIN = ("c", "a", "b")
_ACC = ("c", "cin", "a", "b")
_BIAS = ("c", "a", "b", "bias")


def _loc(x: Any) -> TileType | None:
    return x.loc if isinstance(x, (Tile, TileSpec)) else None


def roles(kind: str, ops: list[Any]) -> dict[str, Any]:
    """Map positional operands (tiles or tile types) to roles c, cin, a, b, bias, sa, sb.

    ``acc``: (cOut, cIn, a, b) or the in-place (c, a, b). ``mx``: (c, a, sa, b, sb[, bias]) or
    (cOut, cIn, a, sa, b, sb), told apart by the role of the second operand (Acc = cIn)."""
    if kind == "plain":
        return dict(zip(_PLAIN, ops, strict=False))
    if kind == "bias":
        return dict(zip(_BIAS, ops, strict=False))
    if kind == "acc":
        if len(ops) < 4 or ops[3] is None:
            return {"c": ops[0], "cin": ops[0], "a": ops[1], "b": ops[2]}
        return dict(zip(_ACC, ops, strict=False))
    # mx
    if len(ops) == 6 and _loc(ops[1]) is TileType.Acc:
        return dict(zip(("c", "cin", "a", "sa", "b", "sb"), ops, strict=False))
    return dict(zip(("c", "a", "sa", "b", "sb", "bias"), ops, strict=False))


_ROLE_NAMES = {"c": "cMatrix", "cin": "cInMatrix", "a": "aMatrix", "b": "bMatrix",
               "bias": "biasData", "sa": "aScaleMatrix", "sb": "bScaleMatrix"}
_ROLE_LOC = {"c": TileType.Acc, "cin": TileType.Acc, "a": TileType.Left, "b": TileType.Right,
             "bias": TileType.Bias, "sa": TileType.ScaleLeft, "sb": TileType.ScaleRight}


def _sig_roles(sig: Sig, kind: str) -> dict[str, Any]:
    return {k: v for k, v in roles(kind, [sig[o.name] for o in sig.ins.operands]).items()
            if v is not None}


# ---- static rules ----------------------------------------------------------------------------

def _layout_ok(role: str, t: TileSpec, target: Target) -> str | None:
    """None if tile type ``t`` has the fractal layout the cube needs for ``role``."""
    if role == "a":
        if t.slayout is not SLayout.RowMajor:
            return "a Left tile with row-major boxes (NZ or ZZ)"
        left = BLayout(target.traits.left_blayout)
        if target.traits.left_blayout_fixed and t.blayout is not left:
            box = "ZZ" if left is BLayout.RowMajor else "NZ"
            major = "RowMajor" if left is BLayout.RowMajor else "ColMajor"
            return f"{box} (TileLeft on {target}: {major} + RowMajor boxes)"
    elif role == "b":
        if t.layout_name != "ZN":
            return "ZN (TileRight: RowMajor + ColMajor boxes)"
    elif role in ("c", "cin"):
        if t.layout_name != "NZ":
            return "NZ (TileAcc: ColMajor + RowMajor boxes)"
    elif role == "sa":
        if t.layout_name != "ZZ" or t.fractal != FRACTAL_MX:
            return "ZZ with 32-byte boxes (TileLeftScale)"
    elif role == "sb":
        if t.layout_name != "NN" or t.fractal != FRACTAL_MX:
            return "NN with 32-byte boxes (TileRightScale)"
    elif role == "bias" and t.rows != 1:
        return "a single row"
    return None


# PTOAS's verifiers of pto.tmatmul / .acc / .bias and pto.tgemv / .acc / .bias (TMatmulOp,
# TMatmulAccOp, TMatmulBiasOp, TGemvOp, TGemvAccOp, TGemvBiasOp ::verify, on a2a3 and a5 alike:
# the A5 checks call the A2A3 ones first) refuse an operand in the wrong address space; no lit
# test shows it, the source does (ptoas_source.py). Its check of dst / acc_in comes first.
_PTOAS_ACC = source_rule("lib/PTO/IR/PTO.cpp:verifyAccTileCommonA2A3",
                         "expects {} to be in the acc address space")
_PTOAS_MAT = source_rule("lib/PTO/IR/PTO.cpp:verifyMatTileOperandsA2A3",
                         "expects lhs, rhs, and dst to use the left, right, and acc address spaces")
_PTOAS_GEMV = source_rule("lib/PTO/IR/PTO.cpp:verifyGemvTileOperandsA2A3",
                          "expects lhs and rhs to use the left and right address spaces")
_PTOAS_BIAS = source_rule("lib/PTO/IR/PTO.cpp:verifyMatBiasTileA2A3",
                          "expects bias to be in the bias address space")


def _ptoas_loc_rule(kind: str, gemv: bool, role: str) -> tuple[SourceRule | bool, tuple[str, ...]]:
    """PTOAS's rule refusing a ``role`` operand outside its address space (False: none cited;
    the MX forms' verifiers are not)."""
    if kind == "mx":
        return False, ()
    if role in ("c", "cin"):
        return _PTOAS_ACC, ("dst" if role == "c" else "acc_in",)
    if role in ("a", "b"):
        return (_PTOAS_GEMV if gemv else _PTOAS_MAT), ()
    return (_PTOAS_BIAS if role == "bias" else False), ()


def _matmul_rule(kind: str, gemv: bool) -> Any:
    def rule(sig: Sig) -> None:
        r = _sig_roles(sig, kind)
        target = sig.target
        tiles = [(role, _ROLE_NAMES[role], t) for role, t in r.items()
                 if isinstance(t, TileSpec)]
        for role, name, t in tiles:  # (every address space first, as PTOAS checks them)
            if t.loc is not _ROLE_LOC[role]:
                said, names = _ptoas_loc_rule(kind, gemv, role)
                raise sig.fail(f"{name} must be a {_ROLE_LOC[role].name} tile, got {t.loc.name}",
                               ptoas=said, names=names)
        for role, name, t in tiles:
            want = _layout_ok(role, t, target)
            if want is not None:
                raise sig.fail(f"{name} must be {want}, got {t.layout_name} {t.rows}x{t.cols}")
        c, a, b = r.get("c"), r.get("a"), r.get("b")
        if not all(isinstance(x, TileSpec) for x in (c, a, b)):
            return
        _check_types(sig, c, a, b)
        cin = r.get("cin")
        if isinstance(cin, TileSpec) and cin.dtype is not c.dtype:
            raise sig.fail(f"cInMatrix element type {cin.dtype} != cMatrix element type "
                           f"{c.dtype}")
        bias = r.get("bias")
        if isinstance(bias, TileSpec):
            want_bias = D.f32 if kind == "mx" else c.dtype
            if bias.dtype is not want_bias:
                raise sig.fail(f"biasData element type must be {want_bias} (the accumulator "
                               f"type), got {bias.dtype}")
        for role in ("sa", "sb"):
            s = r.get(role)
            if isinstance(s, TileSpec) and s.dtype is not D.f8e8m0:
                raise sig.fail(f"{_ROLE_NAMES[role]} must hold f8E8M0 scales, got {s.dtype}")
        if target.traits.cube_static_shapes_chain and \
                (a.rows != c.rows or a.cols != b.rows or b.cols != c.cols):
            raise sig.fail(
                f"static shapes must chain on {target}: Left {a.rows}x{a.cols}, Right "
                f"{b.rows}x{b.cols}, Acc {c.rows}x{c.cols} (Left.Rows == Acc.Rows, "
                "Left.Cols == Right.Rows, Right.Cols == Acc.Cols)")
        if target.traits.npu_static_checks and \
                c.numel * c.dtype.itemsize > target.buffer_size("L0C"):
            raise sig.fail(f"cMatrix {c.rows}x{c.cols} exceeds L0C")
    return rule


def _check_types(sig: Sig, c: TileSpec, a: TileSpec, b: TileSpec) -> None:
    """(C, A, B) element types against the target table (the uniform legality message)."""
    rule = sig.target.legality.get(sig.ins.name)
    if rule is None or rule.dtypes is None:
        return
    got = (c.dtype, a.dtype, b.dtype)
    if got not in rule.dtypes:
        allowed = sorted("(" + ", ".join(d.name for d in p) + ")" for p in rule.dtypes)
        says = f"{rule.extra['says']}: " if "says" in rule.extra else ""  # (PTOAS's words)
        raise sig.fail(f"{says}type combination (cMatrix, aMatrix, bMatrix) = ({c.dtype}, "
                       f"{a.dtype}, {b.dtype}) is not supported on {sig.target} "
                       f"(supported: {', '.join(allowed)})")


# ---- run-time rules --------------------------------------------------------------------------

def _mkn(ins: Instr, r: dict[str, Tile], gemv: bool) -> tuple[int, int, int]:
    a, b, c = r["a"], r["b"], r["c"]
    m, k, n = a._vr, a._vc, b._vc
    op = ins.mnemonic
    if not (1 <= m <= MAX_MKN and 1 <= k <= MAX_MKN and 1 <= n <= MAX_MKN):
        for what, v in (("m (aMatrix valid rows)", m), ("k (aMatrix valid cols)", k),
                        ("n (bMatrix valid cols)", n)):
            if not 1 <= v <= MAX_MKN:
                raise RuntimeCheckError(f"{what} = {v} is outside [1, {MAX_MKN}]", op=op)
    if gemv and m != 1:
        raise RuntimeCheckError(f"a GEMV has one row: aMatrix valid rows must be 1, got {m}",
                                op=op)
    if b._vr != k:
        raise RuntimeCheckError(
            f"k mismatch: aMatrix valid cols {k} != bMatrix valid rows {b.valid_row}", op=op)
    if c._vr < m or c._vc < n:
        raise RuntimeCheckError(
            f"cMatrix valid region {c.valid_row}x{c.valid_col} must cover m x n = {m}x{n}",
            op=op)
    if len(r) == 3 and not a.spec.dtype.packed:
        return m, k, n  # (c, a, b: none of the checks below applies)
    bias = r.get("bias")
    if bias is not None and bias.cols < n:
        raise RuntimeCheckError(f"biasData has {bias.cols} columns, n = {n}", op=op)
    cin = r.get("cin")
    if cin is not None and (cin.rows < m or cin.cols < n):
        raise RuntimeCheckError(f"cInMatrix {cin.rows}x{cin.cols} is smaller than m x n = "
                                f"{m}x{n}", op=op)
    groups = -(-k // MX_GROUP)
    sa, sb = r.get("sa"), r.get("sb")
    # (PTOAS: the scale tiles are [M, ceil(K/32)] and [ceil(K/32), N], whatever their type)
    if sa is not None and (sa.rows < m or sa.cols < groups):
        raise RuntimeCheckError(
            f"aScaleMatrix {sa.rows}x{sa.cols} cannot hold m x ceil(k/32) = {m}x{groups} "
            "scales", op=op)
    if sb is not None and (sb.rows < groups or sb.cols < n):
        raise RuntimeCheckError(
            f"bScaleMatrix {sb.rows}x{sb.cols} cannot hold ceil(k/32) x n = {groups}x{n} "
            "scales", op=op)
    for s in (sa, sb):
        if s is not None and s.spec.is_boxed and s.dtype.np.itemsize == 1:
            ir, ic = s.spec.inner
            # a tile smaller than one box holds a clipped box (TileSpec.offsets); a tile larger
            # than a box must hold whole boxes
            if (s.rows > ir and s.rows % ir) or (s.cols > ic and s.cols % ic):
                raise RuntimeCheckError(
                    f"scale tile {s.rows}x{s.cols} is not a whole number of {ir}x{ic} boxes: its "
                    "boxes would reach beyond the tile's storage (not supported)", op=op)
    if a.dtype.packed and k % 2:
        raise RuntimeCheckError(f"k must be even for packed fp4 operands, got {k}", op=op)
    return m, k, n


def _runtime(kind: str, gemv: bool) -> Any:
    @by_signature  # (the tiles' types and valid extents alone)
    def rule(ins: Instr, *vals: Any, **params: Any) -> None:
        _mkn(ins, roles(kind, list(vals)), gemv)
    return rule


# ---- semantics -------------------------------------------------------------------------------

_MODES_ATTR = "_ptoisa_mad_modes"


def mad_modes(m: Machine) -> dict[str, tuple[bool, RoundMode]]:
    """The HF32/TF32 transform modes recorded on machine ``m`` by SETHF32MODE / SETTF32MODE."""
    modes = getattr(m, _MODES_ATTR, None)
    if modes is None:
        modes = {"hf32": (False, RoundMode.CAST_ROUND), "tf32": (False, RoundMode.CAST_ROUND)}
        setattr(m, _MODES_ATTR, modes)
    return modes


def round_mantissa(x: np.ndarray, bits: int, mode: RoundMode) -> np.ndarray:
    """Round f32 values to ``bits`` mantissa bits (CAST_RINT: ties to even; otherwise ties away
    from zero, CAST_ROUND); inf/NaN pass through."""
    u = np.ascontiguousarray(x, np.float32).view(np.uint32).astype(np.uint64)
    drop = 23 - bits
    half = np.uint64(1 << (drop - 1))
    if mode is RoundMode.CAST_RINT:
        u2 = u + half - np.uint64(1) + ((u >> np.uint64(drop)) & np.uint64(1))
    else:
        u2 = u + half
    u2 &= ~np.uint64((1 << drop) - 1)
    special = (u & np.uint64(0x7F800000)) == np.uint64(0x7F800000)
    out = np.where(special, u, u2).astype(np.uint32)
    return out.view(np.float32)


def _f32_input_transform(m: Machine, v: np.ndarray) -> np.ndarray:
    modes = mad_modes(m)
    hf_on, hf_mode = modes["hf32"]
    tf_on, tf_mode = modes["tf32"]
    modes_on = m.target.traits.mad_f32_modes
    if tf_on and "tf32" in modes_on:
        return round_mantissa(v, 10, tf_mode)
    if hf_on and "hf32" in modes_on:
        return round_mantissa(v, 11, hf_mode)
    return v


def _convert(m: Machine, t: Tile, v: np.ndarray, ct: type) -> np.ndarray:
    """Input values as ``ct`` (exact: every input type is a subset of f32), C-ordered so a
    block gives the same BLAS call whether it runs alone or in a lockstep batch."""
    dt = t.spec.dtype
    if dt.packed:
        return D.fp4_decode(v, dt).astype(ct, order="C")
    if dt.coded:  # HiF8 codes: their values (at most 4 significant bits: exact in f32)
        return D.decode(v, dt).astype(ct, order="C")
    if dt is D.f32:
        v = _f32_input_transform(m, v)
    v = np.asarray(v)
    if ct is np.float32 and v.dtype in _SLOW_CASTS:
        return _cast(v)
    return v.astype(ct, order="C", copy=False)


#: element types whose cast to f32 is slow (numpy's f16 cast is not vectorised in common
#: builds, nor are ml_dtypes' fp8 casts: 1.7-3 ns an element, where bf16's runs at 0.1)
_SLOW_CASTS = {np.dtype(np.float16): np.dtype(np.uint16), D.f8e4m3.np: np.dtype(np.uint8),
               D.f8e5m2.np: np.dtype(np.uint8)}
#: panels up to this many elements convert by table (larger ones: the cast streams better)
_TABLE_MAX = 1 << 18
_TABLES: dict[np.dtype, np.ndarray] = {}


def _cast(v: np.ndarray) -> np.ndarray:
    """``v.astype(float32)`` for a slow-cast type: small panels look the cast's own result
    for every bit pattern up in a table (the same values, 2-3x faster)."""
    if v.size > _TABLE_MAX:
        return v.astype(np.float32, order="C")
    table = _TABLES.get(v.dtype)
    if table is None:
        bits = _SLOW_CASTS[v.dtype]
        codes = np.arange(1 << (8 * bits.itemsize), dtype=np.uint32).astype(bits)
        table = _TABLES[v.dtype] = codes.view(v.dtype).astype(np.float32)
    return table.take(v.view(_SLOW_CASTS[v.dtype]))


def _held(t: Tile, rows: int, cols: int) -> tuple[np.ndarray, np.ndarray | None]:
    """Logical block of an input tile in its own type (:func:`_convert` makes it the
    computation type), plus ``inv`` when the lanes of a lockstep launch share blocks (lane
    ``l`` then uses ``values[inv[l]]``): the GEMM blocks of one row read the same A panel, so
    each distinct panel is converted once."""
    lanes = t.shared_lanes()
    if lanes is not None:
        blocks, inv = lanes.unique()
        return blocks[..., :rows, :cols], inv
    return np.asarray(t.read(rows, cols)), None


#: lanes whose converted A and B panels take more than _LANE_CHUNK_MIN bytes in all are
#: converted and multiplied _LANE_CHUNK_BYTES of panels at a time (:func:`_ksum`): below it
#: they stay in cache anyway (8 lanes of 16x512 @ 512x64, 1.2 MB: no gain; 32 lanes, 4.5 MB:
#: none; 99 lanes of 16x256 @ 256x128, 14 MB: 5.2 -> 3.8 ms)
_LANE_CHUNK_BYTES = 1 << 19
_LANE_CHUNK_MIN = 8 << 20


def _chunked_product(m: Machine, a: Tile, b: Tile, av: np.ndarray, bv: np.ndarray, ct: type
                     ) -> np.ndarray | None:
    """Per lane ``A @ B`` of the lanes' own panels ``av`` / ``bv`` (:func:`_held`; no lane
    shares them), converted and multiplied a chunk of lanes at a time when they need a
    conversion and their converted panels are many (Qwen3 incore_15: 99 x 147 KB): the chunk's
    panels then stay in cache between the conversion and the product, where all of them at
    once are written out to memory and read back. Every lane's product is the same BLAS call
    either way (:func:`_product` on its own A and B, C-ordered), each element the same
    conversion: the same bits. None: not chunked."""
    lanes = len(av) if av.ndim == 3 else 0
    per = (av.shape[-2] * av.shape[-1] + bv.shape[-2] * bv.shape[-1]) * np.dtype(ct).itemsize
    step = max(1, _LANE_CHUNK_BYTES // per)
    if bv.ndim != 3 or len(bv) != lanes or lanes * per <= _LANE_CHUNK_MIN \
            or (av.dtype == ct and bv.dtype == ct):
        return None
    out = np.empty((lanes, av.shape[-2], bv.shape[-1]), ct)
    for i in range(0, lanes, step):
        out[i:i + step] = _product(_convert(m, a, av[i:i + step], ct), None,
                                   _convert(m, b, bv[i:i + step], ct), None)
    return out


def _product(av: np.ndarray, ia: np.ndarray | None, bv: np.ndarray, ib: np.ndarray | None
             ) -> np.ndarray:
    """Per lane ``A @ B``. Shared operand blocks (``ia`` / ``ib``, see :func:`_operand`) that
    pair up as a grid (lane = i * nb + j, or j * na + i) are multiplied by broadcasting, without
    gathering a copy per lane; every lane's product is the same BLAS call either way."""
    if ia is not None and ib is not None and len(av) * len(bv) == len(ia):
        lanes = len(ia)
        shape = (lanes, av.shape[-2], bv.shape[-1])
        grid = _grid_of(ia, ib, len(av), len(bv))
        if grid == "ij":
            return np.matmul(av[:, None], bv[None, :]).reshape(shape)
        if grid == "ji":
            return np.matmul(av[None, :], bv[:, None]).reshape(shape)
    one_b = bv if ib is None and bv.ndim == 2 else \
        bv[0] if ib is not None and len(bv) == 1 and bv.ndim == 3 else None
    if ia is None and one_b is not None and av.ndim == 3 and av.flags.c_contiguous \
            and av.dtype == one_b.dtype and _stacking_keeps_bits(av.shape, one_b.shape, av.dtype):
        # every lane multiplies by the same B (attention's K and V blocks): one product of the
        # lanes' A rows stacked, which BLAS runs on all cores
        lanes, mm, k = av.shape
        return (av.reshape(lanes * mm, k) @ one_b).reshape(lanes, mm, one_b.shape[-1])
    if ia is not None:
        av = av[ia]
    if ib is not None:
        bv = bv[ib]
    return av @ bv


#: (id(ia), id(ib), na, nb) -> (ia, ib, their grid): read-only lane maps (LaneBlocks.unique's, one
#: object per lane pattern) asked again for every product of a K-loop and every replay
_GRIDS: dict[tuple[int, int, int, int], tuple[np.ndarray, np.ndarray, str | None]] = {}


def _grid_of(ia: np.ndarray, ib: np.ndarray, na: int, nb: int) -> str | None:
    """How lanes pair ``na`` A blocks with ``nb`` B blocks (``ia`` / ``ib``: each lane's
    block): "ij" (lane = i * nb + j), "ji" (lane = j * na + i) or None (neither)."""
    key = (id(ia), id(ib), na, nb)
    hit = _GRIDS.get(key)
    if hit is not None and hit[0] is ia and hit[1] is ib:
        return hit[2]
    order = np.arange(len(ia))
    grid = "ij" if np.array_equal(ia * nb + ib, order) else \
        "ji" if np.array_equal(ib * na + ia, order) else None
    if not (ia.flags.writeable or ib.flags.writeable):  # (their values cannot change)
        if len(_GRIDS) >= 256:
            _GRIDS.clear()
        _GRIDS[key] = (ia, ib, grid)
    return grid


_STACKING: dict[tuple[Any, ...], bool] = {}


def _stacking_keeps_bits(ashape: tuple[int, ...], bshape: tuple[int, ...], dt: Any) -> bool:
    """Does this machine's BLAS give every lane of ``A_l @ B`` (``ashape`` = (lanes, m, k)) the
    same bits as one product of the stacked A rows? (Each element is the same k-sum; whether
    the BLAS kernel forms it in the same order for a taller A is its business.) Asked once per
    shape per process, on random values: lockstep must equal block by block."""
    key = (ashape, bshape, np.dtype(dt).str)
    ok = _STACKING.get(key)
    if ok is None:
        rng = np.random.default_rng(0)
        a = rng.standard_normal(ashape).astype(dt)
        b = rng.standard_normal(bshape[-2:]).astype(dt)
        lanes, mm, k = ashape
        per_lane = np.stack([a[i] @ b for i in range(lanes)])
        stacked = (a.reshape(lanes * mm, k) @ b).reshape(per_lane.shape)
        ok = _STACKING[key] = per_lane.tobytes() == stacked.tobytes()
    return ok


def mx_scale_spec(left: bool, rows: int, cols: int) -> TileSpec:
    """The MX scale tile of ``rows x cols`` E8M0 codes (one byte per 32 k, 32-byte boxes):
    left = M x groups in ZZ order (16 x 2 boxes, row-major), right = groups x N in NN order
    (2 x 16 boxes, column-major), padded to whole boxes."""
    up = lambda v, to: -(-v // to) * to  # noqa: E731
    if left:
        return tile_spec(TileType.ScaleLeft, D.f8e8m0, up(rows, 16), up(cols, 2),
                         BLayout.RowMajor, slayout=SLayout.RowMajor, fractal=FRACTAL_MX,
                         check_alignment=False)
    return tile_spec(TileType.ScaleRight, D.f8e8m0, up(rows, 2), up(cols, 16),
                     BLayout.ColMajor, slayout=SLayout.ColMajor, fractal=FRACTAL_MX,
                     check_alignment=False)


def _scale_tile(m: Machine, op: str, r: dict[str, Any], role: str, rows: int, cols: int
                ) -> Tile:
    """The tile the cube reads ``role``'s (sa / sb) E8M0 codes from. A one-byte scale tile is
    read as it is. A wider one (f16: the element type PTOAS's a5 TileLib templates declare for
    the scale operands of tmatmul.mx / tgemv.mx) holds no codes the cube reads: those
    templates drop the scale operands and emit ``pto.mad_mx`` on the data tiles alone, as
    pto-isa's a5 TMATMUL_MX_IMPL calls ``mad_mx(c, a, b, ...)``, so the hardware reads the
    scale buffer (L0A_MX / L0B_MX) at the data tile's address >> 4 (TGET_SCALE_ADDR's rule),
    where ``mte_l1_l0a_mx`` / ``mte_l1_l0b_mx`` or a TMOV to that address left them (trait
    ``mx_wide_scales_at_data_addr``; cpu has no scale buffers: refused by name)."""
    s = r[role]
    if s.dtype.np.itemsize == 1:
        return s
    name = "aScaleMatrix" if role == "sa" else "bScaleMatrix"
    data = r["a"] if role == "sa" else r["b"]
    if not m.target.traits.mx_wide_scales_at_data_addr:
        raise RuntimeCheckError(
            f"{name} has element type {s.dtype.name}: the MX scales are 8-bit E8M0 codes "
            f"(f8E8M0, ui8, i8), and {m.target} has no scale buffer at the data tile's "
            "address to read them from instead", op=op)
    if data.addr is None:
        # (PTOAS's memory planning places such a tile; ptoisa does not model the address it
        # would get, so the scale bytes there cannot be found: refused by name)
        raise NotExecutedYet(
            f"{name} has element type {s.dtype.name}: its codes are read from the scale buffer "
            "at the data tile's address, and that tile has no address (the one PTOAS's memory "
            "planning would give it is not modelled)", op=op)
    from ..layout.rearrange import SHIFT_MX_ADDR

    t = Tile.of(mx_scale_spec(role == "sa", rows, cols), (rows, cols))
    m.assign(t, data.addr >> SHIFT_MX_ADDR)
    return t


def _scales(t: Tile, rows: int, cols: int) -> np.ndarray:
    """E8M0 scale codes -> 2^(e - 127) (code 255 is NaN)."""
    e = np.asarray(t.read(rows, cols)).view(np.uint8).astype(np.float64)
    return np.where(e == 255, np.nan, np.exp2(e - 127.0))


def _finish(r: dict[str, Any], c: Tile, acc: np.ndarray, ct: type, mm: int, n: int
            ) -> np.ndarray:
    """``acc`` (the k-sum, of type ``ct``) plus bias and cIn added in ``ct``, in c's type."""
    bias = r.get("bias")
    if bias is not None:
        np.add(acc, np.asarray(bias.read(1, n)).astype(ct), out=acc)
    cin = r.get("cin")
    return _plus_cin(c, acc, None if cin is None else np.asarray(cin.read(mm, n)), ct)


def _plus_cin(c: Tile, acc: np.ndarray, cin: np.ndarray | None, ct: type) -> np.ndarray:
    """``acc`` (the k-sum, of type ``ct``, bias added) plus the accumulator input's values
    ``cin`` (or none), in c's type: how every form adds C_in."""
    if c.dtype.is_int:
        out = np.rint(acc).astype(np.int64)
        if cin is not None:
            out = out + cin.astype(np.int64)
        return out.astype(c.dtype.np)  # wraps modulo 2^32 like the i32 accumulator
    if cin is not None:
        np.add(acc, cin.astype(ct, copy=False), out=acc)
    if acc.dtype == c.dtype.np:
        return acc
    return acc.astype(np.float32, copy=False).astype(c.dtype.np, copy=False)


def _fma_f32(p: np.ndarray, acc: np.ndarray) -> np.ndarray:
    """The f32 fused multiply-add ``round_f32(p + acc)`` of exact products ``p`` (f64: a
    product of two f32 values has at most 48 significant bits, exact in f64) and f32 ``acc``.

    ``p + acc`` in f64 can round, and rounding again to f32 can then land on the wrong side of
    an f32 tie. So the f64 sum is made *round-to-odd*: TwoSum gives its exact error ``e``
    (``p + acc == s + e``, exact since nothing here overflows f64), and where ``e != 0`` and
    ``s`` is even ``s`` moves one f64 ulp towards ``e``. Rounding a round-to-odd value with
    53 >= 24 + 2 bits to f32 is the correctly rounded result (Boldo & Melquiond, "Emulation of
    FMA and correctly rounded sums: proved algorithms using rounding to odd", 2008)."""
    s = p + acc
    z = s - p
    e = (p - (s - z)) + (acc - z)
    inexact = np.abs(e) > 0  # (NaN where s is not finite: left as it is)
    if inexact.any():
        fix = inexact & ((s.view(np.uint64) & np.uint64(1)) == 0)
        s[fix] = np.nextafter(s[fix], np.copysign(np.inf, e[fix]))
    return s.astype(np.float32)


#: elements of the block of products one pass of :func:`_sequential` forms at once (it stays
#: in cache, and its temporaries below the size numpy gets fresh pages for: larger is slower)
_SEQ_BLOCK = 1 << 14
_U64_TOP = np.uint64(1 << 63)
#: 2 * |x| of the f64 bits of the smallest normal f32, 2^-126 (exponent field 1023 - 126)
_F32_TINY_TWICE = np.uint64(897 << 53)


def _double_rounding(prods: np.ndarray, sums: np.ndarray) -> int:
    """Steps ``sums[t + 1] = round_f32(round_f64(prods[t] + sums[t]))``: the first t whose
    result is not the fused ``round_f32(prods[t] + sums[t])``, else ``len(prods)``.

    Rounding twice goes wrong only where the f64 sum is an f32 tie (the exact sum, within half
    an f64 ulp of it, may lie off the tie; a value that is not a tie keeps its side of every
    tie, which are f64 numbers): f64 bits whose low 29 are ``1 << 28`` in the f32 normal
    range. In the f32 subnormal range every nonzero sum is checked. Only those are recomputed."""
    bits = (prods + sums[:-1]).view(np.uint64)
    twice = bits << np.uint64(1)  # the sign dropped
    cand = ((twice << np.uint64(34)) == _U64_TOP) | ((twice - np.uint64(2)) < _F32_TINY_TWICE)
    if not cand.any():
        return len(prods)
    at = np.flatnonzero(cand)  # flat positions, in step order
    right = _fma_f32(prods.reshape(-1)[at], sums[:-1].reshape(-1)[at])
    wrong = right.view(np.uint32) != sums[1:].reshape(-1)[at].view(np.uint32)
    if not wrong.any():
        return len(prods)
    return int(at[int(wrong.argmax())]) // (prods.size // len(prods))


def _sequential(av: np.ndarray, bv: np.ndarray, fused: bool) -> np.ndarray:
    """The CPU simulator's k-loop (include/pto/cpu/TMatmul.hpp) over f64 operands ``av``
    ``[..., m, k]`` and ``bv`` ``[..., k, n]`` (exact f32 values, or MX values with their scales
    applied): an f32 sum from 0, one step per k, vectorised over m x n. ``fused``: the step is
    ``fma(a, b, sum)`` in f32 (TMatmulNzZn's ``std::fma``); else the f64 product is added to
    the sum in f64 and rounded to f32 (TMatmulMX's ``float += double``).

    A step is one numpy call, the f64 sum rounded to f32. For ``fused`` that is the fma except
    where rounding twice differs from rounding once (:func:`_double_rounding`): each block of
    steps is checked afterwards and runs again from the first step that differs, that step
    computed by :func:`_fma_f32`."""
    k = av.shape[-1]
    acols = np.moveaxis(av, -1, 0)[..., None]        # [k, ..., m, 1]
    brows = np.moveaxis(bv, -2, 0)[..., None, :]     # [k, ..., 1, n]
    shape = np.broadcast_shapes(acols.shape[1:], brows.shape[1:])
    block = max(1, _SEQ_BLOCK // max(1, int(np.prod(shape))))
    acc = np.zeros(shape, np.float32)
    for t0 in range(0, k, block):
        prods = acols[t0:t0 + block] * brows[t0:t0 + block]   # [steps, ..., m, n], exact
        steps = len(prods)
        sums = np.empty((steps + 1, *shape), np.float32)      # sums[t + 1]: after step t
        sums[0] = acc
        i = 0
        while i < steps:
            for t in range(i, steps):
                np.add(prods[t], sums[t], out=sums[t + 1], dtype=np.float64,
                       casting="same_kind")
            if not fused:
                break
            i += _double_rounding(prods[i:], sums[i:])
            if i < steps:
                sums[i + 1] = _fma_f32(prods[i], sums[i])
                i += 1
        acc = sums[-1]
    return acc


def _order(m: Machine, name: str, r: dict[str, Any], c: Tile) -> str:
    """How this instruction forms its float k-sum on machine ``m``: "blas" (f32 BLAS),
    "exact" (f64 sum, one rounding) or "sequential" (the CPU simulator's loop)."""
    if c.spec.dtype.is_int:
        return "exact"
    mode = m.matmul_accumulation
    if mode == "exact":
        return "exact"
    if mode == "sequential" or name in m.target.traits.mad_sequential:
        return "sequential"
    return "exact" if "sa" in r else "blas"


def _ksum(m: Machine, name: str, r: dict[str, Any]) -> tuple[np.ndarray, type]:
    """The k-sum of entry ``name`` on its operands ``r`` (per lane on a lanes machine), before
    bias and C_in are added, and its type (numpy's warnings are the caller's)."""
    a, b, c = r["a"], r["b"], r["c"]
    mm, k, n = a._vr, a._vc, b._vc
    order = _order(m, name, r, c)
    # "blas" runs as f32 BLAS; integer sums and "exact" use f64, where the products of every
    # input type are exact and their sum is rounded once, at the end; "sequential" loops over
    # k on the exact f64 products
    ct: type = np.float32 if order == "blas" else np.float64
    av, ia = _held(a, mm, k)
    bv, ib = _held(b, k, n)
    if order == "blas" and "sa" not in r and ia is None and ib is None:
        ks = _chunked_product(m, a, b, av, bv, ct)
        if ks is not None:
            return ks, ct
    av, bv = _convert(m, a, av, ct), _convert(m, b, bv, ct)
    if "sa" in r or order == "sequential":
        if ia is not None:
            av, ia = av[ia], None
        if ib is not None:
            bv, ib = bv[ib], None
    if "sa" in r:
        groups = -(-k // MX_GROUP)
        grp = np.arange(k) // MX_GROUP
        op = name.lower()
        av = av * _scales(_scale_tile(m, op, r, "sa", mm, groups), mm, groups)[..., grp]
        bv = bv * _scales(_scale_tile(m, op, r, "sb", groups, n), groups, n)[..., grp, :]
    if order == "sequential":
        return _sequential(av, bv, fused="sa" not in r), np.float32
    return _product(av, ia, bv, ib), ct


def _run(m: Machine, name: str, kind: str, vals: Any, r: dict[str, Any] | None = None) -> None:
    if r is None:
        r = roles(kind, list(vals))
    c = r["c"]
    mm, n = r["a"]._vr, r["b"]._vc
    if m.quiet:  # (a launch: numpy's warnings are off already)
        acc, ct = _ksum(m, name, r)
        res = _finish(r, c, acc, ct, mm, n)
    else:
        with np.errstate(all="ignore"):
            acc, ct = _ksum(m, name, r)
            res = _finish(r, c, acc, ct, mm, n)
    _store(m, c, res, mm, n)


def _store(m: Machine, c: Tile, res: np.ndarray, mm: int, n: int) -> None:
    """The accumulator ``c`` takes its new values ``res`` (its m x n block)."""
    beyond = c._vr > mm or c._vc > n
    if c._whole and not beyond and not c.spec.dtype.packed and lazy.ok(m, c):
        # keep the result in logical order (copy-on-write) until the accumulator is read in
        # its own layout or written: a K-loop of TMATMUL_ACC then skips the NZ repacking
        c.set_lazy(res, m, off_chip=True)  # (a new array: the product)
        return
    c.write(res)
    if beyond:
        _undefined_beyond(c, mm, n)


#: the in-place accumulating entries :func:`run_acc_chain` runs as a chain
CHAINED = frozenset({"TMATMUL_ACC", "TGEMV_ACC"})


def chain_acc(vals: list[Any]) -> Tile | None:
    """The accumulator of an _ACC entry's operands when it accumulates in place (C_out is
    C_in, and neither A nor B), else None: the form :func:`run_acc_chain` runs."""
    r = roles("acc", list(vals))
    c = r["c"]
    if type(c) is Tile and r["cin"] is c and r["a"] is not c and r["b"] is not c:
        return c
    return None


def run_acc_chain(m: Machine, ins: Instr, vals: list[Any], steps: int) -> None:
    """Entry ``ins`` (TMATMUL_ACC / TGEMV_ACC accumulating in place: C = C + A @ B) run as
    ``steps`` consecutive steps on the lanes machine ``m``, whose lanes are chains of
    ``steps`` (lane ``g * steps + s``: step ``s`` of chain ``g``, e.g. the K-steps of a loop,
    per block): each step's C_in is what the step before it wrote, the first step's the value
    its lane's C holds. The k-sums of all steps are formed at once (:func:`_ksum`: per lane,
    the call one step makes) and C_in added to each in step order (:func:`_plus_cin`, as one
    step adds it), so every lane's C ends with what its step wrote when the steps ran one by
    one: the same bits."""
    if ins.name not in CHAINED:
        raise ValueError(f"{ins.name} is not an accumulating entry run as a chain")
    r = roles("acc", list(vals))
    c = chain_acc(vals)
    if c is None:
        raise ValueError(f"{ins.name} does not accumulate in place")
    _mkn(ins, r, ins.name.startswith("TGEMV"))
    mm, n = r["a"]._vr, r["b"]._vc
    with np.errstate(all="ignore"):
        ks, ct = _ksum(m, ins.name, r)
        if ks.shape != (m.lanes, mm, n):  # (lanes that shared their operands)
            ks = np.broadcast_to(ks, (m.lanes, mm, n)).copy()
        ks = ks.reshape(-1, steps, mm, n)
        prev = np.asarray(c.read(mm, n)).reshape(-1, steps, mm, n)[:, 0]
        # (an f32 k-sum with an f32 C: each step's sum lands in its own k-sum, in place, as
        # _plus_cin adds it; else a C of its own type)
        out = ks if ks.dtype == c.dtype.np and not c.dtype.is_int \
            else np.empty(ks.shape, c.dtype.np)
        for s in range(steps):
            prev = _plus_cin(c, ks[:, s], prev, ct)
            if out is not ks:
                out[:, s] = prev
    _store(m, c, out.reshape(m.lanes, mm, n), mm, n)


def _undefined_beyond(c: Tile, mm: int, n: int) -> None:
    """C's valid region past the m x n product (an Acc tile of 16 rows for an 8-row A, as
    PTOAS's samples write): the page defines C on m x n only, and the cube works on whole
    16 x 16 fractals of whatever the operands' padding holds, so those elements are undefined:
    they get the poison pattern, which a later read shows, rather than a stale value."""
    from ...memory import POISON_BYTE

    poison = np.frombuffer(bytes([POISON_BYTE]) * c.dtype.np.itemsize, c.dtype.np)[0]
    if c._vr > mm:
        c.fill(poison, c._vr - mm, c._vc, mm, 0)
    if c._vc > n:
        c.fill(poison, mm, c._vc - n, 0, n)


def run_matmul(m: Machine, name: str, kind: str, tiles: list[Tile]) -> None:
    """The maths of entry ``name`` (TMATMUL, TMATMUL_ACC, TMATMUL_BIAS) on ``tiles`` in its
    operand order: what the cube micro-ops (``isa/micro/cube.py``) run on the tiles at their
    pointers."""
    _run(m, name, kind, tuple(tiles))


_PHASE = (Param("Phase", AccPhase.Unspecified, AccPhase),)
_C = Opnd("cMatrix", "tile", "out")
_A = Opnd("aMatrix", "tile")
_B = Opnd("bMatrix", "tile")


def _declare(name: str, kind: str, gemv: bool, operands: tuple[Opnd, ...], doc: str,
             ptoas: Ptoas | None = None) -> Instr:
    def impl(m: Machine, *vals: Any, Phase: AccPhase) -> None:  # noqa: N803
        _run(m, name, kind, vals)

    def fast(ins: Instr, m: Machine, vals: list[Any], params: dict[str, Any]) -> bool:
        # the run-time rule and the semantics, the operands' roles found once (Instr.fast)
        r = roles(kind, vals)
        _mkn(ins, r, gemv)
        _run(m, name, kind, vals, r)
        return True

    impl.__doc__ = doc
    # PTOAS's ``accPhase`` is the unit-flag phase template argument
    ptoas = dataclasses.replace(ptoas or Ptoas(), attrs={**(ptoas.attrs if ptoas else {}),
                                                         "accPhase": Attr("Phase")})
    if "_" in name:  # PTOAS dots the variants: pto.tmatmul.acc, pto.tgemv.mx
        ptoas = dataclasses.replace(ptoas or Ptoas(), op="pto." + name.lower().replace("_", "."))
    # the MX forms index their scales as 2-D; the others are batch-safe ([..., m, k] @ ...)
    return instr(name, family="matrix", pipe=Pipe.M, operands=operands, params=_PHASE,
                 batched=not name.endswith("_MX"),
                 static=(_matmul_rule(kind, gemv),), runtime=(_runtime(kind, gemv),),
                 ptoas=ptoas, fast=fast)(impl)


TMATMUL = _declare(
    "TMATMUL", "plain", False, (_C, _A, _B),
    "C[i, j] = sum_k A[i, k] * B[k, j] for i < M = a.valid_row, j < N = b.valid_col, k < K = "
    "a.valid_col (overwrites C's m x n block; f32 accumulation, i32 for i8). C's valid region "
    "may be larger than m x n: the rest of it is undefined on the NPU and gets the poison "
    "pattern.")
TMATMUL_ACC = _declare(
    "TMATMUL_ACC", "acc", False,
    (Opnd("cOutMatrix", "tile", "out"), Opnd("cInMatrix", "tile"), _A,
     Opnd("bMatrix", "tile", optional=True)),
    "C_out = C_in + A @ B over m x n; TMATMUL_ACC(c, a, b) accumulates in place.")
TMATMUL_BIAS = _declare(
    "TMATMUL_BIAS", "bias", False, (_C, _A, _B, Opnd("biasData", "tile")),
    "C = A @ B + bias[0, j] (the single bias row broadcast down the rows).")
TGEMV = _declare(
    "TGEMV", "plain", True, (_C, _A, _B),
    "C[0, j] = sum_k A[0, k] * B[k, j]: TMATMUL with m = 1.")
TGEMV_ACC = _declare(
    "TGEMV_ACC", "acc", True,
    (Opnd("cOutMatrix", "tile", "out"), Opnd("cInMatrix", "tile"), _A,
     Opnd("bMatrix", "tile", optional=True)),
    "C_out = C_in + A @ B with m = 1.")
TGEMV_BIAS = _declare(
    "TGEMV_BIAS", "bias", True, (_C, _A, _B, Opnd("biasData", "tile")),
    "C = A @ B + bias with m = 1.")

_MX_OPS = (_C, Opnd("aMatrix", "tile"), Opnd("aScaleMatrix", "tile"), Opnd("bMatrix", "tile"),
           Opnd("bScaleMatrix", "tile"), Opnd("biasData", "tile", optional=True))
#: PTOAS writes every scale tile as ``loc=scaling``; the C++ MX matmul takes ScaleLeft /
#: ScaleRight tiles, which the bridge builds over the scaling tile's bytes
_MX_SCALES = {"aScaleMatrix": TileType.ScaleLeft, "bScaleMatrix": TileType.ScaleRight}
_MX_INS = ("aMatrix", "aScaleMatrix", "bMatrix", "bScaleMatrix")
_MX_FORMS = (Form(inputs=_MX_INS, outs=("cMatrix",), retype=_MX_SCALES),
             Form(inputs=(*_MX_INS, "biasData"), outs=("cMatrix",), retype=_MX_SCALES))
# ins(cIn, a, sa, b, sb) outs(cOut): the registry's positional (cOut, cIn, a, sa, b, sb)
_MX_ACC_FORMS = (Form(inputs=("aMatrix", "aScaleMatrix", "bMatrix", "bScaleMatrix", "biasData"),
                      outs=("cMatrix",),
                      retype={"bMatrix": TileType.ScaleLeft, "biasData": TileType.ScaleRight}),)


def _mx_spelling(base: str) -> Ptoas:
    """``pto.<base>``, ``pto.<base>.bias`` (the optional bias operand) and ``pto.<base>.acc``
    (the C++ overload with an input accumulator)."""
    return Ptoas(forms={f"pto.{base}": _MX_FORMS, f"pto.{base}.bias": _MX_FORMS,
                        f"pto.{base}.acc": _MX_ACC_FORMS})


TMATMUL_MX = _declare(
    "TMATMUL_MX", "mx", False, _MX_OPS,
    "Microscaled GEMM: C = (A * 2^(sa-127)) @ (B * 2^(sb-127)) with one E8M0 scale per 32 k; "
    "forms (c, a, sa, b, sb), (c, a, sa, b, sb, bias) and (cOut, cIn, a, sa, b, sb).",
    _mx_spelling("tmatmul.mx"))
TGEMV_MX = _declare(
    "TGEMV_MX", "mx", True, _MX_OPS,
    "Microscaled GEMV (TMATMUL_MX with m = 1); same three forms.", _mx_spelling("tgemv.mx"))


# ---- HF32 / TF32 modes -----------------------------------------------------------------------

@instr("SETTF32MODE", family="matrix", pipe=Pipe.S, operands=(),
       params=(Param("isEnable", False), Param("tf32TransMode", RoundMode.CAST_ROUND, RoundMode)))
def SETTF32MODE(m: Machine, *, isEnable: bool, tf32TransMode: RoundMode) -> None:  # noqa: N802,N803
    """Record the TF32 mode: on a5 later f32 matmuls round their inputs to 10 mantissa bits
    (e8m10) with ``tf32TransMode``; a2a3 and cpu record it only (no-op, as documented)."""
    mad_modes(m)["tf32"] = (bool(isEnable), tf32TransMode)


@instr("SETHF32MODE", family="matrix", pipe=Pipe.S, operands=(),
       params=(Param("isEnable", False), Param("hf32TransMode", RoundMode.CAST_ROUND, RoundMode)))
def SETHF32MODE(m: Machine, *, isEnable: bool, hf32TransMode: RoundMode) -> None:  # noqa: N802,N803
    """Record the HF32 mode: on a2a3/a5 later f32 matmuls round their inputs to 11 mantissa bits
    (e8m11) with ``hf32TransMode`` (TF32 wins on a5 when both are on); cpu records it only."""
    mad_modes(m)["hf32"] = (bool(isEnable), hf32TransMode)


__all__ = ["run_matmul", "TGEMV", "TGEMV_ACC", "TGEMV_BIAS", "TGEMV_MX", "TMATMUL", "TMATMUL_ACC",
           "TMATMUL_BIAS", "TMATMUL_MX", "SETHF32MODE", "SETTF32MODE", "elem_type", "roles"]

"""One attention block as a mixed cube + vector kernel: O = softmax(Q K^T * scale) V.

Each block (cluster) takes one head: Q (M x D), K and V (N x D), f32. Its three cores work
together through two pipes, the way A2/A3 and A5 flash-attention kernels are written:

* the cube core (AIC) computes S = Q K^T (TLOAD Q into L1 NZ, K^T into L1 ZN through a
  column-major view of K, TMOV to L0A / L0B, TMATMUL into an f32 Acc tile) and pushes S to the
  vector cores, split by rows (TPUSH ... TILE_UP_DOWN): sub-block k gets rows [k M/2, (k+1) M/2);
* each vector core (AIV0, AIV1) pops its M/2 x N half of S, computes the row softmax of
  S * scale (TMULS, TROWMAX, TROWEXPANDSUB, TEXP, TROWSUM, TROWEXPANDDIV), converts it to the
  NZ layout and pushes it back (TPUSH ... TILE_UP_DOWN: the two halves fill one slot);
* the cube pops P (M x N, L1) and computes O = P V (TMOV to L0A, V to L0B, TMATMUL), stored
  from the Acc tile to GM.

The cores interleave at the pipe operations (a TPOP of an empty pipe yields to the other
cores); the blocks run in lockstep. The same kernel as a .pto program is
``examples/mixed_attention.pto``. Run it:

    python examples/mixed_attention.py [--target cpu|a2a3|a5] [--heads H] [--pto]
                                       [--sanitize] [--cycles]

``--sanitize`` checks the run with the sanitizer (like the .pto program, the kernel leaves each
core's own flags to the compiler, so only the races between the cores are in question: the
pipes order them); ``--cycles`` prints the cycle model's report (the vector cores' pops wait
for the cube's push, the cube's pop for both vector cores').
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import numpy as np

import ptoisa as pto
from ptoisa import BLayout, Direction, GlobalTensor, Layout, SLayout, Tile, TileType, TPipe
from ptoisa.sanitizer import Sanitizer, SanitizerError

M, N, D = 16, 64, 32          # query rows, keys, head dim
HALF = M // 2                 # the rows of S (and P) each vector core handles
SCALE = 1.0 / np.sqrt(D)
PTO_FILE = Path(__file__).with_suffix(".pto")

# S goes cube -> vector, P vector -> cube; a slot holds one M x N f32 tile (both halves)
C2V = TPipe(0, Direction.DIR_C2V, M * N * 4, 4)
V2C = TPipe(1, Direction.DIR_V2C, M * N * 4, 4)
SPLIT = "TILE_UP_DOWN"


def _view(arr: np.ndarray, rows: int, cols: int, offset: object) -> GlobalTensor:
    """A row-major rows x cols window of ``arr`` starting at element ``offset``."""
    n = arr.size
    return GlobalTensor(arr, (1, 1, 1, rows, cols), (n, n, n, cols, 1), offset=offset)


def _nz(rows: int, cols: int, loc: TileType = TileType.Mat) -> Tile:
    return Tile(loc, np.float32, rows, cols, BLayout.ColMajor, None, SLayout.RowMajor)


def cube(q: np.ndarray, k: np.ndarray, v: np.ndarray, out: np.ndarray) -> None:
    """The AIC: S = Q K^T -> vector cores; P <- vector cores; O = P V -> GM."""
    h = pto.get_block_idx()
    q_mat, left = _nz(M, D), pto.TileLeft(np.float32, M, D)
    pto.TLOAD(q_mat, _view(q, M, D, h * M * D))
    pto.TMOV(left, q_mat)
    # K^T (D x N): a column-major view of the row-major N x D keys, into a ZN L1 tile
    kt = GlobalTensor(k, (1, 1, 1, D, N), (k.size,) * 3 + (1, D), Layout.DN, offset=h * N * D)
    kt_mat = Tile(TileType.Mat, np.float32, D, N, BLayout.RowMajor, None, SLayout.ColMajor)
    right = pto.TileRight(np.float32, D, N)
    pto.TLOAD(kt_mat, kt)
    pto.TMOV(right, kt_mat)
    s = pto.TileAcc(np.float32, M, N)
    pto.TMATMUL(s, left, right)
    pto.TPUSH(C2V, s, Split=SPLIT)

    p_mat, p_left = _nz(M, N), pto.TileLeft(np.float32, M, N)
    pto.TPOP(V2C, p_mat, Split=SPLIT)
    pto.TMOV(p_left, p_mat)
    pto.TFREE(V2C, Split=SPLIT)
    v_mat, v_right = _nz(N, D), pto.TileRight(np.float32, N, D)
    pto.TLOAD(v_mat, _view(v, N, D, h * N * D))
    pto.TMOV(v_right, v_mat)
    o = pto.TileAcc(np.float32, M, D)
    pto.TMATMUL(o, p_left, v_right)
    pto.TSTORE(_view(out, M, D, h * M * D), o)


def vector(q: np.ndarray, k: np.ndarray, v: np.ndarray, out: np.ndarray) -> None:
    """An AIV: its HALF rows of S -> row softmax of S * scale -> back to the cube."""
    s = Tile(TileType.Vec, np.float32, HALF, N)
    tmp = Tile(TileType.Vec, np.float32, HALF, N)
    mx = Tile(TileType.Vec, np.float32, HALF, 1, BLayout.ColMajor)
    sm = Tile(TileType.Vec, np.float32, HALF, 1, BLayout.ColMajor)
    pto.TPOP(C2V, s, Split=SPLIT)
    pto.TMULS(s, s, np.float32(SCALE))
    pto.TFREE(C2V, Split=SPLIT)
    pto.TROWMAX(mx, s, tmp)
    pto.TROWEXPANDSUB(s, s, mx)
    pto.TEXP(s, s)
    pto.TROWSUM(sm, s, tmp)
    pto.TROWEXPANDDIV(s, s, sm)
    p_nz = _nz(HALF, N, TileType.Vec)
    pto.TMOV(p_nz, s)
    pto.TPUSH(V2C, p_nz, Split=SPLIT)


def reference(q: np.ndarray, k: np.ndarray, v: np.ndarray) -> np.ndarray:
    """numpy attention per head, in float64."""
    s = np.einsum("hmd,hnd->hmn", q.astype(np.float64), k.astype(np.float64)) * SCALE
    p = np.exp(s - s.max(axis=-1, keepdims=True))
    p /= p.sum(axis=-1, keepdims=True)
    return np.einsum("hmn,hnd->hmd", p, v.astype(np.float64))


def make_inputs(heads: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return tuple(rng.standard_normal((heads, r, D)).astype(np.float32)  # type: ignore[return-value]
                 for r in (M, N, N))


def run_eager(q: np.ndarray, k: np.ndarray, v: np.ndarray, target: str = pto.DEFAULT_TARGET,
              lockstep: bool | str = "auto", **check: Any) -> np.ndarray:
    """``check``: ``sanitize=`` (a Sanitizer: raises SanitizerError on findings) or
    ``cycles=True`` (its report is printed), as for :func:`ptoisa.launch`."""
    out = np.zeros((q.shape[0], M, D), np.float32)
    if not check:
        pto.launch_mixed(cube, vector, q, k, v, out, blocks=q.shape[0], target=target,
                         lockstep=lockstep)
        return out

    def kernel(*a: np.ndarray) -> None:  # the two functions as one C++-style mixed kernel
        (cube if pto.core_type() == "AIC" else vector)(*a)

    rep = pto.launch(kernel, q, k, v, out, blocks=q.shape[0], target=target,
                     lockstep=lockstep, mixed=True, **check)
    if check.get("cycles"):
        print(rep.summary())
    elif rep is not None and rep.findings:
        raise SanitizerError(rep)
    return out


def run_pto(q: np.ndarray, k: np.ndarray, v: np.ndarray, target: str = pto.DEFAULT_TARGET,
            path: Path = PTO_FILE, **check: Any) -> np.ndarray:
    """Run examples/mixed_attention.pto: @attention(%q, %k, %v, %out), one block per head."""
    out = np.zeros((q.shape[0], M, D), np.float32)
    rep = pto.load(path, target=target).attention(q, k, v, out, blocks=q.shape[0],
                                                  **check)
    if check.get("cycles"):
        print(rep.summary())
    return out


def check(out: np.ndarray, q: np.ndarray, k: np.ndarray, v: np.ndarray) -> bool:
    """f32 matmuls (f32 accumulation) and f32 exp/sum/div against float64."""
    return bool(np.allclose(out, reference(q, k, v), rtol=1e-4, atol=1e-5))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--target", default=pto.DEFAULT_TARGET, choices=["cpu", "a2a3", "a5"],
                    help=f"target profile (default {pto.DEFAULT_TARGET})")
    ap.add_argument("--heads", type=int, default=4, help="heads = blocks (clusters)")
    ap.add_argument("--pto", action="store_true", help=f"run {PTO_FILE.name} instead")
    ap.add_argument("--sanitize", action="store_true",
                    help="check the run with the sanitizer (exits 1 on findings)")
    ap.add_argument("--cycles", action="store_true", help="print the cycle model's report")
    args = ap.parse_args(argv)
    if args.pto and not PTO_FILE.is_file():  # (a copy of this script without the program beside it)
        ap.error(f"--pto runs {PTO_FILE.name}, which is not beside this script in "
                 f"{PTO_FILE.parent} (it comes with the script in ptoisa's examples/)")
    q, k, v = make_inputs(args.heads)
    run = run_pto if args.pto else run_eager
    try:
        if args.sanitize:  # auto-sync, as the .pto program (which has no flags) is checked
            run(q, k, v, args.target, sanitize=True if args.pto else Sanitizer(sync="auto"))
            print("sanitizer: no findings")
        out = run(q, k, v, args.target, **({"cycles": True} if args.cycles else {}))
    except SanitizerError as e:
        print(e, file=sys.stderr)
        return 1
    kind = PTO_FILE.name if args.pto else "eager"
    print(f"mixed attention ({kind}) on {args.target}: {args.heads} heads, Q {M}x{D}, "
          f"K/V {N}x{D}; per cluster 1 AIC (QK^T, PV) + 2 AIVs (softmax, {HALF} rows each)")
    if not check(out, q, k, v):
        err = np.abs(out - reference(q, k, v)).max()
        print(f"mixed attention: MISMATCH with numpy (max abs error {err:.3g})")
        return 1
    print("mixed attention: matches numpy")
    return 0


if __name__ == "__main__":
    sys.exit(main())

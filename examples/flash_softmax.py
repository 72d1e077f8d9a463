"""The vector side of a flash-attention step, single or double buffered, with its pipe timeline.

A flash-attention kernel streams score blocks S_j = Q K_j^T (ROWS x BC, produced by the cube)
through the vector core: TLOAD (MTE2), the softmax pieces TROWMAX, TROWEXPANDSUB, TEXP, TROWSUM,
TROWEXPANDDIV (V), and TSTORE of the probabilities P_j (MTE3) that the cube multiplies by V_j.
Synchronisation is manual, with flags as in a hand-written PTO kernel:

* single buffer: block j+1 may only be loaded into the tile after block j was stored
  (MTE3 -> MTE2), so loading and computing take turns;
* double buffer: two tiles and one event id per tile; block j+1 loads into the other tile
  while the vector pipe works on block j, so MTE2 and V overlap.

Run it (prints both cycle reports; ``--plot FILE.png`` draws the two timelines):

    python examples/flash_softmax.py [--target cpu|a2a3|a5] [--blocks-kv 8] [--pto]
        [--plot docs/cycles_flash_softmax.png]

``--pto`` runs ``examples/flash_softmax.pto`` instead: the two kernels exported by
``pto.export`` (``pto_text()``), flags included, for 8 K/V blocks (other ``--blocks-kv``
export them afresh).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

import ptoisa as pto
from ptoisa import BLayout, GlobalTensor, Pipe, Tile, TileType
from ptoisa.cycles import CycleReport

ROWS, BC = 16, 128   # one score block: 16 query rows x 128 keys, f32 (8 KiB of UB)
PTO_FILE = Path(__file__).with_suffix(".pto")
PTO_NKV = 8          # the K/V blocks the .pto programs were exported for


def flash_softmax(s: np.ndarray, p: np.ndarray, nkv: int, double: bool) -> None:
    """P_j = softmax(S_j) row-wise for each of the ``nkv`` score blocks of one query block."""
    n = ROWS * BC
    shape, stride = (1, 1, 1, ROWS, BC), (n, n, n, BC, 1)
    nbuf = 2 if double else 1
    bufs = [Tile(TileType.Vec, np.float32, ROWS, BC, name=f"s{i}") for i in range(nbuf)]
    tmp = Tile(TileType.Vec, np.float32, ROWS, BC, name="tmp")
    mx = Tile(TileType.Vec, np.float32, ROWS, 1, BLayout.ColMajor, name="max")
    sm = Tile(TileType.Vec, np.float32, ROWS, 1, BLayout.ColMajor, name="sum")
    for b in range(nbuf):                                # every buffer starts free
        pto.SET_FLAG(Pipe.MTE3, Pipe.MTE2, b)
    for j in range(nkv):
        b = j % nbuf
        t = bufs[b]
        pto.WAIT_FLAG(Pipe.MTE3, Pipe.MTE2, b)           # buffer b stored: reload it
        pto.TLOAD(t, GlobalTensor(s, shape, stride, offset=j * n))
        pto.SET_FLAG(Pipe.MTE2, Pipe.V, b)
        pto.WAIT_FLAG(Pipe.MTE2, Pipe.V, b)              # block j is in UB
        pto.TROWMAX(mx, t, tmp)
        pto.TROWEXPANDSUB(t, t, mx)
        pto.TEXP(t, t)
        pto.TROWSUM(sm, t, tmp)
        pto.TROWEXPANDDIV(t, t, sm)
        pto.SET_FLAG(Pipe.V, Pipe.MTE3, b)
        pto.WAIT_FLAG(Pipe.V, Pipe.MTE3, b)              # P_j computed
        pto.TSTORE(GlobalTensor(p, shape, stride, offset=j * n), t)
        pto.SET_FLAG(Pipe.MTE3, Pipe.MTE2, b)            # buffer b free again
    for b in range(nbuf):
        pto.WAIT_FLAG(Pipe.MTE3, Pipe.MTE2, b)


def reference(s: np.ndarray) -> np.ndarray:
    z = s.reshape(-1, BC).astype(np.float64)
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return (e / e.sum(axis=1, keepdims=True)).astype(np.float32).reshape(s.shape)


def run(nkv: int, double: bool, target: str = pto.DEFAULT_TARGET, use_pto: bool = False
        ) -> tuple[CycleReport, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    s = rng.standard_normal(nkv * ROWS * BC, dtype=np.float32)
    p = np.zeros_like(s)
    if use_pto:
        # the file holds the programs for PTO_NKV blocks; other counts are exported afresh
        prog = pto.load(PTO_FILE if nkv == PTO_NKV else pto_text(nkv), target=target)
        fn = getattr(prog, "flash_softmax_" + ("double" if double else "single"))
        return fn(s, p, cycles=True), p, s
    rep = pto.launch(flash_softmax, s, p, nkv, double, target=target, cycles=True)
    return rep, p, s


def pto_text(nkv: int = PTO_NKV) -> str:
    """examples/flash_softmax.pto: both kernels exported (``pto.export``, which checks each
    against the eager run bit for bit) into one module, with the file's header."""
    s = np.zeros(nkv * ROWS * BC, np.float32)
    aliases: list[str] = []
    funcs: list[str] = []
    for double in (False, True):
        text = pto.export(flash_softmax, s, np.zeros_like(s), nkv, double,
                          name="flash_softmax_" + ("double" if double else "single"))
        lines = text.splitlines()
        start = lines.index("module {")
        aliases += [ln for ln in lines[:start] if ln not in aliases]
        funcs.append("\n".join(lines[start + 1:-1]))
    n = nkv * ROWS * BC
    header = [
        "// The vector side of a flash-attention step (examples/flash_softmax.py), exported with",
        "// pto.export for 8 K/V blocks of 16 x 128 f32 scores: flash_softmax_single (one tile;",
        "// load and compute take turns) and flash_softmax_double (two tiles, one event id each;",
        "// MTE2 and V overlap). The set_flag / wait_flag pairs are the kernel's own. Run it:",
        "//",
        "//   ptoisa run examples/flash_softmax.pto --entry flash_softmax_double \\",
        f"//       --arg s=rand:{n}:f32 --arg p=zeros:{n}:f32 --cycles",
        "//",
        "// or: python examples/flash_softmax.py --pto",
    ]
    return "\n".join(header + aliases + ["module {"] + funcs + ["}"]) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--target", default=pto.DEFAULT_TARGET, choices=["cpu", "a2a3", "a5"],
                    help=f"target profile and cycle table (default {pto.DEFAULT_TARGET})")
    ap.add_argument("--blocks-kv", type=int, default=PTO_NKV)
    ap.add_argument("--pto", action="store_true",
                    help=f"run {PTO_FILE.name} (exported for {PTO_NKV} K/V blocks; other "
                         "counts are exported afresh)")
    ap.add_argument("--plot", metavar="FILE.png")
    ns = ap.parse_args(argv)
    if ns.pto and ns.blocks_kv == PTO_NKV and not PTO_FILE.is_file():  # (a copy elsewhere)
        ap.error(f"--pto runs {PTO_FILE.name}, which is not beside this script in "
                 f"{PTO_FILE.parent} (it comes with the script in ptoisa's examples/)")
    reps = {}
    for double in (False, True):
        rep, p, s = run(ns.blocks_kv, double, ns.target, ns.pto)
        if not np.allclose(p, reference(s), rtol=2e-6, atol=1e-7):
            print("WRONG RESULT", file=sys.stderr)
            return 1
        name = "double buffer" if double else "single buffer"
        reps[name] = rep
        src = f" ({PTO_FILE.name})" if ns.pto else ""
        print(f"== {name}{src} on {ns.target}: MTE2/V overlap {rep.overlap('MTE2', 'V')} "
              "cycles")
        print(rep.summary(top=5))
    if ns.plot:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, axes = plt.subplots(2, 1, figsize=(10, 4), sharex=True)
        for ax, (name, rep) in zip(axes, reps.items(), strict=True):
            rep.plot(ax, title=f"{name}: {rep.total} cycles, MTE2/V overlap "
                               f"{rep.overlap('MTE2', 'V')} cycles")
        axes[0].set_xlim(0, max(r.total for r in reps.values()))
        fig.tight_layout()
        fig.savefig(ns.plot, dpi=80)
        print(f"wrote {ns.plot}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

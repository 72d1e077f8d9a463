"""Run the upstream conformance pack (../shared/conformance, schema ptoisa-conformance/1).

Each case is a small kernel recorded from the upstream C++ CPU simulator's own tests: tiles
and GM buffers with their initial contents, a program of intrinsic calls, and checks. Every
case whose instructions ptoisa has is run through the eager API (the same registry entries a
user calls) and compared with the recorded expectation.

Verdicts: PASS; FAIL (first mismatch); SKIP (an instruction or element type ptoisa does not
have yet); QUIRK (the case is marked ``cpu_sim_quirk``, i.e. the upstream simulator departs
from the hardware there, ptoisa follows the hardware and so differs; reported with the reason);
DIFF (on a2a3/a5 only: the case meets a documented target difference, see
``TARGET_DIFFERENCES``, and passes on cpu, so that difference explains the mismatch).
"""

from __future__ import annotations

import io
import json
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np

from . import enums
from .errors import ConstraintError, IllegalInstruction, PtoError, PtoMemoryError
from .isa.registry import REGISTRY, Instr
from .memory import Machine, pop
from .memory import target as make_target
from .progress import Progress
from .targets import CONFORMANCE_TARGET, TargetLike, get_target
from .tensor import GlobalTensor
from .tile import Tile, tile_spec

_NP_TYPES: dict[str, Any] = {
    "float32": np.float32, "float16": np.float16, "bfloat16": ml_dtypes.bfloat16,
    "int8": np.int8, "uint8": np.uint8, "int16": np.int16, "uint16": np.uint16,
    "int32": np.int32, "uint32": np.uint32, "int64": np.int64, "uint64": np.uint64,
    "float8_e4m3fn": ml_dtypes.float8_e4m3fn, "float8_e5m2": ml_dtypes.float8_e5m2,
    "float8_e8m0fnu": ml_dtypes.float8_e8m0fnu,
    # packed fp4 (two per byte): numpy sees the raw bytes, tiles the 4-bit codes
    "float4_e2m1fn_x2": np.uint8, "float4_e1m2_x2": np.uint8,
    # coded 8-bit types: the bytes are the codes (int4b_t one value per byte, HiF8)
    "int4x2": np.uint8, "hifloat8": np.uint8,
}

#: pack types whose numpy type does not name the PTO element type
_PTO_TYPES: dict[str, str] = {"float4_e2m1fn_x2": "f4E2M1x2", "float4_e1m2_x2": "f4E1M2x2",
                              "int4x2": "s4", "hifloat8": "hif8"}

#: C++ calls recorded under another name (TFILLPAD<TFillPadMode::InPlace> is TFILLPAD_INPLACE)
_MODE_ALIASES = {("TFILLPAD", "TFillPadMode::InPlace"): "TFILLPAD_INPLACE",
                 ("TFILLPAD", "TFillPadMode::Expand"): "TFILLPAD_EXPAND"}


#: instructions that take ConvTile operands (convolution-layout tiles)
_CONV_OPS = {"TTRANS", "TEXTRACT", "TLOAD", "TSTORE", "TIMG2COL", "SETFMATRIX",
             "SET_IMG2COL_RPT", "SET_IMG2COL_PADDING"}


class Skip(Exception):
    """The case needs something ptoisa does not have yet."""


@dataclass
class Verdict:
    case_id: str
    status: str  # PASS | FAIL | SKIP | QUIRK | DIFF
    detail: str = ""


@dataclass
class Summary:
    verdicts: list[Verdict] = field(default_factory=list)

    def count(self, status: str) -> int:
        return sum(1 for v in self.verdicts if v.status == status)


def np_type(name: str) -> Any:
    t = _NP_TYPES.get(name)
    if t is None:
        raise Skip(f"element type {name} is not supported yet")
    return t


def load_array(case_dir: Path, desc: dict[str, Any]) -> np.ndarray:
    logical = np_type(desc["dtype"])
    shape = tuple(desc.get("shape", ()))
    if "fill" in desc:
        return np.zeros(shape, logical)
    a = np.load(case_dir / desc["file"], allow_pickle=False)
    if a.dtype != np.dtype(logical):
        a = a.view(logical) if a.dtype.itemsize == np.dtype(logical).itemsize else \
            a.astype(logical)
    return a.reshape(shape)


def _pad(p: Any, dtype_name: str) -> enums.PadValue:
    if isinstance(p, dict):
        if "value" in p and p["value"] is not None:
            return enums.PadValue.custom(float(p["value"]) if isinstance(p["value"], str)
                                         else p["value"])
        return enums.PadValue.custom_bits(int(p["custom_bits"], 16))
    return enums.pad_value(p)


def op_name(step: dict[str, Any]) -> str:
    op = step["op"]
    ta = step.get("template_args") or {}
    return _MODE_ALIASES.get((op, ta.get("mode", "")), op)


def _scalar(o: dict[str, Any]) -> Any:
    dt = o.get("dtype")
    bits = o.get("bits")
    if bits is not None and dt in _NP_TYPES:
        npdt = np.dtype(_NP_TYPES[dt])
        raw = np.array([int(bits, 16)], dtype=f"u{npdt.itemsize}")
        v = raw.view(npdt)[0]
        return v.item() if npdt.kind in "iub" else v
    v = o["scalar"]
    return float(v) if isinstance(v, str) else v


def _param_value(ins: Instr, name: str, text: str) -> Any:
    """Template argument text ('AtomicType::AtomicAdd', 'true', '3') -> python value."""
    for p in ins.params:
        if p.name == name and p.type is not None:
            return text
    if "::" in text:
        return text  # enum, coerced by the instruction (e.g. PadValue::Zero)
    low = text.lower()
    if low in ("true", "false"):
        return low == "true"
    try:
        return int(text, 0)
    except ValueError:
        try:
            return float(text)
        except ValueError:
            return text


class CaseRun:
    def __init__(self, case_dir: Path, case: dict[str, Any], machine: Machine) -> None:
        self.dir = case_dir
        self.case = case
        self.m = machine
        self.tiles: dict[str, Tile] = {}
        self.gm: dict[str, np.ndarray] = {}
        self.structs: list[tuple[dict[str, Any], Any]] = []
        self.groups: list[_UnboundGroup] = []
        self.popped: list[np.ndarray] = []  # AIV0's / the cube's TPOP results, in order

    def setup(self) -> None:
        c = self.case
        for gid, g in c["gm"].items():
            buf = np.zeros(g["nbytes"], np.uint8)
            init = g.get("init")
            if init and "fill" not in init:
                raw = np.ascontiguousarray(load_array(self.dir, init)).reshape(-1).view(np.uint8)
                buf[: raw.size] = raw[: buf.size]
            self.gm[gid] = buf
        inits = []
        for tid, t in c["tiles"].items():
            if t.get("kind", "Tile") == "ConvTile":
                inits += self._conv_tile(tid, t)
                continue
            if t.get("kind", "Tile") != "Tile":
                raise Skip(f"{t.get('kind')} operands are not supported yet")
            np_type(t["dtype"])
            vr, vc = t["valid_row"], t["valid_col"]
            elem = _PTO_TYPES.get(t["dtype"]) or np.dtype(_NP_TYPES[t["dtype"]])
            spec = tile_spec(t["loc"], elem, t["rows"], t["cols"],
                             t["blayout"], vr["static"], vc["static"], t["slayout"],
                             t["fractal_size"], _pad(t["pad_value"], t["dtype"]),
                             t.get("compact", "Null"))
            tile = Tile.of(spec, (vr["value"], vc["value"]), name=tid)
            mem = t.get("memory") or {}
            if mem.get("offset") is not None:
                self.m.assign(tile, mem["offset"])
                self._shared_bytes(tile, t)
            self.tiles[tid] = tile
            init = t.get("init")
            if init and "same_storage_as" not in init:
                inits.append((tile, init))
        for tile, init in inits:
            data = load_array(self.dir, init).astype(tile.dtype.np, copy=False)
            if data.ndim == 1:  # ConvTile storage, raw
                tile.storage[: data.size] = data
            else:
                tile.write(data)

    def _shared_bytes(self, tile: Tile, t: dict[str, Any]) -> None:
        """The CPU simulator's buffers share one address space: a tile recorded as aliasing a
        tile of another role at the same offset views that tile's bytes (the conv tests load a
        Vec tile and read it as a Mat ConvTile)."""
        mem = t["memory"]
        for other_id in t.get("aliases") or []:
            other = self.tiles.get(other_id)
            om = (self.case["tiles"][other_id].get("memory") or {})
            if other is not None and om.get("offset") == mem["offset"] and \
                    om.get("space") != mem.get("space"):
                self.m.alias(tile, other)
                return

    def _conv_tile(self, tid: str, t: dict[str, Any]) -> list[Any]:
        from .conv import ConvTile

        users = {st["op"] for st in self.case["program"]
                 if any(o.get("tile") == tid for o in st["operands"])}
        unsupported = sorted(users - _CONV_OPS)
        if unsupported:
            raise Skip(f"ConvTile operands of {', '.join(unsupported)} are not supported yet")
        mem = t.get("memory") or {}
        nbytes = t["buffer_bytes"]
        if mem.get("bound") is False:
            # never placed in simulated memory: the C++ object's own array holds the shape
            # whatever BufferBytes says (the timg2col test declares 96 for 96 floats)
            need = int(np.prod(t["shape"])) * np.dtype(np_type(t["dtype"])).itemsize
            nbytes = max(nbytes, -(-need // 32) * 32)
        tile = ConvTile(t["loc"], np.dtype(np_type(t["dtype"])), nbytes, t["layout"],
                        tuple(t["shape"]), name=tid)
        if mem.get("offset") is not None:
            self.m.assign(tile, mem["offset"])
            self._shared_bytes(tile, t)
        self.tiles[tid] = tile
        setup = RECONSTRUCTED_CONV.get((self.case["case_id"], tid))
        if setup is not None:
            setup[1](tile)
        init = t.get("init")
        return [(tile, init)] if init and "same_storage_as" not in init else []

    def operand(self, o: dict[str, Any]) -> Any:
        if "tile" in o:
            t = self.tiles[o["tile"]]
            vr, vc = o.get("valid", t.valid_shape)
            t.set_valid(None if t.spec.valid_row is not None else vr,
                        None if t.spec.valid_col is not None else vc)
            return t
        if "gm" in o:
            buf = self.gm[o["gm"]]
            if o["dtype"] in _PTO_TYPES:  # packed fp4 (two elements per byte) and coded types
                per_byte = 2 if o["dtype"].startswith("float4") else 1
                return GlobalTensor(buf, o["shape"], o["stride"], o["layout"],
                                    dtype=_PTO_TYPES[o["dtype"]],
                                    offset=o["offset_bytes"] * per_byte, name=o["gm"])
            npdt = np.dtype(np_type(o["dtype"]))
            usable = buf[: buf.size - buf.size % npdt.itemsize]
            return GlobalTensor(usable, o["shape"], o["stride"], o["layout"], dtype=npdt,
                                offset=o["offset_bytes"] // npdt.itemsize, name=o["gm"])
        if "scalar" in o:
            return _scalar(o)
        if "enum" in o:
            return o["name"]
        if "struct" in o:
            obj = make_struct(o)
            self.structs.append((o, obj))
            return obj
        return None  # events and other non-data operands

    def add_recorded_peers(self) -> None:
        """The other threads of an upstream TWAIT test are not traced; what they did is the
        recorded final content (``sim_final``) of the signal buffers. One peer stores it."""
        waited = {o["gm"] for st in self.case["program"] if st["op"] == "TWAIT"
                  for o in st["operands"] if "gm" in o}
        finals = [(g, self.case["gm"][g].get("sim_final")) for g in sorted(waited)]
        finals = [(g, f) for g, f in finals if f]
        if not finals:
            return
        from .isa.comm import add_peer

        done: list[bool] = []

        def peer() -> bool:
            if done:
                return False
            done.append(True)
            for g, f in finals:
                raw = np.ascontiguousarray(load_array(self.dir, f)).reshape(-1).view(np.uint8)
                self.gm[g][: raw.size] = raw[: self.gm[g].size]
            return True

        add_peer(self.m, peer)

    def run(self) -> dict[int, Any]:
        outputs: dict[int, Any] = {}
        self.add_recorded_peers()
        snaps = {sn["step"]: sn for sn in self.case.get("snapshots") or []}
        lanes = _PipeLanes()
        for step in self.case["program"]:
            name = op_name(step)
            ins = REGISTRY[name]
            if name == "TPUSH" and step["step"] in snaps:
                self._restore_inputs(snaps[step["step"]])
            args = [a for a in (self.operand(o) for o in step["operands"]) if a is not None]
            if ins.sync == "pipe":
                args = lanes.arrange(name, args, step.get("template_args") or {})
            if name == "TWAIT" and getattr(args[0], "unrecorded", False):
                _peer_for_unrecorded_signal(self.m, args)
            if args and isinstance(args[0], _UnboundGroup):
                if name != "TBROADCAST":
                    raise Skip(f"{name} reads the ranks' tensors of its ParallelGroup, host "
                               "memory the pack does not record")
                self.groups.append(args[0])
                args[0] = args[0].bind(args[1])
            kwargs = {}
            for k, v in (step.get("template_args") or {}).items():
                if k == "mode" and name.startswith("TFILLPAD"):
                    continue
                kwargs[k] = _param_value(ins, k, v)
            buf = io.StringIO()
            self.m.stdout = buf
            res = ins(*args, **kwargs)
            outputs[step["step"]] = (buf.getvalue(), res)
            if name == "TPOP" and args[-1] == 0:
                self.popped.append(args[1].numpy())
        return outputs

    def _restore_inputs(self, snap: dict[str, Any]) -> None:
        """Tiles a TPUSH sends were refilled by C++ code between pushes (in-code tests); the
        snapshot's ``before`` array is that content."""
        for o in snap["operands"].values():
            before = o.get("before")
            if "tile" in o and before and o.get("role") == "in":
                t = self.tiles[o["tile"]]
                t.write(load_array(self.dir, before).astype(t.dtype.np, copy=False))


class _PipeLanes:
    """Which vector sub-block runs each TPUSH/TPOP/TFREE. The pack does not record it; in the
    upstream tests both sub-blocks run the same code one after the other, so where two lanes
    take part (a split, or an ``IsNoSplit`` pipe) the vector side's calls alternate AIV0, AIV1
    per pipe and instruction; elsewhere AIV0 (or the cube) runs them. The pipe operand is
    moved first (the C++ ``TPUSH(tile, pipe)`` overload takes it last)."""

    def __init__(self) -> None:
        self.count: dict[tuple[Any, ...], int] = {}

    def arrange(self, name: str, args: list[Any], targs: dict[str, str]) -> list[Any]:
        from .isa import pipes as P

        pipe = next(a for a in args if isinstance(a, P.TPipe))
        rest = [a for a in args if a is not pipe]
        split = P._split(targs.get("Split", "TILE_NO_SPLIT"))
        if P._lanes_active(pipe, split) == 1:
            return [pipe, *rest, self._single_lane(P, name, pipe, rest)]
        if name == "TFREE":
            vector = pipe.direction not in P._V2C
        else:
            d = (P._push_direction if name == "TPUSH" else P._pop_direction)(pipe, rest[0])
            vector = (d is P.Direction.DIR_V2C) == (name == "TPUSH")
        if not vector:
            return [pipe, *rest, 0]
        key = (pipe, split, name)
        n = self.count.get(key, 0)
        self.count[key] = n + 1
        return [pipe, *rest, n % 2]

    def _single_lane(self, P: Any, name: str, pipe: Any, rest: list[Any]) -> int:
        """Only AIV0 takes part in a single-lane pipe; a vector TPOP that finds no ready slot
        (and the TFREE after it) can only have returned upstream as AIV1's no-op."""
        from .memory import current

        if name == "TPOP" and P._pop_direction(pipe, rest[0]) is P.Direction.DIR_C2V:
            f = P.fifo(current(), pipe, P.Direction.DIR_C2V)
            self.idle = not any(0 not in s.popped and len(s.parts) == 2 for s in f.slots)
            return 1 if self.idle else 0
        if name == "TFREE" and getattr(self, "idle", False):
            self.idle = False
            return 1
        return 0


def _compare(expected: np.ndarray, actual: np.ndarray, cmp: dict[str, Any]) -> str | None:
    """None if equal under the case's comparison, else a description of the first mismatch."""
    e = expected.reshape(-1)
    a = actual.reshape(-1)
    if e.shape != a.shape:
        return f"size {a.size} != expected {e.size}"
    if cmp["kind"] == "exact":
        eb = e.view(f"u{e.dtype.itemsize}") if e.dtype.kind not in "iub" else e
        ab = a.view(f"u{a.dtype.itemsize}") if a.dtype.kind not in "iub" else a
        bad = np.flatnonzero(eb != ab)
        if e.dtype.kind == "f" or e.dtype.kind == "V":
            both_nan = np.isnan(e.astype(np.float64)) & np.isnan(a.astype(np.float64))
            bad = np.array([i for i in bad if not both_nan[i]], dtype=np.int64)
        if bad.size == 0:
            return None
        i = int(bad[0])
        return f"{bad.size} of {e.size} elements differ; first at [{i}]: expected {e[i]!r}, " \
               f"got {a[i]!r}"
    ef = e.astype(np.float64).astype(np.float32).astype(np.float64)
    af = a.astype(np.float64).astype(np.float32).astype(np.float64)
    eps = float(cmp.get("eps", 0.0))
    with np.errstate(invalid="ignore", divide="ignore"):
        diff = np.abs(ef - af)
        rel = diff / np.abs(ef)
        err = ((diff > eps) & (rel > eps)) | (np.isnan(ef) != np.isnan(af))
        err &= ~(np.isnan(ef) & np.isnan(af))
    zeros = (np.abs(af) <= 1e-6) & (np.abs(ef) > 1e-6)
    n_err, n_zero = int(err.sum()), int(zeros.sum())
    if n_err <= int(cmp.get("max_error_count", 0)) and \
            n_zero <= int(cmp.get("zero_count_threshold", 1 << 62)):
        return None
    idx = np.flatnonzero(err | zeros)
    i = int(idx[0]) if idx.size else 0
    return (f"{n_err} elements outside eps={eps} (allowed {cmp.get('max_error_count', 0)}), "
            f"{n_zero} unexpected zeros; first at [{i}]: expected {e[i]!r}, got {a[i]!r}")


def make_struct(o: dict[str, Any]) -> Any:
    """A struct operand (by C++ type name) from its recorded bytes: ``unsigned int[N]`` is a
    uint32 array, ``pto::MrgSortExecutedNumList`` the Python object of that name."""
    raw = bytes.fromhex(o.get("bytes_before") or "00" * int(o.get("size", 0)))
    name = str(o["struct"])
    if name.endswith("MrgSortExecutedNumList"):
        from .isa.irregular import MrgSortExecutedNumList

        return MrgSortExecutedNumList.from_bytes(raw)
    if "ParallelGroup<" in name:
        return _parallel_group(raw)
    if "Signal2D<" in name:
        return _signal2d(name, raw)
    if name.startswith("unsigned int["):
        return np.frombuffer(raw, np.uint32).copy()
    if "TPipe<" in name:
        from .isa.pipes import TPipe

        return TPipe.parse(name)
    return OpaqueStruct(name, raw)


def _signal2d(name: str, raw: bytes) -> Any:
    """``comm::Signal2D<R, C>``: a host pointer, then 5 shape and 5 stride words (int64); the
    row stride is stride[3]. The words behind the host pointer are not recorded (``unrecorded``
    marks that)."""
    from .isa.comm import Signal2D

    rows, cols = (int(x) for x in name.split("<", 1)[1].rstrip(">").split(","))
    words = np.frombuffer(raw[8:88], np.int64) if len(raw) >= 88 else np.zeros(10, np.int64)
    stride = int(words[8]) or cols
    sig = Signal2D(np.zeros(max(rows * stride, 1), np.int32), rows, cols, stride)
    sig.unrecorded = True  # type: ignore[attr-defined]
    return sig


class _UnboundGroup:
    """``comm::ParallelGroup`` as recorded: a host pointer to the ranks' tensors (their memory
    is not in the pack), the number of ranks and the root index."""

    unrecorded = True

    def __init__(self, size: int, root: int) -> None:
        self.size, self.root = size, root
        self.buffers: list[np.ndarray] = []

    def bind(self, like: GlobalTensor) -> Any:
        """Each rank's destination tensor: a fresh zeroed GM buffer shaped like ``like``."""
        from .isa.comm import ParallelGroup

        n = int(np.prod(like.spec.shape))
        self.buffers = [np.zeros(n, like.flat.dtype) for _ in range(self.size)]
        return ParallelGroup([GlobalTensor(b, like.spec.shape, dtype=b.dtype)
                              for b in self.buffers], self.root)


def _parallel_group(raw: bytes) -> Any:
    size, root = (int(x) for x in np.frombuffer(raw[8:16], np.int32)) if len(raw) >= 16 \
        else (1, 0)
    return _UnboundGroup(size, root)


def _peer_for_unrecorded_signal(m: Machine, args: list[Any]) -> None:
    """A TWAIT ``EQ v`` on signal words the pack did not record returned upstream: the other
    thread left every word equal to ``v`` (the only state that returns). Other comparisons do
    not determine the words, so they stay unsatisfiable (reported as a deadlock)."""
    from .isa.comm import WaitCmp, add_peer

    sig, value = args[0], args[1]
    cmp = args[2] if len(args) > 2 else "EQ"
    if str(getattr(cmp, "name", cmp)).rsplit(":", 1)[-1] != WaitCmp.EQ.name:
        return

    def peer() -> bool:
        idx = sig.index()
        if np.all(sig.flat[idx] == int(value)):
            return False
        sig.flat[idx] = int(value)
        return True

    add_peer(m, peer)


class OpaqueStruct:
    """A struct the instructions take but do not interpret here (AsyncSession, ...); its
    recorded bytes hold host pointers, so they are not compared."""

    def __init__(self, name: str, raw: bytes) -> None:
        self.name = name
        self.raw = raw


def struct_bytes(obj: Any) -> bytes | None:
    if isinstance(obj, OpaqueStruct) or getattr(obj, "unrecorded", False):
        return None
    if type(obj).__name__ == "TPipe":
        return None  # the recorded bytes are one core's producer/consumer counters, per object
    return obj.tobytes() if isinstance(obj, np.ndarray) else obj.to_bytes()


def check_case(run: CaseRun, outputs: dict[int, Any]) -> list[str]:
    problems = []
    for o, obj in run.structs:
        after, got = o.get("bytes_after"), struct_bytes(obj)
        if after is not None and got is not None and got.hex() != after:
            problems.append(f"struct {o.get('param')}: bytes {got.hex()}, expected {after}")
    for chk in run.case["checks"]:
        kind = chk.get("kind")
        cid = chk.get("id", "?")
        if kind == "stdout":
            got = outputs.get(chk["step"], ("", None))[0]
            if got != chk["expected_text"]:
                problems.append(f"{cid}: printed {got!r}, expected {chk['expected_text']!r}")
            continue
        if kind == "result":
            got = outputs.get(chk["step"], ("", None))[1]
            if bool(got) != bool(chk["expected_value"]):
                problems.append(f"{cid}: returned {got!r}, expected {chk['expected_value']!r}")
            continue
        expected = load_array(run.dir, chk["expected"])
        if "gm" in chk:
            buf = run.gm[chk["gm"]]
            npdt = np.dtype(np_type(chk["dtype"]))
            start = chk.get("gm_offset_bytes", 0)
            raw = buf[start: start + expected.size * npdt.itemsize]
            actual = raw.view(npdt)
            where = f"gm {chk['gm']}"
        elif "tile" in chk:
            actual = run.tiles[chk["tile"]].numpy()
            if chk["expected"].get("layout_of_npy") == "raw storage":
                actual = run.tiles[chk["tile"]].storage  # packed fp4: the bytes
            where = f"tile {chk['tile']}"
        elif run.popped and "gm" not in chk:
            # in-code TPUSH/TPOP tests check each popped tile in turn
            k = int(str(cid).removeprefix("check") or 0)
            if k >= len(run.popped):
                problems.append(f"{cid}: only {len(run.popped)} TPOP results")
                continue
            actual = run.popped[k]
            where = f"TPOP result {k}"
        elif run.groups:
            # a collective's output: the ranks' destination tensors, one after the other
            actual = np.concatenate([b for g in run.groups for b in g.buffers])
            where = "the ParallelGroup's tensors"
        else:
            # "output vs golden" checks of in-code tests: the destination tile of the last step
            # (a 2-D expectation is its logical top-left block; a 1-D one its storage in
            # physical order, zero-extended as the upstream comparison buffer was).
            tile = run.tiles[_last_out_tile(run.case)]
            where = f"tile {tile.name}"
            if expected.ndim == 2:
                r0, c0 = _window_origin(run.case)
                actual = tile.numpy()[r0: r0 + expected.shape[0], c0: c0 + expected.shape[1]]
            else:
                flat = tile.storage
                actual = np.zeros(expected.size, flat.dtype)
                n = min(flat.size, expected.size)
                actual[:n] = flat[:n]
            if actual.dtype != expected.dtype:
                actual = actual.view(expected.dtype) if actual.dtype.itemsize == \
                    expected.dtype.itemsize else actual.astype(expected.dtype)
        msg = _compare(expected, actual, chk["compare"])
        if msg:
            problems.append(f"{cid} ({where}): {msg}")
    return problems


def _window_origin(case: dict[str, Any]) -> tuple[int, int]:
    """Where a golden block sits in the output tile: TINSERT goldens are the inserted block at
    (indexRow, indexCol); every other golden is the top-left block."""
    for step in reversed(case["program"]):
        if any(o.get("role") == "out" and "tile" in o for o in step["operands"]):
            if step["op"] in ("TINSERT", "TINSERT_FP"):
                idx = {o.get("param"): o.get("scalar") for o in step["operands"]}
                return int(idx.get("indexRow") or 0), int(idx.get("indexCol") or 0)
            break
    return 0, 0


def _last_out_tile(case: dict[str, Any]) -> str:
    for step in reversed(case["program"]):
        for o in step["operands"]:
            if o.get("role") == "out" and "tile" in o:
                return str(o["tile"])
    raise Skip("check without a target: no output tile in the program")


def run_case(case_dir: Path, target: TargetLike = CONFORMANCE_TARGET) -> Verdict:
    """Run one recorded case. A recorded program that breaks a documented constraint the CPU
    simulator does not check (a ConstraintError) runs again on a permissive machine, the
    simulator's behaviour, and is reported as QUIRK with the constraint when it then passes."""
    try:
        return _run_case(case_dir, target)
    except ConstraintError as e:
        v = _run_case(case_dir, target, permissive=True)
        if v.status == "PASS":
            return Verdict(v.case_id, "QUIRK", f"needs permissive mode: {e}")
        return Verdict(v.case_id, v.status, f"{v.detail} (in permissive mode, needed for: {e})")


def _run_case(case_dir: Path, target: TargetLike, permissive: bool = False) -> Verdict:
    case = json.loads((case_dir / "case.json").read_text())
    cid = case["case_id"]
    missing = sorted({op_name(s) for s in case["program"]} - set(REGISTRY))
    if missing:
        return Verdict(cid, "SKIP", "missing " + ", ".join(missing))
    m = make_target(target, permissive=permissive)
    try:
        run = CaseRun(case_dir, case, m)
        try:
            run.setup()
            outputs = run.run()
        except Skip as e:
            return Verdict(cid, "SKIP", str(e))
        except ConstraintError:
            raise  # run_case retries on a permissive machine
        except (IllegalInstruction, PtoMemoryError) as e:
            if not m.target.traits.conformance_reference:
                # the pack records the CPU simulator's programs; a use another target rejects
                # is not a wrong answer there
                return Verdict(cid, "SKIP", f"not legal on {target}: {e}")
            problems = [f"error: {e}"]
        except PtoError as e:
            problems = [f"error: {e}"]
        else:
            problems = check_case(run, outputs)
    finally:
        pop(m)
    return verdict_of(case, case_dir, target, problems)


def verdict_of(case: dict[str, Any], case_dir: Path, target: TargetLike,
               problems: list[str]) -> Verdict:
    """The verdict of a case that ran, from the problems its checks found."""
    cid = case["case_id"]
    if not problems:
        notes = [n for (c, _), (n, _) in RECONSTRUCTED_CONV.items() if c == cid]
        return Verdict(cid, "PASS", "; ".join(notes))
    why = unreproducible(case)
    if why:
        return Verdict(cid, "SKIP", f"not reproducible from the recorded data: {why} "
                                    f"[{problems[0]}]")
    if cid in SIM_DEVIATIONS:
        return Verdict(cid, "QUIRK", f"{SIM_DEVIATIONS[cid]} [{problems[0]}]")
    if case.get("cpu_sim_quirk"):
        notes = "; ".join(case.get("cpu_sim_quirk_notes") or ["cpu simulator quirk"])
        return Verdict(cid, "QUIRK", f"{notes} [{problems[0]}]")
    quirk = sim_quirk(case, case_dir)
    if quirk:
        return Verdict(cid, "QUIRK", f"{quirk} [{problems[0]}]")
    diff = target_difference(case, case_dir, target)
    if diff:
        return Verdict(cid, "DIFF", f"{diff} [{problems[0]}]")
    return Verdict(cid, "FAIL", problems[0])


# ---- documented target differences (a2a3/a5 against the recorded CPU-simulator results) -------

def _tile_of(case: dict[str, Any], param: str) -> dict[str, Any] | None:
    """The tile dict of operand ``param`` of the call of the instruction under test."""
    for st in case["program"]:
        if st["op"] == case["instruction"]:
            for o in st["operands"]:
                if o.get("param") == param and "tile" in o:
                    return dict(case["tiles"][o["tile"]], valid=o.get("valid"))
    return None


def _step_enum(case: dict[str, Any], param: str) -> str | None:
    for st in case["program"]:
        if st["op"] == case["instruction"]:
            for o in st["operands"]:
                if o.get("param") == param and "enum" in o:
                    return str(o.get("name"))
    return None


def _diff_tcmps(case: dict[str, Any]) -> str | None:
    dst, src = _tile_of(case, "dst"), _tile_of(case, "src0")
    if dst is None or src is None or not dst["valid"] or not src["valid"]:
        return None
    per_row = src["cols"] // 8
    if dst["dtype"] == "uint8" and src["valid"] == [src["rows"], src["cols"]] \
            and dst["valid"][1] == per_row:
        return None  # one src row per dst row: both layouts coincide
    return ("TCMPS predicate layout: a2a3/a5 pack src row r's bits into dst row r (the ISA "
            "page's example, the NPU's per-row vcmpvs); the CPU simulator packs whole src rows "
            f"({src['cols']} bits each) into one byte stream laid out with row length "
            f"dst.validCol ({dst['valid'][1]} here)")


def _diff_tsel(case: dict[str, Any]) -> str | None:
    dst, mask = _tile_of(case, "dst"), _tile_of(case, "selMask")
    if dst is None or mask is None or not dst["valid"] or not mask["valid"]:
        return None
    bits = mask["valid"][1] * 8  # the simulator takes 8 bits from each mask element
    if bits == dst["valid"][1] and mask["dtype"] == "uint8":
        return None  # one mask row per dst row: both readings coincide
    return ("TSEL mask layout: a2a3/a5 read dst row r's bits from mask row r (the NPU's "
            "per-row set_cmpmask); the CPU simulator reads one continuous bit stream, 8 bits "
            f"per mask element, next mask row after mask.validCol elements ({bits} bits per "
            f"mask row for {dst['valid'][1]} dst columns here)")


def _diff_tcvt(case: dict[str, Any]) -> str | None:
    dst, src = _tile_of(case, "dst"), _tile_of(case, "src")
    if dst is None or src is None or _step_enum(case, "satMode") != "OFF":
        return None
    if not (src["dtype"].startswith(("float", "bfloat")) and dst["dtype"].startswith(("int",
                                                                                        "uint"))):
        return None
    return ("TCVT float -> int with SaturationMode::OFF: out-of-range and NaN inputs give "
            "INT_MIN (x86-64 cvttsd2si) truncated to the width on the CPU simulator; a2a3/a5 "
            "saturate to the 32-bit range and keep the low bits (the NPU's non-saturating path)")


def _diff_tprint(case: dict[str, Any]) -> str | None:
    if not any(c.get("kind") == "stdout" for c in case["checks"]):
        return None
    return ("TPRINT format: a2a3/a5 print the NPU's format (header, whole tile, separators, print "
            "buffer); the pack records the CPU simulator's 'TPRINT RxC' text of the valid region")


def _diff_tdequant(case: dict[str, Any]) -> str | None:
    dst = _tile_of(case, "dst")
    params = [_tile_of(case, p) for p in ("scale", "offset")]
    if dst is None or not dst["valid"] or dst["valid"][1] <= 1:
        return None
    wide = [p for p in params if p is not None and p["valid"] and p["valid"][1] >= dst["valid"][1]]
    if not wide:
        return None
    return ("TDEQUANT parameters: a2a3/a5 read scale/offset per row (column 0, the manual's form); "
            "the CPU simulator reads a parameter tile as wide as dst element-wise")


def _diff_tpairreducesum(case: dict[str, Any]) -> str | None:
    dst = _tile_of(case, "dst")
    if dst is None or not dst["valid"] or dst["valid"] == [dst["rows"], dst["cols"]]:
        return None
    return ("TPAIRREDUCESUM: a2a3/a5 write dst's valid region only; the CPU simulator fills the "
            f"whole {dst['rows']}x{dst['cols']} dst with 0 first (valid {dst['valid']} here)")


def _diff_trandom(case: dict[str, Any]) -> str | None:
    return ("TRANDOM layout: a5 follows the A5 vector code (a lane's four Philox words side by "
            "side, counter step 64 per chunk); the CPU simulator puts word w of lane l at "
            "column 64*w + l and steps the counter by dst.Cols / 4")


def _diff_mad_order(case: dict[str, Any]) -> str | None:
    c = _tile_of(case, "cMatrix") or _tile_of(case, "cOutMatrix")
    if c is None or c["dtype"] != "float32":
        return None  # integer sums are exact in every order
    mx = case["instruction"].endswith("_MX")
    return ("float accumulation order: the CPU simulator sums one f32 "
            + ("step per k, adding each f64 scaled product" if mx else "fma per k")
            + " from 0 (cpu follows it); "
            + ("a5 rounds the f64 sum of the exact scaled products once" if mx
               else "a2a3/a5 sum in the host's f32 BLAS order"))


#: Instructions whose behaviour on a2a3/a5 is documented to differ from the CPU simulator's
#: (docs/cpu_sim_differences.md). Each entry decides from the case whether the difference
#: applies (None when it does not) and gives the reason. A failing NPU-target case is DIFF only
#: when its entry applies *and* the case passes on cpu; otherwise it stays FAIL.
TARGET_DIFFERENCES: dict[str, Any] = {
    "TCMPS": _diff_tcmps,
    "TSEL": _diff_tsel,
    "TCVT": _diff_tcvt,
    "TPRINT": _diff_tprint,
    "TDEQUANT": _diff_tdequant,
    "TPAIRREDUCESUM": _diff_tpairreducesum,
    "TRANDOM": _diff_trandom,
    # the cube forms that take the simulator's k-loop on cpu only (traits.mad_sequential)
    **{name: _diff_mad_order for name in sorted(get_target(CONFORMANCE_TARGET).traits
                                                 .mad_sequential)},
}


def target_difference(case: dict[str, Any], case_dir: Path, target: TargetLike) -> str | None:
    """The documented difference that explains a failing case on an NPU target, or None."""
    if get_target(target).traits.conformance_reference:
        return None
    rule = TARGET_DIFFERENCES.get(case["instruction"])
    why = rule(case) if rule is not None else None
    if why is None:
        return None
    on_cpu = run_case(case_dir, CONFORMANCE_TARGET)
    return why if on_cpu.status == "PASS" else None


#: ptoisa-identified CPU-simulator deviations the pack's ``cpu_sim_quirk`` flag does not cover:
#: ptoisa follows the ISA / hardware there and reports the case as QUIRK with this reason when
#: it differs (listed in docs/cpu_sim_differences.md). A case that passes is still PASS.
_FP4_RINT = ("TCVT {}->f32: the CPU simulator (and the gen_data golden) round the decoded fp4 "
             "value to an integer (CAST_RINT applied to an exact widening: 1.5 -> 2, -0.5 -> "
             "-0); every fp4 value is exact in f32 and ptoisa keeps it")
_EXP_ZZ_OOB = ("TQUANT MXFP8 NZ: the CPU simulator writes the 34-byte reordered exponent block "
               "into the 32-byte exp_zz tile, 2 bytes past its end, over the next tile in UB "
               "(here max[0]'s low bytes); ptoisa does not write outside a tile")
SIM_DEVIATIONS: dict[str, str] = {
    "tcvt__case25": _FP4_RINT.format("f4E2M1"),
    "tcvt__case27": _FP4_RINT.format("f4E2M1"),
    "tcvt__case29": _FP4_RINT.format("f4E1M2"),
    "tcvt__case31": _FP4_RINT.format("f4E1M2"),
    "tcvt__case30": ("TCVT f32->f4E1M2 with saturation: the CPU simulator (and the golden) "
                     "saturate out-of-range values to +-1.0; the largest finite e1m2 value is "
                     "1.75 (code 0x7), which ptoisa saturates to"),
    "tquant__MxFp8NzReordersExponentsExactly": _EXP_ZZ_OOB,
    "tquant__MxFp8FP16NzReordersExponentsExactly": _EXP_ZZ_OOB,
}

# ---- simulator departures from the ISA pages, recognised from a case's data -------------------
# A case the pack does not flag (``cpu_sim_quirk``) and ptoisa does not list by id (for
# instance one of a generated differential pack) is QUIRK when it differs and meets one of these
# rules: each is a documented departure of the simulator from an ISA page, which ptoisa follows
# on every target (docs/cpu_sim_differences.md, "Departures recognised from the data").

def _template(case: dict[str, Any], name: str) -> str:
    for st in case["program"]:
        if st["op"] == case["instruction"]:
            return str((st.get("template_args") or {}).get(name, "")).rsplit(":", 1)[-1]
    return ""


def _operand(case: dict[str, Any], param: str) -> dict[str, Any] | None:
    for st in case["program"]:
        if st["op"] == case["instruction"]:
            for o in st["operands"]:
                if o.get("param") == param:
                    return dict(o)
    return None


def _quirk_tadddeqrelu(case: dict[str, Any], case_dir: Path) -> str | None:
    dst = _tile_of(case, "dst")
    if dst is None or dst["dtype"] != "float16":
        return None
    expected = [load_array(case_dir, c["expected"]) for c in case.get("checks", [])
                if isinstance(c.get("expected"), dict) and c["expected"].get("dtype") == "float16"]
    if not any(np.isinf(e.astype(np.float32)).any() for e in expected):
        return None
    return ("TADDDEQRELU: the page converts the dequantised sum to f16 with saturation; the CPU "
            "simulator's plain cast gives inf for values beyond 65504")


def _quirk_taxpy(case: dict[str, Any], case_dir: Path) -> str | None:
    dst, src = _tile_of(case, "dst"), _tile_of(case, "src0")
    if dst is None or src is None or (src["dtype"], dst["dtype"]) != ("float16", "float32"):
        return None
    return ("TAXPY f32 += f16 * scalar: the page widens the f16 source to f32 before the multiply; "
            "the CPU simulator rounds the f16 product to f16 first")


def _quirk_tscatter(case: dict[str, Any], case_dir: Path) -> str | None:
    if not _template(case, "maskPattern"):
        return None
    return ("TSCATTER mask form: the page zero-fills the whole dst and scatters each row's "
            "selected elements in that row; the CPU simulator keeps dst and indexes one stream")


def _quirk_tmov(case: dict[str, Any], case_dir: Path) -> str | None:
    if _operand(case, "preQuantScalar") is None:
        return None
    return ("TMOV with preQuantScalar: the page applies the scalar quant word; the CPU simulator "
            "ignores it")


def _quirk_mscatter(case: dict[str, Any], case_dir: Path) -> str | None:
    if _template(case, "Mode") != "Row" or _template(case, "Atomic") != "Max":
        return None
    return ("MSCATTER row mode with Atomic Max: each element is the max with the destination "
            "element it replaces; the CPU simulator compares with the row's first element "
            "(base[idx] for every column)")


#: the fp8 / e8m0 codes with all exponent bits set: NaN (E4M3: S.1111.111; E5M2: S.11111.xx,
#: inf for mantissa 0; E8M0: 0xFF), which the CPU simulator decodes as finite numbers
_FP8_SPECIAL = {"float8_e4m3fn": lambda b: (b & 0x7F) == 0x7F,
                "float8_e5m2": lambda b: (b & 0x7C) == 0x7C,
                "float8_e8m0fnu": lambda b: b == 0xFF}


def _quirk_fp8_specials(case: dict[str, Any], case_dir: Path) -> str | None:
    arrays = [t.get("init") for t in case.get("tiles", {}).values()]
    arrays += [g.get("init") for g in case.get("gm", {}).values()]
    for desc in arrays:
        if not desc or desc.get("dtype") not in _FP8_SPECIAL or "file" not in desc:
            continue
        raw = np.load(case_dir / desc["file"], allow_pickle=False).view(np.uint8)
        if _FP8_SPECIAL[desc["dtype"]](raw).any():
            return (f"{desc['dtype']} input with an all-ones exponent: NaN/inf by the type's "
                    "definition (OCP fp8, E8M0 0xFF = NaN); the CPU simulator decodes E4M3 0x7F "
                    "as 480, E5M2 0x7C as 65536 and E8M0 0xFF as 2^128")
    return None


#: instruction -> rule deciding whether a documented simulator departure applies to a case
SIM_QUIRKS: dict[str, Any] = {
    "TADDDEQRELU": _quirk_tadddeqrelu,
    "TAXPY": _quirk_taxpy,
    "TSCATTER": _quirk_tscatter,
    "TMOV": _quirk_tmov,
    "MSCATTER": _quirk_mscatter,
}


def sim_quirk(case: dict[str, Any], case_dir: Path) -> str | None:
    """The documented simulator departure that explains a differing case, or None."""
    rule = SIM_QUIRKS.get(case["instruction"])
    why = rule(case, case_dir) if rule is not None else None
    return why or _quirk_fp8_specials(case, case_dir)


#: cases whose expectation depends on something the pack did not record (reported as SKIP with
#: the reason when they do not pass; a case that passes is still PASS).
NOT_REPRODUCIBLE: dict[str, str] = {
    "twait__CompareOps":
        "the C++ test sets the signal word between the five TWAITs (GE 100, NE 0, GT 50, LE 20, "
        "LT 10) from host code the trace does not record; only its final value (5) is in the "
        "pack, which cannot satisfy GE 100 or GT 50",
    "tpushpop_vc_nosplit__vector_to_cube_inactive_aiv1_is_noop_in_no_split_mode":
        "which vector sub-block ran each TPUSH is not recorded; the expected tile is the "
        "second TPUSH's, so the first one came from the inactive AIV1 (a no-op), which "
        "program order alone cannot tell",
}

def _timg2col_padding_case(tile: Any) -> None:
    from .isa.layout.img2col import Img2colConfig

    a = tile.array()  # [1, 1, 3, 4, 8]: pixel (h, w) channel c holds (h*4 + w)*10 + c
    h, w, c = np.meshgrid(np.arange(3), np.arange(4), np.arange(8), indexing="ij")
    a[0, 0] = ((h * 4 + w) * 10 + c).astype(a.dtype)
    tile.img2col = Img2colConfig(fmapH=3, fmapW=4, padList=(1, 0, 1, 0), filterH=2, filterW=2,
                                 padValue=-1.0)


#: ConvTiles of in-code tests whose content and Img2colTileConfig the pack did not record
#: (``"bound": false``: the C++ test fills them before the traced calls). They are rebuilt here
#: from the test's name and its expected output, and the case is reported PASS with this note:
#: the expectation then checks the im2col ordering, padding and (posM, posK) addressing, not
#: the recorded config.
RECONSTRUCTED_CONV: dict[tuple[str, str], tuple[str, Any]] = {
    ("timg2col__ManualMetadataPathMatchesReferenceWithPadding", "t0"): (
        "src content and config reconstructed (not recorded): 3x4 map, C0 8, pixel (h, w) "
        "channel c = (h*4 + w)*10 + c, 2x2 filter, padList (left 1, right 0, top 1, bottom 0), "
        "stride/dilation 1, padValue -1", _timg2col_padding_case),
}

_MULTI_CORE = "several simulated cores"


def unreproducible(case: dict[str, Any]) -> str | None:
    """Why a case that did not pass cannot be reproduced from the recorded data, or None."""
    cid = case["case_id"]
    if cid in NOT_REPRODUCIBLE:
        return NOT_REPRODUCIBLE[cid]
    ops = {s["op"] for s in case["program"]}
    if not any(REGISTRY[o].sync == "pipe" for o in ops if o in REGISTRY):
        return None
    if any(_MULTI_CORE in n for n in case.get("notes") or []):
        return ("multi-core trace: the program lists the calls of the cube core and both "
                "vector sub-blocks in trace order, not an order one thread can run (a TPOP "
                "before the TPUSH it waits for, or more TPUSHes than free slots), and which "
                "core ran each call is not recorded")
    steps = unrecorded_pushes(case)
    if steps:
        return (f"the TPUSH at step(s) {', '.join(map(str, steps))} send(s) tile content that "
                "untraced C++ code wrote between pushes (snapshots record only the first two "
                "calls), and the failing check compares what was popped from them")
    return None


def unrecorded_pushes(case: dict[str, Any]) -> list[int]:
    """TPUSH steps re-sending a tile that no traced step wrote since its last push and that
    have no snapshot: its content came from untraced host code."""
    snaps = {sn["step"] for sn in case.get("snapshots") or []}
    pushed: set[str] = set()
    out = []
    for st in case["program"]:
        tiles = [o["tile"] for o in st["operands"] if "tile" in o]
        if st["op"] == "TPUSH":
            for t in tiles:
                if t in pushed and st["step"] not in snaps:
                    out.append(st["step"])
                pushed.add(t)
        else:
            writes = tiles if st["op"] == "TPOP" else \
                [o["tile"] for o in st["operands"] if "tile" in o and o.get("role") == "out"]
            pushed -= set(writes)
    return out


def case_dirs(root: Path) -> list[Path]:
    root = Path(root)
    if (root / "case.json").is_file():
        return [root]
    return sorted(p.parent for p in root.glob("**/case.json"))


def run_pack(root: Path, target: TargetLike = CONFORMANCE_TARGET, *, out: Any = None,
             only: Iterable[str] = ()) -> Summary:
    out = out or sys.stdout
    summary = Summary()
    wanted = {w.lower() for w in only}
    dirs = [d for d in case_dirs(root) if not wanted or d.parent.name.lower() in wanted
            or d.name in wanted]
    with Progress(len(dirs), f"conformance ({target})") as bar:
        for d in dirs:
            try:
                v = run_case(d, target)
            except Exception as e:  # noqa: BLE001 - a crash in one case must not hide others
                v = Verdict(d.name, "FAIL", f"internal error: {type(e).__name__}: {e}")
            summary.verdicts.append(v)
            line = f"{v.status} {v.case_id}" + (f": {v.detail}" if v.detail else "")
            bar.before_output(out)
            print(line, file=out)
            bar.update()
    q = summary.count("QUIRK")
    if q:
        print(f"{q} cpu_sim_quirk cases differ where ptoisa follows the hardware "
              "(listed as QUIRK above, each with its reason)", file=out)
    d = summary.count("DIFF")
    diffs = f", {d} documented target differences (DIFF)" if d else ""
    print(f"{summary.count('PASS')} passed, {summary.count('FAIL')} failed, "
          f"{summary.count('SKIP')} skipped{diffs} (target {target})", file=out)
    return summary

"""The pipe of every (instruction, operand locations) form against pto-isa's op -> pipe table.

EXPECTED is written by hand from pto-isa's ``include/pto/common/event.hpp`` (commit 3186c38,
``PTO_DEFINE_OP_PIPE``): each of its ops that names a form of one of our entries, with the
operand locations that form has. The sanitizer, ``ptoisa sync`` and the cycle model all read
``Instr.pipe_on``: a form on the wrong pipe is a missed race and a false one.
"""

from __future__ import annotations

import numpy as np
import pytest

import ptoisa as pto
from ptoisa import GlobalTensor
from ptoisa.dtypes import dtype
from ptoisa.enums import Pipe, TileType
from ptoisa.isa import REGISTRY
from ptoisa.isa.registry import PipeForms
from ptoisa.sanitizer import Sanitizer
from ptoisa.targets import TARGET_NAMES, get_target
from ptoisa.tile import Tile, TileSpec

# event.hpp op -> (our entry, {operand: location or None for "not given"}, its pipe)
EXPECTED = {
    "TLOAD (Vec)": ("TLOAD", {"dst": "Vec"}, "PIPE_MTE2"),
    "TLOAD (Mat)": ("TLOAD", {"dst": "Mat"}, "PIPE_MTE2"),
    "TSTORE_VEC": ("TSTORE", {"src": "Vec"}, "PIPE_MTE3"),
    "TSTORE_MAT": ("TSTORE", {"src": "Mat"}, "PIPE_MTE3"),
    "TSTORE_ACC": ("TSTORE", {"src": "Acc"}, "PIPE_FIX"),
    "TMOV_V2V": ("TMOV", {"src": "Vec", "dst": "Vec"}, "PIPE_V"),
    "TMOV_V2M": ("TMOV", {"src": "Vec", "dst": "Mat"}, "PIPE_FIX"),
    "TMOV_M2B": ("TMOV", {"src": "Mat", "dst": "Bias"}, "PIPE_MTE1"),
    "TMOV_M2L": ("TMOV", {"src": "Mat", "dst": "Left"}, "PIPE_MTE1"),
    "TMOV_M2R": ("TMOV", {"src": "Mat", "dst": "Right"}, "PIPE_MTE1"),
    "TMOV_M2S": ("TMOV", {"src": "Mat", "dst": "Scaling"}, "PIPE_FIX"),
    "TMOV_A2V": ("TMOV", {"src": "Acc", "dst": "Vec"}, "PIPE_FIX"),
    "TMOV_A2M": ("TMOV", {"src": "Acc", "dst": "Mat"}, "PIPE_FIX"),
    "TEXTRACT_V2M": ("TEXTRACT", {"src": "Vec", "dst": "Mat"}, "PIPE_FIX"),
    "TEXTRACT_M2LR (Left)": ("TEXTRACT", {"src": "Mat", "dst": "Left"}, "PIPE_MTE1"),
    "TEXTRACT_M2LR (Right)": ("TEXTRACT", {"src": "Mat", "dst": "Right"}, "PIPE_MTE1"),
    "TEXTRACT_A2M": ("TEXTRACT", {"src": "Acc", "dst": "Mat"}, "PIPE_FIX"),
    "TINSERT_A2M": ("TINSERT", {"src": "Acc", "dst": "Mat"}, "PIPE_FIX"),
    "TEXPANDS": ("TEXPANDS", {"dst": "Vec"}, "PIPE_V"),
    "TEXPANDS_MAT": ("TEXPANDS", {"dst": "Mat"}, "PIPE_MTE2"),
    "TFILLPAD_VEC": ("TFILLPAD", {"dst": "Vec", "src": "Vec"}, "PIPE_V"),
    "TFILLPAD_MAT": ("TFILLPAD", {"dst": "Mat", "src": "Mat"}, "PIPE_MTE2"),
    "MGATHER_VEC": ("MGATHER", {"dst": "Vec"}, "PIPE_V"),
    "MGATHER_MAT": ("MGATHER", {"dst": "Mat"}, "PIPE_MTE2"),
    "MSCATTER": ("MSCATTER", {"src": "Vec"}, "PIPE_V"),
    # event.hpp has one TCI op (PIPE_S): the form without tmp is the scalar loop it describes
    "TCI": ("TCI", {"dst": "Vec", "tmp": None}, "PIPE_S"),
    "TPREFETCH": ("TPREFETCH", {"dst": "Vec"}, "PIPE_MTE2"),
    "TRESHAPE": ("TRESHAPE", {"dst": "Vec", "src": "Vec"}, "PIPE_S"),
    "TMATMUL": ("TMATMUL", {"cMatrix": "Acc"}, "PIPE_M"),
    "TGEMV": ("TGEMV", {"cMatrix": "Acc"}, "PIPE_M"),
    "TIMG2COL": ("TIMG2COL", {"dst": "Left", "src": "Mat"}, "PIPE_MTE1"),
    "TSCATTER": ("TSCATTER", {"dst": "Vec"}, "PIPE_V"),
    "TGATHER": ("TGATHER", {"dst": "Vec"}, "PIPE_V"),
    "TROWSUM": ("TROWSUM", {"dst": "Vec"}, "PIPE_V"),
    "TQUANT": ("TQUANT", {"dst": "Vec"}, "PIPE_V"),
    "THISTOGRAM": ("THISTOGRAM", {"dst": "Vec"}, "PIPE_V"),
}

# forms event.hpp does not list, with where their pipe comes from instead
OTHER_SOURCES = {
    # a2a3 include/pto/npu/a2a3/TCI.hpp: the tmp form is vector_dup / vadds / PIPE_V barriers
    "TCI with tmp": ("TCI", {"dst": "Vec", "tmp": "Vec"}, "PIPE_V"),
}


def _tile(loc: str) -> Tile:
    return Tile.of(TileSpec(TileType[loc], dtype("f32"), 16, 16))


def _values(name: str, locs: dict[str, str | None]) -> list[object]:
    ins = REGISTRY[name]
    return [(_tile(locs[o.name]) if locs.get(o.name) else None) for o in ins.operands]


@pytest.mark.parametrize("form", sorted({**EXPECTED, **OTHER_SOURCES}))
def test_form_runs_on_the_header_pipe(form: str) -> None:
    name, locs, pipe = {**EXPECTED, **OTHER_SOURCES}[form]
    assert REGISTRY[name].pipe_on(_values(name, locs)) is Pipe(pipe), form


def _paths(name: str) -> set[tuple[str, str]]:
    out: set[tuple[str, str]] = set()
    for t in TARGET_NAMES:
        r = get_target(t).legality.get(name)
        ex = {} if r is None else r.extra
        for a, b in ex.get("paths") or ex.get("moves") or ():
            out.add((a.name, b.name))
    return out


@pytest.mark.parametrize("name", ["TMOV", "TEXTRACT", "TINSERT"])
def test_every_legal_move_has_a_declared_pipe(name: str) -> None:
    forms = REGISTRY[name].pipe_of
    assert isinstance(forms, PipeForms)
    missing = sorted(p for p in _paths(name) if p not in forms.forms)
    assert not missing, f"{name}: no pipe declared for {missing}"


def test_a_form_outside_the_table_is_the_entrys_pipe() -> None:
    # syncgen asks with operands whose type is unknown: the entry's own pipe, not an error
    assert REGISTRY["TMOV"].pipe_on([None, None, None]) is REGISTRY["TMOV"].pipe


def test_table_names_operands_and_locations() -> None:
    with pytest.raises(RuntimeError, match="must name a location"):
        PipeForms(("src", "dst"), {("Mat", "L0A"): Pipe.MTE1})


# ---- kernels: the flag the old table asked for is a race, the header's pipe is clean ----------

P = pto.Pipe


def _g(a: np.ndarray, r: int, c: int) -> GlobalTensor:
    return GlobalTensor(a, (1, 1, 1, r, c), (r * c, r * c, r * c, c, 1))


def _flag(pair: tuple[Pipe, Pipe] | None) -> None:
    if pair is not None:
        pto.SET_FLAG(*pair, 0)
        pto.WAIT_FLAG(*pair, 0)


def _m2s(pair, a, b):  # TLOAD Mat -> TMOV Mat->Scaling
    m, s = Tile(TileType.Mat, np.uint64, 1, 16), Tile(TileType.Scaling, np.uint64, 1, 16)
    pto.TLOAD(m, _g(a, 1, 16))
    _flag(pair)
    pto.TMOV(s, m)


def _expands_mat(pair, a, b):  # TEXPANDS on a Mat tile -> TSTORE of it
    m = Tile(TileType.Mat, np.float32, 16, 16)
    pto.TEXPANDS(m, 3.0)
    _flag(pair)
    pto.TSTORE(_g(b, 16, 16), m)


def _fillpad_mat(pair, a, b):  # TLOAD Mat, TFILLPAD into another Mat tile -> TSTORE
    src = Tile(TileType.Mat, np.float32, 16, 16, valid=(16, 8))
    dst = Tile(TileType.Mat, np.float32, 16, 16, pad=pto.PadValue.Zero)
    pto.TLOAD(src, GlobalTensor(a, (1, 1, 1, 16, 8), (256, 256, 256, 16, 1)))
    pto.TFILLPAD(dst, src)
    _flag(pair)
    pto.TSTORE(_g(b, 16, 16), dst)


def _mscatter(pair, a, b):  # TLOAD src and indices -> MSCATTER reads them
    src, idx = Tile(TileType.Vec, np.float32, 8, 8), Tile(TileType.Vec, np.int32, 1, 8)
    pto.TLOAD(src, _g(a, 8, 8))
    pto.TLOAD(idx, GlobalTensor(np.arange(8, dtype=np.int32)[::-1].copy(), (1, 1, 1, 1, 8),
                                (8, 8, 8, 8, 1)))
    _flag(pair)
    pto.MSCATTER(GlobalTensor(b.reshape(-1, 8)), src, idx)


def _mgather(pair, a, b):  # TLOAD indices -> MGATHER into a Vec tile -> TSTORE
    idx, dst = Tile(TileType.Vec, np.int32, 1, 8), Tile(TileType.Vec, np.float32, 8, 8)
    pto.TLOAD(idx, GlobalTensor(np.arange(8, dtype=np.int32), (1, 1, 1, 1, 8), (8, 8, 8, 8, 1)))
    _flag(pair)
    pto.MGATHER(dst, GlobalTensor(a.reshape(-1, 8)), idx)
    pto.SET_FLAG(P.V, P.MTE3, 1)
    pto.WAIT_FLAG(P.V, P.MTE3, 1)
    pto.TSTORE(_g(b, 8, 8), dst)


def _tci_tmp(pair, a, b):  # TCI with tmp (vector code) -> TSTORE
    dst = Tile(TileType.Vec, np.int32, 1, 64)
    tmp = Tile(TileType.Vec, np.float32, 1, 256)
    pto.TCI(dst, 5, tmp)
    _flag(pair)
    pto.TSTORE(GlobalTensor(b.view(np.int32)[:64], (1, 1, 1, 1, 64), (64, 64, 64, 64, 1)), dst)


def _v2m(name):  # TLOAD Vec -> TMOV/TEXTRACT Vec->Mat -> TMOV Mat->Left (a5)
    # (the Mat tile's reader is the cube's MTE1 move: A5 stores no Mat tile, TSTORE.md)
    def k(pair, a, b):
        v = Tile(TileType.Vec, np.float32, 16, 16)
        m = Tile(TileType.Mat, np.float32, 16, 16, "ColMajor", None, "RowMajor")
        pto.TLOAD(v, _g(a, 16, 16))
        pto.SET_FLAG(P.MTE2, P.FIX, 1)
        pto.WAIT_FLAG(P.MTE2, P.FIX, 1)
        if name == "TMOV":
            pto.TMOV(m, v)
        else:
            pto.TEXTRACT(m, v, 0, 0)
        _flag(pair)
        pto.TMOV(pto.TileLeft(np.float32, 16, 16), m)
    return k


# form -> (kernel, the flag the old table asked for, the flag the header's pipe needs, target)
KERNELS = {
    "TMOV_M2S": (_m2s, (P.MTE2, P.MTE1), (P.MTE2, P.FIX), "a2a3"),
    "TEXPANDS_MAT": (_expands_mat, (P.V, P.MTE3), (P.MTE2, P.MTE3), "a2a3"),
    "TFILLPAD_MAT": (_fillpad_mat, (P.V, P.MTE3), (P.MTE2, P.MTE3), "a2a3"),
    "MSCATTER": (_mscatter, (P.MTE2, P.MTE3), (P.MTE2, P.V), "a2a3"),
    "MGATHER_VEC": (_mgather, None, (P.MTE2, P.V), "a2a3"),
    "TCI with tmp": (_tci_tmp, (P.S, P.MTE3), (P.V, P.MTE3), "a2a3"),
    "TMOV_V2M": (_v2m("TMOV"), None, (P.FIX, P.MTE1), "a5"),
    "TEXTRACT_V2M": (_v2m("TEXTRACT"), None, (P.FIX, P.MTE1), "a5"),
}


@pytest.mark.parametrize("form", sorted(KERNELS))
def test_kernel_synchronised_for_the_wrong_pipe_races(form: str) -> None:
    kernel, old, new, target = KERNELS[form]
    a = np.arange(256, dtype=np.float32)
    a64 = np.zeros(16, np.uint64)
    src = a64 if form == "TMOV_M2S" else a
    bad = pto.launch(kernel, old, src, np.zeros(256, np.float32), target=target,
                     sanitize=Sanitizer())
    assert bad and {f.kind for f in bad} == {"race"}, bad.render()
    good = pto.launch(kernel, new, src, np.zeros(256, np.float32), target=target,
                      sanitize=Sanitizer())
    assert not good, good.render()

"""What a sanitized run can be trusted with: ops it skipped are named, an empty run is not
clean, a GM reload ordered by a flag only is a hazard (PTOAS #730), an event set twice before
its wait, an out-of-bounds view named at the load that would read it, and the sync mode a
first eager run is checked in. Each: the kernel with the bug is found, the fixed one is clean."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import ptoisa as pto
from ptoisa import GlobalTensor, Tile, TileType
from ptoisa.sanitizer import Sanitizer, SanitizerError
from ptoisa.sanitizer.syncgen import insert_sync

P = pto.Pipe
HERE = Path(__file__).resolve().parent
VEC = ("!pto.tile_buf<loc=vec, dtype=f32, rows=16, cols=16, v_row=16, v_col=16, "
       "blayout=row_major, slayout=none_box, fractal=512, pad=0>")
PART = "!pto.partition_tensor_view<16x16xf32>"


def _g(a: np.ndarray) -> GlobalTensor:
    return GlobalTensor(a, (1, 1, 1, 16, 16), (256, 256, 256, 16, 1))


def _copy_pto(middle: str) -> str:
    """%x -> tile -> %z with explicit flags; ``middle`` goes between the load and the store."""
    return f"""module {{
  func.func @copy(%x: !pto.ptr<f32>, %z: !pto.ptr<f32>) {{
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c16 = arith.constant 16 : index
    %vx = pto.make_tensor_view %x, shape = [%c16, %c16], strides = [%c16, %c1] : !pto.tensor_view<?x?xf32>
    %vz = pto.make_tensor_view %z, shape = [%c16, %c16], strides = [%c16, %c1] : !pto.tensor_view<?x?xf32>
    %px = pto.partition_view %vx, offsets = [%c0, %c0], sizes = [%c16, %c16] : !pto.tensor_view<?x?xf32> -> {PART}
    %pz = pto.partition_view %vz, offsets = [%c0, %c0], sizes = [%c16, %c16] : !pto.tensor_view<?x?xf32> -> {PART}
    %a = pto.alloc_tile : {VEC}
    pto.tload ins(%px : {PART}) outs(%a : {VEC})
{middle}
    pto.set_flag[<PIPE_MTE2>, <PIPE_MTE3>, <EVENT_ID0>]
    pto.wait_flag[<PIPE_MTE2>, <PIPE_MTE3>, <EVENT_ID0>]
    pto.tstore ins(%a : {VEC}) outs(%pz : {PART})
    return
  }}
}}
"""  # noqa: E501


def _run_pto(text: str, **kw) -> pto.sanitizer.Report:
    prog = pto.load(text, target="a2a3", filename="k.pto")
    san = Sanitizer(**kw)
    prog.copy(np.ones((16, 16), np.float32), np.zeros((16, 16), np.float32), sanitize=san)
    return san.report


# ---- 2: ops the sanitizer does not model are named; an empty run is not clean ----------------

def test_skipped_ops_are_listed_as_not_checked():
    tokens = '    pto.mem_bar "VST_VLD"\n    pto.auto_sync_tail_hint'
    r = _run_pto(_copy_pto(tokens))
    assert not r.findings and not r.clean
    assert list(r.unchecked) == ["pto.mem_bar", "pto.auto_sync_tail_hint"]
    text = str(r)
    assert "k.pto:12:5: note: not checked: pto.mem_bar: a UB memory fence" in text
    assert text.endswith("sanitizer: no findings (not checked: pto.mem_bar, "
                         "pto.auto_sync_tail_hint)")
    # without them the same kernel is clean
    clean = _run_pto(_copy_pto(""))
    assert clean.clean and str(clean) == "sanitizer: no findings"


def test_a_run_that_executed_nothing_is_not_clean():
    r = pto.launch(lambda: None, sanitize=Sanitizer())
    assert not r and not r.clean and r.executed == 0
    assert str(r) == "sanitizer: nothing was executed, so nothing was checked"

    def one(x):
        pto.TLOAD(Tile(TileType.Vec, np.float32, 16, 16), _g(x))

    r = pto.launch(one, np.ones(256, np.float32), sanitize=Sanitizer())
    assert r.clean and r.executed == 1


def test_cli_prints_what_it_did_not_check(tmp_path, capsys):
    from ptoisa.cli import main

    f = tmp_path / "k.pto"
    f.write_text(_copy_pto('    pto.mem_bar "VST_VLD"'))
    code = main(["run", str(f), "--sanitize", "--arg", "x=zeros:16x16:f32",
                 "--arg", "z=zeros:16x16:f32"])
    err = capsys.readouterr().err
    assert code == 0 and "not checked: pto.mem_bar" in err


# ---- 3: a GM reload ordered by a flag only (PTOAS #730) --------------------------------------

def _reload(x, z, order):
    """Store a tile to GM and load it back on the same core."""
    a, b = Tile(TileType.Vec, np.float32, 16, 16), Tile(TileType.Vec, np.float32, 16, 16)
    pto.TLOAD(a, _g(x))
    pto.SET_FLAG(P.MTE2, P.MTE3, 0)
    pto.WAIT_FLAG(P.MTE2, P.MTE3, 0)
    pto.TSTORE(_g(z), a)
    if order == "flag":
        pto.SET_FLAG(P.MTE3, P.MTE2, 1)
        pto.WAIT_FLAG(P.MTE3, P.MTE2, 1)
    elif order == "drain":
        pto.PIPE_BARRIER(P.ALL)
    pto.TLOAD(b, _g(z))


@pytest.mark.parametrize("order,kinds", [("flag", ["gm-visibility"]), ("none", ["race"]),
                                         ("drain", [])])
def test_gm_reload_needs_a_full_drain(order, kinds):
    x, z = np.ones(256, np.float32), np.zeros(256, np.float32)
    r = pto.launch(_reload, x, z, order, target="a2a3", sanitize=Sanitizer())
    assert [f.kind for f in r] == kinds, r.render()
    if r:
        f = r.findings[0]
        assert (f.site.op, f.other.op, f.hazard) == ("TLOAD", "TSTORE", "RAW")
        assert "pto.PIPE_BARRIER(pto.Pipe.ALL)" in f.fix
    if order == "flag":
        assert "PTOAS #730" in r.findings[0].message


def test_auto_sync_program_is_not_blamed_for_the_reload():
    # PTOAS inserts the synchronisation of a program without any: not this check's concern
    x, z = np.ones(256, np.float32), np.zeros(256, np.float32)
    assert not pto.launch(_reload, x, z, "none", sanitize=Sanitizer(sync="auto"))


def test_ptoisa_sync_drains_before_a_gm_reload():
    text = "\n".join(ln for ln in (HERE / "gm_roundtrip.pto").read_text().splitlines()
                     if "_flag[" not in ln)
    out = insert_sync(text, target="a2a3")
    assert "pto.barrier <PIPE_ALL>\n    pto.tload ins(%pz" in out
    assert "pto.set_flag[<PIPE_MTE3>, <PIPE_MTE2>" not in out
    prog = pto.load(out, target="a2a3", filename="synced.pto")
    san = Sanitizer(sync="strict")
    prog.roundtrip(np.ones((16, 16), np.float32), np.zeros((16, 16), np.float32), sanitize=san)
    assert san.report.clean, str(san.report)


# ---- 4: an event set twice before its wait ---------------------------------------------------

def _two_tiles(x, z, second_id):
    a, b = Tile(TileType.Vec, np.float32, 16, 16), Tile(TileType.Vec, np.float32, 16, 16)
    pto.TLOAD(a, _g(x))
    pto.SET_FLAG(P.MTE2, P.MTE3, 0)
    pto.TLOAD(b, _g(x))
    pto.SET_FLAG(P.MTE2, P.MTE3, second_id)
    pto.WAIT_FLAG(P.MTE2, P.MTE3, 0)
    pto.TSTORE(_g(z), a)
    pto.WAIT_FLAG(P.MTE2, P.MTE3, second_id)
    pto.TSTORE(_g(z), b)


def test_setting_an_event_twice_before_its_wait():
    x, z = np.ones(256, np.float32), np.zeros(256, np.float32)
    r = pto.launch(_two_tiles, x, z, 0, sanitize=Sanitizer())
    (f,) = r.of("double-set")
    assert f.site.op == f.other.op == "SET_FLAG" and f.loc[1] == f.other.loc[1] + 2
    assert "event 0 from PIPE_MTE2 to PIPE_MTE3" in f.message and "still occupied" in f.message
    # the fix: another id for the second tile
    assert pto.launch(_two_tiles, x, z, 1, sanitize=Sanitizer()).clean


# ---- 5: an out-of-bounds view names the access that would read it ----------------------------

def test_oob_view_names_where_it_is_made_and_the_load_that_reads_it():
    text = (HERE / "gm_roundtrip.pto").read_text()
    made = "%px = pto.partition_view %vx, offsets = [%c0, %c0]"
    assert made in text
    bad = text.replace(made, "%px = pto.partition_view %vx, offsets = [%c1, %c0]")

    def run(t):
        prog = pto.load(t, target="a2a3", filename="v.pto")
        prog.roundtrip(np.ones((16, 16), np.float32), np.zeros((16, 16), np.float32),
                       sanitize=Sanitizer())

    with pytest.raises(SanitizerError) as e:
        run(bad)
    (f,) = e.value.report
    assert f.kind == "oob" and f.loc.line == 11  # the partition_view
    assert "dim 0 [1, 17) outside the view's extent 16" in f.message
    assert f.other is not None and (f.other.op, f.other.loc.line) == ("pto.tload", 15)
    assert "pto.tload at v.pto:15:5 would read it" in f.message
    # the fixed view: no oob finding (the flag-only reload of this file is another matter)
    fixed = text.replace("pto.set_flag[<PIPE_MTE3>, <PIPE_MTE2>, <EVENT_ID1>]",
                         "pto.barrier <PIPE_ALL>").replace(
                         "    pto.wait_flag[<PIPE_MTE3>, <PIPE_MTE2>, <EVENT_ID1>]\n", "")
    run(fixed)


# ---- 6: a first eager run without a single flag is checked as auto-synchronised --------------

def _first(x, z, flags):
    a = Tile(TileType.Vec, np.float32, 16, 16)
    b = Tile(TileType.Vec, np.float32, 16, 16)
    pto.TLOAD(a, _g(x))
    if flags:
        pto.SET_FLAG(P.MTE2, P.V, 0)
        pto.WAIT_FLAG(P.MTE2, P.V, 0)
    pto.TADD(b, a, a)
    pto.TSTORE(_g(z), b)  # (no V -> MTE3 flag: a race when hand-synchronised)


def test_eager_kernel_without_sync_is_checked_as_auto_synchronised():
    x, z = np.ones(256, np.float32), np.zeros(256, np.float32)
    r = pto.launch(_first, x, z, False, sanitize=Sanitizer())
    assert not r and "checked as auto-synchronised" in str(r)
    assert "2 race(s) between the pipes of a core not reported" in r.notes[0]
    assert pto.launch(_first, x, z, False, sanitize=True) is not None  # does not raise
    # asked for: both races
    manual = pto.launch(_first, x, z, False, sanitize=Sanitizer(sync="manual"))
    assert [f.hazard for f in manual] == ["RAW", "RAW"]
    # one flag makes it hand-synchronised: the missing V -> MTE3 flag is found
    r = pto.launch(_first, x, z, True, sanitize=Sanitizer())
    assert [(f.site.op, f.other.op) for f in r] == [("TSTORE", "TADD")] and not r.notes


def test_auto_synchronised_eager_kernel_still_checks_blocks():
    def k(x, z):
        a = Tile(TileType.Vec, np.float32, 16, 16)
        pto.TLOAD(a, _g(x))
        pto.TSTORE(_g(z), a)  # every block stores the same tile

    x, z = np.ones(256, np.float32), np.zeros(256, np.float32)
    r = pto.launch(k, x, z, blocks=2, sanitize=Sanitizer())
    assert [f.kind for f in r] == ["race"] and "between blocks" in r.findings[0].message

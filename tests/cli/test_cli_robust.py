"""Bad input to ``ptoisa run`` (and the Python API under it) gets one line, never a traceback,
and never loses results: issue 9, items 13-15 and the launch part of 17."""

from __future__ import annotations

import errno
import time

import numpy as np
import pytest

import ptoisa as pto
from ptoisa import TileType, hostmem
from ptoisa.cli import EXIT_INTERNAL, main
from ptoisa.interp import Program
from ptoisa.text import parse

TB = ("!pto.tile_buf<loc=vec, dtype=f32, rows=16, cols=16, v_row=16, v_col=16, "
      "blayout=row_major, slayout=none_box, fractal=512, pad=0>")
PV = "!pto.partition_tensor_view<16x16xf32>"
TV = "!pto.tensor_view<?x?xf32>"
# out = 2 * a for every block (all blocks store the same window); block 0 stores it again
# inside an scf.if on the block index: lockstep cannot take that branch for all blocks
KERNEL = f"""module {{
  func.func @k(%a: !pto.ptr<f32>, %out: !pto.ptr<f32>, %n: i32, %x: f16, %i: index, %u: ui8) {{
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c16 = arith.constant 16 : index
    %va = pto.make_tensor_view %a, shape = [%c16, %c16], strides = [%c16, %c1] : {TV}
    %vo = pto.make_tensor_view %out, shape = [%c16, %c16], strides = [%c16, %c1] : {TV}
    %pa = pto.partition_view %va, offsets = [%c0, %c0], sizes = [%c16, %c16] : {TV} -> {PV}
    %po = pto.partition_view %vo, offsets = [%c0, %c0], sizes = [%c16, %c16] : {TV} -> {PV}
    %t = pto.alloc_tile : {TB}
    pto.tload ins(%pa : {PV}) outs(%t : {TB})
    pto.tadd ins(%t, %t : {TB}, {TB}) outs(%t : {TB})
    pto.tstore ins(%t : {TB}) outs(%po : {PV})
    %bid = pto.get_block_idx
    %z = arith.constant 0 : i64
    %first = arith.cmpi eq, %bid, %z : i64
    scf.if %first {{
      pto.tstore ins(%t : {TB}) outs(%po : {PV})
    }}
    return
  }}
}}
"""
A = np.arange(256, dtype=np.float32).reshape(16, 16)
SCALARS = {"n": "5", "x": "1.5", "i": "7", "u": "255"}


@pytest.fixture
def kfile(tmp_path):
    (tmp_path / "k.pto").write_text(KERNEL)
    np.save(tmp_path / "a.npy", A)
    return tmp_path


def run(d, *extra: str, out: str = "zeros:16x16:f32", **scalars: str) -> list[str]:
    argv = ["run", str(d / "k.pto"), "--target", "cpu", "--arg", f"a={d / 'a.npy'}",
            "--arg", f"out={out}"]
    for k, v in {**SCALARS, **scalars}.items():
        argv += ["--arg", f"{k}={v}"]
    return [*argv, *extra]


def one_line_error(capsys, rc: int, want: str) -> str:
    cap = capsys.readouterr()
    err = cap.err.strip()
    assert rc == 1, err
    assert want in err, err
    assert "Traceback" not in err and len(err.splitlines()) == 1, err
    return err


# ---- 13: sizes against host memory, up front -------------------------------------------------

def test_zeros_larger_than_host_memory(kfile, capsys, monkeypatch):
    monkeypatch.setattr(hostmem, "available_bytes", lambda: 1 << 30)
    rc = main(run(kfile, out="zeros:100000x100000:f32"))
    # 100000 * 100000 * 4 bytes = 4e10 = 37.25 GiB
    one_line_error(capsys, rc, "argument %out (zeros:100000x100000:f32) needs 37.3 GiB of host "
                               "memory; 1.0 GiB available")


def test_npy_header_checked_before_loading(kfile, capsys, monkeypatch):
    monkeypatch.setattr(hostmem, "available_bytes", lambda: 1000)  # a.npy holds 1024 bytes
    one_line_error(capsys, main(run(kfile)), "needs 1.0 KiB of host memory; 1000 bytes")


def test_huge_block_count_refused_at_once(kfile, capsys):
    t0 = time.perf_counter()
    rc = main(run(kfile, "--blocks", "1000000000"))
    err = one_line_error(capsys, rc, "a lockstep launch of 1000000000 blocks")
    assert "--lockstep off" in err and time.perf_counter() - t0 < 2


def test_launch_and_program_run_check_lockstep_storage():
    ran = []
    with pytest.raises(hostmem.HostMemoryError, match="lockstep launch of 1000000000 blocks"):
        pto.launch(lambda: ran.append(1), blocks=10**9)
    assert ran == []
    prog = Program(parse(KERNEL, "k.pto"), "cpu")
    out = np.zeros((16, 16), np.float32)
    with pytest.raises(hostmem.HostMemoryError, match="needs .* TiB of host memory"):
        prog.k(A, out, 1, 1.0, 1, 1, blocks=10**9)
    assert not out.any()


def test_available_bytes_reads_the_host():
    avail = hostmem.available_bytes()
    assert avail is None or avail > 1 << 20


# ---- 14: --out all or nothing ----------------------------------------------------------------

def test_out_replaces_results_atomically(kfile, capsys, monkeypatch):
    out = kfile / "res"
    assert main(run(kfile, "--out", str(out))) == 0
    np.testing.assert_array_equal(np.load(out / "out.npy"), 2 * A)
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    assert sorted(before) == ["a.npy", "out.npy"]

    real_save = np.save
    calls = []

    def full_disk(f, arr, **kw):  # the second file: a few bytes, then the disk is full
        calls.append(1)
        if len(calls) == 2:
            f.write(b"\x93NUMPY")
            raise OSError(errno.ENOSPC, "No space left on device")
        real_save(f, arr, **kw)

    monkeypatch.setattr(np, "save", full_disk)
    rc = main(run(kfile, "--out", str(out), x="2.5"))
    one_line_error(capsys, rc, f"cannot write results to {out}: No space left on device")
    after = {p.name: p.read_bytes() for p in out.iterdir()}
    assert after == before  # no partial file, no temporary left, old results intact


# ---- 15: scalar arguments --------------------------------------------------------------------

@pytest.mark.parametrize(("arg", "val", "msg"), [
    ("n", "4294967312", "4294967312 is out of range for i32 [-2147483648, 2147483647]"),
    ("n", str(2**31), "2147483648 is out of range for i32"),
    ("n", str(-2**31 - 1), "-2147483649 is out of range for i32"),
    ("n", "1e23", "argument %n (i32) takes an integer, got '1e23'"),
    ("i", str(2**63), "9223372036854775808 is out of range for index"),
    ("u", "256", "256 is out of range for ui8 [0, 255]"),
    ("u", "-1", "-1 is out of range for ui8"),
    ("x", "65520", "65520.0 overflows f16 (largest finite 65504.0)"),
    ("x", "1e23", "overflows f16"),
    ("x", "1e400", "1e400 overflows f16"),
    ("n", "NPY", "argument %n (i32) is a scalar: give a number"),
    ("x", "zeros:4:f16", "argument %x (f16) is a scalar"),
])
def test_scalar_out_of_range_is_one_line(kfile, capsys, arg, val, msg):
    if val == "NPY":
        val = str(kfile / "a.npy")
    one_line_error(capsys, main(run(kfile, **{arg: val})), msg)


@pytest.mark.parametrize(("arg", "val"), [("n", str(2**31 - 1)), ("n", str(-2**31)),
                                          ("i", str(2**63 - 1)), ("u", "0"), ("x", "65504"),
                                          ("x", "-inf"), ("x", "65519")])  # rounds to 65504
def test_scalar_edges_accepted(kfile, capsys, arg, val):
    assert main(run(kfile, **{arg: val})) == 0, capsys.readouterr().err


def test_python_api_range_checks():
    prog = Program(parse(KERNEL, "k.pto"), "cpu")
    out = np.zeros((16, 16), np.float32)
    with pytest.raises(pto.PtoError, match=r"argument 2 \(%n: i32\) of @k: 1099511627776 is out"):
        prog.k(A, out, 2**40, 1.0, 1, 1)
    with pytest.raises(pto.PtoError, match=r"a 1329-bit integer overflows f16"):
        prog.k(A, out, 1, 10**400, 1, 1)
    with pytest.raises(pto.PtoError, match="out of range for index"):
        prog.k(A, out, 1, 1.0, -2**63 - 1, 1)
    prog.k(A, out, -2**31, np.float16(3), 2**63 - 1, np.uint8(255))
    np.testing.assert_array_equal(out, 2 * A)


@pytest.mark.parametrize("again", [["--arg", "n=6"], ["--arg", "2=6"], ["--arg", "%n=6"]])
def test_repeated_arg_is_an_error(kfile, capsys, again):
    one_line_error(capsys, main(run(kfile, *again)), "argument %n given twice")


def test_conformance_without_cases_is_an_error(tmp_path, capsys):
    assert main(["conformance", str(tmp_path)]) == 2
    assert "no conformance cases" in capsys.readouterr().err


def test_ctrl_c_is_one_line_exit_130(kfile, capsys, monkeypatch):
    import ptoisa.cli as cli

    def interrupted(ns):
        raise KeyboardInterrupt
    monkeypatch.setattr(cli, "_run", interrupted)
    assert main(run(kfile)) == 130
    assert capsys.readouterr().err == "ptoisa: interrupted\n"


def test_internal_error_is_one_line_with_its_own_exit_code(kfile, capsys, monkeypatch):
    import ptoisa.cli as cli

    def bug(ns):
        return 1 // 0
    monkeypatch.setattr(cli, "_run", bug)
    assert main(run(kfile)) == EXIT_INTERNAL
    err = capsys.readouterr().err
    assert err.startswith("ptoisa: internal error: ZeroDivisionError") and "Traceback" not in err
    assert len(err.splitlines()) == 1


# ---- 17: a branch on the block index in a lockstep run ---------------------------------------

def test_divergent_branch_is_located(kfile, capsys):
    rc = main(run(kfile, "--blocks", "3"))
    cap = capsys.readouterr()
    assert rc == 1 and "Traceback" not in cap.err
    first = cap.err.splitlines()[0]
    assert first.startswith(f"{kfile / 'k.pto'}:17:5: error: scf.if: the condition differs "
                            "between blocks ([1, 0, 0])"), first
    assert "--lockstep off" in first


@pytest.mark.parametrize("mode", ["off", "on"])
def test_lockstep_flag(kfile, capsys, mode):
    out = kfile / "res"
    rc = main(run(kfile, "--blocks", "3", "--lockstep", mode, "--out", str(out)))
    assert rc == (0 if mode == "off" else 1), capsys.readouterr().err
    if mode == "off":
        np.testing.assert_array_equal(np.load(out / "out.npy"), 2 * A)


def test_program_run_lockstep_true_raises_located_divergence():
    prog = Program(parse(KERNEL, "k.pto"), "cpu")
    out = np.zeros((16, 16), np.float32)
    with pytest.raises(pto.BlockDivergence) as e:
        prog.run("k", A, out, 1, 1.0, 1, 1, blocks=2, lockstep=True)
    assert str(e.value.loc) == "k.pto:17:5" and e.value.op == "scf.if"


def _same_window(x, z, atomic):
    b = pto.get_block_idx()
    t = pto.Tile(TileType.Vec, np.float32, 8, 16)
    pto.TLOAD(t, pto.GlobalTensor(x, (1, 1, 1, 8, 16), (128, 128, 128, 16, 1), offset=b * 128))
    pto.TSTORE(pto.GlobalTensor(z, (1, 1, 1, 8, 16), (128, 128, 128, 16, 1)), t,
               atomicType=atomic)


@pytest.mark.parametrize("lockstep", [True, False])
def test_lockstep_blocks_storing_one_window(lockstep):
    """Every block stores to the same GM window (a uniform offset): as sequentially, the last
    block's data wins; with AtomicAdd the blocks' data add up."""
    x = np.random.default_rng(1).integers(-8, 8, (5, 8, 16)).astype(np.float32)
    z = np.zeros((8, 16), np.float32)
    pto.launch(_same_window, x, z, "AtomicNone", blocks=5, lockstep=lockstep)
    np.testing.assert_array_equal(z, x[4])
    z[:] = 1
    pto.launch(_same_window, x, z, "AtomicAdd", blocks=5, lockstep=lockstep)
    np.testing.assert_array_equal(z, 1 + x[0] + x[1] + x[2] + x[3] + x[4])


# ---- what the CLI fuzz (test_cli_fuzz.py) found -----------------------------------------------

def test_tensor_view_with_fewer_strides_than_sizes(kfile, capsys):
    bad = KERNEL.replace("shape = [%c16, %c16], strides = [%c16, %c1] : {TV}\n    %vo".replace(
        "{TV}", TV), f"shape = [%c16, %c16], strides = [%c1] : {TV}\n    %vo")
    assert bad != KERNEL
    (kfile / "k.pto").write_text(bad)
    rc = main(run(kfile))
    err = capsys.readouterr().err
    assert rc == 1 and "Traceback" not in err and "internal error" not in err, err
    assert f"{kfile / 'k.pto'}:6:" in err and "2 sizes in shape but 1 strides" in err


def test_auto_tile_beyond_host_memory(kfile, capsys):
    (kfile / "k.pto").write_text(KERNEL.replace("rows=16,", "rows=4611686018427387904,"))
    rc = main(run(kfile))
    err = capsys.readouterr().err
    assert rc == 1 and "Traceback" not in err and "internal error" not in err, err
    # 2^62 rows x 16 cols x 4 bytes = 2^68 bytes = 2^28 TiB: the program's memory plan
    # rejects the tile (it cannot fit UB) before any host memory is asked for
    assert "UB overflow on cpu" in err and "k.pto:11:5" in err


def test_per_block_offsets_in_one_line():
    x = np.zeros(100 * 128, np.float32)

    def k():
        t = pto.Tile(TileType.Vec, np.float32, 8, 16)
        g = pto.GlobalTensor(x, (1, 1, 1, 8, 16), (128, 128, 128, 16, 1),
                             offset=pto.get_block_idx() * 256)
        pto.TLOAD(t, g)
    with pytest.raises(pto.PtoError) as e:
        pto.launch(k, blocks=100, lockstep=True)
    msg = str(e.value)
    assert "\n" not in msg and "offsets [0, 256, 512, 768, ...] (per block)" in msg, msg


def test_negative_partition_size(kfile, capsys):
    (kfile / "k.pto").write_text(KERNEL.replace(
        "%pa = pto.partition_view %va, offsets = [%c0, %c0], sizes = [%c16, %c16]",
        "%pa = pto.partition_view %va, offsets = [%c0, %c0], sizes = [-1, %c16]"))
    rc = main(run(kfile, "--blocks", "2"))
    err = capsys.readouterr().err
    assert rc == 1 and "internal error" not in err, err
    assert f"{kfile / 'k.pto'}:8:11: error: partition_view: dim 0 size -1 is negative" in err


def test_divergent_loop_bound_is_located():
    """scf.for up to the block index after a GM store: the trip count differs per block."""
    loop = KERNEL.replace(
        """    %first = arith.cmpi eq, %bid, %z : i64
    scf.if %first {""",
        """    %ub = arith.index_cast %bid : i64 to index
    scf.for %iv = %c0 to %ub step %c1 {""")
    assert loop != KERNEL
    prog = Program(parse(loop, "loop.pto"), "cpu")
    out = np.zeros((16, 16), np.float32)
    with pytest.raises(pto.BlockDivergence) as e:
        prog.run("k", A, out, 1, 1.0, 1, 1, blocks=3)
    assert str(e.value).startswith(
        "loop.pto:17:5: error: scf.for: a loop bound differs between blocks ([0, 1, 2])")
    prog.run("k", A, out, 1, 1.0, 1, 1, blocks=3, lockstep=False)
    np.testing.assert_array_equal(out, 2 * A)


def test_index_beyond_64_bits_with_lockstep_blocks(kfile, capsys):
    """An index constant of 64 bits times the per-block index (numpy int64) overflowed inside
    numpy; index values wrap to 64 bits like i64 (2^64 - 1 is -1), so block 1's row offset is
    -1. A literal past 64 bits is refused at check, as MLIR refuses it."""
    def kernel(big: str) -> str:
        return KERNEL.replace(
            "    %po = pto.partition_view %vo, offsets = [%c0, %c0]",
            "    %bi = pto.get_block_idx\n"
            "    %b = arith.index_cast %bi : i64 to index\n"
            f"    %big = arith.constant {big} : index\n"
            "    %row = arith.muli %b, %big : index\n"
            "    %po = pto.partition_view %vo, offsets = [%row, %c0]")

    (kfile / "k.pto").write_text(kernel("18446744073709551615"))
    rc = main(run(kfile, "--blocks", "2", "--lockstep", "on"))
    err = capsys.readouterr().err
    assert rc == 1 and "internal error" not in err, err
    assert "partition_view: dim 0 [-1, 15) outside the view's extent 16 (block 1)" in err, err
    (kfile / "k.pto").write_text(kernel("18446744073709551617"))
    rc = main(run(kfile, "--blocks", "2", "--lockstep", "on"))
    err = capsys.readouterr().err
    assert rc == 1 and "integer literal 18446744073709551617 out of range for index" in err, err


def test_partition_view_of_something_else(kfile, capsys):
    """The parser takes ``pto.partition_view scf.if, ...`` (a stray word where the source
    belongs); running it crashed on an int where a tensor view was expected."""
    (kfile / "k.pto").write_text(KERNEL.replace("%po = pto.partition_view %vo,",
                                                "%po = pto.partition_view scf.if,"))
    rc = main(run(kfile))
    err = capsys.readouterr().err
    assert rc == 1 and "internal error" not in err, err
    assert f"{kfile / 'k.pto'}:9:11: error: pto.partition_view: the source must be a tensor " \
           "view" in err, err


def test_float_literal_for_index_is_refused(kfile, capsys):
    (kfile / "k.pto").write_text(KERNEL.replace("%c16 = arith.constant 16 : index",
                                                "%c16 = arith.constant 1e308 : index"))
    assert main(["check", str(kfile / "k.pto"), "--target", "cpu"]) == 1
    err = capsys.readouterr().err
    assert f"{kfile / 'k.pto'}:5:12: error: arith.constant: a float literal (1e+308) for an " \
           "integer type (index)" in err, err


def test_ui64_past_int64_in_lockstep_is_an_error_not_a_crash(tmp_path, capsys):
    src = tmp_path / "u.pto"
    src.write_text("""module {
  func.func @k(%u: ui64) {
    %bid = pto.get_block_idx
    %b = arith.index_cast %bid : i64 to index
    %bu = arith.index_cast %b : index to ui64
    %r = arith.muli %bu, %u : ui64
    return
  }
}
""")
    rc = main(["run", str(src), "--target", "cpu", "--blocks", "2", "--lockstep", "on",
               "--arg", f"u={2**64 - 1}"])
    err = capsys.readouterr().err
    assert rc == 1 and "internal error" not in err, err
    assert "u.pto:6:10: error: arith.muli: operands [0, 1] and 18446744073709551615 leave the " \
           "64-bit range" in err, err


@pytest.mark.parametrize(("body", "msg"), [
    ("%a = arith.constant 1 : i32\n    %b = arith.constant 2 : i64\n"
     "    %c = arith.addi %a, %b : i32", "5:10: error: arith.addi: operands have different "
                                         "types (i32 and i64)"),
    ("%t = arith.constant true\n    %f = arith.constant -0.0\n"
     "    %c = arith.andi %t, %f : i1", "5:10: error: arith.andi: cannot combine 1 and -0.0"),
])
def test_mixed_operand_types_are_located(tmp_path, capsys, body, msg):
    src = tmp_path / "m.pto"
    src.write_text("module {\n  func.func @k() {\n    " + body + "\n    return\n  }\n}\n")
    rc = main(["run", str(src), "--target", "cpu"])
    err = capsys.readouterr().err
    assert rc == 1 and "internal error" not in err, err
    assert f"{src}:{msg}" in err, err


def test_loop_yield_count_mismatch_is_located(tmp_path, capsys):
    src = tmp_path / "y.pto"
    src.write_text("""module {
  func.func @k() {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %r = scf.for %i = %c0 to %c4 step %c1 iter_args(%acc = %c0) -> (index) {
      %n = arith.addi %acc, %c1 : index
      scf.yield %n, %n : index, index
    }
    return
  }
}
""")
    rc = main(["run", str(src), "--target", "cpu"])
    err = capsys.readouterr().err
    assert rc == 1 and "internal error" not in err, err
    assert f"{src}:6:10: error: scf.for: 2 yielded values but 1 loop-carried block " \
           "arguments" in err, err

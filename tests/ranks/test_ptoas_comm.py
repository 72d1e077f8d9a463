"""PTOAS's ``pto.comm.*`` ops (PTO_IR_manual 4.21) across 2 ranks in-process: each op in a
small program, every rank's arrays afterwards against numpy written from the manual's
semantics; unsupported spellings are located errors."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import ptoisa as pto
from ptoisa.concurrent.ranks import remote_array, run_on_ranks
from ptoisa.errors import PtoError

N = 64
TILE = ("!pto.tile_buf<loc=vec, dtype=f32, rows=1, cols=64, v_row=1, v_col=64, "
        "blayout=row_major, slayout=none_box, fractal=512, pad=0>")
PV = "!pto.partition_tensor_view<1x64xf32>"
SIG = "!pto.partition_tensor_view<1xi32>"


def _view(name: str, ptr: str, rows: int = 1, dtype: str = "f32", off: str = "%c0") -> str:
    """%name = a rows x 64 partition view of pointer %ptr (PTOAS's make_tensor_view +
    partition_view)."""
    shape = f"{rows}x{N}x{dtype}"
    return (f"    %{name}_tv = pto.make_tensor_view %{ptr}, shape = [%c{rows}, %c64], "
            f"strides = [%c64, %c1] : !pto.tensor_view<{shape}>\n"
            f"    %{name} = pto.partition_view %{name}_tv, offsets = [{off}, %c0], "
            f"sizes = [%c{rows}, %c64] : !pto.tensor_view<{shape}> -> "
            f"!pto.partition_tensor_view<{shape}>\n")


def _sig(name: str, ptr: str, k: int = 0) -> str:
    return (f"    %{name}_tv = pto.make_tensor_view %{ptr}, shape = [%c8], strides = [%c1] "
            f": !pto.tensor_view<8xi32>\n"
            f"    %{name} = pto.partition_view %{name}_tv, offsets = [%c{k}], sizes = [%c1] "
            f": !pto.tensor_view<8xi32> -> {SIG}\n")


def _program(args: str, body: str) -> str:
    consts = "".join(f"    %c{k} = arith.constant {k} : index\n" for k in range(9)) + \
        "    %c64 = arith.constant 64 : index\n"
    return (f"module {{\n  func.func @k({args}) {{\n{consts}"
            f"    %ping = pto.alloc_tile : {TILE}\n    %pong = pto.alloc_tile : {TILE}\n"
            f"{body}    return\n  }}\n}}\n")


def run2(src: str, inputs: Callable[[int], list[Any]],
         peers: dict[int, tuple[Callable[[int], int], int]]) -> list[list[Any]]:
    """Run function @k of ``src`` on 2 ranks (threads): ``inputs(r)`` are rank r's arguments
    (arrays are the windows), ``peers``: argument index -> (rank of whose copy, as a function
    of this rank; index of the argument it is a copy of). Every rank's arguments after."""
    out: list[list[Any]] = [[], []]

    def bind(r: int, n: int) -> Any:
        prog = pto.load(src, target="cpu")
        values = inputs(r)
        out[r] = values
        wins = [k for k, v in enumerate(values) if isinstance(v, np.ndarray)]

        def body(m: Any) -> None:
            vals = list(values)
            for i, (rank_of, j) in peers.items():
                vals[i] = remote_array(values[j], rank_of(r))
            prog.run("k", *vals, target="cpu", machine=m)

        return body, [values[k] for k in wins], [f"a{k}" for k in wins]

    run_on_ranks(bind, ranks=2, target="cpu", timeout=30)
    return out


def _x(r: int) -> np.ndarray:
    return (np.arange(N, dtype=np.float32) + 100 * r).reshape(1, N)


OTHER = (lambda r: 1 - r)  # noqa: E731 - the peer of a 2-rank job
PTR = "!pto.ptr<f32>"


def test_tput_plain_and_atomic_add_with_ping_pong() -> None:
    """pto.comm.tput: rank r writes its x into the peer's y (atomic_none) and adds it into
    the peer's z (atomic_add, through buf(%ping, %pong))."""
    args = (f"%x: {PTR}, %y: {PTR}, %z: {PTR}, %peer_y: {PTR}, %peer_z: {PTR}")
    body = (_view("xv", "x") + _view("pyv", "peer_y") + _view("pzv", "peer_z")
            + f"    pto.comm.tput(%pyv, %xv, buf(%ping) : {PV}, {PV}, {TILE}) "
              "{atomicType = #pto<atomic_type atomic_none>}\n"
            + f"    pto.comm.tput(%pzv, %xv, buf(%ping, %pong) : {PV}, {PV}, {TILE}, {TILE}) "
              "{atomicType = #pto<atomic_type atomic_add>}\n")
    z0 = [np.full((1, N), 0.5 + r, np.float32) for r in range(2)]
    out = run2(_program(args, body),
               lambda r: [_x(r), np.zeros((1, N), np.float32), z0[r].copy(), None, None],
               {3: (OTHER, 1), 4: (OTHER, 2)})
    for r in range(2):
        np.testing.assert_array_equal(out[r][1], _x(1 - r))
        np.testing.assert_array_equal(out[r][2], z0[r] + _x(1 - r))
        np.testing.assert_array_equal(out[r][0], _x(r))  # the source is left as it was


def test_tget_reads_the_peer() -> None:
    args = f"%x: {PTR}, %y: {PTR}, %peer_x: {PTR}"
    body = (_view("yv", "y") + _view("pxv", "peer_x")
            + f"    pto.comm.tget(%yv, %pxv, buf(%ping, %pong) : {PV}, {PV}, {TILE}, {TILE})\n")
    out = run2(_program(args, body), lambda r: [_x(r), np.zeros((1, N), np.float32), None],
               {2: (OTHER, 0)})
    for r in range(2):
        np.testing.assert_array_equal(out[r][1], _x(1 - r))


CMPS = {"eq": np.equal, "ne": np.not_equal, "gt": np.greater, "ge": np.greater_equal,
        "lt": np.less, "le": np.less_equal}


def test_tnotify_twait_ttest_every_mode() -> None:
    """Rank r sets the peer's flag to 5 + r (notify_op set), adds 2 to it (atomic_add), waits
    for its own flag (ge 7), then writes into word k of its result whether ttest of each
    comparison mode against 7 holds (one atomic_add of 1 under scf.if)."""
    i32 = "!pto.ptr<i32>"
    args = f"%flag: {i32}, %res: {i32}, %peer_flag: {i32}"
    body = (_sig("f", "flag") + _sig("pf", "peer_flag")
            + "    %v5 = arith.constant 5 : i32\n    %v2 = arith.constant 2 : i32\n"
              "    %v7 = arith.constant 7 : i32\n    %v1 = arith.constant 1 : i32\n"
              "    %r0 = pto.get_block_idx\n"
            + f"    pto.comm.tnotify(%pf, %v5 : {SIG}, i32) {{notifyOp = #pto<notify_op set>}}\n"
            + f"    pto.comm.tnotify(%pf, %v2 : {SIG}, i32) "
              "{notifyOp = #pto<notify_op atomic_add>}\n"
            + f"    pto.comm.twait(%f, %v7 : {SIG}, i32) {{cmp = #pto<wait_cmp ge>}}\n")
    for k, c in enumerate(CMPS):
        body += (_sig(f"w{k}", "res", k)
                 + f"    %t{k} = pto.comm.ttest(%f, %v7 : {SIG}, i32) "
                   f"{{cmp = #pto<wait_cmp {c}>}} -> i1\n"
                 + f"    scf.if %t{k} {{\n"
                   f"      pto.comm.tnotify(%w{k}, %v1 : {SIG}, i32) "
                   "{notifyOp = #pto<notify_op atomic_add>}\n    }\n")
    body = body.replace("    %r0 = pto.get_block_idx\n", "")
    out = run2(_program(args, body),
               lambda r: [np.zeros(8, np.int32), np.zeros(8, np.int32), None], {2: (OTHER, 0)})
    for r in range(2):
        assert out[r][0][0] == 7  # set to 5, then + 2, by the peer
        want = [int(f(np.int64(7), 7)) for f in CMPS.values()]
        assert out[r][1][:6].tolist() == want


ROW_ARGS = f"%x: {PTR}, %big: {PTR}, %peer_x: {PTR}, %rank: i32"


def _root_only(op: str) -> str:
    """``op`` under ``scf.if %rank == 0`` (the root issues a collective)."""
    return ("    %zero = arith.constant 0 : i32\n"
            "    %is_root = arith.cmpi eq, %rank, %zero : i32\n"
            f"    scf.if %is_root {{\n      {op}\n    }}\n")


def _coll(op: str) -> list[list[Any]]:
    body = _view("xv", "x") + _view("bigv", "big", rows=2) + _view("pxv", "peer_x") + \
        _root_only(op)
    big0 = [np.full((2, N), -1.0 - r, np.float32) for r in range(2)]
    return run2(_program(ROW_ARGS, body),
                lambda r: [_x(r), big0[r].copy(), None, np.int32(r)], {2: (OTHER, 0)})


BIG = "!pto.partition_tensor_view<2x64xf32>"


def test_tbroadcast_from_root_0() -> None:
    out = _coll(f"pto.comm.tbroadcast(%xv, recv(%ping, %pong), group(%xv, %pxv) : {PV}, {TILE}, "
                f"{TILE}, {PV}, {PV}) {{root = 0 : i32}}")
    for r in range(2):
        np.testing.assert_array_equal(out[r][0], _x(0))


def test_tgather_rows_of_every_rank_at_the_root() -> None:
    out = _coll(f"pto.comm.tgather(%bigv, recv(%ping), group(%xv, %pxv) : {BIG}, {TILE}, {PV}, "
                f"{PV}) {{root = 0 : i32}}")
    np.testing.assert_array_equal(out[0][1], np.concatenate([_x(0), _x(1)]))
    np.testing.assert_array_equal(out[1][1], np.full((2, N), -2.0, np.float32))  # untouched


def test_tscatter_rows_of_the_root_to_every_rank() -> None:
    out = _coll(f"pto.comm.tscatter(%bigv, recv(%ping, %pong), group(%xv, %pxv) : {BIG}, "
                f"{TILE}, {TILE}, {PV}, {PV}) {{root = 0 : i32}}")
    for r in range(2):
        np.testing.assert_array_equal(out[r][0], np.full((1, N), -1.0, np.float32))


@pytest.mark.parametrize("mode,fn", [("sum", np.add), ("max", np.maximum), ("min", np.minimum)])
def test_treduce_every_mode(mode: str, fn: Any) -> None:
    """Root 0 reduces both ranks' x (x1 reversed so max/min pick from both) into row 0 of
    its big view."""
    body = (_view("xv", "x") + _view("bigv", "big", rows=1) + _view("pxv", "peer_x")
            + "    %acc = pto.alloc_tile : " + TILE + "\n"
            + _root_only(f"pto.comm.treduce(%bigv, %acc, recv(%ping), group(%xv, %pxv) : {PV}, "
                         f"{TILE}, {TILE}, {PV}, {PV}) "
                         f"{{reduceOp = #pto<reduce_op {mode}>, root = 0 : i32}}"))
    xs = [_x(0), _x(1)[:, ::-1].copy() - 120]
    out = run2(_program(ROW_ARGS, body),
               lambda r: [xs[r].copy(), np.zeros((2, N), np.float32), None, np.int32(r)],
               {2: (OTHER, 0)})
    np.testing.assert_array_equal(out[0][1][0], fn(xs[0], xs[1])[0])
    np.testing.assert_array_equal(out[1][1], np.zeros((2, N), np.float32))


# ---- what is not supported is a located error naming it ----------------------------------

def _check_error(body: str, args: str, match: str) -> None:
    with pytest.raises(PtoError, match=match) as e:
        pto.load(_program(args, body), filename="comm.pto")
    assert "comm.pto:" in str(e.value)


def test_treduce_ping_pong_runs() -> None:
    """``recv(%ping, %pong)``: the ping-pong TREDUCE overload (PTOAS's manual; lit
    comm_collective_emitc.pto) reduces as the one-tile form."""
    body = (_view("xv", "x") + _view("bigv", "big", rows=1) + _view("pxv", "peer_x")
            + "    %acc = pto.alloc_tile : " + TILE + "\n"
            + _root_only(f"pto.comm.treduce(%bigv, %acc, recv(%ping, %pong), group(%xv, %pxv) "
                         f": {PV}, {TILE}, {TILE}, {TILE}, {PV}, {PV}) "
                         "{reduceOp = #pto<reduce_op max>, root = 0 : i32}"))
    xs = [_x(0), _x(1)[:, ::-1].copy() - 120]
    out = run2(_program(ROW_ARGS, body),
               lambda r: [xs[r].copy(), np.zeros((2, N), np.float32), None, np.int32(r)],
               {2: (OTHER, 0)})
    np.testing.assert_array_equal(out[0][1][0], np.maximum(xs[0], xs[1])[0])
    body3 = body.replace("recv(%ping, %pong)", "recv(%ping, %pong, %ping)").replace(
        f"{TILE}, {TILE}, {TILE}, {PV}", f"{TILE}, {TILE}, {TILE}, {TILE}, {PV}")
    _check_error(body3, ROW_ARGS, r"pto\.comm\.treduce: recv\(\.\.\.\) takes")


def test_unknown_attribute_and_atomic_mode_are_refused() -> None:
    args = f"%x: {PTR}, %y: {PTR}"
    put = f"    pto.comm.tput(%yv, %xv, buf(%ping) : {PV}, {PV}, {TILE}) "
    base = _view("xv", "x") + _view("yv", "y")
    _check_error(base + put + "{atomicType = #pto<atomic_type atomic_max>}\n", args,
                 r"atomicType.*atomic_max")
    _check_error(base + put + "{priority = 3 : i32}\n", args, r"unknown attribute 'priority'")
    _check_error(base + f"    pto.comm.tput(%yv, %xv, buf(%ping, %pong, %ping) : {PV}, {PV}, "
                 f"{TILE}, {TILE}, {TILE})\n", args, r"buf\(\.\.\.\) takes 1 to 2")


def test_dynamic_dimensions_follow_ptoas_verifiers() -> None:
    """A signal has no dynamic dimension; tput / tget take one only on partition views."""
    sig = "!pto.partition_tensor_view<?xi32>"
    with pytest.raises(PtoError, match="dynamic dimensions on signal"):
        pto.load("module {\n  func.func @k(%s: " + sig + ", %v: i32) {\n"
                 f"    pto.comm.twait(%s, %v : {sig}, i32) {{cmp = #pto<wait_cmp eq>}}\n"
                 "    return\n  }\n}\n")
    tv = "!pto.tensor_view<?x64xf32>"
    with pytest.raises(PtoError, match="dynamic dimensions on dst only for partition_tensor_v"):
        pto.load(f"module {{\n  func.func @k(%d: {tv}, %s: {tv}) {{\n"
                 f"    %ping = pto.alloc_tile : {TILE}\n"
                 f"    pto.comm.tget(%d, %s, buf(%ping) : {tv}, {tv}, {TILE})\n"
                 "    return\n  }\n}\n")


@pytest.mark.parametrize("completion", ["wait_async_event", "test_async_event"])
def test_async_put_and_get_complete_at_their_event(completion: str) -> None:
    """Rank r puts its x into the peer's y and gets the peer's x into its z through an async
    session; the event's completion (i1 true) then adds 1 to word 0 of its res."""
    i8 = "!pto.tile_buf<loc=vec, dtype=i8, rows=1, cols=256, v_row=1, v_col=256, " \
         "blayout=row_major, slayout=none_box, fractal=512, pad=0>"
    i32 = "!pto.ptr<i32>"
    args = (f"%x: {PTR}, %y: {PTR}, %z: {PTR}, %res: {i32}, %ws: !pto.ptr<i8>, "
            f"%peer_y: {PTR}, %peer_x: {PTR}")
    body = (_view("xv", "x") + _view("zv", "z") + _view("pyv", "peer_y") + _view("pxv", "peer_x")
            + _sig("rv", "res") + f"    %scratch = pto.alloc_tile : {i8}\n"
            + f"    %s = pto.comm.build_async_session(%scratch, %ws : {i8}, !pto.ptr<i8>) "
              "{sync_id = 0 : i32, queue_num = 1 : i32} -> !pto.async_session\n"
            + f"    %e0 = pto.comm.tput_async(%pyv, %xv, %s : {PV}, {PV}, !pto.async_session) "
              "-> !pto.async_event\n"
            + f"    %e1 = pto.comm.tget_async(%zv, %pxv, %s : {PV}, {PV}, !pto.async_session) "
              "-> !pto.async_event\n"
            + f"    %d0 = pto.comm.{completion}(%e0, %s : !pto.async_event, !pto.async_session)"
              " -> i1\n"
            + f"    %d1 = pto.comm.{completion}(%e1, %s : !pto.async_event, !pto.async_session)"
              " -> i1\n"
            + "    %both = arith.andi %d0, %d1 : i1\n    %v1 = arith.constant 1 : i32\n"
            + f"    scf.if %both {{\n      pto.comm.tnotify(%rv, %v1 : {SIG}, i32)\n    }}\n")
    zeros = (lambda: np.zeros((1, N), np.float32))  # noqa: E731
    out = run2(_program(args, body),
               lambda r: [_x(r), zeros(), zeros(), np.zeros(8, np.int32),
                          np.zeros(256, np.int8), None, None],
               {5: (OTHER, 1), 6: (OTHER, 0)})
    for r in range(2):
        np.testing.assert_array_equal(out[r][1], _x(1 - r))
        np.testing.assert_array_equal(out[r][2], _x(1 - r))
        assert out[r][3][0] == 1


def test_async_session_attribute_without_counterpart_is_refused() -> None:
    i8 = "!pto.tile_buf<loc=vec, dtype=i8, rows=1, cols=256, v_row=1, v_col=256, " \
         "blayout=row_major, slayout=none_box, fractal=512, pad=0>"
    body = (f"    %scratch = pto.alloc_tile : {i8}\n"
            f"    %s = pto.comm.build_async_session(%scratch, %ws : {i8}, !pto.ptr<i8>) "
            "{engine = 1 : i32} -> !pto.async_session\n")
    _check_error(body, "%ws: !pto.ptr<i8>", r"unknown attribute 'engine'")


def test_collective_root_and_group_types_are_checked() -> None:
    op = (f"    pto.comm.tbroadcast(%xv, recv(%ping), group(%xv, %pxv) : {PV}, {TILE}, {PV}, "
          f"{PV}) {{root = 2 : i32}}\n")
    body = _view("xv", "x") + _view("bigv", "big", rows=2) + _view("pxv", "peer_x")
    _check_error(body + op, ROW_ARGS, r"root 2 is outside the group of 2 members")
    op = (f"    pto.comm.tgather(%bigv, recv(%ping), group(%xv, %bigv) : {BIG}, {TILE}, {PV}, "
          f"{BIG}) {{root = 0 : i32}}\n")
    _check_error(body + op, ROW_ARGS, r"group members to have the same type")

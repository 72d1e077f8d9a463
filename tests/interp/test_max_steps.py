"""A run has a budget of loop iterations: a loop to 1e18 ends in a located error naming the
limit and how to raise it, instead of running for ever behind a progress line."""

from __future__ import annotations

import numpy as np
import pytest

import ptoisa as pto
from ptoisa.errors import ExecutionError

_FOR = """
module {
  func.func @f(%o: !pto.ptr<i64>, %n: index, %m: index) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %s = scf.for %i = %c0 to %n step %c1 iter_args(%a = %c0) -> (index) {
      %t = scf.for %j = %c0 to %m step %c1 iter_args(%b = %a) -> (index) {
        %b1 = arith.addi %b, %c1 : index
        scf.yield %b1 : index
      }
      scf.yield %t : index
    }
    %v = arith.index_cast %s : index to i64
    pto.store_scalar %v, %o[%c0] : i64, !pto.ptr<i64>
    return
  }
}
"""

_WHILE = """
module {
  func.func @f(%n: i64) {
    %c1 = arith.constant 1 : i64
    %r = scf.while (%i = %c1) : (i64) -> i64 {
      %go = arith.cmpi ne, %i, %n : i64
      scf.condition(%go) %i : i64
    } do {
    ^bb0(%j: i64):
      %k = arith.addi %j, %c1 : i64
      scf.yield %k : i64
    }
    return
  }
}
"""


def test_nested_loops_count_every_trip():
    prog = pto.load(_FOR, filename="for.pto")
    out = np.zeros(1, np.int64)
    prog.max_steps = 3 + 3 * 4  # the outer loop's 3 trips and the inner loops' 4 each
    prog.f(out, 3, 4)
    assert out[0] == 12
    prog.max_steps = 3 + 3 * 4 - 1
    with pytest.raises(ExecutionError, match=r"for.pto:7:12: .*more than 14 loop iterations "
                                             r"\(this loop alone 4\); raise the limit"):
        prog.f(out, 3, 4)


def test_a_loop_to_1e18_is_refused_at_once():
    prog = pto.load(_FOR, filename="for.pto")
    with pytest.raises(ExecutionError, match="this loop alone 1000000000000000000"):
        prog.f(np.zeros(1, np.int64), 10 ** 18, 1)


def test_a_while_loop_spends_its_passes():
    prog = pto.load(_WHILE, filename="w.pto")
    prog.f(5000)
    prog.max_steps = 2000
    with pytest.raises(ExecutionError, match="w.pto:5:10: .*more than 2000 loop iterations"):
        prog.f(1 << 40)

"""Repeated code back into loops: a Python ``range`` loop that the trace unrolled becomes an
``scf.for`` again (the rule is in :mod:`ptoisa.exporter`)."""

from __future__ import annotations

import dataclasses
from typing import Any

from ..ir import types as T
from ..ir.core import Block, Op, Region, Value
from ..symbolic import SymInt
from .spelling import _MAX_PERIOD, _MIN_TRIPS, _SYNC_OPS, _key, _linear, _rebuild

#: the sync ops (operand-free custom syntax: equal when their brackets are)
_SYNC_NAMES = _SYNC_OPS  # (the ops of the flags and barriers)


class _Scope:
    def __init__(self) -> None:
        self.ops: list[Op] = []
        self.cache: dict[Any, Value] = {}


class _Loop:
    """One ``pto.range`` loop being traced."""

    def __init__(self, iv: Value) -> None:
        self.iv = iv
        self.named = False


class Rerolling:
    """The rerolling pass of :class:`ptoisa.exporter.tracer.Tracer` (its partition-view
    records, scopes and constants)."""

    pv_info: dict[int, tuple[Any, ...]]
    scopes: list[Any]

    def reroll(self, ops: list[Op]) -> list[Op]:
        """Each run of >= 3 repetitions of the same op sequence whose GM views differ by a
        constant offset step per repetition (a Python ``range`` loop the trace unrolled)
        becomes one ``scf.for``; at each position the run covering the most ops wins."""
        out: list[Op] = []
        i, total = 0, len(ops)
        while i < total:
            best: tuple[int, int, int, list[Any]] | None = None
            for p in range(1, min(_MAX_PERIOD, (total - i) // 2) + 1):
                n, steps = self._repeats(ops, i, p)
                if n >= _MIN_TRIPS and (best is None or p * n > best[0]):
                    best = (p * n, p, n, steps)
            if best is None:
                out.append(ops[i])
                i += 1
                continue
            _, p, n, steps = best
            out.append(self._loop_of(ops[i:i + p], n, steps))
            i += p * n
        return out

    def _repeats(self, ops: list[Op], i: int, p: int) -> tuple[int, list[Any]]:
        """How many times ops[i:i+p] repeats from i with a constant step, and the steps."""
        first = ops[i:i + p]
        steps: list[Any] = []
        for a, b in zip(first, ops[i + p:i + 2 * p], strict=False):
            d = self._delta(a, b)
            if d is None:
                return 1, []
            steps.append(d)
        if len(steps) < p or not any(x for st in steps for x in st if x):
            return 1, []
        n = 2
        while i + (n + 1) * p <= len(ops):
            rep = ops[i + n * p:i + (n + 1) * p]
            ok = True
            for a, b, st in zip(first, rep, steps, strict=True):
                d = self._delta(a, b)
                if d is None or any((x or 0) * n != (y or 0) for x, y in zip(st, d, strict=True)
                                    if not isinstance(x, tuple)) or any(
                        tuple(n * c for c in x) != y for x, y in zip(st, d, strict=True)
                        if isinstance(x, tuple)):
                    ok = False
                    break
            if not ok:
                break
            n += 1
        return n, steps

    def _delta(self, a: Op, b: Op) -> list[Any] | None:
        """Per operand of two ops of the same shape: 0 when it is the same value, the offset
        step per dimension when both are partition views of one tensor view differing by
        constants; None when the ops differ otherwise."""
        if a.name != b.name or a.form != b.form or a.regions or b.regions or \
                len(a.operands) != len(b.operands) or a.attributes != b.attributes or \
                a.operand_types != b.operand_types or a.syntax != b.syntax or a.results:
            return None
        if a.form != "dps" and a.name != "pto.set_validshape" and a.name not in _SYNC_NAMES:
            return None
        out: list[Any] = []
        for x, y in zip(a.operands, b.operands, strict=True):
            if x is y:
                out.append(0)
                continue
            ix, iy = self.pv_info.get(id(x)), self.pv_info.get(id(y))
            if ix is None or iy is None or ix[1] is not iy[1] or \
                    [_key(s) for s in ix[4]] != [_key(s) for s in iy[4]]:
                return None
            d: list[int] = []
            for ox, oy in zip(ix[3], iy[3], strict=True):
                (tx, cx), (ty, cy) = _linear(ox), _linear(oy)
                if {k: v[0] for k, v in tx.items()} != {k: v[0] for k, v in ty.items()}:
                    return None
                d.append(cy - cx)
            out.append(tuple(d))
        return out

    def _loop_of(self, body: list[Op], n: int, steps: list[Any]) -> Op:
        # start the loop at m when every stepped offset is m * step + rest (then the views'
        # offsets are rest + k * step: the loop index is the written one, e.g. 1 to 8)
        starts = set()
        for op, st in zip(body, steps, strict=True):
            for v, d in zip(op.operands, st, strict=True):
                if isinstance(d, tuple):
                    for o, c in zip(self.pv_info[id(v)][3], d, strict=True):
                        if c:
                            c0 = _linear(o)[1]
                            starts.add(c0 // c if c0 % c == 0 else None)
        m = starts.pop() if len(starts) == 1 and None not in starts else 0
        m = m if m >= 0 else 0
        iv = Value("k?", T.INDEX, owner="arg")
        lp = _Loop(iv)
        k = SymInt(m, ("iv", lp), None, True)
        self.scopes.append(_Scope())
        try:
            for op, st in zip(body, steps, strict=True):
                operands = list(op.operands)
                for j, d in enumerate(st):
                    if not isinstance(d, tuple):
                        continue
                    _, tv, tv_type, offs, sizes, dt, hint = self.pv_info[id(operands[j])]
                    new = [_rebuild(o, -m * c) + k * c if c else o
                           for o, c in zip(offs, d, strict=True)]
                    operands[j] = self.partition(tv, tv_type, new, sizes, dt, hint)
                self.scopes[-1].ops.append(dataclasses.replace(op, operands=tuple(operands)))
        finally:
            scope = self.scopes.pop()
        if not lp.named:
            iv.name = self._name("k")
        return Op("scf.for", operands=(self.const(m), self.const(m + n), self.const(1)),
                  form="for",
                  regions=(Region((Block(tuple(scope.ops), (iv,)),)),))

    def _dead_code(self, prologue: list[Op], rest: list[Op]) -> list[Op]:
        """``prologue`` without the ops whose results nothing uses (views and index
        arithmetic left over from unrolled iterations)."""
        keep = list(prologue)
        while True:
            used: set[int] = set()
            for op in keep + rest:
                for o in op.walk():
                    used.update(id(v) for v in o.operands)
            kept = [op for op in keep if not op.results
                    or any(id(r) in used for r in op.results)
                    or op.name == "pto.alloc_tile"]
            if len(kept) == len(keep):
                return kept
            keep = kept

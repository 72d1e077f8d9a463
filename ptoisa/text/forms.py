"""Matching an op body's pieces to the DPS form (``ins(...) outs(...)``) and the SSA form
(``%r = pto.X %a : (T) -> T``), and the result types an SSA spelling implies."""

from __future__ import annotations

from ptoisa.ir import types as T
from ptoisa.ir.core import Op, Piece
from ptoisa.text.base import P_ARROW, P_COLON, P_COMMA, P_LPAREN, P_RPAREN

_NO_WORDS = ("func.return", "scf.yield", "scf.condition", "func.call")
_WORDS_OK = frozenset(["to", "overflow", "fastmath", "exact"])  # casts, MLIR flags


def _stray_piece(op: Op, pieces: list[Piece]) -> int | None:
    """Index of a piece that no spelling of ``op`` has (a stray word), else None: anything
    after ``outs(...)`` of a DPS op but an attribute dictionary; a word before ``ins(`` of
    an op that writes one; a bare word in an arith op (other than a comparison predicate and
    'to') or in return / yield / call."""
    if op.form == "dps":
        return len(pieces) - len(op.syntax) if op.syntax else None
    if op.form == "generic":
        return None
    words = [(j, p.value) for j, p in enumerate(pieces) if p.kind == "k"]
    if op.name.startswith("pto.") and any(w == "ins" for _, w in words):
        first = next((j for j, p in enumerate(pieces) if p.kind not in ("v", "p")), None)
        if first is not None and pieces[first] != Piece("k", "ins"):
            return first
        return None
    if op.name in _NO_WORDS or (op.name.startswith("arith.")
                                and op.name not in ("arith.cmpi", "arith.cmpf")):
        for j, w in words:
            if w not in _WORDS_OK:
                return j
    return None




def _match_group(
    pieces: list[Piece], j: int
) -> tuple[int, list[int], list[T.Type], tuple[str, ...] | None] | None:
    """Match ``( v, v [{d}] : t, t )`` starting at pieces[j] == '('. Returns the index after
    ')', operand indices, types and the dict keys (or None)."""
    n = len(pieces)
    if j >= n or pieces[j] != P_LPAREN:
        return None
    j += 1
    vals: list[int] = []
    types: list[T.Type] = []
    keys = None
    # per-operand spelling: ( v : t, v : t )
    k = j
    while k + 2 < n and pieces[k].kind == "v" and pieces[k + 1] == P_COLON:
        if pieces[k + 2].kind != "t":
            break
        vals.append(pieces[k].value)  # type: ignore[arg-type]
        types.append(pieces[k + 2].value)  # type: ignore[arg-type]
        k += 3
        if k < n and pieces[k] == P_COMMA:
            k += 1
            continue
        if k < n and pieces[k] == P_RPAREN and len(vals) > 1:
            return k + 1, vals, types, None
        break
    vals, types = [], []
    while j < n and pieces[j].kind == "v":
        vals.append(pieces[j].value)  # type: ignore[arg-type]
        j += 1
        if j < n and pieces[j] == P_COMMA:
            j += 1
            if j < n and pieces[j].kind != "v":
                return None
    if j < n and pieces[j].kind == "d":
        keys = pieces[j].value  # type: ignore[assignment]
        j += 1
    if vals:
        if j >= n or pieces[j] != P_COLON:
            return None
        j += 1
        while j < n and pieces[j].kind == "t":
            types.append(pieces[j].value)  # type: ignore[arg-type]
            j += 1
            if j < n and pieces[j] == P_COMMA:
                j += 1
    if j >= n or pieces[j] != P_RPAREN or len(types) != len(vals):
        return None
    return j + 1, vals, types, keys


def _match_dps(
    pieces: list[Piece], nops: int
) -> tuple[int, int, str, tuple[T.Type | None, ...], list[Piece]] | None:
    if len(pieces) < 3 or pieces[0] != Piece("k", "ins") and pieces[0] != Piece("k", "outs"):
        return None
    j = 0
    in_pos: list[int] = []
    outs: list[int] = []
    types: list[T.Type] = []
    place = "after"
    if pieces[0] == Piece("k", "ins"):
        m = _match_group(pieces, 1)
        if m is None:
            return None
        j, in_pos, types, keys = m
        if keys is not None:
            place = "ins"
    if j < len(pieces) and pieces[j] == Piece("k", "outs"):
        m = _match_group(pieces, j + 1)
        if m is None or m[3] is not None:
            return None
        j, outs, out_types, _ = m
        types += out_types
    if in_pos + outs != list(range(len(in_pos) + len(outs))):
        return None
    tail = pieces[j:]
    if tail and tail[0].kind == "d":
        if place == "ins":
            return None
        tail = tail[1:]
    if any(p.kind == "d" for p in tail):
        return None
    return len(in_pos), len(outs), place, tuple(types) + (None,) * (nops - len(types)), tail


def _match_ssa(pieces: list[Piece], nops: int, nres: int) -> tuple[T.FunctionType, str] | None:
    """``v, v [{d}] : (t, t) -> t [{d}]`` or ``v : t -> t``."""
    n = len(pieces)
    j = 0
    k = 0
    while j < n and pieces[j].kind == "v":
        if pieces[j].value != k:
            return None
        k += 1
        j += 1
        if j < n and pieces[j] == P_COMMA:
            j += 1
            if j >= n or pieces[j].kind != "v":
                return None
    if k != nops:
        return None
    place = "after"
    if j < n and pieces[j].kind == "d":
        place = "ins"
        j += 1
    if j >= n or pieces[j] != P_COLON:
        return None
    j += 1
    if j < n and pieces[j].kind == "t" and isinstance(pieces[j].value, T.FunctionType):
        ftype: T.FunctionType = pieces[j].value  # type: ignore[assignment]
        j += 1
    elif (
        nops == 1
        and j + 2 < n
        and pieces[j].kind == "t"
        and pieces[j + 1] == P_ARROW
        and pieces[j + 2].kind == "t"
    ):
        ftype = T.intern(T.FunctionType((pieces[j].value,), (pieces[j + 2].value,)))  # type: ignore[arg-type]
        j += 3
    else:
        return None
    if j < n and pieces[j].kind == "d" and place == "after" and pieces[j].value:
        j += 1
    if j != n or len(ftype.inputs) != nops or len(ftype.results) != nres:
        return None
    return ftype, place


_I64_RESULT_OPS = frozenset(
    ["pto.get_block_idx", "pto.get_block_num", "pto.get_subblock_idx", "pto.get_subblock_num"]
)


def _infer_result_types(name: str, pieces: list[Piece], nres: int) -> list[T.Type]:
    """Result types of a custom spelling, from where MLIR custom formats put them.

    Order of evidence: a function type after ':'; the types after the last '->'; a type after
    'to'; then the types after the last ':'. Returns [] when the text states no type.
    """
    if nres == 0:
        return []
    if name in ("arith.cmpi", "arith.cmpf"):
        return [T.I1] * nres
    if name in _I64_RESULT_OPS:
        return [T.I64] * nres
    if name == "pto.eventid_array_get":
        return [T.INDEX] * nres
    if name == "pto.subset":  # the written type is the source's; the result's is derived
        return []
    if name == "pto.partition_view" and not any(p.kind == "p" and p.value == "->"
                                                for p in pieces):
        # PTOAS's short form ``: !pto.tensor_view<...>`` writes only the source type; the
        # result's (a partition_tensor_view of the sizes) is derived (issue31 parser compat)
        return []
    last_arrow = last_colon = last_to = -1
    for j, p in enumerate(pieces):
        if p.kind == "p":
            if p.value == "->":
                last_arrow = j
            elif p.value == ":":
                last_colon = j
        elif p.kind == "k" and p.value == "to":
            last_to = j
    if last_colon >= 0 and last_colon + 1 < len(pieces):
        p = pieces[last_colon + 1]
        if p.kind == "t" and isinstance(p.value, T.FunctionType) and last_arrow < last_colon:
            return list(p.value.results)
    for start in (last_arrow, last_to, last_colon):
        if start < 0:
            continue
        types: list[T.Type] = []
        for p in pieces[start + 1 :]:
            if p.kind == "t":
                types.append(p.value)  # type: ignore[arg-type]
            elif p.kind == "p" and p.value in ",()":
                continue
            else:
                break
        if types:
            if len(types) > nres:
                types = types[-nres:]
            return types
    return []



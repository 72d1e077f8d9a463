"""How PTOAS spells an instruction: declared on its registry entry (``@instr(..., ptoas=...)``).

Most ``pto.*`` ops are named ``pto.<mnemonic>`` (``pto.tmatmul.acc`` for TMATMUL_ACC) and write
their operands in the instruction's C++ order (dst in ``outs``, the rest in ``ins``); they need
no declaration. An entry whose PTOAS op spells things differently says so with a :class:`Ptoas`:

* ``forms``: op name -> the written variants (:class:`Form`): which registry operand each
  written value is (``pto.trandom`` writes the 2 key and 4 counter words as six scalars,
  ``pto.tmrgsort`` puts the executed-count vector in ``outs`` ...); an op name listed here that
  is not ``pto.<mnemonic>`` is another name of the instruction (``pto.tmatmul.mx.bias``);
* ``names``: further op names of the instruction, with the default operand mapping;
* ``attrs``: every attribute of the op's PTOAS definition (``PTOOps.td``) and what it becomes
  (:class:`Attr`); the bridge never drops an attribute: one that maps nowhere is an error;
* ``frontend``: the frontend pipe ops of mixed kernels that are this instruction
  (``pto.tpush_to_aiv`` is TPUSH); their pipe is implicit, so they are bound by their own
  handlers (ptoisa/interp/pipe_ops.py), not by the generic operand mapping;
* ``bracketed``: the synchronisation ops that are this instruction, written with their
  operands in brackets (``pto.set_flag[<PIPE_MTE2>, <PIPE_V>, <EVENT_ID0>]``) and bound by the
  interpreter's sync handler (ptoisa/interp/sync_ops.py): op name -> how many leading items
  name a PTOAS op kind (``pto.record_event[<TLOAD>, <TVEC>, ...]``) instead of a pipe;
* ``op``: the op ptoisa writes for the instruction (the exporter), where it is not
  ``pto.<mnemonic>`` (``pto.tmatmul.acc``, ``pto.barrier``);
* ``materialised``: the scratch operands (``tmp``) the op may leave out, PTOAS then
  allocating one (``pto.trowmax ins(%src) outs(%dst)``);
* ``rules``: static rules PTOAS's verifier adds for one op name (not made by eager calls);
* ``keywords``: a keyword among the ins that makes the op another entry (``fp %fp``:
  TEXTRACT_FP).

Form fields: ``ins``/``outs``: registry operand names for the written ``ins``/``outs`` (SSA
operands / results) in order; ``"key*2"`` packs the next two written values into one tuple
operand, ``"events*"`` all the remaining ones; ``"-"`` drops a written value the instruction
does not take. ``segments``: for the generic spelling ``"pto.X"(...) <{operandSegmentSizes =
...}>``, the ODS operand groups in order. ``attr_operands``: written attribute -> registry
operand for this variant only. ``retype``: operand -> tile location the instruction sees
(PTOAS writes every scale tile as ``loc=scaling``; :data:`SCALE` picks ScaleLeft/ScaleRight by
the tile's box order). ``bundles``: for the ``pto.comm.*`` spelling whose operands are
grouped under a keyword (``pto.comm.tput(%dst, %src, buf(%ping, %pong) : ...)``,
``recv(...)``, ``group(...)``), keyword -> the registry operands its values fill in order
(``"pong?"`` may be left out, ``"parallelGroup*"`` packs them all into one tuple operand);
``ins`` then names the values written outside any bundle. An out named :data:`RESULT` is the
op's SSA result receiving what the instruction returns (``%ok = pto.comm.ttest(...) -> i1``).
The variant is chosen by the written counts (first match); an op whose
counts match no variant falls back to the default mapping, which says what is expected.
``keyword``: a bare word the variant writes among its ins (PTOAS's ``no_tmp`` in
``pto.tmrgsort ins(%a, %b no_tmp ...)``, which tells an omitted tmp from a source list): the
variant fits only an op that writes the word, and the exporter never writes it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..enums import CmpMode, TileType


@dataclass(frozen=True)
class Form:
    inputs: tuple[str, ...] = ()
    outs: tuple[str, ...] = ("dst",)
    segments: tuple[str, ...] = ()
    attr_operands: Mapping[str, str] = field(default_factory=dict)
    retype: Mapping[str, TileType | str] = field(default_factory=dict)
    bundles: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    keyword: str = ""

    def fits(self, n: int) -> bool:
        """Whether ``n`` written ins fit ``self.ins`` (``"x*"`` packs all remaining values)."""
        fixed = sum(int(k.split("*")[1]) if k.split("*")[-1].isdigit() and "*" in k else 1
                    for k in self.inputs if not k.endswith("*"))
        return n >= fixed if any(k.endswith("*") for k in self.inputs) else n == fixed


#: Form out: the op's SSA result is the instruction's return value (TTEST's bool)
RESULT = "="

#: retype value: an MX scale tile, ScaleLeft (row-major boxes) or ScaleRight (NN)
SCALE = "scale"


@dataclass(frozen=True)
class Attr:
    """One attribute of a PTOAS op and what the registry makes of it.

    * ``to``: the registry template parameter or operand it sets (None: no counterpart);
    * ``values``: written value (enum spellings lower-cased) -> registry value, where the two
      spell them differently (PTOAS ``isMSB = true`` is ``HistByte.BYTE_1``); enum spellings
      that only lack the registry's common prefix (``ROUND`` for ``CAST_ROUND``) need no entry;
    * ``default``: the PTOAS default, applied when the attribute is absent, where it differs
      from the registry's default (None: the registry's default holds);
    * ``to=None``: ``only`` lists the written values accepted (they change nothing, e.g. the
      default); ``only=None`` accepts every value because the attribute has no effect on what
      the program computes, for the reason ``why`` (also the message of a rejection);
    * ``written``: where ``default`` differs from the registry's default, what the exporter
      writes for a call that leaves the parameter at the registry's default:
      ``written(operand values) -> value`` giving the same result under the op's semantics
      (None: no written value does; the call is not exported).
    """

    to: str | None = None
    values: Mapping[Any, Any] = field(default_factory=dict)
    default: Any = None
    written: Callable[[Mapping[str, Any]], Any] | None = None
    only: tuple[Any, ...] | None = ()
    why: str = ""


@dataclass(frozen=True)
class Ptoas:
    """The PTOAS spelling of one instruction (see the module doc)."""

    forms: Mapping[str, tuple[Form, ...]] = field(default_factory=dict)
    attrs: Mapping[str, Attr] = field(default_factory=dict)
    names: tuple[str, ...] = ()
    frontend: tuple[str, ...] = ()
    bracketed: Mapping[str, int] = field(default_factory=dict)
    op: str = ""
    #: scratch operands PTOAS allocates itself when the op leaves them out (its PlanMemory
    #: materialises a missing ``tmp``): scratch operand -> the operand whose tile type the
    #: allocated one takes. Under ``--pto-level=level3`` (no PlanMemory) the op must name it.
    materialised: Mapping[str, str] = field(default_factory=dict)
    #: op name -> static rules PTOAS's verifier adds for that op, beyond the instruction's
    #: own (the valid-shape contract of ``pto.tquant.mx``); the eager call does not make them
    rules: Mapping[str, tuple[Any, ...]] = field(default_factory=dict)
    #: a ``pto-test-opt`` pass (``vmi-to-vpto``) -> static rules PTOAS makes for this op only
    #: when that pass runs (a lowering's limits); checked when a lit RUN line runs the pass
    passes: Mapping[str, tuple[Any, ...]] = field(default_factory=dict)
    #: a keyword written among the op's ins (``pto.textract ins(%src, %r, %c fp %fp : ...)``)
    #: -> (the entry the op then is, how its written values map onto that entry): TEXTRACT_FP
    keywords: Mapping[str, tuple[str, Form]] = field(default_factory=dict)
    #: where PTOAS infers the lowering from the operands' types: (types written in ins,
    #: types written in outs) -> the name of the entry the op then is, or None for this one
    #: (pto.tfillpad with a dst larger than src is TFILLPAD_EXPAND)
    by_types: Callable[[tuple[Any, ...], tuple[Any, ...]], str | None] | None = None
    #: a micro-op whose trailing scalar operands may be written as named fields in any order
    #: (``m(%a), k(%b), start_row(%c), start_col(%d)``): the name of each complete group ->
    #: its field names in operand order. A group is given whole or not at all, one group at a
    #: time; its values fill the operands after the ones written positionally
    named: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    #: PTOAS's verifier's words for the op on a target that lacks it (pto.thistogram: "only
    #: supported on A5"), added to the "not supported on target" error
    unsupported: str = ""
    #: target -> operands PTOAS's memory effects of the op leave out there, so its memory
    #: planning does not count them as used by the op (A5's TPRELU does not touch its tmp:
    #: PTOAS's TPReluOp::getEffects, issue531_tprelu_vec_overflow_a5.pto); a key names a
    #: target of the lineage (a derived target inherits it)
    unplanned: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    #: the attribute name a string literal written among the ins' types stands for
    #: (``pto.tscatter ins(%src, {maskPattern = ...} : T, "col")``: its ``axis``); it then
    #: maps through ``attrs`` like that attribute written in the dictionary
    literal: str = ""


# ---- pieces several entries share ----------------------------------------------------------

#: PTOAS allocates a missing ``tmp`` of src's type (implicit_tmp_*.pto)
TMP_LIKE_SRC = Ptoas(materialised={"tmp": "src"})
LAYOUT_HINT = Attr(only=None, why="a layout hint: the GM layout is the view's")
SPLIT = {"split": Attr("Split")}
# the manual's mnemonics (``#pto<cmp less_than>``); PTOAS's own parser spells them ``lt``...
CMP_MODE = Attr("cmpMode", values={"equal": CmpMode.EQ, "not_equal": CmpMode.NE,
                                   "less_than": CmpMode.LT, "less_equal": CmpMode.LE,
                                   "greater_than": CmpMode.GT, "greater_equal": CmpMode.GE})

#: attributes that describe the op's structure, not its semantics
STRUCTURAL_ATTRS = frozenset({"operandSegmentSizes"})

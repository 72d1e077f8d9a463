"""PTOAS spellings that differ from the C++ signatures: one declarative entry per op.

Most ``pto.*`` ops write their operands in the instruction's C++ order (dst in ``outs``, the
rest in ``ins``) and :func:`ptoisa.interp.bridge.bind` maps them without help. The ops listed
here spell some operands differently in PTOAS (``pto.trandom`` writes the 2 key and 4 counter
words as six scalars, ``pto.tmrgsort`` puts the executed-count vector in ``outs`` and the tmp
tile last in ``ins`` or, in the manual's format2, in ``outs``). Each :class:`Form` says, for
one written variant, which registry operand every written value is:

* ``ins``/``outs``: registry operand names for the written ``ins``/``outs`` (SSA operands /
  results) in order; ``"key*2"`` packs the next two written values into one tuple operand,
  ``"events*"`` all the remaining ones;
  ``"-"`` drops a written value that the instruction does not take.
* ``segments``: for the generic spelling ``"pto.X"(...) <{operandSegmentSizes = ...}>``, the
  ODS operand groups in order, each named by the registry operand it feeds.
* ``attr_operands``: written attribute -> registry *operand* for this variant only (an integer
  passed as a value); attributes in general are mapped by :data:`ATTRS`.
* ``retype``: operand -> tile location the instruction sees (PTOAS writes every scale tile as
  ``loc=scaling``; the C++ MX matmul takes ScaleLeft / ScaleRight tiles, which the bridge
  builds over the scaling tile's bytes); :data:`SCALE` keeps the tile and picks ScaleLeft or
  ScaleRight by its box order (A5 ``textract`` Mat -> scaling, an MX scale window).

The variant is chosen by the written counts (first match); an op whose counts match no
variant falls back to the default mapping, which reports what the instruction expects.

:data:`ATTRS` lists, for every ``pto.*`` tile op whose PTOAS definition (``PTOOps.td``) has
attributes, each of them and what it becomes (:class:`Attr`): a registry template parameter
or operand, or no counterpart (accepted only where that loses nothing, else rejected).
:func:`ptoisa.interp.bridge.bind` never drops an attribute: one that maps nowhere is an error
at its location.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..enums import CmpMode, TileType
from ..isa.irregular import HistByte, ScatterAtomicOp


@dataclass(frozen=True)
class Form:
    ins: tuple[str, ...] = ()
    outs: tuple[str, ...] = ("dst",)
    segments: tuple[str, ...] = ()
    attr_operands: Mapping[str, str] = field(default_factory=dict)
    retype: Mapping[str, TileType | str] = field(default_factory=dict)

    def fits(self, n: int) -> bool:
        """Whether ``n`` written ins fit ``self.ins`` (``"x*"`` packs all remaining values)."""
        fixed = sum(int(k.split("*")[1]) if k.split("*")[-1].isdigit() and "*" in k else 1
                    for k in self.ins if not k.endswith("*"))
        return n >= fixed if any(k.endswith("*") for k in self.ins) else n == fixed


#: retype value: an MX scale tile, ScaleLeft (row-major boxes) or ScaleRight (NN)
SCALE = "scale"

_MX_SCALES = {"aScaleMatrix": TileType.ScaleLeft, "bScaleMatrix": TileType.ScaleRight}

_MX_INS = ("aMatrix", "aScaleMatrix", "bMatrix", "bScaleMatrix")
_MX = (Form(ins=_MX_INS, outs=("cMatrix",), retype=_MX_SCALES),
       Form(ins=(*_MX_INS, "biasData"), outs=("cMatrix",), retype=_MX_SCALES))

_MX_ACC = (Form(ins=("aMatrix", "aScaleMatrix", "bMatrix", "bScaleMatrix", "biasData"),
                outs=("cMatrix",),
                retype={"bMatrix": TileType.ScaleLeft, "biasData": TileType.ScaleRight}),)

# ``pto.X.bias`` spellings of instructions whose bias is an optional operand in C++
INSTR_ALIASES: dict[str, str] = {"pto.tmatmul.mx.bias": "TMATMUL_MX",
                                 "pto.tgemv.mx.bias": "TGEMV_MX",
                                 # (cOut, cIn, a, sa, b, sb): the C++ TMATMUL_MX overload
                                 "pto.tmatmul.mx.acc": "TMATMUL_MX",
                                 "pto.tgemv.mx.acc": "TGEMV_MX"}

#: frontend pipe ops and the registry instruction each one is. Their pipe is implicit (the
#: function's initialize_*_pipe; interp/verify.py pairs them), so they are not bound through
#: ``instr_of``, which would ask for the C++ pipe operand.
FRONTEND_PIPE_OPS: dict[str, str] = {
    "pto.tpush_to_aiv": "TPUSH", "pto.tpush_to_aic": "TPUSH",
    "pto.tpop_from_aic": "TPOP", "pto.tpop_from_aiv": "TPOP",
    "pto.tfree_from_aic": "TFREE", "pto.tfree_from_aiv": "TFREE"}

FORMS: dict[str, tuple[Form, ...]] = {
    # PTOAS: trandom ins(k0, k1, c0, c1, c2, c3) outs(dst) {rounds}; C++: TRANDOM(dst, key, ctr)
    "pto.trandom": (Form(ins=("key*2", "counter*4")),),
    # PTOAS: ins(src0, src1[, src2[, src3]], tmp) outs(dst, executed: vector<4xi16>)
    # C++: TMRGSORT<exhausted>(dst, executedNumList, tmp, src0, src1, ...)
    # The manual's format2 writes tmp in outs: ins(src0..srcN) outs(dst, tmp, executed)
    "pto.tmrgsort": (
        Form(ins=("a1", "a2")),
        Form(ins=("src0", "src1", "a2"), outs=("dst", "a1")),
        Form(ins=("src0", "src1", "src2", "a2"), outs=("dst", "a1")),
        Form(ins=("src0", "src1", "src2", "src3", "a2"), outs=("dst", "a1")),
        Form(ins=("src0", "src1"), outs=("dst", "a2", "a1")),
        Form(ins=("src0", "src1", "src2"), outs=("dst", "a2", "a1")),
        Form(ins=("src0", "src1", "src2", "src3"), outs=("dst", "a2", "a1")),
    ),
    # mask form ins(src) {maskPattern}; index form ins(src, indices, tmp);
    # compare form ins(src, kValue, tmp) outs(dst, cdst) {offset}:
    # C++ TGATHER<cmpMode>(dst, src0, kValue, cdst, tmp, offset)
    "pto.tgather": (
        Form(ins=("src0",)),
        Form(ins=("src0", "src1", "tmp")),
        Form(ins=("src0", "src1", "tmp2"), outs=("dst", "tmp"), attr_operands={"offset": "offset"}),
    ),
    # generic spelling: operandSegmentSizes over (src, dst, fp, preQuantScalar)
    "pto.tmov": (
        Form(ins=("src",)),
        Form(ins=("src", "fp")),
        Form(segments=("src", "dst", "fp", "fp")),
    ),
    # %ev = pto.tput_async(%dst, %src, %session) -> !pto.async_event: dst written in the call
    "pto.tput_async": (Form(ins=("dst", "src", "session"), outs=("-",)),
                       Form(ins=("dst", "src", "session", "peer"), outs=("-",))),
    "pto.tget_async": (Form(ins=("dst", "src", "session"), outs=("-",)),
                       Form(ins=("dst", "src", "session", "peer"), outs=("-",))),
    # pto.tpush(%tile, %pipe) / pto.tpop(%tile, %pipe) / pto.tfree(%pipe) {split = 0|1|2};
    # C++ TPUSH/TPOP<Pipe, Tile, Split>(pipe, tile), TFREE<Pipe, Split>(pipe)
    "pto.tpush": (Form(ins=("tile", "pipe"), outs=()),),
    "pto.tpop": (Form(ins=("tile", "pipe"), outs=()),),
    "pto.tfree": (Form(ins=("pipe",), outs=()),),
    # tsync ins(%a, %b, ...): the C++ TSYNC(events...) is variadic
    "pto.tsync": (Form(ins=("events*",), outs=()),),
    # INT8 only: ins(src, fp[, offset]) {quant_type}; the registry's TQUANT takes the C++
    # INT8 operands (dst, src, scale, tmp?, offset?): fp is the scale, offset the last one
    "pto.tquant": (Form(ins=("src", "exp")), Form(ins=("src", "exp", "scaling"))),
    # A5 textract mat -> scaling extracts an MX scale window (the TEXTRACT Mat -> Scale path)
    "pto.textract": (Form(ins=("src", "indexRow", "indexCol"), retype={"dst": SCALE}),),
    "pto.tmatmul.mx": _MX,
    "pto.tmatmul.mx.bias": _MX,
    "pto.tgemv.mx": _MX,
    "pto.tgemv.mx.bias": _MX,
    # ins(cIn, a, sa, b, sb) outs(cOut): the registry's positional (cOut, cIn, a, sa, b, sb)
    "pto.tmatmul.mx.acc": _MX_ACC,
    "pto.tgemv.mx.acc": _MX_ACC,
}


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
      the program computes, for the reason ``why`` (also the message of a rejection).
    """

    to: str | None = None
    values: Mapping[Any, Any] = field(default_factory=dict)
    default: Any = None
    only: tuple[Any, ...] | None = ()
    why: str = ""


_LAYOUT_HINT = Attr(only=None, why="a layout hint: the GM layout is the view's")
_SPLIT = {"split": Attr("Split")}
# the manual's mnemonics (``#pto<cmp less_than>``); PTOAS's own parser spells them ``lt``...
_CMP = Attr("cmpMode", values={"equal": CmpMode.EQ, "not_equal": CmpMode.NE,
                               "less_than": CmpMode.LT, "less_equal": CmpMode.LE,
                               "greater_than": CmpMode.GT, "greater_equal": CmpMode.GE})

#: the attributes of PTOAS's op definitions (PTOAS include/PTO/IR/PTOOps.td, checked against
#: commit a56b18c), plus the discardable ones the PTOAS test corpus writes (``layout``)
ATTRS: dict[str, dict[str, Attr]] = {
    "pto.tcvt": {"rmode": Attr("mode"), "sat_mode": Attr("satMode")},
    "pto.tload": {
        "pad_mode": Attr(why="PTOAS lowers pto.tload to a TLOAD without padding; write "
                             "pto.tfillpad for padding"),
        "init_out_buffer": Attr(only=(False,), why="PTOAS lowers pto.tload to a TLOAD that "
                                                  "does not initialise the tile"),
        "layout": _LAYOUT_HINT},
    "pto.tstore": {
        "stPhase": Attr(only=None, why="the phase of a split store synchronises the fix pipe "
                                       "with the cube; the functional model runs in order"),
        "atomicType": Attr("atomicType"), "reluPreMode": Attr("reluPreMode"),
        "layout": _LAYOUT_HINT},
    "pto.tmov": {"accToVecMode": Attr("mode"), "reluPreMode": Attr("reluMode")},
    # C++ A5: THISTOGRAM<..., isMSB> is HistByte BYTE_1 (the high byte of a ui16) vs BYTE_0
    "pto.thistogram": {"isMSB": Attr("byte", values={True: HistByte.BYTE_1,
                                                      False: HistByte.BYTE_0}, default=True)},
    "pto.mscatter": {"scatterAtomicOp": Attr("Atomic", values={"none": ScatterAtomicOp.NoOp}),
                     "scatterOob": Attr("Oob")},
    "pto.tci": {"descending": Attr("descending")},
    "pto.ttri": {"upperOrLower": Attr("isUpperOrLower")},
    "pto.tcmp": {"cmpMode": _CMP},
    "pto.tcmps": {"cmpMode": _CMP},
    "pto.tcolsum": {"isBinary": Attr("isBinary")},
    "pto.trandom": {"rounds": Attr("Rounds")},
    "pto.tgather": {"maskPattern": Attr("maskPattern"), "cmpMode": _CMP,
                    "offset": Attr("offset")},
    "pto.tmrgsort": {"exhausted": Attr("exhausted")},
    "pto.tquant": {"quant_type": Attr("quant_type")},
    "pto.tpush": _SPLIT, "pto.tpop": _SPLIT, "pto.tfree": _SPLIT,
}

#: attributes that describe the op's structure, not its semantics
STRUCTURAL_ATTRS = frozenset({"operandSegmentSizes"})


def forms_of(op_name: str) -> tuple[Form, ...]:
    return FORMS.get(op_name, ())


__all__ = ["ATTRS", "FORMS", "FRONTEND_PIPE_OPS", "INSTR_ALIASES", "SCALE", "STRUCTURAL_ATTRS",
           "Attr", "Form", "forms_of"]

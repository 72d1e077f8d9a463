"""PTOAS spellings that differ from the C++ signatures: one declarative entry per op.

Most ``pto.*`` ops write their operands in the instruction's C++ order (dst in ``outs``, the
rest in ``ins``) and :func:`ptoisa.interp.bridge.bind` maps them without help. The ops listed
here spell some operands differently in PTOAS (``pto.trandom`` writes the 2 key and 4 counter
words as six scalars, ``pto.tmrgsort`` puts the executed-count vector in ``outs`` and the tmp
tile last in ``ins``, ``pto.tmov`` names its template arguments ``reluPreMode``...). Each
:class:`Form` says, for one written variant, which registry operand every written value is:

* ``ins``/``outs``: registry operand names for the written ``ins``/``outs`` (SSA operands /
  results) in order; ``"key*2"`` packs the next two written values into one tuple operand,
  ``"events*"`` all the remaining ones;
  ``"-"`` drops a written value that the instruction does not take.
* ``segments``: for the generic spelling ``"pto.X"(...) <{operandSegmentSizes = ...}>``, the
  ODS operand groups in order, each named by the registry operand it feeds.
* ``attrs``: written attribute name -> registry template parameter (when the names differ);
  ``attr_operands``: written attribute -> registry *operand* (an integer passed as a value).
* ``retype``: operand -> tile location the instruction sees (PTOAS writes every scale tile as
  ``loc=scaling``; the C++ MX matmul takes ScaleLeft / ScaleRight tiles, which the bridge
  builds over the scaling tile's bytes); :data:`SCALE` keeps the tile and picks ScaleLeft or
  ScaleRight by its box order (A5 ``textract`` Mat -> scaling, an MX scale window).

The variant is chosen by the written counts (first match); an op whose counts match no
variant falls back to the default mapping, which reports what the instruction expects.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from ..enums import TileType


@dataclass(frozen=True)
class Form:
    ins: tuple[str, ...] = ()
    outs: tuple[str, ...] = ("dst",)
    segments: tuple[str, ...] = ()
    attrs: Mapping[str, str] = field(default_factory=dict)
    attr_operands: Mapping[str, str] = field(default_factory=dict)
    retype: Mapping[str, TileType | str] = field(default_factory=dict)

    def fits(self, n: int) -> bool:
        """Whether ``n`` written ins fit ``self.ins`` (``"x*"`` packs all remaining values)."""
        fixed = sum(int(k.split("*")[1]) if k.split("*")[-1].isdigit() and "*" in k else 1
                    for k in self.ins if not k.endswith("*"))
        return n >= fixed if any(k.endswith("*") for k in self.ins) else n == fixed


#: retype value: an MX scale tile, ScaleLeft (row-major boxes) or ScaleRight (NN)
SCALE = "scale"

_TMOV_ATTRS = {"reluPreMode": "reluMode", "accToVecMode": "mode"}
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
    "pto.tmrgsort": (
        Form(ins=("a1", "a2")),
        Form(ins=("src0", "src1", "a2"), outs=("dst", "a1")),
        Form(ins=("src0", "src1", "src2", "a2"), outs=("dst", "a1")),
        Form(ins=("src0", "src1", "src2", "src3", "a2"), outs=("dst", "a1")),
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
        Form(ins=("src",), attrs=_TMOV_ATTRS),
        Form(ins=("src", "fp"), attrs=_TMOV_ATTRS),
        Form(segments=("src", "dst", "fp", "fp"), attrs=_TMOV_ATTRS),
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


def forms_of(op_name: str) -> tuple[Form, ...]:
    return FORMS.get(op_name, ())


__all__ = ["FORMS", "FRONTEND_PIPE_OPS", "INSTR_ALIASES", "SCALE", "Form", "forms_of"]

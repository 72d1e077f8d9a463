"""THE registry: every instruction is declared here once.

An :class:`Instr` holds the instruction's operands (name, kind, role), its template
parameters (keyword arguments with defaults), its pipe, the operand whose element type the
per-target legality tables key on, static rules (pure functions over operand *types*, shared
by the eager API and the IR verifier), run-time rules (over operand values), and its numpy
semantics. The eager intrinsic ``pto.TROWSUM(dst, src, tmp)`` is the Instr object itself.
"""

from __future__ import annotations

import enum
import inspect
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import lazy
from ..dtypes import DType
from ..dtypes import names as dt_names
from ..enums import Pipe, TileType, coerce_enum
from ..errors import (
    ConstraintError,
    IllegalInstruction,
    PtoError,
    PtoMemoryError,
    RuntimeCheckError,
    UnsupportedType,
    needs_values,
)
from ..foreign import read_only_origin
from ..lanes import Lanes, block_of, uniform
from ..memory import Machine, current
from ..ptoas_source import SourceRule
from ..targets import Target, TargetLike, get_target, known_targets
from ..tensor import GlobalTensor, GMSpec
from ..tile import Tile, TileSpec
from ..vector.logical import LMask, LVec, VmiSpec
from ..vector.regs import Align, Mask, Ptr, PtrSpec, VReg, VRegSpec, vreg_spec
from .signature import signature
from .spelling import Attr, Form, Ptoas

if TYPE_CHECKING:
    from .valid_region import SameValid


@dataclass(frozen=True)
class Opnd:
    """One operand: ``kind`` is 'tile', 'gm', 'tile|gm' or 'scalar' (tile instructions),
    'vreg', 'mask', 'align', 'ptr' (an on-chip :class:`~ptoisa.vector.regs.Ptr` or a GM
    pointer array) or 'group' (a tuple of scalars: a keyword group such as ``nburst(...)``;
    a group that may repeat is a tuple of such tuples) for micro-ops; ``role`` in/out/inout/
    scratch. VMI entries add 'lvec' / 'lmask' (logical vectors and masks,
    :mod:`ptoisa.vector.logical`) and 'index' (an ``index`` scalar, where an operand of
    another integer type may stand in the same place). SIMT entries take 'simt' (a number, or
    an array of one per workitem of the running SIMT launch). Optional operands may be
    omitted (``None``)."""

    name: str
    kind: str = "tile"
    role: str = "in"
    optional: bool = False
    enum: type[enum.Enum] | None = None  # for kind "enum": runtime enum arguments (CmpMode)


@dataclass(frozen=True)
class Param:
    """A template parameter: keyword argument with a default; enums are coerced."""

    name: str
    default: Any
    type: type | None = None


class Event:
    """What every intrinsic returns (C++ RecordEvent): the producing op and its pipe.

    Pass events as trailing arguments to later intrinsics to wait on them. Results are computed
    in program order; the sanitizer (``sanitize=True``) checks that the waits order what the
    NPU's concurrent pipes need (``src``: the producer's record, when it was observed).
    """

    __slots__ = ("op", "_pipe", "src", "_of")

    def __init__(self, op: str, pipe: Pipe | None, src: InstrRecord | None = None,
                 of: tuple[Instr, list[Any]] | None = None) -> None:
        self.op = op
        #: the pipe, or None while it is still to be found from the operands (``of``:
        #: an operand-dependent pipe is looked up only if someone asks)
        self._pipe = pipe
        self._of = of
        #: the producer's record when observers watched it (the sanitizer finds the
        #: producer's clock there, ``src.tag``)
        self.src = src

    @property
    def pipe(self) -> Pipe:
        p = self._pipe
        if p is None:
            ins, vals = self._of  # type: ignore[misc]
            p = self._pipe = ins.pipe_on(vals)
            self._of = None
        return p

    def __repr__(self) -> str:
        return f"<Event {self.op} on {self.pipe.value}>"


class Sig:
    """Operand types of one use of an instruction: what static rules look at."""

    __slots__ = ("ins", "target", "types", "params", "permissive")

    def __init__(self, ins: Instr, target: Target, types: dict[str, Any],
                 params: dict[str, Any], permissive: bool = False) -> None:
        self.ins = ins
        self.target = target
        self.types = types
        self.params = params
        #: the machine skips the documented checks the CPU simulator does not make
        self.permissive = permissive

    def __getitem__(self, name: str) -> Any:
        return self.types.get(name)

    def fail(self, msg: str, ptoas: bool | SourceRule = False,
             names: tuple[str, ...] = ()) -> IllegalInstruction:
        """The error a static rule raises; ``ptoas``: the rule is PTOAS's verifier's, True
        when ``msg`` starts with its words (found in PTOAS's lit tests), or a
        :class:`~ptoisa.isa.ptoas_source.SourceRule` cited from PTOAS's source: on the
        targets it names, its words (``names`` in its slots) are quoted after ``msg`` (see
        :attr:`PtoError.ptoas_rule`)."""
        source = ""
        if isinstance(ptoas, SourceRule):
            if self.target.name in ptoas.targets:
                msg = f"{msg} (PTOAS: {ptoas.text(*names)})"
                source = ptoas.cite
            ptoas = bool(source)
        e = IllegalInstruction(msg, op=self.ins.mnemonic)
        e.ptoas_rule = ptoas
        e.ptoas_source = source
        return e


StaticRule = Callable[[Sig], None]
RuntimeRule = Callable[..., None]


@dataclass(eq=False)
class Instr:
    name: str
    family: str
    pipe: Pipe
    operands: tuple[Opnd, ...]
    params: tuple[Param, ...]
    impl: Callable[..., Any]
    dtype_key: tuple[str, ...] = ()
    static: tuple[StaticRule, ...] = ()
    runtime: tuple[RuntimeRule, ...] = ()
    returns_event: bool = True
    doc: str = ""
    #: the semantics index tiles as ``[..., r, c]`` and so run all blocks of a lockstep launch
    #: in one call; other instructions run once per block there (see ptoisa.grid)
    batched: bool = False
    #: (batched) the semantics never look at the tiles' valid regions (placement and views:
    #: TASSIGN, TRESHAPE, TSUBVIEW ...): one call for all blocks even when they differ by block
    any_valid: bool = False
    #: per-target declarations (JAX's ``platform=`` lowering rules): a key names a target of
    #: the lineage (``Target.lineage``); ``impl_for`` replaces the semantics there (returning
    #: ``NotImplemented`` from it runs the common semantics for that use),
    #: ``static_for`` / ``runtime_for`` add rules that hold there only (a common rule that holds
    #: everywhere but on some targets is :func:`except_on` in ``static`` / ``runtime``)
    impl_for: dict[str, Callable[..., Any]] = field(default_factory=dict)
    static_for: dict[str, tuple[StaticRule, ...]] = field(default_factory=dict)
    runtime_for: dict[str, tuple[RuntimeRule, ...]] = field(default_factory=dict)
    #: the pipe, when it depends on the operands (TMOV/TEXTRACT/TINSERT by the source and
    #: destination locations, TSTORE from an Acc tile ...): a :class:`PipeForms` table, or
    #: ``fn(operand values by name) -> Pipe | None`` (None: ``pipe``)
    pipe_of: Callable[[dict[str, Any]], Pipe | None] | None = None
    #: the instruction's plain form, a ufunc ``fn(*sources, out=dst)``: what the semantics
    #: compute when every operand is a placed row- or column-major tile (not boxed, not packed)
    #: whose valid region is the whole tile and nothing reads or computes lazily (then no
    #: run-time rule can fail). Elementwise instructions declare it; see :meth:`try_plain`
    plain: Callable[..., Any] | None = None
    #: (with ``plain``) how a scalar operand becomes a value of dst's element type for it:
    #: ``fn(value, dtype)``, as the semantics convert it
    plain_scalar: Callable[[Any, DType], Any] | None = None
    #: the instruction's common case in one step: ``fn(ins, machine, values, params)`` runs
    #: the run-time rules and the semantics of a use it recognises, built from the same
    #: helpers as they are (same results, same errors), and returns True; False when the use
    #: is not one it takes, having done nothing. Tried where nobody observes the machine, the
    #: semantics run once (one block, or all blocks of a lockstep launch together), the static
    #: rules passed, and the target declares no semantics or run-time rules of its own (see
    #: :meth:`run`): it saves the steps of the general dispatch
    fast: Callable[[Instr, Machine, list[Any], dict[str, Any]], bool] | None = None
    #: the instruction's planned form (ptoisa/plans.py): ``fn(ins, machine, values, params)``
    #: -> a call that runs this use (its run-time rules and semantics, from the same helpers,
    #: with what the operands' identities, types and the parameters decide done once) and
    #: returns True, or False when the run's state does not allow it, having done nothing
    #: (the plan then calls the entry as Instr.run would); None: no such call for this use.
    #: Asked once, when a launch is planned, under the conditions of ``fast``; the call runs
    #: after the copy-on-write settling of what the use writes (as ``fast``)
    plan: Callable[[Instr, Machine, list[Any], dict[str, Any]],
                   Callable[[], bool] | None] | None = None
    #: how PTOAS spells it where that differs from ``pto.<mnemonic>`` with the C++ operand
    #: order (other op names, operand forms, attributes, frontend pipe ops): see isa/spelling.py
    ptoas: Ptoas | None = None
    #: what a use does to memory, for observers (ptoisa.concurrent.access): ``"data"`` (reads and
    #: writes
    #: its operands by their roles), ``"view"`` (makes operand 0 a view of operand 1's bytes:
    #: no data moves), ``"place"`` (places a tile or binds a GM view: no data moves)
    access: str = "data"
    #: (access ``"view"``) the view's byte offset in its base: ``fn(operand values) -> int``
    #: (None: offset 0)
    view_offset: Callable[[list[Any]], int] | None = None
    #: operands whose role in a use is not the declared one (``any`` operands that may be a
    #: tile): operand name -> role, or ``fn(operand values) -> role``
    access_roles: dict[str, str | Callable[[list[Any]], str]] = field(default_factory=dict)
    #: the synchronisation the instruction is (None: it is none), one of :data:`SYNC_KINDS`
    sync: str | None = None
    #: the documented valid-region equalities of its sources with dst (isa/valid_region.py):
    #: their run-time rules join ``runtime`` / ``runtime_for`` when the entry is declared
    same_valid: SameValid | None = None
    #: the ISA level: ``"tile"`` (tile instructions), ``"vpto"`` (vector micro-ops), ``"vmi"``
    dialect: str = "tile"
    #: the SSA results the semantics return (a micro-op's registers: one value, or a tuple
    #: in this order); an entry with results returns them, not an Event
    results: tuple[Opnd, ...] = ()
    #: what a use does on a machine that computes no values (``Machine.values`` False: a
    #: timing-only cycle run): ``"skip"`` (the rules are checked, the semantics do not run: they
    #: only compute data), ``"run"`` (the semantics run: synchronisation, placement, views,
    #: settings, registers returned as SSA values), ``"refuse"`` (its effect is a value shown
    #: or returned to the program: the run stops, naming it). "" (the default): "run" for a
    #: sync, a non-"data" access or an entry with results, else "skip"
    timing: str = ""
    #: a micro-op whose semantics compute each lane alone and take registers, masks and
    #: counts with a leading axis of rows as well as single ones (one row per iteration of a
    #: vecscope loop run as one batch: ``interp/vbatch.py``), giving each row what a single
    #: operand would
    rows: bool = False
    #: a micro-op whose scalar result, fed back as its one scalar operand (a loop carrying
    #: ``pto.plt``'s count of lanes to go), follows in closed form: ``chain(first, n)`` is the
    #: operand of n + 1 such uses in a row (the last what the n-th returns)
    chain: Callable[[int, int], np.ndarray] | None = None
    #: a ``rows`` micro-op that reads or writes a buffer: ``rows_access(vals, params)`` is
    #: [(role, byte starts, bytes), ...] of a use with one offset per row (an int64 array
    #: among ``vals``; registers and masks given by their specs), what its semantics access
    #: for those rows; None when the use's form does not run with rows (then neither do its
    #: semantics)
    rows_access: Callable[[list[Any], dict[str, Any]],
                          list[tuple[str, np.ndarray, int]] | None] | None = None
    #: a ``rows_access`` micro-op's semantics on UB privatised per chunk (a chunk loop run as
    #: one batch: ``interp/vchunk.py``): ``rows_window(rows, chunks, rel, vals, params,
    #: span)``, ``rows`` (chunks, bytes) the window its rows lie in, ``rel`` their byte offsets
    #: in it (``span``: ``load_store.rows_span`` of them), the registers of chunks x rows. A
    #: load returns (its results, whether they view ``rows``); a store writes ``rows`` and
    #: returns (its results, None), or, given ``rows`` None (its rows proved end to end with
    #: every lane written), the bytes they make: (its results, (chunks, bytes))
    rows_window: Callable[..., tuple[Any, Any]] | None = None
    #: a DMA between GM and UB that a chunk loop run as one batch may run over one row per
    #: chunk in its one-row form (``nburst(1, ...)``, no ``loop`` / ``pad``): "in" (GM -> UB,
    #: operands gm_src and ub_dst) or "out" (UB -> GM, ub_src and gm_dst); "" not
    chunk_dma: str = ""
    _n_required: int = field(default=0, init=False)
    #: positions of the operands the instruction writes (out, inout, scratch)
    _written: tuple[int, ...] = field(default=(), init=False)
    _on: dict[Target, Resolved] = field(default_factory=dict, init=False, repr=False)
    #: eager calls without keywords whose operand types bound cleanly before (no Events, no
    #: coercion): argument types -> (padding, default parameters); see bind
    _bound: dict[tuple[type, ...], tuple[int, dict[str, Any]]] = field(
        default_factory=dict, init=False, repr=False)
    _event: Event = field(init=False, repr=False)
    #: the uses whose static rules passed (and the last few, with their parameters): see
    #: _known_static
    _last_passed: list[tuple[Any, ...]] = field(default_factory=list, init=False, repr=False)
    _passed: dict[tuple[Any, ...], list[Any]] = field(default_factory=dict, init=False,
                                                      repr=False)
    #: timing only: the signatures (see _rules_key) whose run-time rules passed, when every
    #: rule of the target is one the signature decides (:func:`by_signature`)
    _rules_passed: set[tuple[Any, ...]] = field(default_factory=set, init=False, repr=False)

    def __post_init__(self) -> None:
        self._n_required = sum(1 for o in self.operands if not o.optional)
        self._written = tuple(i for i, o in enumerate(self.operands)
                              if o.role in ("out", "inout", "scratch"))
        # what an unobserved call returns when the pipe does not depend on the operands (an
        # Event without a producer record is never changed: one serves every call)
        self._event = Event(self.name, self.pipe)
        self.__doc__ = self.doc
        if not self.timing:
            self.timing = "run" if (self.sync is not None or self.access != "data"
                                    or self.results) else "skip"
        elif self.timing not in TIMING_KINDS:
            raise RuntimeError(f"instruction {self.name}: unknown timing kind {self.timing!r} "
                               f"(known: {', '.join(TIMING_KINDS)})")

    def on(self, target: Target) -> Resolved:
        """The semantics and rules of this instruction on ``target`` (the common ones, with
        the per-target declarations of the first key of the target's lineage that has one)."""
        r = self._on.get(target)
        if r is None:
            over = next((self.impl_for[k] for k in target.lineage if k in self.impl_for), None)
            impl = self.impl if over is None else _or_common(over, self.impl)
            common_static = _holding(self.static, target)
            common_runtime = _holding(self.runtime, target)
            static = common_static + tuple(x for k in target.lineage
                                           for x in self.static_for.get(k, ()))
            runtime = common_runtime + tuple(x for k in target.lineage
                                             for x in self.runtime_for.get(k, ()))
            # (a target's own valid-region rules cannot fail where the plain form runs: every
            # operand valid over its whole tile, all of one shape)
            plain = self.plain if impl is self.impl and all(
                r in common_runtime or getattr(r, "valid_regions_only", False)
                for r in runtime) else None
            # the fast form restates every common run-time rule: none excepted, none added
            own = impl is self.impl and runtime == _holding(self.runtime)
            fast = self.fast if own else None
            r = self._on[target] = Resolved(target, impl, static, runtime, plain, fast,
                                            self.plan if own else None)
        return r

    def pipe_on(self, values: list[Any]) -> Pipe:
        """The pipe this use of the instruction runs on (``pipe``, unless the entry says it
        depends on the operands)."""
        if self.pipe_of is None:
            return self.pipe
        p = self.pipe_of({o.name: v for o, v in zip(self.operands, values, strict=False)})
        return self.pipe if p is None else p

    @property
    def __signature__(self) -> inspect.Signature:
        """The intrinsic's Python signature (help(), IDEs, notebooks): see ptoisa.stubgen."""
        return signature(self)

    @property
    def mnemonic(self) -> str:
        return self.name.lower()

    # ---- eager call ------------------------------------------------------------------------
    def __call__(self, *args: Any, **kwargs: Any) -> Event | Any:
        m = current()
        # (an entry of a subclass binds its own way, overloads by arity say: not here)
        hit = self._bound.get(tuple(map(type, args))) \
            if not kwargs and not m.observers and type(self) is Instr else None
        if hit is not None:
            # operand types that bound cleanly before (so no trailing Events and nothing to
            # coerce: see bind), nobody watching: the short way to the same run
            pad, defaults = hit
            vals = list(args)
            if pad:
                vals += [None] * pad
            # (the defaults are read, never changed, on the way: one dict serves every call)
            result = self.run(m, vals, defaults)
        else:
            n = len(args)
            while n and isinstance(args[n - 1], Event):
                n -= 1
            vals, params = self.bind(args, kwargs)
            loc = _caller_loc() if m.observers else None
            result = self.run(m, vals, params, loc=loc, waits=args[n:])
        if not self.returns_event:
            return result
        if not m.observers:
            if self.pipe_of is None:
                return self._event
            return Event(self.name, None, None, (self, vals))
        # (an operand-dependent pipe is found only if someone asks, as above)
        if self.pipe_of is None:
            return Event(self.name, self.pipe, m.last_record)
        return Event(self.name, None, m.last_record, (self, vals))

    # ---- THE dispatch point ----------------------------------------------------------------
    def run(self, m: Machine, vals: list[Any], params: dict[str, Any],
            checked: bool = False, loc: Any = None, waits: tuple[Any, ...] = ()) -> Any:
        """Run this instruction on machine ``m``: the one place every instruction passes, from
        an eager call, a compiled ``.pto`` step or a lockstep launch.

        Observers of the machine (``m.observers``: sanitizer, cycle model, trace) see an
        :class:`InstrRecord` first; then the static rules (unless ``checked``: the compiler
        ran them for the program's types), the run-time rules and the semantics of the
        machine's target run, once for all blocks of a lockstep machine when the entry is
        ``batched`` and the operands agree in shape across blocks, else once per block. An
        unobserved use that an entry's plain form (:meth:`try_plain`) or fast form
        (:attr:`fast`) takes runs in that one step instead."""
        if self.plain is not None and not params and not m.observers \
                and self.try_plain(m, vals, checked):
            return None  # (never observed, never blocks: see try_plain)
        st = m.stream
        if st is not None:  # a core of a mixed launch: where it is, should it block here
            st.at = (self, loc)
        if m.observers:
            rec = m.last_record = InstrRecord(self, m, vals, params, loc, waits)
            for obs in m.observers:
                obs(rec)
            # (one block: what _dispatch does for an observed machine)
            result = self._run_one(m, vals, params, checked) if m.lanes == 1 else \
                self._dispatch(m, vals, params, checked)
            for obs in m.observers:
                after = getattr(obs, "after", None)
                if after is not None:
                    after(rec)
            return result
        return self._dispatch(m, vals, params, checked)

    def _dispatch(self, m: Machine, vals: list[Any], params: dict[str, Any],
                  checked: bool) -> Any:
        # the semantics run once: one block, or every block together (see _all_uniform)
        once = m.lanes == 1 or (self.batched and _all_uniform(vals, self.any_valid))
        if once and self.fast is not None and not m.observers:
            on = self._on.get(m.target) or self.on(m.target)
            if on.fast is not None and (
                    checked or self._known_static(m.target, m.permissive, vals, params)[0]):
                if m._lazy and self._written:
                    _settle_written(m, self._written, vals)
                try:
                    if on.fast(self, m, vals, params):
                        return None
                except PtoError as e:
                    if e.op is None:
                        e.op = self.mnemonic
                        e.args = (e.render(),)
                    raise
        if not once:
            # (block b's operands: its part of each tile, view and per-block value, the rest
            # as they are; the static rules see the operands' types, and a tile's or a view's
            # part has its type: without per-block values every block's types are the first
            # block's, checked with it)
            per = [i for i, v in enumerate(vals) if isinstance(v, (Tile, GlobalTensor, Lanes))]
            same_types = not any(isinstance(vals[i], Lanes) for i in per)
            result = None
            for b in range(m.lanes):
                if per:
                    bv = list(vals)
                    for i in per:
                        bv[i] = block_of(vals[i], b)
                else:
                    bv = vals
                result = self._run_one(m, bv, params, checked or (b > 0 and same_types))
            return result
        return self._run_one(m, vals, params, checked)

    def _run_one(self, m: Machine, vals: list[Any], params: dict[str, Any],
                 checked: bool) -> Any:
        on = self._on.get(m.target) or self.on(m.target)
        if m._lazy and self._written:
            _settle_written(m, self._written, vals)
        try:
            if not m.values and self.timing == "refuse":
                raise needs_values(self.mnemonic)
            if not checked:
                self._check_static_of(m.target, vals, params, m.permissive)
            if not m.values and self.timing == "skip":
                # a timing-only run: rules checked, no data computed (a GM store still counts:
                # a lockstep launch may fall back per block only before the first); rules
                # that the signature decides are run once per signature
                key = _rules_key(on, m, vals, params) if on.by_signature else None
                if key is None or key not in self._rules_passed:
                    for r in on.runtime:
                        r(self, *vals, **params)
                    if key is not None:
                        if len(self._rules_passed) >= 4096:
                            self._rules_passed.clear()
                        self._rules_passed.add(key)
                for i in self._written:
                    if isinstance(vals[i], GlobalTensor):
                        m.gm_writes += 1
                        break
                return None
            for r in on.runtime:
                r(self, *vals, **params)
            return on.impl(m, *vals, **params)
        except PtoError as e:
            if e.op is None:
                e.op = self.mnemonic
                e.args = (e.render(),)
            raise

    def checked_call(self, target: Target) -> Callable[[Machine, list[Any], dict[str, Any]],
                                                         Any]:
        """What :meth:`run` does for a use on ``target`` whose static rules the caller
        checked (a compiled ``.pto`` step), bound once: the caller takes it only for an
        unobserved machine of one lane that computes values, has no tile owing bytes and is
        no core of a mixed launch (``m.observers``, ``m.lanes``, ``m.values``, ``m._lazy``,
        ``m.stream``); then :meth:`run` would call :meth:`_run_one`, which runs the run-time
        rules and the semantics, and this does the same without its lookups. For entries
        without a plain or fast form (those take tile operands)."""
        on = self.on(target)
        if on.plain is not None or on.fast is not None:
            raise PtoError("checked_call is for entries without a plain or fast form",
                           op=self.mnemonic)
        impl, runtime, mnemonic = on.impl, on.runtime, self.mnemonic

        def call(m: Machine, vals: list[Any], params: dict[str, Any]) -> Any:
            try:
                for r in runtime:
                    r(self, *vals, **params)
                return impl(m, *vals, **params)
            except PtoError as e:
                if e.op is None:
                    e.op = mnemonic
                    e.args = (e.render(),)
                raise
        return call

    def bind(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[list[Any], dict]:
        """Split positional args into operand values (trailing Events are waits), coerce
        template parameters."""
        if not kwargs:
            key = tuple(map(type, args))
            hit = self._bound.get(key)
            if hit is not None:  # these operand types passed every check below before
                return list(args) + [None] * hit[0], dict(hit[1])
        else:
            key = None
        args_l = list(args)
        while args_l and isinstance(args_l[-1], Event):
            args_l.pop()
        ops = self.operands
        if len(args_l) < self._n_required or len(args_l) > len(ops):
            need = ", ".join(o.name + ("?" if o.optional else "") for o in ops)
            raise PtoError(f"takes operands ({need}); got {len(args_l)}", op=self.mnemonic)
        vals = args_l + [None] * (len(ops) - len(args_l))
        if len(args_l) < len(ops):
            # allow operands by keyword too
            for i, o in enumerate(ops):
                if o.name in kwargs:
                    vals[i] = kwargs.pop(o.name)
        for i, (o, v) in enumerate(zip(ops, vals, strict=True)):
            if o.kind == "scalar" and isinstance(v, Lanes):
                # per-block values of a lockstep launch: one number when every block has it,
                # else BlockDivergence (the launch runs the blocks one by one)
                vals[i] = v = v._uniform(f"{self.mnemonic}: operand '{o.name}'")
            if o.enum is not None and v is not None and not isinstance(v, o.enum):
                vals[i] = v = coerce_enum(o.enum, v, f"{self.mnemonic}: {o.name}")
            _check_kind(self.mnemonic, o, v)
        params = self.resolve_params(kwargs)
        if kwargs:
            allowed = ", ".join(p.name for p in self.params) or "none"
            raise PtoError(f"unexpected argument(s) {', '.join(kwargs)} "
                           f"(template parameters: {allowed})", op=self.mnemonic)
        if key is not None and len(args_l) == len(args) \
                and all(a is v for a, v in zip(args, vals, strict=False)):
            if len(self._bound) > 64:
                self._bound.clear()
            self._bound[key] = (len(vals) - len(args), dict(params))
        return vals, params

    def resolve_params(self, given: dict[str, Any]) -> dict[str, Any]:
        """Template parameters with defaults filled in and enums coerced; the used keys are
        removed from ``given``."""
        params = {}
        for p in self.params:
            v = given.pop(p.name, p.default) if given else p.default
            t = p.type
            if t is not None and not isinstance(v, t) and isinstance(t, type) \
                    and issubclass(t, enum.Enum):
                v = coerce_enum(t, v, f"{self.mnemonic}: {p.name}")
            params[p.name] = v
        return params

    def try_plain(self, m: Machine, vals: Sequence[Any], checked: bool) -> bool:
        """Run a parameterless use of an instruction with a plain form (:attr:`plain`) in
        that form, straight on the operands' storage, if nobody observes ``m``, nothing on it
        reads lazily, the static rules passed (``checked``: a compiled step; else an earlier
        use with these operand types, see _known_static) and every operand qualifies: placed on
        ``m``, row- or column-major, valid over the whole tile, and the result is not one the
        semantics would defer (a tile large enough to compute lazily). False: nothing done.
        (One function, not several: this path exists to save the calls.)"""
        if m.observers or m._lazy or m.lanes != 1:
            return False
        if not checked and not self._known_static(m.target, m.permissive, vals, {})[0]:
            return False
        on = self._on.get(m.target)
        if on is None or on.plain is None:
            return False
        views = []
        first = None  # the first tile's spec: every tile must have its shape
        conv = self.plain_scalar
        for t in vals:
            if conv is not None and not isinstance(t, Tile):  # a scalar: dst's element type
                key = (t, type(t), vals[0].spec.dtype)
                # (0.0 and -0.0 are one key, of two scalars: a zero is converted afresh)
                sc = _PLAIN_SCALARS.get(key) if t else None
                if sc is None:
                    try:
                        sc = conv(t, key[2])
                    except Exception:  # noqa: BLE001 (the semantics say what is wrong)
                        return False
                    if len(_PLAIN_SCALARS) >= 1024:
                        _PLAIN_SCALARS.clear()
                    _PLAIN_SCALARS[key] = sc
                views.append(sc)
                continue
            c = t._v2d  # (every operand of an entry without plain_scalar is a tile)
            if c is None or c[0] is not t._buf or t._machine is not m or not t._whole:
                return False
            v = c[1]
            if v is None:
                return False
            sp = t.spec
            if first is None:
                first = sp
            elif sp is not first and (sp.rows != first.rows or sp.cols != first.cols):
                return False  # (a larger source: the semantics read its top-left part)
            views.append(v)
        out = views.pop(0)
        if out.size >= m.LAZY_MIN_ELEMENTS and m.lazy_loads:
            return False
        if m.quiet:
            on.plain(*views, out=out)
        else:
            with np.errstate(all="ignore"):
                on.plain(*views, out=out)
        return True

    def plain_bound(self, m: Machine, vals: Sequence[Any], otherwise: Callable[[], None]
                    ) -> Callable[[], None] | None:
        """:meth:`try_plain` for one use an execution plan replays (ptoisa/plans.py): what the
        plan fixes is decided once (no observers, one lane, the static rules passed, the
        target's plain form, the operands' shapes, the scalars converted); the call checks
        what a replay can change (lazily loaded values, each tile's placement and valid
        region) as try_plain does, and calls ``otherwise()`` where the plain form does not
        take the use. None: it never can for these operands."""
        on = self._on.get(m.target)
        if on is None or on.plain is None or m.lanes != 1 or not vals:
            return None
        fn = on.plain
        conv = self.plain_scalar
        views: list[Any] = []
        tiles: list[tuple[int, Tile]] = []
        first = None
        for i, t in enumerate(vals):
            if conv is not None and not isinstance(t, Tile):
                try:
                    views.append(conv(t, vals[0].spec.dtype))
                except Exception:  # noqa: BLE001 (the semantics say what is wrong)
                    return None
                continue
            if not isinstance(t, Tile):
                return None
            sp = t.spec
            if first is None:
                first = sp
            elif sp.rows != first.rows or sp.cols != first.cols:
                return None
            views.append(None)
            tiles.append((i, t))
        if not tiles or tiles[0][0] != 0:
            return None
        big = vals[0].spec.rows * vals[0].spec.cols >= m.LAZY_MIN_ELEMENTS
        srcs = views[1:]
        dst, src_tiles = vals[0], [(i - 1, t) for i, t in tiles[1:]]

        def call() -> None:
            if m._lazy or (big and m.lazy_loads):
                return otherwise()
            c = dst._v2d
            if c is None or c[0] is not dst._buf or dst._machine is not m or not dst._whole \
                    or c[1] is None:
                return otherwise()
            out = c[1]
            for i, t in src_tiles:
                c = t._v2d
                if c is None or c[0] is not t._buf or t._machine is not m or not t._whole \
                        or c[1] is None:
                    return otherwise()
                srcs[i] = c[1]
            if m.quiet:
                fn(*srcs, out=out)
            else:
                with np.errstate(all="ignore"):
                    fn(*srcs, out=out)
            return None
        return call

    def _known_static(self, target: Target, permissive: bool, vals: Sequence[Any],
                      params: dict[str, Any]) -> tuple[bool, list[Any], Any]:
        """(Have the static rules passed for these operand types and parameters on
        ``target`` before?, the types, the key to remember them by). A loop in a kernel asks
        again with the same tiles and views of the same shape. The types are remembered, not
        the operands, which must not be kept alive (their liveness is the buffers'
        accounting); the key holds the types' ids, cheap to hash, and the entry the types, so
        the ids stay theirs. The last few uses are looked at first (a list compared by
        identity of its items is cheaper than the key)."""
        types = [v.spec if type(v) in _SPEC_TYPES else None if v is None else _type_of(v)
                 for v in vals]
        try:
            for last in self._last_passed:
                lt = last[2]
                # (the first operand's type by identity first: a spec's == compares its fields)
                if (not types or lt[0] is types[0]) and lt == types and last[0] is target \
                        and last[1] is permissive and last[3] == params:
                    return True, types, None
        except (TypeError, ValueError):  # a parameter value that does not compare plainly
            pass
        key: Any = (target, permissive, tuple(map(id, types)),
                    tuple(params.values()) if params else ())
        try:
            return key in self._passed, types, key
        except TypeError:  # an unhashable parameter value
            key = key[:3] + (tuple(_hashable(v) for v in params.values()),)
            return key in self._passed, types, key

    def _check_static_of(self, target: Target, vals: Sequence[Any], params: dict[str, Any],
                         permissive: bool) -> None:
        """The static rules for these operands' types and parameters, unless they passed
        before (see _known_static); remember that they pass."""
        known, types, key = self._known_static(target, permissive, vals, params)
        if known:
            return
        self.check_types(target, {o.name: t for o, t in zip(self.operands, types, strict=True)},
                         params, permissive)
        recent = self._last_passed
        if all(_hashable(v) is v for v in params.values()):  # (values that compare plainly)
            if len(recent) >= 4:
                del recent[0]
            recent.append((target, permissive, types, dict(params)))
        if key is not None:
            if len(self._passed) >= 256:
                self._passed.clear()
            self._passed[key] = types

    def check_types(self, target: TargetLike, types: dict[str, Any],
                    params: dict[str, Any] | None = None, permissive: bool = False,
                    extra: tuple[StaticRule, ...] = ()) -> None:
        """Static legality for operand *types* (TileSpec / GMSpec / DType / None): the entry
        point of the IR verifier. ``permissive`` skips the ``sim_unchecked`` type rules;
        ``extra``: the rules of the PTOAS op that spells this use (``Ptoas.rules``)."""
        target = get_target(target)
        full = {p.name: p.default for p in self.params}
        full.update(params or {})
        sig = Sig(self, target, {o.name: types.get(o.name) for o in self.operands}, full,
                  permissive)
        for o in self.results:  # (a micro-op's result types, where the program states them)
            sig.types[o.name] = types.get(o.name)
        rt = full.get("result_type")
        if isinstance(rt, str) and vreg_spec(rt) is not None:
            # (an eager call may spell a register type as the .pto text does)
            rt = full["result_type"] = vreg_spec(rt)
        if self.results and sig.types[self.results[0].name] is None and rt is not None:
            # (an eager call states its first result's type as the result_type parameter)
            sig.types[self.results[0].name] = rt
        check_legality(sig)
        for r in self.on(target).static:
            r(sig)
        for r in _holding(extra, target):  # (except_on works here as in ``static``)
            r(sig)

    def __repr__(self) -> str:
        return f"<instruction {self.name}>"


_COMPOSED: dict[tuple[Callable[..., Any], Callable[..., Any]], Callable[..., Any]] = {}


def _or_common(over: Callable[..., Any], common: Callable[..., Any]) -> Callable[..., Any]:
    """A target's semantics (``impl_for``) that may hand a use back to the common ones by
    returning ``NotImplemented`` (after doing what it adds, if anything): an override never
    calls another entry's semantics itself. One function per pair (targets that share an
    override share its semantics)."""
    impl = _COMPOSED.get((over, common))
    if impl is None:
        def impl(m: Any, *vals: Any, **params: Any) -> Any:
            r = over(m, *vals, **params)
            return common(m, *vals, **params) if r is NotImplemented else r
        impl.__doc__ = over.__doc__
        _COMPOSED[(over, common)] = impl
    return impl


class Resolved:
    """An instruction's semantics and rules on one target (see :meth:`Instr.on`)."""

    __slots__ = ("target", "impl", "static", "runtime", "plain", "fast", "plan",
                 "by_signature")

    def __init__(self, target: Target, impl: Callable[..., Any],
                 static: tuple[StaticRule, ...], runtime: tuple[RuntimeRule, ...],
                 plain: Callable[..., Any] | None = None,
                 fast: Callable[..., bool] | None = None,
                 plan: Callable[..., Any] | None = None) -> None:
        self.target = target
        self.impl = impl
        self.static = static
        self.runtime = runtime
        #: the plain form (Instr.plain) where the target declares no semantics or run-time
        #: rules of its own
        self.plain = plain
        #: the fast form (Instr.fast) under the same condition
        self.fast = fast
        #: the planned form (Instr.plan) under the same condition
        self.plan = plan
        #: every run-time rule is decided by the signature (:func:`by_signature`): a timing-only
        #: run checks them once per signature (:func:`_rules_key`)
        self.by_signature = bool(runtime) and all(getattr(r, "by_signature", False)
                                                  for r in runtime)


def by_signature(rule: RuntimeRule) -> RuntimeRule:
    """Mark a run-time rule whose outcome the use's signature decides (see
    :func:`_rules_key`): the operands' tile types, valid extents and placements (tiles of
    the plain Tile class only), scalar and enum values, the parameters, and the machine's
    target and permissive flag; nothing else (no data, no other machine state, no GM view).
    A timing-only run (no values: the same uses again and again, a million times on a large
    GEMM) runs the rules of an entry all of whose rules say so once per signature."""
    rule.by_signature = True  # type: ignore[attr-defined]
    return rule


def _rules_key(on: Resolved, m: Machine, vals: Sequence[Any],
               params: dict[str, Any]) -> tuple[Any, ...] | None:
    """What decides a use's :func:`by_signature` rules, hashable; None when an operand is
    not of the kinds those rules are declared over (a GM view, a tile subclass, a register),
    or the machine is not the current one (the rules read :func:`current`)."""
    if current() is not m:
        return None
    key: list[Any] = [on, m.permissive]
    add = key.append
    for v in vals:
        t = type(v)
        if t is Tile:
            if type(v._vr) is not int or type(v._vc) is not int:
                return None  # (per-block extents of a lockstep tile)
            add((v.spec, v._vr, v._vc, v.addr))
        elif v is None or t is int or t is float or t is bool or isinstance(v, enum.Enum):
            add(t)  # (1, 1.0 and True are one dict key: the type tells them apart)
            add(v)
        else:
            return None
    for k, v in params.items():
        t = type(v)
        if not (v is None or t is int or t is float or t is bool or t is str
                or isinstance(v, enum.Enum)):
            return None
        add(k)
        add(t)
        add(v)
    return tuple(key)


def _hashable(v: Any) -> Any:
    try:
        hash(v)
        return v
    except TypeError:
        return repr(v)


class InstrRecord:
    """What an observer of the machine sees of one executed instruction (before it runs):
    the entry, the machine (target, lanes, block index), the operand values in C++ order,
    the template parameters, the source location (``Loc`` for ``.pto``, ``(file, line)`` of
    the caller for eager code, None when unknown) and the Events passed as waits."""

    __slots__ = ("ins", "machine", "values", "params", "loc", "waits", "tag")

    def __init__(self, ins: Instr, machine: Machine, values: list[Any],
                 params: dict[str, Any], loc: Any, waits: tuple[Any, ...]) -> None:
        self.ins = ins
        self.machine = machine
        self.values = values
        self.params = params
        self.loc = loc
        self.waits = waits
        #: free for an observer to note what it knows of this instruction (the sanitizer: the
        #: producer's clock, found again through an Event passed to a later intrinsic)
        self.tag: Any = None

    @property
    def pipe(self) -> Pipe:
        """The pipe this instruction runs on (operand-dependent for moves and Acc stores)."""
        return self.ins.pipe_on(self.values)

    def __repr__(self) -> str:
        return f"<{self.ins.name} at {self.loc}>"


_PACKAGE_DIR = __file__.rsplit("/isa/", 1)[0]
_SPEC_TYPES = frozenset({Tile, GlobalTensor, VReg, Mask, Ptr, Align, LVec,
                         LMask})  # (subclasses: below)


#: scalar operands converted for plain forms: (value, its type, element type) -> value
_PLAIN_SCALARS: dict[tuple[Any, type, DType], Any] = {}


def _all_uniform(vals: list[Any], any_valid: bool) -> bool:
    """May a batched entry run all blocks of a lockstep launch in one call: every operand of
    one shape in every block (see lanes.uniform; a tile's valid extents are ints then), or a
    tile whose valid region the entry never looks at (``any_valid``)?"""
    for v in vals:
        if type(v) is Tile:
            if (type(v._vr) is not int or type(v._vc) is not int) and not any_valid:
                return False
        elif not (uniform(v) or (any_valid and isinstance(v, Tile))):
            return False
    return True


def _settle_written(m: Machine, written: tuple[int, ...], vals: list[Any]) -> None:
    """Before an instruction reads its sources: the tiles that still read what it is about to
    write (lazily loaded or deferred, see ptoisa/tile.py) take their values now. The semantics
    read sources as views; settling later, from inside the write, would copy into buffers
    those views already point at (a tile moved in place from another, whose buffer a barrier
    then fills)."""
    for i in written:
        v = vals[i] if i < len(vals) else None
        if isinstance(v, Tile):
            if v._buf is not None:
                lazy.storage_barrier(m, v)
        elif isinstance(v, GlobalTensor):
            lazy.gm_barrier(m, v.flat)


def _caller_loc() -> tuple[str, int] | None:
    """(file, line) of the first frame outside the ptoisa package: the user's call."""
    f = sys._getframe(2)
    while f is not None and f.f_code.co_filename.startswith(_PACKAGE_DIR):
        f = f.f_back  # type: ignore[assignment]
    return (f.f_code.co_filename, f.f_lineno) if f is not None else None


def _type_of(v: Any) -> Any:
    if type(v) in _SPEC_TYPES:
        return v.spec
    if isinstance(v, (Tile, GlobalTensor)):
        return v.spec
    if v is None:
        return None
    # (interned: a builtin type's __name__ is a new str each time, and uses are remembered by
    # the ids of their types, see _known_static)
    return sys.intern(type(v).__name__)


def _check_kind(op: str, o: Opnd, v: Any) -> None:
    if v is None:
        if not o.optional:
            raise PtoError(f"operand '{o.name}' is missing", op=op)
        return
    k = o.kind
    ok = (
        (k == "tile" and isinstance(v, Tile))
        or (k == "gm" and isinstance(v, GlobalTensor))
        or (k == "tile|gm" and isinstance(v, (Tile, GlobalTensor)))
        or (k == "scalar" and isinstance(v, (bool, int, float, np.generic)))
        # (a SIMT value: one number, or one per workitem of the running SIMT launch)
        or (k == "simt" and isinstance(v, (bool, int, float, np.generic, np.ndarray)))
        or (k == "enum" and isinstance(v, enum.Enum))
        or (k == "vreg" and isinstance(v, VReg))
        or (k == "mask" and isinstance(v, Mask))
        or (k == "align" and isinstance(v, Align))
        or (k == "ptr" and (isinstance(v, (Ptr, np.ndarray)) or getattr(v, "per_workitem",
                                                                          False)))
        or (k == "group" and isinstance(v, tuple))
        or (k == "lvec" and isinstance(v, LVec))
        or (k == "lmask" and isinstance(v, LMask))
        or (k == "index" and isinstance(v, (int, np.integer)) and not isinstance(v, bool))
        or k == "any"
    )
    if not ok:
        want = {"tile": "a Tile", "gm": "a GlobalTensor", "tile|gm": "a Tile or GlobalTensor",
                "scalar": "a number", "simt": "a number or an array (one per workitem)",
                "enum": "an enum value", "vreg": "a VReg",
                "mask": "a Mask", "align": "an Align", "ptr": "a pointer",
                "group": "a tuple", "lvec": "a VMI vector (LVec)",
                "lmask": "a VMI mask (LMask)", "index": "an integer"}.get(k, k)
        raise PtoError(f"operand '{o.name}' must be {want}, got {type(v).__name__}", op=op)


# ---- legality -------------------------------------------------------------------------------

def elem_type(t: Any) -> DType | None:
    if isinstance(t, (TileSpec, GMSpec, VRegSpec, PtrSpec, VmiSpec)):
        return t.dtype
    if isinstance(t, DType):
        return t
    return None


def check_legality(sig: Sig) -> None:
    """Apply the target's legality table for this instruction (the uniform error messages)."""
    ins, target = sig.ins, sig.target
    rule = target.legality.get(ins.name)
    if rule is None:
        says = f" ({ins.ptoas.unsupported})" if ins.ptoas is not None and \
            ins.ptoas.unsupported else ""
        raise IllegalInstruction(f"not supported on target {target}{says}", op=ins.mnemonic)
    key = [n for n in ins.dtype_key if sig[n] is not None]
    if rule.dtypes is not None and key:
        got = tuple(elem_type(sig[n]) for n in key)
        # PTOAS's words for the type rule, where the table gives them (``rule(..., says=...)``;
        # with ``says_when=``, only when a refused type is one of those: PTOAS's rule names a
        # class of types, e.g. the low-precision ones, and the others get the plain message)
        says = ""
        if "says" in rule.extra:
            when = rule.extra.get("says_when")
            if when is None or any(d is not None and d.name in when for d in got):
                # (PTOAS's words may quote an operand's written type: ``{mask}``)
                words = rule.extra["says"].format_map(
                    {o.name: f"'{sig[o.name]}'" for o in (*ins.operands, *ins.results)})
                says = f"{words} ("
        end = ")" if says else ""
        sample = next(iter(rule.dtypes)) if rule.dtypes else None
        if isinstance(sample, tuple):
            # an operand whose type is not known statically (checked again when it runs) is
            # left out: refuse only what no allowed combination has at the known positions
            if len(key) == len(ins.dtype_key):
                known = got in rule.dtypes
            else:
                at = [ins.dtype_key.index(n) for n in key]
                known = any(tuple(p[i] for i in at) == got for p in rule.dtypes)
            if not known:
                if all(len(set(p)) == 1 for p in rule.dtypes) and len(set(got)) == 1:
                    allowed = sorted({p[0] for p in rule.dtypes}, key=_order)
                    raise UnsupportedType(
                        f"{says}element type {got[0]} is not supported on {target} "
                        f"(supported: {dt_names(allowed)}){end}", op=ins.mnemonic)
                pairs = sorted("->".join(d.name for d in p) for p in rule.dtypes)
                what = " -> ".join(f"{n} {d}" for n, d in zip(key, got, strict=True))
                raise UnsupportedType(
                    f"{says}type combination {what} is not supported on {target} "
                    f"(supported: {', '.join(pairs)}){end}", op=ins.mnemonic)
        else:
            for d in got:
                if d not in rule.dtypes:
                    raise UnsupportedType(
                        f"{says}element type {d} is not supported on {target} "
                        f"(supported: {dt_names(sorted(rule.dtypes, key=_order))}){end}",
                        op=ins.mnemonic)
    if rule.locs is not None:
        for n in key:
            t = sig[n]
            if isinstance(t, TileSpec) and t.loc not in rule.locs:
                allowed = ", ".join(sorted(x.name for x in rule.locs))
                # PTOAS's words for the location rule, where the table gives them
                # (``rule(..., locs_says=...)``), head the message
                said = rule.extra.get("locs_says")
                head, end = (f"{said} (", ")") if said else ("", "")
                raise IllegalInstruction(
                    f"{head}{n} must be a {allowed} tile on {target}, got {t.loc.name}{end}",
                    op=ins.mnemonic)
    if rule.row_major:
        for o in ins.operands:
            t = sig[o.name]
            if isinstance(t, TileSpec) and not t.is_row_major:
                raise IllegalInstruction(
                    f"{o.name} must be row-major on {target} (got {t.layout_name})",
                    op=ins.mnemonic)


_ORDER = ["f32", "f16", "bf16", "f8E4M3", "f8E5M2", "f8E8M0", "i8", "ui8", "i16", "ui16", "i32",
          "ui32", "i64", "ui64", "f64", "i1"]


def _order(d: DType) -> tuple[int, str]:
    """Display order of element types in messages and the support matrix (total: types
    outside the list sort by name, so the output does not depend on set order)."""
    return (_ORDER.index(d.name) if d.name in _ORDER else 99, d.name)


# ---- declaration ----------------------------------------------------------------------------

REGISTRY: dict[str, Instr] = {}

#: what an instruction does in a run without values (``Instr.timing``)
TIMING_KINDS = ("skip", "run", "refuse")


#: the synchronisation an entry declares (``sync=``): what observers and the exporter read
SYNC_KINDS: dict[str, str] = {
    "flag_set": "sets a flag from one pipe of the core to another (SET_FLAG)",
    "flag_wait": "a pipe waits for a flag set by another pipe of the core (WAIT_FLAG)",
    "barrier": "a pipe's (or every pipe's) later instructions wait for its earlier ones",
    "buf_get": "a pipe acquires a buffer id: it waits for the id's earlier releases (GET_BUF)",
    "buf_rls": "a pipe releases a buffer id when its earlier instructions are done (RLS_BUF)",
    "events": "waits for the Events passed to it (eager code's record/wait events)",
    "all_cores": "every core of the launch waits for all the others (SYNCALL)",
    "cross_core": "a flag between the cube and the vector cores of a cluster",
    "pipe": "a cube <-> vector pipe (TPUSH / TPOP / TFREE): data and its synchronisation",
    "signal": "a signal between ranks (notify, wait on, test a signal word)",
}
#: the kinds that order the pipes of one core (``pto.set_flag`` / ``pto.wait_flag`` /
#: ``pto.barrier``, ``pto.get_buf`` / ``pto.rls_buf``): a program with one is manually
#: synchronised
PIPE_SYNC = frozenset({"flag_set", "flag_wait", "barrier", "buf_get", "buf_rls"})
#: what an entry's ``access=`` may say
ACCESS_KINDS = frozenset({"data", "view", "place"})


def family_of_module(module: str) -> str | None:
    """The family an instruction declared in ``module`` belongs to: its subpackage (or
    module) of ``ptoisa.isa``, ``_`` read as ``-`` (``ptoisa.isa.tile_scalar.scalar`` ->
    ``tile-scalar``); None outside the families."""
    parts = module.split(".")
    if len(parts) < 3 or parts[:2] != ["ptoisa", "isa"]:
        return None
    return parts[2].replace("_", "-")


class Except:
    """A common rule with exceptions (see :func:`except_on`)."""

    __slots__ = ("rule", "targets")

    def __init__(self, rule: Callable[..., None], targets: frozenset[str]) -> None:
        self.rule = rule
        self.targets = targets

    def __call__(self, *args: Any, **kw: Any) -> None:
        self.rule(*args, **kw)

    def __repr__(self) -> str:
        return (f"except_on({', '.join(sorted(self.targets))}, "
                f"{getattr(self.rule, '__name__', self.rule)})")


def except_on(targets: str | Iterable[str], rule: Any) -> Any:
    """``rule`` (static or run-time) as a default with exceptions: it holds on every target but
    those ``targets`` name and the targets derived from them (``Target.lineage``), so a new
    target makes the check unless it descends from an exception. Put it among the entry's
    ``static`` / ``runtime`` rules; what holds on an excepted target instead goes in its
    ``static_for`` / ``runtime_for``."""
    keys = frozenset((targets,) if isinstance(targets, str) else targets)
    check_target_keys(f"except_on(..., {getattr(rule, '__name__', 'rule')})", keys)
    return Except(rule, keys)


def _holding(rules: tuple[Any, ...], target: Target | None = None) -> tuple[Any, ...]:
    """The common ``rules`` that hold on ``target`` (None: every rule), exceptions resolved
    to the rules they wrap."""
    out = []
    for r in rules:
        if isinstance(r, Except):
            if target is not None and not r.targets.isdisjoint(target.lineage):
                continue
            r = r.rule
        out.append(r)
    return tuple(out)


def check_target_keys(what: str, keys: Iterable[str]) -> None:
    """A per-target declaration names known targets only: a misspelt key would silently never
    apply, so it fails at import (as JAX's ``register_lowering`` refuses an unknown
    platform). The keys of a target registered later (``register_target``) are known from
    then on."""
    known = known_targets()
    bad = sorted(k for k in keys if k not in known)
    if bad:
        raise RuntimeError(f"{what}: unknown target key(s) {', '.join(map(repr, bad))} "
                           f"(known targets: {', '.join(known)})")


def instr(
    name: str,
    *,
    family: str | None = None,
    pipe: Pipe,
    operands: Iterable[Opnd],
    params: Iterable[Param] = (),
    dtype_key: Iterable[str] = (),
    static: Iterable[StaticRule] = (),
    runtime: Iterable[RuntimeRule] = (),
    returns_event: bool = True,
    batched: bool = False,
    any_valid: bool = False,
    impl_for: dict[str, Callable[..., Any]] | None = None,
    static_for: dict[str, Iterable[StaticRule]] | None = None,
    runtime_for: dict[str, Iterable[RuntimeRule]] | None = None,
    pipe_of: Callable[[dict[str, Any]], Pipe | None] | None = None,
    ptoas: Ptoas | None = None,
    plain: Callable[..., Any] | None = None,
    plain_scalar: Callable[[Any, DType], Any] | None = None,
    fast: Callable[..., bool] | None = None,
    plan: Callable[..., Any] | None = None,
    access: str = "data",
    view_offset: Callable[[list[Any]], int] | None = None,
    access_roles: dict[str, str | Callable[[list[Any]], str]] | None = None,
    sync: str | None = None,
    same_valid: SameValid | None = None,
    dialect: str = "tile",
    results: Iterable[Opnd] = (),
    timing: str = "",
    rows: bool = False,
    chain: Callable[[int, int], np.ndarray] | None = None,
    rows_access: Callable[..., Any] | None = None,
    rows_window: Callable[..., Any] | None = None,
    chunk_dma: str = "",
) -> Callable[[Callable[..., Any]], Instr]:
    """Declare an instruction; the decorated function is its semantics
    ``fn(machine, *operand_values, **params)``, its docstring the instruction's doc.
    ``impl_for={"cpu": fn}`` replaces the semantics on a target (and the targets derived from
    it); ``static_for`` / ``runtime_for`` add rules that hold on some targets only; a key that
    names no known target raises here. A rule that holds on every target but some is
    :func:`except_on` among the common ones. ``same_valid`` adds the valid-region rules it
    states (after the other run-time rules). A micro-op says ``dialect="vpto"`` and declares
    the registers it returns as ``results`` (its semantics return them)."""

    def deco(fn: Callable[..., Any]) -> Instr:
        if name in REGISTRY:
            raise RuntimeError(f"instruction {name} declared twice")
        if sync is not None and sync not in SYNC_KINDS:
            raise RuntimeError(f"instruction {name}: unknown sync kind {sync!r} (known: "
                               f"{', '.join(SYNC_KINDS)})")
        if access not in ACCESS_KINDS:
            raise RuntimeError(f"instruction {name}: unknown access kind {access!r} (known: "
                               f"{', '.join(sorted(ACCESS_KINDS))})")
        where = family_of_module(fn.__module__)
        fam = family or where
        if fam is None:
            raise RuntimeError(f"instruction {name}: no family (declare it in "
                               "ptoisa/isa/<family>/)")
        if where is not None and fam != where:
            raise RuntimeError(f"instruction {name} says family {fam!r} but is declared in "
                               f"{fn.__module__} (family {where!r}): the family is the module")
        for what, decl in (("impl_for", impl_for), ("static_for", static_for),
                           ("runtime_for", runtime_for)):
            check_target_keys(f"instruction {name}: {what}", decl or {})
        opnds = tuple(operands)
        rt = tuple(runtime)
        written = tuple((i, o.name) for i, o in enumerate(opnds)
                        if o.kind in ("gm", "tile|gm", "any")
                        and o.role in ("out", "inout", "scratch"))
        if written:
            rt = (_gm_writable(written), *rt)
        ins = Instr(
            name=name, family=fam, pipe=pipe, operands=opnds,
            params=tuple(params), impl=fn, dtype_key=tuple(dtype_key), static=tuple(static),
            runtime=rt, returns_event=returns_event, doc=(fn.__doc__ or "").strip(),
            batched=batched, any_valid=any_valid, impl_for=dict(impl_for or {}),
            static_for={k: tuple(v) for k, v in (static_for or {}).items()},
            runtime_for={k: tuple(v) for k, v in (runtime_for or {}).items()},
            pipe_of=pipe_of, ptoas=ptoas, plain=plain, plain_scalar=plain_scalar, fast=fast,
            plan=plan, access=access, view_offset=view_offset,
            access_roles=dict(access_roles or {}), sync=sync, same_valid=same_valid,
            dialect=dialect, results=tuple(results), timing=timing, rows=rows, chain=chain,
            rows_access=rows_access, rows_window=rows_window, chunk_dma=chunk_dma,
        )
        if ins.results:
            ins.returns_event = False
        names = {o.name for o in opnds}
        unknown = sorted(set(ins.access_roles) - names)
        if unknown:
            raise RuntimeError(f"instruction {name}: access_roles names no operand: {unknown}")
        if isinstance(pipe_of, PipeForms) and not set(pipe_of.by) <= names:
            raise RuntimeError(f"instruction {name}: pipe_of names no operand: "
                               f"{sorted(set(pipe_of.by) - names)}")
        if same_valid is not None:
            check_target_keys(f"instruction {name}: same_valid", same_valid.rows | same_valid.cols)
            everywhere, per_target = same_valid.rules(ins)
            ins.runtime = (*ins.runtime, *everywhere)
            for key, r in per_target.items():
                ins.runtime_for[key] = (*ins.runtime_for.get(key, ()), r)
        REGISTRY[name] = ins
        _index_op_names(ins)
        return ins

    return deco


#: PTOAS op names declared on entries (``ptoas=``) -> instruction name
_OP_NAMES: dict[str, str] = {}
#: frontend pipe ops of mixed kernels -> instruction name (bound by their own handlers)
FRONTEND_OPS: dict[str, str] = {}


def _index_op_names(ins: Instr) -> None:
    sp = ins.ptoas
    if sp is None:
        return
    for table, names in ((_OP_NAMES, (*sp.forms, *sp.names)), (FRONTEND_OPS, sp.frontend)):
        for n in names:
            if table.get(n, ins.name) != ins.name:
                raise RuntimeError(f"op name {n} declared by {table[n]} and {ins.name}")
            table[n] = ins.name


def lookup(name: str) -> Instr | None:
    """THE lookup of an instruction: by C++ name (``TMATMUL_ACC``), mnemonic (``tmatmul_acc``)
    or PTOAS op name (``pto.tmatmul.acc``, ``pto.tmatmul.mx.bias``: the names entries declare);
    None for anything else (frontend pipe ops included: see :data:`FRONTEND_OPS`)."""
    declared = _OP_NAMES.get(name)
    if declared is not None:
        return REGISTRY[declared]
    n = name[4:] if name.startswith("pto.") else name
    return REGISTRY.get(n.upper().replace(".", "_"))


def ptoas_forms(op_name: str) -> tuple[Form, ...]:
    """The written variants an op name is declared with (none: the default mapping)."""
    ins = lookup(op_name)
    if ins is None or ins.ptoas is None:
        return ()
    return tuple(ins.ptoas.forms.get(op_name, ()))


def ptoas_op(ins: Instr) -> str:
    """The op ptoisa writes for an instruction (the exporter): the entry's ``ptoas.op``, else
    ``pto.<mnemonic>``."""
    sp = ins.ptoas
    return sp.op if sp is not None and sp.op else f"pto.{ins.mnemonic}"


def ptoas_attr_tables() -> dict[str, dict[str, Attr]]:
    """Every declared attribute table, by op name (``pto.<mnemonic>``, or each op name the
    entry declares forms for)."""
    out: dict[str, dict[str, Attr]] = {}
    for ins in REGISTRY.values():
        if ins.ptoas is None or not ins.ptoas.attrs:
            continue
        for n in (*ins.ptoas.forms, *ins.ptoas.names) or (f"pto.{ins.mnemonic}",):
            out[n] = dict(ins.ptoas.attrs)
    return out


def ptoas_attrs(op_name: str) -> dict[str, Attr]:
    """The attributes of an op's PTOAS definition and what each becomes."""
    ins = lookup(op_name) if op_name not in FRONTEND_OPS else REGISTRY[FRONTEND_OPS[op_name]]
    if ins is None or ins.ptoas is None:
        return {}
    return dict(ins.ptoas.attrs)


# ---- operand-dependent pipes -----------------------------------------------------------------

def _loc(v: Any) -> TileType | None:
    if not isinstance(v, Tile):
        return None
    if v.loc is TileType.Scaling and v.dtype.name == "f8E8M0":
        # E8M0 codes in a Scaling tile are an MX scale (PTOAS writes the C++ TileLeftScale /
        # TileRightScale as loc=scaling): Left or Right by its box order, as the bridge binds it
        nn = v.spec.blayout.name == "ColMajor" and v.spec.slayout.name == "ColMajor"
        return TileType.ScaleRight if nn else TileType.ScaleLeft
    return v.loc


#: how a :class:`PipeForms` key spells an operand that is absent (an optional one not given)
ABSENT = "-"


class PipeForms:
    """An entry's pipe by the locations of some of its operands, declared as one table
    (``pipe_of=PipeForms(("src", "dst"), {("Mat", "Scaling"): Pipe.FIX, ...})``): each key
    names, for the operands in ``by``, their tile locations (``TileType`` names; ``"-"`` for an
    optional operand not given). A form the table does not list (an operand whose type is not
    known yet, say) runs on the entry's ``pipe``. The forms are data: tests compare them with
    pto-isa's op -> pipe table (``include/pto/common/event.hpp``) and the reference prints
    them."""

    def __init__(self, by: str | tuple[str, ...], forms: dict[Any, Pipe], why: str = "") -> None:
        self.by = (by,) if isinstance(by, str) else tuple(by)
        names = {t.name for t in TileType} | {ABSENT}
        self.forms: dict[tuple[str, ...], Pipe] = {}
        for k, p in forms.items():
            key = (k,) if isinstance(k, str) else tuple(k)
            bad = [x for x in key if x not in names]
            if len(key) != len(self.by) or bad:
                raise RuntimeError(f"pipe form {k!r} must name a location ({', '.join(names)}) "
                                   f"for each of {', '.join(self.by)}")
            self.forms[key] = p
        #: why these pipes (the reference page prints it after the table)
        self.why = why

    def __call__(self, vals: dict[str, Any]) -> Pipe | None:
        key = []
        for n in self.by:
            v = vals.get(n)
            if v is None:
                key.append(ABSENT)
                continue
            loc = _loc(v)
            if loc is None:
                return None  # not a tile (yet): the entry's pipe
            key.append(loc.name)
        return self.forms.get(tuple(key))

    def text(self) -> str:
        """The table as one line: ``src -> dst: Mat -> Left MTE1, ...``."""
        rows = ", ".join(f"{' -> '.join(k)} {p.value}" for k, p in self.forms.items())
        return f"by {' -> '.join(self.by)}: {rows}" + (f". {self.why}" if self.why else "")


# ---- documented checks the CPU simulator lacks ---------------------------------------------------

PERMISSIVE_HINT = "the CPU simulator does not check this; permissive=True skips it"


def sim_unchecked(rule: RuntimeRule) -> RuntimeRule:
    """Mark a run-time rule as a documented constraint (an ISA page's general constraints /
    run-time checks) that the upstream C++ CPU simulator does not make.

    It holds on every target, cpu included: a user develops on cpu to learn what the NPU
    rejects. A permissive machine (``pto.target(..., permissive=True)``, ``launch(...,
    permissive=True)``, ``Program.run(..., permissive=True)``, ``ptoisa run --permissive``)
    skips it and so reproduces the simulator. A failure is a :class:`ConstraintError`."""

    def checked(ins: Instr, *vals: Any, **kw: Any) -> None:
        if current().permissive:
            return
        try:
            rule(ins, *vals, **kw)
        except ConstraintError:
            raise
        except RuntimeCheckError as e:
            raise ConstraintError(f"{e.message} ({PERMISSIVE_HINT})",
                                  op=e.op or ins.mnemonic) from None

    checked.__name__ = getattr(rule, "__name__", "rule")
    checked.__doc__ = rule.__doc__
    checked.sim_unchecked = True  # type: ignore[attr-defined]
    return checked


def sim_unchecked_type(rule: StaticRule) -> StaticRule:
    """:func:`sim_unchecked` for a static rule (operand types; the verifier runs it too):
    skipped when the check is for a permissive machine (``Sig.permissive``)."""

    def checked(sig: Sig) -> None:
        if sig.permissive:
            return
        try:
            rule(sig)
        except ConstraintError:
            raise
        except PtoError as e:
            raise ConstraintError(f"{e.message} ({PERMISSIVE_HINT})",
                                  op=e.op or sig.ins.mnemonic) from None

    checked.__name__ = getattr(rule, "__name__", "rule")
    checked.sim_unchecked = True  # type: ignore[attr-defined]
    return checked


def sim_unchecked_rules(ins: Instr) -> list[Any]:
    """The instruction's rules (static and run-time, the per-target declarations included)
    that a permissive machine skips."""
    per_target = [r for rules in (*ins.static_for.values(), *ins.runtime_for.values())
                  for r in rules]
    return [r for r in (*_holding(ins.static), *_holding(ins.runtime), *per_target)
            if getattr(r, "sim_unchecked", False)]


def dtype_in(name: str, allowed: str) -> StaticRule:
    """Operand ``name``'s element type is one of ``allowed`` (PTOAS names)."""
    from ..dtypes import dtype as to_dtype

    ok = frozenset(to_dtype(a) for a in allowed.split())

    def rule(sig: Sig) -> None:
        d = elem_type(sig[name])
        if d is not None and d not in ok:
            raise UnsupportedType(f"{name} element type {d} is not supported (supported: "
                                  f"{dt_names(sorted(ok, key=_order))})", op=sig.ins.mnemonic)
    rule.__name__ = f"dtype_in({name})"
    return rule


# ---- shared rules (pure functions over Sig; reused by many instructions) ----------------------

def same_type_message(present: Sequence[tuple[str, Any]]) -> str:
    """The error of operands whose element types differ, in PTOAS's words (its verifiers list
    the sources, then dst: "expects src0, src1, and dst to have the same element type"), with
    each operand's type."""
    names = [n for n, _ in present if n != "dst"] + [n for n, _ in present if n == "dst"]
    joined = names[0] if len(names) == 1 else f"{names[0]} and {names[1]}" if len(names) == 2 \
        else f"{', '.join(names[:-1])}, and {names[-1]}"
    desc = ", ".join(f"{n} {d}" for n, d in present)
    return f"expects {joined} to have the same element type ({desc})"


def same_dtype(*names: str) -> StaticRule:
    def rule(sig: Sig) -> None:
        present = [(n, elem_type(sig[n])) for n in names if sig[n] is not None]
        if len({d for _, d in present}) > 1:
            raise sig.fail(same_type_message(present))
    rule.__name__ = f"same_dtype({', '.join(names)})"
    return rule


def locs(names: Iterable[str], *allowed: TileType) -> StaticRule:
    names = tuple(names)

    def rule(sig: Sig) -> None:
        for n in names:
            t = sig[n]
            if isinstance(t, TileSpec) and t.loc not in allowed:
                want = " or ".join(a.name for a in allowed)
                raise sig.fail(f"{n} must be a {want} tile, got {t.loc.name}")
    return rule


def nd(*names: str) -> StaticRule:
    def rule(sig: Sig) -> None:
        for n in names:
            t = sig[n]
            if isinstance(t, TileSpec) and not t.is_nd:
                raise sig.fail(f"{n} must be ND (row-major, no boxes), got {t.layout_name}")
    return rule


def same_static_shape(*names: str) -> StaticRule:
    def rule(sig: Sig) -> None:
        shapes = [(n, (sig[n].rows, sig[n].cols)) for n in names
                  if isinstance(sig[n], TileSpec)]
        if len({s for _, s in shapes}) > 1:
            desc = ", ".join(f"{n} {r}x{c}" for n, (r, c) in shapes)
            raise sig.fail(f"operands must have the same static shape ({desc})")
    return rule


def _gm_writable(written: tuple[tuple[int, str], ...]) -> RuntimeRule:
    """Run-time rule of every instruction that writes a GM operand: the array behind it must
    be writable (a read-only numpy array, e.g. ``np.broadcast_to`` or ``flags.writeable =
    False``, is fine to load from but cannot take a store)."""

    def rule(ins: Instr, *vals: Any, **params: Any) -> None:
        for i, oname in written:
            v = vals[i] if i < len(vals) else None
            if isinstance(v, GlobalTensor) and not v.flat.flags.writeable:
                who = f"GlobalTensor '{v.name}'" if v.name else "GlobalTensor"
                what = (getattr(v, "origin", None) or read_only_origin(v.flat)
                        or "a read-only numpy array")
                raise PtoMemoryError(
                    f"operand '{oname}' ({who} {v.spec.describe()}) views {what}: it cannot "
                    "be written; pass a writable array (np.array(a) copies one)",
                    op=ins.mnemonic)
    return rule

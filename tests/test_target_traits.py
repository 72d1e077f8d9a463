"""Targets as data outside isa/ too: the behaviours that used to test a target's name (``"a5" in
target.lineage``, ``target_name == "cpu"``, ``print_style == "cpu"``) read named traits, a
rule that holds on "every target but X" is a default with exceptions (``except_on``), and a
per-target declaration whose key names no target fails at registration.

The expected trait values are the old name tests written out per target (a5 and its
variants: the A5 behaviours; cpu: the simulator's print and the conformance pack's reference;
a2a3 alone: measured costs); the report notes are the strings the report printed before.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

import ptoisa as pto
from ptoisa import Dyn, Pipe, Tile, TileType, cli
from ptoisa.concurrent import edges
from ptoisa.cycles import costs
from ptoisa.cycles.report import _cost_note
from ptoisa.isa import REGISTRY
from ptoisa.isa.registry import Opnd, check_target_keys, except_on, instr
from ptoisa.targets import (
    CONFORMANCE_TARGET,
    DEFAULT_TARGET,
    TARGET_NAMES,
    get_target,
    register_target,
    unregister_target,
)

#: per target, the value of each new trait that reproduces the name test it replaced
OLD_BEHAVIOUR = {
    "cpu": {"print_style": "cpu_sim", "cross_core_flags_per_subblock": False,
            "cross_core_wait_holds_pipe": False, "nosplit_vector_subblock0_only": False,
            "cost_table": "fitted", "costs_measured": False, "conformance_reference": True},
    "a2a3": {"print_style": "npu", "cross_core_flags_per_subblock": False,
             "cross_core_wait_holds_pipe": False, "nosplit_vector_subblock0_only": False,
             "cost_table": "fitted", "costs_measured": True, "conformance_reference": False},
    "a5": {"print_style": "npu", "cross_core_flags_per_subblock": True,
           "cross_core_wait_holds_pipe": True, "nosplit_vector_subblock0_only": True,
           "cost_table": "a5_vf", "costs_measured": True, "conformance_reference": False},
}


@pytest.mark.parametrize("name", TARGET_NAMES)
def test_each_new_trait_reproduces_the_old_name_test(name: str) -> None:
    traits = get_target(name).traits
    for trait, want in OLD_BEHAVIOUR[name].items():
        assert getattr(traits, trait) == want, (name, trait)


def test_a_variant_keeps_its_parents_behaviours_but_not_its_measurements() -> None:
    a5x = get_target("a5").derive("a5x")
    for trait in ("cross_core_flags_per_subblock", "cross_core_wait_holds_pipe",
                  "nosplit_vector_subblock0_only", "cost_table"):
        assert getattr(a5x.traits, trait) == OLD_BEHAVIOUR["a5"][trait]  # as its lineage did
    a2x = get_target("a2a3").derive("a2x")
    assert not a2x.traits.costs_measured  # a2a3's fit is not a2x's hardware
    assert _cost_note("a2a3") == ""
    assert get_target("a2a3").derive("a2y", traits={"costs_measured": True}).traits.costs_measured


def test_the_readers_follow_the_traits() -> None:
    for name, holds_pipe in (("cpu", False), ("a2a3", False), ("a5", True)):
        m = SimpleNamespace(target=get_target(name))
        assert edges.wait_scope(m, Pipe.V) is (Pipe.V if holds_pipe else Pipe.ALL)
    # the cost tables: a2a3's fit on cpu and a2a3 (and for an unknown name), a5's own
    assert costs.default_table("cpu") is costs.default_table("a2a3")
    assert costs.default_table("no-such-target") is costs.default_table("a2a3")
    assert costs.A5_FIT_FILE.exists()
    assert costs.default_table("a5") is not costs.default_table("a2a3")
    # the report's notes, per target
    assert _cost_note("a2a3") == ""
    assert _cost_note("a5") == (" (fitted to A5 measurements for the instructions the A5 pack "
                                "measures; the rest are estimates: the a2a3 costs)")
    register_target(get_target("a5").derive("a5z"))  # a variant: not the measured hardware
    try:
        assert _cost_note("a5z") == " (estimates: the A5 fit, else the a2a3 costs)"
    finally:
        unregister_target("a5z")
    assert _cost_note("cpu") == " (estimates: the a2a3 costs)"
    assert _cost_note(None) == " (estimates: the a2a3 costs)"


def test_conformance_and_cli_targets_are_data() -> None:
    assert [n for n in TARGET_NAMES if get_target(n).traits.conformance_reference] == \
        [CONFORMANCE_TARGET]
    assert cli.TARGETS == list(TARGET_NAMES)
    p = cli.build_parser()
    assert p.parse_args(["conformance", "pack"]).target == CONFORMANCE_TARGET
    assert p.parse_args(["run", "x.pto"]).target == DEFAULT_TARGET


# ---- per-target keys are checked when declared ----------------------------------------------

@pytest.mark.parametrize("what", ["impl_for", "static_for", "runtime_for"])
def test_an_unknown_key_raises_at_registration(what: str) -> None:
    decl = {"impl_for": {"a55": lambda m: None}, "static_for": {"a55": ()},
            "runtime_for": {"a55": ()}}[what]
    with pytest.raises(RuntimeError, match=rf"instruction TTYPO: {what}: unknown target "
                                           r"key\(s\) 'a55' \(known targets: cpu, a2a3, a5\)"):
        @instr("TTYPO", family="irregular", pipe=Pipe.V, operands=(Opnd("dst", "tile", "out"),),
               **{what: decl})
        def ttypo(m: object, dst: object) -> None:
            pass
    assert "TTYPO" not in REGISTRY


def test_except_on_checks_its_keys_and_a_registered_target_is_known() -> None:
    with pytest.raises(RuntimeError, match=r"unknown target key\(s\) 'A5'"):
        except_on("A5", lambda sig: None)
    with pytest.raises(RuntimeError, match="'a5x'"):
        check_target_keys("x", ["a5x"])
    register_target(get_target("a5").derive("a5x"))
    try:
        check_target_keys("x", ["a5x", "a5"])
    finally:
        unregister_target("a5x")


# ---- "every target but X": a default with exceptions ------------------------------------------

def _concat_short() -> None:
    """src0 + src1 valid cols (8 + 8) fill 16 of dst's 20 valid cols (of 32 Cols)."""
    s0 = Tile(TileType.Vec, "f32", 4, 16, valid=(4, Dyn(8))).load_numpy(np.ones((4, 16),
                                                                              np.float32))
    s1 = Tile(TileType.Vec, "f32", 4, 16, valid=(4, Dyn(8))).load_numpy(np.ones((4, 16),
                                                                              np.float32))
    pto.TCONCAT(Tile(TileType.Vec, "f32", 4, 32, valid=(4, Dyn(20))), s0, s1)


def test_tconcat_exact_cols_everywhere_but_a2a3() -> None:
    fresh = get_target("a2a3").derive("fresh", inherit_behaviour=False)
    a2x = get_target("a2a3").derive("a2x")  # a2a3's lineage: its exception
    for t in ("cpu", "a5", fresh):
        with pto.target(t), pytest.raises(pto.PtoError, match=rf"= 16 must be dst valid cols "
                                                                rf"20 on {t}"):
            _concat_short()
    for t in ("a2a3", a2x):
        with pto.target(t):
            _concat_short()  # a2a3: at most dst's static Cols


@pytest.mark.parametrize("name,rule", [("TGATHER", "_tgather_index32"),
                                       ("MGATHER", "_vec_nd"), ("MSCATTER", "_vec_nd")])
def test_index_and_layout_rules_everywhere_but_a5(name: str, rule: str) -> None:
    fresh = get_target("a2a3").derive("fresh", inherit_behaviour=False)
    a5x = get_target("a5").derive("a5x")
    for t, has in (("cpu", True), ("a2a3", True), (fresh, True), ("a5", False), (a5x, False)):
        tgt = get_target(t) if isinstance(t, str) else t
        names = [r.__qualname__.split(".")[0] for r in REGISTRY[name].on(tgt).static]
        assert (rule in names) is has, (name, t)

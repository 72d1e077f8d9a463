"""``pto.vmi.<op>``: the VMI ops as eager Python calls, by their PTOAS names (``pto.vmi.vadd``
is the ``pto.vmi.vadd`` entry of the registry, ``VMI_VADD``).

A call goes through ``Instr.run`` like every instruction and returns the op's result (an
:class:`~ptoisa.vector.logical.LVec` or :class:`~ptoisa.vector.logical.LMask`). Attributes
are keywords (``pto.vmi.vcadd(x, m, group=8, reassoc=True)``); an op whose result type is not
a function of its operands takes it as ``result_type`` (the type's text or a spec:
``pto.vmi.create_mask(64, result_type="!pto.vmi.mask<64xpred>")``). Values are made from
numpy arrays with ``LVec(array)`` / ``LMask(bools)``."""

from __future__ import annotations

from typing import Any


def __getattr__(name: str) -> Any:
    from ..isa.registry import lookup

    ins = lookup(f"pto.vmi.{name}")
    if ins is None or ins.dialect != "vmi":
        raise AttributeError(f"pto.vmi has no op '{name}' (ptoisa executes the ones "
                             "`ptoisa ops` lists under the vmi dialect)")
    return ins


def __dir__() -> list[str]:
    from ..isa.registry import REGISTRY

    return sorted(i.mnemonic.removeprefix("vmi_") for i in REGISTRY.values()
                  if i.dialect == "vmi")

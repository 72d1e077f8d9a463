"""``pto.v.<op>``: the micro-ops as eager Python calls, by their PTOAS names (``pto.v.vadd``
is the ``pto.vadd`` entry of the registry, ``pto.v.plt_b32`` the ``pto.plt_b32`` one).

A call goes through ``Instr.run`` like a tile intrinsic and returns what the op's results are
(one register, or a tuple). Parameters are keywords (``pto.v.vlds(ptr, 0, dist="BRC_B32")``,
``pto.v.pset_b32(pattern="PAT_VL16")``, ``pto.v.vbitcast(v, result_type="!pto.vreg<64xi32>")``).
Micro-ops exist on A5: run them under ``pto.target("a5")``."""

from __future__ import annotations

from typing import Any


def __getattr__(name: str) -> Any:
    from ..isa.registry import lookup

    ins = lookup(f"pto.{name}")
    if ins is None or ins.dialect != "vpto":
        raise AttributeError(f"pto.v has no micro-op '{name}' (ptoisa executes the ones "
                             "`ptoisa ops` lists under the vpto dialect)")
    return ins


def __dir__() -> list[str]:
    from ..isa.registry import REGISTRY

    return sorted(i.mnemonic for i in REGISTRY.values() if i.dialect == "vpto")

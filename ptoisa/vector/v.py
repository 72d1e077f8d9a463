"""``pto.v.<op>``: the micro-ops as eager Python calls, by their PTOAS names (``pto.v.vadd``
is the ``pto.vadd`` entry of the registry, ``pto.v.plt_b32`` the ``pto.plt_b32`` one).

A call goes through ``Instr.run`` like a tile intrinsic and returns what the op's results are
(one register, or a tuple). Parameters are keywords (``pto.v.vlds(ptr, 0, dist="BRC_B32")``,
``pto.v.pset_b32(pattern="PAT_VL16")``, ``pto.v.vbitcast(v, result_type="!pto.vreg<64xi32>")``).
Micro-ops exist on A5: run them under ``pto.target("a5")``.

``pto.v.simt_launch(body, (x, y, z), *args)`` runs a Python function as a SIMT body
(micro-isa/17): once, for all ``x * y * z`` workitems together, the SIMT ops it calls
(``pto.v.get_tid_x()``, ``pto.v.store(...)``, ``pto.v.shuffle_idx(...)`` ...) giving one
value per workitem (``ptoisa/isa/micro/simt.py``)."""

from __future__ import annotations

from typing import Any


def simt_launch(body: Any, dims: tuple[int, int, int], *args: Any) -> Any:
    """Run ``body(*args)`` as a SIMT launch of ``dims`` = (x, y, z) workitems on the current
    machine (``pto.simt_launch @body<<<x, y, z>>>(args)``)."""
    from ..isa.micro.simt import simt_run
    from ..memory import current

    return simt_run(current(), dims, lambda: body(*args))


def __getattr__(name: str) -> Any:
    from ..isa.registry import lookup

    ins = lookup(f"pto.{name}")
    if ins is None or ins.dialect != "vpto":
        raise AttributeError(f"pto.v has no micro-op '{name}' (ptoisa executes the ones "
                             "`ptoisa ops` lists under the vpto dialect)")
    return ins


def __dir__() -> list[str]:
    from ..isa.registry import REGISTRY

    return sorted([i.mnemonic for i in REGISTRY.values() if i.dialect == "vpto"]
                  + ["simt_launch"])

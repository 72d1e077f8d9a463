"""Arrays from other libraries as global memory: kernel arguments (``prog.fn(x, ...)``) and
``GlobalTensor(x, ...)`` take numpy arrays and anything with ``__dlpack__`` or ``__array__``
(torch CPU tensors, jax arrays, ...).

* ``__dlpack__`` (tried first): ``np.from_dlpack`` shares the caller's memory, so results land
  in the caller's buffer with no copy. Memory that is not on the host, a layout that is not
  C-contiguous, or a read-only buffer (jax arrays are immutable) is an error that says so
  (read-only only when something is stored into it).
* ``__array__``: when the array it returns is the object's own memory (its
  ``__array_interface__`` points at the same bytes) it is used as it is; otherwise it is a
  copy, which a ``.pto`` run writes back into the object with ``obj[...] = result`` after the
  run (objects without item assignment, and every ``GlobalTensor`` over such a copy, are
  read-only: a store into them is an error rather than a lost result).
"""

from __future__ import annotations

import sys
import weakref
from dataclasses import dataclass
from typing import Any

import numpy as np

from .errors import PtoError

#: DLPack device types (dlpack.h ``DLDeviceType``) for messages
_DEVICES = {1: "cpu", 2: "cuda", 3: "cuda_host", 4: "opencl", 7: "vulkan", 8: "metal",
            9: "vpi", 10: "rocm", 11: "rocm_host", 12: "ext_dev", 13: "cuda_managed",
            14: "oneapi", 15: "webgpu", 16: "hexagon", 17: "maia"}
_KDLCPU = 1


@dataclass
class Foreign:
    """A caller's array-like and the numpy array ptoisa computes on for it."""

    obj: Any
    array: np.ndarray
    origin: str             # for messages: "a torch.Tensor (shared through DLPack)"
    writeback: bool = False  # array is a copy: obj[...] = array after a run


#: read-only arrays made here, by data address: (the array, where it came from), so that the
#: error of a store into one (a ``.pto`` view made from it) can say what it is
_READ_ONLY: dict[int, tuple[weakref.ref[np.ndarray], str]] = {}


def _note_read_only(a: np.ndarray, origin: str) -> None:
    if a.flags.writeable or not a.size:
        return
    for k in [k for k, (r, _) in _READ_ONLY.items() if r() is None]:
        del _READ_ONLY[k]
    _READ_ONLY[a.__array_interface__["data"][0]] = (weakref.ref(a), origin)


def read_only_origin(a: np.ndarray) -> str | None:
    """Where a read-only array passed as another library's array came from (else None)."""
    got = _READ_ONLY.get(a.__array_interface__["data"][0]) if a.size else None
    return got[1] if got is not None and got[0]() is not None else None


def type_name(obj: Any) -> str:
    t = type(obj)
    return f"{t.__module__.split('.')[0]}.{t.__qualname__}"


def is_array_like(obj: Any) -> bool:
    """An array (numpy's or another library's), not a scalar (numpy scalars have __array__)."""
    if isinstance(obj, np.ndarray):
        return True
    return not isinstance(obj, np.generic) and (hasattr(obj, "__dlpack__")
                                                or hasattr(obj, "__array__"))


def to_numpy(obj: Any, what: str) -> tuple[np.ndarray, Foreign | None]:
    """The numpy array for ``obj`` (itself for a numpy array) and, for another library's
    array, how it maps (:class:`Foreign`). ``what`` names it in errors ("argument 0 (%x...)")."""
    if isinstance(obj, np.ndarray):
        return obj, None
    name = type_name(obj)
    f: Foreign | None = None
    if hasattr(obj, "__dlpack__"):
        got = _from_dlpack(obj, name, what, fallback=hasattr(obj, "__array__"))
        if got is not None:
            f = Foreign(obj, got, f"a {name} (shared through DLPack)")
    if f is None and hasattr(obj, "__array__"):
        f = _from_array(obj, name, what)
    if f is not None:
        _note_read_only(f.array, f.origin)
        return f.array, f
    raise PtoError(f"{what} must be an array: numpy, or anything with __dlpack__ or __array__ "
                   f"(torch CPU tensors, jax arrays), got {name}")


def _from_dlpack(obj: Any, name: str, what: str, fallback: bool) -> np.ndarray | None:
    dev = getattr(obj, "__dlpack_device__", None)
    if dev is not None:
        kind, index = (int(d) for d in dev())
        if kind != _KDLCPU:
            where = f"{_DEVICES.get(kind, f'device type {kind}')}:{index}"
            raise PtoError(f"{what} is a {name} on {where}: ptoisa computes in host memory; "
                           "pass it on the CPU (torch: t.cpu(), jax: jax.device_put(a, "
                           "jax.devices('cpu')[0])) and read the results from that copy")
    try:
        a = _torch_narrow_float(obj)
        if a is None:
            a = np.from_dlpack(obj)
    except (BufferError, TypeError, ValueError, RuntimeError) as e:
        if fallback:  # e.g. an element type numpy has no DLPack code for: try __array__
            return None
        raise PtoError(f"{what}: a {name} could not be shared through DLPack: {e}") from None
    if not a.flags.c_contiguous:
        raise PtoError(f"{what} is a {name} that is not C-contiguous (strides "
                       f"{[s // a.itemsize for s in a.strides]} elements): global memory is "
                       "flat; pass a contiguous one (torch: t.contiguous()) and read the "
                       "results from it")
    return a


def _torch_narrow_float(obj: Any) -> np.ndarray | None:
    """torch's bfloat16 / float8 tensors, which DLPack cannot hand to numpy (numpy has no
    such types): shared as same-width integers, viewed as ml_dtypes' types."""
    torch = sys.modules.get("torch")
    if torch is None or not isinstance(obj, torch.Tensor):
        return None
    import ml_dtypes

    narrow = {"bfloat16": (torch.int16, ml_dtypes.bfloat16),
              "float8_e4m3fn": (torch.uint8, ml_dtypes.float8_e4m3fn),
              "float8_e5m2": (torch.uint8, ml_dtypes.float8_e5m2)}
    got = narrow.get(str(obj.dtype).removeprefix("torch."))
    if got is None:
        return None
    return np.from_dlpack(obj.view(got[0])).view(got[1])


def _from_array(obj: Any, name: str, what: str) -> Foreign:
    try:
        a = np.asarray(obj)
    except Exception as e:  # noqa: BLE001 - the other library's own failure
        raise PtoError(f"{what}: {name}.__array__ failed: {e}") from None
    iface = getattr(obj, "__array_interface__", None)
    shared = (isinstance(iface, dict) and a.size > 0
              and iface.get("data", (None,))[0] == a.__array_interface__["data"][0])
    if shared and a.flags.c_contiguous:
        return Foreign(obj, a, f"a {name} (its own memory, through __array__)")
    if shared:
        raise PtoError(f"{what} is a {name} that is not C-contiguous: global memory is flat; "
                       "pass a contiguous one and read the results from it")
    a = np.array(a, copy=True, order="C")
    if hasattr(type(obj), "__setitem__"):
        return Foreign(obj, a, f"a copy of a {name} (its __array__ copies; results are "
                               "written back after a .pto run)", writeback=True)
    a.flags.writeable = False
    return Foreign(obj, a, f"a read-only copy of a {name} (its __array__ copies and it takes "
                           "no item assignment)")


def for_global_tensor(obj: Any) -> tuple[np.ndarray, str | None]:
    """``GlobalTensor``'s array for ``obj`` and, for another library's, where it came from. A
    copy cannot be written back from a GlobalTensor (no end of run to do it at): it is
    read-only, and a store into it says why."""
    a, f = to_numpy(obj, "GlobalTensor memory")
    if f is None:
        return a, None
    if f.writeback:
        a = a.view()
        a.flags.writeable = False
        return a, (f"a copy of a {type_name(obj)} (its __array__ copies, so a store could "
                   "not reach it; pass a numpy array or an object with __dlpack__)")
    return a, f.origin


def write_back(foreign: list[Foreign]) -> None:
    """After a run: copy results into the callers' objects that were handed over as copies."""
    for f in foreign:
        if f.writeback:
            try:
                f.obj[...] = f.array
            except Exception as e:  # noqa: BLE001 - the other library's own failure
                raise PtoError(f"cannot write the results back into {f.origin}: {e}") from None

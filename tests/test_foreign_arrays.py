"""Arrays from other libraries (``__dlpack__`` / ``__array__``) as kernel arguments and
GlobalTensor memory: results land in the caller's buffer, or a clear error says why not.
Tested with small pure-Python classes everywhere, and with torch CPU tensors where torch is
installed (``pip install 'ptoisa[torch]'``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

import ptoisa as pto
from ptoisa import GlobalTensor, PtoError, Tile, TileType

VEC_ADD = Path(__file__).resolve().parents[1] / "examples" / "vec_add.pto"
N = 64 * 64


class DL:
    """Exports a numpy array's memory through DLPack only (as torch / jax do)."""

    def __init__(self, a: np.ndarray, device: tuple[int, int] = (1, 0)) -> None:
        self.a, self.device = a, device

    def __dlpack__(self, **kw: Any) -> Any:
        return self.a.__dlpack__(**kw)

    def __dlpack_device__(self) -> tuple[int, int]:
        return self.device


class Shared:
    """``__array__`` returning its own memory (``__array_interface__`` says where it is)."""

    def __init__(self, a: np.ndarray) -> None:
        self.a = a
        self.__array_interface__ = a.__array_interface__

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        return self.a


class Copying:
    """``__array__`` returning a copy; item assignment writes into its own list."""

    def __init__(self, values: list[float]) -> None:
        self.values = values

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        return np.array(self.values, np.float32)

    def __setitem__(self, key: Any, value: Any) -> None:
        self.values[:] = np.asarray(value).tolist()


class CopyingReadOnly:
    def __init__(self, values: list[float]) -> None:
        self.values = values

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        return np.array(self.values, np.float32)


def _xyz() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(3)
    return (rng.standard_normal(N, dtype=np.float32), rng.standard_normal(N, dtype=np.float32),
            np.zeros(N, np.float32))


def _store_eager(src: np.ndarray, dst: Any) -> None:
    """TLOAD a 64x64 tile from src, TSTORE it to a GlobalTensor over dst."""
    t = Tile(TileType.Vec, np.float32, 64, 64)
    pto.TLOAD(t, GlobalTensor(src, (64, 64), (64, 1)))
    pto.TSTORE(GlobalTensor(dst, (64, 64), (64, 1)), t)


# ---- DLPack: zero-copy ------------------------------------------------------------------------

def test_dlpack_arguments_of_a_pto_run_share_memory() -> None:
    x, y, z = _xyz()
    pto.load(VEC_ADD).vec_add(DL(x), DL(y), DL(z))
    np.testing.assert_array_equal(z, x + y)          # in the caller's buffer, no copy back


def test_dlpack_global_tensor_is_the_callers_memory() -> None:
    x, _, z = _xyz()
    g = GlobalTensor(DL(z), (64, 64), (64, 1))
    assert np.shares_memory(g.data(), z)
    _store_eager(x, DL(z))
    np.testing.assert_array_equal(z, x)


def test_dlpack_in_an_eager_launch() -> None:
    x, y, z = _xyz()

    def k(a: Any, b: Any, c: Any) -> None:
        ta = Tile(TileType.Vec, np.float32, 64, 64)
        tb = Tile(TileType.Vec, np.float32, 64, 64)
        pto.TLOAD(ta, GlobalTensor(a, (64, 64), (64, 1)))
        pto.TLOAD(tb, GlobalTensor(b, (64, 64), (64, 1)))
        pto.TMUL(ta, ta, tb)
        pto.TSTORE(GlobalTensor(c, (64, 64), (64, 1)), ta)

    pto.launch(k, DL(x), DL(y), DL(z))
    np.testing.assert_array_equal(z, x * y)


def test_dlpack_read_only_is_fine_to_read_and_refuses_a_store() -> None:
    x, y, z = _xyz()
    x.flags.writeable = False
    pto.load(VEC_ADD).vec_add(DL(x), y, z)           # read-only input: fine
    np.testing.assert_array_equal(z, x + y)
    with pytest.raises(pto.PtoMemoryError, match=r"tstore: .*views a test_foreign_arrays\.DL "
                       r"\(shared through DLPack\): it cannot be written"):
        _store_eager(y, DL(x))
    with pytest.raises(pto.PtoMemoryError, match=r"cannot be written"):
        pto.load(VEC_ADD).vec_add(x, y, DL(x))


def test_dlpack_not_on_the_host_is_an_error() -> None:
    x, y, z = _xyz()
    with pytest.raises(PtoError, match=r"argument 2 \(%z: .*\) of @vec_add is a "
                       r"test_foreign_arrays\.DL on cuda:1: ptoisa computes in host memory"):
        pto.load(VEC_ADD).vec_add(x, y, DL(z, device=(2, 1)))
    with pytest.raises(PtoError, match=r"GlobalTensor memory is a .*DL on rocm:0"):
        GlobalTensor(DL(z, device=(10, 0)))


def test_dlpack_not_contiguous_is_an_error() -> None:
    m = np.zeros((64, 128), np.float32)
    with pytest.raises(PtoError, match=r"not C-contiguous \(strides \[1, 128\] elements\)"):
        GlobalTensor(DL(m.T))
    with pytest.raises(PtoError, match=r"argument 0 .* not C-contiguous"):
        pto.load(VEC_ADD).vec_add(DL(np.zeros((2 * N,), np.float32)[::2]), *_xyz()[1:])


def test_dlpack_dtype_mismatch_names_the_type() -> None:
    x, y, z = _xyz()
    with pytest.raises(PtoError, match=r"must have dtype f32 .*got float64 \(from "
                       r"test_foreign_arrays\.DL\)"):
        pto.load(VEC_ADD).vec_add(DL(x.astype(np.float64)), y, z)


# ---- __array__ ---------------------------------------------------------------------------------

def test_array_interface_sharing_memory_is_written_in_place() -> None:
    x, y, z = _xyz()
    pto.load(VEC_ADD).vec_add(Shared(x), Shared(y), Shared(z))
    np.testing.assert_array_equal(z, x + y)
    _store_eager(y, Shared(z))
    np.testing.assert_array_equal(z, y)


def test_array_copy_is_written_back_after_a_pto_run() -> None:
    x, y, _ = _xyz()
    out = Copying([0.0] * N)
    pto.load(VEC_ADD).vec_add(Copying(x.tolist()), y, out)
    np.testing.assert_array_equal(np.array(out.values, np.float32), x + y)


def test_array_copy_without_item_assignment_refuses_a_store() -> None:
    x, y, _ = _xyz()
    with pytest.raises(pto.PtoMemoryError, match=r"read-only copy of a "
                       r"test_foreign_arrays\.CopyingReadOnly"):
        pto.load(VEC_ADD).vec_add(x, y, CopyingReadOnly([0.0] * N))
    # as an input it is fine
    z = np.zeros(N, np.float32)
    pto.load(VEC_ADD).vec_add(CopyingReadOnly(x.tolist()), y, z)
    np.testing.assert_array_equal(z, x + y)


def test_global_tensor_over_a_copy_refuses_a_store() -> None:
    x = _xyz()[0]
    with pytest.raises(pto.PtoMemoryError, match=r"a copy of a test_foreign_arrays\.Copying "
                       r"\(its __array__ copies, so a store could not reach it"):
        _store_eager(x, Copying([0.0] * N))


def test_export_takes_other_libraries_arrays() -> None:
    x, y, z = _xyz()

    def k(a: Any, b: Any, c: Any, s: Any) -> None:
        t = Tile(TileType.Vec, np.float32, 64, 64)
        u = Tile(TileType.Vec, np.float32, 64, 64)
        pto.TLOAD(t, GlobalTensor(a, (64, 64), (64, 1)))
        pto.TLOAD(u, GlobalTensor(b, (64, 64), (64, 1)))
        pto.TADD(t, t, u)
        pto.TMULS(t, t, s)                  # a numpy scalar: baked in, not an array argument
        pto.TSTORE(GlobalTensor(c, (64, 64), (64, 1)), t)

    text = pto.export(k, DL(x), Shared(y), DL(z), np.float32(2.0))
    assert "func.func @k(%a: !pto.ptr<f32>, %b: !pto.ptr<f32>, %c: !pto.ptr<f32>)" in text
    assert not z.any()                                   # export runs on copies


def test_not_an_array() -> None:
    with pytest.raises(PtoError, match=r"must be an array: numpy, or anything with __dlpack__ "
                       r"or __array__ .* got builtins\.list"):
        pto.load(VEC_ADD).vec_add([1.0] * N, *_xyz()[1:])
    with pytest.raises(PtoError, match=r"GlobalTensor memory must be an array"):
        GlobalTensor("abc")


# ---- torch (the optional extra) --------------------------------------------------------------

def test_torch_cpu_tensors() -> None:
    torch = pytest.importorskip("torch", reason="torch is an optional extra: "
                                "pip install 'ptoisa[torch]'")
    x, y, _ = (torch.from_numpy(a) for a in _xyz())
    z = torch.zeros(N)
    ptr = z.data_ptr()
    pto.load(VEC_ADD).vec_add(x, y, z)
    assert z.data_ptr() == ptr and torch.equal(z, x + y)   # in place, no copy
    w = torch.zeros(64, 64)
    _store_eager(x.numpy(), w)
    assert torch.equal(w.reshape(-1), x)
    with pytest.raises(PtoError, match=r"torch\.Tensor that is not C-contiguous"):
        GlobalTensor(torch.zeros(64, 128).T)
    with pytest.raises(PtoError, match=r"must have dtype f32 .*got float64 \(from torch\.Tensor\)"):
        pto.load(VEC_ADD).vec_add(x.double(), y, z)


def test_torch_bfloat16_and_grad() -> None:
    torch = pytest.importorskip("torch", reason="torch is an optional extra: "
                                "pip install 'ptoisa[torch]'")
    src = torch.arange(256, dtype=torch.float32).reshape(16, 16).to(torch.bfloat16)
    dst = torch.zeros(16, 16, dtype=torch.bfloat16)
    t = Tile(TileType.Vec, "bf16", 16, 16)
    pto.TLOAD(t, GlobalTensor(src))
    pto.TADD(t, t, t)
    pto.TSTORE(GlobalTensor(dst), t)
    assert torch.equal(dst, src * 2)                       # exact: small integers in bf16
    with pytest.raises(PtoError, match=r"requires grad.*detach"):
        GlobalTensor(torch.zeros(16, requires_grad=True))

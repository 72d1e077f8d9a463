"""Helpers the irregular family's modules share (raw bits, unsigned indices, operand rules)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...dtypes import DType
from ...errors import RuntimeCheckError
from ...tensor import GMSpec
from ...tile import TileSpec
from ..registry import Instr, Sig

# ---- small helpers -------------------------------------------------------------------------------

def _bits(a: np.ndarray) -> np.ndarray:
    """Same-size unsigned integer view (bit-exact moves)."""
    return a.view(f"u{a.dtype.itemsize}")


def _uidx(a: np.ndarray) -> np.ndarray:
    """Indices as unsigned 32-bit values in int64 (negative indices become huge)."""
    a = np.asarray(a)
    if a.dtype.kind == "i":
        a = a.astype(np.int64) & 0xFFFFFFFF if a.dtype.itemsize >= 4 else \
            a.astype(np.int64) & ((1 << (8 * a.dtype.itemsize)) - 1)
    return a.astype(np.int64)


def _fail(ins: Instr, msg: str) -> RuntimeCheckError:
    return RuntimeCheckError(msg, op=ins.mnemonic)


def _elem_size(names: tuple[str, ...], sizes: tuple[int, ...]) -> Any:
    def rule(sig: Sig) -> None:
        for n in names:
            t = sig[n]
            if isinstance(t, (TileSpec, GMSpec)) and t.dtype.itemsize not in sizes:
                raise sig.fail(f"{n} element size must be {' or '.join(map(str, sizes))} bytes, "
                               f"got {t.dtype} ({t.dtype.itemsize} bytes)")
    return rule


def _same_size(a: str, b: str) -> Any:
    def rule(sig: Sig) -> None:
        x, y = sig[a], sig[b]
        if isinstance(x, (TileSpec, GMSpec)) and isinstance(y, (TileSpec, GMSpec)) and \
                x.dtype.itemsize != y.dtype.itemsize:
            raise sig.fail(f"{a} ({x.dtype}) and {b} ({y.dtype}) must have the same element "
                           "size")
    return rule


def _int_dtype(name: str, sizes: tuple[int, ...] = (2, 4)) -> Any:
    def rule(sig: Sig) -> None:
        t = sig[name]
        if isinstance(t, (TileSpec, GMSpec)) and (not t.dtype.is_int or
                                                  t.dtype.itemsize not in sizes):
            want = "/".join(f"{8 * s}-bit" for s in sizes)
            raise sig.fail(f"{name} must hold {want} integers, got {t.dtype}")
    return rule


# ==== TCI =========================================================================================

def _tci_rows(sig: Sig) -> None:
    d = sig["dst"]
    if isinstance(d, TileSpec) and d.rows != 1:
        raise sig.fail(f"dst must have Rows == 1, got {d.rows}")


def _wrap_to(x: np.ndarray, dt: DType) -> np.ndarray:
    if dt.is_int:
        bits = dt.itemsize * 8
        u = x.astype(np.int64) & ((1 << bits) - 1) if bits < 64 else x.astype(np.int64)
        return u.astype(f"u{dt.itemsize}").view(dt.np)
    return x.astype(dt.np)

"""IR types: immutable, interned (a tile_buf type repeats on every line of a .pto file).

Construct types through their classes and pass them through :func:`intern` (the parser does),
or compare them with ``==`` (frozen dataclasses compare by value either way).
Every type prints back to text that the parser reads as an equal type (``str(t)``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeVar

from ptoisa.ir.base import Attribute, Type

_T = TypeVar("_T", bound="Type")
_TABLE: dict[Type, Type] = {}


def intern(t: _T) -> _T:
    """The canonical instance equal to ``t`` (hash-consing)."""
    return _TABLE.setdefault(t, t)  # type: ignore[return-value]


Dim = int | None  # None is a dynamic dimension, written ``?``


def _dims(shape: tuple[Dim, ...]) -> str:
    return "".join(("?" if d is None else str(d)) + "x" for d in shape)


@dataclass(frozen=True, slots=True)
class IntegerType(Type):
    """``iN`` (signless), ``siN`` or ``uiN``."""

    width: int
    signedness: str = ""  # "", "s" or "u"

    def __str__(self) -> str:
        return f"{self.signedness}i{self.width}"


@dataclass(frozen=True, slots=True)
class FloatType(Type):
    """Builtin float types by their MLIR name: f16, bf16, f32, f64, f8E4M3FN, tf32, ..."""

    name: str

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True, slots=True)
class IndexType(Type):
    def __str__(self) -> str:
        return "index"


@dataclass(frozen=True, slots=True)
class NoneType(Type):
    def __str__(self) -> str:
        return "none"


@dataclass(frozen=True, slots=True)
class UnknownType(Type):
    """Type of a result whose type the text does not state (inferred later by the verifier)."""

    def __str__(self) -> str:
        return "<<unknown>>"


@dataclass(frozen=True, slots=True)
class TileBufType(Type):
    """``!pto.tile_buf<...>``; ``v_row``/``v_col`` are None when dynamic (``?``).

    ``pad`` and ``compact`` are the integer codes of PTOAS (pad 0=null 1=zero 2=max 3=min;
    compact 0=null 1=normal 2=row_plus_one); ``compact`` is None when not written.
    The keyed and the compact spellings parse to the same value; the keyed one is printed.
    """

    loc: str
    dtype: Type
    rows: int
    cols: int
    v_row: int | None
    v_col: int | None
    blayout: str = "row_major"
    slayout: str = "none_box"
    fractal: int = 512
    pad: int = 0
    compact: int | None = None

    @property
    def shape(self) -> tuple[int, int]:
        return (self.rows, self.cols)

    @property
    def valid_shape(self) -> tuple[int | None, int | None]:
        return (self.v_row, self.v_col)

    def __str__(self) -> str:
        vr = "?" if self.v_row is None else str(self.v_row)
        vc = "?" if self.v_col is None else str(self.v_col)
        text = (
            f"!pto.tile_buf<loc={self.loc}, dtype={self.dtype}, rows={self.rows}, "
            f"cols={self.cols}, v_row={vr}, v_col={vc}, blayout={self.blayout}, "
            f"slayout={self.slayout}, fractal={self.fractal}, pad={self.pad}"
        )
        if self.compact is not None:
            text += f", compact={self.compact}"
        return text + ">"


@dataclass(frozen=True, slots=True)
class TileType(Type):
    """``!pto.tile<16x16xf32>`` (the SSA tile type of PTOAS)."""

    shape: tuple[Dim, ...]
    dtype: Type

    def __str__(self) -> str:
        return f"!pto.tile<{_dims(self.shape)}{self.dtype}>"


@dataclass(frozen=True, slots=True)
class TensorViewType(Type):
    """``!pto.tensor_view<?x?xf32>``."""

    shape: tuple[Dim, ...]
    dtype: Type

    def __str__(self) -> str:
        return f"!pto.tensor_view<{_dims(self.shape)}{self.dtype}>"


@dataclass(frozen=True, slots=True)
class PartitionTensorViewType(Type):
    """``!pto.partition_tensor_view<32x32xf32>``."""

    shape: tuple[Dim, ...]
    dtype: Type

    def __str__(self) -> str:
        return f"!pto.partition_tensor_view<{_dims(self.shape)}{self.dtype}>"


@dataclass(frozen=True, slots=True)
class PtrType(Type):
    """``!pto.ptr<f32>`` (optionally ``!pto.ptr<f32, gm>``)."""

    dtype: Type
    space: str | None = None

    def __str__(self) -> str:
        if self.space is None:
            return f"!pto.ptr<{self.dtype}>"
        return f"!pto.ptr<{self.dtype}, {self.space}>"


@dataclass(frozen=True, slots=True)
class MemRefType(Type):
    """``memref<16x16xf32, strided<[16, 1]>, #pto.address_space<vec>>``."""

    shape: tuple[Dim, ...]
    dtype: Type
    layout: Attribute | None = None
    memory_space: Attribute | None = None

    def __str__(self) -> str:
        text = f"memref<{_dims(self.shape)}{self.dtype}"
        if self.layout is not None:
            text += f", {self.layout}"
        if self.memory_space is not None:
            text += f", {self.memory_space}"
        return text + ">"


@dataclass(frozen=True, slots=True)
class FunctionType(Type):
    inputs: tuple[Type, ...]
    results: tuple[Type, ...]

    def __str__(self) -> str:
        ins = ", ".join(map(str, self.inputs))
        if len(self.results) == 1 and not isinstance(self.results[0], FunctionType):
            return f"({ins}) -> {self.results[0]}"
        return f"({ins}) -> ({', '.join(map(str, self.results))})"


@dataclass(frozen=True, slots=True)
class OpaqueType(Type):
    """Any other type (``!pto.pipe``, ``!pto.eventid_array<4>``, ``vector<4xi16>``, ...).

    ``text`` is the normalised spelling (whitespace collapsed); it prints back verbatim.
    """

    text: str

    @property
    def dialect_name(self) -> str:
        """``pto.eventid_array`` for ``!pto.eventid_array<4>``, ``vector`` for ``vector<..>``."""
        head = self.text.lstrip("!")
        return head.split("<", 1)[0]

    def __str__(self) -> str:
        return self.text


INDEX = intern(IndexType())
I1 = intern(IntegerType(1))
I32 = intern(IntegerType(32))
I64 = intern(IntegerType(64))
UNKNOWN = intern(UnknownType())

"""Legality of the cube <-> vector FIFO instructions and the fix-pipe quant registers (any
element type moves through a FIFO; producers Acc/Vec/Mat, consumers Vec/Mat)."""

from ...enums import TileType
from .. import Rule, rule

LEGALITY: dict[str, Rule] = {
    "TPUSH": rule(locs=[TileType.Acc, TileType.Vec, TileType.Mat]),
    "TPOP": rule(locs=[TileType.Vec, TileType.Mat]),
    "TFREE": rule(),
    "SET_QUANT_SCALAR": rule(),
    "SET_QUANT_VECTOR": rule("ui64", locs=[TileType.Scaling]),
}

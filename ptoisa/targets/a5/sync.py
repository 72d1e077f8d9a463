"""Legality of the synchronisation instructions (no element types involved)."""

from .. import Rule, rule

LEGALITY: dict[str, Rule] = {
    "TSYNC": rule(),
    "SYNCALL": rule(),
}

"""Legality of the communication instructions (single-process semantics; any element type the
GM views carry)."""

from .. import Rule, rule

LEGALITY: dict[str, Rule] = {
    "TGET": rule(),
    "TPUT": rule(),
    "TGET_ASYNC": rule(),
    "TPUT_ASYNC": rule(),
    "TNOTIFY": rule(),
    "TWAIT": rule(),
    "TTEST": rule(),
    "TBROADCAST": rule(),
    "TREDUCE": rule(),
}

"""Fuzzing: mutated corpus texts and random strings either parse or raise ParseError /
VerifyError with a location, never anything else."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from text_corpus import FILES, SKIP_REASON

from ptoisa.errors import ParseError, VerifyError
from ptoisa.text import parse, print_module

SMALL = sorted(FILES, key=lambda f: f.stat().st_size)[:40] if FILES else []
TEXTS = [f.read_text() for f in SMALL]
ALPHABET = '%@#!^:=,()[]{}<>-? \n"\\x0123456789abfilnoptuv._/*'
TOKENS = [
    "ins(",
    "outs(",
    "%0",
    ":",
    "->",
    "{",
    "}",
    "<",
    ">",
    "!pto.tile_buf<",
    "(",
    ")",
    ",",
    "=",
    "pto.tadd",
    "scf.if",
    "^bb0:",
    '"',
    "//",
    "\n",
    "?",
    "x",
    "loc=vec",
]
SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def check(text: str) -> None:
    try:
        mod = parse(text, "fuzz.pto")
    except (ParseError, VerifyError) as err:
        assert err.loc is not None, err
        str(err)
        return
    for form in ("dps", "ssa", "asm"):
        print_module(mod, form)


@st.composite
def mutated(draw):
    text = draw(st.sampled_from(TEXTS))
    for _ in range(draw(st.integers(1, 4))):
        pos = draw(st.integers(0, len(text)))
        kind = draw(st.sampled_from(["delete", "insert", "token", "swap"]))
        if kind == "delete":
            n = draw(st.integers(1, 12))
            text = text[:pos] + text[pos + n :]
        elif kind == "insert":
            text = text[:pos] + draw(st.text(ALPHABET, min_size=1, max_size=4)) + text[pos:]
        elif kind == "token":
            text = text[:pos] + draw(st.sampled_from(TOKENS)) + text[pos:]
        elif pos + 1 < len(text):
            other = draw(st.integers(0, len(text) - 1))
            a, b = sorted((pos, other))
            if a != b:
                text = text[:a] + text[b] + text[a + 1 : b] + text[a] + text[b + 1 :]
    return text


@pytest.mark.skipif(not FILES, reason=SKIP_REASON)
@SETTINGS
@given(mutated())
def test_mutated_corpus(text):
    check(text)


@SETTINGS
@given(st.text(ALPHABET, max_size=80))
def test_random_strings(text):
    check(text)


@SETTINGS
@given(st.lists(st.sampled_from(TOKENS), max_size=30).map(" ".join))
def test_random_token_soup(text):
    check(text)

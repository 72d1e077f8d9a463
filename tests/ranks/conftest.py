"""Multi-rank tests: no wait may hang a test run (a bounded timeout for every launch)."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _bounded_waits(monkeypatch):
    monkeypatch.setenv("PTOISA_RANK_TIMEOUT", "20")

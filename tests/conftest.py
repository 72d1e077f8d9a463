"""Shared fixtures: a fresh machine per target, and a clean machine stack around every test."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import ptoisa
from ptoisa import memory

TARGETS = ("cpu", "a2a3", "a5")


@pytest.fixture(autouse=True)
def _restore_machine_stack():
    """Whatever a test pushes with ``ptoisa.target(...)`` is gone afterwards."""
    saved = list(memory._stack)
    yield
    memory._stack[:] = saved


@pytest.fixture(params=TARGETS)
def machine(request):
    """A fresh current machine of each target (auto mode); popped after the test."""
    m = ptoisa.target(request.param)
    yield m
    memory.pop(m)


@pytest.fixture
def shared_dir() -> Path:
    """The shared read-only material (PTOISA_SHARED or ../shared next to the checkout)."""
    env = os.environ.get("PTOISA_SHARED")
    return Path(env) if env else Path(__file__).resolve().parents[2] / "shared"

"""Benchmarks run once as smoke tests in CI (--benchmark-disable); time them with
`pytest benches --benchmark-enable` (see README, Reproducing)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests" / "support"))

from synthetic import synthetic_history  # noqa: E402
from transcripts import LOCAL, SHARED, load_conversations, shared_available  # noqa: E402


@pytest.fixture(scope="session")
def history_1k() -> list[dict]:
    return synthetic_history(1_000)


@pytest.fixture(scope="session")
def history_10k() -> list[dict]:
    return synthetic_history(10_000)


@pytest.fixture(scope="session")
def swe_histories() -> list[list[dict]]:
    """The longest real SWE trajectories available (full set if present, else the subset)."""
    root = SHARED if shared_available() else LOCAL
    convs = sorted(load_conversations(root, "mini-swe-agent-gemini3"), key=lambda c: -len(c["messages"]))
    return [c["messages"] for c in convs[:20]]

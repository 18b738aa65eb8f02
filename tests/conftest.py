"""Shared fixtures: an exact o200k counter for the floors that compare against real tokens."""

from __future__ import annotations

import pytest

import contextfold


@pytest.fixture(scope="session")
def o200k():
    """Exact o200k_base token count of a string (special-token text counted as text)."""
    return lambda s: contextfold.count_text(s, encoding="o200k_base")

"""Shared fixtures: an exact o200k counter for the floors that compare against real tokens."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from transcripts import ROOT


@pytest.fixture(scope="session")
def o200k():
    """Exact o200k_base token count of a string (special-token text counted as text)."""
    import contextfold

    if hasattr(contextfold, "count_text"):
        return lambda s: contextfold.count_text(s, encoding="o200k_base")
    cache = Path(os.environ.get("TIKTOKEN_CACHE_DIR", ROOT.parent / "shared" / "data" / "tiktoken-cache"))
    if not (cache / "fb374d419588a4632f3f557e76b4b70aebbca790").exists():
        pytest.skip(f"no exact o200k counter: tiktoken cache not found at {cache}")
    os.environ["TIKTOKEN_CACHE_DIR"] = str(cache)
    tiktoken = pytest.importorskip("tiktoken")
    enc = tiktoken.get_encoding("o200k_base")
    return lambda s: len(enc.encode(s, disallowed_special=()))

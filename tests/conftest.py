"""Shared fixtures: an exact o200k counter for the floors that compare against real tokens."""

from __future__ import annotations

import pytest

import contextfold


@pytest.fixture(scope="session")
def o200k():
    """Exact o200k_base token count of a string (special-token text counted as text)."""
    return lambda s: contextfold.count_text(s, encoding="o200k_base")


# -- one line at the end: which parts of the suite did not run, and why ----------------------------

#: What a skip needs, read off its reason (first match wins), and what to do about it.
_NEEDS = (
    ("shared/data", "../shared/data (the full transcript sets; see tests/transcripts.py)"),
    ("data sets absent", "../shared/data (the full transcript sets; see tests/transcripts.py)"),
    ("chromium", "chromium (apt-get install chromium)"),
    ("redis-server", "redis-server (apt-get install redis-server)"),
    ("redis-py", "redis-py (pip install '.[redis]')"),
    ("root", "a user who cannot write everywhere (not root)"),
)


def _need(reason: str) -> str:
    low = reason.lower()
    for key, need in _NEEDS:
        if key in low:
            return need
    # An optional package: "could not import 'x'" or a reason naming the extra.
    return "optional packages: " + reason.split(":", 1)[-1].strip()[:60]


@pytest.hookimpl(trylast=True)
def pytest_terminal_summary(terminalreporter, exitstatus, config):  # type: ignore[no-untyped-def]
    """After the run, one line naming what was skipped and what it needs."""
    skipped = terminalreporter.stats.get("skipped", [])
    if not skipped:
        return
    counts: dict[str, int] = {}
    for rep in skipped:
        longrepr = getattr(rep, "longrepr", None)
        reason = longrepr[2] if isinstance(longrepr, tuple) and len(longrepr) == 3 else str(longrepr)
        reason = reason.removeprefix("Skipped: ")
        need = _need(reason)
        counts[need] = counts.get(need, 0) + 1
    parts = [f"{n} need {need}" for need, n in sorted(counts.items(), key=lambda kv: -kv[1])]
    terminalreporter.write_line(f"skipped {len(skipped)}: " + "; ".join(parts))

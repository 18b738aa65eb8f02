"""The plan's per-message costs are what ``estimate_each`` says of the same messages, so a step
that needs them again (the tail fill) can read them from the plan instead of pricing the
history twice."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import contextfold as cf
from contextfold import _core

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "support"))
from compaction_shapes import FORMATS, PROVIDER, convert  # noqa: E402
from transcripts import first_conversations  # noqa: E402


def _histories() -> list[list[dict]]:
    return first_conversations(6)


@pytest.mark.parametrize("fmt", FORMATS)
def test_the_plan_prices_each_message_as_estimate_each(fmt: str) -> None:
    for chat in _histories():
        msgs, system = convert(chat, fmt)
        provider = PROVIDER[fmt]
        c = cf.Compactor(provider=provider, system=system, budget=max(1, cf.estimate(msgs, provider=provider) // 3))
        plan = c._start(msgs).plan
        assert plan["costs"] == _core.estimate_each(msgs, provider=provider, model=None)

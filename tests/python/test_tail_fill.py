"""The summary's room stays put across compactions: at most ROOM_SWING times its stable room
(decided from the budget, the head and the tail's target), the tail taking what exceeds it
(the round before it whole, or with its largest message cut in the middle, recoverable), so the
budget is still used."""

from __future__ import annotations

import re

import pytest

import contextfold as cf
from contextfold import _core
from contextfold.evaluation import Fixture
from contextfold.summary_room import ROOM_SWING, summary_room
from test_what_compaction_keeps import inline_fixtures


def test_the_room_is_held_to_its_swing_over_the_stable_room() -> None:
    plan = {"summary_tokens": 500, "fixed_tokens": 1_000}
    assert summary_room(plan, 5_000, None) > 3_800  # the budget less everything else
    assert summary_room(plan, 5_000, None, stable=1_000) == int(1_000 * ROOM_SWING)
    assert summary_room(plan, 5_000, None, stable=100) == 500  # never under the planned share
    assert summary_room(plan, 5_000, 300, stable=1_000) == 300  # a cap is a cap


@pytest.mark.parametrize("fx", inline_fixtures(), ids=lambda f: f.name[-30:])
@pytest.mark.parametrize("share", [0.3, 0.5])
def test_the_tail_takes_what_exceeds_the_room_and_the_budget_is_still_used(fx: Fixture, share: float) -> None:
    total = _core.estimate(fx.messages, provider="openai", tools=fx.tools)
    head = _core.estimate(fx.messages[:2], provider="openai", tools=fx.tools)
    budget = head + int((total - head) * share)
    r = cf.Compactor(budget=budget, strategy="summarize", tools=fx.tools, min_free_share=0.0).compact(fx.messages)
    assert r.strategy_used == "summarize"
    assert 0.9 * budget <= r.tokens_after <= budget, r.notes
    # Recoverable (the budget less a recall round's reserve): each cut comes back.
    c = cf.Compactor(budget=budget, strategy="summarize", tools=fx.tools, min_free_share=0.0, recoverable=True)
    try:
        r = c.compact(fx.messages)
    except cf.CompactionBudgetError as e:  # the recall round's reserve leaves less than the floor
        assert "alone take" in str(e)
        return
    for note in r.notes:
        m = re.match(r"the tail takes message (\d+) with its middle cut .*id=(cf[0-9a-f]{12})", note)
        if m:
            # The cut message is in the tail, and its whole text comes back byte-exact.
            original = fx.messages[int(m.group(1))]["content"]
            assert c.recall(m.group(2)) == original
            assert any(m.group(2) in str(x.get("content")) for x in r.messages)

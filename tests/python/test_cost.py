"""The money model (`contextfold.cost`): prices per model and a compaction's predicted effect."""

from __future__ import annotations

import pytest

import contextfold as cf
from contextfold.cost import PRICES, Prices, compaction_cost, prices_for
from transcripts import LOCAL, SHARED, load_conversations, shared_available


def _trajectory() -> list[dict]:
    convs = load_conversations(SHARED if shared_available() else LOCAL, "mini-swe-agent-gemini3")
    return max((c["messages"] for c in convs), key=len)


def test_prices_resolve_a_model_and_its_dated_snapshots_and_can_be_overridden() -> None:
    assert prices_for("gpt-4o-mini-2024-07-18") is PRICES["gpt-4o-mini"]
    assert prices_for("gpt-4o-2024-08-06") is PRICES["gpt-4o"]
    assert prices_for("openai/gpt-4o") is PRICES["gpt-4o"]
    assert prices_for("claude-sonnet-4-5-20250929") is PRICES["claude-sonnet-4-5"]
    assert prices_for("anthropic/claude-sonnet-4.5") is PRICES["claude-sonnet-4-5"]
    assert prices_for("claude-opus-4-1-20250805").input == 15.0  # not Opus 4.5's 5.0
    assert prices_for("claude-3-7-sonnet-latest") is PRICES["claude-3-7-sonnet"]
    mine = {"my-model": Prices(1.0, 0.1, 1.25, 4.0)}
    assert prices_for("my-model", mine).output == 4.0
    with pytest.raises(KeyError, match="unknown-model"):
        prices_for("unknown-model")


@pytest.mark.parametrize("sibling", ["gemini-2.5-flash-lite", "o3-mini", "o3-pro", "gpt-5-pro", "gpt-4o-2024-05-13",
                                     "gpt-4.1-mini-fast", "my-model-v2"])
def test_a_sibling_model_is_unknown_not_priced_as_the_model_its_name_starts_with(sibling: str) -> None:
    # Each of these has its own list price (flash-lite 0.10/0.40 vs flash 0.30/2.50; o3-pro
    # 20/80 vs o3 2/8; gpt-4o-2024-05-13 5/15 vs gpt-4o 2.50/10): a prefix match was silently wrong.
    table = {"my-model": Prices(1.0, 0.1, 1.25, 4.0)} if sibling.startswith("my-") else None
    with pytest.raises(KeyError, match=sibling):
        prices_for(sibling, table)


def test_a_compaction_pays_back_after_a_number_of_turns_that_the_cache_write_sets() -> None:
    h = _trajectory()
    budget = cf.estimate(h, provider="anthropic", model="claude-sonnet-4-5") // 2
    r = cf.Compactor(provider="anthropic", model="claude-sonnet-4-5", budget=budget).compact(h)
    assert r.changed and r.tokens_after < r.tokens_before
    c = r.cost(model="claude-sonnet-4-5", provider="anthropic")
    # The extractive summary is free; the rewritten suffix is written to the cache (1.25x input)
    # where it would have been read (0.1x): the first request costs more, later ones less.
    assert c.summarizer_call == 0.0
    assert c.next_turn_extra > 0 and c.saved_per_turn > 0
    n = c.break_even_turns
    assert n is not None and n > 1 and c.net(n) <= 0 < c.net(n - 1)
    # A cold cache saves the full input price per turn: it pays back sooner.
    cold = r.cost(model="claude-sonnet-4-5", provider="anthropic", warm=False)
    assert cold.saved_per_turn > c.saved_per_turn
    # An LLM summary adds its call; a one-shot summarizer pays full input for what it reads.
    with_summary = compaction_cost(r, model="claude-sonnet-4-5", provider="anthropic", summary_output_tokens=800,
                                   llm_summary=True)
    one_shot = compaction_cost(r, model="claude-sonnet-4-5", provider="anthropic", summary_output_tokens=800,
                               same_model_summarizer=False, llm_summary=True)
    if r.summary:
        assert one_shot.summarizer_call > with_summary.summarizer_call > 0

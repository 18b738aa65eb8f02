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
    # An LLM summary adds its call, its input priced as uncached input unless the summarizer
    # resends the conversation's cached prefix.
    uncached = compaction_cost(r, model="claude-sonnet-4-5", provider="anthropic", summary_output_tokens=800,
                               llm_summary=True)
    reuses = compaction_cost(r, model="claude-sonnet-4-5", provider="anthropic", summary_output_tokens=800,
                             summarizer_reuses_cache=True, llm_summary=True)
    if r.summary:
        assert uncached.summarizer_call > reuses.summarizer_call > 0


def _agent(turns: int = 40) -> list[dict]:
    h = [{"role": "user", "content": "task: fix the bug"}]
    for i in range(turns):
        h.append({"role": "assistant", "content": f"step {i}: " + "reading the code " * 40})
        h.append({"role": "user", "content": f"observation {i}: " + "output line " * 300})
    return h


SYSTEM = "You are a careful assistant. " + "Follow the policy rules exactly. " * 600
TOOLS = [{"type": "function", "function": {"name": f"tool_{i}", "description": "does a thing " * 40,
          "parameters": {"type": "object", "properties": {"x": {"type": "string"}}}}} for i in range(20)]


def test_a_compaction_that_changed_nothing_costs_and_saves_nothing() -> None:
    hist = [{"role": "user", "content": "hello"}, {"role": "assistant", "content": "hi"},
            {"role": "user", "content": "summarize the policy"}]
    r = cf.Compactor(provider="anthropic", model="claude-sonnet-4-5", budget=100_000, system=SYSTEM).compact(hist)
    assert not r.changed
    for warm in (True, False):
        c = r.cost(model="claude-sonnet-4-5", provider="anthropic", warm=warm)
        # Was $0.013 on the next turn: the 3,856-token system prompt priced as a cache write.
        assert (c.summarizer_call, c.next_turn_extra, c.saved_per_turn, c.net(10)) == (0.0, 0.0, 0.0, 0.0)
        assert c.prefix_tokens == r.tokens_before


def test_the_system_prompt_and_tools_stay_in_the_cached_prefix() -> None:
    model = "claude-sonnet-4-5"
    overhead = cf.request_overhead(provider="anthropic", model=model, tools=TOOLS, system=SYSTEM)
    r = cf.Compactor(provider="anthropic", model=model, budget=overhead + 8000, strategy="summarize", system=SYSTEM,
                     tools=TOOLS).compact(_agent())
    assert r.changed and r.removed
    c = r.cost(model=model, provider="anthropic")
    head = cf.estimate(r.messages[: r.removed[0]], provider="anthropic", model=model, tools=TOOLS, system=SYSTEM)
    assert c.prefix_tokens >= overhead and abs(c.prefix_tokens - head) <= 0.01 * head
    p = c.prices
    expected = (head * p.cached_read + (r.tokens_after - head) * p.cache_write - r.tokens_before * p.cached_read) * 1e-6
    # Was $0.047 (system and tools priced as a cache write) against $0.019.
    assert c.next_turn_extra == pytest.approx(expected, rel=0.01)


def test_a_cold_cache_prices_both_requests_alike() -> None:
    model = "claude-sonnet-4-5"
    r = cf.Compactor(provider="anthropic", model=model, budget=8000, strategy="summarize").compact(_agent())
    c = r.cost(model=model, provider="anthropic", warm=False)
    p = c.prices
    # Cold, both requests write their whole prompt: the compaction changes only the size.
    assert c.next_turn_extra == pytest.approx((r.tokens_after - r.tokens_before) * p.cache_write * 1e-6)
    assert c.saved_per_turn == pytest.approx((r.tokens_before - r.tokens_after) * p.cache_write * 1e-6)

    class SameSize:  # a rewrite from message 1 on that keeps the size: nothing to pay cold
        messages, summary, removed, pruned = r.messages, None, (1,), ()
        tokens_before = tokens_after = r.tokens_before

    assert compaction_cost(SameSize, model=model, provider="anthropic", warm=False).next_turn_extra == 0.0


def test_an_llm_summary_reads_its_input_uncached_by_default() -> None:
    model = "claude-sonnet-4-5"
    r = cf.Compactor(provider="anthropic", model=model, budget=8000, strategy="summarize").compact(_agent())
    assert r.summary
    c = r.cost(model=model, provider="anthropic", llm_summary=True, summary_output_tokens=800)
    p = c.prices
    folded = r.tokens_before - r.tokens_after + 800
    # LLMSummarizer sends its own system prompt and a transcript: no cache hit (was priced at
    # the cached read, 10x low on Sonnet).
    assert c.summarizer_call == pytest.approx((folded * p.input + 800 * p.output) * 1e-6)
    reuse = r.cost(model=model, provider="anthropic", llm_summary=True, summary_output_tokens=800,
                   summarizer_reuses_cache=True)
    assert reuse.summarizer_call < c.summarizer_call
    # The option's earlier name still works, and says it is deprecated.
    with pytest.warns(DeprecationWarning, match="summarizer_reuses_cache"):
        old = r.cost(model=model, provider="anthropic", llm_summary=True, summary_output_tokens=800,
                     same_model_summarizer=True)
    assert old == reuse

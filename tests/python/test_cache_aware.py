"""`Compactor(cache_aware=True)`: the gate waits while the cached prefix is warm, unless the
window is nearly full; `clear_at_least` is chosen from the model's cache prices."""

from __future__ import annotations

import pytest

import contextfold as cf
from contextfold.cache_policy import CachePolicy
from contextfold.cost import Prices, prices_for
from transcripts import LOCAL, SHARED, load_conversations, shared_available


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _history() -> list[dict]:
    convs = load_conversations(SHARED if shared_available() else LOCAL, "mini-swe-agent-gemini3")
    return max((c["messages"] for c in convs), key=len)


def test_the_gate_defers_while_warm_and_fires_when_cold_or_nearly_full() -> None:
    h = _history()
    tokens = cf.estimate(h, provider="anthropic", model="claude-sonnet-4-5")
    c = cf.Compactor(provider="anthropic", model="claude-sonnet-4-5", trigger=tokens // 2,
                     context_window=tokens * 4, cache_aware=True)
    clock = Clock()
    assert c._cache is not None
    c._cache.clock = clock
    assert c.should_compact(h)  # no earlier call: nothing cached to lose
    clock.now += 60
    assert not c.should_compact(h)  # within the 5-minute TTL: wait
    clock.now += 301
    assert c.should_compact(h)  # gone cold: compacting costs no cache write premium
    # Nearly full: compact even when warm.
    full = cf.Compactor(provider="anthropic", model="claude-sonnet-4-5", trigger=tokens // 2,
                        context_window=int(tokens * 1.1), cache_aware=True)
    assert full._cache is not None
    full._cache.clock = clock
    full.should_compact(h)
    clock.now += 1
    assert full.should_compact(h)
    # Without cache_aware the gate never waits.
    plain = cf.Compactor(provider="anthropic", model="claude-sonnet-4-5", trigger=tokens // 2,
                         context_window=tokens * 4)
    assert plain.should_compact(h) and plain.should_compact(h)


def test_clear_at_least_follows_the_cache_price_of_the_model() -> None:
    sonnet = cf.Compactor(provider="anthropic", model="claude-sonnet-4-5", budget=50_000, cache_aware=True)
    gpt = cf.Compactor(model="gpt-4o", budget=50_000, cache_aware=True)
    assert sonnet.clear_at_least > gpt.clear_at_least > 0
    p = prices_for("gpt-4o")
    assert gpt.clear_at_least == CachePolicy(p).clear_at_least(50_000)
    # A caller's own value is kept.
    assert cf.Compactor(model="gpt-4o", budget=50_000, cache_aware=True, clear_at_least=7).clear_at_least == 7


def test_a_bedrock_claude_id_resolves_to_its_model_but_is_never_silently_priced_as_free_to_rewrite() -> None:
    # Bedrock sets its own prices (per region and endpoint): the table has none, and the gate says
    # so instead of assuming no cache-write premium (clear_at_least 0) without a word.
    bedrock = "us.anthropic.claude-sonnet-4-20250514-v1:0"
    with pytest.raises(KeyError, match="Bedrock"):
        prices_for(bedrock)
    with pytest.raises(KeyError, match="Bedrock"):
        prices_for("bedrock/anthropic.claude-sonnet-4-20250514-v1:0")
    with pytest.warns(cf.UnknownPricesWarning, match="cache_prices") as warned:
        c = cf.Compactor(provider="anthropic", model=bedrock, budget=50_000, cache_aware=True)
    assert c.clear_at_least == 0
    # (Only the Compactor's own option is advised: `prices=` is prices_for's, not the Compactor's.)
    assert "prices=Prices" not in str(warned[0].message).replace("cache_prices=Prices", "")
    # The caller's prices (or a table row for the id) make it priced like any model.
    mine = Prices(3.00, 0.30, 3.75, 15.00)
    assert prices_for(bedrock, {bedrock: mine}) is mine
    priced = cf.Compactor(provider="anthropic", model=bedrock, budget=50_000, cache_aware=True, cache_prices=mine)
    assert priced.clear_at_least == CachePolicy(mine).clear_at_least(50_000) > 50_000


def _grown_to(tokens: int, provider: str, model: str) -> list[dict]:
    h: list[dict] = [{"role": "user", "content": "task"}]
    while cf.estimate(h, provider=provider, model=model) < tokens:
        h.append({"role": "assistant", "content": "ok"})
        h.append({"role": "user", "content": "observation " * 1000})
    return h


@pytest.mark.parametrize(("model", "provider"), [("gpt-4o", "openai"), ("claude-sonnet-4-5", "anthropic"),
                                                  ("gpt-5", "openai")])
def test_with_the_default_trigger_a_warm_cache_defers_between_the_cold_trigger_and_the_nearly_full_line(
        model: str, provider: str) -> None:
    # The default trigger sits at or above 95% of the usable window, so the gate used to fire
    # warm or cold alike (gpt-4o: trigger 96,000, nearly-full line 91,200).
    def gate(tokens: int) -> tuple[bool, bool]:
        c = cf.Compactor(provider=provider, model=model, cache_aware=True)
        assert c._cache is not None
        clock = Clock()
        c._cache.clock = clock
        h = _grown_to(tokens, provider, model)
        cold = c.should_compact(h)
        clock.now += 30
        return cold, c.should_compact(h)

    c = cf.Compactor(provider=provider, model=model, cache_aware=True)
    usable = c.session.usable_tokens
    line = int(usable * 0.95)
    early = CachePolicy.cold_trigger(c.session.trigger_tokens, usable)
    assert early < line <= c.session.trigger_tokens
    assert gate(early + (line - early) // 3) == (True, False)  # cold compacts, warm waits
    assert gate(line + 2_000) == (True, True)  # nearly full: compact even when warm


def test_a_messages_trigger_also_defers_while_warm() -> None:
    h = [{"role": "user", "content": "task"}] + [{"role": r, "content": "word " * 300} for r in ["assistant", "user"] * 10]
    c = cf.Compactor(model="gpt-4o", trigger=("messages", 5), cache_aware=True)
    assert c._cache is not None
    clock = Clock()
    c._cache.clock = clock
    assert c.should_compact(h)
    clock.now += 10
    assert not c.should_compact(h)  # was True: the messages trigger skipped the cache


def test_a_backed_off_gate_still_notes_each_request_as_warming_the_cache() -> None:
    h = _history()
    c = cf.Compactor(model="gpt-4o", trigger=1000, cache_aware=True)
    assert c._cache is not None
    clock = Clock()
    c._cache.clock = clock
    assert c.should_compact(h)
    from contextfold.conversation_key import conversation_key

    c._backoffs[conversation_key(h)] = c.session.estimate(h) + 10**6  # what a skipped compaction leaves
    for _ in range(20):  # a request a minute: the cache stays warm
        clock.now += 60
        assert not c.should_compact(h)
    c._backoffs.clear()
    clock.now += 60
    assert not c.should_compact(h)  # was True: the back-off calls were not noted

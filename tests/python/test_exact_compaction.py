"""``Compactor(exact=True)``: the budget holds by the model's own tokenizer, on real
conversations (the bundled probe conversations, so the test runs without ../shared/data)."""

from __future__ import annotations

from pathlib import Path

import pytest

import contextfold as cf
from contextfold import evaluation as ev

INLINE = sorted((Path(__file__).parent.parent / "data" / "probes").glob("*.inline.json"))
MODEL = "gpt-4o"


def _budgets(f: ev.Fixture) -> list[int]:
    """The naive cut's budget (head + the last 30% of the messages) and 0.75x / 1.5x of it, in
    estimated tokens, as ``contextfold eval`` sets them."""
    naive = cf.estimate(ev.naive_cut(f.messages), provider="openai", model=MODEL, tools=f.tools)
    return [int(naive * m) for m in (0.75, 1.0, 1.5)]


def test_an_exact_compaction_is_within_its_budget_by_the_models_own_count() -> None:
    """Planned in estimated tokens at the history's exact-to-estimate ratio, checked by the exact
    count: ``tokens_before`` / ``tokens_after`` are ``cf.count`` of the history and the result,
    the result within the budget. (Planned by the estimate alone, 13 of the 23 compactions
    these conversations make at these budgets are over the budget by the exact count: a
    summary's dense lines of paths and code are estimated a few percent low.)"""
    fixtures = ev.load_fixtures(INLINE)
    compacted = 0
    for f in fixtures:
        for budget in _budgets(f):
            try:
                r = cf.Compactor(model=MODEL, budget=budget, tools=f.tools, min_free_share=0.0,
                                 exact=True).compact(f.messages)
            except cf.CompactionBudgetError:
                continue
            assert r.tokens_before == cf.count(f.messages, model=MODEL, tools=f.tools)
            assert r.tokens_after == cf.count(list(r.messages), model=MODEL, tools=f.tools)
            assert r.tokens_after <= budget, (f.name, budget, r.tokens_after, r.notes)
            compacted += r.strategy_used is not None
    assert compacted >= 12


def test_an_exact_compaction_of_a_history_under_its_budget_leaves_it() -> None:
    f = ev.load_fixtures(INLINE)[0]
    counted = cf.count(f.messages, model=MODEL, tools=f.tools)
    r = cf.Compactor(model=MODEL, budget=counted, tools=f.tools, exact=True).compact(f.messages)
    assert r.strategy_used is None and r.tokens_before == r.tokens_after == counted
    assert r.reason is not None and "exact count" in r.reason


def test_exact_needs_an_openai_model_with_a_public_tokenizer() -> None:
    with pytest.raises(ValueError, match="provider='openai'"):
        cf.Compactor(provider="anthropic", model="claude-sonnet-4-5", budget=1_000, exact=True)
    with pytest.raises(ValueError, match="needs model="):
        cf.Compactor(budget=1_000, exact=True)
    with pytest.raises(ValueError, match="system prompt in the messages"):
        cf.Compactor(model=MODEL, budget=1_000, system="Be brief.", exact=True)
    with pytest.raises(cf.UnknownModelError):
        cf.Compactor(model="my-own-model", budget=1_000, exact=True)
    with pytest.raises(TypeError, match="exact must be a bool"):
        cf.Compactor(model=MODEL, budget=1_000, exact="yes")  # type: ignore[arg-type]
    responses = [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi " * 400}]},
                 {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "ok " * 400}]},
                 {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "go on"}]}]
    with pytest.raises(ValueError, match="chat.completions histories"):
        cf.Compactor(model=MODEL, budget=300, exact=True).compact(responses)


PIXEL = ("data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhg"
         "GAWjR9awAAAABJRU5ErkJggg==")


@pytest.mark.parametrize("odd", [
    {"role": "user", "content": [{"type": "text", "text": "look"}, {"type": "image_url", "image_url": {"url": PIXEL}}]},
    {"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{not json"}}]},
    {"role": "assistant", "content": None},
    {"role": "wizard", "content": "hi"},
])
def test_an_exact_compaction_of_an_odd_history_is_within_its_budget(odd: dict) -> None:
    """An image, arguments that are not JSON, no content, an unknown role: counted and compacted
    as the estimate would compact them, within the budget by the exact count."""
    history = [{"role": "system", "content": "rules"}, {"role": "user", "content": "task " * 50}, odd]
    if odd.get("tool_calls"):
        history.append({"role": "tool", "tool_call_id": "c1", "content": "ok"})
    history += [{"role": "assistant", "content": "x " * 300}, {"role": "user", "content": "y " * 300}] * 6
    r = cf.Compactor(model=MODEL, budget=600, exact=True, min_free_share=0.0).compact(history)
    assert r.strategy_used is not None
    assert r.tokens_after == cf.count(list(r.messages), model=MODEL) <= 600


def test_exact_with_a_model_without_a_public_tokenizer_says_what_the_compactor_needs():
    """The core's advice for an unknown model (pass an encoding to count_text) is no option of a
    Compactor: the error says to name an OpenAI model or leave exact off."""
    with pytest.raises(cf.UnknownModelError) as e:
        cf.Compactor(model="gpt-unknown-9", budget=5_000, exact=True)
    assert "exact=True" in str(e.value) and "count_text" not in str(e.value)

"""`Session(exact=True)`: the exact count of every turn, counting only what was appended."""

from __future__ import annotations

import pytest

import contextfold as cf
from transcripts import LOCAL, SHARED, load_conversations, load_requests, shared_available

ROOT = SHARED if shared_available() else LOCAL


def test_every_turn_of_the_recorded_dialogues_equals_count() -> None:
    turns = 0
    for conv in load_conversations(ROOT, "tau-bench-airline")[:40]:
        ms, tools = conv["messages"], conv.get("tools")
        s = cf.Session(model="gpt-4o", tools=tools, exact=True)
        for k in range(1, len(ms) + 1):
            assert s.estimate(ms[:k]) == cf.count(ms[:k], model="gpt-4o", tools=tools), k
            turns += 1
    assert turns >= 10


def test_every_recorded_openai_request_equals_count() -> None:
    checked = 0
    for r in load_requests(ROOT):
        if r.api != "chat.completions" or r.provider not in ("openai", "azure") or r.has_image:
            continue
        try:
            cf.encoding_for(r.model)
        except cf.UnknownModelError:
            continue
        rf = r.options.get("response_format")
        s = cf.Session(model=r.model, tools=r.tools, response_format=rf, exact=True)
        for k in (len(r.messages) // 2, len(r.messages)):
            assert s.estimate(r.messages[:k]) == cf.count(r.messages[:k], model=r.model, tools=r.tools,
                                                          response_format=rf), r.source
        checked += 1
    assert checked >= 5


def test_a_replaced_earlier_message_is_recounted() -> None:
    ms = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hello there"},
          {"role": "assistant", "content": "hi"}]
    s = cf.Session(model="gpt-4o", exact=True)
    assert s.estimate(ms) == cf.count(ms, model="gpt-4o")
    ms[1] = {"role": "user", "content": "a much longer greeting than before, with more words in it"}
    assert s.estimate(ms) == cf.count(ms, model="gpt-4o")
    s.invalidate(0)
    assert s.estimate(ms[:2]) == cf.count(ms[:2], model="gpt-4o")


def test_exact_needs_an_openai_model_and_the_system_prompt_in_the_messages() -> None:
    with pytest.raises(cf.UnknownModelError):
        cf.Session(model="claude-sonnet-4-5", exact=True)
    with pytest.raises(ValueError, match="system"):
        cf.Session(model="gpt-4o", system="Be brief.", exact=True)
    with pytest.raises(ValueError, match="model"):
        cf.Session(exact=True)


@pytest.mark.parametrize("new", ["claude-sonnet-4-5", None])
def test_a_refused_model_switch_leaves_the_exact_session_on_its_old_model(new: str | None) -> None:
    h = [{"role": "user", "content": "hello " * 50}]
    s = cf.Session(model="gpt-4", exact=True)
    assert s.estimate(h) == cf.count(h, model="gpt-4")
    with pytest.raises(ValueError):
        s.model = new
    # Was: .model showed the new name while estimates stayed gpt-4 counts.
    assert s.model == "gpt-4"
    assert s.estimate(h) == cf.count(h, model="gpt-4")
    s.model = "gpt-4o"  # a model with a public tokenizer still switches
    assert s.model == "gpt-4o" and s.estimate(h) == cf.count(h, model="gpt-4o")

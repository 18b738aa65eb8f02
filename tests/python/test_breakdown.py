"""`contextfold.breakdown`: the estimate split per message, by role and by kind, with its
assumptions listed; its total is the estimate's, on hand-made and real requests."""

from __future__ import annotations

import pickle

import pytest

import contextfold as cf
from transcripts import LOCAL, load_conversations, load_requests, system_text

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Weather of a city",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
        },
    }
]

HISTORY = [
    {"role": "system", "content": "You are helpful."},
    {"role": "user", "content": [
        {"type": "text", "text": "What's the weather where this photo was taken?"},
        {"type": "image_url", "image_url": {"url": "https://example.com/photo.jpg"}},
    ]},
    {"role": "assistant", "content": None, "tool_calls": [{"id": "call_1", "type": "function",
        "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}]},
    {"role": "tool", "tool_call_id": "call_1", "content": "15°C, sunny, light wind from the west"},
    {"role": "assistant", "content": "It is 15°C and sunny in Paris.", "reasoning_content": "The tool said so."},
]


def test_totals_match_estimate_and_sum_by_role_and_by_kind():
    b = cf.breakdown(HISTORY, provider="openai", model="gpt-4o", tools=TOOLS, system="Be brief.")
    assert b.total == cf.estimate(HISTORY, provider="openai", model="gpt-4o", tools=TOOLS, system="Be brief.")
    assert sum(b.by_kind.values()) == b.total
    assert sum(b.by_role.values()) == b.total
    assert [m.tokens for m in b.per_message] == cf.estimate_each(HISTORY, provider="openai", model="gpt-4o")
    assert sum(b.request_overhead.values()) == cf.request_overhead(provider="openai", model="gpt-4o", tools=TOOLS, system="Be brief.")
    for m in b.per_message:
        assert sum(m.by_kind.values()) == m.tokens


def test_each_kind_goes_where_it_belongs():
    b = cf.breakdown(HISTORY, provider="openai", model="gpt-4o", tools=TOOLS)
    per = b.per_message
    assert set(per[1].by_kind) == {"text", "images", "overhead"}
    assert set(per[2].by_kind) == {"tool_calls", "overhead"}
    assert set(per[3].by_kind) == {"tool_outputs", "overhead"}
    assert per[4].by_kind["reasoning"] > 0 and per[4].by_kind["text"] > 0
    assert b.by_kind["tool_schemas"] > 0
    assert b.by_role["request"] == b.request_overhead["tool_schemas"] + b.request_overhead["overhead"]
    assert [m.role for m in per] == ["system", "user", "assistant", "tool", "assistant"]


def test_remote_image_is_listed_as_an_assumption_with_its_price():
    b = cf.breakdown(HISTORY, provider="openai", model="gpt-4o")
    (u,) = b.unmeasured
    assert (u.index, u.kind) == (1, "image")
    assert u.assumed_tokens == b.per_message[1].by_kind["images"]
    assert "URL" in u.reason


def test_a_readable_image_is_not_an_assumption():
    png = "data:image/png;base64," + "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
    msgs = [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": png}}]}]
    b = cf.breakdown(msgs, model="gpt-4o")
    assert b.unmeasured == ()
    assert b.by_kind["images"] > 0


def test_bad_message_names_index_and_field():
    with pytest.raises(cf.InvalidMessageError) as e:
        cf.breakdown([{"role": "user", "content": "ok"}, {"role": "user", "content": 3}])
    assert e.value.index == 1 and e.value.field == "content"


def test_result_is_frozen_and_picklable():
    b = cf.breakdown(HISTORY)
    with pytest.raises(AttributeError):
        b.total = 1  # type: ignore[misc]
    assert pickle.loads(pickle.dumps(b)) == b
    assert b.to_dict()["total"] == b.total


def test_total_equals_estimate_on_every_recorded_request():
    """Real requests in every wire format (OpenAI, Responses, Anthropic, Gemini, Bedrock)."""
    requests = load_requests(LOCAL, with_usage=False)
    assert len(requests) > 50
    checked = 0
    for r in requests:
        tools = r.tools if isinstance(r.tools, list) and r.tools and isinstance(r.tools[0], dict) and "functionDeclarations" not in r.tools[0] else None
        kw = dict(provider=r.profile, model=r.model, tools=tools, system=system_text(r.system))
        try:
            est = cf.estimate(r.messages, **kw)
        except (cf.InvalidMessageError, TypeError):
            continue
        b = cf.breakdown(r.messages, **kw)
        assert b.total == est, r.source
        assert sum(b.by_kind.values()) == est and sum(b.by_role.values()) == est, r.source
        checked += 1
    assert checked > 50


def test_real_trajectories_split_into_text_and_tool_outputs():
    for name, provider in [("tau-bench-airline", "openai"), ("mini-swe-agent-gemini3", "gemini")]:
        convs = load_conversations(LOCAL, name)
        assert convs, name
        for c in convs:
            b = cf.breakdown(c["messages"], provider=provider, tools=c.get("tools"))
            assert b.total == cf.estimate(c["messages"], provider=provider, tools=c.get("tools"))
        if name == "tau-bench-airline":
            assert b.by_kind["tool_calls"] > 0 and b.by_kind["tool_outputs"] > 0 and b.by_kind["tool_schemas"] > 0


def test_an_earlier_turns_dropped_thinking_is_no_reasoning_share():
    # Claude Sonnet 4.5's Messages API drops the thinking of a turn that ended in its reply: the
    # estimate prices it at nothing, and the breakdown neither lists it as reasoning nor takes
    # its price off the message's envelope (the shares came out as reasoning 4 of a 27-token
    # total, the overhead negative before it was apportioned). A model that keeps it lists it.
    thought = {"type": "thinking", "thinking": "Let me reason about this carefully. " * 50, "signature": "c2ln"}
    history = [{"role": "user", "content": "What is 2+2?"},
               {"role": "assistant", "content": [thought, {"type": "text", "text": "4"}]},
               {"role": "user", "content": "And 3+3?"}]
    bare = [history[0], {"role": "assistant", "content": [{"type": "text", "text": "4"}]}, history[2]]
    drops = cf.breakdown(history, provider="anthropic", model="claude-sonnet-4-5")
    assert drops.total == cf.estimate(bare, provider="anthropic", model="claude-sonnet-4-5")
    assert drops.by_kind == cf.breakdown(bare, provider="anthropic", model="claude-sonnet-4-5").by_kind
    keeps = cf.breakdown(history, provider="anthropic", model="claude-opus-4-5")
    assert keeps.by_kind["reasoning"] > 300 and sum(keeps.by_kind.values()) == keeps.total

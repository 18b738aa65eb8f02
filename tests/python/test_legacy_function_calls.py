"""Legacy chat function calling (the ``functions`` parameter): an assistant message's call sits
at ``function_call`` (``{"name", "arguments"}``, no id) and its result is a ``function`` message
that names the function. Read so, each result pairs with its call (compaction never keeps one
without the other), the arguments are priced, the summary shows the calls with what they
returned, long arguments are shortened where they sit and stay JSON, and ``repair`` answers an
unanswered call in the same legacy shape."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

import contextfold as cf


def history(rounds: int = 12, users: bool = False) -> list[dict[str, Any]]:
    h: list[dict[str, Any]] = [{"role": "system", "content": "You look up the weather."},
                               {"role": "user", "content": "The weather in each city, one by one."}]
    for i in range(rounds):
        h.append({"role": "assistant", "content": None, "function_call": {
            "name": "get_weather", "arguments": json.dumps({"city": f"City{i}", "unit": "c"})}})
        h.append({"role": "function", "name": "get_weather",
                  "content": json.dumps({"city": f"City{i}", "temp": 10 + i, "station": f"ST{i:03d}",
                                         "detail": "reading " * 200})})
        if users:
            h.append({"role": "assistant", "content": f"City{i} is {10 + i}C."})
            h.append({"role": "user", "content": f"Next, city {i + 1}."})
    h.append({"role": "assistant", "content": "That was every city."})
    return h


def unpaired(messages: list[dict[str, Any]]) -> list[int]:
    """Indexes of a ``function`` message not right after its call, and of a call not right
    before its result."""
    out = []
    for k, m in enumerate(messages):
        call = m.get("function_call")
        if m.get("role") == "function":
            prev = messages[k - 1].get("function_call") if k else None
            if not prev or prev["name"] != m["name"]:
                out.append(k)
        if call and not (k + 1 < len(messages) and messages[k + 1].get("role") == "function"):
            out.append(k)
    return out


@pytest.mark.parametrize("users", [False, True])
def test_legacy_function_results_stay_with_their_calls(users: bool) -> None:
    h = history(users=users)
    before = copy.deepcopy(h)
    full = cf.estimate(h)
    for share in (0.15, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8):
        r = cf.Compactor(budget=int(full * share)).compact(h)
        assert unpaired(list(r.messages)) == [], share
        assert r.tokens_after <= int(full * share)
    assert h == before


def test_legacy_function_call_arguments_are_priced() -> None:
    args = json.dumps({"query": "weather " * 400})
    call = {"role": "assistant", "content": None, "function_call": {"name": "search", "arguments": args}}
    bare = {"role": "assistant", "content": None}
    # ~400 repetitions of a word: hundreds of tokens, where the call used to cost its role alone.
    assert cf.estimate([call]) - cf.estimate([bare]) > 300


def test_the_summary_shows_legacy_calls_with_their_results() -> None:
    h = history()
    r = cf.Compactor(budget=int(cf.estimate(h) * 0.3)).compact(h)
    summary = next(m["content"] for m in r.messages if "contextfold:summary" in (m.get("content") or ""))
    assert "get_weather(city=City0" in summary
    assert "ST000" in summary


def test_long_legacy_arguments_are_shortened_in_place_and_stay_json() -> None:
    args = json.dumps({"path": "/src/app.py", "content": "x = 1\n" * 5000, "mode": "w"})
    msgs = [{"role": "system", "content": "s"},
            {"role": "assistant", "content": None, "function_call": {"name": "write_file", "arguments": args}},
            {"role": "function", "name": "write_file", "content": "ok"},
            {"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}, {"role": "user", "content": "c"}]
    before = copy.deepcopy(msgs)
    out = cf.prune(msgs, protect_tail_tokens=5, arguments_max_chars=500)
    new = out[1]["function_call"]["arguments"]
    assert len(new) <= 500 and isinstance(json.loads(new), dict)
    assert "tool_calls" not in out[1]
    assert msgs == before


def test_repair_answers_a_legacy_call_with_a_function_message() -> None:
    h = history(rounds=3)[:-2] + [{"role": "user", "content": "Stop there."}]
    r = cf.repair(h, provider="openai")
    stand_in = r.messages[-2]
    assert stand_in["role"] == "function" and stand_in["name"] == "get_weather"
    assert "tool_call_id" not in stand_in
    assert unpaired(list(r.messages)) == []
    assert len(r.changes) == 1


def test_sdk_accepts_the_compacted_legacy_messages() -> None:
    openai_types = pytest.importorskip("openai.types.chat")
    from pydantic import TypeAdapter

    adapter = TypeAdapter(list[openai_types.ChatCompletionMessageParam])
    h = history(users=True)
    for share in (0.2, 0.5):
        r = cf.Compactor(budget=int(cf.estimate(h) * share)).compact(h)
        adapter.validate_python(list(r.messages))

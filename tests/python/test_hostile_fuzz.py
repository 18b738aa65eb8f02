"""Damaged histories found by fuzzing the public API with real dialogues: each case once raised
an error that named no message (a bare KeyError, an internal error) or returned an invalid
history."""

from __future__ import annotations

import copy

import contextfold as cf

# A Bedrock turn answered by a Gemini-keyed part written under `content` (a history damaged by
# a converter that mixed the two formats).
BEDROCK_CALL = {"role": "assistant", "content": [
    {"toolUse": {"toolUseId": "call_1", "name": "search_direct_flight",
                 "input": {"origin": "JFK", "destination": "SFO", "date": "2024-05-24"}}}]}
GEMINI_PART_IN_CONTENT = {"role": "user", "content": [{"functionCall": {}}]}


def test_a_gemini_part_in_a_content_list_is_repaired_without_a_key_error() -> None:
    history = [{"role": "user", "content": [{"text": "find a flight"}]}, BEDROCK_CALL,
               GEMINI_PART_IN_CONTENT]
    before = copy.deepcopy(history)
    out = cf.repair(history, provider="anthropic")
    assert history == before
    assert len(out.changes) == 1 and "call_1" in out.changes[0]
    # The stand-in result is written in the history's own format, into the `content` list.
    answer = out.messages[2]["content"]
    assert answer[0]["toolResult"]["toolUseId"] == "call_1"
    assert answer[1] == {"functionCall": {}}


def test_a_gemini_part_in_a_content_list_is_compacted_with_repair() -> None:
    history = [{"role": "user", "content": [{"text": "find a flight " * 40}]}, BEDROCK_CALL,
               GEMINI_PART_IN_CONTENT] * 6
    before = copy.deepcopy(history)
    r = cf.Compactor(provider="anthropic", budget=1000, repair=True).compact(history)
    assert history == before
    assert r.strategy_used == "summarize" and r.tokens_after <= 1000

"""Damaged histories found by fuzzing the public API with real dialogues: each case once raised
an error that named no message (a bare KeyError, an internal error) or returned an invalid
history."""

from __future__ import annotations

import copy
import json

import pytest

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


def test_repair_of_langchain_messages_adds_a_tool_message_not_a_dict() -> None:
    lc = pytest.importorskip("langchain_core.messages")
    history = [lc.HumanMessage("cancel my flight"),
               lc.AIMessage("", tool_calls=[{"id": "call_1", "name": "cancel_reservation", "args": {"reservation_id": "1N99U6"}}]),
               lc.HumanMessage("are you there?"), lc.AIMessage("yes")]
    out = cf.repair(history)
    assert len(out.changes) == 1
    stand_in = out.messages[2]
    assert isinstance(stand_in, lc.ToolMessage) and stand_in.tool_call_id == "call_1"
    assert all(isinstance(m, lc.BaseMessage) for m in out.messages)


def test_compacting_langchain_messages_with_repair_keeps_every_message_a_langchain_message() -> None:
    lc = pytest.importorskip("langchain_core.messages")
    turns: list = [lc.SystemMessage("You are an airline agent."), lc.HumanMessage("find a flight " * 30)]
    for i in range(12):
        turns += [lc.AIMessage("", tool_calls=[{"id": f"c{i}", "name": "search", "args": {"i": i}}]),
                  lc.ToolMessage("no flights " * 40, tool_call_id=f"c{i}"), lc.AIMessage("nothing yet"),
                  lc.HumanMessage("try again")]
    # The run stopped while the last call was running: no result.
    turns += [lc.AIMessage("", tool_calls=[{"id": "last", "name": "search", "args": {}}]), lc.HumanMessage("hello?")]
    r = cf.Compactor(budget=1500, repair=True).compact(turns)
    assert r.strategy_used == "summarize" and r.tokens_after <= 1500
    assert all(isinstance(m, lc.BaseMessage) for m in r.messages)
    answered = [m for m in r.messages if isinstance(m, lc.ToolMessage) and m.tool_call_id == "last"]
    assert len(answered) == 1


@pytest.mark.parametrize("threads", [-(2**70), -(2**63) - 1])
@pytest.mark.parametrize("fn", ["estimate_many", "count_many"])
def test_a_thread_count_below_the_int64_range_is_a_value_error_naming_threads(fn: str, threads: int) -> None:
    histories = [[{"role": "user", "content": "hi"}]]
    kw = {"model": "gpt-4o"} if fn == "count_many" else {}
    with pytest.raises(ValueError, match="threads must be at least 1"):
        getattr(cf, fn)(histories, threads=threads, **kw)


@pytest.mark.parametrize(("fmt", "n", "recoverable"), [("chat", 13, True), ("chat", 13, False), ("responses", 13, True),
                                                      ("anthropic", 22, False), ("anthropic", 22, True)])
def test_the_last_step_before_raising_never_folds_a_call_still_awaiting_its_result(fmt: str, n: int,
                                                                                  recoverable: bool) -> None:
    """A history compacted while its last tool call runs (the caller appends the result next):
    at a budget where only the last user turn and that call fit beside the head, the call
    stays; folded, its result would answer a call the history no longer has."""
    from compaction_shapes import convert
    from transcripts import LOCAL, load_conversations

    dialogue = load_conversations(LOCAL, "tau-bench-airline")[0]["messages"]
    history, system = convert(copy.deepcopy(dialogue), fmt)
    history = history[:n]  # ends with the assistant's call
    assert "call_" in json.dumps(history[-1]) and "result" not in json.dumps(history[-1])
    call_id = "call_" + json.dumps(history[-1]).split('"call_', 1)[1].split('"', 1)[0]
    kw = {"budget": 1500, "recoverable": recoverable, "system": system,
          "provider": "anthropic" if fmt == "anthropic" else "openai"}
    r = cf.Compactor(**kw).compact(history)
    assert r.changed and len(history) - 1 not in r.removed
    assert call_id in json.dumps(r.messages[-1])
    # The caller's next turn: the result appended to the compacted history compacts cleanly.
    result = {"chat": {"role": "tool", "tool_call_id": call_id, "content": "[]"},
              "responses": {"type": "function_call_output", "call_id": call_id, "output": "[]"},
              "anthropic": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call_id, "content": "[]"}]}}
    cf.Compactor(**kw).compact([*r.messages, result[fmt]])


def test_a_compacted_responses_history_with_a_plain_tail_stays_a_responses_history() -> None:
    """A Responses history compacted recoverably whose kept tail is plain text: the summary item
    (`{"type": "message", ...}`) says Responses, so the next turn's compaction returns the
    recall tool in Responses' flat shape (chat's nested one is rejected by the Responses API)
    and the compacted history, compacted again as it is, stays as it is."""
    from compaction_shapes import convert
    from transcripts import LOCAL, load_conversations

    dialogue = load_conversations(LOCAL, "tau-bench-airline")[0]["messages"]
    history, _ = convert(copy.deepcopy(dialogue), "responses")
    assert cf.detect_wire_format(history) == "responses"  # its function_call items say so
    first = cf.Compactor(budget=1500, recoverable=True).compact(history)
    assert first.changed and first.tools is not None and "name" in first.tools[-1]
    assert cf.detect_wire_format(first.messages) == "responses"
    again = cf.Compactor(budget=1500, recoverable=True).compact(first.messages)
    assert not again.changed and again.tokens_before == first.tokens_after
    # (At 1,600: the grown history, the recall tool's declaration beside it, fits. At 1,500 its
    # floor with the tool would not: the tool is then left out, and so is its shape.)
    grown = cf.Compactor(budget=1600, recoverable=True).compact(
        [*first.messages, {"role": "user", "content": "and what about my return flight? " * 2}])
    assert grown.tools is not None and grown.tools[-1]["name"] == "contextfold_recall"
    assert "function" not in grown.tools[-1]


def test_an_anthropic_response_dumped_whole_into_a_plain_history_stays_anthropic() -> None:
    """Anthropic's response objects are typed "message" too: with provider="anthropic" such a
    dump in a plain-text history does not make it a Responses history."""
    dumped = {"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
              "content": [{"type": "text", "text": "Your flight is booked."}], "stop_reason": "end_turn",
              "usage": {"input_tokens": 10, "output_tokens": 5}}
    history = [{"role": "user", "content": "book it"}, dumped, {"role": "user", "content": "thanks"}]
    assert cf.detect_wire_format(history, "anthropic") == "anthropic"
    assert cf.detect_wire_format(history, "openai") == "responses"


def test_a_plain_turn_in_a_gemini_history_takes_the_merged_summary_without_a_key_error() -> None:
    # A Gemini-keyed first turn makes the history Gemini; the summary is merged into a later
    # plain chat-keyed turn, whose content is under `content`, not `parts` (found by
    # hypothesis in test_reliability_props: a bare KeyError('parts') out of compact).
    history = [{"role": "user", "parts": []}, {"role": "system", "content": ""},
               {"role": "assistant", "content": None, "tool_calls": []}, {"role": "system", "content": ""},
               {"role": "system", "content": "0" * 100}, {"role": "assistant", "content": []}]
    before = copy.deepcopy(history)
    r = cf.Compactor(model="gpt-4o", budget=60, tail_tokens=30, strategy="hybrid").compact(history)
    assert history == before
    merged = [m for m in r.messages if "<contextfold:summary>" in json.dumps(m)]
    assert len(merged) == 1 and merged[0]["role"] == "assistant"
    assert merged[0]["content"][0]["text"].startswith("<contextfold:summary>")
    assert r.tokens_after <= 60


def test_a_block_that_is_no_container_where_repair_must_edit_names_its_message_and_field() -> None:
    # Found by fuzzing: a bare object where Bedrock's `toolUse` record belongs, in a history
    # whose repeated call ids repair makes unique. Copying it for the edit raised a bare
    # TypeError from `vars()` that named no message.
    history = [{"role": "user", "content": [{"text": "cancel reservation NQNU5R " * 20}]},
               {"role": "assistant", "content": [{"toolUse": object()}]},
               {"role": "user", "content": [{"text": "are you there?"}]}] * 20
    with pytest.raises(cf.InvalidMessageError) as e:
        cf.Compactor(provider="anthropic", budget=400, repair=True).compact(history)
    assert e.value.index % 3 == 1 and e.value.field == "content[0].toolUse"
    assert isinstance(e.value.__cause__, TypeError)


def test_a_list_where_repair_must_set_a_call_id_names_its_message_and_field() -> None:
    # Found by fuzzing: an empty list as a Bedrock `toolUse` record, whose id repair must write
    # (the call reads as one without an id, repeated). Setting a key on the list raised a bare
    # TypeError that named no message.
    history = [{"role": "user", "content": [{"text": "cancel reservation NQNU5R"}]},
               {"role": "assistant", "content": [{"toolUse": []}]},
               {"role": "user", "content": [{"text": "are you there?"}]}] * 3
    with pytest.raises(cf.InvalidMessageError) as e:
        cf.repair(history, provider="anthropic")
    assert e.value.index % 3 == 1 and e.value.field == "content[0].toolUse.toolUseId"
    assert isinstance(e.value.__cause__, TypeError)

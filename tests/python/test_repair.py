"""Repair of broken histories on all five formats: hand-made cases, then random damage to real
histories (calls and results lost, ids duplicated), repair, compact: every format's checks
(the independent ``shape_problems`` and the core's verification) accept the result."""

from __future__ import annotations

import copy
import json
import pickle
import random
from typing import Any

import pytest

import contextfold as cf
from compaction_shapes import FORMATS, PROVIDER, convert, shape_problems
from test_compactor import agent_history
from transcripts import LOCAL, SHARED, load_conversations, load_requests, shared_available



def blocks(m: dict[str, Any]) -> list[Any] | None:
    c = m.get("parts", m.get("content"))
    return c if isinstance(c, list) else None


def id_slots(m: dict[str, Any]) -> tuple[list[tuple[dict[str, Any], str]], list[tuple[dict[str, Any], str]]]:
    """Where a message keeps its calls' ids and its results' ids: (container, key) pairs."""
    calls: list[tuple[dict[str, Any], str]] = [(c, "id") for c in m.get("tool_calls") or []]
    results: list[tuple[dict[str, Any], str]] = [(m, "tool_call_id")] if m.get("tool_call_id") else []
    if m.get("type") == "function_call":
        calls.append((m, "call_id"))
    if m.get("type") == "function_call_output":
        results.append((m, "call_id"))
    for b in blocks(m) or []:
        if not isinstance(b, dict):
            continue
        if b.get("type") == "tool_use":
            calls.append((b, "id"))
        if b.get("type") == "tool_result":
            results.append((b, "tool_use_id"))
        if "toolUse" in b:
            calls.append((b["toolUse"], "toolUseId"))
        if "toolResult" in b:
            results.append((b["toolResult"], "toolUseId"))
        if "functionCall" in b and "id" in b["functionCall"]:
            calls.append((b["functionCall"], "id"))
        if "functionResponse" in b and "id" in b["functionResponse"]:
            results.append((b["functionResponse"], "id"))
    return calls, results


def is_call_block(b: Any) -> bool:
    return isinstance(b, dict) and (b.get("type") == "tool_use" or "toolUse" in b or "functionCall" in b)


def is_result_block(b: Any) -> bool:
    return isinstance(b, dict) and (b.get("type") == "tool_result" or "toolResult" in b or "functionResponse" in b)


def lost(fmt: str) -> list[dict[str, Any]]:
    return [{"type": "text", "text": "(lost)"}] if fmt == "anthropic" else [{"text": "(lost)"}]


def damage(msgs: list[dict[str, Any]], fmt: str, rng: random.Random) -> tuple[list[dict[str, Any]], str]:
    """One random damage: a result lost, a call lost, or a later call (and its result) given an
    earlier call's id. The last three messages are spared (the pending turn is another test)."""
    msgs = copy.deepcopy(msgs)
    body = range(1, max(1, len(msgs) - 3))
    kind = rng.choice(["drop_result", "drop_call", "duplicate"])
    if kind == "duplicate":
        pairs = [(i, c) for i in body for c in id_slots(msgs[i])[0]]
        if len(pairs) >= 2:
            (_, first), (j, later) = sorted(rng.sample(pairs, 2), key=lambda p: p[0])
            old, new = later[0][later[1]], first[0][first[1]]
            later[0][later[1]] = new
            for k in range(j, len(msgs)):
                for box, key in id_slots(msgs[k])[1]:
                    if box[key] == old:
                        box[key] = new
        return msgs, kind
    want = is_result_block if kind == "drop_result" else is_call_block
    spots = [i for i in body if (id_slots(msgs[i])[1] if kind == "drop_result" else id_slots(msgs[i])[0])]
    if not spots:
        return msgs, kind
    i = rng.choice(spots)
    m = msgs[i]
    if m.get("role") == "tool" or m.get("type") in ("function_call", "function_call_output"):
        del msgs[i]
    elif m.get("tool_calls"):
        m["tool_calls"].pop(rng.randrange(len(m["tool_calls"])))
        if not m["tool_calls"]:
            del m["tool_calls"]
            m["content"] = m.get("content") or "(lost)"
    else:
        key = "parts" if "parts" in m else "content"
        idx = [k for k, b in enumerate(m[key]) if want(b)]
        m[key].pop(rng.choice(idx))
        if not m[key]:
            m[key] = lost(fmt)
    return msgs, kind


def accepted(messages: list[Any], fmt: str, system: Any) -> list[str]:
    problems = shape_problems(messages, fmt)
    _, failures = cf._core.compaction_verify(messages, cf._core.PricedRequest(format=fmt, provider=PROVIDER[fmt], system=system))
    return problems + [d for k, _, d in failures if k != "over_budget"]


# -- hand-made cases ------------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_lost_result_gets_an_interrupted_stand_in_on_every_format(fmt):
    msgs, system = convert(agent_history(4), fmt)
    # Lose the first result.
    broken = copy.deepcopy(msgs)
    k = next(i for i, m in enumerate(broken) if id_slots(m)[1])
    m = broken[k]
    if m.get("role") == "tool" or m.get("type") == "function_call_output":
        del broken[k]
    else:
        key = "parts" if "parts" in m else "content"
        m[key] = [b for b in m[key] if not is_result_block(b)] or lost(fmt)
    assert accepted(broken, fmt, system), "the damage is real"
    snap = copy.deepcopy(broken)
    r = cf.repair(broken, provider=PROVIDER[fmt], wire_format=fmt)
    assert broken == snap, "the caller's history was altered"
    assert accepted(r.messages, fmt, system) == []
    assert len(r.changes) == 1 and "interrupted" in r.changes[0]
    assert "interrupted" in json.dumps(r.messages)
    # Untouched messages are the caller's own objects.
    assert r.messages[0] is broken[0]


def pending_history(fmt: str) -> tuple[list, object]:
    """An agent history in ``fmt`` ending on a turn whose tool call awaits its result, and its
    system prompt (for the formats that take it apart)."""
    chat = agent_history(30)[:-2]
    chat.append({"role": "user", "content": "Now run the tests."})
    chat.append({"role": "assistant", "content": None, "tool_calls": [
        {"id": "call_pending", "type": "function", "function": {"name": "run_tests", "arguments": "{}"}}]})
    return convert(chat, fmt)


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_pending_last_turn_is_left_as_it_is_and_never_folded(fmt):
    msgs, system = pending_history(fmt)
    r = cf.repair(msgs, provider=PROVIDER[fmt], wire_format=fmt)
    assert r.changes == ()
    assert all(a is b for a, b in zip(r.messages, msgs))
    c = cf.Compactor(provider=PROVIDER[fmt], budget=5_000, system=system, wire_format=fmt, repair=True)
    out = c.compact(msgs)
    assert out.changed
    assert out.messages[-1] is msgs[-1], "the pending call was folded or changed"
    assert "call_pending" in json.dumps(out.messages[-1]) and "interrupted" not in json.dumps(out.messages)


def test_compactor_repair_says_what_it_changed():
    msgs = agent_history(20)
    broken = [m for m in msgs if m.get("tool_call_id") != "call_3"]
    r = cf.Compactor(budget=5_000, repair=True).compact(broken)
    assert any("repaired the history first" in n and "call_3" in n for n in r.notes)
    assert shape_problems(r.messages, "chat") == []
    assert r.tokens_after <= r.budget
    # Without repair, the masked history would keep the unanswered call: refused, not returned.
    with pytest.raises(cf.CompactionError, match=r'message 8: tool call "call_3" has no result.*repair=True'):
        cf.Compactor(budget=5_000).compact(broken)


def lost_in_the_middle(fmt: str) -> tuple[list[dict[str, Any]], Any, str]:
    """An agent history of ``fmt`` that lost one result of a parallel pair in its middle, and
    the lost call's id."""
    chat: list[dict[str, Any]] = [{"role": "system", "content": "sys"}, {"role": "user", "content": "task"}]
    for t in range(8):
        chat.append({"role": "assistant", "content": None, "tool_calls": [
            {"id": f"c{t}{k}", "type": "function", "function": {"name": "read", "arguments": json.dumps({"k": k})}}
            for k in range(2)]})
        chat += [{"role": "tool", "tool_call_id": f"c{t}{k}", "content": f"data {t}{k} " * 400}
                 for k in (1, 0) if (t, k) != (6, 1)]
    chat.append({"role": "user", "content": "next"})
    msgs, system = convert(chat, fmt)
    return msgs, system, "c61"


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_compaction_that_would_return_a_broken_pair_raises_and_names_repair(fmt):
    msgs, system, lost_id = lost_in_the_middle(fmt)
    kw = dict(provider=PROVIDER[fmt], system=system, wire_format=fmt)
    budget = cf.estimate(msgs, provider=PROVIDER[fmt], system=system) // 2
    # Masking keeps every message: the unanswered call would come back.
    with pytest.raises(cf.CompactionError) as e:
        cf.Compactor(budget=budget, strategy="mask", **kw).compact(msgs)
    assert lost_id in str(e.value) and "repair=True" in str(e.value)
    assert [k for k, _, _ in e.value.failures] == ["orphan_call"] and e.value.failures[0][1] >= 0
    # It is bad input too (the hostile-input contract: an InvalidMessageError naming the message
    # of the caller's list and the field), and pickles whole.
    assert isinstance(e.value, cf.UnpairedToolCallsError) and isinstance(e.value, cf.InvalidMessageError)
    assert e.value.field == "tool_calls" and lost_id in json.dumps(msgs[e.value.index], default=str)
    back = pickle.loads(pickle.dumps(e.value))
    assert (type(back), back.index, back.field, back.failures) == (type(e.value), e.value.index, e.value.field,
                                                                   e.value.failures)
    # Repaired first, the same compaction is accepted.
    r = cf.Compactor(budget=budget, strategy="mask", repair=True, **kw).compact(msgs)
    assert accepted(r.messages, fmt, system) == []
    # A summary that folds the broken pair away returns a valid history, and no error.
    r = cf.Compactor(budget=budget // 2, strategy="summarize", min_tail=1, keep=500, **kw).compact(msgs)
    assert r.strategy_used == "summarize" and lost_id not in json.dumps(r.messages)
    assert accepted(r.messages, fmt, system) == []


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_pending_last_turn_without_repair_compacts_without_error(fmt):
    msgs, system = pending_history(fmt)
    for strategy in ("mask", "summarize"):
        out = cf.Compactor(provider=PROVIDER[fmt], budget=5_000, system=system, wire_format=fmt,
                           strategy=strategy).compact(msgs)
        assert out.changed and out.messages[-1] is msgs[-1]


def server_tool_history() -> list[dict[str, Any]]:
    """A valid Anthropic history: web search and MCP calls answered inside the assistant message
    that makes them, beside a client call answered by the next (user) message."""
    return [
        {"role": "user", "content": "What is the weather in Paris? Then read notes.txt"},
        {"role": "assistant", "content": [
            {"type": "server_tool_use", "id": "srvtoolu_01", "name": "web_search", "input": {"query": "weather Paris"}},
            {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_01", "content": [
                {"type": "web_search_result", "url": "https://weather.example/paris", "title": "Paris",
                 "encrypted_content": "EqgfCioIARgBIiQ3YTAwMjY1", "page_age": None}]},
            {"type": "mcp_tool_use", "id": "mcptoolu_01", "name": "lookup", "server_name": "kb", "input": {"q": "notes"}},
            {"type": "mcp_tool_result", "tool_use_id": "mcptoolu_01", "is_error": False,
             "content": [{"type": "text", "text": "notes.txt is in the repo root"}]},
            {"type": "text", "text": "It is sunny."},
            {"type": "tool_use", "id": "toolu_01", "name": "read_file", "input": {"path": "notes.txt"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_01", "content": "notes " * 600}]},
        {"role": "assistant", "content": "Done."},
        {"role": "user", "content": "Thanks, what next?"},
    ]


def test_server_tool_results_in_the_calling_message_are_left_as_they_are():
    h = server_tool_history()
    snap = copy.deepcopy(h)
    r = cf.repair(h, provider="anthropic")
    assert r.changes == () and all(a is b for a, b in zip(r.messages, h))
    assert accepted(h, "anthropic", None) == []
    # The compactor's repair and its own check agree: nothing dropped, no stand-in added.
    out = cf.Compactor(provider="anthropic", strategy="mask", budget=cf.estimate(h, provider="anthropic") // 2,
                       repair=True).compact(h)
    assert not any("repaired" in n for n in out.notes), out.notes
    assert out.messages[1] is h[1], "the server tool blocks were changed"
    assert '"tool_use_id": "srvtoolu_01"' not in json.dumps(out.messages[2])
    assert h == snap


def test_recorded_requests_with_server_tools_pass_repair_and_the_check_untouched():
    # Anthropic code execution, web search / fetch and MCP requests as pydantic-ai sent them:
    # each was accepted by the API, so none is broken.
    seen = 0
    for rq in load_requests(LOCAL, with_usage=False):
        text = json.dumps(rq.messages)
        if rq.api != "messages" or not ('"server_tool_use"' in text or '"mcp_tool_use"' in text):
            continue
        r = cf.repair(rq.messages, provider="anthropic", wire_format="anthropic")
        assert r.changes == (), (rq.source, r.changes)
        _, failures = cf._core.compaction_verify(
            rq.messages, cf._core.PricedRequest(format="anthropic", provider="anthropic", system=rq.system))
        assert failures == [], (rq.source, failures)
        seen += 1
    assert seen >= 5, seen


# -- property: random damage to real histories ---------------------------------------------------


def real_histories() -> list[dict[str, Any]]:
    root = SHARED if shared_available() else LOCAL
    out = []
    for name in ("tau-bench-airline", "mini-swe-agent-gemini3"):
        out += [c for c in load_conversations(root, name) if any(m.get("tool_calls") for m in c["messages"])][:8]
    return out


@pytest.mark.parametrize("fmt", FORMATS)
def test_random_damage_then_repair_then_compact_is_accepted_on_every_format(fmt):
    histories = real_histories()
    if not histories:
        pytest.skip("no real history with tool calls in the data at hand")
    rng = random.Random(21)
    checked = damaged = raised = 0
    for conv in histories:
        msgs, system = convert(conv["messages"], fmt)
        for _ in range(6):
            broken, kind = msgs, ""
            for _ in range(rng.randint(1, 3)):
                broken, kind = damage(broken, fmt, rng)
            snap = copy.deepcopy(broken)
            damaged += bool(accepted(broken, fmt, system))
            r = cf.repair(broken, provider=PROVIDER[fmt], wire_format=fmt)
            assert broken == snap
            assert accepted(r.messages, fmt, system) == [], (kind, r.changes)
            kw = dict(provider=PROVIDER[fmt], system=system, tools=conv.get("tools"))
            budget = max(2_000, cf.estimate(r.messages, **kw) // 2)
            try:
                out = cf.Compactor(budget=budget, wire_format=fmt, repair=True, **kw).compact(broken)
            except cf.CompactionBudgetError:
                raised += 1
                continue
            assert accepted(out.messages, fmt, system) == []
            checked += 1
    # 6 damaged copies of each history: most are damaged in a way the checker sees, and a good
    # share compact within half their size; the others raise, their floor over it (the 8 airline
    # histories with tool calls, the SWE runs having none: 39-42 damaged, 18-34 compacted and
    # checked, 14-30 raised, per format, of 48 copies).
    assert checked + raised == 6 * len(histories), (checked, raised)
    assert damaged >= 4 * len(histories) and checked >= 2 * len(histories), (damaged, checked, len(histories))


def malformed_history(fmt: str, *, bad_at: int, n: int = 10, empty_at: int | None = None) -> list[dict[str, Any]]:
    """An agent run reading files, ``n`` rounds of a 200-line output each; the call of round
    ``bad_at`` has arguments the model cut off (``{"path": "f.py"``, not valid JSON), the one of
    ``empty_at`` empty arguments. OpenAI chat or Responses items."""
    h: list[dict[str, Any]] = [{"role": "system", "content": "You read files."},
                               {"role": "user", "content": "Do the task please."}]
    for k in range(n):
        args = '{"path": "f.py"' if k == bad_at else "" if k == empty_at else json.dumps({"path": f"f{k}.py"})
        out = f"line of output {k}\n" * 200
        if fmt == "responses":
            h += [{"type": "function_call", "call_id": f"c{k}", "name": "read", "arguments": args},
                  {"type": "function_call_output", "call_id": f"c{k}", "output": out}]
        else:
            h += [{"role": "assistant", "content": None, "tool_calls": [
                      {"id": f"c{k}", "type": "function", "function": {"name": "read", "arguments": args}}]},
                  {"role": "tool", "tool_call_id": f"c{k}", "content": out}]
    h.append({"role": "user", "content": "and?"})
    return h


def arguments_of(msgs: list[Any]) -> list[str]:
    return [c["function"]["arguments"] for m in msgs for c in m.get("tool_calls") or []] + [
        m["arguments"] for m in msgs if m.get("type") == "function_call"]


@pytest.mark.parametrize("fmt", ["chat", "responses"])
def test_arguments_that_are_not_json_are_kept_as_a_string_under_invalid_json(fmt):
    """A model's call cut off mid-arguments, recorded as it came, makes every later request fail
    where the server parses past arguments (vLLM, SGLang, proxies: "arguments must be a valid
    JSON object string"). ``repair`` keeps the text as a JSON string under ``invalid_json`` and
    makes empty arguments ``{}``; the caller's list is left as it was."""
    msgs = malformed_history(fmt, bad_at=3, empty_at=5)
    snap = copy.deepcopy(msgs)
    r = cf.repair(msgs, wire_format=fmt)
    assert msgs == snap
    bad, empty = 2 + 2 * 3, 2 + 2 * 5
    assert r.changes == (
        f'message {bad}: arguments of call "c3" were not valid JSON (15 characters): kept as a string under '
        '"invalid_json"', f'message {empty}: arguments of call "c5" were empty: set to {{}}')
    parsed = [json.loads(a) for a in arguments_of(r.messages)]
    assert parsed[3] == {"invalid_json": '{"path": "f.py"'} and parsed[5] == {}
    assert parsed[4] == {"path": "f4.py"} and r.messages[bad + 2] is msgs[bad + 2]
    assert accepted(r.messages, fmt, None) == []


def test_a_custom_tool_s_free_text_input_is_no_json_to_repair():
    """A Responses custom tool's input is free text (an apply-patch body): neither the check nor
    ``repair`` reads it as JSON arguments."""
    msgs = [{"role": "user", "content": "patch it"},
            {"type": "custom_tool_call", "call_id": "p1", "name": "apply_patch", "input": "*** Begin Patch\n+x"},
            {"type": "custom_tool_call_output", "call_id": "p1", "output": "Done"},
            {"role": "user", "content": "thanks " * 400}]
    assert cf.repair(msgs, wire_format="responses").changes == ()
    r = cf.Compactor(budget=300, strategy="mask", wire_format="responses").compact(msgs)
    assert r.messages[1]["input"] == msgs[1]["input"]


@pytest.mark.parametrize("fmt", ["chat", "responses"])
def test_a_compaction_that_would_send_invalid_arguments_raises_and_names_repair(fmt):
    """Compacted without ``repair=True``, a history whose kept call has arguments that are not
    valid JSON raises ``InvalidArgumentsError`` naming the message of the caller's list (a
    ``CompactionError`` and an ``InvalidMessageError``), where it was returned as it came; with
    ``repair=True`` every argument sent is valid JSON; a summary that folds the call away is
    returned without error."""
    msgs = malformed_history(fmt, bad_at=9)
    bad = 2 + 2 * 9
    budget = cf.estimate(msgs) // 3
    for strategy in ("mask", "hybrid", "summarize"):
        with pytest.raises(cf.InvalidArgumentsError) as e:
            cf.Compactor(budget=budget, strategy=strategy, wire_format=fmt).compact(msgs)
        assert isinstance(e.value, cf.CompactionError) and isinstance(e.value, cf.InvalidMessageError)
        assert (e.value.index, e.value.field) == (bad, "arguments"), strategy
        assert str(e.value).startswith(f"message {bad}: ") and '"c9"' in str(e.value) and "repair=True" in str(e.value)
        assert [k for k, _, _ in e.value.failures] == ["invalid_arguments"]
        back = pickle.loads(pickle.dumps(e.value))
        assert (type(back), back.index, back.field) == (type(e.value), bad, "arguments")
        r = cf.Compactor(budget=budget, strategy=strategy, wire_format=fmt, repair=True).compact(msgs)
        assert r.tokens_after <= budget and accepted(r.messages, fmt, None) == []
        assert {"invalid_json": '{"path": "f.py"'} in [json.loads(a) for a in arguments_of(r.messages)]
        assert any("invalid_json" in n for n in r.notes)
    # Folded away with the middle, the cut call is no longer sent: no error.
    early = malformed_history(fmt, bad_at=2)
    r = cf.Compactor(budget=budget, strategy="summarize", wire_format=fmt).compact(early)
    assert all(json.loads(a) is not None for a in arguments_of(r.messages))


def test_an_unpaired_call_is_named_in_the_caller_s_indices_only():
    """The error's text names the caller's messages, where it also quoted the compacted
    history's check ("message 20: ... message 4: tool call "c9" has no result"): the indices of a
    history the caller never saw. ``.failures`` keeps the compacted history's own."""
    msgs = malformed_history("chat", bad_at=-1)
    del msgs[-2]  # the last round's result
    with pytest.raises(cf.UnpairedToolCallsError) as e:
        cf.Compactor(budget=cf.estimate(msgs) // 3, strategy="summarize").compact(msgs)
    text = str(e.value)
    assert e.value.index == 20 and "message 20: tool call \"c9\" has no result" in text
    assert [i for _, i, _ in e.value.failures] != [20]  # (the compacted history's index)
    assert "message 4" not in text and f"message {e.value.failures[0][1]}:" not in text


@pytest.mark.parametrize("result", [{"role": "tool", "tool_call_id": None, "content": "r"},
                                    {"role": "tool", "content": "r"}], ids=["null id", "no id"])
def test_a_chat_result_without_an_id_is_an_orphan_repair_drops(result):
    """A tool message whose ``tool_call_id`` is null or missing answers no call (the provider
    refuses it): read as an orphan, as one whose id is "". It passed the check beside the call
    it seemed to answer, and repair added an "interrupted" stand-in and kept it."""
    call = {"role": "assistant", "content": None,
            "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]}
    h = [{"role": "system", "content": "sys"}, {"role": "user", "content": "hi"}, call, result,
         {"role": "assistant", "content": "done"}, {"role": "user", "content": "thanks"}]
    r = cf.repair(h, provider="openai")
    assert any(c.startswith("message 3: result for call") and c.endswith("dropped") for c in r.changes), r.changes
    assert all(m.get("tool_call_id") for m in r.messages if m.get("role") == "tool")
    assert result not in r.messages
    # Kept by a compaction (here in its tail), it is named, as a result whose id is "" is.
    earlier = [m for k in range(8) for m in ({"role": "user", "content": f"go on {k}"},
                                             {"role": "assistant", "content": f"step {k} " + "words " * 200})]
    long = h[:2] + earlier + h[2:]
    with pytest.raises(cf.UnpairedToolCallsError) as e:
        cf.Compactor(budget=cf.estimate(long) // 2, strategy="summarize").compact(long)
    assert e.value.index in (len(long) - 4, len(long) - 3), str(e.value)


def test_a_responses_continuation_held_upstream_keeps_its_outputs() -> None:
    # The input of a request sent with previous_response_id: outputs answering the stored
    # response's calls, then the user's next turn. Repaired as a history of its own, both outputs
    # were orphans and only the user's turn was left.
    cont = [
        {"type": "function_call_output", "call_id": "call_w1", "output": '{"temp_c": 12}'},
        {"type": "function_call_output", "call_id": "call_w2", "output": '{"temp_c": 9}'},
        {"role": "user", "content": "Which city is warmer?"},
    ]
    before = copy.deepcopy(cont)
    alone = cf.repair(cont, wire_format="responses")
    assert alone.messages == [cont[2]] and len(alone.changes) == 2
    held = cf.repair(cont, wire_format="responses", held_upstream=True)
    assert not held.changed and held.messages == cont
    assert all(a is b for a, b in zip(held.messages, cont))
    assert cont == before
    # A chat history has no stored response to continue.
    with pytest.raises(ValueError, match="held_upstream is for a Responses input"):
        cf.repair([{"role": "user", "content": "hi"}], held_upstream=True)


def test_a_system_note_between_a_call_and_its_results_is_moved_and_the_compaction_passes() -> None:
    # An agent that logs a lint warning as a system message while its tools run. The check
    # named the call as unanswered and advised repair=True, which left the note where it was.
    call = {"role": "assistant", "content": None, "tool_calls": [
        {"id": "a", "type": "function", "function": {"name": "f", "arguments": "{}"}},
        {"id": "b", "type": "function", "function": {"name": "f", "arguments": "{}"}}]}
    history = [{"role": "user", "content": "go"},
               {"role": "assistant", "content": "done " * 2000}, {"role": "user", "content": "more"},
               {"role": "assistant", "content": "done " * 2000}, {"role": "user", "content": "more"},
               call, {"role": "tool", "tool_call_id": "a", "content": "ok"},
               {"role": "system", "content": "lint: 2 warnings"},
               {"role": "tool", "tool_call_id": "b", "content": "ok"}, {"role": "user", "content": "next"}]
    with pytest.raises(cf.UnpairedToolCallsError):
        cf.Compactor(model="gpt-4o", budget=1500).compact(history)
    r = cf.Compactor(model="gpt-4o", budget=1500, repair=True).compact(history)
    roles = [m["role"] for m in r.messages]
    assert roles[-5:] == ["assistant", "tool", "tool", "system", "user"], roles
    assert any("message 7: message between a tool call and its results: moved" in n for n in r.notes)
    assert shape_problems(r.messages, "chat") == []


def _responses_exchanges(root: Any) -> list[dict[str, Any]]:
    path = root / "replay" / "exchanges.jsonl"
    if not path.exists():
        return []
    with path.open() as f:
        rows = [json.loads(line) for line in f]
    return [r for r in rows if r.get("api") == "responses" and isinstance(r.get("request_body"), dict)
            and isinstance(r["request_body"].get("input"), list)]


def test_repair_drops_the_reasoning_item_the_api_refused_and_keeps_every_accepted_one() -> None:
    # Recorded Responses requests: every one refused for a reasoning item "without its required
    # following item" is changed by repair (the item goes), and no accepted one that sends
    # reasoning is changed at all.
    rows = _responses_exchanges(LOCAL) + _responses_exchanges(SHARED)
    refused = [r for r in rows if r["status"] == 400
               and "without its required following item" in json.dumps(r.get("response_body"))]
    accepted = [r for r in rows if r["status"] == 200
                and any(isinstance(i, dict) and i.get("type") == "reasoning" for i in r["request_body"]["input"])]
    if not refused:
        pytest.skip(f"no refused reasoning request recorded (shared data at {SHARED} absent)")
    for r in refused:
        items = r["request_body"]["input"]
        out = cf.repair(items, wire_format="responses")
        assert any("reasoning item without the item it precedes: dropped" in c for c in out.changes), r["source"]
        assert not any(isinstance(i, dict) and i.get("type") == "reasoning" for i in out.messages)
    assert accepted
    for r in accepted:
        assert not cf.repair(r["request_body"]["input"], wire_format="responses").changed, r["source"]


def test_anthropic_text_before_the_results_is_moved_after_them_with_the_caller_s_blocks() -> None:
    # Anthropic refuses a results turn that opens with text ("tool_use ids were found without
    # tool_result blocks immediately after"); the check now names it and repair moves the text
    # after the results, keeping the caller's block objects (and their cache_control).
    text = {"type": "text", "text": "Here are the results:", "cache_control": {"type": "ephemeral"}}
    r1 = {"type": "tool_result", "tool_use_id": "toolu_1", "content": "15 degrees"}
    history = [{"role": "user", "content": "weather in two cities?"},
               {"role": "assistant", "content": "Let me think. " * 800},
               {"role": "user", "content": "go on"},
               {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "w", "input": {}}]},
               {"role": "user", "content": [text, r1]},
               {"role": "assistant", "content": "15 degrees."}, {"role": "user", "content": "thanks"}]
    before = copy.deepcopy(history)
    fixed = cf.repair(history, wire_format="anthropic")
    assert fixed.changes == ("message 4: blocks before the tool results: moved after them "
                             "(Anthropic wants a turn's results first)",)
    assert fixed.messages[4]["content"][0] is r1 and fixed.messages[4]["content"][1] is text
    assert history == before
    with pytest.raises(cf.UnpairedToolCallsError, match="comes after other blocks of message 4"):
        cf.Compactor(provider="anthropic", budget=1500).compact(history)
    out = cf.Compactor(provider="anthropic", budget=1500, repair=True).compact(history)
    turn = next(m for m in out.messages if isinstance(m["content"], list)
                and any(b.get("type") == "tool_result" for b in m["content"]))
    assert [b["type"] for b in turn["content"]] == ["tool_result", "text"]
    assert shape_problems(out.messages, "anthropic") == []


def test_gemini_calls_of_one_name_answered_once_are_named_and_stood_in_after_the_response() -> None:
    # Two `read` calls without ids and one `read` response: Gemini refuses a turn with fewer
    # function responses than calls, and the check, pairing by name, saw `read` answered.
    # Repair's stand-in goes after the response, which answers the first call by order.
    big = "lorem ipsum dolor sit amet " * 60
    history: list[dict[str, Any]] = [{"role": "user", "parts": [{"text": "check two files"}]}]
    for i in range(6):
        history += [{"role": "model", "parts": [{"functionCall": {"name": "read", "args": {"f": f"x{i}"}}}]},
                    {"role": "user", "parts": [{"functionResponse": {"name": "read", "response": {"out": big}}}]}]
    history += [{"role": "model", "parts": [{"functionCall": {"name": "read", "args": {"f": "a.py"}}},
                                            {"functionCall": {"name": "read", "args": {"f": "b.py"}}}]},
                {"role": "user", "parts": [{"functionResponse": {"name": "read", "response": {"out": "A-CONTENT"}}}]},
                {"role": "model", "parts": [{"text": "done"}]}, {"role": "user", "parts": [{"text": "thanks"}]}]
    with pytest.raises(cf.UnpairedToolCallsError, match='tool call "read" has no result'):
        cf.Compactor(provider="gemini", budget=900).compact(history)
    out = cf.Compactor(provider="gemini", budget=900, repair=True).compact(history).messages
    answers = out[-3]["parts"]
    assert [p["functionResponse"]["response"] for p in answers][0] == {"out": "A-CONTENT"}
    assert "interrupted" in json.dumps(answers[1])
    assert shape_problems(out, "gemini") == []


@pytest.mark.parametrize("fmt", ["bedrock", "anthropic"])
def test_results_split_over_two_user_turns_join_the_first_with_the_caller_s_blocks(fmt: str) -> None:
    # Each result written as it came, in a user turn of its own: repair read the second turn's
    # result as an orphan, dropped it (the real output lost) for an "interrupted" stand-in, and
    # left two user turns in a row, which Bedrock refuses.
    if fmt == "bedrock":
        use = lambda i: {"toolUse": {"toolUseId": i, "name": "read", "input": {}}}  # noqa: E731
        res = lambda i, t: {"toolResult": {"toolUseId": i, "content": [{"text": t}]}}  # noqa: E731
        say = lambda t: [{"text": t}]  # noqa: E731
    else:
        use = lambda i: {"type": "tool_use", "id": i, "name": "read", "input": {}}  # noqa: E731
        res = lambda i, t: {"type": "tool_result", "tool_use_id": i, "content": t}  # noqa: E731
        say = lambda t: [{"type": "text", "text": t}]  # noqa: E731
    second = res("t2", "RESULT-2")
    history = [{"role": "user", "content": say("read both")},
               {"role": "assistant", "content": [use("t1"), use("t2")]},
               {"role": "user", "content": [res("t1", "RESULT-1")]},
               {"role": "user", "content": [second]},
               {"role": "assistant", "content": say("both read")}, {"role": "user", "content": say("thanks")}]
    before = copy.deepcopy(history)
    fixed = cf.repair(history, wire_format=fmt)
    assert [m["role"] for m in fixed.messages] == ["user", "assistant", "user", "assistant", "user"]
    assert fixed.messages[2]["content"][1] is second
    assert "interrupted" not in json.dumps(fixed.messages)
    assert fixed.changes == ("message 3: results of message 1's calls in a second user turn: joined to message 2",)
    assert history == before
    assert shape_problems(fixed.messages, fmt) == []


def test_two_bedrock_calls_of_one_id_in_a_turn_raise_without_repair_and_are_renamed_with_it() -> None:
    # Bedrock refuses "The toolUse blocks at messages.N.content contain duplicate Ids"; the
    # compaction returned such a turn unchanged, without a word.
    big = "lorem ipsum dolor sit amet " * 60
    history: list[dict[str, Any]] = [{"role": "user", "content": [{"text": "go"}]}]
    for i in range(6):
        history += [{"role": "assistant", "content": [{"toolUse": {"toolUseId": f"p{i}", "name": "r", "input": {}}}]},
                    {"role": "user", "content": [{"toolResult": {"toolUseId": f"p{i}", "content": [{"text": big}]}}]}]
    history += [{"role": "assistant", "content": [{"toolUse": {"toolUseId": "t1", "name": "a", "input": {}}},
                                                  {"toolUse": {"toolUseId": "t1", "name": "b", "input": {}}}]},
                {"role": "user", "content": [{"toolResult": {"toolUseId": "t1", "content": [{"text": "A"}]}},
                                             {"toolResult": {"toolUseId": "t1", "content": [{"text": "B"}]}}]},
                {"role": "assistant", "content": [{"text": "done"}]}, {"role": "user", "content": [{"text": "ok"}]}]
    kw: dict[str, Any] = {"provider": "anthropic", "wire_format": "bedrock", "budget": 900}
    with pytest.raises(cf.UnpairedToolCallsError, match='"t1" is used by another call of its turn'):
        cf.Compactor(**kw).compact(history)
    out = cf.Compactor(**kw, repair=True).compact(history).messages
    ids = [b["toolUse"]["toolUseId"] for b in out[-4]["content"]]
    answers = [b["toolResult"]["toolUseId"] for b in out[-3]["content"]]
    assert ids == ["t1", "t1_2"] and answers == ids


def test_responses_calls_of_one_id_in_a_response_keep_their_own_outputs() -> None:
    # Each function_call is an item of its own: the first output was taken for the last call
    # of its id, and three calls got their outputs in reverse.
    fc = lambda a: {"type": "function_call", "call_id": "a", "name": "w", "arguments": a}  # noqa: E731
    fo = lambda o: {"type": "function_call_output", "call_id": "a", "output": o}  # noqa: E731
    items = [{"role": "user", "content": "weather?"}, fc('{"city":"Paris"}'), fc('{"city":"Rome"}'),
             fc('{"city":"Oslo"}'), fo("Paris: 20C"), fo("Rome: 30C"), fo("Oslo: 5C")]
    out = cf.repair(items, wire_format="responses").messages
    calls = {m["call_id"]: json.loads(m["arguments"])["city"] for m in out if m.get("type") == "function_call"}
    outputs = {m["call_id"]: m["output"].split(":")[0] for m in out if m.get("type") == "function_call_output"}
    assert calls == outputs and len(calls) == 3


def test_a_user_turn_typed_while_the_tool_ran_goes_after_the_result_which_is_kept() -> None:
    call = {"id": "call_1", "type": "function", "function": {"name": "w", "arguments": '{"city":"Paris"}'}}
    result = {"role": "tool", "tool_call_id": "call_1", "content": "Paris: 20C sunny"}
    typed = {"role": "user", "content": "also Rome"}
    history = [{"role": "user", "content": "weather in Paris?"}, {"role": "assistant", "content": None,
               "tool_calls": [call]}, typed, result, {"role": "assistant", "content": "It is 20C in Paris."}]
    fixed = cf.repair(history, wire_format="chat")
    assert fixed.messages[2] is result and fixed.messages[3] is typed
    assert "interrupted" not in json.dumps(fixed.messages)
    assert shape_problems(fixed.messages, "chat") == []


def test_a_note_or_a_user_turn_planted_between_real_calls_and_results_loses_no_result() -> None:
    # Real chat histories with a user turn or a system note planted right after a call, before
    # its results (a user typing while the tool runs, a harness logging a warning): repair
    # makes them valid and every real result is still there, none replaced by a stand-in.
    histories = real_histories()
    if not histories:
        pytest.skip("no real history with tool calls in the data at hand")
    rng = random.Random(71)
    planted = 0
    for conv in histories:
        msgs = conv["messages"]
        calls = [i for i, m in enumerate(msgs) if m.get("tool_calls") and i + 1 < len(msgs)
                 and msgs[i + 1].get("role") == "tool"]
        for at in rng.sample(calls, min(3, len(calls))):
            note = rng.choice([{"role": "user", "content": "(typed while the tool ran) any news?"},
                               {"role": "system", "content": "lint: 2 warnings"}])
            broken = [*msgs[: at + 1], note, *msgs[at + 1:]]
            fixed = cf.repair(broken, wire_format="chat")
            assert shape_problems(fixed.messages, "chat") == [], fixed.changes
            # (By content: a result of a reused id is a renamed copy.)
            kept = [json.dumps(m["content"]) for m in fixed.messages if m.get("role") == "tool"]
            assert kept == [json.dumps(m["content"]) for m in broken if m.get("role") == "tool"], fixed.changes
            assert "interrupted" not in json.dumps(fixed.messages[at:at + 12])
            assert any(m is note for m in fixed.messages)
            planted += 1
    assert planted >= len(histories)


def test_a_joined_anthropic_results_turn_keeps_its_results_before_its_text() -> None:
    use = lambda i: {"type": "tool_use", "id": i, "name": "read", "input": {}}  # noqa: E731
    res = lambda i: {"type": "tool_result", "tool_use_id": i, "content": f"out {i}"}  # noqa: E731
    note = {"type": "text", "text": "first one done"}
    history = [{"role": "user", "content": "read both"}, {"role": "assistant", "content": [use("t1"), use("t2")]},
               {"role": "user", "content": [res("t1"), note]}, {"role": "user", "content": [res("t2")]},
               {"role": "assistant", "content": "both read"}]
    fixed = cf.repair(history, wire_format="anthropic")
    assert [b["type"] for b in fixed.messages[2]["content"]] == ["tool_result", "tool_result", "text"]
    assert fixed.messages[2]["content"][2] is note
    assert shape_problems(fixed.messages, "anthropic") == []


def test_call_ids_a_provider_refuses_are_renamed_with_their_results() -> None:
    # A history carried over from Kimi (`functions.read:0`) into Anthropic's API, which refuses
    # "tool_use.id: String should match pattern '^[a-zA-Z0-9_-]+$'"; the compaction sent such ids
    # on as they came, and `repair` did not touch them.
    big = "lorem ipsum dolor sit amet " * 60
    history: list[dict[str, Any]] = [{"role": "user", "content": "read the logs"}]
    for i in range(6):
        cid = f"functions.read:{i}"
        history += [{"role": "assistant", "content": [{"type": "tool_use", "id": cid, "name": "read",
                                                       "input": {"path": f"log{i}.txt"}}]},
                    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": cid, "content": big}]}]
    history += [{"role": "assistant", "content": "All six logs read."}, {"role": "user", "content": "thanks"}]
    before = copy.deepcopy(history)
    assert any("not of [a-zA-Z0-9_-]+" in p for p in shape_problems(history, "anthropic"))

    fixed = cf.repair(history, provider="anthropic")
    assert shape_problems(fixed.messages, "anthropic") == []
    assert len(fixed.changes) == 12 and "message 1: call id 'functions.read:0'" in fixed.changes[0].replace('"', "'")
    calls = [b["id"] for m in fixed.messages for b in blocks(m) or [] if b.get("type") == "tool_use"]
    answers = [b["tool_use_id"] for m in fixed.messages for b in blocks(m) or [] if b.get("type") == "tool_result"]
    assert calls == answers == [f"functions_read_{i}" for i in range(6)]
    assert history == before

    # Without repair the compaction sends the caller's ids as they came (an Anthropic-compatible
    # server may take them); with it, ids the API takes.
    # (A tail of three messages at least reaches back into the last tool round.)
    kw: dict[str, Any] = {"provider": "anthropic", "budget": 900, "min_tail": 3}
    kept = cf.Compactor(**kw).compact(history).messages
    assert any("functions.read:" in json.dumps(m) for m in kept)
    out = cf.Compactor(**kw, repair=True).compact(history)
    assert shape_problems(out.messages, "anthropic") == [] and "functions.read:" not in json.dumps(out.messages)
    assert history == before


def test_an_empty_gemini_turn_goes_and_the_user_turns_around_it_are_joined() -> None:
    # A model turn whose candidate came back without parts, appended as it came: Gemini refuses
    # "contents.parts must not be empty", and dropped alone it left two user turns in a row.
    history: list[dict[str, Any]] = [
        {"role": "user", "parts": [{"text": "summarize the report"}]}, {"role": "model", "parts": []},
        {"role": "user", "parts": [{"text": "are you there?"}]}, {"role": "model", "parts": [{"text": "Yes."}]}]
    before = copy.deepcopy(history)
    fixed = cf.repair(history, wire_format="gemini")
    assert fixed.messages == [{"role": "user", "parts": [{"text": "summarize the report"}, {"text": "are you there?"}]},
                              history[3]]
    assert fixed.messages[1] is history[3] and history == before
    assert [c.split(":")[0] for c in fixed.changes] == ["message 1", "message 2"]
    assert shape_problems(fixed.messages, "gemini") == []

    # The same through google-genai's own objects: what comes back is what its client takes.
    types = pytest.importorskip("google.genai.types", reason="google-genai (pip install '.[gemini]')")
    sdk = [types.Content.model_validate(m) for m in history]
    out = cf.repair(sdk, wire_format="gemini").messages
    sent = [m if isinstance(m, types.Content) else types.Content.model_validate(m) for m in out]
    assert [[p.text for p in m.parts or []] for m in sent] == [["summarize the report", "are you there?"], ["Yes."]]


def test_blank_text_anthropic_and_bedrock_refuse_goes() -> None:
    # An empty tool output or model answer sent back as it came. Anthropic: "all messages must
    # have non-empty content except for the optional final assistant message", "text content
    # blocks must contain non-whitespace text"; Bedrock: "The text field in the ContentBlock
    # object at messages.N.content.0 is blank".
    history: list[dict[str, Any]] = [
        {"role": "user", "content": "find the failing test"},
        {"role": "assistant", "content": [{"type": "text", "text": "Running it."},
                                          {"type": "tool_use", "id": "t1", "name": "bash", "input": {"cmd": "pytest"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "1 failed"},
                                     {"type": "text", "text": "  "}]},
        {"role": "assistant", "content": ""},
        {"role": "user", "content": [{"type": "text", "text": "and?"}]},
        {"role": "assistant", "content": [{"type": "text", "text": "\n"}, {"type": "text", "text": "test_io fails."}]},
        {"role": "user", "content": "fix it"}]
    before = copy.deepcopy(history)
    assert shape_problems(history, "anthropic") == ["2: blank text block 1", "3: blank content", "5: blank text block 0"]
    fixed = cf.repair(history, wire_format="anthropic")
    assert shape_problems(fixed.messages, "anthropic") == [] and history == before
    # The empty turn went, and the two user turns around it are one; the blank blocks went.
    assert fixed.messages == [
        history[0], history[1],
        {"role": "user", "content": [history[2]["content"][0], {"type": "text", "text": "and?"}]},
        {"role": "assistant", "content": [{"type": "text", "text": "test_io fails."}]}, history[6]]
    assert [c.split(":")[0] for c in fixed.changes] == ["message 3", "message 4", "message 2", "message 5"]
    # A compaction with repair sends none of it, at a budget that folds and at one that does not.
    for budget in (10_000, 120):
        out = cf.Compactor(provider="anthropic", budget=budget, repair=True).compact(history)
        assert shape_problems(out.messages, "anthropic") == [], budget
    assert history == before

    # Bedrock refuses the empty text alone: the newline it answered stays.
    bedrock = [{"role": "user", "content": [{"text": "hi"}, {"text": ""}]},
               {"role": "assistant", "content": [{"text": "\n"}, {"text": "hello"}]}]
    fixed = cf.repair(bedrock, wire_format="bedrock")
    assert fixed.messages == [{"role": "user", "content": [{"text": "hi"}]}, bedrock[1]]
    # Gemini answered an empty text part (the recorded requests): nothing to repair.
    gemini = [{"role": "user", "parts": [{"text": ""}]}, {"role": "model", "parts": [{"text": "hello"}]}]
    assert cf.repair(gemini, wire_format="gemini").changes == ()


def test_bedrock_turns_of_one_role_in_a_row_are_one_turn() -> None:
    # Bedrock: "A conversation must alternate between user and assistant roles". A harness that
    # wrote the user's next words as a turn of their own after the results turn, and two answers
    # of the model in a row.
    history: list[dict[str, Any]] = [
        {"role": "user", "content": [{"text": "list the files"}]},
        {"role": "assistant", "content": [{"toolUse": {"toolUseId": "t1", "name": "ls", "input": {}}}]},
        {"role": "user", "content": [{"toolResult": {"toolUseId": "t1", "content": [{"text": "a.py b.py"}]}}]},
        {"role": "user", "content": [{"text": "only the tests, please"}]},
        {"role": "assistant", "content": [{"text": "There are none."}]},
        {"role": "assistant", "content": [{"text": "Shall I write one?"}]}]
    before = copy.deepcopy(history)
    assert shape_problems(history, "bedrock") == ["2: two user turns in a row", "4: two assistant turns in a row"]
    fixed = cf.repair(history, wire_format="bedrock")
    assert fixed.messages == [
        history[0], history[1],
        {"role": "user", "content": history[2]["content"] + history[3]["content"]},
        {"role": "assistant", "content": history[4]["content"] + history[5]["content"]}]
    assert shape_problems(fixed.messages, "bedrock") == [] and history == before
    for budget in (10_000, 75):
        out = cf.Compactor(provider="anthropic", wire_format="bedrock", budget=budget, repair=True).compact(history)
        assert shape_problems(out.messages, "bedrock") == [], budget
    # Anthropic joins two turns of one role itself: left as they came.
    anthropic = [{"role": "user", "content": "a"}, {"role": "user", "content": "b"}]
    assert cf.repair(anthropic, wire_format="anthropic").changes == ()


def test_a_responses_output_sent_after_a_later_model_message_moves_up_to_its_call() -> None:
    # DeepSeek refused the recorded input ("No tool output found for tool call call-a"): the
    # model's words between two calls, both outputs after them. The repair stood in for
    # `call-a` and dropped its real output as an answer given twice.
    if not shared_available():
        pytest.skip("../shared/data absent: the recorded DeepSeek exchange lives there")
    from replay_server import load_exchanges

    rows = load_exchanges(SHARED / "replay" / "exchanges.jsonl")
    row = next(r for s, r in rows.items() if "rejects_interleaved_function_calls" in s)
    assert row["status"] == 400 and "call-a" in row["response_body"]["error"]["message"]
    items = row["request_body"]["input"]
    before = copy.deepcopy(items)
    fixed = cf.repair(items, wire_format="responses")
    kinds = [(m.get("type") or m["role"], m.get("call_id")) for m in fixed.messages]
    assert kinds == [("assistant", None), ("function_call", "call-a"), ("function_call_output", "call-a"),
                     ("assistant", None), ("function_call", "call-b"), ("function_call_output", "call-b"),
                     ("user", None)]
    assert fixed.messages[2] is items[4] and items == before
    assert not any("interrupted" in json.dumps(m) for m in fixed.messages)


def test_an_empty_tool_calls_list_is_removed() -> None:
    # OpenAI refuses "Invalid 'messages[1].tool_calls': empty array"; a compatible server's or
    # an SDK's answer appended as it came carries one.
    history: list[Any] = [{"role": "user", "content": "hi"},
                          {"role": "assistant", "content": "hello", "tool_calls": []},
                          {"role": "user", "content": "bye"}]
    before = copy.deepcopy(history)
    fixed = cf.repair(history, provider="openai")
    assert fixed.messages == [history[0], {"role": "assistant", "content": "hello"}, history[2]]
    assert fixed.changes == ("message 1: an empty tool_calls list (OpenAI refuses it): removed",)
    assert history == before and fixed.messages[0] is history[0]
    out = cf.Compactor(budget=10_000, repair=True).compact(history)
    assert "tool_calls" not in out.messages[1]

    # The OpenAI SDK's own message object: what comes back sends no empty list.
    chat = pytest.importorskip("openai.types.chat", reason="openai (pip install '.[openai]')")
    sdk = chat.ChatCompletionMessage(role="assistant", content="hello", tool_calls=[])
    m = cf.repair([history[0], sdk, history[2]], provider="openai").messages[1]
    sent = m if isinstance(m, dict) else m.model_dump(exclude_none=True)
    assert sent.get("tool_calls") is None and sent["content"] == "hello" and sdk.tool_calls == []


def test_a_prefill_ending_in_whitespace_is_trimmed() -> None:
    # Anthropic, and Claude through Converse: "final assistant content cannot end with trailing
    # whitespace" (a prefill such as "title: ").
    history: list[dict[str, Any]] = [{"role": "user", "content": "Name this note."},
                                     {"role": "assistant", "content": [{"type": "text", "text": "Title: "}]}]
    before = copy.deepcopy(history)
    assert shape_problems(history, "anthropic") == ["1: final assistant text ends in whitespace"]
    fixed = cf.repair(history, wire_format="anthropic")
    assert fixed.messages[1] == {"role": "assistant", "content": [{"type": "text", "text": "Title:"}]}
    assert shape_problems(fixed.messages, "anthropic") == [] and history == before
    bedrock = [{"role": "user", "content": [{"text": "Name this note."}]},
               {"role": "assistant", "content": [{"text": "Title:\n"}]}]
    assert cf.repair(bedrock, wire_format="bedrock").messages[1] == {"role": "assistant", "content": [{"text": "Title:"}]}
    # An earlier assistant turn's trailing space, and chat's, are taken: left.
    assert cf.repair(history + [{"role": "user", "content": "go on"}], wire_format="anthropic").changes == ()
    assert cf.repair([{"role": "user", "content": "a"}, {"role": "assistant", "content": "b "}],
                     provider="openai").changes == ()


def test_a_compaction_without_repair_says_what_it_sends_on_that_the_provider_may_refuse() -> None:
    # A blank block in the last user turn, which a fold keeps: sent as it came (an
    # Anthropic-compatible server may take it), and said.
    history: list[dict[str, Any]] = [
        {"role": "user", "content": [{"type": "text", "text": "hi " * 200}]},
        {"role": "assistant", "content": [{"type": "text", "text": "ok " * 300}]},
        {"role": "user", "content": [{"type": "text", "text": "x " * 200}]},
        {"role": "assistant", "content": [{"type": "text", "text": "y " * 300}]},
        {"role": "user", "content": [{"type": "text", "text": " "}, {"type": "text", "text": "go"}]}]
    out = cf.Compactor(provider="anthropic", budget=700).compact(history)
    assert out.strategy_used is not None and shape_problems(out.messages, "anthropic") == ["2: blank text block 0"]
    assert any(n.startswith("sent as the history came") and "message 4: content block 0 is blank text" in n
               for n in out.notes), out.notes
    fixed = cf.Compactor(provider="anthropic", budget=700, repair=True).compact(history)
    assert shape_problems(fixed.messages, "anthropic") == []
    assert not any(n.startswith("sent as the history came") for n in fixed.notes)


def test_repair_of_a_list_another_thread_changes_is_a_repair_of_one_state_of_it() -> None:
    """The plan is made with the GIL released; it and the edits must read one snapshot of the
    list, or a message another thread inserts or pops meanwhile shifts every position after it
    (was: 17% of such results still needing repair, and bare IndexErrors)."""
    import sys
    import threading

    histories = real_histories()
    if not histories:
        pytest.skip("no real history with tool calls in the data at hand")
    pool = max(histories, key=lambda c: len(c["messages"]))["messages"]
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)
    calls = still_broken = 0
    try:
        for trial in range(40):
            h = copy.deepcopy(pool)
            stop = threading.Event()

            def mutate(h: list[Any] = h, stop: threading.Event = stop, seed: int = trial) -> None:
                r = random.Random(seed)
                while not stop.is_set():
                    if r.random() < 0.5 and len(h) > 3:
                        h.pop(r.randrange(2, len(h)))
                    else:
                        h.insert(r.randrange(len(h) + 1), copy.deepcopy(r.choice(pool)))

            t = threading.Thread(target=mutate)
            t.start()
            try:
                for _ in range(5):
                    out = cf.repair(h, provider="openai")
                    calls += 1
                    still_broken += bool(cf.repair(out.messages, provider="openai").changes)
            finally:
                stop.set()
                t.join()
    finally:
        sys.setswitchinterval(interval)
    assert (calls, still_broken) == (200, 0)


def _reused_pending_id(fmt: str) -> tuple[list[dict], Any]:
    """A dialogue whose pending last call reuses the id of an earlier, answered call (the
    recorded tau-bench dialogue task9-trial2 does: gpt-4o gave two `think` calls one id)."""
    chat: list[dict[str, Any]] = [{"role": "system", "content": "You are an airline agent."},
                                  {"role": "user", "content": "Book the flights and pay with the certificate."}]
    chat.append({"role": "assistant", "content": None, "tool_calls": [
        {"id": "call_reused", "type": "function", "function": {"name": "think", "arguments": '{"thought": "plan"}'}}]})
    chat.append({"role": "tool", "tool_call_id": "call_reused", "content": ""})
    chat.append({"role": "assistant", "content": "Shall I go ahead?"})
    chat.append({"role": "user", "content": "Yes, go ahead."})
    chat.append({"role": "assistant", "content": None, "tool_calls": [
        {"id": "call_reused", "type": "function", "function": {"name": "think", "arguments": '{"thought": "pay"}'}}]})
    return convert(chat, fmt)


@pytest.mark.parametrize("fmt", ["anthropic", "gemini", "bedrock", "responses"])
def test_a_pending_call_keeps_its_id_where_an_earlier_call_had_it(fmt):
    # The caller answers the pending call next, under the id the model gave it: renamed
    # `call_reused_2`, it stayed unanswered and the result appended next answered nothing (or the
    # earlier call, answered already) - a history the provider refuses. The earlier call and
    # its result are renamed instead.
    msgs, system = _reused_pending_id(fmt)
    r = cf.repair(msgs, provider=PROVIDER[fmt], wire_format=fmt)
    assert r.messages[-1] is msgs[-1], r.changes
    assert "call_reused_2" in json.dumps(r.messages[:-1]), r.changes
    answered = [*r.messages, *convert([{"role": "user", "content": "x"}, *_reused_pending_id("chat")[0][-1:],
                                       {"role": "tool", "tool_call_id": "call_reused", "content": "ok"}], fmt)[0][-1:]]
    assert shape_problems(answered, fmt) == [], shape_problems(answered, fmt)


@pytest.mark.parametrize("blank", ["", "   "])
def test_a_blank_turn_after_a_call_keeps_the_stand_in_written_into_it(blank) -> None:
    # The stand-in replaced the blank string, then the turn was dropped as empty with it: the
    # call was left without a result, which Anthropic refuses, though the changes said it had one.
    history: list[dict[str, Any]] = [
        {"role": "user", "content": "Find a flight."},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "search", "input": {}}]},
        {"role": "user", "content": blank}]
    fixed = cf.repair(history, provider="anthropic")
    assert [b["type"] for b in fixed.messages[2]["content"]] == ["tool_result"]
    assert fixed.messages[2]["content"][0]["tool_use_id"] == "toolu_1"
    assert shape_problems(fixed.messages, "anthropic") == [] and len(fixed.changes) == 1
    assert cf.repair(fixed.messages, provider="anthropic").changes == ()
    for budget in (10_000, 60):
        out = cf.Compactor(provider="anthropic", budget=budget, repair=True).compact(history)
        assert shape_problems(out.messages, "anthropic") == [], budget


def test_a_bedrock_note_for_orphan_results_takes_the_user_s_next_turn() -> None:
    # The turn of orphans became a note, kept apart from the user's next turn: two user turns in
    # a row, which Bedrock refuses, and a second repair joined them.
    history: list[dict[str, Any]] = [
        {"role": "user", "content": [{"text": "Upgrade."}]}, {"role": "assistant", "content": [{"text": "Which card?"}]},
        {"role": "user", "content": [{"toolResult": {"toolUseId": "t9", "content": [{"text": "Error"}]}}]},
        {"role": "user", "content": [{"text": "Card 9725."}]}]
    before = copy.deepcopy(history)
    fixed = cf.repair(history, wire_format="bedrock")
    assert [m["role"] for m in fixed.messages] == ["user", "assistant", "user"]
    assert fixed.messages[2]["content"][1:] == history[3]["content"] and history == before
    assert shape_problems(fixed.messages, "bedrock") == []
    assert cf.repair(fixed.messages, wire_format="bedrock").changes == ()
    for budget in (10_000, 40):
        out = cf.Compactor(provider="anthropic", wire_format="bedrock", budget=budget, repair=True).compact(history)
        assert shape_problems(out.messages, "bedrock") == [], budget


# -- property: one repair is a fixed point -------------------------------------------------------


def _text_turn(fmt: str, text: str, role: str = "user") -> dict[str, Any]:
    if fmt == "gemini":
        return {"role": "model" if role == "assistant" else role, "parts": [{"text": text}]}
    if fmt == "bedrock":
        return {"role": role, "content": [{"text": text}]}
    if fmt == "anthropic":
        return {"role": role, "content": [{"type": "text", "text": text}]}
    return {"role": role, "content": text}


def rough(msgs: list[dict[str, Any]], fmt: str, rng: random.Random) -> tuple[list[dict[str, Any]], str]:
    """One random damage of the kinds a harness writes besides lost calls and results: a results
    turn left blank (an empty tool output sent back as ``""``, ``"   "`` or no blocks), a results
    turn whose results answer no call (ids from another run), beside the user's words or not,
    the user's next words written as a turn of their own right after a results turn, or a model
    turn that came back empty or in two."""
    msgs = copy.deepcopy(msgs)
    body = range(1, max(1, len(msgs) - 3))
    with_results = [i for i in body if id_slots(msgs[i])[1]]
    if not with_results:
        return msgs, "none"
    i = rng.choice(with_results)
    m = msgs[i]
    key = "parts" if "parts" in m else "content"
    kind = rng.choice(["blank_turn", "orphan_turn", "orphan_beside_words", "user_words", "blank_model", "model_words"])
    if kind == "blank_turn":
        blank = rng.choice(["", "   ", []])
        if m.get("type") == "function_call_output":
            m["output"] = blank if isinstance(blank, str) else ""
        elif m.get("role") == "tool":
            m["content"] = blank if isinstance(blank, str) else ""
        else:
            m[key] = [] if fmt == "gemini" else blank
    elif kind in ("orphan_turn", "orphan_beside_words"):
        for box, k in id_slots(m)[1]:
            box[k] = f"ghost_{i}"
        if kind == "orphan_beside_words" and isinstance(m.get(key), list):
            m[key].append(_text_turn(fmt, "see above")[key][0])
    elif kind == "user_words":
        msgs.insert(i + 1, _text_turn(fmt, f"And then step {i}."))
    else:
        turn = _text_turn(fmt, f"Thinking about step {i}.", "assistant")
        if kind == "blank_model":
            blanks: list[Any] = {"gemini": [[]], "chat": [""], "responses": [""]}.get(fmt, [[], ""])
            turn["parts" if fmt == "gemini" else "content"] = rng.choice(blanks)
        msgs.insert(i + 1, turn)
    return msgs, kind


def _roughed(fmt: str, seed: int, tries: int):
    """``tries`` damaged copies of agent histories (hand-made, and real ones when at hand) in
    ``fmt``, each with 1-3 damages of ``damage`` and ``rough``: (copy, system, kinds)."""
    rng = random.Random(seed)
    sources = [convert(agent_history(n), fmt) for n in (3, 6)]
    sources += [convert(c["messages"], fmt) for c in real_histories()[:3]]
    for k in range(tries):
        broken, system = sources[k % len(sources)]
        kinds = []
        for _ in range(rng.randint(1, 3)):
            broken, kind = rng.choice([damage, rough])(broken, fmt, rng)
            kinds.append(kind)
        yield broken, system, kinds


@pytest.mark.parametrize("fmt", FORMATS)
def test_one_repair_is_a_fixed_point_and_what_it_returns_is_accepted_on_every_format(fmt):
    # A first repair once left what a second one changed: a stand-in result dropped with the
    # blank turn it was written into (Anthropic), the note standing for a turn of orphans left
    # before the user's next turn (Bedrock: two user turns in a row).
    compacted = repaired = checked = 0
    for broken, system, kinds in _roughed(fmt, seed=84, tries=120):
        first = cf.repair(broken, provider=PROVIDER[fmt], wire_format=fmt)
        repaired += bool(first.changes)
        again = cf.repair(first.messages, provider=PROVIDER[fmt], wire_format=fmt)
        assert again.changes == (), (kinds, first.changes, again.changes)
        # (Anthropic and Gemini take two turns of one role in a row, and the repair leaves them:
        # only Bedrock refuses them.)
        problems = [p for p in accepted(first.messages, fmt, system) if fmt == "bedrock" or "in a row" not in p]
        assert problems == [], (kinds, first.changes)
        if compacted < 12:  # (a few: a compaction costs more than a repair)
            compacted += 1
            out = cf.Compactor(provider=PROVIDER[fmt], system=system, wire_format=fmt, repair=True,
                               budget=max(2_000, cf.estimate(first.messages, provider=PROVIDER[fmt]) // 2))
            try:
                messages = out.compact(broken).messages
            except cf.CompactionBudgetError:
                continue
            problems = [p for p in accepted(messages, fmt, system) if fmt == "bedrock" or "in a row" not in p]
            assert problems == [], (kinds, first.changes)
            checked += 1
    assert repaired >= 60, repaired  # the damage is real: most copies needed a repair
    # (Measured: all 12 repaired compactions of each format fit their budget: none raises.)
    assert checked == 12, checked

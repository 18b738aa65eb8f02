"""Raise only when nothing can fit: the steps a compaction takes before giving up, each said in
``.notes``, and the error when the system prompt, tools, task and last user turn alone exceed
the budget."""

from __future__ import annotations

import copy
import json
import re

import pytest

import contextfold as cf
from compaction_shapes import FORMATS, convert, shape_problems
from test_compactor import agent_history

PROVIDER = {"chat": "openai", "responses": "openai", "anthropic": "anthropic", "gemini": "gemini",
            "bedrock": "anthropic"}


def huge_last_round() -> list[dict]:
    """An agent whose last tool output alone is far over the budget (a 'cat' of a log)."""
    msgs = agent_history(6)[:-2]
    msgs.append({"role": "user", "content": "Now read the build log and tell me what failed."})
    msgs.append({"role": "assistant", "content": None, "tool_calls": [
        {"id": "call_log", "type": "function", "function": {"name": "read_file", "arguments": '{"path": "build.log"}'}}]})
    log = "".join(f"[{k:05d}] compiling module_{k}.c ... ok\n" for k in range(3_000)) + "error: linker failed: undefined symbol main\n"
    msgs.append({"role": "tool", "tool_call_id": "call_log", "content": log})
    return msgs


@pytest.mark.parametrize("fmt", FORMATS)
def test_an_oversized_last_tool_output_is_cut_in_the_middle_instead_of_raising(fmt):
    msgs, system = convert(huge_last_round(), fmt)
    snap = copy.deepcopy(msgs)
    kw = dict(provider=PROVIDER[fmt], system=system)
    c = cf.Compactor(budget=4_000, wire_format=fmt, **kw)
    r = c.compact(msgs)
    assert msgs == snap
    assert r.changed and r.tokens_after <= 4_000
    assert any(n.startswith("degraded: cut the middle") for n in r.notes), r.notes
    assert shape_problems(r.messages, fmt) == []
    text = json.dumps(r.messages)
    # Head and end of the log stay; the cut is recoverable byte-exact.
    assert "[00000] compiling module_0.c" in text and "undefined symbol main" in text
    (fold_id,) = set(re.findall(r"tokens cut[^\]]*id=(cf[0-9a-f]{12})", text))
    whole = c.recall(fold_id)
    if fmt == "gemini":  # a functionResponse's response object, as the history held it
        whole = json.loads(whole)["result"]
    assert whole == huge_last_round()[-1]["content"]
    # The task and the last user turn are kept verbatim.
    assert "Fix the failing test" in text and "tell me what failed" in text


def test_fewer_tail_messages_before_giving_up_never_fewer_than_the_last_user_turn():
    msgs = agent_history(30, output="x = 1\n" * 400)
    # The last three messages alone nearly fill the budget: the default floor of 3 cannot hold.
    msgs[-2] = {"role": "assistant", "content": "Progress report: " + "details " * 900}
    before = cf.Compactor(budget=1_200, min_tail=3)
    r = before.compact(msgs)
    assert r.tokens_after <= 1_200
    assert any(n.startswith("degraded: kept the last 1 messages") for n in r.notes), r.notes
    assert any(n.startswith("degraded:") for n in r.notes), r.notes
    assert r.messages[-1] is msgs[-1], "the last user turn stays verbatim"


def test_raises_only_when_system_tools_task_and_last_user_turn_cannot_fit_and_says_by_how_much():
    msgs = agent_history(10)
    msgs[1] = dict(msgs[1], content="Fix it. " + "Requirement detail. " * 800)
    floor = cf.estimate([msgs[0], msgs[1], msgs[-1]])
    with pytest.raises(cf.CompactionBudgetError) as e:
        cf.Compactor(budget=floor - 100).compact(msgs)
    assert "alone take" in str(e.value) and f"{floor - (floor - 100)} over" in str(e.value)
    assert e.value.tokens == floor and e.value.budget == floor - 100

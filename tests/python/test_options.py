"""The objects built once at the boundary: a request read and priced once (`PricedRequest`), the
compaction's and the prune's knobs checked once (`CompactionOptions`, `PruneOptions`), and the
plan's report of what its input already fails."""

from __future__ import annotations

import pickle

import pytest

import contextfold as cf
from contextfold import _core
from transcripts import LOCAL, load_conversations
from wire_shapes import convert


def airline() -> list[dict]:
    conversations = load_conversations(LOCAL, "tau-bench-airline")
    if not conversations:
        pytest.skip("tests/data/tau-bench-airline not found")
    return conversations


def test_a_priced_request_costs_what_the_per_call_functions_charge_for_its_tools_and_system():
    for conv in airline()[:6]:
        tools, system = conv["tools"], conv["messages"][0]["content"]
        request = _core.PricedRequest(model=conv["model"], tools=tools, system=system, format="chat")
        assert request.overhead_tokens == cf.request_overhead(model=conv["model"], tools=tools, system=system)
        assert (request.provider, request.model, request.format) == ("openai", conv["model"], "chat")
        # Verifying against the request prices the history as estimate() does with the same parts.
        tokens, _ = _core.compaction_verify(conv["messages"], request)
        assert tokens == cf.estimate(conv["messages"], model=conv["model"], tools=tools, system=system)


def test_a_session_prices_with_the_request_it_read_once():
    conv = airline()[0]
    s = cf.Session(model=conv["model"], tools=conv["tools"])
    assert s.estimate(conv["messages"]) == cf.estimate(conv["messages"], model=conv["model"], tools=conv["tools"])


def test_a_request_without_a_wire_format_cannot_plan_or_verify():
    request, options = _core.PricedRequest(), _core.CompactionOptions()
    with pytest.raises(ValueError, match="format"):
        _core.compaction_verify([{"role": "user", "content": "hi"}], request)
    with pytest.raises(ValueError, match="format"):
        _core.compaction_plan([{"role": "user", "content": "hi"}], request, options, budget_tokens=10,
                              tail_tokens=5, summary_tokens=5)
    with pytest.raises(ValueError, match="unknown"):
        _core.PricedRequest(format="xml")  # type: ignore[arg-type]


@pytest.mark.parametrize("make", [_core.CompactionOptions, lambda **kw: _core.PruneOptions(protect_tail_tokens=10, **kw)],
                         ids=["compaction", "prune"])
def test_option_objects_check_each_knob_once_naming_it(make):
    with pytest.raises(TypeError, match="min_tail"):
        make(min_tail=True)
    with pytest.raises(ValueError, match="protect_first_n"):
        make(protect_first_n=-1)
    with pytest.raises(ValueError, match="soft_ceiling"):
        make(soft_ceiling=0.5)
    with pytest.raises(ValueError, match="arguments_max_chars"):
        make(arguments_max_chars=3)
    with pytest.raises(TypeError, match="dedupe"):
        make(dedupe=1)
    with pytest.raises(TypeError, match="no_such_knob"):
        make(no_such_knob=1)
    # Counts beyond any history mean "all of it" (clamped, never an overflow).
    make(tool_result_max_tokens=10**40, cache_block_tokens=2**64)


def test_prune_refuses_an_unknown_knob_and_a_bool_count():
    msgs = [{"role": "user", "content": "hi"}]
    with pytest.raises(TypeError, match="tool_result_max"):
        cf.prune(msgs, protect_tail_tokens=10, tool_result_max=5)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="protect_tail_tokens"):
        cf.prune(msgs, protect_tail_tokens=True)


def test_compaction_options_replace_makes_a_new_object_and_keeps_the_original():
    base = _core.CompactionOptions(min_tail=4, tool_result_max_tokens=300, exclude_tools=["memory"])
    harder = base.replace(tool_result_max_tokens=48, arguments_max_chars=64)
    assert (harder.tool_result_max_tokens, harder.arguments_max_chars, harder.min_tail) == (48, 64, 4)
    assert (base.tool_result_max_tokens, base.arguments_max_chars) == (300, 2000)
    with pytest.raises(ValueError, match="min_tail"):
        base.replace(min_tail=0)


def test_the_plan_reports_what_its_input_already_fails_only_when_over_budget():
    # A result whose call is gone (an orphan) and arguments that are not JSON: the input's own.
    history = [
        {"role": "user", "content": "task " * 200},
        {"role": "tool", "tool_call_id": "gone", "content": "x " * 400},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{not json"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "y " * 400},
        *({"role": r, "content": f"turn {i} " * 50} for i, r in zip(range(8), ["user", "assistant"] * 4)),
    ]
    request, options = _core.PricedRequest(format="chat"), _core.CompactionOptions()
    total = cf.estimate(history)
    over = _core.compaction_plan(history, request, options, budget_tokens=total // 2, tail_tokens=total // 4,
                                 summary_tokens=256)
    kinds = sorted((k, i) for k, i, _ in over["input_failures"])
    assert kinds == [("invalid_arguments", 2), ("orphan_result", 1)]
    # The same checks as a verification of the input, but the budget.
    _, failures = _core.compaction_verify(history, request, budget_tokens=total // 2)
    assert sorted((k, i) for k, i, _ in failures if k != "over_budget") == kinds
    within = _core.compaction_plan(history, request, options, budget_tokens=total * 2, tail_tokens=total,
                                   summary_tokens=256)
    assert within["input_failures"] == []


def test_a_compactor_reads_its_tools_once_per_wire_format_and_again_when_they_are_rebound():
    conv = max(airline(), key=lambda c: cf.estimate(c["messages"]))
    history = conv["messages"]
    budget = cf.estimate(history, model=conv["model"], tools=conv["tools"]) // 2
    c = cf.Compactor(model=conv["model"], tools=conv["tools"], budget=budget)
    first = c.compact(history)
    assert first.strategy_used is not None
    request = c._request("chat")
    assert c._request("chat") is request  # built once
    again = c.compact(history)
    assert again.messages == first.messages and c._request("chat") is request
    c.tools = conv["tools"][:1]  # what the integrations do when a request's tools change
    assert c._request("chat") is not request
    assert c._request("chat").overhead_tokens < request.overhead_tokens
    # A pickled compactor builds its core objects again and compacts the same.
    copy = pickle.loads(pickle.dumps(cf.Compactor(model=conv["model"], tools=conv["tools"], budget=budget)))
    assert copy.compact(history).messages == first.messages



def _plan(history: list, costs: list | None = None, reprice: tuple = (), *, fmt: str = "chat") -> dict:
    provider, model = ("gemini", "gemini-3-pro-preview") if fmt == "gemini" else ("openai", "gpt-4o")
    request = _core.PricedRequest(provider=provider, model=model, format=fmt)  # type: ignore[arg-type]
    total = cf.estimate(history, provider=provider, model=model)  # type: ignore[arg-type]
    return _core.compaction_plan(history, request, _core.CompactionOptions(), budget_tokens=total // 3,
                                 tail_tokens=total // 6, summary_tokens=512, masks=False, check_input=False,
                                 costs=costs, reprice=list(reprice))


def _signed_late(history: list) -> list:
    """The Gemini history with a Vertex AI thought signature (field 1) on a call past the first
    32 messages: a Gemini 3 model named without its platform is priced differently from there."""
    out = convert(history, "gemini")
    m = next(m for m in out[32:] if m["role"] == "model" and any("functionCall" in p for p in m["parts"]))
    next(p for p in m["parts"] if "functionCall" in p)["thoughtSignature"] = "CiQB" * 40
    return out


@pytest.mark.parametrize("fmt", ["chat", "gemini"])
def test_a_plan_given_the_first_plans_costs_prices_only_the_changed_messages_as_a_fresh_plan_would(fmt):
    # The tail fill plans a history it planned already: the costs are taken, not priced again.
    # The longest dialogues with a call past the first 32 messages (where the signature goes).
    longest = [c for c in sorted(airline(), key=lambda c: -len(c["messages"]))
               if any(m.get("tool_calls") for m in c["messages"][32:])][:4]
    assert len(longest) == 4
    for conv in longest:
        history = _signed_late(conv["messages"]) if fmt == "gemini" else conv["messages"]
        first = _plan(history, fmt=fmt)
        assert _plan(history, first["costs"], fmt=fmt) == first
        # Two messages changed (tool outputs cut, as the fill cuts one), one before the
        # signature and one after: only they are priced again, each as a fresh plan prices it.
        key, cut = ("parts", [{"text": "cut"}]) if fmt == "gemini" else ("content", "cut")
        changed = [dict(m) for m in history]
        picks = (max(range(1, 32), key=lambda k: first["costs"][k]),
                 max(range(32, len(history)), key=lambda k: first["costs"][k]))
        for i in picks:
            changed[i][key] = cut
        fresh = _plan(changed, fmt=fmt)
        assert _plan(changed, first["costs"], picks, fmt=fmt) == fresh
        assert all(fresh["costs"][i] < first["costs"][i] for i in picks)
    if fmt == "gemini":
        # The signature does move the prices after it (what the reuse must not lose).
        plain = _plan(convert(longest[0]["messages"], "gemini"), fmt=fmt)["costs"]
        signed = _plan(_signed_late(longest[0]["messages"]), fmt=fmt)["costs"]
        assert plain[:32] == signed[:32] and plain[32:] != signed[32:]


def test_a_plan_refuses_costs_that_do_not_match_its_history():
    history = airline()[0]["messages"]
    costs = _plan(history)["costs"]
    with pytest.raises(ValueError, match=f"costs has {len(costs) - 1} entries for {len(history)} messages"):
        _plan(history, costs[:-1])
    with pytest.raises(ValueError, match=f"reprice names message {len(history)}"):
        _plan(history, costs, (len(history),))

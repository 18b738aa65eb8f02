"""The tail walk and pruning: invariants on generated histories and on the real transcripts."""

from __future__ import annotations

import copy
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import contextfold as cf
from transcripts import LOCAL, SHARED, load_conversations, shared_available

# --- helpers ---------------------------------------------------------------------------------


def call_positions(msgs: list) -> dict[str, int]:
    pos = {}
    for i, m in enumerate(msgs):
        for c in m.get("tool_calls") or []:
            pos[c["id"]] = i
        if isinstance(m.get("content"), list):
            for p in m["content"]:
                if isinstance(p, dict) and p.get("type") == "tool_use":
                    pos[p["id"]] = i
    return pos


def result_ids(m: dict) -> list[str]:
    ids = [m["tool_call_id"]] if m.get("tool_call_id") else []
    if isinstance(m.get("content"), list):
        ids += [p["tool_use_id"] for p in m["content"] if isinstance(p, dict) and p.get("type") == "tool_result"]
    return ids


def splits_a_group(msgs: list, cut: int) -> bool:
    """True when a result at or after `cut` answers a call before `cut`."""
    pos = call_positions(msgs)
    return any(pos.get(rid, cut) < cut for m in msgs[cut:] for rid in result_ids(m))


def assert_valid(msgs: list) -> None:
    """The checks a history must pass before and after pruning."""
    cf.estimate_each(msgs)  # parses: raises InvalidMessageError otherwise
    seen: set[str] = set()
    for m in msgs:
        for rid in result_ids(m):
            assert rid in seen or rid not in call_positions(msgs), f"result {rid} before its call"
        for c in m.get("tool_calls") or []:
            json.loads(c["function"]["arguments"])
            seen.add(c["id"])
        if isinstance(m.get("content"), list):
            for p in m["content"]:
                if isinstance(p, dict) and p.get("type") == "tool_use":
                    seen.add(p["id"])


# --- generated histories ---------------------------------------------------------------------

text = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=3000)


@st.composite
def histories(draw) -> list:
    msgs: list = [{"role": "system", "content": draw(text)}]
    n = 0
    for _ in range(draw(st.integers(0, 25))):
        kind = draw(st.sampled_from(["user", "assistant", "calls", "anthropic"]))
        if kind in ("user", "assistant"):
            msgs.append({"role": kind, "content": draw(text)})
        elif kind == "calls":
            k = draw(st.integers(1, 4))
            ids = [f"call_{n}_{j}" for j in range(k)]
            n += 1
            args = [json.dumps({"path": draw(text), "n": j}) for j in range(k)]
            msgs.append({"role": "assistant", "content": None, "tool_calls": [
                {"id": i, "type": "function", "function": {"name": "read", "arguments": a}} for i, a in zip(ids, args)
            ]})
            for i in ids:
                msgs.append({"role": "tool", "tool_call_id": i, "content": draw(text) * draw(st.integers(1, 20))})
        else:
            tid = f"toolu_{n}"
            n += 1
            msgs.append({"role": "assistant", "content": [{"type": "tool_use", "id": tid, "name": "grep", "input": {"q": draw(text)}}]})
            msgs.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": tid, "content": draw(text) * 5}]})
    return msgs


SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@SETTINGS
@given(histories(), st.integers(0, 20_000), st.integers(0, 3), st.integers(1, 5), st.floats(1.0, 3.0))
def test_tail_walk_invariants(msgs, budget, head_n, min_tail, ceiling):
    start = cf.find_tail_start(msgs, budget_tokens=budget, protect_first_n=head_n, min_tail=min_tail, soft_ceiling=ceiling)
    # A list is walked from its end (O(tail)); any other sequence in full: same answer.
    full = cf.find_tail_start(tuple(msgs), budget_tokens=budget, protect_first_n=head_n, min_tail=min_tail, soft_ceiling=ceiling)
    assert start == full
    n = len(msgs)
    head = min(head_n, n)
    while head < n and splits_a_group(msgs, head):
        head += 1
    assert head <= start <= n
    assert not splits_a_group(msgs, start)
    if start > head:  # something to summarize: the floor holds
        assert n - start >= min_tail
        costs = cf.estimate_each(msgs)
        tail = sum(costs[start:])
        # Within the ceiling, unless the floor or a tool group forced more (then the tail is
        # at most the floor or one group larger than any legal shorter tail).
        later_legal = [i for i in range(start + 1, n - min_tail + 1) if not splits_a_group(msgs, i)]
        assert tail <= budget * ceiling or not later_legal or sum(costs[later_legal[0]:]) <= budget * ceiling
    else:
        assert n - head < min_tail + 1 or not any(
            not splits_a_group(msgs, i) for i in range(head + 1, n - min_tail + 1)
        )


@SETTINGS
@given(histories(), st.integers(0, 5_000), st.integers(64, 400), st.booleans())
def test_prune_never_mutates_and_output_stays_valid(msgs, budget, max_args, cache):
    before = copy.deepcopy(msgs)
    ids = [id(m) for m in msgs]
    out = cf.prune(msgs, protect_tail_tokens=budget, arguments_max_chars=max_args, tool_result_max_tokens=50,
                   cache_block_tokens=2_000 if cache else 0)
    assert msgs == before and [id(m) for m in msgs] == ids
    assert len(out) == len(msgs)
    assert_valid(out)
    start = cf.find_tail_start(msgs, budget_tokens=budget)
    for a, b in zip(msgs[start:], out[start:]):
        assert a is b  # the protected tail is the caller's own objects
    assert out[0] is msgs[0]
    # Every arguments string is the caller's own, or shortened to at most max_args characters.
    for m_in, m_out in zip(msgs, out):
        for c_in, c_out in zip(m_in.get("tool_calls") or [], m_out.get("tool_calls") or []):
            new, old = c_out["function"]["arguments"], c_in["function"]["arguments"]
            assert new == old or len(new) <= max_args < len(old)


# --- hand-made cases -------------------------------------------------------------------------


def test_large_old_tool_output_becomes_a_placeholder_naming_the_tool():
    call = {"id": "call_1", "type": "function", "function": {"name": "run_tests", "arguments": "{}"}}
    msgs = [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": "fix it"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "call_1", "content": "FAILED test_x\n" * 5000},
        {"role": "assistant", "content": "I see."},
        {"role": "user", "content": "go on"},
        {"role": "assistant", "content": "ok"},
        {"role": "user", "content": "thanks"},
    ]
    out = cf.prune(msgs, protect_tail_tokens=50)
    assert "run_tests returned 70,000 bytes" in out[3]["content"]
    assert cf.estimate(out) < cf.estimate(msgs) / 20


def test_repeated_output_becomes_a_pointer_and_images_a_placeholder():
    png = "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAoAAAAHgCAYAAAA1"
    out_text = "same long directory listing\n" * 10
    msgs = [{"role": "system", "content": "s"}]
    for k in range(3):
        msgs += [
            {"role": "assistant", "content": None, "tool_calls": [{"id": f"c{k}", "type": "function", "function": {"name": "ls", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": f"c{k}", "content": out_text},
            {"role": "user", "content": [{"type": "text", "text": "look"}, {"type": "image_url", "image_url": {"url": png}}]},
        ]
    msgs += [{"role": "assistant", "content": "a"}, {"role": "user", "content": "b"}, {"role": "assistant", "content": "c"}]
    out = cf.prune(msgs, protect_tail_tokens=10)
    assert out[2]["content"].startswith("[same output as message 8")
    assert out[3]["content"][1] == {"type": "text", "text": "[image omitted: 640x480]"}
    assert msgs[3]["content"][1]["type"] == "image_url"


def test_truncated_args_stay_valid_json():
    args = json.dumps({"path": "/src/app.py", "content": "x = 1\n" * 5000, "mode": "w"})
    msgs = [
        {"role": "system", "content": "s"},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "c", "type": "function", "function": {"name": "write_file", "arguments": args}}]},
        {"role": "tool", "tool_call_id": "c", "content": "ok"},
        {"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}, {"role": "user", "content": "c"},
    ]
    out = cf.prune(msgs, protect_tail_tokens=5, arguments_max_chars=500)
    new = out[1]["tool_calls"][0]["function"]["arguments"]
    assert len(new) <= 500 and isinstance(json.loads(new), dict)
    assert msgs[1]["tool_calls"][0]["function"]["arguments"] == args


def test_anthropic_tool_result_blocks_are_pruned_in_a_copy():
    msgs = [
        {"role": "user", "content": "task"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "grep", "input": {"q": "x"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "match\n" * 3000}]},
        {"role": "assistant", "content": "found"}, {"role": "user", "content": "more"}, {"role": "assistant", "content": "done"},
    ]
    before = copy.deepcopy(msgs)
    out = cf.prune(msgs, protect_tail_tokens=10, provider="anthropic")
    assert "grep returned" in out[2]["content"][0]["content"]
    assert msgs == before


def test_bad_options_raise_value_errors():
    with pytest.raises(ValueError):
        cf.find_tail_start([], budget_tokens=10, soft_ceiling=0.5)
    with pytest.raises(ValueError):
        cf.prune([], protect_tail_tokens=10, arguments_max_chars=3)
    with pytest.raises(cf.InvalidMessageError):
        cf.prune([{"role": "user", "content": 5}], protect_tail_tokens=10)


# --- real transcripts ------------------------------------------------------------------------

ROOTS = [pytest.param(LOCAL, id="tests-data"), pytest.param(SHARED, id="shared-data")]


@pytest.mark.parametrize("root", ROOTS)
def test_invariants_on_real_conversations_at_several_budgets(root):
    if root == SHARED and not shared_available():
        pytest.skip(f"full transcripts not found at {SHARED}")
    convs = load_conversations(root, "tau-bench-airline") + load_conversations(root, "mini-swe-agent-gemini3")
    assert convs
    checked = 0
    for conv in convs:
        msgs = conv["messages"]
        provider = "gemini" if "gemini" in conv["source"] else "openai"
        for budget in (500, 2_000, 8_000, 32_000):
            start = cf.find_tail_start(msgs, budget_tokens=budget, provider=provider)
            assert start == cf.find_tail_start(tuple(msgs), budget_tokens=budget, provider=provider)
            assert not splits_a_group(msgs, start)
            assert start == 1 or len(msgs) - start >= 3
            out = cf.prune(msgs, protect_tail_tokens=budget, provider=provider)
            assert_valid(out)
            assert all(a is b for a, b in zip(msgs[start:], out[start:]))
            assert cf.estimate(out, provider=provider) <= cf.estimate(msgs, provider=provider)
            checked += 1
    assert checked >= 4 * len(convs)


def test_apply_edits_removes_blocks_after_replacing_and_never_touches_the_input() -> None:
    from contextfold.prune import apply_edits

    msg = {"role": "assistant", "content": [
        {"type": "thinking", "thinking": "a", "signature": "s1"},
        {"type": "text", "text": "hello"},
        {"type": "thinking", "thinking": "b", "signature": "s2"},
        {"type": "tool_use", "id": "t", "name": "f", "input": {"x": "y" * 50}},
    ]}
    history = [msg]
    snapshot = copy.deepcopy(history)
    # removals name positions of the original list; the replacement at 3 lands first
    out = apply_edits(history, [(0, ["content", 0], None), (0, ["content", 3, "input"], {"x": "…"}),
                                (0, ["content", 2], None)])
    assert history == snapshot
    assert [b["type"] for b in out[0]["content"]] == ["text", "tool_use"]
    assert out[0]["content"][1]["input"] == {"x": "…"}


@pytest.mark.parametrize("input_chars", [1_500, 3_600])
def test_clear_tool_inputs_clears_inputs_over_the_arguments_cap_too(input_chars: int) -> None:
    """``clear_tool_inputs`` shrinks the arguments of every call whose output was masked to a
    few dozen characters: inputs over ``arguments_max_chars`` (2,000) were shrunk to that first
    and then left so (a mask of ten 3,600-character file writes came out 50% over its budget,
    the same as without the flag)."""
    import json

    msgs = [{"role": "system", "content": "You write files."}, {"role": "user", "content": "Write the ten modules."}]
    for k in range(10):
        args = json.dumps({"path": f"src/mod_{k}.py", "content": f"# module {k}\n" + "x = 1\n" * (input_chars // 6)})
        msgs.append({"role": "assistant", "content": None, "tool_calls": [
            {"id": f"w{k}", "type": "function", "function": {"name": "write_file", "arguments": args}}]})
        msgs.append({"role": "tool", "tool_call_id": f"w{k}", "content": f"wrote src/mod_{k}.py\n" + "ok line\n" * 150})
    budget = int(cf.estimate(msgs) * 0.4)
    plain = cf.Compactor(budget=budget, strategy="mask").compact(msgs)
    cleared = cf.Compactor(budget=budget, strategy="mask", clear_tool_inputs=True).compact(msgs)
    assert cleared.tokens_after <= budget < plain.tokens_after
    # (What the cleared inputs freed beyond the budget went back to their outputs.)
    shrunk = [len(cleared.messages[p.index]["tool_calls"][0]["function"]["arguments"])
              for p in cleared.pruned if p.kind == "arguments"]
    assert shrunk and max(shrunk) <= 80, shrunk
    for m in cleared.messages:
        for c in m.get("tool_calls") or ():
            json.loads(c["function"]["arguments"])

"""The Compactor: one test per report of today's tools, role placement, formats, real transcripts."""

from __future__ import annotations

import asyncio
import copy
import json

import pytest

import contextfold as cf
from transcripts import LOCAL, SHARED, load_conversations, load_requests, shared_available
from compaction_shapes import convert, same_role_pairs, shape_problems

OPEN, CLOSE = cf._core.SUMMARY_MARKERS


def tau() -> list[dict]:
    return load_conversations(LOCAL, "tau-bench-airline")


def swe() -> list[dict]:
    return load_conversations(LOCAL, "mini-swe-agent-gemini3")


def agent_history(turns: int, *, output: str = "line of tool output\n" * 200, memory_every: int = 0) -> list[dict]:
    """A chat agent: system, task, then call / result turns (a `memory` tool now and then)."""
    msgs: list[dict] = [
        {"role": "system", "content": "You are a coding agent. RULE: never push to main."},
        {"role": "user", "content": "Fix the failing test in src/app/parser.py. Constraint: keep the public API."},
    ]
    for k in range(turns):
        name = "memory" if memory_every and k % memory_every == 0 else "read_file"
        args = {"key": f"note{k}"} if name == "memory" else {"path": f"src/app/mod{k}.py"}
        msgs.append({"role": "assistant", "content": None, "tool_calls": [
            {"id": f"call_{k}", "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}]})
        body = f"MEMORY {k}: the parser must accept unicode\n" * 80 if name == "memory" else output + f"(end of output {k})"
        msgs.append({"role": "tool", "tool_call_id": f"call_{k}", "content": body})
    msgs.append({"role": "assistant", "content": "Working on it."})
    msgs.append({"role": "user", "content": "Any progress?"})
    return msgs


def check(result: cf.CompactionResult, original: list, snapshot: list, fmt: str = "chat") -> None:
    """What every compaction guarantees."""
    assert original == snapshot, "the caller's history was altered"
    assert result.messages is not original
    assert shape_problems(result.messages, fmt) == []
    if result.strategy_used == "summarize":
        assert result.tokens_after <= result.budget


# -- what users of today's tools report -----------------------------------------------------


def test_goal_and_rules_survive_two_compactions_codex_19910():
    msgs = agent_history(40)
    snap = copy.deepcopy(msgs)
    c = cf.Compactor(budget=6_000, strategy="summarize")
    r1 = c.compact(msgs)
    check(r1, msgs, snap)
    assert r1.messages[0] is msgs[0] and r1.messages[1] is msgs[1], "system and task kept as the same objects"
    grown = r1.messages + agent_history(30)[2:]
    r2 = c.compact(grown)
    assert r2.strategy_used == "summarize"
    assert r2.messages[0] is msgs[0] and r2.messages[1] is msgs[1]
    assert "never push to main" in r2.messages[0]["content"]
    assert "keep the public API" in r2.messages[1]["content"]


def test_rules_stated_later_survive_when_pinned_by_predicate():
    msgs = agent_history(40)
    rule = {"role": "user", "content": "From now on: ALWAYS run the linter before committing."}
    msgs.insert(10, rule)
    msgs.insert(11, {"role": "assistant", "content": "Understood."})
    c = cf.Compactor(budget=5_000, strategy="summarize", pinned=lambda m: "ALWAYS" in str(m.get("content")))
    r = c.compact(msgs)
    assert r.strategy_used == "summarize"
    assert any(m is rule for m in r.messages), "the pinned message is kept verbatim"
    assert 10 in r.kept and 10 not in r.removed
    assert shape_problems(r.messages, "chat") == [] and same_role_pairs(r.messages) == 0


def test_compaction_does_not_repeat_every_few_turns_claude_code_60600():
    """Big tool outputs refill the window; each compaction must leave room for many turns."""
    window = 60_000
    c = cf.Compactor(context_window=window)
    history = agent_history(2)
    compacted_at = []
    for turn in range(150):
        history = history + agent_history(1, output="x = compute(y) # big output\n" * 450)[2:4]
        if c.should_compact(history):
            r = c.compact(history)
            assert r.changed, r.reason
            assert r.tokens_after <= c.budget
            compacted_at.append(turn)
            history = r.messages
    gaps = [b - a for a, b in zip(compacted_at, compacted_at[1:])]
    assert len(compacted_at) >= 3
    # Each turn adds ~3k tokens; the budget is half the trigger, so >= ~7 turns between.
    assert min(gaps) >= 6, compacted_at


def test_anti_thrash_backs_off_when_little_can_be_freed():
    msgs = agent_history(12)
    everything_pinned = cf.Compactor(budget=2_000, strategy="summarize", pinned=list(range(2, len(msgs) - 2)))
    # (Over its budget with every message of the middle pinned: nothing can be folded or cut.)
    with pytest.raises(cf.CompactionBudgetError, match="every message of the middle is pinned"):
        everything_pinned.compact(msgs)
    # Only two turns can be folded: the compaction frees a small share (~15-20%, as priced);
    # asked to free more than that, it backs off.
    loose = cf.Compactor(budget=10_000, strategy="summarize", pinned=list(range(6, len(msgs))), min_free_share=0.0)
    freed = loose.compact(msgs)
    assert freed.changed
    share = (freed.tokens_before - freed.tokens_after) / freed.tokens_before
    assert share < 0.3
    c = cf.Compactor(budget=10_000, strategy="summarize", pinned=list(range(6, len(msgs))),
                     min_free_share=share + 0.05, context_window=200_000)
    r = c.compact(msgs)
    assert not r.changed and r.reason is not None and r.reason.startswith("compaction skipped"), r.reason
    assert r.messages == msgs and r.messages is not msgs
    # The gate stays closed until the history has grown by min_free_share of the trigger.
    assert not c.should_compact(msgs + agent_history(1)[2:4])
    # Too little to free for the caller's clear_at_least.
    strict = cf.Compactor(budget=10_000, strategy="summarize", pinned=list(range(6, len(msgs))),
                          min_free_share=0.0, clear_at_least=50_000)
    assert "clear_at_least" in strict.compact(msgs).reason


def test_one_conversation_s_back_off_never_gates_another_served_by_the_same_compactor():
    # A framework hook serves many conversations with one Compactor: a conversation whose
    # compaction would free too little backs off its own gate, not every other conversation's.
    def chat(tag: str, turns: int) -> list[dict]:
        msgs = [{"role": "system", "content": f"You are agent {tag}."}, {"role": "user", "content": f"Task {tag}."}]
        for k in range(turns):
            msgs += [{"role": "assistant", "content": f"step {k} of {tag} " + "words " * 300},
                     {"role": "user", "content": "go on"}]
        return msgs

    c = cf.Compactor(context_window=200_000, trigger=("tokens", 20_000), budget=19_000, min_free_share=0.2)
    little, other = chat("A", 59), chat("B", 60)
    assert c.should_compact(little) and c.should_compact(other)
    r = c.compact(little)
    assert not r.changed and r.reason.startswith("compaction skipped"), r.reason
    assert not c.should_compact(little)  # its own gate backs off
    assert c.should_compact(other)  # was False: the other conversation's back-off closed it
    # Another conversation's compaction leaves this one's back-off in place.
    assert c.compact(chat("B", 90)).changed
    assert not c.should_compact(little)


def test_excluded_tool_output_is_never_masked_claude_code_57788():
    msgs = agent_history(30, memory_every=5)
    for strategy in ("mask", "hybrid"):
        c = cf.Compactor(budget=20_000, strategy=strategy, exclude_tools=["memory"], tail_tokens=2_000)
        r = c.compact(msgs)
        assert r.strategy_used == "mask"
        memory_results = {f"call_{k}" for k in range(0, 30, 5)}
        for m in r.messages:
            if m.get("tool_call_id") in memory_results:
                assert m["content"].startswith("MEMORY"), m["content"][:80]
        assert any("output pruned" in str(m.get("content")) for m in r.messages)
    unprotected = cf.Compactor(budget=20_000, strategy="mask", tail_tokens=2_000).compact(msgs)
    assert any(m.get("tool_call_id") == "call_0" and "pruned" in m["content"] for m in unprotected.messages)


def test_keep_last_tool_uses_whole():
    msgs = agent_history(30)
    r = cf.Compactor(budget=20_000, strategy="mask", keep=5, tail_tokens=1).compact(msgs)
    kept_whole = [m for m in r.messages if m.get("role") == "tool" and "pruned" not in m["content"]]
    assert [m["tool_call_id"] for m in kept_whole][-5:] == [f"call_{k}" for k in range(25, 30)]


def test_no_orphan_tool_results_on_real_dialogues_langchain_34282():
    checked = 0
    for conv in tau():
        msgs, tools = conv["messages"], conv["tools"]
        before = cf.estimate(msgs, tools=tools)
        for share in (0.6, 0.8):
            c = cf.Compactor(budget=int(before * share), tools=tools, strategy="summarize")
            snap = copy.deepcopy(msgs)
            try:
                r = c.compact(msgs)
            except cf.CompactionBudgetError as e:
                assert e.tokens > e.budget
                continue
            check(r, msgs, snap)
            ids = {c["id"] for m in r.messages for c in m.get("tool_calls") or []}
            assert all(m["tool_call_id"] in ids for m in r.messages if m.get("role") == "tool")
            checked += r.changed
    assert checked > 0, "no dialogue was compacted: nothing was checked"


def test_head_stays_byte_identical_and_masking_grows_in_blocks():
    """Rewriting old results every turn breaks the cached prefix: it must not move per turn."""
    c = cf.Compactor(budget=200_000, strategy="mask", tail_tokens=8_000, cache_block_tokens=10_000)
    history = agent_history(10)
    sent: list[str] = []
    for _ in range(40):
        history = history + agent_history(1)[2:4]
        r = c.compact(history) if cf.estimate(history) > 20_000 else None
        out = r.messages if r is not None and r.changed else history
        sent.append(json.dumps(out))
    # Between block crossings the request grows by appending: the previous one is a prefix.
    appended = sum(1 for a, b in zip(sent, sent[1:]) if b.startswith(a[:-1]))
    assert appended >= 0.7 * (len(sent) - 1), appended


# -- placement and roles -------------------------------------------------------------------


def text_turns(n: int, first: str = "assistant") -> list[dict]:
    other = {"assistant": "user", "user": "assistant"}
    out, role = [], first
    for k in range(n):
        out.append({"role": role, "content": f"turn {k}: " + "words " * 300})
        role = other[role]
    return out


@pytest.mark.parametrize("protect", [1, 3])
def test_summary_role_never_collides(protect):
    """protect 1: the head ends with the user's task; protect 3: with an assistant turn. Across
    budgets the tail starts with either role: head, tail and double collisions all occur."""
    msgs = [{"role": "system", "content": "sys"}, {"role": "user", "content": "the task"}] + text_turns(22)
    seen = set()
    for budget in range(1_500, 5_000, 250):
        r = cf.Compactor(budget=budget, strategy="summarize", protect_first_n=protect).compact(msgs)
        assert r.strategy_used == "summarize"
        assert same_role_pairs(r.messages) == 0, [m["role"] for m in r.messages]
        at = [i for i, m in enumerate(r.messages) if OPEN in str(m.get("content"))]
        assert len(at) == 1
        s = at[0]
        merged = r.messages[s]["content"] != f"{OPEN}\n{r.summary}\n{CLOSE}"
        seen.add((r.messages[s - 1]["role"], "merged" if merged else r.messages[s]["role"]))
    expected_head_role = "user" if protect == 1 else "assistant"
    assert all(prev in (expected_head_role, "system") or merged == "merged" for prev, merged in seen), seen
    assert len(seen) >= 1


def test_double_collision_merges_into_a_neighbour_when_the_tail_cannot_move():
    # Strict alternation except one spot where head last and tail first differ and no nearby
    # legal cut helps: the summary is merged into the tail's first (user) message.
    msgs = [{"role": "user", "content": "the task"}]
    msgs += text_turns(12, "assistant")
    r = cf.Compactor(budget=2_500, strategy="summarize", provider="anthropic", min_tail=3).compact(msgs)
    assert r.strategy_used == "summarize"
    assert shape_problems(r.messages, "anthropic") == []
    assert same_role_pairs(r.messages) == 0


def test_anthropic_user_first_and_tool_result_right_after_tool_use():
    checked = raised = 0
    for conv in tau()[:8]:
        chat = conv["messages"]
        msgs, system = convert(chat, "anthropic")
        before = cf.estimate(msgs, provider="anthropic", system=system)
        snap = copy.deepcopy(msgs)
        for share in (0.5, 0.7):
            c = cf.Compactor(provider="anthropic", budget=int(before * share), system=system, strategy="summarize")
            try:
                r = c.compact(msgs)
            except cf.CompactionBudgetError as e:
                assert e.tokens > e.budget
                raised += 1
                continue
            check(r, msgs, snap, "anthropic")
            assert r.messages[0]["role"] == "user"
            checked += r.changed
    # A raise on every case would check nothing: most of the 16 cases must compact.
    assert checked >= 8, (checked, raised)


def thinking_history() -> list[dict]:
    msgs: list[dict] = [{"role": "user", "content": "Plan the migration of the billing database."}]
    for k in range(14):
        msgs.append({"role": "assistant", "content": [
            {"type": "thinking", "thinking": f"step {k}: consider the schema " * 40, "signature": f"sig{k}" + "A" * 200},
            {"type": "tool_use", "id": f"toolu_{k}", "name": "run_sql", "input": {"query": f"SELECT * FROM t{k}"}}]})
        msgs.append({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": f"toolu_{k}", "content": "row\n" * 300}]})
    return msgs


def test_thinking_blocks_stay_byte_identical_or_go_whole():
    msgs = thinking_history()
    snap = copy.deepcopy(msgs)
    originals = {json.dumps(b, sort_keys=True) for m in msgs if isinstance(m["content"], list)
                 for b in m["content"] if b.get("type") == "thinking"}
    for strategy in ("mask", "summarize", "hybrid"):
        c = cf.Compactor(provider="anthropic", budget=6_000, strategy=strategy, keep_thinking_turns=2)
        r = c.compact(msgs)
        assert r.changed, r.reason
        check(r, msgs, snap, "anthropic")
        out = [b for m in r.messages if isinstance(m["content"], list) for b in m["content"] if b.get("type") == "thinking"]
        assert out, strategy
        assert all(json.dumps(b, sort_keys=True) in originals for b in out)
    masked = cf.Compactor(provider="anthropic", budget=3_000, strategy="mask", keep_thinking_turns=2,
                          tail_tokens=100).compact(msgs)
    with_thinking = [i for i, m in enumerate(masked.messages)
                     if any(b.get("type") == "thinking" for b in m["content"] if isinstance(m["content"], list))]
    assert len(with_thinking) == 2 and with_thinking[-1] == len(msgs) - 2
    assert any(p.kind == "drop_part" for p in masked.pruned)


@pytest.mark.parametrize("recoverable", [False, True])
def test_room_left_after_masking_never_brings_dropped_thinking_back(recoverable):
    # Masking frees more than the budget asks; what it frees beyond goes back to the masked
    # outputs, never to the thinking blocks keep_thinking_turns dropped (before the fix, 5-6
    # assistant turns of 10 got theirs back).
    msgs = thinking_history()
    snap = copy.deepcopy(msgs)
    budget = int(cf.estimate(msgs, provider="anthropic") * 0.7)
    r = cf.Compactor(provider="anthropic", budget=budget, strategy="mask", keep_thinking_turns=1,
                     recoverable=recoverable).compact(msgs)
    check(r, msgs, snap, "anthropic")
    with_thinking = [i for i, m in enumerate(r.messages)
                     if isinstance(m["content"], list) and any(b.get("type") == "thinking" for b in m["content"])]
    assert with_thinking == [len(msgs) - 2], r.notes
    # The room was given back to outputs (the give-back ran), not left for the thinking.
    assert any(n.startswith("masking left room") for n in r.notes), r.notes


def test_server_compaction_items_are_kept_verbatim():
    chat = agent_history(20)
    items, _ = convert(chat, "responses")
    item = {"type": "compaction", "id": "cmp_1", "encrypted_content": "gAAAA" + "x" * 3000}
    items.insert(3, item)
    r = cf.Compactor(budget=5_000, strategy="summarize").compact(items)
    assert r.strategy_used == "summarize"
    assert any(m is item for m in r.messages)
    assert 3 in r.kept and 3 not in r.removed
    assert shape_problems(r.messages, "responses") == []
    # Anthropic compaction block.
    msgs = thinking_history()
    block = {"role": "assistant", "content": [{"type": "compaction", "content": "summary by the server"}]}
    msgs[3:3] = [block, {"role": "user", "content": "continue"}]
    r = cf.Compactor(provider="anthropic", budget=5_000, strategy="summarize").compact(msgs)
    assert any(m is block for m in r.messages)


def reasoning_loop(turns: int = 8) -> list[dict]:
    """Responses items of a reasoning model's tool loop: each call preceded by its reasoning."""
    h: list[dict] = [{"role": "developer", "content": "be nice"}, {"role": "user", "content": "Task: fix"}]
    for t in range(turns):
        h.append({"type": "reasoning", "id": f"rs_{t}", "summary": [], "encrypted_content": "gAAAA" + "Q" * 600})
        h.append({"type": "function_call", "id": f"fc_{t}", "call_id": f"call_{t}", "name": "read_file",
                  "arguments": json.dumps({"p": t})})
        h.append({"type": "function_call_output", "call_id": f"call_{t}", "output": "w " * 500})
    h.append({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "done"}]})
    h.append({"role": "user", "content": "next"})
    return h


def test_a_kept_reasoning_item_keeps_the_item_it_precedes():
    h = reasoning_loop()
    budget = int(cf.estimate(h) * 0.4)
    reasoning = [i for i, m in enumerate(h) if m.get("type") == "reasoning"]
    # The head ends on a reasoning item; a pinned reasoning item.
    for kw in [dict(protect_first_n=3), *({"pinned": [i]} for i in reasoning[1:4])]:
        r = cf.Compactor(budget=budget, strategy="summarize", wire_format="responses", **kw).compact(h)
        assert r.strategy_used == "summarize", (kw, r.reason)
        assert shape_problems(r.messages, "responses") == [], kw
        for i in kw.get("pinned", [2]):
            assert any(m is h[i] for m in r.messages) and any(m is h[i + 1] for m in r.messages), kw


def preamble_loop(turns: int = 6) -> list[dict]:
    """Responses items of gpt-5 with preambles: each turn's reasoning, a message saying what it
    will do, then the call (all three items of one response), then the call's output."""
    h: list[dict] = [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Fix it. " * 40}]}]
    for t in range(turns):
        h.append({"type": "reasoning", "id": f"rs_{t}", "summary": [], "encrypted_content": "gAAAA" + "x" * 400})
        h.append({"type": "message", "role": "assistant", "id": f"msg_{t}", "status": "completed",
                  "content": [{"type": "output_text", "text": f"Let me look at part {t}. " * 30, "annotations": []}]})
        h.append({"type": "function_call", "id": f"fc_{t}", "call_id": f"call_{t}", "name": "bash",
                  "arguments": json.dumps({"cmd": f"cat part{t}.py"}), "status": "completed"})
        h.append({"type": "function_call_output", "call_id": f"call_{t}", "output": f"line {t}\n" * 150})
    return h


def test_a_call_after_a_preamble_message_keeps_the_reasoning_item_of_its_response():
    # OpenAI refuses a function_call item without the reasoning item of its response ("Item
    # 'fc_..' of type 'function_call' was provided without its required 'reasoning' item"). A tail
    # opening between the preamble message and the call sent it so: 17 of the 162 compactions
    # below (budgets 600..5,900 by 100, three strategies).
    h = preamble_loop()
    compacted = 0
    for budget in range(600, 6000, 100):
        for strategy in ("summarize", "hybrid", "mask"):
            # (None raises: a raise fails the test.)
            r = cf.Compactor(budget=budget, strategy=strategy).compact(h)
            ids = {m.get("id") for m in r.messages}
            compacted += r.strategy_used is not None
            for m in r.messages:
                if m.get("type") == "function_call":
                    assert "rs_" + m["id"][3:] in ids, (budget, strategy, m["id"])
            assert shape_problems(r.messages, "responses") == [], (budget, strategy)
    # (Measured: 132 of the 162 runs change the history; the other 30, every strategy at the
    # budgets of 5,000 and up, find the 4,927-token history under the budget; none raises.)
    assert compacted == 132, compacted


def test_recorded_responses_reasoning_stays_with_its_item_wherever_the_head_ends():
    # The Responses requests pydantic-ai recorded with reasoning items, the head ending on each.
    seen = over = 0
    for rq in load_requests(LOCAL, with_usage=False):
        items = rq.messages
        if rq.api != "responses" or not any(isinstance(m, dict) and m.get("type") == "reasoning" for m in items):
            continue
        before = cf.estimate(items)
        for i, m in enumerate(items):
            if m.get("type") != "reasoning":
                continue
            try:
                r = cf.Compactor(budget=max(200, before // 2), strategy="summarize", wire_format="responses",
                                 protect_first_n=i + 1, min_tail=1).compact(items)
            except cf.CompactionBudgetError:
                over += 1
                continue
            assert shape_problems(r.messages, "responses") == [], (rq.source, i)
            seen += 1
    # (The bundled subset holds 9 such requests, one reasoning item each: 4 are under their
    # budget. In the 5 others the head holds the whole response of its reasoning item
    # (reasoning, tool search, its output, a function call, which needs that reasoning item)
    # and costs more than their budget of 200 tokens; 2 of them, whose head is the whole
    # history, came back unchanged over it before stop 55, and now raise as the other 3 do.)
    assert seen >= 4 and seen + over >= 9, (seen, over)


def agents_sdk_items(turns: int, big_from: int) -> list[dict]:
    """Items as the OpenAI Agents SDK stores a reasoning model's session: per turn the request,
    reasoning, two parallel calls and their outputs, reasoning again, the answer."""
    items: list[dict] = []
    for t in range(turns):
        think = {"type": "reasoning", "summary": [{"type": "summary_text", "text": "thinking " * 20}],
                 "encrypted_content": "ENC" * 200}
        items += [{"role": "user", "content": f"Task {t}: read files"}, {**think, "id": f"rs_{t}a"}]
        items += [{"type": "function_call", "id": f"fc_{t}{k}", "call_id": f"call_{t}{k}", "name": "read_file",
                   "arguments": json.dumps({"path": f"{k}{t}.py"}), "status": "completed"} for k in "fg"]
        items += [{"type": "function_call_output", "call_id": f"call_{t}{k}",
                   "output": f"{k}{t}.py: " + "lorem ipsum " * (700 if t >= big_from else 10)} for k in "fg"]
        items += [{**think, "id": f"rs_{t}b"},
                  {"type": "message", "id": f"msg_{t}", "role": "assistant", "status": "completed",
                   "content": [{"type": "output_text", "text": f"ANSWER-{t} " + "words " * 80, "annotations": []}]}]
    return items


def test_the_summary_sits_before_the_tail_it_precedes_when_the_tail_opens_on_reasoning():
    # The tail opening on a turn's reasoning item before its answer: the summary of the turns
    # before goes right before that item (was: merged into the next turn's request, after the
    # answer, so the model read turn 3's answer before the summary of turns 0-3).
    opened_on_reasoning = 0
    for trigger in (4_000, 8_000, 12_000):
        items = agents_sdk_items(5, big_from=2)
        r = cf.Compactor(model="gpt-4o", trigger=trigger, wire_format="responses", strategy="summarize").compact(items)
        assert r.strategy_used == "summarize", r.reason
        assert shape_problems(r.messages, "responses") == []
        at = next(k for k, m in enumerate(r.messages) if OPEN in json.dumps(m))
        before = [items.index(m) for m in r.messages[:at] if any(m is x for x in items)]
        after = [next(j for j, x in enumerate(items) if x is m or x.get("id", 0) == m.get("id", 1))
                 for m in r.messages[at + 1:] if any(m is x or x.get("id", 0) == m.get("id", 1) for x in items)]
        assert all(i < min(r.removed) for i in before) and all(i > max(r.removed) for i in after), trigger
        opened_on_reasoning += items[max(r.removed) + 1].get("type") == "reasoning"
    assert opened_on_reasoning, "no case opened the tail on a reasoning item"


@pytest.mark.parametrize("fmt", ["responses", "gemini", "bedrock"])
def test_summarize_writes_each_format(fmt):
    conv = max(tau(), key=lambda c: len(c["messages"]))
    msgs, system = convert(conv["messages"], fmt)
    provider = "gemini" if fmt == "gemini" else "openai"
    before = cf.estimate(msgs, provider=provider, system=system)
    snap = copy.deepcopy(msgs)
    r = cf.Compactor(provider=provider, budget=int(before * 0.6), system=system, strategy="summarize").compact(msgs)
    assert r.strategy_used == "summarize", r.reason
    assert cf.detect_wire_format(msgs, provider) == fmt
    check(r, msgs, snap, fmt)


# -- the contract --------------------------------------------------------------------------


def test_under_budget_and_too_short_come_back_unchanged():
    msgs = agent_history(3)
    r = cf.Compactor(budget=1_000_000).compact(msgs)
    assert not r.changed and r.reason.startswith("under budget") and r.messages == msgs and r.messages is not msgs
    assert r.tokens_after == r.tokens_before
    short = msgs[:4]
    r = cf.Compactor(budget=cf.estimate(short)).compact(short)
    assert not r.changed and r.reason.startswith("under budget")
    # Too short to fold and over a budget its floor misses: said by how much, not returned over it.
    with pytest.raises(cf.CompactionBudgetError, match="alone take"):
        cf.Compactor(budget=10, strategy="summarize").compact(short)


def test_iterative_summary_updates_the_previous_one():
    msgs = agent_history(30)
    c = cf.Compactor(budget=6_000, strategy="summarize")
    r1 = c.compact(msgs)
    assert "src/app/mod3.py" in r1.summary
    grown = r1.messages + agent_history(40)[2:62]
    r2 = c.compact(grown)
    assert r2.strategy_used == "summarize"
    assert sum(OPEN in str(m.get("content")) for m in r2.messages) == 1, "one summary, updated"
    old_summary_at = next(i for i, m in enumerate(grown) if OPEN in str(m.get("content")))
    assert old_summary_at in r2.removed
    assert "src/app/mod3.py" in r2.summary, "the first summary's files survive the second"


def test_async_matches_sync_and_a_failing_summarizer_falls_back():
    msgs = agent_history(30)
    c = cf.Compactor(budget=6_000, strategy="summarize")
    assert asyncio.run(c.compact_async(msgs)).messages == c.compact(msgs).messages

    class Broken:
        def summarize(self, request: cf.SummaryRequest) -> cf.SummaryResult:
            raise TimeoutError("model did not answer")

    r = cf.Compactor(budget=6_000, strategy="summarize", summarizer=Broken()).compact(msgs)
    assert r.fallback_used and r.summary and "read_file" in r.summary
    assert any("TimeoutError" in n for n in r.notes)
    r = asyncio.run(cf.Compactor(budget=6_000, strategy="summarize", summarizer=Broken()).compact_async(msgs))
    assert r.fallback_used


def test_compact_async_lets_other_tasks_run_while_the_digest_is_built():
    # The extractive summarizer's asummarize built its digest on the loop: no other task ran
    # until the compaction returned. The digest now runs in a worker thread, awaited.
    msgs = agent_history(200)

    async def main() -> tuple[int, cf.CompactionResult]:
        done = asyncio.Event()
        ticks = 0

        async def tick() -> None:
            nonlocal ticks
            while not done.is_set():
                ticks += 1
                await asyncio.sleep(0)

        ticker = asyncio.create_task(tick())
        await asyncio.sleep(0)
        started = ticks
        r = await cf.Compactor(budget=20_000, strategy="summarize").compact_async(msgs)
        during = ticks - started
        done.set()
        await ticker
        return during, r

    during, r = asyncio.run(main())
    assert r.changed and r.strategy_used == "summarize" and not r.fallback_used
    assert during >= 1
    assert r.messages == cf.Compactor(budget=20_000, strategy="summarize").compact(msgs).messages


def test_compact_async_reads_the_history_as_it_was_when_called():
    # Another task appending to the caller's list while the compaction awaits its digest (built
    # in a thread, beside the loop) changes nothing it reads.
    msgs = agent_history(60)
    expected = cf.Compactor(budget=6_000, strategy="summarize").compact(msgs).messages

    async def main() -> list[Any]:
        live = list(msgs)

        async def append() -> None:
            for i in range(200):
                live.append({"role": "user", "content": f"late message {i}"})
                await asyncio.sleep(0)

        appender = asyncio.create_task(append())
        r = await cf.Compactor(budget=6_000, strategy="summarize").compact_async(live)
        await appender
        return r.messages

    assert asyncio.run(main()) == expected


def test_session_reanchors_after_compaction():
    msgs = agent_history(30)
    s = cf.Session(context_window=30_000)
    s.estimate(msgs)
    s.record_usage({"prompt_tokens": 25_000})
    assert s._core.anchored_messages == len(msgs)
    c = cf.Compactor(session=s, strategy="summarize")
    r = c.compact(msgs)
    assert r.changed
    assert s._core.anchored_messages is None
    assert s.estimate(r.messages) < 25_000


def test_instructions_reach_the_summary():
    msgs = agent_history(30)
    r = cf.Compactor(budget=6_000, strategy="summarize", instructions="keep the parser decisions").compact(msgs)
    assert "Focus: keep the parser decisions" in r.summary


def test_bad_options_raise():
    with pytest.raises(ValueError):
        cf.Compactor(strategy="fold")  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        cf.Compactor(provider="nope")
    with pytest.raises(ValueError):
        cf.Compactor(trigger=("tokens", 1), keep=("lines", 3))
    with pytest.raises(cf.InvalidMessageError):
        cf.Compactor(budget=100).compact([{"role": "user", "content": 3}])


# -- real transcripts ----------------------------------------------------------------------


@pytest.mark.parametrize("strategy", ["mask", "summarize", "hybrid"])
def test_real_swe_trajectories_at_three_budgets(strategy):
    compacted = 0
    for conv in swe():
        msgs = conv["messages"]
        before = cf.estimate(msgs, provider="gemini")
        snap = copy.deepcopy(msgs)
        for share in (0.3, 0.5, 0.7):
            c = cf.Compactor(provider="gemini", budget=int(before * share), strategy=strategy)
            try:
                r = c.compact(msgs)
            except cf.CompactionBudgetError as e:
                assert e.tokens > e.budget
                continue
            check(r, msgs, snap)
            assert r.messages[1] is msgs[1], "the task is kept"
            if strategy != "mask":
                assert r.tokens_after <= int(before * share)
            compacted += r.changed
    # (The bundled subset's 16 runs at three shares: all 48 compact, and each changes.)
    assert compacted >= 2 * len(swe()), compacted


def test_a_fold_gives_its_summary_the_room_a_tail_of_half_the_budget_would_take_at_every_depth():
    """The default tail of a fold is 15% of the budget however much it folds: a deep history
    (3x its budget) and a shallow one (1.4x, as an agent loop's later compactions) both give
    their summary more room than a tail of half the budget leaves. A tail the caller sized
    keeps its size."""
    longer = {True: 0, False: 0}
    folds = {True: 0, False: 0}
    for conv in swe():
        msgs = conv["messages"]
        before = cf.estimate(msgs, provider="gemini")
        for is_deep, budget in ((True, before // 3), (False, int(before / 1.4))):
            default = cf.Compactor(provider="gemini", budget=budget)
            half = cf.Compactor(provider="gemini", budget=budget, keep=("fraction", 0.5))
            try:
                a, b = default.compact(msgs), half.compact(msgs)
            except cf.CompactionBudgetError:
                continue
            if a.summary and b.summary:
                folds[is_deep] += 1
                # (Where the tail's last whole messages exceed either target, the two agree.)
                assert len(a.summary) >= len(b.summary), conv["source"]
                assert len(a.messages) <= len(b.messages), conv["source"]
                longer[is_deep] += len(a.summary) > len(b.summary)
            else:
                # Masking alone reached the budget: what it protects is half the budget at
                # that depth, as the caller's tail of half.
                assert a.messages == b.messages, conv["source"]
    # (The bundled subset's 16 runs: 16 deep folds and 11 shallow ones, all longer by
    # default; masking alone reaches the other 5 shallow budgets.)
    assert folds == {True: 16, False: 11}, folds
    assert longer == folds, (longer, folds)


def test_readme_main_job_runs_offline():
    """The README's first command: compact the bundled trajectory, show before / after."""
    import re
    import subprocess
    import sys
    from pathlib import Path

    script = Path(__file__).resolve().parents[2] / "examples" / "compact.py"
    r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert "strategy: summarize" in r.stdout and "folded: messages" in r.stdout
    budget = int(re.search(r"budget ([\d,]+)", r.stdout).group(1).replace(",", ""))
    after = int(re.search(r"-> \d+ messages / ([\d,]+) tokens", r.stdout).group(1).replace(",", ""))
    assert after <= budget


@pytest.mark.skipif(not shared_available(), reason="full data sets absent (../shared/data): subset only")
@pytest.mark.parametrize("shape", ["chat", "anthropic"])
def test_every_shared_history_compacts_cleanly(shape):
    compacted = 0
    for name in ("mini-swe-agent-gemini3", "tau-bench-airline"):
        for conv in load_conversations(SHARED, name):
            msgs, system = convert(conv["messages"], shape)
            provider = "anthropic" if shape == "anthropic" else "openai"
            kw = dict(provider=provider, system=system, tools=conv.get("tools"))
            before = cf.estimate(msgs, **kw)
            first_user = next(i for i, m in enumerate(msgs) if m["role"] == "user")
            floor = cf.estimate(msgs[: first_user + 1], **kw)
            snap = copy.deepcopy(msgs)
            budget = int(floor + 0.5 * (before - floor))
            try:
                r = cf.Compactor(budget=budget, **kw).compact(msgs)
            except cf.CompactionBudgetError as e:
                assert e.tokens > e.budget
                continue
            check(r, msgs, snap, shape)
            if r.changed:
                assert r.tokens_after <= budget
                # The verification prices tools and system by the plan's overhead: the same as
                # estimating the result from scratch.
                assert r.tokens_after == cf.estimate(r.messages, **kw)
                # The task is sent byte-identical, whatever step made the history (a last step
                # joined it with the last user turn where no marker message fitted between them).
                assert any(m is msgs[first_user] for m in r.messages), r.notes
                compacted += 1
    assert compacted > 0, "no history was compacted: nothing was checked"


def test_sdk_objects_in_the_history_are_read_and_never_mutated():
    from openai.types.chat import ChatCompletionMessage

    msgs: list = agent_history(30)
    for i, m in enumerate(msgs):
        if m["role"] == "assistant" and m.get("tool_calls"):
            msgs[i] = ChatCompletionMessage.model_validate({**m, "content": None})
    dumps = [m.model_dump_json() if not isinstance(m, dict) else json.dumps(m) for m in msgs]
    for strategy in ("mask", "summarize"):
        r = cf.Compactor(budget=6_000, strategy=strategy, tail_tokens=2_000).compact(msgs)
        assert r.changed
        assert [m.model_dump_json() if not isinstance(m, dict) else json.dumps(m) for m in msgs] == dumps
        as_dicts = [m if isinstance(m, dict) else m.model_dump(exclude_none=True) for m in r.messages]
        assert shape_problems(as_dicts, "chat") == []


def test_trigger_and_keep_spellings():
    msgs = agent_history(20)
    tokens = cf.estimate(msgs)
    assert cf.Compactor(trigger=tokens - 1).should_compact(msgs)
    assert not cf.Compactor(trigger=tokens + 1).should_compact(msgs)
    assert cf.Compactor(trigger={"type": "input_tokens", "value": tokens - 1}).should_compact(msgs)
    assert cf.Compactor(trigger=("messages", len(msgs))).should_compact(msgs)
    assert not cf.Compactor(trigger=("messages", len(msgs) + 1)).should_compact(msgs)
    assert cf.Compactor(context_window=tokens * 2, trigger=0.4).should_compact(msgs)
    assert cf.Compactor(keep={"type": "tool_uses", "value": 4}).keep_tool_uses == 4
    assert cf.Compactor(keep=("messages", 6)).min_tail == 6
    r = cf.Compactor(budget=6_000, strategy="summarize", keep=("messages", 8)).compact(msgs)
    # The last 8 messages stay (the first of them may carry the summary merged into it).
    assert all(a == b or (OPEN in str(a.get("content")) and a.get("tool_calls") == b.get("tool_calls"))
               for a, b in zip(r.messages[-8:], msgs[-8:], strict=True))
    assert OPEN not in str(r.messages[-7:])


@pytest.mark.parametrize("fmt", ["chat", "anthropic", "gemini"])
def test_a_messages_trigger_folds_a_history_under_the_token_budget_to_its_keep(fmt):
    # Before, a history over the message trigger but under the token budget came back as it
    # was: the gate fired on every later call and the model got every message (LangChain's own
    # middleware, with the same words, folds to its keep).
    checked = 0
    for conv in [*tau()[:4], *swe()[:3]]:
        msgs, system = convert(conv["messages"], fmt)
        provider = {"chat": "openai", "anthropic": "anthropic", "gemini": "gemini"}[fmt]
        if len(msgs) < 30:
            continue
        for keep in (None, ("messages", 6)):
            c = cf.Compactor(provider=provider, system=system, budget=400_000, trigger=("messages", 20), keep=keep)
            assert c.should_compact(msgs)
            r = c.compact(msgs)
            assert r.changed and r.strategy_used == "summarize"
            assert len(r.messages) < 20, (len(msgs), len(r.messages))
            assert any("trigger=('messages', 20)" in n for n in r.notes)
            assert shape_problems(r.messages, fmt) == []
            if keep is not None:
                # The last 6 messages stay (the first may carry the summary), the rest is folded.
                assert r.messages[-5:] == msgs[-5:]
                assert len(r.messages) <= 6 + 4
            checked += 1
            if fmt == "chat" and keep is not None:
                # Counted exactly, the same fold (its exact count was "under budget" before).
                exact = cf.Compactor(model="gpt-4o", budget=400_000, trigger=("messages", 20), keep=keep,
                                     exact=True).compact(msgs)
                assert exact.changed and len(exact.messages) < 20 and exact.messages[-5:] == msgs[-5:]
    # (5 of the 7 conversations have 30 messages or more, each with and without keep.)
    assert checked == 10, checked


def test_a_messages_trigger_folds_even_where_it_frees_few_tokens():
    # Its gate knows no back-off: a fold skipped for freeing under min_free_share of the tokens
    # (118 of 2,399) was skipped again on every later call, the history never shortened.
    changed = tried = 0
    for conv in tau():
        msgs, system = convert(conv["messages"][:12], "anthropic")
        if len(msgs) < 10:
            continue
        tried += 1
        c = cf.Compactor(provider="anthropic", system=system, context_window=128_000, trigger=("messages", 10),
                         recoverable=True)
        r = c.compact(msgs)
        assert all("compaction skipped" not in n for n in (r.reason or "", *r.notes)), r.reason
        changed += r.changed and len(r.messages) < len(msgs)
    # (Each of the bundled subset's 24 dialogues reaches 10 messages, and each is shortened.)
    assert changed == tried == 24, (changed, tried)


def test_no_summary_is_written_as_an_assistant_turn_right_before_a_system_note():
    # Mistral's validator refuses assistant -> system ("Unexpected role 'system' after role
    # 'assistant'"), which OpenAI takes: a tail opening on a system note mid-conversation had
    # the summary as an assistant message right before it.
    checked = notes_kept = 0
    for conv in tau():
        base = conv["messages"]
        users = [i for i, m in enumerate(base) if m["role"] == "user" and i > len(base) // 2]
        for at in users[:3]:
            note = {"role": "system", "content": f"Reminder {at}: follow the airline policy strictly."}
            msgs = [*base[:at + 1], note, *base[at + 1:]]
            for share in (0.4, 0.7):
                try:
                    r = cf.Compactor(model="gpt-4o", budget=int(cf.estimate(msgs, model="gpt-4o") * share)).compact(msgs)
                except cf.CompactionBudgetError:
                    continue
                assert r.changed
                checked += 1
                roles = [m["role"] for m in r.messages]
                assert not any(a == "assistant" and b == "system" for a, b in zip(roles, roles[1:])), roles
                assert shape_problems(r.messages, "chat") == []
                notes_kept += note in r.messages
    # (Measured on the bundled subset: 134 cases, 21 raise at 40% where the policy and the
    # last turns miss the budget; 113 compact, 30 of them with the note in the tail verbatim:
    # 32 while the tail kept three messages at least.)
    assert (checked, notes_kept) == (113, 30), (checked, notes_kept)


def test_no_summary_is_written_as_a_user_turn_right_after_a_kept_tool_result():
    # Mistral's validator refuses tool -> user ("Unexpected role 'user' after role 'tool'"),
    # which OpenAI takes: a head that ends on a tool result (protect_first_n through the first
    # tool round) had the summary inserted as a user turn right after it.
    checked = 0
    for conv in tau():
        msgs = conv["messages"]
        first_tool = next((i for i, m in enumerate(msgs) if m["role"] == "tool"), None)
        if first_tool is None or first_tool + 4 >= len(msgs) or msgs[first_tool + 1]["role"] == "tool":
            continue
        for share in (0.5, 0.75):
            c = cf.Compactor(model="gpt-4o", budget=int(cf.estimate(msgs, model="gpt-4o") * share),
                             protect_first_n=first_tool + 1)
            try:
                r = c.compact(msgs)
            except cf.CompactionBudgetError:
                continue
            if not r.changed or r.strategy_used != "summarize":
                continue
            checked += 1
            out = r.messages
            assert out[first_tool]["tool_call_id"] == msgs[first_tool]["tool_call_id"]
            # Every tool -> user pair of the output stood so in the caller's history (a kept
            # result may be masked: known by its call id).
            after = {a["tool_call_id"]: b for a, b in zip(msgs, msgs[1:]) if a["role"] == "tool"}
            for a, b in zip(out, out[1:]):
                if a["role"] == "tool" and b["role"] == "user":
                    assert after.get(a["tool_call_id"]) == b, (a, b)
            assert shape_problems(out, "chat") == []
    # (The bundled subset: 34 summarized compactions of 24 dialogues at the two budgets; the
    # build before this rule wrote the summary as a user turn after the head's tool result.)
    assert checked == 34, checked


def test_a_budget_at_or_over_the_trigger_is_refused_by_every_entry_point():
    # Accepted, it made every call past the trigger compact again (a LangChain agent with
    # trigger 12,000 and budget 20,000 ran 24 compactions in 41 model calls, 10 changing nothing).
    from contextfold.integrations.langchain import ContextFoldMiddleware
    from contextfold.serve.config import ServeConfig

    for make in (lambda: cf.Compactor(trigger=12_000, budget=20_000),
                 lambda: cf.Compactor(trigger=("tokens", 12_000), budget=12_000),
                 lambda: cf.Compactor(context_window=20_000, trigger=0.5, budget=10_000),
                 lambda: ContextFoldMiddleware(trigger=("tokens", 12_000), budget=20_000, pricing_model="gpt-4o"),
                 lambda: ServeConfig(trigger=12_000, budget=20_000)):
        with pytest.raises(ValueError, match=r"budget \(\d+ tokens\) must be below the trigger"):
            make()
    assert cf.Compactor(trigger=12_000, budget=11_999).budget == 11_999
    # A message-count trigger, or a fraction of a window not known yet, says nothing of tokens.
    assert cf.Compactor(trigger=("messages", 40), budget=50_000).budget == 50_000
    assert cf.Compactor(trigger=0.5, budget=50_000).budget == 50_000


def _keys(obj):
    """Every key path of a JSON-like value (list positions folded), to compare shapes."""
    if isinstance(obj, dict):
        return {k for k in obj} | {f"{k}.{sub}" for k, v in obj.items() for sub in _keys(v)}
    if isinstance(obj, list):
        return {sub for v in obj for sub in _keys(v)}
    return set()


@pytest.mark.parametrize("fmt", ["responses", "gemini", "bedrock"])
def test_masking_runs_in_every_format_and_adds_no_key(fmt):
    chat = agent_history(20)
    msgs, _ = convert(chat, fmt)
    before = copy.deepcopy(msgs)
    provider = "gemini" if fmt == "gemini" else "anthropic" if fmt == "bedrock" else "openai"
    r = cf.Compactor(provider=provider, budget=5_000, strategy="mask", tail_tokens=1_000).compact(msgs)
    assert msgs == before
    assert r.strategy_used == "mask" and r.pruned, r.reason
    assert r.tokens_after < r.tokens_before
    assert shape_problems(r.messages, fmt) == []
    for old, new in zip(msgs, r.messages):
        # Gemini's functionResponse.response is a free-form object: the pruned output is its value.
        extra = {k for k in _keys(new) - _keys(old) if not k.endswith("functionResponse.response.output")}
        assert extra <= {"text", "type"}, (old, new)


def test_successive_mask_compactions_never_point_different_outputs_at_each_other():
    # An agent loop masking as it goes: outputs of one tool with the same byte count got equal
    # placeholders, and a later pass deduplicated those (and its own pointers) as copies: m0.py's
    # output became "the same output as" m1.py's, down a chain of pointers.
    def turn(t: int) -> list[dict]:
        return [
            {"role": "user", "content": f"Turn {t}: fix BUG-{t}"},
            {"role": "assistant", "content": f"turn {t}", "tool_calls": [
                {"id": f"a{t}", "type": "function",
                 "function": {"name": "read_file", "arguments": json.dumps({"path": f"src/m{t}.py"})}}]},
            {"role": "tool", "tool_call_id": f"a{t}", "content": f"src/m{t}.py: " + f"line of m{t}\n" * 300},
            {"role": "assistant", "content": f"Done turn {t}. " + "explanation " * 50},
        ]
    c = cf.Compactor(model="gpt-4o", trigger=("tokens", 6000), strategy="mask", keep=("messages", 4))
    sent: list = []
    compactions = 0
    for t in range(8):
        sent = sent + turn(t)
        if c.should_compact(sent):
            r = c.compact(sent)
            if r.changed:
                sent, compactions = list(r.messages), compactions + 1
    assert compactions >= 2
    # No two outputs were equal: no pointer may claim one is a copy of another.
    pointers = [m for m in sent if m["role"] == "tool" and "[same output as message" in m["content"]]
    assert pointers == []
    assert sum(1 for m in sent if m["role"] == "tool" and "[output pruned to save context" in m["content"]) >= 3


def test_clear_at_least_holds_for_the_history_returned_after_masked_outputs_are_given_back() -> None:
    hist: list[dict] = [{"role": "user", "content": "task: fix the bug"}]
    for i in range(30):
        hist.append({"role": "assistant", "content": None, "tool_calls": [{"id": f"c{i}", "type": "function",
                     "function": {"name": "bash", "arguments": '{"cmd": "cat file.py"}'}}]})
        hist.append({"role": "tool", "tool_call_id": f"c{i}", "content": f"line {i}\n" * 400})
    hist += [{"role": "assistant", "content": "done"}, {"role": "user", "content": "next"}]
    before = cf.estimate(hist, model="gpt-4o")
    need = before - 20_000 + 3000  # more than compacting just down to the budget frees
    r = cf.Compactor(model="gpt-4o", budget=20_000, strategy="mask", clear_at_least=need).compact(hist)
    # Was applied freeing 26,422 < clear_at_least 29,382: outputs were given back after the check.
    assert r.changed and r.tokens_before - r.tokens_after >= need  # gives back only what keeps it
    plain = cf.Compactor(model="gpt-4o", budget=20_000, strategy="mask").compact(hist)
    assert plain.changed and plain.tokens_before - plain.tokens_after < need


def _marked_error_history(fmt: str, marked: bool) -> list[dict]:
    """A long Anthropic or Bedrock history whose second result says, in words that name no
    failure, that an edit did not apply, marked as an error by the provider's own flag or not."""
    words = "File has been modified since read, by the user or a linter."
    msgs: list[dict] = [{"role": "user", "content": [{"text": "Rename a to b in src/app.py and keep going."}]
                         if fmt == "bedrock" else "Rename a to b in src/app.py and keep going."}]
    for i in range(12):
        text = words if i == 1 else "ok " * 200
        if fmt == "anthropic":
            result: dict = {"type": "tool_result", "tool_use_id": f"t{i}", "content": text}
            if i == 1 and marked:
                result["is_error"] = True
            msgs += [{"role": "assistant", "content": [
                {"type": "text", "text": f"Step {i}."},
                {"type": "tool_use", "id": f"t{i}", "name": "Edit", "input": {"file_path": "src/app.py", "n": i}}]},
                {"role": "user", "content": [result]}]
        else:
            block: dict = {"toolUseId": f"t{i}", "content": [{"text": text}]}
            if i == 1 and marked:
                block["status"] = "error"
            msgs += [{"role": "assistant", "content": [
                {"text": f"Step {i}."},
                {"toolUse": {"toolUseId": f"t{i}", "name": "Edit", "input": {"file_path": "src/app.py", "n": i}}}]},
                {"role": "user", "content": [{"toolResult": block}]}]
    return msgs


@pytest.mark.parametrize("fmt", ["anthropic", "bedrock"])
def test_a_result_the_provider_marked_failed_is_summarized_as_an_error(fmt: str) -> None:
    def errors(marked: bool) -> str:
        h = _marked_error_history(fmt, marked)
        r = cf.Compactor(provider="anthropic", budget=cf.estimate(h, provider="anthropic") // 3).compact(h)
        assert r.summary is not None
        return r.summary.split("## Errors")[1].split("\n## ")[0] if "## Errors" in r.summary else ""

    assert "modified since read" in errors(True)
    assert "modified since read" not in errors(False)


@pytest.mark.skipif(not shared_available(), reason="full data sets absent (../shared/data): subset only")
@pytest.mark.parametrize(("source", "shape", "share", "pinned"), [
    ("task28-trial1", "anthropic", 0.4, None),   # the task and the last user turn meet
    ("task16-trial2", "chat", 0.3, 3),          # a pinned user turn and the last user turn meet
    ("task38-trial2", "responses", 0.3, 3),
])
def test_the_last_step_never_joins_the_last_user_turn_into_the_task_or_a_pinned_message(source, shape, share, pinned):
    # Where not even a marker message fitted between two user turns, the last degrading step
    # joined them into one: the task (or the pinned message) came back as itself, a marker line
    # and the last user turn. Now that history is not made: the compaction raises, saying why.
    conv = next(c for c in load_conversations(SHARED, "tau-bench-airline") if c["source"].endswith(source))
    msgs, system = convert(conv["messages"], shape)
    provider = "anthropic" if shape == "anthropic" else "openai"
    kw = dict(provider=provider, system=system, tools=conv.get("tools"))
    total = cf.estimate(msgs, **kw)
    if pinned is None:
        budget = int(total * share)
    else:
        first_user = next(i for i, m in enumerate(msgs) if m.get("role") == "user")
        floor = cf.estimate(msgs[: first_user + 1], **kw)
        budget = int(floor + share * (total - floor))
    keep = [0] if pinned is None else [0, pinned]
    snap = copy.deepcopy(msgs)
    try:
        r = cf.Compactor(budget=budget, strategy="summarize", pinned=[pinned] if pinned else None, **kw).compact(msgs)
    except cf.CompactionBudgetError as e:
        assert "marker" in str(e) and e.tokens > e.budget  # (what does not fit beside them, said)
    else:
        assert all(any(m is msgs[i] for m in r.messages) for i in keep), r.notes
        assert not any("joined to message" in n for n in r.notes)
    assert msgs == snap


def _policy_dialogue() -> list[dict]:
    """An airline-style dialogue: a long policy as the system prompt, the task, six requests
    each naming its reservation (each answered), a seventh the agent answers with a question,
    and the user's yes."""
    msgs = [{"role": "system", "content": "Airline policy. " + "Confirm every change with the user first. " * 120},
            {"role": "user", "content": "I need help with my reservations."},
            {"role": "assistant", "content": "Sure, what do you need?"}]
    for k in range(7):
        msgs.append({"role": "user", "content": f"Please also check reservation RSV{k:03d} and move it to the next "
                                                "day, keeping the same cabin for all passengers."})
        if k < 6:
            msgs.append({"role": "assistant", "content": f"Reservation RSV{k:03d} holds 2 passengers in economy; "
                                                         "the next day has seats available."})
    msgs += [{"role": "assistant", "content": "Shall I move RSV006 to 2024-05-21 for $180, paid with your card?"},
             {"role": "user", "content": "Yes, go ahead."}]
    return msgs


def test_the_tail_keeps_the_last_message_and_the_one_it_answers_and_the_summary_the_rest():
    # A long system prompt leaves a tight budget little room: a tail of three messages at least
    # (the default until stop 83) took a share of it for an older request, and the summary
    # clipped the others. Two at least: the user's "yes" and the question it answers stay
    # whole, and the room the third took goes to the summary (measured here: 3 whole requests
    # against 1 at 170 tokens beside the head, 6 against 5 at 220).
    msgs = _policy_dialogue()
    snap = copy.deepcopy(msgs)
    head = cf.estimate(msgs[:2], model="gpt-4o")

    def whole_requests(res: cf.CompactionResult) -> int:
        return (res.summary or "").count("keeping the same cabin for all passengers")

    for room in (170, 220):
        budget = head + room
        r = cf.Compactor(model="gpt-4o", budget=budget).compact(msgs)
        three = cf.Compactor(model="gpt-4o", budget=budget, min_tail=3).compact(msgs)
        assert msgs == snap
        assert r.tokens_after <= budget and three.tokens_after <= budget
        # (The question follows the summary in one assistant message: no two turns of one role.)
        assert r.messages[-1] == msgs[-1] and r.messages[-2]["content"].endswith(msgs[-2]["content"])
        assert not any(m in r.messages for m in msgs[2:-2]), r.messages
        assert three.messages[-3:] == msgs[-3:]
        assert whole_requests(r) > whole_requests(three), (room, r.summary, three.summary)
        assert shape_problems(r.messages, "chat") == []

"""Raise only when nothing can fit: the steps a compaction takes before giving up, each said in
``.notes``, and the error when the system prompt, tools, task and last user turn alone exceed
the budget."""

from __future__ import annotations

import copy
import json
import re
from typing import Any

import pytest

import contextfold as cf
from compaction_shapes import FORMATS, PROVIDER, convert, shape_problems
from transcripts import shared_available, shared_fixture
from test_compactor import agent_history



def huge_last_round() -> list[dict]:
    """An agent whose last tool output alone is far over the budget (a 'cat' of a log)."""
    msgs = agent_history(6)[:-2]
    msgs.append({"role": "user", "content": "Now read the build log and tell me what failed."})
    msgs.append({"role": "assistant", "content": None, "tool_calls": [
        {"id": "call_log", "type": "function", "function": {"name": "read_file", "arguments": '{"path": "build.log"}'}}]})
    log = "".join(f"[{k:05d}] compiling module_{k}.c ... ok\n" for k in range(3_000)) + "error: linker failed: undefined symbol main\n"
    msgs.append({"role": "tool", "tool_call_id": "call_log", "content": log})
    return msgs


def cut_to_fit(msgs: list[dict], fmt: str, system: object) -> tuple[cf.Compactor, cf.CompactionResult, str]:
    """``msgs`` compacted to 4,000 tokens, checked: the input untouched, the budget met by a
    middle cut, the output valid in ``fmt``; with the output's JSON text."""
    snap = copy.deepcopy(msgs)
    c = cf.Compactor(budget=4_000, wire_format=fmt, provider=PROVIDER[fmt], system=system)
    r = c.compact(msgs)
    assert msgs == snap
    assert r.changed and r.tokens_after <= 4_000
    assert any(n.startswith("degraded: cut the middle") for n in r.notes), r.notes
    assert shape_problems(r.messages, fmt) == []
    return c, r, json.dumps(r.messages)


@pytest.mark.parametrize("fmt", FORMATS)
def test_an_oversized_last_tool_output_is_cut_in_the_middle_instead_of_raising(fmt):
    msgs, system = convert(huge_last_round(), fmt)
    c, r, text = cut_to_fit(msgs, fmt, system)
    # Head and end of the log stay; the cut is recoverable byte-exact by the id its note names.
    # The marker names neither the id nor the recall tool: this model is not offered the tool.
    assert "[00000] compiling module_0.c" in text and "undefined symbol main" in text
    (fold_id,) = set(re.findall(r"cut the middle .*id=(cf[0-9a-f]{12})", "\n".join(r.notes)))
    assert re.search(r"tokens cut( from the middle(; mentions [^\]\n]*)? \.\.\.)?\]", text) and fold_id not in text and "contextfold_recall" not in text
    whole = c.recall(fold_id)
    if fmt == "gemini":  # a functionResponse's response object, as the history held it
        whole = json.loads(whole)["result"]
    assert whole == huge_last_round()[-1]["content"]
    # The task and the last user turn are kept verbatim.
    assert "Fix the failing test" in text and "tell me what failed" in text


@pytest.mark.parametrize("fmt", ["anthropic", "bedrock", "gemini"])
def test_the_users_words_beside_an_oversized_last_result_stay_and_the_result_is_cut(fmt):
    # Anthropic, Bedrock and Gemini write the newest results and the user's next words in one
    # turn. That turn was kept whole as the last user turn, and a result far over the budget
    # there raised CompactionBudgetError where the words in a turn of their own fit.
    chat = huge_last_round()
    chat[-2]["content"] = "Read the build log."
    msgs, system = convert(chat, fmt)
    last = msgs[-1]
    words = {"anthropic": {"type": "text", "text": "Now tell me what failed."}, "bedrock": {"text": "Now tell me what failed."},
             "gemini": {"text": "Now tell me what failed."}}[fmt]
    last["parts" if fmt == "gemini" else "content"].append(words)
    _, _, text = cut_to_fit(msgs, fmt, system)
    assert "Now tell me what failed." in text and "undefined symbol main" in text


def test_a_json_tool_result_cut_in_the_middle_stays_the_json_it_was() -> None:
    # A terminal tool's envelope: the cut goes inside its output, so the result still parses
    # and still says how the run ended; the id restores the whole envelope.
    msgs = huge_last_round()
    log = msgs[-1]["content"]
    msgs[-1] = {**msgs[-1], "content": json.dumps({"output": log, "exit_code": 1, "error": None})}
    c = cf.Compactor(budget=4_000, provider="openai")
    r = c.compact(msgs)
    assert any(n.startswith("degraded: cut the middle") for n in r.notes), r.notes
    cut = json.loads(r.messages[-1]["content"])
    assert cut["exit_code"] == 1 and cut["error"] is None
    assert cut["output"].startswith("[00000] compiling module_0.c")
    assert cut["output"].endswith("undefined symbol main\n")
    (fold_id,) = set(re.findall(r"cut the middle .*id=(cf[0-9a-f]{12})", "\n".join(r.notes)))
    assert c.recall(fold_id) == msgs[-1]["content"]
    # Where the model has the recall tool, the marker inside the output names the id.
    rc = cf.Compactor(budget=4_000, provider="openai", recoverable=True)
    named = json.loads(rc.compact(msgs).messages[-1]["content"])["output"]
    (named_id,) = set(re.findall(r"tokens cut[^\]]*id=(cf[0-9a-f]{12}), contextfold_recall", named))
    assert rc.recall(named_id) == msgs[-1]["content"]
    assert r.tokens_after <= 4_000


def test_a_message_cut_anyway_leaves_the_summary_its_share_not_only_its_minimum():
    # The log is cut in any case (it alone is over the budget): the cut also frees the summary's
    # planned share (a quarter of the budget), so the earlier requests keep their room.
    msgs = huge_last_round()
    budget = 4_000
    r = cf.Compactor(budget=budget).compact(msgs)
    assert r.tokens_after <= budget
    summary = cf.estimate_each([{"role": "user", "content": r.summary}])[0]
    assert summary >= 0.8 * budget * 0.25, (summary, r.notes)


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


def tight_floor(fmt: str) -> tuple[list, object, int]:
    """A history whose system prompt, task and last user turn leave a few dozen tokens: the
    tool rounds after the last user turn (one with long arguments) and any summary do not fit."""
    msgs = agent_history(8)
    msgs[0] = dict(msgs[0], content="You are a coding agent. " + "Policy line: be careful. " * 300)
    msgs.append({"role": "user", "content": "Book the cheapest flight and tell me the confirmation."})
    for k, args in enumerate(({"origin": "JFK", "destination": "SFO", "note": "cheapest " * 60},
                              {"reservation": "ZQ7X2P", "summary": "the user wants a confirmation " * 20})):
        msgs.append({"role": "assistant", "content": None, "tool_calls": [
            {"id": f"call_b{k}", "type": "function", "function": {"name": f"step_{k}", "arguments": json.dumps(args)}}]})
        msgs.append({"role": "tool", "tool_call_id": f"call_b{k}", "content": f"ok {k}: " + "detail " * 40})
    converted, system = convert(msgs, fmt)
    provider = PROVIDER[fmt]
    must = [m for m in converted[:2] if m.get("role") in ("system", "user")][: 2 if fmt == "chat" else 1]
    last_user = [m for m in converted if "cheapest flight" in json.dumps(m)][0]
    floor = cf.estimate([*must, last_user], provider=provider, system=system)
    return converted, system, floor


@pytest.mark.parametrize("fmt", ["chat", "anthropic"])
def test_where_only_the_floor_fits_a_history_without_a_summary_comes_back_instead_of_an_error(fmt):
    msgs, system, floor = tight_floor(fmt)
    snap = copy.deepcopy(msgs)
    budget = floor + 40
    c = cf.Compactor(budget=budget, provider=PROVIDER[fmt], system=system, wire_format=fmt)
    r = c.compact(msgs)
    assert msgs == snap
    assert r.summary is None and r.changed and r.tokens_after <= budget
    assert any("without a summary" in n for n in r.notes), r.notes
    assert shape_problems(r.messages, fmt) == []
    text = json.dumps(r.messages)
    assert "Fix the failing test" in text and "Book the cheapest flight" in text
    seen = json.dumps(r.messages, ensure_ascii=False)
    assert re.search(r"\[(\d+ (earlier )?messages folded|…\])", seen), "a marker says that messages were folded"
    # Below the floor it still raises, saying by how much.
    with pytest.raises(cf.CompactionBudgetError, match="alone take"):
        cf.Compactor(budget=floor - 20, provider=PROVIDER[fmt], system=system, wire_format=fmt).compact(msgs)


def test_budget_sweep_raises_nowhere_the_floor_fits():
    """tools/budget_sweep.py over the real transcripts (tests/data when the shared data is
    absent): no CompactionBudgetError where system + tools + task + last user turn fit."""
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    out = subprocess.run([sys.executable, str(root / "tools" / "budget_sweep.py"), "--json"], capture_output=True,
                         text=True, check=True, cwd=root)
    report = json.loads(out.stdout)
    assert report["cases"] > 0
    assert report.get("raised where system+tools+task+last user turn fit", 0) == 0, report
    assert report.get("over budget", 0) == 0 and report.get("rejected shape", 0) == 0, report


def test_arguments_with_a_lone_surrogate_stay_whole_in_a_bare_history() -> None:
    # Found by the mixed-format property test: shrinking arguments that hold a lone surrogate
    # (no UTF-8 form) raised UnicodeEncodeError out of compact(); they are left whole, and the
    # outcome is a result or the budget error, never another exception.
    ms = [{"role": "system", "content": ""}] * 4 + [
        {"role": "model", "parts": [{"functionCall": {"name": "", "args": {"": "0" * 100, "\ud800": None}}}]}]
    before = copy.deepcopy(ms)
    try:
        r = cf.Compactor(model="gpt-4o", budget=60, tail_tokens=30, strategy="hybrid").compact(ms)
        assert r.messages
    except cf.CompactionBudgetError as e:
        assert e.tokens > 60
    assert ms == before


@pytest.mark.skipif(not shared_available(), reason="needs ../shared/data (tau-bench airline dialogues)")
def test_a_fold_too_tight_for_a_summary_keeps_its_standing_rules_not_a_marker() -> None:
    """task38-trial2 with the successive harness's planted rules, at its budget (the head and
    30% of the rest: 101 tokens beside a 2,870-token system prompt and tools). The first
    compaction folds two rules with 41 tokens left for a summary, under the 64 a summary gets
    at least and under the rules with the digest's header: it wrote the bare marker "[4 earlier
    messages folded without a summary ...]", and both rules were gone. Now a summary of the
    rules alone takes that room, and the next compaction carries them (it knows the summary as
    the library's own)."""
    from contextfold import evaluation as ev

    fx = shared_fixture("tau-bench-airline", "#task38-trial2")
    msgs, _, budget = ev.successive_setup(fx, rules=ev.planted(fx))
    folded_rules = ("Do not cancel reservation ZZ9Q7T under any circumstances.",
                    "Always ask me before you run git push or book anything.")
    first = msgs[:8]
    assert all(any(m.get("content") == r for m in first[2:6]) for r in folded_rules)
    snap = copy.deepcopy(first)
    c = cf.Compactor(budget=budget, tools=fx.tools, min_free_share=0.0)
    r = c.compact(first)
    assert first == snap and r.tokens_after <= budget
    assert any("standing rules" in n for n in r.notes), r.notes
    assert r.summary is not None and all(rule in r.summary for rule in folded_rules), r.summary
    assert shape_problems(r.messages, "chat") == []
    # The next turns, compacted with a little more room by a Compactor that carries this one's
    # session: the rules-only summary is read as the library's own and its rules carried.
    nxt = cf.Compactor(budget=budget + 40, tools=fx.tools, min_free_share=0.0, session=c.session)
    again = nxt.compact([*r.messages, *msgs[8:10]])
    assert again.summary is not None and all(rule in again.summary for rule in folded_rules), again.summary


@pytest.mark.skipif(not shared_available(), reason="needs ../shared/data (tau-bench airline dialogues)")
def test_rules_folded_by_the_last_step_before_raising_survive_every_compaction() -> None:
    """task12-trial3 under the successive harness (its three planted rules, 78 tokens beside
    the policy, the tools and the task). At the last stop its first compaction ended in the
    last step before raising (the head, the last user turn and its round, a marker), and the
    marker took "Never charge my Visa card ending in 4417." with the fold; its third wrote a
    floor of a cut header in place of "Do not cancel reservation ZZ9Q7T under any
    circumstances.". The last step now writes the fold's rules alone where they fit, the floor
    keeps rules before a header, and every rule is still seen after the last compaction."""
    from contextfold import evaluation as ev

    fx = shared_fixture("tau-bench-airline", "#task12-trial3")
    s = ev.successive(fx, rules=ev.planted(fx))
    assert len(s.sizes) >= 4, s.sizes
    assert s.rules_lost == 0, (s.sizes, s.rooms)


def rules_dialogue() -> tuple[list[dict], tuple[str, ...]]:
    """A short airline dialogue whose user states two standing rules mid-way, then asks a
    question the assistant answers at length: its policy and task dwarf the rest."""
    policy = "You are an airline agent. " + " ".join(
        f"Policy {k}: a passenger may change a flight booked in economy once per trip without a fee." for k in range(8))
    rules = ("Never charge my Visa card ending in 4417.", "Do not cancel reservation ZZ9Q7T under any circumstances.")
    return [{"role": "system", "content": policy},
            {"role": "user", "content": "I need help with my bookings."},
            {"role": "assistant", "content": "Sure, what is your user id?"},
            {"role": "user", "content": rules[0]},
            {"role": "assistant", "content": "Noted. Which reservation would you like to look at first?"},
            {"role": "user", "content": rules[1]},
            {"role": "assistant", "content": "Understood, I will leave that reservation as it is."},
            {"role": "user", "content": "How many checked bags may a gold member take in economy?"},
            {"role": "assistant", "content": "A gold member flying economy may take three checked bags free of "
             "charge; each extra bag costs fifty dollars, and the allowance is per passenger on every flight "
             "segment of the trip."}], rules


def test_a_standing_rule_outranks_the_reply_after_the_last_user_turn() -> None:
    """At every budget from the floor (policy, task, last user turn) to the whole history: the
    reply after the last user turn is kept only where every standing rule is kept whole too,
    and nothing raises. At the last stop, budgets 226-246 kept the 39-token reply and a bare
    marker in place of both rules (and 247 raised: its summary came out 1 token over at every
    size)."""
    from contextfold.evaluation import visible_text

    from contextfold.degrade import floor_tokens

    msgs, rules = rules_dialogue()
    # (The fold's floor: the task and the last user turn are two user turns, so it holds the
    # shortest marker between them; below it the last step joined the two into one message.)
    floor = floor_tokens(msgs, {"provider": "openai"}, "chat")
    assert floor > floor_tokens(msgs, {"provider": "openai"})
    traded = 0
    for budget in range(floor, cf.estimate(msgs)):
        r = cf.Compactor(budget=budget, min_free_share=0.0).compact(msgs)
        seen = visible_text(r.messages)
        whole = all(rule in seen for rule in rules)
        assert r.tokens_after <= budget and shape_problems(r.messages, "chat") == []
        assert whole or msgs[8]["content"] not in seen, (budget, r.notes)
        traded += whole and msgs[8]["content"] not in seen
    assert traded > 0


@pytest.mark.skipif(not shared_available(), reason="needs ../shared/data (tau-bench airline dialogues)")
@pytest.mark.parametrize("name", ["task38-trial2", "task37-trial3", "task44-trial3"])
def test_no_planted_rule_is_clipped_where_less_of_the_tail_lets_it_stay_whole(name: str) -> None:
    """The dialogues that lost planted rules at an earlier stop (rooms of 28-101 tokens beside
    a 2,870-token policy): a rule clipped to fit ("Do not cancel reservation ZZ9Q…r any
    circumstances."), or a marker in place of three rules beside a finished tool round. Now a
    rules-only summary with less of the tail comes first, and every rule survives."""
    from contextfold import evaluation as ev

    fx = shared_fixture("tau-bench-airline", f"#{name}")
    s = ev.successive(fx, rules=ev.planted(fx))
    assert len(s.sizes) >= 2, s.sizes
    assert s.rules_lost == 0, (s.sizes, s.rooms)


@pytest.mark.skipif(not shared_available(), reason="needs ../shared/data (tau-bench airline dialogues)")
def test_rules_a_list_cannot_hold_whole_are_written_one_a_line_and_carried() -> None:
    """task35-trial3 (the fourth dialogue of the test above until the summary was read whole):
    from its second successive compaction on, the policy, the task and the last user turn leave
    60 tokens for the summary's message, and its three planted rules as a list under their
    heading take 61 (o200k's count too). Every other step has given way (one message of tail,
    the turn after the last user turn folded). At stop 68 the rule that did not fit kept its
    head ("Do not cancel reservation ZZ9Q7…"); written one a line without the list's dash they
    take 58, every rule whole, and the next compaction reads them back as rules."""
    from contextfold import evaluation as ev

    fx = shared_fixture("tau-bench-airline", "#task35-trial3")
    rules = [text for _, text in ev.planted(fx)]
    seen: list[cf.CompactionResult] = []

    class Recording(cf.Compactor):
        def compact(self, messages, /):  # type: ignore[no-untyped-def]
            r = super().compact(messages)
            seen.append(r)
            return r

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(ev, "Compactor", Recording)
        s = ev.successive(fx, rules=ev.planted(fx))
    assert s.rules_lost == 0 and len(seen) >= 3, (s.rules_lost, s.sizes)
    assert all(r.tokens_after <= r.budget for r in seen)
    one_a_line = 0
    for r in seen[1:]:
        lines = (r.summary or "").splitlines()
        # Every rule whole: on a line of its own without the dash where the list did not fit,
        # as the list where it did (since texts of up to 1 KiB are read whole, the third
        # compaction's room holds the list).
        listed = all(f"- {rule}" in lines for rule in rules)
        alone = all(rule in lines for rule in rules)
        one_a_line += alone
        assert listed or alone, r.summary
        assert lines[0] == "## Standing rules", r.summary
    assert one_a_line >= 1


def _text_agent(last_output: str) -> list[dict]:
    """A mini-swe-agent run: the task, commands in fenced blocks, observations as user turns
    opening with their return code; the last observation is ``last_output``."""
    msgs: list[dict] = [{"role": "system", "content": "You are a helpful assistant that runs shell commands."},
                        {"role": "user", "content": "Fix the failing parser test in src/parse.py."}]
    for k in range(12):
        msgs.append({"role": "assistant", "content": f"THOUGHT: step {k}, read module_{k}.\n\n```bash\ncat src/module_{k}.py\n```"})
        msgs.append({"role": "user", "content": "<returncode>0</returncode>\n<output>\n"
                     + "".join(f"def f_{k}_{j}(x): return x + {j}\n" for j in range(40)) + "</output>"})
    msgs.append({"role": "assistant", "content": "THOUGHT: run the whole suite.\n\n```bash\npytest -q\n```"})
    msgs.append({"role": "user", "content": f"<returncode>1</returncode>\n<output>\n{last_output}</output>"})
    return msgs


def test_a_text_agent_s_oversized_last_observation_is_cut_like_a_tool_result() -> None:
    """A text agent's observation (mini-swe-agent: a user turn opening with its return code) is
    the harness answering a command, not a person's turn: like a tool-calling agent's last tool
    output, it is cut in the middle (recoverable) when nothing else makes room, where it used to
    count as the last user turn that must stay whole: an observation alone over the budget
    raised, and one beside a carried summary squeezed it (django-14915's third successive
    compaction wrote the summary of 30 messages and of the previous summary in 296 tokens)."""
    # (~3,040 tokens: over the budget by itself.)
    log = "".join(f"tests/test_{k}.py::test_case PASSED\n" for k in range(250)) + "FAILED tests/test_parse.py::test_nested\n"
    msgs = _text_agent(log)
    budget = 3_000
    c = cf.Compactor(budget=budget)
    r = c.compact(msgs)
    assert 0.95 * budget <= r.tokens_after <= budget, (r.tokens_after, r.notes)
    assert any(re.match(r"degraded: cut the middle of message 27 ", n) for n in r.notes), r.notes
    # The cut frees the summary's share too (a quarter of the budget), as for a tool output.
    summary = cf.estimate_each([{"role": "user", "content": r.summary}])[0]
    assert summary >= 0.8 * budget * 0.25, (summary, r.notes)
    last = r.messages[-1]["content"]
    # Its head and end stay (the verdict is the last line), and recall gives the whole back.
    assert last.startswith("<returncode>1</returncode>") and "FAILED tests/test_parse.py::test_nested" in last
    fold_id = re.search(r"id=(cf[0-9a-f]{12})", " ".join(r.notes)).group(1)  # type: ignore[union-attr]
    assert c.recall(fold_id) == msgs[-1]["content"]
    # A person's last turn is still never cut: the same history ending on a person's words
    # over the budget raises, saying so.
    person = _text_agent("") + [{"role": "user", "content": "Before you submit: " + "please check the docs. " * 900}]
    with pytest.raises(cf.CompactionBudgetError, match="the last user turn alone take"):
        cf.Compactor(budget=budget).compact(person)


@pytest.mark.skipif(not shared_available(), reason="needs ../shared/data (SWE runs)")
def test_a_carried_summary_is_not_squeezed_beside_a_long_last_observation() -> None:
    """django-14915 under the successive harness: every summary after the first keeps at least
    half the size of the one before (the third was 290 tokens after 1,198 while the last
    observation stayed whole), and every compaction uses 90% of its budget or more."""
    from contextfold import evaluation as ev

    fx = shared_fixture("mini-swe-agent-gemini3", "django__django-14915")
    _, _, budget = ev.successive_setup(fx, rules=ev.planted(fx))
    s = ev.successive(fx, rules=ev.planted(fx))
    assert len(s.sizes) >= 5, s
    for before, after in zip(s.sizes, s.sizes[1:]):
        assert after >= before / 2, s.sizes
    used = [(budget - (room - size)) / budget for size, room in zip(s.sizes, s.rooms, strict=True)]
    assert min(used) >= 0.9, used
    assert any(any("degraded: cut the middle of message" in n for n in notes) for notes in s.notes), s.notes


def _compacted_untouched(msgs: list[dict], **compactor_kw: Any) -> tuple[cf.Compactor, cf.CompactionResult]:
    """A Compactor made with ``compactor_kw`` and its compaction of ``msgs``, checked to have
    left the caller's list as it was."""
    snap = copy.deepcopy(msgs)
    c = cf.Compactor(**compactor_kw)
    r = c.compact(msgs)
    assert msgs == snap
    return c, r


#: The tail these short histories are compacted with: at least four messages, so that the
#: protected tail covers all that follows the task (the default, two, would fold a tool round).
COVERING_TAIL = 4


def _nothing_to_fold(fmt: str) -> list[dict]:
    """A short history with nothing to fold at ``min_tail=COVERING_TAIL`` (the protected tail
    covers it all): the task and two tool rounds with large outputs (an agent's first steps)."""
    log = "".join(f"[{k:05d}] compiling module_{k}.c ... ok\n" for k in range(700))
    msgs = [{"role": "user", "content": "Build the project and tell me what failed."}]
    for k in range(2):
        msgs.append({"role": "assistant", "content": None, "tool_calls": [
            {"id": f"call_{k}", "type": "function", "function": {"name": "run", "arguments": f'{{"step": {k}}}'}}]})
        msgs.append({"role": "tool", "tool_call_id": f"call_{k}", "content": f"step {k}\n{log}error: step {k} failed\n"})
    return convert(msgs, fmt)[0]


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_history_with_nothing_to_fold_is_cut_inside_rather_than_returned_over_the_budget(fmt):
    # Before: "nothing to fold" came back unchanged at twice the budget. Now the largest
    # messages (never the task or the last user turn) have their middle cut, recoverably.
    msgs = _nothing_to_fold(fmt)
    kw = dict(provider=PROVIDER[fmt])
    before = cf.estimate(msgs, **kw)
    budget = before // 2
    c, r = _compacted_untouched(msgs, budget=budget, wire_format=fmt, recoverable=True, min_tail=COVERING_TAIL, **kw)
    assert r.strategy_used == "mask" and r.tokens_after <= budget < before, (r.reason, r.notes)
    assert shape_problems(r.messages, fmt) == []
    assert cf.estimate(r.messages, tools=r.tools, **kw) <= budget
    notes = [n for n in r.notes if n.startswith("nothing to fold, over the budget: cut the middle")]
    assert notes and len(r.pruned) == len(notes)
    # The older output (the larger, on a tie) is cut to its marker, the newer keeps its head
    # and end; each id gives the original back; what the cuts freed beyond the budget went back.
    text = json.dumps(r.messages)
    assert "step 1" in text and "error: step 1 failed" in text
    assert r.tokens_after >= 0.8 * budget, (r.tokens_after, budget)
    for fold_id in re.findall(r"id=(cf[0-9a-f]{12})", " ".join(notes)):
        assert "compiling module_" in c.recall(fold_id)
    # The task (here also the last user turn) verbatim, and the first output (the largest) cut.
    assert json.dumps(msgs[0]) == json.dumps(r.messages[0])


def test_a_history_with_nothing_to_fold_that_no_cut_brings_under_the_budget_raises_saying_by_how_much():
    # Before: returned unchanged, over its budget, with a reason (as a history too short to
    # fold whose floor missed the budget, or whose every message the caller protected).
    msgs = _nothing_to_fold("chat")
    snap = copy.deepcopy(msgs)
    with pytest.raises(cf.CompactionBudgetError, match="tokens over the budget of 40") as e:
        cf.Compactor(budget=40, min_tail=COVERING_TAIL).compact(msgs)
    assert e.value.budget == 40 and e.value.tokens > 40
    with pytest.raises(cf.CompactionBudgetError, match="the last user turn alone take 16 tokens, 6 over"):
        cf.Compactor(budget=10, min_tail=COVERING_TAIL).compact(msgs)
    with pytest.raises(cf.CompactionBudgetError, match="too short to compact"):
        cf.Compactor(budget=cf.estimate(msgs) // 2, protect_first_n=len(msgs)).compact(msgs)
    assert msgs == snap
    # Under its budget it still comes back as it was.
    assert not cf.Compactor(budget=10**6).compact(msgs).changed


_IDS = re.compile(r"cf[0-9a-f]{12}")


def _stores(tmp_path: Any) -> list[Any]:
    """A store of each kind a compaction writes to without a server: one in memory, one directory."""
    return [cf.MemoryContentStore(), cf.DirectoryContentStore(tmp_path / "folds")]


def _held(store: Any) -> dict[str, str]:
    """Every id ``store`` holds and its text (a directory's files, the memory store's entries)."""
    if isinstance(store, cf.DirectoryContentStore):
        return {f.stem: f.read_text(encoding="utf-8") for f in store.path.glob("cf*.txt")}
    return {fold_id: store.get(fold_id) for fold_id in list(store._items)}


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_cut_in_place_not_worth_making_stores_nothing(fmt, tmp_path):
    # A history with nothing to fold, whose cut in place frees less than min_free_share: the
    # history comes back as it was, and names no id. Before, the cut's texts were stored
    # anyway, before the gate refused it: an orphan file per cut message in a directory store
    # (an orphan key in Redis), none of which any placeholder would ever name.
    msgs = _nothing_to_fold(fmt)
    kw = dict(provider=PROVIDER[fmt])
    for store in _stores(tmp_path):
        c, r = _compacted_untouched(msgs, budget=cf.estimate(msgs, **kw) // 2, wire_format=fmt, recoverable=True,
                                    min_free_share=0.6, store=store, min_tail=COVERING_TAIL, **kw)
        assert r.strategy_used is None and r.reason.startswith("compaction skipped"), (r.reason, r.notes)
        assert r.messages == msgs and not _IDS.search(json.dumps(r.messages))
        assert _held(store) == {}


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_short_history_whose_call_arguments_alone_are_huge_has_them_shrunk_to_valid_json(fmt):
    # A file written whole by one call: 100,000 characters of arguments in a four-message
    # history came back unchanged at 22x the budget ("too short to compact"); a result that
    # large was cut.
    chat = [{"role": "user", "content": "Write the file."},
            {"role": "assistant", "content": None, "tool_calls": [{"id": "c", "type": "function", "function": {
                "name": "write", "arguments": json.dumps({"path": "a.txt", "content": "z" * 100_000})}}]},
            {"role": "tool", "tool_call_id": "c", "content": "ok"},
            {"role": "user", "content": "Now commit it."}]
    msgs = convert(chat, fmt)[0]
    kw = dict(provider=PROVIDER[fmt])
    for recoverable in (False, True):
        c = cf.Compactor(budget=3_000, wire_format=fmt, recoverable=recoverable, **kw)
        r = c.compact(msgs)
        assert r.strategy_used == "mask" and r.tokens_after <= 3_000, (r.reason, r.notes)
        assert cf.estimate(r.messages, tools=r.tools, **kw) <= 3_000
        assert shape_problems(r.messages, fmt) == []
        assert [p.kind for p in r.pruned] in (["arguments"], ["tool_use_input"]), r.pruned
        assert any("shrank the arguments of message 1" in n for n in r.notes), r.notes
        fold = re.search(r"id=(cf[0-9a-f]{12})", " ".join(r.notes))
        assert fold is not None and '"a.txt"' in c.recall(fold.group(1))
        assert "a.txt" in json.dumps(r.messages[1])


@pytest.mark.parametrize("fmt", ["anthropic", "bedrock"])
def test_a_recall_tool_that_does_not_fit_beside_a_short_history_is_left_out_not_the_budget(fmt):
    # With recoverable=True, the recall tool's declaration (615 tokens with Anthropic's tool-use
    # prompt) left no room beside a five-message history's floor, and the history came back
    # unchanged at 7.5x the budget; without it, it is cut to 663 tokens.
    chat = [{"role": "user", "content": "Fix the bug in foo.py"},
            {"role": "assistant", "content": None, "tool_calls": [{"id": "t1", "type": "function", "function": {
                "name": "read", "arguments": '{"path": "foo.py"}'}}]},
            {"role": "tool", "tool_call_id": "t1", "content": "log line of output\n" * 800},
            {"role": "assistant", "content": "The log says the parser fails. " * 80},
            {"role": "user", "content": "Thanks, now fix it."}]
    msgs = convert(chat, fmt)[0]
    kw = dict(provider=PROVIDER[fmt])
    r = cf.Compactor(budget=700, wire_format=fmt, recoverable=True, min_tail=COVERING_TAIL, **kw).compact(msgs)
    assert r.strategy_used == "mask" and r.tokens_after <= 700, (r.reason, r.notes)
    assert any(n.startswith("the recall tool is not sent") for n in r.notes), r.notes
    assert cf.RECALL_TOOL not in json.dumps(r.tools or [])
    assert cf.estimate(r.messages, tools=r.tools, **kw) <= 700


def _rounds_after_the_last_user_turn() -> tuple[list, int]:
    """A dialogue whose user's last turn is followed by three tool rounds with long outputs."""
    msgs = [{"role": "system", "content": "You are a travel agent. " + "Policy line: be careful. " * 200},
            {"role": "user", "content": "I need to change several reservations."}]
    for k in range(6):
        msgs.append({"role": "assistant", "content": f"Reservation R{k} holds flights " + "HAT100 on 2024-05-20, " * 30})
        msgs.append({"role": "user", "content": f"Thanks, noted for R{k}."})
    msgs.append({"role": "assistant", "content": "Shall I upgrade the remaining reservations?"})
    msgs.append({"role": "user", "content": "Yes: upgrade every remaining reservation to business class wherever you can."})
    turn = len(msgs) - 1
    for k in range(3):
        msgs.append({"role": "assistant", "content": f"Checking reservation R{k}.", "tool_calls": [
            {"id": f"call_u{k}", "type": "function", "function": {"name": "search", "arguments": json.dumps({"r": f"R{k}"})}}]})
        msgs.append({"role": "tool", "tool_call_id": f"call_u{k}",
                     "content": json.dumps([{"flight": f"HAT{i:03d}", "price": 100 + i} for i in range(40)])})
    return msgs, turn


def test_the_users_last_turn_survives_a_squeezed_fold_of_the_rounds_after_it():
    """The agent ran tool rounds after the user's last turn and the tail holds only the newest:
    at budgets where the summary is squeezed to a few dozen tokens the turn went with the fold
    (a 57-character summary in its place). Now, at every budget from its floor up, it is a
    message of the result or quoted whole by the summary."""
    msgs, turn = _rounds_after_the_last_user_turn()
    snap = copy.deepcopy(msgs)
    floor = cf.estimate([msgs[0], msgs[1], msgs[turn]])
    pinned = 0
    for budget in range(floor + 20, floor + 800, 60):
        r = cf.Compactor(budget=budget, strategy="summarize").compact(msgs)
        assert r.tokens_after <= budget
        verbatim = any(m is msgs[turn] or m == msgs[turn] for m in r.messages)
        assert verbatim or msgs[turn]["content"] in (r.summary or ""), (budget, r.summary, r.notes)
        pinned += any(n.startswith("degraded: kept the last user turn") for n in r.notes)
        assert shape_problems(r.messages, "chat") == []
    assert pinned > 0
    assert msgs == snap


@pytest.mark.skipif(not shared_available(), reason="needs ../shared/data (tau-bench airline dialogues)")
def test_a_fold_of_standing_rules_alone_keeps_a_pinned_turn_verbatim() -> None:
    """tau-bench dialogue 135 in Responses shape with the evaluation's rules planted, one rule
    pinned, fed as an agent loop at 0.6 of its size (summarize, recoverable): the second
    compaction's last step folded the pinned turn into a summary of the fold's rules alone (its
    words were there, the message was not). Found by an audit of 5,960 loops (4 such)."""
    import random

    from contextfold import _core
    from contextfold.evaluation import PLANTED_RULES
    from transcripts import SHARED, load_conversations

    conv = load_conversations(SHARED, "tau-bench-airline")[135]
    chat = list(conv["messages"])
    rnd = random.Random(conv["source"])
    for pos, text in sorted(((rnd.randrange(1, max(2, len(chat) - 2)), t) for t in PLANTED_RULES), reverse=True):
        at, legal = pos + 1, _core.legal_cuts_of(chat)
        while at < len(chat) and not legal[at]:
            at += 1
        chat[at:at] = [{"role": "user", "content": text}]
    msgs, _ = convert(chat, "responses")
    users = [i for i, m in enumerate(msgs) if m.get("role") == "user"][1:]
    pinned = msgs[users[int(len(users) * 0.4)]]
    kw = dict(provider="openai", tools=conv["tools"])
    budget = 3218
    c = cf.Compactor(budget=budget, strategy="summarize", recoverable=True, min_free_share=0.0,
                     pinned=lambda m: m == pinned, **kw)
    legal = _core.legal_cuts_of(msgs)
    fed = next(i for i, m in enumerate(msgs) if m.get("role") == "user") + 1
    current, held = msgs[:fed], 0
    while fed < len(msgs):
        end = fed + 1
        while end < len(msgs) and not legal[end]:
            end += 1
        current, fed = current + msgs[fed:end], end
        if cf.estimate(current, **kw) > 1.2 * budget or (fed >= len(msgs) and cf.estimate(current, **kw) > budget):
            had = any(m is pinned for m in current)
            try:
                r = c.compact(current)
            except cf.CompactionBudgetError:
                continue
            if had:
                held += 1
                assert any(m is pinned for m in r.messages), r.notes
            current = list(r.messages)
    assert held >= 2


def test_a_fold_marker_is_never_a_user_turn_right_after_a_kept_tool_result() -> None:
    # Where no summary fits, a marker line stands for the fold: in chat it took the user role
    # right after a head ending on a tool result, which Mistral's validator refuses (tool ->
    # user), as it refuses a summary there. (The bundled dialogues with the head through each
    # tool result: 253 marker folds, 7 of them so, all in the 23rd dialogue.) The count moves
    # with the estimate and the digest (246 before texts of up to 1 KiB were read whole, 260
    # since; 259 since a tool result of one number is indexed; 260 since the code symbols a
    # conversation used are reserved for in the index).
    from test_compactor import tau

    markers = 0
    for conv in tau():
        msgs, tools = conv["messages"], conv.get("tools")
        full = cf.estimate(msgs, model="gpt-4o", tools=tools)
        for k, m in enumerate(msgs):
            if m["role"] != "tool" or k + 3 >= len(msgs):
                continue
            for share in (0.5, 0.6, 0.7, 0.8):
                try:
                    r = cf.Compactor(model="gpt-4o", tools=tools, budget=int(full * share), min_tail=1,
                                     protect_first_n=k + 1).compact(msgs)
                except cf.CompactionError:
                    continue
                if not any("without a summary (no room for one)" in n for n in r.notes):
                    continue
                markers += 1
                out = r.messages
                assert out[k]["role"] == "tool" and out[k + 1]["role"] == "assistant", out[k + 1]
                assert shape_problems(out, "chat") == []
    assert markers == 260, markers


def _one_short_turn_to_fold(fmt: str) -> list[dict]:
    """An airline-style start: the task, the agent's one-line question, the user's answer, and
    a tool round whose output (a reservation, its flights and passengers) the next turn needs.
    The protected tail covers all but the question: a fold could take that turn alone."""
    flights = "".join(f'{{"flight_number": "HAT{k:03d}", "date": "2024-05-{10 + k % 20:02d}", "price": {100 + 7 * k}}}, '
                      for k in range(60))
    msgs = [
        {"role": "user", "content": "I want to change the flights of my reservation EUJUY6."},
        {"role": "assistant", "content": "Sure, I can help with that. Could you please give me your user ID?"},
        {"role": "user", "content": "My user ID is lucas_brown_4047."},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_0", "type": "function",
             "function": {"name": "get_reservation_details", "arguments": '{"reservation_id": "EUJUY6"}'}}]},
        {"role": "tool", "tool_call_id": "call_0",
         "content": f'{{"reservation_id": "EUJUY6", "user_id": "lucas_brown_4047", "flights": [{flights}], '
                    f'"passengers": [{{"first_name": "Lucas", "last_name": "Brown", "dob": "1967-04-08"}}]}}'},
    ]
    return convert(msgs, fmt)[0]


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_fold_whose_summary_costs_more_than_the_turn_it_folds_cuts_in_place_instead(fmt):
    # Before: the agent's one-line question was folded into a summary about twice its size
    # (the digest's header and the line restating it), and the newest tool output was cut
    # further to pay for that: the fold freed nothing. Now nothing is folded: every message
    # stays and the output alone loses its middle, no more of it than the budget asks.
    msgs = _one_short_turn_to_fold(fmt)
    kw = dict(provider=PROVIDER[fmt])
    budget = cf.estimate(msgs, **kw) - 150
    c, r = _compacted_untouched(msgs, budget=budget, wire_format=fmt, min_free_share=0.0, **kw)
    assert r.summary is None and r.removed == (), (r.summary, r.notes)
    assert len(r.messages) == len(msgs) and r.tokens_after <= budget
    assert shape_problems(r.messages, fmt) == []
    notes = [n for n in r.notes if "so nothing is folded; over the budget: cut the middle of message" in n]
    assert len(notes) == 1 == len(r.pruned), r.notes
    assert r.pruned[0].index == len(msgs) - 1
    # The question stays verbatim, and the output keeps more than the fold's cut left it
    # (measured at this budget: chat 1,396 -> 1,439 of its 1,606 tokens, Anthropic 1,418 ->
    # 1,450, Gemini 1,669 -> 1,903 of 2,097; every format lands at 94-99% of the budget. Gemini's
    # cut landed at 87% while it was written as an `output` string escaping the response's JSON
    # again: no cut above ~1,750 tokens was smaller than the whole in bytes).
    assert json.dumps(r.messages[1]) == json.dumps(msgs[1])
    assert r.tokens_after >= 0.94 * budget, (r.tokens_after, budget)
    fold_id = re.findall(r"id=(cf[0-9a-f]{12})", notes[0])
    assert len(fold_id) == 1 and "HAT031" in c.recall(fold_id[0])


def _a_short_reservation_to_cut(fmt: str) -> list[dict]:
    """The airline-style start above with a reservation of eight flights (~300 tokens): the
    output a real dialogue's first compaction cuts by a few dozen tokens."""
    flights = ", ".join(f'{{"origin": "DTW", "destination": "PHX", "flight_number": "HAT{k:03d}", '
                        f'"date": "2024-05-{10 + k:02d}", "price": {100 + 7 * k}}}' for k in range(8))
    msgs = copy.deepcopy(_one_short_turn_to_fold("chat"))
    msgs[-1]["content"] = (f'{{"reservation_id": "EUJUY6", "user_id": "lucas_brown_4047", "cabin": "economy", '
                           f'"flights": [{flights}], "payment_history": [{{"payment_id": "credit_card_8003957", '
                           f'"amount": 686}}], "insurance": "yes"}}')
    return convert(msgs, fmt)[0]


@pytest.mark.parametrize("fmt", [f for f in FORMATS if f != "gemini"])
def test_a_cut_in_place_keeps_all_of_the_output_the_budget_leaves_room_for(fmt):
    # Before: the cut was aimed at 95% of what would fit less 32 tokens and, landing short of its
    # aim on escaped JSON, took a real dialogue's reservation from 282 to 152 tokens where the
    # history was 54 over (97.6% of the budget used, five of its flights and dates gone); here
    # 73-76% of the budget. Now it is aimed at what fits and aimed again, between the aims that
    # fit and missed, where it lands short: 95-96% (the price moves in steps of ~16 tokens).
    # (Not Gemini: this output, a string, is its response's `result`, escaped once more, and no
    # cut above ~65% of it is smaller in bytes than the whole.)
    msgs = _a_short_reservation_to_cut(fmt)
    kw = dict(provider=PROVIDER[fmt])
    budget = cf.estimate(msgs, **kw) - 50
    c, r = _compacted_untouched(msgs, budget=budget, wire_format=fmt, min_free_share=0.0, **kw)
    assert r.summary is None and len(r.messages) == len(msgs), r.notes
    assert [p.index for p in r.pruned] == [len(msgs) - 1], r.notes
    assert shape_problems(r.messages, fmt) == []
    assert 0.95 * budget <= r.tokens_after <= budget, (r.tokens_after, budget)
    assert cf.estimate(r.messages, **kw) <= budget


class _RoomFillingSummarizer:
    """A model summarizer (the ``Summarizer`` protocol, as a caller writes one) that fills the
    room it is asked for with lines of progress, and counts its calls."""

    def __init__(self) -> None:
        self.calls = 0

    def summarize(self, request: cf.SummaryRequest) -> cf.SummaryResult:
        self.calls += 1
        lines = ["## Progress"]
        while cf.estimate([{"role": "user", "content": "\n".join(lines)}]) < 0.9 * request.max_tokens:
            lines.append(f"The agent checked shelf item {len(lines)} and found it in order.")
        return cf.SummaryResult("\n".join(lines))

    async def asummarize(self, request: cf.SummaryRequest) -> cf.SummaryResult:
        return self.summarize(request)


def _rule_in_the_largest_turn() -> tuple[list[dict], str]:
    """The agent's one-line question, then the user's answer: a ledger pasted beside a standing
    rule (the largest message), a tool round, and the user's next words; and the tool's output."""
    rows = lambda n, tag: "".join(f"{tag} row {k:04d}: status ok, checksum {k * 7919 % 10007:05d}\n" for k in range(n))
    output = rows(50, "B")
    return [
        {"role": "user", "content": "Audit the warehouse inventory and report anything missing."},
        {"role": "assistant", "content": "Sure. Which warehouse should I start with?"},
        {"role": "user", "content": "Warehouse 7. Never delete a row from the ledger. Here is last week's dump:\n"
                                    + rows(60, "W")},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "list", "arguments": '{"shelf": "B"}'}}]},
        {"role": "tool", "tool_call_id": "c1", "content": output},
        {"role": "user", "content": "Thanks. What is missing?"},
    ], output


@pytest.mark.parametrize("fmt", ["chat", "responses"])
def test_a_cut_in_place_refused_for_the_fold_stores_nothing_the_fold_does_not_name(fmt, tmp_path):
    # The model's summary of the agent's question costs more than the question, so the cut in
    # place is tried; it would cut the tool output (the pasted ledger that the fold cut states a
    # standing rule, which no cut in place touches), a message the fold keeps whole, so the
    # fold is kept. Before, the cut's text of that output stayed in the store, and so did the
    # span of the fold first planned (the fold returned is a shorter one): ids no message names.
    chat, output = _rule_in_the_largest_turn()
    msgs = convert(chat, fmt)[0]
    for store in _stores(tmp_path):
        c, r = _compacted_untouched(msgs, budget=cf.estimate(msgs) - 60, wire_format=fmt, recoverable=True,
                                    min_free_share=0.0, summarizer=_RoomFillingSummarizer(), store=store)
        assert r.summary is not None and r.removed and r.tokens_after <= r.budget, r.notes
        text = json.dumps(r.messages)
        assert json.dumps(output) in text  # (the tool output, whole)
        named = set(_IDS.findall(text))
        held = _held(store)
        # Held: what the result names, and the record a Compactor given a store files of each
        # edited copy it returns (fold_sources: a Compactor of another process reads the
        # original behind it), which no message names by design.
        records = {i for i, t in held.items() if t.startswith('{"copy": ')}
        assert named and set(held) == named | records, (sorted(named), {i: t[:40] for i, t in held.items()})
        assert all(output not in t for t in held.values())
        for fold_id in named:
            assert c.recall(fold_id)


@pytest.mark.skipif(not shared_available(), reason="needs ../shared/data (tau-bench airline dialogues)")
def test_real_dialogues_never_fold_a_span_into_a_larger_summary_where_a_cut_fits() -> None:
    """Every tau-bench dialogue cut where the agent is about to answer (at half and three
    quarters of its messages, as tools/future_report.py does), compacted at the naive cut's
    budget. On the old build 14 of 297 compactions folded a span (one short turn, mostly) into
    a summary that cost more than it, and cut the tail to pay for it; task48-trial0's newest
    reservation went 313 -> 67 tokens and lost 8 of the 11 facts the agent used next. Now each
    such fold is one the cuts could not replace (a cut that fits is taken)."""
    from contextfold.compactor import detect_wire_format
    from contextfold.evaluation import naive_cut
    from transcripts import SHARED, load_conversations

    checked = larger = 0
    for conv in load_conversations(SHARED, "tau-bench-airline"):
        msgs = conv["messages"]
        for share in (0.5, 0.75):
            at = int(len(msgs) * share)
            while at < len(msgs) and msgs[at].get("role") != "assistant":
                at += 1
            if at >= len(msgs) - 1 or at < 4:
                continue
            history = msgs[:at]
            budget = cf.estimate(naive_cut(history), tools=conv.get("tools"))
            c = cf.Compactor(provider="openai", budget=budget, tools=conv.get("tools"),
                             wire_format=detect_wire_format(history, "openai"), min_free_share=0.0)
            try:
                r = c.compact(history)
            except cf.CompactionBudgetError:
                continue
            checked += 1
            if r.summary is None:
                continue
            span = cf.estimate([history[i] for i in r.removed])
            if cf.estimate([{"role": "user", "content": r.summary}]) >= span:
                larger += 1
    # (297 compacted before texts of up to 1 KiB were read whole; one more budget fits since.)
    assert checked == 298
    assert larger <= 1, larger

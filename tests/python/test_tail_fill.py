"""The summary's room stays put across compactions: at most ROOM_SWING times its stable room
(decided from the budget, the head and the tail's target), the tail taking what exceeds it
(the round before it whole, or with its largest message cut in the middle, recoverable), so the
budget is still used."""

from __future__ import annotations

import re

import pytest

import contextfold as cf
from contextfold import _core
from contextfold.evaluation import Fixture
from contextfold.summary_room import ROOM_SWING, summary_room, summary_text_tokens
from contextfold.tail_fill import _cut_to
from test_what_compaction_keeps import inline_fixtures
from transcripts import shared_available, shared_fixture


def test_the_room_is_held_to_its_swing_over_the_stable_room() -> None:
    plan = {"summary_tokens": 500, "fixed_tokens": 1_000}
    assert summary_room(plan, 5_000, None) > 3_800  # the budget less everything else
    assert summary_room(plan, 5_000, None, stable=1_000) == int(1_000 * ROOM_SWING)
    assert summary_room(plan, 5_000, None, stable=100) == 500  # never under the planned share
    assert summary_room(plan, 5_000, 300, stable=1_000) == 300  # a cap is a cap


@pytest.mark.parametrize("fx", inline_fixtures(), ids=lambda f: f.name[-30:])
@pytest.mark.parametrize("share", [0.3, 0.5])
def test_the_tail_takes_what_exceeds_the_room_and_the_budget_is_still_used(fx: Fixture, share: float) -> None:
    total = _core.estimate(fx.messages, provider="openai", tools=fx.tools)
    head = _core.estimate(fx.messages[:2], provider="openai", tools=fx.tools)
    budget = head + int((total - head) * share)
    r = cf.Compactor(budget=budget, strategy="summarize", tools=fx.tools, min_free_share=0.0).compact(fx.messages)
    assert r.strategy_used == "summarize"
    assert 0.9 * budget <= r.tokens_after <= budget, r.notes
    # Recoverable (the budget less a recall round's reserve): each cut comes back.
    c = cf.Compactor(budget=budget, strategy="summarize", tools=fx.tools, min_free_share=0.0, recoverable=True)
    try:
        r = c.compact(fx.messages)
    except cf.CompactionBudgetError as e:  # the recall round's reserve leaves less than the floor
        assert "alone take" in str(e)
        return
    for note in r.notes:
        m = re.match(r"the tail takes message (\d+) with its middle cut .*id=(cf[0-9a-f]{12})", note)
        if m:
            # The cut message is in the tail, and its whole text (a call's: its arguments) comes
            # back byte-exact.
            cut = fx.messages[int(m.group(1))]
            original = cut["content"] if isinstance(cut.get("content"), str) else max(
                (c["function"]["arguments"] for c in cut.get("tool_calls") or ()), key=len)
            assert c.recall(m.group(2)) == original
            assert any(m.group(2) in str(x) for x in r.messages)


def _agent_history(big_output_chars: int) -> list[dict]:
    """A task, twenty small tool rounds, then a round with a large output and a last small one."""
    msgs: list[dict] = [{"role": "system", "content": "You are a coding agent."},
                        {"role": "user", "content": "Fix the failing test in src/app.py. " + "Context line. " * 300}]
    for k in range(20):
        msgs.append({"role": "assistant", "content": None, "tool_calls": [{"id": f"c{k}", "type": "function", "function": {
            "name": "bash", "arguments": f'{{"cmd": "grep -n handler src/mod{k}.py"}}'}}]})
        msgs.append({"role": "tool", "tool_call_id": f"c{k}", "content": f"src/mod{k}.py:{k + 10}: def handler_{k}(req): ..."})
    lines = "\n".join(f"tests/test_app.py::test_case_{i} PASSED" for i in range(big_output_chars // 40))
    msgs.append({"role": "assistant", "content": None, "tool_calls": [{"id": "big", "type": "function", "function": {
        "name": "bash", "arguments": '{"cmd": "pytest -v"}'}}]})
    msgs.append({"role": "tool", "tool_call_id": "big", "content": lines})
    msgs.append({"role": "assistant", "content": None, "tool_calls": [{"id": "last", "type": "function", "function": {
        "name": "bash", "arguments": '{"cmd": "git status"}'}}]})
    msgs.append({"role": "tool", "tool_call_id": "last", "content": "nothing to commit"})
    return msgs


def test_the_tail_does_not_swallow_the_fold_and_the_summary_gives_back_what_it_leaves() -> None:
    # Just over the budget, with a large output in the protected tail: the plan masks it so the
    # summary gets its share, but the fold is then too small to fill that share. The tail must
    # not take the whole fold (a summary of a few lines, the budget a third unused): the summary
    # folds the small rounds, and what it leaves goes back to the masked output.
    msgs = _agent_history(12_000)
    total = _core.estimate(msgs, provider="openai")
    budget = total - total // 8
    for recoverable in (False, True):
        # (A tail of three messages at least holds the large output: the case here.)
        c = cf.Compactor(budget=budget, strategy="summarize", min_free_share=0.0, recoverable=recoverable, min_tail=3)
        r = c.compact(msgs)
        assert r.strategy_used == "summarize" and r.summary
        if not recoverable:  # (recoverable keeps a recall round's reserve out of the budget)
            assert r.tokens_after >= 0.9 * budget, r.notes
        assert len(r.removed) >= 10, r.notes  # the small rounds are folded, not taken by the tail
        big = next(m for m in r.messages if m.get("tool_call_id") == "big")
        gave_back = [n for n in r.notes if n.startswith("the summary left room")]
        assert gave_back, r.notes
        cut = re.search(r"id=(cf[0-9a-f]{12})", gave_back[-1])
        if cut:  # kept with its middle cut: the whole output comes back byte-exact
            assert len(big["content"]) > len(msgs[-3]["content"]) // 2
            assert c.recall(cut.group(1)) == msgs[-3]["content"]
        else:
            assert big["content"] == msgs[-3]["content"]
    assert msgs == _agent_history(12_000)  # the caller's history untouched


@pytest.mark.parametrize("fx", inline_fixtures(), ids=lambda f: f.name[-30:])
def test_a_capped_summary_leaves_the_rest_of_the_budget_to_the_tail(fx: Fixture) -> None:
    # summary_max_tokens caps the summary, not the history: what the cap leaves goes to the tail
    # (whole rounds of the fold kept verbatim) rather than being left unused.
    total = _core.estimate(fx.messages, provider="openai", tools=fx.tools)
    head = _core.estimate(fx.messages[:2], provider="openai", tools=fx.tools)
    budget = head + int((total - head) * 0.5)
    r = cf.Compactor(budget=budget, strategy="summarize", tools=fx.tools, min_free_share=0.0,
                     summary_max_tokens=300).compact(fx.messages)
    assert summary_text_tokens(r.summary or "", "openai") <= 300 + 8
    assert 0.85 * budget <= r.tokens_after <= budget, r.notes


def test_a_large_budget_caps_the_summary_by_default_and_the_tail_keeps_the_rest() -> None:
    # A budget whose room would take a summary of ~100k tokens: by default the summary stops at
    # DEFAULT_SUMMARY_MAX_TOKENS and the tail keeps more rounds whole, so the budget is used.
    from contextfold.compactor import DEFAULT_SUMMARY_MAX_TOKENS

    msgs: list[dict] = [{"role": "system", "content": "You are a coding agent."},
                        {"role": "user", "content": "Refactor the parser in src/parse.py and keep the tests green."}]
    for k in range(900):
        out = f"src/mod{k}.py:{k}: " + " ".join(f"token{k}_{j} value{j}" for j in range(120))
        msgs.append({"role": "assistant", "content": f"Reading module {k}.", "tool_calls": [{
            "id": f"c{k}", "type": "function", "function": {"name": "read", "arguments": f'{{"path": "src/mod{k}.py"}}'}}]})
        msgs.append({"role": "tool", "tool_call_id": f"c{k}", "content": out})
    total = _core.estimate(msgs, provider="openai")
    budget = total // 2
    r = cf.Compactor(budget=budget, tail_tokens=budget // 4, strategy="summarize").compact(msgs)
    summary = summary_text_tokens(r.summary or "", "openai")  # (as the history prices it)
    assert budget // 2 > DEFAULT_SUMMARY_MAX_TOKENS  # the room the budget leaves is over the cap
    assert 0.8 * DEFAULT_SUMMARY_MAX_TOKENS <= summary <= DEFAULT_SUMMARY_MAX_TOKENS + 8
    assert 0.95 * budget <= r.tokens_after <= budget, r.notes
    assert any(n.startswith("the tail takes messages") for n in r.notes), r.notes
    # An explicit cap above it lets the summary take the room.
    big = cf.Compactor(budget=budget, tail_tokens=budget // 4, strategy="summarize",
                       summary_max_tokens=budget).compact(msgs)
    assert summary_text_tokens(big.summary or "", "openai") > 1.5 * DEFAULT_SUMMARY_MAX_TOKENS


def test_a_summary_a_few_tokens_over_gives_up_its_least_identifiers_not_its_body() -> None:
    from contextfold.summary_room import trim_index

    body = "## User requests\n- Fix the failing test in src/app.py.\n\n"
    paths = ", ".join(f"src/pkg{k}/module{k}.py" for k in range(60))
    index = f"{_core.IDENTIFIER_INDEX_HEADING}\n- paths: {paths}\n- ids: AB12CD, EF34GH"
    summary = body + index
    price = cf.estimate_each([{"role": "user", "content": summary}])[0]
    trimmed = trim_index(summary, 40, provider="openai", model=None)
    assert trimmed is not None and trimmed.startswith(body)
    assert cf.estimate_each([{"role": "user", "content": trimmed}])[0] <= price - 40
    # The lowest-ranked (last) identifiers of the longest line went; every line keeps its first.
    assert "src/pkg0/module0.py" in trimmed and "src/pkg59/module59.py" not in trimmed
    assert "- ids: AB12CD, EF34GH" in trimmed
    # Identifiers the previous summary's index carried go last, wherever they sit in the line.
    previous = f"{_core.IDENTIFIER_INDEX_HEADING}\n- paths: src/pkg58/module58.py, src/pkg59/module59.py"
    kept = trim_index(summary, 40, provider="openai", model=None, previous=previous)
    assert kept is not None and "src/pkg59/module59.py" in kept and "src/pkg58/module58.py" in kept
    assert "src/pkg57/module57.py" not in kept
    assert trim_index(body, 10, provider="openai", model=None) is None  # no index: nothing to give
    assert trim_index(summary, 10_000, provider="openai", model=None) is None  # more than it holds


def test_the_round_cut_into_the_tail_leaves_the_fold_what_fills_the_room() -> None:
    """A SWE run's first compaction folds its first thought and a 3,013-token listing. The tail
    used to take the listing too, cut to 267 tokens, which left the summary one thought: 111
    tokens of a 1,503-token room and 71% of the budget used. The cut round now moves only while
    what stays folded fills the room (``FOLD_PER_ROOM``), so the listing is digested."""
    from transcripts import LOCAL, load_conversations

    from contextfold.evaluation import Probe, planted, successive

    conv = next(r for r in load_conversations(LOCAL, "mini-swe-agent-gemini3") if "django-14608" in r["source"])
    fx = Fixture(conv["source"], list(conv["messages"]), (Probe("-", ("-",)),), "openai", conv.get("tools"), None)
    s = successive(fx, rules=planted(fx))
    assert s.folded[0] >= 2 and s.sizes[0] >= 600, s
    assert s.sizes[0] >= 0.5 * s.rooms[0], s  # (was 7%)


def _recorded_successive(monkeypatch: pytest.MonkeyPatch, source: str,
                         shared: bool = False) -> list[tuple[list, cf.CompactionResult, cf.Compactor]]:
    """The bundled SWE run ``source`` (with ``shared``, from ../shared/data) compacted
    successively (``evaluation.successive``), each compaction's input, result and compactor
    recorded."""
    from transcripts import LOCAL, SHARED, load_conversations

    from contextfold import evaluation
    from contextfold.evaluation import Probe, planted, successive

    seen: list[tuple[list, cf.CompactionResult, cf.Compactor]] = []

    class Recording(cf.Compactor):
        def compact(self, messages, /):  # type: ignore[no-untyped-def]
            r = super().compact(messages)
            seen.append((list(messages), r, self))
            return r

    monkeypatch.setattr(evaluation, "Compactor", Recording)
    conv = next(r for r in load_conversations(SHARED if shared else LOCAL, "mini-swe-agent-gemini3")
                if source in r["source"])
    fx = Fixture(conv["source"], list(conv["messages"]), (Probe("-", ("-",)),), "openai", conv.get("tools"), None)
    successive(fx, rules=planted(fx))
    return seen


@pytest.mark.skipif(not shared_available(), reason="needs ../shared/data (SWE runs)")
def test_a_round_moved_into_the_tail_is_aimed_again_with_the_room_its_shorter_fold_left(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """django-14373's first successive compaction (when a shallow fold's tail was half the
    budget): the digest came short of its room, the fold's newest round moved into the tail cut
    to the 1,111 tokens left, and the fold of the three messages left digested to 260 tokens:
    81% of the budget used. The round is aimed again with what the shorter digest left. (With a
    fold's tail of 15% at every depth, django-11095's first compaction moved rounds so: 99.3%;
    since the digest prices its text as the history does, it fills its room there, and
    django-13820's first compaction moves a round cut to the room left: 99.9%. Since texts of
    up to 1 KiB are read whole its digest fills its room itself, 97.8%, and of the 120 runs of
    the shared data django-13741's third compaction alone moved a round so: 98.2%; then
    django-12713's first: 98.1%. Since the identifier index gives a numbered dump's definitions
    no successive compaction of the 120 SWE runs or the 149 tau-bench dialogues moves a round
    so (measured): django-12713's compactions, where the last one did, are held to 95% of their
    budget instead.)"""
    seen = _recorded_successive(monkeypatch, "django-13820", shared=True)
    _, first, _ = next((m, r, c) for m, r, c in seen if r.strategy_used == "summarize")
    assert first.tokens_after >= 0.95 * first.budget, (first.tokens_after, first.budget, first.notes)
    folds = [r for _, r, _ in _recorded_successive(monkeypatch, "django-12713", shared=True)
             if r.strategy_used == "summarize"]
    assert len(folds) >= 6 and all(r.tokens_after >= 0.95 * r.budget for r in folds), \
        [(r.tokens_after, r.budget) for r in folds]


def test_a_round_too_large_for_what_the_summary_left_joins_the_tail_cut(monkeypatch: pytest.MonkeyPatch) -> None:
    """django-11848's second compaction folds a previous summary, an error output and a
    4,113-token thought. The digest took 1,263 tokens of its room and no round of the fold fit
    what it left whole: 39% of the budget went unused. The thought now joins the tail with its
    middle cut (recoverable), and the shorter fold is digested again. Since the identifier index
    gives a numbered dump's definitions, django-11848's digests fill their rooms themselves; of
    the bundled runs, django-13279's tail takes message 8 with its middle cut (~653 -> ~305
    tokens) where the summary's room is full, every compaction at 97.6% of its budget or more."""
    seen = _recorded_successive(monkeypatch, "django-13279")
    used = [r.tokens_after / r.budget for _, r, _ in seen if r.strategy_used == "summarize"]
    # (Was 0.61 at the second; then 0.74 when the first compaction kept two more messages and
    # the second's tail fill cut the thought before the digest came short of its room: a cut
    # the fill made now goes back like the tail's own edits, `CompactionRun.fill_cut`.)
    assert len(used) >= 4 and min(used) >= 0.9, used
    cuts = 0
    for messages, r, c in seen:
        for note in r.notes:
            m = re.search(r"(?:join the tail, message (\d+)|the tail takes message (\d+)|message (\d+) joins the tail) "
                          r"with its middle cut .*id=(cf[0-9a-f]{12})", note)
            if m:
                cuts += 1
                index, fold_id = next(g for g in m.groups()[:3] if g), m.group(4)
                assert c.recall(fold_id) == messages[int(index)]["content"]
                # (The harness's model has no recall tool: the marker names no id.)
                assert not any(fold_id in str(x.get("content")) for x in r.messages)
                assert any(re.search(r"tokens cut( from the middle(; mentions [^\]\n]*)? \.\.\.)?\]", str(x.get("content"))) for x in r.messages)
    assert cuts >= 1


def test_a_summary_carrying_the_previous_one_is_not_squeezed_to_a_few_lines(monkeypatch: pytest.MonkeyPatch) -> None:
    """Over the bundled SWE runs' successive compactions, no summary falls under a third of the
    one before it: the previous summary is
    the only home of everything before it (the tail gives way first: fewer messages, cuts), and
    its long lines are carried at the length the room holds (one went from 1,673 to 459 tokens
    in a room of 1,638). Unless the tail has given way all it can: the three messages it
    always keeps (the last one an observation of 2,698 tokens the model is about to read,
    django-13925's fifth compaction) and the history at 95% of its budget or more."""
    from transcripts import LOCAL, load_conversations

    checked = forced = 0
    for conv in load_conversations(LOCAL, "mini-swe-agent-gemini3"):
        seen = [r for _, r, _ in _recorded_successive(monkeypatch, conv["source"]) if r.summary]
        for before, after in zip(seen, seen[1:]):
            tokens = [summary_text_tokens(r.summary or "", "openai") for r in (before, after)]
            if tokens[1] >= tokens[0] / 3:
                checked += 1
                continue
            at = next(k for k, m in enumerate(after.messages) if _core.SUMMARY_MARKERS[0] in str(m.get("content")))
            assert len(after.messages) - at - 1 <= 3 and after.tokens_after >= 0.95 * after.budget, \
                (conv["source"], tokens, after.notes)
            forced += 1
    # (Measured: 108 pairs of successive summaries checked, 1 squeezed by its forced tail; 108
    # before a fold whose summary cost more than its span was made a cut in place instead, 107
    # after it, 108 again since a cut's marker names what its middle mentioned, 109 since the
    # tail keeps two messages at least, 108 since a search keeps its matches: django-10880 is
    # compacted 8 times, not 9; 109 since texts of up to 1 KiB are read whole; 108 since the
    # code symbols a run used are reserved for in the index: 109 pairs in all; 108 pairs in all
    # since a clipped conclusion leaves out its closing intent, none squeezed, none forced; 107
    # pairs since the index gives a numbered dump's definitions, none squeezed, none forced;
    # 107 and 1 forced since a Django run is shown without its database setup and a test
    # failure by its own frame: django-13925's fifth compaction, 3,032 -> 974 tokens beside the
    # 2,698-token observation its tail keeps, the case this docstring names; (107, 0) again
    # since a clipped here-document shows its script's end rather than its setup.)
    assert (checked, forced) == (107, 0), (checked, forced)


def _successive_budget_used(run: str) -> list[float]:
    """``tokens_after / budget`` of each compaction of a SWE run of ../shared/data under the
    successive harness (its planted rules, 30% of the run beside the head)."""
    from contextfold import evaluation as ev

    fx = shared_fixture("mini-swe-agent-gemini3", run)
    _, _, budget = ev.successive_setup(fx, rules=ev.planted(fx))
    s = ev.successive(fx, rules=ev.planted(fx))
    # (A compaction's room is its summary plus what it left of the budget.)
    return [(budget - (room - size)) / budget for size, room in zip(s.sizes, s.rooms, strict=True)]


@pytest.mark.skipif(not shared_available(), reason="needs ../shared/data (SWE runs)")
def test_a_room_held_to_its_stable_size_leaves_the_rest_of_the_budget_to_the_fold_s_newest_rounds() -> None:
    """django-11133's first compaction: the summary's room is held to 1.2x its stable room
    (1,284 tokens) and the tail found nothing to take beside the last messages (the round
    before them holds a 2,413-token output), so the history stood at 2,844 of 4,344 tokens
    (65%). The digest filled its room, so the fold's newest rounds were never offered to the
    tail; now they are while the history is under 95% of its budget, the output cut in the
    middle (recoverable), and the tail's walk may take the rounds the cut output leaves room
    for. Every compaction of the run uses 90% of its budget or more."""
    used = _successive_budget_used("django__django-11133")
    assert len(used) >= 5 and min(used) >= 0.9, used


@pytest.mark.skipif(not shared_available(), reason="needs ../shared/data (SWE runs)")
def test_a_tail_output_given_back_with_its_middle_cut_is_aimed_again_until_it_fits() -> None:
    """django-14155's third compaction: a 3,068-token output masked in the tail was given back
    with its middle cut to the 2,115 tokens the summary left, priced 95 tokens over the budget,
    and was masked again: the history stood at 68% of its budget. The cut is now aimed again
    (by what the history missed, then halfway) and the fullest that fits is kept."""
    used = _successive_budget_used("django__django-14155")
    assert len(used) >= 3 and used[2] >= 0.9, used


def _compact_share(name: str, source: str, share: float, **kw: object) -> tuple[cf.CompactionResult, int]:
    """A conversation of ../shared/data compacted (hybrid) to its head and ``share`` of the
    rest: the result and the budget."""
    fx = shared_fixture(name, source)
    head = _core.estimate(fx.messages[:2], provider="openai", tools=fx.tools)
    budget = head + int((_core.estimate(fx.messages, provider="openai", tools=fx.tools) - head) * share)
    c = cf.Compactor(budget=budget, strategy="hybrid", tools=fx.tools, min_free_share=0.0, **kw)  # type: ignore[arg-type]
    return c.compact(fx.messages), budget


@pytest.mark.skipif(not shared_available(), reason="needs ../shared/data (SWE runs)")
def test_masking_gives_back_what_it_freed_beyond_the_budget_newest_output_first() -> None:
    """astropy-7166 at its head and 70% of the rest: every old output over its threshold was
    masked (2,998, 2,264 and 428 tokens) where the first alone freed what the budget asked,
    and the history stood at 67% of its budget. The newest masked outputs now come back while
    they fit whole (recoverable: the next one with its middle cut), the oldest stay masked."""
    fx = shared_fixture("mini-swe-agent-gemini3", "astropy-7166")
    r, budget = _compact_share("mini-swe-agent-gemini3", "astropy-7166", 0.7, recoverable=True)
    assert r.strategy_used == "mask"
    # (Recoverable: the budget less a recall round's reserve is aimed at.)
    assert 0.85 * budget <= r.tokens_after <= budget, (r.tokens_after, budget, r.notes)
    assert [p.index for p in r.pruned] == [3], r.pruned
    assert r.messages[9] == fx.messages[9]  # given back whole
    assert any(n.startswith("masking left room: message 5 kept with its middle cut") for n in r.notes), r.notes
    # Not recoverable: the model is offered no recall tool, so the cut's marker names none (and
    # no id); the budget is used the same.
    r, budget = _compact_share("mini-swe-agent-gemini3", "astropy-7166", 0.7)
    assert [p.index for p in r.pruned] == [3] and r.messages[9] == fx.messages[9], r.pruned
    assert 0.95 * budget <= r.tokens_after <= budget, (r.tokens_after, budget, r.notes)
    assert re.search(r"tokens cut from the middle(; mentions [^\]\n]*)? \.\.\.\]", str(r.messages[5]))
    assert "id=cf" not in str(r.messages) and "contextfold_recall" not in str(r.messages)


@pytest.mark.skipif(not shared_available(), reason="needs ../shared/data (SWE runs)")
def test_masking_gives_back_the_newest_outputs_and_cuts_a_colored_test_run() -> None:
    """django-13551 at 70%: after the newest masked output came back, the next (1,129 tokens
    for the 1,099 left, a pytest run in ANSI colours) had no cut that fit, and the give-back
    stopped there at 89% of the budget. Older outputs that fit whole then came back (the 942
    tokens before it), and now the run itself is cut: its escapes (`\\u001b`, 6 bytes for 1)
    had made every cut look larger than the raw text it replaced."""
    r, budget = _compact_share("mini-swe-agent-gemini3", "django-13551", 0.7)
    assert r.strategy_used == "mask"
    assert r.tokens_after >= 0.95 * budget, (r.tokens_after, budget, r.notes)
    assert any("message 25 kept whole" in n for n in r.notes), r.notes
    assert any("message 21 kept with its middle cut" in n for n in r.notes), r.notes


def test_a_masked_output_with_nothing_to_cut_lets_an_older_one_come_back_whole() -> None:
    """An Anthropic history whose middle tool result is a screenshot with no text (no middle
    cut can be written for it) between two text results: masking left room for the newest and
    the oldest but not the middle one, and the give-back goes past it to the oldest, whole or
    cut (it had stopped at the first message with no cut that fits)."""
    from test_ollama_native import png_base64

    png = png_base64(1092, 1092, 0)  # (~1,590 tokens: width x height / 750)

    def words(n: int, tag: str) -> str:
        return " ".join(f"{tag}{k} value={k * 7} ok" for k in range(n))
    msgs: list[dict] = [{"role": "user", "content": "Fix the failing build in src/app and report what changed."}]
    for k, body in enumerate([words(150, "old"), None, words(90, "new")]):
        msgs.append({"role": "assistant", "content": [
            {"type": "text", "text": f"Step {k}."},
            {"type": "tool_use", "id": f"t{k}", "name": "run", "input": {"cmd": f"make step{k}"}}]})
        content: object = body if body is not None else [
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": png}}]
        msgs.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"t{k}", "content": content}]})
    for k in range(6):
        msgs.append({"role": "assistant", "content": f"Working on part {k}: " + words(20, "p")})
        msgs.append({"role": "user", "content": f"Continue with part {k}, please."})
    each = cf.estimate_each(msgs, provider="anthropic")
    checked = 0
    # Budgets where the oldest result fits at least cut, and the middle one does not fit whole
    # (the newest is given back first where it was masked).
    masked_all = cf.estimate(msgs, provider="anthropic") - each[2] - each[4] - each[6]
    for budget in range(masked_all + each[6] + each[2] // 2, masked_all + each[6] + each[2] + each[4] // 2, 100):
        r = cf.Compactor(budget=budget, provider="anthropic", strategy="hybrid", min_free_share=0.0,
                         wire_format="anthropic").compact(msgs)
        assert r.strategy_used == "mask" and r.tokens_after <= budget
        if 4 not in {p.index for p in r.pruned}:
            continue
        checked += 1
        notes = " ".join(r.notes)
        assert re.search(r"messages? 2(, 6)? kept whole|message 2 kept with its middle cut", notes), (budget, r.notes)
    assert checked >= 3


@pytest.mark.skipif(not shared_available(), reason="needs ../shared/data (SWE runs)")
def test_the_fold_s_newest_round_moved_into_the_tail_is_aimed_again_when_it_lands_over() -> None:
    """django-13569 at 30%: the newest round of the fold, cut to the 1,237 tokens the summary
    left, joined the tail with the three messages before it (the walk takes what the cut leaves
    room for): 223 tokens over, and the room was given up at 84% of the budget. It is aimed
    again by what the history missed. (django-16661 at 70%, whose 6,314-token thought was
    moved so, now fills the budget in the digest: the newest thought is sized to the room.)"""
    for source, share in (("django-13569", 0.3), ("django-16661", 0.7)):
        # (The tail of half the budget this was found with: the default gives a deep fold's
        # summary more of it, and django-13569 then needs no cut.)
        r, budget = _compact_share("mini-swe-agent-gemini3", source, share, keep=("fraction", 0.5))
        assert r.strategy_used == "summarize"
        assert 0.95 * budget <= r.tokens_after <= budget, (source, r.tokens_after, budget, r.notes)
        if source == "django-13569":
            assert any("middle cut" in n for n in r.notes), r.notes


@pytest.mark.skipif(not shared_available(), reason="needs ../shared/data (SWE runs)")
def test_a_middle_cut_steps_down_by_doubling_while_its_price_misses() -> None:
    """django-16661's 6,314-token thought cut to 1,641 tokens priced 1,676, then 1,676 again
    59 tokens lower (the estimate samples long texts, so a cut's price moves in jumps): each
    miss now steps down twice as far, and a cut that fits is found."""
    fx = shared_fixture("mini-swe-agent-gemini3", "django-16661")
    costs = _core.estimate_each(fx.messages, provider="openai")
    i = max(range(len(costs)), key=lambda k: costs[k])
    assert costs[i] > 6_000
    for keep in (1_641, 1_617, 1_136):
        cut = _cut_to(list(fx.messages), i, keep, "openai", None)
        assert cut is not None, keep
        assert _core.estimate_each([cut[0][i]], provider="openai")[0] <= keep


@pytest.mark.skipif(not shared_available(), reason="needs ../shared/data (airline dialogues)")
def test_messages_given_back_whole_are_checked_against_the_budget_priced_whole() -> None:
    """task3-trial0 at 70%: the tail fill's cut (382 -> 150 tokens) was given back whole into the
    331 tokens the summary left, priced by what the cut saved (232); the history priced whole
    came out 1,082 tokens over (the message the summary is merged into is priced with it). What
    is given back whole is now checked, and edited again, oldest first, while over."""
    r, budget = _compact_share("tau-bench-airline", "task3-trial0", 0.7)
    assert r.strategy_used == "summarize"
    assert r.tokens_after <= budget, (r.tokens_after, budget, r.notes)


@pytest.mark.skipif(not shared_available(), reason="needs ../shared/data (airline dialogues)")
def test_the_summary_takes_the_room_its_steady_size_held_back_when_the_tail_can_take_none() -> None:
    """django-14915's first and fourth successive compactions (while the history sampled a
    summary's text and the digest counted it line by line): the digest filled its room, held to
    1.2x its steady size, and the tail could take nothing more (no edit to give back; the next
    round, a 2,259-token output, left the fold nothing to digest): 82.6% and 82.3% of the budget
    used. The digest is now written again in the room the budget leaves. Since the digest
    prices its text as the history does, none of the successive SWE compactions at 30% needs
    it; task6-trial1's second compaction at half its middle does (its steady room 1,374 tokens,
    the digest written for 1,506)."""
    from contextfold import evaluation as ev

    fx = shared_fixture("tau-bench-airline", "task6-trial1")
    _, _, budget = ev.successive_setup(fx, rules=ev.planted(fx), budget_share=0.5)
    s = ev.successive(fx, rules=ev.planted(fx), budget_share=0.5)
    widened = [k for k, notes in enumerate(s.notes) if any("the tail could not" in n for n in notes)]
    assert widened, s.notes
    for k in widened:
        used = (budget - (s.rooms[k] - s.sizes[k])) / budget
        assert 0.95 <= used <= 1.0, (k, used)
        # (Its steady room is the room the others were held to: the widened one is larger.)
        assert s.sizes[k] > min(s.sizes), s.sizes


class _ShortModel:
    """A model's summary: about 300 tokens, whatever its room (models write what they write)."""

    def __init__(self) -> None:
        self.calls = 0

    def summarize(self, request: cf.SummaryRequest) -> cf.SummaryResult:
        self.calls += 1
        body = " ".join(f"note{k} on the work" for k in range(60))
        return cf.SummaryResult(f"## Goal\nFix the bug.\n\n## Progress\n{body}\n\n## Next step\nRun the tests.")


@pytest.mark.parametrize("share", [0.3, 0.5, 0.7])
def test_a_model_summary_shorter_than_its_room_leaves_the_rest_to_the_fold_s_newest_rounds(share: float) -> None:
    """A model writes a few hundred tokens whatever its room. The room it leaves goes to the
    fold's newest rounds, moved into the tail (the next one cut to fit), with the summary kept
    as written and the model asked once: the bundled SWE runs and airline dialogues at 30, 50
    and 70% of what follows their head land at 97% of the budget by median, at most an eighth
    of them under 90% where the next round cannot be cut to fit (on the shared data the medians
    were 73-82% for the SWE runs and 88-98% for the airline dialogues, with up to 63 of 95
    airline compactions under 90%)."""
    from transcripts import LOCAL, load_conversations

    from contextfold.evaluation import _head_end, _tokens

    used: list[float] = []
    for name in ("mini-swe-agent-gemini3", "tau-bench-airline"):
        for conv in load_conversations(LOCAL, name):
            fx = Fixture(conv["source"], list(conv["messages"]), (), "openai", conv.get("tools"), None)
            head = _head_end(fx.messages)
            fixed = _tokens(fx.messages[:head], fx)
            budget = fixed + int((_tokens(fx.messages, fx) - fixed) * share)
            model = _ShortModel()
            # (None raises: a raise fails the test.)
            r = cf.Compactor(budget=budget, tools=fx.tools, summarizer=model).compact(fx.messages)
            if r.summary is None or r.fallback_used:
                continue
            assert model.calls == 1, (fx.name, r.notes)
            assert r.summary.startswith("## Goal\nFix the bug."), r.summary
            assert r.tokens_after <= budget
            used.append(r.tokens_after / budget)
    # (Measured: of the 40 conversations, 29 / 34 / 29 take the model's summary at 30 / 50 / 70%;
    # the others need no summary or fall back on the digest; none raises. 30 at 30% while a
    # masked output's placeholder named five identifiers: with up to eight, task0-trial0's kept
    # placeholders leave its summary less room, and the model's answer, over its share even
    # without its index, gives way to the digest. 33 at 30% since the tail keeps two messages
    # at least: four more summaries fit their room. 34 at 30% since texts of up to 1 KiB are
    # read whole.)
    assert len(used) == {0.3: 34, 0.5: 34, 0.7: 29}[share], len(used)
    assert sorted(used)[len(used) // 2] >= 0.97, sorted(used)
    assert sum(u < 0.9 for u in used) <= len(used) // 8, sorted(used)


def test_a_cut_given_more_room_later_is_noted_once_with_its_final_size():
    # The README's example with the tail a deep fold had by default before (35% of the budget;
    # at 25% its tail takes whole rounds and cuts none): the tail fill cut message 88 (~381 ->
    # ~158 tokens), then the room the summary left went back to the same cut. One note names
    # it, with the size it ended at.
    import json
    from pathlib import Path

    data = json.loads((Path(__file__).resolve().parents[2] / "examples" / "swe-trajectory.json").read_text())
    msgs, model, tools = data["messages"], data.get("model"), data.get("tools")
    budget = cf.estimate(msgs, provider="gemini", model=model, tools=tools) // 4
    r = cf.Compactor(provider="gemini", model=model, tools=tools, budget=budget,
                     tail_tokens=int(budget * 0.35)).compact(msgs)
    named = [i for n in r.notes for i in re.findall(r"id=(cf[0-9a-f]{12})", n)]
    assert named and len(named) == len(set(named)), r.notes
    (note,) = [n for n in r.notes if n.startswith("the tail takes message")]
    m = re.search(r"message (\d+) with its middle cut \(~(\d+) -> ~(\d+) tokens", note)
    assert m and int(m.group(3)) < int(m.group(2)), note
    # The size it names is the size the message has in the result (within the estimate's slack).
    kept = cf.estimate_each(r.messages, provider="gemini", model=model)
    assert any(abs(k - int(m.group(3))) <= 0.15 * int(m.group(3)) for k in kept), (note, kept)


def test_a_tail_cut_given_back_whole_leaves_no_note_of_its_cut() -> None:
    # django-11848 folded at 25-45% of its middle, recoverable: where the tail fill cut a message
    # and the room the summary left then gave it back whole, its cut note stayed beside "kept
    # whole", naming an id the history no longer showed. Swept over budgets: which budget makes
    # the cut and the give-back moves with the estimate (30% did until a merged summary was
    # priced apart from its host; with a fold's tail of 15% of the budget, 11 of the budgets
    # from 15% to 70% did, the first at 41%; since the digest prices its text as the history
    # prices a summary, the budgets at 69, 70, 74 and 75%).
    (fx,) = [f for f in inline_fixtures() if "11848" in f.name]
    total = _core.estimate(fx.messages, provider="openai", tools=fx.tools)
    head = _core.estimate(fx.messages[:2], provider="openai", tools=fx.tools)
    given_back = 0
    for share in range(25, 80):
        budget = head + int((total - head) * share / 100)
        c = cf.Compactor(budget=budget, strategy="summarize", tools=fx.tools, min_free_share=0.0, recoverable=True)
        r = c.compact(fx.messages)
        for whole in [n for n in r.notes if "kept whole" in n]:
            given_back += 1
            i = int(re.search(r"messages? (\d+)", whole).group(1))
            # (Whole: on its own, or hosting the summary merged at its start.)
            assert any(str(fx.messages[i]["content"]) in str(m.get("content")) for m in r.messages), share
            assert not [n for n in r.notes if n.startswith(f"the tail takes message {i} ")], (share, r.notes)
        for n in r.notes:  # every id a note names is in the history it comes with
            for fold_id in re.findall(r"id=(cf[0-9a-f]{12})", n):
                assert any(fold_id in str(m.get("content")) for m in r.messages), (share, n)
    assert given_back >= 2, given_back
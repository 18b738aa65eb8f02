"""``contextfold serve --recall`` holds the budget on the request as sent, the recall tool's
definition included. The real SDK of each API sends a recorded SWE run turn by turn through the
proxy, in front of a loopback upstream that records what it receives; each compacting turn's
body is priced as `contextfold.estimate_request` prices a request.

Where the recall tool's definition does not fit in the budget beside the system prompt, the task
and the last user turn (Anthropic's tool-use prompt makes it ~615 tokens; Gemini's ~85, OpenAI's
~115), the Compactor compacts without it (``result.tools`` is the caller's list, placeholders
and summary naming no id). The proxy recorded every fold of a ``--recall`` request as
recoverable all the same, and sent the tool with it: an ordinary fold (a summary, not the bare
history) went over the budget by the tool's price. Now a fold carries the tool when the
compaction's result does, and the response says why it does not (``no-room``).

Gemini's recall tool, a Tool holding one function declaration, was priced whole as one definition
(84 tokens) where the body reader reads a Gemini body's declarations one by one (87): the
proxy's compacting turns went 1-3 tokens over (22 turns of the 16 bundled SWE runs at 10-16%)."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("starlette", reason="contextfold serve needs its extra: pip install '.[proxy]'")
pytest.importorskip("uvicorn", reason="contextfold serve needs its extra: pip install '.[proxy]'")

import contextfold as cf
from contextfold.recall import declares_recall
from contextfold.serve.apis import API_BY_NAME

from test_serve_newest import SHAPE, _checked, _sent_turn_by_turn
from transcripts import LOCAL, load_conversations
from wire_shapes import convert

#: Per run and API, of the run's compacting turns: how many, how many carry the recall tool, and
#: how many went without it because its definition did not fit (``no-room``). (Since stop 83's
#: tail of two messages at least, a fold can come a turn or two earlier, where three messages
#: had left nothing to fold: 8 -> 9 / 12 compacting turns of django-13925 (chat / Responses),
#: 6 -> 9 (Anthropic); django-15741's Gemini turns 12 -> 7, each fold freeing more. Since
#: texts of up to 1 KiB are read whole (every family but Gemini's), the shares' budgets moved:
#: chat 9 -> 12, Responses 12 -> 9 of which 3 without the tool.)
EXPECTED = {
    ("django-13925", "chat"): (12, 12, 0), ("django-13925", "responses"): (9, 6, 3),
    ("django-13925", "anthropic"): (9, 0, 9), ("django-13925", "gemini"): (9, 5, 4),
    ("django-15741", "gemini"): (7, 5, 2),
}
#: Per run: how many of its first messages are sent, and the budget's share of the whole run.
RUNS = {"django-13925": (30, 0.16), "django-15741": (40, 0.13)}


def _swe_run(api: str, run: str) -> tuple[list[Any], str, list[int], int]:
    """A recorded SWE run in ``api``'s shape: its first messages, its system prompt, the history
    lengths its client sends (each ends with the environment's output) and the budget, a share
    of the whole run (``RUNS``; django-13925: 2,455 tokens in the Anthropic shape, of which the
    system prompt and the task take ~2,100)."""
    first, share = RUNS[run]
    conv = next(c for c in load_conversations(LOCAL, "mini-swe-agent-gemini3") if run in c["source"])
    src = [dict(m) for m in conv["messages"]][:first]
    system = src[0]["content"]
    msgs = convert(src if api == "chat" else src[1:], SHAPE[api][0])
    ends = [e for e in range(2, len(msgs) + 1) if msgs[e - 1]["role"] == "user"]
    full = cf.estimate(convert(conv["messages"] if api == "chat" else conv["messages"][1:], SHAPE[api][0]),
                       provider=API_BY_NAME[api].provider, model=SHAPE[api][1])
    return msgs, system, ends, int(full * share)


@pytest.mark.parametrize(("run", "api"), list(EXPECTED))
def test_a_recoverable_fold_goes_within_the_budget_with_the_recall_tool_priced_or_left_out(run, api):
    msgs, system, ends, budget = _swe_run(api, run)
    route = API_BY_NAME[api]
    seen = _sent_turn_by_turn(api, msgs, system, ends, budget, recall=True)
    compacting = [s for s in seen if s[1]["x-contextfold-fold"] == "new" or "x-contextfold-not-compacted" in s[1]]
    with_tool = without = 0
    for end, h, body, _ in compacting:
        assert "x-contextfold-not-compacted" not in h, (end, h["x-contextfold-not-compacted"])
        # The request as sent, the recall tool's definition and the system prompt included (a
        # Gemini body names its model in the URL).
        sent = cf.estimate_request({"model": SHAPE[api][1], **body}, provider=route.provider)
        # Before: Anthropic's ordinary folds of django-13925 went at 3,052-3,061 tokens of 2,455
        # (turns 7 and 25); Gemini's of django-15741 at 1,648-1,650 of 1,647.
        assert sent <= budget < int(h["x-contextfold-tokens-before"]), (end, sent, budget)
        assert int(h["x-contextfold-tokens-after"]) <= budget
        _checked(api, body, system)
        if declares_recall(body.get("tools")):
            with_tool += 1
            assert "x-contextfold-recall-withheld" not in h
        else:
            without += 1
            assert h["x-contextfold-recall-withheld"] == "no-room"
            # Nothing in the body promises the tool it does not carry.
            assert "contextfold_recall" not in str(body[route.history_key])
    assert (len(compacting), with_tool, without) == EXPECTED[run, api]

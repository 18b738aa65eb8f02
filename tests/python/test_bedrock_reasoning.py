"""Bedrock Converse reasoning (`reasoningContent`) read as the thinking it is, as Anthropic's
`thinking` blocks are: never preceded by the summary in the turn it opens, priced as reasoning
with a free signature, dropped by ``keep_thinking_turns``."""

from __future__ import annotations

import copy
from typing import Any

import contextfold as cf

MODEL = "us.anthropic.claude-sonnet-4-20250514-v1:0"


def loop(rounds: int = 6) -> list[dict[str, Any]]:
    """A tool loop with reasoning before each call; the last call still open."""
    h: list[dict[str, Any]] = [{"role": "user", "content": [{"text": "Fix the tests."}]}]
    for k in range(rounds):
        h.append({"role": "assistant", "content": [
            {"reasoningContent": {"reasoningText": {"text": f"I will run step {k}.", "signature": "EqQBsig" + "A" * 400}}},
            {"toolUse": {"toolUseId": f"tooluse_{k}", "name": "run", "input": {"cmd": f"make step{k}"}}}]})
        h.append({"role": "user", "content": [{"toolResult": {"toolUseId": f"tooluse_{k}",
                                                               "content": [{"text": f"word{k} " * 1500}]}}]})
    return h


def test_the_summary_never_goes_before_the_reasoning_of_an_assistant_turn():
    h = loop()
    before = copy.deepcopy(h)
    whole = cf.estimate(h, provider="anthropic", model=MODEL)
    checked = 0
    for share in [k / 40 for k in range(2, 36)]:
        try:
            r = cf.Compactor(budget=int(whole * share), provider="anthropic", model=MODEL).compact(h)
        except cf.CompactionBudgetError:
            continue
        for m in r.messages:
            blocks = m["content"] if isinstance(m["content"], list) else []
            kinds = [next(iter(b)) for b in blocks if isinstance(b, dict)]
            if m["role"] == "assistant" and "reasoningContent" in kinds:
                assert kinds[0] == "reasoningContent", (share, kinds)
        checked += 1
    assert checked >= 25
    assert h == before


def test_reasoning_is_priced_as_reasoning_and_dropped_by_keep_thinking_turns():
    h = loop()
    b = cf.breakdown(h, provider="anthropic", model=MODEL)
    assert b.unmeasured == () and b.by_kind["reasoning"] > 0
    whole = cf.estimate(h, provider="anthropic", model=MODEL)
    def masked(**kw: Any) -> Any:
        return cf.Compactor(budget=whole // 5, provider="anthropic", model=MODEL, strategy="mask", **kw).compact(h)

    def reasoning(r: Any) -> tuple[int, int]:
        """The reasoning blocks ``r`` kept, and what they cost (tokens)."""
        left = sum(1 for m in r.messages if isinstance(m["content"], list)
                   for blk in m["content"] if "reasoningContent" in blk)
        return left, cf.breakdown(r.messages, provider="anthropic", model=MODEL).by_kind.get("reasoning", 0)

    # (Both land at the budget: the masking fills what dropping reasoning frees. What they
    # keep of the reasoning tells them apart.)
    dropped, kept = reasoning(masked(keep_thinking_turns=1)), reasoning(masked())
    assert dropped[0] == 1 and kept[0] > 1 and dropped[1] < kept[1], (dropped, kept)

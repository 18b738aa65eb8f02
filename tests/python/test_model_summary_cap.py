"""``summary_max_tokens`` caps a model's summary as it caps the digest.

The model was asked for at least half the planned summary share (``summary_tokens``, up to
4,000 tokens by default) whatever the cap: with ``summary_max_tokens=400`` an airline dialogue
compacted to 80% of its size asked the model for 761 tokens, and its summary of ~990 tokens was
sent, 2.5 times the cap.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import contextfold as cf
from contextfold.summarize import SummaryRequest
from contextfold.summary_room import summary_text_tokens

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "support"))
from transcripts import LOCAL, SHARED, load_conversations, shared_available  # noqa: E402


class _Obedient:
    """A model that writes as many tokens as it is asked for."""

    def __init__(self) -> None:
        self.asked: list[int] = []

    def summarize(self, request: SummaryRequest) -> str:
        self.asked.append(request.max_tokens)
        words: list[str] = []
        k = 0
        while True:
            more = [*words, *(f"The user asked about flight number {k + j}." for j in range(8))]
            if summary_text_tokens(" ".join(more), request.provider) > request.max_tokens:
                break
            words, k = more, k + 8
        return " ".join(words) or "The user asked about flights."


def _airline() -> list[dict]:
    root = SHARED if shared_available() else LOCAL
    return max(load_conversations(root, "tau-bench-airline")[:20], key=lambda c: len(c["messages"]))


@pytest.mark.parametrize("share", [0.6, 0.8, 0.95])
def test_a_model_is_never_asked_for_more_than_summary_max_tokens(share: float) -> None:
    conv = _airline()
    history, tools = conv["messages"], conv["tools"]
    budget = int(cf.estimate(history, tools=tools) * share)
    model = _Obedient()
    r = cf.Compactor(budget=budget, tools=tools, summary_max_tokens=400, summarizer=model, strategy="summarize",
                     min_free_share=0.0).compact(history)
    assert r.strategy_used == "summarize", r.reason
    assert model.asked and max(model.asked) <= 400, model.asked
    assert summary_text_tokens(r.summary or "", "openai") <= 400 + 8, r.notes
    assert r.tokens_after <= budget

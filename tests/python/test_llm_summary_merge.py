"""Successive summaries written by a model (``LLMSummarizer``): what the library holds them to
whatever the model does with the previous summary, and what the model is shown. The model is a
scripted ``contextfold.adapters.Adapter``, as a user plugs in any client."""

from __future__ import annotations

import re
from typing import Any

import pytest

import contextfold as cf
from contextfold import _core
from contextfold.adapters import Completion, Prompt
from contextfold.summarize.llm import SECTIONS, _checked, _InvalidOutput

REQUEST = "Please cancel all my future flights longer than 3 hours."
FILLER = "Let me look into that for you. " * 40


class QuotingModel:
    """Quotes the user's turns of the transcript under "## Open tasks" (a section of the
    template, not the library's "## User requests") and forgets the previous summary's: a model
    that follows the prompt once, then drops what it had quoted."""

    name, estimate_provider, is_async = "scripted", "openai", False

    def __init__(self) -> None:
        self.prompts: list[Prompt] = []

    def complete(self, prompt: Prompt, *, model: str, timeout: float, options: Any) -> Completion:
        self.prompts.append(prompt)
        transcript = re.search(r"<transcript>\n(.*)\n</transcript>", prompt.user, re.S)
        asks = re.findall(r"^\[\d+\] user: (.*)$", transcript.group(1) if transcript else "", re.M)
        body = dict.fromkeys(SECTIONS, "None.")
        body["Goal"] = f"Help with the bookings (call {len(self.prompts)})."
        body["Open tasks"] = "\n".join(f"- {a}" for a in asks) or "None."
        return Completion("\n\n".join(f"## {s}\n{body[s]}" for s in SECTIONS))

    async def acomplete(self, prompt: Prompt, **kw: Any) -> Completion:
        return self.complete(prompt, **kw)


def grown(model: QuotingModel, turns: int = 8) -> list[tuple[cf.CompactionResult, list[Any]]]:
    """A conversation whose second user turn is ``REQUEST``, compacted each time it passes its
    budget as it grows by one exchange: each result with the history it returned."""
    history: list[Any] = [{"role": "system", "content": "You are an airline agent."},
                          {"role": "user", "content": "Hi, I need help with my bookings."},
                          {"role": "assistant", "content": FILLER},
                          {"role": "user", "content": REQUEST},
                          {"role": "assistant", "content": FILLER}]
    c = cf.Compactor(provider="openai", model="gpt-4o", budget=900, strategy="summarize",
                     summarizer=cf.LLMSummarizer(model, "gpt-4o-mini"), min_free_share=0.0)
    out = []
    for turn in range(1, turns + 1):
        history = history + [{"role": "user", "content": f"Next, check the status of reservation RES{turn:03d}."},
                             {"role": "assistant", "content": FILLER}]
        if cf.estimate(history, provider="openai", model="gpt-4o") <= c.budget:
            continue
        r = c.compact(history)
        history = list(r.messages)
        out.append((r, history))
    return out


def test_a_request_the_model_quoted_elsewhere_survives_when_it_later_drops_it() -> None:
    # The model quoted it under "## Open tasks" at the first compaction and left it out of every
    # update: it was lost from the third compaction on, and never came back.
    runs = grown(QuotingModel())
    assert len(runs) >= 5
    for k, (r, history) in enumerate(runs):
        assert not r.fallback_used
        assert REQUEST in (r.summary or ""), (k, r.summary)
        requests = (r.summary or "").split("## User requests", 1)[1]
        assert REQUEST in requests.split("\n## ", 1)[0], (k, r.summary)


def test_the_update_prompt_gives_the_previous_summary_once() -> None:
    # The turn carrying the previous summary was also rendered as a removed turn: the summary
    # came twice, with its markers and identifier index (30% of the update prompts).
    model = QuotingModel()
    runs = grown(model)
    updates = [p.user for p in model.prompts if "<previous_summary>" in p.user]
    assert len(updates) >= len(runs) - 1 >= 4
    for k, user in enumerate(updates):
        transcript = user.split("<transcript>", 1)[1]
        assert "Help with the bookings (call" not in transcript, (k, transcript[:400])
        assert _core.SUMMARY_MARKERS[0] not in transcript and "## Identifier index" not in transcript


@pytest.mark.parametrize("reply", [
    # Bold headings closed by underscores (no word boundary before `__`).
    "\n".join(f"__{s}__\n- noted" for s in SECTIONS),
    # Common renames, numbered and with colons.
    "### User Requests:\n- book it\n**Constraints**\n- never on Sundays\n## Status\ndone half\n"
    "1. Key decisions\n- aisle seat\n## Identifiers\nRES001\n## Issues\nNone.\n### Remaining tasks\n- pay\n"
    "## Next action\n- call back",
])
def test_a_summary_under_renamed_headings_is_taken(reply: str) -> None:
    assert _checked(Completion(reply, truncated=False)) == reply


def test_a_chat_wrapper_around_the_summary_is_left_out() -> None:
    body = "\n\n".join(f"## {s}\n- noted about {s.lower()}" for s in SECTIONS)
    wrapped = f"Sure! Here is the updated summary:\n```markdown\n{body}\n```\nLet me know if you need anything else."
    assert _checked(Completion(wrapped, truncated=False)) == body
    assert _checked(Completion(f"Here is the updated summary:\n\n{body}", truncated=False)) == body
    # A heading written "Goal:" on its own line is the summary's, not a preamble.
    plain = "Goal:\nship it\n" + "\n".join(f"## {s}\nok" for s in SECTIONS[1:])
    assert _checked(Completion(plain, truncated=False)) == plain
    # Prose with no headings is still refused.
    with pytest.raises(_InvalidOutput, match="lacks the template's sections"):
        _checked(Completion("Sure: the user wants to cancel flights and check reservations.", truncated=False))

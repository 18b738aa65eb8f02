"""A recoverable summary's fold line is the library's, never a rule or request of the summary.

A recoverable fold ends its summary with ``[folded N messages; id=cf..., contextfold_recall
restores them; earlier folds: ...]``. Where no identifier index came before it, the next
compaction read that line as an item of the summary's last section: a standing rule (held whole
by every later summary) or a user request. Over successive compactions of the bundled SWE runs
with a model summarizer and ``summary_max_tokens=150``, 14 of 120 summaries held old fold lines
as standing rules, and 9 went over the cap (up to 428 tokens), each compaction adding one more.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import contextfold as cf
from contextfold import _core
from contextfold.summarize import SummaryRequest
from contextfold.summary_room import summary_text_tokens

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "support"))
from transcripts import LOCAL, load_conversations  # noqa: E402

FOLD_LINE = "[folded 7 messages; id=cf913dc8c4bf94, contextfold_recall restores them; earlier folds: id=cfc33c9deeda0f]"
AS_ITEM = re.compile(r"^- \[folded \d+ messages; id=cf", re.M)


def test_a_previous_summarys_fold_line_is_no_standing_rule():
    previous = ("The user is working on their task.\n\n## User requests\n- fix the bug\n\n"
                f"## Standing rules\n- Never push to main.\n{FOLD_LINE}")
    assert _core.standing_rules([], previous=previous) == ["Never push to main."]


def test_a_previous_summarys_fold_line_is_no_user_request():
    previous = f"The user is working on their task.\n\n## User requests\n- fix the bug\n{FOLD_LINE}"
    (section,) = _core.requests_sections([], rooms=[100_000], provider="openai", previous=previous)
    assert section == "## User requests\n- fix the bug"


class _Short:
    def summarize(self, request: SummaryRequest) -> str:
        return "The user is working on their task."


def test_successive_model_summaries_carry_no_fold_line_and_keep_their_cap():
    summaries = 0
    for conv in load_conversations(LOCAL, "mini-swe-agent-gemini3"):
        msgs, tools = conv["messages"], conv.get("tools")
        budget = max(1_500, int(cf.estimate(msgs, tools=tools) * 0.3))
        c = cf.Compactor(budget=budget, tools=tools, summary_max_tokens=150, summarizer=_Short(), recoverable=True,
                         store=cf.MemoryContentStore())
        history: list = []
        for i, m in enumerate(msgs):
            history.append(m)
            if i % 6 != 5:
                continue
            try:
                r = c.compact(history)
            except cf.CompactionError:
                continue
            history = list(r.messages)
            if r.summary is None:
                continue
            summaries += 1
            assert not AS_ITEM.search(r.summary), (conv["source"], r.summary[-600:])
            assert summary_text_tokens(r.summary, "openai") <= 150 + 8, (conv["source"], r.summary[-600:])
    assert summaries >= 60, summaries

"""Summarizers: what folds the middle of a history into text.

``ExtractiveSummarizer`` (offline, deterministic, the default and every LLM summarizer's
fallback) lives here; LLM summarizers implement the same ``Summarizer`` protocol
(``summarize(SummaryRequest) -> SummaryResult`` and ``asummarize``).
"""

from contextfold.summarize.base import Summarizer, SummaryRequest, SummaryResult
from contextfold.summarize.extractive import ExtractiveSummarizer

__all__ = ["ExtractiveSummarizer", "Summarizer", "SummaryRequest", "SummaryResult"]

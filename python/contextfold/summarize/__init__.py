"""Summarizers: what the Compactor calls to fold the middle of a history into a summary.

``Summarizer`` is the protocol (sync ``summarize`` and async ``asummarize`` of a
``SummaryRequest`` into a ``SummaryResult``). ``ExtractiveSummarizer`` (offline, deterministic)
is the default and every LLM summarizer's fallback; ``LLMSummarizer`` writes a templated summary
with a model of your choice through its official SDK and falls back to the extractive digest on
any failure. ``AnthropicCompaction`` and ``OpenAIResponsesCompaction`` ask the provider's own
compaction and send its block or item back verbatim.
"""

from contextfold.summarize.base import Summarizer, SummaryRequest, SummaryResult, SummaryUsage
from contextfold.summarize.extractive import ExtractiveSummarizer
from contextfold.summarize.llm import SECTIONS, LLMSummarizer
from contextfold.summarize.provider import AnthropicCompaction, OpenAIResponsesCompaction

__all__ = [
    "SECTIONS",
    "AnthropicCompaction",
    "OpenAIResponsesCompaction",
    "ExtractiveSummarizer",
    "LLMSummarizer",
    "Summarizer",
    "SummaryRequest",
    "SummaryResult",
    "SummaryUsage",
]

"""What a report shows, computed once: the breakdown, the largest messages, duplicated tool
outputs, the context window and gate, and the compaction plan at a budget (offline)."""

from __future__ import annotations

import hashlib
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import contextfold
from contextfold import _core
from contextfold.breakdown import Breakdown, MessageTokens
from contextfold.compactor import CompactionResult, Compactor
from contextfold.errors import CompactionError, UnknownModelWarning
from contextfold.inputs import Request
from contextfold.model_info import check_model
from contextfold.summarize import ExtractiveSummarizer

# Outputs shorter than this (characters) are not worth reporting as duplicates.
_MIN_DUPLICATE_CHARS = 200


@dataclass(frozen=True, slots=True)
class Duplicate:
    """A tool output sent more than once: where (message indices) and what the extra copies cost."""

    indices: tuple[int, ...]
    tokens_each: int
    preview: str

    @property
    def wasted_tokens(self) -> int:
        return self.tokens_each * (len(self.indices) - 1)


@dataclass(frozen=True, slots=True)
class Plan:
    """What ``Compactor.compact`` does to this history at ``budget`` tokens, with its default
    (hybrid) strategy and the extractive summarizer, so the report stays offline. ``result`` is
    the compactor's own result; None when it raised, and then ``error`` says why (what must stay
    verbatim already exceeds the budget, say)."""

    budget: int
    result: CompactionResult | None
    error: str | None = None

    def states(self, n: int) -> list[str]:
        """The fate of each of the ``n`` messages: ``head`` (kept, before the summary), ``fold``
        (into the summary), ``masked`` (kept, shortened) or ``kept`` (verbatim)."""
        r = self.result
        if r is None:
            return ["kept"] * n
        folded, masked = set(r.removed), {p.index for p in r.pruned}
        first = min(r.removed) if r.removed else 0
        return [
            "fold" if i in folded else "masked" if i in masked else "head" if i < first else "kept"
            for i in range(n)
        ]


@dataclass(frozen=True, slots=True)
class ReportData:
    """Everything the text and HTML reports show (tokens are estimated prompt tokens)."""

    request: Request
    breakdown: Breakdown
    window: int | None
    gate: int | None
    plan: Plan
    top: tuple[MessageTokens, ...]
    previews: dict[int, str]
    duplicates: tuple[Duplicate, ...]
    recorded: tuple[tuple[int, int, int], ...]  # (n_messages, reported, estimated)


def preview(message: Any, width: int = 80) -> str:
    """A one-line preview of a message (any wire format), at most ``width`` characters."""
    return _core.message_previews([message], width=width)[0]


def _duplicates(req: Request, per: Sequence[MessageTokens]) -> tuple[Duplicate, ...]:
    seen: dict[bytes, list[int]] = {}
    text_of: dict[bytes, str] = {}
    for i, text in _core.tool_output_texts(req.messages):
        if len(text) < _MIN_DUPLICATE_CHARS:
            continue
        h = hashlib.blake2b(text.encode("utf-8", "replace"), digest_size=16).digest()
        seen.setdefault(h, []).append(i)
        text_of.setdefault(h, text)
    dups = [
        Duplicate(tuple(ix), per[ix[-1]].tokens, " ".join(text_of[h][:800].split())[:100])
        for h, ix in seen.items()
        if len(ix) > 1
    ]
    return tuple(sorted(dups, key=lambda d: -d.wasted_tokens))


def _plan(req: Request, budget: int, window: int | None) -> Plan:
    """Run the Compactor (extractive summary: offline) on the history at ``budget`` tokens."""
    compactor = Compactor(
        provider=req.provider, model=req.model, context_window=window, budget=budget,
        summarizer=ExtractiveSummarizer(), tools=req.tools, system=req.system, response_format=req.response_format,
    )
    try:
        return Plan(budget, compactor.compact(req.messages))
    except CompactionError as e:
        return Plan(budget, None, str(e))


def largest(b: Breakdown, messages: Sequence[Any], top: int) -> tuple[tuple[MessageTokens, ...], dict[int, str]]:
    """The ``top`` largest messages of a breakdown and a one-line preview of each."""
    biggest = tuple(sorted(b.per_message, key=lambda m: -m.tokens)[:top])
    texts = _core.message_previews([messages[m.index] for m in biggest], width=90)
    return biggest, {m.index: text for m, text in zip(biggest, texts, strict=True)}


def analyze(req: Request, *, budget: int | None = None, window: int | None = None, top: int = 8) -> ReportData:
    """Compute what the reports show for one request. ``budget``: target tokens of the
    compaction plan (default: the Compactor's own budget when the history is past it, else half
    the estimate); ``window``: context window (default: from the model name, when known). An
    unknown model name is said once (``UnknownModelWarning``)."""
    check_model(req.model, stacklevel=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UnknownModelWarning)  # said once, above
        return _analyze(req, budget=budget, window=window, top=top)


def _analyze(req: Request, *, budget: int | None, window: int | None, top: int) -> ReportData:
    opts = req.options()
    b = contextfold.breakdown(req.messages, **opts)
    if window is None and req.model:
        try:
            window = contextfold.context_window(req.model)
        except contextfold.UnknownModelError:
            window = None
    compactor = Compactor(provider=req.provider, model=req.model, context_window=window, tools=req.tools, system=req.system,
                          response_format=req.response_format)
    try:
        gate: int | None = compactor.trigger_tokens if window else None
        default_budget: int | None = compactor.budget
    except ValueError:
        gate = default_budget = None
    # The compactor's own budget when this history is past it (what the gate would do now),
    # else half the history (what a compaction to half its size would do).
    if budget is None:
        budget = default_budget if default_budget is not None and b.total > default_budget else max(1, b.total // 2)
    plan = _plan(req, budget, window)
    biggest, previews = largest(b, req.messages, top)
    recorded = []
    if req.recorded:
        cum = [0]
        for m in b.per_message:
            cum.append(cum[-1] + m.tokens)
        overhead = sum(b.request_overhead.values())
        for r in req.recorded:
            n, real = r.get("n_messages"), r.get("usage_prompt_tokens")
            if isinstance(n, int) and isinstance(real, int) and real > 0 and 0 < n <= len(req.messages):
                recorded.append((n, real, cum[n] + overhead))
    return ReportData(
        request=req,
        breakdown=b,
        window=window,
        gate=gate,
        plan=plan,
        top=biggest,
        previews=previews,
        duplicates=_duplicates(req, b.per_message),
        recorded=tuple(recorded),
    )



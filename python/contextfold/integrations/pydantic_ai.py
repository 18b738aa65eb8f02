"""pydantic-ai integration: a history processor that compacts the message history before each
model request (``pip install pydantic-ai-slim``)::

    Agent(model, history_processors=[history_processor(trigger=100_000)])   # pydantic-ai 1.x
    Agent(model, capabilities=[ProcessHistory(history_processor(trigger=100_000))])  # 2.x

pydantic-ai's messages are ``ModelRequest`` / ``ModelResponse`` objects made of parts. The
processor prices them as the OpenAI chat messages they stand for and, at the trigger, folds
whole model turns: the first request (the task) is kept, the turns after it up to a model
response are summarized into a ``UserPromptPart`` appended to a copy of that first request, and
the history resumes verbatim at that response, so no tool call is ever separated from its
return. The summary of the next compaction updates the previous one; a summary is taken for the
previous one only where the processor put it (the last part of the first request, after the
task's own prompt) or by the hash of one it wrote, never because a text opens with the marker.
A model's summary is held to what the Compactor holds it to: the user's requests and the
standing rules of the fold it does not state are appended, and the identifier index. The
compaction is reused on the next steps (the same objects are sent). The caller's list is never
altered; pydantic-ai itself keeps what a history processor returns as the run's history.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

from contextfold import _core
from contextfold.compactor import Compactor
from contextfold.conversation_key import remember
from contextfold.integrations.folding import refuse_recoverable
from contextfold.summarize.base import SummaryRequest
from contextfold.summarize.extractive import ExtractiveSummarizer
from contextfold.summary_room import index_share, requests_of, with_index, with_requests, with_rules

try:
    from pydantic_ai.messages import (
        ModelMessage,
        ModelRequest,
        ModelResponse,
        RetryPromptPart,
        SystemPromptPart,
        TextPart,
        ToolCallPart,
        ToolReturnPart,
        UserPromptPart,
    )
except ImportError as e:  # pragma: no cover - exercised only without pydantic-ai
    raise ImportError("contextfold.integrations.pydantic_ai needs pydantic-ai: pip install pydantic-ai-slim") from e

__all__ = ["ContextFoldHistoryProcessor", "history_processor", "to_openai_messages"]

log = logging.getLogger("contextfold.pydantic_ai")

OPEN, CLOSE = _core.SUMMARY_MARKERS
#: Share of the budget the summary may take (as the Compactor's default).
SUMMARY_SHARE = 0.1


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, Sequence):
        return "\n".join(c if isinstance(c, str) else f"[{type(c).__name__}]" for c in content)
    return str(content)


def to_openai_messages(messages: Sequence[ModelMessage]) -> list[dict[str, Any]]:
    """pydantic-ai messages as the OpenAI chat messages they stand for (what is priced and
    summarized); parts of other kinds are read as text."""
    out: list[dict[str, Any]] = []
    for msg in messages:
        if isinstance(msg, ModelRequest):
            for p in msg.parts:
                if isinstance(p, SystemPromptPart):
                    out.append({"role": "system", "content": p.content})
                elif isinstance(p, UserPromptPart):
                    out.append({"role": "user", "content": _text(p.content)})
                elif isinstance(p, ToolReturnPart):
                    out.append({"role": "tool", "tool_call_id": p.tool_call_id, "content": p.model_response_str()})
                elif isinstance(p, RetryPromptPart) and p.tool_name:
                    out.append({"role": "tool", "tool_call_id": p.tool_call_id, "content": p.model_response()})
                else:
                    out.append({"role": "user", "content": _text(getattr(p, "content", ""))})
        elif isinstance(msg, ModelResponse):
            text = "".join(p.content for p in msg.parts if isinstance(p, TextPart))
            calls = [{"id": p.tool_call_id, "type": "function",
                      "function": {"name": p.tool_name, "arguments": p.args_as_json_str()}}
                     for p in msg.parts if isinstance(p, ToolCallPart)]
            d: dict[str, Any] = {"role": "assistant", "content": text or None}
            if calls:
                d["tool_calls"] = calls
            out.append(d)
    return out


class ContextFoldHistoryProcessor:
    """The processor (see the module docs). ``compactor`` gives the trigger, budget, pricing
    model and summarizer; ``compactions`` counts the compactions made."""

    def __init__(self, compactor: Compactor) -> None:
        refuse_recoverable(compactor, "the pydantic-ai history processor")
        self.compactor = compactor
        self.compactions = 0
        self._lock = threading.Lock()
        self._last: tuple[list[ModelMessage], list[ModelMessage]] | None = None
        # Hashes of the summary parts this processor wrote (the last 256: ``remember``).
        self._written: OrderedDict[int, None] = OrderedDict()

    def _previous(self, parts: Sequence[Any], at: int) -> str | None:
        """The previous summary's text when part ``at`` of the first request is one this
        processor wrote: by its hash, or where it puts one (the last part, after a user prompt
        of the task's own) and marked as one; None otherwise (a task that merely opens with the
        marker stays the task)."""
        p = parts[at]
        if not isinstance(p, UserPromptPart) or not isinstance(p.content, str) or not p.content.startswith(OPEN):
            return None
        placed = at == len(parts) - 1 and any(isinstance(q, UserPromptPart) for q in parts[:at]) \
            and p.content.endswith(CLOSE)
        if not placed and int(_core.summary_hash(p.content)) not in self._written:
            return None
        return p.content[len(OPEN): -len(CLOSE)].strip() if p.content.endswith(CLOSE) else p.content[len(OPEN):]

    def _continue(self, sent: list[ModelMessage]) -> list[ModelMessage]:
        with self._lock:
            if self._last is not None:
                source, out = self._last
                n = len(source)
                if len(sent) >= n and all(a is b or a == b for a, b in zip(sent, source)):
                    return out + sent[n:]
        return sent

    def __call__(self, messages: list[ModelMessage]) -> list[ModelMessage]:
        """The history to send for ``messages``."""
        sent = list(messages)
        effective = self._continue(sent)
        c = self.compactor
        if len(effective) < 3 or not isinstance(effective[0], ModelRequest):
            return effective
        dicts = to_openai_messages(effective)
        if not c.should_compact(dicts):
            return effective
        folded = self._fold(effective)
        if folded is None:
            return effective
        with self._lock:
            self._last = (sent, folded)
            self.compactions += 1
        return folded

    def _fold(self, history: list[ModelMessage]) -> list[ModelMessage] | None:
        c = self.compactor
        head = history[0]
        assert isinstance(head, ModelRequest)
        previous = None
        base_parts = []
        for at, p in enumerate(head.parts):
            said = self._previous(head.parts, at)
            if said is not None:
                previous = said
            else:
                base_parts.append(p)
        cuts = [j for j in range(2, len(history)) if isinstance(history[j], ModelResponse)]
        if not cuts:
            return None
        budget = c.budget
        summary_tokens = max(256, min(int(budget * SUMMARY_SHARE), 4_000))
        fixed = _core.request_overhead(provider=c.provider, model=c.model, tools=c.tools, system=c.system)  # type: ignore[arg-type]
        fixed += sum(_core.estimate_each(to_openai_messages([head]), provider=c.provider, model=c.model))  # type: ignore[arg-type]
        cut = cuts[-1]
        for j in cuts:  # the earliest cut whose tail fits what the head and summary leave
            tail = sum(_core.estimate_each(to_openai_messages(history[j:]), provider=c.provider, model=c.model))  # type: ignore[arg-type]
            if fixed + summary_tokens + tail <= budget:
                cut = j
                break
        span = to_openai_messages(history[1:cut])
        # A model's summary is held to the fold's requests (they take their share first), its
        # standing rules and the identifier index, as the Compactor holds it; the extractive
        # digest writes them itself.
        own = isinstance(c.summarizer, ExtractiveSummarizer)
        requests, requests_tokens = ("", 0) if own else requests_of(
            span, previous=previous, room=summary_tokens, provider=c.provider, model=c.model)
        request = SummaryRequest(messages=span, provider="openai", model=c.model, previous_summary=previous,
                                 instructions=c.instructions, max_tokens=summary_tokens if own else max(
                                     summary_tokens // 2, summary_tokens - index_share(summary_tokens) - requests_tokens))
        try:
            text = c.summarizer.summarize(request).text.strip()
        except Exception as e:  # noqa: BLE001 - any summarizer failure falls back, never drops
            log.warning("summarizer failed (%s): extractive digest used", type(e).__name__)
            text = ""
        if not text:
            text = ExtractiveSummarizer().summarize(dataclasses.replace(request, max_tokens=summary_tokens)).text.strip()
        elif not own:
            text = with_index(with_rules(with_requests(text, requests), span, previous=previous), span,
                              provider=c.provider, model=c.model, previous=previous, room=summary_tokens)
        content = f"{OPEN}\n{text}\n{CLOSE}"
        with self._lock:
            remember(self._written, int(_core.summary_hash(content)), None)
        summary = UserPromptPart(content=content)
        return [dataclasses.replace(head, parts=[*base_parts, summary]), *history[cut:]]


def history_processor(
    *,
    trigger: Any = None,
    budget: int | None = None,
    model: str | None = None,
    context_window: int | None = None,
    summarizer: Any = None,
    instructions: str | None = None,
) -> ContextFoldHistoryProcessor:
    """A processor for ``Agent(history_processors=[...])``: compacts at ``trigger`` (tokens, a
    fraction of the window, ``("messages", n)``) down to ``budget`` (default half the trigger),
    prices with ``model``'s estimator, summarizes with ``summarizer`` (default: the extractive
    digest; an ``LLMSummarizer`` for a model-written summary)."""
    return ContextFoldHistoryProcessor(Compactor(
        model=model, trigger=trigger, budget=budget, context_window=context_window, summarizer=summarizer,
        instructions=instructions))

"""Summaries written by the provider's own compaction, sent back verbatim.

- ``AnthropicCompaction``: Anthropic's compaction (``context_management`` edit
  ``compact_20260112`` with ``pause_after_compaction``, beta ``compact-2026-01-12``). The folded
  middle is sent as a conversation; the reply is a signed ``compaction`` block, which the
  Compactor places, in an assistant message, where the summary goes, and which is sent back
  verbatim from then on (Anthropic ignores what precedes a compaction block, and its signature
  must match).
- ``OpenAIResponsesCompaction``: OpenAI's ``POST /v1/responses/compact``. The folded middle is
  sent as Responses input; the encrypted ``compaction`` item of its output replaces it, verbatim.

Both run through the official SDK client the caller built (sync or async), with its retries
off and a per-call timeout, and fall back to the extractive digest on any failure (the result
says ``fallback_used`` and why). The readable text of the summary (Anthropic's block content;
the user messages for OpenAI, whose summary is encrypted) is the result's ``text``; the
provider's own messages are its ``messages``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from contextfold.summarize.base import Summarizer, SummaryRequest, SummaryResult
from contextfold.summarize.extractive import ExtractiveSummarizer

__all__ = ["ANTHROPIC_COMPACTION_BETA", "AnthropicCompaction", "OpenAIResponsesCompaction"]

#: Anthropic's compaction edit and its beta header (anthropic SDK
#: ``BetaCompact20260112EditParam``; https://docs.anthropic.com/en/docs/build-with-claude/compaction).
ANTHROPIC_COMPACTION_EDIT = "compact_20260112"
ANTHROPIC_COMPACTION_BETA = "compact-2026-01-12"
#: Anthropic's smallest compaction trigger (input tokens): asking at the minimum makes the
#: compaction happen on this call, whatever the middle's size (same documentation).
ANTHROPIC_MIN_TRIGGER = 50_000


def _dump(obj: Any) -> Any:
    dump = getattr(obj, "model_dump", None)
    # warnings=False: the SDKs' unions (output_text vs input_text parts) warn on a faithful dump.
    return dump(exclude_none=True, mode="json", warnings=False) if callable(dump) else obj


def _is_async(client: Any) -> bool:
    return type(client).__name__.startswith("Async")


class _ProviderCompaction:
    """What both share: the fallback, the sync / async twins, the error handling."""

    def __init__(self, client: Any, model: str, *, timeout: float = 120.0, fallback: Summarizer | None = None) -> None:
        if not isinstance(model, str) or not model:
            raise TypeError("model must be a non-empty string")
        self.client = client
        self.model = model
        self.timeout = timeout
        self.fallback = fallback if fallback is not None else ExtractiveSummarizer()

    def _call(self, request: SummaryRequest) -> Any:  # pragma: no cover - overridden
        raise NotImplementedError

    async def _acall(self, request: SummaryRequest) -> Any:  # pragma: no cover - overridden
        raise NotImplementedError

    def _result(self, response: Any) -> SummaryResult:  # pragma: no cover - overridden
        raise NotImplementedError

    def _failed(self, request: SummaryRequest, e: Exception) -> SummaryResult:
        r = self.fallback.summarize(request)
        return SummaryResult(text=r.text, fallback_used=True, error=f"{type(self).__name__}: {type(e).__name__}: {e}")

    def summarize(self, request: SummaryRequest) -> SummaryResult:
        """Ask the provider (a sync client), or fall back to the digest."""
        if _is_async(self.client):
            return self._failed(request, TypeError("the client is async: use asummarize"))
        try:
            return self._result(self._call(request))
        except Exception as e:  # noqa: BLE001 - any failure falls back, the middle is never dropped
            return self._failed(request, e)

    async def asummarize(self, request: SummaryRequest) -> SummaryResult:
        """Ask the provider without blocking the loop (a sync client runs on a thread)."""
        try:
            if _is_async(self.client):
                return self._result(await self._acall(request))
            return self._result(await asyncio.to_thread(self._call, request))
        except Exception as e:  # noqa: BLE001
            return self._failed(request, e)


def _anthropic_conversation(messages: Sequence[Any]) -> list[dict[str, Any]]:
    """The folded middle as a conversation Anthropic accepts: it starts with a user turn."""
    msgs = [_dump(m) for m in messages]
    if not msgs or msgs[0].get("role") != "user":
        msgs.insert(0, {"role": "user", "content": "(The conversation so far.)"})
    return msgs


class AnthropicCompaction(_ProviderCompaction):
    """Anthropic's own compaction as a summarizer (``client``: ``anthropic.Anthropic`` or
    ``AsyncAnthropic``; ``model``: the Claude model that compacts). The folded messages must be
    Anthropic messages (a Compactor on an Anthropic history)."""

    def _kwargs(self, request: SummaryRequest) -> dict[str, Any]:
        edit: dict[str, Any] = {"type": ANTHROPIC_COMPACTION_EDIT, "pause_after_compaction": True,
                                "trigger": {"type": "input_tokens", "value": ANTHROPIC_MIN_TRIGGER}}
        instructions = " ".join(x for x in (request.instructions, request.previous_summary and
                                            f"Update this earlier summary: {request.previous_summary}") if x)
        if instructions:
            edit["instructions"] = instructions
        return dict(model=self.model, max_tokens=max(256, request.max_tokens),
                    messages=_anthropic_conversation(request.messages),
                    context_management={"edits": [edit]}, betas=[ANTHROPIC_COMPACTION_BETA],
                    timeout=self.timeout)

    def _call(self, request: SummaryRequest) -> Any:
        return self.client.with_options(max_retries=0).beta.messages.create(**self._kwargs(request))

    async def _acall(self, request: SummaryRequest) -> Any:
        return await self.client.with_options(max_retries=0).beta.messages.create(**self._kwargs(request))

    def _result(self, response: Any) -> SummaryResult:
        blocks = [_dump(b) for b in (getattr(response, "content", None) or [])]
        found = [b for b in blocks if b.get("type") == "compaction"]
        if not found or not found[0].get("content"):
            raise ValueError(f"no compaction block in the reply (stop_reason={getattr(response, 'stop_reason', None)!r})")
        block = found[0]
        return SummaryResult(text=str(block["content"]), messages=({"role": "assistant", "content": [block]},))

    def __repr__(self) -> str:
        return f"AnthropicCompaction(model={self.model!r})"


class OpenAIResponsesCompaction(_ProviderCompaction):
    """OpenAI's ``/v1/responses/compact`` as a summarizer (``client``: ``openai.OpenAI`` or
    ``AsyncOpenAI``; ``model``: the model that compacts). The folded messages must be
    Responses API items (a Compactor on a Responses history)."""

    def _kwargs(self, request: SummaryRequest) -> dict[str, Any]:
        kwargs: dict[str, Any] = dict(model=self.model, input=[_dump(m) for m in request.messages],
                                      timeout=self.timeout)
        if request.instructions:
            kwargs["instructions"] = request.instructions
        return kwargs

    def _call(self, request: SummaryRequest) -> Any:
        return self.client.with_options(max_retries=0).responses.compact(**self._kwargs(request))

    async def _acall(self, request: SummaryRequest) -> Any:
        return await self.client.with_options(max_retries=0).responses.compact(**self._kwargs(request))

    def _result(self, response: Any) -> SummaryResult:
        items = [_dump(i) for i in (getattr(response, "output", None) or [])]
        if not any(i.get("type") == "compaction" and i.get("encrypted_content") for i in items):
            raise ValueError("no compaction item in the /responses/compact output")
        # The summary itself is encrypted: the readable part is what the user asked.
        said = [c.get("text", "") for i in items if i.get("role") == "user" for c in
                (i.get("content") if isinstance(i.get("content"), list) else [{"text": i.get("content") or ""}])]
        text = "User messages kept by the provider's compaction:\n" + "\n".join(f"- {s}" for s in said if s)
        # The compaction item takes the summary's place. The user messages OpenAI returns beside it
        # are the middle's own, which the item was made from: sent again they would sit next to the
        # head's and the tail's user turns (two user turns in a row at a seam).
        return SummaryResult(text=text, messages=tuple(i for i in items if i.get("type") == "compaction"))

    def __repr__(self) -> str:
        return f"OpenAIResponsesCompaction(model={self.model!r})"


"""Anthropic Messages adapter (``pip install 'contextfold[anthropic]'``).

Takes ``anthropic.Anthropic`` or ``anthropic.AsyncAnthropic`` (the Bedrock and Vertex variants
share the Messages API). ``system`` goes to the top-level ``system`` field, ``user`` is the one
user turn, and the SDK's retries are off per call (``LLMSummarizer`` retries itself).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from contextfold.adapters import Completion, Prompt, import_sdk

__all__ = ["AnthropicAdapter", "default_client"]


def default_client() -> Any:
    """``anthropic.Anthropic()`` configured from the environment (``ANTHROPIC_API_KEY``,
    ``ANTHROPIC_BASE_URL``)."""
    return import_sdk("anthropic", "anthropic").Anthropic()


class AnthropicAdapter:
    """``client.messages.create(system=..., messages=[user], max_tokens=...)``."""

    name = "anthropic messages"
    estimate_provider = "anthropic"

    def __init__(self, client: Any) -> None:
        self.client = client
        # AsyncAnthropic and its Bedrock / Vertex / Foundry twins
        self.is_async = type(client).__name__.startswith("Async")

    def _kwargs(self, prompt: Prompt, model: str, options: Mapping[str, Any]) -> dict[str, Any]:
        kwargs: dict[str, Any] = {
            "model": model,
            "system": prompt.system,
            "messages": [{"role": "user", "content": prompt.user}],
            "max_tokens": prompt.max_output_tokens,
        }
        kwargs.update(options)
        return kwargs

    def complete(
        self, prompt: Prompt, *, model: str, timeout: float, options: Mapping[str, Any]
    ) -> Completion:
        """Send ``prompt`` and wait for the reply (``timeout`` in seconds)."""
        if self.is_async:
            raise TypeError(
                f"{self.name}: the client is async (AsyncAnthropic); use `await summarizer.asummarize(...)` "
                "or pass a sync anthropic.Anthropic client"
            )
        client = self.client.with_options(max_retries=0, timeout=timeout)
        return _message(client.messages.create(**self._kwargs(prompt, model, options)))

    async def acomplete(
        self, prompt: Prompt, *, model: str, timeout: float, options: Mapping[str, Any]
    ) -> Completion:
        """Send ``prompt`` through the async client, or the sync one on a worker thread."""
        if not self.is_async:
            return await asyncio.to_thread(
                self.complete, prompt, model=model, timeout=timeout, options=options
            )
        client = self.client.with_options(max_retries=0, timeout=timeout)
        return _message(await client.messages.create(**self._kwargs(prompt, model, options)))


def _message(message: Any) -> Completion:
    text = "".join(
        block.text
        for block in (getattr(message, "content", None) or [])
        if getattr(block, "type", None) == "text"
    )
    usage = getattr(message, "usage", None)
    return Completion(
        text,
        getattr(message, "stop_reason", None) == "max_tokens",
        getattr(usage, "input_tokens", None),
        getattr(usage, "output_tokens", None),
    )

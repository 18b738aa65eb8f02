"""Anthropic Messages adapter (``pip install '.[anthropic]'`` in a checkout).

Takes ``anthropic.Anthropic`` or ``anthropic.AsyncAnthropic`` (the Bedrock and Vertex variants
share the Messages API). ``system`` goes to the top-level ``system`` field, ``user`` is the one
user turn, and the SDK's retries are off per call (``LLMSummarizer`` retries itself).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, cast

from contextfold.adapters import Completion, Prompt, import_sdk, stop_reason
from contextfold.adapters.base import RetriesOffAdapter

__all__ = ["AnthropicAdapter", "default_client"]


def default_client() -> Any:
    """``anthropic.Anthropic()`` configured from the environment (``ANTHROPIC_API_KEY``,
    ``ANTHROPIC_BASE_URL``). Raises ``anthropic.AnthropicError`` when nothing there gives it
    credentials, as ``openai.OpenAI()`` does without its key."""
    sdk = import_sdk("anthropic", "anthropic")
    client = sdk.Anthropic()
    # The SDK builds a client without credentials and refuses only when it sends: every summary
    # would then fall back to the extractive digest, the missing key said in a note alone.
    # (`credentials`: the SDK's credential profiles, which older releases do not have.)
    if all(getattr(client, name, None) is None for name in ("api_key", "auth_token", "credentials")):
        raise sdk.AnthropicError(
            "no credentials for the Anthropic client: set the ANTHROPIC_API_KEY (or ANTHROPIC_AUTH_TOKEN) "
            "environment variable, or pass your own anthropic.Anthropic client"
        )
    return client


class AnthropicAdapter(RetriesOffAdapter):
    """``client.messages.create(system=..., messages=[user], max_tokens=...)``."""

    name = "anthropic messages"
    estimate_provider = "anthropic"
    # AsyncAnthropic and its Bedrock / Vertex / Foundry twins are refused by `complete`.
    async_hint = (
        "the client is async (AsyncAnthropic); use `await summarizer.asummarize(...)` "
        "or pass a sync anthropic.Anthropic client"
    )

    def _kwargs(self, prompt: Prompt, model: str, options: Mapping[str, Any]) -> dict[str, Any]:
        kwargs: dict[str, Any] = {
            "model": model,
            "system": prompt.system,
            "messages": [{"role": "user", "content": prompt.user}],
            "max_tokens": prompt.max_output_tokens,
        }
        kwargs.update(options)
        return kwargs

    def _endpoint(self, client: Any) -> Callable[..., Any]:
        return cast("Callable[..., Any]", client.messages.create)

    def _parse(self, response: Any) -> Completion:
        return _message(response)


def _message(message: Any) -> Completion:
    text = "".join(
        block.text
        for block in (getattr(message, "content", None) or [])
        if getattr(block, "type", None) == "text"
    )
    usage = getattr(message, "usage", None)
    reason = getattr(message, "stop_reason", None)
    return Completion(
        text,
        reason == "max_tokens",
        getattr(usage, "input_tokens", None),
        getattr(usage, "output_tokens", None),
        stop_reason(reason),
    )

"""OpenAI adapters (``pip install '.[openai]'`` in a checkout): chat.completions and the Responses API.

The chat adapter also serves every OpenAI-compatible server (Ollama's ``/v1``, OpenRouter, Groq,
vLLM, ...): build ``openai.OpenAI(base_url=...)`` and pass it. Both take ``openai.OpenAI`` or
``openai.AsyncOpenAI`` (Azure variants too); the SDK's retries are turned off per call
(``with_options(max_retries=0, timeout=...)``) because ``LLMSummarizer`` retries itself.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Literal, cast

from contextfold.adapters import Completion, Prompt, import_sdk, stop_reason
from contextfold.adapters.base import RetriesOffAdapter

__all__ = ["OpenAIChatAdapter", "OpenAIResponsesAdapter", "default_client"]

# AsyncOpenAI, AsyncAzureOpenAI: what `complete` says when given one.
_ASYNC_HINT = (
    "the client is async (AsyncOpenAI); use `await summarizer.asummarize(...)` "
    "or pass a sync openai.OpenAI client"
)


def default_client() -> Any:
    """``openai.OpenAI()`` configured from the environment (``OPENAI_API_KEY``,
    ``OPENAI_BASE_URL``)."""
    return import_sdk("openai", "openai").OpenAI()


class OpenAIChatAdapter(RetriesOffAdapter):
    """chat.completions: ``system`` as a system message, ``user`` as one user message.

    ``max_tokens_param`` names the output cap: ``"max_completion_tokens"`` (what api.openai.com
    and Azure want; the reasoning models reject ``max_tokens``) or ``"max_tokens"`` (what most
    OpenAI-compatible servers read). Default: the former for an ``api.openai.com`` or Azure
    ``base_url``, the latter for any other.
    """

    name = "openai chat.completions"
    estimate_provider = "openai"
    async_hint = _ASYNC_HINT

    def __init__(
        self,
        client: Any,
        *,
        max_tokens_param: Literal["max_completion_tokens", "max_tokens"] | None = None,
    ) -> None:
        super().__init__(client)
        base = str(getattr(client, "base_url", ""))
        official = "api.openai.com" in base or ".openai.azure.com" in base
        if not official:
            self.estimate_provider = "openai-compatible"
        self.max_tokens_param = max_tokens_param or ("max_completion_tokens" if official else "max_tokens")

    def _kwargs(self, prompt: Prompt, model: str, options: Mapping[str, Any]) -> dict[str, Any]:
        kwargs: dict[str, Any] = {
            "model": model,
            "messages": [
                {"role": "system", "content": prompt.system},
                {"role": "user", "content": prompt.user},
            ],
            self.max_tokens_param: prompt.max_output_tokens,
        }
        kwargs.update(options)
        return kwargs

    def _endpoint(self, client: Any) -> Callable[..., Any]:
        return cast("Callable[..., Any]", client.chat.completions.create)

    def _parse(self, response: Any) -> Completion:
        return _chat_completion(response)


def _chat_completion(response: Any) -> Completion:
    choices = getattr(response, "choices", None) or []
    if not choices:
        return Completion("", False, *_usage(response, "prompt_tokens", "completion_tokens"))
    choice = choices[0]
    text = getattr(getattr(choice, "message", None), "content", None) or ""
    # OpenAI-compatible servers may leave finish_reason out: the text is then taken as whole.
    reason = getattr(choice, "finish_reason", None)
    return Completion(
        text, reason == "length", *_usage(response, "prompt_tokens", "completion_tokens"), stop_reason(reason)
    )


class OpenAIResponsesAdapter(RetriesOffAdapter):
    """The Responses API: ``system`` as ``instructions``, ``user`` as one input message, sent
    with ``store=False`` (a summary needs no server-side state; override through ``options``)."""

    name = "openai responses"
    estimate_provider = "openai"
    async_hint = _ASYNC_HINT

    def _kwargs(self, prompt: Prompt, model: str, options: Mapping[str, Any]) -> dict[str, Any]:
        kwargs: dict[str, Any] = {
            "model": model,
            "instructions": prompt.system,
            "input": [{"role": "user", "content": prompt.user}],
            "max_output_tokens": prompt.max_output_tokens,
            "store": False,
        }
        kwargs.update(options)
        return kwargs

    def _endpoint(self, client: Any) -> Callable[..., Any]:
        return cast("Callable[..., Any]", client.responses.create)

    def _parse(self, response: Any) -> Completion:
        return _response(response)


def _response(response: Any) -> Completion:
    texts = [
        part.text
        for item in (getattr(response, "output", None) or [])
        if getattr(item, "type", None) == "message"
        for part in (getattr(item, "content", None) or [])
        if getattr(part, "type", None) == "output_text"
    ]
    details = getattr(response, "incomplete_details", None)
    incomplete = getattr(response, "status", None) == "incomplete"
    reason = getattr(details, "reason", None) if incomplete else None
    return Completion(
        "".join(texts), reason == "max_output_tokens", *_usage(response, "input_tokens", "output_tokens"),
        stop_reason(reason),
    )


def _usage(response: Any, prompt_field: str, output_field: str) -> tuple[int | None, int | None]:
    usage = getattr(response, "usage", None)
    if usage is None:
        return None, None
    return getattr(usage, prompt_field, None), getattr(usage, output_field, None)

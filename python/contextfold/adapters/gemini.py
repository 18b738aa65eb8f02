"""Gemini adapter through google-genai (``pip install '.[gemini]'`` in a checkout).

Takes a ``google.genai.Client`` (sync calls through ``client.models``, async ones through
``client.aio.models``) or its ``client.aio`` (async only). ``system`` becomes the config's
``system_instruction``; the SDK's retries are off per call (``retry_options.attempts = 1``)
because ``LLMSummarizer`` retries itself. ``options`` are merged into the
``GenerateContentConfig`` (``temperature``, ``thinking_config``, ...).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from contextfold.adapters import Completion, Prompt, import_sdk, stop_reason
from contextfold.adapters.base import SDKAdapter

__all__ = ["GeminiAdapter", "default_client"]


def default_client() -> Any:
    """``google.genai.Client()`` configured from the environment (``GEMINI_API_KEY`` or
    ``GOOGLE_API_KEY``; Vertex AI through ``GOOGLE_GENAI_USE_VERTEXAI``)."""
    return import_sdk("google.genai", "gemini").Client()


class GeminiAdapter(SDKAdapter):
    """``models.generate_content(model=..., contents=user, config={system_instruction, ...})``."""

    name = "gemini generateContent"
    estimate_provider = "gemini"
    async_hint = (
        "the client is google.genai's AsyncClient (client.aio); use "
        "`await summarizer.asummarize(...)` or pass the genai.Client itself"
    )
    async_client_class = "AsyncClient"

    def _config(self, prompt: Prompt, timeout: float, options: Mapping[str, Any]) -> dict[str, Any]:
        config: dict[str, Any] = {
            "system_instruction": prompt.system,
            "max_output_tokens": prompt.max_output_tokens,
            # HttpOptions.timeout is in milliseconds.
            "http_options": {"timeout": max(1, round(timeout * 1000)), "retry_options": {"attempts": 1}},
        }
        config.update(options)
        return config

    def _send(self, prompt: Prompt, model: str, timeout: float, options: Mapping[str, Any]) -> Any:
        return self.client.models.generate_content(
            model=model, contents=prompt.user, config=self._config(prompt, timeout, options)
        )

    async def _asend(self, prompt: Prompt, model: str, timeout: float, options: Mapping[str, Any]) -> Any:
        aio = self.client if self.is_async else self.client.aio
        return await aio.models.generate_content(
            model=model, contents=prompt.user, config=self._config(prompt, timeout, options)
        )

    def _parse(self, response: Any) -> Completion:
        return _response(response)

    async def acomplete(
        self, prompt: Prompt, *, model: str, timeout: float, options: Mapping[str, Any]
    ) -> Completion:
        """Send ``prompt`` through ``client.aio.models.generate_content`` (a sync ``Client`` has
        its async twin at ``client.aio``: no worker thread needed)."""
        return self._parse(await self._asend(prompt, model, timeout, options))


def _response(response: Any) -> Completion:
    candidates = getattr(response, "candidates", None) or []
    texts: list[str] = []
    truncated = False
    stopped = None
    if candidates:
        first = candidates[0]
        content = getattr(first, "content", None)
        texts = [
            part.text
            for part in (getattr(content, "parts", None) or [])
            if getattr(part, "text", None) and not getattr(part, "thought", None)
        ]
        reason = getattr(first, "finish_reason", None)
        truncated = getattr(reason, "name", reason) == "MAX_TOKENS"
        stopped = stop_reason(reason)
    usage = getattr(response, "usage_metadata", None)
    return Completion(
        "".join(texts),
        truncated,
        getattr(usage, "prompt_token_count", None),
        getattr(usage, "candidates_token_count", None),
        stopped,
    )

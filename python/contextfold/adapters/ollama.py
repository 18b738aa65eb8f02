"""Ollama adapter through the ``ollama`` package (``pip install '.[ollama]'`` in a checkout), native
``/api/chat``. (For Ollama's OpenAI-compatible ``/v1`` route use ``openai.OpenAI(base_url=...)``.)

Takes ``ollama.Client`` or ``ollama.AsyncClient``. The output cap goes to ``options.num_predict``
and the context window the input was fitted to to ``options.num_ctx``: without it the server
uses its own default (4096 tokens in recent versions) and silently drops the start of a longer
prompt. ``options`` are merged into the request's ``options`` except ``think`` and
``keep_alive``, which are top-level arguments of ``chat``.

The SDK has no per-request timeout (only the client's, default none), so a call is bounded here:
``asyncio.wait_for`` for the async client, a watched worker thread for the sync one (an abandoned
request finishes in the background, bounded by the client's own timeout if it has one).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Mapping
from typing import Any

from contextfold.adapters import Completion, Prompt, import_sdk
from contextfold.adapters.base import SDKAdapter

__all__ = ["OllamaAdapter", "default_client"]

_TOP_LEVEL = frozenset({"think", "keep_alive", "format"})


def default_client() -> Any:
    """``ollama.Client()`` configured from the environment (``OLLAMA_HOST``)."""
    return import_sdk("ollama", "ollama").Client()


class OllamaAdapter(SDKAdapter):
    """``client.chat(model=..., messages=[system, user], options={num_predict, num_ctx})``."""

    name = "ollama chat"
    estimate_provider = "ollama"
    async_hint = (
        "the client is ollama.AsyncClient; use `await summarizer.asummarize(...)` "
        "or pass an ollama.Client"
    )
    async_client_class = "AsyncClient"

    def _kwargs(self, prompt: Prompt, model: str, options: Mapping[str, Any]) -> dict[str, Any]:
        request_options: dict[str, Any] = {"num_predict": prompt.max_output_tokens}
        if prompt.context_tokens is not None:
            request_options["num_ctx"] = prompt.context_tokens
        kwargs: dict[str, Any] = {
            "model": model,
            "messages": [
                {"role": "system", "content": prompt.system},
                {"role": "user", "content": prompt.user},
            ],
        }
        for key, value in options.items():
            if key in _TOP_LEVEL:
                kwargs[key] = value
            else:
                request_options[key] = value
        kwargs["options"] = request_options
        return kwargs

    def _send(self, prompt: Prompt, model: str, timeout: float, options: Mapping[str, Any]) -> Any:
        kwargs = self._kwargs(prompt, model, options)
        outcome: list[Any] = []

        def call() -> None:
            try:
                outcome.append((True, self.client.chat(**kwargs)))
            except BaseException as exc:  # handed to the caller's thread below
                outcome.append((False, exc))

        worker = threading.Thread(target=call, name="contextfold-ollama", daemon=True)
        worker.start()
        worker.join(timeout)
        if not outcome:
            raise TimeoutError(f"{self.name}: no reply within {timeout:g} s")
        ok, value = outcome[0]
        if not ok:
            raise value
        return value

    async def _asend(self, prompt: Prompt, model: str, timeout: float, options: Mapping[str, Any]) -> Any:
        return await asyncio.wait_for(self.client.chat(**self._kwargs(prompt, model, options)), timeout)

    def _parse(self, response: Any) -> Completion:
        return _chat(response)


def _chat(response: Any) -> Completion:
    message = getattr(response, "message", None)
    return Completion(
        getattr(message, "content", None) or "",
        getattr(response, "done_reason", None) == "length",
        getattr(response, "prompt_eval_count", None),
        getattr(response, "eval_count", None),
    )

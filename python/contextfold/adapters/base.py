"""What every adapter shares: ``complete`` refuses an async-only client, ``acomplete`` runs a
sync client on a worker thread; a subclass says how to send one request (``_send``, ``_asend``)
and how to read the reply (``_parse``)."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

from contextfold.adapters import Completion, Prompt
from contextfold.adapters.bounded_read import aread_body, parse_reply, read_body, streaming_variant
from contextfold.summarize.bounded import run_bounded


class SDKAdapter:
    """Base of the provider adapters (see ``contextfold.adapters.Adapter``)."""

    name: str
    estimate_provider: str
    #: What ``complete`` tells a caller who passed an async-only client.
    async_hint: str = "the client is async; use `await summarizer.asummarize(...)` or pass a sync client"

    #: The class name of the SDK's async-only client; None: any class named ``Async...``
    #: (AsyncOpenAI, AsyncAzureOpenAI, AsyncAnthropic and its Bedrock / Vertex twins).
    async_client_class: str | None = None

    def __init__(self, client: Any) -> None:
        self.client = client
        name = type(client).__name__
        self.is_async = (
            name.startswith("Async") if self.async_client_class is None else name == self.async_client_class
        )

    def _send(self, prompt: Prompt, model: str, timeout: float, options: Mapping[str, Any]) -> Any:
        """The provider's raw reply to one request, with the sync client."""
        raise NotImplementedError

    async def _asend(self, prompt: Prompt, model: str, timeout: float, options: Mapping[str, Any]) -> Any:
        """The provider's raw reply to one request, with the async client."""
        raise NotImplementedError

    def _parse(self, response: Any) -> Completion:
        """The reply's text, truncation and usage."""
        raise NotImplementedError

    def complete(
        self, prompt: Prompt, *, model: str, timeout: float, options: Mapping[str, Any]
    ) -> Completion:
        """Send ``prompt`` and wait for the reply (``timeout`` in seconds)."""
        if self.is_async:
            raise TypeError(f"{self.name}: {self.async_hint}")
        return self._parse(self._send(prompt, model, timeout, options))

    async def acomplete(
        self, prompt: Prompt, *, model: str, timeout: float, options: Mapping[str, Any]
    ) -> Completion:
        """Send ``prompt`` through the async client, or the sync one on contextfold's own bounded
        worker pool (never the loop's default executor); cancelling the awaiting task stops the
        sync call at its next chunk, and the call always ends by its deadline."""
        if not self.is_async:
            stop = threading.Event()
            return await run_bounded(self._complete_stoppable, prompt, model, timeout, options, stop, stop=stop)
        return self._parse(await asyncio.wait_for(self._asend(prompt, model, timeout, options), timeout))

    def _complete_stoppable(self, prompt: Prompt, model: str, timeout: float, options: Mapping[str, Any],
                            stop: threading.Event) -> Completion:
        if isinstance(self, RetriesOffAdapter):
            return self._parse(self._send(prompt, model, timeout, options, stop))
        return self.complete(prompt, model=model, timeout=timeout, options=options)


class RetriesOffAdapter(SDKAdapter):
    """Clients with per-call options (the OpenAI and Anthropic SDKs): each request goes through
    ``client.with_options(max_retries=0, timeout=...)``, since ``LLMSummarizer`` retries itself.
    A subclass names the endpoint (``_endpoint``) and its arguments (``_kwargs``)."""

    def _endpoint(self, client: Any) -> Callable[..., Any]:
        """The SDK method that sends one request (``client.chat.completions.create``...)."""
        raise NotImplementedError

    def _kwargs(self, prompt: Prompt, model: str, options: Mapping[str, Any]) -> dict[str, Any]:
        raise NotImplementedError

    def _configured(self, timeout: float) -> Any:
        return self.client.with_options(max_retries=0, timeout=timeout)

    def _send(self, prompt: Prompt, model: str, timeout: float, options: Mapping[str, Any],
              stop: threading.Event | None = None) -> Any:
        # `timeout` is what is left of the call's time limit: each socket read may take all of
        # it, and the reply is read (capped) within it however slowly it arrives.
        deadline = time.monotonic() + timeout
        create = self._endpoint(self._configured(timeout))
        streaming = streaming_variant(create)
        kwargs = self._kwargs(prompt, model, options)
        if streaming is None:
            return create(**kwargs)
        with streaming(**kwargs) as response:
            body = read_body(response.iter_bytes(), deadline=deadline, stop=stop)
        return parse_reply(body)

    async def _asend(self, prompt: Prompt, model: str, timeout: float, options: Mapping[str, Any]) -> Any:
        deadline = time.monotonic() + timeout
        create = self._endpoint(self._configured(timeout))
        streaming = streaming_variant(create)
        kwargs = self._kwargs(prompt, model, options)
        if streaming is None:
            return await create(**kwargs)
        async with streaming(**kwargs) as response:
            body = await aread_body(response.iter_bytes(), deadline=deadline)
        return parse_reply(body)

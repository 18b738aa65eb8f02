"""Provider adapters: one summarization request sent through each provider's official SDK.

An adapter wraps a client the caller already built (``openai.OpenAI`` / ``AsyncOpenAI`` for
chat.completions or the Responses API and any OpenAI-compatible ``base_url``,
``anthropic.Anthropic`` / ``AsyncAnthropic``, ``google.genai.Client``, ``ollama.Client`` /
``AsyncClient``) and sends a ``Prompt`` (a system text and one user text) in that provider's own
request format. The conversation being summarized may come from another provider: it reaches the
adapter already rendered as a provider-neutral transcript (the core's ``render_transcript``).

Retries are not the adapter's job: every call is made with the SDK's own retries off and a
per-call timeout, so that ``LLMSummarizer`` applies one retry policy to every provider
(``classify_failure`` says which errors are worth retrying and what ``retry-after`` asked for).
"""

from __future__ import annotations

import email.utils
import importlib
import time
from collections.abc import Mapping
from dataclasses import dataclass
from types import ModuleType
from typing import Any, Literal, Protocol, runtime_checkable

__all__ = [
    "Adapter",
    "Completion",
    "Failure",
    "Prompt",
    "adapter_for",
    "classify_failure",
    "import_sdk",
    "parse_retry_after",
    "stop_reason",
]

#: Finish reasons that mean the provider stopped the reply before its end for something other
#: than the output cap: its text is partial and is no summary. OpenAI chat `content_filter`,
#: Responses `incomplete_details.reason` `content_filter` (platform.openai.com API reference);
#: Anthropic `stop_reason` `refusal` (docs.anthropic.com, "Handling stop reasons"); Gemini
#: `FinishReason` SAFETY, RECITATION, LANGUAGE, BLOCKLIST, PROHIBITED_CONTENT, SPII,
#: IMAGE_SAFETY, OTHER (ai.google.dev API reference, `Candidate.FinishReason`).
STOPPED_EARLY = frozenset({
    "content_filter", "refusal", "SAFETY", "RECITATION", "LANGUAGE", "BLOCKLIST",
    "PROHIBITED_CONTENT", "SPII", "IMAGE_SAFETY", "OTHER",
})


def stop_reason(reason: Any) -> str | None:
    """``reason`` (a provider's finish reason: a string or an enum member) when it says the reply
    was stopped before its end for another cause than the output cap (``STOPPED_EARLY``), else
    None."""
    name = getattr(reason, "name", reason)
    return name if isinstance(name, str) and name in STOPPED_EARLY else None


@dataclass(frozen=True, slots=True)
class Prompt:
    """One summarization request, provider-neutral.

    ``system`` and ``user`` are texts; ``max_output_tokens`` caps the reply (in the summarizer
    model's tokens); ``context_tokens`` is the context window (tokens) the input was fitted to,
    which adapters of servers with a configurable window (Ollama's ``num_ctx``) pass on.
    """

    system: str
    user: str
    max_output_tokens: int
    context_tokens: int | None = None


@dataclass(frozen=True, slots=True)
class Completion:
    """What a provider returned: the reply's text, whether it was cut at ``max_output_tokens``
    (``truncated``), the token usage the provider reported (``None`` when absent), and the
    finish reason when the provider stopped the reply early for another cause (``stopped``: a
    content filter, a refusal, Gemini's SAFETY; see ``STOPPED_EARLY``)."""

    text: str
    truncated: bool = False
    input_tokens: int | None = None
    output_tokens: int | None = None
    stopped: str | None = None


@dataclass(frozen=True, slots=True)
class Failure:
    """Why a call failed. ``retryable`` for timeouts, dropped connections, 408/409/429 and 5xx
    (529 included); ``retry_after`` is the wait in seconds the provider asked for, if any;
    ``status`` the HTTP status, if any."""

    description: str
    retryable: bool
    retry_after: float | None = None
    status: int | None = None


@runtime_checkable
class Adapter(Protocol):
    """Sends a ``Prompt`` to one provider. ``name`` says which API (``"openai chat.completions"``);
    ``estimate_provider`` is the ``provider=`` under which ``contextfold.estimate`` prices its
    requests; ``is_async`` is True when the wrapped client only has async methods (then
    ``complete`` raises ``TypeError``). ``timeout`` is in seconds, per call."""

    name: str
    estimate_provider: str
    is_async: bool

    def complete(
        self, prompt: Prompt, *, model: str, timeout: float, options: Mapping[str, Any]
    ) -> Completion:
        """Send ``prompt`` and wait for the reply."""
        ...

    async def acomplete(
        self, prompt: Prompt, *, model: str, timeout: float, options: Mapping[str, Any]
    ) -> Completion:
        """Send ``prompt`` without blocking the event loop."""
        ...


def import_sdk(module: str, extra: str) -> ModuleType:
    """Import an optional SDK, or raise an ``ImportError`` naming the extra that installs it."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise ImportError(
            f"this adapter needs the {module!r} package: pip install '.[{extra}]' in a checkout of contextfold (or install the SDK itself)"
        ) from exc


_DEFAULT_CLIENTS = {"openai": "openai", "anthropic": "anthropic", "gemini": "gemini", "ollama": "ollama"}


def adapter_for(client: Any, *, api: Literal["chat", "responses"] | None = None) -> Adapter:
    """The adapter for ``client``: an SDK client object, an ``Adapter`` (returned as is), or a
    provider name (``"openai"``, ``"anthropic"``, ``"gemini"``, ``"ollama"``) for the SDK's
    default client configured from the environment (``OPENAI_API_KEY``, ``OPENAI_BASE_URL``, ...).

    ``api`` picks the OpenAI API: ``"chat"`` (chat.completions, the default; also every
    OpenAI-compatible server given as ``base_url``) or ``"responses"``. Raises ``TypeError`` for
    a client of an unsupported SDK.
    """
    if isinstance(client, Adapter):
        return client
    if isinstance(client, str):
        if client not in _DEFAULT_CLIENTS:
            raise ValueError(f"unknown provider {client!r}; expected one of {sorted(_DEFAULT_CLIENTS)}")
        module = importlib.import_module(f"contextfold.adapters.{_DEFAULT_CLIENTS[client]}")
        client = module.default_client()
    from contextfold.adapters.langchain import LangChainAdapter, is_chat_model

    if is_chat_model(client):  # any LangChain BaseChatModel
        return LangChainAdapter(client)
    sdk = _sdk_of(client)
    if api is not None and sdk != "openai":
        raise ValueError(
            f"api={api!r} only applies to OpenAI clients, got a {sdk or type(client).__name__} client"
        )
    if sdk == "openai":
        from contextfold.adapters.openai import OpenAIChatAdapter, OpenAIResponsesAdapter

        if api in (None, "chat"):
            return OpenAIChatAdapter(client)
        if api == "responses":
            return OpenAIResponsesAdapter(client)
        raise ValueError(f"api must be 'chat' or 'responses', got {api!r}")
    if sdk == "anthropic":
        from contextfold.adapters.anthropic import AnthropicAdapter

        return AnthropicAdapter(client)
    if sdk == "google":
        from contextfold.adapters.gemini import GeminiAdapter

        return GeminiAdapter(client)
    if sdk == "ollama":
        from contextfold.adapters.ollama import OllamaAdapter

        return OllamaAdapter(client)
    raise TypeError(
        f"unsupported client {type(client).__module__}.{type(client).__qualname__}: pass an "
        "openai, anthropic, google-genai or ollama client, or an object implementing "
        "contextfold.adapters.Adapter"
    )


def _sdk_of(client: Any) -> str:
    """The top-level package that defined the client's class (``"openai"``, ``"google"``...)."""
    return type(client).__module__.split(".", 1)[0]


# Status codes worth retrying: request timeout, conflict (a lock), rate limit, and every 5xx
# including Anthropic's 529 "overloaded" (https://docs.anthropic.com/en/api/errors).
_RETRYABLE_STATUS = frozenset({408, 409, 429})
# Exception class names (anywhere in the MRO) of transport failures in httpx / httpx2 (which the
# SDKs use), aiohttp, requests, and the standard library: the call may succeed if repeated.
_TRANSPORT_ERRORS = frozenset(
    {
        "TimeoutException",  # httpx / httpx2: connect, read, write and pool timeouts
        "NetworkError",  # httpx / httpx2: connect errors, reset connections
        "RemoteProtocolError",  # httpx / httpx2: "Server disconnected without sending a response"
        "APITimeoutError",  # openai / anthropic
        "APIConnectionError",  # openai / anthropic
        "TimeoutError",  # builtin, asyncio
        "ConnectionError",  # builtin; ollama raises it when the server is unreachable
        # aiohttp, which google-genai's async client uses when it is installed: refused and reset
        # connections, "Server disconnected", a response body cut short.
        "ClientConnectionError",
        "ClientPayloadError",
    }
)


def classify_failure(exc: BaseException) -> Failure:
    """Classify an exception raised by an SDK call: retryable or not, and ``retry-after``.

    Works across SDKs without importing them: an HTTP status is read from ``status_code``
    (openai, anthropic, ollama) or ``code`` (google-genai), response headers from
    ``exc.response.headers``; transport failures are recognised by class name.
    """
    status = getattr(exc, "status_code", None)
    if not isinstance(status, int):
        status = getattr(exc, "code", None)
    text = f"{type(exc).__name__}: {exc}"
    if isinstance(status, int) and 100 <= status <= 599:
        # ollama raises ResponseError(...) from None over httpx's HTTPStatusError: the
        # response (and its retry-after) is still on the suppressed context.
        response = getattr(exc, "response", None) or getattr(exc.__context__, "response", None)
        headers = getattr(response, "headers", None)
        retry_after = parse_retry_after(headers) if headers is not None else None
        retryable = status in _RETRYABLE_STATUS or status >= 500
        return Failure(f"HTTP {status}: {text}", retryable, retry_after, status)
    names = {cls.__name__ for cls in type(exc).__mro__}
    if names & _TRANSPORT_ERRORS:
        return Failure(text, True)
    return Failure(text, False)


def parse_retry_after(headers: Mapping[str, str] | Any) -> float | None:
    """Seconds to wait from ``retry-after-ms`` (OpenAI, Anthropic) or ``retry-after`` (seconds or
    an HTTP date, RFC 9110 section 10.2.3); ``None`` when absent or unreadable."""
    try:
        ms = headers.get("retry-after-ms")
        if ms is not None:
            return max(0.0, float(ms) / 1000.0)
        value = headers.get("retry-after")
    except (AttributeError, TypeError, ValueError):
        return None
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(str(value))
    except (TypeError, ValueError, IndexError):
        return None
    return max(0.0, when.timestamp() - time.time())

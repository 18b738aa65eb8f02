"""Reading an LLM reply within a deadline and a size cap.

An SDK's ``timeout`` bounds each read from the socket, not the call: a server that sends one
byte a second keeps a 2-second timeout alive for ever, and a reply is read whole however large
(a 398 KB gzip body expands to 859 MB). The OpenAI and Anthropic adapters therefore take the
reply through the SDK's ``with_streaming_response`` and read its (decoded) bytes here: past the
deadline, past ``MAX_RESPONSE_BYTES`` or once the caller stops (a cancelled asyncio task), the
response is closed and the call fails, and the summarizer falls back.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import AsyncIterable, Callable, Iterable
from types import SimpleNamespace
from typing import Any

__all__ = ["MAX_RESPONSE_BYTES", "CallStopped", "DeadlineExceeded", "ResponseTooLarge", "as_object",
           "aread_body", "read_body", "streaming_variant"]

#: The most a summarizer reads of one reply (decoded): a summary of the largest budget is tens of
#: KB of JSON; anything near this is not a summary.
MAX_RESPONSE_BYTES = 4 << 20


class DeadlineExceeded(TimeoutError):
    """The call's time limit (``LLMSummarizer(timeout=)``) passed while the reply was read."""


class ResponseTooLarge(ValueError):
    """The reply is larger than ``MAX_RESPONSE_BYTES`` once decoded."""


class CallStopped(RuntimeError):
    """The caller stopped waiting (its asyncio task was cancelled)."""


def streaming_variant(create: Callable[..., Any]) -> Callable[..., Any] | None:
    """``resource.with_streaming_response.create`` for an SDK method ``resource.create`` (the
    OpenAI and Anthropic SDKs), or None when the client has no such variant."""
    owner = getattr(create, "__self__", None)
    name = getattr(create, "__name__", None)
    variant = getattr(owner, "with_streaming_response", None)
    method = getattr(variant, name, None) if variant is not None and name else None
    return method if callable(method) else None


def _check(size: int, limit: int, deadline: float) -> None:
    if size > limit:
        raise ResponseTooLarge(f"reply larger than {limit:,} bytes: not read further")
    if time.monotonic() > deadline:
        raise DeadlineExceeded("time limit reached while the reply was still arriving")


def read_body(chunks: Iterable[bytes], *, deadline: float, limit: int = MAX_RESPONSE_BYTES,
              stop: threading.Event | None = None) -> bytes:
    """The reply's bytes, read chunk by chunk until done, the deadline, the cap or ``stop``."""
    parts: list[bytes] = []
    size = 0
    for chunk in chunks:
        size += len(chunk)
        _check(size, limit, deadline)
        if stop is not None and stop.is_set():
            raise CallStopped("the caller stopped waiting for the reply")
        parts.append(chunk)
    return b"".join(parts)


async def aread_body(chunks: AsyncIterable[bytes], *, deadline: float, limit: int = MAX_RESPONSE_BYTES) -> bytes:
    """As ``read_body`` for an async stream (cancellation stops it at the next await)."""
    parts: list[bytes] = []
    size = 0
    async for chunk in chunks:
        size += len(chunk)
        _check(size, limit, deadline)
        parts.append(chunk)
    return b"".join(parts)


def as_object(value: Any) -> Any:
    """Parsed JSON with attribute access (what the adapters read off an SDK's reply object)."""
    if isinstance(value, dict):
        return SimpleNamespace(**{str(k): as_object(v) for k, v in value.items()})
    if isinstance(value, list):
        return [as_object(v) for v in value]
    return value


def parse_reply(body: bytes) -> Any:
    """The reply's JSON as an object (ValueError when it is not JSON)."""
    return as_object(json.loads(body))

"""Type stubs of the Rust extension. Token counts are in the provider's tokens; `*_bytes` are bytes."""

from collections.abc import Sequence
from typing import Any, Literal

Provider = Literal["openai", "anthropic", "gemini", "ollama", "openai-compatible"]
Detail = Literal["auto", "low", "high", "original"]

__version__: str
PROVIDERS: list[str]

def estimate(
    messages: Sequence[Any],
    /,
    *,
    provider: Provider = "openai",
    model: str | None = None,
    tools: Sequence[Any] | None = None,
    system: str | Sequence[Any] | None = None,
) -> int:
    """Estimated prompt tokens of a whole request, without tokenizing.

    Equals ``sum(estimate_each(messages)) + request_overhead(tools=..., system=...)``. Every
    message is priced with its whole envelope (role, name, tool calls with ids, names, arguments
    and JSON syntax, tool results, reasoning); images by their pixel size read from the header.
    Messages may be dicts (OpenAI chat, Responses items, Anthropic, Gemini, Bedrock blocks) or
    SDK objects. Raises ``InvalidMessageError`` naming the message index and field on bad input;
    never mutates ``messages``.
    """

def estimate_each(
    messages: Sequence[Any],
    /,
    *,
    provider: Provider = "openai",
    model: str | None = None,
) -> list[int]:
    """Estimated tokens of each message (envelope included), in order."""

def request_overhead(
    *,
    provider: Provider = "openai",
    model: str | None = None,
    tools: Sequence[Any] | None = None,
    system: str | Sequence[Any] | None = None,
) -> int:
    """Tokens a request costs beyond its messages: reply priming, a top-level system prompt,
    tool definitions and the provider's hidden tool-use prompt. The one overhead function every
    estimate uses."""

def wire_bytes(messages: Sequence[Any], /, *, provider: Provider = "openai") -> int:
    """Bytes of ``messages`` serialized as compact UTF-8 JSON (base64 payloads included): the
    size that counts against a request-body cap, not against the context window."""

def image_tokens(
    image: str | bytes | bytearray,
    /,
    *,
    provider: Provider = "openai",
    model: str | None = None,
    detail: Detail = "auto",
) -> int:
    """Tokens one image costs under the provider's formula (OpenAI tiles or patches, Anthropic
    28-px patches, Gemini 258-token tiles) from the pixel size in its header. ``image`` is a data
    URL, a base64 string, a URL (priced at the documented 1024x1024 default) or raw bytes."""

def image_size(image: str | bytes | bytearray, /) -> tuple[int, int] | None:
    """``(width, height)`` from a PNG, JPEG, GIF or WebP header, decoding only its first bytes;
    ``None`` when the header is unreadable."""
